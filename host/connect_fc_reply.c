/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Firecracker's answer to "CONNECT <port>\n": "OK <host-side port>\n" and nothing else. The
 * one line on the channel's descriptor that is not the channel, so it is parsed by hand, bounded,
 * and fuzzed (tests/fuzz/fuzz_fc_reply.c).
 */
#include "connect.h"

#include <errno.h>
#include <stdio.h>

#define FC_DIGITS_MAX 10

/* buf as C-escaped text for a message, at most CONNECT_FC_REPLY_MAX bytes of it. */
static void escape(const char *buf, size_t len, char *out, size_t cap)
{
	size_t o = 0;

	if (len > CONNECT_FC_REPLY_MAX)
		len = CONNECT_FC_REPLY_MAX;
	for (size_t i = 0; i < len && o + 5 < cap; i++) {
		unsigned char c = (unsigned char)buf[i];
		if (c == '\n')
			o += (size_t)snprintf(out + o, cap - o, "\\n");
		else if (c == '\r')
			o += (size_t)snprintf(out + o, cap - o, "\\r");
		else if (c == '\\' || c == '"')
			o += (size_t)snprintf(out + o, cap - o, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			o += (size_t)snprintf(out + o, cap - o, "\\x%02x", c);
		else
			out[o++] = (char)c;
	}
	out[o] = '\0';
}

static int refuse(const char *buf, size_t len, const char *why, struct err *err)
{
	char shown[CONNECT_FC_REPLY_MAX * 4 + 1];

	escape(buf, len, shown, sizeof(shown));
	return err_set(err, ERR_REFUSED, EPROTO,
	               "not a Firecracker vsock socket: it answered \"%s\" to CONNECT (%s; "
	               "expected \"OK <port>\\n\")",
	               shown, why);
}

int connect_fc_reply_parse(const char *buf, size_t len, uint32_t *ret_port, struct err *err)
{
	static const char prefix[] = "OK ";
	uint64_t port = 0;
	size_t i, digits = 0;

	for (i = 0; i < len && i < sizeof(prefix) - 1; i++)
		if (buf[i] != prefix[i])
			return refuse(buf, len, "it does not start with \"OK \"", err);
	for (; i < len; i++) {
		char c = buf[i];
		if (c == '\n') {
			if (digits == 0)
				return refuse(buf, len, "no port number", err);
			if (i + 1 != len)
				return refuse(buf, len, "bytes after the line", err);
			*ret_port = (uint32_t)port;
			return 1;
		}
		if (c < '0' || c > '9')
			return refuse(buf, len, "the port is not a decimal number", err);
		if (++digits > FC_DIGITS_MAX)
			return refuse(buf, len, "the port number is too long", err);
		port = port * 10 + (uint64_t)(c - '0');
		if (port > UINT32_MAX)
			return refuse(buf, len, "the port number is over 4294967295", err);
	}
	if (len >= CONNECT_FC_REPLY_MAX)
		return refuse(buf, len, "the line is too long", err);
	return 0;
}
