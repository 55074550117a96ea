/* ls: least-squares fitting of the polynomial families (mp, gmp_ls) with LAPACK. */
#ifndef DPD_LS_H
#define DPD_LS_H
#include "dpd/dpd.h"

/* Sets the coefficients of polynomial model m so that m(x) ~ d over one sequence of n samples
 * (x, d: (n, 2)), minimising |Phi c - d|^2 + reg |D c|^2 where D scales every column of Phi to
 * unit norm (ridge on the normalised basis). DPD_E_UNSUPPORTED for a neural model or without LAPACKE; DPD_E_INVAL
 * when the system is singular (raise reg) or n is smaller than the term count. */
dpd_status dpd_ls_fit(dpd_model *m, const float *x, const float *d, size_t n, double reg,
                      dpd_error *err);
/* LAPACKE loaded (src/lazy.h), its symbols global: a fit's run calls this before its session opens,
 * so that the session's thread count reaches a threaded BLAS under it (OpenBLAS, BLIS), and a
 * missing LAPACKE is said before any run directory is made. DPD_E_UNSUPPORTED where it cannot be
 * loaded (dpd_ls_fit says the same). */
dpd_status dpd_ls_ready(dpd_error *err);
#endif
