/* Fuzzes spec.json: dpd_dataset_load on a directory whose spec.json is the input, beside tiny
 * valid split_csv files and a valid single_csv file (data.csv), so that a spec that passes
 * reaches either layout and, for single_csv, the split_ratios arithmetic. */
#include "fuzz.h"

static const char IQ[] = "I,Q\n0.1,0.2\n-0.3,0.4\n5e-2,-6.92e-05\n0,0\n0.5,0.5\n";
static const char SINGLE[] = "I_in,Q_in,I_out,Q_out\n0.1,0.2,0.3,0.4\n-0.1,0,1,2\n0,0,0,0\n1,2,3,4\n"
                             "5,6,7,8\n0.5,0.25,0.125,0.0625\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int ready;
    char dir[4096], path[4096];
    fz_path(dir, "ds");
    if (!ready) {
        static const char *const FILES[6] = {"train_input.csv", "train_output.csv", "val_input.csv",
                                             "val_output.csv",  "test_input.csv",   "test_output.csv"};
        fz_mkdir(dir);
        for (int k = 0; k < 6; k++) {
            snprintf(path, sizeof path, "%s/%s", dir, FILES[k]);
            fz_write_str(path, IQ);
        }
        snprintf(path, sizeof path, "%s/data.csv", dir);
        fz_write_str(path, SINGLE);
        ready = 1;
    }
    snprintf(path, sizeof path, "%s/spec.json", dir);
    fz_write(path, data, size);
    dpd_dataset ds;
    dpd_error err;
    if (!dpd_dataset_load(dir, 1u << DPD_TRAIN, 7u, &ds, &err)) {
        const dpd_spec *sp = &ds.spec;
        if (sp->n_sub < 0 || sp->nperseg < 1) abort(); /* a loaded spec holds what metrics need */
        float *seg = NULL;
        int S = 0;
        if (ds.split[DPD_TRAIN].n && !dpd_segments(ds.split[DPD_TRAIN].x, ds.split[DPD_TRAIN].n, sp->nperseg, 1.0,
                                                   &seg, &S, &err))
            free(seg);
    }
    dpd_dataset_free(&ds);
    return 0;
}
