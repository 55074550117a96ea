/* provider: the execution-provider ABI. A provider is a function table plus a context, with
 * api_version first; the CPU provider is built in, the CUDA provider ships as a runtime pack
 * (a shared library exporting DPD_PROVIDER_INIT and DPD_PROVIDER_SCORE). Every call returns a
 * dpd_status (0 = ok) and fills err (a caller buffer of nerr bytes) on failure; DPD_E_NOMEM
 * means "this batch does not fit" (the caller halves it and retries), DPD_E_DEVICE a device
 * failure (the caller stops and falls back to cpu for later work). Sessions are not
 * thread-safe; distinct sessions may be used from distinct threads. */
#ifndef DPD_PROVIDER_H
#define DPD_PROVIDER_H
#include <stddef.h>
#include <stdint.h>

#include "dpd/dpd.h"

#define DPD_PROVIDER_API 1

typedef struct dpd_device_info {
    char name[128];
    uint64_t memory;   /* dedicated bytes (0: shared system memory) */
    char arch[32];     /* "sm_90" or "avx512" */
    int driver, runtime; /* versions, 0 when not applicable */
} dpd_device_info;

typedef struct dpd_provider_i {
    uint32_t api_version; /* DPD_PROVIDER_API; checked by the loader before anything else */
    const char *name;     /* "cpu", "cuda" */
    int (*device_count)(void *ctx);
    dpd_status (*device_info)(void *ctx, int device, dpd_device_info *out);
    /* Pure and cheap: 1 when the provider can run this model configuration. */
    int (*supports)(void *ctx, const dpd_model_cfg *model);
    /* A session for up to max_batch sequences of up to T samples on one device. */
    dpd_status (*session_create)(void *ctx, int device, const dpd_model_cfg *model, int max_batch, int T,
                                 void **session, char *err, size_t nerr);
    void (*session_free)(void *session); /* accepts NULL */
    dpd_status (*upload)(void *session, const float *params, char *err, size_t nerr);
    dpd_status (*download)(void *session, float *params, char *err, size_t nerr);
    /* x (B, T, 2) -> y (B, T, 2), each sequence from zero state. */
    dpd_status (*forward)(void *session, const float *x, int B, int T, float *y, char *err, size_t nerr);
    /* Forward, MSE against t, backward, global-norm clip (max_norm 0: off); the gradient stays in
     * the session for optimizer_step. Optional (NULL: inference-only provider). */
    dpd_status (*train_step)(void *session, const float *x, const float *t, int B, int T, double max_norm,
                             double *loss, char *err, size_t nerr);
    /* AdamW at lr with weight decay wd. Optional with train_step. */
    dpd_status (*optimizer_step)(void *session, double lr, double wd, char *err, size_t nerr);
    /* Training through another model (a DPD through a frozen PA), all optional (NULL: not
     * supported): forward keeping what backward needs; backward of that forward with dy given,
     * the gradient kept in the session (overwritten) and dx (B, T, 2) written when non-NULL;
     * global-norm clipping of the kept gradient. */
    dpd_status (*forward_keep)(void *session, const float *x, int B, int T, float *y, char *err, size_t nerr);
    dpd_status (*backward)(void *session, const float *dy, float *dx, char *err, size_t nerr);
    dpd_status (*clip)(void *session, double max_norm, char *err, size_t nerr);
    /* The optimizer state (AdamW moments, nparams each, and the step count) for checkpoints and
     * bit-exact resume. Optional (NULL: a resume restarts the moments). */
    dpd_status (*get_state)(void *session, float *m, float *v, long *step, char *err, size_t nerr);
    dpd_status (*set_state)(void *session, const float *m, const float *v, long step, char *err, size_t nerr);
    /* Delta families: the skipped-update counters of the session's passes since the last call
     * (zeros dx, numel dx, zeros dh, numel dh), then zeroed. Optional (NULL: not counted). */
    dpd_status (*zeros)(void *session, long long z[4], char *err, size_t nerr);
} dpd_provider_i;

typedef struct dpd_provider {
    const dpd_provider_i *i;
    void *ctx;
} dpd_provider;

/* The two symbols a loadable provider exports. init fills *out when api_version matches its
 * own (else DPD_E_UNSUPPORTED naming both versions); score returns 0 when the provider is not
 * usable on this machine (no device, driver too old), so it is skipped quietly. */
#define DPD_PROVIDER_INIT "dpd_provider_init"
#define DPD_PROVIDER_SCORE "dpd_provider_score"
typedef dpd_status (*dpd_provider_init_fn)(uint32_t api_version, dpd_provider *out, char *err, size_t nerr);
typedef int (*dpd_provider_score_fn)(char *why, size_t nwhy);

/* The built-in CPU provider (threads from dpd_pool, kernels from dpd_kernels_select). */
DPD_API const dpd_provider *dpd_provider_cpu(void);

#endif
