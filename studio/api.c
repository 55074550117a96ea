/* api: the routes of docs/studio.md behind the boundary of http.c. */
#include <dirent.h>
#include <limits.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "guard.h"
#include "http.h"
#include "job.h"
#include "public.h"


static json_t *jtime(double t) {
    if (t <= 0) return json_null();
    char b[40];
    studio_iso(t, b, sizeof b);
    return json_string(b);
}

static json_t *jstr(const char *s) { return s && s[0] ? json_string(s) : json_null(); }

static int active(int st) { return st == ST_RUNNING || st == ST_CANCEL_REQUESTED; }

/* The run directory a worker reported (result.json's summary), resolved; "" when none yet or
 * when it does not lie inside the run's out/ (the worker's word is checked, as for artifacts). */
static void run_dir_of(http *h, const run_rec *rec, char *out, size_t n) {
    char path[4400], base[4400], real[PATH_MAX];
    studio_run_path(h->o.root, rec->ws, rec->id, "", path, sizeof path);
    json_t *res = studio_load_json(path, "result.json", 0);
    const char *d = json_string_value(json_object_get(json_object_get(res, "summary"), "run_dir"));
    out[0] = 0;
    studio_run_path(h->o.root, rec->ws, rec->id, "out/", base, sizeof base);
    if (d && d[0]) {
        if (d[0] == '/') snprintf(path, sizeof path, "%s", d);
        else studio_run_path(h->o.root, rec->ws, rec->id, d, path, sizeof path);
        if (realpath(path, real) && !strncmp(real, base, strlen(base))) snprintf(out, n, "%s", real);
    }
    json_decref(res);
}

static int exists(const char *path) { return access(path, R_OK) == 0; }

/* Which optional parts of the run can be read now (live, plots, results, history): a client asks
 * for what exists instead of collecting 404s. */
static json_t *available(http *h, const run_rec *r) {
    char dir[4400], p[4700], rd[4400];
    studio_run_path(h->o.root, r->ws, r->id, NULL, dir, sizeof dir);
    run_dir_of(h, r, rd, sizeof rd);
    snprintf(p, sizeof p, "%s/live.json", dir);
    int live = exists(p);
    snprintf(p, sizeof p, "%s/result.json", dir);
    int results = exists(p);
    snprintf(p, sizeof p, "%s/plots/plots.json", rd);
    int plots = rd[0] && exists(p);
    snprintf(p, sizeof p, "%s/history.csv", rd);
    int history = live || (rd[0] && exists(p));
    return json_pack("{s:b, s:b, s:b, s:b}", "live", live, "plots", plots, "results", results, "history", history);
}

json_t *api_run_json(http *h, const run_rec *r, int detail) {
    json_t *opts = json_loads(r->request, 0, NULL);
    json_t *err = r->err_code[0] ? json_pack("{s:s, s:s, s:o, s:n}", "code", r->err_code, "message", r->err_msg, "field",
                                              jstr(r->err_field), "hint")
                                 : json_null();
    if (r->err_code[0] && !strcmp(r->err_code, "worker_died"))
        json_object_set_new(err, "hint", json_string("see the run's worker.log; a worker killed by the system for memory ends this way"));
    double beat = r->heartbeat > 0 ? r->heartbeat : r->started;
    int stale = active(r->status) && beat > 0 && studio_now() - beat > h->o.stale_s;
    json_t *o = json_pack("{s:s, s:s, s:s, s:o, s:s, s:o, s:o, s:o, s:o}", "id", r->id, "verb", r->verb, "dataset", r->dataset,
                          "options", opts ? opts : json_object(), "status", store_status_name(r->status), "reason_code",
                          jstr(r->reason_code), "reason", jstr(r->reason), "wait_reason",
                          r->status == ST_QUEUED ? jstr(r->wait_reason) : json_null(), "error", err);
    json_object_set_new(o, "created_at", jtime(r->created));
    json_object_set_new(o, "started_at", jtime(r->started));
    json_object_set_new(o, "finished_at", jtime(r->finished));
    json_object_set_new(o, "updated_at", jtime(r->updated));
    json_object_set_new(o, "parent_id", jstr(r->parent));
    json_object_set_new(o, "idempotency_key", jstr(r->idem));
    json_object_set_new(o, "cancel_requested", json_boolean(r->status == ST_CANCEL_REQUESTED));
    json_object_set_new(o, "progress", json_pack("{s:i, s:i, s:I, s:I}", "epoch", r->epoch, "epochs", r->epochs, "steps_done",
                                                 (json_int_t)r->steps_done, "steps", (json_int_t)r->steps));
    json_object_set_new(o, "last_seq", json_integer(r->last_seq));
    json_object_set_new(o, "heartbeat_at", jtime(r->heartbeat));
    json_object_set_new(o, "heartbeat_stale", json_boolean(stale));
    json_object_set_new(o, "exit_code", r->exit_code >= 0 ? json_integer(r->exit_code) : json_null());
    json_object_set_new(o, "pid", r->pid > 0 && active(r->status) ? json_integer(r->pid) : json_null());
    json_object_set_new(o, "events_skipped", json_integer(r->skipped));
    if (detail) json_object_set_new(o, "available", available(h, r));
    return o;
}

/* ---- helpers ---- */

static int id_ok(const char *s, char lead, size_t max) {
    size_t n = strlen(s);
    if (n < 2 || n > max || s[0] != lead) return 0;
    for (size_t i = 1; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
    return 1;
}

int api_dataset_name(const char *s) { /* a dataset name: one safe path component */
    size_t n = strlen(s);
    if (n < 1 || n > 64 || s[0] == '.') return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || s[i] == '_' ||
              s[i] == '-' || s[i] == '.'))
            return 0;
    return 1;
}

/* ---- datasets ---- */

/* A stamp of a dataset directory's files (names, sizes, mtimes): a submission does not parse the
 * same CSVs again while it holds (h->cache). */
static unsigned long long stamp_of(const char *dir) {
    unsigned long long h = 1469598103934665603ULL;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char p[4700];
        struct stat sb;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (e->d_name[0] == '.' || stat(p, &sb)) continue;
        unsigned long long v[3] = {(unsigned long long)sb.st_size, (unsigned long long)sb.st_mtim.tv_sec,
                                   (unsigned long long)sb.st_mtim.tv_nsec};
        for (const char *c = e->d_name; *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ULL;
        for (int i = 0; i < 3; i++) h = (h ^ v[i]) * 1099511628211ULL;
    }
    if (d) closedir(d);
    return h;
}

static dpd_status data_info(http *h, const char *dir, job_data *out, dpd_error *err) {
    unsigned long long st = stamp_of(dir);
    pthread_mutex_lock(&h->mu);
    const int ncache = (int)(sizeof h->cache / sizeof *h->cache);
    for (int i = 0; i < ncache; i++)
        if (h->cache[i].stamp == st && !strcmp(h->cache[i].dir, dir)) {
            *out = h->cache[i].d;
            pthread_mutex_unlock(&h->mu);
            return DPD_OK;
        }
    pthread_mutex_unlock(&h->mu);
    dpd_status s = job_data_load(dir, out, err);
    if (s) return s;
    pthread_mutex_lock(&h->mu);
    int i = h->cache_next++ % ncache;
    snprintf(h->cache[i].dir, sizeof h->cache[i].dir, "%s", dir);
    h->cache[i].stamp = st, h->cache[i].d = *out;
    pthread_mutex_unlock(&h->mu);
    return DPD_OK;
}

/* The directory of dataset name; "" with an error queued when unknown. */
static int dataset_dir(http *h, const char *name, char *dir, size_t n, dpd_error *err) {
    if (!strcmp(name, "synth")) {
        snprintf(dir, n, "%s/datasets/synth", h->o.root);
        struct stat sb;
        if (!stat(dir, &sb)) return 0;
        /* made once, outside the lock (it takes a while): in a staging directory of its own, then
         * renamed; a concurrent maker's copy is identical, and the first rename wins */
        char tmp[4400];
        unsigned char rnd[6];
        if (getrandom(rnd, sizeof rnd, 0) != sizeof rnd) {
            snprintf(err->msg, sizeof err->msg, "dataset: no random bytes");
            return -1;
        }
        snprintf(tmp, sizeof tmp, "%s/datasets/.staging-synth-%02x%02x%02x%02x%02x%02x", h->o.root, rnd[0], rnd[1], rnd[2],
                 rnd[3], rnd[4], rnd[5]);
        dpd_synth_cfg c;
        dpd_synth_defaults(&c);
        int rc = dpd_synth_write(&c, tmp, err);
        if (!rc && rename(tmp, dir) && stat(dir, &sb)) rc = -1;
        studio_rmtree(tmp);
        if (rc && !err->msg[0]) snprintf(err->msg, sizeof err->msg, "dataset: the synthetic dataset could not be made");
        return rc ? -1 : 0;
    }
    if (!strncmp(name, "upload:", 7)) {
        if (h->o.public_mode || !api_dataset_name(name + 7)) goto unknown;
        snprintf(dir, n, "%s/datasets/uploads/%s", h->o.root, name + 7);
        struct stat sb;
        if (stat(dir, &sb)) goto unknown;
        return 0;
    }
    if (!api_dataset_name(name)) goto unknown;
    for (int i = 0; i < h->o.ndata; i++) {
        snprintf(dir, n, "%s/%s", h->o.data[i], name);
        char spec[4400];
        snprintf(spec, sizeof spec, "%s/spec.json", dir);
        if (!access(spec, R_OK)) return 0;
    }
unknown:
    snprintf(err->msg, sizeof err->msg, "dataset: '%.64s' is not a dataset here (GET /api/v1/datasets lists them)", name);
    return -1;
}

static enum MHD_Result datasets_list(req *r) {
    http *h = r->h;
    json_t *a = json_array();
    json_array_append_new(a, json_pack("{s:s, s:s, s:s}", "name", "synth", "kind", "synth", "about",
                                       "dpd synth's defaults: 10 carriers of 20 MHz at 800 MHz, 64-QAM"));
    for (int i = h->o.public_mode ? 0 : -1; i < h->o.ndata; i++) { /* public mode: no (shared) uploads */
        char base[4400];
        if (i < 0) snprintf(base, sizeof base, "%s/datasets/uploads", h->o.root);
        else snprintf(base, sizeof base, "%s", h->o.data[i]);
        DIR *d = opendir(base);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            char spec[4700];
            snprintf(spec, sizeof spec, "%s/%s/spec.json", base, e->d_name);
            if (!api_dataset_name(e->d_name) || access(spec, R_OK)) continue;
            char nm[128];
            snprintf(nm, sizeof nm, "%s%s", i < 0 ? "upload:" : "", e->d_name);
            int shadowed = !strcmp(nm, "synth"); /* the name resolves to the first: built-in, then --data in order */
            for (size_t k = 0; k < json_array_size(a) && !shadowed; k++)
                shadowed = !strcmp(json_string_value(json_object_get(json_array_get(a, k), "name")), nm);
            if (shadowed) continue;
            json_t *d1 = json_pack("{s:s, s:s}", "name", nm, "kind", i < 0 ? "upload" : "dir");
            char sub[4400];
            snprintf(sub, sizeof sub, "%s/%s", base, e->d_name);
            json_t *sj = studio_load_json(sub, "spec.json", 0); /* its band plan, as spec.json declares it */
            static const char *const keys[] = {"input_signal_fs", "bw_main_ch", "n_sub_ch", "nperseg", "layout"};
            for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
                json_t *v = json_object_get(sj, keys[k]);
                if (json_is_number(v) || json_is_string(v)) json_object_set(d1, keys[k], v);
            }
            json_decref(sj);
            json_array_append_new(a, d1);
        }
        if (d) closedir(d);
    }
    return http_json(r, 200, json_pack("{s:o}", "datasets", a));
}

/* The files an upload may hold: the six split files (the first SPLIT_FILES), or the one data.csv. */
#define SPLIT_FILES 6
static const char *const upload_files[] = {"train_input.csv", "train_output.csv", "val_input.csv", "val_output.csv",
                                           "test_input.csv",  "test_output.csv",  "data.csv"};
_Static_assert(sizeof upload_files / sizeof *upload_files == SPLIT_FILES + 1, "the split files, then data.csv");

static enum MHD_Result datasets_upload(req *r) {
    http *h = r->h;
    enum MHD_Result rc;
    json_t *j = http_body_json(r, &rc);
    if (!j) return rc;
    const char *name = json_string_value(json_object_get(j, "name")), *key;
    json_t *spec = json_object_get(j, "spec"), *files = json_object_get(j, "files"), *kv;
    char staging[4400] = "", dir[4400], path[4600];
    json_object_foreach(j, key, kv) /* as a submit's unknown fields are refused */
        if (strcmp(key, "name") && strcmp(key, "spec") && strcmp(key, "files")) {
            rc = http_error(r, 422, "invalid_dataset", key, "the fields are name, spec and files", "%.64s: not a field of an upload", key);
            goto out;
        }
    if (!name || !api_dataset_name(name)) {
        rc = http_error(r, 422, "invalid_dataset", "name", NULL, "name: 1-64 characters of A-Z a-z 0-9 . _ - (not starting with .)");
        goto out;
    }
    if (!json_is_object(spec) || !json_is_object(files)) {
        rc = http_error(r, 422, "invalid_dataset", json_is_object(spec) ? "files" : "spec", NULL,
                        "spec (spec.json as an object) and files (file name -> CSV text) are required");
        goto out;
    }
    snprintf(dir, sizeof dir, "%s/datasets/uploads/%s", h->o.root, name);
    if (!access(dir, F_OK)) {
        rc = http_error(r, 409, "dataset_exists", "name", NULL, "a dataset named %s exists", name);
        goto out;
    }
    unsigned char rnd[6];
    if (getrandom(rnd, sizeof rnd, 0) != sizeof rnd) {
        rc = http_error(r, 500, "service_error", NULL, NULL, "no random bytes");
        goto out;
    }
    snprintf(staging, sizeof staging, "%s/datasets/.staging-%02x%02x%02x%02x%02x%02x", h->o.root, rnd[0], rnd[1], rnd[2],
             rnd[3], rnd[4], rnd[5]);
    if (mkdir(staging, 0700)) {
        rc = http_error(r, 500, "service_error", NULL, NULL, "cannot create a staging directory: %s", strerror(errno));
        staging[0] = 0;
        goto out;
    }
    const char *fname;
    json_t *v;
    json_object_foreach(files, fname, v) { /* every name first: one that is not a dataset's is told before what is missing */
        int known = 0;
        for (size_t i = 0; i < sizeof upload_files / sizeof *upload_files; i++) known |= !strcmp(fname, upload_files[i]);
        if (!known || !json_is_string(v)) {
            rc = http_error(r, 422, "invalid_dataset", "files", "files are train_input.csv ... test_output.csv, or data.csv",
                            "files: '%.64s' is not a dataset file, or its content is not a string", fname);
            goto out;
        }
    }
    if (!json_object_get(files, upload_files[SPLIT_FILES])) { /* the split files: each named when missing, before any is read */
        char missing[160] = "";
        for (size_t i = 0; i < SPLIT_FILES; i++)
            if (!json_object_get(files, upload_files[i]))
                snprintf(missing + strlen(missing), sizeof missing - strlen(missing), "%s%s", missing[0] ? ", " : "",
                         upload_files[i]);
        if (missing[0]) {
            rc = http_error(r, 422, "invalid_dataset", "files", "give the six split files, or data.csv (spec's layout single_csv)",
                            "files: %s missing", missing);
            goto out;
        }
    }
    json_object_foreach(files, fname, v) {
        snprintf(path, sizeof path, "%s/%s", staging, fname);
        if (studio_write_file(path, json_string_value(v), json_string_length(v))) {
            rc = http_error(r, 507, "storage_error", NULL, NULL, "cannot write %s: %s", fname, strerror(errno));
            goto out;
        }
    }
    char *st = json_dumps(spec, JSON_INDENT(2));
    snprintf(path, sizeof path, "%s/spec.json", staging);
    int w = st ? studio_write_file(path, st, strlen(st)) : -1;
    free(st);
    if (w) {
        rc = http_error(r, 507, "storage_error", NULL, NULL, "cannot write spec.json");
        goto out;
    }
    dpd_dataset ds;
    dpd_error err = {0};
    unsigned all = (1u << DPD_TRAIN) | (1u << DPD_VAL) | (1u << DPD_TEST);
    if (dpd_dataset_load(staging, all, all, &ds, &err)) {
        /* the message names the staging path, maybe more than once: name the upload instead */
        char msg[1100];
        size_t m = 0, sl = strlen(staging);
        for (const char *q = err.msg, *p; *q && m < sizeof msg - 1; q = p ? p + sl : q + strlen(q)) {
            p = strstr(q, staging);
            m += (size_t)snprintf(msg + m, sizeof msg - m, "%.*s%s", p ? (int)(p - q) : (int)strlen(q), q, p ? name : "");
        }
        msg[sizeof msg - 1] = 0;
        char spec_file[128];
        snprintf(spec_file, sizeof spec_file, "%s/spec.json", name); /* the file at fault, as the message names it */
        rc = http_error(r, 422, "invalid_dataset", strstr(msg, spec_file) ? "spec" : "files", NULL, "%s", msg);
        goto out;
    }
    static const char *const split[] = {"train", "val", "test"};
    for (int k = DPD_VAL; k <= DPD_TEST; k++)
        if (ds.split[k].n < (size_t)ds.spec.nperseg) { /* no run could score it: refused now, not at its first submit */
            rc = http_error(r, 422, "invalid_dataset", "files", "give each of val and test at least nperseg samples",
                            "files: the %s split has %zu samples, fewer than one segment (nperseg %d)", split[k], ds.split[k].n,
                            ds.spec.nperseg);
            dpd_dataset_free(&ds);
            goto out;
        }
    dpd_dataset_free(&ds);
    if (rename(staging, dir)) {
        rc = http_error(r, 409, "dataset_exists", "name", NULL, "a dataset named %s exists", name);
        goto out;
    }
    staging[0] = 0;
    char id[80];
    snprintf(id, sizeof id, "upload:%s", name);
    rc = http_json(r, 201, json_pack("{s:s, s:s}", "name", id, "kind", "upload"));
out:
    if (staging[0]) studio_rmtree(staging);
    json_decref(j);
    return rc;
}

/* ---- runs ---- */

static enum MHD_Result reply_run(req *r, unsigned status, const run_rec *rec) {
    return http_json(r, status, api_run_json(r->h, rec, 1));
}

/* The run directory a succeeded PA run of workspace ws wrote (its result.json), for train-dpd's
 * pa. */
static int pa_dir(http *h, const char *ws, const char *id, char *out, size_t n, char *why, size_t nwhy) {
    run_rec p;
    if (!id_ok(id, 'r', 23) || store_get_ws(h->st, ws, id, &p))
        return snprintf(why, nwhy, "no run of this studio has that id"), -1;
    if (strcmp(p.verb, "train-pa") && strcmp(p.verb, "fit-ls"))
        return snprintf(why, nwhy, "it is a %s run, not a PA model's", p.verb), -1;
    if (p.status != ST_SUCCEEDED)
        return snprintf(why, nwhy, "it is %s, and a PA must have succeeded (%s)", store_status_name(p.status),
                        store_terminal(p.status) ? "retry it" : "wait for it to finish"), -1;
    run_dir_of(h, &p, out, n);
    if (!out[0]) snprintf(why, nwhy, "its run directory is gone");
    return out[0] ? 0 : -1;
}

/* 429 for a submission over a quota (JOB_RUN_QUOTA, JOB_PENDING_QUOTA, JOB_QUEUE_FULL) of n runs. */
static enum MHD_Result quota_error(req *r, int which, int n) {
    if (which == JOB_RUN_QUOTA)
        return http_error(r, 429, "run_quota", NULL, "a new session has its own quota",
                          "the session has submitted %d runs, the most it may", n);
    if (which == JOB_PENDING_QUOTA)
        return http_error(r, 429, "pending_quota", NULL, "wait for a run to finish, or cancel one",
                          "the session has %d runs queued or running, the most it may", n);
    r->retry_after = 60;
    return http_error(r, 429, "queue_full", NULL, "try again later",
                      "the server has %d runs queued or running, the most it takes", n);
}

/* Validates and queues a run; parent "" for a new one. */
static enum MHD_Result submit(req *r, const char *verb, const char *dataset, json_t *options, const char *idem,
                              const char *parent) {
    http *h = r->h;
    if (__atomic_load_n(&h->refuse_writes, __ATOMIC_ACQUIRE))
        return http_error(r, 503, "shutting_down", NULL, NULL, "the service is shutting down");
    job j;
    dpd_error err = {0};
    if (job_resolve(&j, verb, options, h->o.test_workers, &err))
        return http_error(r, 422, "invalid_config", err.field, NULL, "%s", err.msg);
    if (h->o.public_mode && job_public_check(&j, &err))
        return http_error(r, 422, "compute_limit", err.field, "public mode bounds each run (docs/studio.md)", "%s", err.msg);
    run_rec same; /* the quotas are checked first (cheap), then again as the run is stored (atomic) */
    store_quota quota = {h->o.session_runs, h->o.session_pending, h->o.max_pending}, *q = h->o.public_mode ? &quota : NULL;
    int repeat = q && idem && !store_get_idem(h->st, r->ws, idem, &same); /* a repeat is never refused */
    if (q && !repeat) {
        if (pub_over(h->pub, &r->sess)) /* as it is now: the session may have gone over since the request came */
            return http_error(r, 413, "workspace_limit", NULL, "download what you need, then start a new session",
                              "the session's files are over its storage quota of %d MiB", h->o.quota_mb);
        if (http_disk_low(h)) return http_error(r, 507, "storage_busy", NULL, "try again later", "the server's disk is nearly full");
        int all = store_count(h->st, r->ws, -1), pending = store_pending(h->st, r->ws), queue = store_pending(h->st, NULL);
        if (all >= q->runs) return quota_error(r, JOB_RUN_QUOTA, all);
        if (pending >= q->pending) return quota_error(r, JOB_PENDING_QUOTA, pending);
        if (q->queue && queue >= q->queue) return quota_error(r, JOB_QUEUE_FULL, queue);
    }
    if (!dataset) return http_error(r, 422, "invalid_config", "dataset", NULL, "dataset: required");
    char dir[4400], pdir[4096] = "";
    memset(&err, 0, sizeof err);
    job_data info;
    if (dataset_dir(h, dataset, dir, sizeof dir, &err) || data_info(h, dir, &info, &err) || job_check_data(&j, &info, &err)) {
        int frame = !strcmp(err.field, "frame"); /* an option the dataset is too short for */
        return http_error(r, 422, frame ? "invalid_config" : "invalid_dataset", frame ? "frame" : "dataset", NULL, "%s", err.msg);
    }
    char pwhy[160];
    if (j.pa[0] && pa_dir(h, r->ws, j.pa, pdir, sizeof pdir, pwhy, sizeof pwhy))
        return http_error(r, 422, "invalid_config", "pa", "name a succeeded train-pa run by its id",
                          "pa: '%s' is not a succeeded PA run of this studio: %s", j.pa, pwhy);
    if (pdir[0]) { /* as dpd_train will refuse it, before it waits in the queue: the samples decide, not the names */
        char ck[4200];
        dpd_ckpt_info ci;
        dpd_error cerr = {0};
        snprintf(ck, sizeof ck, "%s/best.safetensors", pdir);
        if (!dpd_ckpt_info_read(ck, &ci, &cerr) && ci.train_sha256[0] && info.train_sha256[0] &&
            strcmp(ci.train_sha256, info.train_sha256))
            return http_error(r, 422, "invalid_config", "pa", "train the PA on this dataset, or the DPD on the PA's",
                              "pa: run %s was trained on another train split than dataset %s's (dataset '%s' then)", j.pa,
                              dataset, ci.dataset);
    }
    int printable = 1;
    for (const char *p = idem; p && *p; p++) printable &= (unsigned char)*p >= 0x20 && *p != 0x7f;
    if (idem && (!idem[0] || strlen(idem) > 256 || !printable))
        return http_error(r, 422, "invalid_config", "idempotency_key", NULL, "idempotency_key: 1 to 256 printable characters");
    run_rec rec = {0};
    snprintf(rec.verb, sizeof rec.verb, "%s", verb);
    snprintf(rec.dataset, sizeof rec.dataset, "%s", dataset);
    snprintf(rec.idem, sizeof rec.idem, "%s", idem ? idem : "");
    snprintf(rec.parent, sizeof rec.parent, "%s", parent);
    snprintf(rec.ws, sizeof rec.ws, "%s", r->ws);
    json_t *none = json_object();
    if (!options) options = none;
    char *opts = json_dumps(options, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (!opts || strlen(opts) >= sizeof rec.request) {
        free(opts);
        json_decref(none);
        return http_error(r, 422, "invalid_config", "options", NULL, "options: too long");
    }
    snprintf(rec.request, sizeof rec.request, "%s", opts);
    free(opts);
    json_t *jobj = json_pack("{s:s, s:s, s:s, s:O, s:s, s:s}", "verb", verb, "dataset", dataset, "dataset_dir", dir, "options",
                            options, "pa", j.pa, "pa_dir", pdir);
    json_t *asked_options = json_incref(options); /* an idempotency key's run must be this request's */
    json_decref(none);
    char why[256];
    if (q && !repeat && pub_ip_run(h->pub, r->ip, 1)) {
        json_decref(jobj), json_decref(asked_options);
        return http_error(r, 429, "ip_run_quota", NULL, "try again later",
                          "this address has submitted %d runs, the most it may", h->o.ip_runs);
    }
    char asked_verb[sizeof rec.verb], asked_dataset[sizeof rec.dataset], asked_parent[sizeof rec.parent];
    snprintf(asked_verb, sizeof asked_verb, "%s", rec.verb), snprintf(asked_dataset, sizeof asked_dataset, "%s", rec.dataset);
    snprintf(asked_parent, sizeof asked_parent, "%s", rec.parent);
    int existed = 0, e = job_enqueue(h->st, h->o.root, &rec, jobj, q, &existed, why, sizeof why), match = 1;
    json_decref(jobj);
    if (!e && existed) { /* the key's run: this request's, or a conflict */
        json_t *had = json_loads(rec.request, 0, NULL);
        match = !strcmp(asked_verb, rec.verb) && !strcmp(asked_dataset, rec.dataset) && !strcmp(asked_parent, rec.parent) &&
               had && json_equal(had, asked_options);
        json_decref(had);
    }
    json_decref(asked_options);
    if (q && !repeat && (e || existed)) pub_ip_run(h->pub, r->ip, -1); /* not a new run */
    if (e && e < JOB_FAILED)
        return quota_error(r, e, e == JOB_RUN_QUOTA ? q->runs : e == JOB_PENDING_QUOTA ? q->pending : q->queue);
    if (e) return http_error(r, e == JOB_NO_DISK ? 507 : 500, e == JOB_NO_DISK ? "storage_error" : "service_error", NULL, NULL,
                             "%s", why);
    if (existed && !match)
        return http_error(r, 422, "idempotency_key_reused", "idempotency_key", "use a new key for another request",
                          "idempotency_key: run %s was submitted with this key and another request", rec.id);
    if (existed) return reply_run(r, 200, &rec);
    char wait[128]; /* the supervisor keeps it current from now on */
    int queued = store_count(h->st, NULL, ST_QUEUED), busy = super_busy(h->sv);
    snprintf(wait, sizeof wait, "position %d of %d, %d of %d slot%s busy", queued, queued, busy, h->o.slots,
             h->o.slots == 1 ? "" : "s");
    store_set_waits(h->st, 1, (const char(*)[24])rec.id, (const char(*)[128])wait);
    snprintf(rec.wait_reason, sizeof rec.wait_reason, "%s", wait);
    super_wake(h->sv);
    return reply_run(r, 201, &rec);
}

static enum MHD_Result runs_post(req *r) {
    enum MHD_Result rc;
    json_t *j = http_body_json(r, &rc);
    if (!j) return rc;
    json_t *verb = json_object_get(j, "verb"), *ds = json_object_get(j, "dataset"), *idem = json_object_get(j, "idempotency_key");
    const char *k;
    json_t *v;
    json_object_foreach(j, k, v) if (strcmp(k, "verb") && strcmp(k, "dataset") && strcmp(k, "options") &&
                                     strcmp(k, "idempotency_key")) {
        rc = http_error(r, 422, "invalid_config", k, "the fields are verb, dataset, options and idempotency_key",
                        "%s: not a field of a run request", k);
        json_decref(j);
        return rc;
    }
    const char *f = verb && !json_is_string(verb) ? "verb" : ds && !json_is_string(ds) ? "dataset"
                  : idem && !json_is_string(idem) ? "idempotency_key" : NULL;
    if (f)
        rc = http_error(r, 422, "invalid_config", f, NULL, "%s: must be a string", f);
    else
        rc = submit(r, json_string_value(verb), json_string_value(ds), json_object_get(j, "options"), json_string_value(idem), "");
    json_decref(j);
    return rc;
}

typedef struct list_ctx {
    http *h;
    json_t *a;
} list_ctx;

static int list_one(void *user, const run_rec *rec) {
    list_ctx *c = user;
    json_array_append_new(c->a, api_run_json(c->h, rec, 0));
    return 0;
}

/* A whole number written plainly: decimal digits, a '-' before them at most (no sign '+', no
 * spaces, no other base); 0 and *x, or -1. */
static int whole(const char *v, long *x) {
    const char *d = v[0] == '-' ? v + 1 : v;
    if (*d < '0' || *d > '9') return -1;
    char *end;
    errno = 0;
    *x = strtol(v, &end, 10);
    return *end || errno ? -1 : 0;
}

static int int_arg(req *r, const char *name, long def, long lo, long hi, long *out) {
    const char *v = http_arg(r, name);
    long x;
    if (!v) {
        *out = def;
        return 0;
    }
    if (whole(v, &x) || x < lo || x > hi) return -1;
    *out = x;
    return 0;
}

static enum MHD_Result runs_list(req *r) {
    long limit, offset, total = 0;
    const char *st = http_arg(r, "status");
    int status = st ? store_status_parse(st) : -1;
    if (st && status < 0) return http_error(r, 422, "invalid_query", "status", NULL, "status: not a run status");
    if (int_arg(r, "limit", 100, 1, 500, &limit))
        return http_error(r, 422, "invalid_query", "limit", NULL, "limit: 1..500");
    if (int_arg(r, "offset", 0, 0, 1L << 30, &offset))
        return http_error(r, 422, "invalid_query", "offset", NULL, "offset: a whole number from 0 to %ld", 1L << 30);
    list_ctx c = {r->h, json_array()};
    if (store_list(r->h->st, r->ws, status, (int)limit, (int)offset, list_one, &c, &total)) {
        json_decref(c.a);
        return http_error(r, 500, "service_error", NULL, NULL, "the job store failed");
    }
    return http_json(r, 200, json_pack("{s:o, s:I}", "runs", c.a, "total", (json_int_t)total));
}

typedef struct ev_ctx {
    json_t *a;
} ev_ctx;

static int ev_one(void *user, long seq, double ts, const char *type, const char *data) {
    ev_ctx *c = user;
    json_t *d = json_loads(data, 0, NULL);
    json_t *e = json_pack("{s:I, s:o, s:s, s:o}", "seq", (json_int_t)seq, "ts", jtime(ts), "type", type, "data",
                          d ? d : json_object());
    json_array_append_new(c->a, e);
    return 0;
}

static enum MHD_Result run_events(req *r, const run_rec *rec) {
    long after, limit;
    if (int_arg(r, "after", 0, 0, 1L << 40, &after))
        return http_error(r, 422, "invalid_query", "after", NULL, "after: a whole number from 0 to %ld", 1L << 40);
    if (int_arg(r, "limit", 500, 1, 5000, &limit))
        return http_error(r, 422, "invalid_query", "limit", NULL, "limit: 1..5000");
    if (after > rec->last_seq)
        return http_error(r, 409, "cursor_out_of_range", "after", "read the run again and replay from 0",
                          "after: %ld is past the last event (%ld)", after, rec->last_seq);
    ev_ctx c = {json_array()};
    store_events(r->h->st, rec->id, after, (int)limit, ev_one, &c);
    run_rec now;
    if (store_get(r->h->st, rec->id, &now)) {
        json_decref(c.a);
        return http_error(r, 500, "service_error", NULL, NULL, "the job store failed");
    }
    long last = json_array_size(c.a) ? (long)json_integer_value(json_object_get(json_array_get(c.a, json_array_size(c.a) - 1), "seq")) : after;
    return http_json(r, 200, json_pack("{s:o, s:I, s:b}", "events", c.a, "last_seq", (json_int_t)now.last_seq, "terminal",
                                       store_terminal(now.status) && last >= now.last_seq));
}

/* A JSON file of the run directory (live.json, result.json) as the answer. */
/* 404 not_available for what: "not available yet" while rec may still make it; once it has ended
 * without it (cancelled while queued, failed before its first epoch), that it never will be. */
static enum MHD_Result absent(req *r, const run_rec *rec, const char *what) {
    if (!store_terminal(rec->status)) return http_error(r, 404, "not_available", NULL, NULL, "%s is not available yet", what);
    return http_error(r, 404, "not_available", NULL, NULL, "%s is not available: the run ended %s without it%s", what,
                      store_status_name(rec->status), rec->started > 0 ? "" : " (it never started)");
}

static enum MHD_Result run_file_json(req *r, const run_rec *rec, const char *name, const char *what) {
    char dir[4400];
    studio_run_path(r->h->o.root, rec->ws, rec->id, "", dir, sizeof dir);
    json_t *j = studio_load_json(dir, name, 0);
    if (!j) return absent(r, rec, what);
    if (!strcmp(name, "result.json")) { /* the summary's fields, with outcome, error and the run's status */
        json_t *o = json_object_get(j, "summary");
        o = json_is_object(o) ? json_incref(o) : json_object();
        json_object_set(o, "outcome", json_object_get(j, "outcome"));
        json_object_set_new(o, "error", json_incref(json_object_get(j, "error")) ?: json_null());
        json_object_set_new(o, "status", json_string(store_status_name(rec->status)));
        json_decref(j);
        j = o;
    }
    return http_json(r, 200, j);
}

/* GET /runs/{id}/logs?offset=&limit=: worker.log from byte offset (inside a line: from the next
 * one), at most limit whole lines (and 256 KiB); a last line without its newline only once the
 * run has ended. Invalid UTF-8
 * becomes '?'; a line is shown up to its first 64 KiB. */
static enum MHD_Result run_logs(req *r, const run_rec *rec) {
    long offset, limit;
    if (int_arg(r, "offset", 0, 0, 1L << 40, &offset))
        return http_error(r, 422, "invalid_query", "offset", NULL, "offset: a whole number from 0 to %ld", 1L << 40);
    if (int_arg(r, "limit", 500, 1, 2000, &limit))
        return http_error(r, 422, "invalid_query", "limit", NULL, "limit: 1..2000");
    char path[4400];
    studio_run_path(r->h->o.root, rec->ws, rec->id, "logs/worker.log", path, sizeof path);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat sb = {0};
    if (fd >= 0 && (fstat(fd, &sb) || !S_ISREG(sb.st_mode))) {
        close(fd);
        return http_error(r, 500, "service_error", NULL, NULL, "worker.log is not a regular file");
    }
    if (offset > sb.st_size) {
        if (fd >= 0) close(fd);
        return http_error(r, 409, "cursor_out_of_range", "offset", "read from 0", "offset: %ld is past the log's end (%lld)",
                          offset, (long long)sb.st_size);
    }
    enum { CAP = 256 * 1024, LINE = 64 * 1024 };
    char *buf = malloc(CAP + 1), before = '\n';
    if (fd >= 0 && offset > 0 && pread(fd, &before, 1, offset - 1) != 1) before = '\n';
    ssize_t got = fd >= 0 && buf ? pread(fd, buf, CAP, offset) : 0;
    if (fd >= 0) close(fd);
    if (!buf || got < 0) {
        free(buf);
        return http_error(r, 500, "service_error", NULL, NULL, "cannot read worker.log");
    }
    int ended = store_terminal(rec->status);
    json_t *lines = json_array();
    size_t pos = 0;
    if (before != '\n') { /* an offset inside a line: from the next one (a line is never given in part) */
        char *nl = memchr(buf, '\n', (size_t)got);
        if (nl) pos = (size_t)(nl - buf) + 1;
        else if (got == CAP || (ended && offset + got == sb.st_size)) pos = (size_t)got; /* a line longer than the
                                                                                         * window, or the ended run's
                                                                                         * last: passed over */
        else got = 0; /* that line's end is not written yet: nothing until it is */
    }
    while (pos < (size_t)got && json_array_size(lines) < (size_t)limit) {
        char *nl = memchr(buf + pos, '\n', (size_t)got - pos);
        size_t len = nl ? (size_t)(nl - (buf + pos)) : (size_t)got - pos;
        if (!nl && !(ended && offset + got == sb.st_size) && len < LINE) break; /* unfinished: later */
        char *l = strndup(buf + pos, len < LINE ? len : LINE);
        if (l) store_utf8_fix(l), json_array_append_new(lines, json_string(l));
        free(l);
        pos += len + (nl != NULL);
    }
    free(buf);
    long next = offset + (long)pos;
    return http_json(r, 200, json_pack("{s:o, s:I, s:b, s:I}", "lines", lines, "next_offset", (json_int_t)next, "eof",
                                       ended && next == sb.st_size, "size", (json_int_t)sb.st_size));
}

/* The final plot data the worker wrote into the run directory (plots/plots.json). */
static enum MHD_Result run_plots(req *r, const run_rec *rec) {
    char dir[4400];
    run_dir_of(r->h, rec, dir, sizeof dir);
    json_t *j = dir[0] ? studio_load_json(dir, "plots/plots.json", 0) : NULL;
    if (!j) return absent(r, rec, "the run's final plot data");
    return http_json(r, 200, j);
}

static enum MHD_Result run_history(req *r, const run_rec *rec) {
    char path[4600], dir[4400];
    run_dir_of(r->h, rec, dir, sizeof dir);
    int fd = dir[0] ? studio_open_below(dir, "history.csv") : -1; /* read through the descriptor opened so */
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    dpd_error herr;
    json_t *hist = fd >= 0 ? cli_history_json(path, &herr) : NULL; /* opened as a regular file below the run */
    if (fd >= 0) close(fd);
    if (!hist) { /* while the worker runs (or a run without history.csv): the live snapshot's rows */
        studio_run_path(r->h->o.root, rec->ws, rec->id, "", path, sizeof path);
        json_t *live = studio_load_json(path, "live.json", 0);
        json_t *h = json_object_get(live, "history");
        if (h) {
            json_t *o = json_pack("{s:O}", "epochs", h);
            json_decref(live);
            return http_json(r, 200, o);
        }
        json_decref(live);
        return absent(r, rec, "the history (an epoch's rows)");
    }
    return http_json(r, 200, hist);
}

typedef struct art_ctx {
    json_t *a;
    http *h;
    const run_rec *rec;
} art_ctx;

/* Whether artifact a's file (sb, fstat of it) is no longer what was registered when rec ended:
 * another size, or written after (a `dpd train-pa --resume` of the run directory from outside the
 * studio). Its registered size and sha256 would then describe other bytes than are served. */
static int art_changed(const run_rec *rec, const art_rec *a, const struct stat *sb) {
    double mtime = (double)sb->st_mtim.tv_sec + 1e-9 * (double)sb->st_mtim.tv_nsec;
    return (long long)sb->st_size != a->size || (rec->finished > 0 && mtime > rec->finished + 1);
}

static int art_one(void *user, const art_rec *a) {
    art_ctx *c = user;
    char path[4600];
    struct stat sb;
    studio_run_path(c->h->o.root, c->rec->ws, c->rec->id, a->rel, path, sizeof path);
    int changed = !lstat(path, &sb) && S_ISREG(sb.st_mode) && art_changed(c->rec, a, &sb);
    json_array_append_new(c->a, json_pack("{s:s, s:s, s:s, s:I, s:s, s:b}", "id", a->id, "name", a->name, "kind", a->kind,
                                          "size", (json_int_t)a->size, "sha256", a->sha256, "changed", changed));
    return 0;
}

/* Answers 200 with the open file fd (sb: its fstat), which the response then owns, as type, named
 * name in a Content-Disposition of kind disposition ("attachment" or "inline"), under the
 * download deadline. */
static enum MHD_Result send_file(req *r, int fd, const struct stat *sb, const char *type, const char *disposition,
                                 const char *name) {
    struct MHD_Response *resp = MHD_create_response_from_fd((uint64_t)sb->st_size, fd);
    if (!resp) {
        close(fd);
        return MHD_NO;
    }
    char cd[300];
    snprintf(cd, sizeof cd, "%s; filename=\"%s\"", disposition, name);
    MHD_add_response_header(resp, "Content-Type", type);
    MHD_add_response_header(resp, "Content-Disposition", cd);
    enum MHD_Result v = http_queue(r, 200, resp);
    http_download(r);
    return v;
}

static enum MHD_Result run_artifact(req *r, const run_rec *rec, const char *aid) {
    art_rec a;
    size_t len = strlen(aid), digits = strspn(aid + 1, "0123456789");
    if (len < 2 || len > 8 || aid[0] != 'a' || digits != len - 1) /* a1, a2, ... */
        return http_error(r, 404, "artifact_not_found", NULL, NULL, "no such artifact");
    if (store_artifact(r->h->st, rec->id, aid, &a))
        return http_error(r, 404, "artifact_not_found", NULL, NULL, "no such artifact");
    char path[4600];
    studio_run_path(r->h->o.root, rec->ws, rec->id, a.rel, path, sizeof path);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
        if (fd >= 0) close(fd);
        return http_error(r, 410, "artifact_missing", NULL, NULL, "the artifact's file is gone");
    }
    if (store_terminal(rec->status) && art_changed(rec, &a, &sb)) {
        close(fd);
        return http_error(r, 409, "artifact_changed", NULL,
                          "resume a copy of a studio run (its results' resume command does), and import the copy with "
                          "dpd serve --import",
                          "%s changed after the run ended (written again from outside the studio: a CLI resume of its "
                          "directory?): its registered size and sha256 no longer describe it", a.name);
    }
    return send_file(r, fd, &sb, "application/octet-stream", "attachment", a.name);
}

/* GET /runs/{id}/pictures/NAME: a picture the run drew at its end (RUN_DIR/plots/NAME, NAME a
 * chart's file: letters, then .png or .svg), read following no link. */
static enum MHD_Result run_picture(req *r, const run_rec *rec, const char *name) {
    size_t len = strlen(name), stem = strspn(name, "abcdefghijklmnopqrstuvwxyz");
    int png = len == stem + 4 && !strcmp(name + stem, ".png"), svg = len == stem + 4 && !strcmp(name + stem, ".svg");
    char dir[4400], rel[64];
    run_dir_of(r->h, rec, dir, sizeof dir);
    snprintf(rel, sizeof rel, "plots/%s", name);
    int fd = stem && stem <= 16 && (png || svg) && dir[0] ? studio_open_below(dir, rel) : -1;
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb)) {
        if (fd >= 0) close(fd);
        return absent(r, rec, "that picture (GET /runs/{id}/plots lists the charts; psd.png, amam.png, ...)");
    }
    /* an SVG is no page of this origin: downloaded, never shown inline */
    return send_file(r, fd, &sb, png ? "image/png" : "image/svg+xml", svg ? "attachment" : "inline", name);
}

/* ---- the run routes: rec is the request's workspace's run the path names ---- */

static enum MHD_Result run_get(req *r, run_rec *rec, char **arg) { return reply_run(r, 200, rec); }

/* cancel and retry take no body: none, or {} (what clients send by habit). 1 with *v the refusal:
 * a body that is not JSON, or one that asks for something (ignored, it would seem obeyed). */
static int no_body(req *r, const char *what, enum MHD_Result *v) {
    if (!r->len) return 0;
    json_t *j = http_body_json(r, v);
    if (!j) return 1;
    int empty = json_is_object(j) && !json_object_size(j), obj = json_is_object(j);
    char k[72] = ""; /* the first key, copied: j is freed before the answer */
    if (obj && !empty) snprintf(k, sizeof k, "%s", json_object_iter_key(json_object_iter(j)));
    json_decref(j);
    if (empty) return 0;
    *v = http_error(r, 422, "invalid_request", obj ? k : NULL, !strcmp(what, "retry") ? "submit a new run to change its options" : NULL,
                    "%s takes no body (none, or {}), and this one %s%.64s%s", what, obj ? "gives '" : "is not an object",
                    k, obj ? "'" : "");
    return 1;
}

static enum MHD_Result run_cancel(req *r, run_rec *rec, char **arg) {
    enum MHD_Result v;
    if (no_body(r, "cancel", &v)) return v;
    int rc = super_cancel(r->h->sv, rec->id, rec);
    if (rc) return http_error(r, rc > 0 ? 404 : 500, rc > 0 ? "run_not_found" : "service_error", NULL, NULL, "cancel failed");
    return reply_run(r, 200, rec);
}

static enum MHD_Result run_retry(req *r, run_rec *rec, char **arg) {
    enum MHD_Result v;
    if (no_body(r, "retry", &v)) return v;
    if (!store_terminal(rec->status))
        return http_error(r, 409, "run_not_finished", NULL, "cancel it first, or wait", "the run is %s", store_status_name(rec->status));
    json_t *opts = json_loads(rec->request, 0, NULL);
    if (json_object_get(opts, "imported_from")) {
        json_decref(opts);
        return http_error(r, 409, "not_retryable", NULL, "train it again with the CLI, or submit a new run",
                          "an imported run cannot be run again here");
    }
    enum MHD_Result x = submit(r, rec->verb, rec->dataset, opts, NULL, rec->id);
    json_decref(opts);
    return x;
}

static enum MHD_Result run_stream(req *r, run_rec *rec, char **arg) {
    long after;
    const char *last = http_header(r, "Last-Event-ID");
    if (last) {
        if (whole(last, &after) || after < 0) return http_error(r, 422, "invalid_query", "Last-Event-ID", NULL, "Last-Event-ID: not a sequence number");
    } else if (int_arg(r, "after", 0, 0, 1L << 40, &after)) {
        return http_error(r, 422, "invalid_query", "after", NULL, "after: a whole number from 0 to %ld", 1L << 40);
    }
    if (after > rec->last_seq) /* the cursor given: the query's after, or Last-Event-ID */
        return http_error(r, 409, "cursor_out_of_range", last ? "Last-Event-ID" : "after", "read the run again and replay from 0",
                          "%s: %ld is past the last event (%ld)", last ? "Last-Event-ID" : "after", after, rec->last_seq);
    return http_stream(r, rec->id, after);
}

static enum MHD_Result run_live(req *r, run_rec *rec, char **arg) {
    return run_file_json(r, rec, "live.json", "the live snapshot (it comes with the first epoch)");
}

static enum MHD_Result run_results(req *r, run_rec *rec, char **arg) {
    return run_file_json(r, rec, "result.json", "the result (it comes when the worker ends)");
}

static enum MHD_Result run_artifacts(req *r, run_rec *rec, char **arg) {
    art_ctx c = {json_array(), r->h, rec};
    store_artifacts(r->h->st, rec->id, art_one, &c);
    return http_json(r, 200, json_pack("{s:o, s:b}", "artifacts", c.a, "final", store_terminal(rec->status)));
}

static enum MHD_Result run_artifact_get(req *r, run_rec *rec, char **arg) { return run_artifact(r, rec, arg[0]); }
static enum MHD_Result run_events_get(req *r, run_rec *rec, char **arg) { return run_events(r, rec); }
static enum MHD_Result run_history_get(req *r, run_rec *rec, char **arg) { return run_history(r, rec); }
static enum MHD_Result run_plots_get(req *r, run_rec *rec, char **arg) { return run_plots(r, rec); }
static enum MHD_Result run_picture_get(req *r, run_rec *rec, char **arg) { return run_picture(r, rec, arg[0]); }
static enum MHD_Result run_logs_get(req *r, run_rec *rec, char **arg) { return run_logs(r, rec); }

/* ---- system ---- */

static enum MHD_Result system_status(req *r) {
    http *h = r->h;
    json_t *runs = json_object();
    for (int s = 0; s < ST_COUNT; s++) json_object_set_new(runs, store_status_name(s), json_integer(store_count(h->st, r->ws, s)));
    return http_json(r, 200, json_pack("{s:s, s:f, s:i, s:i, s:o}", "version", DPD_VERSION, "uptime_s",
                                       studio_now() - h->started, "slots", h->o.slots, "slots_busy", super_busy(h->sv),
                                       "runs", runs));
}

static enum MHD_Result providers(req *r) {
    dpd_provider_info p[8];
    int n = dpd_provider_list(p, 8);
    json_t *a = json_array();
    for (int i = 0; i < n; i++) {
        json_t *devs = json_array();
        for (int k = 0; k < p[i].ndevices; k++)
            json_array_append_new(devs, json_pack("{s:s, s:I, s:s}", "name", p[i].device[k].name, "memory",
                                                  (json_int_t)p[i].device[k].memory, "arch", p[i].device[k].arch));
        json_array_append_new(a, json_pack("{s:s, s:b, s:i, s:s, s:o}", "name", p[i].name, "usable", p[i].usable, "score",
                                           p[i].score, "why", p[i].why, "devices", devs));
    }
    /* a pack activated after this server loaded its provider (dpd pack install): the workers
     * load the new one, the server's own listing goes on with the old until a restart */
    char why[1200] = "";
    int restart = dpd_provider_restart_needed(why, sizeof why);
    return http_json(r, 200, json_pack("{s:o, s:b, s:s}", "providers", a, "restart_needed", restart, "restart_why", why));
}

static enum MHD_Result models(req *r) {
    json_t *a = json_array();
    dpd_family_info f;
    for (int i = 0; i < dpd_family_count(); i++)
        if (dpd_family_at(i, &f))
            json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:b, s:b, s:b}", "name", f.name, "tag", f.tag,
                                               "params", f.params, "about", f.about, "hidden", f.hidden, "max_layers",
                                               f.max_layers, "poly", f.poly, "least_squares", f.least_squares, "delta",
                                               f.delta));
    return http_json(r, 200, json_pack("{s:o}", "models", a));
}

static enum MHD_Result settings(req *r) {
    dpd_settings s;
    dpd_error err = {0};
    if (dpd_settings_load(&s, &err)) return http_error(r, 500, "settings_error", NULL, NULL, "%s", err.msg);
    return http_json(r, 200, json_pack("{s:s, s:s, s:s, s:s}", "provider", s.provider, "cpu_level", s.cpu_level, "gpu_memory",
                                       s.gpu_memory, "path", dpd_settings_path()));
}

/* ---- the route table: every route the API serves, the only way to a handler ---- */

static enum MHD_Result runs_post_of(req *r, run_rec *rec, char **arg) { return runs_post(r); }
static enum MHD_Result runs_list_of(req *r, run_rec *rec, char **arg) { return runs_list(r); }
static enum MHD_Result datasets_list_of(req *r, run_rec *rec, char **arg) { return datasets_list(r); }
static enum MHD_Result datasets_upload_of(req *r, run_rec *rec, char **arg) { return datasets_upload(r); }
static enum MHD_Result system_status_of(req *r, run_rec *rec, char **arg) { return system_status(r); }
static enum MHD_Result providers_of(req *r, run_rec *rec, char **arg) { return providers(r); }
static enum MHD_Result models_of(req *r, run_rec *rec, char **arg) { return models(r); }
static enum MHD_Result settings_of(req *r, run_rec *rec, char **arg) { return settings(r); }

/* Which mode serves a route: both, or the local studio only (a public session gets 403
 * feature_unavailable: host paths, uploads shared by every session). */
enum { BOTH, LOCAL_ONLY };

/* A pattern's segments are literals, or {run} (the run of the request's workspace: the handler gets
 * it in rec, 404 run_not_found when there is none) or {artifact} (passed in arg[0]). */
static const struct route {
    const char *method; /* GET also answers HEAD */
    const char *pattern;
    enum MHD_Result (*fn)(req *r, run_rec *rec, char **arg);
    int mode;
    const char *query; /* the query arguments it reads ("a, b"); any other is 422 */
} routes[] = {
    {"POST", "runs", runs_post_of, BOTH, ""},
    {"GET", "runs", runs_list_of, BOTH, "status, limit, offset"},
    {"GET", "runs/{run}", run_get, BOTH, ""},
    {"POST", "runs/{run}/cancel", run_cancel, BOTH, ""},
    {"POST", "runs/{run}/retry", run_retry, BOTH, ""},
    {"GET", "runs/{run}/events", run_events_get, BOTH, "after, limit"},
    {"GET", "runs/{run}/events/stream", run_stream, BOTH, "after"},
    {"GET", "runs/{run}/history", run_history_get, BOTH, ""},
    {"GET", "runs/{run}/plots", run_plots_get, BOTH, ""},
    {"GET", "runs/{run}/pictures/{artifact}", run_picture_get, BOTH, ""},
    {"GET", "runs/{run}/logs", run_logs_get, BOTH, "offset, limit"},
    {"GET", "runs/{run}/live", run_live, BOTH, ""},
    {"GET", "runs/{run}/results", run_results, BOTH, ""},
    {"GET", "runs/{run}/artifacts", run_artifacts, BOTH, ""},
    {"GET", "runs/{run}/artifacts/{artifact}", run_artifact_get, BOTH, ""},
    {"GET", "datasets", datasets_list_of, BOTH, ""},
    {"POST", "datasets", datasets_upload_of, LOCAL_ONLY, ""},
    {"GET", "system/status", system_status_of, BOTH, ""},
    {"GET", "providers", providers_of, BOTH, ""},
    {"GET", "models", models_of, BOTH, ""},
    {"GET", "settings", settings_of, LOCAL_ONLY, ""},
};
#define NROUTES (sizeof routes / sizeof *routes)

/* Whether seg[0, n) has pattern p's shape; the {artifact} segment into *art. */
static int shaped(const char *p, char **seg, int n, char **art) {
    char buf[128];
    snprintf(buf, sizeof buf, "%s", p);
    char *save, *t = strtok_r(buf, "/", &save);
    int i = 0;
    for (; t; t = strtok_r(NULL, "/", &save), i++) {
        if (i == n) return 0;
        if (!strcmp(t, "{artifact}")) *art = seg[i];
        else if (strcmp(t, "{run}") && strcmp(t, seg[i])) return 0;
    }
    return i == n;
}

void api_routes_print(FILE *f) {
    for (size_t i = 0; i < NROUTES; i++)
        fprintf(f, "{\"method\": \"%s\", \"path\": \"/api/v1/%s\", \"modes\": \"%s\"}\n", routes[i].method, routes[i].pattern,
                routes[i].mode == BOTH ? "local public" : "local");
}

int api_local_only(const req *r, char **seg, int n) {
    for (size_t i = 0; i < NROUTES; i++) {
        char *art = NULL;
        if (!strcmp(routes[i].method, r->method) && shaped(routes[i].pattern, seg, n, &art)) return routes[i].mode == LOCAL_ONLY;
    }
    return 0;
}

enum MHD_Result api_route(req *r, char **seg, int n) {
    int head = !strcmp(r->method, "HEAD"), shape = 0;
    for (size_t i = 0; i < NROUTES; i++) {
        const struct route *rt = &routes[i];
        char *art = NULL;
        if (!shaped(rt->pattern, seg, n, &art)) continue;
        shape = 1;
        if (rt->mode != LOCAL_ONLY || !r->h->o.public_mode) http_allow(r, rt->method); /* the path's methods, for a 405 */
        if (strcmp(rt->method, r->method) && !(head && !strcmp(rt->method, "GET"))) continue;
        if (rt->mode == LOCAL_ONLY && r->h->o.public_mode)
            return http_error(r, 403, "feature_unavailable", NULL, NULL, "%s /api/v1/%s is not served in public mode", rt->method,
                              rt->pattern);
        char route[96];
        enum MHD_Result rc;
        snprintf(route, sizeof route, "%s /api/v1/%s", rt->method, rt->pattern);
        if (http_query_refused(r, rt->query, route, &rc)) return rc;
        run_rec rec;
        if (strstr(rt->pattern, "{run}")) {
            int got = id_ok(seg[1], 'r', 23) ? store_get_ws(r->h->st, r->ws, seg[1], &rec) : 1;
            if (got < 0) return http_error(r, 500, "service_error", NULL, NULL, "the job store failed");
            if (got) return http_error(r, 404, "run_not_found", NULL, NULL, "no such run");
        }
        return rt->fn(r, &rec, &art);
    }
    if (n >= 2 && !strcmp(seg[0], "runs")) { /* under runs/ID/ the run first: an unknown one is run_not_found */
        run_rec rec;
        if (!id_ok(seg[1], 'r', 23) || store_get_ws(r->h->st, r->ws, seg[1], &rec))
            return http_error(r, 404, "run_not_found", NULL, NULL, "no such run");
    }
    if (shape) return http_error(r, 405, "method_not_allowed", NULL, NULL, "%s is not served here", r->method);
    return http_error(r, 404, "not_found", NULL, NULL, "no such route");
}
