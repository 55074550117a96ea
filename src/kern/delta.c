/* delta: the exact fast path of the DeltaGRU layer (kern.h's kdelta; the reference and the cell's
 * equations: src/models/rnn.c with w->delta, derivation docs/derivations/gru.md). Every float of
 * every sequence goes through the reference's operations in the reference's order (this file is
 * compiled per ISA with -ffp-contract=off: no fused multiply-adds), so the results are bitwise its
 * own. What changes is the shape of the work:
 * - a chunk of up to KL sequences runs in lockstep, sequence-minor: each step's vectors are
 *   (n, KL), one lane per sequence, so a product row is a broadcast weight times a lane vector and
 *   each lane sums its terms in the reference's order (over i for W x, over the gate rows for W^T d);
 * - the commit decisions are the reference's comparisons, lane by lane, as selects;
 * - sigmoid calls libm's expf element by element, as the reference does (a vector approximation
 *   would change the bits); tanh is vlibm.h's vtanhf, libm's tanhf bit for bit, when
 *   vtanhf_matches() (else tanhf element by element); the divisions and everything else are vectors;
 * - the reference adds each sample's weight gradients in sample order (b ascending, t descending),
 *   one chain per weight, which cannot run across lanes: backward turns each step's gate gradients
 *   lane-major, (KL, T, Gp), and after the chunk's time loop folds them in that order with the
 *   saved x_p and h_p rows, vectorised over the gate rows (each vector lane another weight's chain);
 * - the (B, T, n) planes the families read and write (x, dh, dx; h, x_p, h_p) move to and from the
 *   lanes in VW x VW blocks transposed in registers.
 * Saved: h (B, T, H), x_p (B, T, I), h_p (B, T, H) in the reference's layout (the heads and
 * rnn_delta_zeros read them), then per chunk the lane planes (T, n, KL) of r, z, n, g, h, m_h, h_p
 * (n = H) and m_x, x_p (n = I).
 * Legend: B batch, T time, I inputs, H hidden, G = 3H gate rows, Gp = G rounded up to VW. */
#include <math.h>

#include "simd.h"
#include "vlibm.h"

#define TG 32 /* samples a weight-gradient tile folds before its accumulators go back to memory */

static int gpad(int H) { return (3 * H + VW - 1) / VW * VW; }
static int nchunks(int B) { return (B + KL - 1) / KL; }
static size_t chunk_floats(int I, int H, int T) { return (7 * (size_t)H + 2 * (size_t)I) * T * KL; }

static size_t saved(int I, int H, int B, int T) {
    return (size_t)B * T * (2 * (size_t)H + I) + (size_t)nchunks(B) * chunk_floats(I, H, T) + KL; /* + KL: kalign */
}

/* forward: X (T, I, KL), ai, ah (G, KL), e (2H, KL), u (H, KL), z0 (max(I, H), KL); backward: DH
 * (T, H, KL), DX (T, I, KL), the lane-major gate gradients LA, LH (KL, T, Gp), da, dah (Gp, KL),
 * dhn, ch, dhp, z0 (H, KL), cx (I, KL) and the weight-gradient accumulators (I + H + 2, Gp) */
static size_t tmp_size(int I, int H, int T) {
    size_t G = 3 * (size_t)H, Gp = (size_t)gpad(H), n = (size_t)(I > H ? I : H);
    size_t fwd = ((size_t)T * I + 2 * G + 3 * (size_t)H + n) * KL;
    size_t bwd = ((size_t)T * ((size_t)H + I + 2 * Gp) + 2 * Gp + 4 * (size_t)H + I) * KL + ((size_t)I + H + 2) * Gp;
    return (fwd > bwd ? fwd : bwd) + KL; /* + KL: kalign */
}

/* A chunk's lane planes (the backward reads them through the same pointers: sv is const there). */
typedef struct dsoa {
    float *r, *z, *n, *g, *h, *mh, *hp; /* (T, H, KL) */
    float *mx, *xp;                     /* (T, I, KL) */
} dsoa;

static dsoa soa_at(const float *sv, int I, int H, int B, int T, int c) {
    float *p = kalign((float *)sv + (size_t)B * T * (2 * (size_t)H + I)) + (size_t)c * chunk_floats(I, H, T);
    size_t h = (size_t)T * H * KL, x = (size_t)T * I * KL;
    dsoa s = {p, p + h, p + 2 * h, p + 3 * h, p + 4 * h, p + 5 * h, p + 6 * h, p + 7 * h, p + 7 * h + x};
    return s;
}

static inline __attribute__((always_inline)) vf vabs(vf v) { return (vf)((vi)v & 0x7fffffff); }

/* The reference's commit of n values: m = |cur - prev| >= th (1 or 0, to mk) and the committed
 * value p = m ? cur : prev. */
static void commit(float *restrict p, float *restrict mk, const float *cur, const float *prev, int n, float th) {
    for (int e = 0; e < n * KL; e += VW) {
        vf c = ld(cur + e), q = ld(prev + e);
        vi m = vabs(c - q) >= th;
        st(mk + e, sel(m, (vf){} + 1.0f, (vf){}));
        st(p + e, sel(m, c, q));
    }
}

/* Rows q0..q0+nb of a (rows, KL) = (b[q] + 0) + W v, the terms in input order (bias_init, gemv_t);
 * nb is a compile-time constant at every call site, so its accumulators stay in registers. */
static inline __attribute__((always_inline)) void gemv_block(float *a, const float *W, const float *b, int q0, int n,
                                                            const float *v, const int nb) {
    for (int o = 0; o < KL; o += VW) {
        vf s[8];
        for (int k = 0; k < nb; k++) s[k] = (vf){} + ((b ? b[q0 + k] : 0.0f) + 0.0f);
        for (int i = 0; i < n; i++) {
            vf x = ld(v + i * KL + o);
            for (int k = 0; k < nb; k++) s[k] += W[(size_t)(q0 + k) * n + i] * x;
        }
        for (int k = 0; k < nb; k++) st(a + (q0 + k) * KL + o, s[k]);
    }
}

/* a (rows, KL) = the biases plus W v for W (rows, n), v (n, KL); v NULL: the biases alone. */
static void gemv(float *a, const float *W, const float *b, int rows, int n, const float *v) {
    int q = 0;
    if (!v) n = 0;
    for (; q + 8 <= rows; q += 8) gemv_block(a, W, b, q, n, v, 8);
    if (q + 4 <= rows) gemv_block(a, W, b, q, n, v, 4), q += 4;
    if (q + 2 <= rows) gemv_block(a, W, b, q, n, v, 2), q += 2;
    if (q < rows) gemv_block(a, W, b, q, n, v, 1);
}

/* Columns i0..i0+nb of out (n, KL) += W^T d, the terms in row order (linear_back's dx). */
static inline __attribute__((always_inline)) void gemv_t_block(float *out, const float *W, int rows, int n, int i0,
                                                              const float *d, const int nb) {
    for (int o = 0; o < KL; o += VW) {
        vf s[8];
        for (int k = 0; k < nb; k++) s[k] = ld(out + (i0 + k) * KL + o);
        for (int q = 0; q < rows; q++) {
            vf x = ld(d + q * KL + o);
            for (int k = 0; k < nb; k++) s[k] += W[(size_t)q * n + i0 + k] * x;
        }
        for (int k = 0; k < nb; k++) st(out + (i0 + k) * KL + o, s[k]);
    }
}

static void gemv_t(float *out, const float *W, int rows, int n, const float *d) {
    int i = 0;
    for (; i + 8 <= n; i += 8) gemv_t_block(out, W, rows, n, i, d, 8);
    if (i + 4 <= n) gemv_t_block(out, W, rows, n, i, d, 4), i += 4;
    if (i + 2 <= n) gemv_t_block(out, W, rows, n, i, d, 2), i += 2;
    if (i < n) gemv_t_block(out, W, rows, n, i, d, 1);
}

/* v (n, KL) = expf(v) for the lanes in use, 0 in the others: vexpf on a vector whose lanes are all
 * in use when ve (vexpf_matches()), else libm element by element */
static void map_expf(float *v, int n, int nb, int ve) {
    for (int k = 0; k < n; k++)
        for (int l = 0; l < KL; l += VW) {
            float *p = v + k * KL + l;
            if (ve && l + VW <= nb) st(p, vexpf(ld(p)));
            else
                for (int j = 0; j < VW; j++) p[j] = l + j < nb ? expf(p[j]) : 0.0f;
        }
}

/* v (n, KL) = tanhf(v): vtanhf on every lane when vt (vtanhf_matches()), else libm for the lanes in
 * use and 0 in the others */
static void map_tanhf(float *v, int n, int nb, int vt) {
    if (vt) {
        for (int e = 0; e < n * KL; e += VW) st(v + e, vtanhf(ld(v + e)));
        return;
    }
    for (int k = 0; k < n; k++)
        for (int l = 0; l < KL; l++) v[k * KL + l] = l < nb ? tanhf(v[k * KL + l]) : 0.0f;
}

/* One chunk's forward step t (rnn.c's loop body, lane by lane): the commits of x_t (X) and h(t-1),
 * the gate sums, the cell, into the lane planes at t. */
static void fwd_step(const kgru *w, float thx, float thh, int nb, int vt, int ve, int t, const float *X, dsoa s, float *tmp) {
    int I = w->I, H = w->H, G = 3 * H;
    size_t oh = (size_t)t * H * KL, ox = (size_t)t * I * KL;
    float *ai = tmp, *ah = ai + G * KL, *e = ah + G * KL, *u = e + 2 * H * KL, *z0 = u + H * KL;
    const float *hprev = t ? s.h + oh - H * KL : z0; /* h(-1), x_p(-1) and h_p(-1) are 0 */
    commit(s.xp + ox, s.mx + ox, X + ox, t ? s.xp + ox - I * KL : z0, I, thx);
    commit(s.hp + oh, s.mh + oh, hprev, t ? s.hp + oh - H * KL : z0, H, thh);
    gemv(ai, w->wih, w->bih, G, I, s.xp + ox);
    gemv(ah, w->whh, w->bhh, G, H, t ? s.hp + oh : NULL); /* h_p is 0 at t = 0: the biases alone */
    for (int k = 0; k < 2 * H * KL; k += VW) st(e + k, -(ld(ai + k) + ld(ah + k)));
    map_expf(e, 2 * H, nb, ve);
    for (int k = 0; k < H * KL; k += VW) {
        vf r = 1.0f / (1.0f + ld(e + k)), g = ld(ah + 2 * H * KL + k);
        st(s.r + oh + k, r), st(s.g + oh + k, g);
        st(s.z + oh + k, 1.0f / (1.0f + ld(e + H * KL + k)));
        st(u + k, ld(ai + 2 * H * KL + k) + r * g);
    }
    map_tanhf(u, H, nb, vt);
    for (int k = 0; k < H * KL; k += VW) {
        vf z = ld(s.z + oh + k), n = ld(u + k);
        st(s.n + oh + k, n);
        st(s.h + oh + k, (1.0f - z) * n + z * ld(hprev + k));
    }
}

static void forward(const kgru *w, float thx, float thh, int B, int T, const float *x, float *sv, float *tmp) {
    int I = w->I, H = w->H, G = 3 * H, vt = vtanhf_matches(), ve = vexpf_matches();
    size_t bt = (size_t)B * T;
    tmp = kalign(tmp);
    float *X = tmp, *st_tmp = X + (size_t)T * I * KL, *z0 = st_tmp + (2 * (size_t)G + 3 * (size_t)H) * KL;
    memset(z0, 0, (size_t)(I > H ? I : H) * KL * sizeof *z0);
    for (int c = 0; c < nchunks(B); c++) {
        int b0 = c * KL, nb = B - b0 < KL ? B - b0 : KL;
        dsoa s = soa_at(sv, I, H, B, T, c);
        to_lanes(X, x + (size_t)b0 * T * I, nb, (size_t)T * I, (size_t)T * I);
        for (int t = 0; t < T; t++) fwd_step(w, thx, thh, nb, vt, ve, t, X, s, st_tmp);
        from_lanes(sv + (size_t)b0 * T * H, (size_t)T * H, s.h, nb, (size_t)T * H, 0);
        from_lanes(sv + bt * H + (size_t)b0 * T * I, (size_t)T * I, s.xp, nb, (size_t)T * I, 0);
        from_lanes(sv + bt * (H + I) + (size_t)b0 * T * H, (size_t)T * H, s.hp, nb, (size_t)T * H, 0);
    }
}

/* The backward scratch (tmp_size's list). */
typedef struct dbuf {
    float *DH, *DX, *LA, *LH, *da, *dah, *dhn, *ch, *dhp, *cx, *z0, *acc;
} dbuf;

static dbuf bwd_bufs(float *tmp, int I, int H, int T) {
    size_t h = (size_t)H * KL, g = (size_t)gpad(H) * KL;
    dbuf d;
    d.DH = tmp, d.DX = d.DH + (size_t)T * h, d.LA = d.DX + (size_t)T * I * KL, d.LH = d.LA + (size_t)T * g;
    d.da = d.LH + (size_t)T * g, d.dah = d.da + g, d.dhn = d.dah + g, d.ch = d.dhn + h, d.dhp = d.ch + h;
    d.z0 = d.dhp + h, d.cx = d.z0 + h, d.acc = d.cx + (size_t)I * KL;
    return d;
}

/* One chunk's backward step t (rnn.c's delta_step, lane by lane): the gate gradients of step t
 * (da, dah, and lane-major at t in LA, LH), dx at t into DX, and the carries dhn, cx, ch to step
 * t - 1. */
static void bwd_step(const kgru *w, int nb, int T, int t, dsoa s, dbuf d, int Gp) {
    int I = w->I, H = w->H, G = 3 * H;
    size_t oh = (size_t)t * H * KL, ox = (size_t)t * I * KL;
    const float *hprev = t ? s.h + oh - H * KL : d.z0;
    float *da = d.da, *dah = d.dah, *dxp = d.DX + ox;
    for (int k = 0; k < H * KL; k += VW) {
        vf dd = ld(d.DH + oh + k) + ld(d.dhn + k), r = ld(s.r + oh + k), z = ld(s.z + oh + k), n = ld(s.n + oh + k);
        vf dan = dd * (1.0f - z) * (1.0f - n * n), daz = dd * (ld(hprev + k) - n) * z * (1.0f - z);
        vf dar = dan * ld(s.g + oh + k) * r * (1.0f - r);
        st(da + k, dar), st(da + H * KL + k, daz), st(da + 2 * H * KL + k, dan);
        st(dah + k, dar), st(dah + H * KL + k, daz), st(dah + 2 * H * KL + k, dan * r);
        st(d.dhn + k, dd * z);
    }
    from_lanes(d.LA + (size_t)t * Gp, (size_t)T * Gp, da, nb, (size_t)Gp, 0);
    from_lanes(d.LH + (size_t)t * Gp, (size_t)T * Gp, dah, nb, (size_t)Gp, 0);
    memcpy(dxp, d.cx, (size_t)I * KL * sizeof *dxp);
    gemv_t(dxp, w->wih, G, I, da);
    memcpy(d.dhp, d.ch, (size_t)H * KL * sizeof *d.dhp);
    if (t) gemv_t(d.dhp, w->whh, G, H, dah);
    for (int k = 0; k < I * KL; k += VW) {
        vf m = ld(s.mx + ox + k), v = ld(dxp + k);
        st(dxp + k, m * v);
        st(d.cx + k, (1.0f - m) * v);
    }
    if (!t) return; /* at t = 0 h_p is the constant 0: nothing flows to h(-1) */
    for (int k = 0; k < H * KL; k += VW) {
        vf m = ld(s.mh + oh + k), v = ld(d.dhp + k);
        st(d.dhn + k, ld(d.dhn + k) + m * v);
        st(d.ch + k, (1.0f - m) * v);
    }
}

/* acc (C, Gp) += d_s (x) x_s for the ns samples s in order, d_s at d + s sd (Gp floats), column c
 * of x_s at x + s sx + c cs, for the gate rows o0..o0 + nq VW and the columns c0..c0 + 4 (those
 * past C repeat column c0 and are not stored). nq is a compile-time constant at every call site. */
static inline __attribute__((always_inline)) void fold_tile(float *acc, int Gp, int C, int ns, const float *d,
                                                           ptrdiff_t sd, const float *x, ptrdiff_t sx, ptrdiff_t cs,
                                                           int o0, int c0, const int nq) {
    int ni = C - c0 < 4 ? C - c0 : 4;
    ptrdiff_t col[4];
    vf a[4][4];
    for (int l = 0; l < 4; l++) col[l] = (l < ni ? c0 + l : c0) * cs;
    for (int k = 0; k < nq; k++)
        for (int l = 0; l < 4; l++) a[k][l] = ld(acc + (size_t)(l < ni ? c0 + l : c0) * Gp + o0 + k * VW);
    for (int s = 0; s < ns; s++) {
        const float *ds = d + s * sd + o0, *xs = x + s * sx;
        for (int k = 0; k < nq; k++) {
            vf dv = ld(ds + k * VW);
            for (int l = 0; l < 4; l++) a[k][l] += dv * xs[col[l]];
        }
    }
    for (int k = 0; k < nq; k++)
        for (int l = 0; l < ni; l++) st(acc + (size_t)(c0 + l) * Gp + o0 + k * VW, a[k][l]);
}

static void fold(float *acc, int Gp, int C, int ns, const float *d, ptrdiff_t sd, const float *x, ptrdiff_t sx,
                 ptrdiff_t cs) {
    for (int o0 = 0; o0 < Gp; o0 += 4 * VW)
        for (int c0 = 0; c0 < C; c0 += 4) switch ((Gp - o0) / VW) {
            case 1: fold_tile(acc, Gp, C, ns, d, sd, x, sx, cs, o0, c0, 1); break;
            case 2: fold_tile(acc, Gp, C, ns, d, sd, x, sx, cs, o0, c0, 2); break;
            case 3: fold_tile(acc, Gp, C, ns, d, sd, x, sx, cs, o0, c0, 3); break;
            default: fold_tile(acc, Gp, C, ns, d, sd, x, sx, cs, o0, c0, 4); break;
            }
}

/* acc (Gp) += d_s for the ns samples in order (a bias gradient) */
static void fold_bias(float *acc, int Gp, int ns, const float *d, ptrdiff_t sd) {
    for (int o = 0; o < Gp; o += VW) {
        vf a = ld(acc + o);
        for (int s = 0; s < ns; s++) a += ld(d + s * sd + o);
        st(acc + o, a);
    }
}

/* The accumulators: W_ih^T (I, Gp), W_hh^T (H, Gp), b_ih (Gp), b_hh (Gp). */
typedef struct dacc {
    float *wih, *whh, *bih, *bhh;
} dacc;

static dacc acc_at(float *p, int I, int H, int Gp) {
    dacc a = {p, p + (size_t)I * Gp, p + ((size_t)I + H) * Gp, p + ((size_t)I + H + 1) * Gp};
    return a;
}

/* The weight gradients of a chunk's nb sequences in the reference's order: each sequence t
 * descending, in runs of TG samples; the input side at every t, the hidden weights at t > 0 (h_p(0)
 * is the constant 0), the hidden bias at every t. LA, LH (nb, T, Gp): the lane-major gate
 * gradients; xp (nb, T, I), hp (nb, T, H): the chunk's saved commits. */
static void fold_chunk(const kgru *w, dacc a, const float *LA, const float *LH, const float *xp, const float *hp,
                       int nb, int T, int Gp) {
    int I = w->I, H = w->H;
    for (int l = 0; l < nb; l++)
        for (int t1 = T - 1; t1 >= 0; t1 -= TG) { /* samples t1 down to t1 - ns + 1 */
            int ns = t1 + 1 < TG ? t1 + 1 : TG, nh = t1 + 1 - ns ? ns : ns - 1; /* no W_hh term at t = 0 */
            size_t o = (size_t)l * T + t1;
            const float *da = LA + o * Gp, *dah = LH + o * Gp;
            fold(a.wih, Gp, I, ns, da, -Gp, xp + o * I, -I, 1);
            fold(a.whh, Gp, H, nh, dah, -Gp, hp + o * H, -H, 1);
            if (w->gbih) fold_bias(a.bih, Gp, ns, da, -Gp);
            if (w->gbhh) fold_bias(a.bhh, Gp, ns, dah, -Gp);
        }
}

/* dst (cols, Gp) = src (G, cols)^T, the rows past G zero; and back */
static void to_acc(float *dst, const float *src, int G, int cols, int Gp) {
    for (int c = 0; c < cols; c++)
        for (int q = 0; q < Gp; q++) dst[(size_t)c * Gp + q] = q < G ? src[(size_t)q * cols + c] : 0.0f;
}
static void from_acc(float *dst, const float *src, int G, int cols, int Gp) {
    for (int q = 0; q < G; q++)
        for (int c = 0; c < cols; c++) dst[(size_t)q * cols + c] = src[(size_t)c * Gp + q];
}

static void backward(const kgru *w, int B, int T, const float *sv, const float *dh, float *dx, float *tmp) {
    int I = w->I, H = w->H, G = 3 * H, Gp = gpad(H);
    size_t bt = (size_t)B * T;
    dbuf d = bwd_bufs(kalign(tmp), I, H, T);
    dacc a = acc_at(d.acc, I, H, Gp);
    to_acc(a.wih, w->gwih, G, I, Gp);
    to_acc(a.whh, w->gwhh, G, H, Gp);
    if (w->gbih) to_acc(a.bih, w->gbih, G, 1, Gp);
    if (w->gbhh) to_acc(a.bhh, w->gbhh, G, 1, Gp);
    memset(d.z0, 0, (size_t)H * KL * sizeof *d.z0);
    memset(d.da, 0, 2 * (size_t)Gp * KL * sizeof *d.da); /* da, dah: the padding rows G..Gp stay 0 */
    for (int c = 0; c < nchunks(B); c++) {
        int b0 = c * KL, nb = B - b0 < KL ? B - b0 : KL;
        dsoa s = soa_at(sv, I, H, B, T, c);
        to_lanes(d.DH, dh + (size_t)b0 * T * H, nb, (size_t)T * H, (size_t)T * H);
        memset(d.dhn, 0, (size_t)H * KL * sizeof *d.dhn);
        memset(d.ch, 0, (size_t)H * KL * sizeof *d.ch);
        memset(d.cx, 0, (size_t)I * KL * sizeof *d.cx);
        for (int t = T - 1; t >= 0; t--) bwd_step(w, nb, T, t, s, d, Gp);
        if (dx) from_lanes(dx + (size_t)b0 * T * I, (size_t)T * I, d.DX, nb, (size_t)T * I, 0);
        fold_chunk(w, a, d.LA, d.LH, sv + bt * H + (size_t)b0 * T * I, sv + bt * (H + I) + (size_t)b0 * T * H, nb, T,
                   Gp);
    }
    from_acc(w->gwih, a.wih, G, I, Gp);
    from_acc(w->gwhh, a.whh, G, H, Gp);
    if (w->gbih) from_acc(w->gbih, a.bih, G, 1, Gp);
    if (w->gbhh) from_acc(w->gbhh, a.bhh, G, 1, Gp);
}

const kdelta K(kdelta) = {saved, tmp_size, forward, backward};
