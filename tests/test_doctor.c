/* test_doctor: the dataset doctor (dpd_doctor_run, dpd_doctor_fix) on synthetic captures built here
 * with known faults — OpenDPD's doctor fixture protocol (a synthetic PA of 20 000 samples: delays of
 * 3, 7 and 40 samples and 3.25, a gain of 1.4 e^{j25 deg}, clipping at 60 % of the peak, 5 spikes of
 * magnitude 50, 2 NaNs, each missing metadata field) plus a silent output, a wrong bandwidth, too
 * little oversampling, DC, stuck samples, length and split faults, the single_csv and mat layouts, malformed
 * files, and the corrected copies re-examined; then the bundled OpenDPD datasets (skipped when
 * ../shared/data/opendpd is absent): DPA_100MHz must be flagged for its bandwidth. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "dpd/dpd.h"

#define N_CAP 20000 /* the fixture protocol's capture length */
#define NPERSEG 2000

/* A capture in memory: x, y (n, 2) split into train, val, test of len[k] samples. */
typedef struct cap {
    double *x, *y;
    size_t n, len[3];
    char spec[4096]; /* spec.json's text */
} cap;

static cap clean; /* the synthetic PA capture every faulty one starts from */
static dpd_synth_cfg synth;

/* A fresh directory under one scratch root (check_tmpdir's, removed at exit): check_tmpdir keeps 16
 * names. */
static char root[256];
static const char *scratch(void) {
    static char dirs[32][320];
    static int k;
    char *d = dirs[k % 32];
    snprintf(d, sizeof dirs[0], "%s/%d", root, k++);
    if (mkdir(d, 0700)) {
        perror(d);
        exit(2);
    }
    return d;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void cap_copy(cap *d, const cap *s) {
    *d = *s;
    d->x = malloc(s->n * 2 * sizeof *d->x);
    d->y = malloc(s->n * 2 * sizeof *d->y);
    if (!d->x || !d->y) exit(2);
    memcpy(d->x, s->x, s->n * 2 * sizeof *d->x);
    memcpy(d->y, s->y, s->n * 2 * sizeof *d->y);
}

static void cap_free(cap *c) {
    free(c->x);
    free(c->y);
}

/* Writes one I,Q file; NaN as "NaN" so the reader sees the text a user's tools write. */
static void write_iq(const char *dir, const char *name, const double *iq, size_t n) {
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (!f) exit(2);
    fputs("I,Q\n", f);
    for (size_t i = 0; i < 2 * n; i += 2) {
        for (int k = 0; k < 2; k++) {
            if (isnan(iq[i + k])) fprintf(f, "%sNaN", k ? "," : "");
            else fprintf(f, "%s%.17g", k ? "," : "", iq[i + k]);
        }
        fputc('\n', f);
    }
    fclose(f);
}

/* The capture as a split_csv dataset in a fresh directory. */
static const char *write_cap(const cap *c) {
    static const char *const split[3] = {"train", "val", "test"};
    const char *d = scratch();
    size_t off = 0;
    for (int k = 0; k < 3; k++) {
        char a[64], b[64];
        snprintf(a, sizeof a, "%s_input.csv", split[k]);
        snprintf(b, sizeof b, "%s_output.csv", split[k]);
        write_iq(d, a, c->x + 2 * off, c->len[k]);
        write_iq(d, b, c->y + 2 * off, c->len[k]);
        off += c->len[k];
    }
    check_write(d, "spec.json", c->spec);
    return d;
}

/* spec.json of the clean capture with key set to the JSON text value (NULL: removed). */
static void spec_edit(cap *c, const char *key, const char *value) {
    json_t *j = json_loads(clean.spec, 0, NULL);
    if (value) json_object_set_new(j, key, json_loads(value, JSON_DECODE_ANY, NULL));
    else json_object_del(j, key);
    char *t = json_dumps(j, JSON_INDENT(2));
    snprintf(c->spec, sizeof c->spec, "%s", t);
    free(t);
    json_decref(j);
}

/* The doctor's report on dir; a failure is a test failure (and an empty report). */
static dpd_doctor_report run(const char *what, const char *dir) {
    dpd_doctor_report r;
    dpd_error err = {0};
    dpd_status s = dpd_doctor_run(dir, &r, &err);
    CHECK(s == DPD_OK, "%s: dpd_doctor_run failed: %s", what, err.msg);
    return r;
}

static const dpd_finding *find(const dpd_doctor_report *r, const char *code) {
    for (int i = 0; i < r->nfindings; i++)
        if (!strcmp(r->findings[i].code, code)) return &r->findings[i];
    return NULL;
}

static const dpd_evidence *ev(const dpd_finding *f, const char *key) {
    for (int i = 0; f && i < f->nevidence; i++)
        if (!strcmp(f->evidence[i].key, key)) return &f->evidence[i];
    return NULL;
}

static double evnum(const dpd_finding *f, const char *key) {
    const dpd_evidence *e = ev(f, key);
    return e && e->kind == 'n' ? e->value : NAN;
}

static int errors_in(const dpd_doctor_report *r) {
    int n = 0;
    for (int i = 0; i < r->nfindings; i++) n += r->findings[i].severity == DPD_SEV_ERROR;
    return n;
}

/* Findings come sorted error -> warning -> info. */
static int sorted(const dpd_doctor_report *r) {
    for (int i = 1; i < r->nfindings; i++)
        if (r->findings[i].severity < r->findings[i - 1].severity) return 0;
    return 1;
}

static double gain_db(const dpd_doctor_report *r) { return 20 * log10(hypot(r->gain_re, r->gain_im)); }
static double phase_deg(const dpd_doctor_report *r) { return atan2(r->gain_im, r->gain_re) * 180 / M_PI; }

/* out[i] = in(i - d) for a fractional d: a Blackman-windowed sinc of +-32 taps (exact for whole d). */
static void delay_by(const double *in, double *out, size_t n, double d) {
    for (size_t i = 0; i < n; i++) {
        double re = 0, im = 0, t0 = (double)i - d;
        long c = lround(floor(t0));
        for (long j = c - 32; j <= c + 33; j++) {
            if (j < 0 || j >= (long)n) continue;
            double t = t0 - (double)j, h;
            if (fabs(t) < 1e-12) h = 1;
            else if (fabs(t) >= 33) h = 0;
            else {
                double u = (t + 33) / 66;
                h = sin(M_PI * t) / (M_PI * t) * (0.42 - 0.5 * cos(2 * M_PI * u) + 0.08 * cos(4 * M_PI * u));
            }
            re += h * in[2 * j], im += h * in[2 * j + 1];
        }
        out[2 * i] = re, out[2 * i + 1] = im;
    }
}

static void build_clean(void) {
    const char *d = scratch();
    dpd_error err = {0};
    dpd_dataset ds;
    dpd_synth_defaults(&synth);
    synth.length = N_CAP, synth.nperseg = NPERSEG, synth.seed = 11;
    if (dpd_synth_write(&synth, d, &err) || dpd_dataset_load(d, 7, 0, &ds, &err)) {
        fprintf(stderr, "FAIL the synthetic capture: %s\n", err.msg);
        exit(1);
    }
    clean.n = 0;
    for (int k = 0; k < 3; k++) clean.len[k] = ds.split[k].n, clean.n += ds.split[k].n;
    clean.x = malloc(clean.n * 2 * sizeof(double));
    clean.y = malloc(clean.n * 2 * sizeof(double));
    size_t off = 0;
    for (int k = 0; k < 3; k++) {
        memcpy(clean.x + 2 * off, ds.split[k].x, ds.split[k].n * 2 * sizeof(double));
        memcpy(clean.y + 2 * off, ds.split[k].y, ds.split[k].n * 2 * sizeof(double));
        off += ds.split[k].n;
    }
    dpd_dataset_free(&ds);
    char p[4200];
    snprintf(p, sizeof p, "%s/spec.json", d);
    FILE *f = fopen(p, "r");
    size_t len = f ? fread(clean.spec, 1, sizeof clean.spec - 1, f) : 0;
    clean.spec[len] = 0;
    if (f) fclose(f);
    CHECK(clean.n == N_CAP, "the synthetic capture has %zu samples, want %d", clean.n, N_CAP);
}

static double peak_of(const double *iq, size_t n) {
    double p = 0;
    for (size_t i = 0; i < n; i++) p = fmax(p, hypot(iq[2 * i], iq[2 * i + 1]));
    return p;
}

/* The clean capture: no error, no clipping, no outliers, aligned, the bandwidth as declared. */
static void test_clean(void) {
    const char *d = write_cap(&clean);
    double t = now();
    dpd_doctor_report r = run("clean", d);
    printf("doctor on the %d-sample clean capture: %.1f ms\n", N_CAP, 1e3 * (now() - t));
    CHECK(!r.evaluation_blocked && !errors_in(&r), "clean: no error-level finding (%d)", errors_in(&r));
    CHECK(sorted(&r), "clean: findings sorted error, warning, info");
    CHECK(!find(&r, "possible_output_clipping") && !find(&r, "possible_input_clipping"),
          "clean: never flagged for clipping");
    CHECK(!find(&r, "output_outliers"), "clean: no outliers");
    CHECK(find(&r, "alignment_ok") && fabs(r.delay) < 0.5, "clean: aligned (delay %g)", r.delay);
    CHECK(find(&r, "spectrum_summary") && !find(&r, "bandwidth_metadata_mismatch"), "clean: the bandwidth as declared");
    double filled = synth.carriers * synth.carrier_bw * synth.occupancy;
    CHECK(fabs(r.obw - filled) < 0.1 * filled, "clean: OBW %.4g Hz near the filled %.4g Hz", r.obw, filled);
    const dpd_finding *s = find(&r, "split_lengths");
    CHECK(s && evnum(s, "train") == (double)clean.len[0] && evnum(s, "val") == (double)clean.len[1] &&
              evnum(s, "test") == (double)clean.len[2] && evnum(s, "nperseg") == NPERSEG,
          "clean: split_lengths evidence names each split and nperseg");
    CHECK(r.n_total == clean.n && r.n[1] == clean.len[1], "clean: report counts %zu samples", r.n_total);
    CHECK(!strcmp(r.version, DPD_DOCTOR_VERSION) && strlen(r.raw_sha256) == 64 && strlen(r.id) == 28 &&
              !strncmp(r.id, "doc-", 4) && !strncmp(r.id + 20, r.raw_sha256, 8),
          "clean: version, raw sha256 and report id doc-<yyyymmdd-HHMMSS>-<sha8> (%s)", r.id);
    CHECK(r.nfiles == 7, "clean: 7 files listed with their hashes (%d)", r.nfiles);
    dpd_doctor_report_free(&r);
}

/* Delays of 3, 7, 40 and 3.25 samples (and -5: output early): within +-0.1, confidence >= 0.9. */
static void test_delay(void) {
    static const double delays[] = {3, 7, 40, 3.25, -5};
    for (size_t k = 0; k < sizeof delays / sizeof *delays; k++) {
        double dl = delays[k];
        cap c;
        cap_copy(&c, &clean);
        delay_by(clean.y, c.y, c.n, dl);
        dpd_doctor_report r = run("delay", write_cap(&c));
        const dpd_finding *f = find(&r, "time_misalignment");
        printf("delay %g: estimated %.4f, confidence %.4f\n", dl, r.delay, r.delay_confidence);
        CHECK(fabs(r.delay - dl) <= 0.1, "delay %g: estimated %.3f", dl, r.delay);
        CHECK(r.delay_confidence >= 0.9, "delay %g: confidence %.3f >= 0.9", dl, r.delay_confidence);
        CHECK(f && f->severity == DPD_SEV_WARNING && !strcmp(f->suggestion, "fix_delay") &&
                  fabs(evnum(f, "delay_samples") - r.delay) < 1e-12 && evnum(f, "integer_lag") == lround(dl),
              "delay %g: time_misalignment with its evidence", dl);
        CHECK(!r.evaluation_blocked, "delay %g: not blocking", dl);
        dpd_doctor_report_free(&r);
        cap_free(&c);
    }
}

/* y times g, and a linear PA y = g x (1 - 0.1 |x|^2): the gain within 0.5 dB and 3 degrees. */
static void test_gain(void) {
    const double g = 1.4, ph = 25 * M_PI / 180, gr = g * cos(ph), gi = g * sin(ph);
    cap c;
    cap_copy(&c, &clean);
    for (size_t i = 0; i < c.n; i++) {
        double *x = c.x + 2 * i, *y = c.y + 2 * i, comp = 1 - 0.1 * (x[0] * x[0] + x[1] * x[1]);
        y[0] = comp * (gr * x[0] - gi * x[1]);
        y[1] = comp * (gr * x[1] + gi * x[0]);
    }
    const char *d = write_cap(&c);
    dpd_doctor_report r = run("gain", d);
    printf("gain 1.4 e^j25 (%.3f dB): estimated %.3f dB %.2f deg\n", 20 * log10(g), gain_db(&r), phase_deg(&r));
    CHECK(fabs(gain_db(&r) - 20 * log10(g)) <= 0.5 && fabs(phase_deg(&r) - 25) <= 3,
          "gain 1.4 e^j25: estimated %.3f dB %.2f deg (want %.3f dB 25 deg)", gain_db(&r), phase_deg(&r), 20 * log10(g));
    const dpd_finding *f = find(&r, "linear_gain_phase");
    CHECK(f && f->severity == DPD_SEV_WARNING && fabs(evnum(f, "phase_deg") - phase_deg(&r)) < 1e-9 &&
              evnum(f, "fitted_on") >= 0.39 * N_CAP,
          "gain: linear_gain_phase is a warning (phase > 10 deg) with its evidence");
    CHECK(r.gain_confidence > 0.9, "gain: confidence %.3f", r.gain_confidence);
    dpd_doctor_report_free(&r);
    /* relative to the synthetic PA's own gain */
    dpd_doctor_report r0 = run("gain: clean", write_cap(&clean));
    cap_free(&c);
    cap_copy(&c, &clean);
    for (size_t i = 0; i < c.n; i++) {
        double *y = c.y + 2 * i, a = y[0], b = y[1];
        y[0] = gr * a - gi * b, y[1] = gr * b + gi * a;
    }
    dpd_doctor_report r1 = run("gain: scaled PA", write_cap(&c));
    double ddb = gain_db(&r1) - gain_db(&r0), dph = phase_deg(&r1) - phase_deg(&r0);
    CHECK(fabs(ddb - 20 * log10(g)) <= 0.5 && fabs(dph - 25) <= 3, "gain on the PA: %.3f dB %.2f deg more", ddb, dph);
    dpd_doctor_report_free(&r0);
    dpd_doctor_report_free(&r1);
    cap_free(&c);
}

/* An output that does not follow its input: I and Q swapped (it follows the input's conjugate),
 * Q negated (the same), and another capture's output (it follows neither). Each is an error that
 * blocks, with no delay or gain fitted; the clean capture has none. */
static void test_uncorrelated(void) {
    for (int kind = 0; kind < 3; kind++) {
        cap c;
        cap_copy(&c, &clean);
        dpd_rng rng;
        dpd_rng_seed(&rng, 5);
        for (size_t i = 0; i < c.n; i++) {
            double *y = c.y + 2 * i, a = y[0], b = y[1];
            if (kind == 0) y[0] = b, y[1] = a;
            else if (kind == 1) y[1] = -b;
            else y[0] = 0.3 * dpd_rng_normal(&rng), y[1] = 0.3 * dpd_rng_normal(&rng);
        }
        const char *what = (const char *[]){"I/Q swapped", "Q negated", "another capture"}[kind];
        dpd_doctor_report r = run(what, write_cap(&c));
        const dpd_finding *f = find(&r, "output_uncorrelated");
        CHECK(f && f->severity == DPD_SEV_ERROR && f->blocking && r.evaluation_blocked && evnum(f, "correlation") < 0.1 &&
                  (kind < 2 ? evnum(f, "conjugate_correlation") > 0.9 && strstr(f->message, "I and Q are swapped")
                            : evnum(f, "conjugate_correlation") < 0.1 && strstr(f->message, "no PA's aligned output does")),
              "%s: output_uncorrelated, an error saying which (%s)", what, f ? f->message : "none");
        CHECK(!find(&r, "alignment_ok") && !find(&r, "time_misalignment") && !find(&r, "linear_gain_phase") &&
                  isnan(r.delay) && isnan(r.gain_re),
              "%s: no delay or gain fitted on an output that does not follow the input", what);
        dpd_doctor_report_free(&r);
        cap_free(&c);
    }
    dpd_doctor_report r = run("clean", write_cap(&clean));
    CHECK(!find(&r, "output_uncorrelated") && r.delay_confidence > 0.99, "clean: correlated (%.4f)", r.delay_confidence);
    dpd_doctor_report_free(&r);
    cap c; /* I and Q swapped in the train split's output alone: the capture fails, and the fix names train only */
    cap_copy(&c, &clean);
    for (size_t i = 0; i < c.len[0]; i++) {
        double a = c.y[2 * i];
        c.y[2 * i] = c.y[2 * i + 1], c.y[2 * i + 1] = a;
    }
    r = run("train swapped", write_cap(&c));
    const dpd_finding *f = find(&r, "output_uncorrelated"), *g = find(&r, "split_uncorrelated");
    const dpd_evidence *e = ev(g, "split");
    CHECK(f && strstr(f->fix, "only the train split is at fault") && g && e && !strcmp(e->text, "train"),
          "train swapped alone: the capture's fix names train only (%s)", f ? f->fix : "none");
    dpd_doctor_report_free(&r);
    cap_free(&c);
}

/* Split k's output rolled lag samples late within the split (early where lag < 0), then times the
 * gain gr + j gi. */
static void split_alter(cap *c, int k, long lag, double gr, double gi) {
    size_t o = 0, m = c->len[k];
    for (int i = 0; i < k; i++) o += c->len[i];
    double *y = c->y + 2 * o, *copy = malloc(m * 2 * sizeof *copy);
    memcpy(copy, y, m * 2 * sizeof *copy);
    for (size_t i = 0; i < m; i++) {
        size_t j = (size_t)(((long)i - lag) % (long)m + (long)m) % m;
        double a = copy[2 * j], b = copy[2 * j + 1];
        y[2 * i] = gr * a - gi * b, y[2 * i + 1] = gr * b + gi * a;
    }
    free(copy);
}

/* One split's output out of line (rolled 40 samples within it), 6 dB low, turned 90 degrees, or
 * 1.2 dB low: split_delay_mismatch or split_gain_mismatch names it, against train; the clean
 * capture has neither. */
static void test_split_consistency(void) {
    for (int kind = 0; kind < 4; kind++) {
        cap c;
        cap_copy(&c, &clean);
        if (kind == 0) split_alter(&c, 1, 40, 1, 0);
        else if (kind == 1) split_alter(&c, 2, 0, 0.5, 0); /* test for the gain, val otherwise */
        else if (kind == 2) split_alter(&c, 1, 0, 0, 1);
        else split_alter(&c, 1, 0, 0.87, 0);
        const char *what = (const char *[]){"val 40 samples late", "test 6 dB low", "val turned 90 deg", "val 1.2 dB low"}[kind];
        dpd_doctor_report r = run(what, write_cap(&c));
        const dpd_finding *f = find(&r, kind ? "split_gain_mismatch" : "split_delay_mismatch");
        const dpd_evidence *e = ev(f, "split"), *ref = ev(f, "reference");
        CHECK(f && e && !strcmp(e->text, kind == 1 ? "test" : "val") && ref && !strcmp(ref->text, "train") &&
                  f->severity == (kind == 3 ? DPD_SEV_WARNING : DPD_SEV_ERROR),
              "%s: named, against train, %s (%s)", what, kind == 3 ? "a warning" : "an error", f ? f->message : "none");
        if (kind == 0) CHECK(f && fabs(evnum(f, "delay_samples") - evnum(f, "reference_delay_samples") - 40) < 0.5, "%s: 40 samples", what);
        if (kind == 1) CHECK(f && fabs(evnum(f, "gain_db") + 6.02) < 0.2, "%s: -6 dB (%.2f)", what, f ? evnum(f, "gain_db") : 0);
        if (kind == 2) CHECK(f && fabs(evnum(f, "phase_deg") - 90) < 2, "%s: +90 deg (%.1f)", what, f ? evnum(f, "phase_deg") : 0);
        int others = 0; /* the other splits are not blamed */
        for (int i = 0; i < r.nfindings; i++)
            others += !strncmp(r.findings[i].code, "split_", 6) && strcmp(r.findings[i].code, "split_lengths") && &r.findings[i] != f;
        CHECK(!others, "%s: only the changed split named (%d more)", what, others);
        dpd_doctor_report_free(&r);
        cap_free(&c);
    }
    dpd_doctor_report r = run("clean", write_cap(&clean));
    CHECK(!find(&r, "split_delay_mismatch") && !find(&r, "split_gain_mismatch"), "clean: its splits agree");
    dpd_doctor_report_free(&r);
    for (int kind = 0; kind < 2; kind++) { /* train the odd one out (6 dB low, or 3 samples late): train is named, not val and test */
        cap c;
        cap_copy(&c, &clean);
        split_alter(&c, 0, kind ? 3 : 0, kind ? 1 : 0.5, 0);
        const char *what = kind ? "train 3 samples late" : "train 6 dB low";
        r = run(what, write_cap(&c));
        int named = 0, train = 0;
        for (int i = 0; i < r.nfindings; i++)
            if (!strcmp(r.findings[i].code, kind ? "split_delay_mismatch" : "split_gain_mismatch")) {
                const dpd_evidence *e = ev(&r.findings[i], "split"), *ref = ev(&r.findings[i], "reference");
                named++, train += e && !strcmp(e->text, "train") && ref && !strcmp(ref->text, "val");
            }
        CHECK(named == 1 && train == 1, "%s: train named against val, once (%d findings)", what, named);
        dpd_doctor_report_free(&r);
        cap_free(&c);
    }
}

/* A one-sample slip of one split's output, either way: named (the commonest cutting mistake). */
static void test_split_slip(void) {
    for (int dir = -1; dir <= 1; dir += 2) {
        cap c;
        cap_copy(&c, &clean);
        split_alter(&c, 1, dir, 1, 0); /* late by one (dir 1) or early by one */
        dpd_doctor_report r = run(dir > 0 ? "val one late" : "val one early", write_cap(&c));
        const dpd_finding *f = find(&r, "split_delay_mismatch");
        CHECK(f && strstr(f->fix, dir > 0 ? "advance val_output.csv by 1 sample" : "delay val_output.csv by 1 sample"),
              "val one sample %s: named, with the way to move it (%s)", dir > 0 ? "late" : "early", f ? f->fix : "none");
        dpd_doctor_report_free(&r);
        cap_free(&c);
    }
}

/* A split file whose header names no columns I and Q ("X,Y"): read by position, as training reads
 * it, and said as columns_by_position naming the file; the clean capture (I,Q) has none. */
static void test_by_position(void) {
    const char *d = write_cap(&clean);
    char p[4200];
    snprintf(p, sizeof p, "%s/val_output.csv", d);
    FILE *f = fopen(p, "r+"); /* "I,Q\n" -> "X,Y\n": the same bytes' length, the rows as they were */
    CHECK(f && fputs("X,Y", f) >= 0, "rewrite the header of %s", p);
    if (f) fclose(f);
    dpd_doctor_report r = run("val_output.csv headed X,Y", d);
    const dpd_finding *g = find(&r, "columns_by_position");
    const dpd_evidence *e = ev(g, "files");
    CHECK(g && g->severity == DPD_SEV_WARNING && !g->blocking && e && !strcmp(e->text, "val_output.csv") &&
              strstr(g->fix, "name the columns I and Q") && !r.evaluation_blocked,
          "X,Y: columns_by_position, a warning naming val_output.csv (%s)", g ? g->message : "none");
    dpd_doctor_report_free(&r);
    r = run("clean", write_cap(&clean));
    CHECK(!find(&r, "columns_by_position"), "I,Q headers: no columns_by_position");
    dpd_doctor_report_free(&r);
}

/* The output a scaled copy of the input (a loopback): output_is_input; the clean capture, no. */
static void test_copy(void) {
    cap c;
    cap_copy(&c, &clean);
    for (size_t i = 0; i < 2 * c.n; i++) c.y[i] = 2 * c.x[i];
    dpd_doctor_report r = run("loopback", write_cap(&c));
    const dpd_finding *f = find(&r, "output_is_input");
    CHECK(f && f->severity == DPD_SEV_WARNING && evnum(f, "fit_residual") < 1e-4, "y = 2x: output_is_input");
    dpd_doctor_report_free(&r);
    cap_free(&c);
    r = run("clean", write_cap(&clean));
    CHECK(!find(&r, "output_is_input") && !find(&r, "iq_imbalance"), "a PA's output is no copy of its input, and has no image");
    dpd_doctor_report_free(&r);
    cap_copy(&c, &clean); /* the receiver's I/Q imbalance: an image 20 dB down */
    for (size_t i = 0; i < c.n; i++) {
        double re = c.y[2 * i], im = c.y[2 * i + 1];
        c.y[2 * i] = re + 0.1 * re, c.y[2 * i + 1] = im - 0.1 * im;
    }
    r = run("iq imbalance", write_cap(&c));
    f = find(&r, "iq_imbalance");
    CHECK(f && fabs(evnum(f, "image_rejection_db") - 20) < 1.5, "an image 20 dB down: iq_imbalance (%.1f dB)",
          f ? evnum(f, "image_rejection_db") : 0);
    dpd_doctor_report_free(&r);
    cap_free(&c);
    cap_copy(&c, &clean); /* an improper input (real up to a phase, as a two-tone): no image can be measured, none said */
    for (size_t i = 0; i < c.n; i++) {
        double a = c.x[2 * i], pr = cos(0.7), pi = sin(0.7);
        c.x[2 * i] = a * pr, c.x[2 * i + 1] = a * pi;
        c.y[2 * i] = 2 * a * pr + 0.01 * a * a * a * pr, c.y[2 * i + 1] = 2 * a * pi + 0.01 * a * a * a * pi;
    }
    r = run("improper input", write_cap(&c));
    CHECK(!find(&r, "iq_imbalance"), "a real-valued input turned by a phase: no iq_imbalance");
    dpd_doctor_report_free(&r);
    cap_free(&c);
}

/* |s| limited to frac of its peak, phase kept. */
static void clip(double *iq, size_t n, double frac) {
    double lim = frac * peak_of(iq, n);
    for (size_t i = 0; i < n; i++) {
        double m = hypot(iq[2 * i], iq[2 * i + 1]);
        if (m > lim) iq[2 * i] *= lim / m, iq[2 * i + 1] *= lim / m;
    }
}

static void test_clipping(void) {
    for (int output = 0; output < 2; output++) {
        cap c;
        cap_copy(&c, &clean);
        double pk = peak_of(output ? c.y : c.x, c.n);
        clip(output ? c.y : c.x, c.n, 0.6);
        dpd_doctor_report r = run("clipping", write_cap(&c));
        const dpd_finding *f = find(&r, output ? "possible_output_clipping" : "possible_input_clipping");
        CHECK(f && f->severity == DPD_SEV_WARNING, "clipping at 60 %% of the %s peak is detected",
              output ? "output" : "input");
        CHECK(f && fabs(evnum(f, "peak_magnitude") - 0.6 * pk) < 1e-6 * pk && evnum(f, "count_at_peak") >= 20 &&
                  evnum(f, "fraction_at_peak") >= 1e-3 && f->confidence > 0 && f->confidence <= 1,
              "clipping (%s): evidence peak %.6g (want %.6g), count %g", output ? "output" : "input",
              evnum(f, "peak_magnitude"), 0.6 * pk, evnum(f, "count_at_peak"));
        CHECK(!find(&r, output ? "possible_input_clipping" : "possible_output_clipping"),
              "clipping: only the clipped signal flagged");
        dpd_doctor_report_free(&r);
        cap_free(&c);
    }
    /* an ADC's rails: I and Q each limited at 60 % of the output's largest |I|, |Q|; the magnitude
     * then has no flat top, the rails have */
    cap c;
    cap_copy(&c, &clean);
    double rail = 0;
    for (size_t i = 0; i < 2 * c.n; i++) rail = fmax(rail, fabs(c.y[i]));
    rail *= 0.6;
    for (size_t i = 0; i < 2 * c.n; i++) c.y[i] = fmax(-rail, fmin(rail, c.y[i]));
    dpd_doctor_report r = run("rail clipping", write_cap(&c));
    const dpd_finding *f = find(&r, "possible_output_clipping");
    CHECK(f && strstr(f->message, "I/Q rail") && fabs(evnum(f, "peak_magnitude") - rail) < 1e-6 * rail &&
              !find(&r, "possible_input_clipping"),
          "I and Q clipped at a rail: possible_output_clipping at the rail (%s)", f ? f->message : "none");
    dpd_doctor_report_free(&r);
    cap_free(&c);
    r = run("clean", write_cap(&clean));
    CHECK(!find(&r, "possible_output_clipping") && !find(&r, "possible_input_clipping"), "clean: no clipping, by magnitude or rail");
    dpd_doctor_report_free(&r);
}

static int by_size(const void *a, const void *b) {
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/* 5 spikes of magnitude 50 in the output: all found, by index. */
static void test_spikes(void) {
    cap c;
    cap_copy(&c, &clean);
    dpd_rng rng;
    dpd_rng_seed(&rng, 7);
    size_t at[5];
    for (int k = 0; k < 5; k++) {
        at[k] = (size_t)k * (c.n / 5) + (size_t)dpd_rng_below(&rng, c.n / 5);
        double ph = 2 * M_PI * dpd_rng_uniform(&rng);
        c.y[2 * at[k]] = 50 * cos(ph), c.y[2 * at[k] + 1] = 50 * sin(ph);
    }
    qsort(at, 5, sizeof *at, by_size);
    dpd_doctor_report r = run("spikes", write_cap(&c));
    const dpd_finding *f = find(&r, "output_outliers");
    const dpd_evidence *e = ev(f, "indices");
    int same = e && e->nlist == 5;
    for (int k = 0; same && k < 5; k++) same = e->list[k] == at[k];
    CHECK(f && evnum(f, "count") == 5 && same, "5 spikes: all found at their indices (count %g)", evnum(f, "count"));
    CHECK(f && fabs(evnum(f, "max") - 50) < 1e-9 && f->confidence > 0.5, "spikes: max 50, confidence %.2f",
          f ? f->confidence : NAN);
    CHECK(!find(&r, "possible_output_clipping"), "spikes: left out of the clipping check");
    CHECK(fabs(r.delay) < 0.5, "spikes: left out of the delay estimate (%.3f)", r.delay);
    dpd_doctor_report_free(&r);
    cap_free(&c);
}

/* The amplitude check's finding, whichever of its three codes it has. */
static const dpd_finding *amplitude(const dpd_doctor_report *r) {
    const dpd_finding *f = find(r, "amplitude_range");
    if (!f) f = find(r, "amplitude_units_unconfirmed");
    return f ? f : find(r, "input_exceeds_unit_range");
}

/* One input sample of 1e30 (finite as a float): input_outliers by index, and it sets none of the
 * later figures: no input clipping, the occupied bandwidth, delay, gain and input peak of the clean
 * capture. The clean capture has no input outliers. */
static void test_input_spike(void) {
    dpd_doctor_report r0 = run("clean for the input spike", write_cap(&clean));
    cap c;
    cap_copy(&c, &clean);
    size_t at = c.n / 3;
    c.x[2 * at] = 1e30, c.x[2 * at + 1] = 0;
    dpd_doctor_report r = run("input spike", write_cap(&c));
    const dpd_finding *f = find(&r, "input_outliers"), *a0 = amplitude(&r0), *a = amplitude(&r);
    const dpd_evidence *e = ev(f, "indices");
    CHECK(!find(&r0, "input_outliers"), "clean: no input outliers");
    CHECK(f && f->severity == DPD_SEV_WARNING && evnum(f, "count") == 1 && e && e->nlist == 1 && e->list[0] == at &&
              evnum(f, "max") == 1e30 && strstr(f->message, "training takes g = max|y| / max|x| with it"),
          "an input spike of 1e30: input_outliers at its index (%s)", f ? f->message : "none");
    CHECK(!find(&r, "possible_input_clipping") && !find(&r, "insufficient_oversampling") && r.obw == r0.obw,
          "the input spike is left out of the clipping and bandwidth checks (OBW %g against %g)", r.obw, r0.obw);
    CHECK(fabs(r.delay - r0.delay) < 1e-3 && hypot(r.gain_re - r0.gain_re, r.gain_im - r0.gain_im) < 1e-3 * hypot(r0.gain_re, r0.gain_im),
          "and out of the delay and gain (%.4f against %.4f; %.6f%+.6fj against %.6f%+.6fj)", r.delay, r0.delay, r.gain_re,
          r.gain_im, r0.gain_re, r0.gain_im);
    CHECK(a && a0 && evnum(a, "input_peak") <= evnum(a0, "input_peak"), "and out of the input's peak (%g, clean %g)",
          a ? evnum(a, "input_peak") : NAN, a0 ? evnum(a0, "input_peak") : NAN);
    dpd_doctor_report_free(&r);
    dpd_doctor_report_free(&r0);
    cap_free(&c);
}

/* A sample beyond a float's range (1e300 is finite as a double, an infinity as the float dpd reads):
 * non_finite_samples as a NaN is, so the doctor and the loader agree. */
static void test_huge(void) {
    cap c;
    cap_copy(&c, &clean);
    size_t iy = 77;
    c.y[2 * iy] = -1e300;
    dpd_doctor_report r = run("1e300", write_cap(&c));
    const dpd_finding *f = find(&r, "non_finite_samples");
    const dpd_evidence *ey = f ? ev(f, "output_indices") : NULL;
    CHECK(r.evaluation_blocked && f && ey && ey->nlist == 1 && ey->list[0] == iy && strstr(f->message, "beyond a float's range"),
          "-1e300: non_finite_samples at its index, evaluation blocked");
    dpd_doctor_report_free(&r);
    cap_free(&c);
}

/* 2 NaNs (one in the output of train, one in the input of val): blocked, indices reported. */
static void test_nan(void) {
    cap c;
    cap_copy(&c, &clean);
    size_t iy = 1234, ix = c.len[0] + 321;
    c.y[2 * iy + 1] = NAN;
    c.x[2 * ix] = NAN;
    dpd_doctor_report r = run("NaN", write_cap(&c));
    const dpd_finding *f = find(&r, "non_finite_samples");
    const dpd_evidence *ex = ev(f, "input_indices"), *ey = ev(f, "output_indices"), *first = ev(f, "first");
    CHECK(r.evaluation_blocked && f && f->blocking && f->severity == DPD_SEV_ERROR, "2 NaNs: evaluation blocked");
    CHECK(ex && ey && ex->nlist == 1 && ex->list[0] == ix && ey->nlist == 1 && ey->list[0] == iy,
          "2 NaNs: their indices reported");
    char want[64];
    snprintf(want, sizeof want, "train_output.csv:%zu", iy + 2);
    CHECK(first && !strcmp(first->text, want), "2 NaNs: the first located as %s (got %s)", want, first ? first->text : "?");
    CHECK(r.findings[0].severity == DPD_SEV_ERROR && sorted(&r), "NaN: the error sorts first");
    dpd_doctor_fixed fx;
    dpd_error err = {0};
    char out[4200];
    snprintf(out, sizeof out, "%s/fixed", scratch());
    dpd_doctor_report_free(&r);
    dpd_status s = dpd_doctor_fix(write_cap(&c), out, DPD_FIX_DELAY, &r, &fx, &err);
    CHECK(s == DPD_E_INVAL && strstr(err.msg, "non_finite_samples") && access(out, F_OK) != 0,
          "a blocked capture is not corrected (%s)", err.msg);
    dpd_doctor_report_free(&r);
    cap_free(&c);
}

static void test_silent(void) {
    cap c;
    cap_copy(&c, &clean);
    memset(c.y, 0, c.n * 2 * sizeof *c.y);
    dpd_doctor_report r = run("silent", write_cap(&c));
    const dpd_finding *f = find(&r, "silent_signal");
    CHECK(f && f->blocking && r.evaluation_blocked && evnum(f, "output_rms") == 0 && evnum(f, "input_rms") > 0,
          "a silent output blocks, evidence output_rms 0");
    CHECK(!find(&r, "alignment_ok") && !find(&r, "time_misalignment") && isnan(r.delay), "silent: the doctor stops there");
    dpd_doctor_report_free(&r);
    cap_free(&c);
    /* one split's output silent (the capture's RMS is not 0): split_silent names it, and stops there too */
    cap_copy(&c, &clean);
    memset(c.y + 2 * c.len[0], 0, c.len[1] * 2 * sizeof *c.y);
    r = run("a silent split", write_cap(&c));
    f = find(&r, "split_silent");
    const dpd_evidence *e = ev(f, "split");
    CHECK(f && f->blocking && r.evaluation_blocked && e && !strcmp(e->text, "val") && evnum(f, "output_rms") == 0 &&
              evnum(f, "input_rms") > 0 && strstr(f->fix, "val_output.csv"),
          "a silent val output blocks, named (%s)", f ? f->message : "no split_silent");
    CHECK(!find(&r, "silent_signal") && !find(&r, "output_outliers") && !find(&r, "alignment_ok"),
          "a silent split: no capture-wide silence, no outliers; the doctor stops there");
    dpd_doctor_report_free(&r);
    cap_free(&c);
}

/* Each missing metadata field blocks; the DPA_100MHz alias counts as the field; bad values too. */
static void test_metadata(void) {
    static const char *const keys[] = {"input_signal_fs", "bw_main_ch", "n_sub_ch", "nperseg"};
    for (int k = 0; k < 4; k++) {
        cap c = clean;
        spec_edit(&c, keys[k], NULL);
        dpd_doctor_report r = run("metadata", write_cap(&c));
        const dpd_finding *f = find(&r, "metadata_missing");
        const dpd_evidence *e = ev(f, "missing");
        CHECK(r.evaluation_blocked && f && f->blocking && e && !strcmp(e->text, keys[k]),
              "missing %s: blocks, named in the evidence (%s)", keys[k], e ? e->text : "none");
        dpd_doctor_report_free(&r);
    }
    cap c = clean;
    json_t *j = json_loads(clean.spec, 0, NULL);
    json_object_set(j, "input_signal_bw", json_object_get(j, "bw_main_ch"));
    json_object_del(j, "bw_main_ch");
    char *t = json_dumps(j, 0);
    snprintf(c.spec, sizeof c.spec, "%s", t);
    free(t);
    json_decref(j);
    dpd_doctor_report r = run("alias", write_cap(&c));
    CHECK(!find(&r, "metadata_missing") && !r.evaluation_blocked, "input_signal_bw stands for bw_main_ch");
    dpd_doctor_report_free(&r);
    c = clean;
    spec_edit(&c, "input_signal_bw", "123e6"); /* beside bw_main_ch, another value */
    r = run("alias differs", write_cap(&c));
    const dpd_finding *fa = find(&r, "metadata_invalid");
    CHECK(fa && fa->blocking && strstr(fa->message, "bw_main_ch and its alias input_signal_bw are both given and differ"),
          "a field and its alias that differ: metadata_invalid naming both (%s)", fa ? fa->message : "none");
    dpd_doctor_report_free(&r);
    c = clean; /* sub-channels that do not fit the main channel: the loader's warning, as a finding */
    spec_edit(&c, "bw_sub_ch", "1e9");
    r = run("bw_sub_ch 1 GHz", write_cap(&c));
    fa = find(&r, "metadata_suspicious");
    CHECK(fa && fa->severity == DPD_SEV_WARNING && !r.evaluation_blocked && strstr(fa->message, "does not fit in bw_main_ch"),
          "bw_sub_ch x n_sub_ch above bw_main_ch: metadata_suspicious (%s)", fa ? fa->message : "none");
    dpd_doctor_report_free(&r);
    r = run("clean", write_cap(&clean));
    CHECK(!find(&r, "metadata_suspicious"), "clean: no metadata_suspicious");
    dpd_doctor_report_free(&r);
    c = clean; /* above the loader's 1 THz: invalid, as the loader refuses it, and not used by the spectrum checks */
    spec_edit(&c, "input_signal_fs", "2e12");
    r = run("fs 2 THz", write_cap(&c));
    fa = find(&r, "metadata_invalid");
    CHECK(fa && fa->blocking && strstr(fa->message, "input_signal_fs 2e+12 Hz is above 1 THz") && r.evaluation_blocked &&
              !find(&r, "bandwidth_metadata_mismatch"),
          "input_signal_fs 2e12: metadata_invalid, as the loader refuses it (%s)", fa ? fa->message : "none");
    dpd_doctor_report_free(&r);
    c = clean; /* nperseg 1: the loader refuses it (a PSD needs two samples a frame), so the doctor does */
    spec_edit(&c, "nperseg", "1");
    r = run("nperseg 1", write_cap(&c));
    fa = find(&r, "metadata_invalid");
    CHECK(fa && fa->blocking && strstr(fa->message, "nperseg = 1"), "nperseg 1: metadata_invalid, as the loader refuses it (%s)",
          fa ? fa->message : "none");
    dpd_doctor_report_free(&r);
    c = clean; /* bw_sub_ch may be absent; given, the loader reads it, so it is checked as it would be */
    spec_edit(&c, "bw_sub_ch", NULL);
    r = run("no bw_sub_ch", write_cap(&c));
    CHECK(!find(&r, "metadata_missing") && !find(&r, "metadata_invalid") && !r.evaluation_blocked,
          "bw_sub_ch absent: not missing (it is optional)");
    dpd_doctor_report_free(&r);
    c = clean;
    spec_edit(&c, "bw_sub_ch", "\"20e6\"");
    r = run("bw_sub_ch string", write_cap(&c));
    fa = find(&r, "metadata_invalid");
    CHECK(fa && fa->blocking && strstr(fa->message, "bw_sub_ch"), "bw_sub_ch as a string: metadata_invalid naming it (%s)",
          fa ? fa->message : "none");
    dpd_doctor_report_free(&r);
    c = clean; /* clean's bw_sub_ch is 20e6 (spec_edit starts from clean's spec each time) */
    CHECK(strstr(clean.spec, "\"bw_sub_ch\": 20000000") || strstr(clean.spec, "\"bw_sub_ch\": 20e6"),
          "the clean spec gives bw_sub_ch 20 MHz (%s)", clean.spec);
    spec_edit(&c, "input_signal_sub_ch_bw", "40e6");
    r = run("sub alias differs", write_cap(&c));
    fa = find(&r, "metadata_invalid");
    CHECK(fa && fa->blocking && strstr(fa->message, "bw_sub_ch and its alias input_signal_sub_ch_bw are both given and differ"),
          "bw_sub_ch and its alias that differ: metadata_invalid naming both (%s)", fa ? fa->message : "none");
    dpd_doctor_report_free(&r);
    c = clean;
    spec_edit(&c, "nperseg", "\"2560\"");
    r = run("invalid", write_cap(&c));
    const dpd_finding *f = find(&r, "metadata_invalid");
    CHECK(f && f->blocking && strstr(f->message, "nperseg"), "nperseg as a string: metadata_invalid naming it");
    dpd_doctor_report_free(&r);
    c = clean;
    spec_edit(&c, "bw_main_ch", "900e6");
    r = run("bw >= fs", write_cap(&c));
    CHECK(find(&r, "metadata_invalid") && r.evaluation_blocked, "bw_main_ch above fs: metadata_invalid");
    dpd_doctor_report_free(&r);
    cap d;
    cap_copy(&d, &clean);
    spec_edit(&d, "amplitude_units", "\"normalized\"");
    for (size_t i = 0; i < 2 * d.n; i++) d.x[i] *= 1.5; /* input peak 1.5 */
    r = run("units", write_cap(&d));
    f = find(&r, "input_exceeds_unit_range");
    CHECK(f && !strcmp(f->suggestion, "normalize=peak_input") && fabs(evnum(f, "input_peak") - 1.5) < 1e-9 &&
              !strcmp(f->value, "input peak 1.5 > 1.05"),
          "normalized units with input peak 1.5: input_exceeds_unit_range, the peak as its value (%s)", f ? f->value : "");
    dpd_doctor_report_free(&r);
    cap_free(&d);
}

/* A wrong bandwidth in spec.json, and a signal that fills too much of fs. */
static void test_bandwidth(void) {
    cap c = clean;
    spec_edit(&c, "bw_main_ch", "100e6");
    dpd_doctor_report r = run("bandwidth", write_cap(&c));
    const dpd_finding *f = find(&r, "bandwidth_metadata_mismatch");
    CHECK(f && f->severity == DPD_SEV_WARNING && evnum(f, "obw_ratio") > 1.3 && evnum(f, "bandwidth_hz") == 100e6 &&
              fabs(evnum(f, "obw_hz") - r.obw) < 1e-6,
          "declared 100 MHz for a 200 MHz signal: bandwidth_metadata_mismatch (ratio %g)", evnum(f, "obw_ratio"));
    dpd_doctor_report_free(&r);
    c = clean; /* within the reference's 1.3, but wider than the channel: dpd's bandwidth_exceeds_channel */
    spec_edit(&c, "bw_main_ch", "160e6");
    r = run("bandwidth 160", write_cap(&c));
    f = find(&r, "bandwidth_exceeds_channel");
    CHECK(f && f->severity == DPD_SEV_WARNING && evnum(f, "obw_ratio") > 1.05 && evnum(f, "obw_ratio") <= 1.3 &&
              !find(&r, "bandwidth_metadata_mismatch") && !find(&r, "spectrum_summary"),
          "declared 160 MHz for a 200 MHz signal: bandwidth_exceeds_channel (ratio %g)", evnum(f, "obw_ratio"));
    dpd_doctor_report_free(&r);
    r = run("bandwidth right", write_cap(&clean));
    CHECK(!find(&r, "bandwidth_exceeds_channel") && find(&r, "spectrum_summary"), "the right plan: only the summary");
    dpd_doctor_report_free(&r);
    cap w; /* white noise fills every bin: no room left for adjacent channels */
    cap_copy(&w, &clean);
    dpd_rng rng;
    dpd_rng_seed(&rng, 3);
    for (size_t i = 0; i < 2 * w.n; i++) w.x[i] = 0.3 * dpd_rng_normal(&rng), w.y[i] = 2 * w.x[i];
    r = run("oversampling", write_cap(&w));
    cap_free(&w);
    f = find(&r, "insufficient_oversampling");
    CHECK(f && evnum(f, "obw_hz") > 0.6 * synth.fs && !find(&r, "bandwidth_metadata_mismatch"),
          "white noise filling %.0f %% of fs: insufficient_oversampling", 100 * r.obw / synth.fs);
    dpd_doctor_report_free(&r);
}

/* dpd's own checks: DC, stuck samples, split lengths, missing files, length mismatch, too few. */
static void test_dpd_checks(void) {
    cap c;
    cap_copy(&c, &clean);
    double rms = 0;
    for (size_t i = 0; i < 2 * c.n; i++) rms += c.x[i] * c.x[i];
    rms = sqrt(rms / (double)c.n);
    for (size_t i = 0; i < c.n; i++) c.x[2 * i] += 0.3 * rms;
    dpd_doctor_report r = run("dc", write_cap(&c));
    const dpd_finding *f = find(&r, "dc_offset");
    CHECK(f && fabs(evnum(f, "input_dc_dbc") - 20 * log10(0.3)) < 0.5, "DC of 0.3 RMS: dc_offset at %.2f dBc (want %.2f)",
          evnum(f, "input_dc_dbc"), 20 * log10(0.3));
    dpd_doctor_report_free(&r);
    memcpy(c.x, clean.x, c.n * 2 * sizeof *c.x);
    for (size_t i = 5000; i < 5100; i++) c.y[2 * i] = 0.123, c.y[2 * i + 1] = -0.456; /* a frozen buffer */
    r = run("stuck", write_cap(&c));
    f = find(&r, "stuck_samples");
    const dpd_evidence *at = ev(f, "at");
    CHECK(f && evnum(f, "longest_run") == 100 && at && at->list[0] == 5000 && !strcmp(ev(f, "signal")->text, "output"),
          "100 stuck output samples at 5000: stuck_samples (longest %g)", evnum(f, "longest_run"));
    dpd_doctor_report_free(&r);
    cap_free(&c);

    c = clean;
    spec_edit(&c, "nperseg", "5000");
    r = run("nperseg", write_cap(&c));
    int shorter = 0;
    for (int i = 0; i < r.nfindings; i++)
        if (!strcmp(r.findings[i].code, "split_shorter_than_segment"))
            shorter += evnum(&r.findings[i], "samples") < 5000 && evnum(&r.findings[i], "nperseg") == 5000;
    CHECK(shorter == 2, "val and test of 4000 < nperseg 5000: two split_shorter_than_segment (%d)", shorter);
    dpd_doctor_report_free(&r);

    const char *d = write_cap(&clean);
    char p[4200];
    snprintf(p, sizeof p, "%s/val_input.csv", d);
    unlink(p);
    snprintf(p, sizeof p, "%s/val_output.csv", d);
    unlink(p);
    snprintf(p, sizeof p, "%s/test_output.csv", d);
    unlink(p);
    r = run("missing files", d);
    f = find(&r, "split_missing");
    CHECK(f && !strcmp(ev(f, "split")->text, "val"), "no val files: split_missing val");
    int absent = 0;
    for (int i = 0; i < r.nfindings; i++) absent += !strcmp(r.findings[i].code, "split_missing");
    CHECK(absent == 1, "test_input.csv without its partner: split_file_missing, not split_missing too (%d split_missing)",
          absent);
    f = find(&r, "split_file_missing");
    CHECK(f && f->blocking && strstr(ev(f, "missing")->text, "test_output.csv"), "test_output.csv alone missing: blocks");
    CHECK(r.n[1] == 0 && r.n[2] == 0 && r.n_total == clean.len[0], "missing files: only train examined");
    dpd_doctor_report_free(&r);

    d = write_cap(&clean); /* every split without one of its files: all three named, in split order */
    const char *gone[3] = {"train_output.csv", "val_input.csv", "test_output.csv"};
    for (int k = 0; k < 3; k++) {
        snprintf(p, sizeof p, "%s/%s", d, gone[k]);
        unlink(p);
    }
    r = run("three halves", d);
    f = find(&r, "split_file_missing");
    CHECK(f && strstr(f->message, "train_output.csv, val_input.csv and test_output.csv are missing while their partner") &&
              ev(f, "missing") && !strcmp(ev(f, "missing")->text, "train_output.csv, val_input.csv, test_output.csv") &&
              !strcmp(f->fix, "restore train_output.csv, val_input.csv and test_output.csv from the capture (or remove "
                              "their partners)") &&
              !strcmp(f->value, "train_output.csv missing") && !find(&r, "split_missing"),
          "three splits each without one file: one split_file_missing naming all three (%s)", f ? f->message : "none");
    dpd_doctor_report_free(&r);

    d = write_cap(&clean);
    write_iq(d, "val_input.csv", clean.x, 0);
    write_iq(d, "val_output.csv", clean.y, 0);
    r = run("empty val", d);
    f = find(&r, "split_empty");
    CHECK(f && f->blocking && f->severity == DPD_SEV_ERROR && !strcmp(ev(f, "split")->text, "val") &&
              strstr(f->message, "val_input.csv and val_output.csv have no data rows"),
          "val files with a header and no rows: split_empty, an error that blocks (%s)", f ? f->message : "none");
    dpd_doctor_report_free(&r);

    cap_copy(&c, &clean);
    c.len[2]--; /* drop the last test row of the output only */
    d = write_cap(&c);
    write_iq(d, "test_input.csv", c.x + 2 * (c.len[0] + c.len[1]), c.len[2] + 1);
    r = run("length", d);
    f = find(&r, "length_mismatch");
    CHECK(f && f->blocking && evnum(f, "n_input") - evnum(f, "n_output") == 1 && r.n_total == clean.n - 1,
          "one output row short: length_mismatch, trimmed to %zu", r.n_total);
    dpd_doctor_report_free(&r);
    c.len[0] = 100, c.len[1] = 100, c.len[2] = 100;
    r = run("few", write_cap(&c));
    f = find(&r, "too_few_samples");
    CHECK(f && f->blocking && evnum(f, "n_samples") == 300, "300 samples: too_few_samples");
    dpd_doctor_report_free(&r);
    cap_free(&c);
}

/* single_csv: one I_in,Q_in,I_out,Q_out file cut by split_ratios. */
static void test_single_csv(void) {
    const char *d = scratch();
    char p[4200];
    snprintf(p, sizeof p, "%s/capture.csv", d);
    FILE *fp = fopen(p, "w");
    double *y = malloc(clean.n * 2 * sizeof *y);
    delay_by(clean.y, y, clean.n, 7);
    fputs("I_in,Q_in,I_out,Q_out\n", fp);
    for (size_t i = 0; i < clean.n; i++)
        fprintf(fp, "%.17g,%.17g,%.17g,%.17g\n", clean.x[2 * i], clean.x[2 * i + 1], y[2 * i], y[2 * i + 1]);
    fclose(fp);
    free(y);
    cap c = clean;
    spec_edit(&c, "dataset_format", "\"single_csv\"");
    json_t *j = json_loads(c.spec, 0, NULL);
    json_object_set_new(j, "csv_filename", json_string("capture.csv"));
    char *t = json_dumps(j, 0);
    check_write(d, "spec.json", t);
    free(t);
    json_decref(j);
    dpd_doctor_report r = run("single_csv", d);
    /* contiguous-v1: 20000 - 2 x 256 usable, floor(0.6 u), floor(0.2 u), the rest */
    CHECK(!strcmp(r.layout, "single_csv") && r.n_total == clean.n && r.n[0] == 11692 && r.n[1] == 3897 &&
              r.n[2] == 3899, "single_csv: one file, split 0.6/0.2/0.2 by contiguous-v1 (%zu %zu %zu)", r.n[0], r.n[1],
          r.n[2]);
    CHECK(fabs(r.delay - 7) < 0.1, "single_csv: delay 7 found (%.3f)", r.delay);
    char out[4200];
    dpd_doctor_fixed fx;
    dpd_error err = {0};
    snprintf(out, sizeof out, "%s/fixed", scratch());
    dpd_doctor_report_free(&r);
    CHECK(!dpd_doctor_fix(d, out, DPD_FIX_DELAY, &r, &fx, &err) && fx.rows[0] == clean.n - 7, "single_csv: fixed (%s)",
          err.msg);
    dpd_doctor_report_free(&r);
    r = run("single_csv fixed", out);
    CHECK(fabs(r.delay) < 0.1 && !strcmp(r.layout, "single_csv"), "single_csv: the copy is aligned (%.3f)", r.delay);
    dpd_doctor_report_free(&r);
}

/* A mat dataset (one .mat, the sample rate from the file, the variables named in spec.json): the
 * delay found, the split as the loader cuts it, the corrected copy a .mat again; a sample rate that
 * disagrees with spec.json and split ratios contiguous-v1 refuses are error-level findings. */
static void test_mat(void) {
    const char *d = scratch();
    char path[4200];
    dpd_error err = {0};
    double *y = malloc(clean.n * 2 * sizeof *y);
    delay_by(clean.y, y, clean.n, 7);
    snprintf(path, sizeof path, "%s/pa.mat", d);
    CHECK(!dpd_mat_write_pair(path, clean.x, y, clean.n, synth.fs, "pa_in", "pa_out", 0, &err), "mat: written (%s)",
          err.msg);
    free(y);
    cap c = clean;
    spec_edit(&c, "input_signal_fs", NULL);
    json_t *j = json_loads(c.spec, 0, NULL);
    json_object_set_new(j, "dataset_format", json_string("mat"));
    json_object_set_new(j, "mat_filename", json_string("pa.mat"));
    json_object_set_new(j, "mat_input", json_string("pa_in"));
    json_object_set_new(j, "mat_output", json_string("pa_out"));
    char *t = json_dumps(j, 0);
    check_write(d, "spec.json", t);
    free(t);
    dpd_doctor_report r = run("mat", d);
    CHECK(!strcmp(r.layout, "mat") && r.n_total == clean.n && r.n[0] == 11692 && r.n[1] == 3897 && r.n[2] == 3899,
          "mat: layout mat, split by contiguous-v1 (%s: %zu %zu %zu)", r.layout, r.n[0], r.n[1], r.n[2]);
    CHECK(fabs(r.delay - 7) < 0.1 && !r.evaluation_blocked, "mat: delay 7 found (%.3f), not blocking", r.delay);
    CHECK(!find(&r, "metadata_missing"), "mat: the file's fs stands in for input_signal_fs");
    CHECK(r.nfiles == 2 && strlen(r.raw_sha256) == 64, "mat: spec.json and pa.mat listed and hashed (%d)", r.nfiles);
    dpd_doctor_report_free(&r);
    char out[4200];
    dpd_doctor_fixed fx;
    snprintf(out, sizeof out, "%s/fixed", scratch());
    CHECK(!dpd_doctor_fix(d, out, DPD_FIX_DELAY, &r, &fx, &err) && fx.rows[0] == clean.n - 7, "mat: fixed (%s)",
          err.msg);
    dpd_doctor_report_free(&r);
    r = run("mat fixed", out);
    CHECK(fabs(r.delay) < 0.1 && !strcmp(r.layout, "mat") && r.n_total == clean.n - 7,
          "mat: the copy is a mat dataset, aligned (%.3f) and 7 samples shorter", r.delay);
    dpd_doctor_report_free(&r);
    dpd_dataset ds;
    CHECK(!dpd_dataset_load(out, 7, 0, &ds, &err) && ds.spec.fs == synth.fs && !strcmp(ds.protocol, "contiguous-v1"),
          "mat: the copy loads, fs from its file (%s)", err.msg);
    dpd_dataset_free(&ds);
    json_object_set_new(j, "input_signal_fs", json_real(synth.fs * 2));
    t = json_dumps(j, 0);
    check_write(d, "spec.json", t);
    free(t);
    r = run("mat fs", d);
    const dpd_finding *f = find(&r, "metadata_invalid");
    CHECK(r.evaluation_blocked && f && strstr(f->message, "disagrees with pa.mat's fs") &&
              strstr(f->fix, "make spec.json's input_signal_fs and pa.mat's fs the same rate"),
          "mat: input_signal_fs twice the file's fs is metadata_invalid, the fix about the two rates (%s; %s)",
          f ? f->message : "none", f ? f->fix : "");
    dpd_doctor_report_free(&r);
    y = malloc(clean.n * 2 * sizeof *y); /* a file whose fs is in MHz, spec.json giving none: the file is blamed */
    delay_by(clean.y, y, clean.n, 7);
    CHECK(!dpd_mat_write_pair(path, clean.x, y, clean.n, 800, "pa_in", "pa_out", 0, &err), "mat 800: written");
    free(y);
    json_object_del(j, "input_signal_fs");
    t = json_dumps(j, 0);
    check_write(d, "spec.json", t);
    free(t);
    r = run("mat fs in MHz", d);
    f = find(&r, "metadata_suspicious");
    CHECK(f && strstr(f->message, "pa.mat's fs is 800 Hz") && !strstr(f->message, "spec.json"),
          "mat: an fs of 800 in the file is said of the file (%s)", f ? f->message : "none");
    dpd_doctor_report_free(&r);
    json_object_del(j, "input_signal_fs");
    json_object_set_new(j, "split_ratios", json_pack("{s:f, s:f, s:f}", "train", 0.6, "val", 0.3, "test", 0.3));
    t = json_dumps(j, 0);
    check_write(d, "spec.json", t);
    free(t);
    json_decref(j);
    r = run("mat ratios", d);
    f = find(&r, "split_invalid");
    CHECK(r.evaluation_blocked && f && f->severity == DPD_SEV_ERROR && strstr(f->message, "sum to 1.2"),
          "mat: split_ratios summing to 1.2 are split_invalid (%s)", f ? f->message : "none");
    dpd_doctor_report_free(&r);
}

static int file_same(const char *a, const char *b) {
    FILE *f = fopen(a, "rb"), *g = fopen(b, "rb");
    int same = f && g, x, y;
    while (same && ((x = fgetc(f)) != EOF) | ((y = fgetc(g)) != EOF)) same = x == y;
    if (f) fclose(f);
    if (g) fclose(g);
    return same;
}

/* --fix-delay / --fix-gain: the copies re-examined come out aligned and of unity gain; the source
 * is untouched; bad destinations are refused. */
static void test_fix(void) {
    const double g = 1.4, ph = 25 * M_PI / 180, gr = g * cos(ph), gi = g * sin(ph);
    cap c;
    cap_copy(&c, &clean);
    delay_by(clean.y, c.y, c.n, 3.25);
    for (size_t i = 0; i < c.n; i++) {
        double *y = c.y + 2 * i, a = y[0], b = y[1];
        y[0] = gr * a - gi * b, y[1] = gr * b + gi * a;
    }
    const char *src = write_cap(&c);
    dpd_doctor_report r0 = run("fix: source", src);
    char out[4200], a[4300], b[4300];
    snprintf(out, sizeof out, "%s/deep/fixed", scratch());
    dpd_doctor_fixed fx;
    dpd_doctor_report r;
    dpd_error err = {0};
    dpd_status s = dpd_doctor_fix(src, out, DPD_FIX_DELAY | DPD_FIX_GAIN, &r, &fx, &err);
    CHECK(s == DPD_OK, "fix: %s", err.msg);
    CHECK(fx.shift == 3 && fx.rows[0] == c.len[0] - 3 && fx.rows[2] == c.len[2] - 3, "fix: shift 3, each split 3 shorter");
    CHECK(fabs(fx.gain_re - r0.gain_re) < 1e-12 && fabs(fx.gain_im - r0.gain_im) < 1e-12, "fix: divides by the fitted gain");
    dpd_doctor_report_free(&r);
    r = run("fix: copy", out);
    CHECK(fabs(r.delay - 0.25) < 0.1 && find(&r, "alignment_ok"), "fixed copy: residual delay %.3f (want 0.25)", r.delay);
    CHECK(fabs(gain_db(&r)) < 0.05 && fabs(phase_deg(&r)) < 0.5, "fixed copy: unity gain (%.4f dB, %.3f deg)", gain_db(&r),
          phase_deg(&r));
    snprintf(a, sizeof a, "%s/spec.json", src);
    snprintf(b, sizeof b, "%s/spec.json", out);
    CHECK(file_same(a, b), "fix: spec.json copied unchanged");
    dpd_doctor_report r1 = run("fix: source again", src);
    CHECK(!strcmp(r1.raw_sha256, r0.raw_sha256), "fix: the source is untouched");
    dpd_doctor_report_free(&r1);
    dpd_doctor_report_free(&r);
    /* a whole delay of 7 comes out exact */
    delay_by(clean.y, c.y, c.n, 7);
    const char *src7 = write_cap(&c);
    snprintf(out, sizeof out, "%s/fixed7", scratch());
    CHECK(!dpd_doctor_fix(src7, out, DPD_FIX_DELAY, &r, &fx, &err) && fx.shift == 7, "fix 7: %s", err.msg);
    dpd_doctor_report_free(&r);
    r = run("fix 7: copy", out);
    /* src7 is the PA's output without the 1.4 e^j25: its gain is r0's less 20 log10 1.4, kept by --fix-delay */
    CHECK(fabs(r.delay) < 0.1 && fabs(gain_db(&r) - gain_db(&r0) + 20 * log10(g)) < 0.5, "fix 7: aligned (%.3f), gain kept",
          r.delay);
    dpd_doctor_report_free(&r);
    /* refusals */
    s = dpd_doctor_fix(src, src, DPD_FIX_DELAY, &r, &fx, &err);
    CHECK(s == DPD_E_INVAL && strstr(err.msg, "in place"), "fix into the source is refused (%s)", err.msg);
    dpd_doctor_report_free(&r);
    s = dpd_doctor_fix(src, src7, DPD_FIX_GAIN, &r, &fx, &err);
    CHECK(s == DPD_E_INVAL && strstr(err.msg, "not an empty directory"), "fix into a non-empty directory is refused (%s)",
          err.msg);
    dpd_doctor_report_free(&r);
    const char *empty = scratch();
    s = dpd_doctor_fix(src, empty, DPD_FIX_GAIN, &r, &fx, &err);
    CHECK(s == DPD_OK && fx.shift == 0, "fix into an empty directory is allowed (%s)", err.msg);
    dpd_doctor_report_free(&r);
    s = dpd_doctor_fix(src, out, 0, &r, &fx, &err);
    CHECK(s == DPD_E_INVAL, "fix with no fix asked is refused");
    dpd_doctor_report_free(&r);
    dpd_doctor_report_free(&r0);
    cap_free(&c);
}

/* Malformed files are errors naming file and line; hostile spec.json never crashes. */
static void test_malformed(void) {
    const char *d = write_cap(&clean);
    check_write(d, "val_output.csv", "I,Q\n0.1,0.2\n0.3,abc\n");
    dpd_doctor_report r;
    dpd_error err = {0};
    dpd_status s = dpd_doctor_run(d, &r, &err);
    CHECK(s == DPD_E_FORMAT && strstr(err.msg, "val_output.csv:3") && strstr(err.msg, "abc"),
          "text in a number field: DPD_E_FORMAT naming file and line (%s)", err.msg);
    dpd_doctor_report_free(&r);
    check_write(d, "val_output.csv", "I,Q\n0.1,0.2\n,0.3\n0.4, \t\n");
    s = dpd_doctor_run(d, &r, &err);
    const dpd_finding *nf = s ? NULL : find(&r, "non_finite_samples");
    CHECK(!s && nf && nf->blocking, "blank fields read as missing values (NaN), not as errors (%s)", err.msg);
    dpd_doctor_report_free(&r);
    check_write(d, "val_output.csv", "I,Q\n0.1,0.2,0.3\n");
    s = dpd_doctor_run(d, &r, &err);
    CHECK(s == DPD_E_FORMAT && strstr(err.msg, "val_output.csv:2: extra fields"), "extra fields (%s)", err.msg);
    dpd_doctor_report_free(&r);
    check_write(d, "val_output.csv", "0.1,0.2\n");
    s = dpd_doctor_run(d, &r, &err);
    CHECK(s == DPD_E_FORMAT && strstr(err.msg, "expected a header"), "no header (%s)", err.msg);
    dpd_doctor_report_free(&r);
    static const char *const hostile[] = {"{\"nperseg\": ", "[1, 2, 3]", "\"x\"", "{\"a\": 1, \"a\": 2}",
                                          "{\"dataset_format\": \"sigmf\"}", "{\"csv_filename\": \"../../etc/passwd\"}",
                                          "{\"dataset_format\": \"mat\", \"mat_filename\": \"../x.mat\"}",
                                          "{\"dataset_format\": \"mat\", \"mat_input\": 3}"};
    d = write_cap(&clean);
    for (size_t k = 0; k < sizeof hostile / sizeof *hostile; k++) {
        check_write(d, "spec.json", hostile[k]);
        s = dpd_doctor_run(d, &r, &err);
        CHECK(s == DPD_E_FORMAT && strstr(err.msg, "spec.json"), "hostile spec.json %s: DPD_E_FORMAT naming it (%s)",
              hostile[k], err.msg);
        dpd_doctor_report_free(&r);
    }
    check_write(d, "spec.json", "{\"dataset_format\": \"mat\"}");
    s = dpd_doctor_run(d, &r, &err);
    CHECK(s == DPD_E_IO && strstr(err.msg, "data.mat"), "a mat dataset without its file: DPD_E_IO naming data.mat (%s)",
          err.msg);
    dpd_doctor_report_free(&r);
    check_write(d, "data.mat", "MATLAB 5.0 MAT-file, but then nothing");
    s = dpd_doctor_run(d, &r, &err);
    CHECK(s == DPD_E_FORMAT && strstr(err.msg, "data.mat"), "a truncated .mat: DPD_E_FORMAT naming it (%s)", err.msg);
    dpd_doctor_report_free(&r);
    check_write(d, "spec.json", "{\"input_signal_fs\": -1, \"bw_main_ch\": null, \"n_sub_ch\": 1e300, \"nperseg\": 2.5}");
    r = run("hostile values", d);
    const dpd_finding *f = find(&r, "metadata_invalid");
    CHECK(f && f->blocking && strstr(f->message, "input_signal_fs") && strstr(f->message, "nperseg"),
          "hostile values: metadata_invalid names them");
    dpd_doctor_report_free(&r);
    s = dpd_doctor_run("/nonexistent/dataset", &r, &err);
    CHECK(s == DPD_E_IO && strstr(err.msg, "/nonexistent/dataset"), "a missing directory: DPD_E_IO naming it");
    dpd_doctor_report_free(&r);
}

/* The bundled OpenDPD datasets pass or are flagged with the reason. */
static void test_opendpd(void) {
    static const char *const names[] = {"DPA_200MHz", "DPA_100MHz", "APA_200MHz", "DPA_160MHz"};
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        char rel[64];
        snprintf(rel, sizeof rel, "data/opendpd/%s/spec.json", names[k]);
        const char *spec = check_shared(rel);
        if (!spec) {
            check_skip(names[k], "../shared/data/opendpd absent");
            continue;
        }
        char dir[4096];
        snprintf(dir, sizeof dir, "%.*s", (int)(strlen(spec) - strlen("/spec.json")), spec);
        double t = now();
        dpd_doctor_report r = run(names[k], dir);
        printf("doctor on %s: %.1f ms:", names[k], 1e3 * (now() - t));
        for (int i = 0; i < r.nfindings; i++)
            printf(" %s(%s)", r.findings[i].code, dpd_severity_str(r.findings[i].severity));
        printf("\n");
        int wide = !strcmp(names[k], "DPA_100MHz");
        const dpd_finding *f = find(&r, "bandwidth_metadata_mismatch");
        CHECK(!r.evaluation_blocked, "%s: not blocked", names[k]);
        CHECK(wide ? f && evnum(f, "obw_ratio") > 1.3 : !f, "%s: %s", names[k],
              wide ? "flagged for its bandwidth (the signal fills more than 100 MHz)" : "bandwidth as declared");
        CHECK(fabs(r.delay) < 0.5 && !find(&r, "possible_output_clipping") && !find(&r, "output_outliers"),
              "%s: aligned, no clipping, no outliers", names[k]);
        CHECK(strcmp(names[k], "DPA_160MHz") || (find(&r, "split_missing") && r.n[DPD_TRAIN] == 0),
              "DPA_160MHz: its absent train split is named");
        static const char *const dpd_checks[] = {"split_delay_mismatch", "split_gain_mismatch", "split_uncorrelated",
                                                 "split_silent", "bandwidth_exceeds_channel", "output_is_input",
                                                 "iq_imbalance", "columns_by_position"};
        for (size_t i = 0; i < sizeof dpd_checks / sizeof *dpd_checks; i++) /* dpd's checks: none on a real capture */
            CHECK(!find(&r, dpd_checks[i]), "%s: no %s", names[k], dpd_checks[i]);
        dpd_doctor_report_free(&r);
    }
}

int main(void) {
    snprintf(root, sizeof root, "%s", check_tmpdir());
    build_clean();
    test_clean();
    test_delay();
    test_gain();
    test_uncorrelated();
    test_split_consistency();
    test_copy();
    test_by_position();
    test_split_slip();
    test_clipping();
    test_spikes();
    test_input_spike();
    test_nan();
    test_huge();
    test_silent();
    test_metadata();
    test_bandwidth();
    test_dpd_checks();
    test_single_csv();
    test_mat();
    test_fix();
    test_malformed();
    test_opendpd();
    cap_free(&clean);
    return check_done("doctor");
}
