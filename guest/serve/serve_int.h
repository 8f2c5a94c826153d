/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The daemon's insides, shared by guest/serve*.c (not for other modules): the loop's state,
 * connections and their streams, listeners, runner jobs, and the operations' entry points.
 *
 *   serve.c              setup and the poll() loop
 *   serve_listen.c       listeners: unix, vsock, the serial port, stdio; peer checks
 *   serve_conn.c         one connection: handshake, receive, dispatch by stream, replies
 *   serve_jobs.c         boot runners: spawn, relay their messages, reap
 *   serve_apps.c         which state directory belongs to which app directory
 *   serve_ops_*.c        the operations (secrets, tree, checkout, publish, boot and stop,
 *                        status and runtime, logs)
 *   serve_runner.c       the runner process itself (boot_engine_run, boot_engine_stop)
 */
#ifndef SA_SERVE_INT_H
#define SA_SERVE_INT_H

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
#include "serve.h"

#define SERVE_STREAMS_MAX 64
#define SERVE_SEND_TIMEOUT_MS 10000
#define SERVE_CHUNK (64 * 1024)
#define SERVE_BATCH 64            /* messages read from one connection per pass */
#define SERVE_FOLLOW_MS 100       /* how often followed logs are looked at */
#define SERVE_SERIAL_RETRY_MS 250 /* reading the serial port again after its peer went away */
#define SERVE_LISTENERS_MAX 16

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
	struct job *jobs;
	struct app_entry *apps;
	size_t n_apps;
	char **clean_env; /* the daemon's environment, without systemd's variables */
	char instance[256];
	bool quit;
};

/* serve_listen.c */
int listeners_open(struct serve *srv, struct err *err);
void listeners_close(struct serve *srv);
/* The listener's fd is readable (or, serial, due for a retry): accept or start a session. */
void listener_ready(struct serve *srv, struct listener *l);
/* A serial or stdio session ended: the port waits for the next one. */
void listener_session_ended(struct serve *srv, struct listener *l, bool eof);

/* serve_conn.c */
struct conn *conn_new(struct serve *srv, int fd, int wfd, bool owns_fds, const char *peer,
                      struct listener *l, struct frame_io *io);
void conn_ready(struct conn *c);
/* Run the streams' pumps; 1 when one of them has more to do at once. */
int conn_pump(struct conn *c);
/* Bytes buffered past poll()'s sight, or a pump with more to do: poll without waiting. */
bool conn_has_pending(const struct conn *c);
/* A stream waits for files to grow (logs follow): poll with SERVE_FOLLOW_MS at most. */
bool conn_wants_timer(const struct conn *c);
void conn_kill(struct conn *c, const char *why);
void conn_free(struct conn *c);
struct conn *conn_find(struct serve *srv, uint64_t id);
/* Send one message; json is consumed (may be NULL). A failure kills the connection. */
int conn_send(struct conn *c, uint16_t type, uint16_t flags, uint32_t stream, json_object *json,
              const void *data, size_t len);
/* The final reply of a stream (END): ok with json, or an error. */
int stream_ok(struct conn *c, struct stream *st, json_object *json);
int stream_error(struct conn *c, struct stream *st, const struct err *e);
/* Our half ended (by a message sent elsewhere with END): free the stream once both are. */
void stream_finish(struct conn *c, struct stream *st);
struct stream *stream_find(struct conn *c, uint32_t id);

/* serve_jobs.c */
int job_spawn(struct serve *srv, enum job_kind kind, json_object *request, bool with_secrets,
              const char *app_dir, const char *state_dir, struct job **ret, struct err *err);
int job_follow(struct job *j, uint64_t conn_id, uint32_t stream);
void job_unfollow_conn(struct serve *srv, uint64_t conn_id);
void job_readable(struct serve *srv, struct job *j);
void jobs_reap(struct serve *srv);
struct job *job_find(struct serve *srv, enum job_kind kind, const char *state_dir);
void jobs_free(struct serve *srv);

/* serve_apps.c */
int apps_load(struct serve *srv);
void apps_free(struct serve *srv);
/* Normalise an app directory from a request: absolute, no trailing slash, no "." or "..". */
int apps_normalize(const char *app_dir, char **ret, struct err *err);
/* The state directory of app_dir: the last boot's, else the directory shape's. */
int apps_state_dir(struct serve *srv, const char *app_dir, char **ret, struct err *err);
int apps_set(struct serve *srv, const char *app_dir, const char *state_dir);
void apps_forget(struct serve *srv, const char *app_dir);

/* The operations (serve_ops_*.c): start one on a new stream. */
int op_secrets_put(struct conn *c, struct stream *st, const struct msg *m);
int op_secrets_drop(struct conn *c, struct stream *st, const struct msg *m);
int op_tree_push(struct conn *c, struct stream *st, const struct msg *m);
int op_boot_start(struct conn *c, struct stream *st, const struct msg *m);
int op_stop(struct conn *c, struct stream *st, const struct msg *m);
int op_status(struct conn *c, struct stream *st, const struct msg *m);
int op_runtime_read(struct conn *c, struct stream *st, const struct msg *m);
int op_logs(struct conn *c, struct stream *st, const struct msg *m);
int op_checkout_pack(struct conn *c, struct stream *st, const struct msg *m);
int op_checkout_fetch(struct conn *c, struct stream *st, const struct msg *m);
int op_publish_commit(struct conn *c, struct stream *st, const struct msg *m);

/* serve_ops_checkout.c, in the runner: the fetch, checkout and swap of a checkout.fetch. */
int serve_checkout_fetch_run(json_object *req, struct secrets_store *secrets,
                             json_object **ret_reply, struct err *err);

/* A required string field; refuses (error reply) when missing. */
const char *op_field_string(const struct msg *m, const char *key, bool required, struct err *err);

#endif
