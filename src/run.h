/* run: the run directory of a training run — its id and path (OpenDPD's scheme), the logs
 * history.csv and best.csv (OpenDPD's columns), events.jsonl (one JSON object a line, written from
 * the run's typed events with a sequence number and a timestamp), and whole-file atomic writes.
 * It knows nothing about models or training beyond the fields it logs. */
#ifndef DPD_RUN_H
#define DPD_RUN_H
#include "dpd/dpd.h"

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
    int delta;        /* the logs carry the delta columns */
    dpd_text hist;    /* history.csv */
    dpd_text events;  /* events.jsonl */
    long seq;         /* the last event's sequence number */
} dpd_rundir;

/* Creates base/id (mkdir -p base), or base/id-2, -3, ... when taken; d->dir and d->id name it. */
dpd_status dpd_run_create(dpd_rundir *d, const char *base, const char *id, dpd_error *err);

/* A resumed run: history.csv keeps the rows of epochs 1..epochs; events.jsonl keeps every record
 * (a log of what happened, cancellations included) and its sequence numbers continue. */
void dpd_run_inherit(dpd_rundir *d, int epochs);

/* Writes name in the run directory from t, atomically. */
dpd_status dpd_run_write(const dpd_rundir *d, const char *name, const dpd_text *t, dpd_error *err);

/* The header of history.csv / best.csv, and one row (1-based epoch; sp NULL without the delta
 * columns). vl: val and test loss; m: val and test metrics (non-ok metrics as "nan"). */
void dpd_run_header(dpd_text *t, int delta);
void dpd_run_row(dpd_text *t, int epoch, int epochs, double minutes, double lr, int batch, size_t nparams,
                 int frame, const char *family, int hidden, const double *thresholds, const dpd_sparsity *sp,
                 double train_loss, const double *vl, const dpd_metrics *m);

/* Numbers e (its seq and time are set here) and appends it to events.jsonl's text. */
void dpd_run_event(dpd_rundir *d, dpd_event *e);

/* Removes a run directory this process created and everything in it (a run refused or cancelled
 * before its first epoch completed leaves nothing behind). */
void dpd_run_remove(dpd_rundir *d);

void dpd_run_free(dpd_rundir *d);
#endif
