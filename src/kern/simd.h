/* simd: what every per-ISA kernel source of src/kern/ shares. Each such file is compiled once per
 * ISA with -DKERN_NAME=avx512|avx2|sse, -DVW=16|8|4 (floats per native register) and the matching
 * -m flags (Makefile); K(name) gives a symbol the ISA's suffix (name_avx2), and GCC's vector
 * extensions give the native vector type vf, so one source is the kernel for every ISA. */
#ifndef DPD_KERN_SIMD_H
#define DPD_KERN_SIMD_H
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "kern.h"

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define K(name) CAT(name##_, KERN_NAME)
#define STR2(x) #x
#define STR(x) STR2(x)

typedef float vf __attribute__((vector_size(VW * 4)));
typedef int32_t vi __attribute__((vector_size(VW * 4)));
#define NV (KL / VW)

static inline __attribute__((always_inline, unused)) vf ld(const float *p) {
    vf v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline __attribute__((always_inline, unused)) void st(float *p, vf v) { memcpy(p, &v, sizeof v); }
static inline __attribute__((always_inline, unused)) vf sel(vi m, vf a, vf b) { return (vf)(((vi)a & m) | ((vi)b & ~m)); } /* m ? a : b */

/* p rounded up to a 64-byte boundary, so that no vector of a kernel's scratch or saved planes
 * straddles two cache lines (a split load or store costs twice; kern.h's sizes leave KL floats for
 * the rounding). Placement only: the arithmetic, so the results, do not depend on it. */
static inline __attribute__((always_inline, unused)) float *kalign(float *p) {
    return (float *)(((uintptr_t)p + 63) & ~(uintptr_t)63);
}

/* Fast nonlinearities: within ~2e-7 relative of libm's, not bitwise equal to them. */
/* e^r for |r| <= ln(2)/2: a degree-6 polynomial. */
static inline __attribute__((always_inline)) vf expm(vf r) {
    vf p = (vf){} + 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    return p * r * r + r + 1.0f;
}

/* exp with Cody-Waite range reduction and a degree-6 polynomial (relative error ~2e-7). With
 * AVX-512 the power of two is applied by vscalefps (no integer round trip). */
#if VW == 16 && defined(__AVX512F__)
static inline __attribute__((always_inline)) vf vexp(vf x) {
    x = (vf)_mm512_max_ps((__m512)x, _mm512_set1_ps(-87.0f));
    x = (vf)_mm512_min_ps((__m512)x, _mm512_set1_ps(88.0f));
    vf k = (vf)_mm512_roundscale_ps((__m512)(x * 1.44269504088896341f), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    vf r = x - k * 0.693359375f + k * 2.12194440e-4f;
    vf p = expm(r);
    return (vf)_mm512_scalef_ps((__m512)p, (__m512)k);
}
#else
static inline __attribute__((always_inline)) vf vexp(vf x) {
    x = sel(x < -87.0f, (vf){} - 87.0f, x);
    x = sel(x > 88.0f, (vf){} + 88.0f, x);
    vf u = x * 1.44269504088896341f + 0.5f;
    vi t = __builtin_convertvector(u, vi); /* truncation; floor for u < 0 below */
    vf k = __builtin_convertvector(t, vf);
    vi fix = k > u;
    k = k - sel(fix, (vf){} + 1.0f, (vf){});
    t = t + fix; /* fix is -1 where k was lowered */
    vf r = x - k * 0.693359375f + k * 2.12194440e-4f;
    vf p = expm(r);
    return p * (vf)((t + 127) << 23);
}
#endif
/* 1/x for x >= 1 without a division: a bit-trick first guess and three Newton steps (relative
 * error ~1e-7), cheaper than vdivps on every ISA here. */
static inline __attribute__((always_inline)) vf vrcp(vf x) {
#if VW == 16 && defined(__AVX512F__)
    vf y = (vf)_mm512_rcp14_ps((__m512)x); /* 14 bits; one Newton step gives ~28 */
#elif VW == 8 && defined(__AVX2__)
    vf y = (vf)_mm256_rcp_ps((__m256)x); /* 12 bits; two steps */
    y = y * (2.0f - x * y);
#else
    vf y = (vf)(0x7EF311C7 - (vi)x);
    y = y * (2.0f - x * y);
    y = y * (2.0f - x * y);
#endif
    return y * (2.0f - x * y);
}
static inline __attribute__((always_inline)) vf vsig(vf a) { return vrcp(1.0f + vexp(-a)); }
static inline __attribute__((always_inline)) vf vtanh(vf a) { return 2.0f * vrcp(1.0f + vexp(-2.0f * a)) - 1.0f; }

#endif
