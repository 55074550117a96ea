/* train: OpenDPD's training loop (reference §4, §5) for a PA model, or for a DPD model through a
 * frozen PA model — frames, seeded shuffle, MSE, AdamW, global-norm clipping, ReduceLROnPlateau
 * on the validation selection metric (NMSE for PA, ACLR_AVG for DPD), per-epoch validation and
 * test on nperseg segments, best checkpoint on strict improvement — plus the run directory:
 * config.json, history.csv, best.csv, best.safetensors, last.safetensors (with optimizer,
 * scheduler and RNG state for a bit-exact --resume), events.jsonl, and for DPD runs a copy of
 * the frozen PA (pa.safetensors). Every file is replaced atomically. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "ckpt.h"
#include "dpd/dpd.h"
#include "dpd/provider.h"
#include "exec.h"
#include "file.h"
#include "ls.h"
#include "model.h"
#include "optim.h"
#include "plateau.h"
#include "provider.h"
#include "status.h"

void dpd_train_defaults(dpd_train_cfg *c) {
    memset(c, 0, sizeof *c);
    snprintf(c->out, sizeof c->out, "runs");
    snprintf(c->model.family, sizeof c->model.family, "gru");
    c->model.hidden = 23;
    c->model.layers = 1;
    c->epochs = 150;
    c->batch = 64;
    c->batch_eval = 64;
    c->frame = 200;
    c->stride = 1;
    c->lr = 5e-3;
    c->lr_end = 5e-5;
    c->decay = 0.5;
    c->patience = 5;
    c->lr_schedule = 1;
    c->weight_decay = 0.01;
    c->clip = 200;
    c->seed = 0;
    c->ls_reg = 1e-9;
    c->ls_iter = 1;
    c->threads = 1;
}

dpd_status dpd_train_preset(dpd_train_cfg *c, const char *name, dpd_error *err) {
    if (!strcmp(name, "quick"))
        c->epochs = 10, c->frame = 50, c->stride = 16;
    else if (!strcmp(name, "full"))
        c->epochs = 150, c->frame = 200, c->stride = 1;
    else
        return dpd_fail(err, DPD_E_INVAL, "unknown preset '%s' (quick or full)", name);
    snprintf(c->preset, sizeof c->preset, "%s", name);
    return DPD_OK;
}

/* ---- config.json -------------------------------------------------------------------------- */

static json_t *cfg_json(const dpd_train_cfg *c, const char *dataset, const char *run_id,
                        size_t nparams) {
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:{s:s, s:i, s:i, s:i, s:i, s:i, s:f, s:f, s:i, s:I}, s:i, s:i, "
                     "s:i, s:i, s:i, s:f, s:f, s:f, s:i, s:b, s:f, s:f, s:I, s:f, s:s, s:b, s:f, s:i}",
                     "dpd_version", DPD_VERSION, "step", c->pa[0] ? "train_dpd" : "train_pa", "pa", c->pa,
                     "data", c->data, "dataset",
                     dataset, "out", c->out, "run_id", run_id, "model", "family", c->model.family,
                     "hidden", c->model.hidden, "layers", c->model.layers, "order", c->model.order,
                     "memory", c->model.memory, "cross", c->model.cross, "thx", c->model.thx, "thh",
                     c->model.thh, "units", c->model.units, "n_params",
                     (json_int_t)nparams, "epochs", c->epochs, "batch", c->batch, "batch_eval",
                     c->batch_eval, "frame", c->frame, "stride", c->stride, "lr", c->lr, "lr_end",
                     c->lr_end, "decay", c->decay, "patience", c->patience, "lr_schedule",
                     c->lr_schedule, "weight_decay", c->weight_decay, "clip", c->clip, "seed",
                     (json_int_t)c->seed, "evm_fs", c->evm_fs, "preset", c->preset, "least_squares",
                     c->ls, "ls_reg", c->ls_reg, "ls_iterations", c->ls_iter);
}

static dpd_status cfg_load(const char *dir, dpd_train_cfg *c, dpd_error *err) {
    char path[4200];
    snprintf(path, sizeof path, "%s/config.json", dir);
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    if (!j)
        return dpd_fail(err, dpd_exists(path) ? DPD_E_FORMAT : DPD_E_IO, "%s:%d: %s", path,
                        je.line, je.text);
    const char *data, *out, *fam, *preset, *pa;
    json_int_t seed;
    int r = json_unpack_ex(j, &je, 0,
                           "{s:s, s:s, s:s, s:{s:s, s:i, s:i, s?i, s?i, s?i, s?F, s?F, s?i}, s:i, s:i, s:i, s:i, s:i, s:F, s:F, s:F, "
                           "s:i, s:b, s:F, s:F, s:I, s:F, s:s}",
                           "pa", &pa, "data", &data, "out", &out, "model", "family", &fam, "hidden",
                           &c->model.hidden, "layers", &c->model.layers, "order", &c->model.order,
                           "memory", &c->model.memory, "cross", &c->model.cross, "thx", &c->model.thx,
                           "thh", &c->model.thh, "units", &c->model.units, "epochs", &c->epochs,
                           "batch", &c->batch, "batch_eval", &c->batch_eval, "frame", &c->frame,
                           "stride", &c->stride, "lr", &c->lr, "lr_end", &c->lr_end, "decay",
                           &c->decay, "patience", &c->patience, "lr_schedule", &c->lr_schedule,
                           "weight_decay", &c->weight_decay, "clip", &c->clip, "seed", &seed,
                           "evm_fs", &c->evm_fs, "preset", &preset);
    if (r == 0) {
        snprintf(c->data, sizeof c->data, "%s", data);
        snprintf(c->pa, sizeof c->pa, "%s", pa);
        snprintf(c->out, sizeof c->out, "%s", out);
        snprintf(c->model.family, sizeof c->model.family, "%s", fam);
        snprintf(c->preset, sizeof c->preset, "%s", preset);
        c->seed = (uint64_t)seed;
    }
    json_decref(j);
    if (r) return dpd_fail(err, DPD_E_FORMAT, "%s: %s", path, je.text);
    return DPD_OK;
}

static dpd_status check_cfg(const dpd_train_cfg *c, dpd_error *err) {
    if (c->epochs < 1) return dpd_fail(err, DPD_E_INVAL, "--epochs must be >= 1 (got %d)", c->epochs);
    if (c->batch < 1 || c->batch_eval < 1)
        return dpd_fail(err, DPD_E_INVAL, "--batch and --batch-eval must be >= 1");
    if (c->frame < 1 || c->stride < 1)
        return dpd_fail(err, DPD_E_INVAL, "--frame and --stride must be >= 1");
    if (!(c->lr > 0) || c->lr_end < 0 || !(c->decay > 0 && c->decay < 1) || c->patience < 0)
        return dpd_fail(err, DPD_E_INVAL,
                        "need --lr > 0, --lr-end >= 0, 0 < --decay < 1, --patience >= 0");
    if (c->weight_decay < 0 || c->clip < 0)
        return dpd_fail(err, DPD_E_INVAL, "--weight-decay and --clip must be >= 0");
    if (c->ls && (c->ls_reg < 0 || c->ls_iter < 1))
        return dpd_fail(err, DPD_E_INVAL, "--reg must be >= 0 and --iterations >= 1");
    return DPD_OK;
}

/* ---- logs ----------------------------------------------------------------------------------- */

/* OpenDPD's log columns; DPD runs of a delta family add the sparsity columns after HIDDEN_SIZE
 * (reference §4.5). */
static const char *HEADER_A = "EPOCH,N_EPOCH,TIME:,LR,BATCH_SIZE,N_PARAM,FRAME_LENGTH,BACKBONE,HIDDEN_SIZE,";
static const char *HEADER_DELTA = "THX,THH,SP_T_DX,SP_T_DH,SP_T_DV,HW_PARAM,";
static const char *HEADER_B =
    "TRAIN_LOSS,VAL_LOSS,VAL_NMSE,VAL_EVM,VAL_ACLR_L,VAL_ACLR_R,VAL_ACLR_AVG,TEST_LOSS,TEST_NMSE,"
    "TEST_EVM,TEST_ACLR_L,TEST_ACLR_R,TEST_ACLR_AVG\n";

/* A growing text buffer (log files are rewritten whole each epoch). */
typedef struct text {
    char *s;
    size_t n, cap;
} text;

static int text_add(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int text_add(text *t, const char *fmt, ...) {
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int k = vsnprintf(t->s ? t->s + t->n : NULL, t->s ? t->cap - t->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) return 0;
        if (t->s && t->n + (size_t)k < t->cap) {
            t->n += (size_t)k;
            return 1;
        }
        size_t cap = (t->cap + (size_t)k + 1) * 2;
        char *ns = realloc(t->s, cap);
        if (!ns) return 0;
        t->s = ns, t->cap = cap;
    }
}

/* Keeps the lines of file `path` (after a header line when skip_header) whose leading integer
 * field / "epoch" value is below `epochs`: the part of a log a resumed run inherits. */
static void text_inherit(text *t, const char *path, int epochs, int csv) {
    char *buf;
    if (dpd_file_read(path, &buf, NULL, NULL)) return;
    char *save, *line = strtok_r(buf, "\n", &save);
    if (csv && line) line = strtok_r(NULL, "\n", &save);
    for (; line; line = strtok_r(NULL, "\n", &save)) {
        const char *e = csv ? line : strstr(line, "\"epoch\":");
        if (e && atoi(csv ? e : e + 8) < epochs) text_add(t, "%s\n", line);
    }
    free(buf);
}

/* ---- the run ------------------------------------------------------------------------------- */

typedef struct evalset {
    float *x, *y, *pred; /* (S, N, 2) each */
    int S, N;
} evalset;

typedef struct run {
    const dpd_train_cfg *c;
    dpd_dataset ds;
    dpd_model *m;        /* the model being trained */
    dpd_model *pa;       /* DPD runs: the frozen PA model; NULL for PA runs */
    double gain;         /* DPD runs: target gain g */
    char pa_id[256];     /* DPD runs: the PA's run id */
    float *tx, *ty;      /* train split as float (n, 2); ty = y (PA) or g x (DPD) */
    size_t nframes;
    uint32_t *perm;
    float *bx, *by;      /* (B, L, 2) batch */
    float *u, *yh, *dyh, *du; /* DPD runs: cascade buffers, max(B L, eval batch N) x 2 each */
    evalset ev[2];       /* val, test */
    dpd_metrics nodpd[2]; /* DPD runs: PA(x) against g x */
    dpd_adamw opt;
    dpd_plateau plat;
    dpd_rng rng;
    dpd_pool *pool;      /* cfg->threads workers, shared by the model and the PA */
    const dpd_provider *prov; /* gradient training: its sessions hold the weights and moments */
    void *sess, *pa_sess;     /* the model's; DPD runs: the frozen PA's */
    char prov_used[600];
    char dir[4096], id[256];
    text hist, events;
} run;

/* 1 when the log carries the delta columns: a DPD run of a family with delta statistics. */
static int delta_cols(const run *r) { return r->pa && dpd_model_family(r->m)->delta_zeros; }

static void run_free(run *r) {
    dpd_dataset_free(&r->ds);
    dpd_model_free(r->m);
    dpd_model_free(r->pa);
    free(r->tx), free(r->ty), free(r->perm), free(r->bx), free(r->by), free(r->u);
    for (int k = 0; k < 2; k++) free(r->ev[k].x), free(r->ev[k].y), free(r->ev[k].pred);
    dpd_adamw_free(&r->opt);
    dpd_pool_free(r->pool);
    if (r->prov) r->prov->i->session_free(r->sess), r->prov->i->session_free(r->pa_sess);
    free(r->hist.s), free(r->events.s);
}

/* The run's prediction for x (B, T, 2): the model, or for DPD runs PA(DPD(x)). */
static dpd_status predict(run *r, dpd_model *m, const float *x, int B, int T, float *y,
                          dpd_error *err) {
    if (!r->pa || m == r->pa) return dpd_model_forward(m, x, B, T, y, err);
    dpd_status s = dpd_model_forward(m, x, B, T, r->u, err);
    return s ? s : dpd_model_forward(r->pa, r->u, B, T, y, err);
}

/* Loss (mean of per-batch MSEs) and metrics of model m's predictions on one split. */
static dpd_status eval_split(run *r, dpd_model *m, evalset *e, double *loss, dpd_metrics *met,
                             dpd_error *err) {
    int be = r->c->batch_eval, nb = 0;
    double acc = 0;
    for (int s0 = 0; s0 < e->S; s0 += be, nb++) {
        int b = e->S - s0 < be ? e->S - s0 : be;
        size_t off = (size_t)s0 * e->N * 2, n = (size_t)b * e->N * 2;
        dpd_status s = predict(r, m, e->x + off, b, e->N, e->pred + off, err);
        if (s) return s;
        double sq = 0;
        for (size_t i = 0; i < n; i++) {
            double d = (double)e->pred[off + i] - e->y[off + i];
            sq += d * d;
        }
        acc += sq / (double)n;
    }
    *loss = acc / nb;
    return dpd_metrics_compute(e->pred, e->y, e->S, e->N, &r->ds.spec, r->c->evm_fs, met, err);
}

static void metrics_meta(char (*buf)[40], dpd_kv *kv, int *n, const char *split, const dpd_metrics *m,
                         const char *fmt) {
    static const char *names[5] = {"NMSE", "EVM", "ACLR_L", "ACLR_R", "ACLR_AVG"};
    static char keys[2][5][24];
    int k = split[0] == 't';
    const double v[5] = {m->nmse, m->evm, m->aclr_l, m->aclr_r, m->aclr_avg};
    for (int i = 0; i < 5; i++) {
        snprintf(keys[k][i], sizeof keys[k][i], "%s_%s", split, names[i]);
        snprintf(buf[*n], 40, fmt, v[i]);
        kv[*n] = (dpd_kv){keys[k][i], buf[*n]};
        (*n)++;
    }
}

static int parse_metrics(const dpd_ckpt *ck, const char *split, dpd_metrics *m) {
    static const char *names[5] = {"NMSE", "EVM", "ACLR_L", "ACLR_R", "ACLR_AVG"};
    double *v[5] = {&m->nmse, &m->evm, &m->aclr_l, &m->aclr_r, &m->aclr_avg};
    for (int i = 0; i < 5; i++) {
        char key[32];
        snprintf(key, sizeof key, "%s_%s", split, names[i]);
        const char *s = dpd_ckpt_meta(ck, key);
        if (!s) return 0;
        *v[i] = strtod(s, NULL);
    }
    return 1;
}

/* The frozen PA of a DPD run: a PA checkpoint, a PA run directory (its best.safetensors) or, on
 * resume, the run's own copy. Refused unless it is a PA model trained on this dataset. */
static dpd_status load_pa(run *r, const char *from, dpd_error *err) {
    char path[4200];
    struct stat st;
    snprintf(path, sizeof path, "%s%s", from,
             stat(from, &st) == 0 && S_ISDIR(st.st_mode) ? "/best.safetensors" : "");
    dpd_ckpt ck;
    dpd_status s = dpd_ckpt_open(path, &ck, err);
    if (s) return s;
    const char *kind = dpd_ckpt_meta(&ck, "step_kind"), *ds = dpd_ckpt_meta(&ck, "dataset"),
               *id = dpd_ckpt_meta(&ck, "run_id");
    if (kind && strcmp(kind, "train_pa"))
        s = dpd_fail(err, DPD_E_INVAL, "%s is a %s checkpoint, not a PA model (--pa needs train-pa output)",
                     path, kind);
    else if (ds && strcmp(ds, r->ds.name))
        s = dpd_fail(err, DPD_E_INVAL, "%s was trained on dataset '%s', not '%s'", path, ds, r->ds.name);
    snprintf(r->pa_id, sizeof r->pa_id, "%s", id ? id : "PA");
    dpd_ckpt_close(&ck);
    if (!s) s = dpd_ckpt_load(path, &r->pa, err);
    return s;
}

static dpd_status setup(run *r, dpd_error *err) {
    const dpd_train_cfg *c = r->c;
    dpd_status s = dpd_dataset_load(c->data, 7, 0, &r->ds, err);
    if (s || (s = dpd_pool_create(c->threads, &r->pool, err))) return s;
    if (c->pa[0]) {
        char copy[4200];
        snprintf(copy, sizeof copy, "%s/pa.safetensors", r->dir);
        if ((s = load_pa(r, c->resume[0] ? copy : c->pa, err))) return s;
        dpd_model_set_pool(r->pa, r->pool);
        r->gain = dpd_dataset_gain(&r->ds);
    }
    dpd_split *tr = &r->ds.split[DPD_TRAIN];
    r->nframes = dpd_frame_count(tr->n, c->frame, c->stride);
    if (!r->nframes && !c->ls)
        return dpd_fail(err, DPD_E_INVAL, "%s: the train split has %zu samples, fewer than one frame (%d)",
                        c->data, tr->n, c->frame);
    if ((s = dpd_model_create(&c->model, &r->m, err))) return s;
    dpd_model_set_pool(r->m, r->pool);
    size_t fb = (size_t)c->batch * c->frame * 2;
    r->tx = malloc(tr->n * 2 * sizeof(float));
    r->ty = malloc(tr->n * 2 * sizeof(float));
    r->perm = malloc(r->nframes * sizeof *r->perm);
    r->bx = malloc(fb * sizeof(float));
    r->by = malloc(fb * sizeof(float));
    if (!r->tx || !r->ty || !r->perm || !r->bx || !r->by)
        return dpd_fail(err, DPD_E_NOMEM, "out of memory for the training set");
    for (size_t i = 0; i < tr->n * 2; i++)
        r->tx[i] = (float)tr->x[i], r->ty[i] = (float)(r->pa ? r->gain * tr->x[i] : tr->y[i]);
    int N = r->ds.spec.nperseg;
    for (int k = 0; k < 2; k++) {
        evalset *e = &r->ev[k];
        const dpd_split *sp = &r->ds.split[k + 1];
        e->N = N;
        if ((s = dpd_segments(sp->x, sp->n, N, 1.0, &e->x, &e->S, err)) ||
            (s = r->pa ? dpd_segments(sp->x, sp->n, N, r->gain, &e->y, &e->S, err)
                       : dpd_segments(sp->y, sp->n, N, 1.0, &e->y, &e->S, err)))
            return s;
        e->pred = malloc((size_t)e->S * N * 2 * sizeof(float));
        if (!e->pred) return dpd_fail(err, DPD_E_NOMEM, "out of memory for predictions");
        int be = e->S < c->batch_eval ? e->S : c->batch_eval;
        if ((s = dpd_model_reserve(r->m, be, N, err)) || (r->pa && (s = dpd_model_reserve(r->pa, be, N, err))))
            return s;
        size_t need = (size_t)be * N * 2;
        if (need > fb) fb = need;
    }
    if ((s = dpd_model_reserve(r->m, c->batch, c->frame, err))) return s;
    if (r->pa) {
        if ((s = dpd_model_reserve(r->pa, c->batch, c->frame, err))) return s;
        r->u = malloc(4 * fb * sizeof(float));
        if (!r->u) return dpd_fail(err, DPD_E_NOMEM, "out of memory for the cascade");
        r->yh = r->u + fb, r->dyh = r->yh + fb, r->du = r->dyh + fb;
        double ignore;
        for (int k = 0; k < 2; k++)
            if ((s = eval_split(r, r->pa, &r->ev[k], &ignore, &r->nodpd[k], err))) return s;
    }
    if ((s = dpd_adamw_init(&r->opt, dpd_model_nparams(r->m), c->lr, c->weight_decay, err))) return s;
    dpd_plateau_init(&r->plat, c->decay, c->patience, c->lr_end);
    return DPD_OK;
}

/* A new run directory, -2, -3, ... appended when taken: <out>/<dataset>/train_pa/<RUN_ID>, or
 * for DPD runs <out>/<dataset>/train_dpd/<PA_DIR>/<RUN_ID> with PA_DIR = the PA's id without
 * its _P_ part (OpenDPD's scheme, reference §4.6). */
static dpd_status make_dir(run *r, dpd_error *err) {
    const dpd_train_cfg *c = r->c;
    char size[64];
    if (dpd_model_family(r->m)->poly)
        snprintf(size, sizeof size, "K_%d_Q_%d%s%.0d", c->model.order, c->model.memory,
                 c->model.cross ? "_M_" : "", c->model.cross);
    else
        snprintf(size, sizeof size, "H_%d", c->model.hidden);
    if (c->ls)
        snprintf(r->id, sizeof r->id, "%s_LS_M_%s_%s_P_%zu", r->pa ? "DPD" : "PA",
                 dpd_model_family(r->m)->tag, size, dpd_model_nparams(r->m));
    else
        snprintf(r->id, sizeof r->id, "%s_S_%llu_M_%s_%s_F_%d_P_%zu", r->pa ? "DPD" : "PA",
                 (unsigned long long)c->seed, dpd_model_family(r->m)->tag, size, c->frame,
                 dpd_model_nparams(r->m));
    if (delta_cols(r))
        snprintf(r->id + strlen(r->id), sizeof r->id - strlen(r->id), "_THX_%.3f_THH_%.3f", c->model.thx,
                 c->model.thh);
    char base[4096], padir[256];
    snprintf(padir, sizeof padir, "%s", r->pa_id);
    char *cut = strstr(padir, "_P_");
    if (cut) *cut = 0;
    if (r->pa) snprintf(base, sizeof base, "%s/%s/train_dpd/%s", c->out, r->ds.name, padir);
    else snprintf(base, sizeof base, "%s/%s/train_pa", c->out, r->ds.name);
    dpd_status s = dpd_mkdirs(base, err);
    if (s) return s;
    for (int k = 1; k < 10000; k++) {
        if (k == 1) snprintf(r->dir, sizeof r->dir, "%s/%s", base, r->id);
        else snprintf(r->dir, sizeof r->dir, "%s/%s-%d", base, r->id, k);
        if (mkdir(r->dir, 0777) == 0) return DPD_OK;
        if (errno != EEXIST) return dpd_fail(err, DPD_E_IO, "%s: cannot create: %s", r->dir, strerror(errno));
    }
    return dpd_fail(err, DPD_E_IO, "%s: too many runs with this id", base);
}

static dpd_status write_text(run *r, const char *name, const text *t, dpd_error *err) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", r->dir, name);
    return dpd_file_write(path, t->s, t->n, err);
}

typedef struct state { /* what last.safetensors carries beyond the weights */
    int epoch;          /* epochs completed */
    int best_epoch;
    double lr, elapsed;
    dpd_metrics best_val, best_test;
} state;

static dpd_status save_last(run *r, const state *st, dpd_error *err) {
    char v[12][80];
    dpd_kv kv[40];
    int n = 0;
#define META(key, fmt, ...) (snprintf(v[n], sizeof v[n], fmt, __VA_ARGS__), kv[n] = (dpd_kv){key, v[n]}, n++)
    META("epoch", "%d", st->epoch);
    META("best_epoch", "%d", st->best_epoch);
    META("step", "%ld", r->opt.step);
    META("lr", "%a", st->lr);
    META("elapsed", "%a", st->elapsed);
    META("plateau_best", "%a", r->plat.best);
    META("plateau_bad", "%d", r->plat.bad);
    META("rng", "%016llx%016llx%016llx%016llx", (unsigned long long)r->rng.s[0],
         (unsigned long long)r->rng.s[1], (unsigned long long)r->rng.s[2],
         (unsigned long long)r->rng.s[3]);
    META("run_id", "%s", r->id);
#undef META
    char mv[10][40];
    int nm = 0;
    metrics_meta(mv, kv + n, &nm, "val", &st->best_val, "%a");
    metrics_meta(mv, kv + n, &nm, "test", &st->best_test, "%a");
    n += nm;
    const char *names[2] = {"optimizer.exp_avg", "optimizer.exp_avg_sq"};
    const float *ex[2] = {r->opt.m, r->opt.v};
    size_t len[2] = {r->opt.n, r->opt.n};
    char path[4200];
    snprintf(path, sizeof path, "%s/last.safetensors", r->dir);
    dpd_status s = dpd_ckpt_save(path, r->m, kv, n, 2, names, ex, len, err);
    if (s || !r->pa) return s;
    /* The frozen PA as it is in memory now: proof that DPD training leaves it untouched, and what
     * a resume and `dpd eval --pa RUN_DIR` load. */
    dpd_kv pkv[3] = {{"step_kind", "train_pa"}, {"dataset", r->ds.name}, {"run_id", r->pa_id}};
    snprintf(path, sizeof path, "%s/pa.safetensors", r->dir);
    return dpd_ckpt_save(path, r->pa, pkv, 3, 0, NULL, NULL, NULL, err);
}

static dpd_status load_last(run *r, state *st, dpd_error *err) {
    char path[4200];
    snprintf(path, sizeof path, "%s/last.safetensors", r->dir);
    dpd_ckpt ck;
    dpd_status s = dpd_ckpt_open(path, &ck, err);
    if (s) return s;
    const char *e = dpd_ckpt_meta(&ck, "epoch"), *be = dpd_ckpt_meta(&ck, "best_epoch"),
               *step = dpd_ckpt_meta(&ck, "step"), *lr = dpd_ckpt_meta(&ck, "lr"),
               *el = dpd_ckpt_meta(&ck, "elapsed"), *pb = dpd_ckpt_meta(&ck, "plateau_best"),
               *pbad = dpd_ckpt_meta(&ck, "plateau_bad"), *rng = dpd_ckpt_meta(&ck, "rng"),
               *id = dpd_ckpt_meta(&ck, "run_id");
    if (!e || !be || !step || !lr || !el || !pb || !pbad || !rng || !id || strlen(rng) != 64 ||
        !parse_metrics(&ck, "val", &st->best_val) || !parse_metrics(&ck, "test", &st->best_test)) {
        dpd_ckpt_close(&ck);
        return dpd_fail(err, DPD_E_FORMAT, "%s: resume state is missing from __metadata__", path);
    }
    st->epoch = atoi(e), st->best_epoch = atoi(be);
    st->lr = strtod(lr, NULL), st->elapsed = strtod(el, NULL);
    r->opt.step = atol(step);
    r->opt.lr = st->lr;
    r->plat.best = strtod(pb, NULL), r->plat.bad = atoi(pbad);
    for (int i = 0; i < 4; i++) {
        char h[17];
        memcpy(h, rng + 16 * i, 16);
        h[16] = 0;
        r->rng.s[i] = strtoull(h, NULL, 16);
    }
    snprintf(r->id, sizeof r->id, "%s", id);
    s = dpd_ckpt_read_model(&ck, r->m, err);
    if (!s) s = dpd_ckpt_read(&ck, "optimizer.exp_avg", r->opt.m, r->opt.n, err);
    if (!s) s = dpd_ckpt_read(&ck, "optimizer.exp_avg_sq", r->opt.v, r->opt.n, err);
    dpd_ckpt_close(&ck);
    return s;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static dpd_status save_best(run *r, int epoch, const dpd_metrics *val, const dpd_metrics *test,
                            dpd_error *err) {
    char v[10][300], mv[10][40];
    dpd_kv kv[24];
    int n = 0, nm = 0;
    const dpd_train_cfg *c = r->c;
#define META(key, fmt, ...) (snprintf(v[n], sizeof v[n], fmt, __VA_ARGS__), kv[n] = (dpd_kv){key, v[n]}, n++)
    META("step_kind", "%s", r->pa ? "train_dpd" : "train_pa");
    META("dataset", "%s", r->ds.name);
    META("epoch", "%d", epoch);
    META("frame", "%d", c->frame);
    META("seed", "%llu", (unsigned long long)c->seed);
    META("input_size", "%d", 2);
    META("run_id", "%s", r->id);
    if (r->pa) {
        META("pa_run_id", "%s", r->pa_id);
        META("gain", "%.17g", r->gain);
    }
#undef META
    metrics_meta(mv, kv + n, &nm, "val", val, "%.8f");
    metrics_meta(mv, kv + n, &nm, "test", test, "%.8f");
    n += nm;
    char path[4200];
    snprintf(path, sizeof path, "%s/best.safetensors", r->dir);
    return dpd_ckpt_save(path, r->m, kv, n, 0, NULL, NULL, NULL, err);
}

static void header(text *t, const run *r) {
    text_add(t, "%s%s%s", HEADER_A, delta_cols(r) ? HEADER_DELTA : "", HEADER_B);
}

static void history_row(text *t, run *r, int epoch, double minutes, double lr, double tl,
                        const double *vl, const dpd_metrics *m, const dpd_sparsity *sp) {
    const dpd_train_cfg *c = r->c;
    size_t np = dpd_model_nparams(r->m) + (r->pa ? dpd_model_nparams(r->pa) : 0); /* cascade, as OpenDPD */
    text_add(t, "%d,%d,%.8f,%.8f,%d,%zu,%d,%s,%d,", epoch, c->epochs, minutes, lr, c->batch, np,
             c->frame, c->model.family, c->model.hidden);
    if (delta_cols(r))
        text_add(t, "%.8f,%.8f,%.8f,%.8f,%.8f,%.8f,", c->model.thx, c->model.thh, sp->sp_dx, sp->sp_dh,
                 sp->sp_dv, sp->hw_param);
    text_add(t, "%.8f", tl);
    for (int k = 0; k < 2; k++)
        text_add(t, ",%.8f,%.8f,%.8f,%.8f,%.8f,%.8f", vl[k], m[k].nmse, m[k].evm, m[k].aclr_l,
                 m[k].aclr_r, m[k].aclr_avg);
    text_add(t, "\n");
}

static void event_metric(text *t, int epoch, double tl, const double *vl, const dpd_metrics *m,
                         double lr, int improved) {
    text_add(t, "{\"type\":\"metric\",\"epoch\":%d,\"lr\":%.9g,\"train_loss\":%.9g,\"improved\":%s", epoch,
             lr, tl, improved ? "true" : "false");
    const char *sp[2] = {"val", "test"};
    for (int k = 0; k < 2; k++)
        text_add(t, ",\"%s\":{\"loss\":%.9g,\"NMSE\":%.9g,\"EVM\":%.9g,\"ACLR_L\":%.9g,\"ACLR_R\":%.9g,"
                    "\"ACLR_AVG\":%.9g}",
                 sp[k], vl[k], m[k].nmse, m[k].evm, m[k].aclr_l, m[k].aclr_r, m[k].aclr_avg);
    text_add(t, "}\n");
}

static void event_message(text *t, const char *type, int epoch, const char *msg) {
    json_t *j = json_pack("{s:s, s:i, s:s}", "type", type, "epoch", epoch, "message", msg);
    char *line = j ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    if (line) text_add(t, "%s\n", line);
    free(line);
    json_decref(j);
}

/* The least-squares "epoch": a PA model fitted x -> y on the whole train split; a DPD by
 * indirect learning — a post-inverse fitted y/g -> x on the measured data, then (iterations > 1)
 * refitted PA(u)/g -> u through the frozen PA with u = DPD(x). mean = the train-split MSE of the
 * result (through the PA for DPD runs). */
static dpd_status ls_epoch(run *r, double *mean, dpd_error *err) {
    const dpd_train_cfg *c = r->c;
    const dpd_split *tr = &r->ds.split[DPD_TRAIN];
    size_t n = tr->n, n2 = 2 * n;
    float *a = malloc(3 * n2 * sizeof *a), *b = a ? a + n2 : NULL, *t = b ? b + n2 : NULL;
    if (!a) return dpd_fail(err, DPD_E_NOMEM, "out of memory for the least-squares fit");
    dpd_apply_cfg ex;
    dpd_apply_defaults(&ex);
    ex.exact = 1;
    dpd_status s;
    if (!r->pa) {
        s = dpd_ls_fit(r->m, r->tx, r->ty, n, c->ls_reg, err);
        if (!s) s = dpd_apply(r->m, r->tx, n, a, &ex, err);
    } else {
        for (size_t i = 0; i < n2; i++) a[i] = (float)(tr->y[i] / r->gain);
        s = dpd_ls_fit(r->m, a, r->tx, n, c->ls_reg, err);
        for (int it = 1; it < c->ls_iter && !s; it++) {
            if ((s = dpd_apply(r->m, r->tx, n, b, &ex, err)) || (s = dpd_apply(r->pa, b, n, a, &ex, err))) break;
            for (size_t i = 0; i < n2; i++) a[i] = (float)(a[i] / r->gain);
            s = dpd_ls_fit(r->m, a, b, n, c->ls_reg, err);
        }
        if (!s) s = dpd_apply(r->m, r->tx, n, b, &ex, err);
        if (!s) s = dpd_apply(r->pa, b, n, a, &ex, err);
    }
    if (!s) *mean = dpd_mse(a, r->ty, n2, t);
    free(a);
    return s;
}

/* One step on the provider: a PA step (train_step), or a DPD step through the frozen PA's
 * session: u = DPD(x), y = PA(u), the MSE against g x, gradients back through the PA (its own
 * gradient is computed and never used) into the DPD, clipped; then AdamW. */
static dpd_status step(run *r, int B, double *loss, char *msg, size_t n) {
    const dpd_provider_i *p = r->prov->i;
    const dpd_train_cfg *c = r->c;
    dpd_status s;
    if (!r->pa_sess)
        s = p->train_step(r->sess, r->bx, r->by, B, c->frame, c->clip, loss, msg, n);
    else if (!(s = p->forward_keep(r->sess, r->bx, B, c->frame, r->u, msg, n)) &&
             !(s = p->forward_keep(r->pa_sess, r->u, B, c->frame, r->yh, msg, n))) {
        *loss = dpd_mse(r->yh, r->by, (size_t)B * c->frame * 2, r->dyh);
        if (!isfinite(*loss))
            return snprintf(msg, n, "training diverged: the loss is not finite (lower --lr)"), DPD_E_ABORTED;
        if (!(s = p->backward(r->pa_sess, r->dyh, r->du, msg, n)) && !(s = p->backward(r->sess, r->du, NULL, msg, n)))
            s = p->clip(r->sess, c->clip, msg, n);
    }
    return s ? s : p->optimizer_step(r->sess, r->opt.lr, c->weight_decay, msg, n);
}

static dpd_status prov_fail(const run *r, dpd_status s, const char *msg, dpd_error *err) {
    return s == DPD_E_DEVICE ? dpd_exec_device_failed(r->prov->i->name, msg, err)
                             : dpd_fail(err, s, "%s: %s", r->prov->i->name, msg);
}

/* After an epoch: the weights, the optimizer state and the delta counters come back to the host
 * copies, which serve evaluation and checkpoints. */
static dpd_status sync(run *r, dpd_error *err) {
    const dpd_provider_i *p = r->prov->i;
    char msg[512] = "";
    long long z[4];
    dpd_status s = p->download(r->sess, dpd_model_params(r->m), msg, sizeof msg);
    if (!s && p->get_state) s = p->get_state(r->sess, r->opt.m, r->opt.v, &r->opt.step, msg, sizeof msg);
    if (!s && p->zeros && !(s = p->zeros(r->sess, z, msg, sizeof msg))) dpd_model_add_zeros(r->m, z);
    return s ? prov_fail(r, s, msg, err) : DPD_OK;
}

static dpd_status epoch_train(run *r, int epoch, dpd_progress_fn fn, void *user, double *mean,
                              dpd_error *err) {
    const dpd_train_cfg *c = r->c;
    for (size_t i = 0; i < r->nframes; i++) r->perm[i] = (uint32_t)i;
    dpd_rng_shuffle(&r->rng, r->perm, r->nframes);
    int nb = (int)((r->nframes + (size_t)c->batch - 1) / (size_t)c->batch);
    double acc = 0, t0 = now();
    for (int b = 0; b < nb; b++) {
        size_t f0 = (size_t)b * c->batch, B = r->nframes - f0 < (size_t)c->batch ? r->nframes - f0 : (size_t)c->batch;
        dpd_frames_gather(r->tx, r->ty, r->perm + f0, (int)B, c->frame, c->stride, r->bx, r->by);
        double loss;
        char msg[512] = "";
        dpd_status s = step(r, (int)B, &loss, msg, sizeof msg);
        if (s) return prov_fail(r, s, msg, err);
        acc += loss;
        if (fn) {
            dpd_progress p = {.epoch = epoch, .epochs = c->epochs, .batch = b + 1, .batches = nb,
                              .loss = loss, .elapsed = now() - t0};
            fn(user, &p);
        }
    }
    *mean = acc / nb;
    return sync(r, err);
}

/* Whether provider p can train this run: a PA run needs train_step, a DPD run the chained
 * calls, both the model (and the PA) supported. NULL when it can, else why not. */
static const char *cannot_train(const run *r, const dpd_provider *p) {
    const dpd_provider_i *i = p->i;
    if (!i->train_step || !i->optimizer_step || !i->supports(p->ctx, &r->c->model)) return "the model is not supported";
    if (r->pa && (!i->forward_keep || !i->backward || !i->clip || !i->supports(p->ctx, dpd_model_config(r->pa))))
        return "training through a PA model is not supported";
    return NULL;
}

static dpd_status open_session(run *r, const dpd_model_cfg *cfg, dpd_model *m, void **sess, dpd_error *err) {
    char msg[512] = "";
    const dpd_provider_i *p = r->prov->i;
    dpd_status s = p->session_create(r->prov->ctx, 0, cfg, r->c->batch, r->c->frame, sess, msg, sizeof msg);
    if (!s) s = p->upload(*sess, dpd_model_params(m), msg, sizeof msg);
    return s ? prov_fail(r, s, msg, err) : DPD_OK;
}

/* Gradient training runs on a provider's sessions (the model's, and for DPD runs the frozen
 * PA's): the one selected when it can train this run, else the built-in cpu provider (an
 * explicit --provider cuda that cannot is an error). Least-squares fits run on the host. */
static dpd_status pick_provider(run *r, const state *st, dpd_error *err) {
    const dpd_train_cfg *c = r->c;
    dpd_provider_cpu_threads(c->threads);
    if (c->ls) {
        snprintf(r->prov_used, sizeof r->prov_used, "cpu (least squares on the host)");
        return DPD_OK;
    }
    char reason[512];
    dpd_status s = dpd_provider_select(c->provider, &r->prov, reason, sizeof reason, err);
    if (s) return s;
    const char *why = cannot_train(r, r->prov);
    if (why && (s = dpd_provider_demote(c->provider, &r->prov, why, reason, sizeof reason, err))) return s;
    snprintf(r->prov_used, sizeof r->prov_used, "%s (%s)", r->prov->i->name, reason);
    if ((s = open_session(r, &c->model, r->m, &r->sess, err)) ||
        (r->pa && (s = open_session(r, dpd_model_config(r->pa), r->pa, &r->pa_sess, err))))
        return s;
    if (st->epoch && r->prov->i->set_state) {
        char msg[512] = "";
        if ((s = r->prov->i->set_state(r->sess, r->opt.m, r->opt.v, r->opt.step, msg, sizeof msg)))
            return prov_fail(r, s, msg, err);
    }
    return DPD_OK;
}

dpd_status dpd_train(const dpd_train_cfg *in, dpd_progress_fn fn, void *user,
                        dpd_train_result *res, dpd_error *err) {
    dpd_train_cfg cfg = *in;
    run r;
    memset(&r, 0, sizeof r);
    memset(res, 0, sizeof *res);
    r.c = &cfg;
    state st = {.best_epoch = -1, .lr = cfg.lr};
    dpd_status s;
    if (in->resume[0]) {
        if ((s = cfg_load(in->resume, &cfg, err))) return s;
        if (in->epochs > 0) cfg.epochs = in->epochs;
        snprintf(r.dir, sizeof r.dir, "%s", in->resume);
    }
    if ((s = check_cfg(&cfg, err)) || (s = setup(&r, err))) goto done;
    if (in->resume[0]) {
        if ((s = load_last(&r, &st, err))) goto done;
        if (st.epoch >= cfg.epochs) {
            s = dpd_fail(err, DPD_E_INVAL, "%s: already trained %d of %d epochs (pass a larger --epochs)",
                         r.dir, st.epoch, cfg.epochs);
            goto done;
        }
        char path[4200];
        snprintf(path, sizeof path, "%s/history.csv", r.dir);
        header(&r.hist, &r);
        text_inherit(&r.hist, path, st.epoch, 1);
        snprintf(path, sizeof path, "%s/events.jsonl", r.dir);
        text_inherit(&r.events, path, st.epoch, 0);
        text_add(&r.events, "{\"type\":\"progress\",\"epoch\":%d,\"note\":\"resumed\"}\n", st.epoch);
    } else {
        dpd_rng_seed(&r.rng, cfg.seed);
        dpd_model_init(r.m, &r.rng);
        if ((s = make_dir(&r, err))) goto done;
        header(&r.hist, &r);
    }
    json_t *cj = cfg_json(&cfg, r.ds.name, r.id, dpd_model_nparams(r.m));
    char *ctext = json_dumps(cj, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(cj);
    text ct = {ctext, ctext ? strlen(ctext) : 0, 0};
    s = ctext ? write_text(&r, "config.json", &ct, err) : dpd_fail(err, DPD_E_NOMEM, "config.json");
    free(ctext);
    if (s) goto done;
    if (r.ds.warning[0])
        event_message(&r.events, "warning", st.epoch, r.ds.warning);
    if ((s = pick_provider(&r, &st, err))) goto done;
    double t0 = now() - st.elapsed * 60.0;
    text best = {0};
    for (int e = st.epoch; e < cfg.epochs; e++) {
        double tl = 0, vl[2];
        dpd_metrics m[2];
        double lr = r.opt.lr;
        if ((s = cfg.ls ? ls_epoch(&r, &tl, err) : epoch_train(&r, e, fn, user, &tl, err))) break;
        for (int k = 0; k < 2 && !s; k++) s = eval_split(&r, r.m, &r.ev[k], &vl[k], &m[k], err);
        if (s) break;
        double minutes = (now() - t0) / 60.0;
        dpd_sparsity sp = {0};
        dpd_model_sparsity(r.m, &sp, 1); /* over this epoch's train, val and test passes */
        double sel = r.pa ? m[0].aclr_avg : m[0].nmse; /* selection metric, reference §4.3 */
        int improved = e == 0 || sel < (r.pa ? st.best_val.aclr_avg : st.best_val.nmse);
        history_row(&r.hist, &r, e, minutes, lr, tl, vl, m, &sp);
        event_metric(&r.events, e, tl, vl, m, lr, improved);
        if ((s = write_text(&r, "history.csv", &r.hist, err))) break;
        if (improved) {
            st.best_epoch = e, st.best_val = m[0], st.best_test = m[1];
            best.n = 0;
            header(&best, &r);
            history_row(&best, &r, e, minutes, lr, tl, vl, m, &sp);
            if ((s = write_text(&r, "best.csv", &best, err)) || (s = save_best(&r, e, &m[0], &m[1], err)))
                break;
            text_add(&r.events, "{\"type\":\"artifact\",\"epoch\":%d,\"path\":\"best.safetensors\"}\n", e);
        }
        if (cfg.lr_schedule) r.opt.lr = dpd_plateau_step(&r.plat, sel, r.opt.lr);
        st.epoch = e + 1, st.lr = r.opt.lr, st.elapsed = minutes;
        if ((s = save_last(&r, &st, err)) || (s = write_text(&r, "events.jsonl", &r.events, err))) break;
        if (fn) {
            dpd_progress p = {.epoch = e, .epochs = cfg.epochs, .epoch_done = 1, .train_loss = tl,
                              .val_loss = vl[0], .lr = lr, .val = m[0], .test = m[1],
                              .improved = improved, .elapsed = minutes * 60};
            fn(user, &p);
        }
    }
    free(best.s);
    if (!s) {
        snprintf(res->run_dir, sizeof res->run_dir, "%s", r.dir);
        res->epochs = st.epoch, res->best_epoch = st.best_epoch;
        res->val = st.best_val, res->test = st.best_test;
        res->dpd = r.pa != NULL;
        snprintf(res->provider, sizeof res->provider, "%s", r.prov_used);
        res->no_dpd_val = r.nodpd[0], res->no_dpd_test = r.nodpd[1];
    } else if (r.dir[0]) {
        event_message(&r.events, "error", st.epoch, err ? err->msg : "");
        dpd_error ignore;
        (void)write_text(&r, "events.jsonl", &r.events, &ignore);
        snprintf(res->run_dir, sizeof res->run_dir, "%s", r.dir);
    }
done:
    run_free(&r);
    return s;
}
