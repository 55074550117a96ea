/* file: see file.h. */
#include "file.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "status.h"

dpd_status dpd_file_read(const char *path, char **buf, size_t *len, dpd_error *err) {
    *buf = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return dpd_fail(err, DPD_E_IO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    while (b) {
        n += fread(b + n, 1, cap - n - 1, f);
        if (n < cap - 1) break;
        char *nb = realloc(b, cap *= 2);
        if (!nb) free(b);
        b = nb;
    }
    int bad = ferror(f);
    fclose(f);
    if (!b) return dpd_fail(err, DPD_E_NOMEM, "%s: out of memory reading the file", path);
    if (bad) {
        free(b);
        return dpd_fail(err, DPD_E_IO, "%s: read error", path);
    }
    b[n] = 0;
    *buf = b;
    if (len) *len = n;
    return DPD_OK;
}

dpd_status dpd_afile_open(dpd_afile *a, const char *path, dpd_error *err) {
    snprintf(a->path, sizeof a->path, "%s", path);
    snprintf(a->tmp, sizeof a->tmp, "%s.tmp.%ld", path, (long)getpid());
    a->f = fopen(a->tmp, "wb");
    if (!a->f) return dpd_fail(err, DPD_E_IO, "%s: cannot create: %s", a->tmp, strerror(errno));
    return DPD_OK;
}

static void sync_dir(const char *path) {
    char d[4096];
    snprintf(d, sizeof d, "%s", path);
    int fd = open(dirname(d), O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

dpd_status dpd_afile_commit(dpd_afile *a, dpd_error *err) {
    int bad = fflush(a->f) != 0 || ferror(a->f) || fsync(fileno(a->f)) != 0;
    int e = errno;
    bad |= fclose(a->f) != 0;
    a->f = NULL;
    if (bad) {
        unlink(a->tmp);
        return dpd_fail(err, DPD_E_IO, "%s: write failed: %s", a->path, strerror(e));
    }
    if (rename(a->tmp, a->path) != 0) {
        e = errno;
        unlink(a->tmp);
        return dpd_fail(err, DPD_E_IO, "%s: cannot rename into place: %s", a->path, strerror(e));
    }
    sync_dir(a->path);
    return DPD_OK;
}

void dpd_afile_abort(dpd_afile *a) {
    if (a->f) fclose(a->f);
    a->f = NULL;
    unlink(a->tmp);
}

dpd_status dpd_file_write(const char *path, const void *data, size_t len, dpd_error *err) {
    dpd_afile a;
    dpd_status s = dpd_afile_open(&a, path, err);
    if (s) return s;
    if (len && fwrite(data, 1, len, a.f) != len) {
        dpd_afile_abort(&a);
        return dpd_fail(err, DPD_E_IO, "%s: write failed", path);
    }
    return dpd_afile_commit(&a, err);
}

dpd_status dpd_mkdirs(const char *path, dpd_error *err) {
    char p[4096];
    snprintf(p, sizeof p, "%s", path);
    for (char *c = p + 1;; c++) {
        if (*c == '/' || *c == 0) {
            char keep = *c;
            *c = 0;
            if (mkdir(p, 0777) != 0 && errno != EEXIST)
                return dpd_fail(err, DPD_E_IO, "%s: cannot create directory: %s", p,
                                strerror(errno));
            *c = keep;
            if (!keep) break;
        }
    }
    return DPD_OK;
}

int dpd_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

void dpd_xdg_path(const char *var, const char *home_rel, const char *rel, char *out, size_t n) {
    const char *x = getenv(var), *h = getenv("HOME");
    if (x && x[0]) snprintf(out, n, "%s/%s", x, rel);
    else snprintf(out, n, "%s/%s/%s", h ? h : ".", home_rel, rel);
}
