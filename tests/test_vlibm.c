/* test_vlibm: src/kern/vlibm.h's vexpf, vtanhf and vsincos against libm's expf, tanhf and (float)
 * cos and sin, bit for bit, on every ISA this CPU runs: a sweep of every 251st float (17 million,
 * every binade, both signs, the special values' neighbourhoods; every 1021st for vsincos) and the
 * two floats where glibc's fused and plain builds of expf differ. The exact fast paths of
 * DeltaGRU, PG-JANET and DVR-JANET rely on these functions for results that are the reference's own.
 * Where the *_matches() probe says this libm is another (the kernels then call libm), a mismatch is
 * expected and the sweep is a skip with that reason; but where libm's own results at a few marked
 * floats show it is the algorithm vlibm.h follows (glibc's and musl's expf, fused or plain; fdlibm's
 * tanhf), the probe must pass. The test then runs itself again with glibc told to use its plain
 * expf (GLIBC_TUNABLES), so that the sse kernels' plain form is checked on a CPU with FMA too. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

long vlibm_sweep_avx512(int fn, uint32_t stride, uint32_t offset, int *matches, uint32_t *bad);
long vlibm_sweep_avx2(int fn, uint32_t stride, uint32_t offset, int *matches, uint32_t *bad);
long vlibm_sweep_sse(int fn, uint32_t stride, uint32_t offset, int *matches, uint32_t *bad);

#define PLAIN "glibc.cpu.hwcaps=-AVX2,-FMA" /* glibc's tunable: no FMA build of its functions */

/* Whether f(x) has the bits want (x and want as bits). f is called through a volatile pointer:
 * GCC folds a constant's expf or tanhf itself, correctly rounded, which is not libm's. */
static int gives(float (*volatile f)(float), uint32_t x, uint32_t want) {
    float v, r;
    memcpy(&v, &x, sizeof v);
    r = f(v);
    return !memcmp(&r, &want, sizeof r);
}

int main(int argc, char **argv) {
    static const struct {
        const char *name;
        long (*sweep)(int, uint32_t, uint32_t, int *, uint32_t *);
    } isa[] = {{"avx512", vlibm_sweep_avx512}, {"avx2", vlibm_sweep_avx2}, {"sse", vlibm_sweep_sse}};
    static const char *const names[3] = {"vexpf", "vtanhf", "vsincos"}, *const libm[3] = {"expf", "tanhf", "cos, sin"};
    int child = argc > 1 && !strcmp(argv[1], "--plain");
    int have[3] = {__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq"),
                   __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"), 1};
    /* libm's own results: the optimized-routines expf rounds e^x of 0x400386ff and 0x405762e9 up
     * from the correctly rounded result; its fused build gives 0x56fc9f1c at 0x4202422f, the plain
     * one 0x56fc9f1b; fdlibm's tanhf rounds 0x3e000000 and 0x3e00d889 up too */
    int arm = gives(expf, 0x400386ff, 0x40f9d8f1) && gives(expf, 0x405762e9, 0x41e79039);
    int fused = arm && gives(expf, 0x4202422f, 0x56fc9f1c), plain = arm && gives(expf, 0x4202422f, 0x56fc9f1b);
    int fdlibm = gives(tanhf, 0x3e000000, 0x3dfeacca) && gives(tanhf, 0x3e00d889, 0x3e002b90);
    if (child && !plain) { /* this libm has no plain build to ask for: nothing to add */
        printf("the plain run: libm's expf is not the plain build here; nothing checked\n");
        return 0;
    }
    for (int i = 0; i < 3; i++) {
        char what[96];
        if (!have[i]) {
            snprintf(what, sizeof what, "vlibm %s", isa[i].name);
            if (!child) check_skip(what, "this CPU lacks the ISA");
            continue;
        }
        for (int f = 0; f < (child ? 1 : 3); f++) { /* the plain run: expf only */
            const char *fn = names[f];
            int matches = 0;
            uint32_t bad = 0;
            long wrong = isa[i].sweep(f, f == 2 ? 1021 : 251, (uint32_t)(17 + f), &matches, &bad);
            snprintf(what, sizeof what, "%s on %s%s", fn, isa[i].name, child ? " (glibc's plain expf)" : "");
            /* the FMA ISAs compute the fused form, sse the plain one */
            int expect = f == 0 ? (i < 2 ? fused : plain) : f == 1 ? fdlibm : 1;
            CHECK(matches || !expect, "%s: %s_matches() fails, but libm computes %s as vlibm.h does", what, fn, libm[f]);
            if (!matches) {
                char why[160];
                snprintf(why, sizeof why, "%s_matches() says this libm computes %s otherwise (the kernels call libm): %ld of the sweep differ",
                         fn, libm[f], wrong);
                if (!child) check_skip(what, why);
                continue;
            }
            CHECK(wrong == 0, "%s: %ld floats of the sweep differ from libm, the first 0x%08x", what, wrong, (unsigned)bad);
            /* the floats where glibc's two builds of expf differ (a sweep at stride 2^32 - 1 from x:
             * x and the VW - 1 floats below it) */
            if (f == 0)
                for (int k = 0; k < 2; k++) {
                    uint32_t x = k ? 0xc27c65d9u : 0x4202422fu;
                    wrong = isa[i].sweep(0, UINT32_MAX, x, &matches, &bad);
                    CHECK(wrong == 0, "%s: 0x%08x or one of the floats below it differs from libm", what, (unsigned)x);
                }
        }
    }
    if (child) return check_failed ? 1 : 0; /* its failures are printed; the parent counts the run */
    if (!fused) {
        check_skip("vexpf, glibc's plain expf", "libm's expf is not glibc's fused build: the run above was the plain one, or neither");
    } else {
        pid_t pid = fork();
        if (pid == 0) {
            setenv("GLIBC_TUNABLES", PLAIN, 1);
            execl("/proc/self/exe", argv[0], "--plain", (char *)NULL);
            _exit(127);
        }
        int status = 0;
        CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "the run with GLIBC_TUNABLES=%s failed (its lines above), status 0x%x", PLAIN, (unsigned)status);
    }
    return check_done("vlibm");
}
