/* synth: dpd's built-in data — a multi-carrier OFDM signal through a Wiener–Hammerstein PA
 * (input FIR, Rapp AM/AM, Saleh AM/PM, output FIR) with additive noise, written as an OpenDPD
 * split_csv dataset; waveform presets (ofdm-mc, lte20, nr100) set the OFDM numbers. Equations,
 * defaults and presets: docs/synth.md. Deterministic for a configuration. Not a conformance
 * signal: no cyclic prefix, no reference signals, no channel coding. */
#include <complex.h>
#include <jansson.h>
#include <kiss_fft.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dpd/dpd.h"
#include "dataset.h"
#include "file.h"
#include "status.h"

/* The waveform presets: one frame (nperseg samples) is one OFDM symbol, so the subcarrier spacing
 * is fs / nperseg and occupancy x carrier_bw / spacing subcarriers are filled (centre bin empty):
 * lte20 18 MHz of 20 (1200 x 15 kHz), nr100 98.28 MHz of 100 (3276 x 30 kHz, 273 resource blocks).
 * fs: a multiple of the LTE/NR base rate 30.72 MS/s, 4x the channel or more, so both adjacent
 * channels lie inside the spectrum. */
static const struct preset {
    const char *name;
    int carriers;
    double carrier_bw;
    int qam;
    double fs;
    size_t length;
    int nperseg;
    double occupancy;
} presets[] = {
    {"ofdm-mc", 10, 20e6, 64, 800e6, 38400, 2560, 0.9},        /* the defaults: 10 x 20 MHz, 312.5 kHz bins */
    {"lte20", 1, 20e6, 64, 122.88e6, 122880, 8192, 0.9},       /* 15 symbols (1 ms) of 1200 x 15 kHz */
    {"nr100", 1, 100e6, 256, 491.52e6, 163840, 16384, 0.9828}, /* 10 symbols of 3276 x 30 kHz */
};

static void apply(dpd_synth_cfg *c, const struct preset *p) {
    c->carriers = p->carriers, c->carrier_bw = p->carrier_bw, c->qam = p->qam, c->fs = p->fs;
    c->length = p->length, c->nperseg = p->nperseg, c->occupancy = p->occupancy;
}

void dpd_synth_defaults(dpd_synth_cfg *c) {
    *c = (dpd_synth_cfg){.snr_db = 45, .gain = 2.5, .sat = 2.6, .smooth = 1.2, .pm_alpha = 0.35, .pm_beta = 0.8,
                         .seed = 0};
    apply(c, &presets[0]);
}

dpd_status dpd_synth_preset(dpd_synth_cfg *c, const char *name, dpd_error *err) {
    for (size_t i = 0; i < sizeof presets / sizeof *presets; i++)
        if (!strcmp(name, presets[i].name)) {
            apply(c, &presets[i]);
            return DPD_OK;
        }
    return dpd_fail_field(err, "preset", DPD_E_INVAL, "preset: '%s' is not one of ofdm-mc, lte20, nr100", name);
}

/* Memory filters of the PA (taps at n, n-1, n-2), into the caller's h[3]. */
static void fir_in(double complex *h) { h[0] = 1.0, h[1] = 0.10 * cexp(-0.6 * I), h[2] = -0.04 * cexp(0.3 * I); }
static void fir_out(double complex *h) {
    h[0] = 1.0, h[1] = -0.08 * cexp(0.4 * I), h[2] = 0.03 * cexp(-1.1 * I);
}

/* The carrier whose occupied subcarriers include bin k (signed frequency k fs / nperseg), or -1: a
 * bin within occupancy x carrier_bw / 2 of a carrier's centre, but not the centre's own. */
static int bin_carrier(const dpd_synth_cfg *c, int k) {
    double df = c->fs / c->nperseg, f = k * df, total = c->carriers * c->carrier_bw;
    int car = (int)floor((f + total / 2) / c->carrier_bw);
    if (car < 0 || car >= c->carriers) return -1;
    double fc = -total / 2 + (car + 0.5) * c->carrier_bw;
    return fabs(f - fc) > c->occupancy * c->carrier_bw / 2 || fabs(f - fc) < df / 2 ? -1 : car;
}

/* The first carrier without an occupied subcarrier, or -1 when each has one (a subcarrier spacing
 * fs / nperseg above about half a carrier's occupied band can leave it only its empty centre bin:
 * that carrier is silent, and the whole signal where every carrier is). */
static int empty_carrier(const dpd_synth_cfg *c) {
    int N = c->nperseg, last = -1;
    for (int k = -N / 2; k < N / 2; k++) { /* the carriers' bins come in order of k */
        int car = bin_carrier(c, k);
        if (car < 0 || car == last) continue;
        if (car > last + 1) return last + 1;
        last = car;
    }
    return last + 1 < c->carriers ? last + 1 : -1;
}

static dpd_status check(const dpd_synth_cfg *c, dpd_error *err) {
    int q = c->qam, side = (int)lround(sqrt((double)q));
    if (q < 4 || side * side != q || (side & (side - 1)))
        return dpd_fail_field(err, "qam", DPD_E_INVAL, "qam: %d must be 4, 16, 64, 256 or 1024 (a square power of two)", q);
    if (c->carriers < 1) return dpd_fail_field(err, "carriers", DPD_E_INVAL, "carriers: %d must be >= 1", c->carriers);
    if (!(c->carrier_bw > 0)) return dpd_fail_field(err, "carrier_bw", DPD_E_INVAL, "carrier_bw: %g must be > 0", c->carrier_bw);
    if (!(c->fs > 0 && c->fs <= DPD_MAX_RATE_HZ))
        return dpd_fail_field(err, "fs", DPD_E_INVAL, "fs: %g Hz is out of range (0, %g] (1 THz)", c->fs, DPD_MAX_RATE_HZ);
    if (c->carriers * c->carrier_bw * 2 >= c->fs) /* synth's rule: room in [-fs/2, fs/2) for adjacent channels */
        return dpd_fail_field(err, "fs", DPD_E_INVAL,
                              "fs: %.10g MHz leaves too little room for the adjacent channels of %d x %.10g MHz carriers "
                              "(dpd synth wants a sample rate above twice their %.10g MHz channel, %.10g MHz): raise "
                              "--fs, or lower --carriers or --carrier-bw",
                              c->fs / 1e6, c->carriers, c->carrier_bw / 1e6, c->carriers * c->carrier_bw / 1e6,
                              2 * c->carriers * c->carrier_bw / 1e6);
    if (c->nperseg < 16) /* one frame, one OFDM symbol: a few subcarriers at least */
        return dpd_fail_field(err, "nperseg", DPD_E_INVAL, "nperseg: %d must be 16 or more", c->nperseg);
    if (c->length % (size_t)c->nperseg || c->length / (size_t)c->nperseg < 5)
        return dpd_fail_field(err, "length", DPD_E_INVAL,
                        "length: %zu must be a multiple of nperseg (%d) with at least 5 frames",
                        c->length, c->nperseg);
    if (!(c->occupancy > 0 && c->occupancy <= 1))
        return dpd_fail_field(err, "occupancy", DPD_E_INVAL, "occupancy: %g is out of range (0, 1]", c->occupancy);
    int empty = empty_carrier(c);
    if (empty >= 0)
        return dpd_fail_field(err, "nperseg", DPD_E_INVAL,
                              "nperseg: %d splits fs = %.10g MHz into subcarriers %.10g MHz apart, and carrier %d of %d "
                              "(centre %.10g MHz) then has none within its occupied +-%.10g MHz (occupancy x carrier_bw / "
                              "2) but its centre bin, which stays empty: it would be silent. Raise --nperseg (keeping "
                              "--length a multiple of it), lower --fs, or raise --occupancy",
                              c->nperseg, c->fs / 1e6, c->fs / c->nperseg / 1e6, empty + 1, c->carriers,
                              (-c->carriers * c->carrier_bw / 2 + (empty + 0.5) * c->carrier_bw) / 1e6,
                              c->occupancy * c->carrier_bw / 2e6);
    if (!(c->gain > 0)) return dpd_fail_field(err, "gain", DPD_E_INVAL, "gain: %g must be > 0", c->gain);
    if (!(c->sat > 0)) return dpd_fail_field(err, "sat", DPD_E_INVAL, "sat: %g must be > 0", c->sat);
    if (!(c->smooth > 0)) return dpd_fail_field(err, "smooth", DPD_E_INVAL, "smooth: %g must be > 0", c->smooth);
    return DPD_OK;
}

/* One OFDM frame of N samples: random QAM symbols on the occupied bins of every carrier
 * (carrier centre bin left empty), inverse FFT. Bins are indexed by signed frequency. */
static void ofdm_frame(const dpd_synth_cfg *c, kiss_fft_cfg ifft, kiss_fft_cpx *bins,
                       kiss_fft_cpx *out, dpd_rng *rng) {
    int N = c->nperseg, side = (int)lround(sqrt((double)c->qam));
    double norm = sqrt(2.0 * (c->qam - 1) / 3.0); /* unit mean symbol power */
    memset(bins, 0, (size_t)N * sizeof *bins);
    for (int k = -N / 2; k < N / 2; k++) {
        if (bin_carrier(c, k) < 0) continue;
        int a = (int)dpd_rng_below(rng, (uint64_t)side), b = (int)dpd_rng_below(rng, (uint64_t)side);
        kiss_fft_cpx *v = &bins[(k + N) % N];
        v->r = (float)((2 * a - side + 1) / norm);
        v->i = (float)((2 * b - side + 1) / norm);
    }
    kiss_fft(ifft, bins, out);
}

static double complex pa(const dpd_synth_cfg *c, double complex u) {
    double r = cabs(u);
    if (r == 0) return 0;
    double g = c->gain * r, p2 = 2 * c->smooth;
    double amp = g / pow(1 + pow(g / c->sat, p2), 1 / p2);
    double phi = c->pm_alpha * r * r / (1 + c->pm_beta * r * r);
    return amp * cexp(I * (carg(u) + phi));
}

static dpd_status write_csv(const char *path, const double complex *v, size_t n, dpd_error *err) {
    dpd_afile a;
    dpd_status s = dpd_afile_open(&a, path, err);
    if (s) return s;
    fputs("I,Q\n", a.f);
    for (size_t i = 0; i < n; i++) fprintf(a.f, "%.9g,%.9g\n", creal(v[i]), cimag(v[i]));
    return dpd_afile_commit(&a, err);
}

static dpd_status write_spec(const dpd_synth_cfg *c, const char *dir, dpd_error *err) {
    json_t *j = json_pack(
        "{s:s, s:{s:f, s:f, s:f}, s:f, s:f, s:f, s:i, s:i, s:s, s:{s:s, s:s, s:i, s:f, s:i, s:f, "
        "s:f, s:f, s:f, s:f, s:f, s:f, s:I}}",
        "dataset_format", "split_csv", "split_ratios", "train", 0.6, "val", 0.2, "test", 0.2,
        "input_signal_fs", c->fs, "bw_main_ch", c->carriers * c->carrier_bw, "bw_sub_ch",
        c->carrier_bw, "n_sub_ch", c->carriers, "nperseg", c->nperseg,
        "amplitude_units", "normalized", /* the input's peak |x| is 1 (below) */ "generator", "tool",
        "dpd synth " DPD_VERSION, "pa", "wiener-hammerstein rapp/saleh", "carriers", c->carriers,
        "carrier_bw", c->carrier_bw, "qam", c->qam, "occupancy", c->occupancy, "snr_db",
        c->snr_db, "gain", c->gain, "sat", c->sat, "smooth", c->smooth, "pm_alpha",
        c->pm_alpha, "pm_beta", c->pm_beta, "seed", (json_int_t)c->seed);
    char *text = j ? json_dumps(j, JSON_INDENT(4) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12)) : NULL;
    json_decref(j);
    if (!text) return dpd_fail(err, DPD_E_NOMEM, "spec.json: cannot encode");
    char path[4200];
    snprintf(path, sizeof path, "%s/spec.json", dir);
    size_t n = strlen(text);
    text[n] = '\n'; /* json_dumps leaves room for the NUL we overwrite; write n + 1 bytes */
    dpd_status s = dpd_file_write(path, text, n + 1, err);
    free(text);
    return s;
}

dpd_status dpd_synth_generate(const dpd_synth_cfg *c, double **xo, double **yo, dpd_error *err) {
    *xo = *yo = NULL;
    dpd_status s = check(c, err);
    if (s) return s;
    int N = c->nperseg;
    size_t n = c->length, frames = n / (size_t)N;
    double complex *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y); /* = (n, 2) doubles each */
    kiss_fft_cpx *bins = malloc(2 * (size_t)N * sizeof *bins), *out = bins ? bins + N : NULL;
    kiss_fft_cfg ifft = kiss_fft_alloc(N, 1, NULL, NULL);
    if (!x || !y || !bins || !ifft) {
        s = dpd_fail(err, DPD_E_NOMEM, "synth: out of memory for %zu samples", n);
        free(x), free(y);
        goto done;
    }
    dpd_rng rng;
    dpd_rng_seed(&rng, c->seed);
    double peak = 0;
    for (size_t f = 0; f < frames; f++) {
        ofdm_frame(c, ifft, bins, out, &rng);
        for (int i = 0; i < N; i++) {
            x[f * N + i] = out[i].r + I * out[i].i;
            peak = fmax(peak, cabs(x[f * N + i]));
        }
    }
    for (size_t i = 0; i < n; i++) x[i] /= peak; /* peak |x| = 1, as OpenDPD's DPA data */
    double complex hi[3], ho[3];
    fir_in(hi), fir_out(ho);
    double complex v[3] = {0};
    double power = 0;
    for (size_t i = 0; i < n; i++) {
        double complex u = 0;
        for (int k = 0; k < 3 && (size_t)k <= i; k++) u += hi[k] * x[i - k];
        v[2] = v[1], v[1] = v[0], v[0] = pa(c, u);
        y[i] = ho[0] * v[0] + ho[1] * v[1] + ho[2] * v[2];
        power += creal(y[i] * conj(y[i]));
    }
    double sigma = sqrt(power / n / pow(10, c->snr_db / 10) / 2);
    for (size_t i = 0; i < n; i++) {
        double a = dpd_rng_normal(&rng), b = dpd_rng_normal(&rng);
        y[i] += sigma * (a + I * b);
    }
    *xo = (double *)x, *yo = (double *)y;
done:
    free(bins);
    kiss_fft_free(ifft);
    return s;
}

dpd_status dpd_synth_write(const dpd_synth_cfg *c, const char *dir, dpd_error *err) {
    dpd_status s = check(c, err);
    if (s || (s = dpd_mkdirs(dir, err))) return s;
    double *xd, *yd;
    if ((s = dpd_synth_generate(c, &xd, &yd, err))) return s;
    const double complex *x = (const double complex *)xd, *y = (const double complex *)yd;
    size_t n = c->length, frames = n / (size_t)c->nperseg, N = (size_t)c->nperseg;
    size_t cut[4] = {0, frames * 6 / 10 * N, 0, n};
    cut[2] = cut[1] + frames * 2 / 10 * N;
    static const char *names[3] = {"train", "val", "test"};
    for (int k = 0; k < 3 && !s; k++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s_input.csv", dir, names[k]);
        s = write_csv(path, x + cut[k], cut[k + 1] - cut[k], err);
        snprintf(path, sizeof path, "%s/%s_output.csv", dir, names[k]);
        if (!s) s = write_csv(path, y + cut[k], cut[k + 1] - cut[k], err);
    }
    if (!s) s = write_spec(c, dir, err);
    free(xd), free(yd);
    return s;
}
