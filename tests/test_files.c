/* test_files: whole-file reads of outside input (issue 9, items 4 and 10) — a FIFO, a directory
 * and /dev/zero behind a symlink are refused at once naming the path and what it is (a FIFO never
 * blocks: alarm(10) ends a hung test); sparse 10 GiB recordings are refused naming the size and
 * the limit without reading them; a long .cf32 is streamed sample-exact and its errors keep their
 * sample numbers; the atomic writer's messages name the target, never the temporary file. */
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "dpd/dpd.h"
#include "file.h"

#define GIB (1ull << 30)

static char paths[16][512];
static int npaths;

static const char *join(const char *dir, const char *name) {
    char *p = paths[npaths++ % 16];
    snprintf(p, 512, "%s/%s", dir, name);
    return p;
}

/* A sparse file of `size` bytes (no disk used). */
static const char *sparse(const char *dir, const char *name, unsigned long long size) {
    const char *p = join(dir, name);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ftruncate(fd, (off_t)size) != 0) {
        perror(p);
        exit(2);
    }
    close(fd);
    return p;
}

static int has(const char *msg, const char *a, const char *b) { return strstr(msg, a) && (!b || strstr(msg, b)); }

/* dpd_file_read of something that is not a regular file: DPD_E_IO naming path and kind. */
static void not_regular(const char *what, const char *path, const char *kind) {
    char *buf = (char *)1;
    size_t len = 7;
    dpd_error err = {0};
    dpd_status s = dpd_file_read(path, &buf, &len, &err);
    CHECK(s == DPD_E_IO && buf == NULL, "%s: file_read status %s", what, dpd_status_str(s));
    CHECK(has(err.msg, path, kind) && strstr(err.msg, "not a regular file"), "%s: message '%s' lacks the path or '%s'",
          what, err.msg, kind);
    if (s == DPD_OK) free(buf);
}

static void recording_refused(const char *what, const char *path, dpd_status want, const char *n1, const char *n2) {
    double *iq = NULL;
    size_t n = 0;
    dpd_error err = {0};
    dpd_status s = dpd_recording_read(path, &iq, &n, &err);
    CHECK(s == want && iq == NULL && n == 0, "%s: status %s, want %s (%s)", what, dpd_status_str(s),
          dpd_status_str(want), err.msg);
    CHECK(has(err.msg, path, NULL) && has(err.msg, n1, n2), "%s: message '%s' lacks the path, '%s' or '%s'", what,
          err.msg, n1, n2 ? n2 : "");
    if (s == DPD_OK) free(iq);
}

static void kinds(const char *d) {
    const char *fifo = join(d, "pipe.cf32"), *fcsv = join(d, "pipe.csv"), *zero = join(d, "zero.cf32");
    CHECK(mkfifo(fifo, 0600) == 0 && mkfifo(fcsv, 0600) == 0, "mkfifo");
    CHECK(symlink("/dev/zero", zero) == 0, "symlink");
    not_regular("FIFO", fifo, "FIFO");
    not_regular("directory", d, "directory");
    not_regular("/dev/zero via a symlink", zero, "character device");
    recording_refused("FIFO as a .cf32 recording", fifo, DPD_E_IO, "FIFO", "not a regular file");
    recording_refused("FIFO as a CSV recording", fcsv, DPD_E_IO, "FIFO", "not a regular file");
    recording_refused("/dev/zero as a .cf32 recording", zero, DPD_E_IO, "character device", NULL);
    const char *dir = join(d, "sub.cf32");
    CHECK(mkdir(dir, 0700) == 0, "mkdir");
    recording_refused("a directory as a recording", dir, DPD_E_IO, "directory", NULL);
}

static void limits(const char *d) {
    char sz[32];
    snprintf(sz, sizeof sz, "%llu", 10 * GIB);
    recording_refused("10 GiB sparse .cf32", sparse(d, "big.cf32", 10 * GIB), DPD_E_FORMAT, sz, "limit");
    recording_refused("10 GiB sparse CSV recording", sparse(d, "big.csv", 10 * GIB), DPD_E_FORMAT, sz, "limit");
    double *rows = NULL;
    size_t n = 0;
    dpd_error err = {0};
    const char *csv = sparse(d, "rows.csv", 10 * GIB);
    dpd_status s = dpd_csv_read(csv, 2, NULL, &rows, &n, &err);
    CHECK(s == DPD_E_FORMAT && has(err.msg, csv, sz) && strstr(err.msg, "limit"), "10 GiB CSV: %s '%s'",
          dpd_status_str(s), err.msg);
    if (!s) free(rows);
}

/* A .cf32 of many chunks reads back exactly; a NaN far in keeps its sample and byte number. */
static void cf32(const char *d) {
    enum { N = 300000 }; /* 2.4 MB: several read chunks */
    float *y = malloc(2 * N * sizeof *y);
    for (size_t i = 0; i < 2 * N; i++) y[i] = (float)((double)i * 1e-3 - 7.25);
    const char *p = join(d, "long.cf32");
    dpd_error err = {0};
    CHECK(dpd_recording_write(p, y, NULL, N, &err) == DPD_OK, "write: %s", err.msg);
    double *iq = NULL;
    size_t n = 0;
    CHECK(dpd_recording_read(p, &iq, &n, &err) == DPD_OK && n == N, "read long .cf32: %s", err.msg);
    int same = iq != NULL;
    for (size_t i = 0; same && i < 2 * N; i++) same = iq[i] == (double)y[i];
    CHECK(same, "long .cf32 reads back sample-exact");
    free(iq);
    y[2 * 250001 + 1] = NAN;
    CHECK(dpd_recording_write(p, y, NULL, N, &err) == DPD_OK, "write: %s", err.msg);
    recording_refused("NaN deep in a .cf32", p, DPD_E_FORMAT, "sample 250001 (byte 2000012)", "Q");
    y[2 * 250001 + 1] = 0;
    CHECK(dpd_recording_write(p, y, NULL, 1, &err) == DPD_OK, "write: %s", err.msg);
    CHECK(truncate(p, 7) == 0, "truncate");
    recording_refused("partial sample", p, DPD_E_FORMAT, "7 bytes", "not a whole number");
    CHECK(truncate(p, 0) == 0, "truncate");
    recording_refused("empty .cf32", p, DPD_E_FORMAT, "empty", NULL);
    free(y);
}

/* Write errors name the target the caller asked for, not the temporary beside it. */
static void writer(const char *d) {
    const char *p = join(d, "no/such/dir/out.cf32");
    float y[2] = {1, 2};
    dpd_error err = {0};
    dpd_status s = dpd_recording_write(p, y, NULL, 1, &err);
    CHECK(s == DPD_E_IO && strstr(err.msg, p) && !strstr(err.msg, ".tmp"), "write into a missing directory: %s '%s'",
          dpd_status_str(s), err.msg);
    err.msg[0] = 0;
    s = dpd_file_write(p, "x", 1, &err);
    CHECK(s == DPD_E_IO && strstr(err.msg, p) && !strstr(err.msg, ".tmp"), "file_write: %s '%s'", dpd_status_str(s),
          err.msg);
}

int main(void) {
    alarm(10); /* a FIFO that blocks ends the test instead of hanging it */
    const char *d = check_tmpdir();
    kinds(d);
    limits(d);
    cf32(d);
    writer(d);
    char *buf;
    size_t len;
    dpd_error err;
    check_write(d, "small.txt", "hello\n");
    CHECK(dpd_file_read(join(d, "small.txt"), &buf, &len, &err) == DPD_OK && len == 6 && !strcmp(buf, "hello\n"),
          "regular file read whole, NUL-terminated");
    free(buf);
    return check_done("files");
}
