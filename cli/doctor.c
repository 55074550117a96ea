/* doctor: `dpd doctor DATA_DIR [--json] [--fix-delay] [--fix-gain] [--out DIR]` — the dataset
 * doctor's report (dpd_doctor_run) as a table or one JSON object, a corrected copy
 * (dpd_doctor_fix), and the gate train-pa and train-dpd pass before training (cli_doctor_gate).
 * Exit codes: 0 no error-level finding, 1 an error-level finding or a failure, 2 a usage error. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"

static const char *const usage =
    "dpd doctor DATA_DIR [--json] [--fix-delay] [--fix-gain] [--out DIR]\n\n"
    "Checks a dataset (OpenDPD's dataset-doctor-v1, plus dpd's own checks; docs/doctor.md): lengths,\n"
    "NaN/Inf, silence, outliers, clipping, delay, gain and phase, amplitude, metadata, occupied\n"
    "bandwidth, DC offset, stuck samples, split lengths against nperseg, each split against the\n"
    "train split, a copied output, I/Q imbalance and a header without I and Q columns (the whole\n"
    "list: docs/doctor.md). Each finding has a\n"
    "severity (error, warning, info), its measured value and a one-line fix. --fix-delay and/or\n"
    "--fix-gain write a corrected copy into --out DIR (a new or empty directory; never in place).\n"
    "Exit status: 0 when no finding is an error, 1 when one is (or the data cannot be read), 2 for\n"
    "a usage error.";

/* s as a JSON string; bytes that are not UTF-8 (a path may hold any) become '?'. */
static json_t *jstr(const char *s) {
    json_t *j = json_string(s);
    if (j) return j;
    char buf[4200];
    size_t i = 0;
    for (; s[i] && i + 1 < sizeof buf; i++) buf[i] = (unsigned char)s[i] < 0x80 ? s[i] : '?';
    buf[i] = 0;
    return json_string(buf);
}

/* A measured number: an integer when it is a whole one (counts, indices), else a real; null when not finite. */
static json_t *jnum(double v) { return v == floor(v) && fabs(v) < 9e15 ? json_integer((json_int_t)v) : cli_jnum(v); }

static json_t *evidence_json(const dpd_finding *f) {
    json_t *o = json_object();
    for (int i = 0; o && i < f->nevidence; i++) {
        const dpd_evidence *e = &f->evidence[i];
        json_t *v = e->kind == 'n' ? jnum(e->value) : e->kind == 's' ? jstr(e->text) : json_array();
        for (int k = 0; v && e->kind == 'l' && k < e->nlist; k++)
            json_array_append_new(v, json_integer((json_int_t)e->list[k]));
        if (!v || json_object_set_new(o, e->key, v)) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

static json_t *finding_json(const dpd_finding *f) {
    return json_pack("{s:s, s:s, s:b, s:o?, s:o?, s:o?, s:o?, s:s?, s:o?, s:o}", "code", f->code, "severity",
                     dpd_severity_str(f->severity), "blocking", f->blocking, "title", jstr(f->title), "message",
                     jstr(f->message), "value", jstr(f->value), "evidence", evidence_json(f), "suggestion",
                     f->suggestion[0] ? f->suggestion : NULL, "fix", f->fix[0] ? jstr(f->fix) : NULL, "confidence",
                     cli_jnum(f->confidence));
}

static double gain_db(double re, double im) { return 20 * log10(hypot(re, im)); }
static double phase_deg(double re, double im) { return atan2(im, re) * 180 / M_PI; }

/* The report as the one JSON object of --json (docs/doctor.md); fixed/out: the corrected copy, or NULL. */
static json_t *report_json(const dpd_doctor_report *r, const dpd_doctor_fixed *fixed, const char *out) {
    json_t *files = json_array(), *findings = json_array();
    for (int i = 0; files && i < r->nfiles; i++)
        json_array_append_new(files, json_pack("{s:o, s:I, s:s}", "name", jstr(r->files[i].name), "bytes",
                                               (json_int_t)r->files[i].bytes, "sha256", r->files[i].sha256));
    for (int i = 0; findings && i < r->nfindings; i++) json_array_append_new(findings, finding_json(&r->findings[i]));
    json_t *est = json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}", "delay_samples", jnum(r->delay), "delay_confidence",
                            jnum(r->delay_confidence), "gain_db", jnum(gain_db(r->gain_re, r->gain_im)),
                            "phase_deg", jnum(phase_deg(r->gain_re, r->gain_im)), "gain_confidence",
                            jnum(r->gain_confidence), "obw_hz", jnum(r->obw));
    json_t *j = json_pack("{s:s, s:s, s:o, s:s, s:s?, s:o, s:{s:I, s:I, s:I, s:I}, s:b, s:o, s:o}", "doctor_version",
                          r->version, "id", r->id, "dataset", jstr(r->dataset), "layout", r->layout, "raw_sha256",
                          r->raw_sha256[0] ? r->raw_sha256 : NULL, "files", files, "samples", "train",
                          (json_int_t)r->n[DPD_TRAIN], "val", (json_int_t)r->n[DPD_VAL], "test", (json_int_t)r->n[DPD_TEST],
                          "total", (json_int_t)r->n_total, "evaluation_blocked", r->evaluation_blocked, "estimates", est,
                          "findings", findings);
    if (j && fixed &&
        json_object_set_new(j, "fixed", json_pack("{s:o, s:I, s:o, s:o, s:[I, I, I]}", "out", jstr(out), "shift",
                                                  (json_int_t)fixed->shift, "gain_db",
                                                  jnum(gain_db(fixed->gain_re, fixed->gain_im)), "phase_deg",
                                                  jnum(phase_deg(fixed->gain_re, fixed->gain_im)), "rows",
                                                  (json_int_t)fixed->rows[0], (json_int_t)fixed->rows[1],
                                                  (json_int_t)fixed->rows[2]))) {
        json_decref(j);
        j = NULL;
    }
    return j;
}

/* The characters of s on a terminal (UTF-8: the bytes that start a character). */
static int columns(const char *s) {
    int n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* s and the spaces that fill it to w columns, then one more. */
static void cell(const char *s, int w) { printf("%s%*s ", s, w > columns(s) ? w - columns(s) : 0, ""); }

/* The report as a table: severity, code, value, fix, each column as wide as its longest entry (up
 * to 32 and 40 characters: a longer one runs into the next column on its own row); errors and
 * warnings followed by their message. */
static void report_text(const dpd_doctor_report *r) {
    int count[3] = {0}, wc = columns("code"), wv = columns("value");
    printf("dataset %s (%s): train %zu, val %zu, test %zu samples\n", r->dataset, r->layout, r->n[DPD_TRAIN],
           r->n[DPD_VAL], r->n[DPD_TEST]);
    printf("report %s (%s), raw sha256 %s\n\n", r->id, r->version, r->raw_sha256[0] ? r->raw_sha256 : "(no data files)");
    for (int i = 0; i < r->nfindings; i++) {
        int c = columns(r->findings[i].code), v = columns(r->findings[i].value);
        wc = c > wc ? c : wc, wv = v > wv ? v : wv;
    }
    wc = wc < 32 ? wc : 32, wv = wv < 40 ? wv : 40;
    cell("severity", 8), cell("code", wc), cell("value", wv), printf("fix\n");
    for (int i = 0; i < r->nfindings; i++) {
        const dpd_finding *f = &r->findings[i];
        count[f->severity]++;
        cell(dpd_severity_str(f->severity), 8), cell(f->code, wc), cell(f->value, wv);
        printf("%s\n", f->fix[0] ? f->fix : "-");
        if (f->severity != DPD_SEV_INFO) printf("%-8s %s\n", "", f->message);
    }
    printf("\n%d error%s, %d warning%s, %d info; evaluation blocked: %s\n", count[0], count[0] == 1 ? "" : "s", count[1],
           count[1] == 1 ? "" : "s", count[2], r->evaluation_blocked ? "yes" : "no");
}

int cli_doctor_telling(const dpd_finding *f) {
    /* a gain offset is what a PA has: dpd's targets are g x, so it changes no figure (dpd doctor
     * still reports it, as the protocol says) */
    return (f->severity == DPD_SEV_WARNING || f->severity == DPD_SEV_ERROR) && strcmp(f->code, "linear_gain_phase");
}

/* The report's errors and warnings on stderr, in one line of titles and values (a wrongly declared
 * bandwidth makes every ACLR meaningless, and a run's table would not say so); an error is marked
 * so (where nothing gated on it: fit-ls, eval, plot); dpd doctor tells the rest. */
static void warnings(const dpd_doctor_report *r, const char *data) {
    char line[2048];
    size_t at = 0;
    for (int i = 0; i < r->nfindings && at < sizeof line; i++) {
        const dpd_finding *f = &r->findings[i];
        if (cli_doctor_telling(f) && strcmp(f->code, "metadata_suspicious") && /* the loader's own warnings say these */
            strcmp(f->code, "columns_by_position"))
            at += (size_t)snprintf(line + at, sizeof line - at, "%s%s%s (%s)", at ? "; " : "",
                                   f->severity == DPD_SEV_ERROR ? "error: " : "", f->title, f->value);
    }
    if (at) fprintf(stderr, "dpd: warning: the dataset doctor on %s: %s ('dpd doctor %s' gives the whole report and the fixes)\n",
                    data, line, data);
}

int cli_doctor_gate(const char *data) {
    dpd_doctor_report r;
    dpd_error err = {0};
    if (dpd_doctor_run(data, &r, &err)) {
        dpd_doctor_report_free(&r);
        fprintf(stderr, "dpd: the dataset doctor cannot read %s: %s\n", data, err.msg);
        return 1;
    }
    char why[4096];
    int n = dpd_doctor_errors(&r, why, sizeof why);
    if (n) fprintf(stderr, "dpd: the dataset doctor refuses %s: %s\ndpd: 'dpd doctor %s' prints the whole report; "
                           "--no-doctor trains anyway (except on what the loader refuses too: NaN, Inf, unreadable files)\n", data, why, data);
    else warnings(&r, data);
    dpd_doctor_report_free(&r);
    return n ? 1 : 0;
}

void cli_doctor_warn(const char *data, int whole) {
    dpd_doctor_report r;
    dpd_error err = {0};
    if (!dpd_doctor_run(data, &r, &err)) warnings(&r, data);
    else if (!whole) /* it reads every split, the command only what it needs: a broken file elsewhere is still told */
        fprintf(stderr, "dpd: warning: the dataset doctor cannot read %s, so none of its checks ran: %s\n", data, err.msg);
    dpd_doctor_report_free(&r);
}

/* Moves DATA_DIR, the one argument that is neither an option nor --out's value, out of argv
 * (compacting it; *argc shrinks). 0, or 2 after saying why (two of them). */
static int take_dir(int *argc, char **argv, const char **dir) {
    int m = 0;
    *dir = NULL;
    for (int i = 0; i < *argc; i++) {
        int value = i > 0 && !strcmp(argv[i - 1], "--out"); /* "--out DIR": DIR is the option's */
        if (!strncmp(argv[i], "-", 1) || value) {
            argv[m++] = argv[i];
        } else if (!*dir) {
            *dir = argv[i];
        } else {
            fprintf(stderr, "dpd: doctor takes one DATA_DIR (got '%s' and '%s')\n", *dir, argv[i]);
            return 2;
        }
    }
    *argc = m;
    return 0;
}

int cmd_doctor(int argc, char **argv) {
    char out[4096] = "";
    int json = 0, fix_delay = 0, fix_gain = 0;
    opt o[] = {
        {"json", OPT_FLAG, &json, 0, "print one JSON object (docs/doctor.md)", 0},
        {"fix-delay", OPT_FLAG, &fix_delay, 0, "a copy with the output shifted by the rounded delay (needs --out)", 0},
        {"fix-gain", OPT_FLAG, &fix_gain, 0, "a copy with the output divided by the fitted complex gain (needs --out)", 0},
        {"out", OPT_STR, out, sizeof out, "the corrected copy's directory: new or empty, never DATA_DIR", 0},
    };
    const char *dir;
    int r = take_dir(&argc, argv, &dir);
    if (!r) r = args_parse(argc, argv, o, sizeof o / sizeof *o, usage);
    if (r) return r == 1 ? 0 : 2;
    if (!dir || ((fix_delay || fix_gain) != (out[0] != 0))) {
        fprintf(stderr, "dpd: doctor needs DATA_DIR, and --out DIR exactly when --fix-delay or --fix-gain is given\n");
        return 2;
    }
    if (out[0] && cli_output_dir("out", out, dir)) return 2; /* the copy beside the dataset, never in one */
    dpd_doctor_report rep;
    dpd_doctor_fixed fixed;
    dpd_error err = {0};
    unsigned fixes = (fix_delay ? DPD_FIX_DELAY : 0) | (fix_gain ? DPD_FIX_GAIN : 0);
    dpd_status s = fixes ? dpd_doctor_fix(dir, out, fixes, &rep, &fixed, &err) : dpd_doctor_run(dir, &rep, &err);
    int rc = 0;
    if (s && !rep.nfindings) { /* nothing examined: the data could not be read, or --out was refused */
        rc = cli_fail(&err);
    } else {
        if (json) rc = cli_json_print(report_json(&rep, s ? NULL : fixes ? &fixed : NULL, out));
        else report_text(&rep);
        if (s) fprintf(stderr, "dpd: %s\n", err.msg);
        else if (fixes && !json)
        {
            char what[160] = "", rows[96];
            if (fixes & DPD_FIX_DELAY) snprintf(what, sizeof what, "output shifted by %ld samples", fixed.shift);
            if (fixes & DPD_FIX_GAIN)
                snprintf(what + strlen(what), sizeof what - strlen(what), "%sdivided by %.3f dB %+.2f deg",
                         what[0] ? ", " : "output ", gain_db(fixed.gain_re, fixed.gain_im), phase_deg(fixed.gain_re, fixed.gain_im));
            if (fixed.rows[1] || fixed.rows[2]) /* a split capture's rows; a single file's are its one count */
                snprintf(rows, sizeof rows, "rows: train %zu, val %zu, test %zu", fixed.rows[0], fixed.rows[1], fixed.rows[2]);
            else
                snprintf(rows, sizeof rows, "rows %zu", fixed.rows[0]);
            printf("wrote %s: %s; %s\n", out, what, rows);
        }
        if (!rc) rc = dpd_doctor_errors(&rep, NULL, 0) || s ? 1 : 0;
    }
    dpd_doctor_report_free(&rep);
    return rc;
}
