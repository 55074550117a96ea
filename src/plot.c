/* plot: bounded plot data from a model's output on a split (include/dpd/dpd.h, "plot data"):
 * the PSD the ACLR is computed from with its bands, the residual's spectrum, AM/AM, AM/PM and
 * an I/Q excerpt, as one JSON document ("plots-v1") that `dpd plot` draws and the studio serves.
 * The text is written straight into one growing buffer by a fixed-point number printer: its
 * some 40 000 numbers as a jansson tree dumped with %.15g cost 7 times the time, most of it in
 * malloc and printf. jansson still escapes the strings (series names, messages). */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "dpd/dpd.h"
#include "status.h"

#define MAX_POINTS 4000
#define IQ_POINTS 1000

/* ---- the text ---- */

/* The document as it grows: p[0, len) written, cap bytes allocated. oom: a growth or an escape
 * failed; every later write is dropped and the caller reports it once, at the end. */
typedef struct text {
    char *p;
    size_t len, cap;
    int oom;
} text;

/* Room for more bytes past len and a final NUL; 0 (oom set) if there is none. */
static int room(text *t, size_t more) {
    if (t->oom) return 0;
    if (t->len + more < t->cap) return 1;
    size_t cap = t->cap ? t->cap : (size_t)1 << 16;
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

/* [v[0], v[k], v[2k], ...] of v[0, n), each divided by div, rounded to dec decimals. */
static void put_every(text *t, const double *v, size_t n, size_t k, double div, int dec) {
    put_char(t, '[');
    for (size_t i = 0; i < n; i += k) {
        if (i) put_char(t, ',');
        put_num(t, v[i] / div, dec);
    }
    put_char(t, ']');
}

/* ---- the sections ---- */

/* A curve of one signal y (S, N, 2) against the input x, written by put_series. */
typedef void curve_fn(text *t, const float *y, const float *x, size_t n, size_t stride);

/* |y| of every stride-th of the first n samples, to 6 decimals. */
static void amplitude(text *t, const float *y, const float *x, size_t n, size_t stride) {
    put_char(t, '[');
    for (size_t i = 0; i < n; i += stride) {
        if (i) put_char(t, ',');
        put_num(t, hypot(y[2 * i], y[2 * i + 1]), 6);
    }
    put_char(t, ']');
}

/* The phase of y against x in degrees in [-180, 180], of every stride-th of the first n samples,
 * to 3 decimals. */
static void phase(text *t, const float *y, const float *x, size_t n, size_t stride) {
    put_char(t, '[');
    for (size_t i = 0; i < n; i += stride) {
        if (i) put_char(t, ',');
        const float *a = x + 2 * i, *b = y + 2 * i;
        put_num(t, remainder(atan2(b[1], b[0]) - atan2(a[1], a[0]), 2 * M_PI) * 180 / M_PI, 3);
    }
    put_char(t, ']');
}

/* {"i": [...], "q": [...]}: the first n samples of y, to 6 decimals. */
static void iq(text *t, const float *y, const float *x, size_t n, size_t stride) {
    for (int c = 0; c < 2; c++) {
        put(t, c ? ",\"q\":[" : "{\"i\":[");
        for (size_t i = 0; i < n; i++) {
            if (i) put_char(t, ',');
            put_num(t, y[2 * i + c], 6);
        }
        put_char(t, ']');
    }
    put_char(t, '}');
}

/* {"<name>": curve, ...} of each signal sig[s] that is there (sig[0] always is). */
static void put_series(text *t, const float *const *sig, const char *const *names, curve_fn *curve, const float *x,
                       size_t n, size_t stride) {
    put_char(t, '{');
    for (int s = 0; s < 3; s++) {
        if (!sig[s]) continue;
        if (s) put_char(t, ',');
        put_str(t, names[s]);
        put_char(t, ':');
        curve(t, sig[s], x, n, stride);
    }
    put_char(t, '}');
}

/* "key": [first, last] bin frequency in MHz of bins [a, b) of an N-point fftshifted grid at fs. */
static void put_band(text *t, const char *key, int a, int b, int N, double fs) {
    double step = fs / N;
    put(t, key);
    put_char(t, '[');
    put_num(t, (double)(a - N / 2) * step / 1e6, 6);
    put_char(t, ',');
    put_num(t, (double)(b - 1 - N / 2) * step / 1e6, 6);
    put_char(t, ']');
}

/* "psd": the PSD of each signal in dB at every k-th bin (at most MAX_POINTS) on its frequencies
 * in MHz, and the bands the ACLR sums (or why there are none). f, db: N doubles of scratch.
 * Fails as dpd_psd does. */
static dpd_status put_psd(text *t, const dpd_plot_in *in, const float *const *sig, const char *const *names, double *f,
                          double *db, dpd_error *err) {
    int N = in->N;
    double fs = in->spec->fs;
    size_t stride = ((size_t)N + MAX_POINTS - 1) / MAX_POINTS;
    put(t, ",\"psd\":{\"x_unit\":\"MHz\",\"y_unit\":\"dB\",\"freq\":");
    for (int i = 0; i < 3; i++) {
        if (!sig[i]) continue;
        dpd_status st = dpd_psd(sig[i], in->S, N, fs, f, db, err);
        if (st) return st;
        if (i == 0) { /* sig[0] is always there: its frequencies are every signal's */
            put_every(t, f, (size_t)N, stride, 1e6, 6);
            put(t, ",\"series\":{");
        } else {
            put_char(t, ',');
        }
        put_str(t, names[i]);
        put_char(t, ':');
        put_every(t, db, (size_t)N, stride, 1, 3);
    }
    put(t, "},\"bands\":{");
    dpd_band b;
    dpd_error berr;
    if (!dpd_band_of(N, fs, in->spec->bw_main, in->spec->n_sub, &b, &berr)) { /* as dpd_aclr sums them */
        put_band(t, "\"main\":", b.left, b.right, N, fs);
        put_band(t, ",\"adjacent_left\":", b.left - b.len, b.left, N, fs);
        put_band(t, ",\"adjacent_right\":", b.right, b.right + b.len, N, fs);
    } else {
        put(t, "\"why_none\":");
        put_str(t, berr.msg);
    }
    put(t, "}}");
    return DPD_OK;
}

/* "residual": the PSD of prediction - target, as put_psd's. res (S, N, 2), f, db (N): scratch. */
static dpd_status put_residual(text *t, const dpd_plot_in *in, float *res, double *f, double *db, dpd_error *err) {
    size_t total = (size_t)in->S * (size_t)in->N, stride = ((size_t)in->N + MAX_POINTS - 1) / MAX_POINTS;
    for (size_t i = 0; i < 2 * total; i++) res[i] = in->pred[i] - in->ref[i];
    dpd_status st = dpd_psd(res, in->S, in->N, in->spec->fs, f, db, err);
    if (st) return st;
    put(t, ",\"residual\":{\"x_unit\":\"MHz\",\"y_unit\":\"dB\",\"freq\":");
    put_every(t, f, (size_t)in->N, stride, 1e6, 6);
    put(t, ",\"db\":");
    put_every(t, db, (size_t)in->N, stride, 1, 3);
    put_char(t, '}');
    return DPD_OK;
}

/* "amam" and "ampm" at every k-th real sample (at most MAX_POINTS), then "iq": the first
 * IQ_POINTS samples. */
static void put_curves(text *t, const dpd_plot_in *in, const float *const *sig, const char *const *names) {
    size_t n = in->n, stride = (n + MAX_POINTS - 1) / MAX_POINTS, m = n < IQ_POINTS ? n : IQ_POINTS;
    put(t, ",\"amam\":{\"x_unit\":\"input amplitude\",\"y_unit\":\"output amplitude\",\"input\":");
    amplitude(t, in->x, NULL, n, stride);
    put(t, ",\"series\":");
    put_series(t, sig, names, amplitude, in->x, n, stride);
    put(t, "},\"ampm\":{\"x_unit\":\"input amplitude\",\"y_unit\":\"degrees\",\"input\":");
    amplitude(t, in->x, NULL, n, stride);
    put(t, ",\"series\":");
    put_series(t, sig, names, phase, in->x, n, stride);
    put(t, "},\"iq\":{\"x_unit\":\"sample\",\"sample\":[");
    for (size_t i = 0; i < m; i++) {
        if (i) put_char(t, ',');
        put_int(t, i);
    }
    put(t, "],\"series\":");
    put_series(t, sig, names, iq, in->x, m, 1);
    put_char(t, '}');
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

char *dpd_plot_json(const dpd_plot_in *in, dpd_error *err) {
    if (!in || !in->x || !in->ref || !in->pred || !in->spec || in->S < 1 || in->N < 2 || in->n == 0 ||
        in->n > (size_t)in->S * (size_t)in->N) {
        dpd_fail(err, DPD_E_INVAL, "plot: needs x, ref, pred and spec, S >= 1 segments of N >= 2 samples, 0 < n <= S N");
        return NULL;
    }
    size_t total = (size_t)in->S * (size_t)in->N;
    const char *names[3] = {in->ref_name ? in->ref_name : "target", in->pred_name ? in->pred_name : "prediction",
                            in->other_name ? in->other_name : "other"};
    const float *sig[3] = {in->ref, in->pred, in->other};
    static const char *const field[3] = {"ref_name", "pred_name", "other_name"};
    for (int i = 0; i < 3; i++)
        if (!utf8(names[i])) {
            dpd_fail(err, DPD_E_INVAL, "plot: %s is not UTF-8 text", field[i]);
            return NULL;
        }
    text t = {0};
    double *f = NULL, *db = NULL;
    float *res = NULL;
    put(&t, "{\"version\":\"plots-v1\",\"segments\":");
    put_int(&t, (unsigned long long)in->S);
    put(&t, ",\"segment_samples\":");
    put_int(&t, (unsigned long long)in->N);
    put(&t, ",\"samples\":");
    put_int(&t, in->n);
    put(&t, ",\"fs_mhz\":");
    put_num(&t, in->spec->fs / 1e6, 6);
    put(&t, ",\"empty\":");
    /* a silent capture: say so instead of drawing -inf */
    if (silent(in->ref, total) && silent(in->pred, total)) {
        put_str(&t, "the signals are silent (every sample is zero): nothing to plot");
        goto done;
    }
    put(&t, "null");
    f = malloc((size_t)in->N * sizeof *f), db = malloc((size_t)in->N * sizeof *db);
    res = malloc(2 * total * sizeof *res);
    if (!f || !db || !res) goto nomem;
    if (put_psd(&t, in, sig, names, f, db, err) || put_residual(&t, in, res, f, db, err)) goto fail;
    put_curves(&t, in, sig, names);
done:
    put_char(&t, '}');
    if (!room(&t, 0)) goto nomem; /* room keeps a byte for the NUL */
    t.p[t.len] = '\0';
    free(f), free(db), free(res);
    return t.p;
nomem:
    dpd_fail(err, DPD_E_NOMEM, "plot: out of memory");
fail:
    free(t.p);
    free(f), free(db), free(res);
    return NULL;
}
