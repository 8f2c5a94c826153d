/* SPDX-License-Identifier: Apache-2.0 */
/*
 * .activeagents/sandbox.yml (docs/platform-contract.md): read from the checkout without following
 * links, parsed with libyaml's event API so that anchors and aliases are refused before
 * anything is built from them (no billion laughs) and nesting is capped as it is read.
 *
 * Refusals name the setting and where it is ("(line 3, column 5)"), never the values: an env
 * value may hold a secret. Key names may appear, printable characters only and shortened.
 */
#include "sandbox_config.h"

#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <search.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <yaml.h>

#include "log.h"
#include "scrub.h"
#include "strv.h"
#include "suggest.h"
#include "yaml_error.h"
#include "yaml_scalar.h"

#if __has_include(<linux/openat2.h>)
#include <linux/openat2.h>
#else
struct open_how {
	uint64_t flags;
	uint64_t mode;
	uint64_t resolve;
};
#define RESOLVE_NO_MAGICLINKS 0x02
#define RESOLVE_NO_SYMLINKS 0x04
#define RESOLVE_BENEATH 0x08
#endif
#ifndef SYS_openat2
#define SYS_openat2 437
#endif

#define CONFIG_DIR ".activeagents"
#define CONFIG_FILE "sandbox.yml"
#define MALFORMED SANDBOX_CONFIG_PATH " is malformed: "
#define ENV_RULE "`env` must map variable names to strings"
#define KEY_SHOWN_MAX 64
#define LINE_SHOWN_MAX 160

static const char *const known_settings[] = {"env",    "setup",  "manifest", "start",
                                             "limits", "egress", NULL};
static const char *const egress_keys[] = {"proxy", "required", NULL};

static inline void yaml_event_deletep(yaml_event_t *e)
{
	yaml_event_delete(e);
}
#define _cleanup_event_ _cleanup_(yaml_event_deletep)

/* A growable NULL-terminated vector: pushing is amortized O(1), unlike strv_consume. */
struct vec {
	char **v;
	size_t n, cap;
};

static int vec_consume(struct vec *vec, char *s)
{
	if (!s)
		return -ENOMEM;
	if (vec->n + 1 >= vec->cap) {
		size_t cap = vec->cap ? vec->cap * 2 : 8;
		char **nv = realloc(vec->v, cap * sizeof(char *));
		if (!nv) {
			free(s);
			return -ENOMEM;
		}
		vec->v = nv;
		vec->cap = cap;
	}
	vec->v[vec->n++] = s;
	vec->v[vec->n] = NULL;
	return 0;
}

/* The vector itself, empty rather than NULL; NULL only when out of memory. */
static char **vec_take(struct vec *vec)
{
	if (!vec->v)
		return calloc(1, sizeof(char *));
	vec->n = vec->cap = 0;
	return TAKE_PTR(vec->v);
}

static char *env_entry(const char *name, const char *value)
{
	char *s;

	return asprintf(&s, "%s=%s", name, value) < 0 ? NULL : s;
}

static void vec_dispose(struct vec *vec)
{
	strv_free(vec->v);
	vec->v = NULL;
	vec->n = vec->cap = 0;
}

/* Keys seen in one mapping, to refuse duplicates in linear time. */
struct keyset {
	struct hsearch_data table;
	struct vec keys; /* owns the strings the table points to */
	bool ready;
};

static void keyset_dispose(struct keyset *ks)
{
	if (ks->ready)
		hdestroy_r(&ks->table);
	vec_dispose(&ks->keys);
	ks->ready = false;
}

/* 1 when the key was already there, 0 when added, -ENOMEM. */
static int keyset_add(struct keyset *ks, size_t max_keys, const char *key)
{
	ENTRY e, *found;

	if (!ks->ready) {
		memset(&ks->table, 0, sizeof(ks->table));
		/* every key takes at least two bytes of the document ("a,") */
		if (!hcreate_r(max_keys / 2 + 16, &ks->table))
			return -ENOMEM;
		ks->ready = true;
	}
	if (vec_consume(&ks->keys, strdup(key)) < 0)
		return -ENOMEM;
	e.key = ks->keys.v[ks->keys.n - 1];
	e.data = NULL;
	if (!hsearch_r(e, ENTER, &found, &ks->table))
		return -ENOMEM;
	return found->key != e.key;
}

struct cfg_parser {
	yaml_parser_t yp;
	const char *buf;
	size_t len;
	int depth;
	char ***notes; /* what the author should read, or NULL */
	struct err *err;
};

struct cfg_build {
	struct vec env;
	struct vec setup;
	bool setup_given;
	char *manifest;
	char *start;
	struct limits_request limits;
	struct egress_request egress;
};

static void cfg_build_dispose(struct cfg_build *b)
{
	vec_dispose(&b->env);
	vec_dispose(&b->setup);
	free(b->manifest);
	free(b->start);
	egress_config_request_dispose(&b->egress);
}

static int oom(struct err *err)
{
	return err_oom_at(err, "reading " SANDBOX_CONFIG_PATH);
}

static _printf_(3, 4) int refuse_at(struct err *err, const yaml_mark_t *mark, const char *fmt, ...)
{
	char what[ERR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return err_set(err, ERR_REFUSED, EINVAL, MALFORMED "%s (line %zu, column %zu)", what,
	               mark->line + 1, mark->column + 1);
}

/* A key as it may appear in a message: printable ASCII, at most KEY_SHOWN_MAX characters. */
static const char *key_shown(const char *key, char out[KEY_SHOWN_MAX + 4])
{
	size_t i;

	for (i = 0; key[i] && i < KEY_SHOWN_MAX; i++)
		out[i] = (key[i] >= 0x20 && key[i] < 0x7f) ? key[i] : '?';
	if (key[i])
		memcpy(out + i, "...", 4);
	else
		out[i] = '\0';
	return out;
}

/* Add one note; out of memory only loses the note. */
static _printf_(2, 3) void note_add(char ***notes, const char *fmt, ...)
{
	char *line;
	va_list ap;
	int n;

	if (!notes)
		return;
	va_start(ap, fmt);
	n = vasprintf(&line, fmt, ap);
	va_end(ap);
	if (n >= 0 && strv_consume(notes, line) < 0)
		log_debug("out of memory keeping a note about %s", SANDBOX_CONFIG_PATH);
}

/* Line `line` (0-based) of buf: its start and length, or NULL past the end. */
static const char *line_at(const char *buf, size_t len, size_t line, size_t *ret_len)
{
	const char *s = buf, *end = buf + len, *nl;

	for (size_t i = 0; i < line; i++) {
		nl = memchr(s, '\n', (size_t)(end - s));
		if (!nl)
			return NULL;
		s = nl + 1;
	}
	nl = memchr(s, '\n', (size_t)(end - s));
	*ret_len = (size_t)((nl ? nl : end) - s);
	if (*ret_len && s[*ret_len - 1] == '\r')
		(*ret_len)--;
	return s;
}

/*
 * The offending line under "  N | ", and a caret under column `column` (characters, as
 * libyaml counts them; tabs are kept so that the caret lines up). GitHub token shapes in the
 * line are masked; a line longer than LINE_SHOWN_MAX characters is cut.
 */
static void note_source_line(char ***notes, const char *buf, size_t len, size_t line, size_t column)
{
	_cleanup_free_ char *shown = NULL, *caret = NULL, *clean = NULL;
	struct scrubber *scrub;
	size_t n = 0, chars = 0, cut = 0, clean_len = 0, col = 0, pad = 0;
	const char *s = line_at(buf, len, line, &n);
	char gutter[32];

	if (!s || !notes)
		return;
	/* Cut after LINE_SHOWN_MAX characters, never inside one; non-printable bytes as '?'. */
	for (cut = 0; cut < n && chars < LINE_SHOWN_MAX; cut++)
		if (((unsigned char)s[cut] & 0xc0) != 0x80)
			chars++;
	while (cut < n && ((unsigned char)s[cut] & 0xc0) == 0x80)
		cut++;
	shown = strndup(s, cut);
	caret = malloc(cut + 2);
	if (!shown || !caret)
		return;
	for (size_t i = 0; i < cut; i++)
		if ((unsigned char)shown[i] < 0x20 && shown[i] != '\t')
			shown[i] = '?';
	for (size_t i = 0; i < cut && col < column; i++) {
		if (((unsigned char)s[i] & 0xc0) == 0x80)
			continue;
		caret[pad++] = s[i] == '\t' ? '\t' : ' ';
		col++;
	}
	caret[pad++] = '^';
	caret[pad] = '\0';
	scrub = scrub_new();
	if (scrub)
		clean = scrub_string(scrub, shown, strlen(shown), &clean_len);
	scrub_free(scrub);
	snprintf(gutter, sizeof(gutter), "%zu", line + 1);
	note_add(notes, "%5s | %s%s", gutter, clean ? clean : "[line not shown]",
	         cut < n ? " ..." : "");
	note_add(notes, "%5s | %s", "", caret);
}

/* libyaml's wording turned into the usual advice. */
static void note_yaml_hint(struct cfg_parser *p, size_t line, size_t column)
{
	const yaml_parser_t *yp = &p->yp;
	size_t n = 0;
	const char *s = line_at(p->buf, p->len, line, &n);
	bool tab = false;

	for (size_t i = 0; s && i < n && (s[i] == ' ' || s[i] == '\t'); i++)
		tab = tab || s[i] == '\t';
	if (s && column < n && s[column] == '\t')
		tab = true;
	if (tab)
		note_add(p->notes, "hint: tabs cannot indent YAML; indent with spaces");
	else if (yp->problem && strstr(yp->problem, "mapping values are not allowed"))
		note_add(p->notes, "hint: quote a command that holds \": \" (a colon and a space), "
		                   "e.g. start: \"bin/server --bind: 0.0.0.0\"");
	else if (yp->context && strstr(yp->context, "quoted scalar"))
		note_add(p->notes,
		         "hint: an unclosed quote started at %zu:%zu; close it or quote the "
		         "whole command with the other kind of quote",
		         (size_t)yp->context_mark.line + 1, (size_t)yp->context_mark.column + 1);
	else if (yp->context)
		note_add(p->notes, "hint: %s at %zu:%zu", yp->context,
		         (size_t)yp->context_mark.line + 1, (size_t)yp->context_mark.column + 1);
}

static int yaml_failure(struct cfg_parser *p)
{
	char what[ERR_MSG_MAX / 2];
	size_t line = 0, column = 0;

	if (!yaml_error_format(&p->yp, p->buf, p->len, false, what, sizeof(what)))
		return oom(p->err);
	yaml_error_position(&p->yp, p->buf, p->len, &line, &column);
	if (p->yp.context && strstr(p->yp.context, "quoted scalar")) {
		/* An unclosed quote runs to the end of the file: point at where it began. */
		size_t ql = p->yp.context_mark.line, qc = p->yp.context_mark.column;
		note_add(p->notes, "%s:%zu:%zu: error: this quote is never closed (%s)",
		         SANDBOX_CONFIG_PATH, ql + 1, qc + 1,
		         p->yp.problem ? p->yp.problem : "not valid YAML");
		note_source_line(p->notes, p->buf, p->len, ql, qc);
	} else {
		note_add(p->notes, "%s:%zu:%zu: error: %s", SANDBOX_CONFIG_PATH, line + 1,
		         column + 1, p->yp.problem ? p->yp.problem : "not valid YAML");
		note_source_line(p->notes, p->buf, p->len, line, column);
	}
	note_yaml_hint(p, line, column);
	return err_set(p->err, ERR_REFUSED, EINVAL, MALFORMED "it is not valid YAML (%s)", what);
}

/* The next event, refusing aliases and anchors and capping the nesting. */
static int next_event(struct cfg_parser *p, yaml_event_t *ev)
{
	const yaml_char_t *anchor = NULL;

	if (!yaml_parser_parse(&p->yp, ev))
		return yaml_failure(p);
	switch (ev->type) {
	case YAML_ALIAS_EVENT:
		return refuse_at(p->err, &ev->start_mark,
		                 "anchors and aliases (& and *) are not allowed");
	case YAML_SCALAR_EVENT:
		anchor = ev->data.scalar.anchor;
		break;
	case YAML_SEQUENCE_START_EVENT:
		anchor = ev->data.sequence_start.anchor;
		p->depth++;
		break;
	case YAML_MAPPING_START_EVENT:
		anchor = ev->data.mapping_start.anchor;
		p->depth++;
		break;
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		p->depth--;
		break;
	default:
		break;
	}
	if (anchor)
		return refuse_at(p->err, &ev->start_mark,
		                 "anchors and aliases (& and *) are not allowed");
	if (p->depth > SANDBOX_CONFIG_MAX_DEPTH)
		return refuse_at(p->err, &ev->start_mark, "it nests deeper than %d levels",
		                 SANDBOX_CONFIG_MAX_DEPTH);
	return 0;
}

/* Consume the rest of a node whose first event is `first`. */
static int skip_node(struct cfg_parser *p, const yaml_event_t *first)
{
	int level = first->type == YAML_SCALAR_EVENT ? 0 : 1;

	while (level > 0) {
		_cleanup_event_ yaml_event_t ev = {0};
		int r = next_event(p, &ev);
		if (r < 0)
			return r;
		if (ev.type == YAML_SEQUENCE_START_EVENT || ev.type == YAML_MAPPING_START_EVENT)
			level++;
		else if (ev.type == YAML_SEQUENCE_END_EVENT || ev.type == YAML_MAPPING_END_EVENT)
			level--;
	}
	return 0;
}

/* An explicit tag on a mapping or list we read: none, "!" or the standard one. */
static bool collection_tag_ok(const yaml_char_t *tag, const char *standard)
{
	return !tag || strcmp((const char *)tag, "!") == 0 ||
	       strcmp((const char *)tag, standard) == 0;
}

static bool is_mapping(const yaml_event_t *ev)
{
	return ev->type == YAML_MAPPING_START_EVENT &&
	       collection_tag_ok(ev->data.mapping_start.tag, YAML_MAP_TAG);
}

static bool is_sequence(const yaml_event_t *ev)
{
	return ev->type == YAML_SEQUENCE_START_EVENT &&
	       collection_tag_ok(ev->data.sequence_start.tag, YAML_SEQ_TAG);
}

/*
 * What Ruby would make of a scalar event. Returns 0 with the kind and text, 1 when the safe
 * loader refuses the scalar (the reason is in *why), or -ENOMEM with p->err set.
 */
static int resolve_event(struct cfg_parser *p, const yaml_event_t *ev, enum yaml_scalar_kind *kind,
                         char **text, struct err *why)
{
	int r = yaml_scalar_resolve((const char *)ev->data.scalar.value, ev->data.scalar.length,
	                            ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE,
	                            (const char *)ev->data.scalar.tag, kind, text, why);

	if (r < 0 && why->cls != ERR_REFUSED) {
		*p->err = *why;
		return r;
	}
	return r < 0 ? 1 : 0;
}

static bool blank(const char *s)
{
	return s[strspn(s, " \t\r\n\f\v")] == '\0';
}

/* A command: a scalar that is a Ruby String, not blank. 0 with *ret, 1 if not, -ENOMEM. */
static int command_text(struct cfg_parser *p, const yaml_event_t *ev, char **ret)
{
	_cleanup_free_ char *text = NULL;
	enum yaml_scalar_kind kind;
	struct err why;
	int r;

	if (ev->type != YAML_SCALAR_EVENT)
		return 1;
	r = resolve_event(p, ev, &kind, &text, &why);
	if (r != 0)
		return r;
	if (kind != YAML_KIND_STR || blank(text))
		return 1;
	*ret = TAKE_PTR(text);
	return 0;
}

static int parse_command(struct cfg_parser *p, const yaml_event_t *ev, const char *key, char **ret)
{
	char *text = NULL;
	int r = command_text(p, ev, &text);

	if (r < 0)
		return r;
	if (r > 0)
		return refuse_at(p->err, &ev->start_mark, "`%s` must be a command", key);
	free(*ret);
	*ret = text;
	return 0;
}

static int parse_setup(struct cfg_parser *p, const yaml_event_t *ev, struct cfg_build *b)
{
	char *text = NULL;
	int r;

	if (ev->type == YAML_SCALAR_EVENT) {
		r = command_text(p, ev, &text);
		if (r < 0)
			return r;
		if (r > 0)
			return refuse_at(p->err, &ev->start_mark,
			                 "`setup` must be a list of commands");
		return vec_consume(&b->setup, text) < 0 ? oom(p->err) : 0;
	}
	if (!is_sequence(ev))
		return refuse_at(p->err, &ev->start_mark, "`setup` must be a list of commands");
	for (;;) {
		_cleanup_event_ yaml_event_t item = {0};
		r = next_event(p, &item);
		if (r < 0)
			return r;
		if (item.type == YAML_SEQUENCE_END_EVENT)
			return 0;
		r = command_text(p, &item, &text);
		if (r < 0)
			return r;
		if (r > 0)
			return refuse_at(p->err, &item.start_mark,
			                 "`setup` must be a list of commands");
		if (vec_consume(&b->setup, text) < 0)
			return oom(p->err);
	}
}

static const char *node_noun(const yaml_event_t *ev)
{
	return ev->type == YAML_SEQUENCE_START_EVENT ? "a list" : "a mapping";
}

static int parse_env_entry(struct cfg_parser *p, const yaml_event_t *key, struct keyset *seen,
                           struct cfg_build *b)
{
	_cleanup_event_ yaml_event_t value = {0};
	_cleanup_free_ char *name = NULL, *text = NULL;
	char shown[KEY_SHOWN_MAX + 4];
	enum yaml_scalar_kind kind;
	struct err why;
	int r;

	if (key->type != YAML_SCALAR_EVENT)
		return refuse_at(p->err, &key->start_mark,
		                 ENV_RULE ": a variable name must be a plain word, not %s",
		                 node_noun(key));
	r = resolve_event(p, key, &kind, &name, &why);
	if (r < 0)
		return r;
	if (r == 0 && kind == YAML_KIND_STR && strcmp(name, "<<") == 0)
		return refuse_at(p->err, &key->start_mark,
		                 ENV_RULE ": merge keys (<<) are not supported");
	if (r == 0 && (kind == YAML_KIND_NULL || kind == YAML_KIND_BOOL))
		return refuse_at(p->err, &key->start_mark,
		                 ENV_RULE ": this variable name reads as %s; quote it",
		                 kind == YAML_KIND_NULL ? "null" : "a boolean");
	if (r > 0 || kind != YAML_KIND_STR || !strv_env_name_valid(name))
		return refuse_at(p->err, &key->start_mark,
		                 ENV_RULE ": a variable name must match [A-Za-z_][A-Za-z0-9_]*");
	r = keyset_add(seen, p->len, name);
	if (r < 0)
		return oom(p->err);
	if (r > 0)
		return refuse_at(p->err, &key->start_mark, "`env` sets %s twice",
		                 key_shown(name, shown));

	r = next_event(p, &value);
	if (r < 0)
		return r;
	if (value.type != YAML_SCALAR_EVENT)
		return refuse_at(p->err, &value.start_mark, ENV_RULE ": %s is %s, not a string",
		                 key_shown(name, shown), node_noun(&value));
	r = yaml_scalar_to_env((const char *)value.data.scalar.value, value.data.scalar.length,
	                       value.data.scalar.style == YAML_PLAIN_SCALAR_STYLE,
	                       (const char *)value.data.scalar.tag, &text, &why);
	if (r < 0) {
		if (why.cls != ERR_REFUSED) {
			*p->err = why;
			return r;
		}
		return refuse_at(p->err, &value.start_mark, ENV_RULE ": %s: %s",
		                 key_shown(name, shown), why.msg);
	}
	if (vec_consume(&b->env, env_entry(name, text)) < 0)
		return oom(p->err);
	return 0;
}

typedef int (*entry_fn)(struct cfg_parser *p, const yaml_event_t *key, struct keyset *seen,
                        struct cfg_build *b);

/* A mapping setting (`env`, `limits`, `egress`): each entry through entry, keys set once. */
static int parse_mapping(struct cfg_parser *p, const yaml_event_t *ev, const char *rule,
                         entry_fn entry, struct cfg_build *b)
{
	_cleanup_(keyset_dispose) struct keyset seen = {0};

	if (!is_mapping(ev))
		return refuse_at(p->err, &ev->start_mark, "%s", rule);
	/* A second setting of the same name is refused as a duplicate key before we get here. */
	for (;;) {
		_cleanup_event_ yaml_event_t key = {0};
		int r = next_event(p, &key);
		if (r < 0)
			return r;
		if (key.type == YAML_MAPPING_END_EVENT)
			return 0;
		r = entry(p, &key, &seen, b);
		if (r < 0)
			return r;
	}
}

/* A section of a few named keys (`limits`, `egress`), for section_entry(). */
struct section {
	const char *name;        /* "limits" */
	const char *rule;        /* its shape, when it has another */
	const char *const *keys; /* the keys it knows */
	const char *unknown;     /* what an unknown key is called: "limit" */
	const char *known_list;  /* " (the limits are ...)" when no near miss is found */
};

/*
 * The key of one entry of a section and its value event (ret_name, ret_value: the caller's):
 * a plain string set once. An unknown key is warned about, with a near miss, and its value
 * skipped: 1.
 */
static int section_entry(struct cfg_parser *p, const yaml_event_t *key, struct keyset *seen,
                         const struct section *sec, char **ret_name, yaml_event_t *ret_value)
{
	char shown[KEY_SHOWN_MAX + 4];
	enum yaml_scalar_kind kind;
	struct err why;
	int r;

	if (key->type != YAML_SCALAR_EVENT)
		return refuse_at(p->err, &key->start_mark, "%s", sec->rule);
	r = resolve_event(p, key, &kind, ret_name, &why);
	if (r < 0)
		return r;
	if (r > 0 || kind != YAML_KIND_STR)
		return refuse_at(p->err, &key->start_mark, "%s", sec->rule);
	r = keyset_add(seen, p->len, *ret_name);
	if (r < 0)
		return oom(p->err);
	if (r > 0)
		return refuse_at(p->err, &key->start_mark, "`%s` sets %s twice", sec->name,
		                 key_shown(*ret_name, shown));
	r = next_event(p, ret_value);
	if (r < 0)
		return r;
	if (!strv_contains((char *const *)sec->keys, *ret_name)) {
		const char *near = suggest_closest(*ret_name, sec->keys);

		key_shown(*ret_name, shown);
		note_add(p->notes, "%s:%zu:%zu: warning: unknown %s `%s` is ignored%s%s%s",
		         SANDBOX_CONFIG_PATH, key->start_mark.line + 1, key->start_mark.column + 1,
		         sec->unknown, shown, near ? "; did you mean `" : sec->known_list,
		         near ? near : "", near ? "`?" : "");
		r = skip_node(p, ret_value);
		return r < 0 ? r : 1;
	}
	return 0;
}

#define LIMITS_RULE "`limits` must map memory, pids, cpu_weight and disk to values"

static const struct section limits_section = {
    .name = "limits",
    .rule = LIMITS_RULE,
    .keys = limits_config_keys,
    .unknown = "limit",
    .known_list = " (the limits are memory, pids, cpu_weight and disk)",
};

/* One `limits` entry; an unknown key is warned about (with a near miss) and skipped. */
static int parse_limit_entry(struct cfg_parser *p, const yaml_event_t *key, struct keyset *seen,
                             struct cfg_build *b)
{
	_cleanup_event_ yaml_event_t value = {0};
	_cleanup_free_ char *name = NULL, *text = NULL;
	struct err why;
	int r = section_entry(p, key, seen, &limits_section, &name, &value);

	if (r != 0)
		return r < 0 ? r : 0;
	if (value.type != YAML_SCALAR_EVENT)
		return refuse_at(p->err, &value.start_mark, "`limits.%s` must be a value, not %s",
		                 name, node_noun(&value));
	text = strndup((const char *)value.data.scalar.value, value.data.scalar.length);
	if (!text)
		return oom(p->err);
	if (limits_config_set(&b->limits, name, text, &why) < 0)
		return refuse_at(p->err, &value.start_mark, "limits: %s", why.msg);
	return 0;
}

#define EGRESS_RULE "`egress` must map proxy to a URL and required to true or false"

static const struct section egress_section = {
    .name = "egress",
    .rule = EGRESS_RULE,
    .keys = egress_keys,
    .unknown = "egress setting",
    .known_list = " (they are proxy and required)",
};

/* One `egress` entry: proxy (a URL) or required (a boolean); others warned about. */
static int parse_egress_entry(struct cfg_parser *p, const yaml_event_t *key, struct keyset *seen,
                              struct cfg_build *b)
{
	_cleanup_event_ yaml_event_t value = {0};
	_cleanup_free_ char *name = NULL, *text = NULL, *host = NULL;
	enum yaml_scalar_kind kind;
	unsigned port;
	struct err why;
	int r = section_entry(p, key, seen, &egress_section, &name, &value);

	if (r != 0)
		return r < 0 ? r : 0;
	if (value.type != YAML_SCALAR_EVENT)
		return refuse_at(p->err, &value.start_mark, EGRESS_RULE);
	r = resolve_event(p, &value, &kind, &text, &why);
	if (r < 0)
		return r;
	if (!strcmp(name, "required")) {
		if (r > 0 || kind != YAML_KIND_BOOL)
			return refuse_at(p->err, &value.start_mark,
			                 "`egress.required` must be true or false");
		b->egress.required = !strcmp(text, "true");
		return 0;
	}
	if (r > 0 || kind != YAML_KIND_STR)
		return refuse_at(p->err, &value.start_mark, "`egress.proxy` must be a URL");
	if (egress_config_check_proxy(text, &host, &port, &why) < 0)
		return refuse_at(p->err, &value.start_mark, "egress: %s", why.msg);
	/* The checkout is what the rules confine: it cannot name the one place it may reach. */
	note_add(p->notes,
	         "%s:%zu:%zu: warning: `egress.proxy` is ignored: a checkout cannot choose where "
	         "its own traffic may go; the proxy comes from the boot spec or the daemon's "
	         "--egress-proxy",
	         SANDBOX_CONFIG_PATH, key->start_mark.line + 1, key->start_mark.column + 1);
	return 0;
}

static int parse_setting(struct cfg_parser *p, const char *name, const yaml_event_t *value,
                         struct cfg_build *b)
{
	if (strcmp(name, "egress") == 0)
		return parse_mapping(p, value, EGRESS_RULE, parse_egress_entry, b);
	if (strcmp(name, "limits") == 0)
		return parse_mapping(p, value, LIMITS_RULE, parse_limit_entry, b);
	if (strcmp(name, "env") == 0)
		return parse_mapping(p, value, ENV_RULE, parse_env_entry, b);
	if (strcmp(name, "setup") == 0) {
		b->setup_given = true;
		return parse_setup(p, value, b);
	}
	if (strcmp(name, "manifest") == 0)
		return parse_command(p, value, "manifest", &b->manifest);
	if (strcmp(name, "start") == 0)
		return parse_command(p, value, "start", &b->start);
	return skip_node(p, value);
}

/* An unknown key is ignored (a newer file still boots), but never silently. */
static void note_unknown_setting(struct cfg_parser *p, const char *name, const yaml_mark_t *mark)
{
	char shown[KEY_SHOWN_MAX + 4];
	const char *near = suggest_closest(name, known_settings);

	key_shown(name, shown);
	log_debug("%s: ignoring unknown setting `%s` (line %zu)", SANDBOX_CONFIG_PATH, shown,
	          mark->line + 1);
	if (near)
		note_add(p->notes,
		         "%s:%zu:%zu: warning: unknown setting `%s` is ignored; did you mean "
		         "`%s`?",
		         SANDBOX_CONFIG_PATH, mark->line + 1, mark->column + 1, shown, near);
	else
		note_add(p->notes,
		         "%s:%zu:%zu: warning: unknown setting `%s` is ignored (the settings are "
		         "env, setup, manifest, start, limits and egress)",
		         SANDBOX_CONFIG_PATH, mark->line + 1, mark->column + 1, shown);
}

/* The pairs of the top-level mapping, its MAPPING-START already read. */
static int parse_settings(struct cfg_parser *p, struct cfg_build *b)
{
	_cleanup_(keyset_dispose) struct keyset seen = {0};
	char shown[KEY_SHOWN_MAX + 4];

	for (;;) {
		_cleanup_event_ yaml_event_t key = {0}, value = {0};
		_cleanup_free_ char *name = NULL;
		enum yaml_scalar_kind kind = YAML_KIND_NULL;
		struct err why;
		int r;

		r = next_event(p, &key);
		if (r < 0)
			return r;
		if (key.type == YAML_MAPPING_END_EVENT)
			return 0;
		if (key.type == YAML_SCALAR_EVENT) {
			r = resolve_event(p, &key, &kind, &name, &why);
			if (r < 0)
				return r;
		} else {
			r = skip_node(p, &key);
			if (r < 0)
				return r;
		}
		if (name && kind == YAML_KIND_STR) {
			if (strcmp(name, "<<") == 0)
				return refuse_at(p->err, &key.start_mark,
				                 "merge keys (<<) are not supported");
			r = keyset_add(&seen, p->len, name);
			if (r < 0)
				return oom(p->err);
			if (r > 0)
				return refuse_at(p->err, &key.start_mark, "`%s` is given twice",
				                 key_shown(name, shown));
		}

		r = next_event(p, &value);
		if (r < 0)
			return r;
		if (name && kind == YAML_KIND_STR) {
			if (!strv_contains((char *const *)known_settings, name))
				note_unknown_setting(p, name, &key.start_mark);
			r = parse_setting(p, name, &value, b);
		} else {
			/* a key Ruby reads as nil, true, a number or a collection: never ours */
			log_debug("%s: ignoring a setting whose key is not a string (line %zu)",
			          SANDBOX_CONFIG_PATH, key.start_mark.line + 1);
			note_add(p->notes,
			         "%s:%zu:%zu: warning: a setting whose key is not a string is "
			         "ignored",
			         SANDBOX_CONFIG_PATH, key.start_mark.line + 1,
			         key.start_mark.column + 1);
			r = skip_node(p, &value);
		}
		if (r < 0)
			return r;
	}
}

/* The document's root node: a mapping, or a null (an empty document). */
static int parse_root(struct cfg_parser *p, struct cfg_build *b)
{
	_cleanup_event_ yaml_event_t ev = {0};
	_cleanup_free_ char *text = NULL;
	enum yaml_scalar_kind kind;
	struct err why;
	int r;

	r = next_event(p, &ev);
	if (r < 0)
		return r;
	if (ev.type == YAML_SCALAR_EVENT) {
		r = resolve_event(p, &ev, &kind, &text, &why);
		if (r < 0)
			return r;
		if (r == 0 && kind == YAML_KIND_NULL)
			return 0;
	}
	if (!is_mapping(&ev))
		return refuse_at(p->err, &ev.start_mark, "it must be a mapping of settings");
	return parse_settings(p, b);
}

static int parse_stream(struct cfg_parser *p, struct cfg_build *b)
{
	_cleanup_event_ yaml_event_t start = {0}, doc = {0}, doc_end = {0}, next = {0};
	int r;

	r = next_event(p, &start); /* STREAM-START */
	if (r < 0)
		return r;
	r = next_event(p, &doc);
	if (r < 0)
		return r;
	if (doc.type == YAML_STREAM_END_EVENT)
		return 0; /* nothing but comments and blank lines */
	r = parse_root(p, b);
	if (r < 0)
		return r;
	r = next_event(p, &doc_end); /* DOCUMENT-END */
	if (r < 0)
		return r;
	r = next_event(p, &next);
	if (r < 0)
		return r;
	if (next.type == YAML_DOCUMENT_START_EVENT)
		return refuse_at(p->err, &next.start_mark,
		                 "it holds more than one YAML document (one mapping of settings "
		                 "is expected)");
	return 0;
}

static int fill_defaults(struct cfg_build *b)
{
	if (!b->setup_given) {
		if (vec_consume(&b->setup, strdup(SANDBOX_DEFAULT_SETUP_1)) < 0 ||
		    vec_consume(&b->setup, strdup(SANDBOX_DEFAULT_SETUP_2)) < 0)
			return -ENOMEM;
	}
	if (!b->manifest && !(b->manifest = strdup(SANDBOX_DEFAULT_MANIFEST)))
		return -ENOMEM;
	if (!b->start && !(b->start = strdup(SANDBOX_DEFAULT_START)))
		return -ENOMEM;
	return 0;
}

int sandbox_config_parse(const char *buf, size_t len, struct sandbox_config *ret, struct err *err)
{
	return sandbox_config_parse_noted(buf, len, NULL, ret, err);
}

int sandbox_config_parse_noted(const char *buf, size_t len, char ***notes,
                               struct sandbox_config *ret, struct err *err)
{
	_cleanup_(cfg_build_dispose) struct cfg_build b = {0};
	struct cfg_parser p = {
	    .buf = buf ? buf : "", .len = buf ? len : 0, .notes = notes, .err = err};
	char **env, **setup;
	int r;

	if (p.len > SANDBOX_CONFIG_MAX)
		return err_set(err, ERR_REFUSED, EFBIG,
		               SANDBOX_CONFIG_PATH " is too large: it has more than %d bytes",
		               SANDBOX_CONFIG_MAX);
	if (!yaml_parser_initialize(&p.yp))
		return oom(err);
	yaml_parser_set_input_string(&p.yp, (const unsigned char *)p.buf, p.len);
	r = parse_stream(&p, &b);
	yaml_parser_delete(&p.yp);
	if (r < 0)
		return r;
	if (fill_defaults(&b) < 0)
		return oom(err);
	env = vec_take(&b.env);
	setup = vec_take(&b.setup);
	if (!env || !setup) {
		strv_free(env);
		strv_free(setup);
		return oom(err);
	}
	*ret = (struct sandbox_config){
	    .env = env,
	    .setup = setup,
	    .manifest = TAKE_PTR(b.manifest),
	    .start = TAKE_PTR(b.start),
	    .limits = b.limits,
	    .egress = b.egress,
	    .has_file = false,
	};
	b.egress.proxy = NULL;
	return 0;
}

void sandbox_config_dispose(struct sandbox_config *c)
{
	if (!c)
		return;
	strv_free(c->env);
	strv_free(c->setup);
	free(c->manifest);
	free(c->start);
	egress_config_request_dispose(&c->egress);
	*c = (struct sandbox_config){0};
}

/* ---- finding and reading the file ------------------------------------------------------- */

static int refuse_symlink(int app_dirfd, struct err *err)
{
	struct stat st;

	if (fstatat(app_dirfd, CONFIG_DIR, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
		return err_set(err, ERR_REFUSED, ELOOP,
		               CONFIG_DIR " is a symbolic link; it must be a directory inside the "
		                          "app directory (links are not followed)");
	return err_set(err, ERR_REFUSED, ELOOP,
	               SANDBOX_CONFIG_PATH " is a symbolic link; it must be a regular file inside "
	                                   "the app directory (links are not followed)");
}

/*
 * After an ELOOP or ENOTDIR from the component walk: was the component a symbolic link (a
 * refusal) or simply not a directory (the file cannot exist: defaults)?
 */
static bool is_symlink_at(int dirfd, const char *name)
{
	struct stat st;

	return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
}

#define OPEN_FLAGS (O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)

/* 0 with *ret_fd, 1 when there is no file, or a negative error. */
static int open_walk(int app_dirfd, int *ret_fd, struct err *err)
{
	_cleanup_close_ int dfd = -1;
	int fd;

	dfd = openat(app_dirfd, CONFIG_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		if ((errno == ELOOP || errno == ENOTDIR) && is_symlink_at(app_dirfd, CONFIG_DIR))
			return refuse_symlink(app_dirfd, err);
		if (errno == ENOENT || errno == ENOTDIR)
			return 1;
		return err_errno(err, "cannot open %s", CONFIG_DIR);
	}
	fd = openat(dfd, CONFIG_FILE, OPEN_FLAGS | O_NOFOLLOW);
	if (fd < 0) {
		if (errno == ELOOP)
			return refuse_symlink(app_dirfd, err);
		if (errno == ENOENT)
			return 1;
		if (errno == ENXIO) /* a socket */
			return err_set(err, ERR_REFUSED, ENXIO,
			               SANDBOX_CONFIG_PATH " is not a regular file");
		return err_errno(err, "cannot open %s", SANDBOX_CONFIG_PATH);
	}
	*ret_fd = fd;
	return 0;
}

static int open_config(int app_dirfd, unsigned flags, int *ret_fd, struct err *err)
{
	struct open_how how = {
	    .flags = OPEN_FLAGS,
	    .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	long fd;

	if (flags & SANDBOX_CONFIG_NO_OPENAT2)
		return open_walk(app_dirfd, ret_fd, err);
	fd = syscall(SYS_openat2, app_dirfd, SANDBOX_CONFIG_PATH, &how, sizeof(how));
	if (fd >= 0) {
		*ret_fd = (int)fd;
		return 0;
	}
	switch (errno) {
	case ENOSYS: /* before Linux 5.6 */
	case EPERM:  /* a seccomp filter that does not know openat2 */
	case E2BIG:
	case EINVAL:
		return open_walk(app_dirfd, ret_fd, err);
	case ENOENT:
	case ENOTDIR:
		return 1;
	case ELOOP:
		return refuse_symlink(app_dirfd, err);
	case EXDEV:
		return err_set(err, ERR_REFUSED, EXDEV,
		               SANDBOX_CONFIG_PATH " leads outside the app directory");
	case ENXIO:
		return err_set(err, ERR_REFUSED, ENXIO,
		               SANDBOX_CONFIG_PATH " is not a regular file");
	default:
		return err_errno(err, "cannot open %s", SANDBOX_CONFIG_PATH);
	}
}

static const char *file_type_noun(mode_t mode)
{
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISSOCK(mode))
		return "a socket";
	if (S_ISCHR(mode) || S_ISBLK(mode))
		return "a device";
	return "not a regular file";
}

static int read_config(int fd, char **ret_buf, size_t *ret_len, struct err *err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	struct stat st;

	if (fstat(fd, &st) < 0)
		return err_errno(err, "cannot stat %s", SANDBOX_CONFIG_PATH);
	if (!S_ISREG(st.st_mode))
		return err_set(err, ERR_REFUSED, EINVAL,
		               SANDBOX_CONFIG_PATH " is %s; it must be a regular file",
		               file_type_noun(st.st_mode));
	if (st.st_size > SANDBOX_CONFIG_MAX)
		return err_set(err, ERR_REFUSED, EFBIG,
		               SANDBOX_CONFIG_PATH " is too large: it has more than %d bytes",
		               SANDBOX_CONFIG_MAX);
	/* One byte more than the cap, so that a file growing under us is caught too. */
	buf = malloc(SANDBOX_CONFIG_MAX + 2);
	if (!buf)
		return oom(err);
	while (len <= SANDBOX_CONFIG_MAX) {
		ssize_t n = read(fd, buf + len, SANDBOX_CONFIG_MAX + 1 - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return err_errno(err, "cannot read %s", SANDBOX_CONFIG_PATH);
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > SANDBOX_CONFIG_MAX)
		return err_set(err, ERR_REFUSED, EFBIG,
		               SANDBOX_CONFIG_PATH " is too large: it has more than %d bytes",
		               SANDBOX_CONFIG_MAX);
	buf[len] = '\0';
	*ret_buf = TAKE_PTR(buf);
	*ret_len = len;
	return 0;
}

/* Names an author may have meant for .activeagents/sandbox.yml, relative to the app. */
static const char *const look_alikes[] = {
    ".activeagents/sandbox.yaml",
    ".activeagents/Sandbox.yml",
    ".activeagents/sandbox.yml.txt",
    ".activeagents/.sandbox.yml",
    ".activeagent/sandbox.yml",
    ".activeagent/sandbox.yaml",
    "activeagents/sandbox.yml",
    ".active_agents/sandbox.yml",
    ".activeagents.yml",
    "sandbox.yml",
    "sandbox.yaml",
    ".sandbox.yml",
    NULL,
};

#define LOOK_ALIKE_DIRS_MAX 256

/* A regular file at path under dirfd, not following links (only its type is looked at). */
static bool regular_at(int dirfd, const char *path)
{
	struct stat st;

	return fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

/*
 * No .activeagents/sandbox.yml: say which look-alike there is, if any (a misspelt name, or
 * the file one folder down, as in a repository that keeps its app in a subfolder).
 */
static void note_look_alikes(int app_dirfd, char ***notes)
{
	_cleanup_close_ int dfd = -1;
	DIR *d;
	struct dirent *de;
	size_t seen = 0;

	if (!notes)
		return;
	for (size_t i = 0; look_alikes[i]; i++)
		if (regular_at(app_dirfd, look_alikes[i])) {
			note_add(
			    notes,
			    "%s: warning: there is no such file, so the defaults (a Rails app) "
			    "apply; %s was found: rename it to %s",
			    SANDBOX_CONFIG_PATH, look_alikes[i], SANDBOX_CONFIG_PATH);
			return;
		}
	dfd = openat(app_dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || !(d = fdopendir(dfd)))
		return;
	dfd = -1; /* the DIR owns it now */
	while ((de = readdir(d)) && seen++ < LOOK_ALIKE_DIRS_MAX) {
		char path[512];

		if (de->d_name[0] == '.' || de->d_type != DT_DIR)
			continue;
		snprintf(path, sizeof(path), "%s/%s", de->d_name, SANDBOX_CONFIG_PATH);
		if (regular_at(dirfd(d), path)) {
			note_add(
			    notes,
			    "%s: warning: there is no such file, so the defaults (a Rails app) "
			    "apply; %s was found: the file must be at the checkout's root "
			    "(commands may `cd %s` first)",
			    SANDBOX_CONFIG_PATH, path, de->d_name);
			break;
		}
	}
	closedir(d);
}

int sandbox_config_load_at(int app_dirfd, unsigned flags, struct sandbox_config *ret,
                           struct err *err)
{
	return sandbox_config_load_at_noted(app_dirfd, flags, NULL, ret, err);
}

int sandbox_config_load_at_noted(int app_dirfd, unsigned flags, char ***notes,
                                 struct sandbox_config *ret, struct err *err)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r;

	r = open_config(app_dirfd, flags, &fd, err);
	if (r < 0)
		return r;
	if (r > 0) {
		log_debug("no %s: using the defaults", SANDBOX_CONFIG_PATH);
		note_look_alikes(app_dirfd, notes);
		return sandbox_config_parse("", 0, ret, err);
	}
	r = read_config(fd, &buf, &len, err);
	if (r < 0)
		return r;
	r = sandbox_config_parse_noted(buf, len, notes, ret, err);
	if (r < 0)
		return r;
	ret->has_file = true;
	return 0;
}

int sandbox_config_load(const char *app_dir, struct sandbox_config *ret, struct err *err)
{
	return sandbox_config_load_noted(app_dir, NULL, ret, err);
}

int sandbox_config_load_noted(const char *app_dir, char ***notes, struct sandbox_config *ret,
                              struct err *err)
{
	_cleanup_close_ int dfd = open(app_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (dfd < 0)
		return err_errno(err, "cannot open the app directory %s", app_dir);
	return sandbox_config_load_at_noted(dfd, 0, notes, ret, err);
}
