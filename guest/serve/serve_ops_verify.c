/* SPDX-License-Identifier: Apache-2.0 */
/*
 * verify (docs/protocol.md "verify", docs/isolation.md): the four checks of the guest's
 * confinement, run here, in the guest, from what the host sent: its identity (kernel, boot id,
 * namespaces), the path and token of a file it made, the proxy, an allowed URL and the URLs
 * that must be refused (the metadata addresses are always added). The answer, with each
 * check's result, is recorded in STATE_DIR/confinement.json (root's, 0600) for the coding
 * sessions to read before they start.
 *
 * The network probes run in the daemon's loop, all at once, capped at CONFINE_PROBE_TOTAL_MS
 * together: the daemon answers nothing else for at most that long.
 */
#include "serve_ops_verify.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "confine_probe.h"
#include "confine_record.h"
#include "log.h"
#include "ready.h"
#include "serve_stream.h"

static const char *const metadata_urls[] = {
    "http://169.254.169.254/",
    "http://[fd00:ec2::254]/",
};

/* A string field of at most max bytes; NULL (and err) otherwise. */
static const char *field(json_object *o, const char *key, size_t max, struct err *err)
{
	json_object *v;
	const char *s;

	if (!o || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string)) {
		err_set(err, ERR_REFUSED, EINVAL, "verify: \"%s\" must be a string", key);
		return NULL;
	}
	s = json_object_get_string(v);
	if ((size_t)json_object_get_string_len(v) != strlen(s) || !*s || strlen(s) > max) {
		err_set(err, ERR_REFUSED, EINVAL,
		        "verify: \"%s\" must be 1 to %zu bytes without a NUL character", key, max);
		return NULL;
	}
	return s;
}

static bool is_http_url(const char *s)
{
	return strncmp(s, "http://", 7) == 0 || strncmp(s, "https://", 8) == 0;
}

/* The forbidden URLs of the request, then the metadata addresses; *n their count. */
static int forbidden_list(json_object *req, const char **urls, size_t *n, struct err *err)
{
	json_object *a = NULL;
	size_t k;

	*n = 0;
	if (json_object_object_get_ex(req, "forbidden", &a) &&
	    (!json_object_is_type(a, json_type_array) ||
	     json_object_array_length(a) > CONFINE_PROBE_URLS_MAX - ELEMENTSOF(metadata_urls)))
		return err_set(err, ERR_REFUSED, EINVAL,
		               "verify: \"forbidden\" must be a list of at most %zu URLs",
		               CONFINE_PROBE_URLS_MAX - ELEMENTSOF(metadata_urls));
	k = a ? json_object_array_length(a) : 0;
	for (size_t i = 0; i < k; i++) {
		json_object *v = json_object_array_get_idx(a, i);
		const char *s = json_object_get_string(v);

		if (!json_object_is_type(v, json_type_string) ||
		    strlen(s) > CONFINE_PROBE_URL_MAX ||
		    (size_t)json_object_get_string_len(v) != strlen(s) || !is_http_url(s))
			return err_set(
			    err, ERR_REFUSED, EINVAL,
			    "verify: \"forbidden\" holds something that is not an http:// "
			    "or https:// URL");
		urls[(*n)++] = s;
	}
	for (size_t i = 0; i < ELEMENTSOF(metadata_urls); i++)
		urls[(*n)++] = metadata_urls[i];
	return 0;
}

int serve_ops_verify(struct conn *c, struct stream *st, const struct msg *m)
{
	const char *urls[CONFINE_PROBE_URLS_MAX], *proxy, *allowed, *path, *token;
	_cleanup_json_ json_object *doc = json_object_new_object();
	uint64_t t0 = clock_now_ms();
	json_object *host = NULL, *hf = NULL, *checks, *kernel, *file, *ok_check = NULL,
	            *refused = NULL;
	_cleanup_free_ char *record = NULL;
	bool confined = true;
	struct err err;
	size_t n;

	err_clear(&err);
	if (!m->json || !json_object_object_get_ex(m->json, "host", &host) ||
	    !json_object_is_type(host, json_type_object) ||
	    !json_object_object_get_ex(m->json, "host_file", &hf)) {
		err_set(&err, ERR_REFUSED, EINVAL,
		        "verify: \"host\" (the host's identity) and \"host_file\" are required");
		return serve_stream_error(c, st, &err);
	}
	if (!(proxy = field(m->json, "proxy", CONFINE_PROBE_URL_MAX, &err)) ||
	    !(allowed = field(m->json, "allowed", CONFINE_PROBE_URL_MAX, &err)) ||
	    !(path = field(hf, "path", 4096, &err)) ||
	    !(token = field(hf, "token", CONFINE_PROBE_TOKEN_MAX, &err)) ||
	    forbidden_list(m->json, urls, &n, &err) < 0)
		return serve_stream_error(c, st, &err);
	if (!is_http_url(allowed) || !is_http_url(proxy)) {
		err_set(&err, ERR_REFUSED, EINVAL,
		        "verify: \"proxy\" and \"allowed\" must be http:// or https:// URLs");
		return serve_stream_error(c, st, &err);
	}
	if (!doc || !(checks = json_object_new_array())) {
		err_oom(&err);
		return serve_stream_error(c, st, &err);
	}
	json_object_object_add(doc, "checks", checks);
	/* libcurl's global state, first needed here (an idle daemon does without it). */
	if (ready_init(&err) < 0)
		return serve_stream_error(c, st, &err);
	kernel = confine_probe_kernel(host);
	file = confine_probe_host_file(path, token);
	if (!kernel || !file ||
	    confine_probe_network(proxy, allowed, urls, n, &ok_check, &refused, &err) < 0) {
		json_object_put(kernel);
		json_object_put(file);
		if (!err.code && !err.cls)
			err_oom(&err);
		return serve_stream_error(c, st, &err);
	}
	json_object_array_add(checks, kernel);
	json_object_array_add(checks, file);
	json_object_array_add(checks, ok_check);
	json_object_array_add(checks, refused);
	for (size_t i = 0; i < json_object_array_length(checks); i++)
		confined &= json_object_get_boolean(
		    json_object_object_get(json_object_array_get_idx(checks, i), "passed"));
	json_object_object_add(doc, "confined", json_object_new_boolean(confined));
	json_object_object_add(doc, "verified_at", json_object_new_int64((int64_t)time(NULL)));
	json_object_object_add(doc, "guest_ms",
	                       json_object_new_int64((int64_t)(clock_now_ms() - t0)));
	if (asprintf(&record, "%s/confinement.json", c->srv->cfg->state_dir) < 0) {
		err_oom(&err);
		return serve_stream_error(c, st, &err);
	}
	if (confine_record_write(record, doc, &err) < 0)
		return serve_stream_error(c, st, &err);
	json_object_object_add(doc, "record", json_object_new_string(record));
	log_info("connection %" PRIu64 ": confinement %s (%s)", c->id,
	         confined ? "verified" : "NOT verified", record);
	return serve_stream_ok(c, st, TAKE_PTR(doc));
}
