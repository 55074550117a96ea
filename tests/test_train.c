/* test_train: the training arithmetic against PyTorch — 12 AdamW steps with global-norm
 * clipping on a GRU-5 (train_gru_h5_clip{200,0.05}_{float32,float64}.json), the plateau
 * scheduler (lr_plateau.json), framing and eval segmentation (framing.json), and the RNG's
 * shuffle. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dpd/dpd.h"
#include "optim.h"
#include "plateau.h"

static json_t *get(json_t *o, const char *k) { return json_object_get(o, k); }

static void trajectory(const char *file, double tol_param) {
    const char *path = check_shared(file);
    if (!path) return check_skip(file, "fixture not found (../shared absent)");
    json_t *j = check_json(path);
    dpd_model_cfg c = {"gru", 5, 1};
    dpd_model *m = check_model(&c, NULL);
    dpd_error err;
    float *p = dpd_model_params(m);
    json_t *init = get(j, "initial_parameters"), *fin = get(j, "final_parameters");
    for (int i = 0; i < dpd_model_ntensors(m); i++) {
        const dpd_tensor *t = dpd_model_tensor(m, i);
        CHECK(check_floats(json_array_get(init, (size_t)i), p + t->offset, t->numel), "%s size", t->name);
    }
    json_t *opt = get(j, "optimizer");
    double clip = json_number_value(get(get(j, "grad_clip"), "max_norm"));
    dpd_adamw o;
    CHECK(dpd_adamw_init(&o, dpd_model_nparams(m), json_number_value(get(opt, "lr")),
                         json_number_value(get(opt, "weight_decay")), &err) == DPD_OK, "adamw");
    int nb = 12, B = 4, T = 20;
    dpd_net *net = check_net(m, "auto");
    p = dpd_net_params(net);
    size_t per = (size_t)B * T * 2;
    float *bx = malloc(nb * per * sizeof *bx), *by = malloc(nb * per * sizeof *by);
    CHECK(check_floats(get(j, "batches_input"), bx, nb * per) && check_floats(get(j, "batches_target"), by, nb * per),
          "batches");
    json_t *lb = get(j, "loss_before_step"), *gn = get(j, "grad_norm_before_clip");
    double worst_loss = 0, worst_norm = 0;
    for (int k = 0; k < nb; k++) {
        double loss;
        CHECK(dpd_net_train_step(net, bx + k * per, by + k * per, B, T, &loss, NULL, &err) == DPD_OK, "%s", err.msg);
        double norm = dpd_clip(dpd_net_grads(net), dpd_model_nparams(m), clip);
        dpd_adamw_step(&o, p, dpd_net_grads(net));
        double wl = json_number_value(json_array_get(lb, (size_t)k)), wn = json_number_value(json_array_get(gn, (size_t)k));
        worst_loss = fmax(worst_loss, fabs(loss - wl) / wl);
        worst_norm = fmax(worst_norm, fabs(norm - wn) / wn);
    }
    CHECK(worst_loss <= 1e-5, "%s: loss_before_step relative error %.2e > 1e-5", file, worst_loss);
    CHECK(worst_norm <= 1e-5, "%s: pre-clip grad norm relative error %.2e > 1e-5", file, worst_norm);
    double worst = 0;
    for (int i = 0; i < dpd_model_ntensors(m); i++) {
        const dpd_tensor *t = dpd_model_tensor(m, i);
        double *ref = malloc(t->numel * sizeof *ref);
        check_doubles(json_array_get(fin, (size_t)i), ref, t->numel);
        double e = check_relmax(p + t->offset, ref, t->numel);
        worst = fmax(worst, e);
        CHECK(e <= tol_param, "%s: final %s max abs %.2e x max|ref| > %.0e", file, t->name, e, tol_param);
        free(ref);
    }
    printf("%s: loss %.1e, grad norm %.1e, final parameters %.1e (relative)\n", file, worst_loss, worst_norm, worst);
    free(bx), free(by);
    dpd_adamw_free(&o);
    dpd_net_free(net);
    dpd_model_free(m);
    json_decref(j);
}

static void plateau(void) {
    const char *path = check_shared("fixtures/lr_plateau.json");
    if (!path) return check_skip("lr_plateau", "fixture not found (../shared absent)");
    json_t *j = check_json(path), *metrics = get(j, "metrics"), *v;
    size_t i;
    json_array_foreach(get(j, "variants"), i, v) {
        json_t *s = get(v, "settings");
        dpd_plateau pl;
        dpd_plateau_init(&pl, json_number_value(get(s, "factor")), (int)json_integer_value(get(s, "patience")),
                         json_number_value(get(s, "min_lr")));
        double lr = json_number_value(get(s, "initial_lr")), worst = 0;
        for (size_t k = 0; k < json_array_size(metrics); k++) {
            lr = dpd_plateau_step(&pl, json_number_value(json_array_get(metrics, k)), lr);
            double want = json_number_value(json_array_get(get(v, "lr_after_step"), k));
            worst = fmax(worst, fabs(lr - want) / want);
            CHECK(pl.bad == json_integer_value(json_array_get(get(v, "num_bad_epochs_after_step"), k)),
                  "%s step %zu: bad epochs %d", json_string_value(get(v, "name")), k, pl.bad);
        }
        CHECK(worst <= 1e-9, "%s: lr relative error %.2e", json_string_value(get(v, "name")), worst);
    }
    json_decref(j);
}

static void framing(void) {
    const char *path = check_shared("fixtures/framing.json");
    if (!path) return check_skip("framing", "fixture not found (../shared absent)");
    json_t *j = check_json(path), *f;
    size_t i;
    json_array_foreach(get(j, "frames"), i, f) {
        size_t N = (size_t)json_integer_value(get(f, "N"));
        int L = (int)json_integer_value(get(f, "frame_length")), S = (int)json_integer_value(get(f, "stride"));
        size_t nf = dpd_frame_count(N, L, S);
        CHECK(nf == (size_t)json_integer_value(get(f, "num_frames")), "N=%zu L=%d S=%d: %zu frames", N, L, S, nf);
        CHECK((nf - 1) * S == (size_t)json_integer_value(get(f, "last_frame_first_sample")), "last frame start");
        CHECK((nf + 63) / 64 == (size_t)json_integer_value(get(f, "batches_per_epoch_bs64")), "batches at 64");
    }
    json_t *seg;
    json_array_foreach(get(j, "eval_segments"), i, seg) {
        size_t n = (size_t)json_integer_value(get(seg, "N"));
        int N = (int)json_integer_value(get(seg, "nperseg")), S;
        double *iq = malloc(2 * n * sizeof *iq);
        for (size_t k = 0; k < 2 * n; k++) iq[k] = 1.0;
        float *out;
        dpd_error err;
        CHECK(dpd_segments(iq, n, N, 1.0, &out, &S, &err) == DPD_OK, "segments");
        size_t zeros = 0;
        for (size_t k = 0; k < (size_t)S * N; k++) zeros += out[2 * k] == 0;
        CHECK(S == json_integer_value(get(seg, "num_segments")), "n=%zu N=%d: %d segments", n, N, S);
        CHECK(zeros == (size_t)json_integer_value(get(seg, "zero_padded_samples")), "n=%zu N=%d: %zu padded", n, N, zeros);
        free(iq), free(out);
    }
    json_decref(j);
}

static void shuffle(void) {
    dpd_rng a, b;
    dpd_rng_seed(&a, 42);
    dpd_rng_seed(&b, 42);
    uint32_t x[1000], y[1000], seen[1000] = {0};
    for (int i = 0; i < 1000; i++) x[i] = y[i] = (uint32_t)i;
    dpd_rng_shuffle(&a, x, 1000);
    dpd_rng_shuffle(&b, y, 1000);
    int fixed = 0, perm = 1;
    for (int i = 0; i < 1000; i++) fixed += x[i] == (uint32_t)i, seen[x[i]]++;
    for (int i = 0; i < 1000; i++) perm &= seen[i] == 1;
    CHECK(!memcmp(x, y, sizeof x), "same seed, same order");
    CHECK(perm && fixed < 20, "a real permutation (%d fixed points)", fixed);
    double s = 0, s2 = 0;
    for (int i = 0; i < 100000; i++) {
        double v = dpd_rng_normal(&a);
        s += v, s2 += v * v;
    }
    CHECK(fabs(s / 1e5) < 0.02 && fabs(s2 / 1e5 - 1) < 0.02, "normal draws: mean %.3f var %.3f", s / 1e5, s2 / 1e5);
}

/* Batch assembly equals the frame definition sample by sample, in the sampler's order. */
static void gather(void) {
    enum { N = 1000, L = 50, S = 7, B = 9 };
    float x[2 * N], y[2 * N], bx[B * L * 2], by[B * L * 2];
    for (int i = 0; i < 2 * N; i++) x[i] = (float)i, y[i] = (float)-i;
    uint32_t perm[256]; /* nf = 136 frames */
    size_t nf = dpd_frame_count(N, L, S);
    CHECK(nf == 136, "frame count %zu", nf);
    for (size_t i = 0; i < nf; i++) perm[i] = (uint32_t)i;
    dpd_rng r;
    dpd_rng_seed(&r, 9);
    dpd_rng_shuffle(&r, perm, nf);
    dpd_frames_gather(x, y, perm + 20, B, L, S, bx, by);
    int same = 1;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < L; t++)
            for (int c = 0; c < 2; c++) {
                size_t n = (size_t)perm[20 + b] * S + t;
                same &= bx[(b * L + t) * 2 + c] == x[2 * n + c] && by[(b * L + t) * 2 + c] == y[2 * n + c];
            }
    CHECK(same, "batch gather differs from the frame definition");
}

int main(void) {
    gather();
    trajectory("fixtures/train_gru_h5_clip200_float32.json", 1e-5);
    trajectory("fixtures/train_gru_h5_clip0.05_float32.json", 1e-5);
    trajectory("fixtures/train_gru_h5_clip200_float64.json", 1e-5);
    trajectory("fixtures/train_gru_h5_clip0.05_float64.json", 1e-5);
    plateau();
    framing();
    shuffle();
    return check_done("train");
}
