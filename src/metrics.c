/* metrics: NMSE, spectral EVM and ACLR exactly as OpenDPD v2.0.0 computes them (reference §6).
 * Inputs are float32 (S, N, 2); sums run in double, FFTs in float through kissfft. */
#include <kiss_fft.h>
#include <math.h>
#include <stdlib.h>

#include "dpd/dpd.h"
#include "status.h"

/* Frequency of fftshift-ordered bin k, computed as numpy's fftfreq does so band edges that fall
 * exactly on a bin compare the same way. */
static double bin_freq(int k, int N, double fs) {
    double val = 1.0 / ((double)N * (1.0 / fs));
    return (double)(k - N / 2) * val;
}

dpd_status dpd_band_of(int N, double fs, double bw, int n_sub, dpd_band *b, dpd_error *err) {
    if (N < 2 || !(fs > 0) || !(bw > 0) || n_sub < 1)
        return dpd_fail(err, DPD_E_INVAL, "band: need N >= 2, fs > 0, bw > 0, n_sub >= 1");
    int l = -1, r = -1;
    for (int k = 0; k < N; k++) {
        double f = bin_freq(k, N, fs);
        if (l < 0 && f >= -bw / 2) l = k;
        if (f <= bw / 2) r = k;
    }
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

dpd_status dpd_aclr(const float *sig, int S, int N, double fs, double bw, int n_sub, double *left,
                    double *right, dpd_error *err) {
    dpd_band b;
    fftbuf f = {0};
    dpd_status s = dpd_band_of(N, fs, bw, n_sub, &b, err);
    if (s || (s = fftbuf_init(&f, N, err))) return s;
    double *win = malloc(2 * (size_t)N * sizeof *win), *P = win ? win + N : NULL, wsum = 0;
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
    double smax = 0, pl = 0, pr = 0;
    for (int c = 0; c < n_sub; c++) {
        double sc = 0;
        for (int k = b.left + c * b.len; k < b.left + (c + 1) * b.len; k++) sc += P[k] / S;
        if (sc > smax) smax = sc;
    }
    for (int k = b.left - b.len; k < b.left; k++) pl += P[k] / S;
    for (int k = b.right; k < b.right + b.len; k++) pr += P[k] / S;
    free(win);
    fftbuf_free(&f);
    *left = 10.0 * log10(pl / smax);
    *right = 10.0 * log10(pr / smax);
    return DPD_OK;
}

dpd_status dpd_metrics_compute(const float *pred, const float *ref, int S, int N,
                               const dpd_spec *sp, double evm_fs, dpd_metrics *m,
                               dpd_error *err) {
    dpd_status s;
    m->nmse = dpd_nmse(pred, ref, S, N);
    if ((s = dpd_evm(pred, ref, S, N, evm_fs > 0 ? evm_fs : sp->fs, sp->bw_main, sp->n_sub,
                     &m->evm, err)) ||
        (s = dpd_aclr(pred, S, N, sp->fs, sp->bw_main, sp->n_sub, &m->aclr_l, &m->aclr_r, err)))
        return s;
    m->aclr_avg = (m->aclr_l + m->aclr_r) / 2;
    return DPD_OK;
}
