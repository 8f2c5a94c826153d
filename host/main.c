/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sandbox-ctl: the host companion a controller calls (docs/sandbox-ctl.md). It connects to
 * sandbox-agent serve over any transport, authenticates, runs one command and prints one JSON
 * document on stdout; progress goes to stderr, and the exit code says what happened:
 * 0 ok, 1 the operation failed, 2 usage or refused, 3 connection or authentication failure,
 * 4 the guest's key is not the pinned one.
 */
#include <errno.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cmd.h"
#include "cmd_help.h"
#include "log.h"

#define DEFAULT_TIMEOUT_MS 30000
#define MAX_TIMEOUT_MS (24LL * 3600 * 1000)

static const char usage_text[] =
    "usage: sandbox-ctl keygen [--out PATH] [--comment TEXT] [--force]\n"
    "       sandbox-ctl [OPTIONS] COMMAND [ARGS]\n"
    "\n"
    "Commands:\n"
    "  hello                                  the agent's version, capabilities and key\n"
    "  secrets put --scope fetch|boot|session NAME...\n"
    "                                         values from stdin: {\"NAME\": \"value\", ...}\n"
    "  secrets drop NAME... | --scope SCOPE\n"
    "  push DIR [--app-dir DIR] [--include-git]\n"
    "  boot [--app-dir DIR | --spec FILE] [--from STEP] [--restart] [--pass-env NAME]\n"
    "       [--with-token] [--wait] [--deadline S]\n"
    "  status [--app-dir DIR]\n"
    "  logs --log NAME [--app-dir DIR] [--offset N] [--max N] [--follow] [--raw] [--timestamps]\n"
    "  stop [--app-dir DIR] [--discard] [--grace S]\n"
    "  runtime [--app-dir DIR]\n"
    "  checkout --spec FILE|- [--app-dir DIR] [--guest-fetch]\n"
    "  publish --spec FILE|- --branch NAME [--app-dir DIR] [--author \"Name <email>\"]\n"
    "          [--message M] [--pull-request [--title T] [--body-file F] [--base B] [--draft]]\n"
    "  github-token --app-id N --private-key FILE --installation N --repository OWNER/NAME\n"
    "          [--permissions contents:read,...] [--api-url URL] [--clone-url URL] [--ref REF]\n"
    "  session start|send|approve|deny|cancel|events|diff|list   a Claude Code session\n"
    "  help [COMMAND]                         a command's options and an example\n"
    "                                         (also: sandbox-ctl COMMAND --help)\n"
    "  completion bash                        a bash completion script\n"
    "\n"
    "Options (before or after the command):\n"
    "  --connect ADDR          vsock:CID[:PORT] | unix:PATH | serial:PATH | fc:PATH[:PORT]\n"
    "  --connect exec -- CMD ARGS...   (takes the rest of the line: put it last)\n"
    "  --incus NAME            the instance's vsock CID, else `incus exec NAME -- ...`\n"
    "  --key PATH              host key (~/.config/sandbox-ctl/key)\n"
    "  --known-guests PATH     pinned guest keys (~/.config/sandbox-ctl/known_guests)\n"
    "  --instance NAME         the name the guest's key is pinned under\n"
    "  --accept-new-guest-key  pin the key of an instance seen for the first time\n"
    "  --replace-guest-key     accept and pin a changed guest key\n"
    "  --timeout S             connecting, the handshake, each reply (30)\n"
    "  -q, --quiet / -v, --verbose\n"
    "  --version, --help\n"
    "\n"
    "Exit: 0 ok, 1 failed, 2 usage or refused, 3 connection or authentication failure,\n"
    "4 the guest's key changed.\n";

/* $XDG_CONFIG_HOME/sandbox-ctl/NAME, else ~/.config/sandbox-ctl/NAME. */
static char *config_path(const char *name)
{
	const char *xdg = getenv("XDG_CONFIG_HOME");
	const char *home = getenv("HOME");
	char *s;

	if (xdg && xdg[0] == '/') {
		if (asprintf(&s, "%s/sandbox-ctl/%s", xdg, name) < 0)
			return NULL;
		return s;
	}
	if (!home || home[0] != '/') {
		struct passwd *pw = getpwuid(getuid());
		home = pw ? pw->pw_dir : "/";
	}
	if (asprintf(&s, "%s/.config/sandbox-ctl/%s", home, name) < 0)
		return NULL;
	return s;
}

/* The value of option argv[*i] ("--opt VALUE" or "--opt=VALUE"); NULL when missing. */
static const char *option_value(int argc, char **argv, int *i, const char *name)
{
	size_t n = strlen(name);

	if (argv[*i][n] == '=')
		return argv[*i] + n + 1;
	if (*i + 1 >= argc)
		return NULL;
	return argv[++*i];
}

static bool is_option(const char *arg, const char *name)
{
	size_t n = strlen(name);

	return strncmp(arg, name, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
}

/*
 * Take the global options out of argv, wherever they are; what is left (the command and its
 * words) goes to cmd_argv. Returns 0, -1 after --help or --version, or an exit code.
 */
static int parse_globals(struct ctl *ctl, int argc, char **argv, char ***ret_cmd_argv,
                         int *ret_cmd_argc, char **ret_key, char **ret_pins)
{
	static const char *const with_value[] = {
	    "--connect", "--incus", "--key", "--known-guests", "--instance", "--timeout",
	};
	char **cmd_argv = calloc((size_t)argc + 1, sizeof(char *));
	const struct cmd_info *cmd = NULL;
	const char *connect = NULL;
	char **exec_argv = NULL;
	int n = 0;

	if (!cmd_argv) {
		err_oom(&ctl->err);
		return CTL_EXIT_FAILED;
	}
	*ret_cmd_argv = cmd_argv;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = NULL;
		const char *opt = NULL;

		/* A value of the command's own options is never taken for a global option. */
		if (cmd && cmd_help_takes_value(cmd, a) && i + 1 < argc) {
			cmd_argv[n++] = argv[i++];
			cmd_argv[n++] = argv[i];
			continue;
		}
		for (size_t k = 0; k < ELEMENTSOF(with_value); k++)
			if (is_option(a, with_value[k]))
				opt = with_value[k];
		if (opt) {
			v = option_value(argc, argv, &i, opt);
			if (!v) {
				err_set(&ctl->err, ERR_REFUSED, EINVAL, "%s needs a value", opt);
				return CTL_EXIT_REFUSED;
			}
			if (strcmp(opt, "--connect") == 0) {
				connect = v;
				if (strcmp(v, "exec") == 0) {
					if (i + 1 >= argc || strcmp(argv[i + 1], "--") != 0) {
						err_set(&ctl->err, ERR_REFUSED, EINVAL,
						        "--connect exec needs -- and the command: "
						        "--connect exec -- CMD ARGS...");
						return CTL_EXIT_REFUSED;
					}
					exec_argv = argv + i + 2;
					break;
				}
			} else if (strcmp(opt, "--incus") == 0) {
				ctl->so.incus = v;
			} else if (strcmp(opt, "--key") == 0) {
				free(*ret_key);
				*ret_key = strdup(v);
			} else if (strcmp(opt, "--known-guests") == 0) {
				free(*ret_pins);
				*ret_pins = strdup(v);
			} else if (strcmp(opt, "--instance") == 0) {
				ctl->so.instance = v;
			} else {
				int64_t ms;
				if (cmd_parse_seconds(v, MAX_TIMEOUT_MS, &ms) < 0) {
					err_set(&ctl->err, ERR_REFUSED, EINVAL,
					        "--timeout wants seconds above 0, not '%s'", v);
					return CTL_EXIT_REFUSED;
				}
				ctl->so.timeout_ms = (int)ms;
			}
		} else if (strcmp(a, "--accept-new-guest-key") == 0) {
			ctl->so.accept_new = true;
		} else if (strcmp(a, "--replace-guest-key") == 0) {
			ctl->so.replace = true;
		} else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
			ctl->out.level = OUTPUT_QUIET;
		} else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
			ctl->out.level = OUTPUT_VERBOSE;
		} else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			if (cmd)
				cmd_help_print(stdout, cmd);
			else
				fputs(usage_text, stdout);
			return -1;
		} else if (n == 0 && strcmp(a, "--version") == 0) {
			printf("sandbox-ctl %s\n", SA_VERSION);
			return -1;
		} else {
			if (n == 0)
				cmd = cmd_help_find(argv[i]);
			cmd_argv[n++] = argv[i];
		}
	}
	if (n == 0 && exec_argv) {
		/* --connect exec -- takes the rest of the line: was the command part of it? */
		for (char **w = exec_argv; *w; w++)
			if (cmd_help_find(*w)) {
				err_set(&ctl->err, ERR_REFUSED, EINVAL,
				        "no command given: --connect exec -- takes the rest of the "
				        "line, so '%s' became part of the exec command; put the "
				        "command first: sandbox-ctl %s ... --connect exec -- CMD "
				        "ARGS...",
				        *w, *w);
				return CTL_EXIT_REFUSED;
			}
	}
	if (connect) {
		if (ctl->so.incus) {
			err_set(&ctl->err, ERR_REFUSED, EINVAL,
			        "give --connect or --incus, not both");
			return CTL_EXIT_REFUSED;
		}
		if (connect_addr_parse(connect, exec_argv, &ctl->addr, &ctl->err) < 0)
			return CTL_EXIT_REFUSED;
		ctl->so.addr = &ctl->addr;
	}
	*ret_cmd_argc = n;
	return 0;
}

static int run(struct ctl *ctl, int argc, char **argv, char **key, char **pins)
{
	_cleanup_free_ char **cmd_argv = NULL;
	const struct cmd_info *cmd;
	const char *near;
	int cmd_argc = 0, r;

	r = parse_globals(ctl, argc, argv, &cmd_argv, &cmd_argc, key, pins);
	if (r != 0)
		return r;
	if (!*key)
		*key = config_path("key");
	if (!*pins)
		*pins = config_path("known_guests");
	if (!*key || !*pins) {
		err_oom(&ctl->err);
		return CTL_EXIT_FAILED;
	}
	ctl->so.key_path = *key;
	ctl->so.pins_path = *pins;
	if (cmd_argc == 0) {
		err_set(&ctl->err, ERR_REFUSED, EINVAL, "no command given (sandbox-ctl --help)");
		return CTL_EXIT_REFUSED;
	}
	cmd = cmd_help_find(cmd_argv[0]);
	if (cmd) {
		if (!cmd->connects && ctl->so.addr) {
			err_set(&ctl->err, ERR_REFUSED, EINVAL, "%s does not connect", cmd->name);
			return CTL_EXIT_REFUSED;
		}
		r = cmd->fn(ctl, cmd_argc, cmd_argv);
		if (r < 0 && strcmp(cmd->name, "help") == 0 && cmd_argc < 2)
			fputs(usage_text, stdout);
		return r;
	}
	if (cmd_argv[0][0] == '-') {
		/* Not a command: an option that is not one of ours (global or the command's). */
		char word[64];
		snprintf(word, sizeof(word), "%s", cmd_argv[0]);
		word[strcspn(word, "=")] = '\0';
		near = cmd_help_suggest_option(word);
		err_set(&ctl->err, ERR_REFUSED, EINVAL,
		        "unknown option %s%s%s%s (see sandbox-ctl --help; a command's own options "
		        "come after it)",
		        word, near ? "; did you mean " : "", near ? near : "", near ? "?" : "");
		return CTL_EXIT_REFUSED;
	}
	near = cmd_help_suggest(cmd_argv[0]);
	err_set(&ctl->err, ERR_REFUSED, EINVAL, "unknown command '%s'%s%s%s (sandbox-ctl --help)",
	        cmd_argv[0], near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
	return CTL_EXIT_REFUSED;
}

int main(int argc, char **argv)
{
	_cleanup_free_ char *key = NULL, *pins = NULL;
	struct rlimit no_core = {0, 0};
	struct ctl ctl = {0};
	int r;

	log_setup("sandbox-ctl");
	/* The host key and secrets pass through this process: no core dumps, no ptrace peers. */
	prctl(PR_SET_DUMPABLE, 0);
	setrlimit(RLIMIT_CORE, &no_core);
	signal(SIGPIPE, SIG_IGN);
	output_init(&ctl.out, stdout, stderr, OUTPUT_NORMAL);
	ctl.so.timeout_ms = DEFAULT_TIMEOUT_MS;
	ctl.so.out = &ctl.out;
	ctl.so.incus_cmd = getenv("SANDBOX_CTL_INCUS");
	if (!ctl.so.incus_cmd || !ctl.so.incus_cmd[0])
		ctl.so.incus_cmd = "incus";

	r = run(&ctl, argc, argv, &key, &pins);
	if (r < 0) /* --help, --version */
		r = 0;
	else if (r != 0) {
		if (!ctl.result) {
			struct json_object *inner;
			ctl.result = output_error_doc(&ctl.err);
			if (ctl.result && json_object_object_get_ex(ctl.result, "error", &inner))
				json_object_object_add(
				    inner, "reason",
				    json_object_new_string(cmd_reason_of(r, &ctl.err)));
		}
		if (ctl.result)
			output_json(&ctl.out, ctl.result);
		output_error(&ctl.out, &ctl.err);
	} else if (ctl.result) {
		output_json(&ctl.out, ctl.result);
	}
	json_object_put(ctl.result);
	connect_addr_dispose(&ctl.addr);
	return r;
}
