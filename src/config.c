/* config: the configuration table and everything it drives (see config.h). It parses, prints,
 * validates and maps fields to JSON; it does not open files, apply presets or pick providers. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "family.h"
#include "status.h"

enum {
    F_FAMILY = 1,   /* a model family name: stored lower-case, must be registered */
    F_ZERO_OK = 2,  /* 0 means "not used" and is allowed outside the bounds */
    F_OPEN_MIN = 4, /* min is the next double above the stated bound (printed as that bound) */
    F_OPEN_MAX = 8, /* max is the next double below it */
    F_TOP = 16,     /* config.json: written with the run's identity, before "model" */
    F_EXEC = 32     /* an execution option: not in config.json (may change on resume) */
};

/* checkpoint metadata groups of the model fields: written together when any is non-zero */
enum { M_NONE = 0, M_ALWAYS, M_POLY, M_DELTA, M_UNITS };

#define GT0 DBL_TRUE_MIN         /* "> 0" as an inclusive bound */
#define LT1 0x1.fffffffffffffp-1 /* "< 1" as an inclusive bound */
#define INF INFINITY

static const char *const PRESETS[] = {"", "quick", "full", NULL};
static const char *const PROFILES[] = {"legacy-opendpd-v1", "general-spectral-v1", "opendpd-spectral-v2", NULL};
static const char *const KERNELS[] = {"", "auto", "fast", "eager", "avx512", "avx2", "sse", "ref", NULL};

/* The table. Columns: key, type, model field, member of dpd_train_cfg, min, max, default text,
 * flags, allowed strings (NULL: any), metadata group, meaning. Model rows first, then training
 * rows; this is the order of config.json, --json output and `dpd_config_fields`. */
#define FIELDS(X)                                                                                  \
    X("family", 's', 1, model.family, 0, 0, "gru", F_FAMILY, NULL, M_ALWAYS,                       \
      "model family, case-insensitive ('dpd models' lists them)")                                  \
    X("hidden", 'i', 1, model.hidden, 1, 1024, "23", 0, NULL, M_ALWAYS,                            \
      "hidden size H (polynomial families: 1)")                                                    \
    X("layers", 'i', 1, model.layers, 1, 16, "1", 0, NULL, M_ALWAYS,                               \
      "recurrent layers (at most the family's max_layers)")                                        \
    X("order", 'i', 1, model.order, 1, 16, "0", F_ZERO_OK, NULL, M_POLY,                           \
      "polynomial families: nonlinearity orders K (0: not used)")                                  \
    X("memory", 'i', 1, model.memory, 1, 4096, "0", F_ZERO_OK, NULL, M_POLY,                       \
      "polynomial families: memory depth Q (0: not used)")                                         \
    X("cross", 'i', 1, model.cross, 0, 64, "0", 0, NULL, M_POLY,                                   \
      "gmp_ls: envelope lags and leads M")                                                         \
    X("thx", 'd', 1, model.thx, 0, 1e6, "0", 0, NULL, M_DELTA,                                     \
      "delta families: input delta threshold (0 = dense)")                                         \
    X("thh", 'd', 1, model.thh, 0, 1e6, "0", 0, NULL, M_DELTA,                                     \
      "delta families: hidden delta threshold (0 = dense)")                                        \
    X("units", 'i', 1, model.units, 0, 64, "0", 0, NULL, M_UNITS, "dvrjanet: DVR units K (0 = 3)") \
    X("data", 's', 0, data, 0, 0, "", F_TOP, NULL, M_NONE, "dataset directory")                    \
    X("out", 's', 0, out, 0, 0, "runs", F_TOP, NULL, M_NONE,                                       \
      "output root; run dir = out/<dataset>/<step>/<run id>")                                      \
    X("pa", 's', 0, pa, 0, 0, "", F_TOP, NULL, M_NONE,                                             \
      "DPD training: the frozen PA checkpoint or run directory (empty: PA training)")              \
    X("epochs", 'i', 0, epochs, 1, 100000, "150", 0, NULL, M_NONE, "epochs")                       \
    X("batch", 'i', 0, batch, 1, 65536, "64", 0, NULL, M_NONE, "training batch size in frames")    \
    X("batch_eval", 'i', 0, batch_eval, 1, 65536, "64", 0, NULL, M_NONE,                           \
      "evaluation batch size in segments")                                                         \
    X("frame", 'i', 0, frame, 1, 1000000, "200", 0, NULL, M_NONE, "training frame length, samples") \
    X("stride", 'i', 0, stride, 1, 1000000, "1", 0, NULL, M_NONE, "training frame stride, samples") \
    X("lr", 'd', 0, lr, GT0, INF, "0.005", F_OPEN_MIN, NULL, M_NONE, "initial learning rate")      \
    X("lr_end", 'd', 0, lr_end, 0, INF, "5e-05", 0, NULL, M_NONE, "minimum learning rate")         \
    X("decay", 'd', 0, decay, GT0, LT1, "0.5", F_OPEN_MIN | F_OPEN_MAX, NULL, M_NONE,              \
      "plateau decay factor")                                                                      \
    X("patience", 'i', 0, patience, 0, 100000, "5", 0, NULL, M_NONE, "plateau patience, epochs")   \
    X("lr_schedule", 'i', 0, lr_schedule, 0, 1, "1", 0, NULL, M_NONE,                              \
      "1 = ReduceLROnPlateau on the validation selection metric, 0 = constant")                    \
    X("weight_decay", 'd', 0, weight_decay, 0, INF, "0.01", 0, NULL, M_NONE, "AdamW weight decay") \
    X("clip", 'd', 0, clip, 0, INF, "200", 0, NULL, M_NONE, "gradient global-norm clip, 0 = off")  \
    X("seed", 'u', 0, seed, 0, 0x1p64, "0", 0, NULL, M_NONE, "random seed")                        \
    X("evm_fs", 'd', 0, evm_fs, 0, INF, "0", 0, NULL, M_NONE,                                      \
      "EVM sample rate, Hz (0 = the dataset's fs; 800e6 = OpenDPD v2.0.0)")                        \
    X("metric_profile", 's', 0, metric_profile, 0, 0, "legacy-opendpd-v1", 0, PROFILES, M_NONE,    \
      "metric profile: legacy-opendpd-v1, general-spectral-v1 or opendpd-spectral-v2")            \
    X("preset", 's', 0, preset, 0, 0, "", 0, PRESETS, M_NONE,                                      \
      "the preset the fields came from (informational): '', quick or full")                       \
    X("least_squares", 'b', 0, ls, 0, 1, "0", 0, NULL, M_NONE,                                     \
      "1: fit a polynomial model by least squares (DPD: indirect learning)")                       \
    X("ls_reg", 'd', 0, ls_reg, 0, INF, "1e-09", 0, NULL, M_NONE,                                  \
      "least squares: ridge on the column-normalised basis")                                       \
    X("ls_iterations", 'i', 0, ls_iter, 1, 100, "1", 0, NULL, M_NONE,                              \
      "least-squares DPD: ILA iterations (the first on measured data, the rest through the PA)")   \
    X("threads", 'i', 0, threads, 0, 1024, "1", F_EXEC, NULL, M_NONE,                              \
      "cpu worker threads, 0 = the settings' cpu_level (results do not depend on it)")             \
    X("kernels", 's', 0, kernels, 0, 0, "", F_EXEC, KERNELS, M_NONE,                               \
      "cpu kernels: '' (auto), auto, fast, avx512, avx2, sse or ref")                              \
    X("provider", 's', 0, provider, 0, 0, "", F_EXEC, NULL, M_NONE,                                \
      "where the steps run: '' (the settings), auto, cpu or an installed pack's name")             \
    X("preview_every", 'i', 0, preview_every, 0, 1000000, "0", F_EXEC, NULL, M_NONE,               \
      "steps between live previews (one extra forward pass of <= 16384 val samples), 0 = none")

#define MEMBER(m) (((dpd_train_cfg *)0)->m)

#define PUBLIC_ROW(key, type, mdl, m, lo, hi, def, flags, choices, meta, about) \
    {key, type, mdl, lo, hi, about},
static const dpd_field fields[] = {FIELDS(PUBLIC_ROW)};

typedef struct row {
    size_t off, size; /* of the member in dpd_train_cfg */
    const char *def;
    unsigned flags;
    const char *const *choices;
    int meta;
} row;

#define PRIVATE_ROW(key, type, mdl, m, lo, hi, def, flags, choices, meta, about) \
    {offsetof(dpd_train_cfg, m), sizeof MEMBER(m), def, flags, choices, meta},
static const row rows[] = {FIELDS(PRIVATE_ROW)};

enum { NROWS = (int)(sizeof rows / sizeof *rows) };

/* Each row's type letter matches the C type of its member, and model rows lie in model. */
#define TYPE_OF(m) _Generic(MEMBER(m), int: 'i', double: 'd', uint64_t: 'u', char *: 's', default: '?')
#define ASSERT_ROW(key, type, mdl, m, lo, hi, def, flags, choices, meta, about)                  \
    _Static_assert(TYPE_OF(m) == ((type) == 'b' ? 'i' : (type)), key ": type letter != C type"); \
    _Static_assert((mdl) == (offsetof(dpd_train_cfg, m) >= offsetof(dpd_train_cfg, model) &&  \
                               offsetof(dpd_train_cfg, m) <                                     \
                                   offsetof(dpd_train_cfg, model) + sizeof(dpd_model_cfg)),      \
                   key ": model flag != member of model");
FIELDS(ASSERT_ROW)

#define MODEL_OFF offsetof(dpd_train_cfg, model)

const dpd_field *dpd_config_fields(int *n) {
    if (n) *n = NROWS;
    return fields;
}

static int find(const char *key) {
    for (int i = 0; key && i < NROWS; i++)
        if (!strcmp(fields[i].key, key)) return i;
    return -1;
}

const dpd_field *dpd_config_find(const char *key) {
    int i = find(key);
    return i < 0 ? NULL : &fields[i];
}

const char *dpd_config_default(const char *key) {
    int i = find(key);
    return i < 0 ? NULL : rows[i].def;
}

/* Field i inside an object whose start is at offset `base` of dpd_train_cfg (0 for a
 * dpd_train_cfg, MODEL_OFF for a dpd_model_cfg; then only model rows may be asked). */
static void *at(void *obj, size_t base, int i) { return (char *)obj + (rows[i].off - base); }
static const void *cat(const void *obj, size_t base, int i) {
    return (const char *)obj + (rows[i].off - base);
}

/* ---- messages ------------------------------------------------------------------------------- */

/* Fills err with status s, field `key` ("" for none) and the message. Returns s. */
__attribute__((format(printf, 4, 5))) static dpd_status fail(dpd_error *err, dpd_status s,
                                                             const char *key, const char *fmt, ...) {
    if (!err) return s;
    va_list ap;
    va_start(ap, fmt);
    err->status = s;
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    snprintf(err->field, sizeof err->field, "%s", key ? key : "");
    return s;
}

/* Shortest text that reads back to exactly v; integral values below 1e15 without an exponent. */
static void num_text(double v, char *out, size_t n) {
    if (isinf(v)) {
        snprintf(out, n, v > 0 ? "inf" : "-inf");
        return;
    }
    if (v == floor(v) && fabs(v) < 1e15) {
        snprintf(out, n, "%.0f", v);
        return;
    }
    for (int p = 1; p <= 17; p++) {
        snprintf(out, n, "%.*g", p, v);
        if (strtod(out, NULL) == v) return;
    }
}

/* "<key>: <value> is out of range <min>..<max>[ (<b> excluded)]" */
static dpd_status out_of_range(dpd_error *err, dpd_status s, int i, const char *value) {
    const dpd_field *f = &fields[i];
    char lo[40], hi[40], ex[96] = "";
    double a = rows[i].flags & F_OPEN_MIN ? nextafter(f->min, -INF) : f->min;
    double b = rows[i].flags & F_OPEN_MAX ? nextafter(f->max, INF) : f->max;
    num_text(a, lo, sizeof lo);
    if (f->type == 'u')
        snprintf(hi, sizeof hi, "%" PRIu64, UINT64_MAX);
    else
        num_text(b, hi, sizeof hi);
    if ((rows[i].flags & F_OPEN_MIN) && (rows[i].flags & F_OPEN_MAX))
        snprintf(ex, sizeof ex, " (%s and %s excluded)", lo, hi);
    else if (rows[i].flags & (F_OPEN_MIN | F_OPEN_MAX))
        snprintf(ex, sizeof ex, " (%s excluded)", rows[i].flags & F_OPEN_MIN ? lo : hi);
    return fail(err, s, f->key, "%s: %s is out of range %s..%s%s", f->key, value, lo, hi, ex);
}

/* "family: 'x' is not one of a, b, c" for a choice list or the family registry. */
static dpd_status not_one_of(dpd_error *err, dpd_status s, int i, const char *value) {
    char list[640] = "";
    size_t len = 0;
    if (rows[i].flags & F_FAMILY) {
        int n;
        const dpd_family *const *fam = dpd_family_list(&n);
        for (int k = 0; k < n && len < sizeof list; k++)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", k ? ", " : "", fam[k]->name);
    } else {
        const char *const *c = rows[i].choices;
        for (int k = 0; c[k] && len < sizeof list; k++) /* "": unset (the default), not a name to offer */
            if (c[k][0]) len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", len ? ", " : "", c[k]);
    }
    return fail(err, s, fields[i].key, "%s: '%.200s' is not one of %s", fields[i].key, value, list);
}

/* ---- checking values ------------------------------------------------------------------------ */

/* A number for row i ('i', 'b', 'd'): finite and within the bounds (0 also for F_ZERO_OK rows). value is
 * the text to quote (NULL: print v). */
static dpd_status check_num(int i, double v, const char *value, dpd_status s, dpd_error *err) {
    if ((v >= fields[i].min && v <= fields[i].max && isfinite(v)) || (v == 0 && (rows[i].flags & F_ZERO_OK)))
        return DPD_OK;
    char t[40];
    if (!value) num_text(v, t, sizeof t), value = t;
    return out_of_range(err, s, i, value);
}

static void lower(char *dst, const char *src, size_t n) {
    size_t k = 0;
    for (; src[k] && k + 1 < n; k++) dst[k] = (char)tolower((unsigned char)src[k]);
    dst[k] = 0;
}

/* A string for row i: fits its member, one of the choices, a registered family. s is the status
 * of a bad value, unknown the status of an unknown family. */
static dpd_status check_text(int i, const char *v, dpd_status s, dpd_status unknown, dpd_error *err) {
    size_t len = strlen(v);
    if (len >= rows[i].size)
        return fail(err, s, fields[i].key, "%s: '%.40s%s' is longer than %zu characters", fields[i].key, v,
                    len > 40 ? "..." : "", rows[i].size - 1);
    if (rows[i].choices) {
        for (int k = 0; rows[i].choices[k]; k++)
            if (!strcmp(rows[i].choices[k], v)) return DPD_OK;
        return not_one_of(err, s, i, v);
    }
    if (rows[i].flags & F_FAMILY) {
        char name[sizeof(((dpd_model_cfg *)0)->family)];
        lower(name, v, sizeof name); /* the registry compares case-sensitively */
        if (!v[0] || !dpd_family_find(name)) return not_one_of(err, unknown, i, v);
    }
    return DPD_OK;
}

/* The stored value of row i in obj (at offset base) against the table. */
static dpd_status check_stored(const void *obj, size_t base, int i, dpd_status unknown, dpd_error *err) {
    const void *p = cat(obj, base, i);
    switch (fields[i].type) {
    case 'i':
    case 'b': return check_num(i, *(const int *)p, NULL, DPD_E_INVAL, err);
    case 'd': return check_num(i, *(const double *)p, NULL, DPD_E_INVAL, err);
    case 'u': return DPD_OK; /* every uint64 is a seed */
    default:
        if (!memchr(p, 0, rows[i].size))
            return fail(err, DPD_E_INVAL, fields[i].key, "%s: is not a terminated string", fields[i].key);
        return check_text(i, p, DPD_E_INVAL, unknown, err);
    }
}

static dpd_status check_model(const dpd_model_cfg *m, dpd_status unknown, dpd_error *err) {
    for (int i = 0; i < NROWS && fields[i].model; i++) {
        dpd_status s = check_stored(m, MODEL_OFF, i, unknown, err);
        if (s) return s;
    }
    char name[sizeof m->family];
    lower(name, m->family, sizeof name);
    const dpd_family *f = dpd_family_find(name);
    if (m->layers > f->max_layers)
        return fail(err, DPD_E_INVAL, "layers", "layers: %d is out of range 1..%d for family %s", m->layers,
                    f->max_layers, f->name);
    if (f->poly && (m->order < 1 || m->memory < 1)) {
        int order = m->order < 1;
        return fail(err, DPD_E_INVAL, order ? "order" : "memory", "%s: 0 is out of range 1..%d for family %s",
                    order ? "order" : "memory", order ? 16 : 4096, f->name);
    }
    return DPD_OK;
}

dpd_status dpd_config_check_model(const dpd_model_cfg *m, dpd_error *err) {
    return check_model(m, DPD_E_UNSUPPORTED, err);
}

dpd_status dpd_config_check(const dpd_train_cfg *c, dpd_error *err) {
    dpd_status s = check_model(&c->model, DPD_E_INVAL, err);
    for (int i = 0; !s && i < NROWS; i++)
        if (!fields[i].model) s = check_stored(c, 0, i, DPD_E_INVAL, err);
    if (!s && !c->out[0] && !c->resume[0]) /* "" would put the runs at the root of the file system */
        s = fail(err, DPD_E_INVAL, "out", "out: an empty path: give the directory the runs go under (runs by default)");
    if (!s && c->evm_fs > 0 && dpd_profile_parse(c->metric_profile) > 0) /* a rate for a metric the profile lacks */
        s = fail(err, DPD_E_INVAL, "evm_fs", "evm_fs: the EVM rate is for legacy-opendpd-v1's EVM, and %s scores IBE "
                                             "instead (it has no EVM): leave evm_fs out, or score under the legacy profile",
                 c->metric_profile);
    return s;
}

/* ---- text ------------------------------------------------------------------------------------ */

/* Parses a whole decimal integer; 0 when text is not one (*num: it is a number, just not whole). */
static int parse_int(const char *t, long long *v, int *num) {
    char *e;
    errno = 0;
    *v = strtoll(t, &e, 10);
    if (*t && !*e && errno == 0) return 1;
    if (*t && !*e && errno == ERANGE) { /* a whole number beyond long long: out of any range */
        *v = *t == '-' ? LLONG_MIN : LLONG_MAX;
        return 1;
    }
    double d = strtod(t, &e);
    *num = *t && !*e && isfinite(d);
    return 0;
}

static dpd_status set_text(dpd_train_cfg *c, const char *key, const char *value, dpd_error *err) {
    int i = find(key);
    if (i < 0)
        return fail(err, DPD_E_INVAL, "", "'%.64s' is not a configuration field", key ? key : "(null)");
    const char *k = fields[i].key;
    if (!value) return fail(err, DPD_E_INVAL, k, "%s: no value", k);
    void *p = at(c, 0, i);
    switch (fields[i].type) {
    case 'i': {
        long long v;
        int num = 0;
        if (!parse_int(value, &v, &num))
            return fail(err, DPD_E_INVAL, k, "%s: '%.200s' is not %s", k, value, num ? "an integer" : "a number");
        dpd_status s = check_num(i, (double)v, value, DPD_E_INVAL, err);
        if (s) return s;
        *(int *)p = (int)v;
        return DPD_OK;
    }
    case 'u': {
        long long ll;
        int num = 0;
        if (!parse_int(value, &ll, &num))
            return fail(err, DPD_E_INVAL, k, "%s: '%.200s' is not %s", k, value, num ? "an integer" : "a number");
        if (strchr(value, '-')) return out_of_range(err, DPD_E_INVAL, i, value);
        char *e;
        errno = 0;
        unsigned long long v = strtoull(value, &e, 10);
        if (errno == ERANGE) return out_of_range(err, DPD_E_INVAL, i, value);
        *(uint64_t *)p = (uint64_t)v;
        return DPD_OK;
    }
    case 'd': {
        char *e;
        errno = 0;
        double v = strtod(value, &e);
        if (!*value || *e || isnan(v) || (isinf(v) && errno != ERANGE)) /* "inf" itself is not a number */
            return fail(err, DPD_E_INVAL, k, "%s: '%.200s' is not a number", k, value);
        dpd_status s = check_num(i, v, value, DPD_E_INVAL, err);
        if (s) return s;
        *(double *)p = v;
        return DPD_OK;
    }
    case 'b': {
        int yes = !strcmp(value, "1") || !strcasecmp(value, "true");
        int no = !strcmp(value, "0") || !strcasecmp(value, "false");
        if (!yes && !no)
            return fail(err, DPD_E_INVAL, k, "%s: '%.200s' is not one of 0, 1, true, false", k, value);
        *(int *)p = yes;
        return DPD_OK;
    }
    default: {
        dpd_status s = check_text(i, value, DPD_E_INVAL, DPD_E_INVAL, err);
        if (s) return s;
        if (rows[i].flags & F_FAMILY)
            lower(p, value, rows[i].size);
        else
            memcpy(p, value, strlen(value) + 1);
        return DPD_OK;
    }
    }
}

dpd_status dpd_config_set(dpd_train_cfg *c, const char *key, const char *value, dpd_error *err) {
    return set_text(c, key, value, err);
}

int dpd_config_get(const dpd_train_cfg *c, const char *key, char *out, size_t n) {
    int i = find(key);
    if (i < 0 || !out || !n) return 0;
    const void *p = cat(c, 0, i);
    char t[40];
    int len;
    switch (fields[i].type) {
    case 'i':
    case 'b': len = snprintf(out, n, "%d", *(const int *)p); break;
    case 'u': len = snprintf(out, n, "%" PRIu64, *(const uint64_t *)p); break;
    case 'd':
        num_text(*(const double *)p, t, sizeof t);
        len = snprintf(out, n, "%s", t);
        break;
    default: len = snprintf(out, n, "%.*s", (int)rows[i].size, (const char *)p);
    }
    return len >= 0 && (size_t)len < n;
}

void dpd_config_defaults(dpd_train_cfg *c) {
    memset(c, 0, sizeof *c);
    for (int i = 0; i < NROWS; i++)
        if (set_text(c, fields[i].key, rows[i].def, NULL)) {
            /* unreachable: tests/test_config.c checks every default is accepted */
        }
}

/* ---- JSON ------------------------------------------------------------------------------------ */

json_t *dpd_config_value(const dpd_train_cfg *c, const dpd_field *f) {
    int i = f ? (int)(f - fields) : -1;
    if (i < 0 || i >= NROWS) return NULL;
    const void *p = cat(c, 0, i);
    switch (f->type) {
    case 'i': return json_integer(*(const int *)p);
    case 'b': return json_boolean(*(const int *)p);
    case 'u': { /* above JSON's signed 64-bit integers: its decimal digits as a string, not a negative number */
        uint64_t u = *(const uint64_t *)p;
        char t[24];
        snprintf(t, sizeof t, "%" PRIu64, u);
        return u > (uint64_t)INT64_MAX ? json_string(t) : json_integer((json_int_t)u);
    }
    case 'd': return json_real(*(const double *)p); /* NULL for a non-finite value */
    default: return json_stringn(p, strnlen(p, rows[i].size)); /* NULL: not UTF-8 */;
    }
}

/* Sets o[k] = v (stolen); 0 when v is NULL or the set failed. */
static int put(json_t *o, const char *k, json_t *v) { return v && !json_object_set_new(o, k, v); }

json_t *dpd_config_json(const dpd_train_cfg *c, const char *dataset, const char *run_id,
                        size_t nparams, const char *step) {
    json_t *j = json_object(), *m = json_object();
    int ok = j && m;
    ok = ok && put(j, "dpd_version", json_string(DPD_VERSION));
    ok = ok && put(j, "step", json_string(step ? step : c->pa[0] ? "train_dpd" : "train_pa"));
    ok = ok && put(j, "pa", dpd_config_value(c, dpd_config_find("pa")));
    ok = ok && put(j, "data", dpd_config_value(c, dpd_config_find("data")));
    ok = ok && put(j, "dataset", json_string(dataset ? dataset : ""));
    ok = ok && put(j, "out", dpd_config_value(c, dpd_config_find("out")));
    ok = ok && put(j, "run_id", json_string(run_id ? run_id : ""));
    for (int i = 0; ok && i < NROWS; i++) {
        if (rows[i].flags & (F_TOP | F_EXEC)) continue;
        if (!fields[i].model && !json_object_get(j, "model")) {
            ok = put(m, "n_params", json_integer((json_int_t)nparams)) && !json_object_set(j, "model", m);
            if (!ok) break;
        }
        ok = put(fields[i].model ? m : j, fields[i].key, dpd_config_value(c, &fields[i]));
    }
    json_decref(m);
    if (!ok) {
        json_decref(j);
        return NULL;
    }
    return j;
}

/* "<path>: <key>: <json value> is not <what>", DPD_E_FORMAT. */
static dpd_status wrong_type(dpd_error *err, const char *path, int i, const json_t *v, const char *what) {
    char *t = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    fail(err, DPD_E_FORMAT, fields[i].key, "%s: %s: %.64s is not %s", path, fields[i].key, t ? t : "?", what);
    free(t);
    return DPD_E_FORMAT;
}

/* A table refusal while reading a file: DPD_E_FORMAT, the message prefixed with the path. */
static dpd_status in_file(dpd_error *err, const char *path) {
    if (err) {
        dpd_error_prefix(err, path);
        err->status = DPD_E_FORMAT;
    }
    return DPD_E_FORMAT;
}

static dpd_status read_field(const json_t *v, dpd_train_cfg *c, int i, const char *path, dpd_error *err) {
    void *p = at(c, 0, i);
    char t[40];
    switch (fields[i].type) {
    case 'i':
    case 'b': {
        if (fields[i].type == 'b' && json_is_boolean(v)) {
            *(int *)p = json_is_true(v);
            return DPD_OK;
        }
        if (!json_is_integer(v)) return wrong_type(err, path, i, v, fields[i].type == 'b' ? "a boolean" : "an integer");
        json_int_t x = json_integer_value(v);
        snprintf(t, sizeof t, "%" JSON_INTEGER_FORMAT, x);
        if (check_num(i, (double)x, t, DPD_E_INVAL, err)) return in_file(err, path);
        *(int *)p = (int)x;
        return DPD_OK;
    }
    case 'u':
        if (json_is_string(v)) { /* a seed above 2^63 - 1, as written above */
            const char *digits = json_string_value(v);
            char *e;
            errno = 0;
            unsigned long long u = strtoull(digits, &e, 10);
            if (!*digits || *e || errno || strchr(digits, '-')) return wrong_type(err, path, i, v, "an integer");
            *(uint64_t *)p = (uint64_t)u;
            return DPD_OK;
        }
        if (!json_is_integer(v)) return wrong_type(err, path, i, v, "an integer");
        *(uint64_t *)p = (uint64_t)json_integer_value(v); /* older files wrote seeds above 2^63 - 1 negative: same bits */
        return DPD_OK;
    case 'd': {
        if (!json_is_number(v)) return wrong_type(err, path, i, v, "a number");
        double x = json_number_value(v);
        if (check_num(i, x, NULL, DPD_E_INVAL, err)) return in_file(err, path);
        *(double *)p = x;
        return DPD_OK;
    }
    default: {
        if (!json_is_string(v)) return wrong_type(err, path, i, v, "a string");
        const char *s = json_string_value(v);
        if (strlen(s) != json_string_length(v)) return wrong_type(err, path, i, v, "a string without NUL");
        if (check_text(i, s, DPD_E_INVAL, DPD_E_INVAL, err)) return in_file(err, path);
        if (rows[i].flags & F_FAMILY)
            lower(p, s, rows[i].size);
        else
            memcpy(p, s, strlen(s) + 1);
        return DPD_OK;
    }
    }
}

dpd_status dpd_config_from_json(const json_t *j, dpd_train_cfg *c, const char *path, dpd_error *err) {
    if (!path) path = "config.json";
    if (!json_is_object(j)) return fail(err, DPD_E_FORMAT, "", "%s: not a JSON object", path);
    const json_t *m = json_object_get(j, "model");
    if (!json_is_object(m)) return fail(err, DPD_E_FORMAT, "", "%s: \"model\" is missing or not an object", path);
    for (int i = 0; i < NROWS; i++) {
        if (rows[i].flags & F_EXEC) continue;
        const json_t *v = json_object_get(fields[i].model ? m : j, fields[i].key);
        if (!v) {
            if (rows[i].meta == M_ALWAYS)
                return fail(err, DPD_E_FORMAT, fields[i].key, "%s: model.%s is missing", path, fields[i].key);
            continue;
        }
        dpd_status s = read_field(v, c, i, path, err);
        if (s) return s;
    }
    return DPD_OK;
}

/* ---- checkpoint metadata ---------------------------------------------------------------------- */

void dpd_config_model_meta(const dpd_model_cfg *m, json_t *md) {
    for (int g = M_ALWAYS; g <= M_UNITS; g++) {
        int any = g == M_ALWAYS;
        for (int i = 0; i < NROWS && fields[i].model; i++) {
            if (rows[i].meta != g) continue;
            const void *p = cat(m, MODEL_OFF, i);
            if (fields[i].type == 'i' && *(const int *)p) any = 1;
            if (fields[i].type == 'd' && *(const double *)p != 0) any = 1;
        }
        if (!any) continue;
        for (int i = 0; i < NROWS && fields[i].model; i++) {
            if (rows[i].meta != g) continue;
            const void *p = cat(m, MODEL_OFF, i);
            char num[40];
            if (fields[i].type == 'i')
                snprintf(num, sizeof num, "%d", *(const int *)p);
            else if (fields[i].type == 'd')
                snprintf(num, sizeof num, "%.9g", *(const double *)p);
            else
                snprintf(num, sizeof num, "%.*s", (int)rows[i].size - 1, (const char *)p);
            json_object_set_new(md, fields[i].key, json_string(num));
        }
    }
}

/* A metadata integer: decimal digits only (as dpd writes them), 0..META_INT_MAX. */
#define META_INT_MAX (1 << 20)
static int meta_int(const char *s, int *v) {
    char *e;
    if (!s || !*s || !isdigit((unsigned char)*s)) return 0;
    errno = 0;
    long x = strtol(s, &e, 10);
    if (*e || errno || x > META_INT_MAX) return 0;
    *v = (int)x;
    return 1;
}

dpd_status dpd_config_model_from_meta(const json_t *md, dpd_model_cfg *m, const char *path, dpd_error *err) {
    memset(m, 0, sizeof *m);
    if (!path) path = "checkpoint";
    for (int g = M_ALWAYS; g <= M_UNITS; g++) {
        int present = g == M_ALWAYS;
        for (int i = 0; i < NROWS && fields[i].model; i++)
            if (rows[i].meta == g && json_object_get(md, fields[i].key)) present = 1;
        if (!present) continue;
        for (int i = 0; i < NROWS && fields[i].model; i++) {
            if (rows[i].meta != g) continue;
            const char *s = json_string_value(json_object_get(md, fields[i].key));
            void *p = at(m, MODEL_OFF, i);
            int ok;
            if (fields[i].type == 'i') {
                ok = meta_int(s, p);
            } else if (fields[i].type == 'd') {
                char *e = NULL;
                double x = s && *s ? strtod(s, &e) : NAN;
                ok = e && !*e && isfinite(x);
                *(double *)p = ok ? x : 0;
            } else {
                ok = s && *s;
                if (ok) lower(p, s, rows[i].size);
            }
            if (!ok) /* the file is at fault, not an option: no err->field */
                return fail(err, DPD_E_FORMAT, NULL, "%s: not a valid checkpoint: __metadata__ '%s' is missing or %s%.0d%s",
                            path, fields[i].key,
                            fields[i].type == 'i'   ? "not a whole number 0.."
                            : fields[i].type == 'd' ? "not a finite number"
                                                    : "empty",
                            fields[i].type == 'i' ? META_INT_MAX : 0, g == M_ALWAYS ? " (not written by dpd?)" : "");
        }
    }
    return DPD_OK;
}
