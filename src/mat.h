/* mat: MATLAB .mat files through matio, for the recordings of record.c (the public calls,
 * dpd_mat_read_pair and dpd_mat_write_model, are declared in dpd/dpd.h). */
#ifndef DPD_MAT_H
#define DPD_MAT_H
#include "dpd/dpd.h"

/* One signal: variable var (NULL: the first of x, iq, input, in) as (n, 2) doubles, malloc'd (NULL
 * on failure), and the real scalar fsvar (NULL: fs, else Fs) in *fs, 0 when absent. Failures as
 * dpd_mat_read_pair's. */
dpd_status dpd_mat_read_signal(const char *path, const char *var, const char *fsvar, double **iq, size_t *n,
                               double *fs, dpd_error *err);

/* dpd run's output: y (n, 2) as a complex single column meta->var (NULL: y), in (may be NULL) as
 * a complex double column meta->var_in (NULL: x), meta->fs (when > 0) as the double scalar
 * meta->var_fs (NULL: fs); v7.3 when meta->mat73. meta may be NULL. Atomic. DPD_E_INVAL (field
 * "var") for a name MATLAB would refuse, DPD_E_UNSUPPORTED for v7.3 without HDF5, DPD_E_IO. */
dpd_status dpd_mat_write_signal(const char *path, const float *y, const double *in, size_t n,
                                const dpd_recording_meta *meta, dpd_error *err);
#endif
