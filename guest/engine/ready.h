/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Readiness probes with libcurl (docs/platform-contract.md, "Steps, server, readiness"):
 * GET http://HOST:PORT/PATH with Accept: application/json, no proxy (the proxy environment
 * variables are ignored), connect timeout 1 s, whole request 2 s, redirects not followed,
 * the body discarded. The caller decides what status means ready.
 *
 * The Host header is the address probed ("127.0.0.1:PORT", as the contract says): Rails'
 * development mode answers 403 to unknown hosts but accepts IP addresses, and the platform
 * itself reaches the app by IP.
 */
#ifndef SA_READY_H
#define SA_READY_H

#include <stdbool.h>
#include <stdint.h>

#include "err.h"

/*
 * libcurl's global initialisation. The program's main() calls it once, early, before any
 * thread starts (sandbox-agent does); ready_probe() works without it, as libcurl then
 * initialises itself on first use.
 */
int ready_init(struct err *err);

/*
 * One request; *ret_status is the HTTP status, or 0 when no response came (err says why,
 * e.g. "GET http://127.0.0.1:3000/up: connection refused"). host is an IPv4 or IPv6 literal
 * or a name; path starts with '/' (one is added otherwise). ret_answer_us, when not NULL, is
 * the peer's part of a request that got a response: from the request about to be sent to
 * the whole response read (libcurl's total time less its pre-transfer time), 0 otherwise.
 */
int ready_probe(const char *host, uint16_t port, const char *path, long *ret_status,
                int64_t *ret_answer_us, struct err *err);
/* 405, 401 or 200. */
bool ready_status_ok(long status);

#endif
