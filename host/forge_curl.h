/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcurl for the forge's API, loaded and set up on first use. Only a few commands need it
 * (publish --pull-request, github-token, and a checkout spec's api_url, checked with libcurl's
 * URL parser); every other sandbox-ctl command would pay for mapping libcurl and the thirty-odd
 * libraries Debian's build of it pulls in, and never call it: measured on the test machine,
 * `sandbox-ctl --help` starts in 21.4 ms linked with libcurl and in 12.0 ms without. The
 * dynamic build therefore opens libcurl.so.4 with dlopen() on first use; the static build
 * links it in (SA_CURL_LINKED) and the table points at it directly. Either way the table is
 * handed out only once curl_global_init_mem() has installed an allocator that wipes every
 * block libcurl frees (it copies the Authorization header), so no libcurl call can come
 * before it. forge_http.c is the only user.
 */
#ifndef SA_HOST_FORGE_CURL_H
#define SA_HOST_FORGE_CURL_H

#include <curl/curl.h>

#include "err.h"

/* The soname opened: libcurl4 (OpenSSL) in Debian 12, the package's Depends. */
#define FORGE_CURL_SONAME "libcurl.so.4"

/*
 * The functions forge_http.c calls, each libcurl's of the same name with curl_ in front: one
 * list for the table's fields and forge_curl.c's symbol names.
 */
#define FORGE_CURL_FUNCTIONS(X)                                                                    \
	X(global_init_mem)                                                                         \
	X(global_cleanup)                                                                          \
	X(easy_init)                                                                               \
	X(easy_setopt)                                                                             \
	X(easy_perform)                                                                            \
	X(easy_getinfo)                                                                            \
	X(easy_cleanup)                                                                            \
	X(easy_strerror)                                                                           \
	X(easy_escape)                                                                             \
	X(free)                                                                                    \
	X(slist_append)                                                                            \
	X(slist_free_all)                                                                          \
	X(url)                                                                                     \
	X(url_cleanup)                                                                             \
	X(url_set)                                                                                 \
	X(url_get)                                                                                 \
	X(version_info)

/* Each field typed from libcurl's own declaration (they differ in const between releases). */
#define FORGE_CURL_FIELD(name) __typeof__(curl_##name) *name;
struct forge_curl {
	FORGE_CURL_FUNCTIONS(FORGE_CURL_FIELD)
};
#undef FORGE_CURL_FIELD

/*
 * The table, loaded and set up on the first call (and again after forge_curl_cleanup()); the
 * library stays mapped for the process, as libcurl's own global state is process-wide. NULL
 * with ERR_FAILED when libcurl cannot be opened, is older than 7.85 or lacks a function, or
 * cannot be set up: the message names the library and the package that brings it. From one
 * thread (sandbox-ctl has one).
 */
const struct forge_curl *forge_curl_get(struct err *err);
/* curl_global_cleanup() when forge_curl_get() set libcurl up; nothing otherwise. */
void forge_curl_cleanup(void);

#endif
