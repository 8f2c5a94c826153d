/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The channel between real processes: a forked guest, the host in the test process or in
 * another child, socketpairs and a unix socket in between, and for the attacks a relay in the
 * test process that tampers with, replays, reorders, drops, cuts or swaps the host's frames.
 * Never AF_VSOCK (docs/test-machines.md).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "authkeys.h"
#include "channel.h"
#include "file.h"
#include "frame_io.h"
#include "keys.h"
#include "msg.h"

#define TIMEOUT_MS 10000

static struct keypair *host_key, *guest_key, *other_key;

static void keys_setup(void)
{
	struct err e;

	ck_assert_int_eq(keys_generate(&host_key, &e), 0);
	ck_assert_int_eq(keys_generate(&guest_key, &e), 0);
	ck_assert_int_eq(keys_generate(&other_key, &e), 0);
}

static void keys_teardown(void)
{
	keys_free(host_key);
	keys_free(guest_key);
	keys_free(other_key);
}

static void report(int fd, const char *fmt, ...) _printf_(2, 3);
static void report(int fd, const char *fmt, ...)
{
	char line[2048];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	(void)file_write_all(fd, line, (size_t)n);
}

static char *read_all(int fd)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);

	for (;;) {
		ssize_t n;
		if (len + 1 == cap)
			buf = realloc(buf, cap *= 2);
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	return buf;
}

static size_t count_lines(const char *s, const char *prefix)
{
	size_t n = 0;
	size_t plen = strlen(prefix);

	for (const char *p = s; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, prefix, plen) == 0)
			n++;
	return n;
}

static void make_pair(int sv[2], bool nonblock)
{
	ck_assert_int_eq(
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0, sv),
	    0);
}

/* ---- the guest process ---- */

enum {
	G_ECHO = 1 << 0,       /* say hello, answer every message with ok {len} on its stream */
	G_CONNECTION = 1 << 1, /* the stream is one connection: bodies are not scanned */
};

/*
 * Serve `sessions` sessions one after the other on one descriptor (the shape of a
 * virtio-serial port), reporting every step as a line on report_fd.
 */
_noreturn_ static void guest_main(int fd, struct authkeys *ak, int sessions, int timeout_ms,
                                  int flags, int report_fd)
{
	struct frame_io *io;
	struct err e;

	if (frame_io_new(fd, &io, &e) < 0)
		_exit(2);
	if (flags & G_CONNECTION)
		frame_io_set_connection(io);
	for (int s = 0; s < sessions; s++) {
		struct channel *ch = NULL;
		char fp[KEYS_FINGERPRINT_MAX];
		int r;

		r = channel_handshake_guest(io, guest_key, ak, timeout_ms, &ch, fp, &e);
		if (r < 0) {
			report(report_fd, "hs-err %d %s [fp=%s]", e.code, e.msg, fp);
			continue;
		}
		report(report_fd, "hs-ok %s v%u", channel_peer_fingerprint(ch),
		       channel_version(ch));
		if (flags & G_ECHO) {
			struct msg hello = {.type = MSG_HELLO};
			hello.json = json_object_new_object();
			json_object_object_add(hello.json, "agent",
			                       json_object_new_string("sandbox-agent"));
			if (channel_send(ch, &hello, TIMEOUT_MS, &e) < 0)
				report(report_fd, "send-err %s", e.msg);
			msg_dispose(&hello);
		}
		for (;;) {
			struct msg m;
			r = channel_recv(ch, &m, -1, &e);
			if (r == 0) {
				report(report_fd, "closed");
				channel_close(ch, TIMEOUT_MS, &e);
				break;
			}
			if (r < 0) {
				report(report_fd, "err %d %s [cap=%zu]", e.code, e.msg,
				       io->dec.body_cap);
				break;
			}
			report(report_fd, "msg %s %u %zu %.*s %s", msg_type_name(m.type) ?: "?",
			       m.stream, m.data_len, (int)(m.data_len > 40 ? 40 : m.data_len),
			       m.data ? (const char *)m.data : "",
			       m.json
			           ? json_object_to_json_string_ext(m.json, JSON_C_TO_STRING_PLAIN)
			           : "-");
			if ((flags & G_ECHO) && m.stream != 0) {
				struct msg ok = {
				    .type = MSG_OK, .flags = MSG_F_END, .stream = m.stream};
				ok.json = json_object_new_object();
				json_object_object_add(ok.json, "len",
				                       json_object_new_int64((int64_t)m.data_len));
				if (channel_send(ch, &ok, TIMEOUT_MS, &e) < 0)
					report(report_fd, "send-err %s", e.msg);
				msg_dispose(&ok);
			}
			msg_dispose(&m);
		}
		channel_free(ch);
	}
	frame_io_free(io);
	_exit(0);
}

struct guest {
	pid_t pid;
	int report;
};

/* Fork a guest serving fd; the caller closes its own copy of fd. */
static struct guest guest_start(int fd, struct authkeys *ak, int sessions, int timeout_ms,
                                int flags)
{
	struct guest g;
	int p[2];

	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	g.pid = fork();
	ck_assert_int_ge(g.pid, 0);
	if (g.pid == 0) {
		close(p[0]);
		guest_main(fd, ak, sessions, timeout_ms, flags, p[1]);
	}
	close(p[1]);
	g.report = p[0];
	return g;
}

/* Everything the guest reported, once it exited cleanly. */
static char *guest_finish(struct guest *g)
{
	char *out = read_all(g->report);
	int status;

	close(g->report);
	ck_assert_int_eq(waitpid(g->pid, &status, 0), g->pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "guest exited with %d: %s",
	              status, out);
	return out;
}

static struct authkeys *trusting(const struct keypair *kp)
{
	struct authkeys *ak;
	struct err e;

	ck_assert_int_eq(authkeys_new(NULL, NULL, &ak, &e), 0);
	if (kp)
		ck_assert_int_eq(authkeys_add(ak, kp->pk, "test host", &e), 0);
	return ak;
}

/* ---- a full session ---- */

static void full_session(bool nonblock)
{
	_cleanup_authkeys_ struct authkeys *ak = trusting(host_key);
	_cleanup_frame_io_ struct frame_io *io = NULL;
	_cleanup_channel_ struct channel *ch = NULL;
	_cleanup_free_ uint8_t *big = NULL;
	_cleanup_free_ char *out = NULL;
	size_t big_len = FRAME_PLAINTEXT_MAX - MSG_HEADER_LEN;
	char fp[KEYS_FINGERPRINT_MAX], line[128];
	uint8_t pad[400], *room;
	struct guest g;
	struct err e;
	struct msg m;
	int sv[2], oks = 0, r;

	make_pair(sv, nonblock);
	g = guest_start(sv[1], ak, 1, TIMEOUT_MS, G_ECHO);
	close(sv[1]);
	ck_assert_int_eq(frame_io_new(sv[0], &io, &e), 0);
	r = channel_handshake_host(io, host_key, guest_key->pk, TIMEOUT_MS, &ch, &e);
	ck_assert_msg(r == 0, "%s", e.msg);
	keys_fingerprint(guest_key->pk, fp);
	ck_assert_str_eq(channel_peer_fingerprint(ch), fp);
	ck_assert_uint_eq(channel_version(ch), 1);
	ck_assert_uint_eq(strlen(channel_session_name(ch)), 16);

	/* The guest's hello. */
	ck_assert_int_eq(channel_recv(ch, &m, TIMEOUT_MS, &e), 1);
	ck_assert_uint_eq(m.type, MSG_HELLO);
	ck_assert_str_eq(msg_get_string(&m, "agent"), "sandbox-agent");
	msg_dispose(&m);

	/* A secret in the data part, a message as large as allowed, an empty JSON object. */
	m = (struct msg){.type = MSG_SECRETS_PUT, .flags = MSG_F_END, .stream = 1};
	m.json = json_object_new_object();
	json_object_object_add(m.json, "name", json_object_new_string("GITHUB_TOKEN"));
	json_object_object_add(m.json, "scope", json_object_new_string("fetch"));
	m.data = (const uint8_t *)"ghp_notarealtoken0123";
	m.data_len = 21;
	ck_assert_int_eq(channel_send(ch, &m, TIMEOUT_MS, &e), 0);
	msg_dispose(&m);
	/*
	 * Data read straight into its frame (channel_data_room()): a small message, batched and
	 * shorter than its room, then one as large as allowed, for which the buffer grows with the
	 * small one's frame still in it. A room is used once, for at most its length; a message
	 * batched or written in between, or a flush of the frames waiting, takes it back; one byte
	 * more than a message carries gets none.
	 */
	room = channel_data_room(ch, 40, &e);
	ck_assert_ptr_nonnull(room);
	memcpy(room, "read straight into its frame", 28);
	ck_assert_int_eq(channel_send_room_batched(ch, MSG_TREE_PUSH_DATA, 7, 28, TIMEOUT_MS, &e),
	                 0);
	ck_assert_int_lt(channel_send_room_batched(ch, MSG_TREE_PUSH_DATA, 7, 1, TIMEOUT_MS, &e),
	                 0);
	ck_assert_int_eq(e.code, EINVAL);
	room = channel_data_room(ch, big_len, &e);
	ck_assert_ptr_nonnull(room);
	for (size_t i = 0; i < big_len; i++)
		room[i] = (uint8_t)('a' + i % 26);
	ck_assert_int_lt(
	    channel_send_room_batched(ch, MSG_TREE_PUSH_DATA, 9, big_len + 1, TIMEOUT_MS, &e), 0);
	ck_assert_int_eq(e.code, EINVAL);
	ck_assert_int_eq(
	    channel_send_room_batched(ch, MSG_TREE_PUSH_DATA, 9, big_len, TIMEOUT_MS, &e), 0);
	ck_assert_ptr_nonnull(channel_data_room(ch, 16, &e));
	m = (struct msg){.type = MSG_PONG, .stream = 0};
	ck_assert_int_eq(channel_send_batched(ch, &m, TIMEOUT_MS, &e), 0);
	ck_assert_int_lt(channel_send_room_batched(ch, MSG_TREE_PUSH_DATA, 7, 16, TIMEOUT_MS, &e),
	                 0);
	ck_assert_int_eq(e.code, EINVAL);
	ck_assert_ptr_nonnull(channel_data_room(ch, 16, &e)); /* behind the waiting pong */
	ck_assert_int_eq(channel_flush(ch, TIMEOUT_MS, &e), 0);
	ck_assert_int_lt(channel_send_room_batched(ch, MSG_TREE_PUSH_DATA, 7, 16, TIMEOUT_MS, &e),
	                 0);
	ck_assert_int_eq(e.code, EINVAL);
	ck_assert_ptr_nonnull(channel_data_room(ch, 16, &e)); /* nothing waits: where a send goes */
	ck_assert_int_eq(channel_send(ch, &m, TIMEOUT_MS, &e), 0);
	ck_assert_int_lt(channel_send_room_batched(ch, MSG_TREE_PUSH_DATA, 7, 16, TIMEOUT_MS, &e),
	                 0);
	ck_assert_int_eq(e.code, EINVAL);
	ck_assert_ptr_null(channel_data_room(ch, big_len + 1, &e));
	ck_assert_int_eq(e.code, EMSGSIZE);
	big = malloc(big_len);
	for (size_t i = 0; i < big_len; i++)
		big[i] = (uint8_t)(i * 7);
	m = (struct msg){.type = MSG_TREE_PUSH_DATA, .stream = 3, .data = big, .data_len = big_len};
	ck_assert_int_eq(channel_send(ch, &m, TIMEOUT_MS, &e), 0);
	/*
	 * Small messages batched: more than one batch's worth (written as batches fill), the
	 * rest written ahead of the next plain send, all in order.
	 */
	memset(pad, 'p', sizeof(pad));
	for (int k = 0; k < 200; k++) {
		m = (struct msg){
		    .type = MSG_PONG, .stream = 0, .data = pad, .data_len = sizeof(pad)};
		m.json = json_object_new_object();
		json_object_object_add(m.json, "i", json_object_new_int(k));
		ck_assert_int_eq(channel_send_batched(ch, &m, TIMEOUT_MS, &e), 0);
		msg_dispose(&m);
	}
	m = (struct msg){.type = MSG_STATUS, .flags = MSG_F_END, .stream = 5};
	m.json = json_object_new_object();
	ck_assert_int_eq(channel_send(ch, &m, TIMEOUT_MS, &e), 0);
	msg_dispose(&m);
	ck_assert_int_eq(channel_flush(ch, TIMEOUT_MS, &e), 0); /* nothing waits: a no-op */
	/* One byte more than a frame may carry is refused before anything is sent. */
	m = (struct msg){
	    .type = MSG_TREE_PUSH_DATA, .stream = 3, .data = big, .data_len = big_len + 1};
	ck_assert_int_lt(channel_send(ch, &m, TIMEOUT_MS, &e), 0);
	ck_assert_int_eq(e.code, EMSGSIZE);

	while (oks < 5) {
		ck_assert_int_eq(channel_recv(ch, &m, TIMEOUT_MS, &e), 1);
		ck_assert_uint_eq(m.type, MSG_OK);
		ck_assert(m.flags & MSG_F_END);
		oks++;
		msg_dispose(&m);
	}
	ck_assert_int_eq(channel_close(ch, TIMEOUT_MS, &e), 0);
	ck_assert_int_eq(channel_recv(ch, &m, TIMEOUT_MS, &e), 0); /* the guest closed too */
	out = guest_finish(&g);
	keys_fingerprint(host_key->pk, fp);
	snprintf(line, sizeof(line), "hs-ok %s v1\n", fp);
	ck_assert_msg(strstr(out, line), "%s", out);
	ck_assert_msg(strstr(out, "msg secrets.put 1 21 ghp_notarealtoken0123 "
	                          "{\"name\":\"GITHUB_TOKEN\",\"scope\":\"fetch\"}"),
	              "%s", out);
	snprintf(line, sizeof(line), "msg tree.push.data 3 %zu ", big_len);
	ck_assert_msg(strstr(out, line), "%s", out);
	ck_assert_msg(strstr(out, "msg status 5 0  {}"), "%s", out);
	ck_assert_msg(strstr(out, "msg tree.push.data 7 28 read straight into its frame -"), "%s",
	              out);
	snprintf(line, sizeof(line), "msg tree.push.data 9 %zu %s -", big_len,
	         "abcdefghijklmnopqrstuvwxyzabcdefghijklmn");
	ck_assert_msg(strstr(out, line), "%s", out);
	ck_assert_msg(strstr(out, "msg tree.push.data 7") < strstr(out, "msg tree.push.data 9") &&
	                  strstr(out, "msg tree.push.data 9") < strstr(out, "msg tree.push.data 3"),
	              "%s", out);
#define PONG "msg pong 0 400 pppppppppppppppppppppppppppppppppppppppp "
	ck_assert_msg(strstr(out, PONG "{\"i\":0}"), "%s", out);
	ck_assert_msg(strstr(out, PONG "{\"i\":199}") &&
	                  strstr(out, PONG "{\"i\":199}") < strstr(out, "msg status 5 0  {}"),
	              "%s", out);
#undef PONG
	ck_assert_msg(strstr(out, "closed\n"), "%s", out);
	close(sv[0]);
}

/*
 * len bytes of letters read into a room, sent on stream and flushed: the echoing guest's OK
 * names the length it got.
 */
static void room_round_trip(struct channel *ch, uint32_t stream, size_t len)
{
	uint8_t *room;
	int64_t got;
	struct err e;
	struct msg m;

	room = channel_data_room(ch, len, &e);
	ck_assert_ptr_nonnull(room);
	for (size_t i = 0; i < len; i++)
		room[i] = (uint8_t)('A' + i % 26);
	ck_assert_int_eq(
	    channel_send_room_batched(ch, MSG_TREE_PUSH_DATA, stream, len, TIMEOUT_MS, &e), 0);
	ck_assert_int_eq(channel_flush(ch, TIMEOUT_MS, &e), 0);
	ck_assert_int_eq(channel_recv(ch, &m, TIMEOUT_MS, &e), 1);
	ck_assert_uint_eq(m.type, MSG_OK);
	ck_assert(msg_get_int64(&m, "len", &got));
	ck_assert_int_eq(got, (int64_t)len);
	msg_dispose(&m);
}

/*
 * Every cipher this machine runs (handshake_local_ciphers(): AEGIS-256 and AES-256-GCM where the
 * CPU and libsodium have them, ChaCha20-Poly1305 always), forced by the host's offer: the
 * session names it, and messages up to the largest cross it both ways.
 */
START_TEST(test_each_local_cipher)
{
	uint8_t ciphers[HS_CIPHERS_MAX];
	size_t n = handshake_local_ciphers(ciphers);
	size_t big_len = FRAME_PLAINTEXT_MAX - MSG_HEADER_LEN;
	size_t fit = 4096 - FRAME_HEADER_LEN - FRAME_SEQ_LEN - MSG_HEADER_LEN - 1;
	_cleanup_free_ uint8_t *big = malloc(big_len);

	ck_assert_uint_ge(n, 1);
	ck_assert_uint_eq(ciphers[n - 1], HS_CIPHER_CHACHA20_POLY1305);
	for (size_t i = 0; i < big_len; i++)
		big[i] = (uint8_t)(i * 13);
	for (size_t c = 0; c < n; c++) {
		_cleanup_authkeys_ struct authkeys *ak = trusting(host_key);
		_cleanup_frame_io_ struct frame_io *io = NULL;
		_cleanup_channel_ struct channel *ch = NULL;
		_cleanup_hs_ struct handshake *hs = NULL;
		_cleanup_free_ char *out = NULL;
		struct hs_config cfg = {.role = HS_HOST,
		                        .identity = host_key,
		                        .expected_peer = guest_key->pk,
		                        .ciphers = &ciphers[c],
		                        .n_ciphers = 1};
		int64_t deadline = frame_io_deadline(TIMEOUT_MS);
		struct hs_output first;
		char line[96];
		int64_t len;
		struct guest g;
		struct err e;
		struct msg m;
		int sv[2];

		make_pair(sv, false);
		g = guest_start(sv[1], ak, 1, TIMEOUT_MS, G_ECHO);
		close(sv[1]);
		ck_assert_int_eq(frame_io_new(sv[0], &io, &e), 0);
		ck_assert_int_eq(handshake_new(&cfg, &hs, &e), 0);
		channel_handshake_prepare(io);
		ck_assert_int_eq(handshake_start(hs, &first, &e), 0);
		ck_assert_int_eq(file_write_all(sv[0], first.buf, first.len), 0);
		ck_assert_msg(channel_handshake_pump(io, hs, deadline, deadline, NULL, &ch, &e) ==
		                  1,
		              "%s: %s", handshake_cipher_name(ciphers[c]), e.msg);
		ck_assert_str_eq(channel_cipher_name(ch), handshake_cipher_name(ciphers[c]));
		ck_assert_int_eq(channel_recv(ch, &m, TIMEOUT_MS, &e), 1);
		ck_assert_uint_eq(m.type, MSG_HELLO);
		msg_dispose(&m);
		/*
		 * The first thing sent, read into its frame: one byte short of filling the send
		 * buffer's first 4 KiB without the cipher's tag, so the room must hold the tag too
		 * or the seal would move the frame away from the data.
		 */
		room_round_trip(ch, 6, fit);
		for (int k = 0; k < 2; k++) {
			m = (struct msg){.type = MSG_TREE_PUSH_DATA,
			                 .flags = MSG_F_END,
			                 .stream = (uint32_t)(3 + k),
			                 .data = big,
			                 .data_len = k ? 1 : big_len};
			ck_assert_int_eq(channel_send(ch, &m, TIMEOUT_MS, &e), 0);
			ck_assert_int_eq(channel_recv(ch, &m, TIMEOUT_MS, &e), 1);
			ck_assert_uint_eq(m.type, MSG_OK);
			ck_assert(msg_get_int64(&m, "len", &len));
			ck_assert_int_eq(len, k ? 1 : (int64_t)big_len);
			msg_dispose(&m);
		}
		/* Read into its frame: the room holds the cipher's tag too. */
		room_round_trip(ch, 5, big_len);
		ck_assert_int_eq(channel_close(ch, TIMEOUT_MS, &e), 0);
		ck_assert_int_eq(channel_recv(ch, &m, TIMEOUT_MS, &e), 0);
		out = guest_finish(&g);
		snprintf(line, sizeof(line), "msg tree.push.data 3 %zu ", big_len);
		ck_assert_msg(strstr(out, line), "%s", out);
		snprintf(line, sizeof(line), "msg tree.push.data 5 %zu %s -", big_len,
		         "ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFGHIJKLMN");
		ck_assert_msg(strstr(out, line), "%s", out);
		snprintf(line, sizeof(line), "msg tree.push.data 6 %zu %s -", fit,
		         "ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFGHIJKLMN");
		ck_assert_msg(strstr(out, line), "%s", out);
		close(sv[0]);
	}
}
END_TEST

START_TEST(test_session_blocking)
{
	full_session(false);
}
END_TEST

START_TEST(test_session_nonblocking)
{
	full_session(true);
}
END_TEST

START_TEST(test_host_not_authorized)
{
	_cleanup_authkeys_ struct authkeys *ak = trusting(other_key);
	_cleanup_frame_io_ struct frame_io *io = NULL;
	_cleanup_free_ char *out = NULL;
	struct channel *ch = NULL;
	char fp[KEYS_FINGERPRINT_MAX], expect[256];
	struct guest g;
	struct err e;
	int sv[2];

	make_pair(sv, false);
	g = guest_start(sv[1], ak, 1, TIMEOUT_MS, G_ECHO);
	close(sv[1]);
	ck_assert_int_eq(frame_io_new(sv[0], &io, &e), 0);
	ck_assert_int_lt(channel_handshake_host(io, host_key, NULL, TIMEOUT_MS, &ch, &e), 0);
	ck_assert_ptr_null(ch);
	ck_assert_int_eq(e.cls, ERR_REFUSED);
	ck_assert_int_eq(e.code, EKEYREJECTED);
	ck_assert_msg(strstr(e.msg, "not in its authorized keys"), "%s", e.msg);
	/* Whatever comes next is never read as a message: the guest is gone. */
	(void)send(sv[0], "\x00\x00\x00\x10garbage-message!", 20, MSG_NOSIGNAL);
	close(sv[0]);
	out = guest_finish(&g);
	keys_fingerprint(host_key->pk, fp);
	snprintf(expect, sizeof(expect), "hs-err %d host key %s is not authorized [fp=%s]\n",
	         EKEYREJECTED, fp, fp);
	ck_assert_str_eq(out, expect);
}
END_TEST

START_TEST(test_pinned_guest_key_changed)
{
	_cleanup_authkeys_ struct authkeys *ak = trusting(host_key);
	_cleanup_frame_io_ struct frame_io *io = NULL;
	_cleanup_free_ char *out = NULL;
	struct channel *ch = NULL;
	struct guest g;
	struct err e;
	int sv[2];

	make_pair(sv, false);
	g = guest_start(sv[1], ak, 1, TIMEOUT_MS, G_ECHO);
	close(sv[1]);
	ck_assert_int_eq(frame_io_new(sv[0], &io, &e), 0);
	/* We pinned other_key for this guest. */
	ck_assert_int_lt(channel_handshake_host(io, host_key, other_key->pk, TIMEOUT_MS, &ch, &e),
	                 0);
	ck_assert_int_eq(e.code, EKEYREJECTED);
	ck_assert_msg(strstr(e.msg, "is not the pinned key"), "%s", e.msg);
	close(sv[0]);
	out = guest_finish(&g);
	ck_assert_msg(strstr(out, "hs-err") && strstr(out, "the host refused the connection"), "%s",
	              out);
}
END_TEST

START_TEST(test_garbage_before_marker)
{
	_cleanup_authkeys_ struct authkeys *ak = trusting(host_key);
	_cleanup_frame_io_ struct frame_io *io = NULL;
	_cleanup_channel_ struct channel *ch = NULL;
	_cleanup_free_ char *out = NULL;
	struct guest g;
	struct err e;
	struct msg m;
	int sv[2];

	make_pair(sv, false);
	g = guest_start(sv[1], ak, 1, TIMEOUT_MS, G_ECHO);
	close(sv[1]);
	/* A login banner, binary junk and a frame of a session long gone. */
	static const char junk[] = "Welcome!\r\n\xff\xfe\x00\x00\x00\x05stale\xff\xff";
	ck_assert_int_eq(file_write_all(sv[0], junk, sizeof(junk) - 1), 0);
	ck_assert_int_eq(frame_io_new(sv[0], &io, &e), 0);
	ck_assert_msg(channel_handshake_host(io, host_key, NULL, TIMEOUT_MS, &ch, &e) == 0, "%s",
	              e.msg);
	ck_assert_int_eq(channel_recv(ch, &m, TIMEOUT_MS, &e), 1);
	msg_dispose(&m);
	ck_assert_int_eq(channel_close(ch, TIMEOUT_MS, &e), 0);
	ck_assert_int_eq(channel_recv(ch, &m, TIMEOUT_MS, &e), 0);
	close(sv[0]);
	out = guest_finish(&g);
	ck_assert_msg(strstr(out, "hs-ok") && strstr(out, "closed"), "%s", out);
}
END_TEST

START_TEST(test_oversized_length_after_handshake)
{
	_cleanup_authkeys_ struct authkeys *ak = trusting(host_key);
	_cleanup_frame_io_ struct frame_io *io = NULL;
	_cleanup_channel_ struct channel *ch = NULL;
	_cleanup_free_ char *out = NULL;
	char expect[128];
	const char *cap;
	struct guest g;
	struct err e;
	int sv[2];

	make_pair(sv, false);
	g = guest_start(sv[1], ak, 1, TIMEOUT_MS, 0);
	close(sv[1]);
	ck_assert_int_eq(frame_io_new(sv[0], &io, &e), 0);
	ck_assert_int_eq(channel_handshake_host(io, host_key, NULL, TIMEOUT_MS, &ch, &e), 0);
	/* A length of 2 GiB and nothing behind it: refused at once, nothing allocated. */
	ck_assert_int_eq(file_write_all(sv[0], "\x7f\xff\xff\xff", 4), 0);
	out = guest_finish(&g);
	snprintf(
	    expect, sizeof(expect),
	    "err %d invalid frame: length 2147483647 is over the limit of %d bytes [cap=", EMSGSIZE,
	    FRAME_SEQ_LEN + FRAME_PLAINTEXT_MAX +
	        (strcmp(channel_cipher_name(ch), "aegis256") ? FRAME_TAG_LEN : FRAME_TAG_MAX));
	ck_assert_msg((cap = strstr(out, expect)), "%s", out);
	/* The frame buffer is still the size the handshake needed. */
	ck_assert_uint_le(strtoul(cap + strlen(expect), NULL, 10), FRAME_HANDSHAKE_MAX);
	close(sv[0]);
}
END_TEST

START_TEST(test_silent_peer_times_out)
{
	_cleanup_authkeys_ struct authkeys *ak = trusting(host_key);
	_cleanup_free_ char *out = NULL;
	struct guest g;
	int sv[2];

	make_pair(sv, false);
	g = guest_start(sv[1], ak, 1, 200, 0);
	close(sv[1]);
	out = guest_finish(&g); /* returns although we never write or close */
	ck_assert_msg(strstr(out, "hs-err 110 the handshake did not complete within 200 ms"), "%s",
	              out);
	close(sv[0]);
}
END_TEST

START_TEST(test_endless_garbage_bounded)
{
	_cleanup_authkeys_ struct authkeys *ak = trusting(host_key);
	_cleanup_free_ char *out = NULL;
	char junk[4096];
	struct guest g;
	int sv[2];

	make_pair(sv, false);
	g = guest_start(sv[1], ak, 1, TIMEOUT_MS, 0);
	close(sv[1]);
	memset(junk, 'A', sizeof(junk));
	/* Far more than the budget; the guest stops reading and hangs up. */
	for (int i = 0; i < 64; i++)
		if (send(sv[0], junk, sizeof(junk), MSG_NOSIGNAL) < 0)
			break;
	out = guest_finish(&g);
	ck_assert_msg(strstr(out, "hs-err 7 handshake: the peer sent more bytes than"), "%s", out);
	close(sv[0]);
}
END_TEST

/*
 * Bytes past the budget that one read took in with the rest are refused at once, not thrown
 * away for a read that waits until the deadline: 200 KiB of garbage wait in a pipe whose
 * writer stays open, and a read takes them at once.
 */
START_TEST(test_budget_cut_within_one_read)
{
	_cleanup_frame_io_ struct frame_io *io = NULL;
	static char junk[200 * 1024];
	enum frame_event ev;
	struct err e;
	int p[2];

	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	ck_assert_int_ge(fcntl(p[1], F_SETPIPE_SZ, 1024 * 1024), (int)sizeof(junk));
	memset(junk, 'A', sizeof(junk));
	ck_assert_int_eq(file_write_all(p[1], junk, sizeof(junk)), 0);
	ck_assert_int_eq(frame_io_new(p[0], &io, &e), 0);
	channel_handshake_prepare(io);
	ck_assert_int_eq(frame_io_next(io, frame_io_deadline(TIMEOUT_MS), &ev, &e), -E2BIG);
	ck_assert_msg(strstr(e.msg, "more bytes than this stage allows"), "%s", e.msg);
	close(p[0]);
	close(p[1]);
}
END_TEST

/* ---- a relay between a host child and a guest child, acting on the host's frames ---- */

enum mitm_action {
	M_NONE,
	M_TAMPER,  /* flip a bit of session frame k */
	M_REPLAY,  /* send frame k twice */
	M_REORDER, /* swap frames k and k+1 */
	M_DROP,    /* leave frame k out */
	M_CUT_MID, /* end the stream in the middle of frame k */
	M_CUT,     /* end the stream just before frame k */
	M_FOREIGN, /* frame k of another session instead of ours */
};

#define MITM_FRAMES 16

struct mitm {
	enum mitm_action action;
	size_t k;
	const struct mitm *foreign;
	uint8_t *frames[MITM_FRAMES]; /* session frames seen, header included */
	size_t frame_len[MITM_FRAMES];
	size_t nframes;
	uint8_t *raw; /* every byte the host sent */
	size_t raw_len;
};

static void mitm_dispose(struct mitm *m)
{
	for (size_t i = 0; i < m->nframes; i++)
		free(m->frames[i]);
	free(m->raw);
}

#define HOST_MESSAGES 5

/* The host: hello, HOST_MESSAGES messages on stream 1, close; then it exits. */
_noreturn_ static void host_main(int fd)
{
	struct frame_io *io;
	struct channel *ch;
	struct err e;
	struct msg m = {.type = MSG_HELLO};

	if (frame_io_new(fd, &io, &e) < 0 ||
	    channel_handshake_host(io, host_key, NULL, TIMEOUT_MS, &ch, &e) < 0)
		_exit(3);
	if (channel_send(ch, &m, TIMEOUT_MS, &e) < 0)
		_exit(4);
	for (int i = 1; i <= HOST_MESSAGES; i++) {
		char data[16];
		snprintf(data, sizeof(data), "chunk%d", i);
		m = (struct msg){.type = MSG_TREE_PUSH_DATA,
		                 .stream = 1,
		                 .data = (uint8_t *)data,
		                 .data_len = strlen(data)};
		if (channel_send(ch, &m, TIMEOUT_MS, &e) < 0)
			_exit(5);
	}
	channel_close(ch, TIMEOUT_MS, &e);
	channel_free(ch);
	frame_io_free(io);
	_exit(0);
}

static void forward(int fd, const uint8_t *buf, size_t len)
{
	(void)send(fd, buf, len, MSG_NOSIGNAL);
}

/* Act on one whole session frame of the host's. */
static bool mitm_frame(struct mitm *m, int guest_fd, const uint8_t *frame, size_t len,
                       uint8_t **held, size_t *held_len)
{
	size_t idx = m->nframes;

	ck_assert_uint_lt(idx, MITM_FRAMES);
	m->frames[idx] = malloc(len);
	memcpy(m->frames[idx], frame, len);
	m->frame_len[idx] = len;
	m->nframes++;
	if (m->action == M_REORDER && idx == m->k + 1) {
		forward(guest_fd, frame, len);
		forward(guest_fd, *held, *held_len);
		return false;
	}
	if (idx != m->k || m->action == M_NONE) {
		forward(guest_fd, frame, len);
		return false;
	}
	switch (m->action) {
	case M_TAMPER: {
		uint8_t copy[4096];
		memcpy(copy, frame, len);
		copy[FRAME_HEADER_LEN + FRAME_SEQ_LEN + 1] ^= 0x20;
		forward(guest_fd, copy, len);
		return false;
	}
	case M_REPLAY:
		forward(guest_fd, frame, len);
		forward(guest_fd, frame, len);
		return false;
	case M_REORDER:
		*held = m->frames[idx];
		*held_len = len;
		return false;
	case M_DROP:
		return false;
	case M_CUT_MID:
		forward(guest_fd, frame, len / 2);
		return true;
	case M_CUT:
		return true;
	case M_FOREIGN:
		ck_assert_uint_gt(m->foreign->nframes, idx);
		forward(guest_fd, m->foreign->frames[idx], m->foreign->frame_len[idx]);
		return false;
	default:
		return false;
	}
}

/* Run host child <-> relay <-> guest child; returns the guest's report. */
static char *mitm_session(struct mitm *m, struct authkeys *ak)
{
	struct frame_decoder dec;
	uint8_t *held = NULL;
	size_t held_len = 0, hs_frames = 0;
	bool host_eof = false, cut = false;
	int hp[2], gp[2], status;
	struct guest g;
	pid_t host;

	make_pair(hp, false);
	make_pair(gp, false);
	host = fork();
	ck_assert_int_ge(host, 0);
	if (host == 0)
		host_main(hp[1]);
	close(hp[1]);
	g = guest_start(gp[1], ak, 1, TIMEOUT_MS, 0);
	close(gp[1]);
	frame_decoder_init(&dec, FRAME_HANDSHAKE_MAX, true);
	for (;;) {
		struct pollfd p[2];
		int np = 0, hi = -1, gi;
		uint8_t buf[8192];
		ssize_t n;

		if (!host_eof) {
			p[np] = (struct pollfd){.fd = hp[0], .events = POLLIN};
			hi = np++;
		}
		p[np] = (struct pollfd){.fd = gp[0], .events = POLLIN};
		gi = np++;
		ck_assert_int_gt(poll(p, (nfds_t)np, TIMEOUT_MS), 0);
		if (p[gi].revents) {
			n = read(gp[0], buf, sizeof(buf));
			if (n <= 0)
				break; /* the guest is done */
			forward(hp[0], buf, (size_t)n);
		}
		if (hi < 0 || !p[hi].revents)
			continue;
		n = read(hp[0], buf, sizeof(buf));
		if (n <= 0) {
			host_eof = true;
			shutdown(gp[0], SHUT_WR);
			continue;
		}
		m->raw = realloc(m->raw, m->raw_len + (size_t)n);
		memcpy(m->raw + m->raw_len, buf, (size_t)n);
		m->raw_len += (size_t)n;
		for (size_t off = 0; off < (size_t)n && !cut;) {
			enum frame_event ev;
			struct err e;
			ssize_t used =
			    frame_decoder_feed(&dec, buf + off, (size_t)n - off, &ev, &e);
			const uint8_t *body;
			uint8_t frame[4096];
			size_t blen;

			ck_assert_int_ge(used, 0);
			off += (size_t)used;
			if (ev == FRAME_EV_MARKER) {
				forward(gp[0], frame_marker, FRAME_MARKER_LEN);
				continue;
			}
			if (ev != FRAME_EV_FRAME)
				continue;
			body = frame_decoder_body(&dec, &blen);
			ck_assert_uint_le(blen, sizeof(frame) - FRAME_HEADER_LEN);
			frame_put_header(frame, (uint32_t)blen);
			memcpy(frame + FRAME_HEADER_LEN, body, blen);
			if (hs_frames < 2) {
				forward(gp[0], frame, FRAME_HEADER_LEN + blen);
				if (++hs_frames == 2)
					frame_decoder_set_mode(&dec, FRAME_SESSION_MAX, false);
				continue;
			}
			if (mitm_frame(m, gp[0], frame, FRAME_HEADER_LEN + blen, &held,
			               &held_len)) {
				cut = true;
				shutdown(gp[0], SHUT_WR);
			}
		}
	}
	frame_decoder_dispose(&dec);
	close(hp[0]);
	close(gp[0]);
	ck_assert_int_eq(waitpid(host, &status, 0), host);
	return guest_finish(&g);
}

/* The guest received exactly `good` messages, then failed with a message containing what. */
static void expect_detected(enum mitm_action action, size_t k, size_t good, const char *what)
{
	_cleanup_authkeys_ struct authkeys *ak = trusting(host_key);
	_cleanup_free_ char *out = NULL;
	struct mitm m = {.action = action, .k = k};

	out = mitm_session(&m, ak);
	ck_assert_msg(strstr(out, "hs-ok"), "%s", out);
	ck_assert_msg(count_lines(out, "msg ") == good, "%zu messages expected: %s", good, out);
	ck_assert_msg(count_lines(out, "err ") == 1 && strstr(out, what), "expected '%s': %s", what,
	              out);
	ck_assert_msg(!strstr(out, "closed"), "%s", out);
	mitm_dispose(&m);
}

START_TEST(test_relay_untouched)
{
	_cleanup_authkeys_ struct authkeys *ak = trusting(host_key);
	_cleanup_free_ char *out = NULL;
	struct mitm m = {.action = M_NONE};

	out = mitm_session(&m, ak);
	ck_assert_uint_eq(count_lines(out, "msg "), 1 + HOST_MESSAGES);
	ck_assert_msg(strstr(out, "msg tree.push.data 1 6 chunk5 -\nclosed\n"), "%s", out);
	ck_assert_uint_eq(m.nframes, 1 + HOST_MESSAGES + 1);
	mitm_dispose(&m);
}
END_TEST

START_TEST(test_tampered_frame)
{
	expect_detected(M_TAMPER, 2, 2,
	                "frame 2 failed authentication: it was tampered with or belongs to "
	                "another session");
}
END_TEST

START_TEST(test_replayed_frame)
{
	expect_detected(M_REPLAY, 2, 3,
	                "replayed frame: sequence number 2 was already received (expected 3)");
}
END_TEST

START_TEST(test_reordered_frame)
{
	expect_detected(M_REORDER, 2, 2,
	                "frame out of order: sequence number 3 where 2 was expected");
}
END_TEST

START_TEST(test_dropped_frame)
{
	expect_detected(M_DROP, 3, 3, "frame out of order: sequence number 4 where 3 was expected");
}
END_TEST

START_TEST(test_truncated_mid_frame)
{
	expect_detected(M_CUT_MID, 4, 4,
	                "ended in the middle of frame 4: the stream was truncated");
}
END_TEST

START_TEST(test_truncated_at_frame_boundary)
{
	/* Everything but the close message: still a truncation. */
	expect_detected(M_CUT, 1 + HOST_MESSAGES, 1 + HOST_MESSAGES,
	                "ended after 6 frames without a close message");
}
END_TEST

START_TEST(test_frame_from_another_session)
{
	_cleanup_authkeys_ struct authkeys *ak = trusting(host_key);
	_cleanup_free_ char *first = NULL, *out = NULL;
	struct mitm rec = {.action = M_NONE}, m = {.action = M_FOREIGN, .k = 2};

	/* Same host key, same guest key, same messages: only the session differs. */
	first = mitm_session(&rec, ak);
	ck_assert_msg(strstr(first, "closed"), "%s", first);
	m.foreign = &rec;
	out = mitm_session(&m, ak);
	ck_assert_uint_eq(count_lines(out, "msg "), 2);
	ck_assert_msg(strstr(out, "frame 2 failed authentication"), "%s", out);
	mitm_dispose(&rec);
	mitm_dispose(&m);
}
END_TEST

START_TEST(test_recorded_session_replayed)
{
	_cleanup_authkeys_ struct authkeys *ak = trusting(host_key);
	_cleanup_free_ char *first = NULL, *out = NULL;
	struct mitm rec = {.action = M_NONE};
	struct guest g;
	int sv[2];

	first = mitm_session(&rec, ak);
	ck_assert_msg(strstr(first, "closed"), "%s", first);
	/* Play every byte the host sent to a fresh guest that trusts the same key. */
	make_pair(sv, false);
	g = guest_start(sv[1], ak, 1, TIMEOUT_MS, 0);
	close(sv[1]);
	ck_assert_int_eq(file_write_all(sv[0], rec.raw, rec.raw_len), 0);
	shutdown(sv[0], SHUT_WR);
	out = guest_finish(&g);
	ck_assert_msg(strstr(out, "hs-err 74 the signature of host key") &&
	                  strstr(out, "does not verify over this handshake"),
	              "%s", out);
	ck_assert_uint_eq(count_lines(out, "msg "), 0);
	close(sv[0]);
	mitm_dispose(&rec);
}
END_TEST

/* ---- one stream, several sessions (virtio-serial) ---- */

/*
 * A guest serving `sessions` sessions on a new stream, and a first host that says hello,
 * starts a frame of 256 bytes and dies after 7 of them. The host's end of the stream is
 * returned.
 */
static int host_cut_short(struct authkeys *ak, int sessions, int flags, struct guest *g)
{
	struct frame_io *io;
	struct channel *ch;
	struct err e;
	struct msg m = {.type = MSG_HELLO};
	int sv[2];

	make_pair(sv, false);
	*g = guest_start(sv[1], ak, sessions, TIMEOUT_MS, G_ECHO | flags);
	close(sv[1]);
	ck_assert_int_eq(frame_io_new(sv[0], &io, &e), 0);
	ck_assert_int_eq(channel_handshake_host(io, host_key, NULL, TIMEOUT_MS, &ch, &e), 0);
	ck_assert_int_eq(channel_send(ch, &m, TIMEOUT_MS, &e), 0);
	ck_assert_int_eq(file_write_all(sv[0], "\x00\x00\x01\x00partial", 11), 0);
	channel_free(ch);
	frame_io_free(io);
	return sv[0];
}

START_TEST(test_new_session_on_the_same_stream)
{
	_cleanup_authkeys_ struct authkeys *ak = trusting(host_key);
	_cleanup_free_ char *out = NULL;
	struct frame_io *io;
	struct channel *ch;
	struct guest g;
	struct err e;
	struct msg m;
	int fd;

	/* The first host says hello, starts a frame and dies half way through it... */
	fd = host_cut_short(ak, 2, 0, &g);
	/* ...and the next one starts over on the same stream, with the guest's unread hello
	 * and its session's leftovers still in it. */
	ck_assert_int_eq(frame_io_new(fd, &io, &e), 0);
	ck_assert_msg(channel_handshake_host(io, host_key, NULL, TIMEOUT_MS, &ch, &e) == 0, "%s",
	              e.msg);
	ck_assert_int_eq(channel_recv(ch, &m, TIMEOUT_MS, &e), 1);
	ck_assert_uint_eq(m.type, MSG_HELLO);
	msg_dispose(&m);
	ck_assert_int_eq(channel_close(ch, TIMEOUT_MS, &e), 0);
	ck_assert_int_eq(channel_recv(ch, &m, TIMEOUT_MS, &e), 0);
	channel_free(ch);
	frame_io_free(io);
	close(fd);
	out = guest_finish(&g);
	ck_assert_uint_eq(count_lines(out, "hs-ok"), 2);
	ck_assert_msg(strstr(out, "err 104 the peer started a new session (resync marker) after "
	                          "frame 1"),
	              "%s", out);
	ck_assert_msg(strstr(out, "closed\n"), "%s", out);
}
END_TEST

/*
 * A marker inside a frame's body: on a stream of several sessions (virtio-serial) the guest
 * takes it for a new session; on one connection (a socket) it is body bytes like any other.
 */
static char *marker_in_body(int flags)
{
	_cleanup_authkeys_ struct authkeys *ak = trusting(host_key);
	struct guest g;
	int fd = host_cut_short(ak, 1, flags, &g);

	ck_assert_int_eq(file_write_all(fd, frame_marker, FRAME_MARKER_LEN), 0);
	shutdown(fd, SHUT_WR);
	close(fd);
	return guest_finish(&g);
}

START_TEST(test_marker_in_body_by_transport)
{
	_cleanup_free_ char *serial = marker_in_body(0);
	_cleanup_free_ char *socket = marker_in_body(G_CONNECTION);

	ck_assert_msg(strstr(serial, "err 104 the peer started a new session (resync marker) "
	                             "after frame 1"),
	              "%s", serial);
	ck_assert_msg(!strstr(socket, "resync marker"), "%s", socket);
	ck_assert_msg(strstr(socket, "\nerr "), "%s", socket);
}
END_TEST

/* ---- authorized keys re-read per connection ---- */

static int connect_to(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* A daemon-like guest: accept `n` connections on a unix socket, one session each. */
static struct guest daemon_start(int lfd, struct authkeys *ak, int n)
{
	struct guest g;
	int p[2];

	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	g.pid = fork();
	ck_assert_int_ge(g.pid, 0);
	if (g.pid == 0) {
		close(p[0]);
		for (int i = 0; i < n; i++) {
			int cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
			struct frame_io *io;
			struct channel *ch;
			struct err e;
			char fp[KEYS_FINGERPRINT_MAX];
			struct msg m;

			if (cfd < 0 || frame_io_new(cfd, &io, &e) < 0)
				_exit(2);
			if (channel_handshake_guest(io, guest_key, ak, TIMEOUT_MS, &ch, fp, &e) <
			    0) {
				report(p[1], "conn %d refused %s", i, e.msg);
			} else {
				report(p[1], "conn %d accepted %s", i,
				       channel_peer_fingerprint(ch));
				while (channel_recv(ch, &m, TIMEOUT_MS, &e) > 0)
					msg_dispose(&m);
				channel_close(ch, TIMEOUT_MS, &e);
				channel_free(ch);
			}
			frame_io_free(io);
			close(cfd);
		}
		_exit(0);
	}
	close(p[1]);
	g.report = p[0];
	return g;
}

static int host_connect(const char *path, struct err *e)
{
	_cleanup_frame_io_ struct frame_io *io = NULL;
	_cleanup_channel_ struct channel *ch = NULL;
	_cleanup_close_ int fd = connect_to(path);
	struct msg m;
	int r;

	ck_assert_int_eq(frame_io_new(fd, &io, e), 0);
	r = channel_handshake_host(io, host_key, NULL, TIMEOUT_MS, &ch, e);
	if (r < 0)
		return r;
	ck_assert_int_eq(channel_close(ch, TIMEOUT_MS, e), 0);
	ck_assert_int_eq(channel_recv(ch, &m, TIMEOUT_MS, e), 0);
	return 0;
}

START_TEST(test_keys_added_and_revoked_without_restart)
{
	char dir[] = "/tmp/test-channel-XXXXXX", keydir[64], sock[64], keyfile[96], sys[96];
	_cleanup_authkeys_ struct authkeys *ak = NULL;
	_cleanup_free_ char *line = NULL, *out = NULL;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char fp[KEYS_FINGERPRINT_MAX];
	struct guest g;
	struct err e;
	int lfd;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(keydir, sizeof(keydir), "%s/keys.d", dir);
	snprintf(sock, sizeof(sock), "%s/agent.sock", dir);
	snprintf(keyfile, sizeof(keyfile), "%s/ci-runner.pub", keydir);
	snprintf(sys, sizeof(sys), "%s/authorized_keys", dir);
	ck_assert_int_eq(mkdir(keydir, 0755), 0);
	/* The image's own file trusts someone else only. */
	line = keys_format_public(other_key->pk, "image");
	ck_assert_int_eq(file_write_atomic(sys, line, strlen(line), 0644, (uid_t)-1, (gid_t)-1, &e),
	                 0);
	free(line);
	ck_assert_int_eq(authkeys_new(sys, keydir, &ak, &e), 0);

	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	ck_assert_int_eq(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(lfd, 4), 0);
	g = daemon_start(lfd, ak, 3);
	close(lfd);

	/* 1: not listed anywhere: refused. */
	ck_assert_int_lt(host_connect(sock, &e), 0);
	ck_assert_int_eq(e.code, EKEYREJECTED);
	/* 2: a controller drops our key into the directory: accepted, same daemon. */
	line = keys_format_public(host_key->pk, "ci-runner");
	line = realloc(line, strlen(line) + 2);
	strcat(line, "\n");
	ck_assert_int_eq(
	    file_write_atomic(keyfile, line, strlen(line), 0644, (uid_t)-1, (gid_t)-1, &e), 0);
	ck_assert_msg(host_connect(sock, &e) == 0, "%s", e.msg);
	/* 3: and removes it again: refused from the next connection on. */
	ck_assert_int_eq(unlink(keyfile), 0);
	ck_assert_int_lt(host_connect(sock, &e), 0);
	ck_assert_int_eq(e.code, EKEYREJECTED);

	out = guest_finish(&g);
	keys_fingerprint(host_key->pk, fp);
	ck_assert_msg(strstr(out, "conn 0 refused host key") && strstr(out, "conn 2 refused"), "%s",
	              out);
	ck_assert_msg(strstr(out, "conn 1 accepted ") && strstr(out, fp), "%s", out);
	unlink(sock);
	unlink(sys);
	rmdir(keydir);
	rmdir(dir);
}
END_TEST

START_TEST(test_unreadable_authorized_keys_fail_closed)
{
	char dir[] = "/tmp/test-channel-XXXXXX", sub[64];
	_cleanup_authkeys_ struct authkeys *ak = NULL;
	_cleanup_frame_io_ struct frame_io *io = NULL;
	struct channel *ch = NULL;
	char fp[KEYS_FINGERPRINT_MAX];
	struct err e;
	int sv[2];

	ck_assert_ptr_nonnull(mkdtemp(dir));
	/* A path that cannot be read (not missing): no connection is accepted, not even from a
	 * key that would otherwise be trusted. */
	snprintf(sub, sizeof(sub), "%s/file", dir);
	ck_assert_int_eq(file_write_atomic(sub, "x", 1, 0644, (uid_t)-1, (gid_t)-1, &e), 0);
	strcat(sub, "/authorized_keys");
	ck_assert_int_eq(authkeys_new(sub, NULL, &ak, &e), 0);
	ck_assert_int_eq(authkeys_add(ak, host_key->pk, "in memory", &e), 0);
	make_pair(sv, false);
	ck_assert_int_eq(frame_io_new(sv[1], &io, &e), 0);
	ck_assert_int_lt(channel_handshake_guest(io, guest_key, ak, 100, &ch, fp, &e), 0);
	ck_assert_msg(strstr(e.msg, "cannot load the authorized keys"), "%s", e.msg);
	ck_assert_ptr_null(ch);
	close(sv[0]);
	close(sv[1]);
	*strrchr(sub, '/') = '\0';
	unlink(sub);
	rmdir(dir);
}
END_TEST

static Suite *channel_suite(void)
{
	Suite *s = suite_create("channel");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, keys_setup, keys_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_session_blocking);
	tcase_add_test(tc, test_each_local_cipher);
	tcase_add_test(tc, test_session_nonblocking);
	tcase_add_test(tc, test_host_not_authorized);
	tcase_add_test(tc, test_pinned_guest_key_changed);
	tcase_add_test(tc, test_garbage_before_marker);
	tcase_add_test(tc, test_marker_in_body_by_transport);
	tcase_add_test(tc, test_oversized_length_after_handshake);
	tcase_add_test(tc, test_silent_peer_times_out);
	tcase_add_test(tc, test_endless_garbage_bounded);
	tcase_add_test(tc, test_budget_cut_within_one_read);
	tcase_add_test(tc, test_relay_untouched);
	tcase_add_test(tc, test_tampered_frame);
	tcase_add_test(tc, test_replayed_frame);
	tcase_add_test(tc, test_reordered_frame);
	tcase_add_test(tc, test_dropped_frame);
	tcase_add_test(tc, test_truncated_mid_frame);
	tcase_add_test(tc, test_truncated_at_frame_boundary);
	tcase_add_test(tc, test_frame_from_another_session);
	tcase_add_test(tc, test_recorded_session_replayed);
	tcase_add_test(tc, test_new_session_on_the_same_stream);
	tcase_add_test(tc, test_keys_added_and_revoked_without_restart);
	tcase_add_test(tc, test_unreadable_authorized_keys_fail_closed);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(channel_suite());
	int failed;

	signal(SIGPIPE, SIG_IGN);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
