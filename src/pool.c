/* pool: see pool.h. A mutex and two condition variables; tasks are claimed with an atomic counter.
 * A training step is one run of a few hundred microseconds to a few milliseconds, and waking a
 * sleeping thread costs tens of microseconds (more in a VM): so between runs the workers, and the
 * caller waiting for them, spin for up to SPIN_NS before they sleep on the condition variables. */
#include "pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "status.h"

#define SPIN_NS 200000L /* 0.2 ms: longer than the serial work between two runs of a training step */

struct dpd_pool {
    int threads;
    pthread_t *tid;
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    atomic_long generation; /* bumped for every run, after the run's fields below are set */
    atomic_int busy;        /* workers still in the current run */
    atomic_int quit;
    /* the current run */
    void (*fn)(void *, int, int);
    void *arg;
    int n;
    atomic_int next;
};

typedef struct worker {
    dpd_pool *p;
    int id;
} worker;

static long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

/* Spins until done(p, x) or SPIN_NS have passed; returns done(p, x). */
static int spin(dpd_pool *p, long x, int (*done)(dpd_pool *, long)) {
    for (long t0 = now_ns(), k = 0; !done(p, x); k++) {
        if ((k & 63) == 63 && now_ns() - t0 > SPIN_NS) return 0;
        __builtin_ia32_pause();
    }
    return 1;
}
static int started(dpd_pool *p, long seen) { return atomic_load(&p->quit) || atomic_load(&p->generation) != seen; }
static int finished(dpd_pool *p, long unused) { return atomic_load(&p->busy) == 0; }

static void drain(dpd_pool *p, int id) {
    for (int t; (t = atomic_fetch_add(&p->next, 1)) < p->n;) p->fn(p->arg, t, id);
}

static void *loop(void *arg) {
    worker *w = arg;
    dpd_pool *p = w->p;
    long seen = 0;
    for (;;) {
        if (!spin(p, seen, started)) {
            pthread_mutex_lock(&p->mu);
            while (!started(p, seen)) pthread_cond_wait(&p->go, &p->mu);
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->quit)) break;
        seen = atomic_load(&p->generation);
        drain(p, w->id);
        if (atomic_fetch_sub(&p->busy, 1) == 1) { /* the last one out wakes a sleeping caller */
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->mu);
        }
    }
    free(w);
    return NULL;
}

dpd_status dpd_pool_create(int threads, dpd_pool **out, dpd_error *err) {
    *out = NULL;
    if (threads < 1 || threads > 1024) return dpd_fail(err, DPD_E_INVAL, "thread count %d out of range [1, 1024]", threads);
    dpd_pool *p = calloc(1, sizeof *p);
    if (!p || !(p->tid = calloc((size_t)threads, sizeof *p->tid))) {
        free(p);
        return dpd_fail(err, DPD_E_NOMEM, "out of memory for a thread pool");
    }
    p->threads = threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->go, NULL);
    pthread_cond_init(&p->done, NULL);
    for (int i = 1; i < threads; i++) {
        worker *w = malloc(sizeof *w);
        if (w) *w = (worker){p, i};
        if (!w || pthread_create(&p->tid[i], NULL, loop, w)) {
            free(w);
            p->threads = i; /* join what started */
            dpd_pool_free(p);
            return dpd_fail(err, DPD_E_NOMEM, "cannot start thread %d of %d", i, threads);
        }
    }
    *out = p;
    return DPD_OK;
}

void dpd_pool_free(dpd_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->quit, 1);
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->threads; i++) pthread_join(p->tid[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->go);
    pthread_cond_destroy(&p->done);
    free(p->tid);
    free(p);
}

int dpd_pool_threads(const dpd_pool *p) { return p ? p->threads : 1; }

void dpd_pool_run(dpd_pool *p, int n, void (*fn)(void *, int, int), void *arg) {
    if (!p || p->threads == 1 || n <= 1) {
        for (int t = 0; t < n; t++) fn(arg, t, 0);
        return;
    }
    p->fn = fn, p->arg = arg, p->n = n;
    atomic_store(&p->next, 0);
    atomic_store(&p->busy, p->threads - 1);
    pthread_mutex_lock(&p->mu); /* the generation changes under the mutex: no sleeper misses it */
    atomic_fetch_add(&p->generation, 1);
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    drain(p, 0);
    if (!spin(p, 0, finished)) {
        pthread_mutex_lock(&p->mu);
        while (atomic_load(&p->busy)) pthread_cond_wait(&p->done, &p->mu);
        pthread_mutex_unlock(&p->mu);
    }
}

int dpd_cpu_count(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : (int)n;
}

int dpd_cpu_level_threads(const char *level) {
    static const char *const names[4] = {"low", "balanced", "high", "max"};
    for (int k = 0; k < 4; k++)
        if (!strcmp(level, names[k])) {
            int n = dpd_cpu_count(), t = (n * (k + 1) + 3) / 4; /* 25 % steps, rounded up */
            return t < 1 ? 1 : t;
        }
    return 0;
}
