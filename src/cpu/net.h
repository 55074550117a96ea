/* net: a model configuration's computation on the CPU — the CPU provider's engine. It owns the
 * parameter and gradient buffers (one layout), the workspace reserved ahead of the step loop,
 * the kernel table its session chose and (not owned) the session's thread pool.
 *
 * Batches run in fixed chunks of DPD_CHUNK sequences, one family call each, spread over the
 * pool. Each chunk has its own workspace and gradient buffer; chunk gradients are summed in chunk
 * order. The partition and the reduction order do not depend on the number of threads, so
 * results are bit-identical for any thread count. Not thread-safe on one net. */
#ifndef DPD_CPU_NET_H
#define DPD_CPU_NET_H
#include "../family.h"
#include "../kern/kern.h"
#include "../pool.h"

/* Sequences per chunk: the unit of parallel work and of the fixed gradient reduction order, and
 * the fast kernels' lane count. */
#define DPD_CHUNK 16
#ifdef __cplusplus
static_assert(DPD_CHUNK == KL, "a chunk is one lane group of the fast kernels");
#else
_Static_assert(DPD_CHUNK == KL, "a chunk is one lane group of the fast kernels");
#endif

typedef struct dpd_net dpd_net;

/* Zeroed parameters for configuration c (validated by the caller: dpd_model_create rules).
 * k: the kernel table (NULL: the scalar reference); pool may be NULL (the calling thread). */
dpd_status dpd_net_create(const dpd_model_cfg *c, const kern_ops *k, dpd_pool *pool, dpd_net **out,
                          dpd_error *err);
void dpd_net_free(dpd_net *n); /* accepts NULL */

size_t dpd_net_nparams(const dpd_net *n);
float *dpd_net_params(dpd_net *n);
float *dpd_net_grads(dpd_net *n);
const kern_ops *dpd_net_kernels(const dpd_net *n);
void dpd_net_set_pool(dpd_net *n, dpd_pool *pool); /* reserve again before the next pass */

/* From now on the net's parameters live in params (nparams floats, the caller's, which must
 * outlive the net): the net's weights are copied there and its own buffer freed. */
void dpd_net_share(dpd_net *n, float *params);

/* Grows the workspace for batches up to (B, T); after it, passes with B' <= B and T' <= T
 * allocate nothing. DPD_E_NOMEM, DPD_E_INVAL for B or T < 1. */
dpd_status dpd_net_reserve(dpd_net *n, int B, int T, dpd_error *err);

/* x (B, T, 2) -> y (B, T, 2), every sequence from zero state (reserves as needed). */
dpd_status dpd_net_forward(dpd_net *n, const float *x, int B, int T, float *y, dpd_error *err);

/* y as dpd_net_forward gives it, for an inference: no backward may follow (the family's infer,
 * which may keep less of the activations). With the fast kernels of a gated family (family.h), a
 * last chunk of fewer than KMIN sequences runs padded to KMIN with silent sequences: its y is then
 * the fast kernels' (as dpd_net_forward of those KMIN gives it), not the reference kernels' (a
 * validation split of three segments took a third of a quick run on those). Not padded: the delta
 * families (the silent sequences would count in their delta statistics), and a batch of fewer
 * than KMIN whose padded workspace would pass 64 MiB (long sequences: the fast kernels keep every
 * lane's activations; the reference kernels run them as before). */
dpd_status dpd_net_infer(dpd_net *n, const float *x, int B, int T, float *y, dpd_error *err);

/* Backward after dpd_net_forward of the same x, B, T: dy -> the gradient buffer (overwritten)
 * and dx (B, T, 2) when non-NULL. DPD_E_INVAL without a forward of that size. */
dpd_status dpd_net_backward(dpd_net *n, const float *x, const float *dy, int B, int T, float *dx,
                            dpd_error *err);

/* Forward, MSE over B T 2 against tgt, backward into the gradient buffer (overwritten); dx may
 * be NULL. DPD_E_DIVERGED when the loss is not finite (the gradient is then not reduced). */
dpd_status dpd_net_train_step(dpd_net *n, const float *x, const float *tgt, int B, int T, double *loss,
                              float *dx, dpd_error *err);

/* The delta counters (zeros dx, numel dx, zeros dh, numel dh) of the passes since the last call,
 * then zeroed; zeros for families without delta statistics. */
void dpd_net_zeros(dpd_net *n, long long z[4]);
#endif
