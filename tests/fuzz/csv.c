/* Fuzzes the dataset CSV reader: dpd_csv_read by name (I,Q and the single_csv columns) and by
 * position, then a split_csv dataset directory through dpd_dataset_load with a fixed valid
 * spec.json. The first input byte picks which of the six split files get the rest of the input
 * (bit k: file k of train/val/test x input/output); the others hold a valid four-row CSV, so the
 * row-count and empty-split checks are reached too. */
#include "fuzz.h"

static const char *const FILES[6] = {"train_input.csv", "train_output.csv", "val_input.csv",
                                     "val_output.csv",  "test_input.csv",   "test_output.csv"};
static const char VALID[] = "I,Q\n0.1,0.2\n-0.3,0.4\n5e-2,-6.92e-05\n0,0\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char path[4096], dir[4096];
    dpd_error err;
    double *out = NULL;
    size_t rows = 0;
    unsigned pick = size ? data[0] : 1;
    const uint8_t *body = size ? data + 1 : data;
    size_t n = size ? size - 1 : 0;

    fz_path(path, "in.csv");
    fz_write(path, body, n);
    static const char *const IQ[2] = {"I", "Q"};
    static const char *const SINGLE[4] = {"I_in", "Q_in", "I_out", "Q_out"};
    if (!dpd_csv_read(path, 2, IQ, &out, &rows, &err)) free(out);
    out = NULL;
    if (!dpd_csv_read(path, 4, SINGLE, &out, &rows, &err)) free(out);
    out = NULL;
    if (!dpd_csv_read(path, 2, NULL, &out, &rows, &err)) free(out);

    static unsigned fuzzed = 63; /* the split files that hold an earlier input, not VALID */
    fz_path(dir, "ds");
    if (fuzzed == 63) {
        fz_mkdir(dir);
        snprintf(path, sizeof path, "%s/spec.json", dir);
        fz_write_str(path, "{\"dataset_format\": \"split_csv\", \"input_signal_fs\": 800e6, \"bw_main_ch\": 200e6,"
                           " \"n_sub_ch\": 1, \"nperseg\": 4}");
    }
    for (int k = 0; k < 6; k++) {
        snprintf(path, sizeof path, "%s/%s", dir, FILES[k]);
        if (pick & (1u << k)) fz_write(path, body, n);
        else if (fuzzed & (1u << k)) fz_write_str(path, VALID);
    }
    fuzzed = pick & 63;
    dpd_dataset ds;
    unsigned need = (pick & 64) ? 1u << DPD_TRAIN : 7u;
    dpd_status s = dpd_dataset_load(dir, need, 7u, &ds, &err);
    fz_note("dpd_dataset_load", s, &err);
    if (!s) {
        for (int k = 0; k < DPD_NSPLIT; k++)
            if (ds.split[k].n && (!ds.split[k].x || !ds.split[k].y)) abort(); /* a split claims rows it lacks */
        (void)dpd_dataset_gain(&ds);
    }
    dpd_dataset_free(&ds);
    return 0;
}
