/* vdlstm: OpenDPD's `vdlstm` (reference §3.5). Windows of 4 samples (oldest first; before the
 * start of the sequence the rows wrap to its end, as RVTDCNN) of I, Q and A: an LSTM on the
 * amplitude window Aw (4 inputs), lambda1 = W_l1 h + b, lambda2 = W_l2 h + b (H -> 4 each), and
 * y = W_out [lambda1 * Iw/Aw ; lambda2 * Qw/Aw] + b_out (8 -> 2); the ratios are 0 at A = 0.
 * Compiled twice (see family.h). Legend: B batch, T time, W = 4 window, H hidden, G = 4H. */
#include "../family.h"
#include "../init.h"
#include "rnn.h"

#define W 4

static inline int layout(const dpd_model_cfg *c, dpd_tensor *t) {
    int H = c->hidden, n = 0;
    size_t off = 0;
    dpd_tensor_add(t, &n, &off, "backbone.rnn.weight_ih_l0", 4 * H, W, 0, 0);
    dpd_tensor_add(t, &n, &off, "backbone.rnn.weight_hh_l0", 4 * H, H, 0, 0);
    dpd_tensor_add(t, &n, &off, "backbone.rnn.bias_ih_l0", 4 * H, 0, 0, 0);
    dpd_tensor_add(t, &n, &off, "backbone.rnn.bias_hh_l0", 4 * H, 0, 0, 0);
    dpd_tensor_add(t, &n, &off, "backbone.fc_lambda_1.weight", W, H, 0, 0);
    dpd_tensor_add(t, &n, &off, "backbone.fc_lambda_1.bias", W, 0, 0, 0);
    dpd_tensor_add(t, &n, &off, "backbone.fc_lambda_2.weight", W, H, 0, 0);
    dpd_tensor_add(t, &n, &off, "backbone.fc_lambda_2.bias", W, 0, 0, 0);
    dpd_tensor_add(t, &n, &off, "backbone.fc_out.weight", 2, 2 * W, 0, 0);
    dpd_tensor_add(t, &n, &off, "backbone.fc_out.bias", 2, 0, 0, 0);
    return n;
}

/* Workspace: amplitude windows (B, T, 4), LSTM planes, cell tmp. */
static inline size_t ws_size(const kern_ops *kt, const dpd_model_cfg *c, int B, int T) {
    size_t bt = (size_t)B * T;
    return bt * W + rnn_lstm_saved(kt, W, c->hidden, B, T) + rnn_tmp_size(W, c->hidden, 4, T);
}
/* Scratch: dh (B, T, H), d windows (B, T, 4), cell tmp. */
static inline size_t scratch_size(const kern_ops *kt, const dpd_model_cfg *c, int B, int T) {
    return (size_t)B * T * (c->hidden + W) + rnn_tmp_size(W, c->hidden, 4, T);
}

static int row(int t, int r, int T) { return ((t - (W - 1) + r) % T + T) % T; }

/* cos and sin of the phase (I/A, Q/A), 0 at A = 0. */
static void ratios(const real *s, real *ci, real *cq) {
    real a = amp(s[0], s[1]);
    *ci = a > 0 ? s[0] / a : 0, *cq = a > 0 ? s[1] / a : 0;
}

typedef struct parts {
    const real *wih, *whh, *bih, *bhh, *w1, *b1, *w2, *b2, *wo, *bo;
} parts;

static parts bind(const dpd_model_cfg *c, const real *p) {
    dpd_tensor t[DPD_MAX_TENSORS];
    layout(c, t);
    parts q = {p + t[0].offset, p + t[1].offset, p + t[2].offset, p + t[3].offset, p + t[4].offset,
               p + t[5].offset, p + t[6].offset, p + t[7].offset, p + t[8].offset, p + t[9].offset};
    return q;
}

/* The head input v (8) of one step: lambda1 * Iw/Aw, then lambda2 * Qw/Aw. */
static void head_in(const parts *q, const real *h, const real *xb, int T, int t, int H, real *l1,
                    real *l2, real *v) {
    linear(l1, q->w1, q->b1, h, W, H);
    linear(l2, q->w2, q->b2, h, W, H);
    for (int r = 0; r < W; r++) {
        real ci, cq;
        ratios(xb + 2 * row(t, r, T), &ci, &cq);
        v[r] = l1[r] * ci, v[W + r] = l2[r] * cq;
    }
}

static void FN(fwd)(const kern_ops *kt, const dpd_model_cfg *c, const real *p, const real *x, int B, int T, real *y,
                    real *ws) {
    int H = c->hidden;
    size_t bt = (size_t)B * T;
    parts q = bind(c, p);
    real *aw = ws, *sv = aw + bt * W, *tmp = sv + rnn_lstm_saved(kt, W, H, B, T);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int r = 0; r < W; r++) {
                const real *s = x + ((size_t)b * T + row(t, r, T)) * 2;
                aw[((size_t)b * T + t) * W + r] = amp(s[0], s[1]);
            }
    FN(rnn_w) w = {W, H, q.wih, q.whh, q.bih, q.bhh, 0, 0, 0, kt};
    FN(rnn_lstm_fwd)(&w, B, T, aw, sv, tmp);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            size_t i = (size_t)b * T + t;
            real l1[W], l2[W], v[2 * W];
            head_in(&q, sv + i * H, x + (size_t)b * T * 2, T, t, H, l1, l2, v);
            linear(y + 2 * i, q.wo, q.bo, v, 2, 2 * W);
        }
}

static void FN(bwd)(const kern_ops *kt, const dpd_model_cfg *c, const real *p, const real *x, const real *dy, int B,
                    int T, const real *ws, real *scratch, real *dp, real *dx) {
    int H = c->hidden;
    size_t bt = (size_t)B * T;
    dpd_tensor tt[DPD_MAX_TENSORS];
    int nt = layout(c, tt);
    memset(dp, 0, (tt[nt - 1].offset + tt[nt - 1].numel) * sizeof *dp);
    parts q = bind(c, p);
    real *g[10];
    for (int k = 0; k < 10; k++) g[k] = dp + tt[k].offset;
    const real *aw = ws, *sv = aw + bt * W;
    real *dh = scratch, *daw = dh + bt * H, *tmp = daw + bt * W;
    if (dx) memset(dx, 0, bt * 2 * sizeof *dx);
    memset(dh, 0, bt * H * sizeof *dh);
    for (int b = 0; b < B; b++) {
        const real *xb = x + (size_t)b * T * 2;
        for (int t = 0; t < T; t++) {
            size_t i = (size_t)b * T + t;
            real l1[W], l2[W], v[2 * W], dv[2 * W] = {0}, dl1[W], dl2[W];
            head_in(&q, sv + i * H, xb, T, t, H, l1, l2, v);
            linear_back(dv, g[8], g[9], q.wo, v, dy + 2 * i, 2, 2 * W);
            for (int r = 0; r < W; r++) {
                int u = row(t, r, T);
                const real *s = xb + 2 * u;
                real ci, cq, a = amp(s[0], s[1]);
                ratios(s, &ci, &cq);
                dl1[r] = dv[r] * ci, dl2[r] = dv[W + r] * cq;
                if (!dx || a <= 0) continue;
                real dci = dv[r] * l1[r], dcq = dv[W + r] * l2[r], a3 = a * a * a;
                real *d = dx + ((size_t)b * T + u) * 2;
                d[0] += dci * (s[1] * s[1] / a3) + dcq * (-s[0] * s[1] / a3);
                d[1] += dci * (-s[0] * s[1] / a3) + dcq * (s[0] * s[0] / a3);
            }
            linear_back(dh + i * H, g[4], g[5], q.w1, sv + i * H, dl1, W, H);
            linear_back(dh + i * H, g[6], g[7], q.w2, sv + i * H, dl2, W, H);
        }
    }
    FN(rnn_w) w = {W, H, q.wih, q.whh, q.bih, q.bhh, 0, 0, 0, kt};
    FN(rnn_g) gg = {g[0], g[1], g[2], g[3]};
    FN(rnn_lstm_bwd)(&w, &gg, B, T, aw, sv, dh, dx ? daw : NULL, tmp);
    if (!dx) return;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int r = 0; r < W; r++) {
                int u = row(t, r, T);
                const real *s = x + ((size_t)b * T + u) * 2;
                real dA = daw[((size_t)b * T + t) * W + r];
                amp_pow_back(&dx[((size_t)b * T + u) * 2], &dx[((size_t)b * T + u) * 2 + 1], s[0], s[1], &dA, 1);
            }
}

#ifdef DPD_F64
const dpd_k64 dpd_k64_vdlstm = {fwd_f64, bwd_f64};
#else
/* Reference §3.5: the LSTM as OpenDPD's GRU/LSTM pattern (orthogonal per gate block, W_ih
 * Xavier per gate block, biases 0), linear layers Xavier with zero biases. */
static void init(const dpd_model_cfg *c, const dpd_tensor *t, float *p, dpd_rng *rng) {
    int H = c->hidden, n = layout(c, (dpd_tensor *)t);
    for (int i = 0; i < n; i++) memset(p + t[i].offset, 0, t[i].numel * sizeof *p);
    for (int q = 0; q < 4; q++) dpd_init_orthogonal(p + t[0].offset + (size_t)q * H * W, H, W, rng);
    for (int q = 0; q < 4; q++) dpd_init_orthogonal(p + t[1].offset + (size_t)q * H * H, H, H, rng);
    for (int q = 0; q < 4; q++) dpd_init_xavier(p + t[0].offset + (size_t)q * H * W, H, W, W, H, rng);
    dpd_init_xavier(p + t[4].offset, W, H, H, W, rng);
    dpd_init_xavier(p + t[6].offset, W, H, H, W, rng);
    dpd_init_xavier(p + t[8].offset, 2, 2 * W, 2 * W, 2, rng);
}

const dpd_family dpd_family_vdlstm = {
    .name = "vdlstm", .tag = "VDLSTM", .params = "4H^2+32H+26",
    .about = "vector-decomposed LSTM: LSTM on amplitude windows, phase-restored head", .hidden = 8,
    .max_layers = 1, .gated = 1, .layout = layout, .init = init, .ws_size = ws_size,
    .scratch_size = scratch_size, .forward = fwd_f32, .backward = bwd_f32};
#endif
