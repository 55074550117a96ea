/* kernels (opencl): the OpenCL C kernels of the OpenCL provider, embedded in libdpd-opencl.so
 * and built at session creation with the hidden size as a compile-time constant (-D H_CONST=H:
 * one program per device and size); built without it (CUDA: tests/cuda_gate.sh) the hidden size
 * is the kernels' argument `hidden`. The recurrent kernels' local memory (their exchange of the
 * hidden state or the gate gradients) is sized by the host at launch (the last argument, `sm`).
 * Layouts are dpd's (docs/formats.md): a batch is (B, T, 2) floats, a layer's output (B, T, H),
 * rows r = b T + t; parameters one buffer in the safetensors order, addressed by the offsets of
 * the family's tensor table (arguments, never restated here; -1: the tensor is absent). The host
 * (provider.c) composes a family from these pieces: features, recurrent layers, dense layers,
 * TRes-GRU's dilated convolution and RVTDCNN's feature-image convolution, forward and backward.
 *
 * Determinism (docs/providers.md): no atomics; every sum runs in an order fixed by indices (time
 * order inside a sequence, batch order across sequences, a fixed tree for the gradient norm); the
 * geometry of the kernels whose work-items cooperate comes from the batch and the hidden size,
 * never from the device (the data-parallel ones, whose work-items share nothing, run in groups
 * the host picks for a CPU device and the driver for a GPU: any size gives the same results); every
 * work-item of a group passes every barrier (an early return before a barrier is undefined, and
 * PoCL miscompiles it). No product is contracted into a fused multiply-add, by either compiler:
 * nvcc fuses across statements, so a sum would round differently in a fused kernel (its hidden size a
 * constant) and in the layered kernels. The same run twice on one device is therefore bitwise
 * identical, and the fused kernels' results the layered kernels'.
 *
 * Gradients are per-sequence partials, gp (B, np): the backward kernels each write their own
 * parameters' slots of their sequence's row (every slot of the model, every step), and `adamw`
 * sums the rows in batch order. A recurrent layer's backward is two kernels: the chain through
 * time (one work-group a sequence, the gate gradients out) and the weight gradients, sums over
 * time that run one work-item a parameter and sequence.
 *
 * The same text compiles as CUDA C++ (nvcc -x cu): the few OpenCL words are mapped below, and
 * every kernel is written so that its arrays are indexed by constants once unrolled (no local
 * stack, no spills: tests/cuda_gate.sh checks ptxas's report for the H200). */

#ifdef __CUDACC__
#define __kernel extern "C" __global__
#define __global
#define __local __shared__
#define barrier(flags) __syncthreads()
#define get_group_id(d) blockIdx.x
#define get_local_id(d) threadIdx.x
#define get_global_id(d) ((size_t)blockIdx.x * blockDim.x + threadIdx.x)
#define FN static __device__
#define WG_SIZE(n) __launch_bounds__(n)
#define SHARED                           /* CUDA: dynamic shared memory, sized by the launch */
#define SHARED_MEM
extern __shared__ float sm[]; /* one declaration for every kernel (the extern "C" ones and the templates) */
#define LOCAL_PTR float *
typedef unsigned int uint;
#else
#pragma OPENCL FP_CONTRACT OFF /* no fused multiply-adds on either API (nvcc: -fmad=false), see above */
#define FN static
#define WG_SIZE(n) __attribute__((reqd_work_group_size(n, 1, 1)))
#define SHARED , __local float *sm       /* OpenCL: a local-memory argument, sized by the host */
#define SHARED_MEM
#define LOCAL_PTR __local float *
#endif

/* The loss's partial sums: double where the device has it (CUDA; OpenCL with cl_khr_fp64), as the
 * cpu provider sums its loss; float on an OpenCL device without doubles. The host sizes lp for
 * doubles either way. */
#if defined(__CUDACC__)
typedef double lsum;
#elif defined(cl_khr_fp64)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double lsum;
#else
typedef float lsum;
#endif

#ifdef H_CONST
#define H H_CONST
#else
#define H hidden
#endif

FN float sigm(float a) { return 1.0f / (1.0f + exp(-a)); }
FN float hswish(float v) { return v <= -3 ? 0 : v >= 3 ? v : v * (v + 3) / 6; }
FN float hswish_d(float v) { return v < -3 ? 0 : v <= 3 ? v / 3 + 0.5f : 1; }
FN float amp(float i, float q) { return sqrt(i * i + q * q); }

/* bx, by (B, L, 2) = the step's frames, frames[k batch ..) with k = *cur, the step's index in the
 * call (adamw advances it: a step's launches are the same for every step), of length L at stride
 * S of the resident x, y. */
__kernel void gather(__global const float *x, __global const float *y, __global const uint *frames,
                     __global const int *cur, int batch, int L, int S, __global float *bx, __global float *by) {
    size_t i = get_global_id(0), per = (size_t)L * 2, b = i / per;
    size_t src = (size_t)frames[(size_t)*cur * batch + b] * (size_t)S * 2 + i % per;
    bx[i] = x[src];
    by[i] = y[src];
}

/* ---- features (one work-item a row) ---------------------------------------------------------- */

/* f (R, 6) of x (R, 2) at x + off, sequences of T: kind 1 DGRU's (I, Q, A, A^3, Q/A, I/A), kind 2
 * TRes-GRU's (I, Q, A, A^3, I[t+1], Q[t+1]), the next sample taken circularly in the sequence. */
/* The six features of sample (i, q), (ni, nq) the next one, into o. */
FN void feature6(float i, float q, float ni, float nq, int kind, float *o) {
    float a = amp(i, q);
    o[0] = i, o[1] = q, o[2] = a, o[3] = a * a * a;
    if (kind == 1) o[4] = a > 0 ? q / a : 0, o[5] = a > 0 ? i / a : 0;
    else o[4] = ni, o[5] = nq;
}

__kernel void features(__global const float *x, int off, int T, int kind, __global float *f) {
    size_t r = get_global_id(0), b = r / T;
    int t = r % T;
    __global const float *xs = x + off + 2 * r, *xn = x + off + 2 * (b * T + (t + 1) % T);
    float o[6];
    feature6(xs[0], xs[1], xn[0], xn[1], kind, o);
#pragma unroll
    for (int k = 0; k < 6; k++) f[6 * r + k] = o[k];
}

/* dx (R, 2) from the features' gradients df (and df2 added, when has2) by the chain rule of
 * `features`; TRes-GRU's next-sample terms gathered from row t - 1 of the sequence. */
__kernel void features_bwd(__global const float *x, int off, int T, int kind, __global const float *df,
                           __global const float *df2, int has2, __global float *dx) {
    size_t r = get_global_id(0), b = r / T;
    int t = r % T;
    float g[6], i = x[off + 2 * r], q = x[off + 2 * r + 1], a = amp(i, q);
    for (int k = 0; k < 6; k++) g[k] = df[6 * r + k] + (has2 ? df2[6 * r + k] : 0);
    float di = g[0], dq = g[1];
    if (kind == 1) {
        if (a > 0) {
            float a3 = a * a * a, dA = g[2] + 3 * a * a * g[3];
            di += dA * i / a + g[4] * (-q * i / a3) + g[5] * (q * q / a3);
            dq += dA * q / a + g[4] * (i * i / a3) + g[5] * (-i * q / a3);
        }
    } else {
        if (a > 0) {
            float dA = g[2] + 3 * a * a * g[3];
            di += dA * i / a, dq += dA * q / a;
        }
        size_t p = b * T + (t + T - 1) % T; /* the row whose next sample this is */
        di += df[6 * p + 4] + (has2 ? df2[6 * p + 4] : 0), dq += df[6 * p + 5] + (has2 ? df2[6 * p + 5] : 0);
    }
    dx[2 * r] = di, dx[2 * r + 1] = dq;
}

/* ---- GRU layer: one work-group of H work-items a sequence, work-item j the hidden unit j;
 * local memory sm: H floats (forward), 6 H (backward) ------------------------------------------- */

/* in (B, T, I) at in + off -> hs (B, T, H); sv (B, T, 4 H) keeps r, z, n and g = W_hn h + b_hn
 * for the backward. PyTorch's gate order r, z, n; o_bih, o_bhh -1: bias-free. */
__kernel void gru_fwd(__global const float *in, int off, int I, int T, int hidden, __global const float *p, int o_wih,
                      int o_whh, int o_bih, int o_bhh, __global float *hs, __global float *sv SHARED) {
    SHARED_MEM
    int b = get_group_id(0), j = get_local_id(0);
    LOCAL_PTR h = sm;
    __global const float *x = in + off + (size_t)b * T * I, *wih = p + o_wih, *whh = p + o_whh;
    float hj = 0;
    h[j] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int t = 0; t < T; t++) {
        float ar = 0, az = 0, an = 0, gr = 0, gz = 0, gn = 0;
        if (o_bih >= 0) ar = p[o_bih + j], az = p[o_bih + H + j], an = p[o_bih + 2 * H + j];
        if (o_bhh >= 0) gr = p[o_bhh + j], gz = p[o_bhh + H + j], gn = p[o_bhh + 2 * H + j];
        for (int i = 0; i < I; i++) {
            float xi = x[t * I + i];
            ar += wih[j * I + i] * xi, az += wih[(H + j) * I + i] * xi, an += wih[(2 * H + j) * I + i] * xi;
        }
        for (int k = 0; k < H; k++) {
            float hk = h[k];
            gr += whh[j * H + k] * hk, gz += whh[(H + j) * H + k] * hk, gn += whh[(2 * H + j) * H + k] * hk;
        }
        float r = sigm(ar + gr), z = sigm(az + gz), n = tanh(an + r * gn);
        hj = (1 - z) * n + z * hj;
        size_t o = ((size_t)b * T + t) * H;
        hs[o + j] = hj;
        sv[4 * o + j] = r, sv[4 * o + H + j] = z, sv[4 * o + 2 * H + j] = n, sv[4 * o + 3 * H + j] = gn;
        barrier(CLK_LOCAL_MEM_FENCE); /* every unit has read h(t - 1) */
        h[j] = hj;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

/* One step's input gradient of a recurrent layer, dxt (I) = W_ih^T da, W_ih (G, I), da (G) the
 * step's gate gradients in local memory: work-item j of the n takes inputs j, j + n, ... */
FN void input_grad(__global const float *wih, LOCAL_PTR da, int G, int I, int j, int n, __global float *dxt) {
    for (int i = j; i < I; i += n) {
        float e = 0;
        for (int q = 0; q < G; q++) e += wih[q * I + i] * da[q];
        dxt[i] = e;
    }
}

/* The backward of gru_fwd's recurrence: dh (B, T, H), the gradient reaching hs from above, in;
 * ga (B, T, 6 H) receives each step's gate gradients, the input side's (r, z, n) then the hidden
 * side's (r, z, r n), for rnn_bwd_w; dx (B, T, I) written when want_dx. Only the chain through
 * time runs here, one work-group a sequence: the weight gradients, sums over time, are
 * data-parallel (rnn_bwd_w), which keeps this kernel's registers few. */
__kernel void gru_bwd(__global const float *p, int I, int T, int hidden, int o_wih, int o_whh, __global const float *hs,
                      __global const float *sv, __global const float *dh, __global float *ga, __global float *dx,
                      int want_dx SHARED) {
    SHARED_MEM
    int b = get_group_id(0), j = get_local_id(0);
    LOCAL_PTR da = sm;
    LOCAL_PTR dah = sm + 3 * H;
    __global const float *wih = p + o_wih, *whh = p + o_whh;
    float dn = 0;
    for (int t = T - 1; t >= 0; t--) {
        size_t o = ((size_t)b * T + t) * H;
        float r = sv[4 * o + j], z = sv[4 * o + H + j], n = sv[4 * o + 2 * H + j], g = sv[4 * o + 3 * H + j];
        float hp = t ? hs[o - H + j] : 0, dd = dh[o + j] + dn;
        float dan = dd * (1 - z) * (1 - n * n), daz = dd * (hp - n) * z * (1 - z), dar = dan * g * r * (1 - r);
        da[j] = dar, da[H + j] = daz, da[2 * H + j] = dan;
        dah[j] = dar, dah[H + j] = daz, dah[2 * H + j] = dan * r;
        __global float *out = ga + 6 * o;
        out[j] = dar, out[H + j] = daz, out[2 * H + j] = dan, out[3 * H + j] = dar, out[4 * H + j] = daz;
        out[5 * H + j] = dan * r;
        barrier(CLK_LOCAL_MEM_FENCE);
        float s = 0;
        for (int q = 0; q < 3 * H; q++) s += whh[q * H + j] * dah[q];
        dn = s + dd * z;
        if (want_dx) input_grad(wih, da, 3 * H, I, j, H, dx + ((size_t)b * T + t) * I);
        barrier(CLK_LOCAL_MEM_FENCE); /* da is read by all before the next step writes it */
    }
}

/* A recurrent layer's parameter gradients per sequence into gp's row, from its gate gradients
 * ga (B, T, G or 2 G: G = gates H; two = 1: the hidden side's follow the input side's, else they
 * are the same): work-item (b, q), q over W_ih (G, I), W_hh (G, H), then b_ih and b_hh (G each;
 * none where the offset is -1), each a sum over t in order. */
__kernel void rnn_bwd_w(__global const float *ga, int G, int two, __global const float *in, int off, int I,
                        __global const float *hs, int hidden, int T, __global float *gp, int np, int o_wih, int o_whh,
                        int o_bih, int o_bhh) {
    int nb = (o_bih >= 0) + (o_bhh >= 0), per = G * (I + H + nb), stride = (two ? 2 : 1) * G;
    size_t i = get_global_id(0), b = i / per;
    int q = i % per, kind = q < G * I ? 0 : q < G * (I + H) ? 1 : q < G * (I + H + 1) && o_bih >= 0 ? 2 : 3;
    int rest = kind == 0 ? q : kind == 1 ? q - G * I : q - G * (I + H) - (kind == 3 && o_bih >= 0 ? G : 0);
    int g = kind == 0 ? rest / I : kind == 1 ? rest / H : rest, col = kind == 0 ? rest % I : kind == 1 ? rest % H : 0;
    int hid = kind == 1 || kind == 3; /* the hidden side's gradients */
    __global const float *x = in + off + b * T * I;
    float s = 0;
    for (int t = 0; t < T; t++) {
        size_t r = b * T + t;
        float a = ga[r * stride + (two && hid ? G : 0) + g];
        if (kind == 0) s += a * x[t * I + col];
        else if (kind == 1) s += t ? a * hs[(r - 1) * H + col] : 0;
        else s += a;
    }
    int at = kind == 0 ? o_wih + rest : kind == 1 ? o_whh + rest : kind == 2 ? o_bih + g : o_bhh + g;
    gp[b * np + at] = s;
}

/* ---- LSTM layer: as the GRU's; gate order i, f, g, o; sv (B, T, 5 H) keeps c, i, f, g, o;
 * local memory sm: H floats (forward), 4 H (backward) ------------------------------------------- */

__kernel void lstm_fwd(__global const float *in, int off, int I, int T, int hidden, __global const float *p, int o_wih,
                       int o_whh, int o_bih, int o_bhh, __global float *hs, __global float *sv SHARED) {
    SHARED_MEM
    int b = get_group_id(0), j = get_local_id(0);
    LOCAL_PTR h = sm;
    __global const float *x = in + off + (size_t)b * T * I, *wih = p + o_wih, *whh = p + o_whh;
    float hj = 0, cj = 0;
    h[j] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int t = 0; t < T; t++) {
        float a[4];
#pragma unroll
        for (int k = 0; k < 4; k++) a[k] = p[o_bih + k * H + j] + p[o_bhh + k * H + j];
        for (int i = 0; i < I; i++) {
            float xi = x[t * I + i];
#pragma unroll
            for (int k = 0; k < 4; k++) a[k] += wih[(k * H + j) * I + i] * xi;
        }
        for (int m = 0; m < H; m++) {
            float hm = h[m];
#pragma unroll
            for (int k = 0; k < 4; k++) a[k] += whh[(k * H + j) * H + m] * hm;
        }
        float ig = sigm(a[0]), fg = sigm(a[1]), gg = tanh(a[2]), og = sigm(a[3]);
        cj = fg * cj + ig * gg;
        hj = og * tanh(cj);
        size_t o = ((size_t)b * T + t) * H;
        hs[o + j] = hj;
        sv[5 * o + j] = cj, sv[5 * o + H + j] = ig, sv[5 * o + 2 * H + j] = fg, sv[5 * o + 3 * H + j] = gg;
        sv[5 * o + 4 * H + j] = og;
        barrier(CLK_LOCAL_MEM_FENCE);
        h[j] = hj;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

/* The backward of lstm_fwd's recurrence: as gru_bwd; ga (B, T, 4 H) the gate gradients (the
 * same for both sides). */
__kernel void lstm_bwd(__global const float *p, int I, int T, int hidden, int o_wih, int o_whh, __global const float *hs,
                       __global const float *sv, __global const float *dh, __global float *ga, __global float *dx,
                       int want_dx SHARED) {
    SHARED_MEM
    int b = get_group_id(0), j = get_local_id(0);
    LOCAL_PTR da = sm;
    __global const float *wih = p + o_wih, *whh = p + o_whh;
    float dn = 0, dcn = 0;
    for (int t = T - 1; t >= 0; t--) {
        size_t o = ((size_t)b * T + t) * H;
        float c = sv[5 * o + j], ig = sv[5 * o + H + j], fg = sv[5 * o + 2 * H + j], gg = sv[5 * o + 3 * H + j];
        float og = sv[5 * o + 4 * H + j], cp = t ? sv[5 * (o - H) + j] : 0, tc = tanh(c);
        float d = dh[o + j] + dn, dc = dcn + d * og * (1 - tc * tc);
        float a[4] = {dc * gg * ig * (1 - ig), dc * cp * fg * (1 - fg), dc * ig * (1 - gg * gg), d * tc * og * (1 - og)};
#pragma unroll
        for (int k = 0; k < 4; k++) da[k * H + j] = a[k], ga[4 * o + k * H + j] = a[k];
        dcn = dc * fg;
        barrier(CLK_LOCAL_MEM_FENCE);
        float s = 0;
        for (int q = 0; q < 4 * H; q++) s += whh[q * H + j] * da[q];
        dn = s;
        if (want_dx) input_grad(wih, da, 4 * H, I, j, H, dx + ((size_t)b * T + t) * I);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

/* ---- dense layers over rows: out (R, M) = act([in1 in2] W^T + b) ---------------------------- */

/* in1 (R, K1) and in2 (R, K2) side by side (K2 0: none), W (M, K1 + K2) at p + o_w, b at p + o_b
 * (-1: none); act 0 none, 1 ReLU, 2 tanh. */
__kernel void dense_fwd(__global const float *in1, int K1, __global const float *in2, int K2, __global const float *p,
                        int o_w, int o_b, int M, int act, __global float *out) {
    size_t i = get_global_id(0), r = i / M;
    int m = i % M, K = K1 + K2;
    float s = o_b >= 0 ? p[o_b + m] : 0;
    for (int k = 0; k < K1; k++) s += p[o_w + m * K + k] * in1[r * K1 + k];
    for (int k = 0; k < K2; k++) s += p[o_w + m * K + K1 + k] * in2[r * K2 + k];
    out[i] = act == 1 ? (s > 0 ? s : 0) : act == 2 ? tanh(s) : s;
}

/* d *= act'(y), y the activation's output (ReLU: y > 0; tanh: 1 - y^2). */
__kernel void act_bwd(__global float *d, __global const float *y, int act) {
    size_t i = get_global_id(0);
    float v = y[i];
    d[i] *= act == 1 ? (v > 0 ? 1.0f : 0.0f) : 1 - v * v;
}

/* din (R, K) = dy (R, M) W[:, col0 .. col0 + K), W (M, Kw). */
__kernel void dense_bwd_in(__global const float *dy, int M, __global const float *p, int o_w, int Kw, int col0, int K,
                           __global float *din) {
    size_t i = get_global_id(0), r = i / K;
    int k = i % K;
    float s = 0;
    for (int m = 0; m < M; m++) s += p[o_w + m * Kw + col0 + k] * dy[r * M + m];
    din[i] = s;
}

/* The parameter gradients of dense_fwd (dy: past the activation) per sequence of T rows into
 * gp's row of the sequence: work-item (b, q), q over the M (K1 + K2) weights then the M biases
 * (none when o_b is -1), each a sum over t in order. */
__kernel void dense_bwd_w(__global const float *dy, int M, __global const float *in1, int K1, __global const float *in2,
                          int K2, int T, __global float *gp, int np, int o_w, int o_b) {
    int K = K1 + K2, nb = o_b >= 0 ? M : 0;
    size_t i = get_global_id(0), per = (size_t)M * K + nb, b = i / per;
    int q = i % per, m = q < M * K ? q / K : q - M * K, k = q < M * K ? q % K : -1;
    float s = 0;
    for (int t = 0; t < T; t++) {
        size_t r = b * T + t;
        float v = k < 0 ? 1.0f : k < K1 ? in1[r * K1 + k] : in2[r * K2 + k - K1];
        s += dy[r * M + m] * v;
    }
    gp[b * np + (k < 0 ? o_b + m : o_w + q)] = s;
}

/* ---- TRes-GRU's skip: y += Hardswish(W2 Hardswish(W0 *_16 x)), W0 (3, 2, 3) dilation 16 ------ */

FN float tap(__global const float *xb, int T, int t, int k, int ch) {
    int u = t + (k - 1) * 16;
    return u < 0 || u >= T ? 0 : xb[2 * u + ch];
}

/* One row: c1 (R, 3) and c2 (R, 2) the pre-activations, kept for the backward. */
__kernel void tcn_fwd(__global const float *x, int off, int T, __global const float *p, int o_w0, int o_w2,
                      __global float *c1, __global float *c2, __global float *y) {
    size_t r = get_global_id(0), b = r / T;
    int t = r % T;
    __global const float *xb = x + off + b * T * 2;
    float a1[3];
    for (int o = 0; o < 3; o++) {
        float v = 0;
        for (int ch = 0; ch < 2; ch++)
            for (int k = 0; k < 3; k++) v += p[o_w0 + (o * 2 + ch) * 3 + k] * tap(xb, T, t, k, ch);
        c1[3 * r + o] = v, a1[o] = hswish(v);
    }
    for (int o = 0; o < 2; o++) {
        float v = p[o_w2 + 3 * o] * a1[0] + p[o_w2 + 3 * o + 1] * a1[1] + p[o_w2 + 3 * o + 2] * a1[2];
        c2[2 * r + o] = v;
        y[2 * r + o] += hswish(v);
    }
}

/* d2 (R, 2) = dy hswish'(c2); d1 (R, 3) = (W2^T d2) hswish'(c1). */
__kernel void tcn_bwd_d(__global const float *dy, __global const float *c1, __global const float *c2,
                        __global const float *p, int o_w2, __global float *d1, __global float *d2) {
    size_t r = get_global_id(0);
    float e[2];
    for (int o = 0; o < 2; o++) e[o] = dy[2 * r + o] * hswish_d(c2[2 * r + o]), d2[2 * r + o] = e[o];
    for (int k = 0; k < 3; k++) d1[3 * r + k] = (p[o_w2 + k] * e[0] + p[o_w2 + 3 + k] * e[1]) * hswish_d(c1[3 * r + k]);
}

/* The skip's weight gradients per sequence: work-item (b, q), q over W0's 18 then W2's 6. */
__kernel void tcn_bwd_w(__global const float *x, int off, int T, __global const float *c1, __global const float *d1,
                        __global const float *d2, __global float *gp, int np, int o_w0, int o_w2) {
    size_t i = get_global_id(0), b = i / 24;
    int q = i % 24;
    __global const float *xb = x + off + b * T * 2;
    float s = 0;
    for (int t = 0; t < T; t++) {
        size_t r = b * T + t;
        if (q < 18) s += d1[3 * r + q / 6] * tap(xb, T, t, q % 3, q / 3 % 2);
        else s += d2[2 * r + (q - 18) / 3] * hswish(c1[3 * r + (q - 18) % 3]);
    }
    gp[b * np + (q < 18 ? o_w0 + q : o_w2 + q - 18)] = s;
}

/* dx (R, 2) += the skip's input gradient: every output t whose taps reach row u. */
__kernel void tcn_bwd_x(__global const float *d1, __global const float *p, int o_w0, int T, __global float *dx) {
    size_t r = get_global_id(0), b = r / T;
    int u = r % T;
    for (int ch = 0; ch < 2; ch++) {
        float s = 0;
        for (int k = 0; k < 3; k++) {
            int t = u - (k - 1) * 16;
            if (t < 0 || t >= T) continue;
            for (int o = 0; o < 3; o++) s += p[o_w0 + (o * 2 + ch) * 3 + k] * d1[3 * (b * T + t) + o];
        }
        dx[2 * r + ch] += s;
    }
}

/* ---- RVTDCNN's feature image: (I, Q, A, A^2, A^3) of samples t-3..t (rows wrap in the
 * sequence), a 3x3 convolution 1 -> 3 with a zero row above and below, tanh: a (R, 36) -------- */

/* One row of the image: (I, Q, A, A^2, A^3) of sample (i, q) into o. */
FN void image_row(float i, float q, float *o) {
    float a = amp(i, q);
    o[0] = i, o[1] = q, o[2] = a, o[3] = a * a, o[4] = a * a * a;
}

FN void image(__global const float *xb, int T, int t, float *img) {
    for (int r = 0; r < 4; r++) {
        int u = ((t - 3 + r) % T + T) % T;
        image_row(xb[2 * u], xb[2 * u + 1], img + 5 * r);
    }
}

/* Output (ch, row, j) of the convolution of image img (20), past the tanh; a caller's loops over
 * them unroll, so that img stays in registers. */
FN float rvt_conv(__global const float *p, int o_wc, int o_bc, const float *img, int ch, int row, int j) {
    float v = p[o_bc + ch];
    for (int kr = 0; kr < 3; kr++) {
        int rr = row + kr - 1;
        if (rr < 0 || rr >= 4) continue;
        for (int kc = 0; kc < 3; kc++) v += p[o_wc + ch * 9 + kr * 3 + kc] * img[rr * 5 + j + kc];
    }
    return tanh(v);
}

__kernel void rvt_fwd(__global const float *x, int off, int T, __global const float *p, int o_wc, int o_bc,
                      __global float *a) {
    size_t r = get_global_id(0), b = r / T;
    float img[20];
    image(x + off + b * T * 2, T, r % T, img);
    for (int ch = 0; ch < 3; ch++)
        for (int row = 0; row < 4; row++)
            for (int j = 0; j < 3; j++) a[36 * r + ch * 12 + row * 3 + j] = rvt_conv(p, o_wc, o_bc, img, ch, row, j);
}

/* Column c of row r of the feature image of step t (image(), one value). */
FN float image_at(__global const float *xb, int T, int t, int r, int c) {
    int u = ((t - 3 + r) % T + T) % T;
    float i = xb[2 * u], q = xb[2 * u + 1], a = amp(i, q);
    return c == 0 ? i : c == 1 ? q : c == 2 ? a : c == 3 ? a * a : a * a * a;
}

/* The convolution's weight (27) and bias (3) gradients per sequence, d (R, 36) past the tanh. */
__kernel void rvt_bwd_w(__global const float *x, int off, int T, __global const float *d, __global float *gp, int np,
                        int o_wc, int o_bc) {
    size_t i = get_global_id(0), b = i / 30;
    int q = i % 30, ch = q < 27 ? q / 9 : q - 27, kr = q % 9 / 3, kc = q % 3;
    __global const float *xb = x + off + b * T * 2;
    float s = 0;
    for (int t = 0; t < T; t++) {
        size_t r = b * T + t;
        for (int row = 0; row < 4; row++)
            for (int j = 0; j < 3; j++) {
                float g = d[36 * r + ch * 12 + row * 3 + j];
                int rr = row + kr - 1;
                if (q >= 27) s += g;
                else if (rr >= 0 && rr < 4) s += g * image_at(xb, T, t, rr, j + kc);
            }
    }
    gp[b * np + (q < 27 ? o_wc + q : o_bc + ch)] = s;
}

/* The image's gradient (R, 20) from d (R, 36) past the tanh. */
__kernel void rvt_bwd_img(__global const float *d, __global const float *p, int o_wc, __global float *dimg) {
    size_t r = get_global_id(0);
    float g[20];
    for (int k = 0; k < 20; k++) g[k] = 0;
    for (int ch = 0; ch < 3; ch++)
        for (int row = 0; row < 4; row++)
            for (int j = 0; j < 3; j++) {
                float e = d[36 * r + ch * 12 + row * 3 + j];
                for (int kr = 0; kr < 3; kr++) {
                    int rr = row + kr - 1;
                    if (rr < 0 || rr >= 4) continue;
                    for (int kc = 0; kc < 3; kc++) g[rr * 5 + j + kc] += p[o_wc + ch * 9 + kr * 3 + kc] * e;
                }
            }
    for (int k = 0; k < 20; k++) dimg[20 * r + k] = g[k];
}

/* dx (R, 2): every image holding sample u (row r of the image of t = u + 3 - r, circularly). */
__kernel void rvt_bwd_x(__global const float *x, int off, int T, __global const float *dimg, __global float *dx) {
    size_t u = get_global_id(0), b = u / T;
    int s = u % T;
    float i = x[off + 2 * u], q = x[off + 2 * u + 1], a = amp(i, q), di = 0, dq = 0;
    for (int row = 0; row < 4; row++) {
        __global const float *g = dimg + 20 * (b * T + (s + 3 - row) % T) + 5 * row;
        di += g[0], dq += g[1];
        if (a > 0) {
            float dA = g[2] + 2 * a * g[3] + 3 * a * a * g[4];
            di += dA * i / a, dq += dA * q / a;
        }
    }
    dx[2 * u] = di, dx[2 * u + 1] = dq;
}

/* ---- loss and update ------------------------------------------------------------------------- */

/* The MSE's pieces for sequence b (one work-item each, per = T * 2 values): lp[b] its share of
 * the mean, the squared differences summed in order in lsum, then over n (as the cpu, which sums
 * in double), dy = 2 (y - t) / n, n the batch's count of values. */
__kernel void mse(__global const float *y, __global const float *t, int per, float n, __global float *dy,
                  __global lsum *lp) {
    size_t b = get_global_id(0);
    lsum s = 0;
    for (int e = 0; e < per; e++) {
        size_t i = b * per + e;
        float d = y[i] - t[i];
        s += (lsum)d * d;
        dy[i] = 2.0f * d / n;
    }
    lp[b] = s / n;
}

#define WG 256
/* One training step's end, one work-group of WG, k = *cur the step's index in the call: the loss
 * (lp summed in batch order) into losses[k]; where it is not finite, or an earlier step of the
 * call diverged (*stop), nothing more (stop set). Otherwise the gradient, gp's B rows summed in
 * order into g; its norm by WG strided sums and a fixed tree; clipped as
 * torch.nn.utils.clip_grad_norm_ (max_norm 0: off); AdamW as torch.optim.AdamW, the step's
 * factors (decay 1 - lr wd, step size lr / (1 - b1^t), sqrt(1 - b2^t)) at fac[3 k], computed by
 * the host as the cpu provider does. Last, *cur = k + 1: every step's launches are the same, so a
 * chunk of steps can be recorded once and replayed (a CUDA graph). */
__kernel WG_SIZE(WG) void adamw(
    __global float *p, __global float *g, __global const float *gp, int B, int np, __global float *m,
    __global float *v, __global const lsum *lp, __global float *losses, __global int *cur, __global int *stop,
    __global const float *fac, float max_norm, float b1, float b2, float c1, float c2, float eps) {
    int l = get_local_id(0), k = *cur;
    float decay = fac[3 * k], step = fac[3 * k + 1], bc2s = fac[3 * k + 2];
    __local float part[WG];
    __local int bad;
    if (l == 0) {
        lsum sum = 0;
        for (int b = 0; b < B; b++) sum += lp[b];
        float loss = (float)sum;
        bad = *stop;
        if (!bad) losses[k] = loss;
        if (!bad && !isfinite(loss)) bad = *stop = 1;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    int skip = bad;
    float ss = 0;
    for (int i = l; i < np && !skip; i += WG) {
        float s = 0;
        for (int b = 0; b < B; b++) s += gp[(size_t)b * np + i];
        g[i] = s;
        ss += s * s;
    }
    part[l] = ss;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int w = WG / 2; w > 0; w /= 2) {
        if (l < w) part[l] += part[l + w];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float norm = sqrt(part[0]), coef = max_norm / (norm + 1e-6f), c = max_norm > 0 && coef < 1 ? coef : 1;
    for (int i = l; i < np && !skip; i += WG) {
        float gi = g[i] * c;
        p[i] *= decay;
        m[i] = m[i] * b1 + gi * c1;
        v[i] = v[i] * b2 + gi * gi * c2;
        p[i] -= step * (m[i] / (sqrt(v[i]) / bc2s + eps));
    }
    barrier(CLK_LOCAL_MEM_FENCE); /* every work-item has read *cur */
    if (l == 0) *cur = k + 1;
}

/* ---- Fused steps (gru, lstm: one layer, input I/Q, the linear head; H up to 32): one
 * work-group of 32 work-items a sequence (on a GPU one warp), work-item j the hidden unit j (units
 * past H compute unit 0 and store nothing); built with the hidden size a compile-time constant
 * (OpenCL: H_CONST; CUDA: templates, instantiated for 1..32 below), so that the recurrence runs
 * from registers: unit j's rows of W_hh in the forward, its columns in the backward. Everything
 * stays in local memory (sm, sized by host.c's host_fused_floats): the frame, the targets, the hidden
 * states, the gates; one barrier a time step. The head, the loss and the weight gradients are
 * data-parallel passes over the group. Every sum runs in the order of the layered kernels
 * (gather, gru_fwd or lstm_fwd, dense_fwd, mse, dense_bwd_in, gru_bwd or lstm_bwd, rnn_bwd_w,
 * dense_bwd_w), so both paths give the same numbers. A training step (gru_train, lstm_train)
 * leaves lp[b], the sequence's share of the loss, and gp's row b, the gradient of every parameter,
 * for adamw; an evaluation (gru_eval, lstm_eval) the predictions of every segment in one launch.
 * ---------------------------------------------------------------------------------------------- */

#define FUSED_WG 32
#ifdef __CUDACC__
#define FUSED(name) template <int hidden> __global__ void __launch_bounds__(FUSED_WG, 1) name
#define FUSED_FN template <int hidden> static __device__ /* a helper with register arrays of H */
#define SIZED(f) f<hidden>
#define FUSED_SYNC() __syncwarp()
#else
#define FUSED(name) __kernel WG_SIZE(FUSED_WG) void name
#define FUSED_FN FN
#define SIZED(f) f
#define FUSED_SYNC() barrier(CLK_LOCAL_MEM_FENCE)
#endif

/* The pieces the hidden size Hn is an argument of (no register array depends on it), by
 * work-item l. The frame: xs, ts (T, 2) = the step's frame b of x and y (ts only where y is not
 * NULL), found as gather finds it, or segment b at x + off when frames is NULL; h0 (Hn) = 0. Ends
 * past a barrier. */
FN void fused_frame(__global const float *x, __global const float *y, __global const uint *frames,
                    __global const int *cur, int batch, int off, int b, int T, int S, LOCAL_PTR xs, LOCAL_PTR ts,
                    LOCAL_PTR h0, int Hn, int l) {
    size_t src = frames ? (size_t)frames[(size_t)*cur * batch + b] * (size_t)S * 2 : (size_t)off + (size_t)b * T * 2;
    for (int e = l; e < 2 * T; e += FUSED_WG) {
        xs[e] = x[src + e];
        if (y) ts[e] = y[src + e];
    }
    for (int e = l; e < Hn; e += FUSED_WG) h0[e] = 0;
    FUSED_SYNC();
}

/* Output e = 2 t + c of the linear head over h(t) at hs + (t + 1) Hn, as dense_fwd. */
FN float head_at(__global const float *p, int o_wo, int o_bo, LOCAL_PTR hs, int e, int Hn) {
    int t = e / 2, c = e % 2;
    float s = o_bo >= 0 ? p[o_bo + c] : 0;
    for (int k = 0; k < Hn; k++) s += p[o_wo + c * Hn + k] * hs[(t + 1) * Hn + k];
    return s;
}

/* Output e's error d = y - ts[e] into ts[e], its loss gradient 2 d / n into dy[e] (as mse). */
FN void fused_error(float y, LOCAL_PTR ts, LOCAL_PTR dy, int e, float n) {
    float d = y - ts[e];
    ts[e] = d;
    dy[e] = 2.0f * d / n;
}

/* lp[b] = the sequence's share of the loss, the errors ts squared, summed in order by work-item 0,
 * over n (as mse), after a barrier. */
FN void fused_share(LOCAL_PTR ts, int T, float n, __global lsum *lp, int b, int l) {
    FUSED_SYNC();
    if (l == 0) {
        lsum s = 0;
        for (int e = 0; e < 2 * T; e++) s += (lsum)ts[e] * ts[e];
        lp[b] = s / n;
    }
}

/* The head and the MSE's pieces (as mse): ts becomes y - target, dy the loss gradient at the
 * output, lp[b] the sequence's share of the loss (work-item 0, in order). Ends past a barrier. */
FN void fused_head(__global const float *p, int o_wo, int o_bo, LOCAL_PTR hs, LOCAL_PTR ts, LOCAL_PTR dy, int T, int Hn,
                   float n, __global lsum *lp, int b, int l) {
    for (int e = l; e < 2 * T; e += FUSED_WG) fused_error(head_at(p, o_wo, o_bo, hs, e, Hn), ts, dy, e, n);
    fused_share(ts, T, n, lp, b, l);
}

/* The head's parameter gradients into row (as dense_bwd_w): W_o (2, Hn), then b_o. */
FN void fused_head_grads(LOCAL_PTR dy, LOCAL_PTR hs, int T, int Hn, int o_wo, int o_bo, __global float *row, int l) {
    for (int u = l; u < 2 * Hn + (o_bo >= 0 ? 2 : 0); u += FUSED_WG) {
        int c = u < 2 * Hn ? u / Hn : u - 2 * Hn, k = u < 2 * Hn ? u % Hn : -1;
        float s = 0;
        for (int t = 0; t < T; t++) s += dy[2 * t + c] * (k < 0 ? 1.0f : hs[(t + 1) * Hn + k]);
        row[k < 0 ? o_bo + c : o_wo + u] = s;
    }
}

/* A GRU layer's forward over xs (T, I), I 2 or 6: h(t) into hs row t + 1 (row 0 is h(-1));
 * r, z, n and W_hn h + b_hn into gs (T, 4 H); as gru_fwd, with unit j's rows of W_ih, W_hh and its
 * biases in registers. Ends past a barrier. */
FUSED_FN void gru_forward(__global const float *p, int I, int o_wih, int o_whh, int o_bih, int o_bhh, LOCAL_PTR xs,
                          LOCAL_PTR hs, LOCAL_PTR gs, int T, int l) {
    int j = l < H ? l : 0;
    float wr[H], wz[H], wn[H], wi[18], br = 0, bz = 0, bn = 0, cr = 0, cz = 0, cn = 0; /* wi: gate g's at 6 g */
#pragma unroll
    for (int k = 0; k < H; k++)
        wr[k] = p[o_whh + j * H + k], wz[k] = p[o_whh + (H + j) * H + k], wn[k] = p[o_whh + (2 * H + j) * H + k];
#pragma unroll
    for (int i = 0; i < 6; i++)
#pragma unroll
        for (int g = 0; g < 3; g++) wi[6 * g + i] = i < I ? p[o_wih + (g * H + j) * I + i] : 0;
    if (o_bih >= 0) br = p[o_bih + j], bz = p[o_bih + H + j], bn = p[o_bih + 2 * H + j];
    if (o_bhh >= 0) cr = p[o_bhh + j], cz = p[o_bhh + H + j], cn = p[o_bhh + 2 * H + j];
    float hj = hs[j]; /* h(-1): zeros, or a tile's carry (the fused evaluations) */
    for (int t = 0; t < T; t++) {
        float ar = br, az = bz, an = bn, gr = cr, gz = cz, gn = cn;
#pragma unroll
        for (int i = 0; i < 6; i++)
            if (i < I) {
                float xi = xs[I * t + i];
                ar += wi[i] * xi, az += wi[6 + i] * xi, an += wi[12 + i] * xi;
            }
        LOCAL_PTR hp = hs + t * H;
#pragma unroll
        for (int k = 0; k < H; k++) {
            float hk = hp[k];
            gr += wr[k] * hk, gz += wz[k] * hk, gn += wn[k] * hk;
        }
        float r = sigm(ar + gr), z = sigm(az + gz), nn = tanh(an + r * gn);
        hj = (1 - z) * nn + z * hj;
        if (l < H) {
            LOCAL_PTR g = gs + 4 * H * t;
            g[j] = r, g[H + j] = z, g[2 * H + j] = nn, g[3 * H + j] = gn;
            hp[H + j] = hj;
        }
        FUSED_SYNC(); /* h(t) whole before step t + 1 reads it; nobody writes a row twice */
    }
}

/* An LSTM layer's forward, as gru_forward: c, i, f, g, o into gs (T, 5 H), as lstm_fwd, with
 * unit j's rows of W_hh, W_ih and the summed biases in registers; c(-1) from c0 (H), or zeros
 * where c0 is NULL. Ends past a barrier. */
FUSED_FN void lstm_forward(__global const float *p, int I, int o_wih, int o_whh, int o_bih, int o_bhh, LOCAL_PTR xs,
                           LOCAL_PTR hs, LOCAL_PTR gs, LOCAL_PTR c0, int T, int l) { /* I: 2 */
    int j = l < H ? l : 0;
    float w[4 * H], wi[8], bs[4]; /* gate k's row of W_hh at w[k H ..] */
#pragma unroll
    for (int k = 0; k < 4; k++) {
        bs[k] = p[o_bih + k * H + j] + p[o_bhh + k * H + j];
        wi[2 * k] = p[o_wih + (k * H + j) * 2], wi[2 * k + 1] = p[o_wih + (k * H + j) * 2 + 1];
#pragma unroll
        for (int m = 0; m < H; m++) w[k * H + m] = p[o_whh + (k * H + j) * H + m];
    }
    float hj = 0, cj = c0 ? c0[j] : 0; /* c(-1): zero, or a tile's carry */
    for (int t = 0; t < T; t++) {
        float a[4];
#pragma unroll
        for (int k = 0; k < 4; k++) a[k] = bs[k];
#pragma unroll
        for (int i = 0; i < 2; i++) {
            float xi = xs[2 * t + i];
#pragma unroll
            for (int k = 0; k < 4; k++) a[k] += wi[2 * k + i] * xi;
        }
        LOCAL_PTR hp = hs + t * H;
#pragma unroll
        for (int m = 0; m < H; m++) {
            float hm = hp[m];
#pragma unroll
            for (int k = 0; k < 4; k++) a[k] += w[k * H + m] * hm;
        }
        float ig = sigm(a[0]), fg = sigm(a[1]), gg = tanh(a[2]), og = sigm(a[3]);
        cj = fg * cj + ig * gg;
        hj = og * tanh(cj);
        if (l < H) {
            LOCAL_PTR g = gs + 5 * H * t;
            g[j] = cj, g[H + j] = ig, g[2 * H + j] = fg, g[3 * H + j] = gg, g[4 * H + j] = og;
            hp[H + j] = hj;
        }
        FUSED_SYNC(); /* h(t) whole before step t + 1 reads it */
    }
}

/* A GRU layer's backward after gru_forward and fused_head, dy the loss gradient at the output:
 * through time with unit j's columns of W_hh in registers (as dense_bwd_in and gru_bwd; the gate
 * gradients replace the gates in gs, da (2, 3 H) exchanges the hidden side's), then the weight
 * gradients into row (as rnn_bwd_w). */
FUSED_FN void gru_backward(__global const float *p, int I, int o_wih, int o_whh, int o_bih, int o_bhh, int o_wo,
                           LOCAL_PTR xs, LOCAL_PTR hs, LOCAL_PTR gs, LOCAL_PTR da, LOCAL_PTR dy, LOCAL_PTR dhh, int T,
                           __global float *row, int l) {
    int j = l < H ? l : 0;
    /* backward through time: unit j's columns of W_hh in registers */
    float wr[H], wz[H], wn[H];
#pragma unroll
    for (int k = 0; k < H; k++)
        wr[k] = p[o_whh + k * H + j], wz[k] = p[o_whh + (H + k) * H + j], wn[k] = p[o_whh + (2 * H + k) * H + j];
    float wo0 = p[o_wo + j], wo1 = p[o_wo + H + j], dn = 0;
    for (int t = T - 1; t >= 0; t--) {
        LOCAL_PTR g = gs + 4 * H * t;
        LOCAL_PTR dh = da + 3 * H * (t & 1);
        float r = 0, z = 0, nn = 0, gn = 0, hp = hs[t * H + j]; /* units past H read no slot unit 0 writes */
        if (l < H) r = g[j], z = g[H + j], nn = g[2 * H + j], gn = g[3 * H + j];
        float s = 0;
        if (dhh) s = dhh[t * H + j];
        else s += wo0 * dy[2 * t], s += wo1 * dy[2 * t + 1];
        float dd = s + dn;
        float dan = dd * (1 - z) * (1 - nn * nn), daz = dd * (hp - nn) * z * (1 - z), dar = dan * gn * r * (1 - r);
        if (l < H) {
            dh[j] = dar, dh[H + j] = daz, dh[2 * H + j] = dan * r;
            g[j] = dar, g[H + j] = daz, g[2 * H + j] = dan, g[3 * H + j] = dan * r; /* only unit j reads these */
        }
        FUSED_SYNC(); /* the step's gradients whole; the buffer the next step writes was read two steps ago */
        s = 0;
#pragma unroll
        for (int k = 0; k < H; k++) s += wr[k] * dh[k];
#pragma unroll
        for (int k = 0; k < H; k++) s += wz[k] * dh[H + k];
#pragma unroll
        for (int k = 0; k < H; k++) s += wn[k] * dh[2 * H + k];
        dn = s + dd * z;
    }
    FUSED_SYNC();

    /* the weight gradients, sums over t in order, one parameter a work-item: W_ih, W_hh, b_ih,
     * b_hh (absent: -1), then the head's; the input side's gate gradients are gs's first 3 H of a
     * step, the hidden side's r and z the same, its n the fourth H */
    int G = 3 * H, nb = (o_bih >= 0) + (o_bhh >= 0), nw = G * (I + H + nb);
    for (int q = l; q < nw; q += FUSED_WG) {
        float s = 0;
        int at;
        if (q < I * G) { /* W_ih (G, I) */
            int gq = q / I, i = q % I;
            for (int t = 0; t < T; t++) s += gs[4 * H * t + gq] * xs[I * t + i];
            at = o_wih + q;
        } else if (q < G * (I + H)) { /* W_hh (G, H) */
            int u = q - I * G, gq = u / H, k = u % H, side = gq < 2 * H ? gq : gq + H;
            for (int t = 0; t < T; t++) s += t ? gs[4 * H * t + side] * hs[t * H + k] : 0;
            at = o_whh + u;
        } else { /* the biases */
            int u = q - G * (I + H), hid = u >= G || o_bih < 0, gq = u >= G ? u - G : u;
            int side = hid && gq >= 2 * H ? gq + H : gq;
            for (int t = 0; t < T; t++) s += gs[4 * H * t + side];
            at = (hid ? o_bhh : o_bih) + gq;
        }
        row[at] = s;
    }
}

/* An LSTM layer's backward, as gru_backward (lstm_bwd; the gate gradients the same for both sides,
 * da (2, 4 H)). */
FUSED_FN void lstm_backward(__global const float *p, int I, int o_wih, int o_whh, int o_bih, int o_bhh, int o_wo,
                            LOCAL_PTR xs, LOCAL_PTR hs, LOCAL_PTR gs, LOCAL_PTR da, LOCAL_PTR dy, LOCAL_PTR dhh,
                            int T, __global float *row, int l) { /* I: 2; dhh: NULL (the linear head) */
    int j = l < H ? l : 0;
    /* backward through time: unit j's columns of W_hh in registers */
    float w[4 * H];
#pragma unroll
    for (int q = 0; q < 4 * H; q++) w[q] = p[o_whh + q * H + j];
    float wo0 = p[o_wo + j], wo1 = p[o_wo + H + j], dn = 0, dcn = 0;
    for (int t = T - 1; t >= 0; t--) {
        LOCAL_PTR g = gs + 5 * H * t;
        LOCAL_PTR dh = da + 4 * H * (t & 1);
        float c = g[j], ig = 0, fg = 0, gg = 0, og = 0; /* units past H read no slot unit 0 writes */
        if (l < H) ig = g[H + j], fg = g[2 * H + j], gg = g[3 * H + j], og = g[4 * H + j];
        float cp = t ? g[j - 5 * H] : 0, tc = tanh(c);
        float s = 0;
        s += wo0 * dy[2 * t];
        s += wo1 * dy[2 * t + 1];
        float d = s + dn, dc = dcn + d * og * (1 - tc * tc);
        float a[4] = {dc * gg * ig * (1 - ig), dc * cp * fg * (1 - fg), dc * ig * (1 - gg * gg), d * tc * og * (1 - og)};
        if (l < H) {
#pragma unroll
            for (int k = 0; k < 4; k++) dh[k * H + j] = a[k], g[(k + 1) * H + j] = a[k]; /* only unit j reads these */
        }
        dcn = dc * fg;
        FUSED_SYNC(); /* the step's gradients whole; the buffer the next step writes was read two steps ago */
        s = 0;
#pragma unroll
        for (int q = 0; q < 4 * H; q++) s += w[q] * dh[q];
        dn = s;
    }
    FUSED_SYNC();

    /* the weight gradients, sums over t in order, one parameter a work-item: W_ih (4 H, 2), W_hh
     * (4 H, H), b_ih, b_hh (the same sums), then the head's */
    int G = 4 * H, nw = G * (2 + H + 2);
    for (int q = l; q < nw; q += FUSED_WG) {
        float s = 0;
        int at;
        if (q < 2 * G) { /* W_ih */
            int gq = q / 2, i = q % 2;
            for (int t = 0; t < T; t++) s += gs[5 * H * t + H + gq] * xs[2 * t + i];
            at = o_wih + q;
        } else if (q < G * (2 + H)) { /* W_hh */
            int u = q - 2 * G, gq = u / H, k = u % H;
            for (int t = 0; t < T; t++) s += t ? gs[5 * H * t + H + gq] * hs[t * H + k] : 0;
            at = o_whh + u;
        } else { /* b_ih, then b_hh */
            int u = q - G * (2 + H), gq = u >= G ? u - G : u;
            for (int t = 0; t < T; t++) s += gs[5 * H * t + H + gq];
            at = (u >= G ? o_bhh : o_bih) + gq;
        }
        row[at] = s;
    }
}

/* The features (kind 1 DGRU's, 2 TRes-GRU's) of the frame xs (T, 2) into ft (T, 6), as features;
 * xn: the sample after the last (xs itself for a whole sequence, which wraps as features does).
 * Ends past a barrier. */
FN void fused_features(LOCAL_PTR xs, LOCAL_PTR xn, LOCAL_PTR ft, int T, int kind, int l) {
    for (int t = l; t < T; t += FUSED_WG) {
        float o[6];
        LOCAL_PTR u = t + 1 < T ? xs + 2 * (t + 1) : xn;
        feature6(xs[2 * t], xs[2 * t + 1], u[0], u[1], kind, o);
        for (int k = 0; k < 6; k++) ft[6 * t + k] = o[k];
    }
    FUSED_SYNC();
}

/* DGRU's hidden head us (T, Hn) = ReLU(W_hid h(t) + b_hid), as dense_fwd. Ends past a barrier. */
FN void dgru_hidden(__global const float *p, int o_wh, int o_bh, LOCAL_PTR hs, LOCAL_PTR us, int T, int Hn, int l) {
    for (int e = l; e < T * Hn; e += FUSED_WG) {
        int t = e / Hn, m = e % Hn;
        float s = o_bh >= 0 ? p[o_bh + m] : 0;
        for (int k = 0; k < Hn; k++) s += p[o_wh + m * Hn + k] * hs[(t + 1) * Hn + k];
        us[e] = s > 0 ? s : 0;
    }
    FUSED_SYNC();
}

/* DGRU's output e = 2 t + c: W_out [u(t); f(t)] + b_out, as dense_fwd. */
FN float dgru_out(__global const float *p, int o_wo, int o_bo, LOCAL_PTR us, LOCAL_PTR ft, int e, int Hn) {
    int t = e / 2, c = e % 2, K = Hn + 6;
    float s = o_bo >= 0 ? p[o_bo + c] : 0;
    for (int k = 0; k < Hn; k++) s += p[o_wo + c * K + k] * us[t * Hn + k];
    for (int k = 0; k < 6; k++) s += p[o_wo + c * K + Hn + k] * ft[6 * t + k];
    return s;
}

/* The training steps (gru_train, lstm_train), one work-group a sequence of the batch. Local
 * memory: xs, ts, dy (T, 2) each: the frame, its target (then y - target), the loss gradient at
 * the output; hs (T + 1, H): h(t - 1) at row t; gs (T, G): the gates (G = 4 H for the GRU, 5 H
 * for the LSTM), where the backward puts its gate gradients; da (2, 3 H or 4 H): gate gradients,
 * two steps in turn. 6 T + H (T + 1) + 4 H T + 6 H floats (GRU), 6 T + H (T + 1) + 5 H T + 8 H
 * (LSTM): host.c's host_fused_floats. Two kernels, not one with a flag: PoCL miscompiles barriers
 * under a branch. */
#define TRAIN_ARGS                                                                                                      \
    __global const float *x, __global const float *y, __global const uint *frames, __global const int *cur,           \
        int batch, int T, int S, __global const float *p, int o_wih, int o_whh, int o_bih, int o_bhh, int o_wo,        \
        int o_bo, int o_wh, int o_bh, float n, __global float *gp, int np, __global lsum *lp SHARED
/* The kernel NAME of a cell: its FORWARD (C0: the LSTM's zero cell state argument) and BACKWARD,
 * G gate values a unit and step in gs (o_wh, o_bh: DGRU's fc_hid, unused here). */
#define TRAIN_KERNEL(NAME, FORWARD, C0, BACKWARD, G)                                                                    \
    FUSED(NAME)(TRAIN_ARGS) {                                                                                           \
        SHARED_MEM                                                                                                      \
        int b = get_group_id(0), l = get_local_id(0);                                                                   \
        LOCAL_PTR ts = sm + 2 * T;                                                                                      \
        LOCAL_PTR dy = ts + 2 * T;                                                                                      \
        LOCAL_PTR hs = dy + 2 * T;                                                                                      \
        LOCAL_PTR gs = hs + H * (T + 1);                                                                                \
        __global float *row = gp + (size_t)b * np;                                                                      \
        fused_frame(x, y, frames, cur, batch, 0, b, T, S, sm, ts, hs, H, l);                                            \
        SIZED(FORWARD)(p, 2, o_wih, o_whh, o_bih, o_bhh, sm, hs, gs C0, T, l);                                          \
        fused_head(p, o_wo, o_bo, hs, ts, dy, T, H, n, lp, b, l);                                                       \
        SIZED(BACKWARD)(p, 2, o_wih, o_whh, o_bih, o_bhh, o_wo, sm, hs, gs, gs + (G) * H * T, dy, NULL, T, row, l);    \
        fused_head_grads(dy, hs, T, H, o_wo, o_bo, row, l);                                                             \
    }
#define NO_C0
#define ZERO_C0 , (LOCAL_PTR)0
TRAIN_KERNEL(gru_train, gru_forward, NO_C0, gru_backward, 4)
TRAIN_KERNEL(lstm_train, lstm_forward, ZERO_C0, lstm_backward, 5)

/* The predictions (gru_eval, lstm_eval, dgru_eval, tres_eval, rvt_eval), every segment of T
 * samples of x at float offset off in one launch, one work-group a segment: out (segments, T, 2).
 * A segment runs in tiles of up to `tile` samples (the whole segment where its buffers fit the
 * local memory; host.c's host_fused_floats at the tile's length), the recurrence's state carried
 * from one tile to the next in hs row 0 (the LSTM's cell state in c0), every output computed as
 * for a whole segment. eval_tile loads tile samples t0 .. t0 + n - 1 of the segment xg into xs,
 * with pre samples before and post after (wrap: taken around the segment's ends, as RVTDCNN's
 * rows; else zeros past them, never read). The caller passes a barrier before reading xs. */
#define EVAL_ARGS                                                                                                       \
    __global const float *x, int off, int T, __global const float *p, int o_wih, int o_whh, int o_bih, int o_bhh,      \
        int o_wo, int o_bo, int o_wh, int o_bh, __global float *out, int tile SHARED
FN void eval_tile(__global const float *xg, int T, int t0, int n, int pre, int post, int wrap, LOCAL_PTR xs, int l) {
    for (int e = l; e < 2 * (pre + n + post); e += FUSED_WG) {
        int a = t0 - pre + e / 2;
        if (wrap) a = (a % T + T) % T;
        xs[e] = a >= 0 && a < T ? xg[2 * a + e % 2] : 0;
    }
}

/* The next tile's h(-1) in hs row 0: the last tile's h, row n (after a barrier past every read). */
FN void eval_carry(LOCAL_PTR hs, int n, int Hn, int l) {
    FUSED_SYNC();
    for (int e = l; e < Hn; e += FUSED_WG) hs[e] = hs[n * Hn + e];
}

/* GRU, LSTM: local memory xs (tile, 2), hs (tile + 1, H), gs (tile, G), LSTM's c0 (H): 2 t + H (t + 1)
 * + 4 H t floats (GRU), 2 t + H (t + 1) + 5 H t + H (LSTM), t the tile. */
#define EVAL_KERNEL(NAME, FORWARD, LSTM)                                                                                \
    FUSED(NAME)(EVAL_ARGS) {                                                                                            \
        SHARED_MEM                                                                                                      \
        int b = get_group_id(0), l = get_local_id(0);                                                                   \
        __global const float *xg = x + off + (size_t)b * T * 2;                                                         \
        LOCAL_PTR hs = sm + 2 * tile;                                                                                   \
        LOCAL_PTR gs = hs + H * (tile + 1);                                                                             \
        LOCAL_PTR c0 = LSTM ? gs + 5 * H * tile : (LOCAL_PTR)0;                                                         \
        for (int e = l; e < H; e += FUSED_WG) hs[e] = 0;                                                                \
        for (int e = l; LSTM && e < H; e += FUSED_WG) c0[e] = 0;                                                        \
        for (int t0 = 0; t0 < T; t0 += tile) {                                                                          \
            int n = T - t0 < tile ? T - t0 : tile;                                                                      \
            eval_tile(xg, T, t0, n, 0, 0, 0, sm, l);                                                                    \
            FUSED_SYNC();                                                                                               \
            SIZED(FORWARD)(p, 2, o_wih, o_whh, o_bih, o_bhh, sm, hs, gs EVAL_C0_##LSTM, n, l);                          \
            for (int e = l; e < 2 * n; e += FUSED_WG)                                                                   \
                out[((size_t)b * T + t0) * 2 + e] = head_at(p, o_wo, o_bo, hs, e, H);                                  \
            eval_carry(hs, n, H, l);                                                                                    \
            for (int e = l; LSTM && e < H; e += FUSED_WG) c0[e] = gs[5 * H * (n - 1) + e];                              \
        }                                                                                                               \
    }
#define EVAL_C0_0
#define EVAL_C0_1 , c0
EVAL_KERNEL(gru_eval, gru_forward, 0)
EVAL_KERNEL(lstm_eval, lstm_forward, 1)

/* A DGRU model's training step (one layer): the features (I, Q, A, A^3, Q/A, I/A) of the frame
 * (as features), the GRU over them, the head u = ReLU(W_hid h + b_hid), y = W_out [u; f] + b_out
 * (as dense_fwd), and back (dense_bwd_in, act_bwd, gru_bwd, rnn_bwd_w, dense_bwd_w). Local memory
 * past the frame: ft (T, 6), ts, dy (T, 2), hs (T + 1, H), gs (T, 4 H), us (T, H) u, du (T, H) its
 * gradient past the ReLU, dhh (T, H) the head's gradient at h, da (2, 3 H): 12 T + H (T + 1) +
 * 7 H T + 6 H floats. */
FUSED(dgru_train)(TRAIN_ARGS) {
    SHARED_MEM
    int b = get_group_id(0), l = get_local_id(0), K = H + 6;
    LOCAL_PTR ft = sm + 2 * T;
    LOCAL_PTR ts = ft + 6 * T;
    LOCAL_PTR dy = ts + 2 * T;
    LOCAL_PTR hs = dy + 2 * T;
    LOCAL_PTR gs = hs + H * (T + 1);
    LOCAL_PTR us = gs + 4 * H * T;
    LOCAL_PTR du = us + H * T;
    LOCAL_PTR dhh = du + H * T;
    __global float *row = gp + (size_t)b * np;
    fused_frame(x, y, frames, cur, batch, 0, b, T, S, sm, ts, hs, H, l);
    fused_features(sm, sm, ft, T, 1, l);
    SIZED(gru_forward)(p, 6, o_wih, o_whh, o_bih, o_bhh, ft, hs, gs, T, l);
    dgru_hidden(p, o_wh, o_bh, hs, us, T, H, l);
    for (int e = l; e < 2 * T; e += FUSED_WG) fused_error(dgru_out(p, o_wo, o_bo, us, ft, e, H), ts, dy, e, n);
    fused_share(ts, T, n, lp, b, l);
    for (int e = l; e < T * H; e += FUSED_WG) { /* du = W_out[:, :H]^T dy past the ReLU */
        int t = e / H, k = e % H;
        float s = 0;
        for (int m = 0; m < 2; m++) s += p[o_wo + m * K + k] * dy[2 * t + m];
        s *= us[e] > 0 ? 1.0f : 0.0f;
        du[e] = s;
    }
    FUSED_SYNC();
    for (int e = l; e < T * H; e += FUSED_WG) { /* dhh = W_hid^T du */
        int t = e / H, k = e % H;
        float s = 0;
        for (int m = 0; m < H; m++) s += p[o_wh + m * H + k] * du[t * H + m];
        dhh[e] = s;
    }
    FUSED_SYNC();
    SIZED(gru_backward)(p, 6, o_wih, o_whh, o_bih, o_bhh, o_wo, ft, hs, gs, dhh + H * T, dy, dhh, T, row, l);
    for (int q = l; q < 2 * K + 2 + H * H + H; q += FUSED_WG) { /* W_out, b_out, W_hid, b_hid */
        float s = 0;
        int at;
        if (q < 2 * K + 2) {
            int m = q < 2 * K ? q / K : q - 2 * K, k = q < 2 * K ? q % K : -1;
            for (int t = 0; t < T; t++) s += dy[2 * t + m] * (k < 0 ? 1.0f : k < H ? us[t * H + k] : ft[6 * t + k - H]);
            at = k < 0 ? o_bo + m : o_wo + q;
        } else {
            int u = q - 2 * K - 2, m = u < H * H ? u / H : u - H * H, k = u < H * H ? u % H : -1;
            for (int t = 0; t < T; t++) s += du[t * H + m] * (k < 0 ? 1.0f : hs[(t + 1) * H + k]);
            at = k < 0 ? o_bh + m : o_wh + u;
        }
        row[at] = s;
    }
}

/* A DGRU model's predictions, as gru_eval. Local memory past the tile's samples: ft (t, 6),
 * hs (t + 1, H), gs (t, 4 H), us (t, H): 8 t + H (t + 1) + 5 H t floats, t the tile. */
FUSED(dgru_eval)(EVAL_ARGS) {
    SHARED_MEM
    int b = get_group_id(0), l = get_local_id(0);
    __global const float *xg = x + off + (size_t)b * T * 2;
    LOCAL_PTR ft = sm + 2 * tile;
    LOCAL_PTR hs = ft + 6 * tile;
    LOCAL_PTR gs = hs + H * (tile + 1);
    LOCAL_PTR us = gs + 4 * H * tile;
    for (int e = l; e < H; e += FUSED_WG) hs[e] = 0;
    for (int t0 = 0; t0 < T; t0 += tile) {
        int n = T - t0 < tile ? T - t0 : tile;
        eval_tile(xg, T, t0, n, 0, 0, 0, sm, l);
        FUSED_SYNC();
        fused_features(sm, sm, ft, n, 1, l); /* DGRU's features are of one sample each */
        SIZED(gru_forward)(p, 6, o_wih, o_whh, o_bih, o_bhh, ft, hs, gs, n, l);
        dgru_hidden(p, o_wh, o_bh, hs, us, n, H, l);
        for (int e = l; e < 2 * n; e += FUSED_WG) out[((size_t)b * T + t0) * 2 + e] = dgru_out(p, o_wo, o_bo, us, ft, e, H);
        eval_carry(hs, n, H, l);
    }
}

/* TRes-GRU's dilated skip over n samples of a sequence of T from sample t0, xs (n, 2) in local
 * memory (for a tile, 16 samples of the sequence on either side too; zeros past its ends are
 * never read: tap and tcn_fwd's sums in their order): c1 (n, 3), c2 (n, 2) its pre-activations.
 * Ends past a barrier. */
FN float tap_local(LOCAL_PTR xs, int T, int t0, int t, int k, int ch) {
    int u = t + (k - 1) * 16;
    return t0 + u < 0 || t0 + u >= T ? 0 : xs[2 * u + ch];
}

FN void fused_skip(__global const float *p, int o_w0, int o_w2, LOCAL_PTR xs, LOCAL_PTR c1, LOCAL_PTR c2, int n, int T,
                   int t0, int l) {
    for (int t = l; t < n; t += FUSED_WG) {
        float a1[3];
        for (int o = 0; o < 3; o++) {
            float v = 0;
            for (int ch = 0; ch < 2; ch++)
                for (int k = 0; k < 3; k++) v += p[o_w0 + (o * 2 + ch) * 3 + k] * tap_local(xs, T, t0, t, k, ch);
            c1[3 * t + o] = v, a1[o] = hswish(v);
        }
        for (int o = 0; o < 2; o++) c2[2 * t + o] = p[o_w2 + 3 * o] * a1[0] + p[o_w2 + 3 * o + 1] * a1[1] + p[o_w2 + 3 * o + 2] * a1[2];
    }
    FUSED_SYNC();
}

/* A TRes-GRU model's training step: its features (I, Q, A, A^3, I[t+1], Q[t+1]), the bias-free GRU
 * over them, the linear head plus the skip Hardswish(W2 Hardswish(W0 *_16 x)), and back (as
 * tcn_fwd, tcn_bwd_d, tcn_bwd_w beside the GRU's kernels). Local memory past the frame: ft (T, 6),
 * ts, dy (T, 2), hs (T + 1, H), gs (T, 4 H), c1 (T, 3), c2 (T, 2), d1 (T, 3), d2 (T, 2), da (2, 3 H):
 * 22 T + H (T + 1) + 4 H T + 6 H floats. o_wh, o_bh: the skip's W0 and W2. */
FUSED(tres_train)(TRAIN_ARGS) {
    SHARED_MEM
    int b = get_group_id(0), l = get_local_id(0), o_w0 = o_wh, o_w2 = o_bh;
    LOCAL_PTR ft = sm + 2 * T;
    LOCAL_PTR ts = ft + 6 * T;
    LOCAL_PTR dy = ts + 2 * T;
    LOCAL_PTR c1 = dy + 2 * T;
    LOCAL_PTR c2 = c1 + 3 * T;
    LOCAL_PTR d1 = c2 + 2 * T;
    LOCAL_PTR d2 = d1 + 3 * T;
    LOCAL_PTR hs = d2 + 2 * T;
    LOCAL_PTR gs = hs + H * (T + 1);
    __global float *row = gp + (size_t)b * np;
    fused_frame(x, y, frames, cur, batch, 0, b, T, S, sm, ts, hs, H, l);
    fused_features(sm, sm, ft, T, 2, l);
    fused_skip(p, o_w0, o_w2, sm, c1, c2, T, T, 0, l);
    SIZED(gru_forward)(p, 6, o_wih, o_whh, o_bih, o_bhh, ft, hs, gs, T, l);
    for (int e = l; e < 2 * T; e += FUSED_WG) fused_error(head_at(p, o_wo, o_bo, hs, e, H) + hswish(c2[e]), ts, dy, e, n);
    fused_share(ts, T, n, lp, b, l);
    for (int t = l; t < T; t += FUSED_WG) { /* as tcn_bwd_d */
        float e2[2];
        for (int o = 0; o < 2; o++) e2[o] = dy[2 * t + o] * hswish_d(c2[2 * t + o]), d2[2 * t + o] = e2[o];
        for (int k = 0; k < 3; k++) d1[3 * t + k] = (p[o_w2 + k] * e2[0] + p[o_w2 + 3 + k] * e2[1]) * hswish_d(c1[3 * t + k]);
    }
    SIZED(gru_backward)(p, 6, o_wih, o_whh, o_bih, o_bhh, o_wo, ft, hs, gs, gs + 4 * H * T, dy, NULL, T, row, l);
    fused_head_grads(dy, hs, T, H, o_wo, o_bo, row, l);
    for (int q = l; q < 24; q += FUSED_WG) { /* as tcn_bwd_w: W0's 18, then W2's 6 */
        float s = 0;
        for (int t = 0; t < T; t++) {
            if (q < 18) s += d1[3 * t + q / 6] * tap_local(sm, T, 0, t, q % 3, q / 3 % 2);
            else s += d2[2 * t + (q - 18) / 3] * hswish(c1[3 * t + (q - 18) % 3]);
        }
        row[q < 18 ? o_w0 + q : o_w2 + q - 18] = s;
    }
}

/* A TRes-GRU model's predictions, as gru_eval. Local memory: the tile's samples with 16 of the
 * segment on either side (t + 32, 2), the sample after its last (2; the segment's first after its
 * end, as features), ft (t, 6), c1 (t, 3), c2 (t, 2), hs (t + 1, H), gs (t, 4 H):
 * 13 t + 66 + H (t + 1) + 4 H t floats, t the tile. */
FUSED(tres_eval)(EVAL_ARGS) {
    SHARED_MEM
    int b = get_group_id(0), l = get_local_id(0);
    __global const float *xg = x + off + (size_t)b * T * 2;
    LOCAL_PTR xm = sm + 32; /* the tile's first sample */
    LOCAL_PTR xn = sm + 2 * (tile + 32);
    LOCAL_PTR ft = xn + 2;
    LOCAL_PTR c1 = ft + 6 * tile;
    LOCAL_PTR c2 = c1 + 3 * tile;
    LOCAL_PTR hs = c2 + 2 * tile;
    for (int e = l; e < H; e += FUSED_WG) hs[e] = 0;
    for (int t0 = 0; t0 < T; t0 += tile) {
        int n = T - t0 < tile ? T - t0 : tile;
        eval_tile(xg, T, t0, n, 16, 16, 0, sm, l);
        if (l < 2) xn[l] = xg[2 * ((t0 + n) % T) + l];
        FUSED_SYNC();
        fused_features(xm, xn, ft, n, 2, l);
        fused_skip(p, o_wh, o_bh, xm, c1, c2, n, T, t0, l);
        SIZED(gru_forward)(p, 6, o_wih, o_whh, o_bih, o_bhh, ft, hs, hs + H * (tile + 1), n, l);
        for (int e = l; e < 2 * n; e += FUSED_WG)
            out[((size_t)b * T + t0) * 2 + e] = head_at(p, o_wo, o_bo, hs, e, H) + hswish(c2[e]);
        eval_carry(hs, n, H, l);
    }
}

/* RVTDCNN's forward over the segment or frame xs (T, 2) in local memory, one row t at a time
 * across the group (no recurrence): the image, its convolution c (T, 36) past the tanh, u (T, Hn)
 * = tanh(W_hid c + b_hid) (as dense_fwd); img (T, 20) the images when not NULL. The rows before
 * the first wrap to the end (wrap: a whole sequence), or are the 3 samples before xs (a tile).
 * Ends past a barrier. */
FN void rvt_forward(__global const float *p, int o_wc, int o_bc, int o_wh, int o_bh, LOCAL_PTR xs, LOCAL_PTR img,
                    LOCAL_PTR cs, LOCAL_PTR us, int T, int wrap, int Hn, int l) {
    for (int t = l; t < T; t += FUSED_WG) {
        float im[20], c[36];
        for (int r = 0; r < 4; r++) {
            int u = wrap ? ((t - 3 + r) % T + T) % T : t - 3 + r;
            image_row(xs[2 * u], xs[2 * u + 1], im + 5 * r);
        }
#pragma unroll
        for (int k = 0; k < 36; k++) c[k] = rvt_conv(p, o_wc, o_bc, im, k / 12, k % 12 / 3, k % 3), cs[36 * t + k] = c[k];
        if (img)
            for (int k = 0; k < 20; k++) img[20 * t + k] = im[k];
        for (int m = 0; m < Hn; m++) {
            float s = o_bh >= 0 ? p[o_bh + m] : 0;
            for (int k = 0; k < 36; k++) s += p[o_wh + m * 36 + k] * c[k];
            us[t * Hn + m] = tanh(s);
        }
    }
    FUSED_SYNC();
}

/* Output e = 2 t + c of RVTDCNN's head W_out u(t) + b_out, as dense_fwd. */
FN float rvt_out(__global const float *p, int o_wo, int o_bo, LOCAL_PTR us, int e, int Hn) {
    int t = e / 2, c = e % 2;
    float s = o_bo >= 0 ? p[o_bo + c] : 0;
    for (int k = 0; k < Hn; k++) s += p[o_wo + c * Hn + k] * us[t * Hn + k];
    return s;
}

/* An RVTDCNN model's training step, one work-group of FUSED_WG a sequence (rows across the group;
 * the hidden size is the argument here, since nothing is kept in registers): as rvt_fwd,
 * dense_fwd, mse, dense_bwd_in, act_bwd, rvt_bwd_w and dense_bwd_w. o_wih, o_whh: the convolution's
 * weight and bias; o_wh, o_bh: fc_hid. Local memory past the frame: ts, dy (T, 2), img (T, 20),
 * cs (T, 36), us (T, H), du (T, H), dc (T, 36): 98 T + 2 H T floats. */
__kernel WG_SIZE(FUSED_WG) void rvt_train(TRAIN_ARGS, int hidden) {
    SHARED_MEM
    int b = get_group_id(0), l = get_local_id(0), o_wc = o_wih, o_bc = o_whh;
    LOCAL_PTR ts = sm + 2 * T;
    LOCAL_PTR dy = ts + 2 * T;
    LOCAL_PTR img = dy + 2 * T;
    LOCAL_PTR cs = img + 20 * T;
    LOCAL_PTR us = cs + 36 * T;
    LOCAL_PTR du = us + H * T;
    LOCAL_PTR dc = du + H * T;
    __global float *row = gp + (size_t)b * np;
    fused_frame(x, y, frames, cur, batch, 0, b, T, S, sm, ts, NULL, 0, l);
    rvt_forward(p, o_wc, o_bc, o_wh, o_bh, sm, img, cs, us, T, 1, H, l);
    for (int e = l; e < 2 * T; e += FUSED_WG) fused_error(rvt_out(p, o_wo, o_bo, us, e, H), ts, dy, e, n);
    fused_share(ts, T, n, lp, b, l);
    for (int e = l; e < T * H; e += FUSED_WG) { /* du = W_out^T dy past the tanh */
        int t = e / H, k = e % H;
        float s = 0;
        for (int m = 0; m < 2; m++) s += p[o_wo + m * H + k] * dy[2 * t + m];
        s *= 1 - us[e] * us[e];
        du[e] = s;
    }
    FUSED_SYNC();
    for (int e = l; e < T * 36; e += FUSED_WG) { /* dc = W_hid^T du past the tanh */
        int t = e / 36, k = e % 36;
        float s = 0;
        for (int m = 0; m < H; m++) s += p[o_wh + m * 36 + k] * du[t * H + m];
        s *= 1 - cs[e] * cs[e];
        dc[e] = s;
    }
    FUSED_SYNC();
    for (int q = l; q < 30 + 36 * H + H + 2 * H + 2; q += FUSED_WG) { /* W_c, b_c, W_hid, b_hid, W_out, b_out */
        float s = 0;
        int at;
        if (q < 30) {
            int ch = q < 27 ? q / 9 : q - 27, kr = q % 9 / 3, kc = q % 3;
            for (int t = 0; t < T; t++)
                for (int r = 0; r < 4; r++)
                    for (int j = 0; j < 3; j++) {
                        float g = dc[36 * t + ch * 12 + r * 3 + j];
                        int rr = r + kr - 1;
                        if (q >= 27) s += g;
                        else if (rr >= 0 && rr < 4) s += g * img[20 * t + rr * 5 + j + kc];
                    }
            at = q < 27 ? o_wc + q : o_bc + ch;
        } else if (q < 30 + 37 * H) {
            int u = q - 30, m = u < 36 * H ? u / 36 : u - 36 * H, k = u < 36 * H ? u % 36 : -1;
            for (int t = 0; t < T; t++) s += du[t * H + m] * (k < 0 ? 1.0f : cs[36 * t + k]);
            at = k < 0 ? o_bh + m : o_wh + u;
        } else {
            int u = q - 30 - 37 * H, m = u < 2 * H ? u / H : u - 2 * H, k = u < 2 * H ? u % H : -1;
            for (int t = 0; t < T; t++) s += dy[2 * t + m] * (k < 0 ? 1.0f : us[t * H + k]);
            at = k < 0 ? o_bo + m : o_wo + u;
        }
        row[at] = s;
    }
}

/* An RVTDCNN model's predictions, as gru_eval (no state to carry). Local memory: the tile's
 * samples with the 3 before (t + 3, 2; around the segment's end for the first), cs (t, 36),
 * us (t, H): 38 t + 6 + H t floats, t the tile. */
__kernel WG_SIZE(FUSED_WG) void rvt_eval(EVAL_ARGS, int hidden) {
    SHARED_MEM
    int b = get_group_id(0), l = get_local_id(0);
    __global const float *xg = x + off + (size_t)b * T * 2;
    LOCAL_PTR cs = sm + 2 * (tile + 3);
    LOCAL_PTR us = cs + 36 * tile;
    for (int t0 = 0; t0 < T; t0 += tile) {
        int n = T - t0 < tile ? T - t0 : tile;
        eval_tile(xg, T, t0, n, 3, 0, 1, sm, l);
        FUSED_SYNC();
        rvt_forward(p, o_wih, o_whh, o_wh, o_bh, sm + 6, NULL, cs, us, n, 0, H, l);
        for (int e = l; e < 2 * n; e += FUSED_WG) out[((size_t)b * T + t0) * 2 + e] = rvt_out(p, o_wo, o_bo, us, e, H);
        FUSED_SYNC(); /* every read of xs, cs and us done before the next tile's */
    }
}

#ifdef __CUDACC__
/* The fused steps for every hidden size they take (index H; 0: none): one instantiation each. */
#define T4(k, h) (const void *)k<h>, (const void *)k<h + 1>, (const void *)k<h + 2>, (const void *)k<h + 3>
#define T32(k) {NULL, T4(k, 1), T4(k, 5), T4(k, 9), T4(k, 13), T4(k, 17), T4(k, 21), T4(k, 25), T4(k, 29)}
static const void *const gru_train_h[FUSED_WG + 1] = T32(gru_train);
static const void *const lstm_train_h[FUSED_WG + 1] = T32(lstm_train);
static const void *const gru_eval_h[FUSED_WG + 1] = T32(gru_eval);
static const void *const lstm_eval_h[FUSED_WG + 1] = T32(lstm_eval);
static const void *const dgru_train_h[FUSED_WG + 1] = T32(dgru_train);
static const void *const dgru_eval_h[FUSED_WG + 1] = T32(dgru_eval);
static const void *const tres_train_h[FUSED_WG + 1] = T32(tres_train);
static const void *const tres_eval_h[FUSED_WG + 1] = T32(tres_eval);
#undef T32
#undef T4
#endif
