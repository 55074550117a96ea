/* job: a request resolved into a training configuration (job.h). */
#include "job.h"

#include "cli.h"
#include "studio.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

static dpd_status fail(dpd_error *err, dpd_status s, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static dpd_status fail(dpd_error *err, dpd_status s, const char *field, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    err->status = s;
    snprintf(err->field, sizeof err->field, "%s", field);
    return s;
}

/* The configuration field whose CLI flag is --key (cli_flag: hidden, K -> order, model ->
 * family, batch-eval -> batch_eval, ...), into field; 0 when no field has that flag. */
static int field_of(const char *key, char *field, size_t n) {
    char want[80], flag[80];
    snprintf(want, sizeof want, "--%s", key);
    for (char *p = want + 2; *p; p++)
        if (*p == '_') *p = '-';
    int nf;
    const dpd_field *f = dpd_config_fields(&nf);
    for (int i = 0; i < nf; i++)
        if (!strcmp(cli_flag(f[i].key, flag, sizeof flag), want)) {
            snprintf(field, n, "%s", f[i].key);
            return 1;
        }
    return 0;
}

/* Options the studio decides (or that name files) and a request may not set. */
static const char *const refused[] = {"data",          "out",           "resume",  "least_squares", "least-squares",
                                      "preview_every", "preview-every", "json",    "no_plots",      "no-plots",
                                      "cpu_level",     "cpu-level",     "quiet"};

/* For a key that is no option: the option it was likely meant as ("--epochs" -> epochs, "no-doctor"
 * -> no_doctor, "hiden" -> hidden), written into buf; NULL when none is close. */
static const char *meant(const char *key, char *buf, size_t n) {
    static const char *const own[] = {"preset", "pa", "kind", "target", "no_doctor", "legacy_evm", "preview_every_batches"};
    int nf;
    const dpd_field *f = dpd_config_fields(&nf);
    char names[160][40], flag[80], want[72];
    const char *list[160];
    int k = 0;
    for (size_t i = 0; i < sizeof own / sizeof *own; i++) list[k++] = own[i];
    for (int i = 0; i < nf && k < 160; i++) {
        const char *fl = cli_flag(f[i].key, flag, sizeof flag) + 2; /* without its dashes, '-' as '_' */
        snprintf(names[k], sizeof names[k], "%s", fl);
        for (char *p = names[k]; *p; p++)
            if (*p == '-') *p = '_';
        int studio_s = 0; /* the studio's own to decide: never suggested */
        for (size_t r = 0; r < sizeof refused / sizeof *refused; r++) studio_s |= !strcmp(names[k], refused[r]);
        if (!studio_s) list[k] = names[k], k++;
    }
    const char *w = key;
    while (*w == '-') w++; /* "--epochs": the CLI's spelling */
    snprintf(want, sizeof want, "%s", w);
    for (char *p = want; *p; p++)
        if (*p == '-') *p = '_';
    const char *near = dpd_nearest(want, list, k);
    if (!near) return NULL;
    snprintf(buf, n, "%s", near);
    return buf;
}

/* err's field, a configuration field, renamed to the request's key for it (its flag without the
 * dashes, '-' as '_': order -> K, family -> model, batch_eval stays); err's status. */
static dpd_status key_of(dpd_error *err) {
    char flag[sizeof err->field + 2], msg[sizeof err->msg];
    size_t n = strlen(err->field);
    if (!n) return err->status;
    cli_flag(err->field, flag, sizeof flag);
    for (char *p = flag; *p; p++)
        if (*p == '-') *p = '_';
    if (!strncmp(err->msg, err->field, n) && err->msg[n] == ':') { /* "order: ..." -> "K: ..." */
        snprintf(msg, sizeof msg, "%s%s", flag + 2, err->msg + n);
        snprintf(err->msg, sizeof err->msg, "%s", msg);
    }
    snprintf(err->field, sizeof err->field, "%s", flag + 2);
    return err->status;
}

/* The option's value as the text the CLI would have received. */
static int value_text(const json_t *v, char *out, size_t n) {
    if (json_is_string(v)) snprintf(out, n, "%s", json_string_value(v));
    else if (json_is_integer(v)) snprintf(out, n, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v)) snprintf(out, n, "%.17g", json_real_value(v));
    else if (json_is_boolean(v)) snprintf(out, n, "%d", json_is_true(v));
    else return -1;
    return 0;
}

static int fake_int(const json_t *o, const char *key, int def, int lo, int hi, int *out, dpd_error *err) {
    const json_t *v = json_object_get(o, key);
    if (!v) {
        *out = def;
        return 0;
    }
    long long x = json_is_integer(v) ? json_integer_value(v) : json_is_boolean(v) ? json_is_true(v) : lo - 1LL;
    if (x < lo || x > hi) {
        fail(err, DPD_E_INVAL, key, "%s: must be an integer in %d..%d", key, lo, hi);
        return -1;
    }
    *out = (int)x;
    return 0;
}

/* preview_every_batches: null or absent (the snapshot once per epoch, no extra pass) or 1..1e6
 * batches between previews, into c->preview_every. */
static dpd_status preview_opt(dpd_train_cfg *c, const json_t *o, dpd_error *err) {
    const json_t *v = json_object_get(o, "preview_every_batches");
    if (!v || json_is_null(v)) return DPD_OK;
    json_int_t n = json_is_integer(v) ? json_integer_value(v) : 0;
    if (n < 1 || n > 1000000)
        return fail(err, DPD_E_INVAL, "preview_every_batches",
                    "preview_every_batches: null (once per epoch) or 1..1000000 batches");
    c->preview_every = (int)n;
    return DPD_OK;
}

static dpd_status resolve_fake(job *j, const json_t *o, dpd_error *err) {
    static const char *const keys[] = {"epochs",   "epoch_ms",  "ignore_cancel",         "exit_code",
                                       "alloc_mb", "silent_ms", "preview_every_batches", "artifact_mb",
                                       "fill_mb",  "probe"};
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)o, k, v) {
        int known = 0;
        for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) known |= !strcmp(k, keys[i]);
        if (!known) return fail(err, DPD_E_INVAL, k, "%s: not an option of the fake verb", k);
    }
    job_fake *f = &j->fake;
    if (fake_int(o, "epochs", 3, 1, 1000, &f->epochs, err) || fake_int(o, "epoch_ms", 200, 0, 600000, &f->epoch_ms, err) ||
        fake_int(o, "ignore_cancel", 0, 0, 1, &f->ignore_cancel, err) ||
        fake_int(o, "exit_code", -1, 0, 255, &f->exit_code, err) || fake_int(o, "alloc_mb", 0, 0, 65536, &f->alloc_mb, err) ||
        fake_int(o, "silent_ms", 0, 0, 600000, &f->silent_ms, err) ||
        fake_int(o, "artifact_mb", 0, 0, 256, &f->artifact_mb, err) || fake_int(o, "fill_mb", 0, 0, 256, &f->fill_mb, err))
        return err->status;
    if (!json_object_get(o, "exit_code")) f->exit_code = -1;
    const json_t *probe = json_object_get(o, "probe");
    const char *pv = json_string_value(probe);
    if (probe && (!pv || (strcmp(pv, "socket") && strcmp(pv, "exec") && strcmp(pv, "fork") && strcmp(pv, "write") &&
                          strcmp(pv, "proc") && strcmp(pv, "read"))))
        return fail(err, DPD_E_INVAL, "probe", "probe: one of socket, exec, fork, write, proc, read");
    snprintf(f->probe, sizeof f->probe, "%s", pv ? pv : "");
    j->cfg.epochs = f->epochs;
    return preview_opt(&j->cfg, o, err);
}

dpd_status job_resolve(job *j, const char *verb, const json_t *options, int fake, dpd_error *err) {
    memset(j, 0, sizeof *j);
    if (!verb) /* absent (api.c refuses a verb that is not a string: 'verb: must be a string') */
        return fail(err, DPD_E_INVAL, "verb", "verb: required, as a string: train-pa, train-dpd or fit-ls%s",
                    fake ? " (or fake)" : "");
    if (strcmp(verb, "train-pa") && strcmp(verb, "train-dpd") && strcmp(verb, "fit-ls") && (!fake || strcmp(verb, "fake")))
        return fail(err, DPD_E_INVAL, "verb", "verb: '%.32s' is not one of train-pa, train-dpd, fit-ls%s", verb,
                    fake ? ", fake" : "");
    snprintf(j->verb, sizeof j->verb, "%s", verb);
    if (options && !json_is_object(options)) return fail(err, DPD_E_INVAL, "options", "options: must be an object");
    dpd_train_cfg *c = &j->cfg;
    if (!strcmp(verb, "fake")) {
        dpd_train_defaults(c);
        return resolve_fake(j, options, err);
    }
    int ls = !strcmp(verb, "fit-ls"), dpd = !strcmp(verb, "train-dpd");
    cli_train_defaults(c, verb);
    if (ls) c->model.cross = 0; /* an MP until kind says gmp, as `dpd fit-ls` */
    const json_t *v;
    const char *key;
    /* the preset first, explicit options win */
    if ((v = json_object_get(options, "preset"))) {
        if (ls) return fail(err, DPD_E_INVAL, "preset", "preset: not an option of fit-ls");
        if (!json_is_string(v) || dpd_train_preset(c, json_string_value(v), err))
            return fail(err, DPD_E_INVAL, "preset", "preset: must be quick or full");
    }
    int target_dpd = 0, legacy = 0, evm_given = 0;
    unsigned sizes = 0; /* the family-sizing fields given (cli_size_bit) */
    int ls_iterations = 0;
    json_object_foreach((json_t *)options, key, v) {
        char text[4096], field[64];
        if (!strcmp(key, "preset")) continue;
        if (!strcmp(key, "preview_every_batches")) {
            if (preview_opt(c, options, err)) return err->status;
            if (ls && c->preview_every) return fail(err, DPD_E_INVAL, key, "preview_every_batches: fit-ls trains no batches");
            continue;
        }
        if (value_text(v, text, sizeof text)) /* null, an array or an object */
            return fail(err, DPD_E_INVAL, key, "%s: must be %s", key,
                        !strcmp(key, "no_doctor") || !strcmp(key, "legacy_evm") ? "true or false" : "a number or a string");
        if (!strcmp(key, "pa")) {
            if (!dpd && !ls) return fail(err, DPD_E_INVAL, key, "pa: belongs to train-dpd and fit-ls");
            if (strlen(text) >= sizeof j->pa) return fail(err, DPD_E_INVAL, key, "pa: not a run id");
            snprintf(j->pa, sizeof j->pa, "%s", text);
            continue;
        }
        if (ls && !strcmp(key, "kind")) {
            if (strcmp(text, "mp") && strcmp(text, "gmp")) return fail(err, DPD_E_INVAL, key, "kind: must be mp or gmp");
            snprintf(c->model.family, sizeof c->model.family, "%s", strcmp(text, "mp") ? "gmp_ls" : "mp");
            continue;
        }
        if (ls && !strcmp(key, "target")) {
            if (strcmp(text, "pa") && strcmp(text, "dpd")) return fail(err, DPD_E_INVAL, key, "target: must be pa or dpd");
            target_dpd = !strcmp(text, "dpd");
            continue;
        }
        if (!strcmp(key, "no_doctor")) {
            if (!json_is_boolean(v)) return fail(err, DPD_E_INVAL, key, "no_doctor: must be true or false");
            if (ls) /* as the CLI's fit-ls, which has no --no-doctor */
                return fail(err, DPD_E_INVAL, key, "no_doctor: fit-ls does not run the dataset doctor (train-pa and "
                            "train-dpd do)");
            j->no_doctor = json_is_true(v);
            continue;
        }
        if (!strcmp(key, "legacy_evm")) {
            if (!json_is_boolean(v) && strcmp(text, "0") && strcmp(text, "1"))
                return fail(err, DPD_E_INVAL, key, "legacy_evm: must be true or false");
            legacy = strcmp(text, "0") != 0;
            continue;
        }
        for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) /* what the key is before what its value is */
            if (!strcmp(key, refused[i]))
                return fail(err, DPD_E_INVAL, key, "%s: is decided by the studio and cannot be set", key);
        if (!field_of(key, field, sizeof field)) {
            char near[64];
            const char *m = meant(key, near, sizeof near);
            return fail(err, DPD_E_INVAL, key, "%s: not an option of %s%s%s%s", key, verb, m ? " (did you mean '" : "",
                        m ? m : "", m ? "'? options are written without dashes, '_' for '-')" : "");
        }
        if (json_is_boolean(v)) /* the flags above take true and false; to a number's parser true would be 1 */
            return fail(err, DPD_E_INVAL, key, "%s: must be a number or a string, not %s", key, text[0] == '1' ? "true" : "false");
        evm_given |= !strcmp(key, "evm_fs");
        if (ls && !strcmp(field, "family"))
            return fail(err, DPD_E_INVAL, key, "%s: fit-ls names its model by kind (mp or gmp)", key);
        if (ls && !cli_fit_ls_field(field)) /* a training option: fit-ls would record it and act on some */
            return fail(err, DPD_E_INVAL, key, "%s: not an option of fit-ls", key);
        if (dpd_config_set(c, field, text, err)) {
            snprintf(err->field, sizeof err->field, "%s", field);
            return key_of(err); /* "K: ...", as the request names it, not "order: ..." */
        }
        sizes |= cli_size_bit(field);
        ls_iterations |= !strcmp(field, "ls_iterations");
    }
    if (ls && cli_fit_ls_check(&c->model, target_dpd, sizes, ls_iterations, err)) return key_of(err);
    if (cli_legacy_evm(legacy, evm_given, &c->evm_fs, err) || cli_thresholds(&c->model, err)) return err->status;
    if (cli_family_sizes(c->model.family, sizes, err)) return key_of(err);
    if ((dpd || target_dpd) != (j->pa[0] != 0))
        return fail(err, DPD_E_INVAL, "pa", dpd || target_dpd ? "pa: the PA run's id is required"
                                                             : "pa: belongs to train-dpd and fit-ls with target dpd");
    if (dpd_config_check(c, err)) return key_of(err);
    if (c->provider[0] && strcmp(c->provider, "auto") && strcmp(c->provider, "cpu")) { /* a pack's: installed here */
        char dir[4096] = "";
        dpd_pack_active(c->provider, dir, sizeof dir);
        if (!dir[0])
            return fail(err, DPD_E_INVAL, "provider", "provider: '%.40s' is not auto, cpu or a runtime pack installed on "
                        "this server (GET /api/v1/providers lists them)", c->provider);
    }
    return DPD_OK;
}

dpd_status job_data_load(const char *dir, job_data *d, dpd_error *err) {
    dpd_dataset ds;
    unsigned all = (1u << DPD_TRAIN) | (1u << DPD_VAL) | (1u << DPD_TEST);
    if (dpd_dataset_load(dir, all, all, &ds, err)) {
        snprintf(err->field, sizeof err->field, "dataset");
        return err->status;
    }
    for (int k = 0; k < 3; k++) d->n[k] = ds.split[k].n;
    d->nperseg = ds.spec.nperseg;
    dpd_split_fingerprint(&ds.split[DPD_TRAIN], d->train_sha256);
    dpd_dataset_free(&ds);
    dpd_doctor_report r;
    dpd_error derr = {0};
    d->doctor[0] = 0;
    if (dpd_doctor_run(dir, &r, &derr)) snprintf(d->doctor, sizeof d->doctor, "it cannot read the data: %s", derr.msg);
    else dpd_doctor_errors(&r, d->doctor, sizeof d->doctor);
    dpd_doctor_report_free(&r);
    return DPD_OK;
}

dpd_status job_public_check(const job *j, dpd_error *err) {
    static const struct {
        const char *key;
        double max;
    } limit[] = {{"epochs", 300},      {"batch", 256}, {"batch_eval", 256}, {"frame", 400},  {"stride", 400},
                 {"hidden", 128},      {"layers", 2},  {"order", 128},      {"memory", 128}, {"cross", 128},
                 {"units", 128},       {"thx", 128},   {"thh", 128},        {"threads", 4},  {"ls_iterations", 60},
                 {"seed", 4294967295.0}};
    for (size_t i = 0; i < sizeof limit / sizeof *limit; i++) {
        char v[64];
        if (!dpd_config_get(&j->cfg, limit[i].key, v, sizeof v)) continue;
        double x = strtod(v, NULL);
        if (!(x <= limit[i].max))
            return fail(err, DPD_E_INVAL, limit[i].key, "%s: %s is over public mode's limit of %.10g", limit[i].key, v,
                        limit[i].max);
    }
    return DPD_OK;
}

dpd_status job_check_data(const job *j, const job_data *d, dpd_error *err) {
    static const char *const names[] = {"train", "val", "test"};
    for (int k = DPD_VAL; k <= DPD_TEST; k++)
        if (d->n[k] < (size_t)d->nperseg)
            return fail(err, DPD_E_INVAL, "dataset", "dataset: the %s split has %zu samples, fewer than one segment (%d)",
                        names[k], d->n[k], d->nperseg);
    if (!j->cfg.ls && strcmp(j->verb, "fake") && d->n[DPD_TRAIN] < (size_t)j->cfg.frame)
        return fail(err, DPD_E_INVAL, "frame", "frame: %d samples, more than the dataset's train split has (%zu)",
                    j->cfg.frame, d->n[DPD_TRAIN]);
    if (d->doctor[0] && !j->no_doctor && (!strcmp(j->verb, "train-pa") || !strcmp(j->verb, "train-dpd")))
        return fail(err, DPD_E_FORMAT, "dataset", "dataset: the dataset doctor refuses it: %s ('dpd doctor' prints the "
                    "whole report; the option no_doctor: true trains anyway)", d->doctor);
    return DPD_OK;
}

dpd_status job_import_check(const char *dir, char verb[16], char dataset[256], dpd_error *err) {
    char path[4200];
    dpd_error je = {0};
    snprintf(path, sizeof path, "%s/config.json", dir);
    json_t *c = cli_json_read(path, 0, &je);
    if (!c) return fail(err, DPD_E_INVAL, "import", "%s: not a dpd run directory (%s)", dir, je.msg);
    const char *step = json_string_value(json_object_get(c, "step")), *ds = json_string_value(json_object_get(c, "dataset"));
    int ls = json_is_true(json_object_get(c, "least_squares"));
    const char *v = !step                        ? NULL
                    : ls                         ? "fit-ls"
                    : !strcmp(step, "train_pa")  ? "train-pa"
                    : !strcmp(step, "train_dpd") ? "train-dpd"
                                                 : NULL;
    if (!v || !ds || !ds[0] || strlen(ds) >= 256) {
        json_decref(c);
        return fail(err, DPD_E_INVAL, "import", "%s: no step (train_pa or train_dpd) or dataset name", path);
    }
    snprintf(verb, 16, "%s", v);
    snprintf(dataset, 256, "%s", ds);
    json_decref(c);
    snprintf(path, sizeof path, "%s/best.safetensors", dir);
    if (access(path, R_OK)) return fail(err, DPD_E_INVAL, "import", "%s: %s", path, strerror(errno));
    snprintf(path, sizeof path, "%s/events.jsonl", dir);
    char *text = NULL, *last = NULL; /* the last line that is an object */
    dpd_error ee = {0};
    if (dpd_read_file(path, 0, "events", &text, NULL, &ee)) return fail(err, DPD_E_INVAL, "import", "%s", ee.msg);
    for (char *rest = text, *line; (line = strsep(&rest, "\n"));)
        if (line[0] == '{') last = line;
    json_t *e = last ? json_loads(last, 0, NULL) : NULL;
    free(text);
    const char *type = json_string_value(json_object_get(e, "type")), *out = json_string_value(json_object_get(e, "outcome"));
    int done = type && out && !strcmp(type, "run_ended") && !strcmp(out, "completed");
    json_decref(e);
    if (!done)
        return fail(err, DPD_E_INVAL, "import",
                    "%s: the run did not complete (its last event is not a completed run_ended): finish it first "
                    "(dpd %s --resume DIR)",
                    path, verb);
    return DPD_OK;
}

int job_enqueue(store *st, const char *root, run_rec *r, json_t *jobj, const store_quota *q, int *existed, char *why,
                size_t n) {
    unsigned char rnd[6];
    *existed = 0;
    if (getrandom(rnd, sizeof rnd, 0) != sizeof rnd) return snprintf(why, n, "no random bytes"), JOB_FAILED;
    snprintf(r->id, sizeof r->id, "r%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5]);
    /* the run directory and job.json first: a queued run always has them */
    char rdir[4400], path[4600];
    studio_run_path(root, r->ws, r->id, NULL, rdir, sizeof rdir);
    snprintf(path, sizeof path, "%s/logs", rdir);
    if (mkdir(rdir, 0700) || mkdir(path, 0700)) {
        snprintf(why, n, "cannot create the run directory %s: %s", rdir, strerror(errno));
        studio_rmtree(rdir);
        return JOB_NO_DISK;
    }
    char *text = jobj ? json_dumps(jobj, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    snprintf(path, sizeof path, "%s/job.json", rdir);
    if (!text || studio_write_file(path, text, strlen(text))) {
        snprintf(why, n, "cannot write %s", path);
        free(text);
        studio_rmtree(rdir);
        return JOB_NO_DISK;
    }
    free(text);
    int in = store_insert(st, r, q, existed);
    if (in) {
        snprintf(why, n, "%s", in > 0 ? "a quota refused the run" : "the job store refused the run");
        studio_rmtree(rdir);
        return in > 0 ? in : JOB_FAILED;
    }
    if (*existed) studio_rmtree(rdir);
    return 0;
}
