/* gmp: the exact fast path of the GMP family (src/models/gmp.c: its reference and the model's
 * equations: 495 real weights over 11 linear terms x[s-q] and 4 x 11 x 11 cross terms
 * x[s-q] A[s-q-r]^k). Every output and every gradient gets the reference's float operations in the
 * reference's order, so the results are bitwise its own (this file is compiled per ISA with
 * -ffp-contract=off: no fused multiply-adds). The reference rebuilds each term of each sample on
 * the fly; here the basis is built once per sequence and the terms become vector loads at fixed
 * offsets:
 * - forward saves per sequence the planes xr, xi and the envelope powers E_k = A^k (k = 1..4, by
 *   the reference's repeated product 1 * A * A ...), zero-padded on both sides; an output block
 *   of VW time steps (the lanes) then sums its 495 terms in index order in two registers;
 * - dp: the lanes are the 11 lags m of one (k, l) row of weights, and each lane's sum runs over
 *   (b, s) in the reference's order in a register; c(s, m) = gr x_r + gi x_i, the same expression
 *   the reference evaluates for every term, is built once per (s, m);
 * - dx: the lanes are input samples t. Sample t receives from output s = t + d (d = 0..20, in
 *   order) per (k, l) row at most a part through x[s-q] (m = 10 - d) and then one through the
 *   envelope (m + l = 20 - d), the reference's per-sample order;
 * - what the reference skips (a sample before the start, an output past the end, the envelope
 *   gradient at A = 0) is skipped lane by lane with a select in the blocks where it can happen,
 *   so no zero product is ever added; the other blocks run without masks;
 * - the reference's multiplication by env = 1 in the linear terms is left out: x * 1 is x exactly.
 * Legend: B batch, T time, L padded plane length (time step t at LP + t), m/l/k the weight index
 * (index 11 + (k 11 + l) 11 + m, q = 10 - m, r = 10 - l), MW lanes across the 11 lags. */
#include "../models/nn.h"
#include "simd.h"

#define MM 11                /* memory: lags 0..10 */
#define KK 4                 /* envelope powers 1..4 */
#define LAG (2 * (MM - 1))   /* the longest lag q + r */
#define LP 32                /* zero samples before a plane's first step (> LAG) */
#define RP 32                /* and after its last vector (> LAG) */
#define MV ((MM + VW - 1) / VW) /* vectors across the lags m */
#define MW (MV * VW)
#define LG (12 / MV < MM ? 12 / MV : MM) /* dp rows kept in registers at once */
#define NLP ((MM + LG - 1) / LG * LG)    /* dp rows per power, padded to whole groups */
#define AI inline __attribute__((always_inline))

static size_t plane(int T) { return LP + (size_t)(T + VW - 1) / VW * VW + RP; }
static int widx(int k, int l, int m) { return MM + (k * MM + l) * MM + m; }

/* ws: per sequence the planes (6, L): xr, xi, E_1..E_4. */
static size_t ws_size(const dpd_model_cfg *c, int B, int T) { return (size_t)B * 6 * plane(T); }

/* scratch: gr, gi (2, L); c(s, m) as planes (MM, L) for dx and as rows (T, MW) for dp; the dp
 * sums: the linear row and KK x NLP cross rows of MW lanes. */
static size_t scratch_size(const dpd_model_cfg *c, int B, int T) {
    return (2 + MM) * plane(T) + (size_t)T * MW + (1 + KK * NLP) * MW;
}

static AI vi iota(void) {
    static const int32_t i[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    vi v;
    memcpy(&v, i, sizeof v);
    return v;
}

/* acc + t where the reference adds the term; edge: only in the lanes of ok, the others skip it */
static AI vf add(vf acc, vf t, vi ok, int edge) { return edge ? sel(ok, acc + t, acc) : acc + t; }

/* y[2j], y[2j + 1] = a[j], b[j] for j < n */
static void store2(float *y, vf a, vf b, int n) {
    float ta[VW], tb[VW];
    st(ta, a), st(tb, b);
    for (int j = 0; j < n; j++) y[2 * j] = ta[j], y[2 * j + 1] = tb[j];
}

/* A sequence's planes X (6, L) from its x (T, 2); zero outside [0, T). */
static void planes(float *X, const float *x, int T, size_t L) {
    memset(X, 0, 6 * L * sizeof *X);
    float *xr = X + LP, *xi = xr + L, *E = xi + L;
    for (int t = 0; t < T; t++) xr[t] = x[2 * t], xi[t] = x[2 * t + 1], E[t] = amp(x[2 * t], x[2 * t + 1]);
    for (int t = 0; t < T; t += VW) {
        vf r = ld(E + t), e = (vf){} + 1.0f;
        for (int k = 0; k < KK; k++) e = e * r, st(E + k * L + t, e);
    }
}

/* Outputs s0 .. s0 + VW - 1 of one sequence: the 495 terms in index order. edge (s0 < LAG): a
 * term is skipped in the lanes whose x[s-q] or envelope sample lies before the start. */
static AI void fwd_block(const float *p, const float *X, size_t L, int s0, int edge, vf *yr, vf *yi) {
    const float *xr = X + LP + s0 - (MM - 1), *xi = xr + L, *E = X + LP + s0 + 2 * L - LAG;
    vi io = iota();
    vf ar = {}, ai = {};
    for (int m = 0; m < MM; m++) {
        vi ok = io >= MM - 1 - m - s0;
        ar = add(ar, p[m] * ld(xr + m), ok, edge), ai = add(ai, p[m] * ld(xi + m), ok, edge);
    }
    for (int k = 0; k < KK; k++)
        for (int l = 0; l < MM; l++)
            for (int m = 0; m < MM; m++) {
                float w = p[widx(k, l, m)];
                vf env = ld(E + k * L + l + m);
                vi ok = io >= LAG - l - m - s0;
                ar = add(ar, w * ld(xr + m) * env, ok, edge), ai = add(ai, w * ld(xi + m) * env, ok, edge);
            }
    *yr = ar, *yi = ai;
}

static void fwd(const dpd_model_cfg *c, const float *p, const float *x, int B, int T, float *y, float *ws) {
    size_t L = plane(T);
    for (int b = 0; b < B; b++) {
        float *X = ws + (size_t)b * 6 * L, *yb = y + (size_t)b * T * 2;
        planes(X, x + (size_t)b * T * 2, T, L);
        for (int s0 = 0; s0 < T; s0 += VW) {
            vf yr, yi;
            if (s0 < LAG) fwd_block(p, X, L, s0, 1, &yr, &yi);
            else fwd_block(p, X, L, s0, 0, &yr, &yi);
            store2(yb + 2 * s0, yr, yi, T - s0 < VW ? T - s0 : VW);
        }
    }
}

/* The output gradient planes G (2, L) of one sequence from dy (T, 2), zero outside [0, T), and
 * the rows Cs (T, MW): c(s, m) = gr[s] xr[s-q] + gi[s] xi[s-q] (q = 10 - m; lanes m >= 11 unused). */
static void grad_rows(float *G, float *Cs, const float *X, const float *dy, int T, size_t L) {
    memset(G, 0, 2 * L * sizeof *G);
    float *gr = G + LP, *gi = gr + L;
    for (int s = 0; s < T; s++) gr[s] = dy[2 * s], gi[s] = dy[2 * s + 1];
    const float *xr = X + LP - (MM - 1), *xi = xr + L;
    for (int s = 0; s < T; s++)
        for (int v = 0; v < MV; v++)
            st(Cs + (size_t)s * MW + v * VW, gr[s] * ld(xr + s + v * VW) + gi[s] * ld(xi + s + v * VW));
}

/* dp's linear row (lanes m) += c(s, m) for s in [s0, s1), in order; edge: skipped where s - q < 0. */
static AI void dp_lin(float *acc, const float *Cs, int s0, int s1, int edge) {
    vi io = iota();
    for (int v = 0; v < MV; v++) {
        vf a = ld(acc + v * VW);
        for (int s = s0; s < s1; s++) a = add(a, ld(Cs + (size_t)s * MW + v * VW), io + v * VW >= MM - 1 - s, edge);
        st(acc + v * VW, a);
    }
}

/* dp's rows l0 .. l0 + LG - 1 of one power (acc (LG, MW), lanes m) += c(s, m) E_k[s - 20 + l + m]
 * for s in [s0, s1), in order; edge: skipped where the envelope sample lies before the start. */
static AI void dp_rows(float *acc, const float *Cs, const float *Ek, int l0, int s0, int s1, int edge) {
    vi io = iota();
    vf a[LG][MV];
    for (int j = 0; j < LG; j++)
        for (int v = 0; v < MV; v++) a[j][v] = ld(acc + j * MW + v * VW);
    for (int s = s0; s < s1; s++)
        for (int v = 0; v < MV; v++) {
            vf cv = ld(Cs + (size_t)s * MW + v * VW);
            const float *e = Ek + s - LAG + l0 + v * VW;
            for (int j = 0; j < LG; j++) a[j][v] = add(a[j][v], cv * ld(e + j), io + v * VW >= LAG - s - l0 - j, edge);
        }
    for (int j = 0; j < LG; j++)
        for (int v = 0; v < MV; v++) st(acc + j * MW + v * VW, a[j][v]);
}

/* One sequence's share of dp, into acc (1 + KK NLP, MW): every row in sample order. */
static void dp_seq(float *acc, const float *Cs, const float *X, int T, size_t L) {
    int se = T < LAG ? T : LAG;
    dp_lin(acc, Cs, 0, se, 1), dp_lin(acc, Cs, se, T, 0);
    for (int k = 0; k < KK; k++)
        for (int l0 = 0; l0 < MM; l0 += LG) {
            float *a = acc + (1 + (size_t)k * NLP + l0) * MW;
            const float *Ek = X + LP + (2 + k) * L;
            dp_rows(a, Cs, Ek, l0, 0, se, 1), dp_rows(a, Cs, Ek, l0, se, T, 0);
        }
}

/* dx at samples t0 .. t0 + VW - 1 of one sequence: for s = t + d in order, per weight row (k, l)
 * the part through x[s-q] (m = 10 - d: (gr w) env) then the one through the envelope
 * (m = 20 - d - l: ((w c) envd) / A times x). edge: skipped lane by lane where s >= T, where the
 * term's envelope sample lies before the start, and (the envelope part) where A = 0. */
static AI void dx_block(const float *p, const float *X, const float *G, const float *Cm, size_t L, int t0, int T,
                        int edge, vf *dr, vf *di) {
    const float *xr = X + LP + t0, *E = xr + 2 * L, *gr = G + LP + t0, *gi = gr + L, *C = Cm + LP + t0;
    vi io = iota();
    vf r = ld(E), vr = ld(xr), vq = ld(xr + L), e = (vf){} + 1.0f, dd = {}, D[KK];
    for (int k = 0; k < KK; k++) dd = dd * r + e, e = e * r, D[k] = dd; /* the reference's envd */
    vi pos = r > 0.0f;
    vf ar = {}, ai = {};
    for (int d = 0; d <= LAG; d++) {
        vi sv = io < T - t0 - d;
        vf g_r = ld(gr + d), g_i = ld(gi + d);
        if (d < MM) {
            float w = p[MM - 1 - d];
            ar = add(ar, g_r * w, sv, edge), ai = add(ai, g_i * w, sv, edge);
        }
        for (int k = 0; k < KK; k++)
            for (int l = 0; l < MM; l++) {
                if (d < MM) {
                    float w = p[widx(k, l, MM - 1 - d)];
                    vf env = ld(E + k * L + l - (MM - 1));
                    vi ok = sv & (io >= MM - 1 - l - t0);
                    ar = add(ar, g_r * w * env, ok, edge), ai = add(ai, g_i * w * env, ok, edge);
                }
                int m = LAG - d - l;
                if (m < 0 || m >= MM) continue;
                vf den = p[widx(k, l, m)] * ld(C + m * L + d) * D[k] / r;
                ar = add(ar, den * vr, sv & pos, edge), ai = add(ai, den * vq, sv & pos, edge);
            }
    }
    *dr = ar, *di = ai;
}

/* Whether block t0 (n steps) needs the masks: near either end, or a sample with A = 0 (or NaN). */
static int dx_edge(const float *A, int t0, int n, int T) {
    if (t0 < MM - 1 || t0 + VW - 1 + LAG >= T) return 1;
    for (int j = 0; j < n; j++)
        if (!(A[t0 + j] > 0)) return 1;
    return 0;
}

/* One sequence's dx (T, 2), every sample written; Cm (MM, L) receives c(s, m) along s. */
static void dx_seq(float *dx, const float *p, const float *X, const float *G, float *Cm, int T, size_t L) {
    const float *xr = X + LP, *xi = xr + L, *gr = G + LP, *gi = gr + L;
    for (int m = 0; m < MM; m++)
        for (size_t s = 0; s < L - LP; s += VW)
            st(Cm + m * L + LP + s, ld(gr + s) * ld(xr + s + m - (MM - 1)) + ld(gi + s) * ld(xi + s + m - (MM - 1)));
    for (int t0 = 0; t0 < T; t0 += VW) {
        int n = T - t0 < VW ? T - t0 : VW;
        vf ar, ai;
        if (dx_edge(X + LP + 2 * L, t0, n, T)) dx_block(p, X, G, Cm, L, t0, T, 1, &ar, &ai);
        else dx_block(p, X, G, Cm, L, t0, T, 0, &ar, &ai);
        store2(dx + 2 * t0, ar, ai, n);
    }
}

static void bwd(const dpd_model_cfg *c, const float *p, const float *x, const float *dy, int B, int T, const float *ws,
                float *sc, float *dp, float *dx) {
    size_t L = plane(T);
    float *G = sc, *Cm = G + 2 * L, *Cs = Cm + MM * L, *acc = Cs + (size_t)T * MW;
    memset(acc, 0, (1 + KK * NLP) * MW * sizeof *acc);
    for (int b = 0; b < B; b++) {
        const float *X = ws + (size_t)b * 6 * L;
        grad_rows(G, Cs, X, dy + (size_t)b * T * 2, T, L);
        dp_seq(acc, Cs, X, T, L);
        if (dx) dx_seq(dx + (size_t)b * T * 2, p, X, G, Cm, T, L);
    }
    for (int m = 0; m < MM; m++) dp[m] = acc[m];
    for (int k = 0; k < KK; k++)
        for (int l = 0; l < MM; l++)
            for (int m = 0; m < MM; m++) dp[widx(k, l, m)] = acc[(1 + (size_t)k * NLP + l) * MW + m];
}

const kfam K(kfam_gmp) = {ws_size, scratch_size, fwd, bwd};
