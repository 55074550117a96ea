/* tcn: the exact fast path of the TCN family (src/models/tcn.c: its reference and the model's
 * equations). Per sequence, as the reference, and every output with the reference's float
 * operations in the reference's order, so the results are bitwise its own (this file is compiled
 * per ISA with -ffp-contract=off: no fused multiply-adds). What changes is the shape of the work:
 * - the planes are (T, Hp), Hp = H rounded up to the vector width VW, the padding lanes zero (zero
 *   weights keep them zero), so every loop over the channels is whole vectors;
 * - a convolution's output sums its taps in a register, in tap order (an out-of-range tap is
 *   skipped as the reference skips it: the edge test depends on the time step only);
 * - the weight gradients, which the reference accumulates sample after sample, stay in registers
 *   for a block of VW channels over the whole time loop (each lane its own sum, in sample order);
 * - the sums the reference runs along the channels (the output head, the features' gradient) run
 *   along time over transposed planes, each output's terms still in channel order.
 * Legend: B batch, T time, H channels, Hp padded channels; (T, Hp) planes are time-major. */
#include "../models/nn.h"
#include "simd.h"

#define NDW 4 /* depthwise stages */

static int padded(int H) { return (H + VW - 1) / VW * VW; }

/* The reference's parameters (its layout order): w0 (H, 6), b0 (H), 4 x w (H, 5), wo (2, H). */
typedef struct tcn_p {
    const float *w0, *b0, *w[NDW], *wo;
} tcn_p;

static tcn_p params(const float *p, int H) {
    tcn_p t = {.w0 = p, .b0 = p + 6 * H, .wo = p + 6 * H + H + NDW * 5 * H};
    for (int k = 0; k < NDW; k++) t.w[k] = p + 7 * H + k * 5 * H;
    return t;
}

/* ws: the features (B, T, 6), the 5 stages' pre-activations (5, B, T, Hp), then A (T, Hp),
 * AT (H, T), yv (T) and the padded weights w0t (6, Hp), b0 (Hp), wt (5, Hp). */
static size_t ws_size(const dpd_model_cfg *c, int B, int T) {
    size_t H = (size_t)c->hidden, Hp = (size_t)padded(c->hidden);
    return (size_t)B * T * 6 + 5 * (size_t)B * T * Hp + (size_t)T * Hp + H * T + (size_t)T + 12 * Hp;
}

/* scratch: da, dz, act (T, Hp); DT (H, T); df (6, T); the padded gradient sums gwt (4, 5, Hp),
 * g0t (6, Hp), gb0 (Hp), go (2, Hp); the padded weights wt (5, Hp), wo (2, Hp). */
static size_t scratch_size(const dpd_model_cfg *c, int B, int T) {
    size_t H = (size_t)c->hidden, Hp = (size_t)padded(c->hidden);
    return 3 * (size_t)T * Hp + H * T + 6 * (size_t)T + (NDW * 5 + 6 + 1 + 2 + 5 + 2) * Hp;
}

static float *stage(float *ws, int B, int T, int Hp, int k, int b) {
    return ws + (size_t)B * T * 6 + ((size_t)k * B + b) * T * Hp;
}

/* dst (cols, ldd) = src (rows, cols)^T, the columns padded with zeros from rows to ldd */
static void transpose_pad(float *dst, int ldd, const float *src, int rows, int cols) {
    for (int c = 0; c < cols; c++)
        for (int r = 0; r < ldd; r++) dst[(size_t)c * ldd + r] = r < rows ? src[(size_t)r * cols + c] : 0.0f;
}

/* dst (rows, cols) = src (cols, lds)^T: the first rows columns of src, back in the reference's
 * layout; lds a multiple of VW. VW x VW blocks transposed in registers (a float at a time, the
 * strided reads took a fifth of the forward pass), the last cols % VW columns one by one. */
static void transpose_back(float *dst, const float *src, int lds, int rows, int cols) {
    int c0 = 0;
    for (; c0 + VW <= cols; c0 += VW)
        for (int r0 = 0; r0 < rows; r0 += VW) { /* r0 + VW <= lds: whole vectors of src */
            vf v[VW];
            for (int k = 0; k < VW; k++) v[k] = ld(src + (size_t)(c0 + k) * lds + r0);
            vtranspose(v);
            for (int j = 0; j < VW && r0 + j < rows; j++) st(dst + (size_t)(r0 + j) * cols + c0, v[j]);
        }
    for (int r = 0; r < rows; r++)
        for (int c = c0; c < cols; c++) dst[(size_t)r * cols + c] = src[(size_t)c * lds + r];
}

/* nn.h's hswish and hswish_d, lane by lane: the same operations, selected */
static inline __attribute__((always_inline)) vf vhswish(vf v) {
    vf t = v * (v + 3.0f) / 6.0f;
    return sel(v <= -3.0f, (vf){}, sel(v >= 3.0f, v, t));
}
static inline __attribute__((always_inline)) vf vhswish_d(vf v) {
    vf t = v / 3.0f + 0.5f;
    return sel(v < -3.0f, (vf){}, sel(v <= 3.0f, t, (vf){} + 1.0f));
}

static void act_plane(float *restrict a, const float *restrict z, size_t n) {
    for (size_t e = 0; e < n; e += VW) st(a + e, vhswish(ld(z + e)));
}

/* y[s] += a[s] * v along time (auto-vectorised) */
static inline void maddv(float *restrict y, const float *restrict a, float v, int n) {
    for (int s = 0; s < n; s++) y[s] += a[s] * v;
}

/* stage 0: z = b0 + dot(w0 row, f) per channel, dot()'s four partial sums for n = 6 */
static void conv_in(float *restrict z, const float *restrict f, const float *restrict w0t, const float *restrict b0,
                    int T, int Hp) {
    for (int s = 0; s < T; s++, f += 6)
        for (int h = 0; h < Hp; h += VW) {
            vf s0 = (vf){}, s1 = (vf){}, s2 = (vf){}, s3 = (vf){};
            s0 += ld(w0t + h) * f[0], s1 += ld(w0t + Hp + h) * f[1];
            s2 += ld(w0t + 2 * Hp + h) * f[2], s3 += ld(w0t + 3 * Hp + h) * f[3];
            s0 += ld(w0t + 4 * Hp + h) * f[4];
            s0 += ld(w0t + 5 * Hp + h) * f[5];
            st(z + (size_t)s * Hp + h, ld(b0 + h) + ((s0 + s1) + (s2 + s3)));
        }
}

/* z (T, Hp) = the depthwise convolution (kernel 5, dilation d, zero padding 2d) of a with wt (5, Hp):
 * a block of VW channels at a time, its five weights in registers; the samples whose taps all lie
 * inside [0, T) without the edge test */
static void dwconv(float *restrict z, const float *restrict a, const float *restrict wt, int T, int Hp, int d) {
    int lo = 2 * d < T ? 2 * d : T, hi = T - 2 * d > lo ? T - 2 * d : lo; /* [lo, hi): every tap inside */
    for (int h = 0; h < Hp; h += VW) {
        vf w[5];
        for (int j = 0; j < 5; j++) w[j] = ld(wt + j * Hp + h);
        for (int s = 0; s < T; s++) {
            vf v = (vf){};
            if (s < lo || s >= hi) {
                for (int j = 0; j < 5; j++) {
                    int u = s + (j - 2) * d;
                    if (u >= 0 && u < T) v += w[j] * ld(a + (size_t)u * Hp + h);
                }
            } else {
                const float *p = a + (size_t)(s - 2 * d) * Hp + h;
                size_t step = (size_t)d * Hp;
                v += w[0] * ld(p), v += w[1] * ld(p + step), v += w[2] * ld(p + 2 * step);
                v += w[3] * ld(p + 3 * step), v += w[4] * ld(p + 4 * step);
            }
            st(z + (size_t)s * Hp + h, v);
        }
    }
}

static void fwd(const dpd_model_cfg *c, const float *p, const float *x, int B, int T, float *y, float *ws) {
    int H = c->hidden, Hp = padded(H);
    size_t TH = (size_t)T * Hp;
    tcn_p w = params(p, H);
    float *A = stage(ws, B, T, Hp, 5, 0), *AT = A + TH, *yv = AT + (size_t)H * T, *w0t = yv + T, *b0 = w0t + 6 * Hp,
          *wt = b0 + Hp;
    for (size_t i = 0; i < (size_t)B * T; i++) feat_dgru(ws + 6 * i, x[2 * i], x[2 * i + 1]);
    transpose_pad(w0t, Hp, w.w0, H, 6);
    transpose_pad(b0, Hp, w.b0, H, 1);
    for (int b = 0; b < B; b++) {
        conv_in(stage(ws, B, T, Hp, 0, b), ws + (size_t)b * T * 6, w0t, b0, T, Hp);
        for (int k = 1; k <= NDW; k++) {
            act_plane(A, stage(ws, B, T, Hp, k - 1, b), TH);
            transpose_pad(wt, Hp, w.w[k - 1], H, 5);
            dwconv(stage(ws, B, T, Hp, k, b), A, wt, T, Hp, 1 << (k - 1));
        }
        act_plane(A, stage(ws, B, T, Hp, NDW, b), TH);
        transpose_back(AT, A, Hp, H, T) /* AT (H, T) */;
        for (int o = 0; o < 2; o++) { /* x + the channels' terms in channel order, along time */
            const float *xb = x + (size_t)b * T * 2;
            float *yb = y + (size_t)b * T * 2;
            for (int s = 0; s < T; s++) yv[s] = xb[2 * s + o];
            for (int h = 0; h < H; h++) maddv(yv, AT + (size_t)h * T, w.wo[o * H + h], T);
            for (int s = 0; s < T; s++) yb[2 * s + o] = yv[s];
        }
    }
}

/* The output conv's backward: go0/go1 += d0/d1 * hswish(z) in sample order, da = wo0 d0 + wo1 d1. */
static void head_back(float *restrict go, float *restrict da, const float *restrict z, const float *restrict wo,
                      const float *restrict dy, int T, int Hp) {
    for (int h = 0; h < Hp; h += VW) {
        vf g0 = ld(go + h), g1 = ld(go + Hp + h), w0 = ld(wo + h), w1 = ld(wo + Hp + h);
        for (int s = 0; s < T; s++) {
            float d0 = dy[2 * s], d1 = dy[2 * s + 1];
            vf a = vhswish(ld(z + (size_t)s * Hp + h)), d = (vf){};
            g0 += d0 * a, d += w0 * d0;
            g1 += d1 * a, d += w1 * d1;
            st(da + (size_t)s * Hp + h, d);
        }
        st(go + h, g0), st(go + Hp + h, g1);
    }
}

/* A depthwise stage's backward from dz: gw (5, Hp) += dz * act(u) in sample order; da = the taps'
 * w * dz, each da[u] summed from 0 in the order the reference adds them (its samples s = u - (j -
 * 2) d ascending, so tap j from 4 down to 0). Each da is gathered in a register: added to da in
 * memory sample by sample, as the reference does, each store waited for the one before. */
static void dw_back(float *restrict gw, float *restrict da, const float *restrict dz, const float *restrict act,
                    const float *restrict wt, int T, int Hp, int d) {
    for (int h = 0; h < Hp; h += VW) {
        vf g[5], wv[5];
        for (int j = 0; j < 5; j++) g[j] = ld(gw + j * Hp + h), wv[j] = ld(wt + j * Hp + h);
        for (int s = 0; s < T; s++) {
            vf gs = ld(dz + (size_t)s * Hp + h);
            for (int j = 0; j < 5; j++) {
                int u = s + (j - 2) * d;
                if (u >= 0 && u < T) g[j] += gs * ld(act + (size_t)u * Hp + h);
            }
        }
        for (int j = 0; j < 5; j++) st(gw + j * Hp + h, g[j]);
        for (int u = 0; u < T; u++) {
            vf v = (vf){};
            for (int j = 4; j >= 0; j--) {
                int s = u - (j - 2) * d;
                if (s >= 0 && s < T) v += wv[j] * ld(dz + (size_t)s * Hp + h);
            }
            st(da + (size_t)u * Hp + h, v);
        }
    }
}

/* The input conv's dW and db (linear_back's), in sample order: g0t (6, Hp) += dz f[i], gb += dz. */
static void conv_in_back(float *restrict g0t, float *restrict gb, const float *restrict dz, const float *restrict f,
                         int T, int Hp) {
    for (int h = 0; h < Hp; h += VW) {
        vf b = ld(gb + h), g[6];
        for (int i = 0; i < 6; i++) g[i] = ld(g0t + i * Hp + h);
        for (int s = 0; s < T; s++) {
            vf d = ld(dz + (size_t)s * Hp + h);
            b += d;
            for (int i = 0; i < 6; i++) g[i] += d * f[6 * s + i];
        }
        st(gb + h, b);
        for (int i = 0; i < 6; i++) st(g0t + i * Hp + h, g[i]);
    }
}

static void bwd(const dpd_model_cfg *c, const float *p, const float *x, const float *dy, int B, int T, const float *ws,
                float *sc, float *dp, float *dx) {
    int H = c->hidden, Hp = padded(H);
    size_t TH = (size_t)T * Hp;
    tcn_p w = params(p, H);
    float *wsm = (float *)ws;
    float *da = sc, *dz = da + TH, *act = dz + TH, *DT = act + TH, *df = DT + (size_t)H * T, *gwt = df + 6 * (size_t)T,
          *g0t = gwt + NDW * 5 * Hp, *gb0 = g0t + 6 * Hp, *go = gb0 + Hp, *wt = go + 2 * Hp, *wo = wt + 5 * Hp;
    memset(gwt, 0, (NDW * 5 + 6 + 1 + 2) * (size_t)Hp * sizeof *gwt); /* gwt, g0t, gb0, go */
    for (int o = 0; o < 2; o++)
        for (int h = 0; h < Hp; h++) wo[o * Hp + h] = h < H ? w.wo[o * H + h] : 0.0f;
    for (int b = 0; b < B; b++) {
        const float *dyb = dy + (size_t)b * T * 2;
        head_back(go, da, stage(wsm, B, T, Hp, NDW, b), wo, dyb, T, Hp);
        if (dx) memcpy(dx + (size_t)b * T * 2, dyb, (size_t)T * 2 * sizeof *dx); /* the residual */
        for (int k = NDW; k >= 1; k--) {
            const float *z = stage(wsm, B, T, Hp, k, b), *prev = stage(wsm, B, T, Hp, k - 1, b);
            for (size_t e = 0; e < TH; e += VW) {
                st(dz + e, ld(da + e) * vhswish_d(ld(z + e)));
                st(act + e, vhswish(ld(prev + e)));
            }
            transpose_pad(wt, Hp, w.w[k - 1], H, 5);
            dw_back(gwt + (size_t)(k - 1) * 5 * Hp, da, dz, act, wt, T, Hp, 1 << (k - 1));
        }
        const float *z0 = stage(wsm, B, T, Hp, 0, b);
        for (size_t e = 0; e < TH; e += VW) st(dz + e, ld(da + e) * vhswish_d(ld(z0 + e))); /* dz0 */
        conv_in_back(g0t, gb0, dz, ws + (size_t)b * T * 6, T, Hp);
        if (!dx) continue;
        transpose_back(DT, dz, Hp, H, T); /* DT (H, T) */
        for (int i = 0; i < 6; i++) { /* linear_back's dx: the channels' terms in channel order, along time */
            float *di = df + (size_t)i * T;
            for (int s = 0; s < T; s++) di[s] = 0;
            for (int h = 0; h < H; h++) maddv(di, DT + (size_t)h * T, w.w0[h * 6 + i], T);
        }
        for (int s = 0; s < T; s++) {
            size_t i = (size_t)b * T + s;
            float f6[6];
            for (int q = 0; q < 6; q++) f6[q] = df[(size_t)q * T + s];
            feat_dgru_back(&dx[2 * i], &dx[2 * i + 1], x[2 * i], x[2 * i + 1], f6);
        }
    }
    transpose_back(dp, g0t, Hp, H, 6);
    memcpy(dp + 6 * H, gb0, (size_t)H * sizeof *dp);
    for (int k = 0; k < NDW; k++) transpose_back(dp + 7 * H + k * 5 * H, gwt + (size_t)k * 5 * Hp, Hp, H, 5);
    for (int o = 0; o < 2; o++) memcpy(dp + 27 * H + o * H, go + o * Hp, (size_t)H * sizeof *dp);
}

const kfam K(kfam_tcn) = {ws_size, scratch_size, fwd, bwd};
