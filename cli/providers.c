/* providers: `dpd providers [--json]` (providers, devices, packs, the active choice and why, the
 * CPU worker count, batch bounds) and `dpd config show|set KEY VALUE`. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

#define MAXPROV 16

static json_t *devices_json(const dpd_provider_info *p) {
    json_t *a = json_array();
    for (int d = 0; a && d < p->ndevices && d < 8; d++) {
        const dpd_device_info *i = &p->device[d];
        if (json_array_append_new(a, json_pack("{s:s, s:I, s:s, s:i, s:i}", "name", i->name, "memory",
                                               (json_int_t)i->memory, "arch", i->arch, "driver", i->driver, "runtime",
                                               i->runtime))) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

static void devices_text(const dpd_provider_info *p) {
    for (int d = 0; d < p->ndevices && d < 8; d++) {
        const dpd_device_info *i = &p->device[d];
        if (!i->memory)
            printf("    device %d: %s, %s, system memory\n", d, i->name, i->arch);
        else
            printf("    device %d: %s, %s, %.1f GiB, driver %d, runtime %d\n", d, i->name, i->arch,
                   (double)i->memory / (1 << 30), i->driver, i->runtime);
    }
}

int cmd_providers(int argc, char **argv) {
    static const char *const usage =
        "usage: dpd providers [--json]\n\nThe execution providers (cpu, and each installed pack's), their devices, the\n"
        "settings, the provider a session would get now and why, and the batch bound of a device\n"
        "provider at the gpu_memory setting for the reference model (GRU-23, frame 200).\n";
    if (argc == 1 && cli_is_help(argv[0])) {
        fputs(usage, stdout);
        return 0;
    }
    int json = argc == 1 && !strcmp(argv[0], "--json");
    if (argc && !json) {
        fputs(usage, stderr);
        return 2;
    }
    dpd_settings st;
    dpd_error err = {0};
    if (dpd_settings_load(&st, &err)) return cli_fail(&err);
    static dpd_provider_info p[MAXPROV];
    int np = dpd_provider_list(p, MAXPROV);
    if (np > MAXPROV) np = MAXPROV;
    char active[64] = "cpu", reason[1024];
    if (dpd_provider_choose(NULL, active, sizeof active, reason, sizeof reason, &err))
        snprintf(reason, sizeof reason, "%s", err.msg);
    int workers = dpd_cpu_level_threads(st.cpu_level);
    /* the batch bound of each device provider's first device, for the reference model */
    dpd_model_cfg ref = {.family = "gru", .hidden = 23, .layers = 1};
    int bound[MAXPROV] = {0};
    for (int i = 0; i < np; i++) {
        if (strcmp(p[i].name, "cpu") && p[i].ndevices > 0)
            bound[i] = dpd_batch_bound(st.gpu_memory, p[i].device[0].memory, &ref, 200);
    }
    if (json) {
        json_t *list = json_array(), *bounds = json_object();
        for (int i = 0; list && i < np; i++) {
            json_t *e = json_pack("{s:s, s:s, s:o?, s:b, s:i, s:s}", "name", p[i].name, "pack", p[i].pack, "devices",
                                  devices_json(&p[i]), "usable", p[i].usable, "score", p[i].score, "why", p[i].why);
            if (json_array_append_new(list, e)) {
                json_decref(list);
                list = NULL;
            }
        }
        for (int i = 0; bounds && i < np; i++)
            json_object_set_new(bounds, p[i].name,
                                strcmp(p[i].name, "cpu") && p[i].ndevices > 0
                                    ? json_pack("{s:s, s:i, s:i}", "model", "gru-23", "frame", 200, "batch", bound[i])
                                    : json_null());
        json_t *j = json_pack("{s:{s:s, s:s, s:s, s:s}, s:o?, s:s, s:s, s:i, s:s, s:s, s:o?}", "settings", "provider",
                              st.provider, "cpu_level", st.cpu_level, "gpu_memory", st.gpu_memory, "reason", st.reason,
                              "providers", list, "active", active, "reason", reason, "workers", workers, "packs_dir",
                              dpd_packs_dir(), "settings_path", dpd_settings_path(), "batch_bounds", bounds);
        return cli_json_print(j);
    }
    printf("settings (%s): provider %s, cpu_level %s, gpu_memory %s\n", dpd_settings_path(), st.provider, st.cpu_level,
           st.gpu_memory);
    if (st.reason[0]) printf("  the provider preference fell back to cpu: %s\n", st.reason);
    for (int i = 0; i < np; i++) {
        if (!strcmp(p[i].name, "cpu"))
            printf("  cpu: built in, %d workers at cpu_level %s, batches unbounded\n", workers, st.cpu_level);
        else
            printf("  %s: %s%s%s\n", p[i].name, p[i].pack, p[i].usable ? "" : ", not usable: ", p[i].usable ? "" : p[i].why);
        devices_text(&p[i]);
        if (bound[i])
            printf("    batch bound at gpu_memory %s: %d sequences of GRU-23 x 200\n", st.gpu_memory, bound[i]);
    }
    for (const char *const *k = dpd_pack_providers(); *k; k++) { /* the ones dpd has, not installed */
        int listed = 0;
        for (int i = 0; i < np; i++) listed |= !strcmp(p[i].name, *k);
        if (!listed) printf("  %s: no pack installed (make pack-%s; dpd pack install FILE)\n", *k, *k);
    }
    printf("active: %s (%s)\n", active, reason);
    printf("packs: %s\n", dpd_packs_dir());
    return 0;
}

/* The value of setting key (one dpd_settings_set accepted) in st. */
static const char *setting(const dpd_settings *st, const char *key) {
    return !strcmp(key, "provider") ? st->provider : !strcmp(key, "cpu_level") ? st->cpu_level : st->gpu_memory;
}

/* `dpd config set KEY VALUE`: validates, saves when something changes, and says what changed
 * ("cpu_level: max -> balanced (in PATH)", and a recorded fallback it clears) or that nothing did. */
static int config_set(const char *key, const char *value) {
    dpd_settings st, was;
    dpd_error err = {0};
    if (!strcmp(key, "reason")) { /* recorded by dpd when the preference falls back, not set by hand */
        fprintf(stderr, "dpd: 'reason' is recorded by dpd, not set (settings: provider, cpu_level, gpu_memory)\n");
        return 2;
    }
    if (dpd_settings_load(&st, &err)) return cli_fail(&err);
    was = st;
    if (dpd_settings_set(&st, key, value, &err)) {
        fprintf(stderr, "dpd: %s\n", err.msg);
        return 2;
    }
    /* a pack's name may be set before its pack is installed (the warning below), but only the
     * providers dpd has: a typo would otherwise be saved and stop every later command */
    char pack[4096] = "";
    int pending = !strcmp(key, "provider") && strcmp(value, "auto") && strcmp(value, "cpu") &&
                  (dpd_pack_active(value, pack, sizeof pack), !pack[0]);
    const char *const *known = dpd_pack_providers();
    int shipped = 0;
    char names[256] = "";
    for (size_t i = 0, at = 0; known[i]; i++) {
        shipped |= !strcmp(value, known[i]);
        at += (size_t)snprintf(names + at, at < sizeof names ? sizeof names - at : 0, "%s, ", known[i]);
    }
    if (pending && !shipped) {
        fprintf(stderr, "dpd: provider '%s': no such provider and no pack of that name is installed (auto, cpu, "
                "%san installed pack's provider; dpd pack list shows the installed packs)\n", value, names);
        return 2;
    }
    const char *path = dpd_settings_path(), *old = setting(&was, key), *now = setting(&st, key);
    /* cleared: an explicit provider replaces the fallback to cpu that dpd recorded */
    int changed = strcmp(old, now) != 0, cleared = strcmp(was.reason, st.reason) != 0;
    if (!changed && !cleared) {
        printf("%s is already %s (in %s); nothing changed\n", key, now, path);
        return 0;
    }
    if (dpd_settings_save(&st, &err)) return cli_fail(&err);
    if (changed) printf("%s: %s -> %s (in %s)\n", key, old, now, path);
    else printf("%s stays %s (in %s)\n", key, now, path);
    if (cleared) printf("the fallback to cpu is no longer recorded (it was: %s)\n", was.reason);
    if (pending)
        fprintf(stderr, "dpd: warning: no %s pack is installed: until one is, every command that computes "
                "refuses to start ('dpd config set provider auto' falls back to cpu instead)\n", value);
    return 0;
}

int cmd_config(int argc, char **argv) {
    static const char *const usage =
        "usage: dpd config show | dpd config set KEY VALUE\n\nSettings ($XDG_CONFIG_HOME/dpd/config.json):\n"
        "  provider    auto, cpu, cuda, opencl (before or after its pack is installed) or another installed pack's\n"
        "  cpu_level   low, balanced, high or max: 25/50/75/100 % of the logical processors\n"
        "  gpu_memory  low, medium, high or max: 25/50/75/90 % of a device's memory for batches\n";
    if (argc >= 1 && (cli_is_help(argv[0]) || cli_is_help(argv[argc - 1]))) {
        fputs(usage, stdout);
        return 0;
    }
    dpd_settings st;
    dpd_error err = {0};
    if (argc == 1 && !strcmp(argv[0], "show")) {
        if (dpd_settings_load(&st, &err)) return cli_fail(&err);
        printf("provider %s\ncpu_level %s\ngpu_memory %s\n", st.provider, st.cpu_level, st.gpu_memory);
        if (st.reason[0]) printf("reason %s\n", st.reason);
        printf("# %s\n", dpd_settings_path());
        return 0;
    }
    if (argc == 3 && !strcmp(argv[0], "set")) return config_set(argv[1], argv[2]);
    fputs(usage, stderr);
    return 2;
}
