/* file: whole-file reads, atomic writes (temporary file, fsync, rename, fsync of the directory)
 * and directory creation. Nothing here knows about file contents. */
#ifndef DPD_FILE_H
#define DPD_FILE_H
#include <stdio.h>

#include "dpd/dpd.h"

/* Reads a whole file into a malloc'd, NUL-terminated buffer. DPD_E_IO naming the path. */
dpd_status dpd_file_read(const char *path, char **buf, size_t *len, dpd_error *err);

/* An atomic writer: write through f, then commit (the file appears whole under path) or abort
 * (nothing appears, the temporary file is removed). */
typedef struct dpd_afile {
    FILE *f;
    char path[4096];
    char tmp[4200];
} dpd_afile;

dpd_status dpd_afile_open(dpd_afile *a, const char *path, dpd_error *err);
dpd_status dpd_afile_commit(dpd_afile *a, dpd_error *err); /* closes in every case */
void dpd_afile_abort(dpd_afile *a);

dpd_status dpd_file_write(const char *path, const void *data, size_t len, dpd_error *err);

/* mkdir -p. */
dpd_status dpd_mkdirs(const char *path, dpd_error *err);

/* The XDG base directory path: $VAR/rel when VAR is set and non-empty, else $HOME/home_rel/rel
 * (./home_rel/rel without HOME). For $XDG_CONFIG_HOME ".config", $XDG_DATA_HOME ".local/share". */
void dpd_xdg_path(const char *var, const char *home_rel, const char *rel, char *out, size_t n);

/* 1 when path exists. */
int dpd_exists(const char *path);

#endif
