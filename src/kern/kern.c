/* kern: see kern.h. Compiled with -DKERN_NAME=avx512|avx2|sse, -DVW=16|8|4 (floats per native
 * register) and the matching -m flags. GCC's vector extensions give the native vector type vf;
 * the KL lanes of a chunk are NV = KL / VW such vectors, so the same source is the kernel for
 * every ISA.
 * Per GRU step (forward): gate accumulators a_i, a_h (G, KL) start from the biases and receive
 * W_ih x_t and W_hh h_{t-1} as broadcast-FMAs; the nonlinearities and the state update run over
 * (H, KL). Backward mirrors it; weight gradients accumulate per lane in (G, I + H, KL) and are
 * summed over the lanes once, in lane order, at the end. */
#include "simd.h"

/* Accumulator chains one block of gemv/gemv_t keeps in registers: AVX-512 has 32 vector registers
 * and its FMAs take the broadcast weight from memory; AVX2 and SSE have 16. Rows (gemv) or columns
 * (gemv_t) are split into near-equal blocks of at most NBMAX, so that a hidden size such as 23 runs
 * as one block of 23 independent chains instead of 8 + 8 + 4 + 2 + 1 (whose short tails wait on the
 * FMA latency). Every chain sums in the same order whatever the blocking: the results do not
 * depend on it. */
#if VW == 16
#define NBMAX 24
#else
#define NBMAX 12
#endif

/* Calls BLOCK(nb) with a compile-time nb equal to m (1 <= m <= NBMAX), so that the nb
 * accumulators of the always-inlined block stay in registers. */
#if NBMAX > 12
#define NB_WIDE(BLOCK)                                                                             \
    case 13: BLOCK(13); break; case 14: BLOCK(14); break; case 15: BLOCK(15); break;               \
    case 16: BLOCK(16); break; case 17: BLOCK(17); break; case 18: BLOCK(18); break;               \
    case 19: BLOCK(19); break; case 20: BLOCK(20); break; case 21: BLOCK(21); break;               \
    case 22: BLOCK(22); break; case 23: BLOCK(23); break; case 24: BLOCK(24); break;
#else
#define NB_WIDE(BLOCK)
#endif
#define NB_SWITCH(m, BLOCK)                                                                        \
    switch (m) {                                                                                   \
    case 1: BLOCK(1); break; case 2: BLOCK(2); break; case 3: BLOCK(3); break;                     \
    case 4: BLOCK(4); break; case 5: BLOCK(5); break; case 6: BLOCK(6); break;                     \
    case 7: BLOCK(7); break; case 8: BLOCK(8); break; case 9: BLOCK(9); break;                     \
    case 10: BLOCK(10); break; case 11: BLOCK(11); break; case 12: BLOCK(12); break;               \
    NB_WIDE(BLOCK)                                                                                 \
    }

/* Fully unrolled, so that a block's accumulators are registers, not an array in memory. */
#define UNROLL _Pragma("GCC unroll 24")

/* The size of block b of the near-equal split of m into nblocks(m) blocks. */
static inline int nblocks(int m) { return (m + NBMAX - 1) / NBMAX; }
static inline int block_size(int m, int b) { return m / nblocks(m) + (b < m % nblocks(m)); }

/* Rows q0 .. q0 + nb of out = bias + W v, from the transposed weights Wt (n, ldt): the nb weights
 * of one input are contiguous, so every FMA takes its broadcast at a constant offset. */
static inline __attribute__((always_inline)) void gemv_block(const float *Wt, int ldt, int q0, int n, const float *v,
                                                            const float *bias, float *out, const int nb) {
    for (int o = 0; o < KL; o += VW) {
        vf a[NBMAX];
        UNROLL for (int k = 0; k < nb; k++) a[k] = (vf){} + (bias ? bias[q0 + k] : 0.0f);
        for (int i = 0; i < n; i++) {
            vf x = ld(v + i * KL + o);
            const float *w = Wt + (size_t)i * ldt + q0;
            UNROLL for (int k = 0; k < nb; k++) a[k] += w[k] * x;
        }
        UNROLL for (int k = 0; k < nb; k++) st(out + (q0 + k) * KL + o, a[k]);
    }
}

/* Columns i0 .. i0 + nb of out += W1^T d1 + W2^T d2 (rows1 rows of W1 and d1, then rows2 of W2 and
 * d2; rows2 may be 0), each chain summed over the rows in that order. */
static inline __attribute__((always_inline)) void gemv_t_block(const float *W1, const float *W2, int ldw, int rows1,
                                                              int rows2, int i0, const float *d1, const float *d2,
                                                              float *out, const int nb) {
    for (int o = 0; o < KL; o += VW) {
        vf a[NBMAX];
        UNROLL for (int k = 0; k < nb; k++) a[k] = ld(out + (i0 + k) * KL + o);
        for (int q = 0; q < rows1; q++) {
            vf x = ld(d1 + q * KL + o);
            const float *w = W1 + (size_t)q * ldw + i0;
            UNROLL for (int k = 0; k < nb; k++) a[k] += w[k] * x;
        }
        for (int q = 0; q < rows2; q++) {
            vf x = ld(d2 + q * KL + o);
            const float *w = W2 + (size_t)q * ldw + i0;
            UNROLL for (int k = 0; k < nb; k++) a[k] += w[k] * x;
        }
        UNROLL for (int k = 0; k < nb; k++) st(out + (i0 + k) * KL + o, a[k]);
    }
}

/* out (rows, KL) = bias + W v, W (rows, n) given transposed as Wt (n, ldt) (transpose()),
 * v (n, KL); bias may be NULL. */
static void gemv(const float *Wt, int ldt, int rows, int n, const float *v, const float *bias, float *out) {
    for (int b = 0, q = 0, m; b < nblocks(rows); b++, q += m) {
        m = block_size(rows, b);
#define GEMV_BLOCK(nb) gemv_block(Wt, ldt, q, n, v, bias, out, nb)
        NB_SWITCH(m, GEMV_BLOCK)
#undef GEMV_BLOCK
    }
}

/* out (n, KL) += W1^T d1 + W2^T d2: W1 (rows1, n) and W2 (rows2, n) with row stride ldw, d1
 * (rows1, KL), d2 (rows2, KL); the W1 rows first, as two gemv_t calls would. */
static void gemv_t2(const float *W1, const float *W2, int ldw, int rows1, int rows2, int n, const float *d1,
                    const float *d2, float *out) {
    for (int b = 0, i = 0, m; b < nblocks(n); b++, i += m) {
        m = block_size(n, b);
#define GEMV_T_BLOCK(nb) gemv_t_block(W1, W2, ldw, rows1, rows2, i, d1, d2, out, nb)
        NB_SWITCH(m, GEMV_T_BLOCK)
#undef GEMV_T_BLOCK
    }
}

/* out (n, KL) += W^T d, W (rows, n) with row stride ldw, d (rows, KL). */
static void gemv_t(const float *W, int ldw, int rows, int n, const float *d, float *out) {
    gemv_t2(W, NULL, ldw, rows, 0, n, d, NULL, out);
}

/* Wt (n, rows) = W^T for W (rows, n): gemv's layout, made once per kernel call. */
static void transpose(float *Wt, const float *W, int rows, int n) {
    for (int q = 0; q < rows; q++)
        for (int i = 0; i < n; i++) Wt[(size_t)i * rows + q] = W[(size_t)q * n + i];
}

/* a[k][l] += d_t[q0 + k] v_t[i0 + l] (per lane) over t < T and the lane offsets o0 <= o < o1 (t
 * outer, o inner), d_t at d + t * sd and v_t at v + t * sv, for an nq x ni tile (at most 4 x 4).
 * Always inlined with constant nq and ni (TILE_SWITCH), so the tile's accumulators stay in
 * registers and no product is spent on an edge tile's missing rows or columns. */
static inline __attribute__((always_inline)) void tile(vf a[4][4], int T, const float *d, ptrdiff_t sd,
                                                       const float *v, ptrdiff_t sv, int q0, int i0, int o0, int o1,
                                                       const int nq, const int ni) {
    for (int t = 0; t < T; t++)
        for (int o = o0; o < o1; o += VW) {
            vf dv[4], vv[4];
            UNROLL for (int k = 0; k < nq; k++) dv[k] = ld(d + t * sd + (q0 + k) * KL + o);
            UNROLL for (int l = 0; l < ni; l++) vv[l] = ld(v + t * sv + (i0 + l) * KL + o);
            UNROLL for (int k = 0; k < nq; k++) UNROLL for (int l = 0; l < ni; l++) a[k][l] += dv[k] * vv[l];
        }
}

/* Calls TILE(nq, ni) with compile-time nq, ni equal to the runtime ones (1..4 each). */
#define TILE_SWITCH(nq, ni, TILE)                                                                  \
    switch ((nq) * 4 + (ni) - 5) {                                                                 \
    case 0: TILE(1, 1); break; case 1: TILE(1, 2); break; case 2: TILE(1, 3); break;               \
    case 3: TILE(1, 4); break; case 4: TILE(2, 1); break; case 5: TILE(2, 2); break;               \
    case 6: TILE(2, 3); break; case 7: TILE(2, 4); break; case 8: TILE(3, 1); break;               \
    case 9: TILE(3, 2); break; case 10: TILE(3, 3); break; case 11: TILE(3, 4); break;             \
    case 12: TILE(4, 1); break; case 13: TILE(4, 2); break; case 14: TILE(4, 3); break;            \
    case 15: TILE(4, 4); break;                                                                    \
    }

/* One tile of outer: the products over every t and lane, the lanes summed in lane order. */
static inline __attribute__((always_inline)) void outer_tile(float *g, int ldg, int T, const float *d, ptrdiff_t sd,
                                                             const float *v, ptrdiff_t sv, int q0, int i0,
                                                             const int nq, const int ni) {
    vf a[4][4];
    UNROLL for (int k = 0; k < nq; k++) UNROLL for (int l = 0; l < ni; l++) a[k][l] = (vf){};
    tile(a, T, d, sd, v, sv, q0, i0, 0, KL, nq, ni);
    for (int k = 0; k < nq; k++)
        for (int l = 0; l < ni; l++) {
            float s = 0.0f;
            for (int b = 0; b < VW; b++) s += a[k][l][b];
            g[(size_t)(q0 + k) * ldg + i0 + l] += s;
        }
}

/* g (rows, n) += sum over t < T and the lanes of d_t (rows, KL) v_t (n, KL)^T, with d_t at
 * d + t * sd and v_t at v + t * sv, in 4 x 4 tiles (smaller at the edges). */
static void outer(float *g, int ldg, int rows, int n, int T, const float *d, size_t sd, const float *v,
                  size_t sv) {
    for (int q0 = 0; q0 < rows; q0 += 4)
        for (int i0 = 0; i0 < n; i0 += 4) {
            int nq = rows - q0 < 4 ? rows - q0 : 4, ni = n - i0 < 4 ? n - i0 : 4;
#define OUTER_TILE(a, b) outer_tile(g, ldg, T, d, (ptrdiff_t)sd, v, (ptrdiff_t)sv, q0, i0, a, b)
            TILE_SWITCH(nq, ni, OUTER_TILE)
#undef OUTER_TILE
        }
}

/* One tile of outer_acc at lane offset o: load, accumulate over t, store. */
static inline __attribute__((always_inline)) void acc_tile(float *acc, int n, int T, const float *d, ptrdiff_t sd,
                                                           const float *v, ptrdiff_t sv, int q0, int i0, int o,
                                                           const int nq, const int ni) {
    vf a[4][4];
    UNROLL for (int k = 0; k < nq; k++) UNROLL for (int l = 0; l < ni; l++)
        a[k][l] = ld(acc + ((size_t)(q0 + k) * n + i0 + l) * KL + o);
    tile(a, T, d, sd, v, sv, q0, i0, o, o + VW, nq, ni);
    UNROLL for (int k = 0; k < nq; k++) UNROLL for (int l = 0; l < ni; l++)
        st(acc + ((size_t)(q0 + k) * n + i0 + l) * KL + o, a[k][l]);
}

/* Per-lane accumulation acc (rows, n, KL) += d_t (rows, KL) (x) v_t (n, KL) over T steps, d_t at
 * d + t * sd and v_t at v + t * sv (strides may be negative). 4 x 4 tiles stay in registers
 * for the whole time range; the lanes are reduced later, once (lane_reduce). Used on a short
 * window of recent steps so that d_t and v_t are still in cache. */
static void outer_acc(float *acc, int rows, int n, int T, const float *d, ptrdiff_t sd, const float *v,
                      ptrdiff_t sv) {
    for (int q0 = 0; q0 < rows; q0 += 4)
        for (int i0 = 0; i0 < n; i0 += 4) {
            int nq = rows - q0 < 4 ? rows - q0 : 4, ni = n - i0 < 4 ? n - i0 : 4;
            for (int o = 0; o < KL; o += VW) {
#define ACC_TILE(a, b) acc_tile(acc, n, T, d, sd, v, sv, q0, i0, o, a, b)
                TILE_SWITCH(nq, ni, ACC_TILE)
#undef ACC_TILE
            }
        }
}

/* g[q * ldg + i] += the lanes of acc (rows, n, KL) summed in lane order. */
static void lane_reduce(float *g, int ldg, int rows, int n, const float *acc) {
    for (int q = 0; q < rows; q++)
        for (int i = 0; i < n; i++) {
            float s = 0.0f;
            for (int b = 0; b < KL; b++) s += acc[((size_t)q * n + i) * KL + b];
            g[(size_t)q * ldg + i] += s;
        }
}

/* Per step saved (SoA, (H, KL) each): r, z, n, g, and h itself. */
#define NSAV 5

/* Lanes of (width, KL) from an (B, T, width) array at step t; lanes >= B are 0. */
static void gather(float *dst, const float *src, int B, int T, int t, int width) {
    to_lanes(dst, src + (size_t)t * width, B, (size_t)width, (size_t)T * width);
}

static void scatter(float *dst, const float *src, int B, int T, int t, int width) {
    from_lanes(dst + (size_t)t * width, (size_t)T * width, src, B, (size_t)width, 0);
}

/* The gate pre-activations of step t for G gate rows: ai = W_ih x_t + b_ih (x_t gathered into
 * xt), ah = W_hh h_{t-1} + b_hh, with h_{-1} = 0 when hp is NULL; wti, wth: W_ih and W_hh
 * transposed. */
static inline __attribute__((always_inline)) void project(const kgru *w, const float *wti, const float *wth, int B,
                                                          int T, int t, const float *x, const float *hp, int G,
                                                          float *xt, float *ai, float *ah) {
    gather(xt, x, B, T, t, w->I);
    gemv(wti, G, G, w->I, xt, w->bih, ai);
    gemv(wth, G, G, hp ? w->H : 0, hp, w->bhh, ah);
}

static void fwd(const kgru *w, int B, int T, const float *x, float *sv, float *tmp) {
    const int I = w->I, H = w->H, G = 3 * H;
    float *soa = kalign(sv + (size_t)B * T * H); /* (T, NSAV, H, KL); sv itself holds h as (B, T, H) */
    tmp = kalign(tmp);
    float *ai = tmp, *ah = ai + (size_t)G * KL, *xt = ah + (size_t)G * KL, *yo = xt + (size_t)I * KL;
    float *wti = yo + 2 * KL, *wth = wti + (size_t)I * G, *wto = wth + (size_t)H * G; /* transposed */
    const vf zero = {};
    transpose(wti, w->wih, G, I), transpose(wth, w->whh, G, H);
    if (w->wo) transpose(wto, w->wo, 2, H);
    for (int t = 0; t < T; t++) {
        float *s0 = soa + (size_t)(w->ring ? t & 1 : t) * NSAV * H * KL;
        float *rs = s0, *zs = rs + H * KL, *ns = zs + H * KL, *gs = ns + H * KL, *hn = gs + H * KL;
        const float *hp = t ? soa + (size_t)(w->ring ? (t - 1) & 1 : t - 1) * NSAV * H * KL + 4 * H * KL : NULL;
        gather(xt, x, B, T, t, I);
        gemv(wti, G, G, I, xt, w->bih, ai);
        /* gate by gate, each gate's non-linearity right after its rows of W_hh h(t-1), so that it
         * runs beside the next gate's products */
        for (int q = 0; q < 2; q++) { /* r, z */
            const float *a0 = ai + (size_t)q * H * KL, *h0 = ah + (size_t)q * H * KL;
            float *out = q ? zs : rs;
            gemv(wth + q * H, G, H, hp ? H : 0, hp, w->bhh ? w->bhh + q * H : NULL, ah + (size_t)q * H * KL);
            for (int e = 0; e < H * KL; e += VW) st(out + e, vsig(ld(a0 + e) + ld(h0 + e)));
        }
        gemv(wth + 2 * H, G, H, hp ? H : 0, hp, w->bhh ? w->bhh + 2 * H : NULL, ah + (size_t)2 * H * KL);
        for (int e = 0; e < H * KL; e += VW) {
            vf r = ld(rs + e), z = ld(zs + e);
            vf g = ld(ah + 2 * H * KL + e), n = vtanh(ld(ai + 2 * H * KL + e) + r * g);
            vf h = hp ? ld(hp + e) : zero;
            st(ns + e, n), st(gs + e, g);
            st(hn + e, (1.0f - z) * n + z * h);
        }
        if (w->wo) { /* fused head: y = W_out h + b_out, written directly */
            gemv(wto, 2, 2, H, hn, w->bo, yo);
            scatter(w->y, yo, B, T, t, 2);
        } else {
            scatter(sv, hn, B, T, t, H);
        }
    }
}

#define TW KTW /* backward time window: gate gradients kept for TW steps, then folded into the
                     * per-lane weight-gradient accumulators while still in cache */

static void bwd(const kgru *w, int B, int T, const float *x, const float *sv, const float *dhin,
                float *dx, float *tmp) {
    const int I = w->I, H = w->H, G = 3 * H;
    const size_t sg = (size_t)G * KL, sh = (size_t)H * KL, sx = (size_t)I * KL, ss = (size_t)NSAV * sh;
    const float *soa = kalign((float *)sv + (size_t)B * T * H);
    tmp = kalign(tmp);
    float *accI = tmp, *accH = accI + (size_t)G * I * KL;      /* (G, I, KL), (G, H, KL) per lane */
    float *bi = accH + (size_t)G * H * KL, *bh = bi + sg;      /* (G, KL) bias lanes */
    float *dA = bh + sg, *DG = dA + TW * sg, *X = DG + TW * sh; /* windows (TW, G|H|I, KL) */
    float *dhn = X + TW * sx, *dxt = dhn + sh, *dd = dxt + sx;
    float *DY = dd + sh, *accO = DY + TW * 2 * KL, *bo = accO + (size_t)2 * H * KL; /* fused head */
    const vf zero = {};
    memset(accI, 0, sizeof(float) * ((size_t)G * (I + H) * KL + 2 * sg));
    memset(accO, 0, sizeof(float) * (size_t)(2 * H + 2) * KL);
    memset(dhn, 0, sizeof(float) * sh);
    for (int t = T - 1, k = 0; t >= 0; t--, k++) {
        const float *s0 = soa + (size_t)t * ss;
        const float *rs = s0, *zs = rs + sh, *ns = zs + sh, *gs = ns + sh;
        const float *hp = t ? s0 - ss + 4 * sh : NULL;
        int slot = k % TW;
        float *da = dA + slot * sg, *dg = DG + slot * sh;
        gather(X + slot * sx, x, B, T, t, I);
        if (w->wo) { /* fused head: dh = W_out^T dy; its own gradients folded with the window */
            gather(DY + slot * 2 * KL, dhin, B, T, t, 2);
            memset(dd, 0, sizeof(float) * sh);
            gemv_t(w->wo, H, 2, H, DY + slot * 2 * KL, dd);
        } else {
            gather(dd, dhin, B, T, t, H);
        }
        for (int j = 0; j < H * NV; j++) {
            int e = j * VW;
            vf d = ld(dd + e) + ld(dhn + e), r = ld(rs + e), z = ld(zs + e), n = ld(ns + e), g = ld(gs + e);
            vf h = hp ? ld(hp + e) : zero;
            vf dan = d * (1.0f - z) * (1.0f - n * n), daz = d * (h - n) * z * (1.0f - z);
            vf dar = dan * g * r * (1.0f - r), dgn = dan * r;
            st(da + e, dar), st(da + sh + e, daz), st(da + 2 * sh + e, dan), st(dg + e, dgn);
            st(dhn + e, d * z);
            st(bi + e, ld(bi + e) + dar), st(bi + sh + e, ld(bi + sh + e) + daz); /* biases, step by step */
            st(bi + 2 * sh + e, ld(bi + 2 * sh + e) + dan), st(bh + e, ld(bh + e) + dgn);
        }
        if (hp) /* dh(t-1) += W_hh^T (da_r, da_z, dg): rows r, z from da, rows n from dg */
            gemv_t2(w->whh, w->whh + (size_t)2 * H * H, H, 2 * H, H, H, da, dg, dhn);
        if (dx) {
            memset(dxt, 0, sizeof(float) * sx);
            gemv_t(w->wih, I, G, I, da, dxt);
            scatter(dx, dxt, B, T, t, I);
        }
        if (slot == TW - 1 || t == 0) { /* fold the window: steps t .. t + slot, newest first */
            int nw = slot + 1, t_new = t + slot;
            outer_acc(accI, G, I, nw, dA, (ptrdiff_t)sg, X, (ptrdiff_t)sx);
            /* W_hh pairs (dah(t'), h(t' - 1)) for t' >= 1: h(t' - 1) is soa step t' - 1 */
            int nh = t ? nw : nw - 1; /* the oldest step in the window is t; it has no h(t-1) if t == 0 */
            if (nh > 0) {
                const float *hv = soa + (size_t)(t_new - 1) * ss + 4 * sh;
                outer_acc(accH, 2 * H, H, nh, dA, (ptrdiff_t)sg, hv, -(ptrdiff_t)ss);
                outer_acc(accH + (size_t)2 * H * H * KL, H, H, nh, DG, (ptrdiff_t)sh, hv, -(ptrdiff_t)ss);
            }
            if (w->wo)
                for (int u = 0; u < nw; u++)
                    for (int e = 0; e < 2 * KL; e += VW) st(bo + e, ld(bo + e) + ld(DY + u * 2 * KL + e));
            if (w->wo) /* W_out pairs (dy(t'), h(t')) */
                outer_acc(accO, 2, H, nw, DY, 2 * KL, soa + (size_t)t_new * ss + 4 * sh, -(ptrdiff_t)ss);
        }
    }
    lane_reduce(w->gwih, I, G, I, accI);
    lane_reduce(w->gwhh, H, G, H, accH);
    if (w->wo) {
        lane_reduce(w->gwo, H, 2, H, accO);
        lane_reduce(w->gbo, 1, 2, 1, bo);
    }
    for (int q = 0; q < G; q++) { /* biases: the hidden side is da for r and z, dg for n */
        float si = 0.0f, s2 = 0.0f;
        for (int b = 0; b < KL; b++) si += bi[q * KL + b], s2 += q < 2 * H ? bi[q * KL + b] : bh[(q - 2 * H) * KL + b];
        if (w->gbih) w->gbih[q] += si;
        if (w->gbhh) w->gbhh[q] += s2;
    }
}

/* ---- LSTM: per step saved (SoA, (H, KL) each) i, f, g, o, c, h ---- */
#define NSAVL 6

static void lstm_fwd(const kgru *w, int B, int T, const float *x, float *sv, float *tmp) {
    const int H = w->H, G = 4 * H;
    const size_t sh = (size_t)H * KL, ss = (size_t)NSAVL * sh;
    float *soa = kalign(sv + (size_t)B * T * H); /* (T, NSAVL, H, KL); sv itself holds h as (B, T, H) */
    tmp = kalign(tmp);
    float *ai = tmp, *ah = ai + (size_t)G * KL, *xt = ah + (size_t)G * KL;
    float *wti = xt + (size_t)w->I * KL, *wth = wti + (size_t)w->I * G; /* transposed */
    const vf zero = {};
    transpose(wti, w->wih, G, w->I), transpose(wth, w->whh, G, H);
    for (int t = 0; t < T; t++) {
        float *s0 = soa + (size_t)t * ss, *is = s0, *fs = is + sh, *gs = fs + sh, *os = gs + sh, *cs = os + sh,
              *hn = cs + sh;
        const float *hp = t ? hn - ss : NULL, *cp = t ? cs - ss : NULL;
        project(w, wti, wth, B, T, t, x, hp, G, xt, ai, ah);
        for (int j = 0; j < H * NV; j++) {
            int e = j * VW;
            vf ig = vsig(ld(ai + e) + ld(ah + e)), fg = vsig(ld(ai + sh + e) + ld(ah + sh + e));
            vf gg = vtanh(ld(ai + 2 * sh + e) + ld(ah + 2 * sh + e)), og = vsig(ld(ai + 3 * sh + e) + ld(ah + 3 * sh + e));
            vf c = fg * (cp ? ld(cp + e) : zero) + ig * gg;
            st(is + e, ig), st(fs + e, fg), st(gs + e, gg), st(os + e, og), st(cs + e, c);
            st(hn + e, og * vtanh(c));
        }
        scatter(sv, hn, B, T, t, H);
    }
}

static void lstm_bwd(const kgru *w, int B, int T, const float *x, const float *sv, const float *dhin,
                     float *dx, float *tmp) {
    const int I = w->I, H = w->H, G = 4 * H;
    const size_t sg = (size_t)G * KL, sh = (size_t)H * KL, sx = (size_t)I * KL, ss = (size_t)NSAVL * sh;
    const float *soa = kalign((float *)sv + (size_t)B * T * H);
    tmp = kalign(tmp);
    float *dA = tmp, *X = dA + T * sg, *bs = X + T * sx; /* (T, G, KL), (T, I, KL), (G, KL) */
    float *dhn = bs + sg, *dcn = dhn + sh, *dxt = dcn + sh, *dd = dxt + sx;
    const vf zero = {};
    memset(dhn, 0, sizeof(float) * 2 * sh);
    for (int t = T - 1; t >= 0; t--) {
        const float *s0 = soa + (size_t)t * ss, *is = s0, *fs = is + sh, *gs = fs + sh, *os = gs + sh, *cs = os + sh;
        const float *hp = t ? s0 - ss + 5 * sh : NULL, *cp = t ? cs - ss : NULL;
        float *da = dA + t * sg;
        gather(X + t * sx, x, B, T, t, I);
        gather(dd, dhin, B, T, t, H);
        for (int j = 0; j < H * NV; j++) {
            int e = j * VW;
            vf d = ld(dd + e) + ld(dhn + e), ig = ld(is + e), fg = ld(fs + e), gg = ld(gs + e), og = ld(os + e);
            vf tc = vtanh(ld(cs + e)), dc = ld(dcn + e) + d * og * (1.0f - tc * tc);
            vf di = dc * gg * ig * (1.0f - ig), df = dc * (cp ? ld(cp + e) : zero) * fg * (1.0f - fg);
            vf dg = dc * ig * (1.0f - gg * gg), dov = d * tc * og * (1.0f - og);
            st(da + e, di), st(da + sh + e, df), st(da + 2 * sh + e, dg), st(da + 3 * sh + e, dov);
            st(dcn + e, dc * fg), st(dhn + e, zero);
        }
        if (hp) gemv_t(w->whh, H, G, H, da, dhn);
        if (dx) {
            memset(dxt, 0, sizeof(float) * sx);
            gemv_t(w->wih, I, G, I, da, dxt);
            scatter(dx, dxt, B, T, t, I);
        }
    }
    outer(w->gwih, I, G, I, T, dA, sg, X, sx);
    if (T > 1) outer(w->gwhh, H, G, H, T - 1, dA + sg, sg, soa + 5 * sh, ss);
    memset(bs, 0, sizeof(float) * sg); /* biases: sums over time, then lanes */
    for (int t = 0; t < T; t++)
        for (int e = 0; e < G * KL; e += VW) st(bs + e, ld(bs + e) + ld(dA + t * sg + e));
    for (int q = 0; q < G; q++) { /* both biases get the gate gradient; lanes in lane order */
        float s1 = 0.0f;
        for (int b = 0; b < KL; b++) s1 += bs[q * KL + b];
        if (w->gbih) w->gbih[q] += s1;
        if (w->gbhh) w->gbhh[q] += s1;
    }
}

/* ---- RVTDCNN: per step saved (SoA) the conv activations (36, KL) and hidden (H, KL) ---- */

/* The 4 x 5 feature image of step t, (20, KL): rows t-3..t (wrapping to the sequence end) of xl,
 * the chunk's (I, Q) as lanes (2 T, KL). Called for t = 0, 1, ... in turn on the same img: each
 * step after the first computes only its newest row. */
static void rvt_image(const float *xl, int T, int t, float *img) {
    int r0 = t ? 3 : 0; /* after the first step, rows 1..3 of the last image are rows 0..2 of this one */
    if (t) memmove(img, img + 5 * KL, sizeof(float) * 15 * KL);
    for (int r = r0; r < 4; r++) {
        const float *s = xl + (size_t)2 * (((t - 3 + r) % T + T) % T) * KL;
        for (int o = 0; o < KL; o += VW) {
            vf i = ld(s + o), q = ld(s + KL + o);
            vf a2 = i * i + q * q, av;
            float *f = img + (size_t)r * 5 * KL + o, tv[VW];
            memcpy(tv, &a2, sizeof tv);
            for (int k = 0; k < VW; k++) tv[k] = __builtin_sqrtf(tv[k]); /* vectorised by the compiler */
            memcpy(&av, tv, sizeof av);
            st(f, i), st(f + KL, q), st(f + 2 * KL, av), st(f + 3 * KL, a2), st(f + 4 * KL, a2 * av);
        }
    }
}

static void rvt_fwd(const krvt *w, int B, int T, const float *x, float *sv, float *y, float *tmp) {
    const int H = w->H;
    sv = kalign(sv);
    tmp = kalign(tmp);
    float *img = tmp, *xl = img + 20 * KL, *yl = xl + (size_t)2 * T * KL, *hid = yl + (size_t)2 * T * KL;
    float *wth = hid + (size_t)H * KL, *wto = wth + (size_t)36 * H; /* transposed */
    transpose(wth, w->wh, H, 36), transpose(wto, w->wo, 2, H);
    to_lanes(xl, x, B, (size_t)2 * T, (size_t)2 * T);
    for (int t = 0; t < T; t++) {
        float *a = sv + (size_t)t * (36 + H) * KL, *h = a + 36 * KL;
        rvt_image(xl, T, t, img);
        for (int ch = 0; ch < 3; ch++)
            for (int r = 0; r < 4; r++)
                for (int j = 0; j < 3; j++)
                    for (int o = 0; o < KL; o += VW) {
                        vf v = (vf){} + w->bc[ch];
                        for (int kr = 0; kr < 3; kr++) {
                            int rr = r + kr - 1;
                            if (rr < 0 || rr > 3) continue;
                            for (int kc = 0; kc < 3; kc++) v += w->wc[ch * 9 + kr * 3 + kc] * ld(img + (rr * 5 + j + kc) * KL + o);
                        }
                        st(a + (ch * 12 + r * 3 + j) * KL + o, v);
                    }
        for (int e = 0; e < 36 * KL; e += VW) st(a + e, vtanh(ld(a + e)));
        gemv(wth, H, H, 36, a, w->bh, hid);
        for (int e = 0; e < H * KL; e += VW) st(h + e, vtanh(ld(hid + e)));
        gemv(wto, 2, 2, H, h, w->bo, yl + (size_t)t * 2 * KL);
    }
    from_lanes(y, (size_t)2 * T, yl, B, (size_t)2 * T, 0);
}

static void rvt_bwd(const krvt *w, int B, int T, const float *x, const float *sv, const float *dy, float *dx,
                    float *tmp) {
    const int H = w->H;
    const size_t sa = (size_t)(36 + H) * KL;
    sv = kalign((float *)sv);
    tmp = kalign(tmp);
    float *DY = tmp, *DZ = DY + (size_t)T * 2 * KL;      /* histories (T, 2, KL), (T, H, KL) */
    float *gc = DZ + (size_t)T * H * KL, *img = gc + 30 * KL, *xl = img + 20 * KL; /* conv grads per lane */
    float *dh = xl + (size_t)2 * T * KL, *da = dh + (size_t)H * KL, *dimg = da + 36 * KL;
    memset(gc, 0, sizeof(float) * 30 * KL);
    if (dx) memset(dx, 0, sizeof(float) * (size_t)B * T * 2);
    to_lanes(DY, dy, B, (size_t)2 * T, (size_t)2 * T);
    to_lanes(xl, x, B, (size_t)2 * T, (size_t)2 * T);
    for (int t = 0; t < T; t++) {
        const float *a = sv + (size_t)t * sa, *h = a + 36 * KL;
        float *dyt = DY + (size_t)t * 2 * KL, *dz = DZ + (size_t)t * H * KL;
        memset(dh, 0, sizeof(float) * (size_t)H * KL);
        gemv_t(w->wo, H, 2, H, dyt, dh);
        for (int e = 0; e < H * KL; e += VW) {
            vf hv = ld(h + e);
            st(dz + e, ld(dh + e) * (1.0f - hv * hv));
        }
        memset(da, 0, sizeof(float) * 36 * KL);
        gemv_t(w->wh, 36, H, 36, dz, da);
        rvt_image(xl, T, t, img);
        if (dx) memset(dimg, 0, sizeof(float) * 20 * KL);
        /* each conv weight's and bias's lane sums over the positions (r, j) in order, in a register;
         * the image's gradient (only for dx) in (ch, r, j, kr, kc) order */
        for (int o = 0; o < KL; o += VW)
            for (int ch = 0; ch < 3; ch++) {
                vf d[12], gb = ld(gc + (27 + ch) * KL + o);
                for (int p = 0; p < 12; p++) {
                    int e = (ch * 12 + p) * KL + o;
                    vf av = ld(a + e);
                    d[p] = ld(da + e) * (1.0f - av * av);
                    gb += d[p];
                }
                st(gc + (27 + ch) * KL + o, gb);
                for (int kr = 0; kr < 3; kr++)
                    for (int kc = 0; kc < 3; kc++) {
                        int wi = ch * 9 + kr * 3 + kc;
                        vf g = ld(gc + wi * KL + o);
                        for (int r = 0; r < 4; r++) {
                            int rr = r + kr - 1;
                            if (rr < 0 || rr > 3) continue;
                            for (int j = 0; j < 3; j++) g += d[r * 3 + j] * ld(img + (rr * 5 + j + kc) * KL + o);
                        }
                        st(gc + wi * KL + o, g);
                    }
                if (dx)
                    for (int p = 0; p < 12; p++)
                        for (int kr = 0; kr < 3; kr++) {
                            int rr = p / 3 + kr - 1;
                            if (rr < 0 || rr > 3) continue;
                            for (int kc = 0; kc < 3; kc++) {
                                int ii = (rr * 5 + p % 3 + kc) * KL + o;
                                st(dimg + ii, ld(dimg + ii) + w->wc[ch * 9 + kr * 3 + kc] * d[p]);
                            }
                        }
            }
        if (!dx) continue;
        for (int r = 0; r < 4; r++) { /* features back to I, Q of sample t - 3 + r */
            int u = ((t - 3 + r) % T + T) % T;
            const float *f = img + (size_t)r * 5 * KL, *g = dimg + (size_t)r * 5 * KL;
            for (int b = 0; b < B; b++) {
                float i = f[b], q = f[KL + b], A = f[2 * KL + b];
                float dI = g[b], dQ = g[KL + b];
                if (A > 0) {
                    float dA = g[2 * KL + b] + 2.0f * A * g[3 * KL + b] + 3.0f * A * A * g[4 * KL + b];
                    dI += dA * i / A, dQ += dA * q / A;
                }
                dx[((size_t)b * T + u) * 2] += dI, dx[((size_t)b * T + u) * 2 + 1] += dQ;
            }
        }
    }
    outer(w->gwo, H, 2, H, T, DY, 2 * KL, sv + 36 * KL, sa);
    outer(w->gwh, 36, H, 36, T, DZ, (size_t)H * KL, sv, sa);
    for (int k = 0; k < 30; k++) { /* conv weights and biases: lanes in lane order */
        float s = 0.0f;
        for (int b = 0; b < KL; b++) s += gc[k * KL + b];
        if (k < 27) w->gwc[k] += s;
        else w->gbc[k - 27] += s;
    }
    for (int q = 0; q < H + 2; q++) { /* fc biases: each lane's sum over time (lanes side by side), then the lanes */
        const float *p = q < H ? DZ + (size_t)q * KL : DY + (size_t)(q - H) * KL;
        size_t step = q < H ? (size_t)H * KL : 2 * KL;
        float lane[KL], s = 0.0f;
        for (int o = 0; o < KL; o += VW) {
            vf v = (vf){};
            for (int t = 0; t < T; t++) v += ld(p + t * step + o);
            st(lane + o, v);
        }
        for (int b = 0; b < KL; b++) s += lane[b];
        if (q < H) w->gbh[q] += s;
        else w->gbo[q - H] += s;
    }
}

/* ---- dense layers over many samples: y (N, out) = x (N, in) W^T + b, in blocks of KL samples
 * transposed to SoA so that the products are the same broadcast-FMAs ---- */

static void lin_fwd(const float *W, const float *b, int out, int in, int N, const float *x, float *y, float *tmp) {
    tmp = kalign(tmp);
    float *xs = tmp, *ys = xs + (size_t)in * KL, *Wt = ys + (size_t)out * KL;
    transpose(Wt, W, out, in);
    for (int n0 = 0; n0 < N; n0 += KL) {
        int nb = N - n0 < KL ? N - n0 : KL;
        to_lanes(xs, x + (size_t)n0 * in, nb, (size_t)in, (size_t)in);
        gemv(Wt, out, out, in, xs, b, ys);
        from_lanes(y + (size_t)n0 * out, (size_t)out, ys, nb, (size_t)out, 0);
    }
}

/* dx (N, in) += dy W (when dx is not NULL); gW (out, in) += dy^T x; gb (out) += column sums.
 * All blocks are transposed first so that one blocked outer product (one lane reduction at the
 * end) covers every sample. */
static void lin_bwd(const float *W, int out, int in, int N, const float *x, const float *dy, float *dx,
                    float *gW, float *gb, float *tmp) {
    int nblk = (N + KL - 1) / KL;
    const size_t sx = (size_t)in * KL, sd = (size_t)out * KL;
    tmp = kalign(tmp);
    float *XS = tmp, *DS = XS + nblk * sx, *dxs = DS + nblk * sd;
    for (int k = 0; k < nblk; k++) {
        int nb = N - k * KL < KL ? N - k * KL : KL;
        to_lanes(XS + (size_t)k * sx, x + (size_t)k * KL * in, nb, (size_t)in, (size_t)in);
        to_lanes(DS + (size_t)k * sd, dy + (size_t)k * KL * out, nb, (size_t)out, (size_t)out);
    }
    outer(gW, in, out, in, nblk, DS, sd, XS, sx);
    if (gb)
        for (int o = 0; o < out; o++) {
            vf a = (vf){};
            for (int k = 0; k < nblk; k++)
                for (int l = 0; l < KL; l += VW) a += ld(DS + k * sd + o * KL + l);
            float sum = 0.0f;
            for (int l = 0; l < VW; l++) sum += a[l];
            gb[o] += sum;
        }
    if (!dx) return;
    for (int k = 0; k < nblk; k++) {
        memset(dxs, 0, sizeof(float) * sx);
        gemv_t(W, in, out, in, DS + k * sd, dxs);
        from_lanes(dx + (size_t)k * KL * in, (size_t)in, dxs, N - k * KL < KL ? N - k * KL : KL, (size_t)in, 1);
    }
}

const kern_ops K(kern) = {
    STR(KERN_NAME), fwd, bwd, lstm_fwd, lstm_bwd, rvt_fwd, rvt_bwd, lin_fwd, lin_bwd,
    .tcn = &K(kfam_tcn),
    .pgjanet = &K(kfam_pgjanet), .dvrjanet = &K(kfam_dvrjanet),
    .delta = &K(kdelta),
    .gmp = &K(kfam_gmp),
    .peak = K(kern_peak),
};
