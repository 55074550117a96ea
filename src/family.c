/* family: the registry of model families and the parameter-table helper. */
#include "family.h"

#include <stdio.h>
#include <string.h>

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
        if (!strcmp(families[i]->name, name)) return families[i];
    return NULL;
}

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
