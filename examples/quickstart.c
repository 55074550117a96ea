/* quickstart: dpd's public API from a program of your own — only <dpd/dpd.h> and libdpd.so.
 * Synthesizes a small dataset (or loads the one given), trains a quick GRU PA model with a
 * progress callback, evaluates the best checkpoint on the test split through a session, and
 * lists the execution providers. `make test` builds and runs it.
 *
 *   cc -Iinclude examples/quickstart.c -Lbuild -ldpd -Wl,-rpath,$PWD/build -lm -o quickstart
 *   ./quickstart [DATA_DIR] */
#include <dpd/dpd.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what, const dpd_error *err) {
    fprintf(stderr, "quickstart: %s: %s\n", what, err->msg);
    return 1;
}

/* Typed events: one line per epoch; returning non-zero would cancel the run. */
static int on_event(void *user, const dpd_event *e) {
    int *epochs = user;
    if (e->type == DPD_EV_EPOCH) {
        printf("epoch %d/%d: train loss %.3e, val NMSE %.2f dB%s\n", e->epoch, e->epochs, e->train_loss, e->val.nmse,
               e->improved ? " (best so far)" : "");
        ++*epochs;
    }
    return 0;
}

int main(int argc, char **argv) {
    dpd_error err = {0};
    char data[4096];
    if (argc > 1) {
        snprintf(data, sizeof data, "%s", argv[1]);
    } else { /* built-in synthetic data: OFDM through a PA model */
        dpd_synth_cfg sc;
        dpd_synth_defaults(&sc);
        sc.length = 6 * 2560;
        snprintf(data, sizeof data, "quickstart-data");
        if (dpd_synth_write(&sc, data, &err)) return fail("synth", &err);
    }

    /* 1. train a quick GRU PA model (every field of the configuration table has a default) */
    dpd_train_cfg cfg;
    dpd_train_defaults(&cfg);
    snprintf(cfg.data, sizeof cfg.data, "%s", data);
    snprintf(cfg.out, sizeof cfg.out, "quickstart-runs");
    if (dpd_config_set(&cfg, "hidden", "8", &err) || dpd_train_preset(&cfg, "quick", &err)) return fail("config", &err);
    cfg.epochs = 3;
    int epochs = 0;
    dpd_train_result res;
    if (dpd_train(&cfg, on_event, &epochs, &res, &err)) return fail("train", &err);
    printf("run directory %s, best epoch %d, trained on %s\n", res.run_dir, res.best_epoch, res.provider);

    /* 2. load its best checkpoint and evaluate it on the test split through a session */
    char ckpt[4200];
    dpd_model *m = NULL;
    dpd_session *s = NULL;
    dpd_dataset ds;
    dpd_eval ev = {0};
    dpd_kv opts[] = {{"provider", "auto"}, {"threads", "1"}};
    int rc = 1;
    if (dpd_ckpt_resolve(res.run_dir, 0, ckpt, sizeof ckpt, &err) || dpd_ckpt_load(ckpt, &m, &err) ||
        dpd_dataset_load(data, 1u << DPD_TEST, 1u << DPD_TRAIN, &ds, &err))
        return fail("load", &err);
    if (dpd_session_create(m, opts, 2, &s, &err) || dpd_eval_prepare(&ev, &ds, DPD_TEST, 0, &err) ||
        dpd_eval_run(&ev, s, 64, &ds.spec, 0, &err)) {
        fail("evaluate", &err);
        goto done;
    }
    printf("test split on %s: ", dpd_session_provider(s));
    for (int k = 0; k < DPD_NMETRICS; k++) {
        if (ev.m.status[k] == DPD_METRIC_OK) printf("%s %.2f  ", dpd_metric_name(k), dpd_metric_value(&ev.m, k));
        else printf("%s n/a (%s)  ", dpd_metric_name(k), ev.m.reason[k]);
    }
    printf("\n");

    /* 3. the execution providers this machine has */
    dpd_provider_info pv[8];
    int np = dpd_provider_list(pv, 8);
    for (int i = 0; i < np; i++)
        printf("provider %s: %s%s\n", pv[i].name, pv[i].usable ? "usable" : "not usable: ",
               pv[i].usable ? "" : pv[i].why);
    rc = epochs == 3 && np >= 1 && ev.m.status[DPD_NMSE] == DPD_METRIC_OK && isfinite(ev.m.nmse) ? 0 : 1;
done:
    dpd_eval_free(&ev);
    dpd_session_free(s);
    dpd_model_free(m);
    dpd_dataset_free(&ds);
    return rc;
}
