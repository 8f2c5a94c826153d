/* SPDX-License-Identifier: Apache-2.0 */
#include "handshake.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

/* Fixed sizes of the messages (docs/protocol.md has the byte layouts). */
#define CH_FIXED (1 + HS_MAGIC_LEN + 1)                   /* + 2n + 32 [+ extensions] */
#define SH_FIXED (1 + HS_MAGIC_LEN + HS_HASH_LEN + 2 + 1) /* + 2n + 32 + 32 */
#define HA_LEN (1 + KEYS_PUBLIC_LEN + KEYS_SIGNATURE_LEN) /* 97 */
#define GA_LEN (1 + KEYS_SIGNATURE_LEN)                   /* 65 */
#define REFUSE_FIXED (1 + HS_HASH_LEN + 1 + 1)            /* + 2n */
#define EXT_OFFER_MAX (2 + HS_CIPHERS_MAX)                /* type, length, cipher ids */
#define EXT_CHOICE_LEN 3                                  /* type, length 1, the cipher id */
#define TRANSCRIPT_MAX (4 * (FRAME_HEADER_LEN + FRAME_HANDSHAKE_MAX))

enum hs_state {
	ST_START,
	ST_AWAIT_CH,
	ST_AWAIT_SH,
	ST_AWAIT_HA,
	ST_AWAIT_GA,
	ST_DONE,
	ST_FAILED,
};

/* Lives in sodium_malloc memory: it holds the ephemeral secret, the shared secret and keys. */
struct handshake {
	enum hs_role role;
	enum hs_state state;
	unsigned frames; /* frames handed to handshake_on_frame(): how far the peer got */
	const struct keypair *identity;
	const struct authkeys *authorized;
	bool has_expected;
	uint8_t expected[KEYS_PUBLIC_LEN];
	bool fixed_ephemeral;
	uint16_t versions[HS_VERSIONS_MAX];
	size_t n_versions;
	uint16_t version;
	uint8_t ciphers[HS_CIPHERS_MAX]; /* host: the offer; guest: what it accepts */
	size_t n_ciphers;
	bool offered; /* the CLIENT_HELLO carried a cipher offer */
	uint8_t cipher;
	uint8_t e_sk[HS_X25519_LEN];
	uint8_t e_pk[HS_X25519_LEN];
	uint8_t dh[HS_X25519_LEN];
	bool has_peer;
	uint8_t peer_pk[KEYS_PUBLIC_LEN];
	uint8_t ch_hash[HS_HASH_LEN];
	uint8_t transcript[TRANSCRIPT_MAX];
	size_t tlen;
	uint8_t session_id[HS_HASH_LEN];
	uint8_t k_h2g[HS_KEY_LEN];
	uint8_t k_g2h[HS_KEY_LEN];
};

uint16_t handshake_pick_version(const uint16_t *a, size_t na, const uint16_t *b, size_t nb)
{
	uint16_t best = 0;

	for (size_t i = 0; i < na; i++)
		for (size_t j = 0; j < nb; j++)
			if (a[i] == b[j] && a[i] > best)
				best = a[i];
	return best;
}

int handshake_new(const struct hs_config *cfg, struct handshake **ret, struct err *err)
{
	struct handshake *hs;
	int r = keys_sodium_init(err);

	if (r < 0)
		return r;
	if (!cfg->identity || (cfg->role == HS_GUEST && !cfg->authorized))
		return err_set(err, ERR_FAILED, EINVAL,
		               "handshake: missing key or authorized keys");
	if (cfg->versions && (cfg->n_versions == 0 || cfg->n_versions > HS_VERSIONS_MAX))
		return err_set(err, ERR_FAILED, EINVAL, "handshake: 1 to %d versions",
		               HS_VERSIONS_MAX);
	if (cfg->ciphers && (cfg->n_ciphers == 0 || cfg->n_ciphers > HS_CIPHERS_MAX))
		return err_set(err, ERR_FAILED, EINVAL, "handshake: 1 to %d ciphers",
		               HS_CIPHERS_MAX);
	hs = sodium_malloc(sizeof(*hs));
	if (!hs)
		return err_set(err, ERR_FAILED, ENOMEM, "cannot allocate guarded memory");
	memset(hs, 0, sizeof(*hs));
	hs->role = cfg->role;
	hs->state = cfg->role == HS_HOST ? ST_START : ST_AWAIT_CH;
	hs->identity = cfg->identity;
	hs->authorized = cfg->authorized;
	if (cfg->expected_peer) {
		hs->has_expected = true;
		memcpy(hs->expected, cfg->expected_peer, KEYS_PUBLIC_LEN);
	}
	if (cfg->versions) {
		memcpy(hs->versions, cfg->versions, cfg->n_versions * sizeof(uint16_t));
		hs->n_versions = cfg->n_versions;
	} else {
		hs->versions[0] = HS_PROTOCOL_VERSION;
		hs->n_versions = 1;
	}
	if (cfg->ciphers) {
		memcpy(hs->ciphers, cfg->ciphers, cfg->n_ciphers);
		hs->n_ciphers = cfg->n_ciphers;
	} else {
		hs->n_ciphers = handshake_local_ciphers(hs->ciphers);
	}
	hs->cipher = HS_CIPHER_CHACHA20_POLY1305;
	if (cfg->ephemeral_secret) {
		hs->fixed_ephemeral = true;
		memcpy(hs->e_sk, cfg->ephemeral_secret, HS_X25519_LEN);
	}
	*ret = hs;
	return 0;
}

void handshake_free(struct handshake *hs)
{
	sodium_free(hs);
}

const uint8_t *handshake_peer_key(const struct handshake *hs)
{
	return hs->has_peer ? hs->peer_pk : NULL;
}

uint16_t handshake_version(const struct handshake *hs)
{
	return hs->version;
}

uint8_t handshake_cipher(const struct handshake *hs)
{
	return hs->cipher;
}

size_t handshake_local_ciphers(uint8_t out[HS_CIPHERS_MAX])
{
	size_t n = 0;

	if (sodium_init() >= 0) {
#ifdef crypto_aead_aegis256_KEYBYTES
		/* libsodium runs its AES-NI AEGIS-256 only with AVX too, else software AES (~300x
		 * slower). */
		if (sodium_runtime_has_aesni() && sodium_runtime_has_avx())
			out[n++] = HS_CIPHER_AEGIS256;
#endif
		if (crypto_aead_aes256gcm_is_available())
			out[n++] = HS_CIPHER_AES256_GCM;
	}
	out[n++] = HS_CIPHER_CHACHA20_POLY1305;
	return n;
}

const char *handshake_cipher_name(uint8_t cipher)
{
	switch (cipher) {
	case HS_CIPHER_CHACHA20_POLY1305:
		return "chacha20-poly1305";
	case HS_CIPHER_AES256_GCM:
		return "aes256-gcm";
	case HS_CIPHER_AEGIS256:
		return "aegis256";
	default:
		return "?";
	}
}

static bool cipher_listed(const uint8_t *v, size_t n, uint8_t cipher)
{
	return cipher == HS_CIPHER_CHACHA20_POLY1305 || memchr(v, cipher, n) != NULL;
}

/* Host: an offer only when it names more than ChaCha20-Poly1305 (else the hello of before). */
static size_t put_offer(const struct handshake *hs, uint8_t *p)
{
	if (hs->n_ciphers == 1 && hs->ciphers[0] == HS_CIPHER_CHACHA20_POLY1305)
		return 0;
	p[0] = HS_EXT_CIPHERS;
	p[1] = (uint8_t)hs->n_ciphers;
	memcpy(p + 2, hs->ciphers, hs->n_ciphers);
	return 2 + hs->n_ciphers;
}

/*
 * Guest: the extensions of a CLIENT_HELLO (type, length, value; unknown types skipped). Picks
 * the host's first cipher we accept; false when they are malformed.
 */
static bool take_offer(struct handshake *hs, const uint8_t *p, size_t len)
{
	hs->offered = false;
	hs->cipher = HS_CIPHER_CHACHA20_POLY1305;
	while (len > 0) {
		size_t n;
		if (len < 2 || (n = p[1]) > len - 2)
			return false;
		if (p[0] == HS_EXT_CIPHERS) {
			if (hs->offered || n == 0 || n > HS_CIPHERS_MAX)
				return false;
			hs->offered = true;
			for (size_t i = n; i > 0; i--)
				if (cipher_listed(hs->ciphers, hs->n_ciphers, p[1 + i]))
					hs->cipher = p[1 + i];
		}
		p += 2 + n;
		len -= 2 + n;
	}
	return true;
}

/* Host: the guest's choice after S_G (none from a guest that predates the offer). */
static bool take_choice(struct handshake *hs, const uint8_t *p, size_t len)
{
	hs->cipher = HS_CIPHER_CHACHA20_POLY1305;
	if (len == 0)
		return true;
	if (!hs->offered || len != EXT_CHOICE_LEN || p[0] != HS_EXT_CIPHERS || p[1] != 1 ||
	    !cipher_listed(hs->ciphers, hs->n_ciphers, p[2]))
		return false;
	hs->cipher = p[2];
	return true;
}

const uint8_t *handshake_session_id(const struct handshake *hs)
{
	return hs->session_id;
}

void handshake_session_keys(const struct handshake *hs, uint8_t tx[HS_KEY_LEN],
                            uint8_t rx[HS_KEY_LEN])
{
	const uint8_t *mine = hs->role == HS_HOST ? hs->k_h2g : hs->k_g2h;
	const uint8_t *theirs = hs->role == HS_HOST ? hs->k_g2h : hs->k_h2g;

	memcpy(tx, mine, HS_KEY_LEN);
	memcpy(rx, theirs, HS_KEY_LEN);
}

static void new_ephemeral(struct handshake *hs)
{
	if (!hs->fixed_ephemeral)
		randombytes_buf(hs->e_sk, sizeof(hs->e_sk));
	crypto_scalarmult_base(hs->e_pk, hs->e_sk);
}

static int fail(struct handshake *hs, struct err *err, int cls, int code, const char *msg)
{
	hs->state = ST_FAILED;
	return err_set(err, cls, code, "%s", msg);
}

/* Append [marker] + length + body to out; returns where the frame starts in out. */
static const uint8_t *emit(struct hs_output *out, bool marker, const uint8_t *body, size_t len)
{
	uint8_t *frame;

	if (marker) {
		memcpy(out->buf + out->len, frame_marker, FRAME_MARKER_LEN);
		out->len += FRAME_MARKER_LEN;
	}
	frame = out->buf + out->len;
	frame_put_header(frame, (uint32_t)len);
	memcpy(frame + FRAME_HEADER_LEN, body, len);
	out->len += FRAME_HEADER_LEN + len;
	return frame;
}

static void transcript_add(struct handshake *hs, const uint8_t *frame, size_t len)
{
	memcpy(hs->transcript + hs->tlen, frame, len);
	hs->tlen += len;
}

/* BLAKE2b-256(transcript || extra) */
static void transcript_hash(const struct handshake *hs, const uint8_t *extra, size_t extra_len,
                            uint8_t out[HS_HASH_LEN])
{
	crypto_generichash_state st;

	crypto_generichash_init(&st, NULL, 0, HS_HASH_LEN);
	crypto_generichash_update(&st, hs->transcript, hs->tlen);
	if (extra_len)
		crypto_generichash_update(&st, extra, extra_len);
	crypto_generichash_final(&st, out, HS_HASH_LEN);
	sodium_memzero(&st, sizeof(st));
}

/* label || hash, the message each identity key signs */
static size_t auth_message(uint8_t *buf, const char *label, const uint8_t hash[HS_HASH_LEN])
{
	size_t n = strlen(label);

	memcpy(buf, label, n);
	memcpy(buf + n, hash, HS_HASH_LEN);
	return n + HS_HASH_LEN;
}

/* k = BLAKE2b-256(key = dh, label || session id) */
static void derive_key(const struct handshake *hs, const char *label, uint8_t out[HS_KEY_LEN])
{
	crypto_generichash_state st;

	crypto_generichash_init(&st, hs->dh, sizeof(hs->dh), HS_KEY_LEN);
	crypto_generichash_update(&st, (const uint8_t *)label, strlen(label));
	crypto_generichash_update(&st, hs->session_id, HS_HASH_LEN);
	crypto_generichash_final(&st, out, HS_KEY_LEN);
	sodium_memzero(&st, sizeof(st));
}

static void finish(struct handshake *hs)
{
	transcript_hash(hs, NULL, 0, hs->session_id);
	derive_key(hs, HS_LABEL_HOST_TO_GUEST, hs->k_h2g);
	derive_key(hs, HS_LABEL_GUEST_TO_HOST, hs->k_g2h);
	sodium_memzero(hs->dh, sizeof(hs->dh));
	sodium_memzero(hs->e_sk, sizeof(hs->e_sk));
	hs->state = ST_DONE;
}

static size_t put_versions(uint8_t *p, const uint16_t *v, size_t n)
{
	p[0] = (uint8_t)n;
	for (size_t i = 0; i < n; i++)
		put_be16(p + 1 + 2 * i, v[i]);
	return 1 + 2 * n;
}

/* Parse "n, n versions" at p (avail bytes); returns bytes used or 0 when malformed. */
static size_t get_versions(const uint8_t *p, size_t avail, uint16_t *v, size_t *ret_n)
{
	size_t n;

	if (avail < 1)
		return 0;
	n = p[0];
	if (n == 0 || n > HS_VERSIONS_MAX || avail < 1 + 2 * n)
		return 0;
	for (size_t i = 0; i < n; i++)
		v[i] = get_be16(p + 1 + 2 * i);
	*ret_n = n;
	return 1 + 2 * n;
}

static void format_versions(char *buf, size_t size, const uint16_t *v, size_t n)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && off < size; i++)
		off += (size_t)snprintf(buf + off, size - off, "%s%u", i ? ", " : "", v[i]);
}

/* A refusal; the guest's first answer to a hello starts with a marker like any other. */
static void emit_refuse(struct handshake *hs, struct hs_output *out, uint8_t reason)
{
	bool marker = hs->role == HS_GUEST && hs->state == ST_AWAIT_CH;
	uint8_t body[REFUSE_FIXED + 2 * HS_VERSIONS_MAX];
	size_t n = 0;

	body[n++] = HS_REFUSE;
	memcpy(body + n, hs->ch_hash, HS_HASH_LEN);
	n += HS_HASH_LEN;
	body[n++] = reason;
	n += put_versions(body + n, hs->versions, hs->n_versions);
	emit(out, marker, body, n);
}

int handshake_start(struct handshake *hs, struct hs_output *out, struct err *err)
{
	uint8_t body[CH_FIXED + 2 * HS_VERSIONS_MAX + HS_X25519_LEN + EXT_OFFER_MAX];
	const uint8_t *frame;
	size_t n = 0, ext;

	out->len = 0;
	if (hs->role != HS_HOST || hs->state != ST_START)
		return err_set(err, ERR_FAILED, EINVAL,
		               "handshake: handshake_start is the host's first step");
	new_ephemeral(hs);
	body[n++] = HS_CLIENT_HELLO;
	memcpy(body + n, HS_MAGIC, HS_MAGIC_LEN);
	n += HS_MAGIC_LEN;
	n += put_versions(body + n, hs->versions, hs->n_versions);
	memcpy(body + n, hs->e_pk, HS_X25519_LEN);
	n += HS_X25519_LEN;
	ext = put_offer(hs, body + n);
	hs->offered = ext > 0;
	n += ext;
	frame = emit(out, true, body, n);
	transcript_add(hs, frame, FRAME_HEADER_LEN + n);
	crypto_generichash(hs->ch_hash, HS_HASH_LEN, frame, FRAME_HEADER_LEN + n, NULL, 0);
	hs->state = ST_AWAIT_SH;
	return HS_CONTINUE;
}

/* Both sides: the error a peer's REFUSE stands for. */
static int peer_refused(struct handshake *hs, const uint8_t *body, size_t len, struct err *err)
{
	uint16_t v[HS_VERSIONS_MAX] = {0};
	char theirs[128], ours[128];
	size_t nv = 0;
	const char *who = hs->role == HS_HOST ? "guest" : "host";
	char fp[KEYS_FINGERPRINT_MAX];

	hs->state = ST_FAILED;
	switch (body[1 + HS_HASH_LEN]) {
	case HS_REFUSE_VERSION:
		if (!get_versions(body + REFUSE_FIXED - 1, len - (REFUSE_FIXED - 1), v, &nv))
			nv = 0;
		format_versions(theirs, sizeof(theirs), v, nv);
		format_versions(ours, sizeof(ours), hs->versions, hs->n_versions);
		return err_set(err, ERR_REFUSED, EPROTONOSUPPORT,
		               "the %s refused the connection: no protocol version in common (it "
		               "speaks %s, we speak %s)",
		               who, nv ? theirs : "?", ours);
	case HS_REFUSE_KEY:
		keys_fingerprint(hs->identity->pk, fp);
		if (hs->role == HS_HOST)
			return err_set(
			    err, ERR_REFUSED, EKEYREJECTED,
			    "the guest refused the connection: our host key %s is not in "
			    "its authorized keys",
			    fp);
		return err_set(err, ERR_REFUSED, EKEYREJECTED,
		               "the host refused the connection: the guest key %s is not the key "
		               "it pinned",
		               fp);
	case HS_REFUSE_SIGNATURE:
		return err_set(err, ERR_REFUSED, EBADMSG,
		               "the %s refused the connection: our signature did not verify", who);
	default:
		return err_set(err, ERR_REFUSED, EPROTO,
		               "the %s refused the connection: it could not parse our handshake",
		               who);
	}
}

static bool is_refuse_for_us(const struct handshake *hs, const uint8_t *body, size_t len)
{
	return len >= REFUSE_FIXED && body[0] == HS_REFUSE &&
	       memcmp(body + 1, hs->ch_hash, HS_HASH_LEN) == 0;
}

/* Guest: CLIENT_HELLO -> SERVER_HELLO */
static int guest_on_hello(struct handshake *hs, const uint8_t *body, size_t len,
                          struct hs_output *out, struct err *err)
{
	uint8_t
	    sh[SH_FIXED + 2 * HS_VERSIONS_MAX + HS_X25519_LEN + KEYS_PUBLIC_LEN + EXT_CHOICE_LEN];
	uint16_t theirs[HS_VERSIONS_MAX];
	const uint8_t *frame, *peer_e;
	uint8_t header[FRAME_HEADER_LEN];
	size_t nv = 0, used, n = 0, ext;
	crypto_generichash_state st;

	/* Not a hello: leftovers of an older session. Skip to the next marker. */
	if (len < CH_FIXED || body[0] != HS_CLIENT_HELLO ||
	    memcmp(body + 1, HS_MAGIC, HS_MAGIC_LEN) != 0)
		return HS_RESYNC;
	frame_put_header(header, (uint32_t)len);
	crypto_generichash_init(&st, NULL, 0, HS_HASH_LEN);
	crypto_generichash_update(&st, header, sizeof(header));
	crypto_generichash_update(&st, body, len);
	crypto_generichash_final(&st, hs->ch_hash, HS_HASH_LEN);
	used = get_versions(body + 1 + HS_MAGIC_LEN, len - 1 - HS_MAGIC_LEN, theirs, &nv);
	ext = 1 + HS_MAGIC_LEN + used + HS_X25519_LEN;
	if (!used || len < ext || !take_offer(hs, body + ext, len - ext)) {
		emit_refuse(hs, out, HS_REFUSE_MALFORMED);
		return fail(hs, err, ERR_FAILED, EPROTO, "malformed client hello");
	}
	peer_e = body + 1 + HS_MAGIC_LEN + used;
	hs->version = handshake_pick_version(hs->versions, hs->n_versions, theirs, nv);
	if (!hs->version) {
		char a[128], b[128];
		emit_refuse(hs, out, HS_REFUSE_VERSION);
		format_versions(a, sizeof(a), theirs, nv);
		format_versions(b, sizeof(b), hs->versions, hs->n_versions);
		hs->state = ST_FAILED;
		return err_set(err, ERR_REFUSED, EPROTONOSUPPORT,
		               "no protocol version in common: the host speaks %s, we speak %s", a,
		               b);
	}
	new_ephemeral(hs);
	if (crypto_scalarmult(hs->dh, hs->e_sk, peer_e) < 0) {
		emit_refuse(hs, out, HS_REFUSE_MALFORMED);
		return fail(hs, err, ERR_FAILED, EPROTO,
		            "the host's ephemeral key is a low-order point");
	}
	hs->tlen = 0;
	transcript_add(hs, header, sizeof(header));
	transcript_add(hs, body, len);

	sh[n++] = HS_SERVER_HELLO;
	memcpy(sh + n, HS_MAGIC, HS_MAGIC_LEN);
	n += HS_MAGIC_LEN;
	memcpy(sh + n, hs->ch_hash, HS_HASH_LEN);
	n += HS_HASH_LEN;
	put_be16(sh + n, hs->version);
	n += 2;
	n += put_versions(sh + n, hs->versions, hs->n_versions);
	memcpy(sh + n, hs->e_pk, HS_X25519_LEN);
	n += HS_X25519_LEN;
	memcpy(sh + n, hs->identity->pk, KEYS_PUBLIC_LEN);
	n += KEYS_PUBLIC_LEN;
	if (hs->offered) {
		sh[n++] = HS_EXT_CIPHERS;
		sh[n++] = 1;
		sh[n++] = hs->cipher;
	}
	frame = emit(out, true, sh, n);
	transcript_add(hs, frame, FRAME_HEADER_LEN + n);
	hs->state = ST_AWAIT_HA;
	return HS_CONTINUE;
}

/* Host: SERVER_HELLO -> HOST_AUTH */
static int host_on_hello(struct handshake *hs, const uint8_t *body, size_t len,
                         struct hs_output *out, struct err *err)
{
	uint8_t ha[HA_LEN], header[FRAME_HEADER_LEN], th[HS_HASH_LEN];
	uint8_t msg[sizeof(HS_LABEL_HOST_AUTH) + HS_HASH_LEN];
	uint16_t theirs[HS_VERSIONS_MAX], chosen, best;
	size_t nv = 0, used, fixed;
	const uint8_t *p;
	const uint8_t *frame;
	int r;

	if (is_refuse_for_us(hs, body, len))
		return peer_refused(hs, body, len, err);
	/* Anything else not answering our hello is a leftover: skip it. */
	if (len < SH_FIXED || body[0] != HS_SERVER_HELLO ||
	    memcmp(body + 1, HS_MAGIC, HS_MAGIC_LEN) != 0 ||
	    memcmp(body + 1 + HS_MAGIC_LEN, hs->ch_hash, HS_HASH_LEN) != 0)
		return HS_RESYNC;
	p = body + 1 + HS_MAGIC_LEN + HS_HASH_LEN;
	chosen = get_be16(p);
	used = get_versions(p + 2, len - (size_t)(p + 2 - body), theirs, &nv);
	fixed = SH_FIXED - 1 + used + HS_X25519_LEN + KEYS_PUBLIC_LEN;
	if (!used || len < fixed || !take_choice(hs, body + fixed, len - fixed))
		return fail(hs, err, ERR_FAILED, EPROTO, "malformed server hello");
	best = handshake_pick_version(hs->versions, hs->n_versions, theirs, nv);
	if (!best || chosen != best)
		return fail(hs, err, ERR_FAILED, EPROTO,
		            "the guest chose a protocol version that is not the highest in common");
	p += 2 + used;
	memcpy(hs->peer_pk, p + HS_X25519_LEN, KEYS_PUBLIC_LEN);
	hs->has_peer = true;
	if (hs->has_expected && memcmp(hs->peer_pk, hs->expected, KEYS_PUBLIC_LEN) != 0) {
		char got[KEYS_FINGERPRINT_MAX], want[KEYS_FINGERPRINT_MAX];
		emit_refuse(hs, out, HS_REFUSE_KEY);
		keys_fingerprint(hs->peer_pk, got);
		keys_fingerprint(hs->expected, want);
		hs->state = ST_FAILED;
		return err_set(err, ERR_REFUSED, EKEYREJECTED,
		               "the guest's key %s is not the pinned key %s", got, want);
	}
	if (crypto_scalarmult(hs->dh, hs->e_sk, p) < 0)
		return fail(hs, err, ERR_FAILED, EPROTO,
		            "the guest's ephemeral key is a low-order point");
	hs->version = chosen;
	frame_put_header(header, (uint32_t)len);
	transcript_add(hs, header, sizeof(header));
	transcript_add(hs, body, len);

	/* HOST_AUTH: the signature covers the transcript up to and including our key. */
	ha[0] = HS_HOST_AUTH;
	memcpy(ha + 1, hs->identity->pk, KEYS_PUBLIC_LEN);
	frame_put_header(header, HA_LEN);
	{
		uint8_t prefix[FRAME_HEADER_LEN + 1 + KEYS_PUBLIC_LEN];
		memcpy(prefix, header, FRAME_HEADER_LEN);
		memcpy(prefix + FRAME_HEADER_LEN, ha, 1 + KEYS_PUBLIC_LEN);
		transcript_hash(hs, prefix, sizeof(prefix), th);
	}
	r = keys_sign(hs->identity, msg, auth_message(msg, HS_LABEL_HOST_AUTH, th),
	              ha + 1 + KEYS_PUBLIC_LEN, err);
	if (r < 0) {
		hs->state = ST_FAILED;
		return r;
	}
	frame = emit(out, false, ha, HA_LEN);
	transcript_add(hs, frame, FRAME_HEADER_LEN + HA_LEN);
	hs->state = ST_AWAIT_GA;
	return HS_CONTINUE;
}

/* Guest: HOST_AUTH -> GUEST_AUTH, done */
static int guest_on_auth(struct handshake *hs, const uint8_t *body, size_t len,
                         struct hs_output *out, struct err *err)
{
	uint8_t header[FRAME_HEADER_LEN], th[HS_HASH_LEN], ga[GA_LEN];
	uint8_t msg[sizeof(HS_LABEL_GUEST_AUTH) + HS_HASH_LEN];
	char fp[KEYS_FINGERPRINT_MAX];
	const uint8_t *frame;
	int r;

	if (len >= 1 && body[0] == HS_REFUSE && is_refuse_for_us(hs, body, len))
		return peer_refused(hs, body, len, err);
	if (len != HA_LEN || body[0] != HS_HOST_AUTH) {
		emit_refuse(hs, out, HS_REFUSE_MALFORMED);
		return fail(hs, err, ERR_FAILED, EPROTO, "expected the host's authentication");
	}
	memcpy(hs->peer_pk, body + 1, KEYS_PUBLIC_LEN);
	hs->has_peer = true;
	keys_fingerprint(hs->peer_pk, fp);
	if (!authkeys_find(hs->authorized, hs->peer_pk)) {
		emit_refuse(hs, out, HS_REFUSE_KEY);
		hs->state = ST_FAILED;
		return err_set(err, ERR_REFUSED, EKEYREJECTED, "host key %s is not authorized", fp);
	}
	frame_put_header(header, (uint32_t)len);
	{
		uint8_t prefix[FRAME_HEADER_LEN + 1 + KEYS_PUBLIC_LEN];
		memcpy(prefix, header, FRAME_HEADER_LEN);
		memcpy(prefix + FRAME_HEADER_LEN, body, 1 + KEYS_PUBLIC_LEN);
		transcript_hash(hs, prefix, sizeof(prefix), th);
	}
	if (keys_verify(hs->peer_pk, msg, auth_message(msg, HS_LABEL_HOST_AUTH, th),
	                body + 1 + KEYS_PUBLIC_LEN) < 0) {
		emit_refuse(hs, out, HS_REFUSE_SIGNATURE);
		hs->state = ST_FAILED;
		return err_set(err, ERR_REFUSED, EBADMSG,
		               "the signature of host key %s does not verify over this handshake "
		               "(replayed or tampered)",
		               fp);
	}
	transcript_add(hs, header, sizeof(header));
	transcript_add(hs, body, len);

	ga[0] = HS_GUEST_AUTH;
	frame_put_header(header, GA_LEN);
	{
		uint8_t prefix[FRAME_HEADER_LEN + 1];
		memcpy(prefix, header, FRAME_HEADER_LEN);
		prefix[FRAME_HEADER_LEN] = HS_GUEST_AUTH;
		transcript_hash(hs, prefix, sizeof(prefix), th);
	}
	r = keys_sign(hs->identity, msg, auth_message(msg, HS_LABEL_GUEST_AUTH, th), ga + 1, err);
	if (r < 0) {
		hs->state = ST_FAILED;
		return r;
	}
	frame = emit(out, false, ga, GA_LEN);
	transcript_add(hs, frame, FRAME_HEADER_LEN + GA_LEN);
	finish(hs);
	return HS_DONE;
}

/* Host: GUEST_AUTH, done */
static int host_on_auth(struct handshake *hs, const uint8_t *body, size_t len, struct err *err)
{
	uint8_t header[FRAME_HEADER_LEN], th[HS_HASH_LEN];
	uint8_t msg[sizeof(HS_LABEL_GUEST_AUTH) + HS_HASH_LEN];
	char fp[KEYS_FINGERPRINT_MAX];

	if (is_refuse_for_us(hs, body, len))
		return peer_refused(hs, body, len, err);
	if (len != GA_LEN || body[0] != HS_GUEST_AUTH)
		return fail(hs, err, ERR_FAILED, EPROTO, "expected the guest's authentication");
	frame_put_header(header, (uint32_t)len);
	{
		uint8_t prefix[FRAME_HEADER_LEN + 1];
		memcpy(prefix, header, FRAME_HEADER_LEN);
		prefix[FRAME_HEADER_LEN] = HS_GUEST_AUTH;
		transcript_hash(hs, prefix, sizeof(prefix), th);
	}
	if (keys_verify(hs->peer_pk, msg, auth_message(msg, HS_LABEL_GUEST_AUTH, th), body + 1) <
	    0) {
		keys_fingerprint(hs->peer_pk, fp);
		hs->state = ST_FAILED;
		return err_set(err, ERR_REFUSED, EBADMSG,
		               "the signature of guest key %s does not verify over this handshake "
		               "(replayed or tampered)",
		               fp);
	}
	transcript_add(hs, header, sizeof(header));
	transcript_add(hs, body, len);
	finish(hs);
	return HS_DONE;
}

int handshake_on_frame(struct handshake *hs, const uint8_t *body, size_t len, struct hs_output *out,
                       struct err *err)
{
	int r;

	out->len = 0;
	if (len == 0 || len > FRAME_HANDSHAKE_MAX)
		return HS_RESYNC;
	switch (hs->state) {
	case ST_AWAIT_CH:
		r = guest_on_hello(hs, body, len, out, err);
		break;
	case ST_AWAIT_SH:
		r = host_on_hello(hs, body, len, out, err);
		break;
	case ST_AWAIT_HA:
		r = guest_on_auth(hs, body, len, out, err);
		break;
	case ST_AWAIT_GA:
		r = host_on_auth(hs, body, len, err);
		break;
	case ST_DONE:
		return err_set(err, ERR_FAILED, EINVAL, "handshake: already done");
	default:
		return err_set(err, ERR_FAILED, EINVAL,
		               "handshake: not in a state to take a frame");
	}
	/* Progress is a message taken, not any frame: frames skipped as noise do not count. */
	if (r == HS_CONTINUE || r == HS_DONE)
		hs->frames++;
	return r;
}

int handshake_on_marker(struct handshake *hs, struct err *err)
{
	switch (hs->state) {
	case ST_AWAIT_CH:
	case ST_AWAIT_SH:
		return HS_CONTINUE;
	case ST_AWAIT_HA:
		/* The host started over: so do we, with a new ephemeral key. */
		sodium_memzero(hs->dh, sizeof(hs->dh));
		hs->has_peer = false;
		hs->tlen = 0;
		hs->state = ST_AWAIT_CH;
		return HS_CONTINUE;
	case ST_AWAIT_GA:
		return fail(hs, err, ERR_FAILED, EPROTO,
		            "the guest started over during the handshake");
	default:
		return err_set(err, ERR_FAILED, EINVAL,
		               "handshake: not in a state to take a marker");
	}
}

unsigned handshake_frames(const struct handshake *hs)
{
	return hs ? hs->frames : 0;
}
