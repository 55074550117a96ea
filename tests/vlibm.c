/* vlibm: the per-ISA half of tests/test_vlibm.c, compiled once per ISA as src/kern/ is (Makefile:
 * the same -m flags, -ffp-contract=off), so each ISA's vexpf and vtanhf are the ones its kernels
 * inline. */
#include <math.h>

#include "../src/kern/simd.h"
#include "../src/kern/vlibm.h"

/* How many of the floats k * stride (every float for stride 1; offset spreads the sweep's start)
 * vexpf, or vtanhf when tanh, gives other bits than libm for; the first such float in *bad.
 * *matches: vexpf_matches() (vtanhf_matches()), whether the kernels use the vector function. */
long K(vlibm_sweep)(int tanh, uint32_t stride, uint32_t offset, int *matches, uint32_t *bad) {
    *matches = tanh ? vtanhf_matches() : vexpf_matches();
    long wrong = 0;
    float in[VW], out[VW];
    uint64_t u = offset;
    while (u <= UINT32_MAX) {
        for (int l = 0; l < VW; l++, u += stride) {
            uint32_t b = (uint32_t)u;
            memcpy(&in[l], &b, sizeof b);
        }
        vf y = tanh ? vtanhf(ld(in)) : vexpf(ld(in));
        memcpy(out, &y, sizeof out);
        for (int l = 0; l < VW; l++) {
            float want = tanh ? tanhf(in[l]) : expf(in[l]);
            if (memcmp(&want, &out[l], sizeof want) && !(isnan(want) && isnan(out[l])) && !wrong++) memcpy(bad, &in[l], sizeof *bad);
        }
    }
    return wrong;
}
