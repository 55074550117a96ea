/* provider: the execution-provider ABI (docs/providers.md, "ABI v2"). A provider is a function
 * table plus a context, with api_version first; the CPU provider is built in, device providers
 * ship as runtime packs (a shared library exporting DPD_PROVIDER_INIT and DPD_PROVIDER_SCORE).
 * Every call returns a dpd_status (0 = ok) and fills err (a caller buffer of nerr bytes) on
 * failure; DPD_E_NOMEM means "this batch does not fit" (the caller halves it and retries),
 * DPD_E_DEVICE a device failure (the caller stops and falls back to cpu for later work).
 * Sessions are not thread-safe; distinct sessions may be used from distinct threads.
 *
 * Version 2 appends slots to version 1 and never moves one. The loader asks init for version 2,
 * then for version 1; a v1 provider is served by emulating the v2 slots on the host (a host
 * gather and train_step + optimizer_step per step). Optional slots are NULL; what happens then is
 * said at each. */
#ifndef DPD_PROVIDER_H
#define DPD_PROVIDER_H
#include <stddef.h>
#include <stdint.h>

#include "dpd/dpd.h"

#define DPD_PROVIDER_API 2

typedef struct dpd_provider_i {
    uint32_t api_version; /* DPD_PROVIDER_API; checked by the loader before anything else */
    const char *name;     /* "cpu", "cuda" */
    int (*device_count)(void *ctx);
    dpd_status (*device_info)(void *ctx, int device, dpd_device_info *out);
    /* Pure and cheap: 1 when the provider can run this model configuration. */
    int (*supports)(void *ctx, const dpd_model_cfg *model);
    /* v1: a session for up to max_batch sequences of up to T samples on one device. A v2 provider
     * may leave it NULL when it has session_open. */
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
    /* Training through another model (a DPD through a frozen PA) for v1 emulation, all optional
     * (NULL: not supported): forward keeping what backward needs; backward of that forward with dy
     * given, the gradient kept in the session (overwritten) and dx (B, T, 2) written when
     * non-NULL; global-norm clipping of the kept gradient. */
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

    /* ---- version 2 ---- */
    /* A session for model (its family's tensor table t[0..nt): names, shapes and offsets into the
     * parameter buffer, so a provider never restates a layout) on device, reserving max_batch
     * sequences of T samples (T 0: nothing up front; the provider sizes on first use). opts: the session options (dpd.h, dpd_session_create) that reach
     * providers: threads and kernels; a provider ignores those that do not apply to it and
     * refuses a bad value with DPD_E_INVAL naming it. Optional (NULL: session_create). */
    dpd_status (*session_open)(void *ctx, int device, const dpd_model_cfg *model, const dpd_tensor *t, int nt,
                               int max_batch, int T, const dpd_kv *opts, int nopts, void **session, char *err,
                               size_t nerr);
    /* Makes n samples of x and y ((n, 2); y may be NULL) resident as split `split` (0 train, 1 val,
     * 2 test), replacing what was there. */
    dpd_status (*attach)(void *session, int split, const float *x, const float *y, size_t n, char *err, size_t nerr);
    /* ceil(nframes / B) whole training steps on the resident train split: step k gathers frames
     * frames[k B .. min((k + 1) B, nframes)) of length L at stride S, forward (through the chained
     * PA, if any), MSE against y, backward, clip at max_norm (0: off), AdamW (lr, wd); losses[k]
     * its loss. DPD_E_DIVERGED at the first non-finite loss, before that step's update. */
    dpd_status (*train_steps)(void *session, const uint32_t *frames, size_t nframes, int B, int L, int S,
                              double lr, double wd, double max_norm, double *losses, char *err, size_t nerr);
    /* pred (n / N, N, 2) of the resident split's x cut into sequences of N, in batches of `batch`
     * (a chained session: PA(model(x))). N and batch are not bounded by the session's
     * reservation: the provider sizes what evaluation needs (and may keep it). */
    dpd_status (*evaluate)(void *session, int split, int N, int batch, float *pred, char *err, size_t nerr);
    /* From now on train_steps and evaluate of session run through frozen (a session of the same
     * provider whose weights never change); NULL unchains. */
    dpd_status (*chain)(void *session, void *frozen, char *err, size_t nerr);
} dpd_provider_i;

/* The size of a v1 table: the slots up to zeros. */
#define DPD_PROVIDER_V1_SIZE (offsetof(dpd_provider_i, zeros) + sizeof(void *))

typedef struct dpd_provider {
    const dpd_provider_i *i;
    void *ctx;
} dpd_provider;

/* The two symbols a loadable provider exports. init fills *out when api_version is one it serves
 * (else DPD_E_UNSUPPORTED naming both versions); score returns 0 when the provider is not usable
 * on this machine (no device, driver too old), so it is skipped quietly, and otherwise a rank
 * (higher first; the built-in cpu ranks DPD_CPU_RANK, and `auto` takes a pack only at or above
 * it: a provider on a device slower than the host's own kernels, such as OpenCL on the CPU,
 * scores below). why may explain a usable score too. */
#define DPD_CPU_RANK 10
#define DPD_PROVIDER_INIT "dpd_provider_init"
#define DPD_PROVIDER_SCORE "dpd_provider_score"
typedef dpd_status (*dpd_provider_init_fn)(uint32_t api_version, dpd_provider *out, char *err, size_t nerr);
typedef int (*dpd_provider_score_fn)(char *why, size_t nwhy);

/* The built-in CPU provider. */
DPD_API const dpd_provider *dpd_provider_cpu(void);

#endif
