/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Running the real sandbox-ctl binary (the one beside this test's build directory) against the
 * minimal guest of test_ctl_guest.h: a private directory with a host key made by
 * `sandbox-ctl keygen`, a guest key, a pins file and a report file, servers stopped by pid.
 * Header-only, included by test_ctl_*.c.
 */
#ifndef SA_TEST_CTL_ENV_H
#define SA_TEST_CTL_ENV_H

#include <check.h>
#include <libgen.h>

#include "test_ctl_guest.h"

struct ctl_env {
	char dir[PATH_MAX];
	char key[PATH_MAX + 16], pins[PATH_MAX + 16], report[PATH_MAX + 16];
	char sock[PATH_MAX + 16], tree[PATH_MAX + 16];
	char host_fp[KEYS_FINGERPRINT_MAX], guest_fp[KEYS_FINGERPRINT_MAX];
	uint8_t host_pk[KEYS_PUBLIC_LEN];
	struct keypair *guest;
	struct fg_config cfg;
	pid_t servers[8];
	size_t n_servers;
};

struct ctl_run {
	int rc;
	char *out, *err;
	struct json_object *json; /* stdout parsed, when it is one JSON document */
};

/* build/tests/test_x -> build/sandbox-ctl */

/*
 * Start sandbox-ctl with argv (NULL-terminated, without the program name) and the env's key
 * and pins in front; stdin gets input (NULL: empty). Returns the pid; out_fd/err_fd read its
 * output.
 */

#define CTL_RUN(e, input, ...) ctl_run_env((e), (input), NULL, (char *const[]){__VA_ARGS__, NULL})

/* A string field of the run's JSON ("" when missing). */

/* The last line of the run's stderr. */

/* Lines of s that are exactly line. */

/* The guest's report so far. */

/*
 * The report once it holds needle: what the guest writes after sandbox-ctl has exited (a
 * refused handshake) may come a moment later. Gives up after 10 s.
 */

/* The report once `line` is a whole line of it n times (10 s at most). */

extern char ctl_bin[PATH_MAX], self_bin[PATH_MAX];
void ctl_find_binaries(void);
char *ctl_read_fd(int fd);
char *ctl_read_file(const char *path);
void ctl_run_dispose(struct ctl_run *r);
pid_t ctl_spawn(struct ctl_env *e, const char *input, char *const *argv,
                const char *const *extra_env, int *out_fd, int *err_fd);
struct ctl_run ctl_finish(pid_t pid, int out_fd, int err_fd);
struct ctl_run ctl_run_env(struct ctl_env *e, const char *input, const char *const *extra_env,
                           char *const *argv);
const char *ctl_str(const struct ctl_run *r, const char *key);
int64_t ctl_int(struct json_object *o, const char *key);
struct json_object *ctl_obj(struct json_object *o, const char *key);
const char *ctl_last_line(const struct ctl_run *r);
size_t ctl_count(const char *s, const char *needle);
size_t ctl_count_lines(const char *s, const char *line);
void ctl_env_setup(struct ctl_env *e);
void ctl_env_server(struct ctl_env *e, pid_t pid);
void ctl_env_teardown(struct ctl_env *e);
char *ctl_report(struct ctl_env *e);
char *ctl_report_wait(struct ctl_env *e, const char *needle);
char *ctl_report_wait_lines(struct ctl_env *e, const char *line, size_t n);

#endif
