/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A GitHub App's JSON Web Token (docs/forge.md, "Tokens"): header {"alg":"RS256","typ":"JWT"},
 * claims {"iat": now - 60, "exp": now + 540, "iss": APP_ID} (GitHub allows at most ten
 * minutes, and iat in the past covers a clock that runs ahead), signed RS256 with the app's
 * private key by Debian's libcrypto (OpenSSL 3's EVP API), base64url by libsodium. The key is
 * read from a file only its owner can read, into guarded memory, and never echoed.
 */
#ifndef SA_HOST_GITHUB_APP_H
#define SA_HOST_GITHUB_APP_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define GITHUB_APP_KEY_MAX (16 * 1024) /* a 4096-bit RSA key in PEM is about 3.3 KiB */
#define GITHUB_APP_IAT_BACK 60         /* seconds */
#define GITHUB_APP_EXP_AHEAD 540       /* seconds after now: 10 minutes after iat */
#define GITHUB_APP_ID_MAX 64

/* An app id (digits) or client id (letters, digits, '.'); ERR_REFUSED otherwise. */
int github_app_id_check(const char *app_id, struct err *err);

/*
 * The JWT for app_id at time now (seconds since the epoch), signed with the PEM private key in
 * key (key_len bytes; PKCS#1 or PKCS#8, RSA, not encrypted). *ret (NUL-terminated, *ret_len
 * bytes) is guarded memory: sodium_free() it. A key that is not an RSA private key: ERR_REFUSED.
 * Built without libcrypto (the static sandbox-ctl): ERR_REFUSED/EOPNOTSUPP, saying so.
 */
int github_app_jwt(const char *app_id, const char *key, size_t key_len, int64_t now, char **ret,
                   size_t *ret_len, struct err *err);

#endif
