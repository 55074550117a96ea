/* fuzz: helpers shared by the libFuzzer harnesses of tests/fuzz/ (header only; each harness is
 * one .c file). The public API reads files by path, so each process makes one scratch directory
 * under $TMPDIR (default /tmp) on first use, writes each input there and reuses the names; the
 * directory is removed at exit. Everything here aborts on an environment failure (a full disk
 * is not a finding, but silently fuzzing nothing would be worse). */
#ifndef DPD_FUZZ_H
#define DPD_FUZZ_H

#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dpd/dpd.h"

static char fz_root[4096];

static inline int fz_rm_one(const char *p, const struct stat *st, int flag, struct FTW *f) {
    (void)st, (void)flag, (void)f;
    return remove(p), 0;
}

static inline void fz_rmtree(const char *dir) { nftw(dir, fz_rm_one, 16, FTW_DEPTH | FTW_PHYS); }

static inline void fz_cleanup(void) {
    if (fz_root[0]) fz_rmtree(fz_root);
}

/* The process's scratch directory, made on first call. */
static inline const char *fz_dir(void) {
    if (fz_root[0]) return fz_root;
    const char *t = getenv("TMPDIR");
    snprintf(fz_root, sizeof fz_root, "%s/dpd-fuzz-XXXXXX", t && t[0] ? t : "/tmp");
    if (!mkdtemp(fz_root)) perror(fz_root), abort();
    atexit(fz_cleanup);
    return fz_root;
}

/* fz_dir()/rel into out (of 4096 bytes). */
static inline char *fz_path(char *out, const char *rel) {
    snprintf(out, 4096, "%s/%s", fz_dir(), rel);
    return out;
}

static inline void fz_mkdir(const char *path) {
    if (mkdir(path, 0755) && !(access(path, F_OK) == 0)) perror(path), abort();
}

/* Writes n bytes to path (truncating it). */
static inline void fz_write(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(data, 1, n, f) != n) || fclose(f)) perror(path), abort();
}

static inline void fz_write_str(const char *path, const char *s) { fz_write(path, s, strlen(s)); }

/* Points XDG_CONFIG_HOME and XDG_DATA_HOME into the scratch directory (the user's settings and
 * packs are never read or touched). */
static inline void fz_xdg(void) {
    char path[4096];
    setenv("XDG_CONFIG_HOME", fz_path(path, "config"), 1);
    setenv("XDG_DATA_HOME", fz_path(path, "data"), 1);
}

/* With DPD_FUZZ_VERBOSE set (replaying seeds by hand), prints what the library said. */
static inline void fz_note(const char *what, dpd_status s, const dpd_error *err) {
    static int verbose = -1;
    if (verbose < 0) verbose = getenv("DPD_FUZZ_VERBOSE") != NULL;
    if (verbose) fprintf(stderr, "%s: %s%s%s\n", what, dpd_status_str(s), s ? ": " : "", s ? err->msg : "");
}

#endif
