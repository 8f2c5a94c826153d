/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sandbox-ctl session start|send|approve|deny|cancel|events|diff|list (docs/sandbox-ctl.md,
 * "session"; the operations: docs/protocol.md, "Coding sessions").
 *
 * One JSON document out, or with `events --follow` (and `start --follow`) the session's events
 * as JSON lines, each as the guest keeps it in events.jsonl, so the output is a recording
 * (docs/sessions.md, "Recordings"). While following, a can_use_tool request is answered by
 * the policy (--approve TOOL..., --deny-all), else on a terminal by asking there, else left
 * pending for another controller (or the session's approval timeout). Prompts and turns come
 * from a file or stdin, never from argv.
 */
#include "cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "file.h"
#include "json_get.h"
#include "json_strict.h"

#define TURN_MAX (256 * 1024)
#define EVENTS_COLLECT_MAX (64LL * 1024 * 1024)
#define LINE_MAX_BYTES (8 * 1024 * 1024 + 4096)
#define APPROVE_MAX 64
#define ANSWERS_MAX 64

#define USAGE                                                                                      \
	"session start [--prompt-file F|-] [--model M] [--max-turns N]\n"                          \
	"                [--permission-mode ask|accept_edits|skip] [--credential NAME]\n"          \
	"                [--approval-timeout S] [--session-timeout S] "                            \
	"[--dangerously-no-sandbox]\n"                                                             \
	"                [--env NAME=VALUE]... [--follow [--approve TOOL]... [--deny-all]]\n"      \
	"  session send --id ID [--prompt-file F|-]\n"                                             \
	"  session approve|deny --id ID --request RID [--message M] [--interrupt]\n"               \
	"  session cancel|diff --id ID\n"                                                          \
	"  session events --id ID [--from OFFSET] [--follow [--approve TOOL]... [--deny-all]]\n"   \
	"  session list"

struct opts {
	const char *id, *prompt_file, *model, *perm, *credential, *request, *message;
	int64_t max_turns, approval_timeout, timeout, from;
	bool no_sandbox, follow, deny_all, interrupt;
	const char *approve[APPROVE_MAX];
	size_t n_approve;
	const char *env[APPROVE_MAX]; /* NAME=VALUE, not secret (argv) */
	size_t n_env;
};

/* The prompt or turn: the file's bytes, or stdin's ("-"), 1 to TURN_MAX bytes. */
static int read_text(struct ctl *ctl, const char *path, char **ret, size_t *ret_len)
{
	_cleanup_close_ int own = -1;
	int fd = STDIN_FILENO;
	char *buf;
	ssize_t n;

	if (path && strcmp(path, "-") != 0) {
		own = open(path, O_RDONLY | O_CLOEXEC);
		if (own < 0)
			return err_errno(&ctl->err, "cannot open the prompt file %s", path),
			       CTL_EXIT_REFUSED;
		fd = own;
	} else if (isatty(STDIN_FILENO)) {
		output_note(&ctl->out, "the prompt: type it, then Ctrl-D");
	}
	buf = malloc(TURN_MAX + 1);
	if (!buf)
		return err_oom(&ctl->err), CTL_EXIT_FAILED;
	n = file_read_all(fd, buf, TURN_MAX + 1);
	if (n <= 0 || n > TURN_MAX) {
		free(buf);
		err_set(&ctl->err, ERR_REFUSED, n > TURN_MAX ? E2BIG : EINVAL,
		        n > TURN_MAX
		            ? "the prompt is longer than %d bytes"
		            : "the prompt is empty: give it on stdin or with --prompt-file (%d "
		              "bytes at most)",
		        TURN_MAX);
		return CTL_EXIT_REFUSED;
	}
	*ret = buf;
	*ret_len = (size_t)n;
	return 0;
}

/* ---- following events ---- */

struct follow {
	struct ctl *ctl;
	struct session *s;
	const struct opts *o;
	uint32_t events_stream;
	const char *id;
	int64_t next_offset;
	char *line; /* a line not yet ended */
	size_t line_len;
	struct json_object *collected; /* not following: the events */
	int64_t collected_bytes;
	uint32_t answer_streams[ANSWERS_MAX];
	size_t n_answers;
	char *answered[ANSWERS_MAX]; /* request ids answered by us or seen answered */
	size_t n_answered;
	int tty; /* /dev/tty for asking, or -1 */
};

static bool seen_answered(struct follow *f, const char *rid)
{
	for (size_t i = 0; i < f->n_answered; i++)
		if (strcmp(f->answered[i], rid) == 0)
			return true;
	return false;
}

static void mark_answered(struct follow *f, const char *rid)
{
	if (seen_answered(f, rid))
		return;
	if (f->n_answered == ANSWERS_MAX) {
		free(f->answered[0]);
		memmove(f->answered, f->answered + 1, (ANSWERS_MAX - 1) * sizeof(f->answered[0]));
		f->n_answered--;
	}
	f->answered[f->n_answered] = strdup(rid);
	if (f->answered[f->n_answered])
		f->n_answered++;
}

static int send_answer(struct follow *f, const char *rid, bool allow, const char *message,
                       bool interrupt)
{
	struct json_object *rq = json_object_new_object();
	uint32_t stream = connect_session_new_stream(f->s);
	int r;

	json_object_object_add(rq, "id", json_object_new_string(f->id));
	json_object_object_add(rq, "request_id", json_object_new_string(rid));
	json_object_object_add(rq, "behavior", json_object_new_string(allow ? "allow" : "deny"));
	if (message)
		json_object_object_add(rq, "message", json_object_new_string(message));
	if (interrupt)
		json_object_object_add(rq, "interrupt", json_object_new_boolean(true));
	r = connect_session_send(f->s, MSG_SESSION_ANSWER, MSG_F_END, stream, rq, NULL, 0,
	                         &f->ctl->err);
	json_object_put(rq);
	if (r == 0 && f->n_answers < ANSWERS_MAX)
		f->answer_streams[f->n_answers++] = stream;
	mark_answered(f, rid);
	return r;
}

/* Ask on the terminal: y allows, n denies, i denies and ends the turn. */
static int ask_tty(struct follow *f, const char *rid, const char *tool, struct json_object *input)
{
	const char *in =
	    input ? json_object_to_json_string_ext(input, JSON_C_TO_STRING_PLAIN) : "{}";
	char summary[201], answer[16];
	size_t len = strlen(in) > 200 ? 200 : strlen(in);
	ssize_t n;

	char name[129];

	/* Both come from the guest: no byte of theirs reaches the terminal uncleaned. */
	summary[output_clean(summary, in, len)] = '\0';
	name[output_clean(name, tool, strlen(tool) > 128 ? 128 : strlen(tool))] = '\0';
	dprintf(f->tty,
	        "\nThe agent wants to use %s: %s%s\nAllow? [y]es, [n]o, [i] no and stop the turn: ",
	        name, summary, strlen(in) > 200 ? "..." : "");
	n = read(f->tty, answer, sizeof(answer) - 1);
	if (n <= 0)
		return 0; /* left pending */
	answer[n] = '\0';
	if (answer[0] == 'y' || answer[0] == 'Y')
		return send_answer(f, rid, true, NULL, false);
	return send_answer(f, rid, false, "The user denied this tool call.", answer[0] == 'i');
}

/* A C0 control or DEL (C1 controls are output_json_text's). */
static bool has_control(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch < 0x20 || ch == 0x7f)
			return true;
	}
	return false;
}

/* One whole event line: printed (following) or kept; a pending request answered by policy. */
static int on_line(struct follow *f, const char *line, size_t len)
{
	_cleanup_json_ struct json_object *ev = NULL;
	struct json_object *req, *input = NULL;
	enum json_tokener_error jerr;
	const char *type, *rid, *tool;
	size_t off;

	if (json_strict_parse(line, len, &ev, &off, &jerr) != JSON_STRICT_OK ||
	    !json_object_is_type(ev, json_type_object))
		return 0; /* the guest writes objects only */
	if (f->o->follow) {
		/*
		 * The guest's line as it is, unless it holds a control character (json-c lets a raw
		 * one through inside a string): then as json-c writes it, escaped; a C1 control
		 * either way as its \u escape.
		 */
		const char *text = line;

		if (has_control(line, len)) {
			text = json_object_to_json_string_ext(
			    ev, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
			len = strlen(text);
		}
		output_json_text(stdout, text, len);
		fputc('\n', stdout);
		fflush(stdout);
	} else {
		json_object_array_add(f->collected, json_object_get(ev));
	}
	type = json_get_string(ev, "type");
	if (type && strcmp(type, "sandbox") == 0 && (rid = json_get_string(ev, "request_id")))
		mark_answered(f, rid);
	if (!f->o->follow || !type || strcmp(type, "control_request") != 0 ||
	    !json_object_object_get_ex(ev, "request", &req) ||
	    !(rid = json_get_string(ev, "request_id")) || !json_get_string(req, "subtype") ||
	    strcmp(json_get_string(req, "subtype"), "can_use_tool") != 0 || seen_answered(f, rid))
		return 0;
	tool = json_get_string(req, "tool_name") ? json_get_string(req, "tool_name") : "?";
	json_object_object_get_ex(req, "input", &input);
	for (size_t i = 0; i < f->o->n_approve; i++)
		if (strcmp(f->o->approve[i], tool) == 0 || strcmp(f->o->approve[i], "*") == 0)
			return send_answer(f, rid, true, NULL, false);
	if (f->o->deny_all)
		return send_answer(f, rid, false, "Denied by the controller's policy (--deny-all).",
		                   false);
	if (f->tty >= 0)
		return ask_tty(f, rid, tool, input);
	return 0;
}

static int on_events(struct follow *f, const struct msg *m)
{
	int64_t offset = f->next_offset;
	const char *p = (const char *)m->data, *end = p + m->data_len;

	msg_get_int64(m, "offset", &offset);
	f->next_offset = offset + (int64_t)m->data_len;
	f->collected_bytes += (int64_t)m->data_len;
	if (!f->o->follow && f->collected_bytes > EVENTS_COLLECT_MAX) {
		err_set(&f->ctl->err, ERR_REFUSED, EFBIG,
		        "more than %lld bytes of events: read them with --follow, or in parts "
		        "with --from",
		        EVENTS_COLLECT_MAX);
		return CTL_EXIT_REFUSED;
	}
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		int r;

		if (f->line_len + n > LINE_MAX_BYTES) {
			err_set(&f->ctl->err, ERR_FAILED, E2BIG,
			        "an event line longer than %d bytes", LINE_MAX_BYTES);
			return CTL_EXIT_FAILED;
		}
		if (!nl || f->line_len) {
			char *q = realloc(f->line, f->line_len + n + 1);

			if (!q)
				return err_oom(&f->ctl->err), CTL_EXIT_FAILED;
			f->line = q;
			memcpy(f->line + f->line_len, p, n);
			f->line_len += n;
			if (!nl)
				break;
			r = on_line(f, f->line, f->line_len);
			f->line_len = 0;
		} else {
			r = on_line(f, p, n);
		}
		if (r != 0)
			return r;
		p = nl + 1;
	}
	return 0;
}

/* An answer that came too late (answered elsewhere, timed out) is a note; others dropped. */
static void follow_other(void *userdata, const struct msg *m)
{
	struct follow *f = userdata;

	for (size_t i = 0; i < f->n_answers; i++)
		if (f->answer_streams[i] == m->stream && m->type == MSG_ERROR)
			output_note(&f->ctl->out, "an answer was not taken: %s",
			            msg_get_string(m, "msg") ? msg_get_string(m, "msg") : "?");
}

static int follow_msg(void *userdata, const struct msg *m, bool *ret_end)
{
	struct follow *f = userdata;

	if (m->type != MSG_SESSION_EVENT)
		return connect_session_unexpected(m, &f->ctl->err);
	*ret_end = m->flags & MSG_F_END;
	return on_events(f, m);
}

static int follow_run(struct follow *f)
{
	const struct cmd_stream_reader rd = {
	    .stream = f->events_stream,
	    .follow = f->o->follow,
	    .what = "the events",
	    .on_msg = follow_msg,
	    .on_other = follow_other,
	    .userdata = f,
	};

	return cmd_stream_read(f->ctl, f->s, &rd);
}

static int events(struct ctl *ctl, struct session *s, const struct opts *o, const char *id)
{
	struct follow f = {.ctl = ctl, .s = s, .o = o, .id = id, .next_offset = o->from, .tty = -1};
	_cleanup_json_ struct json_object *rq = json_object_new_object();
	int r;

	if (o->follow && !o->deny_all && isatty(STDIN_FILENO))
		f.tty = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (!o->follow)
		f.collected = json_object_new_array();
	json_object_object_add(rq, "id", json_object_new_string(id));
	json_object_object_add(rq, "offset", json_object_new_int64(o->from));
	json_object_object_add(rq, "follow", json_object_new_boolean(o->follow));
	f.events_stream = connect_session_new_stream(s);
	r = connect_session_send(s, MSG_SESSION_EVENTS, o->follow ? 0 : MSG_F_END, f.events_stream,
	                         rq, NULL, 0, &ctl->err);
	if (r == 0)
		r = follow_run(&f);
	if (r == 0 && !o->follow) {
		ctl->result = json_object_new_object();
		json_object_object_add(ctl->result, "id", json_object_new_string(id));
		json_object_object_add(ctl->result, "offset", json_object_new_int64(o->from));
		json_object_object_add(ctl->result, "next_offset",
		                       json_object_new_int64(f.next_offset - (int64_t)f.line_len));
		json_object_object_add(ctl->result, "events", json_object_get(f.collected));
	}
	json_object_put(f.collected);
	free(f.line);
	for (size_t i = 0; i < f.n_answered; i++)
		free(f.answered[i]);
	if (f.tty >= 0)
		close(f.tty);
	return r;
}

/* ---- the verbs ---- */

static int parse_int(struct ctl *ctl, const char *opt, const char *s, int64_t *ret)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < 0)
		return cmd_usage(ctl, USAGE, "%s wants a whole number", opt);
	*ret = v;
	return 0;
}

static int parse_opts(struct ctl *ctl, int argc, char **argv, struct opts *o)
{
	static const struct option opts[] = {
	    {"id", required_argument, NULL, 'i'},
	    {"prompt-file", required_argument, NULL, 'p'},
	    {"model", required_argument, NULL, 'm'},
	    {"max-turns", required_argument, NULL, 'T'},
	    {"permission-mode", required_argument, NULL, 'P'},
	    {"credential", required_argument, NULL, 'c'},
	    {"approval-timeout", required_argument, NULL, 'A'},
	    {"session-timeout", required_argument, NULL, 't'},
	    {"dangerously-no-sandbox", no_argument, NULL, 'D'},
	    {"follow", no_argument, NULL, 'f'},
	    {"from", required_argument, NULL, 'F'},
	    {"approve", required_argument, NULL, 'a'},
	    {"deny-all", no_argument, NULL, 'd'},
	    {"request", required_argument, NULL, 'r'},
	    {"message", required_argument, NULL, 'M'},
	    {"interrupt", no_argument, NULL, 'I'},
	    {"env", required_argument, NULL, 'e'},
	    {0},
	};
	int c, r;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			o->id = optarg;
			break;
		case 'p':
			o->prompt_file = optarg;
			break;
		case 'm':
			o->model = optarg;
			break;
		case 'T':
			if ((r = parse_int(ctl, "--max-turns", optarg, &o->max_turns)) != 0)
				return r;
			break;
		case 'P':
			o->perm = optarg;
			break;
		case 'c':
			o->credential = optarg;
			break;
		case 'A':
			if ((r = parse_int(ctl, "--approval-timeout", optarg,
			                   &o->approval_timeout)) != 0)
				return r;
			break;
		case 't':
			if ((r = parse_int(ctl, "--session-timeout", optarg, &o->timeout)) != 0)
				return r;
			break;
		case 'D':
			o->no_sandbox = true;
			break;
		case 'f':
			o->follow = true;
			break;
		case 'F':
			if ((r = parse_int(ctl, "--from", optarg, &o->from)) != 0)
				return r;
			break;
		case 'a':
			if (o->n_approve == APPROVE_MAX)
				return cmd_usage(ctl, USAGE, "--approve takes at most %d tools",
				                 APPROVE_MAX);
			o->approve[o->n_approve++] = optarg;
			break;
		case 'd':
			o->deny_all = true;
			break;
		case 'r':
			o->request = optarg;
			break;
		case 'M':
			o->message = optarg;
			break;
		case 'I':
			o->interrupt = true;
			break;
		case 'e':
			if (o->n_env == APPROVE_MAX || !strchr(optarg, '=') || optarg[0] == '=')
				return cmd_usage(ctl, USAGE, "--env wants NAME=VALUE (at most %d)",
				                 APPROVE_MAX);
			o->env[o->n_env++] = optarg;
			break;
		default:
			return cmd_bad_option(ctl, USAGE, c, argv);
		}
	}
	if (optind != argc)
		return cmd_usage(ctl, USAGE, "unexpected argument '%s'", argv[optind]);
	return 0;
}

static int need_id(struct ctl *ctl, const struct opts *o, const char *verb)
{
	if (!o->id || !o->id[0])
		return cmd_usage(ctl, USAGE,
		                 "session %s needs --id ID (what session start answered; session "
		                 "list shows them)",
		                 verb);
	return 0;
}

static int start(struct ctl *ctl, struct session *s, const struct opts *o)
{
	_cleanup_json_ struct json_object *rq = json_object_new_object();
	_cleanup_free_ char *text = NULL;
	struct json_object *reply = NULL, *id;
	size_t len = 0;
	int r;

	if ((r = read_text(ctl, o->prompt_file, &text, &len)) != 0)
		return r;
	if (o->model)
		json_object_object_add(rq, "model", json_object_new_string(o->model));
	if (o->max_turns)
		json_object_object_add(rq, "max_turns", json_object_new_int64(o->max_turns));
	if (o->perm)
		json_object_object_add(rq, "permission_mode", json_object_new_string(o->perm));
	if (o->credential)
		json_object_object_add(rq, "credential", json_object_new_string(o->credential));
	if (o->approval_timeout)
		json_object_object_add(rq, "approval_timeout",
		                       json_object_new_int64(o->approval_timeout));
	if (o->timeout)
		json_object_object_add(rq, "timeout", json_object_new_int64(o->timeout));
	if (o->no_sandbox)
		json_object_object_add(rq, "dangerously_no_sandbox", json_object_new_boolean(true));
	if (o->n_env) {
		struct json_object *env = json_object_new_object();

		for (size_t i = 0; i < o->n_env; i++) {
			const char *eq = strchr(o->env[i], '=');
			_cleanup_free_ char *name = strndup(o->env[i], (size_t)(eq - o->env[i]));

			if (!name)
				return err_oom(&ctl->err), CTL_EXIT_FAILED;
			json_object_object_add(env, name, json_object_new_string(eq + 1));
		}
		json_object_object_add(rq, "env", env);
	}
	r = connect_session_request(s, MSG_SESSION_START, rq, text, len, &reply, &ctl->err);
	if (r != 0)
		return r;
	if (!o->follow || !json_object_object_get_ex(reply, "id", &id)) {
		ctl->result = reply;
		return 0;
	}
	{
		_cleanup_free_ char *sid = strdup(json_object_get_string(id));

		json_object_put(reply);
		if (!sid)
			return err_oom(&ctl->err), CTL_EXIT_FAILED;
		return events(ctl, s, o, sid);
	}
}

/* session.diff: the reply's data part is the diff; it becomes the document's `diff`. */
static int diff_request(struct ctl *ctl, struct session *s, struct json_object *rq)
{
	uint32_t stream = connect_session_new_stream(s);
	int64_t deadline = frame_io_deadline(s->timeout_ms);
	int r =
	    connect_session_send(s, MSG_SESSION_DIFF, MSG_F_END, stream, rq, NULL, 0, &ctl->err);

	while (r == 0) {
		struct msg m;

		r = connect_session_recv(s, &m, deadline, &ctl->err);
		if (r == -ETIMEDOUT) {
			err_set(&ctl->err, ERR_FAILED, ETIMEDOUT,
			        "the agent did not send the diff within %d s (--timeout)",
			        s->timeout_ms / 1000);
			return CTL_EXIT_FAILED;
		}
		if (r != 1)
			return r;
		if (m.stream != stream) {
			msg_dispose(&m);
			r = 0;
			continue;
		}
		if (m.type != MSG_OK) {
			r = connect_session_unexpected(&m, &ctl->err);
			msg_dispose(&m);
			return r;
		}
		ctl->result = m.json ? json_object_get(m.json) : json_object_new_object();
		json_object_object_add(ctl->result, "diff",
		                       output_string_lossy((const char *)m.data, m.data_len));
		msg_dispose(&m);
		return 0;
	}
	return r;
}

int cmd_session(struct ctl *ctl, int argc, char **argv)
{
	_cleanup_session_ struct session *s = NULL;
	struct opts o = {0};
	const char *verb;
	int r;

	if (argc < 2)
		return cmd_usage(ctl, USAGE,
		                 "which one: start, send, approve, deny, cancel, events, "
		                 "diff or list");
	verb = argv[1];
	if ((r = parse_opts(ctl, argc - 1, argv + 1, &o)) != 0)
		return r;
	if ((o.n_approve || o.deny_all) && !o.follow)
		return cmd_usage(ctl, USAGE,
		                 "--approve and --deny-all answer while following: add --follow");
	if (strcmp(verb, "start") && strcmp(verb, "list") && (r = need_id(ctl, &o, verb)) != 0)
		return r;
	if ((!strcmp(verb, "approve") || !strcmp(verb, "deny")) && !o.request)
		return cmd_usage(
		    ctl, USAGE, "session %s needs --request RID (the control_request's request_id)",
		    verb);
	if (strcmp(verb, "start") && strcmp(verb, "send") && strcmp(verb, "approve") &&
	    strcmp(verb, "deny") && strcmp(verb, "cancel") && strcmp(verb, "events") &&
	    strcmp(verb, "diff") && strcmp(verb, "list"))
		return cmd_usage(ctl, USAGE, "unknown session verb '%s'", verb);
	r = connect_session_open(&ctl->so, &s, &ctl->err);
	if (r != 0)
		return r;
	if (!connect_session_has_capability(s, "session")) {
		err_set(&ctl->err, ERR_REFUSED, EOPNOTSUPP,
		        "the agent does not serve sessions: it is older than this sandbox-ctl");
		return CTL_EXIT_REFUSED;
	}
	if (!strcmp(verb, "start"))
		return start(ctl, s, &o);
	if (!strcmp(verb, "events"))
		return events(ctl, s, &o, o.id);
	{
		_cleanup_json_ struct json_object *rq = json_object_new_object();
		_cleanup_free_ char *text = NULL;
		size_t len = 0;
		uint16_t type = MSG_SESSION_LIST;

		if (o.id)
			json_object_object_add(rq, "id", json_object_new_string(o.id));
		if (!strcmp(verb, "send")) {
			if ((r = read_text(ctl, o.prompt_file, &text, &len)) != 0)
				return r;
			type = MSG_SESSION_SEND;
		} else if (!strcmp(verb, "approve") || !strcmp(verb, "deny")) {
			type = MSG_SESSION_ANSWER;
			json_object_object_add(rq, "request_id", json_object_new_string(o.request));
			json_object_object_add(
			    rq, "behavior",
			    json_object_new_string(verb[0] == 'a' ? "allow" : "deny"));
			if (o.message)
				json_object_object_add(rq, "message",
				                       json_object_new_string(o.message));
			if (o.interrupt)
				json_object_object_add(rq, "interrupt",
				                       json_object_new_boolean(true));
		} else if (!strcmp(verb, "cancel")) {
			type = MSG_SESSION_CANCEL;
		} else if (!strcmp(verb, "diff")) {
			type = MSG_SESSION_DIFF;
		}
		if (type != MSG_SESSION_DIFF)
			return connect_session_request(s, type, rq, text, len, &ctl->result,
			                               &ctl->err);
		return diff_request(ctl, s, rq);
	}
}
