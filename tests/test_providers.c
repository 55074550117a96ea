/* test_providers: the execution providers, the registry and the runtime packs.
 *  - the CPU provider's v1 slots (forward, train_step + AdamW, forward_keep, get/set_state,
 *    zeros) against its v2 slots through the public session API, bit for bit;
 *  - the gpu_memory batch bounds and the settings' provider names;
 *  - pack archives refused before extraction (device files, duplicate entries, size and count
 *    caps);
 *  - with the fault-injecting provider (tests/fake_provider.c, $DPD_FAKE_LIB) installed as packs:
 *    fallback cases 1 (no pack), 2 (the active pack changed under a running process), 3 (a
 *    validation in progress), 4 (a provider that cannot activate) and 5 (a device failure
 *    during a run); the ABI handshake (a v2 provider, a v1 provider served through v1
 *    emulation, a provider serving neither, refused naming both versions); PA and DPD training
 *    through dpd_train on the v2 and the v1 fake, bit-identical to cpu; batch back-off; ranking;
 *    and a registry that loads each of 9 packs once over 100 selections;
 *  - hostile packs installed through this binary as the validation helper (main serves
 *    `pack probe DIR` as dpd does): versions and active links that would leave the packs
 *    directory, an installer killed while its helper hangs, a stale validation lock, files[]
 *    caps and duplicates, .staging-<pid> leftovers, "./"-style archives, and messages that name
 *    both sizes or hashes and the archive rather than a deleted staging directory. */
#include <fcntl.h>
#include <math.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "dpd/provider.h"
#include "pack.h"
#include "provider.h"
#include "settings.h"

static const char *fake; /* the fake provider's library */

/* A cpu session of model m through the public API, one thread, batches of B x T. */
static dpd_session *cpu_session(const dpd_model *m, int B, int T) {
    char b[16], t[16];
    snprintf(b, sizeof b, "%d", B), snprintf(t, sizeof t, "%d", T);
    const dpd_kv o[4] = {{"provider", "cpu"}, {"threads", "1"}, {"max_batch", b}, {"max_frame", t}};
    dpd_session *s = NULL;
    dpd_error err = {0};
    CHECK(dpd_session_create(m, o, 4, &s, &err) == DPD_OK, "cpu session: %s", err.msg);
    return s;
}

/* A session of the CPU provider's table through session_open with m's tensor table. */
static void *table_session(const dpd_provider *p, const dpd_model *m, int B, int T) {
    dpd_tensor t[64];
    int nt = dpd_model_ntensors(m);
    for (int k = 0; k < nt && k < 64; k++) t[k] = *dpd_model_tensor(m, k);
    const dpd_kv o[1] = {{"threads", "1"}};
    void *s = NULL;
    char msg[512] = "";
    CHECK(p->i->session_open(p->ctx, 0, dpd_model_config(m), t, nt, B, T, o, 1, &s, msg, sizeof msg) == DPD_OK &&
              p->i->upload(s, dpd_model_params((dpd_model *)m), msg, sizeof msg) == DPD_OK,
          "session_open: %s", msg);
    return s;
}

static void cpu_table(void) {
    const dpd_provider *p = dpd_provider_cpu();
    CHECK(p->i->api_version == DPD_PROVIDER_API && !strcmp(p->i->name, "cpu") && p->i->device_count(p->ctx) == 1,
          "cpu provider table");
    CHECK(p->i->session_open && p->i->attach && p->i->train_steps && p->i->evaluate && p->i->chain,
          "the cpu provider fills every v2 slot");
    CHECK(p->i->session_create && p->i->train_step && p->i->optimizer_step && p->i->forward_keep && p->i->backward &&
              p->i->clip && p->i->get_state && p->i->set_state && p->i->zeros,
          "the cpu provider keeps its v1 slots (the fake provider and v1 emulation use them)");
    dpd_model_cfg c = {"gru", 6, 1};
    dpd_error err = {0};
    dpd_rng r;
    dpd_rng_seed(&r, 2);
    dpd_model *m = check_model(&c, &r), *m2 = check_model(&c, NULL);
    int B = 5, T = 30;
    size_t n = (size_t)B * T * 2, np = dpd_model_nparams(m);
    float *x = malloc(n * 4), *t = malloc(n * 4), *y0 = malloc(n * 4), *y1 = malloc(n * 4), *p1 = malloc(np * 4);
    for (size_t i = 0; i < n; i++) x[i] = (float)(0.3 * dpd_rng_normal(&r)), t[i] = (float)(0.3 * dpd_rng_normal(&r));
    char msg[512] = "";
    void *s;
    CHECK(p->i->session_create(p->ctx, 0, &c, B, T, &s, msg, sizeof msg) == DPD_OK &&
              p->i->upload(s, dpd_model_params(m), msg, sizeof msg) == DPD_OK,
          "session_create: %s", msg);
    dpd_session *ps = cpu_session(m, B, T);
    CHECK(p->i->forward(s, x, B, T, y1, msg, sizeof msg) == DPD_OK && dpd_session_forward(ps, x, B, T, y0, &err) == DPD_OK,
          "forward: %s %s", msg, err.msg);
    CHECK(!memcmp(y0, y1, n * 4), "the table's forward equals the session's");
    /* one step: v1 train_step + optimizer_step on the batch = v2 train_steps on frames 0..B of the
     * same samples resident (L = S = T, so the gathered batch is x itself) */
    double l0 = 0, l1 = 0;
    uint32_t frames[5] = {0, 1, 2, 3, 4};
    CHECK(p->i->train_step(s, x, t, B, T, 0.5, &l1, msg, sizeof msg) == DPD_OK &&
              p->i->optimizer_step(s, 5e-3, 0.01, msg, sizeof msg) == DPD_OK,
          "train step: %s", msg);
    CHECK(dpd_session_attach(ps, DPD_TRAIN, x, t, (size_t)B * T, &err) == DPD_OK &&
              dpd_session_train_steps(ps, frames, 5, B, T, T, 5e-3, 0.01, 0.5, &l0, &err) == DPD_OK &&
              dpd_session_download(ps, m2, &err) == DPD_OK,
          "train_steps: %s", err.msg);
    CHECK(p->i->download(s, p1, msg, sizeof msg) == DPD_OK && l0 == l1 && !memcmp(p1, dpd_model_params(m2), np * 4),
          "v1 train_step + optimizer_step equal v2 train_steps bit for bit (loss %.9g vs %.9g)", l1, l0);
    /* a batch above the session's bound: refused (DPD_E_INVAL), or computed without writing past
     * y (canaries) and equal to the bounded batch's result; in a child, so that a provider writing
     * past its own buffers cannot take the test down */
    CHECK(p->i->forward(s, x, B, T, y0, msg, sizeof msg) == DPD_OK, "forward: %s", msg);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        size_t nb = n + (size_t)T * 2;
        float *xb = malloc(nb * 4), *yb = malloc((nb + 64) * 4);
        memcpy(xb, x, n * 4), memcpy(xb + n, x, (size_t)T * 2 * 4);
        for (size_t i = nb; i < nb + 64; i++) yb[i] = 1234.5f;
        dpd_status st = p->i->forward(s, xb, B + 1, T, yb, msg, sizeof msg);
        if (st == DPD_E_INVAL) _exit(0);
        for (size_t i = nb; i < nb + 64; i++)
            if (yb[i] != 1234.5f) _exit(3);
        double e = 0;
        for (size_t i = 0; i < n; i++) e = fmax(e, fabs((double)yb[i] - y0[i]));
        _exit(st == DPD_OK && e <= 1e-5 ? 0 : 4);
    }
    int ws = 0;
    waitpid(pid, &ws, 0);
    CHECK(pid > 0 && WIFEXITED(ws) && WEXITSTATUS(ws) == 0,
          "a batch above the session's bound is refused or computed within bounds (child %s %d: 3 = wrote past y, "
          "4 = wrong result or another status)",
          WIFSIGNALED(ws) ? "signal" : "exit", WIFSIGNALED(ws) ? WTERMSIG(ws) : WEXITSTATUS(ws));
    float *m1 = malloc(np * 4), *v1 = malloc(np * 4), *m0 = malloc(np * 4), *v0 = malloc(np * 4);
    long step = 0, step0 = 0;
    CHECK(p->i->get_state(s, m1, v1, &step, msg, sizeof msg) == DPD_OK &&
              dpd_session_get_state(ps, m0, v0, &step0, &err) == DPD_OK && step == 1 && step0 == 1 &&
              !memcmp(m1, m0, np * 4) && !memcmp(v1, v0, np * 4),
          "get_state returns the AdamW moments and step count of the session API");
    /* forward_keep is forward; a chained step (backward with dy given, dx out, clip) runs */
    float *dx = malloc(n * 4);
    for (size_t i = 0; i < n; i++) t[i] = (float)(0.01 * (i % 7));
    CHECK(p->i->forward_keep(s, x, B, T, y1, msg, sizeof msg) == DPD_OK && p->i->forward(s, x, B, T, y0, msg, sizeof msg) == DPD_OK &&
              !memcmp(y0, y1, n * 4),
          "forward_keep equals forward: %s", msg);
    CHECK(p->i->forward_keep(s, x, B, T, y1, msg, sizeof msg) == DPD_OK && p->i->backward(s, t, dx, msg, sizeof msg) == DPD_OK &&
              p->i->clip(s, 0.5, msg, sizeof msg) == DPD_OK && p->i->optimizer_step(s, 5e-3, 0.01, msg, sizeof msg) == DPD_OK,
          "chained step: %s", msg);
    double dxn = 0;
    for (size_t i = 0; i < n; i++) dxn += (double)dx[i] * dx[i];
    CHECK(isfinite(dxn) && dxn > 0, "backward writes dx (|dx|^2 = %g)", dxn);
    /* a second session from the first's state steps exactly as the first */
    void *s2;
    CHECK(p->i->download(s, p1, msg, sizeof msg) == DPD_OK &&
              p->i->session_create(p->ctx, 0, &c, B, T, &s2, msg, sizeof msg) == DPD_OK &&
              p->i->upload(s2, p1, msg, sizeof msg) == DPD_OK && p->i->get_state(s, m1, v1, &step, msg, sizeof msg) == DPD_OK &&
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
    /* zeros: a DeltaGRU table session's counters equal the session API's over the same pass,
     * then reset */
    dpd_model_cfg dc = {"deltagru", 5, 1, .thx = 0.05, .thh = 0.05};
    dpd_model *dm = check_model(&dc, &r);
    void *ds = table_session(p, dm, B, T);
    dpd_session *dps = cpu_session(dm, B, T);
    long long z[4] = {0}, z1[4] = {0}, z2[4] = {1, 1, 1, 1};
    CHECK(ds && p->i->forward(ds, x, B, T, y1, msg, sizeof msg) == DPD_OK && p->i->zeros(ds, z, msg, sizeof msg) == DPD_OK &&
              p->i->zeros(ds, z2, msg, sizeof msg) == DPD_OK,
          "deltagru session: %s", msg);
    CHECK(dpd_session_forward(dps, x, B, T, y0, &err) == DPD_OK && dpd_session_zeros(dps, z1, &err) == DPD_OK &&
              !memcmp(y0, y1, n * 4),
          "deltagru through the session API: %s", err.msg);
    CHECK(z[0] == z1[0] && z[1] == z1[1] && z[2] == z1[2] && z[3] == z1[3] && z[0] > 0 && z[2] > 0 && z[0] < z[1] &&
              !z2[0] && !z2[1] && !z2[2] && !z2[3],
          "zeros: the delta counters (%lld/%lld, %lld/%lld) equal the session API's and reset", z[0], z[1], z[2], z[3]);
    dpd_sparsity sp;
    CHECK(dpd_model_sparsity(dm, z, &sp) == 1 && sp.sp_dx > 0 && sp.sp_dx < 1, "sparsity from the counters");
    p->i->session_free(ds);
    dpd_session_free(dps);
    dpd_model_free(dm);
    p->i->session_free(s2);
    p->i->session_free(s);
    dpd_session_free(ps);
    free(m1), free(v1), free(m0), free(v0), free(dx), free(p2);
    dpd_model_free(m), dpd_model_free(m2);
    free(x), free(t), free(y0), free(y1), free(p1);
}

static void bounds(void) {
    unsigned long long mem = 1ull << 30;
    int lo = dpd_settings_batch_bound("low", mem, 1 << 20), hi = dpd_settings_batch_bound("max", mem, 1 << 20);
    CHECK(lo == 256 && hi == 921 && dpd_settings_batch_bound("medium", mem, 1 << 20) == 512, "gpu_memory bounds %d %d", lo, hi);
    /* GRU-23 x 200 needs 200 (5 x 23 + 16) 4 + 1911 x 4 = 112444 bytes a sequence */
    dpd_model_cfg g = {"gru", 23, 1};
    int med = dpd_batch_bound("medium", mem, &g, 200), low = dpd_batch_bound("low", mem, &g, 200);
    CHECK(med == 4774 && low == 2387 && dpd_batch_bound("max", 0, &g, 200) == 0,
          "dpd_batch_bound: GRU-23 x 200 on 1 GiB: %d (medium), %d (low)", med, low);
}

static void settings(void) {
    const char *d = check_tmpdir();
    setenv("XDG_CONFIG_HOME", d, 1);
    dpd_settings st;
    dpd_error err = {0};
    CHECK(dpd_settings_load(&st, &err) == DPD_OK && !strcmp(st.provider, "auto"), "defaults: %s", err.msg);
    const char *good[] = {"auto", "cpu", "cuda", "npu_2", "fake9", "abcdefghijklmnopqrstuvwxyz01234"};
    for (size_t k = 0; k < sizeof good / sizeof *good; k++)
        CHECK(dpd_settings_set(&st, "provider", good[k], &err) == DPD_OK && !strcmp(st.provider, good[k]),
              "provider %s is accepted: %s", good[k], err.msg);
    const char *bad[] = {"", "TPU", "tpu!", "../x", "abcdefghijklmnopqrstuvwxyz012345"};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++)
        CHECK(dpd_settings_set(&st, "provider", bad[k], &err) == DPD_E_INVAL &&
                  strstr(err.msg, "setting 'provider' must be auto, cpu or an installed pack's name"),
              "provider '%s' is refused: %s", bad[k], err.msg);
    CHECK(dpd_settings_set(&st, "provider", "npu_2", &err) == DPD_OK && dpd_settings_save(&st, &err) == DPD_OK &&
              dpd_settings_load(&st, &err) == DPD_OK && !strcmp(st.provider, "npu_2"),
          "a pack's name as the provider setting survives save and load: %s", err.msg);
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
    snprintf(path, sizeof path, "%s/ver.tar", d);
    f = fopen(path, "wb");
    tar_file(f, "pack.json", "{\"provider\":\"../x\",\"pack_version\":\"1\",\"abi_version\":2,\"library\":\"a\",\"files\":[]}");
    fclose(f);
    refused(path, "provider '../x' is not a provider name", "a pack.json provider that leaves the packs directory");
    snprintf(path, sizeof path, "%s/abi.tar", d);
    f = fopen(path, "wb");
    tar_file(f, "pack.json", "{\"provider\":\"x\",\"pack_version\":\"1\",\"abi_version\":3,\"library\":\"a\",\"files\":[]}");
    fclose(f);
    refused(path, "provider ABI version 3, this dpd speaks 2 (or 1)", "a pack.json ABI version dpd does not speak");
    char none[600];
    snprintf(none, sizeof none, "%s/dpd/packs", d);
    snprintf(path, sizeof path, "ls -A %s 2>/dev/null | grep -qv '^.validate.lock$'", none);
    CHECK(system(path) != 0, "refused archives leave nothing installed in %s", none);
}

/* ---- the registry, with the fake provider installed as packs ------------------------------ */

/* A fresh data and config home; returns its packs directory. */
static const char *home(void) {
    static char packs[600];
    const char *d = check_tmpdir();
    setenv("XDG_DATA_HOME", d, 1);
    setenv("XDG_CONFIG_HOME", d, 1);
    snprintf(packs, sizeof packs, "%s/dpd/packs", d);
    return packs;
}

/* Installs the fake as pack dir <packs>/<name>-<ver> and (activate) links active-<name> to it. */
static void install(const char *name, const char *ver, int activate) {
    char dir[1024], cmd[3072];
    snprintf(dir, sizeof dir, "%s/%s-%s", dpd_packs_dir(), name, ver);
    snprintf(cmd, sizeof cmd, "mkdir -p %s/lib && cp %s %s/lib/libfake.so", dir, fake, dir);
    CHECK(system(cmd) == 0, "%s", cmd);
    snprintf(cmd, sizeof cmd, "{\"provider\": \"%s\", \"library\": \"lib/libfake.so\"}", name);
    check_write(dir, "pack.json", cmd);
    if (!activate) return;
    snprintf(cmd, sizeof cmd, "%s/active-%s", dpd_packs_dir(), name);
    snprintf(dir, sizeof dir, "%s-%s", name, ver);
    unlink(cmd);
    CHECK(symlink(dir, cmd) == 0, "symlink %s", cmd);
}

/* dpd_provider_choose(want): its status, the name chosen and the reason or message. */
static dpd_status choose(const char *want, char *name, char *why, size_t nwhy) {
    dpd_error err = {0};
    char reason[1024] = "";
    dpd_status s = dpd_provider_choose(want, name, 32, reason, sizeof reason, &err);
    snprintf(why, nwhy, "%s", s ? err.msg : reason);
    return s;
}

/* Case 1 (no pack), case 3 (validation in progress), a malformed name. */
static void no_pack(void) {
    home();
    char name[32], why[1024];
    CHECK(choose("cuda", name, why, sizeof why) == DPD_E_UNSUPPORTED &&
              strstr(why, "no cuda pack is installed: build one with 'make pack-cuda' and install it with 'dpd pack "
                          "install dist/dpd-pack-cuda-"),
          "case 1: an explicit cuda without a pack says how to build and install one: %s", why);
    CHECK(choose("npu", name, why, sizeof why) == DPD_E_UNSUPPORTED && strstr(why, "no npu pack is installed") &&
              strstr(why, "dpd pack install"),
          "case 1: any provider name without a pack says how to install one: %s", why);
    CHECK(choose("auto", name, why, sizeof why) == DPD_OK && !strcmp(name, "cpu") &&
              !strcmp(why, "cpu: no runtime pack installed"),
          "case 1: auto without a pack uses cpu and says why: %s", why);
    CHECK(choose("Cuda!", name, why, sizeof why) == DPD_E_INVAL && strstr(why, "got 'Cuda!'"), "a malformed name: %s", why);
    dpd_model_cfg c = {"gru", 4, 1};
    dpd_model *m = check_model(&c, NULL);
    const dpd_kv o[1] = {{"provider", "cuda"}};
    dpd_session *s = NULL;
    dpd_error err = {0};
    CHECK(dpd_session_create(m, o, 1, &s, &err) == DPD_E_UNSUPPORTED && strstr(err.msg, "no cuda pack is installed") && !s,
          "case 1: a session with provider=cuda does not start: %s", err.msg);
    /* case 3: another open file description holds the validation lock */
    setenv("DPD_FAKE", "ok", 1), setenv("DPD_FAKE_NAME", "fakelock", 1); /* the name is read when it loads */
    install("fakelock", "1.0", 1);
    char lock[700];
    snprintf(lock, sizeof lock, "%s/.validate.lock", dpd_packs_dir());
    int fd = open(lock, O_RDWR | O_CREAT, 0644);
    CHECK(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0, "lock %s", lock);
    CHECK(choose("fakelock", name, why, sizeof why) == DPD_E_UNSUPPORTED && strstr(why, "validation in progress, try again"),
          "case 3: an explicit provider during a validation is refused: %s", why);
    CHECK(choose("auto", name, why, sizeof why) == DPD_OK && !strcmp(name, "cpu") && strstr(why, "being validated"),
          "case 3: auto during a validation uses cpu: %s", why);
    if (fd >= 0) close(fd);
    CHECK(choose("auto", name, why, sizeof why) == DPD_OK && !strcmp(name, "fakelock") && strstr(why, "fakelock from "),
          "after the validation auto uses the pack: %s", why);
    unsetenv("DPD_FAKE_NAME");
    dpd_model_free(m);
}

/* Case 4, the ABI handshake and a library that is not the provider its link names. */
static void refusals(void) {
    home();
    char name[32], why[1024];
    setenv("DPD_FAKE", "nodevice", 1), setenv("DPD_FAKE_NAME", "fakenodev", 1);
    install("fakenodev", "1.0", 1);
    CHECK(choose("fakenodev", name, why, sizeof why) == DPD_E_DEVICE && strstr(why, "not usable on this machine: fake: no device"),
          "case 4: an explicit provider scored 0 is refused with the score's reason: %s", why);
    CHECK(choose("auto", name, why, sizeof why) == DPD_OK && !strcmp(name, "cpu") && strstr(why, "cpu: ") &&
              strstr(why, "fake: no device"),
          "case 4: auto skips a provider scored 0 and says why: %s", why);
    dpd_provider_info info[4];
    int n = dpd_provider_list(info, 4);
    CHECK(n == 2 && !strcmp(info[0].name, "cpu") && info[0].usable && !strcmp(info[1].name, "fakenodev") && !info[1].usable &&
              strstr(info[1].why, "fake: no device") && strstr(info[1].pack, "fakenodev-1.0"),
          "dpd_provider_list shows the unusable pack and why (%d: %s)", n, n > 1 ? info[1].why : "");
    setenv("DPD_FAKE", "abi", 1), setenv("DPD_FAKE_NAME", "fakeabi", 1);
    install("fakeabi", "1.0", 1);
    CHECK(choose("fakeabi", name, why, sizeof why) == DPD_E_UNSUPPORTED &&
              strstr(why, "provider ABI version 999, dpd needs 2 (or 1)"),
          "a provider serving neither ABI version is refused naming both: %s", why);
    setenv("DPD_FAKE", "ok", 1), setenv("DPD_FAKE_NAME", "cuda", 1);
    install("notcuda", "1.0", 1);
    CHECK(choose("notcuda", name, why, sizeof why) == DPD_E_FORMAT && strstr(why, "calls itself provider 'cuda'"),
          "a library that is not the provider its link names is refused: %s", why);
    CHECK(choose("auto", name, why, sizeof why) == DPD_OK && !strcmp(name, "cpu"), "auto uses cpu: %s", why);
    unsetenv("DPD_FAKE_NAME");
}

/* Reads the data region of a safetensors file (after the 8-byte length and the JSON header). */
static unsigned char *tensor_data(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL;
    uint64_t hl = 0;
    *n = 0;
    if (!f) return NULL;
    if (fread(&hl, 8, 1, f) == 1 && !fseek(f, 0, SEEK_END)) {
        long end = ftell(f);
        if (end > (long)(hl + 8) && (buf = malloc((size_t)end)) && !fseek(f, (long)(8 + hl), SEEK_SET))
            *n = fread(buf, 1, (size_t)(end - 8 - (long)hl), f);
    }
    fclose(f);
    return buf;
}

/* A quick GRU run (PA when pa is NULL, else DPD through it) on provider; fills dir. */
static int train(const char *data, const char *out, const char *provider, const char *pa, char *dir, size_t ndir,
                 char *used, size_t nused) {
    dpd_train_cfg c;
    dpd_error err = {0};
    dpd_train_result res;
    dpd_train_defaults(&c);
    CHECK(dpd_train_preset(&c, "quick", &err) == DPD_OK, "preset");
    c.epochs = 2;
    snprintf(c.data, sizeof c.data, "%s", data);
    snprintf(c.out, sizeof c.out, "%s", out);
    snprintf(c.provider, sizeof c.provider, "%s", provider);
    if (pa) snprintf(c.pa, sizeof c.pa, "%s", pa);
    snprintf(c.model.family, sizeof c.model.family, "gru");
    c.model.hidden = pa ? 5 : 6, c.model.layers = 1;
    c.threads = 1;
    dpd_status s = dpd_train(&c, NULL, NULL, &res, &err);
    CHECK(s == DPD_OK, "%s training on %s: %s", pa ? "DPD" : "PA", provider, err.msg);
    snprintf(dir, ndir, "%s", s ? "" : res.run_dir);
    snprintf(used, nused, "%s", s ? "" : res.provider);
    return s == DPD_OK;
}

/* The weights and AdamW state of run dir's last.safetensors equal ref's, bit for bit. */
static int same_last(const char *dir, const char *ref) {
    char a[4200], b[4200];
    snprintf(a, sizeof a, "%s/last.safetensors", dir), snprintf(b, sizeof b, "%s/last.safetensors", ref);
    size_t na, nb;
    unsigned char *da = tensor_data(a, &na), *db = tensor_data(b, &nb);
    int same = da && db && na == nb && na > 0 && !memcmp(da, db, na);
    free(da), free(db);
    return same;
}

/* PA and DPD training through dpd_train on the v2 fake and on the v1 fake (v1 emulation: host
 * gather, train_step + optimizer_step, forward_keep/backward/clip) equal cpu bit for bit. */
static void training(void) {
    const char *packs = home();
    char data[700], out[700], name[32], why[1024];
    snprintf(data, sizeof data, "%s/../synth", packs);
    dpd_synth_cfg sc;
    dpd_synth_defaults(&sc);
    sc.length = 12800, sc.seed = 1;
    dpd_error err = {0};
    CHECK(dpd_synth_write(&sc, data, &err) == DPD_OK, "synth: %s", err.msg);
    setenv("DPD_FAKE", "ok", 1), setenv("DPD_FAKE_NAME", "fakev2", 1);
    install("fakev2", "1.0", 1);
    CHECK(choose("fakev2", name, why, sizeof why) == DPD_OK, "fakev2: %s", why);
    setenv("DPD_FAKE", "v1", 1), setenv("DPD_FAKE_NAME", "fakev1", 1);
    install("fakev1", "1.0", 1);
    CHECK(choose("fakev1", name, why, sizeof why) == DPD_OK, "fakev1: %s", why);
    setenv("DPD_FAKE", "ok", 1), unsetenv("DPD_FAKE_NAME");
    const dpd_provider *v1 = NULL, *v2 = NULL;
    char reason[1024];
    CHECK(dpd_provider_select("fakev1", &v1, reason, sizeof reason, &err) == DPD_OK && v1->i->api_version == 1 &&
              !v1->i->session_open && !v1->i->attach && !v1->i->train_steps && !v1->i->evaluate && !v1->i->chain &&
              v1->i->session_create && v1->i->train_step && v1->i->zeros,
          "a v1 provider is served its v1 table with NULL v2 slots: %s", err.msg);
    CHECK(dpd_provider_select("fakev2", &v2, reason, sizeof reason, &err) == DPD_OK && v2->i->api_version == 2 &&
              v2->i->session_open && v2->i->train_steps && v2->i->evaluate && v2->i->chain,
          "a v2 provider is served its full table: %s", err.msg);
    const char *prov[3] = {"cpu", "fakev2", "fakev1"};
    char pa[3][4200], dpd[3][4200], used[600];
    for (int k = 0; k < 3; k++) {
        snprintf(out, sizeof out, "%s/../runs_%s", packs, prov[k]);
        if (!train(data, out, prov[k], NULL, pa[k], sizeof pa[k], used, sizeof used)) return;
        if (k) {
            char want[64];
            snprintf(want, sizeof want, "%s (%s from ", prov[k], prov[k]);
            CHECK(!strncmp(used, want, strlen(want)), "the PA run names its provider: %s", used);
            CHECK(same_last(pa[k], pa[0]), "PA training on %s (ABI v%d) equals cpu bit for bit", prov[k], k == 1 ? 2 : 1);
        }
    }
    for (int k = 0; k < 3; k++) {
        snprintf(out, sizeof out, "%s/../druns_%s", packs, prov[k]);
        if (!train(data, out, prov[k], pa[0], dpd[k], sizeof dpd[k], used, sizeof used)) return;
        if (k)
            CHECK(same_last(dpd[k], dpd[0]) && strstr(used, prov[k]),
                  "DPD training through the PA on %s (ABI v%d) equals cpu bit for bit (%s)", prov[k], k == 1 ? 2 : 1, used);
    }
}

/* max |a - b| / max |a| over n values. */
static double maxdev(const float *a, const float *b, size_t n) {
    double e = 0, mx = 0;
    for (size_t i = 0; i < n; i++) e = fmax(e, fabs((double)a[i] - b[i])), mx = fmax(mx, fabs((double)a[i]));
    return mx > 0 ? e / mx : e;
}

/* Batch back-off (nomem:2): forward and evaluate finish with the cpu result, halving 8 -> 4 -> 2;
 * then case 5: a device failure ends the call, and the preference moves to cpu. */
static void backoff(void) {
    const char *packs = home();
    char log[700], name[32], why[1024];
    snprintf(log, sizeof log, "%s/../fake.log", packs);
    setenv("DPD_FAKE", "ok", 1), setenv("DPD_FAKE_NAME", "fakemem", 1);
    install("fakemem", "1.0", 1);
    dpd_model_cfg c = {"gru", 6, 1};
    dpd_rng r;
    dpd_rng_seed(&r, 5);
    dpd_model *m = check_model(&c, &r);
    int B = 8, T = 40;
    size_t n = (size_t)B * T * 2;
    float *x = malloc(n * 4), *y0 = malloc(n * 4), *y1 = malloc(n * 4), *e0 = malloc(n * 4), *e1 = malloc(n * 4);
    for (size_t i = 0; i < n; i++) x[i] = (float)(0.3 * dpd_rng_normal(&r));
    dpd_session *ref = cpu_session(m, B, T), *s = NULL;
    const dpd_kv o[3] = {{"provider", "auto"}, {"max_batch", "8"}, {"max_frame", "40"}};
    dpd_error err = {0};
    CHECK(dpd_session_create(m, o, 3, &s, &err) == DPD_OK && !strcmp(dpd_session_provider(s), "fakemem") &&
              strstr(dpd_session_reason(s), "fakemem from "),
          "auto picks the usable pack: %s", s ? dpd_session_reason(s) : err.msg);
    unsetenv("DPD_FAKE_NAME");
    if (!s) return;
    setenv("DPD_FAKE", "nomem:2", 1), setenv("DPD_FAKE_LOG", log, 1);
    CHECK(dpd_session_forward(s, x, B, T, y1, &err) == DPD_OK && dpd_session_forward(ref, x, B, T, y0, &err) == DPD_OK,
          "forward with back-off: %s", err.msg);
    CHECK(maxdev(y0, y1, n) <= 1e-5 && dpd_session_batch(s) == 2,
          "back-off: the result equals cpu's within 1e-5 (%.2e; batches of another size may round differently), the "
          "working batch is %d", maxdev(y0, y1, n), dpd_session_batch(s));
    FILE *f = fopen(log, "r");
    int first = 0, last = 0, k = 0, v, four = 0;
    while (f && fscanf(f, "%d", &v) == 1) first = k++ ? first : v, last = v, four |= v == 4;
    if (f) fclose(f);
    CHECK(first == 8 && four && last == 2, "back-off: batches go 8 -> 4 -> 2 and stay at 2 (first %d, last %d)", first, last);
    CHECK(dpd_session_attach(s, DPD_VAL, x, NULL, (size_t)B * T, &err) == DPD_OK &&
              dpd_session_attach(ref, DPD_VAL, x, NULL, (size_t)B * T, &err) == DPD_OK &&
              dpd_session_evaluate(ref, DPD_VAL, T, 8, e0, &err) == DPD_OK,
          "attach: %s", err.msg);
    dpd_status es = dpd_session_evaluate(s, DPD_VAL, T, 8, e1, &err);
    CHECK(es == DPD_OK && maxdev(e0, e1, n) <= 1e-5, "back-off in evaluate: a batch of 8 that fails for memory is "
          "halved and the result equals cpu's within 1e-5 (%s)", es ? err.msg : "ok");
    /* an evaluation back-off does not shrink what training steps may use */
    float ty[2 * 8 * 40] = {0};
    uint32_t frames[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    double loss;
    CHECK(dpd_session_attach(s, DPD_TRAIN, x, ty, (size_t)B * T, &err) == DPD_OK &&
              dpd_session_train_steps(s, frames, 8, 8, 20, 20, 1e-3, 0, 0, &loss, &err) == DPD_OK,
          "a training step of 8 after evaluation backed off to 2: %s", err.msg);
    /* case 5 */
    setenv("DPD_FAKE", "devfail", 1), unsetenv("DPD_FAKE_LOG");
    CHECK(dpd_session_forward(s, x, B, T, y1, &err) == DPD_E_DEVICE && strstr(err.msg, "not repeated") &&
              strstr(err.msg, "fake: device lost"),
          "case 5: a device failure ends the call with an error: %s", err.msg);
    dpd_settings st;
    CHECK(dpd_settings_load(&st, &err) == DPD_OK && !strcmp(st.provider, "cpu") && strstr(st.reason, "fakemem failed"),
          "case 5: the preference moves to cpu with the reason (%s: %s)", st.provider, st.reason);
    CHECK(choose("", name, why, sizeof why) == DPD_OK && !strcmp(name, "cpu") && strstr(why, "fakemem failed"),
          "case 5: later work uses cpu and says why: %s", why);
    CHECK(choose("auto", name, why, sizeof why) == DPD_OK && !strcmp(name, "cpu"), "case 5: so does auto: %s", why);
    CHECK(choose("fakemem", name, why, sizeof why) == DPD_OK && !strcmp(name, "fakemem"),
          "an explicit request still reaches the pack: %s", why);
    setenv("DPD_FAKE", "ok", 1);
    dpd_session_free(s), dpd_session_free(ref);
    dpd_model_free(m);
    free(x), free(y0), free(y1), free(e0), free(e1);
}

/* 9 packs (one more than the registry's old fixed table), selected 100 times: each library is
 * loaded and initialised once; auto and the list rank them by score. */
static void many(void) {
    const char *packs = home();
    char log[700], name[32], why[1024], want[32];
    snprintf(log, sizeof log, "%s/../loads.log", packs);
    setenv("DPD_FAKE", "ok", 1), setenv("DPD_FAKE_LOADS", log, 1);
    for (int k = 1; k <= 9; k++) {
        snprintf(want, sizeof want, "fake%d", k);
        install(want, "1.0", 1);
    }
    int ok = 0;
    for (int i = 0; i < 100; i++) {
        char score[8];
        snprintf(want, sizeof want, "fake%d", i % 9 + 1);
        snprintf(score, sizeof score, "%d", (i % 9 + 1) * DPD_CPU_RANK); /* the lowest ties cpu */
        setenv("DPD_FAKE_NAME", want, 1), setenv("DPD_FAKE_SCORE", score, 1); /* read at the first load only */
        ok += choose(want, name, why, sizeof why) == DPD_OK && !strcmp(name, want);
        if (i < 9) CHECK(!strcmp(name, want), "selection %d: %s", i, why);
    }
    unsetenv("DPD_FAKE_NAME"), unsetenv("DPD_FAKE_SCORE"), unsetenv("DPD_FAKE_LOADS");
    CHECK(ok == 100, "100 selections over 9 packs all succeed (%d)", ok);
    FILE *f = fopen(log, "r");
    int loads = 0, inits = 0, per[10] = {0};
    char line[128];
    while (f && fgets(line, sizeof line, f)) {
        int k;
        loads += !strcmp(line, "load\n");
        if (sscanf(line, "init fake%d 2", &k) == 1 && k >= 1 && k <= 9) inits++, per[k]++;
    }
    if (f) fclose(f);
    int once = 1;
    for (int k = 1; k <= 9; k++) once &= per[k] == 1;
    CHECK(loads == 9 && inits == 9 && once, "each of the 9 packs was dlopen'd and initialised once (%d loads, %d inits)",
          loads, inits);
    CHECK(choose("auto", name, why, sizeof why) == DPD_OK && !strcmp(name, "fake9") && strstr(why, "fake9 from "),
          "auto picks the highest score: %s", why);
    dpd_provider_info info[16];
    int n = dpd_provider_list(info, 16), ranked = n == 10;
    for (int k = 0; k < 9 && ranked; k++) {
        snprintf(want, sizeof want, "fake%d", 9 - k);
        ranked = !strcmp(info[k].name, want) && info[k].usable && info[k].score == (9 - k) * DPD_CPU_RANK &&
                 info[k].ndevices == 1;
    }
    CHECK(ranked && !strcmp(info[9].name, "cpu") && info[9].score == DPD_CPU_RANK && info[9].ndevices == 1,
          "dpd_provider_list ranks by score, a pack before cpu at equal score (%d entries, first %s)", n,
          n ? info[0].name : "");
    CHECK(dpd_provider_list(info, 3) == 3 && !strcmp(info[0].name, "fake9"), "dpd_provider_list fills at most max");
    const dpd_provider *p1 = NULL, *p2 = NULL;
    char reason[1024];
    dpd_error err = {0};
    CHECK(dpd_provider_select("fake4", &p1, reason, sizeof reason, &err) == DPD_OK &&
              dpd_provider_select("fake4", &p2, reason, sizeof reason, &err) == DPD_OK && p1 == p2,
          "a provider handle is the same for the life of the process");
}

/* Case 2: two packs of one provider; the active link switches after the process loaded it. */
static void restart(void) {
    home();
    char name[32], why[1024];
    setenv("DPD_FAKE", "ok", 1);
    install("cuda", "0", 1);
    install("cuda", "1", 0);
    CHECK(choose("cuda", name, why, sizeof why) == DPD_OK && !strcmp(name, "cuda") && strstr(why, "cuda from "),
          "the active pack's provider loads: %s", why);
    CHECK(!dpd_provider_restart_needed(why, sizeof why), "no restart while the pack is unchanged");
    char link[700], tmp[800];
    snprintf(link, sizeof link, "%s/active-cuda", dpd_packs_dir());
    snprintf(tmp, sizeof tmp, "%s.new", link);
    CHECK(symlink("cuda-1", tmp) == 0 && rename(tmp, link) == 0, "switch");
    CHECK(dpd_provider_restart_needed(why, sizeof why) && strstr(why, "the active cuda pack changed") &&
              strstr(why, "cuda-0 -> ") && strstr(why, "cuda-1): restart"),
          "fallback case 2: %s", why);
    CHECK(choose("cuda", name, why, sizeof why) == DPD_OK && strstr(why, "cuda-0"),
          "until a restart the process keeps the pack it loaded: %s", why);
}

/* ---- hostile packs (issue 9): names, the validation lock, files[], leftovers, messages ----- */

static char helper[4096]; /* this very binary: main() serves `pack probe DIR` like dpd does */

/* SHA-256 of a file as lowercase hex. */
static void sha_hex(const char *path, char hex[65]) {
    unsigned char md[32], buf[1 << 16];
    unsigned len = 0;
    FILE *f = fopen(path, "rb");
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    EVP_DigestInit_ex(c, EVP_sha256(), NULL);
    for (size_t n; f && (n = fread(buf, 1, sizeof buf, f)) > 0;) EVP_DigestUpdate(c, buf, n);
    EVP_DigestFinal_ex(c, md, &len);
    EVP_MD_CTX_free(c);
    if (f) fclose(f);
    for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", md[i]);
}

/* A pack directory src of the fake provider (lib/libfake.so) calling itself provider, with
 * pack_version ver; files is the files[] JSON, or NULL for the one true entry. */
static void fake_dir(const char *src, const char *provider, const char *ver, const char *files) {
    static char cmd[48000];
    char lib[4200], hex[65], entry[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s/lib' && cp '%s' '%s/lib/libfake.so'", src, src, fake, src);
    CHECK(system(cmd) == 0, "%s", cmd);
    snprintf(lib, sizeof lib, "%s/lib/libfake.so", src);
    struct stat st;
    stat(lib, &st);
    sha_hex(lib, hex);
    snprintf(entry, sizeof entry, "[{\"path\":\"lib/libfake.so\",\"size\":%lld,\"sha256\":\"%s\"}]", (long long)st.st_size, hex);
    snprintf(cmd, sizeof cmd, "{\"provider\":\"%s\",\"pack_version\":\"%s\",\"abi_version\":2,\"library\":\"lib/libfake.so\","
             "\"files\":%s}", provider, ver, files ? files : entry);
    check_write(src, "pack.json", cmd);
}

/* src as the archive out ("./"-style entries when dot); its SHA-256 in hex. */
static void fake_archive(const char *src, const char *out, int dot, char hex[65]) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "tar -C '%s' -czf '%s' %s", src, out, dot ? "." : "pack.json lib");
    CHECK(system(cmd) == 0, "%s", cmd);
    sha_hex(out, hex);
}

/* Installs archive with helper h; the status, the message in err. */
static dpd_status pack_install(const char *archive, const char *hex, const char *h, char *installed, size_t n,
                               dpd_error *err) {
    memset(err, 0, sizeof *err);
    installed[0] = 0;
    return dpd_pack_install(archive, hex, h, installed, n, err);
}

/* 1 when path exists (a link counts, followed or not). */
static int exists(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}

/* 1 while pid runs (a zombie holds nothing: it counts as gone). */
static int running(pid_t pid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

/* Item 2: pack_version and provider as path components; the active link's target. */
static void pack_paths(void) {
    const char *packs = home();
    char d[700], src[800], arc[800], hex[65], installed[256], name[32], why[1024];
    snprintf(d, sizeof d, "%s/../..", packs); /* the temp home */
    snprintf(src, sizeof src, "%s/src", d), snprintf(arc, sizeof arc, "%s/p.tar.gz", d);
    dpd_error err;
    const char *bad[] = {"9.9/../../../somewhere", "..", ".", ".hidden", "a b", "1/2",
                         "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}; /* 64 */
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        fake_dir(src, "fakever", bad[k], NULL);
        fake_archive(src, arc, 0, hex);
        CHECK(pack_install(arc, hex, "/bin/false", installed, sizeof installed, &err) == DPD_E_FORMAT &&
                  strstr(err.msg, "is not a version"),
              "pack_version '%s' is refused: %s", bad[k], err.msg);
    }
    char out[900];
    snprintf(out, sizeof out, "%s/somewhere", d);
    CHECK(!exists(out), "a version with .. installs nothing outside the packs directory");
    setenv("DPD_FAKE", "ok", 1), setenv("DPD_FAKE_NAME", "fakever", 1);
    fake_dir(src, "fakever", "1.0-rc1+b.2", NULL);
    fake_archive(src, arc, 0, hex);
    CHECK(pack_install(arc, hex, helper, installed, sizeof installed, &err) == DPD_OK &&
              !strcmp(installed, "fakever-1.0-rc1+b.2"),
          "a version of [A-Za-z0-9._+-] installs: %s %s", installed, err.msg);
    /* an active link whose target leaves the packs directory is not followed */
    char outside[800], link[800], cmd[4096];
    snprintf(outside, sizeof outside, "%s/outside/evil-1", d);
    setenv("DPD_FAKE_NAME", "evil", 1);
    fake_dir(outside, "evil", "1", NULL);
    snprintf(link, sizeof link, "%s/active-evil", packs);
    CHECK(symlink("../../outside/evil-1", link) == 0, "symlink %s", link);
    CHECK(choose("evil", name, why, sizeof why) != DPD_OK && !strstr(why, "outside"),
          "active-evil -> ../../outside/evil-1 is not loaded: %s", why);
    setenv("DPD_FAKE_NAME", "evila", 1);
    snprintf(outside, sizeof outside, "%s/outside/evila-1", d);
    fake_dir(outside, "evila", "1", NULL);
    snprintf(link, sizeof link, "%s/active-evila", packs);
    CHECK(symlink(outside, link) == 0, "symlink %s", link);
    CHECK(choose("evila", name, why, sizeof why) != DPD_OK, "active-evila -> an absolute path outside is not loaded: %s", why);
    setenv("DPD_FAKE_NAME", "evilb", 1);
    snprintf(outside, sizeof outside, "%s/outside/evilb-1", d);
    fake_dir(outside, "evilb", "1", NULL);
    snprintf(cmd, sizeof cmd, "ln -s '%s' '%s/evilb-1' && ln -s evilb-1 '%s/active-evilb'", outside, packs, packs);
    CHECK(system(cmd) == 0, "%s", cmd);
    CHECK(choose("evilb", name, why, sizeof why) != DPD_OK,
          "active-evilb -> evilb-1, itself a link to a directory outside, is not loaded: %s", why);
    unsetenv("DPD_FAKE_NAME");
}

/* Item 6: an installer killed while its helper hangs leaves no lock behind; a lock whose
 * recorded holder is gone is stale. */
static void pack_lock(void) {
    const char *packs = home();
    char d[700], src[800], arc[800], hex[65], installed[256], name[32], why[1024], pidfile[800];
    snprintf(d, sizeof d, "%s/../..", packs);
    snprintf(src, sizeof src, "%s/src", d), snprintf(arc, sizeof arc, "%s/p.tar.gz", d);
    snprintf(pidfile, sizeof pidfile, "%s/helper.pid", d);
    setenv("DPD_FAKE", "ok", 1), setenv("DPD_FAKE_NAME", "fakehang", 1);
    install("fakehang", "0", 1);
    fake_dir(src, "fakehang", "1", NULL);
    fake_archive(src, arc, 0, hex);
    fflush(NULL);
    pid_t c = fork();
    if (c == 0) {
        dpd_error err;
        setenv("DPD_FAKE", "hang", 1), setenv("DPD_PACK_TIMEOUT", "60", 1), setenv("DPD_TEST_PIDFILE", pidfile, 1);
        pack_install(arc, hex, helper, installed, sizeof installed, &err);
        _exit(0);
    }
    long h = 0;
    for (int i = 0; i < 200 && h <= 0; i++) { /* the helper writes its pid when it starts */
        FILE *f = fopen(pidfile, "r");
        if (f) {
            if (fscanf(f, "%ld", &h) != 1) h = 0;
            fclose(f);
        }
        if (h <= 0) usleep(50000);
    }
    CHECK(h > 0, "the hanging helper started");
    usleep(300000);
    CHECK(choose("fakehang", name, why, sizeof why) == DPD_E_UNSUPPORTED && strstr(why, "validation in progress"),
          "while the helper validates, the pack is busy: %s", why);
    kill(c, SIGKILL);
    waitpid(c, NULL, 0);
    dpd_status s = DPD_E_UNSUPPORTED;
    for (int i = 0; i < 40 && s; i++) {
        s = choose("fakehang", name, why, sizeof why);
        if (s) usleep(50000);
    }
    CHECK(s == DPD_OK && !strcmp(name, "fakehang"), "after the installer is killed the pack is not refused as being "
          "validated: %s", why);
    for (int i = 0; i < 40 && h > 0 && running((pid_t)h); i++) usleep(50000);
    CHECK(h > 0 && !running((pid_t)h), "the orphaned helper %ld ends with its parent", h);
    if (h > 0 && running((pid_t)h)) kill((pid_t)h, SIGKILL);
    /* an orphan of an older dpd holding the lock (inherited fd) whose recorded holder is gone */
    char lock[800];
    snprintf(lock, sizeof lock, "%s/.validate.lock", packs);
    int pp[2];
    CHECK(pipe(pp) == 0, "pipe");
    fflush(NULL);
    c = fork();
    if (c == 0) {
        int fd = open(lock, O_RDWR | O_CREAT, 0644);
        if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB)) _exit(1);
        dprintf(fd, "%ld\n", (long)getpid());
        pid_t g = fork();
        if (g == 0) {
            close(pp[1]);
            for (int i = 0; i < 300; i++) usleep(100000); /* the orphan, holding the lock */
            _exit(0);
        }
        (void)!write(pp[1], &g, sizeof g);
        _exit(0);
    }
    close(pp[1]);
    pid_t g = 0;
    CHECK(read(pp[0], &g, sizeof g) == sizeof g && g > 0, "the orphan started");
    close(pp[0]);
    waitpid(c, NULL, 0);
    CHECK(choose("fakehang", name, why, sizeof why) == DPD_OK, "a lock whose recorded holder is gone is stale: %s", why);
    dpd_error err;
    s = pack_install(arc, hex, "/bin/false", installed, sizeof installed, &err);
    CHECK(s && strstr(err.msg, "refused by validation") && !strstr(err.msg, "in progress"),
          "an install recovers a stale lock: %s", err.msg);
    if (g > 0) kill(g, SIGKILL);
    unsetenv("DPD_FAKE_NAME");
}

/* Item 7 and the mismatch messages of item 10: files[] capped, no duplicates, sizes named. */
static void pack_files(void) {
    const char *packs = home();
    char dir[800], lib[900], hex[65], files[40000];
    snprintf(dir, sizeof dir, "%s/fakef-1", packs);
    fake_dir(dir, "fakef", "1", NULL);
    snprintf(lib, sizeof lib, "%s/lib/libfake.so", dir);
    struct stat st;
    stat(lib, &st);
    sha_hex(lib, hex);
    dpd_error err = {0};
    CHECK(dpd_pack_verify("fakef-1", &err) == DPD_OK, "the hand-built pack verifies: %s", err.msg);
    snprintf(files, sizeof files, "[{\"path\":\"lib/libfake.so\",\"size\":%lld,\"sha256\":\"%s\"},"
             "{\"path\":\"lib/libfake.so\",\"size\":%lld,\"sha256\":\"%s\"}]", (long long)st.st_size, hex,
             (long long)st.st_size, hex);
    fake_dir(dir, "fakef", "1", files);
    CHECK(dpd_pack_verify("fakef-1", &err) == DPD_E_FORMAT && strstr(err.msg, "'lib/libfake.so' twice"),
          "a duplicate files[] path is refused: %s", err.msg);
    snprintf(files, sizeof files, "[{\"path\":\"lib/libfake.so\",\"size\":%lld,\"sha256\":\"%s\"},"
             "{\"path\":\"./lib//libfake.so\",\"size\":%lld,\"sha256\":\"%s\"}]", (long long)st.st_size, hex,
             (long long)st.st_size, hex);
    fake_dir(dir, "fakef", "1", files);
    CHECK(dpd_pack_verify("fakef-1", &err) == DPD_E_FORMAT && strstr(err.msg, "twice"),
          "a duplicate under another spelling is refused: %s", err.msg);
    size_t L = (size_t)snprintf(files, sizeof files, "[");
    for (int i = 0; i < 300; i++)
        L += (size_t)snprintf(files + L, sizeof files - L, "%s{\"path\":\"lib/f%03d\",\"size\":1,\"sha256\":\"%s\"}",
                              i ? "," : "", i, hex);
    snprintf(files + L, sizeof files - L, "]");
    fake_dir(dir, "fakef", "1", files);
    CHECK(dpd_pack_verify("fakef-1", &err) == DPD_E_FORMAT && strstr(err.msg, "300 files, at most 256"),
          "a files[] above the cap is refused before any hashing: %s", err.msg);
    snprintf(files, sizeof files, "[{\"path\":\"lib/libfake.so\",\"size\":%lld,\"sha256\":\"%s\"}]",
             (long long)st.st_size + 1, hex);
    fake_dir(dir, "fakef", "1", files);
    char want[256];
    snprintf(want, sizeof want, "size %lld bytes, pack.json says %lld", (long long)st.st_size, (long long)st.st_size + 1);
    CHECK(dpd_pack_verify("fakef-1", &err) == DPD_E_FORMAT && strstr(err.msg, want),
          "a size mismatch names both sizes: %s", err.msg);
    char other[65];
    snprintf(other, sizeof other, "%.63s%c", hex, hex[63] == '0' ? '1' : '0');
    snprintf(files, sizeof files, "[{\"path\":\"./lib/libfake.so\",\"size\":%lld,\"sha256\":\"%s\"}]", (long long)st.st_size, other);
    fake_dir(dir, "fakef", "1", files);
    snprintf(want, sizeof want, "sha256 %s, pack.json says %s", hex, other);
    CHECK(dpd_pack_verify("fakef-1", &err) == DPD_E_FORMAT && strstr(err.msg, want) && !strstr(err.msg, "size"),
          "a sha256 mismatch names both hashes, not the size twice: %s", err.msg);
}

/* Item 8: .staging-<pid> leftovers of killed installs go at the next install; nothing outside. */
static void pack_staging(void) {
    const char *packs = home();
    char d[700], src[800], arc[800], hex[65], installed[256], p[900], cmd[4096];
    snprintf(d, sizeof d, "%s/../..", packs);
    snprintf(src, sizeof src, "%s/src", d), snprintf(arc, sizeof arc, "%s/p.tar.gz", d);
    pid_t dead = fork();
    if (dead == 0) _exit(0);
    waitpid(dead, NULL, 0);
    snprintf(cmd, sizeof cmd,
             "mkdir -p '%s/.staging-%ld/lib' '%s/.staging-%ld' '%s/.staging-1' '%s/outside' && "
             "echo x >'%s/.staging-%ld/lib/big' && echo keep >'%s/outside/keep' && "
             "touch -d '2 hours ago' '%s/.staging-1' && ln -s '%s/outside' '%s/.staging-%ld'",
             packs, (long)dead, packs, (long)getppid(), packs, d, packs, (long)dead, d, packs, d, packs, (long)dead + 1);
    CHECK(system(cmd) == 0, "%s", cmd);
    fake_dir(src, "fakest", "1", NULL);
    fake_archive(src, arc, 0, hex);
    dpd_error err;
    pack_install(arc, hex, "/bin/false", installed, sizeof installed, &err); /* refused by validation: fine */
    snprintf(p, sizeof p, "%s/.staging-%ld", packs, (long)dead);
    CHECK(!exists(p), "the leftover of a dead install is removed");
    snprintf(p, sizeof p, "%s/.staging-1", packs);
    CHECK(!exists(p), "a leftover older than an hour is removed");
    snprintf(p, sizeof p, "%s/.staging-%ld", packs, (long)getppid());
    CHECK(exists(p), "a recent staging directory of a running process is kept");
    snprintf(p, sizeof p, "%s/outside/keep", d);
    CHECK(exists(p), "a .staging link to a directory outside is not followed");
}

/* Item 10: "./"-style archives install; the fallback reason names the archive, not staging. */
static void pack_messages(void) {
    const char *packs = home();
    char d[700], src[800], arc[800], hex[65], installed[256];
    snprintf(d, sizeof d, "%s/../..", packs);
    snprintf(src, sizeof src, "%s/src", d), snprintf(arc, sizeof arc, "%s/dot.tar.gz", d);
    setenv("DPD_FAKE", "ok", 1), setenv("DPD_FAKE_NAME", "fakedot", 1);
    fake_dir(src, "fakedot", "2", NULL);
    fake_archive(src, arc, 1, hex);
    dpd_error err;
    CHECK(pack_install(arc, hex, helper, installed, sizeof installed, &err) == DPD_OK && !strcmp(installed, "fakedot-2"),
          "an archive of ./pack.json-style entries installs: %s", err.msg);
    char files[1024], lib[900], h2[65];
    snprintf(lib, sizeof lib, "%s/lib/libfake.so", src);
    struct stat st;
    stat(lib, &st);
    sha_hex(lib, h2);
    snprintf(files, sizeof files, "[{\"path\":\"./lib/libfake.so\",\"size\":%lld,\"sha256\":\"%s\"}]", (long long)st.st_size, h2);
    fake_dir(src, "fakedot", "3", files);
    fake_archive(src, arc, 0, hex);
    CHECK(pack_install(arc, hex, helper, installed, sizeof installed, &err) == DPD_OK && !strcmp(installed, "fakedot-3"),
          "a files[] path of ./lib/x installs: %s", err.msg);
    setenv("DPD_FAKE", "nodevice", 1), setenv("DPD_FAKE_NAME", "fakend", 1);
    snprintf(arc, sizeof arc, "%s/fakend.tar.gz", d);
    fake_dir(src, "fakend", "1", NULL);
    fake_archive(src, arc, 0, hex);
    CHECK(pack_install(arc, hex, helper, installed, sizeof installed, &err) == DPD_E_DEVICE && !strstr(err.msg, ".staging-") &&
              strstr(err.msg, "fakend.tar.gz"),
          "a pack that cannot activate is refused naming the archive, not the staging directory: %s", err.msg);
    dpd_settings ss;
    CHECK(dpd_settings_load(&ss, &err) == DPD_OK && !strcmp(ss.provider, "cpu") && !strstr(ss.reason, ".staging-") &&
              strstr(ss.reason, "fakend.tar.gz") && strstr(ss.reason, "fake: no device"),
          "the fallback reason names the archive, not a deleted staging path: %s", ss.reason);
    setenv("DPD_FAKE", "ok", 1), unsetenv("DPD_FAKE_NAME");
}

int main(int argc, char **argv) {
    if (argc == 4 && !strcmp(argv[1], "pack") && !strcmp(argv[2], "probe")) { /* the helper, as dpd serves it */
        const char *pf = getenv("DPD_TEST_PIDFILE");
        FILE *f = pf ? fopen(pf, "w") : NULL;
        if (f) fprintf(f, "%ld\n", (long)getpid()), fclose(f);
        char info[1024] = "";
        dpd_error err = {0};
        dpd_status s = dpd_pack_probe(argv[3], info, sizeof info, &err);
        printf("%s\n", s ? err.msg : info);
        return s == DPD_OK ? 0 : s == DPD_E_DEVICE ? 3 : 4;
    }
    ssize_t hn = readlink("/proc/self/exe", helper, sizeof helper - 1);
    helper[hn > 0 ? hn : 0] = 0;
    cpu_table();
    bounds();
    settings();
    archives();
    fake = getenv("DPD_FAKE_LIB") ? getenv("DPD_FAKE_LIB") : "build/tests/libfake.so";
    if (access(fake, R_OK)) {
        check_skip("registry", "the fake provider is not built");
    } else {
        char abs[4096];
        if (realpath(fake, abs)) fake = strdup(abs);
        restart(); /* first: providers loaded from other (now gone) data homes would ask for a restart too */
        no_pack();
        refusals();
        training();
        backoff();
        many();
        pack_paths();
        pack_lock();
        pack_files();
        pack_staging();
        pack_messages();
    }
    return check_done("providers");
}
