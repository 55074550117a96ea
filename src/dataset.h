/* dataset: internals shared with the command line (CSV reading for `dpd run`). */
#ifndef DPD_DATASET_H
#define DPD_DATASET_H
#include <jansson.h>
#include <math.h>

#include "dpd/dpd.h"

/* The splits' names by index (DPD_TRAIN, DPD_VAL, DPD_TEST): "train", "val", "test", as their
 * files, spec.json's split_ratios and config.json name them. */
extern const char *const dpd_split_names[DPD_NSPLIT];

/* Whether v, as read, is a sample dpd can hold: finite as the float it becomes (not NaN, an
 * infinity, or a magnitude beyond 3.4e38). The readers' one test (CSV, .mat, the doctor's). */
static inline int dpd_sample_ok(double v) { return isfinite((float)v); }

/* Reads a CSV with a header line into out (rows, ncol) of doubles (malloc'd). names[k] is the
 * header name of output column k (other columns are ignored); with names == NULL the file must
 * have exactly ncol columns, taken in order. Non-numeric, non-finite, missing or extra fields,
 * a missing header and an empty file are DPD_E_FORMAT naming the file and line. */
dpd_status dpd_csv_read(const char *path, int ncol, const char *const *names, double **out,
                        size_t *rows, dpd_error *err);

/* An I/Q file (a dataset's split file, a CSV recording): columns named I and Q (in any case)
 * among others, or, when the header names no I and Q, exactly two columns read as I then Q, as
 * OpenDPD reads them whatever their names: *by_position then says so (the caller warns, since
 * such a header may not mean I then Q); with both failing, the by-position reading's error. */
dpd_status dpd_csv_read_iq(const char *path, double **iq, size_t *n, int *by_position, dpd_error *err);

/* The number in [f, e), spaces and tabs around it allowed, as strtod_l reads it in the C locale,
 * bit for bit: 1 with *v set; 0 when [f, e) is empty, not one number or 128 bytes or more. The
 * CSV readers' (the loader's and the doctor's) one parser. */
int dpd_csv_number(const char *f, const char *e, double *v);

/* 1 when the header field [f, f + len) is name, spaces and tabs around it and case aside ("I, q"
 * names Q). */
int dpd_csv_names(const char *f, int len, const char *name);

/* The header's fields f[j] (len[j] bytes, j < nf) that names[k] name (k < ncol): pick[k] = j, or -1
 * when none does. The CSV readers' (the loader's and the doctor's) one rule: DPD_E_FORMAT naming
 * path when a name is given by two fields ("I,Q,i,q" would leave which to read unsaid); else
 * DPD_OK, missing names left to the caller. */
dpd_status dpd_csv_pick(const char *path, const char *const *f, const int *len, int nf, const char *const *names,
                        int ncol, int *pick, dpd_error *err);

/* For a first line [p, e) that was refused: a clause for the message when its fields are separated
 * by ';' or a tab (a spreadsheet's export in a locale with decimal commas), saying that dpd reads
 * comma-separated values with decimal points and how to convert; else "". A header (numbers 0)
 * with a comma is taken as comma-separated whatever its names hold; a line of numbers (numbers 1)
 * may have decimal commas beside its separators. */
const char *dpd_csv_sep_hint(const char *p, const char *e, int numbers);

/* 3 when [p, end) starts with a UTF-8 byte-order mark (as spreadsheets write it), else 0: the
 * header starts after it. */
size_t dpd_csv_bom(const char *p, const char *end);

/* The first top-level key of spec.json's object root that dpd does not know and whose nearest
 * known key (dpd_nearest) is key: a misspelling of key, for the message where key is missing
 * (the loader's and the doctor's); NULL: none. The text is root's. */
const char *dpd_spec_misspelling(const json_t *root, const char *key);

/* DPD_OK when dir is a directory; else DPD_E_IO saying "DIR: no such directory" or "DIR: not a
 * directory (give the dataset's directory, which holds spec.json)". The loader's and the doctor's. */
dpd_status dpd_dataset_dir_ok(const char *dir, dpd_error *err);
#endif
