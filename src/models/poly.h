/* poly: the polynomial families' term table, shared with the least-squares fit (src/ls.c). */
#ifndef DPD_MODELS_POLY_H
#define DPD_MODELS_POLY_H
#include "dpd/dpd.h"

/* Term x[n-q] |x[n-q-m]|^k. */
typedef struct dpd_term {
    int k, q, m;
} dpd_term;

/* Fills t (when non-NULL) with the family's terms in coefficient order; returns their count. */
int dpd_poly_terms(const dpd_model_cfg *c, dpd_term *t);
#endif
