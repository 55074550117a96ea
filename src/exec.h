/* exec: running a model's forward pass on a chosen provider — session setup, weights upload,
 * batching under the gpu_memory bound, halving a batch that fails for memory (the working size
 * is remembered for the rest of the process per model, provider and device), and the fallback
 * on a device failure (the preference switches to cpu for later work; this run fails). */
#ifndef DPD_EXEC_H
#define DPD_EXEC_H
#include "dpd/provider.h"

typedef struct dpd_exec dpd_exec;

/* request: "auto", "cpu", "cuda" or NULL/"" (the settings). reason says which provider was
 * chosen and why. max_batch x T bounds every later forward call. */
dpd_status dpd_exec_open(const char *request, dpd_model *m, int max_batch, int T, dpd_exec **out, char *reason,
                         size_t nreason, dpd_error *err);
void dpd_exec_close(dpd_exec *e);
const char *dpd_exec_provider(const dpd_exec *e);
int dpd_exec_batch(const dpd_exec *e); /* the working batch size now */

/* Device bytes one sequence of T samples needs for model cfg (activations kept for backward,
 * input and output, plus its share of parameters): what the gpu_memory bound divides by. */
size_t dpd_exec_seq_bytes(const dpd_model_cfg *cfg, int T);

/* A recognized device failure of provider `name` during a run: the preference moves to cpu for
 * later work (recorded with msg); returns DPD_E_DEVICE with a message saying the run was not
 * repeated. */
dpd_status dpd_exec_device_failed(const char *name, const char *msg, dpd_error *err);

/* y = the model on x (B, T, 2), B of any size (cut into working batches). */
dpd_status dpd_exec_forward(dpd_exec *e, const float *x, int B, int T, float *y, dpd_error *err);
#endif
