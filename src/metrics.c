/* metrics: NMSE, spectral EVM and ACLR exactly as OpenDPD v2.0.0 computes them (reference §6),
 * and dpd_metrics_compute / dpd_metrics_aclr, which say for each metric whether it could be
 * computed (ok, invalid, not_applicable) and why not. Inputs are float32 (S, N, 2); sums run in
 * double, FFTs in float through kissfft. Does not print, log, or change the numbers OpenDPD's
 * formulas give for ordinary inputs: the status layer only inspects them. */
#include <kiss_fft.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dpd/dpd.h"
#include "metrics.h"
#include "status.h"

/* Frequency of fftshift-ordered bin k, computed as numpy's fftfreq does so band edges that fall
 * exactly on a bin compare the same way. */
static double bin_freq(int k, int N, double fs) {
    double val = 1.0 / ((double)N * (1.0 / fs));
    return (double)(k - N / 2) * val;
}

/* First and last fftshift-ordered bins inside [-bw/2, bw/2]; -1 when none. */
static void band_edges(int N, double fs, double bw, int *left, int *right) {
    int l = -1, r = -1;
    for (int k = 0; k < N; k++) {
        double f = bin_freq(k, N, fs);
        if (l < 0 && f >= -bw / 2) l = k;
        if (f <= bw / 2) r = k;
    }
    *left = l, *right = r;
}

dpd_status dpd_band_of(int N, double fs, double bw, int n_sub, dpd_band *b, dpd_error *err) {
    if (N < 2 || !(fs > 0) || !(bw > 0) || n_sub < 1)
        return dpd_fail(err, DPD_E_INVAL, "band: need N >= 2, fs > 0, bw > 0, n_sub >= 1");
    int l, r;
    band_edges(N, fs, bw, &l, &r);
    if (l < 0 || r < l)
        return dpd_fail(err, DPD_E_INVAL, "band: %g Hz does not fit in %d bins at %g Hz", bw, N, fs);
    b->left = l, b->right = r, b->len = (r - l) / n_sub;
    if (b->len < 1)
        return dpd_fail(err, DPD_E_INVAL, "band: %d sub-channels do not fit in %d bins", n_sub,
                        r - l);
    if (l - b->len < 0 || r + b->len > N)
        return dpd_fail(err, DPD_E_INVAL,
                        "band: adjacent channels of %d bins fall outside the %d-bin spectrum "
                        "(bw_main_ch %g too wide for fs %g)",
                        b->len, N, bw, fs);
    return DPD_OK;
}

double dpd_nmse(const float *pred, const float *ref, int S, int N) {
    double acc = 0;
    for (int s = 0; s < S; s++) {
        double e = 0, p = 0;
        const float *a = pred + (size_t)s * N * 2, *r = ref + (size_t)s * N * 2;
        for (int i = 0; i < 2 * N; i++) {
            double d = (double)a[i] - (double)r[i];
            e += d * d;
            p += (double)r[i] * r[i];
        }
        acc += 10.0 * log10(e / p);
    }
    return acc / S;
}

/* fftshift-ordered N-point FFT of one segment, windowed by win (NULL: none) after removing the
 * segment's mean when detrend is set. */
static void segment_fft(kiss_fft_cfg cfg, const float *iq, int N, const double *win, int detrend,
                        kiss_fft_cpx *in, kiss_fft_cpx *out, kiss_fft_cpx *shifted) {
    double mi = 0, mq = 0;
    if (detrend) {
        for (int i = 0; i < N; i++) mi += iq[2 * i], mq += iq[2 * i + 1];
        mi /= N, mq /= N;
    }
    for (int i = 0; i < N; i++) {
        double w = win ? win[i] : 1.0;
        in[i].r = (float)((iq[2 * i] - mi) * w);
        in[i].i = (float)((iq[2 * i + 1] - mq) * w);
    }
    kiss_fft(cfg, in, out);
    for (int k = 0; k < N; k++) shifted[k] = out[(k + N - N / 2) % N];
}

typedef struct fftbuf {
    kiss_fft_cfg cfg;
    kiss_fft_cpx *in, *out, *a, *b;
} fftbuf;

static dpd_status fftbuf_init(fftbuf *f, int N, dpd_error *err) {
    f->cfg = kiss_fft_alloc(N, 0, NULL, NULL);
    f->in = malloc(4 * (size_t)N * sizeof *f->in);
    if (!f->cfg || !f->in) {
        kiss_fft_free(f->cfg);
        free(f->in);
        return dpd_fail(err, DPD_E_NOMEM, "metrics: out of memory for a %d-point FFT", N);
    }
    f->out = f->in + N, f->a = f->out + N, f->b = f->a + N;
    return DPD_OK;
}

static void fftbuf_free(fftbuf *f) {
    kiss_fft_free(f->cfg);
    free(f->in);
}

dpd_status dpd_evm(const float *pred, const float *ref, int S, int N, double sr, double bw,
                   int n_sub, double *evm, dpd_error *err) {
    dpd_band b;
    fftbuf f = {0};
    dpd_status s = dpd_band_of(N, sr, bw, n_sub, &b, err);
    if (s || (s = fftbuf_init(&f, N, err))) return s;
    double acc = 0;
    for (int seg = 0; seg < S; seg++) {
        segment_fft(f.cfg, pred + (size_t)seg * N * 2, N, NULL, 0, f.in, f.out, f.a);
        segment_fft(f.cfg, ref + (size_t)seg * N * 2, N, NULL, 0, f.in, f.out, f.b);
        double per = 0;
        for (int c = 0; c < n_sub; c++) {
            double num = 0, den = 0;
            for (int k = b.left + c * b.len; k < b.left + (c + 1) * b.len; k++) {
                num += hypot((double)f.a[k].r - f.b[k].r, (double)f.a[k].i - f.b[k].i);
                den += hypot((double)f.b[k].r, (double)f.b[k].i);
            }
            per += num / den; /* the 1/len of both means cancels */
        }
        acc += per / n_sub;
    }
    fftbuf_free(&f);
    *evm = 20.0 * log10(acc / S);
    return DPD_OK;
}

/* Welch's averaged periodogram of S segments of N samples (periodic Hann, each segment's mean
 * removed, fftshift order), summed over segments: P[k] / S is the mean. */
static dpd_status welch(const float *sig, int S, int N, double *P, dpd_error *err) {
    fftbuf f = {0};
    dpd_status s = fftbuf_init(&f, N, err);
    if (s) return s;
    double *win = malloc((size_t)N * sizeof *win), wsum = 0;
    if (!win) {
        fftbuf_free(&f);
        return dpd_fail(err, DPD_E_NOMEM, "metrics: out of memory");
    }
    for (int i = 0; i < N; i++) { /* periodic Hann */
        win[i] = 0.5 - 0.5 * cos(2.0 * M_PI * i / N);
        wsum += win[i];
        P[i] = 0;
    }
    for (int seg = 0; seg < S; seg++) {
        segment_fft(f.cfg, sig + (size_t)seg * N * 2, N, win, 1, f.in, f.out, f.a);
        for (int k = 0; k < N; k++)
            P[k] += ((double)f.a[k].r * f.a[k].r + (double)f.a[k].i * f.a[k].i) / (wsum * wsum);
    }
    free(win);
    fftbuf_free(&f);
    return DPD_OK;
}

dpd_status dpd_aclr(const float *sig, int S, int N, double fs, double bw, int n_sub, double *left,
                    double *right, dpd_error *err) {
    dpd_band b;
    dpd_status s = dpd_band_of(N, fs, bw, n_sub, &b, err);
    if (s) return s;
    double *P = malloc((size_t)N * sizeof *P);
    if (!P) return dpd_fail(err, DPD_E_NOMEM, "metrics: out of memory");
    if ((s = welch(sig, S, N, P, err))) {
        free(P);
        return s;
    }
    double smax = 0, pl = 0, pr = 0;
    for (int c = 0; c < n_sub; c++) {
        double sc = 0;
        for (int k = b.left + c * b.len; k < b.left + (c + 1) * b.len; k++) sc += P[k] / S;
        if (sc > smax) smax = sc;
    }
    for (int k = b.left - b.len; k < b.left; k++) pl += P[k] / S;
    for (int k = b.right; k < b.right + b.len; k++) pr += P[k] / S;
    free(P);
    *left = 10.0 * log10(pl / smax);
    *right = 10.0 * log10(pr / smax);
    return DPD_OK;
}

dpd_status dpd_psd(const float *sig, int S, int N, double fs, double *freq, double *db, dpd_error *err) {
    if (!sig || !db || S < 1 || N < 2 || !(fs > 0))
        return dpd_fail(err, DPD_E_INVAL, "psd: needs a signal, S >= 1 segments of N >= 2 samples and fs > 0");
    dpd_status s = welch(sig, S, N, db, err);
    if (s) return s;
    for (int k = 0; k < N; k++) {
        db[k] = db[k] > 0 ? 10.0 * log10(db[k] / S) : -INFINITY;
        if (freq) freq[k] = bin_freq(k, N, fs);
    }
    return DPD_OK;
}

/* ---- statuses ------------------------------------------------------------------------------ */

static const char *const metric_names[DPD_NMETRICS] = {"NMSE", "EVM", "ACLR_L", "ACLR_R",
                                                       "ACLR_AVG"};

const char *dpd_metric_name(int k) {
    return k >= 0 && k < DPD_NMETRICS ? metric_names[k] : NULL;
}

double *dpd_metric_slot(dpd_metrics *m, int k) {
    switch (k) {
    case DPD_NMSE: return &m->nmse;
    case DPD_EVM: return &m->evm;
    case DPD_ACLR_L: return &m->aclr_l;
    case DPD_ACLR_R: return &m->aclr_r;
    default: return &m->aclr_avg;
    }
}

/* NaN for k out of range (there is no such metric) or m NULL. */
double dpd_metric_value(const dpd_metrics *m, int k) {
    if (!m || k < 0 || k >= DPD_NMETRICS) return NAN;
    return *dpd_metric_slot((dpd_metrics *)m, k);
}

const char *dpd_metric_status_str(dpd_metric_status s) {
    switch (s) {
    case DPD_METRIC_OK: return "ok";
    case DPD_METRIC_INVALID: return "invalid";
    case DPD_METRIC_NOT_APPLICABLE: return "not_applicable";
    }
    return "unknown";
}

/* Metric k is not computed: its value becomes NaN, its reason the formatted text (cut at 95). */
__attribute__((format(printf, 4, 5))) static void refuse(dpd_metrics *m, int k,
                                                         dpd_metric_status st, const char *fmt,
                                                         ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->reason[k], sizeof m->reason[k], fmt, ap);
    va_end(ap);
    *dpd_metric_slot(m, k) = NAN;
    m->status[k] = st;
}

/* Metric k got value v; a non-finite v is invalid with `why` (the caller's diagnosis). */
static void accept(dpd_metrics *m, int k, double v, const char *why) {
    if (isfinite(v)) {
        *dpd_metric_slot(m, k) = v;
        m->status[k] = DPD_METRIC_OK;
        m->reason[k][0] = '\0';
    } else {
        refuse(m, k, DPD_METRIC_INVALID, "%s", why);
    }
}

/* Every metric not_applicable with the same reason. */
static void refuse_all(dpd_metrics *m, const char *why) {
    for (int k = 0; k < DPD_NMETRICS; k++) refuse(m, k, DPD_METRIC_NOT_APPLICABLE, "%s", why);
}

/* ---- diagnosis of a non-finite result (only run when one occurs) ---------------------------- */

/* 1 when every one of the len floats is finite. */
static int all_finite(const float *x, size_t len) {
    for (size_t i = 0; i < len; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

/* Sum of squares of x[0..len) (0 exactly when x is all zeros). */
static double energy(const float *x, size_t len) {
    double e = 0;
    for (size_t i = 0; i < len; i++) e += (double)x[i] * x[i];
    return e;
}

/* Why NMSE (evm 0) or EVM (evm 1) of pred against ref came out as the non-finite v. */
static void diagnose_pair(const float *pred, const float *ref, int S, int N, int evm, double v,
                          char reason[96]) {
    size_t len = (size_t)S * N * 2;
    if (!all_finite(pred, len))
        snprintf(reason, 96, "the prediction contains NaN or Inf samples");
    else if (!all_finite(ref, len))
        snprintf(reason, 96, "the reference signal contains NaN or Inf samples");
    else if (energy(ref, len) == 0)
        snprintf(reason, 96, "the reference signal is silent");
    else if (evm && v == -INFINITY)
        snprintf(reason, 96, "the prediction equals the reference in every sub-channel (-inf dB)");
    else if (evm)
        snprintf(reason, 96, "the reference has no power in a sub-channel of some segment");
    else {
        snprintf(reason, 96, "NMSE is not finite");
        for (int s = 0; s < S; s++) {
            const float *a = pred + (size_t)s * N * 2, *r = ref + (size_t)s * N * 2;
            double e = 0;
            for (int i = 0; i < 2 * N; i++) e += ((double)a[i] - r[i]) * ((double)a[i] - r[i]);
            if (energy(r, 2 * (size_t)N) == 0) {
                snprintf(reason, 96, "the reference signal is silent in segment %d of %d", s + 1, S);
                return;
            }
            if (e == 0) {
                snprintf(reason, 96, "the prediction equals the reference in segment %d of %d "
                                     "(-inf dB)", s + 1, S);
                return;
            }
        }
    }
}

/* Why the ACLR of sig is not finite: x is the left or right value dpd_aclr gave. */
static void diagnose_aclr(const float *sig, int S, int N, double x, const char *side,
                          char *reason) {
    size_t len = (size_t)S * N * 2;
    if (!all_finite(sig, len))
        snprintf(reason, 96, "the signal contains NaN or Inf samples");
    else if (energy(sig, len) == 0)
        snprintf(reason, 96, "the signal is silent");
    else if (x == -INFINITY)
        snprintf(reason, 96, "the signal has no power in the %s adjacent channel (-inf dBc)", side);
    else
        snprintf(reason, 96, "the signal has no power in the main channel");
}

/* Why the band plan fails for N bins at fs (the caller saw dpd_band_of fail). */
static void diagnose_band(int N, double fs, double bw, int n_sub, char *reason) {
    int l, r;
    if (!(fs > 0) || !(bw > 0) || n_sub < 1) {
        snprintf(reason, 96, "the band plan is unusable: fs %g MHz, channel %g MHz, %d sub-channels",
                 fs / 1e6, bw / 1e6, n_sub);
        return;
    }
    band_edges(N, fs, bw, &l, &r);
    if (bw >= fs || l < 0 || r < l)
        snprintf(reason, 96, "the %g MHz channel does not fit in the %g MHz spectrum", bw / 1e6,
                 fs / 1e6);
    else if ((r - l) / n_sub < 1)
        snprintf(reason, 96, "%d sub-channels do not fit in the %g MHz channel (%d bins of %g kHz)",
                 n_sub, bw / 1e6, r - l, fs / N / 1e3);
    else
        snprintf(reason, 96, "the %g MHz channel's adjacent channels fall outside the %g MHz spectrum",
                 bw / 1e6, fs / 1e6);
}

/* ---- the five metrics ----------------------------------------------------------------------- */

static dpd_status check_args(const void *a, const void *b, int S, int N, size_t n,
                             const dpd_spec *sp, dpd_metrics *m, dpd_error *err) {
    if (!a || !b || !sp || !m)
        return dpd_fail(err, DPD_E_INVAL, "metrics: a signal, the spec or the result is NULL");
    if (S < 1 || N < 2)
        return dpd_fail(err, DPD_E_INVAL, "metrics: need S >= 1 segments of N >= 2 samples, got "
                                          "S %d, N %d", S, N);
    if (n > (size_t)S * N)
        return dpd_fail(err, DPD_E_INVAL, "metrics: %zu real samples do not fit in %d segments "
                                          "of %d", n, S, N);
    return DPD_OK;
}

/* Common start: all statuses cleared; 1 when the split is too short for any metric. */
static int too_short(dpd_metrics *m, int N, size_t n) {
    for (int k = 0; k < DPD_NMETRICS; k++) refuse(m, k, DPD_METRIC_NOT_APPLICABLE, "not computed");
    if (n >= (size_t)N) return 0;
    char why[96];
    snprintf(why, sizeof why, "the split has %zu samples, fewer than one %d-sample segment", n, N);
    refuse_all(m, why);
    return 1;
}

/* ACLR_AVG (or ACPR_AVG) from the two sides: their mean in dB when both are ok; otherwise the
 * worse side's status and reason. */
static void average(dpd_metrics *m) {
    if (m->status[DPD_ACLR_L] == DPD_METRIC_OK && m->status[DPD_ACLR_R] == DPD_METRIC_OK) {
        accept(m, DPD_ACLR_AVG, (m->aclr_l + m->aclr_r) / 2, "the ACLR average is not finite");
    } else {
        int k = m->status[DPD_ACLR_L] == DPD_METRIC_INVALID || m->status[DPD_ACLR_R] == DPD_METRIC_OK ? DPD_ACLR_L
                                                                                                     : DPD_ACLR_R;
        refuse(m, DPD_ACLR_AVG, m->status[k], "%s", m->reason[k]);
    }
}

/* ACLR_L, ACLR_R and ACLR_AVG of sig; fails only for out of memory. */
static dpd_status aclr_entries(const float *sig, int S, int N, const dpd_spec *sp,
                               dpd_metrics *m, dpd_error *err) {
    dpd_band b;
    dpd_error e;
    char why[96];
    if (dpd_band_of(N, sp->fs, sp->bw_main, sp->n_sub, &b, &e) != DPD_OK) {
        diagnose_band(N, sp->fs, sp->bw_main, sp->n_sub, why);
        for (int k = DPD_ACLR_L; k <= DPD_ACLR_AVG; k++)
            refuse(m, k, DPD_METRIC_NOT_APPLICABLE, "%s", why);
        return DPD_OK;
    }
    double l, r;
    dpd_status s = dpd_aclr(sig, S, N, sp->fs, sp->bw_main, sp->n_sub, &l, &r, err);
    if (s) return s;
    if (!isfinite(l)) diagnose_aclr(sig, S, N, l, "left", why);
    accept(m, DPD_ACLR_L, l, why);
    if (!isfinite(r)) diagnose_aclr(sig, S, N, r, "right", why);
    accept(m, DPD_ACLR_R, r, why);
    average(m);
    return DPD_OK;
}

/* legacy-opendpd-v1 (reference §1.1): every segment, the padded tail included. */
static dpd_status legacy(const float *pred, const float *ref, int S, int N, size_t n, const dpd_spec *sp,
                         double evm_fs, dpd_metrics *m, dpd_error *err) {
    if (too_short(m, N, n)) return DPD_OK;
    char why[96] = "";
    dpd_status s;
    double v = dpd_nmse(pred, ref, S, N);
    if (!isfinite(v)) diagnose_pair(pred, ref, S, N, 0, v, why);
    accept(m, DPD_NMSE, v, why);

    double sr = evm_fs > 0 ? evm_fs : sp->fs;
    dpd_band b;
    dpd_error e;
    if (dpd_band_of(N, sr, sp->bw_main, sp->n_sub, &b, &e) != DPD_OK) {
        diagnose_band(N, sr, sp->bw_main, sp->n_sub, why);
        refuse(m, DPD_EVM, DPD_METRIC_NOT_APPLICABLE, "%s", why);
    } else {
        if ((s = dpd_evm(pred, ref, S, N, sr, sp->bw_main, sp->n_sub, &v, err))) return s;
        if (!isfinite(v)) diagnose_pair(pred, ref, S, N, 1, v, why);
        accept(m, DPD_EVM, v, why);
    }
    return aclr_entries(pred, S, N, sp, m, err);
}

/* ---- general-spectral-v1 and opendpd-spectral-v2 (reference §1.2, §1.3) ---------------------- */

/* Welch's density PSD of the n samples of sig ((n, 2)), fftshift order: frames of L samples at
 * every multiple of L - floor(L/2) with start + L <= n, periodic Hann, no detrend,
 * |X|^2 / (fs sum w^2), averaged over the frames. Needs n >= L. */
static dpd_status density(const float *sig, size_t n, int L, double fs, double *P, dpd_error *err) {
    fftbuf f = {0};
    dpd_status s = fftbuf_init(&f, L, err);
    if (s) return s;
    double *win = malloc((size_t)L * sizeof *win), w2 = 0;
    if (!win) {
        fftbuf_free(&f);
        return dpd_fail(err, DPD_E_NOMEM, "metrics: out of memory");
    }
    for (int i = 0; i < L; i++) { /* periodic Hann */
        win[i] = 0.5 - 0.5 * cos(2.0 * M_PI * i / L);
        w2 += win[i] * win[i];
        P[i] = 0;
    }
    size_t step = (size_t)(L - L / 2), frames = 0;
    for (size_t at = 0; at + (size_t)L <= n; at += step, frames++) {
        segment_fft(f.cfg, sig + at * 2, L, win, 0, f.in, f.out, f.a);
        for (int k = 0; k < L; k++) P[k] += (double)f.a[k].r * f.a[k].r + (double)f.a[k].i * f.a[k].i;
    }
    for (int k = 0; k < L; k++) P[k] /= fs * w2 * (double)frames;
    free(win);
    fftbuf_free(&f);
    return DPD_OK;
}

dpd_status dpd_psd_of(const float *sig, int S, int N, size_t n, double fs, dpd_profile p, double *freq, double *db,
                      dpd_error *err) {
    if (p == DPD_PROFILE_LEGACY) return dpd_psd(sig, S, N, fs, freq, db, err);
    if (!sig || !db || S < 1 || N < 2 || !(fs > 0) || n > (size_t)S * (size_t)N)
        return dpd_fail(err, DPD_E_INVAL, "psd: needs a signal, S >= 1 segments of N >= 2 samples, n <= S N and fs > 0");
    if (n < (size_t)N)
        return dpd_fail(err, DPD_E_INVAL, "psd: %zu samples, fewer than one %d-sample segment", n, N);
    dpd_status s = density(sig, n, N, fs, db, err);
    if (s) return s;
    for (int k = 0; k < N; k++) {
        db[k] = db[k] > 0 ? 10.0 * log10(db[k]) : -INFINITY;
        if (freq) freq[k] = bin_freq(k, N, fs);
    }
    return DPD_OK;
}

/* Power in [lo, hi) Hz: the sum of P over the bins whose centre frequency lies in it, times fs / L;
 * *bins their count. */
static double band_power(const double *P, int L, double fs, double lo, double hi, int *bins) {
    double sum = 0;
    *bins = 0;
    for (int k = 0; k < L; k++) {
        double f = bin_freq(k, L, fs);
        if (f >= lo && f < hi) sum += P[k], ++*bins;
    }
    return sum * fs / L;
}

/* 10 log10(ratio), with a ratio of 0 reported as -300 dB (the profiles' floor, never -inf). */
static double floor_db(double ratio) { return ratio > 0 ? 10.0 * log10(ratio) : -300.0; }

/* 1 when every sample of the n (n, 2) is finite. */
static int finite_iq(const float *x, size_t n) { return all_finite(x, 2 * n); }

/* NMSE pooled over the valid range: 10 log10(sum|p - r|^2 / sum|r|^2), -300 for no error. */
static void pooled_nmse(const float *pred, const float *ref, size_t n, dpd_metrics *m) {
    if (!finite_iq(pred, n) || !finite_iq(ref, n)) {
        refuse(m, DPD_NMSE, DPD_METRIC_INVALID, "the %s contains NaN or Inf samples",
               finite_iq(pred, n) ? "reference signal" : "prediction");
        return;
    }
    double e = 0, p = 0;
    for (size_t i = 0; i < 2 * n; i++) {
        double d = (double)pred[i] - (double)ref[i];
        e += d * d, p += (double)ref[i] * ref[i];
    }
    if (p == 0) refuse(m, DPD_NMSE, DPD_METRIC_INVALID, "the reference signal is silent");
    else accept(m, DPD_NMSE, floor_db(e / p), "NMSE is not finite");
}

/* Metric k is not_applicable when [lo, hi) leaves the spectrum or holds no bin; 1 when it was refused. */
static int band_refused(dpd_metrics *m, int k, const char *what, double lo, double hi, int bins, double fs) {
    if (lo < -fs / 2 || hi > fs / 2) {
        refuse(m, k, DPD_METRIC_NOT_APPLICABLE, "the %s [%g, %g) MHz lies outside the %g MHz spectrum", what, lo / 1e6,
               hi / 1e6, fs / 1e6);
        return 1;
    }
    if (!bins) {
        refuse(m, k, DPD_METRIC_NOT_APPLICABLE, "the %s [%g, %g) MHz holds no frequency bin", what, lo / 1e6, hi / 1e6);
        return 1;
    }
    return 0;
}

/* IBE = 10 log10(P_main(pred - ref) / P_main(ref)) over [-B/2, B/2) (general-v1 rule 7). P: scratch. */
static dpd_status ibe(const float *pred, const float *ref, size_t n, int L, const dpd_spec *sp, double *P,
                      dpd_metrics *m, dpd_error *err) {
    double fs = sp->fs, B = sp->bw_main;
    if (!finite_iq(pred, n) || !finite_iq(ref, n)) {
        refuse(m, DPD_EVM, DPD_METRIC_INVALID, "the %s contains NaN or Inf samples",
               finite_iq(pred, n) ? "reference signal" : "prediction");
        return DPD_OK;
    }
    float *d = malloc(2 * n * sizeof *d);
    if (!d) return dpd_fail(err, DPD_E_NOMEM, "metrics: out of memory");
    for (size_t i = 0; i < 2 * n; i++) d[i] = pred[i] - ref[i];
    int bins;
    dpd_status s = density(ref, n, L, fs, P, err);
    double pr = s ? 0 : band_power(P, L, fs, -B / 2, B / 2, &bins);
    if (!s) s = density(d, n, L, fs, P, err);
    free(d);
    if (s || band_refused(m, DPD_EVM, "main channel", -B / 2, B / 2, bins, fs)) return s;
    if (!(pr > 0)) {
        refuse(m, DPD_EVM, DPD_METRIC_INVALID, "the reference has no power in the main channel");
        return DPD_OK;
    }
    accept(m, DPD_EVM, floor_db(band_power(P, L, fs, -B / 2, B / 2, &bins) / pr), "IBE is not finite");
    return DPD_OK;
}

dpd_status dpd_profile_bands(const dpd_spec *sp, dpd_profile p, double band[3][2], double *carrier, dpd_error *err) {
    if (p != DPD_PROFILE_GENERAL && p != DPD_PROFILE_V2)
        return dpd_fail(err, DPD_E_INVAL, "profile bands: the legacy profile's bands are bins (dpd_band_of)");
    if (!sp || !(sp->fs > 0) || !(sp->bw_main > 0) || (p == DPD_PROFILE_V2 && sp->n_sub < 1))
        return dpd_fail(err, DPD_E_INVAL, "profile bands: need fs, the channel bandwidth%s",
                        p == DPD_PROFILE_V2 ? " and the carrier count" : "");
    double fs = sp->fs, B = sp->bw_main, W = p == DPD_PROFILE_V2 ? B / sp->n_sub : B;
    band[0][0] = -B / 2, band[0][1] = B / 2;
    band[1][0] = -B / 2 - W, band[1][1] = -B / 2;
    band[2][0] = B / 2, band[2][1] = B / 2 + W;
    *carrier = W;
    if (B / 2 + W > fs / 2)
        return dpd_fail(err, DPD_E_UNSUPPORTED, "the adjacent channels reach %g MHz, past fs/2 = %g MHz", (B / 2 + W) / 1e6,
                        fs / 2e6);
    return DPD_OK;
}

/* The adjacent-channel entries of sig: general-v1's ACPR (adjacent bands B wide against the main
 * channel) or spectral-v2's ACLR (bands one carrier wide against the strongest carrier). */
static dpd_status adjacent(const float *sig, size_t n, int L, const dpd_spec *sp, dpd_profile p, double *P,
                           dpd_metrics *m, dpd_error *err) {
    double fs = sp->fs, B = sp->bw_main, W = p == DPD_PROFILE_V2 ? B / sp->n_sub : B;
    if (!finite_iq(sig, n)) {
        for (int k = DPD_ACLR_L; k <= DPD_ACLR_AVG; k++)
            refuse(m, k, DPD_METRIC_INVALID, "the signal contains NaN or Inf samples");
        return DPD_OK;
    }
    dpd_status s = density(sig, n, L, fs, P, err);
    if (s) return s;
    int bins, ok = 1;
    double ref = 0;
    char why[96] = "";
    if (p == DPD_PROFILE_V2) { /* the strongest carrier [-B/2 + i W, -B/2 + (i + 1) W) */
        if (B / 2 + W > fs / 2)
            ok = 0, snprintf(why, sizeof why, "the adjacent channels reach %g MHz, past fs/2 = %g MHz", (B / 2 + W) / 1e6,
                             fs / 2e6);
        for (int i = 0; ok && i < sp->n_sub; i++) {
            double pc = band_power(P, L, fs, -B / 2 + i * W, -B / 2 + (i + 1) * W, &bins);
            if (!bins) ok = 0, snprintf(why, sizeof why, "carrier %d of %d holds no frequency bin", i + 1, sp->n_sub);
            if (pc > ref) ref = pc;
        }
    } else {
        ref = band_power(P, L, fs, -B / 2, B / 2, &bins);
        if (band_refused(m, DPD_ACLR_L, "main channel", -B / 2, B / 2, bins, fs)) ok = 0, snprintf(why, sizeof why, "%s", m->reason[DPD_ACLR_L]);
    }
    double band[3][2] = {{0}}, width;
    dpd_error ignored = {0}; /* the edges alone: whether they fit in +-fs/2 is judged below, per band */
    dpd_status edges = dpd_profile_bands(sp, p, band, &width, &ignored);
    (void)edges;
    for (int side = 0; side < 2; side++) {
        int k = side ? DPD_ACLR_R : DPD_ACLR_L;
        double lo = band[1 + side][0], hi = band[1 + side][1];
        if (!ok) {
            refuse(m, k, DPD_METRIC_NOT_APPLICABLE, "%s", why);
            continue;
        }
        double pa = band_power(P, L, fs, lo, hi, &bins);
        if (band_refused(m, k, side ? "right adjacent channel" : "left adjacent channel", lo, hi, bins, fs)) continue;
        if (!(ref > 0) || !isfinite(ref))
            refuse(m, k, DPD_METRIC_INVALID, "the signal has no power in the %s", p == DPD_PROFILE_V2 ? "carriers" : "main channel");
        else
            accept(m, k, floor_db(pa / ref), "the adjacent-channel ratio is not finite");
    }
    average(m);
    return DPD_OK;
}

/* general-spectral-v1 or opendpd-spectral-v2 of the n valid samples (the first n of the (S, N, 2)
 * arrays, flattened): ref NULL scores the adjacent channels of pred alone. */
static dpd_status spectral(const float *pred, const float *ref, size_t n, int L, const dpd_spec *sp, dpd_profile p,
                           dpd_metrics *m, dpd_error *err) {
    for (int k = 0; k < DPD_NMETRICS; k++) refuse(m, k, DPD_METRIC_NOT_APPLICABLE, "not computed");
    if (!n) {
        refuse_all(m, "the split holds no valid sample");
        return DPD_OK;
    }
    if (ref) pooled_nmse(pred, ref, n, m);
    else refuse(m, DPD_NMSE, DPD_METRIC_NOT_APPLICABLE, "no reference signal");
    char why[96] = "";
    if (!(sp->fs > 0) || !(sp->bw_main > 0) || L < 2 || (p == DPD_PROFILE_V2 && sp->n_sub < 1))
        snprintf(why, sizeof why, "the spectral metrics need fs, the channel bandwidth%s and nperseg",
                 p == DPD_PROFILE_V2 ? ", the carrier count" : "");
    else if (n < (size_t)L)
        snprintf(why, sizeof why, "the split has %zu valid samples, fewer than one %d-sample segment", n, L);
    if (why[0]) {
        for (int k = DPD_EVM; k < DPD_NMETRICS; k++) refuse(m, k, DPD_METRIC_NOT_APPLICABLE, "%s", why);
        return DPD_OK;
    }
    double *P = malloc((size_t)L * sizeof *P);
    if (!P) return dpd_fail(err, DPD_E_NOMEM, "metrics: out of memory");
    dpd_status s = DPD_OK;
    if (ref) s = ibe(pred, ref, n, L, sp, P, m, err);
    else refuse(m, DPD_EVM, DPD_METRIC_NOT_APPLICABLE, "no reference signal");
    if (!s) s = adjacent(pred, n, L, sp, p, P, m, err);
    free(P);
    return s;
}

/* ---- profiles ------------------------------------------------------------------------------- */

static const char *const profile_names[DPD_NPROFILES] = {"legacy-opendpd-v1", "general-spectral-v1",
                                                         "opendpd-spectral-v2"};
static const char *const keys[DPD_NPROFILES][DPD_NMETRICS] = {
    {"NMSE", "EVM", "ACLR_L", "ACLR_R", "ACLR_AVG"},
    {"NMSE", "IBE", "ACPR_L", "ACPR_R", "ACPR_AVG"},
    {"NMSE", "IBE", "ACLR_L", "ACLR_R", "ACLR_AVG"},
};

const char *dpd_profile_name(dpd_profile p) { return p >= 0 && p < DPD_NPROFILES ? profile_names[p] : NULL; }

int dpd_profile_parse(const char *name) {
    for (int p = 0; name && p < DPD_NPROFILES; p++)
        if (!strcmp(name, profile_names[p])) return p;
    return -1;
}

const char *dpd_metric_key(dpd_profile p, int k) {
    return p >= 0 && p < DPD_NPROFILES && k >= 0 && k < DPD_NMETRICS ? keys[p][k] : NULL;
}

/* The scoring's profile, or DPD_E_INVAL for one out of range. */
static dpd_status profile_of(const dpd_scoring *sc, dpd_profile *p, dpd_error *err) {
    *p = sc ? sc->profile : DPD_PROFILE_LEGACY;
    if (*p < 0 || *p >= DPD_NPROFILES) return dpd_fail(err, DPD_E_INVAL, "metrics: unknown metric profile %d", (int)*p);
    return DPD_OK;
}

dpd_status dpd_metrics_compute(const float *pred, const float *ref, int S, int N, size_t n, const dpd_spec *sp,
                               const dpd_scoring *sc, dpd_metrics *m, dpd_error *err) {
    dpd_profile p;
    dpd_status s = check_args(pred, ref, S, N, n, sp, m, err);
    if (s || (s = profile_of(sc, &p, err))) return s;
    m->profile = p;
    return p == DPD_PROFILE_LEGACY ? legacy(pred, ref, S, N, n, sp, sc ? sc->evm_fs : 0, m, err)
                                   : spectral(pred, ref, n, N, sp, p, m, err);
}

dpd_status dpd_metrics_aclr(const float *sig, int S, int N, size_t n, const dpd_spec *sp, const dpd_scoring *sc,
                            dpd_metrics *m, dpd_error *err) {
    dpd_profile p;
    dpd_status s = check_args(sig, sig, S, N, n, sp, m, err);
    if (s || (s = profile_of(sc, &p, err))) return s;
    m->profile = p;
    if (p != DPD_PROFILE_LEGACY) return spectral(sig, NULL, n, N, sp, p, m, err);
    if (too_short(m, N, n)) return DPD_OK;
    refuse(m, DPD_NMSE, DPD_METRIC_NOT_APPLICABLE, "no reference signal");
    refuse(m, DPD_EVM, DPD_METRIC_NOT_APPLICABLE, "no reference signal");
    return aclr_entries(sig, S, N, sp, m, err);
}
