/* job: a studio run's request (verb, dataset, options named as the CLI's) turned into a training
 * configuration — one function for both the server, which validates a submission with it, and
 * the worker, which runs it — and the queueing of a run (its directory, job.json, the record). */
#ifndef DPD_STUDIO_JOB_H
#define DPD_STUDIO_JOB_H

#include <jansson.h>

#include "dpd/dpd.h"
#include "store.h"

/* The fake verb's parameters (docs/studio.md "The fake verb"). */
typedef struct job_fake {
    int epochs, epoch_ms, ignore_cancel, exit_code, alloc_mb, silent_ms, artifact_mb, fill_mb;
    char probe[8]; /* a probe of the worker's sandbox (sandbox_probe), "": none */
} job_fake;

typedef struct job {
    char verb[16];      /* train-pa, train-dpd, fit-ls, fake */
    dpd_train_cfg cfg;  /* resolved; data, out and pa are left to the caller */
    char pa[24];        /* the PA's studio run id ("" when none) */
    int no_doctor;      /* options.no_doctor: train without the dataset doctor's gate */
    job_fake fake;
} job;

/* Resolves verb + options into j, as `dpd VERB --opt value ...` would: the CLI's defaults, the
 * preset first, then each option through the configuration table. fake: the fake verb allowed.
 * DPD_E_INVAL with err->field naming the option on any refusal. */
dpd_status job_resolve(job *j, const char *verb, const json_t *options, int fake, dpd_error *err);

/* What a submission needs to know of a dataset: the samples of each split, the segment length. */
typedef struct job_data {
    size_t n[3];
    int nperseg;
    char doctor[900]; /* the dataset doctor's error-level findings ("code: message (fix: ...)"), "" when none */
    char train_sha256[65]; /* dpd_split_fingerprint of the train split: a PA must have been trained on it */
} job_data;

/* Loads the dataset in dir (every split) into d and runs the dataset doctor on it (d->doctor).
 * DPD_E_FORMAT etc. naming the file and line. */
dpd_status job_data_load(const char *dir, job_data *d, dpd_error *err);
/* Checks the dataset can serve j: val and test at least one segment, train at least one frame;
 * and for train-pa and train-dpd without no_doctor, that the doctor found no error (DPD_E_FORMAT
 * with the doctor's findings, as `dpd train-pa` refuses). */
dpd_status job_check_data(const job *j, const job_data *d, dpd_error *err);
/* Public mode's compute bounds (docs/studio.md "Public mode"): each bounded field of j's resolved
 * configuration at most its limit (epochs 300, batch and batch_eval 256, frame and stride 400,
 * model sizes 128, layers 2, threads 4, ls_iterations 60, seed 2^32 - 1). DPD_E_INVAL naming
 * the field and its limit (the API answers 422 compute_limit). */
dpd_status job_public_check(const job *j, dpd_error *err);

/* A directory `dpd train-pa`/`train-dpd`/`fit-ls` completed (config.json, best.safetensors, and
 * events.jsonl ending in a completed run_ended), for `dpd serve --import`: its studio verb and
 * dataset name into verb[16] and dataset[256]. DPD_E_INVAL naming the file and what is wrong. */
dpd_status job_import_check(const char *dir, char verb[16], char dataset[256], dpd_error *err);

/* Queues run r (verb, dataset, idem, parent, ws and request set by the caller): a fresh id into
 * r->id, its directory (studio_run_path: ROOT/runs/ID/ for the local workspace) with logs/ and
 * job.json (jobj, the worker's orders), then the store's record, refused by quota q (NULL: none;
 * store_insert). With an idempotency key the workspace already has, r becomes that run, *existed is
 * set and nothing is left on disk. 0, or one of these (why says what): */
enum {
    JOB_RUN_QUOTA = STORE_RUN_QUOTA,         /* q->runs reached */
    JOB_PENDING_QUOTA = STORE_PENDING_QUOTA, /* q->pending reached */
    JOB_QUEUE_FULL = STORE_QUEUE_FULL,       /* q->queue reached */
    JOB_FAILED = 16,                         /* the store or the random source failed */
    JOB_NO_DISK,                             /* the run directory cannot be written */
};
int job_enqueue(store *st, const char *root, run_rec *r, json_t *jobj, const store_quota *q, int *existed, char *why,
                size_t n);

#endif
