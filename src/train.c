/* train: OpenDPD's training loop (reference §4, §5) for a PA model, or for a DPD model through a
 * frozen PA model, on sessions — frames, seeded shuffle, whole training steps in chunks on the
 * provider (train_steps by frame indices), MSE, AdamW, global-norm clipping, ReduceLROnPlateau on
 * the validation selection metric (NMSE for PA, ACLR_AVG for DPD), per-epoch validation and test
 * through the one evaluation (src/eval.c), best checkpoint on strict improvement — with typed
 * events and cancellation between chunks. The run directory's files come from src/run.c;
 * last.safetensors carries the optimizer, scheduler, RNG and mid-epoch state for a bit-exact
 * resume. */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "ckpt.h"
#include "config.h"
#include "dataset.h"
#include "dpd/dpd.h"
#include "file.h"
#include "kern/kern.h"
#include "ls.h"
#include "model.h"
#include "optim.h"
#include "plateau.h"
#include "run.h"
#include "session.h"
#include "status.h"

/* The defaults live in the configuration table (src/config.c), once. */
void dpd_train_defaults(dpd_train_cfg *c) { dpd_config_defaults(c); }

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


/* ---- the run ------------------------------------------------------------------------------- */

typedef struct run {
    const dpd_train_cfg *c;
    dpd_dataset ds;
    dpd_model *m;        /* the model being trained: the host copy for checkpoints */
    dpd_model *pa;       /* DPD runs: the frozen PA model; NULL for PA runs */
    double gain;         /* DPD runs: target gain g */
    char pa_id[256];     /* DPD runs: the PA's run id */
    char pa_dataset[256]; /* DPD runs: the dataset the PA was trained on, by its checkpoint ("" unknown) */
    double pa_fs;        /* DPD runs: that dataset's sample rate, by its checkpoint (0 unknown) */
    char pa_warning[512]; /* DPD runs: the PA was trained at another sample rate than ds's ("" none) */
    char kern_warning[512]; /* a resume on other kernels than the run's (its bits differ from then on) */
    char cover_warning[256]; /* a stride longer than the frame: samples never trained on */
    char hist_warning[4600]; /* a resume whose history.csv lacks epochs the checkpoint has trained */
    char train_sha256[65]; /* the train split's dpd_split_fingerprint */
    float *tx, *ty;      /* train split as float (n, 2); ty = y (PA) or g x (DPD) */
    size_t nframes;
    uint32_t *perm;
    double *losses;      /* one per step of an epoch */
    float *mom;          /* AdamW moments m, v (2 nparams) for checkpoints */
    dpd_eval ev[2];      /* val, test */
    dpd_eval pv;         /* preview_every > 0: the first val segments (made at the first preview) */
    dpd_metrics nodpd[2]; /* DPD runs: PA(x) against g x */
    dpd_metrics measured[2]; /* the capture's y against the target (a PA model's: its spectrum alone) */
    float *no_dpd, *meas;  /* DPD runs: PA(x) and the capture's y on ev[0]'s segments (the events') */
    dpd_scoring sc;      /* the configuration's metric profile and EVM sample rate */
    dpd_plateau plat;
    dpd_rng rng;
    dpd_session *ses, *pa_ses; /* the model's; DPD runs: the frozen PA's, chained */
    char prov_used[600];
    dpd_rundir rd;
    dpd_run_info info;   /* who the run is, for its id and checkpoints */
    dpd_event_fn fn;
    void *user;
    double t0;           /* monotonic seconds at the run's start, less the elapsed time resumed */
    double last_note;    /* when the last progress event went into events.jsonl */
    int cancel;          /* the caller asked to stop during an epoch's last chunk: stop after it */
    int started;         /* RUN_STARTED was emitted */
} run;

/* The validation metric that selects the best epoch and drives the plateau (reference §4.3): ACLR_AVG
 * for a DPD run, NMSE for a PA model. */
static int selection(const run *r) { return r->pa ? DPD_ACLR_AVG : DPD_NMSE; }

/* 1 when the log carries the delta columns: a DPD run of a family with delta statistics. */
static int delta_cols(const run *r) { return r->pa && dpd_model_family(r->m)->delta_zeros; }

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void run_free(run *r) {
    dpd_dataset_free(&r->ds);
    dpd_session_free(r->ses); /* before the PA session it is chained to */
    dpd_session_free(r->pa_ses);
    dpd_model_free(r->m);
    dpd_model_free(r->pa);
    free(r->tx), free(r->ty), free(r->perm), free(r->losses), free(r->mom);
    for (int k = 0; k < 2; k++) dpd_eval_free(&r->ev[k]);
    dpd_eval_free(&r->pv);
    free(r->no_dpd), free(r->meas);
    dpd_run_free(&r->rd);
}

/* Hands e to the caller (and to events.jsonl); 1 when the caller asks to cancel. */
static int emit(run *r, dpd_event *e, int log) {
    e->run_dir = r->rd.dir, e->run_id = r->rd.id, e->epochs = r->c->epochs;
    if (log) {
        dpd_run_event(&r->rd, e);
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        e->time = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    }
    return r->fn && r->fn(r->user, e);
}

/* A DPD whose best epoch leaves the test split's ACLR worse than the PA without it (a quick run on
 * a hard PA does that) is a warning event, with what usually helps: every front end shows it and
 * the run's events.jsonl keeps it. */
static void worse_than_none(run *r, const dpd_run_state *st, const dpd_train_cfg *c) {
    const dpd_metrics *d = &st->best_test, *n = &r->nodpd[1];
    if (!r->pa || d->status[DPD_ACLR_AVG] || n->status[DPD_ACLR_AVG] || !(d->aclr_avg > n->aclr_avg)) return;
    const dpd_family *f = dpd_family_find(c->model.family);
    const char *larger = f->poly ? " or larger (order, memory, cross)" : f->hidden > 1 ? " or larger (hidden)" : ""; /* gmp: fixed */
    char msg[320];
    snprintf(msg, sizeof msg, "this DPD makes the test split's ACLR_AVG worse than no DPD (%.2f against %.2f dBc): %s%s%s",
             d->aclr_avg, n->aclr_avg, c->ls ? "try other orders and depths (K, Q, M) or more ILA passes (iterations)"
                                             : "train it longer (epochs, preset full)",
             c->ls ? "" : larger, c->ls ? "" : ", or on more frames (a smaller stride)");
    dpd_event w = {.type = DPD_EV_WARNING, .epoch = st->epoch, .message = msg};
    emit(r, &w, 1);
}

/* The frozen PA of a DPD run: a PA checkpoint, a PA run directory (its best.safetensors) or, on
 * resume (resumed: the run directory), the run's own copy or else its config.json's pa. Refused
 * unless it is a PA model trained on this dataset. */
static dpd_status load_pa(run *r, const char *from, const char *resumed, dpd_error *err) {
    char path[4200];
    dpd_status s = dpd_ckpt_resolve(from, 0, path, sizeof path, err);
    if (s) { /* named as where it came from: the option, or the resumed run's configuration */
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        if (resumed) return dpd_fail(err, s, "%s/config.json: pa: %s (the run has no pa.safetensors of its own)", resumed, msg);
        return dpd_fail_field(err, "pa", s, "pa: %s", msg);
    }
    dpd_ckpt ck;
    if ((s = dpd_ckpt_open(path, &ck, err))) return s;
    const char *kind = dpd_ckpt_meta(&ck, "step_kind"), *ds = dpd_ckpt_meta(&ck, "dataset"),
               *id = dpd_ckpt_meta(&ck, "run_id"), *sum = dpd_ckpt_meta(&ck, "train_sha256"),
               *fs = dpd_ckpt_meta(&ck, "input_signal_fs");
    char frozen[4200]; /* a DPD run's own copy of its PA, beside its checkpoint */
    const char *slash = strrchr(path, '/');
    snprintf(frozen, sizeof frozen, "%.*spa.safetensors", slash ? (int)(slash - path + 1) : 0, path);
    if (kind && strcmp(kind, "train_pa"))
        s = dpd_fail_field(err, "pa", DPD_E_INVAL, "pa: %s is a %s checkpoint, not a PA model (pa needs a train-pa run%s%s)",
                           path, kind, !strcmp(kind, "train_dpd") && dpd_exists(frozen) ? "; the DPD run's frozen PA is " : "",
                           !strcmp(kind, "train_dpd") && dpd_exists(frozen) ? frozen : "");
    else if (sum && *sum && r->train_sha256[0] && strcmp(sum, r->train_sha256)) /* the samples decide, not the names */
        s = dpd_fail_field(err, "pa", DPD_E_INVAL,
                           "pa: %s was trained on another train split than %s's (dataset '%s' then; the splits' "
                           "fingerprints differ: %.12s against %.12s)", path, r->ds.dir, ds ? ds : "?", sum, r->train_sha256);
    else if (!(sum && *sum && r->train_sha256[0]) && ds && strcmp(ds, r->ds.name)) /* no fingerprint: by name */
        s = dpd_fail_field(err, "pa", DPD_E_INVAL, "pa: %s was trained on dataset '%s', not '%s'", path, ds, r->ds.name);
    snprintf(r->pa_id, sizeof r->pa_id, "%s", id ? id : "PA");
    snprintf(r->pa_dataset, sizeof r->pa_dataset, "%s", ds ? ds : "");
    char *end;
    r->pa_fs = fs ? strtod(fs, &end) : 0;
    if (!fs || !*fs || *end || !isfinite(r->pa_fs) || r->pa_fs <= 0) r->pa_fs = 0; /* not a rate: not recorded */
    if (r->pa_fs > 0 && r->ds.spec.fs > 0 && fabs(r->pa_fs - r->ds.spec.fs) > 1e-9 * r->ds.spec.fs)
        snprintf(r->pa_warning, sizeof r->pa_warning, "pa: %s was trained on data sampled at %.9g MHz, and %s is sampled "
                 "at %.9g MHz: a model's memory spans a fixed number of samples, so the PA does not model this data",
                 path, r->pa_fs / 1e6, r->ds.dir, r->ds.spec.fs / 1e6);
    dpd_ckpt_close(&ck);
    if (!s) s = dpd_ckpt_load(path, &r->pa, err);
    return s;
}


/* A resume computes with the kernels the run did (used: config.json's kernels_used), so that it continues
 * bit for bit; where this CPU lacks them, or other kernels are asked for, it says that the results
 * will differ from an uninterrupted run's (r->kern_warning). */
static void resume_kernels(run *r, const char *used, dpd_train_cfg *cfg) {
    if (!used[0]) return; /* a run from before they were recorded, or on another provider */
    const kern_ops *k = NULL, *want = NULL;
    dpd_error e = {0};
    int have = !kern_select("kernels", used, &k, &e);
    if (!cfg->kernels[0] && have) {
        snprintf(cfg->kernels, sizeof cfg->kernels, "%s", used);
        return;
    }
    if (cfg->kernels[0] && have && !kern_select("kernels", cfg->kernels, &want, &e) && want == k) return;
    snprintf(r->kern_warning, sizeof r->kern_warning, "the run trained on the %s kernels, and the resume computes %s: "
             "from here its results differ from an uninterrupted run's (give --kernels %s%s)", used,
             cfg->kernels[0] ? "on the ones asked for" : "on others (this CPU lacks them)", used,
             have ? "" : " on a CPU that has them");
}

static dpd_status setup(run *r, const char *pa_from, const char *resumed, dpd_error *err) {
    const dpd_train_cfg *c = r->c;
    r->sc = (dpd_scoring){dpd_run_profile(c), c->evm_fs};
    dpd_status s = c->ls ? dpd_ls_ready(err) : DPD_OK; /* before the session: its threads reach the BLAS */
    if (!s) s = dpd_dataset_load(c->data, 7, 0, &r->ds, err);
    if (s) return s;
    dpd_split_fingerprint(&r->ds.split[DPD_TRAIN], r->train_sha256);
    if (c->pa[0]) {
        if ((s = load_pa(r, pa_from, resumed, err))) return s;
        r->gain = dpd_dataset_gain(&r->ds);
    }
    dpd_split *tr = &r->ds.split[DPD_TRAIN];
    r->nframes = dpd_frame_count(tr->n, c->frame, c->stride);
    if (!r->nframes && !c->ls)
        return dpd_fail(err, DPD_E_INVAL, "%s: the train split has %zu samples, fewer than one frame (%d)",
                        c->data, tr->n, c->frame);
    if (!c->ls && c->stride > c->frame) /* allowed (OpenDPD allows it), but rarely meant */
        snprintf(r->cover_warning, sizeof r->cover_warning,
                 "stride %d is longer than frame %d: the frames leave %d samples out between them, so only %.1f %% of the "
                 "train split's %zu samples are trained on (%zu frames)", c->stride, c->frame, c->stride - c->frame,
                 100.0 * (double)r->nframes * c->frame / (double)tr->n, tr->n, r->nframes);
    if ((s = dpd_model_create(&c->model, &r->m, err))) return s;
    size_t nb = (r->nframes + (size_t)c->batch - 1) / (size_t)c->batch;
    r->tx = malloc(tr->n * 2 * sizeof(float));
    r->ty = malloc(tr->n * 2 * sizeof(float));
    r->perm = malloc((r->nframes ? r->nframes : 1) * sizeof *r->perm);
    r->losses = malloc((nb ? nb : 1) * sizeof *r->losses);
    r->mom = calloc(2 * dpd_model_nparams(r->m), sizeof *r->mom); /* zero moments: least squares keeps none */
    if (!r->tx || !r->ty || !r->perm || !r->losses || !r->mom)
        return dpd_fail(err, DPD_E_NOMEM, "out of memory for the training set");
    for (size_t i = 0; i < tr->n * 2; i++)
        r->tx[i] = (float)tr->x[i], r->ty[i] = (float)(r->pa ? r->gain * tr->x[i] : tr->y[i]);
    for (int k = 0; k < 2; k++) {
        dpd_eval *e = &r->ev[k];
        if ((s = dpd_eval_prepare(e, &r->ds, k + 1, r->pa ? r->gain : 0, err)) ||
            (s = r->pa ? dpd_eval_measured(e, &r->ds, &r->sc, &r->measured[k], err) /* y against g x */
                       : dpd_metrics_aclr(e->ref, e->S, e->N, e->n, &r->ds.spec, &r->sc, &r->measured[k], err))) /* y: the target */
            return s;
    }
    dpd_plateau_init(&r->plat, c->decay, c->patience, c->lr_end);
    return DPD_OK;
}

/* The sessions: the model's (able to train, and for DPD runs to train through the PA) on the
 * provider asked for — the built-in cpu for least-squares fits, which run on the host — and for
 * DPD runs the frozen PA's on the same provider, chained after scoring the PA alone. */
static dpd_status open_sessions(run *r, dpd_error *err) {
    const dpd_train_cfg *c = r->c;
    char th[16], mb[16], mf[16];
    snprintf(th, sizeof th, "%d", c->threads);
    snprintf(mb, sizeof mb, "%d", c->batch > c->batch_eval ? c->batch : c->batch_eval);
    snprintf(mf, sizeof mf, "%d", c->frame); /* the training reservation; evaluation sizes its own */
    dpd_kv o[5] = {{"provider", c->ls ? "cpu" : c->provider}, {"threads", th}, {"kernels", c->kernels[0] ? c->kernels : "auto"},
                   {"max_batch", mb}, {"max_frame", mf}};
    int need = c->ls ? 0 : DPD_NEED_TRAIN | (r->pa ? DPD_NEED_CHAIN : 0);
    dpd_status s = dpd_session_open(r->m, o, 5, need, r->pa ? dpd_model_config(r->pa) : NULL, &r->ses, err);
    if (s) return s;
    if (c->ls) snprintf(r->prov_used, sizeof r->prov_used, "cpu (least squares on the host)");
    else snprintf(r->prov_used, sizeof r->prov_used, "%s (%s)", dpd_session_provider(r->ses), dpd_session_reason(r->ses));
    dpd_session_share(r->ses, r->m); /* on the cpu: one copy of the weights */
    if ((s = dpd_session_attach(r->ses, DPD_TRAIN, r->tx, r->ty, r->ds.split[DPD_TRAIN].n, err)) || !r->pa) return s;
    o[0].value = dpd_session_provider(r->ses);
    if ((s = dpd_session_open(r->pa, o, 5, 0, NULL, &r->pa_ses, err))) return s;
    dpd_session_share(r->pa_ses, r->pa);
    for (int k = 0; k < 2; k++) {
        if ((s = dpd_eval_run(&r->ev[k], r->pa_ses, c->batch_eval, &r->ds.spec, &r->sc, err))) return s;
        r->nodpd[k] = r->ev[k].m;
    }
    const dpd_eval *v = &r->ev[0]; /* its predictions are PA(x) until the chained session's first run */
    size_t len = (size_t)v->S * (size_t)v->N * 2;
    int S;
    if (!(r->no_dpd = malloc(len * sizeof *r->no_dpd))) return dpd_fail(err, DPD_E_NOMEM, "out of memory for PA(x)");
    memcpy(r->no_dpd, v->pred, len * sizeof *r->no_dpd);
    if ((s = dpd_segments(r->ds.split[DPD_VAL].y, v->n, v->N, 1.0, &r->meas, &S, err))) return s;
    return dpd_session_chain(r->ses, r->pa_ses, err);
}

/* The least-squares "epoch": a PA model fitted x -> y on the whole train split; a DPD by
 * indirect learning — a post-inverse fitted y/g -> x on the measured data, then (iterations > 1)
 * refitted PA(u)/g -> u through the frozen PA with u = DPD(x). mean = the train-split MSE of the
 * result (through the PA for DPD runs). The fit runs on the host model; the session gets it. */
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
        if (!s) s = dpd_session_upload(r->ses, r->m, err);
        if (!s) s = dpd_apply(r->ses, r->tx, n, a, &ex, err);
    } else {
        for (size_t i = 0; i < n2; i++) a[i] = (float)(tr->y[i] / r->gain);
        s = dpd_ls_fit(r->m, a, r->tx, n, c->ls_reg, err);
        for (int it = 1; it < c->ls_iter && !s; it++) {
            if ((s = dpd_session_upload(r->ses, r->m, err)) || (s = dpd_apply(r->ses, r->tx, n, b, &ex, err)) ||
                (s = dpd_apply(r->pa_ses, b, n, a, &ex, err)))
                break;
            for (size_t i = 0; i < n2; i++) a[i] = (float)(a[i] / r->gain);
            s = dpd_ls_fit(r->m, a, b, n, c->ls_reg, err);
        }
        if (!s) s = dpd_session_upload(r->ses, r->m, err);
        if (!s) s = dpd_apply(r->ses, r->tx, n, b, &ex, err);
        if (!s) s = dpd_apply(r->pa_ses, b, n, a, &ex, err);
    }
    if (!s) *mean = dpd_mse(a, r->ty, n2, t);
    free(a);
    return s;
}

/* Steps per chunk: about 0.25 s of work at the rate measured so far, 1..1024. */
static long chunk_steps(double sec_per_step) {
    if (!(sec_per_step > 0)) return 4;
    double k = 0.25 / sec_per_step;
    return k < 1 ? 1 : k > 1024 ? 1024 : (long)k;
}

/* A PREVIEW event: the session's predictions on the first val segments (at most 16 384 samples,
 * one segment at least). A forward pass only: the weights, the optimizer, the shuffle and the
 * delta counters of the epoch are as without it. *cancel: the caller asked to stop. */
static dpd_status preview(run *r, const dpd_run_state *st, long nb, int *cancel, dpd_error *err) {
    dpd_eval *e = &r->pv;
    const dpd_eval *v = &r->ev[0];
    int S = 16384 / v->N < 1 ? 1 : 16384 / v->N;
    dpd_status s = DPD_OK;
    long long z[4];
    if (!e->x) s = dpd_eval_head(e, v, S < v->S ? S : v->S, err);
    if (!s) s = dpd_eval_run(e, r->ses, r->c->batch_eval, &r->ds.spec, &r->sc, err);
    if (!s) s = dpd_session_zeros(r->ses, z, err); /* not the epoch's: dropped */
    if (s) return s;
    dpd_event ev = {.type = DPD_EV_PREVIEW, .epoch = st->epoch + 1, .steps_done = st->epoch_step, .steps = nb,
                    .step = st->step, .val_eval = e, .val_no_dpd = r->no_dpd, .val_measured = r->meas};
    *cancel = emit(r, &ev, 0);
    return DPD_OK;
}

/* One epoch of whole steps on the session, in chunks, with a progress event (and the
 * cancellation check) after each. Starts at st->epoch_step (a resumed mid-epoch stop). On
 * cancellation st describes the steps done and DPD_E_ABORTED is returned. */
static dpd_status epoch_train(run *r, dpd_run_state *st, double *mean, dpd_error *err) {
    const dpd_train_cfg *c = r->c;
    if (!st->epoch_step) st->epoch_rng = r->rng, st->epoch_loss = 0, memset(st->dz, 0, sizeof st->dz);
    else r->rng = st->epoch_rng; /* the same shuffle again */
    for (size_t i = 0; i < r->nframes; i++) r->perm[i] = (uint32_t)i;
    dpd_rng_shuffle(&r->rng, r->perm, r->nframes);
    long nb = (long)((r->nframes + (size_t)c->batch - 1) / (size_t)c->batch), k = 4;
    double t0 = now(), acc = st->epoch_loss;
    long first = st->epoch_step;
    while (st->epoch_step < nb) {
        long k0 = st->epoch_step, steps = k < nb - k0 ? k : nb - k0;
        long to_preview = c->preview_every > 0 ? c->preview_every - st->step % c->preview_every : steps;
        if (steps > to_preview) steps = to_preview; /* a chunk ends at each preview */
        size_t f0 = (size_t)k0 * c->batch, nf = (size_t)steps * c->batch;
        if (nf > r->nframes - f0) nf = r->nframes - f0;
        double tc = now();
        long long z[4];
        dpd_status s = dpd_session_train_steps(r->ses, r->perm + f0, nf, c->batch, c->frame, c->stride, st->lr,
                                               c->weight_decay, c->clip, r->losses + k0, err);
        if (!s) s = dpd_session_zeros(r->ses, z, err);
        if (s) return s;
        for (long i = k0; i < k0 + steps; i++) acc += r->losses[i];
        for (int i = 0; i < 4; i++) st->dz[i] += z[i];
        st->epoch_step += steps, st->step += steps, st->epoch_loss = acc;
        k = chunk_steps((now() - tc) / (double)steps);
        double el = now() - t0;
        dpd_event e = {.type = DPD_EV_PROGRESS, .epoch = st->epoch + 1, .steps_done = st->epoch_step, .steps = nb,
                       .loss = r->losses[k0 + steps - 1], .elapsed = el,
                       .samples_per_s = el > 0 ? (double)(st->epoch_step - first) * c->batch * c->frame / el : 0};
        int note = now() - r->last_note >= 5; /* events.jsonl gets a heartbeat, not every chunk */
        if (note) r->last_note = now();
        int stop = emit(r, &e, note);
        if (!stop && c->preview_every > 0 && st->step % c->preview_every == 0) {
            dpd_status ps = preview(r, st, nb, &stop, err);
            if (ps) return ps;
        }
        if (stop) {
            if (st->epoch_step < nb) return dpd_fail(err, DPD_E_ABORTED, "cancelled");
            r->cancel = 1; /* the epoch is complete: stop after its evaluation and checkpoints */
        }
    }
    *mean = acc / (double)nb;
    st->epoch_step = 0;
    return DPD_OK;
}

/* The session's weights and moments back into the host copies that checkpoints write. */
static dpd_status sync(run *r, dpd_run_state *st, dpd_error *err) {
    long step;
    size_t np = dpd_model_nparams(r->m);
    dpd_status s = dpd_session_download(r->ses, r->m, err);
    if (!s && !r->c->ls) {
        s = dpd_session_get_state(r->ses, r->mom, r->mom + np, &step, err);
        if (s == DPD_E_UNSUPPORTED) s = DPD_OK, memset(r->mom, 0, 2 * np * sizeof *r->mom); /* moments restart on resume */
    }
    return s;
}

/* last.safetensors (and pa.safetensors) from the host copies and st. */
static dpd_status save_last(run *r, dpd_run_state *st, dpd_error *err) {
    st->rng = r->rng, st->plateau_best = r->plat.best, st->plateau_bad = r->plat.bad;
    return dpd_run_save_last(&r->rd, &r->info, r->m, r->mom, st, r->pa, err);
}

/* The end of a run that stopped early: last.safetensors describes where (resumable), or a run
 * directory made by this process that has no completed epoch is removed. */
static void stopped(run *r, dpd_run_state *st, dpd_status s, const char *msg) {
    dpd_error ignore = {0};
    dpd_event e = {.type = DPD_EV_RUN_ENDED, .epoch = st->epoch, .status = s, .message = msg,
                   .outcome = s == DPD_E_ABORTED ? "cancelled" : s == DPD_E_DIVERGED ? "diverged" : "failed"};
    if (!r->rd.dir[0]) return;
    if (r->rd.created && st->epoch == 0) {
        emit(r, &e, 0);
        dpd_run_remove(&r->rd);
        return;
    }
    if (s == DPD_E_ABORTED && r->ses && !sync(r, st, &ignore) && !save_last(r, st, &ignore)) {
        dpd_event ck = {.type = DPD_EV_CHECKPOINT, .epoch = st->epoch + 1, .path = "last.safetensors",
                        .steps_done = st->epoch_step}; /* the epoch in progress, st->epoch_step steps into it */
        emit(r, &ck, 1);
    }
    emit(r, &e, 1);
    (void)dpd_run_write(&r->rd, "events.jsonl", &r->rd.events, &ignore);
}

static dpd_status check_paths(const dpd_train_cfg *in, dpd_error *err) {
    struct stat sb;
    if (in->resume[0] && stat(in->resume, &sb))
        return dpd_fail_field(err, "resume", DPD_E_IO, "resume: %s does not exist", in->resume);
    if ((!in->resume[0] || in->data[0]) && stat(in->data, &sb)) /* a resume may name where its dataset moved */
        return dpd_fail_field(err, "data", DPD_E_IO, "data: %s does not exist", in->data);
    if (!in->resume[0] && in->pa[0] && stat(in->pa, &sb))
        return dpd_fail_field(err, "pa", DPD_E_IO, "pa: %s does not exist", in->pa);
    return DPD_OK;
}

/* A resume goes on with the samples the run began with, wherever the dataset is now (in->data: it
 * moved) and whatever was done to it: each split's fingerprint against the run's (the train
 * split's in last.safetensors, every split's in config.json, sha; "" where a run from before them
 * records none). The samples decide, not the directory's name. */
static dpd_status resume_samples(const run *r, const dpd_train_cfg *in, char sha[DPD_NSPLIT][65], dpd_error *err) {
    static const char *const did[DPD_NSPLIT] = {"trained", "validated", "tested"};
    char last[4200];
    dpd_ckpt_info li;
    snprintf(last, sizeof last, "%s/last.safetensors", in->resume);
    if (!sha[DPD_TRAIN][0] && !dpd_ckpt_info_read(last, &li, NULL)) snprintf(sha[DPD_TRAIN], 65, "%s", li.train_sha256);
    for (int k = 0; k < DPD_NSPLIT; k++) {
        char now[65];
        dpd_split_fingerprint(&r->ds.split[k], now);
        if (!sha[k][0] || !strcmp(sha[k], now)) continue;
        if (in->data[0])
            return dpd_fail_field(err, "data", DPD_E_INVAL, "data: %s's %s split is not the one %s %s on (fingerprints "
                                  "%.12s against %.12s): give the run's dataset where it is now", r->c->data, dpd_split_names[k],
                                  in->resume, did[k], now, sha[k]);
        return dpd_fail_field(err, "resume", DPD_E_INVAL, "resume: the %s split of %s (the run's dataset) is not the one %s "
                              "%s on (fingerprints %.12s against %.12s): the dataset changed since, and a resume goes on "
                              "with the run's samples; restore them, or train a new run", dpd_split_names[k], r->c->data, in->resume,
                              did[k], now, sha[k]);
    }
    return DPD_OK;
}

dpd_status dpd_train(const dpd_train_cfg *in, dpd_event_fn fn, void *user, dpd_train_result *res, dpd_error *err) {
    dpd_train_cfg cfg = *in;
    run r;
    memset(&r, 0, sizeof r);
    memset(res, 0, sizeof *res);
    r.c = &cfg, r.fn = fn, r.user = user;
    dpd_run_state st = {.lr = cfg.lr};
    dpd_status s = check_paths(in, err);
    if (s) return s;
    int fresh = 1; /* no last.safetensors: start from the first step (a resume of a run killed before it) */
    char split_sha[DPD_NSPLIT][65] = {"", "", ""}; /* a resume's: the splits' fingerprints config.json records */
    if (!in->resume[0]) { /* config.json keeps absolute paths: a resume works from any directory */
        char abs[PATH_MAX];
        if (realpath(in->data, abs)) snprintf(cfg.data, sizeof cfg.data, "%s", abs);
        if (in->pa[0] && realpath(in->pa, abs)) snprintf(cfg.pa, sizeof cfg.pa, "%s", abs);
    }
    if (in->resume[0]) {
        char last[4200];
        snprintf(last, sizeof last, "%s/last.safetensors", in->resume);
        fresh = !dpd_exists(last);
        snprintf(r.rd.dir, sizeof r.rd.dir, "%s", in->resume);
        char used[32]; /* config.json's kernels_used: "" when the run records none */
        if ((s = dpd_run_read_config(in->resume, &cfg, used, sizeof used, split_sha, err))) return s;
        if (in->data[0]) { /* the dataset moved: its train split must be the run's (checked below, once read) */
            char abs[PATH_MAX];
            snprintf(cfg.data, sizeof cfg.data, "%s", realpath(in->data, abs) ? abs : in->data);
        }
        if (cfg.evm_fs > 0 && dpd_run_profile(&cfg) != DPD_PROFILE_LEGACY)
            cfg.evm_fs = 0; /* written before the rule: it never scored anything (its profile has no EVM) */
        if ((s = dpd_config_check(&cfg, err))) { /* the run's own config.json is at fault: a malformed file */
            char where[4200];
            snprintf(where, sizeof where, "%s/config.json", in->resume);
            dpd_error_prefix(err, where);
            if (err) err->field[0] = 0; /* its key, not an option: the message names it */
            return err ? (err->status = DPD_E_FORMAT) : DPD_E_FORMAT;
        }
        if (cfg.ls)
            return dpd_fail_field(err, "resume", DPD_E_INVAL, "resume: %s is a least-squares fit (one pass, nothing to continue); "
                            "fit it again instead", in->resume);
        if (in->epochs > 0) cfg.epochs = in->epochs;
        cfg.threads = in->threads, cfg.provider[0] = 0;
        snprintf(cfg.kernels, sizeof cfg.kernels, "%s", in->kernels);
        snprintf(cfg.provider, sizeof cfg.provider, "%s", in->provider);
        resume_kernels(&r, used, &cfg);
    }
    char pa_copy[4200]; /* a resume trains through the run's own copy of its PA, when it has one yet */
    snprintf(pa_copy, sizeof pa_copy, "%s/pa.safetensors", in->resume);
    int own_pa = in->resume[0] && dpd_exists(pa_copy);
    if ((s = dpd_config_check(&cfg, err)) ||
        (s = setup(&r, own_pa ? pa_copy : cfg.pa, in->resume[0] ? in->resume : NULL, err))) {
        if (s == DPD_E_IO && in->resume[0] && !in->data[0] && err && !dpd_exists(cfg.data)) {
            size_t l = strlen(err->msg); /* the run's dataset is not where config.json says: how to go on */
            snprintf(err->msg + l, sizeof err->msg - l, " (the run's dataset, by its config.json; if it moved, resume "
                                                        "with --data DIR)");
        }
        goto done;
    }
    if (in->resume[0] && !fresh && (s = resume_samples(&r, in, split_sha, err))) goto done;
    r.info = (dpd_run_info){&cfg,    r.ds.name, dpd_model_family(r.m), dpd_model_nparams(r.m), r.pa != NULL,
                            r.pa_id, r.gain,    &r.ds,                 r.train_sha256,
                            r.pa_dataset, r.pa_fs};
    dpd_iq_level(r.ds.split[DPD_TRAIN].x, r.ds.split[DPD_TRAIN].n, &r.info.x_peak, &r.info.x_rms);
    if (in->resume[0] && !fresh) {
        long steps = (long)((r.nframes + (size_t)cfg.batch - 1) / (size_t)cfg.batch);
        if ((s = dpd_run_load_last(&r.rd, r.m, r.mom, &st, steps, &cfg, err))) goto done;
        r.rng = st.rng, r.plat.best = st.plateau_best, r.plat.bad = st.plateau_bad;
        if (st.epoch >= cfg.epochs) { /* nothing to train; a writer killed after its last epoch may have left files */
            dpd_run_clean(&r.rd);
            s = dpd_fail_field(err, "epochs", DPD_E_INVAL, "epochs: %s has finished epoch %d, and %d asks for no more (pass a larger epochs to continue it)",
                               r.rd.dir, st.epoch, cfg.epochs);
            goto done;
        }
        r.rd.delta = delta_cols(&r);
        dpd_run_header(&r.rd.hist, r.rd.delta, r.sc.profile);
        dpd_run_inherit(&r.rd, st.epoch, r.hist_warning, sizeof r.hist_warning);
    } else {
        st.lr = cfg.lr; /* (a resume's cfg was read from its config.json after st was made) */
        dpd_rng_seed(&r.rng, cfg.seed);
        dpd_model_init(r.m, &r.rng);
        if (in->resume[0]) { /* killed before its first checkpoint: the same run from the start */
            dpd_run_adopt(&r.rd, &r.info);
            r.rd.delta = delta_cols(&r);
            dpd_run_header(&r.rd.hist, r.rd.delta, r.sc.profile);
            dpd_run_inherit(&r.rd, 0, r.hist_warning, sizeof r.hist_warning);
        }
    }
    if (in->resume[0]) dpd_run_clean(&r.rd); /* temporary files of a writer that was killed */
    if ((s = open_sessions(&r, err))) goto done;
    r.info.kernels = dpd_session_kernels(r.ses);
    if (in->resume[0] && !fresh) {
        size_t np = dpd_model_nparams(r.m);
        if ((s = dpd_session_upload(r.ses, r.m, err))) goto done;
        s = dpd_session_set_state(r.ses, r.mom, r.mom + np, st.step, err);
        if (s == DPD_E_UNSUPPORTED) s = DPD_OK;
        if (s) goto done;
    } else if (!in->resume[0]) {
        if ((s = dpd_run_make(&r.rd, &r.info, err))) goto done;
        r.rd.delta = delta_cols(&r);
        dpd_run_header(&r.rd.hist, r.rd.delta, r.sc.profile);
    }
    if ((s = dpd_run_write_config(&r.rd, &r.info, err))) goto done;
    r.t0 = now() - st.elapsed * 60.0, r.last_note = now();
    dpd_event ev = {.type = DPD_EV_RUN_STARTED, .epoch = st.epoch + 1, .provider = r.prov_used,
                    .resumed = in->resume[0] != 0, .profile = r.sc.profile, .no_dpd = r.pa ? r.nodpd : NULL,
                    .measured = r.measured, .selection = selection(&r), .best_epoch = st.best_epoch,
                    .best = st.best_epoch ? dpd_metric_value(&st.best_val, selection(&r)) : 0};
    int cancel = emit(&r, &ev, 1);
    r.started = 1;
    const char *warns[5] = {r.ds.warning, r.pa_warning, r.kern_warning, r.cover_warning, /* the dataset's, the PA's, */
                            r.hist_warning}; /* the kernels', the frames', the history's */
    for (int k = 0; k < 5; k++)
        if (warns[k][0]) {
            dpd_event w = {.type = DPD_EV_WARNING, .epoch = st.epoch + 1, .message = warns[k]};
            cancel |= emit(&r, &w, 1);
        }
    if (cancel) s = dpd_fail(err, DPD_E_ABORTED, "cancelled");
    dpd_text best = {0};
    const double th[2] = {cfg.model.thx, cfg.model.thh};
    for (int e = st.epoch; e < cfg.epochs && !s; e++) {
        double tl = 0, vl[2];
        dpd_metrics m[2];
        double lr = st.lr;
        long long z[4];
        if ((s = cfg.ls ? ls_epoch(&r, &tl, err) : epoch_train(&r, &st, &tl, err))) break;
        for (int k = 0; k < 2 && !s; k++) {
            s = dpd_eval_run(&r.ev[k], r.ses, cfg.batch_eval, &r.ds.spec, &r.sc, err);
            if (!s) s = dpd_session_zeros(r.ses, z, err);
            for (int i = 0; i < 4; i++) st.dz[i] += z[i];
            vl[k] = r.ev[k].loss, m[k] = r.ev[k].m;
        }
        if (s || (s = sync(&r, &st, err))) break;
        double minutes = (now() - r.t0) / 60.0;
        dpd_sparsity sp = {0};
        dpd_model_sparsity(r.m, st.dz, &sp); /* over this epoch's train, val and test passes */
        memset(st.dz, 0, sizeof st.dz);
        double sel = dpd_metric_value(&m[0], selection(&r));
        int improved = e == 0 || sel < dpd_metric_value(&st.best_val, selection(&r));
        size_t np = dpd_model_nparams(r.m) + (r.pa ? dpd_model_nparams(r.pa) : 0); /* cascade, as OpenDPD */
        dpd_run_row(&r.rd.hist, e + 1, cfg.epochs, minutes, lr, cfg.batch, np, cfg.frame, cfg.model.family,
                    cfg.model.hidden, th, r.rd.delta ? &sp : NULL, tl, vl, m);
        if ((s = dpd_run_write(&r.rd, "history.csv", &r.rd.hist, err))) break;
        if (improved) {
            st.best_epoch = e + 1, st.best_val = m[0], st.best_test = m[1];
            best.n = 0;
            dpd_run_header(&best, r.rd.delta, r.sc.profile);
            dpd_run_row(&best, e + 1, cfg.epochs, minutes, lr, cfg.batch, np, cfg.frame, cfg.model.family,
                        cfg.model.hidden, th, r.rd.delta ? &sp : NULL, tl, vl, m);
            if ((s = dpd_run_write(&r.rd, "best.csv", &best, err)) || (s = dpd_run_save_best(&r.rd, &r.info, r.m, e + 1, &m[0], &m[1], err)))
                break;
        }
        if (cfg.lr_schedule) st.lr = dpd_plateau_step(&r.plat, sel, st.lr);
        st.epoch = e + 1, st.elapsed = minutes;
        if ((s = save_last(&r, &st, err))) break;
        dpd_event ee = {.type = DPD_EV_EPOCH, .epoch = e + 1, .train_loss = tl, .val_loss = vl[0], .test_loss = vl[1],
                        .lr = lr, .val = m[0], .test = m[1], .improved = improved, .val_eval = &r.ev[0],
                        .val_no_dpd = r.no_dpd, .val_measured = r.meas,
                        .sparsity = sp, .elapsed = minutes * 60, .selection = selection(&r), .best_epoch = st.best_epoch,
                        .best = dpd_metric_value(&st.best_val, selection(&r))};
        cancel = emit(&r, &ee, 1);
        if (e == 0 && m[0].status[selection(&r)]) { /* no later epoch can be chosen: said once */
            char msg[400];
            snprintf(msg, sizeof msg, "the val split gives no %s (%s), so no epoch can be chosen by it: best.safetensors "
                                      "is epoch 1's, last.safetensors the last epoch's (lengthen the val split, or lower "
                                      "nperseg in spec.json)", dpd_metric_name(selection(&r)), m[0].reason[selection(&r)]);
            dpd_event w = {.type = DPD_EV_WARNING, .epoch = e + 1, .message = msg};
            cancel |= emit(&r, &w, 1);
        }
        if (improved) {
            dpd_event ck = {.type = DPD_EV_CHECKPOINT, .epoch = e + 1, .path = "best.safetensors"};
            cancel |= emit(&r, &ck, 1);
        }
        dpd_event cl = {.type = DPD_EV_CHECKPOINT, .epoch = e + 1, .path = "last.safetensors"};
        cancel |= emit(&r, &cl, 1);
        if ((s = dpd_run_write(&r.rd, "events.jsonl", &r.rd.events, err))) break;
        if ((cancel || r.cancel) && e + 1 < cfg.epochs) s = dpd_fail(err, DPD_E_ABORTED, "cancelled");
    }
    dpd_text_free(&best);
    if (!s) worse_than_none(&r, &st, &cfg);
    if (!s) {
        char done_msg[64];
        snprintf(done_msg, sizeof done_msg, "%d of %d epochs, best %d", st.epoch, cfg.epochs, st.best_epoch);
        dpd_event end = {.type = DPD_EV_RUN_ENDED, .epoch = st.epoch, .status = DPD_OK, .outcome = "completed",
                         .message = done_msg};
        emit(&r, &end, 1);
        s = dpd_run_write(&r.rd, "events.jsonl", &r.rd.events, err);
    }
    if (!s) {
        snprintf(res->run_dir, sizeof res->run_dir, "%s", r.rd.dir);
        res->epochs = st.epoch, res->best_epoch = st.best_epoch;
        res->val = st.best_val, res->test = st.best_test;
        res->dpd = r.pa != NULL, res->selection = selection(&r);
        snprintf(res->provider, sizeof res->provider, "%s", r.prov_used);
        res->config = cfg;
    }
done:
    if (r.started) { /* the baselines, of a run that stopped too */
        res->baselines = 1;
        res->no_dpd_val = r.nodpd[0], res->no_dpd_test = r.nodpd[1];
        res->measured_val = r.measured[0], res->measured_test = r.measured[1];
    }
    /* a run that started records how it ended; a directory this call made without a finished epoch
     * goes; a resume refused before it started leaves its run directory as it was */
    if (s && (r.started || r.rd.created)) stopped(&r, &st, s, err ? err->msg : "");
    if (s && (r.started || r.rd.created) && r.rd.dir[0]) {
        snprintf(res->run_dir, sizeof res->run_dir, "%s", r.rd.dir);
        res->epochs = st.epoch, res->best_epoch = st.best_epoch; /* what stands */
        res->dpd = r.pa != NULL, res->selection = selection(&r);
        if (st.best_epoch) res->val = st.best_val, res->test = st.best_test;
    }
    run_free(&r);
    return s;
}
