/* family: the interface every model family implements (src/models/), and the registry.
 *
 * A family is a parameter table (OpenDPD state-dict names and PyTorch shapes, in state-dict
 * order, packed into one buffer), an initialiser with OpenDPD's scheme, and a scalar reference
 * forward and backward over a batch of sequences, each from zero state. Forward saves what
 * backward needs in a caller-reserved workspace; nothing is allocated per step.
 * Every family file is compiled twice: float for the library, and with -DDPD_F64 as double
 * (dpd_k64_<name>) for finite-difference gradient checks.
 * Legend: B batch, T time, F input features, H hidden, G gate rows. */
#ifndef DPD_FAMILY_H
#define DPD_FAMILY_H
#include "dpd/dpd.h"

typedef struct kern_ops kern_ops; /* src/kern/kern.h: the fast kernels a session chose (NULL: reference) */

#define DPD_MAX_TENSORS 72

typedef struct dpd_family {
    const char *name;    /* CLI name: "gru" */
    const char *tag;     /* run-id tag: "GRU" */
    const char *params;  /* parameter count formula, for `dpd models` */
    const char *about;   /* one line */
    int hidden;          /* the hidden size the family is usually run at (its paper's); not a training default */
    int max_layers;      /* 1 when the family has no layer count */
    int poly;            /* 1: sized by order/memory/cross instead of hidden/layers */
    int gated;           /* 1: its fast kernels take chunks of kern_fast's sizes only (KMIN..KL
                          * sequences), computing their sequences side by side */
    /* Fills t[0..n) in state-dict order with offsets into one buffer; returns n. */
    int (*layout)(const dpd_model_cfg *c, dpd_tensor *t);
    void (*init)(const dpd_model_cfg *c, const dpd_tensor *t, float *p, dpd_rng *rng);
    /* Every call below takes the kernel table k of the session that runs it; the sizes depend on
     * it (the fast kernels keep other activations than the reference). */
    size_t (*ws_size)(const kern_ops *k, const dpd_model_cfg *c, int B, int T);      /* floats */
    size_t (*scratch_size)(const kern_ops *k, const dpd_model_cfg *c, int B, int T); /* floats */
    /* x (B, T, 2) -> y (B, T, 2); saves activations in ws. */
    void (*forward)(const kern_ops *k, const dpd_model_cfg *c, const float *p, const float *x, int B, int T,
                    float *y, float *ws);
    /* Optional (NULL: forward): forward for an inference, which no backward follows, so it may
     * keep less in ws (same size) and touch less memory. The same y, bit for bit. */
    void (*infer)(const kern_ops *k, const dpd_model_cfg *c, const float *p, const float *x, int B, int T, float *y,
                  float *ws);
    /* dy (B, T, 2) -> dp (overwritten), dx (B, T, 2) when non-NULL. ws from forward. */
    void (*backward)(const kern_ops *k, const dpd_model_cfg *c, const float *p, const float *x, const float *dy,
                     int B, int T, const float *ws, float *scratch, float *dp, float *dx);
    /* Optional (NULL: no delta statistics). After forward: adds the zeros and element counts of
     * the thresholded input and hidden deltas to z[0..3] = zeros_dx, numel_dx, zeros_dh,
     * numel_dh; returns the number of recurrent weights (for HW_PARAM). */
    size_t (*delta_zeros)(const dpd_model_cfg *c, const float *ws, int B, int T, long long *z);
    /* Optional (NULL: 0, causal): how many samples after t the output at t reads (a sectioned run's
     * look-ahead must cover it). */
    int (*ahead)(const dpd_model_cfg *c);
    /* Optional (NULL: -1, a recurrent state that carries every earlier sample): how many samples
     * before t the output at t reads (a sectioned run's warm-up of that many gives --exact's
     * outputs). */
    int (*behind)(const dpd_model_cfg *c);
} dpd_family;

/* The double-precision kernels of a family (test builds only). */
typedef struct dpd_k64 {
    void (*forward)(const kern_ops *k, const dpd_model_cfg *c, const double *p, const double *x, int B, int T,
                    double *y, double *ws);
    void (*backward)(const kern_ops *k, const dpd_model_cfg *c, const double *p, const double *x, const double *dy,
                     int B, int T, const double *ws, double *scratch, double *dp, double *dx);
} dpd_k64;

/* NULL when no family has that name. */
const dpd_family *dpd_family_find(const char *name);

/* The registered families in listing order; *n receives the count. */
const dpd_family *const *dpd_family_list(int *n);

/* Appends tensor `name` with up to 4 dims (trailing zeros end the shape) at *off. */
void dpd_tensor_add(dpd_tensor *t, int *n, size_t *off, const char *name, int d0, int d1, int d2,
                    int d3);

extern const dpd_family dpd_family_gru, dpd_family_lstm, dpd_family_dgru, dpd_family_deltagru,
    dpd_family_tres_gru, dpd_family_rvtdcnn, dpd_family_mp, dpd_family_gmp_ls,
    dpd_family_tres_deltagru, dpd_family_vdlstm, dpd_family_pgjanet, dpd_family_dvrjanet, dpd_family_tcn,
    dpd_family_gmp;

#endif
