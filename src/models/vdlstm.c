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

/* Workspace: amplitude windows (B, T, 4); each sample's A, I/A and Q/A (three (B, T) planes); the
 * lambda layers' weights by input (H, 4) each; LSTM planes, cell tmp. */
static inline size_t ws_size(const kern_ops *kt, const dpd_model_cfg *c, int B, int T) {
    size_t bt = (size_t)B * T;
    return bt * (W + 3) + 2 * (size_t)W * c->hidden + rnn_lstm_saved(kt, W, c->hidden, B, T) +
           rnn_tmp_size(W, c->hidden, 4, T);
}
/* Scratch: dh (B, T, H), d windows (B, T, 4), the lambda layers' weight gradients by input (2, H,
 * 4), cell tmp. */
static inline size_t scratch_size(const kern_ops *kt, const dpd_model_cfg *c, int B, int T) {
    return (size_t)B * T * (c->hidden + W) + 2 * (size_t)W * c->hidden + rnn_tmp_size(W, c->hidden, 4, T);
}

static int row(int t, int r, int T) { return ((t - (W - 1) + r) % T + T) % T; }

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

/* The head works on the four window rows at once: lane r of a v4 is row r, and each lane does
 * the very operations the scalar head did (linear's dot(): four partial sums in a fixed order,
 * products then sums, for each output), so the bits are the same. */
typedef real v4 __attribute__((vector_size(W * sizeof(real))));
#define LD(p) ({ v4 v_; memcpy(&v_, (p), sizeof v_); v_; })

/* The planes of a sequence's polar features (A, I/A, Q/A; the ratios 0 at A = 0), and the lambda
 * layers' weights by input (l1t, l2t: (H, 4)). */
typedef struct polar_planes {
    const real *a, *ci, *cq, *l1t, *l2t;
} polar_planes;

/* *o, lane r: plane v at the window row r of step t (rows t-3..t, wrapped before the start).
 * (Vectors go by pointer: the double build's would change the ABI without AVX.) */
static void window(v4 *o, const real *v, int T, int t) {
    if (t >= W - 1) memcpy(o, v + t - (W - 1), sizeof *o);
    else
        for (int r = 0; r < W; r++) (*o)[r] = v[row(t, r, T)];
}

/* The head at step t of the sequence whose first sample is b0: lambda1 (l1) and lambda2 (l2) of
 * its hidden state h, and the head input (v1, v2) = (lambda1 * Iw/Aw, lambda2 * Qw/Aw). */
static void head_in(const parts *q, const polar_planes *pp, const real *h, size_t b0, int T, int t, int H, v4 *l1,
                    v4 *l2, v4 *v1, v4 *v2) {
    v4 s1[4] = {0}, s2[4] = {0};
    int j = 0;
    for (; j + 4 <= H; j += 4)
        for (int k = 0; k < 4; k++) {
            s1[k] += LD(pp->l1t + (size_t)(j + k) * W) * h[j + k];
            s2[k] += LD(pp->l2t + (size_t)(j + k) * W) * h[j + k];
        }
    for (; j < H; j++) s1[0] += LD(pp->l1t + (size_t)j * W) * h[j], s2[0] += LD(pp->l2t + (size_t)j * W) * h[j];
    *l1 = LD(q->b1) + ((s1[0] + s1[1]) + (s1[2] + s1[3]));
    *l2 = LD(q->b2) + ((s2[0] + s2[1]) + (s2[2] + s2[3]));
    v4 ci, cq;
    window(&ci, pp->ci + b0, T, t), window(&cq, pp->cq + b0, T, t);
    *v1 = *l1 * ci, *v2 = *l2 * cq;
}

/* dot() of a row of fc_out with (v1, v2): the partial sums k and k + 4 share lane k. */
static real out_row(const real *w, const v4 *v1, const v4 *v2) {
    v4 z = {0}, s = (z + LD(w) * *v1) + LD(w + W) * *v2;
    return (s[0] + s[1]) + (s[2] + s[3]);
}

/* The polar planes of x (B, T, 2) into ws, the amplitude windows aw, and the lambda weights by
 * input. */
static polar_planes polar_fill(const parts *q, const real *x, int B, int T, int H, real *aw, real *ws) {
    size_t bt = (size_t)B * T;
    real *a = ws, *ci = a + bt, *cq = ci + bt, *l1t = cq + bt, *l2t = l1t + (size_t)W * H;
    for (size_t i = 0; i < bt; i++) {
        const real *s = x + 2 * i;
        a[i] = amp(s[0], s[1]);
        ci[i] = a[i] > 0 ? s[0] / a[i] : 0, cq[i] = a[i] > 0 ? s[1] / a[i] : 0;
    }
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int r = 0; r < W; r++) aw[((size_t)b * T + t) * W + r] = a[(size_t)b * T + row(t, r, T)];
    transpose(l1t, q->w1, W, H);
    transpose(l2t, q->w2, W, H);
    return (polar_planes){a, ci, cq, l1t, l2t};
}

static polar_planes polar_of(const real *ws, int B, int T, int H) {
    size_t bt = (size_t)B * T;
    const real *a = ws, *ci = a + bt, *cq = ci + bt, *l1t = cq + bt;
    return (polar_planes){a, ci, cq, l1t, l1t + (size_t)W * H};
}

static void FN(fwd)(const kern_ops *kt, const dpd_model_cfg *c, const real *p, const real *x, int B, int T, real *y,
                    real *ws) {
    int H = c->hidden;
    size_t bt = (size_t)B * T;
    parts q = bind(c, p);
    real *aw = ws, *pw = aw + bt * W, *sv = pw + bt * 3 + 2 * (size_t)W * H, *tmp = sv + rnn_lstm_saved(kt, W, H, B, T);
    polar_planes pp = polar_fill(&q, x, B, T, H, aw, pw);
    FN(rnn_w) w = {W, H, q.wih, q.whh, q.bih, q.bhh, 0, 0, 0, kt};
    FN(rnn_lstm_fwd)(&w, B, T, aw, sv, tmp);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            size_t i = (size_t)b * T + t;
            v4 l1, l2, v1, v2;
            head_in(&q, &pp, sv + i * H, (size_t)b * T, T, t, H, &l1, &l2, &v1, &v2);
            for (int o = 0; o < 2; o++) y[2 * i + o] = q.bo[o] + out_row(q.wo + o * 2 * W, &v1, &v2);
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
    const real *aw = ws, *sv = aw + bt * W + bt * 3 + 2 * (size_t)W * H;
    polar_planes pp = polar_of(aw + bt * W, B, T, H);
    real *dh = scratch, *daw = dh + bt * H, *g1t = daw + bt * W, *g2t = g1t + (size_t)W * H, *tmp = g2t + (size_t)W * H;
    if (dx) memset(dx, 0, bt * 2 * sizeof *dx);
    memset(g1t, 0, 2 * (size_t)W * H * sizeof *g1t);
    /* the gradients of fc_out (2, 8) and of the lambda biases, summed sample by sample in the
     * scalar head's order, in lanes until the end */
    v4 go[2][2] = {{{0}}}, gb1 = {0}, gb2 = {0}, z = {0};
    real gbo[2] = {0, 0};
    for (int b = 0; b < B; b++) {
        const real *xb = x + (size_t)b * T * 2;
        for (int t = 0; t < T; t++) {
            size_t i = (size_t)b * T + t;
            const real *h = sv + i * H, *d = dy + 2 * i;
            v4 l1, l2, v1, v2;
            head_in(&q, &pp, h, (size_t)b * T, T, t, H, &l1, &l2, &v1, &v2);
            /* fc_out's backward: its weights' and bias's gradients, and dv */
            v4 dv1 = z, dv2 = z;
            for (int o = 0; o < 2; o++) {
                gbo[o] += d[o];
                go[o][0] += d[o] * v1, go[o][1] += d[o] * v2;
                dv1 += LD(q.wo + o * 2 * W) * d[o], dv2 += LD(q.wo + o * 2 * W + W) * d[o];
            }
            v4 ci, cq;
            window(&ci, pp.ci + (size_t)b * T, T, t), window(&cq, pp.cq + (size_t)b * T, T, t);
            v4 dl1 = dv1 * ci, dl2 = dv2 * cq;
            if (dx)
                for (int r = 0; r < W; r++) {
                    int u = row(t, r, T);
                    const real *s = xb + 2 * u;
                    real a = pp.a[(size_t)b * T + u];
                    if (a <= 0) continue;
                    real dci = dv1[r] * l1[r], dcq = dv2[r] * l2[r], a3 = a * a * a;
                    real *dd = dx + ((size_t)b * T + u) * 2;
                    dd[0] += dci * (s[1] * s[1] / a3) + dcq * (-s[0] * s[1] / a3);
                    dd[1] += dci * (-s[0] * s[1] / a3) + dcq * (s[0] * s[0] / a3);
                }
            /* the lambda layers' backward: weight gradients by input (lane r), and dh */
            gb1 += dl1, gb2 += dl2;
            for (int j = 0; j < H; j++) {
                real *a1 = g1t + (size_t)j * W, *a2 = g2t + (size_t)j * W;
                v4 u1 = LD(a1) + dl1 * h[j], u2 = LD(a2) + dl2 * h[j];
                memcpy(a1, &u1, sizeof u1), memcpy(a2, &u2, sizeof u2);
            }
            real *dhi = dh + i * H;
            for (int j = 0; j < H; j++) {
                real s = 0;
                for (int r = 0; r < W; r++) s += q.w1[(size_t)r * H + j] * dl1[r];
                for (int r = 0; r < W; r++) s += q.w2[(size_t)r * H + j] * dl2[r];
                dhi[j] = s;
            }
        }
    }
    for (int o = 0; o < 2; o++) {
        g[9][o] = gbo[o];
        memcpy(g[8] + o * 2 * W, &go[o][0], sizeof go[o][0]), memcpy(g[8] + o * 2 * W + W, &go[o][1], sizeof go[o][1]);
    }
    memcpy(g[5], &gb1, sizeof gb1), memcpy(g[7], &gb2, sizeof gb2);
    transpose(g[4], g1t, H, W);
    transpose(g[6], g2t, H, W);
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
