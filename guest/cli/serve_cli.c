/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The command lines of the daemon (`sandbox-agent serve`) and of the guest's key
 * (`sandbox-agent keygen`). Like boot_cli.c, the only places here that choose exit codes and
 * write to the user. docs/daemon.md describes every option.
 */
#include "serve_cli.h"

#include "serve.h"
#include "serve_runner.h"
#include "serve_relay.h"
#include "virt.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "boot_plan.h"
#include "egress_config.h"
#include "keys.h"
#include "log.h"
#include "ready.h"
#include "strv.h"

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: sandbox-agent serve [OPTIONS]\n"
	    "\n"
	    "The daemon sandbox-ctl talks to: an authenticated, encrypted channel\n"
	    "(docs/protocol.md) that pushes trees and secrets, boots the app, and reports.\n"
	    "\n"
	    "Transports (default: --vsock, --unix %s, and --serial %s, waited for until it "
	    "appears; in a container --unix alone, and --vsock and --serial are refused):\n"
	    "  --vsock [PORT]              vsock, any CID, port %u by default\n"
	    "  --vsock-allow-cid CID       the peer CID accepted on vsock (%u, the host)\n"
	    "  --unix PATH                 a unix socket; peers must be root (repeatable)\n"
	    "  --serial PATH               a virtio-serial port, one session at a time\n"
	    "  --stdio                     one session on stdin/stdout: relayed to the daemon\n"
	    "                              running on %s, else served here, then exit\n"
	    "  --one-shot                  with --stdio: never relay, serve the session here\n"
	    "  --daemon-socket PATH        with --stdio: the running daemon's socket (default "
	    "above)\n"
	    "Keys and state:\n"
	    "  --authorized-keys FILE      host keys accepted (%s)\n"
	    "  --authorized-keys-dir DIR   more, one *.pub file each (%s)\n"
	    "  --key FILE                  the guest's key, made at first start (%s)\n"
	    "  --state-dir DIR             the daemon's runtime state (%s)\n"
	    "  --handshake-timeout MS      unauthenticated peers are cut off after this (%d)\n"
	    "  --publish-timeout MS        a publish is stopped after this (%u)\n"
	    "What boots get (as sandbox-app-boot's options):\n"
	    "  --user NAME  --listen ADDR:PORT  --no-forward  --grace MS  --cache-root DIR\n"
	    "Limits of every boot (the smallest of these, the spec's and sandbox.yml's):\n"
	    "  --limit-memory SIZE         memory of a boot's processes (default 4GiB)\n"
	    "  --limit-pids N              processes and threads (default 4096)\n"
	    "  --limit-cpu-weight N        CPU weight, 1-10000 (default 100)\n"
	    "  --limit-disk SIZE           the workspace's disk budget (default 20GiB)\n"
	    "Egress of every boot (the spec's proxy wins over this, this over sandbox.yml's):\n"
	    "  --egress-proxy URL          the app's and agent's users reach loopback and this\n"
	    "                              proxy only (nftables), and get HTTPS_PROXY & co.\n"
	    "  --egress-required           a boot fails when the rules cannot be applied\n"
	    "  -v, --verbose  --help\n",
	    SERVE_DEFAULT_UNIX, SERVE_DEFAULT_SERIAL, SERVE_VSOCK_PORT, SERVE_HOST_CID,
	    SERVE_DEFAULT_UNIX, SERVE_DEFAULT_AUTHKEYS, SERVE_DEFAULT_AUTHKEYS_DIR,
	    SERVE_DEFAULT_KEY, SERVE_DEFAULT_STATE_DIR, 5000, SERVE_PUBLISH_TIMEOUT_MS);
}

static int parse_uint(const char *s, unsigned long max, unsigned long *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	if (!s || !*s || s[0] == '-')
		return -1;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > max)
		return -1;
	*ret = v;
	return 0;
}

static int bad(const char *opt, const char *val, const char *what)
{
	fprintf(stderr, "sandbox-agent serve: %s takes %s, got '%s'\n", opt, what, val ? val : "");
	return 2;
}

/*
 * A limit every boot gets: checked here, then handed to the runners (and so to every boot)
 * as SANDBOX_AGENT_LIMIT_<KEY> in the environment they inherit (limits_config.h).
 */
static int serve_cli_limit(const char *key, const char *value)
{
	struct limits_request r = {0};
	struct err err;

	if (limits_config_set(&r, key, value, &err) < 0) {
		fprintf(stderr, "sandbox-agent serve: --limit-%s: %s\n",
		        strcmp(key, "cpu_weight") ? key : "cpu-weight", err.msg);
		return -1;
	}
	return setenv(limits_config_env_name(key), value, 1);
}

int serve_cli_main(int argc, char **argv)
{
	enum {
		OPT_UNIX = 0x100,
		OPT_VSOCK,
		OPT_VSOCK_CID,
		OPT_SERIAL,
		OPT_STDIO,
		OPT_AUTHKEYS,
		OPT_AUTHKEYS_DIR,
		OPT_KEY,
		OPT_STATE_DIR,
		OPT_HS_TIMEOUT,
		OPT_PUBLISH_TIMEOUT,
		OPT_USER,
		OPT_LISTEN,
		OPT_NO_FORWARD,
		OPT_GRACE,
		OPT_CACHE_ROOT,
		OPT_RUNNER,
		OPT_ONE_SHOT,
		OPT_DAEMON_SOCKET,
		OPT_LIMIT_MEMORY,
		OPT_LIMIT_PIDS,
		OPT_LIMIT_CPU,
		OPT_LIMIT_DISK,
		OPT_EGRESS_PROXY,
		OPT_EGRESS_REQUIRED,
	};
	static const struct option longopts[] = {
	    {"unix", required_argument, NULL, OPT_UNIX},
	    {"vsock", optional_argument, NULL, OPT_VSOCK},
	    {"vsock-allow-cid", required_argument, NULL, OPT_VSOCK_CID},
	    {"serial", required_argument, NULL, OPT_SERIAL},
	    {"stdio", no_argument, NULL, OPT_STDIO},
	    {"one-shot", no_argument, NULL, OPT_ONE_SHOT},
	    {"daemon-socket", required_argument, NULL, OPT_DAEMON_SOCKET},
	    {"authorized-keys", required_argument, NULL, OPT_AUTHKEYS},
	    {"authorized-keys-dir", required_argument, NULL, OPT_AUTHKEYS_DIR},
	    {"key", required_argument, NULL, OPT_KEY},
	    {"state-dir", required_argument, NULL, OPT_STATE_DIR},
	    {"handshake-timeout", required_argument, NULL, OPT_HS_TIMEOUT},
	    {"publish-timeout", required_argument, NULL, OPT_PUBLISH_TIMEOUT},
	    {"user", required_argument, NULL, OPT_USER},
	    {"listen", required_argument, NULL, OPT_LISTEN},
	    {"no-forward", no_argument, NULL, OPT_NO_FORWARD},
	    {"grace", required_argument, NULL, OPT_GRACE},
	    {"cache-root", required_argument, NULL, OPT_CACHE_ROOT},
	    {"runner", no_argument, NULL, OPT_RUNNER},
	    {"limit-memory", required_argument, NULL, OPT_LIMIT_MEMORY},
	    {"limit-pids", required_argument, NULL, OPT_LIMIT_PIDS},
	    {"limit-cpu-weight", required_argument, NULL, OPT_LIMIT_CPU},
	    {"limit-disk", required_argument, NULL, OPT_LIMIT_DISK},
	    {"egress-proxy", required_argument, NULL, OPT_EGRESS_PROXY},
	    {"egress-required", no_argument, NULL, OPT_EGRESS_REQUIRED},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	_cleanup_strv_ char **unix_paths = NULL;
	_cleanup_free_ char *listen_addr = NULL;
	struct serve_config cfg = {
	    .vsock_allow_cid = SERVE_HOST_CID,
	    .authkeys_file = SERVE_DEFAULT_AUTHKEYS,
	    .authkeys_dir = SERVE_DEFAULT_AUTHKEYS_DIR,
	    .key_path = SERVE_DEFAULT_KEY,
	    .state_dir = SERVE_DEFAULT_STATE_DIR,
	    .handshake_timeout_ms = 5000,
	    .publish_timeout_ms = SERVE_PUBLISH_TIMEOUT_MS,
	    .runner = "/proc/self/exe",
	};
	bool transport = false, container, own_daemon = false, one_shot = false;
	const char *daemon_socket = SERVE_DEFAULT_UNIX;
	bool relay_asked = false; /* --daemon-socket given */
	unsigned long v;
	struct err err;
	int c;

	/* A daemon's log is where connections and their keys are accounted for. */
	if (!getenv("SANDBOX_LOG_LEVEL") && log_max_level < LOG_INFO)
		log_max_level = LOG_INFO;
	optind = 1;
	while ((c = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_UNIX:
			if (strv_push(&unix_paths, optarg) < 0)
				return 1;
			transport = true;
			break;
		case OPT_VSOCK: {
			const char *port = optarg;
			/* `--vsock PORT` as well as `--vsock=PORT` */
			if (!port && optind < argc && argv[optind][0] >= '0' &&
			    argv[optind][0] <= '9')
				port = argv[optind++];
			if (port) {
				if (parse_uint(port, 0xfffffffeUL, &v) < 0 || v == 0)
					return bad("--vsock", port, "a port number");
				cfg.vsock_port = (unsigned)v;
			}
			cfg.vsock = true;
			transport = true;
			break;
		}
		case OPT_VSOCK_CID:
			if (parse_uint(optarg, 0xffffffffUL, &v) < 0)
				return bad("--vsock-allow-cid", optarg, "a CID");
			cfg.vsock_allow_cid = (uint32_t)v;
			break;
		case OPT_SERIAL:
			cfg.serial_path = optarg;
			transport = true;
			break;
		case OPT_STDIO:
			cfg.stdio = true;
			transport = true;
			break;
		case OPT_ONE_SHOT:
			one_shot = true;
			break;
		case OPT_DAEMON_SOCKET:
			daemon_socket = optarg;
			relay_asked = true;
			break;
		case OPT_AUTHKEYS:
			cfg.authkeys_file = optarg[0] ? optarg : NULL;
			break;
		case OPT_AUTHKEYS_DIR:
			cfg.authkeys_dir = optarg[0] ? optarg : NULL;
			break;
		case OPT_KEY:
			cfg.key_path = optarg;
			break;
		case OPT_STATE_DIR:
			own_daemon = true;
			cfg.state_dir = optarg;
			break;
		case OPT_HS_TIMEOUT:
			if (parse_uint(optarg, 600000, &v) < 0 || v == 0)
				return bad("--handshake-timeout", optarg, "milliseconds");
			cfg.handshake_timeout_ms = (int)v;
			break;
		case OPT_PUBLISH_TIMEOUT:
			if (parse_uint(optarg, 3600 * 1000, &v) < 0 || v == 0)
				return bad("--publish-timeout", optarg, "milliseconds");
			cfg.publish_timeout_ms = (unsigned)v;
			break;
		case OPT_USER:
			cfg.user = optarg;
			break;
		case OPT_LISTEN: {
			const char *colon = strrchr(optarg, ':');
			if (!colon || colon == optarg || parse_uint(colon + 1, 65535, &v) < 0 ||
			    v == 0)
				return bad("--listen", optarg, "ADDR:PORT");
			free(listen_addr);
			listen_addr = strndup(optarg, (size_t)(colon - optarg));
			if (!listen_addr)
				return 1;
			cfg.listen_addr = listen_addr;
			cfg.listen_port = (unsigned)v;
			break;
		}
		case OPT_NO_FORWARD:
			cfg.no_forward = true;
			break;
		case OPT_GRACE:
			if (parse_uint(optarg, 3600 * 1000, &v) < 0)
				return bad("--grace", optarg, "milliseconds");
			cfg.grace_ms = (unsigned)v;
			break;
		case OPT_CACHE_ROOT:
			cfg.cache_root = optarg;
			break;
		case OPT_RUNNER:
			/* A runner boots (the ready check) or fetches: libcurl first. */
			if (ready_init(&err) < 0) {
				fprintf(stderr, "sandbox-agent serve: %s\n", err.msg);
				return 1;
			}
			return serve_runner_main(3);
		case OPT_LIMIT_MEMORY:
		case OPT_LIMIT_PIDS:
		case OPT_LIMIT_CPU:
		case OPT_LIMIT_DISK:
			if (serve_cli_limit(c == OPT_LIMIT_MEMORY ? "memory"
			                    : c == OPT_LIMIT_PIDS ? "pids"
			                    : c == OPT_LIMIT_CPU  ? "cpu_weight"
			                                          : "disk",
			                    optarg) < 0)
				return 2;
			break;
		case OPT_EGRESS_PROXY: {
			_cleanup_free_ char *host = NULL;
			unsigned port;

			if (egress_config_check_proxy(optarg, &host, &port, &err) < 0) {
				fprintf(stderr, "sandbox-agent serve: --egress-proxy: %s\n",
				        err.msg);
				return 2;
			}
			if (setenv(EGRESS_ENV_PROXY, optarg, 1) < 0)
				return 1;
			break;
		}
		case OPT_EGRESS_REQUIRED:
			if (setenv(EGRESS_ENV_REQUIRED, "1", 1) < 0)
				return 1;
			break;
		case 'v':
			log_max_level = LOG_DEBUG;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "sandbox-agent serve: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (cfg.stdio && (unix_paths || cfg.vsock || cfg.serial_path)) {
		fprintf(stderr, "sandbox-agent serve: --stdio serves one session alone; drop the "
		                "other transports\n");
		return 2;
	}
	container = virt_in_container("/");
	if (container && (cfg.vsock || cfg.serial_path)) {
		fprintf(
		    stderr,
		    "sandbox-agent serve: refusing --%s in a container: there vsock reaches the "
		    "machine's own kernel, not a host, and there is no virtio-serial port; serve "
		    "--unix PATH (through an Incus proxy device) or --stdio (exec pipes)\n",
		    cfg.vsock ? "vsock" : "serial");
		return 2;
	}
	if (!transport) {
		if (strv_push(&unix_paths, SERVE_DEFAULT_UNIX) < 0)
			return 1;
		if (container) {
			log_info("in a container: serving %s and exec pipes only",
			         SERVE_DEFAULT_UNIX);
		} else {
			cfg.vsock = true;
			/* The port may appear after we start (udev makes its link): wait for it. */
			cfg.serial_path = SERVE_DEFAULT_SERIAL;
			cfg.serial_wait = true;
		}
	}
	cfg.unix_paths = unix_paths;
	err_clear(&err);
	/*
	 * An exec pipe reaches the guest's one daemon where it runs; a daemon of the session's
	 * own (it ends with the session, and so does what was put into it) only where none does,
	 * or when asked: --one-shot, or a --state-dir of its own without --daemon-socket.
	 */
	if (cfg.stdio && !one_shot && (!own_daemon || relay_asked)) {
		_cleanup_close_ int sock = -1;
		int r = serve_relay_connect(daemon_socket, &sock, &err);
		if (r < 0) {
			fprintf(stderr, "sandbox-agent serve: %s\n", err.msg);
			return 1;
		}
		if (r > 0) {
			if (serve_relay_run(sock, 0, 1, &err) < 0) {
				fprintf(stderr, "sandbox-agent serve: %s\n", err.msg);
				return 1;
			}
			return 0;
		}
		log_info("no daemon answers on %s: this session gets a daemon of its own, and "
		         "what it keeps (secrets) ends with it",
		         daemon_socket);
	}
	cfg.one_shot = cfg.stdio;
	/*
	 * libsodium only: libgit2 (with its wiping allocator) is set up by checkout.pack for the
	 * pack it takes in, libcurl by verify and by the runners, so an idle daemon carries
	 * neither (docs/daemon.md, "Memory").
	 */
	if (keys_sodium_init(&err) < 0) {
		fprintf(stderr, "sandbox-agent serve: %s\n", err.msg);
		return 1;
	}
	int r = serve_run(&cfg, &err);
	if (r < 0) {
		fprintf(stderr, "sandbox-agent serve: %s\n", err.msg);
		return err.cls == ERR_REFUSED ? 2 : 1;
	}
	return 0;
}

int serve_cli_keygen_main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"key", required_argument, NULL, 'k'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	_cleanup_keypair_ struct keypair *kp = NULL;
	_cleanup_free_ char *line = NULL;
	const char *path = SERVE_DEFAULT_KEY;
	bool created = false;
	struct err err;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'k':
			path = optarg;
			break;
		case 'h':
			printf("usage: sandbox-agent keygen [--key FILE]\n"
			       "Prints the guest's public key (made first when there is none; "
			       "default %s)\n",
			       SERVE_DEFAULT_KEY);
			return 0;
		default:
			return 2;
		}
	}
	err_clear(&err);
	if (keys_sodium_init(&err) < 0 || serve_key_load_or_create(path, &kp, &created, &err) < 0) {
		fprintf(stderr, "sandbox-agent keygen: %s\n", err.msg);
		return 1;
	}
	line = keys_format_public(kp->pk, kp->comment);
	if (!line)
		return 1;
	if (created)
		fprintf(stderr, "sandbox-agent keygen: made a new key in %s\n", path);
	printf("%s\n", line);
	return 0;
}
