/* poly: complex-coefficient memory polynomials, the classical baselines (fitted by least squares
 * in src/ls.c, or trained by gradient descent like any family).
 *   mp:      y[n] = sum_{k<K, q<Q} c_kq x[n-q] |x[n-q]|^k
 *   gmp_ls:  mp + sum_{1<=k<K, q<Q, 1<=m<=M} (b_kqm x[n-q] |x[n-q-m]|^k + d_kqm x[n-q] |x[n-q+m]|^k)
 * (lagging and leading envelope cross terms). Samples outside the sequence are zero. The
 * coefficients are one tensor backbone.coef (P, 2) = (re, im). Compiled twice (see family.h).
 * Legend: B batch, T time, P terms. */
#include "../family.h"
#include "nn.h"
#include "poly.h"

#ifndef DPD_F64 /* precision-independent: defined once */
int dpd_poly_terms(const dpd_model_cfg *c, dpd_term *t) {
    int n = 0, K = c->order, Q = c->memory, M = !strcmp(c->family, "gmp_ls") ? c->cross : 0;
    for (int k = 0; k < K; k++)
        for (int q = 0; q < Q; q++) {
            if (t) t[n] = (dpd_term){k, q, 0};
            n++;
        }
    for (int k = 1; k < K; k++)
        for (int q = 0; q < Q; q++)
            for (int m = -M; m <= M; m++) {
                if (!m) continue;
                if (t) t[n] = (dpd_term){k, q, m};
                n++;
            }
    return n;
}
#endif

static inline int layout(const dpd_model_cfg *c, dpd_tensor *t) {
    int n = 0;
    size_t off = 0;
    dpd_tensor_add(t, &n, &off, "backbone.coef", dpd_poly_terms(c, NULL), 2, 0, 0);
    return n;
}

/* Sample u of sequence xb (T, 2), zero outside [0, T). */
static int inside(int u, int T) { return u >= 0 && u < T; }

static void FN(fwd)(const kern_ops *kt, const dpd_model_cfg *c, const real *p, const real *x, int B, int T, real *y,
                    real *ws) {
    int P = dpd_poly_terms(c, NULL);
    dpd_term *tm = (dpd_term *)ws; /* the term table, then |x| (B, T) */
    dpd_poly_terms(c, tm);
    real *r = ws + (sizeof(dpd_term) * (size_t)P + sizeof(real) - 1) / sizeof(real);
    for (size_t i = 0; i < (size_t)B * T; i++) r[i] = amp(x[2 * i], x[2 * i + 1]);
    for (int b = 0; b < B; b++)
        for (int s = 0; s < T; s++) {
            real yr = 0, yi = 0;
            for (int k = 0; k < P; k++) {
                int a = s - tm[k].q, e = a - tm[k].m;
                if (!inside(a, T) || !inside(e, T)) continue;
                const real *xa = x + ((size_t)b * T + a) * 2;
                real env = 1, re = r[(size_t)b * T + e];
                for (int j = 0; j < tm[k].k; j++) env *= re;
                real pr = xa[0] * env, pi = xa[1] * env, cr = p[2 * k], ci = p[2 * k + 1];
                yr += cr * pr - ci * pi;
                yi += cr * pi + ci * pr;
            }
            y[((size_t)b * T + s) * 2] = yr, y[((size_t)b * T + s) * 2 + 1] = yi;
        }
}

static void FN(bwd)(const kern_ops *kt, const dpd_model_cfg *c, const real *p, const real *x, const real *dy, int B,
                    int T, const real *ws, real *scratch, real *dp, real *dx) {
    int P = dpd_poly_terms(c, NULL);
    const dpd_term *tm = (const dpd_term *)ws;
    const real *r = ws + (sizeof(dpd_term) * (size_t)P + sizeof(real) - 1) / sizeof(real);
    memset(dp, 0, 2 * (size_t)P * sizeof *dp);
    if (dx) memset(dx, 0, (size_t)B * T * 2 * sizeof *dx);
    for (int b = 0; b < B; b++)
        for (int s = 0; s < T; s++) {
            real gr = dy[((size_t)b * T + s) * 2], gi = dy[((size_t)b * T + s) * 2 + 1];
            for (int k = 0; k < P; k++) {
                int a = s - tm[k].q, e = a - tm[k].m, K = tm[k].k;
                if (!inside(a, T) || !inside(e, T)) continue;
                size_t ia = (size_t)b * T + a, ie = (size_t)b * T + e;
                const real *xa = x + ia * 2;
                real re = r[ie], env = 1, envd = 0; /* |x_e|^K and K |x_e|^(K-1) */
                for (int j = 0; j < K; j++) envd = envd * re + env, env *= re;
                real pr = xa[0] * env, pi = xa[1] * env, cr = p[2 * k], ci = p[2 * k + 1];
                dp[2 * k] += gr * pr + gi * pi;
                dp[2 * k + 1] += -gr * pi + gi * pr;
                if (!dx) continue;
                real dpr = gr * cr + gi * ci, dpi = -gr * ci + gi * cr; /* gradient at the term */
                dx[ia * 2] += dpr * env, dx[ia * 2 + 1] += dpi * env;
                if (K && re > 0) {
                    real denv = (dpr * xa[0] + dpi * xa[1]) * envd / re;
                    dx[ie * 2] += denv * x[ie * 2], dx[ie * 2 + 1] += denv * x[ie * 2 + 1];
                }
            }
        }
}

#ifdef DPD_F64
const dpd_k64 dpd_k64_poly = {fwd_f64, bwd_f64};
#else
static size_t ws_size(const kern_ops *kt, const dpd_model_cfg *c, int B, int T) {
    return (sizeof(dpd_term) * (size_t)dpd_poly_terms(c, NULL) + 3) / 4 + (size_t)B * T * 2;
}
static size_t scratch_size(const kern_ops *kt, const dpd_model_cfg *c, int B, int T) { return 1; }

/* The identity: c_00 = 1, every other coefficient 0. */
static void init(const dpd_model_cfg *c, const dpd_tensor *t, float *p, dpd_rng *rng) {
    memset(p, 0, t[0].numel * sizeof *p);
    p[0] = 1;
}

/* The cross terms' reach M: gmp_ls's from K = 2 (dpd_poly_terms); mp has none. */
static int cross(const dpd_model_cfg *c) { return !strcmp(c->family, "gmp_ls") && c->order > 1 ? c->cross : 0; }
/* gmp_ls's leading envelope terms x(n-q)|x(n-q+m)|^k reach M samples ahead; mp is causal. */
static int ahead(const dpd_model_cfg *c) { return cross(c); }
/* x(n-q) for q < Q, and gmp_ls's lagging terms |x(n-q-m)|, m <= M. */
static int behind(const dpd_model_cfg *c) { return c->memory - 1 + cross(c); }

const dpd_family dpd_family_mp = {
    .name = "mp", .tag = "MP", .params = "2KQ (complex coefficients)",
    .about = "memory polynomial, fitted by least squares (fit-ls)", .hidden = 1, .max_layers = 1, .poly = 1,
    .layout = layout, .init = init, .ws_size = ws_size, .scratch_size = scratch_size,
    .forward = fwd_f32, .backward = bwd_f32, .behind = behind};
const dpd_family dpd_family_gmp_ls = {
    .name = "gmp_ls", .tag = "GMP_LS", .params = "2KQ + 4(K-1)QM (complex coefficients)",
    .about = "generalized memory polynomial, fitted by least squares (fit-ls)", .hidden = 1,
    .max_layers = 1, .poly = 1, .layout = layout, .init = init, .ws_size = ws_size,
    .scratch_size = scratch_size, .forward = fwd_f32, .backward = bwd_f32, .ahead = ahead, .behind = behind};
#endif
