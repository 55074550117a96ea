/* infer: applying a trained model to a long recording (reference §5 run_dpd; DESIGN §6) —
 * exactly, as one sequence, or in batched sections with warm-up and look-ahead margins. */
#include <stdlib.h>
#include <string.h>

#include "dpd/dpd.h"
#include "status.h"

void dpd_apply_defaults(dpd_apply_cfg *c) {
    *c = (dpd_apply_cfg){.exact = 0, .section = 4096, .warmup = 1024, .lookahead = 32, .batch = 64};
}

static dpd_status model_fwd(void *ctx, const float *x, int B, int T, float *y, dpd_error *err) {
    return dpd_model_forward(ctx, x, B, T, y, err);
}

dpd_status dpd_apply(dpd_model *m, const float *x, size_t n, float *y, const dpd_apply_cfg *c,
                     dpd_error *err) {
    return dpd_apply_with(model_fwd, m, x, n, y, c, err);
}

dpd_status dpd_apply_with(dpd_forward_fn fwd, void *ctx, const float *x, size_t n, float *y,
                          const dpd_apply_cfg *c, dpd_error *err) {
    if (n == 0) return dpd_fail(err, DPD_E_INVAL, "the recording is empty");
    if (c->section < 1 || c->warmup < 0 || c->lookahead < 0 || c->batch < 1)
        return dpd_fail(err, DPD_E_INVAL, "need --section >= 1, --warmup >= 0, --lookahead >= 0, --batch >= 1");
    size_t L = (size_t)c->warmup + c->section + c->lookahead;
    if (c->exact || n <= L) {
        if (n > 0x7fffffff) return dpd_fail(err, DPD_E_INVAL, "recording too long for --exact (%zu samples)", n);
        return fwd(ctx, x, 1, (int)n, y, err);
    }
    size_t S = (size_t)c->section, ns = (n + S - 1) / S, B = (size_t)c->batch;
    float *wx = malloc(2 * B * L * 2 * sizeof *wx), *wy = wx ? wx + B * L * 2 : NULL;
    if (!wx) return dpd_fail(err, DPD_E_NOMEM, "out of memory for %zu sections of %zu samples", B, L);
    dpd_status s = DPD_OK;
    for (size_t k0 = 0; k0 < ns && !s; k0 += B) {
        size_t nb = ns - k0 < B ? ns - k0 : B, start[256];
        size_t *st = nb <= 256 ? start : malloc(nb * sizeof *st);
        if (!st) {
            s = dpd_fail(err, DPD_E_NOMEM, "out of memory");
            break;
        }
        for (size_t b = 0; b < nb; b++) { /* window start, shifted inward to stay in [0, n) */
            size_t k = k0 + b, w0 = k * S > (size_t)c->warmup ? k * S - c->warmup : 0;
            if (w0 + L > n) w0 = n - L;
            st[b] = w0;
            memcpy(wx + b * L * 2, x + w0 * 2, L * 2 * sizeof *wx);
        }
        s = fwd(ctx, wx, (int)nb, (int)L, wy, err);
        for (size_t b = 0; b < nb && !s; b++) {
            size_t k = k0 + b, o0 = k * S, o1 = o0 + S < n ? o0 + S : n;
            memcpy(y + o0 * 2, wy + (b * L + (o0 - st[b])) * 2, (o1 - o0) * 2 * sizeof *y);
        }
        if (st != start) free(st);
    }
    free(wx);
    return s;
}
