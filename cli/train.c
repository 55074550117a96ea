/* train: `dpd train-pa`, `dpd train-dpd` and `dpd fit-ls` — option parsing, presets, the
 * progress display (from the run's events), cancellation by SIGINT/SIGTERM, and the summary.
 * The training itself is dpd_train's. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "cli.h"
#include "eta.h"

/* Set by SIGINT/SIGTERM; the event callback asks dpd_train to stop when it is. Atomic, not just
 * volatile: the handler runs on whichever thread the kernel picks (a training pool's, the
 * pictures'), not always on the one that reads it. */
static int cancel_sig;

static void on_signal(int sig) { __atomic_store_n(&cancel_sig, sig, __ATOMIC_RELAXED); }

/* SIGINT and SIGTERM request a clean stop; a second one gets the default action (SA_RESETHAND),
 * so a user can still kill a run that does not stop. SA_RESTART: a signal during a system call
 * (reading the dataset) does not turn into an I/O error. */
static void catch_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND | SA_RESTART;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* The progress display, from the run's events alone (times are the events' clock, e->time). The
 * whole run's remaining time is the steps left at the step rate measured over the run so far
 * (eta.h), plus one evaluation per epoch left (the current one's included) at the mean of those
 * timed so far: the time between the end of one epoch and the end of the next that was not spent
 * in training steps (validation, test, checkpoints). */
typedef struct display {
    int tty;           /* stderr is a terminal: redraw a progress bar */
    int drawn;         /* a bar is on the line now */
    double last;       /* the epoch's elapsed at the last redraw */
    double mark;       /* e->time at the run's start or the last epoch's end */
    double train_s;    /* the current epoch's training seconds so far */
    cli_rate rate;     /* seconds a training step, over the run so far */
    long steps;        /* training steps an epoch (0: none, as in fit-ls) */
    double eval_s;     /* evaluation seconds, summed over ... */
    int evals;         /* ... the epochs timed */
    int ls;            /* a least-squares fit: no learning rate to show */
    dpd_profile profile;       /* the run's metric profile (RUN_STARTED) */
    int selection, best_epoch; /* the event's best epoch by the selection metric, and its value */
    double best;
    int plots;         /* pictures at the end of the run: keep the best epoch's validation predictions */
    cli_plot_kept kept;
} display;

/* Seconds left in the run with `steps` training steps and `evals` evaluations still to come. */
static double run_left(const display *d, long steps, int evals) {
    return cli_rate_per_step(&d->rate) * (double)steps + (d->evals ? d->eval_s / d->evals : 0) * evals;
}

/* s seconds as "MM:SS", or "H:MM:SS" from an hour. */
static const char *clock_text(double s, char *buf, size_t n) {
    long t = s > 0 ? (long)(s + 0.5) : 0;
    if (t >= 3600) snprintf(buf, n, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else snprintf(buf, n, "%02ld:%02ld", t / 60, t % 60);
    return buf;
}

/* The selection metric as the epoch lines label it. */
/* Metric k's name under profile p as the epoch lines print it: the history's key, an average's
 * without "_AVG" ("ACLR", "ACPR"). */
static const char *metric_label(dpd_profile p, int k, char *buf, size_t n) {
    const char *key = dpd_metric_key(p, k) ? dpd_metric_key(p, k) : dpd_metric_key(DPD_PROFILE_LEGACY, k);
    size_t len = strlen(key);
    if (len > 4 && !strcmp(key + len - 4, "_AVG")) len -= 4;
    snprintf(buf, n, "%.*s", (int)len, key);
    return buf;
}

static const char *selection_name(const display *d, char *buf, size_t n) { return metric_label(d->profile, d->selection, buf, n); }

static void remember_best(display *d, const dpd_event *e) {
    d->selection = e->selection, d->best_epoch = e->best_epoch, d->best = e->best;
}

/* Printed once as the run starts: what the epoch lines and their mark say. */
static void legend(const display *d) {
    char name[16];
    if (d->ls) fputs("dpd: one line for the fit: train loss, val and test metrics, the time it took\n", stderr);
    else
        fprintf(stderr, "dpd: a line per epoch: train loss, val and test metrics, lr, the run's time elapsed and "
                        "remaining; * = new best val %s (best.safetensors saved)\n", selection_name(d, name, sizeof name));
}

void cli_epoch_text(const dpd_event *e, int ls, char *out, size_t n) {
    char b[3][128], t[128], lr[32] = "", ep[32] = "fit"; /* a least-squares fit is one solve, not an epoch */
    if (!ls) snprintf(lr, sizeof lr, " lr %.2e", e->lr), snprintf(ep, sizeof ep, "epoch %d/%d", e->epoch, e->epochs);
    char evm[16], aclr[16];
    snprintf(out, n, "%s train_loss %.4e val NMSE %s %s %s %s %s | test NMSE %s%s", ep, e->train_loss,
             cli_metric_text(&e->val, DPD_NMSE, b[0], sizeof b[0]), metric_label(e->val.profile, DPD_EVM, evm, sizeof evm),
             cli_metric_text(&e->val, DPD_EVM, b[1], sizeof b[1]), metric_label(e->val.profile, DPD_ACLR_AVG, aclr, sizeof aclr),
             cli_metric_text(&e->val, DPD_ACLR_AVG, b[2], sizeof b[2]), cli_metric_text(&e->test, DPD_NMSE, t, sizeof t), lr);
}

static void epoch_line(display *d, const dpd_event *e) {
    double wall = e->time - d->mark;
    d->eval_s += wall > d->train_s ? wall - d->train_s : 0;
    d->evals++;
    d->mark = e->time, d->train_s = 0;
    cli_rate_epoch(&d->rate);
    remember_best(d, e);
    char text[1024], el[16], left[16];
    cli_epoch_text(e, d->ls, text, sizeof text);
    if (d->ls) fprintf(stderr, "%s | elapsed %s\n", text, clock_text(e->elapsed, el, sizeof el));
    else
        fprintf(stderr, "%s%s | elapsed %s remaining %s%s\n", d->drawn ? "\r\033[K" : "", text,
                clock_text(e->elapsed, el, sizeof el),
                clock_text(run_left(d, (long)(e->epochs - e->epoch) * d->steps, e->epochs - e->epoch), left, sizeof left),
                e->improved ? " *" : "");
    d->drawn = 0;
    d->last = 0;
}

/* Measures the step rate from every progress event; redraws the bar on a terminal (at most 10
 * times a second, and at the epoch's last step). */
static void progress(display *d, const dpd_event *e) {
    if (e->steps <= 0) return;
    d->steps = e->steps, d->train_s = e->elapsed;
    cli_rate_progress(&d->rate, e->steps_done, e->elapsed);
    if (!d->tty || (e->steps_done != e->steps && e->elapsed - d->last < 0.1)) return;
    d->last = e->elapsed;
    int w = 20, fill = (int)((double)w * (double)e->steps_done / (double)e->steps);
    char bar[32], best[64] = "", eta[16], name[16];
    for (int i = 0; i < w; i++) bar[i] = i < fill ? '#' : '.';
    bar[w] = 0;
    if (d->best_epoch)
        snprintf(best, sizeof best, " best %s %.3f (epoch %d)", selection_name(d, name, sizeof name), d->best, d->best_epoch);
    long steps_left = e->steps - e->steps_done + (long)(e->epochs - e->epoch) * e->steps;
    fprintf(stderr, "\r\033[Kepoch %d/%d [%s] %ld/%ld loss %.3e %.0f samples/s%s ETA %s", e->epoch, e->epochs, bar,
            e->steps_done, e->steps, e->loss, e->samples_per_s, best,
            clock_text(run_left(d, steps_left, e->epochs - e->epoch + 1), eta, sizeof eta));
    d->drawn = 1;
}

static int on_event(void *user, const dpd_event *e) {
    display *d = user;
    switch (e->type) {
    case DPD_EV_RUN_STARTED:
        fprintf(stderr, "dpd: %s %s on %s\n", e->resumed ? "resuming" : d->ls ? "fitting" : "training", e->run_id ? e->run_id : "",
                e->provider ? e->provider : "?");
        d->mark = e->time, d->profile = e->profile;
        remember_best(d, e);
        legend(d);
        break;
    case DPD_EV_PROGRESS: progress(d, e); break;
    case DPD_EV_EPOCH:
        epoch_line(d, e);
        if (d->plots) cli_plot_keep(&d->kept, e);
        break;
    case DPD_EV_WARNING:
        fprintf(stderr, "%sdpd: warning: %s\n", d->drawn ? "\r\033[K" : "", e->message ? e->message : "");
        d->drawn = 0;
        break;
    case DPD_EV_CHECKPOINT:
    case DPD_EV_RUN_ENDED:
    case DPD_EV_PREVIEW: break;
    }
    return __atomic_load_n(&cancel_sig, __ATOMIC_RELAXED) != 0;
}

/* The resolved configuration from the library's table: every field, typed ("hidden": 23). */
static json_t *config_json(const dpd_train_cfg *c) {
    int n;
    const dpd_field *f = dpd_config_fields(&n);
    json_t *o = json_object();
    for (int i = 0; o && i < n; i++) {
        char v[4200];
        if (!dpd_config_get(c, f[i].key, v, sizeof v)) continue;
        json_t *x = f[i].type == 's'   ? json_string(v)
                    : f[i].type == 'b' ? json_boolean(strcmp(v, "0") && strcmp(v, "false"))
                    : f[i].type == 'd' ? json_real(strtod(v, NULL))
                    : strtoull(v, NULL, 10) > (unsigned long long)INT64_MAX
                        ? json_string(v) /* a seed above JSON's signed integers: as config.json writes it */
                        : json_integer((json_int_t)strtoull(v, NULL, 10));
        json_object_set_new(o, f[i].key, x);
    }
    return o;
}

/* j with res's baselines (measured, measured_val and a DPD run's no_dpd, no_dpd_val) where it has
 * them; NULL when j is or when out of memory. */
static json_t *with_baselines(json_t *j, const dpd_train_result *res) {
    if (j && res->baselines &&
        ((res->dpd && (json_object_set_new(j, "no_dpd", cli_metrics_json(&res->no_dpd_test, 0)) ||
                       json_object_set_new(j, "no_dpd_val", cli_metrics_json(&res->no_dpd_val, 0)))) ||
         json_object_set_new(j, "measured", cli_metrics_json(&res->measured_test, 0)) ||
         json_object_set_new(j, "measured_val", cli_metrics_json(&res->measured_val, 0)))) {
        json_decref(j);
        j = NULL;
    }
    return j;
}

json_t *cli_summary_json(const dpd_train_result *res) {
    json_t *j = with_baselines(json_pack("{s:s, s:i, s:i, s:o?, s:o?}", "run_dir", res->run_dir, "epochs", res->epochs,
                                         "best_epoch", res->best_epoch, "val", cli_metrics_json(&res->val, 0), "test",
                                         cli_metrics_json(&res->test, 0)),
                               res);
    if (j && (json_object_set_new(j, "provider", json_string(res->provider)) ||
              json_object_set_new(j, "config", config_json(&res->config)))) {
        json_decref(j);
        j = NULL;
    }
    return j;
}

const char *cli_best_so_far(const dpd_train_result *res, char *b, size_t n) {
    b[0] = 0;
    int k = res->selection; /* the metric the best epoch was chosen by */
    if (res->best_epoch > 0 && res->val.status[k] == DPD_METRIC_OK)
        snprintf(b, n, ", best epoch %d: val %s %.2f %s", res->best_epoch, dpd_metric_key(res->val.profile, k),
                 dpd_metric_value(&res->val, k), k >= DPD_ACLR_L ? "dBc" : "dB");
    return b;
}

json_t *cli_stopped_json(const char *outcome, const dpd_train_result *res) {
    json_t *j = json_pack("{s:s, s:s?, s:i}", "outcome", outcome, "run_dir", res->run_dir[0] ? res->run_dir : NULL,
                          "epochs", res->epochs);
    if (j && res->best_epoch > 0 &&
        (json_object_set_new(j, "best_epoch", json_integer(res->best_epoch)) ||
         json_object_set_new(j, "val", cli_metrics_json(&res->val, 0)) ||
         json_object_set_new(j, "test", cli_metrics_json(&res->test, 0)))) {
        json_decref(j);
        j = NULL;
    }
    return with_baselines(j, res);
}

/* Summary of a finished run: a table, or one JSON object. plots: where its pictures went, or "". */
static int summary(const dpd_train_result *res, int json, const char *plots) {
    if (json) return cli_json_print(cli_summary_json(res));
    if (res->config.ls) printf("least-squares fit (solved on the host)\n");
    else printf("best epoch %d of %d (trained on %s)\n", res->best_epoch, res->epochs, res->provider);
    cli_metrics_header(stdout, res->val.profile);
    const struct {
        const char *name;
        const dpd_metrics *m;
    } row[6] = {{"val", &res->val},
                {"test", &res->test},
                {"no DPD val", &res->no_dpd_val},
                {"no DPD test", &res->no_dpd_test},
                {"measured val", &res->measured_val},
                {"measured test", &res->measured_test}};
    int shown[6] = {0, 1, 4, 5}, rows = 4; /* a PA model: no "no DPD" rows */
    if (res->dpd) shown[2] = 2, shown[3] = 3, shown[4] = 4, shown[5] = 5, rows = 6;
    cli_na t = {0};
    for (int i = 0; i < rows; i++) cli_na_add(&t, row[shown[i]].m, 0, DPD_NMETRICS - 1);
    for (int i = 0; i < rows; i++) cli_na_row(stdout, &t, row[shown[i]].name, row[shown[i]].m);
    cli_na_print(stdout, &t, "");
    fputs(res->dpd ? CLI_NO_DPD_NOTE : CLI_MEASURED_NOTE, stdout);
    printf("run directory: %s\n", res->run_dir);
    if (plots[0]) printf("pictures: %s (dpd plot RUN_DIR draws them again, on any split)\n", plots);
    return 0;
}

/* j with key: value added (value NULL: j as it is); NULL when j is or when out of memory. */
static json_t *stopped_with(json_t *j, const char *key, const char *value) {
    if (j && value && json_object_set_new(j, key, json_string(value))) {
        json_decref(j);
        j = NULL;
    }
    return j;
}

/* 2 (said) where a new run's --out cannot be the runs' root: a file, or a directory in the dataset;
 * 0 where it can (or may yet be made). */
static int out_root(const dpd_train_cfg *c) {
    char held[4200];
    struct stat st;
    if (c->resume[0] || !c->out[0]) return 0;
    if (!stat(c->out, &st) && !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "dpd: --out %s is a file: --out names the runs' root directory (a PA run goes to "
                        "OUT/DATASET/train_pa/RUN_ID, a DPD run to OUT/DATASET/train_dpd/PA/RUN_ID)\n", c->out);
        return 2;
    }
    if (cli_in_dataset(c->out, c->data, held, sizeof held)) {
        fprintf(stderr, "dpd: --out %s (the runs' root) lies in the dataset %s, and nothing is written into a dataset: "
                        "give --out DIR elsewhere\n", c->out, held);
        return 2;
    }
    return 0;
}

/* Runs dpd_train with the display and cancellation, then the summary. verb names the command
 * for the resume hint ("train-pa"); NULL when the verb cannot resume (fit-ls). x: the session
 * options of the end-of-run pictures, their set-up started (cli_plot_warm); NULL for none
 * (--no-plots). A completed run gets them in RUN_DIR/plots, drawn from the best epoch's validation
 * predictions (no forward pass but PA(x) for a DPD run); a picture that cannot be drawn is a
 * warning, not a failed run. after (may be NULL) runs on a completed run before the summary; a
 * non-zero return is the exit code. */
static int train_run(const dpd_train_cfg *c, const char *verb, int json, int (*fix)(dpd_error *), const cli_exec *x,
                     int (*after)(const dpd_train_result *, const void *), const void *arg) {
    display d = {.tty = isatty(2), .plots = x != NULL, .ls = c->ls};
    cli_rate_init(&d.rate);
    dpd_train_result res;
    dpd_error err = {0};
    memset(&res, 0, sizeof res);
    catch_signals();
    dpd_status s = dpd_train(c, on_event, &d, &res, &err);
    if (d.drawn) fprintf(stderr, "\n");
    char plots[4200] = "";
    if (!s && x) {
        dpd_error perr = {0};
        cli_plot_opts po = {.split = "val", .x = x, .kept = &d.kept};
        if (cli_plot_run(res.run_dir, &po, &perr))
            fprintf(stderr, "dpd: warning: the run's pictures were not drawn: %s\n", perr.msg);
        else
            snprintf(plots, sizeof plots, "%s/plots", res.run_dir);
    }
    cli_plot_warm_wait();
    cli_plot_kept_free(&d.kept);
    if (s == DPD_E_ABORTED) {
        char q[4 * sizeof res.run_dir + 8], cmd[sizeof q + 64] = "", best[96]; /* every character may be a quote */
        if (res.run_dir[0] && verb)
            snprintf(cmd, sizeof cmd, "dpd %s --resume %s%s", verb, cli_shell_quote(res.run_dir, q, sizeof q),
                     json ? " --json" : "");
        if (!res.run_dir[0])
            fprintf(stderr, "dpd: cancelled before the first epoch completed; nothing was written\n");
        else if (verb)
            fprintf(stderr, "dpd: cancelled after %d epoch%s%s; resume with: %s\n", res.epochs, res.epochs == 1 ? "" : "s",
                    cli_best_so_far(&res, best, sizeof best), cmd);
        else
            fprintf(stderr, "dpd: cancelled; the run directory %s is incomplete\n", cli_shell_quote(res.run_dir, q, sizeof q));
        if (json) /* scripts get the outcome on stdout too */
            cli_json_print(stopped_with(cli_stopped_json("cancelled", &res), "resume", cmd[0] ? cmd : NULL));
        int sig = __atomic_load_n(&cancel_sig, __ATOMIC_RELAXED);
        return 128 + (sig ? sig : SIGINT); /* 130 for SIGINT, 143 for SIGTERM */
    }
    if (s) {
        if (fix) fix(&err);
        int rc = cli_fail(&err);
        char best[96];
        if (res.run_dir[0]) fprintf(stderr, "dpd: run directory: %s%s\n", res.run_dir, cli_best_so_far(&res, best, sizeof best));
        if (json && s == DPD_E_DIVERGED) /* a run that was written: scripts find it as a cancelled one's */
            cli_json_print(stopped_with(cli_stopped_json("diverged", &res), "error", err.msg));
        return s == DPD_E_DIVERGED ? 1 : rc;
    }
    int rc = after ? after(&res, arg) : 0; /* fit-ls --mat: an exit code, the error said */
    return rc ? rc : summary(&res, json, plots);
}

static int train(int argc, char **argv, int dpd) {
    dpd_train_cfg c;
    cli_train_defaults(&c, dpd ? "train-dpd" : "train-pa");
    char preset[16] = "";
    int json = 0, legacy = 0, no_plots = 0, no_doctor = 0;
    cli_exec x = {0};
    opt o[] = {
        CLI_EXEC_OPTS(x),
        {"data", OPT_STR, c.data, sizeof c.data, "dataset directory (required unless --resume)", 0},
        {"pa", OPT_STR, c.pa, sizeof c.pa, dpd ? "the frozen PA (checkpoint or train-pa run directory)" : NULL, 0},
        {"model", OPT_STR, c.model.family, sizeof c.model.family, "model family, any case (gru; 'dpd models' lists all)", 0},
        {"hidden", OPT_INT, &c.model.hidden, 0, dpd ? "hidden size (15)" : "hidden size (23)", 0},
        {"layers", OPT_INT, &c.model.layers, 0, "recurrent layers (1)", 0},
        {"K", OPT_INT, &c.model.order, 0, "mp/gmp_ls: nonlinearity orders (5)", 0},
        {"Q", OPT_INT, &c.model.memory, 0, "mp/gmp_ls: memory depth (20)", 0},
        {"M", OPT_INT, &c.model.cross, 0, "gmp_ls: envelope lags and leads (2)", 0},
        {"thx", OPT_DBL, &c.model.thx, 0, "delta families: input delta threshold (0)", 0},
        {"thh", OPT_DBL, &c.model.thh, 0, "delta families: hidden delta threshold (0)", 0},
        {"units", OPT_INT, &c.model.units, 0, "dvrjanet: DVR units (3)", 0},
        {"preset", OPT_STR, preset, sizeof preset, "quick (10 epochs, frame 50, stride 16) or full (150, 200, 1)", 0},
        {"epochs", OPT_INT, &c.epochs, 0, "epochs (150)", 0},
        {"batch", OPT_INT, &c.batch, 0, "training batch size (64)", 0},
        {"batch-eval", OPT_INT, &c.batch_eval, 0, "evaluation batch size in segments (64)", 0},
        {"lr", OPT_DBL, &c.lr, 0, "initial learning rate (5e-3)", 0},
        {"lr-end", OPT_DBL, &c.lr_end, 0, "minimum learning rate (5e-5)", 0},
        {"decay", OPT_DBL, &c.decay, 0, "plateau decay factor (0.5)", 0},
        {"patience", OPT_INT, &c.patience, 0, "plateau patience in epochs (5)", 0},
        {"lr-schedule", OPT_INT, &c.lr_schedule, 0, "1 = ReduceLROnPlateau on the val selection metric, 0 = constant (1)", 0},
        {"weight-decay", OPT_DBL, &c.weight_decay, 0, "AdamW weight decay (0.01)", 0},
        {"clip", OPT_DBL, &c.clip, 0, "gradient global-norm clip, 0 = off (200)", 0},
        {"frame", OPT_INT, &c.frame, 0, "training frame length (200)", 0},
        {"stride", OPT_INT, &c.stride, 0, "training frame stride (1)", 0},
        {"seed", OPT_U64, &c.seed, 0, "random seed (0)", 0},
        {"out", OPT_STR, c.out, sizeof c.out, "output root (runs)", 0},
        {"resume", OPT_STR, c.resume, sizeof c.resume, "continue the run in this run directory", 0},
        {"evm-fs", OPT_DBL, &c.evm_fs, 0, "EVM sample rate, Hz (default: the dataset's fs)", 0},
        {"legacy-evm", OPT_FLAG, &legacy, 0, "EVM at 800 MHz, as OpenDPD v2.0.0 logs it", 0},
        {"metric-profile", OPT_STR, c.metric_profile, sizeof c.metric_profile,
         "legacy-opendpd-v1 (default), general-spectral-v1 or opendpd-spectral-v2 (docs/metrics.md)", 0},
        {"json", OPT_FLAG, &json, 0, "end with one JSON summary object on stdout", 0},
        {"no-plots", OPT_FLAG, &no_plots, 0, "do not draw the run's pictures into RUN_DIR/plots at the end", 0},
        {"no-doctor", OPT_FLAG, &no_doctor, 0, "train even when the dataset doctor finds an error (dpd doctor DIR)", 0},
    };
    int n = sizeof o / sizeof *o;
    int r = args_parse(argc, argv, o, n,
                       dpd ? "dpd train-dpd --data DIR --pa PA_CHECKPOINT_OR_RUN_DIR [--model M --hidden H] "
                             "[--preset quick|full] [training options] [--out DIR] [--json]\n"
                             "       dpd train-dpd --resume RUN_DIR [--epochs N] [--json]\n\n"
                             "Epochs are counted from 1. SIGINT or SIGTERM stops the run cleanly (exit 130 or 143) and\n"
                             "prints the command that resumes it, to the same end as an uninterrupted run. A completed\n"
                             "run's pictures (dpd plot) go to RUN_DIR/plots unless --no-plots."
                           : "dpd train-pa --data DIR [--model M --hidden H --layers N] [--preset quick|full] "
                             "[training options] [--out DIR] [--json]\n"
                             "       dpd train-pa --resume RUN_DIR [--epochs N] [--json]\n\n"
                             "Epochs are counted from 1. SIGINT or SIGTERM stops the run cleanly (exit 130 or 143) and\n"
                             "prints the command that resumes it, to the same end as an uninterrupted run. A completed\n"
                             "run's pictures (dpd plot) go to RUN_DIR/plots unless --no-plots.");
    if (r) return r == 1 ? 0 : 2;
    dpd_error err = {0};
    if (c.resume[0]) {
        struct stat st;
        if (!stat(c.resume, &st) && !S_ISDIR(st.st_mode)) {
            char q[4 * sizeof c.resume + 8];
            fprintf(stderr, "dpd: --resume takes the run directory, and %s is a file (the run directory holds "
                            "config.json and the checkpoints)\n", cli_shell_quote(c.resume, q, sizeof q));
            return 2;
        }
        char cj[sizeof c.resume + 16];
        snprintf(cj, sizeof cj, "%s/config.json", c.resume);
        if (!stat(c.resume, &st) && stat(cj, &st)) {
            char q[4 * sizeof c.resume + 8];
            fprintf(stderr, "dpd: --resume %s is not a run directory (it holds no config.json): a run directory is "
                            "OUT/DATASET/train_pa/RUN_ID (or train_dpd/PA/RUN_ID), the path a run prints as 'run "
                            "directory: ...'\n", cli_shell_quote(c.resume, q, sizeof q));
            return 2;
        }
        dpd_ckpt_info ri = {0}; /* the run's own kind decides the verb (no checkpoint yet: the library's checks) */
        char lp[sizeof c.resume + 32], q[4 * sizeof c.resume + 8];
        snprintf(lp, sizeof lp, "%s/last.safetensors", c.resume);
        int other = -1; /* the run's kind is the other verb's: 1 a DPD run, 0 a PA run; -1 not known or a fit */
        if (!dpd_ckpt_info_read(lp, &ri, &err) && !ri.least_squares)
            other = !strcmp(ri.kind, dpd ? "train_pa" : "train_dpd") ? !dpd : -1;
        if (other >= 0) {
            fprintf(stderr, "dpd: --resume: %s is a %s run: resume it with dpd %s --resume %s\n", c.resume,
                    other ? "DPD" : "PA model", other ? "train-dpd" : "train-pa", cli_shell_quote(c.resume, q, sizeof q));
            return 2;
        }
        err = (dpd_error){0};
        cli_plot_sweep(c.resume);
        static const char *const keep[] = {"resume",   "epochs",   "json",      "threads", "cpu-level", "kernels",
                                           "provider", "no-plots", "no-doctor", "data"}; /* data: where it moved */
        for (int i = 0; i < n; i++) {
            int ok = 0;
            for (size_t k = 0; k < sizeof keep / sizeof *keep; k++) ok |= !strcmp(o[i].name, keep[k]);
            if (o[i].seen && !ok) {
                fprintf(stderr, "dpd: --%s cannot change a resumed run (--epochs can, and how it runs: --threads, "
                                "--cpu-level, --kernels, --provider, --no-plots, --no-doctor, --json; --data names where "
                                "its dataset moved)\n", o[i].name);
                return 2;
            }
        }
        if (!args_get(o, n, "epochs")->seen) c.epochs = 0; /* keep the run's own */
    } else {
        if (!c.data[0] || (dpd && !c.pa[0])) {
            fprintf(stderr, "dpd: %s needs --data DIR%s (or --resume RUN_DIR)\n", dpd ? "train-dpd" : "train-pa",
                    dpd ? " and --pa PA" : "");
            return 2;
        }
        if (!dpd && c.pa[0]) {
            fprintf(stderr, "dpd: --pa belongs to train-dpd\n");
            return 2;
        }
        if (cli_thresholds(&c.model, &err)) return cli_fail(&err);
        static const char *const size[][2] = {{"K", "order"}, {"Q", "memory"}, {"M", "cross"}, {"units", "units"},
                                              {"hidden", "hidden"}};
        unsigned sized = 0;
        for (size_t i = 0; i < sizeof size / sizeof *size; i++)
            if (args_get(o, n, size[i][0])->seen) sized |= cli_size_bit(size[i][1]);
        if (cli_family_sizes(c.model.family, sized, &err)) return cli_fail(&err);
        if (preset[0]) { /* preset first, explicit options win */
            dpd_train_cfg given = c;
            if (dpd_train_preset(&c, preset, &err)) {
                snprintf(err.field, sizeof err.field, "preset");
                return cli_fail(&err);
            }
            if (args_get(o, n, "epochs")->seen) c.epochs = given.epochs;
            if (args_get(o, n, "frame")->seen) c.frame = given.frame;
            if (args_get(o, n, "stride")->seen) c.stride = given.stride;
        }
        if (cli_legacy_evm(legacy, args_get(o, n, "evm-fs")->seen, &c.evm_fs, &err)) return cli_fail(&err);
    }
    if ((r = cli_exec_resolve(&x))) return r;
    c.threads = x.threads;
    snprintf(c.kernels, sizeof c.kernels, "%s", x.kernels);
    snprintf(c.provider, sizeof c.provider, "%s", x.provider);
    if (out_root(&c)) return 2; /* before the doctor's reading of the dataset */
    if (!no_plots) cli_plot_warm(); /* beside the doctor's and dpd_train's reading of the dataset (cli.h) */
    if (!c.resume[0] && !no_doctor && (r = cli_doctor_gate(c.data))) { /* error-level findings refuse */
        cli_plot_warm_wait();
        return r;
    }
    r = train_run(&c, dpd ? "train-dpd" : "train-pa", json, NULL, no_plots ? NULL : &x, NULL, NULL);
    char pd[sizeof c.resume + 8], q[4 * sizeof c.resume + 8];
    struct stat st;
    snprintf(pd, sizeof pd, "%s/plots", c.resume);
    if (!r && c.resume[0] && no_plots && !stat(pd, &st)) /* kept, not lost; but no longer the run's */
        fprintf(stderr, "dpd: note: %s holds the pictures from before this resume (--no-plots): dpd plot %s draws the "
                        "run as it is now\n", pd, cli_shell_quote(c.resume, q, sizeof q));
    return r;
}

/* fit-ls names the family --kind. */
static int fix_ls(dpd_error *err) {
    if (!strcmp(err->field, "family")) snprintf(err->field, sizeof err->field, "kind");
    return 0;
}

/* fit-ls --mat FILE: the fitted coefficients as a MATLAB file (docs/formats.md: comm.DPD's layout for
 * an mp), from the run's best.safetensors, before the summary. */
typedef struct ls_mat {
    const char *path;
    int mat73;
} ls_mat;

static int write_ls_mat(const dpd_train_result *res, const void *arg) {
    const ls_mat *lm = arg;
    char ck[4096];
    dpd_model *m = NULL;
    dpd_error err = {0};
    int bad = dpd_ckpt_resolve(res->run_dir, 0, ck, sizeof ck, &err) || dpd_ckpt_load(ck, &m, &err) ||
              dpd_mat_write_model(lm->path, m, lm->mat73, &err);
    dpd_model_free(m);
    if (!bad) {
        fprintf(stderr, "dpd: coefficients -> %s\n", lm->path);
        return 0;
    }
    int rc = cli_fail(&err);
    fprintf(stderr, "dpd: run directory: %s\n", res->run_dir);
    return rc;
}

/* `dpd fit-ls --data DIR --kind mp|gmp --target pa|dpd [--K --Q --M --reg --iterations] [--pa PA] [--mat FILE]` */
int cmd_fit_ls(int argc, char **argv) {
    dpd_train_cfg c;
    cli_train_defaults(&c, "fit-ls");
    char kind[16] = "mp", target[16] = "pa", mat[4096] = "", matv[8] = "5";
    int json = 0, legacy = 0, no_plots = 0;
    cli_exec x = {0};
    opt o[] = {
        CLI_EXEC_OPTS(x),
        {"data", OPT_STR, c.data, sizeof c.data, "dataset directory (required)", 0},
        {"kind", OPT_STR, kind, sizeof kind, "mp or gmp (mp)", 0},
        {"target", OPT_STR, target, sizeof target, "pa (model x -> y) or dpd (indirect learning) (pa)", 0},
        {"pa", OPT_STR, c.pa, sizeof c.pa, "target dpd: the PA model the DPD is evaluated through (required)", 0},
        {"K", OPT_INT, &c.model.order, 0, "nonlinearity orders |x|^0..|x|^(K-1) (5)", 0},
        {"Q", OPT_INT, &c.model.memory, 0, "memory depth (20)", 0},
        {"M", OPT_INT, &c.model.cross, 0, "gmp: envelope lags and leads (2)", 0},
        {"reg", OPT_DBL, &c.ls_reg, 0, "ridge on the column-normalised basis (1e-9)", 0},
        {"iterations", OPT_INT, &c.ls_iter, 0, "dpd: ILA iterations, the later ones through the PA (1)", 0},
        {"batch-eval", OPT_INT, &c.batch_eval, 0, "evaluation batch size in segments (64)", 0},
        {"out", OPT_STR, c.out, sizeof c.out, "output root (runs)", 0},
        {"evm-fs", OPT_DBL, &c.evm_fs, 0, "EVM sample rate, Hz (default: the dataset's fs)", 0},
        {"legacy-evm", OPT_FLAG, &legacy, 0, "EVM at 800 MHz, as OpenDPD v2.0.0 logs it", 0},
        {"metric-profile", OPT_STR, c.metric_profile, sizeof c.metric_profile,
         "legacy-opendpd-v1 (default), general-spectral-v1 or opendpd-spectral-v2 (docs/metrics.md)", 0},
        {"json", OPT_FLAG, &json, 0, "end with one JSON summary object on stdout", 0},
        {"mat", OPT_STR, mat, sizeof mat, "also write the coefficients to this MATLAB file (comm.DPD's layout for mp; docs/formats.md)", 0},
        {"mat-version", OPT_STR, matv, sizeof matv, "--mat: 5 or 7.3 (HDF5) (5)", 0},
        {"no-plots", OPT_FLAG, &no_plots, 0, "do not draw the fit's pictures into RUN_DIR/plots at the end", 0},
    };
    int r = args_parse(argc, argv, o, sizeof o / sizeof *o,
                       "dpd fit-ls --data DIR [--kind mp|gmp] [--target pa|dpd [--pa PA]] [--K 5 --Q 20 --M 2] [--json]\n"
                       "       [--mat FILE [--mat-version 5|7.3]]\n\n"
                       "SIGINT or SIGTERM stops the fit (exit 130 or 143); it leaves no run directory.");
    if (r) return r == 1 ? 0 : 2;
    if (strcmp(matv, "5") && strcmp(matv, "7.3")) {
        fprintf(stderr, "dpd: --mat-version: '%s' must be 5 or 7.3\n", matv);
        return 2;
    }
    if (args_get(o, sizeof o / sizeof *o, "mat-version")->seen && !mat[0]) {
        fprintf(stderr, "dpd: --mat-version applies to --mat FILE, which is not given\n");
        return 2;
    }
    int dpd = !strcmp(target, "dpd");
    char why[160] = "";
    if (!c.data[0]) snprintf(why, sizeof why, "needs --data DIR");
    else if (strcmp(kind, "mp") && strcmp(kind, "gmp") && strcmp(kind, "gmp_ls"))
        snprintf(why, sizeof why, "--kind must be mp or gmp (gmp_ls, its family's name, too; got '%.60s')", kind);
    else if (strcmp(kind, "mp") && (c.model.cross == 0 || c.model.order == 1)) /* other bounds: the family's check */
        snprintf(why, sizeof why, "--kind gmp with %s has no envelope cross terms: it is a memory polynomial, --kind mp",
                 c.model.cross == 0 ? "--M 0" : "--K 1");
    else if (!dpd && strcmp(target, "pa")) snprintf(why, sizeof why, "--target must be pa or dpd (got '%.60s')", target);
    else if (dpd && !c.pa[0]) snprintf(why, sizeof why, "--target dpd needs --pa PA (the PA model to fit through)");
    else if (!dpd && c.pa[0]) snprintf(why, sizeof why, "--pa is for --target dpd (a PA model is fitted to the data alone)");
    if (why[0]) {
        fprintf(stderr, "dpd: fit-ls %s\n", why);
        return 2;
    }
    if (mat[0]) { /* before the fit: a file that cannot be written should not cost a run first */
        size_t ml = strlen(mat);
        if (cli_output_file("mat", mat, c.data)) return 2;
        if (ml < 4 || strcasecmp(mat + ml - 4, ".mat")) { /* never a checkpoint, a split file or another recording */
            fprintf(stderr, "dpd: --mat %s: the coefficients' file must end in .mat\n", mat);
            return 2;
        }
    }
    snprintf(c.model.family, sizeof c.model.family, "%s", strcmp(kind, "mp") ? "gmp_ls" : "mp");
    dpd_error lerr = {0};
    int n = sizeof o / sizeof *o;
    if (cli_fit_ls_check(&c.model, dpd, args_get(o, n, "M")->seen ? cli_size_bit("cross") : 0,
                         args_get(o, n, "iterations")->seen, &lerr))
        return cli_fail(&lerr);
    if (cli_legacy_evm(legacy, args_get(o, sizeof o / sizeof *o, "evm-fs")->seen, &c.evm_fs, &lerr)) return cli_fail(&lerr);
    if (x.provider[0] && strcasecmp(x.provider, "cpu") && strcasecmp(x.provider, "auto")) { /* said, not ignored */
        fprintf(stderr, "dpd: --provider: a least-squares fit solves on the host and scores on the cpu: '%s' would not "
                        "be used (give cpu or auto, or leave it out)\n", x.provider);
        return 2;
    }
    if ((r = cli_exec_resolve(&x))) return r;
    c.threads = x.threads;
    snprintf(c.kernels, sizeof c.kernels, "%s", x.kernels);
    snprintf(c.provider, sizeof c.provider, "%s", x.provider);
    if (out_root(&c)) return 2; /* before the doctor's reading of the dataset */
    cli_doctor_warn(c.data, 1); /* not a gate: least squares has no training loop to waste */
    ls_mat lm = {mat, !strcmp(matv, "7.3")};
    if (!no_plots) cli_plot_warm(); /* its pictures at the end, as a training run's (the studio's fit-ls draws them too) */
    return train_run(&c, NULL, json, fix_ls, no_plots ? NULL : &x, mat[0] ? write_ls_mat : NULL, &lm);
}

int cmd_train_pa(int argc, char **argv) { return train(argc, argv, 0); }
int cmd_train_dpd(int argc, char **argv) { return train(argc, argv, 1); }
