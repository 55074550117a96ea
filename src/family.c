/* family: the registry of model families (names matched case-insensitively) and the
 * parameter-table helper. */
#include "family.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static const dpd_family *const families[] = {
    &dpd_family_gru,     &dpd_family_dgru,    &dpd_family_lstm,
    &dpd_family_tres_gru, &dpd_family_rvtdcnn, &dpd_family_tres_deltagru, &dpd_family_deltagru,
    &dpd_family_vdlstm,   &dpd_family_pgjanet, &dpd_family_dvrjanet,     &dpd_family_tcn,
    &dpd_family_gmp,      &dpd_family_mp,      &dpd_family_gmp_ls,
};

const dpd_family *const *dpd_family_list(int *n) {
    *n = (int)(sizeof families / sizeof *families);
    return families;
}

const dpd_family *dpd_family_find(const char *name) {
    for (size_t i = 0; i < sizeof families / sizeof *families; i++)
        if (!strcasecmp(families[i]->name, name)) return families[i];
    return NULL;
}

static int info(const dpd_family *f, dpd_family_info *out) {
    if (!f) return 0;
    *out = (dpd_family_info){f->name, f->tag, f->params, f->about, f->hidden, f->max_layers, f->poly, f->poly,
                             f->delta_zeros != NULL};
    return 1;
}

int dpd_family_count(void) { return (int)(sizeof families / sizeof *families); }

int dpd_family_at(int i, dpd_family_info *out) {
    return i >= 0 && i < dpd_family_count() ? info(families[i], out) : 0;
}

int dpd_family_lookup(const char *name, dpd_family_info *out) { return info(dpd_family_find(name), out); }

void dpd_tensor_add(dpd_tensor *t, int *n, size_t *off, const char *name, int d0, int d1, int d2,
                    int d3) {
    dpd_tensor *e = &t[(*n)++];
    int d[4] = {d0, d1, d2, d3};
    snprintf(e->name, sizeof e->name, "%s", name);
    e->ndim = 0;
    e->numel = 1;
    for (int k = 0; k < 4 && d[k]; k++) e->shape[e->ndim++] = d[k], e->numel *= (size_t)d[k];
    e->offset = *off;
    *off += e->numel;
}
