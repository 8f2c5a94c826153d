/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sandbox-ctl boot [--app-dir DIR | --spec FILE] [--checkout FILE|-] [--from STEP] [--restart]
 *                  [--pass-env NAME] [--with-token] [--wait] [--deadline S] [--shared-user]
 *
 * Starts a boot in the agent (docs/protocol.md §7.4) and shows its phases on stderr as they
 * happen: on a terminal one live line per phase, rewritten in place with the phase's latest
 * log line, elsewhere plain lines (log lines too with -v). With --wait it ends with the
 * agent's result, {"status": "ready", "runtime": {...}} or {"status": "failed", "step": ...,
 * "reason": ...}, and exits 0, 1 or 2 as sandbox-app-boot does; without --wait it returns as
 * soon as the agent reports the boot running. Either way the boot runs in the agent, not in
 * this connection: an interrupt (or a dropped connection) leaves it running.
 *
 * With --checkout, the checkout spec's commit is first placed in the app directory as
 * `sandbox-ctl checkout` does (cmd_checkout_run, the host fetching), and the boot follows in
 * the same session: one process and one handshake for a re-sync instead of two. A checkout
 * that fails boots nothing; the result carries the checkout's own as "checkout".
 */
#include "cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <string.h>
#include <unistd.h>

#include "file.h"
#include "strv.h"

#define USAGE                                                                                      \
	"boot [--app-dir DIR | --spec FILE] [--checkout FILE|-] [--from STEP] [--restart] "        \
	"[--pass-env NAME] [--with-token] [--wait] [--deadline S] [--shared-user]"
#define DEADLINE_DEFAULT_MS (600 * 1000) /* the engine's own default */
#define DEADLINE_SLACK_MS (60 * 1000)    /* the agent reports its own deadline; then we give up */
#define DEADLINE_MAX_MS (7LL * 24 * 3600 * 1000)

struct boot_view {
	struct output *out;
	char label[256];   /* the phase (and step) of the live line */
	char command[256]; /* what the step started runs, shown again when it ends */
	bool live_is_log;  /* the live line shows a log line, not an event */
	char failed_step[128];
	struct json_object *last_event;
};

static const char *str(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (o && json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string))
		return json_object_get_string(v);
	return NULL;
}

static void show_event(struct boot_view *v, const struct msg *m)
{
	const char *phase = str(m->json, "phase") ?: "boot";
	const char *step = str(m->json, "step");
	const char *status = str(m->json, "status") ?: "";
	const char *detail = str(m->json, "detail");
	char label[sizeof(v->label)];

	/* "setup bundle"; a boot's last events ("failed", "ready") are labelled by their step. */
	if (step && (strcmp(phase, "failed") == 0 || strcmp(phase, "ready") == 0))
		snprintf(label, sizeof(label), "%s", step);
	else if (step && strcmp(step, phase) != 0)
		snprintf(label, sizeof(label), "%s %s", phase, step);
	else
		snprintf(label, sizeof(label), "%s", phase);
	if (strcmp(status, "failed") == 0 || strcmp(phase, "failed") == 0)
		snprintf(v->failed_step, sizeof(v->failed_step), "%s", step ?: phase);
	json_object_put(v->last_event);
	v->last_event = m->json ? json_object_get(m->json) : NULL;
	/* A new phase keeps the previous one's line on the screen (an event, not a log line). */
	if (strcmp(label, v->label) != 0 && !v->live_is_log)
		output_live_done(v->out);
	snprintf(v->label, sizeof(v->label), "%s", label);
	if (strcmp(status, "started") == 0)
		snprintf(v->command, sizeof(v->command), "%s", detail ?: "");
	else if (!detail && v->command[0])
		detail = v->command;
	output_live(v->out, "%s: %s%s%s", label, status, detail && detail[0] ? ": " : "",
	            detail ?: "");
	v->live_is_log = false;
	if (strcmp(status, "started") != 0) {
		output_live_done(v->out);
		v->command[0] = '\0';
	}
}

static void show_log(struct boot_view *v, const struct msg *m)
{
	const char *log = str(m->json, "log") ?: "log";
	const char *p = (const char *)m->data, *end = p + m->data_len;

	if (m->data_len == 0)
		return;
	if (v->out->tty && v->out->level >= OUTPUT_NORMAL) {
		/* The chunk's last line on the phase's live line. */
		const char *line_end = end, *line;
		while (line_end > p && (line_end[-1] == '\n' || line_end[-1] == '\r'))
			line_end--;
		line = line_end;
		while (line > p && line[-1] != '\n')
			line--;
		if (line_end > line) {
			output_live(v->out, "%s: %.*s", v->label[0] ? v->label : log,
			            (int)(line_end - line), line);
			v->live_is_log = true;
		}
		return;
	}
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		output_detail(v->out, "%s: %.*s", log, (int)n, p);
		p += n + 1;
	}
}

/*
 * A refused boot has one shape, whether the agent refused it at once (a boot already in
 * progress) or its configuration was refused: {"status": "refused", "exit": 2, "reason": TEXT,
 * "error": {"code", "class": "refused", "reason": WORD, "msg": TEXT}} (more keys may come from
 * the agent's result), TEXT reading "Sandbox ... refused/failed: ..." as sandbox-app-boot
 * words it.
 */
static int refused_doc(struct ctl *ctl, struct json_object *doc, const char *text, int code)
{
	struct json_object *e;

	err_set(&ctl->err, ERR_REFUSED, code, "%s", text);
	e = output_error_doc(&ctl->err);
	if (!doc || !e) {
		json_object_put(doc);
		json_object_put(e);
		return CTL_EXIT_REFUSED;
	}
	json_object_object_add(json_object_object_get(e, "error"), "reason",
	                       json_object_new_string(cmd_reason_of(CTL_EXIT_REFUSED, &ctl->err)));
	json_object_object_add(doc, "status", json_object_new_string("refused"));
	json_object_object_add(doc, "exit", json_object_new_int(CTL_EXIT_REFUSED));
	json_object_object_add(doc, "reason", json_object_new_string(text));
	json_object_object_add(doc, "error", json_object_get(json_object_object_get(e, "error")));
	json_object_put(e);
	json_object_put(ctl->result);
	ctl->result = doc;
	return CTL_EXIT_REFUSED;
}

/* The final document from boot.result, and the exit code it calls for. */
static int on_result(struct ctl *ctl, struct boot_view *v, const struct msg *m)
{
	struct json_object *doc = m->json ? json_object_get(m->json) : json_object_new_object();
	const char *status = str(doc, "status") ?: "failed";
	const char *reason, *step;
	int64_t code = -1;
	struct json_object *x;

	if (json_object_object_get_ex(doc, "exit", &x) && json_object_is_type(x, json_type_int))
		code = json_object_get_int64(x);
	if (code < 0 || code > 2)
		code = strcmp(status, "ready") == 0 ? CTL_EXIT_OK : CTL_EXIT_FAILED;
	if (!str(doc, "status"))
		json_object_object_add(doc, "status", json_object_new_string(status));
	ctl->result = doc;
	if (code == CTL_EXIT_OK) {
		output_note(&ctl->out, "ready");
		return CTL_EXIT_OK;
	}
	if (!str(doc, "step") && v->failed_step[0])
		json_object_object_add(doc, "step", json_object_new_string(v->failed_step));
	step = str(doc, "step") ?: "boot";
	reason = str(doc, "reason") ?: "the agent gave no reason";
	if (code == CTL_EXIT_REFUSED) {
		char text[ERR_MSG_MAX];
		if (strncmp(reason, "Sandbox ", 8) == 0)
			snprintf(text, sizeof(text), "%s", reason);
		else
			snprintf(text, sizeof(text), "Sandbox %s refused: %s", step, reason);
		ctl->result = NULL;
		return refused_doc(ctl, doc, text, EINVAL);
	}
	if (strncmp(reason, "Sandbox ", 8) == 0)
		err_set(&ctl->err, code == 2 ? ERR_REFUSED : ERR_FAILED, 0, "%s", reason);
	else
		err_set(&ctl->err, code == 2 ? ERR_REFUSED : ERR_FAILED, 0, "Sandbox %s %s: %s",
		        step, code == 2 ? "refused" : "failed", reason);
	return (int)code;
}

static struct json_object *status_doc(const char *status, struct boot_view *v)
{
	struct json_object *doc = json_object_new_object();
	const char *phase = str(v->last_event, "phase");
	const char *step = str(v->last_event, "step");

	json_object_object_add(doc, "status", json_object_new_string(status));
	if (phase)
		json_object_object_add(doc, "phase", json_object_new_string(phase));
	if (step)
		json_object_object_add(doc, "step", json_object_new_string(step));
	return doc;
}

static int follow(struct ctl *ctl, struct session *s, uint32_t stream, bool wait, int64_t wait_ms)
{
	struct boot_view v = {.out = &ctl->out};
	_cleanup_close_ int sigfd = cmd_signalfd();
	int64_t deadline = frame_io_deadline((int)(wait ? wait_ms : s->timeout_ms));
	int r = 0;

	for (;;) {
		struct msg m;
		int w = connect_session_wait(s, sigfd, deadline);
		if (w == 0) {
			ctl->result = status_doc(wait ? "failed" : "unknown", &v);
			err_set(&ctl->err, ERR_FAILED, ETIMEDOUT,
			        wait ? "the agent reported no result within %lld s; the boot may "
			               "still be running: see `sandbox-ctl status`"
			             : "the agent did not report the boot running within %lld s",
			        (long long)((wait ? wait_ms : s->timeout_ms) / 1000));
			r = CTL_EXIT_FAILED;
			break;
		}
		if (w == 2) {
			ctl->result = status_doc("interrupted", &v);
			err_set(&ctl->err, ERR_FAILED, EINTR,
			        "interrupted: the boot goes on in the agent (follow it with "
			        "`sandbox-ctl status` and `sandbox-ctl logs`)");
			r = cmd_signal_exit(sigfd);
			break;
		}
		r = connect_session_recv(s, &m, frame_io_deadline(0), &ctl->err);
		if (r == -ETIMEDOUT) {
			r = 0;
			continue;
		}
		if (r != 1)
			break;
		r = 0;
		if (m.stream != stream) {
			msg_dispose(&m);
			continue;
		}
		if (m.type == MSG_BOOT_EVENT) {
			show_event(&v, &m);
			msg_dispose(&m);
			if (!wait) {
				ctl->result = status_doc("started", &v);
				break;
			}
		} else if (m.type == MSG_BOOT_LOG) {
			show_log(&v, &m);
			msg_dispose(&m);
		} else if (m.type == MSG_BOOT_RESULT) {
			r = on_result(ctl, &v, &m);
			msg_dispose(&m);
			break;
		} else if (m.type == MSG_ERROR || (m.flags & MSG_F_END)) {
			r = connect_session_unexpected(&m, &ctl->err);
			msg_dispose(&m);
			if (r == CTL_EXIT_REFUSED) {
				char text[ERR_MSG_MAX];
				snprintf(text, sizeof(text), "Sandbox boot refused: %s",
				         ctl->err.msg);
				r = refused_doc(ctl, json_object_new_object(), text, ctl->err.code);
				break;
			}
			err_wrap(&ctl->err, "the agent did not boot the app");
			break;
		} else {
			msg_dispose(&m);
		}
	}
	output_live_done(&ctl->out);
	json_object_put(v.last_event);
	return r;
}

static int read_spec(const char *path, struct json_object **ret, struct err *err)
{
	_cleanup_free_ char *buf = NULL;
	enum json_tokener_error jerr;
	struct json_object *obj;
	size_t len;

	if (file_read_capped(AT_FDCWD, path, MSG_JSON_MAX - 1024, 0, &buf, &len, err) < 0) {
		err->cls = ERR_REFUSED;
		return err_wrap(err, "cannot read the spec");
	}
	obj = json_tokener_parse_verbose(buf, &jerr);
	if (!obj || !json_object_is_type(obj, json_type_object)) {
		json_object_put(obj);
		return err_set(err, ERR_REFUSED, EINVAL, "the spec %s is not a JSON object%s%s",
		               path, obj ? "" : ": ", obj ? "" : json_tokener_error_desc(jerr));
	}
	*ret = obj;
	return 0;
}

int cmd_boot(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"app-dir", required_argument, NULL, 'a'},
	    {"spec", required_argument, NULL, 's'},
	    {"from", required_argument, NULL, 'f'},
	    {"restart", no_argument, NULL, 'r'},
	    {"pass-env", required_argument, NULL, 'p'},
	    {"with-token", no_argument, NULL, 't'},
	    {"wait", no_argument, NULL, 'w'},
	    {"deadline", required_argument, NULL, 'd'},
	    {"shared-user", no_argument, NULL, 'u'},
	    {"checkout", required_argument, NULL, 'c'},
	    {0},
	};
	_cleanup_session_ struct session *s = NULL;
	_cleanup_json_ struct json_object *checkout_result = NULL;
	const char *checkout = NULL;
	_cleanup_json_ struct json_object *req = json_object_new_object();
	_cleanup_json_ struct json_object *pass_env = json_object_new_array();
	const char *app_dir = NULL, *spec = NULL;
	int64_t deadline_ms = -1;
	bool wait = false;
	uint32_t stream;
	int c, r;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		switch (c) {
		case 'a':
			app_dir = optarg;
			break;
		case 's':
			spec = optarg;
			break;
		case 'c':
			checkout = optarg;
			break;
		case 'f':
			json_object_object_add(req, "from", json_object_new_string(optarg));
			break;
		case 'r':
			json_object_object_add(req, "restart", json_object_new_boolean(true));
			break;
		case 'p':
			if (!strv_env_name_valid(optarg))
				return cmd_usage(ctl, USAGE,
				                 "--pass-env wants a variable name, not '%s'",
				                 optarg);
			json_object_array_add(pass_env, json_object_new_string(optarg));
			break;
		case 't':
			json_object_object_add(req, "runtime_token", json_object_new_boolean(true));
			break;
		case 'u':
			/* A second app beside the first, as the same user (docs/design.md). */
			json_object_object_add(req, "shared_user", json_object_new_boolean(true));
			break;
		case 'w':
			wait = true;
			break;
		case 'd':
			if (cmd_parse_seconds(optarg, DEADLINE_MAX_MS, &deadline_ms) < 0)
				return cmd_usage(ctl, USAGE, "--deadline wants seconds, not '%s'",
				                 optarg);
			break;
		default:
			return cmd_bad_option(ctl, USAGE, c, argv);
		}
	}
	if (optind != argc)
		return cmd_usage(ctl, USAGE, "unexpected argument '%s'", argv[optind]);
	if (app_dir && spec)
		return cmd_usage(ctl, USAGE, "give --app-dir or --spec, not both");
	if (checkout && spec)
		return cmd_usage(ctl, USAGE,
		                 "--checkout places a commit in --app-dir; a spec names its own "
		                 "checkout: give one of them");
	if (checkout && app_dir && app_dir[0] != '/')
		return cmd_usage(ctl, USAGE, "--app-dir must be an absolute path in the guest");
	if (spec) {
		struct json_object *obj = NULL;
		if (read_spec(spec, &obj, &ctl->err) < 0)
			return output_exit_of(&ctl->err);
		json_object_object_add(req, "spec", obj);
	} else {
		app_dir = app_dir ?: CTL_DEFAULT_APP_DIR;
		json_object_object_add(req, "app_dir", json_object_new_string(app_dir));
	}
	/* Absent: every boot secret reaches the boot; named: only those (docs/protocol.md §7.7). */
	if (json_object_array_length(pass_env) > 0)
		json_object_object_add(req, "pass_env", json_object_get(pass_env));
	if (deadline_ms > 0)
		json_object_object_add(req, "timeout",
		                       json_object_new_int64((deadline_ms + 999) / 1000));
	if (checkout) {
		r = cmd_checkout_run(ctl, checkout, app_dir, false, &s, &checkout_result);
		if (r != 0) {
			err_wrap(&ctl->err, "the checkout failed, nothing was booted");
			return r;
		}
	} else {
		r = connect_session_open(&ctl->so, &s, &ctl->err);
		if (r != 0)
			return r;
	}
	if (!connect_session_has_capability(s, "boot")) {
		err_set(&ctl->err, ERR_REFUSED, EOPNOTSUPP, "the agent does not run boots");
		r = CTL_EXIT_REFUSED;
	} else {
		stream = connect_session_new_stream(s);
		r = connect_session_send(s, MSG_BOOT_START, MSG_F_END, stream, req, NULL, 0,
		                         &ctl->err);
		if (r == 0)
			r = follow(ctl, s, stream, wait,
			           (deadline_ms > 0 ? deadline_ms : DEADLINE_DEFAULT_MS) +
			               DEADLINE_SLACK_MS);
	}
	if (checkout_result && json_object_is_type(ctl->result, json_type_object))
		json_object_object_add(ctl->result, "checkout", TAKE_PTR(checkout_result));
	else if (checkout_result && r != 0)
		/* No result of the boot's to carry it: the reason says the checkout is in place. */
		err_wrap(&ctl->err, "%s holds the new commit; booting it", app_dir);
	return r;
}
