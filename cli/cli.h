/* cli: the dpd command's verbs and the helpers they share (main.c): errors with CLI flag names,
 * the compute options every compute verb takes (as session options), and output through jansson.
 * Each verb returns the process exit code: 0 ok, 1 failure, 2 usage error, 130 cancelled.
 * The command uses the public API only (include/dpd/dpd.h). */
#ifndef DPD_CLI_H
#define DPD_CLI_H
#include <jansson.h>
#include <stdio.h>

#include "dpd/dpd.h"

int cmd_synth(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_train_pa(int argc, char **argv);
int cmd_train_dpd(int argc, char **argv);
int cmd_models(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_fit_ls(int argc, char **argv);
int cmd_providers(int argc, char **argv);
int cmd_config(int argc, char **argv);
int cmd_pack(int argc, char **argv);
int cmd_parity(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_plot(int argc, char **argv);   /* plot.c */
int cmd_doctor(int argc, char **argv); /* doctor.c */
/* doctor.c: the training gate: the dataset doctor on data; 0 when no finding is error-level (its
 * warnings printed, as cli_doctor_warn does), else 1 after printing each error-level finding (code,
 * message, fix) and how to override (--no-doctor). */
int cli_doctor_gate(const char *data);
/* The dataset doctor's errors and warnings about DATA on stderr, in one warning line (for what it
 * does not gate); where it cannot read DATA, a warning saying why (it reads every split, the
 * caller perhaps fewer: a broken file of another split is told too), unless whole: the caller
 * reads every file the doctor does (fit-ls), and its own reading will say why, once. */
void cli_doctor_warn(const char *data, int whole);
/* 1 when a finding of the doctor is worth saying before a run or an evaluation: an error, or a
 * warning that bears on the figures (not the protocol's gain offset, which g x absorbs). */
int cli_doctor_telling(const dpd_finding *f);
/* eval.c: says on stderr when the checkpoint described by info (what: how to name it) was trained on
 * other data than ds: by its train split's fingerprint when both are known, else by name; and at
 * another sample rate (cli_warn_rate). Returns 1 when the fingerprints are known and equal (the
 * same train samples), 0 when they differ, -1 when they are not both known. */
int cli_warn_trained_on(const char *what, const dpd_ckpt_info *info, const dpd_dataset *ds);
/* A model trained at another sample rate than fs, the data's (info->fs and fs both known and not
 * within 1e-9 of each other): said on stderr, not refused; its memory taps span other times and
 * its bandwidths are other fractions of fs. where: the data ("dataset DIR", "FILE"). */
void cli_warn_rate(const char *what, const dpd_ckpt_info *info, double fs, const char *where);
/* Input at another level than the training input's (info's train_peak and train_rms, when the
 * checkpoint records them): at least 10 samples, and more than 0.1 % of them, beyond the training
 * peak (the model extrapolates there; another stretch of the same signal has a few), or else an
 * RMS (dpd_iq_level's) more than 3 dB from the training RMS (another drive level). Said on
 * stderr, not refused. iq: n samples (I then Q); where: the data ("FILE"). */
void cli_warn_level(const char *what, const dpd_ckpt_info *info, const double *iq, size_t n, const char *where);
int cmd_serve(int argc, char **argv);  /* studio/serve.c */
int cmd_worker(int argc, char **argv); /* studio/worker.c */

/* 1 when a is --help or -h. */
int cli_is_help(const char *a);

/* ---- errors -------------------------------------------------------------------------------- */

/* flags.c (linked wherever flags.c is: the studio and its fuzz harness too): fills err (status s,
 * the formatted message, no field) and returns s. */
dpd_status cli_err(dpd_error *err, dpd_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* flags.c: the dpd flag of a library configuration field: hidden -> --hidden, order -> --K,
 * batch_eval -> --batch-eval, family -> --model, ... (buf receives it). */
const char *cli_flag(const char *field, char *buf, size_t n);
/* flags.c: the CLI's starting configuration of a verb (train-pa, train-dpd, fit-ls): the library's
 * defaults, then the verb's own (polynomial sizes K 5, Q 20, M 2; a DPD's hidden 15; fit-ls: an
 * MP of one epoch by least squares). Every front end that mirrors the CLI starts here. */
void cli_train_defaults(dpd_train_cfg *c, const char *verb);

/* flags.c: legacy_evm (legacy: it was given) into *evm_fs: 800 MHz, as OpenDPD v2.0.0 logs EVM.
 * DPD_OK, or DPD_E_INVAL naming the field when evm_fs was given too (evm_given), or given as no
 * sample rate (not above 0). */
dpd_status cli_legacy_evm(int legacy, int evm_given, double *evm_fs, dpd_error *err);
/* flags.c: DPD_E_INVAL naming the field when m sets a delta threshold (thx, thh) for a family
 * without them, which would ignore it; else DPD_OK. */
dpd_status cli_thresholds(const dpd_model_cfg *m, dpd_error *err);
/* flags.c: the fields that size only some families (order and memory: the polynomial families;
 * cross: gmp_ls; units: dvrjanet; hidden: the neural families), given for another family, would be
 * ignored: cli_size_bit(field)
 * is the field's bit (0 for any other field), and cli_family_sizes DPD_E_INVAL naming the first of
 * the given bits that family has not; else DPD_OK (an unknown family too: its own check names it). */
unsigned cli_size_bit(const char *field);
dpd_status cli_family_sizes(const char *family, unsigned given, dpd_error *err);
/* flags.c: 1 when dpd fit-ls takes the configuration field (its --K, --Q, --M, --reg, --iterations,
 * --batch-eval, --evm-fs, --metric-profile and the execution options), 0 for a training option. */
int cli_fit_ls_field(const char *field);
/* flags.c: fit-ls's model once its kind is m->family (mp or gmp_ls): M defaults to 2 for gmp_ls
 * (0 for mp) unless given; M given for an MP (cli_family_sizes) and iterations given for a PA fit
 * (target_dpd 0) are DPD_E_INVAL naming the field. given: cli_size_bit of the fields given. */
dpd_status cli_fit_ls_check(dpd_model_cfg *m, int target_dpd, unsigned given, int iterations, dpd_error *err);
/* train.c: an epoch as the CLI's epoch lines say it, "epoch k/N train_loss ... val NMSE ... EVM ...
 * ACLR ... | test NMSE ...[ lr ...]" (no learning rate for a least-squares fit, ls), into out. */
void cli_epoch_text(const dpd_event *e, int ls, char *out, size_t n);

/* "dpd: <message>" on stderr, the configuration field at the head of the message named by its
 * flag ("hidden: 1e5 is out of range" -> "--hidden: 1e5 is out of range"). Returns the exit code:
 * 2 for DPD_E_INVAL (a bad request), 1 otherwise. */
int cli_fail(const dpd_error *err);

/* ---- compute options ------------------------------------------------------------------------- */

/* --threads, --cpu-level, --kernels and --provider, turned into session options (threads,
 * kernels, provider) plus any the verb adds (max_batch, ...). */
typedef struct cli_exec {
    int threads;       /* --threads N; 0: the settings' cpu_level */
    char level[16];    /* --cpu-level NAME (with --threads too: refused) */
    char kernels[16];  /* --kernels NAME ("" = auto) */
    char provider[32]; /* --provider NAME ("" = the settings) */
    dpd_kv kv[8];
    char val[8][32];
    int nkv;
} cli_exec;

#define CLI_EXEC_OPTS(x)                                                                                        \
    {"threads", OPT_INT, &(x).threads, 0, "worker threads (default: the settings' cpu_level); results do not depend on it", 0}, \
    {"cpu-level", OPT_STR, (x).level, sizeof (x).level, "low, balanced, high or max: 25/50/75/100 % of the logical processors", 0}, \
    {"kernels", OPT_STR, (x).kernels, sizeof (x).kernels, "auto (fastest ISA; on a GPU fused steps, replayed; fast is the same), avx512, avx2, sse, eager (GPU: no replay) or ref (scalar reference; GPU: layered kernels)", 0}, \
    {"provider", OPT_STR, (x).provider, sizeof (x).provider, "auto, cpu or an installed pack's provider (cuda, opencl) (default: the settings)", 0}

/* When threads is more than the logical processors this process may use: a note saying so ("threads
 * N is more than ...") in buf, returned; else NULL. The CLI's warning and the studio's. */
const char *cli_threads_note(int threads, char *buf, size_t n);

/* Checks the options, resolves --cpu-level into x->threads and fills x->kv. 0, or 2 after
 * printing the usage error. */
int cli_exec_resolve(cli_exec *x);
/* Adds the session option key = value (an integer) to x->kv. */
void cli_exec_set(cli_exec *x, const char *key, long value);

/* ---- output ---------------------------------------------------------------------------------- */

/* A double as JSON: a real, or null when it is not finite (JSON has no NaN). */
json_t *cli_jnum(double v);

/* The one JSON shape of a metrics record (docs in the usage text of eval):
 *   {"NMSE": -30.1, "EVM": null, "ACLR_L": ..., "ACLR_R": ..., "ACLR_AVG": ...,
 *    "status": {"EVM": {"status": "not_applicable", "reason": "..."}}}
 * A metric whose status is not ok is null, and "status" (present only then) gives each such
 * metric's status and reason. aclr_only: only the ACLR entries, named L, R and AVG. */
json_t *cli_metrics_json(const dpd_metrics *m, int aclr_only);

/* Prints j on one line of stdout (compact, keys in insertion order) and releases it. 0, or 1
 * after saying why (j NULL: out of memory or a bad value). */
int cli_json_print(json_t *j);

/* Metric k of m as text: "%.3f", or "n/a (reason)". */
const char *cli_metric_text(const dpd_metrics *m, int k, char *buf, size_t n);

/* A metrics table: the header (the profile's metric names), then rows of a name and the five
 * metrics. The reasons of the metrics shown as n/a are noted once each (cli_na_add over every row
 * first): the cells say "n/a" (with [i] when the reasons differ) and cli_na_print gives the reasons
 * after the table on their own lines, where a reason repeated in every 10-character cell made the
 * table unreadable. */
void cli_metrics_header(FILE *f, dpd_profile p);
typedef struct cli_na {
    int n;
    const char *why[2 * DPD_NMETRICS + 4]; /* into the dpd_metrics given, which outlive the notes */
} cli_na;
void cli_na_add(cli_na *t, const dpd_metrics *m, int from, int to); /* metrics from..to, inclusive */
const char *cli_na_cell(const cli_na *t, const dpd_metrics *m, int k, char *buf, size_t n); /* "%.3f", "n/a", "n/a [i]" */
void cli_na_row(FILE *f, const cli_na *t, const char *name, const dpd_metrics *m);
void cli_na_print(FILE *f, const cli_na *t, const char *indent); /* "n/a: why", or "[i] why" for several */

/* Under a table with "no DPD" rows: what they measure (the PA model's figure, which a reader could
 * take for the capture's). */
#define CLI_NO_DPD_NOTE                                                                                         \
    "no DPD: the frozen PA model driven by x itself, against g x (the model's figure); measured: the capture's\n"   \
    "own output y against g x (the real PA without DPD; a DPD's figures are through the model, never the PA)\n"
/* Under a PA model's table: what its measured rows are. */
#define CLI_MEASURED_NOTE                                                                                       \
    "measured: the capture's own output y, the model's target; a model whose ACLR is far below it misses the\n"    \
    "PA's spectral regrowth (unless the capture's adjacent channels are at its noise floor)\n"

/* A frequency or sample rate for people: "800 MHz", "1.5 GHz", "122.88 MHz", "30 kHz": the largest unit
 * that keeps the number at or above 1, up to 10 significant digits (Hz below 1 kHz and when hz is not
 * finite). Every human line of the CLI prints Hz through it; JSON output keeps plain Hz numbers. */
const char *cli_hz(double hz, char *buf, size_t n);

/* s quoted for a POSIX shell ('...' with ' written '\''); buf receives it. */
const char *cli_shell_quote(const char *s, char *buf, size_t n);

/* Nothing is written into a dataset: 1 when path (a file or directory about to be written, there
 * or not) lies in a dataset directory, that is when the nearest directory that exists at or above
 * it holds spec.json, or when it lies inside the dataset directory `data` (NULL: none); dir then
 * receives that directory's resolved path. 0 otherwise. */
int cli_in_dataset(const char *path, const char *data, char *dir, size_t n);

/* A file that option --flag is about to write (replacing it if there): 0 when it may, else 2 after
 * saying why on stderr: it lies in a dataset (cli_in_dataset, data as there), it is a directory, a
 * link or a device (dpd_replaceable), or its directory is missing, no directory or not writable. */
int cli_output_file(const char *flag, const char *path, const char *data);

/* A directory that option --flag is about to make or fill: 0 when the directory it goes in lies in
 * no dataset (cli_in_dataset, data as there), else 2 after saying so. The path itself is not
 * looked at: its own checks (new, empty, a dataset to replace) are the command's. */
int cli_output_dir(const char *flag, const char *path, const char *data);

/* A finished (or stopped) run as the one JSON object `--json` prints: run_dir, epochs,
 * best_epoch, val, test (no_dpd, no_dpd_val), provider, config. NULL when out of memory. */
json_t *cli_summary_json(const dpd_train_result *res);

/* A run that stopped early (outcome "cancelled", "diverged" or "failed"): outcome, run_dir (null:
 * none was written), epochs, and once an epoch was best, best_epoch with its val and test metrics
 * (so far). NULL when out of memory. */
json_t *cli_stopped_json(const char *outcome, const dpd_train_result *res);

/* ", best epoch B: val NMSE X dB" of a run that stopped early, into b (n bytes); "" before its
 * first best epoch. Returns b. */
const char *cli_best_so_far(const dpd_train_result *res, char *b, size_t n);

/* A session for the checkpoint at path on the session options of x (NULL: none). */
dpd_status cli_session_open(const char *path, const cli_exec *x, dpd_session **s, dpd_error *err);

/* ---- pictures (plot.c) ------------------------------------------------------------------------ */

/* The validation predictions of a run's best epoch so far, copied from the DPD_EV_EPOCH events
 * of improved epochs (cli_plot_keep): the end-of-run pictures are drawn from them without a
 * forward pass. e is a dpd_eval whose x, ref and pred the keep owns. */
typedef struct cli_plot_kept {
    dpd_eval e;
    float *no_dpd, *measured; /* a DPD run's PA(x) and y on e's segments (dpd_event's); NULL for a PA run */
    int epoch; /* the epoch they are of; 0: none kept */
} cli_plot_kept;

/* Call from the event callback: keeps e->val_eval when e is an improved epoch. Allocation failure
 * drops what was kept (the pictures then evaluate the checkpoint). */
void cli_plot_keep(cli_plot_kept *k, const dpd_event *e);
void cli_plot_kept_free(cli_plot_kept *k); /* accepts a zeroed k */

/* Starts setting up the pictures in a thread of their own (the fonts, the images' memory, a first
 * drawing that binds and warms cairo's and FreeType's code), so that pictures drawn later, at the
 * end of a run, need not wait for it: call it before the dataset doctor's and dpd_train's reading
 * of the dataset, which leave a core idle for tens of milliseconds. cli_plot_warm_wait joins that
 * thread (cli_plot_run does); call it before the process ends when no pictures are drawn. What it
 * sets up is kept for the process's next pictures and left to its exit. Not thread-safe: from one
 * thread. */
void cli_plot_warm(void);
void cli_plot_warm_wait(void);

typedef struct cli_plot_opts {
    const char *split;          /* "test" or "val"; NULL: test, or val when kept is given */
    const char *out_dir;        /* NULL: RUN_DIR/plots (created) */
    const char *format;         /* "png" or "svg"; NULL: png */
    const cli_exec *x;          /* session options (resolved); NULL: the settings' */
    const cli_plot_kept *kept;  /* NULL, or the best epoch's validation predictions (split val):
                                 * drawn as they are, a DPD run's PA(x) and y with them */
} cli_plot_opts;

/* The final pictures of a run, as `dpd plot RUN_DIR` draws them: its best checkpoint on the split
 * through its dataset (config.json's "data"), written into out_dir as plots.json (docs/formats.md,
 * run-plots-v1) and psd, amam, ampm, iq, residual and history in the format. o NULL: the
 * defaults. Every file is written whole (a temporary file, then a rename); the run's own files
 * are only read. Prints nothing. Returns DPD_OK, or the status with err's message: DPD_E_INVAL
 * for bad options or a path that is not a run directory, DPD_E_IO when the dataset or a file
 * cannot be read or written, DPD_E_FORMAT for a malformed run. train-pa/train-dpd call it when a
 * run completes (split val, with what cli_plot_keep kept); so can any front end, for example
 * cli_plot_run(res.run_dir, NULL, &err) after dpd_train. */
int cli_plot_run(const char *run_dir, const cli_plot_opts *o, dpd_error *err);

/* Removes the temporary files of RUN_DIR and RUN_DIR/plots whose writer is gone (a run killed
 * while it drew its pictures or wrote its last files); --resume calls it, whether or not the
 * run has epochs left to train. */
void cli_plot_sweep(const char *run_dir);

/* history.c: a run's history.csv as {"columns": [...], "rows": [[...], ...]}: numbers as numbers, nan as
 * null, other fields (BACKBONE) as strings. NULL when the file does not exist (err->status 0) or
 * cannot be read as dpd reads any file (dpd_read_file: a FIFO, a device; err says why). */
json_t *cli_history_json(const char *path, dpd_error *err);
/* A run's baselines as its events.jsonl's last run_started line states them (dpd_event's measured
 * and, a DPD run's, no_dpd): {"measured": {"val": {...}, "test": {...}}, "no_dpd": {...}}. NULL
 * when the run has none (a run of an older dpd, no events.jsonl: err->status 0) or the file cannot
 * be read. */
json_t *cli_run_baselines(const char *run_dir, dpd_error *err);

/* The JSON document in path (jansson's flags), read as dpd reads any file it is given
 * (dpd_read_file: a regular file of at most DPD_MAX_JSON_BYTES; a FIFO or a device is refused
 * without blocking). NULL with err set (naming the path, and the line where it is no JSON). */
json_t *cli_json_read(const char *path, size_t flags, dpd_error *err);

#endif
