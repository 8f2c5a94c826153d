/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The host's store of guest keys, like ssh's known_hosts: one line per instance,
 *   "<instance> ssh-ed25519 <base64> [comment]" (pins written by earlier versions read
 *   "<instance> sandbox-ed25519 <base64>" and are still accepted)
 * ('#' comments and blank lines are kept as they are). The first connection to an instance
 * pins the key it proved; a later connection with another key is refused unless the caller
 * says the change is expected (the instance was rebuilt).
 *
 * Changes rewrite the file atomically (temporary file, fsync, rename) under an exclusive lock
 * on "<path>.lock", so two sandbox-ctl processes pinning at once lose nothing.
 */
#ifndef SA_PINS_H
#define SA_PINS_H

#include <stdbool.h>
#include <stdint.h>

#include "err.h"
#include "keys.h"

#define PINS_NAME_MAX 253
#define PINS_FILE_MAX (4 * 1024 * 1024)

enum {
	PINS_ACCEPT_NEW = 1 << 0, /* pin the key of an instance seen for the first time */
	PINS_REPLACE = 1 << 1,    /* accept and pin a changed key */
};

enum pins_result {
	PINS_MATCH = 0,    /* the pinned key */
	PINS_ADDED = 1,    /* no pin before; pinned now */
	PINS_REPLACED = 2, /* another key was pinned; replaced now */
};

/* Instance names: 1..253 printable characters, no blanks, not starting with '#'. */
bool pins_name_valid(const char *instance);

/* 1 with the pinned key in ret_pk, 0 when the instance has no pin (or the file is missing). */
int pins_lookup(const char *path, const char *instance, uint8_t ret_pk[KEYS_PUBLIC_LEN],
                struct err *err);

/*
 * Check pk against the instance's pin. Returns a pins_result, or ERR_REFUSED (EKEYREJECTED)
 * when the key changed without PINS_REPLACE (the message names both fingerprints), or when the
 * instance has no pin and PINS_ACCEPT_NEW is not given.
 */
int pins_verify(const char *path, const char *instance, const uint8_t pk[KEYS_PUBLIC_LEN],
                int flags, struct err *err);

/* Drop the instance's pin; 1 if there was one, 0 if not. */
int pins_remove(const char *path, const char *instance, struct err *err);

#endif
