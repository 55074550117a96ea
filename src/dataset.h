/* dataset: internals shared with the command line (CSV reading for `dpd run`). */
#ifndef DPD_DATASET_H
#define DPD_DATASET_H
#include "dpd/dpd.h"

/* Reads a CSV with a header line into out (rows, ncol) of doubles (malloc'd). names[k] is the
 * header name of output column k (other columns are ignored); with names == NULL the file must
 * have exactly ncol columns, taken in order. Non-numeric, non-finite, missing or extra fields,
 * a missing header and an empty file are DPD_E_FORMAT naming the file and line. */
dpd_status dpd_csv_read(const char *path, int ncol, const char *const *names, double **out,
                        size_t *rows, dpd_error *err);
#endif
