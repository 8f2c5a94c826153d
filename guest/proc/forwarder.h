/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The TCP forwarder from LISTEN_ADDR:LISTEN_PORT (0.0.0.0:8080) to TARGET_ADDR:TARGET_PORT
 * (127.0.0.1:$PORT) that the supervisor keeps up. Many connections at once, bytes moved with
 * splice() through a pipe per direction, half-close carried across, no userspace copy.
 * It is driven by the caller's epoll loop.
 *
 * Rules for the caller's loop:
 *  - every registered descriptor carries a struct ev_handler pointer as epoll data; the loop
 *    calls fn(handler, events) for each event;
 *  - a handler may close connections whose other events are still in the same batch, so the
 *    forwarder only unhooks them; call forwarder_reap() after each batch to free them;
 *  - SIGPIPE must be ignored or blocked: splice() into a socket whose peer is gone raises it
 *    (splice has no MSG_NOSIGNAL).
 *
 * Connections: at most FORWARD_MAX_CONNECTIONS, and no more than the descriptor limit allows
 * (each connection holds 6 descriptors: two sockets and two pipes; the limit is read when a
 * connection arrives, so a caller may raise RLIMIT_NOFILE later). At the cap the listener stops
 * accepting and the kernel's backlog holds new arrivals until a connection closes, unless the
 * connection idle the longest has moved no byte for FORWARD_EVICT_IDLE_MS: it is reset to make
 * room. One client (an IPv4 address, or an IPv6 /64) may hold three quarters of the cap: the
 * rest is kept for everyone else (the platform's probe); beyond that its idlest connection
 * makes room the same way, else its new one is reset. A connection that moved no byte either
 * way for FORWARD_IDLE_MS is reset (a timerfd in the caller's epoll set looks for them while
 * connections are open). A connection ends when both directions have carried their
 * end-of-file across, or at once on an error on either side; then the other side is reset
 * (RST), as when the target refuses the connection.
 */
#ifndef SA_FORWARDER_H
#define SA_FORWARDER_H

#include <stdint.h>
#include <sys/epoll.h>

#include "err.h"

#define FORWARD_MAX_CONNECTIONS 1024u
#define FORWARD_IDLE_MS (5u * 60 * 1000)   /* 5 minutes without a byte either way */
#define FORWARD_EVICT_IDLE_MS (10u * 1000) /* at a cap: idle this long makes room */

/*
 * Handlers registered in an epoll set carry a pointer to one of these as epoll data;
 * the loop calls fn(handler, events).
 */
struct ev_handler {
	void (*fn)(struct ev_handler *h, uint32_t events);
};

struct forwarder;

/*
 * Listen on listen_addr:listen_port (an IPv4 or IPv6 literal; SO_REUSEADDR) and register the
 * listener in epfd. A port in use fails with ERR_FAILED, code EADDRINUSE, "port N is in use".
 */
int forwarder_new(int epfd, const char *listen_addr, uint16_t listen_port, const char *target_addr,
                  uint16_t target_port, struct forwarder **ret, struct err *err);
/* Point new connections at another target port (after a restart picked a new port). */
void forwarder_set_target(struct forwarder *fw, uint16_t target_port);
uint16_t forwarder_target_port(const struct forwarder *fw);
/* The port actually bound (useful when listen_port was 0). */
uint16_t forwarder_listen_port(const struct forwarder *fw);
/* Lower the connection cap below FORWARD_MAX_CONNECTIONS (0 restores the default). */
void forwarder_set_max_connections(struct forwarder *fw, unsigned max);
/* Change the idle timeout (0: the default) and the idle time that makes room at a cap. */
void forwarder_set_idle(struct forwarder *fw, unsigned idle_ms, unsigned evict_ms);
/* Open connections, including ones still connecting to the target. */
unsigned forwarder_connections(const struct forwarder *fw);
/* Free the connections closed during the last batch of events. */
void forwarder_reap(struct forwarder *fw);
/* Close the listener and every connection (unhooked from epoll first). NULL is fine. */
void forwarder_free(struct forwarder *fw);

#endif
