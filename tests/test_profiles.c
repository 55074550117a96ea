/* test_profiles: the metric profiles (opendpd-protocols §1) and the contiguous-v1 split (§2,
 * rules 13-16). legacy-opendpd-v1's golden vector (48 tones, two band plans) against the values the
 * reference lists; general-spectral-v1's and opendpd-spectral-v2's analytic cases (a gain error,
 * zero error, tones of known power in the adjacent bands, noise of known SNR, odd FFT sizes, zero
 * padding, NaN, too-short and band-outside-spectrum inputs); the split's worked example. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#include <complex.h> /* after check.h: the kernels' headers name things I */
#undef I
#define J _Complex_I

/* The reference's golden input: S segments of L samples, each the sum of 48 tones spaced linearly
 * over +-0.45 B (tone k in segment s at phase 2 pi frac(0.6180339887 k + 0.3247 s), time from 0 in
 * each segment) over 4 sqrt(48); ref = g x and pred = g (x - 0.05 |x|^2 x), g = 1.5 e^{j 0.1}. */
static void golden(double fs, int L, double B, int S, float *ref, float *pred) {
    double complex g = 1.5 * cexp(J * 0.1);
    for (int s = 0; s < S; s++)
        for (int n = 0; n < L; n++) {
            double complex v = 0;
            for (int k = 0; k < 48; k++) {
                double ph = 0.6180339887 * k + 0.3247 * s;
                v += cexp(J * (2 * M_PI * (-0.45 * B + 0.9 * B * k / 47.0) * n / fs + 2 * M_PI * (ph - floor(ph))));
            }
            v /= 4 * sqrt(48);
            double complex r = g * v, p = g * (v - 0.05 * cabs(v) * cabs(v) * v);
            size_t i = (size_t)s * L + n;
            ref[2 * i] = (float)creal(r), ref[2 * i + 1] = (float)cimag(r);
            pred[2 * i] = (float)creal(p), pred[2 * i + 1] = (float)cimag(p);
        }
}

static void near(const char *what, double got, double want, double tol) {
    CHECK(fabs(got - want) <= tol, "%s: %.9f, want %.9f (tolerance %g)", what, got, want, tol);
}

/* Metric k of m has status st (and a reason containing want when not ok). */
static void status_is(const char *what, const dpd_metrics *m, int k, dpd_metric_status st, const char *want) {
    const char *key = dpd_metric_key(m->profile, k);
    CHECK(m->status[k] == st, "%s %s: status %s, want %s (%s)", what, key, dpd_metric_status_str(m->status[k]),
          dpd_metric_status_str(st), m->reason[k]);
    if (st == DPD_METRIC_OK) CHECK(isfinite(dpd_metric_value(m, k)), "%s %s: ok but not finite", what, key);
    else CHECK(isnan(dpd_metric_value(m, k)) && m->reason[k][0] && (!want || strstr(m->reason[k], want)),
               "%s %s: %s, reason \"%s\" (want \"%s\")", what, key, dpd_metric_status_str(st), m->reason[k],
               want ? want : "");
}

static void test_legacy_golden(void) {
    static const struct {
        const char *name;
        double fs;
        int L;
        double B;
        int N, S, lo, hi, m;
        double want[DPD_NMETRICS];
    } cases[] = {
        {"dpa_200mhz", 800e6, 2560, 200e6, 10, 4, 960, 1600, 64,
         {-19.076105770403647, -19.21492650570918, -24.042608356484344, -24.042623111083657, -24.042615733784}},
        {"apa_200mhz", 983.04e6, 19662, 200e6, 5, 2, 7831, 11831, 800,
         {-19.07338392325204, -19.40820172079281, -24.33479980693523, -24.33480006307484, -24.334799935005037}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        size_t len = (size_t)cases[c].S * cases[c].L * 2;
        float *r = malloc(len * sizeof *r), *p = malloc(len * sizeof *p);
        golden(cases[c].fs, cases[c].L, cases[c].B, cases[c].S, r, p);
        dpd_spec sp = {.fs = cases[c].fs, .bw_main = cases[c].B, .n_sub = cases[c].N, .nperseg = cases[c].L};
        dpd_metrics m;
        dpd_error err = {0};
        dpd_scoring sc = {DPD_PROFILE_LEGACY, 0};
        CHECK(!dpd_metrics_compute(p, r, cases[c].S, cases[c].L, len / 2, &sp, &sc, &m, &err), "%s", err.msg);
        for (int k = 0; k < DPD_NMETRICS; k++) {
            char what[64];
            snprintf(what, sizeof what, "legacy golden %s %s", cases[c].name, dpd_metric_key(m.profile, k));
            near(what, dpd_metric_value(&m, k), cases[c].want[k], 1e-5); /* float32 FFTs: ~1e-6 dB off */
        }
        dpd_band b;
        CHECK(!dpd_band_of(cases[c].L, cases[c].fs, cases[c].B, cases[c].N, &b, &err) && b.left == cases[c].lo &&
                  b.right == cases[c].hi && b.len == cases[c].m,
              "legacy %s bins: lo %d hi %d m %d, want %d %d %d", cases[c].name, b.left, b.right, b.len, cases[c].lo,
              cases[c].hi, cases[c].m);
        /* a NULL scoring is legacy */
        dpd_metrics d;
        CHECK(!dpd_metrics_compute(p, r, cases[c].S, cases[c].L, len / 2, &sp, NULL, &d, &err) && d.nmse == m.nmse &&
                  d.aclr_avg == m.aclr_avg && d.profile == DPD_PROFILE_LEGACY,
              "NULL scoring == legacy");
        free(r), free(p);
    }
}

/* A signal of n samples: tones (amplitude a[i] at f[i] Hz, phase i) plus white Gaussian noise of
 * power noise (dpd_rng_normal). */
static void tones(float *x, size_t n, double fs, int nt, const double *f, const double *a, double noise, uint64_t seed) {
    dpd_rng rng;
    dpd_rng_seed(&rng, seed);
    for (size_t i = 0; i < n; i++) {
        double complex v = 0;
        for (int t = 0; t < nt; t++) v += a[t] * cexp(J * (2 * M_PI * f[t] * (double)i / fs + t));
        if (noise > 0) v += sqrt(noise / 2) * (dpd_rng_normal(&rng) + J * dpd_rng_normal(&rng));
        x[2 * i] = (float)creal(v), x[2 * i + 1] = (float)cimag(v);
    }
}

static const dpd_spec dpa200 = {.fs = 800e6, .bw_main = 200e6, .n_sub = 10, .nperseg = 2560};

static void score(const float *p, const float *r, size_t n, int L, const dpd_spec *sp, dpd_profile pr, dpd_metrics *m) {
    dpd_error err = {0};
    int S = (int)((n + (size_t)L - 1) / (size_t)L);
    float *pp = calloc((size_t)S * L * 2, sizeof *pp), *rr = calloc((size_t)S * L * 2, sizeof *rr); /* padded */
    memcpy(pp, p, n * 2 * sizeof *p);
    if (r) memcpy(rr, r, n * 2 * sizeof *r);
    dpd_scoring sc = {pr, 0};
    dpd_status s = r ? dpd_metrics_compute(pp, rr, S, L, n, sp, &sc, m, &err)
                     : dpd_metrics_aclr(pp, S, L, n, sp, &sc, m, &err);
    CHECK(!s && m->profile == pr, "%s: %s", dpd_profile_name(pr), err.msg);
    free(pp), free(rr);
}

static void test_general(void) {
    enum { L = 2560, n = 20 * L };
    float *r = malloc(n * 2 * sizeof *r), *p = malloc(n * 2 * sizeof *p);
    double f[2] = {10e6, 150e6}, a[2] = {1.0, 0.01};
    tones(r, n, 800e6, 1, f, a, 0, 1);
    double complex g = 1.1 * cexp(J * 0.05);
    for (size_t i = 0; i < n; i++) {
        double complex v = g * (r[2 * i] + J * r[2 * i + 1]);
        p[2 * i] = (float)creal(v), p[2 * i + 1] = (float)cimag(v);
    }
    dpd_spec sp = {.fs = 800e6, .bw_main = 200e6, .n_sub = 1, .nperseg = L};
    dpd_metrics m;
    score(p, r, n, L, &sp, DPD_PROFILE_GENERAL, &m);
    near("general-v1 gain error: NMSE = 20 log10|g - 1|", m.nmse, 20 * log10(cabs(g - 1)), 1e-4);
    near("general-v1 gain error: IBE = 20 log10|g - 1|", m.evm, 20 * log10(cabs(g - 1)), 1e-3);
    score(r, r, n, L, &sp, DPD_PROFILE_GENERAL, &m);
    CHECK(m.nmse == -300 && m.evm == -300, "general-v1 zero error: NMSE %g, IBE %g, want -300", m.nmse, m.evm);
    CHECK(!strcmp(dpd_metric_key(m.profile, DPD_EVM), "IBE") && !strcmp(dpd_metric_key(m.profile, DPD_ACLR_R), "ACPR_R"),
          "general-v1 keys");
    /* a tone in [B/2, 3B/2) 40 dB under the main-channel tone: ACPR_R = -40 dB within 0.05 */
    tones(p, n, 800e6, 2, f, a, 0, 2);
    score(p, NULL, n, L, &sp, DPD_PROFILE_GENERAL, &m);
    near("general-v1 adjacent tone: ACPR_R", m.aclr_r, -40, 0.05);
    status_is("general-v1 no reference", &m, DPD_NMSE, DPD_METRIC_NOT_APPLICABLE, "no reference");
    status_is("general-v1 no reference", &m, DPD_EVM, DPD_METRIC_NOT_APPLICABLE, "no reference");
    status_is("general-v1 adjacent tone", &m, DPD_ACLR_L, DPD_METRIC_OK, NULL);
    /* noise of 30 dB SNR on a band-limited reference: IBE = -SNR + 10 log10(B/fs)... the noise in the
     * main channel only: B/fs of it */
    double fr[5] = {-80e6, -35e6, 5e6, 45e6, 90e6}, ar[5] = {1, 1, 1, 1, 1};
    tones(r, n, 800e6, 5, fr, ar, 0, 3);
    float *e = malloc(n * 2 * sizeof *e);
    tones(e, n, 800e6, 0, NULL, NULL, 5.0 / 1000, 4); /* reference power 5, SNR 30 dB */
    for (size_t i = 0; i < 2 * (size_t)n; i++) p[i] = r[i] + e[i];
    score(p, r, n, L, &sp, DPD_PROFILE_GENERAL, &m);
    near("general-v1 noise: NMSE = -SNR", m.nmse, -30, 0.1);
    near("general-v1 noise: IBE = -SNR + 10 log10(B/fs)", m.evm, -30 + 10 * log10(200.0 / 800), 0.15);
    /* pooled NMSE differs from the mean of per-segment dB when segment powers differ */
    for (size_t i = 0; i < 2 * (size_t)n; i++) {
        double w = i < 2 * (size_t)L ? 10 : 1; /* a loud first segment with the same error */
        r[i] = (float)(r[i] * w), p[i] = r[i] + e[i];
    }
    dpd_metrics lg;
    score(p, r, n, L, &sp, DPD_PROFILE_GENERAL, &m);
    score(p, r, n, L, &sp, DPD_PROFILE_LEGACY, &lg);
    CHECK(fabs(m.nmse - lg.nmse) > 0.5, "pooled NMSE %g vs mean of segment dB %g: should differ", m.nmse, lg.nmse);
    /* statuses: ACPR needs fs >= 3B; a silent reference; too short; NaN */
    dpd_spec wide = sp;
    wide.bw_main = 300e6;
    score(p, r, n, L, &wide, DPD_PROFILE_GENERAL, &m);
    status_is("general-v1 fs < 3B", &m, DPD_ACLR_L, DPD_METRIC_NOT_APPLICABLE, "outside");
    status_is("general-v1 fs < 3B", &m, DPD_ACLR_AVG, DPD_METRIC_NOT_APPLICABLE, "outside");
    status_is("general-v1 fs < 3B", &m, DPD_EVM, DPD_METRIC_OK, NULL);
    memset(e, 0, n * 2 * sizeof *e);
    score(p, e, n, L, &sp, DPD_PROFILE_GENERAL, &m);
    status_is("general-v1 silent reference", &m, DPD_NMSE, DPD_METRIC_INVALID, "silent");
    status_is("general-v1 silent reference", &m, DPD_EVM, DPD_METRIC_INVALID, "no power");
    status_is("general-v1 silent reference", &m, DPD_ACLR_R, DPD_METRIC_OK, NULL);
    score(p, r, L - 1, L, &sp, DPD_PROFILE_GENERAL, &m);
    status_is("general-v1 short", &m, DPD_NMSE, DPD_METRIC_OK, NULL);
    status_is("general-v1 short", &m, DPD_ACLR_R, DPD_METRIC_NOT_APPLICABLE, "fewer than one");
    score(p, r, 0 + 1, L, &sp, DPD_PROFILE_GENERAL, &m);
    status_is("general-v1 one sample", &m, DPD_EVM, DPD_METRIC_NOT_APPLICABLE, "fewer than one");
    p[7] = NAN;
    score(p, r, n, L, &sp, DPD_PROFILE_GENERAL, &m);
    status_is("general-v1 NaN", &m, DPD_NMSE, DPD_METRIC_INVALID, "NaN");
    status_is("general-v1 NaN", &m, DPD_ACLR_L, DPD_METRIC_INVALID, "NaN");
    free(r), free(p), free(e);
}

static void test_v2(void) {
    enum { L = 2560, n = 16 * L };
    float *x = malloc((n + 3 * L) * 2 * sizeof *x);
    /* a tone at the centre of carrier 5 (-10 MHz), one 30 dB under it at +110 MHz (right adjacent
     * band [100, 120) MHz), one 45 dB under at -115 MHz (left [-120, -100)) */
    double f[3] = {-10e6, 110e6, -115e6}, a[3] = {1, pow(10, -30 / 20.0), pow(10, -45 / 20.0)};
    tones(x, n, 800e6, 3, f, a, 0, 5);
    dpd_metrics m, pad;
    score(x, NULL, n, L, &dpa200, DPD_PROFILE_V2, &m);
    near("spectral-v2 tone at +110 MHz: ACLR_R", m.aclr_r, -30, 0.05);
    near("spectral-v2 tone at -115 MHz: ACLR_L", m.aclr_l, -45, 0.05);
    near("spectral-v2 ACLR_AVG", m.aclr_avg, (m.aclr_l + m.aclr_r) / 2, 1e-12);
    CHECK(!strcmp(dpd_metric_key(DPD_PROFILE_V2, DPD_EVM), "IBE") && !strcmp(dpd_metric_key(DPD_PROFILE_V2, DPD_ACLR_R), "ACLR_R"),
          "spectral-v2 keys");
    /* zero padding after the valid range changes nothing: the same numbers bit for bit */
    memset(x + 2 * (size_t)n, 0, 3 * (size_t)L * 2 * sizeof *x);
    dpd_scoring sc = {DPD_PROFILE_V2, 0};
    dpd_error err = {0};
    CHECK(!dpd_metrics_aclr(x, n / L + 3, L, n, &dpa200, &sc, &pad, &err) && pad.aclr_l == m.aclr_l &&
              pad.aclr_r == m.aclr_r,
          "spectral-v2: zero padding after the valid samples changes the result (%g vs %g)", pad.aclr_r, m.aclr_r);
    /* n_valid = L - 1: not_applicable */
    score(x, NULL, L - 1, L, &dpa200, DPD_PROFILE_V2, &m);
    status_is("spectral-v2 n = L - 1", &m, DPD_ACLR_R, DPD_METRIC_NOT_APPLICABLE, "fewer than one");
    /* fs = 2.5 B with one carrier: the adjacent band reaches 1.5 B > fs / 2 */
    dpd_spec narrow = {.fs = 500e6, .bw_main = 200e6, .n_sub = 1, .nperseg = L};
    score(x, NULL, n, L, &narrow, DPD_PROFILE_V2, &m);
    status_is("spectral-v2 fs = 2.5 B", &m, DPD_ACLR_L, DPD_METRIC_NOT_APPLICABLE, "past fs/2");
    status_is("spectral-v2 fs = 2.5 B", &m, DPD_ACLR_AVG, DPD_METRIC_NOT_APPLICABLE, "past fs/2");
    /* an odd FFT size works */
    dpd_spec odd = dpa200;
    odd.nperseg = 2561;
    score(x, NULL, n, 2561, &odd, DPD_PROFILE_V2, &m);
    near("spectral-v2 L = 2561: ACLR_R", m.aclr_r, -30, 0.05);
    /* a pure in-band signal: the adjacent bands hold only window leakage, never -inf */
    float *y = malloc((size_t)n * 2 * sizeof *y);
    tones(y, n, 800e6, 1, f, a, 0, 6);
    score(y, NULL, n, L, &dpa200, DPD_PROFILE_V2, &m);
    status_is("spectral-v2 clean tone", &m, DPD_ACLR_R, DPD_METRIC_OK, NULL);
    CHECK(m.aclr_r < -100, "spectral-v2 clean tone: ACLR_R %g, want far below -100 dBc", m.aclr_r);
    /* silence: invalid (no carrier power), NaN: invalid */
    memset(y, 0, (size_t)n * 2 * sizeof *y);
    score(y, NULL, n, L, &dpa200, DPD_PROFILE_V2, &m);
    status_is("spectral-v2 silent", &m, DPD_ACLR_R, DPD_METRIC_INVALID, "no power");
    score(y, y, n, L, &dpa200, DPD_PROFILE_V2, &m);
    status_is("spectral-v2 silent reference", &m, DPD_NMSE, DPD_METRIC_INVALID, "silent");
    x[11] = INFINITY;
    score(x, NULL, n, L, &dpa200, DPD_PROFILE_V2, &m);
    status_is("spectral-v2 Inf", &m, DPD_ACLR_L, DPD_METRIC_INVALID, "NaN or Inf");
    free(x), free(y);
}

static void test_names(void) {
    for (int p = 0; p < DPD_NPROFILES; p++)
        CHECK(dpd_profile_parse(dpd_profile_name(p)) == p, "profile %d round trip", p);
    CHECK(!strcmp(dpd_profile_name(DPD_PROFILE_LEGACY), "legacy-opendpd-v1") &&
              !strcmp(dpd_profile_name(DPD_PROFILE_GENERAL), "general-spectral-v1") &&
              !strcmp(dpd_profile_name(DPD_PROFILE_V2), "opendpd-spectral-v2"),
          "profile names");
    CHECK(dpd_profile_parse("opendpd-spectral-v3") == -1 && dpd_profile_parse(NULL) == -1 && !dpd_profile_name(7) &&
              !dpd_metric_key(DPD_PROFILE_V2, 5) && !dpd_metric_key(9, 0),
          "unknown profiles and keys");
    for (int k = 0; k < DPD_NMETRICS; k++)
        CHECK(!strcmp(dpd_metric_key(DPD_PROFILE_LEGACY, k), dpd_metric_name(k)), "legacy keys are OpenDPD's");
    float z[8] = {1, 0, 0, 1, 1, 1, 0, 0};
    dpd_metrics m;
    dpd_error err = {0};
    dpd_scoring bad = {(dpd_profile)5, 0};
    CHECK(dpd_metrics_compute(z, z, 1, 4, 4, &dpa200, &bad, &m, &err) == DPD_E_INVAL && strstr(err.msg, "profile"),
          "an unknown profile is refused: %s", err.msg);
}

static void test_split(void) {
    const double r[3] = {0.6, 0.2, 0.2};
    size_t b[3], l[3];
    dpd_error err = {0};
    /* the reference's worked example: n 10000, guard 256 */
    CHECK(!dpd_split_contiguous(10000, r, 256, b, l, &err), "%s", err.msg);
    CHECK(b[0] == 0 && b[0] + l[0] == 5692 && b[1] == 5948 && b[1] + l[1] == 7845 && b[2] == 8101 &&
              b[2] + l[2] == 10000,
          "contiguous-v1 n 10000: train [%zu, %zu) val [%zu, %zu) test [%zu, %zu), want [0, 5692) [5948, 7845) "
          "[8101, 10000)", b[0], b[0] + l[0], b[1], b[1] + l[1], b[2], b[2] + l[2]);
    CHECK(!dpd_split_contiguous(11, r, 0, b, l, &err) && l[0] == 6 && l[1] == 2 && l[2] == 3 && b[2] == 8,
          "guard 0 is OpenDPD's single_csv split: %zu/%zu/%zu", l[0], l[1], l[2]);
    const double bad_sum[3] = {0.6, 0.3, 0.2}, neg[3] = {1.2, -0.1, -0.1}, no_val[3] = {0.9, 0, 0.1};
    CHECK(dpd_split_contiguous(10000, bad_sum, 256, b, l, &err) == DPD_E_INVAL && strstr(err.msg, "sum"),
          "ratios summing to 1.1 are refused: %s", err.msg);
    CHECK(dpd_split_contiguous(10000, neg, 256, b, l, &err) == DPD_E_INVAL && strstr(err.msg, "[0, 1]"),
          "negative ratios are refused: %s", err.msg);
    CHECK(dpd_split_contiguous(514, r, 256, b, l, &err) == DPD_E_INVAL && strstr(err.msg, "at least 3"),
          "usable < 3 is refused: %s", err.msg);
    CHECK(dpd_split_contiguous(10000, no_val, 256, b, l, &err) == DPD_E_INVAL && strstr(err.msg, "val split is empty"),
          "an empty split is refused: %s", err.msg);
    const double thirds[3] = {0.4, 0.35, 0.25};
    CHECK(!dpd_split_contiguous(515, thirds, 256, b, l, &err) && l[0] == 1 && l[1] == 1 && l[2] == 1, "usable 3: %s",
          err.msg);
}

int main(void) {
    test_names();
    test_legacy_golden();
    test_general();
    test_v2();
    test_split();
    return check_done("profiles");
}
