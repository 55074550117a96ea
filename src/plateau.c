/* plateau: see plateau.h. */
#include "plateau.h"

#include <math.h>

void dpd_plateau_init(dpd_plateau *s, double factor, int patience, double min_lr) {
    *s = (dpd_plateau){.factor = factor, .min_lr = min_lr, .threshold = 1e-4, .eps = 1e-8,
                       .patience = patience, .best = INFINITY};
}

double dpd_plateau_step(dpd_plateau *s, double metric, double lr) {
    if (metric < s->best * (1.0 - s->threshold)) {
        s->best = metric;
        s->bad = 0;
    } else {
        s->bad++;
    }
    if (s->bad > s->patience) {
        double nl = fmax(lr * s->factor, s->min_lr);
        if (lr - nl > s->eps) lr = nl;
        s->bad = 0;
    }
    return lr;
}
