/* test_vlibm: src/kern/vlibm.h's vexpf, vtanhf and vsincos against libm's expf, tanhf and (float)
 * cos and sin, bit for bit, on every ISA this CPU runs: a sweep of every 251st float (17 million,
 * every binade, both signs, the special values' neighbourhoods; every 1021st for vsincos) and the
 * two floats where glibc's fused and plain expf differ.
 * Where the *_matches() probe says this libm is another (the kernels then call libm), a mismatch is
 * expected and the sweep is a skip with that reason; but not with glibc, whose functions vlibm.h
 * follows: there every probe that should pass must. The exact fast paths of DeltaGRU, PG-JANET and
 * DVR-JANET rely on these functions for results that are the reference's own. */
#include <gnu/libc-version.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"

long vlibm_sweep_avx512(int fn, uint32_t stride, uint32_t offset, int *matches, uint32_t *bad);
long vlibm_sweep_avx2(int fn, uint32_t stride, uint32_t offset, int *matches, uint32_t *bad);
long vlibm_sweep_sse(int fn, uint32_t stride, uint32_t offset, int *matches, uint32_t *bad);

int main(void) {
    static const struct {
        const char *name;
        long (*sweep)(int, uint32_t, uint32_t, int *, uint32_t *);
    } isa[] = {{"avx512", vlibm_sweep_avx512}, {"avx2", vlibm_sweep_avx2}, {"sse", vlibm_sweep_sse}};
    int have[3] = {__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq"),
                   __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"), 1};
    int major = 0, minor = 0, glibc = sscanf(gnu_get_libc_version(), "%d.%d", &major, &minor) == 2 &&
                                      (major > 2 || (major == 2 && minor >= 27));
    /* which build glibc chose (by the CPU, and GLIBC_TUNABLES): e^x of 0x4202422f is 0x56fc9f1c
     * fused, 0x56fc9f1b plain */
    volatile uint32_t probe = 0x4202422fu;
    float px, pe;
    memcpy(&px, (const uint32_t *)&probe, sizeof px);
    pe = expf(px);
    uint32_t pb;
    memcpy(&pb, &pe, sizeof pb);
    int fused = pb == 0x56fc9f1cu;
    CHECK(!glibc || fused || pb == 0x56fc9f1bu, "glibc's expf of 0x4202422f is 0x%08x, neither of its builds' results", (unsigned)pb);
    for (int i = 0; i < 3; i++) {
        char what[96];
        if (!have[i]) {
            snprintf(what, sizeof what, "vlibm %s", isa[i].name);
            check_skip(what, "this CPU lacks the ISA");
            continue;
        }
        for (int f = 0; f < 3; f++) {
            static const char *const names[3] = {"vexpf", "vtanhf", "vsincos"}, *const libm[3] = {"expf", "tanhf", "cos, sin"};
            const char *fn = names[f];
            int matches = 0;
            uint32_t bad = 0;
            long wrong = isa[i].sweep(f, f == 2 ? 1021 : 251, (uint32_t)(17 + f), &matches, &bad);
            snprintf(what, sizeof what, "%s on %s", fn, isa[i].name);
            /* glibc 2.27 and later: tanhf is fdlibm's on every ISA, and expf the fused build (which
             * the FMA ISAs here follow) or the plain one (sse): there a probe that fails is vlibm.h
             * gone wrong (the kernels would quietly call libm) */
            int expect = glibc && (f == 1 || (f == 0 && (i < 2) == fused));
            CHECK(matches || !expect, "%s: %s_matches() fails with glibc %s, which computes it as vlibm.h does", what, fn,
                  gnu_get_libc_version());
            if (!matches) {
                char why[160];
                snprintf(why, sizeof why, "%s_matches() says this libm computes %s otherwise (the kernels call libm): %ld of the sweep differ",
                         fn, libm[f], wrong);
                check_skip(what, why);
                continue;
            }
            CHECK(wrong == 0, "%s: %ld floats of the sweep differ from libm, the first 0x%08x", what, wrong, (unsigned)bad);
            /* the floats where glibc's two builds of expf differ (a sweep at stride 2^32 - 1 from x:
             * x and the VW - 1 floats below it) */
            if (f == 0)
                for (int k = 0; k < 2; k++) {
                    uint32_t x = k ? 0xc27c65d9u : 0x4202422fu;
                    wrong = isa[i].sweep(0, UINT32_MAX, x, &matches, &bad);
                    CHECK(wrong == 0, "%s: 0x%08x or 0 differs from libm", what, (unsigned)x);
                }
        }
    }
    return check_done("vlibm");
}
