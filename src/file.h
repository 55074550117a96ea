/* file: whole-file reads, atomic writes (temporary file, fsync, rename, fsync of the directory)
 * and directory creation. Nothing here knows about file contents. */
#ifndef DPD_FILE_H
#define DPD_FILE_H
#include <stdint.h>
#include <stdio.h>

#include "dpd/dpd.h"

/* What each kind of file read from outside can legitimately be. Larger files are refused before
 * anything is read (DPD_E_FORMAT naming the path, its size and the limit), so a sparse or hostile
 * file never costs more memory than its kind could. */
#define DPD_MAX_TEXT_BYTES (256ull << 20) /* dpd_file_read's default: run history, events, checksums */
#define DPD_MAX_CKPT_BYTES (2ull << 30)   /* a checkpoint: the largest model allowed (lstm-1024 x16,
                                             ~130 M parameters, 0.52 GB) with its AdamW moments
                                             (last.safetensors holds three copies) is 1.56 GB */
#define DPD_MAX_SPEC_BYTES (1ull << 20)   /* a dataset's spec.json: a dozen fields */
#define DPD_MAX_CSV_BYTES (4ull << 30)    /* a dataset CSV or a CSV recording: ~200 M rows of I,Q */
#define DPD_MAX_CF32_BYTES (4ull << 30)   /* a .cf32 recording: 512 M samples (8 GiB as float64 I/Q),
                                             0.6 s at 800 MS/s; streamed, never held twice */

/* Opens path for reading: O_NONBLOCK so a FIFO cannot block the open, then fstat — anything but a
 * regular file (FIFO, directory, device such as /dev/zero behind a symlink, socket) is DPD_E_IO
 * naming the path and what it is; a file of more than max bytes is DPD_E_FORMAT naming the path,
 * its size and the limit, `what` naming the kind ("checkpoint"). On success *fd is open (blocking
 * again) and *size is the size fstat saw; the caller closes fd. On failure nothing is left open. */
dpd_status dpd_file_open(const char *path, uint64_t max, const char *what, int *fd, uint64_t *size,
                         dpd_error *err);

/* Reads a whole regular file of at most max bytes (see dpd_file_open) into a malloc'd,
 * NUL-terminated buffer; *len (may be NULL) is its length. DPD_E_IO/DPD_E_FORMAT naming the path,
 * DPD_E_NOMEM. *buf is NULL on failure. */
dpd_status dpd_file_read_max(const char *path, uint64_t max, const char *what, char **buf, size_t *len,
                             dpd_error *err);

/* dpd_file_read_max with DPD_MAX_TEXT_BYTES. */
dpd_status dpd_file_read(const char *path, char **buf, size_t *len, dpd_error *err);

/* An atomic writer: write through f, then commit (the file appears whole under path) or abort
 * (nothing appears, the temporary file is removed). Messages name path, the file the caller asked
 * for, never the temporary file beside it. */
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
