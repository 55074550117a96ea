/* optim: AdamW (PyTorch semantics, decoupled weight decay) over one flat parameter buffer, and
 * global-norm gradient clipping (clip_grad_norm_). */
#ifndef DPD_OPTIM_H
#define DPD_OPTIM_H
#include "dpd/dpd.h"

typedef struct dpd_adamw {
    double lr, beta1, beta2, eps, wd;
    long step;  /* steps taken */
    size_t n;
    float *m, *v; /* first and second moments, n each (one allocation) */
} dpd_adamw;

/* Zeroed moments for n parameters; hyperparameters beta (0.9, 0.999), eps 1e-8. */
dpd_status dpd_adamw_init(dpd_adamw *o, size_t n, double lr, double wd, dpd_error *err);
void dpd_adamw_free(dpd_adamw *o);

/* One step at o->lr: p *= 1 - lr wd; m, v updated; p -= lr/(1-b1^t) m / (sqrt(v)/sqrt(1-b2^t) + eps). */
void dpd_adamw_step(dpd_adamw *o, float *p, const float *g);

/* Scales g by max_norm / (norm + 1e-6) when that is below 1; returns the pre-clip L2 norm.
 * max_norm <= 0 disables clipping (the norm is still returned). */
double dpd_clip(float *g, size_t n, double max_norm);

/* MSE over n values (mean of squared differences, in double) and its gradient dy = 2 (y - t) / n. */
double dpd_mse(const float *y, const float *t, size_t n, float *dy);

#endif
