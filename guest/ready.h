/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Readiness probes with libcurl (boot-contract.md, "Steps, server, readiness"):
 * GET http://HOST:PORT/PATH with Accept: application/json, no proxy, connect timeout 1 s,
 * whole request 2 s. The caller decides what status means ready.
 */
#ifndef SA_READY_H
#define SA_READY_H

#include <stdbool.h>
#include <stdint.h>

#include "err.h"

/* One request; *ret_status is the HTTP status, or 0 when no response came (err says why). */
int ready_probe(const char *host, uint16_t port, const char *path, long *ret_status,
                struct err *err);
/* 405, 401 or 200. */
bool ready_status_ok(long status);

#endif
