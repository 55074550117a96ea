/* dpd — neural power-amplifier modeling and digital predistortion.
 *
 * The public C API of libdpd: statuses, datasets, RF metrics, models, checkpoints, training
 * and the synthetic data generator. The library never prints and never exits: every fallible
 * call returns a dpd_status (DPD_OK = 0) and fills a caller-owned dpd_error with a message that
 * names the file, line, field or value at fault. Functions are not thread-safe on one object
 * unless stated; distinct objects may be used from distinct threads.
 *
 * Legend for shapes: B batch, T time, H hidden, S segments, N segment length; IQ signals are
 * interleaved float pairs (..., 2) with channel 0 = I and 1 = Q. */
#ifndef DPD_DPD_H
#define DPD_DPD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DPD_VERSION "0.1.0"
#define DPD_API __attribute__((visibility("default")))
#define DPD_CHECK __attribute__((warn_unused_result))

/* ---- statuses ---------------------------------------------------------------------------- */

typedef enum dpd_status {
    DPD_OK = 0,
    DPD_E_INVAL,       /* a bad argument or option value */
    DPD_E_IO,          /* a file could not be opened, read or written */
    DPD_E_FORMAT,      /* a file's contents are malformed (CSV, spec.json, checkpoint) */
    DPD_E_NOMEM,       /* an allocation failed */
    DPD_E_UNSUPPORTED, /* a valid request this build cannot serve (unknown model family) */
    DPD_E_DEVICE,      /* an execution device failed */
    DPD_E_ABORTED      /* the caller asked to stop */
} dpd_status;

/* Caller-owned error record. Every fallible call that takes one leaves status == the returned
 * status and a one-line message in msg (empty on success is not guaranteed; check the status). */
typedef struct dpd_error {
    dpd_status status;
    char msg[1024];
} dpd_error;

/* Short name of a status ("ok", "invalid argument", ...). Never NULL. */
DPD_API const char *dpd_status_str(dpd_status s);

/* ---- datasets (OpenDPD layouts, reference §1) -------------------------------------------- */

enum { DPD_TRAIN = 0, DPD_VAL = 1, DPD_TEST = 2, DPD_NSPLIT = 3 };

/* What spec.json says. Fields metrics need (fs, bw_main, n_sub, nperseg) are always set after a
 * successful load: their absence is a load error. */
typedef struct dpd_spec {
    double fs;        /* input_signal_fs, Hz */
    double bw_main;   /* bw_main_ch (alias input_signal_bw), Hz */
    double bw_sub;    /* bw_sub_ch (alias input_signal_sub_ch_bw), Hz; 0 when absent */
    int n_sub;        /* n_sub_ch */
    int nperseg;      /* eval segment length and Welch/FFT length */
    double ratios[3]; /* split_ratios (train, val, test); used by single_csv */
} dpd_spec;

typedef struct dpd_split {
    size_t n;  /* samples */
    double *x; /* (n, 2) PA input, as read (float64) */
    double *y; /* (n, 2) PA output */
} dpd_split;

typedef struct dpd_dataset {
    char name[256];  /* last path component of the directory */
    char dir[4096];
    dpd_spec spec;
    dpd_split split[DPD_NSPLIT]; /* a split not requested (or absent and optional) has n == 0 */
    char warning[512];           /* non-fatal notes (e.g. an alias was used); "" when none */
} dpd_dataset;

/* Loads the splits whose bits (1 << DPD_TRAIN ...) are in `need`; splits in `want` but not in
 * `need` are loaded when their files exist and left empty otherwise. Numbers are parsed in the
 * C locale; NaN/Inf, extra or missing fields, row-count mismatches and empty splits are
 * DPD_E_FORMAT naming file and line. On failure ds is left empty (dpd_dataset_free is safe). */
DPD_API DPD_CHECK dpd_status dpd_dataset_load(const char *dir, unsigned need, unsigned want,
                                              dpd_dataset *ds, dpd_error *err);
DPD_API void dpd_dataset_free(dpd_dataset *ds);

/* Target gain g = max|y_train| / max|x_train| (reference §5); 0 when the train split is empty. */
DPD_API double dpd_dataset_gain(const dpd_dataset *ds);

/* Training frames of length L, stride S over n samples (reference §1.6): floor((n - L) / S) + 1,
 * frame i = samples [i S, i S + L); 0 when n < L. */
DPD_API size_t dpd_frame_count(size_t n, int L, int S);

/* Gathers the B training frames frames[0..B) (frame i = samples [i S, i S + L) of x and y, each
 * (n, 2)) into the batches bx, by (B, L, 2): one pass, contiguous row copies. */
DPD_API void dpd_frames_gather(const float *x, const float *y, const uint32_t *frames, int B, int L,
                               int S, float *bx, float *by);

/* Cuts n samples of (n, 2) float64 IQ into S = ceil(n / N) segments of N samples (zero-padded
 * tail) as float32 (S, N, 2), scaled by `scale`. *out is malloc'd; caller frees. */
DPD_API DPD_CHECK dpd_status dpd_segments(const double *iq, size_t n, int N, double scale,
                                          float **out, int *S, dpd_error *err);

/* ---- metrics (reference §6, OpenDPD's legacy profile) ------------------------------------ */

typedef struct dpd_metrics {
    double nmse, evm, aclr_l, aclr_r, aclr_avg; /* dB, dB, dBc, dBc, dBc */
} dpd_metrics;

/* Band bins in fftshift order (bin k <-> (k - N/2) * fs / N): main channel [left, right], each
 * sub-channel `len` bins. */
typedef struct dpd_band {
    int left, right, len;
} dpd_band;

DPD_API DPD_CHECK dpd_status dpd_band_of(int N, double fs, double bw, int n_sub, dpd_band *b,
                                         dpd_error *err);

/* NMSE: mean over segments of 10 log10(sum|p - r|^2 / sum|r|^2). Inputs (S, N, 2). */
DPD_API double dpd_nmse(const float *pred, const float *ref, int S, int N);

/* OpenDPD's spectral EVM at sample rate sr (dB). */
DPD_API DPD_CHECK dpd_status dpd_evm(const float *pred, const float *ref, int S, int N, double sr,
                                     double bw, int n_sub, double *evm, dpd_error *err);

/* ACLR of sig (S, N, 2): left and right adjacent-channel power relative to the strongest
 * sub-channel, dBc. */
DPD_API DPD_CHECK dpd_status dpd_aclr(const float *sig, int S, int N, double fs, double bw,
                                      int n_sub, double *left, double *right, dpd_error *err);

/* All five metrics of pred against ref with the spec's band plan. EVM uses evm_fs (pass
 * spec->fs for dpd's default, 800e6 for OpenDPD v2.0.0's logged value). */
DPD_API DPD_CHECK dpd_status dpd_metrics_compute(const float *pred, const float *ref, int S, int N,
                                                 const dpd_spec *spec, double evm_fs,
                                                 dpd_metrics *m, dpd_error *err);

/* ---- random numbers ---------------------------------------------------------------------- */

/* xoshiro256** seeded through splitmix64: dpd's only RNG, so runs replay bit for bit. */
typedef struct dpd_rng {
    uint64_t s[4];
} dpd_rng;

DPD_API void dpd_rng_seed(dpd_rng *r, uint64_t seed);
DPD_API uint64_t dpd_rng_next(dpd_rng *r);
DPD_API double dpd_rng_uniform(dpd_rng *r);          /* [0, 1), 53 bits */
DPD_API double dpd_rng_normal(dpd_rng *r);           /* N(0, 1), Box-Muller, no caching */
DPD_API uint64_t dpd_rng_below(dpd_rng *r, uint64_t n); /* uniform in [0, n), unbiased */
DPD_API void dpd_rng_shuffle(dpd_rng *r, uint32_t *a, size_t n); /* Fisher-Yates */

/* ---- models ------------------------------------------------------------------------------ */

typedef struct dpd_model dpd_model;

typedef struct dpd_model_cfg {
    char family[32]; /* "gru" */
    int hidden;      /* H >= 1 (unused by the polynomial families: 1) */
    int layers;      /* >= 1 */
    int order;       /* polynomial families: nonlinearity orders K (|x|^0 .. |x|^(K-1)) */
    int memory;      /* polynomial families: memory depth Q */
    int cross;       /* gmp_ls: envelope lags and leads M */
    double thx, thh; /* delta families: input and hidden delta thresholds (0 = dense) */
    int units;       /* dvrjanet: DVR units K (0 = 3) */
} dpd_model_cfg;

/* One tensor of the parameter table: OpenDPD state-dict name and PyTorch shape. */
typedef struct dpd_tensor {
    char name[64];
    int ndim;
    int shape[4];
    size_t offset; /* in floats, into the parameter buffer */
    size_t numel;
} dpd_tensor;

/* Creates a model with zeroed parameters. DPD_E_UNSUPPORTED for an unknown family,
 * DPD_E_INVAL for a bad size. */
DPD_API DPD_CHECK dpd_status dpd_model_create(const dpd_model_cfg *cfg, dpd_model **out,
                                              dpd_error *err);
DPD_API void dpd_model_free(dpd_model *m);
DPD_API const dpd_model_cfg *dpd_model_config(const dpd_model *m);
DPD_API size_t dpd_model_nparams(const dpd_model *m);
DPD_API int dpd_model_ntensors(const dpd_model *m);
DPD_API const dpd_tensor *dpd_model_tensor(const dpd_model *m, int i);
DPD_API float *dpd_model_params(dpd_model *m); /* the one parameter buffer (nparams floats) */
DPD_API float *dpd_model_grads(dpd_model *m);  /* same layout */

/* ---- kernels ----------------------------------------------------------------------------- */

/* Selects the CPU kernels for the whole process, before any model runs: "auto"/"fast" (the
 * best ISA this CPU has: avx512, avx2 or sse), one of those by name, or "ref" (the scalar
 * reference kernels). DPD_E_UNSUPPORTED when the CPU lacks the ISA. */
DPD_API DPD_CHECK dpd_status dpd_kernels_select(const char *name, dpd_error *err);
DPD_API const char *dpd_kernels_name(void);

/* ---- threads ----------------------------------------------------------------------------- */

/* A thread pool, created once and shared by models (the caller's thread counts as one). */
typedef struct dpd_pool dpd_pool;
DPD_API DPD_CHECK dpd_status dpd_pool_create(int threads, dpd_pool **out, dpd_error *err);
DPD_API void dpd_pool_free(dpd_pool *p);

/* Thread count of a --cpu-level name (low, balanced, high, max = 25/50/75/100 % of the logical
 * processors, rounded up, at least 1); 0 for an unknown name. */
DPD_API int dpd_cpu_level_threads(const char *level);

/* Runs m's batches on pool (NULL: the calling thread). Results are bit-identical for every
 * thread count: batches are cut into fixed chunks whose gradients are summed in order. Call
 * dpd_model_reserve again after changing the pool. */
DPD_API void dpd_model_set_pool(dpd_model *m, dpd_pool *pool);

/* OpenDPD's initialisation scheme (reference §3.1) drawn from dpd's RNG. */
DPD_API void dpd_model_init(dpd_model *m, dpd_rng *rng);

/* Temporal sparsity of the delta families (reference §3.7), accumulated over every forward pass
 * since the last reset: zeros of the thresholded input and hidden deltas. */
typedef struct dpd_sparsity {
    long long zeros_dx, numel_dx, zeros_dh, numel_dh;
    double sp_dx, sp_dh, sp_dv; /* SP_T_DX, SP_T_DH, SP_T_DV */
    double hw_param;            /* HW_PARAM: other params + RNN weights x (1 - SP_T_DV) */
} dpd_sparsity;

/* 0 for a family without delta statistics; otherwise fills s and, when reset, zeroes the
 * counters. */
DPD_API int dpd_model_sparsity(dpd_model *m, dpd_sparsity *s, int reset);

/* Inference: x (B, T, 2) -> y (B, T, 2), every sequence from zero state. Reserves its own
 * workspace (grown on demand). */
DPD_API DPD_CHECK dpd_status dpd_model_forward(dpd_model *m, const float *x, int B, int T,
                                               float *y, dpd_error *err);

/* Backward after dpd_model_forward of the same x, B, T: dy (B, T, 2) -> the gradient buffer
 * (overwritten) and dx (B, T, 2) when non-NULL. The chain rule through a frozen model (a DPD
 * trained through a PA) uses this. */
DPD_API DPD_CHECK dpd_status dpd_model_backward(dpd_model *m, const float *x, const float *dy,
                                                int B, int T, float *dx, dpd_error *err);

/* Training pass: forward, MSE loss over B*T*2 against target, backward into the gradient
 * buffer (overwritten, not accumulated). dx (B, T, 2) may be NULL. */
DPD_API DPD_CHECK dpd_status dpd_model_train_step(dpd_model *m, const float *x, const float *tgt,
                                                  int B, int T, double *loss, float *dx,
                                                  dpd_error *err);

/* ---- applying a model to a long recording (dpd run) --------------------------------------- */

typedef struct dpd_apply_cfg {
    int exact;     /* 1: the whole recording as one sequence from zero state (OpenDPD's run_dpd) */
    int section;   /* sectioned mode: output samples per section */
    int warmup;    /* samples run before each section and discarded (state settles) */
    int lookahead; /* samples run after each section and discarded (non-causal models) */
    int batch;     /* sections per forward call */
} dpd_apply_cfg;

/* section 4096, warmup 1024, lookahead 32, batch 64. */
DPD_API void dpd_apply_defaults(dpd_apply_cfg *c);

/* y (n, 2) = the model applied to x (n, 2). Sectioned mode cuts the recording into windows of
 * warmup + section + lookahead samples (shifted inward at the ends), each from zero state, and
 * keeps each window's middle; memory is O(batch x window). Exact mode needs memory O(n). */
DPD_API DPD_CHECK dpd_status dpd_apply(dpd_model *m, const float *x, size_t n, float *y,
                                       const dpd_apply_cfg *c, dpd_error *err);

/* The same with any forward function (a provider session): fwd(ctx, x, B, T, y, err). */
typedef dpd_status (*dpd_forward_fn)(void *ctx, const float *x, int B, int T, float *y, dpd_error *err);
DPD_API DPD_CHECK dpd_status dpd_apply_with(dpd_forward_fn fwd, void *ctx, const float *x, size_t n,
                                            float *y, const dpd_apply_cfg *c, dpd_error *err);

/* ---- checkpoints (safetensors, OpenDPD state-dict names) --------------------------------- */

/* String pairs for the __metadata__ block. */
typedef struct dpd_kv {
    const char *key, *value;
} dpd_kv;

/* Writes the model's tensors (plus `extra` flat F32 tensors named in extra_names, may be 0)
 * atomically: temporary file, fsync, rename. */
DPD_API DPD_CHECK dpd_status dpd_ckpt_save(const char *path, const dpd_model *m,
                                           const dpd_kv *meta, int nmeta, int nextra,
                                           const char *const *extra_names,
                                           const float *const *extra, const size_t *extra_len,
                                           dpd_error *err);

/* Opens a checkpoint, validates header, offsets and sizes, and builds the model it describes
 * from its metadata (family, hidden, layers). Truncated or corrupt files are DPD_E_FORMAT. */
DPD_API DPD_CHECK dpd_status dpd_ckpt_load(const char *path, dpd_model **out, dpd_error *err);

/* ---- synthetic data (dpd synth) ---------------------------------------------------------- */

typedef struct dpd_synth_cfg {
    int carriers;        /* number of carriers */
    double carrier_bw;   /* Hz */
    int qam;             /* 4, 16, 64, 256, 1024 */
    double fs;           /* Hz */
    size_t length;       /* total samples (split 0.6/0.2/0.2 on nperseg boundaries) */
    int nperseg;         /* OFDM frame = eval segment length */
    double occupancy;    /* fraction of each carrier's bandwidth filled with subcarriers */
    double snr_db;       /* output noise */
    double gain;         /* linear small-signal gain */
    double sat;          /* Rapp saturation amplitude */
    double smooth;       /* Rapp smoothness p */
    double pm_alpha, pm_beta; /* Saleh AM/PM: phi = alpha r^2 / (1 + beta r^2), radians */
    uint64_t seed;
} dpd_synth_cfg;

DPD_API void dpd_synth_defaults(dpd_synth_cfg *c);

/* Writes an OpenDPD split_csv dataset (six CSVs + spec.json) into dir (created if needed).
 * Same configuration -> byte-identical files. */
DPD_API DPD_CHECK dpd_status dpd_synth_write(const dpd_synth_cfg *c, const char *dir,
                                             dpd_error *err);

/* ---- training (dpd train-pa, dpd train-dpd) ------------------------------------------------ */

typedef struct dpd_train_cfg {
    char data[4096];    /* dataset directory */
    char out[4096];     /* output root; run dir = out/<dataset>/train_pa/<RUN_ID> */
    char resume[4096];  /* "" or a run directory to continue */
    char pa[4096];      /* "" for PA training; for DPD training the frozen PA checkpoint or run dir */
    dpd_model_cfg model;
    int epochs, batch, batch_eval, frame, stride;
    double lr, lr_end, decay, weight_decay, clip;
    int patience, lr_schedule;
    uint64_t seed;
    double evm_fs;      /* 0 = dataset fs (dpd default); 800e6 = OpenDPD v2.0.0 */
    char preset[16];    /* "" | quick | full (informational; the fields above are resolved) */
    int ls;             /* 1: fit a polynomial model by least squares instead of gradient descent
                         * (one "epoch"); DPD runs use indirect learning (ILA) */
    double ls_reg;      /* ridge on the column-normalised basis */
    int ls_iter;        /* ILA iterations: the first on the measured data, the rest through the PA */
    int threads;        /* worker threads, >= 1; results do not depend on it */
    char provider[16];  /* "" (the settings) | auto | cpu | cuda: where the training steps run (docs/providers.md) */
} dpd_train_cfg;

/* The research recipe (reference §13) with GRU-23. */
DPD_API void dpd_train_defaults(dpd_train_cfg *c);

/* Applies a preset's epochs, frame and stride. DPD_E_INVAL for an unknown name. */
DPD_API DPD_CHECK dpd_status dpd_train_preset(dpd_train_cfg *c, const char *name, dpd_error *err);

typedef struct dpd_progress {
    int epoch, epochs;        /* 0-based epoch, total */
    int batch, batches;       /* 1-based batch just done, batches per epoch */
    double loss;              /* that batch's loss */
    double elapsed;           /* seconds since the epoch started */
    int epoch_done;           /* 1: epoch finished, the fields below are set */
    double train_loss, val_loss, lr;
    dpd_metrics val, test;
    int improved;
} dpd_progress;

typedef struct dpd_train_result {
    char run_dir[4096];
    int epochs;      /* epochs completed in total */
    int best_epoch;  /* 0-based */
    dpd_metrics val, test; /* of the best epoch */
    int dpd;                       /* 1 for a DPD run */
    dpd_metrics no_dpd_val, no_dpd_test; /* DPD runs: the frozen PA driven by x itself */
    char provider[600];            /* where the training steps ran, and why */
} dpd_train_result;

typedef void (*dpd_progress_fn)(void *user, const dpd_progress *p);

/* Trains a PA model (c->pa empty) on (x -> y), or a DPD model through the frozen PA model
 * c->pa toward g x with g = max|y_train| / max|x_train| (reference §5). Writes the run directory
 * (docs/formats.md). On failure after the run directory exists, res->run_dir names it. */
DPD_API DPD_CHECK dpd_status dpd_train(const dpd_train_cfg *c, dpd_progress_fn fn, void *user,
                                       dpd_train_result *res, dpd_error *err);

#ifdef __cplusplus
}
#endif
#endif
