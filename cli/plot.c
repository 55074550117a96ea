/* plot: `dpd plot RUN_DIR [--split test|val] [--out DIR] [--format png|svg]` and
 * `dpd plot --data DIR` — the pictures of a run, or of a measured dataset, drawn with cairo.
 *
 * The numbers come from the library (dpd_plot_json, plots-v1): the run's best checkpoint on a
 * split (a DPD run: the PA model driven by the DPD, next to it driven by x itself and to the
 * capture's measured y), or the dataset's
 * own x and y. They are written first as <out>/plots.json (run-plots-v1, with history.csv), and
 * every chart is drawn from that document, so a picture shows exactly the numbers in the file.
 * Charts (800 x 500): psd, amam, ampm, iq, residual, and for a run the learning curves (history).
 * One function per chart, sharing one axis helper. Colours are Okabe-Ito's colour-blind-safe
 * palette, and the series differ in lightness and line style too, so they survive grey print.
 * cli_plot_run (cli.h) is the same for the end of dpd train-pa/train-dpd and for other front ends. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cairo-ft.h>
#include <cairo-svg.h>
#include <cairo.h>
#include <ft2build.h>
#include FT_FREETYPE_H
#include <libdeflate.h>

#include "args.h"
#include "cli.h"
#include "deflate.h"
#include "ink.h"
#include "lanes.h"

#ifdef __SANITIZE_ADDRESS__
/* LeakSanitizer (make test SANITIZE=address): fontconfig, under cairo, leaks one block while it
 * parses its own configuration files; not dpd's memory, and once per process. */
__attribute__((visibility("default"))) const char *__lsan_default_suppressions(void);
__attribute__((visibility("default"))) const char *__lsan_default_options(void);
const char *__lsan_default_suppressions(void) { return "leak:libfontconfig.so\n"; }
const char *__lsan_default_options(void) { return "print_suppressions=0"; }
#endif

#define W 800
#define H 500
#define EVAL_BATCH 64 /* segments per evaluation call */

/* ---- the numbers: a run's checkpoint, or a dataset, on a split ---------------------------------- */

typedef struct plot_req {
    const char *run_dir;        /* NULL: draw the dataset `data` itself */
    const char *data;           /* the dataset (run mode: instead of config.json's "data"; NULL: that) */
    int split;                  /* DPD_VAL or DPD_TEST */
    const char *out;            /* NULL: <run_dir or data>/plots */
    int svg;                    /* 0: png */
    const cli_exec *x;          /* session options; NULL: the settings' */
    const cli_plot_kept *kept;  /* the best epoch's val predictions, or NULL */
    const char *profile;        /* the metric profile whose PSD and bands are drawn; NULL: the run's, or legacy */
} plot_req;

void cli_plot_keep(cli_plot_kept *k, const dpd_event *e) {
    const dpd_eval *v = e->val_eval;
    if (e->type != DPD_EV_EPOCH || !e->improved || !v || !v->x || !v->ref || !v->pred) return;
    size_t len = (size_t)v->S * (size_t)v->N * 2;
    int dpd = e->val_no_dpd && e->val_measured;
    if (k->e.S != v->S || k->e.N != v->N) {
        cli_plot_kept_free(k);
        k->e.x = malloc(len * sizeof(float)), k->e.ref = malloc(len * sizeof(float)), k->e.pred = malloc(len * sizeof(float));
        if (dpd) k->no_dpd = malloc(len * sizeof(float)), k->measured = malloc(len * sizeof(float));
        if (!k->e.x || !k->e.ref || !k->e.pred || (dpd && (!k->no_dpd || !k->measured))) {
            cli_plot_kept_free(k);
            return;
        }
        if (dpd) { /* the same for every epoch of the run */
            memcpy(k->no_dpd, e->val_no_dpd, len * sizeof(float));
            memcpy(k->measured, e->val_measured, len * sizeof(float));
        }
    }
    memcpy(k->e.x, v->x, len * sizeof(float));
    memcpy(k->e.ref, v->ref, len * sizeof(float));
    memcpy(k->e.pred, v->pred, len * sizeof(float));
    k->e.split = v->split, k->e.n = v->n, k->e.S = v->S, k->e.N = v->N;
    k->epoch = e->epoch;
}

void cli_plot_kept_free(cli_plot_kept *k) {
    if (!k) return;
    dpd_eval_free(&k->e);
    free(k->no_dpd), free(k->measured);
    k->no_dpd = k->measured = NULL;
    k->epoch = 0;
}

/* A string member of a JSON file, copied into out ("" when absent). */
static dpd_status config_get(const char *path, const char *key, char *out, size_t n, dpd_error *err) {
    json_t *j = cli_json_read(path, 0, err);
    if (!j) return err->status;
    const char *v = json_string_value(json_object_get(j, key));
    snprintf(out, n, "%s", v ? v : "");
    json_decref(j);
    return DPD_OK;
}


/* mkdir -p. */
static dpd_status make_dirs(const char *dir, dpd_error *err) {
    char p[4096];
    snprintf(p, sizeof p, "%s", dir);
    for (char *s = p + 1;; s++) {
        if (*s && *s != '/') continue;
        char c = *s;
        *s = 0;
        if (mkdir(p, 0777) && errno != EEXIST)
            return cli_err(err, DPD_E_IO, "%s: cannot create the directory: %s (choose another with --out DIR)", p, strerror(errno));
        if (!(*s = c)) break;
    }
    struct stat st;
    if (stat(dir, &st) || !S_ISDIR(st.st_mode)) return cli_err(err, DPD_E_IO, "%s: not a directory", dir);
    return DPD_OK;
}

/* Removes the temporary files (NAME.tmp.PID) a killed writer left in dir: those whose process is
 * gone. */
static void clean_stale(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        const char *t = strstr(e->d_name, ".tmp.");
        char *end, path[4400];
        long pid = t ? strtol(t + 5, &end, 10) : 0;
        if (pid <= 0 || *end || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    if (d) closedir(d);
}

void cli_plot_sweep(const char *run_dir) {
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/plots", run_dir);
    clean_stale(dir);
    clean_stale(run_dir); /* a run killed after its last checkpoint: resume trains nothing */
}

/* The numbers of a set of pictures: the document (run-plots-v1 but its plots) and the plot data,
 * made by gather without the spectra (dpd_plot_curves), which paint adds (dpd_plot_spectra) beside
 * the first charts; so the plot data's input, in, is kept with the arrays it points into (kept's,
 * or e's, e2's and y here) and its spec's dataset, until plot_doc_free. */
typedef struct plot_doc {
    json_t *doc;
    dpd_plot_data *p;
    dpd_plot_in in;
    dpd_dataset ds;
    dpd_eval e, e2;
    float *y;
} plot_doc;

static void plot_doc_free(plot_doc *d) {
    json_decref(d->doc), d->doc = NULL;
    dpd_plot_free(d->p), d->p = NULL;
    free(d->y), d->y = NULL;
    dpd_eval_free(&d->e);
    dpd_eval_free(&d->e2);
    dpd_dataset_free(&d->ds);
}

/* Metric k of m, a figure fit to name in a legend: computed, and a number of dB (a hostile file's
 * 1e300 is not one); and v, a JSON one. */
static int in_db(double v) { return fabs(v) <= 999; }
static int scored(const dpd_metrics *m, int k) { return m && m->status[k] == DPD_METRIC_OK && in_db(dpd_metric_value(m, k)); }
static int figure(json_t *v) { return json_is_number(v) && in_db(json_number_value(v)); }

/* m's adjacent-channel figure (ACLR_AVG, the profile's ACPR_AVG) as series' name, where scored. */
static void put_adjacent(json_t *series, const char *name, const dpd_metrics *m) {
    if (scored(m, DPD_ACLR_AVG)) json_object_set_new(series, name, json_real(m->aclr_avg));
}

/* The legends' figures set on doc: "adjacent", {"metric": the profile's key, "series": series} (a
 * series' adjacent-channel figure by its name; taken), unless series is empty; and "error",
 * {"metric": "NMSE", "value": dB}, the residual's, from m where m has it. */
static void put_figures(json_t *doc, dpd_profile profile, json_t *series, const dpd_metrics *m) {
    if (series && json_object_size(series))
        json_object_set_new(doc, "adjacent", json_pack("{s:s, s:o}", "metric", dpd_metric_key(profile, DPD_ACLR_AVG), "series", series));
    else json_decref(series);
    if (scored(m, DPD_NMSE)) json_object_set_new(doc, "error", json_pack("{s:s, s:f}", "metric", "NMSE", "value", m->nmse));
}

/* A run's figures as it recorded them on the split drawn under profile (put_figures): the
 * prediction's from the checkpoint drawn (info: what its own weights scored), its NMSE the
 * residual's; the capture's y (a PA run's target) and a DPD run's PA model without DPD from doc's
 * baselines (the run's start). */
static void figures(json_t *doc, const dpd_ckpt_info *info, int split, dpd_profile profile) {
    const char *key = dpd_metric_key(profile, DPD_ACLR_AVG), *sp = split == DPD_VAL ? "val" : "test";
    const dpd_metrics *m = split == DPD_VAL ? &info->val : &info->test;
    int mine = info->scored && m->profile == profile; /* the checkpoint's figures are of this profile */
    json_t *bl = json_object_get(doc, "baselines"), *v, *series = json_object();
    if (mine) put_adjacent(series, "prediction", m);
    int dpd = json_is_true(json_object_get(doc, "dpd"));
    for (int k = 0; k < 2; k++) { /* the capture's y: a PA model's target, a DPD run's own series */
        v = json_object_get(json_object_get(json_object_get(bl, k ? "no_dpd" : "measured"), sp), key);
        if (figure(v)) json_object_set(series, k ? "no_dpd" : dpd ? "measured" : "target", v);
    }
    put_figures(doc, profile, series, mine ? m : NULL);
}

/* The signals of r: the run's best checkpoint on the split (or what r->kept holds), or the
 * dataset itself, through dpd_plot_curves (the spectra to come: plot_doc). out: plot_doc_free it,
 * whatever the return. */
static dpd_status gather(const plot_req *r, plot_doc *out, dpd_error *err) {
    char path[4200], data[4096] = "", best[4096] = "", pa[4096] = "", prof[64] = "";
    dpd_ckpt_info info = {0};
    dpd_metrics mea, lin; /* a dataset's: its y's, and g x's against y */
    dpd_session *sm = NULL, *sa = NULL;
    json_t *d = NULL;
    int dpd = 0, S;
    double g = 0;
    const dpd_eval *kept = r->kept && r->kept->epoch && r->split == DPD_VAL ? &r->kept->e : NULL;
    memset(out, 0, sizeof *out);
    dpd_dataset *ds = &out->ds;
    dpd_eval *e = &out->e, *e2 = &out->e2;
    dpd_plot_in *in = &out->in;

    if (r->run_dir) { /* the run: its dataset, best checkpoint and (a DPD run) its frozen PA */
        struct stat st;
        snprintf(path, sizeof path, "%s/config.json", r->run_dir);
        if (stat(r->run_dir, &st))
            return cli_err(err, DPD_E_IO, "plot: the run directory %s does not exist", r->run_dir);
        if (!S_ISDIR(st.st_mode))
            return cli_err(err, DPD_E_IO, "plot: %s is a file, not a run directory (a dataset is drawn with --data DIR)",
                           r->run_dir);
        if (access(path, R_OK)) {
            snprintf(path, sizeof path, "%s/spec.json", r->run_dir);
            return cli_err(err, DPD_E_IO, "plot: %s is not a run directory (no config.json)%s", r->run_dir,
                           access(path, F_OK) ? "" : "; it is a dataset, drawn with --data DIR");
        }
        if (r->data) snprintf(data, sizeof data, "%s", r->data);
        else if (config_get(path, "data", data, sizeof data, err)) return err->status;
        dpd_error perr; /* the run's profile: drawn unless --metric-profile names one (then its figures' too) */
        if (config_get(path, "metric_profile", prof, sizeof prof, r->profile ? &perr : err) && !r->profile) return err->status;
        if (!r->data && (!data[0] || access(data, F_OK)))
            return cli_err(err, DPD_E_IO, "%s: the run's dataset '%s' is not found from here: give it with --data DIR", path, data);
        if (dpd_ckpt_resolve(r->run_dir, 0, best, sizeof best, err) || dpd_ckpt_info_read(best, &info, err)) return err->status;
        dpd = !strcmp(info.kind, "train_dpd");
        if (dpd && dpd_ckpt_resolve(r->run_dir, 1, pa, sizeof pa, err)) return err->status;
        if (dpd && !strcmp(pa, best)) return cli_err(err, DPD_E_FORMAT, "%s: a DPD run without its frozen PA (pa.safetensors)", r->run_dir);
    } else {
        snprintf(data, sizeof data, "%s", r->data);
    }
    /* kept predictions need the spec alone; otherwise a DPD run and a dataset need the train split
     * for the gain g */
    unsigned need = kept ? 0 : 1u << r->split,
             want = !kept && (dpd || !r->run_dir || info.train_sha256[0]) ? 1u << DPD_TRAIN : 0; /* (its fingerprint) */
    if (dpd_dataset_load(data, need, want, ds, err)) return err->status;
    if (ds->warning[0]) fprintf(stderr, "dpd: warning: %s\n", ds->warning);
    if (!kept) cli_doctor_warn(data, 0); /* as dpd eval: a band plan the data contradicts draws bands in the signal
                                       * (the end of a run: its gate has said so) */
    int same = cli_warn_trained_on(best, &info, ds); /* 1: the samples the run trained on */
    g = dpd_dataset_gain(ds);
    int own_pn = dpd_profile_parse(prof[0] ? prof : "legacy-opendpd-v1"), pn = r->profile ? dpd_profile_parse(r->profile) : own_pn;
    in->spec = &ds->spec, in->profile = pn < 0 ? DPD_PROFILE_LEGACY : (dpd_profile)pn;
    if (pn < 0) { /* config.json's (--metric-profile is checked before) */
        cli_err(err, DPD_E_FORMAT, "%s: metric_profile '%s' is not a metric profile (legacy-opendpd-v1, general-spectral-v1 "
                                   "or opendpd-spectral-v2)", path, r->profile ? r->profile : prof);
        goto fail;
    }
    if (!r->run_dir) { /* the dataset: g x (the PA at its linear gain) and the measured y */
        const dpd_split *sp = &ds->split[r->split];
        if (!(g > 0)) { /* no train split, or a silent one: the gain of the split itself */
            const char *name = r->split == DPD_VAL ? "val" : "test";
            g = dpd_split_gain(sp);
            if (g > 0)
                fprintf(stderr, "dpd: warning: %s has no train split (or a silent one): g x is drawn at the %s split's "
                                "own gain, max|y| / max|x| = %.4g\n", data, name, g);
            else
                fprintf(stderr, "dpd: warning: %s has no gain: its train split is missing or silent and its %s split's "
                                "x or y is all zero, so g x is drawn as zero\n", data, name);
        }
        if (dpd_eval_prepare(e, ds, r->split, g, err) || dpd_segments(sp->y, sp->n, e->N, 1.0, &out->y, &S, err)) goto fail;
        /* its figures as dpd eval --data gives them: y's own, and the linear-gain baseline g x against y */
        dpd_scoring sc = {.profile = in->profile};
        if (dpd_metrics_aclr(out->y, e->S, e->N, e->n, &ds->spec, &sc, &mea, err) ||
            dpd_metrics_compute(e->ref, out->y, e->S, e->N, e->n, &ds->spec, &sc, &lin, err))
            goto fail;
        in->x = e->x, in->ref = e->ref, in->pred = out->y, in->ref_name = "linear", in->pred_name = "output";
        in->S = e->S, in->N = e->N, in->n = e->n;
    } else if (kept) { /* what the run computed: x, the target and the prediction (a DPD run: PA(x), y) */
        in->x = kept->x, in->ref = kept->ref, in->pred = kept->pred, in->S = kept->S, in->N = kept->N, in->n = kept->n;
        if (dpd) in->other = r->kept->no_dpd, in->other_name = "no_dpd", in->measured = r->kept->measured;
    } else if (dpd) { /* PA(DPD(x)) and PA(x) against g x */
        if (!(g > 0)) {
            cli_err(err, DPD_E_INVAL, "%s: the target gain g = max|y_train| / max|x_train| is 0 (no or a silent train "
                                      "split): a DPD run is plotted against g x", data);
            goto fail;
        }
        const dpd_split *sp = &ds->split[r->split];
        if (dpd_eval_prepare(e, ds, r->split, g, err) || dpd_eval_prepare(e2, ds, r->split, g, err) ||
            cli_session_open(pa, r->x, &sa, err) || dpd_eval_run(e, sa, EVAL_BATCH, &ds->spec, 0, err) ||
            cli_session_open(best, r->x, &sm, err) || dpd_session_chain(sm, sa, err) ||
            dpd_eval_run(e2, sm, EVAL_BATCH, &ds->spec, 0, err) || dpd_segments(sp->y, sp->n, e->N, 1.0, &out->y, &S, err))
            goto fail;
        in->x = e->x, in->ref = e->ref, in->pred = e2->pred, in->other = e->pred, in->other_name = "no_dpd", in->measured = out->y;
        in->S = e->S, in->N = e->N, in->n = e->n;
    } else { /* the PA model's prediction against the measured y */
        if (dpd_eval_prepare(e, ds, r->split, 0, err) || cli_session_open(best, r->x, &sm, err) ||
            dpd_eval_run(e, sm, EVAL_BATCH, &ds->spec, 0, err))
            goto fail;
        in->x = e->x, in->ref = e->ref, in->pred = e->pred, in->S = e->S, in->N = e->N, in->n = e->n;
    }
    if (!(out->p = dpd_plot_curves(in, err))) goto fail;
    /* run_dir null and data set: a dataset's own picture, with the gain of its target g x */
    d = json_pack("{s:s, s:s?}", "version", "run-plots-v1", "run_dir", r->run_dir);
    if (d && !r->run_dir) json_object_set_new(d, "data", json_string(data));
    if (!d || json_object_set_new(d, "split", json_string(r->split == DPD_VAL ? "val" : "test")) ||
        json_object_set_new(d, "checkpoint", r->run_dir ? json_string("best.safetensors") : json_null()) ||
        json_object_set_new(d, "dpd", json_boolean(dpd)) ||
        (!r->run_dir && json_object_set_new(d, "gain", cli_jnum(g)))) {
        cli_err(err, DPD_E_NOMEM, "plot: out of memory");
        json_decref(d), d = NULL;
        goto fail;
    }
    if (r->run_dir) {
        snprintf(path, sizeof path, "%s/history.csv", r->run_dir);
        dpd_error herr;
        json_t *h = cli_history_json(path, &herr);
        if (h) json_object_set_new(d, "history", h);
        else if (herr.status) fprintf(stderr, "dpd: warning: %s (the learning curves are left out)\n", herr.msg);
        json_t *b = cli_run_baselines(r->run_dir, &herr);
        if (b) json_object_set_new(d, "baselines", b);
        else if (herr.status) fprintf(stderr, "dpd: warning: %s (the learning curves' baselines are left out)\n", herr.msg);
        /* the run's own figures, where the pictures are of its data (the split it scored, or the train
         * split it trained on, by fingerprint where it has one) under its profile */
        if ((kept || same == 1 || (same < 0 && !r->data)) && pn == own_pn) figures(d, &info, r->split, in->profile);
    }
    if (!r->run_dir) { /* the legends' figures: y's ACLR, g x's, and the residual's NMSE (dpd eval --data's) */
        json_t *series = json_object();
        put_adjacent(series, "output", &mea);
        put_adjacent(series, "linear", &lin);
        put_figures(d, in->profile, series, &lin);
    }
    out->doc = d;
fail:
    dpd_session_free(sm); /* chained to sa: freed first */
    dpd_session_free(sa);
    if (out->doc) return DPD_OK;
    return err->status ? err->status : cli_err(err, DPD_E_NOMEM, "plot: out of memory");
}

/* plots.json: the document with the library's plot data as its text (dpd_plot_text), made in two
 * steps: doc_begin, the rest of the document as text, before the charts, then doc_write, the file
 * with the plot data written into it as its text is made (dpd_plot_write: the whole text, fresh
 * memory, cost 0.9 ms more in page faults), on the encoder thread, after the spectra, where no
 * chart waits to be encoded. */
typedef struct doc_job {
    const dpd_plot_data *p;
    char *head, *hist; /* the document but "plots" and "history", and "history" (NULL: none): malloc'd */
    char path[4200];
    dpd_status s; /* doc_write's */
    dpd_error err;
} doc_job;

/* Fills j for d's plots.json at path (doc_end frees it). DPD_OK, or DPD_E_NOMEM. */
static dpd_status doc_begin(const plot_doc *d, const char *path, doc_job *j, dpd_error *err) {
    memset(j, 0, sizeof *j);
    json_t *head = json_copy(d->doc), *hist = json_object_get(d->doc, "history");
    json_object_del(head, "history");
    j->p = d->p, snprintf(j->path, sizeof j->path, "%s", path);
    j->head = head ? json_dumps(head, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    j->hist = hist ? json_dumps(hist, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15)) : NULL;
    json_decref(head);
    if (j->head && (j->hist || !hist)) return DPD_OK;
    return cli_err(err, DPD_E_NOMEM, "%s: out of memory", path);
}

/* Writes j's file (whole to a temporary file, then renamed); j->s and j->err tell how it went. */
static void doc_write(doc_job *j) {
    char tmp[4300];
    if ((j->s = dpd_replaceable(j->path, &j->err))) return;
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", j->path, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        j->s = cli_err(&j->err, DPD_E_IO, "%s: cannot write: %s", j->path, strerror(errno));
        return;
    }
    j->head[strlen(j->head) - 1] = 0; /* the closing brace: the plots and the history follow */
    fprintf(f, "%s,\"plots\":", j->head);
    dpd_status s = dpd_plot_write(j->p, f, &j->err);
    if (j->hist) fprintf(f, ",\"history\":%s", j->hist);
    fputs("}\n", f);
    int bad = ferror(f), e = errno;
    if (fclose(f) && !bad) bad = 1, e = errno;
    if (!s && bad) s = cli_err(&j->err, DPD_E_IO, "%s: cannot write: %s", j->path, strerror(e));
    else if (s) {
        char m[sizeof j->err.msg];
        snprintf(m, sizeof m, "%s", j->err.msg);
        s = cli_err(&j->err, s, "%s: %s", j->path, m);
    }
    if (s || rename(tmp, j->path)) {
        if (!s) s = cli_err(&j->err, DPD_E_IO, "%s: cannot write: %s", j->path, strerror(errno));
        unlink(tmp);
    }
    j->s = s;
}

static void doc_end(doc_job *j) {
    free(j->head), free(j->hist);
    j->head = j->hist = NULL;
}

/* ---- drawing: one axis helper, one function per chart ------------------------------------------ */

/* Okabe-Ito */
enum { BLACK = 0x000000, ORANGE = 0xE69F00, SKY = 0x56B4E9, GREEN = 0x009E73, YELLOW = 0xF0E442, BLUE = 0x0072B2,
       VERMILLION = 0xD55E00, PURPLE = 0xCC79A7, GREY = 0x8C8C8C };

typedef struct style {
    unsigned rgb;
    double width; /* line width, or dot diameter */
    int dashed;   /* a dashed line; its dots hollow (dots) */
    const char *label;
} style;

static void colour(cairo_t *cr, unsigned rgb, double alpha) {
    cairo_set_source_rgba(cr, (rgb >> 16 & 255) / 255.0, (rgb >> 8 & 255) / 255.0, (rgb & 255) / 255.0, alpha);
}

static void pen(cairo_t *cr, const style *s) {
    static const double dash[] = {6, 4};
    colour(cr, s->rgb, 1);
    cairo_set_line_width(cr, s->width);
    cairo_set_dash(cr, dash, s->dashed ? 2 : 0, 0);
}

/* The charts' typeface, DejaVu Sans and its bold, read by FreeType from where the distributions
 * install it: what fontconfig picks for "sans-serif" on Debian, without fontconfig's set-up
 * (parsing its configuration and caches costs 8 to 10 ms, a fifth of the end-of-run pictures,
 * against 0.6 ms here). Where the files are not found, cairo's "sans-serif" through fontconfig.
 * Opened by warm_up, once a process: kept for its next pictures, and left to its exit (letting go
 * of them and of cairo's caches took 0.6 ms at the end of every run). */
static struct {
    FT_Library lib;
    cairo_font_face_t *face[2]; /* regular, bold; NULL: fontconfig's */
} fonts;

static void fonts_open(void) {
    static const char *const dir[] = {"/usr/share/fonts/truetype/dejavu", "/usr/share/fonts/dejavu-sans-fonts",
                                      "/usr/share/fonts/TTF", "/usr/share/fonts/dejavu"};
    static const char *const file[2] = {"DejaVuSans.ttf", "DejaVuSans-Bold.ttf"};
    FT_Face f[2] = {NULL, NULL};
    if (fonts.lib) return;
    if (FT_Init_FreeType(&fonts.lib)) {
        fonts.lib = NULL;
        return;
    }
    for (size_t d = 0; d < sizeof dir / sizeof *dir; d++) {
        char path[256];
        for (int i = 0; i < 2; i++) {
            snprintf(path, sizeof path, "%s/%s", dir[d], file[i]);
            if (FT_New_Face(fonts.lib, path, 0, &f[i])) f[i] = NULL;
        }
        if (f[0] && f[1]) break;
        for (int i = 0; i < 2; i++)
            if (f[i]) FT_Done_Face(f[i]), f[i] = NULL;
    }
    /* Unhinted: the TrueType hinting program (fontconfig's "slight" on Debian) was 40 % of the
     * warm-up's instructions (17.7 M of 42.6 M, by callgrind, when the warm-up drew every glyph),
     * for outlines that differ from these by a fraction of a pixel's shade. */
    for (int i = 0; f[0] && i < 2; i++) {
        fonts.face[i] = cairo_ft_font_face_create_for_ft_face(f[i], FT_LOAD_NO_HINTING);
        if (cairo_font_face_status(fonts.face[i])) cairo_font_face_destroy(fonts.face[i]), fonts.face[i] = NULL;
    }
    if (!fonts.face[0] || !fonts.face[1]) /* fontconfig's for both */
        for (int i = 0; i < 2; i++) cairo_font_face_destroy(fonts.face[i]), fonts.face[i] = NULL;
}

static void font(cairo_t *cr, double size, int bold) {
    if (fonts.face[bold]) cairo_set_font_face(cr, fonts.face[bold]);
    else cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, size);
}

/* text with its anchor at (x, y): ax, ay = 0 left/top, 0.5 centre, 1 right/bottom. */
static void text(cairo_t *cr, double x, double y, double size, int bold, double ax, double ay, const char *s) {
    cairo_text_extents_t t;
    font(cr, size, bold);
    cairo_text_extents(cr, s, &t);
    cairo_move_to(cr, x - t.x_bearing - ax * t.width, y - t.y_bearing - ay * t.height);
    cairo_show_text(cr, s);
}

static double text_width(cairo_t *cr, double size, const char *s) {
    cairo_text_extents_t t;
    font(cr, size, 0);
    cairo_text_extents(cr, s, &t);
    return t.x_advance;
}

/* size, or the largest whole point size down to lo at which s, set in it (bold or not), is at most
 * room wide, measured at that size (advances are whole pixels: widths are not quite in
 * proportion); lo where none is. */
static double fit(cairo_t *cr, double size, int bold, double room, double lo, const char *s) {
    for (double z = size;; z = floor(z) == z ? z - 1 : floor(z)) {
        cairo_text_extents_t t;
        font(cr, z, bold);
        cairo_text_extents(cr, s, &t);
        if (t.x_advance <= room || z <= lo) return fmax(z, lo);
    }
}

/* The chart's title, and on the right what it shows: the run id or the dataset, and splits (NULL:
 * the document's split). */
static void title_of(cairo_t *cr, json_t *doc, const char *what, const char *splits) {
    const char *dir = json_string_value(json_object_get(doc, "run_dir"));
    if (!dir) dir = json_string_value(json_object_get(doc, "data"));
    const char *split = json_string_value(json_object_get(doc, "split"));
    char name[512], src[1100];
    snprintf(name, sizeof name, "%s", dir ? dir : "");
    for (size_t n = strlen(name); n > 1 && name[n - 1] == '/';) name[--n] = 0; /* "RUN_DIR/" names RUN_DIR */
    const char *base = strrchr(name, '/');
    snprintf(src, sizeof src, "%s, %s%s%s", base && base[1] ? base + 1 : name,
             splits ? splits : split ? split : "?", splits ? "" : " split",
             !splits && json_is_true(json_object_get(doc, "dpd")) ? ", with DPD through the PA model" : "");
    colour(cr, BLACK, 1);
    text(cr, 16, 14, 17, 1, 0, 0, what);
    cairo_text_extents_t t;
    font(cr, 17, 1);
    cairo_text_extents(cr, what, &t);
    colour(cr, 0x444444, 1); /* beside the title, or under it where the two would meet (a size smaller:
                              * clear of the plot's frame, underscores and all) */
    int beside = 16 + t.x_advance + 24 < W - 16 - text_width(cr, 11, src);
    text(cr, W - 16, beside ? 18 : 30, beside ? 11 : 10, 0, 1, 0, src);
}

/* The chart's title, and what it shows (the run id or the dataset, the split) on the right. */
static void title(cairo_t *cr, json_t *doc, const char *what) { title_of(cr, doc, what, NULL); }

/* A plot area: where it is on the page, the data ranges it shows and their tick steps. */
typedef struct axes {
    double px, py, pw, ph;
    double x0, x1, y0, y1, xs, ys;
} axes;

static double ax_x(const axes *a, double v) { return a->px + (v - a->x0) / (a->x1 - a->x0) * a->pw; }
static double ax_y(const axes *a, double v) { return a->py + a->ph - (v - a->y0) / (a->y1 - a->y0) * a->ph; }

/* n values, NaN where there is none (a null in plots.json). */
typedef struct vec {
    const double *v;
    size_t n;
} vec;

/* A data range, grown by values (non-finite values ignored). */
typedef struct range {
    double lo, hi;
} range;
#define EMPTY_RANGE ((range){INFINITY, -INFINITY})

static void grow(range *r, vec a) {
    for (size_t i = 0; i < a.n; i++)
        if (isfinite(a.v[i])) r->lo = fmin(r->lo, a.v[i]), r->hi = fmax(r->hi, a.v[i]);
}

/* Scale [lo, hi] into *a0, *a1 with a 1-2-5 tick step of about 6 ticks: rounded out to whole
 * steps, or exactly the data (tight); whole numbers only (integer: epochs). */
static void scale(range r, int tight, int integer, double *a0, double *a1, double *step) {
    if (!(r.lo <= r.hi) || !isfinite(r.hi - r.lo)) r = (range){0, 1};
    if (r.hi - r.lo < 1e-12 * fmax(1, fabs(r.hi))) {
        double d = integer ? 1 : fmax(fabs(r.hi) * 0.1, 1e-3);
        r.lo = r.lo >= 0 && r.lo < d ? 0 : r.lo - d, r.hi += d; /* a range at 0 (amplitudes) stays at or above it */
    }
    double raw = (r.hi - r.lo) / 6, p = pow(10, floor(log10(raw))), f = raw / p;
    *step = (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * p;
    if (integer && *step < 1) *step = 1;
    *a0 = tight ? r.lo : floor(r.lo / *step + 1e-9) * *step;
    *a1 = tight ? r.hi : ceil(r.hi / *step - 1e-9) * *step;
}

/* An axes box at (px, py, pw, ph) on the page for ranges xr, yr. */
static axes axes_at(double px, double py, double pw, double ph, range xr, range yr, int xtight, int xint) {
    axes a = {.px = px, .py = py, .pw = pw, .ph = ph};
    scale(xr, xtight, xint, &a.x0, &a.x1, &a.xs);
    scale(yr, 0, 0, &a.y0, &a.y1, &a.ys);
    return a;
}

static void tick_label(char *b, size_t n, double v, double step) {
    int dec = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
    snprintf(b, n, "%.*f", dec, fabs(v) < step * 1e-6 ? 0.0 : v);
}

/* Background, grid, ticks with labels, the frame and the axis titles (units in brackets); no
 * xlabel: no x tick labels either (a panel with another below it). */
static void axes_draw(cairo_t *cr, const axes *a, const char *xlabel, const char *ylabel) {
    char b[32];
    colour(cr, 0xFFFFFF, 1);
    cairo_rectangle(cr, a->px, a->py, a->pw, a->ph);
    cairo_fill(cr);
    cairo_set_line_width(cr, 1);
    cairo_set_dash(cr, NULL, 0, 0);
    double k0 = ceil(a->x0 / a->xs - 1e-9);
    for (int k = 0; k < 40; k++) { /* about 6 ticks; 40 bounds what rounding could add */
        double v = (k0 + k) * a->xs, x = ax_x(a, v);
        if (v > a->x1 + 1e-9 * a->xs) break;
        colour(cr, 0xDDDDDD, 1);
        cairo_move_to(cr, floor(x) + 0.5, a->py), cairo_line_to(cr, floor(x) + 0.5, a->py + a->ph), cairo_stroke(cr);
        if (!xlabel) continue; /* a panel above another: the x axis is labelled below */
        colour(cr, BLACK, 1);
        tick_label(b, sizeof b, v, a->xs);
        text(cr, x, a->py + a->ph + 6, 12, 0, 0.5, 0, b);
    }
    k0 = ceil(a->y0 / a->ys - 1e-9);
    for (int k = 0; k < 40; k++) {
        double v = (k0 + k) * a->ys, y = ax_y(a, v);
        if (v > a->y1 + 1e-9 * a->ys) break;
        colour(cr, 0xDDDDDD, 1);
        cairo_move_to(cr, a->px, floor(y) + 0.5), cairo_line_to(cr, a->px + a->pw, floor(y) + 0.5), cairo_stroke(cr);
        colour(cr, BLACK, 1);
        tick_label(b, sizeof b, v, a->ys);
        text(cr, a->px - 6, y, 12, 0, 1, 0.5, b);
    }
    colour(cr, BLACK, 1);
    cairo_rectangle(cr, a->px + 0.5, a->py + 0.5, a->pw - 1, a->ph - 1);
    cairo_stroke(cr);
    if (xlabel) text(cr, a->px + a->pw / 2, a->py + a->ph + 24, 13, 0, 0.5, 0, xlabel);
    if (ylabel) {
        cairo_save(cr);
        cairo_translate(cr, a->px - 56, a->py + a->ph / 2);
        cairo_rotate(cr, -M_PI / 2);
        text(cr, 0, 0, 13, 0, 0.5, 0.5, ylabel);
        cairo_restore(cr);
    }
}

_Static_assert(W <= INK_MAX_COLS && H <= INK_MAX_ROWS && W % 32 == 0, "a chart's lines within ink_line's contract");

/* A line's data on the page (line's points for ink_line): point i of (xs, ys) through the axes. */
typedef struct on_page {
    const axes *a;
    vec xs, ys;
} on_page;

static int page_point(const void *ctx, size_t i, double p[2]) {
    const on_page *g = ctx;
    p[0] = ax_x(g->a, g->xs.v[i]), p[1] = ax_y(g->a, g->ys.v[i]);
    return 1; /* not finite (a null in plots.json, or off any scale): ink_line breaks the line */
}

/* ys against xs as a line (a null breaks it), clipped to the plot area. For speed (pictures end
 * every training run): on an image, drawn into its pixels by ink_line (cli/ink.h: the union of
 * the segments, as cairo strokes it, in about two thirds of the time); otherwise stroked in pieces of
 * 64 points, the dash pattern carried across (one long path costs cairo a self-intersection
 * search), with cairo's fast antialiasing. */
static void line(cairo_t *cr, const axes *a, vec xs, vec ys, const style *s) {
    static const double dash[] = {6, 4};
    size_t n = xs.n < ys.n ? xs.n : ys.n;
    cairo_surface_t *sf = cairo_get_target(cr);
    if (cairo_surface_get_type(sf) == CAIRO_SURFACE_TYPE_IMAGE) {
        cairo_surface_flush(sf);
        uint32_t *px = (uint32_t *)cairo_image_surface_get_data(sf);
        if (!px) return; /* a surface in error: nothing to draw on */
        on_page g = {a, xs, ys};
        ink_pen pen = {s->rgb, s->width, s->dashed};
        ink_line(px, (size_t)cairo_image_surface_get_stride(sf) / 4, ink_area(a->px, a->py, a->pw, a->ph, W, H), n,
                 page_point, &g, &pen);
        cairo_surface_mark_dirty(sf);
        return;
    }
    cairo_save(cr);
    cairo_rectangle(cr, a->px, a->py, a->pw, a->ph);
    cairo_clip(cr);
    pen(cr, s);
    cairo_set_antialias(cr, CAIRO_ANTIALIAS_FAST);
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
    int k = 0;                       /* points in the current piece */
    double lx = 0, ly = 0, dist = 0; /* the last point, and the length drawn (for the dashes) */
    for (size_t i = 0; i < n; i++) {
        double x = ax_x(a, xs.v[i]), y = ax_y(a, ys.v[i]);
        if (!isfinite(x) || !isfinite(y)) {
            k = 0;
            continue;
        }
        if (k) cairo_line_to(cr, x, y), dist += hypot(x - lx, y - ly);
        else cairo_move_to(cr, x, y);
        lx = x, ly = y;
        if (++k == 64) { /* end this piece; the next starts here */
            cairo_stroke(cr);
            if (s->dashed) cairo_set_dash(cr, dash, 2, dist);
            cairo_move_to(cr, x, y);
            k = 1;
        }
    }
    cairo_stroke(cr);
    cairo_restore(cr);
}

/* ys against xs as square dots of side s->width on whole pixels, inside the plot area: filled, or
 * a dashed style's hollow (a one-pixel ring, from 3 pixels: the points of a dashed line told from
 * a solid one's where the lines are too short to see, as a one-epoch history's). On an image the
 * squares are written into its pixels (thousands of them cost cairo's rasterizer milliseconds,
 * this loop microseconds); on a vector surface they are rectangles. */
static void dots(cairo_t *cr, const axes *a, vec xs, vec ys, const style *s) {
    size_t n = xs.n < ys.n ? xs.n : ys.n;
    int w = (int)s->width, h = w / 2, hollow = s->dashed && w >= 3;
    cairo_surface_t *sf = cairo_get_target(cr);
    int raster = cairo_surface_get_type(sf) == CAIRO_SURFACE_TYPE_IMAGE;
    unsigned char *data = NULL;
    int stride = 0;
    ink_box clip = ink_area(a->px, a->py, a->pw, a->ph, W, H);
    int x0 = clip.x0, x1 = clip.x1, y0 = clip.y0, y1 = clip.y1;
    if (raster) {
        cairo_surface_flush(sf);
        data = cairo_image_surface_get_data(sf), stride = cairo_image_surface_get_stride(sf);
        if (!data) return; /* a surface in error: nothing to draw on */
    } else {
        cairo_save(cr);
        cairo_rectangle(cr, a->px, a->py, a->pw, a->ph);
        cairo_clip(cr);
        colour(cr, s->rgb, 1);
    }
    for (size_t i = 0; i < n; i++) {
        double fx = round(ax_x(a, xs.v[i])) - h, fy = round(ax_y(a, ys.v[i])) - h;
        if (!isfinite(fx) || !isfinite(fy)) continue;
        if (!raster) {
            if (hollow) cairo_rectangle(cr, fx + 0.5, fy + 0.5, w - 1, w - 1);
            else cairo_rectangle(cr, fx, fy, w, w);
            continue;
        }
        if (!(fx > x0 - w && fx < x1 && fy > y0 - w && fy < y1)) continue; /* off the plot (and not a NaN) */
        int X = (int)fx, Y = (int)fy;
        for (int y = Y; y < Y + w; y++)
            for (int x = X; x < X + w; x++)
                if (x >= x0 && x < x1 && y >= y0 && y < y1 && !(hollow && x > X && x < X + w - 1 && y > Y && y < Y + w - 1))
                    ((uint32_t *)(data + (size_t)y * stride))[x] = 0xFF000000u | s->rgb;
    }
    if (raster) {
        cairo_surface_mark_dirty(sf);
    } else {
        if (hollow) {
            cairo_set_line_width(cr, 1);
            cairo_set_dash(cr, NULL, 0, 0);
            cairo_stroke(cr);
        } else {
            cairo_fill(cr);
        }
        cairo_restore(cr);
    }
}

/* Where a legend goes: a corner inside the plot area, or beside it on the right (OUTSIDE: the
 * chart leaves room for it, LEGEND_W). */
enum { TOP_RIGHT = 0, TOP_LEFT = 1, BOTTOM_RIGHT = 2, BOTTOM_LEFT = 3, OUTSIDE = 4 };
#define LEGEND_W 140

/* How a legend shows a series: its line, its dot, or its line with its dot on it (the dots of
 * its points, dots' own: filled, or a dashed style's hollow). */
enum { MARK_LINE = 0, MARK_DOT = 1, MARK_BOTH = 2 };

typedef struct box {
    double x, y, w, h, fs; /* fs: the labels' type size */
} box;

/* Where a legend of s's n labels goes (a corner: TOP_RIGHT ...), and its labels' type size: 12,
 * or down to 8 outside the plot where 12 would run past the picture's edge, and down to 9 inside
 * it where the box would be wider than room (0: any width). */
static box legend_box(cairo_t *cr, const axes *a, const style *s, int n, int corner, double room) {
    double tw = 0, fs = 12;
    if (corner == OUTSIDE) room = W - 4 - (a->px + a->pw + 10);
    for (int i = 0; i < n && room > 46; i++) fs = fmin(fs, fit(cr, 12, 0, room - 46, corner == OUTSIDE ? 8 : 9, s[i].label));
    for (int i = 0; i < n; i++) tw = fmax(tw, text_width(cr, fs, s[i].label));
    box b = {.w = tw + 46, .h = n * 18 + 8, .fs = fs};
    b.x = corner == OUTSIDE ? a->px + a->pw + 10 : corner & 1 ? a->px + 8 : a->px + a->pw - b.w - 8;
    b.y = corner & 2 ? a->py + a->ph - b.h - 8 : corner == OUTSIDE ? a->py : a->py + 8;
    return b;
}

/* The legend in box b. Returns its bottom edge. */
static double legend_at(cairo_t *cr, box b, const style *s, int n, int mark) {
    double lh = 18, fs = b.fs, x = b.x, y = b.y, bw = b.w, bh = b.h;
    colour(cr, 0xFFFFFF, 0.9);
    cairo_rectangle(cr, x, y, bw, bh);
    cairo_fill_preserve(cr);
    colour(cr, GREY, 1);
    cairo_set_line_width(cr, 1);
    cairo_set_dash(cr, NULL, 0, 0);
    cairo_stroke(cr);
    for (int i = 0; i < n; i++) {
        double cy = y + 4 + lh * (i + 0.5);
        pen(cr, &s[i]);
        if (mark != MARK_DOT) {
            cairo_set_line_width(cr, fmax(s[i].width, 2));
            cairo_move_to(cr, x + 8, cy), cairo_line_to(cr, x + 32, cy);
            cairo_stroke(cr);
        }
        if (mark == MARK_DOT) {
            cairo_rectangle(cr, x + 16, cy - 3, 6, 6);
            cairo_fill(cr);
        } else if (mark == MARK_BOTH) { /* the history's dot: 5 pixels, on a white ground over the line */
            colour(cr, 0xFFFFFF, 1);
            cairo_rectangle(cr, x + 17, cy - 3.5, 7, 7);
            cairo_fill(cr);
            colour(cr, s[i].rgb, 1);
            cairo_set_dash(cr, NULL, 0, 0);
            if (s[i].dashed) {
                cairo_set_line_width(cr, 1);
                cairo_rectangle(cr, x + 18, cy - 2, 4, 4);
                cairo_stroke(cr);
            } else {
                cairo_rectangle(cr, x + 17.5, cy - 2.5, 5, 5);
                cairo_fill(cr);
            }
        }
        colour(cr, BLACK, 1);
        text(cr, x + 38, cy, fs, 0, 0, 0.5, s[i].label);
    }
    return y + bh; /* the box's bottom */
}

/* The legend: each series' mark (MARK_*) and label, one under the other, in a corner (legend_box,
 * any width). Returns the box's bottom edge. */
static double legend(cairo_t *cr, const axes *a, const style *s, int n, int corner, int mark) {
    return legend_at(cr, legend_box(cr, a, s, n, corner, 0), s, n, mark);
}

/* Says why a chart has nothing to show, in its frame. */
static void empty_chart(cairo_t *cr, json_t *doc, const char *what, const char *why) {
    title(cr, doc, what);
    colour(cr, GREY, 1);
    cairo_set_line_width(cr, 1);
    cairo_rectangle(cr, 78.5, 44.5, W - 100, H - 104);
    cairo_stroke(cr);
    colour(cr, BLACK, 1);
    double cx = 78 + (W - 100) / 2.0, y = H / 2.0 + 14;
    text(cr, cx, H / 2.0 - 14, 16, 1, 0.5, 0.5, "This chart is empty");
    char line[160];
    size_t n = strlen(why);
    for (size_t i = 0; i < n && y < H - 70; y += 20) { /* wrapped at a space near 80 characters */
        size_t k = n - i <= 80 ? n - i : 80;
        while (k < n - i && k > 40 && why[i + k] != ' ') k--;
        snprintf(line, sizeof line, "%.*s", (int)k, why + i);
        text(cr, cx, y, 13, 0, 0.5, 0.5, line);
        i += k + (why[i + k] == ' ');
    }
}

/* The signals of p in drawing order (a DPD run's PA(x) and measured y, then the target, the
 * prediction on top), with their look: colour, width, dash and what the legend calls them (gl: room
 * for the labels made here, g x's and a silent signal's). sig[k]: the k-th's index in p's arrays. */
static int looks(json_t *doc, const dpd_plot_data *p, int *sig, style *s, char gl[DPD_PLOT_SIGNALS + 1][64]) {
    int dpd = json_is_true(json_object_get(doc, "dpd"));
    double g = json_number_value(json_object_get(doc, "gain"));
    if (g > 0) snprintf(gl[DPD_PLOT_SIGNALS], 64, "g\xC2\xB7x, g = %.3f", g);
    else snprintf(gl[DPD_PLOT_SIGNALS], 64, "g\xC2\xB7x, no gain"); /* a silent x or y (the warning says which) */
    static const char *const order[] = {"no_dpd", "measured", "target", "linear", "prediction", "output"};
    int n = 0;
    for (size_t i = 0; i < sizeof order / sizeof *order && n < DPD_PLOT_SIGNALS; i++) {
        int k = -1;
        for (int j = 0; j < p->nsig; j++)
            if (k < 0 && !strcmp(p->name[j], order[i])) k = j;
        if (k < 0) continue;
        const char *name = order[i];
        sig[n] = k;
        /* one look per signal on every chart: the capture's y blue, g x black, a model's output vermillion */
        s[n] = !strcmp(name, "no_dpd")       ? (style){SKY, 1.4, 1, "PA model, no DPD"}
               : !strcmp(name, "measured")   ? (style){BLUE, 1.4, 0, "measured y, no DPD"}
               : !strcmp(name, "target")     ? dpd ? (style){BLACK, 2.2, 0, "target g\xC2\xB7x"} : (style){BLUE, 2.2, 0, "measured y"}
               : !strcmp(name, "linear")     ? (style){BLACK, 2.2, 0, gl[DPD_PLOT_SIGNALS]}
               : !strcmp(name, "prediction") ? (style){VERMILLION, 1.2, 0, dpd ? "PA model + DPD" : "PA model"}
                                             : (style){BLUE, 1.4, 0, "measured y"};
        if (p->silent[k]) { /* drawn nowhere: the legend says why */
            snprintf(gl[n], 64, "%s (silent: all zero)", s[n].label);
            s[n].label = gl[n];
        }
        n++;
    }
    return n;
}

/* Page layout of a one-panel chart: the plot area. */
#define PX 78
#define PY 44
#define PW (W - PX - 22)
#define PH (H - PY - 60)

/* The main and adjacent channels the ACLR sums, shaded (under the lines; band_names marks their
 * edges and names them). */
static void bands(cairo_t *cr, const axes *a, const dpd_plot_data *p) {
    for (int i = 0; p->bands && i < 3; i++) {
        double x0 = ax_x(a, p->band[i][0]), x1 = ax_x(a, p->band[i][1]);
        colour(cr, i ? YELLOW : GREY, i ? 0.35 : 0.16);
        cairo_rectangle(cr, x0, a->py, x1 - x0, a->ph);
        cairo_fill(cr);
    }
}

/* Text s at (x, y) (anchored as text() does) on a white ground, readable over the lines. */
static void label(cairo_t *cr, double x, double y, double size, double ax, double ay, const char *s) {
    cairo_text_extents_t t;
    font(cr, size, 0);
    cairo_text_extents(cr, s, &t);
    colour(cr, 0xFFFFFF, 0.8);
    cairo_rectangle(cr, x - ax * t.width - 2, y - ay * t.height - 1, t.width + 4, t.height + 2);
    cairo_fill(cr);
    colour(cr, 0x333333, 1);
    text(cr, x, y, size, 0, ax, ay, s);
}

/* The bands' edges as dashed lines and their names at the top of the plot, over the lines (drawn
 * after them); with reference,
 * where the main channel has sub-channels, a bracket at the bottom (under the spectra, 100 dB
 * below their peak) under the one the prediction's ACLR divides by. */
static void band_names(cairo_t *cr, const axes *a, const dpd_plot_data *p, int reference) {
    /* the edges first, dashed: the two shades are one grey in print (over the lines, so that no
     * line's edge blends into them: one colour more in the picture, not hundreds) */
    static const double dash[] = {4, 3};
    cairo_save(cr);
    colour(cr, 0x555555, 1);
    cairo_set_line_width(cr, 1);
    cairo_set_dash(cr, dash, 2, 0);
    double drawn[6];
    for (int i = 0, n = 0; p->bands && i < 6; i++) { /* on whole pixels (crisp), each edge once */
        double x = floor(ax_x(a, p->band[i / 2][i % 2])) + 0.5;
        int seen = 0;
        for (int k = 0; k < n; k++) seen |= drawn[k] == x;
        if (seen) continue;
        drawn[n++] = x;
        cairo_move_to(cr, x, a->py), cairo_line_to(cr, x, a->py + a->ph);
    }
    cairo_stroke(cr);
    cairo_restore(cr);
    for (int i = 0; p->bands && i < 3; i++) {
        double x0 = ax_x(a, p->band[i][0]), x1 = ax_x(a, p->band[i][1]);
        label(cr, (x0 + x1) / 2, a->py + 5, 11, 0.5, 0, i ? "adj." : "main channel");
    }
    if (reference && p->bands && p->ref_band[1] - p->ref_band[0] < p->band[0][1] - p->band[0][0]) {
        double x0 = ax_x(a, p->ref_band[0]), x1 = ax_x(a, p->ref_band[1]), y = a->py + a->ph - 20;
        colour(cr, 0x333333, 1);
        cairo_set_line_width(cr, 1.2);
        cairo_move_to(cr, x0, y - 5);
        cairo_line_to(cr, x0, y);
        cairo_line_to(cr, x1, y);
        cairo_line_to(cr, x1, y - 5);
        cairo_stroke(cr);
        label(cr, (x0 + x1) / 2, y + 3, 11, 0.5, 0, "ACLR ref.");
    }
}

/* The PSD's axis: power per bin, with the bins' width (the legacy profile's per-segment periodogram:
 * its resolution), or a Welch density. buf: room for the label. */
static const char *psd_label(const dpd_plot_data *p, char *buf, size_t n) {
    if (p->profile != DPD_PROFILE_LEGACY) return "power density (dB/Hz)";
    char hz[64]; /* fs / nperseg: the periodogram's bins (the plot data draw every k-th of them past 4 000) */
    snprintf(buf, n, "power per %s bin (dB)", cli_hz(p->fs_mhz * 1e6 / p->N, hz, sizeof hz));
    return buf;
}

/* The legend of a spectrum chart (a, p's frequencies) of n series s drawn as ys: under the bands'
 * names, which it would hide, in a top corner beside the adjacent channels where its type fits there
 * (down to 9), the corner whose box hides fewer of the curves' points (the right on a tie). */
static void spectrum_legend(cairo_t *cr, const axes *a, const dpd_plot_data *p, const style *s, const double *const *ys, int n) {
    axes under = *a;
    if (p->bands) under.py += 18, under.ph -= 18;
    double room[2] = {0, 0};
    if (p->bands) room[0] = a->px + a->pw - ax_x(a, p->band[2][1]) - 12, room[1] = ax_x(a, p->band[1][0]) - a->px - 12;
    box b[2];
    long hidden[2] = {0, 0};
    for (int c = 0; c < 2; c++) {
        b[c] = legend_box(cr, &under, s, n, c ? TOP_LEFT : TOP_RIGHT, room[c]);
        for (int i = 0; i < n; i++)
            for (size_t k = 0; k < p->nf; k++) {
                double x = ax_x(a, p->freq[k]), y = ax_y(a, ys[i][k]);
                hidden[c] += x >= b[c].x && x <= b[c].x + b[c].w && y >= b[c].y && y <= b[c].y + b[c].h;
            }
    }
    legend_at(cr, b[hidden[1] < hidden[0]], s, n, MARK_LINE);
}

/* What the PSD's figures (doc's "adjacent") warn of, into note: a DPD that leaves the adjacent
 * channels worse than no DPD (through the PA model), or a PA model 3 dB or more below the capture's
 * figure (it misses the PA's spectral regrowth). 0: nothing. */
static int psd_warning(json_t *doc, char *note, size_t n) {
    json_t *a = json_object_get(doc, "adjacent"), *sr = json_object_get(a, "series");
    const char *key = json_string_value(json_object_get(a, "metric"));
    json_t *pred = json_object_get(sr, "prediction"), *other = json_object_get(sr, "no_dpd"), *y = json_object_get(sr, "target");
    if (!key || !figure(pred)) return 0;
    double v = json_number_value(pred);
    if (figure(other) && v > json_number_value(other))
        return snprintf(note, n, "with DPD the %.4s is %.1f dB worse than without it", key, v - json_number_value(other)) > 0;
    if (figure(y) && v <= json_number_value(y) - 3)
        return snprintf(note, n, "the PA model's %.4s is %.1f dB below the measured y's: it misses the PA's regrowth", key,
                        json_number_value(y) - v) > 0;
    return 0;
}

/* PSD of every series over frequency, with the ACLR's bands; y from the peak down 100 dB. */
static void chart_psd(cairo_t *cr, const plot_doc *d) {
    char yl[96];
    const dpd_plot_data *p = d->p;
    if (p->why_no_psd[0]) {
        empty_chart(cr, d->doc, "Power spectral density", p->why_no_psd);
        return;
    }
    vec f = {p->freq, p->nf};
    int sig[DPD_PLOT_SIGNALS];
    style s[DPD_PLOT_SIGNALS];
    char gl[DPD_PLOT_SIGNALS + 1][64];
    int n = looks(d->doc, p, sig, s, gl);
    json_t *adj = json_object_get(d->doc, "adjacent");
    const char *key = json_string_value(json_object_get(adj, "metric"));
    char named[DPD_PLOT_SIGNALS][96];
    for (int i = 0; i < n && key; i++) { /* each series' figure on this split, as the run recorded it */
        json_t *v = json_object_get(json_object_get(adj, "series"), p->name[sig[i]]);
        if (!figure(v) || p->silent[sig[i]]) continue;
        snprintf(named[i], sizeof named[i], "%s (%.4s %.1f dBc)", s[i].label, key, json_number_value(v));
        s[i].label = named[i];
    }
    range xr = EMPTY_RANGE, yr = EMPTY_RANGE;
    grow(&xr, f);
    for (int i = 0; i < n; i++) grow(&yr, (vec){p->psd[sig[i]], p->nf});
    yr.lo = fmax(yr.lo, yr.hi - 100);
    title(cr, d->doc, "Power spectral density");
    axes a = axes_at(PX, PY, PW, PH, xr, yr, 1, 0);
    axes_draw(cr, &a, "frequency (MHz)", psd_label(d->p, yl, sizeof yl));
    bands(cr, &a, p);
    for (int i = 0; i < n; i++) line(cr, &a, f, (vec){p->psd[sig[i]], p->nf}, &s[i]);
    band_names(cr, &a, p, 1);
    const double *ys[DPD_PLOT_SIGNALS];
    for (int i = 0; i < n; i++) ys[i] = p->psd[sig[i]];
    spectrum_legend(cr, &a, p, s, ys, n);
    char note[160];
    if (psd_warning(d->doc, note, sizeof note)) { /* under the x axis, where AM/PM says what it leaves out */
        colour(cr, 0xA33A00, 1);
        text(cr, PX + PW, PY + PH + 42, 11, 0, 1, 0, note);
    }
}

/* The spectrum of prediction - target, over the target's own spectrum for scale. */
static void chart_residual(cairo_t *cr, const plot_doc *d) {
    char yl[96];
    const dpd_plot_data *p = d->p;
    if (p->why_no_psd[0]) {
        empty_chart(cr, d->doc, "Residual spectrum (error)", p->why_no_psd);
        return;
    }
    vec f = {p->freq, p->nf}, res = {p->residual, p->nf};
    int sig[DPD_PLOT_SIGNALS];
    style look[DPD_PLOT_SIGNALS];
    char gl[DPD_PLOT_SIGNALS + 1][64];
    int n = looks(d->doc, p, sig, look, gl), dpd = json_is_true(json_object_get(d->doc, "dpd"));
    const char *ref = strcmp(p->name[0], "target") ? "linear" : "target"; /* signal 0 */
    style s[2] = {{BLACK, 2.2, 0, ref}, {VERMILLION, 1.4, 0, "y \xE2\x88\x92 g\xC2\xB7x"}}; /* the reference as it looks everywhere */
    if (!strcmp(ref, "target")) s[1].label = dpd ? "PA model + DPD \xE2\x88\x92 g\xC2\xB7x" : "PA model \xE2\x88\x92 measured y";
    json_t *e = json_object_get(json_object_get(d->doc, "error"), "value");
    char named[96];
    if (figure(e)) { /* its power against the target's: the NMSE, as the run recorded it */
        snprintf(named, sizeof named, "%s (NMSE %.1f dB)", s[1].label, json_number_value(e));
        s[1].label = named;
    }
    for (int i = 0; i < n; i++)
        if (sig[i] == 0) s[0] = look[i];
    range xr = EMPTY_RANGE, yr = EMPTY_RANGE;
    grow(&xr, f);
    grow(&yr, res);
    grow(&yr, (vec){p->psd[0], p->nf});
    yr.lo = fmax(yr.lo, yr.hi - 100);
    title(cr, d->doc, "Residual spectrum (error)");
    axes a = axes_at(PX, PY, PW, PH, xr, yr, 1, 0);
    axes_draw(cr, &a, "frequency (MHz)", psd_label(d->p, yl, sizeof yl));
    bands(cr, &a, p);
    line(cr, &a, f, (vec){p->psd[0], p->nf}, &s[0]);
    line(cr, &a, f, res, &s[1]);
    band_names(cr, &a, p, 0);
    spectrum_legend(cr, &a, p, s, (const double *const[]){p->psd[0], p->residual}, 2);
}

/* The k-th smallest of v[0, n) (from 0; v reordered, no NaN): Hoare's selection, the pivot the
 * median of three. What sorting v gives at k, in a tenth of the time (AM/PM's 8 000 points). */
static double kth(double *v, long n, long k) {
    long lo = 0, hi = n - 1;
    while (lo < hi) {
        double a = v[lo], b = v[lo + (hi - lo) / 2], c = v[hi];
        double p = a < b ? (b < c ? b : a < c ? c : a) : (a < c ? a : b < c ? c : b);
        long i = lo, j = hi;
        while (i <= j) { /* v[lo, i) <= p <= v(j, hi] */
            while (v[i] < p) i++;
            while (v[j] > p) j--;
            if (i <= j) {
                double t = v[i];
                v[i++] = v[j], v[j--] = t;
            }
        }
        if (k <= j) hi = j;
        else if (k >= i) lo = i;
        else return v[k]; /* between the two parts: equal to p */
    }
    return v[k];
}

/* AM/AM (ys: p->am) or AM/PM (p->pm): every series' points against the input amplitude. AM/PM's
 * y range holds the middle 99 % of the points (the phase of near-zero samples is noise over +-180
 * degrees). */
static void chart_scatter(cairo_t *cr, const plot_doc *d, double *const *ys, const char *what, const char *ylabel,
                          int where) {
    const dpd_plot_data *p = d->p;
    int pm = ys == p->pm, sig[DPD_PLOT_SIGNALS];
    vec in = {p->amp, p->na};
    style s[DPD_PLOT_SIGNALS];
    char gl[DPD_PLOT_SIGNALS + 1][64];
    int n = looks(d->doc, p, sig, s, gl);
    range xr = {0, -INFINITY}, yr = pm ? EMPTY_RANGE : (range){0, -INFINITY};
    grow(&xr, in);
    if (pm) {
        size_t m = 0, cap = (size_t)n * p->na;
        double *v = malloc((cap ? cap : 1) * sizeof *v);
        for (int i = 0; v && i < n; i++)
            for (size_t j = 0; j < p->na; j++)
                if (isfinite(ys[sig[i]][j])) v[m++] = ys[sig[i]][j];
        if (v && m) {
            yr.lo = kth(v, (long)m, (long)(m / 200)), yr.hi = kth(v, (long)m, (long)(m - 1 - m / 200));
            double pad = 0.1 * (yr.hi - yr.lo);
            yr.lo -= pad, yr.hi += pad;
        }
        free(v);
    } else {
        for (int i = 0; i < n; i++) grow(&yr, (vec){ys[sig[i]], p->na});
    }
    for (int i = 0; i < n; i++) s[i].width = sig[i] == 0 ? 3 : 2; /* the target, or g x */
    title(cr, d->doc, what);
    axes a = axes_at(PX, PY, PW, PH, xr, yr, 0, 0);
    axes_draw(cr, &a, "input amplitude |x| (data units)", ylabel);
    for (int i = 0; i < n; i++) dots(cr, &a, in, (vec){ys[sig[i]], p->na}, &s[i]);
    legend(cr, &a, s, n, where, MARK_DOT);
    size_t off = 0, all = 0; /* AM/PM's axis leaves out the outer 0.5 % of each end: say how many it left */
    for (int i = 0; pm && i < n; i++)
        for (size_t j = 0; j < p->na; j++) {
            double v = ys[sig[i]][j];
            all += isfinite(v), off += isfinite(v) && (v < a.y0 || v > a.y1);
        }
    if (off) {
        char note[128];
        snprintf(note, sizeof note, "%zu of the %zu points drawn lie beyond the phase axis", off, all);
        colour(cr, GREY, 1);
        text(cr, PX + PW, PY + PH + 42, 11, 0, 1, 0, note);
    }
}

static void chart_amam(cairo_t *cr, const plot_doc *d) {
    chart_scatter(cr, d, d->p->am, "AM/AM: output amplitude against input amplitude", "output amplitude |y| (data units)",
                  TOP_LEFT);
}

static void chart_ampm(cairo_t *cr, const plot_doc *d) {
    chart_scatter(cr, d, d->p->pm, "AM/PM: phase shift against input amplitude",
                  "phase of output \xE2\x88\x92 input (degrees)", TOP_RIGHT);
}

/* I (top) and Q (bottom) of the first IQ_DRAWN of the plot data's samples (it holds DPD_PLOT_IQ): about two pixels
 * a sample, where each sample and the model's tracking of it can be seen (a thousand in 560 pixels
 * were one band). */
#define IQ_DRAWN 250
static void chart_iq(cairo_t *cr, const plot_doc *d) {
    const dpd_plot_data *p = d->p;
    int sig[DPD_PLOT_SIGNALS];
    style s[DPD_PLOT_SIGNALS];
    char gl[DPD_PLOT_SIGNALS + 1][64], what[64];
    int n = looks(d->doc, p, sig, s, gl);
    size_t ni = p->ni < IQ_DRAWN ? p->ni : IQ_DRAWN;
    double *k = malloc((ni ? ni : 1) * sizeof *k); /* the sample numbers */
    for (size_t i = 0; k && i < ni; i++) k[i] = (double)i;
    vec t = {k, k ? ni : 0};
    range xr = EMPTY_RANGE, yr = EMPTY_RANGE;
    grow(&xr, t);
    for (int i = 0; i < n; i++) grow(&yr, (vec){p->i[sig[i]], ni}), grow(&yr, (vec){p->q[sig[i]], ni});
    snprintf(what, sizeof what, "I/Q: the first %zu samples", ni);
    title(cr, d->doc, what);
    double ph = (H - PY - 60 - 20) / 2.0;
    for (int c = 0; c < 2; c++) {
        axes a = axes_at(PX, PY + c * (ph + 20), PW - LEGEND_W, ph, xr, yr, 1, 1);
        axes_draw(cr, &a, c ? "sample" : NULL, c ? "Q (data units)" : "I (data units)");
        for (int i = 0; i < n; i++) line(cr, &a, t, (vec){c ? p->q[sig[i]] : p->i[sig[i]], ni}, &s[i]);
        if (!c) legend(cr, &a, s, n, OUTSIDE, MARK_LINE);
    }
    free(k);
}

/* A baseline of the learning curves from x0 to x1 at pixel row y: one crisp grey row (no blends: a
 * palette PNG), the capture's dotted, the PA model's dash-dotted (dashes are the test split's). */
static void baseline(cairo_t *cr, double x0, double x1, double y, int model) {
    static const double dots[] = {2, 2}, dashdot[] = {8, 3, 2, 3};
    cairo_save(cr);
    colour(cr, GREY, 1);
    cairo_set_line_width(cr, 1);
    cairo_set_dash(cr, model ? dashdot : dots, model ? 4 : 2, 0);
    cairo_set_antialias(cr, CAIRO_ANTIALIAS_NONE);
    cairo_move_to(cr, x0, y), cairo_line_to(cr, x1, y);
    cairo_stroke(cr);
    cairo_restore(cr);
}

/* Column `name` of the history: its value in each row, NaN where there is none (malloc'd: rows
 * values, or NULL). db: 10 log10 of each value instead (a loss in dB), NaN where it has none. */
static int has_column(json_t *h, const char *name) {
    json_t *v;
    size_t i;
    json_array_foreach(json_object_get(h, "columns"), i, v) if (!strcmp(json_string_value(v) ? json_string_value(v) : "", name)) return 1;
    return 0;
}

static double *column(json_t *h, const char *name, int db) {
    json_t *cols = json_object_get(h, "columns"), *rows = json_object_get(h, "rows"), *v;
    size_t k = json_array_size(cols), i, n = json_array_size(rows);
    double *out = malloc((n ? n : 1) * sizeof *out);
    if (!out) return NULL;
    json_array_foreach(cols, i, v) if (!strcmp(json_string_value(v) ? json_string_value(v) : "", name)) k = i;
    json_array_foreach(rows, i, v) {
        json_t *x = json_array_get(v, k); /* NULL past the row's end */
        double y = json_is_number(x) ? json_number_value(x) : NAN;
        out[i] = !db ? y : y > 0 ? 10 * log10(y) : NAN;
    }
    return out;
}

/* The learning curves: the losses (top, in dB) and val/test NMSE, EVM and ACLR_AVG (bottom), or
 * the run's metric profile's IBE and ACPR_AVG in their place; with the run's "baselines" (plots.json)
 * as grey lines across the bottom panel, named with their values in a key under the legend: the test ACLR_AVG of the capture's
 * y (a PA model's to compare with; a DPD's without DPD) and, a DPD run's, of the PA model without DPD. */
static void chart_history(cairo_t *cr, const plot_doc *d) {
    json_t *h = json_object_get(d->doc, "history");
    size_t rows = json_array_size(json_object_get(h, "rows"));
    if (!rows) {
        empty_chart(cr, d->doc, "Learning curves", "the run has no history.csv rows (no epoch completed)");
        return;
    }
    double *ep = column(h, "EPOCH", 0), *loss[3] = {column(h, "TRAIN_LOSS", 1), column(h, "VAL_LOSS", 1),
                                                    column(h, "TEST_LOSS", 1)};
    static const char *const met[3][2] = {{"NMSE", "NMSE"}, {"EVM", "IBE"}, {"ACLR_AVG", "ACPR_AVG"}};
    const char *name[3];
    double *m[6];
    for (int i = 0; i < 6; i++) {
        char c[32];
        snprintf(c, sizeof c, "VAL_%s", met[i / 2][0]);
        name[i / 2] = met[i / 2][!has_column(h, c)]; /* the legacy name, or the other profiles' */
        snprintf(c, sizeof c, "%s_%s", i % 2 ? "TEST" : "VAL", name[i / 2]);
        m[i] = column(h, c, 0);
    }
    style ls[3] = {{ORANGE, 2, 0, "train loss"}, {BLUE, 2, 0, "val loss"}, {VERMILLION, 2, 1, "test loss"}};
    style ms[5] = {{BLUE, 2, 0, name[0]}, {GREEN, 2, 0, name[1]}, {PURPLE, 2, 0, name[2]}, {BLACK, 2, 0, "val"}, {BLACK, 2, 1, "test"}};
    json_t *bl = json_object_get(d->doc, "baselines");
    int dpd = json_is_true(json_object_get(d->doc, "dpd"));
    double base[2]; /* the test split's name[2] without DPD: the capture's (measured), the PA model's */
    for (int k = 0; k < 2; k++) {
        json_t *v = json_object_get(json_object_get(json_object_get(bl, k ? "no_dpd" : "measured"), "test"), name[2]);
        base[k] = json_is_number(v) ? json_number_value(v) : NAN;
    }
    int ok = ep != NULL;
    for (int i = 0; i < 3; i++) ok &= loss[i] != NULL;
    for (int i = 0; i < 6; i++) ok &= m[i] != NULL;
    if (ok) {
        range xr = EMPTY_RANGE, y1 = EMPTY_RANGE, y2 = EMPTY_RANGE;
        grow(&xr, (vec){ep, rows});
        for (int i = 0; i < 3; i++) grow(&y1, (vec){loss[i], rows});
        for (int i = 0; i < 6; i++) grow(&y2, (vec){m[i], rows});
        grow(&y2, (vec){base, 2});
        int few = rows <= 40; /* markers on the points too */
        title_of(cr, d->doc, "Learning curves", "every split, by epoch"); /* (train, val, test) */
        double ph = (H - PY - 60 - 20) / 2.0;
        axes a = axes_at(PX, PY, PW - LEGEND_W, ph, xr, y1, 0, 1), b = axes_at(PX, PY + ph + 20, PW - LEGEND_W, ph, xr, y2, 0, 1);
        axes_draw(cr, &a, NULL, "loss (dB, 10 log10 MSE)");
        axes_draw(cr, &b, "epoch", "metric (dB, dBc)");
        for (int i = 0; i < 3; i++) {
            line(cr, &a, (vec){ep, rows}, (vec){loss[i], rows}, &ls[i]);
            if (few) dots(cr, &a, (vec){ep, rows}, (vec){loss[i], rows}, &(style){ls[i].rgb, 5, ls[i].dashed, ""});
        }
        for (int k = 0; k < 2; k++) /* the baselines under the curves, named in a key of their own */
            if (isfinite(base[k])) baseline(cr, b.px, b.px + b.pw, floor(ax_y(&b, base[k])) + 0.5, k);
        for (int i = 0; i < 6; i++) {
            style s = ms[i / 2];
            s.dashed = i % 2;
            line(cr, &b, (vec){ep, rows}, (vec){m[i], rows}, &s);
            if (few) dots(cr, &b, (vec){ep, rows}, (vec){m[i], rows}, &(style){s.rgb, 5, s.dashed, ""});
        }
        legend(cr, &a, ls, 3, OUTSIDE, few ? MARK_BOTH : MARK_LINE);
        double under = legend(cr, &b, ms, 5, OUTSIDE, few ? MARK_BOTH : MARK_LINE);
        int nb = isfinite(base[0]) + isfinite(base[1]);
        if (nb) { /* their key, under the metrics' legend: what they are, and their values */
            double x = b.px + b.pw + 10, y = under + 8, bw = LEGEND_W - 12, top = dpd ? 32 : 20,
                   bh = top + nb * 18 + 4;
            colour(cr, 0xFFFFFF, 1);
            cairo_rectangle(cr, x, y, bw, bh);
            cairo_fill_preserve(cr);
            colour(cr, GREY, 1);
            cairo_set_line_width(cr, 1);
            cairo_stroke(cr);
            char head[64], label[64];
            snprintf(head, sizeof head, "%s, test (dBc)", name[2]);
            colour(cr, BLACK, 1);
            text(cr, x + 6, y + 11, fit(cr, 11, 1, bw - 12, 8, head), 1, 0, 0.5, head);
            if (dpd) text(cr, x + 6, y + 24, 11, 0, 0, 0.5, "without DPD:");
            double fs = 11; /* one size for both, the one that fits the longer */
            for (int k = 0; k < 2; k++) {
                snprintf(label, sizeof label, "%s %.1f", k ? "PA model" : "measured y", base[k]);
                if (isfinite(base[k])) fs = fmin(fs, fit(cr, 11, 0, bw - 32, 8, label));
            }
            for (int k = 0, i = 0; k < 2; k++) {
                if (!isfinite(base[k])) continue;
                double cy = y + top + 18 * (i++ + 0.5);
                baseline(cr, x + 6, x + 24, floor(cy) + 0.5, k);
                snprintf(label, sizeof label, "%s %.1f", k ? "PA model" : "measured y", base[k]);
                colour(cr, BLACK, 1);
                text(cr, x + 28, cy, fs, 0, 0, 0.5, label);
            }
        }
    }
    free(ep);
    for (int i = 0; i < 3; i++) free(loss[i]);
    for (int i = 0; i < 6; i++) free(m[i]);
}

typedef void (*chart_fn)(cairo_t *, const plot_doc *);
static const struct chart {
    const char *name, *what; /* what: the title of the "nothing to plot" picture */
    chart_fn draw;
    int run_only; /* needs a run (its history) */
    int spectral; /* needs the spectra (dpd_plot_spectra) */
} charts[] = {
    {"psd", "Power spectral density", chart_psd, 0, 1},
    {"amam", "AM/AM", chart_amam, 0, 0},
    {"ampm", "AM/PM", chart_ampm, 0, 0},
    {"iq", "I/Q", chart_iq, 0, 0},
    {"residual", "Residual spectrum (error)", chart_residual, 0, 1},
    {"history", "Learning curves", chart_history, 1, 0},
};
#define NCHARTS (sizeof charts / sizeof *charts)
/* The order they are drawn in: AM/AM, AM/PM and I/Q first (2.6 ms in all for the quick run),
 * which need no spectra, while the encoder thread computes them (0.9 to 1.2 ms); the learning
 * curves, the quickest to encode, last, when this thread is left to wait for the encoder. */
static const size_t draw_order[] = {1, 2, 3, 0, 4, 5};
_Static_assert(sizeof draw_order / sizeof *draw_order == NCHARTS, "every chart, once");

/* ---- PNG: the pixels compressed by deflate.c into the PNG container ---------------------------- */

/* zlib's deflate at level 1 (the fastest general setting, through libpng) took 2.5 to 5 ms a
 * chart: half of the end-of-run pictures' time; libdeflate (level 2) 1.1 to 1.6 ms at any level;
 * deflate.c, which looks for runs, a pixel's repeats and the row above only, 0.1 to 0.5 ms for
 * files 10 % smaller.
 * libpng has no way in for data already compressed, so the few bytes around it (PNG's signature
 * and chunks, RFC 2083) are written here, each chunk with its CRC-32 (libdeflate's).
 * A chart is written with a palette, one byte a pixel, where one fits (see palette()): a third
 * of the bytes to compress, and the compressor's time goes with them. */
#define RAW ((size_t)H * (1 + 3 * W)) /* the RGB scanlines: a filter byte (0: none), then R, G, B */
#define RAW_INDEXED ((size_t)H * (1 + W)) /* with a palette: a filter byte, then an index a pixel */
#define MAX_COLOURS 1024                 /* more distinct colours than this: 8-bit RGB */
#define COLOUR_SLOTS 2048                /* the colours' hash table, at most half full */
#define QUANT 8                          /* a palette moves no channel of a pixel by more (of 255) */

/* The distinct colours of an image (the pixels' 24 bits), as it is read: a hash of them (key:
 * the colour | 1 << 24, 0 empty) to their ids, in the order they are met, and by id the colour,
 * the pixels of it and its palette index; then the palette's entries (r, g, b). */
typedef struct colours {
    uint32_t key[COLOUR_SLOTS];
    uint16_t id[COLOUR_SLOTS];
    uint32_t rgb[MAX_COLOURS], count[MAX_COLOURS];
    uint8_t index[MAX_COLOURS];
    int n;
    int16_t pr[256], pg[256], pb[256];
    int np;
} colours;

/* One compressor's scratch and a colour table, for one thread: deflaters[0] the encoder thread's,
 * [1] the drawing thread's (their pages touched by warm_up). */
typedef struct deflater {
    deflate_work w;
    colours c;
} deflater;
static deflater deflaters[2];

/* The id of colour v, a new one if it is new; -1: MAX_COLOURS are met already. */
static int colour_id(colours *c, uint32_t v) {
    uint32_t key = v | 1u << 24;
    for (uint32_t h = v * 2654435761u >> 21;; h = (h + 1) & (COLOUR_SLOTS - 1)) { /* 11 bits: the slots */
        if (c->key[h] == key) return c->id[h];
        if (c->key[h]) continue;
        if (c->n == MAX_COLOURS) return -1;
        c->key[h] = key, c->id[h] = (uint16_t)c->n, c->rgb[c->n] = v, c->count[c->n] = 0;
        return c->n++;
    }
}
_Static_assert(COLOUR_SLOTS == 1 << 11 && COLOUR_SLOTS >= 2 * MAX_COLOURS, "the hash takes 11 bits; half full");

/* The image's runs: within a row, pixels of one colour (their 24 bits). A run's first pixel holds
 * id | length << 16 once colour_ids has passed (the others are left as they were). */
#define RUN(id, len) ((uint32_t)(id) | (uint32_t)(len) << 16)
_Static_assert(MAX_COLOURS <= 1 << 16 && W < 1 << 16, "an id and a run's length share 32 bits");

/* Puts the colours back at the heads of the runs of rows [0, y) and of row y up to x. */
static void run_heads_back(const colours *c, unsigned char *data, int stride, int y, int x) {
    for (int yy = 0; yy <= y; yy++) {
        uint32_t *px = (uint32_t *)(data + (size_t)yy * stride);
        for (int k = 0, end = yy < y ? W : x, len; k < end; k += len) {
            uint32_t v = px[k];
            px[k] = c->rgb[v & 0xFFFF], len = (int)(v >> 16);
            if (!len) break; /* not a head: never, but never loop */
        }
    }
}

/* Marks the runs of the image (H, stride) with RUN(id, length), ids in c in the order their
 * colours are met, counting the pixels of each. Four pixels are compared at a time, a run's end
 * found from their mask (most of a chart is long runs); only the heads are written. 0, or -1 with
 * the pixels as they were (but their top bytes) when there are more than MAX_COLOURS. */
static int colour_ids(colours *c, unsigned char *data, int stride) {
    memset(c->key, 0, sizeof c->key);
    c->n = 0;
    for (int y = 0; y < H; y++) {
        uint32_t *px = (uint32_t *)(data + (size_t)y * stride);
        uint32_t last = px[0] & 0xFFFFFF;
        int id = colour_id(c, last), x0 = 0, x = 1;
        if (id < 0) return run_heads_back(c, data, stride, y, 0), -1;
        for (;;) {
            int b = W; /* the run's end: the next pixel of another colour */
            for (; x + 4 <= W; x += 4) {
                u4 v;
                memcpy(&v, px + x, sizeof v);
                unsigned other = 15 & ~lanes((i4)((v & 0xFFFFFF) == last));
                if (other) {
                    b = x + __builtin_ctz(other);
                    break;
                }
            }
            for (; b == W && x < W; x++)
                if ((px[x] & 0xFFFFFF) != last) b = x;
            if (b == W) break;
            c->count[id] += (uint32_t)(b - x0);
            px[x0] = RUN(id, b - x0);
            last = px[b] & 0xFFFFFF, x0 = b, x = b + 1;
            if ((id = colour_id(c, last)) < 0) return run_heads_back(c, data, stride, y, x0), -1;
        }
        c->count[id] += (uint32_t)(W - x0);
        px[x0] = RUN(id, W - x0);
    }
    return 0;
}

/* The palette's entries by their red: the first of each red value, and the next of the same red
 * (-1: none). */
typedef struct reds {
    int16_t head[256], next[256];
} reds;

/* The largest channel difference between colour v and the nearest of c's entries whose red is
 * within k of v's, the first of them where several are as near (256: none); *at: that entry. The
 * nearest entry of all, wherever that is within k: a channel differs no more than all do. */
static int nearest(const colours *c, const reds *b, uint32_t v, int k, int *at) {
    int r = (int)(v >> 16 & 255), g = (int)(v >> 8 & 255), bl = (int)(v & 255), best = 256, bp = -1;
    for (int rr = r - k < 0 ? 0 : r - k; rr <= r + k && rr < 256; rr++)
        for (int p = b->head[rr]; p >= 0; p = b->next[p]) {
            int d = abs(c->pr[p] - r), e = abs(c->pg[p] - g), f = abs(c->pb[p] - bl);
            d = d > e ? d : e, d = d > f ? d : f;
            if (d < best || (d == best && p < bp)) best = d, bp = p;
        }
    if (at) *at = bp;
    return best;
}

static void entry(colours *c, reds *b, int id) {
    uint32_t v = c->rgb[id];
    int p = c->np++, r = (int)(v >> 16 & 255);
    c->index[id] = (uint8_t)p;
    c->pr[p] = (int16_t)r, c->pg[p] = (int16_t)(v >> 8 & 255), c->pb[p] = (int16_t)(v & 255);
    b->next[p] = b->head[r], b->head[r] = (int16_t)p;
}

static int by_key_down(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x < y) - (x > y);
}

/* The palette of c's colours (c->pr, pg, pb: np entries) and each colour's entry (c->index). At
 * most 256 colours: each its own entry, exactly. More (the antialiased edges of text and lines
 * blend into some 300 to 600): the colours by their pixels, the most first, each an entry of its
 * own unless one already is within k of it in every channel, for the least k that needs at most
 * 256 entries; the entries left go to the commonest of the colours without one, and every colour
 * without one is drawn as its nearest entry. No channel of any pixel moves by more than k, and a
 * colour moves only where a commoner one is that close: the antialiased edges of text and of
 * lines. The quick PA run's charts need k = 1 (AM/AM, AM/PM, I/Q), 3 (the learning curves) and 5
 * (the PSD and the residual, whose two series' edges blend over three backgrounds): 5 of 255
 * is a shade no eye tells, and the PSD as 8-bit RGB was twice the file and the encoder's work (a
 * DPD run's PSD and I/Q, with more than MAX_COLOURS, still are). 0, or -1 where that would need
 * k > QUANT. */
static int palette(colours *c) {
    uint64_t order[MAX_COLOURS]; /* (pixels << 16 | MAX_COLOURS - 1 - id), most pixels first, then id */
    uint8_t own[MAX_COLOURS];    /* by id: has an entry of its own */
    reds b;
    memset(b.head, 0xFF, sizeof b.head);
    c->np = 0;
    if (c->n <= 256) { /* an entry each, in the order met */
        for (int id = 0; id < c->n; id++) entry(c, &b, id);
        return 0;
    }
    for (int i = 0; i < c->n; i++) order[i] = (uint64_t)c->count[i] << 16 | (uint64_t)(MAX_COLOURS - 1 - i);
    qsort(order, (size_t)c->n, sizeof *order, by_key_down);
    for (int k = 1; k <= QUANT; k++) {
        int i;
        c->np = 0;
        memset(b.head, 0xFF, sizeof b.head);
        for (i = 0; i < c->n; i++) {
            int id = MAX_COLOURS - 1 - (int)(order[i] & 0xFFFF);
            if (!(own[id] = nearest(c, &b, c->rgb[id], k, NULL) > k)) continue;
            if (c->np == 256) break;
            entry(c, &b, id);
        }
        if (i < c->n) continue; /* a larger k */
        for (i = 0; i < c->n && c->np < 256; i++) {
            int id = MAX_COLOURS - 1 - (int)(order[i] & 0xFFFF);
            if (!own[id]) own[id] = 1, entry(c, &b, id);
        }
        for (int id = 0; id < c->n; id++) {
            int at = 0;
            if (!own[id]) nearest(c, &b, c->rgb[id], k, &at), c->index[id] = (uint8_t)at;
        }
        return 0;
    }
    return -1;
}

static void be32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16), p[2] = (unsigned char)(v >> 8), p[3] = (unsigned char)v;
}

/* One chunk: its length, type, data and the CRC-32 of type and data. 1 when written. */
static int chunk(FILE *f, const char *type, const unsigned char *data, size_t n) {
    unsigned char head[8], crc[4];
    be32(head, (uint32_t)n);
    memcpy(head + 4, type, 4);
    uint32_t c = libdeflate_crc32(0, head + 4, 4);
    be32(crc, n ? libdeflate_crc32(c, data, n) : c); /* a NULL buffer would start the CRC over */
    return fwrite(head, 1, 8, f) == 8 && (!n || fwrite(data, 1, n, f) == n) && fwrite(crc, 1, 4, f) == 4;
}

/* The pixels (H, stride) of an RGB24 image as a PNG at path, compressed with d: 8-bit indexed
 * with palette() where it fits, else 8-bit RGB. The scanlines are built in place, over the
 * pixels (each is shorter than its row and starts no later: every byte is read before it is
 * written over), so the image is spent. Plain memory in, no cairo: it runs on an encoder thread
 * (see paint()). The compressed stream goes into the image's room after the scanlines (8-bit RGB
 * where that is too small: a buffer of its own). 0, or -1 with errno set. */
static int write_png(unsigned char *data, int stride, deflater *d, const char *path) {
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    unsigned char ihdr[13] = {0, 0, 0, 0, 0, 0, 0, 0, 8, 2, 0, 0, 0}; /* 8 bits, RGB, deflate, no interlace */
    unsigned char plte[3 * 256];
    colours *c = &d->c;
    int indexed = !colour_ids(c, data, stride);
    if (indexed && palette(c)) { /* the runs' heads back to their colours */
        indexed = 0;
        run_heads_back(c, data, stride, H - 1, W);
    }
    for (int y = 0; y < H; y++) {
        const uint32_t *px = (const uint32_t *)(data + (size_t)y * stride); /* cairo: native-endian xRGB */
        unsigned char *o = data + (size_t)y * (1 + (indexed ? 1 : 3) * W);
        if (indexed) { /* run by run: each ends before the next head, which it does not reach */
            for (int x = 0, len; x < W; x += len) {
                uint32_t v = px[x];
                unsigned char b = c->index[v & 0xFFFF];
                len = (int)(v >> 16);
                if (len > 8) memset(o + 1 + x, b, (size_t)len);
                else
                    for (int k = 0; k < len; k++) o[1 + x + k] = b;
            }
        } else {
            for (int x = 0; x < W; x++) {
                uint32_t v = px[x];
                o[1 + 3 * x] = (unsigned char)(v >> 16), o[2 + 3 * x] = (unsigned char)(v >> 8), o[3 + 3 * x] = (unsigned char)v;
            }
        }
        o[0] = 0; /* after the row: on the first, this byte was the first pixel's */
    }
    for (int p = 0; indexed && p < c->np; p++) {
        plte[3 * p] = (unsigned char)c->pr[p], plte[3 * p + 1] = (unsigned char)c->pg[p];
        plte[3 * p + 2] = (unsigned char)c->pb[p];
    }
    size_t raw = indexed ? RAW_INDEXED : RAW, bound = deflate_bound(raw), at = (raw + 63) & ~(size_t)63;
    unsigned char *out = at + bound <= (size_t)H * stride ? data + at : malloc(bound); /* after the scanlines: RGB's own */
    size_t n = out ? deflate_zlib(data, raw, indexed ? 1 : 3, raw / H, &d->w, out, bound) : 0;
    be32(ihdr, W), be32(ihdr + 4, H);
    ihdr[9] = indexed ? 3 : 2;
    FILE *f = n ? fopen(path, "wb") : NULL;
    int ok = f && fwrite(sig, 1, 8, f) == 8 && chunk(f, "IHDR", ihdr, 13) &&
             (!indexed || chunk(f, "PLTE", plte, 3 * (size_t)c->np)) && chunk(f, "IDAT", out, n) && chunk(f, "IEND", NULL, 0);
    if (!out) errno = ENOMEM;
    else if (!n) errno = ENOBUFS; /* not within the bound: never */
    else if (!ok && !errno) errno = EIO;
    if (f && fclose(f) && ok) ok = 0;
    if (out != data + at) free(out);
    return ok ? 0 : -1;
}

/* Draws chart c of d on sf, white first (white: its pixels are white already). Returns cairo's status
 * of the drawing. */
static cairo_status_t render(const struct chart *c, const plot_doc *d, cairo_surface_t *sf, int white) {
    cairo_t *cr = cairo_create(sf);
    colour(cr, 0xFFFFFF, 1);
    if (!white) cairo_paint(cr);
    if (d->p->empty && !c->run_only) empty_chart(cr, d->doc, c->what, d->p->empty);
    else c->draw(cr, d);
    cairo_status_t st = cairo_status(cr);
    cairo_destroy(cr);
    return st;
}

/* Renames the finished temporary file tmp to path; or removes it and says why the picture is not
 * written: path is no file to replace (dpd_replaceable), st, cairo's status of the drawing, or bad,
 * the encoder failed with errno e. */
static dpd_status publish(const char *tmp, const char *path, cairo_status_t st, int bad, int e, dpd_error *err) {
    dpd_status s = !st && !bad ? dpd_replaceable(path, err) : DPD_OK; /* never a link replaced by the rename */
    if (s) {
        unlink(tmp);
        return s;
    }
    if (!st && !bad && !rename(tmp, path)) return DPD_OK;
    if (!st && !bad) e = errno;
    unlink(tmp);
    return cli_err(err, DPD_E_IO, "%s: cannot write the picture: %s", path, st ? cairo_status_to_string(st) : strerror(e));
}

/* Chart c of doc as an SVG at path (written whole to a temporary file, then renamed). */
static dpd_status draw_svg(const struct chart *c, const plot_doc *d, const char *path, dpd_error *err) {
    char tmp[4300];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    cairo_surface_t *sf = cairo_svg_surface_create(tmp, W, H);
    cairo_svg_surface_set_document_unit(sf, CAIRO_SVG_UNIT_PX); /* 800 x 500 pixels, not points */
    cairo_status_t st = render(c, d, sf, 0);
    cairo_surface_finish(sf); /* the SVG is written out here */
    if (!st) st = cairo_surface_status(sf);
    cairo_surface_destroy(sf);
    return publish(tmp, path, st, 0, 0, err);
}

/* A chart drawn as a PNG on an image, sf, to be encoded into tmp (by the encoder thread or, once
 * every chart is drawn, by the main thread: whichever takes it first), then renamed to path
 * (png_finish). */
typedef struct png_job {
    char path[4200], tmp[4300];
    cairo_surface_t *sf;
    unsigned char *data; /* (H, stride) sf's pixels, left alone until encoded (which spends them) */
    int stride;
    cairo_status_t st; /* the drawing failed: nothing to encode */
    int rc, e;         /* write_png's result and errno */
    int done;          /* encoded (under the queue's mu): its image may be drawn on again */
} png_job;

/* The PNGs drawn, in order, and how far the encoders have taken them. A job is filled, then
 * counted in drawn under mu, and taken under mu before it is read; its rc and e are read after
 * the encoder thread is joined: every access is ordered. The encoder thread never uses cairo; it
 * writes only the spectra's fields of the plot data (dpd_plot_spectra), which the drawing reads
 * once spectra is set, under mu. */
typedef struct png_queue {
    pthread_mutex_t mu;
    pthread_cond_t more;  /* a job is drawn, or the drawing is over */
    pthread_cond_t spent; /* a job is encoded */
    pthread_cond_t computed; /* the spectra are in (or failed) */
    png_job job[NCHARTS];
    size_t drawn, taken;
    int over;
    plot_doc *d;   /* the spectra go into its plot data */
    int spectra;   /* 0: being computed; 1: in d->p; -1: failed (doc's status says why) */
    doc_job *doc;  /* plots.json, written by the encoder thread where no chart waits for it */
} png_queue;

/* The next job drawn and not yet taken, waiting for one while the drawing goes on if wait; NULL:
 * none left. */
static png_job *take(png_queue *q, int wait) {
    pthread_mutex_lock(&q->mu);
    while (wait && q->taken == q->drawn && !q->over) pthread_cond_wait(&q->more, &q->mu);
    png_job *j = q->taken < q->drawn ? &q->job[q->taken++] : NULL;
    pthread_mutex_unlock(&q->mu);
    return j;
}

/* Encodes j's pixels into its tmp with d, unless its drawing failed. */
static void encode(png_job *j, deflater *d) {
    errno = 0;
    if (!j->st) j->rc = write_png(j->data, j->stride, d, j->tmp), j->e = errno;
}

/* encode(), then j is told done. */
static void encode_job(png_queue *q, png_job *j, deflater *d) {
    encode(j, d);
    pthread_mutex_lock(&q->mu);
    j->done = 1;
    pthread_cond_broadcast(&q->spent);
    pthread_mutex_unlock(&q->mu);
}

/* The spectra into q's plot data (dpd_plot_spectra); q told. Failed, they are plots.json's
 * failure: no picture is published. */
static void add_spectra(png_queue *q) {
    dpd_error e = {0};
    dpd_status s = dpd_plot_spectra(q->d->p, &q->d->in, &e);
    pthread_mutex_lock(&q->mu);
    q->spectra = s ? -1 : 1;
    if (s) q->doc->s = s, q->doc->err = e;
    pthread_cond_broadcast(&q->computed);
    pthread_mutex_unlock(&q->mu);
}

/* Whether the spectra are in, once they are computed. */
static int spectra_in(png_queue *q) {
    pthread_mutex_lock(&q->mu);
    while (!q->spectra) pthread_cond_wait(&q->computed, &q->mu);
    int in = q->spectra > 0;
    pthread_mutex_unlock(&q->mu);
    return in;
}

/* The encoder thread: the spectra, while the first charts are drawn; then each chart drawn, in
 * order, and plots.json (which needs the spectra) where no chart is waiting. */
static void *encoder(void *queue) {
    png_queue *q = queue;
    add_spectra(q);
    for (int doc = !q->doc->s;;) {
        png_job *j = take(q, !doc);
        if (j) encode_job(q, j, &deflaters[0]);
        else if (doc) doc_write(q->doc), doc = 0;
        else break;
    }
    return NULL;
}

/* The images the charts are drawn on, (SLOTS, H, STRIDE): cairo's RGB24 rows of W pixels, each
 * drawn on again once its chart is encoded (spend); a palette PNG's compressed stream goes into
 * its slot, after its scanlines (write_png). Three: as fast as one a chart (10.9 ms for the quick
 * run's six, 12.4 with two), and half the memory to touch (a fresh page costs a fault: on this
 * project's virtual machines 2 to 20 us). One block, allocated and touched by cli_plot_warm's
 * thread, in 4 KiB pages: asking for 2 MiB pages (MADV_HUGEPAGE) made the kernel compact memory
 * for them in one run of two or three, 8 to 19 ms of that thread's time against 2 to 3 for the
 * small pages' faults, which then ran on into the training. Mapped with MAP_POPULATE, then each
 * page touched: the populate sets up the pages in one call, and the touch (which alone faulted
 * each page in, 14 to 23 ms for the 6 MiB on 2026-12-06) then costs only the hypervisor's own
 * fault of a page on these virtual machines: 7 to 9 ms in all (on bare metal, nothing). NULL: not
 * there, cairo allocates an image per chart. Kept for the process's next pictures and left to its
 * exit, as the fonts are (unmapping it took 0.8 ms). */
#define SLOTS 3
#define STRIDE (W * 4)
static unsigned char *warm_px;

/* Returns once job k is encoded: here, if the encoder thread has not taken it (jobs are taken in
 * order, and every job before k is encoded already). */
static void spend(png_queue *q, size_t k) {
    pthread_mutex_lock(&q->mu);
    png_job *j = q->taken == k ? &q->job[q->taken++] : NULL;
    while (!j && !q->job[k].done) pthread_cond_wait(&q->spent, &q->mu);
    pthread_mutex_unlock(&q->mu);
    if (j) encode_job(q, j, &deflaters[1]);
}

/* Draws chart i of d on an image (a slot of warm_px where it can) into the next job of q, for
 * path, and hands it to the encoders. Returns the drawing's status. */
static cairo_status_t png_draw(png_queue *q, size_t i, const plot_doc *d, const char *path) {
    png_job *j = &q->job[q->drawn]; /* only this thread writes drawn */
    int warm = warm_px && cairo_format_stride_for_width(CAIRO_FORMAT_RGB24, W) == STRIDE;
    snprintf(j->path, sizeof j->path, "%s", path);
    snprintf(j->tmp, sizeof j->tmp, "%s.tmp.%d", path, (int)getpid());
    if (warm && q->drawn >= SLOTS) spend(q, q->drawn - SLOTS); /* the slot's last chart */
    unsigned char *px = warm ? warm_px + q->drawn % SLOTS * H * STRIDE : NULL;
    if (px) memset(px, 0xFF, (size_t)H * STRIDE); /* white (RGB24's top bytes unused): a quarter of cairo_paint's time */
    j->sf = px ? cairo_image_surface_create_for_data(px, CAIRO_FORMAT_RGB24, W, H, STRIDE) : cairo_image_surface_create(CAIRO_FORMAT_RGB24, W, H);
    j->st = render(&charts[i], d, j->sf, px != NULL);
    cairo_surface_flush(j->sf);
    if (!j->st) j->st = cairo_surface_status(j->sf);
    j->data = cairo_image_surface_get_data(j->sf), j->stride = cairo_image_surface_get_stride(j->sf);
    pthread_mutex_lock(&q->mu);
    q->drawn++;
    pthread_cond_signal(&q->more);
    pthread_mutex_unlock(&q->mu);
    return j->st;
}

/* Encodes here what is drawn and not yet taken (without an encoder thread: before the next chart). */
static void drain(png_queue *q) {
    for (png_job *j; (j = take(q, 0));) encode_job(q, j, &deflaters[1]);
}

/* Frees j's image and publishes its picture, once encoded. */
static dpd_status png_finish(png_job *j, dpd_error *err) {
    cairo_surface_destroy(j->sf);
    return publish(j->tmp, j->path, j->st, j->rc, j->e, err);
}

/* Draws once, on image px (a slot, drawn on again later), a few of the charts' pieces: a glyph of
 * each face, one turned (the y label's), a translucent band and a stroke. The first chart then
 * finds cairo's, pixman's and FreeType's code bound and set up; the glyphs each chart is the first
 * to use it renders itself. (Rendering every character at each of the charts' sizes here, as up
 * to 2026-12-07, cost this thread 42 M instructions beside the doctor, which it slowed by 2 to 6
 * ms; the charts' own glyphs cost the drawing thread 5.6 M.) */
static void warm_draw(unsigned char *px) {
    cairo_surface_t *sf = cairo_image_surface_create_for_data(px, CAIRO_FORMAT_RGB24, W, H, STRIDE);
    cairo_t *cr = cairo_create(sf);
    colour(cr, 0xFFFFFF, 1);
    cairo_paint(cr);
    text(cr, 10, 10, 12, 0, 0, 0, "0");
    text(cr, 10, 30, 17, 1, 0, 0, "A");
    cairo_save(cr);
    cairo_translate(cr, 60, 60);
    cairo_rotate(cr, -M_PI / 2);
    text(cr, 0, 0, 13, 0, 0.5, 0.5, "d");
    cairo_restore(cr);
    colour(cr, YELLOW, 0.35);
    cairo_rectangle(cr, 10, 10, 50, 50);
    cairo_fill(cr);
    colour(cr, BLACK, 1);
    cairo_move_to(cr, 0, 0.5), cairo_line_to(cr, 100, 0.5), cairo_stroke(cr);
    cairo_destroy(cr);
    cairo_surface_destroy(sf);
}

/* Sets up the fonts, the deflaters and the charts' pixels, and draws once (warm_draw). */
static void *warm_up(void *unused) {
    fonts_open();
    if (warm_px) return NULL;
    size_t size = SLOTS * H * STRIDE;
    unsigned char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) return NULL;
    for (size_t k = 0; k < size; k += 4096) p[k] = 255; /* each page, once (see SLOTS) */
    warm_px = p;
    memset(deflaters, 0, sizeof deflaters); /* their pages, once */
    warm_draw(warm_px);
    return NULL;
}

static pthread_t warm_thread;
static int warming; /* warm_thread runs (started by cli_plot_warm, joined by cli_plot_warm_wait) */

void cli_plot_warm(void) {
    if (!warming) warming = !pthread_create(&warm_thread, NULL, warm_up, NULL);
}

void cli_plot_warm_wait(void) {
    if (warming) pthread_join(warm_thread, NULL);
    warming = 0;
}

/* The spectra (d's plot data has none yet), the charts, drawn one after the other on this
 * thread, and plots.json (doc). SVGs: the spectra, plots.json, then each chart. PNGs, on the
 * slots' images: an encoder thread computes the spectra while this one draws the charts that
 * need none (draw_order: the others wait for them), then encodes each chart drawn and writes
 * plots.json where none waits; this thread encodes what that one has not taken. Only this thread
 * uses cairo: drawing on two threads at once was faster, but ThreadSanitizer reports races inside
 * cairo's shared state (the fonts and the pixels are set up beside the plot data, by
 * cli_plot_warm's thread, joined before). Stops drawing at the first error; the first error in
 * draw_order is the one told, plots.json's (or the spectra's) before any: then no picture is
 * published. */
static dpd_status paint(const plot_req *r, plot_doc *d, const char *out, doc_job *doc, dpd_error *err) {
    png_queue q = {.mu = PTHREAD_MUTEX_INITIALIZER, .more = PTHREAD_COND_INITIALIZER, .spent = PTHREAD_COND_INITIALIZER,
                   .computed = PTHREAD_COND_INITIALIZER, .d = d, .doc = doc};
    pthread_t th;
    int threaded = !r->svg && !pthread_create(&th, NULL, encoder, &q);
    if (!threaded) {
        add_spectra(&q);
        if (!doc->s) doc_write(doc);
    }
    dpd_status s = threaded ? DPD_OK : doc->s; /* threaded: told once the encoder thread is joined */
    for (size_t k = 0; k < NCHARTS && !s; k++) {
        size_t i = draw_order[k];
        if (charts[i].run_only && !r->run_dir) continue;
        if (charts[i].spectral && !spectra_in(&q)) break;
        char path[4200];
        snprintf(path, sizeof path, "%s/%s.%s", out, charts[i].name, r->svg ? "svg" : "png");
        if (r->svg) {
            s = draw_svg(&charts[i], d, path, err);
            continue;
        }
        if (!threaded) drain(&q);
        if (png_draw(&q, i, d, path)) break;
    }
    pthread_mutex_lock(&q.mu);
    q.over = 1;
    pthread_cond_signal(&q.more);
    pthread_mutex_unlock(&q.mu);
    drain(&q);
    if (threaded) pthread_join(th, NULL);
    pthread_cond_destroy(&q.more);
    pthread_cond_destroy(&q.spent);
    pthread_cond_destroy(&q.computed);
    pthread_mutex_destroy(&q.mu);
    if (doc->s) /* plots.json is not written (or the spectra failed): no picture either */
        for (size_t i = 0; i < q.drawn; i++) q.job[i].st = CAIRO_STATUS_WRITE_ERROR;
    for (size_t i = 0; i < q.drawn; i++) {
        dpd_error later;
        dpd_status t = png_finish(&q.job[i], s || doc->s ? &later : err);
        if (!s) s = t;
    }
    if (doc->s) *err = doc->err;
    return doc->s ? doc->s : s;
}

/* Removes from out the pictures that are not of the set just written (the other format's, a run's
 * learning curves beside a dataset's): a directory holds one set, the one plots.json describes. */
static void unlink_others(const plot_req *r, const char *out) {
    for (size_t i = 0; i < NCHARTS; i++)
        for (int svg = 0; svg < 2; svg++) {
            if (svg == r->svg && (!charts[i].run_only || r->run_dir)) continue;
            char path[4200];
            snprintf(path, sizeof path, "%s/%s.%s", out, charts[i].name, svg ? "svg" : "png");
            unlink(path);
        }
}

/* DPD_OK when every file this job writes in out (plots.json and its charts) may be replaced
 * (dpd_replaceable): a link or a device among them is refused before any work. */
static dpd_status replaceable(const plot_req *r, const char *out, dpd_error *err) {
    char path[4200];
    snprintf(path, sizeof path, "%s/plots.json", out);
    dpd_status s = dpd_replaceable(path, err);
    for (size_t i = 0; !s && i < NCHARTS; i++) {
        if (charts[i].run_only && !r->run_dir) continue;
        snprintf(path, sizeof path, "%s/%s.%s", out, charts[i].name, r->svg ? "svg" : "png");
        s = dpd_replaceable(path, err);
    }
    return s;
}

/* The whole job: plots.json, then every chart drawn from it. out receives the directory. */
static dpd_status plot_write(const plot_req *r, char *out, size_t nout, dpd_error *err) {
    if (r->out) {
        char held[4200];
        if (cli_in_dataset(r->out, r->data, held, sizeof held))
            return cli_err(err, DPD_E_INVAL, "plot: --out %s lies in the dataset %s, and nothing is written into a "
                                             "dataset: choose a directory elsewhere", r->out, held);
        snprintf(out, nout, "%s", r->out);
    } else if (r->run_dir) {
        snprintf(out, nout, "%s/plots", r->run_dir);
    } else { /* a dataset is an input, not written into: plots/NAME here, as runs/ goes (NAME from the
              * resolved path, so that "." and ".." name the directory too), unless here is in it */
        char real[PATH_MAX], here[PATH_MAX];
        const char *p = realpath(r->data, real) ? real : r->data, *slash = strrchr(p, '/');
        size_t n = p == real ? strlen(real) : 0;
        if (n && getcwd(here, sizeof here) && !strncmp(here, real, n) && (!here[n] || here[n] == '/' || n == 1))
            return cli_err(err, DPD_E_INVAL, "plot: the current directory %s is inside the dataset %s, and nothing is "
                                             "written into a dataset: run it from elsewhere, or give --out DIR", here, real);
        snprintf(out, nout, "plots/%s", slash && slash[1] ? slash + 1 : "dataset");
    }
    dpd_status s = replaceable(r, out, err);
    if (s) return s;
    char mine[4300]; /* a directory dpd drew into before (it holds plots.json): its other format's pictures go */
    snprintf(mine, sizeof mine, "%s/plots.json", out);
    int ours = !access(mine, F_OK);
    if (!warming) cli_plot_warm(); /* the fonts and the pixels, beside the plot data */
    plot_doc d;
    char path[4200];
    snprintf(path, sizeof path, "%s/plots.json", out);
    s = gather(r, &d, err);
    doc_job doc = {0};
    if (!s && !(s = make_dirs(out, err))) {
        clean_stale(out);
        s = doc_begin(&d, path, &doc, err);
    }
    cli_plot_warm_wait();
    if (!fonts.lib) fonts_open(); /* the thread did not start */
    if (!s) s = paint(r, &d, out, &doc, err);
    if (!s && ours) unlink_others(r, out);
    doc_end(&doc);
    plot_doc_free(&d);
    return s;
}

int cli_plot_run(const char *run_dir, const cli_plot_opts *o, dpd_error *err) {
    cli_plot_opts d = {0};
    if (!o) o = &d;
    const char *split = o->split ? o->split : o->kept && o->kept->epoch ? "val" : "test";
    const char *format = o->format ? o->format : "png";
    if (!run_dir || (strcmp(split, "test") && strcmp(split, "val")) || (strcmp(format, "png") && strcmp(format, "svg")))
        return cli_err(err, DPD_E_INVAL, "plot: needs a run directory, the split test or val and the format png or svg");
    plot_req r = {.run_dir = run_dir, .split = strcmp(split, "val") ? DPD_TEST : DPD_VAL, .out = o->out_dir,
                  .svg = !strcmp(format, "svg"), .x = o->x, .kept = o->kept};
    char out[4096];
    return plot_write(&r, out, sizeof out, err);
}

/* Says so when RUN_DIR/plots holds another split's pictures (the end of a run draws the validation
 * split's; dpd plot draws the test split's by default) that this call is about to replace. */
static void replacing(const char *run_dir, const char *split) {
    char path[4200], *text = NULL, was[8] = "";
    snprintf(path, sizeof path, "%s/plots/plots.json", run_dir);
    dpd_error err = {0};
    if (dpd_read_file(path, 0, "plots", &text, NULL, &err)) return; /* none (or no regular file: refused when written) */
    const char *at = strstr(text, "\"split\":\""); /* after "run_dir" */
    int other = at && sscanf(at + 9, "%7[a-z]", was) == 1 && strcmp(was, split);
    free(text);
    if (other)
        fprintf(stderr, "dpd: note: replacing the %s split's pictures in %s/plots with the %s split's (--split %s keeps "
                        "them, --out DIR writes elsewhere)\n", was, run_dir, split, was);
}

static const char *const usage =
    "dpd plot RUN_DIR [--split test|val] [--out DIR] [--format png|svg] [--data DIR] [--metric-profile P]\n"
    "       dpd plot --data DIR [--split test|val] [--out DIR] [--format png|svg] [--metric-profile P]\n\n"
    "Draws a run's best checkpoint on a split (a DPD run: the PA model driven by the DPD and by\n"
    "x itself, and the capture's measured y, against g x): psd, amam, ampm, iq, residual and\n"
    "history (the learning curves), and\n"
    "writes the numbers drawn as plots.json (docs/formats.md, run-plots-v1). With RUN_DIR,\n"
    "--data names the dataset when config.json's path does not reach it from here. Without\n"
    "RUN_DIR, --data draws the measured dataset: the output y next to g x, the input at the\n"
    "PA's linear gain g = max|y_train| / max|x_train|. The default --out is RUN_DIR/plots (or,\n"
    "with --data alone, plots/NAME in the current directory, NAME the dataset directory's own:\n"
    "nothing is written into a dataset). Prints the paths written, one a line. A dataset without\n"
    "a train split is drawn at its split's own gain, with a warning.";

int cmd_plot(int argc, char **argv) {
    char data[4096] = "", split[16] = "test", out[4096] = "", format[16] = "png", profile[64] = "";
    cli_exec x = {0};
    opt o[] = {
        CLI_EXEC_OPTS(x),
        {"split", OPT_STR, split, sizeof split, "test or val (test)", 0},
        {"out", OPT_STR, out, sizeof out, "output directory (RUN_DIR/plots, or plots/NAME with --data alone)", 0},
        {"format", OPT_STR, format, sizeof format, "png or svg (png)", 0},
        {"data", OPT_STR, data, sizeof data, "the dataset: drawn alone without RUN_DIR, or the run's dataset", 0},
        {"metric-profile", OPT_STR, profile, sizeof profile,
         "whose PSD and ACLR bands are drawn (the run's; with --data alone, legacy-opendpd-v1)", 0},
    };
    int n = sizeof o / sizeof *o;
    /* RUN_DIR is the one argument that is not an option or an option's value */
    char **rest = malloc(((size_t)argc + 1) * sizeof *rest);
    const char *run_dir = NULL;
    int m = 0;
    if (!rest) return 1;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strncmp(a, "--", 2) || !strcmp(a, "-h")) {
            rest[m++] = argv[i];
            opt *p = !strchr(a, '=') ? args_get(o, n, a + 2) : NULL;
            if (p && p->type != OPT_FLAG && i + 1 < argc) rest[m++] = argv[++i];
        } else if (!run_dir) {
            run_dir = a;
        } else {
            fprintf(stderr, "dpd: plot takes one RUN_DIR (got '%s' and '%s')\n", run_dir, a);
            free(rest);
            return 2;
        }
    }
    int r = args_parse(m, rest, o, n, usage);
    free(rest);
    if (r) return r == 1 ? 0 : 2;
    if (!run_dir && !data[0]) {
        fprintf(stderr, "dpd: plot needs a run directory (dpd plot RUN_DIR) or a dataset (dpd plot --data DIR)\n");
        return 2;
    }
    if (strcmp(split, "test") && strcmp(split, "val")) {
        fprintf(stderr, "dpd: --split must be test or val (got '%s')\n", split);
        return 2;
    }
    if (strcmp(format, "png") && strcmp(format, "svg")) {
        fprintf(stderr, "dpd: --format must be png or svg (got '%s')\n", format);
        return 2;
    }
    if (profile[0] && dpd_profile_parse(profile) < 0) {
        fprintf(stderr, "dpd: --metric-profile: '%s' is not a metric profile (legacy-opendpd-v1, general-spectral-v1 or "
                        "opendpd-spectral-v2; docs/metrics.md)\n", profile);
        return 2;
    }
    if ((r = cli_exec_resolve(&x))) return r;
    plot_req q = {.run_dir = run_dir, .data = data[0] ? data : NULL, .split = strcmp(split, "val") ? DPD_TEST : DPD_VAL,
                  .out = out[0] ? out : NULL, .svg = !strcmp(format, "svg"), .x = &x, .profile = profile[0] ? profile : NULL};
    dpd_error err = {0};
    char dir[4096];
    if (run_dir && !q.out) replacing(run_dir, split);
    if (plot_write(&q, dir, sizeof dir, &err)) return cli_fail(&err);
    printf("%s/plots.json\n", dir);
    for (size_t i = 0; i < NCHARTS; i++)
        if (run_dir || !charts[i].run_only) printf("%s/%s.%s\n", dir, charts[i].name, format);
    return 0;
}
