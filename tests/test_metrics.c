/* test_metrics: NMSE, EVM and ACLR against OpenDPD's values (fixtures metrics_*.json): band
 * indices exactly, every metric within 1e-3 dB (the issue's bound; observed deviations are
 * printed). The dataset cases read ../shared/data and skip when it is absent. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dpd/dpd.h"

#define TOL_DB 1e-3

static double num(json_t *o, const char *path) { /* "a.b.c" */
    char buf[256], *save, *k;
    snprintf(buf, sizeof buf, "%s", path);
    for (k = strtok_r(buf, ".", &save); k && o; k = strtok_r(NULL, ".", &save)) o = json_object_get(o, k);
    if (!json_is_number(o)) {
        fprintf(stderr, "fixture lacks %s\n", path);
        return NAN;
    }
    return json_number_value(o);
}

static double worst; /* largest deviation seen, printed at the end */

static void near(const char *what, double got, double want, double tol) {
    if (fabs(got - want) > worst) worst = fabs(got - want);
    CHECK(fabs(got - want) <= tol, "%s: got %.7f, want %.7f (|diff| %.2e > %.0e)", what, got, want,
          fabs(got - want), tol);
}

static void band(const char *what, json_t *b, int N, double fs, double bw, int nsub) {
    dpd_band got;
    dpd_error err;
    CHECK(dpd_band_of(N, fs, bw, nsub, &got, &err) == DPD_OK, "%s: %s", what, err.msg);
    CHECK(got.left == (int)num(b, "index_left") && got.right == (int)num(b, "index_right") &&
              got.len == (int)num(b, "sub_ch_index_len"),
          "%s: bins %d..%d len %d, want %d..%d len %d", what, got.left, got.right, got.len,
          (int)num(b, "index_left"), (int)num(b, "index_right"), (int)num(b, "sub_ch_index_len"));
}

static void small_case(const char *file) {
    const char *path = check_shared(file);
    if (!path) return check_skip(file, "fixture not found (../shared absent)");
    json_t *j = check_json(path);
    CHECK(j != NULL, "%s: cannot load", file);
    if (!j) return;
    int S = (int)num(j, "params.n_segments"), N = (int)num(j, "params.N"), nsub = (int)num(j, "params.n_sub_ch");
    double fs = num(j, "params.fs_for_ACLR"), bw = num(j, "params.bw_main_ch");
    size_t n = (size_t)S * N * 2;
    float *p = malloc(n * sizeof *p), *g = malloc(n * sizeof *g);
    CHECK(check_floats(json_object_get(j, "prediction"), p, n) &&
              check_floats(json_object_get(j, "ground_truth"), g, n),
          "%s: bad arrays", file);
    json_t *v = json_object_get(j, "values_float64");
    dpd_error err;
    near("NMSE", dpd_nmse(p, g, S, N), num(v, "NMSE"), TOL_DB);
    double l, r;
    CHECK(dpd_aclr(p, S, N, fs, bw, nsub, &l, &r, &err) == DPD_OK, "aclr: %s", err.msg);
    near("ACLR_L", l, num(v, "ACLR_L"), TOL_DB);
    near("ACLR_R", r, num(v, "ACLR_R"), TOL_DB);
    near("ACLR_AVG", (l + r) / 2, num(v, "ACLR_AVG"), TOL_DB);
    CHECK(dpd_aclr(g, S, N, fs, bw, nsub, &l, &r, &err) == DPD_OK, "aclr: %s", err.msg);
    near("ACLR_L of ground truth", l, num(v, "ACLR_L_of_ground_truth"), TOL_DB);
    near("ACLR_R of ground truth", r, num(v, "ACLR_R_of_ground_truth"), TOL_DB);
    band("ACLR band", json_object_get(j, "aclr_band_indices"), N, fs, bw, nsub);
    const char *key;
    json_t *b;
    json_object_foreach(json_object_get(j, "evm_band_indices"), key, b) {
        double sr = strtod(key + 3, NULL); /* "sr_800e6" */
        char vk[64];
        band(key, b, N, sr, bw, nsub);
        double e;
        CHECK(dpd_evm(p, g, S, N, sr, bw, nsub, &e, &err) == DPD_OK, "evm: %s", err.msg);
        snprintf(vk, sizeof vk, "EVM_%s", key);
        near(vk, e, json_number_value(json_object_get(v, vk)), TOL_DB); /* key holds a '.' */
    }
    free(p), free(g);
    json_decref(j);
}

static void dataset_case(const char *name) {
    char fx[128], dd[128];
    snprintf(fx, sizeof fx, "fixtures/metrics_dataset_%s.json", name);
    snprintf(dd, sizeof dd, "data/opendpd/%s/spec.json", name);
    const char *fpath = check_shared(fx), *dpath = check_shared(dd);
    if (!fpath || !dpath) return check_skip(name, "fixture or ../shared/data/opendpd absent");
    json_t *j = check_json(fpath);
    dpd_dataset ds;
    dpd_error err;
    char dir[4096];
    snprintf(dir, sizeof dir, "%.*s", (int)(strlen(dpath) - strlen("/spec.json")), dpath);
    CHECK(dpd_dataset_load(dir, 6, 1, &ds, &err) == DPD_OK, "%s: %s", name, err.msg);
    const dpd_spec *sp = &ds.spec;
    double g = dpd_dataset_gain(&ds);
    json_t *jg = json_object_get(j, "target_gain_g");
    if (json_is_number(jg)) near("target gain", g, json_number_value(jg), 1e-6);
    int N = sp->nperseg;
    static const char *splits[2] = {"val", "test"};
    for (int k = 0; k < 2; k++) {
        char what[128];
        json_t *v = json_object_get(json_object_get(json_object_get(j, "splits"), splits[k]),
                                    "values_float32_inputs");
        const dpd_split *d = &ds.split[k + 1];
        float *x, *y;
        int S;
        CHECK(dpd_segments(d->y, d->n, N, 1.0, &y, &S, &err) == DPD_OK, "segments");
        snprintf(what, sizeof what, "%s.n_segments", splits[k]);
        CHECK(S == (int)num(json_object_get(j, "splits"), what), "%s %s: %d segments", name, splits[k], S);
        double l, r;
        CHECK(dpd_aclr(y, S, N, sp->fs, sp->bw_main, sp->n_sub, &l, &r, &err) == DPD_OK, "%s", err.msg);
        snprintf(what, sizeof what, "%s %s ACLR_L of y", name, splits[k]);
        near(what, l, num(v, "ACLR_of_PA_output_y.L"), TOL_DB);
        snprintf(what, sizeof what, "%s %s ACLR_R of y", name, splits[k]);
        near(what, r, num(v, "ACLR_of_PA_output_y.R"), TOL_DB);
        if (g > 0) {
            CHECK(dpd_segments(d->x, d->n, N, g, &x, &S, &err) == DPD_OK, "segments");
            dpd_metrics pa, dp;
            CHECK(dpd_metrics_compute(x, y, S, N, sp, 800e6, &pa, &err) == DPD_OK, "%s", err.msg);
            CHECK(dpd_metrics_compute(y, x, S, N, sp, 0, &dp, &err) == DPD_OK, "%s", err.msg);
            snprintf(what, sizeof what, "%s %s PA-view NMSE", name, splits[k]);
            near(what, pa.nmse, num(v, "PA_view.NMSE"), TOL_DB);
            snprintf(what, sizeof what, "%s %s PA-view EVM (800 MHz)", name, splits[k]);
            near(what, pa.evm, num(v, "PA_view.EVM_sr_800e6"), TOL_DB);
            double e;
            CHECK(dpd_evm(x, y, S, N, sp->fs, sp->bw_main, sp->n_sub, &e, &err) == DPD_OK, "%s", err.msg);
            snprintf(what, sizeof what, "%s %s PA-view EVM (dataset fs)", name, splits[k]);
            near(what, e, num(v, "PA_view.EVM_sr_input_signal_fs"), TOL_DB);
            snprintf(what, sizeof what, "%s %s DPD-view NMSE", name, splits[k]);
            near(what, dp.nmse, num(v, "DPD_view.NMSE"), TOL_DB);
            snprintf(what, sizeof what, "%s %s DPD-view EVM (dataset fs)", name, splits[k]);
            near(what, dp.evm, num(v, "DPD_view.EVM_sr_input_signal_fs"), TOL_DB);
            snprintf(what, sizeof what, "%s %s DPD-view ACLR_AVG", name, splits[k]);
            near(what, dp.aclr_avg, num(v, "DPD_view.ACLR_AVG"), TOL_DB);
            free(x);
        }
        free(y);
    }
    dpd_dataset_free(&ds);
    json_decref(j);
}

int main(void) {
    small_case("fixtures/metrics_small_random.json");
    small_case("fixtures/metrics_small_apa_like.json");
    dataset_case("DPA_200MHz");
    dataset_case("APA_200MHz");
    dataset_case("DPA_160MHz");
    dpd_band b;
    dpd_error err;
    CHECK(dpd_band_of(2560, 800e6, 900e6, 1, &b, &err) != DPD_OK && strstr(err.msg, "band"),
          "a main channel wider than fs is refused: %s", err.msg);
    printf("largest metric deviation from OpenDPD: %.2e dB\n", worst);
    return check_done("metrics");
}
