/* file: see file.h. */
#include "file.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

dpd_status cli_file_read(const char *path, char **buf, size_t *len, dpd_error *err) {
    *buf = NULL, *len = 0;
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f) return cli_err(err, DPD_E_IO, "%s: %s", path, strerror(errno));
    if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode)) {
        fclose(f);
        return cli_err(err, DPD_E_IO, "%s: not a regular file", path);
    }
    size_t n = (size_t)st.st_size;
    char *b = malloc(n ? n : 1);
    if (!b) {
        fclose(f);
        return cli_err(err, DPD_E_NOMEM, "%s: out of memory for %zu bytes", path, n);
    }
    size_t got = fread(b, 1, n, f);
    int bad = ferror(f);
    fclose(f);
    if (bad || got != n) {
        free(b);
        return cli_err(err, DPD_E_IO, "%s: read failed (%zu of %zu bytes)", path, got, n);
    }
    *buf = b, *len = n;
    return DPD_OK;
}

dpd_status cli_out_open(cli_out *o, const char *path, dpd_error *err) {
    memset(o, 0, sizeof *o);
    if (strlen(path) >= sizeof o->path) return cli_err(err, DPD_E_INVAL, "%s: path too long", path);
    snprintf(o->path, sizeof o->path, "%s", path);
    snprintf(o->tmp, sizeof o->tmp, "%s.tmp.%ld", path, (long)getpid());
    if (!(o->f = fopen(o->tmp, "wb"))) return cli_err(err, DPD_E_IO, "%s: %s", o->tmp, strerror(errno));
    return DPD_OK;
}

/* fsync of the directory holding path, so the rename itself is durable (best effort). */
static void sync_dir(const char *path) {
    char d[4096];
    snprintf(d, sizeof d, "%s", path);
    int fd = open(dirname(d), O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

dpd_status cli_out_commit(cli_out *o, dpd_error *err) {
    int bad = fflush(o->f) || ferror(o->f) || fsync(fileno(o->f));
    int e = errno;
    bad |= fclose(o->f) != 0;
    o->f = NULL;
    if (bad || rename(o->tmp, o->path)) {
        if (!bad) e = errno;
        unlink(o->tmp);
        o->tmp[0] = 0;
        return cli_err(err, DPD_E_IO, "%s: write failed: %s", o->path, strerror(e));
    }
    o->tmp[0] = 0;
    sync_dir(o->path);
    return DPD_OK;
}

void cli_out_abort(cli_out *o) {
    if (o->f) fclose(o->f);
    o->f = NULL;
    if (o->tmp[0]) unlink(o->tmp);
    o->tmp[0] = 0;
}
