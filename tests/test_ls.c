/* test_ls: least squares recovers a known memory polynomial and a known GMP exactly from
 * noise-free data, and refuses what it cannot fit. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dpd/dpd.h"
#include "ls.h"

static void recover(const char *family, int K, int Q, int M) {
    dpd_model_cfg c = {"", 1, 1, K, Q, M};
    snprintf(c.family, sizeof c.family, "%s", family);
    dpd_model *truth, *fit;
    dpd_error err;
    CHECK(dpd_model_create(&c, &truth, &err) == DPD_OK && dpd_model_create(&c, &fit, &err) == DPD_OK, "%s", err.msg);
    dpd_rng rng;
    dpd_rng_seed(&rng, 5);
    size_t np = dpd_model_nparams(truth), n = 4000;
    float *p = dpd_model_params(truth);
    for (size_t i = 0; i < np; i++) p[i] = (float)(0.3 * dpd_rng_normal(&rng) / (1 + i / 2 / Q));
    p[0] = 1;
    float *x = malloc(n * 2 * sizeof *x), *y = malloc(n * 2 * sizeof *y);
    for (size_t i = 0; i < 2 * n; i++) x[i] = (float)(0.3 * dpd_rng_normal(&rng));
    dpd_net *net = check_net(truth, "auto");
    CHECK(dpd_net_forward(net, x, 1, (int)n, y, &err) == DPD_OK, "%s", err.msg);
    dpd_net_free(net);
    CHECK(dpd_ls_fit(fit, x, y, n, 1e-12, &err) == DPD_OK, "%s fit: %s", family, err.msg);
    double worst = 0;
    for (size_t i = 0; i < np; i++) worst = fmax(worst, fabs(dpd_model_params(fit)[i] - p[i]));
    CHECK(worst < 2e-3, "%s K%d Q%d M%d: coefficients recovered within %.2e", family, K, Q, M, worst);
    printf("%s K%d Q%d M%d: %zu coefficients recovered within %.2e\n", family, K, Q, M, np / 2, worst);
    CHECK(dpd_ls_fit(fit, x, y, 3, 1e-9, &err) == DPD_E_INVAL && strstr(err.msg, "cannot fit"), "too few samples");
    free(x), free(y);
    dpd_model_free(truth), dpd_model_free(fit);
}

int main(void) {
    recover("mp", 5, 8, 0);
    recover("gmp_ls", 4, 4, 2);
    dpd_model_cfg g = {"gru", 4, 1};
    dpd_model *m = check_model(&g, NULL);
    dpd_error err;
    float x[4] = {0}, y[4] = {0};
    CHECK(dpd_ls_fit(m, x, y, 2, 1e-9, &err) == DPD_E_UNSUPPORTED, "a neural model cannot be fitted by least squares");
    dpd_model_free(m);
    return check_done("ls");
}
