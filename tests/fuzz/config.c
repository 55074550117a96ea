/* Fuzzes a run's config.json: jansson's json_loadb, then the internal dpd_config_from_json
 * (src/config.h) over the table defaults, and on success dpd_config_json writes it back. */
#include <jansson.h>

#include "config.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    json_error_t je;
    json_t *j = json_loadb((const char *)data, size, 0, &je);
    if (!j) return 0;
    dpd_train_cfg c;
    dpd_error err;
    dpd_config_defaults(&c);
    if (!dpd_config_from_json(j, &c, "config.json", &err)) {
        json_t *back = dpd_config_json(&c, "fuzz", "run", 0, "train_pa");
        json_decref(back);
    }
    json_decref(j);
    return 0;
}
