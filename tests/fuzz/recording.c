/* Fuzzes recordings as dpd run reads them: the input as a raw .cf32 file and as a CSV (columns I
 * and Q by name), through dpd_recording_read. A successful read has n > 0 finite samples. */
#include <math.h>

#include "fuzz.h"

static void one(const char *path) {
    double *iq = NULL;
    size_t n = 0;
    dpd_error err;
    if (!dpd_recording_read(path, &iq, &n, &err)) {
        if (!n || !iq) abort();
        for (size_t i = 0; i < 2 * n; i++)
            if (!isfinite(iq[i])) abort(); /* non-finite samples are refused */
    } else if (iq) {
        abort(); /* NULL on failure, says the contract */
    }
    free(iq);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char path[4096];
    fz_write(fz_path(path, "in.cf32"), data, size);
    one(path);
    fz_write(fz_path(path, "in.csv"), data, size);
    one(path);
    return 0;
}
