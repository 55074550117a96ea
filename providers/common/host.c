/* host: see host.h. A family is composed from the kernels on the host: optional features
 * (DGRU's and TRes-GRU's six), recurrent layers (GRU or LSTM, one work-group of H work-items a
 * sequence for the chain through time, then the weight gradients as data-parallel sums), dense
 * heads, TRes-GRU's dilated skip, or RVTDCNN's feature image and MLP; then the MSE and one
 * work-group's update (the per-sequence gradient rows summed in batch order, the norm by a fixed
 * tree, clipping as PyTorch, AdamW with the factors computed here as the cpu provider does).
 * A train_steps call uploads its frame indices once and enqueues every step without waiting;
 * the losses and a divergence flag come back once. A chained PA session's kernels run on the
 * DPD session's queue, the PA computing only its input gradient. */
#include "host.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HOST_MAX_LAYERS 16

static const char *const kname[K_COUNT] = {
    "gather",   "features",  "features_bwd", "gru_fwd",   "gru_bwd",   "lstm_fwd",  "lstm_bwd",    "rnn_bwd_w",
    "dense_fwd", "act_bwd",  "dense_bwd_in", "dense_bwd_w", "tcn_fwd", "tcn_bwd_d", "tcn_bwd_w",   "tcn_bwd_x",
    "rvt_fwd",  "rvt_bwd_w", "rvt_bwd_img",  "rvt_bwd_x", "mse",       "adamw",     "gru_train", "lstm_train", "gru_eval", "lstm_eval", "dgru_train", "dgru_eval", "tres_train", "tres_eval",
    "rvt_train", "rvt_eval"};

const char *host_kernel_name(int k) { return k >= 0 && k < K_COUNT ? kname[k] : NULL; }

/* ---- families ------------------------------------------------------------------------------ */

/* How a family is composed from the kernels (kernels.cl): optional features, recurrent layers,
 * a head, TRes-GRU's skip, or RVTDCNN's feature image and MLP. */
enum { FEAT_NONE, FEAT_DGRU, FEAT_TRES };
enum { CELL_NONE, CELL_GRU, CELL_LSTM };
enum { HEAD_LINEAR, HEAD_DGRU, HEAD_RVT };

typedef struct plan {
    const char *family;
    int feats, cell, head, tcn, layers; /* layers: the most the family has */
    int train, eval;                    /* its fused kernels for one layer of H <= HOST_FUSED (0: none) */
} plan;

static const plan plans[] = {
    {"gru", FEAT_NONE, CELL_GRU, HEAD_LINEAR, 0, HOST_MAX_LAYERS, K_GRU_TRAIN, K_GRU_EVAL},
    {"lstm", FEAT_NONE, CELL_LSTM, HEAD_LINEAR, 0, HOST_MAX_LAYERS, K_LSTM_TRAIN, K_LSTM_EVAL},
    {"dgru", FEAT_DGRU, CELL_GRU, HEAD_DGRU, 0, HOST_MAX_LAYERS, K_DGRU_TRAIN, K_DGRU_EVAL},
    {"tres_gru", FEAT_TRES, CELL_GRU, HEAD_LINEAR, 1, 1, K_TRES_TRAIN, K_TRES_EVAL},
    {"rvtdcnn", FEAT_NONE, CELL_NONE, HEAD_RVT, 0, 1, K_RVT_TRAIN, K_RVT_EVAL}};

static const plan *plan_of(const char *family) {
    for (size_t i = 0; i < sizeof plans / sizeof *plans; i++)
        if (!strcmp(family, plans[i].family)) return &plans[i];
    return NULL;
}

static int supports(void *ctx, const dpd_model_cfg *m) {
    (void)ctx;
    const plan *f = plan_of(m->family);
    return f && m->layers >= 1 && m->layers <= f->layers && m->hidden >= 1 && m->hidden <= HOST_MAX_HIDDEN;
}

/* ---- sessions ------------------------------------------------------------------------------ */

enum { ACT_NONE, ACT_RELU, ACT_TANH };

typedef struct layer {
    int I, wih, whh, bih, bhh; /* input width; the tensors' offsets (-1: none) */
} layer;

/* A device buffer of cap floats (or uints), grown on demand. */
typedef struct buf {
    dmem m;
    size_t cap;
} buf;

/* The offsets of the tensors outside the recurrent layers (-1: the family has none). */
typedef struct heads {
    int wo, bo, wh, bh; /* fc_out, fc_hid */
    int w0, w2;         /* TRes-GRU's skip */
    int wc, bc;         /* RVTDCNN's convolution */
} heads;

/* What a recorded chunk of training steps depends on: the batch, frame, stride, chunk length, the
 * fused step's local memory, max_norm, the chained PA, and the buffers of both sessions. */
typedef struct graph_key {
    int B, L, S, C, fused;
    float max_norm;
    const void *pa;
    unsigned gen, pa_gen;
} graph_key;

typedef struct session {
    const backend *be;
    int dev;
    void *q; /* the backend's queue (with its kernels) */
    const plan *f;
    int H, L, np; /* hidden, layers, parameters */
    int fused;    /* training and evaluation may run the fused kernels (one layer, H <= HOST_FUSED, kernels not ref) */
    int replays;  /* chunks of training steps may be recorded and replayed (kernels neither ref nor eager) */
    size_t local; /* the most local memory a work-group may have (bytes) */
    layer ly[HOST_MAX_LAYERS];
    heads t;
    buf p, g, m, v;                  /* parameters, gradient, AdamW moments (np) */
    buf x[3], y[3];                  /* resident splits */
    size_t n[3];                     /* their sample counts */
    buf gp, lp;                      /* per-sequence gradient rows (B, np) and loss sums (B doubles) */
    buf bx, bt, out, dy, du;         /* batch x and target, output, its gradient, a chained DPD's (R, 2) */
    buf da, db;                      /* gradients at a layer's output and input (R, max(H, 6)) */
    buf ga;                          /* a recurrent layer's gate gradients (R, 6 H) */
    buf hs[HOST_MAX_LAYERS], sv[HOST_MAX_LAYERS];
    buf ft, df, dg;                  /* features and their gradients (R, 6) */
    buf u, dh;                       /* a head's hidden layer and its gradient (R, H) */
    buf c, dc, dimg;                 /* RVTDCNN: the image's convolution (R, 36), its gradient, (R, 20) */
    buf c1, c2, d1, d2;              /* TRes-GRU's skip: (R, 3), (R, 2) and their gradients */
    buf fr, loss, stop; /* frames, per-step losses, the divergence flag */
    buf fac, cur;       /* AdamW's factors of each step of a call (3 a step), the step's index in it */
    buf ev;             /* a fused evaluation's predictions (a split's samples, 2 each) */
    long step;
    struct session *pa; /* chained frozen PA, or NULL */
    unsigned gen;       /* counts the reallocations of s's buffers (a recorded chunk names them) */
    void *graph;        /* a recorded chunk of training steps (backend.record), or NULL */
    graph_key gkey;     /* what it was recorded for */
    int fail_at;        /* test builds: launches left before a simulated device loss (0: none) */
    int nomem_above;    /* test builds: forward and evaluate batches above this fail for memory (0: none) */
    int tile_cap;       /* test builds: the fused evaluation's tiles at most this long (0: no cap) */
} session;

static void release(const session *s, buf *b) {
    s->be->free(b->m);
    b->m = NULL, b->cap = 0;
}

/* b holds at least n elements of 4 bytes (its contents are lost when it grows). */
static dpd_status need(session *s, buf *b, size_t n, char *err, size_t nerr) {
    if (b->cap >= n && b->m) return DPD_OK;
    release(s, b);
    s->gen++;
    int e = s->be->alloc(s->q, (n ? n : 1) * 4, &b->m);
    if (e) return b->m = NULL, s->be->fail(e, "allocate a buffer", err, nerr);
    b->cap = n;
    return DPD_OK;
}

static int same_key(const graph_key *a, const graph_key *b) {
    return a->B == b->B && a->L == b->L && a->S == b->S && a->C == b->C && a->fused == b->fused &&
           a->max_norm == b->max_norm && a->pa == b->pa && a->gen == b->gen && a->pa_gen == b->pa_gen;
}

static void drop_graph(session *s) {
    if (s->graph) s->be->drop(s->graph);
    s->graph = NULL;
}

static void session_free(void *sv) {
    session *s = (session *)sv;
    if (!s) return;
    buf *all[] = {&s->p,  &s->g,    &s->m,    &s->v,    &s->gp,   &s->lp,   &s->bx, &s->bt, &s->out, &s->dy,
                  &s->du, &s->da,   &s->db,   &s->ft,   &s->df,   &s->dg,   &s->u,  &s->dh, &s->c,   &s->dc,
                  &s->dimg, &s->c1, &s->c2,   &s->d1,   &s->d2,   &s->ga,   &s->fr,   &s->loss, &s->stop, &s->fac, &s->cur, &s->ev, &s->x[0], &s->x[1],
                  &s->x[2], &s->y[0], &s->y[1], &s->y[2]};
    if (s->q) s->be->finish(s->q);
    drop_graph(s);
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) release(s, all[i]);
    for (int l = 0; l < HOST_MAX_LAYERS; l++) release(s, &s->hs[l]), release(s, &s->sv[l]);
    s->be->close(s->q);
    free(s);
}

/* The batch buffers for B sequences of T samples, as the family needs them. */
static dpd_status reserve(session *s, int B, int T, char *err, size_t nerr) {
    size_t R = (size_t)B * T, H = (size_t)s->H, w = H > 6 ? H : 6;
    const plan *f = s->f;
    struct {
        buf *b;
        size_t n;
    } all[] = {{&s->bx, 2},
               {&s->bt, 2},
               {&s->out, 2},
               {&s->dy, 2},
               {&s->du, 2},
               {&s->da, w},
               {&s->db, w},
               {&s->ga, f->cell == CELL_GRU ? 6 * H : f->cell == CELL_LSTM ? 4 * H : 0},
               {&s->ft, f->feats ? 6 : 0},
               {&s->df, f->feats ? 6 : 0},
               {&s->dg, f->feats ? 6 : 0},
               {&s->u, f->head != HEAD_LINEAR ? H : 0},
               {&s->dh, f->head != HEAD_LINEAR ? H : 0},
               {&s->c, f->head == HEAD_RVT ? 36 : 0},
               {&s->dc, f->head == HEAD_RVT ? 36 : 0},
               {&s->dimg, f->head == HEAD_RVT ? 20 : 0},
               {&s->c1, f->tcn ? 3 : 0},
               {&s->c2, f->tcn ? 2 : 0},
               {&s->d1, f->tcn ? 3 : 0},
               {&s->d2, f->tcn ? 2 : 0}};
    dpd_status st = DPD_OK;
    for (size_t i = 0; !st && i < sizeof all / sizeof *all; i++)
        if (all[i].n) st = need(s, all[i].b, all[i].n * R, err, nerr);
    for (int l = 0; !st && l < s->L; l++)
        if (!(st = need(s, &s->hs[l], H * R, err, nerr)))
            st = need(s, &s->sv[l], (f->cell == CELL_LSTM ? 5 : 4) * H * R, err, nerr);
    if (!st) st = need(s, &s->gp, (size_t)B * s->np, err, nerr);
    if (!st) st = need(s, &s->lp, 2 * (size_t)B, err, nerr); /* doubles (kernels.cl's lsum) */
    return st;
}

/* Where the model's tensors are: the table's names give the offsets (-1: absent), so no layout is
 * restated here. */
static int find(const dpd_tensor *t, int nt, const char *name) {
    for (int i = 0; i < nt; i++)
        if (!strcmp(t[i].name, name)) return (int)t[i].offset;
    return -1;
}

/* The offsets of s's tensors; 0 when one the family needs is missing (missing names it). */
static int bind(session *s, const dpd_tensor *t, int nt, const char **missing) {
    heads *h = &s->t;
    *h = (heads){find(t, nt, "backbone.fc_out.weight"), find(t, nt, "backbone.fc_out.bias"),
                 find(t, nt, "backbone.fc_hid.weight"), find(t, nt, "backbone.fc_hid.bias"),
                 find(t, nt, "backbone.tcn.0.weight"),  find(t, nt, "backbone.tcn.2.weight"),
                 find(t, nt, "backbone.Conv2d.weight"), find(t, nt, "backbone.Conv2d.bias")};
    int in = s->f->feats ? 6 : 2;
    *missing = h->wo < 0 ? "backbone.fc_out.weight" : NULL;
    if (s->f->head != HEAD_LINEAR && !*missing && (h->wh < 0 || h->bh < 0 || h->bo < 0)) *missing = "backbone.fc_hid";
    if (s->f->head == HEAD_RVT && !*missing && (h->wc < 0 || h->bc < 0)) *missing = "backbone.Conv2d";
    if (s->f->tcn && !*missing && (h->w0 < 0 || h->w2 < 0)) *missing = "backbone.tcn";
    if (s->f->cell == CELL_NONE || *missing) return !*missing;
    if (s->f->feats == FEAT_TRES) { /* one bias-free layer */
        s->ly[0] = (layer){in, find(t, nt, "backbone.rnn.x2h.weight"), find(t, nt, "backbone.rnn.h2h.weight"), -1, -1};
        if (s->ly[0].wih < 0 || s->ly[0].whh < 0) *missing = "backbone.rnn.x2h/h2h";
        return !*missing;
    }
    static const char *const kind[4] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};
    for (int l = 0; l < s->L; l++) {
        int o[4];
        for (int k = 0; k < 4; k++) {
            char nm[64];
            snprintf(nm, sizeof nm, "backbone.rnn.%s_l%d", kind[k], l);
            if ((o[k] = find(t, nt, nm)) < 0) return *missing = "a backbone.rnn tensor of the layers", 0;
        }
        s->ly[l] = (layer){l ? s->H : in, o[0], o[1], o[2], o[3]};
    }
    return 1;
}

static dpd_status session_open(void *ctx, int device, const dpd_model_cfg *m, const dpd_tensor *t, int nt,
                               int max_batch, int T, const dpd_kv *opts, int nopts, void **out, char *err,
                               size_t nerr) {
    const backend *be = (const backend *)ctx;
    *out = NULL;
    if (!supports(NULL, m))
        return snprintf(err, nerr,
                        "%s: %s-%d x %d layers is not supported (gru, lstm and dgru of 1..%d layers, tres_gru and "
                        "rvtdcnn of one; hidden 1..%d)",
                        be->name, m->family, m->hidden, m->layers, HOST_MAX_LAYERS, HOST_MAX_HIDDEN),
               DPD_E_UNSUPPORTED;
    if (device < 0 || device >= be->count()) return snprintf(err, nerr, "%s: no device %d", be->name, device), DPD_E_INVAL;
    session *s = (session *)calloc(1, sizeof *s);
    if (!s) return snprintf(err, nerr, "%s: out of memory", be->name), DPD_E_NOMEM;
    s->be = be, s->dev = device, s->H = m->hidden, s->f = plan_of(m->family), s->L = s->f->cell == CELL_NONE ? 0 : m->layers;
    for (int i = 0; i < nt; i++) s->np = (int)(t[i].offset + t[i].numel) > s->np ? (int)(t[i].offset + t[i].numel) : s->np;
    const char *missing = NULL;
    if (!bind(s, t, nt, &missing)) {
        free(s);
        return snprintf(err, nerr, "%s: the %s tensor table lacks %s", be->name, m->family, missing), DPD_E_FORMAT;
    }
    int group = 0, e = 0;
    const char *kern = "auto";
    for (int i = 0; i < nopts; i++)
        if (opts[i].key && opts[i].value && !strcmp(opts[i].key, "kernels")) kern = opts[i].value;
    s->fused = s->f->train && (s->L == 1 || s->f->cell == CELL_NONE) && s->H <= HOST_FUSED && strcmp(kern, "ref");
    s->replays = strcmp(kern, "ref") && strcmp(kern, "eager");
    dpd_status st = be->open(device, s->H, &s->q, &group, &s->local, err, nerr);
    if (!st && group < s->H)
        st = DPD_E_UNSUPPORTED, snprintf(err, nerr, "%s: the device runs at most %d work-items a group, hidden %d needs %d",
                                         be->name, group, s->H, s->H);
    buf *pv[] = {&s->p, &s->g, &s->m, &s->v};
    for (int i = 0; !st && i < 4; i++) st = need(s, pv[i], (size_t)s->np, err, nerr);
    if (!st) st = need(s, &s->stop, 1, err, nerr);
    if (!st) st = need(s, &s->cur, 1, err, nerr);
    if (!st && max_batch > 0 && T > 0) st = reserve(s, max_batch, T, err, nerr);
    if (!st && ((e = be->zero(s->q, s->m.m, (size_t)s->np * 4)) || (e = be->zero(s->q, s->v.m, (size_t)s->np * 4)) ||
                (e = be->finish(s->q))))
        st = be->fail(e, "zero the optimizer state", err, nerr);
#ifdef DPD_TEST_HOOKS
    char var[64];
    const char *v;
    snprintf(var, sizeof var, "DPD_%s_FAIL", be->name[0] == 'o' ? "OPENCL" : "CUDA");
    s->fail_at = (v = getenv(var)) ? atoi(v) : 0;
    snprintf(var, sizeof var, "DPD_%s_NOMEM", be->name[0] == 'o' ? "OPENCL" : "CUDA");
    s->nomem_above = (v = getenv(var)) ? atoi(v) : 0;
    snprintf(var, sizeof var, "DPD_%s_TILE", be->name[0] == 'o' ? "OPENCL" : "CUDA");
    s->tile_cap = (v = getenv(var)) ? atoi(v) : 0;
#endif
    if (st) return session_free(s), st;
    *out = s;
    return DPD_OK;
}

/* ---- launches ------------------------------------------------------------------------------ */

/* Launches kernel k of s on q's queue (s's own, or the DPD's that s, a PA, is chained to) over n
 * work-items in groups of local (0: the API's choice), arguments by types (backend.launch). */
static int go(session *s, session *q, int k, size_t n, size_t local, const char *types, ...) {
#ifdef DPD_TEST_HOOKS
    if (s->fail_at > 0 && --s->fail_at == 0) s->fail_at = -1; /* the N-th launch, and every later one */
    if (s->fail_at < 0) return s->be->lost;
#endif
    if (!n) return 0;
    va_list ap;
    va_start(ap, types);
    int e = s->be->launch(s->q, q->q, k, n, local, types, ap);
    va_end(ap);
    return e;
}

/* A dense layer: out (R, M) = act([in1 in2] W^T + b). */
static int dense(session *s, session *q, size_t R, dmem in1, int K1, dmem in2, int K2, int w, int b,
                    int M, int act, dmem out) {
    return go(s, q, K_DENSE_FWD, R * M, 0, "mimimiiiim", in1, K1, in2 ? in2 : in1, K2, s->p.m, w, b, M, act, out);
}

/* Its backward from d (R, M), already past the activation: the input gradients into din1 (and
 * din2 when not NULL), the parameter gradients when want_dw. */
static int dense_back(session *s, session *q, int B, int T, dmem d, int M, dmem in1, int K1, dmem in2,
                         int K2, int w, int b, dmem din1, dmem din2, int want_dw) {
    size_t R = (size_t)B * T;
    int e = 0;
    if (din1) e = go(s, q, K_DENSE_BWD_IN, R * K1, 0, "mimiiiim", d, M, s->p.m, w, K1 + K2, 0, K1, din1);
    if (!e && din2) e = go(s, q, K_DENSE_BWD_IN, R * K2, 0, "mimiiiim", d, M, s->p.m, w, K1 + K2, K1, K2, din2);
    if (!e && want_dw)
        e = go(s, q, K_DENSE_BWD_W, (size_t)B * ((size_t)M * (K1 + K2) + (b >= 0 ? M : 0)), 0, "mimimiimiii", d, M, in1, K1, in2 ? in2 : in1, K2, T, s->gp.m, s->np, w, b);
    return e;
}

static int act_back(session *s, session *q, size_t n, dmem d, dmem y, int act) {
    return go(s, q, K_ACT_BWD, n, 0, "mmi", d, y, act);
}

/* s's model over B sequences of T samples of in (at float offset off) -> out (B, T, 2). */
static int fwd(session *s, session *q, dmem in, int off, int B, int T, dmem out) {
    const plan *f = s->f;
    const heads *t = &s->t;
    size_t R = (size_t)B * T;
    int e = 0;
    if (f->head == HEAD_RVT) {
        e = go(s, q, K_RVT_FWD, R, 0, "miimiim", in, off, T, s->p.m, t->wc, t->bc, s->c.m);
        if (!e) e = dense(s, q, R, s->c.m, 36, NULL, 0, t->wh, t->bh, s->H, ACT_TANH, s->u.m);
        return e ? e : dense(s, q, R, s->u.m, s->H, NULL, 0, t->wo, t->bo, 2, ACT_NONE, out);
    }
    dmem src = in;
    int soff = off;
    if (f->feats) {
        e = go(s, q, K_FEATURES, R, 0, "miiim", in, off, T, f->feats, s->ft.m);
        src = s->ft.m, soff = 0;
    }
    int kf = f->cell == CELL_LSTM ? K_LSTM_FWD : K_GRU_FWD;
    for (int l = 0; l < s->L && !e; l++) {
        const layer *y = &s->ly[l];
        e = go(s, q, kf, (size_t)B * s->H, (size_t)s->H, "miiiimiiiimml", l ? s->hs[l - 1].m : src, l ? 0 : soff, y->I, T, s->H, s->p.m, y->wih,
                 y->whh, y->bih, y->bhh, s->hs[l].m, s->sv[l].m, s->H);
    }
    dmem top = s->hs[s->L - 1].m;
    if (!e && f->head == HEAD_DGRU) {
        e = dense(s, q, R, top, s->H, NULL, 0, t->wh, t->bh, s->H, ACT_RELU, s->u.m);
        if (!e) e = dense(s, q, R, s->u.m, s->H, s->ft.m, 6, t->wo, t->bo, 2, ACT_NONE, out);
    } else if (!e) {
        e = dense(s, q, R, top, s->H, NULL, 0, t->wo, t->bo, 2, ACT_NONE, out);
    }
    if (!e && f->tcn) e = go(s, q, K_TCN_FWD, R, 0, "miimiimmm", in, off, T, s->p.m, t->w0, t->w2, s->c1.m, s->c2.m, out);
    return e;
}

/* The backward of fwd from dout (B, T, 2): dx (B, T, 2) into dx when it is not NULL, the
 * parameter gradients into gp's rows when want_dw. */
static int bwd(session *s, session *q, dmem in, int off, int B, int T, dmem dout, dmem dx, int want_dw) {
    const plan *f = s->f;
    const heads *t = &s->t;
    size_t R = (size_t)B * T;
    int e = 0;
    if (f->head == HEAD_RVT) {
        e = dense_back(s, q, B, T, dout, 2, s->u.m, s->H, NULL, 0, t->wo, t->bo, s->dh.m, NULL, want_dw);
        if (!e) e = act_back(s, q, R * s->H, s->dh.m, s->u.m, ACT_TANH);
        if (!e) e = dense_back(s, q, B, T, s->dh.m, s->H, s->c.m, 36, NULL, 0, t->wh, t->bh, s->dc.m, NULL, want_dw);
        if (!e) e = act_back(s, q, R * 36, s->dc.m, s->c.m, ACT_TANH);
        if (!e && want_dw) e = go(s, q, K_RVT_BWD_W, (size_t)B * 30, 0, "miimmiii", in, off, T, s->dc.m, s->gp.m, s->np, t->wc, t->bc);
        if (!e && dx) e = go(s, q, K_RVT_BWD_IMG, R, 0, "mmim", s->dc.m, s->p.m, t->wc, s->dimg.m);
        if (!e && dx) e = go(s, q, K_RVT_BWD_X, R, 0, "miimm", in, off, T, s->dimg.m, dx);
        return e;
    }
    dmem src = f->feats ? s->ft.m : in, top = s->hs[s->L - 1].m;
    int soff = f->feats ? 0 : off;
    if (f->head == HEAD_DGRU) { /* y = W_out [u; f] + b: u = ReLU(W_hid h + b_hid) */
        e = dense_back(s, q, B, T, dout, 2, s->u.m, s->H, s->ft.m, 6, t->wo, t->bo, s->dh.m, dx ? s->df.m : NULL, want_dw);
        if (!e) e = act_back(s, q, R * s->H, s->dh.m, s->u.m, ACT_RELU);
        if (!e) e = dense_back(s, q, B, T, s->dh.m, s->H, top, s->H, NULL, 0, t->wh, t->bh, s->da.m, NULL, want_dw);
    } else {
        e = dense_back(s, q, B, T, dout, 2, top, s->H, NULL, 0, t->wo, t->bo, s->da.m, NULL, want_dw);
    }
    int lstm = f->cell == CELL_LSTM, kb = lstm ? K_LSTM_BWD : K_GRU_BWD, G = (lstm ? 4 : 3) * s->H;
    dmem dh = s->da.m, other = s->db.m, dx0 = f->feats ? (dx ? s->dg.m : NULL) : dx;
    for (int l = s->L - 1; l >= 0 && !e; l--) {
        const layer *y = &s->ly[l];
        dmem d = l ? other : dx0, x = l ? s->hs[l - 1].m : src;
        int xo = l ? 0 : soff, nb = (y->bih >= 0) + (y->bhh >= 0);
        e = go(s, q, kb, (size_t)B * s->H, (size_t)s->H, "miiiiimmmmmil", s->p.m, y->I, T, s->H, y->wih, y->whh, s->hs[l].m, s->sv[l].m, dh,
                 s->ga.m, d ? d : dh, d != NULL, (lstm ? 4 : 6) * s->H);
        if (!e && want_dw)
            e = go(s, q, K_RNN_BWD_W, (size_t)B * G * (y->I + s->H + nb), 0, "miimiimiimiiiii", s->ga.m, G, !lstm, x, xo, y->I, s->hs[l].m, s->H, T, s->gp.m,
                     s->np, y->wih, y->whh, y->bih, y->bhh);
        other = dh, dh = d;
    }
    if (!e && f->feats && dx) {
        e = go(s, q, K_FEATURES_BWD, R, 0, "miiimmim", in, off, T, f->feats, s->dg.m, s->df.m, f->head == HEAD_DGRU, dx);
    }
    if (!e && f->tcn) { /* TRes-GRU's skip, its input gradient added to dx */
        e = go(s, q, K_TCN_BWD_D, R, 0, "mmmmimm", dout, s->c1.m, s->c2.m, s->p.m, t->w2, s->d1.m, s->d2.m);
        if (!e && want_dw)
            e = go(s, q, K_TCN_BWD_W, (size_t)B * 24, 0, "miimmmmiii", in, off, T, s->c1.m, s->d1.m, s->d2.m, s->gp.m, s->np, t->w0, t->w2);
        if (!e && dx) e = go(s, q, K_TCN_BWD_X, R, 0, "mmiim", s->d1.m, s->p.m, t->w0, T, dx);
    }
    return e;
}

/* Waits for s's queue (always: a write from the caller's memory may still be queued after a
 * failed launch) and turns the first error into a status. After a failure in train_steps the
 * steps enqueued before it may have run: the caller ends the run (docs/providers.md, case 5). */
static dpd_status finish(session *s, int e, const char *what, char *err, size_t nerr) {
    int w = s->be->finish(s->q);
    if (!e) e = w;
    return e ? s->be->fail(e, what, err, nerr) : DPD_OK;
}

static dpd_status upload(void *sv, const float *p, char *err, size_t nerr) {
    session *s = (session *)sv;
    return finish(s, s->be->write(s->q, s->p.m, p, (size_t)s->np * 4, 1), "upload the parameters", err, nerr);
}

static dpd_status download(void *sv, float *p, char *err, size_t nerr) {
    session *s = (session *)sv;
    return finish(s, s->be->read(s->q, s->p.m, p, (size_t)s->np * 4), "download the parameters", err, nerr);
}

static dpd_status get_state(void *sv, float *m, float *v, long *step, char *err, size_t nerr) {
    session *s = (session *)sv;
    int e = s->be->read(s->q, s->m.m, m, (size_t)s->np * 4);
    if (!e) e = s->be->read(s->q, s->v.m, v, (size_t)s->np * 4);
    *step = s->step;
    return finish(s, e, "read the optimizer state", err, nerr);
}

static dpd_status set_state(void *sv, const float *m, const float *v, long step, char *err, size_t nerr) {
    session *s = (session *)sv;
    int e = s->be->write(s->q, s->m.m, m, (size_t)s->np * 4, 1);
    if (!e) e = s->be->write(s->q, s->v.m, v, (size_t)s->np * 4, 1);
    if (!e) s->step = step;
    return finish(s, e, "write the optimizer state", err, nerr);
}

/* Test builds: a batch of B sequences that DPD_<NAME>_NOMEM refuses (DPD_E_NOMEM), else 0. */
static dpd_status full(const session *s, int B, char *err, size_t nerr) {
    if (s->nomem_above > 0 && B > s->nomem_above)
        return snprintf(err, nerr, "%s: a batch of %d does not fit (the test build's limit %d)", s->be->name, B,
                        s->nomem_above),
               DPD_E_NOMEM;
    return DPD_OK;
}

/* v1's forward: x (B, T, 2) from the host. */
static dpd_status forward(void *sv, const float *x, int B, int T, float *y, char *err, size_t nerr) {
    session *s = (session *)sv;
    size_t n = (size_t)B * T * 2;
    if (full(s, B, err, nerr)) return DPD_E_NOMEM;
    dpd_status st = reserve(s, B, T, err, nerr);
    if (st) return st;
    int e = s->be->write(s->q, s->bx.m, x, n * 4, 0);
    if (!e) e = fwd(s, s, s->bx.m, 0, B, T, s->out.m);
    if (!e) e = s->be->read(s->q, s->out.m, y, n * 4);
    return finish(s, e, "forward", err, nerr);
}

static dpd_status attach(void *sv, int split, const float *x, const float *y, size_t n, char *err, size_t nerr) {
    session *s = (session *)sv;
    if (split < 0 || split > 2) return snprintf(err, nerr, "%s: no split %d", s->be->name, split), DPD_E_INVAL;
    if (n > INT_MAX / 2) /* the kernels' offsets are ints */
        return snprintf(err, nerr, "%s: a split of %zu samples is more than this provider addresses (%d)", s->be->name, n,
                        INT_MAX / 2),
               DPD_E_UNSUPPORTED;
    s->n[split] = 0; /* until the new split is whole */
    dpd_status st = need(s, &s->x[split], 2 * n, err, nerr);
    if (!st && y) st = need(s, &s->y[split], 2 * n, err, nerr);
    if (st) return st;
    int e = s->be->write(s->q, s->x[split].m, x, 2 * n * 4, 1);
    if (!e && y) e = s->be->write(s->q, s->y[split].m, y, 2 * n * 4, 1);
    if (!y) release(s, &s->y[split]);
    if (!e) s->n[split] = n;
    return finish(s, e, "attach a split", err, nerr);
}

/* The fused kernels' tensor offsets o_wih, o_whh, o_bih, o_bhh, o_wh, o_bh (kernels.cl): the layer's,
 * then DGRU's or RVTDCNN's fc_hid, TRes-GRU's skip W0, W2; RVTDCNN's convolution in place of the
 * layer's weights. */
static void fused_offsets(const session *s, int o[6]) {
    const layer *y = &s->ly[0];
    int rvt = s->f->head == HEAD_RVT, tcn = s->f->tcn;
    o[0] = rvt ? s->t.wc : y->wih, o[1] = rvt ? s->t.bc : y->whh, o[2] = rvt ? -1 : y->bih, o[3] = rvt ? -1 : y->bhh;
    o[4] = tcn ? s->t.w0 : s->t.wh, o[5] = tcn ? s->t.w2 : s->t.bh;
}

/* The type strings of the fused kernels' launches (RVTDCNN's take the hidden size last). */
static const char *fused_types(const session *s, int train) {
    int rvt = s->f->head == HEAD_RVT;
    return train ? (rvt ? "mmmmiiimiiiiiiiifmimli" : "mmmmiiimiiiiiiiifmiml") : (rvt ? "miimiiiiiiiimili" : "miimiiiiiiiimil");
}

/* One training step on s's queue over the next b frames of the call (their index *cur on the
 * device): gather or the fused step, the loss and its backward (through the chained PA), then
 * AdamW. Its launches do not depend on the step: a chunk of them can be recorded and replayed. */
static int step(session *s, int B, int b, int L, int S, size_t fused, double max_norm) {
    session *q = s, *pa = s->pa;
    int e;
    float n = (float)((size_t)b * L * 2);
    if (fused) {
        int o[6];
        fused_offsets(s, o);
        e = go(s, q, s->f->train, (size_t)b * HOST_FUSED, HOST_FUSED, fused_types(s, 1), s->x[0].m, s->y[0].m, s->fr.m,
               s->cur.m, B, L, S, s->p.m, o[0], o[1], o[2], o[3], s->t.wo, s->t.bo, o[4], o[5], (double)n, s->gp.m,
               s->np, s->lp.m, (int)fused, s->H);
    } else {
        e = go(s, q, K_GATHER, (size_t)b * L * 2, 0, "mmmmiiimm", s->x[0].m, s->y[0].m, s->fr.m, s->cur.m, B, L, S,
               s->bx.m, s->bt.m);
        if (!e) e = fwd(s, q, s->bx.m, 0, b, L, s->out.m);
        if (!e && pa) e = fwd(pa, q, s->out.m, 0, b, L, pa->out.m);
        if (!e)
            e = go(s, q, K_MSE, (size_t)b, 0, "mmifmm", pa ? pa->out.m : s->out.m, s->bt.m, 2 * L, (double)n, s->dy.m,
                   s->lp.m);
        if (!e && pa) e = bwd(pa, q, s->out.m, 0, b, L, s->dy.m, s->du.m, 0);
        if (!e) e = bwd(s, q, s->bx.m, 0, b, L, pa ? s->du.m : s->dy.m, NULL, 1);
    }
    if (!e)
        e = go(s, q, K_ADAMW, HOST_WG, HOST_WG, "mmmiimmmmmmmffffff", s->p.m, s->g.m, s->gp.m, b, s->np, s->m.m, s->v.m,
               s->lp.m, s->loss.m, s->cur.m, s->stop.m, s->fac.m, (double)(float)max_norm, (double)(float)0.9,
               (double)(float)0.999, (double)(float)(1.0 - 0.9), (double)(float)(1.0 - 0.999), (double)(float)1e-8);
    return e;
}

/* See host.h: the layouts of kernels.cl's gru_, lstm_, dgru_, tres_ and rvt_ train and eval (each
 * kernel's comment lists its buffers). Training: the frame, its target and loss gradient (DGRU:
 * and features, TRes-GRU: and the skip's), the hidden states, each step's gates and saved values,
 * the recurrent weights' columns; evaluation, of a tile of T samples: the tile (TRes-GRU: with 16
 * samples either side and the next, RVTDCNN: with the 3 before; DGRU, TRes-GRU: and its
 * features), the hidden states, each step's gates (DGRU: and its hidden head; the LSTM: its cell
 * state's carry). */
size_t host_fused_floats(const char *family, int hidden, int T, int train) {
    const plan *f = plan_of(family);
    if (!f || hidden < 1 || hidden > HOST_FUSED || T < 1) return 0;
    size_t H = (size_t)hidden, t = (size_t)T, lstm = f->cell == CELL_LSTM, dgru = f->head == HEAD_DGRU, tres = f->tcn;
    if (f->head == HEAD_RVT) return train ? 98 * t + 2 * H * t : 38 * t + 6 + H * t;
    if (train) return (dgru ? 12 : tres ? 22 : 6) * t + H * (t + 1) + (lstm ? 5 : dgru ? 7 : 4) * H * t + (lstm ? 8 : 6) * H;
    return (dgru ? 8 : tres ? 13 : 2) * t + (tres ? 66 : 0) + H * (t + 1) + (lstm || dgru ? 5 : 4) * H * t + (lstm ? H : 0);
}

static dpd_status train_steps(void *sv, const uint32_t *frames, size_t nframes, int B, int L, int S, double lr,
                              double wd, double max_norm, double *losses, char *err, size_t nerr) {
    session *s = (session *)sv, *pa = s->pa;
    const char *who = s->be->name;
    if (!s->x[0].m || !s->y[0].m) return snprintf(err, nerr, "%s: no training split attached", who), DPD_E_INVAL;
    if (B < 1 || L < 1 || S < 1) return snprintf(err, nerr, "%s: a batch of %d x %d at stride %d", who, B, L, S), DPD_E_INVAL;
    for (size_t i = 0; i < nframes; i++)
        if ((size_t)frames[i] * S + L > s->n[0])
            return snprintf(err, nerr, "%s: frame %u runs past the training split", who, frames[i]), DPD_E_INVAL;
    size_t steps = (nframes + B - 1) / B;
    dpd_status st = reserve(s, B, L, err, nerr);
    if (!st && pa) st = reserve(pa, B, L, err, nerr);
    if (!st) st = need(s, &s->fr, nframes, err, nerr);
    if (!st) st = need(s, &s->loss, steps, err, nerr);
    if (!st) st = need(s, &s->fac, 3 * steps, err, nerr);
    float *l = st || !steps ? NULL : (float *)malloc(4 * steps * sizeof *l); /* the losses, then fac */
    if (st || !steps) return st;
    if (!l) return snprintf(err, nerr, "%s: out of memory", who), DPD_E_NOMEM;
    float *fac = l + steps;
    for (size_t k = 0; k < steps; k++) { /* AdamW's factors for update step + k + 1, as dpd_adamw_step computes them */
        long t = s->step + (long)k + 1;
        double bc1 = 1.0 - pow(0.9, (double)t), bc2 = 1.0 - pow(0.999, (double)t);
        fac[3 * k] = (float)(1.0 - lr * wd), fac[3 * k + 1] = (float)(lr / bc1), fac[3 * k + 2] = (float)sqrt(bc2);
    }
    size_t fused = !pa && s->fused ? host_fused_floats(s->f->family, s->H, L, 1) : 0; /* the fused step's local memory, 0: not fused */
    if (fused * 4 > s->local) fused = 0;
    int zero = 0, e = s->be->write(s->q, s->fr.m, frames, nframes * 4, 0);
    if (!e) e = s->be->write(s->q, s->stop.m, &zero, 4, 0);
    if (!e) e = s->be->write(s->q, s->cur.m, &zero, 4, 0);
    if (!e) e = s->be->write(s->q, s->fac.m, fac, 3 * steps * 4, 0);
    /* whole batches: recorded once as a chunk of steps and replayed where the API can (the
     * launches of every step are the same), the rest as launched */
    size_t whole = nframes / (size_t)B, k = 0, C = whole < HOST_CHUNK ? whole : HOST_CHUNK;
    if (!e && s->replays && s->be->record && C >= 2) {
        graph_key key = {B, L, S, (int)C, (int)fused, (float)max_norm, pa, s->gen, pa ? pa->gen : 0};
        if (!s->graph || !same_key(&key, &s->gkey)) {
            drop_graph(s);
            if (!(e = s->be->record(s->q, NULL))) {
                for (size_t c = 0; c < C && !e; c++) e = step(s, B, B, L, S, fused, max_norm);
                int e2 = s->be->record(s->q, &s->graph);
                if (!e) e = e2;
                if (!e) s->gkey = key;
                else drop_graph(s);
            }
        }
        for (; k + C <= whole && !e; k += C) e = s->be->replay(s->q, s->graph);
    }
    for (; k < steps && !e; k++) e = step(s, B, nframes - k * B < (size_t)B ? (int)(nframes - k * B) : B, L, S, fused, max_norm);
    int stop = 0;
    if (!e) e = s->be->read(s->q, s->loss.m, l, steps * 4);
    if (!e) e = s->be->read(s->q, s->stop.m, &stop, 4);
    if ((st = finish(s, e, "a training step", err, nerr))) return free(l), st;
    size_t done = steps;
    for (size_t i = 0; i < steps; i++) {
        losses[i] = l[i];
        if (!isfinite(l[i])) {
            done = i;
            break;
        }
    }
    free(l);
    s->step += (long)done;
    if (stop || done < steps)
        return snprintf(err, nerr, "training diverged: the loss is not finite (lower lr)"), DPD_E_DIVERGED;
    return DPD_OK;
}

/* The fused evaluation's tile for segments of N samples: the longest up to N whose buffers fit the
 * device's local memory (test builds: at most DPD_<NAME>_TILE), 0 where not even one sample's do. */
static int eval_tile(const session *s, int N) {
    int lo = 0, hi = N;
#ifdef DPD_TEST_HOOKS
    if (s->tile_cap > 0 && s->tile_cap < hi) hi = s->tile_cap;
#endif
    while (lo < hi) {
        int mid = lo + (hi - lo + 1) / 2;
        if (host_fused_floats(s->f->family, s->H, mid, 0) * 4 <= s->local) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

static dpd_status evaluate(void *sv, int k, int N, int batch, float *pred, char *err, size_t nerr) {
    session *s = (session *)sv, *pa = s->pa;
    if (k < 0 || k > 2 || !s->x[k].m || !s->n[k] || N < 1 || batch < 1 || s->n[k] % (size_t)N)
        return snprintf(err, nerr, "%s: split %d: nothing attached in sequences of %d", s->be->name, k, N), DPD_E_INVAL;
    int S = (int)(s->n[k] / (size_t)N), most = S < batch ? S : batch;
    dpd_status st = full(s, most, err, nerr);
    if (!st) st = reserve(s, most, N, err, nerr);
    if (!st && pa) st = reserve(pa, most, N, err, nerr);
    if (st) return st;
    int e = 0, tile = !pa && s->fused ? eval_tile(s, N) : 0;
    if (tile) { /* every segment in one launch of the fused forward, in tiles of up to `tile` samples */
        int o[6];
        fused_offsets(s, o);
        if ((st = need(s, &s->ev, s->n[k] * 2, err, nerr))) return st;
        e = go(s, s, s->f->eval, (size_t)S * HOST_FUSED, HOST_FUSED, fused_types(s, 0), s->x[k].m, 0, N, s->p.m, o[0],
               o[1], o[2], o[3], s->t.wo, s->t.bo, o[4], o[5], s->ev.m, tile,
               (int)host_fused_floats(s->f->family, s->H, tile, 0), s->H);
        if (!e) e = s->be->read(s->q, s->ev.m, pred, s->n[k] * 2 * 4);
        return finish(s, e, "evaluate", err, nerr);
    }
    for (int s0 = 0; s0 < S && !e; s0 += batch) {
        int b = S - s0 < batch ? S - s0 : batch;
        e = fwd(s, s, s->x[k].m, s0 * N * 2, b, N, s->out.m);
        if (!e && pa) e = fwd(pa, s, s->out.m, 0, b, N, pa->out.m);
        if (!e)
            e = s->be->read(s->q, pa ? pa->out.m : s->out.m, pred + (size_t)s0 * N * 2, (size_t)b * N * 2 * 4);
    }
    return finish(s, e, "evaluate", err, nerr);
}

static dpd_status chain(void *sv, void *frozen, char *err, size_t nerr) {
    session *s = (session *)sv, *pa = (session *)frozen;
    if (pa == s) return snprintf(err, nerr, "%s: a session cannot be chained to itself", s->be->name), DPD_E_INVAL;
    if (pa && pa->dev != s->dev)
        return snprintf(err, nerr, "%s: the chained PA is on device %d, the DPD on %d", s->be->name, pa->dev, s->dev),
               DPD_E_INVAL;
    if (pa && pa->be->finish(pa->q)) /* its uploads are done before this queue uses its buffers */
        return snprintf(err, nerr, "%s: the chained PA's device failed", s->be->name), DPD_E_DEVICE;
    s->pa = pa;
    drop_graph(s);
    return DPD_OK;
}


static int device_count(void *ctx) { return ((const backend *)ctx)->count(); }

static dpd_status device_info(void *ctx, int d, dpd_device_info *out) {
    memset(out, 0, sizeof *out);
    return d < 0 || d >= device_count(ctx) ? DPD_E_INVAL : ((const backend *)ctx)->info(d, out);
}

void host_provider(const backend *b, dpd_provider *out) {
    static dpd_provider_i table; /* each provider library links its own host.c: one backend */
    table = (dpd_provider_i){.api_version = DPD_PROVIDER_API, .name = b->name, .device_count = device_count,
                             .device_info = device_info, .supports = supports, .session_free = session_free,
                             .upload = upload, .download = download, .forward = forward, .get_state = get_state,
                             .set_state = set_state, .session_open = session_open, .attach = attach,
                             .train_steps = train_steps, .evaluate = evaluate, .chain = chain};
    out->i = &table, out->ctx = (void *)b;
}
