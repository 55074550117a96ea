/* run: see run.h. */
#include "run.h"

#include <dirent.h>
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <signal.h>
#include <unistd.h>

#include "ckpt.h"
#include "config.h"
#include "metrics.h"
#include "dataset.h"
#include "file.h"
#include "json.h"
#include "status.h"

int dpd_text_add(dpd_text *t, const char *fmt, ...) {
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int k = vsnprintf(t->s ? t->s + t->n : NULL, t->s ? t->cap - t->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) return 0;
        if (t->s && t->n + (size_t)k < t->cap) {
            t->n += (size_t)k;
            return 1;
        }
        size_t cap = (t->cap + (size_t)k + 1) * 2;
        char *ns = realloc(t->s, cap);
        if (!ns) return 0;
        t->s = ns, t->cap = cap;
    }
}

void dpd_text_free(dpd_text *t) {
    free(t->s);
    memset(t, 0, sizeof *t);
}

dpd_status dpd_run_create(dpd_rundir *d, const char *base, const char *id, dpd_error *err) {
    char had[4096];
    struct stat st;
    snprintf(had, sizeof had, "%s", base);
    while (had[0] && stat(had, &st)) { /* the longest ancestor there already: what a removal keeps */
        char *slash = strrchr(had, '/');
        if (slash) *slash = 0;
        else had[0] = 0;
    }
    d->existed = strlen(had);
    dpd_status s = dpd_mkdirs(base, err);
    if (s) return s;
    for (int k = 1, again = 1; k < 10000; k++) {
        if (k == 1) snprintf(d->id, sizeof d->id, "%s", id);
        else snprintf(d->id, sizeof d->id, "%s-%d", id, k);
        snprintf(d->dir, sizeof d->dir, "%s/%s", base, d->id);
        if (mkdir(d->dir, 0777) == 0) {
            d->created = 1;
            snprintf(d->id, sizeof d->id, "%s", id); /* the run id stays the scheme's; the directory may differ */
            return DPD_OK;
        }
        if (errno == ENOENT && again) { /* a parent that another run's removal took meanwhile: once more */
            again = 0, k--;
            if ((s = dpd_mkdirs(base, err))) return s;
            continue;
        }
        if (errno != EEXIST) return dpd_fail(err, DPD_E_IO, "%s: cannot create: %s", d->dir, strerror(errno));
    }
    return dpd_fail(err, DPD_E_IO, "%s: too many runs with this id", base);
}

void dpd_run_inherit(dpd_rundir *d, int epochs, char *warning, size_t n) {
    char path[4200], *buf, *save;
    unsigned char *have = calloc((size_t)epochs + 1, 1); /* have[e]: a row of epoch e (epochs <= 100 000) */
    warning[0] = 0;
    snprintf(path, sizeof path, "%s/history.csv", d->dir);
    size_t len = 0, hl = strcspn(d->hist.s ? d->hist.s : "", "\n"); /* the header this run writes (d->hist holds it) */
    int read = !dpd_file_read(path, &buf, &len, NULL), foreign = 0;
    if (read) {
        if (len && buf[len - 1] != '\n') { /* a last line cut short: torn, whatever its fields */
            char *nl = strrchr(buf, '\n');
            *(nl ? nl + 1 : buf) = 0;
        }
        char *line = strtok_r(buf, "\n", &save);
        foreign = line && (strlen(line) != hl || strncmp(line, d->hist.s, hl)); /* another dpd's columns, or edited */
        for (line = line && !foreign ? strtok_r(NULL, "\n", &save) : NULL; line; line = strtok_r(NULL, "\n", &save)) {
            int e = atoi(line);
            size_t commas = 0, fields = 0;
            for (const char *c = line; *c; c++) commas += *c == ',';
            for (size_t i = 0; i < hl; i++) fields += d->hist.s[i] == ',';
            if (e < 1 || e > epochs || commas != fields) continue; /* a row edited to another field count: torn */
            dpd_text_add(&d->hist, "%s\n", line);
            if (have) have[e] = 1;
        }
        free(buf);
    }
    char gaps[200] = ""; /* "3", "1-4, 7", cut with "..." */
    int lost = 0;
    for (int e = 1; have && e <= epochs; e++) {
        if (have[e]) continue;
        int b = e;
        while (e < epochs && !have[e + 1]) e++;
        lost += e - b + 1;
        size_t k = strlen(gaps);
        if (k + 28 < sizeof gaps) snprintf(gaps + k, sizeof gaps - k, "%s%d%s%.0d", k ? ", " : "", b, e > b ? "-" : "", e > b ? e : 0);
        else if (!strstr(gaps, "...")) snprintf(gaps + k, sizeof gaps - k, ", ...");
    }
    if (lost)
        snprintf(warning, n, "%s %s: the learning curve lacks epoch%s %s of the %d the checkpoint has trained "
                             "(events.jsonl still holds their metrics)",
                 path, !read ? "is missing" : foreign ? "has another header than this run writes (another dpd's, or "
                                                        "edited), so none of its rows is kept"
                                                      : "lost rows (cut short or edited)",
                 lost > 1 ? "s" : "", gaps, epochs);
    free(have);
    snprintf(path, sizeof path, "%s/events.jsonl", d->dir);
    if (!dpd_file_read(path, &buf, NULL, NULL)) {
        for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            dpd_text_add(&d->events, "%s\n", line);
            const char *q = strstr(line, "\"seq\":");
            if (q && atol(q + 6) > d->seq) d->seq = atol(q + 6);
        }
        free(buf);
    }
}

dpd_status dpd_run_write(const dpd_rundir *d, const char *name, const dpd_text *t, dpd_error *err) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", d->dir, name);
    return dpd_file_write(path, t->s ? t->s : "", t->n, err);
}

/* OpenDPD's log columns; DPD runs of a delta family add the sparsity columns after HIDDEN_SIZE
 * (reference §4.5). The metric columns are named by the profile's keys (legacy: OpenDPD's). */
void dpd_run_header(dpd_text *t, int delta, dpd_profile p) {
    dpd_text_add(t, "EPOCH,N_EPOCH,TIME:,LR,BATCH_SIZE,N_PARAM,FRAME_LENGTH,BACKBONE,HIDDEN_SIZE,%sTRAIN_LOSS",
                 delta ? "THX,THH,SP_T_DX,SP_T_DH,SP_T_DV,HW_PARAM," : "");
    for (int s = 0; s < 2; s++) {
        dpd_text_add(t, ",%s_LOSS", s ? "TEST" : "VAL");
        for (int k = 0; k < DPD_NMETRICS; k++) dpd_text_add(t, ",%s_%s", s ? "TEST" : "VAL", dpd_metric_key(p, k));
    }
    dpd_text_add(t, "\n");
}

void dpd_run_row(dpd_text *t, int epoch, int epochs, double minutes, double lr, int batch, size_t nparams,
                 int frame, const char *family, int hidden, const double *thresholds, const dpd_sparsity *sp,
                 double train_loss, const double *vl, const dpd_metrics *m) {
    dpd_text_add(t, "%d,%d,%.8f,%.8f,%d,%zu,%d,%s,%d,", epoch, epochs, minutes, lr, batch, nparams, frame, family,
                 hidden);
    if (sp)
        dpd_text_add(t, "%.8f,%.8f,%.8f,%.8f,%.8f,%.8f,", thresholds[0], thresholds[1], sp->sp_dx, sp->sp_dh,
                     sp->sp_dv, sp->hw_param);
    dpd_text_add(t, "%.8f", train_loss);
    for (int k = 0; k < 2; k++)
        dpd_text_add(t, ",%.8f,%.8f,%.8f,%.8f,%.8f,%.8f", vl[k], m[k].nmse, m[k].evm, m[k].aclr_l, m[k].aclr_r,
                     m[k].aclr_avg);
    dpd_text_add(t, "\n");
}

dpd_profile dpd_run_profile(const dpd_train_cfg *c) {
    int p = dpd_profile_parse(c->metric_profile);
    return p < 0 ? DPD_PROFILE_LEGACY : (dpd_profile)p;
}

/* A metric set as {"NMSE": v or null, ..., "status": {name: {status, reason}} for those not ok}. */
static json_t *metrics_json(const dpd_metrics *m, double loss) {
    json_t *o = json_object(), *st = json_object();
    if (!isnan(loss)) json_object_set_new(o, "loss", json_real(loss));
    for (int k = 0; k < DPD_NMETRICS; k++) {
        double v = dpd_metric_value(m, k);
        int ok = m->status[k] == DPD_METRIC_OK && isfinite(v);
        json_object_set_new(o, dpd_metric_key(m->profile, k), ok ? json_real(v) : json_null());
        if (!ok)
            json_object_set_new(st, dpd_metric_key(m->profile, k), json_pack("{s:s, s:s}", "status",
                                                                   dpd_metric_status_str(m->status[k] ? m->status[k] : DPD_METRIC_INVALID),
                                                                   "reason", m->reason[k][0] ? m->reason[k] : "not finite"));
    }
    if (json_object_size(st)) json_object_set_new(o, "status", st);
    else json_decref(st);
    return o;
}

void dpd_run_event(dpd_rundir *d, dpd_event *e) {
    static const char *const names[] = {"run_started", "progress",  "epoch",  "checkpoint",
                                        "warning",     "run_ended", "preview"};
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    e->seq = ++d->seq;
    e->time = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    json_t *j = json_pack("{s:I, s:f, s:s, s:i}", "seq", (json_int_t)e->seq, "ts", floor(e->time * 1000) / 1000,
                          "type", names[e->type], "epoch", e->epoch);
    switch (e->type) {
    case DPD_EV_RUN_STARTED:
        json_object_set_new(j, "epochs", json_integer(e->epochs));
        json_object_set_new(j, "run_id", json_string(e->run_id ? e->run_id : ""));
        json_object_set_new(j, "provider", json_string(e->provider ? e->provider : ""));
        json_object_set_new(j, "resumed", json_boolean(e->resumed));
        for (int k = 0; k < 2; k++) { /* the baselines */
            const dpd_metrics *b = k ? e->measured : e->no_dpd;
            if (b) json_object_set_new(j, k ? "measured" : "no_dpd", json_pack("{s:o, s:o}", "val", metrics_json(&b[0], NAN), "test",
                                                                               metrics_json(&b[1], NAN)));
        }
        break;
    case DPD_EV_PROGRESS:
        json_object_set_new(j, "steps_done", json_integer(e->steps_done));
        json_object_set_new(j, "steps", json_integer(e->steps));
        json_object_set_new(j, "loss", isfinite(e->loss) ? json_real(e->loss) : json_null());
        json_object_set_new(j, "samples_per_s", json_real(e->samples_per_s));
        break;
    case DPD_EV_EPOCH:
        json_object_set_new(j, "lr", json_real(e->lr));
        json_object_set_new(j, "train_loss", isfinite(e->train_loss) ? json_real(e->train_loss) : json_null());
        json_object_set_new(j, "improved", json_boolean(e->improved));
        json_object_set_new(j, "val", metrics_json(&e->val, e->val_loss));
        json_object_set_new(j, "test", metrics_json(&e->test, e->test_loss));
        break;
    case DPD_EV_CHECKPOINT:
        json_object_set_new(j, "path", json_string(e->path ? e->path : ""));
        if (e->steps_done > 0) json_object_set_new(j, "steps_done", json_integer(e->steps_done)); /* a mid-epoch stop */
        break;
    case DPD_EV_WARNING:
        json_object_set_new(j, "message", json_string(e->message ? e->message : ""));
        break;
    case DPD_EV_RUN_ENDED:
        json_object_set_new(j, "outcome", json_string(e->outcome ? e->outcome : ""));
        json_object_set_new(j, "status", json_string(dpd_status_str(e->status)));
        if (e->message) json_object_set_new(j, "message", json_string(e->message));
        break;
    case DPD_EV_PREVIEW: break; /* not written (train.c): listed for the switch */
    }
    char *line = j ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    if (line) dpd_text_add(&d->events, "%s\n", line);
    free(line);
    json_decref(j);
}

void dpd_run_remove(dpd_rundir *d) {
    if (!d->created || !d->dir[0]) return;
    DIR *dir = opendir(d->dir);
    struct dirent *e;
    char path[4400];
    while (dir && (e = readdir(dir)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(path, sizeof path, "%s/%s", d->dir, e->d_name);
            unlink(path);
        }
    if (dir) closedir(dir);
    int gone = !rmdir(d->dir);
    for (char *slash; gone && (slash = strrchr(d->dir, '/')) && (size_t)(slash - d->dir) > d->existed;) {
        *slash = 0; /* a parent made for this run; kept when another run has put something in it */
        gone = !rmdir(d->dir);
    }
    d->dir[0] = 0;
}

void dpd_run_free(dpd_rundir *d) {
    dpd_text_free(&d->hist);
    dpd_text_free(&d->events);
}

/* ---- the run's identity and config.json ---- */

/* The run id of info (OpenDPD's scheme). */
static void run_id(const dpd_run_info *info, char *id, size_t n) {
    const dpd_train_cfg *c = info->c;
    char size[64];
    if (info->fam->poly)
        snprintf(size, sizeof size, "K_%d_Q_%d%s%.0d", c->model.order, c->model.memory, c->model.cross ? "_M_" : "",
                 c->model.cross);
    else
        snprintf(size, sizeof size, "H_%d", c->model.hidden);
    if (c->ls)
        snprintf(id, n, "%s_LS_M_%s_%s_P_%zu", info->dpd ? "DPD" : "PA", info->fam->tag, size, info->nparams);
    else
        snprintf(id, n, "%s_S_%llu_M_%s_%s_F_%d_P_%zu", info->dpd ? "DPD" : "PA", (unsigned long long)c->seed,
                 info->fam->tag, size, c->frame, info->nparams);
    if (info->dpd && info->fam->delta_zeros)
        snprintf(id + strlen(id), n - strlen(id), "_THX_%.3f_THH_%.3f", c->model.thx, c->model.thh);
}

void dpd_run_adopt(dpd_rundir *d, const dpd_run_info *info) { run_id(info, d->id, sizeof d->id); }

void dpd_run_clean(const dpd_rundir *d) {
    DIR *dir = opendir(d->dir);
    struct dirent *e;
    while (dir && (e = readdir(dir))) {
        const char *t = strstr(e->d_name, ".tmp.");
        char *end;
        if (!t) continue;
        long pid = strtol(t + 5, &end, 10);
        int dead = pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
        if (*end || !dead) continue; /* not ours, or its writer is still at work */
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", d->dir, e->d_name);
        unlink(path);
    }
    if (dir) closedir(dir);
}

dpd_status dpd_run_make(dpd_rundir *d, const dpd_run_info *info, dpd_error *err) {
    const dpd_train_cfg *c = info->c;
    char id[256];
    run_id(info, id, sizeof id);
    char base[4096], padir[256];
    snprintf(padir, sizeof padir, "%s", info->pa_id ? info->pa_id : "");
    char *cut = strstr(padir, "_P_");
    if (cut) *cut = 0;
    for (char *p = padir; *p; p++) /* the PA id comes from a file: one safe path component */
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' ||
              *p == '-' || *p == '.'))
            *p = '_';
    if (!padir[0] || !strcmp(padir, ".") || !strcmp(padir, "..")) snprintf(padir, sizeof padir, "PA");
    if (info->dpd) snprintf(base, sizeof base, "%s/%s/train_dpd/%s", c->out, info->dataset, padir);
    else snprintf(base, sizeof base, "%s/%s/train_pa", c->out, info->dataset);
    return dpd_run_create(d, base, id, err);
}

/* How the dataset was split: {"protocol", "guard" (contiguous-v1), "train": [begin, end), ...,
 * "sha256": {"train": dpd_split_fingerprint, "val": ..., "test": ...}} (a resume checks them). */
static json_t *split_json(const dpd_dataset *ds) {
    int contiguous = !strcmp(ds->protocol, "contiguous-v1");
    json_t *j = json_pack("{s:s}", "protocol", ds->protocol), *sha = json_object();
    if (j && contiguous) json_object_set_new(j, "guard", json_integer(ds->spec.guard));
    for (int k = 0; j && k < DPD_NSPLIT; k++) {
        char fp[65];
        json_object_set_new(j, dpd_split_names[k], json_pack("[I, I]", (json_int_t)ds->begin[k],
                                                         (json_int_t)(ds->begin[k] + ds->split[k].n)));
        dpd_split_fingerprint(&ds->split[k], fp);
        json_object_set_new(sha, dpd_split_names[k], json_string(fp));
    }
    if (j) json_object_set(j, "sha256", sha);
    json_decref(sha);
    return j;
}

dpd_status dpd_run_write_config(const dpd_rundir *d, const dpd_run_info *info, dpd_error *err) {
    json_t *cj = dpd_config_json(info->c, info->dataset, d->id, info->nparams, info->dpd ? "train_dpd" : "train_pa");
    if (cj && info->ds && json_object_set_new(cj, "split", split_json(info->ds))) {
        json_decref(cj);
        cj = NULL;
    }
    if (cj && info->kernels && info->kernels[0] && json_object_set_new(cj, "kernels_used", json_string(info->kernels))) {
        json_decref(cj);
        cj = NULL;
    }
    char *ctext = cj ? json_dumps(cj, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(cj);
    dpd_text ct = {ctext, ctext ? strlen(ctext) : 0, 0};
    dpd_status s = ctext ? dpd_run_write(d, "config.json", &ct, err) : dpd_fail(err, DPD_E_NOMEM, "config.json");
    free(ctext);
    return s;
}

dpd_status dpd_run_read_config(const char *dir, dpd_train_cfg *c, char *kernels, size_t nkernels,
                               char sha256[DPD_NSPLIT][65], dpd_error *err) {
    char path[4200];
    snprintf(path, sizeof path, "%s/config.json", dir);
    json_t *j = dpd_json_load(path, "a run's config.json", err);
    if (!j) return err ? err->status : DPD_E_FORMAT;
    dpd_status s = dpd_config_from_json(j, c, path, err);
    if (s && err) err->field[0] = 0; /* the run's file is at fault, not an option: the message names its key */
    json_t *k = json_object_get(j, "kernels_used"), *sha = json_object_get(json_object_get(j, "split"), "sha256");
    snprintf(kernels, nkernels, "%s", json_is_string(k) ? json_string_value(k) : "");
    for (int i = 0; i < DPD_NSPLIT; i++) {
        const char *v = json_string_value(json_object_get(sha, dpd_split_names[i]));
        snprintf(sha256[i], 65, "%s", v && strlen(v) == 64 && strspn(v, "0123456789abcdef") == 64 ? v : "");
    }
    json_decref(j);
    return s;
}

/* ---- checkpoints ---- */

/* Metadata pairs built up for one checkpoint. */
typedef struct meta {
    dpd_kv kv[80];
    char key[80][48], val[80][320];
    int n;
} meta;

static void put(meta *m, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void put(meta *m, const char *key, const char *fmt, ...) {
    if (m->n == 80) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->val[m->n], sizeof m->val[m->n], fmt, ap);
    va_end(ap);
    snprintf(m->key[m->n], sizeof m->key[m->n], "%s", key);
    m->kv[m->n] = (dpd_kv){m->key[m->n], m->val[m->n]};
    m->n++;
}

/* <split>_<NAME> for each metric in fmt (%a for an exact round trip), and for a metric that could
 * not be computed <split>_<NAME>_status and _reason. */
static void put_metrics(meta *m, const char *split, const dpd_metrics *v, const char *fmt) {
    for (int k = 0; k < DPD_NMETRICS; k++) {
        char key[48];
        snprintf(key, sizeof key, "%s_%s", split, dpd_metric_key(v->profile, k));
        put(m, key, fmt, dpd_metric_value(v, k));
        if (v->status[k] == DPD_METRIC_OK) continue;
        snprintf(key, sizeof key, "%s_%s_status", split, dpd_metric_key(v->profile, k));
        put(m, key, "%s", dpd_metric_status_str(v->status[k]));
        snprintf(key, sizeof key, "%s_%s_reason", split, dpd_metric_key(v->profile, k));
        put(m, key, "%s", v->reason[k]);
    }
}

/* put_metrics' figures read back: the val and test figures a best checkpoint records
 * (dpd_run_save_best: "<split>_<key>" under its metric_profile, "_status" and "_reason" beside a
 * metric that was not computed); out->scored only when every one is there as a number (or nan)
 * and every status is one dpd writes. */
void dpd_run_scores(const dpd_ckpt *c, dpd_ckpt_info *out) {
    const char *v = dpd_ckpt_meta(c, "metric_profile");
    int p = v ? dpd_profile_parse(v) : -1;
    if (p < 0) return;
    dpd_metrics *m[2] = {&out->val, &out->test};
    for (int i = 0; i < 2; i++) {
        m[i]->profile = (dpd_profile)p;
        for (int k = 0; k < DPD_NMETRICS; k++) {
            char key[64], *end;
            snprintf(key, sizeof key, "%s_%s", i ? "test" : "val", dpd_metric_key(m[i]->profile, k));
            const char *x = dpd_ckpt_meta(c, key);
            double value = x && *x ? strtod(x, &end) : 0;
            if (!x || !*x || *end) return; /* not recorded: not scored */
            snprintf(key + strlen(key), sizeof key - strlen(key), "_status");
            const char *st = dpd_ckpt_meta(c, key);
            int status = st ? -1 : DPD_METRIC_OK; /* a status put_metrics writes (dpd_metric_status_str's) */
            for (int z = DPD_METRIC_INVALID; st && z <= DPD_METRIC_NOT_APPLICABLE; z++)
                if (!strcmp(st, dpd_metric_status_str((dpd_metric_status)z))) status = z;
            if (status < 0 || (status == DPD_METRIC_OK) != isfinite(value)) return;
            memcpy(key + strlen(key) - 6, "reason", 7);
            const char *why = dpd_ckpt_meta(c, key);
            snprintf(m[i]->reason[k], sizeof m[i]->reason[k], "%s", status && why ? why : "");
            m[i]->status[k] = (dpd_metric_status)status;
            *dpd_metric_slot(m[i], k) = status ? NAN : value;
        }
    }
    out->scored = 1;
}

/* A metadata value as text with nothing around it (no leading space, not empty). */
static const char *get_text(const dpd_ckpt *ck, const char *key) {
    const char *s = dpd_ckpt_meta(ck, key);
    return s && *s && !isspace((unsigned char)*s) ? s : NULL;
}

/* An integer metadata value in [lo, hi], strictly parsed. */
static int get_ll(const dpd_ckpt *ck, const char *key, long long lo, long long hi, long long *v) {
    const char *s = get_text(ck, key);
    char *end;
    if (!s) return 0;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (*end || errno || x < lo || x > hi) return 0;
    *v = x;
    return 1;
}

static int get_long(const dpd_ckpt *ck, const char *key, long lo, long hi, long *v) {
    long long x;
    if (!get_ll(ck, key, lo, hi, &x)) return 0;
    *v = (long)x;
    return 1;
}

/* A double metadata value (C's %a or decimal), strictly parsed, in [lo, hi] (NaN only when nan_ok). */
static int get_double(const dpd_ckpt *ck, const char *key, double lo, double hi, int nan_ok, double *v) {
    const char *s = get_text(ck, key);
    char *end;
    if (!s) return 0;
    double x = strtod(s, &end);
    if (*end || (isnan(x) ? !nan_ok : !(x >= lo && x <= hi))) return 0;
    *v = x;
    return 1;
}

/* The best epoch's metrics under the checkpoint's metric_profile (absent: legacy): each value
 * strict; a metric that could not be computed is NaN with a _status of invalid or not_applicable
 * (and its _reason). 0 naming the key at fault in *bad. */
static int get_metrics(const dpd_ckpt *ck, const char *split, dpd_metrics *v, char *bad, size_t nbad) {
    memset(v, 0, sizeof *v);
    const char *pn = dpd_ckpt_meta(ck, "metric_profile");
    int p = pn ? dpd_profile_parse(pn) : DPD_PROFILE_LEGACY;
    if (p < 0) return snprintf(bad, nbad, "metric_profile"), 0;
    v->profile = (dpd_profile)p;
    double *x[DPD_NMETRICS] = {&v->nmse, &v->evm, &v->aclr_l, &v->aclr_r, &v->aclr_avg};
    for (int k = 0; k < DPD_NMETRICS; k++) {
        char key[48], skey[56], rkey[56];
        snprintf(key, sizeof key, "%s_%s", split, dpd_metric_key(v->profile, k));
        snprintf(skey, sizeof skey, "%s_status", key);
        snprintf(rkey, sizeof rkey, "%s_reason", key);
        const char *st = dpd_ckpt_meta(ck, skey), *why = dpd_ckpt_meta(ck, rkey);
        if (st && strcmp(st, "invalid") && strcmp(st, "not_applicable")) return snprintf(bad, nbad, "%s", skey), 0;
        if (!get_double(ck, key, -1e4, 1e4, st != NULL, x[k]) || (st && !isnan(*x[k])))
            return snprintf(bad, nbad, "%s", key), 0;
        if (st) {
            v->status[k] = !strcmp(st, "not_applicable") ? DPD_METRIC_NOT_APPLICABLE : DPD_METRIC_INVALID;
            snprintf(v->reason[k], sizeof v->reason[k], "%s", why ? why : "");
        }
    }
    return 1;
}

static void put_rng(meta *m, const char *key, const dpd_rng *g) {
    put(m, key, "%016llx%016llx%016llx%016llx", (unsigned long long)g->s[0], (unsigned long long)g->s[1],
        (unsigned long long)g->s[2], (unsigned long long)g->s[3]);
}

/* 64 lower-case hex digits, not the all-zero state (which seeding never gives). */
static int get_rng(const char *h, dpd_rng *g) {
    if (!h || strlen(h) != 64 || strspn(h, "0123456789abcdef") != 64 || strspn(h, "0") == 64) return 0;
    for (int i = 0; i < 4; i++) {
        char w[17];
        memcpy(w, h + 16 * i, 16);
        w[16] = 0;
        g->s[i] = strtoull(w, NULL, 16);
    }
    return 1;
}

/* The four delta counters "a,b,c,d", each 0..2^62. */
static int get_zeros(const char *z, long long *dz) {
    if (!z) return 0;
    for (int i = 0; i < 4; i++) {
        char *end;
        if (!isdigit((unsigned char)*z)) return 0;
        errno = 0;
        dz[i] = strtoll(z, &end, 10);
        if (errno || dz[i] > (1LL << 62) || *end != (i < 3 ? ',' : 0)) return 0;
        z = end + (i < 3);
    }
    return 1;
}

static void identity(meta *m, const dpd_rundir *d, const dpd_run_info *info) {
    put(m, "step_kind", "%s", info->dpd ? "train_dpd" : "train_pa");
    put(m, "dataset", "%s", info->dataset);
    put(m, "train_sha256", "%s", info->train_sha256);
    if (info->ds && info->ds->spec.fs > 0) put(m, "input_signal_fs", "%.17g", info->ds->spec.fs);
    if (info->x_peak > 0) { /* what `dpd run` compares its input with */
        put(m, "train_input_peak", "%.17g", info->x_peak);
        put(m, "train_input_rms", "%.17g", info->x_rms);
    }
    put(m, "run_id", "%s", d->id);
    put(m, "metric_profile", "%s", dpd_profile_name(dpd_run_profile(info->c)));
}

dpd_status dpd_run_save_best(const dpd_rundir *d, const dpd_run_info *info, const dpd_model *m, int epoch,
                             const dpd_metrics *val, const dpd_metrics *test, dpd_error *err) {
    static meta z;
    meta *md = malloc(sizeof *md);
    if (!md) return dpd_fail(err, DPD_E_NOMEM, "out of memory");
    *md = z;
    char v[64];
    identity(md, d, info);
    put(md, "epoch", "%d", epoch);
    put(md, "frame", "%s", dpd_config_get(info->c, "frame", v, sizeof v) ? v : "");
    put(md, "seed", "%s", dpd_config_get(info->c, "seed", v, sizeof v) ? v : "");
    put(md, "input_size", "%d", 2);
    if (info->c->ls) put(md, "least_squares", "%d", 1);
    if (info->dpd) {
        put(md, "pa_run_id", "%s", info->pa_id);
        put(md, "gain", "%.17g", info->gain);
    }
    put_metrics(md, "val", val, "%.8f");
    put_metrics(md, "test", test, "%.8f");
    char path[4200];
    snprintf(path, sizeof path, "%s/best.safetensors", d->dir);
    dpd_status s = dpd_ckpt_save(path, m, md->kv, md->n, 0, NULL, NULL, NULL, err);
    free(md);
    return s;
}

dpd_status dpd_run_save_last(const dpd_rundir *d, const dpd_run_info *info, const dpd_model *m, const float *mom,
                             const dpd_run_state *st, const dpd_model *pa, dpd_error *err) {
    static meta z;
    meta *md = malloc(sizeof *md);
    if (!md) return dpd_fail(err, DPD_E_NOMEM, "out of memory");
    *md = z;
    size_t np = dpd_model_nparams(m);
    put(md, "epoch", "%d", st->epoch);
    put(md, "best_epoch", "%d", st->best_epoch);
    put(md, "step", "%ld", st->step);
    put(md, "lr", "%a", st->lr);
    put(md, "elapsed", "%a", st->elapsed);
    put(md, "plateau_best", "%a", st->plateau_best);
    put(md, "plateau_bad", "%d", st->plateau_bad);
    put_rng(md, "rng", &st->rng);
    identity(md, d, info);
    if (st->epoch_step) {
        put(md, "epoch_step", "%ld", st->epoch_step);
        put(md, "epoch_loss", "%a", st->epoch_loss);
        put_rng(md, "epoch_rng", &st->epoch_rng);
        put(md, "epoch_zeros", "%lld,%lld,%lld,%lld", st->dz[0], st->dz[1], st->dz[2], st->dz[3]);
    }
    put_metrics(md, "val", &st->best_val, "%a");
    put_metrics(md, "test", &st->best_test, "%a");
    const char *names[2] = {"optimizer.exp_avg", "optimizer.exp_avg_sq"};
    const float *ex[2] = {mom, mom + np};
    size_t len[2] = {np, np};
    char path[4200];
    dpd_status s = DPD_OK;
    if (pa) { /* first: a last.safetensors on disk always has its PA beside it */
        /* The frozen PA as it is in memory now: proof that DPD training leaves it untouched, and
         * what a resume and `dpd eval --pa RUN_DIR` load. */
        char fs[32];
        snprintf(fs, sizeof fs, "%.17g", info->pa_fs);
        dpd_kv pkv[5] = {{"step_kind", "train_pa"},
                         {"dataset", info->pa_dataset && info->pa_dataset[0] ? info->pa_dataset : info->dataset},
                         {"train_sha256", info->train_sha256}, {"run_id", info->pa_id}, {"input_signal_fs", fs}};
        snprintf(path, sizeof path, "%s/pa.safetensors", d->dir);
        s = dpd_ckpt_save(path, pa, pkv, info->pa_fs > 0 ? 5 : 4, 0, NULL, NULL, NULL, err);
    }
    snprintf(path, sizeof path, "%s/last.safetensors", d->dir);
    if (!s) s = dpd_ckpt_save(path, m, md->kv, md->n, 2, names, ex, len, err);
    free(md);
    return s;
}

dpd_status dpd_run_load_last(dpd_rundir *d, dpd_model *m, float *mom, dpd_run_state *st, long steps,
                             const dpd_train_cfg *c, dpd_error *err) {
    char path[4200], bad_buf[64];
    size_t np = dpd_model_nparams(m);
    snprintf(path, sizeof path, "%s/last.safetensors", d->dir);
    dpd_ckpt ck;
    dpd_status s = dpd_ckpt_open(path, &ck, err);
    if (s) return s;
    long epoch, best, step, bad, es = 0;
    const char *bad_key = NULL, *id = get_text(&ck, "run_id");
    memset(st, 0, sizeof *st);
    if (!get_long(&ck, "epoch", 0, INT_MAX, &epoch)) bad_key = "epoch";
    else if (!get_long(&ck, "best_epoch", 0, epoch, &best)) bad_key = "best_epoch";
    else if (!get_long(&ck, "step", 0, LONG_MAX, &step)) bad_key = "step";
    else if (!get_double(&ck, "lr", 0, c->lr, 0, &st->lr)) bad_key = "lr"; /* the schedule only lowers it */
    else if (!get_double(&ck, "elapsed", 0, 1e8, 0, &st->elapsed)) bad_key = "elapsed"; /* minutes */
    else if (!get_double(&ck, "plateau_best", -DBL_MAX, INFINITY, 0, &st->plateau_best)) bad_key = "plateau_best";
    else if (!get_long(&ck, "plateau_bad", 0, c->patience, &bad)) bad_key = "plateau_bad";
    else if (!get_rng(dpd_ckpt_meta(&ck, "rng"), &st->rng)) bad_key = "rng";
    else if (!id || strlen(id) >= sizeof d->id || strchr(id, '/') || !strcmp(id, ".") || !strcmp(id, "..")) bad_key = "run_id";
    else if (!get_metrics(&ck, "val", &st->best_val, bad_buf, sizeof bad_buf) ||
             !get_metrics(&ck, "test", &st->best_test, bad_buf, sizeof bad_buf))
        bad_key = bad_buf;
    else if (dpd_ckpt_meta(&ck, "epoch_step")) {
        if (!get_long(&ck, "epoch_step", 1, steps - 1, &es)) bad_key = "epoch_step";
        else if (epoch >= c->epochs) { /* stopped inside epoch + 1: the run needs that many at least */
            dpd_ckpt_close(&ck);
            return dpd_fail_field(err, "epochs", DPD_E_INVAL, "epochs: %s stopped inside epoch %ld (after %ld of its %ld "
                                  "steps), and %d asks for no more (pass epochs %ld or more to finish it)",
                                  d->dir, epoch + 1, es, steps, c->epochs, epoch + 1);
        }
        else if (!get_double(&ck, "epoch_loss", 0, DBL_MAX, 0, &st->epoch_loss)) bad_key = "epoch_loss";
        else if (!get_rng(dpd_ckpt_meta(&ck, "epoch_rng"), &st->epoch_rng)) bad_key = "epoch_rng";
        else if (!get_zeros(dpd_ckpt_meta(&ck, "epoch_zeros"), st->dz)) bad_key = "epoch_zeros";
    }
    /* every step of every epoch so far, and of the epoch in progress, went through AdamW */
    if (!bad_key && (epoch > LONG_MAX / (steps > 0 ? steps : 1) || step != epoch * steps + es)) bad_key = "step";
    if (bad_key) {
        dpd_ckpt_close(&ck);
        return dpd_fail(err, DPD_E_FORMAT, "%s: resume state '%s' is missing, malformed or inconsistent in __metadata__",
                        path, bad_key);
    }
    st->epoch = (int)epoch, st->best_epoch = (int)best, st->step = step, st->plateau_bad = (int)bad, st->epoch_step = es;
    snprintf(d->id, sizeof d->id, "%s", id);
    s = dpd_ckpt_read_model(&ck, m, err);
    if (!s) s = dpd_ckpt_read(&ck, "optimizer.exp_avg", mom, np, err);
    if (!s) s = dpd_ckpt_read(&ck, "optimizer.exp_avg_sq", mom + np, np, err);
    dpd_ckpt_close(&ck);
    return s;
}
