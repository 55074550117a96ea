/* models: `dpd models [--json]` — the model families with their parameter-count formulas and
 * defaults, from the library's family table. */
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "cli.h"

int cmd_models(int argc, char **argv) {
    int json = 0;
    opt o[] = {{"json", OPT_FLAG, &json, 0, "print one JSON array", 0}};
    int r = args_parse(argc, argv, o, sizeof o / sizeof *o,
                       "dpd models [--json]\n\nThe model families (names match in any case): the hidden size each is "
                       "usually run at (its paper's),\nthe layer counts, and the parameter count at that size "
                       "(polynomials at K 5, Q 20,\nM 2). train-pa and train-dpd do not take the size from here: they "
                       "train hidden 23\nand 15 for every family unless --hidden is given, as OpenDPD does.\n");
    if (r) return r == 1 ? 0 : 2;
    int n = dpd_family_count();
    json_t *arr = json ? json_array() : NULL;
    if (!json) printf("%-14s %-7s %-6s %-7s %-40s %s\n", "family", "usual H", "layers", "params", "formula", "about");
    for (int i = 0; i < n; i++) {
        dpd_family_info f;
        if (!dpd_family_at(i, &f)) continue;
        dpd_model_cfg c = {.hidden = f.hidden, .layers = 1, .order = 5, .memory = 20, .cross = 2};
        snprintf(c.family, sizeof c.family, "%s", f.name);
        size_t np = dpd_model_count(&c);
        char layers[16];
        if (f.max_layers > 1) snprintf(layers, sizeof layers, "1-%d", f.max_layers);
        else snprintf(layers, sizeof layers, "1");
        if (json) {
            if (json_array_append_new(arr, json_pack("{s:s, s:s, s:i, s:i, s:I, s:s, s:s, s:b, s:b, s:b}", "family", f.name,
                                                     "tag", f.tag, "hidden", f.hidden, "max_layers", f.max_layers,
                                                     "params", (json_int_t)np, "formula", f.params, "about", f.about,
                                                     "poly", f.poly, "least_squares", f.least_squares, "delta", f.delta))) {
                json_decref(arr);
                arr = NULL;
                break;
            }
        } else {
            printf("%-14s %-7d %-6s %-7zu %-40s %s\n", f.name, f.hidden, layers, np, f.params, f.about);
        }
    }
    if (!json)
        printf("\nusual H: the hidden size each family is usually run at (its paper's), params at that size. train-pa "
               "and\ntrain-dpd train H 23 and 15 for every family unless --hidden is given, as OpenDPD does.\n");
    return json ? cli_json_print(arr) : 0;
}
