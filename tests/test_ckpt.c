/* test_ckpt: safetensors checkpoints — a round trip keeps every bit and OpenDPD's names and
 * shapes; truncated, corrupted and foreign files are refused with DPD_E_FORMAT naming the file;
 * no temporary file is left behind. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

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
}

int main(void) {
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
    refuse("no family", bad, "lacks family");
    memcpy(c2, b, n);
    char *sh = strstr(c2 + 8, "[18,6]");
    memcpy(sh, "[9,12]", 6);
    spit(bad, c2, n);
    refuse("wrong shape", bad, "wrong shape");
    spit(bad, "not a checkpoint at all, just text\n", 35);
    refuse("text file", bad, "header length");
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
