/* janet: the exact fast paths of the PG-JANET and DVR-JANET families (src/models/janet.c: their
 * reference and the equations). Every output is the reference's float operations in the
 * reference's order, so the results are bitwise its own (this file is compiled per ISA with
 * -ffp-contract=off: no fused multiply-adds). What changes is the shape of the work:
 * - a chunk of up to KL sequences runs in lockstep, sequence-minor (SoA: every state and gate is
 *   (rows, KL), one lane per sequence), so each of the reference's per-sequence operations is one
 *   operation on vectors of lanes; a gate's dot product keeps nn.h's dot(): four partial sums in
 *   input order, the tail into the first, then the bias;
 * - the nonlinearities give libm's results as the reference calls it: tanhf as vlibm.h's vtanhf (the
 *   same float operations as this libm's, or libm itself where vtanhf_matches says otherwise), expf
 *   (in sigm) as vexpf (likewise, vexpf_matches), cos and sin as vsincos (libm's floats, checked),
 *   atan2 as libm per element;
 * - the weight gradients: the reference sums each element over the sequences in order, each one
 *   from its last step back, which lanes cannot do. Backward writes each sample's gate gradients
 *   into a record (rows padded to Hp) and, after each chunk, folds the records into transposed
 *   gradient sums in the reference's order, vectorised across the gate rows (each element's terms
 *   still in sample order), then writes them back in the reference's layout.
 * Legend: B batch, T time, H hidden, Hp H padded to VW, KL lanes (sequences of a chunk), K DVR units. */
#include "../models/nn.h"
#include "simd.h"
#include "vlibm.h"

static int padded(int H) { return (H + VW - 1) / VW * VW; }
static int chunks(int B) { return (B + KL - 1) / KL; }
static int lanes(int B, int ch) { return B - ch * KL < KL ? B - ch * KL : KL; }

/* out (KL) = bias + dot(w, v) lane by lane as nn.h's dot(), v (n, KL). */
static inline __attribute__((always_inline)) void vdot(float *out, float bias, const float *w, const float *v, int n) {
    for (int l = 0; l < KL; l += VW) {
        vf s0 = {}, s1 = {}, s2 = {}, s3 = {};
        const float *x = v + l;
        int i = 0;
        for (; i + 4 <= n; i += 4) {
            s0 += w[i] * ld(x + i * KL), s1 += w[i + 1] * ld(x + (i + 1) * KL);
            s2 += w[i + 2] * ld(x + (i + 2) * KL), s3 += w[i + 3] * ld(x + (i + 3) * KL);
        }
        for (; i < n; i++) s0 += w[i] * ld(x + i * KL);
        st(out + l, bias + ((s0 + s1) + (s2 + s3)));
    }
}

/* out (rows, KL) = b + W v lane by lane: nn.h's linear() (b NULL adds 0 as it does). W (rows, n), v (n, KL). */
static void vlinear(float *out, const float *W, const float *b, const float *v, int rows, int n) {
    for (int o = 0; o < rows; o++) vdot(out + (size_t)o * KL, b ? b[o] : 0.0f, W + (size_t)o * n, v, n);
}

/* acc (n, KL) += W^T d lane by lane, each element's terms in row order: linear_back()'s dx (with
 * init, acc starts from 0 as after the reference's memset). W (rows, n), d (rows, KL). */
static void vback(float *acc, const float *W, const float *d, int rows, int n, int init) {
    for (int i = 0; i < n; i++)
        for (int l = 0; l < KL; l += VW) {
            vf a = init ? (vf){} : ld(acc + (size_t)i * KL + l);
            for (int o = 0; o < rows; o++) a += W[(size_t)o * n + i] * ld(d + (size_t)o * KL + l);
            st(acc + (size_t)i * KL + l, a);
        }
}

/* The nonlinearities with the reference's calls, element by element; tanhf as vtanhf and sigm's
 * expf as vexpf (bitwise the same) when exact says vtanhf_matches(), vexpf_matches(). n: a
 * multiple of VW. */
static void map_tanh(float *v, size_t n, int exact) {
    if (exact)
        for (size_t e = 0; e < n; e += VW) st(v + e, vtanhf(ld(v + e)));
    else
        for (size_t e = 0; e < n; e++) v[e] = tanhf(v[e]);
}
static void map_sigm(float *v, size_t n, int exact) {
    if (exact)
        for (size_t e = 0; e < n; e += VW) st(v + e, 1.0f / (1.0f + vexpf(-ld(v + e)))); /* nn.h's sigm */
    else
        for (size_t e = 0; e < n; e++) v[e] = sigm(v[e]);
}

/* A, cos, sin (and theta when th is not NULL) of step t for the nb lanes of a chunk from sequence
 * b0 on: polar() per lane; 0 in the lanes past nb. */
static void lanes_polar(const float *x, int b0, int nb, int T, int t, float *A, float *co, float *si, float *th) {
    for (int l = 0; l < KL; l++) {
        float a = 0, c = 0, s = 0, q = 0;
        if (l < nb) polar(x + ((size_t)(b0 + l) * T + t) * 2, &a, &c, &s, th ? &q : NULL);
        A[l] = a, co[l] = c, si[l] = s;
        if (th) th[l] = q;
    }
}

/* dst (2, KL) = the two channels of src (B, T, 2) at step t for the nb lanes from b0; 0 past nb. */
static void lanes_pair(float *dst, const float *src, int b0, int nb, int T, int t) {
    for (int l = 0; l < KL; l++)
        for (int o = 0; o < 2; o++) dst[o * KL + l] = l < nb ? src[((size_t)(b0 + l) * T + t) * 2 + o] : 0.0f;
}

/* Step t's records of the nb lanes: row k of lane l's record (rec (KL, T, nd, Hp), the padding
 * zeroed by bwd_clear) = lane l of d + k H KL (H, KL), for k < nd. */
static void put(float *rec, const float *d, int H, int Hp, int nd, int T, int t, int nb) {
    for (int k = 0; k < nd; k++)
        from_lanes(rec + ((size_t)t * nd + k) * Hp, (size_t)T * nd * Hp, d + (size_t)k * H * KL, nb, (size_t)H, 0);
}

/* A chunk's samples as the folds see them: the records rec (nb, T, nd, Hp) and the saved rows S0
 * (T, ns, KL), a zero state (H, KL) and a row of ones (KL). */
typedef struct fctx {
    const float *rec, *S0, *zero, *ones;
    int nd, ns, Hp, T, nb;
} fctx;

/* A column source at step t: the saved rows from `row` of step t, or of step t - 1 (prev; the zero
 * state at t = 0); row < 0: ones. */
static inline __attribute__((always_inline)) const float *src(const fctx *f, int row, int prev, int t) {
    if (row < 0) return f->ones;
    if (prev) return t ? f->S0 + ((size_t)(t - 1) * f->ns + row) * KL : f->zero;
    return f->S0 + ((size_t)t * f->ns + row) * KL;
}

/* fold() for columns i0 .. i0 + nc of the VW outputs from e, the nc sums in registers over all the
 * samples (nc a constant at every call site). */
static inline __attribute__((always_inline)) void fold_block(const fctx *f, float *acc, int g, int row, int prev,
                                                            int i0, int e, const int nc) {
    vf a[8];
    for (int k = 0; k < nc; k++) a[k] = ld(acc + (size_t)(i0 + k) * f->Hp + e);
    for (int l = 0; l < f->nb; l++)
        for (int t = f->T - 1; t >= 0; t--) {
            vf d = ld(f->rec + (((size_t)l * f->T + t) * f->nd + g) * f->Hp + e);
            const float *x = src(f, row, prev, t) + (size_t)i0 * KL + l;
            for (int k = 0; k < nc; k++) a[k] += d * x[(size_t)k * KL];
        }
    for (int k = 0; k < nc; k++) st(acc + (size_t)(i0 + k) * f->Hp + e, a[k]);
}

/* A transposed weight gradient acc (n, Hp) += d x_i over the chunk's samples in the reference's
 * order (lanes ascending, each from its last step back), d the records' row g, x_i column i of the
 * source (row, prev): linear_back()'s dW += d x, d times x, added. A bias is a column of ones
 * (d * 1 is d). */
static void fold(const fctx *f, float *acc, int n, int g, int row, int prev) {
    for (int e = 0; e < f->Hp; e += VW) {
        int i = 0;
        for (; i + 8 <= n; i += 8) fold_block(f, acc, g, row, prev, i, e, 8);
        if (i + 4 <= n) fold_block(f, acc, g, row, prev, i, e, 4), i += 4;
        if (i + 2 <= n) fold_block(f, acc, g, row, prev, i, e, 2), i += 2;
        if (i < n) fold_block(f, acc, g, row, prev, i, e, 1);
    }
}

/* g (rows, n) = acc (n, Hp)^T: a weight gradient back in the reference's layout. */
static void unfold(float *g, const float *acc, int rows, int n, int Hp) {
    for (int o = 0; o < rows; o++)
        for (int i = 0; i < n; i++) g[(size_t)o * n + i] = acc[(size_t)i * Hp + o];
}

/* ---- PG-JANET ---- */

/* The reference's parameters in layout order: gates a, p1, p2 (H, H + 1), f, g (H, 2H), each with
 * a bias (H); the head W_o (2, H), b_o (2). */
typedef struct pg_p {
    const float *w[5], *b[5], *wo, *bo;
} pg_p;

static size_t pg_params(const float *p, int H, pg_p *w) {
    size_t off = 0;
    for (int k = 0; k < 5; k++) {
        if (w) w->w[k] = p + off, w->b[k] = p + off + (size_t)H * (k < 3 ? H + 1 : 2 * H);
        off += (size_t)H * (k < 3 ? H + 1 : 2 * H) + H;
    }
    if (w) w->wo = p + off, w->bo = p + off + 2 * H;
    return off + 2 * H + 2;
}

/* Rows saved per step (SoA, KL each): h, a, p1, p2, u, f, g (H each), A, cos, sin. */
static int pg_rows(int H) { return 7 * H + 3; }

/* ws: the saved rows (chunks, T, rows, KL), then v (2H, KL) and a zero state (H, KL). */
static size_t pg_ws(const dpd_model_cfg *c, int B, int T) {
    return ((size_t)chunks(B) * T * pg_rows(c->hidden) + 3 * (size_t)c->hidden) * KL;
}

/* Transposed gradient sums: W_a, W_p1, W_p2 (H + 1, Hp), W_f, W_g (2H, Hp), the 5 biases (Hp). */
static size_t pg_accs(int H) { return (3 * (size_t)(H + 1) + 4 * (size_t)H + 5) * padded(H); }

/* scratch: the records (KL, T, 5, Hp): df, dg, d1, d2, d3; the gradient sums; dnext, dh, df, dg,
 * d1, d2, d3, a zero state (H, KL each), dv (2H, KL), dvk (H + 1, KL), dy (2, KL), de (3, KL), ones (KL). */
static size_t pg_scratch(const dpd_model_cfg *c, int B, int T) {
    int H = c->hidden;
    return (size_t)KL * T * 5 * padded(H) + pg_accs(H) + (8 * (size_t)H + 2 * H + H + 1 + 2 + 3 + 1) * KL;
}

static void pg_fwd(const dpd_model_cfg *c, const float *p, const float *x, int B, int T, float *y, float *ws) {
    const int H = c->hidden, NS = pg_rows(H);
    const size_t hk = (size_t)H * KL;
    pg_p w;
    pg_params(p, H, &w);
    float *v = ws + (size_t)chunks(B) * T * NS * KL, *zero = v + 2 * hk, yo[KL];
    const int vt = vtanhf_matches(), ve = vexpf_matches();
    memset(zero, 0, hk * sizeof *zero);
    for (int ch = 0; ch < chunks(B); ch++) {
        const int b0 = ch * KL, nb = lanes(B, ch);
        for (int t = 0; t < T; t++) {
            float *h = ws + ((size_t)ch * T + t) * NS * KL, *a = h + hk, *p1 = a + hk, *p2 = p1 + hk, *u = p2 + hk,
                  *f = u + hk, *g = f + hk, *A = g + hk, *co = A + KL, *si = co + KL;
            const float *hp = t ? h - (size_t)NS * KL : zero, *ex[3] = {A, co, si};
            lanes_polar(x, b0, nb, T, t, A, co, si, NULL);
            memcpy(v, hp, hk * sizeof *v);
            for (int k = 0; k < 3; k++) { /* a, p1, p2 from [h; A], [h; cos], [h; sin] */
                memcpy(v + hk, ex[k], KL * sizeof *v);
                vlinear(a + k * hk, w.w[k], w.b[k], v, H, H + 1);
            }
            map_tanh(a, 3 * hk, vt);
            for (size_t e = 0; e < hk; e += VW) {
                vf va = ld(a + e), v1 = ld(p1 + e), v2 = ld(p2 + e);
                st(u + e, va * v1 * v2 * (1.0f - va) * (1.0f - v1) * (1.0f - v2));
            }
            memcpy(v + hk, u, hk * sizeof *v);
            vlinear(f, w.w[3], w.b[3], v, H, 2 * H);
            vlinear(g, w.w[4], w.b[4], v, H, 2 * H);
            map_sigm(f, hk, ve);
            map_tanh(g, hk, vt);
            for (size_t e = 0; e < hk; e += VW) {
                vf vf_ = ld(f + e);
                st(h + e, vf_ * ld(hp + e) + (1.0f - vf_) * ld(g + e));
            }
            for (int o = 0; o < 2; o++) {
                vdot(yo, w.bo[o], w.wo + (size_t)o * H, h, H);
                for (int l = 0; l < nb; l++) y[((size_t)(b0 + l) * T + t) * 2 + o] = yo[l];
            }
        }
    }
}

/* One backward step of a chunk: from dnext (the gradient at h_t from later steps) and dyv, the
 * gate gradients df, dg, d1..d3 (H, KL each, consecutive from df) and dnext for step t - 1; de
 * (3, KL) gets the gradients at A, cos, sin. */
static void pg_step_back(const pg_p *w, int H, const float *S, const float *hp, const float *dyv, float *dnext,
                         float *dh, float *df, float *dv, float *dvk, float *de) {
    const size_t hk = (size_t)H * KL;
    const float *h = S, *a = h + hk, *p1 = a + hk, *p2 = p1 + hk, *f = p2 + 2 * hk, *g = f + hk;
    float *dg = df + hk, *d1 = dg + hk;
    for (int j = 0; j < H; j++) /* the head: dh = dnext + W_o^T dy */
        for (int l = 0; l < KL; l += VW) {
            size_t e = (size_t)j * KL + l;
            vf d = ld(dnext + e) + w->wo[j] * ld(dyv + l);
            st(dh + e, d + w->wo[H + j] * ld(dyv + KL + l));
        }
    for (size_t e = 0; e < hk; e += VW) {
        vf d = ld(dh + e), vf_ = ld(f + e), vg = ld(g + e);
        st(dnext + e, d * vf_);
        st(df + e, d * (ld(hp + e) - vg) * vf_ * (1.0f - vf_));
        st(dg + e, d * (1.0f - vf_) * (1.0f - vg * vg));
    }
    vback(dv, w->w[3], df, H, 2 * H, 1);
    vback(dv, w->w[4], dg, H, 2 * H, 0);
    for (size_t e = 0; e < hk; e += VW) {
        vf du = ld(dv + hk + e), aa = ld(a + e), q1 = ld(p1 + e), q2 = ld(p2 + e);
        vf ra = q1 * q2 * (1.0f - q1) * (1.0f - q2), r1 = aa * q2 * (1.0f - aa) * (1.0f - q2);
        vf r2 = aa * q1 * (1.0f - aa) * (1.0f - q1);
        st(dnext + e, ld(dnext + e) + ld(dv + e));
        st(d1 + e, du * ra * (1.0f - 2.0f * aa) * (1.0f - aa * aa));
        st(d1 + hk + e, du * r1 * (1.0f - 2.0f * q1) * (1.0f - q1 * q1));
        st(d1 + 2 * hk + e, du * r2 * (1.0f - 2.0f * q2) * (1.0f - q2 * q2));
    }
    for (int k = 0; k < 3; k++) { /* through [h; A], [h; cos], [h; sin] */
        vback(dvk, w->w[k], d1 + k * hk, H, H + 1, 1);
        for (size_t e = 0; e < hk; e += VW) st(dnext + e, ld(dnext + e) + ld(dvk + e));
        memcpy(de + k * KL, dvk + hk, KL * sizeof *de);
    }
}

/* Folds a chunk's records into the gradient sums: the gates' into acc (pg_accs' order), the head's
 * (few, scalar) straight into dp (gwo, gbo), both in the reference's order. */
static void pg_fold(const fctx *f, int H, const float *dy, float *acc, float *gwo, float *gbo) {
    const int Hp = f->Hp;
    float *a = acc, *accb = acc + (3 * (size_t)(H + 1) + 4 * (size_t)H) * Hp;
    for (int k = 0; k < 5; k++) { /* the records hold df, dg, d1, d2, d3 */
        int g = k < 3 ? 2 + k : k - 3, n = k < 3 ? H + 1 : 2 * H;
        fold(f, a, H, g, 0, 1);                                                /* h_{t-1} */
        fold(f, a + (size_t)H * Hp, n - H, g, k < 3 ? 7 * H + k : 4 * H, 0); /* A, cos, sin; u */
        fold(f, accb + (size_t)k * Hp, 1, g, -1, 0);
        a += (size_t)n * Hp;
    }
    for (int l = 0; l < f->nb; l++)
        for (int t = f->T - 1; t >= 0; t--) {
            const float *h = f->S0 + (size_t)t * f->ns * KL + l;
            for (int o = 0; o < 2; o++) {
                float d = dy[((size_t)l * f->T + t) * 2 + o];
                gbo[o] += d;
                for (int j = 0; j < H; j++) gwo[o * H + j] += d * h[(size_t)j * KL];
            }
        }
}

/* The backward's start: gradients dp (np) and dx (n samples, if asked) and the weight-gradient
 * accumulators acc (na) zeroed, the zero state (hk) and a lane of ones; the records rec (nrec)
 * zeroed where Hp > H, so that the padding put leaves alone reads as zeros. */
static void bwd_clear(float *dp, size_t np, float *acc, size_t na, float *zero, size_t hk, float *ones, float *dx,
                      size_t n, float *rec, size_t nrec, int H, int Hp) {
    if (Hp > H) memset(rec, 0, nrec * sizeof *rec); /* the records' padding: put writes H of each Hp */
    memset(dp, 0, np * sizeof *dp);
    memset(acc, 0, na * sizeof *acc);
    memset(zero, 0, hk * sizeof *zero);
    for (int l = 0; l < KL; l++) ones[l] = 1.0f;
    if (dx) memset(dx, 0, n * 2 * sizeof *dx);
}

static void pg_bwd(const dpd_model_cfg *c, const float *p, const float *x, const float *dy, int B, int T,
                   const float *ws, float *sc, float *dp, float *dx) {
    const int H = c->hidden, Hp = padded(H), NS = pg_rows(H);
    const size_t hk = (size_t)H * KL;
    pg_p w;
    size_t np = pg_params(p, H, &w);
    float *rec = sc, *acc = rec + (size_t)KL * T * 5 * Hp, *dnext = acc + pg_accs(H), *dh = dnext + hk, *df = dh + hk;
    float *zero = df + 5 * hk, *dv = zero + hk, *dvk = dv + 2 * hk, *dyv = dvk + hk + KL, *de = dyv + 2 * KL;
    float *ones = de + 3 * KL;
    bwd_clear(dp, np, acc, pg_accs(H), zero, hk, ones, dx, (size_t)B * T, rec, (size_t)KL * T * 5 * Hp, H, Hp);
    for (int ch = 0; ch < chunks(B); ch++) {
        const int b0 = ch * KL, nb = lanes(B, ch);
        const float *S0 = ws + (size_t)ch * T * NS * KL;
        memset(dnext, 0, hk * sizeof *dnext);
        for (int t = T - 1; t >= 0; t--) {
            const float *S = S0 + (size_t)t * NS * KL, *hp = t ? S - (size_t)NS * KL : zero;
            lanes_pair(dyv, dy, b0, nb, T, t);
            pg_step_back(&w, H, S, hp, dyv, dnext, dh, df, dv, dvk, de);
            for (int l = 0; dx && l < nb; l++) {
                size_t i = (size_t)(b0 + l) * T + t;
                polar_back(x + 2 * i, de[l], de[KL + l], de[2 * KL + l], 0, dx + 2 * i);
            }
            put(rec, df, H, Hp, 5, T, t, nb);
        }
        fctx f = {rec, S0, zero, ones, 5, NS, Hp, T, nb};
        pg_fold(&f, H, dy + (size_t)b0 * T * 2, acc, dp + (w.wo - p), dp + (w.bo - p));
    }
    const float *a = acc;
    for (int k = 0; k < 5; k++) {
        int n = k < 3 ? H + 1 : 2 * H;
        unfold(dp + (w.w[k] - p), a, H, n, Hp);
        a += (size_t)n * Hp;
    }
    for (int k = 0; k < 5; k++) memcpy(dp + (w.b[k] - p), a + (size_t)k * Hp, (size_t)H * sizeof *dp);
}

const kfam K(kfam_pgjanet) = {pg_ws, pg_scratch, pg_fwd, pg_bwd};

/* ---- DVR-JANET ---- */

static int units(const dpd_model_cfg *c) { return c->units ? c->units : 3; }

/* The reference's parameters in layout order: cs (K), W_ph (H, H), W_pth (H), W_ah (H, H), W_ax
 * (H), W_f (H, H), b_f, W_ccos (H, 2H), b_ccos, W_csin (H, 2H), b_csin, W_o1 (H), b_o1, W_o2 (H), b_o2. */
typedef struct dvr_p {
    const float *cs, *wph, *wpth, *wah, *wax, *wf, *bf, *wc, *bc, *ws, *bs, *wo1, *bo1, *wo2, *bo2;
} dvr_p;

static size_t dvr_params(const float *p, int H, int K, dvr_p *w) {
    const size_t h2 = (size_t)H * H;
    dvr_p q;
    q.cs = p, q.wph = q.cs + K, q.wpth = q.wph + h2, q.wah = q.wpth + H, q.wax = q.wah + h2, q.wf = q.wax + H;
    q.bf = q.wf + h2, q.wc = q.bf + H, q.bc = q.wc + 2 * h2, q.ws = q.bc + H, q.bs = q.ws + 2 * h2;
    q.wo1 = q.bs + H, q.bo1 = q.wo1 + H, q.wo2 = q.bo1 + 1, q.bo2 = q.wo2 + H;
    if (w) *w = q;
    return (size_t)(q.bo2 + 1 - p);
}

/* Rows saved per step (SoA, KL each): h_I, h_Q, s = h_I + h_Q of the step before, v, at, f, gc,
 * gs, cos th, sin th, at cos th, at sin th (H each), A, theta. */
static int dvr_rows(int H) { return 12 * H + 2; }

/* ws: the saved rows (chunks, T, rows, KL), then v (2H, KL), the angles th (H, KL) and a zero state (H, KL). */
static size_t dvr_ws(const dpd_model_cfg *c, int B, int T) {
    return ((size_t)chunks(B) * T * dvr_rows(c->hidden) + 4 * (size_t)c->hidden) * KL;
}

/* Transposed gradient sums: W_ccos, W_csin (2H, Hp), W_f, W_ah, W_ph (H, Hp), W_ax, W_pth, and the
 * biases b_f, b_ccos, b_csin (Hp each). */
static size_t dvr_accs(int H) { return (7 * (size_t)H + 5) * padded(H); }

/* scratch: the records (KL, T, 6, Hp): dgc, dgs, df, dv, dth, dat; the gradient sums; nI, nQ, dI,
 * dQ, dgc, dgs, df, dv, dth, dat, dsum, a zero state (H, KL each), dcat (2H, KL), dy (2, KL), dA and
 * dtheta (2, KL), ones (KL). */
static size_t dvr_scratch(const dpd_model_cfg *c, int B, int T) {
    int H = c->hidden;
    return (size_t)KL * T * 6 * padded(H) + dvr_accs(H) + (12 * (size_t)H + 2 * H + 5) * KL;
}

static void dvr_fwd(const dpd_model_cfg *c, const float *p, const float *x, int B, int T, float *y, float *ws) {
    const int H = c->hidden, K = units(c), NS = dvr_rows(H);
    const size_t hk = (size_t)H * KL;
    dvr_p w;
    dvr_params(p, H, K, &w);
    float *v = ws + (size_t)chunks(B) * T * NS * KL, *th = v + 2 * hk, *zero = th + hk, yo[KL], co[KL], si[KL];
    const int vt = vtanhf_matches(), ve = vexpf_matches();
    memset(zero, 0, hk * sizeof *zero);
    for (int ch = 0; ch < chunks(B); ch++) {
        const int b0 = ch * KL, nb = lanes(B, ch);
        for (int t = 0; t < T; t++) {
            float *hI = ws + ((size_t)ch * T + t) * NS * KL, *hQ = hI + hk, *sm = hQ + hk, *vv = sm + hk, *at = vv + hk,
                  *f = at + hk, *gc = f + hk, *gs = gc + hk, *cs = gs + hk, *sn = cs + hk, *ac = sn + hk, *as = ac + hk,
                  *A = as + hk, *tq = A + KL;
            const float *pI = t ? hI - (size_t)NS * KL : zero, *pQ = t ? hQ - (size_t)NS * KL : zero;
            lanes_polar(x, b0, nb, T, t, A, co, si, tq);
            for (size_t e = 0; e < hk; e += VW) st(sm + e, ld(pI + e) + ld(pQ + e));
            vlinear(th, w.wph, NULL, sm, H, H);
            vlinear(vv, w.wah, NULL, sm, H, H);
            vlinear(f, w.wf, w.bf, sm, H, H);
            for (int j = 0; j < H; j++)
                for (int l = 0; l < KL; l += VW) {
                    size_t e = (size_t)j * KL + l;
                    st(th + e, ld(th + e) + w.wpth[j] * ld(tq + l));
                    st(vv + e, ld(vv + e) + w.wax[j] * ld(A + l)), st(at + e, (vf){});
                }
            for (int k = 1; k <= K; k++) { /* at = sum_k c_k |v - k/K|, in k order */
                float kf = (float)k / (float)K, ck = w.cs[k - 1];
                for (size_t e = 0; e < hk; e += VW)
                    st(at + e, ld(at + e) + ck * (vf)((vi)(ld(vv + e) - kf) & 0x7fffffff)); /* fabsf */
            }
            map_sigm(f, hk, ve);
            vsincos(th, cs, sn, hk);
            for (size_t e = 0; e < hk; e += VW) {
                st(ac + e, ld(at + e) * ld(cs + e));
                st(as + e, ld(at + e) * ld(sn + e));
            }
            memcpy(v, pI, hk * sizeof *v), memcpy(v + hk, ac, hk * sizeof *v);
            vlinear(gc, w.wc, w.bc, v, H, 2 * H);
            memcpy(v, pQ, hk * sizeof *v), memcpy(v + hk, as, hk * sizeof *v);
            vlinear(gs, w.ws, w.bs, v, H, 2 * H);
            map_tanh(gc, 2 * hk, vt);
            for (size_t e = 0; e < hk; e += VW) {
                vf vf_ = ld(f + e);
                st(hI + e, vf_ * ld(pI + e) + (1.0f - vf_) * ld(gc + e));
                st(hQ + e, vf_ * ld(pQ + e) + (1.0f - vf_) * ld(gs + e));
            }
            for (int o = 0; o < 2; o++) {
                vdot(yo, o ? w.bo2[0] : w.bo1[0], o ? w.wo2 : w.wo1, o ? hQ : hI, H);
                for (int l = 0; l < nb; l++) y[((size_t)(b0 + l) * T + t) * 2 + o] = yo[l];
            }
        }
    }
}

/* One backward step of a chunk: from nI, nQ (the gradients at h_I, h_Q from later steps) and dyv,
 * the gradients dgc, dgs, df, dv, dth, dat (H, KL each, consecutive from g) and nI, nQ for step
 * t - 1; dA (2, KL) gets the gradients at A and theta. */
static void dvr_step_back(const dvr_p *w, int H, int K, const float *S, const float *pI, const float *pQ,
                          const float *dyv, float *nI, float *nQ, float *dI, float *dQ, float *g, float *dsum,
                          float *dcat, float *dA) {
    const size_t hk = (size_t)H * KL;
    const float *sm = S + 2 * hk, *vv = sm + hk, *at = vv + hk, *f = at + hk, *gc = f + hk, *gs = gc + hk;
    const float *cs = gs + hk, *sn = cs + hk;
    float *dgc = g, *dgs = dgc + hk, *df = dgs + hk, *dvv = df + hk, *dth = dvv + hk, *dat = dth + hk;
    for (int j = 0; j < H; j++)
        for (int l = 0; l < KL; l += VW) {
            size_t e = (size_t)j * KL + l;
            st(dI + e, ld(nI + e) + ld(dyv + l) * w->wo1[j]);
            st(dQ + e, ld(nQ + e) + ld(dyv + KL + l) * w->wo2[j]);
        }
    for (size_t e = 0; e < hk; e += VW) {
        vf di = ld(dI + e), dq = ld(dQ + e), vf_ = ld(f + e), vc = ld(gc + e), vs = ld(gs + e);
        st(nI + e, di * vf_), st(nQ + e, dq * vf_);
        st(df + e, (di * (ld(pI + e) - vc) + dq * (ld(pQ + e) - vs)) * vf_ * (1.0f - vf_));
        st(dgc + e, di * (1.0f - vf_) * (1.0f - vc * vc));
        st(dgs + e, dq * (1.0f - vf_) * (1.0f - vs * vs));
    }
    for (int half = 0; half < 2; half++) { /* gc from [h_I; at cos th], gs from [h_Q; at sin th] */
        vback(dcat, half ? w->ws : w->wc, half ? dgs : dgc, H, 2 * H, 1);
        float *n = half ? nQ : nI;
        for (size_t e = 0; e < hk; e += VW) {
            vf d = ld(dcat + hk + e), c = ld(cs + e), s = ld(sn + e), a0 = half ? ld(dat + e) : (vf){};
            vf t0 = half ? ld(dth + e) : (vf){};
            st(n + e, ld(n + e) + ld(dcat + e));
            st(dat + e, a0 + d * (half ? s : c));
            st(dth + e, t0 + d * ld(at + e) * (half ? c : -s));
        }
    }
    vback(dsum, w->wf, df, H, H, 1);
    memset(dvv, 0, hk * sizeof *dvv);
    for (int k = 1; k <= K; k++) { /* dv = sum_k dat c_k sgn(v - k/K), in k order */
        float kf = (float)k / (float)K, ck = w->cs[k - 1];
        for (size_t e = 0; e < hk; e += VW) {
            vf r = ld(vv + e) - kf, sg = sel(r > 0.0f, (vf){} + 1.0f, sel(r < 0.0f, (vf){} - 1.0f, (vf){}));
            st(dvv + e, ld(dvv + e) + ld(dat + e) * ck * sg);
        }
    }
    for (int l = 0; l < KL; l += VW) { /* dA, dtheta: sums over the hidden units in order */
        vf da = {}, dt = {};
        for (int j = 0; j < H; j++) {
            size_t e = (size_t)j * KL + l;
            da += ld(dvv + e) * w->wax[j], dt += ld(dth + e) * w->wpth[j];
        }
        st(dA + l, da), st(dA + KL + l, dt);
    }
    vback(dsum, w->wah, dvv, H, H, 0);
    vback(dsum, w->wph, dth, H, H, 0);
    for (size_t e = 0; e < hk; e += VW) {
        st(nI + e, ld(nI + e) + ld(dsum + e));
        st(nQ + e, ld(nQ + e) + ld(dsum + e));
    }
}

/* gcs (K) += dat_j |v_j - k/K| over the chunk's samples and then the hidden units, in the
 * reference's order: up to four of the K sums side by side in registers. */
static void fold_cs(const fctx *f, int H, int K, float *gcs) {
    for (int k0 = 0; k0 < K; k0 += 4) {
        int nk = K - k0 < 4 ? K - k0 : 4;
        float s[4] = {0}, kf[4] = {0};
        for (int q = 0; q < nk; q++) s[q] = gcs[k0 + q], kf[q] = (float)(k0 + q + 1) / (float)K;
        for (int l = 0; l < f->nb; l++)
            for (int t = f->T - 1; t >= 0; t--) {
                const float *vv = f->S0 + ((size_t)t * f->ns + 3 * (size_t)H) * KL + l;
                const float *dat = f->rec + (((size_t)l * f->T + t) * f->nd + 5) * f->Hp;
                for (int j = 0; j < H; j++)
                    for (int q = 0; q < nk; q++) s[q] += dat[j] * fabsf(vv[(size_t)j * KL] - kf[q]);
            }
        for (int q = 0; q < nk; q++) gcs[k0 + q] = s[q];
    }
}

/* Folds a chunk's records into the gradient sums: most into acc (dvr_accs' order), the heads' and
 * cs' (few, scalar) straight into dp, all in the reference's order. */
static void dvr_fold(const fctx *f, const dvr_p *w, const float *p, int H, int K, const float *dy, float *acc,
                     float *dp) {
    const int Hp = f->Hp;
    const size_t hh = (size_t)H * Hp;
    float *ac = acc, *as = ac + 2 * hh, *af = as + 2 * hh, *aah = af + hh, *aph = aah + hh, *aax = aph + hh;
    float *apth = aax + Hp, *abf = apth + Hp, *abc = abf + Hp, *abs_ = abc + Hp;
    /* the records hold dgc, dgs, df, dv, dth, dat; the saved rows h_I, h_Q, s, v, .., at cos, at sin, A, theta */
    fold(f, ac, H, 0, 0, 1), fold(f, ac + hh, H, 0, 10 * H, 0), fold(f, abc, 1, 0, -1, 0);
    fold(f, as, H, 1, H, 1), fold(f, as + hh, H, 1, 11 * H, 0), fold(f, abs_, 1, 1, -1, 0);
    fold(f, af, H, 2, 2 * H, 0), fold(f, abf, 1, 2, -1, 0);
    fold(f, aah, H, 3, 2 * H, 0), fold(f, aax, 1, 3, 12 * H, 0);
    fold(f, aph, H, 4, 2 * H, 0), fold(f, apth, 1, 4, 12 * H + 1, 0);
    float *go1 = dp + (w->wo1 - p), *go2 = dp + (w->wo2 - p);
    float *gb1 = dp + (w->bo1 - p), *gb2 = dp + (w->bo2 - p);
    for (int l = 0; l < f->nb; l++)
        for (int t = f->T - 1; t >= 0; t--) {
            const float *hI = f->S0 + (size_t)t * f->ns * KL + l, *hQ = hI + (size_t)H * KL;
            float d0 = dy[((size_t)l * f->T + t) * 2], d1 = dy[((size_t)l * f->T + t) * 2 + 1];
            for (int j = 0; j < H; j++) go1[j] += d0 * hI[(size_t)j * KL], go2[j] += d1 * hQ[(size_t)j * KL];
            *gb1 += d0, *gb2 += d1;
        }
    fold_cs(f, H, K, dp + (w->cs - p));
}

static void dvr_bwd(const dpd_model_cfg *c, const float *p, const float *x, const float *dy, int B, int T,
                    const float *ws, float *sc, float *dp, float *dx) {
    const int H = c->hidden, K = units(c), Hp = padded(H), NS = dvr_rows(H);
    const size_t hk = (size_t)H * KL, hh = (size_t)H * Hp;
    dvr_p w;
    size_t np = dvr_params(p, H, K, &w);
    float *rec = sc, *acc = rec + (size_t)KL * T * 6 * Hp, *nI = acc + dvr_accs(H), *nQ = nI + hk, *dI = nQ + hk;
    float *dQ = dI + hk, *g = dQ + hk, *dsum = g + 6 * hk, *zero = dsum + hk, *dcat = zero + hk, *dyv = dcat + 2 * hk;
    float *dA = dyv + 2 * KL, *ones = dA + 2 * KL;
    bwd_clear(dp, np, acc, dvr_accs(H), zero, hk, ones, dx, (size_t)B * T, rec, (size_t)KL * T * 6 * Hp, H, Hp);
    for (int ch = 0; ch < chunks(B); ch++) {
        const int b0 = ch * KL, nb = lanes(B, ch);
        const float *S0 = ws + (size_t)ch * T * NS * KL;
        memset(nI, 0, 2 * hk * sizeof *nI);
        for (int t = T - 1; t >= 0; t--) {
            const float *S = S0 + (size_t)t * NS * KL;
            const float *pI = t ? S - (size_t)NS * KL : zero, *pQ = t ? S - (size_t)NS * KL + hk : zero;
            lanes_pair(dyv, dy, b0, nb, T, t);
            dvr_step_back(&w, H, K, S, pI, pQ, dyv, nI, nQ, dI, dQ, g, dsum, dcat, dA);
            for (int l = 0; dx && l < nb; l++) {
                size_t i = (size_t)(b0 + l) * T + t;
                polar_back(x + 2 * i, dA[l], 0, 0, dA[KL + l], dx + 2 * i);
            }
            put(rec, g, H, Hp, 6, T, t, nb);
        }
        fctx f = {rec, S0, zero, ones, 6, NS, Hp, T, nb};
        dvr_fold(&f, &w, p, H, K, dy + (size_t)b0 * T * 2, acc, dp);
    }
    const float *ac = acc, *as = ac + 2 * hh, *af = as + 2 * hh, *aah = af + hh, *aph = aah + hh, *aax = aph + hh;
    const float *apth = aax + Hp, *abf = apth + Hp, *abc = abf + Hp, *abs_ = abc + Hp;
    unfold(dp + (w.wc - p), ac, H, 2 * H, Hp), unfold(dp + (w.ws - p), as, H, 2 * H, Hp);
    unfold(dp + (w.wf - p), af, H, H, Hp), unfold(dp + (w.wah - p), aah, H, H, Hp);
    unfold(dp + (w.wph - p), aph, H, H, Hp);
    memcpy(dp + (w.wax - p), aax, (size_t)H * sizeof *dp), memcpy(dp + (w.wpth - p), apth, (size_t)H * sizeof *dp);
    memcpy(dp + (w.bf - p), abf, (size_t)H * sizeof *dp), memcpy(dp + (w.bc - p), abc, (size_t)H * sizeof *dp);
    memcpy(dp + (w.bs - p), abs_, (size_t)H * sizeof *dp);
}

const kfam K(kfam_dvrjanet) = {dvr_ws, dvr_scratch, dvr_fwd, dvr_bwd};
