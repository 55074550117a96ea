/* run: `dpd run --model CKPT --input FILE --output FILE` — a trained model applied to a recording:
 * CSV (columns I,Q found by name), raw little-endian interleaved float32 (.cf32), SigMF cf32_le
 * (.sigmf-data with its .sigmf-meta) or MATLAB (.mat), each known by its ending
 * (dpd_recording_format). A CSV output holds the model's output as I,Q then the input as
 * I_in,Q_in; a .cf32 or SigMF output the model's output alone; a .mat output both (y and x) with
 * the sample rate fs; so `dpd run` and `dpd eval` read it back. A CSV input gives a CSV output and
 * a .cf32 input a .cf32 one (or either gives SigMF or .mat). The sample rate comes from the input
 * (SigMF, .mat) or --fs, else, for an output that records one, the model's; a SigMF output needs it.
 * The output appears whole or not at all. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "cli.h"

/* The shortest warm-up dpd run takes without a warning (docs/training.md, "Sectioned"). */
#define MIN_WARMUP 64

/* The files of recording path: itself, and for SigMF the other of its .sigmf-data and .sigmf-meta. */
static int recording_files(const char *path, char f[2][4200]) {
    size_t n = strlen(path);
    snprintf(f[0], sizeof f[0], "%s", path);
    if (n >= sizeof f[1] || strcmp(dpd_recording_format(path), "sigmf")) return 1; /* sigmf: an 11-byte ending */
    snprintf(f[1], sizeof f[1], "%.*s%s", (int)(n - 11), path, strcmp(path + n - 11, ".sigmf-data") ? ".sigmf-data" : ".sigmf-meta");
    return 2;
}

/* Whether writing recording out would replace a file of recording in (the same file, whatever its
 * path: a link, ./, another spelling). */
static int same_recording(const char *in, const char *out) {
    char a[2][4200], b[2][4200];
    int na = recording_files(in, a), nb = recording_files(out, b);
    for (int i = 0; i < na; i++)
        for (int j = 0; j < nb; j++) {
            struct stat x, y;
            if (!stat(a[i], &x) && !stat(b[j], &y) && x.st_dev == y.st_dev && x.st_ino == y.st_ino) return 1;
        }
    return 0;
}

/* A SIGINT or SIGTERM while the output is computed or written: the writer's temporary files
 * (src/file.c: NAME.tmp.PID; a SigMF output's data, renamed into place first, then its meta)
 * removed, what is on disk told, and the signal's own death. A temporary file removed: its file
 * was not written. Once writing, one not there was renamed into place already (a SigMF pair's
 * data before its meta: told, the pair is not whole). Filled in before it is armed. */
static struct {
    char tmp[2][4200]; /* the (data) file's, a SigMF output's meta's */
    char none[4400], done[4400], half[4400]; /* nothing written; written whole; SigMF data alone */
    volatile sig_atomic_t writing;
} stop;

static void say(const char *s) {
    ssize_t w = write(2, s, strlen(s));
    (void)w;
}

static void on_stop(int sig) {
    int data = !unlink(stop.tmp[0]), meta = stop.tmp[1][0] && !unlink(stop.tmp[1]);
    say(!stop.writing || data ? stop.none : meta ? stop.half : stop.done);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void arm_stop(const char *out, int sigmf) {
    long pid = (long)getpid();
    int base = (int)(strlen(out) - strlen(".sigmf-data")); /* a SigMF name: either ending, 11 characters */
    if (sigmf) {
        snprintf(stop.tmp[0], sizeof stop.tmp[0], "%.*s.sigmf-data.tmp.%ld", base, out, pid);
        snprintf(stop.tmp[1], sizeof stop.tmp[1], "%.*s.sigmf-meta.tmp.%ld", base, out, pid);
        snprintf(stop.half, sizeof stop.half, "dpd: run interrupted: %.*s.sigmf-data was written but not its "
                 ".sigmf-meta: the pair is not whole, run it again\n", base, out);
    } else {
        snprintf(stop.tmp[0], sizeof stop.tmp[0], "%s.tmp.%ld", out, pid);
    }
    snprintf(stop.none, sizeof stop.none, "dpd: run interrupted: nothing was written to %s\n", out);
    snprintf(stop.done, sizeof stop.done, "dpd: run interrupted after %s was written\n", out);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGINT), sigaddset(&sa.sa_mask, SIGTERM); /* one of them told, not both */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

int cmd_run(int argc, char **argv) {
    char model[4096] = "", in[4096] = "", out[4096] = "", var[64] = "", matv[8] = "5";
    int exact = 0;
    double fs = 0, freq = 0;
    cli_exec x = {0};
    dpd_apply_cfg ac;
    dpd_apply_defaults(&ac);
    opt o[] = {
        {"model", OPT_STR, model, sizeof model, "checkpoint (.safetensors) or run directory of a DPD or PA model (required)", 0},
        {"input", OPT_STR, in, sizeof in, "recording: CSV with I,Q columns, raw float32 IQ (.cf32), SigMF (.sigmf-data) or MATLAB (.mat) (required)", 0},
        {"output", OPT_STR, out, sizeof out, "result: CSV (a CSV input's: .csv, .txt or no extension), .cf32 (a .cf32 input's), .sigmf-data or .mat; never the input (required)", 0},
        {"exact", OPT_FLAG, &exact, 0, "the whole recording as one sequence from zero state (OpenDPD's run_dpd)", 0},
        {"section", OPT_INT, &ac.section, 0, "output samples per section (4096)", 0},
        {"warmup", OPT_INT, &ac.warmup, 0, "samples run before each section and discarded (1024)", 0},
        {"lookahead", OPT_INT, &ac.lookahead, 0, "samples run after each section and discarded (32)", 0},
        {"batch", OPT_INT, &ac.batch, 0, "sections per forward call (64)", 0},
        {"fs", OPT_DBL, &fs, 0, "sample rate, Hz, of an input that states none (CSV, .cf32; default for a SigMF or .mat output: the model's)", 0},
        {"freq", OPT_DBL, &freq, 0, "centre frequency, Hz, for a SigMF output (default: the SigMF input's)", 0},
        {"var", OPT_STR, var, sizeof var, ".mat input: the signal's variable (default: the first of x, iq, input, in)", 0},
        {"mat-version", OPT_STR, matv, sizeof matv, ".mat output: 5 or 7.3 (HDF5) (5)", 0},
        CLI_EXEC_OPTS(x),
    };
    int r = args_parse(argc, argv, o, sizeof o / sizeof *o,
                       "dpd run --model CKPT|RUN_DIR --input FILE --output FILE\n"
                       "       [--exact | --section N --warmup N --lookahead N --batch N]\n"
                       "       [--fs HZ] [--freq HZ] [--var NAME] [--mat-version 5|7.3]\n\n"
                       "A CSV output has the columns I,Q (the model's output, e.g. the predistorted signal)\n"
                       "then I_in,Q_in (the input); a .cf32 or SigMF output holds the model's output alone; a\n"
                       "MATLAB .mat output holds y (the output, complex single), x (the input, complex double)\n"
                       "and fs when known. All read back as the signal (a .mat with --var y), so run -> run\n"
                       "and run -> eval chain. A run directory gives its best.safetensors.");
    if (r) return r == 1 ? 0 : 2;
    if (!model[0] || !in[0] || !out[0]) {
        fprintf(stderr, "dpd: run needs --model, --input and --output\n");
        return 2;
    }
    const char *fin = dpd_recording_format(in), *fout = dpd_recording_format(out);
    const char *base = strrchr(out, '/') ? strrchr(out, '/') + 1 : out, *dot = strrchr(base, '.');
    if (!strcmp(fout, "csv") && dot && dot > base && strcasecmp(dot, ".csv") && strcasecmp(dot, ".txt")) {
        fprintf(stderr, "dpd: --output %s: the format follows the name's extension: .csv (or .txt), .cf32, .mat (in any "
                        "case) or .sigmf-data, not '%s'\n", out, dot);
        return 2;
    }
    if (same_recording(in, out)) {
        fprintf(stderr, "dpd: --output %s names the input recording %s (choose another file)\n", out, in);
        return 2;
    }
    if (cli_output_file("output", out, NULL)) return 2;
    size_t lin = strlen(in); /* a SigMF archive is no CSV: its reading says what it is */
    int archive = lin > 6 && !strcasecmp(in + lin - 6, ".sigmf");
    int raw_in = !archive && (!strcmp(fin, "csv") || !strcmp(fin, "cf32")), raw_out = !strcmp(fout, "csv") || !strcmp(fout, "cf32");
    if (raw_in && raw_out && strcmp(fin, fout)) {
        fprintf(stderr, "dpd: --output must have the input's format (%s), or be SigMF (.sigmf-data) or MATLAB (.mat)\n",
                !strcmp(fin, "cf32") ? ".cf32" : "CSV");
        return 2;
    }
    if (strcmp(matv, "5") && strcmp(matv, "7.3")) {
        fprintf(stderr, "dpd: --mat-version: '%s' must be 5 or 7.3\n", matv);
        return 2;
    }
    /* options of a format the run does not have: refused, as --freq is, not ignored */
    if (args_get(o, sizeof o / sizeof *o, "mat-version")->seen && strcmp(fout, "mat")) {
        fprintf(stderr, "dpd: --mat-version is for a MATLAB output (.mat), and --output %s is not one\n", out);
        return 2;
    }
    if (var[0] && strcmp(fin, "mat")) {
        fprintf(stderr, "dpd: --var names a MATLAB input's variable (.mat), and --input %s is not one\n", in);
        return 2;
    }
    if (args_get(o, sizeof o / sizeof *o, "fs")->seen && !(fs > 0 && fs <= DPD_MAX_RATE_HZ)) { /* 0 too: not "none" */
        fprintf(stderr, "dpd: --fs: %g must be a sample rate in Hz, above 0 and at most %g (1 THz; 800 MHz is 800e6)\n", fs,
                DPD_MAX_RATE_HZ);
        return 2;
    }
    if (args_get(o, sizeof o / sizeof *o, "freq")->seen) {
        if (!(freq > 0 && isfinite(freq))) {
            fprintf(stderr, "dpd: --freq: %g must be a positive centre frequency in Hz\n", freq);
            return 2;
        }
        if (strcmp(fout, "sigmf")) {
            fprintf(stderr, "dpd: --freq goes into a SigMF output's metadata (.sigmf-data), and --output %s is %s\n", out,
                    !strcmp(fout, "mat") ? "MATLAB" : !strcmp(fout, "cf32") ? "raw .cf32" : "CSV");
            return 2;
        }
    }
    static const char *const sectioned[] = {"section", "warmup", "lookahead", "batch"};
    for (size_t i = 0; exact && i < sizeof sectioned / sizeof *sectioned; i++)
        if (args_get(o, sizeof o / sizeof *o, sectioned[i])->seen) {
            fprintf(stderr, "dpd: --exact runs the recording as one sequence: --%s is for the sectioned run\n", sectioned[i]);
            return 2;
        }
    if (!exact && (ac.section < 1 || ac.warmup < 0 || ac.lookahead < 0 || ac.batch < 1)) {
        fprintf(stderr, "dpd: need --section >= 1, --warmup >= 0, --lookahead >= 0 and --batch >= 1\n");
        return 2;
    }
    ac.exact = exact;
    if ((r = cli_exec_resolve(&x))) return r;
    dpd_error err = {0};
    char path[4096];
    dpd_model *m = NULL;
    dpd_session *s = NULL;
    double *iq = NULL;
    float *xs = NULL, *y = NULL;
    size_t n = 0;
    int rc = 1;
    if (dpd_ckpt_resolve(model, 0, path, sizeof path, &err) || dpd_ckpt_load(path, &m, &err)) {
        if (!err.field[0]) { /* said of --model, its words left as they are (a file's "family" is no flag) */
            char msg[sizeof err.msg];
            snprintf(msg, sizeof msg, "%s", err.msg);
            cli_err(&err, err.status, "--model: %s", msg);
        }
        goto fail;
    }
    dpd_recording_meta rm = {.var = var[0] ? var : NULL};
    if (dpd_recording_read_meta(in, &rm, &iq, &n, &err)) goto fail;
    if (rm.by_position)
        fprintf(stderr, "dpd: warning: %s: its header names no columns I and Q: read as I then Q, by position, as a "
                        "dataset's split file is (name the columns I and Q to say which is which)\n", in);
    if (!var[0] && !strcmp(fin, "mat")) { /* a dpd run's .mat holds its output y beside the input x: say which is read */
        if (dpd_mat_has(in, "y"))
            fprintf(stderr, "dpd: note: %s holds 'y' too (dpd run's output, or dpd synth --mat's PA output): the "
                            "default reads the input variable; --var y applies the model to 'y'\n", in);
    }
    if (fs > 0 && rm.fs > 0 && fs != rm.fs) {
        rc = 2;
        char hz[2][32];
        fprintf(stderr, "dpd: --fs %s disagrees with the sample rate %s states (%s): drop --fs\n",
                cli_hz(fs, hz[0], sizeof hz[0]), in, cli_hz(rm.fs, hz[1], sizeof hz[1]));
        goto fail;
    }
    if (!(fs > 0)) fs = rm.fs;
    dpd_ckpt_info info = {0};
    dpd_error ierr = {0};
    if (dpd_ckpt_info_read(path, &info, &ierr)) info.run_id[0] = 0, info.fs = 0; /* provenance only: a checkpoint without it is fine */
    int records = !strcmp(fout, "sigmf") || !strcmp(fout, "mat"); /* outputs that record a sample rate */
    if (records && !(fs > 0) && info.fs > 0) { /* the model's own: the one rate it applies at */
        fs = info.fs;
        char hz[32];
        fprintf(stderr, "dpd: note: %s states no sample rate: %s records %s, the rate %s was trained at (--fs HZ "
                        "gives another)\n", in, out, cli_hz(fs, hz, sizeof hz), path);
    }
    if (!strcmp(fout, "sigmf") && !(fs > 0)) {
        rc = 2;
        fprintf(stderr, "dpd: --fs is needed: a SigMF output records the sample rate, and neither %s nor the model "
                        "states one (give --fs HZ)\n", in);
        goto fail;
    }
    cli_warn_rate(path, &info, fs, in);
    cli_warn_level(path, &info, iq, n, in);
    const dpd_model_cfg *mc = dpd_model_config(m);
    int ahead = dpd_model_lookahead(mc); /* the default covers the model's; a given one is checked */
    if (!args_get(o, sizeof o / sizeof *o, "lookahead")->seen && ahead > ac.lookahead) ac.lookahead = ahead;
    size_t win = (size_t)ac.warmup + ac.section + ac.lookahead;
    size_t L = exact || n <= win ? n : win;
    if (L > 0x7fffffff) {
        cli_err(&err, DPD_E_INVAL, "recording too long for --exact (%zu samples)", n);
        goto fail;
    }
    /* reserve what apply will ask for: one whole sequence, or batches of windows (never more
     * windows than the recording has) */
    size_t sections = (n + (size_t)ac.section - 1) / (size_t)ac.section;
    cli_exec_set(&x, "max_batch", L == n ? 1 : (long)(sections < (size_t)ac.batch ? sections : (size_t)ac.batch));
    cli_exec_set(&x, "max_frame", (long)L);
    xs = malloc(n * 2 * sizeof *xs);
    y = malloc(n * 2 * sizeof *y);
    if (!xs || !y) {
        cli_err(&err, DPD_E_NOMEM, "out of memory for %zu samples", n);
        goto fail;
    }
    for (size_t i = 0; i < 2 * n; i++) xs[i] = (float)iq[i];
    arm_stop(out, !strcmp(fout, "sigmf"));
    int back = dpd_model_lookback(mc); /* -1: a recurrent state */
    if (L != n && (mc->thx > 0 || mc->thh > 0))
        fprintf(stderr, "dpd: warning: %s with delta thresholds (thx %g, thh %g) keeps its last sent input and state "
                        "until they move by more than a threshold, so a section's start from zero state can last far "
                        "past the warm-up: its sections can differ from --exact by percent (a tres_deltagru DPD: 6 %% "
                        "of max |output| with --warmup 1024, none with 4096); compare with --exact, or run that\n",
                mc->family, mc->thx, mc->thh);
    if (L != n && back < 0 && ac.warmup < MIN_WARMUP)
        fprintf(stderr, "dpd: warning: --warmup %d: each section starts from zero state, and a model with memory needs "
                        "its warm-up to forget that: below %d samples the first outputs of each section can differ "
                        "from --exact's by far more than 1e-5 (a GRU-15: 17 %% of max |output| at 0, 5e-4 at 16, "
                        "5e-6 at 32; docs/training.md)\n", ac.warmup, MIN_WARMUP);
    if (L != n && back > ac.warmup)
        fprintf(stderr, "dpd: warning: --warmup %d: %s reads %d samples before each output, so the first %d output%s of "
                        "each section read%s other samples than --exact's; give --warmup %d or more (then every output "
                        "reads what --exact's does)\n", ac.warmup, mc->family, back, back - ac.warmup,
                back - ac.warmup == 1 ? "" : "s", back - ac.warmup == 1 ? "s" : "", back);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (dpd_session_create(m, x.kv, x.nkv, &s, &err) || dpd_apply(s, xs, n, y, &ac, &err)) goto fail;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    for (size_t i = 0; i < 2 * n; i++) /* never a NaN or infinity into a file a DAC may play */
        if (!isfinite(y[i])) {
            size_t top = 0;
            double big = 0;
            for (size_t j = 0; j < n; j++) {
                double a = hypot(iq[2 * j], iq[2 * j + 1]);
                if (a > big) big = a, top = j;
            }
            int beyond = !(info.train_peak > 0) || big > info.train_peak; /* the input's fault, or the model's */
            cli_err(&err, DPD_E_DIVERGED, "the model's output is not finite (first at sample %zu, 0-based): nothing is "
                                          "written. The input's largest |x| is %.4g, at sample %zu%s", i / 2, big, top,
                    beyond ? ": far outside what the model was trained on"
                           : ", within the training level: the model itself gives it (check its weights: dpd eval)");
            goto fail;
        }
    double sec = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    char about[4400];
    snprintf(about, sizeof about, "dpd run: %s applied to %s (%s)", path, in, L == n ? "exact" : "sectioned");
    dpd_recording_meta wm = {.fs = fs, .freq = freq ? freq : rm.freq, .mat73 = !strcmp(matv, "7.3"), .description = about,
                             .model = path, .run_id = info.run_id[0] ? info.run_id : NULL};
    stop.writing = 1;
    if (dpd_recording_write_meta(out, y, iq, n, &wm, &err)) goto fail;
    signal(SIGINT, SIG_DFL), signal(SIGTERM, SIG_DFL); /* written: nothing left to remove */
    int th = dpd_session_threads(s);
    const char *kern = dpd_session_kernels(s);
    fprintf(stderr, "dpd: %zu sample%s, %s, %s (%s)", n, n == 1 ? "" : "s", L == n ? "exact" : "sectioned",
            dpd_session_provider(s), dpd_session_reason(s));
    if (th) fprintf(stderr, ", %d thread%s", th, th > 1 ? "s" : "");
    if (kern[0]) fprintf(stderr, ", %s kernels", kern);
    fprintf(stderr, ", %.3f s (%.3g samples/s) -> %s\n", sec, n / (sec > 0 ? sec : 1e-9), out);
    rc = 0;
fail:
    if (rc == 1) rc = cli_fail(&err);
    dpd_session_free(s);
    dpd_model_free(m);
    free(iq), free(xs), free(y);
    return rc;
}
