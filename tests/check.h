/* check: the tiny in-tree test helper. CHECK counts a pass or prints the failure with its
 * location; check_done prints "RESULT <name> <passed> <failed> <skipped>" for tests/run.sh and returns
 * the exit code (non-zero on any failure). Also: fixture JSON access and temp directories. */
#ifndef DPD_TESTS_CHECK_H
#define DPD_TESTS_CHECK_H
#include <jansson.h>
#include <stdio.h>

#include "cpu/net.h"
#include "dpd/dpd.h"

extern int check_passed, check_failed, check_skipped;

#define CHECK(cond, ...)                                                         \
    do {                                                                         \
        if (cond) {                                                              \
            check_passed++;                                                      \
        } else {                                                                 \
            check_failed++;                                                      \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                 \
            fprintf(stderr, __VA_ARGS__);                                        \
            fprintf(stderr, "\n");                                               \
        }                                                                        \
    } while (0)

int check_done(const char *name);

/* Prints "SKIP <name>: <why>" and counts a skip (check_done reports it; tests/run.sh sums them). */
void check_skip(const char *name, const char *why);

/* ../shared (or $DPD_SHARED) joined with rel; NULL when the file does not exist. */
const char *check_shared(const char *rel);

/* Loads a JSON file or returns NULL after printing why. */
json_t *check_json(const char *path);

/* Copies a fixture tensor's "data" (length must be n) as floats / doubles; 0 on mismatch. */
int check_floats(json_t *tensor, float *out, size_t n);
int check_doubles(json_t *tensor, double *out, size_t n);

/* max |a - b| / max |ref| over n values (ref = b). */
double check_relmax(const float *a, const double *b, size_t n);

/* A fresh directory under $TMPDIR, removed with all it holds when the test program exits; returns
 * its path (static buffer per call index, 16 in turn). */
const char *check_tmpdir(void);

/* A model of configuration c, initialised from r (left zero when r is NULL). A configuration
 * that cannot be built ends the test program with the failure (tests/run.sh reports it). */
dpd_model *check_model(const dpd_model_cfg *c, dpd_rng *r);

/* The CPU engine for model m (its parameters copied) with kernels by name ("auto", "ref", ...),
 * on the calling thread. Ends the test program when it cannot be built. */
dpd_net *check_net(const dpd_model *m, const char *kernels);

/* Writes text to dir/name. */
void check_write(const char *dir, const char *name, const char *text);

#endif
