/* infer: applying a trained model to a long recording (reference §5 run_dpd; DESIGN §6) —
 * exactly, as one sequence, or in batched sections with warm-up and look-ahead margins — on a
 * session. */
#include <stdlib.h>
#include <string.h>

#include "dpd/dpd.h"
#include "session.h"
#include "status.h"

void dpd_apply_defaults(dpd_apply_cfg *c) {
    *c = (dpd_apply_cfg){.exact = 0, .section = 4096, .warmup = 1024, .lookahead = 32, .batch = 64};
}

dpd_status dpd_apply(dpd_session *ses, const float *x, size_t n, float *y, const dpd_apply_cfg *c, dpd_error *err) {
    if (n == 0) return dpd_fail(err, DPD_E_INVAL, "the recording is empty");
    if (c->section < 1 || c->warmup < 0 || c->lookahead < 0 || c->batch < 1)
        return dpd_fail(err, DPD_E_INVAL, "need section >= 1, warmup >= 0, lookahead >= 0, batch >= 1");
    size_t L = (size_t)c->warmup + c->section + c->lookahead;
    int ahead = dpd_model_lookahead(dpd_session_cfg(ses));
    if (!c->exact && n > L && c->lookahead < ahead) /* each section's last outputs would miss inputs they read */
        return dpd_fail_field(err, "lookahead", DPD_E_INVAL,
                              "lookahead: %d is shorter than the model's: %s reads %d samples ahead of each output, so "
                              "the last %d of every section would differ from --exact; give %d or more",
                              c->lookahead, dpd_session_cfg(ses)->family, ahead, ahead - c->lookahead, ahead);
    if (c->exact || n <= L) {
        if (n > 0x7fffffff) return dpd_fail(err, DPD_E_INVAL, "recording too long for exact mode (%zu samples)", n);
        return dpd_session_forward(ses, x, 1, (int)n, y, err);
    }
    size_t S = (size_t)c->section, ns = (n + S - 1) / S, B = (size_t)c->batch < ns ? (size_t)c->batch : ns;
    float *wx = malloc(2 * B * L * 2 * sizeof *wx), *wy = wx ? wx + B * L * 2 : NULL;
    size_t *st = malloc(B * sizeof *st);
    if (!wx || !st) {
        free(wx), free(st);
        return dpd_fail(err, DPD_E_NOMEM, "out of memory for %zu sections of %zu samples", B, L);
    }
    dpd_status s = DPD_OK;
    for (size_t k0 = 0; k0 < ns && !s; k0 += B) {
        size_t nb = ns - k0 < B ? ns - k0 : B;
        for (size_t b = 0; b < nb; b++) { /* window start, shifted inward to stay in [0, n) */
            size_t k = k0 + b, w0 = k * S > (size_t)c->warmup ? k * S - c->warmup : 0;
            if (w0 + L > n) w0 = n - L;
            st[b] = w0;
            memcpy(wx + b * L * 2, x + w0 * 2, L * 2 * sizeof *wx);
        }
        s = dpd_session_forward(ses, wx, (int)nb, (int)L, wy, err);
        for (size_t b = 0; b < nb && !s; b++) {
            size_t k = k0 + b, o0 = k * S, o1 = o0 + S < n ? o0 + S : n;
            memcpy(y + o0 * 2, wy + (b * L + (o0 - st[b])) * 2, (o1 - o0) * 2 * sizeof *y);
        }
    }
    free(wx), free(st);
    return s;
}
