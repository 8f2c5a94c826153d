/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Opening a stream to the agent over any transport, and closing it again (for exec: waiting for
 * the command, which sees end-of-file on its stdin and should exit on its own).
 */
#include "connect.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "frame_io.h"

int connect_open(const struct connect_addr *a, int64_t deadline, struct connect_stream *ret,
                 struct err *err)
{
	struct connect_stream s = {.fd = -1, .said_fd = -1};
	int r = 0;

	s.what = connect_addr_format(a);
	if (!s.what)
		return err_oom(err);
	switch (a->kind) {
	case CONNECT_VSOCK:
		r = connect_vsock(a->cid, a->port, deadline, &s.fd, err);
		break;
	case CONNECT_UNIX:
		r = connect_unix(a->path, deadline, &s.fd, err);
		break;
	case CONNECT_SERIAL:
		r = connect_unix_serial(a->path, deadline, &s.fd, err);
		break;
	case CONNECT_FC:
		r = connect_fc(a->path, a->port, deadline, &s.fd, err);
		break;
	case CONNECT_EXEC:
		r = connect_exec(a->argv, &s.fd, &s.child, &s.filter, &s.said_fd, err);
		break;
	}
	if (r < 0) {
		free(s.what);
		return r;
	}
	*ret = s;
	return 0;
}

/* Reap the command if it has exited; true when it has (now or before). */
static bool reap(struct connect_stream *s, bool block)
{
	pid_t r;

	if (s->child <= 0 || s->reaped)
		return s->reaped;
	do
		r = waitpid(s->child, &s->wait_status, block ? 0 : WNOHANG);
	while (r < 0 && errno == EINTR);
	if (r == s->child || (r < 0 && errno == ECHILD))
		s->reaped = true;
	return s->reaped;
}

/* Wait up to ms for the command to exit. */
static bool reap_within(struct connect_stream *s, int ms)
{
	int64_t deadline = frame_io_deadline(ms);

	while (!reap(s, false))
		if (!clock_pause_until(deadline, 10))
			return reap(s, false);
	return true;
}

int connect_stream_dispose(struct connect_stream *s, int grace_ms)
{
	int status = -1;

	if (s->fd >= 0)
		close(TAKE_FD(s->fd));
	if (s->child > 0) {
		if (!reap_within(s, grace_ms)) {
			kill(s->child, SIGTERM);
			if (!reap_within(s, 1000)) {
				kill(s->child, SIGKILL);
				reap(s, true);
			}
		}
		if (s->reaped)
			status = s->wait_status;
		s->child = 0;
	}
	if (s->filter > 0) {
		/* It ends at the end of the command's stderr; a descendant may still hold that. */
		int64_t deadline = frame_io_deadline(grace_ms < 1000 ? grace_ms : 1000);
		pid_t r;
		while ((r = waitpid(s->filter, NULL, WNOHANG)) == 0 &&
		       clock_pause_until(deadline, 10))
			;
		if (r == 0) {
			kill(s->filter, SIGKILL);
			while (waitpid(s->filter, NULL, 0) < 0 && errno == EINTR)
				;
		}
		s->filter = 0;
	}
	if (s->said_fd >= 0)
		close(TAKE_FD(s->said_fd));
	free(s->what);
	s->what = NULL;
	return status;
}

/* The last line the exec command wrote to stderr (filtered), once the filter has ended. */
static bool last_said(struct connect_stream *s, char *buf, size_t size)
{
	int64_t deadline = frame_io_deadline(200);
	ssize_t n;

	if (s->said_fd < 0 || s->filter <= 0)
		return false;
	while (waitpid(s->filter, NULL, WNOHANG) == 0)
		if (!clock_pause_until(deadline, 10))
			return false;
	s->filter = 0;
	n = read(s->said_fd, buf, size - 1);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return buf[0] != '\0';
}

void connect_stream_explain(struct connect_stream *s, struct err *err)
{
	char said[CONNECT_EXEC_SAID_MAX], was[ERR_MSG_MAX];
	int st;

	/* The command may still be on its way out after closing its end: a moment's grace. */
	if (s->child <= 0 || !reap_within(s, 200))
		return;
	st = s->wait_status;
	snprintf(was, sizeof(was), "%s", err->msg);
	if (WIFEXITED(st))
		err_reword(err, "%s (the exec command exited with status %d)", was,
		           WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		err_reword(err, "%s (the exec command was killed by signal %d)", was, WTERMSIG(st));
	/* What the command said last is most often the cause ("Instance not found"): last. */
	if (last_said(s, said, sizeof(said))) {
		snprintf(was, sizeof(was), "%s", err->msg);
		err_reword(err, "%s; it said: %s", was, said);
	}
}
