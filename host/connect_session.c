/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A session with the agent: connect, authenticate, say hello, run operations on streams.
 */
#include "connect_session.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pins.h"

#define CLOSE_WAIT_MS 1000
#define EXEC_GRACE_MS 2000

static int fail(struct err *err, int code, const char *fmt, ...) _printf_(3, 4);
static int fail(struct err *err, int code, const char *fmt, ...)
{
	char prefix[ERR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	err_wrap(err, "%s", prefix);
	return code;
}

static int left_ms(int64_t deadline)
{
	int64_t left;

	if (deadline < 0)
		return -1;
	left = deadline - frame_io_now_ms();
	return left <= 0 ? 0 : left > INT32_MAX ? INT32_MAX : (int)left;
}

static void session_free(struct session *s)
{
	if (!s)
		return;
	channel_free(s->ch);
	frame_io_free(s->io);
	connect_stream_dispose(&s->stream, EXEC_GRACE_MS);
	json_object_put(s->guest_hello);
	free(s->instance);
	free(s);
}

void connect_session_close(struct session *s)
{
	struct err e;

	if (!s)
		return;
	if (s->ch && channel_close(s->ch, CLOSE_WAIT_MS, &e) == 0 &&
	    (s->open_streams || s->one_shot || !s->direct_socket)) {
		/* Let the guest finish: its close says it saw everything we sent. */
		int64_t deadline = frame_io_deadline(CLOSE_WAIT_MS);
		for (;;) {
			struct msg m;
			int r = channel_recv(s->ch, &m, left_ms(deadline), &e);
			if (r <= 0)
				break;
			msg_dispose(&m);
		}
	}
	session_free(s);
}

bool connect_session_has_capability(const struct session *s, const char *name)
{
	struct json_object *caps;

	if (!s->guest_hello || !json_object_object_get_ex(s->guest_hello, "capabilities", &caps) ||
	    !json_object_is_type(caps, json_type_array))
		return false;
	for (size_t i = 0; i < json_object_array_length(caps); i++) {
		struct json_object *c = json_object_array_get_idx(caps, i);
		if (json_object_is_type(c, json_type_string) &&
		    strcmp(json_object_get_string(c), name) == 0)
			return true;
	}
	return false;
}

uint32_t connect_session_new_stream(struct session *s)
{
	uint32_t id = s->next_stream;

	s->next_stream += 2;
	s->open_streams++;
	return id;
}

static int sent(struct session *s, int r, struct err *err)
{
	if (r < 0) {
		connect_stream_explain(&s->stream, err);
		return fail(err, CTL_EXIT_CONNECT, "the connection to the agent broke");
	}
	return 0;
}

int connect_session_send(struct session *s, uint16_t type, uint16_t flags, uint32_t stream,
                         struct json_object *json, const void *data, size_t data_len,
                         struct err *err)
{
	struct msg m = {
	    .type = type,
	    .flags = flags,
	    .stream = stream,
	    .json = json,
	    .data = data,
	    .data_len = data_len,
	};

	return sent(s, channel_send(s->ch, &m, s->timeout_ms, err), err);
}

int connect_session_send_batched(struct session *s, uint16_t type, uint32_t stream,
                                 struct json_object *json, const void *data, size_t data_len,
                                 struct err *err)
{
	struct msg m = {
	    .type = type,
	    .stream = stream,
	    .json = json,
	    .data = data,
	    .data_len = data_len,
	};

	return sent(s, channel_send_batched(s->ch, &m, s->timeout_ms, err), err);
}

int connect_session_flush(struct session *s, struct err *err)
{
	return sent(s, channel_flush(s->ch, s->timeout_ms, err), err);
}

uint8_t *connect_session_data_room(struct session *s, size_t len, struct err *err)
{
	return channel_data_room(s->ch, len, err);
}

int connect_session_send_room_batched(struct session *s, uint16_t type, uint32_t stream, size_t n,
                                      struct err *err)
{
	int r = channel_send_room_batched(s->ch, type, stream, n, s->timeout_ms, err);

	/* A room misused is this program's fault, not the connection's. */
	if (r < 0 && err->code == EINVAL)
		return fail(err, CTL_EXIT_FAILED, "internal error");
	return sent(s, r, err);
}

/* A message on stream 0: 0 to go on, or an exit code. */
static int on_connection_msg(struct session *s, const struct msg *m, struct err *err)
{
	switch (m->type) {
	case MSG_HELLO:
		json_object_put(s->guest_hello);
		s->guest_hello = m->json ? json_object_get(m->json) : json_object_new_object();
		return 0;
	case MSG_PING:
		return connect_session_send(s, MSG_PONG, 0, 0, m->json, NULL, 0, err);
	case MSG_ERROR:
		msg_error_to_err(m, err);
		return fail(err, CTL_EXIT_CONNECT, "the agent ended the session");
	default:
		/* pong, and whatever a newer agent may send on the connection */
		return 0;
	}
}

int connect_session_recv(struct session *s, struct msg *ret, int64_t deadline, struct err *err)
{
	for (;;) {
		struct msg m;
		int r = channel_recv(s->ch, &m, left_ms(deadline), err);
		if (r == -ETIMEDOUT)
			return r;
		if (r == 0) {
			err_set(err, ERR_FAILED, ECONNRESET, "the agent closed the session");
			return CTL_EXIT_CONNECT;
		}
		if (r < 0) {
			connect_stream_explain(&s->stream, err);
			return fail(err, CTL_EXIT_CONNECT, "the connection to the agent broke");
		}
		if (m.stream != 0) {
			/* The guest's end of one of our streams (odd ids; its own are even). */
			if ((m.stream & 1) && (m.flags & MSG_F_END) && s->open_streams)
				s->open_streams--;
			*ret = m;
			return 1;
		}
		r = on_connection_msg(s, &m, err);
		msg_dispose(&m);
		if (r != 0)
			return r;
	}
}

int connect_session_wait(struct session *s, int extra_fd, int64_t deadline)
{
	struct pollfd p[2] = {
	    {.fd = s->io->fd, .events = POLLIN},
	    {.fd = extra_fd, .events = POLLIN},
	};
	int r;

	if (frame_io_buffered(s->io))
		return 1;
	for (;;) {
		r = poll(p, extra_fd >= 0 ? 2 : 1, left_ms(deadline));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return 0;
		if (extra_fd >= 0 && p[1].revents)
			return 2;
		return 1;
	}
}

int connect_session_unexpected(const struct msg *m, struct err *err)
{
	const char *name = msg_type_name(m->type);

	if (m->type == MSG_ERROR) {
		msg_error_to_err(m, err);
		return output_exit_of(err);
	}
	err_set(err, ERR_FAILED, EPROTO, "the agent answered with an unexpected %s message",
	        name ? name : "unknown");
	return CTL_EXIT_FAILED;
}

int connect_session_request(struct session *s, uint16_t type, struct json_object *json,
                            const void *data, size_t data_len, struct json_object **ret_reply,
                            struct err *err)
{
	uint32_t id = connect_session_new_stream(s);
	int64_t deadline;
	int r;

	r = connect_session_send(s, type, MSG_F_END, id, json, data, data_len, err);
	if (r != 0)
		return r;
	deadline = frame_io_deadline(s->timeout_ms);
	for (;;) {
		struct msg m;
		r = connect_session_recv(s, &m, deadline, err);
		if (r == -ETIMEDOUT) {
			err_set(err, ERR_FAILED, ETIMEDOUT,
			        "the agent did not answer %s within %d s (--timeout)",
			        msg_type_name(type) ?: "the request", s->timeout_ms / 1000);
			return CTL_EXIT_FAILED;
		}
		if (r != 1)
			return r;
		if (m.stream != id) {
			msg_dispose(&m);
			continue;
		}
		if (m.type == MSG_OK) {
			*ret_reply = m.json ? json_object_get(m.json) : json_object_new_object();
			msg_dispose(&m);
			if (!*ret_reply) {
				err_oom(err);
				return CTL_EXIT_FAILED;
			}
			return 0;
		}
		if (m.type == MSG_ERROR || (m.flags & MSG_F_END)) {
			r = connect_session_unexpected(&m, err);
			msg_dispose(&m);
			return r;
		}
		msg_dispose(&m);
	}
}

/* Where the agent is, and the name its key is pinned under. */
static int resolve(const struct session_options *o, struct connect_addr *ret,
                   struct connect_addr *ret_fallback, char **ret_instance, struct err *err)
{
	_cleanup_free_ char *instance = NULL;
	int r;

	*ret_fallback = (struct connect_addr){0};
	if (o->incus) {
		r = connect_incus_resolve(o->incus_cmd ? o->incus_cmd : "incus", o->incus,
		                          CONNECT_DEFAULT_PORT, ret, ret_fallback, err);
		if (r < 0)
			return err->cls == ERR_REFUSED ? CTL_EXIT_REFUSED : CTL_EXIT_CONNECT;
		if (!o->instance && asprintf(&instance, "incus:%s", o->incus) < 0)
			instance = NULL;
	} else if (o->addr) {
		if (connect_addr_copy(o->addr, ret, err) < 0)
			return CTL_EXIT_FAILED;
		if (!o->instance && connect_addr_instance(o->addr, &instance, err) < 0) {
			connect_addr_dispose(ret);
			return CTL_EXIT_REFUSED;
		}
	} else {
		err_set(err, ERR_REFUSED, EINVAL,
		        "where is the agent? Give --connect ADDRESS or --incus NAME");
		return CTL_EXIT_REFUSED;
	}
	if (o->instance)
		instance = strdup(o->instance);
	if (!instance) {
		connect_addr_dispose(ret);
		connect_addr_dispose(ret_fallback);
		err_oom(err);
		return CTL_EXIT_FAILED;
	}
	if (!pins_name_valid(instance)) {
		connect_addr_dispose(ret);
		connect_addr_dispose(ret_fallback);
		err_set(err, ERR_REFUSED, EINVAL,
		        "invalid instance name '%s': 1-253 printable characters, no blanks, not "
		        "starting with '#'",
		        instance);
		return CTL_EXIT_REFUSED;
	}
	*ret_instance = TAKE_PTR(instance);
	return 0;
}

static int say_hello(struct session *s, int64_t deadline, struct err *err)
{
	_cleanup_json_ struct json_object *hello = json_object_new_object();
	int r;

	if (!hello ||
	    json_object_object_add(hello, "client", json_object_new_string("sandbox-ctl")) < 0 ||
	    json_object_object_add(hello, "version", json_object_new_string(SA_VERSION)) < 0 ||
	    json_object_object_add(hello, "capabilities", json_object_new_array()) < 0) {
		err_oom(err);
		return CTL_EXIT_FAILED;
	}
	r = connect_session_send(s, MSG_HELLO, 0, 0, hello, NULL, 0, err);
	if (r != 0)
		return r;
	/* The guest's hello comes first on its side; wait for it so commands know its capabilities.
	 */
	while (!s->guest_hello) {
		struct msg m;
		r = channel_recv(s->ch, &m, left_ms(deadline), err);
		if (r == -ETIMEDOUT) {
			err_set(err, ERR_FAILED, ETIMEDOUT, "the agent sent no hello within %d ms",
			        s->timeout_ms);
			return CTL_EXIT_CONNECT;
		}
		if (r <= 0) {
			if (r == 0)
				err_set(err, ERR_FAILED, ECONNRESET,
				        "the agent closed the session");
			connect_stream_explain(&s->stream, err);
			return fail(err, CTL_EXIT_CONNECT, "no hello from the agent");
		}
		r = m.stream == 0 ? on_connection_msg(s, &m, err) : 0;
		msg_dispose(&m);
		if (r != 0)
			return r;
	}
	{
		json_object *d = NULL;
		/* A hostile guest's "daemon": null or 1 is not one-shot (nor a crash). */
		s->one_shot = json_object_object_get_ex(s->guest_hello, "daemon", &d) &&
		              json_object_is_type(d, json_type_string) &&
		              strcmp(json_object_get_string(d), "one-shot") == 0;
		if (s->one_shot)
			output_note(
			    s->out,
			    "the guest runs no sandbox-agent daemon: this command was served "
			    "by one of its own, and what it keeps (secrets) ends with it");
	}
	return 0;
}

int connect_session_open(const struct session_options *o, struct session **ret, struct err *err)
{
	struct connect_addr addr = {0}, fallback = {0};
	_cleanup_keypair_ struct keypair *key = NULL;
	struct session_pin_policy policy;
	struct session *s;
	int64_t deadline = frame_io_deadline(o->timeout_ms);
	int r;

	s = calloc(1, sizeof(*s));
	if (!s) {
		err_oom(err);
		return CTL_EXIT_FAILED;
	}
	s->stream.fd = -1;
	s->next_stream = 1;
	s->timeout_ms = o->timeout_ms;
	s->out = o->out;
	r = resolve(o, &addr, &fallback, &s->instance, err);
	if (r != 0) {
		session_free(s);
		return r;
	}
	if (keys_load(o->key_path, &key, err) < 0) {
		connect_addr_dispose(&addr);
		connect_addr_dispose(&fallback);
		session_free(s);
		if (err->code == ENOENT)
			err_reword(
			    err,
			    "no host key at %s: make one with `sandbox-ctl keygen` and add its "
			    ".pub line to the guest's authorized keys",
			    o->key_path);
		return CTL_EXIT_REFUSED;
	}
	r = connect_open(&addr, deadline, &s->stream, err);
	s->direct_socket = r == 0 && (addr.kind == CONNECT_UNIX || addr.kind == CONNECT_VSOCK);
	if (r < 0 && fallback.argv) {
		if (s->out)
			output_detail(s->out, "%s; trying %s", err->msg, fallback.argv[0]);
		r = connect_open(&fallback, deadline, &s->stream, err);
	}
	connect_addr_dispose(&addr);
	connect_addr_dispose(&fallback);
	if (r < 0) {
		session_free(s);
		return err->cls == ERR_REFUSED && err->code == EINVAL ? CTL_EXIT_REFUSED
		                                                      : CTL_EXIT_CONNECT;
	}
	if (frame_io_new(s->stream.fd, &s->io, err) < 0) {
		session_free(s);
		return CTL_EXIT_FAILED;
	}
	policy = (struct session_pin_policy){
	    .pins_path = o->pins_path,
	    .instance = s->instance,
	    .accept_new = o->accept_new,
	    .replace = o->replace,
	};
	r = connect_handshake(s->io, key, &policy, left_ms(deadline), &s->ch, &s->pin, err);
	if (r != 0) {
		if (err->code == ECONNRESET || err->code == EPIPE)
			connect_stream_explain(&s->stream, err);
		fail(err, r, "%s", s->stream.what ? s->stream.what : "the agent");
		session_free(s);
		return r;
	}
	if (s->out)
		output_detail(s->out,
		              "connected to %s: guest key %s (instance %s%s), session %s (%s)",
		              s->stream.what, channel_peer_fingerprint(s->ch), s->instance,
		              s->pin == SESSION_PIN_ADDED      ? ", pinned now"
		              : s->pin == SESSION_PIN_REPLACED ? ", pin replaced"
		                                               : "",
		              channel_session_name(s->ch), channel_cipher_name(s->ch));
	r = say_hello(s, deadline, err);
	if (r != 0) {
		session_free(s);
		return r;
	}
	*ret = s;
	return 0;
}
