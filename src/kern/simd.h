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

/* The zip indices of vtranspose(): lanes 0..VW/2-1 (lo) and VW/2..VW-1 (hi) of a and b
 * interleaved (__builtin_shufflevector: GCC 12 and clang alike). */
#if VW == 16
#define ZLO 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23
#define ZHI 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31
#elif VW == 8
#define ZLO 0, 8, 1, 9, 2, 10, 3, 11
#define ZHI 4, 12, 5, 13, 6, 14, 7, 15
#else
#define ZLO 0, 4, 1, 5
#define ZHI 2, 6, 3, 7
#endif

/* r (VW x VW) transposed in registers: log2(VW) rounds of zipping row k with row k + VW/2. */
static inline __attribute__((always_inline, unused)) void vtranspose(vf r[VW]) {
    for (int s = 1; s < VW; s *= 2) {
        vf o[VW];
        for (int k = 0; k < VW / 2; k++) {
            o[2 * k] = __builtin_shufflevector(r[k], r[k + VW / 2], ZLO);
            o[2 * k + 1] = __builtin_shufflevector(r[k], r[k + VW / 2], ZHI);
        }
        for (int k = 0; k < VW; k++) r[k] = o[k];
    }
}

/* The first n (< VW) floats at p, the other lanes 0 (ldn); and the first n lanes of v stored at p
 * (stn): masked moves, which touch no memory past the n floats. */
static inline __attribute__((always_inline, unused)) vf ldn(const float *p, size_t n) {
#if VW == 16 && defined(__AVX512F__)
    return (vf)_mm512_maskz_loadu_ps((__mmask16)((1u << n) - 1), p);
#elif VW == 8 && defined(__AVX2__)
    return (vf)_mm256_maskload_ps(p, (__m256i)((vi){0, 1, 2, 3, 4, 5, 6, 7} < (int)n));
#else
    vf v = {};
    memcpy(&v, p, n * sizeof(float));
    return v;
#endif
}
static inline __attribute__((always_inline, unused)) void stn(float *p, vf v, size_t n) {
#if VW == 16 && defined(__AVX512F__)
    _mm512_mask_storeu_ps(p, (__mmask16)((1u << n) - 1), (__m512)v);
#elif VW == 8 && defined(__AVX2__)
    _mm256_maskstore_ps(p, (__m256i)((vi){0, 1, 2, 3, 4, 5, 6, 7} < (int)n), (__m256)v);
#else
    memcpy(p, &v, n * sizeof(float));
#endif
}

/* Samples as lanes: dst (N, KL) = N floats of each of nb rows (row l at src + l lds, in lane l),
 * the lanes from nb on zero; VW x VW blocks transposed in registers (the last, of fewer columns,
 * through masked moves). */
static inline __attribute__((unused)) void to_lanes(float *restrict dst, const float *restrict src, int nb, size_t N,
                                                    size_t lds) {
    for (size_t j = 0; j < N; j += VW) {
        size_t w = N - j < VW ? N - j : VW;
        for (int l0 = 0; l0 < KL; l0 += VW) {
            vf v[VW];
            for (int k = 0; k < VW; k++) {
                if (l0 + k >= nb) { /* no row there: the pointer is not even formed */
                    v[k] = (vf){};
                    continue;
                }
                const float *p = src + (size_t)(l0 + k) * lds + j;
                v[k] = w == VW ? ld(p) : ldn(p, w);
            }
            vtranspose(v);
            for (size_t k = 0; k < w; k++) st(dst + (j + k) * KL + l0, v[k]);
        }
    }
}

/* The inverse for the nb lanes in use: rows of N floats at dst (row l at dst + l ldd) = src (N,
 * KL), or += with add (the one sum each element gets). */
static inline __attribute__((unused)) void from_lanes(float *restrict dst, size_t ldd, const float *restrict src, int nb,
                                                      size_t N, int add) {
    for (size_t j = 0; j < N; j += VW) {
        size_t w = N - j < VW ? N - j : VW;
        for (int l0 = 0; l0 < nb; l0 += VW) {
            vf v[VW];
            for (size_t k = 0; k < VW; k++) v[k] = k < w ? ld(src + (j + k) * KL + l0) : (vf){};
            vtranspose(v);
            for (int k = 0; k < VW && l0 + k < nb; k++) {
                float *d = dst + (size_t)(l0 + k) * ldd + j;
                if (w == VW) st(d, add ? ld(d) + v[k] : v[k]);
                else stn(d, add ? ldn(d, w) + v[k] : v[k], w);
            }
        }
    }
}

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
    /* the clamps as the other ISAs' selects: a NaN goes through (vmaxps and vminps give their
     * second operand where either is a NaN; x second, so a NaN weight is not made a -87) */
    x = (vf)_mm512_max_ps(_mm512_set1_ps(-87.0f), (__m512)x);
    x = (vf)_mm512_min_ps(_mm512_set1_ps(88.0f), (__m512)x);
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
