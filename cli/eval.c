/* eval: `dpd eval --data DIR --split val|test [--model CKPT] [--json]` — the measured output's
 * ACLR, the linear-gain baseline g x against the measured output, and a PA model's prediction.
 * With --pa PA --model DPD: the cascade PA(DPD(x)) against g x next to the PA driven by x.
 * `dpd parity` runs the same evaluation on several providers and compares them.
 * Checkpoints are checked against their metadata before use (what kind of model, trained on
 * which dataset); the evaluation itself is the library's (dpd_eval_prepare / dpd_eval_run). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"

#define EVAL_BATCH 64 /* segments per evaluation call */

/* A checkpoint named on the command line: the path resolved (a run directory's checkpoint) and
 * what its metadata says. */
typedef struct ckpt {
    const char *flag; /* "--model", "--pa" */
    char path[4096];
    dpd_ckpt_info info;
} ckpt;

static dpd_status ckpt_open(ckpt *c, const char *flag, const char *arg, int want_pa, dpd_error *err) {
    c->flag = flag;
    dpd_status s = dpd_ckpt_resolve(arg, want_pa, c->path, sizeof c->path, err);
    if (!s) s = dpd_ckpt_info_read(c->path, &c->info, err);
    if (s && !err->field[0]) snprintf(err->field, sizeof err->field, "%s", flag + 2); /* "--model: ..." */
    return s;
}

static int is_dpd(const ckpt *c) { return !strcmp(c->info.kind, "train_dpd"); }

void cli_warn_rate(const char *what, const dpd_ckpt_info *info, double fs, const char *where) {
    if (!(info->fs > 0 && fs > 0) || fabs(info->fs - fs) <= 1e-9 * fs) return;
    char a[32], b[32];
    fprintf(stderr, "dpd: warning: %s was trained on data sampled at %s, and %s is sampled at %s: a model's memory "
                    "spans a fixed number of samples, so it does not carry over to another rate\n",
            what, cli_hz(info->fs, a, sizeof a), where, cli_hz(fs, b, sizeof b));
}

void cli_warn_level(const char *what, const dpd_ckpt_info *info, const double *iq, size_t n, const char *where) {
    double peak, rms;
    dpd_iq_level(iq, n, &peak, &rms);
    if (!(info->train_peak > 0 && info->train_rms > 0 && peak > 0)) return;
    size_t k = 0; /* samples beyond the training peak: a few are the luck of another stretch of the same signal */
    for (size_t i = 0; i < n; i++) k += hypot(iq[2 * i], iq[2 * i + 1]) > info->train_peak;
    double off = 20 * log10(rms / info->train_rms);
    if (k >= 10 && (double)k > 1e-3 * (double)n)
        fprintf(stderr, "dpd: warning: %zu samples of %s (%.3g %%) exceed |x| = %.4g, the largest input %s was trained "
                        "on (up to |x| = %.4g, %.1f dB beyond): the model never saw that range and extrapolates there; "
                        "scale the input to the training level, or train on data that reaches it\n",
                k, where, 100.0 * (double)k / (double)n, info->train_peak, what, peak, 20 * log10(peak / info->train_peak));
    else if (fabs(off) > 3)
        fprintf(stderr, "dpd: warning: %s is %.1f dB %s the input %s was trained on (RMS %.4g against %.4g): a model "
                        "learns the PA at one drive level, and at another its output is not what it was trained "
                        "for\n",
                where, fabs(off), off > 0 ? "above" : "below", what, rms, info->train_rms);
}

int cli_warn_trained_on(const char *what, const dpd_ckpt_info *info, const dpd_dataset *ds) {
    char fp[65] = "", where[4200];
    snprintf(where, sizeof where, "the dataset %s", ds->dir);
    cli_warn_rate(what, info, ds->spec.fs, where);
    if (info->train_sha256[0] && ds->split[DPD_TRAIN].n) dpd_split_fingerprint(&ds->split[DPD_TRAIN], fp);
    if (fp[0]) { /* the samples decide, not the names */
        if (!strcmp(fp, info->train_sha256)) return 1;
        fprintf(stderr, "dpd: warning: %s was trained on another train split than %s's (dataset '%s' then; the "
                        "splits' fingerprints differ: %.12s against %.12s)\n",
                what, ds->dir, info->dataset[0] ? info->dataset : "?", info->train_sha256, fp);
        return 0;
    }
    if (info->dataset[0] && strcmp(info->dataset, ds->name))
        fprintf(stderr, "dpd: warning: %s was trained on dataset '%s', not '%s'\n", what, info->dataset, ds->name);
    return -1;
}

/* A checkpoint trained on other data: said on stderr, not refused (a user may mean it). */
static void warn_dataset(const ckpt *c, const dpd_dataset *ds) {
    char what[4200];
    snprintf(what, sizeof what, "%s %s", c->flag, c->path);
    cli_warn_trained_on(what, &c->info, ds);
}

/* 1 when a and b name the same file. */
static int same_file(const char *a, const char *b) {
    char ra[PATH_MAX], rb[PATH_MAX];
    if (!realpath(a, ra) || !realpath(b, rb)) return !strcmp(a, b);
    return !strcmp(ra, rb);
}

/* "provider (why)" of a session. */
static const char *chosen(const dpd_session *s, char *buf, size_t n) {
    snprintf(buf, n, "%s (%s)", dpd_session_provider(s), dpd_session_reason(s));
    return buf;
}

/* sc for --metric-profile name and --evm-fs; 2 after saying why for an unknown profile. */
static int scoring_of(const char *name, double evm_fs, dpd_scoring *sc) {
    int p = dpd_profile_parse(name);
    if (p < 0) {
        fprintf(stderr, "dpd: --metric-profile: '%s' is not a metric profile (legacy-opendpd-v1, general-spectral-v1 or "
                        "opendpd-spectral-v2; docs/metrics.md)\n", name);
        return 2;
    }
    dpd_train_cfg c; /* the configuration's own rule for the two together */
    dpd_error err = {0};
    dpd_train_defaults(&c);
    snprintf(c.metric_profile, sizeof c.metric_profile, "%s", name);
    c.evm_fs = evm_fs;
    if (dpd_config_check(&c, &err)) return cli_fail(&err);
    *sc = (dpd_scoring){(dpd_profile)p, evm_fs};
    return 0;
}

/* How far below the PA output's adjacent-channel power the clean input's must lie for the figures
 * to be the PA's: a clean capture's g x is 100 dB below (dpd synth, legacy profile: -143 against
 * -31 dBc), a framed one's under a Welch profile 1 to 3 dB. */
#define LEAK_MARGIN_DB 10.0

/* Warns where the clean input g x (lin) scores an adjacent-channel power within LEAK_MARGIN_DB of
 * the PA output's (out: the measured y, or in the DPD view the frozen PA driven by x): the figures
 * then measure the input or the estimator, not the PA, and a DPD's improvement is bounded by them
 * (docs/metrics.md, "Which to use"). */
static void warn_leak(const dpd_scoring *sc, const char *prof, const dpd_metrics *lin, const dpd_metrics *out, int dpd) {
    if (lin->status[DPD_ACLR_AVG] || out->status[DPD_ACLR_AVG] || !(lin->aclr_avg > out->aclr_avg - LEAK_MARGIN_DB)) return;
    const char *key = dpd_metric_key(sc->profile, DPD_ACLR_AVG);
    fprintf(stderr, "dpd: warning: under %s the input g x itself scores %s %.1f dBc, within %g dB of the %s's %.1f: "
                    "these adjacent-channel figures are limited by the input or the estimator, not the PA%s (%sa wrong "
                    "bw_main_ch, an input that leaks already; docs/metrics.md, \"Which to use\")\n",
            prof, key, lin->aclr_avg, LEAK_MARGIN_DB, dpd ? "no-DPD output" : "PA output", out->aclr_avg,
            dpd ? " model, and a DPD that reaches g x improves them by at most that difference" : "",
            sc->profile == DPD_PROFILE_LEGACY ? "" : "frame seams inside the profile's Welch windows, ");
}

/* DPD_VAL or DPD_TEST for --split name; -1 after saying why. */
static int split_of(const char *name) {
    int k = !strcmp(name, "val") ? DPD_VAL : !strcmp(name, "test") ? DPD_TEST : -1;
    if (k < 0) fprintf(stderr, "dpd: --split takes val or test, got '%s'\n", name);
    return k;
}

/* The metric profile (and EVM rate) the run of checkpoint c was trained under, from its run
 * directory's config.json, with a note where they are not eval's own defaults; legacy-opendpd-v1
 * (evm_fs as it is) where c is no checkpoint of a run (none given, a file outside its run
 * directory, a config.json of another run). evm_given: --evm-fs or --legacy-evm, options of the
 * legacy profile, which is then kept (with a note where the run's was another). */
static void run_scoring(const ckpt *c, char *prof, size_t n, double *evm_fs, int evm_given) {
    snprintf(prof, n, "legacy-opendpd-v1");
    if (!c->path[0] || !c->info.run_id[0]) return;
    char cfg[sizeof c->path + 16];
    snprintf(cfg, sizeof cfg, "%s", c->path);
    char *slash = strrchr(cfg, '/');
    snprintf(slash ? slash + 1 : cfg, sizeof cfg - (size_t)(slash ? slash + 1 - cfg : 0), "config.json");
    dpd_error err = {0};
    json_t *j = cli_json_read(cfg, 0, &err);
    const char *id = json_string_value(json_object_get(j, "run_id")), *p = json_string_value(json_object_get(j, "metric_profile"));
    json_t *ef = json_object_get(j, "evm_fs");
    int legacy = p && !strcmp(p, "legacy-opendpd-v1"), ours = id && !strcmp(id, c->info.run_id) && p && dpd_profile_parse(p) >= 0;
    if (ours && evm_given && !legacy) {
        fprintf(stderr, "dpd: note: scored under legacy-opendpd-v1, whose EVM rate --evm-fs (--legacy-evm) sets; run %s "
                        "was scored under %s (--metric-profile %s scores it so)\n", id, p, p);
    } else if (ours && !evm_given) {
        snprintf(prof, n, "%s", p);
        int evm = json_is_number(ef) && json_number_value(ef) > 0;
        if (evm) *evm_fs = json_number_value(ef);
        if (!legacy || evm) {
            char hz[32] = "";
            if (evm) cli_hz(*evm_fs, hz, sizeof hz);
            fprintf(stderr, "dpd: note: scored under %s%s%s, as run %s was (--metric-profile%s gives another)\n", p,
                    evm ? " with EVM at " : "", hz, id, evm ? " or --evm-fs" : "");
        }
    }
    json_decref(j);
}

static const char *const eval_usage =
    "dpd eval --data DIR [--split val|test] [--model CKPT] [--json]\n"
    "       dpd eval --data DIR [--split val|test] --pa PA --model DPD [--json]\n\n"
    "CKPT, PA and DPD are checkpoints or run directories (a DPD run directory gives its\n"
    "pa.safetensors as --pa and best.safetensors as --model). A DPD checkpoint is refused as\n"
    "--pa or as a lone --model, and one checkpoint as both; a checkpoint trained on another\n"
    "dataset is warned about. --json prints one object with \"metric_profile\"; each metrics object is\n"
    "{\"NMSE\":..,\"EVM\":..,\"ACLR_L\":..,\"ACLR_R\":..,\"ACLR_AVG\":..} under legacy-opendpd-v1 (the\n"
    "default without a --model run), NMSE, IBE, ACPR_L/R/AVG under general-spectral-v1 and NMSE, IBE,\n"
    "ACLR_L/R/AVG under opendpd-spectral-v2 (output_aclr: L, R, AVG); a metric that cannot be\n"
    "computed is null and\n"
    "\"status\":{\"NAME\":{\"status\":..,\"reason\":..}} says why (present only then). Text output\n"
    "prints n/a in its place and each reason once, under the table. The linear-gain baseline g x\n"
    "has g = max|y_train| / max|x_train|; a dataset without a train split (or with a silent one)\n"
    "is scored at its split's own gain, with a warning, as dpd plot draws it (\"gain_split\").";

int cmd_eval(int argc, char **argv) {
    char data[4096] = "", split[16] = "test", model[4096] = "", pa[4096] = "", prof[32] = "";
    int json = 0, legacy = 0;
    double evm_fs = 0;
    dpd_scoring sc;
    cli_exec x = {0};
    opt o[] = {
        CLI_EXEC_OPTS(x),
        {"data", OPT_STR, data, sizeof data, "dataset directory (required)", 0},
        {"split", OPT_STR, split, sizeof split, "val or test (test)", 0},
        {"model", OPT_STR, model, sizeof model, "a PA checkpoint (or run directory) to score; with --pa, the DPD", 0},
        {"pa", OPT_STR, pa, sizeof pa, "a PA checkpoint or run directory: score PA(model(x)) against g x", 0},
        {"json", OPT_FLAG, &json, 0, "print one JSON object", 0},
        {"evm-fs", OPT_DBL, &evm_fs, 0, "EVM sample rate, Hz (default: the --model run's, else the dataset's fs)", 0},
        {"legacy-evm", OPT_FLAG, &legacy, 0, "EVM at 800 MHz, as OpenDPD v2.0.0 logs it", 0},
        {"metric-profile", OPT_STR, prof, sizeof prof,
         "legacy-opendpd-v1, general-spectral-v1 or opendpd-spectral-v2 (docs/metrics.md); default: the --model run's, "
         "else legacy-opendpd-v1", 0},
    };
    int r = args_parse(argc, argv, o, sizeof o / sizeof *o, eval_usage);
    if (r) return r == 1 ? 0 : 2;
    int k = split_of(split);
    if (k < 0) return 2;
    if (!data[0] || (pa[0] && !model[0])) {
        fprintf(stderr, "dpd: eval needs %s\n", !data[0] ? "--data DIR (and --model DPD with --pa)"
                                                       : "--model DPD with --pa PA: the DPD to score through the PA");
        return 2;
    }
    if ((r = cli_exec_resolve(&x))) return r;
    dpd_error lerr = {0};
    int evm_given = args_get(o, sizeof o / sizeof *o, "evm-fs")->seen || legacy;
    if (cli_legacy_evm(legacy, args_get(o, sizeof o / sizeof *o, "evm-fs")->seen, &evm_fs, &lerr)) return cli_fail(&lerr);

    dpd_error err = {0};
    ckpt cm = {0}, cp = {0};
    if (model[0] && ckpt_open(&cm, "--model", model, 0, &err)) return cli_fail(&err);
    if (pa[0] && ckpt_open(&cp, "--pa", pa, 1, &err)) return cli_fail(&err);
    if (!prof[0]) run_scoring(&cm, prof, sizeof prof, &evm_fs, evm_given); /* the model's run's, else legacy */
    if ((r = scoring_of(prof, evm_fs, &sc))) return r;
    if (pa[0] && same_file(cm.path, cp.path)) {
        fprintf(stderr, "dpd: %s is given as both --pa and --model: --pa is the PA model and --model the DPD "
                        "trained through it (a DPD run directory gives both)\n", cm.path);
        return 2;
    }
    if (pa[0] && is_dpd(&cp)) {
        fprintf(stderr, "dpd: --pa %s is a DPD checkpoint (run %s), not a PA model: give the PA's checkpoint, or the "
                        "DPD run directory (its pa.safetensors)\n", cp.path, cp.info.run_id[0] ? cp.info.run_id : "?");
        return 2;
    }
    if (!pa[0] && model[0] && is_dpd(&cm)) {
        fprintf(stderr, "dpd: --model %s is a DPD checkpoint (run %s); a lone --model is scored as a PA model: "
                        "score a DPD through its PA with --pa PA --model DPD\n", cm.path, cm.info.run_id[0] ? cm.info.run_id : "?");
        return 2;
    }
    if (pa[0] && !strcmp(cm.info.kind, "train_pa"))
        fprintf(stderr, "dpd: warning: --model %s is a PA model (run %s), used here as the DPD\n", cm.path, cm.info.run_id);
    if (pa[0] && cm.info.pa_run_id[0] && cp.info.run_id[0] && strcmp(cm.info.pa_run_id, cp.info.run_id))
        fprintf(stderr, "dpd: warning: the DPD %s was trained through PA %s, not %s\n", cm.path, cm.info.pa_run_id,
                cp.info.run_id);

    dpd_dataset ds;
    unsigned need = 1u << k | (pa[0] ? 1u << DPD_TRAIN : 0);
    if (dpd_dataset_load(data, need, 1u << DPD_TRAIN, &ds, &err)) return cli_fail(&err);
    if (ds.warning[0]) fprintf(stderr, "dpd: warning: %s\n", ds.warning);
    cli_doctor_warn(data, 0);
    if (model[0]) warn_dataset(&cm, &ds);
    if (pa[0]) warn_dataset(&cp, &ds);
    const dpd_spec *sp = &ds.spec;
    double g = dpd_dataset_gain(&ds);
    int has_train = ds.split[DPD_TRAIN].n > 0;
    dpd_eval e = {0}, e2 = {0};
    dpd_session *sm = NULL, *sa = NULL;
    dpd_metrics out = {0}, lin = {0}, mod = {0}, nod = {0}, mea = {0};
    float *buf = NULL;
    char prov[1200] = "";
    json_t *j = NULL;
    int rc = 1;

    if (pa[0]) { /* DPD view: targets g x, reference §5 */
        if (!(g > 0)) {
            cli_err(&err, DPD_E_INVAL, "%s: the target gain g = max|y_train| / max|x_train| is 0 (a silent train "
                                       "output): --pa needs a train split with a non-zero output", data);
            goto done;
        }
        if (dpd_eval_prepare(&e, &ds, k, g, &err) || dpd_eval_prepare(&e2, &ds, k, g, &err) ||
            cli_session_open(cp.path, &x, &sa, &err) || dpd_eval_run(&e, sa, EVAL_BATCH, sp, &sc, &err))
            goto done;
        nod = e.m;
        if (cli_session_open(cm.path, &x, &sm, &err) || dpd_session_chain(sm, sa, &err) ||
            dpd_eval_run(&e2, sm, EVAL_BATCH, sp, &sc, &err))
            goto done;
        mod = e2.m;
        if (dpd_eval_measured(&e, &ds, &sc, &mea, &err)) goto done; /* the capture's y against g x */
        chosen(sm, prov, sizeof prov);
        if (dpd_metrics_aclr(e.ref, e.S, e.N, e.n, sp, &sc, &lin, &err)) goto done; /* e.ref: the target g x */
        warn_leak(&sc, prof, &lin, &nod, 1);
        int both = nod.status[DPD_ACLR_AVG] == DPD_METRIC_OK && mod.status[DPD_ACLR_AVG] == DPD_METRIC_OK;
        if (json) { /* the improvement: no_dpd's ACLR_AVG (ACPR_AVG) less dpd's, dB; null where either is n/a */
            j = json_pack("{s:s, s:s, s:s, s:I, s:i, s:o, s:s, s:o?, s:o?, s:o?, s:o, s:s}", "dataset", ds.name, "split",
                          split, "metric_profile", prof, "samples", (json_int_t)e.n, "segments", e.S, "gain", cli_jnum(g),
                          "gain_split", "train", "no_dpd", cli_metrics_json(&nod, 0), "measured", cli_metrics_json(&mea, 0),
                          "dpd", cli_metrics_json(&mod, 0), "improvement_db",
                          both ? cli_jnum(nod.aclr_avg - mod.aclr_avg) : json_null(), "provider", prov);
            rc = cli_json_print(j);
            goto done;
        }
        cli_na t = {0};
        cli_na_add(&t, &nod, 0, DPD_NMETRICS - 1);
        cli_na_add(&t, &mea, 0, DPD_NMETRICS - 1);
        cli_na_add(&t, &mod, 0, DPD_NMETRICS - 1);
        printf("%s %s: PA(DPD(x)) against g x, g = %.6f, on %s\n", ds.name, split, g, prov);
        cli_metrics_header(stdout, sc.profile);
        cli_na_row(stdout, &t, "no DPD", &nod);
        cli_na_row(stdout, &t, "measured", &mea);
        cli_na_row(stdout, &t, "DPD", &mod);
        cli_na_print(stdout, &t, "");
        fputs(CLI_NO_DPD_NOTE, stdout);
        if (both)
            printf("%s improvement: %.2f dB\n", dpd_metric_key(sc.profile, DPD_ACLR_AVG), nod.aclr_avg - mod.aclr_avg);
        else
            printf("%s improvement: n/a\n", dpd_metric_key(sc.profile, DPD_ACLR_AVG));
        rc = 0;
        goto done;
    }

    /* PA view: e.x the input, e.ref the measured output y */
    if (dpd_eval_prepare(&e, &ds, k, 0, &err) || dpd_metrics_aclr(e.ref, e.S, e.N, e.n, sp, &sc, &out, &err)) goto done;
    size_t len = (size_t)e.S * e.N * 2;
    const char *gain_split = "train";
    if (!(g > 0)) { /* as dpd plot --data: no train split (or a silent one), so the split's own gain */
        g = dpd_split_gain(&ds.split[k]);
        gain_split = split;
        fprintf(stderr, "dpd: warning: %s has %s: the linear-gain baseline g x is at the %s split's own gain, "
                        "max|y| / max|x| = %.4g\n", data, has_train ? "a silent train output" : "no train split", split, g);
    }
    /* the linear-gain baseline g x (g = 0 for a silent split: every metric says why) */
    if (!(buf = malloc(len * sizeof *buf))) {
        cli_err(&err, DPD_E_NOMEM, "out of memory for %zu samples", len / 2);
        goto done;
    }
    for (size_t i = 0; i < len; i++) buf[i] = (float)(g * e.x[i]);
    if (dpd_metrics_compute(buf, e.ref, e.S, e.N, e.n, sp, &sc, &lin, &err)) goto done;
    warn_leak(&sc, prof, &lin, &out, 0);
    if (model[0]) {
        if (cli_session_open(cm.path, &x, &sm, &err) || dpd_eval_run(&e, sm, EVAL_BATCH, sp, &sc, &err)) goto done;
        mod = e.m;
        chosen(sm, prov, sizeof prov);
    }
    if (json) {
        j = json_pack("{s:s, s:s, s:s, s:I, s:i, s:o, s:s, s:o?, s:o?}", "dataset", ds.name, "split", split,
                      "metric_profile", prof, "samples", (json_int_t)e.n, "segments", e.S, "gain", cli_jnum(g),
                      "gain_split", gain_split, "output_aclr", cli_metrics_json(&out, 1), "linear_gain",
                      cli_metrics_json(&lin, 0));
        if (j && model[0] &&
            (json_object_set_new(j, "model", cli_metrics_json(&mod, 0)) || json_object_set_new(j, "provider", json_string(prov)))) {
            json_decref(j);
            j = NULL;
        }
        rc = cli_json_print(j);
        goto done;
    }
    char b[3][32], hz[2][32], name[32];
    cli_na t = {0};
    cli_na_add(&t, &out, DPD_ACLR_L, DPD_ACLR_AVG); /* a signal scored alone: only its ACLR is shown */
    cli_na_add(&t, &lin, 0, DPD_NMETRICS - 1);
    if (model[0]) cli_na_add(&t, &mod, 0, DPD_NMETRICS - 1);
    double channel = sp->n_sub ? sp->bw_main / sp->n_sub : sp->bw_main;
    size_t pad = (size_t)e.S * (size_t)e.N - e.n; /* the last segment's zero padding, which the legacy profile scores */
    char padded[64] = "";
    if (pad && sc.profile == DPD_PROFILE_LEGACY)
        snprintf(padded, sizeof padded, " (%szero-padded by %zu)", e.S > 1 ? "the last " : "", pad);
    printf("%s %s: %zu samples, %d segment%s of %d%s, fs %s, %d x %s channel\n", ds.name, split, e.n, e.S,
           e.S == 1 ? "" : "s", e.N, padded, cli_hz(sp->fs, hz[0], sizeof hz[0]), sp->n_sub,
           cli_hz(channel, hz[1], sizeof hz[1]));
    printf("measured output %s (%s): L %s  R %s  AVG %s dBc\n", sc.profile == DPD_PROFILE_GENERAL ? "ACPR" : "ACLR", prof,
           cli_na_cell(&t, &out, DPD_ACLR_L, b[0], sizeof b[0]), cli_na_cell(&t, &out, DPD_ACLR_R, b[1], sizeof b[1]),
           cli_na_cell(&t, &out, DPD_ACLR_AVG, b[2], sizeof b[2]));
    cli_metrics_header(stdout, sc.profile);
    snprintf(name, sizeof name, "linear g=%.4f", g);
    cli_na_row(stdout, &t, name, &lin);
    if (model[0]) cli_na_row(stdout, &t, "model", &mod);
    cli_na_print(stdout, &t, "");
    if (model[0]) printf("model on %s\n", prov);
    rc = 0;
done:
    if (rc && err.status) rc = cli_fail(&err);
    free(buf);
    dpd_session_free(sm); /* chained to sa: freed first */
    dpd_session_free(sa);
    dpd_eval_free(&e);
    dpd_eval_free(&e2);
    dpd_dataset_free(&ds);
    return rc;
}

/* `dpd parity --model CKPT --data DIR [--providers cpu,cuda] [--split val|test] [--json]`: the same
 * evaluation on each provider, and how far each is from the first that produced a result. Exits
 * 1 when fewer than two providers produced one: nothing was compared. */
int cmd_parity(int argc, char **argv) {
    char data[4096] = "", model[4096] = "", list[256] = "cpu,cuda", split[16] = "test";
    int json = 0;
    cli_exec x = {0};
    opt o[] = {
        {"model", OPT_STR, model, sizeof model, "a checkpoint or run directory (required)", 0},
        {"data", OPT_STR, data, sizeof data, "dataset directory (required)", 0},
        {"providers", OPT_STR, list, sizeof list, "comma-separated providers, the first that runs is the reference (cpu,cuda)", 0},
        {"split", OPT_STR, split, sizeof split, "val or test (test)", 0},
        {"threads", OPT_INT, &x.threads, 0, "cpu worker threads (default: the settings' cpu_level)", 0},
        {"kernels", OPT_STR, x.kernels, sizeof x.kernels, "cpu kernels: auto, avx512, avx2, sse or ref", 0},
        {"json", OPT_FLAG, &json, 0, "print one JSON object", 0},
    };
    int r = args_parse(argc, argv, o, sizeof o / sizeof *o,
                       "dpd parity --model CKPT --data DIR [--providers cpu,cuda] [--split val|test] [--json]\n\n"
                       "Exit status 1 when fewer than two providers produced a result (nothing was compared).");
    if (r) return r == 1 ? 0 : 2;
    int k = split_of(split);
    if (k < 0) return 2;
    if (!model[0] || !data[0]) {
        fprintf(stderr, "dpd: parity needs --model and --data\n");
        return 2;
    }
    dpd_error err = {0};
    ckpt cm;
    dpd_dataset ds;
    if (ckpt_open(&cm, "--model", model, 0, &err)) return cli_fail(&err);
    if (dpd_dataset_load(data, 1u << k, 0, &ds, &err)) return cli_fail(&err);
    warn_dataset(&cm, &ds);
    float *ref = NULL; /* (S, N, 2) the reference provider's predictions */
    size_t len = 0;
    dpd_metrics mref = {0};
    char refname[32] = "";
    int done = 0, rc = 1;
    char given[256];
    snprintf(given, sizeof given, "%s", list); /* strtok_r cuts list */
    json_t *arr = json_array(), *j = NULL;
    if (!arr) {
        cli_err(&err, DPD_E_NOMEM, "out of memory");
        goto out;
    }
    for (char *save, *p = strtok_r(list, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        cli_exec px = x;
        snprintf(px.provider, sizeof px.provider, "%s", p);
        if ((r = cli_exec_resolve(&px))) {
            rc = r;
            goto out;
        }
        dpd_session *s = NULL;
        dpd_error pe = {0};
        char prov[1200];
        dpd_eval ep = {0};
        if (dpd_eval_prepare(&ep, &ds, k, 0, &pe) || cli_session_open(cm.path, &px, &s, &pe) ||
            dpd_eval_run(&ep, s, EVAL_BATCH, &ds.spec, 0, &pe)) {
            if (json) json_array_append_new(arr, json_pack("{s:s, s:s}", "provider", p, "error", pe.msg));
            else printf("%-6s unavailable: %s\n", p, pe.msg);
            dpd_session_free(s);
            dpd_eval_free(&ep);
            continue;
        }
        chosen(s, prov, sizeof prov);
        dpd_session_free(s);
        double dev = 0, mx = 0;
        if (!done) {
            len = (size_t)ep.S * ep.N * 2;
            if (!(ref = malloc(len * sizeof *ref))) {
                dpd_eval_free(&ep);
                cli_err(&err, DPD_E_NOMEM, "out of memory for %zu samples", len / 2);
                goto out;
            }
            memcpy(ref, ep.pred, len * sizeof *ref);
            mref = ep.m;
            snprintf(refname, sizeof refname, "%s", p);
        }
        for (size_t i = 0; i < len; i++) { /* a NaN output is an infinite deviation (fmax would drop it) */
            double d = fabs((double)ep.pred[i] - ref[i]);
            if (!(d <= dev)) dev = isnan(d) ? INFINITY : d;
            mx = fmax(mx, fabs((double)ref[i]));
        }
        double rel = mx > 0 ? dev / mx : dev;
        const dpd_metrics *q = &ep.m;
        if (json) {
            json_t *diff = json_object();
            for (int m = 0; diff && m < DPD_NMETRICS; m++)
                json_object_set_new(diff, dpd_metric_name(m),
                                    cli_jnum(dpd_metric_value(q, m) - dpd_metric_value(&mref, m)));
            json_array_append_new(arr, json_pack("{s:s, s:s, s:o, s:o, s:o?, s:o?}", "provider", p, "chosen", prov,
                                                 "max_abs", cli_jnum(dev), "max_rel", cli_jnum(rel), "metrics",
                                                 cli_metrics_json(q, 0), "metric_diff", diff));
        } else {
            char b[3][32];
            cli_na t = {0};
            cli_na_add(&t, q, DPD_NMSE, DPD_EVM);
            cli_na_add(&t, q, DPD_ACLR_AVG, DPD_ACLR_AVG);
            printf("%-6s %s\n       NMSE %s EVM %s ACLR %s", p, prov, cli_na_cell(&t, q, DPD_NMSE, b[0], sizeof b[0]),
                   cli_na_cell(&t, q, DPD_EVM, b[1], sizeof b[1]), cli_na_cell(&t, q, DPD_ACLR_AVG, b[2], sizeof b[2]));
            if (done)
                printf("  max |dy| %.3g (%.3g of max), dNMSE %.2e dB, dACLR %.2e dB", dev, rel, q->nmse - mref.nmse,
                       q->aclr_avg - mref.aclr_avg);
            printf("\n");
            cli_na_print(stdout, &t, "       ");
        }
        dpd_eval_free(&ep);
        done++;
    }
    if (json) {
        j = json_pack("{s:s, s:s, s:s, s:s, s:i, s:O}", "model", cm.path, "dataset", ds.name, "split", split, "reference",
                      refname, "compared", done > 1 ? done - 1 : 0, "providers", arr);
        if (cli_json_print(j)) goto out;
    }
    if (done < 2) {
        fprintf(stderr, "dpd: parity compared nothing: %s of the providers %s produced a result (two are needed)\n",
                done ? "only one" : "none", given);
        goto out;
    }
    rc = 0;
out:
    if (rc == 1 && err.status) rc = cli_fail(&err);
    json_decref(arr);
    free(ref);
    dpd_dataset_free(&ds);
    return rc;
}
