/* test_models: every model family against PyTorch (model_*.json: output, loss, every parameter
 * gradient and the input gradient within the fixtures README tolerances), a finite-difference
 * gradient check of each family's double-precision kernels, parameter counts against OpenDPD's
 * formulas, finite outputs and gradients at zero amplitude, and the GRU initialiser. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dpd/dpd.h"
#include "family.h"
#include "kern/kern.h"

extern const dpd_k64 dpd_k64_recurrent, dpd_k64_tres, dpd_k64_rvtdcnn, dpd_k64_poly, dpd_k64_vdlstm,
    dpd_k64_janet, dpd_k64_tcn, dpd_k64_gmp;

/* Delta thresholds for the gradient checks of the delta families: large enough to skip some
 * updates, and the random data keep every |delta| away from them (decisions do not flip). */
static double grad_thx(const char *f) { return strstr(f, "delta") ? 0.05 : 0; }

static const struct {
    const char *family;
    const dpd_k64 *k;
} k64[] = {{"gru", &dpd_k64_recurrent},  {"lstm", &dpd_k64_recurrent}, {"dgru", &dpd_k64_recurrent},
           {"deltagru", &dpd_k64_recurrent}, {"tres_gru", &dpd_k64_tres}, {"rvtdcnn", &dpd_k64_rvtdcnn},
           {"mp", &dpd_k64_poly}, {"gmp_ls", &dpd_k64_poly}, {"tres_deltagru", &dpd_k64_tres},
           {"vdlstm", &dpd_k64_vdlstm}, {"pgjanet", &dpd_k64_janet}, {"dvrjanet", &dpd_k64_janet},
           {"tcn", &dpd_k64_tcn}, {"gmp", &dpd_k64_gmp}};

static void fixture(const char *file, const char *family) {
    const char *path = check_shared(file);
    if (!path) return check_skip(file, "fixture not found (../shared absent)");
    json_t *j = check_json(path);
    json_t *hp = json_object_get(j, "hyperparameters");
    dpd_model_cfg c = {"", (int)json_integer_value(json_object_get(hp, "hidden_size")),
                       (int)json_integer_value(json_object_get(hp, "num_layers"))};
    snprintf(c.family, sizeof c.family, "%s", family);
    c.thx = json_number_value(json_object_get(hp, "thx"));
    c.thh = json_number_value(json_object_get(hp, "thh"));
    c.units = (int)json_integer_value(json_object_get(hp, "num_dvr_units"));
    int fwd_only = !strcmp(json_string_value(json_object_get(j, "kind")), "model_forward_only");
    int B = (int)json_integer_value(json_object_get(j, "B")), T = (int)json_integer_value(json_object_get(j, "T"));
    dpd_model *m;
    dpd_error err;
    if (dpd_model_create(&c, &m, &err) != DPD_OK) {
        CHECK(0, "%s: %s", file, err.msg);
        json_decref(j);
        return;
    }
    CHECK(dpd_model_nparams(m) == (size_t)json_integer_value(json_object_get(j, "n_params")),
          "%s: %zu parameters, fixture has %lld", file, dpd_model_nparams(m),
          json_integer_value(json_object_get(j, "n_params")));
    json_t *params = json_object_get(j, "parameters"), *grads = json_object_get(j, "grad_parameters");
    CHECK((int)json_array_size(params) == dpd_model_ntensors(m), "%s: tensor count", file);
    float *p = dpd_model_params(m);
    for (int i = 0; i < dpd_model_ntensors(m); i++) {
        const dpd_tensor *t = dpd_model_tensor(m, i);
        json_t *e = json_array_get(params, (size_t)i), *sh = json_object_get(e, "shape");
        int same = !strcmp(t->name, json_string_value(json_object_get(e, "name"))) &&
                   (int)json_array_size(sh) == t->ndim;
        for (int d = 0; same && d < t->ndim; d++) same = json_integer_value(json_array_get(sh, (size_t)d)) == t->shape[d];
        CHECK(same, "%s: tensor %d is %s, fixture has %s", file, i, t->name,
              json_string_value(json_object_get(e, "name")));
        CHECK(check_floats(e, p + t->offset, t->numel), "%s: %s size", file, t->name);
    }
    size_t n = (size_t)B * T * 2;
    float *x = malloc(n * sizeof *x), *tg = malloc(n * sizeof *tg), *y = malloc(n * sizeof *y),
          *dx = malloc(n * sizeof *dx);
    double *ref = malloc(n * sizeof *ref);
    check_floats(json_object_get(j, "input"), x, n);
    check_floats(json_object_get(j, "target"), tg, n);
    dpd_net *net = check_net(m, "auto");
    CHECK(dpd_net_forward(net, x, B, T, y, &err) == DPD_OK, "%s", err.msg);
    check_doubles(json_object_get(j, "output"), ref, n);
    double e = check_relmax(y, ref, n);
    CHECK(e <= 1e-5, "%s: output max abs err %.2e x max|ref| > 1e-5", file, e);
    dpd_sparsity sp;
    json_t *ds = json_object_get(j, "delta_statistics"), *ts = json_object_get(j, "temporal_sparsity");
    long long z[4];
    dpd_net_zeros(net, z);
    if (ds && dpd_model_sparsity(m, z, &sp)) {
        CHECK(sp.zeros_dx == json_integer_value(json_object_get(ds, "num_dx_zeros")) &&
                  sp.numel_dx == json_integer_value(json_object_get(ds, "num_dx_numel")) &&
                  sp.zeros_dh == json_integer_value(json_object_get(ds, "num_dh_zeros")) &&
                  sp.numel_dh == json_integer_value(json_object_get(ds, "num_dh_numel")),
              "%s: delta zeros %lld/%lld, %lld/%lld differ from OpenDPD's", file, sp.zeros_dx, sp.numel_dx,
              sp.zeros_dh, sp.numel_dh);
        CHECK(fabs(sp.sp_dv - json_number_value(json_object_get(ts, "SP_T_DV"))) < 1e-8 &&
                  fabs(sp.hw_param - json_number_value(json_object_get(ts, "HW_PARAM"))) < 1e-5,
              "%s: SP_T_DV %.9g HW_PARAM %.9g", file, sp.sp_dv, sp.hw_param);
    }
    double loss, want = json_number_value(json_object_get(j, "loss")), worst = e;
    if (fwd_only) {
        double s2 = 0;
        for (size_t i = 0; i < n; i++) s2 += ((double)y[i] - tg[i]) * ((double)y[i] - tg[i]);
        CHECK(fabs(s2 / n - want) <= 1e-5 * want, "%s: loss %.9g, want %.9g", file, s2 / n, want);
        printf("%s (%s): forward %.1e, delta statistics exact\n", file, family, worst);
        goto done;
    }
    CHECK(dpd_net_train_step(net, x, tg, B, T, &loss, dx, &err) == DPD_OK, "%s", err.msg);
    CHECK(fabs(loss - want) <= 1e-5 * want, "%s: loss %.9g, want %.9g", file, loss, want);
    check_doubles(json_object_get(j, "grad_input"), ref, n);
    e = check_relmax(dx, ref, n);
    worst = fmax(worst, e);
    CHECK(e <= 3e-5, "%s: grad_input: max abs %.2e x max|ref| > 3e-5", file, e);
    const float *g = dpd_net_grads(net);
    for (int i = 0; i < dpd_model_ntensors(m); i++) {
        const dpd_tensor *t = dpd_model_tensor(m, i);
        double *gr = malloc(t->numel * sizeof *gr);
        check_doubles(json_array_get(grads, (size_t)i), gr, t->numel);
        e = check_relmax(g + t->offset, gr, t->numel);
        worst = fmax(worst, e);
        CHECK(e <= 3e-5, "%s: d%s: max abs %.2e x max|ref| > 3e-5", file, t->name, e);
        free(gr);
    }
    printf("%s (%s): worst relative deviation %.1e\n", file, family, worst);
done:
    free(x), free(tg), free(y), free(dx), free(ref);
    dpd_net_free(net);
    dpd_model_free(m);
    json_decref(j);
}

static double loss64(const dpd_k64 *k, const dpd_model_cfg *c, const double *p, const double *x,
                     const double *t, int B, int T, double *y, double *ws) {
    k->forward(NULL, c, p, x, B, T, y, ws);
    double s = 0;
    for (int i = 0; i < B * T * 2; i++) s += (y[i] - t[i]) * (y[i] - t[i]);
    return s / (B * T * 2);
}

/* Central differences in double on every parameter and input. */
static void gradcheck(const char *family, const dpd_k64 *k, int H, int L, int B, int T) {
    dpd_model_cfg c = {"", H, L, 4, 3, 2}; /* order, memory and cross for the polynomials */
    snprintf(c.family, sizeof c.family, "%s", family);
    c.thx = grad_thx(family), c.thh = 2 * grad_thx(family);
    const dpd_family *f = dpd_family_find(family);
    dpd_tensor tt[DPD_MAX_TENSORS];
    int nt = f->layout(&c, tt);
    size_t np = tt[nt - 1].offset + tt[nt - 1].numel, n = (size_t)B * T * 2;
    dpd_rng rng;
    dpd_rng_seed(&rng, 7);
    double *p = malloc(np * sizeof *p), *dp = malloc(np * sizeof *dp), *x = malloc(n * sizeof *x),
           *t = malloc(n * sizeof *t), *y = malloc(n * sizeof *y), *dy = malloc(n * sizeof *dy),
           *dx = malloc(n * sizeof *dx);
    double *ws = malloc(f->ws_size(NULL, &c, B, T) * sizeof *ws), *sc = malloc(f->scratch_size(NULL, &c, B, T) * sizeof *sc);
    double scale = 0.5 / sqrt(1 + np / 100.0); /* keeps wide models' outputs O(1) */
    for (size_t i = 0; i < np; i++) p[i] = scale * dpd_rng_normal(&rng);
    for (size_t i = 0; i < n; i++) x[i] = 0.5 * dpd_rng_normal(&rng), t[i] = 0.5 * dpd_rng_normal(&rng);
    loss64(k, &c, p, x, t, B, T, y, ws);
    for (size_t i = 0; i < n; i++) dy[i] = 2 * (y[i] - t[i]) / n;
    k->backward(NULL, &c, p, x, dy, B, T, ws, sc, dp, dx);
    double h = 1e-6, worst = 0;
    for (int pass = 0; pass < 2; pass++) {
        double *v = pass ? x : p, *an = pass ? dx : dp;
        size_t cnt = pass ? n : np;
        for (size_t i = 0; i < cnt; i++) {
            double keep = v[i];
            v[i] = keep + h;
            double lp = loss64(k, &c, p, x, t, B, T, y, ws);
            v[i] = keep - h;
            double lm = loss64(k, &c, p, x, t, B, T, y, ws);
            v[i] = keep;
            double num = (lp - lm) / (2 * h), rel = fabs(num - an[i]) / fmax(1e-3, fabs(num) + fabs(an[i]));
            if (rel > worst) worst = rel;
        }
    }
    CHECK(worst < 1e-6, "gradcheck %s H=%d L=%d B=%d T=%d: worst relative error %.2e", family, H, L, B, T, worst);
    printf("gradcheck %s H=%d L=%d B=%d T=%d: worst relative error %.2e\n", family, H, L, B, T, worst);
    free(p), free(dp), free(x), free(t), free(y), free(dy), free(dx), free(ws), free(sc);
}

/* OpenDPD's parameter-count formulas (reference §3) and the published sizes. */
static void counts(void) {
    static const struct {
        const char *f;
        int H, L;
        size_t n;
    } known[] = {{"gru", 23, 1, 1911}, {"gru", 15, 1, 887}, {"dgru", 23, 1, 2751}, {"dgru", 13, 1, 1041},
                 {"lstm", 23, 1, 2532}, {"lstm", 9, 1, 488}, {"tres_gru", 15, 1, 999}, {"tres_gru", 9, 1, 447},
                 {"rvtdcnn", 12, 1, 500}, {"rvtdcnn", 23, 1, 929}, {"deltagru", 5, 1, 207}, {"gru", 4, 2, 226},
                 {"mp", 1, 1, 1000}, {"gmp_ls", 1, 1, 2 * (5 * 100 + 2 * 4 * 100 * 2)}};
    for (size_t i = 0; i < sizeof known / sizeof *known; i++) {
        dpd_model_cfg c = {"", known[i].H, known[i].L, 5, 100, 2}; /* MP K5 Q100: 1000 parameters */
        snprintf(c.family, sizeof c.family, "%s", known[i].f);
        dpd_model *m;
        dpd_error err;
        CHECK(dpd_model_create(&c, &m, &err) == DPD_OK && dpd_model_nparams(m) == known[i].n,
              "%s-%d has %zu parameters (want %zu)", known[i].f, known[i].H, m ? dpd_model_nparams(m) : 0, known[i].n);
        dpd_model_free(m);
    }
}

/* Zero-amplitude samples (silence, padding) give finite outputs and gradients (reference §13). */
static void zeros(void) {
    int nf;
    const dpd_family *const *fl = dpd_family_list(&nf);
    for (int k = 0; k < nf; k++) {
        dpd_model_cfg c = {"", 4, 1, 3, 4, 2};
        snprintf(c.family, sizeof c.family, "%s", fl[k]->name);
        dpd_error err;
        dpd_rng rng;
        dpd_rng_seed(&rng, 1);
        dpd_model *m = check_model(&c, &rng);
        float x[2 * 40] = {0}, t[2 * 40], dx[2 * 40];
        for (int i = 0; i < 80; i++) t[i] = 0.1f, x[i] = i % 3 ? 0.2f * (float)dpd_rng_normal(&rng) : 0;
        double loss;
        dpd_net *net = check_net(m, "auto");
        CHECK(dpd_net_train_step(net, x, t, 1, 40, &loss, dx, &err) == DPD_OK && isfinite(loss), "%s: %s", c.family, err.msg);
        int fin = 1;
        for (int i = 0; i < 80; i++) fin &= isfinite(dx[i]);
        for (size_t i = 0; i < dpd_model_nparams(m); i++) fin &= isfinite(dpd_net_grads(net)[i]) && isfinite(dpd_net_params(net)[i]);
        CHECK(fin, "%s: non-finite gradient with zero-amplitude samples", c.family);
        dpd_net_free(net);
        dpd_model_free(m);
    }
}

/* GRU init: W_hh gate blocks orthogonal, layer-0 W_ih within the Xavier bound, biases 0. */
static void init_scheme(void) {
    dpd_model_cfg c = {"gru", 7, 2};
    dpd_rng rng;
    dpd_rng_seed(&rng, 3);
    dpd_model *m = check_model(&c, &rng);
    const float *p = dpd_model_params(m);
    const dpd_tensor *whh = dpd_model_tensor(m, 1), *wih0 = dpd_model_tensor(m, 0), *bih = dpd_model_tensor(m, 2);
    double worst = 0;
    for (int g = 0; g < 3; g++) {
        const float *w = p + whh->offset + g * 49;
        for (int a = 0; a < 7; a++)
            for (int b = 0; b < 7; b++) {
                double d = 0;
                for (int k = 0; k < 7; k++) d += (double)w[a * 7 + k] * w[b * 7 + k];
                worst = fmax(worst, fabs(d - (a == b)));
            }
    }
    CHECK(worst < 1e-5, "W_hh gate blocks are not orthogonal (%.2e)", worst);
    double bound = sqrt(6.0 / (2 + 7)), mx = 0, bmax = 0;
    for (size_t i = 0; i < wih0->numel; i++) mx = fmax(mx, fabs(p[wih0->offset + i]));
    for (size_t i = 0; i < bih->numel; i++) bmax = fmax(bmax, fabs(p[bih->offset + i]));
    CHECK(mx <= bound && mx > 0.3 * bound, "layer-0 W_ih max %.3f outside Xavier bound %.3f", mx, bound);
    CHECK(bmax == 0, "biases are not zero");
    dpd_model_free(m);
    dpd_error err;
    dpd_model_cfg bad = {"nosuch", 4, 1};
    CHECK(dpd_model_create(&bad, &m, &err) == DPD_E_UNSUPPORTED && strstr(err.msg, "nosuch"), "unknown family");
    dpd_model_cfg zero = {"gru", 0, 1};
    CHECK(dpd_model_create(&zero, &m, &err) == DPD_E_INVAL, "hidden 0 refused");
    dpd_model_cfg two = {"tres_gru", 4, 2};
    CHECK(dpd_model_create(&two, &m, &err) == DPD_E_INVAL && strstr(err.msg, "layer"), "tres_gru has one layer");
}

/* A family's infer (the forward of an inference, which may keep less) gives forward's y bit for
 * bit, on the reference and the fast kernels, at batch sizes on both sides of the fast path's
 * minimum, and does not read what its workspace held before (filled with NaN first). */
static void infer_equals_forward(void) {
    int n;
    const dpd_family *const *all = dpd_family_list(&n);
    for (int i = 0; i < n; i++) {
        const dpd_family *f = all[i];
        if (!f->infer) continue;
        for (int kk = 0; kk < 2; kk++) {
            const kern_ops *k = NULL;
            dpd_error err;
            if (kk && kern_select("kernels", "auto", &k, &err)) continue;
            for (int b = 0; b < 3; b++) {
                const int B = (int[]){1, 5, 16}[b], T = 37, H = 7;
                dpd_model_cfg c = {"", H, 1};
                snprintf(c.family, sizeof c.family, "%s", f->name);
                dpd_tensor t[DPD_MAX_TENSORS];
                int nt = f->layout(&c, t);
                size_t np = t[nt - 1].offset + t[nt - 1].numel, ws = f->ws_size(k, &c, B, T), io = (size_t)B * T * 2;
                float *p = malloc(np * sizeof *p), *x = malloc(io * sizeof *x), *y0 = malloc(io * sizeof *y0);
                float *y1 = malloc(io * sizeof *y1), *w0 = calloc(ws, sizeof *w0), *w1 = malloc(ws * sizeof *w1);
                dpd_rng rng;
                dpd_rng_seed(&rng, 7);
                f->init(&c, t, p, &rng);
                for (size_t j = 0; j < io; j++) x[j] = 0.5f * (float)dpd_rng_normal(&rng);
                memset(w1, 0xff, ws * sizeof *w1);
                f->forward(k, &c, p, x, B, T, y0, w0);
                f->infer(k, &c, p, x, B, T, y1, w1);
                CHECK(!memcmp(y0, y1, io * sizeof *y0), "%s B=%d, %s kernels: infer's y differs from forward's", f->name,
                      B, kern_name(k));
                free(p), free(x), free(y0), free(y1), free(w0), free(w1);
            }
        }
    }
}

/* A family's model of 96 samples with random weights (seed): its parameters p, an input x and the
 * reference kernels' output y0 on it; x2, y1 and w for the probes to perturb x and run again. */
#define PROBE_T 96
typedef struct probe {
    const dpd_family *f;
    dpd_model_cfg c;
    float *p, *x, *x2, *y0, *y1, *w;
} probe;

static probe probe_open(const dpd_family *f, uint64_t seed) {
    probe b = {.f = f, .c = {"", 5, 1, 3, 4, 2}};
    snprintf(b.c.family, sizeof b.c.family, "%s", f->name);
    dpd_tensor t[DPD_MAX_TENSORS];
    int nt = f->layout(&b.c, t), T = PROBE_T;
    size_t np = t[nt - 1].offset + t[nt - 1].numel, ws = f->ws_size(NULL, &b.c, 1, T);
    b.p = malloc(np * sizeof *b.p), b.x = malloc(2 * T * sizeof *b.x), b.x2 = malloc(2 * T * sizeof *b.x);
    b.y0 = malloc(2 * T * sizeof *b.y0), b.y1 = malloc(2 * T * sizeof *b.y1), b.w = calloc(ws, sizeof *b.w);
    dpd_rng rng;
    dpd_rng_seed(&rng, seed);
    for (size_t j = 0; j < np; j++) b.p[j] = 0.3f * (float)dpd_rng_normal(&rng);
    for (int j = 0; j < 2 * T; j++) b.x[j] = 0.4f * (float)dpd_rng_normal(&rng);
    f->forward(NULL, &b.c, b.p, b.x, 1, T, b.y0, b.w);
    memcpy(b.x2, b.x, 2 * T * sizeof *b.x);
    return b;
}

/* y1 = the model on x2, then x2 = x again. */
static void probe_run(probe *b) {
    b->f->forward(NULL, &b->c, b->p, b->x2, 1, PROBE_T, b->y1, b->w);
    memcpy(b->x2, b->x, 2 * PROBE_T * sizeof *b->x);
}

static void probe_close(probe *b) { free(b->p), free(b->x), free(b->x2), free(b->y0), free(b->y1), free(b->w); }

/* dpd_model_lookahead against the reference kernels: with random weights, the outputs up to t0 do
 * not move when every input after t0 + ahead changes (the last 3 kept: RVTDCNN's and VDLSTM's
 * first rows wrap to the sequence's end), and where ahead > 0, some output up to t0 moves with
 * input t0 + ahead alone (the bound is tight). */
static void lookahead(void) {
    int n;
    const dpd_family *const *all = dpd_family_list(&n);
    for (int i = 0; i < n; i++) {
        probe b = probe_open(all[i], 11);
        const int t0 = 40, ahead = dpd_model_lookahead(&b.c);
        for (int j = 2 * (t0 + ahead + 1); j < 2 * (PROBE_T - 3); j++) b.x2[j] = -b.x2[j] + 0.7f;
        probe_run(&b);
        CHECK(ahead >= 0 && !memcmp(b.y0, b.y1, 2 * (t0 + 1) * sizeof *b.y0),
              "%s: the outputs up to t read no input beyond t + %d (dpd_model_lookahead)", b.c.family, ahead);
        if (ahead > 0) {
            b.x2[2 * (t0 + ahead)] += 1.5f, b.x2[2 * (t0 + ahead) + 1] -= 1.5f;
            probe_run(&b);
            CHECK(memcmp(b.y0, b.y1, 2 * (t0 + 1) * sizeof *b.y0), "%s: an output up to t reads input t + %d (the bound is tight)",
                  b.c.family, ahead);
        }
        probe_close(&b);
    }
}

/* dpd_model_lookback against the kernels: for a finite one, an output at t0 or later reads no input
 * before t0 - back (every earlier sample changed, from 3 on: RVTDCNN's first rows wrap to the end),
 * and does read t0 - back (the bound is tight); a recurrent family (-1) carries inputs further back
 * than any finite family reaches here (an output at t0 reads t0 - 12). */
static void lookback(void) {
    int n;
    const dpd_family *const *all = dpd_family_list(&n);
    for (int i = 0; i < n; i++) {
        probe b = probe_open(all[i], 12);
        const int t0 = 60, back = dpd_model_lookback(&b.c), at = back < 0 ? t0 - 12 : t0 - back;
        if (back >= 0) {
            for (int j = 2 * 3; j < 2 * (t0 - back); j++) b.x2[j] = -b.x2[j] + 0.7f;
            probe_run(&b);
            CHECK(!memcmp(b.y0 + 2 * t0, b.y1 + 2 * t0, 2 * (PROBE_T - t0) * sizeof *b.y0),
                  "%s: the outputs from t on read no input before t - %d (dpd_model_lookback)", b.c.family, back);
        }
        b.x2[2 * at] += 1.5f, b.x2[2 * at + 1] -= 1.5f;
        probe_run(&b);
        CHECK(b.y0[2 * t0] != b.y1[2 * t0] || b.y0[2 * t0 + 1] != b.y1[2 * t0 + 1], "%s: the output at t reads input t - %d (%s)",
              b.c.family, t0 - at, back < 0 ? "a recurrent state: dpd_model_lookback -1" : "the bound is tight");
        probe_close(&b);
    }
    dpd_model_cfg k1 = {"gmp_ls", 5, 1, 1, 4, 2}; /* K = 1: dpd_poly_terms has no cross terms */
    CHECK(dpd_model_lookback(&k1) == 3 && dpd_model_lookahead(&k1) == 0, "gmp_ls at K = 1: look-back Q - 1, no look-ahead");
}

int main(void) {
    fixture("fixtures/model_gru_h5.json", "gru");
    fixture("fixtures/model_gru_l2_h4.json", "gru");
    fixture("fixtures/model_dgru_h5.json", "dgru");
    fixture("fixtures/model_lstm_h5.json", "lstm");
    fixture("fixtures/model_tres_gru_h5.json", "tres_gru");
    fixture("fixtures/model_rvtdcnn_h6.json", "rvtdcnn");
    fixture("fixtures/model_deltagru_h5.json", "deltagru");
    fixture("fixtures/model_tres_gru_h5.json", "tres_deltagru"); /* zero thresholds: statistics */
    fixture("fixtures/model_deltagru_h5_thx0.01_thh0.05.json", "deltagru");
    fixture("fixtures/model_tres_deltagru_h5_thx0.01_thh0.05.json", "tres_deltagru");
    fixture("fixtures/model_vdlstm_h4.json", "vdlstm");
    fixture("fixtures/model_pgjanet_h4.json", "pgjanet");
    fixture("fixtures/model_dvrjanet_h4_k3.json", "dvrjanet");
    fixture("fixtures/model_tcnn_h4.json", "tcn");
    fixture("fixtures/model_gmp.json", "gmp");
    for (size_t i = 0; i < sizeof k64 / sizeof *k64; i++) {
        const dpd_family *f = dpd_family_find(k64[i].family);
        int L = f->max_layers > 1 ? 2 : 1;
        gradcheck(k64[i].family, k64[i].k, 3, L, 2, 20);
        gradcheck(k64[i].family, k64[i].k, 1, 1, 1, 1);
    }
    counts();
    zeros();
    init_scheme();
    infer_equals_forward();
    lookahead();
    lookback();
    return check_done("models");
}
