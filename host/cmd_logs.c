/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sandbox-ctl logs --log NAME [--app-dir DIR] [--offset N | --tail N] [--max N] [--follow]
 *                  [--raw] [--timestamps]
 *
 * A boot's log from a byte offset (docs/protocol.md §7.5). Offsets count the scrubbed bytes the
 * agent keeps, so a controller that lost its connection asks again from the last next_offset
 * it printed and misses nothing still kept. --tail N starts at the log's last N lines instead (the
 * agent finds their offset; at most LOGS_TAIL_MAX).
 *
 * Output: one JSON document {"log", "offset", "next_offset", "skipped", "data"} (data as a
 * string, invalid UTF-8 bytes as U+FFFD; offsets count the original bytes). With --follow, one
 * such document per line as the bytes arrive (JSON Lines), until the boot ends or an
 * interrupt (which cancels the stream cleanly). With --raw the bytes go to stdout as they are
 * and the next offset is the last line on stderr. --timestamps asks the agent when each line
 * was written (its time index, to the second): the documents gain "times", [[offset, unix ms],
 * ...] in offset order, and --raw puts the ISO 8601 time before each line.
 *
 * The guest's sizes are not trusted: sandbox-ctl keeps at most --max bytes (LOGS_COLLECT_MAX
 * when collecting without --max) and stops reading once it has them, whatever the guest sends;
 * without --follow the whole command must end within --timeout (one deadline, not one per
 * message).
 */
#include "cmd.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "file.h"

/* What a collected (not followed, not raw) read keeps at most without --max. */
#define LOGS_COLLECT_MAX (16LL * 1024 * 1024)

/* The most lines --tail takes (the agent caps it there too). */
#define LOGS_TAIL_MAX 10000

/* The most time records one read keeps (the agent sends at most 256 a message). */
#define LOGS_TIMES_KEEP 65536
#define LOGS_TIMES_PER_MSG 256

#define USAGE                                                                                      \
	"logs --log NAME [--app-dir DIR] [--offset N | --tail N] [--max N] [--follow] [--raw] "    \
	"[--timestamps]"

struct logs_view {
	struct ctl *ctl;
	const char *log;
	bool follow, raw, times;
	bool have_offset;
	int64_t offset;      /* of the first byte shown */
	int64_t next_offset; /* after the last byte received */
	int64_t skipped;
	int64_t max;      /* bytes to take at most; -1: no limit */
	int64_t received; /* log bytes taken so far */
	char *data;       /* collected (not following, not raw) */
	size_t len, cap;
	struct json_object *times_all; /* collected "times" */
	bool mid_line;                 /* --raw --timestamps: the last byte written was not '\n' */
	int64_t line_ms;               /* the time of the line being written; -1: none known */
};

static int parse_count(const char *s, int64_t *ret)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < 0)
		return -1;
	*ret = v;
	return 0;
}

static struct json_object *chunk_doc(const struct logs_view *v, int64_t offset, int64_t next,
                                     int64_t skipped, const char *data, size_t len,
                                     struct json_object *times)
{
	struct json_object *doc = json_object_new_object();

	json_object_object_add(doc, "log", json_object_new_string(v->log));
	json_object_object_add(doc, "offset", json_object_new_int64(offset));
	json_object_object_add(doc, "next_offset", json_object_new_int64(next));
	json_object_object_add(doc, "skipped", json_object_new_int64(skipped));
	json_object_object_add(doc, "data", output_string_lossy(data ?: "", len));
	if (v->times)
		json_object_object_add(doc, "times",
		                       times ? json_object_get(times) : json_object_new_array());
	return doc;
}

/*
 * The "times" of a logs.data message as the guest sent them, checked: pairs of a non-negative
 * offset before next and a plausible Unix ms, in offset order, at most LOGS_TIMES_PER_MSG;
 * anything else is dropped (the guest is not trusted).
 */
static struct json_object *msg_times(const struct msg *m, int64_t next)
{
	struct json_object *in, *out = json_object_new_array();
	int64_t last = -1;

	if (!m->json || !json_object_object_get_ex(m->json, "times", &in) ||
	    !json_object_is_type(in, json_type_array))
		return out;
	for (size_t i = 0; i < json_object_array_length(in) && i < LOGS_TIMES_PER_MSG; i++) {
		struct json_object *p = json_object_array_get_idx(in, i), *o, *t;
		int64_t off, ms;

		if (!json_object_is_type(p, json_type_array) || json_object_array_length(p) != 2)
			break;
		o = json_object_array_get_idx(p, 0);
		t = json_object_array_get_idx(p, 1);
		if (!json_object_is_type(o, json_type_int) ||
		    !json_object_is_type(t, json_type_int))
			break;
		off = json_object_get_int64(o);
		ms = json_object_get_int64(t);
		if (off < 0 || off < last || off >= next || ms < 0 || ms > INT64_C(9999999999999))
			break;
		last = off;
		struct json_object *pair = json_object_new_array();
		json_object_array_add(pair, json_object_new_int64(off));
		json_object_array_add(pair, json_object_new_int64(ms));
		json_object_array_add(out, pair);
	}
	return out;
}

/* "2026-12-01T10:43:07.350Z", or dashes of the same width for a time not known. */
static void iso_ms(int64_t ms, char buf[32])
{
	time_t sec = (time_t)(ms / 1000);
	struct tm tm;

	if (ms < 0 || !gmtime_r(&sec, &tm)) {
		snprintf(buf, 32, "------------------------");
		return;
	}
	strftime(buf, 32, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + strlen(buf), 32 - strlen(buf), ".%03dZ", (int)(ms % 1000));
}

/* --raw --timestamps: data (at offset) to stdout, each line after the time it was written. */
static int write_timed(struct logs_view *v, int64_t offset, const char *data, size_t len,
                       struct json_object *times)
{
	size_t ri = 0, n = json_object_array_length(times);

	for (size_t i = 0; i < len;) {
		const char *nl = memchr(data + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - data) + 1 : len;

		if (!v->mid_line) {
			char stamp[32];
			/* The line's time: the last record at or before its first byte. */
			for (; ri < n; ri++) {
				struct json_object *p = json_object_array_get_idx(times, ri);
				if (json_object_get_int64(json_object_array_get_idx(p, 0)) >
				    offset + (int64_t)i)
					break;
				v->line_ms = json_object_get_int64(json_object_array_get_idx(p, 1));
			}
			iso_ms(v->line_ms, stamp);
			strcat(stamp, " ");
			if (file_write_all(STDOUT_FILENO, stamp, strlen(stamp)) < 0)
				return -1;
		}
		if (file_write_all(STDOUT_FILENO, data + i, end - i) < 0)
			return -1;
		v->mid_line = !nl;
		i = end;
	}
	return 0;
}

static int on_data(struct logs_view *v, const struct msg *m)
{
	int64_t offset = v->next_offset, skipped = 0;
	struct err *err = &v->ctl->err;

	msg_get_int64(m, "offset", &offset);
	msg_get_int64(m, "skipped", &skipped);
	if (!v->have_offset) {
		v->offset = offset;
		v->have_offset = true;
	}
	v->skipped += skipped;
	/* Never more than was asked for, whatever the guest sends. */
	size_t data_len = m->data_len;
	if (v->max >= 0 && (int64_t)data_len > v->max - v->received)
		data_len = (size_t)(v->max - v->received);
	v->received += (int64_t)data_len;
	v->next_offset = offset + (int64_t)data_len;
	_cleanup_json_ struct json_object *times = v->times ? msg_times(m, v->next_offset) : NULL;
	if (v->raw && v->times) {
		if (write_timed(v, offset, (const char *)m->data, data_len, times) < 0) {
			err_errno(err, "cannot write the log to stdout");
			return CTL_EXIT_FAILED;
		}
		return 0;
	}
	if (v->raw) {
		if (data_len && file_write_all(STDOUT_FILENO, m->data, data_len) < 0) {
			err_errno(err, "cannot write the log to stdout");
			return CTL_EXIT_FAILED;
		}
		return 0;
	}
	if (v->follow) {
		_cleanup_json_ struct json_object *doc = chunk_doc(
		    v, offset, v->next_offset, skipped, (const char *)m->data, data_len, times);
		/* One document per line, whatever the terminal. */
		bool pretty = v->ctl->out.pretty;
		v->ctl->out.pretty = false;
		output_json(&v->ctl->out, doc);
		v->ctl->out.pretty = pretty;
		return 0;
	}
	if (v->len + data_len + 1 > v->cap) {
		size_t cap = v->cap ? v->cap : 65536;
		char *p;
		while (cap < v->len + data_len + 1)
			cap *= 2;
		p = realloc(v->data, cap);
		if (!p) {
			err_oom(err);
			return CTL_EXIT_FAILED;
		}
		v->data = p;
		v->cap = cap;
	}
	if (data_len)
		memcpy(v->data + v->len, m->data, data_len);
	v->len += data_len;
	for (size_t i = 0; times && i < json_object_array_length(times); i++) {
		if (!v->times_all)
			v->times_all = json_object_new_array();
		if (json_object_array_length(v->times_all) >= LOGS_TIMES_KEEP)
			break;
		json_object_array_add(v->times_all,
		                      json_object_get(json_object_array_get_idx(times, i)));
	}
	return 0;
}

static int logs_msg(void *userdata, const struct msg *m, bool *ret_end)
{
	struct logs_view *v = userdata;

	if (m->type == MSG_LOGS_DATA) {
		*ret_end = m->flags & MSG_F_END;
		return on_data(v, m);
	}
	if (m->type == MSG_OK && (m->flags & MSG_F_END)) {
		*ret_end = true;
		return 0;
	}
	if (m->type == MSG_ERROR || (m->flags & MSG_F_END))
		return connect_session_unexpected(m, &v->ctl->err);
	return 0;
}

/* Not more than --max: whatever the guest still sends is not read. */
static bool logs_enough(void *userdata)
{
	const struct logs_view *v = userdata;

	return v->max >= 0 && v->received >= v->max;
}

int cmd_logs(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"log", required_argument, NULL, 'l'},
	    {"app-dir", required_argument, NULL, 'a'},
	    {"offset", required_argument, NULL, 'o'},
	    {"max", required_argument, NULL, 'm'},
	    {"tail", required_argument, NULL, 't'},
	    {"follow", no_argument, NULL, 'f'},
	    {"raw", no_argument, NULL, 'r'},
	    {"timestamps", no_argument, NULL, 'T'},
	    {0},
	};
	_cleanup_session_ struct session *s = NULL;
	_cleanup_json_ struct json_object *req = json_object_new_object();
	struct logs_view v = {.ctl = ctl};
	const char *app_dir = CTL_DEFAULT_APP_DIR;
	int64_t offset = 0, max = -1, tail = -1;
	bool have_offset = false;
	uint32_t stream;
	int c, r;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		switch (c) {
		case 'l':
			v.log = optarg;
			break;
		case 'a':
			app_dir = optarg;
			break;
		case 'o':
			if (parse_count(optarg, &offset) < 0)
				return cmd_usage(ctl, USAGE, "--offset wants a byte count");
			have_offset = true;
			break;
		case 't':
			if (parse_count(optarg, &tail) < 0)
				return cmd_usage(ctl, USAGE, "--tail wants a number of lines");
			if (tail > LOGS_TAIL_MAX)
				return cmd_usage(ctl, USAGE, "--tail takes at most %d lines",
				                 LOGS_TAIL_MAX);
			break;
		case 'm':
			if (parse_count(optarg, &max) < 0)
				return cmd_usage(ctl, USAGE, "--max wants a byte count");
			break;
		case 'f':
			v.follow = true;
			break;
		case 'r':
			v.raw = true;
			break;
		case 'T':
			v.times = true;
			break;
		default:
			return cmd_bad_option(ctl, USAGE, c, argv);
		}
	}
	if (optind != argc)
		return cmd_usage(ctl, USAGE, "unexpected argument '%s'", argv[optind]);
	if (!v.log || !v.log[0])
		return cmd_usage(ctl, USAGE, "name the log: --log setup, manifest, server, ...");
	if (have_offset && tail >= 0)
		return cmd_usage(ctl, USAGE,
		                 "--offset and --tail both say where to start: give one");
	v.next_offset = offset;
	v.line_ms = -1;
	v.max = max >= 0 ? max : v.follow || v.raw ? -1 : LOGS_COLLECT_MAX;
	json_object_object_add(req, "app_dir", json_object_new_string(app_dir));
	json_object_object_add(req, "log", json_object_new_string(v.log));
	if (tail >= 0)
		json_object_object_add(req, "tail", json_object_new_int64(tail));
	else
		json_object_object_add(req, "offset", json_object_new_int64(offset));
	json_object_object_add(req, "follow", json_object_new_boolean(v.follow));
	if (v.times)
		json_object_object_add(req, "timestamps", json_object_new_boolean(true));
	if (v.max >= 0)
		json_object_object_add(req, "max", json_object_new_int64(v.max));
	r = connect_session_open(&ctl->so, &s, &ctl->err);
	if (r != 0)
		return r;
	if (!connect_session_has_capability(s, "logs")) {
		err_set(&ctl->err, ERR_REFUSED, EOPNOTSUPP, "the agent does not serve logs");
		return CTL_EXIT_REFUSED;
	}
	stream = connect_session_new_stream(s);
	/* Following, our half stays open for the cancel that ends it. */
	r = connect_session_send(s, MSG_LOGS, v.follow ? 0 : MSG_F_END, stream, req, NULL, 0,
	                         &ctl->err);
	if (r == 0) {
		const struct cmd_stream_reader rd = {
		    .stream = stream,
		    .follow = v.follow,
		    .what = "the log",
		    .on_msg = logs_msg,
		    .enough = logs_enough,
		    .userdata = &v,
		};
		r = cmd_stream_read(ctl, s, &rd);
	}
	if (!v.have_offset)
		v.offset = offset;
	if (r == 0 && v.raw)
		output_note(&ctl->out, "next offset %" PRId64, v.next_offset);
	else if (r == 0 && !v.follow)
		ctl->result =
		    chunk_doc(&v, v.offset, v.next_offset, v.skipped, v.data, v.len, v.times_all);
	free(v.data);
	json_object_put(v.times_all);
	return r;
}
