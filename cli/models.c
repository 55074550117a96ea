/* models: `dpd models` — the model families with their parameter-count formulas and defaults. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "family.h"
#include "model.h"

int cmd_models(int argc, char **argv) {
    int json = argc == 1 && !strcmp(argv[0], "--json");
    if (argc > 0 && !json) {
        fprintf(stderr, "usage: dpd models [--json]\n");
        return 2;
    }
    int n;
    const dpd_family *const *f = dpd_family_list(&n);
    if (!json) printf("%-14s %-7s %-6s %-7s %-40s %s\n", "family", "hidden", "layers", "params", "formula", "about");
    for (int i = 0; i < n; i++) {
        dpd_model_cfg c = {"", f[i]->hidden, 1, 5, 20, 2}; /* K, Q, M for the polynomials */
        snprintf(c.family, sizeof c.family, "%s", f[i]->name);
        size_t np = dpd_model_count(&c);
        if (json)
            printf("%s{\"family\":\"%s\",\"hidden\":%d,\"max_layers\":%d,\"params\":%zu,\"formula\":\"%s\"}%s",
                   i ? "," : "[", f[i]->name, f[i]->hidden, f[i]->max_layers, np, f[i]->params, i == n - 1 ? "]\n" : "");
        else
            printf("%-14s %-7d %-6s %-7zu %-40s %s\n", f[i]->name, f[i]->hidden, f[i]->max_layers > 1 ? "1-16" : "1", np,
                   f[i]->params, f[i]->about);
    }
    return 0;
}
