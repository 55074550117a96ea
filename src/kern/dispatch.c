/* dispatch: the kernel tables by name — the fast ones for the best ISA this CPU has (cpuid), or
 * the scalar reference kernels ("ref") — plus the size rules shared with the families. No state:
 * each session keeps the table it chose. */
#include <string.h>

#include "../status.h"
#include "dpd/dpd.h"
#include "kern.h"

static const kern_ops *best(void) {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq")) return &kern_avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return &kern_avx2;
    return &kern_sse;
}

dpd_status kern_select(const char *field, const char *name, const kern_ops **out, dpd_error *err) {
    const kern_ops *b = best(), *k;
    if (!strcmp(name, "auto") || !strcmp(name, "fast") || !strcmp(name, "eager")) k = b; /* eager: device providers' */
    else if (!strcmp(name, "ref")) k = NULL;
    else if (!strcmp(name, "sse")) k = &kern_sse;
    else if (!strcmp(name, "avx2")) k = &kern_avx2;
    else if (!strcmp(name, "avx512")) k = &kern_avx512;
    else return dpd_fail_field(err, field, DPD_E_INVAL, "%s: '%s' is not one of auto, fast, eager, ref, avx512, avx2, sse", field, name);
    if (k == &kern_avx512 && b != &kern_avx512)
        return dpd_fail_field(err, field, DPD_E_UNSUPPORTED, "%s: this CPU lacks AVX-512 (best: %s)", field, b->name);
    if (k == &kern_avx2 && b == &kern_sse)
        return dpd_fail_field(err, field, DPD_E_UNSUPPORTED, "%s: this CPU lacks AVX2+FMA (best: sse)", field);
    *out = k;
    return DPD_OK;
}

const char *kern_name(const kern_ops *k) { return k ? k->name : "ref"; }

size_t kern_gru_saved(int I, int H, int T) {
    (void)I;
    return (size_t)T * 5 * H * KL + KL; /* + KL: the kernels align their planes to 64 bytes */
}

size_t kern_gru_tmp(int I, int H, int T) {
    size_t G = 3 * (size_t)H, fwd = (2 * G + I + 2) * KL + G * ((size_t)I + H) + 2 * (size_t)H;
    size_t bwd = (G * ((size_t)I + H) + 2 * G + KTW * (G + H + I + 2) + 4 * (size_t)H + 2 * (size_t)I + 2) * KL;
    (void)T;
    return (fwd > bwd ? fwd : bwd) + KL; /* + KL: the kernels align their scratch to 64 bytes */
}

size_t kern_lstm_saved(int I, int H, int T) {
    (void)I;
    return (size_t)T * 6 * H * KL + KL;
}

size_t kern_lstm_tmp(int I, int H, int T) {
    size_t G = 4 * (size_t)H, fwd = (2 * G + I) * KL + G * ((size_t)I + H);
    size_t bwd = ((size_t)T * (G + I) + G + 3 * (size_t)H + 2 * (size_t)I) * KL;
    return (fwd > bwd ? fwd : bwd) + KL; /* + KL: the kernels align their scratch to 64 bytes */
}

size_t kern_rvt_saved(int H, int T) { return (size_t)T * (36 + H) * KL + KL; }

size_t kern_rvt_tmp(int H, int T) {
    size_t fwd = (20 + 4 * (size_t)T + (size_t)H) * KL + 38 * (size_t)H;
    size_t bwd = ((size_t)T * (2 + H) + 30 + 20 + 2 * (size_t)T + (size_t)H + 36 + 20) * KL;
    return (fwd > bwd ? fwd : bwd) + KL; /* + KL: the kernels align their scratch to 64 bytes */
}

size_t kern_lin_tmp(int out, int in, int N) {
    size_t nblk = ((size_t)N + KL - 1) / KL, fwd = (size_t)(in + out) * KL + (size_t)in * out;
    size_t bwd = (nblk * (size_t)(in + out) + (size_t)in) * KL;
    return (fwd > bwd ? fwd : bwd) + KL; /* + KL: the kernels align their scratch to 64 bytes */
}
