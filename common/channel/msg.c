/* SPDX-License-Identifier: Apache-2.0 */
#include "msg.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "json_strict.h"
#include "frame.h"

static const struct {
	uint16_t type;
	const char *name;
} type_names[] = {
    {MSG_HELLO, "hello"},
    {MSG_CLOSE, "close"},
    {MSG_ERROR, "error"},
    {MSG_CANCEL, "cancel"},
    {MSG_PING, "ping"},
    {MSG_PONG, "pong"},
    {MSG_OK, "ok"},
    {MSG_SECRETS_PUT, "secrets.put"},
    {MSG_SECRETS_DROP, "secrets.drop"},
    {MSG_TREE_PUSH_BEGIN, "tree.push.begin"},
    {MSG_TREE_PUSH_ENTRY, "tree.push.entry"},
    {MSG_TREE_PUSH_DATA, "tree.push.data"},
    {MSG_TREE_PUSH_END, "tree.push.end"},
    {MSG_BOOT_START, "boot.start"},
    {MSG_BOOT_EVENT, "boot.event"},
    {MSG_BOOT_LOG, "boot.log"},
    {MSG_BOOT_RESULT, "boot.result"},
    {MSG_STATUS, "status"},
    {MSG_LOGS, "logs"},
    {MSG_LOGS_DATA, "logs.data"},
    {MSG_STOP, "stop"},
    {MSG_RUNTIME_READ, "runtime.read"},
    {MSG_CHECKOUT_PACK, "checkout.pack"},
    {MSG_CHECKOUT_PACK_DATA, "checkout.pack.data"},
    {MSG_CHECKOUT_FETCH, "checkout.fetch"},
    {MSG_PUBLISH_COMMIT, "publish.commit"},
    {MSG_PUBLISH_DATA, "publish.data"},
    {MSG_VERIFY, "verify"},
    {MSG_SESSION_START, "session.start"},
    {MSG_SESSION_EVENT, "session.event"},
    {MSG_SESSION_EVENTS, "session.events"},
    {MSG_SESSION_ANSWER, "session.answer"},
    {MSG_SESSION_SEND, "session.send"},
    {MSG_SESSION_CANCEL, "session.cancel"},
    {MSG_SESSION_DIFF, "session.diff"},
    {MSG_SESSION_LIST, "session.list"},
};

const char *msg_type_name(uint16_t type)
{
	for (size_t i = 0; i < ELEMENTSOF(type_names); i++)
		if (type_names[i].type == type)
			return type_names[i].name;
	return NULL;
}

uint16_t msg_type_from_name(const char *name)
{
	for (size_t i = 0; i < ELEMENTSOF(type_names); i++)
		if (strcmp(type_names[i].name, name) == 0)
			return type_names[i].type;
	return 0;
}

void msg_dispose(struct msg *m)
{
	if (m->json)
		json_object_put(m->json);
	memset(m, 0, sizeof(*m));
}

static const char *json_text(const struct msg *m, size_t *ret_len)
{
	if (!m->json) {
		*ret_len = 0;
		return "";
	}
	return json_object_to_json_string_length(
	    m->json, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, ret_len);
}

size_t msg_encoded_len(const struct msg *m, struct err *err)
{
	size_t jlen, total;
	const char *text;

	if (m->flags & ~MSG_F_KNOWN) {
		err_set(err, ERR_FAILED, EINVAL, "message flags 0x%x are not defined", m->flags);
		return 0;
	}
	if (m->json && !json_object_is_type(m->json, json_type_object)) {
		err_set(err, ERR_FAILED, EINVAL, "the JSON part of a message must be an object");
		return 0;
	}
	text = json_text(m, &jlen);
	if (!text) {
		err_oom(err);
		return 0;
	}
	if (jlen > MSG_JSON_MAX) {
		err_set(err, ERR_FAILED, EMSGSIZE,
		        "the JSON part of a %s message is %zu bytes, over the limit of %d",
		        msg_type_name(m->type) ?: "?", jlen, MSG_JSON_MAX);
		return 0;
	}
	total = MSG_HEADER_LEN + jlen;
	if (m->data_len > FRAME_PLAINTEXT_MAX - total) {
		err_set(err, ERR_FAILED, EMSGSIZE,
		        "a %s message of %zu bytes is over the limit of %d bytes",
		        msg_type_name(m->type) ?: "?", total + m->data_len, FRAME_PLAINTEXT_MAX);
		return 0;
	}
	return total + m->data_len;
}

ssize_t msg_encode(const struct msg *m, uint8_t *buf, size_t cap, struct err *err)
{
	size_t total = msg_encoded_len(m, err), jlen;
	const char *text;

	if (total == 0)
		return err_ret(err);
	if (total > cap)
		return err_set(err, ERR_FAILED, ENOBUFS, "message buffer too small");
	text = json_text(m, &jlen);
	put_be16(buf, m->type);
	put_be16(buf + 2, m->flags);
	put_be32(buf + 4, m->stream);
	put_be32(buf + 8, (uint32_t)jlen);
	memcpy(buf + MSG_HEADER_LEN, text, jlen);
	/* Data already in its place (channel_data_room()) is not copied onto itself. */
	if (m->data_len && m->data != buf + MSG_HEADER_LEN + jlen)
		memcpy(buf + MSG_HEADER_LEN + jlen, m->data, m->data_len);
	return (ssize_t)total;
}

/* With keep NULL, a tokener of its own; else *keep's (made when NULL, dropped on a failure). */
static int parse_json(json_tokener **keep, const char *text, size_t len, struct json_object **ret,
                      struct err *err)
{
	_cleanup_tokener_ json_tokener *tok = NULL;
	_cleanup_json_ json_object *obj = NULL;
	enum json_tokener_error jerr;

	if (memchr(text, '\0', len))
		return err_set(err, ERR_FAILED, EBADMSG, "malformed message: NUL byte in JSON");
	if (keep && *keep) {
		tok = TAKE_PTR(*keep);
		json_tokener_reset(tok);
	} else {
		tok = json_tokener_new_ex(MSG_JSON_DEPTH);
		if (!tok)
			return err_oom(err);
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	obj = json_tokener_parse_ex(tok, text, (int)len);
	jerr = json_tokener_get_error(tok);
	if (jerr == json_tokener_continue)
		return err_set(err, ERR_FAILED, EBADMSG, "malformed message: truncated JSON");
	if (jerr != json_tokener_success || !obj)
		return err_set(err, ERR_FAILED, EBADMSG, "malformed message: %s at byte %zu",
		               json_tokener_error_desc(jerr), json_tokener_get_parse_end(tok));
	if (json_tokener_get_parse_end(tok) != len)
		return err_set(err, ERR_FAILED, EBADMSG,
		               "malformed message: bytes after the JSON object");
	if (!json_object_is_type(obj, json_type_object))
		return err_set(err, ERR_FAILED, EBADMSG,
		               "malformed message: the JSON part is not an object");
	*ret = TAKE_PTR(obj);
	if (keep) /* parsed whole: the tokener is clean again for the next message */
		*keep = TAKE_PTR(tok);
	return 0;
}

int msg_decode(const uint8_t *buf, size_t len, struct msg *ret, struct err *err)
{
	return msg_decode_with(NULL, buf, len, ret, err);
}

int msg_decode_with(struct json_tokener **tok, const uint8_t *buf, size_t len, struct msg *ret,
                    struct err *err)
{
	struct msg m = {0};
	uint32_t jlen;
	int r;

	if (len < MSG_HEADER_LEN)
		return err_set(err, ERR_FAILED, EBADMSG, "malformed message: %zu bytes", len);
	m.type = get_be16(buf);
	m.flags = get_be16(buf + 2);
	m.stream = get_be32(buf + 4);
	jlen = get_be32(buf + 8);
	if (m.flags & ~MSG_F_KNOWN)
		return err_set(err, ERR_FAILED, EBADMSG, "malformed message: unknown flags 0x%x",
		               m.flags);
	if (jlen > MSG_JSON_MAX || jlen > len - MSG_HEADER_LEN)
		return err_set(err, ERR_FAILED, EBADMSG,
		               "malformed message: JSON length %u does not fit", jlen);
	if (jlen > 0) {
		r = parse_json(tok, (const char *)buf + MSG_HEADER_LEN, jlen, &m.json, err);
		if (r < 0)
			return r;
	}
	m.data = buf + MSG_HEADER_LEN + jlen;
	m.data_len = len - MSG_HEADER_LEN - jlen;
	if (m.data_len == 0)
		m.data = NULL;
	*ret = m;
	return 0;
}

int msg_error_from_err(struct msg *m, uint32_t stream, const struct err *e, bool end)
{
	_cleanup_json_ json_object *o = json_object_new_object();

	if (!o || json_object_object_add(o, "code", json_object_new_int(e->code)) < 0 ||
	    json_object_object_add(
	        o, "class", json_object_new_string(e->cls == ERR_REFUSED ? "refused" : "failed")) <
	        0 ||
	    json_object_object_add(o, "msg", json_object_new_string(e->msg)) < 0)
		return -ENOMEM;
	memset(m, 0, sizeof(*m));
	m->type = MSG_ERROR;
	m->flags = end ? MSG_F_END : 0;
	m->stream = stream;
	m->json = TAKE_PTR(o);
	return 0;
}

void msg_error_to_err(const struct msg *m, struct err *e)
{
	const char *cls = msg_get_string(m, "class");
	const char *text = msg_get_string(m, "msg");
	int64_t code = 0;

	if (!msg_get_int64(m, "code", &code) || code < 0 || code > 4095)
		code = 0;
	err_set(e, cls && strcmp(cls, "refused") == 0 ? ERR_REFUSED : ERR_FAILED, (int)code, "%s",
	        text ? text : "the peer reported an error without a message");
}

const char *msg_get_string(const struct msg *m, const char *key)
{
	struct json_object *v;

	if (!m->json || !json_object_object_get_ex(m->json, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

bool msg_get_int64(const struct msg *m, const char *key, int64_t *ret)
{
	struct json_object *v;

	if (!m->json || !json_object_object_get_ex(m->json, key, &v) ||
	    !json_object_is_type(v, json_type_int))
		return false;
	*ret = json_object_get_int64(v);
	return true;
}
