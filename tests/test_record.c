/* test_record: recordings in and out (issue 15, section 4). MATLAB .mat v5 and v7.3: dpd run's
 * output read back with matio itself, bit for bit in the class written (y single, x double, fs);
 * the paired-capture reader with its default, alternate and given names, single precision and
 * N x 2 I,Q matrices; bad files (truncated at every length class, a missing variable, real where
 * complex is expected, another class, a 2 x N matrix, NaN, a bad sample rate, not a MAT file,
 * every byte of a v5 file altered) are DPD_E_FORMAT naming the file and the variable, never a
 * crash; a polynomial model's coefficients in comm.DPD's layout, checked by evaluating MATLAB's
 * memory polynomial with them against dpd's own forward pass. SigMF: a round trip with every
 * metadata field written, another datatype, broken or mistyped metadata and a missing sidecar
 * refused by name; a bare .cf32 has no sample rate. Waveform presets: the stated sample rate,
 * subcarrier count and the span of the occupied subcarriers (an FFT of one symbol), the PA
 * output's power inside the channel (dpd_psd), the PA fields kept, an unknown name refused. */
#include <kiss_fft.h>
#include <math.h>
#include <matio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "dpd/dpd.h"
#include "mat.h"

static char paths[32][512];
static int npaths;

static const char *join(const char *dir, const char *name) {
    char *p = paths[npaths++ % 32];
    snprintf(p, 512, "%s/%s", dir, name);
    return p;
}

static int has(const char *msg, const char *a, const char *b) { return strstr(msg, a) && (!b || strstr(msg, b)); }

/* ---- .mat files written by the test itself, through matio ---------------------------------------- */

/* One variable: cls double or single (data in that type), or int16/char; complex when im != NULL. */
static void put(mat_t *m, const char *name, enum matio_classes cls, size_t r, size_t c, void *re, void *im) {
    size_t dims[2] = {r, c};
    enum matio_types t = cls == MAT_C_DOUBLE ? MAT_T_DOUBLE : cls == MAT_C_SINGLE ? MAT_T_SINGLE
                       : cls == MAT_C_INT16  ? MAT_T_INT16  : MAT_T_UTF8;
    mat_complex_split_t z = {re, im};
    matvar_t *v = Mat_VarCreate(name, cls, t, 2, dims, im ? (void *)&z : re, im ? MAT_F_COMPLEX : 0);
    CHECK(v && Mat_VarWrite(m, v, MAT_COMPRESSION_NONE) == 0, "test writer: variable %s", name);
    Mat_VarFree(v);
}

static mat_t *create(const char *path, int v73) {
    mat_t *m = Mat_CreateVer(path, NULL, v73 ? MAT_FT_MAT73 : MAT_FT_MAT5);
    CHECK(m != NULL, "test writer: create %s", path);
    if (!m) exit(check_done("record"));
    return m;
}

enum { N = 37 };
static double xr[N], xi[N], yr[N], yi[N];

static void fill(void) {
    for (int i = 0; i < N; i++) {
        xr[i] = sin(0.37 * i) / 3, xi[i] = cos(1.1 * i) / 7 + 1e-300;
        yr[i] = 2.5 * xr[i] - 0.1 * xi[i] * xi[i], yi[i] = 2.5 * xi[i] + 1.0 / 3;
    }
}

/* A paired capture under the names xn/yn (NULL: none), with fs when fs > 0. */
static const char *pair_file(const char *d, const char *name, int v73, const char *xn, const char *yn, double fs) {
    const char *p = join(d, name);
    mat_t *m = create(p, v73);
    if (xn) put(m, xn, MAT_C_DOUBLE, N, 1, xr, xi);
    if (yn) put(m, yn, MAT_C_DOUBLE, 1, N, yr, yi); /* a row: either orientation is a vector */
    if (fs > 0) put(m, "fs", MAT_C_DOUBLE, 1, 1, &fs, NULL);
    Mat_Close(m);
    return p;
}

static int same_pair(const double *in, const double *out, size_t n) {
    if (n != N || !in || !out) return 0;
    for (int i = 0; i < N; i++)
        if (in[2 * i] != xr[i] || in[2 * i + 1] != xi[i] || out[2 * i] != yr[i] || out[2 * i + 1] != yi[i]) return 0;
    return 1;
}

static void pair(const char *d, int v73) {
    const char *tag = v73 ? "v7.3" : "v5";
    double *in = NULL, *out = NULL, fs = -1;
    size_t n = 0;
    dpd_error err = {0};
    const char *p = pair_file(d, v73 ? "p73.mat" : "p5.mat", v73, "x", "y", 30.72e6);
    CHECK(dpd_mat_read_pair(p, NULL, NULL, &in, &out, &n, &fs, &err) == DPD_OK && same_pair(in, out, n) &&
              fs == 30.72e6, "%s pair x/y: %s", tag, err.msg);
    free(in), free(out);
    p = pair_file(d, v73 ? "io73.mat" : "io5.mat", v73, "input", "output", 0);
    CHECK(dpd_mat_read_pair(p, NULL, NULL, &in, &out, &n, &fs, &err) == DPD_OK && same_pair(in, out, n) && fs == 0,
          "%s pair input/output, no fs: %s", tag, err.msg);
    free(in), free(out);
    p = pair_file(d, v73 ? "pa73.mat" : "pa5.mat", v73, "PA_Input", "PA_Output", 1e6);
    CHECK(dpd_mat_read_pair(p, "PA_Input", "PA_Output", &in, &out, &n, &fs, &err) == DPD_OK && same_pair(in, out, n),
          "%s pair with given names: %s", tag, err.msg);
    free(in), free(out);
    dpd_status s = dpd_mat_read_pair(p, NULL, NULL, &in, &out, &n, &fs, &err);
    CHECK(s == DPD_E_FORMAT && !in && !out && has(err.msg, p, "no variable 'x'") && strstr(err.msg, "'PA_Input'") &&
              strstr(err.msg, "spec.json's mat_input and mat_output name others"),
          "%s pair without x: %s '%s'", tag, dpd_status_str(s), err.msg);
    { /* a rate named as MATLAB's comm objects name it */
        const char *q = join(d, v73 ? "sr73.mat" : "sr5.mat");
        mat_t *m = create(q, v73);
        double sr = 61.44e6;
        put(m, "x", MAT_C_DOUBLE, N, 1, xr, xi);
        put(m, "y", MAT_C_DOUBLE, N, 1, yr, yi);
        put(m, "SampleRate", MAT_C_DOUBLE, 1, 1, &sr, NULL);
        Mat_Close(m);
        CHECK(dpd_mat_read_pair(q, NULL, NULL, &in, &out, &n, &fs, &err) == DPD_OK && fs == 61.44e6,
              "%s pair with SampleRate: fs %g (%s)", tag, fs, err.msg);
        free(in), free(out);
        double *iq = NULL;
        CHECK(dpd_recording_read(p, &iq, &n, &err) == DPD_E_FORMAT && strstr(err.msg, "--var NAME"),
              "%s signal without x: says --var (%s)", tag, err.msg);
        free(iq);
    }

    /* single precision, x as an N x 2 real I,Q matrix, y a complex single column */
    float f[2 * N], fr[N], fi[N];
    for (int i = 0; i < N; i++) f[i] = (float)xr[i], f[N + i] = (float)xi[i], fr[i] = (float)yr[i], fi[i] = (float)yi[i];
    p = join(d, v73 ? "s73.mat" : "s5.mat");
    mat_t *m = create(p, v73);
    put(m, "x", MAT_C_SINGLE, N, 2, f, NULL);
    put(m, "y", MAT_C_SINGLE, N, 1, fr, fi);
    float fsf = 2e6f;
    put(m, "Fs", MAT_C_SINGLE, 1, 1, &fsf, NULL);
    Mat_Close(m);
    s = dpd_mat_read_pair(p, NULL, NULL, &in, &out, &n, &fs, &err);
    int ok = s == DPD_OK && n == N && fs == 2e6;
    for (int i = 0; ok && i < N; i++)
        ok = in[2 * i] == f[i] && in[2 * i + 1] == f[N + i] && out[2 * i] == fr[i] && out[2 * i + 1] == fi[i];
    CHECK(ok, "%s pair in single, x as N x 2 I,Q, Fs: %s", tag, err.msg);
    free(in), free(out);

    /* lengths differ */
    p = join(d, v73 ? "len73.mat" : "len5.mat");
    m = create(p, v73);
    put(m, "x", MAT_C_DOUBLE, N, 1, xr, xi);
    put(m, "y", MAT_C_DOUBLE, N - 1, 1, yr, yi);
    Mat_Close(m);
    s = dpd_mat_read_pair(p, NULL, NULL, &in, &out, &n, &fs, &err);
    CHECK(s == DPD_E_FORMAT && has(err.msg, p, "'x' has 37") && strstr(err.msg, "'y' 36"), "%s lengths: %s", tag,
          err.msg);
}

/* dpd_mat_read_pair of path fails with DPD_E_FORMAT, naming the file and name (and also when given). */
static void refused(const char *tag, const char *what, const char *path, const char *name, const char *also) {
    double *in = (double *)1, *out = (double *)1, fs = 1;
    size_t n = 9;
    dpd_error err = {0};
    dpd_status s = dpd_mat_read_pair(path, NULL, NULL, &in, &out, &n, &fs, &err);
    CHECK(s == DPD_E_FORMAT && !in && !out && n == 0 && fs == 0, "%s %s: status %s (%s)", tag, what, dpd_status_str(s),
          err.msg);
    CHECK(has(err.msg, path, name) && (!also || strstr(err.msg, also)), "%s %s: message '%s' lacks the path, %s or '%s'",
          tag, what, err.msg, name, also ? also : "");
}

/* A pair file STEM<tag>.mat whose variable `odd` (x, y, fs or another name) is of class cls, r x c
 * (complex when im); the good x and y where odd is not one of them. */
static const char *odd_file(const char *d, const char *stem, const char *tag, int v73, const char *odd,
                            enum matio_classes cls, size_t r, size_t c, void *re, void *im) {
    char name[64];
    snprintf(name, sizeof name, "%s%s.mat", stem, tag);
    const char *p = join(d, name);
    mat_t *m = create(p, v73);
    if (strcmp(odd, "x") && strcmp(odd, "a")) put(m, "x", MAT_C_DOUBLE, N, 1, xr, xi);
    put(m, odd, cls, r, c, re, im);
    if (strcmp(odd, "y") && strcmp(odd, "a")) put(m, "y", MAT_C_DOUBLE, N, 1, yr, yi);
    Mat_Close(m);
    return p;
}

static void bad(const char *d, int v73) {
    const char *tag = v73 ? "v7.3" : "v5", *p;
    short i16[2 * N] = {1, 2, 3};
    double fs[2] = {-5, 1}, keep = yi[3];
    refused(tag, "missing x", odd_file(d, "miss", tag, v73, "a", MAT_C_DOUBLE, N, 1, xr, xi), "no variable 'x'", "'a'");
    refused(tag, "real x", odd_file(d, "real", tag, v73, "x", MAT_C_DOUBLE, N, 1, xr, NULL), "variable 'x' is real",
            "complex");
    refused(tag, "2 x N", odd_file(d, "t", tag, v73, "x", MAT_C_DOUBLE, 2, N / 2, xr, NULL),
            "'x' is a 2 x 18 real matrix", "transpose");
    refused(tag, "int16 x", odd_file(d, "i16", tag, v73, "x", MAT_C_INT16, N, 2, i16, NULL), "variable 'x' is int16", NULL);
    refused(tag, "char y", odd_file(d, "char", tag, v73, "y", MAT_C_CHAR, 1, 5, "hello", NULL), "variable 'y' is char",
            NULL);
    yi[3] = NAN;
    p = pair_file(d, v73 ? "nan73.mat" : "nan5.mat", v73, "x", "y", 1e6);
    yi[3] = keep;
    refused(tag, "NaN", p, "variable 'y' sample 3", "non-finite Q");
    keep = xr[5], xr[5] = -1e300;
    p = pair_file(d, v73 ? "big73.mat" : "big5.mat", v73, "x", "y", 1e6);
    xr[5] = keep;
    refused(tag, "1e300", p, "variable 'x' sample 5 (0-based; x(6) in MATLAB)", "out-of-range (beyond a float's 3.4e38) I");
    refused(tag, "negative fs", odd_file(d, "fsneg", tag, v73, "fs", MAT_C_DOUBLE, 1, 1, fs, NULL), "variable 'fs'",
            "it is -5");
    refused(tag, "fs not a scalar", odd_file(d, "fs2", tag, v73, "fs", MAT_C_DOUBLE, 1, 2, fs, NULL), "variable 'fs'",
            "scalar");

    /* every truncation of a good file: never a crash; past the header the variable is named */
    p = pair_file(d, v73 ? "good73.mat" : "good5.mat", v73, "x", "y", 1e6);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = fopen(p, "rb");
    if (f && !fseek(f, 0, SEEK_END) && (len = (size_t)ftell(f)) && (buf = malloc(len)) && !fseek(f, 0, SEEK_SET))
        len = fread(buf, 1, len, f);
    if (f) fclose(f);
    CHECK(buf && len > 256, "%s: good file read (%zu bytes)", tag, len);
    const char *cut = join(d, v73 ? "cut73.mat" : "cut5.mat");
    int step = v73 ? 97 : 1, named = 0, tries = 0;
    for (size_t k = 0; buf && k < len; k += (size_t)step) {
        f = fopen(cut, "wb");
        if (f) fwrite(buf, 1, k, f), fclose(f);
        double *in = NULL, *out = NULL, r;
        size_t n;
        dpd_error err = {0};
        dpd_status s = dpd_mat_read_pair(cut, NULL, NULL, &in, &out, &n, &r, &err);
        tries++;
        int whole = s == DPD_OK && r == 0 && same_pair(in, out, n); /* cut where fs began: a file without it */
        CHECK(whole || (s == DPD_E_FORMAT && strstr(err.msg, cut)), "%s truncated to %zu of %zu bytes: %s '%s'", tag, k,
              len, dpd_status_str(s), err.msg);
        named += s == DPD_E_FORMAT && (strstr(err.msg, "'x'") || strstr(err.msg, "'y'"));
        if (s == DPD_OK) free(in), free(out);
    }
    if (!v73) /* a v5 file cut inside its variables names the one it could not read */
        CHECK(named > tries / 2, "%s truncated: %d of %d messages name a variable", tag, named, tries);
    /* every byte of a v5 file altered (three values each), every 41st of a v7.3 file (HDF5 read it
     * past its buffers: the read runs in a child process, whose death is an error): a status, never a
     * crash */
    for (size_t k = 0; buf && k < len; k += v73 ? 41 : 1) {
        static const unsigned char val[3] = {0x00, 0xff, 0x7f};
        for (int j = 0; j < 3; j++) {
            unsigned char old = (unsigned char)buf[k];
            buf[k] = (char)val[j];
            f = fopen(cut, "wb");
            if (f) fwrite(buf, 1, len, f), fclose(f);
            buf[k] = (char)old;
            double *in = NULL, *out = NULL, r;
            size_t n;
            dpd_error err = {0};
            dpd_status s = dpd_mat_read_pair(cut, NULL, NULL, &in, &out, &n, &r, &err);
            if (s != DPD_OK && (s != DPD_E_FORMAT || !strstr(err.msg, cut)))
                CHECK(0, "%s byte %zu = 0x%02x: %s '%s'", tag, k, val[j], dpd_status_str(s), err.msg);
            if (s == DPD_OK) {
                int fin = 1;
                for (size_t i = 0; i < 2 * n; i++) fin &= isfinite(in[i]) && isfinite(out[i]);
                if (!fin || n == 0) CHECK(0, "%s byte %zu = 0x%02x: a read with %zu samples, not all finite", tag, k, val[j], n);
                free(in), free(out);
            }
        }
    }
    free(buf);
    const char *junk = v73 ? "junk73.mat" : "junk5.mat";
    check_write(d, junk, "MATLAB 5.0 MAT-file, but only the text of a header, and no more than that.\n");
    refused(tag, "not a MAT file", join(d, junk), "not a MATLAB .mat file", NULL);
}

/* A v5 file written byte by byte: variable 'x', double, declared rows x cols (complex when nim >=
 * 0), whose data holds nre real (and nim imaginary) values, zlib-compressed when z. matio reads
 * what the data holds and leaves the rest of its buffer as it was. */
static const char *short_v5(const char *d, const char *name, size_t rows, size_t cols, size_t nre, long nim, int z) {
    size_t nb = 16 + 16 + 8 + 8 + nre * 8 + (nim >= 0 ? 8 + (size_t)nim * 8 : 0), n = 0;
    unsigned char *e = calloc(8 + nb, 1), h[128];
    uint32_t w[6] = {14, (uint32_t)nb, 6, 8, 6 | (nim >= 0 ? 0x800 : 0), 0}; /* miMATRIX; array flags: double */
    memcpy(e, w, sizeof w), n = sizeof w;
    uint32_t dims[4] = {5, 8, (uint32_t)rows, (uint32_t)cols}, nm[2] = {1u << 16 | 1, 'x'}; /* dims; name, small */
    memcpy(e + n, dims, sizeof dims), n += sizeof dims;
    memcpy(e + n, nm, sizeof nm), n += sizeof nm;
    for (int k = 0; k < (nim >= 0 ? 2 : 1); k++) {
        size_t c = k ? (size_t)nim : nre;
        uint32_t t[2] = {9, (uint32_t)(c * 8)}; /* miDOUBLE */
        memcpy(e + n, t, 8), n += 8;
        for (size_t i = 0; i < c; i++) {
            double v = 0.25 * sin(0.1 * (double)i + k);
            memcpy(e + n, &v, 8), n += 8;
        }
    }
    memset(h, ' ', 116), memset(h + 116, 0, 12), memcpy(h, "MATLAB 5.0 MAT-file", 19);
    h[124] = 0, h[125] = 1, h[126] = 'I', h[127] = 'M';
    const char *p = join(d, name);
    FILE *f = fopen(p, "wb");
    if (f) fwrite(h, 1, 128, f);
    if (f && z) {
        uLongf zn = compressBound(n);
        unsigned char *zb = malloc(zn);
        compress2(zb, &zn, e, n, 6);
        uint32_t t[2] = {15, (uint32_t)zn};
        fwrite(t, 1, 8, f), fwrite(zb, 1, zn, f);
        free(zb);
    } else if (f) {
        fwrite(e, 1, n, f);
    }
    if (f) fclose(f);
    free(e);
    return p;
}

/* dpd_mat_read_signal of p refused as DPD_E_FORMAT, no samples, its message holding say. */
static void signal_refused(const char *what, const char *p, const char *say) {
    double *iq = NULL, fs = 0;
    size_t n = 0;
    dpd_error err = {0};
    dpd_status s = dpd_mat_read_signal(p, NULL, NULL, &iq, &n, &fs, &err);
    CHECK(s == DPD_E_FORMAT && !iq && strstr(err.msg, say), "%s: %s '%s'", what, dpd_status_str(s), err.msg);
    free(iq);
}

/* A variable whose data holds fewer values than its dimensions say: refused naming the counts
 * (uncompressed and compressed; real N x 2, and either part of a complex vector), where matio would
 * hand back a buffer partly never written; the same file whole reads back. */
static void short_data(const char *d) {
    static const struct {
        const char *name;
        size_t rows, cols, nre;
        long nim;
        int z;
        const char *say;
    } c[] = {
        {"s_real.mat", 3000, 2, 4000, -1, 0, "(4000 of 6000)"},
        {"s_re.mat", 6000, 1, 4000, 4000, 0, "(its real part 4000 of 6000)"},
        {"s_rez.mat", 6000, 1, 4000, 4000, 1, "(its real part 4000 of 6000)"},
        {"s_im.mat", 6000, 1, 6000, 4000, 0, "(its imaginary part 4000 of 6000)"},
        {"s_imz.mat", 6000, 1, 6000, 4000, 1, "(its imaginary part 4000 of 6000)"},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        const char *p = short_v5(d, c[i].name, c[i].rows, c[i].cols, c[i].nre, c[i].nim, c[i].z);
        char say[160];
        snprintf(say, sizeof say, "%s: variable 'x' holds fewer values than its dimensions say %s", p, c[i].say);
        signal_refused(c[i].name, p, say);
    }
    { /* a real part whose tag claims the 6000 values the dimensions say, over 4000 there (the
       * element ends first): refused, not read on to the file's end */
        const char *p = short_v5(d, "s_lie.mat", 3000, 2, 4000, -1, 0);
        FILE *f = fopen(p, "r+b");
        uint32_t claim = 6000 * 8;
        CHECK(f && !fseek(f, 180, SEEK_SET) && fwrite(&claim, 4, 1, f) == 1, "rewrite the real part's byte count");
        if (f) fclose(f);
        signal_refused("a real part's tag claiming more than follows", p, "variable 'x': its data ends before its own length says");
    }
    { /* a short x behind 2^16 empty variables (farther than the walk goes): refused, never read as
       * matio reads it */
        const char *p = short_v5(d, "s_far.mat", 3000, 2, 4000, -1, 0), *q = join(d, "s_far2.mat");
        FILE *f = fopen(p, "rb"), *g = fopen(q, "wb");
        unsigned char buf[1 << 16];
        size_t k = f ? fread(buf, 1, sizeof buf, f) : 0;
        static const uint32_t empty[14] = {14, 48, 6, 8, 6, 0, 5, 8, 0, 0, 1u << 16 | 1, 'a', 9, 0}; /* a = [] */
        if (g && k > 128) {
            fwrite(buf, 1, 128, g);
            for (int i = 0; i < 1 << 16; i++) fwrite(empty, 4, 14, g);
            fwrite(buf + 128, 1, k - 128, g);
        }
        if (f) fclose(f);
        if (g) fclose(g);
        signal_refused("a short x behind 2^16 variables", q, "more than 65536 elements before variable 'x'");
    }
    for (int z = 0; z < 2; z++) { /* the hand-made file whole: read as written */
        const char *p = short_v5(d, z ? "s_okz.mat" : "s_ok.mat", 6000, 1, 6000, 6000, z);
        double *iq = NULL;
        size_t n = 0;
        dpd_error err = {0};
        double fs = 0;
        dpd_status s = dpd_mat_read_signal(p, NULL, NULL, &iq, &n, &fs, &err);
        CHECK(s == DPD_OK && n == 6000 && iq && iq[2 * 5999] == 0.25 * sin(599.9) && iq[2 * 5999 + 1] == 0.25 * sin(599.9 + 1),
              "whole hand-made v5 file (%s): %s '%s', %zu samples", z ? "compressed" : "plain", dpd_status_str(s), err.msg, n);
        free(iq);
    }
}

static volatile sig_atomic_t children; /* SIGCHLDs seen */
static void on_child(int sig) { (void)sig, children++; }

/* A v7.3 file is read in a child process (one SIGCHLD, the samples as in place), a v5 file in
 * place (none); with dpd_mat_isolate(0) a v7.3 file too. */
static void isolated(const char *d) {
    struct sigaction sa = {.sa_handler = on_child}, old;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGCHLD, &sa, &old);
    const char *p73 = pair_file(d, "iso73.mat", 1, "x", "y", 1e6), *p5 = pair_file(d, "iso5.mat", 0, "x", "y", 1e6);
    int seen[3];
    double *in[3] = {NULL}, *out[3] = {NULL}, fs[3];
    size_t n[3];
    dpd_status s[3];
    dpd_error err = {0};
    for (int k = 0; k < 3; k++) { /* v7.3 in a child, v5, v7.3 with isolation off */
        children = 0;
        if (k == 2) dpd_mat_isolate(0);
        s[k] = dpd_mat_read_pair(k == 1 ? p5 : p73, NULL, NULL, &in[k], &out[k], &n[k], &fs[k], &err);
        seen[k] = children;
    }
    dpd_mat_isolate(1);
    sigaction(SIGCHLD, &old, NULL);
    CHECK(!s[0] && !s[1] && !s[2] && seen[0] == 1 && seen[1] == 0 && seen[2] == 0,
          "children: v7.3 %d, v5 %d, v7.3 not isolated %d (statuses %d %d %d: %s)", seen[0], seen[1], seen[2], s[0], s[1],
          s[2], err.msg);
    CHECK(!s[0] && !s[2] && n[0] == n[2] && fs[0] == fs[2] && !memcmp(in[0], in[2], 2 * n[0] * sizeof(double)) &&
              !memcmp(out[0], out[2], 2 * n[0] * sizeof(double)) && n[0] == n[1] && !memcmp(in[0], in[1], 2 * n[0] * sizeof(double)),
          "a v7.3 file read in a child gives what it gives in place, and what its v5 twin gives");
    for (int k = 0; k < 3; k++) free(in[k]), free(out[k]);
}

/* ---- dpd run's output and recordings in .mat ------------------------------------------------------ */

/* Reads variable name with matio: its class and its n values (complex: interleaved). */
static int mat_get(const char *path, const char *name, enum matio_classes cls, int cplx, size_t rows, size_t cols,
                   void *out) {
    mat_t *m = Mat_Open(path, MAT_ACC_RDONLY);
    matvar_t *v = m ? Mat_VarRead(m, name) : NULL;
    int ok = v && v->class_type == cls && !!v->isComplex == cplx && v->rank == 2 && v->dims[0] == rows &&
             v->dims[1] == cols;
    size_t es = cls == MAT_C_SINGLE ? 4 : 8, n = rows * cols;
    if (ok && cplx) {
        const mat_complex_split_t *z = v->data;
        for (size_t i = 0; i < n; i++) {
            memcpy((char *)out + 2 * i * es, (char *)z->Re + i * es, es);
            memcpy((char *)out + (2 * i + 1) * es, (char *)z->Im + i * es, es);
        }
    } else if (ok) {
        memcpy(out, v->data, n * es);
    }
    Mat_VarFree(v);
    if (m) Mat_Close(m);
    return ok;
}

static void run_output(const char *d, int v73) {
    const char *tag = v73 ? "v7.3" : "v5", *p = join(d, v73 ? "run73.mat" : "run5.mat");
    float y[2 * N];
    double in[2 * N];
    for (int i = 0; i < N; i++)
        y[2 * i] = (float)yr[i], y[2 * i + 1] = (float)yi[i], in[2 * i] = xr[i], in[2 * i + 1] = xi[i];
    dpd_recording_meta wm = {.fs = 122.88e6, .mat73 = v73};
    dpd_error err = {0};
    dpd_status s = dpd_recording_write_meta(p, y, in, N, &wm, &err);
    if (v73 && s == DPD_E_UNSUPPORTED && strstr(err.msg, "without HDF5")) {
        check_skip("record v7.3", err.msg);
        return;
    }
    CHECK(s == DPD_OK, "%s: write: %s", tag, err.msg);
    float gy[2 * N];
    double gx[2 * N], gfs = 0;
    CHECK(mat_get(p, "y", MAT_C_SINGLE, 1, N, 1, gy) && !memcmp(gy, y, sizeof y),
          "%s: y is a complex single column, bit for bit", tag);
    CHECK(mat_get(p, "x", MAT_C_DOUBLE, 1, N, 1, gx) && !memcmp(gx, in, sizeof in),
          "%s: x is a complex double column, bit for bit", tag);
    CHECK(mat_get(p, "fs", MAT_C_DOUBLE, 0, 1, 1, &gfs) && gfs == 122.88e6, "%s: fs %g", tag, gfs);
    mat_t *m = Mat_Open(p, MAT_ACC_RDONLY);
    CHECK(m && Mat_GetVersion(m) == (v73 ? MAT_FT_MAT73 : MAT_FT_MAT5), "%s: the file's version", tag);
    if (m) Mat_Close(m);
    /* read back: the default variable is the input x; --var y gives the output */
    double *iq = NULL;
    size_t n = 0;
    dpd_recording_meta rm = {0};
    CHECK(dpd_recording_read_meta(p, &rm, &iq, &n, &err) == DPD_OK && n == N && !memcmp(iq, in, sizeof in) &&
              rm.fs == 122.88e6, "%s: read back x: %s", tag, err.msg);
    free(iq);
    rm = (dpd_recording_meta){.var = "y"};
    s = dpd_recording_read_meta(p, &rm, &iq, &n, &err);
    int ok = s == DPD_OK && n == N;
    for (int i = 0; ok && i < 2 * N; i++) ok = iq[i] == (double)y[i];
    CHECK(ok, "%s: read back y: %s", tag, err.msg);
    free(iq);
    /* names: given ones, refused ones, none for the input */
    wm = (dpd_recording_meta){.var = "pred", .var_in = "stimulus", .var_fs = "Fs", .fs = 1e6, .mat73 = v73};
    CHECK(dpd_recording_write_meta(p, y, NULL, N, &wm, &err) == DPD_OK && mat_get(p, "pred", MAT_C_SINGLE, 1, N, 1, gy) &&
              mat_get(p, "Fs", MAT_C_DOUBLE, 0, 1, 1, &gfs) && !mat_get(p, "stimulus", MAT_C_DOUBLE, 1, N, 1, gx),
          "%s: given names, no input: %s", tag, err.msg);
    rm = (dpd_recording_meta){0};
    s = dpd_recording_read_meta(p, &rm, &iq, &n, &err);
    CHECK(s == DPD_E_FORMAT && has(err.msg, p, "'x', 'iq', 'input' or 'in'") && strstr(err.msg, "'pred'"),
          "%s: no default signal: %s '%s'", tag, dpd_status_str(s), err.msg);
    wm.var = "2bad";
    s = dpd_recording_write_meta(p, y, NULL, N, &wm, &err);
    CHECK(s == DPD_E_INVAL && !strcmp(err.field, "var") && strstr(err.msg, "'2bad'"), "%s: a bad name: %s", tag, err.msg);
    wm = (dpd_recording_meta){.var = "x", .mat73 = v73};
    s = dpd_recording_write_meta(p, y, in, N, &wm, &err);
    CHECK(s == DPD_E_INVAL && strstr(err.msg, "'x' names two"), "%s: one name twice: %s", tag, err.msg);
    CHECK(access(p, F_OK) == 0 && mat_get(p, "pred", MAT_C_SINGLE, 1, N, 1, gy), "%s: a refused write leaves the file", tag);
    const char *none = join(d, "no/such/dir/out.mat");
    s = dpd_recording_write_meta(none, y, in, N, &wm, &err);
    CHECK(s != DPD_OK && strstr(err.msg, "out.mat") && !strstr(err.msg, ".tmp"), "%s: write into a missing directory: %s",
          tag, err.msg);
}

/* The coefficients of an mp model in comm.DPD's layout: y(n) = sum over m, k of
 * Coefficients(m+1, k+1) x(n-m) |x(n-m)|^k (MATLAB: k = 1..degree with |x|^(k-1)) equals dpd's forward
 * pass; a gmp_ls writes the vector and the term table; a neural model is refused. */
static void model(const char *d, int v73) {
    const char *tag = v73 ? "v7.3" : "v5";
    enum { K = 3, Q = 4, T = 64 };
    dpd_model_cfg c = {.family = "mp", .hidden = 1, .layers = 1, .order = K, .memory = Q};
    dpd_model *m = check_model(&c, NULL);
    float *p = dpd_model_params(m);
    for (int i = 0; i < 2 * K * Q; i++) p[i] = (float)(0.3 * sin(1.7 * i + 0.2) / (1 + i / 4));
    p[0] = 1.1f;
    const char *path = join(d, v73 ? "mp73.mat" : "mp5.mat");
    dpd_error err = {0};
    dpd_status s = dpd_mat_write_model(path, m, v73, &err);
    if (v73 && s == DPD_E_UNSUPPORTED) {
        check_skip("record v7.3 model", err.msg);
        dpd_model_free(m);
        return;
    }
    CHECK(s == DPD_OK, "%s mp: write: %s", tag, err.msg);
    double C[2 * Q * K], coef[2 * K * Q], tk[K * Q], tq[K * Q], tm[K * Q], deg = 0, mem = 0;
    CHECK(mat_get(path, "Coefficients", MAT_C_DOUBLE, 1, Q, K, C), "%s mp: Coefficients is a %d x %d complex matrix", tag,
          Q, K);
    CHECK(mat_get(path, "coef", MAT_C_DOUBLE, 1, K * Q, 1, coef) && mat_get(path, "term_k", MAT_C_DOUBLE, 0, K * Q, 1, tk) &&
              mat_get(path, "term_q", MAT_C_DOUBLE, 0, K * Q, 1, tq) &&
              mat_get(path, "term_m", MAT_C_DOUBLE, 0, K * Q, 1, tm) &&
              mat_get(path, "degree", MAT_C_DOUBLE, 0, 1, 1, &deg) &&
              mat_get(path, "memory_depth", MAT_C_DOUBLE, 0, 1, 1, &mem),
          "%s mp: coef, the term table, degree and memory_depth", tag);
    int same = deg == K && mem == Q;
    for (int i = 0; i < K * Q; i++)
        same &= coef[2 * i] == p[2 * i] && coef[2 * i + 1] == p[2 * i + 1] && tm[i] == 0 &&
                C[2 * ((int)tq[i] + Q * (int)tk[i])] == p[2 * i] && C[2 * ((int)tq[i] + Q * (int)tk[i]) + 1] == p[2 * i + 1];
    CHECK(same, "%s mp: coef bit for bit, and Coefficients(q+1, k+1) = coef of term (k, q)", tag);
    /* MATLAB's memory polynomial with Coefficients (column-major: element (r, c) at r + c Q) against dpd */
    float x[2 * T], y[2 * T];
    for (int i = 0; i < T; i++) x[2 * i] = (float)(0.6 * sin(0.31 * i)), x[2 * i + 1] = (float)(0.5 * cos(0.17 * i + 1));
    const dpd_kv o[4] = {{"provider", "cpu"}, {"threads", "1"}, {"max_batch", "1"}, {"max_frame", "64"}};
    dpd_session *ss = NULL;
    CHECK(dpd_session_create(m, o, 4, &ss, &err) == DPD_OK && dpd_session_forward(ss, x, 1, T, y, &err) == DPD_OK,
          "mp forward: %s", err.msg);
    double worst = 0;
    for (int n = 0; n < T; n++) {
        double ar = 0, ai = 0;
        for (int q = 0; q < Q && q <= n; q++)
            for (int k = 1; k <= K; k++) {
                double ur = x[2 * (n - q)], ui = x[2 * (n - q) + 1], e = pow(hypot(ur, ui), k - 1);
                double cr = C[2 * (q + Q * (k - 1))], ci = C[2 * (q + Q * (k - 1)) + 1];
                ar += (cr * ur - ci * ui) * e, ai += (cr * ui + ci * ur) * e;
            }
        worst = fmax(worst, hypot(ar - y[2 * n], ai - y[2 * n + 1]));
    }
    CHECK(worst < 1e-5, "%s mp: comm.DPD's memory polynomial with Coefficients differs from dpd's forward by %g", tag, worst);
    dpd_session_free(ss);
    dpd_model_free(m);

    c = (dpd_model_cfg){.family = "gmp_ls", .hidden = 1, .layers = 1, .order = K, .memory = 2, .cross = 1};
    m = check_model(&c, NULL);
    int P = (int)(dpd_model_nparams(m) / 2);
    p = dpd_model_params(m);
    for (int i = 0; i < 2 * P; i++) p[i] = (float)i / 8;
    path = join(d, v73 ? "gmp73.mat" : "gmp5.mat");
    double *gc = malloc(4 * (size_t)P * sizeof *gc), *gm = gc + 2 * P, cross = 0;
    CHECK(dpd_mat_write_model(path, m, v73, &err) == DPD_OK && mat_get(path, "coef", MAT_C_DOUBLE, 1, P, 1, gc) &&
              mat_get(path, "term_m", MAT_C_DOUBLE, 0, P, 1, gm) && mat_get(path, "cross", MAT_C_DOUBLE, 0, 1, 1, &cross),
          "%s gmp_ls: write and read: %s", tag, err.msg);
    int lead = 0, lag = 0;
    for (int i = 0; i < P; i++) lead += gm[i] == -1, lag += gm[i] == 1;
    CHECK(gc[2 * (P - 1) + 1] == (2.0 * P - 1) / 8 && cross == 1 && lead == 4 && lag == 4,
          "%s gmp_ls: %d terms, m = -1 x%d, +1 x%d", tag, P, lead, lag);
    mat_t *mm = Mat_Open(path, MAT_ACC_RDONLY);
    matvar_t *v = mm ? Mat_VarReadInfo(mm, "Coefficients") : NULL;
    CHECK(mm && !v, "%s gmp_ls: no Coefficients matrix (comm.DPD has no GMP)", tag);
    Mat_VarFree(v);
    if (mm) Mat_Close(mm);
    free(gc);
    dpd_model_free(m);
    c = (dpd_model_cfg){.family = "gru", .hidden = 4, .layers = 1};
    m = check_model(&c, NULL);
    s = dpd_mat_write_model(path, m, v73, &err);
    CHECK(s == DPD_E_UNSUPPORTED && strstr(err.msg, "gru"), "%s: a gru has no coefficients: %s", tag, err.msg);
    dpd_model_free(m);
}

/* ---- SigMF ---------------------------------------------------------------------------------------- */

static json_t *meta_of(const char *path) { return check_json(path); }

static void sigmf_refused(const char *what, const char *path, dpd_status want, const char *a, const char *b) {
    double *iq = NULL;
    size_t n = 0;
    dpd_error err = {0};
    dpd_status s = dpd_recording_read(path, &iq, &n, &err);
    CHECK(s == want && !iq && !n, "%s: %s, want %s (%s)", what, dpd_status_str(s), dpd_status_str(want), err.msg);
    CHECK(has(err.msg, a, b), "%s: message '%s' lacks '%s' or '%s'", what, err.msg, a, b ? b : "");
    if (!s) free(iq);
}

static void sigmf(const char *d) {
    float y[2 * N];
    for (int i = 0; i < 2 * N; i++) y[i] = (float)(i % 2 ? yi[i / 2] : yr[i / 2]);
    const char *data = join(d, "cap.sigmf-data"), *mp = join(d, "cap.sigmf-meta");
    dpd_recording_meta wm = {.fs = 61.44e6, .freq = 3.5e9, .description = "a test capture",
                             .model = "runs/x/best.safetensors", .run_id = "PA_S_0_M_GRU_H_4"};
    dpd_error err = {0};
    CHECK(!strcmp(dpd_recording_format(data), "sigmf") && !strcmp(dpd_recording_format(mp), "sigmf") &&
              !strcmp(dpd_recording_format("a.mat"), "mat") && !strcmp(dpd_recording_format("a.cf32"), "cf32") &&
              !strcmp(dpd_recording_format("a.csv"), "csv") && !strcmp(dpd_recording_format("a.sigmf"), "csv"),
          "dpd_recording_format");
    CHECK(dpd_recording_write_meta(data, y, NULL, N, &wm, &err) == DPD_OK, "sigmf write: %s", err.msg);
    json_t *j = meta_of(mp), *g = json_object_get(j, "global"), *c0 = json_array_get(json_object_get(j, "captures"), 0);
    CHECK(g && !strcmp(json_string_value(json_object_get(g, "core:datatype")), "cf32_le") &&
              json_number_value(json_object_get(g, "core:sample_rate")) == 61.44e6 &&
              !strcmp(json_string_value(json_object_get(g, "core:version")), "1.0.0") &&
              !strcmp(json_string_value(json_object_get(g, "core:description")), "a test capture") &&
              strstr(json_string_value(json_object_get(g, "core:recorder")), "dpd ") &&
              !strcmp(json_string_value(json_object_get(g, "dpd:model")), "runs/x/best.safetensors") &&
              !strcmp(json_string_value(json_object_get(g, "dpd:run_id")), "PA_S_0_M_GRU_H_4") &&
              !strcmp(json_string_value(json_object_get(json_array_get(json_object_get(g, "core:extensions"), 0), "name")),
                      "dpd"),
          "sigmf: global fields");
    CHECK(json_integer_value(json_object_get(c0, "core:sample_start")) == 0 &&
              json_number_value(json_object_get(c0, "core:frequency")) == 3.5e9 &&
              json_array_size(json_object_get(j, "annotations")) == 0 && json_is_array(json_object_get(j, "annotations")),
          "sigmf: captures and annotations");
    json_decref(j);
    FILE *f = fopen(data, "rb");
    float raw[2 * N + 1];
    size_t got = f ? fread(raw, sizeof *raw, 2 * N + 1, f) : 0;
    if (f) fclose(f);
    CHECK(got == 2 * N && !memcmp(raw, y, sizeof y), "sigmf: the data file is the cf32_le samples alone");
    for (int k = 0; k < 2; k++) {
        double *iq = NULL;
        size_t n = 0;
        dpd_recording_meta rm = {0};
        dpd_status s = dpd_recording_read_meta(k ? mp : data, &rm, &iq, &n, &err);
        int ok = s == DPD_OK && n == N && rm.fs == 61.44e6 && rm.freq == 3.5e9;
        for (int i = 0; ok && i < 2 * N; i++) ok = iq[i] == (double)y[i];
        CHECK(ok, "sigmf: read back through the %s path: %s", k ? ".sigmf-meta" : ".sigmf-data", err.msg);
        free(iq);
    }
    /* the metadata refused, each by its field */
#define G "{\"global\": {\"core:datatype\": \"cf32_le\"" /* a global object, open */
    static const struct {
        const char *what, *json, *a, *b;
    } cases[] = {
        {"ci16_le", "{\"global\": {\"core:datatype\": \"ci16_le\", \"core:version\": \"1.0.0\"}}", "core:datatype",
         "\"ci16_le\""},
        {"no datatype", "{\"global\": {\"core:sample_rate\": 1e6}}", "core:datatype is missing", NULL},
        {"datatype a number", "{\"global\": {\"core:datatype\": 5}}", "core:datatype is not a string", NULL},
        {"no global", "{\"captures\": []}", "no \"global\" object", NULL},
        {"global an array", "{\"global\": []}", "no \"global\" object", NULL},
        {"sample_rate a string", G ", \"core:sample_rate\": \"1e6\"}}", "core:sample_rate", NULL},
        {"sample_rate negative", G ", \"core:sample_rate\": -1}}", "core:sample_rate", NULL},
        {"two channels", G ", \"core:num_channels\": 2}}", "core:num_channels", NULL},
        {"metadata only", G ", \"core:metadata_only\": true}}", "metadata_only", NULL},
        {"captures an object", G "}, \"captures\": {}}", "captures must be an array", NULL},
        {"capture a number", G "}, \"captures\": [7]}", "captures[0]", NULL},
        {"frequency a string", G "}, \"captures\": [{\"core:frequency\": \"2.4G\"}]}", "core:frequency", NULL},
        {"not JSON", G ",}", "not valid JSON", NULL},
        {"trailing text", G "}} x", "not valid JSON", NULL},
        {"empty", "", "not valid JSON", NULL},
        {"a list", "[1, 2]", "no \"global\" object", NULL},
        {"duplicate key", G ", \"core:datatype\": \"ci8\"}}", "not valid JSON", NULL},
    };
#undef G
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        check_write(d, "cap.sigmf-meta", cases[i].json);
        sigmf_refused(cases[i].what, data, DPD_E_FORMAT, cases[i].a, cases[i].b);
        sigmf_refused(cases[i].what, data, DPD_E_FORMAT, mp, NULL);
    }
    check_write(d, "cap.sigmf-meta", "{\"global\": {\"core:datatype\": \"cf32_le\"}}");
    double *iq = NULL;
    size_t n = 0;
    dpd_recording_meta rm = {.fs = 7, .freq = 7};
    CHECK(dpd_recording_read_meta(data, &rm, &iq, &n, &err) == DPD_OK && n == N && rm.fs == 0 && rm.freq == 0,
          "sigmf: the least metadata (datatype alone): %s", err.msg);
    free(iq);
    CHECK(unlink(mp) == 0, "unlink");
    sigmf_refused("no .sigmf-meta", data, DPD_E_IO, mp, "its metadata");
    /* writing needs the sample rate; a bare .cf32 reads without one */
    wm.fs = 0;
    dpd_status s = dpd_recording_write_meta(data, y, NULL, N, &wm, &err);
    CHECK(s == DPD_E_INVAL && !strcmp(err.field, "fs") && strstr(err.msg, "sample rate"), "sigmf: write without fs: %s",
          err.msg);
    CHECK(access(mp, F_OK) != 0, "sigmf: a refused write leaves no metadata");
    const char *raw32 = join(d, "bare.cf32");
    rm = (dpd_recording_meta){.fs = 5};
    CHECK(dpd_recording_write(raw32, y, NULL, N, &err) == DPD_OK &&
              dpd_recording_read_meta(raw32, &rm, &iq, &n, &err) == DPD_OK && n == N && rm.fs == 0,
          "a bare .cf32 reads with no sample rate: %s", err.msg);
    free(iq);
}

/* ---- waveform presets ----------------------------------------------------------------------------- */

static void preset(const char *name, double fs, int nperseg, int subcarriers, double bw, double in_band) {
    dpd_synth_cfg c;
    dpd_synth_defaults(&c);
    c.snr_db = 60, c.seed = 3;
    dpd_error err = {0};
    CHECK(dpd_synth_preset(&c, name, &err) == DPD_OK && c.fs == fs && c.nperseg == nperseg && c.snr_db == 60 && c.seed == 3,
          "%s: fs %g, nperseg %d, the PA fields kept: %s", name, c.fs, c.nperseg, err.msg);
    double *x = NULL, *y = NULL;
    if (dpd_synth_generate(&c, &x, &y, &err)) {
        CHECK(0, "%s: generate: %s", name, err.msg);
        return;
    }
    /* one symbol's spectrum: the occupied subcarriers and the band they span */
    int Nf = c.nperseg, used = 0, lo = Nf, hi = -Nf;
    kiss_fft_cfg fft = kiss_fft_alloc(Nf, 0, NULL, NULL);
    kiss_fft_cpx *a = malloc(2 * (size_t)Nf * sizeof *a), *b = a + Nf;
    for (int i = 0; i < Nf; i++) a[i].r = (float)x[2 * i], a[i].i = (float)x[2 * i + 1];
    kiss_fft(fft, a, b);
    double peak = 0;
    for (int k = 0; k < Nf; k++) peak = fmax(peak, hypot(b[k].r, b[k].i));
    for (int k = 0; k < Nf; k++) {
        if (hypot(b[k].r, b[k].i) < 1e-3 * peak) continue;
        int f = k < Nf / 2 ? k : k - Nf; /* signed bin */
        used++, lo = f < lo ? f : lo, hi = f > hi ? f : hi;
    }
    double df = c.fs / Nf;
    CHECK(used == subcarriers, "%s: %d occupied subcarriers, want %d", name, used, subcarriers);
    CHECK(fabs((hi - lo) * df - bw) < df / 2, "%s: the occupied subcarriers span %.4f MHz, want %.4f", name,
          (hi - lo) * df / 1e6, bw / 1e6);
    free(a);
    kiss_fft_free(fft);
    /* the PA output's power inside the channel (its regrowth outside), from dpd_psd */
    int S = (int)(c.length / (size_t)Nf);
    float *sig = malloc(c.length * 2 * sizeof *sig);
    double *db = malloc((size_t)Nf * sizeof *db), *fr = malloc((size_t)Nf * sizeof *fr), inside = 0, all = 0;
    for (size_t i = 0; i < 2 * c.length; i++) sig[i] = (float)y[i];
    CHECK(dpd_psd(sig, S, Nf, c.fs, fr, db, &err) == DPD_OK, "%s: psd: %s", name, err.msg);
    for (int k = 0; k < Nf; k++) {
        double p = pow(10, db[k] / 10);
        all += p;
        if (fabs(fr[k]) <= c.carriers * c.carrier_bw / 2) inside += p;
    }
    CHECK(inside / all > in_band, "%s: %.4f of the PA output's power inside the channel, want > %g", name, inside / all,
          in_band);
    free(sig), free(db), free(fr), free(x), free(y);
}

static void presets(void) {
    preset("lte20", 122.88e6, 8192, 1200, 18e6, 0.99);
    preset("nr100", 491.52e6, 16384, 3276, 98.28e6, 0.99);
    preset("ofdm-mc", 800e6, 2560, 560, 197.5e6, 0.99); /* 10 carriers x 56 of 312.5 kHz, +-98.75 MHz */
    dpd_synth_cfg a, b;
    dpd_synth_defaults(&a);
    dpd_synth_defaults(&b);
    dpd_error err = {0};
    CHECK(dpd_synth_preset(&b, "ofdm-mc", &err) == DPD_OK && !memcmp(&a, &b, sizeof a), "ofdm-mc is the defaults");
    b.qam = 7;
    dpd_status s = dpd_synth_preset(&b, "lte5", &err);
    CHECK(s == DPD_E_INVAL && !strcmp(err.field, "preset") && has(err.msg, "'lte5'", "lte20") && b.qam == 7,
          "an unknown preset: %s '%s'", dpd_status_str(s), err.msg);
    double *x = NULL, *y = NULL;
    b = a, b.qam = 7;
    s = dpd_synth_generate(&b, &x, &y, &err);
    CHECK(s == DPD_E_INVAL && !strcmp(err.field, "qam") && !x && !y, "generate: a bad qam: %s", err.msg);
    /* the same configuration, the same capture */
    double *x2 = NULL, *y2 = NULL;
    a.length = 12800;
    CHECK(dpd_synth_generate(&a, &x, &y, &err) == DPD_OK && dpd_synth_generate(&a, &x2, &y2, &err) == DPD_OK &&
              !memcmp(x, x2, a.length * 2 * sizeof *x) && !memcmp(y, y2, a.length * 2 * sizeof *y),
          "generate is deterministic: %s", err.msg);
    free(x), free(y), free(x2), free(y2);
}

int main(void) {
    const char *d = check_tmpdir();
    fill();
    for (int v73 = 0; v73 < 2; v73++) {
        run_output(d, v73);
        pair(d, v73);
        bad(d, v73);
        model(d, v73);
    }
    short_data(d);
    isolated(d);
    sigmf(d);
    presets();
    return check_done("record");
}
