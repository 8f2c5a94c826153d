/* SPDX-License-Identifier: Apache-2.0 */
/*
 * squid.conf for one instance. Allowed pairs are grouped by port: one `port` ACL and one
 * `dstdomain` ACL per port, and one `http_access allow` line joining them; everything else ends
 * at `http_access deny all`, whose deny_info is our page.
 */
#include "egress_squid.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include "cleanup.h"
#include "file.h"

const char egress_squid_error_page[] =
    "<!DOCTYPE html>\n"
    "<html><head><title>403 refused by the sandbox egress policy</title></head><body>\n"
    "<h1>403: refused by the sandbox egress policy</h1>\n"
    "<p>This sandbox may reach only the destinations (host:port) of its allowlist, through "
    "this proxy. %U is not one of them.</p>\n"
    "<p>To allow it, add it to the allowlist the controller passes to "
    "<code>sandbox-ctl egress --allow HOST:PORT</code> and apply the policy again.</p>\n"
    "<p>Policy: sandbox-app-runtime egress (squid %s)</p>\n"
    "</body></html>\n";

/* The two ACLs of one port, at its first entry. */
static void add(FILE *f, bool *seen_port, uint16_t port, const struct egress_policy *p)
{
	if (*seen_port)
		return;
	*seen_port = true;
	fprintf(f, "acl sandbox_port_%u port %u\n", (unsigned)port, (unsigned)port);
	/* -n: a request that names an address is never matched by its reverse DNS name. */
	fprintf(f, "acl sandbox_hosts_%u dstdomain -n", (unsigned)port);
	for (size_t i = 0; i < p->n_allow; i++)
		if (p->allow[i].port == port)
			fprintf(f, " %s", p->allow[i].host);
	fprintf(f, "\n");
}

/* The refused ranges, as one `dst` ACL, one line per range. */
static int deny_dst(FILE *f, const struct egress_policy *p)
{
	for (int fam = 0; fam < 2; fam++) {
		_cleanup_free_ char *list =
		    egress_policy_deny_list(p, fam ? AF_INET6 : AF_INET, false);
		char *item, *save = NULL;

		if (!list)
			return -1;
		for (item = strtok_r(list, ",", &save); item; item = strtok_r(NULL, ",", &save))
			fprintf(f, "acl sandbox_refused_dst dst %s\n", item);
	}
	return 0;
}

char *egress_squid_config(const struct egress_policy *p, const struct egress_squid_options *o)
{
	_cleanup_free_ char *buf = NULL;
	bool seen[EGRESS_ALLOW_MAX] = {false};
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	char ip[64];

	if (!f)
		return NULL;
	fprintf(f, "# Written by sandbox-ctl egress (docs/isolation.md). Do not edit: run it "
	           "again.\n");
	fprintf(f, "http_port %s%s%s:%u\n", p->proxy.family == AF_INET6 ? "[" : "",
	        egress_policy_ip_str(&p->proxy, ip, sizeof(ip)),
	        p->proxy.family == AF_INET6 ? "]" : "", (unsigned)p->proxy_port);
	fprintf(f, "pid_filename %s/squid.pid\n", o->dir);
	fprintf(f, "access_log stdio:%s/access.log squid\n", o->dir);
	fprintf(f, "cache_log %s/cache.log\n", o->dir);
	fprintf(f, "coredump_dir %s\n", o->dir);
	fprintf(f, "error_directory %s/errors\n", o->dir);
	fprintf(f, "cache deny all\ncache_mem 8 MB\nforwarded_for delete\n");
	fprintf(f, "visible_hostname sandbox-egress\nshutdown_lifetime 1 seconds\n");
	fprintf(f, "connect_timeout 10 seconds\nread_timeout 5 minutes\n");
	if (o->hosts_file)
		fprintf(f, "hosts_file %s\n", o->hosts_file);
	for (size_t i = 0; i < p->n_allow; i++) {
		bool *s = NULL;

		/* seen[] marks the first entry of each port. */
		for (size_t j = 0; j <= i && !s; j++)
			if (p->allow[j].port == p->allow[i].port)
				s = &seen[j];
		add(f, s, p->allow[i].port, p);
	}
	if (deny_dst(f, p) < 0) {
		fclose(f);
		return NULL;
	}
	fprintf(f, "deny_info ERR_SANDBOX_EGRESS sandbox_refused_dst\n");
	fprintf(f, "http_access deny sandbox_refused_dst\n");
	for (size_t i = 0; i < p->n_allow; i++)
		if (seen[i])
			fprintf(f, "http_access allow sandbox_hosts_%u sandbox_port_%u\n",
			        (unsigned)p->allow[i].port, (unsigned)p->allow[i].port);
	fprintf(f, "deny_info ERR_SANDBOX_EGRESS all\n");
	fprintf(f, "http_access deny all\n");
	fprintf(f, "icp_access deny all\nhtcp_access deny all\nsnmp_access deny all\n");
	if (fclose(f) != 0)
		return NULL;
	return TAKE_PTR(buf);
}

int egress_squid_write_errors(const char *dir, const char *templates, size_t *ret_linked,
                              struct err *err)
{
	_cleanup_free_ char *errors = NULL, *page = NULL;
	_cleanup_closedir_ DIR *d = NULL;
	_cleanup_close_ int dfd = -1;
	struct dirent *de;

	*ret_linked = 0;
	if (asprintf(&errors, "%s/errors", dir) < 0 ||
	    asprintf(&page, "%s/ERR_SANDBOX_EGRESS", errors) < 0)
		return err_oom(err);
	if (file_mkdir_p(errors, 0755, err) < 0 ||
	    file_write_atomic(page, egress_squid_error_page, strlen(egress_squid_error_page), 0644,
	                      (uid_t)-1, (gid_t)-1, err) < 0)
		return err_wrap(err, "writing the proxy's error pages in %s", errors);
	dfd = open(errors, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = opendir(templates);
	if (dfd < 0 || !d)
		return 0;
	while ((de = readdir(d))) {
		char target[PATH_MAX];

		if (strncmp(de->d_name, "ERR_", 4) != 0 ||
		    strcmp(de->d_name, "ERR_SANDBOX_EGRESS") == 0)
			continue;
		snprintf(target, sizeof(target), "%s/%s", templates, de->d_name);
		unlinkat(dfd, de->d_name, 0);
		if (symlinkat(target, dfd, de->d_name) < 0)
			return err_errno(err, "cannot link %s into %s", target, errors);
		(*ret_linked)++;
	}
	return 0;
}
