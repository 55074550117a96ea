/* flags: the CLI's names for the configuration (a field's flag: hidden -> --hidden, order ->
 * --K), each verb's starting configuration, the options refused together, and the error they
 * fill — shared by the CLI and the front ends that mirror it (the studio's requests). */
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

dpd_status cli_err(dpd_error *err, dpd_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    err->status = s;
    err->field[0] = 0;
    return s;
}

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

dpd_status cli_legacy_evm(int legacy, int evm_given, double *evm_fs, dpd_error *err) {
    if (evm_given && !(*evm_fs > 0 && isfinite(*evm_fs))) {
        cli_err(err, DPD_E_INVAL, "%g is not a sample rate (Hz, above 0)", *evm_fs);
        snprintf(err->field, sizeof err->field, "evm_fs");
        return err->status;
    }
    if (!legacy) return DPD_OK;
    if (evm_given) {
        cli_err(err, DPD_E_INVAL, "legacy_evm: sets the EVM rate to 800 MHz itself: give it or an EVM rate, not both");
        snprintf(err->field, sizeof err->field, "legacy_evm");
        return err->status;
    }
    *evm_fs = 800e6;
    return DPD_OK;
}

dpd_status cli_thresholds(const dpd_model_cfg *m, dpd_error *err) {
    dpd_family_info f;
    if ((!m->thx && !m->thh) || !dpd_family_lookup(m->family, &f) || f.delta) return DPD_OK;
    const char *k = m->thx ? "thx" : "thh";
    cli_err(err, DPD_E_INVAL, "%s: a delta threshold, which only the delta families have (deltagru, tres_deltagru); %s has none",
            k, f.name);
    snprintf(err->field, sizeof err->field, "%s", k);
    return err->status;
}

/* The fields that size only some families, in cli_size_bit's order: what the field is, and whose. */
static const struct {
    const char *field, *what, *whose;
} sizes[] = {{"order", "nonlinearity orders K", "the polynomial families have (mp, gmp_ls)"},
             {"memory", "a depth Q of past samples", "the polynomial families have (mp, gmp_ls)"},
             {"cross", "envelope lags and leads M", "gmp_ls (fit-ls --kind gmp) has"},
             {"units", "a DVR unit count K", "dvrjanet has"},
             {"hidden", "a layer width H", "the neural families have (not gmp, mp or gmp_ls)"}}; /* no field's own
                                                                   name in its text: cli_fail turns each into the flag */

unsigned cli_size_bit(const char *field) {
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        if (!strcmp(field, sizes[i].field)) return 1u << i;
    return 0;
}

dpd_status cli_family_sizes(const char *family, unsigned given, dpd_error *err) {
    dpd_family_info f;
    if (!dpd_family_lookup(family, &f)) return DPD_OK; /* an unknown family: the configuration's check names it */
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        int has = i < 2 ? f.poly : i == 2 ? !strcmp(f.name, "gmp_ls") : i == 3 ? !strcmp(f.name, "dvrjanet")
                                                                                : !f.poly && strcmp(f.name, "gmp");
        if (!(given >> i & 1) || has) continue;
        cli_err(err, DPD_E_INVAL, "%s: %s, which only %s; %s has none", sizes[i].field, sizes[i].what, sizes[i].whose,
                f.name);
        snprintf(err->field, sizeof err->field, "%s", sizes[i].field);
        return err->status;
    }
    return DPD_OK;
}

int cli_fit_ls_field(const char *field) {
    /* fit-ls's flags (cmd_fit_ls in train.c) by their fields; kind, target, pa and legacy_evm are
     * the front ends' own words, and the execution options (threads, kernels, provider) no fields */
    static const char *const fields[] = {"order", "memory", "cross", "ls_reg", "ls_iterations", "batch_eval", "evm_fs",
                                         "metric_profile", "threads", "kernels", "provider"};
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
        if (!strcmp(field, fields[i])) return 1;
    return 0;
}

dpd_status cli_fit_ls_check(dpd_model_cfg *m, int target_dpd, unsigned given, int iterations, dpd_error *err) {
    if (!(given & cli_size_bit("cross"))) m->cross = strcmp(m->family, "mp") ? 2 : 0; /* gmp's default M */
    if (cli_family_sizes(m->family, given, err)) return err->status; /* M for an MP */
    if (!target_dpd && iterations) {
        cli_err(err, DPD_E_INVAL, "ls_iterations: for target dpd (indirect learning): a PA model is one fit");
        snprintf(err->field, sizeof err->field, "ls_iterations");
        return err->status;
    }
    return DPD_OK;
}
