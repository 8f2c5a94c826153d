/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sign-in URL picked from what `claude auth login` prints under a terminal
 * (guest/session/session_login.c), over arbitrary bytes. Checked: a URL found is one that
 * session_login_url_allowed() accepts, holds no byte outside URL characters, and starts with
 * "https://".
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "session_login.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *url = session_login_find_url((const char *)data, size);

	if (!url)
		return 0;
	if (!session_login_url_allowed(url) || strncmp(url, "https://", 8) != 0 ||
	    strpbrk(url, " \t\r\n\"<>\\\x1b"))
		abort();
	free(url);
	return 0;
}
