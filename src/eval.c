/* eval: the one evaluation — a split cut into nperseg segments (zero-padded tail), run through a
 * session (made resident once), scored: the loss as the mean of per-batch MSEs (OpenDPD's
 * validation loss) and the five metrics with their statuses. Used by training, dpd eval,
 * dpd parity and the studio. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "dpd/dpd.h"
#include "session.h"
#include "status.h"

void dpd_eval_free(dpd_eval *e) {
    if (!e) return;
    free(e->x), free(e->ref), free(e->pred);
    memset(e, 0, sizeof *e);
}

static unsigned long long next_id(void) {
    static atomic_ullong ids;
    return atomic_fetch_add(&ids, 1) + 1;
}

dpd_status dpd_eval_head(dpd_eval *e, const dpd_eval *from, int S, dpd_error *err) {
    memset(e, 0, sizeof *e);
    if (!from->x || S < 1 || S > from->S) return dpd_fail(err, DPD_E_INVAL, "evaluation head: %d of %d segments", S, from->S);
    size_t len = (size_t)S * (size_t)from->N * 2, n = (size_t)S * (size_t)from->N;
    e->split = from->split, e->S = S, e->N = from->N, e->n = n < from->n ? n : from->n, e->id = next_id();
    e->x = malloc(len * sizeof *e->x), e->ref = malloc(len * sizeof *e->ref), e->pred = calloc(len, sizeof *e->pred);
    if (!e->x || !e->ref || !e->pred) {
        dpd_eval_free(e);
        return dpd_fail(err, DPD_E_NOMEM, "out of memory for a preview");
    }
    memcpy(e->x, from->x, len * sizeof *e->x);
    memcpy(e->ref, from->ref, len * sizeof *e->ref);
    return DPD_OK;
}

dpd_status dpd_eval_prepare(dpd_eval *e, const dpd_dataset *ds, int split, double gain, dpd_error *err) {
    memset(e, 0, sizeof *e);
    if (split != DPD_VAL && split != DPD_TEST)
        return dpd_fail(err, DPD_E_INVAL, "evaluation needs the val or test split (got %d)", split);
    const dpd_split *sp = &ds->split[split];
    int N = ds->spec.nperseg;
    if (!sp->n) return dpd_fail(err, DPD_E_INVAL, "%s: the %s split is empty", ds->dir, split == DPD_VAL ? "val" : "test");
    e->split = split, e->n = sp->n, e->N = N, e->id = next_id();
    dpd_status s = dpd_segments(sp->x, sp->n, N, 1.0, &e->x, &e->S, err);
    if (!s) s = gain > 0 ? dpd_segments(sp->x, sp->n, N, gain, &e->ref, &e->S, err)
                         : dpd_segments(sp->y, sp->n, N, 1.0, &e->ref, &e->S, err);
    if (!s && !(e->pred = calloc((size_t)e->S * N * 2, sizeof *e->pred)))
        s = dpd_fail(err, DPD_E_NOMEM, "out of memory for predictions");
    if (s) dpd_eval_free(e);
    return s;
}

dpd_status dpd_eval_measured(const dpd_eval *e, const dpd_dataset *ds, const dpd_scoring *sc, dpd_metrics *m,
                             dpd_error *err) {
    memset(m, 0, sizeof *m);
    if (!e->ref) return dpd_fail(err, DPD_E_INVAL, "evaluation not prepared");
    const dpd_split *sp = &ds->split[e->split];
    float *y = NULL;
    int S = 0;
    dpd_status s = sp->n == e->n ? dpd_segments(sp->y, sp->n, e->N, 1.0, &y, &S, err)
                                 : dpd_fail(err, DPD_E_INVAL, "the evaluation is not of this dataset's split");
    if (!s) s = dpd_metrics_compute(y, e->ref, e->S, e->N, e->n, &ds->spec, sc, m, err);
    free(y);
    return s;
}

dpd_status dpd_eval_run(dpd_eval *e, dpd_session *ses, int batch, const dpd_spec *spec, const dpd_scoring *sc, dpd_error *err) {
    size_t total = (size_t)e->S * e->N * 2;
    if (!e->x) return dpd_fail(err, DPD_E_INVAL, "evaluation not prepared");
    if (batch < 1) return dpd_fail(err, DPD_E_INVAL, "batch_eval: %d is out of range 1..65536", batch);
    dpd_status s;
    if (!dpd_session_resident(ses, e->split, e->id, total / 2) &&
        (s = dpd_session_attach_as(ses, e->split, e->x, NULL, total / 2, e->id, err)))
        return s;
    if ((s = dpd_session_evaluate(ses, e->split, e->N, batch, e->pred, err))) return s;
    double acc = 0;
    int nb = 0;
    for (int s0 = 0; s0 < e->S; s0 += batch, nb++) {
        int b = e->S - s0 < batch ? e->S - s0 : batch;
        size_t off = (size_t)s0 * e->N * 2, n = (size_t)b * e->N * 2;
        double sq = 0;
        for (size_t i = 0; i < n; i++) {
            double d = (double)e->pred[off + i] - e->ref[off + i];
            sq += d * d;
        }
        acc += sq / (double)n;
    }
    e->loss = acc / nb;
    return dpd_metrics_compute(e->pred, e->ref, e->S, e->N, e->n, spec, sc, &e->m, err);
}
