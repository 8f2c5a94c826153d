/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The TCP forwarder from LISTEN_ADDR:LISTEN_PORT (0.0.0.0:8080) to TARGET_ADDR:TARGET_PORT
 * (127.0.0.1:$PORT) that the supervisor keeps up. Many connections at once, bytes moved with
 * splice() through a pipe per direction, half-close carried across, no userspace copy.
 * It is driven by the caller's epoll loop.
 */
#ifndef SA_FORWARD_H
#define SA_FORWARD_H

#include <stdint.h>
#include <sys/epoll.h>

#include "err.h"

/*
 * Handlers registered in an epoll set carry a pointer to one of these as epoll data;
 * the loop calls fn(handler, events).
 */
struct ev_handler {
	void (*fn)(struct ev_handler *h, uint32_t events);
};

struct forwarder;

int forwarder_new(int epfd, const char *listen_addr, uint16_t listen_port, const char *target_addr,
                  uint16_t target_port, struct forwarder **ret, struct err *err);
/* Point new connections at another target port (after a restart picked a new port). */
void forwarder_set_target(struct forwarder *fw, uint16_t target_port);
unsigned forwarder_connections(const struct forwarder *fw);
void forwarder_free(struct forwarder *fw);

#endif
