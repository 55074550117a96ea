/* model: internal parts of dpd_model shared with train and ckpt. */
#ifndef DPD_MODEL_H
#define DPD_MODEL_H
#include "dpd/dpd.h"
#include "family.h"

/* Grows the workspace for batches up to (B, T); after it, forward and train_step with B' <= B
 * and T' <= T allocate nothing. */
dpd_status dpd_model_reserve(dpd_model *m, int B, int T, dpd_error *err);

const dpd_family *dpd_model_family(const dpd_model *m);

/* Sequences per chunk: the unit of parallel work and of the fixed gradient reduction order. */
#define DPD_CHUNK 16

/* MSE over n values (mean of squared differences, in double) and its gradient dy = 2 (y - t) / n. */
double dpd_mse(const float *y, const float *t, size_t n, float *dy);

/* Adds skipped-update counters (zeros dx, numel dx, zeros dh, numel dh) counted elsewhere (a
 * provider session's passes) to the model's, for dpd_model_sparsity. */
void dpd_model_add_zeros(dpd_model *m, const long long z[4]);

/* Parameter count of a configuration without building it (0 for an unknown family). */
size_t dpd_model_count(const dpd_model_cfg *c);

#endif
