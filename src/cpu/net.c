/* net: see net.h. Batches run in fixed chunks of DPD_CHUNK sequences, one family call each, spread over the
 * model's thread pool. Each chunk has its own workspace and gradient buffer; chunk gradients
 * are summed in chunk order. The partition and the reduction order do not depend on the number
 * of threads, so results are bit-identical for any thread count. */
#include "net.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "../kern/kern.h"
#include "../optim.h"
#include "../pool.h"
#include "../status.h"

struct dpd_net {
    dpd_model_cfg cfg;
    const dpd_family *fam;
    const kern_ops *k;        /* NULL: reference kernels */
    size_t np;
    float *p, *g;
    float *own_p;             /* p when the net owns it; NULL while it uses a caller's buffer */
    float *ws, *scratch, *gc, *io; /* per chunk, per thread, per chunk, batch (y then dy) */
    size_t cap_ws, cap_scratch, cap_gc, cap_io; /* their sizes in floats */
    double *part;             /* per-chunk squared-error sums */
    int cap_part;
    long long dz[4];          /* delta statistics since the last call (family.h) */
    dpd_pool *pool;           /* not owned; NULL = the calling thread only */
};

/* n floats, zeroed, 64-byte aligned; free_floats(p, n) frees them. Workspaces of long sequences
 * are reserved for hundreds of MB, and the first touch of each 4 KiB page costs a fault (tens of
 * microseconds in some VMs: 2 s of a 2.2 s `dpd run`, once). So from HUGE bytes up the block is an
 * anonymous mapping: the system zeroes a page when it is first touched (a reservation costs
 * nothing until used, and an inference touches a small part of a training workspace), in
 * transparent huge pages where the system allows them (madvise mode): 512 pages a fault. */
#define HUGE ((size_t)2 << 20)
static size_t block(size_t n) { return (n * sizeof(float) + 63) / 64 * 64; }
static size_t mapped(size_t n) { return block(n) >= HUGE ? (block(n) + HUGE - 1) / HUGE * HUGE : 0; }

static float *alloc_floats(size_t n) {
    size_t len = mapped(n);
    if (len) {
        void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) return NULL;
        madvise(m, len, MADV_HUGEPAGE); /* advice only: a refusal changes nothing */
        return m;
    }
    float *p = aligned_alloc(64, block(n) ? block(n) : 64);
    if (p) memset(p, 0, block(n));
    return p;
}

static void free_floats(float *p, size_t n) {
    if (p && mapped(n)) munmap(p, mapped(n));
    else free(p);
}

dpd_status dpd_net_create(const dpd_model_cfg *c, const kern_ops *k, dpd_pool *pool, dpd_net **out, dpd_error *err) {
    *out = NULL;
    const dpd_family *f = dpd_family_find(c->family);
    if (!f) return dpd_fail(err, DPD_E_UNSUPPORTED, "model family '%s' is not known", c->family);
    dpd_net *n = calloc(1, sizeof *n);
    if (!n) return dpd_fail(err, DPD_E_NOMEM, "out of memory creating a model");
    dpd_tensor t[DPD_MAX_TENSORS];
    int nt = f->layout(c, t);
    n->cfg = *c, n->fam = f, n->k = k, n->pool = pool;
    n->np = t[nt - 1].offset + t[nt - 1].numel;
    n->p = n->own_p = alloc_floats(n->np);
    n->g = alloc_floats(n->np);
    if (!n->p || !n->g) {
        size_t np = n->np;
        dpd_net_free(n);
        return dpd_fail(err, DPD_E_NOMEM, "out of memory for %zu parameters", np);
    }
    *out = n;
    return DPD_OK;
}

void dpd_net_free(dpd_net *m) {
    if (!m) return;
    free_floats(m->own_p, m->np);
    free_floats(m->g, m->np);
    free_floats(m->ws, m->cap_ws);
    free_floats(m->scratch, m->cap_scratch);
    free_floats(m->gc, m->cap_gc);
    free_floats(m->io, m->cap_io);
    free(m->part);
    free(m);
}

size_t dpd_net_nparams(const dpd_net *n) { return n->np; }
float *dpd_net_params(dpd_net *n) { return n->p; }
float *dpd_net_grads(dpd_net *n) { return n->g; }
const kern_ops *dpd_net_kernels(const dpd_net *n) { return n->k; }
void dpd_net_set_pool(dpd_net *n, dpd_pool *pool) { n->pool = pool; }

void dpd_net_share(dpd_net *n, float *params) {
    if (params == n->p) return;
    memcpy(params, n->p, n->np * sizeof *params);
    free_floats(n->own_p, n->np);
    n->own_p = NULL, n->p = params;
}

/* Grows *buf to at least n floats (contents not kept). */
static int grow(float **buf, size_t *cap, size_t n) {
    if (n <= *cap) return 1;
    free_floats(*buf, *cap);
    *buf = alloc_floats(n);
    *cap = *buf ? n : 0;
    return *buf != NULL;
}

static int nchunks(int B) { return (B + DPD_CHUNK - 1) / DPD_CHUNK; }
static int chunk_b(int B) { return B < DPD_CHUNK ? B : DPD_CHUNK; }
static int chunk_len(int B, int c) { return B - c * DPD_CHUNK < DPD_CHUNK ? B - c * DPD_CHUNK : DPD_CHUNK; }

dpd_status dpd_net_reserve(dpd_net *m, int B, int T, dpd_error *err) {
    if (B < 1 || T < 1) return dpd_fail(err, DPD_E_INVAL, "batch %d x length %d: both must be >= 1", B, T);
    int th = dpd_pool_threads(m->pool), C = chunk_b(B);
    if (!grow(&m->ws, &m->cap_ws, (size_t)nchunks(B) * m->fam->ws_size(m->k, &m->cfg, C, T)) ||
        !grow(&m->scratch, &m->cap_scratch, (size_t)th * m->fam->scratch_size(m->k, &m->cfg, C, T)) ||
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
    dpd_net *m;
    const float *x, *tgt;
    float *y, *dy, *dx;
    int B, T;
    size_t wsc, scc; /* workspace per chunk, scratch per thread (floats) */
    int infer;       /* forward chunks run the family's infer (dpd_net_infer) */
} job;

/* A chunk's forward: the family's forward, or its infer when the job is an inference. */
static void fwd_task(void *arg, int c, int thread) {
    job *j = arg;
    dpd_net *m = j->m;
    size_t off = (size_t)c * DPD_CHUNK * j->T * 2;
    (void)thread;
    (j->infer ? m->fam->infer : m->fam->forward)(m->k, &m->cfg, m->p, j->x + off, chunk_len(j->B, c), j->T,
                                                 j->y + off, m->ws + (size_t)c * j->wsc);
}

static void bwd_task(void *arg, int c, int thread) {
    job *j = arg;
    dpd_net *m = j->m;
    size_t off = (size_t)c * DPD_CHUNK * j->T * 2;
    m->fam->backward(m->k, &m->cfg, m->p, j->x + off, j->dy + off, chunk_len(j->B, c), j->T,
                     m->ws + (size_t)c * j->wsc, m->scratch + (size_t)thread * j->scc,
                     m->gc + (size_t)c * m->np, j->dx ? j->dx + off : NULL);
}

static job make_job(dpd_net *m, const float *x, int B, int T) {
    job j = {m, x, NULL, NULL, NULL, NULL, B, T, m->fam->ws_size(m->k, &m->cfg, chunk_b(B), T),
             m->fam->scratch_size(m->k, &m->cfg, chunk_b(B), T)};
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
static void reduce(dpd_net *m, int B) {
    memcpy(m->g, m->gc, m->np * sizeof *m->g);
    for (int c = 1; c < nchunks(B); c++) {
        const float *gc = m->gc + (size_t)c * m->np;
        for (size_t i = 0; i < m->np; i++) m->g[i] += gc[i];
    }
}

static void delta_stats(dpd_net *m, const job *j) {
    if (m->fam->delta_zeros)
        for (int c = 0; c < nchunks(j->B); c++)
            m->fam->delta_zeros(&m->cfg, m->ws + (size_t)c * j->wsc, chunk_len(j->B, c), j->T, m->dz);
}

/* Forward over the chunks, then the delta statistics (in chunk order). */
static void forward(dpd_net *m, const float *x, int B, int T, float *y) {
    job j = make_job(m, x, B, T);
    j.y = y;
    dpd_pool_run(m->pool, nchunks(B), fwd_task, &j);
    delta_stats(m, &j);
}

/* Backward over the chunks, then g = the chunk gradients summed in chunk order. */
static void backward(dpd_net *m, const float *x, const float *dy, int B, int T, float *dx) {
    job j = make_job(m, x, B, T);
    j.dy = (float *)dy, j.dx = dx;
    dpd_pool_run(m->pool, nchunks(B), bwd_task, &j);
    reduce(m, B);
}

void dpd_net_zeros(dpd_net *m, long long z[4]) {
    memcpy(z, m->dz, sizeof m->dz);
    memset(m->dz, 0, sizeof m->dz);
}

dpd_status dpd_net_forward(dpd_net *m, const float *x, int B, int T, float *y, dpd_error *err) {
    dpd_status s = dpd_net_reserve(m, B, T, err);
    if (s) return s;
    forward(m, x, B, T, y);
    return DPD_OK;
}

/* The most workspace a padded batch of fewer than KMIN sequences may take: the fast kernels keep
 * a chunk's activations for all its lanes, 16 times the reference's for one sequence, and a long
 * one (dpd run --exact over a million samples: gigabytes) is better off on the reference. */
#define PAD_WS ((size_t)64 << 20)

/* The sequences dpd_net_infer runs for B of T: B, or more where the last chunk would be shorter
 * than KMIN and the family's fast kernels are gated (family.h): that chunk is padded to KMIN with
 * silent sequences, which the fast kernels compute beside the others for no more time. Not for
 * the delta families (the silent sequences would count in their statistics), nor for fewer than
 * KMIN whose padded workspace would pass PAD_WS. */
static int infer_b(const dpd_net *m, int B, int T) {
    int last = B - (nchunks(B) - 1) * DPD_CHUNK;
    if (!m->k || !m->fam->gated || m->fam->delta_zeros || last >= KMIN) return B;
    if (B < KMIN && m->fam->ws_size(m->k, &m->cfg, KMIN, T) > PAD_WS / sizeof(float)) return B;
    return B + KMIN - last;
}

dpd_status dpd_net_infer(dpd_net *m, const float *x, int B, int T, float *y, dpd_error *err) {
    if (B < 1 || T < 1) return dpd_net_reserve(m, B, T, err); /* its refusal */
    int P = infer_b(m, B, T);
    size_t n = (size_t)B * T * 2, all = (size_t)P * T * 2;
    dpd_status s = dpd_net_reserve(m, P, T, err);
    if (s) return s;
    float *in = (float *)x, *out = y;
    if (P > B) { /* x and y padded, in io */
        in = m->io, out = m->io + all;
        memcpy(in, x, n * sizeof *in);
        memset(in + n, 0, (all - n) * sizeof *in);
    }
    if (!m->fam->infer || m->fam->delta_zeros) { /* (the statistics) */
        forward(m, in, P, T, out);
    } else {
        job j = make_job(m, in, P, T);
        j.y = out, j.infer = 1;
        dpd_pool_run(m->pool, nchunks(P), fwd_task, &j);
    }
    if (P > B) memcpy(y, out, n * sizeof *y);
    return DPD_OK;
}

dpd_status dpd_net_backward(dpd_net *m, const float *x, const float *dy, int B, int T,
                              float *dx, dpd_error *err) {
    if (m->cap_ws < (size_t)nchunks(B) * m->fam->ws_size(m->k, &m->cfg, chunk_b(B), T) ||
        m->cap_scratch < (size_t)dpd_pool_threads(m->pool) * m->fam->scratch_size(m->k, &m->cfg, chunk_b(B), T))
        return dpd_fail(err, DPD_E_INVAL, "backward of a %d x %d batch without its forward", B, T);
    backward(m, x, dy, B, T, dx);
    return DPD_OK;
}

dpd_status dpd_net_train_step(dpd_net *m, const float *x, const float *tgt, int B, int T,
                                double *loss, float *dx, dpd_error *err) {
    dpd_status s = dpd_net_reserve(m, B, T, err);
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
        return dpd_fail(err, DPD_E_DIVERGED, "training diverged: the loss is not finite (lower lr)");
    reduce(m, B);
    return DPD_OK;
}
