/* blas_probe: stands in for OpenBLAS in the tests (LD_PRELOAD); appends each thread count dpd
 * sets to the file named by DPD_BLAS_LOG. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((visibility("default"))) void openblas_set_num_threads(int n) {
    const char *log = getenv("DPD_BLAS_LOG");
    FILE *f = log ? fopen(log, "a") : NULL;
    if (f) fprintf(f, "%d\n", n), fclose(f);
}
