/* kern: the fast CPU kernels. A chunk of up to KL sequences runs in lockstep, sequence-minor
 * ("SoA": every state and gate vector is (width, KL) with the KL lanes contiguous), so the matrix
 * products are broadcast-FMAs over the lanes with no horizontal sums in the step loop. kern.c is
 * compiled once per ISA (AVX-512, AVX2+FMA, baseline SSE2); dispatch.c picks one by cpuid. The
 * scalar reference kernels (src/models/rnn.c) stay the oracle (tests/test_kernels.c).
 * Legend: B <= KL lanes in use, T time, I inputs, H hidden, G = 3H gate rows. */
#ifndef DPD_CPU_KERN_H
#define DPD_CPU_KERN_H
#include <stddef.h>

#define KL 16  /* lanes: sequences per chunk */
#define KTW 16 /* GRU backward: steps of gate gradients kept before folding them into the weight gradients */

/* A GRU layer's weights (PyTorch layout; biases may be NULL) and its gradient buffers. */
typedef struct kgru {
    int I, H;
    const float *wih, *whh, *bih, *bhh;
    float *gwih, *gwhh, *gbih, *gbhh; /* backward only */
    /* Optional fused linear head y = W_out h + b_out (GRU only; wo NULL: none). With it, forward
     * writes y (B, T, 2) in place of h into the first B*T*2 floats of its output y, and
     * backward takes dy (B, T, 2) in place of dh and adds the head's gradients. */
    const float *wo, *bo;
    float *gwo, *gbo;
    float *y;
} kgru;

/* Floats a GRU or LSTM layer saves beyond h, which comes first in (B, T, H) order as in the
 * reference, and the scratch it needs. The LSTM uses the same weight struct (G = 4H). */
size_t kern_gru_saved(int I, int H, int T);
size_t kern_gru_tmp(int I, int H, int T);
size_t kern_lstm_saved(int I, int H, int T);
size_t kern_lstm_tmp(int I, int H, int T);

/* RVTDCNN weights (PyTorch layout) and gradient buffers. */
typedef struct krvt {
    int H;
    const float *wc, *bc, *wh, *bh, *wo, *bo; /* (3,1,3,3), (3), (H, 36), (H), (2, H), (2) */
    float *gwc, *gbc, *gwh, *gbh, *gwo, *gbo;
} krvt;

/* RVTDCNN: floats saved per chunk (T (36 + H) KL; y is written directly) and scratch. */
size_t kern_rvt_saved(int H, int T);
size_t kern_rvt_tmp(int H, int T);

typedef struct kern_ops {
    const char *name;
    void (*gru_fwd)(const kgru *w, int B, int T, const float *x, float *sv, float *tmp);
    void (*gru_bwd)(const kgru *w, int B, int T, const float *x, const float *sv, const float *dh,
                    float *dx, float *tmp);
    void (*lstm_fwd)(const kgru *w, int B, int T, const float *x, float *sv, float *tmp);
    void (*lstm_bwd)(const kgru *w, int B, int T, const float *x, const float *sv, const float *dh,
                     float *dx, float *tmp);
    void (*rvt_fwd)(const krvt *w, int B, int T, const float *x, float *sv, float *y, float *tmp);
    void (*rvt_bwd)(const krvt *w, int B, int T, const float *x, const float *sv, const float *dy,
                    float *dx, float *tmp);
    /* Dense layer over N samples: y (N, out) = x (N, in) W^T + b (b may be NULL); backward adds
     * dy W to dx (may be NULL), dy^T x to gW and column sums to gb (may be NULL). tmp: kern_lin_tmp(out, in, N). */
    void (*lin_fwd)(const float *W, const float *b, int out, int in, int N, const float *x, float *y, float *tmp);
    void (*lin_bwd)(const float *W, int out, int in, int N, const float *x, const float *dy, float *dx,
                    float *gW, float *gb, float *tmp);
} kern_ops;

size_t kern_lin_tmp(int out, int in, int N);

extern const kern_ops kern_avx512, kern_avx2, kern_sse;

/* The kernels in use: NULL selects the scalar reference kernels. */
const kern_ops *kern_active(void);

/* The fast kernels take chunks of 5..KL sequences (fewer lanes would waste them); never in the
 * double-precision (DPD_F64) builds of the families, which are reference-only. */
static inline int kern_fast(int B) {
#ifdef DPD_F64
    (void)B;
    return 0;
#else
    return B > 4 && B <= KL && kern_active();
#endif
}
#endif
