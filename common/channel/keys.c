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

/* OpenSSH's wire form of a public key: string "ssh-ed25519", string key (RFC 8709). */
#define SSH_BLOB_LEN (4 + 11 + 4 + KEYS_PUBLIC_LEN)
#define SSH_BLOB_B64_LEN 68 /* base64 of 51 bytes, with padding */
#define SSH_PRIV_BEGIN "-----BEGIN OPENSSH PRIVATE KEY-----"
#define SSH_PRIV_END "-----END OPENSSH PRIVATE KEY-----"
#define SSH_PRIV_MAGIC "openssh-key-v1" /* with its NUL */
#define SSH_PRIV_WRAP 70                /* base64 characters per line, as ssh-keygen writes */

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

static uint8_t *put_u32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
	return p + 4;
}

static uint8_t *put_string(uint8_t *p, const void *data, size_t len)
{
	p = put_u32(p, (uint32_t)len);
	memcpy(p, data, len);
	return p + len;
}

static void ssh_blob(const uint8_t pk[KEYS_PUBLIC_LEN], uint8_t out[SSH_BLOB_LEN])
{
	put_string(put_string(out, KEYS_TYPE_SSH, strlen(KEYS_TYPE_SSH)), pk, KEYS_PUBLIC_LEN);
}

void keys_fingerprint(const uint8_t pk[KEYS_PUBLIC_LEN], char out[KEYS_FINGERPRINT_MAX])
{
	uint8_t h[crypto_hash_sha256_BYTES], blob[SSH_BLOB_LEN];

	/* Over the wire form, as ssh-keygen -l computes it. */
	ssh_blob(pk, blob);
	crypto_hash_sha256(h, blob, sizeof(blob));
	memcpy(out, "SHA256:", 7);
	sodium_bin2base64(out + 7, KEYS_FINGERPRINT_MAX - 7, h, sizeof(h),
	                  sodium_base64_VARIANT_ORIGINAL_NO_PADDING);
}

char *keys_format_public(const uint8_t pk[KEYS_PUBLIC_LEN], const char *comment)
{
	char b64[SSH_BLOB_B64_LEN + 1];
	uint8_t blob[SSH_BLOB_LEN];
	char *s;

	ssh_blob(pk, blob);
	sodium_bin2base64(b64, sizeof(b64), blob, sizeof(blob), sodium_base64_VARIANT_ORIGINAL);
	if (comment && *comment) {
		if (asprintf(&s, "%s %s %s", KEYS_TYPE_SSH, b64, comment) < 0)
			return NULL;
	} else if (asprintf(&s, "%s %s", KEYS_TYPE_SSH, b64) < 0) {
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

/* "AAAAC3NzaC1lZDI1NTE5AAAAI..." : the wire form, its header checked. */
static int decode_ssh_blob(const char *b64, size_t len, uint8_t out[KEYS_PUBLIC_LEN])
{
	uint8_t blob[SSH_BLOB_LEN + 3], want[SSH_BLOB_LEN];
	size_t bin_len = 0;
	const char *b64_end = NULL;

	if (len != SSH_BLOB_B64_LEN ||
	    sodium_base642bin(blob, sizeof(blob), b64, len, NULL, &bin_len, &b64_end,
	                      sodium_base64_VARIANT_ORIGINAL) < 0 ||
	    bin_len != SSH_BLOB_LEN || b64_end != b64 + len)
		return -1;
	ssh_blob(blob + SSH_BLOB_LEN - KEYS_PUBLIC_LEN, want);
	if (memcmp(blob, want, SSH_BLOB_LEN - KEYS_PUBLIC_LEN) != 0)
		return -1;
	memcpy(out, blob + SSH_BLOB_LEN - KEYS_PUBLIC_LEN, KEYS_PUBLIC_LEN);
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
	if (token_is(kl.type, kl.type_len, KEYS_TYPE_SSH)) {
		if (decode_ssh_blob(kl.b64, kl.b64_len, pk) < 0)
			return err_set(err, ERR_REFUSED, EINVAL,
			               "the key is not an OpenSSH ssh-ed25519 public key (%zu "
			               "characters)",
			               kl.b64_len);
	} else if (token_is(kl.type, kl.type_len, KEYS_TYPE_PUBLIC)) {
		/* The format of earlier versions: the 32 bytes themselves. */
		if (decode_key(kl.b64, kl.b64_len, pk) < 0)
			return err_set(err, ERR_REFUSED, EINVAL,
			               "the key is not the base64 of 32 bytes (%zu characters)",
			               kl.b64_len);
	} else {
		return err_set(err, ERR_REFUSED, EINVAL, "not an %s public key line",
		               KEYS_TYPE_SSH);
	}
	if (ret_comment) {
		*ret_comment = strndup(kl.comment, kl.comment_len);
		if (!*ret_comment)
			return err_oom(err);
	}
	memcpy(ret_pk, pk, sizeof(pk));
	return 0;
}

/*
 * The secret key in OpenSSH's own format (PROTOCOL.key: "openssh-key-v1", no cipher, one key),
 * as ssh-keygen -t ed25519 -N '' writes it, built in guarded memory: *ret_len characters.
 */
static int format_secret_openssh(const struct keypair *kp, char **ret, size_t *ret_len,
                                 struct err *err)
{
	size_t clen = strlen(kp->comment);
	size_t priv_len =
	    8 + (4 + 11) + (4 + KEYS_PUBLIC_LEN) + (4 + crypto_sign_SECRETKEYBYTES) + (4 + clen);
	size_t pad = (8 - priv_len % 8) % 8;
	size_t bin_len =
	    sizeof(SSH_PRIV_MAGIC) + (4 + 4) * 2 + 4 + 4 + (4 + SSH_BLOB_LEN) + 4 + priv_len + pad;
	size_t b64_cap = sodium_base64_ENCODED_LEN(bin_len, sodium_base64_VARIANT_ORIGINAL);
	size_t text_cap =
	    sizeof(SSH_PRIV_BEGIN) + sizeof(SSH_PRIV_END) + b64_cap + b64_cap / SSH_PRIV_WRAP + 4;
	_cleanup_sodium_ uint8_t *bin = sodium_malloc(bin_len);
	_cleanup_sodium_ char *b64 = sodium_malloc(b64_cap);
	_cleanup_sodium_ char *text = sodium_malloc(text_cap);
	uint8_t blob[SSH_BLOB_LEN], *p;
	uint32_t check = randombytes_random();
	size_t n = 0, b64_len;

	if (!bin || !b64 || !text)
		return err_set(err, ERR_FAILED, ENOMEM, "cannot allocate guarded memory");
	ssh_blob(kp->pk, blob);
	p = bin;
	memcpy(p, SSH_PRIV_MAGIC, sizeof(SSH_PRIV_MAGIC));
	p += sizeof(SSH_PRIV_MAGIC);
	p = put_string(p, "none", 4); /* cipher */
	p = put_string(p, "none", 4); /* kdf */
	p = put_string(p, "", 0);     /* kdf options */
	p = put_u32(p, 1);            /* one key */
	p = put_string(p, blob, sizeof(blob));
	p = put_u32(p, (uint32_t)(priv_len + pad));
	p = put_u32(put_u32(p, check), check);
	p = put_string(p, KEYS_TYPE_SSH, strlen(KEYS_TYPE_SSH));
	p = put_string(p, kp->pk, KEYS_PUBLIC_LEN);
	if (sodium_mprotect_readonly(kp->sk) < 0)
		return err_errno(err, "cannot unprotect the secret key");
	p = put_string(p, kp->sk, crypto_sign_SECRETKEYBYTES); /* seed || public key */
	sodium_mprotect_noaccess(kp->sk);
	p = put_string(p, kp->comment, clen);
	for (size_t i = 1; i <= pad; i++)
		*p++ = (uint8_t)i;
	sodium_bin2base64(b64, b64_cap, bin, bin_len, sodium_base64_VARIANT_ORIGINAL);
	b64_len = strlen(b64);
	memcpy(text, SSH_PRIV_BEGIN "\n", sizeof(SSH_PRIV_BEGIN));
	n = sizeof(SSH_PRIV_BEGIN);
	for (size_t i = 0; i < b64_len; i += SSH_PRIV_WRAP) {
		size_t k = b64_len - i < SSH_PRIV_WRAP ? b64_len - i : SSH_PRIV_WRAP;
		memcpy(text + n, b64 + i, k);
		n += k;
		text[n++] = '\n';
	}
	memcpy(text + n, SSH_PRIV_END "\n", sizeof(SSH_PRIV_END));
	n += sizeof(SSH_PRIV_END);
	*ret = TAKE_PTR(text);
	*ret_len = n;
	return 0;
}

int keys_save(const struct keypair *kp, const char *path, struct err *err)
{
	_cleanup_sodium_ char *text = NULL;
	_cleanup_free_ char *pub = NULL;
	_cleanup_free_ char *pub_path = NULL;
	size_t len = 0;
	int n, r;

	r = format_secret_openssh(kp, &text, &len, err);
	if (r < 0)
		return r;
	r = file_write_atomic(path, text, len, 0600, (uid_t)-1, (gid_t)-1, err);
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

/* A reader of the decoded OpenSSH key: every read checks the length left. */
struct ssh_reader {
	const uint8_t *p, *end;
	bool bad;
};

static uint32_t get_u32(struct ssh_reader *r)
{
	uint32_t v;

	if (r->bad || r->end - r->p < 4) {
		r->bad = true;
		return 0;
	}
	v = (uint32_t)r->p[0] << 24 | (uint32_t)r->p[1] << 16 | (uint32_t)r->p[2] << 8 | r->p[3];
	r->p += 4;
	return v;
}

static const uint8_t *get_string(struct ssh_reader *r, size_t *ret_len)
{
	size_t len = get_u32(r);
	const uint8_t *s = r->p;

	if (r->bad || (size_t)(r->end - r->p) < len) {
		r->bad = true;
		*ret_len = 0;
		return NULL;
	}
	r->p += len;
	*ret_len = len;
	return s;
}

static bool string_is(const uint8_t *s, size_t len, const char *want)
{
	return s && len == strlen(want) && memcmp(s, want, len) == 0;
}

/* The seed and comment of an OpenSSH private key file (text NUL-terminated, guarded). */
static int parse_secret_openssh(const char *path, const char *text, uint8_t seed[KEYS_SEED_LEN],
                                char comment[KEYS_COMMENT_MAX], struct err *err)
{
	size_t tlen = strlen(text), b64_len = 0, bin_len = 0, len, pk_len, sk_len, c_len;
	_cleanup_sodium_ char *b64 = sodium_malloc(tlen + 1);
	_cleanup_sodium_ uint8_t *bin = sodium_malloc(tlen + 1);
	const char *body = text + strlen(SSH_PRIV_BEGIN), *end = strstr(text, SSH_PRIV_END);
	const uint8_t *s, *pk, *sk, *c;
	struct ssh_reader r, priv;

	if (!b64 || !bin)
		return err_set(err, ERR_FAILED, ENOMEM, "cannot allocate guarded memory");
	if (!end)
		return err_set(err, ERR_REFUSED, EINVAL, "%s holds a malformed key", path);
	for (const char *q = body; q < end; q++)
		if (*q != '\n' && *q != '\r' && *q != ' ' && *q != '\t')
			b64[b64_len++] = *q;
	b64[b64_len] = '\0';
	if (sodium_base642bin(bin, tlen, b64, b64_len, NULL, &bin_len, NULL,
	                      sodium_base64_VARIANT_ORIGINAL) < 0 ||
	    bin_len < sizeof(SSH_PRIV_MAGIC) || memcmp(bin, SSH_PRIV_MAGIC, sizeof(SSH_PRIV_MAGIC)))
		return err_set(err, ERR_REFUSED, EINVAL, "%s holds a malformed key", path);
	r = (struct ssh_reader){.p = bin + sizeof(SSH_PRIV_MAGIC), .end = bin + bin_len};
	s = get_string(&r, &len);
	if (!r.bad && !string_is(s, len, "none"))
		return err_set(err, ERR_REFUSED, EINVAL,
		               "%s is protected by a passphrase; keys for the agent are not "
		               "(ssh-keygen -p -N '' -f FILE removes it)",
		               path);
	s = get_string(&r, &len);      /* kdf */
	(void)get_string(&r, &pk_len); /* kdf options */
	if (!r.bad && (!string_is(s, len, "none") || get_u32(&r) != 1))
		return err_set(err, ERR_REFUSED, EINVAL, "%s must hold one unencrypted key", path);
	(void)get_string(&r, &len); /* the public key; the private part repeats it */
	s = get_string(&r, &len);
	priv = (struct ssh_reader){.p = s, .end = s + len};
	if (r.bad || get_u32(&priv) != get_u32(&priv))
		return err_set(err, ERR_REFUSED, EINVAL, "%s holds a malformed key", path);
	s = get_string(&priv, &len);
	if (!priv.bad && !string_is(s, len, KEYS_TYPE_SSH))
		return err_set(err, ERR_REFUSED, EINVAL, "%s is not an ssh-ed25519 key", path);
	pk = get_string(&priv, &pk_len);
	sk = get_string(&priv, &sk_len);
	c = get_string(&priv, &c_len);
	if (priv.bad || pk_len != KEYS_PUBLIC_LEN || sk_len != crypto_sign_SECRETKEYBYTES ||
	    memcmp(sk + KEYS_SEED_LEN, pk, KEYS_PUBLIC_LEN) != 0)
		return err_set(err, ERR_REFUSED, EINVAL, "%s holds a malformed key", path);
	memcpy(seed, sk, KEYS_SEED_LEN);
	if (c_len >= KEYS_COMMENT_MAX)
		c_len = KEYS_COMMENT_MAX - 1;
	memcpy(comment, c, c_len);
	comment[c_len] = '\0';
	for (size_t i = 0; i < c_len; i++)
		if (comment[i] == '\n' || comment[i] == '\r')
			comment[i] = ' ';
	sodium_memzero(b64, b64_len);
	sodium_memzero(bin, bin_len);
	return 0;
}

int keys_load(const char *path, struct keypair **ret, struct err *err)
{
	_cleanup_sodium_ char *text = NULL;
	_cleanup_sodium_ uint8_t *seed = NULL;
	_cleanup_keypair_ struct keypair *kp = NULL;
	char comment[KEYS_COMMENT_MAX] = "";
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
	if (strncmp(text + strspn(text, " \t\r\n"), SSH_PRIV_BEGIN, strlen(SSH_PRIV_BEGIN)) == 0) {
		r = parse_secret_openssh(path, text + strspn(text, " \t\r\n"), seed, comment, err);
		if (r < 0)
			return r;
	} else if (token_is(kl.type, kl.type_len, KEYS_TYPE_SECRET)) {
		/* The format of earlier versions. */
		if (decode_key(kl.b64, kl.b64_len, seed) < 0)
			return err_set(err, ERR_REFUSED, EINVAL, "%s holds a malformed key", path);
		if (kl.comment_len >= sizeof(comment))
			kl.comment_len = sizeof(comment) - 1;
		memcpy(comment, kl.comment, kl.comment_len);
		comment[kl.comment_len] = '\0';
	} else {
		return err_set(err, ERR_REFUSED, EINVAL,
		               "%s is not an OpenSSH private key (or a %s key file)", path,
		               KEYS_TYPE_SECRET);
	}
	r = keys_from_seed(seed, &kp, err);
	if (r < 0)
		return r;
	memcpy(kp->comment, comment, sizeof(kp->comment));
	*ret = TAKE_PTR(kp);
	return 0;
}
