/* provider (cpu): the built-in CPU provider — dpd_model sessions on dpd's thread pool and
 * kernels, behind the same table a loadable provider fills (include/dpd/provider.h). */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../model.h"
#include "../optim.h"
#include "../pool.h"
#include "../status.h"
#include "dpd/provider.h"

typedef struct session {
    dpd_model *m;
    dpd_pool *pool;
    dpd_adamw opt;
    int max_batch, T;
    float *x;  /* the input of the last forward_keep (max_batch, T, 2) */
    int B, Tl; /* its shape */
} session;

static int threads = 1;

/* Numeric libraries with threads of their own (OpenBLAS or BLIS under LAPACK, OpenMP), when
 * loaded, get the same count. */
void dpd_provider_cpu_threads(int n) {
    threads = n > 0 ? n : 1;
    void (*openblas)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "openblas_set_num_threads");
    void (*omp)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "omp_set_num_threads");
    void (*blis)(int64_t) = (void (*)(int64_t))dlsym(RTLD_DEFAULT, "bli_thread_set_num_threads");
    if (openblas) openblas(threads);
    if (omp) omp(threads);
    if (blis) blis(threads);
}

static int device_count(void *ctx) { return 1; }

static dpd_status device_info(void *ctx, int device, dpd_device_info *out) {
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "CPU, %d logical processors (%d used)", dpd_cpu_count(), threads);
    snprintf(out->arch, sizeof out->arch, "%s", dpd_kernels_name());
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
    dpd_model_free(ss->m);
    dpd_pool_free(ss->pool);
    dpd_adamw_free(&ss->opt);
    free(ss->x);
    free(ss);
}

static dpd_status session_create(void *ctx, int device, const dpd_model_cfg *model, int max_batch, int T,
                                 void **out, char *err, size_t nerr) {
    dpd_error e = {0};
    session *s = calloc(1, sizeof *s);
    *out = NULL;
    if (!s) return snprintf(err, nerr, "out of memory"), DPD_E_NOMEM;
    s->max_batch = max_batch, s->T = T;
    if (dpd_pool_create(threads, &s->pool, &e) || dpd_model_create(model, &s->m, &e)) {
        session_free(s);
        return fail(err, nerr, &e);
    }
    dpd_model_set_pool(s->m, s->pool);
    s->x = malloc((size_t)max_batch * T * 2 * sizeof *s->x);
    if (!s->x) dpd_fail(&e, DPD_E_NOMEM, "out of memory for a %d x %d session", max_batch, T);
    if (!s->x || dpd_model_reserve(s->m, max_batch, T, &e) || dpd_adamw_init(&s->opt, dpd_model_nparams(s->m), 0, 0, &e)) {
        session_free(s);
        return fail(err, nerr, &e);
    }
    *out = s;
    return DPD_OK;
}

static dpd_status upload(void *s, const float *p, char *err, size_t nerr) {
    session *ss = s;
    memcpy(dpd_model_params(ss->m), p, dpd_model_nparams(ss->m) * sizeof *p);
    return DPD_OK;
}

static dpd_status download(void *s, float *p, char *err, size_t nerr) {
    session *ss = s;
    memcpy(p, dpd_model_params(ss->m), dpd_model_nparams(ss->m) * sizeof *p);
    return DPD_OK;
}

static dpd_status forward(void *s, const float *x, int B, int T, float *y, char *err, size_t nerr) {
    session *ss = s;
    dpd_error e = {0};
    if (B > ss->max_batch || T > ss->T)
        return snprintf(err, nerr, "batch %d x %d exceeds the session's %d x %d", B, T, ss->max_batch, ss->T), DPD_E_INVAL;
    return dpd_model_forward(ss->m, x, B, T, y, &e) ? fail(err, nerr, &e) : DPD_OK;
}

static dpd_status train_step(void *s, const float *x, const float *t, int B, int T, double max_norm, double *loss,
                             char *err, size_t nerr) {
    session *ss = s;
    dpd_error e = {0};
    if (dpd_model_train_step(ss->m, x, t, B, T, loss, NULL, &e)) return fail(err, nerr, &e);
    dpd_clip(dpd_model_grads(ss->m), dpd_model_nparams(ss->m), max_norm);
    return DPD_OK;
}

static dpd_status optimizer_step(void *s, double lr, double wd, char *err, size_t nerr) {
    session *ss = s;
    ss->opt.lr = lr, ss->opt.wd = wd;
    dpd_adamw_step(&ss->opt, dpd_model_params(ss->m), dpd_model_grads(ss->m));
    return DPD_OK;
}

static dpd_status forward_keep(void *s, const float *x, int B, int T, float *y, char *err, size_t nerr) {
    session *ss = s;
    dpd_status st = forward(s, x, B, T, y, err, nerr);
    if (!st) memcpy(ss->x, x, (size_t)B * T * 2 * sizeof *x), ss->B = B, ss->Tl = T;
    return st;
}

static dpd_status backward(void *s, const float *dy, float *dx, char *err, size_t nerr) {
    session *ss = s;
    dpd_error e = {0};
    return dpd_model_backward(ss->m, ss->x, dy, ss->B, ss->Tl, dx, &e) ? fail(err, nerr, &e) : DPD_OK;
}

static dpd_status clip(void *s, double max_norm, char *err, size_t nerr) {
    session *ss = s;
    dpd_clip(dpd_model_grads(ss->m), dpd_model_nparams(ss->m), max_norm);
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
    session *ss = s;
    dpd_sparsity sp = {0};
    dpd_model_sparsity(ss->m, &sp, 1);
    z[0] = sp.zeros_dx, z[1] = sp.numel_dx, z[2] = sp.zeros_dh, z[3] = sp.numel_dh;
    return DPD_OK;
}

static const dpd_provider_i cpu_i = {
    .api_version = DPD_PROVIDER_API, .name = "cpu", .device_count = device_count, .device_info = device_info,
    .supports = supports, .session_create = session_create, .session_free = session_free, .upload = upload,
    .download = download, .forward = forward, .train_step = train_step, .optimizer_step = optimizer_step,
    .forward_keep = forward_keep, .backward = backward, .clip = clip, .get_state = get_state, .set_state = set_state,
    .zeros = zeros};
static const dpd_provider cpu = {&cpu_i, NULL};

const dpd_provider *dpd_provider_cpu(void) { return &cpu; }
