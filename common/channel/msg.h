/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Messages carried inside encrypted frames (docs/protocol.md, "Messages"):
 *
 *   type u16 | flags u16 | stream u32 | json_len u32 | JSON object (json_len bytes) | data
 *
 * all big-endian. The JSON part (json-c) carries the fields of the message; the data part,
 * everything after it, carries bytes as they are (file contents, log bytes, a secret's value),
 * so they are neither escaped nor copied into JSON strings.
 *
 * Streams: stream 0 is the connection itself (hello, close, ping); every operation runs on a
 * stream of its own, opened by its first message and carrying events both ways until each
 * side has sent a message with MSG_F_END. Hosts open odd ids, guests even ones.
 */
#ifndef SA_MSG_H
#define SA_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "err.h"

#define MSG_HEADER_LEN 12
#define MSG_JSON_MAX (64 * 1024)
#define MSG_JSON_DEPTH 16

enum msg_flags {
	MSG_F_END = 1 << 0, /* the sender's last message on this stream */
};
#define MSG_F_KNOWN MSG_F_END

/* Message types; names in msg_type_name(). Numbers are part of the protocol. */
enum msg_type {
	/* the connection, stream 0 (error also on any stream) */
	MSG_HELLO = 0x0001,
	MSG_CLOSE = 0x0002,
	MSG_ERROR = 0x0003,
	MSG_CANCEL = 0x0004,
	MSG_PING = 0x0005,
	MSG_PONG = 0x0006,
	MSG_OK = 0x0007,
	/* secrets */
	MSG_SECRETS_PUT = 0x0010,
	MSG_SECRETS_DROP = 0x0011,
	/* pushing a tree into the app directory */
	MSG_TREE_PUSH_BEGIN = 0x0020,
	MSG_TREE_PUSH_ENTRY = 0x0021,
	MSG_TREE_PUSH_DATA = 0x0022,
	MSG_TREE_PUSH_END = 0x0023,
	/* boots */
	MSG_BOOT_START = 0x0030,
	MSG_BOOT_EVENT = 0x0031,
	MSG_BOOT_LOG = 0x0032,
	MSG_BOOT_RESULT = 0x0033,
	/* queries and control */
	MSG_STATUS = 0x0040,
	MSG_LOGS = 0x0050,
	MSG_LOGS_DATA = 0x0051,
	MSG_STOP = 0x0060,
	MSG_RUNTIME_READ = 0x0070,
	/* checkouts: a commit as a pack stream, or fetched by the guest */
	MSG_CHECKOUT_PACK = 0x0090,
	MSG_CHECKOUT_PACK_DATA = 0x0091,
	MSG_CHECKOUT_FETCH = 0x0092,
	/* publishing: the guest commits the work tree and streams the commit's pack */
	MSG_PUBLISH_COMMIT = 0x00A0,
	MSG_PUBLISH_DATA = 0x00A1,

	MSG_VERIFY = 0x00B0,
	/* coding sessions (docs/protocol.md, "Coding sessions") */
	MSG_SESSION_START = 0x0080,
	MSG_SESSION_EVENT = 0x0081,
	MSG_SESSION_EVENTS = 0x0082,
	MSG_SESSION_ANSWER = 0x0083,
	MSG_SESSION_SEND = 0x0084,
	MSG_SESSION_CANCEL = 0x0085,
	MSG_SESSION_DIFF = 0x0086,
	MSG_SESSION_LIST = 0x0087,
};

struct msg {
	uint16_t type;
	uint16_t flags;
	uint32_t stream;
	struct json_object *json; /* an object, or NULL; owned (msg_dispose puts it) */
	const uint8_t *data; /* the data part, borrowed: from the decoded buffer, or the sender's */
	size_t data_len;
};

/* Put the JSON part and clear the message. */
void msg_dispose(struct msg *m);

/* The protocol name of a type ("secrets.put"), or NULL for an unknown type. */
const char *msg_type_name(uint16_t type);
/* The type of a name, 0 when unknown. */
uint16_t msg_type_from_name(const char *name);

/* Bytes msg_encode() will need, or 0 with err set when the message is over a limit. */
size_t msg_encoded_len(const struct msg *m, struct err *err);

/* Encode into buf (cap bytes). Returns the length, or a negative errno-like value. */
ssize_t msg_encode(const struct msg *m, uint8_t *buf, size_t cap, struct err *err);

/*
 * Decode buf into *ret (json owned by *ret, data pointing into buf). Refused (ERR_FAILED,
 * EBADMSG) when the header is short, a flag is unknown, json_len is over MSG_JSON_MAX or the
 * rest of the buffer, or the JSON part is not one object of valid UTF-8 nesting at most
 * MSG_JSON_DEPTH deep with nothing after it. Unknown types are not refused here: the receiver
 * answers them with an error on their stream.
 */
int msg_decode(const uint8_t *buf, size_t len, struct msg *ret, struct err *err);
/*
 * msg_decode() with a JSON tokener of the caller's (a channel keeps one) in *tok, made when
 * *tok is NULL and reset for each message, instead of one made and freed per message. After a
 * message that does not parse it is freed and *tok set to NULL (json_tokener_reset() does not
 * clear every state a failed parse leaves), so each message is decoded alone.
 */
struct json_tokener;
int msg_decode_with(struct json_tokener **tok, const uint8_t *buf, size_t len, struct msg *ret,
                    struct err *err);

/* An error reply {code, class, msg} on stream, from err (MSG_F_END set when end). */
int msg_error_from_err(struct msg *m, uint32_t stream, const struct err *e, bool end);
/* The struct err an error reply carries (class "refused" -> ERR_REFUSED, else ERR_FAILED). */
void msg_error_to_err(const struct msg *m, struct err *e);

/* Field helpers for the JSON part: NULL / default when missing or of another type. */
const char *msg_get_string(const struct msg *m, const char *key);
bool msg_get_int64(const struct msg *m, const char *key, int64_t *ret);

#endif
