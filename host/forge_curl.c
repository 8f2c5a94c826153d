/* SPDX-License-Identifier: Apache-2.0 */
#include "forge_curl.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#ifdef SA_CURL_LINKED

const struct forge_curl *forge_curl_get(struct err *err)
{
	static const struct forge_curl linked = {
	    .global_init_mem = curl_global_init_mem,
	    .global_cleanup = curl_global_cleanup,
	    .easy_init = curl_easy_init,
	    .easy_setopt = curl_easy_setopt,
	    .easy_perform = curl_easy_perform,
	    .easy_getinfo = curl_easy_getinfo,
	    .easy_cleanup = curl_easy_cleanup,
	    .easy_strerror = curl_easy_strerror,
	    .easy_escape = curl_easy_escape,
	    .free = curl_free,
	    .slist_append = curl_slist_append,
	    .slist_free_all = curl_slist_free_all,
	    .url = curl_url,
	    .url_cleanup = curl_url_cleanup,
	    .url_set = curl_url_set,
	    .url_get = curl_url_get,
	};

	(void)err;
	return &linked;
}

#else

#include <dlfcn.h>
#include <string.h>

#define SYMBOL(field) {"curl_" #field, offsetof(struct forge_curl, field)}

static const struct {
	const char *name;
	size_t offset;
} symbols[] = {
    SYMBOL(global_init_mem), SYMBOL(global_cleanup), SYMBOL(easy_init),
    SYMBOL(easy_setopt),     SYMBOL(easy_perform),   SYMBOL(easy_getinfo),
    SYMBOL(easy_cleanup),    SYMBOL(easy_strerror),  SYMBOL(easy_escape),
    SYMBOL(free),            SYMBOL(slist_append),   SYMBOL(slist_free_all),
    SYMBOL(url),             SYMBOL(url_cleanup),    SYMBOL(url_set),
    SYMBOL(url_get),
};

const struct forge_curl *forge_curl_get(struct err *err)
{
	/* The library's handle and its functions: process-wide, as the library itself is. */
	static struct forge_curl table;
	static bool loaded;
	struct forge_curl t;
	void *lib;

	if (loaded)
		return &table;
	_Static_assert(sizeof(symbols) / sizeof(symbols[0]) * sizeof(void (*)(void)) ==
	                   sizeof(struct forge_curl),
	               "every field of struct forge_curl has its symbol");
	lib = dlopen(FORGE_CURL_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		err_set(err, ERR_FAILED, ENOENT,
		        "cannot load %s, which talking to the forge's API needs (%s): install "
		        "Debian's libcurl4",
		        FORGE_CURL_SONAME, dlerror());
		return NULL;
	}
	for (size_t i = 0; i < sizeof(symbols) / sizeof(symbols[0]); i++) {
		void *fn = dlsym(lib, symbols[i].name);

		if (!fn) {
			err_set(err, ERR_FAILED, ENOENT,
			        "%s has no %s: libcurl 7.85 or later is needed (Debian's libcurl4)",
			        FORGE_CURL_SONAME, symbols[i].name);
			dlclose(lib);
			return NULL;
		}
		/* POSIX: a symbol's address converts to a function pointer of its type. */
		memcpy((char *)&t + symbols[i].offset, &fn, sizeof(fn));
	}
	table = t;
	loaded = true;
	return &table;
}

#endif
