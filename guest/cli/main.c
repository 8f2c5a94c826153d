/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sandbox-agent: one multi-call binary. Called as sandbox-app-boot it runs the boot contract;
 * `sandbox-agent boot ...` is the same; called as sandbox-claude it is the platform's session
 * helper; `sandbox-agent serve` is the daemon; `sandbox-agent init` is PID 1 for images
 * without systemd.
 */
#include <libgen.h>
#include <stdio.h>
#include <string.h>

#include "boot_cli.h"
#include "claude_cli.h"
#include "init.h"
#include "log.h"
#include "ready.h"
#include "serve_cli.h"

static int usage(FILE *f)
{
	fputs("usage: sandbox-agent boot [OPTIONS] APP_DIR   (also installed as sandbox-app-boot)\n"
	      "       sandbox-agent serve [OPTIONS]           the daemon sandbox-ctl talks to\n"
	      "       sandbox-agent init [OPTIONS] [-- SERVE_ARGS...]  PID 1 without systemd\n"
	      "       sandbox-agent keygen [--key FILE]      print the guest's public key\n"
	      "       sandbox-agent --version\n",
	      f);
	return f == stderr ? 2 : 0;
}

/* libcurl's global state, once, before anything could start a thread. */
static int curl_first(void)
{
	struct err err;

	if (ready_init(&err) < 0) {
		fprintf(stderr, "sandbox-agent: %s\n", err.msg);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *name = argc > 0 ? basename(argv[0]) : "sandbox-agent";

	if (strcmp(name, "sandbox-app-boot") == 0) {
		log_setup("sandbox-app-boot");
		return curl_first() < 0 ? 1 : boot_cli_main(argc, argv);
	}
	if (strcmp(name, "sandbox-claude") == 0) {
		log_setup("sandbox-claude");
		return curl_first() < 0 ? 1 : claude_cli_main(argc, argv);
	}
	log_setup("sandbox-agent");
	if (argc < 2)
		return usage(stderr);
	if (strcmp(argv[1], "--version") == 0) {
		printf("sandbox-agent %s\n", SA_VERSION);
		return 0;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
		return usage(stdout);
	if (strcmp(argv[1], "boot") == 0)
		return curl_first() < 0 ? 1 : boot_cli_main(argc - 1, argv + 1);
	/*
	 * Not for the daemon and keygen: the daemon's runners and its verify set libcurl up when
	 * they need it, so an idle daemon carries none of it (docs/daemon.md, "Memory").
	 */
	if (strcmp(argv[1], "serve") == 0)
		return serve_cli_main(argc - 1, argv + 1);
	if (strcmp(argv[1], "init") == 0)
		return curl_first() < 0 ? 1 : init_cli_main(argc - 1, argv + 1);
	if (strcmp(argv[1], "keygen") == 0)
		return serve_cli_keygen_main(argc - 1, argv + 1);
	fprintf(stderr, "sandbox-agent: unknown command '%s'\n", argv[1]);
	return usage(stderr);
}
