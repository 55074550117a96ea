/* recurrent: the stacked-RNN families — OpenDPD's `gru` and `lstm` (raw I, Q in, linear head
 * H -> 2), `dgru` (6 features (I, Q, A, A^3, Q/A, I/A) in, head W_out [ReLU(W_hid h + b_hid); f])
 * and `deltagru` at zero thresholds (6 features, GRU, linear head). Reference §3.1-§3.3, §3.7.
 * Compiled twice (see family.h). Legend: B batch, T time, F features, H hidden, G gate rows,
 * L layers, P saved planes per layer. */
#include <stdio.h>

#include "../kern/kern.h"
#include "../family.h"
#include "../init.h"
#include "rnn.h"

typedef enum { CELL_GRU, CELL_LSTM } cell_kind;

typedef struct variant {
    cell_kind cell;
    int feats;     /* 2: raw I, Q; 6: feat_dgru */
    int dgru_head; /* 1: u = ReLU(W_hid h + b_hid), y = W_out [u; f] + b_out */
    int delta;     /* DeltaGRU cell with the configuration's thresholds */
} variant;

static const variant V_GRU = {CELL_GRU, 2, 0, 0}, V_LSTM = {CELL_LSTM, 2, 0, 0},
                     V_DGRU = {CELL_GRU, 6, 1, 0}, V_DELTA = {CELL_GRU, 6, 0, 1};

static const variant *variant_of(const dpd_model_cfg *c) {
    return !strcmp(c->family, "lstm") ? &V_LSTM
         : !strcmp(c->family, "dgru") ? &V_DGRU
         : !strcmp(c->family, "deltagru") ? &V_DELTA : &V_GRU;
}

static int gates(const variant *v) { return v->cell == CELL_LSTM ? 4 : 3; }

/* The heads run through the fast dense kernel for chunks the fast kernels take; not DeltaGRU's,
 * whose fast path is exact (its layer's, src/kern/delta.c, and the reference head). */
static inline int fast_head(const kern_ops *kt, const variant *v, int B) { return kern_fast(kt, B) && !v->delta; }

/* A layer's scratch with I inputs. */
static size_t cell_tmp(const kern_ops *kt, const variant *v, int I, int H, int T) {
    return v->cell == CELL_LSTM ? rnn_tmp_size(I, H, 4, T) : rnn_gru_tmp(kt, I, H, v->delta, T);
}

/* Reals one layer saves; h is first, so the layer above reads it at the layer's start. */
static size_t saved(const kern_ops *kt, const dpd_model_cfg *c, const variant *v, int l, int B, int T) {
    int I = l ? c->hidden : v->feats;
    return v->cell == CELL_LSTM ? rnn_lstm_saved(kt, I, c->hidden, B, T) : rnn_gru_saved(kt, I, c->hidden, v->delta, B, T);
}

static int layout(const dpd_model_cfg *c, dpd_tensor *t) {
    const variant *v = variant_of(c);
    int H = c->hidden, G = gates(v) * H, n = 0;
    size_t off = 0;
    char name[64];
    static const char *const kinds[4] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};
    for (int l = 0; l < c->layers; l++)
        for (int k = 0; k < 4; k++) {
            snprintf(name, sizeof name, "backbone.rnn.%s_l%d", kinds[k], l);
            dpd_tensor_add(t, &n, &off, name, G, k == 0 ? (l ? H : v->feats) : k == 1 ? H : 0, 0, 0);
        }
    dpd_tensor_add(t, &n, &off, "backbone.fc_out.weight", 2, H + (v->dgru_head ? v->feats : 0), 0, 0);
    dpd_tensor_add(t, &n, &off, "backbone.fc_out.bias", 2, 0, 0, 0);
    if (v->dgru_head) {
        dpd_tensor_add(t, &n, &off, "backbone.fc_hid.weight", H, H, 0, 0);
        dpd_tensor_add(t, &n, &off, "backbone.fc_hid.bias", H, 0, 0, 0);
    }
    return n;
}

/* Parameter pointers: cells, head output, and (dgru) hidden head. */
typedef struct net {
    FN(rnn_w) w[16];
    const real *wo, *bo, *wh, *bh;
} net;

static void bind(const kern_ops *kt, const dpd_model_cfg *c, const real *p, net *n, FN(rnn_g) *g, real *gp) {
    dpd_tensor t[DPD_MAX_TENSORS];
    int nt = layout(c, t), H = c->hidden;
    for (int l = 0; l < c->layers; l++) {
        const dpd_tensor *e = &t[4 * l];
        n->w[l] = (FN(rnn_w)){e[0].shape[1], H, p + e[0].offset, p + e[1].offset, p + e[2].offset, p + e[3].offset,
                              variant_of(c)->delta, (real)c->thx, (real)c->thh, kt};
        if (g) g[l] = (FN(rnn_g)){gp + e[0].offset, gp + e[1].offset, gp + e[2].offset, gp + e[3].offset};
    }
    int h = 4 * c->layers;
    n->wo = p + t[h].offset, n->bo = p + t[h + 1].offset;
    n->wh = nt > h + 2 ? p + t[h + 2].offset : NULL;
    n->bh = nt > h + 2 ? p + t[h + 3].offset : NULL;
}

/* v = ReLU(v), copied to cat, n values (DGRU's hidden head); branch-free, so that it vectorises (a
 * branch on a sign is a coin toss for the predictor). */
static inline void relu(real *v, real *cat, size_t n) {
    for (size_t j = 0; j < n; j++) {
        real r = v[j] > 0 ? v[j] : 0;
        v[j] = r, cat[j] = r;
    }
}

/* out = d where v > 0, else 0: ReLU's backward, branch-free (vectorised where out is not d; d is
 * read whatever v is, or the read would be conditional and keep the branch). */
static inline void relu_back(real *out, const real *v, const real *d, size_t n) {
    for (size_t j = 0; j < n; j++) {
        real g = d[j];
        out[j] = v[j] > 0 ? g : 0;
    }
}

/* The single-layer GRU on raw I/Q with its linear head runs as one fused fast kernel. */
static inline int fused(const kern_ops *kt, const dpd_model_cfg *c, const variant *v, int B) {
    return fast_head(kt, v, B) && v->cell == CELL_GRU && v->feats == 2 && !v->dgru_head && !v->delta && c->layers == 1;
}

/* Dense-kernel scratch for the head (0 when the reference path runs). */
static size_t head_tmp(const kern_ops *kt, const dpd_model_cfg *c, const variant *v, int B, int T) {
    int H = c->hidden;
    return fast_head(kt, v, B) ? kern_lin_tmp(H + 6, H + 6, B * T) : 0;
}

/* Workspace: features (B, T, F) when F != 2, L x P planes, head u (B, T, H) and [u; f]
 * (B, T, H + 6), then cell and head tmp. */
static inline size_t ws_size(const kern_ops *kt, const dpd_model_cfg *c, int B, int T) {
    const variant *v = variant_of(c);
    size_t bt = (size_t)B * T, H = (size_t)c->hidden, in = H > (size_t)v->feats ? H : (size_t)v->feats;
    size_t sv = 0, t1 = cell_tmp(kt, v, (int)in, (int)H, T), t2 = head_tmp(kt, c, v, B, T);
    for (int l = 0; l < c->layers; l++) sv += saved(kt, c, v, l, B, T);
    return bt * (v->feats + 2 * H + 6) + sv + (t1 > t2 ? t1 : t2);
}

/* Scratch: two (B, T, max(H, F)) gradient buffers, head gradients (B, T, H + 6) and (B, T, H),
 * head input (H + F) and its gradient, then cell and head tmp. */
static inline size_t scratch_size(const kern_ops *kt, const dpd_model_cfg *c, int B, int T) {
    const variant *v = variant_of(c);
    size_t bt = (size_t)B * T, H = (size_t)c->hidden, w = H > (size_t)v->feats ? H : (size_t)v->feats;
    size_t t1 = cell_tmp(kt, v, (int)w, (int)H, T), t2 = head_tmp(kt, c, v, B, T);
    return 2 * bt * w + bt * v->feats + bt * (2 * H + 6) + 2 * (H + v->feats) + (t1 > t2 ? t1 : t2);
}

typedef struct parts { /* workspace carving */
    real *feat, *sv, *u, *cat, *tmp;
} parts;

static parts carve(const kern_ops *kt, const dpd_model_cfg *c, const variant *v, real *ws, int B, int T) {
    size_t bt = (size_t)B * T, sv = 0;
    for (int l = 0; l < c->layers; l++) sv += saved(kt, c, v, l, B, T);
    parts s;
    s.feat = ws;
    s.sv = s.feat + bt * v->feats;
    s.u = s.sv + sv;
    s.cat = s.u + bt * c->hidden;
    s.tmp = s.cat + bt * (c->hidden + 6);
    return s;
}

/* Layer l's saved planes. */
static real *layer_sv(const kern_ops *kt, const dpd_model_cfg *c, const variant *v, const parts *s, int l, int B, int T) {
    real *p = s->sv;
    for (int i = 0; i < l; i++) p += saved(kt, c, v, i, B, T);
    return p;
}

/* Forward; ring: an inference (family.h), whose fused GRU keeps two steps of its saved planes. */
static void FN(run)(const kern_ops *kt, const dpd_model_cfg *c, const real *p, const real *x, int B, int T, real *y,
                    real *ws, int ring) {
    const variant *v = variant_of(c);
    net n;
    bind(kt, c, p, &n, NULL, NULL);
    parts s = carve(kt, c, v, ws, B, T);
    size_t bt = (size_t)B * T, H = (size_t)c->hidden;
    const real *in = x;
    if (v->feats == 6) {
        for (size_t i = 0; i < bt; i++) feat_dgru(s.feat + 6 * i, x[2 * i], x[2 * i + 1]);
        in = s.feat;
    }
#ifndef DPD_F64
    if (fused(kt, c, v, B)) {
        kgru kg = {2, (int)H, n.w[0].wih, n.w[0].whh, n.w[0].bih, n.w[0].bhh, NULL, NULL, NULL, NULL,
                  n.wo, n.bo, NULL, NULL, y, ring};
        kt->gru_fwd(&kg, B, T, x, s.sv, s.tmp);
        return;
    }
#endif
    for (int l = 0; l < c->layers; l++) {
        real *sv = layer_sv(kt, c, v, &s, l, B, T);
        if (v->cell == CELL_GRU) FN(rnn_gru_fwd)(&n.w[l], B, T, in, sv, s.tmp);
        else FN(rnn_lstm_fwd)(&n.w[l], B, T, in, sv, s.tmp);
        in = sv; /* h is the first plane */
    }
#ifndef DPD_F64
    if (fast_head(kt, v, B)) { /* the same head as below, as dense layers over all B T samples */
        if (!v->dgru_head) {
            kt->lin_fwd(n.wo, n.bo, 2, (int)H, (int)bt, in, y, s.tmp);
            return;
        }
        kt->lin_fwd(n.wh, n.bh, (int)H, (int)H, (int)bt, in, s.u, s.tmp);
        for (size_t i = 0; i < bt; i++) {
            real *u = s.u + i * H, *cv = s.cat + i * (H + 6);
            relu(u, cv, H);
            memcpy(cv + H, s.feat + 6 * i, 6 * sizeof *cv);
        }
        kt->lin_fwd(n.wo, n.bo, 2, (int)H + 6, (int)bt, s.cat, y, s.tmp);
        return;
    }
#endif
    for (size_t i = 0; i < bt; i++) {
        const real *h = in + i * H;
        if (!v->dgru_head) {
            linear(y + 2 * i, n.wo, n.bo, h, 2, (int)H);
            continue;
        }
        real *u = s.u + i * H, cat[4096 + 6];
        linear(u, n.wh, n.bh, h, (int)H, (int)H);
        relu(u, cat, H);
        memcpy(cat + H, s.feat + 6 * i, 6 * sizeof *cat);
        linear(y + 2 * i, n.wo, n.bo, cat, 2, (int)H + 6);
    }
}

static void FN(fwd)(const kern_ops *kt, const dpd_model_cfg *c, const real *p, const real *x, int B, int T, real *y,
                    real *ws) {
    FN(run)(kt, c, p, x, B, T, y, ws, 0);
}

static void FN(bwd)(const kern_ops *kt, const dpd_model_cfg *c, const real *p, const real *x, const real *dy, int B,
                    int T, const real *ws, real *scratch, real *dp, real *dx) {
    const variant *v = variant_of(c);
    net n;
    FN(rnn_g) g[16];
    dpd_tensor t[DPD_MAX_TENSORS];
    int nt = layout(c, t);
    memset(dp, 0, (t[nt - 1].offset + t[nt - 1].numel) * sizeof *dp);
    bind(kt, c, p, &n, g, dp);
    int h = 4 * c->layers;
    real *gwo = dp + t[h].offset, *gbo = dp + t[h + 1].offset;
    real *gwh = v->dgru_head ? dp + t[h + 2].offset : NULL, *gbh = v->dgru_head ? dp + t[h + 3].offset : NULL;
    parts s = carve(kt, c, v, (real *)ws, B, T);
    size_t bt = (size_t)B * T, H = (size_t)c->hidden, plane = bt * H, F = (size_t)v->feats;
    size_t w = H > F ? H : F;
    real *d0 = scratch, *d1 = d0 + bt * w, *dfh = d1 + bt * w, *dca = dfh + bt * F, *du = dca + bt * (H + 6);
    real *cat = du + bt * H, *dcat = cat + H + F, *tmp = dcat + H + F;
    const real *top = layer_sv(kt, c, v, &s, c->layers - 1, B, T);
#ifndef DPD_F64
    if (fused(kt, c, v, B)) {
        kgru kg = {2, (int)H, n.w[0].wih, n.w[0].whh, n.w[0].bih, n.w[0].bhh, g[0].wih, g[0].whh, g[0].bih, g[0].bhh,
                  n.wo, n.bo, gwo, gbo, NULL};
        kt->gru_bwd(&kg, B, T, x, s.sv, dy, dx, tmp);
        return;
    }
#endif
    memset(d0, 0, plane * sizeof *d0);
    memset(dfh, 0, bt * F * sizeof *dfh);
#ifndef DPD_F64
    if (fast_head(kt, v, B)) { /* the head below as dense layers over all B T samples */
        if (!v->dgru_head) {
            kt->lin_bwd(n.wo, 2, (int)H, (int)bt, top, dy, d0, gwo, gbo, tmp);
        } else {
            memset(dca, 0, bt * (H + 6) * sizeof *dca);
            kt->lin_bwd(n.wo, 2, (int)H + 6, (int)bt, s.cat, dy, dca, gwo, gbo, tmp);
            for (size_t i = 0; i < bt; i++) {
                relu_back(du + i * H, s.u + i * H, dca + i * (H + 6), H);
                memcpy(dfh + 6 * i, dca + i * (H + 6) + H, 6 * sizeof *dfh);
            }
            kt->lin_bwd(n.wh, (int)H, (int)H, (int)bt, top, du, d0, gwh, gbh, tmp);
        }
    } else
#endif
    for (size_t i = 0; i < bt; i++) {
        if (!v->dgru_head) {
            linear_back(d0 + i * H, gwo, gbo, n.wo, top + i * H, dy + 2 * i, 2, (int)H);
            continue;
        }
        const real *u = s.u + i * H;
        memcpy(cat, u, H * sizeof *cat);
        memcpy(cat + H, s.feat + 6 * i, 6 * sizeof *cat);
        memset(dcat, 0, (H + 6) * sizeof *dcat);
        linear_back(dcat, gwo, gbo, n.wo, cat, dy + 2 * i, 2, (int)H + 6);
        relu_back(dcat, u, dcat, H);
        linear_back(d0 + i * H, gwh, gbh, n.wh, top + i * H, dcat, (int)H, (int)H);
        memcpy(dfh + 6 * i, dcat + H, 6 * sizeof *dfh);
    }
    for (int l = c->layers - 1; l >= 0; l--) {
        const real *sv = layer_sv(kt, c, v, &s, l, B, T);
        const real *in = l ? layer_sv(kt, c, v, &s, l - 1, B, T) : F == 6 ? s.feat : x;
        real *dout = l ? d1 : F == 6 ? d1 : dx;
        if (v->cell == CELL_GRU) FN(rnn_gru_bwd)(&n.w[l], &g[l], B, T, in, sv, d0, dout, tmp);
        else FN(rnn_lstm_bwd)(&n.w[l], &g[l], B, T, in, sv, d0, dout, tmp);
        real *sw = d0;
        d0 = d1, d1 = sw; /* the gradient at this layer's input feeds the layer below */
    }
    if (F == 6 && dx)
        for (size_t i = 0; i < bt; i++) {
            real df[6];
            for (int k = 0; k < 6; k++) df[k] = d0[6 * i + k] + dfh[6 * i + k];
            dx[2 * i] = dx[2 * i + 1] = 0;
            feat_dgru_back(&dx[2 * i], &dx[2 * i + 1], x[2 * i], x[2 * i + 1], df);
        }
}

#ifdef DPD_F64
const dpd_k64 dpd_k64_recurrent = {fwd_f64, bwd_f64};
#else
/* Reference §3.1: biases 0; every weight matrix orthogonal per H-row gate block; then layer 0's
 * W_ih Xavier-uniform per gate block; head Xavier (DGRU's W_hid Kaiming-uniform, bound
 * sqrt(6/H)). */
static void init(const dpd_model_cfg *c, const dpd_tensor *t, float *p, dpd_rng *rng) {
    const variant *v = variant_of(c);
    int H = c->hidden, nG = gates(v), n = layout(c, (dpd_tensor *)t);
    for (int i = 0; i < n; i++) memset(p + t[i].offset, 0, t[i].numel * sizeof *p);
    for (int l = 0; l < c->layers; l++)
        for (int k = 0; k < 2; k++) {
            const dpd_tensor *e = &t[4 * l + k];
            int I = e->shape[1];
            for (int q = 0; q < nG; q++) dpd_init_orthogonal(p + e->offset + (size_t)q * H * I, H, I, rng);
        }
    for (int q = 0; q < nG; q++)
        dpd_init_xavier(p + t[0].offset + (size_t)q * H * v->feats, H, v->feats, v->feats, H, rng);
    const dpd_tensor *wo = &t[4 * c->layers];
    dpd_init_xavier(p + wo->offset, 2, wo->shape[1], wo->shape[1], 2, rng);
    if (v->dgru_head) dpd_init_uniform(p + t[4 * c->layers + 2].offset, (size_t)H * H, sqrt(6.0 / H), rng);
}

static void infer(const kern_ops *kt, const dpd_model_cfg *c, const float *p, const float *x, int B, int T, float *y,
                  float *ws) {
    run_f32(kt, c, p, x, B, T, y, ws, 1);
}

/* DeltaGRU statistics of the last forward: see family.h. */
static size_t delta_zeros(const dpd_model_cfg *c, const float *ws, int B, int T, long long *z) {
    const variant *v = variant_of(c);
    int H = c->hidden;
    FN(rnn_w) w = {v->feats, H, NULL, NULL, NULL, NULL, 1, (real)c->thx, (real)c->thh};
    parts s = carve(NULL, c, v, (real *)ws, B, T);
    long long zz[2] = {0, 0};
    FN(rnn_delta_zeros)(&w, B, T, s.sv, zz);
    z[0] += zz[0], z[1] += (long long)B * T * v->feats, z[2] += zz[1], z[3] += (long long)B * T * H;
    return (size_t)3 * H * (v->feats + H);
}

#define RECURRENT(id, tg, formula, text, maxl, gt, dz)                                         \
    const dpd_family dpd_family_##id = {.name = #id, .tag = tg, .params = formula, .about = text, \
                                        .hidden = 23, .max_layers = maxl, .layout = layout,     \
                                        .gated = gt, .init = init, .ws_size = ws_size,          \
                                        .scratch_size = scratch_size, .forward = fwd_f32,       \
                                        .infer = infer, .backward = bwd_f32, .delta_zeros = dz}
RECURRENT(gru, "GRU", "3H^2+14H+2 (+6H^2+6H per extra layer)", "GRU on raw I/Q, linear head", 16, 1, NULL);
RECURRENT(lstm, "LSTM", "4H^2+18H+2 (+8H^2+8H per extra layer)", "LSTM on raw I/Q, linear head", 16, 1, NULL);
RECURRENT(dgru, "DGRU", "4H^2+27H+14 (+6H^2+6H per extra layer)",
          "GRU on (I,Q,A,A^3,sin,cos), head on [ReLU(W h); features]", 16, 1, NULL);
RECURRENT(deltagru, "DELTAGRU", "3H^2+26H+2",
          "DeltaGRU on 6 features, delta thresholds thx/thh (DeltaDPD)", 1, 0, delta_zeros); /* kdelta: any B */
#endif
