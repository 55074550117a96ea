/* run: `dpd run --model CKPT --input FILE --output FILE` — a trained model applied to a recording
 * in CSV (columns I,Q found by name) or raw little-endian interleaved float32 (.cf32). The output
 * has the input's format and holds the model's output where the input had its signal: CSV
 * I,Q (the output) then I_in,Q_in (the input), .cf32 the output alone; so `dpd run` and
 * `dpd eval` read it back either way. It appears whole or not at all. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "args.h"
#include "cli.h"

static int is_cf32(const char *path) { /* the formats dpd_recording_read and _write know */
    size_t n = strlen(path);
    return n > 5 && !strcmp(path + n - 5, ".cf32");
}

int cmd_run(int argc, char **argv) {
    char model[4096] = "", in[4096] = "", out[4096] = "";
    int exact = 0;
    cli_exec x = {0};
    dpd_apply_cfg ac;
    dpd_apply_defaults(&ac);
    opt o[] = {
        {"model", OPT_STR, model, sizeof model, "checkpoint (.safetensors) or run directory of a DPD or PA model (required)", 0},
        {"input", OPT_STR, in, sizeof in, "recording: CSV with I,Q columns, or raw float32 IQ (.cf32) (required)", 0},
        {"output", OPT_STR, out, sizeof out, "result, in the input's format (required)", 0},
        {"exact", OPT_FLAG, &exact, 0, "the whole recording as one sequence from zero state (OpenDPD's run_dpd)", 0},
        {"section", OPT_INT, &ac.section, 0, "output samples per section (4096)", 0},
        {"warmup", OPT_INT, &ac.warmup, 0, "samples run before each section and discarded (1024)", 0},
        {"lookahead", OPT_INT, &ac.lookahead, 0, "samples run after each section and discarded (32)", 0},
        {"batch", OPT_INT, &ac.batch, 0, "sections per forward call (64)", 0},
        CLI_EXEC_OPTS(x),
    };
    int r = args_parse(argc, argv, o, sizeof o / sizeof *o,
                       "dpd run --model CKPT|RUN_DIR --input FILE --output FILE [--exact | --section N --warmup N]\n\n"
                       "A CSV output has the columns I,Q (the model's output, e.g. the predistorted signal)\n"
                       "then I_in,Q_in (the input); a .cf32 output holds the model's output alone. Both\n"
                       "read back as the I,Q signal, so run -> run and run -> eval chain in either format.\n"
                       "A run directory gives its best.safetensors.");
    if (r) return r == 1 ? 0 : 2;
    if (!model[0] || !in[0] || !out[0]) {
        fprintf(stderr, "dpd: run needs --model, --input and --output\n");
        return 2;
    }
    if (is_cf32(in) != is_cf32(out)) {
        fprintf(stderr, "dpd: --output must have the input's format (%s)\n", is_cf32(in) ? ".cf32" : "CSV");
        return 2;
    }
    if (!exact && (ac.section < 1 || ac.warmup < 0 || ac.lookahead < 0 || ac.batch < 1)) {
        fprintf(stderr, "dpd: need --section >= 1, --warmup >= 0, --lookahead >= 0 and --batch >= 1\n");
        return 2;
    }
    ac.exact = exact;
    if ((r = cli_exec_resolve(&x))) return r;
    dpd_error err = {0};
    char path[4096];
    dpd_model *m = NULL;
    dpd_session *s = NULL;
    double *iq = NULL;
    float *xs = NULL, *y = NULL;
    size_t n = 0;
    int rc = 1;
    if (dpd_ckpt_resolve(model, 0, path, sizeof path, &err) || dpd_ckpt_load(path, &m, &err)) {
        if (!err.field[0]) snprintf(err.field, sizeof err.field, "model");
        goto fail;
    }
    if (dpd_recording_read(in, &iq, &n, &err)) goto fail;
    size_t win = (size_t)ac.warmup + ac.section + ac.lookahead;
    size_t L = exact || n <= win ? n : win;
    if (L > 0x7fffffff) {
        cli_err(&err, DPD_E_INVAL, "recording too long for --exact (%zu samples)", n);
        goto fail;
    }
    /* reserve what apply will ask for: one whole sequence, or batches of windows (never more
     * windows than the recording has) */
    size_t sections = (n + (size_t)ac.section - 1) / (size_t)ac.section;
    cli_exec_set(&x, "max_batch", L == n ? 1 : (long)(sections < (size_t)ac.batch ? sections : (size_t)ac.batch));
    cli_exec_set(&x, "max_frame", (long)L);
    xs = malloc(n * 2 * sizeof *xs);
    y = malloc(n * 2 * sizeof *y);
    if (!xs || !y) {
        cli_err(&err, DPD_E_NOMEM, "out of memory for %zu samples", n);
        goto fail;
    }
    for (size_t i = 0; i < 2 * n; i++) xs[i] = (float)iq[i];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (dpd_session_create(m, x.kv, x.nkv, &s, &err) || dpd_apply(s, xs, n, y, &ac, &err)) goto fail;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double sec = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    if (dpd_recording_write(out, y, iq, n, &err)) goto fail;
    int th = dpd_session_threads(s);
    const char *kern = dpd_session_kernels(s);
    fprintf(stderr, "dpd: %zu samples, %s, %s (%s)", n, L == n ? "exact" : "sectioned", dpd_session_provider(s),
            dpd_session_reason(s));
    if (th) fprintf(stderr, ", %d thread%s", th, th > 1 ? "s" : "");
    if (kern[0]) fprintf(stderr, ", %s kernels", kern);
    fprintf(stderr, ", %.3f s (%.3g samples/s) -> %s\n", sec, n / (sec > 0 ? sec : 1e-9), out);
    rc = 0;
fail:
    if (rc) rc = cli_fail(&err);
    dpd_session_free(s);
    dpd_model_free(m);
    free(iq), free(xs), free(y);
    return rc;
}
