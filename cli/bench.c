/* bench: `dpd bench train --model M --hidden H --batch B --frame T [--steps N] [--provider P]
 * [--json]` — times full training steps (forward, loss, backward, clip, AdamW) through a
 * provider's session on random data, batch upload and loss readback included. Never asserts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "args.h"
#include "cli.h"
#include "provider.h"

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

int cmd_bench(int argc, char **argv) {
    if (argc < 1 || strcmp(argv[0], "train")) {
        fprintf(stderr, "usage: dpd bench train [--model gru --hidden 23 --batch 64 --frame 200 --steps 20 --json]\n");
        return 2;
    }
    dpd_model_cfg mc = {"gru", 23, 1};
    int B = 64, T = 200, steps = 20, json = 0, threads = 1;
    char kernels[16] = "", want[16] = "cpu";
    opt o[] = {
        {"model", OPT_STR, mc.family, sizeof mc.family, "model family (gru)", 0},
        {"hidden", OPT_INT, &mc.hidden, 0, "hidden size (23)", 0},
        {"layers", OPT_INT, &mc.layers, 0, "layers (1)", 0},
        {"batch", OPT_INT, &B, 0, "batch (64)", 0},
        {"frame", OPT_INT, &T, 0, "frame length (200)", 0},
        {"steps", OPT_INT, &steps, 0, "timed steps (20)", 0},
        {"threads", OPT_INT, &threads, 0, "worker threads (1)", 0},
        {"kernels", OPT_STR, kernels, sizeof kernels, "auto, avx512, avx2, sse or ref", 0},
        {"provider", OPT_STR, want, sizeof want, "cpu, cuda or auto (cpu)", 0},
        {"json", OPT_FLAG, &json, 0, "print one JSON object", 0},
    };
    int r = args_parse(argc - 1, argv + 1, o, sizeof o / sizeof *o, "dpd bench train [options]");
    if (r) return r == 1 ? 0 : 2;
    if (B < 1 || T < 1 || steps < 1 || threads < 1) {
        fprintf(stderr, "dpd: need --batch, --frame, --steps and --threads >= 1\n");
        return 2;
    }
    if (!cli_compute(threads, "", kernels)) return 2;
    dpd_error err;
    dpd_model *m;
    const dpd_provider *p;
    char reason[512], msg[512] = "";
    if (dpd_provider_select(want, &p, reason, sizeof reason, &err) || dpd_model_create(&mc, &m, &err))
        return cli_fail(&err);
    if (!p->i->train_step || !p->i->supports(p->ctx, &mc)) {
        fprintf(stderr, "dpd: %s cannot train %s models\n", p->i->name, mc.family);
        return 1;
    }
    dpd_rng rng;
    dpd_rng_seed(&rng, 1);
    dpd_model_init(m, &rng);
    size_t n = (size_t)B * T * 2, np = dpd_model_nparams(m);
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    void *sess = NULL;
    if (!x || !y) {
        fprintf(stderr, "dpd: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < n; i++) x[i] = (float)(0.3 * dpd_rng_normal(&rng)), y[i] = (float)(0.3 * dpd_rng_normal(&rng));
    dpd_status st = p->i->session_create(p->ctx, 0, &mc, B, T, &sess, msg, sizeof msg);
    if (!st) st = p->i->upload(sess, dpd_model_params(m), msg, sizeof msg);
    double loss, t0 = 0;
    for (int s = -2; s < steps && !st; s++) { /* two warm-up steps */
        if (s == 0) t0 = now();
        st = p->i->train_step(sess, x, y, B, T, 200, &loss, msg, sizeof msg);
        if (!st) st = p->i->optimizer_step(sess, 5e-3, 0.01, msg, sizeof msg);
    }
    if (st) {
        fprintf(stderr, "dpd: %s: %s\n", p->i->name, msg);
        return 1;
    }
    double sec = (now() - t0) / steps;
    double flop = step_flops(np, B, T);
    if (json)
        printf("{\"model\":\"%s\",\"hidden\":%d,\"layers\":%d,\"params\":%zu,\"batch\":%d,\"frame\":%d,"
               "\"provider\":\"%s\",\"threads\":%d,\"kernels\":\"%s\",\"steps\":%d,\"ms_per_step\":%.4f,\"steps_per_s\":%.3f,"
               "\"mflop_per_step\":%.2f,\"gflops\":%.3f}\n",
               mc.family, mc.hidden, mc.layers, np, B, T, p->i->name, threads, dpd_kernels_name(), steps, sec * 1e3, 1 / sec,
               flop / 1e6, flop / sec / 1e9);
    else
        printf("%s-%d (%zu params) batch %d frame %d on %s (%s), %d threads, %s kernels: %.3f ms/step, %.2f steps/s, "
               "%.1f MFLOP/step, %.3f GFLOP/s\n",
               mc.family, mc.hidden, np, B, T, p->i->name, reason, threads, dpd_kernels_name(), sec * 1e3, 1 / sec, flop / 1e6, flop / sec / 1e9);
    p->i->session_free(sess);
    free(x), free(y);
    dpd_model_free(m);
    return 0;
}
