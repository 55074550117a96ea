/* settings: the user's dpd settings in $XDG_CONFIG_HOME/dpd/config.json (default
 * ~/.config/dpd/config.json): provider (auto|cpu|cuda), cpu_level (low|balanced|high|max),
 * gpu_memory (low|medium|high|max), and the reason the provider preference last fell back to
 * cpu. Absent file = defaults; a corrupt file or an unknown key is an error naming the file. */
#ifndef DPD_SETTINGS_H
#define DPD_SETTINGS_H
#include "dpd/dpd.h"

typedef struct dpd_settings {
    char provider[16];   /* auto */
    char cpu_level[16];  /* max */
    char gpu_memory[16]; /* medium */
    char reason[512];    /* why provider fell back to cpu; "" when it did not */
} dpd_settings;

/* The settings file's path (XDG rules). */
const char *dpd_settings_path(void);

dpd_status dpd_settings_load(dpd_settings *s, dpd_error *err);
dpd_status dpd_settings_save(const dpd_settings *s, dpd_error *err); /* atomic */

/* Sets key to value after validating both; DPD_E_INVAL naming the key or the allowed values. */
dpd_status dpd_settings_set(dpd_settings *s, const char *key, const char *value, dpd_error *err);

/* Fallback cases 4 and 5: the provider preference becomes cpu with reason recorded (shown by
 * `dpd providers` and `dpd config show`). Best effort: a settings file that cannot be read or
 * written is left as it is. */
void dpd_settings_fall_back(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The batch bound of a gpu_memory level for a device with `memory` dedicated bytes and a model
 * needing `per_seq` bytes per sequence (25/50/75/90 % of the memory). */
int dpd_settings_batch_bound(const char *level, unsigned long long memory, size_t per_seq);
#endif
