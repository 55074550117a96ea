/* kern: the fast CPU kernels. A chunk of up to KL sequences runs in lockstep, sequence-minor
 * ("SoA": every state and gate vector is (width, KL) with the KL lanes contiguous), so the matrix
 * products are broadcast-FMAs over the lanes with no horizontal sums in the step loop. kern.c is
 * compiled once per ISA (AVX-512, AVX2+FMA, baseline SSE2); dispatch.c picks one by cpuid. The
 * scalar reference kernels (src/models/rnn.c) stay the oracle (tests/test_kernels.c).
 * Legend: B <= KL lanes in use, T time, I inputs, H hidden, G = 3H gate rows. */
#ifndef DPD_KERN_H
#define DPD_KERN_H
#include <stddef.h>

#include "dpd/dpd.h"

#define KL 16  /* lanes: sequences per chunk */
#define KMIN 5 /* the fewest sequences kern_fast gives the fast kernels */
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
    /* Forward of an inference (no backward follows; GRU only): the saved planes hold the last two
     * steps only, reused in turn, so a long sequence touches a few KiB of its workspace. */
    int ring;
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

/* RVTDCNN: floats saved per chunk (T (36 + H) KL, + KL to align) and scratch (the chunk's
 * outputs among it, in lanes, moved to y once the chunk is done). */
size_t kern_rvt_saved(int H, int T);
size_t kern_rvt_tmp(int H, int T);

/* A family's exact fast path: its whole forward and backward with family.h's contract (the sizes
 * in floats; ws and scratch as the family's ws_size/scratch_size say when this is in use),
 * vectorised but doing the reference kernel's float operations in the reference's order (its
 * source is compiled with -ffp-contract=off): the results are bitwise the reference's, on every
 * ISA and for any B and T. */
typedef struct kfam {
    size_t (*ws_size)(const dpd_model_cfg *c, int B, int T);
    size_t (*scratch_size)(const dpd_model_cfg *c, int B, int T);
    void (*forward)(const dpd_model_cfg *c, const float *p, const float *x, int B, int T, float *y, float *ws);
    void (*backward)(const dpd_model_cfg *c, const float *p, const float *x, const float *dy, int B, int T,
                     const float *ws, float *scratch, float *dp, float *dx);
} kfam;

/* The DeltaGRU layer's exact fast path (src/kern/delta.c): src/models/rnn.c's reference delta-GRU
 * layer (rnn_gru_fwd/bwd with w->delta, shared by the deltagru and tres_deltagru families) with
 * the same float operations in the same order, so bitwise its results on every ISA, for any B and
 * T. w: the layer's weights and, for backward, gradient buffers (accumulated into; the head fields
 * unused). The saved floats at sv start as the reference's — h (B, T, H), x_p (B, T, I), h_p
 * (B, T, H), which the families' heads and rnn_delta_zeros read — then hold the kernel's own;
 * tmp: scratch. Sizes in floats. */
typedef struct kdelta {
    size_t (*saved)(int I, int H, int B, int T);
    size_t (*tmp)(int I, int H, int T);
    void (*forward)(const kgru *w, float thx, float thh, int B, int T, const float *x, float *sv, float *tmp);
    void (*backward)(const kgru *w, int B, int T, const float *sv, const float *dh, float *dx, float *tmp);
} kdelta;

typedef struct kern_ops kern_ops;
struct kern_ops {
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
    /* the families' exact fast paths (src/kern/<family>.c); NULL: the family runs its reference */
    const kfam *tcn;
    const kfam *pgjanet, *dvrjanet;
    const kdelta *delta; /* the DeltaGRU layer (deltagru, tres_deltagru) */
    const kfam *gmp;
    /* One core's measured multiply-add throughput with this ISA in GFLOP/s (src/kern/peak.c; ~0.1 s
     * of the calling thread): the yardstick of `dpd bench train`, used by nothing else. */
    double (*peak)(void);
};

size_t kern_lin_tmp(int out, int in, int N);

extern const kern_ops kern_avx512, kern_avx2, kern_sse;
extern const kfam kfam_tcn_avx512, kfam_tcn_avx2, kfam_tcn_sse;
extern const kfam kfam_pgjanet_avx512, kfam_pgjanet_avx2, kfam_pgjanet_sse;
extern const kfam kfam_dvrjanet_avx512, kfam_dvrjanet_avx2, kfam_dvrjanet_sse;
extern const kdelta kdelta_avx512, kdelta_avx2, kdelta_sse;
extern const kfam kfam_gmp_avx512, kfam_gmp_avx2, kfam_gmp_sse;
double kern_peak_avx512(void), kern_peak_avx2(void), kern_peak_sse(void);

/* A kernel table by name: "auto"/"fast" (the best ISA this CPU has: avx512, avx2 or sse), one
 * of those by name, or "ref" (*out = NULL: the scalar reference kernels of src/models/).
 * DPD_E_INVAL for an unknown name (the message names the field `field`), DPD_E_UNSUPPORTED when
 * the CPU lacks the ISA. Pure: nothing is remembered. */
dpd_status kern_select(const char *field, const char *name, const kern_ops **out, dpd_error *err);

/* "ref" for NULL, else the table's ISA name. */
const char *kern_name(const kern_ops *k);

/* The exact fast path `fam` (a kern_ops member) of table k: NULL for the reference kernels (k NULL)
 * and in the double-precision (DPD_F64) builds of the families. */
#ifdef DPD_F64
#define KERN_EXACT(k, fam) ((void)(k), (const kfam *)NULL)
#else
#define KERN_EXACT(k, fam) ((k) ? (k)->fam : NULL)
#endif

/* Whether table k takes a chunk of B sequences: the fast kernels take KMIN..KL (a training chunk
 * of fewer takes the reference, as it always has: its results stay the same); never in the
 * double-precision (DPD_F64) builds of the families, which are reference-only, nor with k NULL
 * (the reference kernels). An inference of fewer is padded to KMIN instead (dpd_net_infer). */
static inline int kern_fast(const kern_ops *k, int B) {
#ifdef DPD_F64
    (void)k, (void)B;
    return 0;
#else
    return B >= KMIN && B <= KL && k;
#endif
}
#endif
