/* nn: the scalar building blocks every model family shares — the `real` type (float in the
 * library, double with -DDPD_F64 for gradient checks), activations, small dense products, and
 * OpenDPD's per-sample input features with their backward passes. Header-only (static), so
 * each family file compiles it in its own precision. */
#ifndef DPD_MODELS_NN_H
#define DPD_MODELS_NN_H
#include <math.h>
#include <string.h>

#include "dpd/dpd.h"

#ifdef DPD_F64
typedef double real;
#define FN(n) n##_f64
#define EXP exp
#define TANH tanh
#define SQRT sqrt
#define FABS fabs
#else
typedef float real;
#define FN(n) n##_f32
#define EXP expf
#define TANH tanhf
#define SQRT sqrtf
#define FABS fabsf
#endif

static inline real sigm(real a) { return (real)1 / ((real)1 + EXP(-a)); }

/* Hardswish v * clamp(v + 3, 0, 6) / 6 and its derivative as PyTorch defines it. */
static inline real hswish(real v) { return v <= -3 ? 0 : v >= 3 ? v : v * (v + 3) / 6; }
static inline real hswish_d(real v) { return v < -3 ? 0 : v <= 3 ? v / 3 + (real)0.5 : 1; }

/* Four partial sums (fixed order) so the adds overlap instead of waiting on each other. */
static inline real dot(const real *a, const real *b, int n) {
    real s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int i = 0;
    for (; i + 4 <= n; i += 4) s0 += a[i] * b[i], s1 += a[i + 1] * b[i + 1], s2 += a[i + 2] * b[i + 2], s3 += a[i + 3] * b[i + 3];
    for (; i < n; i++) s0 += a[i] * b[i];
    return (s0 + s1) + (s2 + s3);
}

/* y (out) = W x + b for W (out, in) row-major; b may be NULL. */
static inline void linear(real *y, const real *W, const real *b, const real *x, int out, int in) {
    for (int o = 0; o < out; o++) y[o] = (b ? b[o] : 0) + dot(W + (size_t)o * in, x, in);
}

/* Backward of linear: dW += dy x^T, db += dy (db may be NULL), dx += W^T dy (dx may be NULL). */
static inline void linear_back(real *dx, real *dW, real *db, const real *W, const real *x,
                               const real *dy, int out, int in) {
    for (int o = 0; o < out; o++) {
        real d = dy[o];
        if (db) db[o] += d;
        real *gw = dW + (size_t)o * in;
        for (int i = 0; i < in; i++) gw[i] += d * x[i];
        if (dx) {
            const real *w = W + (size_t)o * in;
            for (int i = 0; i < in; i++) dx[i] += w[i] * d;
        }
    }
}

/* a[0..G) += W^T v with wt = W^T stored (n, G): runs along contiguous gate rows. */
static inline void gemv_t(real *a, const real *wt, const real *v, int n, int G) {
    for (int i = 0; i < n; i++) {
        real vi = v[i];
        const real *w = wt + (size_t)i * G;
        for (int q = 0; q < G; q++) a[q] += w[q] * vi;
    }
}

static inline void transpose(real *dst, const real *src, int rows, int cols) {
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) dst[(size_t)c * rows + r] = src[(size_t)r * cols + c];
}

/* Amplitude with dpd's zero rule (reference §13): A = 0 gives finite features and gradients. */
static inline real amp(real i, real q) { return SQRT(i * i + q * q); }

/* DGRU / DeltaGRU / TCN features of one sample: (I, Q, A, A^3, Q/A, I/A), zeros for the
 * phase terms at A = 0. */
static inline void feat_dgru(real *f, real i, real q) {
    real a = amp(i, q);
    f[0] = i, f[1] = q, f[2] = a, f[3] = a * a * a;
    f[4] = a > 0 ? q / a : 0, f[5] = a > 0 ? i / a : 0;
}

/* Adds to (di, dq) the gradient of feat_dgru given df (6). */
static inline void feat_dgru_back(real *di, real *dq, real i, real q, const real *df) {
    real a = amp(i, q);
    *di += df[0], *dq += df[1];
    if (a > 0) {
        real a3 = a * a * a, dA = df[2] + 3 * a * a * df[3];
        *di += dA * i / a + df[4] * (-q * i / a3) + df[5] * (q * q / a3);
        *dq += dA * q / a + df[4] * (i * i / a3) + df[5] * (-i * q / a3);
    }
}

/* A, cos, sin = I/A, Q/A of one sample s (I, Q) and, when th is not NULL, theta = atan2(Q, I), all 0
 * at A = 0 (dpd's zero rule, reference §13). The JANET families' polar features. */
static inline void polar(const real *s, real *a, real *co, real *si, real *th) {
    *a = amp(s[0], s[1]);
    *co = *a > 0 ? s[0] / *a : 0, *si = *a > 0 ? s[1] / *a : 0;
    if (th) *th = *a > 0 ? (real)atan2(s[1], s[0]) : 0;
}

/* Adds to d (dI, dQ) the gradient of polar() given dA, dcos, dsin, dtheta. */
static inline void polar_back(const real *s, real dA, real dco, real dsi, real dth, real *d) {
    real a = amp(s[0], s[1]);
    if (a <= 0) return;
    real i = s[0], q = s[1], a2 = a * a, a3 = a2 * a;
    d[0] += dA * i / a + dco * (q * q / a3) + dsi * (-i * q / a3) + dth * (-q / a2);
    d[1] += dA * q / a + dco * (-i * q / a3) + dsi * (i * i / a3) + dth * (i / a2);
}

/* Adds to (di, dq) the gradient of the amplitude powers A^k, k = 1..n, given dpow[k-1]. */
static inline void amp_pow_back(real *di, real *dq, real i, real q, const real *dpow, int n) {
    real a = amp(i, q), dA = 0, ak = 1; /* ak = A^(k-1) */
    if (a <= 0) return;
    for (int k = 1; k <= n; k++, ak *= a) dA += dpow[k - 1] * (real)k * ak;
    *di += dA * i / a, *dq += dA * q / a;
}

#endif
