/* record: recordings for `dpd run` and front ends — an OpenDPD-style CSV (columns I and Q found
 * by name, others ignored) or raw little-endian interleaved float32 IQ (.cf32). Reading
 * validates every sample; writing is atomic (the file appears whole or not at all). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dataset.h"
#include "dpd/dpd.h"
#include "file.h"
#include "status.h"

static int is_cf32(const char *path) {
    size_t n = strlen(path);
    return n > 5 && !strcmp(path + n - 5, ".cf32");
}

/* Streams the file in bounded chunks straight into the float64 output (never the whole file in
 * memory twice); at most DPD_MAX_CF32_BYTES. */
static dpd_status read_cf32(const char *path, double **iq, size_t *n, dpd_error *err) {
    int fd;
    uint64_t len;
    dpd_status s = dpd_file_open(path, DPD_MAX_CF32_BYTES, ".cf32 recording", &fd, &len, err);
    if (s) return s;
    if (len == 0 || len % 8) {
        close(fd);
        return dpd_fail(err, DPD_E_FORMAT, "%s: %llu bytes is %s I/Q float32 pairs (8 bytes each)", path,
                        (unsigned long long)len, len ? "not a whole number of" : "empty: no");
    }
    size_t m = (size_t)(len / 8);
    double *v = malloc(m * 2 * sizeof *v);
    if (!v) {
        close(fd);
        return dpd_fail(err, DPD_E_NOMEM, "%s: out of memory for %zu samples", path, m);
    }
    enum { CHUNK = 8192 }; /* floats per read: 32 KiB */
    float chunk[CHUNK];
    size_t i = 0; /* floats converted so far */
    while (i < 2 * m) {
        size_t want = 2 * m - i < CHUNK ? 2 * m - i : CHUNK, got = 0;
        while (got < want * 4) {
            ssize_t r = read(fd, (char *)chunk + got, want * 4 - got);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) {
                s = r < 0 ? dpd_fail(err, DPD_E_IO, "%s: read error: %s", path, strerror(errno))
                          : dpd_fail(err, DPD_E_IO, "%s: shrank to %zu bytes while read (was %llu)", path,
                                     4 * i + got, (unsigned long long)len);
                goto fail;
            }
            got += (size_t)r;
        }
        for (size_t k = 0; k < want; k++, i++) {
            if (!isfinite(chunk[k])) {
                s = dpd_fail(err, DPD_E_FORMAT, "%s: sample %zu (byte %zu) has a non-finite %s value", path, i / 2,
                             4 * i, i % 2 ? "Q" : "I");
                goto fail;
            }
            v[i] = chunk[k];
        }
    }
    close(fd);
    *iq = v, *n = m;
    return DPD_OK;
fail:
    close(fd);
    free(v);
    return s;
}

dpd_status dpd_recording_read(const char *path, double **iq, size_t *n, dpd_error *err) {
    static const char *const names[2] = {"I", "Q"};
    *iq = NULL, *n = 0;
    return is_cf32(path) ? read_cf32(path, iq, n, err) : dpd_csv_read(path, 2, names, iq, n, err);
}

/* Shortest of %.15g / %.17g that reads back to v. */
static void put_double(FILE *f, double v) {
    char b[40];
    snprintf(b, sizeof b, "%.15g", v);
    if (strtod(b, NULL) != v) snprintf(b, sizeof b, "%.17g", v);
    fputs(b, f);
}

dpd_status dpd_recording_write(const char *path, const float *y, const double *in, size_t n, dpd_error *err) {
    dpd_afile a;
    dpd_status s = dpd_afile_open(&a, path, err);
    if (s) return s;
    if (is_cf32(path)) {
        if (fwrite(y, sizeof *y, 2 * n, a.f) != 2 * n) {
            dpd_afile_abort(&a);
            return dpd_fail(err, DPD_E_IO, "%s: write failed", path);
        }
    } else {
        fputs(in ? "I,Q,I_in,Q_in\n" : "I,Q\n", a.f);
        for (size_t i = 0; i < n; i++) {
            fprintf(a.f, "%.9g,%.9g", y[2 * i], y[2 * i + 1]);
            if (in) {
                fputc(',', a.f);
                put_double(a.f, in[2 * i]);
                fputc(',', a.f);
                put_double(a.f, in[2 * i + 1]);
            }
            fputc('\n', a.f);
        }
    }
    return dpd_afile_commit(&a, err);
}
