/* peak: one core's measured multiply-add throughput with this ISA, the yardstick that `dpd bench
 * train` divides a training step's FLOP rate by (dpd_cpu_peak_gflops). It computes nothing the
 * models use. NACC independent chains of vector multiply-adds, enough to cover the latency times
 * the pipes (4 cycles x 2 pipes on current x86 cores; 12 leave room and fit the 16 registers of
 * avx2 and sse), so the loop is bound by throughput alone. Fused multiply-adds on avx512 and avx2;
 * the baseline (sse) has none: a multiply then an add, the same 2 FLOP a lane (this source is
 * compiled with -ffp-contract=off, so the compiler fuses nothing itself). */
#include <time.h>

#include "simd.h"

#define NACC 12     /* vector accumulators */
/* Many short runs, the best counting: on a shared machine one of them likely runs unpreempted
 * (under load 15 ms runs read half the peak, 4 ms ones the peak). */
#define RUN_S 0.004 /* seconds a timed run lasts at least */
#define REPS 20     /* timed runs */

static inline __attribute__((always_inline)) vf fmadd(vf a, vf b, vf c) {
#if VW == 16 && defined(__AVX512F__)
    return (vf)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
#elif VW == 8 && defined(__FMA__)
    return (vf)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
#else
    return a * b + c;
#endif
}

/* n rounds of a = a m + c on every accumulator: they converge to c / (1 - m) = 1, so nothing
 * overflows or turns subnormal however long it runs. The start x0 comes from the caller at run
 * time, or the compiler may find an accumulator that starts at the fixed point and drop its
 * chain; the sum keeps the work observable. */
static __attribute__((noinline)) float chains(long n, float x0) {
    vf a[NACC], m = (vf){} + 0.999f, c = (vf){} + 1e-3f, s = {};
    for (int i = 0; i < NACC; i++) a[i] = (vf){} + (x0 + (float)i);
    for (long k = 0; k < n; k++)
        for (int i = 0; i < NACC; i++) a[i] = fmadd(a[i], m, c);
    for (int i = 0; i < NACC; i++) s += a[i];
    float r = 0;
    for (int j = 0; j < VW; j++) r += s[j];
    return r;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static volatile float sink; /* keeps the chains' result observable */

/* Seconds of one run of n rounds. */
static double run(long n) {
    double t = now();
    sink = chains(n, sink);
    return now() - t;
}

/* GFLOP/s, 2 a lane per multiply-add: the round count doubles until a run lasts RUN_S (which
 * also brings the core to its clock), then the best of REPS runs of that length. About 0.1 s. */
double K(kern_peak)(void) {
    long n = 1024;
    while (run(n) < RUN_S) n *= 2;
    double best = 0, flop = 2.0 * NACC * VW * (double)n;
    for (int r = 0; r < REPS; r++) {
        double t = run(n);
        if (t > 0 && flop / t > best) best = flop / t;
    }
    return best / 1e9;
}
