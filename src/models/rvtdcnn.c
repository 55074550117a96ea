/* rvtdcnn: OpenDPD's `rvtdcnn` (reference §3.4). Per step a 4 x 5 image of the features
 * (I, Q, A, A^2, A^3) of samples t-3..t (oldest first; before the start of the sequence the rows
 * wrap to its end), a 3x3 Conv2d 1 -> 3 with one zero row of padding above and below, tanh,
 * flatten (channel, row, col) to 36, tanh(fc_hid 36 -> H), fc_out H -> 2.
 * Compiled twice (see family.h). Legend: B batch, T time, H fc_hid width. */
#include "../kern/kern.h"
#include "../family.h"
#include "../init.h"
#include "nn.h"



#define ROWS 4
#define COLS 5
#define NC 36 /* 3 channels x 4 rows x 3 columns */

static int layout(const dpd_model_cfg *c, dpd_tensor *t) {
    int H = c->hidden, n = 0;
    size_t off = 0;
    dpd_tensor_add(t, &n, &off, "backbone.Conv2d.weight", 3, 1, 3, 3);
    dpd_tensor_add(t, &n, &off, "backbone.Conv2d.bias", 3, 0, 0, 0);
    dpd_tensor_add(t, &n, &off, "backbone.fc_hid.weight", H, NC, 0, 0);
    dpd_tensor_add(t, &n, &off, "backbone.fc_hid.bias", H, 0, 0, 0);
    dpd_tensor_add(t, &n, &off, "backbone.fc_out.weight", 2, H, 0, 0);
    dpd_tensor_add(t, &n, &off, "backbone.fc_out.bias", 2, 0, 0, 0);
    return n;
}

/* Workspace: conv activations (B, T, 36) and hidden activations (B, T, H); the fast kernel's
 * own layout and scratch when it runs. */
static inline size_t ws_size(const kern_ops *kt, const dpd_model_cfg *c, int B, int T) {
    return kern_fast(kt, B) ? kern_rvt_saved(c->hidden, T) + kern_rvt_tmp(c->hidden, T) : (size_t)B * T * (NC + c->hidden);
}
static inline size_t scratch_size(const kern_ops *kt, const dpd_model_cfg *c, int B, int T) {
    return kern_fast(kt, B) ? kern_rvt_tmp(c->hidden, T) : (size_t)c->hidden + NC + ROWS * COLS;
}

#ifndef DPD_F64
static krvt bind_fast(const dpd_model_cfg *c, const float *p, float *dp) {
    dpd_tensor t[DPD_MAX_TENSORS];
    layout(c, t);
    krvt k = {c->hidden, p + t[0].offset, p + t[1].offset, p + t[2].offset, p + t[3].offset, p + t[4].offset,
              p + t[5].offset};
    if (dp)
        k.gwc = dp + t[0].offset, k.gbc = dp + t[1].offset, k.gwh = dp + t[2].offset, k.gbh = dp + t[3].offset,
        k.gwo = dp + t[4].offset, k.gbo = dp + t[5].offset;
    return k;
}
#endif

static void image(const real *xb, int T, int t, real *img) {
    for (int r = 0; r < ROWS; r++) {
        int u = ((t - (ROWS - 1) + r) % T + T) % T;
        real i = xb[2 * u], q = xb[2 * u + 1], a = amp(i, q), *f = img + r * COLS;
        f[0] = i, f[1] = q, f[2] = a, f[3] = a * a, f[4] = a * a * a;
    }
}

static void FN(fwd)(const kern_ops *kt, const dpd_model_cfg *c, const real *p, const real *x, int B, int T, real *y,
                    real *ws) {
#ifndef DPD_F64
    if (kern_fast(kt, B)) {
        krvt kr = bind_fast(c, p, NULL);
        kt->rvt_fwd(&kr, B, T, x, ws, y, ws + kern_rvt_saved(c->hidden, T));
        return;
    }
#endif
    dpd_tensor t[DPD_MAX_TENSORS];
    layout(c, t);
    int H = c->hidden;
    const real *wc = p + t[0].offset, *bc = p + t[1].offset, *wh = p + t[2].offset,
               *bh = p + t[3].offset, *wo = p + t[4].offset, *bo = p + t[5].offset;
    for (int b = 0; b < B; b++)
        for (int s = 0; s < T; s++) {
            size_t i = (size_t)b * T + s;
            real img[ROWS * COLS], *a = ws + i * (NC + H), *h = a + NC;
            image(x + (size_t)b * T * 2, T, s, img);
            for (int ch = 0; ch < 3; ch++)
                for (int r = 0; r < ROWS; r++)
                    for (int j = 0; j < 3; j++) {
                        real v = bc[ch];
                        for (int kr = 0; kr < 3; kr++) {
                            int rr = r + kr - 1;
                            if (rr < 0 || rr >= ROWS) continue;
                            for (int kc = 0; kc < 3; kc++) v += wc[ch * 9 + kr * 3 + kc] * img[rr * COLS + j + kc];
                        }
                        a[ch * 12 + r * 3 + j] = TANH(v);
                    }
            linear(h, wh, bh, a, H, NC);
            for (int k = 0; k < H; k++) h[k] = TANH(h[k]);
            linear(y + 2 * i, wo, bo, h, 2, H);
        }
}

static void FN(bwd)(const kern_ops *kt, const dpd_model_cfg *c, const real *p, const real *x, const real *dy, int B,
                    int T, const real *ws, real *scratch, real *dp, real *dx) {
    dpd_tensor t[DPD_MAX_TENSORS];
    int nt = layout(c, t), H = c->hidden;
    memset(dp, 0, (t[nt - 1].offset + t[nt - 1].numel) * sizeof *dp);
#ifndef DPD_F64
    if (kern_fast(kt, B)) {
        krvt kr = bind_fast(c, p, dp);
        kt->rvt_bwd(&kr, B, T, x, ws, dy, dx, scratch);
        return;
    }
#endif
    const real *wc = p + t[0].offset, *wh = p + t[2].offset, *wo = p + t[4].offset;
    real *gwc = dp + t[0].offset, *gbc = dp + t[1].offset, *gwh = dp + t[2].offset,
         *gbh = dp + t[3].offset, *gwo = dp + t[4].offset, *gbo = dp + t[5].offset;
    real *dh = scratch, *da = dh + H, *dimg = da + NC;
    if (dx) memset(dx, 0, (size_t)B * T * 2 * sizeof *dx);
    for (int b = 0; b < B; b++)
        for (int s = 0; s < T; s++) {
            size_t i = (size_t)b * T + s;
            const real *a = ws + i * (NC + H), *h = a + NC, *xb = x + (size_t)b * T * 2;
            real img[ROWS * COLS];
            image(xb, T, s, img);
            memset(dh, 0, (size_t)(H + NC + ROWS * COLS) * sizeof *dh);
            linear_back(dh, gwo, gbo, wo, h, dy + 2 * i, 2, H);
            for (int k = 0; k < H; k++) dh[k] *= 1 - h[k] * h[k];
            linear_back(da, gwh, gbh, wh, a, dh, H, NC);
            for (int ch = 0; ch < 3; ch++)
                for (int r = 0; r < ROWS; r++)
                    for (int j = 0; j < 3; j++) {
                        real av = a[ch * 12 + r * 3 + j], d = da[ch * 12 + r * 3 + j] * (1 - av * av);
                        gbc[ch] += d;
                        for (int kr = 0; kr < 3; kr++) {
                            int rr = r + kr - 1;
                            if (rr < 0 || rr >= ROWS) continue;
                            for (int kc = 0; kc < 3; kc++) {
                                gwc[ch * 9 + kr * 3 + kc] += d * img[rr * COLS + j + kc];
                                dimg[rr * COLS + j + kc] += wc[ch * 9 + kr * 3 + kc] * d;
                            }
                        }
                    }
            if (!dx) continue;
            for (int r = 0; r < ROWS; r++) {
                int u = ((s - (ROWS - 1) + r) % T + T) % T;
                const real *g = dimg + r * COLS;
                real *d = dx + ((size_t)b * T + u) * 2;
                d[0] += g[0], d[1] += g[1];
                amp_pow_back(&d[0], &d[1], xb[2 * u], xb[2 * u + 1], g + 2, 3);
            }
        }
}

#ifdef DPD_F64
const dpd_k64 dpd_k64_rvtdcnn = {fwd_f64, bwd_f64};
#else
/* PyTorch's default init (no reset_parameters): U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for every
 * weight and bias. */
static void init(const dpd_model_cfg *c, const dpd_tensor *t, float *p, dpd_rng *rng) {
    int H = c->hidden;
    layout(c, (dpd_tensor *)t);
    static const int fan[6] = {9, 9, NC, NC, 0, 0};
    for (int k = 0; k < 6; k++)
        dpd_init_uniform(p + t[k].offset, t[k].numel, 1.0 / sqrt(fan[k] ? fan[k] : H), rng);
}

/* The feature image's rows: samples t - ROWS + 1 .. t (from t >= ROWS - 1: before, they wrap to
 * the sequence's end, as OpenDPD's do). */
static int behind(const dpd_model_cfg *c) {
    (void)c;
    return ROWS - 1;
}

const dpd_family dpd_family_rvtdcnn = {
    .name = "rvtdcnn", .tag = "RVTDCNN", .params = "39H+32",
    .about = "real-valued time-delay CNN: 4-sample feature image, 3x3 conv, tanh MLP",
    .hidden = 12, .max_layers = 1, .gated = 1, .layout = layout, .init = init, .ws_size = ws_size,
    .scratch_size = scratch_size, .forward = fwd_f32, .backward = bwd_f32, .behind = behind};
#endif
