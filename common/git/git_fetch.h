/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fetching one ref of a repository with libgit2, with a token that never leaves memory
 * (docs/platform-contract.md, "Token-safe checkout"; docs/checkout.md).
 *
 * The remote is anonymous (created in memory from clone_url, never written to any config), the
 * URL's insteadOf rewrites are skipped, redirects are refused (the header must not follow a
 * redirect to another host), no proxy is used, and no credential callback is set: the only
 * credential is an `Authorization: Basic base64(username:token)` header passed to libgit2 as a
 * custom header. The header is built in sodium_malloc memory and freed (wiped) when the fetch
 * ends; libgit2's own copies of it are wiped by the allocator git_fetch_global_init() installs.
 * Error messages never carry the token, its base64 or its URL-encoded form.
 *
 * libgit2 1.5 cannot fetch shallow, so the one ref asked for is fetched with its history: a
 * branch into refs/remotes/origin/<branch>, a tag into refs/tags/<tag>. A full commit id is
 * fetched through a branch or tag whose tip it is, else by fetching every branch and tag and
 * looking for it there. No other tags are followed. FETCH_HEAD is not asked for, but libgit2
 * 1.5 leaves it empty (0 bytes) after every fetch; it never holds a credential.
 */
#ifndef SA_GIT_FETCH_H
#define SA_GIT_FETCH_H

#include <git2.h>
#include <stdbool.h>
#include <stddef.h>

#include "err.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(git_repository *, git_repository_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(git_remote *, git_remote_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(git_object *, git_object_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(git_reference *, git_reference_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(git_commit *, git_commit_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(git_tree *, git_tree_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(git_config *, git_config_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(git_odb *, git_odb_free)
#define _cleanup_git_repository_ _cleanup_(git_repository_freep)
#define _cleanup_git_remote_ _cleanup_(git_remote_freep)
#define _cleanup_git_object_ _cleanup_(git_object_freep)
#define _cleanup_git_reference_ _cleanup_(git_reference_freep)
#define _cleanup_git_commit_ _cleanup_(git_commit_freep)
#define _cleanup_git_tree_ _cleanup_(git_tree_freep)
#define _cleanup_git_config_ _cleanup_(git_config_freep)
#define _cleanup_git_odb_ _cleanup_(git_odb_freep)

/* The username GitHub expects with an installation or user token. */
#define GIT_FETCH_DEFAULT_USER "x-access-token"
#define GIT_FETCH_REF_MAX 256

struct git_fetch_global_opts {
	/*
	 * CA certificates for HTTPS (a PEM bundle and/or a hashed directory). Both NULL: the
	 * system's, which Debian's libgit2 parses at every initialisation by itself; the static
	 * set's libgit2 has none of its own, and SA_CA_BUNDLE is loaded here instead.
	 */
	const char *ca_file;
	const char *ca_dir;
	/*
	 * Nothing goes over the network (a pack taken in over the channel): the static build loads
	 * no CA bundle, 10 ms on the test machine.
	 */
	bool local_only;
	/* Read the system, global and XDG git configuration (~/.gitconfig, /etc/gitconfig).
	 * Default false: the process's libgit2 sees only each repository's own config. */
	bool user_config;
	/* Keep libgit2's plain allocator instead of the one that wipes every block it frees. */
	bool no_wipe_allocator;
};

/*
 * Set up libgit2 and libsodium for this process: the wiping allocator (installed before
 * anything else touches libgit2, so call this first, before any other libgit2 use in the
 * process), git_libgit2_init(), the CA locations, the config search path. opts may be NULL.
 * Process-wide, like libgit2's own state: call it from main(), once, before threads start.
 * git_fetch_global_shutdown() pairs with a successful call; a failed one leaves nothing to
 * shut down.
 */
int git_fetch_global_init(const struct git_fetch_global_opts *opts, struct err *err);
void git_fetch_global_shutdown(void);

/* Progress while objects arrive; non-zero cancels the fetch. */
typedef int (*git_fetch_progress_fn)(void *userdata, unsigned int received_objects,
                                     unsigned int total_objects, size_t received_bytes);

struct git_fetch_spec {
	const char *clone_url; /* https://host/owner/repo.git; never with credentials in it */
	/* A branch ("main", "refs/heads/main"), a tag ("v1", "refs/tags/v1"), a full commit id
	 * (40 hex digits), or NULL / "" / "HEAD" for the remote's default branch. A short name
	 * that is both a branch and a tag means the branch. */
	const char *ref;
	const char *username; /* NULL: GIT_FETCH_DEFAULT_USER */
	/* The token, token_len bytes (no NUL needed), in the caller's memory (sodium_malloc); 0:
	 * no Authorization header. Never copied anywhere but the wiped header buffer. */
	const char *token;
	size_t token_len;
	git_fetch_progress_fn progress; /* optional */
	void *userdata;
};

enum git_fetch_kind {
	GIT_FETCH_BRANCH = 1, /* also another ref under refs/ (refs/pull/1/head), kept by name */
	GIT_FETCH_TAG = 2,
	GIT_FETCH_COMMIT = 3, /* a commit id not at the tip of any branch or tag */
};

struct git_fetch_result {
	int kind;       /* enum git_fetch_kind */
	git_oid tip;    /* what local_ref points to: the commit, or an annotated tag object */
	git_oid commit; /* the commit to check out (tip peeled) */
	/* The remote ref fetched ("refs/heads/main", "refs/tags/v1"; "" for GIT_FETCH_COMMIT) and
	 * the local ref written for it ("refs/remotes/origin/main", "refs/tags/v1"; ""). */
	char remote_ref[GIT_FETCH_REF_MAX];
	char local_ref[GIT_FETCH_REF_MAX];
	unsigned int received_objects;
	size_t received_bytes;
};

/*
 * Check a clone URL: https://; http:// too, but only to a loopback host (127.0.0.0/8, ::1,
 * localhost) when a token is sent; file:// and absolute paths only when no token is sent
 * (with_token false). A URL with a user or password in it, control characters or spaces is
 * refused (ERR_REFUSED).
 */
int git_fetch_url_check(const char *url, bool with_token, struct err *err);

/*
 * Check a ref as git_fetch_ref() takes it (a valid ref name, no refspec syntax: no ':', '*',
 * leading '+' or '-'). ERR_REFUSED otherwise. Works whether or not libgit2 is set up (the
 * daemon sets it up only while a pack is taken in): it holds libgit2 for the check itself.
 */
int git_fetch_ref_check(const char *ref, struct err *err);

/*
 * A commit id of exactly 40 hex digits into *out: 0, or -1 for anything else. Checked before
 * libgit2 sees it, so it needs no libgit2 set-up.
 */
int git_fetch_oid_parse(git_oid *out, const char *hex);

/*
 * Create a fresh repository in dir, which must exist and be empty: bare (objects and refs in
 * dir itself), or not (dir/.git, dir is the work tree). Nothing is read from a template
 * directory. The caller owns dir and removes it when it gives up.
 */
int git_fetch_repo_init(const char *dir, bool bare, git_repository **ret_repo, struct err *err);

/*
 * Turn Nagle's algorithm off (TCP_NODELAY) on every TCP socket of the process. libgit2 (1.5)
 * leaves it on and has no hook to set socket options, and it writes a POST's headers and its
 * body in two writes: the body then waits for the server to acknowledge the headers, which a
 * Linux server delays by 40 ms (its delayed ACK), or a round trip elsewhere. Called once the
 * connection is up and before the POST (after the ref advertisement of a fetch, in the push
 * negotiation of a push); the process's other TCP sockets, if any, only lose the same wait.
 */
void git_fetch_nodelay(void);

/*
 * Fetch spec->ref from spec->clone_url into repo (normally fresh from git_fetch_repo_init) and
 * fill *ret. The URL and ref are checked first, then the remote's refs are listed, which is
 * where authentication happens: a refused token (ERR_REFUSED, code EACCES: "authentication
 * failed for URL ...") or a ref that does not exist (ERR_REFUSED, ENOENT: "... not found at
 * URL ...") fails before anything is written to repo.
 */
int git_fetch_ref(git_repository *repo, const struct git_fetch_spec *spec,
                  struct git_fetch_result *ret, struct err *err);

/*
 * Turn libgit2's last error after a failed call (rc < 0) into err: "what: message", with the
 * class and code a caller acts on (authentication: ERR_REFUSED/EACCES; a missing object or
 * ref: ENOENT; anything else ERR_FAILED). Returns err_ret(err). For libgit2 calls that never
 * see a secret; git_fetch_ref() redacts its own messages.
 */
int git_fetch_err(struct err *err, int rc, const char *what);

/*
 * "Authorization: Basic base64(user:token)" in guarded memory (sodium_free it), after refusing
 * an empty username, one with ':' or a line break, and a token with a NUL or a line break.
 */
int git_fetch_auth_header(const char *user, const char *token, size_t token_len, char **ret,
                          struct err *err);

#endif
