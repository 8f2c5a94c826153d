/* SPDX-License-Identifier: Apache-2.0 */
/* The last verification's record: written by the daemon, read by a session before it starts. */
#include "confine_record.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "file.h"
#include "json_strict.h"

int confine_record_write(const char *path, json_object *doc, struct err *err)
{
	const char *text = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN);
	char dir[PATH_MAX];

	if (!text)
		return err_oom(err);
	if (strlen(path) >= sizeof(dir))
		return err_set(err, ERR_FAILED, ENAMETOOLONG, "%s: the path is too long", path);
	strcpy(dir, path);
	if (file_mkdir_p(dirname(dir), 0700, err) < 0 ||
	    file_write_atomic(path, text, strlen(text), 0600, 0, 0, err) < 0)
		return err_wrap(err, "recording the verification in %s", path);
	return 0;
}

int confine_record_read(const char *path, bool *ret_confined, int64_t *ret_verified_at,
                        struct err *err)
{
	_cleanup_free_ char *buf = NULL;
	_cleanup_json_ json_object *doc = NULL;
	json_object *v;
	enum json_tokener_error jerr;
	size_t len, off;
	int r;

	struct stat st;

	/* Only a record of ours counts: our owner's, written by nobody else, not through a link. */
	if (lstat(path, &st) < 0)
		return errno == ENOENT
		           ? 0
		           : err_errno(err, "cannot read the verification record %s", path);
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022))
		return err_set(
		    err, ERR_REFUSED, EPERM,
		    "%s is not a verification record of this agent (it must be a file of "
		    "uid %u that only its owner can write): run sandbox-ctl verify again",
		    path, (unsigned)geteuid());
	r = file_read_capped(AT_FDCWD, path, CONFINE_RECORD_MAX, READ_MISSING_OK | READ_NOFOLLOW,
	                     &buf, &len, err);
	if (r < 0)
		return err_wrap(err, "reading the verification record %s", path);
	if (r == 1)
		return 0;
	if (json_strict_parse(buf, len, &doc, &off, &jerr) != JSON_STRICT_OK ||
	    !json_object_is_type(doc, json_type_object))
		return err_set(err, ERR_FAILED, EBADMSG,
		               "%s is not a verification record: run sandbox-ctl verify again",
		               path);
	*ret_confined = json_object_object_get_ex(doc, "confined", &v) &&
	                json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
	*ret_verified_at =
	    json_object_object_get_ex(doc, "verified_at", &v) ? json_object_get_int64(v) : 0;
	return 1;
}
