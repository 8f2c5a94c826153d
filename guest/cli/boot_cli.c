/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sandbox-app-boot: the command line of the boot contract. It chooses exit codes and writes
 * what the caller reads; the work is done by the boot engine.
 *
 * Exit codes: 0 ready (or the requested action done), 1 a step failed or a deadline passed,
 * 2 the request, the spec or sandbox.yml was refused (or a boot is already in progress).
 * On failure the cause is the LAST line of stderr: the platform keeps only 500 characters.
 */
#include "boot_cli.h"

#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "boot_stop.h"
#include "boot_engine.h"
#include "boot_observe.h"
#include "boot_plan.h"
#include "boot_services.h"
#include "log.h"
#include "liveline.h"
#include "logfile.h"
#include "proc.h"
#include "strv.h"
#include "suggest.h"

#define TAIL_LINES 20
#define TAIL_LINE_CHARS 500

extern char **environ;

enum boot_action {
	ACTION_BOOT,
	ACTION_DRY_RUN,
	ACTION_STOP,
	ACTION_DISCARD,
	ACTION_STATUS,
};

static void usage(FILE *f)
{
	fputs("usage: sandbox-app-boot [OPTIONS] APP_DIR\n"
	      "       sandbox-app-boot --spec FILE [--from STEP] [--restart]\n"
	      "\n"
	      "Boots the app in APP_DIR: .activeagents/sandbox.yml, setup, manifest, server,\n"
	      "readiness, runtime.json; exits 0 with the app running, 1 when a step failed,\n"
	      "2 when the request or its configuration was refused.\n"
	      "\n"
	      "Actions (default: boot):\n"
	      "  --dry-run            print the resolved plan as JSON and exit\n"
	      "  --stop               stop every process of the boot; keep files\n"
	      "  --discard            stop, drop the databases, remove the workspace\n"
	      "  --status             print the boot's state as JSON\n"
	      "  --restart            run manifest and start again (changed checkout); only\n"
	      "                       after a ready boot\n"
	      "  --from STEP          resume a failed boot at STEP; only after a failed boot\n"
	      "Options:\n"
	      "  --spec FILE          the platform's spec file (spec shape)\n"
	      "  --workspace DIR      default: the app directory's parent\n"
	      "  --user NAME          run the app's commands as NAME (default: sandbox if it\n"
	      "                       exists, else the caller)\n"
	      "  --pass-env NAME      give the app the caller's NAME (repeatable)\n"
	      "  --timeout SECONDS    the whole boot's deadline (default 600)\n"
	      "  --listen ADDR:PORT   the outside address forwarded to the app (0.0.0.0:8080)\n"
	      "  --no-forward         no forwarder, no /up check through it\n"
	      "  --grace MS           grace period between TERM and KILL (10000)\n"
	      "  --cache-root DIR     shared download caches (/var/cache/sandbox-app-runtime)\n"
	      "  --services-dir DIR   the image's start-NAME service scripts\n"
	      "                       (/usr/local/lib/sandbox-app-runtime/services)\n"
	      "  -v, --verbose        more detail on stderr\n"
	      "  --version, --help\n",
	      f);
}

static int parse_uint(const char *s, unsigned max, unsigned *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v > max || s[0] == '-')
		return -1;
	*ret = (unsigned)v;
	return 0;
}

static int parse_listen(const char *s, char **ret_addr, unsigned *ret_port)
{
	const char *colon = strrchr(s, ':');
	unsigned port;

	if (!colon || colon == s || parse_uint(colon + 1, 65535, &port) < 0 || port == 0)
		return -1;
	*ret_addr = strndup(s, (size_t)(colon - s));
	*ret_port = port;
	return *ret_addr ? 0 : -1;
}

/* "Sandbox <step> failed: <problem>", the log tail, and the cause again as the last line. */
static void report_failure(const struct boot_plan *p, const struct boot_result *res,
                           const struct err *err)
{
	_cleanup_free_ char *tail = NULL;
	char line[ERR_MSG_MAX + 128];

	if (strncmp(err->msg, "Sandbox ", 8) == 0)
		snprintf(line, sizeof(line), "%s", err->msg);
	else
		snprintf(line, sizeof(line), "Sandbox %s failed: %s", res->step, err->msg);
	fprintf(stderr, "%s\n", line);
	if (res->log_path[0]) {
		struct err tail_err;
		const char *shown = res->log_path;
		if (p && p->state_dir && strncmp(shown, p->state_dir, strlen(p->state_dir)) == 0)
			shown += strlen(p->state_dir) + 1;
		/* Only this boot's lines: the log keeps earlier boots' above them. */
		if (logfile_tail_since(res->log_path, res->log_from, TAIL_LINES, TAIL_LINE_CHARS,
		                       &tail, &tail_err) == 0 &&
		    tail && *tail) {
			_cleanup_free_ char *clean = NULL;
			size_t len = strlen(tail);
			if (p && p->scrub)
				clean = scrub_string(p->scrub, tail, len, &len);
			fprintf(stderr, "--- last lines of %s ---\n%s%s", shown,
			        clean ? clean : tail,
			        (clean ? clean : tail)[len ? len - 1 : 0] == '\n' ? "" : "\n");
		}
		fprintf(stderr, "(the whole log: %s)\n", res->log_path);
	}
	fprintf(stderr, "%s\n", line);
}

static void report_refusal(const struct err *err)
{
	if (strncmp(err->msg, "Sandbox ", 8) == 0)
		fprintf(stderr, "%s\n", err->msg);
	else
		fprintf(stderr, "Sandbox boot refused: %s\n", err->msg);
}

/* What sandbox.yml's reader found for the author: warnings, and where a syntax error is. */
static void report_notes(char *const *notes)
{
	for (size_t i = 0; notes && notes[i]; i++)
		fprintf(stderr, "%s\n", notes[i]);
}

static int exit_code(const struct err *err)
{
	return err->cls == ERR_REFUSED ? 2 : 1;
}

/*
 * Progress on stderr: on a terminal one live line per step, rewritten with the step's latest
 * output line and kept when the step ends (the same live line as `sandbox-ctl boot --wait`,
 * common/base/liveline.h); elsewhere plain lines, as a log reader wants them.
 */
struct progress {
	uint64_t started_us; /* the boot's start */
	uint64_t step_us;    /* the live step's start */
	struct liveline line;
	bool live; /* a terminal, and not -v: the live line is used */
	char step[64];
	char command[256];
};

static void progress_live(struct progress *pr, const char *fmt, ...) _printf_(2, 3);
static void progress_live(struct progress *pr, const char *fmt, ...)
{
	char text[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	liveline_show(&pr->line, text);
}

static void progress_phase_live(struct progress *pr, const char *step, const char *phase,
                                const char *detail)
{
	double secs = (double)(clock_now_us() - pr->step_us) / 1e6;

	if (strcmp(phase, "started") == 0) {
		liveline_done(&pr->line);
		pr->step_us = clock_now_us();
		snprintf(pr->step, sizeof(pr->step), "%s", step);
		snprintf(pr->command, sizeof(pr->command), "%s", detail ? detail : "");
		progress_live(pr, "sandbox-app-boot: %s: $ %s", step, pr->command);
	} else if (strcmp(phase, "done") == 0 && strcmp(step, "start") != 0) {
		progress_live(pr, "sandbox-app-boot: %s: done in %.1f s: $ %s", step, secs,
		              strcmp(step, pr->step) == 0 ? pr->command : "");
		liveline_done(&pr->line);
	} else if (strcmp(phase, "skipped") == 0) {
		liveline_done(&pr->line);
		progress_live(pr, "sandbox-app-boot: %s: skipped (%s)", step, detail ? detail : "");
		liveline_done(&pr->line);
	} else if (strcmp(phase, "ready") == 0) {
		liveline_done(&pr->line);
		fprintf(stderr, "sandbox-app-boot: ready in %.1f s; runtime.json at %s\n",
		        (double)(clock_now_us() - pr->started_us) / 1e6, detail);
	} else if (strcmp(phase, "failed") == 0) {
		liveline_done(&pr->line); /* the failure report follows */
	} else {
		/* the server's phases: started, listening, answered, done */
		progress_live(pr, "sandbox-app-boot: %s: %s (%.1f s)", step, phase, secs);
	}
}

static void progress_phase(void *userdata, const char *step, const char *phase, const char *detail)
{
	struct progress *pr = userdata;

	if (pr->live) {
		progress_phase_live(pr, step, phase, detail);
		return;
	}
	/* With -v every line says when it happened, in ms since the boot began. */
	if (log_max_level >= LOG_DEBUG)
		fprintf(stderr, "[%6.1f ms] ", (double)(clock_now_us() - pr->started_us) / 1000.0);
	if (strcmp(phase, "started") == 0 && detail)
		fprintf(stderr, "sandbox-app-boot: %s: $ %s\n", step, detail);
	else if (strcmp(phase, "skipped") == 0)
		fprintf(stderr, "sandbox-app-boot: %s: skipped (%s)\n", step, detail ? detail : "");
	else if (strcmp(phase, "ready") == 0)
		fprintf(stderr, "sandbox-app-boot: ready; runtime.json at %s\n", detail);
	else if (log_max_level >= LOG_INFO)
		fprintf(stderr, "sandbox-app-boot: %s: %s\n", step, phase);
}

/* A step's output: its last line on the live line (only on a terminal). */
static void progress_output(void *userdata, const char *step, const char *buf, size_t len)
{
	struct progress *pr = userdata;
	const char *end = buf + len, *line;

	if (!pr->live)
		return;
	while (end > buf && (end[-1] == '\n' || end[-1] == '\r'))
		end--;
	line = end;
	while (line > buf && line[-1] != '\n')
		line--;
	if (end > line)
		progress_live(pr, "sandbox-app-boot: %s: %.*s", step, (int)(end - line), line);
}

/* Where the boot keeps its state, without reading any configuration (for --stop etc.). */
static int state_dir_for(const struct boot_options *o, char *buf, size_t len, struct err *err)
{
	char real[PATH_MAX];

	if (o->shape == BOOT_SHAPE_SPEC) {
		if (!realpath(o->spec_path, real))
			return err_set(err, ERR_REFUSED, errno, "cannot use the spec %s: %s",
			               o->spec_path, strerror(errno));
		snprintf(buf, len, "%s", dirname(real));
		return 0;
	}
	if (o->workspace) {
		if (!realpath(o->workspace, real))
			return err_set(err, ERR_REFUSED, errno, "cannot use the workspace %s: %s",
			               o->workspace, strerror(errno));
	} else {
		if (!realpath(o->app_dir, real))
			return err_set(err, ERR_REFUSED, errno, "cannot use %s: %s", o->app_dir,
			               strerror(errno));
		dirname(real); /* in place: real now holds the parent */
	}
	snprintf(buf, len, "%s/.sandbox", real);
	return 0;
}

static int do_boot(struct boot_options *o)
{
	struct boot_plan plan = {0};
	struct boot_result res = {0};
	struct progress pr = {.started_us = clock_now_us()};
	struct boot_observer obs = {
	    .phase = progress_phase, .output = progress_output, .userdata = &pr};
	_cleanup_strv_ char **notes = NULL;
	struct err err;
	int r;

	err_clear(&err);
	o->notes = &notes;
	r = boot_plan_build(o, &plan, &err);
	report_notes(notes);
	if (r < 0) {
		report_refusal(&err);
		return exit_code(&err);
	}
	liveline_init(&pr.line, stderr);
	pr.step_us = pr.started_us;
	pr.live = pr.line.tty && log_max_level < LOG_DEBUG;
	r = boot_engine_run(&plan, o, &obs, &res, &err);
	liveline_done(&pr.line);
	if (r < 0) {
		if (err.cls == ERR_REFUSED)
			report_refusal(&err);
		else
			report_failure(&plan, &res, &err);
		boot_plan_dispose(&plan);
		return exit_code(&err);
	}
	if (plan.shape == BOOT_SHAPE_SPEC) {
		printf("{\"status\":\"ready\"}\n");
		fflush(stdout);
	}
	boot_plan_dispose(&plan);
	return 0;
}

static int do_dry_run(struct boot_options *o)
{
	struct boot_plan plan = {0};
	_cleanup_free_ char *json = NULL;
	_cleanup_strv_ char **notes = NULL;
	struct err err;
	int r;

	err_clear(&err);
	o->dry_run = true;
	o->notes = &notes;
	r = boot_plan_build(o, &plan, &err);
	report_notes(notes);
	if (r < 0) {
		report_refusal(&err);
		return exit_code(&err);
	}
	json = boot_plan_to_json(&plan);
	boot_plan_dispose(&plan);
	if (!json) {
		fprintf(stderr, "Sandbox dry run failed: out of memory\n");
		return 1;
	}
	printf("%s\n", json);
	return 0;
}

static int do_stop(struct boot_options *o, bool discard)
{
	char state_dir[PATH_MAX], ws[PATH_MAX];
	struct boot_stop_request rq = {
	    .state_dir = state_dir,
	    .what = o->shape == BOOT_SHAPE_SPEC ? o->spec_path : o->app_dir,
	    .grace_ms = o->grace_ms,
	    .discard = discard,
	    .options = o,
	};
	struct err err, warning;

	err_clear(&err);
	if (state_dir_for(o, state_dir, sizeof(state_dir), &err) < 0) {
		report_refusal(&err);
		return exit_code(&err);
	}
	/* The workspace, should the configuration no longer load (spec shape: only if named). */
	if (o->shape == BOOT_SHAPE_DIRECTORY) {
		rq.app_dir = o->app_dir;
		snprintf(ws, sizeof(ws), "%s", state_dir);
		*strrchr(ws, '/') = '\0';
		rq.fallback_workspace = ws;
	} else if (o->workspace) {
		rq.fallback_workspace = o->workspace;
	}
	if (boot_stop_run(&rq, &warning, &err) < 0) {
		fprintf(stderr, "%s\n", err.msg);
		return exit_code(&err);
	}
	if (warning.cls != ERR_NONE)
		fprintf(stderr, "sandbox-app-boot: %s\n", warning.msg);
	return 0;
}

static int do_status(struct boot_options *o)
{
	char state_dir[PATH_MAX];
	_cleanup_free_ char *json = NULL;
	struct err err;

	err_clear(&err);
	if (state_dir_for(o, state_dir, sizeof(state_dir), &err) < 0 ||
	    boot_observe_json(state_dir, &json, &err) < 0) {
		fprintf(stderr, "Sandbox status failed: %s\n", err.msg);
		return exit_code(&err);
	}
	printf("%s\n", json);
	return 0;
}

/*
 * One line, the cause last: "Sandbox boot refused: unknown option --jsno; did you mean --json?
 * (see sandbox-app-boot --help)". c is getopt's ':' (a value is missing) or '?'.
 */
static int bad_option(int c, const char *arg, const struct option *longopts)
{
	const char *names[32], *near = NULL;
	char word[64];
	size_t n = 0;

	snprintf(word, sizeof(word), "%s", arg);
	word[strcspn(word, "=")] = '\0';
	if (c == ':') {
		fprintf(stderr,
		        "Sandbox boot refused: %s needs a value (see sandbox-app-boot --help)\n",
		        word);
		return 2;
	}
	if (strncmp(word, "--", 2) == 0) {
		for (; longopts[n].name && n < 31; n++)
			names[n] = longopts[n].name;
		names[n] = NULL;
		near = suggest_closest(word + 2, names);
	} else if (optopt && word[0] == '-' && word[1] != '-') {
		snprintf(word, sizeof(word), "-%c", optopt);
	}
	if (near)
		fprintf(stderr,
		        "Sandbox boot refused: unknown option %s; did you mean --%s? (see "
		        "sandbox-app-boot --help)\n",
		        word, near);
	else
		fprintf(stderr,
		        "Sandbox boot refused: unknown option %s (see sandbox-app-boot --help)\n",
		        word);
	return 2;
}

int boot_cli_main(int argc, char **argv)
{
	enum {
		OPT_SPEC = 0x100,
		OPT_WORKSPACE,
		OPT_USER,
		OPT_PASS_ENV,
		OPT_TIMEOUT,
		OPT_LISTEN,
		OPT_NO_FORWARD,
		OPT_GRACE,
		OPT_CACHE_ROOT,
		OPT_SERVICES_DIR,
		OPT_FROM,
		OPT_RESTART,
		OPT_STOP,
		OPT_DISCARD,
		OPT_STATUS,
		OPT_DRY_RUN,
		OPT_VERSION,
	};
	static const struct option longopts[] = {
	    {"spec", required_argument, NULL, OPT_SPEC},
	    {"workspace", required_argument, NULL, OPT_WORKSPACE},
	    {"user", required_argument, NULL, OPT_USER},
	    {"pass-env", required_argument, NULL, OPT_PASS_ENV},
	    {"timeout", required_argument, NULL, OPT_TIMEOUT},
	    {"listen", required_argument, NULL, OPT_LISTEN},
	    {"no-forward", no_argument, NULL, OPT_NO_FORWARD},
	    {"grace", required_argument, NULL, OPT_GRACE},
	    {"cache-root", required_argument, NULL, OPT_CACHE_ROOT},
	    {"services-dir", required_argument, NULL, OPT_SERVICES_DIR},
	    {"from", required_argument, NULL, OPT_FROM},
	    {"restart", no_argument, NULL, OPT_RESTART},
	    {"stop", no_argument, NULL, OPT_STOP},
	    {"discard", no_argument, NULL, OPT_DISCARD},
	    {"status", no_argument, NULL, OPT_STATUS},
	    {"dry-run", no_argument, NULL, OPT_DRY_RUN},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, OPT_VERSION},
	    {0},
	};
	_cleanup_strv_ char **pass_env = NULL;
	_cleanup_free_ char *listen_addr = NULL;
	struct boot_options o = {.shape = BOOT_SHAPE_DIRECTORY, .caller_env = environ};
	enum boot_action action = ACTION_BOOT;
	int c;

	/* Nothing we inherited beyond stdio may reach a child or outlive us. */
	proc_close_inherited(-1);
	opterr = 0; /* bad options are reported below, in one line */
	while ((c = getopt_long(argc, argv, ":vh", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_SPEC:
			o.shape = BOOT_SHAPE_SPEC;
			o.spec_path = optarg;
			break;
		case OPT_WORKSPACE:
			o.workspace = optarg;
			break;
		case OPT_USER:
			o.user = optarg;
			break;
		case OPT_PASS_ENV:
			if (!strv_env_name_valid(optarg)) {
				fprintf(stderr,
				        "Sandbox boot refused: --pass-env %s is not a "
				        "variable name\n",
				        optarg);
				return 2;
			}
			if (strv_push(&pass_env, optarg) < 0)
				return 1;
			break;
		case OPT_TIMEOUT:
			if (parse_uint(optarg, 7 * 24 * 3600, &o.timeout) < 0 || o.timeout == 0) {
				fprintf(stderr,
				        "Sandbox boot refused: --timeout takes seconds, got "
				        "'%s'\n",
				        optarg);
				return 2;
			}
			break;
		case OPT_LISTEN:
			free(listen_addr);
			listen_addr = NULL;
			if (parse_listen(optarg, &listen_addr, &o.listen_port) < 0) {
				fprintf(stderr,
				        "Sandbox boot refused: --listen takes ADDR:PORT, got "
				        "'%s'\n",
				        optarg);
				return 2;
			}
			o.listen_addr = listen_addr;
			break;
		case OPT_NO_FORWARD:
			o.no_forward = 1;
			break;
		case OPT_GRACE:
			if (parse_uint(optarg, 3600 * 1000, &o.grace_ms) < 0) {
				fprintf(stderr,
				        "Sandbox boot refused: --grace takes milliseconds, "
				        "got '%s'\n",
				        optarg);
				return 2;
			}
			break;
		case OPT_CACHE_ROOT:
			o.cache_root = optarg;
			break;
		case OPT_SERVICES_DIR:
			o.services_dir = optarg;
			break;
		case OPT_FROM:
			o.from_step = optarg;
			break;
		case OPT_RESTART:
			o.restart = true;
			break;
		case OPT_STOP:
			action = ACTION_STOP;
			break;
		case OPT_DISCARD:
			action = ACTION_DISCARD;
			break;
		case OPT_STATUS:
			action = ACTION_STATUS;
			break;
		case OPT_DRY_RUN:
			action = ACTION_DRY_RUN;
			break;
		case 'v':
			log_max_level = LOG_DEBUG;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case OPT_VERSION:
			printf("sandbox-app-boot %s\n", SA_VERSION);
			return 0;
		default:
			return bad_option(c, argv[optind - 1], longopts);
		}
	}
	o.pass_env = pass_env;
	if (o.shape == BOOT_SHAPE_DIRECTORY) {
		if (optind != argc - 1) {
			fprintf(stderr, "Sandbox boot refused: give exactly one APP_DIR (or --spec "
			                "FILE)\n");
			return 2;
		}
		o.app_dir = argv[optind];
	} else if (optind != argc) {
		fprintf(stderr, "Sandbox boot refused: --spec takes no APP_DIR\n");
		return 2;
	}
	if (o.restart && o.from_step) {
		fprintf(stderr, "Sandbox boot refused: --restart and --from do not go together\n");
		return 2;
	}

	switch (action) {
	case ACTION_DRY_RUN:
		return do_dry_run(&o);
	case ACTION_STOP:
		return do_stop(&o, false);
	case ACTION_DISCARD:
		return do_stop(&o, true);
	case ACTION_STATUS:
		return do_status(&o);
	case ACTION_BOOT:
		break;
	}
	return do_boot(&o);
}
