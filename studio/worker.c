/* worker: `dpd worker --run-dir D` — one studio run in a process of its own. Reads D/job.json,
 * trains with dpd_train into D/out exactly as the CLI would, appends its events to
 * D/events.jsonl (a heartbeat at least every 5 s), rewrites D/live.json each epoch, writes
 * D/result.json last, and exits 0 (succeeded), 1 (failed) or 3 (cancelled). SIGTERM or a D/CANCEL
 * file stops it between chunks of steps. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "job.h"
#include "sandbox.h"
#include "studio.h"

/* Set by SIGTERM/SIGINT. Atomic, not just volatile: the handler runs on whichever of the worker's
 * threads the kernel picks (the heartbeat's, a training pool's), not always on the one reading it. */
static int stop_sig;
static void on_term(int sig) { __atomic_store_n(&stop_sig, sig, __ATOMIC_RELAXED); }

typedef struct worker {
    int fd;                /* events.jsonl */
    pthread_mutex_t mu;    /* one writer of a line at a time */
    double last_progress;  /* when the last progress line was written */
    int ignore_cancel;
    int revision;          /* live.json */
    json_t *history;       /* the per-epoch rows for live.json */
    int every;             /* preview_every_batches (0: the snapshot comes once per epoch) */
    long previews;         /* extra forward passes made for previews */
    int preview_revision;  /* live.json's revision of the last preview (in progress events) */
    dpd_profile profile;   /* the run's metric profile: its PSD and bands in the live plots */
    char run_dir[4096];
    int stop;              /* the heartbeat thread ends */
    pthread_t hb;
    int have_hb;
} worker;


/* One line {"ts", "type", "data"}; data is stolen. */
static void emit(worker *w, const char *type, json_t *data) {
    json_t *o = json_pack("{s:f, s:s, s:o}", "ts", floor(studio_now() * 1000) / 1000, "type", type, "data",
                          data ? data : json_object());
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!s) return;
    size_t n = strlen(s);
    s[n] = '\n'; /* json_dumps' terminator becomes the newline; written as one write() */
    pthread_mutex_lock(&w->mu);
    ssize_t r = write(w->fd, s, n + 1);
    (void)r;
    pthread_mutex_unlock(&w->mu);
    free(s);
}

static void *heartbeat(void *arg) {
    worker *w = arg;
    for (int t = 0;; t++) {
        struct timespec d = {0, 250 * 1000 * 1000};
        nanosleep(&d, NULL);
        if (__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) return NULL;
        if (t % 20 == 19) emit(w, "heartbeat", json_pack("{s:i}", "pid", (int)getpid()));
    }
}

static void start_heartbeat(worker *w) { w->have_hb = !pthread_create(&w->hb, NULL, heartbeat, w); }

static int cancelled(const worker *w) {
    if (w->ignore_cancel) return 0;
    return __atomic_load_n(&stop_sig, __ATOMIC_RELAXED) != 0 || access("CANCEL", F_OK) == 0;
}

/* A progress line (data stolen), carrying the revision of live.json's last preview, if any: the
 * run page's cue to read /live again. */
static void progress(worker *w, json_t *d) {
    if (d && w->preview_revision) json_object_set_new(d, "preview_revision", json_integer(w->preview_revision));
    emit(w, "progress", d);
}

/* ---- the live snapshot (live.json) ---- */

/* The library's plot data (plots-v1) of one epoch's validation predictions (a DPD run's with PA(x)
 * and the capture's y, as its final pictures); null when none. */
static json_t *plots(const dpd_event *ev, const dpd_spec *spec, dpd_profile profile) {
    const dpd_eval *e = ev->val_eval;
    if (!e || !e->pred || !spec) return json_null();
    dpd_plot_in in = {.x = e->x, .ref = e->ref, .pred = e->pred, .other = ev->val_no_dpd, .measured = ev->val_measured,
                      .S = e->S, .N = e->N, .n = e->n, .spec = spec, .other_name = "no_dpd", .profile = profile};
    dpd_error err = {0};
    char *text = dpd_plot_json(&in, &err);
    json_t *j = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    return j ? j : json_pack("{s:s}", "empty", err.msg[0] ? err.msg : "no plot data");
}

/* Writes path atomically (tmp + rename). */
static int write_json(const char *path, json_t *j) {
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    int rc = json_dump_file(j, tmp, JSON_COMPACT);
    if (!rc) rc = rename(tmp, path);
    if (rc) unlink(tmp);
    return rc;
}

/* live.json (live-v1): the epochs so far, the policy, and the plots of the last epoch's
 * validation predictions, or of the last preview (a PREVIEW event: the first val segments on
 * the weights of that step, whose loss and metrics are `probe`; `metrics` stays the last
 * epoch's). */
static void live(worker *w, const dpd_event *e, const dpd_spec *spec) {
    int pv = e->type == DPD_EV_PREVIEW;
    if (pv)
        w->previews++;
    else
        json_array_append_new(w->history, json_pack("{s:i, s:o, s:o, s:o, s:f}", "epoch", e->epoch, "train_loss",
                                                    cli_jnum(e->train_loss), "val", cli_metrics_json(&e->val, 0), "test",
                                                    cli_metrics_json(&e->test, 0), "lr", e->lr));
    size_t nh = json_array_size(w->history);
    json_t *policy = json_pack("{s:s, s:o, s:f, s:i}", "mode", w->every ? "batch" : "epoch", "every_batches",
                               w->every ? json_integer(w->every) : json_null(), "progress_seconds", 0.5,
                               "max_preview_samples", 16384);
    json_t *j = json_pack("{s:i, s:f, s:i, s:i, s:s, s:O, s:O, s:o, s:I, s:o}", "revision", ++w->revision, "updated_at",
                          studio_now(), "epoch", e->epoch, "epochs", e->epochs, "source", pv ? "batch_probe" : "validation",
                          "metrics", nh ? json_array_get(w->history, nh - 1) : json_null(), "history", w->history,
                          "policy", policy, "previews", (json_int_t)w->previews, "plots",
                          spec ? plots(e, spec, w->profile) : json_null());
    if (j && pv) { /* the probe's own figures beside the last epoch's metrics: what its plots show */
        if (e->val_eval)
            json_object_set_new(j, "probe", json_pack("{s:o, s:o}", "loss", cli_jnum(e->val_eval->loss), "val",
                                                      cli_metrics_json(&e->val_eval->m, 0))); /* NaN: null */
        json_object_set_new(j, "step", json_integer(e->step));
        json_object_set_new(j, "steps_done", json_integer(e->steps_done));
        json_object_set_new(j, "steps", json_integer(e->steps));
        w->preview_revision = w->revision;
    }
    if (j) write_json("live.json", j);
    json_decref(j);
}

/* ---- the real verbs ---- */

typedef struct ctx {
    worker *w;
    dpd_spec spec;
    int have_spec;
    cli_plot_kept kept; /* the best epoch's validation predictions: the final pictures */
    int ls;             /* a least-squares fit (its epoch lines have no learning rate) */
} ctx;

static int on_event(void *user, const dpd_event *e) {
    ctx *c = user;
    worker *w = c->w;
    switch (e->type) {
    case DPD_EV_RUN_STARTED:
        snprintf(w->run_dir, sizeof w->run_dir, "%s", e->run_dir ? e->run_dir : "");
        json_t *d = json_pack("{s:s?, s:s?, s:s?, s:b}", "run_id", e->run_id, "run_dir", e->run_dir, "provider", e->provider,
                              "resumed", e->resumed);
        for (int k = 0; k < 2 && d; k++) { /* the baselines */
            const dpd_metrics *b = k ? e->measured : e->no_dpd;
            if (b) json_object_set_new(d, k ? "measured" : "no_dpd", json_pack("{s:o, s:o}", "val", cli_metrics_json(&b[0], 0), "test",
                                                                               cli_metrics_json(&b[1], 0)));
        }
        emit(w, "started", d);
        fprintf(stderr, "%s %s on %s\n", e->resumed ? "resuming" : c->ls ? "fitting" : "training", e->run_id ? e->run_id : "",
                e->provider ? e->provider : "?"); /* worker.log, the run page's log: what the CLI prints */
        break;
    case DPD_EV_PROGRESS: {
        double t = studio_now();
        if (e->steps_done != e->steps && e->steps_done > 1 && t - w->last_progress < 0.5) break;
        w->last_progress = t;
        progress(w, json_pack("{s:i, s:i, s:I, s:I, s:o, s:o}", "epoch", e->epoch, "epochs", e->epochs, "steps_done",
                              (json_int_t)e->steps_done, "steps", (json_int_t)e->steps, "loss", cli_jnum(e->loss),
                              "samples_per_s", cli_jnum(e->samples_per_s)));
        break;
    }
    case DPD_EV_PREVIEW: live(w, e, c->have_spec ? &c->spec : NULL); break;
    case DPD_EV_EPOCH:
        emit(w, "metric", json_pack("{s:i, s:i, s:o, s:o, s:b, s:o, s:o}", "epoch", e->epoch, "epochs", e->epochs,
                                    "train_loss", cli_jnum(e->train_loss), "lr", cli_jnum(e->lr), "improved",
                                    e->improved, "val", cli_metrics_json(&e->val, 0), "test",
                                    cli_metrics_json(&e->test, 0)));
        live(w, e, c->have_spec ? &c->spec : NULL);
        cli_plot_keep(&c->kept, e);
        char line[1024];
        cli_epoch_text(e, c->ls, line, sizeof line);
        fprintf(stderr, "%s | elapsed %.1f s%s\n", line, e->elapsed, e->improved && !c->ls ? " *" : "");
        break;
    case DPD_EV_CHECKPOINT: {
        json_t *ck = json_pack("{s:i, s:s?}", "epoch", e->epoch, "name", e->path);
        if (e->steps_done > 0) json_object_set_new(ck, "steps_done", json_integer(e->steps_done)); /* a mid-epoch stop */
        emit(w, "checkpoint", ck);
        break;
    }
    case DPD_EV_WARNING:
        emit(w, "warning", json_pack("{s:s?}", "message", e->message));
        fprintf(stderr, "warning: %s\n", e->message ? e->message : "");
        break;
    case DPD_EV_RUN_ENDED: break;
    }
    return cancelled(w);
}

static const char *code_of(dpd_status s) {
    switch (s) {
    case DPD_E_NOMEM: return "oom";
    case DPD_E_DIVERGED: return "diverged";
    case DPD_E_INVAL: return "invalid_config";
    case DPD_E_FORMAT: return "invalid_data";
    case DPD_E_IO: return "io_error";
    case DPD_E_DEVICE: return "device_error";
    default: return "failed";
    }
}

/* result.json and the exit code. */
static int finish(worker *w, const char *outcome, json_t *summary, const char *code, const char *msg,
                  const char *field) {
    json_t *r = json_pack("{s:s, s:o}", "outcome", outcome, "summary", summary ? summary : json_null());
    if (code)
        json_object_set_new(r, "error", json_pack("{s:s, s:s, s:s?}", "code", code, "message", msg ? msg : "", "field",
                                                  field && field[0] ? field : NULL)); /* null, as a run's error field */
    emit(w, "ended", json_pack("{s:s, s:s}", "outcome", outcome, "message", msg ? msg : ""));
    write_json("result.json", r);
    json_decref(r);
    return !strcmp(outcome, "completed") ? 0 : !strcmp(outcome, "cancelled") ? 3 : 1;
}

static int run_real(worker *w, const job *j, json_t *jj) {
    dpd_train_cfg c = j->cfg;
    const char *data = json_string_value(json_object_get(jj, "dataset_dir"));
    const char *pa = json_string_value(json_object_get(jj, "pa_dir"));
    if (!data) return finish(w, "failed", NULL, "invalid_job", "job.json: no dataset_dir", "dataset");
    snprintf(c.data, sizeof c.data, "%s", data);
    snprintf(c.pa, sizeof c.pa, "%s", pa ? pa : "");
    char out[4200];
    if (!getcwd(out, sizeof out - 8)) return finish(w, "failed", NULL, "io_error", strerror(errno), NULL);
    strcat(out, "/out");
    snprintf(c.out, sizeof c.out, "%s", out);
    ctx cx = {.w = w, .ls = j->cfg.ls};
    int pn = dpd_profile_parse(c.metric_profile); /* "": the default, legacy */
    w->profile = pn > 0 ? (dpd_profile)pn : DPD_PROFILE_LEGACY;
    start_heartbeat(w);
    dpd_error err = {0};
    cli_plot_warm(); /* beside the doctor's and dpd_train's reading of the dataset, as train-pa does (cli.h) */
    dpd_doctor_report dr = {0}; /* its warnings (and a fit's errors, which nothing gates) as the run's */
    if (!j->no_doctor && !dpd_doctor_run(c.data, &dr, &err))
        for (int i = 0; i < dr.nfindings; i++) {
            const dpd_finding *f = &dr.findings[i];
            if (!cli_doctor_telling(f)) continue;
            char msg[700];
            snprintf(msg, sizeof msg, "the dataset doctor: %s%s (%s): %s", f->severity == DPD_SEV_ERROR ? "error: " : "",
                     f->title, f->value, f->message);
            emit(w, "warning", json_pack("{s:s, s:s}", "message", msg, "code", f->code));
        }
    dpd_doctor_report_free(&dr);
    char note[256];
    if (cli_threads_note(c.threads, note, sizeof note)) emit(w, "warning", json_pack("{s:s}", "message", note));
    memset(&err, 0, sizeof err);
    dpd_dataset ds;
    if (!dpd_dataset_load(c.data, 0, 0, &ds, &err)) { /* the spec only: for the live PSD */
        cx.spec = ds.spec, cx.have_spec = 1;
        dpd_dataset_free(&ds);
    }
    dpd_train_result res;
    memset(&res, 0, sizeof res);
    memset(&err, 0, sizeof err);
    dpd_status s = dpd_train(&c, on_event, &cx, &res, &err);
    fprintf(stderr, "%s%s\n", s == DPD_E_ABORTED ? "cancelled" : s ? "failed: " : "completed", s && s != DPD_E_ABORTED ? err.msg : "");
    if (s) cli_plot_warm_wait(); /* no pictures: the warm-up joined */
    json_t *sum = NULL;
    if (s == DPD_E_ABORTED) { /* as `dpd train-pa --json` reports a cancelled run */
        cli_plot_kept_free(&cx.kept);
        /* quoted as the CLI prints it: paste-able; of a copy, so that the studio's run stays as it ended (its
         * artifacts' sizes and sha256 describe its files) and the finished copy can be imported */
        char q[4 * sizeof res.run_dir + 8], q2[4 * sizeof res.run_dir + 8], cmd[2 * sizeof q + 96] = "";
        const char *base = strrchr(res.run_dir, '/');
        base = base ? base + 1 : res.run_dir;
        if (res.run_dir[0] && strcmp(j->verb, "fit-ls"))
            snprintf(cmd, sizeof cmd, "cp -r %s . && dpd %s --resume %s", cli_shell_quote(res.run_dir, q, sizeof q), j->verb,
                     cli_shell_quote(base, q2, sizeof q2));
        sum = cli_stopped_json("cancelled", &res);
        json_object_del(sum, "outcome"); /* result.json's own */
        if (cmd[0]) json_object_set_new(sum, "resume", json_string(cmd));
        return finish(w, "cancelled", sum, NULL, "cancelled", NULL);
    }
    if (!s) { /* the final pictures, as dpd train-pa draws them (plots/, served as GET /runs/{id}/plots) */
        dpd_error perr = {0};
        cli_plot_opts po = {.split = "val", .kept = &cx.kept};
        if (cli_plot_run(res.run_dir, &po, &perr))
            emit(w, "warning", json_pack("{s:s}", "message", perr.msg[0] ? perr.msg : "the final pictures could not be drawn"));
    }
    cli_plot_kept_free(&cx.kept);
    const char *outcome = s == DPD_E_DIVERGED ? "diverged" : "failed";
    if (s) { /* what stands: the best epoch so far (none: run_dir null, epochs 0), as `dpd train-pa --json` prints it */
        sum = cli_stopped_json(outcome, &res);
        json_object_del(sum, "outcome");
    }
    if (s) return finish(w, outcome, sum, code_of(s), err.msg, err.field);
    sum = cli_summary_json(&res);
    return finish(w, "completed", sum, NULL, "completed", NULL); /* the log's last line too */
}

/* ---- the fake verb ---- */

static void sleep_ms(int ms) {
    struct timespec d = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&d, &d) && errno == EINTR) {}
}

/* The fake run's epoch ep of `epochs` as a model output: a deterministic two-tone signal through
 * a soft compressor (the target) and a prediction that approaches it epoch by epoch. Fills e. */
/* Writes path: mb MiB of bytes i % 251 (and whole: the worker dies on a file size limit first). */
static void blob(const char *path, int mb) {
    FILE *fp = fopen(path, "w");
    static unsigned char block[1 << 20];
    for (size_t i = 0; i < sizeof block; i++) block[i] = (unsigned char)(i % 251);
    for (int m = 0; fp && m < mb; m++) fwrite(block, 1, sizeof block, fp);
    if (fp) fclose(fp);
}

static void fake_eval(dpd_eval *e, float *buf, int ep, int epochs) {
    enum { S = 4, N = 256 };
    float *x = buf, *ref = buf + 2 * S * N, *pred = buf + 4 * S * N;
    for (int i = 0; i < S * N; i++) {
        double a = 0.5 * cos(0.031 * i) + 0.3 * cos(0.173 * i), b = 0.5 * sin(0.031 * i) + 0.3 * sin(0.173 * i);
        double r = hypot(a, b), g = tanh(2 * r) / (2 * r > 0 ? 2 * r : 1), ph = 0.3 * r * r;
        x[2 * i] = (float)a, x[2 * i + 1] = (float)b;
        double ta = 2 * g * (a * cos(ph) - b * sin(ph)), tb = 2 * g * (a * sin(ph) + b * cos(ph));
        ref[2 * i] = (float)ta, ref[2 * i + 1] = (float)tb;
        double err = 0.5 / (1.0 + ep) * (epochs + 1 - ep) / epochs;
        pred[2 * i] = (float)(ta + err * a), pred[2 * i + 1] = (float)(tb - err * b);
    }
    *e = (dpd_eval){.split = DPD_VAL, .n = S * N, .S = S, .N = N, .x = x, .ref = ref, .pred = pred};
}

static const dpd_spec fake_spec = {.fs = 800e6, .bw_main = 200e6, .n_sub = 1, .nperseg = 256};

static int run_fake(worker *w, const job *j) {
    const job_fake *f = &j->fake;
    if (f->alloc_mb) {
        size_t n = (size_t)f->alloc_mb << 20;
        char *p = malloc(n);
        if (!p) return finish(w, "failed", NULL, "oom", "out of memory", NULL);
        memset(p, 1, n);
        free(p);
    }
    if (f->silent_ms) sleep_ms(f->silent_ms);
    start_heartbeat(w);
    mkdir("out", 0700);
    mkdir("out/fake", 0700);
    snprintf(w->run_dir, sizeof w->run_dir, "out/fake");
    emit(w, "started", json_pack("{s:s, s:s, s:s, s:b}", "run_id", "FAKE", "run_dir", "out/fake", "provider", "fake",
                                 "resumed", 0));
    if (f->fill_mb) blob("out/fake/fill.bin", f->fill_mb); /* before its epochs (storage quota tests) */
    if (f->probe[0]) /* the sandbox's walls, tried (a kill ends the worker here) */
        emit(w, "warning", json_pack("{s:s, s:s, s:o}", "message", "sandbox probe", "probe", f->probe, "result",
                                     sandbox_probe(f->probe)));
    for (int ep = 1; ep <= f->epochs; ep++) {
        for (int k = 1; k <= 4; k++) {
            sleep_ms(f->epoch_ms / 4);
            if (cancelled(w)) /* as a real run: a run directory once an epoch has written its checkpoint */
                return finish(w, "cancelled", ep > 1 ? json_pack("{s:s, s:i}", "run_dir", "out/fake", "epochs", ep - 1) : NULL,
                              NULL, "cancelled", NULL);
            progress(w, json_pack("{s:i, s:i, s:i, s:i, s:f, s:f}", "epoch", ep, "epochs", f->epochs, "steps_done", k,
                                  "steps", 4, "loss", 1.0 / (ep * 4 + k), "samples_per_s", 1000.0));
            long step = (ep - 1) * 4L + k;
            if (w->every && step % w->every == 0) { /* a preview: the epoch's model output so far */
                static float pbuf[6 * 4 * 256];
                dpd_eval e;
                fake_eval(&e, pbuf, ep, f->epochs);
                e.loss = 1.0 / (double)(step + 4), e.m.nmse = -10.0 - (double)step / 4; /* at the epoch's end: its NMSE */
                e.m.evm = e.m.nmse - 1, e.m.aclr_l = e.m.aclr_r = e.m.aclr_avg = e.m.nmse - 20;
                dpd_event pv = {.type = DPD_EV_PREVIEW, .epoch = ep, .epochs = f->epochs, .steps_done = k, .steps = 4,
                                .step = step, .val_eval = &e};
                live(w, &pv, &fake_spec);
            }
        }
        double nmse = -10.0 - ep;
        emit(w, "metric", json_pack("{s:i, s:i, s:f, s:f, s:b, s:{s:f}, s:{s:f}}", "epoch", ep, "epochs", f->epochs,
                                    "train_loss", 1.0 / ep, "lr", 0.005, "improved", 1, "val", "NMSE", nmse, "test",
                                    "NMSE", nmse));
        /* the live snapshot, as a real run writes it (the studio's UI tests draw it) */
        static float buf[6 * 4 * 256];
        dpd_eval e;
        fake_eval(&e, buf, ep, f->epochs);
        dpd_event ev = {.type = DPD_EV_EPOCH, .epoch = ep, .epochs = f->epochs, .train_loss = 1.0 / ep, .lr = 0.005,
                        .val_eval = &e};
        for (int k = 0; k < DPD_NMETRICS; k++) ev.val.status[k] = ev.test.status[k] = DPD_METRIC_OK;
        ev.val.nmse = ev.test.nmse = nmse;
        ev.val.evm = ev.test.evm = nmse - 1;
        ev.val.aclr_l = ev.val.aclr_r = ev.val.aclr_avg = ev.test.aclr_l = ev.test.aclr_r = ev.test.aclr_avg = -30.0 - ep;
        live(w, &ev, &fake_spec);
        FILE *fp = fopen("out/fake/best.safetensors", "w");
        if (fp) {
            fprintf(fp, "fake checkpoint of epoch %d\n", ep);
            fclose(fp);
        }
        emit(w, "checkpoint", json_pack("{s:i, s:s}", "epoch", ep, "name", "best.safetensors"));
        fprintf(stderr, "fake: epoch %d of %d\n", ep, f->epochs); /* worker.log, for the log view */
    }
    if (f->artifact_mb) blob("out/fake/blob.bin", f->artifact_mb); /* a large file among the artifacts (downloads) */
    fputs("fake: done", stderr); /* a last line without its newline: shown once the run has ended */
    { /* the run's final plot data (docs/formats.md, "Run plots"), as dpd plot writes it */
        static float buf[6 * 4 * 256];
        dpd_eval e;
        fake_eval(&e, buf, f->epochs, f->epochs);
        mkdir("out/fake/plots", 0700);
        json_t *pl = plots(&(dpd_event){.val_eval = &e}, &fake_spec, DPD_PROFILE_LEGACY);
        json_t *doc = json_pack("{s:s, s:s, s:s, s:s, s:b, s:o}", "version", "run-plots-v1", "run_dir", "out/fake", "split",
                                "test", "checkpoint", "best.safetensors", "dpd", 0, "plots", pl);
        if (doc) write_json("out/fake/plots/plots.json", doc);
        json_decref(doc);
    }
    if (f->exit_code >= 0) { /* no outcome written: the server must see a worker that died */
        __atomic_store_n(&w->stop, 1, __ATOMIC_RELEASE);
        if (w->have_hb) pthread_join(w->hb, NULL);
        _exit(f->exit_code);
    }
    return finish(w, "completed", json_pack("{s:s, s:i}", "run_dir", "out/fake", "epochs", f->epochs), NULL, "completed", NULL);
}

/* ---- import (dpd serve --import): a completed CLI run, shown as a studio run ---- */

/* Copies the regular files of from into to (created), and those of its subdirectories one level
 * down (plots/); links, devices and half-written temporaries are left out. 0, or -1 with errno. */
static int copy_tree(const char *from, const char *to, int depth) {
    if (mkdir(to, 0700) && errno != EEXIST) return -1;
    DIR *d = opendir(from);
    if (!d) return -1;
    struct dirent *e;
    int rc = 0;
    while (!rc && (e = readdir(d))) {
        char a[4400], b[4400];
        struct stat sb;
        if (e->d_name[0] == '.' || strstr(e->d_name, ".tmp.")) continue;
        snprintf(a, sizeof a, "%s/%s", from, e->d_name);
        snprintf(b, sizeof b, "%s/%s", to, e->d_name);
        if (lstat(a, &sb)) continue;
        if (S_ISDIR(sb.st_mode)) {
            if (depth < 1) rc = copy_tree(a, b, depth + 1);
            continue;
        }
        if (!S_ISREG(sb.st_mode)) continue;
        int in = open(a, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        int out = in < 0 ? -1 : open(b, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        char buf[1 << 16];
        ssize_t n = 0;
        while (out >= 0 && (n = read(in, buf, sizeof buf)) > 0)
            if (write(out, buf, (size_t)n) != n) n = -1;
        rc = in < 0 || out < 0 || n < 0 ? -1 : 0;
        if (in >= 0) close(in);
        if (out >= 0 && close(out)) rc = -1;
    }
    closedir(d);
    return rc;
}

/* The metrics of split ("val", "test") of a CLI epoch event, as the studio's metric events carry
 * them (without the loss): a new reference, NULL when there are none. */
static json_t *scores(const json_t *epoch_event, const char *split) {
    json_t *m = json_deep_copy(json_object_get(epoch_event, split));
    json_object_del(m, "loss");
    return m;
}

/* The run's events.jsonl as the worker's events; *best: the last improved epoch's event (a new
 * reference), *epochs the last epoch, provider copied out. */
static void replay(worker *w, const char *run_dir, json_t **best, int *epochs, char *provider, size_t np) {
    char path[4200], *text = NULL;
    snprintf(path, sizeof path, "%s/events.jsonl", run_dir);
    dpd_error err = {0};
    if (dpd_read_file(path, 0, "events", &text, NULL, &err)) return; /* checked by job_import_check */
    json_int_t total = 0; /* the epochs of the run (run_started's) */
    for (char *rest = text, *line; (line = strsep(&rest, "\n"));) {
        json_t *e = json_loads(line, 0, NULL), *ep = json_object_get(e, "epoch");
        const char *t = json_string_value(json_object_get(e, "type"));
        if (!t) {
            json_decref(e);
            continue;
        }
        if (!strcmp(t, "run_started")) {
            total = json_integer_value(json_object_get(e, "epochs"));
            snprintf(provider, np, "%s", json_string_value(json_object_get(e, "provider")) ?: "");
            json_t *d = json_pack("{s:O?, s:s, s:O?, s:b}", "run_id", json_object_get(e, "run_id"), "run_dir", run_dir,
                                  "provider", json_object_get(e, "provider"), "resumed",
                                  json_is_true(json_object_get(e, "resumed")));
            for (int k = 0; k < 2 && d; k++) { /* the baselines, as a run of the studio's states them */
                json_t *b = json_object_get(e, k ? "no_dpd" : "measured");
                if (json_is_object(b)) json_object_set(d, k ? "no_dpd" : "measured", b);
            }
            emit(w, "started", d);
        } else if (!strcmp(t, "progress")) {
            emit(w, "progress", json_pack("{s:O, s:I, s:O?, s:O?, s:O?, s:O?}", "epoch", ep, "epochs", total,
                                          "steps_done", json_object_get(e, "steps_done"), "steps",
                                          json_object_get(e, "steps"), "loss", json_object_get(e, "loss"),
                                          "samples_per_s", json_object_get(e, "samples_per_s")));
        } else if (!strcmp(t, "epoch")) {
            *epochs = (int)json_integer_value(ep);
            if (json_is_true(json_object_get(e, "improved"))) json_decref(*best), *best = json_incref(e);
            emit(w, "metric", json_pack("{s:O, s:I, s:O?, s:O?, s:O?, s:o?, s:o?}", "epoch", ep, "epochs", total,
                                        "train_loss", json_object_get(e, "train_loss"), "lr", json_object_get(e, "lr"),
                                        "improved", json_object_get(e, "improved"), "val", scores(e, "val"), "test",
                                        scores(e, "test")));
        } else if (!strcmp(t, "checkpoint")) {
            json_t *ck = json_pack("{s:O, s:O?}", "epoch", ep, "name", json_object_get(e, "path"));
            if (json_is_integer(json_object_get(e, "steps_done")))
                json_object_set(ck, "steps_done", json_object_get(e, "steps_done"));
            emit(w, "checkpoint", ck);
        } else if (!strcmp(t, "warning")) {
            emit(w, "warning", json_pack("{s:O?}", "message", json_object_get(e, "message")));
        }
        json_decref(e);
    }
    free(text);
}

static int run_import(worker *w, const char *from) {
    char verb[16], dataset[256], dest[4400], cwd[4096], provider[600] = "";
    dpd_error err = {0};
    if (job_import_check(from, verb, dataset, &err)) return finish(w, "failed", NULL, "invalid_job", err.msg, "import");
    start_heartbeat(w);
    const char *base = strrchr(from, '/');
    base = base && base[1] ? base + 1 : from;
    if (!getcwd(cwd, sizeof cwd) || mkdir("out", 0700) ||
        (snprintf(dest, sizeof dest, "%s/out/%s", cwd, base), copy_tree(from, dest, 0)))
        return finish(w, "failed", NULL, "io_error", strerror(errno), NULL);
    snprintf(w->run_dir, sizeof w->run_dir, "%s", dest);
    json_t *best = NULL;
    int epochs = 0;
    replay(w, dest, &best, &epochs, provider, sizeof provider);
    char path[4500];
    snprintf(path, sizeof path, "%s/plots/plots.json", dest);
    if (access(path, F_OK)) { /* a run made with --no-plots: drawn now, when its dataset is reachable from here */
        cli_plot_opts po = {.split = "val"};
        if (cli_plot_run(dest, &po, &err))
            emit(w, "warning", json_pack("{s:s}", "message", err.msg[0] ? err.msg : "the run's pictures could not be drawn"));
    }
    snprintf(path, sizeof path, "%s/config.json", dest);
    json_t *sum = json_pack("{s:s, s:i, s:O?, s:o?, s:o?, s:s, s:o?, s:s}", "run_dir", dest, "epochs", epochs, "best_epoch",
                            json_object_get(best, "epoch"), "val", scores(best, "val"), "test", scores(best, "test"),
                            "provider", provider, "config",
                            cli_json_read(path, 0, &err), "imported_from", from);
    json_decref(best);
    json_t *bl = cli_run_baselines(dest, &err); /* the summary's baselines, as a run of the studio's has them */
    for (int k = 0; k < 4 && sum && bl; k++) {
        static const char *const key[4] = {"measured", "measured_val", "no_dpd", "no_dpd_val"};
        json_t *v = json_object_get(json_object_get(bl, k < 2 ? "measured" : "no_dpd"), k % 2 ? "val" : "test");
        if (json_is_object(v)) json_object_set(sum, key[k], v);
    }
    json_decref(bl);
    fprintf(stderr, "imported %s (%s on %s, %d epochs)\n", from, verb, dataset, epochs);
    return finish(w, "completed", sum, NULL, NULL, NULL);
}

int cmd_worker(int argc, char **argv) {
    const char *dir = NULL;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--run-dir") && i + 1 < argc) dir = argv[++i];
        else if (cli_is_help(argv[i])) {
            printf("usage: dpd worker --run-dir DIR\n\nRuns one studio run (DIR/job.json); started by dpd serve.\n");
            return 0;
        } else {
            fprintf(stderr, "dpd worker: unknown argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (!dir || chdir(dir)) {
        fprintf(stderr, "dpd worker: --run-dir %s: %s\n", dir ? dir : "(missing)", dir ? strerror(errno) : "required");
        return 2;
    }
    worker w = {.fd = open("events.jsonl", O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600), .history = json_array()};
    if (w.fd < 0) {
        fprintf(stderr, "dpd worker: %s/events.jsonl: %s\n", dir, strerror(errno));
        return 1;
    }
    pthread_mutex_init(&w.mu, NULL);
    json_error_t je;
    json_t *jj = json_load_file("job.json", JSON_REJECT_DUPLICATES, &je);
    job j;
    dpd_error err = {0};
    const char *verb = json_string_value(json_object_get(jj, "verb"));
    const char *from = json_string_value(json_object_get(jj, "import")); /* dpd serve --import */
    if (!jj || (!from && job_resolve(&j, verb, json_object_get(jj, "options"), verb && !strcmp(verb, "fake"), &err)))
        return finish(&w, "failed", NULL, "invalid_job", jj ? err.msg : je.text, jj ? err.field : NULL);
    if (!from) w.ignore_cancel = j.fake.ignore_cancel, w.every = j.cfg.preview_every;
    const char *walls = getenv(SANDBOX_ENV); /* a public session's worker (sandbox.h) */
    if (walls) {
        char why[256];
        if (sandbox_seal(why, sizeof why)) return finish(&w, "failed", NULL, "sandbox_failed", why, NULL);
        emit(&w, "sandbox", sandbox_report(walls));
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = w.ignore_cancel ? SIG_IGN : on_term;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    int rc = from ? run_import(&w, from) : strcmp(j.verb, "fake") ? run_real(&w, &j, jj) : run_fake(&w, &j);
    __atomic_store_n(&w.stop, 1, __ATOMIC_RELEASE);
    if (w.have_hb) pthread_join(w.hb, NULL);
    json_decref(jj);
    json_decref(w.history);
    close(w.fd);
    return rc;
}
