/* gru: the GRU family's reference kernels in both precisions. The library's dpd_family_gru
 * uses the float versions; the double versions exist for finite-difference gradient checks.
 * Shapes as in family.h; p points at the parameter buffer laid out by dpd_family_gru.layout. */
#ifndef DPD_MODELS_GRU_H
#define DPD_MODELS_GRU_H
#include <stddef.h>

#include "dpd/dpd.h"

size_t dpd_gru_ws_size(const dpd_model_cfg *c, int B, int T);
size_t dpd_gru_scratch_size(const dpd_model_cfg *c, int B, int T);

void dpd_gru_forward_f32(const dpd_model_cfg *c, const float *p, const float *x, int B, int T,
                         float *y, float *ws);
void dpd_gru_backward_f32(const dpd_model_cfg *c, const float *p, const float *x, const float *dy,
                          int B, int T, const float *ws, float *scratch, float *dp, float *dx);
void dpd_gru_forward_f64(const dpd_model_cfg *c, const double *p, const double *x, int B, int T,
                         double *y, double *ws);
void dpd_gru_backward_f64(const dpd_model_cfg *c, const double *p, const double *x,
                          const double *dy, int B, int T, const double *ws, double *scratch,
                          double *dp, double *dx);
#endif
