/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Incus network ACL of one instance. Incus orders an ACL's rules by action (drop, reject,
 * allow, then the NIC's default action), so a reject rule holding the proxy's address would win
 * over the rule allowing it: egress_policy_deny_list() cuts that address out. With the nftables
 * firewall driver Incus applies a bridged NIC's ACL between the instance and everything else,
 * the host's bridge address included, and turns ingress rejects into drops.
 */
#include "egress_acl.h"

#include <stdio.h>
#include <sys/socket.h>

#include "cleanup.h"
#include "json_strict.h"

static json_object *rule(const char *action, const char *description)
{
	json_object *r = json_object_new_object();

	if (!r)
		return NULL;
	json_object_object_add(r, "action", json_object_new_string(action));
	json_object_object_add(r, "state", json_object_new_string("enabled"));
	json_object_object_add(r, "description", json_object_new_string(description));
	return r;
}

static void set(json_object *o, const char *key, const char *value)
{
	json_object_object_add(o, key, json_object_new_string(value));
}

json_object *egress_acl_build(const struct egress_policy *p)
{
	_cleanup_json_ json_object *acl = json_object_new_object();
	json_object *egress = json_object_new_array(), *ingress = json_object_new_array();
	char ip[64], port[8];
	json_object *r;

	if (!acl || !egress || !ingress) {
		json_object_put(egress);
		json_object_put(ingress);
		return NULL;
	}
	json_object_object_add(acl, "egress", egress);
	json_object_object_add(acl, "ingress", ingress);
	set(acl, "description",
	    "sandbox-ctl egress: out only through the allowlisting proxy; the runtime's port "
	    "from the controller only");
	json_object_object_add(acl, "config", json_object_new_object());

	r = rule("allow", "the allowlisting forward proxy");
	if (!r)
		return NULL;
	set(r, "protocol", "tcp");
	set(r, "destination", egress_policy_ip_str(&p->proxy, ip, sizeof(ip)));
	snprintf(port, sizeof(port), "%u", (unsigned)p->proxy_port);
	set(r, "destination_port", port);
	json_object_array_add(egress, r);

	for (int f = 0; f < 2; f++) {
		_cleanup_free_ char *list =
		    egress_policy_deny_list(p, f ? AF_INET6 : AF_INET, true);

		if (!list)
			return NULL;
		if (!*list)
			continue;
		r = rule("reject",
		         f ? "refused: ULA, link-local, the metadata address fd00:ec2::254, "
		             "loopback, this host's networks"
		           : "refused: RFC 1918, CGNAT, link-local, the metadata address "
		             "169.254.169.254, this host's networks");
		if (!r)
			return NULL;
		set(r, "destination", list);
		json_object_array_add(egress, r);
	}

	r = rule("allow", "the runtime's port, from the controller only");
	if (!r)
		return NULL;
	set(r, "protocol", "tcp");
	set(r, "source", egress_policy_ip_str(&p->controller, ip, sizeof(ip)));
	snprintf(port, sizeof(port), "%u", (unsigned)p->app_port);
	set(r, "destination_port", port);
	json_object_array_add(ingress, r);
	return TAKE_PTR(acl);
}

static json_object *keys(const char *acl_name)
{
	json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	set(o, "security.acls", acl_name);
	set(o, "security.acls.default.egress.action", "reject");
	set(o, "security.acls.default.ingress.action", "reject");
	set(o, "security.acls.default.egress.logged", "true");
	set(o, "security.acls.default.ingress.logged", "true");
	return o;
}

json_object *egress_acl_network_keys(const char *acl_name)
{
	return keys(acl_name);
}

json_object *egress_acl_nic_keys(const char *acl_name)
{
	json_object *o = keys(acl_name);

	if (!o)
		return NULL;
	/*
	 * Incus 6.0 (Debian's backport) writes a rule set nft refuses when a NIC has both an ACL
	 * and security.ipv6_filtering (a missing newline after "ether type ip6 drop"), and the
	 * instance does not start. The ACL refuses every IPv6 destination anyway: its only allowed
	 * egress is the proxy's address.
	 */
	set(o, "security.ipv6_filtering", "false");
	return o;
}
