/* check: see check.h. */
#include "check.h"

#include <ftw.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int check_passed, check_failed, check_skipped;

int check_done(const char *name) {
    printf("RESULT %s %d %d %d\n", name, check_passed, check_failed, check_skipped);
    return check_failed != 0;
}

void check_skip(const char *name, const char *why) {
    printf("SKIP %s: %s\n", name, why);
    check_skipped++;
}

const char *check_shared(const char *rel) {
    static char path[8][4096];
    static int k;
    const char *root = getenv("DPD_SHARED") ? getenv("DPD_SHARED") : "../shared";
    char *p = path[k++ % 8];
    snprintf(p, 4096, "%s/%s", root, rel);
    return access(p, R_OK) == 0 ? p : NULL;
}

json_t *check_json(const char *path) {
    json_error_t e;
    json_t *j = json_load_file(path, 0, &e);
    if (!j) fprintf(stderr, "%s:%d: %s\n", path, e.line, e.text);
    return j;
}

static json_t *data_of(json_t *t) { return json_is_array(t) ? t : json_object_get(t, "data"); }

int check_floats(json_t *t, float *out, size_t n) {
    json_t *d = data_of(t);
    if (!d || json_array_size(d) != n) return 0;
    for (size_t i = 0; i < n; i++) out[i] = (float)json_number_value(json_array_get(d, i));
    return 1;
}

int check_doubles(json_t *t, double *out, size_t n) {
    json_t *d = data_of(t);
    if (!d || json_array_size(d) != n) return 0;
    for (size_t i = 0; i < n; i++) out[i] = json_number_value(json_array_get(d, i));
    return 1;
}

double check_relmax(const float *a, const double *b, size_t n) {
    double err = 0, ref = 0;
    for (size_t i = 0; i < n; i++) {
        err = fmax(err, fabs((double)a[i] - b[i]));
        ref = fmax(ref, fabs(b[i]));
    }
    return ref > 0 ? err / ref : err;
}

/* Every scratch directory is made under one root, removed at exit by the process that made it (a
 * forked child's exit leaves it to the parent); a test that crashes leaves it behind. */
static char tmp_root[256];
static pid_t tmp_owner;

static int tmp_remove_entry(const char *p, const struct stat *st, int flag, struct FTW *w) {
    (void)st, (void)flag, (void)w;
    if (remove(p)) perror(p);
    return 0;
}

static void tmp_remove(void) {
    if (getpid() == tmp_owner) nftw(tmp_root, tmp_remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

const char *check_tmpdir(void) {
    static char dirs[16][300];
    static int k;
    if (!tmp_root[0]) {
        snprintf(tmp_root, sizeof tmp_root, "%s/dpdtest.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (!mkdtemp(tmp_root)) {
            perror("mkdtemp");
            exit(2);
        }
        tmp_owner = getpid();
        atexit(tmp_remove);
    }
    char *d = dirs[k % 16];
    snprintf(d, sizeof dirs[0], "%s/%d", tmp_root, k++);
    if (mkdir(d, 0700)) {
        perror(d);
        exit(2);
    }
    return d;
}

void check_write(const char *dir, const char *name, const char *text) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (!f) {
        perror(p);
        exit(2);
    }
    fputs(text, f);
    fclose(f);
}

dpd_model *check_model(const dpd_model_cfg *c, dpd_rng *r) {
    dpd_model *m;
    dpd_error err;
    if (dpd_model_create(c, &m, &err)) {
        fprintf(stderr, "FAIL %s-%d: %s\n", c->family, c->hidden, err.msg);
        exit(1);
    }
    if (r) dpd_model_init(m, r);
    check_passed++;
    return m;
}

dpd_net *check_net(const dpd_model *m, const char *kernels) {
    dpd_error err = {0};
    const kern_ops *k = NULL;
    dpd_net *n = NULL;
    if (kern_select("kernels", kernels, &k, &err) || dpd_net_create(dpd_model_config(m), k, NULL, &n, &err)) {
        fprintf(stderr, "FAIL check_net(%s, %s): %s\n", dpd_model_config(m)->family, kernels, err.msg);
        exit(1);
    }
    memcpy(dpd_net_params(n), dpd_model_params((dpd_model *)m), dpd_model_nparams(m) * sizeof(float));
    return n;
}
