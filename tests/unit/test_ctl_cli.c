/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sandbox-ctl end to end, connecting: the real binary against a minimal guest built from the
 * channel (test_ctl_guest.h) over a unix socket, a Firecracker-like socket that closes silently
 * before it accepts, a qemu-like serial chardev, exec pipes (direct and through `sh -c` relaying
 * to a socket), and Incus faked by a script. Keys: keygen, trust on first use, a changed guest
 * key refused with exit 4, a host key the guest does not list refused with exit 3.
 * Never AF_VSOCK (docs/test-machines.md).
 */
#include <check.h>
#include <sys/stat.h>

#include "test_ctl_env.h"

static struct ctl_env env;

static void setup(void)
{
	ctl_env_setup(&env);
}

static void teardown(void)
{
	ctl_env_teardown(&env);
}

START_TEST(test_keygen)
{
	char path[PATH_MAX + 32];
	struct keypair *kp = NULL;
	char fp[KEYS_FINGERPRINT_MAX];
	struct ctl_run r;
	struct stat st;
	struct err e;

	/* The env's key was made by keygen: 0600, its .pub 0644, the fingerprint it printed. */
	ck_assert_int_eq(stat(env.key, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	snprintf(path, sizeof(path), "%s.pub", env.key);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0644);
	ck_assert_int_eq(keys_load(env.key, &kp, &e), 0);
	keys_fingerprint(kp->pk, fp);
	ck_assert_str_eq(fp, env.host_fp);
	keys_free(kp);

	/* Never replaces a key unless forced. */
	r = CTL_RUN(&env, NULL, "keygen");
	ck_assert_int_eq(r.rc, 2);
	ck_assert_ptr_nonnull(strstr(ctl_str(&r, "error"), "exists already"));
	ctl_run_dispose(&r);
	r = CTL_RUN(&env, NULL, "keygen", "--force", "--comment", "ci host");
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_ne(ctl_str(&r, "fingerprint"), env.host_fp);
	ck_assert_ptr_nonnull(strstr(ctl_str(&r, "public"), " ci host"));
	ctl_run_dispose(&r);

	/* A new directory is made 0700; --out wins over --key. */
	snprintf(path, sizeof(path), "%s/new/dir/key", env.dir);
	r = CTL_RUN(&env, NULL, "keygen", "--out", path);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(ctl_str(&r, "key"), path);
	*strrchr(path, '/') = '\0';
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0700);
	ctl_run_dispose(&r);
}
END_TEST

START_TEST(test_unix_trust_on_first_use)
{
	_cleanup_free_ char *report = NULL, *pins = NULL;
	char addr[PATH_MAX + 16];
	struct ctl_run r;

	snprintf(addr, sizeof(addr), "unix:%s", env.sock);
	ctl_env_server(&env, fg_serve_unix(env.sock, &env.cfg));

	/* No pin and no permission to pin: refused before the host signs anything. */
	r = CTL_RUN(&env, NULL, "hello", "--connect", addr);
	ck_assert_int_eq(r.rc, 3);
	ck_assert_ptr_nonnull(strstr(r.err, "--accept-new-guest-key"));
	ck_assert_ptr_nonnull(strstr(r.err, env.guest_fp));
	ck_assert_ptr_nonnull(strstr(ctl_str(&r, "error"), "no guest key is pinned"));
	ctl_run_dispose(&r);

	/* Global options go before or after the command. */
	r = CTL_RUN(&env, NULL, "--connect", addr, "hello", "--accept-new-guest-key");
	ck_assert_msg(r.rc == 0, "%s", r.err);
	ck_assert_str_eq(ctl_str(&r, "agent"), "sandbox-agent");
	ck_assert_str_eq(ctl_str(&r, "version"), "0.1.0-test");
	ck_assert_str_eq(ctl_str(&r, "guest_key"), env.guest_fp);
	ck_assert_str_eq(ctl_str(&r, "pin"), "added");
	ck_assert_int_eq(ctl_int(r.json, "protocol"), 1);
	ck_assert_str_eq(ctl_str(&r, "pinned_as"), addr);
	ctl_run_dispose(&r);
	pins = ctl_read_file(env.pins);
	ck_assert_ptr_nonnull(strstr(pins, addr));

	r = CTL_RUN(&env, NULL, "hello", "--connect", addr);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(ctl_str(&r, "pin"), "match");
	ctl_run_dispose(&r);

	/* The guest saw exactly two sessions, each with our hello and a clean close. */
	report = ctl_report_wait_lines(&env, "closed", 2);
	ck_assert_uint_eq(ctl_count(report, "hs-ok"), 2);
	ck_assert_uint_eq(ctl_count_lines(report, "closed"), 2);
	ck_assert_ptr_nonnull(strstr(report, "\"client\":\"sandbox-ctl\""));
	ck_assert_ptr_nonnull(strstr(report, env.host_fp));
}
END_TEST

START_TEST(test_guest_key_changed)
{
	_cleanup_free_ char *report = NULL;
	char addr_a[PATH_MAX + 16], addr_b[PATH_MAX + 16], sock_b[PATH_MAX + 16];
	char other_fp[KEYS_FINGERPRINT_MAX];
	struct fg_config cfg_b = env.cfg;
	struct keypair *other = NULL;
	struct ctl_run r;
	struct err e;

	snprintf(addr_a, sizeof(addr_a), "unix:%s", env.sock);
	snprintf(sock_b, sizeof(sock_b), "%s/rebuilt.sock", env.dir);
	snprintf(addr_b, sizeof(addr_b), "unix:%s", sock_b);
	ck_assert_int_eq(keys_generate(&other, &e), 0);
	keys_fingerprint(other->pk, other_fp);
	cfg_b.key = other;
	ctl_env_server(&env, fg_serve_unix(env.sock, &env.cfg));
	ctl_env_server(&env, fg_serve_unix(sock_b, &cfg_b));

	r = CTL_RUN(&env, NULL, "hello", "--connect", addr_a, "--instance", "vm1",
	            "--accept-new-guest-key");
	ck_assert_int_eq(r.rc, 0);
	ctl_run_dispose(&r);

	/* The same instance now shows another key: exit 4, both fingerprints, nothing signed. */
	r = CTL_RUN(&env, NULL, "hello", "--connect", addr_b, "--instance", "vm1",
	            "--accept-new-guest-key");
	ck_assert_int_eq(r.rc, 4);
	ck_assert_ptr_nonnull(strstr(r.err, env.guest_fp));
	ck_assert_ptr_nonnull(strstr(r.err, other_fp));
	ck_assert_ptr_nonnull(strstr(r.err, "--replace-guest-key"));
	ctl_run_dispose(&r);
	report = ctl_report_wait(&env, "refused the connection");
	ck_assert_uint_eq(ctl_count(report, "hs-ok"), 1);
	ck_assert_ptr_nonnull(strstr(report, "refused the connection"));

	/* The instance was rebuilt: replace the pin once, then it matches. */
	r = CTL_RUN(&env, NULL, "hello", "--connect", addr_b, "--instance", "vm1",
	            "--replace-guest-key");
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(ctl_str(&r, "pin"), "replaced");
	ck_assert_str_eq(ctl_str(&r, "guest_key"), other_fp);
	ctl_run_dispose(&r);
	r = CTL_RUN(&env, NULL, "hello", "--connect", addr_b, "--instance", "vm1");
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(ctl_str(&r, "pin"), "match");
	ctl_run_dispose(&r);
	/* And the old guest is now the stranger. */
	r = CTL_RUN(&env, NULL, "hello", "--connect", addr_a, "--instance", "vm1");
	ck_assert_int_eq(r.rc, 4);
	ctl_run_dispose(&r);
	keys_free(other);
}
END_TEST

START_TEST(test_host_key_not_authorized)
{
	struct fg_config cfg = env.cfg;
	struct keypair *stranger = NULL;
	char addr[PATH_MAX + 16];
	struct ctl_run r;
	struct err e;

	ck_assert_int_eq(keys_generate(&stranger, &e), 0);
	cfg.host_pk = stranger->pk;
	snprintf(addr, sizeof(addr), "unix:%s", env.sock);
	ctl_env_server(&env, fg_serve_unix(env.sock, &cfg));
	r = CTL_RUN(&env, NULL, "hello", "--connect", addr, "--accept-new-guest-key");
	ck_assert_int_eq(r.rc, 3);
	ck_assert_ptr_nonnull(strstr(r.err, "refused the connection"));
	ck_assert_ptr_nonnull(strstr(r.err, env.host_fp));
	ctl_run_dispose(&r);
	/* Nothing was pinned for a guest that never proved its key. */
	{
		_cleanup_free_ char *pins = ctl_read_file(env.pins);
		ck_assert_str_eq(pins, "");
	}
	keys_free(stranger);
}
END_TEST

START_TEST(test_firecracker_retries)
{
	_cleanup_free_ char *report = NULL;
	char addr[PATH_MAX + 16];
	struct ctl_run r;

	/* Firecracker closes silently three times (the agent is not listening yet). */
	snprintf(addr, sizeof(addr), "fc:%s:7000", env.sock);
	ctl_env_server(&env, fg_serve_fc(env.sock, &env.cfg, 3, "OK 1073741825\n"));
	r = CTL_RUN(&env, NULL, "hello", "--connect", addr, "--accept-new-guest-key");
	ck_assert_msg(r.rc == 0, "%s", r.err);
	ck_assert_str_eq(ctl_str(&r, "guest_key"), env.guest_fp);
	ck_assert_str_eq(ctl_str(&r, "pinned_as"), addr);
	ctl_run_dispose(&r);
	report = ctl_report(&env);
	ck_assert_uint_eq(ctl_count(report, "fc CONNECT 7000"), 4);
	ck_assert_uint_eq(ctl_count(report, "hs-ok"), 1);
}
END_TEST

START_TEST(test_firecracker_default_port_and_bad_replies)
{
	_cleanup_free_ char *report = NULL;
	char addr[PATH_MAX + 16], sock2[PATH_MAX + 16], sock3[PATH_MAX + 16];
	struct ctl_run r;

	snprintf(addr, sizeof(addr), "fc:%s", env.sock);
	ctl_env_server(&env, fg_serve_fc(env.sock, &env.cfg, 0, "OK 5\n"));
	r = CTL_RUN(&env, NULL, "hello", "--connect", addr, "--accept-new-guest-key");
	ck_assert_msg(r.rc == 0, "%s", r.err);
	ctl_run_dispose(&r);
	report = ctl_report(&env);
	ck_assert_ptr_nonnull(strstr(report, "fc CONNECT 7340"));

	/* Something that is not Firecracker answers: refused at once, clearly. */
	snprintf(sock2, sizeof(sock2), "%s/notfc.sock", env.dir);
	snprintf(addr, sizeof(addr), "fc:%s", sock2);
	ctl_env_server(&env, fg_serve_fc(sock2, &env.cfg, 0, "HTTP/1.1 400 Bad Request\r\n"));
	r = CTL_RUN(&env, NULL, "hello", "--connect", addr, "--accept-new-guest-key");
	ck_assert_int_eq(r.rc, 3);
	ck_assert_ptr_nonnull(strstr(r.err, "not a Firecracker vsock socket"));
	ck_assert_ptr_nonnull(strstr(r.err, "HTTP/1.1 400"));
	ctl_run_dispose(&r);

	/* Nothing ever listens: retried until the deadline, then said so. */
	snprintf(sock3, sizeof(sock3), "%s/silent.sock", env.dir);
	snprintf(addr, sizeof(addr), "fc:%s:6000", sock3);
	ctl_env_server(&env, fg_serve_fc(sock3, &env.cfg, 1000000, ""));
	r = CTL_RUN(&env, NULL, "hello", "--connect", addr, "--timeout", "1");
	ck_assert_int_eq(r.rc, 3);
	ck_assert_ptr_nonnull(strstr(r.err, "nothing listens on vsock port 6000"));
	ctl_run_dispose(&r);
}
END_TEST

START_TEST(test_serial_sessions_on_one_stream)
{
	_cleanup_free_ char *report = NULL;
	char addr[PATH_MAX + 16];
	struct ctl_run r;

	/* Each connection brings noise into the port and onto the host's side; both resync. */
	snprintf(addr, sizeof(addr), "serial:%s", env.sock);
	ctl_env_server(&env, fg_serve_serial(env.sock, &env.cfg));
	r = CTL_RUN(&env, NULL, "hello", "--connect", addr, "--accept-new-guest-key");
	ck_assert_msg(r.rc == 0, "%s", r.err);
	ctl_run_dispose(&r);
	r = CTL_RUN(&env, NULL, "status", "--connect", addr);
	ck_assert_msg(r.rc == 0, "%s", r.err);
	ck_assert_str_eq(ctl_str(&r, "status"), "ready");
	ctl_run_dispose(&r);
	report = ctl_report(&env);
	ck_assert_uint_eq(ctl_count(report, "hs-ok"), 2);
}
END_TEST

START_TEST(test_exec_direct_and_relayed)
{
	_cleanup_free_ char *report = NULL;
	char addr[PATH_MAX + 16];
	struct ctl_run r;

	/* The guest on the command's stdin and stdout; its stderr reaches ours. */
	r = CTL_RUN(&env, NULL, "hello", "--accept-new-guest-key", "--connect", "exec", "--",
	            self_bin, "--fake-guest-stdio", env.dir, env.report);
	ck_assert_msg(r.rc == 0, "%s", r.err);
	ck_assert_str_eq(ctl_str(&r, "guest_key"), env.guest_fp);
	ck_assert_ptr_nonnull(strstr(r.err, "fake guest: serving on stdin/stdout"));
	ck_assert_ptr_nonnull(strstr(ctl_str(&r, "pinned_as"), "exec:"));
	ctl_run_dispose(&r);

	/* sh -c relaying to a peer, as `incus exec` or `kubectl exec` relays across machines. */
	snprintf(addr, sizeof(addr), "%s", env.sock);
	ctl_env_server(&env, fg_serve_unix(env.sock, &env.cfg));
	r = CTL_RUN(&env, NULL, "status", "--instance", "relayed", "--accept-new-guest-key",
	            "--connect", "exec", "--", "sh", "-c", "exec \"$0\" --relay \"$1\"", self_bin,
	            addr);
	ck_assert_msg(r.rc == 0, "%s", r.err);
	ck_assert_str_eq(ctl_str(&r, "status"), "ready");
	ctl_run_dispose(&r);
	report = ctl_report_wait_lines(&env, "closed", 2);
	ck_assert_uint_eq(ctl_count(report, "hs-ok"), 2);
	ck_assert_uint_eq(ctl_count_lines(report, "closed"), 2);
}
END_TEST

START_TEST(test_exec_failures)
{
	struct ctl_run r;

	r = CTL_RUN(&env, NULL, "hello", "--instance", "x", "--connect", "exec", "--",
	            "/nonexistent/agent");
	ck_assert_int_eq(r.rc, 3);
	ck_assert_ptr_nonnull(strstr(r.err, "cannot run /nonexistent/agent"));
	ctl_run_dispose(&r);

	/* The command ends before the handshake: say how. */
	r = CTL_RUN(&env, NULL, "hello", "--instance", "x", "--connect", "exec", "--", "sh", "-c",
	            "echo 'Error: Instance not found' >&2; exit 7");
	ck_assert_int_eq(r.rc, 3);
	ck_assert_ptr_nonnull(strstr(r.err, "Error: Instance not found"));
	ck_assert_ptr_nonnull(strstr(ctl_last_line(&r), "exited with status 7"));
	ctl_run_dispose(&r);

	/* A command that never speaks: the handshake's deadline. */
	r = CTL_RUN(&env, NULL, "hello", "--instance", "x", "--timeout", "0.5", "--connect", "exec",
	            "--", "sleep", "30");
	ck_assert_int_eq(r.rc, 3);
	ck_assert_ptr_nonnull(strstr(r.err, "did not complete within"));
	ctl_run_dispose(&r);
}
END_TEST

START_TEST(test_incus_falls_back_to_exec)
{
	_cleanup_free_ char *args = NULL, *report = NULL;
	char script[PATH_MAX + 16], env_var[PATH_MAX + 32], log[PATH_MAX + 16];
	const char *extra[] = {env_var, NULL};
	struct ctl_run r;
	FILE *f;

	/* A container has no vsock_id: `incus exec NAME -- sandbox-agent serve --stdio`. */
	snprintf(script, sizeof(script), "%s/incus", env.dir);
	snprintf(log, sizeof(log), "%s/incus.log", env.dir);
	f = fopen(script, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f,
	        "#!/bin/sh\n"
	        "echo \"$*\" >> '%s'\n"
	        "case \"$1\" in\n"
	        "config) echo; exit 0 ;;\n"
	        "exec) exec '%s' --fake-guest-stdio '%s' '%s' ;;\n"
	        "esac\n"
	        "exit 1\n",
	        log, self_bin, env.dir, env.report);
	fclose(f);
	chmod(script, 0755);
	snprintf(env_var, sizeof(env_var), "SANDBOX_CTL_INCUS=%s", script);

	r = ctl_run_env(&env, NULL, extra,
	                (char *const[]){"hello", "--incus", "vm1", "--accept-new-guest-key", NULL});
	ck_assert_msg(r.rc == 0, "%s", r.err);
	ck_assert_str_eq(ctl_str(&r, "pinned_as"), "incus:vm1");
	ck_assert_str_eq(ctl_str(&r, "guest_key"), env.guest_fp);
	ctl_run_dispose(&r);
	args = ctl_read_file(log);
	ck_assert_str_eq(args, "config get vm1 volatile.vsock_id\n"
	                       "exec vm1 -- sandbox-agent serve --stdio\n");

	/* Names Incus would not take never reach its command line. */
	r = ctl_run_env(&env, NULL, extra, (char *const[]){"hello", "--incus", "-rf", NULL});
	ck_assert_int_eq(r.rc, 2);
	ctl_run_dispose(&r);
	r = ctl_run_env(&env, NULL, extra,
	                (char *const[]){"hello", "--incus", "vm1", "--connect", "unix:/x", NULL});
	ck_assert_int_eq(r.rc, 2);
	ctl_run_dispose(&r);
	report = ctl_report(&env);
	ck_assert_uint_eq(ctl_count(report, "hs-ok"), 1);
}
END_TEST

START_TEST(test_usage_errors)
{
	struct ctl_run r;

	r = CTL_RUN(&env, NULL, "frobnicate");
	ck_assert_int_eq(r.rc, 2);
	ck_assert_ptr_nonnull(strstr(ctl_str(&r, "error"), "unknown command"));
	ctl_run_dispose(&r);
	r = CTL_RUN(&env, NULL, "hello", "--connect", "tcp:1.2.3.4:5");
	ck_assert_int_eq(r.rc, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "unknown transport"));
	ctl_run_dispose(&r);
	r = CTL_RUN(&env, NULL, "hello", "--connect", "exec");
	ck_assert_int_eq(r.rc, 2);
	ctl_run_dispose(&r);
	r = CTL_RUN(&env, NULL, "hello", "--connect", "unix:/x", "--timeout", "-1");
	ck_assert_int_eq(r.rc, 2);
	ctl_run_dispose(&r);
	r = CTL_RUN(&env, NULL, "hello", "--connect", "unix:/x", "--instance", "with blank");
	ck_assert_int_eq(r.rc, 2);
	ctl_run_dispose(&r);
	r = CTL_RUN(&env, NULL, "status", "--bogus", "--connect", "unix:/x");
	ck_assert_int_eq(r.rc, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "unknown option --bogus"));
	ctl_run_dispose(&r);
	/* A missing host key says how to make one. */
	r = CTL_RUN(&env, NULL, "hello", "--connect", "unix:/x", "--key", "/nonexistent/key");
	ck_assert_int_eq(r.rc, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "sandbox-ctl keygen"));
	ctl_run_dispose(&r);
	/* Nobody there. */
	r = CTL_RUN(&env, NULL, "hello", "--connect", "unix:/nonexistent.sock");
	ck_assert_int_eq(r.rc, 3);
	ck_assert_str_eq(json_object_get_string(ctl_obj(ctl_obj(r.json, "error"), "reason")),
	                 "unreachable");
	ctl_run_dispose(&r);
}
END_TEST

START_TEST(test_usage_helps)
{
	struct ctl_run r;

	/* "did you mean" for a command, with a stable reason */
	r = CTL_RUN(&env, NULL, "boto");
	ck_assert_int_eq(r.rc, 2);
	ck_assert_str_eq(ctl_last_line(&r), "sandbox-ctl: unknown command 'boto'; did you mean "
	                                    "'boot'? (sandbox-ctl --help)");
	ck_assert_str_eq(json_object_get_string(ctl_obj(ctl_obj(r.json, "error"), "reason")),
	                 "invalid");
	ctl_run_dispose(&r);
	/* an option that is not ours is named as an option, not as a command */
	r = CTL_RUN(&env, NULL, "--json", "hello");
	ck_assert_int_eq(r.rc, 2);
	ck_assert_ptr_nonnull(strstr(ctl_last_line(&r), "unknown option --json (see"));
	ctl_run_dispose(&r);
	r = CTL_RUN(&env, NULL, "--conect=unix:/x", "hello");
	ck_assert_ptr_nonnull(strstr(ctl_last_line(&r), "unknown option --conect; did you mean "
	                                                "--connect?"));
	ctl_run_dispose(&r);
	/* --connect exec -- before the command swallows it: said so */
	r = CTL_RUN(&env, NULL, "--connect", "exec", "--", "incus", "exec", "x", "--",
	            "sandbox-agent", "serve", "--stdio", "status");
	ck_assert_int_eq(r.rc, 2);
	ck_assert_ptr_nonnull(strstr(ctl_last_line(&r), "so 'status' became part of the exec "
	                                                "command; put the command first"));
	ctl_run_dispose(&r);
	/* a command's option values are its own, even when they look like global options */
	r = CTL_RUN(&env, NULL, "publish", "--message", "-q", "--spec", "/nonexistent/spec",
	            "--branch", "b");
	ck_assert_ptr_nonnull(strstr(ctl_last_line(&r), "/nonexistent/spec: No such file"));
	ctl_run_dispose(&r);
	/* per-command help, both ways, on stdout with exit 0 */
	r = CTL_RUN(&env, NULL, "boot", "--help");
	ck_assert_int_eq(r.rc, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "usage: sandbox-ctl [OPTIONS] boot [--app-dir DIR"));
	ck_assert_ptr_nonnull(strstr(r.out, "\n  --wait  "));
	ck_assert_ptr_nonnull(strstr(r.out, "Example:\n  sandbox-ctl --incus sbx-42 boot --wait"));
	ctl_run_dispose(&r);
	r = CTL_RUN(&env, NULL, "help", "logs");
	ck_assert_int_eq(r.rc, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "  --follow "));
	ctl_run_dispose(&r);
	r = CTL_RUN(&env, NULL, "help");
	ck_assert_int_eq(r.rc, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "  help [COMMAND]"));
	ctl_run_dispose(&r);
	r = CTL_RUN(&env, NULL, "help", "stpo");
	ck_assert_int_eq(r.rc, 2);
	ck_assert_ptr_nonnull(strstr(ctl_last_line(&r), "did you mean 'stop'?"));
	ctl_run_dispose(&r);
	/* bash completion */
	r = CTL_RUN(&env, NULL, "completion", "bash");
	ck_assert_int_eq(r.rc, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "complete -F _sandbox_ctl sandbox-ctl\n"));
	ck_assert_ptr_nonnull(strstr(r.out, " --wait"));
	ctl_run_dispose(&r);
	r = CTL_RUN(&env, NULL, "completion", "fish");
	ck_assert_int_eq(r.rc, 2);
	ctl_run_dispose(&r);
}
END_TEST

static Suite *ctl_cli_suite(void)
{
	Suite *s = suite_create("ctl_cli");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_keygen);
	tcase_add_test(tc, test_unix_trust_on_first_use);
	tcase_add_test(tc, test_guest_key_changed);
	tcase_add_test(tc, test_host_key_not_authorized);
	tcase_add_test(tc, test_firecracker_retries);
	tcase_add_test(tc, test_firecracker_default_port_and_bad_replies);
	tcase_add_test(tc, test_serial_sessions_on_one_stream);
	tcase_add_test(tc, test_exec_direct_and_relayed);
	tcase_add_test(tc, test_exec_failures);
	tcase_add_test(tc, test_incus_falls_back_to_exec);
	tcase_add_test(tc, test_usage_errors);
	tcase_add_test(tc, test_usage_helps);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	SRunner *sr;
	int failed;

	/* The same binary serves as the guest and the relay of the exec transport tests. */
	if (argc == 4 && strcmp(argv[1], "--fake-guest-stdio") == 0)
		return fg_stdio_main(argv[2], argv[3]);
	if (argc == 3 && strcmp(argv[1], "--relay") == 0)
		return fg_relay_main(argv[2]);
	signal(SIGPIPE, SIG_IGN);
	sr = srunner_create(ctl_cli_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
