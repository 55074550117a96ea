/* status: status names and error records. */
#include "status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *dpd_status_str(dpd_status s) {
    switch (s) {
    case DPD_OK: return "ok";
    case DPD_E_INVAL: return "invalid argument";
    case DPD_E_IO: return "i/o error";
    case DPD_E_FORMAT: return "bad format";
    case DPD_E_NOMEM: return "out of memory";
    case DPD_E_UNSUPPORTED: return "unsupported";
    case DPD_E_DEVICE: return "device error";
    case DPD_E_ABORTED: return "cancelled";
    case DPD_E_DIVERGED: return "diverged";
    }
    return "unknown status";
}

dpd_status dpd_fail(dpd_error *err, dpd_status s, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->status = s;
        err->field[0] = 0;
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return s;
}

dpd_status dpd_fail_field(dpd_error *err, const char *field, dpd_status s, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->status = s;
        snprintf(err->field, sizeof err->field, "%s", field);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return s;
}

void dpd_error_prefix(dpd_error *err, const char *prefix) {
    if (!err) return;
    char tmp[sizeof err->msg];
    snprintf(tmp, sizeof tmp, "%s: %s", prefix, err->msg);
    memcpy(err->msg, tmp, sizeof tmp);
}
