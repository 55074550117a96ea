/* plateau: ReduceLROnPlateau (mode min, relative threshold, cooldown 0), in double as PyTorch. */
#ifndef DPD_PLATEAU_H
#define DPD_PLATEAU_H

typedef struct dpd_plateau {
    double factor, min_lr, threshold, eps;
    int patience;
    double best; /* +inf before the first step */
    int bad;     /* epochs without improvement */
} dpd_plateau;

void dpd_plateau_init(dpd_plateau *s, double factor, int patience, double min_lr);

/* Feeds one epoch's metric; returns the learning rate for the next epoch. "Improved" means
 * metric < best * (1 - threshold), as PyTorch (so for negative dB values a slightly worse
 * metric still counts). */
double dpd_plateau_step(dpd_plateau *s, double metric, double lr);

#endif
