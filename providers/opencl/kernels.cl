/* kernels (opencl): the OpenCL C kernels of the OpenCL provider, embedded in libdpd-opencl.so
 * and built at session creation with the hidden size as a compile-time constant:
 *   -D H=<hidden> -D IM=<the largest layer input, max(H, features)>
 * Layouts are dpd's (docs/formats.md): a batch is (B, T, 2) floats, a layer's output (B, T, H),
 * parameters one buffer in the safetensors order, addressed by the offsets of the family's tensor
 * table (passed as arguments, never restated here).
 *
 * Determinism (docs/providers.md): no atomics; every sum runs in an order fixed by indices (time
 * order inside a sequence, batch order across sequences, a fixed tree for the gradient norm); the
 * work-group geometry comes from the batch and the hidden size, never from the device. The same
 * run twice on one device is therefore bitwise identical.
 *
 * Gradients are per-sequence partials, gp (B, np): the backward kernels each write their own
 * parameters' slots of their sequence's row, and `adamw` sums the rows in batch order. */

#define G3 (3 * H)

static float sigm(float a) { return 1.0f / (1.0f + exp(-a)); }

/* bx, by (B, L, 2) = frames frames[f0 .. f0 + B) of length L at stride S of the resident x, y. */
__kernel void gather(__global const float *x, __global const float *y, __global const uint *frames, int f0, int L,
                     int S, __global float *bx, __global float *by) {
    size_t i = get_global_id(0), per = (size_t)L * 2, b = i / per;
    size_t src = (size_t)frames[f0 + b] * (size_t)S * 2 + i % per;
    bx[i] = x[src];
    by[i] = y[src];
}

/* One GRU layer, one work-group of H work-items per sequence, work-item j the hidden unit j:
 * in (B, T, I) at in + off -> hs (B, T, H); sv (B, T, 4 H) keeps r, z, n and g = W_hn h + b_hn
 * for the backward. PyTorch's gate order r, z, n. */
__kernel __attribute__((reqd_work_group_size(H, 1, 1))) void gru_fwd(
    __global const float *in, int off, int I, int T, __global const float *p, int o_wih, int o_whh, int o_bih,
    int o_bhh, __global float *hs, __global float *sv) {
    int b = get_group_id(0), j = get_local_id(0);
    __local float h[H];
    __global const float *x = in + off + (size_t)b * T * I, *wih = p + o_wih, *whh = p + o_whh;
    float hj = 0;
    h[j] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int t = 0; t < T; t++) {
        float ar = p[o_bih + j], az = p[o_bih + H + j], an = p[o_bih + 2 * H + j];
        float gr = p[o_bhh + j], gz = p[o_bhh + H + j], gn = p[o_bhh + 2 * H + j];
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

/* The backward of gru_fwd for one sequence a work-group: dh (B, T, H), the gradient reaching hs
 * from above, in; dx (B, T, I) written when want_dx; the layer's parameter gradients written into
 * the sequence's row of gp (np a row) when want_dw. Work-item j accumulates the rows j, H + j and
 * 2 H + j of each weight over time, T - 1 down to 0. */
__kernel __attribute__((reqd_work_group_size(H, 1, 1))) void gru_bwd(
    __global const float *in, int off, int I, int T, __global const float *p, int o_wih, int o_whh, int o_bih,
    int o_bhh, __global const float *hs, __global const float *sv, __global const float *dh, __global float *dx,
    int want_dx, __global float *gp, int np, int want_dw) {
    int b = get_group_id(0), j = get_local_id(0);
    __local float da[G3], dah[G3];
    __global const float *x = in + off + (size_t)b * T * I, *wih = p + o_wih, *whh = p + o_whh;
    float gwih[3 * IM], gwhh[3 * H], gbih[3] = {0, 0, 0}, gbhh[3] = {0, 0, 0}, dn = 0;
    for (int q = 0; q < 3 * IM; q++) gwih[q] = 0;
    for (int q = 0; q < 3 * H; q++) gwhh[q] = 0;
    for (int t = T - 1; t >= 0; t--) {
        size_t o = ((size_t)b * T + t) * H;
        float r = sv[4 * o + j], z = sv[4 * o + H + j], n = sv[4 * o + 2 * H + j], g = sv[4 * o + 3 * H + j];
        float hp = t ? hs[o - H + j] : 0, dd = dh[o + j] + dn;
        float dan = dd * (1 - z) * (1 - n * n), daz = dd * (hp - n) * z * (1 - z), dar = dan * g * r * (1 - r);
        da[j] = dar, da[H + j] = daz, da[2 * H + j] = dan;
        dah[j] = dar, dah[H + j] = daz, dah[2 * H + j] = dan * r;
        barrier(CLK_LOCAL_MEM_FENCE);
        float s = 0;
        for (int q = 0; q < G3; q++) s += whh[q * H + j] * dah[q];
        dn = s + dd * z;
        if (want_dw) {
            float a[3] = {dar, daz, dan}, c[3] = {dar, daz, dan * r};
            for (int k = 0; k < 3; k++) {
                gbih[k] += a[k], gbhh[k] += c[k];
                for (int i = 0; i < I; i++) gwih[k * IM + i] += a[k] * x[t * I + i];
                if (t)
                    for (int m = 0; m < H; m++) gwhh[k * H + m] += c[k] * hs[o - H + m];
            }
        }
        if (want_dx)
            for (int i = j; i < I; i += H) {
                float e = 0;
                for (int q = 0; q < G3; q++) e += wih[q * I + i] * da[q];
                dx[((size_t)b * T + t) * I + i] = e;
            }
        barrier(CLK_LOCAL_MEM_FENCE); /* da is read by all before the next step writes it */
    }
    if (!want_dw) return;
    __global float *row = gp + (size_t)b * np;
    for (int k = 0; k < 3; k++) {
        int q = k * H + j;
        for (int i = 0; i < I; i++) row[o_wih + q * I + i] = gwih[k * IM + i];
        for (int m = 0; m < H; m++) row[o_whh + q * H + m] = gwhh[k * H + m];
        row[o_bih + q] = gbih[k], row[o_bhh + q] = gbhh[k];
    }
}

/* A dense layer over rows: out (R, M) = in (R, K) W^T + b, W (M, K) at p + o_w, b at p + o_b. */
__kernel void dense_fwd(__global const float *in, int K, __global const float *p, int o_w, int o_b, int M,
                        __global float *out) {
    size_t i = get_global_id(0), r = i / M;
    int m = i % M;
    float s = p[o_b + m];
    for (int k = 0; k < K; k++) s += p[o_w + m * K + k] * in[r * K + k];
    out[i] = s;
}

/* The input gradient of dense_fwd: din (R, K) = dy (R, M) W. */
__kernel void dense_bwd_in(__global const float *dy, int M, __global const float *p, int o_w, int K,
                           __global float *din) {
    size_t i = get_global_id(0), r = i / K;
    int k = i % K;
    float s = 0;
    for (int m = 0; m < M; m++) s += p[o_w + m * K + k] * dy[r * M + m];
    din[i] = s;
}

/* The parameter gradients of dense_fwd per sequence of T rows, into gp's row of the sequence:
 * work-item (b, q), q over the M K weights then the M biases, sums over t in order. */
__kernel void dense_bwd_w(__global const float *dy, int M, __global const float *in, int K, int T,
                          __global float *gp, int np, int o_w, int o_b) {
    size_t i = get_global_id(0), per = (size_t)M * (K + 1), b = i / per;
    int q = i % per, m = q < M * K ? q / K : q - M * K, k = q < M * K ? q % K : -1;
    float s = 0;
    for (int t = 0; t < T; t++) {
        size_t r = b * T + t;
        s += dy[r * M + m] * (k < 0 ? 1.0f : in[r * K + k]);
    }
    gp[b * np + (k < 0 ? o_b + m : o_w + q)] = s;
}

/* The MSE's pieces for sequence b (one work-item each, per = T * 2 values): lp[b] the sum of
 * squared differences in order, dy = 2 (y - t) / n, n the batch's count of values. */
__kernel void mse(__global const float *y, __global const float *t, int per, float n, __global float *dy,
                  __global float *lp) {
    size_t b = get_global_id(0);
    float s = 0;
    for (int e = 0; e < per; e++) {
        size_t i = b * per + e;
        float d = y[i] - t[i];
        s += d * d;
        dy[i] = 2.0f * d / n;
    }
    lp[b] = s;
}

#define WG 256
/* One training step's end, one work-group of WG: the loss (lp summed in batch order, over n)
 * into losses[k]; where it is not finite, or an earlier step of the call diverged (*stop), nothing
 * more (stop set). Otherwise the gradient, gp's B rows summed in order into g; its norm by
 * WG strided sums and a fixed tree; clipped as torch.nn.utils.clip_grad_norm_ (max_norm 0: off);
 * AdamW as torch.optim.AdamW (the step's factors computed by the host as the cpu provider's). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void adamw(
    __global float *p, __global float *g, __global const float *gp, int B, int np, __global float *m,
    __global float *v, __global const float *lp, float n, __global float *losses, int k, __global int *stop,
    float max_norm, float decay, float b1, float b2, float c1, float c2, float step, float bc2s, float eps) {
    int l = get_local_id(0);
    __local float part[WG];
    __local int bad;
    if (l == 0) {
        float s = 0;
        for (int b = 0; b < B; b++) s += lp[b];
        float loss = s / n;
        bad = *stop;
        if (!bad) losses[k] = loss;
        if (!bad && !isfinite(loss)) bad = *stop = 1;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    int skip = bad; /* every work-item goes through every barrier (no early return) */
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
}
