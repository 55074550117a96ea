/* cli: the dpd command's verbs; each returns the process exit code (0 ok, 1 failure, 2 usage).
 * Shared output helpers live in main.c. */
#ifndef DPD_CLI_H
#define DPD_CLI_H
#include <stdio.h>

#include "dpd/dpd.h"

int cmd_synth(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_train_pa(int argc, char **argv);
int cmd_train_dpd(int argc, char **argv);
int cmd_models(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_fit_ls(int argc, char **argv);
int cmd_providers(int argc, char **argv);
int cmd_config(int argc, char **argv);
int cmd_pack(int argc, char **argv);
int cmd_parity(int argc, char **argv);
int cmd_bench(int argc, char **argv);

/* The options every compute verb takes, bound to int threads, char level[16], char kernels[16]. */
#define CLI_COMPUTE_OPTS(threads, level, kernels)                                                       \
    {"threads", OPT_INT, &threads, 0, "worker threads (default: every logical processor); results do not depend on it", 0}, \
    {"cpu-level", OPT_STR, level, sizeof level, "low, balanced, high or max: 25/50/75/100 % of the logical processors", 0}, \
    {"kernels", OPT_STR, kernels, sizeof kernels, "auto (fastest ISA), avx512, avx2, sse or ref (scalar reference)", 0}

/* Applies --kernels and returns the thread count from --threads N (> 0) or --cpu-level NAME (wins
 * when set); the default is every logical processor. 0 after printing the error. */
int cli_compute(int threads, const char *level, const char *kernels);

/* "dpd: <message>" on stderr; returns 1. */
int cli_fail(const dpd_error *err);

/* s as a quoted, escaped JSON string, for free text (paths, reasons, messages) in --json output.
 * The result lives in one of 8 rotating buffers: valid until 8 more calls. */
const char *cli_q(const char *s);

/* {"NMSE":..,"EVM":..,"ACLR_L":..,"ACLR_R":..,"ACLR_AVG":..} */
void cli_metrics_json(FILE *f, const dpd_metrics *m);

/* One aligned table row: name then the five metrics. */
void cli_metrics_row(FILE *f, const char *name, const dpd_metrics *m);
void cli_metrics_header(FILE *f);

#endif
