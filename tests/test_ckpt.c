/* test_ckpt: safetensors checkpoints — a round trip keeps every bit and OpenDPD's names and
 * shapes; truncated, corrupted and foreign files are refused with DPD_E_FORMAT naming the file;
 * no temporary file is left behind. */
#include <math.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "dpd/dpd.h"

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    rewind(f);
    char *b = malloc(*n + 1);
    if (fread(b, 1, *n, f) != *n) *n = 0;
    fclose(f);
    return b;
}

static void spit(const char *path, const char *b, size_t n) {
    FILE *f = fopen(path, "wb");
    fwrite(b, 1, n, f);
    fclose(f);
}

static void refuse(const char *what, const char *path, const char *needle) {
    dpd_model *m = NULL;
    dpd_error err = {0};
    dpd_status s = dpd_ckpt_load(path, &m, &err);
    CHECK(s == DPD_E_FORMAT && m == NULL, "%s: status %s", what, dpd_status_str(s));
    CHECK(strstr(err.msg, path) && strstr(err.msg, needle), "%s: message '%s' lacks the path or '%s'", what,
          err.msg, needle);
    CHECK(!err.field[0], "%s: no field (the file is at fault, not an option), got '%s'", what, err.field);
}

/* Writes a checkpoint of header `hdr` (compact JSON, space-padded to 8) and data [data, +dlen). */
static void forge(const char *path, json_t *hdr, const char *data, size_t dlen) {
    char *text = json_dumps(hdr, JSON_COMPACT | JSON_PRESERVE_ORDER);
    size_t hl = strlen(text), padded = (hl + 7) / 8 * 8;
    FILE *f = fopen(path, "wb");
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((unsigned long long)padded >> (8 * i));
    fwrite(len8, 1, 8, f);
    fwrite(text, 1, hl, f);
    for (size_t i = hl; i < padded; i++) fputc(' ', f);
    if (dlen) fwrite(data, 1, dlen, f);
    fclose(f);
    free(text);
}

static long maxrss_kb(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
}

/* Issue 9 item 5: hostile metadata and tensor tables are refused before any model memory is
 * allocated from them; item 4: a checkpoint larger than its limit, or not a regular file, is
 * refused without being read. b/n: a good checkpoint of gru-6 x2 (data after the header). */
/* dpd_ckpt_info_read's scored, val and test: the figures a best checkpoint records (as
 * dpd_run_save_best writes them), back under their profile, a metric that was not computed NaN with
 * its status and reason; anything short of the whole set, or a status beside a finite value, is no
 * set at all. */
static void scored(const char *d, const dpd_model *m) {
    char path[512];
    snprintf(path, sizeof path, "%s/best.safetensors", d);
    dpd_kv legacy[] = {{"metric_profile", "legacy-opendpd-v1"}, {"val_NMSE", "-27.75255786"}, {"val_EVM", "-29.48256478"},
                       {"val_ACLR_L", "-40.97274682"}, {"val_ACLR_R", "nan"}, {"val_ACLR_R_status", "invalid"},
                       {"val_ACLR_R_reason", "a silent band"}, {"val_ACLR_AVG", "nan"}, {"val_ACLR_AVG_status", "invalid"},
                       {"val_ACLR_AVG_reason", "a silent band"}, {"test_NMSE", "-27.40317438"}, {"test_EVM", "-29.07936474"},
                       {"test_ACLR_L", "-41.82355634"}, {"test_ACLR_R", "-41.53497839"}, {"test_ACLR_AVG", "-41.67926736"}};
    size_t n = sizeof legacy / sizeof *legacy;
    dpd_ckpt_info info;
    dpd_error err;
    CHECK(dpd_ckpt_save(path, m, legacy, n, 0, NULL, NULL, NULL, &err) == DPD_OK, "save: %s", err.msg);
    CHECK(dpd_ckpt_info_read(path, &info, &err) == DPD_OK && info.scored, "a best checkpoint's figures are read back");
    CHECK(info.test.aclr_avg == -41.67926736 && info.val.nmse == -27.75255786 && info.test.status[DPD_ACLR_AVG] == DPD_METRIC_OK &&
              info.val.profile == DPD_PROFILE_LEGACY,
          "test ACLR_AVG %.8f, val NMSE %.8f", info.test.aclr_avg, info.val.nmse);
    CHECK(isnan(info.val.aclr_avg) && info.val.status[DPD_ACLR_AVG] == DPD_METRIC_INVALID &&
              !strcmp(info.val.reason[DPD_ACLR_AVG], "a silent band") && !info.val.reason[DPD_NMSE][0],
          "a metric not computed: NaN, its status and reason (%s)", info.val.reason[DPD_ACLR_AVG]);
    dpd_kv general[] = {{"metric_profile", "general-spectral-v1"}, {"val_NMSE", "-1"}, {"val_IBE", "-2"}, {"val_ACPR_L", "-3"},
                        {"val_ACPR_R", "-4"}, {"val_ACPR_AVG", "-3.5"}, {"test_NMSE", "-1"}, {"test_IBE", "-2"},
                        {"test_ACPR_L", "-3"}, {"test_ACPR_R", "-4"}, {"test_ACPR_AVG", "-3.5"}};
    CHECK(dpd_ckpt_save(path, m, general, sizeof general / sizeof *general, 0, NULL, NULL, NULL, &err) == DPD_OK, "save: %s", err.msg);
    CHECK(dpd_ckpt_info_read(path, &info, &err) == DPD_OK && info.scored && info.test.aclr_avg == -3.5 &&
              info.test.profile == DPD_PROFILE_GENERAL,
          "general-spectral-v1's keys (ACPR_AVG %g)", info.test.aclr_avg);
    CHECK(dpd_ckpt_save(path, m, legacy, n - 1, 0, NULL, NULL, NULL, &err) == DPD_OK && dpd_ckpt_info_read(path, &info, &err) == DPD_OK &&
              !info.scored,
          "a checkpoint without test ACLR_AVG has no figures");
    legacy[7].value = "-40"; /* val ACLR_AVG finite, yet "invalid" beside it */
    CHECK(dpd_ckpt_save(path, m, legacy, n, 0, NULL, NULL, NULL, &err) == DPD_OK && dpd_ckpt_info_read(path, &info, &err) == DPD_OK &&
              !info.scored,
          "a status beside a finite value: no figures");
    legacy[7].value = "nan", legacy[8].value = "wrong";
    CHECK(dpd_ckpt_save(path, m, legacy, n, 0, NULL, NULL, NULL, &err) == DPD_OK && dpd_ckpt_info_read(path, &info, &err) == DPD_OK &&
              !info.scored,
          "a status dpd never writes: no figures");
    legacy[8].value = "invalid", legacy[13].value = "-41.5x";
    CHECK(dpd_ckpt_save(path, m, legacy, n, 0, NULL, NULL, NULL, &err) == DPD_OK && dpd_ckpt_info_read(path, &info, &err) == DPD_OK &&
              !info.scored,
          "a figure that is not a number: no figures");
    dpd_kv none[] = {{"dataset", "unit"}};
    CHECK(dpd_ckpt_save(path, m, none, 1, 0, NULL, NULL, NULL, &err) == DPD_OK && dpd_ckpt_info_read(path, &info, &err) == DPD_OK &&
              !info.scored && info.val.aclr_avg == 0,
          "a checkpoint that records none (last.safetensors, an export)");
    unlink(path);
}

static void hostile(const char *d, const char *b, size_t n) {
    char bad[512];
    snprintf(bad, sizeof bad, "%s/hostile.safetensors", d);
    uint64_t hl = 0;
    memcpy(&hl, b, 8);
    const char *data = b + 8 + hl;
    size_t dlen = n - 8 - hl;
    long rss0 = maxrss_kb();

    /* 96 bytes asking for the largest GRU: must not cost its 400 MB */
    json_t *h = json_pack("{s{ssssssss}}", "__metadata__", "format", "dpd", "family", "gru", "hidden", "1024",
                          "layers", "16");
    forge(bad, h, NULL, 0);
    json_decref(h);
    refuse("metadata without tensors", bad, "parameters");
    /* the real tensors, but metadata describing a model 10^4 times larger */
    h = json_loadb(b + 8, hl, 0, NULL);
    json_t *md = json_object_get(h, "__metadata__");
    json_object_set_new(md, "hidden", json_string("1024"));
    json_object_set_new(md, "layers", json_string("16"));
    forge(bad, h, data, dlen);
    json_decref(h);
    refuse("metadata larger than the tensors", bad, "parameters");
    long grew = maxrss_kb() - rss0;
    CHECK(grew < 32 * 1024, "hostile metadata cost %ld KB of memory (must be refused before allocating)", grew);

    /* a shape whose product wraps: 2^30 * 2^30 * 4 floats = 2^64 bytes = 0 */
    h = json_loadb(b + 8, hl, 0, NULL);
    json_object_set_new(h, "junk", json_pack("{s:s,s:[I,I,i],s:[I,I]}", "dtype", "F32", "shape",
                                             (json_int_t)1 << 30, (json_int_t)1 << 30, 4, "data_offsets",
                                             (json_int_t)dlen, (json_int_t)dlen));
    forge(bad, h, data, dlen);
    json_decref(h);
    refuse("shape product overflow", bad, "overflow");
    /* a tensor aliasing another's data: the sizes no longer add up to the data section */
    h = json_loadb(b + 8, hl, 0, NULL);
    json_object_set_new(h, "alias", json_pack("{s:s,s:[i],s:[i,i]}", "dtype", "F32", "shape", 1, "data_offsets", 0, 4));
    forge(bad, h, data, dlen);
    json_decref(h);
    refuse("aliased tensor data", bad, "data section");
    /* bytes after the last tensor */
    char *more = malloc(dlen + 8);
    memcpy(more, data, dlen);
    memset(more + dlen, 0, 8);
    h = json_loadb(b + 8, hl, 0, NULL);
    forge(bad, h, more, dlen + 8);
    json_decref(h);
    free(more);
    refuse("trailing bytes", bad, "data section");

    /* 10 GiB sparse: refused by size, naming size and limit, without reading it */
    int fd = open(bad, O_WRONLY | O_TRUNC);
    CHECK(fd >= 0 && ftruncate(fd, 10ll << 30) == 0, "sparse file");
    close(fd);
    dpd_model *m = NULL;
    dpd_error err = {0};
    dpd_status s = dpd_ckpt_load(bad, &m, &err);
    CHECK(s == DPD_E_FORMAT && m == NULL && strstr(err.msg, bad) && strstr(err.msg, "10737418240") &&
              strstr(err.msg, "limit"),
          "10 GiB checkpoint: %s '%s'", dpd_status_str(s), err.msg);
    /* a directory, and /dev/zero through a symlink */
    s = dpd_ckpt_load(d, &m, &err);
    CHECK(s == DPD_E_IO && strstr(err.msg, d) && strstr(err.msg, "directory"), "directory: %s '%s'",
          dpd_status_str(s), err.msg);
    unlink(bad);
    CHECK(symlink("/dev/zero", bad) == 0, "symlink");
    s = dpd_ckpt_load(bad, &m, &err);
    CHECK(s == DPD_E_IO && strstr(err.msg, bad) && strstr(err.msg, "character device"), "/dev/zero: %s '%s'",
          dpd_status_str(s), err.msg);
    unlink(bad);
}

int main(void) {
    alarm(60);
    const char *d = check_tmpdir();
    char path[512], bad[512];
    snprintf(path, sizeof path, "%s/m.safetensors", d);
    snprintf(bad, sizeof bad, "%s/bad.safetensors", d);
    dpd_model_cfg c = {"gru", 6, 2};
    dpd_model *back;
    dpd_error err;
    dpd_rng rng;
    dpd_rng_seed(&rng, 11);
    dpd_model *m = check_model(&c, &rng);
    dpd_kv meta[1] = {{"dataset", "unit"}};
    CHECK(dpd_ckpt_save(path, m, meta, 1, 0, NULL, NULL, NULL, &err) == DPD_OK, "save: %s", err.msg);
    CHECK(dpd_ckpt_load(path, &back, &err) == DPD_OK, "load: %s", err.msg);
    CHECK(back && dpd_model_nparams(back) == dpd_model_nparams(m) && dpd_model_config(back)->layers == 2 &&
              !memcmp(dpd_model_params(back), dpd_model_params(m), dpd_model_nparams(m) * 4),
          "round trip is bit-exact");
    dpd_model_free(back);
    size_t n = 0;
    char *b = slurp(path, &n);
    CHECK(b && strstr(b + 8, "\"backbone.rnn.weight_hh_l1\":{\"dtype\":\"F32\",\"shape\":[18,6]"),
          "state-dict name and PyTorch shape in the header");
    CHECK(strstr(b + 8, "\"__metadata__\":{\"format\":\"dpd\"") && strstr(b + 8, "\"dataset\":\"unit\""), "metadata");
    uint64_t hl = 0;
    memcpy(&hl, b, 8);
    CHECK(hl % 8 == 0 && 8 + hl + dpd_model_nparams(m) * 4 == n, "header padded to 8, data follows");

    hostile(d, b, n);
    scored(d, m);
    spit(bad, b, n - 5);
    refuse("truncated data", bad, "truncated");
    spit(bad, b, 20);
    refuse("truncated header", bad, "truncated");
    spit(bad, b, 4);
    refuse("tiny file", bad, "shorter");
    char *c2 = malloc(n);
    memcpy(c2, b, n);
    c2[8] = '[';
    spit(bad, c2, n);
    refuse("corrupt header", bad, "not a JSON object");
    memcpy(c2, b, n);
    char *dt = strstr(c2 + 8, "F32");
    dt[1] = '6', dt[2] = '4';
    spit(bad, c2, n);
    refuse("wrong dtype", bad, "F32");
    memcpy(c2, b, n);
    char *fam = strstr(c2 + 8, "\"family\":\"gru\"");
    memcpy(fam, "\"famixy\"", 8);
    spit(bad, c2, n);
    refuse("no family", bad, "__metadata__ 'family' is missing or empty");
    memcpy(c2, b, n);
    memcpy(strstr(c2 + 8, "\"dataset\":\"unit\"") + 10, "123456", 6); /* a number where a string belongs */
    spit(bad, c2, n);
    refuse("metadata value not a string", bad, "__metadata__ value is not a string (metadata key 'dataset')");
    memcpy(c2, b, n);
    memcpy(strstr(c2 + 8, "\"layers\":\"2\"") + 10, "0", 1); /* a size no model has: a malformed file, not an option */
    spit(bad, c2, n);
    refuse("layers 0", bad, "layers");
    memcpy(c2, b, n);
    memcpy(strstr(c2 + 8, "\"family\":\"gru\""), "\"family\":\"grx\"", 14);
    spit(bad, c2, n);
    {
        dpd_model *um = NULL;
        dpd_error uerr = {0};
        dpd_status us = dpd_ckpt_load(bad, &um, &uerr);
        CHECK(us && !um && strstr(uerr.msg, bad) && strstr(uerr.msg, "family: 'grx' is not one of gru,") && !uerr.field[0],
              "an unknown family: the file and its key named, no field ('%s', field '%s')", uerr.msg, uerr.field);
    }
    memcpy(c2, b, n);
    char *sh = strstr(c2 + 8, "[18,6]");
    memcpy(sh, "[9,12]", 6);
    spit(bad, c2, n);
    refuse("wrong shape", bad, "wrong shape");
    memcpy(c2, b, n);
    float nan = NAN, inf = -INFINITY;
    memcpy(c2 + 8 + hl + 4 * 7, &nan, 4); /* the first tensor's 8th value */
    spit(bad, c2, n);
    refuse("a NaN weight", bad, "holds NaN at index 7");
    memcpy(c2, b, n);
    memcpy(c2 + n - 4, &inf, 4); /* the last value */
    spit(bad, c2, n);
    refuse("an infinite weight", bad, "holds an infinity");
    /* files that are not safetensors at all say so (and what they are, when their first bytes tell);
     * a real checkpoint cut short (above) keeps "truncated?" */
    spit(bad, "not a checkpoint at all, just text\n", 35);
    refuse("text file", bad, "not a safetensors checkpoint");
    char mat[256] = "MATLAB 5.0 MAT-file, Platform: GLNXA64, Created on: Mon Jan  1 00:00:00 2024";
    spit(bad, mat, sizeof mat);
    refuse("MATLAB v5 file", bad, "not a safetensors checkpoint: it is a MATLAB .mat file");
    memcpy(mat, "MATLAB 7.3 MAT-file", 19);
    spit(bad, mat, sizeof mat);
    refuse("MATLAB v7.3 file", bad, "not a safetensors checkpoint: it is a MATLAB .mat file");
    spit(bad, "\x89HDF\r\n\x1a\n\0\0\0\0\0\x08\x08\0\x04\0\x10\0", 20);
    refuse("HDF5 file", bad, "not a safetensors checkpoint: it is an HDF5 file");
    spit(bad, "PK\x03\x04\x14\0\0\0\0\0archive/data.pkl", 26);
    refuse("PyTorch zip", bad, "not a safetensors checkpoint: it is a zip archive");
    memcpy(c2, b, n);
    c2[8] = 'x';
    spit(bad, c2, 20);
    refuse("a header length that fits and no JSON after it", bad, "truncated");
    spit(bad, c2, 8);
    refuse("8 bytes, a header length and nothing after it", bad, "truncated");
    dpd_model *none;
    CHECK(dpd_ckpt_load("/nonexistent/x.safetensors", &none, &err) == DPD_E_IO && strstr(err.msg, "/nonexistent"),
          "missing file: %s", err.msg);
    DIR *dir = opendir(d);
    struct dirent *e;
    int tmp = 0;
    while ((e = readdir(dir))) tmp += strstr(e->d_name, ".tmp") != NULL;
    closedir(dir);
    CHECK(tmp == 0, "no temporary files left");
    free(b), free(c2);
    dpd_model_free(m);
    return check_done("ckpt");
}
