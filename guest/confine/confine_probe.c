/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The probes of `sandbox-ctl verify`. The network ones run as one libcurl multi transfer, so
 * the whole set costs at most CONFINE_PROBE_TOTAL_MS however many destinations refuse by
 * silence. A refusal through the proxy is a proxy's answer carrying X-Squid-Error (squid's
 * refusal, docs/isolation.md), a CONNECT answered with anything but 200, or no connection at
 * all; an answer is anything else that came back.
 */
#include "confine_probe.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include "cleanup.h"
#include "clock.h"
#include "file.h"
#include "json_strict.h"
#include "sysid.h"

#define BODY_MAX (64 * 1024)
#define FILE_PEEK 512

static json_object *check(const char *name, bool passed, const char *detail)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "name", json_object_new_string(name));
	json_object_object_add(o, "passed", json_object_new_boolean(passed));
	json_object_object_add(o, "detail", json_object_new_string(detail));
	return o;
}

static const char *str_at(json_object *o, const char *a, const char *b)
{
	json_object *v;

	if (!json_object_object_get_ex(o, a, &v))
		return NULL;
	if (b && !json_object_object_get_ex(v, b, &v))
		return NULL;
	return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

json_object *confine_probe_kernel(json_object *host)
{
	_cleanup_json_ json_object *me = sysid_json();
	const char *hb = str_at(host, "boot_id", NULL), *gb = str_at(me, "boot_id", NULL);
	json_object *hns = NULL, *gns = NULL, *o;
	char detail[512];
	size_t len = 0;
	int same_required = 0;
	bool other_kernel;

	if (!me)
		return NULL;
	other_kernel = hb && gb && *hb && *gb && strcmp(hb, gb) != 0;
	json_object_object_get_ex(host, "ns", &hns);
	json_object_object_get_ex(me, "ns", &gns);
	len += (size_t)snprintf(detail, sizeof(detail), "%s; namespaces differing from the host's:",
	                        other_kernel ? "another kernel (boot id differs)"
	                                     : "the host's kernel (same boot id)");
	for (size_t i = 0; sysid_namespaces[i]; i++) {
		json_object *h = NULL, *g = NULL;
		bool differ;

		if (!hns || !gns || !json_object_object_get_ex(hns, sysid_namespaces[i], &h) ||
		    !json_object_object_get_ex(gns, sysid_namespaces[i], &g))
			differ = false;
		else
			differ = json_object_get_int64(h) != json_object_get_int64(g);
		if (differ && len < sizeof(detail))
			len += (size_t)snprintf(detail + len, sizeof(detail) - len, " %s",
			                        sysid_namespaces[i]);
		/* A container differs in its mounts, processes and network at least. */
		if (!differ && i < 3)
			same_required++;
	}
	o = check("kernel_or_namespaces", other_kernel || same_required == 0, detail);
	json_object_object_add(o, "guest", TAKE_PTR(me));
	return o;
}

json_object *confine_probe_host_file(const char *path, const char *token)
{
	char buf[FILE_PEEK + 1], detail[PATH_MAX + 128];
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	ssize_t n;

	if (fd < 0) {
		snprintf(detail, sizeof(detail), "%s cannot be opened here: %s", path,
		         strerror(errno));
		return check("host_file_unreachable", true, detail);
	}
	n = file_read_all(fd, buf, FILE_PEEK);
	buf[n > 0 ? n : 0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	if (n > 0 && strcmp(buf, token) == 0) {
		snprintf(detail, sizeof(detail),
		         "%s is readable here and holds the host's token: "
		         "the guest sees the host's files",
		         path);
		return check("host_file_unreachable", false, detail);
	}
	snprintf(detail, sizeof(detail), "%s exists here but does not hold the host's token", path);
	return check("host_file_unreachable", true, detail);
}

/* ---- the network probes ---- */

enum attempt_kind { ATTEMPT_ALLOWED, ATTEMPT_DIRECT, ATTEMPT_PROXY };

struct attempt {
	enum attempt_kind kind;
	const char *url;
	CURL *easy;
	bool squid_refused; /* X-Squid-Error in the answer */
	size_t body;
	bool done;
	CURLcode result;
	char errbuf[CURL_ERROR_SIZE];
};

static size_t on_header(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct attempt *a = userdata;
	size_t n = size * nmemb;

	if (n >= 14 && strncasecmp(ptr, "X-Squid-Error:", 14) == 0)
		a->squid_refused = true;
	return n;
}

/* The body is not wanted; past BODY_MAX the transfer ends (it answered: that is enough). */
static size_t on_body(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct attempt *a = userdata;

	(void)ptr;
	a->body += size * nmemb;
	return a->body > BODY_MAX ? 0 : size * nmemb;
}

static int attempt_setup(struct attempt *a, const char *proxy)
{
	CURL *c = curl_easy_init();
	CURLcode rc;

	if (!c)
		return -1;
	a->easy = c;
	rc = curl_easy_setopt(c, CURLOPT_URL, a->url);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(c, CURLOPT_PRIVATE, a);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(c, CURLOPT_ERRORBUFFER, a->errbuf);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, CONFINE_PROBE_CONNECT_MS);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, CONFINE_PROBE_TOTAL_MS);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(c, CURLOPT_HEADERDATA, a);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(c, CURLOPT_WRITEDATA, a);
	/*
	 * A probe carries no secret and asks only whether a destination can be reached: a
	 * certificate that does not match (an address, a self-signed internal host) must not
	 * make a reachable host look refused.
	 */
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
#if CURL_AT_LEAST_VERSION(7, 87, 0)
	/* A name nobody resolves must not hold the cleanup past the probes' deadline. */
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(c, CURLOPT_QUICK_EXIT, 1L);
#endif
	if (rc == CURLE_OK && a->kind == ATTEMPT_DIRECT) {
		/* Only whether a TCP connection opens: no proxy, no request. */
		rc = curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
		if (rc == CURLE_OK)
			rc = curl_easy_setopt(c, CURLOPT_PROXY, "");
		if (rc == CURLE_OK)
			rc = curl_easy_setopt(c, CURLOPT_CONNECT_ONLY, 1L);
	} else if (rc == CURLE_OK) {
		rc = curl_easy_setopt(c, CURLOPT_PROXY, proxy);
		if (rc == CURLE_OK)
			rc = curl_easy_setopt(c, CURLOPT_NOPROXY, "");
	}
	return rc == CURLE_OK ? 0 : -1;
}

/* Whether the attempt reached its destination, and what happened, in words. */
static bool attempt_reached(struct attempt *a, char *detail, size_t size)
{
	long code = 0, connect_code = 0;

	curl_easy_getinfo(a->easy, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_getinfo(a->easy, CURLINFO_HTTP_CONNECTCODE, &connect_code);
	if (!a->done) {
		snprintf(detail, size, "no answer within %ld ms", CONFINE_PROBE_TOTAL_MS);
		return false;
	}
	if (a->kind == ATTEMPT_DIRECT) {
		curl_off_t connected = 0;

		/* The TCP connection opened, whatever TLS said afterwards: it was reached. */
		curl_easy_getinfo(a->easy, CURLINFO_CONNECT_TIME_T, &connected);
		if (a->result == CURLE_OK || connected > 0) {
			snprintf(detail, size, "a direct TCP connection opened");
			return true;
		}
		snprintf(detail, size, "direct connection refused: %s",
		         a->errbuf[0] ? a->errbuf : curl_easy_strerror(a->result));
		return false;
	}
	/* A tunnel the proxy opened reached the destination, whatever came through it. */
	if (connect_code == 200) {
		snprintf(detail, size, "the proxy opened a tunnel to it (CONNECT answered 200)");
		return true;
	}
	/* Only a refusal is the proxy's: an origin's own answer may carry any header. */
	if (a->squid_refused && (connect_code || code >= 400 || code == 0)) {
		snprintf(detail, size, "the proxy refused it (HTTP %ld)",
		         connect_code ? connect_code : code);
		return false;
	}
	if (connect_code && connect_code != 200) {
		snprintf(detail, size, "the proxy refused the tunnel (CONNECT answered %ld)",
		         connect_code);
		return false;
	}
	if (code == 0) {
		snprintf(detail, size, "no answer through the proxy: %s",
		         a->errbuf[0] ? a->errbuf : curl_easy_strerror(a->result));
		return false;
	}
	snprintf(detail, size, "answered HTTP %ld through the proxy", code);
	return true;
}

static json_object *attempt_json(struct attempt *a, bool *ret_reached)
{
	json_object *o = json_object_new_object();
	char detail[CURL_ERROR_SIZE + 128];

	*ret_reached = attempt_reached(a, detail, sizeof(detail));
	json_object_object_add(o, "url", json_object_new_string(a->url));
	json_object_object_add(
	    o, "via", json_object_new_string(a->kind == ATTEMPT_DIRECT ? "direct" : "proxy"));
	json_object_object_add(o, "reached", json_object_new_boolean(*ret_reached));
	json_object_object_add(o, "detail", json_object_new_string(detail));
	return o;
}

/* The attempts that finished: done, and how. */
static void collect(CURLM *m)
{
	CURLMsg *msg;
	int left;

	while ((msg = curl_multi_info_read(m, &left)))
		if (msg->msg == CURLMSG_DONE) {
			struct attempt *a = NULL;

			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&a);
			if (a) {
				a->done = true;
				a->result = msg->data.result;
			}
		}
}

/*
 * Whether the URL's host is an address literal: a name is tried directly only through the
 * guest's resolver, which libcurl may wait on past every cap (a confined guest's DNS is refused
 * by silence), so a forbidden name is tried through the proxy only.
 */
static bool host_is_address(const char *url)
{
	const char *h = strstr(url, "://");
	char host[64];
	unsigned char buf[16];
	size_t n;

	if (!h)
		return false;
	h += 3;
	if (*h == '[')
		return strchr(h, ']') != NULL;
	n = strcspn(h, ":/?#");
	if (n == 0 || n >= sizeof(host))
		return false;
	memcpy(host, h, n);
	host[n] = '\0';
	return inet_pton(AF_INET, host, buf) == 1;
}

/* Every attempt driven at once until all are done or the deadline passes. */
static int attempts_run(struct attempt *at, size_t n, struct err *err)
{
	CURLM *m = curl_multi_init();
	uint64_t deadline = clock_now_ms() + (uint64_t)CONFINE_PROBE_TOTAL_MS;
	int running = 0;

	if (!m)
		return err_oom(err);
	for (size_t i = 0; i < n; i++)
		curl_multi_add_handle(m, at[i].easy);
	do {
		int64_t wait = (int64_t)deadline - (int64_t)clock_now_ms();

		if (curl_multi_perform(m, &running) != CURLM_OK || wait <= 0)
			break;
		if (running)
			curl_multi_poll(m, NULL, 0, (int)(wait < 200 ? wait : 200), NULL);
		collect(m);
	} while (running);
	collect(m);
	for (size_t i = 0; i < n; i++)
		curl_multi_remove_handle(m, at[i].easy);
	curl_multi_cleanup(m);
	return 0;
}

int confine_probe_network(const char *proxy, const char *allowed, const char *const *forbidden,
                          size_t n, json_object **ret_allowed, json_object **ret_refused,
                          struct err *err)
{
	struct attempt at[1 + 2 * CONFINE_PROBE_URLS_MAX] = {0};
	size_t count = 0, refused = 0;
	json_object *list, *o;
	char detail[CURL_ERROR_SIZE + 160];
	bool reached;
	int r;

	if (n > CONFINE_PROBE_URLS_MAX)
		return err_set(err, ERR_REFUSED, E2BIG, "at most %d forbidden destinations",
		               CONFINE_PROBE_URLS_MAX);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return err_set(err, ERR_FAILED, 0, "cannot initialise libcurl");
	at[count++] = (struct attempt){.kind = ATTEMPT_ALLOWED, .url = allowed};
	for (size_t i = 0; i < n; i++) {
		if (host_is_address(forbidden[i]))
			at[count++] = (struct attempt){.kind = ATTEMPT_DIRECT, .url = forbidden[i]};
		at[count++] = (struct attempt){.kind = ATTEMPT_PROXY, .url = forbidden[i]};
	}
	r = 0;
	for (size_t i = 0; i < count && r == 0; i++)
		if (attempt_setup(&at[i], proxy) < 0)
			r = err_set(err, ERR_FAILED, EINVAL, "cannot set up the probe of %s",
			            at[i].url);
	if (r == 0)
		r = attempts_run(at, count, err);
	if (r == 0) {
		o = attempt_json(&at[0], &reached);
		snprintf(detail, sizeof(detail), "%s: %s", allowed,
		         json_object_get_string(json_object_object_get(o, "detail")));
		*ret_allowed = check("allowed_endpoint_answers", reached, detail);
		json_object_put(o);
		list = json_object_new_array();
		for (size_t i = 1; i < count; i++) {
			json_object_array_add(list, attempt_json(&at[i], &reached));
			refused += !reached;
		}
		snprintf(detail, sizeof(detail), "%zu of %zu attempts refused", refused, count - 1);
		*ret_refused = check("others_refused", refused == count - 1, detail);
		json_object_object_add(*ret_refused, "attempts", list);
		json_object_object_add(*ret_refused, "tried",
		                       json_object_new_int64((int64_t)count - 1));
		json_object_object_add(*ret_refused, "refused",
		                       json_object_new_int64((int64_t)refused));
	}
	for (size_t i = 0; i < count; i++)
		if (at[i].easy)
			curl_easy_cleanup(at[i].easy);
	return r;
}
