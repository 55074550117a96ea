/* bench: `dpd bench train --model M --hidden H --batch B --frame T [--steps N] [--per-call K]
 * [--provider P] [--json]` — times whole training steps (gather, forward, loss, backward, clip,
 * AdamW) through a session on random data resident in it, loss readback included: K steps a
 * dpd_session_train_steps call (1; a device provider records and replays chunks of steps within
 * a call), B frames of length T at stride T. Never asserts. */
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

/* FLOP per training step, estimated as 6 per parameter per sample-step: every weight is used
 * once per sample and step forward (a multiply-add, 2 FLOP) and twice backward (weight and input
 * gradients). Exact for the matrix products of the recurrent families (GRU-23: 147 MFLOP at
 * batch 64, frame 200); elementwise work is not counted. */
static double step_flops(size_t params, int B, int T) { return 6.0 * (double)params * B * T; }

static const char *const usage =
    "dpd bench train [--model gru --hidden 23 --layers 1 --batch 64 --frame 200 --steps 20 --per-call 1] [--json]\n\n"
    "Times training steps through a session (a warm-up call of --per-call steps first, at least two)\n"
    "on random data, and reports the session's provider, threads and kernels.";

int cmd_bench(int argc, char **argv) {
    if (argc >= 1 && cli_is_help(argv[0])) {
        printf("usage: %s\n", usage);
        return 0;
    }
    if (argc < 1 || strcmp(argv[0], "train")) {
        fprintf(stderr, "usage: %s\n", usage);
        return 2;
    }
    dpd_model_cfg mc = {.family = "gru", .hidden = 23, .layers = 1};
    int B = 64, T = 200, steps = 20, per = 1, json = 0;
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
    dpd_model *m = NULL;
    dpd_session *s = NULL;
    float *xs = NULL, *ys = NULL;
    double *loss = NULL, t0 = 0;
    uint32_t *frames = NULL;
    int rc = 1;
    if (dpd_model_create(&mc, &m, &err)) goto done;
    dpd_rng rng;
    dpd_rng_seed(&rng, 1);
    dpd_model_init(m, &rng);
    size_t n = (size_t)B * T, np = dpd_model_nparams(m);
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
    if (dpd_session_create(m, x.kv, x.nkv, &s, &err) || dpd_session_attach(s, DPD_TRAIN, xs, ys, n, &err)) goto done;
    for (int k = per > 1 ? -1 : -2; k < calls; k++) { /* a warm-up call (two of one step) */
        if (k == 0) t0 = now();
        if (dpd_session_train_steps(s, frames, (size_t)B * per, B, T, T, 5e-3, 0.01, 200, loss, &err)) goto done;
    }
    double sec = (now() - t0) / steps, flop = step_flops(np, B, T);
    const dpd_model_cfg *c = dpd_model_config(m);
    if (json) {
        json_t *j = json_pack("{s:s, s:i, s:i, s:I, s:i, s:i, s:s, s:s, s:i, s:s, s:i, s:i, s:o, s:o, s:o, s:o, s:o}", "model",
                              c->family, "hidden", c->hidden, "layers", c->layers, "params", (json_int_t)np, "batch", B,
                              "frame", T, "provider", dpd_session_provider(s), "reason", dpd_session_reason(s), "threads",
                              dpd_session_threads(s), "kernels", dpd_session_kernels(s), "steps", steps, "per_call", per, "ms_per_step",
                              cli_jnum(sec * 1e3), "steps_per_s", cli_jnum(1 / sec), "mflop_per_step", cli_jnum(flop / 1e6),
                              "gflops", cli_jnum(flop / sec / 1e9), "loss", cli_jnum(loss[per - 1]));
        rc = cli_json_print(j);
    } else {
        printf("%s-%d (%zu params) batch %d frame %d on %s (%s), %d threads, %s kernels: %.3f ms/step, %.2f steps/s, "
               "%.1f MFLOP/step, %.3f GFLOP/s\n",
               c->family, c->hidden, np, B, T, dpd_session_provider(s), dpd_session_reason(s), dpd_session_threads(s),
               dpd_session_kernels(s)[0] ? dpd_session_kernels(s) : "-", sec * 1e3, 1 / sec, flop / 1e6, flop / sec / 1e9);
        rc = 0;
    }
done:
    if (rc && err.status) rc = cli_fail(&err);
    dpd_session_free(s);
    dpd_model_free(m);
    free(xs), free(ys), free(frames), free(loss);
    return rc;
}
