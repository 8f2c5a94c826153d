/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Who listens on a TCP port, from /proc/net/tcp and /proc/net/tcp6 and the socket inodes
 * held by a set of processes: the boot may be declared ready only when its own processes hold
 * the listener (docs/design.md, "Processes").
 */
#ifndef SA_LISTEN_CHECK_H
#define SA_LISTEN_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"

enum listen_state {
	LISTEN_NONE = 0,        /* nobody listens on the port */
	LISTEN_OURS,            /* one of pids listens on 127.0.0.1, 0.0.0.0 or a dual-stack :: */
	LISTEN_OURS_V6_ONLY,    /* ours, only on ::1 (or v6-only): 127.0.0.1 unreachable */
	LISTEN_OURS_OTHER_ADDR, /* ours, on an address that is not loopback or any */
	LISTEN_FOREIGN,         /* a process outside pids holds the port */
};

int listen_check(uint16_t port, const pid_t *pids, size_t n_pids, enum listen_state *ret,
                 struct err *err);
/*
 * Whether any socket listens on port, on any address (one look at the kernel's listeners, no
 * process looked into): the cheap question asked until the answer is yes.
 */
int listen_check_port_taken(uint16_t port, bool *ret, struct err *err);
/* The ports (up to max) on which pids listen, for "it listens on port N instead". */
size_t listen_check_ports_of(const pid_t *pids, size_t n_pids, uint16_t *ret_ports, size_t max);
/*
 * A free TCP port for the app's PORT, chosen by the kernel on "::" (dual-stack), else on
 * 0.0.0.0, so that it is free on every address; on 127.0.0.1 only when both are refused.
 */
int listen_check_pick_free_port(uint16_t *ret, struct err *err);

#endif
