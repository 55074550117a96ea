/* run: see run.h. */
#include "run.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "file.h"
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
    dpd_status s = dpd_mkdirs(base, err);
    if (s) return s;
    for (int k = 1; k < 10000; k++) {
        if (k == 1) snprintf(d->id, sizeof d->id, "%s", id);
        else snprintf(d->id, sizeof d->id, "%s-%d", id, k);
        snprintf(d->dir, sizeof d->dir, "%s/%s", base, d->id);
        if (mkdir(d->dir, 0777) == 0) {
            d->created = 1;
            snprintf(d->id, sizeof d->id, "%s", id); /* the run id stays the scheme's; the directory may differ */
            return DPD_OK;
        }
        if (errno != EEXIST) return dpd_fail(err, DPD_E_IO, "%s: cannot create: %s", d->dir, strerror(errno));
    }
    return dpd_fail(err, DPD_E_IO, "%s: too many runs with this id", base);
}

void dpd_run_inherit(dpd_rundir *d, int epochs) {
    char path[4200], *buf, *save;
    snprintf(path, sizeof path, "%s/history.csv", d->dir);
    if (!dpd_file_read(path, &buf, NULL, NULL)) {
        char *line = strtok_r(buf, "\n", &save);
        for (line = line ? strtok_r(NULL, "\n", &save) : NULL; line; line = strtok_r(NULL, "\n", &save))
            if (atoi(line) <= epochs) dpd_text_add(&d->hist, "%s\n", line);
        free(buf);
    }
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
 * (reference §4.5). */
void dpd_run_header(dpd_text *t, int delta) {
    dpd_text_add(t, "EPOCH,N_EPOCH,TIME:,LR,BATCH_SIZE,N_PARAM,FRAME_LENGTH,BACKBONE,HIDDEN_SIZE,%s"
                    "TRAIN_LOSS,VAL_LOSS,VAL_NMSE,VAL_EVM,VAL_ACLR_L,VAL_ACLR_R,VAL_ACLR_AVG,TEST_LOSS,TEST_NMSE,"
                    "TEST_EVM,TEST_ACLR_L,TEST_ACLR_R,TEST_ACLR_AVG\n",
                 delta ? "THX,THH,SP_T_DX,SP_T_DH,SP_T_DV,HW_PARAM," : "");
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

/* A metric set as {"NMSE": v or null, ..., "status": {name: {status, reason}} for those not ok}. */
static json_t *metrics_json(const dpd_metrics *m, double loss) {
    json_t *o = json_object(), *st = json_object();
    if (!isnan(loss)) json_object_set_new(o, "loss", json_real(loss));
    for (int k = 0; k < DPD_NMETRICS; k++) {
        double v = dpd_metric_value(m, k);
        int ok = m->status[k] == DPD_METRIC_OK && isfinite(v);
        json_object_set_new(o, dpd_metric_name(k), ok ? json_real(v) : json_null());
        if (!ok)
            json_object_set_new(st, dpd_metric_name(k), json_pack("{s:s, s:s}", "status",
                                                                   dpd_metric_status_str(m->status[k] ? m->status[k] : DPD_METRIC_INVALID),
                                                                   "reason", m->reason[k][0] ? m->reason[k] : "not finite"));
    }
    if (json_object_size(st)) json_object_set_new(o, "status", st);
    else json_decref(st);
    return o;
}

void dpd_run_event(dpd_rundir *d, dpd_event *e) {
    static const char *const names[] = {"run_started", "progress", "epoch", "checkpoint", "warning", "run_ended"};
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
        break;
    case DPD_EV_WARNING:
        json_object_set_new(j, "message", json_string(e->message ? e->message : ""));
        break;
    case DPD_EV_RUN_ENDED:
        json_object_set_new(j, "outcome", json_string(e->outcome ? e->outcome : ""));
        json_object_set_new(j, "status", json_string(dpd_status_str(e->status)));
        if (e->message) json_object_set_new(j, "message", json_string(e->message));
        break;
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
    rmdir(d->dir);
    d->dir[0] = 0;
}

void dpd_run_free(dpd_rundir *d) {
    dpd_text_free(&d->hist);
    dpd_text_free(&d->events);
}
