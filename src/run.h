/* run: the run directory of a training run — its id and path (OpenDPD's scheme), config.json
 * (from the configuration table), the logs history.csv and best.csv (OpenDPD's columns),
 * events.jsonl (one JSON object a line, written from the run's typed events with a sequence
 * number and a timestamp), and the checkpoints best.safetensors, last.safetensors (with all a
 * bit-exact resume needs, validated on reading) and pa.safetensors. Every file is written
 * whole and atomically. It does not train: src/train.c does. */
#ifndef DPD_RUN_H
#define DPD_RUN_H
#include "dpd/dpd.h"
#include "ckpt.h"
#include "family.h"

/* A growing text buffer (logs are rewritten whole, atomically, as they grow). */
typedef struct dpd_text {
    char *s;
    size_t n, cap;
} dpd_text;

int dpd_text_add(dpd_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void dpd_text_free(dpd_text *t);

typedef struct dpd_rundir {
    char dir[4096], id[256];
    int created;      /* 1: this process created dir */
    size_t existed;   /* the length of dir's longest ancestor that existed before (its parents made for it: longer) */
    int delta;        /* the logs carry the delta columns */
    dpd_text hist;    /* history.csv */
    dpd_text events;  /* events.jsonl */
    long seq;         /* the last event's sequence number */
} dpd_rundir;

/* Who a run is: what its id, config.json and checkpoint metadata say. */
typedef struct dpd_run_info {
    const dpd_train_cfg *c;
    const char *dataset;     /* the dataset's name */
    const dpd_family *fam;
    size_t nparams;          /* the model's (DPD runs: the DPD's) */
    int dpd;                 /* 1: a DPD run through a frozen PA */
    const char *pa_id;       /* DPD runs: the PA's run id (from its checkpoint) */
    double gain;             /* DPD runs: g */
    const dpd_dataset *ds;   /* the dataset: config.json records how it was split */
    const char *train_sha256; /* its train split's dpd_split_fingerprint: checkpoints carry it */
    const char *pa_dataset;  /* DPD runs: the dataset the PA was trained on ("" unknown: dataset stands) */
    double pa_fs;            /* DPD runs: its sample rate (0 unknown) */
    double x_peak, x_rms;    /* the train split's input level (dpd_iq_level): checkpoints carry it */
    const char *kernels;     /* the cpu kernels the run computes with ("avx512", "ref"; NULL or "" on
                              * another provider): config.json's kernels_used, which a resume takes */
} dpd_run_info;

/* What last.safetensors carries beyond the weights and the AdamW moments. */
typedef struct dpd_run_state {
    int epoch;               /* epochs completed */
    int best_epoch;          /* 1-based; 0 before the first */
    double lr, elapsed;      /* the next epoch's learning rate; minutes of training so far */
    dpd_metrics best_val, best_test;
    long step;               /* optimizer steps taken */
    double plateau_best;     /* the scheduler's state */
    int plateau_bad;
    dpd_rng rng;             /* after the last shuffle */
    long epoch_step;         /* steps done in the epoch after `epoch` (a mid-epoch stop), else 0 */
    double epoch_loss;       /* their losses summed in order */
    dpd_rng epoch_rng;       /* the RNG before that epoch's shuffle */
    long long dz[4];         /* delta counters of that epoch so far */
} dpd_run_state;

/* The run id (OpenDPD's scheme, reference §4.6) and a new directory for it:
 * <out>/<dataset>/train_pa/<RUN_ID>, or for DPD runs <out>/<dataset>/train_dpd/<PA_DIR>/<RUN_ID>
 * with PA_DIR = the PA's id without its _P_ part, made one safe path component; -2, -3, ... when
 * taken. d->dir and d->id name it; d->created is set. */
dpd_status dpd_run_make(dpd_rundir *d, const dpd_run_info *info, dpd_error *err);

/* A run directory that exists already (a resume of a run killed before its first checkpoint):
 * d->dir set by the caller, d->id from info. */
void dpd_run_adopt(dpd_rundir *d, const dpd_run_info *info);

/* Removes the temporary files (*.tmp.<pid>) that writers killed mid-write left in d->dir; those
 * of a process still alive are kept. */
void dpd_run_clean(const dpd_rundir *d);

/* config.json: written from the configuration table; read back into c (DPD_E_IO when absent,
 * DPD_E_FORMAT naming the file and key when malformed), with its kernels_used and each split's
 * dpd_split_fingerprint as recorded ("" where it records none: a run from before them). */
dpd_status dpd_run_write_config(const dpd_rundir *d, const dpd_run_info *info, dpd_error *err);
dpd_status dpd_run_read_config(const char *dir, dpd_train_cfg *c, char *kernels, size_t nkernels,
                               char sha256[DPD_NSPLIT][65], dpd_error *err);

/* The val and test figures checkpoint c records (dpd_run_save_best's) into out's scored, val and
 * test (dpd_ckpt_info_read). */
void dpd_run_scores(const dpd_ckpt *c, dpd_ckpt_info *out);

/* best.safetensors: m's weights with the run's metadata and the epoch's metrics (statuses and
 * reasons of metrics that could not be computed included). */
dpd_status dpd_run_save_best(const dpd_rundir *d, const dpd_run_info *info, const dpd_model *m, int epoch,
                             const dpd_metrics *val, const dpd_metrics *test, dpd_error *err);

/* last.safetensors: m's weights, the AdamW moments mom (m then v, nparams each) and st; for DPD
 * runs pa.safetensors (the frozen PA as it is in memory) too. */
dpd_status dpd_run_save_last(const dpd_rundir *d, const dpd_run_info *info, const dpd_model *m, const float *mom,
                             const dpd_run_state *st, const dpd_model *pa, dpd_error *err);

/* Reads last.safetensors of d->dir into m, mom and st, and d->id, for a run of configuration c
 * with `steps` optimizer steps per epoch. Every value is parsed strictly and checked: a missing,
 * malformed, out-of-range or inconsistent key (best_epoch 0..epoch, lr 0..c->lr, plateau_bad
 * 0..patience, epoch_step 1..steps - 1, step = epoch x steps + epoch_step, a metric NaN only with
 * its status, an rng not all zero, a run_id that is one path component) is DPD_E_FORMAT naming
 * the file and the key. */
dpd_status dpd_run_load_last(dpd_rundir *d, dpd_model *m, float *mom, dpd_run_state *st, long steps,
                             const dpd_train_cfg *c, dpd_error *err);

/* A resumed run: history.csv keeps the rows of epochs 1..epochs; events.jsonl keeps every record
 * (a log of what happened, cancellations included) and its sequence numbers continue. A row cut
 * short or edited to another field count is dropped, and so is every row under a header that is
 * not the one this run writes; where rows of 1..epochs are then missing (a history.csv removed,
 * cut short, edited), warning (n bytes) says which ("" when none is). */
void dpd_run_inherit(dpd_rundir *d, int epochs, char *warning, size_t n);

/* Writes name in the run directory from t, atomically. */
dpd_status dpd_run_write(const dpd_rundir *d, const char *name, const dpd_text *t, dpd_error *err);

/* The header of history.csv / best.csv, and one row (1-based epoch; sp NULL without the delta
 * columns). vl: val and test loss; m: val and test metrics (non-ok metrics as "nan"). */
void dpd_run_header(dpd_text *t, int delta, dpd_profile p);

/* The configuration's metric profile ("" and anything unknown: legacy; dpd_config_check refuses
 * unknown names before a run starts). */
dpd_profile dpd_run_profile(const dpd_train_cfg *c);
void dpd_run_row(dpd_text *t, int epoch, int epochs, double minutes, double lr, int batch, size_t nparams,
                 int frame, const char *family, int hidden, const double *thresholds, const dpd_sparsity *sp,
                 double train_loss, const double *vl, const dpd_metrics *m);

/* Numbers e (its seq and time are set here) and appends it to events.jsonl's text. */
void dpd_run_event(dpd_rundir *d, dpd_event *e);

/* Removes a run directory this process created and everything in it, and the parents made for it
 * that are empty then (a run refused or cancelled before its first epoch completed leaves nothing
 * behind). */
void dpd_run_remove(dpd_rundir *d);

void dpd_run_free(dpd_rundir *d);
#endif
