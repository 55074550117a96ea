/* plot: bounded plot data from a model's output on a split (include/dpd/dpd.h, "plot data"):
 * the PSD the ACLR is computed from with its bands, the residual's spectrum, AM/AM, AM/PM and
 * an I/Q excerpt. Computed once as numbers (dpd_plot_compute: what `dpd plot` draws, without
 * reading its own text back, which cost a quarter of the end-of-run pictures), then written as
 * one JSON document ("plots-v1", dpd_plot_text) that plots.json holds and the studio serves.
 * The text is written straight into one growing buffer by a fixed-point number printer: its
 * some 40 000 numbers as a jansson tree dumped with %.15g cost 7 times the time, most of it in
 * malloc and printf. jansson still escapes the strings (series names, messages). */
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "dpd/dpd.h"
#include "status.h"


/* ---- the text ---- */

/* The document as it grows: p[0, len) written, cap bytes allocated; with a sink, p holds only
 * what is not yet written to it. oom: a growth or an escape failed, or (bad) the sink refused a
 * write; every later write is dropped and the caller reports it once, at the end. */
typedef struct text {
    char *p;
    size_t len, cap;
    int oom, bad; /* bad: errno of the failed write */
    FILE *sink; /* NULL: the whole text is kept in p */
} text;

/* Writes what p holds to the sink. */
static void flush(text *t) {
    errno = 0;
    if (t->len && fwrite(t->p, 1, t->len, t->sink) != t->len) t->oom = 1, t->bad = errno ? errno : EIO;
    t->len = 0;
}

/* Room for more bytes past len and a final NUL; 0 (oom set) if there is none. With a sink, p is
 * written out first when it is full (16 KiB: a quick run's text is 340 KB, whose fresh pages,
 * each a page fault, cost it 0.9 ms on this project's virtual machines). */
static int room(text *t, size_t more) {
    if (t->oom) return 0;
    if (t->len + more < t->cap) return 1;
    if (t->sink) flush(t);
    if (t->oom || t->len + more < t->cap) return !t->oom;
    size_t cap = t->cap ? t->cap : (size_t)1 << (t->sink ? 14 : 16);
    while (cap <= t->len + more) cap *= 2;
    char *p = realloc(t->p, cap);
    if (!p) {
        t->oom = 1;
        return 0;
    }
    t->p = p, t->cap = cap;
    return 1;
}

/* s as it is: the keys and punctuation spelled out in this file. */
static void put(text *t, const char *s) {
    size_t n = strlen(s);
    if (room(t, n)) memcpy(t->p + t->len, s, n), t->len += n;
}

static void put_char(text *t, char c) {
    if (room(t, 1)) t->p[t->len++] = c;
}

/* s as a JSON string, escaped by jansson as its dump of the document escaped it. Sets oom if
 * jansson refuses s (not UTF-8: dpd_plot_json checks the names first) or has no memory. */
static void put_str(text *t, const char *s) {
    json_t *j = json_string(s);
    char *q = j ? json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    if (q) put(t, q);
    else t->oom = 1;
    free(q);
    json_decref(j);
}

/* The decimal digits of u at o; returns their end (at most 20 bytes). */
static char *digits(char *o, unsigned long long u) {
    char d[20];
    int n = 0;
    do d[n++] = (char)('0' + u % 10), u /= 10;
    while (u);
    while (n) *o++ = d[--n];
    return o;
}

static void put_int(text *t, unsigned long long v) {
    if (room(t, 20)) t->len = (size_t)(digits(t->p + t->len, v) - t->p);
}

/* v rounded to dec (1 to 6) decimals as a JSON number, null if that is not finite: with k =
 * round(v 10^dec), the decimal k / 10^dec written exactly ("-12.5", "2.0", "-0.0"), which a
 * correctly rounding reader turns into the double round(v 10^dec) / 10^dec. Past 15 digits
 * (|k| >= 10^15, never a dB, MHz or amplitude) %.15g of that double, as jansson prints it. */
static void put_num(text *t, double v, int dec) {
    static const double scale[] = {1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6};
    static const unsigned long long unit[] = {1, 10, 100, 1000, 10000, 100000, 1000000};
    assert(dec >= 1 && dec <= 6);
    if (!room(t, 32)) return;
    char *o = t->p + t->len;
    double k = round(v * scale[dec]);
    if (!isfinite(k)) {
        memcpy(o, "null", 4), t->len += 4;
        return;
    }
    if (fabs(k) >= 1e15) {
        int w = snprintf(o, 32, "%.15g", k / scale[dec]);
        if (!strpbrk(o, ".e")) memcpy(o + w, ".0", 2), w += 2;
        t->len += (size_t)w;
        return;
    }
    unsigned long long u = (unsigned long long)fabs(k), frac = u % unit[dec];
    if (signbit(k)) *o++ = '-';
    o = digits(o, u / unit[dec]);
    *o++ = '.';
    char d[6];
    int n = dec;
    for (int i = dec - 1; i >= 0; i--) d[i] = (char)('0' + frac % 10), frac /= 10;
    while (n > 1 && d[n - 1] == '0') n--; /* "2.5", not "2.500"; "2.0", a real as before */
    memcpy(o, d, (size_t)n);
    t->len = (size_t)(o + n - t->p);
}

/* [v[0], ..., v[n - 1]], each to dec decimals (they are rounded already: printed exactly). */
static void put_array(text *t, const double *v, size_t n, int dec) {
    put_char(t, '[');
    for (size_t i = 0; i < n; i++) {
        if (i) put_char(t, ',');
        put_num(t, v[i], dec);
    }
    put_char(t, ']');
}

/* ---- the numbers ---- */

/* v rounded to dec decimals as put_num writes it (and a reader gets it back), NaN if not finite. */
static double rounded(double v, int dec) {
    static const double scale[] = {1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6};
    double k = round(v * scale[dec]);
    return isfinite(k) ? k / scale[dec] : NAN;
}

static double *doubles(size_t n, int *oom) {
    double *v = malloc((n ? n : 1) * sizeof *v);
    if (!v) *oom = 1;
    return v;
}

/* The PSDs of the signals, their frequencies, the residual's PSD and the bands, at every stride-th
 * bin. f, db (N) and res (S, N, 2): scratch. Fails as dpd_psd does. */
/* The main channel's sub-channel with the most power in the PSD db (dpd_psd's dB), the first of
 * equals: the one dpd_aclr takes as its reference. */
static int strongest(const double *db, const dpd_band *b, int n_sub) {
    int best = 0;
    double most = 0;
    for (int c = 0; c < n_sub; c++) {
        double p = 0;
        for (int k = b->left + c * b->len; k < b->left + (c + 1) * b->len; k++) p += pow(10, db[k] / 10);
        if (p > most) most = p, best = c;
    }
    return best;
}

static dpd_status spectra(dpd_plot_data *d, const dpd_plot_in *in, const float *const *sig, double *f, double *db,
                          float *res, int *oom, dpd_error *err) {
    int N = in->N, ref = 0;
    double fs = in->spec->fs;
    size_t stride = ((size_t)N + DPD_PLOT_POINTS - 1) / DPD_PLOT_POINTS, total = (size_t)in->S * (size_t)N;
    d->nf = ((size_t)N + stride - 1) / stride;
    dpd_band b;
    dpd_error berr = {0};
    int legacy = in->profile == DPD_PROFILE_LEGACY;
    double wb[3][2], carrier = 0, wref[2] = {0, 0}; /* a Welch profile's bands, Hz */
    int banded = legacy ? !dpd_band_of(N, fs, in->spec->bw_main, in->spec->n_sub, &b, &berr) /* as dpd_aclr sums them */
                        : !dpd_profile_bands(in->spec, in->profile, wb, &carrier, &berr);
    for (int s = 0; s <= d->nsig; s++) { /* each signal, then the residual */
        if (s == d->nsig)
            for (size_t i = 0; i < 2 * total; i++) res[i] = in->pred[i] - in->ref[i];
        dpd_status st = dpd_psd_of(s < d->nsig ? sig[s] : res, in->S, N, in->n, fs, in->profile, f, db, err);
        if (st) return st;
        if (s == 1 && banded && legacy) ref = strongest(db, &b, in->spec->n_sub); /* the prediction's, whose ACLR is reported */
        if (s == 1 && banded && !legacy) { /* the slice of the main channel with the most power: the reference */
            double most = -1;
            int slices = (int)lround((wb[0][1] - wb[0][0]) / carrier); /* n_sub carriers, or the one main channel */
            for (int i = 0; i < slices; i++) { /* as metrics.c's: [-B/2 + i W, -B/2 + (i + 1) W) */
                double lo = wb[0][0] + i * carrier, hi = wb[0][0] + (i + 1) * carrier, p = 0;
                for (int k = 0; k < N; k++)
                    if (f[k] >= lo && f[k] < hi) p += pow(10, db[k] / 10);
                if (p > most) most = p, wref[0] = lo, wref[1] = hi;
            }
        }
        double *out = doubles(d->nf, oom);
        if (!out) return DPD_OK;
        *(s < d->nsig ? &d->psd[s] : &d->residual) = out;
        for (size_t k = 0; k < d->nf; k++) out[k] = rounded(db[k * stride], 3);
        if (s == 0 && (d->freq = doubles(d->nf, oom))) /* sig[0] is always there: its frequencies are everyone's */
            for (size_t k = 0; k < d->nf; k++) d->freq[k] = rounded(f[k * stride] / 1e6, 6);
    }
    d->profile = in->profile;
    if (banded && legacy) {
        int edge[4][2] = {{b.left, b.right}, {b.left - b.len, b.left}, {b.right, b.right + b.len},
                          {b.left + ref * b.len, b.left + (ref + 1) * b.len}};
        d->bands = 1;
        for (int i = 0; i < 4; i++)
            for (int e = 0; e < 2; e++)
                *(i < 3 ? &d->band[i][e] : &d->ref_band[e]) = rounded((double)(edge[i][e] - e - N / 2) * (fs / N) / 1e6, 6);
    } else if (banded) { /* the Welch profiles' bands, [lo, hi) in MHz */
        d->bands = 1;
        for (int i = 0; i < 4; i++)
            for (int e = 0; e < 2; e++) *(i < 3 ? &d->band[i][e] : &d->ref_band[e]) = rounded((i < 3 ? wb[i][e] : wref[e]) / 1e6, 6);
    } else {
        snprintf(d->why_bands, sizeof d->why_bands, "%s", berr.msg);
    }
    return DPD_OK;
}

/* AM/AM and AM/PM at every stride-th real sample, and the first DPD_PLOT_IQ samples' I and Q. */
static void curves(dpd_plot_data *d, const dpd_plot_in *in, const float *const *sig, int *oom) {
    size_t stride = (in->n + DPD_PLOT_POINTS - 1) / DPD_PLOT_POINTS;
    d->na = (in->n + stride - 1) / stride, d->ni = in->n < DPD_PLOT_IQ ? in->n : DPD_PLOT_IQ;
    if ((d->amp = doubles(d->na, oom)))
        for (size_t k = 0; k < d->na; k++) d->amp[k] = rounded(hypot(in->x[2 * k * stride], in->x[2 * k * stride + 1]), 6);
    int have[DPD_PLOT_SIGNALS] = {0};
    for (int s = 0; s < d->nsig; s++) {
        if (!sig[s] || !(d->am[s] = doubles(d->na, oom)) || !(d->pm[s] = doubles(d->na, oom)) ||
            !(d->i[s] = doubles(d->ni, oom)) || !(d->q[s] = doubles(d->ni, oom)))
            continue;
        have[s] = 1;
        for (size_t k = 0; k < d->ni; k++) d->i[s][k] = rounded(sig[s][2 * k], 6), d->q[s][k] = rounded(sig[s][2 * k + 1], 6);
    }
    /* Each signal's phase against x, power-weighted: arg(sum y conj(x)) over the points. A phase is
     * drawn within 180 degrees of it, so that a capture whose phase offset is near +-180 degrees is
     * one band, not two at the edges of [-180, 180]. */
    double mid[DPD_PLOT_SIGNALS] = {0};
    for (int s = 0; s < d->nsig; s++) {
        double re = 0, im = 0;
        for (size_t k = 0; have[s] && k < d->na; k++) {
            const float *a = in->x + 2 * k * stride, *y = sig[s] + 2 * k * stride;
            re += (double)y[0] * a[0] + (double)y[1] * a[1], im += (double)y[1] * a[0] - (double)y[0] * a[1];
        }
        mid[s] = re || im ? atan2(im, re) : 0;
    }
    for (size_t k = 0; k < d->na; k++) { /* x's phase once for every signal */
        const float *a = in->x + 2 * k * stride;
        double phase = atan2(a[1], a[0]);
        for (int s = 0; s < d->nsig; s++) {
            if (!have[s]) continue;
            const float *y = sig[s] + 2 * k * stride;
            double p = remainder(atan2(y[1], y[0]) - phase, 2 * M_PI); /* [-pi, pi] */
            p += p - mid[s] > M_PI ? -2 * M_PI : p - mid[s] < -M_PI ? 2 * M_PI : 0;
            d->am[s][k] = rounded(hypot(y[0], y[1]), 6);
            d->pm[s][k] = (a[0] || a[1]) && (y[0] || y[1]) ? rounded(p * 180 / M_PI, 3) : NAN; /* atan2(0, 0): no phase */
        }
    }
}

static int silent(const float *a, size_t n) {
    for (size_t i = 0; i < 2 * n; i++)
        if (a[i] != 0) return 0;
    return 1;
}

/* Whether jansson writes s as a JSON string: UTF-8 text. (A few bytes' malloc failing here
 * would read the same; not worth telling apart.) */
static int utf8(const char *s) {
    json_t *j = json_string(s);
    json_decref(j);
    return j != NULL;
}

static char *copy(const char *s, int *oom) {
    char *c = strdup(s);
    if (!c) *oom = 1;
    return c;
}

/* in's signals present, in order (the target, the prediction, the other, the measured), and
 * their names; returns how many. */
static int signals(const dpd_plot_in *in, const char *names[DPD_PLOT_SIGNALS], const float *sig[DPD_PLOT_SIGNALS]) {
    int nsig = 2;
    names[0] = in->ref_name ? in->ref_name : "target", names[1] = in->pred_name ? in->pred_name : "prediction";
    sig[0] = in->ref, sig[1] = in->pred;
    if (in->other) names[nsig] = in->other_name ? in->other_name : "other", sig[nsig++] = in->other;
    if (in->measured) names[nsig] = "measured", sig[nsig++] = in->measured;
    return nsig;
}

/* The spectra's part of d freed: none (nf 0, no bands), as dpd_plot_curves leaves it. */
static void no_spectra(dpd_plot_data *d) {
    free(d->freq), free(d->residual);
    d->freq = d->residual = NULL;
    for (int s = 0; s < DPD_PLOT_SIGNALS; s++) free(d->psd[s]), d->psd[s] = NULL;
    d->nf = 0, d->bands = 0, d->profile = DPD_PROFILE_LEGACY, d->why_bands[0] = 0;
}

dpd_plot_data *dpd_plot_curves(const dpd_plot_in *in, dpd_error *err) {
    if (!in || !in->x || !in->ref || !in->pred || !in->spec || in->S < 1 || in->N < 2 || in->n == 0 ||
        in->n > (size_t)in->S * (size_t)in->N) {
        dpd_fail(err, DPD_E_INVAL, "plot: needs x, ref, pred and spec, S >= 1 segments of N >= 2 samples, 0 < n <= S N");
        return NULL;
    }
    size_t total = (size_t)in->S * (size_t)in->N;
    const char *names[DPD_PLOT_SIGNALS];
    const float *sig[DPD_PLOT_SIGNALS];
    static const char *const field[3] = {"ref_name", "pred_name", "other_name"};
    int nsig = signals(in, names, sig);
    for (int i = 0; i < 3; i++)
        if (!utf8(i < 2 ? names[i] : in->other_name ? in->other_name : "other")) {
            dpd_fail(err, DPD_E_INVAL, "plot: %s is not UTF-8 text", field[i]);
            return NULL;
        }
    dpd_plot_data *d = calloc(1, sizeof *d);
    int oom = !d;
    if (oom) goto done;
    d->S = in->S, d->N = in->N, d->n = in->n, d->fs_mhz = rounded(in->spec->fs / 1e6, 6), d->nsig = nsig;
    for (int i = 0; i < d->nsig; i++) d->name[i] = copy(names[i], &oom);
    for (int i = 0; i < d->nsig; i++) d->silent[i] = silent(sig[i], total);
    if (d->silent[0] && d->silent[1]) { /* say so instead of drawing -inf */
        d->empty = copy("the signals are silent (every sample is zero): nothing to plot", &oom);
        goto done;
    }
    if (in->n < (size_t)in->N) /* as the metrics refuse it (too_short) */
        snprintf(d->why_no_psd, sizeof d->why_no_psd, "the split has %zu samples, fewer than one %d-sample segment: no "
                                                      "spectrum (ACLR is n/a too)", in->n, in->N);
    curves(d, in, sig, &oom);
done:
    if (!oom) return d;
    dpd_fail(err, DPD_E_NOMEM, "plot: out of memory");
    dpd_plot_free(d);
    return NULL;
}

/* d's spectra are due and not there: dpd_plot_curves' data before dpd_plot_spectra. */
static int pending(const dpd_plot_data *d) { return !d->empty && !d->why_no_psd[0] && !d->freq; }

dpd_status dpd_plot_spectra(dpd_plot_data *d, const dpd_plot_in *in, dpd_error *err) {
    const char *names[DPD_PLOT_SIGNALS];
    const float *sig[DPD_PLOT_SIGNALS];
    int same = d && in && in->x && in->ref && in->pred && in->spec && in->S == d->S && in->N == d->N && in->n == d->n &&
               rounded(in->spec->fs / 1e6, 6) == d->fs_mhz && signals(in, names, sig) == d->nsig;
    for (int i = 0; same && i < d->nsig; i++) same = !strcmp(names[i], d->name[i]);
    if (!same) return dpd_fail(err, DPD_E_INVAL, "plot: the spectra need the plot data and the same input it was made from");
    if (!pending(d)) return DPD_OK; /* nothing to plot, no whole segment, or done */
    size_t total = (size_t)in->S * (size_t)in->N;
    int oom = 0;
    double *f = doubles((size_t)in->N, &oom), *db = doubles((size_t)in->N, &oom);
    float *res = malloc(2 * total * sizeof *res);
    dpd_status st = oom || !res ? dpd_fail(err, DPD_E_NOMEM, "plot: out of memory") : spectra(d, in, sig, f, db, res, &oom, err);
    if (!st && oom) st = dpd_fail(err, DPD_E_NOMEM, "plot: out of memory");
    free(f), free(db), free(res);
    if (st) no_spectra(d);
    return st;
}

dpd_plot_data *dpd_plot_compute(const dpd_plot_in *in, dpd_error *err) {
    dpd_plot_data *d = dpd_plot_curves(in, err);
    if (d && dpd_plot_spectra(d, in, err)) dpd_plot_free(d), d = NULL;
    return d;
}

void dpd_plot_free(dpd_plot_data *d) {
    if (!d) return;
    free(d->empty), free(d->freq), free(d->residual), free(d->amp);
    for (int s = 0; s < DPD_PLOT_SIGNALS; s++) free(d->name[s]), free(d->psd[s]), free(d->am[s]), free(d->pm[s]), free(d->i[s]), free(d->q[s]);
    free(d);
}

/* ---- the text ---- */

/* {"<name>": [v[s] ...], ...} of each signal, to dec decimals. */
static void put_series(text *t, const dpd_plot_data *d, double *const *v, size_t n, int dec) {
    put_char(t, '{');
    for (int s = 0; s < d->nsig; s++) {
        if (s) put_char(t, ',');
        put_str(t, d->name[s]);
        put_char(t, ':');
        put_array(t, v[s], n, dec);
    }
    put_char(t, '}');
}

/* "psd" with its bands, and "residual". */
static void put_spectra(text *t, const dpd_plot_data *d) {
    const char *unit = d->profile == DPD_PROFILE_LEGACY ? "dB" : "dB/Hz"; /* per bin, or a Welch density */
    put(t, ",\"psd\":{\"x_unit\":\"MHz\",\"y_unit\":\"");
    put(t, unit);
    put(t, "\",\"profile\":");
    put_str(t, dpd_profile_name(d->profile));
    put(t, ",\"freq\":");
    put_array(t, d->freq, d->nf, 6);
    put(t, ",\"series\":");
    put_series(t, d, d->psd, d->nf, 3);
    put(t, ",\"bands\":{");
    static const char *const band[4] = {"\"main\":[", ",\"adjacent_left\":[", ",\"adjacent_right\":[",
                                        ",\"reference\":["};
    for (int i = 0; d->bands && i < 4; i++) {
        put(t, band[i]);
        put_num(t, i < 3 ? d->band[i][0] : d->ref_band[0], 6);
        put_char(t, ',');
        put_num(t, i < 3 ? d->band[i][1] : d->ref_band[1], 6);
        put_char(t, ']');
    }
    if (!d->bands) {
        put(t, "\"why_none\":");
        put_str(t, d->why_bands);
    }
    put(t, "}},\"residual\":{\"x_unit\":\"MHz\",\"y_unit\":\"");
    put(t, unit);
    put(t, "\",\"freq\":");
    put_array(t, d->freq, d->nf, 6);
    put(t, ",\"db\":");
    put_array(t, d->residual, d->nf, 3);
    put_char(t, '}');
}

/* "psd" with its bands, "residual", "amam", "ampm" and "iq" (or, without spectra, "why_no_psd" and
 * "psd" and "residual" null). */
static void put_sections(text *t, const dpd_plot_data *d) {
    if (d->why_no_psd[0]) {
        put(t, ",\"why_no_psd\":");
        put_str(t, d->why_no_psd);
        put(t, ",\"psd\":null,\"residual\":null");
    } else {
        put_spectra(t, d);
    }
    put(t, ",\"amam\":{\"x_unit\":\"input amplitude\",\"y_unit\":\"output amplitude\",\"input\":");
    put_array(t, d->amp, d->na, 6);
    put(t, ",\"series\":");
    put_series(t, d, d->am, d->na, 6);
    put(t, "},\"ampm\":{\"x_unit\":\"input amplitude\",\"y_unit\":\"degrees\",\"input\":");
    put_array(t, d->amp, d->na, 6);
    put(t, ",\"series\":");
    put_series(t, d, d->pm, d->na, 3);
    put(t, "},\"iq\":{\"x_unit\":\"sample\",\"sample\":[");
    for (size_t k = 0; k < d->ni; k++) {
        if (k) put_char(t, ',');
        put_int(t, k);
    }
    put(t, "],\"series\":{");
    for (int s = 0; s < d->nsig; s++) {
        if (s) put_char(t, ',');
        put_str(t, d->name[s]);
        put(t, ":{\"i\":");
        put_array(t, d->i[s], d->ni, 6);
        put(t, ",\"q\":");
        put_array(t, d->q[s], d->ni, 6);
        put_char(t, '}');
    }
    put(t, "}}");
}

/* The whole document into t. */
static void document(text *t, const dpd_plot_data *d) {
    put(t, "{\"version\":\"plots-v1\",\"segments\":");
    put_int(t, (unsigned long long)d->S);
    put(t, ",\"segment_samples\":");
    put_int(t, (unsigned long long)d->N);
    put(t, ",\"samples\":");
    put_int(t, d->n);
    put(t, ",\"fs_mhz\":");
    put_num(t, d->fs_mhz, 6);
    put(t, ",\"silent\":[");
    for (int s = 0, k = 0; s < d->nsig; s++)
        if (d->silent[s]) {
            if (k++) put_char(t, ',');
            put_str(t, d->name[s]);
        }
    put(t, "],\"empty\":");
    if (d->empty) {
        put_str(t, d->empty);
    } else {
        put(t, "null");
        put_sections(t, d);
    }
    put_char(t, '}');
}

#define PENDING "plot: the plot data has no spectra yet (dpd_plot_curves' data: dpd_plot_spectra adds them)"

char *dpd_plot_text(const dpd_plot_data *d, dpd_error *err) {
    if (!d || pending(d)) {
        dpd_fail(err, DPD_E_INVAL, d ? PENDING : "plot: no plot data");
        return NULL;
    }
    text t = {0};
    document(&t, d);
    if (!room(&t, 0)) { /* room keeps a byte for the NUL */
        free(t.p);
        dpd_fail(err, DPD_E_NOMEM, "plot: out of memory");
        return NULL;
    }
    t.p[t.len] = '\0';
    return t.p;
}

dpd_status dpd_plot_write(const dpd_plot_data *d, FILE *f, dpd_error *err) {
    if (!d || !f) return dpd_fail(err, DPD_E_INVAL, "plot: no plot data or no file");
    if (pending(d)) return dpd_fail(err, DPD_E_INVAL, PENDING);
    text t = {.sink = f};
    document(&t, d);
    if (!t.oom) flush(&t);
    free(t.p);
    if (t.bad) return dpd_fail(err, DPD_E_IO, "plot: cannot write the plot data: %s", strerror(t.bad));
    if (t.oom) return dpd_fail(err, DPD_E_NOMEM, "plot: out of memory");
    return DPD_OK;
}

char *dpd_plot_json(const dpd_plot_in *in, dpd_error *err) {
    dpd_plot_data *d = dpd_plot_compute(in, err);
    char *t = d ? dpd_plot_text(d, err) : NULL;
    dpd_plot_free(d);
    return t;
}
