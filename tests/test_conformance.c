/* test_conformance: the provider conformance suite (docs/providers.md). Every provider present —
 * the built-in cpu, the fault-injecting fake ($DPD_FAKE_LIB, in its ok mode) and the OpenCL
 * provider ($DPD_OPENCL_LIB, default $BUILD/opencl/test/libdpd-opencl.so, on the first device the
 * OpenCL ICD loader finds: PoCL in CI), and the device-resident CUDA provider ($DPD_CUDA_LIB,
 * default $BUILD/cuda/libdpd-cuda-resident.so, where a GPU is) — runs every family of the fast path (gru in one and two
 * layers, dgru, lstm, tres_gru, rvtdcnn) at the shapes B x T = 3 x 24, 7 x 50 and 64 x 200 through
 * the ABI v2 table, against a separate session of the CPU provider (the reference); the CPU
 * provider's reference kernels (session option kernels=ref) run the suite as a provider too:
 *  - evaluate: the predictions;
 *  - one training step without clipping: the loss, and every gradient (AdamW's first moment after
 *    one step from zero is (1 - beta1) g);
 *  - four more steps with clipping at 1.0 over 3 B + 1 frames (a short last batch): each loss, the
 *    parameters and both AdamW moments, and the step count;
 *  - the same five steps in a second session: bitwise equal (losses, parameters, moments);
 *  - a DPD trained through the family's model as a frozen PA (chain): evaluate and five steps as
 *    above, the PA's weights untouched; a GRU-6 DPD at every shape, and at 3 x 24 each of the five
 *    families as the DPD (every pair);
 *  - a step with infinite targets: DPD_E_DIVERGED before its update;
 *  - device providers: their fused kernels against their layered ones, recorded chunks against
 *    launched steps and against a second run, a resumed run against a straight one (every
 *    family and the cascade: fused(), replays(), resumes(), bitwise); resumes() on the cpu too.
 * Each comparison is max |a - b| / max |b| <= 1e-5 over the tensor (a chain through a DGRU PA:
 * twice the cpu's own two kernel sets' deviation, see ill()). A configuration the provider
 * does not support must be refused by session_open with DPD_E_UNSUPPORTED and a reason. A provider
 * that is absent or has no device here is a counted skip with its reason. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "dpd/provider.h"

#define TOL 1e-5

typedef struct shape {
    int B, T;
} shape;

static const shape shapes[] = {{3, 24}, {7, 50}, {64, 200}};
static const dpd_model_cfg families[] = {
    {"gru", 8, 1}, {"gru", 6, 2}, {"dgru", 7, 1}, {"lstm", 6, 1}, {"tres_gru", 5, 1}, {"rvtdcnn", 6, 1}};
/* The DPDs of the chains: a GRU-6 through every model at every shape, and at the first shape
 * every family as the DPD (every pair of the five families). */
static const dpd_model_cfg dpds[] = {{"gru", 6, 1}, {"lstm", 5, 1}, {"dgru", 5, 1}, {"tres_gru", 4, 1}, {"rvtdcnn", 5, 1}};

/* max |a - b| / max |b| over n; infinite where a difference is not a number (a NaN output). */
static double reld(const double *a, const double *b, size_t n) {
    double d = 0, m = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs(a[i] - b[i]);
        if (!(e <= d)) d = isnan(e) ? INFINITY : e;
        m = fmax(m, fabs(b[i]));
    }
    return isfinite(d) ? d / (m > 0 ? m : 1) : INFINITY;
}

static double rel(const float *a, const float *b, size_t n) {
    double *x = malloc(2 * n * sizeof *x), r;
    for (size_t i = 0; i < n; i++) x[i] = a[i], x[n + i] = b[i];
    r = reld(x, x + n, n);
    free(x);
    return r;
}

/* A provider table from a library (NULL with why when it cannot be had here). */
static const dpd_provider *load(const char *lib, char *why, size_t nwhy) {
    static dpd_provider p[4];
    static int np;
    void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!h) return snprintf(why, nwhy, "%s", lib ? dlerror() : "no library given"), NULL;
    dpd_provider_init_fn init = (dpd_provider_init_fn)dlsym(h, DPD_PROVIDER_INIT);
    dpd_provider_score_fn score = (dpd_provider_score_fn)dlsym(h, DPD_PROVIDER_SCORE);
    char msg[512] = "";
    if (!init || !score) return snprintf(why, nwhy, "%s: no provider symbols", lib), NULL;
    if (!score(msg, sizeof msg)) return snprintf(why, nwhy, "no device: %s", msg), NULL;
    if (np >= 4 || init(DPD_PROVIDER_API, &p[np], msg, sizeof msg)) return snprintf(why, nwhy, "init: %s", msg), NULL;
    return &p[np++];
}

/* A session of p for model m (its parameters uploaded): NULL, with the status in *st. */
static void *open_session(const dpd_provider *p, const char *kernels, const dpd_model *m, int B, int T,
                          dpd_status *st, char *msg, size_t nmsg) {
    dpd_tensor t[128]; /* more than any family has (src/family.h) */
    int nt = dpd_model_ntensors(m);
    for (int k = 0; k < nt; k++) t[k] = *dpd_model_tensor(m, k);
    const dpd_kv o[2] = {{"threads", "1"}, {"kernels", kernels}};
    void *s = NULL;
    *st = p->i->session_open(p->ctx, 0, dpd_model_config(m), t, nt, B, T, o, 2, &s, msg, nmsg);
    if (!*st && (*st = p->i->upload(s, dpd_model_params((dpd_model *)m), msg, nmsg))) p->i->session_free(s), s = NULL;
    return s;
}

/* What five steps leave: losses, parameters, moments, step count. */
typedef struct trace {
    double loss[8];
    float *p, *m, *v, *m1; /* m1: the first moment after the first step (0.1 g) */
    float *pred, *pred2;   /* evaluate in one batch, and in batches of (B + 1) / 2 (offsets past 0) */
    long step;
    int ok;
} trace;

static void trace_free(trace *t) {
    free(t->p), free(t->m), free(t->v), free(t->m1), free(t->pred), free(t->pred2);
    memset(t, 0, sizeof *t);
}

/* Evaluate on the val split, one unclipped step on frames 0..B, then 4 clipped steps over 3 B + 1
 * frames, on session s of p (chained to pa, a session of p holding the PA, when pa is not NULL). */
static void run(const dpd_provider *p, void *s, void *pa, size_t np, int B, int T, const float *x, const float *y,
                const char *what, trace *t) {
    char msg[512] = "";
    size_t n = (size_t)B * T * 2; /* samples of the train split: frames at stride T, 2 B of them */
    uint32_t *fr = malloc((3 * (size_t)B + 1) * sizeof *fr), f0[64];
    for (int i = 0; i < B; i++) f0[i] = (uint32_t)i;
    for (size_t i = 0; i < 3 * (size_t)B + 1; i++) fr[i] = (uint32_t)((i * 7 + 3) % (2 * (size_t)B));
    t->p = malloc(np * 4), t->m = malloc(np * 4), t->v = malloc(np * 4), t->m1 = malloc(np * 4);
    t->pred = malloc((size_t)B * T * 2 * 4), t->pred2 = malloc((size_t)B * T * 2 * 4);
    float *v1 = malloc(np * 4);
    dpd_status st = p->i->chain(s, pa, msg, sizeof msg);
    if (!st) st = p->i->attach(s, DPD_TRAIN, x, y, n, msg, sizeof msg);
    if (!st) st = p->i->attach(s, DPD_VAL, x, NULL, (size_t)B * T, msg, sizeof msg);
    if (!st) st = p->i->evaluate(s, DPD_VAL, T, B, t->pred, msg, sizeof msg);
    if (!st) st = p->i->evaluate(s, DPD_VAL, T, (B + 1) / 2, t->pred2, msg, sizeof msg);
    if (!st) st = p->i->train_steps(s, f0, (size_t)B, B, T, T, 1e-3, 0.01, 0, t->loss, msg, sizeof msg);
    if (!st) st = p->i->get_state(s, t->m1, v1, &t->step, msg, sizeof msg);
    if (!st) st = p->i->train_steps(s, fr, 3 * (size_t)B + 1, B, T, T, 1e-3, 0.01, 1.0, t->loss + 1, msg, sizeof msg);
    if (!st) st = p->i->download(s, t->p, msg, sizeof msg);
    if (!st) st = p->i->get_state(s, t->m, t->v, &t->step, msg, sizeof msg);
    CHECK(!st, "%s: %s", what, msg);
    t->ok = !st;
    free(fr), free(v1);
}

/* The six deviations of dut from ref: predictions, losses, gradients, parameters, both moments. */
static void deviations(const trace *dut, const trace *ref, size_t np, size_t npred, double e[6]) {
    e[0] = rel(dut->pred, ref->pred, npred), e[1] = reld(dut->loss, ref->loss, 5), e[2] = rel(dut->m1, ref->m1, np);
    e[3] = rel(dut->p, ref->p, np), e[4] = rel(dut->m, ref->m, np), e[5] = rel(dut->v, ref->v, np);
}

/* dut against ref: predictions, losses, gradients, parameters, moments, within tol. */
static void compare(const trace *dut, const trace *ref, size_t np, size_t npred, double tol, const char *what) {
    if (!dut->ok || !ref->ok) return;
    double e[6];
    deviations(dut, ref, np, npred, e);
    printf("%-48s evaluate %.1e  losses %.1e  gradients %.1e  parameters %.1e  m %.1e  v %.1e\n", what, e[0], e[1],
           e[2], e[3], e[4], e[5]);
    CHECK(e[0] <= tol, "%s: evaluate %.3g", what, e[0]);
    double e2 = rel(dut->pred2, ref->pred, npred);
    CHECK(e2 <= tol, "%s: evaluate in batches of (B + 1) / 2: %.3g", what, e2);
    CHECK(e[1] <= tol, "%s: losses %.3g (first %.9g vs %.9g)", what, e[1], dut->loss[0], ref->loss[0]);
    CHECK(e[2] <= tol, "%s: gradients %.3g", what, e[2]);
    CHECK(e[3] <= tol && e[4] <= tol && e[5] <= tol, "%s: after 5 AdamW steps: parameters %.3g, m %.3g, v %.3g", what,
          e[3], e[4], e[5]);
    CHECK(dut->step == 5 && ref->step == 5, "%s: step count %ld", what, dut->step);
}

static int same(const trace *a, const trace *b, size_t np) {
    return a->ok && b->ok && !memcmp(a->loss, b->loss, 5 * sizeof *a->loss) && !memcmp(a->p, b->p, np * 4) &&
           !memcmp(a->m, b->m, np * 4) && !memcmp(a->v, b->v, np * 4);
}

/* The tolerance of a chain through a DGRU PA (model m, DPD d): its features Q/A and I/A amplify
 * the last bit of a DPD output near zero amplitude by 1/A (random data has such samples), so two
 * correct implementations differ by more than TOL: the cpu's own reference and fast kernels by
 * up to 1.6e-4 on this suite's data (at 64 x 200; at B < 5 both run the same reference code).
 * The tolerance is 1e-4, or twice the cpu's own deviation where that is larger. */
static double ill(const dpd_model_cfg *c, dpd_model *d, dpd_model *m, shape sh, const float *x, const float *y) {
    const dpd_provider *cpu = dpd_provider_cpu();
    dpd_status st;
    char msg[512] = "", what[200];
    snprintf(what, sizeof what, "%s-%d PA, %d x %d, DPD %s", c->family, c->hidden, sh.B, sh.T, dpd_model_config(d)->family);
    void *fpa = open_session(cpu, "auto", m, sh.B, sh.T, &st, msg, sizeof msg), *fd = open_session(cpu, "auto", d, sh.B, sh.T, &st, msg, sizeof msg);
    void *rpa = open_session(cpu, "ref", m, sh.B, sh.T, &st, msg, sizeof msg), *rd = open_session(cpu, "ref", d, sh.B, sh.T, &st, msg, sizeof msg);
    trace tf = {0}, tr = {0};
    double e[6] = {0}, worst = 1e-4;
    if (fpa && fd && rpa && rd) {
        size_t nd = dpd_model_nparams(d);
        run(cpu, fd, fpa, nd, sh.B, sh.T, x, y, what, &tf);
        run(cpu, rd, rpa, nd, sh.B, sh.T, x, y, what, &tr);
        deviations(&tr, &tf, nd, (size_t)sh.B * sh.T * 2, e);
        for (int i = 0; i < 6; i++) worst = fmax(worst, 2 * e[i]);
        printf("%-48s tolerance %.1e (the cpu's reference kernels against its fast ones, twice)\n", what, worst);
    }
    CHECK(fpa && fd && rpa && rd && tf.ok && tr.ok, "%s: %s", what, msg);
    trace_free(&tf), trace_free(&tr);
    void *all[4] = {fd, rd, fpa, rpa};
    for (int i = 0; i < 4; i++)
        if (all[i]) cpu->i->session_free(all[i]);
    return worst;
}

/* One provider (its sessions with kernels, a session option), one family, one shape. */
static void one(const dpd_provider *p, const char *pname, const char *kernels, const dpd_model_cfg *c, shape sh) {
    const dpd_provider *cpu = dpd_provider_cpu();
    char what[160], msg[512] = "";
    snprintf(what, sizeof what, "%s %s-%d x %d, %d x %d", pname, c->family, c->hidden, c->layers, sh.B, sh.T);
    dpd_rng r;
    dpd_rng_seed(&r, (uint64_t)(sh.B * 1000 + sh.T));
    dpd_model *m = check_model(c, &r);
    size_t np = dpd_model_nparams(m), n = (size_t)sh.B * sh.T * 2;
    float *x = malloc(2 * n * 4), *y = malloc(2 * n * 4);
    for (size_t i = 0; i < 2 * n; i++) x[i] = (float)(0.3 * dpd_rng_normal(&r)), y[i] = (float)(0.3 * dpd_rng_normal(&r));
    dpd_status st;
    if (!p->i->supports(p->ctx, c)) {
        void *s = open_session(p, kernels, m, sh.B, sh.T, &st, msg, sizeof msg);
        CHECK(!s && st == DPD_E_UNSUPPORTED && msg[0], "%s: unsupported, refused with a reason (%d: %s)", what, (int)st, msg);
        if (s) p->i->session_free(s);
        goto done;
    }
    void *ref = open_session(cpu, "auto", m, sh.B, sh.T, &st, msg, sizeof msg), *a = open_session(p, kernels, m, sh.B, sh.T, &st, msg, sizeof msg);
    void *b = a ? open_session(p, kernels, m, sh.B, sh.T, &st, msg, sizeof msg) : NULL;
    CHECK(ref && a && b, "%s: sessions: %s", what, msg);
    trace tr = {0}, ta = {0}, tb = {0};
    if (ref && a && b) {
        run(cpu, ref, NULL, np, sh.B, sh.T, x, y, what, &tr);
        run(p, a, NULL, np, sh.B, sh.T, x, y, what, &ta);
        run(p, b, NULL, np, sh.B, sh.T, x, y, what, &tb);
        compare(&ta, &tr, np, (size_t)sh.B * sh.T * 2, TOL, what);
        CHECK(same(&ta, &tb, np) && !memcmp(ta.pred, tb.pred, (size_t)sh.B * sh.T * 2 * 4),
              "%s: the same steps in a second session are bitwise equal", what);
    }
    trace_free(&tr), trace_free(&ta), trace_free(&tb);
    /* DPDs through this model as the frozen PA: fresh PA sessions (their weights never change) */
    for (size_t k = 0; k < (sh.B == shapes[0].B ? sizeof dpds / sizeof *dpds : 1); k++) {
        const dpd_model_cfg *dc = &dpds[k];
        if (!p->i->supports(p->ctx, dc)) continue;
        dpd_model *d = check_model(dc, &r);
        size_t nd = dpd_model_nparams(d);
        char cw[200];
        snprintf(cw, sizeof cw, "%s, chained DPD %s-%d", what, dc->family, dc->hidden);
        void *rpa = open_session(cpu, "auto", m, sh.B, sh.T, &st, msg, sizeof msg), *rd = open_session(cpu, "auto", d, sh.B, sh.T, &st, msg, sizeof msg);
        void *apa = open_session(p, kernels, m, sh.B, sh.T, &st, msg, sizeof msg), *ad = open_session(p, kernels, d, sh.B, sh.T, &st, msg, sizeof msg);
        CHECK(rpa && rd && apa && ad, "%s: sessions: %s", cw, msg);
        if (rpa && rd && apa && ad) {
            run(cpu, rd, rpa, nd, sh.B, sh.T, x, y, cw, &tr);
            run(p, ad, apa, nd, sh.B, sh.T, x, y, cw, &ta);
            compare(&ta, &tr, nd, (size_t)sh.B * sh.T * 2, strcmp(c->family, "dgru") ? TOL : ill(c, d, m, sh, x, y), cw);
            float *pp = malloc(np * 4);
            CHECK(!p->i->download(apa, pp, msg, sizeof msg) && !memcmp(pp, dpd_model_params(m), np * 4),
                  "%s: the frozen PA's weights are untouched after training through it", cw);
            free(pp);
        }
        trace_free(&tr), trace_free(&ta);
        void *all[4] = {rd, ad, rpa, apa}; /* the DPD sessions first: they run through the PAs */
        for (int i = 0; i < 4; i++)
            if (all[i]) (i % 2 ? p : cpu)->i->session_free(all[i]);
        dpd_model_free(d);
    }
    if (ref) cpu->i->session_free(ref);
    if (a) p->i->session_free(a);
    if (b) p->i->session_free(b);
done:
    free(x), free(y);
    dpd_model_free(m);
}

/* A step whose loss is not finite (infinite targets): DPD_E_DIVERGED with that loss, no update,
 * the step count unchanged, as the cpu provider. */
static void diverge(const dpd_provider *p, const char *pname, const char *kernels, const dpd_model_cfg *c) {
    char msg[512] = "";
    dpd_rng r;
    dpd_rng_seed(&r, 7);
    dpd_model *m = check_model(c, &r);
    size_t np = dpd_model_nparams(m), n = 3 * 24;
    float *x = malloc(2 * n * 4), *y = malloc(2 * n * 4), *after = malloc(np * 4), *mm = malloc(np * 4), *vv = malloc(np * 4);
    for (size_t i = 0; i < 2 * n; i++) x[i] = (float)(0.3 * dpd_rng_normal(&r)), y[i] = INFINITY;
    uint32_t fr[3] = {0, 1, 2};
    double loss[2] = {0, 0};
    long step = -1;
    dpd_status st;
    void *s = open_session(p, kernels, m, 3, 24, &st, msg, sizeof msg);
    if (s && !(st = p->i->attach(s, DPD_TRAIN, x, y, n, msg, sizeof msg)))
        st = p->i->train_steps(s, fr, 3, 3, 24, 24, 1e-3, 0.01, 1.0, loss, msg, sizeof msg);
    CHECK(st == DPD_E_DIVERGED && !isfinite(loss[0]) && strstr(msg, "diverged") && !p->i->download(s, after, msg, sizeof msg) &&
              !memcmp(after, dpd_model_params(m), np * 4) && !p->i->get_state(s, mm, vv, &step, msg, sizeof msg) && step == 0,
          "%s %s: a non-finite loss ends train_steps with DPD_E_DIVERGED before the update (status %d, loss %g, step %ld: %s)",
          pname, c->family, (int)st, loss[0], step, msg);
    if (s) p->i->session_free(s);
    free(x), free(y), free(after), free(mm), free(vv);
    dpd_model_free(m);
}

/* One determinism check's outcome as a line scripts/gpu-check.sh reads: "BITWISE provider model pa
 * kind 0|1", models as family-hidden (pa: the chained PA, or -), kind fused_layered, eager_graph,
 * run_twice or resume. */
static void bitwise(const char *pname, const dpd_model_cfg *m, const dpd_model_cfg *pa, const char *kind, int eq) {
    char pas[48] = "-";
    if (pa) snprintf(pas, sizeof pas, "%s-%d", pa->family, pa->hidden);
    printf("BITWISE %s %s-%d %s %s %d\n", pname, m->family, m->hidden, pas, kind, eq);
}

/* A device provider's fused kernels (kernels auto: gru, lstm, dgru, tres_gru and rvtdcnn of one layer of
 * H <= 32) against its layered kernels (kernels=ref): the same sums in the same order, so bitwise
 * equal predictions (in one launch, and with the layered kernels in batches), losses, gradients,
 * parameters and moments. */
static void fused(const dpd_provider *p, const char *pname) {
    static const int hs[] = {1, 8, 23, 32};
    static const char *const fam[] = {"gru", "lstm", "dgru", "tres_gru", "rvtdcnn"};
    for (size_t h = 0; h < 5 * sizeof hs / sizeof *hs; h++) /* each family at each size */
        for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++) {
            dpd_model_cfg c = {"", hs[h % 4], 1};
            snprintf(c.family, sizeof c.family, "%s", fam[h / 4]);
            shape sh = shapes[k];
            char what[160], msg[512] = "";
            snprintf(what, sizeof what, "%s %s-%d, %d x %d, fused against layered", pname, c.family, c.hidden, sh.B, sh.T);
            dpd_rng r;
            dpd_rng_seed(&r, (uint64_t)(sh.B * 1000 + sh.T + c.hidden));
            dpd_model *m = check_model(&c, &r);
            size_t np = dpd_model_nparams(m), n = (size_t)sh.B * sh.T * 2;
            float *x = malloc(2 * n * 4), *y = malloc(2 * n * 4);
            for (size_t i = 0; i < 2 * n; i++) x[i] = (float)(0.3 * dpd_rng_normal(&r)), y[i] = (float)(0.3 * dpd_rng_normal(&r));
            dpd_status st;
            void *a = open_session(p, "auto", m, sh.B, sh.T, &st, msg, sizeof msg);
            void *b = a ? open_session(p, "ref", m, sh.B, sh.T, &st, msg, sizeof msg) : NULL;
            CHECK(a && b, "%s: sessions: %s", what, msg);
            trace ta = {0}, tb = {0};
            if (a && b) {
                run(p, a, NULL, np, sh.B, sh.T, x, y, what, &ta);
                run(p, b, NULL, np, sh.B, sh.T, x, y, what, &tb);
                double e[6] = {0};
                if (ta.ok && tb.ok) deviations(&ta, &tb, np, n, e);
                int eq = same(&ta, &tb, np) && !memcmp(ta.pred, tb.pred, n * 4) && !memcmp(ta.pred2, tb.pred2, n * 4);
                CHECK(eq, "%s: bitwise equal (deviations: evaluate %.2g, losses %.2g, gradients %.2g, parameters %.2g)",
                      what, e[0], e[1], e[2], e[3]);
                bitwise(pname, &c, NULL, "fused_layered", eq);
            }
            trace_free(&ta), trace_free(&tb);
            if (a) p->i->session_free(a);
            if (b) p->i->session_free(b);
            free(x), free(y);
            dpd_model_free(m);
        }
}

/* A device provider's fused evaluation of long segments, in tiles (the recurrent state carried
 * from one to the next; TRes-GRU's skip and RVTDCNN's rows reaching into the tiles beside, and
 * around the segment's ends), against its layered kernels, bitwise: 3 segments of N samples,
 * each family at hidden 8 and 23, in as many tiles as the device's local memory needs, and where
 * the provider is a test build that honours the variable cap (DPD_OPENCL_TILE), in tiles of 1, 7
 * and 64 too. N = 700 there; 3000 where cap is NULL (the CUDA library has no test hooks), so that
 * on an H200 (227 KiB a block) every one of them runs in at least three tiles. */
static void tiles(const dpd_provider *p, const char *pname, const char *cap) {
    static const char *const fam[] = {"gru", "lstm", "dgru", "tres_gru", "rvtdcnn"};
    static const char *const caps[] = {"", "1", "7", "64"};
    const int S = 3, N = cap ? 700 : 3000;
    for (size_t f = 0; f < 10; f++) {
        dpd_model_cfg c = {"", f % 2 ? 23 : 8, 1};
        snprintf(c.family, sizeof c.family, "%s", fam[f / 2]);
        dpd_rng r;
        dpd_rng_seed(&r, 71 + f);
        dpd_model *m = check_model(&c, &r);
        size_t n = (size_t)S * N;
        float *x = malloc(2 * n * 4), *ya = malloc(2 * n * 4), *yb = malloc(2 * n * 4);
        for (size_t i = 0; i < 2 * n; i++) x[i] = (float)(0.3 * dpd_rng_normal(&r));
        char msg[512] = "";
        dpd_status st;
        void *b = open_session(p, "ref", m, S, N, &st, msg, sizeof msg);
        if (b && !(st = p->i->attach(b, DPD_VAL, x, NULL, n, msg, sizeof msg))) st = p->i->evaluate(b, DPD_VAL, N, S, yb, msg, sizeof msg);
        CHECK(b && !st, "%s %s-%d: the layered evaluation of long segments: %s", pname, c.family, c.hidden, msg);
        for (size_t k = 0; k < (cap ? sizeof caps / sizeof *caps : 1) && b && !st; k++) {
            if (cap) setenv(cap, caps[k], 1);
            void *a = open_session(p, "auto", m, S, N, &st, msg, sizeof msg);
            if (cap) unsetenv(cap);
            if (a && !(st = p->i->attach(a, DPD_VAL, x, NULL, n, msg, sizeof msg)))
                st = p->i->evaluate(a, DPD_VAL, N, S, ya, msg, sizeof msg);
            CHECK(a && !st && !memcmp(ya, yb, n * 2 * 4),
                  "%s %s-%d: evaluating %d segments of %d in tiles (%s) bitwise equal to the layered kernels (%s)", pname,
                  c.family, c.hidden, S, N, caps[k][0] ? caps[k] : "as the device holds", st ? msg : "");
            if (a) p->i->session_free(a);
        }
        if (b) p->i->session_free(b);
        free(x), free(ya), free(yb);
        dpd_model_free(m);
    }
}

/* Recorded chunks of training steps (kernels auto) against every step launched (kernels=eager),
 * and against a second session recording its own (the same run twice), bitwise, over calls that
 * reuse a recording and calls that must not, each changing one thing the recording depends on:
 * the same call twice, more steps than a chunk holds (HOST_CHUNK 32), fewer (a shorter chunk), a
 * longer training split attached (buffers reallocated), a max_norm that clips, the chained PA's
 * buffers reallocated, a shorter frame. Every family fused (a GRU and an LSTM through every call,
 * the others through the first five) and the cascade: a GRU DPD through a GRU PA (every call),
 * each family's DPD through a GRU PA and a GRU DPD through each family's PA (the first five). */
static void replays(const dpd_provider *p, const char *pname) {
    static const struct {
        dpd_model_cfg m, pa; /* pa.family "": no PA */
        int all;             /* every call (else the first five) */
    } cs[] = {{{"gru", 8, 1}, {"", 0, 0}, 1},          {{"lstm", 6, 1}, {"", 0, 0}, 1},
              {{"gru", 6, 1}, {"gru", 8, 1}, 1},       {{"dgru", 7, 1}, {"", 0, 0}, 0},
              {{"tres_gru", 5, 1}, {"", 0, 0}, 0},     {{"rvtdcnn", 6, 1}, {"", 0, 0}, 0},
              {{"lstm", 5, 1}, {"gru", 8, 1}, 0},      {{"dgru", 5, 1}, {"gru", 8, 1}, 0},
              {{"tres_gru", 4, 1}, {"gru", 8, 1}, 0},  {{"rvtdcnn", 5, 1}, {"gru", 8, 1}, 0},
              {{"gru", 6, 1}, {"lstm", 6, 1}, 0},      {{"gru", 6, 1}, {"dgru", 7, 1}, 0},
              {{"gru", 6, 1}, {"tres_gru", 5, 1}, 0},  {{"gru", 6, 1}, {"rvtdcnn", 6, 1}, 0}};
    /* frames (at stride 8), max_norm, frame length; first a longer split attached (1), or the
     * chained PA's buffers grown by a forward of a larger batch (2); each change alone */
    static const struct { int nf; double clip; int T, what; } calls[] = {
        {70, 1.0, 24, 0},  {70, 1.0, 24, 0},  {200, 1.0, 24, 0}, {40, 1.0, 24, 0},   {70, 1.0, 24, 0},
        {70, 1.0, 24, 1},  {70, 1e-3, 24, 0}, {70, 1e-3, 24, 2}, {70, 1e-3, 16, 0}};
    for (size_t f = 0; f < sizeof cs / sizeof *cs; f++) {
        int chained = cs[f].pa.family[0] != 0, B = 4, T = 24;
        char what[160], msg[512] = "";
        snprintf(what, sizeof what, "%s %s-%d%s%s-%d, recorded chunks against launched steps and a second run", pname,
                 cs[f].m.family, cs[f].m.hidden, chained ? " through a PA " : "", chained ? cs[f].pa.family : "",
                 chained ? cs[f].pa.hidden : 0);
        dpd_rng r;
        dpd_rng_seed(&r, 11 + f);
        dpd_model *m = check_model(&cs[f].m, &r), *pm = chained ? check_model(&cs[f].pa, &r) : NULL;
        size_t np = dpd_model_nparams(m), n = 4096;
        float *x = malloc(2 * n * 4), *y = malloc(2 * n * 4), *pp[3] = {malloc(np * 4), malloc(np * 4), malloc(np * 4)};
        for (size_t i = 0; i < 2 * n; i++) x[i] = (float)(0.3 * dpd_rng_normal(&r)), y[i] = (float)(0.3 * dpd_rng_normal(&r));
        uint32_t fr[200];
        for (int i = 0; i < 200; i++) fr[i] = (uint32_t)((i * 37 + 5) % 150);
        dpd_status st = DPD_OK;
        void *s[3] = {0}, *pas[3] = {0};
        static const char *const kern[3] = {"auto", "eager", "auto"};
        double loss[3][200];
        int ok = 1;
        for (int k = 0; k < 3; k++) {
            s[k] = open_session(p, kern[k], m, B, T, &st, msg, sizeof msg);
            if (s[k] && chained && (pas[k] = open_session(p, kern[k], pm, B, T, &st, msg, sizeof msg)))
                st = p->i->chain(s[k], pas[k], msg, sizeof msg);
            if (!st && s[k]) st = p->i->attach(s[k], DPD_TRAIN, x, y, 2000, msg, sizeof msg);
            ok = ok && s[k] && !st && (!chained || pas[k]);
        }
        CHECK(ok, "%s: sessions: %s", what, msg);
        float *out = malloc(8 * 24 * 2 * 4);
        size_t nc = cs[f].all ? sizeof calls / sizeof *calls : 5;
        int eq[3] = {ok, ok, ok};
        for (size_t c = 0; ok && c < nc; c++) {
            for (int k = 0; ok && k < 3; k++) {
                if (calls[c].what == 1) st = p->i->attach(s[k], DPD_TRAIN, x, y, n, msg, sizeof msg);
                if (calls[c].what == 2 && pas[k]) st = p->i->forward(pas[k], x, 8, 24, out, msg, sizeof msg);
                if (!st)
                    st = p->i->train_steps(s[k], fr, (size_t)calls[c].nf, B, calls[c].T, 8, 1e-3, 0.01,
                                           calls[c].clip, loss[k], msg, sizeof msg);
                if (!st) st = p->i->download(s[k], pp[k], msg, sizeof msg);
                ok = !st;
            }
            size_t steps = ((size_t)calls[c].nf + B - 1) / B;
            for (int k = 1; k < 3; k++)
                CHECK((eq[k] = eq[k] && ok && !memcmp(loss[0], loss[k], steps * sizeof **loss) && !memcmp(pp[0], pp[k], np * 4)),
                      "%s: call %zu (%d frames, clip %g, T %d%s): losses and parameters bitwise equal to %s (%s)", what,
                      c + 1, calls[c].nf, calls[c].clip, calls[c].T,
                      calls[c].what == 1 ? ", a longer split" : calls[c].what == 2 ? ", the PA's buffers grown" : "",
                      k == 1 ? "every step launched" : "a second recording session", st ? msg : "");
        }
        free(out);
        bitwise(pname, &cs[f].m, chained ? &cs[f].pa : NULL, "eager_graph", eq[1]);
        bitwise(pname, &cs[f].m, chained ? &cs[f].pa : NULL, "run_twice", eq[2]);
        for (int k = 0; k < 3; k++) {
            if (s[k]) p->i->session_free(s[k]);
            if (pas[k]) p->i->session_free(pas[k]);
            free(pp[k]);
        }
        free(x), free(y);
        dpd_model_free(m);
        if (pm) dpd_model_free(pm);
    }
}

/* A resumed run against a straight one, bitwise: 40 frames then 30 in one session (recorded
 * chunks), against 40 frames in a session whose parameters, moments and step count are read
 * back (download, get_state) and given to a new session (upload, set_state) that trains the 30:
 * the second call's losses, the parameters and both moments equal, for every family and for a
 * GRU DPD through each family's PA. */
static void resumes(const dpd_provider *p, const char *pname) {
    static const char *const fam[] = {"gru", "lstm", "dgru", "tres_gru", "rvtdcnn"};
    for (size_t f = 0; f < 10; f++) {
        int chained = f >= 5, B = 4, T = 24;
        dpd_model_cfg c = {"", 6, 1}, pc = {"", 7, 1};
        snprintf((chained ? &pc : &c)->family, sizeof c.family, "%s", fam[f % 5]);
        if (chained) snprintf(c.family, sizeof c.family, "gru");
        char what[160], msg[512] = "";
        snprintf(what, sizeof what, "%s %s-%d%s%s, a resumed run against a straight one", pname, c.family, c.hidden,
                 chained ? " through a PA " : "", chained ? pc.family : "");
        dpd_rng r;
        dpd_rng_seed(&r, 41 + f);
        dpd_model *m = check_model(&c, &r), *pm = chained ? check_model(&pc, &r) : NULL;
        size_t np = dpd_model_nparams(m), n = 2000;
        float *x = malloc(2 * n * 4), *y = malloc(2 * n * 4), *st3[2][3];
        for (size_t i = 0; i < 2 * n; i++) x[i] = (float)(0.3 * dpd_rng_normal(&r)), y[i] = (float)(0.3 * dpd_rng_normal(&r));
        for (int k = 0; k < 2; k++)
            for (int i = 0; i < 3; i++) st3[k][i] = malloc(np * 4);
        uint32_t fr[70];
        for (int i = 0; i < 70; i++) fr[i] = (uint32_t)((i * 37 + 5) % 150);
        double loss[2][20];
        long step[2] = {0, 0};
        dpd_status st = DPD_OK;
        /* k 0: straight; k 1: 40 frames, then a new session from its state */
        for (int k = 0; k < 2 && !st; k++) {
            void *s = open_session(p, "auto", m, B, T, &st, msg, sizeof msg), *pa = NULL;
            if (s && chained && (pa = open_session(p, "auto", pm, B, T, &st, msg, sizeof msg))) st = p->i->chain(s, pa, msg, sizeof msg);
            if (s && !st) st = p->i->attach(s, DPD_TRAIN, x, y, n, msg, sizeof msg);
            if (s && !st) st = p->i->train_steps(s, fr, 40, B, T, 8, 1e-3, 0.01, 1.0, loss[k], msg, sizeof msg);
            if (s && !st && k) {
                st = p->i->download(s, st3[k][0], msg, sizeof msg);
                if (!st) st = p->i->get_state(s, st3[k][1], st3[k][2], &step[k], msg, sizeof msg);
                p->i->session_free(s), s = NULL;
                if (pa) p->i->session_free(pa), pa = NULL;
                if (!st) s = open_session(p, "auto", m, B, T, &st, msg, sizeof msg);
                if (s && chained && (pa = open_session(p, "auto", pm, B, T, &st, msg, sizeof msg))) st = p->i->chain(s, pa, msg, sizeof msg);
                if (s && !st) st = p->i->upload(s, st3[k][0], msg, sizeof msg);
                if (s && !st) st = p->i->set_state(s, st3[k][1], st3[k][2], step[k], msg, sizeof msg);
                if (s && !st) st = p->i->attach(s, DPD_TRAIN, x, y, n, msg, sizeof msg);
            }
            if (s && !st) st = p->i->train_steps(s, fr + 40, 30, B, T, 8, 1e-3, 0.01, 1.0, loss[k] + 10, msg, sizeof msg);
            if (s && !st) st = p->i->download(s, st3[k][0], msg, sizeof msg);
            if (s && !st) st = p->i->get_state(s, st3[k][1], st3[k][2], &step[k], msg, sizeof msg);
            if (!s && !st) st = DPD_E_INVAL;
            if (s) p->i->session_free(s);
            if (pa) p->i->session_free(pa);
        }
        int eq = !st && step[0] == 18 && step[1] == 18 && !memcmp(loss[0], loss[1], 18 * sizeof **loss) &&
                 !memcmp(st3[0][0], st3[1][0], np * 4) && !memcmp(st3[0][1], st3[1][1], np * 4) &&
                 !memcmp(st3[0][2], st3[1][2], np * 4);
        CHECK(eq, "%s: losses, parameters and moments bitwise equal, step %ld and %ld (%s)", what, step[0], step[1],
              st ? msg : "");
        bitwise(pname, &c, chained ? &pc : NULL, "resume", eq);
        for (int k = 0; k < 2; k++)
            for (int i = 0; i < 3; i++) free(st3[k][i]);
        free(x), free(y);
        dpd_model_free(m);
        if (pm) dpd_model_free(pm);
    }
}

static void suite(const dpd_provider *p, const char *name, const char *kernels) {
    for (size_t f = 0; f < sizeof families / sizeof *families; f++)
        if (p->i->supports(p->ctx, &families[f])) diverge(p, name, kernels, &families[f]);
    for (size_t f = 0; f < sizeof families / sizeof *families; f++)
        for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++) one(p, name, kernels, &families[f], shapes[k]);
}

/* Whether provider name runs here: all of them, or only the one $DPD_CONFORMANCE_ONLY names (the
 * device check runs the GPU's alone); a provider left out is a counted skip. */
static int wanted(const char *name) {
    const char *only = getenv("DPD_CONFORMANCE_ONLY");
    if (!only || !*only || !strcmp(only, name)) return 1;
    char what[64];
    snprintf(what, sizeof what, "conformance %s", name);
    check_skip(what, "DPD_CONFORMANCE_ONLY names another provider");
    return 0;
}

int main(void) {
    char why[600], path[4200];
    setvbuf(stdout, NULL, _IOLBF, 0); /* line by line: the device check reads what a stopped run printed */
    if (wanted("cpu")) {
        suite(dpd_provider_cpu(), "cpu", "auto");
        suite(dpd_provider_cpu(), "cpu-ref", "ref"); /* the CPU provider's reference kernels against its fast ones */
        resumes(dpd_provider_cpu(), "cpu");
    }
    if (wanted("fake")) {
        const dpd_provider *fake = load(getenv("DPD_FAKE_LIB"), why, sizeof why);
        if (fake) suite(fake, "fake", "auto");
        else check_skip("conformance fake", why);
    }
    const char *lib = getenv("DPD_OPENCL_LIB");
    if (!lib) snprintf(path, sizeof path, "%s/opencl/test/libdpd-opencl.so", getenv("BUILD") ? getenv("BUILD") : "build"), lib = path;
    if (wanted("opencl")) {
        const dpd_provider *ocl = load(lib, why, sizeof why);
        if (ocl) suite(ocl, "opencl", "auto"), fused(ocl, "opencl"), tiles(ocl, "opencl", "DPD_OPENCL_TILE"), replays(ocl, "opencl"), resumes(ocl, "opencl");
        else check_skip("conformance opencl", why);
    }
    /* the device-resident CUDA provider (providers/cuda/device.cu), where a GPU is */
    if (!(lib = getenv("DPD_CUDA_LIB")))
        snprintf(path, sizeof path, "%s/cuda/libdpd-cuda-resident.so", getenv("BUILD") ? getenv("BUILD") : "build"), lib = path;
    if (wanted("cuda")) {
        const dpd_provider *cu = access(lib, R_OK) ? NULL : load(lib, why, sizeof why);
        if (cu) suite(cu, "cuda", "auto"), fused(cu, "cuda"), tiles(cu, "cuda", NULL), replays(cu, "cuda"), resumes(cu, "cuda");
        else check_skip("conformance cuda", access(lib, R_OK) ? "not built (no nvcc, or a sanitized build)" : why);
    }
    return check_done("conformance");
}
