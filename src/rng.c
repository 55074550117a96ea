/* rng: xoshiro256** (Blackman & Vigna) seeded with splitmix64. dpd's only source of randomness:
 * weight init, shuffling and synthetic data all draw from here, so a seed replays a run. */
#include <math.h>

#include "dpd/dpd.h"

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void dpd_rng_seed(dpd_rng *r, uint64_t seed) {
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

uint64_t dpd_rng_next(dpd_rng *r) {
    uint64_t *s = r->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

double dpd_rng_uniform(dpd_rng *r) { return (double)(dpd_rng_next(r) >> 11) * 0x1.0p-53; }

double dpd_rng_normal(dpd_rng *r) {
    double u1 = 1.0 - dpd_rng_uniform(r); /* (0, 1]: log is finite */
    double u2 = dpd_rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

uint64_t dpd_rng_below(dpd_rng *r, uint64_t n) {
    /* rejection on the top of the range keeps every value equally likely */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n, v;
    do v = dpd_rng_next(r);
    while (v >= limit);
    return v % n;
}

void dpd_rng_shuffle(dpd_rng *r, uint32_t *a, size_t n) {
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)dpd_rng_below(r, i);
        uint32_t t = a[i - 1];
        a[i - 1] = a[j];
        a[j] = t;
    }
}
