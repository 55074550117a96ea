/* plot: bounded plot data from a model's output on a split (include/dpd/dpd.h, "plot data"):
 * the PSD the ACLR is computed from with its bands, the residual's spectrum, AM/AM, AM/PM and
 * an I/Q excerpt, as one JSON document ("plots-v1") that `dpd plot` draws and the studio serves. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "dpd/dpd.h"
#include "status.h"

#define MAX_POINTS 4000
#define IQ_POINTS 1000

static double r3(double v) { return round(v * 1e3) / 1e3; }
static double r6(double v) { return round(v * 1e6) / 1e6; }

/* A JSON number, or null for what is not finite (a silent signal's -inf dB). */
static json_t *num(double v) { return isfinite(v) ? json_real(v) : json_null(); }

static int silent(const float *a, size_t n) {
    for (size_t i = 0; i < 2 * n; i++)
        if (a[i] != 0) return 0;
    return 1;
}

/* The PSD of each signal in dB at every k-th bin (at most MAX_POINTS). */
static json_t *psd(const float *const *sig, const char *const *names, int ns, int S, int N, double fs, json_t **freq,
                   dpd_error *err) {
    double *f = malloc((size_t)N * sizeof *f), *db = malloc((size_t)N * sizeof *db);
    json_t *series = json_object();
    int stride = (N + MAX_POINTS - 1) / MAX_POINTS;
    *freq = NULL;
    if (!f || !db || !series) goto fail;
    for (int i = 0; i < ns; i++) {
        if (!sig[i]) continue;
        if (dpd_psd(sig[i], S, N, fs, f, db, err)) goto fail;
        json_t *a = json_array();
        for (int k = 0; k < N; k += stride) json_array_append_new(a, num(r3(db[k])));
        json_object_set_new(series, names[i], a);
        if (!*freq) {
            *freq = json_array();
            for (int k = 0; k < N; k += stride) json_array_append_new(*freq, json_real(r6(f[k] / 1e6)));
        }
    }
    free(f), free(db);
    return series;
fail:
    free(f), free(db);
    json_decref(series);
    json_decref(*freq);
    *freq = NULL;
    return NULL;
}

/* [first, last] bin frequency in MHz of bins [a, b) of an N-point fftshifted grid at fs. */
static json_t *band(int a, int b, int N, double fs) {
    double step = fs / N;
    return json_pack("[f, f]", r6((double)(a - N / 2) * step / 1e6), r6((double)(b - 1 - N / 2) * step / 1e6));
}

char *dpd_plot_json(const dpd_plot_in *in, dpd_error *err) {
    if (!in || !in->x || !in->ref || !in->pred || !in->spec || in->S < 1 || in->N < 2 || in->n == 0 ||
        in->n > (size_t)in->S * (size_t)in->N) {
        dpd_fail(err, DPD_E_INVAL, "plot: needs x, ref, pred and spec, S >= 1 segments of N >= 2 samples, 0 < n <= S N");
        return NULL;
    }
    int S = in->S, N = in->N;
    size_t total = (size_t)S * (size_t)N, n = in->n;
    const char *names[3] = {in->ref_name ? in->ref_name : "target", in->pred_name ? in->pred_name : "prediction",
                            in->other_name ? in->other_name : "other"};
    json_t *root = json_pack("{s:s, s:i, s:i, s:I, s:f}", "version", "plots-v1", "segments", S, "segment_samples", N,
                             "samples", (json_int_t)n, "fs_mhz", r6(in->spec->fs / 1e6));
    char *text = NULL;
    float *res = NULL;
    if (!root) goto nomem;
    /* a silent capture: say so instead of drawing -inf */
    if (silent(in->ref, total) && silent(in->pred, total)) {
        json_object_set_new(root, "empty", json_string("the signals are silent (every sample is zero): nothing to plot"));
        goto done;
    }
    json_object_set_new(root, "empty", json_null());
    /* PSD, with the bands the ACLR uses */
    const float *sig[3] = {in->ref, in->pred, in->other};
    json_t *freq, *series = psd(sig, names, 3, S, N, in->spec->fs, &freq, err);
    if (!series) goto fail;
    json_t *bands = json_object();
    dpd_band b;
    dpd_error berr;
    if (!dpd_band_of(N, in->spec->fs, in->spec->bw_main, in->spec->n_sub, &b, &berr)) { /* as dpd_aclr sums them */
        json_object_set_new(bands, "main", band(b.left, b.right, N, in->spec->fs));
        json_object_set_new(bands, "adjacent_left", band(b.left - b.len, b.left, N, in->spec->fs));
        json_object_set_new(bands, "adjacent_right", band(b.right, b.right + b.len, N, in->spec->fs));
    } else {
        json_object_set_new(bands, "why_none", json_string(berr.msg));
    }
    json_object_set_new(root, "psd", json_pack("{s:s, s:s, s:o, s:o, s:o}", "x_unit", "MHz", "y_unit", "dB", "freq",
                                               freq, "series", series, "bands", bands));
    /* the residual's spectrum: prediction - target */
    res = malloc(2 * total * sizeof *res);
    if (!res) goto nomem;
    for (size_t i = 0; i < 2 * total; i++) res[i] = in->pred[i] - in->ref[i];
    const float *rs[1] = {res};
    const char *rn[1] = {"residual"};
    series = psd(rs, rn, 1, S, N, in->spec->fs, &freq, err);
    if (!series) goto fail;
    json_object_set_new(root, "residual", json_pack("{s:s, s:s, s:o, s:o}", "x_unit", "MHz", "y_unit", "dB", "freq", freq,
                                                    "db", json_incref(json_object_get(series, "residual"))));
    json_decref(series);
    /* AM/AM and AM/PM: every k-th real sample (at most MAX_POINTS) */
    size_t stride = (n + MAX_POINTS - 1) / MAX_POINTS;
    json_t *amin = json_array(), *am = json_object(), *pm = json_object();
    for (int s = 0; s < 3; s++) {
        if (!sig[s]) continue;
        json_t *a = json_array(), *p = json_array();
        for (size_t i = 0; i < n; i += stride) {
            const float *x = in->x + 2 * i, *y = sig[s] + 2 * i;
            double ph = remainder(atan2(y[1], y[0]) - atan2(x[1], x[0]), 2 * M_PI) * 180 / M_PI;
            json_array_append_new(a, json_real(r6(hypot(y[0], y[1]))));
            json_array_append_new(p, json_real(r3(ph)));
            if (s == 0) json_array_append_new(amin, json_real(r6(hypot(x[0], x[1]))));
        }
        json_object_set_new(am, names[s], a);
        json_object_set_new(pm, names[s], p);
    }
    json_object_set_new(root, "amam", json_pack("{s:s, s:s, s:O, s:o}", "x_unit", "input amplitude", "y_unit",
                                                "output amplitude", "input", amin, "series", am));
    json_object_set_new(root, "ampm", json_pack("{s:s, s:s, s:o, s:o}", "x_unit", "input amplitude", "y_unit",
                                                "degrees", "input", amin, "series", pm));
    /* I/Q: the first IQ_POINTS samples */
    size_t m = n < IQ_POINTS ? n : IQ_POINTS;
    json_t *iq = json_object(), *t = json_array();
    for (size_t i = 0; i < m; i++) json_array_append_new(t, json_integer((json_int_t)i));
    for (int s = 0; s < 3; s++) {
        if (!sig[s]) continue;
        json_t *i_ = json_array(), *q_ = json_array();
        for (size_t i = 0; i < m; i++) {
            json_array_append_new(i_, json_real(r6(sig[s][2 * i])));
            json_array_append_new(q_, json_real(r6(sig[s][2 * i + 1])));
        }
        json_object_set_new(iq, names[s], json_pack("{s:o, s:o}", "i", i_, "q", q_));
    }
    json_object_set_new(root, "iq", json_pack("{s:s, s:o, s:o}", "x_unit", "sample", "sample", t, "series", iq));
done:
    /* 15 significant digits give back every value exactly (each is rounded to at most 6 decimals
     * first), at less than half the text of 17, and half the parsing time for its readers */
    text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
    if (!text) goto nomem;
    free(res);
    json_decref(root);
    return text;
nomem:
    dpd_fail(err, DPD_E_NOMEM, "plot: out of memory");
fail:
    free(res);
    json_decref(root);
    return NULL;
}
