/* vlibm: the per-ISA half of tests/test_vlibm.c, compiled once per ISA as src/kern/ is (Makefile:
 * the same -m flags, -ffp-contract=off), so each ISA's vexpf, vtanhf and vsincos are the ones its
 * kernels inline. */
#include <math.h>

#include "../src/kern/simd.h"
#include "../src/kern/vlibm.h"

/* How many of the floats k * stride (every float for stride 1; offset spreads the sweep's start)
 * fn gives other bits than libm for (0: vexpf against expf, 1: vtanhf against tanhf, 2: vsincos
 * against (float)cos and (float)sin of the double, a float counted once); the first such float in
 * *bad. *matches: vexpf_matches() (vtanhf_matches()), whether the kernels use the vector function;
 * 1 for vsincos, which has no other path. */
long K(vlibm_sweep)(int fn, uint32_t stride, uint32_t offset, int *matches, uint32_t *bad) {
    *matches = fn == 0 ? vexpf_matches() : fn == 1 ? vtanhf_matches() : 1;
    long wrong = 0;
    float in[VW], out[VW], out2[VW];
    uint64_t u = offset;
    while (u <= UINT32_MAX) {
        for (int l = 0; l < VW; l++, u += stride) {
            uint32_t b = (uint32_t)u;
            memcpy(&in[l], &b, sizeof b);
        }
        if (fn == 2) {
            vsincos(in, out, out2, VW);
        } else {
            vf y = fn ? vtanhf(ld(in)) : vexpf(ld(in));
            memcpy(out, &y, sizeof out);
        }
        for (int l = 0; l < VW; l++) {
            float want = fn == 2 ? (float)cos(in[l]) : fn ? tanhf(in[l]) : expf(in[l]);
            float want2 = fn == 2 ? (float)sin(in[l]) : 0.0f, got2 = fn == 2 ? out2[l] : 0.0f;
            int differ = memcmp(&want, &out[l], sizeof want) && !(isnan(want) && isnan(out[l]));
            differ |= memcmp(&want2, &got2, sizeof want2) && !(isnan(want2) && isnan(got2));
            if (differ && !wrong++) memcpy(bad, &in[l], sizeof *bad);
        }
    }
    return wrong;
}
