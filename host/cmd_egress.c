/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sandbox-ctl egress (docs/isolation.md): the instance's egress policy built from an allowlist
 * of host:port entries: the Incus network ACL (egress only to the allowlisting proxy, the
 * private, link-local and metadata ranges and this host's networks refused, the runtime's port
 * reachable from the controller only) and the proxy's configuration (squid). --out DIR writes
 * them; with the global --incus NAME the ACL is created or replaced and attached to the
 * instance's NIC through the incus client, with --network NET to that whole bridge network
 * instead (kernels without bridge-family conntrack and reject: docs/isolation.md).
 */
#include "cmd.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "egress_acl.h"
#include "egress_incus.h"
#include "egress_policy.h"
#include "egress_squid.h"
#include "file.h"

#define USAGE                                                                                      \
	"egress --proxy ADDR:PORT --controller ADDR [--allow HOST:PORT]... [--allow-file FILE]\n"  \
	"            [--no-default-allow] [--deny CIDR]... [--no-host-networks] [--app-port N]\n"  \
	"            [--out DIR] [--hosts-file FILE] [--acl NAME] [--device NIC | --network NET]"

/* Where the proxy's files are when --out does not say (squid.conf names it). */
#define EGRESS_DEFAULT_DIR "/var/lib/sandbox-ctl/egress"

struct egress_args {
	const char *proxy, *controller, *out, *hosts_file, *acl, *device, *network;
	bool defaults, host_networks;
	long app_port;
};

static int write_file(const char *dir, const char *name, const char *text, struct err *err)
{
	_cleanup_free_ char *path = NULL;

	if (asprintf(&path, "%s/%s", dir, name) < 0)
		return err_oom(err);
	if (file_write_atomic(path, text, strlen(text), 0644, (uid_t)-1, (gid_t)-1, err) < 0)
		return err_wrap(err, "writing %s", path);
	return 0;
}

static json_object *allow_list(const struct egress_policy *p)
{
	json_object *a = json_object_new_array();

	for (size_t i = 0; a && i < p->n_allow; i++) {
		char s[EGRESS_HOST_MAX + 8];

		snprintf(s, sizeof(s), "%s:%u", p->allow[i].host, (unsigned)p->allow[i].port);
		json_object_array_add(a, json_object_new_string(s));
	}
	return a;
}

/* The policy from the options already parsed into a (the allowlist entries are in p). */
static int policy_finish(struct ctl *ctl, struct egress_policy *p, const struct egress_args *a)
{
	if (!a->proxy || !a->controller)
		return cmd_usage(ctl, USAGE, "--proxy and --controller are required");
	if (egress_policy_parse_endpoint(a->proxy, &p->proxy, &p->proxy_port, &ctl->err) < 0 ||
	    egress_policy_parse_ip(a->controller, &p->controller, &ctl->err) < 0)
		return CTL_EXIT_REFUSED;
	if (a->app_port < 1 || a->app_port > 65535)
		return cmd_usage(ctl, USAGE, "--app-port must be 1 to 65535");
	p->app_port = (uint16_t)a->app_port;
	for (size_t i = 0; a->defaults && egress_policy_default_allow[i]; i++)
		if (egress_policy_allow(p, egress_policy_default_allow[i], &ctl->err) < 0)
			return CTL_EXIT_FAILED;
	if (p->n_allow == 0)
		return cmd_usage(ctl, USAGE, "the allowlist is empty: give --allow HOST:PORT");
	if (egress_policy_deny_builtin(p, &ctl->err) < 0 ||
	    (a->host_networks && egress_policy_deny_host_networks(p, &ctl->err) < 0))
		return output_exit_of(&ctl->err);
	return CTL_EXIT_OK;
}

static int parse(struct ctl *ctl, int argc, char **argv, struct egress_policy *p,
                 struct egress_args *a)
{
	static const struct option opts[] = {
	    {"proxy", required_argument, NULL, 'p'},
	    {"controller", required_argument, NULL, 'c'},
	    {"allow", required_argument, NULL, 'a'},
	    {"allow-file", required_argument, NULL, 'A'},
	    {"no-default-allow", no_argument, NULL, 'N'},
	    {"deny", required_argument, NULL, 'd'},
	    {"no-host-networks", no_argument, NULL, 'H'},
	    {"app-port", required_argument, NULL, 'P'},
	    {"out", required_argument, NULL, 'o'},
	    {"hosts-file", required_argument, NULL, 'h'},
	    {"acl", required_argument, NULL, 'n'},
	    {"device", required_argument, NULL, 'e'},
	    {"network", required_argument, NULL, 'w'},
	    {0},
	};
	char *end;
	int c;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			a->proxy = optarg;
			break;
		case 'c':
			a->controller = optarg;
			break;
		case 'a':
			if (egress_policy_allow(p, optarg, &ctl->err) < 0)
				return CTL_EXIT_REFUSED;
			break;
		case 'A':
			if (egress_policy_allow_file(p, optarg, &ctl->err) < 0)
				return CTL_EXIT_REFUSED;
			break;
		case 'N':
			a->defaults = false;
			break;
		case 'd':
			if (egress_policy_deny(p, optarg, "refused by --deny", &ctl->err) < 0)
				return CTL_EXIT_REFUSED;
			break;
		case 'H':
			a->host_networks = false;
			break;
		case 'P':
			errno = 0;
			a->app_port = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg)
				a->app_port = -1;
			break;
		case 'o':
			a->out = optarg;
			break;
		case 'h':
			a->hosts_file = optarg;
			break;
		case 'n':
			a->acl = optarg;
			break;
		case 'e':
			a->device = optarg;
			break;
		case 'w':
			a->network = optarg;
			break;
		default:
			return cmd_bad_option(ctl, USAGE, c, argv);
		}
	}
	if (optind != argc)
		return cmd_usage(ctl, USAGE, "unexpected argument '%s'", argv[optind]);
	if (a->out && a->out[0] != '/')
		return cmd_usage(ctl, USAGE, "--out wants an absolute path (squid.conf names it)");
	return policy_finish(ctl, p, a);
}

int cmd_egress(struct ctl *ctl, int argc, char **argv)
{
	_cleanup_free_ struct egress_policy *p = calloc(1, sizeof(*p));
	struct egress_args a = {
	    .defaults = true, .host_networks = true, .app_port = 8080, .device = "eth0"};
	_cleanup_free_ char *acl_name = NULL, *squid = NULL;
	_cleanup_json_ json_object *doc = json_object_new_object();
	json_object *acl, *nic;
	struct egress_squid_options so;
	size_t linked = 0;
	char ep[80], url[96], ip[64];
	int r;

	if (!p || !doc) {
		err_oom(&ctl->err);
		return CTL_EXIT_FAILED;
	}
	r = parse(ctl, argc, argv, p, &a);
	if (r != CTL_EXIT_OK)
		return r;
	if (a.acl)
		acl_name = strdup(a.acl);
	else if (asprintf(&acl_name, "sandbox-egress%s%s", ctl->so.incus ? "-" : "",
	                  ctl->so.incus ? ctl->so.incus : "") < 0)
		acl_name = NULL;
	so.dir = a.out ? a.out : EGRESS_DEFAULT_DIR;
	so.hosts_file = a.hosts_file;
	squid = egress_squid_config(p, &so);
	acl = egress_acl_build(p);
	nic = a.network ? egress_acl_network_keys(acl_name ? acl_name : "")
	                : egress_acl_nic_keys(acl_name ? acl_name : "");
	json_object_object_add(doc, "acl", acl);
	json_object_object_add(doc, "nic", nic);
	if (!acl_name || !squid || !acl || !nic) {
		err_oom(&ctl->err);
		return CTL_EXIT_FAILED;
	}
	json_object_object_add(doc, "acl_name", json_object_new_string(acl_name));
	json_object_object_add(doc, "allow", allow_list(p));
	snprintf(ep, sizeof(ep), p->proxy.family == AF_INET6 ? "[%s]:%u" : "%s:%u",
	         egress_policy_ip_str(&p->proxy, ip, sizeof(ip)), (unsigned)p->proxy_port);
	json_object_object_add(doc, "proxy", json_object_new_string(ep));
	snprintf(url, sizeof(url), "http://%s", ep);
	json_object_object_add(doc, "proxy_url", json_object_new_string(url));
	if (a.out) {
		if (file_mkdir_p(a.out, 0755, &ctl->err) < 0 ||
		    write_file(a.out, "acl.json",
		               json_object_to_json_string_ext(
		                   acl, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE),
		               &ctl->err) < 0 ||
		    write_file(a.out, "squid.conf", squid, &ctl->err) < 0 ||
		    egress_squid_write_errors(a.out, EGRESS_SQUID_TEMPLATES, &linked, &ctl->err) <
		        0)
			return CTL_EXIT_FAILED;
		json_object_object_add(doc, "squid_templates",
		                       json_object_new_int64((int64_t)linked));
		json_object_object_add(doc, "out", json_object_new_string(a.out));
	} else {
		json_object_object_add(doc, "squid_conf", json_object_new_string(squid));
	}
	if (ctl->so.incus || a.network) {
		if (egress_incus_apply(ctl->so.incus_cmd, ctl->so.incus, a.device, a.network,
		                       acl_name, acl, nic, &ctl->err) < 0)
			return CTL_EXIT_FAILED;
		if (a.network) {
			json_object_object_add(doc, "network", json_object_new_string(a.network));
		} else {
			json_object_object_add(doc, "instance",
			                       json_object_new_string(ctl->so.incus));
			json_object_object_add(doc, "device", json_object_new_string(a.device));
		}
	}
	ctl->result = TAKE_PTR(doc);
	return CTL_EXIT_OK;
}
