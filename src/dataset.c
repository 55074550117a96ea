/* dataset: OpenDPD dataset directories (reference §1): spec.json, split_csv (six I,Q files) and
 * single_csv (one I_in,Q_in,I_out,Q_out file split by ratios), plus eval segmentation.
 * It reads and validates; it does not frame, normalise or align anything. */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "dpd/dpd.h"
#include "dataset.h"
#include "file.h"
#include "status.h"

const char *const dpd_split_names[DPD_NSPLIT] = {"train", "val", "test"};

static locale_t loc;
static void make_locale(void) { loc = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0); }

/* The C locale for number parsing, made once for the process (thread-safe). */
static locale_t c_locale(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, make_locale);
    return loc;
}

/* Splits line [p, end) on commas into at most max fields (start, length); returns the count,
 * or max + 1 when there are more. */
static int split_fields(const char *p, const char *end, const char **f, int *len, int max) {
    int n = 0;
    for (;;) {
        const char *c = p;
        while (c < end && *c != ',') c++;
        if (n == max) return max + 1;
        f[n] = p;
        len[n++] = (int)(c - p);
        if (c == end) return n;
        p = c + 1;
    }
}

/* The plain decimal [+-]digits[.digits][e[+-]digits] in [f, e) when its value is one correctly
 * rounded operation away (Clinger's fast path: at most 19 significant digits making a mantissa below
 * 2^53, times or over an exact power of ten up to 1e22): 1 with *v set, else 0 (strtod_l decides).
 * It reads a capture's numbers (0.044844472) several times faster than strtod_l, to the same bits. */
static int fast_number(const char *f, const char *e, double *v) {
    static const double p10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                   1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    int neg = f < e && *f == '-', digits = 0, any = 0, frac = 0;
    long ex = 0;
    uint64_t m = 0;
    if (f < e && (*f == '-' || *f == '+')) f++;
    for (; f < e && ((*f >= '0' && *f <= '9') || (*f == '.' && !frac)); f++) {
        if (*f == '.') {
            frac = 1;
            continue;
        }
        any = 1;
        ex -= frac;
        if (!m && *f == '0') continue; /* leading zeros */
        if (++digits > 19) return 0;
        m = m * 10 + (uint64_t)(*f - '0');
    }
    if (f < e && (*f == 'e' || *f == 'E')) {
        int sign = ++f < e && *f == '-' ? -1 : 1, k = 0;
        if (f < e && (*f == '-' || *f == '+')) f++;
        for (; f < e && *f >= '0' && *f <= '9' && k < 6; f++, any |= 2) k = k * 10 + (*f - '0');
        if (!(any & 2)) return 0;
        ex += sign * k;
    }
    if (f != e || !(any & 1) || m > (1ull << 53) || ex < -22 || ex > 22) return 0;
    *v = ex < 0 ? (double)m / p10[-ex] : (double)m * p10[ex];
    if (neg) *v = -*v;
    return 1;
}

int dpd_csv_number(const char *f, const char *e, double *v) {
    char buf[128], *end;
    while (f < e && (*f == ' ' || *f == '\t')) f++;
    while (e > f && (e[-1] == ' ' || e[-1] == '\t')) e--;
    if (f == e) return 0;
    if (fast_number(f, e, v)) return 1;
    if (e - f >= (long)sizeof buf) return 0;
    memcpy(buf, f, (size_t)(e - f));
    buf[e - f] = 0;
    *v = strtod_l(buf, &end, c_locale());
    return end == buf + (e - f);
}

int dpd_csv_names(const char *f, int len, const char *name) {
    const char *e = f + len;
    while (f < e && (*f == ' ' || *f == '\t')) f++;
    while (e > f && (e[-1] == ' ' || e[-1] == '\t')) e--;
    return (size_t)(e - f) == strlen(name) && !strncasecmp(f, name, (size_t)(e - f));
}

dpd_status dpd_csv_pick(const char *path, const char *const *f, const int *len, int nf, const char *const *names,
                        int ncol, int *pick, dpd_error *err) {
    for (int k = 0; k < ncol; k++) {
        pick[k] = -1;
        for (int j = 0; j < nf; j++) {
            if (!dpd_csv_names(f[j], len[j], names[k])) continue;
            if (pick[k] >= 0)
                return dpd_fail(err, DPD_E_FORMAT, "%s:1: header names column '%s' twice (fields %d and %d; names match "
                                                   "in any case): name each column once", path, names[k], pick[k] + 1, j + 1);
            pick[k] = j;
        }
    }
    return DPD_OK;
}

const char *dpd_csv_sep_hint(const char *p, const char *e, int numbers) {
    size_t n = (size_t)(e - p);
    if (!numbers && memchr(p, ',', n)) return "";
    if (memchr(p, ';', n))
        return ": its fields are separated by ';' (a spreadsheet's export with decimal commas?), and dpd reads "
               "comma-separated values with decimal points; convert it, e.g. sed 's/,/./g; s/;/,/g'";
    if (memchr(p, '\t', n))
        return ": its fields are separated by tabs, and dpd reads comma-separated values; convert it, e.g. "
               "sed 's/,/./g; s/\\t/,/g'";
    return "";
}

size_t dpd_csv_bom(const char *p, const char *end) {
    return end - p >= 3 && !memcmp(p, "\xef\xbb\xbf", 3) ? 3 : 0;
}

#define MAXCOL 64

/* dpd_csv_read; *lacks (may be NULL) = 1 when it failed because the header names no column for
 * one of names. */
static dpd_status csv_read(const char *path, int ncol, const char *const *names, double **out, size_t *rows, int *lacks,
                           dpd_error *err) {
    char *buf;
    size_t len;
    *out = NULL;
    *rows = 0;
    dpd_status s = dpd_file_read_max(path, DPD_MAX_CSV_BYTES, "CSV", &buf, &len, err);
    if (s) return s;
    const char *f[MAXCOL + 1];
    int fl[MAXCOL + 1], pick[MAXCOL], nhead = 0;
    size_t cap = 0, n = 0, line = 0;
    double *d = NULL;
    const char *p = buf, *end = buf + len;
    p += dpd_csv_bom(p, end);
    while (p < end) {
        const char *e = memchr(p, '\n', (size_t)(end - p));
        const char *next = e ? e + 1 : end;
        if (!e) e = end;
        if (e > p && e[-1] == '\r') e--;
        line++;
        if (e == p) { /* blank lines are allowed only at the end */
            const char *q = next;
            while (q < end && (*q == '\n' || *q == '\r')) q++;
            if (q != end) {
                s = dpd_fail(err, DPD_E_FORMAT, "%s:%zu: empty line inside the data", path, line);
                goto fail;
            }
            break;
        }
        int nf = split_fields(p, e, f, fl, MAXCOL);
        if (line == 1) {
            double v;
            if (nf > MAXCOL) {
                s = dpd_fail(err, DPD_E_FORMAT, "%s:1: more than %d columns", path, MAXCOL);
                goto fail;
            }
            if (dpd_csv_number(f[0], f[0] + fl[0], &v)) {
                char want[256] = "";
                for (int k = 0; k < ncol; k++)
                    snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s", k ? "," : "",
                             names ? names[k] : k ? "Q" : "I");
                s = dpd_fail(err, DPD_E_FORMAT, "%s:1: expected a header line (%s), got numbers%s", path, want,
                             dpd_csv_sep_hint(p, e, 1));
                goto fail;
            }
            nhead = nf;
            if (!names) {
                if (nf != ncol) {
                    s = dpd_fail(err, DPD_E_FORMAT, "%s:1: the header names no columns I and Q and has %d column%s: name "
                                 "the I and Q columns (others are ignored), or give exactly %d, read as I then Q%s",
                                 path, nf, nf == 1 ? "" : "s", ncol, dpd_csv_sep_hint(p, e, 0));
                    goto fail;
                }
                for (int k = 0; k < ncol; k++) pick[k] = k;
            } else {
                if ((s = dpd_csv_pick(path, f, fl, nf, names, ncol, pick, err))) goto fail;
                for (int k = 0; k < ncol; k++)
                    if (pick[k] < 0) {
                        if (lacks) *lacks = 1;
                        s = dpd_fail(err, DPD_E_FORMAT, "%s:1: header lacks column '%s'%s", path, names[k],
                                     dpd_csv_sep_hint(p, e, 0));
                        goto fail;
                    }
            }
        } else {
            if (nf != nhead) {
                s = dpd_fail(err, DPD_E_FORMAT, "%s:%zu: %s fields, expected %d", path, line,
                             nf > nhead ? "extra" : "missing", nhead);
                goto fail;
            }
            if (n == cap) {
                cap = cap ? cap * 2 : 4096;
                double *nd = realloc(d, cap * (size_t)ncol * sizeof *d);
                if (!nd) {
                    s = dpd_fail(err, DPD_E_NOMEM, "%s: out of memory", path);
                    goto fail;
                }
                d = nd;
            }
            for (int k = 0; k < ncol; k++) {
                int j = pick[k];
                double v;
                if (!dpd_csv_number(f[j], f[j] + fl[j], &v)) {
                    s = dpd_fail(err, DPD_E_FORMAT, "%s:%zu: field %d ('%.*s') is not a number",
                                 path, line, j + 1, fl[j] > 40 ? 40 : fl[j], f[j]);
                    goto fail;
                }
                if (!dpd_sample_ok(v)) {
                    s = dpd_fail(err, DPD_E_FORMAT, "%s:%zu: field %d ('%.*s') is %s", path, line, j + 1,
                                 fl[j] > 40 ? 40 : fl[j], f[j],
                                 isfinite(v) ? "out of range (a float sample's magnitude is at most 3.4e38)" : "not finite");
                    goto fail;
                }
                d[n * (size_t)ncol + (size_t)k] = v;
            }
            n++;
        }
        p = next;
    }
    if (line == 0) {
        s = dpd_fail(err, DPD_E_FORMAT, "%s: empty file (expected a header and data rows)", path);
        goto fail;
    }
    if (n == 0) {
        s = dpd_fail(err, DPD_E_FORMAT, "%s: no data rows after the header", path);
        goto fail;
    }
    free(buf);
    *out = d;
    *rows = n;
    return DPD_OK;
fail:
    free(buf);
    free(d);
    return s;
}

/* Appends printf text to the warning w ("; " between notes), truncating at its size. */
static void warn_add(char *w, size_t n, const char *fmt, ...) {
    size_t l = strlen(w);
    if (l + 1 >= n) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w + l, n - l, fmt, ap);
    va_end(ap);
}

static dpd_status spec_number(json_t *root, const char *path, const char *key, const char *alias,
                              double *v, int required, dpd_error *err, char *warn, size_t nwarn) {
    json_t *j = json_object_get(root, key), *ja = alias ? json_object_get(root, alias) : NULL;
    if (j && ja && !(json_is_number(j) && json_is_number(ja) && json_number_value(j) == json_number_value(ja)))
        return dpd_fail(err, DPD_E_FORMAT, "%s: fields '%s' and '%s' (its alias) are both given and differ: give one", path,
                        key, alias);
    if (!j && ja && (j = ja) && warn) { /* each alias read, said: the path once for them all */
        if (strstr(warn, "(alias)")) warn_add(warn, nwarn, ", '%s' read as '%s' (alias)", alias, key);
        else warn_add(warn, nwarn, "%s%s: '%s' read as '%s' (alias)", warn[0] ? "; " : "", path, alias, key);
    }
    if (!j) {
        if (!required) return DPD_OK;
        const char *typo = dpd_spec_misspelling(root, key);
        return dpd_fail(err, DPD_E_FORMAT, "%s: field '%s' is missing (the RF metrics need it)%s%.64s%s", path, key,
                        typo ? "; is '" : "", typo ? typo : "", typo ? "' a misspelling of it?" : "");
    }
    if (!json_is_number(j) || !isfinite(json_number_value(j)) || json_number_value(j) <= 0)
        return dpd_fail(err, DPD_E_FORMAT, "%s: field '%s' must be a positive number%s", path,
                        j == json_object_get(root, key) ? key : alias,
                        json_is_string(j) ? ", not a string (write it without quotes)" : "");
    *v = json_number_value(j);
    return DPD_OK;
}

/* The longest eval segment (Welch/FFT length) spec.json may ask for: 2^20 samples, 64 times the
 * longest of the reference datasets (16384), 8 MB per segment as float32 I/Q. */
#define DPD_MAX_NPERSEG (1 << 20)

static dpd_status spec_int(json_t *root, const char *path, const char *key, int min, int max, int *v,
                           dpd_error *err) {
    double d = 0;
    dpd_status s = spec_number(root, path, key, NULL, &d, 1, err, NULL, 0);
    if (s) return s;
    if (d != floor(d))
        return dpd_fail(err, DPD_E_FORMAT, "%s: field '%s' must be a positive integer, got %g",
                        path, key, d);
    if (d < min || d > max)
        return dpd_fail(err, DPD_E_FORMAT, "%s: field '%s' is %.0f, out of range %d..%d", path, key, d, min, max);
    *v = (int)d;
    return DPD_OK;
}

/* The names a "mat" dataset's spec.json gives: the file and its input and output variables ("" for
 * dpd_mat_read_pair's defaults). */
typedef struct mat_names {
    char file[256], x[64], y[64];
} mat_names;

/* A spec.json field that names something: a string of 1..max-1 characters without '/' (kept in
 * out), or absent (out keeps its default). */
static dpd_status spec_name(json_t *root, const char *path, const char *key, char *out, size_t max,
                            dpd_error *err) {
    json_t *j = json_object_get(root, key);
    if (!j) return DPD_OK;
    if (!json_is_string(j) || !json_string_length(j) || json_string_length(j) >= max ||
        strchr(json_string_value(j), '/'))
        return dpd_fail(err, DPD_E_FORMAT, "%s: field '%s' must be a plain name of 1 to %zu characters", path, key,
                        max - 1);
    snprintf(out, max, "%s", json_string_value(j));
    return DPD_OK;
}

/* The top-level keys of spec.json that dpd knows: those it reads (here and in the doctor), then
 * metadata that other writers put there and nothing reads (dpd synth's "generator"; OpenDPD's
 * create_dataset and its MyCustomPA example: split_indices, description, ...). Any other key is
 * warned about: a misspelt field would otherwise be silently replaced by its default. */
static const char *const spec_keys[] = {
    "dataset_format", "input_signal_fs", "bw_main_ch", "input_signal_bw", "bw_sub_ch", "input_signal_sub_ch_bw",
    "n_sub_ch", "nperseg", "split_ratios", "split_guard", "csv_filename", "mat_filename", "mat_input", "mat_output",
    "amplitude_units", /* metadata only: */ "generator", "generator_seed", "split_indices", "description", "origin",
    "tutorial", "n_active", "modulation"};

/* Edit distance between a and b, letters compared without case (both at most 63 characters): the
 * insertions, deletions, substitutions and swaps of two neighbours ("polt" for plot: one) that make
 * one the other, no part edited twice (the optimal string alignment distance). */
static int key_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    int d[64][64];
    for (size_t i = 0; i <= la; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int ca = tolower((unsigned char)a[i - 1]), cb = tolower((unsigned char)b[j - 1]);
            int v = d[i - 1][j - 1] + (ca != cb);
            if (d[i - 1][j] + 1 < v) v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) && tolower((unsigned char)a[i - 2]) == cb &&
                d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[la][lb];
}

const char *dpd_nearest(const char *word, const char *const *words, int n) {
    const char *best = NULL;
    int bd = INT_MAX;
    if (strlen(word) > 63) return NULL;
    for (int i = 0; i < n; i++) {
        const char *k = words[i];
        size_t l = strlen(k);
        if (l > 63) continue;
        int d = key_distance(word, k);
        int close = (d <= (l < 6 ? 1 : 2) && d < (int)strlen(word)) || /* "x" is no typo of "K" */
                    (!strncmp(word, k, l) && (word[l] == '_' || word[l] == '-' || word[l] == '.'));
        if (close && d < bd) best = k, bd = d;
    }
    return best;
}

/* The known key closest to an unknown one, or NULL (dpd_nearest). */
static const char *closest_key(const char *key) {
    return dpd_nearest(key, spec_keys, (int)(sizeof spec_keys / sizeof *spec_keys));
}

static int known_key(const char *key) {
    for (size_t i = 0; i < sizeof spec_keys / sizeof *spec_keys; i++)
        if (!strcmp(key, spec_keys[i])) return 1;
    return 0;
}

const char *dpd_spec_misspelling(const json_t *root, const char *key) {
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)root, k, v) {
        const char *near = known_key(k) ? NULL : closest_key(k);
        if (near && !strcmp(near, key)) return k;
    }
    return NULL;
}

/* One warning naming every top-level key of root that dpd does not know (the first eight, then a
 * count), each with the known key it is closest to, if any. */
static void warn_unknown_keys(json_t *root, const char *path, char *w, size_t n) {
    const char *key;
    json_t *v;
    int bad = 0;
    json_object_foreach(root, key, v) bad += !known_key(key);
    if (!bad) return;
    int shown = 0;
    if (w[0]) warn_add(w, n, "; ");
    warn_add(w, n, bad == 1 ? "%s: unknown key " : "%s: unknown keys ignored: ", path);
    json_object_foreach(root, key, v) {
        if (known_key(key) || shown == 8) continue;
        const char *near = closest_key(key);
        warn_add(w, n, "%s'%.64s'%s%s%s", shown++ ? ", " : "", key, bad == 1 ? " ignored" : "",
                 near ? " (did you mean '" : "", near ? near : "");
        if (near) warn_add(w, n, "'?)");
    }
    if (bad > shown) warn_add(w, n, " and %d more", bad - shown);
}

static dpd_status load_spec(const char *dir, dpd_dataset *ds, char *format, size_t nformat,
                            char *csvname, size_t ncsv, mat_names *mat, dpd_error *err) {
    char path[4200];
    snprintf(path, sizeof path, "%s/spec.json", dir);
    if (!dpd_exists(path))
        return dpd_fail(err, DPD_E_IO, "%s: missing (every dataset directory needs one)", path);
    char *text;
    size_t len;
    dpd_status s = dpd_file_read_max(path, DPD_MAX_SPEC_BYTES, "spec.json", &text, &len, err);
    if (s) return s;
    json_error_t je;
    size_t bom = dpd_csv_bom(text, text + len); /* as a Windows editor saves it, and as the CSVs allow */
    json_t *root = json_loadb(text + bom, len - bom, JSON_REJECT_DUPLICATES, &je);
    free(text);
    if (!root) return dpd_fail(err, DPD_E_FORMAT, "%s:%d:%d: %s", path, je.line, je.column, je.text);
    dpd_spec *sp = &ds->spec;
    if (!json_is_object(root)) {
        s = dpd_fail(err, DPD_E_FORMAT, "%s: expected a JSON object", path);
        goto done;
    }
    json_t *fmt = json_object_get(root, "dataset_format");
    snprintf(format, nformat, "split_csv");
    if (fmt) {
        if (!json_is_string(fmt) || (strcmp(json_string_value(fmt), "split_csv") &&
                                     strcmp(json_string_value(fmt), "single_csv") &&
                                     strcmp(json_string_value(fmt), "mat"))) {
            s = dpd_fail(err, DPD_E_FORMAT,
                         "%s: field 'dataset_format' is %s%s%s; expected \"split_csv\", "
                         "\"single_csv\" or \"mat\"",
                         path, json_is_string(fmt) ? "\"" : "",
                         json_is_string(fmt) ? json_string_value(fmt) : "not a string",
                         json_is_string(fmt) ? "\"" : "");
            goto done;
        }
        snprintf(format, nformat, "%s", json_string_value(fmt));
    }
    json_t *csv = json_object_get(root, "csv_filename");
    snprintf(csvname, ncsv, "data.csv");
    if (csv) {
        if (!json_is_string(csv) || strchr(json_string_value(csv), '/')) {
            s = dpd_fail(err, DPD_E_FORMAT, "%s: field 'csv_filename' must be a plain file name",
                         path);
            goto done;
        }
        snprintf(csvname, ncsv, "%s", json_string_value(csv));
    }
    snprintf(mat->file, sizeof mat->file, "data.mat");
    mat->x[0] = mat->y[0] = 0;
    if ((s = spec_name(root, path, "mat_filename", mat->file, sizeof mat->file, err)) ||
        (s = spec_name(root, path, "mat_input", mat->x, sizeof mat->x, err)) ||
        (s = spec_name(root, path, "mat_output", mat->y, sizeof mat->y, err)))
        goto done;
    sp->ratios[0] = 0.6, sp->ratios[1] = 0.2, sp->ratios[2] = 0.2;
    sp->guard = 256;
    json_t *guard = json_object_get(root, "split_guard");
    if (guard) {
        if (!json_is_integer(guard) || json_integer_value(guard) < 0 || json_integer_value(guard) > (1LL << 40)) {
            s = dpd_fail(err, DPD_E_FORMAT, "%s: field 'split_guard' must be an integer number of samples >= 0", path);
            goto done;
        }
        sp->guard = (long)json_integer_value(guard);
    }
    json_t *r = json_object_get(root, "split_ratios");
    if (r) {
        for (int k = 0; k < DPD_NSPLIT; k++) {
            json_t *v = json_is_object(r) ? json_object_get(r, dpd_split_names[k]) : NULL;
            if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > 1) {
                s = dpd_fail(err, DPD_E_FORMAT,
                             "%s: field 'split_ratios.%s' must be a number in [0, 1]", path,
                             dpd_split_names[k]);
                goto done;
            }
            sp->ratios[k] = json_number_value(v);
        }
        double sum = sp->ratios[0] + sp->ratios[1] + sp->ratios[2];
        if (strcmp(format, "split_csv") && fabs(sum - 1) > 1e-6) { /* the formats split by them (split_csv's are unused) */
            s = dpd_fail(err, DPD_E_FORMAT, "%s: field 'split_ratios' sums to %.9g, not 1 (train %g, val %g, test %g)",
                         path, sum, sp->ratios[0], sp->ratios[1], sp->ratios[2]);
            goto done;
        }
    }
    /* a .mat capture may carry its sample rate instead (load_mat checks the two agree) */
    int is_mat = !strcmp(format, "mat");
    if ((s = spec_number(root, path, "input_signal_fs", NULL, &sp->fs, !is_mat, err, NULL, 0)) ||
        (s = spec_number(root, path, "bw_main_ch", "input_signal_bw", &sp->bw_main, 1, err,
                         ds->warning, sizeof ds->warning)) ||
        (s = spec_number(root, path, "bw_sub_ch", "input_signal_sub_ch_bw", &sp->bw_sub, 0, err,
                         ds->warning, sizeof ds->warning)) ||
        (s = spec_int(root, path, "n_sub_ch", 1, 1000000000, &sp->n_sub, err)) ||
        (s = spec_int(root, path, "nperseg", 2, DPD_MAX_NPERSEG, &sp->nperseg, err))) /* a PSD needs two samples a frame */
        goto done;
    if (sp->fs > DPD_MAX_RATE_HZ) {
        s = dpd_fail(err, DPD_E_FORMAT, "%s: field 'input_signal_fs' is %g Hz, above %g Hz (1 THz): spec.json gives "
                     "the baseband sample rate in hertz (800 MHz is 800e6)", path, sp->fs, DPD_MAX_RATE_HZ);
        goto done;
    }
    if (sp->fs > 0 && sp->bw_main >= sp->fs) {
        s = dpd_fail(err, DPD_E_FORMAT, "%s: bw_main_ch (%g Hz) must be below input_signal_fs (%g Hz)%s",
                     path, sp->bw_main, sp->fs, sp->fs < 1e5 ? " (spec.json gives hertz: 800 MHz is 800e6)" : "");
        goto done;
    }
    /* what is read but looks wrong: said, not refused (the metrics take ratios of these rates) */
    char *w = ds->warning;
    size_t nw = sizeof ds->warning;
    if (sp->fs > 0 && sp->fs < 1e5)
        warn_add(w, nw, "%s%s: input_signal_fs is %g Hz, which looks like MHz or GHz (spec.json gives hertz: 800 MHz "
                        "is 800e6)", w[0] ? "; " : "", path, sp->fs);
    static const char *const bw_key[2] = {"bw_main_ch", "bw_sub_ch"};
    const double bw[2] = {sp->bw_main, sp->bw_sub};
    for (int k = 0; k < 2; k++) /* no channel is under 1 kHz wide: 200 meant as MHz */
        if (bw[k] > 0 && bw[k] < 1e3)
            warn_add(w, nw, "%s%s: %s is %g Hz, which looks like MHz (spec.json gives hertz: %g MHz is %ge6)",
                     w[0] ? "; " : "", path, bw_key[k], bw[k], bw[k], bw[k]);
    if (sp->bw_sub > 0 && sp->n_sub > 0 && sp->bw_sub * sp->n_sub > sp->bw_main * (1 + 1e-6))
        warn_add(w, nw, "%s%s: n_sub_ch x bw_sub_ch (%d x %g Hz = %g Hz) does not fit in bw_main_ch (%g Hz)",
                 w[0] ? "; " : "", path, sp->n_sub, sp->bw_sub, sp->bw_sub * sp->n_sub, sp->bw_main);
    json_t *units = json_object_get(root, "amplitude_units");
    if (units && !json_is_string(units))
        warn_add(w, nw, "%s%s: field 'amplitude_units' is not a string (\"normalized\", \"volts\", ...): the units "
                        "are taken as unknown", w[0] ? "; " : "", path);
    warn_unknown_keys(root, path, ds->warning, sizeof ds->warning);
done:
    json_decref(root);
    return s;
}

dpd_status dpd_csv_read(const char *path, int ncol, const char *const *names, double **out, size_t *rows,
                        dpd_error *err) {
    return csv_read(path, ncol, names, out, rows, NULL, err);
}

dpd_status dpd_csv_read_iq(const char *path, double **iq, size_t *n, int *by_position, dpd_error *err) {
    static const char *const names[2] = {"I", "Q"};
    int lacks = 0;
    *by_position = 0;
    dpd_status s = csv_read(path, 2, names, iq, n, &lacks, err);
    if (!s || !lacks) return s; /* read by name, or named and wrong further on */
    s = csv_read(path, 2, NULL, iq, n, NULL, err); /* its message says what is wrong in order */
    *by_position = !s;
    return s;
}

/* A split file (a `dpd run` output, I,Q,I_in,Q_in, drops into a dataset): read by position is a
 * warning in ds's, once a dataset (*warned). */
static dpd_status read_iq(dpd_dataset *ds, const char *path, double **iq, size_t *n, int *warned, dpd_error *err) {
    int pos;
    dpd_status s = dpd_csv_read_iq(path, iq, n, &pos, err);
    if (pos && !*warned) {
        *warned = 1;
        if (ds->warning[0]) warn_add(ds->warning, sizeof ds->warning, "; ");
        warn_add(ds->warning, sizeof ds->warning, "%.300s: its header names no columns I and Q: read as I then Q, by "
                                                  "position, as OpenDPD reads it (name the columns I and Q to say which "
                                                  "is which)", path);
    }
    return s;
}

static dpd_status load_split_csv(dpd_dataset *ds, unsigned need, unsigned want, dpd_error *err) {
    int warned = 0; /* a header read by position, said */
    for (int k = 0; k < DPD_NSPLIT; k++) {
        if (!((need | want) & (1u << k))) continue;
        char in[4300], out[4300];
        snprintf(in, sizeof in, "%s/%s_input.csv", ds->dir, dpd_split_names[k]);
        snprintf(out, sizeof out, "%s/%s_output.csv", ds->dir, dpd_split_names[k]);
        if (!dpd_exists(in) && !dpd_exists(out)) {
            if (!(need & (1u << k))) continue;
            return dpd_fail(err, DPD_E_IO, "%s has no %s split (neither %s_input.csv nor %s_output.csv)%s", ds->dir,
                            dpd_split_names[k], dpd_split_names[k], dpd_split_names[k],
                            k == 0 ? ": training needs one (dpd eval scores the val and test splits without it)" : "");
        }
        size_t nx, ny;
        dpd_status s = read_iq(ds, in, &ds->split[k].x, &nx, &warned, err);
        if (!s) s = read_iq(ds, out, &ds->split[k].y, &ny, &warned, err);
        if (s) return s;
        if (nx != ny)
            return dpd_fail(err, DPD_E_FORMAT,
                            "%s has %zu rows but %s has %zu: input and output must match", in,
                            nx, out, ny);
        ds->split[k].n = nx;
    }
    return DPD_OK;
}

dpd_status dpd_split_contiguous(size_t n, const double r[3], size_t guard, size_t begin[3], size_t len[3],
                                dpd_error *err) {
    double sum = 0;
    for (int k = 0; k < DPD_NSPLIT; k++) {
        if (!(r[k] >= 0 && r[k] <= 1))
            return dpd_fail(err, DPD_E_INVAL, "split_ratios.%s is %g, not in [0, 1]", dpd_split_names[k], r[k]);
        sum += r[k];
    }
    if (fabs(sum - 1) > 1e-6)
        return dpd_fail(err, DPD_E_INVAL, "split_ratios sum to %.9g, not 1 (%g/%g/%g)", sum, r[0], r[1], r[2]);
    if (n < 2 * guard + 3)
        return dpd_fail(err, DPD_E_INVAL, "%zu samples leave %s usable after two %zu-sample guards; contiguous-v1 needs "
                        "at least 3", n, n > 2 * guard ? "fewer than 3" : "none", guard);
    size_t usable = n - 2 * guard;
    len[0] = (size_t)floor((double)usable * r[0]);
    len[1] = (size_t)floor((double)usable * r[1]);
    if (len[0] + len[1] > usable) len[1] = usable - len[0];
    len[2] = usable - len[0] - len[1];
    begin[0] = 0, begin[1] = len[0] + guard, begin[2] = begin[1] + len[1] + guard;
    for (int k = 0; k < DPD_NSPLIT; k++)
        if (!len[k])
            return dpd_fail(err, DPD_E_INVAL, "the %s split is empty: %zu usable samples (%zu less two %zu-sample "
                            "guards) with split_ratios %g/%g/%g", dpd_split_names[k], usable, n, guard, r[0], r[1], r[2]);
    return DPD_OK;
}

/* One capture of n samples split by contiguous-v1 into ds's splits: sample i's input at x + i * step
 * and its output at y + i * step (I then Q). path names the file in the errors. */
static dpd_status split_capture(dpd_dataset *ds, const char *path, const double *x, const double *y, size_t step,
                                size_t n, dpd_error *err) {
    size_t len[3];
    snprintf(ds->protocol, sizeof ds->protocol, "contiguous-v1");
    if (dpd_split_contiguous(n, ds->spec.ratios, (size_t)ds->spec.guard, ds->begin, len, err)) {
        dpd_error_prefix(err, path);
        return err ? (err->status = DPD_E_FORMAT) : DPD_E_FORMAT;
    }
    for (int k = 0; k < DPD_NSPLIT; k++) {
        size_t m = len[k];
        dpd_split *sp = &ds->split[k];
        sp->x = malloc(m * 2 * sizeof(double));
        sp->y = malloc(m * 2 * sizeof(double));
        if (!sp->x || !sp->y) return dpd_fail(err, DPD_E_NOMEM, "%s: out of memory", path);
        for (size_t i = 0; i < m; i++) {
            size_t r = (ds->begin[k] + i) * step;
            sp->x[2 * i] = x[r], sp->x[2 * i + 1] = x[r + 1];
            sp->y[2 * i] = y[r], sp->y[2 * i + 1] = y[r + 1];
        }
        sp->n = m;
    }
    return DPD_OK;
}

static dpd_status load_single_csv(dpd_dataset *ds, const char *csvname, dpd_error *err) {
    static const char *const names[4] = {"I_in", "Q_in", "I_out", "Q_out"};
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", ds->dir, csvname);
    double *d;
    size_t n;
    dpd_status s = dpd_csv_read(path, 4, names, &d, &n, err);
    if (s) return s;
    s = split_capture(ds, path, d, d + 2, 4, n, err);
    free(d);
    return s;
}

/* A "mat" dataset: one paired capture in a .mat file (docs/formats.md), its sample rate from the
 * file when spec.json has none (and the two must agree when both do). */
static dpd_status load_mat(dpd_dataset *ds, const mat_names *mn, dpd_error *err) {
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", ds->dir, mn->file);
    double *x, *y, fs = 0;
    size_t n;
    dpd_status s = dpd_mat_read_pair(path, mn->x[0] ? mn->x : NULL, mn->y[0] ? mn->y : NULL, &x, &y, &n, &fs, err);
    if (s) return s;
    dpd_spec *sp = &ds->spec;
    if (!sp->fs && !fs)
        s = dpd_fail(err, DPD_E_FORMAT, "%s/spec.json: field 'input_signal_fs' is missing and %s has no 'fs' "
                     "(the RF metrics need the sample rate)", ds->dir, path);
    else if (sp->fs && fs && fabs(sp->fs - fs) > 1e-9 * sp->fs)
        s = dpd_fail(err, DPD_E_FORMAT, "%s/spec.json: field 'input_signal_fs' is %.9g Hz but %s says fs = %.9g Hz",
                     ds->dir, sp->fs, path, fs);
    else if (!sp->fs && fs > DPD_MAX_RATE_HZ)
        s = dpd_fail(err, DPD_E_FORMAT, "%s: fs is %g Hz, above %g Hz (1 THz): the baseband sample rate is in hertz "
                     "(800 MHz is 800e6)", path, fs, DPD_MAX_RATE_HZ);
    else if (!sp->fs)
        sp->fs = fs;
    if (!s && sp->bw_main >= sp->fs)
        s = dpd_fail(err, DPD_E_FORMAT, "%s/spec.json: bw_main_ch (%g) must be below the sample rate (%g, from %s)",
                     ds->dir, sp->bw_main, sp->fs, path);
    if (!s) s = split_capture(ds, path, x, y, 2, n, err);
    free(x);
    free(y);
    return s;
}

/* dir as a dataset directory, in the doctor's words (src/doctor.c), before spec.json is looked
 * for inside it: "DIR: no such directory", or "PATH: not a directory" for a file such as the
 * dataset's spec.json itself. */
dpd_status dpd_dataset_dir_ok(const char *dir, dpd_error *err) {
    struct stat st;
    if (stat(dir, &st))
        return dpd_fail(err, DPD_E_IO, "%s: %s", dir, errno == ENOENT ? "no such directory" : strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return dpd_fail(err, DPD_E_IO, "%s: not a directory (give the dataset's directory, which holds spec.json)",
                        dir);
    return DPD_OK;
}

dpd_status dpd_dataset_load(const char *dir, unsigned need, unsigned want, dpd_dataset *ds,
                            dpd_error *err) {
    memset(ds, 0, sizeof *ds);
    snprintf(ds->dir, sizeof ds->dir, "%s", dir);
    size_t L = strlen(ds->dir);
    while (L > 1 && ds->dir[L - 1] == '/') ds->dir[--L] = 0;
    const char *base = strrchr(ds->dir, '/');
    snprintf(ds->name, sizeof ds->name, "%s", base ? base + 1 : ds->dir);
    char format[32], csvname[256];
    mat_names mat;
    snprintf(ds->protocol, sizeof ds->protocol, "files");
    dpd_status s = dpd_dataset_dir_ok(ds->dir, err);
    if (!s) s = load_spec(ds->dir, ds, format, sizeof format, csvname, sizeof csvname, &mat, err);
    if (!s)
        s = !strcmp(format, "single_csv") ? load_single_csv(ds, csvname, err)
            : !strcmp(format, "mat")      ? load_mat(ds, &mat, err)
                                          : load_split_csv(ds, need, want, err);
    if (s) dpd_dataset_free(ds);
    return s;
}

void dpd_dataset_free(dpd_dataset *ds) {
    if (!ds) return;
    for (int k = 0; k < DPD_NSPLIT; k++) {
        free(ds->split[k].x);
        free(ds->split[k].y);
        ds->split[k].x = ds->split[k].y = NULL;
        ds->split[k].n = 0;
    }
}

static double max_abs(const double *iq, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double a = sqrt(iq[2 * i] * iq[2 * i] + iq[2 * i + 1] * iq[2 * i + 1]);
        if (a > m) m = a;
    }
    return m;
}

void dpd_iq_level(const double *iq, size_t n, double *peak, double *rms) {
    *peak = max_abs(iq, n);
    double s = 0, floor2 = 1e-6 * *peak * *peak; /* -60 dB, in power */
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        double p = iq[2 * i] * iq[2 * i] + iq[2 * i + 1] * iq[2 * i + 1];
        if (p > 0 && p >= floor2) s += p, m++;
    }
    *rms = m ? sqrt(s / (double)m) : 0;
}

double dpd_split_gain(const dpd_split *sp) {
    if (!sp->n) return 0;
    double mx = max_abs(sp->x, sp->n);
    return mx > 0 ? max_abs(sp->y, sp->n) / mx : 0;
}

double dpd_dataset_gain(const dpd_dataset *ds) { return dpd_split_gain(&ds->split[DPD_TRAIN]); }

void dpd_split_fingerprint(const dpd_split *sp, char hex[65]) {
    unsigned char md[32], b[8 * 64];
    unsigned len = 0;
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    int ok = c && EVP_DigestInit_ex(c, EVP_sha256(), NULL);
    uint64_t n = sp->n;
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)(n >> (8 * i));
    ok = ok && EVP_DigestUpdate(c, b, 8);
    for (int k = 0; k < 2; k++) { /* x, then y: little-endian float64, whatever the host's order */
        const double *v = k ? sp->y : sp->x;
        for (size_t i = 0; ok && i < 2 * n; i += 64) {
            size_t m = 2 * n - i < 64 ? 2 * n - i : 64;
            for (size_t j = 0; j < m; j++) {
                uint64_t u;
                memcpy(&u, &v[i + j], 8);
                for (int q = 0; q < 8; q++) b[8 * j + (size_t)q] = (unsigned char)(u >> (8 * q));
            }
            ok = EVP_DigestUpdate(c, b, 8 * m);
        }
    }
    ok = ok && EVP_DigestFinal_ex(c, md, &len) && len == 32;
    EVP_MD_CTX_free(c);
    hex[0] = 0; /* no digest: no fingerprint, never one that looks real */
    for (int i = 0; ok && i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", md[i]);
}

size_t dpd_frame_count(size_t n, int L, int S) {
    return L < 1 || S < 1 || n < (size_t)L ? 0 : (n - (size_t)L) / (size_t)S + 1;
}

void dpd_frames_gather(const float *x, const float *y, const uint32_t *frames, int B, int L, int S,
                       float *bx, float *by) {
    size_t fl = (size_t)L * 2;
    for (int i = 0; i < B; i++) {
        size_t src = (size_t)frames[i] * S * 2;
        memcpy(bx + i * fl, x + src, fl * sizeof *bx);
        memcpy(by + i * fl, y + src, fl * sizeof *by);
    }
}

dpd_status dpd_segments(const double *iq, size_t n, int N, double scale, float **out, int *S,
                        dpd_error *err) {
    *out = NULL;
    if (n == 0) return dpd_fail(err, DPD_E_INVAL, "segments: empty signal");
    if (N <= 0 || N > DPD_MAX_NPERSEG)
        return dpd_fail(err, DPD_E_INVAL, "segments: segment length (spec.json nperseg) %d is out of range 1..%d", N,
                        DPD_MAX_NPERSEG);
    size_t ns = (n + (size_t)N - 1) / (size_t)N;
    if (ns > INT_MAX)
        return dpd_fail(err, DPD_E_INVAL, "segments: %zu samples make %zu segments of %d (spec.json nperseg): more than %d",
                        n, ns, N, INT_MAX);
    float *o = calloc(ns * (size_t)N * 2, sizeof *o);
    if (!o)
        return dpd_fail(err, DPD_E_NOMEM, "segments: out of memory for %zu segments of %d samples (spec.json nperseg)",
                        ns, N);
    for (size_t i = 0; i < 2 * n; i++) o[i] = (float)(iq[i] * scale);
    *out = o;
    *S = (int)ns;
    return DPD_OK;
}
