/* run: `dpd run --model CKPT --input FILE --output FILE` — a trained model applied to a recording
 * in OpenDPD CSV (I,Q; output I,Q,I_dpd,Q_dpd as OpenDPD's run_dpd) or raw little-endian
 * interleaved float32 (.cf32, output .cf32). The output appears whole or not at all. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "args.h"
#include "cli.h"
#include "dataset.h"
#include "exec.h"
#include "file.h"
#include "status.h"

static int is_cf32(const char *path) {
    size_t n = strlen(path);
    return n > 5 && !strcmp(path + n - 5, ".cf32");
}

/* Reads the recording as doubles (n, 2); for .cf32 the float values widened. */
static dpd_status read_input(const char *path, double **iq, size_t *n, dpd_error *err) {
    static const char *const names[2] = {"I", "Q"};
    if (!is_cf32(path)) return dpd_csv_read(path, 2, names, iq, n, err);
    char *buf;
    size_t len;
    dpd_status s = dpd_file_read(path, &buf, &len, err);
    if (s) return s;
    if (len == 0 || len % 8) {
        free(buf);
        return dpd_fail(err, DPD_E_FORMAT, "%s: %zu bytes is %s I/Q float32 pairs (8 bytes each)", path, len,
                        len ? "not a whole number of" : "empty: no");
    }
    *n = len / 8;
    *iq = malloc(*n * 2 * sizeof **iq);
    if (!*iq) {
        free(buf);
        return dpd_fail(err, DPD_E_NOMEM, "%s: out of memory", path);
    }
    for (size_t i = 0; i < 2 * *n; i++) {
        float v;
        memcpy(&v, buf + 4 * i, 4);
        if (!isfinite(v)) {
            free(buf), free(*iq);
            return dpd_fail(err, DPD_E_FORMAT, "%s: sample %zu is not finite", path, i / 2);
        }
        (*iq)[i] = v;
    }
    free(buf);
    return DPD_OK;
}

/* Shortest of %.15g / %.17g that reads back to v. */
static void put_double(FILE *f, double v) {
    char b[40];
    snprintf(b, sizeof b, "%.15g", v);
    if (strtod(b, NULL) != v) snprintf(b, sizeof b, "%.17g", v);
    fputs(b, f);
}

static dpd_status write_output(const char *path, const double *iq, const float *y, size_t n,
                               dpd_error *err) {
    dpd_afile a;
    dpd_status s = dpd_afile_open(&a, path, err);
    if (s) return s;
    if (is_cf32(path)) {
        if (fwrite(y, sizeof *y, 2 * n, a.f) != 2 * n) {
            dpd_afile_abort(&a);
            return dpd_fail(err, DPD_E_IO, "%s: write failed", path);
        }
    } else {
        fputs("I,Q,I_dpd,Q_dpd\n", a.f);
        for (size_t i = 0; i < n; i++) {
            put_double(a.f, iq[2 * i]);
            fputc(',', a.f);
            put_double(a.f, iq[2 * i + 1]);
            fprintf(a.f, ",%.9g,%.9g\n", y[2 * i], y[2 * i + 1]);
        }
    }
    return dpd_afile_commit(&a, err);
}

static dpd_status exec_fwd(void *ctx, const float *x, int B, int T, float *y, dpd_error *err) {
    return dpd_exec_forward(ctx, x, B, T, y, err);
}

int cmd_run(int argc, char **argv) {
    char model[4096] = "", in[4096] = "", out[4096] = "";
    int exact = 0, threads = 0;
    char level[16] = "", kernels[16] = "", prov[16] = "";
    dpd_apply_cfg ac;
    dpd_apply_defaults(&ac);
    opt o[] = {
        {"model", OPT_STR, model, sizeof model, "checkpoint (.safetensors) of a DPD or PA model (required)", 0},
        {"input", OPT_STR, in, sizeof in, "recording: CSV with I,Q columns, or raw float32 IQ (.cf32) (required)", 0},
        {"output", OPT_STR, out, sizeof out, "result, in the input's format (required)", 0},
        {"exact", OPT_FLAG, &exact, 0, "the whole recording as one sequence from zero state (OpenDPD's run_dpd)", 0},
        {"section", OPT_INT, &ac.section, 0, "output samples per section (4096)", 0},
        {"warmup", OPT_INT, &ac.warmup, 0, "samples run before each section and discarded (1024)", 0},
        {"lookahead", OPT_INT, &ac.lookahead, 0, "samples run after each section and discarded (32)", 0},
        {"batch", OPT_INT, &ac.batch, 0, "sections per forward call (64)", 0},
        CLI_COMPUTE_OPTS(threads, level, kernels),
        {"provider", OPT_STR, prov, sizeof prov, "auto, cpu or cuda (default: the settings)", 0},
    };
    int r = args_parse(argc, argv, o, sizeof o / sizeof *o,
                       "dpd run --model CKPT --input FILE --output FILE [--exact | --section N --warmup N]");
    if (r) return r == 1 ? 0 : 2;
    if (!model[0] || !in[0] || !out[0]) {
        fprintf(stderr, "dpd: run needs --model, --input and --output\n");
        return 2;
    }
    if (is_cf32(in) != is_cf32(out)) {
        fprintf(stderr, "dpd: --output must have the input's format (%s)\n", is_cf32(in) ? ".cf32" : "CSV");
        return 2;
    }
    ac.exact = exact;
    if (!(threads = cli_compute(threads, level, kernels))) return 2;
    dpd_error err = {0};
    dpd_model *m = NULL;
    dpd_exec *ex = NULL;
    dpd_pool *pool = NULL;
    double *iq = NULL;
    float *x = NULL, *y = NULL;
    size_t n = 0;
    int rc = 1;
    if (dpd_pool_create(threads, &pool, &err) || dpd_ckpt_load(model, &m, &err) || read_input(in, &iq, &n, &err))
        goto fail;
    dpd_model_set_pool(m, pool);
    x = malloc(n * 2 * sizeof *x);
    y = malloc(n * 2 * sizeof *y);
    if (!x || !y) {
        dpd_fail(&err, DPD_E_NOMEM, "out of memory for %zu samples", n);
        goto fail;
    }
    for (size_t i = 0; i < 2 * n; i++) x[i] = (float)iq[i];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    size_t L = exact || n <= (size_t)ac.warmup + ac.section + ac.lookahead ? n : (size_t)ac.warmup + ac.section + ac.lookahead;
    char reason[512];
    if (L > 0x7fffffff) {
        dpd_fail(&err, DPD_E_INVAL, "recording too long for --exact (%zu samples)", n);
        goto fail;
    }
    if (dpd_exec_open(prov, m, L == n ? 1 : ac.batch, (int)L, &ex, reason, sizeof reason, &err) ||
        dpd_apply_with(exec_fwd, ex, x, n, y, &ac, &err))
        goto fail;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double sec = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    if (write_output(out, iq, y, n, &err)) goto fail;
    fprintf(stderr, "dpd: %zu samples, %s, %s, %d thread%s, %.3f s (%.3g samples/s) -> %s\n", n,
            L == n ? "exact" : "sectioned", reason, threads, threads > 1 ? "s" : "", sec,
            n / (sec > 0 ? sec : 1e-9), out);
    rc = 0;
fail:
    if (rc) cli_fail(&err);
    dpd_exec_close(ex);
    dpd_model_free(m);
    dpd_pool_free(pool);
    free(iq), free(x), free(y);
    return rc;
}
