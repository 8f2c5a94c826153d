/* SPDX-License-Identifier: Apache-2.0 */
#include "keys.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "file.h"

#define SECRET_FILE_MAX 4096
#define B64_KEY_LEN 44 /* base64 of 32 bytes, with padding */

int keys_sodium_init(struct err *err)
{
	if (sodium_init() < 0)
		return err_set(err, ERR_FAILED, EIO, "libsodium failed to initialise");
	return 0;
}

static void sodium_freep(void *p)
{
	sodium_free(*(void **)p);
}
#define _cleanup_sodium_ _cleanup_(sodium_freep)

static int keypair_alloc(struct keypair **ret, struct err *err)
{
	struct keypair *kp;
	int r = keys_sodium_init(err);

	if (r < 0)
		return r;
	kp = calloc(1, sizeof(*kp));
	if (!kp)
		return err_oom(err);
	kp->sk = sodium_malloc(crypto_sign_SECRETKEYBYTES);
	if (!kp->sk) {
		free(kp);
		return err_set(err, ERR_FAILED, ENOMEM, "cannot allocate guarded memory for a key");
	}
	*ret = kp;
	return 0;
}

void keys_free(struct keypair *kp)
{
	if (!kp)
		return;
	sodium_free(kp->sk);
	free(kp);
}

int keys_generate(struct keypair **ret, struct err *err)
{
	struct keypair *kp;
	int r = keypair_alloc(&kp, err);

	if (r < 0)
		return r;
	crypto_sign_keypair(kp->pk, kp->sk);
	sodium_mprotect_noaccess(kp->sk);
	*ret = kp;
	return 0;
}

int keys_from_seed(const uint8_t seed[KEYS_SEED_LEN], struct keypair **ret, struct err *err)
{
	struct keypair *kp;
	int r = keypair_alloc(&kp, err);

	if (r < 0)
		return r;
	crypto_sign_seed_keypair(kp->pk, kp->sk, seed);
	sodium_mprotect_noaccess(kp->sk);
	*ret = kp;
	return 0;
}

int keys_set_comment(struct keypair *kp, const char *comment, struct err *err)
{
	if (strpbrk(comment, "\r\n"))
		return err_set(err, ERR_REFUSED, EINVAL, "a key comment cannot span lines");
	snprintf(kp->comment, sizeof(kp->comment), "%s", comment);
	return 0;
}

int keys_sign(const struct keypair *kp, const void *msg, size_t len,
              uint8_t sig[KEYS_SIGNATURE_LEN], struct err *err)
{
	int r;

	if (sodium_mprotect_readonly(kp->sk) < 0)
		return err_errno(err, "cannot unprotect the secret key");
	r = crypto_sign_detached(sig, NULL, msg, len, kp->sk);
	sodium_mprotect_noaccess(kp->sk);
	if (r < 0)
		return err_set(err, ERR_FAILED, EIO, "signing failed");
	return 0;
}

int keys_verify(const uint8_t pk[KEYS_PUBLIC_LEN], const void *msg, size_t len,
                const uint8_t sig[KEYS_SIGNATURE_LEN])
{
	return crypto_sign_verify_detached(sig, msg, len, pk) == 0 ? 0 : -1;
}

void keys_fingerprint(const uint8_t pk[KEYS_PUBLIC_LEN], char out[KEYS_FINGERPRINT_MAX])
{
	uint8_t h[crypto_hash_sha256_BYTES];

	crypto_hash_sha256(h, pk, KEYS_PUBLIC_LEN);
	memcpy(out, "SHA256:", 7);
	sodium_bin2base64(out + 7, KEYS_FINGERPRINT_MAX - 7, h, sizeof(h),
	                  sodium_base64_VARIANT_ORIGINAL_NO_PADDING);
}

char *keys_format_public(const uint8_t pk[KEYS_PUBLIC_LEN], const char *comment)
{
	char b64[B64_KEY_LEN + 1];
	char *s;

	sodium_bin2base64(b64, sizeof(b64), pk, KEYS_PUBLIC_LEN, sodium_base64_VARIANT_ORIGINAL);
	if (comment && *comment) {
		if (asprintf(&s, "%s %s %s", KEYS_TYPE_PUBLIC, b64, comment) < 0)
			return NULL;
	} else if (asprintf(&s, "%s %s", KEYS_TYPE_PUBLIC, b64) < 0) {
		return NULL;
	}
	return s;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/*
 * Split "TYPE B64 [comment]": returns the type, the base64 token and the comment (trimmed,
 * up to the end of the line) as pointers and lengths into line.
 */
struct key_line {
	const char *type, *b64, *comment;
	size_t type_len, b64_len, comment_len;
};

static void split_line(const char *line, struct key_line *kl)
{
	const char *p = line, *end;

	while (is_blank(*p))
		p++;
	kl->type = p;
	while (*p && !is_blank(*p) && *p != '\n' && *p != '\r')
		p++;
	kl->type_len = (size_t)(p - kl->type);
	while (is_blank(*p))
		p++;
	kl->b64 = p;
	while (*p && !is_blank(*p) && *p != '\n' && *p != '\r')
		p++;
	kl->b64_len = (size_t)(p - kl->b64);
	while (is_blank(*p))
		p++;
	kl->comment = p;
	end = p + strcspn(p, "\r\n");
	while (end > p && is_blank(end[-1]))
		end--;
	kl->comment_len = (size_t)(end - p);
}

static bool token_is(const char *tok, size_t len, const char *word)
{
	return len == strlen(word) && memcmp(tok, word, len) == 0;
}

static int decode_key(const char *b64, size_t len, uint8_t out[32])
{
	size_t bin_len = 0;
	const char *b64_end = NULL;

	if (len != B64_KEY_LEN)
		return -1;
	if (sodium_base642bin(out, 32, b64, len, NULL, &bin_len, &b64_end,
	                      sodium_base64_VARIANT_ORIGINAL) < 0)
		return -1;
	if (bin_len != 32 || b64_end != b64 + len)
		return -1;
	return 0;
}

int keys_parse_public(const char *line, uint8_t ret_pk[KEYS_PUBLIC_LEN], char **ret_comment,
                      struct err *err)
{
	struct key_line kl;
	uint8_t pk[KEYS_PUBLIC_LEN];
	int r = keys_sodium_init(err);

	if (r < 0)
		return r;
	split_line(line, &kl);
	if (!token_is(kl.type, kl.type_len, KEYS_TYPE_PUBLIC))
		return err_set(err, ERR_REFUSED, EINVAL, "not a %s public key line",
		               KEYS_TYPE_PUBLIC);
	if (decode_key(kl.b64, kl.b64_len, pk) < 0)
		return err_set(err, ERR_REFUSED, EINVAL,
		               "the key is not the base64 of 32 bytes (%zu characters)",
		               kl.b64_len);
	if (ret_comment) {
		*ret_comment = strndup(kl.comment, kl.comment_len);
		if (!*ret_comment)
			return err_oom(err);
	}
	memcpy(ret_pk, pk, sizeof(pk));
	return 0;
}

int keys_save(const struct keypair *kp, const char *path, struct err *err)
{
	_cleanup_sodium_ uint8_t *seed = NULL;
	_cleanup_sodium_ char *text = NULL;
	_cleanup_free_ char *pub = NULL;
	_cleanup_free_ char *pub_path = NULL;
	char b64[B64_KEY_LEN + 1];
	size_t text_cap = sizeof(KEYS_TYPE_SECRET) + sizeof(b64) + KEYS_COMMENT_MAX + 4;
	int n, r;

	seed = sodium_malloc(KEYS_SEED_LEN);
	text = sodium_malloc(text_cap);
	if (!seed || !text)
		return err_set(err, ERR_FAILED, ENOMEM, "cannot allocate guarded memory");
	if (sodium_mprotect_readonly(kp->sk) < 0)
		return err_errno(err, "cannot unprotect the secret key");
	crypto_sign_ed25519_sk_to_seed(seed, kp->sk);
	sodium_mprotect_noaccess(kp->sk);
	sodium_bin2base64(b64, sizeof(b64), seed, KEYS_SEED_LEN, sodium_base64_VARIANT_ORIGINAL);
	n = snprintf(text, text_cap, "%s %s%s%s\n", KEYS_TYPE_SECRET, b64,
	             kp->comment[0] ? " " : "", kp->comment);
	sodium_memzero(b64, sizeof(b64));
	r = file_write_atomic(path, text, (size_t)n, 0600, (uid_t)-1, (gid_t)-1, err);
	if (r < 0)
		return err_wrap(err, "cannot save the secret key");

	pub = keys_format_public(kp->pk, kp->comment);
	if (!pub || asprintf(&pub_path, "%s.pub", path) < 0)
		return err_oom(err);
	n = (int)strlen(pub);
	pub[n] = '\n'; /* replaces the NUL; written with its length */
	r = file_write_atomic(pub_path, pub, (size_t)n + 1, 0644, (uid_t)-1, (gid_t)-1, err);
	pub[n] = '\0';
	if (r < 0)
		return err_wrap(err, "cannot save the public key");
	return 0;
}

/* Read a small secret file into sodium_malloc memory, NUL-terminated. */
static int read_secret_file(const char *path, char **ret, struct err *err)
{
	_cleanup_close_ int fd = -1;
	_cleanup_sodium_ char *buf = NULL;
	size_t len = 0;
	struct stat st;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	if (fd < 0) {
		if (errno == ELOOP)
			return err_set(err, ERR_REFUSED, ELOOP, "key file %s is a symbolic link",
			               path);
		return err_errno(err, "cannot open key file %s", path);
	}
	if (fstat(fd, &st) < 0)
		return err_errno(err, "cannot stat %s", path);
	if (!S_ISREG(st.st_mode))
		return err_set(err, ERR_REFUSED, EINVAL, "key file %s is not a regular file", path);
	if (st.st_mode & 077)
		return err_set(err, ERR_REFUSED, EACCES,
		               "key file %s is accessible by others (mode %04o): chmod 600 it",
		               path, (unsigned)(st.st_mode & 07777));
	buf = sodium_malloc(SECRET_FILE_MAX + 1);
	if (!buf)
		return err_set(err, ERR_FAILED, ENOMEM, "cannot allocate guarded memory");
	{
		ssize_t n = file_read_all(fd, buf, SECRET_FILE_MAX + 1);
		if (n < 0) {
			errno = (int)-n;
			return err_errno(err, "cannot read %s", path);
		}
		len = (size_t)n;
		if (len > SECRET_FILE_MAX)
			return err_set(err, ERR_REFUSED, EFBIG, "key file %s is too large", path);
	}
	buf[len] = '\0';
	*ret = TAKE_PTR(buf);
	return 0;
}

int keys_load(const char *path, struct keypair **ret, struct err *err)
{
	_cleanup_sodium_ char *text = NULL;
	_cleanup_sodium_ uint8_t *seed = NULL;
	_cleanup_keypair_ struct keypair *kp = NULL;
	struct key_line kl;
	int r = keys_sodium_init(err);

	if (r < 0)
		return r;
	r = read_secret_file(path, &text, err);
	if (r < 0)
		return r;
	seed = sodium_malloc(KEYS_SEED_LEN);
	if (!seed)
		return err_set(err, ERR_FAILED, ENOMEM, "cannot allocate guarded memory");
	split_line(text, &kl);
	if (!token_is(kl.type, kl.type_len, KEYS_TYPE_SECRET))
		return err_set(err, ERR_REFUSED, EINVAL, "%s is not a %s key file", path,
		               KEYS_TYPE_SECRET);
	if (decode_key(kl.b64, kl.b64_len, seed) < 0)
		return err_set(err, ERR_REFUSED, EINVAL, "%s holds a malformed key", path);
	r = keys_from_seed(seed, &kp, err);
	if (r < 0)
		return r;
	if (kl.comment_len >= sizeof(kp->comment))
		kl.comment_len = sizeof(kp->comment) - 1;
	memcpy(kp->comment, kl.comment, kl.comment_len);
	kp->comment[kl.comment_len] = '\0';
	*ret = TAKE_PTR(kp);
	return 0;
}
