/* SPDX-License-Identifier: Apache-2.0 */
/* A coding session refuses to start in a sandbox whose confinement is not verified. */
#include "session_confine.h"

#include <errno.h>
#include <stdlib.h>

#include "confine_record.h"
#include "log.h"

int session_confine_check_at(const char *path, bool dangerously_no_sandbox, struct err *err)
{
	bool confined = false;
	int64_t at = 0;
	int r;

	if (dangerously_no_sandbox) {
		log_warn("starting a coding session without a verified sandbox "
		         "(--dangerously-no-sandbox)");
		return 0;
	}
	r = confine_record_read(path, &confined, &at, err);
	if (r < 0)
		return err_wrap(
		    err, "a coding session starts only in a verified sandbox, and its "
		         "verification cannot be read (run `sandbox-ctl verify` again, or pass "
		         "--dangerously-no-sandbox)");
	if (r == 0)
		return err_set(err, ERR_REFUSED, EPERM,
		               "this sandbox's confinement was never verified: run `sandbox-ctl "
		               "verify` from the host first, or pass --dangerously-no-sandbox to "
		               "start the session in an unconfined sandbox");
	if (!confined)
		return err_set(
		    err, ERR_REFUSED, EPERM,
		    "the last `sandbox-ctl verify` of this sandbox failed (see its checks): "
		    "fix the confinement and verify again, or pass "
		    "--dangerously-no-sandbox");
	return 0;
}

const char *session_confine_record_path(void)
{
	const char *v = getenv(SESSION_CONFINE_RECORD_ENV);

	return v && *v ? v : CONFINE_RECORD_PATH;
}

int session_confine_check(bool dangerously_no_sandbox, struct err *err)
{
	return session_confine_check_at(session_confine_record_path(), dangerously_no_sandbox, err);
}

const char *session_confine_word(bool dangerously_no_sandbox)
{
	return dangerously_no_sandbox ? "unverified (--dangerously-no-sandbox)" : "verified";
}
