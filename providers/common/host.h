/* host: the host side of a device provider, shared by every device API. It composes the model
 * families from the kernels of providers/opencl/kernels.cl (one source for OpenCL and CUDA),
 * keeps a session's buffers, splits and optimizer state on the device, drives training steps,
 * evaluation and DPD chains, and builds the ABI v2 table (include/dpd/provider.h) around a
 * backend: the few calls a device API answers (devices, queues, buffers, launches).
 *
 * A backend is process-wide and thread-safe in open/info/count; everything else is called with
 * one session's queue from one thread at a time (the ABI's rule). Errors are the backend's own
 * codes (0: success), turned into a dpd_status and message by its fail(). */
#ifndef DPD_PROVIDERS_HOST_H
#define DPD_PROVIDERS_HOST_H
#include <stdarg.h>
#include <stddef.h>

#include "dpd/provider.h"

/* The kernels of kernels.cl, in host_kernel_name's order. */
enum {
    K_GATHER, K_FEATURES, K_FEATURES_BWD, K_GRU_FWD, K_GRU_BWD, K_LSTM_FWD, K_LSTM_BWD, K_RNN_BWD_W, K_DENSE_FWD,
    K_ACT_BWD, K_DENSE_BWD_IN, K_DENSE_BWD_W, K_TCN_FWD, K_TCN_BWD_D, K_TCN_BWD_W, K_TCN_BWD_X, K_RVT_FWD, K_RVT_BWD_W,
    K_RVT_BWD_IMG, K_RVT_BWD_X, K_MSE, K_ADAMW, K_GRU_TRAIN, K_LSTM_TRAIN, K_GRU_EVAL, K_LSTM_EVAL, K_DGRU_TRAIN,
    K_DGRU_EVAL, K_TRES_TRAIN, K_TRES_EVAL, K_RVT_TRAIN,
    K_RVT_EVAL, K_COUNT
};
const char *host_kernel_name(int k);

/* adamw's work-group (kernels.cl's WG). */
#define HOST_WG 256
/* The largest hidden size the host composes (one work-group of H work-items a sequence). */
#define HOST_MAX_HIDDEN 64
/* The fused kernels' work-group (gru_, lstm_, dgru_, tres_ train and eval:
 * kernels.cl's FUSED_WG), the
 * largest hidden size they take. */
#define HOST_FUSED 32
/* The local (shared) memory, in floats, of family's fused training step (train 1) of one layer of
 * hidden units at frames of T samples, or of its fused evaluation (train 0) in tiles of T
 * samples; 0 where the family has no fused kernels or hidden is past HOST_FUSED. A session
 * trains on them only where this fits the device's limit (backend.open's *local), on its layered
 * kernels otherwise, and evaluates in the longest tile that fits; tests/cuda_gate.sh checks the
 * H200's at the targets' frame. */
size_t host_fused_floats(const char *family, int hidden, int T, int train);
/* Training steps a recorded graph holds (backend.record). */
#define HOST_CHUNK 32

typedef void *dmem; /* a device buffer */

typedef struct backend {
    const char *name; /* "opencl", "cuda": the provider's name and its messages' prefix */
    int (*count)(void);
    dpd_status (*info)(int device, dpd_device_info *out);
    /* A queue on device (with the kernels built for hidden size H where the API needs that);
     * *group receives the largest work-group the recurrent kernels take there, *local the most
     * local (shared) memory a work-group may have, in bytes. */
    dpd_status (*open)(int device, int H, void **q, int *group, size_t *local, char *err, size_t nerr);
    void (*close)(void *q); /* waits for its work first; accepts NULL */
    int (*alloc)(void *q, size_t bytes, dmem *m);
    void (*free)(dmem m); /* accepts NULL */
    /* Copies between host and device; a write without wait may return before it is done, and
     * src must then stay valid until the next finish. */
    int (*write)(void *q, dmem m, const void *src, size_t bytes, int wait);
    int (*read)(void *q, dmem m, void *dst, size_t bytes);
    int (*zero)(void *q, dmem m, size_t bytes);
    /* Kernel k of the queue kq's kernels on queue q over n work-items in groups of local (0: the
     * API's choice), with arguments by types: 'm' dmem, 'i' int, 'f' float (a double in the
     * list), 'l' local memory of that many floats (an int in the list). */
    int (*launch)(void *kq, void *q, int k, size_t n, size_t local, const char *types, va_list ap);
    int (*finish)(void *q);
    /* Optional (NULL: none; the steps run as launched): record(q, NULL) starts recording q's
     * launches instead of running them, record(q, &g) ends it with a graph g that replay(q, g)
     * runs, each time the same launches; drop(g) frees it. */
    int (*record)(void *q, void **g);
    int (*replay)(void *q, void *g);
    void (*drop)(void *g);
    /* The dpd_status of error e, with a message naming what failed: DPD_E_NOMEM when the device
     * is full (the caller halves its batch), DPD_E_DEVICE otherwise. */
    dpd_status (*fail)(int e, const char *what, char *err, size_t nerr);
    int lost; /* the code launch returns for a lost device (test builds' DPD_<NAME>_FAIL) */
} backend;

/* The provider table around backend b (b must outlive it): every v2 slot and the v1 forward,
 * get_state and set_state; ctx is b. A library links host.c once, for its one backend. */
void host_provider(const backend *b, dpd_provider *out);

#endif
