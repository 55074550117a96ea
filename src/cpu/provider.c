/* provider (cpu): the built-in CPU provider — every ABI v2 slot (and the v1 ones, which the
 * fault-injecting test provider and v1 emulation use) over src/cpu/net.c. A session owns its
 * net (weights, gradients, workspace), its AdamW state, its thread pool and its kernel table;
 * a chained frozen PA session borrows the DPD session's pool, so a DPD run has one. */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../optim.h"
#include "../status.h"
#include "dpd/provider.h"
#include "cpu.h"
#include "net.h"

typedef struct split {
    float *x, *y; /* (n, 2) each; y may be NULL */
    size_t n;
} split;

typedef struct session {
    dpd_net *n;
    dpd_pool *pool, *own_pool; /* the pool in use, and the one this session owns (none while chained) */
    int threads;
    dpd_adamw opt;
    int max_batch, T;
    float *x;                  /* v1 forward_keep: its input (B, T, 2), xcap floats */
    size_t xcap;
    int B, Tl;                 /* and its shape */
    split sp[DPD_NSPLIT];
    float *buf;                /* batch and cascade buffers, cap floats */
    size_t cap;
    struct session *pa;        /* chained frozen PA, or NULL */
} session;

/* A chained PA gets a pool of its own again (the calling thread alone if that fails). */
static void release(session *pa) {
    dpd_error e;
    if (!pa->own_pool && dpd_pool_create(pa->threads, &pa->own_pool, &e)) pa->own_pool = NULL;
    pa->pool = pa->own_pool;
    dpd_net_set_pool(pa->n, pa->pool);
}

/* Numeric libraries with threads of their own (OpenBLAS or BLIS under LAPACK, OpenMP), when
 * loaded, get the session's thread count: they are process-wide by their own design. */
static void numeric_threads(int n) {
    void (*openblas)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "openblas_set_num_threads");
    void (*omp)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "omp_set_num_threads");
    void (*blis)(int64_t) = (void (*)(int64_t))dlsym(RTLD_DEFAULT, "bli_thread_set_num_threads");
    if (openblas) openblas(n);
    if (omp) omp(n);
    if (blis) blis(n);
}

static int device_count(void *ctx) { return 1; }

static dpd_status device_info(void *ctx, int device, dpd_device_info *out) {
    const kern_ops *k = NULL;
    memset(out, 0, sizeof *out);
    (void)kern_select("kernels", "auto", &k, NULL);
    snprintf(out->name, sizeof out->name, "CPU, %d logical processors", dpd_cpu_count());
    snprintf(out->arch, sizeof out->arch, "%s", kern_name(k));
    return device ? DPD_E_INVAL : DPD_OK;
}

static int supports(void *ctx, const dpd_model_cfg *model) { return dpd_model_count(model) > 0; }

static dpd_status fail(char *err, size_t nerr, const dpd_error *e) {
    snprintf(err, nerr, "%s", e->msg);
    return e->status;
}

static void session_free(void *s) {
    session *ss = s;
    if (!ss) return;
    if (ss->pa) release(ss->pa); /* it borrowed this session's pool */
    dpd_net_free(ss->n);
    dpd_pool_free(ss->own_pool);
    dpd_adamw_free(&ss->opt);
    for (int k = 0; k < DPD_NSPLIT; k++) free(ss->sp[k].x), free(ss->sp[k].y);
    free(ss->x), free(ss->buf);
    free(ss);
}

/* Options that reach providers: threads (>= 1 here; the session layer resolves 0) and kernels. */
static dpd_status options(const dpd_kv *opts, int nopts, int *threads, const kern_ops **k, dpd_error *e) {
    *threads = 1;
    dpd_status s = kern_select("kernels", "auto", k, e);
    for (int i = 0; i < nopts && !s; i++) {
        if (!strcmp(opts[i].key, "threads")) {
            char *end;
            long v = strtol(opts[i].value, &end, 10);
            if (*end || end == opts[i].value || v < 1 || v > 1024)
                s = dpd_fail(e, DPD_E_INVAL, "threads: '%s' is out of range 1..1024", opts[i].value);
            *threads = (int)v;
        } else if (!strcmp(opts[i].key, "kernels")) {
            s = kern_select("kernels", opts[i].value, k, e);
        }
    }
    return s;
}

static dpd_status session_open(void *ctx, int device, const dpd_model_cfg *model, const dpd_tensor *t, int nt,
                               int max_batch, int T, const dpd_kv *opts, int nopts, void **out, char *err,
                               size_t nerr) {
    dpd_error e = {0};
    const kern_ops *k;
    int threads;
    *out = NULL;
    if (options(opts, nopts, &threads, &k, &e)) return fail(err, nerr, &e);
    session *s = calloc(1, sizeof *s);
    if (!s) return snprintf(err, nerr, "out of memory"), DPD_E_NOMEM;
    s->max_batch = max_batch, s->T = T, s->threads = threads;
    numeric_threads(threads);
    if (dpd_pool_create(threads, &s->own_pool, &e) || dpd_net_create(model, k, s->own_pool, &s->n, &e)) {
        session_free(s);
        return fail(err, nerr, &e);
    }
    s->pool = s->own_pool;
    if (nt > 0 && t[nt - 1].offset + t[nt - 1].numel != dpd_net_nparams(s->n)) {
        session_free(s);
        return snprintf(err, nerr, "the tensor table does not match %s's layout", model->family), DPD_E_INVAL;
    }
    if ((T > 0 && dpd_net_reserve(s->n, max_batch, T, &e)) || dpd_adamw_init(&s->opt, dpd_net_nparams(s->n), 0, 0, &e)) {
        session_free(s);
        return fail(err, nerr, &e);
    }
    *out = s;
    return DPD_OK;
}

static dpd_status session_create(void *ctx, int device, const dpd_model_cfg *model, int max_batch, int T,
                                 void **out, char *err, size_t nerr) {
    return session_open(ctx, device, model, NULL, 0, max_batch, T, NULL, 0, out, err, nerr);
}

static dpd_status upload(void *s, const float *p, char *err, size_t nerr) {
    session *ss = s;
    if (p != dpd_net_params(ss->n)) memcpy(dpd_net_params(ss->n), p, dpd_net_nparams(ss->n) * sizeof *p);
    return DPD_OK;
}

static dpd_status download(void *s, float *p, char *err, size_t nerr) {
    session *ss = s;
    if (p != dpd_net_params(ss->n)) memcpy(p, dpd_net_params(ss->n), dpd_net_nparams(ss->n) * sizeof *p);
    return DPD_OK;
}

void dpd_cpu_share(void *s, float *params) { dpd_net_share(((session *)s)->n, params); }

static dpd_status forward(void *s, const float *x, int B, int T, float *y, char *err, size_t nerr) {
    session *ss = s;
    dpd_error e = {0};
    return dpd_net_infer(ss->n, x, B, T, y, &e) ? fail(err, nerr, &e) : DPD_OK;
}

static dpd_status train_step(void *s, const float *x, const float *t, int B, int T, double max_norm, double *loss,
                             char *err, size_t nerr) {
    session *ss = s;
    dpd_error e = {0};
    if (dpd_net_train_step(ss->n, x, t, B, T, loss, NULL, &e)) return fail(err, nerr, &e);
    dpd_clip(dpd_net_grads(ss->n), dpd_net_nparams(ss->n), max_norm);
    return DPD_OK;
}

static dpd_status optimizer_step(void *s, double lr, double wd, char *err, size_t nerr) {
    session *ss = s;
    ss->opt.lr = lr, ss->opt.wd = wd;
    dpd_adamw_step(&ss->opt, dpd_net_params(ss->n), dpd_net_grads(ss->n));
    return DPD_OK;
}

static dpd_status forward_keep(void *s, const float *x, int B, int T, float *y, char *err, size_t nerr) {
    session *ss = s;
    size_t need = (size_t)B * T * 2;
    if (need > ss->xcap) { /* grown on demand: a session may be opened without a reservation */
        free(ss->x);
        ss->xcap = (ss->x = malloc(need * sizeof *ss->x)) ? need : 0;
        if (!ss->x) return snprintf(err, nerr, "out of memory for a %d x %d batch", B, T), DPD_E_NOMEM;
    }
    dpd_error e = {0};
    if (dpd_net_forward(ss->n, x, B, T, y, &e)) return fail(err, nerr, &e);
    memcpy(ss->x, x, (size_t)B * T * 2 * sizeof *x), ss->B = B, ss->Tl = T;
    return DPD_OK;
}

static dpd_status backward(void *s, const float *dy, float *dx, char *err, size_t nerr) {
    session *ss = s;
    dpd_error e = {0};
    return dpd_net_backward(ss->n, ss->x, dy, ss->B, ss->Tl, dx, &e) ? fail(err, nerr, &e) : DPD_OK;
}

static dpd_status clip(void *s, double max_norm, char *err, size_t nerr) {
    session *ss = s;
    dpd_clip(dpd_net_grads(ss->n), dpd_net_nparams(ss->n), max_norm);
    return DPD_OK;
}

static dpd_status get_state(void *s, float *m, float *v, long *step, char *err, size_t nerr) {
    session *ss = s;
    memcpy(m, ss->opt.m, ss->opt.n * sizeof *m), memcpy(v, ss->opt.v, ss->opt.n * sizeof *v);
    *step = ss->opt.step;
    return DPD_OK;
}

static dpd_status set_state(void *s, const float *m, const float *v, long step, char *err, size_t nerr) {
    session *ss = s;
    memcpy(ss->opt.m, m, ss->opt.n * sizeof *m), memcpy(ss->opt.v, v, ss->opt.n * sizeof *v);
    ss->opt.step = step;
    return DPD_OK;
}

static dpd_status zeros(void *s, long long z[4], char *err, size_t nerr) {
    dpd_net_zeros(((session *)s)->n, z);
    return DPD_OK;
}

/* ---- version 2 ---- */

/* The session's buffer, grown to at least n floats (contents not kept). */
static float *scratch(session *s, size_t n) {
    if (n > s->cap) {
        free(s->buf);
        s->buf = malloc(n * sizeof *s->buf);
        s->cap = s->buf ? n : 0;
    }
    return s->buf;
}

static dpd_status attach(void *s, int k, const float *x, const float *y, size_t n, char *err, size_t nerr) {
    session *ss = s;
    if (k < 0 || k >= DPD_NSPLIT) return snprintf(err, nerr, "split %d is not 0, 1 or 2", k), DPD_E_INVAL;
    split *p = &ss->sp[k];
    free(p->x), free(p->y);
    p->x = malloc(n * 2 * sizeof *p->x);
    p->y = y ? malloc(n * 2 * sizeof *p->y) : NULL;
    p->n = n;
    if (!p->x || (y && !p->y)) return snprintf(err, nerr, "out of memory for a %zu-sample split", n), DPD_E_NOMEM;
    memcpy(p->x, x, n * 2 * sizeof *x);
    if (y) memcpy(p->y, y, n * 2 * sizeof *y);
    return DPD_OK;
}

/* One DPD step through the chained PA on the gathered batch: u = DPD(x), y = PA(u), the MSE
 * against g x, gradients back through the PA (its own gradient is computed and never used) into
 * the DPD. */
static dpd_status chained_step(session *s, const float *bx, const float *by, int B, int L, float *u, double *loss,
                               dpd_error *e) {
    size_t n = (size_t)B * L * 2;
    float *yh = u + n, *dyh = yh + n, *du = dyh + n;
    dpd_status st = dpd_net_forward(s->n, bx, B, L, u, e);
    if (!st) st = dpd_net_forward(s->pa->n, u, B, L, yh, e);
    if (st) return st;
    *loss = dpd_mse(yh, by, n, dyh);
    if (!isfinite(*loss)) return dpd_fail(e, DPD_E_DIVERGED, "training diverged: the loss is not finite (lower lr)");
    if (!(st = dpd_net_backward(s->pa->n, u, dyh, B, L, du, e))) st = dpd_net_backward(s->n, bx, du, B, L, NULL, e);
    return st;
}

static dpd_status train_steps(void *s, const uint32_t *frames, size_t nframes, int B, int L, int S, double lr,
                              double wd, double max_norm, double *losses, char *err, size_t nerr) {
    session *ss = s;
    const split *tr = &ss->sp[DPD_TRAIN];
    dpd_error e = {0};
    if (!tr->x || !tr->y) return snprintf(err, nerr, "no training split attached"), DPD_E_INVAL;
    size_t fb = (size_t)B * L * 2;
    float *bx = scratch(ss, (ss->pa ? 6 : 2) * fb), *by = bx + fb;
    if (!bx) return snprintf(err, nerr, "out of memory for a %d x %d batch", B, L), DPD_E_NOMEM;
    for (size_t f0 = 0, k = 0; f0 < nframes; f0 += (size_t)B, k++) {
        int b = nframes - f0 < (size_t)B ? (int)(nframes - f0) : B;
        dpd_frames_gather(tr->x, tr->y, frames + f0, b, L, S, bx, by);
        dpd_status st = ss->pa ? chained_step(ss, bx, by, b, L, by + fb, &losses[k], &e)
                               : dpd_net_train_step(ss->n, bx, by, b, L, &losses[k], NULL, &e);
        if (st) return fail(err, nerr, &e);
        dpd_clip(dpd_net_grads(ss->n), dpd_net_nparams(ss->n), max_norm);
        ss->opt.lr = lr, ss->opt.wd = wd;
        dpd_adamw_step(&ss->opt, dpd_net_params(ss->n), dpd_net_grads(ss->n));
    }
    return DPD_OK;
}

static dpd_status evaluate(void *s, int k, int N, int batch, float *pred, char *err, size_t nerr) {
    session *ss = s;
    dpd_error e = {0};
    const split *p = k >= 0 && k < DPD_NSPLIT ? &ss->sp[k] : NULL;
    if (!p || !p->x || N < 1 || batch < 1 || p->n % (size_t)N)
        return snprintf(err, nerr, "split %d: nothing attached in sequences of %d", k, N), DPD_E_INVAL;
    int S = (int)(p->n / (size_t)N);
    float *u = ss->pa ? scratch(ss, (size_t)(S < batch ? S : batch) * N * 2) : NULL;
    if (ss->pa && !u) return snprintf(err, nerr, "out of memory for an evaluation batch"), DPD_E_NOMEM;
    for (int s0 = 0; s0 < S; s0 += batch) {
        int b = S - s0 < batch ? S - s0 : batch;
        size_t off = (size_t)s0 * N * 2;
        dpd_status st = dpd_net_infer(ss->n, p->x + off, b, N, ss->pa ? u : pred + off, &e);
        if (!st && ss->pa) st = dpd_net_infer(ss->pa->n, u, b, N, pred + off, &e);
        if (st) return fail(err, nerr, &e);
    }
    return DPD_OK;
}

static dpd_status chain(void *s, void *frozen, char *err, size_t nerr) {
    session *ss = s, *pa = frozen;
    if (pa == ss) return snprintf(err, nerr, "a session cannot be chained to itself"), DPD_E_INVAL;
    if (ss->pa && ss->pa != pa) release(ss->pa);
    if (pa && pa != ss->pa) { /* one pool for the cascade */
        dpd_pool_free(pa->own_pool);
        pa->own_pool = NULL, pa->pool = ss->pool;
        dpd_net_set_pool(pa->n, ss->pool);
    }
    ss->pa = pa;
    return DPD_OK;
}

static const dpd_provider_i cpu_i = {
    .api_version = DPD_PROVIDER_API, .name = "cpu", .device_count = device_count, .device_info = device_info,
    .supports = supports, .session_create = session_create, .session_free = session_free, .upload = upload,
    .download = download, .forward = forward, .train_step = train_step, .optimizer_step = optimizer_step,
    .forward_keep = forward_keep, .backward = backward, .clip = clip, .get_state = get_state, .set_state = set_state,
    .zeros = zeros, .session_open = session_open, .attach = attach, .train_steps = train_steps,
    .evaluate = evaluate, .chain = chain};
static const dpd_provider cpu = {&cpu_i, NULL};

const dpd_provider *dpd_provider_cpu(void) { return &cpu; }
