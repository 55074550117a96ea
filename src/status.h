/* status: filling a caller's dpd_error. Does not log or print. */
#ifndef DPD_STATUS_H
#define DPD_STATUS_H
#include "dpd/dpd.h"

/* Sets err (may be NULL) to status s with a printf-style message; returns s so callers can
 * `return dpd_fail(err, DPD_E_IO, "...")`. */
dpd_status dpd_fail(dpd_error *err, dpd_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* dpd_fail about one configuration field: err->field = field (the message should start with it,
 * "hidden: ..."), so front ends can name it their way. */
dpd_status dpd_fail_field(dpd_error *err, const char *field, dpd_status s, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Prefixes err->msg with "prefix: " (used to add the file name to a lower-level message). */
void dpd_error_prefix(dpd_error *err, const char *prefix);

#endif
