/* exec: see exec.h. */
#include "exec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "provider.h"
#include "settings.h"
#include "status.h"

struct dpd_exec {
    const dpd_provider *p;
    void *s;
    dpd_model_cfg cfg;
    int batch, T;
};

/* The working batch per (model, provider, device) for the rest of the process. */
static struct {
    char key[160];
    int batch;
} cache[16];

static int *cached(const dpd_exec *e) {
    char key[160];
    snprintf(key, sizeof key, "%s/%d/%d/%s/0", e->cfg.family, e->cfg.hidden, e->cfg.layers, e->p->i->name);
    for (int i = 0; i < 16; i++) {
        if (!cache[i].key[0]) snprintf(cache[i].key, sizeof cache[i].key, "%s", key), cache[i].batch = 0;
        if (!strcmp(cache[i].key, key)) return &cache[i].batch;
    }
    return &cache[15].batch;
}

static dpd_status start(dpd_exec *e, const float *params, dpd_error *err) {
    char msg[512] = "";
    if (e->s) e->p->i->session_free(e->s), e->s = NULL;
    dpd_status s = e->p->i->session_create(e->p->ctx, 0, &e->cfg, e->batch, e->T, &e->s, msg, sizeof msg);
    if (!s) s = e->p->i->upload(e->s, params, msg, sizeof msg);
    return s ? dpd_fail(err, s, "%s: %s", e->p->i->name, msg) : DPD_OK;
}

size_t dpd_exec_seq_bytes(const dpd_model_cfg *cfg, int T) {
    return (size_t)T * ((size_t)cfg->hidden * 5 + 16) * sizeof(float) + dpd_model_count(cfg) * 4;
}

dpd_status dpd_exec_open(const char *request, dpd_model *m, int max_batch, int T, dpd_exec **out, char *reason,
                         size_t nreason, dpd_error *err) {
    *out = NULL;
    dpd_exec *e = calloc(1, sizeof *e);
    if (!e) return dpd_fail(err, DPD_E_NOMEM, "out of memory");
    e->cfg = *dpd_model_config(m), e->T = T, e->batch = max_batch;
    dpd_status s = dpd_provider_select(request, &e->p, reason, nreason, err);
    if (s) {
        free(e);
        return s;
    }
    if (!e->p->i->supports(e->p->ctx, &e->cfg)) {
        char why[160];
        snprintf(why, sizeof why, "%s-%d (%d layer%s) is not supported", e->cfg.family, e->cfg.hidden, e->cfg.layers,
                 e->cfg.layers == 1 ? "" : "s");
        if ((s = dpd_provider_demote(request, &e->p, why, reason, nreason, err))) {
            free(e);
            return s;
        }
    }
    dpd_device_info d;
    dpd_settings st;
    if (strcmp(e->p->i->name, "cpu") && !e->p->i->device_info(e->p->ctx, 0, &d) && !dpd_settings_load(&st, err)) {
        int bound = dpd_settings_batch_bound(st.gpu_memory, d.memory, dpd_exec_seq_bytes(&e->cfg, T));
        if (bound > 0 && bound < e->batch) e->batch = bound;
    }
    int *c = cached(e);
    if (*c && *c < e->batch) e->batch = *c;
    /* a session that does not fit is retried at half the batch */
    while ((s = start(e, dpd_model_params(m), err)) == DPD_E_NOMEM && e->batch > 1) e->batch /= 2;
    if (s) {
        dpd_exec_close(e);
        return s;
    }
    *out = e;
    return DPD_OK;
}

void dpd_exec_close(dpd_exec *e) {
    if (!e) return;
    if (e->s) e->p->i->session_free(e->s);
    free(e);
}

const char *dpd_exec_provider(const dpd_exec *e) { return e->p->i->name; }
int dpd_exec_batch(const dpd_exec *e) { return e->batch; }

dpd_status dpd_exec_device_failed(const char *name, const char *msg, dpd_error *err) {
    dpd_settings_fall_back("%s failed during a run: %s", name, msg);
    return dpd_fail(err, DPD_E_DEVICE, "%s failed during the run: %s. The provider preference is now cpu for later "
                    "work; this run was not repeated", name, msg);
}

dpd_status dpd_exec_forward(dpd_exec *e, const float *x, int B, int T, float *y, dpd_error *err) {
    char msg[512] = "";
    for (int b0 = 0; b0 < B;) {
        int b = B - b0 < e->batch ? B - b0 : e->batch;
        size_t off = (size_t)b0 * T * 2;
        dpd_status s = e->p->i->forward(e->s, x + off, b, T, y + off, msg, sizeof msg);
        if (s == DPD_E_NOMEM && e->batch > 1) { /* halve, remember, retry this batch */
            e->batch = b / 2 > 0 ? b / 2 : 1;
            *cached(e) = e->batch;
            continue;
        }
        if (s == DPD_E_DEVICE) return dpd_exec_device_failed(e->p->i->name, msg, err);
        if (s) return dpd_fail(err, s, "%s: %s", e->p->i->name, msg);
        b0 += b;
    }
    return DPD_OK;
}
