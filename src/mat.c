/* mat: MATLAB .mat files (v5 and v7.3) through matio — a signal (a complex vector, or an N x 2 real
 * matrix of I,Q columns) with its sample rate, a paired capture, dpd run's output, and a polynomial
 * model's coefficients (layouts: docs/formats.md). It does not read cells, structs, integers or
 * sparse matrices. A variable's header is checked (class, shape, a size the file can hold, at most
 * zlib's 1032:1 past its bytes) before its data is read, so a hostile file costs no more memory
 * than its size allows (a v7.3 file's samples twice: read in a child process, then handed over,
 * because HDF5 does not survive every damaged file; dpd_mat_isolate). matio logs through a hook that keeps its last message for ours (the
 * library never prints); that hook and Debian's HDF5 are process-wide and not thread-safe, so every
 * call holds one lock. Writes are atomic (dpd_afile's temporary file, written by matio by name).
 * matio is loaded at the first MAT file (lazy.h), not linked: it brings 37 shared libraries (HDF5,
 * curl, Kerberos, GnuTLS, ...) that cost every dpd process milliseconds of its start. */
#include "mat.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <matio.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "dataset.h"
#include "file.h"
#include "lazy.h"
#include "model.h"
#include "models/poly.h"
#include "status.h"

#define MAX_MAT_BYTES (8ull << 30)              /* a paired capture of 256 M complex double samples */
#define MAX_SAMPLES (DPD_MAX_CF32_BYTES / 8)    /* per variable, as a .cf32 recording */
/* The 116-byte text MATLAB reads first; no date, so the same input gives the same v5 file. */
#define HEADER5 "MATLAB 5.0 MAT-file, Created by: dpd " DPD_VERSION
#define HEADER73 "MATLAB 7.3 MAT-file, Created by: dpd " DPD_VERSION " HDF5 schema 1.00 ."

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static char said[240]; /* matio's last message during this call, on one line (under lock) */

/* HDF5's messages come as "HDF5 error #002 in ... major: ... minor: File has been truncated": the
 * part after "minor:" says it. */
static void hook(int level, char *msg) {
    const char *p = msg ? msg : "", *minor = strstr(p, "minor:");
    if (minor) p = minor + 6;
    size_t k = 0;
    for (; *p && k + 1 < sizeof said; p++) {
        char c = *p == '\n' || *p == '\t' || *p == '\r' ? ' ' : *p;
        if (c == ' ' && (k == 0 || said[k - 1] == ' ')) continue;
        said[k++] = c;
    }
    while (k && said[k - 1] == ' ') k--;
    said[k] = 0;
}

/* matio's functions, in the order of mio_names (lazy_load). */
static struct {
    __typeof__(Mat_Close) *Close;
    __typeof__(Mat_CreateVer) *CreateVer;
    __typeof__(Mat_GetVersion) *GetVersion;
    __typeof__(Mat_LogInitFunc) *LogInitFunc;
    __typeof__(Mat_Open) *Open;
    __typeof__(Mat_Rewind) *Rewind;
    __typeof__(Mat_VarCreate) *VarCreate;
    __typeof__(Mat_VarFree) *VarFree;
    __typeof__(Mat_VarRead) *VarRead;
    __typeof__(Mat_VarReadInfo) *VarReadInfo;
    __typeof__(Mat_VarReadNextInfo) *VarReadNextInfo;
    __typeof__(Mat_VarWrite) *VarWrite;
} mio;
static const char *const mio_names[] = {"Mat_Close",   "Mat_CreateVer", "Mat_GetVersion",  "Mat_LogInitFunc",
                                        "Mat_Open",    "Mat_Rewind",    "Mat_VarCreate",   "Mat_VarFree",
                                        "Mat_VarRead", "Mat_VarReadInfo", "Mat_VarReadNextInfo", "Mat_VarWrite"};
_Static_assert(sizeof mio == sizeof mio_names / sizeof *mio_names * sizeof(void *), "a name for each function");
static lazy_lib matio = {DPD_MATIO_SONAME, "libmatio11"};

static void init(void) { mio.LogInitFunc("dpd", hook); }

/* Takes the lock for a call into matio, loaded on the first (init); DPD_E_UNSUPPORTED naming path
 * where it cannot be, and then no lock is taken. */
static dpd_status enter(const char *path, dpd_error *err) {
    if (!lazy_load(&matio, mio_names, (void **)&mio, sizeof mio_names / sizeof *mio_names)) {
        char what[4400];
        snprintf(what, sizeof what, "%s: MAT files are read and written by matio", path);
        return lazy_fail(&matio, what, err);
    }
    pthread_once(&once, init); /* its log given the hook, once it is there */
    pthread_mutex_lock(&lock);
    said[0] = 0;
    return DPD_OK;
}

static void leave(void) { pthread_mutex_unlock(&lock); }

/* " (matio: <its last message>)", or "" when it said nothing. */
static const char *why(char *buf, size_t n) {
    if (said[0]) snprintf(buf, n, " (matio: %s)", said);
    else buf[0] = 0;
    return buf;
}

static const char *class_name(enum matio_classes c) {
    static const char *const k[] = {"empty", "a cell array", "a struct", "an object", "char", "a sparse matrix",
                                    "double", "single", "int8", "uint8", "int16", "uint16", "int32", "uint32",
                                    "int64", "uint64", "a function", "opaque"};
    return (unsigned)c < sizeof k / sizeof *k ? k[c] : "of an unknown class";
}

/* ---- reading --------------------------------------------------------------------------------- */

static uint32_t u32(const unsigned char *b, int big) {
    return big ? (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3]
               : (uint32_t)b[3] << 24 | (uint32_t)b[2] << 16 | (uint32_t)b[1] << 8 | b[0];
}

/* ---- a v5 variable's data, counted from the file (matio does not: a real part shorter than the
 * dimensions say is read to the file's end and the rest of its buffer left as it was) ---------- */

/* The bytes of one element, read in order: the file's [pos, end), or a compressed element's
 * inflated stream (z: zlib, fed from the file's [pos, end)). */
typedef struct src {
    int fd, big;
    uint64_t pos, end;
    z_stream *z;
    unsigned char in[1 << 14];
} src;

/* n bytes into out (NULL: passed over); 0, or -1 where the element ends first (or is no zlib). */
static int src_get(src *s, unsigned char *out, uint64_t n) {
    unsigned char sink[1 << 14];
    while (n) {
        size_t k = n < sizeof sink ? (size_t)n : sizeof sink;
        if (!s->z) {
            if (s->end - s->pos < k) return -1;
            if (out && pread(s->fd, out, k, (off_t)s->pos) != (ssize_t)k) return -1;
            s->pos += k;
        } else {
            s->z->next_out = out ? out : sink, s->z->avail_out = (uInt)k;
            while (s->z->avail_out) {
                if (!s->z->avail_in) {
                    size_t m = s->end - s->pos < sizeof s->in ? (size_t)(s->end - s->pos) : sizeof s->in;
                    if (!m || pread(s->fd, s->in, m, (off_t)s->pos) != (ssize_t)m) return -1;
                    s->pos += m, s->z->next_in = s->in, s->z->avail_in = (uInt)m;
                }
                int r = inflate(s->z, Z_NO_FLUSH);
                if (r != Z_OK && !(r == Z_STREAM_END && !s->z->avail_out)) return -1;
            }
        }
        if (out) out += k;
        n -= k;
    }
    return 0;
}

/* A sub-element's tag: its type and byte count, and how many bytes it takes (data and padding, or
 * none past the tag for a small element, whose up to 4 bytes are in data); -1 where cut short. */
static int sub_tag(src *s, uint32_t *type, uint32_t *nb, uint64_t *span, unsigned char data[4]) {
    unsigned char t[8];
    if (src_get(s, t, 8)) return -1;
    *type = u32(t, s->big), *nb = u32(t + 4, s->big);
    if (*type >> 16) { /* small: the byte count in the upper half, the data in the tag's second word */
        *nb = *type >> 16, *type &= 0xFFFF, *span = 0;
        memcpy(data, t + 4, 4);
        return *nb <= 4 ? 0 : -1;
    }
    *span = (uint64_t)*nb + (8 - *nb % 8) % 8;
    return 0;
}

/* Bytes a value of v5 data type t takes (0: none of the numeric types). */
static unsigned type_size(uint32_t t) {
    static const unsigned k[16] = {0, 1, 1, 2, 2, 4, 4, 4, 0, 8, 0, 0, 8, 8, 0, 0};
    return t < 16 ? k[t] : 0;
}

/* The matrix element in s (past its tag) when it is variable `name`: *hit 1, *count its values by
 * its dimensions, have[0] (have[1]: the imaginary part's, complex only) the values its data holds,
 * each part's bytes walked (a compressed element inflated to its end); -1 where it is cut short or
 * malformed (*hit says whether before its name or after). */
static int matrix_values(src *s, const char *name, int *hit, uint64_t *count, int *cplx, uint64_t have[2]) {
    uint32_t type, nb;
    uint64_t span;
    unsigned char small[4], buf[256];
    *hit = 0;
    if (sub_tag(s, &type, &nb, &span, small) || nb != 8 || span != 8 || src_get(s, buf, 8)) return -1; /* array flags */
    *cplx = (u32(buf, s->big) & 0x0800) != 0;
    if (sub_tag(s, &type, &nb, &span, small) || type != 5 || !nb || nb % 4 || span > sizeof buf || src_get(s, buf, span)) return -1;
    const unsigned char *dims = span ? buf : small; /* a rank-1 array's one dimension fits its tag */
    uint64_t c = 1;
    for (uint32_t i = 0; i < nb / 4; i++) {
        uint64_t d = u32(dims + 4 * i, s->big);
        c = d && c > UINT64_MAX / d ? UINT64_MAX : c * d;
    }
    *count = c;
    if (sub_tag(s, &type, &nb, &span, small)) return -1; /* the name */
    char got[64] = "";
    if (!span) memcpy(got, small, nb);
    else if (nb < sizeof got && span <= sizeof buf) {
        if (src_get(s, buf, span)) return -1;
        memcpy(got, buf, nb);
    } else if (src_get(s, NULL, span)) {
        return -1;
    }
    if (strcmp(got, name)) return 0;
    *hit = 1;
    for (int k = 0; k <= *cplx; k++) { /* each part's values, and its bytes there: a tag may say more than follows */
        if (sub_tag(s, &type, &nb, &span, small) || !type_size(type) || src_get(s, NULL, span)) return -1;
        have[k] = nb / type_size(type);
    }
    return 0;
}

/* What v5_walk finds of a variable: whether it is there, the values its dimensions say, whether
 * complex, the values each part holds, and whether its element could not be walked (cut short or
 * malformed past its name). */
typedef struct v5_var {
    int hit, cplx, bad;
    int far; /* not reached: more than V5_ELEMENTS elements before it */
    uint64_t count, have[2];
} v5_var;

#define V5_ELEMENTS (1 << 16) /* elements walked: a MAT file holds a few variables */

/* A v5 file is a 128-byte header and then data elements, each an 8-byte tag (type, byte count)
 * and its bytes (padded to 8 unless compressed; a small element fits its 4 bytes in the tag). The
 * walk finds the element that ends past the end of the file (matio reads a cut-short value
 * silently): its index, or -1 when every one is whole (or past V5_ELEMENTS, not walked). With a
 * name, it also counts that variable's values (matio reads a part shorter than its dimensions to
 * the file's end and leaves the rest of its buffer as it was) into *v; other variables are
 * matio's to judge. */
static int v5_walk(int fd, uint64_t size, const char *name, v5_var *v) {
    unsigned char h[128], t[8];
    if (v) *v = (v5_var){0};
    if (pread(fd, h, sizeof h, 0) != (ssize_t)sizeof h) return 0;
    int big = h[126] == 'M' && h[127] == 'I'; /* "IM" as written little-endian */
    src *s = name ? malloc(sizeof *s) : NULL;
    z_stream z;
    if (name && !s) return v->bad = 1, -1;
    uint64_t pos = 128;
    int cut = -1, i = 0;
    for (; pos < size && i < V5_ELEMENTS; i++) {
        if (size - pos < 8 || pread(fd, t, 8, (off_t)pos) != 8) {
            cut = i;
            break;
        }
        uint32_t type = u32(t, big), nb = u32(t + 4, big);
        if (type >> 16) { /* a small element */
            pos += 8;
            continue;
        }
        if (nb > size - pos - 8) {
            cut = i;
            break;
        }
        uint64_t end = pos + 8 + (uint64_t)nb;
        if (s && !v->hit) {
            *s = (src){.fd = fd, .big = big, .pos = pos + 8, .end = end};
            int r = 0;
            if (type == MAT_T_MATRIX) {
                r = matrix_values(s, name, &v->hit, &v->count, &v->cplx, v->have);
            } else if (type == MAT_T_COMPRESSED && (memset(&z, 0, sizeof z), inflateInit(&z) == Z_OK)) {
                unsigned char mt[8];
                s->z = &z;
                r = !src_get(s, mt, 8) && u32(mt, big) == MAT_T_MATRIX ? matrix_values(s, name, &v->hit, &v->count, &v->cplx, v->have) : 0;
                inflateEnd(&z);
            }
            v->bad = r < 0 && v->hit;
        }
        pos = end + (type == MAT_T_COMPRESSED ? 0 : (8 - end % 8) % 8);
    }
    if (v && cut < 0 && !v->hit && i == V5_ELEMENTS && pos < size) v->far = 1;
    free(s);
    return cut;
}

static dpd_status open_mat(const char *path, mat_t **m, uint64_t *size, dpd_error *err) {
    int fd;
    *m = NULL;
    dpd_status s = dpd_file_open(path, MAX_MAT_BYTES, "MATLAB file", &fd, size, err);
    if (s) return s;
    char w[300];
    if (!(*m = mio.Open(path, MAT_ACC_RDONLY))) {
        close(fd);
        return dpd_fail(err, DPD_E_FORMAT, "%s: not a MATLAB .mat file (v4, v5 or v7.3)%s", path, why(w, sizeof w));
    }
    int cut = mio.GetVersion(*m) == MAT_FT_MAT5 ? v5_walk(fd, *size, NULL, NULL) : -1;
    close(fd);
    if (cut < 0) return DPD_OK;
    char name[80] = "";
    matvar_t *v = NULL;
    mio.Rewind(*m);
    for (int i = 0; i <= cut && (v = mio.VarReadNextInfo(*m)); i++) {
        if (i == cut && v->name) snprintf(name, sizeof name, "'%.64s' ", v->name);
        mio.VarFree(v);
    }
    mio.Close(*m);
    *m = NULL;
    return dpd_fail(err, DPD_E_FORMAT,
                    "%s: truncated: variable %s(number %d) ends past the end of the file (%llu bytes)", path, name,
                    cut + 1, (unsigned long long)*size);
}

/* *found = whether m has variable `name` (its header reads). A lookup during which matio complains
 * (a file cut short or corrupt: its variables cannot all be listed) is DPD_E_FORMAT. */
static dpd_status find(mat_t *m, const char *path, const char *name, int *found, dpd_error *err) {
    said[0] = 0;
    matvar_t *v = mio.VarReadInfo(m, name);
    *found = v != NULL;
    mio.VarFree(v);
    if (v || !said[0]) return DPD_OK;
    char w[300];
    return dpd_fail(err, DPD_E_FORMAT, "%s: truncated or corrupt: variable '%s' cannot be looked up%s", path, name,
                    why(w, sizeof w));
}

/* The first of names[0..n) that m has (*found 1), else names[0] (*found 0). */
static dpd_status first(mat_t *m, const char *path, const char *const *names, int n, const char **out, int *found,
                        dpd_error *err) {
    *out = names[0];
    for (int i = 0; i < n; i++) {
        dpd_status s = find(m, path, names[i], found, err);
        if (s || *found) return *out = names[i], s;
    }
    return DPD_OK;
}

/* How a reader names another variable, for a message that finds none of its names. */
#define RUN_HINT ": dpd run --var NAME reads another"
#define PAIR_HINT ": spec.json's mat_input and mat_output name others"

/* DPD_E_FORMAT for the variable m lacks (what: "'x'", or the names tried), with the names it has
 * (the first few), matio's reason when it gave one (a truncated file lists fewer), and hint: how
 * the caller names another (""). */
static dpd_status missing(mat_t *m, const char *path, const char *what, const char *hint, dpd_error *err) {
    char list[400] = "", w[300];
    why(w, sizeof w);
    mio.Rewind(m);
    size_t k = 0;
    matvar_t *v;
    for (int i = 0; i < 64 && (v = mio.VarReadNextInfo(m)); i++) {
        if (k + 80 < sizeof list)
            k += (size_t)snprintf(list + k, sizeof list - k, "%s'%s'", k ? ", " : "", v->name ? v->name : "?");
        mio.VarFree(v);
    }
    return dpd_fail(err, DPD_E_FORMAT, "%s: no variable %s (the file holds %s)%s%s", path, what,
                    list[0] ? list : "no variable dpd can list", w, hint);
}

/* Checks that v (a header, or a variable read) is a signal — a complex vector, or an N x 2 real
 * matrix of I,Q columns, of double or single — and one the file can hold; *n its samples. */
static dpd_status signal_shape(const matvar_t *v, const char *path, uint64_t size, size_t *n, dpd_error *err) {
    const char *name = v->name ? v->name : "?";
    if (v->class_type != MAT_C_DOUBLE && v->class_type != MAT_C_SINGLE)
        return dpd_fail(err, DPD_E_FORMAT,
                        "%s: variable '%s' is %s%s; a complex vector (or an N x 2 real matrix of I,Q columns) of "
                        "double or single is expected",
                        path, name, class_name(v->class_type), v->isLogical ? " (logical)" : "");
    if (v->rank != 2 || !v->dims)
        return dpd_fail(err, DPD_E_FORMAT, "%s: variable '%s' has %d dimensions; a vector is expected", path, name,
                        v->rank);
    size_t r = v->dims[0], c = v->dims[1];
    if (v->isComplex) {
        if (r != 1 && c != 1)
            return dpd_fail(err, DPD_E_FORMAT,
                            "%s: variable '%s' is a %zu x %zu complex matrix; a complex vector is expected", path, name,
                            r, c);
        *n = r == 1 ? c : r;
    } else if (c == 2) {
        *n = r;
    } else if (r == 2) {
        return dpd_fail(err, DPD_E_FORMAT,
                        "%s: variable '%s' is a 2 x %zu real matrix; I,Q columns (N x 2, one row per sample) are "
                        "expected: transpose it",
                        path, name, c);
    } else {
        return dpd_fail(err, DPD_E_FORMAT,
                        "%s: variable '%s' is real (%zu x %zu); a complex vector, or an N x 2 real matrix of I,Q "
                        "columns, is expected",
                        path, name, r, c);
    }
    if (*n == 0) return dpd_fail(err, DPD_E_FORMAT, "%s: variable '%s' is empty", path, name);
    double bytes = (double)*n * 2 * (v->class_type == MAT_C_DOUBLE ? 8 : 4);
    if (*n > MAX_SAMPLES || bytes > 1032.0 * (double)size + 65536)
        return dpd_fail(err, DPD_E_FORMAT, "%s: variable '%s' claims %zu samples, more than %s: refused", path, name, *n,
                        *n > MAX_SAMPLES ? "a recording may have (512 M)" : "a file of its size can hold");
    return DPD_OK;
}

/* DPD_E_FORMAT where v5 variable `name` of path holds fewer values than its dimensions say, or its
 * data cannot be walked (a part's bytes end before its tag says); DPD_OK otherwise (v5_walk). */
static dpd_status v5_values(const char *path, const char *name, dpd_error *err) {
    int fd;
    uint64_t size;
    dpd_status st = dpd_file_open(path, MAX_MAT_BYTES, "MATLAB file", &fd, &size, err);
    if (st) return st;
    v5_var v;
    v5_walk(fd, size, name, &v);
    close(fd);
    if (v.far) /* its data could not be counted: matio would read it as its dimensions say */
        return dpd_fail(err, DPD_E_FORMAT, "%s: more than %d elements before variable '%s' (no MAT file holds so "
                        "many): refused", path, V5_ELEMENTS, name);
    if (v.bad)
        return dpd_fail(err, DPD_E_FORMAT, "%s: variable '%s': its data ends before its own length says: truncated or "
                        "corrupt", path, name);
    int im = v.cplx && v.have[1] < v.have[0]; /* the shorter part */
    if (v.hit && (v.have[0] < v.count || (v.cplx && v.have[1] < v.count)))
        return dpd_fail(err, DPD_E_FORMAT,
                        "%s: variable '%s' holds fewer values than its dimensions say (%s%llu of %llu): truncated or "
                        "corrupt", path, name, !v.cplx ? "" : im ? "its imaginary part " : "its real part ",
                        (unsigned long long)v.have[im], (unsigned long long)v.count);
    return DPD_OK;
}

/* Variable `name` of m as (n, 2) doubles (see signal_shape). */
static dpd_status read_signal(mat_t *m, const char *path, uint64_t size, const char *name, const char *hint,
                              double **iq, size_t *n, dpd_error *err) {
    *iq = NULL, *n = 0;
    said[0] = 0;
    matvar_t *v = mio.VarReadInfo(m, name);
    char w[300];
    if (!v && said[0])
        return dpd_fail(err, DPD_E_FORMAT, "%s: variable '%s' cannot be read: truncated or corrupt%s", path, name,
                        why(w, sizeof w));
    if (!v) {
        char q[80];
        snprintf(q, sizeof q, "'%s'", name);
        return missing(m, path, q, hint, err);
    }
    size_t k = 0, k2 = 0;
    dpd_status s = signal_shape(v, path, size, &k, err);
    int cplx = v->isComplex != 0;
    enum matio_classes cls = v->class_type;
    mio.VarFree(v);
    if (s || (mio.GetVersion(m) == MAT_FT_MAT5 && (s = v5_values(path, name, err)))) return s; /* its data, counted */
    said[0] = 0;
    if (!(v = mio.VarRead(m, name)) || said[0]) {
        mio.VarFree(v);
        return dpd_fail(err, DPD_E_FORMAT, "%s: variable '%s' cannot be read: truncated or corrupt%s", path, name,
                        why(w, sizeof w));
    }
    if ((s = signal_shape(v, path, size, &k2, err))) goto done;
    int dbl = cls == MAT_C_DOUBLE;
    const mat_complex_split_t *z = cplx ? v->data : NULL;
    if (k2 != k || (v->isComplex != 0) != cplx || v->class_type != cls || !v->data ||
        v->data_type != (dbl ? MAT_T_DOUBLE : MAT_T_SINGLE) || (z && (!z->Re || !z->Im))) {
        s = dpd_fail(err, DPD_E_FORMAT, "%s: variable '%s': its data does not match its header%s", path, name,
                     why(w, sizeof w));
        goto done;
    }
    double *out = malloc(k * 2 * sizeof *out);
    if (!out) {
        s = dpd_fail(err, DPD_E_NOMEM, "%s: out of memory for %zu samples of '%s'", path, k, name);
        goto done;
    }
    /* complex: split Re, Im arrays; real: column-major N x 2, I then Q */
    const void *re = z ? z->Re : v->data, *im = z ? z->Im : v->data;
    size_t off = z ? 0 : k;
    for (size_t i = 0; i < k; i++) {
        double a = dbl ? ((const double *)re)[i] : ((const float *)re)[i];
        double b = dbl ? ((const double *)im)[off + i] : ((const float *)im)[off + i];
        if (!dpd_sample_ok(a) || !dpd_sample_ok(b)) {
            int q = dpd_sample_ok(a); /* the first bad one: I, else Q */
            double bad = q ? b : a;
            free(out);
            char at[96]; /* MATLAB's 1-based index: x(6) of a complex vector, x(6,2) of an N x 2 matrix's Q */
            if (z) snprintf(at, sizeof at, "%s(%zu)", name, i + 1);
            else snprintf(at, sizeof at, "%s(%zu,%d)", name, i + 1, q + 1);
            s = dpd_fail(err, DPD_E_FORMAT, "%s: variable '%s' sample %zu (0-based; %s in MATLAB) has %s %s value",
                         path, name, i, at,
                         isfinite(bad) ? "an out-of-range (beyond a float's 3.4e38)" : "a non-finite", q ? "Q" : "I");
            goto done;
        }
        out[2 * i] = a, out[2 * i + 1] = b;
    }
    *iq = out, *n = k;
done:
    mio.VarFree(v);
    return s;
}

/* The sample rate: the real scalar `name` (NULL: the first of fs, Fs, FS, SampleRate, sample_rate, sampleRate) in Hz;
 * *fs = 0 when absent. */
static dpd_status read_fs(mat_t *m, const char *path, const char *name, double *fs, dpd_error *err) {
    static const char *const names[] = {"fs", "Fs", "FS", "SampleRate", "sample_rate", "sampleRate"}; /* comm's SampleRate */
    *fs = 0;
    int found;
    dpd_status s = name ? find(m, path, name, &found, err)
                        : first(m, path, names, (int)(sizeof names / sizeof *names), &name, &found, err);
    if (s || !found) return s;
    matvar_t *v = mio.VarReadInfo(m, name);
    int scalar = !v->isComplex && v->rank == 2 && v->dims && v->dims[0] == 1 && v->dims[1] == 1 &&
                 (v->class_type == MAT_C_DOUBLE || v->class_type == MAT_C_SINGLE);
    mio.VarFree(v);
    said[0] = 0;
    v = scalar ? mio.VarRead(m, name) : NULL; /* the header said 1 x 1: a read of 8 bytes at most */
    double f = NAN;
    if (v && !said[0] && v->data && !v->isComplex && v->rank == 2 && v->dims[0] == 1 && v->dims[1] == 1) {
        if (v->class_type == MAT_C_DOUBLE && v->data_type == MAT_T_DOUBLE) f = *(const double *)v->data;
        if (v->class_type == MAT_C_SINGLE && v->data_type == MAT_T_SINGLE) f = *(const float *)v->data;
    }
    mio.VarFree(v);
    if (f > 0 && isfinite(f)) {
        *fs = f;
        return DPD_OK;
    }
    char val[48] = "";
    if (!isnan(f)) snprintf(val, sizeof val, " (it is %g)", f);
    return dpd_fail(err, DPD_E_FORMAT,
                    "%s: variable '%s' (the sample rate) must be a positive, finite real scalar of double or single, "
                    "in Hz%s", path, name, val);
}

/* ---- the public reads: a v7.3 file in a child process ------------------------------------------ */

/* What a read gives: its status and error, a sample count, a sample rate, whether a variable was
 * found, and up to two (n, 2) arrays (malloc'd). */
typedef struct got {
    dpd_status s;
    dpd_error err;
    size_t n;
    double fs;
    int found;
    double *a, *b;
} got;

typedef struct ask {
    const char *path, *var, *var2; /* the variable(s) asked for (NULL: the defaults) */
    int kind;                      /* READ_SIGNAL, READ_PAIR, HAS */
} ask;

enum { READ_SIGNAL, READ_PAIR, HAS };

/* The read itself, under the lock (enter). */
static void read_here(const ask *q, got *g) {
    static const char *const names[] = {"x", "iq", "input", "in"}, *const xs[2] = {"x", "input"}, *const ys[2] = {"y", "output"};
    const char *path = q->path, *var = q->var, *yname = q->var2;
    dpd_error *err = &g->err;
    mat_t *m;
    uint64_t size;
    size_t ny = 0;
    int found = 1;
    dpd_status s = open_mat(path, &m, &size, err);
    if (q->kind == HAS) {
        if (!s && find(m, path, var, &found, err)) found = 0;
        g->found = !s && found;
        s = DPD_OK;
    } else if (q->kind == READ_SIGNAL) {
        if (!s && !var && !(s = first(m, path, names, 4, &var, &found, err)) && !found)
            s = missing(m, path, "'x', 'iq', 'input' or 'in'", RUN_HINT, err);
        if (!s) s = read_signal(m, path, size, var, RUN_HINT, &g->a, &g->n, err);
        if (!s) s = read_fs(m, path, q->var2, &g->fs, err);
    } else {
        if (!s && !var) s = first(m, path, xs, 2, &var, &found, err);
        if (!s && !yname) s = first(m, path, ys, 2, &yname, &found, err);
        if (!s) s = read_signal(m, path, size, var, PAIR_HINT, &g->a, &g->n, err);
        if (!s) s = read_signal(m, path, size, yname, PAIR_HINT, &g->b, &ny, err);
        if (!s && g->n != ny)
            s = dpd_fail(err, DPD_E_FORMAT, "%s: the input '%s' has %zu samples and the output '%s' %zu; a paired "
                         "capture has as many of each", path, var, g->n, yname, ny);
        if (!s) s = read_fs(m, path, NULL, &g->fs, err);
    }
    if (m) mio.Close(m);
    if (s) free(g->a), free(g->b), g->a = g->b = NULL, g->n = 0, g->fs = 0;
    g->s = s;
}

/* Whether path is a v7.3 file (its header's version 0x0200, which matio hands to HDF5). */
static int is_v73(const char *path) {
    unsigned char h[128];
    int fd, ok = 0;
    uint64_t size;
    dpd_error err = {0};
    if (dpd_file_open(path, MAX_MAT_BYTES, "MATLAB file", &fd, &size, &err)) return 0; /* open_mat says why */
    if (pread(fd, h, sizeof h, 0) == (ssize_t)sizeof h)
        ok = (h[126] == 'I' && h[127] == 'M' ? h[124] | h[125] << 8 : h[124] << 8 | h[125]) == 0x0200;
    close(fd);
    return ok;
}

static int put_all(int fd, const void *p, size_t n) {
    for (const char *c = p; n;) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        c += w, n -= (size_t)w;
    }
    return 0;
}

static int get_all(int fd, void *p, size_t n) {
    for (char *c = p; n;) {
        ssize_t r = read(fd, c, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        c += r, n -= (size_t)r;
    }
    return 0;
}

/* Whether a v7.3 file is read in a child process (dpd_mat_isolate). */
static atomic_int isolate = 1;

void dpd_mat_isolate(int on) { atomic_store(&isolate, on != 0); }

/* q read in a child process, its result handed back through a pipe: HDF5 reads a damaged file's
 * bytes past its own buffers (a heap-buffer-overflow a review found with a few flipped bytes), and
 * a crash there ends the child, not dpd, which says so. The child's answer is checked as any
 * input (a sample count the file could not hold, an unterminated message); the child may spend a
 * minute of CPU and a second per 10 MB of file (HDF5 in a loop dies of SIGXCPU; a slow disk or a
 * stopped process spends none). Where no child can be made (fork refused) or isolation is off,
 * the read stays here. */
static void read_apart(const ask *q, got *g) {
    int fds[2];
    struct stat sb;
    if (!atomic_load(&isolate) || stat(q->path, &sb) || pipe2(fds, O_CLOEXEC)) {
        read_here(q, g);
        return;
    }
    rlim_t cpu = 60 + (rlim_t)(sb.st_size / 10000000); /* seconds of CPU */
    pid_t parent = getpid(), pid = fork();
    if (pid < 0) { /* no child to be had (a process limit): as without isolation */
        close(fds[0]), close(fds[1]);
        read_here(q, g);
        return;
    }
    if (pid == 0) { /* the child: the read, its result down the pipe, and out without atexit (HDF5's) */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(3); /* the parent died before the line above */
        setrlimit(RLIMIT_CPU, &(struct rlimit){cpu, cpu + 1});
        close(fds[0]);
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) dup2(null, 2); /* HDF5's own prints */
        read_here(q, g);
        size_t k = g->a ? 2 * g->n : 0;
        int ok = !put_all(fds[1], g, sizeof *g) && (!g->a || !put_all(fds[1], g->a, k * sizeof *g->a)) &&
                 (!g->b || !put_all(fds[1], g->b, k * sizeof *g->b));
        _exit(ok ? 0 : 3);
    }
    close(fds[1]);
    got r = {0};
    int nomem = 0, ok = !get_all(fds[0], &r, sizeof r);
    r.a = r.b = NULL;
    r.err.msg[sizeof r.err.msg - 1] = 0, r.err.field[sizeof r.err.field - 1] = 0;
    uint64_t most = (uint64_t)sb.st_size * 1032 / 8; /* samples the file could hold, compressed (signal_shape) */
    int two = ok && r.s == DPD_OK && q->kind == READ_PAIR, one = ok && r.s == DPD_OK && q->kind != HAS;
    if (one && (r.n > MAX_SAMPLES || r.n > most)) ok = 0;
    size_t bytes = one && ok ? 2 * r.n * sizeof(double) : 0;
    if (one && ok && (!(r.a = malloc(bytes ? bytes : 1)) || (two && !(r.b = malloc(bytes ? bytes : 1))))) ok = 0, nomem = 1;
    if (one && ok) ok = !get_all(fds[0], r.a, bytes) && (!two || !get_all(fds[0], r.b, bytes));
    close(fds[0]);
    if (nomem) kill(pid, SIGKILL);
    int status = 0, w = 0;
    while ((w = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {}
    if (w < 0) status = 0; /* reaped by someone else (ECHILD): the whole result came, or ok says not */
    if (ok && WIFEXITED(status) && !WEXITSTATUS(status)) {
        *g = r;
        return;
    }
    free(r.a), free(r.b);
    *g = (got){0};
    if (nomem)
        g->s = dpd_fail(&g->err, DPD_E_NOMEM, "%s: out of memory for %zu samples", q->path, r.n);
    else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGXCPU)
        g->s = dpd_fail(&g->err, DPD_E_FORMAT, "%s: a damaged v7.3 (HDF5) file: the HDF5 library reading it spent %llu s "
                        "of CPU without an answer and was stopped", q->path, (unsigned long long)cpu);
    else if (WIFSIGNALED(status))
        g->s = dpd_fail(&g->err, DPD_E_FORMAT, "%s: a damaged v7.3 (HDF5) file: the HDF5 library reading it died of "
                        "signal %d%s", q->path, WTERMSIG(status), WTERMSIG(status) == SIGKILL ? " (or the memory ran out)" : "");
    else
        g->s = dpd_fail(&g->err, DPD_E_FORMAT, "%s: a damaged v7.3 (HDF5) file: the HDF5 library reading it ended "
                        "without a whole answer", q->path);
}

static void read_mat(const ask *q, got *g) {
    memset(g, 0, sizeof *g);
    if ((g->s = enter(q->path, &g->err))) return;
    if (is_v73(q->path)) read_apart(q, g);
    else read_here(q, g);
    leave();
}

dpd_status dpd_mat_read_signal(const char *path, const char *var, const char *fsvar, double **iq, size_t *n,
                               double *fs, dpd_error *err) {
    got g;
    read_mat(&(ask){path, var, fsvar, READ_SIGNAL}, &g);
    *iq = g.a, *n = g.n, *fs = g.fs;
    if (g.s && err) *err = g.err;
    return g.s;
}

int dpd_mat_has(const char *path, const char *name) {
    got g;
    read_mat(&(ask){path, name, NULL, HAS}, &g);
    return g.found;
}

dpd_status dpd_mat_read_pair(const char *path, const char *xname, const char *yname, double **in, double **out,
                             size_t *n, double *fs, dpd_error *err) {
    got g;
    read_mat(&(ask){path, xname, yname, READ_PAIR}, &g);
    *in = g.a, *out = g.b, *n = g.n, *fs = g.fs;
    if (g.s && err) *err = g.err;
    return g.s;
}

/* ---- writing --------------------------------------------------------------------------------- */

/* A .mat being written into the temporary file of an atomic writer. */
typedef struct writer {
    dpd_afile a;
    mat_t *m;
} writer;

static dpd_status w_open(writer *w, const char *path, int mat73, dpd_error *err) {
    w->m = NULL;
    dpd_status s = dpd_afile_open(&w->a, path, err);
    if (s) return s;
    fclose(w->a.f); /* matio writes the temporary file by name */
    w->a.f = NULL;
    if ((w->m = mio.CreateVer(w->a.tmp, mat73 ? HEADER73 : HEADER5, mat73 ? MAT_FT_MAT73 : MAT_FT_MAT5))) return DPD_OK;
    char why_[300];
    why(why_, sizeof why_);
    mat_t *v5 = mat73 ? mio.CreateVer(w->a.tmp, HEADER5, MAT_FT_MAT5) : NULL;
    if (v5) mio.Close(v5);
    dpd_afile_abort(&w->a);
    if (v5) /* v5 works where v7.3 does not: matio was built without HDF5 */
        return dpd_fail(err, DPD_E_UNSUPPORTED,
                        "%s: this matio (%s) cannot write .mat v7.3, it was built without HDF5: write v5 (the "
                        "default) or use a matio with HDF5 (Debian's libmatio has it)",
                        path, MATIO_VERSION_STR);
    return dpd_fail(err, DPD_E_IO, "%s: cannot create the MATLAB file%s", path, why_);
}

static void w_abort(writer *w) {
    if (w->m) mio.Close(w->m);
    w->m = NULL;
    dpd_afile_abort(&w->a);
}

/* Closes the file and moves it into place (dpd_afile_commit syncs it through a stream on it). */
static dpd_status w_commit(writer *w, dpd_error *err) {
    int bad = mio.Close(w->m) != 0;
    w->m = NULL;
    if (bad || !(w->a.f = fopen(w->a.tmp, "rb"))) {
        char why_[300];
        dpd_afile_abort(&w->a);
        return dpd_fail(err, DPD_E_IO, "%s: write failed%s", w->a.path, why(why_, sizeof why_));
    }
    return dpd_afile_commit(&w->a, err);
}

/* Writes one variable: rank 2, dims r x c, data in the class's type (complex: a mat_complex_split_t). */
static dpd_status put(writer *w, const char *name, enum matio_classes cls, size_t r, size_t c, void *data, int cplx,
                      dpd_error *err) {
    size_t dims[2] = {r, c};
    enum matio_types t = cls == MAT_C_DOUBLE ? MAT_T_DOUBLE : cls == MAT_C_SINGLE ? MAT_T_SINGLE : MAT_T_UTF8;
    matvar_t *v = mio.VarCreate(name, cls, t, 2, dims, data, (cplx ? MAT_F_COMPLEX : 0) | MAT_F_DONT_COPY_DATA);
    int bad = !v || mio.VarWrite(w->m, v, MAT_COMPRESSION_NONE) != 0;
    mio.VarFree(v); /* MAT_F_DONT_COPY_DATA: frees the header, never data */
    if (!bad) return DPD_OK;
    char why_[300];
    return dpd_fail(err, DPD_E_IO, "%s: cannot write variable '%s'%s", w->a.path, name, why(why_, sizeof why_));
}

static dpd_status put_scalar(writer *w, const char *name, double v, dpd_error *err) {
    return put(w, name, MAT_C_DOUBLE, 1, 1, &v, 0, err);
}

/* A MATLAB variable name: a letter, then letters, digits and '_', at most 63 characters. */
static int valid_name(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > 63 || !((*s | 32) >= 'a' && (*s | 32) <= 'z')) return 0;
    for (; *s; s++)
        if (!((*s | 32) >= 'a' && (*s | 32) <= 'z') && !(*s >= '0' && *s <= '9') && *s != '_') return 0;
    return 1;
}

dpd_status dpd_mat_write_signal(const char *path, const float *y, const double *in, size_t n,
                                const dpd_recording_meta *meta, dpd_error *err) {
    const char *vy = meta && meta->var ? meta->var : "y", *vx = meta && meta->var_in ? meta->var_in : "x",
               *vf = meta && meta->var_fs ? meta->var_fs : "fs";
    const char *names[3] = {vy, in ? vx : NULL, meta && meta->fs > 0 ? vf : NULL};
    for (int i = 0; i < 3; i++) {
        if (names[i] && !valid_name(names[i]))
            return dpd_fail_field(err, "var", DPD_E_INVAL,
                                  "var: '%s' is not a MATLAB variable name (a letter, then letters, digits or '_', "
                                  "at most 63)", names[i]);
        for (int j = 0; j < i; j++)
            if (names[i] && names[j] && !strcmp(names[i], names[j]))
                return dpd_fail_field(err, "var", DPD_E_INVAL, "var: '%s' names two variables of %s", names[i], path);
    }
    if (n == 0) return dpd_fail(err, DPD_E_INVAL, "%s: no samples to write", path);
    if (!(meta && meta->mat73) && (double)n * (in ? 16 : 8) > 4294000000.0) /* v5 sizes are 32-bit */
        return dpd_fail(err, DPD_E_INVAL, "%s: %zu samples are more than a v5 .mat variable holds (4 GiB): write v7.3",
                        path, n);
    float *yre = malloc(2 * n * sizeof *yre), *yim = yre ? yre + n : NULL;
    double *xre = in ? malloc(2 * n * sizeof *xre) : NULL, *xim = xre ? xre + n : NULL;
    if (!yre || (in && !xre)) {
        free(yre), free(xre);
        return dpd_fail(err, DPD_E_NOMEM, "%s: out of memory for %zu samples", path, n);
    }
    for (size_t i = 0; i < n; i++) {
        yre[i] = y[2 * i], yim[i] = y[2 * i + 1];
        if (in) xre[i] = in[2 * i], xim[i] = in[2 * i + 1];
    }
    writer w = {0};
    mat_complex_split_t zy = {yre, yim}, zx = {xre, xim};
    dpd_status s = enter(path, err);
    int held = !s;
    if (!s) s = w_open(&w, path, meta && meta->mat73, err);
    if (!s) s = put(&w, vy, MAT_C_SINGLE, n, 1, &zy, 1, err);
    if (!s && in) s = put(&w, vx, MAT_C_DOUBLE, n, 1, &zx, 1, err);
    if (!s && names[2]) s = put_scalar(&w, vf, meta->fs, err);
    if (!s) s = w_commit(&w, err);
    else if (w.m) w_abort(&w);
    if (held) leave();
    free(yre), free(xre);
    return s;
}

dpd_status dpd_mat_write_pair(const char *path, const double *in, const double *out, size_t n, double fs,
                              const char *xname, const char *yname, int mat73, dpd_error *err) {
    const char *names[2] = {xname ? xname : "x", yname ? yname : "y"};
    for (int i = 0; i < 2; i++)
        if (!valid_name(names[i]) || !strcmp(names[i], "fs"))
            return dpd_fail_field(err, "var", DPD_E_INVAL,
                                  "var: '%s' is not a MATLAB variable name (a letter, then letters, digits or '_', "
                                  "at most 63) other than fs", names[i]);
    if (!strcmp(names[0], names[1]))
        return dpd_fail_field(err, "var", DPD_E_INVAL, "var: '%s' names both variables of %s", names[0], path);
    if (n == 0) return dpd_fail(err, DPD_E_INVAL, "%s: no samples to write", path);
    if (!mat73 && (double)n * 16 > 4294000000.0) /* v5 sizes are 32-bit */
        return dpd_fail(err, DPD_E_INVAL, "%s: %zu samples are more than a v5 .mat variable holds (4 GiB): write v7.3",
                        path, n);
    double *buf = malloc(4 * n * sizeof *buf);
    if (!buf) return dpd_fail(err, DPD_E_NOMEM, "%s: out of memory for %zu samples", path, n);
    double *xre = buf, *xim = xre + n, *yre = xim + n, *yim = yre + n;
    for (size_t i = 0; i < n; i++) {
        xre[i] = in[2 * i], xim[i] = in[2 * i + 1];
        yre[i] = out[2 * i], yim[i] = out[2 * i + 1];
    }
    writer w = {0};
    mat_complex_split_t zx = {xre, xim}, zy = {yre, yim};
    dpd_status s = enter(path, err);
    int held = !s;
    if (!s) s = w_open(&w, path, mat73, err);
    if (!s) s = put(&w, names[0], MAT_C_DOUBLE, n, 1, &zx, 1, err);
    if (!s) s = put(&w, names[1], MAT_C_DOUBLE, n, 1, &zy, 1, err);
    if (!s && fs > 0) s = put_scalar(&w, "fs", fs, err);
    if (!s) s = w_commit(&w, err);
    else if (w.m) w_abort(&w);
    if (held) leave();
    free(buf);
    return s;
}

dpd_status dpd_mat_write_model(const char *path, const dpd_model *m, int mat73, dpd_error *err) {
    const dpd_model_cfg *c = dpd_model_config(m);
    if (!dpd_model_family(m)->poly)
        return dpd_fail(err, DPD_E_UNSUPPORTED,
                        "%s: only the polynomial models (mp, gmp_ls) have coefficients to export; %s is a neural network",
                        path, c->family);
    int P = dpd_poly_terms(c, NULL), K = c->order, Q = c->memory, mp = !strcmp(c->family, "mp");
    dpd_term *t = malloc((size_t)P * sizeof *t);
    double *buf = malloc(((size_t)P * 5 + (mp ? 2 * (size_t)K * Q : 0)) * sizeof *buf);
    if (!t || !buf) {
        free(t), free(buf);
        return dpd_fail(err, DPD_E_NOMEM, "%s: out of memory for %d coefficients", path, P);
    }
    dpd_poly_terms(c, t);
    const float *cf = dpd_model_cparams(m) + dpd_model_tensor(m, 0)->offset; /* backbone.coef (P, 2) */
    double *re = buf, *im = re + P, *tk = im + P, *tq = tk + P, *tm = tq + P, *mre = tm + P, *mim = mre + (size_t)K * Q;
    for (int p = 0; p < P; p++) {
        re[p] = cf[2 * p], im[p] = cf[2 * p + 1];
        tk[p] = t[p].k, tq[p] = t[p].q, tm[p] = t[p].m;
        /* comm.DPD's Coefficients: column-major memory_depth x degree, (q, k) at q + k Q */
        if (mp) mre[t[p].q + (size_t)t[p].k * Q] = re[p], mim[t[p].q + (size_t)t[p].k * Q] = im[p];
    }
    writer w = {0};
    mat_complex_split_t zc = {re, im}, zm = {mre, mim};
    dpd_status s = enter(path, err);
    int held = !s;
    if (!s) s = w_open(&w, path, mat73, err);
    if (!s) s = put(&w, "coef", MAT_C_DOUBLE, (size_t)P, 1, &zc, 1, err);
    if (!s) s = put(&w, "term_k", MAT_C_DOUBLE, (size_t)P, 1, tk, 0, err);
    if (!s) s = put(&w, "term_q", MAT_C_DOUBLE, (size_t)P, 1, tq, 0, err);
    if (!s) s = put(&w, "term_m", MAT_C_DOUBLE, (size_t)P, 1, tm, 0, err);
    if (!s) s = put_scalar(&w, "degree", K, err);
    if (!s) s = put_scalar(&w, "memory_depth", Q, err);
    if (!s) s = put_scalar(&w, "cross", mp ? 0 : c->cross, err);
    if (!s) s = put(&w, "family", MAT_C_CHAR, 1, strlen(c->family), (void *)c->family, 0, err);
    if (!s && mp) s = put(&w, "Coefficients", MAT_C_DOUBLE, (size_t)Q, (size_t)K, &zm, 1, err);
    if (!s) s = w_commit(&w, err);
    else if (w.m) w_abort(&w);
    if (held) leave();
    free(t), free(buf);
    return s;
}
