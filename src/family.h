/* family: the interface every model family implements (one file per family in models/).
 *
 * A family is a parameter table (OpenDPD state-dict names and shapes, in state-dict order), an
 * initialiser, and a scalar reference forward and backward over whole batches of sequences,
 * each from zero state. Activations saved by forward live in a caller-reserved workspace so no
 * allocation happens in the step loop.
 * Legend: B batch, T time, I input features, H hidden, G = 3H gate rows. */
#ifndef DPD_FAMILY_H
#define DPD_FAMILY_H
#include "dpd/dpd.h"

#define DPD_MAX_TENSORS 72

typedef struct dpd_family {
    const char *name; /* CLI name: "gru" */
    const char *tag;  /* run-id tag: "GRU" */
    /* Fills t[0..n) in state-dict order with offsets into one buffer; returns n. */
    int (*layout)(const dpd_model_cfg *c, dpd_tensor *t);
    void (*init)(const dpd_model_cfg *c, const dpd_tensor *t, float *p, dpd_rng *rng);
    size_t (*ws_size)(const dpd_model_cfg *c, int B, int T);      /* floats */
    size_t (*scratch_size)(const dpd_model_cfg *c, int B, int T); /* floats */
    /* x (B, T, 2) -> y (B, T, 2); saves activations in ws. */
    void (*forward)(const dpd_model_cfg *c, const float *p, const float *x, int B, int T,
                    float *y, float *ws);
    /* dy (B, T, 2) -> dp (overwritten), dx (B, T, 2) when non-NULL. ws from forward. */
    void (*backward)(const dpd_model_cfg *c, const float *p, const float *x, const float *dy,
                     int B, int T, const float *ws, float *scratch, float *dp, float *dx);
} dpd_family;

/* NULL when no family has that name. */
const dpd_family *dpd_family_find(const char *name);

extern const dpd_family dpd_family_gru;

#endif
