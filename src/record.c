/* record: recordings for `dpd run` and front ends — an OpenDPD-style CSV (columns I and Q found
 * by name, others ignored), raw little-endian interleaved float32 IQ (.cf32), a SigMF cf32_le
 * recording (X.sigmf-data with its JSON sidecar X.sigmf-meta) or a MATLAB .mat file (mat.c). The
 * path's ending says which (docs/formats.md). Reading validates every sample and the metadata dpd
 * relies on (a SigMF datatype other than cf32_le is refused by name); writing is atomic (each
 * file appears whole or not at all). It does not read SigMF archives (.sigmf) or multi-channel
 * recordings. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dataset.h"
#include "dpd/dpd.h"
#include "file.h"
#include "mat.h"
#include "status.h"

#define MAX_SIGMF_META_BYTES (64ull << 20) /* a .sigmf-meta: JSON, with room for many annotations */

typedef enum { REC_CSV, REC_CF32, REC_SIGMF, REC_MAT } rec_kind;

static int ends(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n > k && !strcmp(s + n - k, suffix);
}

static int ends_caseless(const char *s, const char *suffix) { /* OUT.MAT and REC.CF32 as well */
    size_t n = strlen(s), k = strlen(suffix);
    return n > k && !strcasecmp(s + n - k, suffix);
}

/* SigMF's endings are lower case by its standard (a pair is found by them); .cf32 and .mat in any case. */
static rec_kind kind_of(const char *path) {
    return ends_caseless(path, ".cf32") ? REC_CF32
         : ends(path, ".sigmf-data") || ends(path, ".sigmf-meta") ? REC_SIGMF
         : ends_caseless(path, ".mat") ? REC_MAT : REC_CSV;
}

const char *dpd_recording_format(const char *path) {
    static const char *const name[] = {"csv", "cf32", "sigmf", "mat"};
    return name[kind_of(path)];
}

/* Streams the file in bounded chunks straight into the float64 output (never the whole file in
 * memory twice); at most DPD_MAX_CF32_BYTES. what names the kind of file for messages. */
static dpd_status read_cf32(const char *path, const char *what, double **iq, size_t *n, dpd_error *err) {
    int fd;
    uint64_t len;
    dpd_status s = dpd_file_open(path, DPD_MAX_CF32_BYTES, what, &fd, &len, err);
    if (s) return s;
    if (len == 0 || len % 8) {
        close(fd);
        return dpd_fail(err, DPD_E_FORMAT, "%s: %llu bytes is %s I/Q float32 pairs (8 bytes each)", path,
                        (unsigned long long)len, len ? "not a whole number of" : "empty: no");
    }
    size_t m = (size_t)(len / 8);
    double *v = malloc(m * 2 * sizeof *v);
    if (!v) {
        close(fd);
        return dpd_fail(err, DPD_E_NOMEM, "%s: out of memory for %zu samples", path, m);
    }
    enum { CHUNK = 8192 }; /* floats per read: 32 KiB */
    float chunk[CHUNK];
    size_t i = 0; /* floats converted so far */
    while (i < 2 * m) {
        size_t want = 2 * m - i < CHUNK ? 2 * m - i : CHUNK, got = 0;
        while (got < want * 4) {
            ssize_t r = read(fd, (char *)chunk + got, want * 4 - got);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) {
                s = r < 0 ? dpd_fail(err, DPD_E_IO, "%s: read error: %s", path, strerror(errno))
                          : dpd_fail(err, DPD_E_IO, "%s: shrank to %zu bytes while read (was %llu)", path,
                                     4 * i + got, (unsigned long long)len);
                goto fail;
            }
            got += (size_t)r;
        }
        for (size_t k = 0; k < want; k++, i++) {
            if (!isfinite(chunk[k])) {
                s = dpd_fail(err, DPD_E_FORMAT, "%s: sample %zu (byte %zu) has a non-finite %s value", path, i / 2,
                             4 * i, i % 2 ? "Q" : "I");
                goto fail;
            }
            v[i] = chunk[k];
        }
    }
    close(fd);
    *iq = v, *n = m;
    return DPD_OK;
fail:
    close(fd);
    free(v);
    return s;
}

/* ---- SigMF (sigmf.org, v1.0.0): cf32_le only ------------------------------------------------------ */

/* X.sigmf-data and X.sigmf-meta of a path naming either (both endings are 11 characters). */
static void sigmf_paths(const char *path, char *data, char *meta, size_t n) {
    int base = (int)(strlen(path) - strlen(".sigmf-data"));
    snprintf(data, n, "%.*s.sigmf-data", base, path);
    snprintf(meta, n, "%.*s.sigmf-meta", base, path);
}

/* The metadata dpd relies on: global core:datatype cf32_le, core:sample_rate (a positive number
 * when present), core:num_channels 1 when present, not metadata-only, captures[0] core:frequency
 * (a number when present). *fs and *freq: 0 when absent. */
static dpd_status sigmf_meta(const char *mp, json_t *j, double *fs, double *freq, dpd_error *err) {
    json_t *g = json_object_get(j, "global"), *caps = json_object_get(j, "captures");
    if (!json_is_object(g))
        return dpd_fail(err, DPD_E_FORMAT, "%s: no \"global\" object (every SigMF metadata file has one)", mp);
    json_t *dt = json_object_get(g, "core:datatype"), *sr = json_object_get(g, "core:sample_rate"),
           *nc = json_object_get(g, "core:num_channels"), *c0 = json_array_get(caps, 0),
           *f = json_object_get(c0, "core:frequency");
    if (!json_is_string(dt))
        return dpd_fail(err, DPD_E_FORMAT, "%s: global core:datatype is %s; dpd reads cf32_le (complex float32, "
                        "little-endian)", mp, dt ? "not a string" : "missing");
    if (strcmp(json_string_value(dt), "cf32_le"))
        return dpd_fail(err, DPD_E_FORMAT, "%s: global core:datatype is \"%.40s\"; dpd reads only cf32_le (complex "
                        "float32, little-endian): convert the recording", mp, json_string_value(dt));
    if (sr && !(json_is_number(sr) && json_number_value(sr) > 0 && isfinite(json_number_value(sr))))
        return dpd_fail(err, DPD_E_FORMAT, "%s: global core:sample_rate must be a positive number of Hz", mp);
    if (nc && !(json_is_integer(nc) && json_integer_value(nc) == 1))
        return dpd_fail(err, DPD_E_FORMAT, "%s: global core:num_channels must be 1: dpd reads one channel", mp);
    if (json_is_true(json_object_get(g, "core:metadata_only")))
        return dpd_fail(err, DPD_E_FORMAT, "%s: global core:metadata_only is true: the recording has no samples", mp);
    if (caps && !json_is_array(caps))
        return dpd_fail(err, DPD_E_FORMAT, "%s: captures must be an array", mp);
    if (c0 && !json_is_object(c0))
        return dpd_fail(err, DPD_E_FORMAT, "%s: captures[0] must be an object", mp);
    if (f && !(json_is_number(f) && isfinite(json_number_value(f))))
        return dpd_fail(err, DPD_E_FORMAT, "%s: captures[0] core:frequency must be a number of Hz", mp);
    size_t k;
    json_t *ck;
    json_array_foreach(caps, k, ck) { /* what would change how the samples are read: refused, not ignored */
        json_t *hb = json_object_get(ck, "core:header_bytes"), *fk = json_object_get(ck, "core:frequency");
        if (hb && !(json_is_integer(hb) && json_integer_value(hb) == 0))
            return dpd_fail(err, DPD_E_FORMAT, "%s: captures[%zu] core:header_bytes is not 0: dpd reads the data file as "
                            "samples from its first byte to its last; strip the header bytes from the data file", mp, k);
        if (k && fk && !(f && json_is_number(fk) && json_number_value(fk) == json_number_value(f)))
            return dpd_fail(err, DPD_E_FORMAT, "%s: captures[%zu] core:frequency is not captures[0]'s: the recording "
                            "retunes, and a model applies to one carrier; split it at the capture's core:sample_start",
                            mp, k);
    }
    *fs = sr ? json_number_value(sr) : 0;
    *freq = f ? json_number_value(f) : 0;
    return DPD_OK;
}

static dpd_status read_sigmf(const char *path, double **iq, size_t *n, double *fs, double *freq, dpd_error *err) {
    char data[4200], mp[4200], *text;
    size_t len;
    sigmf_paths(path, data, mp, sizeof data);
    struct stat sb;
    if (stat(mp, &sb) && errno == ENOENT) /* the pair's other half: said as such */
        return dpd_fail(err, DPD_E_IO, "%s: a SigMF recording is two files, and its metadata %s is missing (it gives the "
                                       "sample type and rate; dpd synth --sigmf and dpd run write both)", data, mp);
    dpd_status s = dpd_file_read_max(mp, MAX_SIGMF_META_BYTES, "SigMF metadata file", &text, &len, err);
    if (s) return s;
    json_error_t je;
    json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    free(text);
    if (!j) return dpd_fail(err, DPD_E_FORMAT, "%s:%d: not valid JSON: %s", mp, je.line, je.text);
    s = sigmf_meta(mp, j, fs, freq, err);
    json_decref(j);
    return s ? s : read_cf32(data, "SigMF data file", iq, n, err);
}

/* s as a JSON string; bytes that are not UTF-8 (a path's) become '?'. */
static json_t *jstr(const char *s) {
    json_t *j = json_string(s);
    if (j) return j;
    char b[4200];
    size_t k = 0;
    for (; *s && k + 1 < sizeof b; s++) b[k++] = (unsigned char)*s < 0x80 ? *s : '?';
    b[k] = 0;
    return json_string(b);
}

static dpd_status write_cf32(const char *path, const float *y, size_t n, dpd_error *err) {
    dpd_afile a;
    dpd_status s = dpd_afile_open(&a, path, err);
    if (s) return s;
    if (fwrite(y, sizeof *y, 2 * n, a.f) != 2 * n) {
        dpd_afile_abort(&a);
        return dpd_fail(err, DPD_E_IO, "%s: write failed", path);
    }
    return dpd_afile_commit(&a, err);
}

/* The data, then the metadata (a reader that finds the .sigmf-meta finds its data whole); the data
 * is removed again when the metadata cannot be written. */
static dpd_status write_sigmf(const char *path, const float *y, size_t n, const dpd_recording_meta *m,
                              dpd_error *err) {
    if (!m || !(m->fs > 0) || !isfinite(m->fs))
        return dpd_fail_field(err, "fs", DPD_E_INVAL, "fs: unknown: a SigMF recording (%s) records its sample rate "
                              "(core:sample_rate): give it", path);
    char data[4200], mp[4200];
    sigmf_paths(path, data, mp, sizeof data);
    json_t *j = json_pack("{s:{s:s, s:f, s:s, s:i, s:s}, s:[{s:i}], s:[]}", "global", "core:datatype", "cf32_le",
                          "core:sample_rate", m->fs, "core:version", "1.0.0", "core:num_channels", 1, "core:recorder",
                          "dpd " DPD_VERSION, "captures", "core:sample_start", 0, "annotations");
    json_t *g = json_object_get(j, "global"), *cap = json_array_get(json_object_get(j, "captures"), 0);
    if (j && m->description) json_object_set_new(g, "core:description", jstr(m->description));
    if (j && (m->model || m->run_id)) /* dpd's own fields, in a namespace declared as SigMF asks */
        json_object_set_new(g, "core:extensions", json_pack("[{s:s, s:s, s:b}]", "name", "dpd", "version", "1.0.0",
                                                            "optional", 1));
    if (j && m->model) json_object_set_new(g, "dpd:model", jstr(m->model));
    if (j && m->run_id) json_object_set_new(g, "dpd:run_id", jstr(m->run_id));
    if (j && m->freq != 0) json_object_set_new(cap, "core:frequency", json_real(m->freq));
    char *text = j ? json_dumps(j, JSON_INDENT(4) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(j);
    if (!text) return dpd_fail(err, DPD_E_NOMEM, "%s: cannot encode the SigMF metadata", mp);
    size_t len = strlen(text);
    text[len] = '\n'; /* json_dumps leaves room for the NUL we overwrite; write len + 1 bytes */
    dpd_status s = write_cf32(data, y, n, err);
    if (!s && (s = dpd_file_write(mp, text, len + 1, err))) unlink(data);
    free(text);
    return s;
}

/* ---- every format ---------------------------------------------------------------------------- */

dpd_status dpd_recording_read_meta(const char *path, dpd_recording_meta *meta, double **iq, size_t *n,
                                   dpd_error *err) {
    double fs = 0, freq = 0;
    int pos = 0;
    dpd_status s;
    *iq = NULL, *n = 0;
    switch (kind_of(path)) {
    case REC_CF32: s = read_cf32(path, ".cf32 recording", iq, n, err); break;
    case REC_SIGMF: s = read_sigmf(path, iq, n, &fs, &freq, err); break;
    case REC_MAT:
        s = dpd_mat_read_signal(path, meta ? meta->var : NULL, meta ? meta->var_fs : NULL, iq, n, &fs, err);
        break;
    default:
        if (ends_caseless(path, ".sigmf") || ends_caseless(path, ".sigmf-data") || ends_caseless(path, ".sigmf-meta"))
            s = dpd_fail(err, DPD_E_FORMAT, "%s: %s", path, ends_caseless(path, ".sigmf")
                             ? "a SigMF archive (a tar of the recording's files) is not read: extract it (tar xf) and "
                               "give its .sigmf-data"
                             : "a SigMF file's ending is lower case by the standard (.sigmf-data, .sigmf-meta)");
        else s = dpd_csv_read_iq(path, iq, n, &pos, err);
    }
    if (meta) meta->fs = s ? 0 : fs, meta->freq = s ? 0 : freq, meta->by_position = pos;
    return s;
}

dpd_status dpd_recording_read(const char *path, double **iq, size_t *n, dpd_error *err) {
    return dpd_recording_read_meta(path, NULL, iq, n, err);
}

/* Shortest of %.15g / %.17g that reads back to v. */
static void put_double(FILE *f, double v) {
    char b[40];
    snprintf(b, sizeof b, "%.15g", v);
    if (strtod(b, NULL) != v) snprintf(b, sizeof b, "%.17g", v);
    fputs(b, f);
}

static dpd_status write_csv(const char *path, const float *y, const double *in, size_t n, dpd_error *err) {
    dpd_afile a;
    dpd_status s = dpd_afile_open(&a, path, err);
    if (s) return s;
    fputs(in ? "I,Q,I_in,Q_in\n" : "I,Q\n", a.f);
    for (size_t i = 0; i < n; i++) {
        fprintf(a.f, "%.9g,%.9g", y[2 * i], y[2 * i + 1]);
        if (in) {
            fputc(',', a.f);
            put_double(a.f, in[2 * i]);
            fputc(',', a.f);
            put_double(a.f, in[2 * i + 1]);
        }
        fputc('\n', a.f);
    }
    return dpd_afile_commit(&a, err);
}

dpd_status dpd_recording_write_meta(const char *path, const float *y, const double *in, size_t n,
                                    const dpd_recording_meta *meta, dpd_error *err) {
    switch (kind_of(path)) {
    case REC_CF32: return write_cf32(path, y, n, err);
    case REC_SIGMF: return write_sigmf(path, y, n, meta, err);
    case REC_MAT: return dpd_mat_write_signal(path, y, in, n, meta, err);
    default: return write_csv(path, y, in, n, err);
    }
}

dpd_status dpd_recording_write(const char *path, const float *y, const double *in, size_t n, dpd_error *err) {
    return dpd_recording_write_meta(path, y, in, n, NULL, err);
}
