/* init: weight initialisers with OpenDPD/PyTorch semantics, drawn from dpd's RNG. The schemes
 * match PyTorch's; the draws do not (bit-exact PyTorch init is not a goal, reference §3.1). */
#ifndef DPD_INIT_H
#define DPD_INIT_H
#include "dpd/dpd.h"

/* w (rows, cols) row-major with orthonormal rows (rows <= cols) or columns (rows > cols), as
 * torch.nn.init.orthogonal_: QR of a Gaussian matrix with the sign of diag(R) made positive. */
void dpd_init_orthogonal(float *w, int rows, int cols, dpd_rng *rng);

/* w[0..n) ~ U(-b, b). */
void dpd_init_uniform(float *w, size_t n, double b, dpd_rng *rng);

/* w (rows, cols) ~ U(-b, b) with b = sqrt(6 / (fan_in + fan_out)). */
void dpd_init_xavier(float *w, int rows, int cols, int fan_in, int fan_out, dpd_rng *rng);

#endif
