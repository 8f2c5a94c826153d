/* SPDX-License-Identifier: Apache-2.0 */
/* The ruleset is written to STATE_DIR/egress.nft and loaded by `nft -f`, a real peer. */
#include "boot_egress.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <netdb.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "file.h"
#include "json_strict.h"
#include "log.h"
#include "proc.h"
#include "strv.h"

#define ADDRS_MAX 16
#define NFT_OUTPUT_MAX 2000

struct confined {
	uid_t uids[2];
	const char *names[2];
	size_t n;
	char addrs[ADDRS_MAX][INET6_ADDRSTRLEN];
	bool v6[ADDRS_MAX];
	size_t n_addrs;
};

/* The app's user (unless it is root) and the agent's (where it exists). */
static void confined_users(const struct boot_plan *p, struct confined *c)
{
	const char *agent = p->egress.agent_user ? p->egress.agent_user : EGRESS_DEFAULT_AGENT_USER;
	struct passwd *pw = getpwnam(agent);

	if (p->user.uid != (uid_t)-1 && p->user.uid != 0) {
		c->uids[c->n] = p->user.uid;
		c->names[c->n++] = p->user.name ? p->user.name : "the app's user";
	}
	if (pw && pw->pw_uid != 0 && (c->n == 0 || pw->pw_uid != c->uids[0])) {
		c->uids[c->n] = pw->pw_uid;
		c->names[c->n++] = agent;
	}
}

static int proxy_addresses(const struct boot_plan *p, struct confined *c, struct err *err)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
	int r = getaddrinfo(p->egress.host, NULL, &hints, &res);

	if (r != 0)
		return err_set(err, ERR_FAILED, EHOSTUNREACH,
		               "the egress proxy's host %s cannot be resolved: %s", p->egress.host,
		               gai_strerror(r));
	for (struct addrinfo *a = res; a && c->n_addrs < ADDRS_MAX; a = a->ai_next) {
		const void *bin =
		    a->ai_family == AF_INET6
		        ? (const void *)&((struct sockaddr_in6 *)a->ai_addr)->sin6_addr
		        : (const void *)&((struct sockaddr_in *)a->ai_addr)->sin_addr;
		char text[INET6_ADDRSTRLEN];
		bool dup = false;

		if ((a->ai_family != AF_INET && a->ai_family != AF_INET6) ||
		    !inet_ntop(a->ai_family, bin, text, sizeof(text)))
			continue;
		for (size_t i = 0; i < c->n_addrs; i++)
			dup = dup || !strcmp(c->addrs[i], text);
		if (dup)
			continue;
		c->v6[c->n_addrs] = a->ai_family == AF_INET6;
		snprintf(c->addrs[c->n_addrs++], INET6_ADDRSTRLEN, "%s", text);
	}
	freeaddrinfo(res);
	return 0;
}

/* The table, replaced as a whole: create (so that delete cannot fail), delete, define. */
static char *ruleset(const struct boot_plan *p, const struct confined *c)
{
	_cleanup_free_ char *allow = NULL;
	char uids[64], *text = NULL;

	snprintf(uids, sizeof(uids), "%u", (unsigned)c->uids[0]);
	if (c->n > 1)
		snprintf(uids, sizeof(uids), "%u, %u", (unsigned)c->uids[0], (unsigned)c->uids[1]);
	allow = strdup("");
	for (size_t i = 0; allow && i < c->n_addrs; i++) {
		char *more = NULL;
		if (asprintf(&more, "%s\t\t%s daddr %s tcp dport %u accept\n", allow,
		             c->v6[i] ? "ip6" : "ip", c->addrs[i], p->egress.port) < 0)
			more = NULL;
		free(allow);
		allow = more;
	}
	if (!allow ||
	    asprintf(&text,
	             "# Written by sandbox-agent for %s: the app's and the agent's users reach\n"
	             "# loopback and the egress proxy %s only.\n"
	             "table inet " BOOT_EGRESS_TABLE "\n"
	             "delete table inet " BOOT_EGRESS_TABLE "\n"
	             "table inet " BOOT_EGRESS_TABLE " {\n"
	             "\tchain output {\n"
	             "\t\ttype filter hook output priority 0; policy accept;\n"
	             "\t\tmeta skuid { %s } jump confined\n"
	             "\t}\n"
	             "\tchain confined {\n"
	             /* A resolver on loopback would forward names out: DNS is not loopback. */
	             "\t\tmeta l4proto { tcp, udp } th dport 53 reject\n"
	             "\t\tip daddr 127.0.0.0/8 accept\n"
	             "\t\tip6 daddr ::1 accept\n"
	             "%s"
	             "\t\tmeta l4proto tcp reject with tcp reset\n"
	             "\t\treject with icmpx type admin-prohibited\n"
	             "\t}\n"
	             "}\n",
	             p->app_dir, p->egress.proxy, uids, allow) < 0)
		return NULL;
	return text;
}

/*
 * Run `nft ARGS` with the ruleset file (or none) as a real process; its output is kept for
 * the message. 0, or -1 with err "nft ...: its words".
 */
static int run_nft(const struct boot_plan *p, const char *args, const char *file, struct err *err)
{
	_cleanup_free_ char *out_path = NULL, *output = NULL, *cmd = NULL, *e_nft = NULL,
	                    *e_file = NULL;
	_cleanup_close_ int out = -1;
	char how[64];
	int status = 0;
	size_t len = 0;
	pid_t pid;

	if (asprintf(&out_path, "%s/egress.out", p->state_dir) < 0 ||
	    asprintf(&cmd, "exec \"$NFT\" %s", args) < 0 ||
	    asprintf(&e_nft, "NFT=%s", p->egress.nft) < 0 ||
	    asprintf(&e_file, "RULES=%s", file ? file : "") < 0)
		return err_oom(err);
	char *env[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", e_nft, e_file, NULL};
	out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (out < 0)
		return err_errno(err, "cannot write %s", out_path);
	struct proc_spec spec = {
	    .command = cmd, .env = env, .output_fd = out, .procs_fd = -1, .keep_fd = -1};
	if (proc_spawn(&spec, &pid, err) < 0)
		return err_wrap(err, "cannot run %s", p->egress.nft);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	output = calloc(1, NFT_OUTPUT_MAX + 1);
	if (output) {
		_cleanup_close_ int in = open(out_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		ssize_t n = in >= 0 ? file_read_all(in, output, NFT_OUTPUT_MAX) : -1;
		len = n > 0 ? (size_t)n : 0;
		output[len] = '\0';
	}
	for (size_t i = 0; output && i < len; i++)
		if (output[i] == '\n' || output[i] == '\t')
			output[i] = ' ';
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
		return err_set(err, ERR_FAILED, ENOENT,
		               "%s is not there: install Debian's nftables package in the image "
		               "(apt-get install nftables)",
		               p->egress.nft);
	proc_describe_status(status, how, sizeof(how));
	return err_set(err, ERR_FAILED, EPERM, "`%s %s%s` %s: %s", p->egress.nft,
	               file ? "-f " : args, file ? file : "", how,
	               output && *output ? output : "(no output)");
}

static void record(struct boot_state *st, const char *status, const struct boot_plan *p,
                   const struct confined *c, const char *detail)
{
	_cleanup_json_ struct json_object *o = json_object_new_object();
	struct json_object *users = json_object_new_array(), *addrs = json_object_new_array();

	if (!o || !users || !addrs) {
		json_object_put(users);
		json_object_put(addrs);
		return;
	}
	json_object_object_add(o, "status", json_object_new_string(status));
	json_object_object_add(o, "proxy",
	                       p->egress.proxy ? json_object_new_string(p->egress.proxy) : NULL);
	json_object_object_add(o, "required", json_object_new_boolean(p->egress.required));
	json_object_object_add(o, "table", json_object_new_string("inet " BOOT_EGRESS_TABLE));
	for (size_t i = 0; c && i < c->n; i++)
		json_object_array_add(users, json_object_new_string(c->names[i]));
	for (size_t i = 0; c && i < c->n_addrs; i++)
		json_object_array_add(addrs, json_object_new_string(c->addrs[i]));
	json_object_object_add(o, "users", users);
	json_object_object_add(o, "addresses", addrs);
	json_object_object_add(o, "detail", detail ? json_object_new_string(detail) : NULL);
	if (boot_state_set(&st->egress, json_object_to_json_string_ext(o, 0)) < 0)
		log_debug("out of memory recording the egress rules");
}

static void note(char ***notes, const char *fmt, const char *what)
{
	char *line = NULL;

	if (notes && asprintf(&line, fmt, what) >= 0 && strv_consume(notes, line) < 0)
		log_debug("out of memory keeping a note");
}

int boot_egress_apply(const struct boot_plan *p, struct boot_state *st, char ***notes,
                      struct err *err)
{
	_cleanup_free_ char *path = NULL, *text = NULL;
	struct confined c = {0};
	struct err e;

	if (!p->egress.proxy) {
		record(st, "off", p, NULL, NULL);
		return 0;
	}
	confined_users(p, &c);
	if (c.n == 0) {
		err_set(&e, ERR_FAILED, EPERM,
		        "no unprivileged user to confine: the app runs as root and there is no "
		        "`%s` user",
		        p->egress.agent_user ? p->egress.agent_user : EGRESS_DEFAULT_AGENT_USER);
	} else if (proxy_addresses(p, &c, &e) == 0) {
		text = ruleset(p, &c);
		if (!text || asprintf(&path, "%s/egress.nft", p->state_dir) < 0)
			return err_oom(err);
		if (file_write_replace(path, text, strlen(text), 0600, (uid_t)-1, (gid_t)-1, &e) ==
		        0 &&
		    run_nft(p, "-f \"$RULES\"", path, &e) == 0) {
			record(st, "applied", p, &c, NULL);
			return 0;
		}
	}
	record(st, p->egress.required ? "failed" : "skipped", p, &c, e.msg);
	if (p->egress.required) {
		*err = e;
		return err_wrap(err, "egress confinement was asked for (egress.required) but the "
		                     "rules cannot be applied");
	}
	log_warn("egress rules skipped: %s", e.msg);
	note(notes,
	     "warning: the egress rules were not applied, so the app and the agent can reach more "
	     "than the proxy: %s",
	     e.msg);
	return 0;
}

void boot_egress_remove(const struct boot_plan *p)
{
	struct err e;

	/*
	 * Whatever this discard's own configuration says (the daemon's proxy may not be in its
	 * environment now): a table a boot left is removed. Create first, so the delete finds it
	 * whether or not a boot made it. */
	if (run_nft(p,
	            "add table inet " BOOT_EGRESS_TABLE " ';' delete table inet " BOOT_EGRESS_TABLE,
	            NULL, &e) < 0)
		log_debug("removing the egress rules: %s", e.msg);
}
