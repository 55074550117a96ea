/* Fuzzes the user's settings file: dpd_settings_load with XDG_CONFIG_HOME pointed at the scratch
 * directory holding the input as dpd/config.json. A loaded file holds only allowed values, so
 * setting each field back to its own value must succeed. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int ready;
    char path[4096];
    if (!ready) {
        fz_xdg();
        fz_mkdir(fz_path(path, "config"));
        fz_mkdir(fz_path(path, "config/dpd"));
        ready = 1;
    }
    fz_write(fz_path(path, "config/dpd/config.json"), data, size);
    dpd_settings s, t;
    dpd_error err;
    if (!dpd_settings_load(&s, &err)) {
        t = s;
        if (dpd_settings_set(&t, "cpu_level", s.cpu_level, &err) || dpd_settings_set(&t, "gpu_memory", s.gpu_memory, &err))
            abort(); /* the loader accepted a value the table refuses */
    }
    return 0;
}
