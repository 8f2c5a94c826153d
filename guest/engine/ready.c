/* SPDX-License-Identifier: Apache-2.0 */
#include "ready.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define READY_CONNECT_TIMEOUT_MS 1000L
#define READY_TIMEOUT_MS 2000L

DEFINE_TRIVIAL_CLEANUP_FUNC(CURL *, curl_easy_cleanup)
DEFINE_TRIVIAL_CLEANUP_FUNC(struct curl_slist *, curl_slist_free_all)

int ready_init(struct err *err)
{
	CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);

	if (rc != CURLE_OK)
		return err_set(err, ERR_FAILED, 0, "cannot initialise libcurl: %s",
		               curl_easy_strerror(rc));
	return 0;
}

bool ready_status_ok(long status)
{
	return status == 200 || status == 401 || status == 405;
}

/* The body is not wanted: accept and drop it. */
static size_t discard(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	return size * nmemb;
}

/* A short cause for the usual failures, else what curl wrote in its error buffer. */
static void describe_failure(CURL *c, CURLcode rc, const char *errbuf, char *buf, size_t len,
                             int *ret_code)
{
	long os_errno = 0;

	(void)curl_easy_getinfo(c, CURLINFO_OS_ERRNO, &os_errno);
	*ret_code = (int)os_errno;
	switch (rc) {
	case CURLE_COULDNT_CONNECT:
		if (os_errno == ECONNREFUSED) {
			snprintf(buf, len, "connection refused");
			return;
		}
		if (os_errno) {
			snprintf(buf, len, "cannot connect: %s", strerror((int)os_errno));
			return;
		}
		break;
	case CURLE_OPERATION_TIMEDOUT:
		*ret_code = ETIMEDOUT;
		snprintf(buf, len, "no answer within %ld ms (%s)", READY_TIMEOUT_MS,
		         errbuf[0] ? errbuf : curl_easy_strerror(rc));
		return;
	case CURLE_GOT_NOTHING:
		snprintf(buf, len, "the server closed the connection without answering");
		return;
	case CURLE_RECV_ERROR:
		if (os_errno == ECONNRESET) {
			snprintf(buf, len, "connection reset by the server");
			return;
		}
		break;
	default:
		break;
	}
	snprintf(buf, len, "%s", errbuf[0] ? errbuf : curl_easy_strerror(rc));
}

int ready_probe(const char *host, uint16_t port, const char *path, long *ret_status,
                int64_t *ret_answer_us, struct err *err)
{
	_cleanup_(curl_easy_cleanupp) CURL *c = NULL;
	_cleanup_(curl_slist_free_allp) struct curl_slist *headers = NULL;
	_cleanup_free_ char *url = NULL;
	char errbuf[CURL_ERROR_SIZE] = "";
	bool v6 = strchr(host, ':') && host[0] != '[';
	long status = 0;
	CURLcode rc;

	*ret_status = 0;
	if (ret_answer_us)
		*ret_answer_us = 0;
	if (asprintf(&url, "http://%s%s%s:%u%s%s", v6 ? "[" : "", host, v6 ? "]" : "",
	             (unsigned)port, path[0] == '/' ? "" : "/", path) < 0) {
		url = NULL;
		return err_oom(err);
	}
	c = curl_easy_init();
	if (!c)
		return err_set(err, ERR_FAILED, ENOMEM, "GET %s: cannot initialise libcurl", url);
	headers = curl_slist_append(NULL, "Accept: application/json");
	if (!headers)
		return err_oom(err);

	rc = curl_easy_setopt(c, CURLOPT_URL, url);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
	/* No proxy, whatever http_proxy and friends say: the app is on this machine. */
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(c, CURLOPT_PROXY, "");
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, READY_CONNECT_TIMEOUT_MS);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, READY_TIMEOUT_MS);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
#if LIBCURL_VERSION_NUM >= 0x075500
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http");
#endif
	if (rc != CURLE_OK)
		return err_set(err, ERR_FAILED, 0, "GET %s: cannot set up the request: %s", url,
		               curl_easy_strerror(rc));

	rc = curl_easy_perform(c);
	if (rc != CURLE_OK) {
		char cause[CURL_ERROR_SIZE + 64];
		int code = 0;

		describe_failure(c, rc, errbuf, cause, sizeof(cause), &code);
		return err_set(err, ERR_FAILED, code, "GET %s: %s", url, cause);
	}
	(void)curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	*ret_status = status;
	if (ret_answer_us) {
		curl_off_t total = 0, pre = 0;
		if (curl_easy_getinfo(c, CURLINFO_TOTAL_TIME_T, &total) == CURLE_OK &&
		    curl_easy_getinfo(c, CURLINFO_PRETRANSFER_TIME_T, &pre) == CURLE_OK &&
		    total > pre)
			*ret_answer_us = (int64_t)(total - pre);
	}
	return 0;
}
