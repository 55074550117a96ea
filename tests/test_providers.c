/* test_providers: the CPU provider through the ABI table (forward, train step and AdamW, the
 * chained forward_keep/backward/clip, the optimizer state and delta counters, equal to the
 * model's own), the gpu_memory batch bounds, pack archives refused before extraction (device
 * files, duplicate entries, size and count caps), and fallback case 2 — a long-running process
 * that loaded a provider is told to restart when the active pack changes under it. */
#include <math.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "dpd/provider.h"
#include "optim.h"
#include "pack.h"
#include "provider.h"
#include "settings.h"

static void cpu_table(void) {
    const dpd_provider *p = dpd_provider_cpu();
    CHECK(p->i->api_version == DPD_PROVIDER_API && !strcmp(p->i->name, "cpu") && p->i->device_count(p->ctx) == 1,
          "cpu provider table");
    dpd_model_cfg c = {"gru", 6, 1};
    dpd_error err;
    dpd_rng r;
    dpd_rng_seed(&r, 2);
    dpd_model *m = check_model(&c, &r);
    int B = 5, T = 30;
    size_t n = (size_t)B * T * 2, np = dpd_model_nparams(m);
    float *x = malloc(n * 4), *t = malloc(n * 4), *y0 = malloc(n * 4), *y1 = malloc(n * 4), *p1 = malloc(np * 4);
    for (size_t i = 0; i < n; i++) x[i] = (float)(0.3 * dpd_rng_normal(&r)), t[i] = (float)(0.3 * dpd_rng_normal(&r));
    void *s;
    char msg[256];
    CHECK(p->i->session_create(p->ctx, 0, &c, B, T, &s, msg, sizeof msg) == DPD_OK, "%s", msg);
    CHECK(p->i->upload(s, dpd_model_params(m), msg, sizeof msg) == DPD_OK, "upload");
    CHECK(p->i->forward(s, x, B, T, y1, msg, sizeof msg) == DPD_OK && dpd_model_forward(m, x, B, T, y0, &err) == DPD_OK,
          "forward");
    CHECK(!memcmp(y0, y1, n * 4), "provider forward equals the model's");
    double l0, l1;
    CHECK(p->i->train_step(s, x, t, B, T, 0.5, &l1, msg, sizeof msg) == DPD_OK &&
              p->i->optimizer_step(s, 5e-3, 0.01, msg, sizeof msg) == DPD_OK,
          "train step");
    dpd_adamw o;
    CHECK(dpd_adamw_init(&o, np, 5e-3, 0.01, &err) == DPD_OK, "adamw");
    CHECK(dpd_model_train_step(m, x, t, B, T, &l0, NULL, &err) == DPD_OK, "%s", err.msg);
    dpd_clip(dpd_model_grads(m), np, 0.5);
    dpd_adamw_step(&o, dpd_model_params(m), dpd_model_grads(m));
    CHECK(p->i->download(s, p1, msg, sizeof msg) == DPD_OK && l0 == l1 && !memcmp(p1, dpd_model_params(m), np * 4),
          "provider train step + AdamW equal the direct path bit for bit");
    CHECK(p->i->forward(s, x, B + 1, T, y1, msg, sizeof msg) == DPD_E_INVAL && strstr(msg, "exceeds"),
          "a batch above the session's bound is refused");
    /* the state after one step, and a second session resumed from it */
    float *m1 = malloc(np * 4), *v1 = malloc(np * 4), *dx0 = malloc(n * 4), *dx1 = malloc(n * 4);
    long step = 0;
    CHECK(p->i->get_state(s, m1, v1, &step, msg, sizeof msg) == DPD_OK && step == 1 && !memcmp(m1, o.m, np * 4) &&
              !memcmp(v1, o.v, np * 4),
          "get_state returns the AdamW moments and step count");
    /* a chained step as in DPD training: forward_keep, backward with dy given (dx out), clip */
    for (size_t i = 0; i < n; i++) t[i] = (float)(0.01 * (i % 7));
    CHECK(p->i->forward_keep(s, x, B, T, y1, msg, sizeof msg) == DPD_OK &&
              p->i->backward(s, t, dx1, msg, sizeof msg) == DPD_OK && p->i->clip(s, 0.5, msg, sizeof msg) == DPD_OK &&
              p->i->optimizer_step(s, 5e-3, 0.01, msg, sizeof msg) == DPD_OK,
          "chained step: %s", msg);
    CHECK(dpd_model_forward(m, x, B, T, y0, &err) == DPD_OK && dpd_model_backward(m, x, t, B, T, dx0, &err) == DPD_OK,
          "%s", err.msg);
    dpd_clip(dpd_model_grads(m), np, 0.5);
    dpd_adamw_step(&o, dpd_model_params(m), dpd_model_grads(m));
    CHECK(p->i->download(s, p1, msg, sizeof msg) == DPD_OK && !memcmp(y0, y1, n * 4) && !memcmp(dx0, dx1, n * 4) &&
              !memcmp(p1, dpd_model_params(m), np * 4),
          "forward_keep, backward (dx), clip and AdamW equal the model's own bit for bit");
    void *s2;
    CHECK(p->i->session_create(p->ctx, 0, &c, B, T, &s2, msg, sizeof msg) == DPD_OK &&
              p->i->upload(s2, p1, msg, sizeof msg) == DPD_OK &&
              p->i->get_state(s, m1, v1, &step, msg, sizeof msg) == DPD_OK &&
              p->i->set_state(s2, m1, v1, step, msg, sizeof msg) == DPD_OK,
          "a second session from the first's state");
    float *p2 = malloc(np * 4);
    for (int k = 0; k < 2; k++) {
        void *ss = k ? s2 : s;
        CHECK(p->i->train_step(ss, x, t, B, T, 0.5, &l0, msg, sizeof msg) == DPD_OK &&
                  p->i->optimizer_step(ss, 5e-3, 0.01, msg, sizeof msg) == DPD_OK,
              "step %d", k);
    }
    CHECK(p->i->download(s, p1, msg, sizeof msg) == DPD_OK && p->i->download(s2, p2, msg, sizeof msg) == DPD_OK &&
              !memcmp(p1, p2, np * 4),
          "set_state: the resumed session steps exactly as the original");
    /* zeros: a DeltaGRU session's counters equal the model's own over the same pass, then reset */
    dpd_model_cfg dc = {"deltagru", 5, 1, .thx = 0.05, .thh = 0.05};
    dpd_model *dm = check_model(&dc, &r);
    void *ds;
    dpd_sparsity sp;
    long long z[4], z2[4];
    CHECK(p->i->session_create(p->ctx, 0, &dc, B, T, &ds, msg, sizeof msg) == DPD_OK &&
              p->i->upload(ds, dpd_model_params(dm), msg, sizeof msg) == DPD_OK &&
              p->i->forward(ds, x, B, T, y1, msg, sizeof msg) == DPD_OK && p->i->zeros(ds, z, msg, sizeof msg) == DPD_OK &&
              p->i->zeros(ds, z2, msg, sizeof msg) == DPD_OK,
          "deltagru session: %s", msg);
    CHECK(dpd_model_forward(dm, x, B, T, y0, &err) == DPD_OK && dpd_model_sparsity(dm, &sp, 1), "%s", err.msg);
    CHECK(z[0] == sp.zeros_dx && z[1] == sp.numel_dx && z[2] == sp.zeros_dh && z[3] == sp.numel_dh && z[0] > 0 &&
              z[2] > 0 && z[0] < z[1] && !z2[0] && !z2[1] && !z2[2] && !z2[3],
          "zeros: the session's delta counters (%lld/%lld, %lld/%lld) equal the model's and reset", z[0], z[1], z[2],
          z[3]);
    p->i->session_free(ds);
    dpd_model_free(dm);
    p->i->session_free(s2);
    free(m1), free(v1), free(dx0), free(dx1), free(p2);
    p->i->session_free(s);
    dpd_adamw_free(&o);
    dpd_model_free(m);
    free(x), free(t), free(y0), free(y1), free(p1);
}

static void bounds(void) {
    unsigned long long mem = 1ull << 30;
    int lo = dpd_settings_batch_bound("low", mem, 1 << 20), hi = dpd_settings_batch_bound("max", mem, 1 << 20);
    CHECK(lo == 256 && hi == 921 && dpd_settings_batch_bound("medium", mem, 1 << 20) == 512, "gpu_memory bounds %d %d", lo, hi);
}

/* A ustar header for name (type '0' file, '3' character device) declaring size bytes. */
static void tar_header(FILE *f, const char *name, char type, unsigned long long size) {
    unsigned char h[512] = {0};
    snprintf((char *)h, 100, "%s", name);
    snprintf((char *)h + 100, 8, "%07o", 0644);
    snprintf((char *)h + 108, 8, "%07o", 0);
    snprintf((char *)h + 116, 8, "%07o", 0);
    snprintf((char *)h + 124, 12, "%011llo", size);
    snprintf((char *)h + 136, 12, "%011o", 0);
    h[156] = (unsigned char)type;
    memcpy(h + 257, "ustar", 6), memcpy(h + 263, "00", 2);
    memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (int i = 0; i < 512; i++) sum += h[i];
    snprintf((char *)h + 148, 8, "%06o", sum);
    fwrite(h, 1, 512, f);
}

/* A small file entry with its data padded to 512 bytes. */
static void tar_file(FILE *f, const char *name, const char *data) {
    char pad[512] = {0};
    size_t n = strlen(data);
    tar_header(f, name, '0', n);
    snprintf(pad, sizeof pad, "%s", data);
    fwrite(pad, 1, 512, f);
}

/* Installs archive `path` with its true SHA-256; the refusal must name `expect`. */
static void refused(const char *path, const char *expect, const char *what) {
    unsigned char md[32];
    unsigned len = 0;
    char hex[65], installed[256];
    FILE *f = fopen(path, "rb");
    static unsigned char buf[1 << 20];
    size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f) fclose(f);
    EVP_Digest(buf, n, md, &len, EVP_sha256(), NULL);
    for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", md[i]);
    dpd_error err = {0};
    dpd_status s = dpd_pack_install(path, hex, "/bin/false", installed, sizeof installed, &err);
    CHECK(s != DPD_OK && strstr(err.msg, expect), "%s is refused: %s", what, err.msg);
}

static void archives(void) {
    const char *d = check_tmpdir();
    char path[512];
    setenv("XDG_DATA_HOME", d, 1);
    setenv("XDG_CONFIG_HOME", d, 1);
    snprintf(path, sizeof path, "%s/dev.tar", d);
    FILE *f = fopen(path, "wb");
    tar_file(f, "pack.json", "{}"), tar_header(f, "lib/tty", '3', 0), tar_header(f, "", 0, 0), tar_header(f, "", 0, 0);
    fclose(f);
    refused(path, "entry 'lib/tty' is a special file", "a device file in a pack");
    snprintf(path, sizeof path, "%s/dup.tar", d);
    f = fopen(path, "wb");
    tar_file(f, "pack.json", "{}"), tar_file(f, "lib/a.so", "x"), tar_file(f, "lib/a.so", "y");
    fclose(f);
    refused(path, "entry 'lib/a.so' appears twice", "a duplicate entry");
    snprintf(path, sizeof path, "%s/big.tar", d);
    f = fopen(path, "wb");
    tar_file(f, "pack.json", "{}"), tar_header(f, "lib/big.so", '0', 600ull << 20); /* declared, never stored */
    fclose(f);
    refused(path, "content larger than 512 MiB", "content above the size cap");
    snprintf(path, sizeof path, "%s/many.tar", d);
    f = fopen(path, "wb");
    for (int i = 0; i < 300; i++) {
        char name[64];
        snprintf(name, sizeof name, "lib/f%03d", i);
        tar_file(f, name, "x");
    }
    fclose(f);
    refused(path, "more than 256 entries", "an archive above the entry cap");
    char none[600];
    snprintf(none, sizeof none, "%s/dpd/packs", d);
    snprintf(path, sizeof path, "ls -A %s 2>/dev/null | grep -qv '^.validate.lock$'", none);
    CHECK(system(path) != 0, "refused archives leave nothing installed in %s", none);
}

/* Case 2: two packs of the fault-injecting provider; switch the active link after loading. */
static void restart(const char *fake) {
    const char *d = check_tmpdir();
    char dir[512], cmd[2048];
    setenv("XDG_DATA_HOME", d, 1);
    setenv("XDG_CONFIG_HOME", d, 1);
    for (int k = 0; k < 2; k++) {
        snprintf(dir, sizeof dir, "%s/dpd/packs/cuda-%d/lib", d, k);
        snprintf(cmd, sizeof cmd, "mkdir -p %s && cp %s %s/libfake.so", dir, fake, dir);
        CHECK(system(cmd) == 0, "%s", cmd);
        snprintf(dir, sizeof dir, "%s/dpd/packs/cuda-%d", d, k);
        check_write(dir, "pack.json", "{\"library\": \"lib/libfake.so\"}");
    }
    snprintf(dir, sizeof dir, "%s/dpd/packs/active-cuda", d);
    CHECK(symlink("cuda-0", dir) == 0, "symlink");
    const dpd_provider *p;
    char reason[512], why[512];
    dpd_error err;
    CHECK(dpd_provider_select("cuda", &p, reason, sizeof reason, &err) == DPD_OK && !strcmp(p->i->name, "cuda"),
          "the active pack's provider loads: %s", err.msg);
    CHECK(!dpd_provider_restart_needed(why, sizeof why), "no restart while the pack is unchanged");
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.new", dir);
    CHECK(symlink("cuda-1", tmp) == 0 && rename(tmp, dir) == 0, "switch");
    CHECK(dpd_provider_restart_needed(why, sizeof why) && strstr(why, "restart"), "fallback case 2: %s", why);
}

int main(int argc, char **argv) {
    cpu_table();
    bounds();
    archives();
    const char *fake = getenv("DPD_FAKE_LIB") ? getenv("DPD_FAKE_LIB") : "build/tests/libfake.so";
    if (access(fake, R_OK)) check_skip("restart", "the fake provider is not built");
    else restart(fake);
    return check_done("providers");
}
