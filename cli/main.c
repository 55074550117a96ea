/* main: the dpd command — dispatch to a verb, and the output helpers the verbs share. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "provider.h"
#include "settings.h"

int cli_compute(int threads, const char *level, const char *kernels) {
    dpd_error err;
    if (kernels[0] && dpd_kernels_select(kernels, &err)) {
        fprintf(stderr, "dpd: %s\n", err.msg);
        return 0;
    }
    int n;
    if (level[0]) {
        if (!(n = dpd_cpu_level_threads(level)))
            fprintf(stderr, "dpd: --cpu-level must be low, balanced, high or max (got '%s')\n", level);
    } else if (threads < 0 || threads > 1024) {
        fprintf(stderr, "dpd: --threads must be in [1, 1024] (got %d)\n", threads);
        n = 0;
    } else if (threads) {
        n = threads;
    } else { /* the settings' cpu_level */
        dpd_settings st;
        if (dpd_settings_load(&st, &err)) {
            fprintf(stderr, "dpd: %s\n", err.msg);
            return 0;
        }
        n = dpd_cpu_level_threads(st.cpu_level);
    }
    dpd_provider_cpu_threads(n);
    return n;
}

int cli_fail(const dpd_error *err) {
    fprintf(stderr, "dpd: %s\n", err->msg);
    return 1;
}

const char *cli_q(const char *s) {
    static char ring[8][4400];
    static int k;
    char *out = ring[k++ % 8];
    json_t *j = json_string_nocheck(s);
    char *t = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
    snprintf(out, sizeof ring[0], "%s", t ? t : "\"\"");
    free(t);
    json_decref(j);
    return out;
}

void cli_metrics_json(FILE *f, const dpd_metrics *m) {
    fprintf(f, "{\"NMSE\":%.6f,\"EVM\":%.6f,\"ACLR_L\":%.6f,\"ACLR_R\":%.6f,\"ACLR_AVG\":%.6f}",
            m->nmse, m->evm, m->aclr_l, m->aclr_r, m->aclr_avg);
}

void cli_metrics_header(FILE *f) {
    fprintf(f, "%-14s %10s %10s %10s %10s %10s\n", "", "NMSE dB", "EVM dB", "ACLR_L", "ACLR_R",
            "ACLR_AVG");
}

void cli_metrics_row(FILE *f, const char *name, const dpd_metrics *m) {
    fprintf(f, "%-14s %10.3f %10.3f %10.3f %10.3f %10.3f\n", name, m->nmse, m->evm, m->aclr_l,
            m->aclr_r, m->aclr_avg);
}

static const struct verb {
    const char *name;
    int (*run)(int, char **);
    const char *help;
} verbs[] = {
    {"synth", cmd_synth, "generate a synthetic OpenDPD-layout dataset (OFDM through a PA model)"},
    {"eval", cmd_eval, "RF metrics of a dataset split, its linear-gain baseline and a model"},
    {"train-pa", cmd_train_pa, "train a PA behavioral model (OpenDPD's loop, exactly)"},
    {"train-dpd", cmd_train_dpd, "train a DPD model through a frozen PA model toward g x"},
    {"fit-ls", cmd_fit_ls, "least-squares MP/GMP baselines: PA models, or DPDs by indirect learning"},
    {"run", cmd_run, "apply a trained DPD (or PA) model to a recording (CSV or .cf32)"},
    {"providers", cmd_providers, "execution providers, devices, packs and the active choice"},
    {"parity", cmd_parity, "the same evaluation on each provider, and the deviations"},
    {"pack", cmd_pack, "install, list, verify, activate or remove runtime packs"},
    {"config", cmd_config, "show or set settings (provider, cpu_level, gpu_memory)"},
    {"models", cmd_models, "list the model families, their parameter counts and defaults"},
    {"bench", cmd_bench, "time training steps (bench train ...)"},
};

static void help(FILE *f) {
    fprintf(f, "dpd %s — neural PA modeling and digital predistortion\n\nusage: dpd VERB [options]\n\n",
            DPD_VERSION);
    for (size_t i = 0; i < sizeof verbs / sizeof *verbs; i++)
        fprintf(f, "  %-10s %s\n", verbs[i].name, verbs[i].help);
    fprintf(f, "  %-10s %s\n\n'dpd VERB --help' lists a verb's options.\n", "version", "print the version");
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        help(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version")) {
        printf("dpd %s\n", DPD_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof verbs / sizeof *verbs; i++)
        if (!strcmp(argv[1], verbs[i].name)) return verbs[i].run(argc - 2, argv + 2);
    fprintf(stderr, "dpd: unknown verb '%s'\n\n", argv[1]);
    help(stderr);
    return 2;
}
