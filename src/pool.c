/* pool: see pool.h. A mutex and two condition variables; tasks are claimed with an atomic counter. */
#include "pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "status.h"

struct dpd_pool {
    int threads;
    pthread_t *tid;
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    long generation; /* bumped for every run */
    int busy;        /* workers still in the current run */
    int quit;
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

static void drain(dpd_pool *p, int id) {
    for (int t; (t = atomic_fetch_add(&p->next, 1)) < p->n;) p->fn(p->arg, t, id);
}

static void *loop(void *arg) {
    worker *w = arg;
    dpd_pool *p = w->p;
    long seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->quit && p->generation == seen) pthread_cond_wait(&p->go, &p->mu);
        if (p->quit) break;
        seen = p->generation;
        pthread_mutex_unlock(&p->mu);
        drain(p, w->id);
        pthread_mutex_lock(&p->mu);
        if (--p->busy == 0) pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
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
    p->quit = 1;
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
    pthread_mutex_lock(&p->mu);
    p->fn = fn, p->arg = arg, p->n = n;
    atomic_store(&p->next, 0);
    p->busy = p->threads - 1;
    p->generation++;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    drain(p, 0);
    pthread_mutex_lock(&p->mu);
    while (p->busy) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
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
