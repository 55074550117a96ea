/* check: the CUDA GRU against dpd's CPU reference kernels, and its speed. Compares, for a random
 * GRU model and batch: the output, loss, every gradient and the input gradient of one step;
 * the parameters after several clipped AdamW steps; and a CUDA-graph replay of the whole step
 * against eager launches (bitwise). Then times GRU-23 at batch 64, frame 200 (OpenDPD's
 * reference workload), eager and as a graph. Without a CUDA device it prints SKIP and passes
 * nothing. Prints "RESULT cuda <passed> <failed>" for tests/run.sh. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "cpu/net.h"
#include "dpd/dpd.h"
#include "optim.h"
}
#include "gru.cuh"

static int passed, failed;
#define CHECK(c, ...)                                        \
    do {                                                     \
        if (c) passed++;                                     \
        else {                                               \
            failed++;                                        \
            fprintf(stderr, "FAIL cuda: " __VA_ARGS__);      \
            fprintf(stderr, "\n");                           \
        }                                                    \
    } while (0)

static double rel(const float *a, const float *b, size_t n) {
    double e = 0, m = 0;
    for (size_t i = 0; i < n; i++) e = fmax(e, fabs((double)a[i] - b[i])), m = fmax(m, fabs((double)b[i]));
    return m > 0 ? e / m : e;
}

static void fill(dpd_rng *r, float *p, size_t n, double s) {
    for (size_t i = 0; i < n; i++) p[i] = (float)(s * dpd_rng_normal(r));
}

/* One model size: parity of a step, of a short AdamW trajectory, and graph vs eager. */
static void parity(int B, int T, int H) {
    dpd_model_cfg cfg = {"gru", H, 1};
    dpd_model *m;
    dpd_error err;
    dpd_rng r;
    dpd_rng_seed(&r, 11);
    if (dpd_model_create(&cfg, &m, &err)) {
        CHECK(0, "%s", err.msg);
        return;
    }
    dpd_model_init(m, &r);
    dpd_net *net; /* the CPU engine with the scalar reference kernels, which the GPU mirrors */
    if (dpd_net_create(&cfg, NULL, NULL, &net, &err)) {
        CHECK(0, "%s", err.msg);
        return;
    }
    memcpy(dpd_net_params(net), dpd_model_params(m), dpd_model_nparams(m) * 4);
    size_t np = dpd_model_nparams(m), n = (size_t)B * T * 2;
    float *p = dpd_net_params(net), *x = (float *)malloc(n * 4), *t = (float *)malloc(n * 4), *y = (float *)malloc(n * 4);
    float *dx = (float *)malloc(n * 4), *h = (float *)malloc((np > n ? np : n) * 4);
    fill(&r, p + 6 * H + 3 * H * H, 6 * H, 0.1); /* nonzero biases exercise their paths */
    fill(&r, x, n, 0.4), fill(&r, t, n, 0.4);
    cgru c;
    CHECK(cgru_alloc(&c, B, T, H) == cudaSuccess && c.np == np, "alloc B=%d T=%d H=%d (np %zu vs %zu)", B, T, H, c.np, np);
    cudaMemcpy(c.p, p, np * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(c.x, x, n * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(c.tgt, t, n * 4, cudaMemcpyHostToDevice);
    /* one step, no clipping */
    double loss;
    CHECK(dpd_net_forward(net, x, B, T, y, &err) == DPD_OK, "%s", err.msg);
    CHECK(dpd_net_train_step(net, x, t, B, T, &loss, dx, &err) == DPD_OK, "%s", err.msg);
    cgru_grad(&c, 0.0f, 0);
    float gl;
    cudaMemcpy(h, c.y, n * 4, cudaMemcpyDeviceToHost);
    double ey = rel(h, y, n);
    cudaMemcpy(&gl, c.scal, 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(h, c.g, np * 4, cudaMemcpyDeviceToHost);
    double eg = rel(h, dpd_net_grads(net), np);
    cudaMemcpy(h, c.dx, n * 4, cudaMemcpyDeviceToHost);
    double ex = rel(h, dx, n);
    CHECK(ey < 1e-5 && fabs(gl - loss) < 1e-5 * loss && eg < 3e-5 && ex < 3e-5,
          "B=%d T=%d H=%d: output %.1e, loss %.9g vs %.9g, grads %.1e, dx %.1e", B, T, H, ey, gl, loss, eg, ex);
    printf("parity B=%d T=%d H=%d: output %.1e, loss %.1e, gradients %.1e, dx %.1e (relative to max)\n", B, T, H, ey,
           fabs(gl - loss) / loss, eg, ex);
    /* five clipped AdamW steps */
    dpd_adamw o;
    CHECK(dpd_adamw_init(&o, np, 5e-3, 0.01, &err) == DPD_OK, "%s", err.msg);
    float sc[4] = {0, 0, 5e-3f, 0};
    cudaMemcpy(c.scal, sc, sizeof sc, cudaMemcpyHostToDevice);
    for (int k = 0; k < 5; k++) {
        CHECK(dpd_net_train_step(net, x, t, B, T, &loss, NULL, &err) == DPD_OK, "%s", err.msg);
        dpd_clip(dpd_net_grads(net), np, 0.05);
        dpd_adamw_step(&o, p, dpd_net_grads(net));
        cgru_step(&c, 0.05f, 0.01f, 0);
    }
    cudaMemcpy(h, c.p, np * 4, cudaMemcpyDeviceToHost);
    double ep = rel(h, p, np);
    CHECK(ep < 1e-5, "B=%d T=%d H=%d: parameters after 5 AdamW steps differ by %.1e", B, T, H, ep);
    printf("parity B=%d T=%d H=%d: parameters after 5 clipped AdamW steps %.1e\n", B, T, H, ep);
    /* graph replay vs eager from the same state: bitwise */
    float *p0 = (float *)malloc(np * 4 * 3);
    cudaMemcpy(p0, c.p, np * 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(p0 + np, c.m, np * 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(p0 + 2 * np, c.v, np * 4, cudaMemcpyDeviceToHost);
    float s0[4];
    cudaMemcpy(s0, c.scal, sizeof s0, cudaMemcpyDeviceToHost);
    for (int k = 0; k < 3; k++) cgru_step(&c, 0.05f, 0.01f, 0);
    float *eager = (float *)malloc(np * 4);
    cudaMemcpy(eager, c.p, np * 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(c.p, p0, np * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(c.m, p0 + np, np * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(c.v, p0 + 2 * np, np * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(c.scal, s0, sizeof s0, cudaMemcpyHostToDevice);
    cudaStream_t st;
    cudaStreamCreate(&st);
    cudaGraph_t gph;
    cudaGraphExec_t ex2;
    cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal);
    cgru_step(&c, 0.05f, 0.01f, st);
    cudaStreamEndCapture(st, &gph);
    CHECK(cudaGraphInstantiate(&ex2, gph, 0) == cudaSuccess, "graph instantiate");
    for (int k = 0; k < 3; k++) cudaGraphLaunch(ex2, st);
    cudaStreamSynchronize(st);
    cudaMemcpy(h, c.p, np * 4, cudaMemcpyDeviceToHost);
    CHECK(!memcmp(h, eager, np * 4), "B=%d T=%d H=%d: CUDA-graph replay differs from eager launches", B, T, H);
    printf("graph replay of 3 steps bitwise equal to eager: %s\n", memcmp(h, eager, np * 4) ? "no" : "yes");
    cudaGraphExecDestroy(ex2), cudaGraphDestroy(gph), cudaStreamDestroy(st);
    CHECK(cudaGetLastError() == cudaSuccess, "CUDA error: %s", cudaGetErrorString(cudaGetLastError()));
    dpd_adamw_free(&o);
    cgru_free(&c);
    dpd_net_free(net);
    dpd_model_free(m);
    free(x), free(t), free(y), free(dx), free(h), free(p0), free(eager);
}

static void timing(int B, int T, int H, int steps) {
    cgru c;
    if (cgru_alloc(&c, B, T, H) != cudaSuccess) return;
    dpd_rng r;
    dpd_rng_seed(&r, 3);
    size_t n = (size_t)B * T * 2;
    float *h = (float *)malloc((c.np > n ? c.np : n) * 4), sc[4] = {0, 0, 5e-3f, 0};
    fill(&r, h, c.np, 0.2), cudaMemcpy(c.p, h, c.np * 4, cudaMemcpyHostToDevice);
    fill(&r, h, n, 0.3), cudaMemcpy(c.x, h, n * 4, cudaMemcpyHostToDevice);
    fill(&r, h, n, 0.3), cudaMemcpy(c.tgt, h, n * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(c.scal, sc, sizeof sc, cudaMemcpyHostToDevice);
    cudaStream_t st;
    cudaStreamCreate(&st);
    cudaEvent_t a, b;
    cudaEventCreate(&a), cudaEventCreate(&b);
    for (int k = 0; k < 3; k++) cgru_step(&c, 200.0f, 0.01f, st);
    cudaEventRecord(a, st);
    for (int k = 0; k < steps; k++) cgru_step(&c, 200.0f, 0.01f, st);
    cudaEventRecord(b, st);
    cudaEventSynchronize(b);
    float me;
    cudaEventElapsedTime(&me, a, b);
    cudaGraph_t gph;
    cudaGraphExec_t ge;
    cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal);
    cgru_step(&c, 200.0f, 0.01f, st);
    cudaStreamEndCapture(st, &gph);
    cudaGraphInstantiate(&ge, gph, 0);
    cudaGraphLaunch(ge, st);
    cudaEventRecord(a, st);
    for (int k = 0; k < steps; k++) cudaGraphLaunch(ge, st);
    cudaEventRecord(b, st);
    cudaEventSynchronize(b);
    float mg;
    cudaEventElapsedTime(&mg, a, b);
    printf("| GRU-%d | %d | %d | %.3f | %.3f |\n", H, B, T, me / steps, mg / steps);
    cudaGraphExecDestroy(ge), cudaGraphDestroy(gph), cudaStreamDestroy(st);
    cgru_free(&c);
    free(h);
}

/* check [--preflight]: with --preflight, the device's lines only (scripts/gpu-check.sh's preflight). */
int main(int argc, char **argv) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        printf("SKIP cuda: no CUDA device here (%s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        printf("RESULT cuda 0 0 1\n"); /* one skip: the whole check */
        return 0;
    }
    cudaDeviceProp pr;
    cudaGetDeviceProperties(&pr, 0);
    int drv = 0, rt = 0;
    cudaDriverGetVersion(&drv), cudaRuntimeGetVersion(&rt);
    printf("device: %s, %.0f GiB, sm_%d%d, driver %d, runtime %d\n", pr.name, pr.totalGlobalMem / 1073741824.0, pr.major,
           pr.minor, drv, rt);
    /* scripts/gpu-check.sh's preflight reads this line: what the fused kernels' frames may take */
    printf("preflight: sms %d smem_optin %zu smem_sm %zu smem_block %zu regs_block %d\n", pr.multiProcessorCount,
           (size_t)pr.sharedMemPerBlockOptin, (size_t)pr.sharedMemPerMultiprocessor, (size_t)pr.sharedMemPerBlock,
           pr.regsPerBlock);
    fflush(stdout);
    if (argc > 1 && !strcmp(argv[1], "--preflight")) return 0;
    parity(3, 24, 5);
    parity(7, 50, 23);
    parity(64, 200, 23);
    printf("| model | batch | frame | eager ms/step | CUDA graph ms/step |\n|---|---|---|---|---|\n");
    timing(64, 200, 23, 50);
    timing(64, 200, 15, 50);
    timing(256, 200, 23, 20);
    printf("RESULT cuda %d %d\n", passed, failed);
    return failed != 0;
}
