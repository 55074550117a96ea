/* gmp: OpenDPD's `gmp` backbone (reference §3.6), real weights trained by gradient descent:
 * memory M = 11, envelope degrees k = 1..4. y = sum_i w_i term_i (complex terms, real weights),
 * terms: 11 linear x[n-q], then for k = 1..4, l = 0..10, m = 0..10 (fastest) the cross term
 * x[n-q] |x[n-q-r]|^k with q = 10 - m, r = 10 - l; the linear block is ordered the same way
 * (index m <-> q = 10 - m). Samples before the start of the sequence are zero. (The complex
 * least-squares baselines are `mp` and `gmp_ls`.) Compiled twice (see family.h). */
#include "../family.h"
#include "../init.h"
#include "../kern/kern.h"
#include "nn.h"

#define MM 11
#define KK 4
#define NW (MM + KK * MM * MM) /* 495 */

static inline int layout(const dpd_model_cfg *c, dpd_tensor *t) {
    int n = 0;
    size_t off = 0;
    dpd_tensor_add(t, &n, &off, "backbone.Weight", 1, NW, 0, 0);
    return n;
}

/* Workspace: the amplitude of every sample (B, T); no scratch. With fast kernels, their exact path
 * (src/kern/gmp.c) runs and says the sizes. */
static inline size_t ws_size(const kern_ops *kt, const dpd_model_cfg *c, int B, int T) {
    const kfam *e = KERN_EXACT(kt, gmp);
    return e ? e->ws_size(c, B, T) : (size_t)B * T;
}
static inline size_t scratch_size(const kern_ops *kt, const dpd_model_cfg *c, int B, int T) {
    const kfam *e = KERN_EXACT(kt, gmp);
    return e ? e->scratch_size(c, B, T) : 1;
}

/* Term i at time s: the sample index a of x[n-q], the envelope sample e and the power k (0 for
 * the linear terms). */
static void term(int i, int s, int *a, int *e, int *k) {
    if (i < MM) {
        *a = s - (MM - 1 - i), *e = *a, *k = 0;
        return;
    }
    int j = i - MM, kk = j / (MM * MM), l = j / MM % MM, m = j % MM;
    *a = s - (MM - 1 - m), *e = *a - (MM - 1 - l), *k = kk + 1;
}

static void FN(fwd)(const kern_ops *kt, const dpd_model_cfg *c, const real *p, const real *x, int B, int T, real *y, real *ws) {
#ifndef DPD_F64
    if (KERN_EXACT(kt, gmp)) {
        kt->gmp->forward(c, p, x, B, T, y, ws);
        return;
    }
#endif
    for (size_t i = 0; i < (size_t)B * T; i++) ws[i] = amp(x[2 * i], x[2 * i + 1]);
    for (int b = 0; b < B; b++)
        for (int s = 0; s < T; s++) {
            real yr = 0, yi = 0;
            for (int i = 0; i < NW; i++) {
                int a, e, k;
                term(i, s, &a, &e, &k);
                if (a < 0 || e < 0) continue;
                real env = 1, r = ws[(size_t)b * T + e];
                for (int j = 0; j < k; j++) env *= r;
                yr += p[i] * x[((size_t)b * T + a) * 2] * env;
                yi += p[i] * x[((size_t)b * T + a) * 2 + 1] * env;
            }
            y[((size_t)b * T + s) * 2] = yr, y[((size_t)b * T + s) * 2 + 1] = yi;
        }
}

static void FN(bwd)(const kern_ops *kt, const dpd_model_cfg *c, const real *p, const real *x, const real *dy, int B, int T,
                    const real *ws, real *sc, real *dp, real *dx) {
#ifndef DPD_F64
    if (KERN_EXACT(kt, gmp)) {
        kt->gmp->backward(c, p, x, dy, B, T, ws, sc, dp, dx);
        return;
    }
#endif
    memset(dp, 0, NW * sizeof *dp);
    if (dx) memset(dx, 0, (size_t)B * T * 2 * sizeof *dx);
    for (int b = 0; b < B; b++)
        for (int s = 0; s < T; s++) {
            real gr = dy[((size_t)b * T + s) * 2], gi = dy[((size_t)b * T + s) * 2 + 1];
            for (int i = 0; i < NW; i++) {
                int a, e, k;
                term(i, s, &a, &e, &k);
                if (a < 0 || e < 0) continue;
                size_t ia = (size_t)b * T + a, ie = (size_t)b * T + e;
                real r = ws[ie], env = 1, envd = 0;
                for (int j = 0; j < k; j++) envd = envd * r + env, env *= r;
                real xr = x[ia * 2], xi = x[ia * 2 + 1];
                dp[i] += (gr * xr + gi * xi) * env;
                if (!dx) continue;
                dx[ia * 2] += gr * p[i] * env, dx[ia * 2 + 1] += gi * p[i] * env;
                if (k && r > 0) {
                    real den = p[i] * (gr * xr + gi * xi) * envd / r;
                    dx[ie * 2] += den * x[ie * 2], dx[ie * 2 + 1] += den * x[ie * 2 + 1];
                }
            }
        }
}

#ifdef DPD_F64
const dpd_k64 dpd_k64_gmp = {fwd_f64, bwd_f64};
#else
/* Xavier-uniform on the (1, 495) tensor. */
static void init(const dpd_model_cfg *c, const dpd_tensor *t, float *p, dpd_rng *rng) {
    dpd_init_xavier(p, 1, NW, NW, 1, rng);
}

/* x[n-q] |x[n-q-r]|^k: q and r up to MM - 1 each. */
static int behind(const dpd_model_cfg *c) {
    (void)c;
    return 2 * (MM - 1);
}

const dpd_family dpd_family_gmp = {
    .name = "gmp", .tag = "GMP", .params = "495 (M = 11, K = 5, real weights)",
    .about = "OpenDPD's generalized memory polynomial, gradient-trained", .hidden = 1,
    .max_layers = 1, .layout = layout, .init = init, .ws_size = ws_size,
    .scratch_size = scratch_size, .forward = fwd_f32, .backward = bwd_f32, .behind = behind};
#endif
