/* test_vlibm: src/kern/vlibm.h's vexpf and vtanhf against libm's expf and tanhf, bit for bit, on
 * every ISA this CPU runs: a sweep of every 251st float (17 million, every binade, both signs, the
 * special values' neighbourhoods) and the two floats where glibc's fused and plain expf differ.
 * Where the *_matches() probe says this libm is another (the kernels then call libm), a mismatch is
 * expected and the sweep is a skip with that reason. The exact fast paths of DeltaGRU, PG-JANET and
 * DVR-JANET rely on these functions for results that are the reference's own. */
#include <stdint.h>
#include <string.h>

#include "check.h"

long vlibm_sweep_avx512(int tanh, uint32_t stride, uint32_t offset, int *matches, uint32_t *bad);
long vlibm_sweep_avx2(int tanh, uint32_t stride, uint32_t offset, int *matches, uint32_t *bad);
long vlibm_sweep_sse(int tanh, uint32_t stride, uint32_t offset, int *matches, uint32_t *bad);

int main(void) {
    static const struct {
        const char *name;
        long (*sweep)(int, uint32_t, uint32_t, int *, uint32_t *);
    } isa[] = {{"avx512", vlibm_sweep_avx512}, {"avx2", vlibm_sweep_avx2}, {"sse", vlibm_sweep_sse}};
    int have[3] = {__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq"),
                   __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"), 1};
    for (int i = 0; i < 3; i++) {
        char what[96];
        if (!have[i]) {
            snprintf(what, sizeof what, "vlibm %s", isa[i].name);
            check_skip(what, "this CPU lacks the ISA");
            continue;
        }
        for (int tanh = 0; tanh < 2; tanh++) {
            const char *fn = tanh ? "vtanhf" : "vexpf";
            int matches = 0;
            uint32_t bad = 0;
            long wrong = isa[i].sweep(tanh, 251, (uint32_t)(17 + tanh), &matches, &bad);
            snprintf(what, sizeof what, "%s on %s", fn, isa[i].name);
            if (!matches) {
                char why[160];
                snprintf(why, sizeof why, "%s_matches() says this libm computes %s otherwise (the kernels call libm): %ld of the sweep differ",
                         fn, tanh ? "tanhf" : "expf", wrong);
                check_skip(what, why);
                continue;
            }
            CHECK(wrong == 0, "%s: %ld floats of the sweep differ from libm, the first 0x%08x", what, wrong, (unsigned)bad);
            /* the floats where glibc's two builds of expf differ (a sweep at stride 2^32 - 1 from x:
             * x and the VW - 1 floats below it) */
            if (!tanh)
                for (int k = 0; k < 2; k++) {
                    uint32_t x = k ? 0xc27c65d9u : 0x4202422fu;
                    wrong = isa[i].sweep(0, UINT32_MAX, x, &matches, &bad);
                    CHECK(wrong == 0, "%s: 0x%08x or 0 differs from libm", what, (unsigned)x);
                }
        }
    }
    return check_done("vlibm");
}
