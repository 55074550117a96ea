/* deflate: see deflate.h. RFC 1951's format: blocks of literals and (length, distance) matches,
 * each with Huffman codes of its own, sent as code lengths; the zlib wrapper of RFC 1950 around
 * it (two header bytes, then the Adler-32 of the input, libdeflate's). */
#include "deflate.h"

#include <libdeflate.h>
#include <string.h>

#define MIN_MATCH 3
#define MAX_MATCH 258
#define WINDOW 32768
#define NLIT 286 /* literal/length codes: 0-255 literals, 256 the block's end, 257-285 lengths */
#define NDIST 30
#define NCL 19 /* the code-length codes: 0-15 a length, 16-18 repeats */
#define MAX_BITS 15
#define MAX_CL_BITS 7

static const uint16_t len_base[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                                      31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
static const uint8_t len_extra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
static const uint16_t dist_base[NDIST] = {1,   2,   3,   4,   5,   7,    9,    13,   17,   25,   33,   49,   65,    97,    129,
                                          193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
static const uint8_t dist_extra[NDIST] = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};
static const uint8_t cl_order[NCL] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
static const uint8_t cl_extra[3] = {2, 3, 7}; /* of codes 16, 17, 18 */

#define SLACK 8 /* put() writes 8 bytes where it may have filled fewer */

/* A stored block holds at most 65 535 bytes, and one is always enough: a block is stored only
 * where its Huffman-coded bits are not fewer than 8 bytes a byte plus 42, and those bits are at most
 * 48 a symbol (a length code and its extra bits, a distance code and its extra bits) plus a
 * header of under 4 600. */
_Static_assert(DEFLATE_SYMBOLS * 48 + 4600 < 8 * 65535, "a stored block's bytes fit its 16-bit length");

size_t deflate_bound(size_t n) {
    /* every block at worst stored: 3 bits, up to 7 to the byte and 4 bytes; a block holds
     * DEFLATE_SYMBOLS symbols, at least a byte each, but the last. Then zlib's 6. */
    return n + 6 * (n / DEFLATE_SYMBOLS + 2) + 8 + SLACK;
}

/* The bytes a[k] == b[k] from k = 0, up to max. */
static size_t same(const unsigned char *a, const unsigned char *b, size_t max) {
    size_t k = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    for (; k + 8 <= max; k += 8) {
        uint64_t x, y;
        memcpy(&x, a + k, 8), memcpy(&y, b + k, 8);
        if (x != y) return k + (size_t)__builtin_ctzll(x ^ y) / 8;
    }
#endif
    while (k < max && a[k] == b[k]) k++;
    return k;
}

/* Bit k: a[k] == b[k], k < 16. */
static unsigned equal16(const unsigned char *a, const unsigned char *b) {
#ifdef __SSE2__
    typedef char c16 __attribute__((vector_size(16)));
    c16 x, y;
    memcpy(&x, a, 16), memcpy(&y, b, 16);
    return (unsigned)__builtin_ia32_pmovmskb128(x == y) & 0xFFFF;
#else
    unsigned m = 0;
    for (int k = 0; k < 16; k++) m |= (unsigned)(a[k] == b[k]) << k;
    return m;
#endif
}

/* Bit k, k < 14: a match of at least MIN_MATCH starts at in[i + k], d <= i bytes back (0: none). */
static unsigned starts(const unsigned char *in, size_t i, size_t d) {
    if (!d) return 0;
    unsigned m = equal16(in + i, in + i - d);
    return m & m >> 1 & m >> 2 & 0x3FFF;
}

/* Bits out, the first in a byte's lowest bit (RFC 1951 3.1.1). */
typedef struct bits {
    unsigned char *p;
    uint64_t acc;
    int n;
} bits;

static inline __attribute__((always_inline)) void put(bits *b, uint32_t v, int n) { /* v < 2^n, n <= 32 */
    b->acc |= (uint64_t)v << b->n;
    b->n += n;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(b->p, &b->acc, 8); /* the whole bytes, and some that the next put writes again: SLACK */
    b->p += b->n >> 3;
    b->acc >>= b->n & ~7;
    b->n &= 7;
#else
    while (b->n >= 8) *b->p++ = (unsigned char)b->acc, b->acc >>= 8, b->n -= 8;
#endif
}

static void align(bits *b) {
    if (b->n) put(b, 0, 8 - b->n);
}

/* A Huffman code's lengths for the n symbols of frequencies g (0: no code; two or more used):
 * leaves sorted by frequency, then merged from two queues. Returns the longest. */
static int tree(const uint32_t *g, int n, uint8_t *len) {
    int leaf[NLIT], parent[2 * NLIT], depth[2 * NLIT], m = 0, longest = 0;
    uint64_t w[2 * NLIT];
    for (int i = 0; i < n; i++) {
        len[i] = 0;
        if (!g[i]) continue;
        int j = m++;
        for (; j > 0 && g[leaf[j - 1]] > g[i]; j--) leaf[j] = leaf[j - 1]; /* stable: ties by symbol */
        leaf[j] = i;
    }
    for (int i = 0; i < m; i++) w[i] = g[leaf[i]];
    for (int a = 0, b = m, end = m; end < 2 * m - 1; end++) { /* leaves from a, internal nodes from b */
        int pick[2];
        for (int k = 0; k < 2; k++) pick[k] = a < m && (b >= end || w[a] <= w[b]) ? a++ : b++;
        w[end] = w[pick[0]] + w[pick[1]];
        parent[pick[0]] = parent[pick[1]] = end;
    }
    depth[2 * m - 2] = 0; /* the root; every node's parent comes after it */
    for (int i = 2 * m - 3; i >= 0; i--) depth[i] = depth[parent[i]] + 1;
    for (int i = 0; i < m; i++) {
        len[leaf[i]] = (uint8_t)depth[i];
        longest = depth[i] > longest ? depth[i] : longest;
    }
    return longest;
}

/* Code lengths of at most limit bits for frequencies f (n symbols; a used symbol stays used, and
 * two are): where the tree is deeper, the frequencies halved, rounded up, and the tree built
 * again (they end all 1: a balanced tree, 9 levels for 286 symbols). */
static void lengths(const uint32_t *f, int n, int limit, uint8_t *len) {
    uint32_t g[NLIT];
    memcpy(g, f, (size_t)n * sizeof *g);
    while (tree(g, n, len) > limit)
        for (int i = 0; i < n; i++) g[i] = (g[i] + 1) / 2;
}

/* The canonical codes of lengths len (RFC 1951 3.2.2), bit-reversed: sent first bit first. */
static void codes(const uint8_t *len, int n, uint16_t *code) {
    int count[MAX_BITS + 1] = {0}, next[MAX_BITS + 1] = {0};
    for (int i = 0; i < n; i++) count[len[i]]++;
    count[0] = 0;
    for (int b = 1, c = 0; b <= MAX_BITS; b++) next[b] = c = (c + count[b - 1]) << 1;
    for (int i = 0; i < n; i++) {
        if (!len[i]) continue;
        unsigned c = (unsigned)next[len[i]]++, r = 0;
        for (int k = 0; k < len[i]; k++) r = r << 1 | (c >> k & 1);
        code[i] = (uint16_t)r;
    }
}

/* Makes at least two of f's n symbols used (a code of one symbol is not complete). */
static void two_used(uint32_t *f, int n) {
    int used = 0;
    for (int i = 0; i < n; i++) used += f[i] != 0;
    for (int i = 0; used < 2 && i < n; i++)
        if (!f[i]) f[i] = 1, used++;
}

/* What the symbols of a block need: the length codes by match length, and the distances sought
 * (1, px, row) with their codes. */
typedef struct tables {
    uint8_t lc[MAX_MATCH + 1];
    size_t px, row;
    int dpx, drow;
} tables;

static int dist_code(const tables *t, size_t dist) { return dist == 1 ? 0 : dist == t->px ? t->dpx : t->drow; }

static int code_of(size_t dist) {
    int c = 0;
    while (c < NDIST - 1 && dist_base[c + 1] <= dist) c++;
    return c;
}

/* raw[0, m), m < 65 536, as a stored block. */
static void stored(bits *b, const unsigned char *raw, size_t m, int final) {
    put(b, (uint32_t)final, 1);
    put(b, 0, 2);
    align(b);
    put(b, (uint32_t)m, 16);
    put(b, (uint32_t)m ^ 0xFFFF, 16);
    memcpy(b->p, raw, m);
    b->p += m;
}

/* One block: w's ns symbols, which stand for raw[0, m), with Huffman codes of their own, or as a
 * stored block where that is not longer. */
static void block(bits *out, const deflate_work *w, size_t ns, const unsigned char *raw, size_t m, int final, const tables *t) {
    bits o = *out, *b = &o; /* in registers while the symbols go out */
    uint32_t lf[NLIT] = {0}, df[NDIST] = {0}, cf[NCL] = {0};
    for (size_t i = 0; i < ns; i++) {
        if (!w->s[i].dist) {
            lf[w->s[i].sym]++;
            continue;
        }
        lf[257 + t->lc[w->s[i].sym]]++;
        df[dist_code(t, w->s[i].dist)]++;
    }
    lf[256] = 1;
    two_used(lf, NLIT), two_used(df, NDIST);
    uint8_t ll[NLIT], dl[NDIST], cl[NCL], seq[NLIT + NDIST];
    lengths(lf, NLIT, MAX_BITS, ll);
    lengths(df, NDIST, MAX_BITS, dl);
    int hlit = NLIT, hdist = NDIST;
    while (hlit > 257 && !ll[hlit - 1]) hlit--;
    while (hdist > 1 && !dl[hdist - 1]) hdist--;
    memcpy(seq, ll, (size_t)hlit), memcpy(seq + hlit, dl, (size_t)hdist);
    /* the lengths as code-length symbols: (symbol, its extra bits' value) */
    uint8_t rs[NLIT + NDIST], rx[NLIT + NDIST];
    int nr = 0, total = hlit + hdist;
    for (int i = 0; i < total;) {
        int v = seq[i], run = 1;
        while (i + run < total && seq[i + run] == v) run++;
        i += run;
        if (!v) {
            for (; run >= 11; nr++) {
                int r = run < 138 ? run : 138;
                rs[nr] = 18, rx[nr] = (uint8_t)(r - 11), run -= r;
            }
            if (run >= 3) rs[nr] = 17, rx[nr++] = (uint8_t)(run - 3), run = 0;
        } else {
            rs[nr] = (uint8_t)v, rx[nr++] = 0, run--;
            for (; run >= 3; nr++) {
                int r = run < 6 ? run : 6;
                rs[nr] = 16, rx[nr] = (uint8_t)(r - 3), run -= r;
            }
        }
        for (; run > 0; run--) rs[nr] = (uint8_t)v, rx[nr++] = 0;
    }
    for (int i = 0; i < nr; i++) cf[rs[i]]++;
    two_used(cf, NCL);
    lengths(cf, NCL, MAX_CL_BITS, cl);
    int hclen = NCL;
    while (hclen > 4 && !cl[cl_order[hclen - 1]]) hclen--;
    /* the block's size both ways, in bits */
    uint64_t dyn = 3 + 5 + 5 + 4 + 3 * (uint64_t)hclen;
    for (int s = 0; s < NCL; s++) dyn += (uint64_t)cf[s] * (cl[s] + (s >= 16 ? cl_extra[s - 16] : 0));
    for (int s = 0; s < NLIT; s++) dyn += (uint64_t)lf[s] * (ll[s] + (s > 256 ? len_extra[s - 257] : 0));
    for (int s = 0; s < NDIST; s++) dyn += (uint64_t)df[s] * (dl[s] + dist_extra[s]);
    if (dyn >= 42 + 8 * (uint64_t)m) { /* stored: 3 bits, up to 7 to the byte, 32 */
        stored(b, raw, m, final);
        *out = o;
        return;
    }
    uint16_t lcode[NLIT], dcode[NDIST], ccode[NCL];
    codes(ll, NLIT, lcode), codes(dl, NDIST, dcode), codes(cl, NCL, ccode);
    put(b, (uint32_t)final, 1);
    put(b, 2, 2);
    put(b, (uint32_t)(hlit - 257), 5), put(b, (uint32_t)(hdist - 1), 5), put(b, (uint32_t)(hclen - 4), 4);
    for (int i = 0; i < hclen; i++) put(b, cl[cl_order[i]], 3);
    for (int i = 0; i < nr; i++) {
        put(b, ccode[rs[i]], cl[rs[i]]);
        if (rs[i] >= 16) put(b, rx[i], cl_extra[rs[i] - 16]);
    }
    for (size_t i = 0; i < ns; i++) {
        unsigned sym = w->s[i].sym, dist = w->s[i].dist;
        if (!dist) {
            put(b, lcode[sym], ll[sym]);
            continue;
        }
        int c = t->lc[sym], d = dist_code(t, dist);
        put(b, lcode[257 + c], ll[257 + c]);
        if (len_extra[c]) put(b, sym - len_base[c], len_extra[c]);
        put(b, dcode[d], dl[d]);
        if (dist_extra[d]) put(b, dist - dist_base[d], dist_extra[d]);
    }
    put(b, lcode[256], ll[256]);
    *out = o;
}

size_t deflate_zlib(const unsigned char *in, size_t n, size_t px, size_t row, deflate_work *w, unsigned char *out,
                    size_t cap) {
    if (cap < deflate_bound(n)) return 0;
    if (px > WINDOW || px == 1) px = 0;
    if (row > WINDOW || row == 1 || row == px) row = 0;
    tables t = {.px = px, .row = row, .dpx = code_of(px), .drow = code_of(row)};
    for (int l = MIN_MATCH, c = 0; l <= MAX_MATCH; l++) {
        while (c < 28 && len_base[c + 1] <= l) c++;
        t.lc[l] = (uint8_t)c;
    }
    out[0] = 0x78, out[1] = 0x01; /* deflate, a 32 KiB window; the fastest level, as a hint */
    bits b = {out + 2, 0, 0};
    size_t i = 0, start = 0, ns = 0, far = row > px ? row : px > 1 ? px : 1; /* the farthest distance sought */
    while (i < n) {
        if (i >= far && i + 16 <= n) { /* the literals before the next match, 16 bytes at a time */
            unsigned m = starts(in, i, 1) | starts(in, i, px) | starts(in, i, row);
            int lit = m ? __builtin_ctz(m) : 14;
            for (int k = 0; k < lit; k++) {
                w->s[ns].sym = in[i++], w->s[ns].dist = 0;
                if (++ns == DEFLATE_SYMBOLS) {
                    block(&b, w, ns, in + start, i - start, 0, &t);
                    start = i, ns = 0;
                }
            }
            if (!m) continue;
        }
        size_t max = n - i < MAX_MATCH ? n - i : MAX_MATCH, len = 0, dist = 0;
        unsigned char c = in[i];
        if (row && i >= row && in[i - row] == c) len = same(in + i, in + i - row, max), dist = row;
        if (px && i >= px && in[i - px] == c && len < max) {
            size_t l = same(in + i, in + i - px, max);
            if (l > len) len = l, dist = px;
        }
        if (i && in[i - 1] == c && len < max) {
            size_t l = same(in + i, in + i - 1, max);
            if (l > len) len = l, dist = 1;
        }
        if (len < MIN_MATCH) len = 1, dist = 0;
        w->s[ns].sym = dist ? (uint16_t)len : in[i], w->s[ns].dist = (uint16_t)dist;
        i += len;
        if (++ns == DEFLATE_SYMBOLS) {
            block(&b, w, ns, in + start, i - start, 0, &t);
            start = i, ns = 0;
        }
    }
    block(&b, w, ns, in + start, n - start, 1, &t);
    align(&b);
    uint32_t a = libdeflate_adler32(1, in, n);
    for (int k = 3; k >= 0; k--) *b.p++ = (unsigned char)(a >> (8 * k));
    return (size_t)(b.p - out);
}
