/* optim: see optim.h. Arithmetic mirrors torch.optim.AdamW's single-tensor float32 path. */
#include "optim.h"

#include <math.h>
#include <stdlib.h>

#include "status.h"

dpd_status dpd_adamw_init(dpd_adamw *o, size_t n, double lr, double wd, dpd_error *err) {
    *o = (dpd_adamw){.lr = lr, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .wd = wd, .n = n};
    o->m = calloc(2 * n, sizeof *o->m);
    if (!o->m) return dpd_fail(err, DPD_E_NOMEM, "out of memory for optimizer state");
    o->v = o->m + n;
    return DPD_OK;
}

void dpd_adamw_free(dpd_adamw *o) {
    if (o) free(o->m);
}

void dpd_adamw_step(dpd_adamw *o, float *p, const float *g) {
    o->step++;
    float decay = (float)(1.0 - o->lr * o->wd), b1 = (float)o->beta1, b2 = (float)o->beta2;
    float c1 = (float)(1.0 - o->beta1), c2 = (float)(1.0 - o->beta2);
    double bc1 = 1.0 - pow(o->beta1, (double)o->step), bc2 = 1.0 - pow(o->beta2, (double)o->step);
    float step = (float)(o->lr / bc1), bc2s = (float)sqrt(bc2), eps = (float)o->eps;
    for (size_t i = 0; i < o->n; i++) {
        p[i] *= decay;
        o->m[i] = o->m[i] * b1 + g[i] * c1;
        o->v[i] = o->v[i] * b2 + g[i] * g[i] * c2;
        p[i] -= step * (o->m[i] / (sqrtf(o->v[i]) / bc2s + eps));
    }
}

double dpd_clip(float *g, size_t n, double max_norm) {
    double ss = 0;
    for (size_t i = 0; i < n; i++) ss += (double)g[i] * g[i];
    double norm = sqrt(ss);
    if (max_norm > 0) {
        double coef = max_norm / (norm + 1e-6);
        if (coef < 1.0)
            for (size_t i = 0; i < n; i++) g[i] *= (float)coef;
    }
    return norm;
}

double dpd_mse(const float *y, const float *t, size_t n, float *dy) {
    double acc = 0;
    for (size_t i = 0; i < n; i++) {
        float d = y[i] - t[i];
        acc += (double)d * d;
        dy[i] = 2.0f * d / (float)n;
    }
    return acc / (double)n;
}
