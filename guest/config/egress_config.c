/* SPDX-License-Identifier: Apache-2.0 */
/* The proxy's URL is taken apart by libcurl's URL API, never by hand. */
#include "egress_config.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "strv.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(CURLU *, curl_url_cleanup)

static void curl_freep(char **p)
{
	curl_free(*p);
}

#define URL_MAX 512

int egress_config_check_proxy(const char *url, char **ret_host, unsigned *ret_port, struct err *err)
{
	_cleanup_(curl_url_cleanupp) CURLU *u = curl_url();
	_cleanup_(curl_freep) char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL;
	char *extra = NULL;
	const char *why = NULL;
	size_t hl;

	if (!u)
		return err_oom(err);
	if (!url || !*url || strlen(url) > URL_MAX)
		why = "it is empty or too long";
	else if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK)
		why = "it is not a URL";
	else if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	         (strcmp(scheme, "http") && strcmp(scheme, "https")))
		why = "the scheme must be http or https";
	else if (curl_url_get(u, CURLUPART_USER, &extra, 0) == CURLUE_OK ||
	         curl_url_get(u, CURLUPART_PASSWORD, &extra, 0) == CURLUE_OK)
		why = "it must not hold a user or password";
	else if (curl_url_get(u, CURLUPART_QUERY, &extra, 0) == CURLUE_OK ||
	         curl_url_get(u, CURLUPART_FRAGMENT, &extra, 0) == CURLUE_OK ||
	         (curl_url_get(u, CURLUPART_PATH, &path, 0) == CURLUE_OK && strcmp(path, "/")))
		why = "it must not have a path, query or fragment";
	else if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !*host)
		why = "it has no host";
	else if (curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK)
		why = "it has no port";
	curl_free(extra);
	if (why)
		return err_set(err, ERR_REFUSED, EINVAL,
		               "`proxy` must be a URL like http://10.0.0.1:3128, not `%.80s`: %s",
		               url ? url : "", why);
	hl = strlen(host);
	if (host[0] == '[' && hl > 2 && host[hl - 1] == ']')
		*ret_host = strndup(host + 1, hl - 2);
	else
		*ret_host = strdup(host);
	if (!*ret_host)
		return err_oom(err);
	*ret_port = (unsigned)strtoul(port, NULL, 10);
	return 0;
}

int egress_config_resolve(const struct egress_request *spec, const struct egress_request *file,
                          char *const *caller_env, struct boot_egress *ret, struct err *err)
{
	const char *daemon = strv_env_get(caller_env, EGRESS_ENV_PROXY);
	const char *required = strv_env_get(caller_env, EGRESS_ENV_REQUIRED);
	const char *nft = strv_env_get(caller_env, EGRESS_ENV_NFT);
	const char *agent = strv_env_get(caller_env, EGRESS_ENV_AGENT_USER);
	const char *proxy = NULL;

	memset(ret, 0, sizeof(*ret));
	if (spec && spec->proxy)
		proxy = spec->proxy;
	else if (daemon && *daemon)
		proxy = daemon;
	/* sandbox.yml's own proxy is never taken (sandbox_config.c warns): the app would choose. */
	ret->required = (spec && spec->required) || (file && file->required) ||
	                (required && !strcmp(required, "1"));
	if (!nft || !*nft)
		nft = access("/usr/sbin/nft", X_OK) == 0 ? "/usr/sbin/nft" : "/sbin/nft";
	ret->nft = strdup(nft);
	ret->agent_user = strdup(agent && *agent ? agent : EGRESS_DEFAULT_AGENT_USER);
	if (!ret->nft || !ret->agent_user)
		return err_oom(err);
	if (!proxy) {
		if (ret->required)
			return err_set(err, ERR_REFUSED, EINVAL,
			               "egress confinement is required but no proxy is named: give "
			               "the spec's `egress.proxy` or the daemon's --egress-proxy");
		return 0;
	}
	if (egress_config_check_proxy(proxy, &ret->host, &ret->port, err) < 0)
		return err_wrap(err, "egress");
	ret->proxy = strdup(proxy);
	return ret->proxy ? 0 : err_oom(err);
}

int egress_config_proxy_env(char ***env, const char *proxy)
{
	static const char *const proxy_names[] = {"HTTPS_PROXY", "HTTP_PROXY", "https_proxy",
	                                          "http_proxy", NULL};

	if (!proxy)
		return 0;
	for (size_t i = 0; proxy_names[i]; i++)
		if (strv_env_set(env, proxy_names[i], proxy) < 0)
			return -ENOMEM;
	if (strv_env_set(env, "NO_PROXY", EGRESS_NO_PROXY) < 0 ||
	    strv_env_set(env, "no_proxy", EGRESS_NO_PROXY) < 0)
		return -ENOMEM;
	return 0;
}

void egress_config_request_dispose(struct egress_request *r)
{
	free(r->proxy);
	r->proxy = NULL;
}

void egress_config_dispose(struct boot_egress *e)
{
	free(e->proxy);
	free(e->host);
	free(e->nft);
	free(e->agent_user);
	memset(e, 0, sizeof(*e));
}
