/* fake_provider: a fault-injecting provider for the tests (never installed by default). It
 * calls itself "cuda", computes with dpd's CPU provider, and misbehaves as the environment asks
 * (read at every call, so the helper process sees the same mode):
 *   DPD_FAKE=ok | abi (wrong ABI version) | nodevice (score 0) | crash (SIGSEGV in forward) |
 *            wrong (forward output off by 0.01) | nomem:N (batches above N fail for memory) |
 *            devfail (a device failure in forward) | nochain (no training through a PA model) |
 *            hang (forward never returns) | gruonly (supports GRU models only)
 *   DPD_FAKE_LOG=FILE appends the batch size of every forward call. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dpd/provider.h"

static const char *mode(void) { return getenv("DPD_FAKE") ? getenv("DPD_FAKE") : "ok"; }

static const dpd_provider_i *cpu(void) { return dpd_provider_cpu()->i; }

static int device_count(void *ctx) { return 1; }

static dpd_status device_info(void *ctx, int d, dpd_device_info *out) {
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "fake GPU (%s)", mode());
    snprintf(out->arch, sizeof out->arch, "sm_00");
    out->memory = 1ull << 30;
    return DPD_OK;
}

static int supports(void *ctx, const dpd_model_cfg *m) {
    return (strcmp(mode(), "gruonly") || !strcmp(m->family, "gru")) && cpu()->supports(NULL, m);
}

static dpd_status session_create(void *ctx, int device, const dpd_model_cfg *m, int max_batch, int T, void **s,
                                 char *err, size_t nerr) {
    return cpu()->session_create(NULL, device, m, max_batch, T, s, err, nerr);
}

static dpd_status forward(void *s, const float *x, int B, int T, float *y, char *err, size_t nerr) {
    const char *m = mode(), *log = getenv("DPD_FAKE_LOG");
    if (log) {
        FILE *f = fopen(log, "a");
        if (f) fprintf(f, "%d\n", B), fclose(f);
    }
    if (!strcmp(m, "crash")) raise(SIGSEGV);
    while (!strcmp(m, "hang")) pause();
    if (!strcmp(m, "devfail")) return snprintf(err, nerr, "fake: device lost"), DPD_E_DEVICE;
    if (!strncmp(m, "nomem:", 6) && B > atoi(m + 6)) return snprintf(err, nerr, "fake: out of memory at batch %d", B), DPD_E_NOMEM;
    dpd_status st = cpu()->forward(s, x, B, T, y, err, nerr);
    if (!st && !strcmp(m, "wrong"))
        for (size_t i = 0; i < (size_t)B * T * 2; i++) y[i] += 0.01f;
    return st;
}

static dpd_provider_i fake_i;

__attribute__((visibility("default"))) dpd_status dpd_provider_init(uint32_t api_version, dpd_provider *out, char *err,
                                                                    size_t nerr) {
    fake_i = *cpu();
    fake_i.name = "cuda";
    fake_i.api_version = !strcmp(mode(), "abi") ? 999 : DPD_PROVIDER_API;
    fake_i.device_count = device_count, fake_i.device_info = device_info, fake_i.supports = supports;
    fake_i.session_create = session_create, fake_i.forward = forward;
    if (!strcmp(mode(), "nochain")) fake_i.forward_keep = NULL, fake_i.backward = NULL, fake_i.clip = NULL;
    out->i = &fake_i, out->ctx = NULL;
    return DPD_OK;
}

__attribute__((visibility("default"))) int dpd_provider_score(char *why, size_t nwhy) {
    if (!strcmp(mode(), "nodevice")) return snprintf(why, nwhy, "fake: no device"), 0;
    return 1;
}
