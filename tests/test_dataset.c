/* test_dataset: OpenDPD dataset reading — the good layouts (split_csv with exponent notation
 * and CRLF, single_csv split by ratios, the DPA_100MHz bandwidth aliases) and every bad input
 * the issue names, each refused with DPD_E_FORMAT/DPD_E_IO and a message naming the file and
 * the line or field. */
#include <fcntl.h>
#include <locale.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "dataset.h"
#include "dpd/dpd.h"

static const char *SPEC =
    "{\"dataset_format\": \"split_csv\", \"input_signal_fs\": 800e6, \"bw_main_ch\": 200e6,"
    " \"bw_sub_ch\": 20e6, \"n_sub_ch\": 10, \"nperseg\": 4}\n";
static const char *GOOD = "I,Q\n0.5,-0.25\n6.92e-05,1E-3\n-1,2\n3,4\n5,6\n";

/* A dataset dir with every split GOOD, then `file` replaced by `text` (NULL: removed). */
static const char *make(const char *file, const char *text) {
    const char *d = check_tmpdir();
    static const char *names[6] = {"train_input.csv", "train_output.csv", "val_input.csv",
                                   "val_output.csv", "test_input.csv", "test_output.csv"};
    check_write(d, "spec.json", SPEC);
    for (int i = 0; i < 6; i++) check_write(d, names[i], GOOD);
    if (file) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", d, file);
        if (text) check_write(d, file, text);
        else remove(p);
    }
    return d;
}

/* Loading must fail with status s and a message containing every one of the needles. */
static void refuse(const char *what, const char *file, const char *text, dpd_status s,
                   const char *n1, const char *n2) {
    dpd_dataset ds;
    dpd_error err = {0};
    const char *d = make(file, text);
    dpd_status got = dpd_dataset_load(d, 7, 0, &ds, &err);
    CHECK(got == s, "%s: status %s, want %s (%s)", what, dpd_status_str(got), dpd_status_str(s), err.msg);
    CHECK(strstr(err.msg, n1) && (!n2 || strstr(err.msg, n2)), "%s: message '%s' lacks '%s'/'%s'",
          what, err.msg, n1, n2 ? n2 : "");
    CHECK(ds.split[0].x == NULL && ds.split[1].n == 0, "%s: dataset left empty", what);
    dpd_dataset_free(&ds);
}

static void good(void) {
    dpd_dataset ds;
    dpd_error err;
    const char *d = make("val_output.csv", "I,Q\r\n1,2\r\n3,4\r\n5,6\r\n7,8\r\n9,1e1\r\n");
    CHECK(dpd_dataset_load(d, 7, 0, &ds, &err) == DPD_OK, "good dataset: %s", err.msg);
    CHECK(ds.split[0].n == 5 && ds.split[0].x[2] == 6.92e-05 && ds.split[0].x[3] == 1e-3,
          "exponent notation parsed exactly");
    CHECK(ds.split[1].y[9] == 10, "CRLF line ends");
    CHECK(ds.spec.fs == 800e6 && ds.spec.bw_main == 200e6 && ds.spec.n_sub == 10 && ds.spec.nperseg == 4, "spec");
    CHECK(fabs(dpd_dataset_gain(&ds) - 1.0) < 1e-12, "gain of identical in/out is 1");
    dpd_dataset_free(&ds);

    d = check_tmpdir(); /* DPA_100MHz's field names */
    check_write(d, "spec.json",
                "{\"input_signal_fs\": 800e6, \"input_signal_bw\": 100e6, \"input_signal_sub_ch_bw\": 20e6,"
                " \"n_sub_ch\": 5, \"nperseg\": 4}");
    check_write(d, "test_input.csv", GOOD);
    check_write(d, "test_output.csv", GOOD);
    CHECK(dpd_dataset_load(d, 4, 1, &ds, &err) == DPD_OK, "aliases: %s", err.msg);
    CHECK(ds.spec.bw_main == 100e6 && ds.spec.bw_sub == 20e6 && strstr(ds.warning, "input_signal_bw") &&
              strstr(ds.warning, "'input_signal_sub_ch_bw' read as 'bw_sub_ch'"),
          "aliases read, with a warning naming each: '%s'", ds.warning);
    CHECK(ds.split[0].n == 0 && ds.split[2].n == 5, "absent optional train split left empty");
    dpd_dataset_free(&ds);
    check_write(d, "spec.json", /* a field and its alias: the same value is taken, two values refused */
                "{\"input_signal_fs\": 800e6, \"bw_main_ch\": 100e6, \"input_signal_bw\": 100000000,"
                " \"n_sub_ch\": 5, \"nperseg\": 4}");
    CHECK(dpd_dataset_load(d, 4, 1, &ds, &err) == DPD_OK && ds.spec.bw_main == 100e6 && !ds.warning[0],
          "a field and its alias with one value: read, no warning ('%s')", err.msg);
    dpd_dataset_free(&ds);
    check_write(d, "spec.json",
                "{\"input_signal_fs\": 800e6, \"bw_main_ch\": 100e6, \"bw_sub_ch\": 20e6, \"input_signal_sub_ch_bw\": 10e6,"
                " \"n_sub_ch\": 5, \"nperseg\": 4}");
    CHECK(dpd_dataset_load(d, 4, 1, &ds, &err) == DPD_E_FORMAT && strstr(err.msg, "spec.json") &&
              strstr(err.msg, "'bw_sub_ch' and 'input_signal_sub_ch_bw' (its alias) are both given and differ"),
          "a field and its alias that differ: refused, naming both: '%s'", err.msg);

    d = check_tmpdir(); /* single_csv: floor(n r) rows each, in time order */
    check_write(d, "spec.json",
                "{\"dataset_format\": \"single_csv\", \"csv_filename\": \"cap.csv\", \"split_ratios\":"
                " {\"train\": 0.6, \"val\": 0.2, \"test\": 0.2}, \"split_guard\": 0, \"input_signal_fs\": 800e6,"
                " \"bw_main_ch\": 200e6, \"n_sub_ch\": 1, \"nperseg\": 2}");
    char text[4096] = "I_in,Q_in,extra,I_out,Q_out\n";
    for (int i = 0; i < 11; i++) sprintf(text + strlen(text), "%d,0,9,%d,1\n", i, 2 * i);
    check_write(d, "cap.csv", text);
    CHECK(dpd_dataset_load(d, 7, 0, &ds, &err) == DPD_OK, "single_csv: %s", err.msg);
    CHECK(ds.split[0].n == 6 && ds.split[1].n == 2 && ds.split[2].n == 3, "single_csv split 6/2/3 of 11: %zu/%zu/%zu",
          ds.split[0].n, ds.split[1].n, ds.split[2].n);
    CHECK(ds.split[1].x[0] == 6 && ds.split[2].y[0] == 16 && ds.split[2].y[1] == 1, "single_csv columns by name");
    CHECK(!strcmp(ds.protocol, "contiguous-v1") && ds.begin[2] == 8, "single_csv: protocol %s, test from %zu",
          ds.protocol, ds.begin[2]);
    dpd_dataset_free(&ds);

    d = check_tmpdir(); /* single_csv with the default 256-sample guard: contiguous-v1's worked example */
    check_write(d, "spec.json",
                "{\"dataset_format\": \"single_csv\", \"input_signal_fs\": 800e6, \"bw_main_ch\": 200e6,"
                " \"n_sub_ch\": 1, \"nperseg\": 2}");
    {
        char path[4200];
        snprintf(path, sizeof path, "%s/data.csv", d);
        FILE *f = fopen(path, "w");
        fprintf(f, "I_in,Q_in,I_out,Q_out\n");
        for (int i = 0; i < 10000; i++) fprintf(f, "%d,0,%d,1\n", i, 2 * i);
        fclose(f);
    }
    CHECK(dpd_dataset_load(d, 7, 0, &ds, &err) == DPD_OK, "guarded single_csv: %s", err.msg);
    CHECK(ds.spec.guard == 256 && ds.split[0].n == 5692 && ds.begin[1] == 5948 && ds.split[1].n == 1897 &&
              ds.begin[2] == 8101 && ds.split[2].n == 1899 && ds.split[1].x[0] == 5948 && ds.split[2].y[0] == 16202,
          "contiguous-v1 of 10000 rows: %zu/%zu/%zu from %zu/%zu/%zu", ds.split[0].n, ds.split[1].n, ds.split[2].n,
          ds.begin[0], ds.begin[1], ds.begin[2]);
    dpd_dataset_free(&ds);
    check_write(d, "spec.json",
                "{\"dataset_format\": \"single_csv\", \"input_signal_fs\": 800e6, \"bw_main_ch\": 200e6,"
                " \"n_sub_ch\": 1, \"nperseg\": 2, \"split_guard\": 4999}");
    CHECK(dpd_dataset_load(d, 7, 0, &ds, &err) == DPD_E_FORMAT && strstr(err.msg, "data.csv") && strstr(err.msg, "guard"),
          "a guard leaving < 3 samples is refused naming the file: %s", err.msg);
    check_write(d, "spec.json",
                "{\"dataset_format\": \"single_csv\", \"input_signal_fs\": 800e6, \"bw_main_ch\": 200e6,"
                " \"n_sub_ch\": 1, \"nperseg\": 2, \"split_guard\": -1}");
    CHECK(dpd_dataset_load(d, 7, 0, &ds, &err) == DPD_E_FORMAT && strstr(err.msg, "split_guard"),
          "a negative guard is refused: %s", err.msg);
    check_write(d, "spec.json",
                "{\"dataset_format\": \"single_csv\", \"input_signal_fs\": 800e6, \"bw_main_ch\": 200e6,"
                " \"n_sub_ch\": 1, \"nperseg\": 2, \"split_ratios\": {\"train\": 0.7, \"val\": 0.2, \"test\": 0.2}}");
    CHECK(dpd_dataset_load(d, 7, 0, &ds, &err) == DPD_E_FORMAT && strstr(err.msg, "spec.json: field 'split_ratios' sums to 1.1") &&
              !strstr(err.msg, "data.csv"),
          "single_csv ratios that do not sum to 1 are refused naming spec.json, not the capture: %s", err.msg);
}

/* A mat dataset: one paired capture in a .mat (v5 and v7.3), cut by contiguous-v1 as single_csv is;
 * the sample rate from the file or spec.json (both: they must agree), the variables by name. */
static void mat_datasets(void) {
    enum { N = 10000 };
    double *x = malloc(4 * N * sizeof *x), *y = x + 2 * N;
    for (int i = 0; i < N; i++) x[2 * i] = i, x[2 * i + 1] = -0.5 * i, y[2 * i] = 2 * i, y[2 * i + 1] = 1.0 / (i + 1);
    dpd_dataset ds;
    dpd_error err = {0};
    for (int v73 = 0; v73 < 2; v73++) {
        const char *d = check_tmpdir();
        char path[4200];
        snprintf(path, sizeof path, "%s/data.mat", d);
        CHECK(!dpd_mat_write_pair(path, x, y, N, 800e6, NULL, NULL, v73, &err), "mat v%s written: %s", v73 ? "7.3" : "5",
              err.msg);
        check_write(d, "spec.json", "{\"dataset_format\": \"mat\", \"bw_main_ch\": 200e6, \"n_sub_ch\": 1, \"nperseg\": 2}");
        CHECK(dpd_dataset_load(d, 7, 0, &ds, &err) == DPD_OK, "mat v%s dataset: %s", v73 ? "7.3" : "5", err.msg);
        int same = 1;
        for (int k = 0; k < 3; k++)
            same &= !memcmp(ds.split[k].x, x + 2 * ds.begin[k], ds.split[k].n * 2 * sizeof *x) &&
                    !memcmp(ds.split[k].y, y + 2 * ds.begin[k], ds.split[k].n * 2 * sizeof *y);
        CHECK(!strcmp(ds.protocol, "contiguous-v1") && ds.split[0].n == 5692 && ds.begin[1] == 5948 &&
                  ds.split[1].n == 1897 && ds.begin[2] == 8101 && ds.split[2].n == 1899 && same,
              "mat v%s: contiguous-v1's cut, every sample bit for bit (%zu/%zu/%zu)", v73 ? "7.3" : "5", ds.split[0].n,
              ds.split[1].n, ds.split[2].n);
        CHECK(ds.spec.fs == 800e6, "mat v%s: fs from the file (%g)", v73 ? "7.3" : "5", ds.spec.fs);
        dpd_dataset_free(&ds);
    }
    { /* a .mat's own fs is held to spec.json's bound */
        const char *d = check_tmpdir();
        char path[4200];
        snprintf(path, sizeof path, "%s/data.mat", d);
        CHECK(!dpd_mat_write_pair(path, x, y, N, 1e300, NULL, NULL, 0, &err), "mat with fs 1e300 written: %s", err.msg);
        check_write(d, "spec.json", "{\"dataset_format\": \"mat\", \"bw_main_ch\": 200e6, \"n_sub_ch\": 1, \"nperseg\": 2}");
        err.msg[0] = 0;
        CHECK(dpd_dataset_load(d, 7, 0, &ds, &err) == DPD_E_FORMAT && strstr(err.msg, "data.mat: fs is 1e+300 Hz, above"),
              "mat with fs 1e300: refused, naming the file (%s)", err.msg);
        dpd_dataset_free(&ds);
    }
    const char *d = check_tmpdir();
    char path[4200];
    snprintf(path, sizeof path, "%s/pa.mat", d);
    CHECK(!dpd_mat_write_pair(path, x, y, N, 0, "pa_in", "pa_out", 0, &err), "mat without fs written: %s", err.msg);
    static const struct {
        const char *spec, *want, *what;
        dpd_status s;
    } cases[] = {
        {"\"mat_filename\": \"pa.mat\", \"mat_input\": \"pa_in\", \"mat_output\": \"pa_out\", \"input_signal_fs\": 1e8",
         NULL, "variables by name, fs from spec.json", DPD_OK},
        {"\"mat_filename\": \"pa.mat\", \"mat_input\": \"pa_in\", \"mat_output\": \"pa_out\"", "input_signal_fs",
         "no sample rate anywhere", DPD_E_FORMAT},
        {"\"mat_filename\": \"pa.mat\", \"input_signal_fs\": 1e8", "pa.mat", "the default variables missing",
         DPD_E_FORMAT},
        {"\"mat_filename\": \"other.mat\", \"input_signal_fs\": 1e8", "other.mat", "a missing file", DPD_E_IO},
        {"\"mat_filename\": \"../pa.mat\", \"input_signal_fs\": 1e8", "mat_filename", "a path", DPD_E_FORMAT},
        {"\"mat_filename\": \"pa.mat\", \"mat_input\": 7, \"input_signal_fs\": 1e8", "mat_input", "a number as name",
         DPD_E_FORMAT},
        {"\"mat_filename\": \"pa.mat\", \"mat_input\": \"pa_in\", \"mat_output\": \"pa_in\", \"input_signal_fs\": 1e8,"
         " \"split_ratios\": {\"train\": 0.5, \"val\": 0.2, \"test\": 0.2}", "sum", "ratios summing to 0.9", DPD_E_FORMAT},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        char spec[1024];
        snprintf(spec, sizeof spec, "{\"dataset_format\": \"mat\", \"bw_main_ch\": 20e6, \"n_sub_ch\": 1, \"nperseg\": 2, %s}",
                 cases[k].spec);
        check_write(d, "spec.json", spec);
        err.msg[0] = 0;
        dpd_status s = dpd_dataset_load(d, 7, 0, &ds, &err);
        CHECK(s == cases[k].s && (!cases[k].want || strstr(err.msg, cases[k].want)), "mat, %s: status %d (%s)",
              cases[k].what, s, err.msg);
        if (!s) CHECK(ds.spec.fs == 1e8 && ds.split[2].y[0] == y[2 * ds.begin[2]], "mat, %s: loaded", cases[k].what);
        dpd_dataset_free(&ds);
    }
    snprintf(path, sizeof path, "%s/data.mat", d);
    CHECK(!dpd_mat_write_pair(path, x, y, N, 800e6, NULL, NULL, 0, &err), "mat with fs written: %s", err.msg);
    check_write(d, "spec.json", "{\"dataset_format\": \"mat\", \"input_signal_fs\": 400e6, \"bw_main_ch\": 20e6, "
                                "\"n_sub_ch\": 1, \"nperseg\": 2}");
    CHECK(dpd_dataset_load(d, 7, 0, &ds, &err) == DPD_E_FORMAT && strstr(err.msg, "400000000") &&
              strstr(err.msg, "800000000") && strstr(err.msg, "data.mat"),
          "mat: spec.json's fs and the file's disagree, both named: %s", err.msg);
    check_write(d, "spec.json", "{\"dataset_format\": \"mat\", \"bw_main_ch\": 900e6, \"n_sub_ch\": 1, \"nperseg\": 2}");
    CHECK(dpd_dataset_load(d, 7, 0, &ds, &err) == DPD_E_FORMAT && strstr(err.msg, "bw_main_ch"),
          "mat: bw_main_ch above the file's sample rate is refused: %s", err.msg);
    CHECK(dpd_mat_write_pair(path, x, y, N, 0, "fs", NULL, 0, &err) == DPD_E_INVAL && !strcmp(err.field, "var") &&
              dpd_mat_write_pair(path, x, y, N, 0, "a", "a", 0, &err) == DPD_E_INVAL &&
              dpd_mat_write_pair(path, x, y, N, 0, "2x", NULL, 0, &err) == DPD_E_INVAL &&
              dpd_mat_write_pair(path, x, y, 0, 0, NULL, NULL, 0, &err) == DPD_E_INVAL,
          "dpd_mat_write_pair refuses fs, a name twice, a bad name and no samples");
    free(x);
}

/* Loading dataset directory d (need train/val/test) must fail with status s naming n1 and n2. */
static void refuse_dir(const char *what, const char *d, dpd_status s, const char *n1, const char *n2) {
    dpd_dataset ds;
    dpd_error err = {0};
    dpd_status got = dpd_dataset_load(d, 7, 0, &ds, &err);
    CHECK(got == s, "%s: status %s, want %s (%s)", what, dpd_status_str(got), dpd_status_str(s), err.msg);
    CHECK(strstr(err.msg, n1) && (!n2 || strstr(err.msg, n2)), "%s: message '%s' lacks '%s'/'%s'", what, err.msg, n1,
          n2 ? n2 : "");
    if (!got) dpd_dataset_free(&ds);
}

/* Issue 9 item 4: files that are not regular, or larger than their kind can be, are refused
 * without being read (a FIFO never blocks: alarm in main). */
static void hostile(void) {
    char p[512];
    const char *d = make(NULL, NULL);
    snprintf(p, sizeof p, "%s/train_input.csv", d);
    remove(p);
    CHECK(mkfifo(p, 0600) == 0, "mkfifo");
    refuse_dir("FIFO as a split", d, DPD_E_IO, "train_input.csv", "FIFO");

    d = make(NULL, NULL);
    snprintf(p, sizeof p, "%s/val_output.csv", d);
    int fd = open(p, O_WRONLY | O_TRUNC);
    CHECK(fd >= 0 && ftruncate(fd, 10ll << 30) == 0, "sparse file");
    close(fd);
    refuse_dir("10 GiB sparse split", d, DPD_E_FORMAT, "val_output.csv: 10737418240 bytes", "limit");

    d = make(NULL, NULL);
    snprintf(p, sizeof p, "%s/spec.json", d);
    fd = open(p, O_WRONLY | O_TRUNC);
    CHECK(fd >= 0 && ftruncate(fd, 2 << 20) == 0, "sparse file");
    close(fd);
    refuse_dir("2 MiB spec.json", d, DPD_E_FORMAT, "spec.json: 2097152 bytes", "limit");

    d = make(NULL, NULL);
    remove(p), snprintf(p, sizeof p, "%s/spec.json", d), remove(p);
    CHECK(symlink("/dev/zero", p) == 0, "symlink");
    refuse_dir("spec.json -> /dev/zero", d, DPD_E_IO, "spec.json", "character device");
    remove(p);
    CHECK(mkdir(p, 0700) == 0, "mkdir");
    refuse_dir("spec.json a directory", d, DPD_E_IO, "spec.json", "directory");

    /* item 10: a huge nperseg is refused naming spec.json and the field, not "out of memory" */
    refuse("nperseg 999999999", "spec.json",
           "{\"input_signal_fs\": 8e8, \"bw_main_ch\": 2e8, \"n_sub_ch\": 1, \"nperseg\": 999999999}",
           DPD_E_FORMAT, "spec.json: field 'nperseg'", "999999999");
    /* one sample a frame makes no spectrum: refused with the range, before any metric fails on it */
    refuse("nperseg 1", "spec.json", "{\"input_signal_fs\": 8e8, \"bw_main_ch\": 2e8, \"n_sub_ch\": 1, \"nperseg\": 1}",
           DPD_E_FORMAT, "spec.json: field 'nperseg' is 1, out of range 2..", "nperseg");
    double iq[4] = {1, 2, 3, 4};
    float *seg = NULL;
    int S = 0;
    dpd_error err = {0};
    dpd_status s = dpd_segments(iq, 2, 999999999, 1.0, &seg, &S, &err);
    CHECK(s == DPD_E_INVAL && seg == NULL && strstr(err.msg, "999999999") && strstr(err.msg, "nperseg"),
          "segments with N = 999999999: %s '%s'", dpd_status_str(s), err.msg);
    free(seg);
}

/* What --data names must be a directory: a path that does not exist and a file (spec.json itself)
 * are refused in the doctor's words before spec.json is looked for inside them. */
static void not_dirs(void) {
    dpd_dataset ds;
    dpd_error err = {0};
    CHECK(dpd_dataset_load("/nonexistent/dpd-data", 7, 0, &ds, &err) == DPD_E_IO &&
              !strcmp(err.msg, "/nonexistent/dpd-data: no such directory"),
          "a missing directory: %s", err.msg);
    const char *d = make(NULL, NULL);
    char p[4200], want[4400];
    snprintf(p, sizeof p, "%s/spec.json", d);
    snprintf(want, sizeof want, "%s: not a directory (give the dataset's directory, which holds spec.json)", p);
    CHECK(dpd_dataset_load(p, 7, 0, &ds, &err) == DPD_E_IO && !strcmp(err.msg, want), "spec.json as the directory: %s",
          err.msg);
    CHECK(ds.split[0].x == NULL && ds.split[0].n == 0, "a refused directory leaves the dataset empty");
}

/* Loads a dataset of the GOOD splits whose spec.json is SPEC's fields plus `extra` (a JSON member
 * list), and returns its warning ("" when none) in w. */
static void spec_warning(const char *extra, char *w, size_t n) {
    char spec[1024];
    snprintf(spec, sizeof spec,
             "{\"dataset_format\": \"split_csv\", \"input_signal_fs\": 800e6, \"bw_main_ch\": 200e6,"
             " \"bw_sub_ch\": 20e6, \"n_sub_ch\": 10, \"nperseg\": 4%s%s}",
             extra[0] ? ", " : "", extra);
    const char *d = make("spec.json", spec);
    dpd_dataset ds;
    dpd_error err = {0};
    w[0] = 0;
    if (dpd_dataset_load(d, 7, 0, &ds, &err)) {
        snprintf(w, n, "load failed: %s", err.msg);
        return;
    }
    snprintf(w, n, "%s", ds.warning);
    dpd_dataset_free(&ds);
}

/* The warning of a dataset whose spec.json is `spec` ("" when none; "load failed: ..." when refused). */
static void warning_of(const char *spec, char *w, size_t n) {
    const char *d = make("spec.json", spec);
    dpd_dataset ds;
    dpd_error err = {0};
    if (dpd_dataset_load(d, 7, 0, &ds, &err)) {
        snprintf(w, n, "load failed: %s", err.msg);
        return;
    }
    snprintf(w, n, "%s", ds.warning);
    dpd_dataset_free(&ds);
}

/* dpd_iq_level: the peak, and the RMS of the samples within 60 dB of it (a burst's gaps left out). */
static void iq_level(void) {
    double iq[16] = {0}, peak, rms;
    iq[0] = 3, iq[1] = 4;        /* |v| 5 */
    iq[2] = 0, iq[3] = -1;       /* |v| 1 */
    iq[4] = 1e-3, iq[5] = 0;     /* |v| 1e-3: below 5e-3, left out */
    dpd_iq_level(iq, 8, &peak, &rms); /* and five silent samples */
    CHECK(peak == 5 && fabs(rms - sqrt(13)) < 1e-15, "peak 5, RMS sqrt((25 + 1) / 2) over the two samples above -60 dB: %g %g",
          peak, rms);
    dpd_iq_level(iq + 6, 5, &peak, &rms);
    CHECK(peak == 0 && rms == 0, "silence: peak and RMS 0 (%g %g)", peak, rms);
}

/* Values that are read but look wrong are said, not refused: a sample rate in MHz, sub-channels
 * wider than the main channel, units that are not a string. */
static void suspect_values(void) {
    char w[1200];
    warning_of("{\"dataset_format\": \"split_csv\", \"input_signal_fs\": 800, \"bw_main_ch\": 200, \"n_sub_ch\": 1, \"nperseg\": 4}", w,
               sizeof w);
    CHECK(strstr(w, "/spec.json: input_signal_fs is 800 Hz, which looks like MHz or GHz (spec.json gives hertz"),
          "a sample rate of 800 (MHz meant): a warning, the dataset loads: '%s'", w);
    CHECK(strstr(w, "/spec.json: bw_main_ch is 200 Hz, which looks like MHz (spec.json gives hertz"),
          "a main channel of 200 (MHz meant): a warning too: '%s'", w);
    warning_of("{\"dataset_format\": \"split_csv\", \"input_signal_fs\": 800e6, \"bw_main_ch\": 200e6, \"bw_sub_ch\": 20, "
               "\"n_sub_ch\": 10, \"nperseg\": 4}",
               w, sizeof w);
    CHECK(strstr(w, "/spec.json: bw_sub_ch is 20 Hz, which looks like MHz"), "a sub-channel of 20 (MHz meant): a warning: '%s'", w);
    warning_of("{\"dataset_format\": \"split_csv\", \"input_signal_fs\": 800e6, \"bw_main_ch\": 200e6, \"bw_sub_ch\": 25e6, "
               "\"n_sub_ch\": 10, \"nperseg\": 4}",
               w, sizeof w);
    CHECK(strstr(w, "n_sub_ch x bw_sub_ch (10 x 2.5e+07 Hz = 2.5e+08 Hz) does not fit in bw_main_ch (2e+08 Hz)"),
          "ten 25 MHz sub-channels in a 200 MHz channel: a warning: '%s'", w);
    warning_of("{\"dataset_format\": \"split_csv\", \"input_signal_fs\": 800e6, \"bw_main_ch\": 200e6, \"bw_sub_ch\": 20e6, "
               "\"n_sub_ch\": 10, \"nperseg\": 4, \"amplitude_units\": 1}",
               w, sizeof w);
    CHECK(strstr(w, "field 'amplitude_units' is not a string") && !strstr(w, "does not fit"),
          "amplitude_units 1: a warning (and ten 20 MHz sub-channels fit in 200 MHz): '%s'", w);
    warning_of("{\"dataset_format\": \"split_csv\", \"input_signal_fs\": 800e6, \"bw_main_ch\": 200e6, \"bw_sub_ch\": 20e6, "
               "\"n_sub_ch\": 10, \"nperseg\": 4, \"amplitude_units\": \"normalized\"}",
               w, sizeof w);
    CHECK(!w[0], "a spec.json in hertz whose sub-channels fit: no warning: '%s'", w);
}

/* An unknown spec.json key is warned about (file and key named, the closest known key suggested
 * when one is close), never refused; the keys OpenDPD's and dpd's own writers put there are not. */
static void unknown_keys(void) {
    char w[600];
    spec_warning("\"nperseg_typo\": 100000", w, sizeof w);
    CHECK(strstr(w, "/spec.json: unknown key 'nperseg_typo' ignored (did you mean 'nperseg'?)"), "a typo: '%s'", w);
    spec_warning("\"npersge\": 5, \"Input_Signal_FS\": 1", w, sizeof w);
    CHECK(strstr(w, "unknown keys ignored: 'npersge' (did you mean 'nperseg'?), 'Input_Signal_FS' (did you mean "
                    "'input_signal_fs'?)"),
          "two typos, each with its suggestion: '%s'", w);
    { /* dpd_nearest: two neighbours swapped are one edit; case aside; nothing close is NULL */
        static const char *const words[] = {"plot", "train-pa", "train-dpd", "hidden", "nperseg"};
        const char *a = dpd_nearest("polt", words, 5), *b = dpd_nearest("trian-pa", words, 5), *c = dpd_nearest("hdiden", words, 5);
        const char *e = dpd_nearest("NPERSEG", words, 5), *f = dpd_nearest("lopt", words, 5), *g = dpd_nearest("xyzzy", words, 5);
        CHECK(a && !strcmp(a, "plot") && b && !strcmp(b, "train-pa") && c && !strcmp(c, "hidden") && e && !strcmp(e, "nperseg") &&
                  !f && !g,
              "dpd_nearest: polt %s, trian-pa %s, hdiden %s, NPERSEG %s, lopt %s, xyzzy %s", a, b, c, e, f, g);
    }
    spec_warning("\"colour\": \"blue\"", w, sizeof w);
    CHECK(strstr(w, "unknown key 'colour' ignored") && !strstr(w, "did you mean"), "nothing close: '%s'", w);
    /* OpenDPD's create_dataset and its MyCustomPA example, dpd synth's generator, the doctor's units */
    spec_warning("\"description\": \"x\", \"origin\": \"synthetic\", \"tutorial\": true, \"split_indices\": "
                 "{\"train_end\": 3, \"val_end\": 4}, \"n_active\": 64, \"modulation\": \"64QAM\", \"generator\": "
                 "{\"tool\": \"dpd synth\"}, \"generator_seed\": 1, \"amplitude_units\": \"normalized\", "
                 "\"split_ratios\": {\"train\": 0.6, \"val\": 0.2, \"test\": 0.2}, \"split_guard\": 0, "
                 "\"csv_filename\": \"data.csv\", \"mat_filename\": \"a.mat\", \"mat_input\": \"x\", \"mat_output\": \"y\"",
                 w, sizeof w);
    CHECK(!w[0], "the documented and metadata keys are not warned about: '%s'", w);
    static const char *const opendpd[] = {"DPA_200MHz", "DPA_100MHz", "DPA_160MHz", "APA_200MHz"};
    for (int i = 0; i < 4; i++) {
        char rel[128];
        snprintf(rel, sizeof rel, "data/opendpd/%s/spec.json", opendpd[i]);
        const char *p = check_shared(rel);
        if (!p) {
            check_skip("dataset opendpd spec keys", "../shared/data/opendpd is absent");
            continue;
        }
        char dir[4200];
        snprintf(dir, sizeof dir, "%.*s", (int)(strlen(p) - strlen("/spec.json")), p);
        dpd_dataset ds;
        dpd_error err = {0};
        CHECK(dpd_dataset_load(dir, 0, 0, &ds, &err) == DPD_OK && !strstr(ds.warning, "unknown key"),
              "%s: no unknown-key warning (%s%s)", opendpd[i], err.msg, ds.warning);
        dpd_dataset_free(&ds);
    }
}

/* dpd_csv_number against strtod_l in the C locale: the same bits and the same verdict on edge
 * cases (signs, dots, exponents, 2^53 and 19 digits, powers of ten past 1e22, subnormals,
 * overflow, words, hex, spaces) and on 60 000 random numbers written every way a CSV has them. */
static void numbers(void) {
    static const char *const edge[] = {
        "0", "-0", "+1", "1.", ".5", "-.5", "00001.5", "1e22", "1e23", "-1e-22", "1e-23", "9007199254740992",
        "9007199254740993", "1234567890123456789", "12345678901234567890", "0.1234567890123456789",
        "0.000000000000000000001", "4.9e-324", "2.2250738585072014e-308", "1.7976931348623157e308", "1e309",
        "123456e-30", "1E-3", "6.92e-05", "inf", "-nan", "0x1p3", "1e", "1e+", "e5", ".", "+.e1", "--1", "1.2.3",
        "1_000", " 3.5 ", "\t-2\t", "", " ", "1e0000007", "1e+000022"};
    locale_t c = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    char buf[64];
    dpd_rng r;
    dpd_rng_seed(&r, 7);
    int bad = 0, n = 0;
    for (size_t i = 0; i < sizeof edge / sizeof *edge + 60000; i++, n++) {
        const char *t = edge[i < sizeof edge / sizeof *edge ? i : 0];
        if (i >= sizeof edge / sizeof *edge) { /* a random value, in one of the writers' styles */
            double v = dpd_rng_normal(&r) * pow(10, (int)(dpd_rng_uniform(&r) * 12) - 6);
            static const char *const fmt[] = {"%.8e", "%.9g", "%.17g", "%.6f", "%.15g", "%.3E", "%.12f"};
            snprintf(buf, sizeof buf, fmt[i % 7], v);
            t = buf;
        }
        char trimmed[64], *end;
        const char *f = t, *e = t + strlen(t);
        while (f < e && (*f == ' ' || *f == '\t')) f++;
        while (e > f && (e[-1] == ' ' || e[-1] == '\t')) e--;
        snprintf(trimmed, sizeof trimmed, "%.*s", (int)(e - f), f);
        double want = strtod_l(trimmed, &end, c), got = -12345;
        int ok = f != e && end == trimmed + (e - f), said = dpd_csv_number(t, t + strlen(t), &got);
        if (said != ok || (ok && memcmp(&got, &want, sizeof got))) {
            if (bad++ < 5) CHECK(0, "'%s': dpd_csv_number says %d (%.17g), strtod_l %d (%.17g)", t, said, got, ok, want);
        }
    }
    CHECK(bad == 0, "%d of %d numbers read otherwise than strtod_l reads them", bad, n);
    freelocale(c);
}

/* dpd_split_fingerprint against SHA-256 digests computed elsewhere (Python's hashlib over
 * struct.pack("<Q4d4d", ...)): the bytes hashed are the documented ones, on any host. */
static void fingerprints(void) {
    double x[4] = {1, 2, 3, -4.5}, y[4] = {0.25, 6, 7, 8};
    dpd_split sp = {2, x, y}, none = {0, NULL, NULL};
    char h[65];
    dpd_split_fingerprint(&sp, h);
    CHECK(!strcmp(h, "032ca86b5acd73018fa00e55767b4b3a29108e3cd876c10c7905e583e831d631"), "fingerprint of 2 samples: %s", h);
    dpd_split_fingerprint(&none, h);
    CHECK(!strcmp(h, "af5570f5a1810b7af78caf4bc70a660f0df51e42baf91d4de5b2328de0e83dfc"), "fingerprint of no samples: %s", h);
    y[3] = nextafter(8, 9); /* one bit of one sample */
    dpd_split_fingerprint(&sp, h);
    CHECK(strcmp(h, "032ca86b5acd73018fa00e55767b4b3a29108e3cd876c10c7905e583e831d631"), "one bit changes the fingerprint");
    CHECK(fabs(dpd_split_gain(&sp) - hypot(7, nextafter(8, 9)) / hypot(3, 4.5)) < 1e-14 && dpd_split_gain(&none) == 0,
          "dpd_split_gain: max|y| / max|x| (%.17g)", dpd_split_gain(&sp));
}

int main(void) {
    alarm(20);
    fingerprints();
    numbers();
    hostile();
    good();
    mat_datasets();
    not_dirs();
    unknown_keys();
    suspect_values();
    iq_level();
    refuse("missing file", "val_output.csv", NULL, DPD_E_IO, "val_output.csv", "cannot open");
    refuse("missing spec", "spec.json", NULL, DPD_E_IO, "spec.json", "missing");
    refuse("non-numeric", "train_input.csv", "I,Q\n1,2\n3,abc\n", DPD_E_FORMAT, "train_input.csv:3", "abc");
    refuse("extra field", "test_input.csv", "I,Q\n1,2\n3,4,5\n", DPD_E_FORMAT, "test_input.csv:3", "extra");
    refuse("missing field", "test_input.csv", "I,Q\n1,2\n3\n", DPD_E_FORMAT, "test_input.csv:3", "missing");
    refuse("empty field", "test_input.csv", "I,Q\n1,\n", DPD_E_FORMAT, "test_input.csv:2", "not a number");
    refuse("NaN", "val_input.csv", "I,Q\n1,2\nnan,4\n", DPD_E_FORMAT, "val_input.csv:3", "not finite");
    refuse("semicolons", "train_input.csv", "I;Q\n1;2\n", DPD_E_FORMAT, "train_input.csv:1: the header names no columns I and Q and has 1 column:", "separated by ';'");
    refuse("decimal commas", "train_input.csv", "0,1;0,2\n", DPD_E_FORMAT, "got numbers", "s/;/,/g");
    refuse("decimal commas, tabs", "train_input.csv", "0,1\t0,2\n", DPD_E_FORMAT, "got numbers", "separated by tabs");
    { /* a comma-separated header with ';' in its names: no hint to convert it */
        dpd_dataset ds;
        dpd_error err = {0};
        const char *d = make("train_input.csv", "t,i (V; rms),q (V; rms)\n1,2,3\n");
        CHECK(dpd_dataset_load(d, 7, 0, &ds, &err) == DPD_E_FORMAT && strstr(err.msg, "the header names no columns I and Q and has 3 columns") &&
                  !strstr(err.msg, "separated"),
              "a header with ';' in its names: '%s'", err.msg);
    }
    refuse("tabs", "train_input.csv", "I\tQ\n1\t2\n", DPD_E_FORMAT, "names no columns I and Q and has 1 column:", "separated by tabs");
    refuse("Inf", "val_input.csv", "I,Q\n1,2\n3,-inf\n", DPD_E_FORMAT, "val_input.csv:3", "not finite");
    refuse("1e300", "train_output.csv", "I,Q\n1,2\n1e300,4\n", DPD_E_FORMAT, "train_output.csv:3: field 1 ('1e300')",
           "out of range");
    refuse("-4e38", "val_input.csv", "I,Q\n1,2\n3,-4e38\n", DPD_E_FORMAT, "val_input.csv:3: field 2", "out of range");
    refuse("row mismatch", "train_output.csv", "I,Q\n1,2\n", DPD_E_FORMAT, "train_output.csv", "5 rows");
    refuse("empty split", "test_output.csv", "I,Q\n", DPD_E_FORMAT, "test_output.csv", "no data rows");
    refuse("empty file", "test_output.csv", "", DPD_E_FORMAT, "test_output.csv", "empty");
    refuse("no header", "val_input.csv", "1,2\n3,4\n", DPD_E_FORMAT, "val_input.csv:1", "header");
    refuse("blank line inside", "val_input.csv", "I,Q\n1,2\n\n3,4\n", DPD_E_FORMAT, "val_input.csv:3", "empty line");
    refuse("spec not JSON", "spec.json", "{\"nperseg\": 4,,}", DPD_E_FORMAT, "spec.json:1", NULL);
    refuse("spec lacks bw", "spec.json", "{\"input_signal_fs\": 8e8, \"n_sub_ch\": 1, \"nperseg\": 4}",
           DPD_E_FORMAT, "spec.json", "'bw_main_ch' is missing");
    refuse("spec lacks fs", "spec.json", "{\"bw_main_ch\": 2e8, \"n_sub_ch\": 1, \"nperseg\": 4}",
           DPD_E_FORMAT, "spec.json", "'input_signal_fs'");
    refuse("spec bad nperseg", "spec.json",
           "{\"input_signal_fs\": 8e8, \"bw_main_ch\": 2e8, \"n_sub_ch\": 1, \"nperseg\": 2.5}",
           DPD_E_FORMAT, "spec.json", "'nperseg'");
    refuse("spec string number", "spec.json",
           "{\"input_signal_fs\": \"8e8\", \"bw_main_ch\": 2e8, \"n_sub_ch\": 1, \"nperseg\": 4}",
           DPD_E_FORMAT, "spec.json", "'input_signal_fs' must be a positive number, not a string (write it without quotes)");
    refuse("spec string nperseg", "spec.json",
           "{\"input_signal_fs\": 8e8, \"bw_main_ch\": 2e8, \"n_sub_ch\": 1, \"nperseg\": \"4\"}",
           DPD_E_FORMAT, "spec.json", "'nperseg' must be a positive number, not a string");
    refuse("spec fs 1e300", "spec.json",
           "{\"input_signal_fs\": 1e300, \"bw_main_ch\": 2e8, \"n_sub_ch\": 1, \"nperseg\": 4}",
           DPD_E_FORMAT, "spec.json: field 'input_signal_fs' is 1e+300 Hz", "above 1e+12 Hz (1 THz)");
    refuse("unknown format", "spec.json",
           "{\"dataset_format\": \"parquet\", \"input_signal_fs\": 8e8, \"bw_main_ch\": 2e8, \"n_sub_ch\": 1, \"nperseg\": 4}",
           DPD_E_FORMAT, "'dataset_format'", "parquet");
    return check_done("dataset");
}
