/* SPDX-License-Identifier: Apache-2.0 */
#include "github_app.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#ifndef SA_NO_LIBCRYPTO
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#endif

#define JWT_HEADER "{\"alg\":\"RS256\",\"typ\":\"JWT\"}"
#define RSA_MIN_BITS 2048

int github_app_id_check(const char *app_id, struct err *err)
{
	size_t n = app_id ? strlen(app_id) : 0;

	if (!n || n > GITHUB_APP_ID_MAX ||
	    strspn(app_id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.") != n)
		return err_set(
		    err, ERR_REFUSED, EINVAL,
		    "--app-id wants the app's id (digits, on the app's settings page) or "
		    "its client id, not '%.64s'",
		    app_id ? app_id : "");
	return 0;
}

#ifdef SA_NO_LIBCRYPTO

int github_app_jwt(const char *app_id, const char *key, size_t key_len, int64_t now, char **ret,
                   size_t *ret_len, struct err *err)
{
	(void)app_id, (void)key, (void)key_len, (void)now;
	*ret = NULL;
	*ret_len = 0;
	return err_set(err, ERR_REFUSED, EOPNOTSUPP,
	               "this sandbox-ctl was built without libcrypto (the static build), so it "
	               "cannot sign the app's JWT: use the sandbox-ctl of the Debian package "
	               "(linked against libcrypto)");
}

#else

/* No passphrase prompt: an encrypted key fails instead of reading the terminal. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
	(void)buf, (void)size, (void)rwflag, (void)u;
	return 0;
}

static int ossl_err(struct err *err, int cls, const char *what)
{
	char text[256] = "";
	unsigned long e = ERR_peek_last_error();

	if (e)
		ERR_error_string_n(e, text, sizeof(text));
	ERR_clear_error();
	return err_set(err, cls, cls == ERR_REFUSED ? EINVAL : EIO, "%s%s%s", what,
	               text[0] ? ": " : "", text);
}

static EVP_PKEY *key_load(const char *key, size_t key_len, struct err *err)
{
	BIO *bio = BIO_new_mem_buf(key, (int)key_len);
	EVP_PKEY *pkey;

	if (!bio) {
		err_oom(err);
		return NULL;
	}
	pkey = PEM_read_bio_PrivateKey(bio, NULL, no_passphrase, NULL);
	BIO_free(bio);
	if (!pkey) {
		ossl_err(err, ERR_REFUSED,
		         "the private key is not a PEM private key without a passphrase (the "
		         "app's settings page makes one: \"Generate a private key\")");
		return NULL;
	}
	if (EVP_PKEY_get_base_id(pkey) != EVP_PKEY_RSA || EVP_PKEY_get_bits(pkey) < RSA_MIN_BITS) {
		err_set(err, ERR_REFUSED, EINVAL,
		        "the private key is not an RSA key of at least %d bits: GitHub Apps sign "
		        "with RS256",
		        RSA_MIN_BITS);
		EVP_PKEY_free(pkey);
		return NULL;
	}
	return pkey;
}

/* base64url of len bytes, appended at out (room for sodium_base64_ENCODED_LEN). */
static size_t b64url(char *out, size_t room, const void *bin, size_t len)
{
	sodium_bin2base64(out, room, bin, len, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	return strlen(out);
}

static int sign(EVP_PKEY *pkey, const char *data, size_t len, unsigned char **ret, size_t *ret_len,
                struct err *err)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char *sig = NULL;
	size_t n = 0;
	int r = 0;

	if (!ctx)
		return err_oom(err);
	if (EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, pkey) != 1 ||
	    EVP_DigestSign(ctx, NULL, &n, (const unsigned char *)data, len) != 1 ||
	    !(sig = OPENSSL_malloc(n)) ||
	    EVP_DigestSign(ctx, sig, &n, (const unsigned char *)data, len) != 1) {
		OPENSSL_free(sig);
		sig = NULL;
		r = ossl_err(err, ERR_FAILED, "signing the app's JWT (RS256)");
	}
	EVP_MD_CTX_free(ctx);
	*ret = sig;
	*ret_len = n;
	return r;
}

int github_app_jwt(const char *app_id, const char *key, size_t key_len, int64_t now, char **ret,
                   size_t *ret_len, struct err *err)
{
	char claims[160];
	unsigned char *sig = NULL;
	size_t sig_len = 0, cap, n;
	EVP_PKEY *pkey;
	char *jwt;
	int m;

	*ret = NULL;
	*ret_len = 0;
	if (github_app_id_check(app_id, err) < 0)
		return err_ret(err);
	m = snprintf(claims, sizeof(claims), "{\"iat\":%lld,\"exp\":%lld,\"iss\":\"%s\"}",
	             (long long)(now - GITHUB_APP_IAT_BACK),
	             (long long)(now + GITHUB_APP_EXP_AHEAD), app_id);
	if (m < 0 || (size_t)m >= sizeof(claims))
		return err_set(err, ERR_REFUSED, EINVAL, "the app id is too long");
	pkey = key_load(key, key_len, err);
	if (!pkey)
		return err_ret(err);
	/* header.claims.signature; the signature of an RSA key of up to 16384 bits fits */
	cap = sodium_base64_ENCODED_LEN(sizeof(JWT_HEADER),
	                                sodium_base64_VARIANT_URLSAFE_NO_PADDING) +
	      sodium_base64_ENCODED_LEN(sizeof(claims), sodium_base64_VARIANT_URLSAFE_NO_PADDING) +
	      sodium_base64_ENCODED_LEN((size_t)EVP_PKEY_get_size(pkey),
	                                sodium_base64_VARIANT_URLSAFE_NO_PADDING) +
	      2;
	jwt = sodium_malloc(cap);
	if (!jwt) {
		EVP_PKEY_free(pkey);
		return err_set(err, ERR_FAILED, ENOMEM, "cannot allocate guarded memory");
	}
	n = b64url(jwt, cap, JWT_HEADER, strlen(JWT_HEADER));
	jwt[n++] = '.';
	n += b64url(jwt + n, cap - n, claims, (size_t)m);
	if (sign(pkey, jwt, n, &sig, &sig_len, err) < 0) {
		EVP_PKEY_free(pkey);
		sodium_free(jwt);
		return err_ret(err);
	}
	EVP_PKEY_free(pkey);
	jwt[n++] = '.';
	n += b64url(jwt + n, cap - n, sig, sig_len);
	OPENSSL_free(sig);
	*ret = jwt;
	*ret_len = n;
	return 0;
}

#endif
