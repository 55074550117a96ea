/* bench: `dpd bench train --model M --hidden H --batch B --frame T [--steps N] [--per-call K]
 * [--pa MODEL:HIDDEN] [--provider P] [--json]` — times whole training steps (gather, forward, loss,
 * backward, clip, AdamW) through a session on random data resident in it, loss readback included:
 * K steps a dpd_session_train_steps call (1; a device provider records and replays chunks of steps
 * within a call), B frames of length T at stride T; with --pa, DPD steps through a frozen PA of
 * random weights. On the cpu it then measures one core's multiply-add peak and reports the step's
 * share of it. `dpd bench peak [--kernels K]` measures that peak alone. Never asserts. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "args.h"
#include "cli.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const char *const usage =
    "dpd bench train [--model gru --hidden 23 --layers 1 --batch 64 --frame 200 --steps 20 --per-call 1]\n"
    "                [--pa MODEL:HIDDEN] [--json]\n"
    "dpd bench peak [--kernels auto] [--json]\n\n"
    "train: times training steps through a session (a warm-up call of --per-call steps first, at least\n"
    "two) on random data, and reports the session's provider, threads and kernels; with --pa (gru:23), a\n"
    "DPD of --model/--hidden trained through a frozen PA of that family and size (random weights). On\n"
    "the cpu it then measures one core's multiply-add peak with the session's kernels (~0.1 s) and\n"
    "reports the step's FLOP rate (docs/performance.md) as a share of the peak times the threads.\n"
    "peak: that measurement alone.";

/* A model of family, hidden size and layers with train-pa's defaults for the rest (a polynomial
 * family's K, Q and M). */
static dpd_model_cfg model_of(const char *family, int hidden, int layers) {
    dpd_train_cfg c;
    cli_train_defaults(&c, "train-pa");
    snprintf(c.model.family, sizeof c.model.family, "%s", family);
    c.model.hidden = hidden, c.model.layers = layers;
    return c.model;
}

/* The model's options through the configuration's checks, as train-pa's are: a bad family or size is
 * a usage error (DPD_E_INVAL, exit 2), not a model that failed to build. */
static dpd_status model_ok(const dpd_model_cfg *mc, dpd_error *err) {
    dpd_train_cfg c;
    dpd_train_defaults(&c);
    c.model = *mc;
    return dpd_config_check(&c, err);
}

/* The frozen PA of spec "family:hidden" (random weights) as a session on s's provider and options,
 * chained to s. Leaves what it made in *pm and *ps for the caller to free. */
static dpd_status chain_pa(const char *spec, cli_exec *x, dpd_session *s, dpd_model **pm, dpd_session **ps,
                           dpd_error *err) {
    dpd_model_cfg pc = model_of("", 0, 1);
    const char *colon = strchr(spec, ':');
    char *end = NULL;
    long h = colon ? strtol(colon + 1, &end, 10) : 0;
    if (!colon || colon == spec || (size_t)(colon - spec) >= sizeof pc.family || !colon[1] || *end || h < 1 ||
        h > 65536)
        return cli_err(err, DPD_E_INVAL, "--pa: '%s' is not MODEL:HIDDEN (gru:23)", spec);
    snprintf(pc.family, sizeof pc.family, "%.*s", (int)(colon - spec), spec);
    pc.hidden = (int)h;
    dpd_status st = model_ok(&pc, err);
    if (!st) st = dpd_model_create(&pc, pm, err);
    if (st) { /* name the flag at fault: the message's field is the model's (--model) */
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        return cli_err(err, st, "--pa: %s", msg);
    }
    dpd_rng rng;
    dpd_rng_seed(&rng, 2);
    dpd_model_init(*pm, &rng);
    for (int i = 0; i < x->nkv; i++) /* a chain is on one provider */
        if (!strcmp(x->kv[i].key, "provider")) x->kv[i].value = dpd_session_provider(s);
    if ((st = dpd_session_create(*pm, x->kv, x->nkv, ps, err))) return st;
    return dpd_session_chain(s, *ps, err);
}

/* What a run measured, for the report. flop 0: no count defined; peak 0: not measured (not cpu). */
typedef struct result {
    double sec, flop, peak, loss;
    int steps, per, B, T;
    const dpd_model *pa; /* the frozen PA, or NULL */
} result;

/* "GRU-23": a model's run-id tag and size. */
static const char *label(const dpd_model *m, char *buf, size_t n) {
    const dpd_model_cfg *c = dpd_model_config(m);
    dpd_family_info fi;
    int known = dpd_family_lookup(c->family, &fi);
    if (!known || !fi.poly) snprintf(buf, n, "%s-%d", known ? fi.tag : c->family, c->hidden);
    else if (!strcmp(c->family, "gmp_ls")) snprintf(buf, n, "%s K%d Q%d M%d", fi.tag, c->order, c->memory, c->cross);
    else snprintf(buf, n, "%s K%d Q%d", fi.tag, c->order, c->memory); /* sized by K and Q, not a hidden size */
    return buf;
}

static int report_json(const dpd_model *m, const dpd_session *s, const result *r) {
    const dpd_model_cfg *c = dpd_model_config(m);
    double gf = r->flop / r->sec / 1e9, pk = r->peak > 0 ? r->peak : NAN;
    char pa[64];
    if (r->pa) snprintf(pa, sizeof pa, "%s:%d", dpd_model_config(r->pa)->family, dpd_model_config(r->pa)->hidden);
    json_t *j = json_pack("{s:s, s:i, s:i, s:I, s:i, s:i, s:s, s:s, s:i, s:s, s:i, s:i, s:o, s:o, s:o, s:o, s:o, s:o, "
                          "s:o, s:o}",
                          "model", c->family, "hidden", c->hidden, "layers", c->layers, "params",
                          (json_int_t)dpd_model_nparams(m), "batch", r->B, "frame", r->T, "provider",
                          dpd_session_provider(s), "reason", dpd_session_reason(s), "threads", dpd_session_threads(s),
                          "kernels", dpd_session_kernels(s), "steps", r->steps, "per_call", r->per, "pa",
                          r->pa ? json_string(pa) : json_null(), "ms_per_step", cli_jnum(r->sec * 1e3), "steps_per_s",
                          cli_jnum(1 / r->sec), "mflop_per_step", cli_jnum(r->flop > 0 ? r->flop / 1e6 : NAN), "gflops",
                          cli_jnum(r->flop > 0 ? gf : NAN), "peak_gflops", cli_jnum(pk), "peak_share",
                          cli_jnum(r->flop > 0 ? gf / (pk * dpd_session_threads(s)) : NAN), "loss", cli_jnum(r->loss));
    return cli_json_print(j);
}

static void report_text(const dpd_model *m, const dpd_session *s, const result *r) {
    int th = dpd_session_threads(s);
    char name[64], pan[64], pa[80] = "";
    label(m, name, sizeof name);
    if (r->pa) snprintf(pa, sizeof pa, " through PA %s", label(r->pa, pan, sizeof pan));
    printf("%s (%zu params)%s batch %d frame %d on %s (%s), %d thread%s, %s kernels: %.3f ms/step, %.2f steps/s\n", name,
           dpd_model_nparams(m), pa, r->B, r->T, dpd_session_provider(s), dpd_session_reason(s), th, th == 1 ? "" : "s",
           dpd_session_kernels(s)[0] ? dpd_session_kernels(s) : "-", r->sec * 1e3, 1 / r->sec);
    if (r->flop <= 0) return; /* no count defined for this family (docs/performance.md) */
    double gf = r->flop / r->sec / 1e9;
    printf("%s%s step%s: %.1f MFLOP, %.1f GFLOP/s", r->pa ? "DPD " : "", name, pa, r->flop / 1e6, gf);
    if (r->peak > 0 && th == 1)
        printf(", %.0f %% of one core's measured multiply-add peak (%.1f GFLOP/s, %s)", 100 * gf / r->peak, r->peak,
               dpd_session_kernels(s));
    else if (r->peak > 0)
        printf(", %.0f %% of %d cores' measured multiply-add peak (%d x %.1f GFLOP/s, %s)", 100 * gf / (r->peak * th),
               th, th, r->peak, dpd_session_kernels(s));
    printf("\n");
}

/* `dpd bench peak`: one core's multiply-add peak with the kernels named. */
static int bench_peak(int argc, char **argv) {
    char kernels[16] = "auto";
    int json = 0;
    opt o[] = {
        {"kernels", OPT_STR, kernels, sizeof kernels, "auto, avx512, avx2, sse or ref (measures sse) (auto)", 0},
        {"json", OPT_FLAG, &json, 0, "print one JSON object", 0},
    };
    int r = args_parse(argc, argv, o, sizeof o / sizeof *o, usage);
    if (r) return r == 1 ? 0 : 2;
    dpd_error err = {0};
    double peak;
    if (dpd_cpu_peak_gflops(kernels, &peak, &err)) return cli_fail(&err);
    if (json) return cli_json_print(json_pack("{s:s, s:o}", "kernels", kernels, "peak_gflops", cli_jnum(peak)));
    printf("%s: %.1f GFLOP/s, one core's measured multiply-add peak\n", kernels, peak);
    return 0;
}

int cmd_bench(int argc, char **argv) {
    if (argc >= 1 && cli_is_help(argv[0])) {
        printf("usage: %s\n", usage);
        return 0;
    }
    if (argc >= 1 && !strcmp(argv[0], "peak")) return bench_peak(argc - 1, argv + 1);
    if (argc < 1 || strcmp(argv[0], "train")) {
        fprintf(stderr, "usage: %s\n", usage);
        return 2;
    }
    dpd_model_cfg mc = model_of("gru", 23, 1);
    int B = 64, T = 200, steps = 20, per = 1, json = 0;
    char pa[48] = "";
    cli_exec x = {.threads = 1};
    snprintf(x.provider, sizeof x.provider, "cpu");
    opt o[] = {
        {"model", OPT_STR, mc.family, sizeof mc.family, "model family (gru)", 0},
        {"hidden", OPT_INT, &mc.hidden, 0, "hidden size (23)", 0},
        {"layers", OPT_INT, &mc.layers, 0, "layers (1)", 0},
        {"batch", OPT_INT, &B, 0, "batch (64)", 0},
        {"frame", OPT_INT, &T, 0, "frame length (200)", 0},
        {"steps", OPT_INT, &steps, 0, "timed steps (20), rounded up to whole calls", 0},
        {"per-call", OPT_INT, &per, 0, "steps a train_steps call (1)", 0},
        {"pa", OPT_STR, pa, sizeof pa, "MODEL:HIDDEN: the model as a DPD through a frozen PA (random weights)", 0},
        {"threads", OPT_INT, &x.threads, 0, "worker threads (1)", 0},
        {"kernels", OPT_STR, x.kernels, sizeof x.kernels, "auto, avx512, avx2, sse, eager or ref", 0},
        {"provider", OPT_STR, x.provider, sizeof x.provider, "cpu, cuda, opencl or auto (cpu)", 0},
        {"json", OPT_FLAG, &json, 0, "print one JSON object", 0},
    };
    int r = args_parse(argc - 1, argv + 1, o, sizeof o / sizeof *o, usage);
    if (r) return r == 1 ? 0 : 2;
    if (B < 1 || T < 1 || steps < 1 || per < 1 || x.threads < 1 || (size_t)B * per > (1u << 24)) {
        fprintf(stderr, "dpd: need --batch, --frame, --steps, --per-call and --threads >= 1 (batch x per-call <= 2^24)\n");
        return 2;
    }
    int calls = (steps + per - 1) / per;
    steps = calls * per;
    if ((r = cli_exec_resolve(&x))) return r;
    cli_exec_set(&x, "max_batch", B);
    cli_exec_set(&x, "max_frame", T);
    dpd_error err = {0};
    dpd_model *m = NULL, *pm = NULL;
    dpd_session *s = NULL, *ps = NULL;
    float *xs = NULL, *ys = NULL;
    double *loss = NULL, t0 = 0;
    uint32_t *frames = NULL;
    int rc = 1;
    if (model_ok(&mc, &err) || dpd_model_create(&mc, &m, &err)) goto done;
    dpd_rng rng;
    dpd_rng_seed(&rng, 1);
    dpd_model_init(m, &rng);
    size_t n = (size_t)B * T;
    xs = malloc(n * 2 * sizeof *xs), ys = malloc(n * 2 * sizeof *ys), frames = malloc((size_t)B * per * sizeof *frames);
    if (!xs || !ys || !frames) {
        cli_err(&err, DPD_E_NOMEM, "out of memory for %zu samples", n);
        goto done;
    }
    for (size_t i = 0; i < 2 * n; i++) xs[i] = (float)(0.3 * dpd_rng_normal(&rng)), ys[i] = (float)(0.3 * dpd_rng_normal(&rng));
    for (size_t i = 0; i < (size_t)B * per; i++) frames[i] = (uint32_t)(i % B); /* frame b: samples [b T, (b + 1) T) */
    if (!(loss = malloc((size_t)per * sizeof *loss))) {
        cli_err(&err, DPD_E_NOMEM, "out of memory for %d losses", per);
        goto done;
    }
    if (dpd_session_create(m, x.kv, x.nkv, &s, &err) || (pa[0] && chain_pa(pa, &x, s, &pm, &ps, &err)) ||
        dpd_session_attach(s, DPD_TRAIN, xs, ys, n, &err))
        goto done;
    for (int k = per > 1 ? -1 : -2; k < calls; k++) { /* a warm-up call (two of one step) */
        if (k == 0) t0 = now();
        if (dpd_session_train_steps(s, frames, (size_t)B * per, B, T, T, 5e-3, 0.01, 200, loss, &err)) goto done;
    }
    result res = {(now() - t0) / steps, dpd_session_step_flops(s, B, T), 0, loss[per - 1], steps, per, B, T, pm};
    /* after the steps, which its load would otherwise precede */
    if (!strcmp(dpd_session_provider(s), "cpu") && dpd_cpu_peak_gflops(dpd_session_kernels(s), &res.peak, &err))
        goto done;
    if (json) rc = report_json(m, s, &res);
    else report_text(m, s, &res), rc = 0;
done:
    if (rc && err.status) rc = cli_fail(&err);
    dpd_session_free(s);
    dpd_session_free(ps);
    dpd_model_free(m);
    dpd_model_free(pm);
    free(xs), free(ys), free(frames), free(loss);
    return rc;
}
