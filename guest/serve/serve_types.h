/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The daemon's data (guest/serve/, not for other layers): the loop's state, connections and
 * their streams, listeners and runner jobs. Types and limits only; each file's functions are
 * declared in that file's own header:
 *
 *   serve.c              setup and the poll() loop
 *   serve_listen.c       listeners: unix, vsock, the serial port, stdio; peer checks
 *   serve_conn.c         one connection: handshake, receive, dispatch by stream
 *   serve_stream.c       the reply and stream API the operations and the jobs use
 *   serve_ops.c          the table of operations: message type -> serve_ops_<name>.c
 *   serve_jobs.c         runner processes: spawn, relay their messages to followers, reap
 *   serve_apps.c         which state directory belongs to which app directory
 *   serve_ops_*.c        the operations (secrets, tree, checkout, publish, boot and stop,
 *                        status and runtime, logs)
 *   serve_runner.c       the runner process itself (boot_engine_run, boot_engine_stop)
 */
#ifndef SA_SERVE_TYPES_H
#define SA_SERVE_TYPES_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "json_strict.h"
#include "authkeys.h"
#include "channel.h"
#include "err.h"
#include "frame_io.h"
#include "handshake.h"
#include "keys.h"
#include "msg.h"
#include "secrets_store.h"
#include "serve_config.h"

#define SERVE_STREAMS_MAX 64
#define SERVE_SEND_TIMEOUT_MS 10000
#define SERVE_CHUNK (64 * 1024)
#define SERVE_BATCH 64            /* messages read from one connection per pass */
#define SERVE_FOLLOW_MS 100       /* how often followed logs are looked at */
#define SERVE_SERIAL_RETRY_MS 250 /* reading the serial port again after its peer went away */
#define SERVE_LISTENERS_MAX 16
/*
 * Connections (docs/threat-model.md): unauthenticated ones at once (the one with the least
 * handshake progress, then the oldest, is dropped for a new one); all at once, lowered to what
 * the descriptor limit leaves after SERVE_FDS_RESERVED (the keys file, runners, state files);
 * accepted per pass of the loop.
 */
#define SERVE_HANDSHAKES_MAX 32
#define SERVE_CONNS_MAX 256
#define SERVE_FDS_RESERVED 64
#define SERVE_ACCEPT_BATCH 64
/* The descriptor limit the daemon raises itself to (at most the hard limit). */
#define SERVE_NOFILE_WANT 65536

struct serve;
struct conn;
struct stream;

struct stream_ops {
	/* A later message on the stream (the first one started it). NULL: refused. */
	int (*on_msg)(struct conn *c, struct stream *st, const struct msg *m);
	/* The host sent cancel. NULL: answered with an error (ECANCELED). */
	void (*on_cancel)(struct conn *c, struct stream *st);
	/* Work to do from the loop (logs): 1 when there is more to do at once, else 0. */
	int (*pump)(struct conn *c, struct stream *st);
	void (*free)(void *data);
	/* A descriptor that becomes readable when pump() has work (an inotify of a followed
	 * file), so the loop wakes at once instead of at its next SERVE_FOLLOW_MS; -1: none. */
	int (*wake_fd)(const struct stream *st);
};

struct stream {
	struct stream *next;
	uint32_t id;
	uint16_t type;  /* the message type that opened it */
	bool host_done; /* the host ended its half */
	bool done;      /* we ended ours */
	bool more;      /* pump() has more to do at once */
	const struct stream_ops *ops;
	void *data;
};

enum conn_state {
	CONN_HANDSHAKE,
	CONN_SESSION,
	CONN_DEAD,
};

struct listener;

struct conn {
	struct conn *next;
	struct serve *srv;
	uint64_t id;
	char peer[128];
	int fd;  /* read from */
	int wfd; /* written to (== fd but for stdio) */
	bool owns_fds;
	struct listener *listener; /* the serial port's: it gets its port back at the end */
	struct frame_io *io;
	bool owns_io;
	enum conn_state state;
	struct handshake *hs;
	int64_t hs_deadline;
	char fingerprint[KEYS_FINGERPRINT_MAX];
	struct channel *ch;
	struct stream *streams;
	size_t n_streams;
	uint32_t last_stream;
};

enum listener_kind {
	LISTEN_UNIX,
	LISTEN_VSOCK,
	LISTEN_SERIAL,
	LISTEN_STDIO,
};

struct listener {
	enum listener_kind kind;
	int fd;
	char *path;
	struct frame_io *io; /* serial: one frame_io across sessions */
	bool busy;           /* serial, stdio: a session runs */
	int64_t retry_at;    /* serial: reopen at this time (0: open) */
};

enum job_kind {
	JOB_BOOT,
	JOB_STOP,
	JOB_CHECKOUT, /* checkout.fetch */
	JOB_PUBLISH,  /* publish.commit, as the checkout's owner */
};

struct follower {
	uint64_t conn_id;
	uint32_t stream;
};

struct job {
	struct job *next;
	enum job_kind kind;
	pid_t pid;
	int fd; /* SOCK_SEQPACKET to the runner, -1 once it closed */
	char *app_dir;
	char *state_dir;
	struct follower *followers;
	size_t n_followers;
	bool result_seen;
	bool exited;
	int status;
	int64_t started_ms;
	int64_t deadline_ms; /* frame_io_now_ms() units; 0: none. At it the runner is killed. */
};

struct app_entry {
	char *app_dir;
	char *state_dir;
};

struct serve {
	const struct serve_config *cfg;
	struct keypair *key;
	struct authkeys *authkeys;
	struct secrets_store *secrets;
	int sigfd;
	struct listener listeners[SERVE_LISTENERS_MAX];
	size_t n_listeners;
	struct conn *conns;
	uint64_t next_conn_id;
	int reserve_fd; /* given up for a moment to accept-and-close when out of descriptors */
	struct job *jobs;
	struct app_entry *apps;
	size_t n_apps;
	bool apps_unsaved; /* the last write of apps.json failed: the next set writes again */
	char **clean_env;  /* the daemon's environment, without systemd's variables */
	char instance[256];
	bool quit;
};

#endif
