/* synth: `dpd synth --out DIR [--preset NAME] [generator options] [--sigmf] [--mat] [--force]`. A preset
 * sets the waveform's options and any given explicitly win (the command line is read again over it).
 * It refuses a directory that already holds a dataset unless --force, and ends by printing what it
 * wrote, as read back from DIR. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "cli.h"

/* Every file synth can write into DIR: the dataset (always), then the copies --sigmf and --mat add.
 * One table for the refusal to overwrite, the removal of stale copies and the summary. */
enum { ALWAYS, SIGMF, MAT };
static const struct {
    const char *name;
    int when;
} files[] = {
    {"spec.json", ALWAYS},          {"train_input.csv", ALWAYS},   {"train_output.csv", ALWAYS},
    {"val_input.csv", ALWAYS},      {"val_output.csv", ALWAYS},    {"test_input.csv", ALWAYS},
    {"test_output.csv", ALWAYS},    {"input.sigmf-data", SIGMF},   {"input.sigmf-meta", SIGMF},
    {"output.sigmf-data", SIGMF},   {"output.sigmf-meta", SIGMF},  {"capture.mat", MAT},
};
#define NFILES (sizeof files / sizeof *files)

static const char *file_path(const char *dir, size_t i, char *buf, size_t n) {
    snprintf(buf, n, "%s/%s", dir, files[i].name);
    return buf;
}

/* The first of synth's files that DIR already holds, or NULL. */
static const char *existing(const char *dir) {
    char p[4200];
    for (size_t i = 0; i < NFILES; i++)
        if (access(file_path(dir, i, p, sizeof p), F_OK) == 0) return files[i].name;
    return NULL;
}

static int written(size_t i, int sigmf, int mat) {
    return files[i].when == ALWAYS || (files[i].when == SIGMF && sigmf) || (files[i].when == MAT && mat);
}

/* bytes as "812 B", "11.3 KiB", "1.2 MiB". */
static const char *size_text(long long bytes, char *buf, size_t n) {
    if (bytes < 1024) snprintf(buf, n, "%lld B", bytes);
    else if (bytes < 1024 * 1024) snprintf(buf, n, "%.1f KiB", bytes / 1024.0);
    else snprintf(buf, n, "%.1f MiB", bytes / (1024.0 * 1024.0));
    return buf;
}

/* What DIR now holds, read back as training will read it: the split sizes, the sample rate and
 * carriers from spec.json, and each file written with its size. 0, or the exit code after saying
 * why the dataset does not read back. */
static int summary(const dpd_synth_cfg *c, const char *dir, int sigmf, int mat) {
    dpd_dataset ds;
    dpd_error err = {0};
    unsigned all = 1u << DPD_TRAIN | 1u << DPD_VAL | 1u << DPD_TEST;
    if (dpd_dataset_load(dir, all, all, &ds, &err)) return cli_fail(&err);
    const dpd_spec *sp = &ds.spec;
    char hz[3][32];
    printf("wrote %s\n", dir);
    printf("samples: train %zu, val %zu, test %zu (segments of %d)\n", ds.split[DPD_TRAIN].n, ds.split[DPD_VAL].n,
           ds.split[DPD_TEST].n, sp->nperseg);
    printf("signal: fs %s, %d x %s carriers (%s), %d-QAM OFDM, seed %llu\n", cli_hz(sp->fs, hz[0], sizeof hz[0]), sp->n_sub,
           cli_hz(sp->bw_sub, hz[1], sizeof hz[1]), cli_hz(sp->bw_main, hz[2], sizeof hz[2]), c->qam,
           (unsigned long long)c->seed);
    dpd_dataset_free(&ds);
    printf("files:\n");
    for (size_t i = 0; i < NFILES; i++) {
        char p[4200], sz[32];
        struct stat st;
        if (written(i, sigmf, mat) && stat(file_path(dir, i, p, sizeof p), &st) == 0)
            printf("  %-18s %s\n", files[i].name, size_text((long long)st.st_size, sz, sizeof sz));
    }
    return 0;
}

/* DIR/input.sigmf-data and DIR/output.sigmf-data (each with its .sigmf-meta): the whole capture,
 * train then val then test, as cf32_le. */
static int write_sigmf(const dpd_synth_cfg *c, const char *dir, const char *preset) {
    dpd_error err = {0};
    double *x = NULL, *y = NULL;
    float *f = malloc(c->length * 2 * sizeof *f);
    int rc = 0;
    if (!f) cli_err(&err, DPD_E_NOMEM, "out of memory for %zu samples", c->length), rc = 1;
    else if (dpd_synth_generate(c, &x, &y, &err)) rc = 1;
    for (int k = 0; k < 2 && !rc; k++) {
        const double *v = k ? y : x;
        for (size_t i = 0; i < 2 * c->length; i++) f[i] = (float)v[i];
        char path[4200], about[256];
        snprintf(path, sizeof path, "%s/%s.sigmf-data", dir, k ? "output" : "input");
        char hz[2][32];
        snprintf(about, sizeof about, "dpd synth%s%s: %d x %s carriers of %d-QAM OFDM sampled at %s, seed %llu; the "
                 "%s of its Wiener-Hammerstein PA (train, val and test in order)", preset[0] ? " --preset " : "", preset,
                 c->carriers, cli_hz(c->carrier_bw, hz[0], sizeof hz[0]), c->qam, cli_hz(c->fs, hz[1], sizeof hz[1]),
                 (unsigned long long)c->seed, k ? "output y" : "input x");
        dpd_recording_meta m = {.fs = c->fs, .description = about};
        if (dpd_recording_write_meta(path, f, NULL, c->length, &m, &err)) rc = 1;
    }
    free(f), free(x), free(y);
    return rc ? cli_fail(&err) : 0;
}

/* DIR/capture.mat: the whole capture as a MATLAB paired capture (x, y, fs), what a "mat" dataset's
 * spec.json points at (docs/formats.md). */
static int write_mat(const dpd_synth_cfg *c, const char *dir) {
    dpd_error err = {0};
    double *x = NULL, *y = NULL;
    char path[4200];
    snprintf(path, sizeof path, "%s/capture.mat", dir);
    int rc = dpd_synth_generate(c, &x, &y, &err) || dpd_mat_write_pair(path, x, y, c->length, c->fs, NULL, NULL, 0, &err);
    free(x), free(y);
    return rc ? cli_fail(&err) : 0;
}

int cmd_synth(int argc, char **argv) {
    dpd_synth_cfg c;
    dpd_synth_defaults(&c);
    char out[4096] = "", preset[16] = "";
    int sigmf = 0, mat = 0, force = 0;
    opt o[] = {
        {"out", OPT_STR, out, sizeof out, "output dataset directory (required)", 0},
        {"preset", OPT_STR, preset, sizeof preset, "waveform: ofdm-mc (the defaults), lte20 or nr100 (docs/synth.md); the options below win", 0},
        {"carriers", OPT_INT, &c.carriers, 0, "number of carriers (10)", 0},
        {"carrier-bw", OPT_DBL, &c.carrier_bw, 0, "carrier bandwidth, Hz (20e6)", 0},
        {"qam", OPT_INT, &c.qam, 0, "QAM order: 4, 16, 64, 256, 1024 (64)", 0},
        {"fs", OPT_DBL, &c.fs, 0, "sample rate, Hz (800e6)", 0},
        {"length", OPT_SIZE, &c.length, 0, "total samples, a multiple of nperseg (38400)", 0},
        {"nperseg", OPT_INT, &c.nperseg, 0, "OFDM frame and eval segment length (2560)", 0},
        {"occupancy", OPT_DBL, &c.occupancy, 0, "filled fraction of each carrier (0.9)", 0},
        {"snr", OPT_DBL, &c.snr_db, 0, "output SNR, dB (45)", 0},
        {"gain", OPT_DBL, &c.gain, 0, "PA small-signal gain, linear (2.5)", 0},
        {"sat", OPT_DBL, &c.sat, 0, "Rapp output saturation amplitude (2.6)", 0},
        {"smooth", OPT_DBL, &c.smooth, 0, "Rapp smoothness p (1.2)", 0},
        {"pm-alpha", OPT_DBL, &c.pm_alpha, 0, "Saleh AM/PM alpha, rad (0.35)", 0},
        {"pm-beta", OPT_DBL, &c.pm_beta, 0, "Saleh AM/PM beta (0.8)", 0},
        {"seed", OPT_U64, &c.seed, 0, "random seed (0)", 0},
        {"sigmf", OPT_FLAG, &sigmf, 0, "also write the whole capture as SigMF: DIR/input.sigmf-data and DIR/output.sigmf-data, each with its .sigmf-meta", 0},
        {"mat", OPT_FLAG, &mat, 0, "also write the whole capture as MATLAB's DIR/capture.mat (x, y, fs; v5)", 0},
        {"force", OPT_FLAG, &force, 0,
         "replace the dataset DIR holds (its SigMF and MATLAB copies too: those this run does not write are removed)", 0},
    };
    int n = sizeof o / sizeof *o;
    const char *usage = "dpd synth --out DIR [--preset ofdm-mc|lte20|nr100] [options] [--sigmf] [--mat] [--force]\n\n"
                        "Prints the samples of each split, the sample rate and carriers, and each file written with\n"
                        "its size. A DIR that already holds a dataset (spec.json, the split CSVs, ...) is refused\n"
                        "unless --force.";
    const char *wave = args_value(argc, argv, o, n, "preset");
    if (wave) { /* the preset's waveform first, the command line over it */
        dpd_error err = {0};
        if (dpd_synth_preset(&c, wave, &err)) {
            if (args_parse(argc, argv, o, n, usage) == 1) return 0; /* --help says how, whatever the preset */
            return cli_fail(&err);
        }
    }
    dpd_synth_cfg pc = c; /* the preset's numbers, before the command line */
    int r = args_parse(argc, argv, o, n, usage);
    if (r) return r == 1 ? 0 : 2;
    if (!out[0]) {
        fprintf(stderr, "dpd: synth needs --out DIR\n");
        return 2;
    }
    if (wave && strcmp(wave, "ofdm-mc") && pc.fs / pc.nperseg != c.fs / c.nperseg && c.fs > 0 && c.nperseg > 0) {
        char hz[3][32], keep[64] = "";
        double np = c.fs / (pc.fs / pc.nperseg); /* the nperseg that keeps the spacing, when it is whole */
        if (np == floor(np) && np >= 16 && np <= 1 << 20) snprintf(keep, sizeof keep, ": --nperseg %.0f for this fs", np);
        fprintf(stderr, "dpd: warning: --preset %s with fs %s and nperseg %d spaces its subcarriers %s apart, not the "
                        "preset's %s: the waveform keeps the preset's bandwidth but not its numerology (keep fs / nperseg "
                        "at %s%s)\n",
                wave, cli_hz(c.fs, hz[0], sizeof hz[0]), c.nperseg, cli_hz(c.fs / c.nperseg, hz[1], sizeof hz[1]),
                cli_hz(pc.fs / pc.nperseg, hz[2], sizeof hz[2]), hz[2], keep);
    }
    if (cli_output_dir("out", out, NULL)) return 2; /* out itself may be a dataset (--force) */
    const char *held = existing(out);
    if (held && !force) {
        fprintf(stderr, "dpd: --out %s already holds a dataset (%s): give a new directory, or --force to replace it\n", out,
                held);
        return 2;
    }
    dpd_error err = {0};
    if (dpd_synth_write(&c, out, &err)) return cli_fail(&err); /* 2 for a bad option value */
    dpd_band band; /* written, but can its figures be computed? (the doctor says the same: band_plan_unscorable) */
    double bw = c.carriers * c.carrier_bw;
    if (dpd_band_of(c.nperseg, c.fs, bw, c.carriers, &band, &err)) {
        char hz[3][32];
        fprintf(stderr, "dpd: warning: at fs %s the adjacent channels of the %s channel do not fit in +-fs/2: under the "
                        "default metric profile EVM and ACLR will be not_applicable (give --fs %s or more)\n",
                cli_hz(c.fs, hz[0], sizeof hz[0]), cli_hz(bw, hz[1], sizeof hz[1]),
                cli_hz(bw * (1 + 2.0 / c.carriers), hz[2], sizeof hz[2]));
        memset(&err, 0, sizeof err);
    }
    if (sigmf && (r = write_sigmf(&c, out, preset))) return r;
    if (mat && (r = write_mat(&c, out))) return r;
    for (size_t i = 0; held && i < NFILES; i++) { /* --force: no copy of the old capture stays beside the new one */
        char p[4200];
        if (!written(i, sigmf, mat)) unlink(file_path(out, i, p, sizeof p));
    }
    return summary(&c, out, sigmf, mat);
}
