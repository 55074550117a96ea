/* gru (CUDA): see gru.cuh. One thread block per sequence, 3H threads (rows of the gates); the
 * state lives in shared memory across the time loop. */
#include <math.h>
#include <string.h>

#include "gru.cuh"

size_t cgru_nparams(int H) { return (size_t)3 * H * 2 + 3 * (size_t)H * H + 6 * (size_t)H + 2 * (size_t)H + 2; }

/* Offsets of the tensors in the parameter buffer. */
struct lay {
    int wih, whh, bih, bhh, wo, bo;
};
__host__ __device__ static lay layout(int H) {
    lay l;
    int G = 3 * H;
    l.wih = 0, l.whh = l.wih + G * 2, l.bih = l.whh + G * H, l.bhh = l.bih + G, l.wo = l.bhh + G, l.bo = l.wo + 2 * H;
    return l;
}

__device__ static float sigm(float a) { return 1.0f / (1.0f + expf(-a)); }

__global__ static void k_forward(int T, int H, const float *__restrict__ p, const float *__restrict__ x,
                                 float *__restrict__ y, float *__restrict__ saved) {
    extern __shared__ float sh[]; /* h (H), ai (3H), ah (3H) */
    int b = blockIdx.x, q = threadIdx.x, G = 3 * H;
    float *h = sh, *ai = h + H, *ah = ai + G;
    lay l = layout(H);
    if (q < H) h[q] = 0.0f;
    __syncthreads();
    for (int t = 0; t < T; t++) {
        const float *xt = x + ((size_t)b * T + t) * 2;
        if (q < G) {
            float a = p[l.bih + q] + p[l.wih + q * 2] * xt[0] + p[l.wih + q * 2 + 1] * xt[1];
            float c = p[l.bhh + q];
            if (t)
                for (int i = 0; i < H; i++) c += p[l.whh + q * H + i] * h[i];
            ai[q] = a, ah[q] = c;
        }
        __syncthreads();
        float hn = 0.0f;
        if (q < H) {
            float r = sigm(ai[q] + ah[q]), z = sigm(ai[H + q] + ah[H + q]);
            float g = ah[2 * H + q], n = tanhf(ai[2 * H + q] + r * g);
            hn = (1.0f - z) * n + z * h[q];
            float *s = saved + ((size_t)b * T + t) * 5 * H;
            s[q] = r, s[H + q] = z, s[2 * H + q] = n, s[3 * H + q] = g, s[4 * H + q] = hn;
        }
        __syncthreads();
        if (q < H) h[q] = hn;
        __syncthreads();
        if (q < 2) {
            float o = p[l.bo + q];
            for (int j = 0; j < H; j++) o += p[l.wo + q * H + j] * h[j];
            y[((size_t)b * T + t) * 2 + q] = o;
        }
    }
}

/* Loss partials and dy = 2 (y - t) / n: one block, fixed tree reduction. */
__global__ static void k_loss(size_t n, const float *__restrict__ y, const float *__restrict__ t,
                              float *__restrict__ dy, float *__restrict__ scal) {
    __shared__ double part[1024];
    double acc = 0;
    for (size_t i = threadIdx.x; i < n; i += blockDim.x) {
        float d = y[i] - t[i];
        acc += (double)d * d;
        dy[i] = 2.0f * d / (float)n;
    }
    part[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) scal[0] = (float)(part[0] / (double)n);
}

__global__ static void k_backward(int T, int H, size_t np, const float *__restrict__ p, const float *__restrict__ x,
                                  const float *__restrict__ dy, const float *__restrict__ saved,
                                  float *__restrict__ slab, float *__restrict__ dx) {
    extern __shared__ float sh[]; /* dhn (H), da (3H), dah (3H), hprev (H), dyt (2) */
    int b = blockIdx.x, q = threadIdx.x, G = 3 * H;
    float *dhn = sh, *da = dhn + H, *dah = da + G, *hp = dah + G, *dyt = hp + H;
    lay l = layout(H);
    float *gs = slab + (size_t)b * np;
    for (size_t k = q; k < np; k += blockDim.x) gs[k] = 0.0f;
    if (q < H) dhn[q] = 0.0f;
    __syncthreads();
    for (int t = T - 1; t >= 0; t--) {
        const float *s = saved + ((size_t)b * T + t) * 5 * H, *xt = x + ((size_t)b * T + t) * 2;
        if (q < 2) dyt[q] = dy[((size_t)b * T + t) * 2 + q];
        if (q < H) hp[q] = t ? saved[((size_t)b * T + t - 1) * 5 * H + 4 * H + q] : 0.0f;
        __syncthreads();
        if (q < H) {
            float hcur = s[4 * H + q];
            float d = dhn[q] + p[l.wo + q] * dyt[0] + p[l.wo + H + q] * dyt[1];
            gs[l.wo + q] += dyt[0] * hcur, gs[l.wo + H + q] += dyt[1] * hcur;
            float r = s[q], z = s[H + q], n = s[2 * H + q], g = s[3 * H + q];
            float dan = d * (1.0f - z) * (1.0f - n * n), daz = d * (hp[q] - n) * z * (1.0f - z);
            float dar = dan * g * r * (1.0f - r);
            da[q] = dar, da[H + q] = daz, da[2 * H + q] = dan;
            dah[q] = dar, dah[H + q] = daz, dah[2 * H + q] = dan * r;
            dhn[q] = d * z; /* direct path; read back below by this same thread */
        }
        if (q < 2) gs[l.bo + q] += dyt[q];
        __syncthreads();
        if (q < G) {
            float a = da[q], c = dah[q];
            gs[l.wih + q * 2] += a * xt[0], gs[l.wih + q * 2 + 1] += a * xt[1];
            gs[l.bih + q] += a, gs[l.bhh + q] += c;
            if (t)
                for (int i = 0; i < H; i++) gs[l.whh + q * H + i] += c * hp[i];
        }
        float acc = 0.0f;
        if (q < H) {
            acc = dhn[q];
            for (int k = 0; k < G; k++) acc += p[l.whh + k * H + q] * dah[k];
        }
        if (q < 2 && dx) {
            float d = 0.0f;
            for (int k = 0; k < G; k++) d += p[l.wih + k * 2 + q] * da[k];
            dx[((size_t)b * T + t) * 2 + q] = d;
        }
        __syncthreads();
        if (q < H) dhn[q] = acc;
        __syncthreads();
    }
}

/* g[k] = sum over sequences, in sequence order. */
__global__ static void k_reduce(int B, size_t np, const float *__restrict__ slab, float *__restrict__ g) {
    size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= np) return;
    float s = 0.0f;
    for (int b = 0; b < B; b++) s += slab[(size_t)b * np + k];
    g[k] = s;
}

/* Global L2 norm (fixed tree, double) and the clip scale max_norm / (norm + 1e-6) when < 1. */
__global__ static void k_clip(size_t np, float *__restrict__ g, float max_norm, float *__restrict__ scal) {
    __shared__ double part[1024];
    double acc = 0;
    for (size_t i = threadIdx.x; i < np; i += blockDim.x) acc += (double)g[i] * g[i];
    part[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
        __syncthreads();
    }
    double norm = sqrt(part[0]);
    if (threadIdx.x == 0) scal[1] = (float)norm;
    if (max_norm > 0) {
        double coef = max_norm / (norm + 1e-6);
        if (coef < 1.0)
            for (size_t i = threadIdx.x; i < np; i += blockDim.x) g[i] *= (float)coef;
    }
}

/* AdamW, the same float arithmetic as src/optim.c; lr and the step count from device memory. */
__global__ static void k_adamw(size_t np, float *__restrict__ p, const float *__restrict__ g, float *__restrict__ m,
                               float *__restrict__ v, const float *__restrict__ scal, float wd) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= np) return;
    double lr = scal[2], step = scal[3] + 1.0;
    float decay = (float)(1.0 - lr * wd), b1 = 0.9f, b2 = 0.999f, c1 = (float)(1.0 - 0.9), c2 = (float)(1.0 - 0.999);
    double bc1 = 1.0 - pow(0.9, step), bc2 = 1.0 - pow(0.999, step);
    float stp = (float)(lr / bc1), bc2s = (float)sqrt(bc2), eps = 1e-8f;
    float pi = p[i] * decay;
    float mi = m[i] * b1 + g[i] * c1, vi = v[i] * b2 + g[i] * g[i] * c2;
    m[i] = mi, v[i] = vi;
    p[i] = pi - stp * (mi / (sqrtf(vi) / bc2s + eps));
}

__global__ static void k_count(float *scal) { scal[3] += 1.0f; }

static int threads_for(int H) { int t = 3 * H; return t < 32 ? 32 : (t + 31) / 32 * 32; }

void cgru_forward(cgru *c, cudaStream_t s) {
    int H = c->H;
    k_forward<<<c->B, threads_for(H), (size_t)7 * H * sizeof(float), s>>>(c->T, H, c->p, c->x, c->y, c->saved);
}

void cgru_backward(cgru *c, cudaStream_t s) {
    int H = c->H;
    k_backward<<<c->B, threads_for(H), ((size_t)8 * H + 2) * sizeof(float), s>>>(c->T, H, c->np, c->p, c->x, c->dy,
                                                                                   c->saved, c->slab, c->dx);
    k_reduce<<<(unsigned)((c->np + 255) / 256), 256, 0, s>>>(c->B, c->np, c->slab, c->g);
}

void cgru_clip(cgru *c, float max_norm, cudaStream_t s) { k_clip<<<1, 1024, 0, s>>>(c->np, c->g, max_norm, c->scal); }

void cgru_grad(cgru *c, float max_norm, cudaStream_t s) {
    cgru_forward(c, s);
    k_loss<<<1, 1024, 0, s>>>((size_t)c->B * c->T * 2, c->y, c->tgt, c->dy, c->scal);
    cgru_backward(c, s);
    cgru_clip(c, max_norm, s);
}

void cgru_adamw(cgru *c, float wd, cudaStream_t s) {
    k_adamw<<<(unsigned)((c->np + 255) / 256), 256, 0, s>>>(c->np, c->p, c->g, c->m, c->v, c->scal, wd);
    k_count<<<1, 1, 0, s>>>(c->scal);
}

void cgru_step(cgru *c, float max_norm, float wd, cudaStream_t s) {
    cgru_grad(c, max_norm, s);
    cgru_adamw(c, wd, s);
}

cudaError_t cgru_alloc(cgru *c, int B, int T, int H) {
    memset(c, 0, sizeof *c);
    c->B = B, c->T = T, c->H = H, c->np = cgru_nparams(H);
    size_t io = (size_t)B * T * 2;
    cudaError_t e;
    float **bufs[] = {&c->p, &c->g, &c->m, &c->v, &c->x, &c->tgt, &c->y, &c->dy, &c->dx, &c->saved, &c->slab, &c->scal};
    size_t sizes[] = {c->np, c->np, c->np, c->np, io, io, io, io, io, (size_t)B * T * 5 * H, (size_t)B * c->np, 4};
    for (int i = 0; i < 12; i++) {
        if ((e = cudaMalloc((void **)bufs[i], sizes[i] * sizeof(float))) != cudaSuccess) {
            cgru_free(c);
            return e;
        }
        cudaMemset(*bufs[i], 0, sizes[i] * sizeof(float));
    }
    return cudaSuccess;
}

void cgru_free(cgru *c) {
    float *bufs[] = {c->p, c->g, c->m, c->v, c->x, c->tgt, c->y, c->dy, c->dx, c->saved, c->slab, c->scal};
    for (int i = 0; i < 12; i++) cudaFree(bufs[i]);
    memset(c, 0, sizeof *c);
}
