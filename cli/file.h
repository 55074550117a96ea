/* file: the files the dpd command itself reads and writes (recordings for `dpd run`): a whole
 * file read into memory, and an output that appears whole or not at all. It does not parse
 * anything; the library reads datasets, CSVs and checkpoints. */
#ifndef DPD_CLI_FILE_H
#define DPD_CLI_FILE_H
#include <stdio.h>

#include "dpd/dpd.h"

/* Reads path into *buf (malloc'd, caller frees; NULL on failure) of *len bytes. DPD_E_IO naming
 * the path and the reason, DPD_E_NOMEM. */
dpd_status cli_file_read(const char *path, char **buf, size_t *len, dpd_error *err);

/* An output written to PATH.tmp.PID and renamed over PATH by commit after fsync, so PATH holds
 * either its old contents or the whole new file. */
typedef struct cli_out {
    FILE *f;
    char path[4096];
    char tmp[4200];
} cli_out;

/* Opens the temporary file. DPD_E_IO (nothing left behind). */
dpd_status cli_out_open(cli_out *o, const char *path, dpd_error *err);
/* Flushes, fsyncs, closes and renames; on any failure removes the temporary file: DPD_E_IO. */
dpd_status cli_out_commit(cli_out *o, dpd_error *err);
/* Closes and removes the temporary file (accepts an output never opened or already done). */
void cli_out_abort(cli_out *o);

#endif
