/* dpd — neural power-amplifier modeling and digital predistortion.
 *
 * The public C API of libdpd, and the only one its front ends (the dpd command, the studio,
 * bindings) use: statuses, datasets, RF metrics, model families and models, sessions (every
 * computation on an execution provider), evaluation, training with typed events and
 * cancellation, applying a model to a recording, checkpoints, providers, runtime packs,
 * settings and the synthetic data generator. docs/api.md is the guide.
 *
 * The library never prints and never exits: every fallible call returns a dpd_status
 * (DPD_OK = 0) and fills a caller-owned dpd_error with a message that names the file, line,
 * field or value at fault. There are no process-global switches: threads and kernels are
 * session options. Functions are not thread-safe on one object unless stated; distinct objects
 * may be used from distinct threads.
 *
 * Legend for shapes: B batch, T time, H hidden, S segments, N segment length; IQ signals are
 * interleaved float pairs (..., 2) with channel 0 = I and 1 = Q. */
#ifndef DPD_DPD_H
#define DPD_DPD_H

#include <stddef.h>
#include <stdio.h>
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
    DPD_E_ABORTED,     /* the caller asked to stop (an event callback returned non-zero) */
    DPD_E_DIVERGED     /* training diverged: a loss is not finite */
} dpd_status;

/* Caller-owned error record. Every fallible call that takes one leaves status == the returned
 * status and a one-line message in msg (empty on success is not guaranteed; check the status).
 * field names the configuration field at fault ("hidden"), "" when the error is not about one;
 * front ends map it to their own names (the dpd command to --hidden). */
typedef struct dpd_error {
    dpd_status status;
    char msg[1024];
    char field[32];
} dpd_error;

/* Short name of a status ("ok", "invalid argument", ...). Never NULL. */
DPD_API const char *dpd_status_str(dpd_status s);

/* ---- datasets (OpenDPD layouts, reference §1) -------------------------------------------- */

enum { DPD_TRAIN = 0, DPD_VAL = 1, DPD_TEST = 2, DPD_NSPLIT = 3 };

/* What spec.json says. Fields metrics need (fs, bw_main, n_sub, nperseg) are always set after a
 * successful load: their absence is a load error (a mat dataset may take fs from its file). */
typedef struct dpd_spec {
    double fs;        /* input_signal_fs, Hz */
    double bw_main;   /* bw_main_ch (alias input_signal_bw), Hz */
    double bw_sub;    /* bw_sub_ch (alias input_signal_sub_ch_bw), Hz; 0 when absent */
    int n_sub;        /* n_sub_ch */
    int nperseg;      /* eval segment length and Welch/FFT length */
    double ratios[3]; /* split_ratios (train, val, test); used by single_csv and mat */
    long guard;       /* split_guard: single_csv and mat samples left out between splits (default 256) */
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
    char protocol[24];           /* how the splits were made: "files" (split_csv: as given) or "contiguous-v1"
                                    (single_csv and mat: one capture cut by dpd_split_contiguous) */
    size_t begin[DPD_NSPLIT];    /* contiguous-v1: each split's first sample in the capture (files: 0) */
} dpd_dataset;

/* Loads the dataset directory dir (docs/formats.md: split_csv, single_csv or mat, as spec.json's
 * dataset_format says). split_csv: the splits whose bits (1 << DPD_TRAIN ...) are in `need`;
 * splits in `want` but not in `need` are loaded when their files exist and left empty otherwise
 * (single_csv and mat: all three, from the one capture). Numbers are parsed in the
 * C locale; NaN/Inf, extra or missing fields, row-count mismatches and empty splits are
 * DPD_E_FORMAT naming file and line. On failure ds is left empty (dpd_dataset_free is safe). */
DPD_API DPD_CHECK dpd_status dpd_dataset_load(const char *dir, unsigned need, unsigned want,
                                              dpd_dataset *ds, dpd_error *err);
DPD_API void dpd_dataset_free(dpd_dataset *ds);

/* Split protocol contiguous-v1 (opendpd-protocols §2, rules 13-16) of an n-sample capture: usable
 * = n - 2 guard; train gets floor(usable r_train) samples from 0, val floor(usable r_val) from
 * train's end + guard, test the remainder from val's end + guard to n. The ratios must each lie in
 * [0, 1] and sum to 1 (within 1e-6), usable must be >= 3 and every split >= 1 sample; otherwise
 * DPD_E_INVAL saying which. begin[k], len[k]: split k's first sample and length. */
DPD_API DPD_CHECK dpd_status dpd_split_contiguous(size_t n, const double ratios[3], size_t guard,
                                                  size_t begin[3], size_t len[3], dpd_error *err);

/* Reads a CSV with a header line into out (rows, ncol) of doubles (malloc'd; caller frees).
 * names[k] is the header name of output column k (other columns are ignored); with names NULL
 * the file must have exactly ncol columns, taken in order. Non-numeric, non-finite, missing or
 * extra fields, a missing header and an empty file are DPD_E_FORMAT naming the file and line. */
DPD_API DPD_CHECK dpd_status dpd_csv_read(const char *path, int ncol, const char *const *names,
                                          double **out, size_t *rows, dpd_error *err);

/* The level of n complex samples (I then Q): *peak = max |v|, *rms = sqrt(mean |v|^2) over the
 * samples within 60 dB of the peak (|v| >= 1e-3 peak: a bursty recording's silent gaps left out);
 * both 0 when n is 0 or the samples are silent. */
DPD_API void dpd_iq_level(const double *iq, size_t n, double *peak, double *rms);

/* Target gain g = max|y_train| / max|x_train| (reference §5); 0 when the train split is empty. */
DPD_API double dpd_dataset_gain(const dpd_dataset *ds);
/* The same ratio, max|y| / max|x|, of one split (where a dataset has no train split, the front ends
 * draw and score g x at the evaluated split's own gain); 0 when it is empty or x is silent. */
DPD_API double dpd_split_gain(const dpd_split *sp);

/* A split's fingerprint: the SHA-256, as 64 lowercase hex digits, of its sample count (8 bytes,
 * little-endian) then x and y as float64 (little-endian): the same for two directories holding the
 * same samples, whatever their names and the numbers' formatting ("" when no digest could be made). Checkpoints carry their train
 * split's (train_sha256); a DPD run refuses a PA whose train split is not its own. */
DPD_API void dpd_split_fingerprint(const dpd_split *sp, char hex[65]);

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

/* The highest sample rate dpd takes (spec.json, a recording's or .mat's fs, --fs) and dpd synth
 * writes: 1 THz, well above any sampled baseband (RF converters run at tens of GS/s); beyond it a
 * rate is a mistake of units. */
#define DPD_MAX_RATE_HZ 1e12

/* ---- metrics (reference §6; profiles: docs/metrics.md) ------------------------------------ */

/* Five metric slots. What slot DPD_EVM and the ACLR slots hold depends on the profile: legacy:
 * NMSE, EVM, ACLR_L/R/AVG; general-spectral-v1: NMSE, IBE, ACPR_L/R/AVG; opendpd-spectral-v2:
 * NMSE, IBE, ACLR_L/R/AVG (dpd_metric_key names them). */
enum { DPD_NMSE = 0, DPD_EVM, DPD_ACLR_L, DPD_ACLR_R, DPD_ACLR_AVG, DPD_NMETRICS };

/* Metric profiles (opendpd-protocols §1): legacy-opendpd-v1 (OpenDPD v2's numbers: every
 * nperseg segment, the zero-padded tail included; the default, for reproducing published
 * figures), general-spectral-v1 and opendpd-spectral-v2 (the valid samples only, Welch density
 * PSD with 50 % overlap, ratios of 0 floored at -300 dB). */
typedef enum dpd_profile {
    DPD_PROFILE_LEGACY = 0,
    DPD_PROFILE_GENERAL,
    DPD_PROFILE_V2,
    DPD_NPROFILES
} dpd_profile;

DPD_API const char *dpd_profile_name(dpd_profile p); /* "legacy-opendpd-v1", ...; NULL out of range */
DPD_API int dpd_profile_parse(const char *name);     /* the profile named exactly, or -1 */
DPD_API const char *dpd_metric_key(dpd_profile p, int k); /* "NMSE", "IBE", "ACPR_L", ...; NULL out of range */

/* How metrics are scored: the profile, and for legacy the EVM sample rate (evm_fs 0: the
 * dataset's fs; 800e6 for OpenDPD v2.0.0's logged value). A NULL scoring is legacy, evm_fs 0. */
typedef struct dpd_scoring {
    dpd_profile profile;
    double evm_fs;
} dpd_scoring;

/* Whether a metric could be computed: ok; invalid (the inputs make it meaningless, e.g. a silent
 * reference); not_applicable (it does not apply, e.g. a split shorter than one segment, a band
 * outside the spectrum, no reference signal). */
typedef enum dpd_metric_status {
    DPD_METRIC_OK = 0,
    DPD_METRIC_INVALID,
    DPD_METRIC_NOT_APPLICABLE
} dpd_metric_status;

/* The five metrics. A value whose status is not ok is NaN and reason says why; front ends print
 * it as null (JSON) or "n/a (reason)". evm holds IBE and aclr_* ACPR under the profiles that
 * compute those. */
typedef struct dpd_metrics {
    double nmse, evm, aclr_l, aclr_r, aclr_avg; /* dB, dB, dBc, dBc, dBc */
    dpd_metric_status status[DPD_NMETRICS];
    char reason[DPD_NMETRICS][96];
    dpd_profile profile; /* the profile that scored them */
} dpd_metrics;

DPD_API const char *dpd_metric_name(int k);                    /* legacy's "NMSE", ..., "ACLR_AVG"; NULL out of range */
DPD_API double dpd_metric_value(const dpd_metrics *m, int k);  /* m->nmse for DPD_NMSE, ... */
DPD_API const char *dpd_metric_status_str(dpd_metric_status s); /* "ok", "invalid", "not_applicable" */

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

/* All five metrics of pred against ref with the spec's band plan under sc's profile (NULL:
 * legacy), n of the S N samples real (the rest zero padding). Legacy scores every segment, the
 * padded tail included (n < N makes every metric not_applicable: the split is shorter than one
 * segment); the other profiles score the first n samples only (fewer than N: the spectral
 * metrics are not_applicable). A metric that cannot be computed gets its status and reason
 * (never a non-finite value with status ok); the call fails only for bad arguments (DPD_E_INVAL)
 * and out of memory. */
DPD_API DPD_CHECK dpd_status dpd_metrics_compute(const float *pred, const float *ref, int S, int N,
                                                 size_t n, const dpd_spec *spec, const dpd_scoring *sc,
                                                 dpd_metrics *m, dpd_error *err);

/* The adjacent-channel entries of one signal alone (a measured PA output); NMSE and EVM/IBE are
 * not_applicable ("no reference signal"). Same statuses and failure rules as dpd_metrics_compute. */
DPD_API DPD_CHECK dpd_status dpd_metrics_aclr(const float *sig, int S, int N, size_t n,
                                              const dpd_spec *spec, const dpd_scoring *sc, dpd_metrics *m,
                                              dpd_error *err);
/* Power spectral density of S segments of N samples of (S, N, 2) IQ, as the ACLR sees it (Welch,
 * periodic Hann, each segment's mean removed, averaged over segments): db[k] in dB (relative: the
 * window's power is normalised out), freq[k] in Hz (NULL: not wanted), k = 0..N-1 from -fs/2 up
 * (fftshift order). */
DPD_API DPD_CHECK dpd_status dpd_psd(const float *sig, int S, int N, double fs, double *freq,
                                     double *db, dpd_error *err);

/* The PSD profile p's adjacent-channel figures are computed from, and their bands. Legacy: dpd_psd
 * of the S segments (power per bin, dB). The Welch profiles: the density of the first n samples of
 * the (S, N, 2) array, frames of N at every N - N/2 samples, periodic Hann, no detrend, in dB/Hz;
 * db and freq (Hz; NULL: not wanted) as dpd_psd's, N bins in fftshift order. DPD_E_INVAL when n is
 * under one segment (a Welch profile) or the arguments are bad. */
DPD_API DPD_CHECK dpd_status dpd_psd_of(const float *sig, int S, int N, size_t n, double fs, dpd_profile p,
                                        double *freq, double *db, dpd_error *err);

/* A Welch profile's bands in Hz, [lo, hi) each: band[0] the main channel, [1] and [2] the left and
 * right adjacent ones (general-spectral-v1: B wide; opendpd-spectral-v2: one carrier, B / n_sub);
 * *carrier the width of the slices the reference power is the largest of (v2: a carrier; general:
 * B, the main channel itself). DPD_E_INVAL for the legacy profile (its bands are bins:
 * dpd_band_of) or a spec without fs, B or (v2) n_sub; DPD_E_UNSUPPORTED when a band leaves +-fs/2,
 * err saying which. */
DPD_API DPD_CHECK dpd_status dpd_profile_bands(const dpd_spec *spec, dpd_profile p, double band[3][2], double *carrier,
                                               dpd_error *err);

/* ---- dataset doctor (dataset-doctor-v1; docs/doctor.md) --------------------------------- */

/* Evidence-based checks of a dataset directory's paired capture, the splits concatenated (train,
 * val, test): OpenDPD's dataset-doctor-v1 checks in its order with its constants, then dpd's own
 * (missing split files, DC offset, stuck samples, split lengths against nperseg). The data is
 * read leniently: NaN/Inf, empty fields, row-count mismatches and missing or invalid metadata are
 * findings, not load failures; only a malformed file is an error. Nothing is changed in place. */
#define DPD_DOCTOR_VERSION "dataset-doctor-v1"

typedef enum dpd_severity { DPD_SEV_ERROR = 0, DPD_SEV_WARNING, DPD_SEV_INFO } dpd_severity;

/* One measured value behind a finding: a number (kind 'n': value), a text (kind 's': text) or
 * sample indices (kind 'l': the first nlist of them, 0-based in the concatenated capture). */
typedef struct dpd_evidence {
    char key[32]; /* "delay_samples" */
    char kind;
    double value;
    char text[160];
    int nlist;
    size_t list[10];
} dpd_evidence;

typedef struct dpd_finding {
    char code[40];         /* "time_misalignment" */
    dpd_severity severity;
    int blocking;          /* 1: evaluation on this data means nothing until it is fixed */
    char title[96];
    char message[400];     /* what was measured, one sentence */
    char value[96];        /* the headline value for a table ("3.25 samples") */
    char suggestion[32];   /* a fix's machine name (fix_delay, remove_outliers, ...), "" when none */
    char fix[240];         /* one line a person can act on */
    double confidence;     /* [0, 1]; NaN where the check defines none */
    int nevidence;
    dpd_evidence evidence[12];
} dpd_finding;

typedef struct dpd_doctor_file {
    char name[256];        /* inside the dataset directory */
    uint64_t bytes;
    char sha256[65];       /* lowercase hex */
} dpd_doctor_file;

typedef struct dpd_doctor_report {
    char version[32];      /* DPD_DOCTOR_VERSION */
    char id[64];           /* doc-<UTC yyyymmdd-HHMMSS>-<first 8 of raw_sha256, or "nohash"> */
    char dataset[256];     /* the directory's last path component */
    char layout[16];       /* "split_csv" or "single_csv" */
    char raw_sha256[65];   /* SHA-256 of the data files' bytes, concatenated in split order (spec.json
                            * not included); "" when there is no data file */
    int nfiles;
    dpd_doctor_file files[8]; /* every file read, spec.json included */
    size_t n[DPD_NSPLIT];  /* samples per split (input and output trimmed to the shorter); 0: absent */
    size_t n_total;
    int evaluation_blocked; /* 1 when any finding blocks */
    /* the estimates; NaN when not measured (the doctor stops at a silent signal; output_uncorrelated
     * leaves delay and gain NaN, delay_confidence the correlation) */
    double delay;          /* samples, > 0: the output is late */
    double delay_confidence;
    double gain_re, gain_im; /* the fitted complex gain y ~ g x */
    double gain_confidence;
    double obw;            /* occupied bandwidth of the input, Hz */
    int nfindings;
    dpd_finding *findings; /* sorted error, warning, info (check order within each); owned */
} dpd_doctor_report;

DPD_API const char *dpd_severity_str(dpd_severity s); /* "error", "warning", "info" */

/* Examines the dataset directory dir into r (caller frees it with dpd_doctor_report_free, also
 * after a failure). DPD_E_IO when dir or a file cannot be read, DPD_E_FORMAT for a malformed file
 * (a CSV field that is not a number, a bad header, missing or extra fields, spec.json that is not
 * a JSON object or names an unknown layout), naming file and line; DPD_E_NOMEM. Findings never
 * fail the call. Reentrant. */
DPD_API DPD_CHECK dpd_status dpd_doctor_run(const char *dir, dpd_doctor_report *r, dpd_error *err);
DPD_API void dpd_doctor_report_free(dpd_doctor_report *r);

/* The error-level findings of r (those that block training), as "code: message (fix: fix)"
 * joined by "; " into buf (truncated to n - 1 bytes; "" when none; buf may be NULL when n is 0).
 * Returns their number. */
DPD_API int dpd_doctor_errors(const dpd_doctor_report *r, char *buf, size_t n);

enum { DPD_FIX_DELAY = 1, DPD_FIX_GAIN = 2 };

/* What dpd_doctor_fix wrote. */
typedef struct dpd_doctor_fixed {
    long shift;              /* the integer delay removed (the rounded estimate): output sample i + shift
                              * now pairs with input sample i; 0 without DPD_FIX_DELAY */
    double gain_re, gain_im; /* the complex gain divided out of the output; 1, 0 without DPD_FIX_GAIN */
    size_t rows[DPD_NSPLIT]; /* rows written per data file (single_csv: rows[0], its one file) */
} dpd_doctor_fixed;

/* Runs the doctor on dir (into r, as dpd_doctor_run) and writes a corrected copy into out:
 * DPD_FIX_DELAY shifts each file's output by the rounded delay and trims input and output to
 * their overlap; DPD_FIX_GAIN divides the output by the fitted complex gain; spec.json is copied
 * unchanged. out is created whole or not at all (a temporary directory beside it, then a rename);
 * dir is never written. DPD_E_INVAL when fixes is 0, out is dir or exists and is not empty, or
 * the report blocks evaluation (its error-level findings come first); other statuses as above. */
DPD_API DPD_CHECK dpd_status dpd_doctor_fix(const char *dir, const char *out, unsigned fixes,
                                            dpd_doctor_report *r, dpd_doctor_fixed *fixed,
                                            dpd_error *err);

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

/* ---- model families and models ------------------------------------------------------- */

typedef struct dpd_model dpd_model;

typedef struct dpd_model_cfg {
    char family[32]; /* "gru" (case-insensitive on input; stored lower-case) */
    int hidden;      /* H >= 1 (unused by the polynomial families: 1) */
    int layers;      /* >= 1 */
    int order;       /* polynomial families: nonlinearity orders K (|x|^0 .. |x|^(K-1)) */
    int memory;      /* polynomial families: memory depth Q */
    int cross;       /* gmp_ls: envelope lags and leads M */
    double thx, thh; /* delta families: input and hidden delta thresholds (0 = dense) */
    int units;       /* dvrjanet: DVR units K (0 = 3) */
} dpd_model_cfg;

/* A model family as `dpd models` lists it. */
typedef struct dpd_family_info {
    const char *name;   /* "gru" */
    const char *tag;    /* run-id tag: "GRU" */
    const char *params; /* parameter count formula */
    const char *about;  /* one line */
    int hidden;         /* the hidden size the family is usually run at (its paper's); not a training default */
    int max_layers;     /* 1 when the family has no layer count */
    int poly;           /* 1: sized by order/memory/cross instead of hidden/layers */
    int least_squares;  /* 1: fitted by least squares only (mp, gmp_ls) */
    int delta;          /* 1: has delta thresholds and sparsity statistics */
} dpd_family_info;

/* The families in listing order: the count, and entry i (0 out of range). Names are matched
 * case-insensitively by dpd_family_lookup (0 when unknown). */
DPD_API int dpd_family_count(void);
DPD_API int dpd_family_at(int i, dpd_family_info *out);
DPD_API int dpd_family_lookup(const char *name, dpd_family_info *out);

/* Parameter count of a configuration without building it (0 when it is not valid). */
DPD_API size_t dpd_model_count(const dpd_model_cfg *c);

/* One tensor of the parameter table: OpenDPD state-dict name and PyTorch shape. */
typedef struct dpd_tensor {
    char name[64];
    int ndim;
    int shape[4];
    size_t offset; /* in floats, into the parameter buffer */
    size_t numel;
} dpd_tensor;

/* A model is a family's parameter container: its configuration, its tensor table and one
 * 64-byte-aligned parameter buffer. It computes nothing itself: sessions do (below).
 * dpd_model_create gives zeroed parameters; DPD_E_UNSUPPORTED for an unknown family, DPD_E_INVAL
 * for a bad size (err->field names the field). */
DPD_API DPD_CHECK dpd_status dpd_model_create(const dpd_model_cfg *cfg, dpd_model **out,
                                              dpd_error *err);
DPD_API void dpd_model_free(dpd_model *m);
DPD_API const dpd_model_cfg *dpd_model_config(const dpd_model *m);
/* How many samples after t a model of configuration c reads for its output at t: 0 for the causal
 * families, 16 for TRes (its dilated skip), 30 for TCN, M for gmp_ls (its leading envelope terms);
 * -1 for an unknown family. dpd_apply's look-ahead must be at least this. */
DPD_API int dpd_model_lookahead(const dpd_model_cfg *c);
/* How many samples before t a model of configuration c reads for its output at t: -1 for the
 * recurrent families (their state carries every earlier sample; a sectioned run's warm-up only
 * makes the difference small) and an unknown family; for the others a sectioned dpd_apply whose
 * warm-up is at least this computes each output from the inputs --exact does (the same bytes where
 * both run the same kernels; RVTDCNN's fast ones are not exact), but for RVTDCNN's first 3
 * outputs of the recording, whose feature image wraps to the end of the sequence: 3 for RVTDCNN,
 * 20 for GMP (x[n-q] |x[n-q-r]|^k, q, r <= 10), 30 for TCN, Q - 1 for mp, and Q - 1 + M for
 * gmp_ls (Q - 1 at K = 1: no envelope cross terms). */
DPD_API int dpd_model_lookback(const dpd_model_cfg *c);
DPD_API size_t dpd_model_nparams(const dpd_model *m);
DPD_API int dpd_model_ntensors(const dpd_model *m);
DPD_API const dpd_tensor *dpd_model_tensor(const dpd_model *m, int i);
DPD_API float *dpd_model_params(dpd_model *m); /* the one parameter buffer (nparams floats) */

/* OpenDPD's initialisation scheme (reference §3.1) drawn from dpd's RNG. */
DPD_API void dpd_model_init(dpd_model *m, dpd_rng *rng);

/* Temporal sparsity of the delta families (reference §3.7) from skipped-update counters z =
 * (zeros dx, numel dx, zeros dh, numel dh) gathered by dpd_session_zeros. */
typedef struct dpd_sparsity {
    long long zeros_dx, numel_dx, zeros_dh, numel_dh;
    double sp_dx, sp_dh, sp_dv; /* SP_T_DX, SP_T_DH, SP_T_DV */
    double hw_param;            /* HW_PARAM: other params + RNN weights x (1 - SP_T_DV) */
} dpd_sparsity;

/* 0 for a family without delta statistics; otherwise fills s from z and returns 1. */
DPD_API int dpd_model_sparsity(const dpd_model *m, const long long z[4], dpd_sparsity *s);

/* Thread count of a cpu_level name (low, balanced, high, max = 25/50/75/100 % of the logical
 * processors, rounded up, at least 1); 0 for an unknown name. */
DPD_API int dpd_cpu_level_threads(const char *level);

/* ---- sessions: every computation runs on an execution provider ------------------------------ */

/* String pairs: session options and checkpoint metadata. */
typedef struct dpd_kv {
    const char *key, *value;
} dpd_kv;

typedef struct dpd_session dpd_session;

/* A session runs one model's configuration on one provider: inference, evaluation, training
 * steps, DPD training through a frozen PA (dpd_session_chain). It holds its own copy of the
 * weights (uploaded from m at creation), the optimizer moments and the device-resident splits;
 * it does not keep m.
 *
 * Options (string key/value pairs; an unknown key or a bad value is DPD_E_INVAL naming it):
 *   provider   auto (default: the settings' choice), cpu, or an installed pack's name (cuda)
 *   device     device index on the provider (0)
 *   max_batch  sequences per provider call (64), the bound of a training step's batch; an
 *              inference or evaluation batch that does not fit in device memory is halved and
 *              retried, and the working size kept for the session
 *   max_frame  samples per sequence reserved up front for training steps (0: none, sized on
 *              first use); inference and evaluation are not bounded by it (a v1 provider
 *              reserves 4096 when it is 0 and is re-reserved for longer calls, weights and
 *              moments kept)
 *   threads    cpu: worker threads, 0 = the settings' cpu_level (0); results do not depend on it.
 *              A loaded OpenBLAS/BLIS/OpenMP (used by least-squares fits) gets the same count,
 *              process-wide by those libraries' own design: the last session opened sets it
 *   kernels    cpu: auto, fast, avx512, avx2, sse or ref (the scalar reference) (auto); eager is auto.
 *              opencl, cuda: auto (a one-layer GRU, LSTM, DGRU or TRes-GRU or an RVTDCNN of
 *              hidden <= 32, not chained to a PA, trains in one fused kernel a step and
 *              evaluates every segment in one launch, in tiles; chunks of steps are
 *              recorded once and replayed: CUDA graphs), eager (fused,
 *              every step launched) or ref (the layered kernels, every step launched); every
 *              choice gives the same bits (tests/test_conformance.c)
 * An explicit provider that cannot serve the model is refused with why; auto falls back to cpu
 * and says why (dpd_session_reason). DPD_E_UNSUPPORTED, DPD_E_DEVICE as the provider reports. */
DPD_API DPD_CHECK dpd_status dpd_session_create(const dpd_model *m, const dpd_kv *opts, int nopts,
                                                dpd_session **out, dpd_error *err);
DPD_API void dpd_session_free(dpd_session *s); /* accepts NULL */

DPD_API const char *dpd_session_provider(const dpd_session *s); /* "cpu", "cuda", ... */
DPD_API const char *dpd_session_reason(const dpd_session *s);   /* the choice and why */
DPD_API const char *dpd_session_kernels(const dpd_session *s);  /* cpu: "avx512", "ref", ...; else "" */
DPD_API int dpd_session_threads(const dpd_session *s);          /* cpu: worker threads; else 0 */
DPD_API int dpd_session_batch(const dpd_session *s);            /* the working batch now */

/* FLOP of one training step of B frames of T samples (dpd_session_train_steps), by one fixed
 * definition (docs/performance.md): 2 per multiply-add of the forward's matrix products and
 * convolutions (dense: zero padding counted) and twice that backward (input and weight
 * gradients), 6 B T M for M multiply-adds a sample; chained, plus 4 B T M_pa for the frozen PA
 * (its forward and input gradient). Elementwise work is not counted. Defined for gru, lstm, dgru
 * and tres_gru (each weight used once a sample); 0 for the other families and for a chain to one. */
DPD_API double dpd_session_step_flops(const dpd_session *s, int B, int T);

/* One core's measured peak in GFLOP/s, the yardstick of dpd_session_step_flops: a single thread
 * runs independent vector multiply-add chains (fused on avx512 and avx2; sse: a multiply and an add)
 * with the kernel table `kernels` names (a session option value or dpd_session_kernels: auto,
 * fast, eager, avx512, avx2, sse; ref measures sse, the ISA the scalar reference is compiled
 * for; NULL: auto), counting 2 FLOP a lane, the best of 20 runs of 4 ms. Takes ~0.1 s of the
 * calling thread and reads low when other work shares its core. DPD_E_INVAL for an unknown name,
 * DPD_E_UNSUPPORTED when the CPU lacks the ISA; *gflops is set only on DPD_OK. Thread-safe. */
DPD_API DPD_CHECK dpd_status dpd_cpu_peak_gflops(const char *kernels, double *gflops, dpd_error *err);

/* Weights host -> session (m of the session's configuration), and back. */
DPD_API DPD_CHECK dpd_status dpd_session_upload(dpd_session *s, const dpd_model *m, dpd_error *err);
DPD_API DPD_CHECK dpd_status dpd_session_download(dpd_session *s, dpd_model *m, dpd_error *err);

/* Inference: x (B, T, 2) -> y (B, T, 2), every sequence from zero state, B of any size (cut
 * into working batches). */
DPD_API DPD_CHECK dpd_status dpd_session_forward(dpd_session *s, const float *x, int B, int T,
                                                 float *y, dpd_error *err);

/* Makes n samples of x and y ((n, 2) each; y may be NULL) resident in the session as split
 * `split` (0 ..< DPD_NSPLIT), replacing what was there: the training set for train_steps, or
 * evaluation segments for evaluate. Uploaded once per run; the caller may free x and y. */
DPD_API DPD_CHECK dpd_status dpd_session_attach(dpd_session *s, int split, const float *x,
                                                const float *y, size_t n, dpd_error *err);

/* Whole training steps on the resident split DPD_TRAIN: step k gathers frames
 * frames[k B .. min((k + 1) B, nframes)) (frame i = samples [i S, i S + L)), runs forward, the MSE
 * against y (for a chained DPD session: PA(DPD(x)) against y), backward, global-norm clipping at
 * max_norm (0: off) and AdamW at lr with weight decay wd; losses[k] receives its loss. Steps =
 * ceil(nframes / B). DPD_E_DIVERGED at the first non-finite loss (the steps before it stand). */
DPD_API DPD_CHECK dpd_status dpd_session_train_steps(dpd_session *s, const uint32_t *frames,
                                                     size_t nframes, int B, int L, int S, double lr,
                                                     double wd, double max_norm, double *losses,
                                                     dpd_error *err);

/* Predictions on a resident split holding S = n / N sequences of N samples, in batches of
 * `batch`: pred (S, N, 2) = the model (a chained DPD session: PA(DPD(x))). */
DPD_API DPD_CHECK dpd_status dpd_session_evaluate(dpd_session *s, int split, int N, int batch,
                                                  float *pred, dpd_error *err);

/* Chains a DPD session to its frozen PA's session (same provider): from now on train_steps and
 * evaluate on dpd run PA(DPD(x)), with nothing passing through the host; pa's weights never
 * change. A chain is one DPD session on one PA session (DPD_E_INVAL otherwise: a session chained
 * to itself, a PA chained twice or itself chained); pa NULL unchains. Chained cpu sessions share
 * the DPD session's thread pool: use them from one thread. Freeing either unchains. */
DPD_API DPD_CHECK dpd_status dpd_session_chain(dpd_session *dpd, dpd_session *pa, dpd_error *err);

/* The AdamW moments (nparams floats each) and step count, for checkpoints and bit-exact resume.
 * DPD_E_UNSUPPORTED when the provider keeps none. */
DPD_API DPD_CHECK dpd_status dpd_session_get_state(dpd_session *s, float *m, float *v, long *step,
                                                   dpd_error *err);
DPD_API DPD_CHECK dpd_status dpd_session_set_state(dpd_session *s, const float *m, const float *v,
                                                   long step, dpd_error *err);

/* Delta families: the skipped-update counters (zeros dx, numel dx, zeros dh, numel dh) of the
 * session's passes since the last call, then zeroed there; zeros for other families. */
DPD_API DPD_CHECK dpd_status dpd_session_zeros(dpd_session *s, long long z[4], dpd_error *err);

/* ---- evaluation: one for training, dpd eval, dpd parity and the studio ---------------------- */

/* A split cut into nperseg segments (zero-padded tail) with its target, and the last
 * predictions and scores. */
typedef struct dpd_eval {
    int split;       /* DPD_VAL or DPD_TEST */
    size_t n;        /* samples in the split */
    int S, N;        /* S segments of N samples */
    float *x, *ref;  /* (S, N, 2): the input, and the target (y, or g x for a DPD) */
    float *pred;     /* (S, N, 2): the predictions of the last dpd_eval_run */
    double loss;     /* mean over evaluation batches of each batch's MSE */
    dpd_metrics m;   /* of pred against ref */
    unsigned long long id; /* set by dpd_eval_prepare: which segments a session holds resident */
} dpd_eval;

/* Cuts split `split` of ds into segments; the target is y (gain 0) or gain x (a DPD's g x). */
DPD_API DPD_CHECK dpd_status dpd_eval_prepare(dpd_eval *e, const dpd_dataset *ds, int split,
                                              double gain, dpd_error *err);
/* Runs session s on the segments (made resident in s on the first run; a session that holds
 * another dpd_eval's segments gets these again) in batches of `batch`, then scores: loss and
 * metrics under sc (NULL: legacy, the dataset's fs). e->x must not be changed after the first run. */
DPD_API DPD_CHECK dpd_status dpd_eval_run(dpd_eval *e, dpd_session *s, int batch,
                                          const dpd_spec *spec, const dpd_scoring *sc, dpd_error *err);
DPD_API void dpd_eval_free(dpd_eval *e); /* accepts a zeroed or freed e */
/* The capture's own output y on e's split (ds, the dataset e was prepared from) scored against e's
 * target under sc (NULL: legacy): for a DPD's evaluation (target g x), the measured PA without
 * DPD, next to the PA model's figure. DPD_E_INVAL when e is not prepared or not of ds's split. */
DPD_API DPD_CHECK dpd_status dpd_eval_measured(const dpd_eval *e, const dpd_dataset *ds, const dpd_scoring *sc,
                                               dpd_metrics *m, dpd_error *err);

/* ---- plot data (dpd plot, the studio) --------------------------------------------------- */

/* A model's output on a split, for pictures: (S, N, 2) arrays, n of the S N samples real. */
typedef struct dpd_plot_in {
    const float *x, *ref, *pred; /* the input, the target (y, or g x for a DPD), the output */
    const float *other;          /* NULL, or a third signal on the same charts (a DPD run: the PA
                                  * driven by x itself, "no DPD") */
    const float *measured;       /* NULL, or one more, named "measured" (a DPD run: the capture's own
                                  * output y, the real PA without DPD) */
    int S, N;
    size_t n;
    const dpd_spec *spec;        /* fs and the band plan */
    const char *ref_name, *pred_name, *other_name; /* series names ("target", "prediction", "other") */
    dpd_profile profile;         /* whose PSD and bands (dpd_psd_of, dpd_profile_bands): the run's metric
                                  * profile; 0, legacy-opendpd-v1 */
} dpd_plot_in;

/* The plot data of a dpd_plot_in, as numbers: the PSD the ACLR is computed from (dpd_psd) with
 * the main and adjacent bands, the residual's PSD (pred - ref), AM/AM and AM/PM at every k-th real
 * sample (at most DPD_PLOT_POINTS points, deterministic), the first DPD_PLOT_IQ samples of I and Q.
 * Every value is already rounded as plots-v1 writes it (dB and degrees to 3 decimals, MHz and
 * amplitudes to 6): round(v 10^d) / 10^d, what a JSON reader gets back from the text; a value that
 * is not finite (the dB of a silent bin) is NaN, null in the text. Signal s of the arrays
 * [DPD_PLOT_SIGNALS]: 0 the target, 1 the prediction, then the other signal and the measured one
 * where given, in that order (nsig of them; NULL arrays past nsig). */
#define DPD_PLOT_POINTS 4000
#define DPD_PLOT_IQ 1000
#define DPD_PLOT_SIGNALS 4
typedef struct dpd_plot_data {
    int S, N;
    size_t n;
    double fs_mhz;
    char *empty;          /* NULL, or why there is nothing to plot (silent signals): then no arrays */
    int nsig;             /* 2, 3 or 4: the target, the prediction, the other and the measured signal */
    char *name[DPD_PLOT_SIGNALS]; /* the series' names */
    size_t nf;            /* PSD points */
    double *freq;         /* (nf) MHz, the PSDs' and the residual's */
    double *psd[DPD_PLOT_SIGNALS]; /* (nf) dB */
    double *residual;     /* (nf) dB: the PSD of pred - ref */
    dpd_profile profile;  /* the PSD's and the bands' (dpd_plot_in's) */
    int bands;            /* 1: band[] holds the main, left and right adjacent channels' first and last
                           * bin frequencies in MHz, as dpd_aclr sums them (a Welch profile: the bands'
                           * edges, [lo, hi)); 0: why_bands says why none */
    double band[3][2];
    char why_bands[256];
    size_t na;            /* AM/AM and AM/PM points */
    double *amp;          /* (na) |x| */
    double *am[DPD_PLOT_SIGNALS], *pm[DPD_PLOT_SIGNALS]; /* (na) |y|; the phase of y against x in degrees, within 180 of its
                            * power-weighted mean arg(sum y conj(x)) (in [-360, 360]); NaN where x or
                            * y is 0 (no phase) */
    size_t ni;            /* I/Q samples: 0, 1, ..., ni - 1 */
    double *i[DPD_PLOT_SIGNALS], *q[DPD_PLOT_SIGNALS]; /* (ni) */
    double ref_band[2];   /* with bands: the first and last bin frequencies, MHz, of the main channel's
                           * sub-channel with the most power in the prediction's PSD, the reference
                           * dpd_aclr divides by (the whole main channel when n_sub is 1) */
    char why_no_psd[160]; /* "" or, with nf 0 (no PSD, residual or bands), why: fewer samples than one
                           * segment (n < N), the rule the metrics follow (a zero-padded segment
                           * would read tens of dB low) */
    int silent[DPD_PLOT_SIGNALS]; /* signal s is zero throughout (its PSD has no finite value, its phase none) */
} dpd_plot_data;

/* The plot data of `in`; free with dpd_plot_free. NULL with err set on bad arguments (NULL
 * signals or spec, S < 1, N < 2, n not in (0, S N], a name that is not UTF-8) or no memory. */
DPD_API dpd_plot_data *dpd_plot_compute(const dpd_plot_in *in, dpd_error *err);
DPD_API void dpd_plot_free(dpd_plot_data *d); /* accepts NULL */

/* dpd_plot_compute in two steps, for a caller that draws AM/AM, AM/PM and I/Q while another thread
 * computes the spectra (the end-of-run pictures). dpd_plot_curves: the plot data but the spectra
 * (nf 0: no freq, psd, residual or bands; why_no_psd and empty as dpd_plot_compute's), failing
 * as it does; dpd_plot_text and dpd_plot_write refuse it (DPD_E_INVAL) until its spectra are in.
 * dpd_plot_spectra: the spectra added to d, from the same `in` (its arrays and spec still there;
 * the PSDs and bands of in->profile); it writes only nf, freq, psd, residual, profile, bands,
 * band, ref_band and why_bands, so another thread may read d's other fields meanwhile. DPD_OK,
 * also where d has nothing to plot, no whole segment, or its spectra already (kept). DPD_E_INVAL,
 * d unchanged, for a NULL d or an `in` unlike d's (its S, N, n, fs or series). The PSD's failure
 * (dpd_psd_of's status) or DPD_E_NOMEM leave d without spectra. dpd_plot_compute is the one,
 * then the other; their data are the same. */
DPD_API dpd_plot_data *dpd_plot_curves(const dpd_plot_in *in, dpd_error *err);
DPD_API DPD_CHECK dpd_status dpd_plot_spectra(dpd_plot_data *d, const dpd_plot_in *in, dpd_error *err);

/* d as one JSON document, version "plots-v1" (docs/formats.md): every number as d holds it (a
 * NaN as null). Silent signals give {"empty": "<why>"} and no series. malloc'd text; free() it.
 * NULL with err set when there is no memory. */
DPD_API char *dpd_plot_text(const dpd_plot_data *d, dpd_error *err);

/* dpd_plot_text's document written to f as it is made (f is left open, its position after the
 * text): about 16 KiB of memory instead of the whole text (340 KB for a quick run's plots). DPD_OK
 * (the bytes are handed to f; what f buffers can still fail: check ferror and fclose); DPD_E_IO
 * when a write fails (errno's reason in err; f's contents are then unspecified), DPD_E_NOMEM, or
 * DPD_E_INVAL for a NULL d or f. */
DPD_API dpd_status dpd_plot_write(const dpd_plot_data *d, FILE *f, dpd_error *err);

/* dpd_plot_compute, then dpd_plot_text: the plot data of `in` as plots-v1 text. */
DPD_API char *dpd_plot_json(const dpd_plot_in *in, dpd_error *err);

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

/* y (n, 2) = session s's model applied to x (n, 2); DPD_E_INVAL (field "lookahead") for a sectioned
 * look-ahead shorter than the model's (dpd_model_lookahead). Sectioned mode cuts the recording into
 * windows of warmup + section + lookahead samples (shifted inward at the ends), each from zero
 * state, and keeps each window's middle; memory is O(batch x window). Exact mode needs O(n). */
DPD_API DPD_CHECK dpd_status dpd_apply(dpd_session *s, const float *x, size_t n, float *y,
                                       const dpd_apply_cfg *c, dpd_error *err);

/* The one of words[0..n) closest to word, for a "did you mean": within an edit distance of 2 (1
 * for words under 6 characters; case aside; two neighbours swapped count one edit), or a word
 * followed by '_', '-' or '.' and more ("nperseg_typo"); NULL when none is close. */
DPD_API const char *dpd_nearest(const char *word, const char *const *words, int n);

/* ---- recordings (dpd run) ------------------------------------------------------------------ */

/* Whether a MATLAB v7.3 (HDF5) file is read in a child process (1, the default): HDF5 does not
 * survive every damaged file, and its crash then ends the child, not the caller (an error naming
 * the file). A process that may not fork (under a seccomp filter that kills on fork, as the
 * studio's public workers are) turns it off before sealing itself; the read then stays in place.
 * Process-wide, as the ability to fork is. */
DPD_API void dpd_mat_isolate(int on);

#define DPD_MAX_JSON_BYTES (1ull << 20) /* a settings file, a run's config.json, a pack.json */

/* The whole of a regular file of at most max bytes (0: 256 MiB, dpd's bound for a run's history
 * and events) in a malloc'd, NUL-terminated buffer (free() it), *len (may be NULL) its length, as
 * dpd reads every file it is given: anything but a regular file (a FIFO, a directory, a device
 * behind a link) is DPD_E_IO naming the path and what it is, found without blocking; a larger
 * file, or one that grows past max while read, DPD_E_FORMAT naming its size and the limit (what:
 * the kind of file, "history"); DPD_E_NOMEM. *buf is NULL on failure. */
DPD_API DPD_CHECK dpd_status dpd_read_file(const char *path, uint64_t max, const char *what, char **buf, size_t *len,
                                           dpd_error *err);

/* Whether dpd may write path over: DPD_OK when it is absent or a regular file (every file dpd
 * writes is written whole, then renamed into place); otherwise DPD_E_IO naming what is there (a
 * symbolic link and its target, which the rename would replace; a directory; a device). */
DPD_API DPD_CHECK dpd_status dpd_replaceable(const char *path, dpd_error *err);

/* A recording's format follows its path (docs/formats.md): "cf32" (raw little-endian interleaved
 * float32 IQ, a path ending in .cf32), "sigmf" (a SigMF cf32_le recording: X.sigmf-data with its
 * X.sigmf-meta beside it; either path names the pair), "mat" (a MATLAB .mat file, v5 or v7.3), else
 * "csv" (a header naming columns I and Q in any case, others ignored; or two columns, read as I
 * then Q). Never NULL. */
DPD_API const char *dpd_recording_format(const char *path);

/* What a recording says besides its samples, and the names a .mat file uses. Zeroed = the
 * defaults. Reading sets fs and freq from the file (0 where it says nothing) and reads the names;
 * writing reads every field. */
typedef struct dpd_recording_meta {
    double fs;               /* sample rate, Hz; 0 = unknown (SigMF core:sample_rate, .mat var_fs) */
    double freq;             /* centre frequency, Hz; 0 = unknown (SigMF captures[0] core:frequency) */
    const char *var;         /* .mat signal variable. Read: NULL = the first of x, iq, input, in;
                              * write: NULL = y (the model's output) */
    const char *var_in;      /* .mat write: the input's variable, NULL = x */
    const char *var_fs;      /* .mat sample-rate variable (a real scalar, Hz), NULL = fs (read: or Fs) */
    int mat73;               /* .mat write: 1 = v7.3 (HDF5), 0 = v5 */
    const char *description; /* SigMF write: core:description, NULL = none */
    const char *model;       /* SigMF write: dpd:model, the checkpoint that made it, NULL = none */
    const char *run_id;      /* SigMF write: dpd:run_id, NULL = none */
    int by_position;         /* read: 1 when a CSV's header named no columns I and Q and its two
                              * columns were read as I then Q, as a dataset's split file is */
} dpd_recording_meta;

/* Reads a recording in its path's format (dpd_recording_format). iq (n, 2) doubles, malloc'd
 * (caller frees; NULL on failure). meta (may be NULL) gives the .mat names and receives fs and
 * freq. Non-finite samples, a partial .cf32 sample, an empty file, a SigMF core:datatype other than
 * cf32_le, a .mat variable that is missing or not a complex vector (or N x 2 real I,Q matrix) of
 * double or single are DPD_E_FORMAT naming the file and the line, sample, field or variable;
 * DPD_E_IO when a file (a SigMF recording's .sigmf-meta too) cannot be opened. */
DPD_API DPD_CHECK dpd_status dpd_recording_read_meta(const char *path, dpd_recording_meta *meta, double **iq,
                                                     size_t *n, dpd_error *err);
/* dpd_recording_read_meta with the defaults, the metadata dropped. */
DPD_API DPD_CHECK dpd_status dpd_recording_read(const char *path, double **iq, size_t *n, dpd_error *err);

/* Writes y (n, 2) in the path's format, atomically (a SigMF pair: the data, then the metadata):
 * a .cf32 holds y alone; a CSV holds y as its I,Q columns (so the next step reads it) and, when in
 * is not NULL, the input as I_in,Q_in; a SigMF recording holds y and meta (core:sample_rate
 * required: DPD_E_INVAL with err->field "fs" without it); a .mat holds y as a complex single
 * column (var), in as a complex double column (var_in) and fs when known. meta may be NULL (the
 * defaults). A .mat v7.3 from a matio built without HDF5 is DPD_E_UNSUPPORTED. */
DPD_API DPD_CHECK dpd_status dpd_recording_write_meta(const char *path, const float *y, const double *in,
                                                      size_t n, const dpd_recording_meta *meta, dpd_error *err);
/* dpd_recording_write_meta with meta NULL. */
DPD_API DPD_CHECK dpd_status dpd_recording_write(const char *path, const float *y, const double *in, size_t n,
                                                 dpd_error *err);

/* ---- MATLAB files (.mat v5 and v7.3, through matio; docs/formats.md) ----------------------- */
/* matio is loaded at the first call that needs it, not linked: every function here (and a
 * recording or dataset in a .mat) is DPD_E_UNSUPPORTED, naming the package, where it cannot be. */

/* Reads a paired capture: the PA input and output as complex vectors (or N x 2 real I,Q matrices)
 * of double or single and equal length, and the sample rate. xname/yname NULL: "x" when the file
 * has it, else "input"; "y" when it has it, else "output". The sample rate is the real scalar "fs"
 * (else "Fs"); *fs = 0 when the file has neither. in and out (n, 2) doubles, malloc'd (caller
 * frees both; both NULL on failure). DPD_E_IO when the file cannot be opened; DPD_E_FORMAT naming
 * the file and the variable when it is not a MAT file, a variable is missing, of another class or
 * shape, real where complex is expected, holds a non-finite value, or the lengths differ;
 * DPD_E_NOMEM. Thread-safe (every .mat call takes one lock: matio's log and HDF5 are global). */
DPD_API DPD_CHECK dpd_status dpd_mat_read_pair(const char *path, const char *xname, const char *yname, double **in,
                                               double **out, size_t *n, double *fs, dpd_error *err);

/* 1 when the .mat file at path has a variable `name` (its header only is read), 0 when it has not or
 * cannot be read. Thread-safe. */
DPD_API int dpd_mat_has(const char *path, const char *name);

/* Writes a paired capture atomically, v5 or (mat73) v7.3: in and out (n, 2) as N x 1 complex double
 * variables xname and yname (NULL: "x" and "y"), and fs as the double scalar "fs" when > 0: what
 * dpd_mat_read_pair reads back bit for bit. DPD_E_INVAL (field "var") for a name MATLAB would refuse,
 * "fs" or one name twice, and for n == 0 or more than v5 holds; otherwise as dpd_mat_write_model. */
DPD_API DPD_CHECK dpd_status dpd_mat_write_pair(const char *path, const double *in, const double *out, size_t n,
                                                double fs, const char *xname, const char *yname, int mat73,
                                                dpd_error *err);

/* Writes a polynomial model's coefficients (family mp or gmp_ls) atomically, v5 or (mat73) v7.3:
 * coef (P x 1 complex double, dpd's term order) with term_k, term_q, term_m (P x 1 double: term p
 * is coef(p) * x(n-q) |x(n-q-m)|^k), degree, memory_depth, cross and family; an mp model also as
 * Coefficients, the memory_depth-by-degree matrix comm.DPD takes for a memory polynomial (row
 * q+1, column k+1 multiplies x(n-q) |x(n-q)|^k). DPD_E_UNSUPPORTED for a neural model or a v7.3
 * file without HDF5, DPD_E_IO when the file cannot be written. */
DPD_API DPD_CHECK dpd_status dpd_mat_write_model(const char *path, const dpd_model *m, int mat73, dpd_error *err);

/* ---- checkpoints (safetensors, OpenDPD state-dict names) --------------------------------- */

/* Writes the model's tensors (plus `extra` flat F32 tensors named in extra_names, may be 0)
 * atomically: temporary file, fsync, rename. The model configuration goes into __metadata__
 * from the configuration table, then meta. */
DPD_API DPD_CHECK dpd_status dpd_ckpt_save(const char *path, const dpd_model *m,
                                           const dpd_kv *meta, int nmeta, int nextra,
                                           const char *const *extra_names,
                                           const float *const *extra, const size_t *extra_len,
                                           dpd_error *err);

/* Opens a checkpoint, validates header, offsets and sizes, and builds the model it describes
 * from its metadata. Truncated or corrupt files are DPD_E_FORMAT, with no err->field (the file is
 * at fault, not an option: the message names the file and its metadata key). */
DPD_API DPD_CHECK dpd_status dpd_ckpt_load(const char *path, dpd_model **out, dpd_error *err);

/* What a checkpoint's metadata says about it. */
typedef struct dpd_ckpt_info {
    char kind[16];        /* "train_pa", "train_dpd", "" when not recorded */
    char dataset[256];    /* dataset name it was trained on, "" when not recorded */
    char run_id[256];
    char pa_run_id[256];  /* DPD checkpoints: the PA's run id */
    int least_squares;    /* 1: fitted by least squares */
    int epoch;            /* 1-based epoch of the weights, 0 when not recorded */
    dpd_model_cfg model;
    char train_sha256[65]; /* dpd_split_fingerprint of that dataset's train split, "" when not recorded */
    double fs;             /* that dataset's sample rate, Hz (input_signal_fs), 0 when not recorded */
    double train_peak, train_rms; /* its train split's input level (dpd_iq_level: train_input_peak,
                                   * train_input_rms), 0 when not recorded */
    int scored;            /* 1: val and test are the figures the run recorded for these weights (a
                            * best.safetensors: every metric of its metric_profile on both splits) */
    dpd_metrics val, test; /* under that profile; as recorded (8 decimals), a metric that was not
                            * computed NaN with its status and reason */
} dpd_ckpt_info;

DPD_API DPD_CHECK dpd_status dpd_ckpt_info_read(const char *path, dpd_ckpt_info *out, dpd_error *err);

/* A checkpoint path, or a run directory's checkpoint (its pa.safetensors when want_pa and the run
 * has one, else best.safetensors). DPD_E_IO when the path does not exist. */
DPD_API DPD_CHECK dpd_status dpd_ckpt_resolve(const char *path, int want_pa, char *out, size_t n,
                                              dpd_error *err);

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

/* The defaults: the "ofdm-mc" waveform (10 x 20 MHz carriers of 64-QAM OFDM at 800 MS/s). */
DPD_API void dpd_synth_defaults(dpd_synth_cfg *c);

/* Sets c's waveform fields (carriers, carrier_bw, qam, fs, length, nperseg, occupancy) to a
 * preset's, leaving the PA, noise and seed fields: "ofdm-mc" (the defaults'), "lte20" (one 20 MHz
 * carrier, 1200 subcarriers at 15 kHz, 122.88 MS/s), "nr100" (one 100 MHz carrier, 3276
 * subcarriers at 30 kHz, 491.52 MS/s); docs/synth.md. DPD_E_INVAL (err->field "preset") naming
 * the known presets for another name; c is then unchanged. */
DPD_API DPD_CHECK dpd_status dpd_synth_preset(dpd_synth_cfg *c, const char *name, dpd_error *err);

/* The capture dpd_synth_write splits: x the PA input and y its output, (c->length, 2) doubles
 * each, train then val then test, malloc'd (caller frees both; both NULL on failure). Same
 * configuration -> identical values. DPD_E_INVAL (err->field set) for a bad configuration,
 * DPD_E_NOMEM. */
DPD_API DPD_CHECK dpd_status dpd_synth_generate(const dpd_synth_cfg *c, double **x, double **y, dpd_error *err);

/* Writes an OpenDPD split_csv dataset (six CSVs + spec.json) into dir (created if needed).
 * Same configuration -> byte-identical files. */
DPD_API DPD_CHECK dpd_status dpd_synth_write(const dpd_synth_cfg *c, const char *dir,
                                             dpd_error *err);

/* ---- training (dpd train-pa, dpd train-dpd, dpd fit-ls) ---------------------------------- */

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
    char metric_profile[24]; /* "" or "legacy-opendpd-v1" (legacy), "general-spectral-v1", "opendpd-spectral-v2" */
    char preset[16];    /* "" | quick | full (informational; the fields above are resolved) */
    int ls;             /* 1: fit a polynomial model by least squares instead of gradient descent
                         * (one "epoch"); DPD runs use indirect learning (ILA). LAPACKE solves it,
                         * loaded when the run starts: DPD_E_UNSUPPORTED where it cannot be */
    double ls_reg;      /* ridge on the column-normalised basis */
    int ls_iter;        /* ILA iterations: the first on the measured data, the rest through the PA */
    int threads;        /* cpu worker threads, 0 = the settings' cpu_level; results do not depend on it */
    char kernels[16];   /* cpu kernels ("" = auto): a session option */
    char provider[32];  /* "" (the settings) | auto | cpu | a pack's name: where the steps run */
    int preview_every;  /* > 0: a PREVIEW event every that many steps (0: none); results do not
                         * depend on it */
} dpd_train_cfg;

/* The research recipe (reference §13) with GRU-23. */
DPD_API void dpd_train_defaults(dpd_train_cfg *c);

/* Applies a preset's epochs, frame and stride. DPD_E_INVAL for an unknown name. */
DPD_API DPD_CHECK dpd_status dpd_train_preset(dpd_train_cfg *c, const char *name, dpd_error *err);

/* The configuration table: every model and training field once, with its type, bounds, default
 * and meaning. It reads and writes config.json, the checkpoint metadata and --json output, and
 * validates input with one message shape ("hidden: 100000 is out of range 1..1024"). */
typedef struct dpd_field {
    const char *key;   /* "hidden" */
    char type;         /* 'i' int, 'u' uint64, 'd' double, 's' string, 'b' 0/1 */
    int model;         /* 1: a field of dpd_model_cfg (also in checkpoint metadata) */
    double min, max;   /* numeric bounds (inclusive) */
    const char *about;
} dpd_field;

DPD_API const dpd_field *dpd_config_fields(int *n);
/* Parses value into field key of c after checking it (DPD_E_INVAL naming the key, err->field set). */
DPD_API DPD_CHECK dpd_status dpd_config_set(dpd_train_cfg *c, const char *key, const char *value,
                                            dpd_error *err);
/* The value of field key as text (the shortest that reads back exactly); 0 for an unknown key. */
DPD_API int dpd_config_get(const dpd_train_cfg *c, const char *key, char *out, size_t n);
/* Every field within its bounds and consistent (a known family, its layer count); the first
 * offence is DPD_E_INVAL with err->field set. */
DPD_API DPD_CHECK dpd_status dpd_config_check(const dpd_train_cfg *c, dpd_error *err);

/* ---- training runs: typed events and cancellation -------------------------------------------- */

typedef enum dpd_event_type {
    DPD_EV_RUN_STARTED = 0, /* provider, resumed */
    DPD_EV_PROGRESS,        /* after each chunk of steps: steps_done of steps, loss, samples_per_s */
    DPD_EV_EPOCH,           /* an epoch ended: every metric, the learning rate, the predictions */
    DPD_EV_CHECKPOINT,      /* path written */
    DPD_EV_WARNING,         /* message */
    DPD_EV_RUN_ENDED,       /* status, outcome */
    DPD_EV_PREVIEW          /* preview_every > 0: the current weights' predictions on the first
                             * segments of the val split (at most 16 384 samples), every
                             * preview_every steps; never written to events.jsonl */
} dpd_event_type;

typedef struct dpd_event {
    dpd_event_type type;
    long seq;              /* 1, 2, ... over the run's events.jsonl (continued on resume); 0 for an
                            * event not written there (progress between heartbeats, the end of a
                            * run whose directory was removed) */
    double time;           /* seconds since the Unix epoch */
    const char *run_dir, *run_id;
    int epoch, epochs;     /* the 1-based epoch it concerns, and the total */
    /* RUN_STARTED */
    const char *provider;  /* where the steps run, and why */
    int resumed;           /* 1: continued from last.safetensors */
    const dpd_metrics *no_dpd, *measured; /* the baselines, [0] val and [1] test, as dpd_train_result's
                            * no_dpd_* (NULL for a PA model) and measured_* */
    dpd_profile profile;   /* the run's metric profile: the names its metrics go by (dpd_metric_key) */
    /* PROGRESS */
    long steps_done, steps; /* within the epoch (PREVIEW too; CHECKPOINT: of a stop inside the epoch, else 0) */
    long step;             /* PREVIEW: steps trained since the run began (a multiple of preview_every) */
    double loss;           /* the last step's */
    double samples_per_s;  /* frame samples trained per second over the epoch so far */
    double elapsed;        /* seconds since the epoch (or, at EPOCH, the run) started */
    /* EPOCH */
    double train_loss, val_loss, test_loss, lr; /* lr: the rate used during the epoch */
    dpd_metrics val, test;
    int improved;          /* 1: best.safetensors was replaced */
    const dpd_eval *val_eval; /* the validation inputs, targets and predictions (valid during the
                               * call); PREVIEW: those of the first segments, with their loss and
                               * metrics */
    const float *val_no_dpd, *val_measured; /* a DPD run's: the frozen PA driven by x itself and the
                               * capture's own y on val_eval's segments, (S, N, 2) as its arrays
                               * (PREVIEW: its first segments); NULL for a PA model */
    dpd_sparsity sparsity; /* delta DPD runs; zeros otherwise */
    /* CHECKPOINT */
    const char *path;      /* file name in run_dir: best.safetensors, last.safetensors */
    /* WARNING */
    const char *message;
    /* RUN_ENDED */
    dpd_status status;
    const char *outcome;   /* "completed", "cancelled", "diverged", "failed" (message says why) */
    /* EPOCH and RUN_STARTED: the best epoch so far, by the validation metric that selects it */
    int selection;         /* that metric: DPD_NMSE for a PA model, DPD_ACLR_AVG for a DPD */
    int best_epoch;        /* 1-based; 0 before the first epoch */
    double best;           /* its value at best_epoch (dB); 0 when best_epoch is 0 */
} dpd_event;

/* Receives every event in order on the training thread. Returning non-zero cancels the run: it
 * stops within one chunk of steps (~0.25 s), writes a consistent last.safetensors (resumable, to
 * an end bit-identical to an uninterrupted run), records "cancelled" in events.jsonl and returns
 * DPD_E_ABORTED. */
typedef int (*dpd_event_fn)(void *user, const dpd_event *e);

typedef struct dpd_train_result {
    char run_dir[4096];
    int epochs;      /* epochs completed in total */
    int best_epoch;  /* 1-based */
    dpd_metrics val, test; /* of the best epoch (a cancelled or diverged run: so far; best_epoch 0: none) */
    int dpd;                       /* 1 for a DPD run */
    int selection;                 /* the metric the best epoch is chosen by: DPD_NMSE (a PA model) or
                                    * DPD_ACLR_AVG (a DPD), under the run's profile */
    int baselines;                 /* 1: the four below hold the run's baselines (every run that started,
                                    * completed or not; no_dpd_* a DPD run's only) */
    dpd_metrics no_dpd_val, no_dpd_test; /* DPD runs: the frozen PA driven by x itself */
    dpd_metrics measured_val, measured_test; /* the capture's own output y: a DPD run's against g x
                                              * (dpd_eval_measured), the measured PA without DPD; a
                                              * PA model's, whose target y is, alone
                                              * (dpd_metrics_aclr): its ACLR (ACPR), the model's to
                                              * reach, NMSE and EVM (IBE) not applicable */
    char provider[600];            /* where the training steps ran, and why */
    dpd_train_cfg config;          /* the run's resolved configuration (a resume's, as read) */
} dpd_train_result;

/* Trains a PA model (c->pa empty) on (x -> y), or a DPD model through the frozen PA model
 * c->pa toward g x with g = max|y_train| / max|x_train| (reference §5), or fits a least-squares
 * model (c->ls). Writes the run directory (docs/formats.md). A run refused or cancelled before
 * its first epoch completes leaves no run directory; after that res->run_dir names it.
 * DPD_E_ABORTED when cancelled, DPD_E_DIVERGED when the loss stopped being finite. */
DPD_API DPD_CHECK dpd_status dpd_train(const dpd_train_cfg *c, dpd_event_fn fn, void *user,
                                       dpd_train_result *res, dpd_error *err);

/* ---- providers, runtime packs and settings (docs/providers.md) ------------------------------ */

typedef struct dpd_device_info {
    char name[128];
    uint64_t memory;   /* dedicated bytes (0: shared system memory) */
    char arch[32];     /* "sm_90" or "avx512" */
    int driver, runtime; /* versions, 0 when not applicable */
} dpd_device_info;

/* What the registry knows of one provider: the built-in cpu, or an installed pack's. */
typedef struct dpd_provider_info {
    char name[32];      /* "cpu", "cuda", ... */
    char pack[4096];    /* the active pack directory, "" for cpu */
    int usable;         /* 1: loaded and scored usable here */
    int score;          /* the provider's own score (higher ranks first; cpu DPD_CPU_RANK, 10) */
    char why[512];      /* why it is not usable */
    int ndevices;
    dpd_device_info device[8];
} dpd_provider_info;

/* cpu and every provider with an installed, active pack (active-<name> under the packs
 * directory), loaded once per pack and cached for the process. Fills up to max entries and
 * returns the count. */
DPD_API int dpd_provider_list(dpd_provider_info *out, int max);

/* The provider a session with option provider=want would get ("" or NULL: the settings' choice)
 * and why; an explicit provider that cannot be had is an error saying what to do. */
DPD_API DPD_CHECK dpd_status dpd_provider_choose(const char *want, char *name, size_t nname,
                                                 char *reason, size_t nreason, dpd_error *err);

/* 1 when the active pack of a provider this process loaded changed since: a long-running
 * process must restart before it uses the new backend (why says so). */
DPD_API int dpd_provider_restart_needed(char *why, size_t nwhy);

/* The batch bound of a gpu_memory level (low, medium, high, max = 25/50/75/90 % of dedicated
 * memory) for model cfg at T samples per sequence on a device with `memory` bytes (0: none). */
DPD_API int dpd_batch_bound(const char *gpu_memory, uint64_t memory, const dpd_model_cfg *cfg, int T);

/* $XDG_DATA_HOME/dpd/packs (default ~/.local/share/dpd/packs), and the installed pack directory
 * a provider's active link points to ("" when none). */
DPD_API const char *dpd_packs_dir(void);
DPD_API void dpd_pack_active(const char *provider, char *dir, size_t n);

/* The device providers dpd builds runtime packs of ("cuda", "opencl"), NULL-terminated: a name the
 * settings may hold before its pack is installed. */
DPD_API const char *const *dpd_pack_providers(void);

/* Installs and activates the pack archive FILE. sha256 ("" = read FILE.sha256) must match.
 * libarchive unpacks it, loaded at the first install: DPD_E_UNSUPPORTED where it cannot be.
 * helper is a dpd binary that validates a staged pack in a separate process (run as
 * `helper pack probe DIR`). A pack that cannot activate here sets the provider preference to
 * cpu with the reason recorded, and is refused. installed receives the pack's name. */
DPD_API DPD_CHECK dpd_status dpd_pack_install(const char *file, const char *sha256, const char *helper,
                                              char *installed, size_t ninstalled, dpd_error *err);
/* The helper's probe: load the provider of pack dir, check a device is listed, run a small GRU
 * inference against the CPU result and, for a provider that trains on its device (ABI v2), three
 * training steps of each fast family it supports (losses and AdamW moments within 1e-4 of the
 * CPU's). DPD_E_DEVICE when it cannot activate here, DPD_E_FORMAT on a mismatch. info (may be
 * NULL with ninfo 0): the device and the deviations. */
DPD_API DPD_CHECK dpd_status dpd_pack_probe(const char *dir, char *info, size_t ninfo, dpd_error *err);
DPD_API DPD_CHECK dpd_status dpd_pack_verify(const char *name, dpd_error *err);
DPD_API DPD_CHECK dpd_status dpd_pack_activate(const char *name, const char *helper, dpd_error *err);
DPD_API DPD_CHECK dpd_status dpd_pack_remove(const char *name, dpd_error *err);

/* The user's settings ($XDG_CONFIG_HOME/dpd/config.json): provider (auto, cpu or a pack's
 * name), cpu_level (low|balanced|high|max), gpu_memory (low|medium|high|max), and why the
 * provider preference last fell back to cpu. Absent file = defaults; a corrupt file or an
 * unknown key is an error naming the file. */
typedef struct dpd_settings {
    char provider[32];   /* auto */
    char cpu_level[16];  /* max */
    char gpu_memory[16]; /* medium */
    char reason[512];    /* why provider fell back to cpu; "" when it did not */
} dpd_settings;

DPD_API const char *dpd_settings_path(void);
DPD_API DPD_CHECK dpd_status dpd_settings_load(dpd_settings *s, dpd_error *err);
DPD_API DPD_CHECK dpd_status dpd_settings_save(const dpd_settings *s, dpd_error *err); /* atomic */
/* Sets key to value after validating both; DPD_E_INVAL naming the key or the allowed values. */
DPD_API DPD_CHECK dpd_status dpd_settings_set(dpd_settings *s, const char *key, const char *value,
                                              dpd_error *err);

#ifdef __cplusplus
}
#endif
#endif
