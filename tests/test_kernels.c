/* test_kernels: every fast kernel (GRU and LSTM, each ISA this CPU has) against the scalar
 * reference kernels
 * on random and edge shapes — lanes partly used (B = 5, 7), full (16), T = 1, H = 1, H not a
 * multiple of the vector width, 2 and 6 inputs, with and without biases: the layer's h, the
 * input gradient and every weight gradient within 2e-5 of the reference's largest value. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Whole models, fast kernels against --kernels ref: one training step on a batch of 16 (one
 * full chunk) gives the same outputs (loss) and gradients within tolerance. */
static void model_case(const char *family, int H, int L) {
    dpd_model_cfg c = {"", H, L};
    snprintf(c.family, sizeof c.family, "%s", family);
    dpd_error err;
    dpd_rng r;
    dpd_rng_seed(&r, 4);
    dpd_model *m = check_model(&c, &r);
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

int main(void) {
    const kern_ops *all[3] = {&kern_sse, &kern_avx2, &kern_avx512};
    const char *isa[3] = {"sse2", "avx2", "avx512f"};
    __builtin_cpu_init();
    for (int i = 0; i < 3; i++) {
        int have = i == 0 || (i == 1 ? __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")
                                     : __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq"));
        if (!have) {
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
    }
    static const char *fams[] = {"gru", "dgru", "lstm", "tres_gru", "rvtdcnn", "vdlstm", "deltagru"};
    for (size_t f = 0; f < sizeof fams / sizeof *fams; f++) model_case(fams[f], 7, 1);
    model_case("gru", 23, 1);
    model_case("gru", 5, 3);
    model_case("dgru", 9, 2);
    model_case("lstm", 6, 2);
    dpd_error err;
    const kern_ops *k = &kern_sse;
    CHECK(kern_select("kernels", "ref", &k, &err) == DPD_OK && !k && !strcmp(kern_name(k), "ref"), "ref selectable");
    CHECK(kern_select("kernels", "bogus", &k, &err) == DPD_E_INVAL && strstr(err.msg, "kernels: 'bogus'"),
          "unknown kernels refused, naming the field: %s", err.msg);
    CHECK(kern_select("kernels", "auto", &k, &err) == DPD_OK && k, "auto");
    printf("best kernels here: %s\n", kern_name(k));
    return check_done("kernels");
}
