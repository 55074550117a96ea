/* doctor: the dataset doctor, dataset-doctor-v1 (reference opendpd-protocols.md §2; docs/doctor.md).
 * It reads a dataset directory leniently (NaN/Inf, empty fields, row-count mismatches, missing split
 * files and missing or invalid metadata become findings; only a malformed file is an error), runs
 * the reference's checks on the splits concatenated (train, val, test) in its order with its
 * constants, then dpd's own (DC offset, stuck samples, split lengths against nperseg), and sorts the
 * findings error -> warning -> info. dpd_doctor_fix writes a corrected copy (delay, gain) into a
 * new directory. It never changes the directory it reads, never prints, never exits.
 *
 * Legend: n samples of the capture; IQ arrays are interleaved doubles (n, 2). */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <kiss_fft.h>
#include <complex.h>
#include <math.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dpd/dpd.h"
#include "dataset.h"
#include "file.h"
#include "status.h"

/* dataset-doctor-v1's constants (changing one means a new version) */
#define MIN_SAMPLES 1024
#define MAX_LAG 512
#define OUTLIER_SIGMAS 25.0
#define MAD_SIGMA 1.4826
#define CLIP_WINDOW 1e-3      /* "at the peak": magnitude >= peak (1 - this) */
#define CLIP_MIN_FRACTION 1e-3
#define CLIP_MIN_COUNT 20
#define WINDOW (1u << 17)     /* analysis window of the correlation and the spectrum */
#define DELAY_FLAG 0.5
#define UNCORRELATED 0.5      /* dpd: a correlation below this is no PA's (OpenDPD's captures: 0.994-0.997) */
#define GAIN_QUANTILE 0.4
#define GAIN_MIN_FIT 16
#define GAIN_WARN_DB 3.0
#define PHASE_WARN_DEG 10.0
#define UNIT_PEAK 1.05
#define OBW_FFT 1024
#define OBW_POWER 0.99
#define OVERSAMPLING_LIMIT 0.6 /* OBW / fs */
#define BW_RATIO_LO 0.7
#define BW_RATIO_HI 1.3
#define IMAGE_WARN_DB 30.0 /* dpd: an image rejection below this is an I/Q imbalance (OpenDPD's captures: 49-62 dB) */
#define IMPROPER 0.5 /* dpd: |sum x^2| / sum |x|^2 above this: no image rejection is measured */
#define LINEAR_COPY 1e-4 /* dpd: a gain fit's residual below this: the output is a scaled copy of the input */
#define BW_OVERFLOW 1.05
#define OVERFLOW_BINS 40 /* bins of the OBW's FFT a channel must span for bandwidth_exceeds_channel */ /* dpd: a signal wider than its declared channel by more (within the reference's 1.3) */
/* dpd's own checks */
#define DC_LIMIT_DBC (-20.0) /* |mean| against RMS */
#define STUCK_RUN 16         /* identical consecutive samples that make a constant run */
#define REPEAT_FRACTION 0.01 /* samples equal to their predecessor */
#define MAX_NPERSEG (1 << 20) /* as the dataset loader allows */
#define MAX_FINDINGS 32


enum { META_FS, META_BW, META_NSUB, META_NPERSEG, META_SUB, NMETA };

/* The metadata the metrics need: key, the alias OpenDPD's DPA_100MHz uses, integer bounds (as the
 * loader's: a PSD needs two samples a frame), and whether it may be absent (bw_sub_ch: the loader
 * reads it when given). */
static const struct meta_field {
    const char *key, *alias;
    int integer;
    double min, max;
    int optional;
} meta_fields[NMETA] = {
    {"input_signal_fs", NULL, 0, 0, 0, 0},
    {"bw_main_ch", "input_signal_bw", 0, 0, 0, 0},
    {"n_sub_ch", NULL, 1, 1, 1e9, 0},
    {"nperseg", NULL, 1, 2, MAX_NPERSEG, 0},
    {"bw_sub_ch", "input_signal_sub_ch_bw", 0, 0, 0, 1},
};

/* One data file pair (split_csv: a split's input and output) or the one file (single_csv, part 0). */
typedef struct part {
    double *x, *y; /* (nx, 2), (ny, 2) as read: non-finite values kept */
    size_t nx, ny;
    int present;
    const char *absent;     /* split_csv: the file (in or out) missing beside its partner (split_file_missing) */
    char in[256], out[256]; /* file names; single_csv: both the CSV's */
} part;

typedef struct capture {
    char dir[4096];
    int single;               /* one capture cut by contiguous-v1: single_csv or mat */
    int mat;                  /* the mat layout */
    char csv[256];            /* single_csv or mat: the file's name */
    char matx[64], maty[64];  /* mat: the variables spec.json names ("": the defaults) */
    double mat_fs;            /* mat: the file's fs, 0 when it has none */
    int fs_from_mat;          /* mat: meta[META_FS] is the file's (spec.json gives none) */
    int fs_conflict;          /* mat: spec.json's input_signal_fs and the file's fs disagree */
    int nparts;
    part p[DPD_NSPLIT];
    char positional[6][32];   /* split_csv: files whose header names no columns I and Q (read by position) */
    int npositional;
    int have_spec;
    double meta[NMETA];       /* 0 when missing or invalid */
    unsigned missing, invalid; /* bits 1 << META_* */
    char invalid_text[320];
    double ratios[DPD_NSPLIT];
    size_t guard;             /* split_guard */
    char units[32];           /* amplitude_units, "unknown" when spec.json does not say */
    char typos[160];          /* the missing fields' misspellings in spec.json: "'nperseq' to nperseg", ... */
    EVP_MD_CTX *raw;          /* SHA-256 of the data files in order */
    int nraw;
    /* the capture: parts concatenated, each trimmed to min(nx, ny); non-finite samples zeroed by
     * the finite check */
    double *x, *y;            /* (n, 2) */
    size_t n;
    size_t off[DPD_NSPLIT];   /* part k's first sample in x, y */
} capture;

/* ---- findings ---------------------------------------------------------------------------- */

const char *dpd_severity_str(dpd_severity s) {
    return s == DPD_SEV_ERROR ? "error" : s == DPD_SEV_WARNING ? "warning" : "info";
}

/* A new finding (error-level ones block). Fewer checks than MAX_FINDINGS can fire; were the report
 * full, the last finding would be replaced. */
static dpd_finding *finding(dpd_doctor_report *r, const char *code, dpd_severity sev, const char *title) {
    if (r->nfindings == MAX_FINDINGS) r->nfindings--;
    dpd_finding *f = &r->findings[r->nfindings++];
    memset(f, 0, sizeof *f);
    snprintf(f->code, sizeof f->code, "%s", code);
    snprintf(f->title, sizeof f->title, "%s", title);
    f->severity = sev;
    f->blocking = sev == DPD_SEV_ERROR;
    f->confidence = NAN;
    if (f->blocking) r->evaluation_blocked = 1;
    return f;
}

static dpd_evidence *evidence(dpd_finding *f, const char *key, char kind) {
    if (!f || f->nevidence >= (int)(sizeof f->evidence / sizeof *f->evidence)) return NULL;
    dpd_evidence *e = &f->evidence[f->nevidence++];
    memset(e, 0, sizeof *e);
    snprintf(e->key, sizeof e->key, "%s", key);
    e->kind = kind;
    e->value = NAN;
    return e;
}

static void ev_num(dpd_finding *f, const char *key, double v) {
    dpd_evidence *e = evidence(f, key, 'n');
    if (e) e->value = v;
}

__attribute__((format(printf, 3, 4))) static void ev_text(dpd_finding *f, const char *key, const char *fmt, ...) {
    dpd_evidence *e = evidence(f, key, 's');
    if (!e) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->text, sizeof e->text, fmt, ap);
    va_end(ap);
}

static void ev_list(dpd_finding *f, const char *key, const size_t *idx, int n) {
    dpd_evidence *e = evidence(f, key, 'l');
    if (!e) return;
    e->nlist = n < 10 ? n : 10;
    memcpy(e->list, idx, (size_t)e->nlist * sizeof *idx);
}

/* Error, warning, info; the check order kept within each (insertion sort is stable). */
static void sort_findings(dpd_doctor_report *r) {
    for (int i = 1; i < r->nfindings; i++) {
        dpd_finding f = r->findings[i];
        int j = i;
        for (; j > 0 && r->findings[j - 1].severity > f.severity; j--) r->findings[j] = r->findings[j - 1];
        r->findings[j] = f;
    }
}

/* ---- reading ------------------------------------------------------------------------------ */

static void hex(const unsigned char *md, char *out) {
    for (int i = 0; i < 32; i++) snprintf(out + 2 * i, 3, "%02x", md[i]);
}

/* Lists the file in the report with its size and SHA-256. */
static void file_record(dpd_doctor_report *r, const char *name, const char *buf, size_t len) {
    if (r->nfiles >= (int)(sizeof r->files / sizeof *r->files)) return;
    dpd_doctor_file *f = &r->files[r->nfiles++];
    unsigned char md[32];
    snprintf(f->name, sizeof f->name, "%s", name);
    f->bytes = len;
    EVP_Digest(buf, len, md, NULL, EVP_sha256(), NULL);
    hex(md, f->sha256);
}

/* The number in [f, e) (spaces and tabs around it allowed) in the C locale: 1 with *v set (an
 * empty field reads as NaN: pandas writes a missing value so), 0 when it is not a number. */
static int field_number(const char *f, const char *e, double *v) {
    if (dpd_csv_number(f, e, v)) return 1;
    while (f < e && (*f == ' ' || *f == '\t')) f++;
    if (f == e) *v = NAN; /* blank */
    return f == e;
}

/* Parses row [p, e) of nh fields into row[k] = field pick[k]. 0, or the 1-based field that is not
 * a number, -1 for missing fields, -2 for extra ones. *bad receives the offending field's text. */
static int parse_row(const char *p, const char *e, int nh, const int *pick, int ncol, double *row,
                     const char **bad, int *nbad) {
    const char *q = p;
    for (int j = 0; j < nh; j++) {
        if (j && q++ == e) return -1; /* q was at the end, not at a comma */
        const char *f = q;
        while (q < e && *q != ',') q++;
        for (int k = 0; k < ncol; k++)
            if (pick[k] == j && !field_number(f, q, &row[k])) {
                *bad = f, *nbad = (int)(q - f);
                return j + 1;
            }
    }
    return q == e ? 0 : -2;
}

/* Reads the header [p, e) of path: pick[k] = the field named names[k]; when one is absent and
 * `ordered`, a header of exactly ncol fields is taken in order (*positional 1). *nh = its field
 * count. */
static dpd_status parse_header(const char *path, const char *p, const char *e, int ncol, const char *const *names,
                               int ordered, int *pick, int *nh, int *positional, dpd_error *err) {
    const char *f[64];
    int len[64], n = 0;
    for (const char *q = p;; q++) {
        if (n == 64) return dpd_fail(err, DPD_E_FORMAT, "%s:1: more than 64 columns", path);
        f[n] = q;
        while (q < e && *q != ',') q++;
        len[n] = (int)(q - f[n]);
        n++;
        if (q == e) break;
    }
    double v;
    if (len[0] && field_number(f[0], f[0] + len[0], &v))
        return dpd_fail(err, DPD_E_FORMAT, "%s:1: expected a header line (%s%s%s), got numbers%s", path, names[0],
                        ncol > 2 ? ",..," : ",", names[ncol - 1], dpd_csv_sep_hint(p, e, 1));
    dpd_status s = dpd_csv_pick(path, f, len, n, names, ncol, pick, err);
    if (s) return s;
    int all = 1;
    for (int k = 0; k < ncol; k++) all &= pick[k] >= 0;
    *positional = !all && ordered && n == ncol;
    if (*positional)
        for (int k = 0; k < ncol; k++) pick[k] = k;
    for (int k = 0; k < ncol; k++)
        if (pick[k] < 0)
            return dpd_fail(err, DPD_E_FORMAT, "%s:1: header lacks column '%s'%s", path, names[k], dpd_csv_sep_hint(p, e, 0));
    *nh = n;
    return DPD_OK;
}

/* The end of the line starting at p (before "\r\n" or "\n"), and *next the start of the next. */
static const char *line_end(const char *p, const char *end, const char **next) {
    const char *e = memchr(p, '\n', (size_t)(end - p));
    *next = e ? e + 1 : end;
    if (!e) e = end;
    if (e > p && e[-1] == '\r') e--;
    return e;
}

/* Parses the rows after the header into *out (rows, ncol); see read_csv. */
static dpd_status parse_rows(const char *path, const char *p, const char *end, int nh, const int *pick, int ncol,
                             double **out, size_t *rows, dpd_error *err) {
    size_t cap = 1, n = 0, line = 1;
    for (const char *q = p; (q = memchr(q, '\n', (size_t)(end - q))); q++) cap++; /* rows <= newlines + 1 */
    double *d = malloc(cap * (size_t)ncol * sizeof *d);
    dpd_status s = d ? DPD_OK : dpd_fail(err, DPD_E_NOMEM, "%s: out of memory for %zu rows", path, cap);
    while (!s && p < end) {
        const char *next, *e = line_end(p, end, &next), *bad = NULL;
        line++;
        if (e == p) { /* blank lines may only end the file, as the loader says */
            while (next < end && (*next == '\n' || *next == '\r')) next++;
            if (next == end) break;
            s = dpd_fail(err, DPD_E_FORMAT, "%s:%zu: empty line inside the data", path, line);
            goto done;
        }
        int nbad = 0, bf = parse_row(p, e, nh, pick, ncol, d + n * (size_t)ncol, &bad, &nbad);
        if (bf > 0)
            s = dpd_fail(err, DPD_E_FORMAT, "%s:%zu: field %d ('%.*s') is not a number", path, line, bf,
                         nbad > 40 ? 40 : nbad, bad);
        else if (bf < 0)
            s = dpd_fail(err, DPD_E_FORMAT, "%s:%zu: %s fields, expected %d", path, line, bf == -1 ? "missing" : "extra",
                         nh);
        if (s) goto done;
        n++;
        p = next;
    }
done:
    if (s) {
        free(d);
        d = NULL, n = 0;
    }
    *out = d;
    *rows = n;
    return s;
}

/* Reads the CSV `file` of the dataset (a header line, then rows) into *out (rows, ncol) of doubles
 * (malloc'd; NULL when there are no rows): column k is the header field names[k] (see
 * parse_header). Lenient about values (NaN, Inf and empty fields are kept for the checks), strict
 * about shape: DPD_E_FORMAT naming file and line. The bytes go into the file list and the raw hash. */
static dpd_status read_csv(capture *c, dpd_doctor_report *r, const char *file, int ncol, const char *const *names,
                           int ordered, double **out, size_t *rows, dpd_error *err) {
    int positional = 0;
    char path[4400], *buf;
    size_t len;
    *out = NULL, *rows = 0;
    snprintf(path, sizeof path, "%s/%s", c->dir, file);
    dpd_status s = dpd_file_read_max(path, DPD_MAX_CSV_BYTES, "CSV", &buf, &len, err);
    if (s) return s;
    file_record(r, file, buf, len);
    EVP_DigestUpdate(c->raw, buf, len);
    c->nraw++;
    const char *start = buf + dpd_csv_bom(buf, buf + len), *next, *e = line_end(start, buf + len, &next);
    int pick[4], nh = 0;
    if (e == start)
        s = dpd_fail(err, DPD_E_FORMAT, "%s:1: empty%s (expected a header line, then data rows)", path,
                     len ? " first line" : " file");
    else
        s = parse_header(path, start, e, ncol, names, ordered, pick, &nh, &positional, err);
    if (!s) s = parse_rows(path, next, buf + len, nh, pick, ncol, out, rows, err);
    if (!s && positional && c->npositional < 6)
        snprintf(c->positional[c->npositional++], sizeof c->positional[0], "%s", file);
    free(buf);
    return s;
}

/* Column pair (a, a + 1) of d (rows, ncol) as (rows, 2); NULL when out of memory. */
static double *columns(const double *d, size_t rows, int ncol, int a) {
    double *o = malloc((rows ? rows : 1) * 2 * sizeof *o);
    for (size_t i = 0; o && i < rows; i++) o[2 * i] = d[i * (size_t)ncol + a], o[2 * i + 1] = d[i * (size_t)ncol + a + 1];
    return o;
}

static dpd_status read_split_csv(capture *c, dpd_doctor_report *r, dpd_error *err) {
    static const char *const iq[2] = {"I", "Q"};
    c->nparts = DPD_NSPLIT;
    for (int k = 0; k < DPD_NSPLIT; k++) {
        part *p = &c->p[k];
        char a[4400], b[4400];
        snprintf(p->in, sizeof p->in, "%s_input.csv", dpd_split_names[k]);
        snprintf(p->out, sizeof p->out, "%s_output.csv", dpd_split_names[k]);
        snprintf(a, sizeof a, "%s/%s", c->dir, p->in);
        snprintf(b, sizeof b, "%s/%s", c->dir, p->out);
        int hx = dpd_exists(a), hy = dpd_exists(b);
        p->absent = hx == hy ? NULL : hx ? p->out : p->in;
        if (!hx || !hy) continue;
        dpd_status s = read_csv(c, r, p->in, 2, iq, 1, &p->x, &p->nx, err);
        if (!s) s = read_csv(c, r, p->out, 2, iq, 1, &p->y, &p->ny, err);
        if (s) return s;
        p->present = 1;
    }
    return DPD_OK;
}

static dpd_status read_single_csv(capture *c, dpd_doctor_report *r, dpd_error *err) {
    static const char *const names[4] = {"I_in", "Q_in", "I_out", "Q_out"};
    part *p = &c->p[0];
    double *d;
    size_t n;
    c->nparts = 1;
    snprintf(p->in, sizeof p->in, "%s", c->csv);
    snprintf(p->out, sizeof p->out, "%s", c->csv);
    dpd_status s = read_csv(c, r, c->csv, 4, names, 0, &d, &n, err);
    if (s) return s;
    p->x = columns(d, n, 4, 0);
    p->y = columns(d, n, 4, 2);
    free(d);
    if (!p->x || !p->y) return dpd_fail(err, DPD_E_NOMEM, "%s/%s: out of memory", c->dir, c->csv);
    p->nx = p->ny = n;
    p->present = 1;
    return DPD_OK;
}

/* A sample rate above the loader's bound (DPD_MAX_RATE_HZ) is metadata_invalid, as the loader
 * refuses it; from: where it was read. 1 when it was. */
static int fs_too_high(capture *c, double fs, const char *from) {
    if (!(fs > DPD_MAX_RATE_HZ)) return 0;
    size_t l = strlen(c->invalid_text);
    snprintf(c->invalid_text + l, sizeof c->invalid_text - l, "%s%s %g Hz is above 1 THz (hertz: 800 MHz is 800e6)",
             l ? "; " : "", from, fs);
    c->invalid |= 1u << META_FS;
    c->meta[META_FS] = 0;
    return 1;
}

/* A mat dataset's capture (dpd_mat_read_pair: strict, so a non-finite sample is a load error here)
 * and its sample rate: the file's fs stands in for a missing input_signal_fs, and the two must agree
 * when both are given. */
static dpd_status read_mat(capture *c, dpd_doctor_report *r, dpd_error *err) {
    part *p = &c->p[0];
    char path[4400], *buf;
    size_t len;
    double fs;
    c->nparts = 1;
    snprintf(p->in, sizeof p->in, "%s", c->csv);
    snprintf(p->out, sizeof p->out, "%s", c->csv);
    snprintf(path, sizeof path, "%s/%s", c->dir, c->csv);
    dpd_status s = dpd_file_read_max(path, DPD_MAX_CSV_BYTES, "MAT", &buf, &len, err);
    if (s) return s;
    file_record(r, c->csv, buf, len);
    EVP_DigestUpdate(c->raw, buf, len);
    c->nraw++;
    free(buf);
    if ((s = dpd_mat_read_pair(path, c->matx[0] ? c->matx : NULL, c->maty[0] ? c->maty : NULL, &p->x, &p->y, &p->nx,
                               &fs, err)))
        return s;
    p->ny = p->nx;
    p->present = 1;
    c->mat_fs = fs;
    char from[300];
    snprintf(from, sizeof from, "%s's fs", c->csv);
    if (fs > 0 && (c->missing & 1u << META_FS) && fs_too_high(c, fs, from)) {
        c->missing &= ~(1u << META_FS);
    } else if (fs > 0 && (c->missing & 1u << META_FS)) {
        c->meta[META_FS] = fs;
        c->missing &= ~(1u << META_FS);
        c->fs_from_mat = 1;
    } else if (fs > 0 && c->meta[META_FS] > 0 && fabs(c->meta[META_FS] - fs) > 1e-9 * fs) {
        c->fs_conflict = 1;
        size_t l = strlen(c->invalid_text);
        snprintf(c->invalid_text + l, sizeof c->invalid_text - l, "%sinput_signal_fs %.9g disagrees with %s's fs %.9g",
                 l ? "; " : "", c->meta[META_FS], c->csv, fs);
        c->invalid |= 1u << META_FS;
        c->meta[META_FS] = 0;
    }
    return DPD_OK;
}

/* One metadata field of spec.json into c->meta, or its bit in c->missing / c->invalid. */
static void read_meta(capture *c, json_t *root, int k) {
    const struct meta_field *m = &meta_fields[k];
    const char *key = m->key;
    json_t *j = json_object_get(root, key), *ja = m->alias ? json_object_get(root, m->alias) : NULL;
    if (!j && ja) j = ja, key = m->alias;
    if (!j) {
        const char *typo = m->optional ? NULL : dpd_spec_misspelling(root, m->key);
        if (!m->optional) c->missing |= 1u << k;
        if (typo) {
            size_t l = strlen(c->typos);
            snprintf(c->typos + l, sizeof c->typos - l, "%s'%.40s' to %s", l ? ", " : "", typo, m->key);
        }
        return;
    }
    if (j != ja && ja && !(json_is_number(j) && json_is_number(ja) && json_number_value(j) == json_number_value(ja))) {
        size_t l = strlen(c->invalid_text);
        snprintf(c->invalid_text + l, sizeof c->invalid_text - l, "%s%s and its alias %s are both given and differ",
                 l ? "; " : "", key, m->alias);
        c->invalid |= 1u << k;
        return;
    }
    double v = json_is_number(j) ? json_number_value(j) : NAN;
    if (isfinite(v) && v > 0 && (!m->integer || (v == floor(v) && v >= m->min && v <= m->max))) {
        c->meta[k] = v;
        return;
    }
    char *text = json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT);
    size_t l = strlen(c->invalid_text);
    snprintf(c->invalid_text + l, sizeof c->invalid_text - l, "%s%s = %.40s", l ? "; " : "", key, text ? text : "?");
    free(text);
    c->invalid |= 1u << k;
}

/* The layout fields: an unknown layout or a csv_filename that is not a plain name is DPD_E_FORMAT
 * (the data cannot be found); bad split_ratios are metadata_invalid (the defaults are used). */
static dpd_status read_layout(capture *c, json_t *root, const char *path, dpd_error *err) {
    json_t *fmt = json_object_get(root, "dataset_format");
    if (fmt && (!json_is_string(fmt) || (strcmp(json_string_value(fmt), "split_csv") &&
                                         strcmp(json_string_value(fmt), "single_csv") &&
                                         strcmp(json_string_value(fmt), "mat"))))
        return dpd_fail(err, DPD_E_FORMAT, "%s: field 'dataset_format' must be \"split_csv\", \"single_csv\" or \"mat\"",
                        path);
    c->mat = fmt && !strcmp(json_string_value(fmt), "mat");
    c->single = c->mat || (fmt && !strcmp(json_string_value(fmt), "single_csv"));
    snprintf(c->csv, sizeof c->csv, "%s", c->mat ? "data.mat" : "data.csv");
    struct {
        const char *key;
        char *out;
        size_t max;
    } names[3] = {{c->mat ? "mat_filename" : "csv_filename", c->csv, sizeof c->csv},
                  {"mat_input", c->matx, sizeof c->matx},
                  {"mat_output", c->maty, sizeof c->maty}};
    for (int k = 0; k < (c->mat ? 3 : 1); k++) {
        json_t *j = json_object_get(root, names[k].key);
        if (!j) continue;
        if (!json_is_string(j) || !json_string_value(j)[0] || strchr(json_string_value(j), '/') ||
            strlen(json_string_value(j)) >= names[k].max)
            return dpd_fail(err, DPD_E_FORMAT, "%s: field '%s' must be a plain name of 1 to %zu characters", path,
                            names[k].key, names[k].max - 1);
        snprintf(names[k].out, names[k].max, "%s", json_string_value(j));
    }
    json_t *guard = json_object_get(root, "split_guard");
    if (guard && (!json_is_integer(guard) || json_integer_value(guard) < 0 || json_integer_value(guard) > (1LL << 40)))
        return dpd_fail(err, DPD_E_FORMAT, "%s: field 'split_guard' must be an integer number of samples >= 0", path);
    if (guard) c->guard = (size_t)json_integer_value(guard);
    json_t *ratios = json_object_get(root, "split_ratios");
    for (int k = 0; ratios && k < DPD_NSPLIT; k++) {
        json_t *v = json_is_object(ratios) ? json_object_get(ratios, dpd_split_names[k]) : NULL;
        if (json_is_number(v) && json_number_value(v) >= 0 && json_number_value(v) <= 1) {
            c->ratios[k] = json_number_value(v);
            continue;
        }
        size_t l = strlen(c->invalid_text);
        snprintf(c->invalid_text + l, sizeof c->invalid_text - l, "%ssplit_ratios.%s is not a number in [0, 1]",
                 l ? "; " : "", dpd_split_names[k]);
        c->invalid |= 1u << NMETA;
    }
    json_t *units = json_object_get(root, "amplitude_units");
    if (json_is_string(units)) snprintf(c->units, sizeof c->units, "%s", json_string_value(units));
    return DPD_OK;
}

/* spec.json, leniently: absent is every field missing; a field absent, of the wrong type or out of
 * range is a finding later. Text that is not a JSON object is DPD_E_FORMAT with line and column. */
static dpd_status read_spec(capture *c, dpd_doctor_report *r, dpd_error *err) {
    char path[4400], *text;
    size_t len;
    snprintf(path, sizeof path, "%s/spec.json", c->dir);
    c->ratios[0] = 0.6, c->ratios[1] = 0.2, c->ratios[2] = 0.2;
    c->guard = 256;
    snprintf(c->csv, sizeof c->csv, "data.csv");
    snprintf(c->units, sizeof c->units, "unknown");
    if (!dpd_exists(path)) {
        for (int k = 0; k < NMETA; k++) c->missing |= (unsigned)!meta_fields[k].optional << k;
        return DPD_OK;
    }
    dpd_status s = dpd_file_read_max(path, DPD_MAX_SPEC_BYTES, "spec.json", &text, &len, err);
    if (s) return s;
    file_record(r, "spec.json", text, len);
    json_error_t je;
    size_t bom = dpd_csv_bom(text, text + len); /* the loader's rule */
    json_t *root = json_loadb(text + bom, len - bom, JSON_REJECT_DUPLICATES, &je);
    free(text);
    if (!root) return dpd_fail(err, DPD_E_FORMAT, "%s:%d:%d: %s", path, je.line, je.column, je.text);
    if (!json_is_object(root)) s = dpd_fail(err, DPD_E_FORMAT, "%s: expected a JSON object", path);
    if (!s) s = read_layout(c, root, path, err);
    for (int k = 0; !s && k < NMETA; k++) read_meta(c, root, k);
    json_decref(root);
    if (!s) fs_too_high(c, c->meta[META_FS], "input_signal_fs");
    if (!s && c->meta[META_FS] > 0 && c->meta[META_BW] >= c->meta[META_FS]) {
        size_t l = strlen(c->invalid_text);
        snprintf(c->invalid_text + l, sizeof c->invalid_text - l, "%sbw_main_ch %g is not below input_signal_fs %g",
                 l ? "; " : "", c->meta[META_BW], c->meta[META_FS]);
        c->invalid |= 1u << META_BW;
        c->meta[META_BW] = 0;
    }
    c->have_spec = 1;
    return s;
}

/* The parts concatenated into c->x, c->y, each trimmed to the shorter of its input and output. */
static dpd_status concatenate(capture *c, dpd_error *err) {
    size_t n = 0;
    for (int k = 0; k < c->nparts; k++) {
        const part *p = &c->p[k];
        c->off[k] = n;
        if (p->present) n += p->nx < p->ny ? p->nx : p->ny;
    }
    c->x = malloc((n ? n : 1) * 2 * sizeof *c->x);
    c->y = malloc((n ? n : 1) * 2 * sizeof *c->y);
    if (!c->x || !c->y) return dpd_fail(err, DPD_E_NOMEM, "%s: out of memory for %zu samples", c->dir, n);
    for (int k = 0; k < c->nparts; k++) {
        const part *p = &c->p[k];
        size_t m = p->nx < p->ny ? p->nx : p->ny;
        if (!p->present || !m) continue;
        memcpy(c->x + 2 * c->off[k], p->x, m * 2 * sizeof *c->x);
        memcpy(c->y + 2 * c->off[k], p->y, m * 2 * sizeof *c->y);
    }
    c->n = n;
    return DPD_OK;
}

static dpd_status load(const char *dir, capture *c, dpd_doctor_report *r, dpd_error *err) {
    snprintf(c->dir, sizeof c->dir, "%s", dir);
    size_t l = strlen(c->dir);
    while (l > 1 && c->dir[l - 1] == '/') c->dir[--l] = 0;
    const char *base = strrchr(c->dir, '/');
    snprintf(r->dataset, sizeof r->dataset, "%s", base && base[1] ? base + 1 : c->dir);
    dpd_status s = dpd_dataset_dir_ok(c->dir, err);
    if (s) return s;
    if (!(c->raw = EVP_MD_CTX_new()) || !EVP_DigestInit_ex(c->raw, EVP_sha256(), NULL))
        return dpd_fail(err, DPD_E_NOMEM, "%s: out of memory", c->dir);
    s = read_spec(c, r, err);
    if (!s) s = c->mat ? read_mat(c, r, err) : c->single ? read_single_csv(c, r, err) : read_split_csv(c, r, err);
    if (s) return s;
    if (!c->have_spec && !c->p[0].present && !c->p[1].present && !c->p[2].present &&
        !c->p[0].absent && !c->p[1].absent && !c->p[2].absent)
        return dpd_fail(err, DPD_E_IO, "%s: not a dataset directory (no spec.json and no split files such as "
                                       "train_input.csv)", c->dir);
    snprintf(r->layout, sizeof r->layout, "%s", c->mat ? "mat" : c->single ? "single_csv" : "split_csv");
    if (c->nraw) {
        unsigned char md[32];
        EVP_DigestFinal_ex(c->raw, md, NULL);
        hex(md, r->raw_sha256);
    }
    return concatenate(c, err);
}

static void capture_free(capture *c) {
    for (int k = 0; k < DPD_NSPLIT; k++) free(c->p[k].x), free(c->p[k].y);
    free(c->x);
    free(c->y);
    EVP_MD_CTX_free(c->raw);
}

/* Where sample i of the concatenated capture is: "train_output.csv:57" (output) or the input's file. */
static void locate(const capture *c, size_t i, int output, char *buf, size_t n) {
    int k = c->nparts - 1;
    while (k > 0 && (!c->p[k].present || c->off[k] > i || !c->p[k].nx || !c->p[k].ny)) k--;
    if (c->mat) /* MATLAB's 1-based index into the variable */
        snprintf(buf, n, "%s %s(%zu)", c->csv, output ? (c->maty[0] ? c->maty : "y") : (c->matx[0] ? c->matx : "x"),
                 i + 1);
    else
        snprintf(buf, n, "%s:%zu", output ? c->p[k].out : c->p[k].in, i - c->off[k] + 2); /* header is line 1 */
}

/* The split lengths: split_csv's parts, or the one capture cut by contiguous-v1 as the loader cuts
 * it (all 0, and why in *why when not NULL, when the loader would refuse the cut). */
static void split_lengths(const capture *c, size_t *n, dpd_error *why) {
    size_t begin[DPD_NSPLIT];
    if (!c->single) {
        for (int k = 0; k < DPD_NSPLIT; k++)
            n[k] = c->p[k].present ? (c->p[k].nx < c->p[k].ny ? c->p[k].nx : c->p[k].ny) : 0;
    } else if (dpd_split_contiguous(c->n, c->ratios, c->guard, begin, n, why))
        n[0] = n[1] = n[2] = 0;
}

/* ---- numerics -------------------------------------------------------------------------------- */

static double mag(const double *iq, size_t i) { return sqrt(iq[2 * i] * iq[2 * i] + iq[2 * i + 1] * iq[2 * i + 1]); }

/* sqrt(mean |s|^2) over the samples not masked out (mask NULL: all). */
static double rms(const double *iq, size_t n, const unsigned char *mask) {
    double e = 0;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (!mask || !mask[i]) e += iq[2 * i] * iq[2 * i] + iq[2 * i + 1] * iq[2 * i + 1], m++;
    return m ? sqrt(e / (double)m) : 0;
}

static double peak(const double *iq, size_t n, const unsigned char *mask) {
    double p = 0;
    for (size_t i = 0; i < n; i++)
        if (!mask || !mask[i]) p = fmax(p, mag(iq, i));
    return p;
}

/* The k-th smallest of a[0..n) (0-based), reordering a: quickselect, median-of-three pivots. */
static double kth(double *a, size_t n, size_t k) {
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        double x = a[lo], y = a[mid], z = a[hi];
        double pivot = x < y ? (y < z ? y : x < z ? z : x) : (x < z ? x : y < z ? z : y);
        size_t i = lo, j = hi;
        while (i <= j) {
            while (a[i] < pivot) i++;
            while (a[j] > pivot) j--;
            if (i <= j) {
                double t = a[i];
                a[i] = a[j], a[j] = t;
                i++;
                if (j == 0) break;
                j--;
            }
        }
        if (k <= j) hi = j;
        else if (k >= i) lo = i;
        else return a[k];
    }
    return a[k];
}

/* The q-quantile of a[0..n) with linear interpolation between order statistics (numpy's default);
 * reorders a. n >= 1. */
static double quantile(double *a, size_t n, double q) {
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)floor(pos);
    double v = kth(a, n, lo), next = v;
    if (lo + 1 < n) {
        next = a[lo + 1];
        for (size_t i = lo + 2; i < n; i++) next = fmin(next, a[i]); /* after the select, a[lo+1..] >= v */
    }
    return v + (next - v) * (pos - (double)lo);
}

static const double zero2[2] = {0, 0};

/* Sample i of iq, or 0 where mask marks an outlier (outliers count as 0 for the delay and gain). */
static const double *sample(const double *iq, const unsigned char *mask, size_t i) { return mask[i] ? zero2 : iq + 2 * i; }

/* The first w samples of iq (masked ones 0) as floats into a, zero-padded to m; returns their energy. */
static double load_fft(kiss_fft_cpx *a, size_t m, const double *iq, const unsigned char *mask, size_t w) {
    double e = 0;
    for (size_t i = 0; i < w; i++) {
        const double *v = sample(iq, mask, i);
        a[i].r = (float)v[0], a[i].i = (float)v[1];
        e += v[0] * v[0] + v[1] * v[1];
    }
    memset(a + w, 0, (m - w) * sizeof *a);
    return e;
}

/* Linear cross-correlation of the first w = min(n, WINDOW) samples through kissfft:
 * corr[l + MAX_LAG] = |sum_i y[i + l] conj(x[i])| for |l| <= min(MAX_LAG, w - 1) (the rest 0),
 * outliers as 0. *ex, *ey: the window's energies. The reference transforms at the next power of
 * two >= 2 w, which holds every lag; the searched lags need only m >= w + MAX_LAG for no circular
 * wrap to reach them, so m is the next power of two >= that (the same sums, half the work when w
 * is not just above a power of two). One forward plan serves the inverse: ifft(a) = conj(fft(conj(a))) / m. */
static dpd_status correlate(const double *x, const double *y, const unsigned char *mask, size_t n, double *corr,
                            double *ex, double *ey, dpd_error *err) {
    size_t w = n < WINDOW ? n : WINDOW, m = 1;
    while (m < w + MAX_LAG) m <<= 1;
    kiss_fft_cfg cfg = kiss_fft_alloc((int)m, 0, NULL, NULL);
    kiss_fft_cpx *a = malloc(m * sizeof *a), *fx = malloc(m * sizeof *fx), *fy = malloc(m * sizeof *fy);
    dpd_status s = DPD_OK;
    if (!cfg || !a || !fx || !fy) {
        s = dpd_fail(err, DPD_E_NOMEM, "doctor: out of memory for a %zu-point FFT", m);
        goto done;
    }
    *ex = load_fft(a, m, x, mask, w);
    kiss_fft(cfg, a, fx);
    *ey = load_fft(a, m, y, mask, w);
    kiss_fft(cfg, a, fy);
    for (size_t i = 0; i < m; i++) { /* conj(Y conj(X)) */
        double re = (double)fy[i].r * fx[i].r + (double)fy[i].i * fx[i].i;
        double im = (double)fy[i].i * fx[i].r - (double)fy[i].r * fx[i].i;
        a[i].r = (float)re, a[i].i = (float)-im;
    }
    kiss_fft(cfg, a, fx); /* conj(m ifft(Y conj(X))): the magnitude is all that is used */
    long L = (long)(w > MAX_LAG ? MAX_LAG : w - 1);
    for (long l = -MAX_LAG; l <= MAX_LAG; l++) {
        const kiss_fft_cpx *v = &fx[(size_t)(l < 0 ? (long)m + l : l)];
        corr[l + MAX_LAG] = labs(l) <= L ? sqrt((double)v->r * v->r + (double)v->i * v->i) / (double)m : 0;
    }
done:
    kiss_fft_free(cfg);
    free(a);
    free(fx);
    free(fy);
    return s;
}

/* The delay from the correlation: the peak of corr over the lags, refined by a parabola through it
 * and its neighbours when that curves downward. *at_peak = |corr| at the integer peak. */
static double refine_peak(const double *corr, long *lag, double *at_peak) {
    int b = MAX_LAG;
    for (int i = 0; i <= 2 * MAX_LAG; i++)
        if (corr[i] > corr[b]) b = i;
    *lag = b - MAX_LAG;
    *at_peak = corr[b];
    if (b == 0 || b == 2 * MAX_LAG) return (double)*lag;
    double l = corr[b - 1], c = corr[b], r = corr[b + 1], den = l - 2 * c + r;
    return den < 0 ? (double)*lag + 0.5 * (l - r) / den : (double)*lag;
}

/* The complex gain g = sum conj(x) y / sum |x|^2 over the pairs (x[i], y[i + D]) (outliers as 0)
 * whose |x| is at most the GAIN_QUANTILE quantile; g = 1 with *used 0 when fewer than GAIN_MIN_FIT
 * pairs qualify. *resid = |y - g x| / |y| over them. */
static dpd_status fit_gain(const double *x, const double *y, const unsigned char *mask, size_t n, long D, double g[2],
                           double *resid, size_t *used, double *irr, dpd_error *err) {
    size_t lo = D < 0 ? (size_t)-D : 0, hi = D > 0 ? (D < (long)n ? n - (size_t)D : 0) : n, m = hi > lo ? hi - lo : 0;
    g[0] = 1, g[1] = 0, *resid = NAN, *used = 0;
    if (irr) *irr = NAN;
    if (m < GAIN_MIN_FIT) return DPD_OK;
    double *a = malloc(m * sizeof *a);
    if (!a) return dpd_fail(err, DPD_E_NOMEM, "doctor: out of memory for %zu magnitudes", m);
    for (size_t i = lo; i < hi; i++) a[i - lo] = mag(sample(x, mask, i), 0);
    double q = quantile(a, m, GAIN_QUANTILE), nr = 0, ni = 0, den = 0, e = 0, p = 0;
    free(a);
    size_t k = 0;
    for (size_t i = lo; i < hi; i++) {
        const double *u = sample(x, mask, i), *v = sample(y, mask, (size_t)((long)i + D));
        if (mag(u, 0) > q) continue;
        nr += u[0] * v[0] + u[1] * v[1];
        ni += u[0] * v[1] - u[1] * v[0];
        den += u[0] * u[0] + u[1] * u[1];
        k++;
    }
    if (k < GAIN_MIN_FIT || !(den > 0)) return DPD_OK;
    g[0] = nr / den, g[1] = ni / den, *used = k;
    for (size_t i = lo; i < hi; i++) { /* the fit's residual */
        const double *u = sample(x, mask, i), *v = sample(y, mask, (size_t)((long)i + D));
        if (mag(u, 0) > q) continue;
        double dr = v[0] - (g[0] * u[0] - g[1] * u[1]), di = v[1] - (g[0] * u[1] + g[1] * u[0]);
        e += dr * dr + di * di;
        p += v[0] * v[0] + v[1] * v[1];
    }
    *resid = p > 0 ? sqrt(e / p) : NAN;
    if (irr) { /* y = a x + b conj(x) on the same samples (least squares): the image rejection |a| / |b| */
        double complex suu = 0, suv = 0, uy = 0, vy = 0;
        for (size_t i = lo; i < hi; i++) {
            const double *u = sample(x, mask, i), *v = sample(y, mask, (size_t)((long)i + D));
            if (mag(u, 0) > q) continue;
            double complex xu = u[0] + I * u[1], yv = v[0] + I * v[1];
            suu += xu * conj(xu), suv += conj(xu) * conj(xu), uy += conj(xu) * yv, vy += xu * yv;
        }
        /* an improper input (real up to one phase: a two-tone, BPSK) has |sum x^2| near sum |x|^2: x and conj(x)
         * cannot be told apart and the image is not measurable (OpenDPD's captures: 0.002 to 0.03) */
        if (cabs(suv) <= IMPROPER * creal(suu)) {
            double complex det = suu * suu - suv * conj(suv), ca = (uy * suu - suv * vy) / det, cb = (suu * vy - conj(suv) * uy) / det;
            *irr = cabs(cb) > 0 ? 20 * log10(cabs(ca) / cabs(cb)) : INFINITY;
        }
    }
    return DPD_OK;
}

static int by_power_desc(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* Occupied bandwidth of x: the smallest number of OBW_FFT-point bins (symmetric Hann, frames
 * averaged over the first min(n, WINDOW) samples) holding OBW_POWER of the power, times fs /
 * OBW_FFT. 0 with *frames 0 when x is shorter than one frame or holds no power. */
static dpd_status occupied_bw(const double *x, const unsigned char *mask, size_t n, double fs, double *obw, int *frames,
                              dpd_error *err) {
    size_t w = n < WINDOW ? n : WINDOW;
    int nf = (int)(w / OBW_FFT);
    double win[OBW_FFT], pw[OBW_FFT] = {0}, total = 0;
    kiss_fft_cpx in[OBW_FFT], out[OBW_FFT];
    *obw = 0, *frames = 0;
    if (!nf) return DPD_OK;
    kiss_fft_cfg cfg = kiss_fft_alloc(OBW_FFT, 0, NULL, NULL);
    if (!cfg) return dpd_fail(err, DPD_E_NOMEM, "doctor: out of memory for an FFT");
    for (int i = 0; i < OBW_FFT; i++) win[i] = 0.5 - 0.5 * cos(2 * M_PI * i / (OBW_FFT - 1));
    for (int f = 0; f < nf; f++) {
        for (int i = 0; i < OBW_FFT; i++) {
            const double *s = sample(x, mask, (size_t)f * OBW_FFT + (size_t)i);
            in[i].r = (float)(s[0] * win[i]), in[i].i = (float)(s[1] * win[i]);
        }
        kiss_fft(cfg, in, out);
        for (int i = 0; i < OBW_FFT; i++) pw[i] += (double)out[i].r * out[i].r + (double)out[i].i * out[i].i;
    }
    kiss_fft_free(cfg);
    for (int i = 0; i < OBW_FFT; i++) total += pw[i];
    if (!(total > 0)) return DPD_OK;
    qsort(pw, OBW_FFT, sizeof *pw, by_power_desc);
    double acc = 0;
    int k = 0;
    while (k < OBW_FFT && acc < OBW_POWER * total) acc += pw[k++];
    *obw = k * fs / OBW_FFT;
    *frames = nf;
    return DPD_OK;
}

/* ---- the checks, in the reference's order ---------------------------------------------------- */

/* dpd's structure checks: a split with one file of its pair (error), a split absent (warning). */
static void check_files(const capture *c, dpd_doctor_report *r) {
    char names[3 * 32] = "", list[3 * 32] = "";
    int n = 0;
    const char *first = NULL;
    for (int k = 0; k < c->nparts && !c->single; k++) {
        const char *a = c->p[k].absent;
        if (!a) continue;
        size_t u = strlen(names), v = strlen(list);
        int last = 1; /* is a the last one missing? (", " between, " and " before the last) */
        for (int j = k + 1; j < c->nparts; j++) last &= !c->p[j].absent;
        snprintf(names + u, sizeof names - u, "%s%s", n ? (last ? " and " : ", ") : "", a);
        snprintf(list + v, sizeof list - v, "%s%s", n ? ", " : "", a);
        if (!n++) first = a;
    }
    if (n) {
        dpd_finding *f = finding(r, "split_file_missing", DPD_SEV_ERROR, "A split file has no partner");
        snprintf(f->value, sizeof f->value, "%s missing", first);
        snprintf(f->message, sizeof f->message, "%s %s missing while %s partner exists: that split is not read", names,
                 n > 1 ? "are" : "is", n > 1 ? "their" : "its");
        snprintf(f->fix, sizeof f->fix, "restore %s from the capture (or remove %s partner%s)", n > 1 ? names : first,
                 n > 1 ? "their" : "its", n > 1 ? "s" : "");
        ev_text(f, "missing", "%s", list);
    }
    for (int k = 0; k < c->nparts && !c->single; k++) { /* present, but a header and no rows: nothing reads it */
        const part *p = &c->p[k];
        if (!p->present || (p->nx && p->ny)) continue;
        dpd_finding *f = finding(r, "split_empty", DPD_SEV_ERROR, "A split has no samples");
        int both = !p->nx && !p->ny;
        snprintf(f->value, sizeof f->value, "%s: %zu input, %zu output rows", dpd_split_names[k], p->nx, p->ny);
        snprintf(f->message, sizeof f->message, "%s%s%s %s no data rows after the header: training and evaluation refuse it",
                 p->nx ? p->out : p->in, both ? " and " : "", both ? p->out : "", both ? "have" : "has");
        snprintf(f->fix, sizeof f->fix, "export the %s split's samples (I,Q rows), or remove its files", dpd_split_names[k]);
        ev_text(f, "split", "%s", dpd_split_names[k]);
    }
    for (int k = 0; k < c->nparts && !c->single; k++) { /* both files absent (one alone: split_file_missing) */
        if (c->p[k].present || c->p[k].absent) continue;
        dpd_finding *f = finding(r, "split_missing", DPD_SEV_WARNING, "A split is absent");
        snprintf(f->value, sizeof f->value, "no %s split", dpd_split_names[k]);
        snprintf(f->message, sizeof f->message, "%s and %s are absent: %s", c->p[k].in, c->p[k].out,
                 k == DPD_TRAIN ? "train-pa and train-dpd cannot train on this dataset"
                                : "that split cannot be evaluated or used to select a checkpoint");
        snprintf(f->fix, sizeof f->fix, "add %s and %s (I,Q columns) if the capture has them", c->p[k].in, c->p[k].out);
        ev_text(f, "split", "%s", dpd_split_names[k]);
    }
    if (c->npositional) { /* as training and dpd eval warn: which column is I is a guess */
        char files[200] = "";
        for (int i = 0; i < c->npositional; i++)
            snprintf(files + strlen(files), sizeof files - strlen(files), "%s%s", i ? ", " : "", c->positional[i]);
        dpd_finding *f = finding(r, "columns_by_position", DPD_SEV_WARNING, "A header names no columns I and Q");
        snprintf(f->value, sizeof f->value, "%d file%s", c->npositional, c->npositional > 1 ? "s" : "");
        snprintf(f->message, sizeof f->message, "%s: %s header names no columns I and Q, so %s read as I then Q, by "
                 "position, as OpenDPD reads it: a file with Q first would pass unnoticed", files,
                 c->npositional > 1 ? "each" : "its", c->npositional > 1 ? "they are" : "it is");
        snprintf(f->fix, sizeof f->fix, "name the columns I and Q in the header (first line) of %s", files);
        ev_text(f, "files", "%s", files);
    }
}

/* 1. length_mismatch: input and output row counts differ (each part was trimmed to the shorter). */
static void check_lengths(const capture *c, dpd_doctor_report *r) {
    size_t nx = 0, ny = 0;
    char where[160] = "";
    for (int k = 0; k < c->nparts; k++) {
        const part *p = &c->p[k];
        if (!p->present) continue;
        nx += p->nx, ny += p->ny;
        size_t l = strlen(where);
        if (p->nx != p->ny)
            snprintf(where + l, sizeof where - l, "%s%s %zu/%zu", l ? ", " : "", c->single ? "data" : dpd_split_names[k],
                     p->nx, p->ny);
    }
    if (!where[0]) return;
    dpd_finding *f = finding(r, "length_mismatch", DPD_SEV_ERROR, "Input and output lengths differ");
    snprintf(f->value, sizeof f->value, "%zu input vs %zu output", nx, ny);
    snprintf(f->message, sizeof f->message, "the input has %zu samples and the output %zu (input/output by split: %s); "
                                            "both were trimmed to the shorter for the checks below", nx, ny, where);
    snprintf(f->fix, sizeof f->fix, "export input and output of the same capture with the same number of rows");
    ev_num(f, "n_input", (double)nx);
    ev_num(f, "n_output", (double)ny);
    ev_text(f, "splits", "%s", where);
}

/* 2. too_few_samples. */
static void check_count(const capture *c, dpd_doctor_report *r) {
    if (c->n >= MIN_SAMPLES) return;
    dpd_finding *f = finding(r, "too_few_samples", DPD_SEV_ERROR, "Too few samples");
    snprintf(f->value, sizeof f->value, "%zu samples (< %d)", c->n, MIN_SAMPLES);
    snprintf(f->message, sizeof f->message, "the capture has %zu paired samples; the checks and the metrics need at "
                                            "least %d", c->n, MIN_SAMPLES);
    snprintf(f->fix, sizeof f->fix, "capture more samples (training wants tens of thousands)");
    ev_num(f, "n_samples", (double)c->n);
    ev_num(f, "minimum", MIN_SAMPLES);
}

/* Zeroes the samples of iq that are not dpd_sample_ok (the loader refuses them); their count, the
 * first indices in idx[10]. */
static size_t zero_non_finite(double *iq, size_t n, size_t *idx) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (dpd_sample_ok(iq[2 * i]) && dpd_sample_ok(iq[2 * i + 1])) continue;
        if (k < 10) idx[k] = i;
        k++;
        iq[2 * i] = iq[2 * i + 1] = 0;
    }
    return k;
}

/* 3. non_finite_samples: counted, the first 10 indices reported, then set to 0. */
static void check_finite(capture *c, dpd_doctor_report *r) {
    size_t ix[10], iy[10], kx = zero_non_finite(c->x, c->n, ix), ky = zero_non_finite(c->y, c->n, iy);
    if (!kx && !ky) return;
    char at[300];
    int in_output = !kx || (ky && iy[0] < ix[0]); /* the first non-finite sample is the output's */
    locate(c, in_output ? iy[0] : ix[0], in_output, at, sizeof at);
    dpd_finding *f = finding(r, "non_finite_samples", DPD_SEV_ERROR, "NaN or Inf samples");
    snprintf(f->value, sizeof f->value, "%zu input, %zu output", kx, ky);
    snprintf(f->message, sizeof f->message, "%zu input and %zu output samples are NaN, Inf, empty or beyond a float's "
                                            "range (the first at %s); "
                                            "they are read as 0 below", kx, ky, at);
    snprintf(f->suggestion, sizeof f->suggestion, "interpolate_non_finite");
    snprintf(f->fix, sizeof f->fix, "interpolate the non-finite samples (first at %s) or cut them out, and export again",
             at);
    ev_num(f, "input_count", (double)kx);
    ev_num(f, "output_count", (double)ky);
    ev_list(f, "input_indices", ix, (int)(kx < 10 ? kx : 10));
    ev_list(f, "output_indices", iy, (int)(ky < 10 ? ky : 10));
    ev_text(f, "first", "%s", at);
}

/* 4. silent_signal: RMS(x) or RMS(y) is 0; else (dpd, split_csv) split_silent: one split's input or
 * output is, which the capture's RMS hides (its zeros would make every other sample an outlier and
 * the split a target of silence). Returns 1 when either fires (the doctor stops). */
static int check_silence(const capture *c, dpd_doctor_report *r) {
    double rx = rms(c->x, c->n, NULL), ry = rms(c->y, c->n, NULL);
    if (rx > 0 && ry > 0) {
        int fired = 0;
        for (int k = 0; !c->single && k < c->nparts; k++) {
            const part *p = &c->p[k];
            size_t m = p->nx < p->ny ? p->nx : p->ny, o = c->off[k];
            if (!p->present || !m) continue;
            double sx = rms(c->x + 2 * o, m, NULL), sy = rms(c->y + 2 * o, m, NULL);
            if (sx > 0 && sy > 0) continue;
            const char *which = !(sx > 0) && !(sy > 0) ? "input and output" : !(sx > 0) ? "input" : "output";
            char file[600];
            snprintf(file, sizeof file, "%s%s%s", !(sx > 0) ? p->in : "", !(sx > 0) && !(sy > 0) ? " and " : "",
                     !(sy > 0) ? p->out : "");
            dpd_finding *f = finding(r, "split_silent", DPD_SEV_ERROR, "A split is silent");
            snprintf(f->value, sizeof f->value, "%s: %s RMS 0", dpd_split_names[k], which);
            snprintf(f->message, sizeof f->message,
                     "the %s split's %s %s no signal (RMS 0 over %zu samples), though the capture as a whole has; "
                     "the doctor stops here", dpd_split_names[k], which, strchr(which, ' ') ? "hold" : "holds", m);
            snprintf(f->fix, sizeof f->fix, "export %s again: %s only zeros", file, strchr(which, ' ') ? "they hold" : "it holds");
            ev_text(f, "split", "%s", dpd_split_names[k]);
            ev_num(f, "input_rms", sx);
            ev_num(f, "output_rms", sy);
            fired = 1;
        }
        return fired;
    }
    const char *which = !(rx > 0) && !(ry > 0) ? "input and output" : !(rx > 0) ? "input" : "output";
    dpd_finding *f = finding(r, "silent_signal", DPD_SEV_ERROR, "Silent signal");
    snprintf(f->value, sizeof f->value, "%s RMS 0", which);
    snprintf(f->message, sizeof f->message, "the %s %s no signal (RMS 0 over %zu samples); the doctor stops here",
             which, strchr(which, ' ') ? "hold" : "holds", c->n);
    snprintf(f->fix, sizeof f->fix, "export the %s again: the file holds only zeros (or nothing usable)", which);
    ev_num(f, "input_rms", rx);
    ev_num(f, "output_rms", ry);
    return 1;
}

/* 5. output_outliers: |y| above median + 25 max(1.4826 MAD, 1e-12). mask[i] = 1 marks them. The
 * same rule on x (output 0) is dpd's input_outliers: a spike in the input, which would set the
 * input's peak, and so g, and the checks below. */
static dpd_status check_outliers(const capture *c, dpd_doctor_report *r, const double *iq, int output,
                                 unsigned char *mask, dpd_error *err) {
    double *a = malloc(c->n * sizeof *a);
    if (!a) return dpd_fail(err, DPD_E_NOMEM, "doctor: out of memory for %zu magnitudes", c->n);
    for (size_t i = 0; i < c->n; i++) a[i] = mag(iq, i);
    double med = quantile(a, c->n, 0.5);
    for (size_t i = 0; i < c->n; i++) a[i] = fabs(mag(iq, i) - med);
    double mad = quantile(a, c->n, 0.5);
    free(a);
    double thr = med + OUTLIER_SIGMAS * fmax(MAD_SIGMA * mad, 1e-12), mx = 0;
    size_t k = 0, idx[10];
    for (size_t i = 0; i < c->n; i++) {
        double m = mag(iq, i);
        if (!(m > thr)) continue;
        mask[i] = 1;
        if (k < 10) idx[k] = i;
        k++;
        mx = fmax(mx, m);
    }
    if (!k) return DPD_OK;
    const char *sig = output ? "output" : "input";
    dpd_finding *f = finding(r, output ? "output_outliers" : "input_outliers", DPD_SEV_WARNING,
                             output ? "Output outliers (spikes)" : "Input outliers (spikes)");
    const char *s = k == 1 ? "" : "s";
    snprintf(f->value, sizeof f->value, "%zu sample%s above %.4g", k, s, thr);
    snprintf(f->message, sizeof f->message, "%zu %s sample%s (%.3g %%) exceed%s median + %g robust sigmas = %.4g "
                                            "(largest %.4g); %s left out of the checks below%s",
             k, sig, s, 100.0 * (double)k / (double)c->n, k == 1 ? "s" : "", OUTLIER_SIGMAS, thr, mx,
             k == 1 ? "it is" : "they are",
             output ? "" : k == 1 ? ", but training takes g = max|y| / max|x| with it"
                                  : ", but training takes g = max|y| / max|x| with them");
    if (output) snprintf(f->suggestion, sizeof f->suggestion, "remove_outliers");
    snprintf(f->fix, sizeof f->fix, "remove or interpolate the %s's spikes (first at index %zu), or %s again", sig, idx[0],
             output ? "capture" : "export the input");
    f->confidence = fmin(1, (mx / thr - 1) / 4 + 0.5);
    ev_num(f, "count", (double)k);
    ev_num(f, "fraction", (double)k / (double)c->n);
    ev_num(f, "threshold", thr);
    ev_num(f, "max", mx);
    ev_list(f, "indices", idx, (int)(k < 10 ? k : 10));
    return DPD_OK;
}

/* 6. Clipping of one signal: samples within CLIP_WINDOW of its peak (masked samples left out); and
 * (dpd) the same rule on the rails, max |I| and max |Q|: an ADC limits I and Q each at its full
 * scale, which the magnitude alone misses. */
static void clip_check(const capture *c, dpd_doctor_report *r, const double *iq, const unsigned char *mask, int output) {
    double pk = peak(iq, c->n, mask), rail = 0;
    size_t k = 0, kr = 0;
    for (size_t i = 0; i < c->n; i++)
        if (!mask || !mask[i]) rail = fmax(rail, fmax(fabs(iq[2 * i]), fabs(iq[2 * i + 1])));
    for (size_t i = 0; i < c->n; i++) {
        if (mask && mask[i]) continue;
        k += mag(iq, i) >= pk * (1 - CLIP_WINDOW);
        kr += fmax(fabs(iq[2 * i]), fabs(iq[2 * i + 1])) >= rail * (1 - CLIP_WINDOW);
    }
    int at_rail = k < CLIP_MIN_COUNT || (double)k / (double)c->n < CLIP_MIN_FRACTION;
    if (at_rail) k = kr, pk = rail;
    double frac = (double)k / (double)c->n;
    if (k < CLIP_MIN_COUNT || frac < CLIP_MIN_FRACTION) return;
    const char *sig = output ? "output" : "input";
    dpd_finding *f = finding(r, output ? "possible_output_clipping" : "possible_input_clipping", DPD_SEV_WARNING,
                             output ? "The output may be clipped" : "The input may be clipped");
    snprintf(f->value, sizeof f->value, "%.3g %% at the %s", 100 * frac, at_rail ? "I/Q rail" : "peak");
    snprintf(f->message, sizeof f->message, "%zu %s samples (%.3g %%) sit within %g %% of the %s %.4g: a hard limit, "
                                            "not smooth compression",
             k, sig, 100 * frac, 100 * CLIP_WINDOW, at_rail ? "I/Q rail (max |I|, |Q|)" : "peak magnitude", pk);
    snprintf(f->fix, sizeof f->fix, output ? "lower the drive or the receiver gain so the output stays below the "
                                             "ADC's full scale, and capture again"
                                           : "lower the input level (or the crest-factor limit) and capture again");
    f->confidence = fmin(1, frac / 0.01);
    ev_num(f, "fraction_at_peak", frac);
    ev_num(f, "count_at_peak", (double)k);
    ev_num(f, "peak_magnitude", pk);
    ev_text(f, "limit", "%s", at_rail ? "rail" : "magnitude");
}

/* The peak correlation confidence of y with the conjugate of x (I and Q swapped or Q negated in
 * one file make it near 1), searched and refined as check_delay's; 0 for a silent window. */
static dpd_status conj_correlation(const double *x, const double *y, const unsigned char *mask, size_t n, double *conj,
                                   dpd_error *err) {
    double corr[2 * MAX_LAG + 1], ex = 0, ey = 0, at;
    long lag;
    double *xc = malloc(n * 2 * sizeof *xc);
    if (!xc) return dpd_fail(err, DPD_E_NOMEM, "doctor: out of memory for %zu samples", n);
    for (size_t i = 0; i < n; i++) xc[2 * i] = x[2 * i], xc[2 * i + 1] = -x[2 * i + 1];
    dpd_status s = correlate(xc, y, mask, n, corr, &ex, &ey, err);
    free(xc);
    if (s) return s;
    refine_peak(corr, &lag, &at);
    *conj = ex > 0 && ey > 0 ? fmin(1, fmax(0, at / sqrt(ex * ey))) : 0;
    return DPD_OK;
}

/* dpd: the output does not follow the input (correlation below UNCORRELATED at every searched lag),
 * so neither a delay nor a gain means anything. Told apart: an output that follows the input's
 * conjugate (I and Q swapped, or Q negated, in one file: a spectral inversion), or one that follows
 * neither (another capture's file, another channel). */
static dpd_status uncorrelated(const capture *c, dpd_doctor_report *r, const unsigned char *mask, dpd_error *err) {
    double conj;
    dpd_status s = conj_correlation(c->x, c->y, mask, c->n, &conj, err);
    if (s) return s;
    int mirrored = conj >= UNCORRELATED;
    dpd_finding *f = finding(r, "output_uncorrelated", DPD_SEV_ERROR,
                             mirrored ? "Output follows the conjugate of the input" : "Output does not follow the input");
    snprintf(f->value, sizeof f->value, "correlation %.3f (%.3f conjugated)", r->delay_confidence, conj);
    snprintf(f->message, sizeof f->message,
             mirrored ? "the output correlates with the input by %.3f at best (lags +-%d), but with the input's conjugate "
                        "by %.3f: I and Q are swapped, or Q negated, in one of the files (a spectral inversion); no "
                        "delay or gain is fitted"
                      : "the output correlates with the input by %.3f at best (lags +-%d), and with its conjugate by %.3f: "
                        "no PA's aligned output does (unrelated files, a delay beyond +-%d samples, or a frequency "
                        "offset between generator and receiver); no delay or gain is fitted",
             r->delay_confidence, MAX_LAG, conj, MAX_LAG);
    snprintf(f->fix, sizeof f->fix, mirrored ? "swap the I and Q columns of the output (or of the input), or negate one "
                                               "file's Q, whichever the export got wrong, and run the doctor again"
                                             : "check that the input and output files are one capture's pair (the same "
                                               "run, channel and columns), align a delay beyond the searched lags, and "
                                               "remove a frequency offset");
    f->confidence = mirrored ? conj : 1 - r->delay_confidence;
    ev_num(f, "correlation", r->delay_confidence);
    ev_num(f, "conjugate_correlation", conj);
    ev_num(f, "max_lag", MAX_LAG);
    r->delay = NAN;
    return DPD_OK;
}

/* 7. Delay by cross-correlation with sub-sample refinement: time_misalignment at |delay| >= 0.5. */
static dpd_status check_delay(const capture *c, dpd_doctor_report *r, const unsigned char *mask, dpd_error *err) {
    double corr[2 * MAX_LAG + 1], ex = 0, ey = 0, at;
    long lag;
    dpd_status s = correlate(c->x, c->y, mask, c->n, corr, &ex, &ey, err);
    if (s) return s;
    r->delay = refine_peak(corr, &lag, &at);
    r->delay_confidence = ex > 0 && ey > 0 ? fmin(1, fmax(0, at / sqrt(ex * ey))) : 0;
    if (ex > 0 && ey > 0 && r->delay_confidence < UNCORRELATED) return uncorrelated(c, r, mask, err);
    int late = fabs(r->delay) >= DELAY_FLAG;
    dpd_finding *f = finding(r, late ? "time_misalignment" : "alignment_ok", late ? DPD_SEV_WARNING : DPD_SEV_INFO,
                             late ? "Output and input are not aligned" : "Output and input are aligned");
    snprintf(f->value, sizeof f->value, "%+.2f samples", r->delay);
    snprintf(f->message, sizeof f->message, "the output is %s the input by %.3f samples (cross-correlation peak at lag "
                                            "%ld of +-%d, refined; correlation %.3f)",
             r->delay >= 0 ? "behind" : "ahead of", fabs(r->delay), lag, MAX_LAG, r->delay_confidence);
    if (late) {
        snprintf(f->suggestion, sizeof f->suggestion, "fix_delay");
        snprintf(f->fix, sizeof f->fix, "dpd doctor DIR --fix-delay --out NEW_DIR shifts the output by %ld samples "
                                        "(or align the capture in the instrument)", lround(r->delay));
    }
    f->confidence = r->delay_confidence;
    ev_num(f, "delay_samples", r->delay);
    ev_num(f, "integer_lag", (double)lag);
    ev_num(f, "max_lag", MAX_LAG);
    return DPD_OK;
}

/* 7b. split_csv: each split's files on their own (the capture's correlation reads its first
 * WINDOW samples, mostly the train split's): a split whose output does not follow its input is
 * split_uncorrelated, told apart as output_uncorrelated is (its conjugate: I and Q swapped, or Q
 * negated, in one of its two files). Splits shorter than SPLIT_MIN_CORR samples are not judged (a
 * delay near MAX_LAG would halve a short split's correlation). */
#define SPLIT_MIN_CORR (4 * MAX_LAG)

/* split_uncorrelated for split k, whose own peak correlation is own: told apart by its conjugate. */
static dpd_status split_finding(const capture *c, dpd_doctor_report *r, const unsigned char *mask, int k, double own,
                                dpd_error *err) {
    const part *p = &c->p[k];
    size_t m = p->nx < p->ny ? p->nx : p->ny, o = c->off[k];
    double conj;
    dpd_status s = conj_correlation(c->x + 2 * o, c->y + 2 * o, mask + o, m, &conj, err);
    if (s) return s;
    int mirrored = conj >= UNCORRELATED;
    dpd_finding *f = finding(r, "split_uncorrelated", DPD_SEV_ERROR,
                             mirrored ? "A split's output follows the conjugate of its input"
                                      : "A split's output does not follow its input");
    snprintf(f->value, sizeof f->value, "%s: %.3f (%.3f conjugated)", dpd_split_names[k], own, conj);
    snprintf(f->message, sizeof f->message,
             mirrored ? "%s and %s correlate by %.3f at best (the capture by %.3f), but with the input's conjugate "
                        "by %.3f: I and Q are swapped, or Q negated, in one of these two files"
                      : "%s and %s correlate by %.3f at best (the capture by %.3f), and with the input's conjugate "
                        "by %.3f: they are not one capture's pair (another capture's file, another channel)",
             p->in, p->out, own, r->delay_confidence, conj);
    snprintf(f->fix, sizeof f->fix, mirrored ? "swap the I and Q columns of %s (or of %s), or negate one file's Q, "
                                               "whichever the export got wrong, and run the doctor again"
                                             : "replace %s and %s with the pair of one capture",
             p->out, p->in);
    f->confidence = mirrored ? conj : 1 - own;
    ev_text(f, "split", "%s", dpd_split_names[k]);
    ev_num(f, "correlation", own);
    ev_num(f, "conjugate_correlation", conj);
    return DPD_OK;
}

static dpd_status check_split_alignment(const capture *c, dpd_doctor_report *r, const unsigned char *mask,
                                        double delay[DPD_NSPLIT], dpd_error *err) {
    for (int k = 0; k < DPD_NSPLIT; k++) delay[k] = NAN;
    if (c->single || c->nparts < 2) return DPD_OK;
    int whole_bad = isnan(r->delay), judged = 0, bad = 0; /* output_uncorrelated: which splits are at fault? */
    char bad_names[64] = "";
    double corr[2 * MAX_LAG + 1], at, ex, ey, own_of[DPD_NSPLIT];
    long lag;
    for (int k = 0; k < c->nparts && k < DPD_NSPLIT; k++) {
        const part *p = &c->p[k];
        size_t m = p->nx < p->ny ? p->nx : p->ny, o = c->off[k];
        own_of[k] = NAN;
        if (!p->present || m < SPLIT_MIN_CORR) continue;
        dpd_status s = correlate(c->x + 2 * o, c->y + 2 * o, mask + o, m, corr, &ex, &ey, err);
        if (s) return s;
        double d = refine_peak(corr, &lag, &at);
        double own = ex > 0 && ey > 0 ? fmin(1, fmax(0, at / sqrt(ex * ey))) : 1;
        judged++;
        if (own >= UNCORRELATED) {
            if (!whole_bad) delay[k] = d; /* for check_split_consistency */
            continue;
        }
        own_of[k] = own, bad++;
        snprintf(bad_names + strlen(bad_names), sizeof bad_names - strlen(bad_names), "%s%s", bad > 1 ? ", " : "",
                 dpd_split_names[k]);
        if (!whole_bad && (s = split_finding(c, r, mask, k, own, err))) return s;
    }
    if (!whole_bad || !bad || bad == judged) return DPD_OK; /* every split at fault: the capture's finding says it */
    for (int k = 0; k < c->nparts && k < DPD_NSPLIT; k++) { /* some correlate: the bad ones named */
        dpd_status s = isnan(own_of[k]) ? DPD_OK : split_finding(c, r, mask, k, own_of[k], err);
        if (s) return s;
    }
    for (int i = 0; i < r->nfindings; i++) /* and the capture's fix, which would spoil the splits that are right */
        if (!strcmp(r->findings[i].code, "output_uncorrelated"))
            snprintf(r->findings[i].fix, sizeof r->findings[i].fix,
                     "only the %s split%s %s at fault (split_uncorrelated names %s files); the other splits correlate: "
                     "mend those files alone", bad_names, bad > 1 ? "s" : "", bad > 1 ? "are" : "is", bad > 1 ? "their" : "its");
    return DPD_OK;
}

/* 8. Complex gain and phase on the small-signal samples, aligned by the nearest whole sample. */
static dpd_status check_gain(const capture *c, dpd_doctor_report *r, const unsigned char *mask, dpd_error *err) {
    if (isnan(r->delay)) return DPD_OK; /* output_uncorrelated: no gain to fit */
    double g[2], resid;
    size_t used;
    double irr;
    dpd_status s = fit_gain(c->x, c->y, mask, c->n, lround(r->delay), g, &resid, &used, &irr, err);
    if (s) return s;
    r->gain_re = g[0], r->gain_im = g[1];
    r->gain_confidence = used ? fmin(1, fmax(0, 1 - resid)) : 0;
    double db = 20 * log10(hypot(g[0], g[1])), deg = atan2(g[1], g[0]) * 180 / M_PI;
    int off = fabs(db) > GAIN_WARN_DB || fabs(deg) > PHASE_WARN_DEG;
    dpd_finding *f = finding(r, "linear_gain_phase", off ? DPD_SEV_WARNING : DPD_SEV_INFO,
                             off ? "Gain or phase offset" : "Gain and phase");
    snprintf(f->value, sizeof f->value, "%+.2f dB, %+.1f deg", db, deg);
    if (used)
        snprintf(f->message, sizeof f->message, "small-signal gain %.3f dB and phase %.2f deg (fitted on %zu samples at "
                                                "or below the %g quantile of |x|; residual %.3g)",
                 db, deg, used, GAIN_QUANTILE, resid);
    else
        snprintf(f->message, sizeof f->message, "too few small-signal samples to fit a gain (fewer than %d); taken as 1",
                 GAIN_MIN_FIT);
    if (off) {
        snprintf(f->suggestion, sizeof f->suggestion, "fix_gain");
        snprintf(f->fix, sizeof f->fix, "dpd doctor DIR --fix-gain --out NEW_DIR divides the output by this gain "
                                        "(only if the offset is an artefact of the capture)");
    }
    f->confidence = r->gain_confidence;
    ev_num(f, "gain_db", db);
    ev_num(f, "phase_deg", deg);
    ev_num(f, "fit_residual", resid);
    ev_num(f, "fitted_on", (double)used);
    if (used && irr < IMAGE_WARN_DB) { /* dpd: a receiver's (or generator's) I/Q imbalance, as the output's image */
        dpd_finding *w = finding(r, "iq_imbalance", DPD_SEV_WARNING, "I/Q imbalance");
        snprintf(w->value, sizeof w->value, "image rejection %.1f dB", irr);
        snprintf(w->message, sizeof w->message, "the output holds a mirror image of the input %.1f dB below it (fitted as "
                                                "y = a x + b conj(x) on the small-signal samples): an I/Q gain or phase "
                                                "imbalance of the receiver or the generator, which a PA does not make and "
                                                "a PA model cannot learn (its spectrum mirrors the signal)", irr);
        snprintf(w->fix, sizeof w->fix, "calibrate the I/Q imbalance of the capture's receiver (or generator), then "
                                        "capture again");
        ev_num(w, "image_rejection_db", irr);
    }
    if (used && resid < LINEAR_COPY) { /* dpd: no PA's output is a scaled copy of its input to 80 dB */
        dpd_finding *w = finding(r, "output_is_input", DPD_SEV_WARNING, "The output is a copy of the input");
        snprintf(w->value, sizeof w->value, "residual %.2g", resid);
        snprintf(w->message, sizeof w->message, "the output is the input times %+.2f dB %+.1f deg to within %.2g of its "
                                                "amplitude: a loopback capture, the input file exported twice, or a simulation "
                                                "without its PA model; a model of it learns a gain", db, deg, resid);
        snprintf(w->fix, sizeof w->fix, "export the PA's measured output as the output files");
        ev_num(w, "fit_residual", resid);
    }
    return DPD_OK;
}

/* 8b. split_csv (dpd): each split judged on its own against the reference split (train, else the
 * first split judged: what the model learns from, and what val and test must be cut like; val when
 * val and test agree with each other and neither with train, which is then the one named): its
 * delay (split_delay_mismatch, error at half a sample or more apart: a pair cut out of line) and
 * its small-signal gain and phase (split_gain_mismatch: error beyond 3 dB or 30 deg, an attenuator
 * or a phase reference changed between the captures; warning beyond 1 dB or 10 deg). Either makes
 * that split's metrics (and so the best epoch, or the test figures) measure the capture, not the
 * model. */
#define SPLIT_DELAY_FLAG 0.5 /* as DELAY_FLAG: a one-sample slip lands on either side of 1 */
#define SPLIT_GAIN_WARN_DB 1.0
#define SPLIT_GAIN_ERROR_DB 3.0
#define SPLIT_PHASE_WARN_DEG 10.0
#define SPLIT_PHASE_ERROR_DEG 30.0
/* Each judged split's small-signal gain (delay[k] not NaN) at the one whole lag D (a split out of
 * line is named, not fitted): splits a hundredth of a sample apart around a half would round to two
 * lags, whose phase differs by 2 pi fc / fs off DC. */
static dpd_status split_gains(const capture *c, const unsigned char *mask, const double delay[DPD_NSPLIT], long D,
                              double g[DPD_NSPLIT][2], double resid[DPD_NSPLIT], size_t used[DPD_NSPLIT], dpd_error *err) {
    for (int k = 0; k < c->nparts && k < DPD_NSPLIT; k++) {
        const part *p = &c->p[k];
        used[k] = 0;
        if (isnan(delay[k])) continue; /* not judged: short, absent, or split_uncorrelated */
        size_t m = p->nx < p->ny ? p->nx : p->ny, o = c->off[k];
        dpd_status s = fit_gain(c->x + 2 * o, c->y + 2 * o, mask + o, m, D, g[k], &resid[k], &used[k], NULL, err);
        if (s) return s;
    }
    return DPD_OK;
}

/* 1 when splits i and j agree: delays within SPLIT_DELAY_FLAG, gains within the warning bounds. */
static int splits_agree(const double delay[DPD_NSPLIT], double g[DPD_NSPLIT][2], const size_t used[DPD_NSPLIT], int i,
                        int j) {
    if (fabs(delay[i] - delay[j]) >= SPLIT_DELAY_FLAG) return 0;
    double den = g[j][0] * g[j][0] + g[j][1] * g[j][1];
    if (!used[i] || !used[j] || !(den > 0)) return 1; /* no gain to compare: the delays decide */
    double qr = (g[i][0] * g[j][0] + g[i][1] * g[j][1]) / den, qi = (g[i][1] * g[j][0] - g[i][0] * g[j][1]) / den;
    return fabs(20 * log10(hypot(qr, qi))) <= SPLIT_GAIN_WARN_DB && fabs(atan2(qi, qr) * 180 / M_PI) <= SPLIT_PHASE_WARN_DEG;
}

static dpd_status check_split_consistency(const capture *c, dpd_doctor_report *r, const unsigned char *mask,
                                          const double delay[DPD_NSPLIT], dpd_error *err) {
    int ref = -1, nk = c->nparts < DPD_NSPLIT ? c->nparts : DPD_NSPLIT, judged = 0;
    for (int k = 0; k < nk; k++)
        if (!isnan(delay[k])) judged++, ref = ref < 0 ? k : ref;
    if (ref < 0) return DPD_OK;
    double g[DPD_NSPLIT][2], resid[DPD_NSPLIT];
    size_t used[DPD_NSPLIT] = {0};
    dpd_status s = split_gains(c, mask, delay, lround(delay[ref]), g, resid, used, err);
    if (s) return s;
    if (judged >= 3) { /* train the odd one out (the others agree with each other, none with it): it is named */
        int ref2 = ref + 1, others = 1, with_ref = 0;
        while (isnan(delay[ref2])) ref2++;
        double g2[DPD_NSPLIT][2], resid2[DPD_NSPLIT];
        size_t used2[DPD_NSPLIT];
        if ((s = split_gains(c, mask, delay, lround(delay[ref2]), g2, resid2, used2, err))) return s; /* at their lag */
        for (int i = ref + 1; i < nk; i++) {
            if (isnan(delay[i])) continue;
            with_ref |= splits_agree(delay, g, used, ref, i);
            for (int j = i + 1; j < nk; j++)
                if (!isnan(delay[j])) others &= splits_agree(delay, g2, used2, i, j);
        }
        if (others && !with_ref) {
            ref = ref2;
            memcpy(g, g2, sizeof g), memcpy(resid, resid2, sizeof resid), memcpy(used, used2, sizeof used);
        }
    }
    const char *rn = dpd_split_names[ref];
    for (int k = 0; k < nk; k++) {
        const part *p = &c->p[k];
        if (isnan(delay[k]) || k == ref) continue;
        double late = delay[k] - delay[ref];
        if (fabs(late) >= SPLIT_DELAY_FLAG) {
            dpd_finding *f = finding(r, "split_delay_mismatch", DPD_SEV_ERROR, "A split's output is out of line");
            snprintf(f->value, sizeof f->value, "%s: %+.2f samples", dpd_split_names[k], late);
            snprintf(f->message, sizeof f->message,
                     "%s is %.2f samples %s against %s than the %s split's output is against its input (delays %+.2f "
                     "and %+.2f): the %s pair was not cut from one aligned capture, and its metrics compare misaligned "
                     "samples", p->out, fabs(late), late > 0 ? "later" : "earlier", p->in, rn, delay[k], delay[ref],
                     dpd_split_names[k]);
            long by = lround(fabs(late));
            snprintf(f->fix, sizeof f->fix, "cut %s and %s again from the capture, aligned as %s is (or %s %s by %ld "
                                            "sample%s: %s)", p->in, p->out, rn, late > 0 ? "advance" : "delay", p->out,
                     by ? by : 1, by == 1 ? "" : "s", late > 0 ? "drop its first ones" : "pad its start");
            ev_text(f, "split", "%s", dpd_split_names[k]);
            ev_text(f, "reference", "%s", rn);
            ev_num(f, "delay_samples", delay[k]);
            ev_num(f, "reference_delay_samples", delay[ref]);
            continue;
        }
        if (!used[k] || !used[ref]) continue;
        double den = g[ref][0] * g[ref][0] + g[ref][1] * g[ref][1]; /* g / g_reference */
        if (!(den > 0)) continue;
        double qr = (g[k][0] * g[ref][0] + g[k][1] * g[ref][1]) / den, qi = (g[k][1] * g[ref][0] - g[k][0] * g[ref][1]) / den;
        double db = 20 * log10(hypot(qr, qi)), deg = atan2(qi, qr) * 180 / M_PI;
        int error = fabs(db) > SPLIT_GAIN_ERROR_DB || fabs(deg) > SPLIT_PHASE_ERROR_DEG;
        if (!error && fabs(db) <= SPLIT_GAIN_WARN_DB && fabs(deg) <= SPLIT_PHASE_WARN_DEG) continue;
        dpd_finding *f = finding(r, "split_gain_mismatch", error ? DPD_SEV_ERROR : DPD_SEV_WARNING,
                                 "A split's gain or phase differs from the others'");
        snprintf(f->value, sizeof f->value, "%s: %+.2f dB, %+.1f deg", dpd_split_names[k], db, deg);
        snprintf(f->message, sizeof f->message,
                 "the %s split's small-signal gain is %+.2f dB and %+.1f deg off the %s split's (fitted on %zu and %zu "
                 "samples): an attenuator, a receiver gain or a phase reference changed between the captures, and the "
                 "split's metrics measure that change", dpd_split_names[k], db, deg, rn, used[k], used[ref]);
        snprintf(f->fix, sizeof f->fix, "capture the %s split again with the %s split's settings (or scale %s by the "
                                        "inverse of this gain)", dpd_split_names[k], rn, p->out);
        f->confidence = fmin(1, fmax(0, 1 - fmax(resid[k], resid[ref])));
        ev_text(f, "split", "%s", dpd_split_names[k]);
        ev_text(f, "reference", "%s", rn);
        ev_num(f, "gain_db", db);
        ev_num(f, "phase_deg", deg);
        ev_num(f, "fit_residual", resid[k]);
    }
    return DPD_OK;
}

/* 9. Amplitude: peak, RMS, PAPR and power of input and output (each one's outliers left out: ymask,
 * xmask). */
static void check_amplitude(const capture *c, dpd_doctor_report *r, const unsigned char *ymask,
                            const unsigned char *xmask) {
    double px = peak(c->x, c->n, xmask), rx = rms(c->x, c->n, xmask), py = peak(c->y, c->n, ymask),
           ry = rms(c->y, c->n, ymask);
    int unknown = !strcmp(c->units, "unknown"), over = !strcmp(c->units, "normalized") && px > UNIT_PEAK;
    dpd_finding *f = over      ? finding(r, "input_exceeds_unit_range", DPD_SEV_WARNING, "Input exceeds the unit range")
                     : unknown ? finding(r, "amplitude_units_unconfirmed", DPD_SEV_INFO, "Amplitude units not stated")
                               : finding(r, "amplitude_range", DPD_SEV_INFO, "Amplitude range");
    if (over) snprintf(f->value, sizeof f->value, "input peak %.4g > %g", px, UNIT_PEAK); /* what is wrong, first */
    else snprintf(f->value, sizeof f->value, "PAPR in %.1f dB, out %.1f dB", 20 * log10(px / rx), 20 * log10(py / ry));
    snprintf(f->message, sizeof f->message, "input peak %.4g RMS %.4g (power %.2f dB), output peak %.4g RMS %.4g "
                                            "(power %.2f dB); amplitude units: %s",
             px, rx, 20 * log10(rx), py, ry, 20 * log10(ry), c->units);
    if (over) {
        snprintf(f->suggestion, sizeof f->suggestion, "normalize=peak_input");
        snprintf(f->fix, sizeof f->fix, "divide input and output by the input peak %.4g (spec.json says the amplitudes "
                                        "are normalized)", px);
    } else if (unknown) {
        snprintf(f->fix, sizeof f->fix, "state \"amplitude_units\" (\"normalized\", \"volts\", ...) in spec.json");
    }
    ev_num(f, "input_peak", px);
    ev_num(f, "input_rms", rx);
    ev_num(f, "input_papr_db", 20 * log10(px / rx));
    ev_num(f, "input_power_db", 20 * log10(rx));
    ev_num(f, "output_peak", py);
    ev_num(f, "output_rms", ry);
    ev_num(f, "output_papr_db", 20 * log10(py / ry));
    ev_num(f, "output_power_db", 20 * log10(ry));
    ev_text(f, "units", "%s", c->units);
}

/* The spec.json names of the fields in bits, "a, b". */
static void field_list(unsigned bits, char *buf, size_t n) {
    buf[0] = 0;
    for (int k = 0; k < NMETA; k++)
        if (bits & 1u << k) {
            size_t l = strlen(buf);
            snprintf(buf + l, n - l, "%s%s", l ? ", " : "", meta_fields[k].key);
        }
}

/* 10. metadata_missing (fs, B, n_sub_ch, nperseg), and dpd's metadata_invalid. */
static void check_metadata(const capture *c, dpd_doctor_report *r) {
    char names[160];
    if (c->missing) {
        field_list(c->missing, names, sizeof names);
        dpd_finding *f = finding(r, "metadata_missing", DPD_SEV_ERROR, "Metadata missing");
        snprintf(f->value, sizeof f->value, "%.90s", names);
        snprintf(f->message, sizeof f->message, "%s %s: the metrics cannot be computed without %s",
                 c->have_spec ? "spec.json lacks" : "there is no spec.json, so it lacks", names,
                 strchr(names, ',') ? "them" : "it");
        if (c->typos[0]) /* a misspelt key: the likelier fix */
            snprintf(f->fix, sizeof f->fix, "add %s to spec.json: rename %s (misspelt; docs/formats.md lists the "
                                            "fields)", names, c->typos);
        else snprintf(f->fix, sizeof f->fix, "add %s to spec.json (docs/formats.md lists the fields)", names);
        ev_text(f, "missing", "%s", names);
        if (c->typos[0]) ev_text(f, "misspelt", "%s", c->typos);
    }
    if (c->invalid) {
        dpd_finding *f = finding(r, "metadata_invalid", DPD_SEV_ERROR, "Metadata invalid");
        snprintf(f->value, sizeof f->value, "%.90s", c->invalid_text);
        snprintf(f->message, sizeof f->message, "spec.json: %s", c->invalid_text);
        if (c->fs_conflict && c->invalid == 1u << META_FS) /* the one fault: two rates */
            snprintf(f->fix, sizeof f->fix, "make spec.json's input_signal_fs and %s's fs the same rate (or leave "
                                            "input_signal_fs out of spec.json: the file's is then used)", c->csv);
        else
            snprintf(f->fix, sizeof f->fix, "give each a positive number in spec.json (n_sub_ch and nperseg whole, "
                                            "nperseg at most %d, bw_main_ch below input_signal_fs, which is at most 1e12 Hz)%s",
                     MAX_NPERSEG, c->fs_conflict ? "; and the same sample rate as the .mat file's fs" : "");
        ev_text(f, "invalid", "%s", c->invalid_text);
    }
    /* dpd: a band plan the default profile cannot score (its EVM and ACLR need both adjacent
     * sub-channel-wide bands inside +-fs/2): said before a run whose every figure would be n/a */
    dpd_band band;
    dpd_error berr = {0};
    if (!c->invalid && c->meta[META_FS] > 0 && c->meta[META_BW] > 0 && c->meta[META_NSUB] >= 1 &&
        c->meta[META_NPERSEG] >= 2 &&
        dpd_band_of((int)c->meta[META_NPERSEG], c->meta[META_FS], c->meta[META_BW], (int)c->meta[META_NSUB], &band, &berr)) {
        dpd_finding *f = finding(r, "band_plan_unscorable", DPD_SEV_WARNING, "The metrics cannot score this band plan");
        snprintf(f->value, sizeof f->value, "fs %g MHz, B %g MHz", c->meta[META_FS] / 1e6, c->meta[META_BW] / 1e6);
        snprintf(f->message, sizeof f->message, "under legacy-opendpd-v1 (the default profile) EVM and ACLR would be "
                                                "not_applicable: %.200s", berr.msg);
        snprintf(f->fix, sizeof f->fix, "capture at a higher sample rate, so that both adjacent channels fit in "
                                        "+-fs/2, or check bw_main_ch and n_sub_ch");
        ev_text(f, "reason", "%s", berr.msg);
    }
    /* dpd: what the loader reads but warns about, as a finding too (a report read as JSON sees it) */
    double fs = c->meta[META_FS], bw = c->meta[META_BW], sub = c->meta[META_SUB], nsub = c->meta[META_NSUB];
    char text[320] = "", value[96] = "";
    if (fs > 0 && fs < 1e5) {
        if (c->fs_from_mat)
            snprintf(text, sizeof text, "%s's fs is %g Hz, which looks like MHz or GHz (a MATLAB file's fs is in hertz "
                                        "too: 800 MHz is 800e6)", c->csv, fs);
        else
            snprintf(text, sizeof text, "input_signal_fs is %g Hz, which looks like MHz or GHz (spec.json gives hertz: "
                                        "800 MHz is 800e6)", fs);
        snprintf(value, sizeof value, "fs %g Hz", fs);
    }
    if (sub > 0 && nsub > 0 && bw > 0 && sub * nsub > bw * (1 + 1e-6)) {
        size_t l = strlen(text), lv = strlen(value);
        snprintf(text + l, sizeof text - l, "%sn_sub_ch x bw_sub_ch (%g x %g Hz = %g Hz) does not fit in bw_main_ch (%g Hz)",
                 l ? "; " : "", nsub, sub, nsub * sub, bw);
        snprintf(value + lv, sizeof value - lv, "%s%g x %g > %g Hz", lv ? ", " : "", nsub, sub, bw);
    }
    if (text[0]) {
        dpd_finding *f = finding(r, "metadata_suspicious", DPD_SEV_WARNING, "Metadata looks wrong");
        snprintf(f->value, sizeof f->value, "%s", value);
        snprintf(f->message, sizeof f->message, "%s%s", c->fs_from_mat && fs > 0 && fs < 1e5 ? "" : "spec.json: ", text);
        snprintf(f->fix, sizeof f->fix, "give the rates in hertz%s, and sub-channels that fit the main channel",
                 c->fs_from_mat ? " (the .mat file's fs too)" : "");
        ev_text(f, "suspicious", "%s", text);
    }
}

/* 11. Occupied bandwidth of x (its outliers, xmask, as 0) against fs and the declared bandwidth. */
static dpd_status check_spectrum(const capture *c, dpd_doctor_report *r, const unsigned char *xmask, dpd_error *err) {
    double fs = c->meta[META_FS], bw = c->meta[META_BW], obw;
    int frames;
    if (!(fs > 0)) return DPD_OK;
    dpd_status s = occupied_bw(c->x, xmask, c->n, fs, &obw, &frames, err);
    if (s || !frames) return s;
    r->obw = obw;
    double ratio = bw > 0 ? obw / bw : NAN;
    dpd_finding *f;
    if (obw > OVERSAMPLING_LIMIT * fs) {
        f = finding(r, "insufficient_oversampling", DPD_SEV_WARNING, "Too little oversampling");
        snprintf(f->message, sizeof f->message, "the input occupies %.4g MHz of the %.4g MHz sample rate (more than %g): "
                                                "adjacent channels and DPD expansion do not fit",
                 obw / 1e6, fs / 1e6, OVERSAMPLING_LIMIT);
        snprintf(f->fix, sizeof f->fix, "capture at a higher sample rate (at least %.4g MHz), or check "
                                        "input_signal_fs in spec.json", obw / OVERSAMPLING_LIMIT / 1e6);
    } else if (bw > 0 && (ratio < BW_RATIO_LO || ratio > BW_RATIO_HI)) {
        f = finding(r, "bandwidth_metadata_mismatch", DPD_SEV_WARNING, "Bandwidth does not match spec.json");
        snprintf(f->message, sizeof f->message, "the input occupies %.4g MHz (99 %% of its power) but spec.json declares "
                                                "%.4g MHz (ratio %.2f, outside %g..%g): ACLR bands are placed wrongly",
                 obw / 1e6, bw / 1e6, ratio, BW_RATIO_LO, BW_RATIO_HI);
        snprintf(f->fix, sizeof f->fix, "set bw_main_ch (and bw_sub_ch, n_sub_ch) in spec.json to the signal's channel "
                                        "plan: about %.4g MHz is occupied", obw / 1e6);
    } else if (bw > 0 && ratio > BW_OVERFLOW && bw >= OVERFLOW_BINS * fs / OBW_FFT) {
        /* dpd: within the reference's tolerance, but over the channel; judged where the channel spans enough of
         * the measurement's bins (a bin and the window's spread add 1 to 5 MHz at 800 MS/s) */
        f = finding(r, "bandwidth_exceeds_channel", DPD_SEV_WARNING, "The signal is wider than its declared channel");
        snprintf(f->message, sizeof f->message, "the input occupies %.4g MHz (99 %% of its power), more than the %.4g MHz "
                                                "channel spec.json declares (ratio %.2f; a right plan gives 0.9 to 1): the "
                                                "adjacent-channel bands overlap the signal, and ACLR measures it, not the PA",
                 obw / 1e6, bw / 1e6, ratio);
        snprintf(f->fix, sizeof f->fix, "check bw_main_ch and input_signal_fs in spec.json (a wrong sample rate scales "
                                        "every frequency): about %.4g MHz is occupied", obw / 1e6);
    } else {
        f = finding(r, "spectrum_summary", DPD_SEV_INFO, "Spectrum");
        snprintf(f->message, sizeof f->message, "the input occupies %.4g MHz (99 %% of its power) at %.4g MHz sample rate"
                                                "%s", obw / 1e6, fs / 1e6, bw > 0 ? ", consistent with spec.json" : "");
    }
    if (bw > 0)
        snprintf(f->value, sizeof f->value, "OBW %.4g MHz, declared %.4g MHz", obw / 1e6, bw / 1e6);
    else
        snprintf(f->value, sizeof f->value, "OBW %.4g MHz", obw / 1e6);
    ev_num(f, "obw_hz", obw);
    ev_num(f, "fs_hz", fs);
    ev_num(f, "bandwidth_hz", bw > 0 ? bw : NAN);
    ev_num(f, "obw_ratio", ratio);
    ev_num(f, "frames", frames);
    return DPD_OK;
}

/* dpd: DC offset, |mean| against RMS of each signal. */
static void check_dc(const capture *c, dpd_doctor_report *r) {
    double dbc[2];
    for (int s = 0; s < 2; s++) {
        const double *iq = s ? c->y : c->x;
        double mi = 0, mq = 0;
        for (size_t i = 0; i < c->n; i++) mi += iq[2 * i], mq += iq[2 * i + 1];
        dbc[s] = 20 * log10(hypot(mi, mq) / (double)c->n / rms(iq, c->n, NULL));
    }
    if (!(dbc[0] > DC_LIMIT_DBC) && !(dbc[1] > DC_LIMIT_DBC)) return;
    int in = dbc[0] > DC_LIMIT_DBC, out = dbc[1] > DC_LIMIT_DBC;
    const char *which = in && out ? "input and output" : in ? "input" : "output";
    dpd_finding *f = finding(r, "dc_offset", DPD_SEV_WARNING, "DC offset");
    snprintf(f->value, sizeof f->value, "in %.1f dBc, out %.1f dBc", dbc[0], dbc[1]);
    snprintf(f->message, sizeof f->message, "the %s %s a DC component above %g dBc of %s RMS (input %.1f dBc, "
                                            "output %.1f dBc)", which, in && out ? "carry" : "carries", DC_LIMIT_DBC,
             in && out ? "their" : "its", dbc[0], dbc[1]);
    snprintf(f->fix, sizeof f->fix, "calibrate the DC (LO leakage) out of the capture, or subtract the mean of I and Q");
    ev_num(f, "input_dc_dbc", dbc[0]);
    ev_num(f, "output_dc_dbc", dbc[1]);
}

/* dpd: stuck samples, runs of identical consecutive samples in one signal. */
static void stuck_check(const capture *c, dpd_doctor_report *r, const double *iq, int output) {
    size_t longest = c->n ? 1 : 0, at = 0, run = 1, repeats = 0, runs = 0;
    for (size_t i = 1; i < c->n; i++) {
        int same = iq[2 * i] == iq[2 * i - 2] && iq[2 * i + 1] == iq[2 * i - 1];
        repeats += same;
        run = same ? run + 1 : 1;
        runs += run == STUCK_RUN;
        if (run > longest) longest = run, at = i + 1 - run;
    }
    double frac = c->n ? (double)repeats / (double)c->n : 0;
    if (longest < STUCK_RUN && frac < REPEAT_FRACTION) return;
    const char *sig = output ? "output" : "input";
    dpd_finding *f = finding(r, "stuck_samples", DPD_SEV_WARNING, output ? "Stuck output samples" : "Stuck input samples");
    snprintf(f->value, sizeof f->value, "%s: %zu equal in a row", sig, longest);
    snprintf(f->message, sizeof f->message, "the %s repeats a sample %zu times in a row from index %zu (%zu runs of %d "
                                            "or more; %.3g %% of samples equal their predecessor)",
             sig, longest, at, runs, STUCK_RUN, 100 * frac);
    snprintf(f->fix, sizeof f->fix, "cut the frozen stretch (a stalled buffer or zero padding) from index %zu, or "
                                    "capture again", at);
    ev_text(f, "signal", "%s", sig);
    ev_num(f, "longest_run", (double)longest);
    ev_list(f, "at", &at, 1);
    ev_num(f, "runs", (double)runs);
    ev_num(f, "repeated_fraction", frac);
}

/* dpd: each split against nperseg (a split shorter than one segment has no legacy metrics). */
static void check_splits(const capture *c, dpd_doctor_report *r) {
    int N = (int)c->meta[META_NPERSEG];
    size_t n[DPD_NSPLIT];
    char pad[160] = "";
    dpd_error why = {0};
    split_lengths(c, n, &why);
    if (why.status) { /* the loader refuses this cut */
        dpd_finding *f = finding(r, "split_invalid", DPD_SEV_ERROR, "The capture cannot be split");
        snprintf(f->value, sizeof f->value, "%zu samples, guard %zu", c->n, c->guard);
        snprintf(f->message, sizeof f->message, "contiguous-v1 refuses to cut %s: %s", c->csv, why.msg);
        snprintf(f->fix, sizeof f->fix, "give split_ratios that sum to 1, a smaller split_guard or a longer capture "
                                        "(docs/metrics.md, contiguous-v1)");
        ev_num(f, "samples", (double)c->n);
        ev_num(f, "guard", (double)c->guard);
        return;
    }
    if (N <= 0) return;
    for (int k = 0; k < DPD_NSPLIT; k++) {
        size_t l = strlen(pad), tail = n[k] % (size_t)N ? (size_t)N - n[k] % (size_t)N : 0;
        if (n[k]) snprintf(pad + l, sizeof pad - l, "%s%s %zu", l ? ", " : "", dpd_split_names[k], tail);
        if (!n[k] || n[k] >= (size_t)N) continue;
        dpd_finding *f = finding(r, "split_shorter_than_segment", DPD_SEV_WARNING, "A split is shorter than nperseg");
        snprintf(f->value, sizeof f->value, "%s %zu < nperseg %d", dpd_split_names[k], n[k], N);
        snprintf(f->message, sizeof f->message, "the %s split has %zu samples, fewer than one segment of nperseg = %d: "
                                                "its legacy metrics are not_applicable", dpd_split_names[k], n[k], N);
        snprintf(f->fix, sizeof f->fix, "lower nperseg in spec.json to at most %zu, or give the %s split more samples",
                 n[k], dpd_split_names[k]);
        ev_text(f, "split", "%s", dpd_split_names[k]);
        ev_num(f, "samples", (double)n[k]);
        ev_num(f, "nperseg", N);
    }
    dpd_finding *f = finding(r, "split_lengths", DPD_SEV_INFO, "Split lengths");
    snprintf(f->value, sizeof f->value, "%zu / %zu / %zu, nperseg %d", n[0], n[1], n[2], N);
    snprintf(f->message, sizeof f->message, "train %zu, val %zu, test %zu samples%s; evaluation cuts nperseg = %d "
                                            "segments and zero-pads the last (padded samples: %s)",
             n[0], n[1], n[2], c->single ? " (contiguous-v1, guards between)" : "", N, pad[0] ? pad : "none");
    ev_num(f, "train", (double)n[0]);
    ev_num(f, "val", (double)n[1]);
    ev_num(f, "test", (double)n[2]);
    ev_num(f, "nperseg", N);
    ev_text(f, "padded", "%s", pad);
    ev_text(f, "protocol", "%s", c->single ? "contiguous-v1" : "files");
}

/* The checks on a loaded capture, in order; the report's findings sorted at the end. */
static dpd_status examine(capture *c, dpd_doctor_report *r, dpd_error *err) {
    unsigned char *mask = NULL;
    dpd_status s = DPD_OK;
    check_files(c, r);
    check_lengths(c, r);
    check_count(c, r);
    check_finite(c, r);
    if (check_silence(c, r)) goto done;
    /* the output's outliers, the input's, and the pairs with either (as the output's alone when the
     * input has none, as the reference has it) */
    if (!(mask = calloc(3, c->n))) {
        s = dpd_fail(err, DPD_E_NOMEM, "doctor: out of memory for %zu samples", c->n);
        goto done;
    }
    unsigned char *xmask = mask + c->n, *pairs = mask + 2 * c->n;
    if ((s = check_outliers(c, r, c->y, 1, mask, err)) || (s = check_outliers(c, r, c->x, 0, xmask, err))) goto done;
    for (size_t i = 0; i < c->n; i++) pairs[i] = mask[i] | xmask[i];
    clip_check(c, r, c->y, mask, 1);
    clip_check(c, r, c->x, xmask, 0);
    double split_delay[DPD_NSPLIT];
    if ((s = check_delay(c, r, pairs, err)) || (s = check_split_alignment(c, r, pairs, split_delay, err)) ||
        (s = check_gain(c, r, pairs, err)) || (s = check_split_consistency(c, r, pairs, split_delay, err)))
        goto done;
    check_amplitude(c, r, mask, xmask);
    check_metadata(c, r);
    if ((s = check_spectrum(c, r, xmask, err))) goto done;
    check_dc(c, r);
    stuck_check(c, r, c->x, 0);
    stuck_check(c, r, c->y, 1);
    check_splits(c, r);
done:
    free(mask);
    sort_findings(r);
    return s;
}

/* A report with its buffer, identity and the estimates unset (NaN). */
static dpd_status report_init(dpd_doctor_report *r, dpd_error *err) {
    memset(r, 0, sizeof *r);
    snprintf(r->version, sizeof r->version, "%s", DPD_DOCTOR_VERSION);
    r->delay = r->delay_confidence = r->gain_re = r->gain_im = r->gain_confidence = r->obw = NAN;
    if (!(r->findings = calloc(MAX_FINDINGS, sizeof *r->findings)))
        return dpd_fail(err, DPD_E_NOMEM, "doctor: out of memory for the report");
    return DPD_OK;
}

/* The report id: doc-<UTC yyyymmdd-HHMMSS>-<first 8 of the raw SHA-256 or "nohash">. */
static void report_id(dpd_doctor_report *r) {
    char when[32] = "00000000-000000";
    time_t t = time(NULL);
    struct tm tm;
    if (gmtime_r(&t, &tm)) strftime(when, sizeof when, "%Y%m%d-%H%M%S", &tm);
    snprintf(r->id, sizeof r->id, "doc-%s-%.8s", when, r->raw_sha256[0] ? r->raw_sha256 : "nohash");
}

/* Loads dir into c and examines it into r (initialised). */
static dpd_status diagnose(const char *dir, capture *c, dpd_doctor_report *r, dpd_error *err) {
    dpd_status s = load(dir, c, r, err);
    if (s) return s;
    size_t n[DPD_NSPLIT];
    split_lengths(c, n, NULL);
    for (int k = 0; k < DPD_NSPLIT; k++) r->n[k] = n[k];
    r->n_total = c->n;
    report_id(r);
    return examine(c, r, err);
}

dpd_status dpd_doctor_run(const char *dir, dpd_doctor_report *r, dpd_error *err) {
    capture c;
    memset(&c, 0, sizeof c);
    dpd_status s = report_init(r, err);
    if (!s) s = diagnose(dir, &c, r, err);
    capture_free(&c);
    return s;
}

int dpd_doctor_errors(const dpd_doctor_report *r, char *buf, size_t n) {
    int count = 0;
    size_t len = 0;
    if (n) buf[0] = 0;
    for (int i = 0; i < r->nfindings; i++) {
        const dpd_finding *f = &r->findings[i];
        if (f->severity != DPD_SEV_ERROR) continue;
        if (len < n)
            len += (size_t)snprintf(buf + len, n - len, "%s%s: %s (fix: %s)", count ? "; " : "", f->code, f->message,
                                    f->fix[0] ? f->fix : "see dpd doctor");
        count++;
    }
    return count;
}

void dpd_doctor_report_free(dpd_doctor_report *r) {
    if (!r) return;
    free(r->findings);
    r->findings = NULL;
    r->nfindings = 0;
}

/* ---- the corrected copy ------------------------------------------------------------------------ */

/* 1 when path names an existing directory with entries. */
static int non_empty_dir(const char *path) {
    DIR *d = opendir(path);
    if (!d) return 0;
    struct dirent *e;
    int any = 0;
    while (!any && (e = readdir(d))) any = strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return any;
}

/* Refuses out when it is dir itself or exists as anything but an empty directory. */
static dpd_status check_out(const char *dir, const char *out, dpd_error *err) {
    struct stat a, b;
    if (!out || !out[0]) return dpd_fail(err, DPD_E_INVAL, "doctor: the corrected copy needs an output directory");
    if (!stat(out, &b)) {
        if (!stat(dir, &a) && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
            return dpd_fail(err, DPD_E_INVAL, "%s is the dataset itself: the doctor never writes in place; give a new "
                                              "directory", out);
        if (!S_ISDIR(b.st_mode) || non_empty_dir(out))
            return dpd_fail(err, DPD_E_INVAL, "%s exists and is not an empty directory: give a new one", out);
    }
    return DPD_OK;
}

/* The data files of one part of the copy: rows i in [0, m) of x (from i + sx) and y (from i + sy,
 * divided by g) as I,Q text in its input and output files (single_csv: I_in,Q_in,I_out,Q_out in
 * its one file). */
static dpd_status write_part(const char *tmp, const part *p, int single, size_t m, size_t sx, size_t sy,
                             const double g[2], dpd_error *err) {
    double gg = g[0] * g[0] + g[1] * g[1];
    for (int f = 0; f < (single ? 1 : 2); f++) {
        size_t cap = 64 + m * (single ? 100 : 52), len = 0;
        char *buf = malloc(cap), path[4400];
        if (!buf) return dpd_fail(err, DPD_E_NOMEM, "doctor: out of memory writing %s", f ? p->out : p->in);
        len += (size_t)snprintf(buf, cap, single ? "I_in,Q_in,I_out,Q_out\n" : "I,Q\n");
        for (size_t i = 0; i < m; i++) {
            const double *u = p->x + 2 * (i + sx), *v = p->y + 2 * (i + sy);
            double yr = (v[0] * g[0] + v[1] * g[1]) / gg, yi = (v[1] * g[0] - v[0] * g[1]) / gg; /* v / g */
            if (single) len += (size_t)snprintf(buf + len, cap - len, "%.10g,%.10g,%.10g,%.10g\n", u[0], u[1], yr, yi);
            else if (f) len += (size_t)snprintf(buf + len, cap - len, "%.10g,%.10g\n", yr, yi);
            else len += (size_t)snprintf(buf + len, cap - len, "%.10g,%.10g\n", u[0], u[1]);
        }
        snprintf(path, sizeof path, "%s/%s", tmp, f ? p->out : p->in);
        dpd_status s = dpd_file_write(path, buf, len, err);
        free(buf);
        if (s) return s;
    }
    return DPD_OK;
}

/* A mat dataset's copy: its one file, x from sample sx and y / g from sy, m samples, the variables
 * and fs as the original has them (a v5 file). */
static dpd_status write_mat(const char *tmp, const capture *c, size_t m, size_t sx, size_t sy, const double g[2],
                            dpd_error *err) {
    const part *p = &c->p[0];
    double gg = g[0] * g[0] + g[1] * g[1], *x = malloc(4 * m * sizeof *x), *y = x ? x + 2 * m : NULL;
    char path[4400];
    if (!x) return dpd_fail(err, DPD_E_NOMEM, "doctor: out of memory writing %s", c->csv);
    for (size_t i = 0; i < m; i++) {
        const double *u = p->x + 2 * (i + sx), *v = p->y + 2 * (i + sy);
        x[2 * i] = u[0], x[2 * i + 1] = u[1];
        y[2 * i] = (v[0] * g[0] + v[1] * g[1]) / gg, y[2 * i + 1] = (v[1] * g[0] - v[0] * g[1]) / gg; /* v / g */
    }
    snprintf(path, sizeof path, "%s/%s", tmp, c->csv);
    dpd_status s = dpd_mat_write_pair(path, x, y, m, c->mat_fs, c->matx[0] ? c->matx : NULL,
                                      c->maty[0] ? c->maty : NULL, 0, err);
    free(x);
    return s;
}

/* Removes the temporary directory's files (only the names this writer may have made). */
static void remove_tmp(const char *tmp, const capture *c) {
    char path[4400];
    snprintf(path, sizeof path, "%s/spec.json", tmp);
    unlink(path);
    for (int k = 0; k < c->nparts; k++) {
        snprintf(path, sizeof path, "%s/%s", tmp, c->p[k].in);
        unlink(path);
        snprintf(path, sizeof path, "%s/%s", tmp, c->p[k].out);
        unlink(path);
    }
    rmdir(tmp);
}

/* The copy's files into tmp: each present part shifted by D and divided by g, then spec.json. */
static dpd_status write_copy(const char *tmp, const capture *c, long D, const double g[2], dpd_doctor_fixed *fx,
                             dpd_error *err) {
    for (int k = 0; k < c->nparts; k++) {
        const part *p = &c->p[k];
        size_t m = p->nx < p->ny ? p->nx : p->ny, a = (size_t)labs(D);
        if (!p->present) continue;
        if (a >= m)
            return dpd_fail(err, DPD_E_INVAL, "%s/%s: %zu samples cannot be shifted by %ld", c->dir, p->in, m, D);
        dpd_status s = c->mat ? write_mat(tmp, c, m - a, D < 0 ? a : 0, D > 0 ? a : 0, g, err)
                              : write_part(tmp, p, c->single, m - a, D < 0 ? a : 0, D > 0 ? a : 0, g, err);
        if (s) return s;
        fx->rows[k] = m - a;
    }
    char from[4400], to[4400], *text;
    size_t len;
    snprintf(from, sizeof from, "%s/spec.json", c->dir);
    snprintf(to, sizeof to, "%s/spec.json", tmp);
    dpd_status s = dpd_file_read_max(from, DPD_MAX_SPEC_BYTES, "spec.json", &text, &len, err);
    if (!s) s = dpd_file_write(to, text, len, err);
    free(text);
    return s;
}

/* Writes the copy into a temporary directory beside out (created with its parents), then renames it
 * into place; on failure removes what it wrote. */
static dpd_status place_copy(const capture *c, const char *out, long D, const double g[2], dpd_doctor_fixed *fx,
                             dpd_error *err) {
    char dest[4200], tmp[4300];
    snprintf(dest, sizeof dest, "%s", out);
    size_t l = strlen(dest);
    while (l > 1 && dest[l - 1] == '/') dest[--l] = 0;
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", dest, (long)getpid());
    char *slash = strrchr(dest, '/');
    dpd_status s = DPD_OK;
    if (slash && slash != dest) {
        *slash = 0;
        s = dpd_mkdirs(dest, err);
        *slash = '/';
    }
    if (!s && mkdir(tmp, 0755)) /* named as the user gave it; the temporary name beside it is ours */
        s = dpd_fail(err, DPD_E_IO, "%s: cannot create the corrected copy there: %s", out, strerror(errno));
    if (s) return s;
    s = write_copy(tmp, c, D, g, fx, err);
    if (!s && rename(tmp, dest))
        s = dpd_fail(err, DPD_E_IO, "%s: cannot move the copy into place: %s", dest, strerror(errno));
    if (s) remove_tmp(tmp, c);
    return s;
}

dpd_status dpd_doctor_fix(const char *dir, const char *out, unsigned fixes, dpd_doctor_report *r,
                          dpd_doctor_fixed *fx, dpd_error *err) {
    capture c;
    memset(&c, 0, sizeof c);
    memset(fx, 0, sizeof *fx);
    fx->gain_re = 1;
    dpd_status s = report_init(r, err);
    if (!s && (!fixes || (fixes & ~(unsigned)(DPD_FIX_DELAY | DPD_FIX_GAIN))))
        s = dpd_fail(err, DPD_E_INVAL, "doctor: fixes must be DPD_FIX_DELAY, DPD_FIX_GAIN or both");
    if (!s) s = check_out(dir, out, err);
    if (!s) s = diagnose(dir, &c, r, err);
    if (!s && r->evaluation_blocked)
        s = dpd_fail(err, DPD_E_INVAL, "%s: not corrected: %s blocks it (%s); fix the error-level findings first",
                     c.dir, r->findings[0].code, r->findings[0].message);
    if (!s) {
        long D = fixes & DPD_FIX_DELAY ? lround(r->delay) : 0;
        double g[2] = {1, 0};
        if (fixes & DPD_FIX_GAIN) g[0] = r->gain_re, g[1] = r->gain_im;
        fx->shift = D, fx->gain_re = g[0], fx->gain_im = g[1];
        s = place_copy(&c, out, D, g, fx, err);
    }
    capture_free(&c);
    return s;
}
