/* settings: the user's dpd settings in $XDG_CONFIG_HOME/dpd/config.json (default
 * ~/.config/dpd/config.json): provider (auto, cpu or a pack's name), cpu_level
 * (low|balanced|high|max), gpu_memory (low|medium|high|max), and the reason the provider
 * preference last fell back to cpu. Absent file = defaults; a corrupt file or an unknown key is
 * an error naming the file. The struct and the public functions (dpd_settings_path, _load,
 * _save, _set) are declared in dpd/dpd.h; this header adds the library's internal helpers. */
#ifndef DPD_SETTINGS_H
#define DPD_SETTINGS_H
#include "dpd/dpd.h"

/* Fallback cases 4 and 5: the provider preference becomes cpu with reason recorded (shown by
 * `dpd providers` and `dpd config show`). Best effort: a settings file that cannot be read or
 * written is left as it is. */
void dpd_settings_fall_back(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The batch bound of a gpu_memory level for a device with `memory` dedicated bytes and a model
 * needing `per_seq` bytes per sequence (25/50/75/90 % of the memory; an unknown level counts as
 * medium); 0 when memory or per_seq is 0, else in [1, 2^20]. dpd_batch_bound (dpd.h) is the
 * public form. */
int dpd_settings_batch_bound(const char *level, unsigned long long memory, size_t per_seq);
#endif
