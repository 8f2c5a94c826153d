/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The secret scrubber.
 *
 * What is matched. Every secret of SCRUB_MIN_SECRET bytes or more expands into a set of
 * patterns, all at least 8 bytes long:
 *   - the raw bytes;
 *   - the raw bytes as UTF-16, little- and big-endian (decoded from UTF-8; a value that is not
 *     UTF-8 widened byte by byte);
 *   - percent-encoded forms as the common encoders write them: the bytes outside a "safe" set
 *     become %XX, with upper- and lower-case hex, and a space either %20 or '+'. The safe sets
 *     are RFC 3986 unreserved (curl_easy_escape, Python quote_plus, Go QueryEscape, PHP
 *     rawurlencode), that plus !'()* (JavaScript encodeURIComponent), that plus / (Python
 *     quote), alphanumerics plus -._* (Java URLEncoder, Ruby URI.encode_www_form_component)
 *     and alphanumerics plus -._ (PHP urlencode);
 *   - base64 in the standard and the URL-safe alphabet: the whole encoding with and without
 *     padding, and, for a secret that sits inside a longer encoded stream ("user:secret" in a
 *     Basic auth header), the characters that depend on the secret alone when it starts at
 *     byte 0, 1 or 2 of a 3-byte group. Those cover every alignment.
 * What is not caught: the (at most two) base64 characters at each end of an embedded secret
 *  that mix its bits with its neighbours' (they reveal at most 4 bits each); base64 broken by
 *  line wrapping (PEM, MIME) inside the secret; percent-encoding mixing upper- and lower-case
 *  hex in one value, or a safe set not listed above; double encodings (base64 of a
 *  percent-encoded secret and the like, UTF-16 of an encoded form), UTF-32, hex dumps, and any
 *  other transformation; and a secret with anything inserted in its middle, such as an ANSI
 *  escape sequence (a colour change between two of its characters, "sk-ant-\033[1mabc..."):
 *  the bytes on either side of the insertion are each shorter than the secret and stay in the
 *  clear, since masking every fragment of 8 bytes would also mask ordinary text.
 *
 * GitHub tokens are matched by shape, known or not: gh[pousr]_ followed by 36 or more of
 * [A-Za-z0-9_], and github_pat_ followed by 22 or more. The token is masked to the end of its
 * run of [A-Za-z0-9_] however long the run is, so no cap on the token length is needed: once
 * the prefix and the minimum are seen (40 bytes at most), the rest is masked as it streams by.
 *
 * How it is masked. Every byte covered by any match (overlapping matches included) is covered,
 * and each maximal run of covered bytes becomes one "[REDACTED]". So a secret that contains
 * another is masked whole, two overlapping secrets are masked over their union, and adjacent
 * matches give a single marker.
 *
 * How it is matched. Positions are scanned in order; at each one the 8 bytes there are hashed
 * and looked up in a bit filter (mostly a miss, one load and one multiply per byte), then in an
 * open-addressing table of the patterns' 8-byte prefixes, and the candidates sharing that
 * prefix are compared longest first. Deciding position i needs the bytes [i, i + L) only, where
 * L = max(longest pattern, 40); so a stream holds back at most L - 1 bytes, emits everything
 * before that, and its output equals scrub_string() of the concatenated input.
 *
 * Where secrets live. The secrets and every pattern and index derived from them sit in
 * sodium_malloc memory (guard pages, locked, zeroed when freed), made inaccessible with
 * sodium_mprotect_noaccess whenever no scrub is running; a mutex counts the scrubs in flight,
 * so several threads may scrub with one scrubber. scrub_add() refuses while a scrub runs.
 *
 * What it costs. Each guarded region is an mmap, three mprotects, an madvise and an mlock,
 * then as many again to free it, and the first touch of each page faults; where a page fault
 * costs 13 microseconds and an mprotect 20 to 50 (a page-table-based hypervisor), allocating
 * the regions anew for every secret added took a millisecond. So the regions are kept, each
 * with room to grow (whole pages, at least double the last size): the secrets and the work space
 * of a rebuild (freed instead once a long secret grew it past 64 KiB); the index is kept in
 * its pages without more room, since each scrub changes their protection twice. A rebuild
 * that fits writes the index over the old one, which no scrub reads meanwhile (scrub_add()
 * refuses while one runs). A stream freed leaves its window (wiped) and its output buffer to
 * the next stream made from the same scrubber.
 */
#include "scrub.h"

#include <errno.h>
#include <pthread.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PREFIX_LEN 8
#define TOKEN_LOOKAHEAD 40 /* "ghp_" and 36 token characters */
#define OUT_CAP (64 * 1024)
#define REDACTED_LEN (sizeof(SCRUB_REDACTED) - 1)
/*
 * The work region's least size: a boot's usual secrets (a key of 128 characters, then the MCP
 * token) are rebuilt in it without growing it. One grown past WORK_KEEP_MAX by a long secret is
 * freed after its rebuild, not kept locked in memory.
 */
#define WORK_MIN (16 * 1024 - 16)
#define WORK_KEEP_MAX (64 * 1024)

struct pattern {
	uint32_t off; /* into index.bytes */
	uint32_t len;
};

struct slot {
	uint64_t prefix;
	uint32_t first; /* into index.pats; patterns sharing the prefix, longest first */
	uint32_t count; /* 0: empty slot */
};

/* One sodium_malloc region: this header, then the arrays it points into. */
struct index {
	unsigned fbits; /* log2 of the filter's bit count */
	unsigned tbits; /* log2 of the slot count */
	size_t maxlen;
	uint64_t *filter;
	struct slot *slots;
	struct pattern *pats;
	uint8_t *bytes;
};

struct scrubber {
	pthread_mutex_t lock;
	unsigned users;     /* scrubs in flight: the index is readable while non-zero */
	uint8_t *secrets;   /* sodium region: (uint32_t len, bytes)... */
	size_t secrets_len; /* bytes used in it */
	size_t secrets_cap;
	size_t count;
	size_t maxlen;     /* the longest pattern */
	struct index *idx; /* sodium region, or NULL without secrets */
	size_t idx_cap;    /* the bytes that region holds */
	uint8_t *work;     /* sodium region: a rebuild's patterns, then its scratch space */
	size_t work_cap;   /* (inaccessible between rebuilds) */
	struct scrub_stream *spare; /* a freed stream, kept for the next one */
	bool newline_secret; /* some secret holds '\n': a line end is no safe point to flush */
};

struct scrub_stream {
	const struct scrubber *s;
	scrub_sink_fn sink;
	void *userdata;
	uint8_t *win; /* sodium region: held-back bytes, then the head of the next write */
	size_t win_cap;
	size_t held;
	uint64_t pos;       /* absolute offset of the next position to scan */
	uint64_t cover_end; /* bytes before this offset are covered by a known pattern */
	bool swallow;       /* inside a GitHub token: its word characters are covered */
	bool in_redact;     /* the last decided byte was covered */
	int error;          /* the sink's first failure, sticky */
	char *out;          /* scrubbed bytes not yet given to the sink (NULL: straight to it) */
	size_t out_len;
};

static const uint64_t FILTER_MUL = 0x9E3779B97F4A7C15ULL;
static const uint64_t SLOT_MUL = 0xC2B2AE3D27D4EB4FULL;

static bool is_word(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_';
}

static size_t round16(size_t n)
{
	return (n + 15) & ~(size_t)15;
}

/* sodium_malloc'd memory is aligned only when its size is a multiple of the alignment. */
static void *secure_alloc(size_t n)
{
	return sodium_malloc(round16(n ? n : 1));
}

/*
 * A region kept for growth: at least need bytes and double old_cap, filling its pages (past a
 * 16-byte canary); its size in *ret_cap, a multiple of 16 like the sizes secure_alloc() takes.
 */
static void *secure_alloc_room(size_t need, size_t old_cap, size_t *ret_cap)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t want = need > 2 * old_cap ? need : 2 * old_cap;
	size_t cap = (want + 16 + page - 1) / page * page - 16;
	void *p = sodium_malloc(cap);

	if (p)
		*ret_cap = cap;
	return p;
}

static uint64_t load64(const uint8_t *p)
{
	uint64_t x;

	memcpy(&x, p, sizeof(x));
	return x;
}

/* ---- pattern generation ---- */

struct gen {
	uint8_t *arena; /* NULL: only count */
	size_t used;
	struct pattern *pats;
	size_t npats;
	size_t maxlen;
};

static void gen_add(struct gen *g, const uint8_t *p, size_t len)
{
	if (len < PREFIX_LEN)
		return;
	if (g->arena) {
		memcpy(g->arena + g->used, p, len);
		g->pats[g->npats] = (struct pattern){(uint32_t)g->used, (uint32_t)len};
	}
	g->used += len;
	g->npats++;
	if (len > g->maxlen)
		g->maxlen = len;
}

struct url_profile {
	const char *safe; /* kept as is besides ASCII letters and digits */
};

static const struct url_profile url_profiles[] = {
    {"-._~"}, {"-._~!'()*"}, {"-._~/"}, {"-._*"}, {"-._"},
};

static size_t url_encode(const uint8_t *in, size_t n, const char *safe, bool lower, bool plus,
                         uint8_t *out)
{
	const char *hex = lower ? "0123456789abcdef" : "0123456789ABCDEF";
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		uint8_t c = in[i];
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    (c && strchr(safe, c))) {
			out[o++] = c;
		} else if (c == ' ' && plus) {
			out[o++] = '+';
		} else {
			out[o++] = '%';
			out[o++] = (uint8_t)hex[c >> 4];
			out[o++] = (uint8_t)hex[c & 15];
		}
	}
	return o;
}

static const int b64_variants[] = {
    sodium_base64_VARIANT_ORIGINAL,
    sodium_base64_VARIANT_ORIGINAL_NO_PADDING,
    sodium_base64_VARIANT_URLSAFE,
    sodium_base64_VARIANT_URLSAFE_NO_PADDING,
};

/*
 * The secret in UTF-16, little- or big-endian: decoded from UTF-8, or byte by byte (as
 * Latin-1) when it is not valid UTF-8. UTF-16 is never longer than twice the UTF-8 it comes
 * from, so out holds 2n bytes.
 */
static size_t utf16_encode(const uint8_t *s, size_t n, bool big, uint8_t *out)
{
	size_t o = 0, i = 0;
	bool utf8 = true;

	while (utf8 && i < n) {
		uint32_t cp;
		size_t len;
		if (s[i] < 0x80)
			cp = s[i], len = 1;
		else if (s[i] >= 0xc2 && s[i] <= 0xdf)
			cp = s[i] & 0x1f, len = 2;
		else if (s[i] >= 0xe0 && s[i] <= 0xef)
			cp = s[i] & 0x0f, len = 3;
		else if (s[i] >= 0xf0 && s[i] <= 0xf4)
			cp = s[i] & 0x07, len = 4;
		else
			break;
		if (i + len > n)
			break;
		for (size_t k = 1; k < len; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				utf8 = false;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if (!utf8 || (len == 3 && cp < 0x800) ||
		    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff))
			break;
		uint16_t units[2] = {(uint16_t)cp, 0};
		size_t nu = 1;
		if (cp >= 0x10000) {
			units[0] = (uint16_t)(0xd800 + ((cp - 0x10000) >> 10));
			units[1] = (uint16_t)(0xdc00 + ((cp - 0x10000) & 0x3ff));
			nu = 2;
		}
		for (size_t u = 0; u < nu; u++) {
			out[o++] = (uint8_t)(big ? units[u] >> 8 : units[u] & 0xff);
			out[o++] = (uint8_t)(big ? units[u] & 0xff : units[u] >> 8);
		}
		i += len;
	}
	if (i == n)
		return o;
	/* Not UTF-8: each byte a code unit. */
	for (o = 0, i = 0; i < n; i++) {
		out[o++] = big ? 0 : s[i];
		out[o++] = big ? s[i] : 0;
	}
	return o;
}

/*
 * All patterns of one secret. tmp holds 3n + 16 bytes; shifted holds n + 2.
 * Base64 character i carries bits [6i, 6i + 6) of the input; with k bytes before the secret in
 * its 3-byte group, characters ceil(8k/6) .. floor((8k + 8n)/6) - 1 depend on the secret alone.
 */
static void gen_secret(struct gen *g, const uint8_t *sec, size_t n, uint8_t *tmp, uint8_t *shifted)
{
	gen_add(g, sec, n);
	gen_add(g, tmp, utf16_encode(sec, n, false, tmp));
	gen_add(g, tmp, utf16_encode(sec, n, true, tmp));
	for (size_t p = 0; p < ELEMENTSOF(url_profiles); p++)
		for (int lower = 0; lower < 2; lower++)
			for (int plus = 0; plus < 2; plus++)
				gen_add(g, tmp,
				        url_encode(sec, n, url_profiles[p].safe, lower, plus, tmp));
	for (size_t v = 0; v < ELEMENTSOF(b64_variants); v++) {
		sodium_bin2base64((char *)tmp, 3 * n + 16, sec, n, b64_variants[v]);
		gen_add(g, tmp, strlen((char *)tmp));
	}
	for (size_t k = 0; k < 3; k++) {
		size_t first = (8 * k + 5) / 6, end = (8 * k + 8 * n) / 6;
		memset(shifted, 0, k);
		memcpy(shifted + k, sec, n);
		for (int v = 1; v < 4; v += 2) { /* the two unpadded variants */
			sodium_bin2base64((char *)tmp, 3 * n + 16, shifted, n + k, b64_variants[v]);
			gen_add(g, tmp + first, end - first);
		}
	}
}

/*
 * Every pattern of every secret into g; scratch holds 4 * maxsecret + 18 bytes: the shifted
 * copy, then the encoders' output, last, where an overrun would meet the region's guard page.
 */
static void gen_all(const struct scrubber *s, struct gen *g, size_t maxsecret, uint8_t *scratch)
{
	uint8_t *shifted = scratch, *tmp = scratch + maxsecret + 2;
	size_t off = 0;

	while (off < s->secrets_len) {
		uint32_t n;
		memcpy(&n, s->secrets + off, sizeof(n));
		gen_secret(g, s->secrets + off + sizeof(n), n, tmp, shifted);
		off += sizeof(n) + n;
	}
}

/* ---- the index ---- */

static int pattern_cmp(const void *a, const void *b, void *arena)
{
	const struct pattern *x = a, *y = b;
	const uint8_t *base = arena;
	uint64_t px = load64(base + x->off), py = load64(base + y->off);

	if (px != py)
		return px < py ? -1 : 1;
	if (x->len != y->len)
		return x->len > y->len ? -1 : 1; /* longest first */
	return memcmp(base + x->off, base + y->off, x->len);
}

static unsigned log2_ceil(size_t n)
{
	unsigned b = 0;

	while (((size_t)1 << b) < n)
		b++;
	return b;
}

static struct slot *slot_find(const struct index *ix, uint64_t prefix)
{
	size_t mask = ((size_t)1 << ix->tbits) - 1;
	size_t i = (size_t)((prefix * SLOT_MUL) >> (64 - ix->tbits));

	for (;; i = (i + 1) & mask) {
		struct slot *sl = &ix->slots[i];
		if (sl->count == 0 || sl->prefix == prefix)
			return sl;
	}
}

/* The index's shape for the sorted, deduplicated patterns in g. */
struct index_shape {
	unsigned fbits, tbits;
	size_t filter_size, slots_size, pats_size, total;
};

static struct index_shape index_measure(const struct gen *g)
{
	size_t nuniq = 0, bytes = 0;
	struct index_shape sh;

	for (size_t i = 0; i < g->npats; i++) {
		if (i == 0 ||
		    load64(g->arena + g->pats[i].off) != load64(g->arena + g->pats[i - 1].off))
			nuniq++;
		bytes += g->pats[i].len;
	}
	/* About 64 filter bits per prefix: a miss rate near 1/64 on unrelated text. */
	sh.fbits = log2_ceil(nuniq * 64);
	sh.fbits = sh.fbits < 12 ? 12 : sh.fbits > 24 ? 24 : sh.fbits;
	sh.tbits = log2_ceil(nuniq * 2);
	sh.tbits = sh.tbits < 4 ? 4 : sh.tbits;
	sh.filter_size = ((size_t)1 << sh.fbits) / 8;
	sh.slots_size = ((size_t)1 << sh.tbits) * sizeof(struct slot);
	sh.pats_size = round16(g->npats * sizeof(struct pattern));
	sh.total =
	    round16(sizeof(struct index)) + sh.filter_size + sh.slots_size + sh.pats_size + bytes;
	return sh;
}

/* Build the index of g, shaped sh, in base (sh->total bytes or more). */
static struct index *index_build(const struct gen *g, const struct index_shape *sh, uint8_t *base)
{
	struct index *ix = (struct index *)base;
	size_t boff = 0;

	memset(base, 0, sh->total);
	ix->fbits = sh->fbits;
	ix->tbits = sh->tbits;
	ix->maxlen = g->maxlen;
	ix->filter = (uint64_t *)(base + round16(sizeof(struct index)));
	ix->slots = (struct slot *)((uint8_t *)ix->filter + sh->filter_size);
	ix->pats = (struct pattern *)((uint8_t *)ix->slots + sh->slots_size);
	ix->bytes = (uint8_t *)ix->pats + sh->pats_size;

	for (size_t i = 0; i < g->npats; i++) {
		const uint8_t *p = g->arena + g->pats[i].off;
		uint64_t prefix = load64(p);
		uint64_t f = (prefix * FILTER_MUL) >> (64 - ix->fbits);
		struct slot *sl = slot_find(ix, prefix);

		ix->filter[f >> 6] |= (uint64_t)1 << (f & 63);
		if (sl->count == 0) {
			sl->prefix = prefix;
			sl->first = (uint32_t)i;
		}
		sl->count++;
		memcpy(ix->bytes + boff, p, g->pats[i].len);
		ix->pats[i] = (struct pattern){(uint32_t)boff, g->pats[i].len};
		boff += g->pats[i].len;
	}
	return ix;
}

static inline bool filter_hit(const struct index *ix, const uint8_t *p)
{
	uint64_t f = (load64(p) * FILTER_MUL) >> (64 - ix->fbits);

	return ix->filter[f >> 6] & ((uint64_t)1 << (f & 63));
}

/* The length of the longest pattern at p (avail bytes readable there), or 0. */
static inline size_t index_match(const struct index *ix, const uint8_t *p, size_t avail)
{
	const struct slot *sl;

	if (!filter_hit(ix, p))
		return 0;
	sl = slot_find(ix, load64(p));
	for (uint32_t k = 0; k < sl->count; k++) {
		const struct pattern *pt = &ix->pats[sl->first + k];
		if (pt->len <= avail && memcmp(ix->bytes + pt->off + PREFIX_LEN, p + PREFIX_LEN,
		                               pt->len - PREFIX_LEN) == 0)
			return pt->len;
	}
	return 0;
}

/* The work region readable and writable, need bytes or more (its contents are not kept). */
static int work_fit(struct scrubber *s, size_t need)
{
	size_t cap;
	uint8_t *w;

	if (s->work && need <= s->work_cap)
		return sodium_mprotect_readwrite(s->work) < 0 ? -errno : 0;
	w = secure_alloc_room(need > WORK_MIN ? need : WORK_MIN, s->work_cap, &cap);
	if (!w)
		return -ENOMEM;
	sodium_free(s->work);
	s->work = w;
	s->work_cap = cap;
	return 0;
}

static void work_done(struct scrubber *s)
{
	if (!s->work)
		return;
	if (s->work_cap > WORK_KEEP_MAX) {
		sodium_free(s->work); /* zeroes it */
		s->work = NULL;
		s->work_cap = 0;
		return;
	}
	sodium_memzero(s->work, s->work_cap);
	sodium_mprotect_noaccess(s->work);
}

/*
 * Rebuild the index from the secrets, with s->idx readable and writable. The work region holds
 * the patterns with their table (counted first, then made) and, at its end, where an overrun
 * would meet the guard page, the encoders' scratch space. The new index is written over the
 * old one when it fits, else into a new region; on failure the old index stays as it was.
 */
static int scrubber_reindex(struct scrubber *s)
{
	struct gen g = {0};
	size_t maxsecret = 0, off = 0, kept = 0, arena_size, scratch_size;
	struct index_shape sh;
	struct index *ix;
	uint8_t *scratch;
	int r;

	while (off < s->secrets_len) {
		uint32_t n;
		memcpy(&n, s->secrets + off, sizeof(n));
		if (n > maxsecret)
			maxsecret = n;
		off += sizeof(n) + n;
	}
	/*
	 * Room for the patterns at their longest (a secret of n bytes expands into less than
	 * 80n + 64 bytes of them and 40 table entries), so that the count seldom grows the region.
	 */
	scratch_size = round16(4 * maxsecret + 18);
	r = work_fit(s, scratch_size + s->secrets_len * 80 +
	                    s->count * (64 + 40 * sizeof(struct pattern)));
	if (r < 0)
		return r;
	gen_all(s, &g, maxsecret, s->work + s->work_cap - scratch_size); /* count */
	arena_size = round16(g.used);
	r = work_fit(s, arena_size + g.npats * sizeof(struct pattern) + scratch_size);
	if (r < 0) {
		work_done(s);
		return r;
	}
	scratch = s->work + s->work_cap - scratch_size;
	g.arena = s->work;
	g.pats = (struct pattern *)(s->work + arena_size);
	g.used = g.npats = g.maxlen = 0;
	gen_all(s, &g, maxsecret, scratch);
	qsort_r(g.pats, g.npats, sizeof(struct pattern), pattern_cmp, g.arena);
	for (size_t i = 0; i < g.npats; i++)
		if (kept == 0 || pattern_cmp(&g.pats[kept - 1], &g.pats[i], g.arena) != 0)
			g.pats[kept++] = g.pats[i];
	g.npats = kept;
	sh = index_measure(&g);
	if (s->idx && sh.total <= s->idx_cap) {
		ix = index_build(&g, &sh, (uint8_t *)s->idx);
		sodium_memzero((uint8_t *)s->idx + sh.total, s->idx_cap - sh.total);
	} else {
		/*
		 * No more than its pages, without room to double: every scrub makes the index
		 * readable and then not, a cost per page (20-50 us an mprotect here).
		 */
		size_t cap;
		uint8_t *base = secure_alloc_room(sh.total, 0, &cap);

		if (!base) {
			work_done(s);
			return -ENOMEM;
		}
		ix = index_build(&g, &sh, base);
		sodium_free(s->idx);
		s->idx_cap = cap;
	}
	work_done(s);
	s->idx = ix;
	s->maxlen = g.maxlen;
	sodium_mprotect_noaccess(s->idx);
	return 0;
}

/* ---- the scrubber ---- */

struct scrubber *scrub_new(void)
{
	struct scrubber *s;

	if (sodium_init() < 0)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	if (pthread_mutex_init(&s->lock, NULL) != 0) {
		free(s);
		return NULL;
	}
	return s;
}

/* A stream's memory given back (NULL: nothing). */
static void stream_destroy(struct scrub_stream *st)
{
	if (!st)
		return;
	sodium_free(st->win);
	free(st->out);
	free(st);
}

void scrub_free(struct scrubber *s)
{
	if (!s)
		return;
	stream_destroy(s->spare);
	sodium_free(s->secrets);
	sodium_free(s->idx);
	sodium_free(s->work);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

int scrub_add(struct scrubber *s, const char *value, size_t len)
{
	uint8_t *grown;
	size_t off = 0, cap, need;
	uint32_t n32 = (uint32_t)len;
	int r;

	if (len < SCRUB_MIN_SECRET)
		return 0;
	if (len > SCRUB_MAX_SECRET)
		return -E2BIG;
	pthread_mutex_lock(&s->lock);
	/*
	 * The index is rebuilt in place: never under a scrub in flight (a sink adding a secret, or
	 * another thread). Held from here to the end, the lock keeps new scrubs out meanwhile.
	 */
	if (s->users) {
		pthread_mutex_unlock(&s->lock);
		return -EBUSY;
	}
	if (s->secrets)
		sodium_mprotect_readonly(s->secrets);
	while (off < s->secrets_len) {
		uint32_t n;
		memcpy(&n, s->secrets + off, sizeof(n));
		if (n == len && memcmp(s->secrets + off + sizeof(n), value, len) == 0) {
			sodium_mprotect_noaccess(s->secrets);
			pthread_mutex_unlock(&s->lock);
			return 0;
		}
		off += sizeof(n) + n;
	}
	need = s->secrets_len + sizeof(n32) + len;
	if (need <= s->secrets_cap) {
		sodium_mprotect_readwrite(s->secrets);
	} else {
		grown = secure_alloc_room(need, s->secrets_cap, &cap);
		if (!grown) {
			if (s->secrets)
				sodium_mprotect_noaccess(s->secrets);
			pthread_mutex_unlock(&s->lock);
			return -ENOMEM;
		}
		if (s->secrets_len)
			memcpy(grown, s->secrets, s->secrets_len);
		sodium_free(s->secrets);
		s->secrets = grown;
		s->secrets_cap = cap;
	}
	memcpy(s->secrets + s->secrets_len, &n32, sizeof(n32));
	memcpy(s->secrets + s->secrets_len + sizeof(n32), value, len);
	s->secrets_len += sizeof(n32) + len;
	s->count++;
	if (s->idx)
		sodium_mprotect_readwrite(s->idx);
	r = scrubber_reindex(s);
	if (r < 0) {
		/* Keep the scrubber as it was: drop the secret again. */
		s->secrets_len -= sizeof(n32) + len;
		sodium_memzero(s->secrets + s->secrets_len, sizeof(n32) + len);
		s->count--;
		if (s->idx)
			sodium_mprotect_noaccess(s->idx);
	}
	if (r == 0 && memchr(value, '\n', len))
		s->newline_secret = true;
	sodium_mprotect_noaccess(s->secrets);
	pthread_mutex_unlock(&s->lock);
	return r;
}

size_t scrub_count(const struct scrubber *s)
{
	return s->count;
}

/* L: deciding position i needs the bytes [i, i + L). */
static size_t lookahead(const struct scrubber *s)
{
	return s->maxlen > TOKEN_LOOKAHEAD ? s->maxlen : TOKEN_LOOKAHEAD;
}

size_t scrub_holdback(const struct scrubber *s)
{
	return lookahead(s) - 1;
}

/* Make the index readable for one scrub; scrubber_release() undoes it. */
static const struct index *scrubber_acquire(const struct scrubber *cs)
{
	struct scrubber *s = (struct scrubber *)cs;
	const struct index *ix;

	pthread_mutex_lock(&s->lock);
	if (s->users++ == 0 && s->idx)
		sodium_mprotect_readonly(s->idx);
	ix = s->idx;
	pthread_mutex_unlock(&s->lock);
	return ix;
}

static void scrubber_release(const struct scrubber *cs)
{
	struct scrubber *s = (struct scrubber *)cs;

	pthread_mutex_lock(&s->lock);
	if (--s->users == 0 && s->idx)
		sodium_mprotect_noaccess(s->idx);
	pthread_mutex_unlock(&s->lock);
}

/* ---- scanning ---- */

/* A GitHub token starts at p: its prefix and the minimum number of token characters. */
static bool token_at(const uint8_t *p, size_t avail)
{
	size_t skip, need;

	if (avail >= 4 && p[0] == 'g' && p[1] == 'h' && memchr("pousr", p[2], 5) && p[3] == '_') {
		skip = 4;
		need = 36;
	} else if (avail >= 11 && memcmp(p, "github_pat_", 11) == 0) {
		skip = 11;
		need = 22;
	} else {
		return false;
	}
	if (avail < skip + need)
		return false;
	for (size_t k = skip; k < skip + need; k++)
		if (!is_word(p[k]))
			return false;
	return true;
}

static int stream_push(struct scrub_stream *st)
{
	int r;

	if (st->out_len == 0 || st->error)
		return st->error;
	r = st->sink(st->userdata, st->out, st->out_len);
	st->out_len = 0;
	if (r < 0)
		st->error = r;
	return st->error;
}

static int stream_emit(struct scrub_stream *st, const void *p, size_t n)
{
	int r;

	if (n == 0 || st->error)
		return st->error;
	if (!st->out) {
		r = st->sink(st->userdata, p, n); /* scrub_string(): the sink is a buffer */
		if (r < 0)
			st->error = r;
		return st->error;
	}
	if (st->out_len + n <= OUT_CAP) {
		memcpy(st->out + st->out_len, p, n);
		st->out_len += n;
		return 0;
	}
	r = stream_push(st);
	if (r < 0)
		return r;
	if (n <= OUT_CAP)
		return stream_emit(st, p, n);
	r = st->sink(st->userdata, p, n);
	if (r < 0)
		st->error = r;
	return st->error;
}

/*
 * Decide positions [0, n) of d, where avail >= n bytes are readable and either every decided
 * position has L bytes after it or d ends the stream.
 */
static int stream_scan(struct scrub_stream *st, const struct index *ix, const uint8_t *d, size_t n,
                       size_t avail)
{
	size_t clean = 0; /* start of the span of clean bytes not yet emitted */
	int r;

	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		uint8_t c;
		bool covered;

		/* Fast path: outside any match, skip what cannot start one. */
		if (!st->in_redact && !st->swallow && st->pos + i >= st->cover_end) {
			if (ix) {
				size_t stop = avail < PREFIX_LEN ? 0 : avail - PREFIX_LEN + 1;
				if (stop > n)
					stop = n;
				while (i < stop && d[i] != 'g' && !filter_hit(ix, d + i))
					i++;
			} else {
				const uint8_t *g = memchr(d + i, 'g', n - i);
				i = g ? (size_t)(g - d) : n;
			}
			if (i == n)
				break;
		}
		c = d[i];
		if (st->swallow && !is_word(c))
			st->swallow = false;
		if (!st->swallow && c == 'g' && token_at(d + i, avail - i))
			st->swallow = true;
		if (ix && avail - i >= PREFIX_LEN) {
			size_t m = index_match(ix, d + i, avail - i);
			if (m && st->pos + i + m > st->cover_end)
				st->cover_end = st->pos + i + m;
		}
		covered = st->swallow || st->pos + i < st->cover_end;
		if (!covered) {
			if (st->in_redact) {
				st->in_redact = false;
				clean = i;
			}
			continue;
		}
		if (!st->in_redact) {
			r = stream_emit(st, d + clean, i - clean);
			if (r == 0)
				r = stream_emit(st, SCRUB_REDACTED, REDACTED_LEN);
			if (r < 0)
				return r;
			st->in_redact = true;
		}
	}
	st->pos += n;
	if (!st->in_redact)
		return stream_emit(st, d + clean, n - clean);
	return 0;
}

static void stream_reset(struct scrub_stream *st)
{
	st->held = 0;
	st->pos = 0;
	st->cover_end = 0;
	st->swallow = false;
	st->in_redact = false;
}

struct scrub_stream *scrub_stream_new(const struct scrubber *s, scrub_sink_fn sink, void *userdata)
{
	struct scrubber *ms = (struct scrubber *)s;
	struct scrub_stream *st;

	pthread_mutex_lock(&ms->lock);
	st = ms->spare;
	ms->spare = NULL;
	pthread_mutex_unlock(&ms->lock);
	if (st) {
		st->sink = sink;
		st->userdata = userdata;
		return st;
	}
	st = calloc(1, sizeof(*st));
	if (!st)
		return NULL;
	st->s = s;
	st->sink = sink;
	st->userdata = userdata;
	st->out = malloc(OUT_CAP);
	st->win_cap = 2 * lookahead(s);
	st->win = secure_alloc(st->win_cap);
	if (!st->out || !st->win) {
		stream_destroy(st);
		return NULL;
	}
	return st;
}

void scrub_stream_free(struct scrub_stream *st)
{
	struct scrubber *s;

	if (!st)
		return;
	s = (struct scrubber *)st->s;
	if (st->win && st->out) {
		/* Kept for the next stream: nothing of this one's stays in it. */
		sodium_memzero(st->win, st->win_cap);
		stream_reset(st);
		st->error = 0;
		st->out_len = 0;
		st->sink = NULL;
		st->userdata = NULL;
		pthread_mutex_lock(&s->lock);
		if (!s->spare) {
			s->spare = st;
			st = NULL;
		}
		pthread_mutex_unlock(&s->lock);
		if (!st)
			return;
	}
	stream_destroy(st);
}

/* Secrets added since the stream began may need a larger window. */
static int stream_fit(struct scrub_stream *st, size_t l)
{
	uint8_t *w;

	if (2 * l <= st->win_cap)
		return 0;
	w = secure_alloc(2 * l);
	if (!w)
		return -ENOMEM;
	memcpy(w, st->win, st->held);
	sodium_free(st->win);
	st->win = w;
	st->win_cap = 2 * l;
	return 0;
}

int scrub_stream_write(struct scrub_stream *st, const char *buf, size_t len)
{
	const uint8_t *b = (const uint8_t *)buf;
	const struct index *ix;
	size_t l, n = 0;
	int r;

	if (st->error || len == 0)
		return st->error;
	/* Acquired first: no secret is added from here on, so the lookahead holds for the scan. */
	ix = scrubber_acquire(st->s);
	l = lookahead(st->s);
	r = stream_fit(st, l);
	if (r < 0) {
		scrubber_release(st->s);
		return r;
	}
	if (st->held > 0) {
		/* Positions in the window see the head of buf as their lookahead. */
		size_t take = len < l - 1 ? len : l - 1;
		size_t avail = st->held + take, k = 0;

		memcpy(st->win + st->held, b, take);
		if (avail >= l)
			k = avail - l + 1 < st->held ? avail - l + 1 : st->held;
		r = stream_scan(st, ix, st->win, k, avail);
		if (r < 0)
			goto out;
		if (k < st->held) {
			/* buf was shorter than L - 1: all of it stays in the window. */
			memmove(st->win, st->win + k, avail - k);
			st->held = avail - k;
			goto out_push;
		}
		st->held = 0;
	}
	if (len >= l) {
		n = len - l + 1;
		r = stream_scan(st, ix, b, n, len);
		if (r < 0)
			goto out;
	}
	memcpy(st->win, b + n, len - n);
	st->held = len - n;
out_push:
	/*
	 * Output that ends a line is let through at once (a log follows a server live): no
	 * pattern contains '\n', so none can start before the line end and finish after it.
	 */
	if (st->held > 0 && st->win[st->held - 1] == '\n' && !st->s->newline_secret) {
		r = stream_scan(st, ix, st->win, st->held, st->held);
		if (r < 0)
			goto out;
		sodium_memzero(st->win, st->held);
		stream_reset(st);
	}
	r = stream_push(st);
out:
	scrubber_release(st->s);
	return r;
}

int scrub_stream_flush(struct scrub_stream *st)
{
	const struct index *ix;
	int r;

	if (st->error)
		return st->error;
	ix = scrubber_acquire(st->s);
	r = stream_scan(st, ix, st->win, st->held, st->held);
	scrubber_release(st->s);
	if (r == 0)
		r = stream_push(st);
	sodium_memzero(st->win, st->win_cap);
	stream_reset(st);
	return r;
}

/* ---- whole buffers ---- */

struct growbuf {
	char *p;
	size_t len, cap;
};

static int growbuf_sink(void *userdata, const char *buf, size_t len)
{
	struct growbuf *g = userdata;

	if (g->len + len + 1 > g->cap) {
		size_t cap = (g->len + len + 1) * 2;
		char *p = realloc(g->p, cap);
		if (!p)
			return -ENOMEM;
		g->p = p;
		g->cap = cap;
	}
	memcpy(g->p + g->len, buf, len);
	g->len += len;
	return 0;
}

/*
 * The whole buffer in one scan, without a window (it ends the stream, so nothing is held) and
 * without an output buffer: what is emitted goes straight into the growing result.
 */
char *scrub_string(const struct scrubber *s, const char *in, size_t len, size_t *ret_len)
{
	struct growbuf g = {.cap = len + len / 8 + 16};
	struct scrub_stream st = {.s = s, .sink = growbuf_sink, .userdata = &g}; /* no out buffer */
	const struct index *ix;
	int r;

	g.p = malloc(g.cap);
	if (!g.p)
		return NULL;
	ix = scrubber_acquire(s);
	r = stream_scan(&st, ix, (const uint8_t *)in, len, len);
	scrubber_release(s);
	if (r < 0) {
		free(g.p);
		return NULL;
	}
	g.p[g.len] = '\0';
	if (ret_len)
		*ret_len = g.len;
	return g.p;
}
