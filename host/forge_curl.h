/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcurl, loaded when the first forge request needs it. Only a few commands talk to a forge
 * (publish --pull-request, github-token, a checkout spec with an api_url); every other
 * sandbox-ctl command would pay for mapping libcurl and the thirty-odd libraries Debian's
 * build of it pulls in, and never call it: measured on the test machine, an empty program
 * linked with sandbox-ctl's libraries starts in 21 ms, 11.5 ms without libcurl's. The dynamic
 * build therefore opens libcurl.so.4 with dlopen() on first use; the static build links it in
 * (SA_CURL_LINKED) and the table points at it directly. forge_http.c is the only user.
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
	X(url_get)

/* Each field typed from libcurl's own declaration (they differ in const between releases). */
#define FORGE_CURL_FIELD(name) __typeof__(curl_##name) *name;
struct forge_curl {
	FORGE_CURL_FUNCTIONS(FORGE_CURL_FIELD)
};
#undef FORGE_CURL_FIELD

/*
 * The table, loaded on the first call and kept for the process (a library stays mapped once
 * opened). NULL with ERR_FAILED when libcurl cannot be opened or lacks a function: the message
 * names the library and the package that brings it. From one thread (sandbox-ctl has one).
 */
const struct forge_curl *forge_curl_get(struct err *err);

#endif
