/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The set of host keys a guest accepts, like ssh's authorized_keys: a system file baked into
 * the image plus a directory where a controller drops per-instance key files (*.pub). Each line
 * reads "ssh-ed25519 <base64> [comment]" (or "sandbox-ed25519 ...", keys.h); blank lines and lines
 * starting with '#' are skipped, and so are malformed lines (logged at debug level), so that one
 * bad line does not lock every host out.
 *
 * authkeys_reload() re-reads both sources from scratch; the guest's handshake calls it for every
 * connection, so a key added or removed takes effect for the next connection without a restart.
 * A file that is a symbolic link, not a regular file, or writable by group or others is ignored
 * (sshd's StrictModes); a missing file or directory holds no keys; any other read error fails
 * the reload, and the handshake then refuses the connection (fail closed).
 */
#ifndef SA_AUTHKEYS_H
#define SA_AUTHKEYS_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include "err.h"
#include "keys.h"

#define AUTHKEYS_MAX 4096              /* keys over all sources */
#define AUTHKEYS_FILE_MAX (256 * 1024) /* bytes per file */

struct authkey {
	uint8_t pk[KEYS_PUBLIC_LEN];
	char *comment;
	char *source; /* "PATH:LINE", or "added" for keys added in memory */
};

struct authkeys;

/* file and dir may be NULL. Nothing is read until authkeys_reload(). */
int authkeys_new(const char *file, const char *dir, struct authkeys **ret, struct err *err);
void authkeys_free(struct authkeys *ak);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct authkeys *, authkeys_free)
#define _cleanup_authkeys_ _cleanup_(authkeys_freep)

/* Re-read the file and the directory, replacing the keys read before. */
int authkeys_reload(struct authkeys *ak, struct err *err);
/* True when the set has a file or a directory to reload from. */
bool authkeys_has_sources(const struct authkeys *ak);

/* Add a key held in memory only (kept across reloads). */
int authkeys_add(struct authkeys *ak, const uint8_t pk[KEYS_PUBLIC_LEN], const char *comment,
                 struct err *err);

/* The entry for pk, or NULL. */
const struct authkey *authkeys_find(const struct authkeys *ak, const uint8_t pk[KEYS_PUBLIC_LEN]);
size_t authkeys_count(const struct authkeys *ak);

#endif
