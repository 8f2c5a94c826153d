/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Throwaway databases (docs/platform-contract.md, "Throwaway databases"; docs/design.md,
 * "Environment and identity"). The app's own config/database.yml is read without running it: ERB
 * tags are blanked, libyaml loads the document, and anchors, aliases and `<<` merge keys are
 * expanded the way Ruby's Psych does it (what Rails reads), under a cap on the expansion so a
 * "billion laughs" file is refused instead of eating the machine. Each database of the booted
 * environment then gets a throwaway URL in the variable Rails reads for it.
 */
#include "database_config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "file.h"
#include "log.h"
#include "strv.h"
#include "yaml_error.h"

#define DB_FILE "config/database.yml"
/* Nodes and merged pairs the expanded document may hold: real files stay in the hundreds. */
#define DB_EXPAND_MAX 100000
/* Key comparisons while merging, so a hostile file's merges cannot go quadratic. */
#define DB_WORK_MAX 20000000
#define DB_DEPTH_MAX 64
#define PG_NAME_MAX 63    /* NAMEDATALEN - 1 */
#define MYSQL_NAME_MAX 64 /* MySQL identifiers */

/* ---- ERB ---------------------------------------------------------------------------- */

static bool erb_tag_starts_key(const char *buf, size_t len, size_t start, size_t end)
{
	if (memchr(buf + start, '\n', end - start) || memchr(buf + start, '\r', end - start))
		return false;
	for (size_t i = start; i > 0 && buf[i - 1] != '\n' && buf[i - 1] != '\r'; i--)
		if (buf[i - 1] != ' ' && buf[i - 1] != '\t')
			return false;
	for (size_t i = end; i < len && buf[i] != '\n' && buf[i] != '\r'; i++) {
		bool last = i + 1 == len;

		if (buf[i] == '#' && i > end && (buf[i - 1] == ' ' || buf[i - 1] == '\t'))
			return false;
		if (buf[i] == ':' && (last || buf[i + 1] == ' ' || buf[i + 1] == '\t' ||
		                      buf[i + 1] == '\n' || buf[i + 1] == '\r'))
			return true;
	}
	return false;
}

void database_config_blank_erb(char *buf, size_t len)
{
	size_t i = 0;

	while (i + 1 < len) {
		size_t end = len, j;
		char fill;

		if (buf[i] != '<' || buf[i + 1] != '%') {
			i++;
			continue;
		}
		if (i + 2 < len && buf[i + 2] == '%') {
			i += 3; /* "<%%" is a literal "<%" */
			continue;
		}
		/* The tag ends at the first "%>" that is not ERB's literal "%%>"; unclosed: EOF. */
		for (j = i + 2; j + 1 < len; j++) {
			if (buf[j] == '%' && j + 2 < len && buf[j + 1] == '%' &&
			    buf[j + 2] == '>') {
				j += 2;
				continue;
			}
			if (buf[j] == '%' && buf[j + 1] == '>') {
				end = j + 2;
				break;
			}
		}
		fill = erb_tag_starts_key(buf, len, i, end) ? '_' : ' ';
		for (j = i; j < end; j++)
			if (buf[j] != '\n' && buf[j] != '\r')
				buf[j] = fill;
		i = end;
	}
}

/* ---- Expanding the document --------------------------------------------------------- */

enum dn_kind { DN_SCALAR, DN_SEQUENCE, DN_MAPPING };

struct dnode;
struct dpair {
	struct dnode *key;
	struct dnode *value;
};

/* An expanded node. Nodes may be shared (merged pairs); all are freed through `next`. */
struct dnode {
	enum dn_kind kind;
	const char *text; /* scalar, not NUL-terminated: points into the libyaml document */
	size_t len;
	bool plain;
	struct dnode **items;
	size_t n_items;
	struct dpair *pairs;
	size_t n_pairs, cap_pairs;
	struct dnode *next;
};

struct expander {
	yaml_document_t *doc;
	bool *active; /* per libyaml node index: being expanded (an alias to it is a loop) */
	size_t n_doc;
	struct dnode *all;
	size_t count, work;
	struct err *err;
};

static int expand_refuse_size(struct expander *ex)
{
	return err_set(ex->err, ERR_REFUSED, E2BIG,
	               DB_FILE " expands to more than %d nodes through its aliases and merge keys "
	                       "(a \"billion laughs\" document?); refusing to read it",
	               DB_EXPAND_MAX);
}

static int node_new(struct expander *ex, enum dn_kind kind, struct dnode **ret)
{
	struct dnode *n;

	if (++ex->count > DB_EXPAND_MAX)
		return expand_refuse_size(ex);
	n = calloc(1, sizeof(*n));
	if (!n)
		return err_oom_at(ex->err, "reading " DB_FILE);
	n->kind = kind;
	n->next = ex->all;
	ex->all = n;
	*ret = n;
	return 0;
}

static void expander_free(struct expander *ex)
{
	while (ex->all) {
		struct dnode *n = ex->all;
		ex->all = n->next;
		free(n->items);
		free(n->pairs);
		free(n);
	}
	free(ex->active);
	ex->active = NULL;
}

static bool scalar_is(const struct dnode *n, const char *s)
{
	size_t l = strlen(s);

	return n && n->kind == DN_SCALAR && n->len == l && memcmp(n->text, s, l) == 0;
}

static bool dn_is_null(const struct dnode *n)
{
	if (!n)
		return true;
	if (n->kind != DN_SCALAR || !n->plain)
		return false;
	return n->len == 0 || scalar_is(n, "~") || scalar_is(n, "null") || scalar_is(n, "Null") ||
	       scalar_is(n, "NULL");
}

/* hash[key] = value, Ruby's way: an existing key keeps its place and takes the new value. */
static int map_set(struct expander *ex, struct dnode *map, struct dnode *key, struct dnode *value)
{
	if (key->kind == DN_SCALAR) {
		ex->work += map->n_pairs;
		if (ex->work > DB_WORK_MAX)
			return expand_refuse_size(ex);
		for (size_t i = 0; i < map->n_pairs; i++) {
			struct dnode *k = map->pairs[i].key;
			if (k->kind == DN_SCALAR && k->len == key->len &&
			    memcmp(k->text, key->text, key->len) == 0) {
				map->pairs[i].value = value;
				return 0;
			}
		}
	}
	if (++ex->count > DB_EXPAND_MAX)
		return expand_refuse_size(ex);
	if (map->n_pairs == map->cap_pairs) {
		size_t cap = map->cap_pairs ? map->cap_pairs * 2 : 8;
		struct dpair *np = realloc(map->pairs, cap * sizeof(*np));
		if (!np)
			return err_oom_at(ex->err, "reading " DB_FILE);
		map->pairs = np;
		map->cap_pairs = cap;
	}
	map->pairs[map->n_pairs++] = (struct dpair){key, value};
	return 0;
}

/*
 * A `<<` key, as Psych's revive_hash does it: a mapping is merged over what the hash holds so
 * far (keys after `<<` override it, keys before it are overridden); a sequence of mappings is
 * merged with the earlier ones winning; anything else is an ordinary key named "<<".
 */
static int map_merge(struct expander *ex, struct dnode *map, struct dnode *key, struct dnode *value)
{
	struct dnode *tmp;
	int r;

	if (value->kind == DN_MAPPING) {
		for (size_t i = 0; i < value->n_pairs; i++)
			if ((r = map_set(ex, map, value->pairs[i].key, value->pairs[i].value)) < 0)
				return r;
		return 0;
	}
	if (value->kind != DN_SEQUENCE)
		return map_set(ex, map, key, value);
	for (size_t i = 0; i < value->n_items; i++)
		if (value->items[i]->kind != DN_MAPPING)
			return map_set(ex, map, key, value);
	if ((r = node_new(ex, DN_MAPPING, &tmp)) < 0)
		return r;
	for (size_t i = value->n_items; i-- > 0;)
		if ((r = map_merge(ex, tmp, key, value->items[i])) < 0)
			return r;
	return map_merge(ex, map, key, tmp);
}

static int expand(struct expander *ex, int index, unsigned depth, struct dnode **ret)
{
	yaml_node_t *yn = yaml_document_get_node(ex->doc, index);
	struct dnode *n = NULL;
	size_t line;
	int r;

	if (!yn || (size_t)index > ex->n_doc)
		return err_set(ex->err, ERR_FAILED, EINVAL, DB_FILE ": libyaml gave a broken node");
	line = yn->start_mark.line + 1;
	if (depth > DB_DEPTH_MAX)
		return err_set(ex->err, ERR_REFUSED, E2BIG,
		               DB_FILE
		               " nests more than %d levels deep (line %zu); refusing to read "
		               "it",
		               DB_DEPTH_MAX, line);
	if (ex->active[index])
		return err_set(ex->err, ERR_REFUSED, ELOOP,
		               DB_FILE " has an alias inside the node it refers to (line %zu); "
		                       "refusing to expand it",
		               line);
	switch (yn->type) {
	case YAML_SCALAR_NODE:
		if ((r = node_new(ex, DN_SCALAR, &n)) < 0)
			return r;
		n->text = (const char *)yn->data.scalar.value;
		n->len = yn->data.scalar.length;
		n->plain = yn->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
		break;
	case YAML_SEQUENCE_NODE: {
		size_t count =
		    (size_t)(yn->data.sequence.items.top - yn->data.sequence.items.start);

		if ((r = node_new(ex, DN_SEQUENCE, &n)) < 0)
			return r;
		n->items = calloc(count ? count : 1, sizeof(*n->items));
		if (!n->items)
			return err_oom_at(ex->err, "reading " DB_FILE);
		ex->active[index] = true;
		for (size_t i = 0; i < count; i++) {
			if ((r = expand(ex, yn->data.sequence.items.start[i], depth + 1,
			                &n->items[i])) < 0)
				return r;
			n->n_items++;
		}
		ex->active[index] = false;
		break;
	}
	case YAML_MAPPING_NODE:
		if ((r = node_new(ex, DN_MAPPING, &n)) < 0)
			return r;
		ex->active[index] = true;
		for (yaml_node_pair_t *p = yn->data.mapping.pairs.start;
		     p < yn->data.mapping.pairs.top; p++) {
			struct dnode *k, *v;

			if ((r = expand(ex, p->key, depth + 1, &k)) < 0 ||
			    (r = expand(ex, p->value, depth + 1, &v)) < 0)
				return r;
			r = scalar_is(k, "<<") ? map_merge(ex, n, k, v) : map_set(ex, n, k, v);
			if (r < 0)
				return r;
		}
		ex->active[index] = false;
		break;
	default:
		return err_set(ex->err, ERR_FAILED, EINVAL, DB_FILE ": libyaml gave an empty node");
	}
	*ret = n;
	return 0;
}

/* ---- libyaml ------------------------------------------------------------------------ */

struct yaml_doc {
	yaml_parser_t parser;
	yaml_document_t doc;
	bool parser_ok, doc_ok;
};

static void yaml_doc_dispose(struct yaml_doc *y)
{
	if (y->doc_ok)
		yaml_document_delete(&y->doc);
	if (y->parser_ok)
		yaml_parser_delete(&y->parser);
}

static int yaml_refuse(const yaml_parser_t *p, const char *buf, size_t len, struct err *err)
{
	char what[ERR_MSG_MAX / 2];

	if (!yaml_error_format(p, buf, len, true, what, sizeof(what)))
		return err_oom_at(err, "reading " DB_FILE);
	return err_set(err, ERR_REFUSED, EINVAL, DB_FILE " is not valid YAML (%s)", what);
}

/*
 * libyaml's scanner spends time quadratic in the flow nesting depth (every token rechecks the
 * simple keys of every open level): a 256 KiB file of nested brackets takes most of a minute
 * to load. So the events are walked first, stopping at the first level deeper than
 * DB_DEPTH_MAX, before the document is loaded. Syntax errors surface here as well.
 */
static int yaml_check_depth(const char *buf, size_t len, struct err *err)
{
	yaml_parser_t p;
	int depth = 0, r = 0;

	if (!yaml_parser_initialize(&p))
		return err_oom_at(err, "reading " DB_FILE);
	yaml_parser_set_input_string(&p, (const unsigned char *)buf, len);
	for (;;) {
		yaml_event_t ev;
		yaml_event_type_t type;

		if (!yaml_parser_parse(&p, &ev)) {
			r = yaml_refuse(&p, buf, len, err);
			break;
		}
		type = ev.type;
		if (type == YAML_SEQUENCE_START_EVENT || type == YAML_MAPPING_START_EVENT) {
			if (++depth > DB_DEPTH_MAX)
				r = err_set(err, ERR_REFUSED, E2BIG,
				            DB_FILE " nests more than %d levels deep (line %zu); "
				                    "refusing to read it",
				            DB_DEPTH_MAX, (size_t)ev.start_mark.line + 1);
		} else if (type == YAML_SEQUENCE_END_EVENT || type == YAML_MAPPING_END_EVENT) {
			depth--;
		}
		yaml_event_delete(&ev);
		/* The first document is all Rails reads, and all yaml_parser_load() loads. */
		if (r < 0 || type == YAML_DOCUMENT_END_EVENT || type == YAML_STREAM_END_EVENT)
			break;
	}
	yaml_parser_delete(&p);
	return r;
}

/* ---- Resolving ---------------------------------------------------------------------- */

enum db_family { DB_UNKNOWN, DB_SQLITE, DB_POSTGRES, DB_MYSQL };

static enum db_family adapter_family(const char *adapter)
{
	if (strcmp(adapter, "sqlite3") == 0)
		return DB_SQLITE;
	if (strcmp(adapter, "postgresql") == 0 || strcmp(adapter, "postgis") == 0)
		return DB_POSTGRES;
	if (strcmp(adapter, "mysql2") == 0 || strcmp(adapter, "trilogy") == 0)
		return DB_MYSQL;
	return DB_UNKNOWN;
}

struct resolver {
	const struct database_request *req;
	struct database_plan *plan;
	char **share_keys; /* per entry: "adapter\x1fdatabase" as written, "" without one */
	size_t configs;    /* database configs with an adapter, known or not */
	struct err *err;
};

static const struct dnode *map_get(const struct dnode *map, const char *key)
{
	if (!map || map->kind != DN_MAPPING)
		return NULL;
	for (size_t i = 0; i < map->n_pairs; i++)
		if (scalar_is(map->pairs[i].key, key))
			return map->pairs[i].value;
	return NULL;
}

/* A scalar's text, trimmed, as a heap string; NULL for null, blank, non-scalars and NULs. */
static char *dn_string(const struct dnode *n)
{
	size_t a = 0, b;

	if (dn_is_null(n) || n->kind != DN_SCALAR)
		return NULL;
	b = n->len;
	while (a < b && (n->text[a] == ' ' || n->text[a] == '\t'))
		a++;
	while (b > a && (n->text[b - 1] == ' ' || n->text[b - 1] == '\t'))
		b--;
	if (a == b || memchr(n->text + a, '\0', b - a))
		return NULL;
	return strndup(n->text + a, b - a);
}

/* Rails' ConnectionUrlResolver: the scheme names the adapter ("postgres" is postgresql). */
static char *adapter_from_url(const char *url)
{
	size_t n = strcspn(url, ":");
	char *a;

	if (n == 0 || url[n] != ':')
		return NULL;
	a = strndup(url, n);
	if (!a)
		return NULL;
	for (char *p = a; *p; p++)
		if (*p == '-')
			*p = '_';
	if (strcmp(a, "postgres") == 0) {
		free(a);
		return strdup("postgresql");
	}
	return a;
}

/* The database a URL names: the path without its leading '/', or sqlite3's opaque part. */
static char *database_from_url(const char *url)
{
	const char *p = strchr(url, ':');

	if (!p)
		return NULL;
	p++;
	if (strncmp(p, "//", 2) == 0) {
		p = strchr(p + 2, '/');
		if (!p)
			return NULL;
		if (strncmp(url, "sqlite3:", 8) != 0)
			p++;
	}
	return strndup(p, strcspn(p, "?#"));
}

/* Lower-case [a-z0-9_] (anything else becomes '_'), at most max characters. */
static void sanitize_ident(const char *in, char *out, size_t max)
{
	size_t n = 0;

	for (; in && *in && n < max; in++) {
		char c = *in;
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		out[n++] = ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) ? c : '_';
	}
	out[n] = '\0';
}

/* [A-Za-z0-9_-] for file names. */
static void sanitize_file(const char *in, char *out, size_t max)
{
	size_t n = 0;

	for (; in && *in && n < max; in++) {
		char c = *in;
		out[n++] = ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		            (c >= '0' && c <= '9') || c == '-')
		               ? c
		               : '_';
	}
	out[n] = '\0';
}

static void trim_trailing_underscores(char *s)
{
	size_t n = strlen(s);

	while (n > 0 && s[n - 1] == '_')
		s[--n] = '\0';
}

/* Characters a workspace path may hold to be written verbatim in a sqlite3: URL. */
static bool path_fits_url(const char *p)
{
	if (!p || p[0] != '/')
		return false;
	for (; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || strchr("/._~+=,@:-", *p)))
			return false;
	return true;
}

static int sqlite_url(struct resolver *rs, const char *name, bool primary, char **ret)
{
	const char *ws = rs->req->workspace;
	char env[128], nm[128];
	size_t wl;

	if (!path_fits_url(ws))
		return err_set(rs->err, ERR_REFUSED, EINVAL,
		               "the workspace path %s cannot be written in a sqlite3 URL (it must "
		               "be absolute and hold only letters, digits and /._~+=,@:-)",
		               ws ? ws : "(none)");
	wl = strlen(ws);
	while (wl > 1 && ws[wl - 1] == '/')
		wl--;
	sanitize_file(rs->req->rails_env, env, sizeof(env) - 1);
	sanitize_file(name, nm, sizeof(nm) - 1);
	if (primary ? asprintf(ret, "sqlite3:%.*s/db/%s.sqlite3", (int)wl, ws, env) < 0
	            : asprintf(ret, "sqlite3:%.*s/db/%s_%s.sqlite3", (int)wl, ws, env, nm) < 0) {
		*ret = NULL;
		return err_oom(rs->err);
	}
	return 0;
}

/*
 * postgresql:///<db>_sandbox_<8 of the session id>, <db> being the entry's database name
 * in [a-z0-9_] (the environment's name, plus the entry's for secondary ones, when the file
 * names none or only ERB does), cut so the whole name fits the server's limit. The scheme is
 * the adapter as written: postgis keeps postgis:// so the postgis adapter (which registers
 * that scheme) stays in charge, where postgresql:// would silently drop spatial types.
 */
static int server_url(struct resolver *rs, const char *adapter, const char *database,
                      const char *name, bool primary, size_t limit, char **ret)
{
	char base[256], sid[16], suffix[32];
	size_t room;

	if (!rs->req->session_id || !rs->req->session_id[0])
		return err_set(rs->err, ERR_REFUSED, EINVAL,
		               "no session id to name the throwaway databases");
	sanitize_ident(rs->req->session_id, sid, 8);
	snprintf(suffix, sizeof(suffix), "_sandbox_%s", sid);
	sanitize_ident(database, base, 200);
	trim_trailing_underscores(base);
	if (!base[0]) {
		char fallback[200];
		snprintf(fallback, sizeof(fallback), "%s%s%s", rs->req->rails_env,
		         primary ? "" : "_", primary ? "" : name);
		sanitize_ident(fallback, base, 200);
		trim_trailing_underscores(base);
	}
	if (!base[0])
		strcpy(base, "app");
	room = limit - strlen(suffix);
	if (strlen(base) > room)
		base[room] = '\0';
	if (asprintf(ret, "%s:///%s%s", adapter, base, suffix) < 0) {
		*ret = NULL;
		return err_oom(rs->err);
	}
	return 0;
}

/* The variable Rails reads for a config named name: DATABASE_URL for "primary" only. */
static char *variable_for(const char *name)
{
	char *v;
	bool alnum = false;

	if (strcmp(name, "primary") == 0)
		return strdup("DATABASE_URL");
	for (const char *p = name; *p; p++)
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9'))
			alnum = true;
	if (!alnum || asprintf(&v, "%s_DATABASE_URL", name) < 0)
		return NULL;
	for (char *p = v; *p; p++)
		if (*p >= 'a' && *p <= 'z')
			*p = (char)(*p - 'a' + 'A');
	if (!strv_env_name_valid(v)) {
		free(v);
		return NULL;
	}
	return v;
}

static int add_entry(struct resolver *rs, const char *name, const char *adapter,
                     const char *variable, char *url, const char *share_key)
{
	struct database_plan *plan = rs->plan;
	struct database_entry *ne, *e;

	ne = realloc(plan->entries, (plan->n_entries + 1) * sizeof(*ne));
	if (!ne) {
		free(url);
		return err_oom(rs->err);
	}
	plan->entries = ne;
	e = &plan->entries[plan->n_entries];
	*e = (struct database_entry){
	    .name = strdup(name),
	    .adapter = strdup(adapter),
	    .variable = strdup(variable),
	    .url = url,
	    .set_by_file = strv_env_get(rs->req->file_env, variable) != NULL,
	};
	plan->n_entries++;
	if (!e->name || !e->adapter || !e->variable || strv_push(&rs->share_keys, share_key) < 0)
		return err_oom(rs->err);
	return 0;
}

/* One database config (a flat environment or one entry of a three-tier one). */
static int resolve_config(struct resolver *rs, const char *name, const struct dnode *config,
                          bool primary)
{
	_cleanup_free_ char *adapter = NULL, *database = NULL, *url_in = NULL;
	_cleanup_free_ char *variable = NULL, *share_key = NULL;
	char *url = NULL;
	enum db_family fam;
	int r;

	if (config->kind == DN_SCALAR) {
		url_in = dn_string(config);
	} else {
		adapter = dn_string(map_get(config, "adapter"));
		database = dn_string(map_get(config, "database"));
		url_in = dn_string(map_get(config, "url"));
	}
	if (!adapter && url_in)
		adapter = adapter_from_url(url_in);
	if (!database && url_in)
		database = database_from_url(url_in);
	if (config->kind != DN_SCALAR &&
	    (map_get(config, "migrations_paths") || map_get(config, "schema_dump")))
		rs->plan->custom_paths = true;
	rs->plan->n_unplanned++; /* until it gets its entry below */
	if (!adapter) {
		log_debug(DB_FILE ": %s/%s names no adapter (or only through ERB); no throwaway "
		                  "database for it",
		          rs->req->rails_env, name);
		return 0;
	}
	rs->configs++;
	fam = adapter_family(adapter);
	if (fam == DB_UNKNOWN) {
		log_debug(DB_FILE ": %s/%s uses the %s adapter, which gets no throwaway database",
		          rs->req->rails_env, name, adapter);
		return 0;
	}
	if (fam == DB_SQLITE && database && strcmp(database, ":memory:") == 0) {
		log_debug(DB_FILE ": %s/%s is an in-memory sqlite3 database", rs->req->rails_env,
		          name);
		return 0;
	}
	variable = variable_for(name);
	if (!variable) {
		log_debug(DB_FILE ": %s/%s cannot be named in an environment variable",
		          rs->req->rails_env, name);
		return 0;
	}
	rs->plan->n_unplanned--;
	if (asprintf(&share_key, "%s\x1f%s", adapter, database ? database : "") < 0) {
		share_key = NULL;
		return err_oom(rs->err);
	}
	/* Entries naming the same database (a replica and its primary) share one. */
	if (database)
		for (size_t i = 0; i < rs->plan->n_entries; i++)
			if (strcmp(rs->share_keys[i], share_key) == 0) {
				url = strdup(rs->plan->entries[i].url);
				if (!url)
					return err_oom(rs->err);
				break;
			}
	if (!url) {
		if (fam == DB_SQLITE)
			r = sqlite_url(rs, name, primary, &url);
		else
			r = server_url(rs, adapter, database, name, primary,
			               fam == DB_POSTGRES ? PG_NAME_MAX : MYSQL_NAME_MAX, &url);
		if (r < 0)
			return r;
	}
	if (fam == DB_POSTGRES)
		rs->plan->wants_postgresql = true;
	if (fam == DB_MYSQL)
		rs->plan->wants_mysql = true;
	return add_entry(rs, name, adapter, variable, url, database ? share_key : "");
}

/*
 * Rails 6+: an environment whose values are all mappings is three-tier (one database per
 * name), anything else is one flat config. Values blanked to null by ERB do not count
 * against three-tier.
 */
static bool section_is_three_tier(const struct dnode *sec)
{
	bool any = false;

	for (size_t i = 0; i < sec->n_pairs; i++) {
		const struct dnode *v = sec->pairs[i].value;
		if (v->kind == DN_MAPPING)
			any = true;
		else if (!dn_is_null(v))
			return false;
	}
	return any;
}

static int resolve_section(struct resolver *rs, const struct dnode *sec)
{
	size_t primary = SIZE_MAX;
	int r;

	if (sec->kind == DN_SCALAR || !section_is_three_tier(sec))
		return resolve_config(rs, "primary", sec, true);
	/* The entry named "primary", else the first one, is the primary. */
	for (size_t i = 0; i < sec->n_pairs && primary == SIZE_MAX; i++)
		if (sec->pairs[i].value->kind == DN_MAPPING &&
		    scalar_is(sec->pairs[i].key, "primary"))
			primary = i;
	for (size_t i = 0; i < sec->n_pairs && primary == SIZE_MAX; i++)
		if (sec->pairs[i].value->kind == DN_MAPPING)
			primary = i;
	for (size_t i = 0; i < sec->n_pairs; i++) {
		_cleanup_free_ char *name = NULL;

		if (sec->pairs[i].value->kind != DN_MAPPING)
			continue;
		name = dn_string(sec->pairs[i].key);
		if (!name) {
			log_debug(DB_FILE ": %s has a database without a name", rs->req->rails_env);
			continue;
		}
		if ((r = resolve_config(rs, name, sec->pairs[i].value, i == primary)) < 0)
			return r;
	}
	return 0;
}

static int plan_env_fill(struct resolver *rs)
{
	struct database_plan *plan = rs->plan;

	for (size_t i = 0; i < plan->n_entries; i++) {
		if (plan->entries[i].set_by_file)
			continue;
		if (strv_env_set(&plan->env, plan->entries[i].variable, plan->entries[i].url) < 0)
			return err_oom(rs->err);
	}
	if (rs->configs > 0 && !strv_env_get(rs->req->file_env, "SKIP_TEST_DATABASE"))
		if (strv_env_set(&plan->env, "SKIP_TEST_DATABASE", "1") < 0)
			return err_oom(rs->err);
	return 0;
}

void database_config_plan_dispose(struct database_plan *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n_entries; i++) {
		free(p->entries[i].name);
		free(p->entries[i].adapter);
		free(p->entries[i].variable);
		free(p->entries[i].url);
	}
	free(p->entries);
	strv_free(p->env);
	*p = (struct database_plan){0};
}

static int plan_from_document(struct resolver *rs, yaml_document_t *doc)
{
	struct expander ex = {.doc = doc, .err = rs->err};
	const struct dnode *root, *sec;
	struct dnode *expanded;
	int r;

	if (!yaml_document_get_root_node(doc))
		return 0;
	ex.n_doc = (size_t)(doc->nodes.top - doc->nodes.start);
	ex.active = calloc(ex.n_doc + 1, sizeof(bool));
	if (!ex.active)
		return err_oom_at(rs->err, "reading " DB_FILE);
	r = expand(&ex, 1, 0, &expanded);
	if (r < 0)
		goto out;
	root = expanded;
	if (dn_is_null(root))
		goto out;
	if (root->kind != DN_MAPPING) {
		r = err_set(rs->err, ERR_REFUSED, EINVAL,
		            DB_FILE " is malformed: it must map environment names to settings");
		goto out;
	}
	sec = map_get(root, rs->req->rails_env);
	if (dn_is_null(sec) || sec->kind == DN_SEQUENCE) {
		log_debug(DB_FILE " has no databases for the %s environment", rs->req->rails_env);
		goto out;
	}
	r = resolve_section(rs, sec);
	if (r == 0)
		r = plan_env_fill(rs);
out:
	expander_free(&ex);
	return r;
}

int database_config_plan_from_yaml(const char *buf, size_t len, const struct database_request *req,
                                   struct database_plan *ret, struct err *err)
{
	struct database_plan plan = {0};
	struct resolver rs = {.req = req, .plan = &plan, .err = err};
	struct yaml_doc y = {0};
	_cleanup_free_ char *copy = NULL;
	int r = 0;

	if (!req->rails_env || !req->rails_env[0])
		return err_set(err, ERR_REFUSED, EINVAL, "no Rails environment to read " DB_FILE);
	if (buf && len > DATABASE_CONFIG_MAX)
		return err_set(err, ERR_REFUSED, EFBIG, DB_FILE " is larger than %d bytes",
		               DATABASE_CONFIG_MAX);
	plan.env = calloc(1, sizeof(char *));
	if (!plan.env)
		return err_oom(err);
	if (buf) {
		copy = malloc(len + 1);
		if (!copy) {
			r = err_oom_at(err, "reading " DB_FILE);
			goto out;
		}
		memcpy(copy, buf, len);
		copy[len] = '\0';
		database_config_blank_erb(copy, len);
		if ((r = yaml_check_depth(copy, len, err)) < 0)
			goto out;
		if (!yaml_parser_initialize(&y.parser)) {
			r = err_oom_at(err, "reading " DB_FILE);
			goto out;
		}
		y.parser_ok = true;
		yaml_parser_set_input_string(&y.parser, (const unsigned char *)copy, len);
		if (!yaml_parser_load(&y.parser, &y.doc)) {
			r = yaml_refuse(&y.parser, copy, len, err);
			goto out;
		}
		y.doc_ok = true;
		r = plan_from_document(&rs, &y.doc);
	}
out:
	yaml_doc_dispose(&y);
	strv_free(rs.share_keys);
	if (r < 0) {
		database_config_plan_dispose(&plan);
		return r;
	}
	*ret = plan;
	return 0;
}

int database_config_plan_resolve(const char *app_dir, const struct database_request *req,
                                 struct database_plan *ret, struct err *err)
{
	_cleanup_close_ int dfd = -1, cfd = -1;
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	struct stat st;
	int r;

	dfd = open(app_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return err_errno(err, "cannot open the app directory %s", app_dir);
	cfd = openat(dfd, "config", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (cfd < 0) {
		if (errno == ENOENT)
			return database_config_plan_from_yaml(NULL, 0, req, ret, err);
		if (fstatat(dfd, "config", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
			return err_set(err, ERR_REFUSED, ELOOP,
			               "%s/config is a symbolic link; only the app directory's own "
			               "config/database.yml is read",
			               app_dir);
		if (errno == ENOTDIR)
			return database_config_plan_from_yaml(NULL, 0, req, ret, err);
		return err_errno(err, "cannot open %s/config", app_dir);
	}
	r = file_read_capped(cfd, "database.yml", DATABASE_CONFIG_MAX,
	                     READ_NOFOLLOW | READ_MISSING_OK, &buf, &len, err);
	if (r < 0) {
		if (err->code == ELOOP)
			return err_reword(err,
			                  "%s/" DB_FILE " is a symbolic link; only the app "
			                  "directory's own file is read (replace the link with the "
			                  "file)",
			                  app_dir);
		if (err->code == EFBIG)
			return err_reword(err, "%s/" DB_FILE " is larger than %d bytes", app_dir,
			                  DATABASE_CONFIG_MAX);
		return err_wrap(err, "cannot read %s/" DB_FILE, app_dir);
	}
	return database_config_plan_from_yaml(r == 1 ? NULL : buf, len, req, ret, err);
}
