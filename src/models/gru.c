/* gru: OpenDPD's `gru` backbone (reference §3.1) — L stacked GRU layers on raw (I, Q), then a
 * linear head H -> 2. Gate rows r, z, n; both biases added for r and z; b_hn inside the reset
 * product:
 *   r = sig(W_ir x + b_ir + W_hr h + b_hr)     z = sig(W_iz x + b_iz + W_hz h + b_hz)
 *   g = W_hn h + b_hn                         n = tanh(W_in x + b_in + r * g)
 *   h' = (1 - z) * n + z * h                  y = W_out h_top + b_out
 * This file is compiled twice: as float (the library's reference kernel, suffix _f32) and with
 * DPD_F64 as double (suffix _f64) for gradient checks. Backward derivation:
 * docs/derivations/gru.md. Legend: B batch, T time, I input features (2, or H above layer 0),
 * H hidden, G = 3H gate rows. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gru.h"

#ifdef DPD_F64
typedef double real;
#define FN(n) n##_f64
#define EXP exp
#define TANH tanh
#else
typedef float real;
#define FN(n) n##_f32
#define EXP expf
#define TANH tanhf
#endif

typedef struct layer {
    const real *wih; /* (G, I) */
    const real *whh; /* (G, H) */
    const real *bih; /* (G) */
    const real *bhh; /* (G) */
} layer;

#define MAXL 16

/* Pointers into p in state-dict order: per layer W_ih, W_hh, b_ih, b_hh; then W_out, b_out. */
static const real *ptrs(const dpd_model_cfg *c, const real *p, layer *ly) {
    int H = c->hidden, G = 3 * H;
    for (int l = 0; l < c->layers; l++) {
        int I = l ? H : 2;
        ly[l].wih = p, p += (size_t)G * I;
        ly[l].whh = p, p += (size_t)G * H;
        ly[l].bih = p, p += G;
        ly[l].bhh = p, p += G;
    }
    return p; /* W_out (2, H), then b_out (2) */
}

static real sigm(real a) { return (real)1 / ((real)1 + EXP(-a)); }

static real dot(const real *a, const real *b, int n) {
    real s = 0;
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

/* Saved per layer: h, r, z, n, g, each (B, T, H). */
#define SAVED 5

#ifndef DPD_F64 /* precision-independent: defined once */
/* Workspace: the saved planes, then per layer W_ih^T (I, G) and W_hh^T (H, G) so the
 * matrix-vector products run along contiguous gate rows, then two gate vectors (G). */
size_t dpd_gru_ws_size(const dpd_model_cfg *c, int B, int T) {
    size_t H = (size_t)c->hidden, G = 3 * H, L = (size_t)c->layers;
    return (size_t)SAVED * L * B * T * H + G * (2 + H + (L - 1) * H + L * H) + 2 * G;
}

size_t dpd_gru_scratch_size(const dpd_model_cfg *c, int B, int T) {
    (void)B;
    int H = c->hidden;
    return 2 * (size_t)T * (H > 2 ? H : 2) + 5 * (size_t)H;
}
#endif

/* a[0..G) += W^T v where wt = W^T is (n, G): contiguous along the gate rows. */
static void gemv_t(real *a, const real *wt, const real *v, int n, int G) {
    for (int i = 0; i < n; i++) {
        real vi = v[i];
        const real *w = wt + (size_t)i * G;
        for (int q = 0; q < G; q++) a[q] += w[q] * vi;
    }
}

static void transpose(real *dst, const real *src, int rows, int cols) {
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) dst[(size_t)c * rows + r] = src[(size_t)r * cols + c];
}

void FN(dpd_gru_forward)(const dpd_model_cfg *c, const real *p, const real *x, int B, int T,
                         real *y, real *ws) {
    layer ly[MAXL];
    const real *wo = ptrs(c, p, ly), *bo = wo + 2 * c->hidden;
    int H = c->hidden, L = c->layers, G = 3 * H;
    size_t plane = (size_t)B * T * H; /* one saved (B, T, H) tensor */
    real *wt[MAXL][2], *tp = ws + (size_t)SAVED * L * plane;
    for (int l = 0; l < L; l++) {
        int I = l ? H : 2;
        wt[l][0] = tp, transpose(tp, ly[l].wih, G, I), tp += (size_t)G * I;
        wt[l][1] = tp, transpose(tp, ly[l].whh, G, H), tp += (size_t)G * H;
    }
    real *ai = tp, *ah = tp + G; /* (G) input and hidden contributions */
    for (int b = 0; b < B; b++) {
        for (int l = 0; l < L; l++) {
            real *hs = ws + (size_t)SAVED * l * plane, *rs = hs + plane, *zs = rs + plane,
                 *ns = zs + plane, *gs = ns + plane;
            const layer *w = &ly[l];
            int I = l ? H : 2;
            for (int t = 0; t < T; t++) {
                size_t o = ((size_t)b * T + t) * H;
                const real *xi = l ? ws + (size_t)SAVED * (l - 1) * plane + o
                                   : x + ((size_t)b * T + t) * 2;
                const real *hp = t ? hs + o - H : NULL;
                memcpy(ai, w->bih, (size_t)G * sizeof *ai);
                memcpy(ah, w->bhh, (size_t)G * sizeof *ah);
                gemv_t(ai, wt[l][0], xi, I, G);
                if (hp) gemv_t(ah, wt[l][1], hp, H, G);
                for (int j = 0; j < H; j++) {
                    real r = sigm(ai[j] + ah[j]), z = sigm(ai[H + j] + ah[H + j]);
                    real g = ah[2 * H + j], n = TANH(ai[2 * H + j] + r * g);
                    rs[o + j] = r, zs[o + j] = z, ns[o + j] = n, gs[o + j] = g;
                    hs[o + j] = (1 - z) * n + z * (hp ? hp[j] : 0);
                }
            }
        }
        const real *top = ws + (size_t)SAVED * (L - 1) * plane;
        for (int t = 0; t < T; t++) {
            size_t o = (size_t)b * T + t;
            for (int k = 0; k < 2; k++) y[o * 2 + k] = bo[k] + dot(wo + (size_t)k * H, top + o * H, H);
        }
    }
}

void FN(dpd_gru_backward)(const dpd_model_cfg *c, const real *p, const real *x, const real *dy,
                          int B, int T, const real *ws, real *scratch, real *dp, real *dx) {
    layer ly[MAXL], dl[MAXL];
    const real *wo = ptrs(c, p, ly);
    real *dwo = (real *)ptrs(c, dp, dl), *dbo = dwo + 2 * c->hidden;
    int H = c->hidden, L = c->layers, G = 3 * H;
    size_t plane = (size_t)B * T * H, nparam = (size_t)(dbo + 2 - dp);
    memset(dp, 0, nparam * sizeof *dp);
    int wmax = H > 2 ? H : 2;
    real *dup = scratch;                      /* (T, H) gradient arriving at this layer's h */
    real *ddown = scratch + (size_t)T * wmax; /* (T, I) gradient to pass to the layer below */
    real *dhn = ddown + (size_t)T * wmax;     /* (H) gradient from step t+1 */
    real *da = dhn + H;                       /* (G) = da_r, da_z, da_n */
    real *dg = da + G;                        /* (H) gradient of g = W_hn h + b_hn */
    for (int b = 0; b < B; b++) {
        const real *top = ws + (size_t)SAVED * (L - 1) * plane;
        for (int t = 0; t < T; t++) {
            size_t o = (size_t)b * T + t;
            const real *d = dy + o * 2;
            for (int k = 0; k < 2; k++) {
                dbo[k] += d[k];
                for (int j = 0; j < H; j++) dwo[k * H + j] += d[k] * top[o * H + j];
            }
            for (int j = 0; j < H; j++) dup[(size_t)t * H + j] = d[0] * wo[j] + d[1] * wo[H + j];
        }
        for (int l = L - 1; l >= 0; l--) {
            const real *hs = ws + (size_t)SAVED * l * plane, *rs = hs + plane, *zs = rs + plane,
                       *ns = zs + plane, *gs = ns + plane;
            const layer *w = &ly[l];
            layer *gw = &dl[l];
            real *gwih = (real *)gw->wih, *gwhh = (real *)gw->whh, *gbih = (real *)gw->bih,
                 *gbhh = (real *)gw->bhh;
            int I = l ? H : 2;
            memset(dhn, 0, (size_t)H * sizeof *dhn);
            for (int t = T - 1; t >= 0; t--) {
                size_t o = ((size_t)b * T + t) * H;
                const real *xi = l ? ws + (size_t)SAVED * (l - 1) * plane + o
                                   : x + ((size_t)b * T + t) * 2;
                const real *hp = t ? hs + o - H : NULL;
                for (int j = 0; j < H; j++) {
                    real dh = dup[(size_t)t * H + j] + dhn[j];
                    real r = rs[o + j], z = zs[o + j], n = ns[o + j], g = gs[o + j];
                    real hprev = hp ? hp[j] : 0;
                    real dan = dh * (1 - z) * (1 - n * n);
                    real daz = dh * (hprev - n) * z * (1 - z);
                    real dar = dan * g * r * (1 - r);
                    da[j] = dar, da[H + j] = daz, da[2 * H + j] = dan;
                    dg[j] = dan * r;
                    dhn[j] = dh * z; /* direct path; matrix paths added below */
                }
                for (int q = 0; q < G; q++) {
                    real dq = da[q], dhh = q < 2 * H ? dq : dg[q - 2 * H];
                    gbih[q] += dq;
                    gbhh[q] += dhh;
                    for (int i = 0; i < I; i++) gwih[(size_t)q * I + i] += dq * xi[i];
                    if (hp)
                        for (int i = 0; i < H; i++) gwhh[(size_t)q * H + i] += dhh * hp[i];
                }
                real *dd = ddown + (size_t)t * I; /* dx = W_ih^T da, row by row */
                memset(dd, 0, (size_t)I * sizeof *dd);
                for (int q = 0; q < G; q++) {
                    const real *wr = w->wih + (size_t)q * I;
                    for (int i = 0; i < I; i++) dd[i] += wr[i] * da[q];
                }
                for (int q = 0; q < G; q++) { /* dh += W_hh^T (da_r, da_z, dg) */
                    real dq = q < 2 * H ? da[q] : dg[q - 2 * H];
                    const real *wr = w->whh + (size_t)q * H;
                    for (int i = 0; i < H; i++) dhn[i] += wr[i] * dq;
                }
            }
            if (l) {
                real *tmp = dup;
                dup = ddown, ddown = tmp;
            } else if (dx) {
                memcpy(dx + (size_t)b * T * 2, ddown, (size_t)T * 2 * sizeof *dx);
            }
        }
        if (L % 2 == 0) { /* restore the buffer roles after an odd number of swaps */
            real *tmp = dup;
            dup = ddown, ddown = tmp;
        }
    }
}

#ifndef DPD_F64
#include "../family.h"
#include "../init.h"

static void tensor(dpd_tensor *e, size_t *off, const char *name, int d0, int d1) {
    snprintf(e->name, sizeof e->name, "%s", name);
    e->ndim = d1 ? 2 : 1, e->shape[0] = d0, e->shape[1] = d1;
    e->numel = (size_t)d0 * (size_t)(d1 ? d1 : 1);
    e->offset = *off;
    *off += e->numel;
}

static int gru_layout(const dpd_model_cfg *c, dpd_tensor *t) {
    int H = c->hidden, n = 0;
    size_t off = 0;
    char name[64];
    static const char *const kinds[4] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};
    for (int l = 0; l < c->layers; l++)
        for (int k = 0; k < 4; k++) {
            snprintf(name, sizeof name, "backbone.rnn.%s_l%d", kinds[k], l);
            tensor(&t[n++], &off, name, 3 * H, k == 0 ? (l ? H : 2) : k == 1 ? H : 0);
        }
    tensor(&t[n++], &off, "backbone.fc_out.weight", 2, H);
    tensor(&t[n++], &off, "backbone.fc_out.bias", 2, 0);
    return n;
}

/* Reference §3.1: biases 0; every weight matrix orthogonal per H-row gate block; then layer 0's
 * W_ih Xavier-uniform per gate block; head weight Xavier-uniform, head bias 0. */
static void gru_init(const dpd_model_cfg *c, const dpd_tensor *t, float *p, dpd_rng *rng) {
    int H = c->hidden, n = gru_layout(c, (dpd_tensor *)t);
    for (int i = 0; i < n; i++) memset(p + t[i].offset, 0, t[i].numel * sizeof *p);
    for (int l = 0; l < c->layers; l++) {
        const dpd_tensor *wih = &t[4 * l], *whh = &t[4 * l + 1];
        int I = wih->shape[1];
        for (int g = 0; g < 3; g++) dpd_init_orthogonal(p + wih->offset + (size_t)g * H * I, H, I, rng);
        for (int g = 0; g < 3; g++) dpd_init_orthogonal(p + whh->offset + (size_t)g * H * H, H, H, rng);
    }
    for (int g = 0; g < 3; g++) dpd_init_xavier(p + t[0].offset + (size_t)g * H * 2, H, 2, 2, H, rng);
    dpd_init_xavier(p + t[n - 2].offset, 2, H, H, 2, rng);
}

static void gru_forward(const dpd_model_cfg *c, const float *p, const float *x, int B, int T,
                        float *y, float *ws) {
    dpd_gru_forward_f32(c, p, x, B, T, y, ws);
}

static void gru_backward(const dpd_model_cfg *c, const float *p, const float *x, const float *dy,
                         int B, int T, const float *ws, float *scratch, float *dp, float *dx) {
    dpd_gru_backward_f32(c, p, x, dy, B, T, ws, scratch, dp, dx);
}

const dpd_family dpd_family_gru = {
    .name = "gru",
    .tag = "GRU",
    .layout = gru_layout,
    .init = gru_init,
    .ws_size = dpd_gru_ws_size,
    .scratch_size = dpd_gru_scratch_size,
    .forward = gru_forward,
    .backward = gru_backward,
};
#endif
