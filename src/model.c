/* model: a model family bound to one configuration, with one 64-byte-aligned parameter buffer,
 * a gradient buffer of the same layout, and a workspace reserved ahead of the step loop.
 *
 * Batches run in fixed chunks of DPD_CHUNK sequences, one family call each, spread over the
 * model's thread pool. Each chunk has its own workspace and gradient buffer; chunk gradients
 * are summed in chunk order. The partition and the reduction order do not depend on the number
 * of threads, so results are bit-identical for any thread count. */
#include "model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pool.h"
#include "status.h"

struct dpd_model {
    dpd_model_cfg cfg;
    const dpd_family *fam;
    dpd_tensor t[DPD_MAX_TENSORS];
    int nt;
    size_t np;
    float *p, *g;
    float *ws, *scratch, *gc, *io; /* per chunk, per thread, per chunk, batch (y then dy) */
    size_t cap_ws, cap_scratch, cap_gc, cap_io; /* their sizes in floats */
    double *part;             /* per-chunk squared-error sums */
    int cap_part;
    long long dz[4];          /* delta statistics since the last reset (family.h) */
    size_t rnn_weights;
    dpd_pool *pool;           /* not owned; NULL = the calling thread only */
};

void dpd_model_set_pool(dpd_model *m, dpd_pool *pool) { m->pool = pool; }

static float *alloc_floats(size_t n) {
    size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
    float *p = aligned_alloc(64, bytes ? bytes : 64);
    if (p) memset(p, 0, bytes);
    return p;
}

static dpd_status check_cfg(const dpd_model_cfg *c, const dpd_family **fam, dpd_error *err) {
    *fam = dpd_family_find(c->family);
    if (!*fam)
        return dpd_fail(err, DPD_E_UNSUPPORTED, "model family '%s' is not known ('dpd models' lists them)",
                        c->family);
    if ((*fam)->poly && (c->order < 1 || c->order > 16 || c->memory < 1 || c->memory > 4096 ||
                         c->cross < 0 || c->cross > 64))
        return dpd_fail(err, DPD_E_INVAL, "%s: need 1 <= --K <= 16, 1 <= --Q <= 4096, 0 <= --M <= 64 (got %d, %d, %d)",
                        c->family, c->order, c->memory, c->cross);
    if (!(c->thx >= 0 && c->thh >= 0 && c->thx < 1e6 && c->thh < 1e6))
        return dpd_fail(err, DPD_E_INVAL, "delta thresholds must be >= 0 (got --thx %g --thh %g)", c->thx, c->thh);
    if (c->units < 0 || c->units > 64)
        return dpd_fail(err, DPD_E_INVAL, "--units %d out of range [1, 64]", c->units);
    if (c->hidden < 1 || c->hidden > 4096)
        return dpd_fail(err, DPD_E_INVAL, "hidden size %d out of range [1, 4096]", c->hidden);
    if (c->layers < 1 || c->layers > (*fam)->max_layers)
        return dpd_fail(err, DPD_E_INVAL, "%s: layer count %d out of range [1, %d]", c->family,
                        c->layers, (*fam)->max_layers);
    return DPD_OK;
}

size_t dpd_model_count(const dpd_model_cfg *c) {
    const dpd_family *f;
    dpd_tensor t[DPD_MAX_TENSORS];
    if (check_cfg(c, &f, NULL)) return 0;
    int n = f->layout(c, t);
    return t[n - 1].offset + t[n - 1].numel;
}

dpd_status dpd_model_create(const dpd_model_cfg *c, dpd_model **out, dpd_error *err) {
    *out = NULL;
    const dpd_family *f;
    dpd_status s = check_cfg(c, &f, err);
    if (s) return s;
    dpd_model *m = calloc(1, sizeof *m);
    if (!m) return dpd_fail(err, DPD_E_NOMEM, "out of memory creating a model");
    m->cfg = *c;
    m->fam = f;
    m->nt = f->layout(c, m->t);
    m->np = m->t[m->nt - 1].offset + m->t[m->nt - 1].numel;
    m->p = alloc_floats(m->np);
    m->g = alloc_floats(m->np);
    if (!m->p || !m->g) {
        dpd_model_free(m);
        return dpd_fail(err, DPD_E_NOMEM, "out of memory for %zu parameters", m->np);
    }
    *out = m;
    return DPD_OK;
}

void dpd_model_free(dpd_model *m) {
    if (!m) return;
    free(m->p);
    free(m->g);
    free(m->ws);
    free(m->scratch);
    free(m->gc);
    free(m->io);
    free(m->part);
    free(m);
}

const dpd_model_cfg *dpd_model_config(const dpd_model *m) { return &m->cfg; }
size_t dpd_model_nparams(const dpd_model *m) { return m->np; }
int dpd_model_ntensors(const dpd_model *m) { return m->nt; }
const dpd_tensor *dpd_model_tensor(const dpd_model *m, int i) { return &m->t[i]; }
float *dpd_model_params(dpd_model *m) { return m->p; }
float *dpd_model_grads(dpd_model *m) { return m->g; }
const dpd_family *dpd_model_family(const dpd_model *m) { return m->fam; }

void dpd_model_init(dpd_model *m, dpd_rng *rng) { m->fam->init(&m->cfg, m->t, m->p, rng); }

/* Grows *buf to at least n floats (contents not kept). */
static int grow(float **buf, size_t *cap, size_t n) {
    if (n <= *cap) return 1;
    free(*buf);
    *buf = alloc_floats(n);
    *cap = *buf ? n : 0;
    return *buf != NULL;
}

static int nchunks(int B) { return (B + DPD_CHUNK - 1) / DPD_CHUNK; }
static int chunk_b(int B) { return B < DPD_CHUNK ? B : DPD_CHUNK; }
static int chunk_len(int B, int c) { return B - c * DPD_CHUNK < DPD_CHUNK ? B - c * DPD_CHUNK : DPD_CHUNK; }

dpd_status dpd_model_reserve(dpd_model *m, int B, int T, dpd_error *err) {
    if (B < 1 || T < 1) return dpd_fail(err, DPD_E_INVAL, "batch %d x length %d: both must be >= 1", B, T);
    int th = dpd_pool_threads(m->pool), C = chunk_b(B);
    if (!grow(&m->ws, &m->cap_ws, (size_t)nchunks(B) * m->fam->ws_size(&m->cfg, C, T)) ||
        !grow(&m->scratch, &m->cap_scratch, (size_t)th * m->fam->scratch_size(&m->cfg, C, T)) ||
        !grow(&m->gc, &m->cap_gc, (size_t)nchunks(B) * m->np) || !grow(&m->io, &m->cap_io, (size_t)B * T * 4))
        return dpd_fail(err, DPD_E_NOMEM, "out of memory for a %d x %d workspace", B, T);
    if (nchunks(B) > m->cap_part) {
        double *p = realloc(m->part, (size_t)nchunks(B) * sizeof *p);
        if (!p) return dpd_fail(err, DPD_E_NOMEM, "out of memory");
        m->part = p, m->cap_part = nchunks(B);
    }
    return DPD_OK;
}

/* One batch call cut into chunks: what a chunk task needs. */
typedef struct job {
    dpd_model *m;
    const float *x, *tgt;
    float *y, *dy, *dx;
    int B, T;
    size_t wsc, scc; /* workspace per chunk, scratch per thread (floats) */
} job;

static void fwd_task(void *arg, int c, int thread) {
    job *j = arg;
    dpd_model *m = j->m;
    size_t off = (size_t)c * DPD_CHUNK * j->T * 2;
    (void)thread;
    m->fam->forward(&m->cfg, m->p, j->x + off, chunk_len(j->B, c), j->T, j->y + off, m->ws + (size_t)c * j->wsc);
}

static void bwd_task(void *arg, int c, int thread) {
    job *j = arg;
    dpd_model *m = j->m;
    size_t off = (size_t)c * DPD_CHUNK * j->T * 2;
    m->fam->backward(&m->cfg, m->p, j->x + off, j->dy + off, chunk_len(j->B, c), j->T,
                     m->ws + (size_t)c * j->wsc, m->scratch + (size_t)thread * j->scc,
                     m->gc + (size_t)c * m->np, j->dx ? j->dx + off : NULL);
}

static job make_job(dpd_model *m, const float *x, int B, int T) {
    job j = {m, x, NULL, NULL, NULL, NULL, B, T, m->fam->ws_size(&m->cfg, chunk_b(B), T),
             m->fam->scratch_size(&m->cfg, chunk_b(B), T)};
    return j;
}

/* A whole training step on one chunk while its activations are still in cache: forward, the
 * chunk's share of the MSE (dy = 2 (y - t) / n over the whole batch), backward. */
static void step_task(void *arg, int c, int thread) {
    job *j = arg;
    fwd_task(arg, c, thread);
    size_t off = (size_t)c * DPD_CHUNK * j->T * 2, len = (size_t)chunk_len(j->B, c) * j->T * 2;
    float n = (float)((size_t)j->B * j->T * 2);
    double acc = 0;
    for (size_t i = off; i < off + len; i++) {
        float d = j->y[i] - j->tgt[i];
        acc += (double)d * d;
        j->dy[i] = 2.0f * d / n;
    }
    j->m->part[c] = acc;
    bwd_task(arg, c, thread);
}

/* g = the chunk gradients summed in chunk order. */
static void reduce(dpd_model *m, int B) {
    memcpy(m->g, m->gc, m->np * sizeof *m->g);
    for (int c = 1; c < nchunks(B); c++) {
        const float *gc = m->gc + (size_t)c * m->np;
        for (size_t i = 0; i < m->np; i++) m->g[i] += gc[i];
    }
}

static void delta_stats(dpd_model *m, const job *j) {
    if (m->fam->delta_zeros)
        for (int c = 0; c < nchunks(j->B); c++)
            m->rnn_weights = m->fam->delta_zeros(&m->cfg, m->ws + (size_t)c * j->wsc, chunk_len(j->B, c), j->T, m->dz);
}

/* Forward over the chunks, then the delta statistics (in chunk order). */
static void forward(dpd_model *m, const float *x, int B, int T, float *y) {
    job j = make_job(m, x, B, T);
    j.y = y;
    dpd_pool_run(m->pool, nchunks(B), fwd_task, &j);
    delta_stats(m, &j);
}

/* Backward over the chunks, then g = the chunk gradients summed in chunk order. */
static void backward(dpd_model *m, const float *x, const float *dy, int B, int T, float *dx) {
    job j = make_job(m, x, B, T);
    j.dy = (float *)dy, j.dx = dx;
    dpd_pool_run(m->pool, nchunks(B), bwd_task, &j);
    reduce(m, B);
}

void dpd_model_add_zeros(dpd_model *m, const long long z[4]) {
    for (int i = 0; i < 4; i++) m->dz[i] += z[i];
}

int dpd_model_sparsity(dpd_model *m, dpd_sparsity *s, int reset) {
    if (!m->fam->delta_zeros) return 0;
    const long long *z = m->dz;
    *s = (dpd_sparsity){z[0], z[1], z[2], z[3]};
    s->sp_dx = z[1] ? (double)z[0] / (double)z[1] : 0;
    s->sp_dh = z[3] ? (double)z[2] / (double)z[3] : 0;
    s->sp_dv = z[1] + z[3] ? (double)(z[0] + z[2]) / (double)(z[1] + z[3]) : 0;
    s->hw_param = (double)(m->np - m->rnn_weights) + (double)m->rnn_weights * (1 - s->sp_dv);
    if (reset) memset(m->dz, 0, sizeof m->dz);
    return 1;
}

dpd_status dpd_model_forward(dpd_model *m, const float *x, int B, int T, float *y, dpd_error *err) {
    dpd_status s = dpd_model_reserve(m, B, T, err);
    if (s) return s;
    forward(m, x, B, T, y);
    return DPD_OK;
}

double dpd_mse(const float *y, const float *t, size_t n, float *dy) {
    double acc = 0;
    for (size_t i = 0; i < n; i++) {
        float d = y[i] - t[i];
        acc += (double)d * d;
        dy[i] = 2.0f * d / (float)n;
    }
    return acc / (double)n;
}

dpd_status dpd_model_backward(dpd_model *m, const float *x, const float *dy, int B, int T,
                              float *dx, dpd_error *err) {
    if (m->cap_ws < (size_t)nchunks(B) * m->fam->ws_size(&m->cfg, chunk_b(B), T) ||
        m->cap_scratch < (size_t)dpd_pool_threads(m->pool) * m->fam->scratch_size(&m->cfg, chunk_b(B), T))
        return dpd_fail(err, DPD_E_INVAL, "backward of a %d x %d batch without its forward", B, T);
    backward(m, x, dy, B, T, dx);
    return DPD_OK;
}

dpd_status dpd_model_train_step(dpd_model *m, const float *x, const float *tgt, int B, int T,
                                double *loss, float *dx, dpd_error *err) {
    dpd_status s = dpd_model_reserve(m, B, T, err);
    if (s) return s;
    size_t n = (size_t)B * T * 2;
    job j = make_job(m, x, B, T);
    j.tgt = tgt, j.y = m->io, j.dy = m->io + n, j.dx = dx;
    dpd_pool_run(m->pool, nchunks(B), step_task, &j);
    delta_stats(m, &j);
    double acc = 0;
    for (int c = 0; c < nchunks(B); c++) acc += m->part[c];
    *loss = acc / (double)n;
    if (!isfinite(*loss))
        return dpd_fail(err, DPD_E_ABORTED, "training diverged: the loss is not finite (lower --lr)");
    reduce(m, B);
    return DPD_OK;
}
