/* test_plot: the plot data (dpd_plot_compute's numbers and dpd_plot_json's plots-v1 text) against
 * the functions it is made of, and against each other. On a
 * synthetic PA-like signal with a zero-padded tail: at most 4 000 points per curve; the PSD of
 * each series equals dpd_psd's at the fixed stride, rounded to 3 decimals, on dpd_psd's own
 * frequencies; the residual is the PSD of prediction - target; the bands are dpd_band_of's edges;
 * AM/AM and AM/PM at the fixed stride are |y| and the phase against x of those samples, never of
 * the padding; I/Q are the first samples; a third series is carried everywhere; the same input
 * gives the same text. Then a silent input ("empty" with a reason, no series), a split shorter than
 * one segment (no spectrum, and why), a silent target beside a prediction, the text itself
 * (escaped names, numbers at the printer's edges), the two-step computation (dpd_plot_curves,
 * dpd_plot_spectra) and bad arguments. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dpd/dpd.h"

static double r3(double v) { return round(v * 1e3) / 1e3; }
static double r6(double v) { return round(v * 1e6) / 1e6; }

/* Test signals (S, N, 2): x a sum of tones with random phases, ref = a soft compressor with
 * AM/PM of x, pred = ref plus a little noise, other = 0.9 ref; the tail after n is zero. */
typedef struct sig {
    int S, N;
    size_t n;
    float *x, *ref, *pred, *other;
} sig;

static sig make(int S, int N, size_t n, uint64_t seed) {
    sig g = {S, N, n, NULL, NULL, NULL, NULL};
    size_t len = (size_t)S * N * 2;
    g.x = calloc(len, sizeof(float)), g.ref = calloc(len, sizeof(float));
    g.pred = calloc(len, sizeof(float)), g.other = calloc(len, sizeof(float));
    dpd_rng r;
    dpd_rng_seed(&r, seed);
    double ph[40];
    for (int k = 0; k < 40; k++) ph[k] = 2 * M_PI * dpd_rng_uniform(&r);
    for (size_t i = 0; i < n; i++) {
        double a = 0, b = 0;
        for (int k = 0; k < 40; k++) { /* tones inside +-100 MHz at 800 MHz */
            double w = 2 * M_PI * (k - 20) * 0.0061 * (double)i + ph[k];
            a += 0.05 * cos(w), b += 0.05 * sin(w);
        }
        double amp = hypot(a, b), gain = 2.5 / (1 + 0.3 * amp * amp), rot = 0.3 * amp * amp;
        double ya = gain * (a * cos(rot) - b * sin(rot)), yb = gain * (a * sin(rot) + b * cos(rot));
        g.x[2 * i] = (float)a, g.x[2 * i + 1] = (float)b;
        g.ref[2 * i] = (float)ya, g.ref[2 * i + 1] = (float)yb;
        g.pred[2 * i] = (float)(ya + 0.01 * dpd_rng_normal(&r)), g.pred[2 * i + 1] = (float)(yb + 0.01 * dpd_rng_normal(&r));
        g.other[2 * i] = (float)(0.9 * ya), g.other[2 * i + 1] = (float)(0.9 * yb);
    }
    return g;
}

static void sig_free(sig *g) { free(g->x), free(g->ref), free(g->pred), free(g->other); }

static const dpd_spec spec = {.fs = 800e6, .bw_main = 200e6, .bw_sub = 20e6, .n_sub = 10};

static json_t *plot(const sig *g, int other, char **text) {
    dpd_plot_in in = {.x = g->x, .ref = g->ref, .pred = g->pred, .other = other ? g->other : NULL, .S = g->S,
                      .N = g->N, .n = g->n, .spec = &spec, .other_name = other ? "no_dpd" : NULL};
    dpd_error err = {0};
    char *t = dpd_plot_json(&in, &err);
    CHECK(t != NULL, "dpd_plot_json: %s", err.msg);
    json_t *j = t ? json_loads(t, 0, NULL) : NULL;
    CHECK(j != NULL, "dpd_plot_json's text parses as JSON");
    if (text) *text = t;
    else free(t);
    return j;
}

/* arr[k] == want[k * stride] (k < count), a non-finite want as null; name the first miss. */
static void same(const char *what, json_t *arr, const double *want, size_t count, size_t stride) {
    CHECK(json_array_size(arr) == count, "%s: %zu points, want %zu", what, json_array_size(arr), count);
    for (size_t k = 0; k < count && k < json_array_size(arr); k++) {
        json_t *v = json_array_get(arr, k);
        double w = want[k * stride];
        int ok = isfinite(w) ? json_is_number(v) && json_number_value(v) == w : json_is_null(v);
        if (!ok) {
            CHECK(0, "%s[%zu]: %.9g, want %.9g", what, k, json_number_value(v), w);
            return;
        }
    }
    check_passed++;
}

/* The PSD of sig (S, N, 2), rounded as the plot data round it: db to 3 decimals, freq in MHz to 6. */
static void psd_of(const float *s, const sig *g, double *f, double *db) {
    dpd_error err;
    CHECK(dpd_psd(s, g->S, g->N, spec.fs, f, db, &err) == DPD_OK, "dpd_psd: %s", err.msg);
    for (int k = 0; k < g->N; k++) f[k] = r6(f[k] / 1e6), db[k] = isfinite(db[k]) ? r3(db[k]) : db[k];
}

static void band_is(json_t *b, const char *name, int first, int last, int N) {
    json_t *v = json_object_get(b, name);
    double step = spec.fs / N / 1e6;
    double lo = r6((first - N / 2) * step), hi = r6((last - N / 2) * step);
    CHECK(json_array_size(v) == 2 && json_number_value(json_array_get(v, 0)) == lo &&
              json_number_value(json_array_get(v, 1)) == hi,
          "band %s: [%g, %g], want bins %d..%d = [%g, %g] MHz", name, json_number_value(json_array_get(v, 0)),
          json_number_value(json_array_get(v, 1)), first, last, lo, hi);
}

/* arg(sum y conj(x)) over the count samples at stride: the phase AM/PM is drawn around. */
static double mean_phase(const float *x, const float *y, size_t count, size_t stride) {
    double re = 0, im = 0;
    for (size_t k = 0; k < count; k++) {
        const float *a = x + 2 * k * stride, *b = y + 2 * k * stride;
        re += (double)b[0] * a[0] + (double)b[1] * a[1], im += (double)b[1] * a[0] - (double)b[0] * a[1];
    }
    return atan2(im, re);
}

static void test_case(int S, int N, size_t n) {
    sig g = make(S, N, n, (uint64_t)N);
    char *t1, *t2;
    json_t *j = plot(&g, 1, &t1), *j2 = plot(&g, 1, &t2);
    if (!j) goto out;
    CHECK(t1 && t2 && !strcmp(t1, t2), "N=%d: the same input gives the same text", N);
    CHECK(!strcmp(json_string_value(json_object_get(j, "version")), "plots-v1"), "version plots-v1");
    CHECK(json_is_null(json_object_get(j, "empty")), "a signal with power is not empty");
    CHECK(json_integer_value(json_object_get(j, "segments")) == S && json_integer_value(json_object_get(j, "segment_samples")) == N &&
              json_integer_value(json_object_get(j, "samples")) == (json_int_t)n && json_number_value(json_object_get(j, "fs_mhz")) == 800,
          "segments, segment_samples, samples and fs_mhz");

    /* PSD: dpd_psd's at stride ceil(N / 4000), dB to 3 decimals */
    size_t ps = ((size_t)N + 3999) / 4000, pc = ((size_t)N + ps - 1) / ps;
    double *f = malloc((size_t)N * sizeof *f), *db = malloc((size_t)N * sizeof *db);
    json_t *psd = json_object_get(j, "psd"), *ser = json_object_get(psd, "series");
    CHECK(pc <= 4000 && json_array_size(json_object_get(psd, "freq")) <= 4000, "N=%d: at most 4000 PSD points", N);
    const float *sigs[3] = {g.ref, g.pred, g.other};
    const char *names[3] = {"target", "prediction", "no_dpd"};
    for (int i = 0; i < 3; i++) {
        char what[64];
        psd_of(sigs[i], &g, f, db);
        snprintf(what, sizeof what, "N=%d psd.%s", N, names[i]);
        same(what, json_object_get(ser, names[i]), db, pc, ps);
        if (!i) same("psd.freq", json_object_get(psd, "freq"), f, pc, ps);
    }
    /* the residual: the PSD of prediction - target */
    size_t len = (size_t)S * N * 2;
    float *res = malloc(len * sizeof *res);
    for (size_t i = 0; i < len; i++) res[i] = g.pred[i] - g.ref[i];
    psd_of(res, &g, f, db);
    same("residual.db", json_object_get(json_object_get(j, "residual"), "db"), db, pc, ps);
    same("residual.freq", json_object_get(json_object_get(j, "residual"), "freq"), f, pc, ps);
    free(res);
    /* the bands: the first and last bin of what the ACLR sums */
    dpd_band b;
    dpd_error err;
    CHECK(dpd_band_of(N, spec.fs, spec.bw_main, spec.n_sub, &b, &err) == DPD_OK, "dpd_band_of: %s", err.msg);
    json_t *bands = json_object_get(psd, "bands");
    band_is(bands, "main", b.left, b.right - 1, N);
    band_is(bands, "adjacent_left", b.left - b.len, b.left - 1, N);
    band_is(bands, "adjacent_right", b.right, b.right + b.len - 1, N);
    /* the reference: the prediction's strongest sub-channel, the one dpd_aclr divides by */
    double *pw = malloc((size_t)N * sizeof *pw), most = 0, adj = 0;
    int c_ref = 0;
    CHECK(dpd_psd(g.pred, g.S, N, spec.fs, f, pw, &err) == DPD_OK, "dpd_psd: %s", err.msg);
    for (int c = 0; c < spec.n_sub; c++) {
        double p = 0;
        for (int k = b.left + c * b.len; k < b.left + (c + 1) * b.len; k++) p += pow(10, pw[k] / 10);
        if (p > most) most = p, c_ref = c;
    }
    band_is(bands, "reference", b.left + c_ref * b.len, b.left + (c_ref + 1) * b.len - 1, N);
    for (int k = b.left - b.len; k < b.left; k++) adj += pow(10, pw[k] / 10);
    double al, ar;
    CHECK(dpd_aclr(g.pred, g.S, N, spec.fs, spec.bw_main, spec.n_sub, &al, &ar, &err) == DPD_OK, "dpd_aclr: %s", err.msg);
    CHECK(fabs(10 * log10(adj / most) - al) < 1e-6, "N=%d: the reference band is the ACLR's: ACLR_L %.9f from it, %.9f "
          "by dpd_aclr", N, 10 * log10(adj / most), al);
    free(pw);

    /* AM/AM and AM/PM: every k-th real sample, k = ceil(n / 4000) */
    size_t as = (n + 3999) / 4000, ac = (n + as - 1) / as;
    double *amp = malloc(ac * sizeof *amp), *in = malloc(ac * sizeof *in), *deg = malloc(ac * sizeof *deg);
    CHECK(ac <= 4000 && (ac - 1) * as < n, "N=%d: %zu AM/AM points, none from the zero-padded tail", N, ac);
    for (int i = 0; i < 3; i++) {
        double mid = mean_phase(g.x, sigs[i], ac, as);
        for (size_t k = 0; k < ac; k++) {
            const float *x = g.x + 2 * k * as, *y = sigs[i] + 2 * k * as;
            amp[k] = r6(hypot(y[0], y[1])), in[k] = r6(hypot(x[0], x[1]));
            double ph = remainder(atan2(y[1], y[0]) - atan2(x[1], x[0]), 2 * M_PI);
            if (ph - mid > M_PI) ph -= 2 * M_PI;
            if (ph - mid < -M_PI) ph += 2 * M_PI;
            deg[k] = r3(ph * 180 / M_PI);
        }
        char what[64];
        snprintf(what, sizeof what, "N=%d amam.%s", N, names[i]);
        same(what, json_object_get(json_object_get(json_object_get(j, "amam"), "series"), names[i]), amp, ac, 1);
        snprintf(what, sizeof what, "N=%d ampm.%s", N, names[i]);
        same(what, json_object_get(json_object_get(json_object_get(j, "ampm"), "series"), names[i]), deg, ac, 1);
    }
    same("amam.input", json_object_get(json_object_get(j, "amam"), "input"), in, ac, 1);
    same("ampm.input", json_object_get(json_object_get(j, "ampm"), "input"), in, ac, 1);
    /* I/Q: the first 1 000 samples */
    size_t m = n < 1000 ? n : 1000;
    double *iq = malloc(m * sizeof *iq);
    for (int c = 0; c < 2; c++) {
        for (size_t k = 0; k < m; k++) iq[k] = r6(g.pred[2 * k + c]);
        same(c ? "iq.prediction.q" : "iq.prediction.i",
             json_object_get(json_object_get(json_object_get(json_object_get(j, "iq"), "series"), "prediction"), c ? "q" : "i"),
             iq, m, 1);
    }
    free(iq), free(amp), free(in), free(deg), free(f), free(db);
out:
    json_decref(j), json_decref(j2);
    free(t1), free(t2);
    sig_free(&g);
}

static void test_silent(void) {
    sig g = make(2, 256, 400, 1);
    memset(g.ref, 0, 2 * 256 * 2 * sizeof(float));
    memset(g.pred, 0, 2 * 256 * 2 * sizeof(float));
    json_t *j = plot(&g, 0, NULL);
    const char *why = json_string_value(json_object_get(j, "empty"));
    CHECK(why && strstr(why, "silent"), "a silent target and prediction: empty says why (%s)", why ? why : "null");
    CHECK(!json_object_get(j, "psd") && !json_object_get(j, "amam") && !json_object_get(j, "iq"), "a silent input has no series");
    json_decref(j);
    sig_free(&g);
}

/* The text itself: a name that needs escaping comes back as it was, one that is not UTF-8 is
 * refused; numbers at the printer's edges (-0, halves, an integer-valued real, 1e9: past its
 * fixed-point range) parse to exactly r6 of the sample, sign included; indices are integers. */
static void test_text(void) {
    sig g = make(2, 256, 400, 3);
    static const float edge[] = {-1e-7f, 2.5f, -0.1f, 2.0f, 1e9f, 12345678.5f, 0.0000125f, -3e-6f};
    size_t ne = sizeof edge / sizeof *edge;
    for (size_t k = 0; k < ne; k++) g.pred[2 * k] = edge[k];
    const char *name = "no \"dpd\" \\ \n\t/ \xc3\xa9";
    dpd_plot_in in = {.x = g.x, .ref = g.ref, .pred = g.pred, .other = g.other, .S = 2, .N = 256, .n = 400,
                      .spec = &spec, .other_name = name};
    dpd_error err = {0};
    char *t = dpd_plot_json(&in, &err);
    json_t *j = t ? json_loads(t, 0, NULL) : NULL;
    CHECK(j != NULL, "edge values and an escaped name: the text parses (%s)", err.msg);
    json_t *iq = json_object_get(json_object_get(j, "iq"), "series");
    CHECK(json_object_get(json_object_get(json_object_get(j, "psd"), "series"), name) &&
              json_object_get(json_object_get(json_object_get(j, "amam"), "series"), name) && json_object_get(iq, name),
          "a name that needs escaping comes back as it was");
    json_t *i = json_object_get(json_object_get(iq, "prediction"), "i");
    for (size_t k = 0; k < ne; k++) {
        json_t *v = json_array_get(i, k);
        double want = r6(edge[k]);
        CHECK(json_is_real(v) && json_real_value(v) == want && !signbit(json_real_value(v)) == !signbit(want),
              "iq.prediction.i[%zu]: %.17g, want a real %.17g", k, json_number_value(v), want);
    }
    json_t *s5 = json_array_get(json_object_get(json_object_get(j, "iq"), "sample"), 5);
    CHECK(json_is_integer(s5) && json_integer_value(s5) == 5, "iq.sample[5] is the integer 5");
    json_decref(j), free(t);
    in.other_name = "\xff";
    t = dpd_plot_json(&in, &err);
    CHECK(!t && err.status == DPD_E_INVAL, "a name that is not UTF-8 is refused (%s)", err.msg);
    free(t);
    sig_free(&g);
}

/* A measured signal (a DPD run's capture y): the fourth series, named "measured", after the other;
 * without the other, the third. Its series are its own (the PSD and AM/AM of that signal alone),
 * and the others' are what they are without it. */
static void test_measured(void) {
    sig g = make(2, 256, 400, 4);
    dpd_error err = {0};
    dpd_plot_in in = {.x = g.x, .ref = g.ref, .pred = g.pred, .other = g.other, .measured = g.pred, .S = 2, .N = 256,
                      .n = 400, .spec = &spec, .other_name = "no_dpd"};
    dpd_plot_data *d = dpd_plot_compute(&in, &err), *e = NULL, *f = NULL;
    in.measured = NULL;
    e = dpd_plot_compute(&in, &err);
    in.other = NULL, in.measured = g.other;
    f = dpd_plot_compute(&in, &err);
    CHECK(d && e && f && d->nsig == 4 && e->nsig == 3 && f->nsig == 3 && !strcmp(d->name[3], "measured") &&
              !strcmp(d->name[2], "no_dpd") && !strcmp(f->name[2], "measured"),
          "measured: the fourth series after no_dpd, the third without it (%s)", err.msg);
    int same = d && e && f;
    for (size_t k = 0; same && k < d->nf; k++) /* measured = pred here: the same numbers; no_dpd as without it */
        same &= (d->psd[3][k] == d->psd[1][k] || (isnan(d->psd[3][k]) && isnan(d->psd[1][k]))) &&
                (d->psd[2][k] == e->psd[2][k] || (isnan(d->psd[2][k]) && isnan(e->psd[2][k]))) &&
                (f->psd[2][k] == e->psd[2][k] || (isnan(f->psd[2][k]) && isnan(e->psd[2][k])));
    for (size_t k = 0; same && k < d->na; k++) same &= d->am[3][k] == d->am[1][k] && f->am[2][k] == e->am[2][k];
    CHECK(same, "measured: its PSD and AM/AM are its signal's, the others' unchanged");
    dpd_plot_free(d), dpd_plot_free(e), dpd_plot_free(f);
    sig_free(&g);
}

/* dpd_plot_curves then dpd_plot_spectra (the end of a run: the spectra on another thread) make
 * dpd_plot_compute's data, to the byte of the text, under the legacy profile and a Welch one:
 * before the spectra, nothing of them (nf 0, no frequencies, PSDs, residual or bands), the rest
 * all there, and no text made of it; an input unlike the data's (shape, fs, series) is refused
 * and changes nothing; the spectra again change nothing; the PSD failing leaves no spectra; data
 * with nothing to plot, or no whole segment, get none and no error. */
static void test_two_steps(dpd_profile profile) {
    sig g = make(3, 2560, 3 * 2560 - 700, 7);
    dpd_error err = {0};
    dpd_plot_in in = {.x = g.x, .ref = g.ref, .pred = g.pred, .other = g.other, .S = 3, .N = 2560, .n = 3 * 2560 - 700,
                      .spec = &spec, .profile = profile};
    dpd_plot_data *whole = dpd_plot_compute(&in, &err), *d = dpd_plot_curves(&in, &err);
    char *a = NULL, *b = NULL;
    CHECK(whole && d, "profile %d: both ways compute (%s)", (int)profile, err.msg);
    if (!whole || !d) goto out;
    int none = d->nf == 0 && !d->freq && !d->residual && !d->bands && !d->why_bands[0] && d->profile == DPD_PROFILE_LEGACY;
    for (int s = 0; s < DPD_PLOT_SIGNALS; s++) none &= !d->psd[s];
    CHECK(none && d->na == whole->na && d->ni == whole->ni && d->nsig == 3 && d->amp && d->am[2] && d->pm[2] && d->i[2],
          "dpd_plot_curves: no spectra yet, the curves all there (nf %zu, na %zu of %zu)", d->nf, d->na, whole->na);
    FILE *f = tmpfile();
    CHECK(!dpd_plot_text(d, &err) && err.status == DPD_E_INVAL && f && dpd_plot_write(d, f, &err) == DPD_E_INVAL,
          "no text is made of data whose spectra are not in yet (%s)", err.msg);
    if (f) fclose(f);
    dpd_plot_in other = in;
    other.N = 1280, other.S = 6;
    CHECK(dpd_plot_spectra(d, &other, &err) == DPD_E_INVAL && d->nf == 0 && !d->freq,
          "an input of another shape is refused (%s)", err.msg);
    other = in, other.other = NULL, other.measured = g.other;
    CHECK(dpd_plot_spectra(d, &other, &err) == DPD_E_INVAL && d->nf == 0, "an input of other series is refused");
    dpd_spec fast = spec;
    fast.fs = 2 * spec.fs, other = in, other.spec = &fast;
    CHECK(dpd_plot_spectra(d, &other, &err) == DPD_E_INVAL && d->nf == 0, "an input at another fs is refused");
    CHECK(dpd_plot_spectra(NULL, &in, &err) == DPD_E_INVAL, "no data is refused");
    CHECK(dpd_plot_spectra(d, &in, &err) == DPD_OK && d->nf == whole->nf && d->bands == whole->bands &&
              d->profile == whole->profile,
          "dpd_plot_spectra adds the spectra (%s)", err.msg);
    a = dpd_plot_text(whole, &err), b = dpd_plot_text(d, &err);
    CHECK(a && b && !strcmp(a, b), "the two steps' text is dpd_plot_compute's, byte for byte (%zu and %zu bytes)",
          a ? strlen(a) : 0, b ? strlen(b) : 0);
    double *freq = d->freq;
    other = in, other.N = 1280, other.S = 6;
    CHECK(dpd_plot_spectra(d, &other, &err) == DPD_E_INVAL && d->freq == freq && d->nf == whole->nf,
          "an input of another shape, spectra in: refused, the spectra kept");
    CHECK(dpd_plot_spectra(d, &in, &err) == DPD_OK && d->freq == freq, "the spectra twice: the first kept");
    dpd_plot_free(d), d = NULL;
    dpd_spec still = spec;
    still.fs = 0; /* curves need no fs; the PSD does: it fails, and leaves no spectra */
    other = in, other.spec = &still;
    d = dpd_plot_curves(&other, &err);
    CHECK(d && dpd_plot_spectra(d, &other, &err) == DPD_E_INVAL && d->nf == 0 && !d->freq && !d->psd[0] && !d->bands &&
              d->profile == DPD_PROFILE_LEGACY,
          "the PSD failing leaves no spectra (nf %zu; %s)", d ? d->nf : 0, err.msg);
    dpd_plot_free(d), d = NULL;
    in.n = 2000; /* under one 2560-sample segment: no spectrum, and no error */
    d = dpd_plot_curves(&in, &err);
    CHECK(d && d->why_no_psd[0] && dpd_plot_spectra(d, &in, &err) == DPD_OK && d->nf == 0 && !d->freq,
          "no whole segment: no spectra, no error");
    dpd_plot_free(d), d = NULL;
    in.n = 3 * 2560 - 700;
    memset(g.ref, 0, (size_t)3 * 2560 * 2 * sizeof(float)), memset(g.pred, 0, (size_t)3 * 2560 * 2 * sizeof(float));
    d = dpd_plot_curves(&in, &err);
    CHECK(d && d->empty && dpd_plot_spectra(d, &in, &err) == DPD_OK && d->nf == 0, "silent signals: nothing to add");
out:
    free(a), free(b);
    dpd_plot_free(d), dpd_plot_free(whole);
    sig_free(&g);
}

static void test_bad_arguments(void) {
    sig g = make(2, 256, 400, 2);
    dpd_error err;
    dpd_plot_in ok = {.x = g.x, .ref = g.ref, .pred = g.pred, .S = 2, .N = 256, .n = 400, .spec = &spec};
    dpd_plot_in bad[7];
    for (int i = 0; i < 7; i++) bad[i] = ok;
    bad[0].x = NULL, bad[1].ref = NULL, bad[2].pred = NULL, bad[3].spec = NULL, bad[4].S = 0, bad[5].N = 1;
    bad[6].n = 2 * 256 + 1;
    for (int i = 0; i < 7; i++) {
        memset(&err, 0, sizeof err);
        char *t = dpd_plot_json(&bad[i], &err);
        CHECK(!t && err.status == DPD_E_INVAL && err.msg[0], "bad argument %d: NULL with DPD_E_INVAL and a message (%s)", i,
              err.msg);
        free(t);
    }
    ok.n = 0;
    CHECK(!dpd_plot_json(&ok, &err) && err.status == DPD_E_INVAL, "n = 0 is refused");
    CHECK(!dpd_plot_json(NULL, &err) && err.status == DPD_E_INVAL, "no input is refused");
    sig_free(&g);
}

/* arr holds v[0, n) value for value, a NaN as null; names the first miss. */
static void holds(const char *what, json_t *arr, const double *v, size_t n) {
    if (!v || json_array_size(arr) != n) {
        CHECK(0, "%s: the text has %zu values, the numbers %zu", what, json_array_size(arr), v ? n : 0);
        return;
    }
    for (size_t k = 0; k < n; k++) {
        json_t *e = json_array_get(arr, k);
        if (isnan(v[k]) ? !json_is_null(e) : !json_is_number(e) || json_number_value(e) != v[k]) {
            CHECK(0, "%s[%zu]: the text has %.17g, the numbers %.17g", what, k, json_number_value(e), v[k]);
            return;
        }
    }
    check_passed++;
}

/* dpd_plot_compute's numbers are the text's (dpd_plot_text, which dpd_plot_json is): what `dpd
 * plot` draws is what plots.json says, every value and every null (a silent third signal: all
 * its dB are NaN). A silent input has the reason and no arrays; NULL data are refused. */
/* A capture whose output is turned by 178 degrees (a cable's, or a mixer's, phase): its AM/PM is
 * one band around 178 + its AM/PM (-180 and below: the same phases), not split between +178 and
 * -180, and every point is its phase mod 360. */
static void test_ampm_offset(void) {
    sig g = make(2, 3000, 6000, 7);
    double c = cos(178 * M_PI / 180), s = sin(178 * M_PI / 180);
    for (size_t i = 0; i < 6000; i++) {
        float *y = g.ref + 2 * i;
        double a = y[0], b = y[1];
        y[0] = (float)(a * c - b * s), y[1] = (float)(a * s + b * c);
    }
    dpd_plot_in in = {.x = g.x, .ref = g.ref, .pred = g.ref, .S = 2, .N = 3000, .n = 6000, .spec = &spec};
    dpd_error err = {0};
    dpd_plot_data *d = dpd_plot_compute(&in, &err);
    CHECK(d && d->na == 3000, "dpd_plot_compute: %s", err.msg);
    if (!d) goto out;
    double lo = INFINITY, hi = -INFINITY;
    size_t bad = 0;
    for (size_t k = 0; k < d->na; k++) {
        double v = d->pm[0][k];
        lo = fmin(lo, v), hi = fmax(hi, v);
        double raw = atan2(g.ref[4 * k + 1], g.ref[4 * k]) - atan2(g.x[4 * k + 1], g.x[4 * k]); /* stride 2 */
        if (fabs(remainder(v * M_PI / 180 - raw, 2 * M_PI)) > 1e-4) bad++;
    }
    CHECK(hi - lo < 60, "AM/PM of a 178-degree offset: one band, [%.3f, %.3f] degrees", lo, hi);
    CHECK(!bad, "every AM/PM point is the phase of y against x, mod 360 (%zu are not)", bad);
out:
    dpd_plot_free(d);
    sig_free(&g);
}

/* A tone at +65 MHz (sub-channel 8 of ten 20 MHz ones in +-100 MHz) and a weaker one at -35 (sub-channel
 * 3): the reference band is sub-channel 8's, [60, 79.75] MHz at 3 200 bins of 800 MHz. */
static void test_reference(void) {
    int S = 2, N = 3200;
    sig g = make(S, N, (size_t)S * N, 5);
    for (size_t i = 0; i < (size_t)S * N; i++) {
        double w1 = 2 * M_PI * 65e6 / 800e6 * (double)i, w2 = 2 * M_PI * -35e6 / 800e6 * (double)i;
        g.ref[2 * i] = g.pred[2 * i] = (float)(cos(w1) + 0.3 * cos(w2));
        g.ref[2 * i + 1] = g.pred[2 * i + 1] = (float)(sin(w1) + 0.3 * sin(w2));
    }
    dpd_plot_in in = {.x = g.x, .ref = g.ref, .pred = g.pred, .S = S, .N = N, .n = (size_t)S * N, .spec = &spec};
    dpd_error err = {0};
    dpd_plot_data *d = dpd_plot_compute(&in, &err);
    CHECK(d && d->bands && d->ref_band[0] == 60 && d->ref_band[1] == 79.75,
          "a tone at +65 MHz: the reference is its sub-channel, [%g, %g] MHz (%s)", d ? d->ref_band[0] : 0,
          d ? d->ref_band[1] : 0, err.msg);
    dpd_plot_free(d);
    for (size_t i = 0; i < 2 * (size_t)S * N; i++) g.pred[i] = g.ref[i] = i % 2 ? 0.0f : 1.0f; /* DC: n_sub 1's case */
    dpd_spec one = spec;
    one.n_sub = 1, one.bw_sub = one.bw_main;
    in.spec = &one;
    d = dpd_plot_compute(&in, &err);
    CHECK(d && d->bands && d->ref_band[0] == d->band[0][0] && d->ref_band[1] == d->band[0][1],
          "one sub-channel: the reference is the main channel (%s)", err.msg);
    dpd_plot_free(d);
    sig_free(&g);
}

/* The Welch profiles: their own PSD (dpd_psd_of: a density over the valid samples) and bands
 * (dpd_profile_bands: general's B-wide neighbours against the main channel, v2's one-carrier
 * neighbours against the strongest carrier), in plots.json with y_unit dB/Hz and the profile. */
static void test_profiles(void) {
    int S = 2, N = 3200;
    sig g = make(S, N, (size_t)S * N, 5);
    for (size_t i = 0; i < (size_t)S * N; i++) { /* the strongest power at +65 MHz: carrier [60, 80) */
        double w1 = 2 * M_PI * 65e6 / 800e6 * (double)i, w2 = 2 * M_PI * -35e6 / 800e6 * (double)i;
        g.ref[2 * i] = g.pred[2 * i] = (float)(cos(w1) + 0.3 * cos(w2));
        g.ref[2 * i + 1] = g.pred[2 * i + 1] = (float)(sin(w1) + 0.3 * sin(w2));
    }
    dpd_error err = {0};
    double band[3][2], carrier;
    CHECK(dpd_profile_bands(&spec, DPD_PROFILE_GENERAL, band, &carrier, &err) == DPD_OK && band[1][0] == -300e6 &&
              band[1][1] == -100e6 && band[2][0] == 100e6 && band[2][1] == 300e6 && carrier == 200e6,
          "general-spectral-v1's bands: B wide beside the main channel (%s)", err.msg);
    CHECK(dpd_profile_bands(&spec, DPD_PROFILE_V2, band, &carrier, &err) == DPD_OK && band[1][0] == -120e6 &&
              band[2][1] == 120e6 && carrier == 20e6,
          "opendpd-spectral-v2's bands: one carrier wide (%s)", err.msg);
    CHECK(dpd_profile_bands(&spec, DPD_PROFILE_LEGACY, band, &carrier, &err) == DPD_E_INVAL, "legacy: its bands are bins");
    dpd_spec narrow = spec;
    narrow.fs = 400e6;
    CHECK(dpd_profile_bands(&narrow, DPD_PROFILE_GENERAL, band, &carrier, &err) == DPD_E_UNSUPPORTED && strstr(err.msg, "fs/2"),
          "general at fs 400 MHz: the neighbours leave the spectrum (%s)", err.msg);
    for (int p = DPD_PROFILE_GENERAL; p <= DPD_PROFILE_V2; p++) {
        dpd_plot_in in = {.x = g.x, .ref = g.ref, .pred = g.pred, .S = S, .N = N, .n = (size_t)S * N - 100, .spec = &spec,
                          .profile = (dpd_profile)p};
        dpd_plot_data *d = dpd_plot_compute(&in, &err);
        double want_ref[2] = {p == DPD_PROFILE_V2 ? 60 : -100, p == DPD_PROFILE_V2 ? 80 : 100};
        CHECK(d && d->bands && (int)d->profile == p && d->band[1][0] == (p == DPD_PROFILE_V2 ? -120 : -300) &&
                  d->ref_band[0] == want_ref[0] && d->ref_band[1] == want_ref[1],
              "%s: bands and reference [%g, %g) MHz (%s)", dpd_profile_name(p), d ? d->ref_band[0] : 0, d ? d->ref_band[1] : 0,
              err.msg);
        double *f = malloc(N * sizeof *f), *db = malloc(N * sizeof *db);
        CHECK(dpd_psd_of(g.pred, S, N, in.n, 800e6, (dpd_profile)p, f, db, &err) == DPD_OK, "dpd_psd_of (%s)", err.msg);
        size_t stride = ((size_t)N + DPD_PLOT_POINTS - 1) / DPD_PLOT_POINTS;
        int same_psd = d && d->nf > 0;
        for (size_t k = 0; same_psd && k < d->nf; k++) same_psd = isnan(d->psd[1][k]) ? !isfinite(db[k * stride]) : d->psd[1][k] == r3(db[k * stride]);
        CHECK(same_psd, "%s: the PSD drawn is dpd_psd_of's", dpd_profile_name(p));
        free(f), free(db);
        char *t = dpd_plot_json(&in, &err);
        json_t *j = t ? json_loads(t, 0, NULL) : NULL, *psd = json_object_get(j, "psd");
        CHECK(psd && !strcmp(json_string_value(json_object_get(psd, "y_unit")), "dB/Hz") &&
                  !strcmp(json_string_value(json_object_get(psd, "profile")), dpd_profile_name(p)),
              "%s: plots.json's psd in dB/Hz, naming its profile", dpd_profile_name(p));
        json_decref(j);
        free(t);
        dpd_plot_free(d);
    }
    double db1[8];
    CHECK(dpd_psd_of(g.pred, S, 8, 4, 800e6, DPD_PROFILE_GENERAL, NULL, db1, &err) == DPD_E_INVAL,
          "a Welch PSD of fewer samples than one segment is refused");
    sig_free(&g);
}

static void test_numbers(void) {
    sig g = make(2, 3000, 5000, 4);
    memset(g.other, 0, 2 * 3000 * 2 * sizeof(float));
    dpd_plot_in in = {.x = g.x, .ref = g.ref, .pred = g.pred, .other = g.other, .S = 2, .N = 3000, .n = 5000,
                      .spec = &spec, .other_name = "no_dpd"};
    dpd_error err = {0};
    dpd_plot_data *d = dpd_plot_compute(&in, &err);
    char *t = d ? dpd_plot_text(d, &err) : NULL, *t2 = dpd_plot_json(&in, &err);
    json_t *j = t ? json_loads(t, 0, NULL) : NULL;
    CHECK(d && j && t2 && !strcmp(t, t2), "dpd_plot_text of dpd_plot_compute is dpd_plot_json's text (%s)", err.msg);
    if (!j) goto out;
    CHECK(d->nsig == 3 && !strcmp(d->name[0], "target") && !strcmp(d->name[1], "prediction") && !strcmp(d->name[2], "no_dpd"),
          "three signals, named");
    CHECK(d->nf == 3000 && d->na == 2500 && d->ni == 1000, "nf %zu, na %zu, ni %zu", d->nf, d->na, d->ni);
    json_t *psd = json_object_get(j, "psd"), *res = json_object_get(j, "residual");
    json_t *am = json_object_get(j, "amam"), *pm = json_object_get(j, "ampm"), *iq = json_object_get(json_object_get(j, "iq"), "series");
    holds("psd.freq", json_object_get(psd, "freq"), d->freq, d->nf);
    holds("residual.freq", json_object_get(res, "freq"), d->freq, d->nf);
    holds("residual.db", json_object_get(res, "db"), d->residual, d->nf);
    holds("amam.input", json_object_get(am, "input"), d->amp, d->na);
    holds("ampm.input", json_object_get(pm, "input"), d->amp, d->na);
    for (int s = 0; s < 3; s++) {
        const char *n = d->name[s];
        holds(n, json_object_get(json_object_get(psd, "series"), n), d->psd[s], d->nf);
        holds(n, json_object_get(json_object_get(am, "series"), n), d->am[s], d->na);
        holds(n, json_object_get(json_object_get(pm, "series"), n), d->pm[s], d->na);
        holds(n, json_object_get(json_object_get(iq, n), "i"), d->i[s], d->ni);
        holds(n, json_object_get(json_object_get(iq, n), "q"), d->q[s], d->ni);
    }
    int nan = 1;
    for (size_t k = 0; k < d->nf; k++) nan &= isnan(d->psd[2][k]);
    CHECK(nan, "a silent third signal: every dB of its PSD is NaN (null in the text)");
    static const char *const band[3] = {"main", "adjacent_left", "adjacent_right"};
    for (int b = 0; b < 3; b++) holds(band[b], json_object_get(json_object_get(psd, "bands"), band[b]), d->band[b], 2);
    holds("reference", json_object_get(json_object_get(psd, "bands"), "reference"), d->ref_band, 2);
    CHECK(d->bands == 1, "the bands are there");
out:
    json_decref(j), free(t), free(t2);
    dpd_plot_free(d);
    memset(g.ref, 0, 2 * 3000 * 2 * sizeof(float));
    memset(g.pred, 0, 2 * 3000 * 2 * sizeof(float));
    d = dpd_plot_compute(&in, &err);
    CHECK(d && d->empty && strstr(d->empty, "silent") && !d->freq && !d->psd[0] && !d->amp && !d->i[0] && d->nsig == 3,
          "silent signals: the reason, no arrays");
    dpd_plot_free(d);
    CHECK(!dpd_plot_text(NULL, &err) && err.status == DPD_E_INVAL, "dpd_plot_text(NULL) is refused");
    dpd_plot_free(NULL);
    sig_free(&g);
}

/* A split shorter than one segment: no spectrum (a zero-padded segment would read tens of dB low),
 * with the metrics' reason, and the curves still there; a silent target beside a prediction that is
 * not: flagged, and no phase where x or y is 0 (atan2(0, 0) is not a phase). */
static void test_short_and_silent(void) {
    sig g = make(1, 2560, 100, 6);
    dpd_plot_in in = {.x = g.x, .ref = g.ref, .pred = g.pred, .S = 1, .N = 2560, .n = 100, .spec = &spec};
    dpd_error err = {0};
    dpd_plot_data *d = dpd_plot_compute(&in, &err);
    CHECK(d && !d->empty && d->nf == 0 && !d->freq && !d->psd[0] && !d->residual && !d->bands &&
              strstr(d->why_no_psd, "100 samples, fewer than one 2560-sample segment"),
          "100 samples in a 2560-sample segment: no spectrum, and why ('%s'; %s)", d ? d->why_no_psd : "", err.msg);
    CHECK(d && d->na == 100 && d->ni == 100 && d->am[1] && d->pm[1], "the curves are still drawn (na %zu)", d ? d->na : 0);
    char *t = d ? dpd_plot_text(d, &err) : NULL;
    json_t *j = t ? json_loads(t, 0, NULL) : NULL;
    CHECK(j && json_is_null(json_object_get(j, "psd")) && json_is_null(json_object_get(j, "residual")) &&
              json_is_string(json_object_get(j, "why_no_psd")) && json_is_object(json_object_get(j, "amam")),
          "the text: psd and residual null, why_no_psd, amam");
    json_decref(j), free(t);
    dpd_plot_free(d);
    in.n = 2560; /* one whole segment: a spectrum */
    d = dpd_plot_compute(&in, &err);
    CHECK(d && d->nf == 2560 && !d->why_no_psd[0], "2560 samples: a spectrum");
    dpd_plot_free(d);
    sig_free(&g);

    g = make(1, 2560, 2560, 7);
    memset(g.ref, 0, 2 * 2560 * sizeof(float));
    g.x[0] = g.x[1] = 0; /* the first sample of x is 0 too */
    in = (dpd_plot_in){.x = g.x, .ref = g.ref, .pred = g.pred, .S = 1, .N = 2560, .n = 2560, .spec = &spec};
    d = dpd_plot_compute(&in, &err);
    int none = d != NULL;
    for (size_t k = 0; d && k < d->na; k++) none &= isnan(d->pm[0][k]);
    CHECK(d && !d->empty && d->silent[0] && !d->silent[1], "a silent target beside a prediction: flagged, not empty");
    CHECK(none, "a silent target has no phase (every AM/PM point NaN)");
    CHECK(d && isnan(d->pm[1][0]) && isfinite(d->pm[1][1]), "x = 0: no phase there; the next sample has one");
    t = d ? dpd_plot_text(d, &err) : NULL;
    j = t ? json_loads(t, 0, NULL) : NULL;
    json_t *sl = json_object_get(j, "silent");
    CHECK(json_array_size(sl) == 1 && !strcmp(json_string_value(json_array_get(sl, 0)), "target"),
          "the text: \"silent\": [\"target\"]");
    json_decref(j), free(t);
    dpd_plot_free(d);
    sig_free(&g);
}

/* dpd_plot_write: the bytes dpd_plot_text makes, written to a file in 16 KiB pieces (the text here
 * is hundreds of KB, and a series name longer than a piece crosses several); a file that refuses
 * the bytes (/dev/full) is DPD_E_IO with the system's reason; NULL data or file is refused. */
static void test_write(void) {
    sig g = make(2, 3000, 5000, 8);
    char name[40000];
    memset(name, 'n', sizeof name - 1), name[sizeof name - 1] = 0; /* longer than two pieces */
    dpd_plot_in in = {.x = g.x, .ref = g.ref, .pred = g.pred, .other = g.other, .S = 2, .N = 3000, .n = 5000,
                      .spec = &spec, .other_name = name};
    dpd_error err = {0};
    dpd_plot_data *d = dpd_plot_compute(&in, &err);
    char *t = d ? dpd_plot_text(d, &err) : NULL, *got = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&got, &n);
    dpd_status s = d && f ? dpd_plot_write(d, f, &err) : DPD_E_NOMEM;
    if (f) fclose(f);
    CHECK(t && !s && got && n == strlen(t) && !memcmp(got, t, n), "dpd_plot_write writes dpd_plot_text's %zu bytes (%zu; %s)",
          t ? strlen(t) : 0, n, err.msg);
    CHECK(t && strlen(t) > 4 * 16384, "the text spans many pieces (%zu bytes)", t ? strlen(t) : 0);
    f = fopen("/dev/full", "w");
    if (f) {
        setvbuf(f, NULL, _IONBF, 0); /* every write reaches the device */
        err = (dpd_error){0};
        s = d ? dpd_plot_write(d, f, &err) : DPD_E_NOMEM;
        CHECK(s == DPD_E_IO && strstr(err.msg, "cannot write the plot data") && strstr(err.msg, strerror(ENOSPC)),
              "a full device: DPD_E_IO, with why (%s)", err.msg);
        fclose(f);
    } else {
        check_skip("plot_write_full", "/dev/full is not there: the failing write is not checked");
    }
    CHECK(dpd_plot_write(NULL, stdout, &err) == DPD_E_INVAL && dpd_plot_write(d, NULL, &err) == DPD_E_INVAL,
          "dpd_plot_write without data or a file is refused");
    free(t), free(got);
    dpd_plot_free(d);
    sig_free(&g);
}

int main(void) {
    test_case(3, 2560, 3 * 2560 - 700); /* stride 1 for the PSD, 2 for AM/AM; a zero-padded tail */
    test_case(2, 10000, 15001);         /* stride 3 for the PSD, 4 for AM/AM */
    test_silent();
    test_ampm_offset();
    test_reference();
    test_profiles();
    test_numbers();
    test_short_and_silent();
    test_text();
    test_measured();
    test_two_steps(DPD_PROFILE_LEGACY);
    test_two_steps(DPD_PROFILE_GENERAL);
    test_write();
    test_bad_arguments();
    return check_done("plot_data");
}
