/* ls: see ls.h. Normal equations accumulated in double complex, columns scaled to unit norm,
 * ridge-regularised, solved by Cholesky (LAPACKE_zposv, loaded at the first fit: lazy.h). Cost O(n P^2)
 * time and O(P^2) memory. */
#include "ls.h"

#include <complex.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lazy.h"
#include "model.h"
#include "models/poly.h"
#include "status.h"

static lazy_lib lapacke = {DPD_LAPACKE_SONAME, "liblapacke", 1};
static __typeof__(LAPACKE_zposv) *zposv;

dpd_status dpd_ls_ready(dpd_error *err) {
    return lazy_load(&lapacke, (const char *const[]){"LAPACKE_zposv"}, (void **)&zposv, 1)
               ? DPD_OK
               : lazy_fail(&lapacke, "least squares solves with LAPACKE", err);
}

dpd_status dpd_ls_fit(dpd_model *m, const float *x, const float *d, size_t n, double reg,
                      dpd_error *err) {
    const dpd_model_cfg *c = dpd_model_config(m);
    if (!dpd_model_family(m)->poly)
        return dpd_fail(err, DPD_E_UNSUPPORTED, "least squares fits only mp and gmp_ls, not %s", c->family);
    if (dpd_ls_ready(err)) return DPD_E_UNSUPPORTED;
    int P = dpd_poly_terms(c, NULL);
    if (n < (size_t)P)
        return dpd_fail(err, DPD_E_INVAL, "%zu samples cannot fit %d coefficients", n, P);
    dpd_term *t = malloc((size_t)P * sizeof *t);
    double complex *G = calloc((size_t)P * P + 2 * (size_t)P, sizeof *G), *b = G ? G + (size_t)P * P : NULL,
                   *phi = b ? b + P : NULL;
    double *r = malloc(n * sizeof *r);
    dpd_status s = DPD_OK;
    if (!t || !G || !r) {
        s = dpd_fail(err, DPD_E_NOMEM, "out of memory for a %d x %d least-squares system", P, P);
        goto done;
    }
    dpd_poly_terms(c, t);
    for (size_t i = 0; i < n; i++) r[i] = hypot(x[2 * i], x[2 * i + 1]);
    for (size_t s0 = 0; s0 < n; s0++) {
        for (int p = 0; p < P; p++) { /* the row of Phi for output sample s0 */
            long a = (long)s0 - t[p].q, e = a - t[p].m;
            phi[p] = 0;
            if (a < 0 || e < 0 || e >= (long)n) continue;
            phi[p] = (x[2 * a] + I * x[2 * a + 1]) * pow(r[e], t[p].k);
        }
        double complex dv = d[2 * s0] + I * d[2 * s0 + 1];
        for (int p = 0; p < P; p++) {
            double complex cp = conj(phi[p]);
            b[p] += cp * dv;
            double complex *g = G + (size_t)p * P; /* upper triangle, row p: columns q >= p */
            for (int q = p; q < P; q++) g[q] += cp * phi[q];
        }
    }
    for (int p = 0; p < P; p++) { /* unit-norm columns, then the ridge */
        double sp = sqrt(creal(G[(size_t)p * P + p]));
        r[p] = sp > 0 ? 1 / sp : 0;
    }
    for (int p = 0; p < P; p++) {
        for (int q = p; q < P; q++) G[(size_t)p * P + q] *= r[p] * r[q];
        G[(size_t)p * P + p] += reg;
        b[p] *= r[p];
    }
    /* G holds the upper triangle of the Hermitian Gram matrix, row-major. */
    lapack_int info = zposv(LAPACK_ROW_MAJOR, 'U', P, 1, (lapack_complex_double *)G, P, (lapack_complex_double *)b, 1);
    if (info) {
        s = dpd_fail(err, DPD_E_INVAL,
                     "least squares: the %d-term system is singular (LAPACK info %d); raise ls_reg or "
                     "lower --K/--Q/--M",
                     P, (int)info);
        goto done;
    }
    float *cf = dpd_model_params(m);
    for (int p = 0; p < P; p++) {
        double complex v = b[p] * r[p];
        cf[2 * p] = (float)creal(v), cf[2 * p + 1] = (float)cimag(v);
    }
done:
    free(t), free(G), free(r);
    return s;
}
