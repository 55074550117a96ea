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

/* What a non-regular file is, for messages. */
static const char *kind_of(mode_t m) {
    return S_ISFIFO(m) ? "a FIFO (named pipe)" : S_ISDIR(m) ? "a directory" : S_ISCHR(m) ? "a character device"
         : S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" : "not a plain file";
}

/* n bytes as "1.5 GiB" / "4 MiB" / "12 KiB" / "7 bytes" for messages. */
static void human(uint64_t n, char *out, size_t size) {
    static const char *const unit[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)n;
    int u = 0;
    while (v >= 1024 && u < 4) v /= 1024, u++;
    if (u == 0) snprintf(out, size, "%llu bytes", (unsigned long long)n);
    else snprintf(out, size, v == (double)(uint64_t)v ? "%.0f %s" : "%.1f %s", v, unit[u]);
}

dpd_status dpd_file_open(const char *path, uint64_t max, const char *what, int *fd, uint64_t *size,
                         dpd_error *err) {
    *fd = -1;
    *size = 0;
    int f = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (f < 0) return dpd_fail(err, DPD_E_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(f, &st) != 0) {
        int e = errno;
        close(f);
        return dpd_fail(err, DPD_E_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        struct stat ls;
        int link = lstat(path, &ls) == 0 && S_ISLNK(ls.st_mode);
        close(f);
        return dpd_fail(err, DPD_E_IO, "%s: is %s%s, not a regular file (a %s must be a regular file)", path,
                        kind_of(st.st_mode), link ? " (through a symbolic link)" : "", what);
    }
    if ((uint64_t)st.st_size > max) {
        char have[32], lim[32];
        human((uint64_t)st.st_size, have, sizeof have);
        human(max, lim, sizeof lim);
        close(f);
        return dpd_fail(err, DPD_E_FORMAT, "%s: %llu bytes (%s) is larger than the %s limit of %llu bytes (%s): refused",
                        path, (unsigned long long)st.st_size, have, what, (unsigned long long)max, lim);
    }
    int fl = fcntl(f, F_GETFL);
    if (fl < 0 || fcntl(f, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        int e = errno;
        close(f);
        return dpd_fail(err, DPD_E_IO, "%s: cannot set blocking reads: %s", path, strerror(e));
    }
    *fd = f;
    *size = (uint64_t)st.st_size;
    return DPD_OK;
}

dpd_status dpd_read_file(const char *path, uint64_t max, const char *what, char **buf, size_t *len,
                         dpd_error *err) {
    return dpd_file_read_max(path, max ? max : DPD_MAX_TEXT_BYTES, what, buf, len, err);
}

dpd_status dpd_file_read_max(const char *path, uint64_t max, const char *what, char **buf, size_t *len,
                             dpd_error *err) {
    *buf = NULL;
    int fd;
    uint64_t size;
    dpd_status s = dpd_file_open(path, max, what, &fd, &size, err);
    if (s) return s;
    /* fstat's size first; a file that grows while read (or a /proc file reporting 0) grows the
     * buffer, never past max */
    size_t cap = (size_t)size + 1 > 4096 ? (size_t)size + 1 : 4096, n = 0;
    char *b = malloc(cap);
    for (;;) {
        if (!b) {
            close(fd);
            return dpd_fail(err, DPD_E_NOMEM, "%s: out of memory reading %zu bytes", path, cap);
        }
        if (n == cap - 1) {
            if (n >= max) {
                free(b);
                close(fd);
                return dpd_fail(err, DPD_E_FORMAT, "%s: grew past the %s limit of %llu bytes while read: refused",
                                path, what, (unsigned long long)max);
            }
            size_t ncap = cap - 1 < max - (cap - 1) ? 2 * cap : (size_t)max + 1;
            char *nb = realloc(b, ncap);
            if (!nb) free(b);
            b = nb, cap = ncap;
            continue;
        }
        ssize_t r = read(fd, b + n, cap - 1 - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            int e = errno;
            free(b);
            close(fd);
            return dpd_fail(err, DPD_E_IO, "%s: read error: %s", path, strerror(e));
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    close(fd);
    b[n] = 0;
    *buf = b;
    if (len) *len = n;
    return DPD_OK;
}

dpd_status dpd_file_read(const char *path, char **buf, size_t *len, dpd_error *err) {
    return dpd_file_read_max(path, DPD_MAX_TEXT_BYTES, "file", buf, len, err);
}

dpd_status dpd_replaceable(const char *path, dpd_error *err) {
    struct stat st;
    if (!lstat(path, &st) && S_ISLNK(st.st_mode)) { /* the rename would put a file where the link was */
        char to[4096];
        ssize_t n = readlink(path, to, sizeof to - 1);
        to[n > 0 ? n : 0] = 0;
        return dpd_fail(err, DPD_E_IO, "%s is a symbolic link (to %s): dpd writes a file whole and renames it into "
                                       "place, which would replace the link; give the file's own path", path, to);
    }
    if (!lstat(path, &st) && !S_ISREG(st.st_mode))
        return dpd_fail(err, DPD_E_IO, "%s is %s: dpd writes regular files (whole, then renamed into place)", path,
                        kind_of(st.st_mode));
    return DPD_OK;
}

dpd_status dpd_afile_open(dpd_afile *a, const char *path, dpd_error *err) {
    a->f = NULL;
    dpd_status s = dpd_replaceable(path, err);
    if (s) return s;
    snprintf(a->path, sizeof a->path, "%s", path);
    snprintf(a->tmp, sizeof a->tmp, "%s.tmp.%ld", path, (long)getpid());
    a->f = fopen(a->tmp, "wb");
    if (!a->f) return dpd_fail(err, DPD_E_IO, "%s: cannot create: %s", a->path, strerror(errno));
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
