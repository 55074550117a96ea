/* synth: `dpd synth --out DIR [generator options]`. */
#include <stdio.h>

#include "args.h"
#include "cli.h"

int cmd_synth(int argc, char **argv) {
    dpd_synth_cfg c;
    dpd_synth_defaults(&c);
    char out[4096] = "";
    opt o[] = {
        {"out", OPT_STR, out, sizeof out, "output dataset directory (required)", 0},
        {"carriers", OPT_INT, &c.carriers, 0, "number of carriers (10)", 0},
        {"carrier-bw", OPT_DBL, &c.carrier_bw, 0, "carrier bandwidth, Hz (20e6)", 0},
        {"qam", OPT_INT, &c.qam, 0, "QAM order: 4, 16, 64, 256, 1024 (64)", 0},
        {"fs", OPT_DBL, &c.fs, 0, "sample rate, Hz (800e6)", 0},
        {"length", OPT_SIZE, &c.length, 0, "total samples, a multiple of nperseg (38400)", 0},
        {"nperseg", OPT_INT, &c.nperseg, 0, "OFDM frame and eval segment length (2560)", 0},
        {"occupancy", OPT_DBL, &c.occupancy, 0, "filled fraction of each carrier (0.9)", 0},
        {"snr", OPT_DBL, &c.snr_db, 0, "output SNR, dB (45)", 0},
        {"gain", OPT_DBL, &c.gain, 0, "PA small-signal gain, linear (2.5)", 0},
        {"sat", OPT_DBL, &c.sat, 0, "Rapp output saturation amplitude (2.6)", 0},
        {"smooth", OPT_DBL, &c.smooth, 0, "Rapp smoothness p (1.2)", 0},
        {"pm-alpha", OPT_DBL, &c.pm_alpha, 0, "Saleh AM/PM alpha, rad (0.35)", 0},
        {"pm-beta", OPT_DBL, &c.pm_beta, 0, "Saleh AM/PM beta (0.8)", 0},
        {"seed", OPT_U64, &c.seed, 0, "random seed (0)", 0},
    };
    int n = sizeof o / sizeof *o;
    int r = args_parse(argc, argv, o, n, "dpd synth --out DIR [options]");
    if (r) return r == 1 ? 0 : 2;
    if (!out[0]) {
        fprintf(stderr, "dpd: synth needs --out DIR\n");
        return 2;
    }
    dpd_error err = {0};
    if (dpd_synth_write(&c, out, &err)) return cli_fail(&err); /* 2 for a bad option value */
    printf("%s\n", out);
    return 0;
}
