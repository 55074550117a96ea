/* gru (CUDA): the GRU PA/DPD model (one layer on raw I/Q, linear head H -> 2) on the GPU —
 * forward, MSE, backward, global-norm clipping and AdamW — mirroring the CPU reference kernels
 * (src/models/rnn.c, src/models/recurrent.c, src/optim.c). Every reduction has a fixed order
 * (per-sequence gradient slabs summed in sequence order, fixed-shape trees for norms and
 * losses), so results are deterministic and a captured CUDA graph replays them bit for bit.
 * Parameters use dpd's buffer layout: W_ih (3H, 2), W_hh (3H, H), b_ih, b_hh (3H), W_out (2, H),
 * b_out (2). Legend: B sequences, T time, H hidden, G = 3H. */
#ifndef DPD_CUDA_GRU_CUH
#define DPD_CUDA_GRU_CUH
#include <cuda_runtime.h>
#include <stddef.h>

typedef struct cgru {
    int B, T, H;
    size_t np;       /* parameters */
    float *p, *g;    /* parameters and gradient (np) */
    float *m, *v;    /* AdamW moments (np) */
    float *x, *tgt;  /* (B, T, 2) */
    float *y, *dy;   /* (B, T, 2) */
    float *dx;       /* (B, T, 2) input gradient (for DPD training through a PA) */
    float *saved;    /* (B, T, 5H): r, z, n, g, h */
    float *slab;     /* (B, np) per-sequence gradients */
    float *scal;     /* device scalars: [0] loss, [1] grad norm, [2] lr, [3] step */
} cgru;

size_t cgru_nparams(int H);
cudaError_t cgru_alloc(cgru *c, int B, int T, int H);
void cgru_free(cgru *c);

/* One training step on the stream: forward, loss, backward, clip(max_norm), AdamW at the lr
 * and step count held in device memory (scal[2], scal[3]; the step count is incremented on
 * the device), with weight decay wd. No host synchronisation: capturable as a CUDA graph. */
void cgru_step(cgru *c, float max_norm, float wd, cudaStream_t s);

/* Forward only (y, keeping what backward needs), backward of that forward from c->dy (g, dx),
 * clipping g, forward + loss + backward + clip, and the AdamW update alone. c->B and c->T may
 * be lowered below the allocation for a smaller batch. */
void cgru_forward(cgru *c, cudaStream_t s);
void cgru_backward(cgru *c, cudaStream_t s);
void cgru_clip(cgru *c, float max_norm, cudaStream_t s);
void cgru_grad(cgru *c, float max_norm, cudaStream_t s);
void cgru_adamw(cgru *c, float wd, cudaStream_t s);
#endif
