/* SPDX-License-Identifier: Apache-2.0 */
#include "forge_curl.h"

#include <errno.h>
#include <malloc.h>
#include <sodium.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"

/* CURLOPT_PROTOCOLS_STR, which forge_http.c relies on to refuse other schemes. */
#define VERSION_MIN 0x075500
#define VERSION_MIN_TEXT "7.85"

/*
 * libcurl, once set up: process-wide, as the library's own global state is (the one state of
 * this kind in sandbox-ctl; the loaded library is never closed).
 */
static struct {
	bool ready;
	struct forge_curl fn;
} curl;

/* curl's allocator: every block is wiped before it goes back to malloc (sizes from glibc). */
static void wipe_free(void *p)
{
	if (p)
		sodium_memzero(p, malloc_usable_size(p));
	free(p);
}

static void *wipe_realloc(void *p, size_t n)
{
	size_t old;
	void *q;

	if (!p)
		return malloc(n);
	q = malloc(n ? n : 1);
	if (!q)
		return NULL;
	old = malloc_usable_size(p);
	memcpy(q, p, old < n ? old : n);
	wipe_free(p);
	return q;
}

static char *wipe_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = malloc(n);

	if (p)
		memcpy(p, s, n);
	return p;
}

#ifdef SA_CURL_LINKED

static int load(struct forge_curl *t, struct err *err)
{
#define LINKED(field) .field = curl_##field,
	static const struct forge_curl linked = {FORGE_CURL_FUNCTIONS(LINKED)};
#undef LINKED

	(void)err;
	*t = linked;
	return 0;
}

#else

#include <dlfcn.h>

#define SYMBOL(field) {"curl_" #field, offsetof(struct forge_curl, field)},

static const struct {
	const char *name;
	size_t offset;
} symbols[] = {FORGE_CURL_FUNCTIONS(SYMBOL)};

static int load(struct forge_curl *t, struct err *err)
{
	void *lib = dlopen(FORGE_CURL_SONAME, RTLD_NOW | RTLD_LOCAL);

	if (!lib)
		return err_set(err, ERR_FAILED, ENOENT,
		               "cannot load %s, which the forge's API needs (%s): install Debian's "
		               "libcurl4",
		               FORGE_CURL_SONAME, dlerror());
	for (size_t i = 0; i < ELEMENTSOF(symbols); i++) {
		void *fn = dlsym(lib, symbols[i].name);

		if (!fn) {
			dlclose(lib);
			return err_set(err, ERR_FAILED, ENOENT,
			               "%s has no %s: libcurl %s or later is needed (Debian's "
			               "libcurl4)",
			               FORGE_CURL_SONAME, symbols[i].name, VERSION_MIN_TEXT);
		}
		/* POSIX: a symbol's address converts to a function pointer of its type. */
		memcpy((char *)t + symbols[i].offset, &fn, sizeof(fn));
	}
	return 0;
}

#endif

const struct forge_curl *forge_curl_get(struct err *err)
{
	const curl_version_info_data *v;
	CURLcode rc;

	if (curl.ready)
		return &curl.fn;
	if (load(&curl.fn, err) < 0)
		return NULL;
	v = curl.fn.version_info(CURLVERSION_NOW);
	if (!v || v->version_num < VERSION_MIN) {
		err_set(err, ERR_FAILED, ENOTSUP,
		        "%s is libcurl %s: %s or later is needed (Debian's libcurl4)",
		        FORGE_CURL_SONAME, v ? v->version : "of an unknown version",
		        VERSION_MIN_TEXT);
		return NULL;
	}
	rc = curl.fn.global_init_mem(CURL_GLOBAL_DEFAULT, malloc, wipe_free, wipe_realloc,
	                             wipe_strdup, calloc);
	if (rc != CURLE_OK) {
		err_set(err, ERR_FAILED, EIO, "cannot set up libcurl: %s",
		        curl.fn.easy_strerror(rc));
		return NULL;
	}
	curl.ready = true;
	return &curl.fn;
}

void forge_curl_cleanup(void)
{
	if (!curl.ready)
		return;
	curl.fn.global_cleanup();
	curl.ready = false;
}
