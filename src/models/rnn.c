/* rnn: see rnn.h. Backward derivations: docs/derivations/gru.md and docs/derivations/lstm.md. */
#include "rnn.h"

#include "../kern/kern.h"

/* The fast kernels take dense GRU layers of 5..KL sequences (fewer lanes would waste them). */
static inline int fast_gru(const kern_ops *kt, int delta, int B) { return !delta && kern_fast(kt, B); }

/* DeltaGRU layers take table kt's exact path, for any B (NULL: the reference). */
static inline const kdelta *fast_delta(const kern_ops *kt, int delta) { return delta && kt ? kt->delta : NULL; }

#ifndef DPD_F64 /* precision-independent: defined once */
size_t rnn_tmp_size(int I, int H, int gates, int T) {
    size_t G = (size_t)gates * H, ref = G * ((size_t)I + H) + 4 * G + 2 * (size_t)H + 2 * (size_t)(I > H ? I : H);
    size_t fast = gates == 3 ? kern_gru_tmp(I, H, T) : kern_lstm_tmp(I, H, T);
    return ref > fast ? ref : fast;
}

size_t rnn_lstm_saved(const kern_ops *kt, int I, int H, int B, int T) {
    if (fast_gru(kt, 0, B)) return (size_t)B * T * H + kern_lstm_saved(I, H, T);
    return (size_t)RNN_LSTM_PLANES * B * T * H;
}

size_t rnn_gru_saved(const kern_ops *kt, int I, int H, int delta, int B, int T) {
    if (fast_gru(kt, delta, B)) return (size_t)B * T * H + kern_gru_saved(I, H, T);
    if (fast_delta(kt, delta)) return kt->delta->saved(I, H, B, T);
    return (size_t)B * T * (5 * (size_t)H + (delta ? 2 * ((size_t)I + H) : 0));
}

size_t rnn_gru_tmp(const kern_ops *kt, int I, int H, int delta, int T) {
    size_t ref = rnn_tmp_size(I, H, 3, T), fast = fast_delta(kt, delta) ? kt->delta->tmp(I, H, T) : 0;
    return ref > fast ? ref : fast;
}
#endif

/* The DeltaGRU planes: x_p and h_p right after h (every kernel keeps them there, for
 * rnn_delta_zeros), the masks after the four gate planes (the reference's only). */
typedef struct FN(dplanes) {
    real *xp, *mx, *hp, *mh; /* (B, T, I), (B, T, I), (B, T, H), (B, T, H) */
} FN(dplanes);

static FN(dplanes) dplanes(const FN(rnn_w) *w, int B, int T, const real *sv) {
    size_t bt = (size_t)B * T;
    real *p = (real *)sv + bt * w->H, *m = p + bt * ((size_t)w->I + 5 * (size_t)w->H);
    FN(dplanes) d = {p, m, p + bt * w->I, m + bt * w->I};
    return d;
}

/* The gate planes r, z, n, g: after h (and x_p, h_p in a DeltaGRU). */
static real *gate_planes(const FN(rnn_w) *w, int B, int T, const real *sv) {
    return (real *)sv + (size_t)B * T * (w->H + (w->delta ? (size_t)w->I + w->H : 0));
}

void FN(rnn_delta_zeros)(const FN(rnn_w) *w, int B, int T, const real *sv, long long *z) {
    FN(dplanes) d = dplanes(w, B, T, sv);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            size_t o = (size_t)b * T + t;
            for (int i = 0; i < w->I; i++) z[0] += d.xp[o * w->I + i] == (t ? d.xp[(o - 1) * w->I + i] : 0);
            for (int j = 0; j < w->H; j++) z[1] += d.hp[o * w->H + j] == (t ? d.hp[(o - 1) * w->H + j] : 0);
        }
}

/* Transposed weights and two gate vectors at tmp. */
static real *prep(const FN(rnn_w) *w, int G, real *tmp, real **wti, real **wth) {
    *wti = tmp, transpose(tmp, w->wih, G, w->I), tmp += (size_t)G * w->I;
    *wth = tmp, transpose(tmp, w->whh, G, w->H), tmp += (size_t)G * w->H;
    return tmp;
}

static void bias_init(real *a, const real *b1, const real *b2, int G) {
    for (int q = 0; q < G; q++) a[q] = (b1 ? b1[q] : 0) + (b2 ? b2[q] : 0);
}

void FN(rnn_gru_fwd)(const FN(rnn_w) *w, int B, int T, const real *x, real *sv, real *tmp) {
#ifndef DPD_F64
    kgru k = {w->I, w->H, w->wih, w->whh, w->bih, w->bhh, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    if (fast_gru(w->k, w->delta, B)) {
        w->k->gru_fwd(&k, B, T, x, sv, tmp);
        return;
    }
    if (fast_delta(w->k, w->delta)) {
        w->k->delta->forward(&k, w->thx, w->thh, B, T, x, sv, tmp);
        return;
    }
#endif
    int I = w->I, H = w->H, G = 3 * H;
    size_t plane = (size_t)B * T * H;
    real *hs = sv, *rs = gate_planes(w, B, T, sv), *zs = rs + plane, *ns = zs + plane, *gs = ns + plane;
    real *wti, *wth, *ai = prep(w, G, tmp, &wti, &wth), *ah = ai + G;
    FN(dplanes) pl = w->delta ? dplanes(w, B, T, sv) : (FN(dplanes)){0};
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            size_t o = ((size_t)b * T + t) * H;
            const real *hp = t ? hs + o - H : NULL, *xin = x + ((size_t)b * T + t) * I, *hin = hp;
            if (w->delta) { /* commit the inputs and states that moved by at least the threshold */
                size_t ox = ((size_t)b * T + t) * I;
                for (int i = 0; i < I; i++) {
                    real prev = t ? pl.xp[ox - I + i] : 0, m = FABS(xin[i] - prev) >= w->thx;
                    pl.mx[ox + i] = m, pl.xp[ox + i] = m ? xin[i] : prev;
                }
                for (int j = 0; j < H; j++) {
                    real prev = t ? pl.hp[o - H + j] : 0, cur = hp ? hp[j] : 0, m = FABS(cur - prev) >= w->thh;
                    pl.mh[o + j] = m, pl.hp[o + j] = m ? cur : prev;
                }
                xin = pl.xp + ox, hin = t ? pl.hp + o : NULL; /* h_p is 0 at t = 0 */
            }
            bias_init(ai, w->bih, NULL, G);
            bias_init(ah, w->bhh, NULL, G);
            gemv_t(ai, wti, xin, I, G);
            if (hin) gemv_t(ah, wth, hin, H, G);
            for (int j = 0; j < H; j++) {
                real r = sigm(ai[j] + ah[j]), z = sigm(ai[H + j] + ah[H + j]);
                real g = ah[2 * H + j], n = TANH(ai[2 * H + j] + r * g);
                rs[o + j] = r, zs[o + j] = z, ns[o + j] = n, gs[o + j] = g;
                hs[o + j] = (1 - z) * n + z * (hp ? hp[j] : 0);
            }
        }
}

/* One backward step of a DeltaGRU layer: the GRU's gate gradients, evaluated at the committed
 * x_p and h_p, then routed through the commit masks — x_p(t) = m x(t) + (1 - m) x_p(t-1), likewise
 * h_p from h(t-1) — with (1 - m) carried to the previous step in cx, ch. */
static void delta_step(const FN(rnn_w) *w, const FN(rnn_g) *g, FN(dplanes) d, int b, int T, int t,
                       const real *hp, const real *dhin, real *dhn, real *da, real *dah, real *cx,
                       real *ch, real *dxp, real *dhp, const real *rs, const real *zs, const real *ns,
                       const real *gs, real *dx) {
    int I = w->I, H = w->H, G = 3 * H;
    size_t ox = ((size_t)b * T + t) * I, o = ((size_t)b * T + t) * H;
    for (int j = 0; j < H; j++) {
        real dd = dhin[j] + dhn[j], r = rs[j], z = zs[j], n = ns[j], gg = gs[j];
        real dan = dd * (1 - z) * (1 - n * n), daz = dd * ((hp ? hp[j] : 0) - n) * z * (1 - z);
        real dar = dan * gg * r * (1 - r);
        da[j] = dar, da[H + j] = daz, da[2 * H + j] = dan;
        dah[j] = dar, dah[H + j] = daz, dah[2 * H + j] = dan * r;
        dhn[j] = dd * z;
    }
    memcpy(dxp, cx, (size_t)I * sizeof *dxp);
    memcpy(dhp, ch, (size_t)H * sizeof *dhp);
    linear_back(dxp, g->wih, g->bih, w->wih, d.xp + ox, da, G, I);
    if (t) linear_back(dhp, g->whh, g->bhh, w->whh, d.hp + o, dah, G, H);
    else if (g->bhh)
        for (int q = 0; q < G; q++) g->bhh[q] += dah[q];
    for (int i = 0; i < I; i++) {
        real m = d.mx[ox + i];
        if (dx) dx[i] = m * dxp[i];
        cx[i] = (1 - m) * dxp[i];
    }
    for (int j = 0; j < H; j++) {
        real m = t ? d.mh[o + j] : 0; /* at t = 0, h_p is the constant 0 */
        dhn[j] += m * dhp[j];
        ch[j] = t ? (1 - m) * dhp[j] : 0;
    }
}

void FN(rnn_gru_bwd)(const FN(rnn_w) *w, const FN(rnn_g) *g, int B, int T, const real *x,
                     const real *sv, const real *dh, real *dx, real *tmp) {
#ifndef DPD_F64
    kgru k = {w->I, w->H, w->wih, w->whh, w->bih, w->bhh, g->wih, g->whh, g->bih, g->bhh, NULL, NULL, NULL, NULL, NULL};
    if (fast_gru(w->k, w->delta, B)) {
        w->k->gru_bwd(&k, B, T, x, sv, dh, dx, tmp);
        return;
    }
    if (fast_delta(w->k, w->delta)) {
        w->k->delta->backward(&k, B, T, sv, dh, dx, tmp);
        return;
    }
#endif
    int I = w->I, H = w->H, G = 3 * H;
    size_t plane = (size_t)B * T * H;
    const real *hs = sv, *rs = gate_planes(w, B, T, sv), *zs = rs + plane, *ns = zs + plane, *gs = ns + plane;
    real *dhn = tmp, *da = dhn + H, *dah = da + G; /* da: input side; dah: hidden side */
    real *cx = dah + G, *ch = cx + I, *dxp = ch + H, *dhp = dxp + (I > H ? I : H);
    FN(dplanes) pl = w->delta ? dplanes(w, B, T, sv) : (FN(dplanes)){0};
    for (int b = 0; b < B; b++) {
        memset(dhn, 0, (size_t)H * sizeof *dhn);
        if (w->delta) memset(cx, 0, (size_t)(I + H) * sizeof *cx); /* carries through x_p, h_p */
        for (int t = T - 1; t >= 0; t--) {
            size_t o = ((size_t)b * T + t) * H;
            const real *xt = x + ((size_t)b * T + t) * I, *hp = t ? hs + o - H : NULL;
            if (w->delta) {
                delta_step(w, g, pl, b, T, t, hp, dh + o, dhn, da, dah, cx, ch, dxp, dhp, rs + o, zs + o, ns + o,
                           gs + o, dx ? dx + ((size_t)b * T + t) * I : NULL);
                continue;
            }
            for (int j = 0; j < H; j++) {
                real d = dh[o + j] + dhn[j];
                real r = rs[o + j], z = zs[o + j], n = ns[o + j], gg = gs[o + j];
                real dan = d * (1 - z) * (1 - n * n);
                real daz = d * ((hp ? hp[j] : 0) - n) * z * (1 - z);
                real dar = dan * gg * r * (1 - r);
                da[j] = dar, da[H + j] = daz, da[2 * H + j] = dan;
                dah[j] = dar, dah[H + j] = daz, dah[2 * H + j] = dan * r;
                dhn[j] = d * z; /* direct path; matrix path added below */
            }
            if (hp) linear_back(dhn, g->whh, g->bhh, w->whh, hp, dah, G, H);
            else if (g->bhh)
                for (int q = 0; q < G; q++) g->bhh[q] += dah[q];
            if (dx) memset(dx + ((size_t)b * T + t) * I, 0, (size_t)I * sizeof *dx);
            linear_back(dx ? dx + ((size_t)b * T + t) * I : NULL, g->wih, g->bih, w->wih, xt, da, G, I);
        }
    }
}

void FN(rnn_lstm_fwd)(const FN(rnn_w) *w, int B, int T, const real *x, real *sv, real *tmp) {
#ifndef DPD_F64
    if (fast_gru(w->k, 0, B)) {
        kgru k = {w->I, w->H, w->wih, w->whh, w->bih, w->bhh, NULL, NULL, NULL, NULL};
        w->k->lstm_fwd(&k, B, T, x, sv, tmp);
        return;
    }
#endif
    int I = w->I, H = w->H, G = 4 * H;
    size_t plane = (size_t)B * T * H;
    real *hs = sv, *cs = hs + plane, *is = cs + plane, *fs = is + plane, *gs = fs + plane, *os = gs + plane;
    real *wti, *wth, *a = prep(w, G, tmp, &wti, &wth);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            size_t o = ((size_t)b * T + t) * H;
            const real *hp = t ? hs + o - H : NULL, *cp = t ? cs + o - H : NULL;
            bias_init(a, w->bih, w->bhh, G);
            gemv_t(a, wti, x + ((size_t)b * T + t) * I, I, G);
            if (hp) gemv_t(a, wth, hp, H, G);
            for (int j = 0; j < H; j++) {
                real ig = sigm(a[j]), fg = sigm(a[H + j]), gg = TANH(a[2 * H + j]), og = sigm(a[3 * H + j]);
                real c = fg * (cp ? cp[j] : 0) + ig * gg;
                is[o + j] = ig, fs[o + j] = fg, gs[o + j] = gg, os[o + j] = og;
                cs[o + j] = c, hs[o + j] = og * TANH(c);
            }
        }
}

void FN(rnn_lstm_bwd)(const FN(rnn_w) *w, const FN(rnn_g) *g, int B, int T, const real *x,
                      const real *sv, const real *dh, real *dx, real *tmp) {
#ifndef DPD_F64
    if (fast_gru(w->k, 0, B)) {
        kgru k = {w->I, w->H, w->wih, w->whh, w->bih, w->bhh, g->wih, g->whh, g->bih, g->bhh};
        w->k->lstm_bwd(&k, B, T, x, sv, dh, dx, tmp);
        return;
    }
#endif
    int I = w->I, H = w->H, G = 4 * H;
    size_t plane = (size_t)B * T * H;
    const real *hs = sv, *cs = hs + plane, *is = cs + plane, *fs = is + plane, *gs = fs + plane,
               *os = gs + plane;
    real *dhn = tmp, *dcn = dhn + H, *da = dcn + H;
    for (int b = 0; b < B; b++) {
        memset(dhn, 0, 2 * (size_t)H * sizeof *dhn);
        for (int t = T - 1; t >= 0; t--) {
            size_t o = ((size_t)b * T + t) * H;
            const real *xt = x + ((size_t)b * T + t) * I, *hp = t ? hs + o - H : NULL, *cp = t ? cs + o - H : NULL;
            for (int j = 0; j < H; j++) {
                real d = dh[o + j] + dhn[j], ig = is[o + j], fg = fs[o + j], gg = gs[o + j], og = os[o + j];
                real tc = TANH(cs[o + j]);
                real dc = dcn[j] + d * og * (1 - tc * tc);
                da[j] = dc * gg * ig * (1 - ig);
                da[H + j] = dc * (cp ? cp[j] : 0) * fg * (1 - fg);
                da[2 * H + j] = dc * ig * (1 - gg * gg);
                da[3 * H + j] = d * tc * og * (1 - og);
                dcn[j] = dc * fg;
                dhn[j] = 0;
            }
            if (hp) linear_back(dhn, g->whh, g->bhh, w->whh, hp, da, G, H);
            else if (g->bhh)
                for (int q = 0; q < G; q++) g->bhh[q] += da[q];
            if (dx) memset(dx + ((size_t)b * T + t) * I, 0, (size_t)I * sizeof *dx);
            linear_back(dx ? dx + ((size_t)b * T + t) * I : NULL, g->wih, g->bih, w->wih, xt, da, G, I);
        }
    }
}
