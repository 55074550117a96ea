/* eta: the training step rate over the run so far (eta.h). */
#include "eta.h"

void cli_rate_init(cli_rate *r) { *r = (cli_rate){.s0 = -1}; }

void cli_rate_progress(cli_rate *r, long steps_done, double elapsed) {
    if (r->s0 < 0) r->s0 = steps_done, r->el0 = elapsed;
    if (steps_done > r->s0) r->cur_s = elapsed - r->el0, r->cur_n = steps_done - r->s0;
    if (!r->first && steps_done > 0) r->first = elapsed / (double)steps_done; /* the first chunk: all there is */
}

void cli_rate_epoch(cli_rate *r) {
    r->done_s += r->cur_s, r->done_n += r->cur_n;
    r->cur_s = 0, r->cur_n = 0, r->s0 = -1;
}

double cli_rate_per_step(const cli_rate *r) {
    long n = r->done_n + r->cur_n;
    return n > 0 ? (r->done_s + r->cur_s) / (double)n : r->first;
}
