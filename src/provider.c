/* provider (registry): see provider.h and docs/providers.md. */
#include "provider.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"
#include "json.h"
#include "settings.h"
#include "status.h"


DPD_API const char *dpd_packs_dir(void) {
    static _Thread_local char path[4096]; /* per thread: the environment may differ between calls */
    dpd_xdg_path("XDG_DATA_HOME", ".local/share", "dpd/packs", path, sizeof path);
    return path;
}

/* The active link's target is a pack only when it is a plain name (no '/', not starting with
 * '.') naming a directory that resolves, every link followed, to an entry of the packs directory
 * itself: a link made by hand or by an older dpd that leads elsewhere is not followed. */
DPD_API const char *const *dpd_pack_providers(void) {
    static const char *const names[] = {"cuda", "opencl", NULL};
    return names;
}

DPD_API void dpd_pack_active(const char *provider, char *dir, size_t n) {
    char link[4200], target[4096], path[4400], real[PATH_MAX], packs_real[PATH_MAX];
    const char *packs = dpd_packs_dir();
    if (n) dir[0] = 0;
    if (!provider || !dpd_provider_name_ok(provider)) return;
    snprintf(link, sizeof link, "%s/active-%s", packs, provider);
    ssize_t k = readlink(link, target, sizeof target - 1);
    if (k <= 0) return;
    target[k] = 0;
    if (target[0] == '.' || strchr(target, '/')) return;
    snprintf(path, sizeof path, "%s/%s", packs, target);
    if (!realpath(path, real) || !realpath(packs, packs_real)) return;
    char *slash = strrchr(real, '/');
    if (!slash || slash == real) return;
    *slash = 0;
    if (strcmp(real, packs_real) || slash[1] == '.') return;
    snprintf(dir, n, "%s", path);
}

int dpd_pid_alive(long pid) {
    if (pid <= 0) return 0;
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "re");
    if (!f) return access("/proc/self/stat", R_OK) ? kill((pid_t)pid, 0) == 0 || errno == EPERM : 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* "pid (comm) S ...": comm may hold anything */
    return !(p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'));
}

long dpd_lock_holder(int fd) {
    char buf[32];
    ssize_t k = pread(fd, buf, sizeof buf - 1, 0);
    if (k <= 0) return 0;
    buf[k] = 0;
    char *end;
    long pid = strtol(buf, &end, 10);
    return end != buf && (*end == '\n' || !*end) && pid > 0 ? pid : 0;
}

int dpd_provider_name_ok(const char *name) {
    size_t n = 0;
    for (; name[n]; n++)
        if (!((name[n] >= 'a' && name[n] <= 'z') || (name[n] >= '0' && name[n] <= '9') || name[n] == '_')) return 0;
    return n >= 1 && n <= 31;
}

/* ---- the cache: one entry per pack directory, for the life of the process ---------------- */

typedef struct entry {
    struct entry *next;
    char dir[4096];
    dpd_status status;    /* the load's outcome; the fields below hold for DPD_OK */
    char msg[1024];       /* why the load failed */
    char why[512];        /* the score's reason when it is 0 */
    int score;
    int pinned;           /* 1: the pack this process uses for provider p.i->name */
    void *lib;            /* the dlopen handle, never closed */
    dpd_provider p;
    dpd_provider_i table; /* a v1 provider's table widened to the full size, v2 slots NULL */
} entry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static entry *cache;

/* The ABI handshake: version 2, then 1. A refusal that leaves a table in *out names the version
 * it serves; so does a table of another version returned with DPD_OK. */
static dpd_status handshake(entry *e, dpd_provider_init_fn init, const char *lib) {
    const uint32_t versions[2] = {DPD_PROVIDER_API, 1};
    uint32_t other = 0;
    char said[512] = "";
    for (int k = 0; k < 2; k++) {
        dpd_provider p = {0};
        char msg[512] = "";
        dpd_status s = init(versions[k], &p, msg, sizeof msg);
        uint32_t v = p.i ? p.i->api_version : 0;
        if (!s && (v == DPD_PROVIDER_API || v == 1)) {
            e->p = p;
            if (v == 1) { /* callers see a full table whose v2 slots are NULL */
                memcpy(&e->table, p.i, DPD_PROVIDER_V1_SIZE);
                e->p.i = &e->table;
            }
            return DPD_OK;
        }
        if (v) other = v;
        if (msg[0]) snprintf(said, sizeof said, "%s", msg);
    }
    if (other)
        snprintf(e->msg, sizeof e->msg, "%s: provider ABI version %u, dpd needs %d (or 1)", lib, other,
                 DPD_PROVIDER_API);
    else
        snprintf(e->msg, sizeof e->msg, "%s: the provider serves neither ABI version %d nor 1, dpd needs %d (or 1)%s%s",
                 lib, DPD_PROVIDER_API, DPD_PROVIDER_API, said[0] ? ": " : "", said);
    return DPD_E_UNSUPPORTED;
}

/* The slots every provider must fill; NULL when the table is complete. */
static const char *missing_slot(const dpd_provider_i *i) {
    if (!i->name || !dpd_provider_name_ok(i->name)) return "name";
    if (!i->device_count) return "device_count";
    if (!i->device_info) return "device_info";
    if (!i->supports) return "supports";
    if (!i->session_create && !(i->api_version >= 2 && i->session_open)) return "session_create";
    if (!i->session_free) return "session_free";
    if (!i->upload) return "upload";
    if (!i->download) return "download";
    if (!i->forward) return "forward";
    return NULL;
}

/* dlopen, score, handshake and the table check for e->dir; fills e and returns its status. */
static dpd_status open_pack(entry *e) {
    char path[4200], lib[4400];
    snprintf(path, sizeof path, "%s/pack.json", e->dir);
    dpd_error je = {0};
    json_t *j = dpd_json_load(path, "a pack.json", &je);
    const char *rel = json_string_value(json_object_get(j, "library"));
    if (!rel || strstr(rel, "..") || rel[0] == '/') {
        if (j) snprintf(e->msg, sizeof e->msg, "%s: no valid 'library' entry", path);
        else snprintf(e->msg, sizeof e->msg, "%s", je.msg);
        json_decref(j);
        return DPD_E_FORMAT;
    }
    snprintf(lib, sizeof lib, "%s/%s", e->dir, rel);
    json_decref(j);
    e->lib = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!e->lib) return snprintf(e->msg, sizeof e->msg, "%s: cannot load: %s", lib, dlerror()), DPD_E_UNSUPPORTED;
    dpd_provider_score_fn score = (dpd_provider_score_fn)dlsym(e->lib, DPD_PROVIDER_SCORE);
    dpd_provider_init_fn init = (dpd_provider_init_fn)dlsym(e->lib, DPD_PROVIDER_INIT);
    if (!init) return snprintf(e->msg, sizeof e->msg, "%s: does not export %s", lib, DPD_PROVIDER_INIT), DPD_E_FORMAT;
    e->score = score ? score(e->why, sizeof e->why) : DPD_CPU_RANK; /* no score: usable, ranked as cpu */
    if (e->score <= 0) {
        e->score = 0;
        snprintf(e->msg, sizeof e->msg, "%s: not usable on this machine: %s", lib, e->why);
        return DPD_E_DEVICE;
    }
    dpd_status s = handshake(e, init, lib);
    if (s) return s;
    const char *slot = missing_slot(e->p.i);
    if (slot) {
        snprintf(e->msg, sizeof e->msg, "%s: the provider table has no valid '%s' (ABI version %u)", lib, slot,
                 e->p.i->api_version);
        e->p.i = NULL;
        return DPD_E_FORMAT;
    }
    return DPD_OK;
}

/* The cache entry of pack directory dir, loading it the first time; NULL when out of memory.
 * Called with the lock held. */
static entry *load_locked(const char *dir) {
    for (entry *e = cache; e; e = e->next)
        if (!strcmp(e->dir, dir)) return e;
    entry *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    snprintf(e->dir, sizeof e->dir, "%s", dir);
    e->status = open_pack(e);
    e->next = cache, cache = e;
    return e;
}

dpd_status dpd_provider_load(const char *pack_dir, const char *expect, const dpd_provider **out, int *score,
                             char *why, size_t nwhy, dpd_error *err) {
    pthread_mutex_lock(&lock);
    entry *e = load_locked(pack_dir);
    pthread_mutex_unlock(&lock);
    if (!e) return dpd_fail(err, DPD_E_NOMEM, "out of memory loading the pack %s", pack_dir);
    if (why && nwhy) snprintf(why, nwhy, "%s", e->why);
    if (score) *score = e->score;
    if (e->status) return dpd_fail(err, e->status, "%s", e->msg);
    if (expect && expect[0] && strcmp(e->p.i->name, expect))
        return dpd_fail(err, DPD_E_FORMAT, "%s: the library calls itself provider '%s', not '%s'", pack_dir,
                        e->p.i->name, expect);
    *out = &e->p;
    return DPD_OK;
}

/* What to do when provider name has no active pack. */
static dpd_status no_pack(const char *name, dpd_error *err) {
    if (!strcmp(name, "cuda"))
        return dpd_fail(err, DPD_E_UNSUPPORTED,
                        "no cuda pack is installed: build one with 'make pack-cuda' and install it with "
                        "'dpd pack install dist/dpd-pack-cuda-%s-linux-x86_64.tar.gz'",
                        DPD_VERSION);
    return dpd_fail(err, DPD_E_UNSUPPORTED,
                    "no %s pack is installed: install its runtime pack with 'dpd pack install "
                    "dpd-pack-%s-VERSION-linux-x86_64.tar.gz' (dpd pack list shows the installed packs)",
                    name, name);
}

/* The provider serving name: the pack this process first loaded it from, else its active pack
 * (loaded, and kept for the name on success). *e (may be NULL) receives the cache entry, also
 * on a failed load. Fails when no pack is active for name. */
static dpd_status resolve(const char *name, const dpd_provider **out, entry **pe, dpd_error *err) {
    char dir[4096];
    if (pe) *pe = NULL;
    dpd_pack_active(name, dir, sizeof dir);
    if (!dir[0]) return no_pack(name, err);
    pthread_mutex_lock(&lock);
    entry *e = NULL;
    for (entry *c = cache; c && !e; c = c->next)
        if (c->pinned && !strcmp(c->p.i->name, name)) e = c;
    if (!e) e = load_locked(dir);
    dpd_status s = DPD_OK;
    if (!e) s = dpd_fail(err, DPD_E_NOMEM, "out of memory loading the pack %s", dir);
    else if (e->status) s = dpd_fail(err, e->status, "%s", e->msg);
    else if (strcmp(e->p.i->name, name))
        s = dpd_fail(err, DPD_E_FORMAT, "%s: the library calls itself provider '%s', but its active link is "
                     "active-%s: reinstall the pack", e->dir, e->p.i->name, name);
    else e->pinned = 1, *out = &e->p;
    pthread_mutex_unlock(&lock);
    if (pe) *pe = e;
    return s;
}

/* 1 when another process holds the validation lock, and its recorded holder (when the lock
 * names one) is alive: a lock kept only by an orphan of a dead holder is stale. */
static int validating(void) {
    char lock_path[4200];
    snprintf(lock_path, sizeof lock_path, "%s/.validate.lock", dpd_packs_dir());
    int fd = open(lock_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    int busy = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    if (busy) {
        long holder = dpd_lock_holder(fd);
        busy = !holder || dpd_pid_alive(holder);
    }
    close(fd);
    return busy;
}

static int by_name(const void *a, const void *b) { return strcmp(a, b); }

/* The provider names with an active link in the packs directory, sorted; the count, or -1 when
 * out of memory. *names is malloc'd (32 bytes a name), NULL when there are none. */
static int active_names(char (**names)[32]) {
    *names = NULL;
    DIR *d = opendir(dpd_packs_dir());
    if (!d) return 0;
    int n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *name = de->d_name + 7;
        if (strncmp(de->d_name, "active-", 7) || !dpd_provider_name_ok(name)) continue; /* also skips .tmp links */
        if (n == cap) {
            cap = cap ? 2 * cap : 8;
            char(*grown)[32] = realloc(*names, (size_t)cap * sizeof **names);
            if (!grown) {
                free(*names), *names = NULL;
                closedir(d);
                return -1;
            }
            *names = grown;
        }
        snprintf((*names)[n++], 32, "%s", name);
    }
    closedir(d);
    if (n) qsort(*names, (size_t)n, sizeof **names, by_name);
    return n;
}

/* Appends "; text" (or text) to buf. */
static void append(char *buf, size_t n, const char *text) {
    size_t L = strlen(buf);
    if (L + 1 < n) snprintf(buf + L, n - L, "%s%s", L ? "; " : "", text);
}

dpd_status dpd_provider_select(const char *want, const dpd_provider **out, char *reason, size_t nreason,
                               dpd_error *err) {
    dpd_settings st;
    *out = dpd_provider_cpu();
    snprintf(reason, nreason, "cpu");
    dpd_status s = dpd_settings_load(&st, err);
    if (s) return s;
    if (!want || !want[0]) want = st.provider;
    snprintf(reason, nreason, "cpu%s%s", st.reason[0] ? ": " : " requested", st.reason);
    if (!strcmp(want, "cpu")) return DPD_OK;
    if (!dpd_provider_name_ok(want))
        return dpd_fail(err, DPD_E_INVAL, "provider must be auto, cpu or an installed pack's name such as cuda "
                        "([a-z0-9_], at most 31 characters) (got '%s')", want);
    int strict = strcmp(want, "auto") != 0;
    if (validating()) {
        if (strict) return dpd_fail(err, DPD_E_UNSUPPORTED, "%s: validation in progress, try again", want);
        snprintf(reason, nreason, "cpu: a runtime pack is being validated");
        return DPD_OK;
    }
    const dpd_provider *p;
    entry *e;
    if (strict) {
        if ((s = resolve(want, &p, &e, err))) return s;
        *out = p;
        snprintf(reason, nreason, "%s from %s", want, e->dir);
        return DPD_OK;
    }
    if (!strcmp(st.provider, "cpu") && st.reason[0]) { /* fallback cases 4 and 5 hold until reset */
        snprintf(reason, nreason, "cpu: %s", st.reason);
        return DPD_OK;
    }
    char(*names)[32];
    int n = active_names(&names);
    if (n < 0) return dpd_fail(err, DPD_E_NOMEM, "out of memory listing %s", dpd_packs_dir());
    char why[1024] = "";
    const entry *best = NULL;
    for (int k = 0; k < n; k++) {
        dpd_error e2 = {0};
        if (resolve(names[k], &p, &e, &e2)) append(why, sizeof why, e2.msg);
        else if (!best || e->score > best->score) best = e; /* names are sorted: ties go to the first */
    }
    free(names);
    if (best && best->score < DPD_CPU_RANK) { /* usable, but ranked below the built-in cpu (PoCL) */
        char below[600];
        snprintf(below, sizeof below, "%s ranks below cpu (%d < %d%s%s)", best->p.i->name, best->score, DPD_CPU_RANK,
                 best->why[0] ? ": " : "", best->why);
        append(why, sizeof why, below);
        best = NULL;
    }
    if (best) { /* before cpu at equal score */
        *out = &best->p;
        snprintf(reason, nreason, "%s from %s", best->p.i->name, best->dir);
        return DPD_OK;
    }
    if (!n) append(why, sizeof why, "no runtime pack installed");
    if (st.reason[0]) append(why, sizeof why, st.reason);
    snprintf(reason, nreason, "cpu: %s", why);
    return DPD_OK;
}

dpd_status dpd_provider_demote(const char *want, const dpd_provider **p, const char *why, char *reason,
                               size_t nreason, dpd_error *err) {
    if (want && !strcmp(want, (*p)->i->name))
        return dpd_fail_field(err, "provider", DPD_E_UNSUPPORTED, "provider: %s: %s (use provider cpu)", (*p)->i->name, why);
    snprintf(reason, nreason, "cpu: %s on %s", why, (*p)->i->name);
    *p = dpd_provider_cpu();
    return DPD_OK;
}

DPD_API dpd_status dpd_provider_choose(const char *want, char *name, size_t nname, char *reason, size_t nreason,
                                       dpd_error *err) {
    const dpd_provider *p;
    char why[1024];
    dpd_status s = dpd_provider_select(want, &p, why, sizeof why, err);
    if (reason && nreason) snprintf(reason, nreason, "%s", why);
    if (name && nname) snprintf(name, nname, "%s", s ? "" : p->i->name);
    return s;
}

/* cpu and the provider of each active link: usable first, by score (a pack before cpu at equal
 * score), then by name. */
static int rank(const void *a, const void *b) {
    const dpd_provider_info *x = a, *y = b;
    if (x->usable != y->usable) return y->usable - x->usable;
    if (x->score != y->score) return y->score > x->score ? 1 : -1;
    if (!x->pack[0] != !y->pack[0]) return !x->pack[0] - !y->pack[0];
    return strcmp(x->name, y->name);
}

static void info_of(const dpd_provider *p, dpd_provider_info *o) {
    int n = p->i->device_count(p->ctx);
    for (int d = 0; d < n && o->ndevices < (int)(sizeof o->device / sizeof *o->device); d++)
        if (!p->i->device_info(p->ctx, d, &o->device[o->ndevices])) o->ndevices++;
}

DPD_API int dpd_provider_list(dpd_provider_info *out, int max) {
    char(*names)[32];
    int n = active_names(&names);
    if (n < 0) n = 0;
    dpd_provider_info *all = calloc((size_t)n + 1, sizeof *all);
    if (!all) {
        free(names);
        return 0;
    }
    snprintf(all[0].name, sizeof all[0].name, "cpu");
    all[0].usable = 1, all[0].score = DPD_CPU_RANK;
    info_of(dpd_provider_cpu(), &all[0]);
    for (int k = 0; k < n; k++) {
        dpd_provider_info *o = &all[k + 1];
        const dpd_provider *p;
        entry *e;
        dpd_error err = {0};
        snprintf(o->name, sizeof o->name, "%s", names[k]);
        dpd_status s = resolve(names[k], &p, &e, &err);
        if (e) snprintf(o->pack, sizeof o->pack, "%s", e->dir);
        else dpd_pack_active(names[k], o->pack, sizeof o->pack);
        o->score = e ? e->score : 0;
        if (s) snprintf(o->why, sizeof o->why, "%s", err.msg);
        else o->usable = 1, info_of(p, o);
    }
    free(names);
    qsort(all, (size_t)n + 1, sizeof *all, rank);
    int filled = n + 1 < max ? n + 1 : max > 0 ? max : 0;
    if (filled) memcpy(out, all, (size_t)filled * sizeof *all);
    free(all);
    return filled;
}

DPD_API int dpd_provider_restart_needed(char *why, size_t nwhy) {
    int changed = 0;
    pthread_mutex_lock(&lock);
    for (entry *e = cache; e && !changed; e = e->next) {
        if (!e->pinned) continue;
        char dir[4096];
        dpd_pack_active(e->p.i->name, dir, sizeof dir);
        if (strcmp(dir, e->dir)) {
            if (why && nwhy)
                snprintf(why, nwhy, "the active %s pack changed (%s -> %s): restart to use the new backend",
                         e->p.i->name, e->dir, dir[0] ? dir : "none");
            changed = 1;
        }
    }
    pthread_mutex_unlock(&lock);
    return changed;
}

/* Device bytes one sequence of T samples needs: activations, input and output (T (5H + 16)
 * floats) plus the parameters. */
static size_t seq_bytes(const dpd_model_cfg *cfg, int T) {
    return (size_t)T * ((size_t)cfg->hidden * 5 + 16) * sizeof(float) + dpd_model_count(cfg) * sizeof(float);
}

DPD_API int dpd_batch_bound(const char *gpu_memory, uint64_t memory, const dpd_model_cfg *cfg, int T) {
    if (!cfg || T < 1) return 0;
    return dpd_settings_batch_bound(gpu_memory ? gpu_memory : "medium", memory, seq_bytes(cfg, T));
}
