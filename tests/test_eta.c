/* test_eta: the progress display's step rate (cli/eta.c) is the mean over the run so far: one slow
 * epoch moves it by its share of the steps, not to its own rate; the first progress event alone
 * gives a rate; an epoch's untimed first chunk is left out. */
#include <math.h>

#include "check.h"
#include "eta.h"

int main(void) {
    cli_rate r;
    cli_rate_init(&r);
    CHECK(cli_rate_per_step(&r) == 0, "nothing measured: 0");
    cli_rate_progress(&r, 10, 1.0); /* the first chunk: 0.1 s a step, all there is */
    CHECK(fabs(cli_rate_per_step(&r) - 0.1) < 1e-12, "the first chunk alone: %g", cli_rate_per_step(&r));
    cli_rate_progress(&r, 110, 11.0); /* 100 steps timed in 10 s */
    CHECK(fabs(cli_rate_per_step(&r) - 0.1) < 1e-12, "epoch 1: %g", cli_rate_per_step(&r));
    cli_rate_epoch(&r);
    for (int e = 2; e <= 4; e++) { /* three more epochs at the same rate */
        cli_rate_progress(&r, 10, 0.5); /* each epoch's first event starts its timing */
        cli_rate_progress(&r, 110, 10.5);
        cli_rate_epoch(&r);
    }
    cli_rate_progress(&r, 10, 0.5); /* a slow epoch: 100 steps in 40 s, 4 times the rate */
    cli_rate_progress(&r, 110, 40.5);
    double p = cli_rate_per_step(&r);
    CHECK(fabs(p - (40.0 + 4 * 10.0) / 500) < 1e-12, "a slow fifth epoch: %g a step, the mean of 500 steps (0.16), not 0.4", p);
    cli_rate_epoch(&r);
    cli_rate_progress(&r, 10, 0.5); /* the next epoch's first event alone: the run's mean stands */
    CHECK(fabs(cli_rate_per_step(&r) - p) < 1e-12, "a new epoch's first chunk does not move it: %g", cli_rate_per_step(&r));
    return check_done("eta");
}
