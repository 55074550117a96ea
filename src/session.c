/* session: see session.h and dpd.h. */
#include "session.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu.h"
#include "kern/kern.h"
#include "model.h"
#include "optim.h"
#include "provider.h"
#include "settings.h"
#include "status.h"

/* Host copies of the resident splits, for providers without the v2 slots. */
typedef struct hsplit {
    float *x, *y;
    size_t n;
} hsplit;

struct dpd_session {
    const dpd_provider *p;
    void *s;                /* the provider's session */
    dpd_model_cfg cfg;
    dpd_tensor t[DPD_MAX_TENSORS];
    int nt, device;
    size_t np;
    int max_batch, T;       /* the reservation: training steps are bounded by it */
    int batch;              /* the working batch of inference and evaluation (halved on memory failures) */
    int threads;
    char kernels[16];
    char reason[600];
    dpd_session *pa;        /* chained frozen PA */
    dpd_session *by;        /* the DPD session chained to this one */
    size_t attached_n[DPD_NSPLIT];          /* samples resident per split (0: none) */
    unsigned long long attached_id[DPD_NSPLIT]; /* who attached them (dpd_eval's id; 0: unknown) */
    hsplit h[DPD_NSPLIT];   /* v1 emulation only */
    float *buf;             /* v1 emulation: batch and cascade buffers */
    size_t cap;
};

static const dpd_provider_i *I(const dpd_session *s) { return s->p->i; }

dpd_status dpd_session_device_failed(const char *name, const char *msg, dpd_error *err) {
    dpd_settings_fall_back("%s failed during a run: %s", name, msg);
    return dpd_fail(err, DPD_E_DEVICE, "%s failed during the run: %s. The provider preference is now cpu for later "
                    "work; this run was not repeated", name, msg);
}

/* A provider's failure as the caller's status: device failures move the preference to cpu. */
static dpd_status pfail(const dpd_session *s, dpd_status st, const char *msg, dpd_error *err) {
    if (st == DPD_E_DEVICE) return dpd_session_device_failed(I(s)->name, msg, err);
    return dpd_fail(err, st, "%s: %s", I(s)->name, msg);
}

/* ---- options ---- */

static const char *const KEYS[] = {"provider", "device", "max_batch", "max_frame", "threads", "kernels"};

static int int_opt(const char *key, const char *v, int lo, int hi, int *out, dpd_error *err) {
    char *end;
    long x = strtol(v, &end, 10);
    if (!*v || *end || x < lo || x > hi) {
        dpd_fail(err, DPD_E_INVAL, "%s: '%s' is out of range %d..%d", key, v, lo, hi);
        if (err) snprintf(err->field, sizeof err->field, "%s", key);
        return 0;
    }
    *out = (int)x;
    return 1;
}

typedef struct sopts {
    const char *provider;
    int device, max_batch, max_frame, threads;
    const char *kernels;
} sopts;

static dpd_status parse(const dpd_kv *opts, int nopts, sopts *o, dpd_error *err) {
    *o = (sopts){"", 0, 64, 0, 0, "auto"};
    for (int i = 0; i < nopts; i++) {
        const char *k = opts[i].key ? opts[i].key : "", *v = opts[i].value ? opts[i].value : "";
        size_t j = 0;
        while (j < sizeof KEYS / sizeof *KEYS && strcmp(k, KEYS[j])) j++;
        if (j == sizeof KEYS / sizeof *KEYS) {
            dpd_fail(err, DPD_E_INVAL, "%s: not a session option (provider, device, max_batch, max_frame, threads, kernels)", k);
            if (err) snprintf(err->field, sizeof err->field, "%s", k);
            return DPD_E_INVAL;
        }
        if ((j == 1 && !int_opt(k, v, 0, 64, &o->device, err)) || (j == 2 && !int_opt(k, v, 1, 1 << 20, &o->max_batch, err)) ||
            (j == 3 && !int_opt(k, v, 0, 1 << 30, &o->max_frame, err)) || (j == 4 && !int_opt(k, v, 0, 1024, &o->threads, err)))
            return DPD_E_INVAL;
        if (j == 0) o->provider = v;
        if (j == 5) o->kernels = v[0] ? v : "auto";
    }
    if (!o->threads) { /* the settings' cpu_level */
        dpd_settings st;
        dpd_status s = dpd_settings_load(&st, err);
        if (s) return s;
        o->threads = dpd_cpu_level_threads(st.cpu_level);
    }
    return DPD_OK;
}

/* ---- creation ---- */

/* Opens the provider's session (into s->s) at the reserved batch, halving it while it does not
 * fit; s->s is left untouched on failure. */
static dpd_status start(dpd_session *s, const float *params, const sopts *o, dpd_error *err) {
    char msg[512] = "", th[16];
    snprintf(th, sizeof th, "%d", o->threads);
    const dpd_kv popts[2] = {{"threads", th}, {"kernels", o->kernels}};
    dpd_status st;
    void *ps = NULL;
    for (;;) {
        msg[0] = 0;
        if (I(s)->session_open)
            st = I(s)->session_open(s->p->ctx, s->device, &s->cfg, s->t, s->nt, s->max_batch, s->T, popts, 2, &ps,
                                    msg, sizeof msg);
        else
            st = I(s)->session_create(s->p->ctx, s->device, &s->cfg, s->max_batch, s->T, &ps, msg, sizeof msg);
        if (st != DPD_E_NOMEM || s->max_batch == 1) break;
        s->max_batch /= 2;
    }
    if (s->batch > s->max_batch) s->batch = s->max_batch;
    if (!st && (st = I(s)->upload(ps, params, msg, sizeof msg))) I(s)->session_free(ps), ps = NULL;
    if (st) return pfail(s, st, msg, err);
    s->s = ps;
    return DPD_OK;
}

/* Why provider p cannot serve this session's needs (in why), or NULL. */
static const char *cannot(const dpd_provider *p, const dpd_model_cfg *c, int need, const dpd_model_cfg *frozen,
                          char *why, size_t n) {
    const dpd_provider_i *i = p->i;
    snprintf(why, n, "%s-%d (%d layer%s) is not supported%s", c->family, c->hidden, c->layers, c->layers == 1 ? "" : "s",
             need & DPD_NEED_TRAIN ? " for training" : "");
    if (!i->supports(p->ctx, c)) return why;
    if ((need & DPD_NEED_TRAIN) && !i->train_steps && (!i->train_step || !i->optimizer_step)) return why;
    if ((need & DPD_NEED_CHAIN) && ((!i->chain && (!i->forward_keep || !i->backward || !i->clip)) ||
                                    (frozen && !i->supports(p->ctx, frozen))))
        return "training through a PA model is not supported";
    return NULL;
}

dpd_status dpd_session_open(const dpd_model *m, const dpd_kv *opts, int nopts, int need, const dpd_model_cfg *frozen,
                            dpd_session **out, dpd_error *err) {
    *out = NULL;
    sopts o;
    dpd_status st = parse(opts, nopts, &o, err);
    if (st) return st;
    dpd_session *s = calloc(1, sizeof *s);
    if (!s) return dpd_fail(err, DPD_E_NOMEM, "out of memory");
    s->cfg = *dpd_model_config(m), s->np = dpd_model_nparams(m), s->nt = dpd_model_ntensors(m);
    for (int i = 0; i < s->nt; i++) s->t[i] = *dpd_model_tensor(m, i);
    s->device = o.device, s->max_batch = s->batch = o.max_batch, s->T = o.max_frame, s->threads = o.threads;
    char reason[512];
    if ((st = dpd_provider_select(o.provider, &s->p, reason, sizeof reason, err))) {
        if (err && !err->field[0] && st != DPD_E_FORMAT && st != DPD_E_IO) /* a settings file at fault is no option */
            snprintf(err->field, sizeof err->field, "provider");
        goto fail;
    }
    char whybuf[160];
    const char *why = cannot(s->p, &s->cfg, need, frozen, whybuf, sizeof whybuf);
    if (why && (st = dpd_provider_demote(o.provider, &s->p, why, reason, sizeof reason, err))) goto fail;
    snprintf(s->reason, sizeof s->reason, "%s", reason);
    if (!s->T && !I(s)->session_open) s->T = 4096; /* a v1 provider reserves up front */
    if (strcmp(I(s)->name, "cpu")) {
        dpd_device_info d;
        dpd_settings set;
        if (!I(s)->device_info(s->p->ctx, s->device, &d) && !dpd_settings_load(&set, NULL)) {
            int bound = dpd_batch_bound(set.gpu_memory, d.memory, &s->cfg, s->T);
            if (bound > 0 && bound < s->max_batch) s->max_batch = s->batch = bound;
        }
        s->threads = 0;
    } else {
        const kern_ops *k;
        if ((st = kern_select("kernels", o.kernels, &k, err))) goto fail;
        snprintf(s->kernels, sizeof s->kernels, "%s", kern_name(k));
    }
    if ((st = start(s, dpd_model_cparams(m), &o, err))) goto fail;
    *out = s;
    return DPD_OK;
fail:
    dpd_session_free(s);
    return st;
}

dpd_status dpd_session_create(const dpd_model *m, const dpd_kv *opts, int nopts, dpd_session **out, dpd_error *err) {
    return dpd_session_open(m, opts, nopts, 0, NULL, out, err);
}

void dpd_session_free(dpd_session *s) {
    if (!s) return;
    if (s->pa) s->pa->by = NULL; /* the provider hands the PA back its own resources */
    if (s->by) { /* freeing a PA first unchains its DPD session */
        char msg[256];
        if (I(s)->chain) (void)I(s)->chain(s->by->s, NULL, msg, sizeof msg);
        s->by->pa = NULL;
    }
    if (s->s) I(s)->session_free(s->s);
    for (int k = 0; k < DPD_NSPLIT; k++) free(s->h[k].x), free(s->h[k].y);
    free(s->buf);
    free(s);
}

const char *dpd_session_provider(const dpd_session *s) { return I(s)->name; }
const char *dpd_session_reason(const dpd_session *s) { return s->reason; }
const char *dpd_session_kernels(const dpd_session *s) { return s->kernels; }
int dpd_session_threads(const dpd_session *s) { return s->threads; }
int dpd_session_batch(const dpd_session *s) { return s->batch; }

/* Multiply-adds a sample of the forward's weight products, or 0 where that is not defined: in
 * these families every tensor of two or more dimensions is a matrix or a convolution whose weights
 * each enter one multiply-add a sample (biases are 1-D). Not so for rvtdcnn (its convolution
 * slides over a feature image of each sample) nor the delta families (the work they skip depends
 * on the data); the rest are not derived yet (docs/performance.md). */
static double macs(const dpd_session *s) {
    static const char *const dense[] = {"gru", "lstm", "dgru", "tres_gru"};
    size_t f = 0;
    while (f < sizeof dense / sizeof *dense && strcmp(s->cfg.family, dense[f])) f++;
    if (f == sizeof dense / sizeof *dense) return 0;
    double m = 0;
    for (int i = 0; i < s->nt; i++)
        if (s->t[i].ndim >= 2) m += (double)s->t[i].numel;
    return m;
}

double dpd_session_step_flops(const dpd_session *s, int B, int T) {
    double m = macs(s), bt = (double)B * T;
    if (!s->pa) return 6 * bt * m;
    double mp = macs(s->pa);
    return m && mp ? bt * (6 * m + 4 * mp) : 0;
}

dpd_status dpd_cpu_peak_gflops(const char *kernels, double *gflops, dpd_error *err) {
    const kern_ops *k;
    dpd_status st = kern_select("kernels", kernels ? kernels : "auto", &k, err);
    if (st) return st;
    *gflops = (k ? k : &kern_sse)->peak(); /* ref: the scalar reference is compiled for sse's baseline ISA */
    return DPD_OK;
}

int dpd_session_resident(const dpd_session *s, int k, unsigned long long id, size_t n) {
    return id && k >= 0 && k < DPD_NSPLIT && s->attached_id[k] == id && s->attached_n[k] == n;
}

void dpd_session_share(dpd_session *s, dpd_model *m) {
    if (s->p == dpd_provider_cpu() && s->s && dpd_model_nparams(m) == s->np) dpd_cpu_share(s->s, dpd_model_params(m));
}

static dpd_status same_cfg(const dpd_session *s, const dpd_model *m, dpd_error *err) {
    if (dpd_model_nparams(m) != s->np || strcmp(dpd_model_config(m)->family, s->cfg.family))
        return dpd_fail(err, DPD_E_INVAL, "the model (%s, %zu parameters) is not the session's (%s, %zu)",
                        dpd_model_config(m)->family, dpd_model_nparams(m), s->cfg.family, s->np);
    return DPD_OK;
}

dpd_status dpd_session_upload(dpd_session *s, const dpd_model *m, dpd_error *err) {
    char msg[512] = "";
    dpd_status st = same_cfg(s, m, err);
    if (!st && (st = I(s)->upload(s->s, dpd_model_cparams(m), msg, sizeof msg))) return pfail(s, st, msg, err);
    return st;
}

dpd_status dpd_session_download(dpd_session *s, dpd_model *m, dpd_error *err) {
    char msg[512] = "";
    dpd_status st = same_cfg(s, m, err);
    if (!st && (st = I(s)->download(s->s, dpd_model_params(m), msg, sizeof msg))) return pfail(s, st, msg, err);
    return st;
}

/* Re-reserves a provider session bounded by its reservation (one without session_open) for
 * sequences of T samples, keeping weights and moments; the resident splits of such a provider
 * live on the host (s->h) and stay. On failure the old session stays as it was. */
static dpd_status regrow(dpd_session *s, int T, dpd_error *err) {
    char msg[512] = "";
    float *p = malloc(3 * s->np * sizeof *p);
    long step = 0;
    if (!p) return dpd_fail(err, DPD_E_NOMEM, "out of memory");
    dpd_status st = I(s)->download(s->s, p, msg, sizeof msg);
    int moments = !st && I(s)->get_state && !I(s)->get_state(s->s, p + s->np, p + 2 * s->np, &step, msg, sizeof msg);
    if (st) {
        free(p);
        return pfail(s, st, msg, err);
    }
    sopts o = {"", s->device, s->max_batch, T, s->threads ? s->threads : 1, s->kernels[0] ? s->kernels : "auto"};
    void *old = s->s;
    int oldT = s->T;
    s->T = T;
    if ((st = start(s, p, &o, err))) { /* s->s is still the old session */
        s->T = oldT;
        free(p);
        return st;
    }
    I(s)->session_free(old);
    if (moments && (st = I(s)->set_state(s->s, p + s->np, p + 2 * s->np, step, msg, sizeof msg)))
        st = pfail(s, st, msg, err);
    free(p);
    return st;
}

/* One provider call over B sequences cut into working batches; a batch that fails for memory is
 * halved, remembered, and retried. */
typedef dpd_status (*batch_fn)(dpd_session *s, const float *x, int b, int T, float *y, char *msg, size_t n);

static dpd_status batched(dpd_session *s, batch_fn fn, const float *x, int B, int T, float *y, dpd_error *err) {
    char msg[512] = "";
    if (!s->s) return dpd_fail(err, DPD_E_DEVICE, "%s: the session is not usable after an earlier failure", I(s)->name);
    if (T > s->T && !I(s)->session_open) { /* v2 providers size inference themselves */
        dpd_status st = regrow(s, T, err);
        if (st) return st;
    }
    for (int b0 = 0; b0 < B;) {
        int b = B - b0 < s->batch ? B - b0 : s->batch;
        size_t off = (size_t)b0 * T * 2;
        dpd_status st = fn(s, x + off, b, T, y + off, msg, sizeof msg);
        if (st == DPD_E_NOMEM && s->batch > 1) {
            s->batch = b / 2 > 0 ? b / 2 : 1;
            continue;
        }
        if (st) return pfail(s, st, msg, err);
        b0 += b;
    }
    return DPD_OK;
}

static dpd_status fwd1(dpd_session *s, const float *x, int b, int T, float *y, char *msg, size_t n) {
    return I(s)->forward(s->s, x, b, T, y, msg, n);
}

const dpd_model_cfg *dpd_session_cfg(const dpd_session *s) { return &s->cfg; }

dpd_status dpd_session_forward(dpd_session *s, const float *x, int B, int T, float *y, dpd_error *err) {
    if (B < 1 || T < 1) return dpd_fail(err, DPD_E_INVAL, "batch %d x length %d: both must be >= 1", B, T);
    return batched(s, fwd1, x, B, T, y, err);
}

/* ---- resident splits, training steps, evaluation ---- */

static float *scratch(dpd_session *s, size_t n) {
    if (n > s->cap) {
        free(s->buf);
        s->buf = malloc(n * sizeof *s->buf);
        s->cap = s->buf ? n : 0;
    }
    return s->buf;
}

dpd_status dpd_session_attach_as(dpd_session *s, int k, const float *x, const float *y, size_t n,
                                 unsigned long long id, dpd_error *err) {
    char msg[512] = "";
    if (k < 0 || k >= DPD_NSPLIT) return dpd_fail(err, DPD_E_INVAL, "split %d is not 0, 1 or 2", k);
    if (!x || !n) return dpd_fail(err, DPD_E_INVAL, "split %d: no samples to attach", k);
    s->attached_n[k] = 0, s->attached_id[k] = 0; /* until the new data is in place */
    if (I(s)->attach) {
        dpd_status st = I(s)->attach(s->s, k, x, y, n, msg, sizeof msg);
        if (st) return pfail(s, st, msg, err);
    } else {
        hsplit *h = &s->h[k];
        free(h->x), free(h->y);
        h->x = malloc(n * 2 * sizeof *h->x), h->y = y ? malloc(n * 2 * sizeof *h->y) : NULL, h->n = n;
        if (!h->x || (y && !h->y)) return dpd_fail(err, DPD_E_NOMEM, "out of memory for a %zu-sample split", n);
        memcpy(h->x, x, n * 2 * sizeof *x);
        if (y) memcpy(h->y, y, n * 2 * sizeof *y);
    }
    s->attached_n[k] = n, s->attached_id[k] = id;
    return DPD_OK;
}

dpd_status dpd_session_attach(dpd_session *s, int k, const float *x, const float *y, size_t n, dpd_error *err) {
    return dpd_session_attach_as(s, k, x, y, n, 0, err);
}

/* v1 emulation of one step on a gathered batch (the host pays the gather and the transfers). */
static dpd_status step1(dpd_session *s, const float *bx, const float *by, int B, int L, double max_norm, double *loss,
                        char *msg, size_t n) {
    const dpd_provider_i *p = I(s);
    if (!s->pa) return p->train_step(s->s, bx, by, B, L, max_norm, loss, msg, n);
    size_t fb = (size_t)B * L * 2;
    float *u = (float *)by + fb, *yh = u + fb, *dyh = yh + fb, *du = dyh + fb;
    dpd_status st = p->forward_keep(s->s, bx, B, L, u, msg, n);
    if (!st) st = p->forward_keep(s->pa->s, u, B, L, yh, msg, n);
    if (st) return st;
    *loss = dpd_mse(yh, by, fb, dyh);
    if (!isfinite(*loss)) return snprintf(msg, n, "training diverged: the loss is not finite (lower lr)"), DPD_E_DIVERGED;
    if (!(st = p->backward(s->pa->s, dyh, du, msg, n)) && !(st = p->backward(s->s, du, NULL, msg, n)))
        st = p->clip(s->s, max_norm, msg, n);
    return st;
}

dpd_status dpd_session_train_steps(dpd_session *s, const uint32_t *frames, size_t nframes, int B, int L, int S,
                                   double lr, double wd, double max_norm, double *losses, dpd_error *err) {
    char msg[512] = "";
    if (!s->s) return dpd_fail(err, DPD_E_DEVICE, "%s: the session is not usable after an earlier failure", I(s)->name);
    if (B < 1 || L < 1 || S < 1) return dpd_fail(err, DPD_E_INVAL, "batch, frame and stride must be >= 1");
    if (B > s->max_batch)
        return dpd_fail_field(err, "max_batch", DPD_E_INVAL, "max_batch: batch %d exceeds the session's %d", B, s->max_batch);
    if (s->T && L > s->T) { /* a reservation re-made would drop the resident splits of a v2 provider */
        if (I(s)->session_open)
            return dpd_fail_field(err, "max_frame", DPD_E_INVAL, "max_frame: frame %d exceeds the session's %d (create "
                                  "the session with a larger max_frame)", L, s->T);
        dpd_status st = regrow(s, L, err);
        if (st) return st;
    }
    size_t n = s->attached_n[DPD_TRAIN];
    if (!n) return dpd_fail(err, DPD_E_INVAL, "no training split attached");
    for (size_t i = 0; i < nframes; i++) /* every frame inside the resident split */
        if ((size_t)frames[i] * (size_t)S + (size_t)L > n)
            return dpd_fail(err, DPD_E_INVAL, "frame %u (samples %zu..%zu) lies outside the %zu-sample training split",
                            frames[i], (size_t)frames[i] * (size_t)S, (size_t)frames[i] * (size_t)S + (size_t)L, n);
    if (I(s)->train_steps) {
        dpd_status st = I(s)->train_steps(s->s, frames, nframes, B, L, S, lr, wd, max_norm, losses, msg, sizeof msg);
        if (st == DPD_E_DIVERGED) return dpd_fail(err, st, "%s", msg);
        return st ? pfail(s, st, msg, err) : DPD_OK;
    }
    const hsplit *tr = &s->h[DPD_TRAIN];
    if (!tr->y) return dpd_fail(err, DPD_E_INVAL, "the training split has no targets");
    size_t fb = (size_t)B * L * 2;
    float *bx = scratch(s, (s->pa ? 6 : 2) * fb), *by = bx + fb;
    if (!bx) return dpd_fail(err, DPD_E_NOMEM, "out of memory for a %d x %d batch", B, L);
    for (size_t f0 = 0, k = 0; f0 < nframes; f0 += (size_t)B, k++) {
        int b = nframes - f0 < (size_t)B ? (int)(nframes - f0) : B;
        dpd_frames_gather(tr->x, tr->y, frames + f0, b, L, S, bx, by);
        dpd_status st = step1(s, bx, by, b, L, max_norm, &losses[k], msg, sizeof msg);
        if (!st) st = I(s)->optimizer_step(s->s, lr, wd, msg, sizeof msg);
        if (st == DPD_E_DIVERGED || (st == DPD_E_ABORTED && strstr(msg, "diverged")))
            return dpd_fail(err, DPD_E_DIVERGED, "%s", msg);
        if (st) return pfail(s, st, msg, err);
    }
    return DPD_OK;
}

static dpd_status fwd_chain(dpd_session *s, const float *x, int b, int T, float *y, char *msg, size_t n) {
    float *u = scratch(s, (size_t)b * T * 2);
    if (!u) return snprintf(msg, n, "out of memory"), DPD_E_NOMEM;
    dpd_status st = I(s)->forward(s->s, x, b, T, u, msg, n);
    return st ? st : I(s)->forward(s->pa->s, u, b, T, y, msg, n);
}

dpd_status dpd_session_evaluate(dpd_session *s, int k, int N, int batch, float *pred, dpd_error *err) {
    char msg[512] = "";
    if (!s->s) return dpd_fail(err, DPD_E_DEVICE, "%s: the session is not usable after an earlier failure", I(s)->name);
    if (k < 0 || k >= DPD_NSPLIT || N < 1 || batch < 1 || !s->attached_n[k] || s->attached_n[k] % (size_t)N)
        return dpd_fail(err, DPD_E_INVAL, "split %d: nothing attached in sequences of %d", k, N);
    if (!I(s)->evaluate && s->pa && N > s->pa->T) { /* v1: sequences are bounded by the reservation */
        dpd_status st = regrow(s->pa, N, err);
        if (st) return st;
    }
    if (!I(s)->evaluate && N > s->T) {
        dpd_status st = regrow(s, N, err);
        if (st) return st;
    }
    if (I(s)->evaluate) { /* a batch that does not fit is halved, remembered and retried */
        for (;;) {
            int b = batch < s->batch ? batch : s->batch;
            dpd_status st = I(s)->evaluate(s->s, k, N, b, pred, msg, sizeof msg);
            if (st == DPD_E_NOMEM && b > 1) {
                s->batch = b / 2;
                continue;
            }
            return st ? pfail(s, st, msg, err) : DPD_OK;
        }
    }
    int S = (int)(s->h[k].n / (size_t)N);
    for (int s0 = 0; s0 < S; s0 += batch) {
        int b = S - s0 < batch ? S - s0 : batch;
        size_t off = (size_t)s0 * N * 2;
        dpd_status st = batched(s, s->pa ? fwd_chain : fwd1, s->h[k].x + off, b, N, pred + off, err);
        if (st) return st;
    }
    return DPD_OK;
}

dpd_status dpd_session_chain(dpd_session *dpd, dpd_session *pa, dpd_error *err) {
    char msg[512] = "";
    if (pa && dpd->p != pa->p)
        return dpd_fail(err, DPD_E_INVAL, "cannot chain a %s session to a %s session", I(dpd)->name, I(pa)->name);
    if (pa && (pa == dpd || pa->pa || dpd->by || (pa->by && pa->by != dpd)))
        return dpd_fail(err, DPD_E_INVAL, "a chain is one DPD session on one PA session: %s",
                        pa == dpd ? "a session cannot be chained to itself"
                        : pa->pa ? "the PA session is itself chained to another"
                        : dpd->by ? "the DPD session is another session's PA"
                                  : "the PA session is already chained to another DPD session");
    char why[160];
    if (pa && cannot(dpd->p, &dpd->cfg, DPD_NEED_CHAIN, &pa->cfg, why, sizeof why))
        return dpd_fail(err, DPD_E_UNSUPPORTED, "%s: training through a PA model is not supported", I(dpd)->name);
    if (I(dpd)->chain) {
        dpd_status st = I(dpd)->chain(dpd->s, pa ? pa->s : NULL, msg, sizeof msg);
        if (st) return pfail(dpd, st, msg, err);
    }
    if (dpd->pa) dpd->pa->by = NULL;
    dpd->pa = pa;
    if (pa) pa->by = dpd;
    return DPD_OK;
}

dpd_status dpd_session_get_state(dpd_session *s, float *m, float *v, long *step, dpd_error *err) {
    char msg[512] = "";
    if (!I(s)->get_state) return dpd_fail(err, DPD_E_UNSUPPORTED, "%s keeps no optimizer state", I(s)->name);
    dpd_status st = I(s)->get_state(s->s, m, v, step, msg, sizeof msg);
    return st ? pfail(s, st, msg, err) : DPD_OK;
}

dpd_status dpd_session_set_state(dpd_session *s, const float *m, const float *v, long step, dpd_error *err) {
    char msg[512] = "";
    if (!I(s)->set_state) return dpd_fail(err, DPD_E_UNSUPPORTED, "%s keeps no optimizer state", I(s)->name);
    dpd_status st = I(s)->set_state(s->s, m, v, step, msg, sizeof msg);
    return st ? pfail(s, st, msg, err) : DPD_OK;
}

dpd_status dpd_session_zeros(dpd_session *s, long long z[4], dpd_error *err) {
    char msg[512] = "";
    memset(z, 0, 4 * sizeof *z);
    if (!I(s)->zeros) return DPD_OK;
    dpd_status st = I(s)->zeros(s->s, z, msg, sizeof msg);
    return st ? pfail(s, st, msg, err) : DPD_OK;
}
