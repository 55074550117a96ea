/* tcn: OpenDPD's `tcnn` (TCN-DPD, reference §3.9): the 6 DGRU features as channels -> 1x1 conv
 * 6 -> H with bias -> Hardswish -> 4 x [depthwise conv, kernel 5, dilation d = 1, 2, 4, 8, zero
 * padding 2d, no bias -> Hardswish] -> 1x1 conv H -> 2 without bias -> + (I, Q). Non-causal
 * (30 samples each side). Compiled twice (see family.h). Legend: B batch, T time, H channels. */
#include <stdio.h>

#include "../family.h"
#include "../init.h"
#include "../kern/kern.h"
#include "nn.h"

#define NDW 4 /* depthwise stages */

static inline int layout(const dpd_model_cfg *c, dpd_tensor *t) {
    int H = c->hidden, n = 0;
    size_t off = 0;
    char name[64];
    dpd_tensor_add(t, &n, &off, "backbone.network.0.weight", H, 6, 1, 0);
    dpd_tensor_add(t, &n, &off, "backbone.network.0.bias", H, 0, 0, 0);
    for (int k = 0; k < NDW; k++) {
        snprintf(name, sizeof name, "backbone.network.%d.weight", 2 + 2 * k);
        dpd_tensor_add(t, &n, &off, name, H, 1, 5, 0);
    }
    dpd_tensor_add(t, &n, &off, "backbone.network.10.weight", 2, H, 1, 0);
    return n;
}

/* Workspace: features (B, T, 6) and the pre-activations of the 5 hidden stages (B, T, H) each.
 * With fast kernels, their exact path (src/kern/tcn.c) runs and says the sizes. */
static inline size_t ws_size(const kern_ops *kt, const dpd_model_cfg *c, int B, int T) {
    const kfam *e = KERN_EXACT(kt, tcn);
    return e ? e->ws_size(c, B, T) : (size_t)B * T * (6 + 5 * (size_t)c->hidden);
}
/* Scratch: two (T, H) gradient planes and one (T, H) activation plane. */
static inline size_t scratch_size(const kern_ops *kt, const dpd_model_cfg *c, int B, int T) {
    const kfam *e = KERN_EXACT(kt, tcn);
    return e ? e->scratch_size(c, B, T) : 3 * (size_t)T * c->hidden;
}

/* Stage k (0 = the 1x1 input conv, 1..4 depthwise) pre-activations of sequence b: (T, H). */
static real *stage(real *ws, int B, int T, int H, int k, int b) {
    return ws + (size_t)B * T * 6 + ((size_t)k * B + b) * T * H;
}

static void FN(fwd)(const kern_ops *kt, const dpd_model_cfg *c, const real *p, const real *x, int B, int T, real *y, real *ws) {
#ifndef DPD_F64
    if (KERN_EXACT(kt, tcn)) {
        kt->tcn->forward(c, p, x, B, T, y, ws);
        return;
    }
#endif
    dpd_tensor t[DPD_MAX_TENSORS];
    layout(c, t);
    int H = c->hidden;
    for (size_t i = 0; i < (size_t)B * T; i++) feat_dgru(ws + 6 * i, x[2 * i], x[2 * i + 1]);
    const real *w0 = p + t[0].offset, *b0 = p + t[1].offset, *wo = p + t[6].offset;
    for (int b = 0; b < B; b++) {
        real *z0 = stage(ws, B, T, H, 0, b);
        for (int s = 0; s < T; s++) linear(z0 + (size_t)s * H, w0, b0, ws + ((size_t)b * T + s) * 6, H, 6);
        for (int k = 1; k <= NDW; k++) {
            const real *prev = stage(ws, B, T, H, k - 1, b), *w = p + t[1 + k].offset;
            real *z = stage(ws, B, T, H, k, b);
            int d = 1 << (k - 1);
            for (int s = 0; s < T; s++)
                for (int h = 0; h < H; h++) {
                    real v = 0;
                    for (int j = 0; j < 5; j++) {
                        int u = s + (j - 2) * d;
                        if (u >= 0 && u < T) v += w[h * 5 + j] * hswish(prev[(size_t)u * H + h]);
                    }
                    z[(size_t)s * H + h] = v;
                }
        }
        const real *z4 = stage(ws, B, T, H, NDW, b);
        for (int s = 0; s < T; s++) {
            size_t i = (size_t)b * T + s;
            for (int o = 0; o < 2; o++) {
                real v = x[2 * i + o];
                for (int h = 0; h < H; h++) v += wo[o * H + h] * hswish(z4[(size_t)s * H + h]);
                y[2 * i + o] = v;
            }
        }
    }
}

static void FN(bwd)(const kern_ops *kt, const dpd_model_cfg *c, const real *p, const real *x, const real *dy, int B, int T,
                    const real *ws, real *sc, real *dp, real *dx) {
#ifndef DPD_F64
    if (KERN_EXACT(kt, tcn)) {
        kt->tcn->backward(c, p, x, dy, B, T, ws, sc, dp, dx);
        return;
    }
#endif
    dpd_tensor t[DPD_MAX_TENSORS];
    int nt = layout(c, t), H = c->hidden;
    memset(dp, 0, (t[nt - 1].offset + t[nt - 1].numel) * sizeof *dp);
    const real *w0 = p + t[0].offset, *wo = p + t[6].offset;
    real *g0 = dp + t[0].offset, *gb0 = dp + t[1].offset, *go = dp + t[6].offset;
    real *da = sc, *dz = da + (size_t)T * H, *act = dz + (size_t)T * H; /* (T, H) each */
    for (int b = 0; b < B; b++) {
        const real *z4 = stage((real *)ws, B, T, H, NDW, b);
        for (int s = 0; s < T; s++) { /* output conv: da = gradient at the activation of stage 4 */
            size_t i = (size_t)b * T + s;
            for (int h = 0; h < H; h++) {
                real a = hswish(z4[(size_t)s * H + h]), d = 0;
                for (int o = 0; o < 2; o++) go[o * H + h] += dy[2 * i + o] * a, d += wo[o * H + h] * dy[2 * i + o];
                da[(size_t)s * H + h] = d;
            }
            if (dx) dx[2 * i] = dy[2 * i], dx[2 * i + 1] = dy[2 * i + 1]; /* the residual */
        }
        for (int k = NDW; k >= 1; k--) {
            const real *z = stage((real *)ws, B, T, H, k, b), *prev = stage((real *)ws, B, T, H, k - 1, b);
            const real *w = p + t[1 + k].offset;
            real *gw = dp + t[1 + k].offset;
            int d = 1 << (k - 1);
            for (size_t e = 0; e < (size_t)T * H; e++) dz[e] = da[e] * hswish_d(z[e]), act[e] = hswish(prev[e]);
            memset(da, 0, (size_t)T * H * sizeof *da);
            for (int s = 0; s < T; s++)
                for (int h = 0; h < H; h++) {
                    real g = dz[(size_t)s * H + h];
                    for (int j = 0; j < 5; j++) {
                        int u = s + (j - 2) * d;
                        if (u < 0 || u >= T) continue;
                        gw[h * 5 + j] += g * act[(size_t)u * H + h];
                        da[(size_t)u * H + h] += w[h * 5 + j] * g;
                    }
                }
        }
        const real *z0 = stage((real *)ws, B, T, H, 0, b);
        for (int s = 0; s < T; s++) {
            size_t i = (size_t)b * T + s;
            real dz0[4096], df[6] = {0};
            for (int h = 0; h < H; h++) dz0[h] = da[(size_t)s * H + h] * hswish_d(z0[(size_t)s * H + h]);
            linear_back(df, g0, gb0, w0, ws + 6 * i, dz0, H, 6);
            if (dx) feat_dgru_back(&dx[2 * i], &dx[2 * i + 1], x[2 * i], x[2 * i + 1], df);
        }
    }
}

#ifdef DPD_F64
const dpd_k64 dpd_k64_tcn = {fwd_f64, bwd_f64};
#else
/* PyTorch's default init (no reset_parameters): U(-1/sqrt(fan_in), 1/sqrt(fan_in)). */
static void init(const dpd_model_cfg *c, const dpd_tensor *t, float *p, dpd_rng *rng) {
    int n = layout(c, (dpd_tensor *)t);
    for (int k = 0; k < n; k++) {
        int fan = k <= 1 ? 6 : k == n - 1 ? c->hidden : 5;
        dpd_init_uniform(p + t[k].offset, t[k].numel, 1.0 / sqrt(fan), rng);
    }
}

/* Zero padding 2d around each dilated stage (d = 1, 2, 4, 8): 2 + 4 + 8 + 16 samples ahead. */
static int ahead(const dpd_model_cfg *c) {
    (void)c;
    return 30;
}
static int behind(const dpd_model_cfg *c) { return ahead(c); } /* the padding is symmetric */

const dpd_family dpd_family_tcn = {
    .name = "tcn", .tag = "TCNN", .params = "29H",
    .about = "temporal convolutional network (TCN-DPD), 4 dilated depthwise stages + I/Q residual",
    .hidden = 8, .max_layers = 1, .layout = layout, .init = init, .ws_size = ws_size,
    .scratch_size = scratch_size, .forward = fwd_f32, .backward = bwd_f32, .ahead = ahead, .behind = behind};
#endif
