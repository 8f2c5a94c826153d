/* SPDX-License-Identifier: Apache-2.0 */
#include "forge_curl.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#ifdef SA_CURL_LINKED

const struct forge_curl *forge_curl_get(struct err *err)
{
#define LINKED(field) .field = curl_##field,
	static const struct forge_curl linked = {FORGE_CURL_FUNCTIONS(LINKED)};
#undef LINKED

	(void)err;
	return &linked;
}

#else

#include <dlfcn.h>
#include <string.h>

#include "cleanup.h"

#define SYMBOL(field) {"curl_" #field, offsetof(struct forge_curl, field)},

static const struct {
	const char *name;
	size_t offset;
} symbols[] = {FORGE_CURL_FUNCTIONS(SYMBOL)};

const struct forge_curl *forge_curl_get(struct err *err)
{
	/* The library's handle and its functions: process-wide, as the library itself is. */
	static struct forge_curl table;
	static bool loaded;
	struct forge_curl t;
	void *lib;

	if (loaded)
		return &table;
	lib = dlopen(FORGE_CURL_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		err_set(err, ERR_FAILED, ENOENT,
		        "cannot load %s, which talking to the forge's API needs (%s): install "
		        "Debian's libcurl4",
		        FORGE_CURL_SONAME, dlerror());
		return NULL;
	}
	for (size_t i = 0; i < ELEMENTSOF(symbols); i++) {
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
