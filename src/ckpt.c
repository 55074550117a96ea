/* ckpt: see ckpt.h and docs/formats.md. */
#include "ckpt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#include "family.h"
#include "file.h"
#include "run.h"
#include "status.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors data is little-endian");

#define MAX_HEADER (64u << 20)

static json_t *tensor_entry(const int *shape, int ndim, size_t *off, size_t numel) {
    json_t *e = json_object(), *sh = json_array();
    for (int d = 0; d < ndim; d++) json_array_append_new(sh, json_integer(shape[d]));
    json_object_set_new(e, "dtype", json_string("F32"));
    json_object_set_new(e, "shape", sh);
    json_object_set_new(e, "data_offsets",
                        json_pack("[II]", (json_int_t)*off, (json_int_t)(*off + numel * 4)));
    *off += numel * 4;
    return e;
}

dpd_status dpd_ckpt_save(const char *path, const dpd_model *m, const dpd_kv *meta, int nmeta,
                         int nextra, const char *const *extra_names, const float *const *extra,
                         const size_t *extra_len, dpd_error *err) {
    const dpd_model_cfg *c = dpd_model_config(m);
    json_t *hdr = json_object(), *md = json_object();
    json_object_set_new(md, "format", json_string("dpd"));
    json_object_set_new(md, "dpd_version", json_string(DPD_VERSION));
    dpd_config_model_meta(c, md);
    for (int i = 0; i < nmeta; i++) json_object_set_new(md, meta[i].key, json_string(meta[i].value));
    json_object_set_new(hdr, "__metadata__", md);
    size_t off = 0;
    for (int i = 0; i < dpd_model_ntensors(m); i++) {
        const dpd_tensor *t = dpd_model_tensor(m, i);
        json_object_set_new(hdr, t->name, tensor_entry(t->shape, t->ndim, &off, t->numel));
    }
    for (int i = 0; i < nextra; i++) {
        int shape = (int)extra_len[i];
        json_object_set_new(hdr, extra_names[i], tensor_entry(&shape, 1, &off, extra_len[i]));
    }
    char *text = json_dumps(hdr, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(hdr);
    if (!text) return dpd_fail(err, DPD_E_NOMEM, "%s: cannot encode the header", path);
    size_t hl = strlen(text), padded = (hl + 7) / 8 * 8;
    dpd_afile a;
    dpd_status s = dpd_afile_open(&a, path, err);
    if (s) {
        free(text);
        return s;
    }
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)padded >> (8 * i));
    int ok = fwrite(len8, 1, 8, a.f) == 8 && fwrite(text, 1, hl, a.f) == hl;
    for (size_t i = hl; ok && i < padded; i++) ok = fputc(' ', a.f) != EOF;
    free(text);
    const float *p = dpd_model_params((dpd_model *)m);
    for (int i = 0; ok && i < dpd_model_ntensors(m); i++) {
        const dpd_tensor *t = dpd_model_tensor(m, i);
        ok = fwrite(p + t->offset, 4, t->numel, a.f) == t->numel;
    }
    for (int i = 0; ok && i < nextra; i++) ok = fwrite(extra[i], 4, extra_len[i], a.f) == extra_len[i];
    if (!ok) {
        dpd_afile_abort(&a);
        return dpd_fail(err, DPD_E_IO, "%s: write failed", path);
    }
    return dpd_afile_commit(&a, err);
}

void dpd_ckpt_close(dpd_ckpt *c) {
    if (!c) return;
    json_decref(c->hdr);
    free(c->buf);
    c->hdr = NULL;
    c->buf = NULL;
}

/* name: the tensor at fault, or the metadata key when meta (NULL: none). */
static dpd_status bad_entry(dpd_ckpt *c, dpd_error *err, const char *what, const char *name, int meta) {
    dpd_fail(err, DPD_E_FORMAT, "%s: not a valid checkpoint: %s%s%s%s", c->path, what,
             name ? meta ? " (metadata key '" : " (tensor '" : "", name ? name : "", name ? "')" : "");
    dpd_ckpt_close(c);
    return DPD_E_FORMAT;
}

static dpd_status bad(dpd_ckpt *c, dpd_error *err, const char *what, const char *name) {
    return bad_entry(c, err, what, name, 0);
}

/* What a file that is not safetensors at all is, from its first bytes: the files a user may take
 * for a model (a MATLAB .mat, HDF5, a PyTorch .pt zip or pickle); NULL when they do not tell. */
static const char *foreign_kind(const char *b, size_t n) {
    if (n >= 19 && !memcmp(b, "MATLAB ", 7) && !memcmp(b + 10, " MAT-file", 9)) return "a MATLAB .mat file";
    if (n >= 8 && !memcmp(b, "\x89HDF\r\n\x1a\n", 8)) return "an HDF5 file";
    if (n >= 4 && !memcmp(b, "PK\x03\x04", 4)) return "a zip archive (a PyTorch .pt/.pth?)";
    if (n >= 2 && (unsigned char)b[0] == 0x80 && b[1] >= 2 && b[1] <= 5) return "a Python pickle (a PyTorch .pt?)";
    return NULL;
}

/* A safetensors file starts with its header length and then '{'. A length that no header can have
 * (0, or over MAX_HEADER, as any eight bytes of text read as one) with no '{' after it, or a known
 * foreign magic there, is another kind of file, not a checkpoint cut short. */
static dpd_status not_safetensors(dpd_ckpt *c, uint64_t hl, dpd_error *err) {
    const char *kind = foreign_kind(c->buf, c->len);
    if (c->buf[8] == '{' || (!kind && hl && hl <= MAX_HEADER)) return DPD_OK;
    dpd_fail(err, DPD_E_FORMAT,
             "%s: not a safetensors checkpoint: %s%s (dpd's models are the .safetensors files that dpd train-pa, "
             "train-dpd and fit-ls write)",
             c->path, kind ? "it is " : "it does not start with a header length and a JSON header",
             kind ? kind : "");
    dpd_ckpt_close(c);
    return DPD_E_FORMAT;
}

/* One tensor's place in the data section, for the tiling check. */
typedef struct span {
    size_t b0, b1;
} span;

static int by_start(const void *a, const void *b) {
    const span *x = a, *y = b;
    return x->b0 < y->b0 ? -1 : x->b0 > y->b0;
}

dpd_status dpd_ckpt_open(const char *path, dpd_ckpt *c, dpd_error *err) {
    memset(c, 0, sizeof *c);
    snprintf(c->path, sizeof c->path, "%s", path);
    dpd_status s = dpd_file_read_max(path, DPD_MAX_CKPT_BYTES, "checkpoint", &c->buf, &c->len, err);
    if (s) return s;
    if (c->len < 8) return bad(c, err, "file shorter than the 8-byte header length", NULL);
    uint64_t hl = 0;
    for (int i = 0; i < 8; i++) hl |= (uint64_t)(unsigned char)c->buf[i] << (8 * i);
    if (c->len > 8 && (s = not_safetensors(c, hl, err))) return s;
    if (hl == 0 || hl > MAX_HEADER || hl > c->len - 8)
        return bad(c, err, "header length is larger than the file (truncated?)", NULL);
    json_error_t je;
    c->hdr = json_loadb(c->buf + 8, (size_t)hl, 0, &je);
    if (!c->hdr || !json_is_object(c->hdr)) return bad(c, err, "header is not a JSON object", NULL);
    c->data = c->buf + 8 + hl;
    c->data_len = c->len - 8 - (size_t)hl;
    /* at most one span per header entry; the header is at most MAX_HEADER bytes of JSON */
    span *sp = malloc((json_object_size(c->hdr) + 1) * sizeof *sp);
    if (!sp) {
        dpd_ckpt_close(c);
        return dpd_fail(err, DPD_E_NOMEM, "%s: out of memory checking the header", path);
    }
    size_t nsp = 0;
    const char *name, *why = NULL, *who = NULL;
    int meta = 0; /* who is a metadata key */
    json_t *e;
    json_object_foreach(c->hdr, name, e) {
        if (!strcmp(name, "__metadata__")) {
            const char *k;
            json_t *v;
            if (!json_is_object(e)) {
                why = "__metadata__ is not an object";
                break;
            }
            json_object_foreach(e, k, v) if (!json_is_string(v)) {
                why = "__metadata__ value is not a string", who = k, meta = 1;
                break;
            }
            if (why) break;
            continue;
        }
        who = name;
        json_t *dt = json_object_get(e, "dtype"), *sh = json_object_get(e, "shape"),
               *of = json_object_get(e, "data_offsets");
        if (!json_is_string(dt) || strcmp(json_string_value(dt), "F32")) {
            why = "dtype is not F32";
            break;
        }
        if (!json_is_array(sh) || !json_is_array(of) || json_array_size(of) != 2) {
            why = "shape or data_offsets missing";
            break;
        }
        size_t numel = 1, bytes, i;
        json_t *d;
        json_array_foreach(sh, i, d) {
            if (!json_is_integer(d) || json_integer_value(d) < 0 || json_integer_value(d) > (1 << 30)) {
                why = "bad shape";
                break;
            }
            if (__builtin_mul_overflow(numel, (size_t)json_integer_value(d), &numel)) {
                why = "shape product overflows";
                break;
            }
        }
        if (!why && __builtin_mul_overflow(numel, (size_t)4, &bytes)) why = "shape product overflows";
        if (why) break;
        json_t *b0 = json_array_get(of, 0), *b1 = json_array_get(of, 1);
        if (!json_is_integer(b0) || !json_is_integer(b1) || json_integer_value(b0) < 0 ||
            json_integer_value(b1) < json_integer_value(b0)) {
            why = "bad data_offsets";
            break;
        }
        if ((uint64_t)json_integer_value(b1) > c->data_len) {
            why = "data runs past the end of the file (truncated?)";
            break;
        }
        if ((size_t)(json_integer_value(b1) - json_integer_value(b0)) != bytes) {
            why = "data_offsets do not match the shape";
            break;
        }
        sp[nsp++] = (span){(size_t)json_integer_value(b0), (size_t)json_integer_value(b1)};
        who = NULL;
    }
    if (!why) {
        /* the tensors tile the data section: sorted by start, each begins where the last ended and
         * the last ends at the end of the file (no aliasing, no gaps, no trailing bytes) */
        qsort(sp, nsp, sizeof *sp, by_start);
        size_t at = 0;
        for (size_t i = 0; i < nsp && !why; i++) {
            if (sp[i].b0 != at) why = "tensors overlap or leave gaps in the data section";
            at = sp[i].b1;
        }
        if (!why && at != c->data_len) why = "tensor sizes do not add up to the data section (trailing bytes?)";
    }
    free(sp);
    if (why) return bad_entry(c, err, why, who, meta);
    return DPD_OK;
}

const char *dpd_ckpt_meta(const dpd_ckpt *c, const char *key) {
    return json_string_value(json_object_get(json_object_get(c->hdr, "__metadata__"), key));
}

dpd_status dpd_ckpt_read(const dpd_ckpt *c, const char *name, float *out, size_t numel,
                         dpd_error *err) {
    json_t *e = json_object_get(c->hdr, name);
    if (!e || !strcmp(name, "__metadata__"))
        return dpd_fail(err, DPD_E_FORMAT, "%s: tensor '%s' is missing", c->path, name);
    json_t *of = json_object_get(e, "data_offsets");
    size_t b0 = (size_t)json_integer_value(json_array_get(of, 0));
    size_t b1 = (size_t)json_integer_value(json_array_get(of, 1));
    if (b1 - b0 != numel * 4)
        return dpd_fail(err, DPD_E_FORMAT, "%s: tensor '%s' has %zu values, expected %zu", c->path,
                        name, (b1 - b0) / 4, numel);
    memcpy(out, c->data + b0, numel * 4);
    return DPD_OK;
}

dpd_status dpd_ckpt_read_model(const dpd_ckpt *c, dpd_model *m, dpd_error *err) {
    float *p = dpd_model_params(m);
    for (int i = 0; i < dpd_model_ntensors(m); i++) {
        const dpd_tensor *t = dpd_model_tensor(m, i);
        json_t *sh = json_object_get(json_object_get(c->hdr, t->name), "shape");
        int same = json_is_array(sh) && (int)json_array_size(sh) == t->ndim;
        for (int d = 0; same && d < t->ndim; d++)
            same = json_integer_value(json_array_get(sh, (size_t)d)) == t->shape[d];
        if (sh && !same)
            return dpd_fail(err, DPD_E_FORMAT, "%s: tensor '%s' has the wrong shape for %s-%d",
                            c->path, t->name, dpd_model_config(m)->family,
                            dpd_model_config(m)->hidden);
        dpd_status s = dpd_ckpt_read(c, t->name, p + t->offset, t->numel, err);
        if (s) return s;
        for (size_t k = 0; k < t->numel; k++) /* a NaN or an infinity would make every output one */
            if (!isfinite(p[t->offset + k]))
                return dpd_fail(err, DPD_E_FORMAT,
                                "%s: tensor '%s' holds %s at index %zu: the checkpoint is damaged or was saved by a "
                                "run that diverged", c->path, t->name, isnan(p[t->offset + k]) ? "NaN" : "an infinity", k);
    }
    return DPD_OK;
}

dpd_status dpd_ckpt_load(const char *path, dpd_model **out, dpd_error *err) {
    dpd_ckpt c;
    *out = NULL;
    dpd_status s = dpd_ckpt_open(path, &c, err);
    if (s) return s;
    dpd_model_cfg cfg;
    if ((s = dpd_config_model_from_meta(json_object_get(c.hdr, "__metadata__"), &cfg, path, err))) {
        if (err) err->field[0] = 0; /* the file is at fault, not an option: its message names the key */
        dpd_ckpt_close(&c);
        return s;
    }
    /* the file must hold every tensor of the model its metadata describes, each of the model's
     * size, before that model's memory is allocated */
    size_t np = dpd_model_count(&cfg), held = 0;
    const dpd_family *fam = np ? dpd_family_find(cfg.family) : NULL;
    if (fam) {
        dpd_tensor t[DPD_MAX_TENSORS];
        int nt = fam->layout(&cfg, t);
        for (int i = 0; i < nt; i++) {
            json_t *of = json_object_get(json_object_get(c.hdr, t[i].name), "data_offsets");
            if (of && strcmp(t[i].name, "__metadata__"))
                held += (size_t)(json_integer_value(json_array_get(of, 1)) - json_integer_value(json_array_get(of, 0))) / 4;
        }
        if (held != np || np > c.data_len / 4) {
            char size[16] = ""; /* "-23" for a family sized by its hidden width; none for the polynomials */
            if (fam->hidden > 1) snprintf(size, sizeof size, "-%d", cfg.hidden);
            s = dpd_fail(err, DPD_E_FORMAT,
                         "%s: not a valid checkpoint: its metadata describes a %s%s model of %zu parameters, but the "
                         "file holds %zu of them (of %zu values in all)",
                         path, cfg.family, size, np, held, c.data_len / 4);
            dpd_ckpt_close(&c);
            return s;
        }
    }
    s = dpd_model_create(&cfg, out, err);
    if (s == DPD_E_INVAL) s = DPD_E_FORMAT; /* sizes no model has ("layers": "0"): the file is malformed */
    if (s && err) err->status = s, err->field[0] = 0, dpd_error_prefix(err, path); /* as above: "PATH: family: 'x' is not ..." */
    else s = dpd_ckpt_read_model(&c, *out, err);
    if (s) {
        dpd_model_free(*out);
        *out = NULL;
    }
    dpd_ckpt_close(&c);
    return s;
}

dpd_status dpd_ckpt_info_read(const char *path, dpd_ckpt_info *out, dpd_error *err) {
    dpd_ckpt c;
    memset(out, 0, sizeof *out);
    dpd_status s = dpd_ckpt_open(path, &c, err);
    if (s) return s;
    s = dpd_config_model_from_meta(json_object_get(c.hdr, "__metadata__"), &out->model, path, err);
    const char *v;
    if ((v = dpd_ckpt_meta(&c, "step_kind"))) snprintf(out->kind, sizeof out->kind, "%s", v);
    if ((v = dpd_ckpt_meta(&c, "dataset"))) snprintf(out->dataset, sizeof out->dataset, "%s", v);
    if ((v = dpd_ckpt_meta(&c, "train_sha256"))) snprintf(out->train_sha256, sizeof out->train_sha256, "%s", v);
    if ((v = dpd_ckpt_meta(&c, "run_id"))) snprintf(out->run_id, sizeof out->run_id, "%s", v);
    if ((v = dpd_ckpt_meta(&c, "pa_run_id"))) snprintf(out->pa_run_id, sizeof out->pa_run_id, "%s", v);
    if ((v = dpd_ckpt_meta(&c, "epoch"))) out->epoch = atoi(v);
    if ((v = dpd_ckpt_meta(&c, "input_signal_fs"))) { /* a rate that is not a positive number: not recorded */
        char *end;
        double fs = strtod(v, &end);
        out->fs = *v && !*end && isfinite(fs) && fs > 0 ? fs : 0;
    }
    static const char *const level[2] = {"train_input_peak", "train_input_rms"};
    double *lv[2] = {&out->train_peak, &out->train_rms};
    for (int k = 0; k < 2; k++) /* a level that is not a positive number: not recorded */
        if ((v = dpd_ckpt_meta(&c, level[k]))) {
            char *end;
            double a = strtod(v, &end);
            *lv[k] = *v && !*end && isfinite(a) && a > 0 ? a : 0;
        }
    out->least_squares = dpd_ckpt_meta(&c, "least_squares") != NULL || strstr(out->run_id, "_LS_") != NULL;
    dpd_run_scores(&c, out); /* (run.c writes them) */
    dpd_ckpt_close(&c);
    return s;
}

dpd_status dpd_ckpt_resolve(const char *path, int want_pa, char *out, size_t n, dpd_error *err) {
    struct stat st;
    if (stat(path, &st)) return dpd_fail(err, DPD_E_IO, "%s does not exist", path);
    if (!S_ISDIR(st.st_mode)) return snprintf(out, n, "%s", path), DPD_OK;
    char p[4200];
    snprintf(p, sizeof p, "%s/pa.safetensors", path);
    if (!want_pa || stat(p, &st)) snprintf(p, sizeof p, "%s/best.safetensors", path);
    if (stat(p, &st)) return dpd_fail(err, DPD_E_IO, "%s: a directory without best.safetensors (not a run directory)", path);
    snprintf(out, n, "%s", p);
    return DPD_OK;
}
