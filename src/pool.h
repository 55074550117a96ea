/* pool: a fixed set of worker threads, created once and reused, that run numbered tasks. It knows
 * nothing about models: determinism comes from callers whose task partition (and reduction
 * order) does not depend on the thread count. Not re-entrant: one dpd_pool_run at a time. */
#ifndef DPD_POOL_H
#define DPD_POOL_H
#include "dpd/dpd.h"

typedef struct dpd_pool dpd_pool;

/* A pool of threads workers (>= 1; the caller counts as one, threads - 1 workers are started);
 * owned by one CPU session. dpd_pool_free accepts NULL. */
dpd_status dpd_pool_create(int threads, dpd_pool **out, dpd_error *err);
void dpd_pool_free(dpd_pool *p);
int dpd_pool_threads(const dpd_pool *p);

/* Runs fn(arg, task, thread) for every task in [0, n), tasks taken in order by whichever thread
 * is free; returns when all are done. thread is in [0, threads) and identifies per-thread
 * scratch. p may be NULL (everything runs on the caller, thread 0). */
void dpd_pool_run(dpd_pool *p, int n, void (*fn)(void *arg, int task, int thread), void *arg);

/* Logical processors of this machine (>= 1). dpd_cpu_level_threads is public (dpd.h). */
int dpd_cpu_count(void);
#endif
