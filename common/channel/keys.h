/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Identity keys of the channel (docs/protocol.md, "Keys"): Ed25519 key pairs (libsodium's
 * crypto_sign). The secret half lives in sodium_malloc memory (guard pages, locked, wiped on
 * free) and is kept inaccessible (sodium_mprotect_noaccess) except while signing.
 *
 * Files, in OpenSSH's formats, so that ssh-keygen -lf shows the fingerprints we print:
 *   secret key   "-----BEGIN OPENSSH PRIVATE KEY-----" (openssh-key-v1, no passphrase), mode
 *                0600; a file readable by group or others is refused, like ssh does
 *   public key   "ssh-ed25519 <base64 of the wire form> [comment]\n", the same line format as
 *                authorized-keys files, in <secret path>.pub
 * The formats of earlier versions ("sandbox-ed25519-secret <base64 seed>" and
 * "sandbox-ed25519 <base64 key>") are still read. Fingerprints read "SHA256:<base64 of
 * SHA-256(the key's wire form), no padding>", as OpenSSH's do.
 */
#ifndef SA_KEYS_H
#define SA_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define KEYS_PUBLIC_LEN 32
#define KEYS_SEED_LEN 32
#define KEYS_SIGNATURE_LEN 64
#define KEYS_FINGERPRINT_MAX 64 /* "SHA256:" + 43 characters + NUL, with room */
#define KEYS_COMMENT_MAX 256
#define KEYS_TYPE_SSH "ssh-ed25519"
/* The line types of earlier versions, still read. */
#define KEYS_TYPE_PUBLIC "sandbox-ed25519"
#define KEYS_TYPE_SECRET "sandbox-ed25519-secret"

struct keypair {
	uint8_t pk[KEYS_PUBLIC_LEN];
	uint8_t *sk; /* crypto_sign_SECRETKEYBYTES of sodium_malloc memory, no access at rest */
	char comment[KEYS_COMMENT_MAX];
};

/* A new random key pair. */
int keys_generate(struct keypair **ret, struct err *err);
/* The key pair of a 32-byte seed (test vectors, and loading). */
int keys_from_seed(const uint8_t seed[KEYS_SEED_LEN], struct keypair **ret, struct err *err);
void keys_free(struct keypair *kp);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct keypair *, keys_free)
#define _cleanup_keypair_ _cleanup_(keys_freep)

/* Set the comment saved with the key (truncated to fit, newlines refused). */
int keys_set_comment(struct keypair *kp, const char *comment, struct err *err);

/*
 * Write the secret key to path (0600) and the public line to path.pub (0644), each atomically
 * (a temporary file, fsync, rename). The secret text never leaves sodium_malloc memory.
 */
int keys_save(const struct keypair *kp, const char *path, struct err *err);
/* Read a secret key file; refused when group or others may read it. */
int keys_load(const char *path, struct keypair **ret, struct err *err);

/*
 * Ed25519 detached signature of msg. The secret is readable only during this call, so two
 * threads must not sign with one key pair at the same time.
 */
int keys_sign(const struct keypair *kp, const void *msg, size_t len,
              uint8_t sig[KEYS_SIGNATURE_LEN], struct err *err);
/* 0 when sig is pk's signature of msg, -1 otherwise. */
int keys_verify(const uint8_t pk[KEYS_PUBLIC_LEN], const void *msg, size_t len,
                const uint8_t sig[KEYS_SIGNATURE_LEN]);

/* "SHA256:..." of a public key into out (KEYS_FINGERPRINT_MAX bytes). */
void keys_fingerprint(const uint8_t pk[KEYS_PUBLIC_LEN], char out[KEYS_FINGERPRINT_MAX]);

/* The public line "ssh-ed25519 <base64>[ comment]" as a heap string (no newline). */
char *keys_format_public(const uint8_t pk[KEYS_PUBLIC_LEN], const char *comment);

/*
 * Parse one public line. Leading blanks are skipped; the comment (the rest of the line after
 * the key, trimmed) goes to ret_comment when not NULL (a heap string, maybe empty). Refused
 * (ERR_REFUSED, EINVAL) for another key type, bad base64 or a key of the wrong length.
 */
int keys_parse_public(const char *line, uint8_t ret_pk[KEYS_PUBLIC_LEN], char **ret_comment,
                      struct err *err);

/* Make sure libsodium is initialised (every entry point here calls it). */
int keys_sodium_init(struct err *err);

#endif
