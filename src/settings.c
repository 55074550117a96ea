/* settings: see settings.h. */
#include "settings.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file.h"
#include "json.h"
#include "provider.h"
#include "status.h"

static const char *const LEVELS[] = {"low", "balanced", "high", "max", NULL};
static const char *const MEMORY[] = {"low", "medium", "high", "max", NULL};

DPD_API const char *dpd_settings_path(void) {
    static _Thread_local char path[4096]; /* per thread: the environment may differ between calls */
    dpd_xdg_path("XDG_CONFIG_HOME", ".config", "dpd/config.json", path, sizeof path);
    return path;
}

static int one_of(const char *v, const char *const *list) {
    for (int i = 0; list[i]; i++)
        if (!strcmp(v, list[i])) return 1;
    return 0;
}

static void defaults(dpd_settings *s) {
    memset(s, 0, sizeof *s);
    strcpy(s->provider, "auto"), strcpy(s->cpu_level, "max"), strcpy(s->gpu_memory, "medium");
}

/* The settings table: key, field, allowed values (a list, or a name pattern for provider: auto
 * and cpu are names too), and the message that lists them. */
DPD_API dpd_status dpd_settings_set(dpd_settings *s, const char *key, const char *value, dpd_error *err) {
    struct {
        const char *key;
        char *field;
        size_t len;
        const char *const *allowed;
        int (*valid)(const char *value);
        const char *list;
    } k[] = {{"provider", s->provider, sizeof s->provider, NULL, dpd_provider_name_ok,
              "auto, cpu or an installed pack's name such as cuda ([a-z0-9_], at most 31 characters)"},
             {"cpu_level", s->cpu_level, sizeof s->cpu_level, LEVELS, NULL, "low, balanced, high or max"},
             {"gpu_memory", s->gpu_memory, sizeof s->gpu_memory, MEMORY, NULL, "low, medium, high or max"},
             {"reason", s->reason, sizeof s->reason, NULL, NULL, ""}};
    if (!key || !value) return dpd_fail(err, DPD_E_INVAL, "setting: key and value are required");
    for (size_t i = 0; i < sizeof k / sizeof *k; i++) {
        if (strcmp(key, k[i].key)) continue;
        if ((k[i].allowed && !one_of(value, k[i].allowed)) || (k[i].valid && !k[i].valid(value)))
            return dpd_fail(err, DPD_E_INVAL, "setting '%s' must be %s (got '%s')", key, k[i].list, value);
        snprintf(k[i].field, k[i].len, "%s", value);
        if (!strcmp(key, "provider")) s->reason[0] = 0; /* an explicit choice clears a fallback */
        return DPD_OK;
    }
    return dpd_fail(err, DPD_E_INVAL, "unknown setting '%s' (provider, cpu_level, gpu_memory)", key);
}

DPD_API dpd_status dpd_settings_load(dpd_settings *s, dpd_error *err) {
    defaults(s);
    const char *path = dpd_settings_path();
    if (!dpd_exists(path)) return DPD_OK;
    json_t *j = dpd_json_load(path, "a settings file", err);
    if (!j || !json_is_object(j)) {
        if (j) dpd_fail(err, DPD_E_FORMAT, "%s: expected a JSON object (fix or delete the file)", path);
        else if (err) {
            size_t k = strlen(err->msg);
            snprintf(err->msg + k, sizeof err->msg - k, " (fix or delete the file)");
            err->status = DPD_E_FORMAT;
        }
        json_decref(j);
        return DPD_E_FORMAT;
    }
    const char *key;
    json_t *v;
    dpd_status st = DPD_OK;
    json_object_foreach(j, key, v) {
        if (!json_is_string(v)) {
            st = dpd_fail(err, DPD_E_FORMAT, "%s: setting '%s' must be a string", path, key);
            break;
        }
        if ((st = dpd_settings_set(s, key, json_string_value(v), err))) {
            dpd_error_prefix(err, path);
            break;
        }
    }
    /* the stored reason survives the provider key's clearing rule */
    json_t *r = json_object_get(j, "reason");
    if (!st && json_is_string(r)) snprintf(s->reason, sizeof s->reason, "%s", json_string_value(r));
    json_decref(j);
    return st;
}

DPD_API dpd_status dpd_settings_save(const dpd_settings *s, dpd_error *err) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", dpd_settings_path());
    *strrchr(dir, '/') = 0;
    dpd_status st = dpd_mkdirs(dir, err);
    if (st) return st;
    json_t *j = json_pack("{s:s, s:s, s:s, s:s}", "provider", s->provider, "cpu_level", s->cpu_level, "gpu_memory",
                          s->gpu_memory, "reason", s->reason);
    char *text = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(j);
    if (!text) return dpd_fail(err, DPD_E_NOMEM, "settings: cannot encode");
    st = dpd_file_write(dpd_settings_path(), text, strlen(text), err);
    free(text);
    return st;
}

void dpd_settings_fall_back(const char *fmt, ...) {
    dpd_settings st;
    dpd_error e;
    if (dpd_settings_load(&st, &e)) return;
    strcpy(st.provider, "cpu");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(st.reason, sizeof st.reason, fmt, ap);
    va_end(ap);
    if (dpd_settings_save(&st, &e)) return; /* best effort: the file stays as it was */
}

int dpd_settings_batch_bound(const char *level, unsigned long long memory, size_t per_seq) {
    static const double frac[4] = {0.25, 0.5, 0.75, 0.9};
    double f = 0.5;
    for (int i = 0; MEMORY[i]; i++)
        if (!strcmp(level, MEMORY[i])) f = frac[i];
    if (!memory || !per_seq) return 0;
    double b = (double)memory * f / (double)per_seq;
    return b > 1 << 20 ? 1 << 20 : b < 1 ? 1 : (int)b;
}
