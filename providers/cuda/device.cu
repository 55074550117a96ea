/* device (cuda): the CUDA backend of providers/common/host.c — the device-resident provider (ABI
 * v2, every family host.c composes, DPD chains) on NVIDIA GPUs, built as libdpd-cuda-resident.so.
 * The kernels are providers/opencl/kernels.cl compiled as CUDA C++ in this translation unit (one
 * source for both APIs; the hidden size is their argument, so one cubin serves every size, but
 * for the fused kernels of the GRU, LSTM, DGRU and TRes-GRU, templates instantiated for every H up
 * to 32; tests/cuda_gate.sh checks their resources). The CUDA pack's library (make pack-cuda); not run
 * on a GPU yet: the install probe trains every family on the device against the cpu before a
 * pack activates, and scripts/gpu-check.sh runs the conformance suite on it.
 *
 * A queue is a CUDA stream on its device. Launches take their geometry from the work: a kernel
 * with a work-group (the recurrent ones: H threads a sequence) runs n / local blocks of local
 * threads; the others run blocks of the largest divisor of n up to 256 threads, since the kernels
 * carry no bounds check (OpenCL launches exactly n work-items). */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "../common/host.h"
}

#include "devices.cuh"
#include "../opencl/kernels.cl"
#undef H /* kernels.cl's name for the kernels' hidden-size argument */

/* The kernels by host.h's index. */
static const void *const kernels[K_COUNT] = {
    (const void *)gather,      (const void *)features,  (const void *)features_bwd, (const void *)gru_fwd,
    (const void *)gru_bwd,     (const void *)lstm_fwd,  (const void *)lstm_bwd,     (const void *)rnn_bwd_w,
    (const void *)dense_fwd,   (const void *)act_bwd,   (const void *)dense_bwd_in, (const void *)dense_bwd_w,
    (const void *)tcn_fwd,     (const void *)tcn_bwd_d, (const void *)tcn_bwd_w,    (const void *)tcn_bwd_x,
    (const void *)rvt_fwd,     (const void *)rvt_bwd_w, (const void *)rvt_bwd_img,  (const void *)rvt_bwd_x,
    (const void *)mse,         (const void *)adamw,     NULL /* gru_train_h[H] */, NULL /* lstm_train_h[H] */,
    NULL /* gru_eval_h[H] */,  NULL /* lstm_eval_h[H] */,   NULL /* dgru_train_h[H] */,   NULL /* dgru_eval_h[H] */,
    NULL /* tres_train_h[H] */, NULL /* tres_eval_h[H] */,  (const void *)rvt_train,     (const void *)rvt_eval};

static dpd_status fail(int e, const char *what, char *err, size_t nerr) {
    snprintf(err, nerr, "cuda: %s: %s", what, cudaGetErrorString((cudaError_t)e));
    return e == cudaErrorMemoryAllocation ? DPD_E_NOMEM : DPD_E_DEVICE;
}


typedef struct queue {
    int device, H;
    cudaStream_t s;
} queue;

static void close_queue(void *qv) {
    queue *q = (queue *)qv;
    if (!q) return;
    if (q->s) cudaStreamSynchronize(q->s), cudaStreamDestroy(q->s);
    free(q);
}

static dpd_status open_queue(int d, int H, void **out, int *group, size_t *local, char *err, size_t nerr) {
    queue *q = (queue *)calloc(1, sizeof *q);
    cudaDeviceProp p;
    cudaError_t e;
    *out = NULL;
    if (!q) return snprintf(err, nerr, "cuda: out of memory"), DPD_E_NOMEM;
    q->device = d, q->H = H;
    if ((e = cudaSetDevice(d)) || (e = cudaStreamCreateWithFlags(&q->s, cudaStreamNonBlocking)) ||
        (e = cudaGetDeviceProperties(&p, d))) {
        close_queue(q);
        return fail(e, "open a stream", err, nerr);
    }
    /* the fused kernels' frames live in dynamic shared memory: past 48 KiB a kernel must be allowed
     * it (RVTDCNN's as well: 98 T + 2 H T floats, 88 KiB at T = 200 and H = 12) */
    const void *fused[10] = {NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, (const void *)rvt_train,
                             (const void *)rvt_eval};
    const void *const *each[8] = {gru_train_h, lstm_train_h, gru_eval_h,  lstm_eval_h,
                                  dgru_train_h, dgru_eval_h, tres_train_h, tres_eval_h};
    for (int i = 0; i < 8 && H <= HOST_FUSED; i++) fused[i] = each[i][H];
    for (int i = 0; i < 10 && H <= HOST_FUSED; i++)
        if ((e = cudaFuncSetAttribute(fused[i], cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      (int)p.sharedMemPerBlockOptin))) {
            close_queue(q);
            return fail(e, "allow a fused step its shared memory", err, nerr);
        }
    *group = p.maxThreadsPerBlock, *local = H <= HOST_FUSED ? p.sharedMemPerBlockOptin : 0, *out = q;
    return DPD_OK;
}

/* The queue's device current on this thread (a stream runs only on its own device). */
static int on(void *q) { return cudaSetDevice(((queue *)q)->device); }

static int alloc(void *q, size_t bytes, dmem *m) {
    int e = on(q);
    return e ? e : cudaMalloc(m, bytes);
}

static void release(dmem m) {
    if (m) cudaFree(m);
}

static int write_buf(void *q, dmem m, const void *src, size_t bytes, int wait) {
    cudaStream_t s = ((queue *)q)->s;
    int e = on(q);
    if (!e) e = cudaMemcpyAsync(m, src, bytes, cudaMemcpyHostToDevice, s);
    return e || !wait ? e : cudaStreamSynchronize(s);
}

static int read_buf(void *q, dmem m, void *dst, size_t bytes) {
    cudaStream_t s = ((queue *)q)->s;
    int e = on(q);
    if (!e) e = cudaMemcpyAsync(dst, m, bytes, cudaMemcpyDeviceToHost, s);
    return e ? e : cudaStreamSynchronize(s);
}

static int zero(void *q, dmem m, size_t bytes) {
    int e = on(q);
    return e ? e : cudaMemsetAsync(m, 0, bytes, ((queue *)q)->s);
}

/* The largest divisor of n up to 256 (n > 0). */
static unsigned block_for(size_t n) {
    for (unsigned b = 256; b > 1; b--)
        if (n % b == 0) return b;
    return 1;
}

static int launch(void *kq, void *q, int k, size_t n, size_t local, const char *types, va_list ap) {
    void *argv[32];
    union {
        void *m;
        int i;
        float f;
    } store[32];
    size_t shared = 0;
    int na = 0;
    for (int i = 0; types[i] && na < 32; i++) {
        if (types[i] == 'l') { /* not an argument here: the dynamic shared memory */
            shared = (size_t)va_arg(ap, int) * sizeof(float);
            continue;
        }
        if (types[i] == 'm') store[na].m = va_arg(ap, dmem);
        else if (types[i] == 'i') store[na].i = va_arg(ap, int);
        else store[na].f = (float)va_arg(ap, double);
        argv[na] = &store[na];
        na++;
    }
    unsigned block = local ? (unsigned)local : block_for(n);
    /* kq: the session whose kernel this is (a chained PA's run on the DPD's stream q) */
    int H = ((queue *)kq)->H;
    const void *f = k == K_GRU_TRAIN    ? gru_train_h[H]
                    : k == K_LSTM_TRAIN ? lstm_train_h[H]
                    : k == K_GRU_EVAL   ? gru_eval_h[H]
                    : k == K_LSTM_EVAL  ? lstm_eval_h[H]
                    : k == K_DGRU_TRAIN ? dgru_train_h[H]
                    : k == K_DGRU_EVAL  ? dgru_eval_h[H]
                    : k == K_TRES_TRAIN ? tres_train_h[H]
                    : k == K_TRES_EVAL  ? tres_eval_h[H]
                                        : kernels[k];
    int e = on(q);
    return e ? e : cudaLaunchKernel(f, dim3((unsigned)(n / block)), dim3(block), argv, shared, ((queue *)q)->s);
}

/* The stream's own result (cudaGetLastError would also report an earlier call's error that was
 * handled, such as a cudaMalloc refused for memory before a batch was halved). */
static int finish(void *q) {
    int e = on(q);
    return e ? e : cudaStreamSynchronize(((queue *)q)->s);
}

/* A chunk of training steps as a CUDA graph: the stream's launches captured (this thread's only),
 * instantiated, replayed with one launch. */
static int record(void *qv, void **g) {
    queue *q = (queue *)qv;
    int e = on(q);
    if (!g) return e ? e : cudaStreamBeginCapture(q->s, cudaStreamCaptureModeThreadLocal);
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    *g = NULL;
    int e2 = cudaStreamEndCapture(q->s, &graph); /* whatever happened: the stream must not stay capturing */
    if (!e) e = e2;
    if (!e) e = cudaGraphInstantiate(&exec, graph, 0);
    if (graph) cudaGraphDestroy(graph);
    if (!e) *g = exec;
    return e;
}

static int replay(void *q, void *g) {
    int e = on(q);
    return e ? e : cudaGraphLaunch((cudaGraphExec_t)g, ((queue *)q)->s);
}

static void drop(void *g) { cudaGraphExecDestroy((cudaGraphExec_t)g); }

static const backend cuda_resident = {"cuda", cuda_count, cuda_info, open_queue, close_queue, alloc, release, write_buf,
                                      read_buf, zero, launch, finish, record, replay, drop, fail,
                                      cudaErrorDevicesUnavailable};

extern "C" __attribute__((visibility("default"))) dpd_status dpd_provider_init(uint32_t api_version, dpd_provider *out,
                                                                               char *err, size_t nerr) {
    if (api_version != DPD_PROVIDER_API) {
        snprintf(err, nerr, "provider ABI %d, dpd asks for %u", DPD_PROVIDER_API, api_version);
        return DPD_E_UNSUPPORTED;
    }
    host_provider(&cuda_resident, out);
    return DPD_OK;
}

extern "C" __attribute__((visibility("default"))) int dpd_provider_score(char *why, size_t nwhy) {
    return cuda_score(why, nwhy);
}
