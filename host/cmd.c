/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Small helpers the subcommands share: usage errors, durations, interrupt handling.
 */
#include "cmd.h"
#include "sigfd.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/signalfd.h>
#include <unistd.h>

int cmd_usage(struct ctl *ctl, const char *usage, const char *fmt, ...)
{
	char what[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	err_set(&ctl->err, ERR_REFUSED, EINVAL, "%s (usage: sandbox-ctl %s)", what, usage);
	return CTL_EXIT_REFUSED;
}

int cmd_bad_option(struct ctl *ctl, const char *usage, int c, char **argv)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "?";

	if (c == ':')
		return cmd_usage(ctl, usage, "%s needs a value", arg);
	return cmd_usage(ctl, usage, "unknown option %s", arg);
}

int cmd_parse_seconds(const char *s, int64_t max_ms, int64_t *ret_ms)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v <= 0 || v * 1000 > (double)max_ms)
		return -1;
	*ret_ms = (int64_t)(v * 1000);
	if (*ret_ms == 0)
		*ret_ms = 1;
	return 0;
}

int cmd_signalfd(void)
{
	sigset_t set;
	struct err err;

	sigfd_set(&set, SIGINT, SIGTERM, SIGHUP, 0);
	return sigfd_open(&set, NULL, &err);
}

int cmd_signal_exit(int sigfd)
{
	struct signalfd_siginfo si;

	if (sigfd >= 0 && read(sigfd, &si, sizeof(si)) == sizeof(si) && si.ssi_signo > 0 &&
	    si.ssi_signo < 64)
		return 128 + (int)si.ssi_signo;
	return 128 + SIGINT;
}

const char *cmd_reason_of(int exit_code, const struct err *e)
{
	if (exit_code >= 128)
		return "interrupted";
	switch (exit_code) {
	case CTL_EXIT_KEY_CHANGED:
		return "key_changed";
	case CTL_EXIT_CONNECT:
		if (e->code == ETIMEDOUT)
			return "timeout";
		if (e->code == EKEYREJECTED)
			return "not_pinned";
		return "unreachable";
	case CTL_EXIT_REFUSED:
		switch (e->code) {
		case EINVAL:
			return "invalid";
		case EBUSY:
			return "busy";
		case ENOENT:
			return "not_found";
		case EEXIST:
			return "exists";
		case EOPNOTSUPP:
			return "unsupported";
		default:
			return "refused";
		}
	default:
		if (e->code == ETIMEDOUT)
			return "timeout";
		if (e->code == EINTR)
			return "interrupted";
		if (e->code == ENOENT)
			return "not_found";
		return "failed";
	}
}

int cmd_app_request(struct ctl *ctl, int argc, char **argv, const char *usage, uint16_t type)
{
	static const struct option opts[] = {
	    {"app-dir", required_argument, NULL, 'a'},
	    {0},
	};
	_cleanup_session_ struct session *s = NULL;
	_cleanup_json_ struct json_object *req = NULL;
	const char *app_dir = CTL_DEFAULT_APP_DIR;
	int c, r;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		if (c != 'a')
			return cmd_bad_option(ctl, usage, c, argv);
		app_dir = optarg;
	}
	if (optind != argc)
		return cmd_usage(ctl, usage, "unexpected argument '%s'", argv[optind]);
	r = connect_session_open(&ctl->so, &s, &ctl->err);
	if (r != 0)
		return r;
	req = json_object_new_object();
	json_object_object_add(req, "app_dir", json_object_new_string(app_dir));
	return connect_session_request(s, type, req, NULL, 0, &ctl->result, &ctl->err);
}

int cmd_stream_read(struct ctl *ctl, struct session *s, const struct cmd_stream_reader *rd)
{
	_cleanup_close_ int sigfd = rd->follow ? cmd_signalfd() : -1;
	int64_t deadline = rd->follow ? -1 : frame_io_deadline(s->timeout_ms);
	bool cancelled = false;
	int r;

	for (;;) {
		struct msg m;
		bool end = false;
		int w;

		/* All we asked for: the rest of the stream is not read (the session ends). */
		if (rd->enough && rd->enough(rd->userdata))
			return 0;
		w = connect_session_wait(s, cancelled ? -1 : sigfd, deadline);
		if (w == 0) {
			err_set(&ctl->err, ERR_FAILED, ETIMEDOUT,
			        "the agent did not send %s within %d s (--timeout)", rd->what,
			        s->timeout_ms / 1000);
			return CTL_EXIT_FAILED;
		}
		if (w == 2) {
			/* Interrupted: cancel, then take what is still on its way. */
			_cleanup_json_ struct json_object *empty = json_object_new_object();
			r = connect_session_send(s, MSG_CANCEL, MSG_F_END, rd->stream, empty, NULL,
			                         0, &ctl->err);
			if (r != 0)
				return r;
			cancelled = true;
			continue;
		}
		r = connect_session_recv(s, &m, frame_io_deadline(0), &ctl->err);
		if (r == -ETIMEDOUT)
			continue;
		if (r != 1)
			return r;
		if (m.stream != rd->stream) {
			if (rd->on_other)
				rd->on_other(rd->userdata, &m);
			msg_dispose(&m);
			continue;
		}
		/* ECANCELED: the end we asked for. */
		if (m.type == MSG_ERROR && cancelled) {
			msg_dispose(&m);
			return 0;
		}
		r = rd->on_msg(rd->userdata, &m, &end);
		msg_dispose(&m);
		if (r != 0 || end)
			return r;
	}
}
