/* Fuzzes safetensors checkpoints: dpd_ckpt_load and, when it succeeds, a forward pass of the
 * loaded model on 1 x 8 samples through a cpu session (one thread, so each input runs the same
 * way) and the resume state of the file as a run's last.safetensors (the internal
 * dpd_run_load_last, src/run.h, for the table defaults and one step an epoch, as the seeds were
 * trained); then dpd_ckpt_info_read on the same file. The settings and packs directories point into
 * the scratch directory, so the user's own are never read. */
#include <math.h>

#include "config.h"
#include "fuzz.h"
#include "run.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int ready;
    char path[4096];
    if (!ready) {
        fz_xdg();
        ready = 1;
    }
    static dpd_rundir d;
    if (!d.dir[0]) fz_mkdir(fz_path(d.dir, "run"));
    snprintf(path, sizeof path, "%s/last.safetensors", d.dir);
    fz_write(path, data, size);
    dpd_error err;
    dpd_model *m = NULL;
    dpd_status s0 = dpd_ckpt_load(path, &m, &err);
    fz_note("dpd_ckpt_load", s0, &err);
    if (!s0) {
        dpd_kv opts[] = {{"provider", "cpu"}, {"threads", "1"}, {"max_batch", "1"}};
        dpd_session *s = NULL;
        dpd_status s1 = dpd_session_create(m, opts, 3, &s, &err);
        fz_note("dpd_session_create", s1, &err);
        if (!s1) {
            float x[16], y[16 + 4];
            for (int i = 0; i < 16; i++) x[i] = (float)(0.25 * sin(0.7 * i + (i & 1)));
            for (int i = 16; i < 20; i++) y[i] = -7.0f; /* canary after the output */
            dpd_status s2 = dpd_session_forward(s, x, 1, 8, y, &err);
            fz_note("dpd_session_forward", s2, &err);
            if (!s2)
                for (int i = 16; i < 20; i++)
                    if (y[i] != -7.0f) abort(); /* the forward pass wrote past 1 x 8 x 2 */
        }
        dpd_session_free(s);
        float *mom = calloc(2 * dpd_model_nparams(m) + 1, sizeof *mom);
        dpd_train_cfg c;
        dpd_run_state st;
        dpd_config_defaults(&c);
        c.model = *dpd_model_config(m);
        if (!mom) abort();
        dpd_status s3 = dpd_run_load_last(&d, m, mom, &st, 1, &c, &err);
        fz_note("dpd_run_load_last", s3, &err);
        if (!s3 && (strchr(d.id, '/') || !strcmp(d.id, "..") || !strcmp(d.id, ".")))
            abort(); /* a run id from the file must be one path component */
        free(mom);
        dpd_model_free(m);
    }
    dpd_ckpt_info info;
    (void)dpd_ckpt_info_read(path, &info, &err);
    return 0;
}
