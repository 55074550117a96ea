/* test_providers: the CPU provider through the ABI table (forward, train step and AdamW equal to
 * the model's own), the gpu_memory batch bounds, and fallback case 2 — a long-running process
 * that loaded a provider is told to restart when the active pack changes under it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "dpd/provider.h"
#include "optim.h"
#include "provider.h"
#include "settings.h"

static void cpu_table(void) {
    const dpd_provider *p = dpd_provider_cpu();
    CHECK(p->i->api_version == DPD_PROVIDER_API && !strcmp(p->i->name, "cpu") && p->i->device_count(p->ctx) == 1,
          "cpu provider table");
    dpd_model_cfg c = {"gru", 6, 1};
    dpd_model *m;
    dpd_error err;
    dpd_rng r;
    dpd_rng_seed(&r, 2);
    CHECK(dpd_model_create(&c, &m, &err) == DPD_OK, "%s", err.msg);
    dpd_model_init(m, &r);
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
    const char *fake = getenv("DPD_FAKE_LIB") ? getenv("DPD_FAKE_LIB") : "build/tests/libfake.so";
    if (access(fake, R_OK)) check_skip("restart", "the fake provider is not built");
    else restart(fake);
    return check_done("providers");
}
