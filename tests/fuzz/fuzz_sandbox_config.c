/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: .activeagents/sandbox.yml comes from the checkout, so any bytes. The parser
 * must refuse or accept without crashing, leaking or running away (nesting, anchors, size);
 * an accepted file must give a complete configuration. The same bytes also go through the
 * scalar conversion directly, as plain text and under the tags that take other paths.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox_config.h"
#include "strv.h"
#include "yaml_scalar.h"

static void check_config(const struct sandbox_config *c)
{
	if (!c->env || !c->setup || !c->manifest || !c->start || !*c->manifest || !*c->start)
		abort();
	for (char **p = c->env; *p; p++)
		if (!strchr(*p, '='))
			abort();
	for (char **p = c->setup; *p; p++)
		if (!**p)
			abort();
}

static void scalar(const uint8_t *data, size_t size, bool plain, const char *tag)
{
	enum yaml_scalar_kind kind;
	char *text = NULL;
	struct err e = {0};

	if (yaml_scalar_resolve((const char *)data, size, plain, tag, &kind, &text, &e) == 0) {
		if ((kind == YAML_KIND_NULL) != (text == NULL))
			abort();
		free(text);
	} else if (e.cls != ERR_REFUSED) {
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sandbox_config c = {0};
	struct err e = {0};

	if (sandbox_config_parse((const char *)data, size, &c, &e) == 0) {
		check_config(&c);
		sandbox_config_dispose(&c);
	} else if (e.cls != ERR_REFUSED || !e.msg[0]) {
		abort();
	}
	if (size <= YAML_SCALAR_NUMBER_MAX + 16) {
		scalar(data, size, true, NULL);
		scalar(data, size, false, NULL);
		scalar(data, size, false, "tag:yaml.org,2002:float");
		scalar(data, size, false, "tag:yaml.org,2002:binary");
		scalar(data, size, true, "!");
	}
	return 0;
}
