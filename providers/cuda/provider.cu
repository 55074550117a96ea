/* provider (cuda): the CUDA execution provider, built as libdpd-cuda.so inside a runtime pack.
 * It serves the one-layer GRU (the CUDA GRU of gru.cu) through the table of
 * include/dpd/provider.h; other models are "unsupported" (supports() = 0). It links nothing of
 * libdpd: only the ABI header's types. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dpd/provider.h"
#include "devices.cuh"
#include "gru.cuh"

typedef struct session {
    cgru c;
    int max_batch, T;
    cudaStream_t stream;
} session;

/* DPD_E_NOMEM for allocation failures (the caller halves its batch), DPD_E_DEVICE otherwise. */
static dpd_status cuda_fail(cudaError_t e, const char *what, char *err, size_t nerr) {
    snprintf(err, nerr, "cuda: %s: %s", what, cudaGetErrorString(e));
    return e == cudaErrorMemoryAllocation ? DPD_E_NOMEM : DPD_E_DEVICE;
}

static int device_count(void *ctx) { return cuda_count(); }

static dpd_status device_info(void *ctx, int d, dpd_device_info *out) { return cuda_info(d, out); }

static int supports(void *ctx, const dpd_model_cfg *m) {
    return !strcmp(m->family, "gru") && m->layers == 1 && m->hidden >= 1 && 3 * m->hidden <= 1024;
}

static void session_free(void *s) {
    session *ss = (session *)s;
    if (!ss) return;
    cgru_free(&ss->c);
    cudaStreamDestroy(ss->stream);
    free(ss);
}

static dpd_status session_create(void *ctx, int device, const dpd_model_cfg *m, int max_batch, int T, void **out,
                                 char *err, size_t nerr) {
    *out = NULL;
    if (!supports(ctx, m)) return snprintf(err, nerr, "cuda: %s-%d x %d layers is not supported", m->family, m->hidden, m->layers), DPD_E_UNSUPPORTED;
    cudaError_t e = cudaSetDevice(device);
    if (e != cudaSuccess) return cuda_fail(e, "set device", err, nerr);
    session *s = (session *)calloc(1, sizeof *s);
    if (!s) return DPD_E_NOMEM;
    s->max_batch = max_batch, s->T = T;
    if ((e = cudaStreamCreate(&s->stream)) != cudaSuccess || (e = cgru_alloc(&s->c, max_batch, T, m->hidden)) != cudaSuccess) {
        session_free(s);
        return cuda_fail(e, "allocate a session", err, nerr);
    }
    *out = s;
    return DPD_OK;
}

static dpd_status sync(session *s, const char *what, char *err, size_t nerr) {
    cudaError_t e = cudaStreamSynchronize(s->stream);
    if (e == cudaSuccess) e = cudaGetLastError();
    return e == cudaSuccess ? DPD_OK : cuda_fail(e, what, err, nerr);
}

static dpd_status upload(void *sv, const float *p, char *err, size_t nerr) {
    session *s = (session *)sv;
    cudaMemcpyAsync(s->c.p, p, s->c.np * sizeof *p, cudaMemcpyHostToDevice, s->stream);
    return sync(s, "upload", err, nerr);
}

static dpd_status download(void *sv, float *p, char *err, size_t nerr) {
    session *s = (session *)sv;
    cudaMemcpyAsync(p, s->c.p, s->c.np * sizeof *p, cudaMemcpyDeviceToHost, s->stream);
    return sync(s, "download", err, nerr);
}

static dpd_status shape(session *s, int B, int T, char *err, size_t nerr) {
    if (B < 1 || T < 1 || B > s->max_batch || T > s->T)
        return snprintf(err, nerr, "cuda: batch %d x %d exceeds the session's %d x %d", B, T, s->max_batch, s->T), DPD_E_INVAL;
    s->c.B = B, s->c.T = T;
    return DPD_OK;
}

static dpd_status forward(void *sv, const float *x, int B, int T, float *y, char *err, size_t nerr) {
    session *s = (session *)sv;
    dpd_status st = shape(s, B, T, err, nerr);
    if (st) return st;
    size_t n = (size_t)B * T * 2 * sizeof *x;
    cudaMemcpyAsync(s->c.x, x, n, cudaMemcpyHostToDevice, s->stream);
    cgru_forward(&s->c, s->stream);
    cudaMemcpyAsync(y, s->c.y, n, cudaMemcpyDeviceToHost, s->stream);
    return sync(s, "forward", err, nerr);
}

static dpd_status train_step(void *sv, const float *x, const float *t, int B, int T, double max_norm, double *loss,
                             char *err, size_t nerr) {
    session *s = (session *)sv;
    dpd_status st = shape(s, B, T, err, nerr);
    if (st) return st;
    size_t n = (size_t)B * T * 2 * sizeof *x;
    float l;
    cudaMemcpyAsync(s->c.x, x, n, cudaMemcpyHostToDevice, s->stream);
    cudaMemcpyAsync(s->c.tgt, t, n, cudaMemcpyHostToDevice, s->stream);
    cgru_grad(&s->c, (float)max_norm, s->stream);
    cudaMemcpyAsync(&l, s->c.scal, sizeof l, cudaMemcpyDeviceToHost, s->stream);
    st = sync(s, "train step", err, nerr);
    *loss = l;
    return st;
}

static dpd_status optimizer_step(void *sv, double lr, double wd, char *err, size_t nerr) {
    session *s = (session *)sv;
    float f = (float)lr;
    cudaMemcpyAsync(s->c.scal + 2, &f, sizeof f, cudaMemcpyHostToDevice, s->stream);
    cgru_adamw(&s->c, (float)wd, s->stream);
    return sync(s, "optimizer step", err, nerr);
}

/* forward_keep: forward leaves x and the saved activations on the device. */
static dpd_status backward(void *sv, const float *dy, float *dx, char *err, size_t nerr) {
    session *s = (session *)sv;
    size_t n = (size_t)s->c.B * s->c.T * 2 * sizeof *dy;
    cudaMemcpyAsync(s->c.dy, dy, n, cudaMemcpyHostToDevice, s->stream);
    cgru_backward(&s->c, s->stream);
    if (dx) cudaMemcpyAsync(dx, s->c.dx, n, cudaMemcpyDeviceToHost, s->stream);
    return sync(s, "backward", err, nerr);
}

static dpd_status clip(void *sv, double max_norm, char *err, size_t nerr) {
    session *s = (session *)sv;
    cgru_clip(&s->c, (float)max_norm, s->stream);
    return sync(s, "clip", err, nerr);
}

/* The step count lives in device memory as a float (exact below 2^24 steps). */
static dpd_status get_state(void *sv, float *m, float *v, long *step, char *err, size_t nerr) {
    session *s = (session *)sv;
    float f;
    cudaMemcpyAsync(m, s->c.m, s->c.np * sizeof *m, cudaMemcpyDeviceToHost, s->stream);
    cudaMemcpyAsync(v, s->c.v, s->c.np * sizeof *v, cudaMemcpyDeviceToHost, s->stream);
    cudaMemcpyAsync(&f, s->c.scal + 3, sizeof f, cudaMemcpyDeviceToHost, s->stream);
    dpd_status st = sync(s, "optimizer state", err, nerr);
    *step = (long)f;
    return st;
}

static dpd_status set_state(void *sv, const float *m, const float *v, long step, char *err, size_t nerr) {
    session *s = (session *)sv;
    float f = (float)step;
    cudaMemcpyAsync(s->c.m, m, s->c.np * sizeof *m, cudaMemcpyHostToDevice, s->stream);
    cudaMemcpyAsync(s->c.v, v, s->c.np * sizeof *v, cudaMemcpyHostToDevice, s->stream);
    cudaMemcpyAsync(s->c.scal + 3, &f, sizeof f, cudaMemcpyHostToDevice, s->stream);
    return sync(s, "optimizer state", err, nerr);
}

static const dpd_provider_i cuda_i = {DPD_PROVIDER_API, "cuda", device_count, device_info, supports, session_create,
                                      session_free, upload, download, forward, train_step, optimizer_step,
                                      forward, backward, clip, get_state, set_state, NULL};

extern "C" __attribute__((visibility("default"))) dpd_status dpd_provider_init(uint32_t api_version, dpd_provider *out,
                                                                               char *err, size_t nerr) {
    if (api_version != DPD_PROVIDER_API) {
        snprintf(err, nerr, "provider ABI %d, dpd asks for %u", DPD_PROVIDER_API, api_version);
        return DPD_E_UNSUPPORTED;
    }
    out->i = &cuda_i, out->ctx = NULL;
    return DPD_OK;
}

extern "C" __attribute__((visibility("default"))) int dpd_provider_score(char *why, size_t nwhy) {
    return cuda_score(why, nwhy);
}
