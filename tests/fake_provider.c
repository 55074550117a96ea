/* fake_provider: a fault-injecting provider for the tests (never installed by default). It
 * calls itself "cuda" (DPD_FAKE_NAME overrides, read at init), computes with dpd's CPU provider
 * (every slot, v1 and v2, forwards to the CPU provider's), and misbehaves as the environment
 * asks (read at every call, so the helper process sees the same mode):
 *   DPD_FAKE=ok | abi (init refuses ABI versions 2 and 1: it serves 999) |
 *            v1 (init refuses 2 and serves 1: only the v1 slots) | nodevice (score 0) |
 *            crash (SIGSEGV in a computing call) | hang (a computing call never returns) |
 *            wrong (forward and evaluate outputs off by 0.01) |
 *            wrongtrain (train_steps' losses 1 % high) | nantrain (its AdamW moments NaN) |
 *            nomem:N (forward and evaluate batches above N fail for memory) |
 *            devfail (a device failure in every computing call) |
 *            nochain (no training through a PA model: forward_keep, backward, clip, chain NULL) |
 *            gruonly (supports GRU models only)
 *   DPD_FAKE_SCORE=K   the score (default 10, cpu's rank DPD_CPU_RANK: auto takes a pack at or above it).
 *   DPD_FAKE_LOG=FILE  appends the batch size of every forward and evaluate call.
 *   DPD_FAKE_LOADS=FILE appends "load" when the library is loaded and "init NAME VERSION" at
 *                      every init call (tests count how often the registry loads a pack).
 * The computing calls are forward, evaluate, train_step, forward_keep and train_steps; get_state
 * only answers nantrain. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dpd/provider.h"

static const char *mode(void) { return getenv("DPD_FAKE") ? getenv("DPD_FAKE") : "ok"; }

static const dpd_provider_i *cpu(void) { return dpd_provider_cpu()->i; }

/* Appends one line to $DPD_FAKE_LOADS, when set. */
static void loads(const char *line) {
    const char *path = getenv("DPD_FAKE_LOADS");
    FILE *f = path ? fopen(path, "a") : NULL;
    if (f) fprintf(f, "%s\n", line), fclose(f);
}

__attribute__((constructor)) static void loaded(void) { loads("load"); }

/* What the fake keeps per CPU session: resident split sizes (for `wrong` in evaluate) and, for a
 * v1 session opened through the CPU provider's session_open, the model whose tensor table it
 * was given. Guarded by a mutex: distinct sessions may be used from distinct threads. */
typedef struct side {
    struct side *next;
    void *s;
    size_t n[DPD_NSPLIT];
    dpd_model *m;
} side;

static side *sides;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static side *side_of(void *s, int create) {
    pthread_mutex_lock(&lock);
    side *e = sides;
    while (e && e->s != s) e = e->next;
    if (!e && create && (e = calloc(1, sizeof *e))) e->s = s, e->next = sides, sides = e;
    pthread_mutex_unlock(&lock);
    return e;
}

/* The faults of a computing call over B sequences; DPD_OK when the call may go on. */
static dpd_status fault(int B, int memory, char *err, size_t nerr) {
    const char *m = mode(), *log = getenv("DPD_FAKE_LOG");
    if (log && memory) {
        FILE *f = fopen(log, "a");
        if (f) fprintf(f, "%d\n", B), fclose(f);
    }
    if (!strcmp(m, "crash")) raise(SIGSEGV);
    while (!strcmp(m, "hang")) pause();
    if (!strcmp(m, "devfail")) return snprintf(err, nerr, "fake: device lost"), DPD_E_DEVICE;
    if (memory && !strncmp(m, "nomem:", 6) && B > atoi(m + 6))
        return snprintf(err, nerr, "fake: out of memory at batch %d", B), DPD_E_NOMEM;
    return DPD_OK;
}

static void skew(float *y, size_t n) {
    if (!strcmp(mode(), "wrong"))
        for (size_t i = 0; i < n; i++) y[i] += 0.01f;
}

static int device_count(void *ctx) { return 1; }

static dpd_status device_info(void *ctx, int d, dpd_device_info *out) {
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "fake GPU (%s)", mode());
    snprintf(out->arch, sizeof out->arch, "sm_00");
    out->memory = 1ull << 30;
    return DPD_OK;
}

static int supports(void *ctx, const dpd_model_cfg *m) {
    return (strcmp(mode(), "gruonly") || !strcmp(m->family, "gru")) && cpu()->supports(NULL, m);
}

/* v1: through the CPU provider's session_create, or its session_open with a tensor table of a
 * model built here and kept until the session is freed. */
static dpd_status session_create(void *ctx, int device, const dpd_model_cfg *m, int max_batch, int T, void **s,
                                 char *err, size_t nerr) {
    if (cpu()->session_create) return cpu()->session_create(NULL, device, m, max_batch, T, s, err, nerr);
    dpd_model *model;
    dpd_error e = {0};
    if (dpd_model_create(m, &model, &e)) return snprintf(err, nerr, "%s", e.msg), e.status;
    int nt = dpd_model_ntensors(model);
    dpd_tensor *t = calloc(nt > 0 ? (size_t)nt : 1, sizeof *t);
    if (!t) return dpd_model_free(model), snprintf(err, nerr, "fake: out of memory"), DPD_E_NOMEM;
    for (int k = 0; k < nt; k++) t[k] = *dpd_model_tensor(model, k);
    dpd_status st = cpu()->session_open(NULL, device, m, t, nt, max_batch, T, NULL, 0, s, err, nerr);
    free(t);
    side *sd = st ? NULL : side_of(*s, 1);
    if (sd) sd->m = model;
    else dpd_model_free(model);
    return st;
}

static void session_free(void *s) {
    if (!s) return;
    pthread_mutex_lock(&lock);
    side **pp = &sides;
    while (*pp && (*pp)->s != s) pp = &(*pp)->next;
    side *e = *pp;
    if (e) *pp = e->next;
    pthread_mutex_unlock(&lock);
    if (e) dpd_model_free(e->m), free(e);
    cpu()->session_free(s);
}

static dpd_status forward(void *s, const float *x, int B, int T, float *y, char *err, size_t nerr) {
    dpd_status st = fault(B, 1, err, nerr);
    if (!st) st = cpu()->forward(s, x, B, T, y, err, nerr);
    if (!st) skew(y, (size_t)B * T * 2);
    return st;
}

static dpd_status train_step(void *s, const float *x, const float *t, int B, int T, double max_norm, double *loss,
                             char *err, size_t nerr) {
    dpd_status st = fault(B, 0, err, nerr);
    return st ? st : cpu()->train_step(s, x, t, B, T, max_norm, loss, err, nerr);
}

static dpd_status forward_keep(void *s, const float *x, int B, int T, float *y, char *err, size_t nerr) {
    dpd_status st = fault(B, 0, err, nerr);
    return st ? st : cpu()->forward_keep(s, x, B, T, y, err, nerr);
}

/* ---- version 2 ---- */

static dpd_status session_open(void *ctx, int device, const dpd_model_cfg *model, const dpd_tensor *t, int nt,
                               int max_batch, int T, const dpd_kv *opts, int nopts, void **s, char *err, size_t nerr) {
    return cpu()->session_open(NULL, device, model, t, nt, max_batch, T, opts, nopts, s, err, nerr);
}

static dpd_status attach(void *s, int split, const float *x, const float *y, size_t n, char *err, size_t nerr) {
    dpd_status st = cpu()->attach(s, split, x, y, n, err, nerr);
    side *sd = st || split < 0 || split >= DPD_NSPLIT ? NULL : side_of(s, 1);
    if (sd) sd->n[split] = n;
    return st;
}

static dpd_status train_steps(void *s, const uint32_t *frames, size_t nframes, int B, int L, int S, double lr,
                              double wd, double max_norm, double *losses, char *err, size_t nerr) {
    dpd_status st = fault(B, 0, err, nerr);
    if (!st) st = cpu()->train_steps(s, frames, nframes, B, L, S, lr, wd, max_norm, losses, err, nerr);
    for (size_t i = 0; !st && !strcmp(mode(), "wrongtrain") && i < (nframes + B - 1) / B; i++) losses[i] *= 1.01;
    return st;
}

static dpd_status evaluate(void *s, int split, int N, int batch, float *pred, char *err, size_t nerr) {
    dpd_status st = fault(batch, 1, err, nerr);
    if (!st) st = cpu()->evaluate(s, split, N, batch, pred, err, nerr);
    side *sd = st || split < 0 || split >= DPD_NSPLIT ? NULL : side_of(s, 0);
    if (sd) skew(pred, sd->n[split] / (size_t)N * (size_t)N * 2);
    return st;
}

static dpd_provider_i fake_i;
/* get_state as the cpu's, but for nantrain: the first moment NaN (a device whose step went wrong). */
static dpd_status get_state(void *s, float *m, float *v, long *step, char *err, size_t nerr) {
    dpd_status st = cpu()->get_state(s, m, v, step, err, nerr);
    if (!st && !strcmp(mode(), "nantrain")) m[0] = __builtin_nanf("");
    return st;
}

static char fake_name[32];

__attribute__((visibility("default"))) dpd_status dpd_provider_init(uint32_t api_version, dpd_provider *out, char *err,
                                                                    size_t nerr) {
    const char *m = mode(), *name = getenv("DPD_FAKE_NAME");
    snprintf(fake_name, sizeof fake_name, "%s", name && name[0] ? name : "cuda");
    char line[64];
    snprintf(line, sizeof line, "init %s %u", fake_name, api_version);
    loads(line);
    int v1 = !strcmp(m, "v1"), serves = !strcmp(m, "abi") ? 999 : v1 ? 1 : DPD_PROVIDER_API;
    fake_i = *cpu();
    fake_i.api_version = (uint32_t)serves;
    fake_i.name = fake_name;
    fake_i.device_count = device_count, fake_i.device_info = device_info, fake_i.supports = supports;
    fake_i.session_create = session_create, fake_i.session_free = session_free, fake_i.forward = forward;
    fake_i.train_step = cpu()->train_step ? train_step : NULL;
    fake_i.forward_keep = cpu()->forward_keep ? forward_keep : NULL;
    fake_i.session_open = cpu()->session_open ? session_open : NULL;
    fake_i.attach = cpu()->attach ? attach : NULL;
    fake_i.train_steps = cpu()->train_steps ? train_steps : NULL;
    fake_i.evaluate = cpu()->evaluate ? evaluate : NULL;
    fake_i.get_state = cpu()->get_state ? get_state : NULL;
    if (!strcmp(m, "nochain")) fake_i.forward_keep = NULL, fake_i.backward = NULL, fake_i.clip = NULL, fake_i.chain = NULL;
    if (v1) fake_i.session_open = NULL, fake_i.attach = NULL, fake_i.train_steps = NULL, fake_i.evaluate = NULL,
            fake_i.chain = NULL;
    if (api_version != (uint32_t)serves) {
        /* the table says which version it serves; dpd reads it to name both versions */
        out->i = &fake_i, out->ctx = NULL;
        snprintf(err, nerr, "fake: serves provider ABI version %d, not %u", serves, api_version);
        return DPD_E_UNSUPPORTED;
    }
    out->i = &fake_i, out->ctx = NULL;
    return DPD_OK;
}

__attribute__((visibility("default"))) int dpd_provider_score(char *why, size_t nwhy) {
    if (!strcmp(mode(), "nodevice")) return snprintf(why, nwhy, "fake: no device"), 0;
    const char *k = getenv("DPD_FAKE_SCORE");
    return k && atoi(k) > 0 ? atoi(k) : 10;
}
