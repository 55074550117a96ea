/* janet: OpenDPDv2's JANET baselines (reference §3.10), one recurrent layer each.
 *   pgjanet:  a = tanh(W_a [h; A] + b), p1 = tanh(W_p1 [h; cos] + b), p2 = tanh(W_p2 [h; sin] + b),
 *             u = a p1 p2 (1 - a)(1 - p1)(1 - p2), f = sig(W_f [h; u] + b), g = tanh(W_g [h; u] + b),
 *             h' = f h + (1 - f) g, y = W_o h' + b.
 *   dvrjanet: with s = h_I + h_Q: th = W_pth theta + W_ph s, v = W_ax A + W_ah s,
 *             at = sum_k c_k |v - k/K|, f = sig(W_f s + b), gc = tanh(W_ccos [h_I; at cos th] + b),
 *             gs = tanh(W_csin [h_Q; at sin th] + b), h_I' = f h_I + (1 - f) gc, likewise h_Q',
 *             y = (W_o1 h_I' + b, W_o2 h_Q' + b).
 * cos, sin = I/A, Q/A and theta = atan2(Q, I), all 0 at A = 0 (reference §13). Compiled twice
 * (see family.h). Legend: B batch, T time, H hidden, K DVR units. */
#include <stdio.h>

#include "../family.h"
#include "../init.h"
#include "../kern/kern.h"
#include "nn.h"

static int is_dvr(const dpd_model_cfg *c) { return !strcmp(c->family, "dvrjanet"); }
static int units(const dpd_model_cfg *c) { return c->units ? c->units : 3; }

static inline int layout(const dpd_model_cfg *c, dpd_tensor *t) {
    int H = c->hidden, n = 0;
    size_t off = 0;
    if (!is_dvr(c)) {
        static const char *const w[5] = {"W_a", "W_p1", "W_p2", "W_f", "W_g"};
        char name[64];
        for (int k = 0; k < 5; k++) {
            snprintf(name, sizeof name, "backbone.%s.weight", w[k]);
            dpd_tensor_add(t, &n, &off, name, H, k < 3 ? H + 1 : 2 * H, 0, 0);
            snprintf(name, sizeof name, "backbone.%s.bias", w[k]);
            dpd_tensor_add(t, &n, &off, name, H, 0, 0, 0);
        }
        dpd_tensor_add(t, &n, &off, "backbone.W_o.weight", 2, H, 0, 0);
        dpd_tensor_add(t, &n, &off, "backbone.W_o.bias", 2, 0, 0, 0);
        return n;
    }
    dpd_tensor_add(t, &n, &off, "backbone.cs", units(c), 0, 0, 0);
    dpd_tensor_add(t, &n, &off, "backbone.W_ph.weight", H, H, 0, 0);
    dpd_tensor_add(t, &n, &off, "backbone.W_p\u03b8.weight", H, 1, 0, 0);
    dpd_tensor_add(t, &n, &off, "backbone.W_ah.weight", H, H, 0, 0);
    dpd_tensor_add(t, &n, &off, "backbone.W_ax.weight", H, 1, 0, 0);
    dpd_tensor_add(t, &n, &off, "backbone.W_f.weight", H, H, 0, 0);
    dpd_tensor_add(t, &n, &off, "backbone.W_f.bias", H, 0, 0, 0);
    dpd_tensor_add(t, &n, &off, "backbone.W_ccos.weight", H, 2 * H, 0, 0);
    dpd_tensor_add(t, &n, &off, "backbone.W_ccos.bias", H, 0, 0, 0);
    dpd_tensor_add(t, &n, &off, "backbone.W_csin.weight", H, 2 * H, 0, 0);
    dpd_tensor_add(t, &n, &off, "backbone.W_csin.bias", H, 0, 0, 0);
    dpd_tensor_add(t, &n, &off, "backbone.W_o1.weight", 1, H, 0, 0);
    dpd_tensor_add(t, &n, &off, "backbone.W_o1.bias", 1, 0, 0, 0);
    dpd_tensor_add(t, &n, &off, "backbone.W_o2.weight", 1, H, 0, 0);
    dpd_tensor_add(t, &n, &off, "backbone.W_o2.bias", 1, 0, 0, 0);
    return n;
}

/* The family's exact fast path of table kt (src/kern/janet.c); NULL: the reference below. */
static inline const kfam *exact(const kern_ops *kt, const dpd_model_cfg *c) {
    return is_dvr(c) ? KERN_EXACT(kt, dvrjanet) : KERN_EXACT(kt, pgjanet);
}

/* Saved per step, in units of H: pgjanet h, a, p1, p2, u, f, g (7); dvrjanet h_I, h_Q, th, v,
 * at, f, gc, gs (8). With fast kernels, their exact path runs and says the sizes. */
static int saved(const dpd_model_cfg *c) { return is_dvr(c) ? 8 : 7; }
static inline size_t ws_size(const kern_ops *kt, const dpd_model_cfg *c, int B, int T) {
    const kfam *e = exact(kt, c);
    return e ? e->ws_size(c, B, T) : (size_t)B * T * saved(c) * c->hidden + 4 * (size_t)c->hidden;
}
static inline size_t scratch_size(const kern_ops *kt, const dpd_model_cfg *c, int B, int T) {
    const kfam *e = exact(kt, c);
    return e ? e->scratch_size(c, B, T) : 16 * (size_t)c->hidden;
}

/* [h; extra] as one vector for the gate products. */
static void cat(real *v, const real *h, const real *e, int H, int ne) {
    memcpy(v, h, (size_t)H * sizeof *v);
    memcpy(v + H, e, (size_t)ne * sizeof *v);
}

static void pg_fwd(const dpd_model_cfg *c, const real *p, const real *x, int B, int T, real *y, real *ws) {
    dpd_tensor t[DPD_MAX_TENSORS];
    layout(c, t);
    int H = c->hidden;
    const real *P[12];
    for (int k = 0; k < 12; k++) P[k] = p + t[k].offset;
    real *v = ws + (size_t)B * T * 7 * H, zero[4096] = {0};
    for (int b = 0; b < B; b++)
        for (int s = 0; s < T; s++) {
            size_t i = (size_t)b * T + s;
            real *sv = ws + i * 7 * H, *h = sv, *a = h + H, *p1 = a + H, *p2 = p1 + H, *u = p2 + H, *f = u + H, *g = f + H;
            const real *hp = s ? sv - 7 * H : zero;
            real A, co, si;
            polar(x + 2 * i, &A, &co, &si, NULL);
            cat(v, hp, &A, H, 1);
            linear(a, P[0], P[1], v, H, H + 1);
            v[H] = co;
            linear(p1, P[2], P[3], v, H, H + 1);
            v[H] = si;
            linear(p2, P[4], P[5], v, H, H + 1);
            for (int j = 0; j < H; j++) {
                a[j] = TANH(a[j]), p1[j] = TANH(p1[j]), p2[j] = TANH(p2[j]);
                u[j] = a[j] * p1[j] * p2[j] * (1 - a[j]) * (1 - p1[j]) * (1 - p2[j]);
            }
            cat(v, hp, u, H, H);
            linear(f, P[6], P[7], v, H, 2 * H);
            linear(g, P[8], P[9], v, H, 2 * H);
            for (int j = 0; j < H; j++) {
                f[j] = sigm(f[j]), g[j] = TANH(g[j]);
                h[j] = f[j] * hp[j] + (1 - f[j]) * g[j];
            }
            linear(y + 2 * i, P[10], P[11], h, 2, H);
        }
}

static void pg_bwd(const dpd_model_cfg *c, const real *p, const real *x, const real *dy, int B, int T,
                   const real *ws, real *sc, real *dp, real *dx) {
    dpd_tensor t[DPD_MAX_TENSORS];
    int nt = layout(c, t), H = c->hidden;
    memset(dp, 0, (t[nt - 1].offset + t[nt - 1].numel) * sizeof *dp);
    const real *P[12];
    real *G[12];
    for (int k = 0; k < 12; k++) P[k] = p + t[k].offset, G[k] = dp + t[k].offset;
    real *dh = sc, *dnext = dh + H, *v = dnext + H, *dv = v + 2 * H, *d1 = dv + 2 * H, *d2 = d1 + H, *d3 = d2 + H,
         *du = d3 + H, zero[4096] = {0};
    if (dx) memset(dx, 0, (size_t)B * T * 2 * sizeof *dx);
    for (int b = 0; b < B; b++) {
        memset(dnext, 0, (size_t)H * sizeof *dnext);
        for (int s = T - 1; s >= 0; s--) {
            size_t i = (size_t)b * T + s;
            const real *sv = ws + i * 7 * H, *h = sv, *a = h + H, *p1 = a + H, *p2 = p1 + H, *u = p2 + H,
                       *f = u + H, *g = f + H, *hp = s ? sv - 7 * H : zero;
            real A, co, si;
            polar(x + 2 * i, &A, &co, &si, NULL);
            memcpy(dh, dnext, (size_t)H * sizeof *dh);
            linear_back(dh, G[10], G[11], P[10], h, dy + 2 * i, 2, H);
            memset(dnext, 0, (size_t)H * sizeof *dnext);
            real df[4096], dg[4096];
            for (int j = 0; j < H; j++) {
                dnext[j] = dh[j] * f[j];
                df[j] = dh[j] * (hp[j] - g[j]) * f[j] * (1 - f[j]);
                dg[j] = dh[j] * (1 - f[j]) * (1 - g[j] * g[j]);
            }
            cat(v, hp, u, H, H);
            memset(dv, 0, 2 * (size_t)H * sizeof *dv);
            linear_back(dv, G[6], G[7], P[6], v, df, H, 2 * H);
            linear_back(dv, G[8], G[9], P[8], v, dg, H, 2 * H);
            for (int j = 0; j < H; j++) {
                dnext[j] += dv[j];
                du[j] = dv[H + j];
                real aa = a[j], q1 = p1[j], q2 = p2[j];
                real ra = q1 * q2 * (1 - q1) * (1 - q2), r1 = aa * q2 * (1 - aa) * (1 - q2), r2 = aa * q1 * (1 - aa) * (1 - q1);
                d1[j] = du[j] * ra * (1 - 2 * aa) * (1 - aa * aa); /* through a = tanh, u = a(1-a) ... */
                d2[j] = du[j] * r1 * (1 - 2 * q1) * (1 - q1 * q1);
                d3[j] = du[j] * r2 * (1 - 2 * q2) * (1 - q2 * q2);
            }
            real dA = 0, dco = 0, dsi = 0;
            const real *gi[3] = {d1, d2, d3};
            real ex[3] = {A, co, si}, *de[3] = {&dA, &dco, &dsi};
            for (int k = 0; k < 3; k++) {
                cat(v, hp, &ex[k], H, 1);
                memset(dv, 0, (size_t)(H + 1) * sizeof *dv);
                linear_back(dv, G[2 * k], G[2 * k + 1], P[2 * k], v, gi[k], H, H + 1);
                for (int j = 0; j < H; j++) dnext[j] += dv[j];
                *de[k] = dv[H];
            }
            if (dx) polar_back(x + 2 * i, dA, dco, dsi, 0, dx + 2 * i);
        }
    }
}

static void dvr_fwd(const dpd_model_cfg *c, const real *p, const real *x, int B, int T, real *y, real *ws) {
    dpd_tensor t[DPD_MAX_TENSORS];
    layout(c, t);
    int H = c->hidden, K = units(c);
    const real *P[15];
    for (int k = 0; k < 15; k++) P[k] = p + t[k].offset;
    real *v = ws + (size_t)B * T * 8 * H, *sum = v + 2 * H, zero[4096] = {0};
    for (int b = 0; b < B; b++)
        for (int s = 0; s < T; s++) {
            size_t i = (size_t)b * T + s;
            real *sv = ws + i * 8 * H, *hI = sv, *hQ = hI + H, *thh = hQ + H, *vv = thh + H, *at = vv + H,
                 *f = at + H, *gc = f + H, *gs = gc + H;
            const real *pI = s ? sv - 8 * H : zero, *pQ = s ? sv - 7 * H : zero;
            real A, co, si, th;
            polar(x + 2 * i, &A, &co, &si, &th);
            for (int j = 0; j < H; j++) sum[j] = pI[j] + pQ[j];
            linear(thh, P[1], NULL, sum, H, H);
            linear(vv, P[3], NULL, sum, H, H);
            linear(f, P[5], P[6], sum, H, H);
            for (int j = 0; j < H; j++) {
                thh[j] += P[2][j] * th, vv[j] += P[4][j] * A;
                real acc = 0;
                for (int k = 1; k <= K; k++) acc += P[0][k - 1] * FABS(vv[j] - (real)k / K);
                at[j] = acc, f[j] = sigm(f[j]);
            }
            for (int j = 0; j < H; j++) v[H + j] = at[j] * (real)cos(thh[j]);
            memcpy(v, pI, (size_t)H * sizeof *v);
            linear(gc, P[7], P[8], v, H, 2 * H);
            for (int j = 0; j < H; j++) v[H + j] = at[j] * (real)sin(thh[j]);
            memcpy(v, pQ, (size_t)H * sizeof *v);
            linear(gs, P[9], P[10], v, H, 2 * H);
            for (int j = 0; j < H; j++) {
                gc[j] = TANH(gc[j]), gs[j] = TANH(gs[j]);
                hI[j] = f[j] * pI[j] + (1 - f[j]) * gc[j];
                hQ[j] = f[j] * pQ[j] + (1 - f[j]) * gs[j];
            }
            y[2 * i] = P[12][0] + dot(P[11], hI, H);
            y[2 * i + 1] = P[14][0] + dot(P[13], hQ, H);
        }
}

static real sgn(real v) { return v > 0 ? 1 : v < 0 ? -1 : 0; }

static void dvr_bwd(const dpd_model_cfg *c, const real *p, const real *x, const real *dy, int B, int T,
                    const real *ws, real *sc, real *dp, real *dx) {
    dpd_tensor t[DPD_MAX_TENSORS];
    int nt = layout(c, t), H = c->hidden, K = units(c);
    memset(dp, 0, (t[nt - 1].offset + t[nt - 1].numel) * sizeof *dp);
    const real *P[15];
    real *G[15];
    for (int k = 0; k < 15; k++) P[k] = p + t[k].offset, G[k] = dp + t[k].offset;
    real *dI = sc, *dQ = dI + H, *nI = dQ + H, *nQ = nI + H, *v = nQ + H, *dv = v + 2 * H, *dsum = dv + 2 * H,
         *sum = dsum + H, *dth = sum + H, *dvv = dth + H, *dat = dvv + H, zero[4096] = {0};
    if (dx) memset(dx, 0, (size_t)B * T * 2 * sizeof *dx);
    for (int b = 0; b < B; b++) {
        memset(nI, 0, 2 * (size_t)H * sizeof *nI);
        for (int s = T - 1; s >= 0; s--) {
            size_t i = (size_t)b * T + s;
            const real *sv = ws + i * 8 * H, *hI = sv, *hQ = hI + H, *thh = hQ + H, *vv = thh + H, *at = vv + H,
                       *f = at + H, *gc = f + H, *gs = gc + H;
            const real *pI = s ? sv - 8 * H : zero, *pQ = s ? sv - 7 * H : zero;
            real A, co, si, th;
            polar(x + 2 * i, &A, &co, &si, &th);
            for (int j = 0; j < H; j++) {
                dI[j] = nI[j] + dy[2 * i] * P[11][j], dQ[j] = nQ[j] + dy[2 * i + 1] * P[13][j];
                G[11][j] += dy[2 * i] * hI[j], G[13][j] += dy[2 * i + 1] * hQ[j];
                sum[j] = pI[j] + pQ[j];
            }
            G[12][0] += dy[2 * i], G[14][0] += dy[2 * i + 1];
            real dfl[4096], dgc[4096], dgs[4096];
            for (int j = 0; j < H; j++) {
                nI[j] = dI[j] * f[j], nQ[j] = dQ[j] * f[j];
                dfl[j] = (dI[j] * (pI[j] - gc[j]) + dQ[j] * (pQ[j] - gs[j])) * f[j] * (1 - f[j]);
                dgc[j] = dI[j] * (1 - f[j]) * (1 - gc[j] * gc[j]);
                dgs[j] = dQ[j] * (1 - f[j]) * (1 - gs[j] * gs[j]);
                dth[j] = 0, dat[j] = 0;
            }
            for (int half = 0; half < 2; half++) { /* gc from [h_I; at cos th], gs from [h_Q; at sin th] */
                const real *hprev = half ? pQ : pI;
                for (int j = 0; j < H; j++) v[H + j] = at[j] * (real)(half ? sin(thh[j]) : cos(thh[j]));
                memcpy(v, hprev, (size_t)H * sizeof *v);
                memset(dv, 0, 2 * (size_t)H * sizeof *dv);
                linear_back(dv, G[7 + 2 * half], G[8 + 2 * half], P[7 + 2 * half], v, half ? dgs : dgc, H, 2 * H);
                for (int j = 0; j < H; j++) {
                    (half ? nQ : nI)[j] += dv[j];
                    real cs = (real)cos(thh[j]), sn = (real)sin(thh[j]);
                    dat[j] += dv[H + j] * (half ? sn : cs);
                    dth[j] += dv[H + j] * at[j] * (half ? cs : -sn);
                }
            }
            memset(dsum, 0, (size_t)H * sizeof *dsum);
            linear_back(dsum, G[5], G[6], P[5], sum, dfl, H, H);
            real dA = 0, dtheta = 0;
            for (int j = 0; j < H; j++) {
                real d = 0;
                for (int k = 1; k <= K; k++) {
                    real sg = sgn(vv[j] - (real)k / K);
                    G[0][k - 1] += dat[j] * FABS(vv[j] - (real)k / K);
                    d += dat[j] * P[0][k - 1] * sg;
                }
                dvv[j] = d;
                G[4][j] += d * A, dA += d * P[4][j];
                G[2][j] += dth[j] * th, dtheta += dth[j] * P[2][j];
            }
            linear_back(dsum, G[3], NULL, P[3], sum, dvv, H, H);
            linear_back(dsum, G[1], NULL, P[1], sum, dth, H, H);
            for (int j = 0; j < H; j++) nI[j] += dsum[j], nQ[j] += dsum[j];
            if (dx) polar_back(x + 2 * i, dA, 0, 0, dtheta, dx + 2 * i);
        }
    }
}

static void FN(fwd)(const kern_ops *kt, const dpd_model_cfg *c, const real *p, const real *x, int B, int T, real *y, real *ws) {
#ifndef DPD_F64
    if (exact(kt, c)) {
        exact(kt, c)->forward(c, p, x, B, T, y, ws);
        return;
    }
#endif
    (is_dvr(c) ? dvr_fwd : pg_fwd)(c, p, x, B, T, y, ws);
}
static void FN(bwd)(const kern_ops *kt, const dpd_model_cfg *c, const real *p, const real *x, const real *dy, int B, int T,
                    const real *ws, real *sc, real *dp, real *dx) {
#ifndef DPD_F64
    if (exact(kt, c)) {
        exact(kt, c)->backward(c, p, x, dy, B, T, ws, sc, dp, dx);
        return;
    }
#endif
    (is_dvr(c) ? dvr_bwd : pg_bwd)(c, p, x, dy, B, T, ws, sc, dp, dx);
}

#ifdef DPD_F64
const dpd_k64 dpd_k64_janet = {fwd_f64, bwd_f64};
#else
/* Reference §3.10: weights Xavier, biases 0; DVR-JANET's c ~ N(0, 1). */
static void init(const dpd_model_cfg *c, const dpd_tensor *t, float *p, dpd_rng *rng) {
    int n = layout(c, (dpd_tensor *)t);
    for (int k = 0; k < n; k++) {
        const dpd_tensor *e = &t[k];
        float *w = p + e->offset;
        if (!strcmp(e->name, "backbone.cs"))
            for (size_t i = 0; i < e->numel; i++) w[i] = (float)dpd_rng_normal(rng);
        else if (e->ndim == 2)
            dpd_init_xavier(w, e->shape[0], e->shape[1], e->shape[1], e->shape[0], rng);
        else
            memset(w, 0, e->numel * sizeof *w);
    }
}

const dpd_family dpd_family_pgjanet = {
    .name = "pgjanet", .tag = "PGJANET", .params = "7H^2+10H+2",
    .about = "phase-gated JANET (OpenDPDv2 baseline)", .hidden = 8, .max_layers = 1, .layout = layout,
    .init = init, .ws_size = ws_size, .scratch_size = scratch_size, .forward = fwd_f32, .backward = bwd_f32};
const dpd_family dpd_family_dvrjanet = {
    .name = "dvrjanet", .tag = "DVRJANET", .params = "7H^2+7H+2+K (K = units, 3)",
    .about = "decomposed vector rotation JANET (OpenDPDv2 baseline)", .hidden = 8, .max_layers = 1,
    .layout = layout, .init = init, .ws_size = ws_size, .scratch_size = scratch_size, .forward = fwd_f32,
    .backward = bwd_f32};
#endif
