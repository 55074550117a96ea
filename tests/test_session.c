/* test_session: the public session API and training runs through it — options (unknown keys and
 * bad values named), sessions with different kernels and thread counts side by side in one
 * process giving what each gives alone in its own process, DPD chaining, typed events
 * (events.jsonl with sequence numbers, start and end records), and cancellation: a run
 * cancelled in the middle of an epoch or between epochs resumes to an end bit-identical to an
 * uninterrupted run; one cancelled before its first epoch leaves no run directory; divergence
 * has its own status. */
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "dpd/dpd.h"
#include "file.h"

static const char *data; /* a small synthetic dataset */

/* ---- options ---- */

static void options(void) {
    dpd_model_cfg c = {"gru", 4, 1};
    dpd_model *m = check_model(&c, NULL);
    dpd_session *s = NULL;
    dpd_error err = {0};
    dpd_kv bad[] = {{"provider", "cpu"}, {"thread", "2"}};
    CHECK(dpd_session_create(m, bad, 2, &s, &err) == DPD_E_INVAL && !s && strstr(err.msg, "thread") &&
              !strcmp(err.field, "thread"),
          "an unknown option is refused naming it: %s", err.msg);
    dpd_kv th[] = {{"threads", "many"}};
    CHECK(dpd_session_create(m, th, 1, &s, &err) == DPD_E_INVAL && strstr(err.msg, "threads: 'many'"),
          "a bad threads value is refused naming it: %s", err.msg);
    dpd_kv kn[] = {{"provider", "cpu"}, {"kernels", "avx9000"}};
    CHECK(dpd_session_create(m, kn, 2, &s, &err) == DPD_E_INVAL && strstr(err.msg, "kernels: 'avx9000'"),
          "a bad kernels value is refused naming it: %s", err.msg);
    dpd_kv pv[] = {{"provider", "warpdrive"}};
    CHECK(dpd_session_create(m, pv, 1, &s, &err) != DPD_OK && strstr(err.msg, "warpdrive"),
          "an unknown provider is refused naming it: %s", err.msg);
    dpd_kv ok[] = {{"provider", "cpu"}, {"kernels", "ref"}, {"threads", "2"}, {"max_batch", "8"}, {"max_frame", "16"}};
    CHECK(dpd_session_create(m, ok, 5, &s, &err) == DPD_OK, "%s", err.msg);
    if (s) {
        CHECK(!strcmp(dpd_session_provider(s), "cpu") && !strcmp(dpd_session_kernels(s), "ref") &&
                  dpd_session_threads(s) == 2 && dpd_session_batch(s) == 8,
              "session reports cpu/ref/2 threads/batch 8: %s/%s/%d/%d", dpd_session_provider(s), dpd_session_kernels(s),
              dpd_session_threads(s), dpd_session_batch(s));
        float x[2 * 40] = {0}, y[2 * 40];
        /* longer than max_frame and wider than max_batch: re-reserved and cut, not refused */
        CHECK(dpd_session_forward(s, x, 1, 40, y, &err) == DPD_OK, "%s", err.msg);
    }
    dpd_session_free(s);
    dpd_model_free(m);
}

/* ---- sessions side by side vs alone ---- */

#define SB 20 /* batch of the training below */
#define ST 30
#define SN (SB * ST * 2)

/* Trains m's copy in session (kernels, threads) for 6 steps on fixed random data; p receives
 * the weights. */
static int train6(const dpd_model *m, const char *kernels, const char *threads, float *p, dpd_session **keep) {
    dpd_error err = {0};
    dpd_kv o[] = {{"provider", "cpu"}, {"kernels", kernels}, {"threads", threads}, {"max_batch", "20"}, {"max_frame", "30"}};
    dpd_session *s;
    if (dpd_session_create(m, o, 5, &s, &err)) return fprintf(stderr, "%s\n", err.msg), 0;
    float *x = malloc(SN * 3 * sizeof *x), *y = malloc(SN * 3 * sizeof *y); /* per call: threads train at once */
    dpd_rng r;
    dpd_rng_seed(&r, 9);
    for (int i = 0; i < SN * 3; i++) x[i] = (float)(0.4 * dpd_rng_normal(&r)), y[i] = (float)(0.4 * dpd_rng_normal(&r));
    uint32_t frames[6 * SB];
    for (int i = 0; i < 6 * SB; i++) frames[i] = (uint32_t)((i * 7) % (3 * SB - 1));
    double losses[6];
    int ok = !dpd_session_attach(s, DPD_TRAIN, x, y, SN * 3 / 2, &err);
    for (int k = 0; ok && k < 6; k++) /* one step per call: interleaved with the other session */
        ok = !dpd_session_train_steps(s, frames + k * SB, SB, SB, ST, ST, 5e-3, 0.01, 1.0, &losses[k], &err);
    dpd_model *out = NULL;
    if (ok) ok = !dpd_model_create(dpd_model_config(m), &out, &err) && !dpd_session_download(s, out, &err);
    if (ok) memcpy(p, dpd_model_params(out), dpd_model_nparams(m) * sizeof *p);
    if (!ok) fprintf(stderr, "train6: %s\n", err.msg);
    free(x), free(y);
    dpd_model_free(out);
    if (keep) *keep = s;
    else dpd_session_free(s);
    return ok;
}

/* The same training alone in a child process; the weights come back through a pipe. */
static int alone(const dpd_model *m, const char *kernels, const char *threads, float *p) {
    int fd[2];
    size_t bytes = dpd_model_nparams(m) * sizeof *p;
    if (pipe(fd)) return 0;
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        int ok = train6(m, kernels, threads, p, NULL);
        _exit(ok && write(fd[1], p, bytes) == (ssize_t)bytes ? 0 : 1);
    }
    close(fd[1]);
    size_t got = 0;
    ssize_t k;
    while (got < bytes && (k = read(fd[0], (char *)p + got, bytes - got)) > 0) got += (size_t)k;
    close(fd[0]);
    int st;
    waitpid(pid, &st, 0);
    return got == bytes && WIFEXITED(st) && !WEXITSTATUS(st);
}

/* Two sessions trained at the same time from two threads give what each gives alone: distinct
 * objects from distinct threads (the ThreadSanitizer build checks the races too). */
typedef struct job {
    const dpd_model *m;
    const char *kernels, *threads;
    float *p;
    int ok;
} job;

static void *job_run(void *arg) {
    job *j = arg;
    j->ok = train6(j->m, j->kernels, j->threads, j->p, NULL);
    return NULL;
}

/* The model both comparisons train: a family at H = 9 with seed-2 weights. */
static dpd_model *model9(const char *family) {
    dpd_model_cfg c = {"", 9, 1};
    snprintf(c.family, sizeof c.family, "%s", family);
    dpd_rng r;
    dpd_rng_seed(&r, 2);
    return check_model(&c, &r);
}

static void concurrent(const char *family) {
    dpd_model *m = model9(family);
    size_t np = dpd_model_nparams(m);
    float *a = malloc(np * 4), *b = malloc(np * 4), *a1 = malloc(np * 4), *b1 = malloc(np * 4);
    job ja = {m, "ref", "2", a, 0}, jb = {m, "auto", "2", b, 0};
    pthread_t ta, tb;
    int started = !pthread_create(&ta, NULL, job_run, &ja) && !pthread_create(&tb, NULL, job_run, &jb);
    if (started) pthread_join(ta, NULL), pthread_join(tb, NULL);
    int ok = started && ja.ok && jb.ok && train6(m, "ref", "2", a1, NULL) && train6(m, "auto", "2", b1, NULL);
    CHECK(ok && !memcmp(a, a1, np * 4) && !memcmp(b, b1, np * 4),
          "%s: two sessions trained concurrently from two threads differ from the same trained one after the other", family);
    free(a), free(b), free(a1), free(b1);
    dpd_model_free(m);
}

static void side_by_side(const char *family) {
    dpd_model *m = model9(family);
    size_t np = dpd_model_nparams(m);
    float *a = malloc(np * 4), *b = malloc(np * 4), *a1 = malloc(np * 4), *b1 = malloc(np * 4);
    /* in one process, both sessions alive at once and used in turn */
    dpd_session *sa = NULL, *sb = NULL;
    int ok = train6(m, "ref", "1", a, &sa) && train6(m, "auto", "2", b, &sb);
#if defined(__SANITIZE_THREAD__) /* ThreadSanitizer cannot start threads in a child forked from threads */
    check_skip(family, "the comparison with a forked process is not run under ThreadSanitizer");
    dpd_session_free(sa), dpd_session_free(sb);
    free(a), free(b), free(a1), free(b1);
    dpd_model_free(m);
    return;
#endif
    CHECK(ok && alone(m, "ref", "1", a1) && alone(m, "auto", "2", b1), "%s: training ran", family);
    CHECK(ok && !memcmp(a, a1, np * 4), "%s: ref kernels, 1 thread: one process with two sessions differs from alone",
          family);
    CHECK(ok && !memcmp(b, b1, np * 4), "%s: fast kernels, 2 threads: one process with two sessions differs from alone",
          family);
    dpd_session_free(sa), dpd_session_free(sb);
    free(a), free(b), free(a1), free(b1);
    dpd_model_free(m);
}

/* ---- training runs: events, cancellation, resume ---- */

typedef struct watch {
    int cancel_epoch;    /* cancel at the PROGRESS event number cancel_progress of this 1-based epoch (0: never) */
    int cancel_progress; /* 0: at that epoch's EPOCH event instead */
    int progress, epochs, started, ended;
    long last_seq;
    int ordered;
    dpd_status end_status;
    int saw_preds;
    long previews, preview_bad; /* PREVIEW events, and those not at a multiple of preview_every, with
                                 * more than 16 384 samples, or written to events.jsonl */
    int every;
    long nb; /* steps per epoch (from the progress events) */
} watch;

static int on_event(void *user, const dpd_event *e) {
    watch *w = user;
    w->ordered &= e->seq == 0 || e->seq > w->last_seq;
    if (e->seq) w->last_seq = e->seq;
    switch (e->type) {
    case DPD_EV_RUN_STARTED: w->started++; break;
    case DPD_EV_PROGRESS:
        w->nb = e->steps;
        if (e->epoch == w->cancel_epoch && ++w->progress == w->cancel_progress) return 1;
        break;
    case DPD_EV_EPOCH:
        w->epochs++;
        w->saw_preds |= e->val_eval && e->val_eval->pred && e->val_eval->S > 0 && isfinite(e->val_eval->pred[0]);
        if (e->epoch == w->cancel_epoch && !w->cancel_progress) return 1;
        break;
    case DPD_EV_RUN_ENDED: w->ended++, w->end_status = e->status; break;
    case DPD_EV_PREVIEW: {
        const dpd_eval *v = e->val_eval;
        w->previews++;
        w->preview_bad += !w->every || e->step % w->every || !v || !v->pred || (size_t)v->S * v->N > 16384 || v->S < 1 ||
                          !isfinite(v->pred[0]) || e->seq != 0;
        break;
    }
    default: break;
    }
    return 0;
}

static void cfg_quick(dpd_train_cfg *c, const char *out, const char *family) {
    dpd_train_defaults(c);
    snprintf(c->data, sizeof c->data, "%s", data);
    snprintf(c->out, sizeof c->out, "%s", out);
    snprintf(c->model.family, sizeof c->model.family, "%s", family);
    c->model.hidden = 6, c->epochs = 3, c->frame = 20, c->stride = 1, c->batch = 16;
    if (strstr(family, "delta")) c->model.thx = 0.01, c->model.thh = 0.05;
    c->threads = 1;
    snprintf(c->provider, sizeof c->provider, "cpu");
}

/* The data region of a safetensors file (weights and optimizer moments), malloc'd. */
static char *tensors(const char *dir, const char *name, size_t *n) {
    char path[4200], *buf;
    size_t len;
    dpd_error err;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (dpd_file_read(path, &buf, &len, &err) || len < 8) return NULL;
    uint64_t hl;
    memcpy(&hl, buf, 8);
    *n = len - 8 - hl;
    memmove(buf, buf + 8 + hl, *n);
    return buf;
}

/* history.csv without its wall-clock TIME column (the third). */
static char *history(const char *dir) {
    char path[4200], *buf;
    snprintf(path, sizeof path, "%s/history.csv", dir);
    if (dpd_file_read(path, &buf, NULL, NULL)) return NULL;
    char *o = buf;
    int field = 1;
    for (char *p = buf; *p; p++) { /* copy every character not in field 3 (nor the comma opening it) */
        if (*p == '\n') field = 1;
        else if (*p == ',') field++;
        if (field != 3) *o++ = *p;
    }
    *o = 0;
    return buf;
}

static void cancel_resume(const char *family, int dpd_pa, int cancel_epoch, int cancel_progress, const char *what) {
    dpd_train_cfg c, u;
    const char *ref = check_tmpdir(), *cut = check_tmpdir();
    cfg_quick(&c, ref, family);
    dpd_error err = {0};
    dpd_train_result res, res2;
    char pa[4200] = "";
    if (dpd_pa) { /* a GRU PA to train through */
        dpd_train_cfg p;
        cfg_quick(&p, check_tmpdir(), "gru");
        p.epochs = 1;
        CHECK(dpd_train(&p, NULL, NULL, &res, &err) == DPD_OK, "PA: %s", err.msg);
        snprintf(pa, sizeof pa, "%s", res.run_dir);
        snprintf(c.pa, sizeof c.pa, "%s", pa);
    }
    u = c;
    watch w0 = {.ordered = 1};
    CHECK(dpd_train(&c, on_event, &w0, &res, &err) == DPD_OK, "%s uninterrupted: %s", what, err.msg);
    CHECK(w0.started == 1 && w0.ended == 1 && w0.epochs == 3 && w0.ordered && w0.saw_preds,
          "%s: events started %d ended %d epochs %d ordered %d predictions %d", what, w0.started, w0.ended, w0.epochs,
          w0.ordered, w0.saw_preds);
    snprintf(u.out, sizeof u.out, "%s", cut);
    watch w = {.cancel_epoch = cancel_epoch, .cancel_progress = cancel_progress, .ordered = 1};
    dpd_status s = dpd_train(&u, on_event, &w, &res2, &err);
    CHECK(s == DPD_E_ABORTED && w.ended == 1 && w.end_status == DPD_E_ABORTED, "%s: cancel gives DPD_E_ABORTED (%d: %s)",
          what, s, err.msg);
    CHECK(res2.run_dir[0], "%s: a run directory is reported", what);
    char events[4400], *ev = NULL;
    snprintf(events, sizeof events, "%s/events.jsonl", res2.run_dir);
    CHECK(!dpd_file_read(events, &ev, NULL, NULL) && strstr(ev, "\"outcome\":\"cancelled\"") &&
              strstr(ev, "\"type\":\"run_started\"") && strstr(ev, "\"seq\":1,"),
          "%s: events.jsonl records the start and the cancellation", what);
    free(ev);
    dpd_train_cfg r;
    memset(&r, 0, sizeof r);
    snprintf(r.resume, sizeof r.resume, "%s", res2.run_dir);
    r.threads = 2; /* another thread count on resume: results do not depend on it */
    watch w2 = {.ordered = 1};
    CHECK(dpd_train(&r, on_event, &w2, &res2, &err) == DPD_OK, "%s resume: %s", what, err.msg);
    size_t n1 = 0, n2 = 0;
    char *a = tensors(res.run_dir, "last.safetensors", &n1), *b = tensors(res2.run_dir, "last.safetensors", &n2);
    CHECK(a && b && n1 == n2 && !memcmp(a, b, n1), "%s: resumed last.safetensors differs from the uninterrupted run", what);
    free(a), free(b);
    char *h1 = history(res.run_dir), *h2 = history(res2.run_dir);
    CHECK(h1 && h2 && !strcmp(h1, h2), "%s: resumed history.csv differs:\n%s\nvs\n%s", what, h1 ? h1 : "", h2 ? h2 : "");
    free(h1), free(h2);
    if (!dpd_file_read(events, &ev, NULL, NULL)) {
        /* seq continues: 1..N without repeats */
        long prev = 0, k = 0;
        int mono = 1;
        for (char *q = strstr(ev, "\"seq\":"); q; q = strstr(q + 1, "\"seq\":"), k++) mono &= atol(q + 6) == prev + 1, prev = atol(q + 6);
        CHECK(mono && k > 4 && strstr(ev, "\"outcome\":\"completed\""), "%s: events.jsonl numbered 1..%ld in order, ending completed", what, k);
        free(ev);
    }
}

/* preview_every: one PREVIEW every that many steps, and the run's files are byte-identical to
 * the run without previews (a delta DPD too: its skip counters are not the previews'). */
static void previews(const char *family, int dpd_pa, const char *what) {
    dpd_train_cfg c, v;
    dpd_train_result r0, r1;
    dpd_error err = {0};
    cfg_quick(&c, check_tmpdir(), family);
    if (dpd_pa) {
        dpd_train_cfg p;
        cfg_quick(&p, check_tmpdir(), "gru");
        p.epochs = 1;
        CHECK(dpd_train(&p, NULL, NULL, &r0, &err) == DPD_OK, "PA: %s", err.msg);
        snprintf(c.pa, sizeof c.pa, "%s", r0.run_dir);
    }
    v = c;
    snprintf(v.out, sizeof v.out, "%s", check_tmpdir());
    v.preview_every = 3;
    watch w0 = {.ordered = 1}, w1 = {.ordered = 1, .every = 3};
    CHECK(dpd_train(&c, on_event, &w0, &r0, &err) == DPD_OK, "%s: %s", what, err.msg);
    CHECK(dpd_train(&v, on_event, &w1, &r1, &err) == DPD_OK, "%s with previews: %s", what, err.msg);
    long want = w1.epochs * w1.nb / 3; /* floor(steps / preview_every) */
    CHECK(w0.previews == 0 && w1.preview_bad == 0 && w1.previews == want && want > 0,
          "%s: %ld previews without, %ld with (%ld bad; want %ld)", what, w0.previews, w1.previews, w1.preview_bad, want);
    size_t n0 = 0, n1 = 0;
    char *a = tensors(r0.run_dir, "last.safetensors", &n0), *b = tensors(r1.run_dir, "last.safetensors", &n1);
    CHECK(a && b && n0 == n1 && !memcmp(a, b, n0), "%s: last.safetensors differs with previews", what);
    char *h0 = history(r0.run_dir), *h1 = history(r1.run_dir);
    CHECK(h0 && h1 && !strcmp(h0, h1), "%s: history.csv differs with previews:\n%s\nvs\n%s", what, h0 ? h0 : "", h1 ? h1 : "");
    free(a), free(b), free(h0), free(h1);
}

static void cancel_early(void) {
    dpd_train_cfg c;
    const char *out = check_tmpdir();
    cfg_quick(&c, out, "gru");
    watch w = {.cancel_epoch = 1, .cancel_progress = 1, .ordered = 1};
    dpd_train_result res;
    dpd_error err = {0};
    CHECK(dpd_train(&c, on_event, &w, &res, &err) == DPD_E_ABORTED && !res.run_dir[0], "cancel in epoch 1: aborted, no run dir");
    char path[4200];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s/train_pa/PA_S_0_M_GRU_H_6_F_20_P_194", out, strrchr(data, '/') + 1);
    CHECK(stat(path, &st) != 0, "a run cancelled before its first epoch leaves no run directory (%s)", path);
    /* refused before it starts: nothing written either */
    cfg_quick(&c, out, "gru");
    c.model.hidden = 100000;
    CHECK(dpd_train(&c, NULL, NULL, &res, &err) == DPD_E_INVAL && !strcmp(err.field, "hidden") &&
              strstr(err.msg, "hidden: 100000 is out of range 1..1024"),
          "an out-of-range field names the field: %s", err.msg);
    CHECK(stat(path, &st) != 0, "a refused run leaves no run directory");
}

static void diverge(void) {
    dpd_train_cfg c;
    cfg_quick(&c, check_tmpdir(), "gru");
    c.lr = 1e30, c.clip = 0, c.lr_schedule = 0;
    dpd_train_result res;
    dpd_error err = {0};
    watch w = {.ordered = 1};
    dpd_status s = dpd_train(&c, on_event, &w, &res, &err);
    CHECK(s == DPD_E_DIVERGED && strstr(err.msg, "diverged") && w.end_status == DPD_E_DIVERGED,
          "a diverging run ends DPD_E_DIVERGED (%d: %s)", s, err.msg);
}

static void ls_resume(void) {
    dpd_train_cfg c;
    cfg_quick(&c, check_tmpdir(), "mp");
    c.ls = 1, c.epochs = 1, c.model.order = 3, c.model.memory = 4;
    dpd_train_result res;
    dpd_error err = {0};
    CHECK(dpd_train(&c, NULL, NULL, &res, &err) == DPD_OK, "%s", err.msg);
    dpd_train_cfg r;
    memset(&r, 0, sizeof r);
    snprintf(r.resume, sizeof r.resume, "%s", res.run_dir);
    r.epochs = 5;
    CHECK(dpd_train(&r, NULL, NULL, &res, &err) == DPD_E_INVAL && strstr(err.msg, "least-squares"),
          "a least-squares run cannot be resumed by gradient training: %s", err.msg);
}


/* ---- misuse of sessions: refused, never a crash ---- */

static void misuse(void) {
    dpd_model_cfg c = {"gru", 5, 1};
    dpd_rng r;
    dpd_rng_seed(&r, 3);
    dpd_model *m = check_model(&c, &r);
    dpd_kv o[] = {{"provider", "cpu"}, {"threads", "2"}, {"max_batch", "8"}, {"max_frame", "20"}};
    dpd_session *a = NULL, *b = NULL, *pa = NULL;
    dpd_error err = {0};
    CHECK(!dpd_session_create(m, o, 4, &a, &err) && !dpd_session_create(m, o, 4, &b, &err) &&
              !dpd_session_create(m, o, 4, &pa, &err),
          "%s", err.msg);
    if (!a || !b || !pa) return;
    CHECK(dpd_session_chain(a, a, &err) == DPD_E_INVAL && strstr(err.msg, "itself"), "self-chain refused: %s", err.msg);
    CHECK(dpd_session_chain(a, pa, &err) == DPD_OK, "%s", err.msg);
    CHECK(dpd_session_chain(b, pa, &err) == DPD_E_INVAL && strstr(err.msg, "already chained"),
          "a second DPD on one PA refused: %s", err.msg);
    CHECK(dpd_session_chain(pa, b, &err) == DPD_E_INVAL, "a PA that is itself chained refused: %s", err.msg);
    float x[2 * 8 * 40], y[2 * 8 * 40], y0[2 * 8 * 40];
    for (int i = 0; i < 2 * 8 * 40; i++) x[i] = (float)(0.3 * dpd_rng_normal(&r));
    CHECK(!dpd_session_forward(pa, x, 8, 40, y0, &err), "PA forward while chained: %s", err.msg);
    /* unchain, re-chain elsewhere, free the DPD first: the PA keeps working with its own threads */
    CHECK(!dpd_session_chain(a, NULL, &err) && !dpd_session_chain(b, pa, &err), "unchain and re-chain: %s", err.msg);
    dpd_session_free(b);
    CHECK(!dpd_session_forward(pa, x, 8, 40, y, &err) && !memcmp(y, y0, sizeof y), "PA after its DPD was freed: %s",
          err.msg);
    /* frames outside the resident split are refused before any step */
    float tx[2 * 100] = {0}, ty[2 * 100] = {0};
    uint32_t frames[2] = {0, 90};
    double losses[1];
    CHECK(!dpd_session_attach(a, DPD_TRAIN, tx, ty, 100, &err), "%s", err.msg);
    CHECK(dpd_session_train_steps(a, frames, 2, 8, 20, 1, 1e-3, 0, 0, losses, &err) == DPD_E_INVAL &&
              strstr(err.msg, "frame 90"),
          "a frame past the split is refused: %s", err.msg);
    CHECK(dpd_session_train_steps(a, frames, 1, 16, 20, 1, 1e-3, 0, 0, losses, &err) == DPD_E_INVAL &&
              !strcmp(err.field, "max_batch"),
          "a batch above max_batch is refused naming it: %s", err.msg);
    CHECK(dpd_session_train_steps(a, frames, 1, 8, 30, 1, 1e-3, 0, 0, losses, &err) == DPD_E_INVAL &&
              !strcmp(err.field, "max_frame"),
          "a frame above max_frame is refused naming it: %s", err.msg);
    CHECK(dpd_session_evaluate(a, DPD_VAL, 20, 4, y, &err) == DPD_E_INVAL, "evaluate with nothing attached refused");
    dpd_kv nul[] = {{NULL, "x"}};
    dpd_session *z = NULL;
    CHECK(dpd_session_create(m, nul, 1, &z, &err) == DPD_E_INVAL && !z, "a NULL option key is refused");
    dpd_kv kn[] = {{"kernels", "nope"}};
    CHECK(dpd_session_create(m, kn, 1, &z, &err) == DPD_E_INVAL && !strcmp(err.field, "kernels"), "kernels field named");
    dpd_session_free(pa); /* PA first, then its former DPD */
    dpd_session_free(a);
    dpd_model_free(m);
}

/* Two evaluations through one session: each gets its own segments, even when the second reuses
 * the first's memory. */
static void two_evals(void) {
    dpd_model_cfg c = {"gru", 5, 1};
    dpd_rng r;
    dpd_rng_seed(&r, 5);
    dpd_model *m = check_model(&c, &r);
    dpd_dataset ds, ds2;
    dpd_error err = {0};
    const char *d2 = check_tmpdir();
    char dir2[4200];
    snprintf(dir2, sizeof dir2, "%s/other", d2);
    dpd_synth_cfg sc;
    dpd_synth_defaults(&sc);
    sc.length = 5 * 2560, sc.seed = 99;
    if (dpd_synth_write(&sc, dir2, &err) || dpd_dataset_load(data, 6, 0, &ds, &err) ||
        dpd_dataset_load(dir2, 6, 0, &ds2, &err)) {
        CHECK(0, "%s", err.msg);
        return;
    }
    dpd_kv o[] = {{"provider", "cpu"}, {"threads", "1"}};
    dpd_session *s = NULL, *fresh = NULL;
    dpd_eval e = {0}, f = {0};
    CHECK(!dpd_session_create(m, o, 2, &s, &err) && !dpd_session_create(m, o, 2, &fresh, &err), "%s", err.msg);
    CHECK(!dpd_eval_prepare(&e, &ds, DPD_VAL, 0, &err) && !dpd_eval_run(&e, s, 64, &ds.spec, 0, &err), "%s", err.msg);
    dpd_eval_free(&e); /* the next prepare may well get the same memory */
    double want = 0;
    CHECK(!dpd_eval_prepare(&f, &ds2, DPD_VAL, 0, &err) && !dpd_eval_run(&f, fresh, 64, &ds2.spec, 0, &err), "%s", err.msg);
    want = f.loss;
    dpd_eval_free(&f);
    CHECK(!dpd_eval_prepare(&e, &ds2, DPD_VAL, 0, &err) && !dpd_eval_run(&e, s, 64, &ds2.spec, 0, &err), "%s", err.msg);
    CHECK(e.loss == want, "a session reused for another dataset's segments evaluates them (%.9g, fresh %.9g)", e.loss, want);
    dpd_eval_free(&e);
    dpd_session_free(s), dpd_session_free(fresh);
    dpd_dataset_free(&ds), dpd_dataset_free(&ds2);
    dpd_model_free(m);
}

/* Sets __metadata__[key] = value (NULL: removes it) in a safetensors file, keeping the tensors. */
static int set_meta(const char *path, const char *key, const char *value) {
    char *buf;
    size_t len;
    dpd_error err;
    if (dpd_file_read(path, &buf, &len, &err) || len < 8) return 0;
    uint64_t hl;
    memcpy(&hl, buf, 8);
    json_t *h = json_loadb(buf + 8, hl, 0, NULL), *md = json_object_get(h, "__metadata__");
    if (value) json_object_set_new(md, key, json_string(value));
    else json_object_del(md, key);
    char *text = json_dumps(h, JSON_COMPACT);
    size_t tl = strlen(text), pad = (8 - tl % 8) % 8, nl = tl + pad, dl = len - 8 - hl;
    char *out = malloc(8 + nl + dl);
    uint64_t nh = nl;
    memcpy(out, &nh, 8), memcpy(out + 8, text, tl), memset(out + 8 + tl, ' ', pad), memcpy(out + 8 + nl, buf + 8 + hl, dl);
    int ok = !dpd_file_write(path, out, 8 + nl + dl, &err);
    free(buf), free(text), free(out), json_decref(h);
    return ok;
}

/* A resume refuses last.safetensors whose state is malformed, out of range or inconsistent,
 * naming the key, and never crashes; the untouched file resumes. */
static void bad_resume(void) {
    dpd_train_cfg c;
    cfg_quick(&c, check_tmpdir(), "gru");
    c.epochs = 2;
    dpd_train_result res;
    dpd_error err = {0};
    watch w = {.cancel_epoch = 2, .cancel_progress = 1, .ordered = 1}; /* a mid-epoch state to corrupt */
    CHECK(dpd_train(&c, on_event, &w, &res, &err) == DPD_E_ABORTED, "%s", err.msg);
    char path[4200];
    snprintf(path, sizeof path, "%s/last.safetensors", res.run_dir);
    char *orig;
    size_t olen;
    if (dpd_file_read(path, &orig, &olen, &err)) return;
    static const struct { const char *key, *value, *named; } cases[] = {
        {"step", "-3", "'step'"}, {"step", " 5", "'step'"}, {"step", "9223372036854775807", "'step'"},
        {"step", "12", "'step'"}, {"epoch", "abc", "'epoch'"}, {"best_epoch", "7", "'best_epoch'"},
        {"lr", "1e308", "'lr'"}, {"elapsed", "1e308", "'elapsed'"}, {"plateau_bad", "2147483647", "'plateau_bad'"},
        {"plateau_best", "nan", "'plateau_best'"},
        {"rng", "0000000000000000000000000000000000000000000000000000000000000000", "'rng'"},
        {"run_id", "../../x", "'run_id'"}, {"epoch_step", "0", "'epoch_step'"}, {"epoch_loss", "-1", "'epoch_loss'"},
        {"epoch_zeros", "1,2,3,4x", "'epoch_zeros'"}, {"epoch_zeros", "99999999999999999999,1,2,3", "'epoch_zeros'"},
        {"epoch_rng", NULL, "'epoch_rng'"}, {"val_NMSE", "abc", "'val_NMSE'"}, {"val_NMSE", "nan", "'val_NMSE'"},
        {"test_EVM_status", "bogus", "'test_EVM_status'"}};
    dpd_train_cfg r;
    memset(&r, 0, sizeof r);
    snprintf(r.resume, sizeof r.resume, "%s", res.run_dir);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        dpd_file_write(path, orig, olen, &err);
        if (!set_meta(path, cases[i].key, cases[i].value)) continue;
        dpd_train_result rr;
        dpd_status st = dpd_train(&r, NULL, NULL, &rr, &err);
        CHECK(st == DPD_E_FORMAT && strstr(err.msg, cases[i].named), "resume with %s = '%s' is refused naming it (%d: %s)",
              cases[i].key, cases[i].value ? cases[i].value : "(missing)", st, err.msg);
    }
    dpd_file_write(path, orig, olen, &err);
    free(orig);
    dpd_train_result rr;
    CHECK(dpd_train(&r, NULL, NULL, &rr, &err) == DPD_OK, "the untouched state resumes: %s", err.msg);
}

/* A PA checkpoint's run_id comes from a file: it never decides where a DPD run writes. */
static void hostile_pa_id(void) {
    dpd_train_cfg p, c;
    const char *out = check_tmpdir();
    cfg_quick(&p, check_tmpdir(), "gru");
    p.epochs = 1;
    dpd_train_result res;
    dpd_error err = {0};
    if (dpd_train(&p, NULL, NULL, &res, &err)) {
        CHECK(0, "%s", err.msg);
        return;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/best.safetensors", res.run_dir);
    CHECK(set_meta(path, "run_id", "../../../../escaped"), "rewrote the PA's run_id");
    cfg_quick(&c, out, "gru");
    c.epochs = 1;
    snprintf(c.pa, sizeof c.pa, "%s", path);
    CHECK(dpd_train(&c, NULL, NULL, &res, &err) == DPD_OK, "%s", err.msg);
    char real_out[PATH_MAX], real_dir[PATH_MAX];
    CHECK(realpath(out, real_out) && realpath(res.run_dir, real_dir) && !strncmp(real_dir, real_out, strlen(real_out)),
          "a DPD run through a PA whose run_id is '../../../../escaped' stays inside its out directory (%s)", res.run_dir);
}

/* The small JSON files go through the bounded reader: a FIFO as a run's config.json or as the
 * settings file is refused at once, never waited on. */
static void json_fifo(void) {
    const char *d = check_tmpdir();
    char cfg[4200], run[4200];
    snprintf(run, sizeof run, "%s/run", d);
    snprintf(cfg, sizeof cfg, "%s/config.json", run);
    mkdir(run, 0777);
    alarm(20); /* a hang fails the test program instead of the suite */
    CHECK(mkfifo(cfg, 0600) == 0, "mkfifo");
    dpd_train_cfg r;
    memset(&r, 0, sizeof r);
    snprintf(r.resume, sizeof r.resume, "%s", run);
    dpd_train_result res;
    dpd_error err = {0};
    CHECK(dpd_train(&r, NULL, NULL, &res, &err) != DPD_OK && strstr(err.msg, "not a regular file"),
          "a FIFO as config.json is refused: %s", err.msg);
    char xdg[4200], dir[4200], set[4200];
    snprintf(xdg, sizeof xdg, "%s/xdg", d);
    snprintf(dir, sizeof dir, "%s/dpd", xdg);
    snprintf(set, sizeof set, "%s/config.json", dir);
    mkdir(xdg, 0777), mkdir(dir, 0777);
    CHECK(mkfifo(set, 0600) == 0, "mkfifo");
    char *old = getenv("XDG_CONFIG_HOME") ? strdup(getenv("XDG_CONFIG_HOME")) : NULL;
    setenv("XDG_CONFIG_HOME", xdg, 1);
    dpd_settings st;
    CHECK(dpd_settings_load(&st, &err) != DPD_OK && strstr(err.msg, "not a regular file"),
          "a FIFO as the settings file is refused: %s", err.msg);
    if (old) setenv("XDG_CONFIG_HOME", old, 1), free(old);
    else unsetenv("XDG_CONFIG_HOME");
    alarm(0);
}

/* A DPD run killed before its first checkpoint (config.json alone in its directory) resumes from
 * the start, through the PA its config.json names, to the uninterrupted result. */
static void resume_from_nothing(void) {
    dpd_train_cfg p, c;
    cfg_quick(&p, check_tmpdir(), "gru");
    p.epochs = 1;
    dpd_train_result pa, res, res2;
    dpd_error err = {0};
    if (dpd_train(&p, NULL, NULL, &pa, &err)) {
        CHECK(0, "%s", err.msg);
        return;
    }
    cfg_quick(&c, check_tmpdir(), "gru");
    c.epochs = 2;
    snprintf(c.pa, sizeof c.pa, "%s", pa.run_dir);
    CHECK(dpd_train(&c, NULL, NULL, &res, &err) == DPD_OK, "%s", err.msg);
    size_t n1 = 0, n2 = 0;
    char *a = tensors(res.run_dir, "last.safetensors", &n1);
    static const char *const files[] = {"last.safetensors", "pa.safetensors", "best.safetensors", "best.csv",
                                        "history.csv", "events.jsonl"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char f[4300];
        snprintf(f, sizeof f, "%s/%s", res.run_dir, files[i]);
        unlink(f);
    }
    dpd_train_cfg r;
    memset(&r, 0, sizeof r);
    snprintf(r.resume, sizeof r.resume, "%s", res.run_dir);
    CHECK(dpd_train(&r, NULL, NULL, &res2, &err) == DPD_OK, "resume of a config.json-only DPD run: %s", err.msg);
    char *b = tensors(res2.run_dir, "last.safetensors", &n2);
    CHECK(a && b && n1 == n2 && !memcmp(a, b, n1), "a DPD run resumed from nothing equals the uninterrupted run");
    free(a), free(b);
}

int main(void) {
    const char *dir = check_tmpdir();
    static char d[4200];
    snprintf(d, sizeof d, "%s/synth", dir);
    dpd_synth_cfg sc;
    dpd_synth_defaults(&sc);
    sc.length = 5 * 2560, sc.seed = 4;
    dpd_error err;
    if (dpd_synth_write(&sc, d, &err)) {
        fprintf(stderr, "FAIL synth: %s\n", err.msg);
        return 1;
    }
    data = d;
    options();
    side_by_side("gru");
    side_by_side("lstm");
    side_by_side("tres_gru");
    concurrent("gru");
    concurrent("lstm");
    cancel_resume("gru", 0, 2, 1, "PA GRU, cancelled mid-epoch 2");
    cancel_resume("gru", 0, 2, 2, "PA GRU, cancelled in the last chunk of epoch 2");
    cancel_resume("gru", 0, 1, 0, "PA GRU, cancelled after epoch 1");
    cancel_resume("tres_deltagru", 1, 2, 1, "DPD TRes-DeltaGRU, cancelled mid-epoch 2");
    cancel_resume("rvtdcnn", 1, 2, 0, "DPD RVTDCNN, cancelled after epoch 2");
    previews("gru", 0, "PA GRU, a preview every 3 steps");
    previews("tres_deltagru", 1, "DPD TRes-DeltaGRU, a preview every 3 steps");
    cancel_early();
    diverge();
    ls_resume();
    misuse();
    two_evals();
    bad_resume();
    hostile_pa_id();
    json_fifo();
    resume_from_nothing();
    return check_done("session");
}
