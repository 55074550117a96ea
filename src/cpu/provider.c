/* provider (cpu): the built-in CPU provider — dpd_model sessions on dpd's thread pool and
 * kernels, behind the same table a loadable provider fills (include/dpd/provider.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../model.h"
#include "../optim.h"
#include "../pool.h"
#include "dpd/provider.h"

typedef struct session {
    dpd_model *m;
    dpd_pool *pool;
    dpd_adamw opt;
    int max_batch, T;
} session;

static int threads = 1;

void dpd_provider_cpu_threads(int n) { threads = n > 0 ? n : 1; }

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
    if (dpd_model_reserve(s->m, max_batch, T, &e) || dpd_adamw_init(&s->opt, dpd_model_nparams(s->m), 0, 0, &e)) {
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

static const dpd_provider_i cpu_i = {
    .api_version = DPD_PROVIDER_API, .name = "cpu", .device_count = device_count, .device_info = device_info,
    .supports = supports, .session_create = session_create, .session_free = session_free, .upload = upload,
    .download = download, .forward = forward, .train_step = train_step, .optimizer_step = optimizer_step};
static const dpd_provider cpu = {&cpu_i, NULL};

const dpd_provider *dpd_provider_cpu(void) { return &cpu; }
