/* init: see init.h. */
#include "init.h"

#include <math.h>
#include <stdlib.h>

void dpd_init_orthogonal(float *w, int rows, int cols, dpd_rng *rng) {
    int m = rows > cols ? rows : cols, n = rows > cols ? cols : rows;
    double *a = malloc((size_t)m * n * sizeof *a); /* (m, n), columns to orthonormalise */
    if (!a) return;                                /* init of tiny tables: cannot happen */
    for (int i = 0; i < m * n; i++) a[i] = dpd_rng_normal(rng);
    for (int j = 0; j < n; j++) { /* modified Gram-Schmidt: R's diagonal comes out positive */
        for (int k = 0; k < j; k++) {
            double d = 0;
            for (int i = 0; i < m; i++) d += a[i * n + k] * a[i * n + j];
            for (int i = 0; i < m; i++) a[i * n + j] -= d * a[i * n + k];
        }
        double norm = 0;
        for (int i = 0; i < m; i++) norm += a[i * n + j] * a[i * n + j];
        norm = sqrt(norm);
        for (int i = 0; i < m; i++) a[i * n + j] /= norm;
    }
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++)
            w[r * cols + c] = (float)(rows >= cols ? a[r * n + c] : a[c * n + r]);
    free(a);
}

void dpd_init_uniform(float *w, size_t n, double b, dpd_rng *rng) {
    for (size_t i = 0; i < n; i++) w[i] = (float)((2.0 * dpd_rng_uniform(rng) - 1.0) * b);
}

void dpd_init_xavier(float *w, int rows, int cols, int fan_in, int fan_out, dpd_rng *rng) {
    dpd_init_uniform(w, (size_t)rows * cols, sqrt(6.0 / (fan_in + fan_out)), rng);
}
