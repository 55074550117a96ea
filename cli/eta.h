/* eta: the training step rate a run's progress display estimates its remaining time from, measured
 * over every epoch so far (one slow epoch, a noisy machine's, moves the estimate little). */
#ifndef DPD_CLI_ETA_H
#define DPD_CLI_ETA_H

typedef struct cli_rate {
    long s0;              /* this epoch's first progress: its steps done (-1: none yet) ... */
    double el0;           /* ... and its elapsed seconds: the epoch is timed from there */
    double cur_s, done_s; /* the steps timed: this epoch's seconds and the finished epochs' ... */
    long cur_n, done_n;   /* ... and their steps */
    double first;         /* seconds a step from the very first progress event (nothing timed yet) */
} cli_rate;

/* A fresh rate: nothing measured. */
void cli_rate_init(cli_rate *r);
/* A progress event: steps_done of the epoch's steps after elapsed seconds of it. */
void cli_rate_progress(cli_rate *r, long steps_done, double elapsed);
/* The epoch has ended: its timed steps join the run's. */
void cli_rate_epoch(cli_rate *r);
/* Seconds a training step over the run so far; 0 when nothing is measured yet. */
double cli_rate_per_step(const cli_rate *r);
#endif
