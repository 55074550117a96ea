/* provider (registry): see provider.h and docs/providers.md. */
#include "provider.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "file.h"
#include "settings.h"
#include "status.h"

const char *dpd_packs_dir(void) {
    static char path[4096];
    dpd_xdg_path("XDG_DATA_HOME", ".local/share", "dpd/packs", path, sizeof path);
    return path;
}

void dpd_pack_active(const char *provider, char *dir, size_t n) {
    char link[4200], target[1024];
    snprintf(link, sizeof link, "%s/active-%s", dpd_packs_dir(), provider);
    ssize_t k = readlink(link, target, sizeof target - 1);
    if (k <= 0) {
        dir[0] = 0;
        return;
    }
    target[k] = 0;
    snprintf(dir, n, "%s/%s", dpd_packs_dir(), target);
}

static char loaded_from[4096]; /* the active pack when this process loaded its provider */

dpd_status dpd_provider_load(const char *pack_dir, const dpd_provider **out, char *why, size_t nwhy, dpd_error *err) {
    char path[4200], lib[4400];
    snprintf(path, sizeof path, "%s/pack.json", pack_dir);
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    const char *rel = json_string_value(json_object_get(j, "library"));
    if (!rel || strstr(rel, "..") || rel[0] == '/') {
        json_decref(j);
        return dpd_fail(err, DPD_E_FORMAT, "%s: no valid 'library' entry", path);
    }
    snprintf(lib, sizeof lib, "%s/%s", pack_dir, rel);
    json_decref(j);
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) return dpd_fail(err, DPD_E_UNSUPPORTED, "%s: cannot load: %s", lib, dlerror());
    dpd_provider_score_fn score = (dpd_provider_score_fn)dlsym(h, DPD_PROVIDER_SCORE);
    dpd_provider_init_fn init = (dpd_provider_init_fn)dlsym(h, DPD_PROVIDER_INIT);
    if (!init) return dpd_fail(err, DPD_E_FORMAT, "%s: does not export %s", lib, DPD_PROVIDER_INIT);
    if (score && !score(why, nwhy))
        return dpd_fail(err, DPD_E_DEVICE, "%s: not usable on this machine: %s", lib, why);
    static dpd_provider loaded[8];
    static int nloaded;
    if (nloaded == 8) return dpd_fail(err, DPD_E_UNSUPPORTED, "too many providers loaded");
    char msg[512] = "";
    dpd_status s = init(DPD_PROVIDER_API, &loaded[nloaded], msg, sizeof msg);
    if (s) return dpd_fail(err, s, "%s: %s", lib, msg);
    if (!loaded[nloaded].i || loaded[nloaded].i->api_version != DPD_PROVIDER_API)
        return dpd_fail(err, DPD_E_UNSUPPORTED, "%s: provider ABI version %u, dpd needs %d", lib,
                        loaded[nloaded].i ? loaded[nloaded].i->api_version : 0, DPD_PROVIDER_API);
    *out = &loaded[nloaded++];
    return DPD_OK;
}

/* 1 when another process holds the validation lock. */
static int validating(void) {
    char lock[4200];
    snprintf(lock, sizeof lock, "%s/.validate.lock", dpd_packs_dir());
    int fd = open(lock, O_RDONLY);
    if (fd < 0) return 0;
    int busy = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    close(fd);
    return busy;
}

dpd_status dpd_provider_select(const char *want, const dpd_provider **out, char *reason, size_t nreason,
                               dpd_error *err) {
    dpd_settings st;
    dpd_status s = dpd_settings_load(&st, err);
    if (s) return s;
    if (!want || !want[0]) want = st.provider;
    *out = dpd_provider_cpu();
    snprintf(reason, nreason, "cpu%s%s", st.reason[0] ? ": " : " requested", st.reason);
    if (!strcmp(want, "cpu")) return DPD_OK;
    if (strcmp(want, "cuda") && strcmp(want, "auto"))
        return dpd_fail(err, DPD_E_INVAL, "--provider must be auto, cpu or cuda (got '%s')", want);
    int strict = !strcmp(want, "cuda");
    if (validating()) {
        if (strict) return dpd_fail(err, DPD_E_UNSUPPORTED, "cuda: validation in progress, try again");
        snprintf(reason, nreason, "cpu: a cuda pack is being validated");
        return DPD_OK;
    }
    char dir[4096], why[512] = "";
    dpd_pack_active("cuda", dir, sizeof dir);
    if (!dir[0]) {
        if (strict)
            return dpd_fail(err, DPD_E_UNSUPPORTED,
                            "no cuda pack is installed: build one with 'make pack-cuda' and install it with "
                            "'dpd pack install dist/dpd-pack-cuda-%s-linux-x86_64.tar.gz'",
                            DPD_VERSION);
        snprintf(reason, nreason, "cpu: no cuda pack installed%s%s", st.reason[0] ? "; " : "", st.reason);
        return DPD_OK;
    }
    if (!strict && !strcmp(st.provider, "cpu") && st.reason[0]) {
        snprintf(reason, nreason, "cpu: %s", st.reason);
        return DPD_OK;
    }
    const dpd_provider *p;
    dpd_error e = {0};
    if (dpd_provider_load(dir, &p, why, sizeof why, &e)) {
        if (strict) return dpd_fail(err, e.status, "%s", e.msg);
        snprintf(reason, nreason, "cpu: %s", e.msg);
        return DPD_OK;
    }
    snprintf(loaded_from, sizeof loaded_from, "%s", dir);
    *out = p;
    snprintf(reason, nreason, "cuda from %s", dir);
    return DPD_OK;
}

dpd_status dpd_provider_demote(const char *want, const dpd_provider **p, const char *why, char *reason,
                               size_t nreason, dpd_error *err) {
    if (want && !strcmp(want, (*p)->i->name))
        return dpd_fail(err, DPD_E_UNSUPPORTED, "%s: %s (use --provider cpu)", (*p)->i->name, why);
    snprintf(reason, nreason, "cpu: %s on %s", why, (*p)->i->name);
    *p = dpd_provider_cpu();
    return DPD_OK;
}

int dpd_provider_restart_needed(char *why, size_t nwhy) {
    char dir[4096];
    if (!loaded_from[0]) return 0;
    dpd_pack_active("cuda", dir, sizeof dir);
    if (!strcmp(dir, loaded_from)) return 0;
    snprintf(why, nwhy, "the active cuda pack changed (%s -> %s): restart to use the new backend", loaded_from,
             dir[0] ? dir : "none");
    return 1;
}
