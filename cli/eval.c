/* eval: `dpd eval --data DIR --split val|test [--model CKPT] [--json]` — the measured output's
 * ACLR, the linear-gain baseline g x against the measured output, and a model's prediction.
 * With --pa PA --model DPD: the cascade PA(DPD(x)) against g x next to the PA driven by x. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "args.h"
#include "cli.h"
#include "exec.h"
#include "status.h"

/* A checkpoint path, or a run directory's pa.safetensors (when want_pa and present) or
 * best.safetensors. */
static void resolve(char *path, size_t n, int want_pa) {
    struct stat st;
    if (stat(path, &st) || !S_ISDIR(st.st_mode)) return;
    char p[4200];
    snprintf(p, sizeof p, "%s/pa.safetensors", path);
    if (!want_pa || stat(p, &st)) snprintf(p, sizeof p, "%s/best.safetensors", path);
    snprintf(path, n, "%s", p);
}

static const char *provider = "";  /* --provider */
static char chosen[600];           /* the provider that ran, and why */

/* Model prediction for segments x (S, N, 2) on the chosen provider, in batches of up to 64. */
static dpd_status predict(dpd_model *m, const float *x, int S, int N, float *y, dpd_error *err) {
    dpd_exec *e;
    char reason[512];
    dpd_status s = dpd_exec_open(provider, m, S < 64 ? S : 64, N, &e, reason, sizeof reason, err);
    if (s) return s;
    snprintf(chosen, sizeof chosen, "%s (%s)", dpd_exec_provider(e), reason);
    s = dpd_exec_forward(e, x, S, N, y, err);
    dpd_exec_close(e);
    return s;
}

int cmd_eval(int argc, char **argv) {
    char data[4096] = "", split[16] = "test", model[4096] = "", pa[4096] = "", prov[16] = "";
    int json = 0, legacy = 0, threads = 0;
    double evm_fs = 0;
    char level[16] = "", kernels[16] = "";
    opt o[] = {
        CLI_COMPUTE_OPTS(threads, level, kernels),
        {"provider", OPT_STR, prov, sizeof prov, "auto, cpu or cuda (default: the settings)", 0},
        {"data", OPT_STR, data, sizeof data, "dataset directory (required)", 0},
        {"split", OPT_STR, split, sizeof split, "val or test (test)", 0},
        {"model", OPT_STR, model, sizeof model, "a checkpoint (or run directory) to score", 0},
        {"pa", OPT_STR, pa, sizeof pa, "a PA checkpoint or run directory: score PA(model(x)) against g x", 0},
        {"json", OPT_FLAG, &json, 0, "print one JSON object", 0},
        {"evm-fs", OPT_DBL, &evm_fs, 0, "EVM sample rate, Hz (default: the dataset's fs)", 0},
        {"legacy-evm", OPT_FLAG, &legacy, 0, "EVM at 800 MHz, as OpenDPD v2.0.0 logs it", 0},
    };
    int r = args_parse(argc, argv, o, sizeof o / sizeof *o,
                       "dpd eval --data DIR [--split val|test] [--model CKPT] [--json]");
    if (r) return r == 1 ? 0 : 2;
    int k = !strcmp(split, "val") ? DPD_VAL : !strcmp(split, "test") ? DPD_TEST : -1;
    if (!data[0] || k < 0 || (pa[0] && !model[0])) {
        fprintf(stderr, "dpd: eval needs --data DIR and --split val|test (and --model DPD with --pa)\n");
        return 2;
    }
    if (!(threads = cli_compute(threads, level, kernels))) return 2;
    provider = prov;
    resolve(model, sizeof model, 0);
    resolve(pa, sizeof pa, 1);
    if (legacy) evm_fs = 800e6;
    dpd_error err = {0};
    dpd_dataset ds;
    dpd_model *m = NULL, *pm = NULL;
    dpd_pool *pool = NULL;
    float *x = NULL, *y = NULL, *p = NULL, *u = NULL;
    int S, N, rc = 1;
    if (dpd_dataset_load(data, 1u << k, 1u << DPD_TRAIN, &ds, &err)) return cli_fail(&err);
    const dpd_spec *sp = &ds.spec;
    const dpd_split *d = &ds.split[k];
    double g = dpd_dataset_gain(&ds);
    dpd_metrics out = {0}, lin = {0}, mod = {0}, nod = {0};
    N = sp->nperseg;
    if (dpd_pool_create(threads, &pool, &err) || (model[0] && dpd_ckpt_load(model, &m, &err))) goto done;
    if (m) dpd_model_set_pool(m, pool);
    if (pa[0]) { /* DPD view: targets g x, reference §5 */
        if (!g) {
            dpd_fail(&err, DPD_E_INVAL, "%s: the train split is needed for the target gain g", data);
            goto done;
        }
        if (dpd_ckpt_load(pa, &pm, &err)) goto done;
        dpd_model_set_pool(pm, pool);
        if (dpd_segments(d->x, d->n, N, g, &y, &S, &err) ||
            dpd_segments(d->x, d->n, N, 1.0, &x, &S, &err))
            goto done;
        p = malloc((size_t)S * N * 2 * sizeof *p);
        u = malloc((size_t)S * N * 2 * sizeof *u);
        if (!p || !u || predict(pm, x, S, N, p, &err) || dpd_metrics_compute(p, y, S, N, sp, evm_fs, &nod, &err) ||
            predict(m, x, S, N, u, &err) || predict(pm, u, S, N, p, &err) ||
            dpd_metrics_compute(p, y, S, N, sp, evm_fs, &mod, &err))
            goto done;
        if (json) {
            printf("{\"dataset\":%s,\"split\":\"%s\",\"gain\":%.9g,\"no_dpd\":", cli_q(ds.name), split, g);
            cli_metrics_json(stdout, &nod);
            printf(",\"dpd\":");
            cli_metrics_json(stdout, &mod);
            printf("}\n");
        } else {
            printf("%s %s: PA(DPD(x)) against g x, g = %.6f\n", ds.name, split, g);
            cli_metrics_header(stdout);
            cli_metrics_row(stdout, "no DPD", &nod);
            cli_metrics_row(stdout, "DPD", &mod);
            printf("ACLR_AVG improvement: %.2f dB\n", nod.aclr_avg - mod.aclr_avg);
        }
        rc = 0;
        goto done;
    }
    if (dpd_segments(d->y, d->n, N, 1.0, &y, &S, &err) ||
        dpd_aclr(y, S, N, sp->fs, sp->bw_main, sp->n_sub, &out.aclr_l, &out.aclr_r, &err))
        goto done;
    out.aclr_avg = (out.aclr_l + out.aclr_r) / 2;
    if (g > 0 && (dpd_segments(d->x, d->n, N, g, &x, &S, &err) ||
                  dpd_metrics_compute(x, y, S, N, sp, evm_fs, &lin, &err)))
        goto done;
    if (m) {
        free(x);
        p = malloc((size_t)S * N * 2 * sizeof *p);
        if (dpd_segments(d->x, d->n, N, 1.0, &x, &S, &err) || !p ||
            predict(m, x, S, N, p, &err) || dpd_metrics_compute(p, y, S, N, sp, evm_fs, &mod, &err))
            goto done;
    }
    if (ds.warning[0]) fprintf(stderr, "dpd: warning: %s\n", ds.warning);
    if (!g) fprintf(stderr, "dpd: note: %s has no train split, so the linear-gain baseline is omitted\n", data);
    if (json) {
        printf("{\"dataset\":%s,\"split\":\"%s\",\"samples\":%zu,\"segments\":%d,\"gain\":%.9g,"
               "\"output_aclr\":{\"L\":%.6f,\"R\":%.6f,\"AVG\":%.6f}",
               cli_q(ds.name), split, d->n, S, g, out.aclr_l, out.aclr_r, out.aclr_avg);
        printf(",\"linear_gain\":");
        if (g > 0) cli_metrics_json(stdout, &lin);
        else printf("null");
        if (m) {
            printf(",\"model\":");
            cli_metrics_json(stdout, &mod);
            printf(",\"provider\":%s", cli_q(chosen));
        }
        printf("}\n");
    } else {
        printf("%s %s: %zu samples, %d segments of %d, fs %.6g Hz, %d x %.6g Hz channel\n", ds.name,
               split, d->n, S, N, sp->fs, sp->n_sub, sp->bw_main / sp->n_sub);
        printf("measured output ACLR: L %.3f  R %.3f  AVG %.3f dBc\n", out.aclr_l, out.aclr_r, out.aclr_avg);
        cli_metrics_header(stdout);
        if (g > 0) {
            char name[32];
            snprintf(name, sizeof name, "linear g=%.4f", g);
            cli_metrics_row(stdout, name, &lin);
        }
        if (m) cli_metrics_row(stdout, "model", &mod);
    }
    rc = 0;
done:
    if (rc && err.msg[0]) cli_fail(&err);
    else if (rc) fprintf(stderr, "dpd: out of memory\n");
    free(x), free(y), free(p), free(u);
    dpd_model_free(m);
    dpd_model_free(pm);
    dpd_pool_free(pool);
    dpd_dataset_free(&ds);
    return rc;
}

/* `dpd parity --model CKPT --data DIR [--providers cpu,cuda] [--split val|test] [--json]`: the same
 * evaluation on each provider, and how far each is from the first. */
int cmd_parity(int argc, char **argv) {
    char data[4096] = "", model[4096] = "", list[64] = "cpu,cuda", split[16] = "test";
    int json = 0;
    opt o[] = {
        {"model", OPT_STR, model, sizeof model, "a checkpoint or run directory (required)", 0},
        {"data", OPT_STR, data, sizeof data, "dataset directory (required)", 0},
        {"providers", OPT_STR, list, sizeof list, "comma-separated providers, the first is the reference (cpu,cuda)", 0},
        {"split", OPT_STR, split, sizeof split, "val or test (test)", 0},
        {"json", OPT_FLAG, &json, 0, "print one JSON object", 0},
    };
    int r = args_parse(argc, argv, o, sizeof o / sizeof *o, "dpd parity --model CKPT --data DIR [--providers cpu,cuda]");
    if (r) return r == 1 ? 0 : 2;
    int k = !strcmp(split, "val") ? DPD_VAL : !strcmp(split, "test") ? DPD_TEST : -1;
    if (!model[0] || !data[0] || k < 0) {
        fprintf(stderr, "dpd: parity needs --model, --data and --split val|test\n");
        return 2;
    }
    resolve(model, sizeof model, 0);
    dpd_error err = {0};
    dpd_dataset ds;
    dpd_model *m = NULL;
    float *x = NULL, *y = NULL, *ref = NULL, *out = NULL;
    int S, N, rc = 1, np = 0;
    if (dpd_dataset_load(data, 1u << k, 0, &ds, &err)) return cli_fail(&err);
    N = ds.spec.nperseg;
    dpd_metrics mref = {0}, mm;
    if (dpd_ckpt_load(model, &m, &err) || dpd_segments(ds.split[k].x, ds.split[k].n, N, 1.0, &x, &S, &err) ||
        dpd_segments(ds.split[k].y, ds.split[k].n, N, 1.0, &y, &S, &err))
        goto done;
    ref = malloc((size_t)S * N * 2 * sizeof *ref), out = malloc((size_t)S * N * 2 * sizeof *out);
    if (json) printf("{\"model\":%s,\"dataset\":%s,\"split\":\"%s\",\"providers\":[", cli_q(model), cli_q(ds.name), split);
    for (char *save, *p = strtok_r(list, ",", &save); p; p = strtok_r(NULL, ",", &save), np++) {
        provider = p;
        float *dst = np ? out : ref;
        if (predict(m, x, S, N, dst, &err) || dpd_metrics_compute(dst, y, S, N, &ds.spec, 0, np ? &mm : &mref, &err)) {
            if (json) printf("%s{\"provider\":%s,\"error\":%s}", np ? "," : "", cli_q(p), cli_q(err.msg));
            else printf("%-6s unavailable: %s\n", p, err.msg);
            if (!np) goto done;
            continue;
        }
        double e = 0, mx = 0;
        for (size_t i = 0; np && i < (size_t)S * N * 2; i++)
            e = fmax(e, fabs((double)out[i] - ref[i])), mx = fmax(mx, fabs((double)ref[i]));
        const dpd_metrics *q = np ? &mm : &mref;
        if (json) {
            printf("%s{\"provider\":%s,\"chosen\":%s,\"max_abs\":%.3g,\"max_rel\":%.3g,\"metrics\":", np ? "," : "",
                   cli_q(p), cli_q(chosen), e, mx > 0 ? e / mx : e);
            cli_metrics_json(stdout, q);
            printf(",\"metric_diff\":{\"NMSE\":%.3g,\"EVM\":%.3g,\"ACLR_AVG\":%.3g}}", q->nmse - mref.nmse, q->evm - mref.evm,
                   q->aclr_avg - mref.aclr_avg);
        } else {
            printf("%-6s %s\n       NMSE %.4f EVM %.4f ACLR %.4f", p, chosen, q->nmse, q->evm, q->aclr_avg);
            if (np) printf("  max |dy| %.3g (%.3g of max), dNMSE %.2e dB, dACLR %.2e dB", e, mx > 0 ? e / mx : e,
                           q->nmse - mref.nmse, q->aclr_avg - mref.aclr_avg);
            printf("\n");
        }
    }
    if (json) printf("]}\n");
    rc = 0;
done:
    if (rc) cli_fail(&err);
    free(x), free(y), free(ref), free(out);
    dpd_model_free(m);
    dpd_dataset_free(&ds);
    return rc;
}
