/* vlibm: libm's results on vectors of lanes, bit for bit (include after simd.h): tanhf (vtanhf),
 * expf (vexpf) and (float)cos, (float)sin of a float (vsincos). The exact fast paths must give the
 * reference's results, and the reference calls libm; calling it per element costs more than all
 * the rest of a recurrent step. glibc (up to at least 2.36, the one here) computes tanhf with
 * fdlibm's code: tanhf from expm1f, float operations only, no table and no fused multiply-add.
 * vtanhf below is that code with every branch evaluated and selected per
 * lane: the same float operations in the same order, so the same results (checked against libm
 * for every float input on every ISA when it was written). Another libm (a correctly rounded
 * tanhf, musl's) gives other results: vtanhf_matches tells, and callers fall back to libm.
 *
 * vexpm1f, vtanhf and vsincos's constants and polynomials follow fdlibm (s_expm1f.c, s_tanhf.c,
 * k_sin.c, k_cos.c, e_rem_pio2.c), whose notice is kept as it asks:
 *   Copyright (C) 1993 by Sun Microsystems, Inc. All rights reserved.
 *   Developed at SunPro, a Sun Microsystems, Inc. business.
 *   Permission to use, copy, modify, and distribute this software is freely granted, provided that
 *   this notice is preserved.
 * (The float versions: conversion to float by Ian Lance Taylor, Cygnus Support.) */
#ifndef DPD_KERN_VLIBM_H
#define DPD_KERN_VLIBM_H
#include <math.h>

#include "simd.h"

typedef uint32_t vu __attribute__((vector_size(VW * 4)));

static inline __attribute__((always_inline)) vi isel(vi m, vi a, vi b) { return (a & m) | (b & ~m); } /* m ? a : b */

/* fdlibm's expm1f for finite x < 88.72 (its o_threshold; tanhf's arguments lie in (-2, 44)). */
static inline __attribute__((always_inline)) vf vexpm1f(vf x) {
    const float ln2_hi = 6.9313812256e-01f, ln2_lo = 9.0580006145e-06f, invln2 = 1.4426950216e+00f;
    const float Q1 = -3.3333335072e-02f, Q2 = 1.5873016091e-03f, Q3 = -7.9365076090e-05f, Q4 = 4.0082177293e-06f,
                Q5 = -2.0109921195e-07f;
    const vf one = (vf){} + 1.0f;
    vi hx = (vi)x & 0x7fffffff, neg = (vi)x < 0;
    /* argument reduction: x = hi - lo = k ln2 + r; k = +-1 near ln2, else invln2 x rounded half away */
    vi kg = __builtin_convertvector(invln2 * x + sel(neg, (vf){} - 0.5f, (vf){} + 0.5f), vi);
    vf tk = __builtin_convertvector(kg, vf);
    vi near = hx < 0x3F851592;
    vf hi = sel(near, sel(neg, x + ln2_hi, x - ln2_hi), x - tk * ln2_hi);
    vf lo = sel(near, sel(neg, (vf){} - ln2_lo, (vf){} + ln2_lo), tk * ln2_lo);
    vi k = isel(near, isel(neg, (vi){} - 1, (vi){} + 1), kg);
    vf xr = hi - lo, c = (hi - xr) - lo;
    vi reduced = hx > 0x3eb17218;
    xr = sel(reduced, xr, x), k &= reduced;
    /* x is now in the primary range */
    vf hfx = 0.5f * xr, hxs = xr * hfx;
    vf r1 = one + hxs * (Q1 + hxs * (Q2 + hxs * (Q3 + hxs * (Q4 + hxs * Q5))));
    vf t = 3.0f - r1 * hfx, e = hxs * ((r1 - t) / (6.0f - xr * t));
    vf y0 = xr - (xr * e - hxs); /* k = 0 */
    e = (xr * (e - c) - c) - hxs;
    vf ym1 = 0.5f * (xr - e) - 0.5f;
    vf yp1 = sel(xr < -0.25f, -2.0f * (e - (xr + 0.5f)), one + 2.0f * (xr - e));
    /* k added to an exponent, and 2^-k; unsigned: k is anything in a lane a NaN or infinity fills */
    vu kexp = (vu)k << 23, kneg = ((vu){} + 127 - (vu)k) << 23;
    vf ya = (vf)((vu)(one - (e - xr)) + kexp) - one; /* k <= -2 or k > 56 */
    vf tb = one - (vf)kneg;                          /* k < 23: t = 1 - 2^-k, exact */
    vf yb = (vf)((vu)(tb - (e - xr)) + kexp);
    vf yc = (vf)((vu)((xr - (e + (vf)kneg)) + one) + kexp); /* 2^-k */
    vf y = sel(k == 0, y0, sel(k == -1, ym1, sel(k == 1, yp1, sel((k <= -2) | (k > 56), ya, sel(k < 23, yb, yc)))));
    y = sel(hx < 0x33000000, x, y);                            /* |x| < 2^-25: x */
    return sel(neg & (hx >= 0x4195b844), (vf){} - 1.0f, y); /* x <= -27 ln2: -1 */
}

/* fdlibm's tanhf, every float input. */
static inline __attribute__((always_inline)) vf vtanhf(vf x) {
    vi jx = (vi)x, ix = jx & 0x7fffffff;
    vf ax = (vf)ix, one = (vf){} + 1.0f;
    vi ge1 = ix >= 0x3f800000;
    vf t = vexpm1f(sel(ge1, ax + ax, -2.0f * ax));
    vf z = sel(ge1, one - 2.0f / (t + 2.0f), -t / (t + 2.0f));
    z = sel(ix >= 0x41b00000, one, z); /* |x| >= 22: one - tiny */
    z = sel(jx < 0, -z, z);
    z = sel(ix < 0x24000000, x * (one + x), z); /* |x| < 2^-55, zeros too */
    return sel(ix >= 0x7f800000, sel(jx < 0, one / x - one, one / x + one), z);
}

/* (float)cos((double)x[i]) and (float)sin((double)x[i]) for n floats (a multiple of VW), as the
 * reference computes them with libm. cos and sin of a float are not sums of float operations, so
 * they are not replicated: they are evaluated in double (argument reduction by fdlibm's three-part
 * pi/2, fdlibm's kernel polynomials; relative error below 2^-48 where |x| < 2^12) and rounded to
 * float where every value within 2^-40 of the result rounds alike: libm's cos and sin, accurate to
 * an ulp of double, then round to that float too. Other elements (about one in 2^15, and
 * |x| >= 2^12, infinities, NaN and zeros) call libm. */
typedef double vd __attribute__((vector_size(VW * 4)));
typedef int64_t vl __attribute__((vector_size(VW * 4)));
typedef float vh __attribute__((vector_size(VW * 2))); /* VW / 2 floats: one vd's worth */
/* Whether any lane of m is set. */
static inline __attribute__((always_inline)) int vl_any(vl m) {
#if VW == 16
    return _mm512_test_epi64_mask((__m512i)m, (__m512i)m) != 0;
#elif VW == 8
    return !_mm256_testz_si256((__m256i)m, (__m256i)m);
#else
    return _mm_movemask_epi8((__m128i)m) != 0;
#endif
}
static inline void vsincos(const float *x, float *co, float *si, size_t n) {
    const double P1 = 1.57079632673412561417e+00, P2 = 6.07710050630396597660e-11, P3 = 2.02226624871116645580e-21;
    const double S1 = -1.66666666666666324348e-01, S2 = 8.33333333332248946124e-03, S3 = -1.98412698298579493134e-04,
                 S4 = 2.75573137070700676789e-06, S5 = -2.50507602534068634195e-08, S6 = 1.58969099521155010221e-10;
    const double C1 = 4.16666666666666019037e-02, C2 = -1.38888888888741095749e-03, C3 = 2.48015872894767294178e-05,
                 C4 = -2.75573143513906633035e-07, C5 = 2.08757232129817482790e-09, C6 = -1.13596475577881948265e-11;
    for (size_t i = 0; i < n; i += VW / 2) {
        vh xh;
        memcpy(&xh, x + i, sizeof xh);
        vd xd = __builtin_convertvector(xh, vd), big = xd * 0.63661977236758134308 + 0x1.8p52, kd = big - 0x1.8p52;
        vl q = (vl)big & 3;
        vd r = ((xd - kd * P1) - kd * P2) - kd * P3, z = r * r;
        vd s = r + r * z * (S1 + z * (S2 + z * (S3 + z * (S4 + z * (S5 + z * S6)))));
        vd c = 1.0 - 0.5 * z + z * z * (C1 + z * (C2 + z * (C3 + z * (C4 + z * (C5 + z * C6)))));
        vl odd = (q & 1) != 0, sn = (q & 2) != 0, cn = ((q + 1) & 2) != 0; /* sin: s c -s -c; cos: c -s -c s */
        vd vs = (vd)(((vl)c & odd) | ((vl)s & ~odd)), vc = (vd)(((vl)s & odd) | ((vl)c & ~odd));
        vs = (vd)((vl)vs ^ (sn & INT64_MIN)), vc = (vd)((vl)vc ^ (cn & INT64_MIN));
        vd out[2] = {vc, vs};
        float *dst[2] = {co, si};
        vl far = (xd * xd >= 0x1p24) | (xd != xd) | (xd == 0); /* |x| >= 2^12, NaN, and zeros (their sign) */
        for (int k = 0; k < 2; k++) {
            vd m = (vd)((vl)out[k] & 0x7fffffffffffffff) * 0x1p-40;
            vh f = __builtin_convertvector(out[k], vh), lo = __builtin_convertvector(out[k] - m, vh);
            vh hi = __builtin_convertvector(out[k] + m, vh);
            memcpy(dst[k] + i, &f, sizeof f);
            vl redo = far | __builtin_convertvector(lo != hi, vl);
            if (!vl_any(redo)) continue; /* the common case: no lane calls libm */
            int64_t bad[VW / 2];
            memcpy(bad, &redo, sizeof bad);
            for (int l = 0; l < VW / 2; l++)
                if (bad[l]) dst[k][i + l] = k ? (float)sin(x[i + l]) : (float)cos(x[i + l]);
        }
    }
}

/* expf as this libm computes it, on VW floats: glibc since 2.27 (and musl) use Arm's
 * optimized-routines expf (MIT OR Apache-2.0 WITH LLVM-exception): in double, x / ln2 times 32
 * rounded to k by adding 1.5 * 2^52, s = 2^(k / 32) from a table of 32 and the exponent, a cubic in
 * the rest r, one rounding to float at the end. glibc builds it twice and picks by the CPU: with
 * fused multiply-adds wherever the compiler could contract (the reduction's product into both its
 * uses, the three polynomial steps), or without any. Each ISA here computes the variant its
 * instructions allow (FMA where __FMA__), checked against libm for every float with |x| < 88 when
 * written (the FMA form against __expf_fma, the plain one against __expf_sse2 under
 * GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2,-FMA); lanes with |x| >= 88, infinities and NaN call libm.
 * vexpf_matches tells whether this libm is that variant; callers fall back to libm otherwise. */
static const uint64_t vexpf_tab[32] = { /* bits of 2^(i / 32) - (i << 47): s's exponent is added */
    0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51, 0x3fef72b83c7d517b,
    0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1, 0x3fef06fe0a31b715, 0x3feef1a7373aa9cb,
    0x3feedea64c123422, 0x3feece086061892d, 0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429,
    0x3feea47eb03a5585, 0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
    0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d, 0x3feee89f995ad3ad,
    0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069, 0x3fef5818dcfba487, 0x3fef7c97337b9b5f,
    0x3fefa4afa2a490da, 0x3fefd0765b6e4540};
typedef uint64_t vul __attribute__((vector_size(VW * 4)));
#if defined(__FMA__) && VW == 16
#define VEXPF_FMA(a, b, c) (vd) _mm512_fmadd_pd((__m512d)(a), (__m512d)(b), (__m512d)(c))
#elif defined(__FMA__) && VW == 8
#define VEXPF_FMA(a, b, c) (vd) _mm256_fmadd_pd((__m256d)(a), (__m256d)(b), (__m256d)(c))
#elif defined(__FMA__)
#define VEXPF_FMA(a, b, c) (vd) _mm_fmadd_pd((__m128d)(a), (__m128d)(b), (__m128d)(c))
#else
#define VEXPF_FMA(a, b, c) ((a) * (b) + (c)) /* no contraction: kernels build with -ffp-contract=off */
#endif
static inline __attribute__((always_inline)) vh vexpf_half(vh x) {
    const vd inv = (vd){} + 0x1.71547652b82fep+5, shift = (vd){} + 0x1.8p+52; /* 32 / ln2 */
    const vd c0 = (vd){} + 0x1.c6af84b912394p-5 / 32 / 32 / 32, c1 = (vd){} + 0x1.ebfce50fac4f3p-3 / 32 / 32;
    const vd c2 = (vd){} + 0x1.62e42ff0c52d6p-1 / 32, one = (vd){} + 1.0;
    vd xd = __builtin_convertvector(x, vd);
    vd big = VEXPF_FMA(inv, xd, shift), kd = big - shift, r = VEXPF_FMA(inv, xd, -kd);
    vul k = (vul)big, t;
    for (int l = 0; l < VW / 2; l++) t[l] = vexpf_tab[k[l] & 31];
    vd s = (vd)(t + (k << 47)), r2 = r * r;
    vd y = VEXPF_FMA(VEXPF_FMA(c0, r, c1), r2, VEXPF_FMA(c2, r, one));
    return __builtin_convertvector(y * s, vh);
}
static inline __attribute__((always_inline)) vf vexpf(vf x) {
    vh h[2];
    memcpy(h, &x, sizeof x);
    h[0] = vexpf_half(h[0]), h[1] = vexpf_half(h[1]);
    vf y;
    memcpy(&y, h, sizeof y);
    vi big = ((vi)x & 0x7fffffff) >= 0x42b00000; /* |x| >= 88, infinities, NaN */
    if (vl_any((vl)big)) /* rare: a lane-by-lane look only then */
        for (int l = 0; l < VW; l++)
            if (big[l]) y[l] = expf(x[l]);
    return y;
}

/* Probe inputs n .. n + VW - 1 of 512: both signs, mantissas spread, exponents lo .. lo + span - 1. */
static inline void vlibm_probe(float in[VW], int n, int lo, int span) {
    for (int l = 0; l < VW; l++) {
        int m = n + l;
        float mant = 1.0f + (float)(m * 2654435761u % 8388608u) / 8388608.0f;
        in[l] = (m & 1 ? -1.0f : 1.0f) * ldexpf(mant, m % span + lo);
    }
}

/* Whether vexpf is this libm's expf: equal on a spread of inputs, on the two where the fused and
 * the plain builds differ (about one float in a billion), and on two where both differ from the
 * correctly rounded result (0x400386ff, 0x405762e9), which the other build, a correctly rounded
 * expf or another algorithm does not pass. */
static inline int vexpf_matches(void) {
    float in[VW], out[VW];
    static const uint32_t marks[4] = {0x4202422f, 0xc27c65d9, 0x400386ff, 0x405762e9};
    float (*volatile ref)(float) = expf; /* libm's, called: GCC folds a constant's expf itself, correctly rounded */
    for (int n = 0; n < 512; n += VW) {
        vlibm_probe(in, n, -4, 10);
        for (int l = 0; !n && l < 4; l++) memcpy(&in[l], &marks[l], sizeof in[l]); /* VW >= 4 */
        vf y = vexpf(ld(in));
        memcpy(out, &y, sizeof out);
        for (int l = 0; l < VW; l++)
            if (memcmp(&out[l], &(float){ref(in[l])}, sizeof(float))) return 0;
    }
    return 1;
}

/* Whether vtanhf is this libm's tanhf: equal on a spread of inputs (every binade that reaches
 * expm1f's branches, both signs) and on two where fdlibm's tanhf is not correctly rounded
 * (0x3e000000, 0x3e00d889), which a different algorithm does not pass. ~2 us. */
static inline int vtanhf_matches(void) {
    float in[VW], out[VW];
    static const uint32_t marks[2] = {0x3e000000, 0x3e00d889};
    float (*volatile ref)(float) = tanhf; /* as in vexpf_matches */
    for (int n = 0; n < 512; n += VW) {
        vlibm_probe(in, n, -40, 48);
        for (int l = 0; !n && l < 2; l++) memcpy(&in[l], &marks[l], sizeof in[l]);
        vf y = vtanhf(ld(in));
        memcpy(out, &y, sizeof out);
        for (int l = 0; l < VW; l++)
            if (memcmp(&out[l], &(float){ref(in[l])}, sizeof(float))) return 0;
    }
    return 1;
}
#endif
