/* model: a model family bound to one configuration — the parameter container. One
 * 64-byte-aligned parameter buffer in the family's tensor-table layout; no computation (sessions
 * run models: src/session.c, and on the CPU src/cpu/net.c). */
#include "model.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "status.h"

struct dpd_model {
    dpd_model_cfg cfg;
    const dpd_family *fam;
    dpd_tensor t[DPD_MAX_TENSORS];
    int nt;
    size_t np;
    float *p;
};

size_t dpd_model_count(const dpd_model_cfg *c) {
    dpd_tensor t[DPD_MAX_TENSORS];
    if (dpd_config_check_model(c, NULL)) return 0;
    const dpd_family *f = dpd_family_find(c->family);
    int n = f->layout(c, t);
    return t[n - 1].offset + t[n - 1].numel;
}

dpd_status dpd_model_create(const dpd_model_cfg *c, dpd_model **out, dpd_error *err) {
    *out = NULL;
    dpd_status s = dpd_config_check_model(c, err);
    if (s) return s;
    dpd_model *m = calloc(1, sizeof *m);
    if (!m) return dpd_fail(err, DPD_E_NOMEM, "out of memory creating a model");
    m->cfg = *c;
    for (char *p = m->cfg.family; *p; p++) *p = (char)tolower((unsigned char)*p);
    m->fam = dpd_family_find(m->cfg.family);
    m->nt = m->fam->layout(&m->cfg, m->t);
    m->np = m->t[m->nt - 1].offset + m->t[m->nt - 1].numel;
    size_t bytes = (m->np * sizeof(float) + 63) / 64 * 64;
    m->p = aligned_alloc(64, bytes);
    if (!m->p) {
        dpd_model_free(m);
        return dpd_fail(err, DPD_E_NOMEM, "out of memory for %zu parameters", m->np);
    }
    memset(m->p, 0, bytes);
    *out = m;
    return DPD_OK;
}

void dpd_model_free(dpd_model *m) {
    if (!m) return;
    free(m->p);
    free(m);
}

const dpd_model_cfg *dpd_model_config(const dpd_model *m) { return &m->cfg; }
int dpd_model_lookahead(const dpd_model_cfg *c) {
    const dpd_family *f = dpd_family_find(c->family);
    return !f ? -1 : f->ahead ? f->ahead(c) : 0;
}
int dpd_model_lookback(const dpd_model_cfg *c) {
    const dpd_family *f = dpd_family_find(c->family);
    return f && f->behind ? f->behind(c) : -1;
}
size_t dpd_model_nparams(const dpd_model *m) { return m->np; }
int dpd_model_ntensors(const dpd_model *m) { return m->nt; }
const dpd_tensor *dpd_model_tensor(const dpd_model *m, int i) { return &m->t[i]; }
float *dpd_model_params(dpd_model *m) { return m->p; }
const float *dpd_model_cparams(const dpd_model *m) { return m->p; }
const dpd_family *dpd_model_family(const dpd_model *m) { return m->fam; }

void dpd_model_init(dpd_model *m, dpd_rng *rng) { m->fam->init(&m->cfg, m->t, m->p, rng); }

int dpd_model_sparsity(const dpd_model *m, const long long z[4], dpd_sparsity *s) {
    if (!m->fam->delta_zeros) return 0;
    long long none[4] = {0};
    float empty[1] = {0};
    /* the recurrent weight count, from the family's statistics of an empty batch */
    size_t rnn_weights = m->fam->delta_zeros(&m->cfg, empty, 0, 0, none);
    *s = (dpd_sparsity){z[0], z[1], z[2], z[3]};
    s->sp_dx = z[1] ? (double)z[0] / (double)z[1] : 0;
    s->sp_dh = z[3] ? (double)z[2] / (double)z[3] : 0;
    s->sp_dv = z[1] + z[3] ? (double)(z[0] + z[2]) / (double)(z[1] + z[3]) : 0;
    s->hw_param = (double)(m->np - rnn_weights) + (double)rnn_weights * (1 - s->sp_dv);
    return 1;
}
