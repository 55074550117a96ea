/* rnn: GRU and LSTM layers over a batch of sequences (each from zero state), shared by the
 * recurrent families. Compiled twice (float _f32, double _f64). Weights use PyTorch's layout and
 * gate order (GRU r, z, n with b_hn inside the reset product; LSTM i, f, g, o); biases may be
 * NULL (bias-free TRes cells). Legend: B batch, T time, I inputs, H hidden, G gate rows. */
#ifndef DPD_MODELS_RNN_H
#define DPD_MODELS_RNN_H
#include <stddef.h>

#include "nn.h"

typedef struct kern_ops kern_ops; /* src/kern/kern.h */

typedef struct FN(rnn_w) {
    int I, H;
    const real *wih, *whh, *bih, *bhh; /* (G, I), (G, H), (G) or NULL, (G) or NULL */
    int delta;                         /* GRU only: DeltaGRU cell (reference §3.7) */
    real thx, thh;                     /* its thresholds; 0 gives the dense GRU exactly */
    const kern_ops *k;                 /* fast kernels (NULL: the reference; always NULL in DPD_F64) */
} FN(rnn_w);

/* Grad pointers in the same layout (not const). */
typedef struct FN(rnn_g) {
    real *wih, *whh, *bih, *bhh;
} FN(rnn_g);

/* Saved activations per layer, in reals: GRU 5 planes (h, r, z, n, g), LSTM 6 (h, c, i, f, g, o),
 * each (B, T, H); a DeltaGRU adds the committed input x_p (B, T, I) and state h_p (B, T, H) right
 * after h, and their masks after the gate planes. h is always the first plane; with fast kernels
 * (kt) what follows h (after x_p and h_p in a DeltaGRU) is the kernel's. Scratch per layer call:
 * rnn_tmp_size, or rnn_gru_tmp for a GRU layer that may be a DeltaGRU run by kt. */
#define RNN_LSTM_PLANES 6
size_t rnn_gru_saved(const kern_ops *kt, int I, int H, int delta, int B, int T);
size_t rnn_lstm_saved(const kern_ops *kt, int I, int H, int B, int T);
size_t rnn_tmp_size(int I, int H, int gates, int T);
size_t rnn_gru_tmp(const kern_ops *kt, int I, int H, int delta, int T);

/* Delta statistics of a DeltaGRU layer from its saved planes: zeros of the thresholded deltas
 * (x_p or h_p unchanged from the previous step; both start at 0) added to z[0] (input) and z[1]
 * (hidden). */
void FN(rnn_delta_zeros)(const FN(rnn_w) *w, int B, int T, const real *sv, long long *z);

/* x (B, T, I) -> saved planes at sv (h first). */
void FN(rnn_gru_fwd)(const FN(rnn_w) *w, int B, int T, const real *x, real *sv, real *tmp);
/* dh (B, T, H): the gradient arriving at h from above (read only); accumulates into g; writes
 * dx (B, T, I) when non-NULL. */
void FN(rnn_gru_bwd)(const FN(rnn_w) *w, const FN(rnn_g) *g, int B, int T, const real *x,
                     const real *sv, const real *dh, real *dx, real *tmp);
void FN(rnn_lstm_fwd)(const FN(rnn_w) *w, int B, int T, const real *x, real *sv, real *tmp);
void FN(rnn_lstm_bwd)(const FN(rnn_w) *w, const FN(rnn_g) *g, int B, int T, const real *x,
                      const real *sv, const real *dh, real *dx, real *tmp);
#endif
