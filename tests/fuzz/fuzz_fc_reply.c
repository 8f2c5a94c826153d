/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Firecracker's reply to CONNECT (host/connect_fc_reply.c), parsed by hand from bytes any peer
 * behind the socket may send. The input is fed prefix by prefix, as the client reads it one
 * byte at a time. Checked: a refusal is final (no longer prefix is accepted), an accepted line
 * is exactly "OK ", digits of the port it returned, "\n", "read on" never comes past the
 * bound, and the error message is a bounded string.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "connect.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_accepted(const char *buf, size_t len, uint32_t port)
{
	uint64_t v = 0;

	if (len < 5 || memcmp(buf, "OK ", 3) != 0 || buf[len - 1] != '\n')
		abort();
	for (size_t i = 3; i < len - 1; i++) {
		if (buf[i] < '0' || buf[i] > '9')
			abort();
		v = v * 10 + (uint64_t)(buf[i] - '0');
	}
	if (v != port || len - 4 > 10)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	bool refused = false, accepted = false;

	for (size_t len = 0; len <= size; len++) {
		uint32_t port = 0;
		struct err e = {0};
		int r = connect_fc_reply_parse(buf, len, &port, &e);

		if (r < 0) {
			if (e.cls != ERR_REFUSED || strnlen(e.msg, sizeof(e.msg)) >= sizeof(e.msg))
				abort();
			refused = true;
			continue;
		}
		/* Nothing is accepted after a refusal, or after a complete line. */
		if (refused || accepted)
			abort();
		if (r == 1) {
			check_accepted(buf, len, port);
			accepted = true;
		} else if (r != 0 || len >= CONNECT_FC_REPLY_MAX || memchr(buf, '\n', len)) {
			abort();
		}
	}
	return 0;
}
