/* tres: TRes-DeltaGRU (OpenDPDv2, reference §3.8) and TRes-GRU (the same at zero thresholds,
 * a dense cell). A bias-free (Delta)GRU
 * on (I[t], Q[t], A[t], A[t]^3, I[t+1], Q[t+1]) with the next sample taken circularly (the last
 * step reads sample 0), a bias-free head y = W_out h, plus a TCN residual on raw I, Q:
 * s = Hardswish(W2 * Hardswish(W0 *_16 x)), W0 a kernel-3 conv with dilation 16 and zero padding
 * 16 (taps t-16, t, t+16), W2 a 1x1 conv. Compiled twice (see family.h).
 * Legend: B batch, T time, H hidden, G = 3H. */
#include "../family.h"
#include "../init.h"
#include "rnn.h"

#define DIL 16

static int is_delta(const dpd_model_cfg *c) { return !strcmp(c->family, "tres_deltagru"); }

static int layout(const dpd_model_cfg *c, dpd_tensor *t) {
    int H = c->hidden, n = 0;
    size_t off = 0;
    dpd_tensor_add(t, &n, &off, "backbone.rnn.x2h.weight", 3 * H, 6, 0, 0);
    dpd_tensor_add(t, &n, &off, "backbone.rnn.h2h.weight", 3 * H, H, 0, 0);
    dpd_tensor_add(t, &n, &off, "backbone.fc_out.weight", 2, H, 0, 0);
    dpd_tensor_add(t, &n, &off, "backbone.tcn.0.weight", 3, 2, 3, 0);
    dpd_tensor_add(t, &n, &off, "backbone.tcn.2.weight", 2, 3, 1, 0);
    return n;
}

/* Workspace: features (B, T, 6), GRU planes, TCN pre-activations c1 (B, T, 3) and c2 (B, T, 2),
 * cell tmp. */
static inline size_t ws_size(const kern_ops *kt, const dpd_model_cfg *c, int B, int T) {
    size_t bt = (size_t)B * T, H = (size_t)c->hidden;
    return bt * (6 + 5) + rnn_gru_saved(kt, 6, (int)H, is_delta(c), B, T) + rnn_gru_tmp(kt, 6, (int)H, is_delta(c), T);
}

/* Scratch: gradient at h (B, T, H), at the features (B, T, 6), cell tmp. */
static inline size_t scratch_size(const kern_ops *kt, const dpd_model_cfg *c, int B, int T) {
    size_t bt = (size_t)B * T, H = (size_t)c->hidden;
    return bt * (H + 6) + rnn_gru_tmp(kt, 6, (int)H, is_delta(c), T);
}

static real tap(const real *x, int T, int t, int k, int i) { /* x[t + (k-1) DIL], zero outside */
    int u = t + (k - 1) * DIL;
    return u < 0 || u >= T ? 0 : x[2 * u + i];
}

static void FN(fwd)(const kern_ops *kt, const dpd_model_cfg *c, const real *p, const real *x, int B, int T, real *y,
                    real *ws) {
    dpd_tensor t[DPD_MAX_TENSORS];
    layout(c, t);
    int H = c->hidden;
    size_t bt = (size_t)B * T;
    const real *wo = p + t[2].offset, *w0 = p + t[3].offset, *w2 = p + t[4].offset;
    real *feat = ws, *sv = feat + 6 * bt, *c1 = sv + rnn_gru_saved(kt, 6, H, is_delta(c), B, T), *c2 = c1 + 3 * bt,
         *tmp = c2 + 2 * bt;
    for (int b = 0; b < B; b++)
        for (int s = 0; s < T; s++) {
            const real *xs = x + ((size_t)b * T + s) * 2, *xn = x + ((size_t)b * T + (s + 1) % T) * 2;
            real *f = feat + ((size_t)b * T + s) * 6, a = amp(xs[0], xs[1]);
            f[0] = xs[0], f[1] = xs[1], f[2] = a, f[3] = a * a * a, f[4] = xn[0], f[5] = xn[1];
        }
    FN(rnn_w) w = {6, H, p + t[0].offset, p + t[1].offset, NULL, NULL, is_delta(c), (real)c->thx, (real)c->thh, kt};
    FN(rnn_gru_fwd)(&w, B, T, feat, sv, tmp);
    for (int b = 0; b < B; b++) {
        const real *xb = x + (size_t)b * T * 2;
        for (int s = 0; s < T; s++) {
            size_t i = (size_t)b * T + s;
            real a1[3];
            for (int o = 0; o < 3; o++) {
                real v = 0;
                for (int ch = 0; ch < 2; ch++)
                    for (int k = 0; k < 3; k++) v += w0[(o * 2 + ch) * 3 + k] * tap(xb, T, s, k, ch);
                c1[3 * i + o] = v, a1[o] = hswish(v);
            }
            for (int o = 0; o < 2; o++) {
                real v = dot(w2 + 3 * o, a1, 3);
                c2[2 * i + o] = v;
                y[2 * i + o] = dot(wo + (size_t)o * H, sv + i * H, H) + hswish(v);
            }
        }
    }
}

static void FN(bwd)(const kern_ops *kt, const dpd_model_cfg *c, const real *p, const real *x, const real *dy, int B,
                    int T, const real *ws, real *scratch, real *dp, real *dx) {
    dpd_tensor t[DPD_MAX_TENSORS];
    int nt = layout(c, t), H = c->hidden;
    memset(dp, 0, (t[nt - 1].offset + t[nt - 1].numel) * sizeof *dp);
    size_t bt = (size_t)B * T;
    const real *wo = p + t[2].offset, *w0 = p + t[3].offset, *w2 = p + t[4].offset;
    real *gwo = dp + t[2].offset, *gw0 = dp + t[3].offset, *gw2 = dp + t[4].offset;
    const real *feat = ws, *sv = feat + 6 * bt, *c1 = sv + rnn_gru_saved(kt, 6, H, is_delta(c), B, T), *c2 = c1 + 3 * bt;
    real *dh = scratch, *df = dh + bt * H, *tmp = df + 6 * bt;
    if (dx) memset(dx, 0, 2 * bt * sizeof *dx);
    memset(dh, 0, bt * H * sizeof *dh);
    for (int b = 0; b < B; b++) {
        const real *xb = x + (size_t)b * T * 2;
        for (int s = 0; s < T; s++) {
            size_t i = (size_t)b * T + s;
            linear_back(dh + i * H, gwo, NULL, wo, sv + i * H, dy + 2 * i, 2, H);
            real a1[3], d2[2], da1[3] = {0, 0, 0};
            for (int o = 0; o < 3; o++) a1[o] = hswish(c1[3 * i + o]);
            for (int o = 0; o < 2; o++) d2[o] = dy[2 * i + o] * hswish_d(c2[2 * i + o]);
            linear_back(da1, gw2, NULL, w2, a1, d2, 2, 3);
            for (int o = 0; o < 3; o++) {
                real d1 = da1[o] * hswish_d(c1[3 * i + o]);
                for (int ch = 0; ch < 2; ch++)
                    for (int k = 0; k < 3; k++) {
                        int u = s + (k - 1) * DIL;
                        if (u < 0 || u >= T) continue;
                        gw0[(o * 2 + ch) * 3 + k] += d1 * xb[2 * u + ch];
                        if (dx) dx[((size_t)b * T + u) * 2 + ch] += w0[(o * 2 + ch) * 3 + k] * d1;
                    }
            }
        }
    }
    FN(rnn_w) w = {6, H, p + t[0].offset, p + t[1].offset, NULL, NULL, is_delta(c), (real)c->thx, (real)c->thh, kt};
    FN(rnn_g) g = {dp + t[0].offset, dp + t[1].offset, NULL, NULL};
    FN(rnn_gru_bwd)(&w, &g, B, T, feat, sv, dh, dx ? df : NULL, tmp);
    if (!dx) return;
    for (int b = 0; b < B; b++)
        for (int s = 0; s < T; s++) {
            size_t i = (size_t)b * T + s, nx = (size_t)b * T + (s + 1) % T;
            const real *f = df + 6 * i;
            real dpow[3] = {f[2], 0, f[3]};
            dx[2 * i] += f[0], dx[2 * i + 1] += f[1];
            amp_pow_back(&dx[2 * i], &dx[2 * i + 1], x[2 * i], x[2 * i + 1], dpow, 3);
            dx[2 * nx] += f[4], dx[2 * nx + 1] += f[5];
        }
}

#ifdef DPD_F64
const dpd_k64 dpd_k64_tres = {fwd_f64, bwd_f64};
#else
/* Reference §3.8: TCN weights Xavier; x2h and h2h orthogonal per gate block, then x2h Xavier per
 * gate block; W_out Xavier. */
static void init(const dpd_model_cfg *c, const dpd_tensor *t, float *p, dpd_rng *rng) {
    int H = c->hidden;
    layout(c, (dpd_tensor *)t);
    for (int q = 0; q < 3; q++) dpd_init_orthogonal(p + t[0].offset + (size_t)q * H * 6, H, 6, rng);
    for (int q = 0; q < 3; q++) dpd_init_orthogonal(p + t[1].offset + (size_t)q * H * H, H, H, rng);
    for (int q = 0; q < 3; q++) dpd_init_xavier(p + t[0].offset + (size_t)q * H * 6, H, 6, 6, H, rng);
    dpd_init_xavier(p + t[2].offset, 2, H, H, 2, rng);
    dpd_init_xavier(p + t[3].offset, 3, 6, 2 * 3, 3 * 3, rng);
    dpd_init_xavier(p + t[4].offset, 2, 3, 3, 2, rng);
}

/* Delta statistics of the last forward: see family.h. */
static size_t delta_zeros(const dpd_model_cfg *c, const float *ws, int B, int T, long long *z) {
    size_t bt = (size_t)B * T;
    FN(rnn_w) w = {6, c->hidden, NULL, NULL, NULL, NULL, 1, (real)c->thx, (real)c->thh};
    long long zz[2] = {0, 0};
    FN(rnn_delta_zeros)(&w, B, T, ws + 6 * bt, zz);
    z[0] += zz[0], z[1] += (long long)bt * 6, z[2] += zz[1], z[3] += (long long)bt * c->hidden;
    return (size_t)3 * c->hidden * (6 + c->hidden);
}

/* The skip's tap t + DIL (the cell's next-sample feature, t + 1, is within it). */
static int ahead(const dpd_model_cfg *c) {
    (void)c;
    return DIL;
}

const dpd_family dpd_family_tres_gru = {
    .name = "tres_gru", .tag = "TRES_GRU", .params = "3H^2+20H+24",
    .about = "TRes-GRU: bias-free GRU on (I,Q,A,A^3,I+1,Q+1) + dilated TCN skip (OpenDPDv2)",
    .hidden = 15, .max_layers = 1, .gated = 1, .layout = layout, .init = init, .ws_size = ws_size,
    .scratch_size = scratch_size, .forward = fwd_f32, .backward = bwd_f32, .ahead = ahead};
const dpd_family dpd_family_tres_deltagru = {
    .name = "tres_deltagru", .tag = "TRES_DELTAGRU", .params = "3H^2+20H+24",
    .about = "TRes-DeltaGRU: TRes-GRU with delta thresholds thx/thh (OpenDPDv2)",
    .hidden = 15, .max_layers = 1, .layout = layout, .init = init, .ws_size = ws_size,
    .scratch_size = scratch_size, .forward = fwd_f32, .backward = bwd_f32, .delta_zeros = delta_zeros,
    .ahead = ahead};
#endif
