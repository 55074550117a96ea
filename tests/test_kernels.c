/* test_kernels: every fast kernel (GRU and LSTM, each ISA this CPU has) against the scalar
 * reference kernels, and the families' exact fast paths bitwise against theirs,
 * on random and edge shapes — lanes partly used (B = 5, 7), full (16), T = 1, H = 1, H not a
 * multiple of the vector width, 2 and 6 inputs, with and without biases: the layer's h, the
 * input gradient and every weight gradient within 2e-5 of the reference's largest value; and an
 * inference of fewer sequences than the fast kernels take, padded to them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "kern/kern.h"
#include "dpd/dpd.h"
#include "models/rnn.h"

static double rel(const float *a, const float *b, size_t n) {
    double e = 0, m = 0;
    for (size_t i = 0; i < n; i++) e = fmax(e, fabs((double)a[i] - b[i])), m = fmax(m, fabs((double)b[i]));
    return m > 0 ? e / m : e;
}

static float *rnd(dpd_rng *r, size_t n, double s) {
    float *p = malloc(n * sizeof *p);
    for (size_t i = 0; i < n; i++) p[i] = (float)(s * dpd_rng_normal(r));
    return p;
}

static void rnn_case(const kern_ops *k, int lstm, int B, int T, int I, int H, int bias) {
    dpd_rng r;
    dpd_rng_seed(&r, (uint64_t)(B * 1000 + T * 10 + H));
    int G = (lstm ? 4 : 3) * H, P = lstm ? 6 : 5;
    float *wih = rnd(&r, (size_t)G * I, 0.4), *whh = rnd(&r, (size_t)G * H, 0.4), *bih = rnd(&r, G, 0.1),
          *bhh = rnd(&r, G, 0.1), *x = rnd(&r, (size_t)B * T * I, 0.5), *dh = rnd(&r, (size_t)B * T * H, 0.1);
    size_t sref = (size_t)B * T * P * H;
    size_t sfast = (size_t)B * T * H + (lstm ? kern_lstm_saved(I, H, T) : kern_gru_saved(I, H, T));
    size_t tmp = rnn_tmp_size(I, H, lstm ? 4 : 3, T);
    float *sv1 = calloc(sref, 4), *sv2 = calloc(sfast, 4), *t1 = calloc(tmp, 4), *t2 = calloc(tmp, 4);
    float *g1 = calloc((size_t)G * (I + H + 2), 4), *g2 = calloc((size_t)G * (I + H + 2), 4);
    float *dx1 = calloc((size_t)B * T * I, 4), *dx2 = calloc((size_t)B * T * I, 4);
    rnn_w_f32 w = {I, H, wih, whh, bias ? bih : NULL, bias ? bhh : NULL, 0, 0, 0};
    rnn_g_f32 g = {g1, g1 + (size_t)G * I, bias ? g1 + (size_t)G * (I + H) : NULL, bias ? g1 + (size_t)G * (I + H + 1) : NULL};
    /* the reference: B <= 4 lanes never take the fast path, so run it one sequence at a time */
    for (int b = 0; b < B; b++) {
        float *svb = calloc((size_t)T * P * H, 4), *dxb = calloc((size_t)T * I, 4);
        const float *xb = x + (size_t)b * T * I, *dhb = dh + (size_t)b * T * H;
        if (lstm) rnn_lstm_fwd_f32(&w, 1, T, xb, svb, t1);
        else rnn_gru_fwd_f32(&w, 1, T, xb, svb, t1);
        memcpy(sv1 + (size_t)b * T * H, svb, (size_t)T * H * 4); /* h plane, (B, T, H) */
        if (lstm) rnn_lstm_bwd_f32(&w, &g, 1, T, xb, svb, dhb, dxb, t1);
        else rnn_gru_bwd_f32(&w, &g, 1, T, xb, svb, dhb, dxb, t1);
        memcpy(dx1 + (size_t)b * T * I, dxb, (size_t)T * I * 4);
        free(svb), free(dxb);
    }
    kgru kw = {I, H, wih, whh, bias ? bih : NULL, bias ? bhh : NULL, g2, g2 + (size_t)G * I,
               bias ? g2 + (size_t)G * (I + H) : NULL, bias ? g2 + (size_t)G * (I + H + 1) : NULL};
    (lstm ? k->lstm_fwd : k->gru_fwd)(&kw, B, T, x, sv2, t2);
    (lstm ? k->lstm_bwd : k->gru_bwd)(&kw, B, T, x, sv2, dh, dx2, t2);
    double eh = rel(sv2, sv1, (size_t)B * T * H), ex = rel(dx2, dx1, (size_t)B * T * I);
    double ew = rel(g2, g1, (size_t)G * (I + H + (bias ? 2 : 0)));
    CHECK(eh < 2e-5 && ex < 2e-5 && ew < 2e-5, "%s %s B=%d T=%d I=%d H=%d bias=%d: h %.1e dx %.1e dW %.1e", k->name,
          lstm ? "LSTM" : "GRU", B, T, I, H, bias, eh, ex, ew);
    free(wih), free(whh), free(bih), free(bhh), free(x), free(dh), free(sv1), free(sv2), free(t1), free(t2);
    free(g1), free(g2), free(dx1), free(dx2);
}

/* A NaN weight gives NaN where the reference's does, on every ISA (the fast exp clamped a NaN to
 * a finite value on avx512 once: plausible metrics from a broken checkpoint). */
static void nan_case(const kern_ops *k, int lstm) {
    const int B = 16, T = 4, I = 2, H = 5, G = (lstm ? 4 : 3) * H, P = lstm ? 6 : 5;
    dpd_rng r;
    dpd_rng_seed(&r, 7);
    float *wih = rnd(&r, (size_t)G * I, 0.4), *whh = rnd(&r, (size_t)G * H, 0.4), *x = rnd(&r, (size_t)B * T * I, 0.5);
    wih[3] = NAN;
    size_t sfast = (size_t)B * T * H + (lstm ? kern_lstm_saved(I, H, T) : kern_gru_saved(I, H, T));
    float *sv1 = calloc((size_t)T * P * H, 4), *sv2 = calloc(sfast, 4), *t = calloc(rnn_tmp_size(I, H, lstm ? 4 : 3, T), 4);
    rnn_w_f32 w = {I, H, wih, whh, NULL, NULL, 0, 0, 0};
    kgru kw = {I, H, wih, whh, NULL, NULL, NULL, NULL, NULL, NULL};
    (lstm ? k->lstm_fwd : k->gru_fwd)(&kw, B, T, x, sv2, t);
    int same = 1, nans = 0;
    for (int b = 0; b < B; b++) {
        if (lstm) rnn_lstm_fwd_f32(&w, 1, T, x + (size_t)b * T * I, sv1, t);
        else rnn_gru_fwd_f32(&w, 1, T, x + (size_t)b * T * I, sv1, t);
        for (int i = 0; i < T * H; i++) same &= !isnan(sv1[i]) == !isnan(sv2[(size_t)b * T * H + i]), nans += isnan(sv1[i]) != 0;
    }
    CHECK(same && nans > 0, "%s %s: a NaN weight gives NaN where the reference's does (%d NaN in the reference's h)", k->name,
          lstm ? "LSTM" : "GRU", nans);
    free(wih), free(whh), free(x), free(sv1), free(sv2), free(t);
}

/* A model of family with H hidden and L layers, initialised from seed. */
static dpd_model *model_of(const char *family, int H, int L, dpd_rng *r, uint64_t seed) {
    dpd_model_cfg c = {"", H, L};
    snprintf(c.family, sizeof c.family, "%s", family);
    dpd_rng_seed(r, seed);
    return check_model(&c, r);
}

/* Whole models, fast kernels against --kernels ref: one training step on a batch of 16 (one
 * full chunk) gives the same outputs (loss) and gradients within tolerance. */
static void model_case(const char *family, int H, int L) {
    dpd_error err;
    dpd_rng r;
    dpd_model *m = model_of(family, H, L, &r, 4);
    int B = 16, T = 37;
    size_t n = (size_t)B * T * 2, np = dpd_model_nparams(m);
    float *x = rnd(&r, n, 0.4), *t = rnd(&r, n, 0.4), *g0 = malloc(np * 4), *dx0 = malloc(n * 4), *dx1 = malloc(n * 4);
    double l0, l1;
    /* two engines with their own kernel tables, side by side in one process */
    dpd_net *ref = check_net(m, "ref"), *fast = check_net(m, "auto");
    CHECK(dpd_net_train_step(ref, x, t, B, T, &l0, dx0, &err) == DPD_OK, "%s", err.msg);
    memcpy(g0, dpd_net_grads(ref), np * 4);
    CHECK(dpd_net_train_step(fast, x, t, B, T, &l1, dx1, &err) == DPD_OK, "%s", err.msg);
    double eg = rel(dpd_net_grads(fast), g0, np), ex = rel(dx1, dx0, n);
    CHECK(fabs(l1 - l0) <= 1e-5 * l0 && eg < 5e-5 && ex < 5e-5, "%s L=%d: fast vs ref loss %.9g/%.9g, grads %.1e, dx %.1e",
          family, L, l1, l0, eg, ex);
    printf("%s H=%d L=%d: %s kernels vs ref: loss %.1e, gradients %.1e, dx %.1e\n", family, H, L,
           kern_name(dpd_net_kernels(fast)), fabs(l1 - l0) / l0, eg, ex);
    dpd_net_free(ref), dpd_net_free(fast);
    free(x), free(t), free(g0), free(dx0), free(dx1);
    dpd_model_free(m);
}

/* An inference (dpd_net_infer) of 1, 3 and 4 sequences, and of 19 (a last chunk of 3), with the
 * fast kernels of a gated family: each sequence's output bitwise what dpd_net_forward gives it
 * beside other sequences in chunks of KMIN or more (the padding is silent and takes the fast
 * kernels), within their tolerance of the reference's; a family that is not gated (tcn) is not
 * padded: its inference is its forward of B, bit for bit. */
static void infer_case(const char *family, int H, int L) {
    dpd_error err;
    dpd_rng r;
    dpd_model *m = model_of(family, H, L, &r, 9);
    int T = 29, all = DPD_CHUNK + KMIN;
    size_t n = (size_t)all * T * 2;
    float *x = rnd(&r, n, 0.4), *y0 = malloc(n * 4), *y = malloc(n * 4), *yr = malloc(n * 4);
    dpd_net *fast = check_net(m, "auto"), *ref = check_net(m, "ref");
    int gated = strcmp(family, "tcn") != 0;
    static const int Bs[] = {1, 3, 4, DPD_CHUNK + 3};
    for (size_t i = 0; i < sizeof Bs / sizeof *Bs; i++) {
        int B = Bs[i];
        size_t nb = (size_t)B * T * 2;
        CHECK(dpd_net_forward(fast, x, gated ? all : B, T, y0, &err) == DPD_OK, "%s", err.msg);
        memset(y, 0xFF, n * 4);
        CHECK(dpd_net_infer(fast, x, B, T, y, &err) == DPD_OK, "%s", err.msg);
        CHECK(dpd_net_forward(ref, x, B, T, yr, &err) == DPD_OK, "%s", err.msg);
        CHECK(!memcmp(y, y0, nb * 4) && y[nb] != y[nb] && rel(y, yr, nb) < 2e-5,
              "%s H=%d L=%d: an inference of %d is not the fast kernels' forward of its sequences among %d (%.1e), "
              "wrote past its end, or is not within 2e-5 of the reference's (%.1e)",
              family, H, L, B, gated ? all : B, rel(y, y0, nb), rel(y, yr, nb));
    }
    dpd_net_free(fast), dpd_net_free(ref);
    free(x), free(y0), free(y), free(yr);
    dpd_model_free(m);
}

/* One sequence long enough that the fast kernels' padded workspace would pass 64 MiB (LSTM-7, 30 000
 * steps: 80 MB) is not padded: the reference kernels run it, bit for bit their forward. */
static void infer_long_case(void) {
    dpd_error err;
    dpd_rng r;
    dpd_model *m = model_of("lstm", 7, 1, &r, 11);
    int T = 30000;
    size_t n = (size_t)T * 2;
    float *x = rnd(&r, n, 0.4), *y = malloc(n * 4), *yr = malloc(n * 4);
    dpd_net *fast = check_net(m, "auto"), *ref = check_net(m, "ref");
    CHECK(dpd_net_infer(fast, x, 1, T, y, &err) == DPD_OK && dpd_net_forward(ref, x, 1, T, yr, &err) == DPD_OK, "%s",
          err.msg);
    CHECK(!memcmp(y, yr, n * 4), "lstm H=7: an inference of one sequence of %d steps is not the reference's (%.1e)", T,
          rel(y, yr, n));
    dpd_net_free(fast), dpd_net_free(ref);
    free(x), free(y), free(yr);
    dpd_model_free(m);
}

/* A family's exact fast path (src/kern/<family>.c) against --kernels ref with one ISA's table: the
 * outputs, the loss, every gradient and dx of one training step, and the delta counters of the
 * delta families, are bitwise equal. c: the model (its thresholds included). */
static void exact_cfg(const dpd_model_cfg *c, const char *isa, int B, int T) {
    const char *family = c->family;
    int H = c->hidden;
    long long z[2][4];
    dpd_error err;
    dpd_rng r;
    dpd_rng_seed(&r, (uint64_t)(H * 131 + B * 7 + T));
    dpd_model *m = check_model(c, &r);
    size_t n = (size_t)B * T * 2, np = dpd_model_nparams(m);
    float *x = rnd(&r, n, 0.4), *t = rnd(&r, n, 0.4), *y[2], *g[2], *dx[2];
    double loss[2];
    x[0] = x[1] = 0;                        /* a sample at A = 0 */
    x[T / 2 * 2] = x[T / 2 * 2 + 1] = 0; /* and one mid-sequence */
    dpd_net *net[2] = {check_net(m, "ref"), check_net(m, isa)};
    for (int k = 0; k < 2; k++) {
        y[k] = malloc(n * 4), g[k] = malloc(np * 4), dx[k] = malloc(n * 4);
        CHECK(dpd_net_forward(net[k], x, B, T, y[k], &err) == DPD_OK, "%s", err.msg);
        CHECK(dpd_net_train_step(net[k], x, t, B, T, &loss[k], dx[k], &err) == DPD_OK, "%s", err.msg);
        memcpy(g[k], dpd_net_grads(net[k]), np * 4);
        dpd_net_zeros(net[k], z[k]);
    }
    CHECK(!memcmp(y[0], y[1], n * 4) && loss[0] == loss[1] && !memcmp(g[0], g[1], np * 4) && !memcmp(dx[0], dx[1], n * 4),
          "%s %s H=%d B=%d T=%d: not bitwise the reference's (outputs %.1e, loss %.9g/%.9g, gradients %.1e, dx %.1e)",
          family, isa, H, B, T, rel(y[1], y[0], n), loss[1], loss[0], rel(g[1], g[0], np), rel(dx[1], dx[0], n));
    CHECK(!memcmp(z[0], z[1], sizeof z[0]),
          "%s %s H=%d B=%d T=%d thx=%g thh=%g: delta zeros %lld/%lld dx, %lld/%lld dh, reference %lld, %lld", family, isa,
          H, B, T, c->thx, c->thh, z[1][0], z[1][1], z[1][2], z[1][3], z[0][0], z[0][2]);
    for (int k = 0; k < 2; k++) free(y[k]), free(g[k]), free(dx[k]), dpd_net_free(net[k]);
    free(x), free(t);
    dpd_model_free(m);
}

/* exact_cfg for a family of hidden size H at zero thresholds. */
static void exact_case(const char *family, const char *isa, int H, int B, int T) {
    dpd_model_cfg c = {"", H, 1};
    snprintf(c.family, sizeof c.family, "%s", family);
    exact_cfg(&c, isa, B, T);
}

/* The DeltaGRU families' exact path (src/kern/delta.c) on the same shapes, at zero thresholds (every
 * delta committed), identity.sh's, and coarse ones that skip most input and hidden deltas. */
static void exact_delta(const char *isa, const int (*shapes)[3], size_t ns) {
    static const char *fams[] = {"deltagru", "tres_deltagru"};
    static const double th[][2] = {{0, 0}, {0.01, 0.05}, {0.4, 0.15}};
    for (size_t f = 0; f < sizeof fams / sizeof *fams; f++)
        for (size_t k = 0; k < sizeof th / sizeof *th; k++)
            for (size_t s = 0; s < ns; s++) {
                dpd_model_cfg c = {"", shapes[s][0], 1, .thx = th[k][0], .thh = th[k][1]};
                snprintf(c.family, sizeof c.family, "%s", fams[f]);
                exact_cfg(&c, isa, shapes[s][1], shapes[s][2]);
            }
}

/* The DeltaGRU layer itself, fast (k) against the reference, over several chunks of KL and a
 * partial one, with and without biases: the saved h, x_p and h_p, dx and every weight gradient
 * bitwise equal. */
static void delta_layer_case(const kern_ops *k, int B, int T, int I, int H, int bias) {
    dpd_rng r;
    dpd_rng_seed(&r, (uint64_t)(B * 1000 + T * 10 + H));
    int G = 3 * H;
    size_t bt = (size_t)B * T, ng = (size_t)G * (I + H + 2), nx = bt * I, np = bt * (2 * (size_t)H + I);
    float *wih = rnd(&r, (size_t)G * I, 0.4), *whh = rnd(&r, (size_t)G * H, 0.4), *bih = rnd(&r, G, 0.1),
          *bhh = rnd(&r, G, 0.1), *x = rnd(&r, nx, 0.5), *dh = rnd(&r, bt * H, 0.1), *sv[2], *gr[2], *dx[2];
    for (int e = 0; e < 2; e++) {
        const kern_ops *kt = e ? k : NULL;
        size_t tmp = rnn_gru_tmp(kt, I, H, 1, T);
        float *t = calloc(tmp, 4);
        sv[e] = calloc(rnn_gru_saved(kt, I, H, 1, B, T), 4), gr[e] = calloc(ng, 4), dx[e] = calloc(nx, 4);
        rnn_w_f32 w = {I, H, wih, whh, bias ? bih : NULL, bias ? bhh : NULL, 1, 0.3f, 0.1f, kt};
        rnn_g_f32 g = {gr[e], gr[e] + (size_t)G * I, bias ? gr[e] + (size_t)G * (I + H) : NULL,
                       bias ? gr[e] + (size_t)G * (I + H + 1) : NULL};
        rnn_gru_fwd_f32(&w, B, T, x, sv[e], t);
        rnn_gru_bwd_f32(&w, &g, B, T, x, sv[e], dh, dx[e], t);
        free(t);
    }
    CHECK(!memcmp(sv[0], sv[1], np * 4) && !memcmp(dx[0], dx[1], nx * 4) && !memcmp(gr[0], gr[1], ng * 4),
          "%s DeltaGRU layer B=%d T=%d I=%d H=%d bias=%d: not bitwise the reference's (h, x_p, h_p %.1e, dx %.1e, "
          "dW %.1e)", k->name, B, T, I, H, bias, rel(sv[1], sv[0], np), rel(dx[1], dx[0], nx), rel(gr[1], gr[0], ng));
    for (int e = 0; e < 2; e++) free(sv[e]), free(gr[e]), free(dx[e]);
    free(wih), free(whh), free(bih), free(bhh), free(x), free(dh);
}

static volatile float sink; /* keeps the naive loop's result observable */

/* GFLOP/s of a naive scalar loop: one dependent multiply-add chain, latency-bound. */
static double naive_gflops(void) {
    float a = 0;
    long n = 1L << 23;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < n; i++) a = a * 0.999f + 1e-3f;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    sink = a;
    return 2.0 * n / ((double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec)) / 1e9;
}

/* The multiply-add peak of every ISA this CPU has (and ref, which measures sse): finite, positive
 * and above a naive scalar loop's speed; no other timing is asserted. */
static void peak_case(void) {
    static const char *const names[] = {"sse", "avx2", "avx512", "ref"};
    double naive = naive_gflops();
    dpd_error err;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        double g = -1;
        dpd_status st = dpd_cpu_peak_gflops(names[i], &g, &err);
        if (st == DPD_E_UNSUPPORTED) {
            check_skip(names[i], "this CPU lacks the ISA (no peak to measure)");
            continue;
        }
        CHECK(st == DPD_OK && isfinite(g) && g > 0 && g > naive, "peak %s: %g GFLOP/s (naive scalar loop %g): %s",
              names[i], g, naive, st ? err.msg : "");
        printf("peak %s: %.1f GFLOP/s (naive scalar loop: %.2f)\n", names[i], g, naive);
    }
    double g = -1;
    CHECK(dpd_cpu_peak_gflops("avx9000", &g, &err) == DPD_E_INVAL && g == -1 && strstr(err.msg, "kernels: 'avx9000'"),
          "unknown kernels refused by the peak: %s", err.msg);
}

/* A cpu session of family-H with zero weights (*m receives the model); ends the test program on failure. */
static dpd_session *flop_session(const char *family, int H, dpd_model **m) {
    dpd_model_cfg c = {.layers = 1, .hidden = H};
    snprintf(c.family, sizeof c.family, "%s", family);
    *m = check_model(&c, NULL);
    dpd_kv o[] = {{"provider", "cpu"}, {"threads", "1"}};
    dpd_session *s = NULL;
    dpd_error err;
    if (dpd_session_create(*m, o, 2, &s, &err)) {
        fprintf(stderr, "FAIL %s-%d session: %s\n", family, H, err.msg);
        exit(1);
    }
    return s;
}

/* The step FLOP count of docs/performance.md: GRU-23 at B 64, T 200 is 6 B T (3H 2 + 3H H + 2 H)
 * = 136 012 800; a DPD GRU-15 through a frozen GRU-23 adds 4 B T 1771 for the PA: 151 731 200;
 * no count for a family outside gru, lstm, dgru and tres_gru (tcn), nor for a chain to one. */
static void flops_case(void) {
    dpd_model *mg, *md, *mt;
    dpd_session *g = flop_session("gru", 23, &mg), *d = flop_session("gru", 15, &md), *t = flop_session("tcn", 8, &mt);
    dpd_error err;
    CHECK(dpd_session_step_flops(g, 64, 200) == 136012800.0, "GRU-23 step FLOP %.0f != 136012800",
          dpd_session_step_flops(g, 64, 200));
    CHECK(dpd_session_chain(d, g, &err) == DPD_OK, "chain: %s", err.msg);
    CHECK(dpd_session_step_flops(d, 64, 200) == 151731200.0, "DPD GRU-15 through GRU-23 step FLOP %.0f != 151731200",
          dpd_session_step_flops(d, 64, 200));
    CHECK(dpd_session_step_flops(t, 64, 200) == 0, "tcn has no FLOP count: %.0f", dpd_session_step_flops(t, 64, 200));
    CHECK(dpd_session_chain(d, NULL, &err) == DPD_OK && dpd_session_chain(d, t, &err) == DPD_OK &&
              dpd_session_step_flops(d, 64, 200) == 0,
          "a chain to a tcn PA has no FLOP count: %.0f (%s)", dpd_session_step_flops(d, 64, 200), err.msg);
    dpd_session_free(d), dpd_session_free(g), dpd_session_free(t);
    dpd_model_free(md), dpd_model_free(mg), dpd_model_free(mt);
}

int main(void) {
    const kern_ops *all[3] = {&kern_sse, &kern_avx2, &kern_avx512};
    const char *isa[3] = {"sse2", "avx2", "avx512f"};
    __builtin_cpu_init();
    int have[3];
    for (int i = 0; i < 3; i++) {
        have[i] = i == 0 || (i == 1 ? __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")
                                    : __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq"));
        if (!have[i]) {
            check_skip(all[i]->name, "this CPU lacks the ISA");
            continue;
        }
        (void)isa;
        static const int shapes[][4] = {{16, 50, 2, 23}, {5, 1, 2, 1}, {7, 3, 6, 5}, {16, 20, 6, 17},
                                        {9, 40, 23, 23}, {16, 2, 2, 32}};
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
            for (int bias = 0; bias < 2; bias++)
                for (int lstm = 0; lstm < 2; lstm++)
                    rnn_case(all[i], lstm, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], bias);
        for (int lstm = 0; lstm < 2; lstm++) nan_case(all[i], lstm);
    }
    /* the exact fast paths: every ISA this CPU has, edge shapes (T = 1 and T shorter than the
     * widest tap span, H = 1, H not a multiple of any vector width, one and several chunks) */
    static const char *exact[] = {"tcn", "pgjanet", "dvrjanet", "gmp"};
    static const int eshapes[][3] = {{8, 16, 37}, {1, 1, 1}, {5, 3, 17}, {17, 7, 50}, {32, 40, 64}, {3, 64, 200}};
    for (int i = 0; i < 3; i++) {
        if (!have[i]) continue;
        for (size_t f = 0; f < sizeof exact / sizeof *exact; f++)
            for (size_t s = 0; s < sizeof eshapes / sizeof *eshapes; s++)
                exact_case(exact[f], all[i]->name, eshapes[s][0], eshapes[s][1], eshapes[s][2]);
        exact_delta(all[i]->name, eshapes, sizeof eshapes / sizeof *eshapes);
        delta_layer_case(all[i], 37, 23, 6, 5, 1);
        delta_layer_case(all[i], 40, 9, 3, 17, 0);
    }
    static const char *fams[] = {"gru", "dgru", "lstm", "tres_gru", "rvtdcnn", "vdlstm", "deltagru"};
    for (size_t f = 0; f < sizeof fams / sizeof *fams; f++) model_case(fams[f], 7, 1);
    model_case("gru", 23, 1);
    model_case("gru", 5, 3);
    model_case("dgru", 9, 2);
    model_case("lstm", 6, 2);
    for (size_t f = 0; f < sizeof fams / sizeof *fams - 1; f++) infer_case(fams[f], 7, 1); /* not deltagru */
    infer_case("gru", 5, 2);
    infer_case("tcn", 8, 1);
    infer_long_case();
    dpd_error err;
    const kern_ops *k = &kern_sse;
    CHECK(kern_select("kernels", "ref", &k, &err) == DPD_OK && !k && !strcmp(kern_name(k), "ref"), "ref selectable");
    CHECK(kern_select("kernels", "bogus", &k, &err) == DPD_E_INVAL && strstr(err.msg, "kernels: 'bogus'"),
          "unknown kernels refused, naming the field: %s", err.msg);
    CHECK(kern_select("kernels", "auto", &k, &err) == DPD_OK && k, "auto");
    printf("best kernels here: %s\n", kern_name(k));
    peak_case();
    flops_case();
    return check_done("kernels");
}
