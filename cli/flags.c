/* flags: the CLI's names for the configuration (a field's flag: hidden -> --hidden, order ->
 * --K) and each verb's starting configuration — shared by the CLI and the front ends that mirror
 * it (the studio's requests). */
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* Library configuration fields whose flag is not "--" + the field with '_' -> '-'. */
static const char *const flags[][2] = {
    {"order", "--K"},          {"memory", "--Q"},         {"cross", "--M"},
    {"ls_iterations", "--iterations"}, {"ls_iter", "--iterations"}, {"ls_reg", "--reg"},
    {"family", "--model"},     {"model", "--model"},
};

const char *cli_flag(const char *field, char *buf, size_t n) {
    for (size_t i = 0; i < sizeof flags / sizeof *flags; i++)
        if (!strcmp(field, flags[i][0])) {
            snprintf(buf, n, "%s", flags[i][1]);
            return buf;
        }
    snprintf(buf, n, "--%s", field);
    for (char *p = buf + 2; *p; p++)
        if (*p == '_') *p = '-';
    return buf;
}

void cli_train_defaults(dpd_train_cfg *c, const char *verb) {
    dpd_train_defaults(c);
    if (!strcmp(verb, "fit-ls")) {
        c->ls = 1, c->epochs = 1;
        c->model = (dpd_model_cfg){.family = "mp", .hidden = 1, .layers = 1, .order = 5, .memory = 20, .cross = 2};
        return;
    }
    c->model.order = 5, c->model.memory = 20, c->model.cross = 2;
    if (!strcmp(verb, "train-dpd")) c->model.hidden = 15; /* OpenDPD's default DPD size */
}

int cli_legacy_evm(int legacy, double *evm_fs) {
    if (!legacy) return 0;
    if (*evm_fs) {
        fprintf(stderr, "dpd: --legacy-evm is --evm-fs 800e6: give one of them, not both\n");
        return 2;
    }
    *evm_fs = 800e6;
    return 0;
}
