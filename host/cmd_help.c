/* SPDX-License-Identifier: Apache-2.0 */
#include "cmd_help.h"

#include <errno.h>
#include <string.h>

#include "suggest.h"

#define APP_DIR_OPT "  --app-dir DIR        the app directory in the guest (/workspace/app)\n"

static const char *const app_dir_only[] = {"--app-dir", NULL};

const struct cmd_info cmd_help_commands[] = {
    {
        .name = "keygen",
        .fn = cmd_keygen,
        .connects = false,
        .synopsis = "keygen [--out PATH] [--comment TEXT] [--force]",
        .summary = "make the host's key (Ed25519); its .pub line goes into the guest",
        .options = "  --out PATH           where (default: --key, ~/.config/sandbox-ctl/key)\n"
                   "  --comment TEXT       the comment of the public line\n"
                   "  --force              replace an existing key\n",
        .example = "sandbox-ctl keygen --comment ci-host",
        .value_options = (const char *const[]){"--out", "--comment", NULL},
        .flag_options = (const char *const[]){"--force", NULL},
    },
    {
        .name = "hello",
        .fn = cmd_hello,
        .connects = true,
        .synopsis = "hello",
        .summary = "the agent's version, capabilities and key (pins it with "
                   "--accept-new-guest-key)",
        .example = "sandbox-ctl --incus sbx-42 --accept-new-guest-key hello",
    },
    {
        .name = "secrets",
        .fn = cmd_secrets,
        .connects = true,
        .synopsis = "secrets put --scope fetch|boot|session NAME... < values.json\n"
                    "       sandbox-ctl secrets drop NAME... | --scope SCOPE",
        .summary = "put secrets (values from stdin only, as one JSON object) or drop them",
        .options = "  --scope SCOPE        fetch (checkout, publish), boot (setup, manifest,\n"
                   "                       server) or session (a coding agent)\n",
        .example = "printf '{\"API_KEY\": \"%s\"}' \"$KEY\" | sandbox-ctl --incus sbx-42 secrets "
                   "put --scope boot API_KEY",
        .value_options = (const char *const[]){"--scope", NULL},
    },
    {
        .name = "push",
        .fn = cmd_push,
        .connects = true,
        .synopsis = "push DIR [--app-dir DIR] [--include-git]",
        .summary = "send a directory tree; the agent swaps it in as the app directory",
        .options = APP_DIR_OPT "  --include-git        send .git too (it may hold credentials)\n",
        .example = "sandbox-ctl --incus sbx-42 push ./checkout",
        .value_options = app_dir_only,
        .flag_options = (const char *const[]){"--include-git", NULL},
    },
    {
        .name = "boot",
        .fn = cmd_boot,
        .connects = true,
        .synopsis = "boot [--app-dir DIR | --spec FILE] [--checkout FILE|-] [--from STEP] "
                    "[--restart]\n"
                    "            [--pass-env NAME] [--with-token] [--wait] [--deadline S]",
        .summary = "boot the app in the agent; with --wait, until ready or failed",
        .options = APP_DIR_OPT
        "  --spec FILE          a spec file (the spec shape; it names its app_dir)\n"
        "  --checkout FILE|-    first check out this checkout spec's commit, as\n"
        "                       `checkout --spec` does, in the same session\n"
        "  --from STEP          resume a failed boot at STEP\n"
        "  --restart            run manifest and start again (a changed checkout)\n"
        "  --pass-env NAME      only these boot secrets reach the boot (repeatable)\n"
        "  --with-token         the MCP token in the result's runtime\n"
        "  --wait               wait for the result: exit 0 ready, 1 failed, 2 refused\n"
        "  --deadline S         the boot's deadline in the agent (600)\n",
        .example = "sandbox-ctl --incus sbx-42 boot --wait --deadline 300 > result.json",
        .value_options = (const char *const[]){"--app-dir", "--spec", "--checkout", "--from",
                                               "--pass-env", "--deadline", NULL},
        .flag_options = (const char *const[]){"--restart", "--with-token", "--wait", NULL},
    },
    {
        .name = "status",
        .fn = cmd_status,
        .connects = true,
        .synopsis = "status [--app-dir DIR]",
        .summary = "the boot's state, phase, reason and log sizes",
        .options = APP_DIR_OPT,
        .example = "sandbox-ctl --incus sbx-42 status",
        .value_options = app_dir_only,
    },
    {
        .name = "logs",
        .fn = cmd_logs,
        .connects = true,
        .synopsis = "logs --log NAME [--app-dir DIR] [--offset N | --tail N] [--max N] [--follow] "
                    "[--raw] [--timestamps]",
        .summary = "a boot's log (setup, manifest, server, or a spec step) from a byte offset",
        .options = "  --log NAME           which log\n" APP_DIR_OPT
                   "  --offset N           from this byte (the last next_offset)\n"
                   "  --tail N             from the start of the last N lines (at most 10000)\n"
                   "  --max N              at most N bytes\n"
                   "  --follow             keep reading as bytes arrive (JSON Lines)\n"
                   "  --raw                the bytes on stdout, not JSON\n"
                   "  --timestamps         when each line was written (\"times\"; with --raw,\n"
                   "                       before each line)\n",
        .example = "sandbox-ctl --incus sbx-42 logs --log server --tail 50 --follow",
        .value_options =
            (const char *const[]){"--log", "--app-dir", "--offset", "--tail", "--max", NULL},
        .flag_options = (const char *const[]){"--follow", "--raw", "--timestamps", NULL},
    },
    {
        .name = "stop",
        .fn = cmd_stop,
        .connects = true,
        .synopsis = "stop [--app-dir DIR] [--discard] [--grace S]",
        .summary = "stop every process of the boot; keep the files",
        .options = APP_DIR_OPT "  --discard            also drop the databases and the workspace\n"
                               "  --grace S            seconds between TERM and KILL\n",
        .example = "sandbox-ctl --incus sbx-42 stop --discard",
        .value_options = (const char *const[]){"--app-dir", "--grace", NULL},
        .flag_options = (const char *const[]){"--discard", NULL},
    },
    {
        .name = "runtime",
        .fn = cmd_runtime,
        .connects = true,
        .synopsis = "runtime [--app-dir DIR]",
        .summary = "runtime.json as the agent holds it, MCP token included",
        .options = APP_DIR_OPT,
        .example = "sandbox-ctl --incus sbx-42 runtime",
        .value_options = app_dir_only,
    },
    {
        .name = "checkout",
        .fn = cmd_checkout,
        .connects = true,
        .synopsis = "checkout --spec FILE|- [--app-dir DIR] [--guest-fetch]",
        .summary = "check a commit out into the app directory, the token never in argv or a file",
        .options = "  --spec FILE|-        {repository, ref, clone_url, username, token} "
                   "(0600)\n" APP_DIR_OPT
                   "  --guest-fetch        the guest fetches (the token as a fetch secret)\n",
        .example = "sandbox-ctl --incus sbx-42 checkout --spec - < spec.json",
        .value_options = (const char *const[]){"--spec", "--app-dir", NULL},
        .flag_options = (const char *const[]){"--guest-fetch", NULL},
    },
    {
        .name = "publish",
        .fn = cmd_publish,
        .connects = true,
        .synopsis = "publish --spec FILE|- --branch NAME [--app-dir DIR] [--author \"Name "
                    "<email>\"]\n"
                    "            [--message M] [--pull-request [--title T] [--body-file F] "
                    "[--base BRANCH] [--draft]]",
        .summary = "commit the app's changes in the guest and push them to a new branch",
        .options = "  --spec FILE|-        the checkout's spec (where to push, the token)\n"
                   "  --branch NAME        the new branch\n" APP_DIR_OPT
                   "  --author \"N <e>\"     the commit's author\n"
                   "  --message M          the commit's message\n"
                   "  --pull-request       then open a pull request from the branch (the\n"
                   "                       spec's repository and api_url; docs/forge.md)\n"
                   "  --title T            its title (the message's first line)\n"
                   "  --body-file F        its description, from a file\n"
                   "  --base BRANCH        its base (the spec's branch, else the default)\n"
                   "  --draft              open it as a draft\n",
        .example = "sandbox-ctl --incus sbx-42 publish --spec - --branch agent/work --pull-request "
                   "< spec.json",
        .value_options =
            (const char *const[]){"--spec", "--branch", "--app-dir", "--author", "--message",
                                  "--title", "--body-file", "--base", NULL},
        .flag_options = (const char *const[]){"--pull-request", "--draft", NULL},
    },
    {
        .name = "github-token",
        .fn = cmd_github_token,
        .connects = false,
        .synopsis = "github-token --app-id N --private-key FILE --installation N "
                    "--repository OWNER/NAME\n"
                    "            [--permissions contents:read,...] [--api-url URL] "
                    "[--clone-url URL] [--ref REF]",
        .summary = "a GitHub App's installation token for one repository, about an hour, "
                   "printed as a checkout spec",
        .options = "  --app-id N           the app's id (or client id): the JWT's issuer\n"
                   "  --private-key FILE   the app's PEM key (0600; never echoed)\n"
                   "  --installation N     the installation's number\n"
                   "  --repository O/N     the one repository the token covers\n"
                   "  --permissions LIST   NAME:read|write,... (contents:read); publish:\n"
                   "                       contents:write,pull_requests:write\n"
                   "  --api-url URL        the REST API (https://api.github.com)\n"
                   "  --clone-url URL      the spec's clone URL (from the API URL)\n"
                   "  --ref REF            the spec's ref\n",
        .example = "sandbox-ctl github-token --app-id 12345 --private-key app.pem "
                   "--installation 678 \\\n"
                   "      --repository acme/shop | sandbox-ctl --incus sbx-42 checkout --spec -",
        .value_options =
            (const char *const[]){"--app-id", "--private-key", "--installation", "--repository",
                                  "--permissions", "--api-url", "--clone-url", "--ref", NULL},
    },
    {
        .name = "egress",
        .fn = cmd_egress,
        .connects = false,
        .synopsis = "egress --proxy ADDR:PORT --controller ADDR [--allow HOST:PORT]... "
                    "[--out DIR]\n"
                    "            [--allow-file FILE] [--no-default-allow] [--deny CIDR]... "
                    "[--no-host-networks]\n"
                    "            [--app-port N] [--hosts-file FILE] [--acl NAME] [--device NIC | "
                    "--network NET]",
        .summary = "the instance's network ACL and proxy allowlist; applied with --incus NAME",
        .options =
            "  --proxy ADDR:PORT    where the allowlisting proxy listens (the only egress)\n"
            "  --controller ADDR    the only address that may reach the runtime's port\n"
            "  --allow HOST:PORT    an allowed destination (repeatable; .example.com: "
            "subdomains too)\n"
            "  --allow-file FILE    one HOST:PORT a line\n"
            "  --no-default-allow   without the model API and GitHub defaults\n"
            "  --deny CIDR          one more refused range (repeatable)\n"
            "  --no-host-networks   do not refuse this host's own networks\n"
            "  --app-port N         the runtime's port (8080)\n"
            "  --out DIR            write acl.json, squid.conf, errors/ (the 403 page) there\n"
            "  --hosts-file FILE    the proxy's hosts file (squid hosts_file)\n"
            "  --acl NAME           the ACL's name (sandbox-egress-INSTANCE)\n"
            "  --device NIC         the instance's NIC (eth0)\n"
            "  --network NET        attach to this bridge network instead of the NIC\n",
        .example = "sandbox-ctl --incus sbx-42 egress --proxy 10.0.3.1:3128 --controller "
                   "10.0.3.1 --allow rubygems.org:443 --out /var/lib/sandbox-ctl/egress/sbx-42",
        .value_options =
            (const char *const[]){"--proxy", "--controller", "--allow", "--allow-file", "--deny",
                                  "--app-port", "--out", "--hosts-file", "--acl", "--device", NULL},
        .flag_options = (const char *const[]){"--no-default-allow", "--no-host-networks", NULL},
    },
    {
        .name = "verify",
        .fn = cmd_verify,
        .connects = true,
        .synopsis = "verify --proxy URL --allowed URL [--forbidden URL]... [--host-file DIR]",
        .summary = "prove the confinement: four checks, recorded in the guest",
        .options = "  --proxy URL          the allowlisting proxy as the guest reaches it\n"
                   "  --allowed URL        an allowed endpoint that must answer through it\n"
                   "  --forbidden URL      a destination that must be refused, directly and "
                   "through\n"
                   "                       the proxy (repeatable; the metadata addresses are "
                   "always tried)\n"
                   "  --host-file DIR      where the host's token file is made (/tmp)\n",
        .example = "sandbox-ctl --incus sbx-42 verify --proxy http://10.0.3.1:3128 --allowed "
                   "https://api.anthropic.com/",
        .value_options =
            (const char *const[]){"--proxy", "--allowed", "--forbidden", "--host-file", NULL},
    },
    {
        .name = "session",
        .fn = cmd_session,
        .connects = true,
        .synopsis = "session start|send|approve|deny|cancel|events|diff|list [--id ID] ...",
        .summary = "a long-lived Claude Code session in the guest, its approvals and events",
        .options = "  --id ID              the session (what start answered)\n"
                   "  --prompt-file F|-    the prompt or turn (start, send; default stdin)\n"
                   "  --model M, --max-turns N, --credential NAME, --session-timeout S\n"
                   "  --permission-mode ask|accept_edits|skip   (start; default ask)\n"
                   "  --approval-timeout S an unanswered tool call is denied after S (300)\n"
                   "  --dangerously-no-sandbox   recorded in the session's status (start)\n"
                   "  --env NAME=VALUE     the CLI's environment (start; not for secrets)\n"
                   "  --request RID        the control_request to approve or deny\n"
                   "  --message M, --interrupt   deny: the reason; end the turn\n"
                   "  --from OFFSET        events from this byte offset (0)\n"
                   "  --follow             events as JSON lines until the session ends\n"
                   "  --approve TOOL       while following, allow TOOL (repeatable; * any)\n"
                   "  --deny-all           while following, deny every tool call\n",
        .example = "sandbox-ctl --incus sbx-42 session start --follow --approve Write < prompt.txt",
        .value_options =
            (const char *const[]){"--id", "--prompt-file", "--model", "--max-turns",
                                  "--permission-mode", "--credential",
                                  "--approval-timeout", "--session-timeout", "--request",
                                  "--message", "--from", "--approve", NULL},
        .flag_options = (const char *const[]){"--dangerously-no-sandbox", "--follow", "--deny-all",
                                              "--interrupt", NULL},
    },
    {
        .name = "help",
        .fn = cmd_help,
        .connects = false,
        .synopsis = "help [COMMAND]",
        .summary = "these texts (also: sandbox-ctl COMMAND --help)",
        .example = "sandbox-ctl help boot",
    },
    {
        .name = "completion",
        .fn = cmd_help_completion,
        .connects = false,
        .synopsis = "completion bash",
        .summary = "a bash completion script on stdout",
        .example = "sandbox-ctl completion bash > /etc/bash_completion.d/sandbox-ctl",
    },
};

const size_t cmd_help_n_commands = ELEMENTSOF(cmd_help_commands);

const char *const cmd_help_global_value_options[] = {
    "--connect", "--incus", "--key", "--known-guests", "--instance", "--timeout", NULL,
};
const char *const cmd_help_global_flag_options[] = {
    "--accept-new-guest-key",
    "--replace-guest-key",
    "--quiet",
    "--verbose",
    "--version",
    "--help",
    NULL,
};

const struct cmd_info *cmd_help_find(const char *name)
{
	for (size_t i = 0; i < cmd_help_n_commands; i++)
		if (strcmp(cmd_help_commands[i].name, name) == 0)
			return &cmd_help_commands[i];
	return NULL;
}

const char *cmd_help_suggest(const char *word)
{
	const char *names[ELEMENTSOF(cmd_help_commands) + 1];

	for (size_t i = 0; i < cmd_help_n_commands; i++)
		names[i] = cmd_help_commands[i].name;
	names[cmd_help_n_commands] = NULL;
	return suggest_closest(word, names);
}

const char *cmd_help_suggest_option(const char *word)
{
	const char *v = suggest_closest(word, cmd_help_global_value_options);

	return v ? v : suggest_closest(word, cmd_help_global_flag_options);
}

bool cmd_help_takes_value(const struct cmd_info *c, const char *arg)
{
	for (size_t i = 0; c && c->value_options && c->value_options[i]; i++)
		if (strcmp(arg, c->value_options[i]) == 0)
			return true;
	return false;
}

void cmd_help_print(FILE *f, const struct cmd_info *c)
{
	fprintf(f, "usage: sandbox-ctl %s%s\n\n%s.\n", c->connects ? "[OPTIONS] " : "", c->synopsis,
	        c->summary);
	if (c->options)
		fprintf(f, "\nOptions:\n%s", c->options);
	if (c->connects)
		fputs("\nOPTIONS are the global ones (--connect ADDR, --incus NAME, --timeout S, "
		      "...:\n"
		      "sandbox-ctl --help).\n",
		      f);
	fprintf(f, "\nExample:\n  %s\n", c->example);
}

int cmd_help(struct ctl *ctl, int argc, char **argv)
{
	const struct cmd_info *c;

	if (argc < 2)
		return -1; /* main prints the general text */
	if (argc > 2)
		return cmd_usage(ctl, "help [COMMAND]", "unexpected argument '%s'", argv[2]);
	c = cmd_help_find(argv[1]);
	if (!c) {
		const char *near = cmd_help_suggest(argv[1]);
		err_set(&ctl->err, ERR_REFUSED, EINVAL,
		        "unknown command '%s'%s%s%s (sandbox-ctl --help)", argv[1],
		        near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
		return CTL_EXIT_REFUSED;
	}
	cmd_help_print(stdout, c);
	return -1;
}

static void print_words(const char *const *v)
{
	for (size_t i = 0; v && v[i]; i++)
		printf(" %s", v[i]);
}

int cmd_help_completion(struct ctl *ctl, int argc, char **argv)
{
	if (argc != 2 || strcmp(argv[1], "bash") != 0)
		return cmd_usage(ctl, "completion bash", "only bash is supported");
	printf("# bash completion for sandbox-ctl (sandbox-ctl completion bash)\n"
	       "_sandbox_ctl() {\n"
	       "\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} cmd= w\n"
	       "\tlocal globals_value='");
	for (size_t i = 0; cmd_help_global_value_options[i]; i++)
		printf("%s%s", i ? " " : "", cmd_help_global_value_options[i]);
	printf("'\n\tlocal globals='");
	for (size_t i = 0; cmd_help_global_flag_options[i]; i++)
		printf("%s%s", i ? " " : "", cmd_help_global_flag_options[i]);
	printf(" $globals_value'\n\tlocal commands='");
	for (size_t i = 0; i < cmd_help_n_commands; i++)
		printf("%s%s", i ? " " : "", cmd_help_commands[i].name);
	printf(
	    "'\n"
	    "\tfor w in \"${COMP_WORDS[@]:1:COMP_CWORD-1}\"; do\n"
	    "\t\tcase \" $commands \" in *\" $w \"*) cmd=$w; break ;; esac\n"
	    "\tdone\n"
	    "\tcase $prev in\n"
	    "\t--key | --known-guests | --out | --spec | --body-file | --private-key)\n"
	    "\t\tCOMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n"
	    "\t--connect)\n"
	    "\t\tCOMPREPLY=($(compgen -W 'vsock: unix: serial: fc: exec' -- \"$cur\")); return ;;\n"
	    "\t--scope)\n"
	    "\t\tCOMPREPLY=($(compgen -W 'fetch boot session' -- \"$cur\")); return ;;\n"
	    "\t--log)\n"
	    "\t\tCOMPREPLY=($(compgen -W 'setup manifest server' -- \"$cur\")); return ;;\n"
	    "\tesac\n"
	    "\tif [ -z \"$cmd\" ]; then\n"
	    "\t\tCOMPREPLY=($(compgen -W \"$commands $globals\" -- \"$cur\")); return\n"
	    "\tfi\n"
	    "\tcase $cmd in\n");
	for (size_t i = 0; i < cmd_help_n_commands; i++) {
		const struct cmd_info *c = &cmd_help_commands[i];
		printf("\t%s) w='", c->name);
		print_words(c->value_options);
		print_words(c->flag_options);
		if (strcmp(c->name, "help") == 0)
			printf(" $commands");
		else if (strcmp(c->name, "completion") == 0)
			printf(" bash");
		else if (strcmp(c->name, "secrets") == 0)
			printf(" put drop");
		printf(" --help' ;;\n");
	}
	printf("\tesac\n"
	       "\tCOMPREPLY=($(compgen -W \"$w $globals\" -- \"$cur\"))\n"
	       "\t[ \"$cmd\" = push ] && [ \"${cur#-}\" = \"$cur\" ] && "
	       "COMPREPLY+=($(compgen -d -- \"$cur\"))\n"
	       "}\n"
	       "complete -F _sandbox_ctl sandbox-ctl\n");
	return -1;
}
