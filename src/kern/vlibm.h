/* vlibm: libm's results on vectors of lanes, bit for bit (include after simd.h): tanhf (vtanhf)
 * and (float)cos, (float)sin of a float (vsincos). The exact fast paths must give the reference's
 * results, and the reference calls libm; calling it per element costs more than all the rest of a
 * recurrent step. glibc (up to at least 2.36, the one
 * here) computes tanhf with fdlibm's code: tanhf from expm1f, float operations only, no table and
 * no fused multiply-add. vtanhf below is that code with every branch evaluated and selected per
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
    vu kexp = (vu)k << 23; /* k added to an exponent */
    vf ya = (vf)((vu)(one - (e - xr)) + kexp) - one; /* k <= -2 or k > 56 */
    vf tb = one - (vf)((vu)(127 - k) << 23);         /* k < 23: t = 1 - 2^-k, exact */
    vf yb = (vf)((vu)(tb - (e - xr)) + kexp);
    vf yc = (vf)((vu)((xr - (e + (vf)((vu)(127 - k) << 23))) + one) + kexp); /* 2^-k */
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
            float fl[VW / 2], fh[VW / 2];
            int64_t bad[VW / 2];
            memcpy(fl, &lo, sizeof fl), memcpy(fh, &hi, sizeof fh), memcpy(bad, &far, sizeof bad);
            for (int l = 0; l < VW / 2; l++)
                if (bad[l] || fl[l] != fh[l]) dst[k][i + l] = k ? (float)sin(x[i + l]) : (float)cos(x[i + l]);
        }
    }
}

/* Whether vtanhf is this libm's tanhf: equal on a spread of inputs (every binade that reaches
 * expm1f's branches, both signs), which a different algorithm does not pass. ~2 us. */
static inline int vtanhf_matches(void) {
    float in[VW], out[VW];
    for (int n = 0; n < 512; n += VW) {
        for (int l = 0; l < VW; l++) {
            int m = n + l;
            float mant = 1.0f + (float)(m * 2654435761u % 8388608u) / 8388608.0f;
            in[l] = (m & 1 ? -1.0f : 1.0f) * ldexpf(mant, m % 48 - 40);
        }
        vf y = vtanhf(ld(in));
        memcpy(out, &y, sizeof out);
        for (int l = 0; l < VW; l++)
            if (memcmp(&out[l], &(float){tanhf(in[l])}, sizeof(float))) return 0;
    }
    return 1;
}
#endif
