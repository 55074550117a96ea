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

#include "dpd/dpd.h"
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

/* fftshift-ordered N-point FFT of one segment; `window`/`detrend` as Welch uses them. */
static void segment_fft(kiss_fft_cfg cfg, const float *iq, int N, const double *win,
                        kiss_fft_cpx *in, kiss_fft_cpx *out, kiss_fft_cpx *shifted) {
    double mi = 0, mq = 0;
    if (win) {
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
        segment_fft(f.cfg, pred + (size_t)seg * N * 2, N, NULL, f.in, f.out, f.a);
        segment_fft(f.cfg, ref + (size_t)seg * N * 2, N, NULL, f.in, f.out, f.b);
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
        segment_fft(f.cfg, sig + (size_t)seg * N * 2, N, win, f.in, f.out, f.a);
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

static double *metric_slot(dpd_metrics *m, int k) {
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
    return *metric_slot((dpd_metrics *)m, k);
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
    *metric_slot(m, k) = NAN;
    m->status[k] = st;
}

/* Metric k got value v; a non-finite v is invalid with `why` (the caller's diagnosis). */
static void accept(dpd_metrics *m, int k, double v, const char *why) {
    if (isfinite(v)) {
        *metric_slot(m, k) = v;
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
    /* Average only two ok sides; otherwise inherit the worse side's status and its reason. */
    if (m->status[DPD_ACLR_L] == DPD_METRIC_OK && m->status[DPD_ACLR_R] == DPD_METRIC_OK) {
        accept(m, DPD_ACLR_AVG, (m->aclr_l + m->aclr_r) / 2, "the ACLR average is not finite");
    } else {
        int k = m->status[DPD_ACLR_L] == DPD_METRIC_INVALID ||
                        m->status[DPD_ACLR_R] == DPD_METRIC_OK
                    ? DPD_ACLR_L
                    : DPD_ACLR_R;
        refuse(m, DPD_ACLR_AVG, m->status[k], "%s", m->reason[k]);
    }
    return DPD_OK;
}

dpd_status dpd_metrics_compute(const float *pred, const float *ref, int S, int N, size_t n,
                               const dpd_spec *sp, double evm_fs, dpd_metrics *m,
                               dpd_error *err) {
    dpd_status s = check_args(pred, ref, S, N, n, sp, m, err);
    if (s || too_short(m, N, n)) return s;
    char why[96] = "";
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

dpd_status dpd_metrics_aclr(const float *sig, int S, int N, size_t n, const dpd_spec *sp,
                            dpd_metrics *m, dpd_error *err) {
    dpd_status s = check_args(sig, sig, S, N, n, sp, m, err);
    if (s || too_short(m, N, n)) return s;
    refuse(m, DPD_NMSE, DPD_METRIC_NOT_APPLICABLE, "no reference signal");
    refuse(m, DPD_EVM, DPD_METRIC_NOT_APPLICABLE, "no reference signal");
    return aclr_entries(sig, S, N, sp, m, err);
}
