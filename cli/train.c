/* train: `dpd train-pa` and `dpd train-dpd` — option parsing, presets, progress display and the
 * summary. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "cli.h"

typedef struct display {
    int tty;
    double last; /* elapsed at the last redraw */
} display;

static void progress(void *user, const dpd_progress *p) {
    display *d = user;
    if (!p->epoch_done) {
        if (!d->tty || (p->batch != p->batches && p->elapsed - d->last < 0.1)) return;
        d->last = p->elapsed;
        double rate = p->batch / (p->elapsed > 0 ? p->elapsed : 1e-9);
        double eta = (p->batches - p->batch) / rate;
        int w = 24, fill = (int)((double)w * p->batch / p->batches);
        char bar[32];
        for (int i = 0; i < w; i++) bar[i] = i < fill ? '#' : '.';
        bar[w] = 0;
        fprintf(stderr, "\repoch %d/%d [%s] %d/%d loss %.3e %.1f batch/s ETA %02d:%02d ", p->epoch + 1,
                p->epochs, bar, p->batch, p->batches, p->loss, rate, (int)eta / 60, (int)eta % 60);
        return;
    }
    d->last = 0;
    fprintf(stderr, "%sepoch %d/%d train_loss %.4e val NMSE %.3f EVM %.3f ACLR %.3f | test NMSE %.3f lr %.2e%s\n",
            d->tty ? "\r\033[K" : "", p->epoch + 1, p->epochs, p->train_loss, p->val.nmse, p->val.evm,
            p->val.aclr_avg, p->test.nmse, p->lr, p->improved ? " *" : "");
}

/* Summary of a finished run: a table, or one JSON object. */
static void summary(const dpd_train_result *res, int json) {
    if (json) {
        printf("{\"run_dir\":%s,\"epochs\":%d,\"best_epoch\":%d,\"val\":", cli_q(res->run_dir), res->epochs,
               res->best_epoch);
        cli_metrics_json(stdout, &res->val);
        printf(",\"test\":");
        cli_metrics_json(stdout, &res->test);
        if (res->dpd) {
            printf(",\"no_dpd\":");
            cli_metrics_json(stdout, &res->no_dpd_test);
            printf(",\"no_dpd_val\":");
            cli_metrics_json(stdout, &res->no_dpd_val);
        }
        printf(",\"provider\":%s}\n", cli_q(res->provider));
    } else {
        printf("best epoch %d of %d (trained on %s)\n", res->best_epoch + 1, res->epochs, res->provider);
        cli_metrics_header(stdout);
        cli_metrics_row(stdout, "val", &res->val);
        cli_metrics_row(stdout, "test", &res->test);
        if (res->dpd) {
            cli_metrics_row(stdout, "no DPD val", &res->no_dpd_val);
            cli_metrics_row(stdout, "no DPD test", &res->no_dpd_test);
        }
        printf("run directory: %s\n", res->run_dir);
    }
}

static int train(int argc, char **argv, int dpd) {
    dpd_train_cfg c;
    dpd_train_defaults(&c);
    c.model.order = 5, c.model.memory = 20, c.model.cross = 2;
    if (dpd) c.model.hidden = 15; /* OpenDPD's default DPD size */
    char preset[16] = "", level[16] = "", kernels[16] = "";
    int json = 0, legacy = 0, threads = 0;
    opt o[] = {
        CLI_COMPUTE_OPTS(threads, level, kernels),
        {"provider", OPT_STR, c.provider, sizeof c.provider, "auto, cpu or cuda: where the training steps run (default: the settings)", 0},
        {"data", OPT_STR, c.data, sizeof c.data, "dataset directory (required unless --resume)", 0},
        {"pa", OPT_STR, c.pa, sizeof c.pa, "train-dpd: the frozen PA (checkpoint or train-pa run directory)", 0},
        {"model", OPT_STR, c.model.family, sizeof c.model.family, "model family (gru; 'dpd models' lists all)", 0},
        {"hidden", OPT_INT, &c.model.hidden, 0, dpd ? "hidden size (15)" : "hidden size (23)", 0},
        {"layers", OPT_INT, &c.model.layers, 0, "recurrent layers (1)", 0},
        {"K", OPT_INT, &c.model.order, 0, "mp/gmp_ls: nonlinearity orders (5)", 0},
        {"Q", OPT_INT, &c.model.memory, 0, "mp/gmp_ls: memory depth (20)", 0},
        {"M", OPT_INT, &c.model.cross, 0, "gmp_ls: envelope lags and leads (2)", 0},
        {"thx", OPT_DBL, &c.model.thx, 0, "delta families: input delta threshold (0)", 0},
        {"thh", OPT_DBL, &c.model.thh, 0, "delta families: hidden delta threshold (0)", 0},
        {"units", OPT_INT, &c.model.units, 0, "dvrjanet: DVR units (3)", 0},
        {"preset", OPT_STR, preset, sizeof preset, "quick (10 epochs, frame 50, stride 16) or full (150, 200, 1)", 0},
        {"epochs", OPT_INT, &c.epochs, 0, "epochs (150)", 0},
        {"batch", OPT_INT, &c.batch, 0, "training batch size (64)", 0},
        {"batch-eval", OPT_INT, &c.batch_eval, 0, "evaluation batch size in segments (64)", 0},
        {"lr", OPT_DBL, &c.lr, 0, "initial learning rate (5e-3)", 0},
        {"lr-end", OPT_DBL, &c.lr_end, 0, "minimum learning rate (5e-5)", 0},
        {"decay", OPT_DBL, &c.decay, 0, "plateau decay factor (0.5)", 0},
        {"patience", OPT_INT, &c.patience, 0, "plateau patience in epochs (5)", 0},
        {"lr-schedule", OPT_INT, &c.lr_schedule, 0, "1 = ReduceLROnPlateau on the val selection metric, 0 = constant (1)", 0},
        {"weight-decay", OPT_DBL, &c.weight_decay, 0, "AdamW weight decay (0.01)", 0},
        {"clip", OPT_DBL, &c.clip, 0, "gradient global-norm clip, 0 = off (200)", 0},
        {"frame", OPT_INT, &c.frame, 0, "training frame length (200)", 0},
        {"stride", OPT_INT, &c.stride, 0, "training frame stride (1)", 0},
        {"seed", OPT_U64, &c.seed, 0, "random seed (0)", 0},
        {"out", OPT_STR, c.out, sizeof c.out, "output root (runs)", 0},
        {"resume", OPT_STR, c.resume, sizeof c.resume, "continue the run in this run directory", 0},
        {"evm-fs", OPT_DBL, &c.evm_fs, 0, "EVM sample rate, Hz (default: the dataset's fs)", 0},
        {"legacy-evm", OPT_FLAG, &legacy, 0, "EVM at 800 MHz, as OpenDPD v2.0.0 logs it", 0},
        {"json", OPT_FLAG, &json, 0, "end with one JSON summary object on stdout", 0},
    };
    int n = sizeof o / sizeof *o;
    int r = args_parse(argc, argv, o, n,
                       dpd ? "dpd train-dpd --data DIR --pa PA_CHECKPOINT_OR_RUN_DIR [--model M --hidden H] "
                             "[--preset quick|full] [training options] [--out DIR] [--json]\n"
                             "       dpd train-dpd --resume RUN_DIR [--epochs N] [--json]"
                           : "dpd train-pa --data DIR [--model M --hidden H --layers N] [--preset quick|full] "
                             "[training options] [--out DIR] [--json]\n"
                             "       dpd train-pa --resume RUN_DIR [--epochs N] [--json]");
    if (r) return r == 1 ? 0 : 2;
    dpd_error err;
    if (c.resume[0]) {
        for (int i = 0; i < n; i++)
            if (o[i].seen && strcmp(o[i].name, "resume") && strcmp(o[i].name, "epochs") &&
                strcmp(o[i].name, "json") && strcmp(o[i].name, "threads") && strcmp(o[i].name, "cpu-level") && strcmp(o[i].name, "kernels") &&
                strcmp(o[i].name, "provider")) {
                fprintf(stderr, "dpd: --%s cannot change a resumed run (only --epochs can)\n", o[i].name);
                return 2;
            }
        if (!args_get(o, n, "epochs")->seen) c.epochs = 0; /* keep the run's own */
    } else {
        if (!c.data[0] || (dpd && !c.pa[0])) {
            fprintf(stderr, "dpd: %s needs --data DIR%s (or --resume RUN_DIR)\n", dpd ? "train-dpd" : "train-pa",
                    dpd ? " and --pa PA" : "");
            return 2;
        }
        if (!dpd && c.pa[0]) {
            fprintf(stderr, "dpd: --pa belongs to train-dpd\n");
            return 2;
        }
        if (preset[0]) { /* preset first, explicit options win */
            dpd_train_cfg keep = c;
            if (dpd_train_preset(&c, preset, &err)) {
                fprintf(stderr, "dpd: %s\n", err.msg);
                return 2;
            }
            if (args_get(o, n, "epochs")->seen) c.epochs = keep.epochs;
            if (args_get(o, n, "frame")->seen) c.frame = keep.frame;
            if (args_get(o, n, "stride")->seen) c.stride = keep.stride;
        }
        if (legacy) c.evm_fs = 800e6;
    }
    if (!(c.threads = cli_compute(threads, level, kernels))) return 2;
    display d = {.tty = isatty(2)};
    dpd_train_result res;
    if (dpd_train(&c, progress, &d, &res, &err)) {
        if (d.tty) fprintf(stderr, "\n");
        if (res.run_dir[0]) fprintf(stderr, "dpd: run directory: %s\n", res.run_dir);
        return err.status == DPD_E_INVAL ? (fprintf(stderr, "dpd: %s\n", err.msg), 2) : cli_fail(&err);
    }
    summary(&res, json);
    return 0;
}

/* `dpd fit-ls --data DIR --kind mp|gmp --target pa|dpd [--K --Q --M --reg --iterations] [--pa PA]` */
int cmd_fit_ls(int argc, char **argv) {
    dpd_train_cfg c;
    dpd_train_defaults(&c);
    c.ls = 1, c.epochs = 1;
    c.model = (dpd_model_cfg){"mp", 1, 1, 5, 20, 2};
    char kind[16] = "mp", target[16] = "pa", level[16] = "", kernels[16] = "";
    int json = 0, legacy = 0, threads = 0;
    opt o[] = {
        CLI_COMPUTE_OPTS(threads, level, kernels),
        {"data", OPT_STR, c.data, sizeof c.data, "dataset directory (required)", 0},
        {"kind", OPT_STR, kind, sizeof kind, "mp or gmp (mp)", 0},
        {"target", OPT_STR, target, sizeof target, "pa (model x -> y) or dpd (indirect learning) (pa)", 0},
        {"pa", OPT_STR, c.pa, sizeof c.pa, "target dpd: the PA model the DPD is evaluated through (required)", 0},
        {"K", OPT_INT, &c.model.order, 0, "nonlinearity orders |x|^0..|x|^(K-1) (5)", 0},
        {"Q", OPT_INT, &c.model.memory, 0, "memory depth (20)", 0},
        {"M", OPT_INT, &c.model.cross, 0, "gmp: envelope lags and leads (2)", 0},
        {"reg", OPT_DBL, &c.ls_reg, 0, "ridge on the column-normalised basis (1e-9)", 0},
        {"iterations", OPT_INT, &c.ls_iter, 0, "dpd: ILA iterations, the later ones through the PA (1)", 0},
        {"batch-eval", OPT_INT, &c.batch_eval, 0, "evaluation batch size in segments (64)", 0},
        {"out", OPT_STR, c.out, sizeof c.out, "output root (runs)", 0},
        {"evm-fs", OPT_DBL, &c.evm_fs, 0, "EVM sample rate, Hz (default: the dataset's fs)", 0},
        {"legacy-evm", OPT_FLAG, &legacy, 0, "EVM at 800 MHz, as OpenDPD v2.0.0 logs it", 0},
        {"json", OPT_FLAG, &json, 0, "end with one JSON summary object on stdout", 0},
    };
    int r = args_parse(argc, argv, o, sizeof o / sizeof *o,
                       "dpd fit-ls --data DIR --kind mp|gmp --target pa|dpd [--pa PA] [--K 5 --Q 20 --M 2] [--json]");
    if (r) return r == 1 ? 0 : 2;
    int dpd = !strcmp(target, "dpd");
    if (!c.data[0] || (strcmp(kind, "mp") && strcmp(kind, "gmp")) || (!dpd && strcmp(target, "pa")) ||
        dpd != (c.pa[0] != 0)) {
        fprintf(stderr, "dpd: fit-ls needs --data DIR, --kind mp|gmp, --target pa|dpd, and --pa PA exactly when the target is dpd\n");
        return 2;
    }
    snprintf(c.model.family, sizeof c.model.family, "%s", strcmp(kind, "mp") ? "gmp_ls" : "mp");
    if (!strcmp(kind, "mp")) c.model.cross = 0;
    if (legacy) c.evm_fs = 800e6;
    if (!(c.threads = cli_compute(threads, level, kernels))) return 2;
    dpd_error err;
    dpd_train_result res;
    if (dpd_train(&c, NULL, NULL, &res, &err))
        return err.status == DPD_E_INVAL ? (fprintf(stderr, "dpd: %s\n", err.msg), 2) : cli_fail(&err);
    summary(&res, json);
    return 0;
}

int cmd_train_pa(int argc, char **argv) { return train(argc, argv, 0); }
int cmd_train_dpd(int argc, char **argv) { return train(argc, argv, 1); }
