/* super: the supervisor — one thread that dispatches queued runs to worker processes, tails their
 * events into the store, enforces cancel grace and wall time, finalises runs when their workers
 * exit, and recovers what a previous server left (studio.h, docs/studio.md). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dpd/dpd.h"
#include "sandbox.h"
#include "studio.h"

#define MAX_SLOTS 64
#define MAX_LINE (64 * 1024)      /* an events.jsonl line longer than this is skipped */
#define MAX_TICK (1024 * 1024)    /* bytes of one run's events ingested per tick */
#define TICK_MS 100

enum { K_NONE, K_CANCEL, K_TIMEOUT, K_SHUTDOWN, K_SESSION, K_QUOTA };

#define NOT_STARTED "not started before the service stopped; retry it to run it"

typedef struct active {
    int used;
    char id[24];
    pid_t pid;
    long long start_ticks;
    double t0;        /* monotonic start */
    double kill_at;   /* monotonic: SIGKILL the group then (0: no deadline) */
    int why;          /* K_*: why the server is stopping it */
    int killed;       /* SIGKILL sent */
    int skipping;     /* inside an over-long line */
    int reaped, ws;   /* the worker has exited (wait status ws) but its outcome is not recorded yet */
    int walled;       /* pid is the init of the worker's namespaces (sandbox_reap): 128 + N is signal N */
    int tries;        /* attempts to record it */
    char run_dir[4096]; /* from the `started` event */
    char space[49];     /* the run's workspace (run_rec.ws) */
} active;

struct super {
    studio_opts o;
    store *st;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stopping;    /* super_stop was called: no more dispatch; the loop ends when no worker is left */
    int woken, queue_dirty;
    active a[MAX_SLOTS];
    void (*tick)(void *);
    void *tick_user;
};

extern char **environ;

double studio_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void studio_iso(double t, char *out, size_t n) {
    time_t sec = (time_t)t;
    struct tm tm;
    gmtime_r(&sec, &tm);
    size_t k = strftime(out, n, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + k, n - k, ".%03dZ", (int)((t - (double)sec) * 1000));
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *f) {
    (void)sb, (void)flag, (void)f;
    return remove(p), 0;
}

void studio_defaults(studio_opts *o) {
    *o = (studio_opts){.host = "127.0.0.1", .port = 8765, .slots = 1, .grace_s = 10, .stale_s = 60, .lease_s = 86400,
                       .max_sessions = 1024, .session_rate = 10, .request_rate = 20, .session_inflight = 16,
                       .session_runs = 8, .session_pending = 2, .body_timeout_s = 10, .ip_inflight = 32,
                       .max_inflight = 256, .ip_sessions = 64, .ip_runs = 96, .max_pending = 128, .quota_mb = 256, .reserve_mb = 256,
                       .max_connections = 1000, .ip_connections = -1, .max_streams = 1000,
                       .download_s = 600};
}

void studio_rmtree(const char *dir) { nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS); }

/* studio_du below the directory dfd (taken over), depth levels down. */
static int du_at(int dfd, long long *bytes, long *left, int depth) {
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    while (rc <= 0 && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        struct stat st;
        if (--*left < 0) rc = 1;
        else if (!fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW)) { /* else: gone meanwhile */
            *bytes += (long long)st.st_blocks * 512;
            int fd = S_ISDIR(st.st_mode) ? openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
            if (fd >= 0 && depth >= 64) close(fd), rc = 1;
            else if (fd >= 0 && du_at(fd, bytes, left, depth + 1) > 0) rc = 1;
        }
    }
    closedir(d);
    return rc > 0;
}

int studio_du(const char *dir, long max_entries, long long *bytes) {
    *bytes = 0;
    long left = max_entries;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    return fd < 0 ? -1 : du_at(fd, bytes, &left, 0);
}

void studio_run_path(const char *root, const char *ws, const char *id, const char *name, char *out, size_t n) {
    int local = !ws || !ws[0];
    snprintf(out, n, "%s/%s%s%sruns/%s%s%s", root, local ? "" : "sessions/", local ? "" : ws, local ? "" : "/", id,
             name ? "/" : "", name ? name : "");
}

/* The length of "dir/" when v starts with it, else 0. */
static size_t under(const char *v, const char *dir) {
    size_t n = strlen(dir);
    return n > 1 && !strncmp(v, dir, n) && v[n] == '/' ? n + 1 : 0;
}

/* The length of the server path at v (a prefix studio_hide_paths takes out), 0 if none starts
 * there: ROOT/sessions/WS/ (WS its 48 hex digits) or ROOT/, else the longest of the --data
 * directories and the runtime packs' directory (a provider's text names its pack's). */
static size_t server_path(const char *v, const studio_opts *o) {
    if (*v != '/') return 0;
    size_t n = under(v, o->root), w = 0;
    if (n) {
        const char *p = v + n;
        if (!strncmp(p, "sessions/", 9)) {
            while (w < 48 && isxdigit((unsigned char)p[9 + w])) w++;
            if (w == 48 && p[9 + w] == '/') return n + 9 + w + 1;
        }
        return n;
    }
    for (int i = 0; i < o->ndata; i++)
        if ((w = under(v, o->data[i])) > n) n = w;
    if ((w = under(v, dpd_packs_dir())) > n) n = w;
    return n;
}

void studio_hide_paths(json_t *j, const studio_opts *o) {
    const char *k;
    json_t *v;
    size_t i;
    if (json_is_object(j)) json_object_foreach(j, k, v) studio_hide_paths(v, o);
    else if (json_is_array(j)) json_array_foreach(j, i, v) studio_hide_paths(v, o);
    if (!json_is_string(j)) return;
    const char *s = json_string_value(j);
    size_t len = json_string_length(j), m = 0, cut = 0;
    for (size_t p = 0; p < len && !cut; p++) cut = s[p] == '/' && server_path(s + p, o);
    if (!cut) return;
    char *out = malloc(len + 1);
    for (size_t p = 0; out && p < len;) {
        size_t skip = s[p] == '/' ? server_path(s + p, o) : 0;
        if (skip) p += skip;
        else out[m++] = s[p++];
    }
    if (out) out[m] = 0;
    json_string_setn_nocheck(j, out ? out : "", out ? m : 0);
    free(out);
}

int studio_open_below(const char *dir, const char *rel) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    char part[256];
    while (fd >= 0 && *rel) {
        size_t n = strcspn(rel, "/");
        if (!n || n >= sizeof part || (n <= 2 && !strncmp(rel, "..", n))) { /* "", ".", "..": none of ours */
            close(fd);
            return -1;
        }
        memcpy(part, rel, n), part[n] = 0;
        rel += n + (rel[n] == '/');
        int next = openat(fd, part, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | (*rel ? O_DIRECTORY : 0));
        close(fd);
        fd = next;
    }
    struct stat sb;
    if (fd >= 0 && (fstat(fd, &sb) || !S_ISREG(sb.st_mode))) {
        close(fd);
        fd = -1;
    }
    return fd;
}

json_t *studio_load_json(const char *dir, const char *rel, size_t flags) {
    int fd = studio_open_below(dir, rel);
    json_t *j = fd >= 0 ? json_loadfd(fd, flags, NULL) : NULL;
    if (fd >= 0) close(fd);
    return j;
}

int studio_write_file(const char *path, const void *p, size_t n) {
    char tmp[4400];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return -1;
    int ok = write(fd, p, n) == (ssize_t)n && !fsync(fd), e = errno;
    ok &= !close(fd);
    if (!ok || rename(tmp, path)) {
        e = ok ? errno : e;
        unlink(tmp);
        errno = e;
        return -1;
    }
    return 0;
}

void studio_cond_init(pthread_cond_t *cv) {
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &ca);
    pthread_condattr_destroy(&ca);
}

void studio_cond_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu, int ms) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    pthread_cond_timedwait(cv, mu, &ts);
}

double studio_mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void log_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void log_line(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "dpd studio: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void run_path(const super *s, const char *ws, const char *id, const char *name, char *out, size_t n) {
    studio_run_path(s->o.root, ws, id, name, out, n);
}

/* Field 22 of /proc/PID/stat: the start time in clock ticks since boot; -1 when gone or dead
 * (a zombie not yet reaped by init is not running). */
static long long start_ticks(pid_t pid) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = 0;
    char *p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
    if (!p) return -1;
    long long v = -1;
    int field = 2;
    char *save;
    for (char *t = strtok_r(p + 1, " ", &save); t; t = strtok_r(NULL, " ", &save))
        if (++field == 3 && (*t == 'Z' || *t == 'X')) {
            return -1;
        } else if (field == 22) {
            v = atoll(t);
            break;
        }
    return v;
}

/* ---- events ---- */

static const char *const worker_types[] = {"started", "progress", "metric", "checkpoint", "warning", "heartbeat", "ended",
                                           "sandbox"};

/* Ingests what the run's events.jsonl holds past the stored offset (at most MAX_TICK bytes).
 * 1 when it advanced (there may be more), 0 otherwise. */
static int ingest(super *s, const char *id, active *a) {
    run_rec r;
    if (store_get(s->st, id, &r)) return 0;
    char path[4400];
    run_path(s, r.ws, id, "events.jsonl", path, sizeof path);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK); /* a FIFO never blocks the supervisor */
    if (fd < 0) return 0;
    char *buf = malloc(MAX_TICK + 1);
    ssize_t n = buf ? pread(fd, buf, MAX_TICK, r.offset) : -1;
    close(fd);
    if (n <= 0) {
        free(buf);
        return 0;
    }
    st_event ev[256];
    char *datas[256];
    int ne = 0, epoch = -1, epochs = -1;
    long steps_done = -1, steps = -1, skipped = 0;
    long long off = r.offset;
    size_t i = 0;
    int skipping = a ? a->skipping : 0;
    while (i < (size_t)n && ne < 256) {
        char *nl = memchr(buf + i, '\n', (size_t)n - i);
        if (!nl) {
            if ((size_t)n - i > MAX_LINE) { /* an over-long line: drop what there is, and its rest */
                off += (long long)((size_t)n - i);
                if (!skipping) skipped++;
                skipping = 1;
            }
            break;
        }
        size_t len = (size_t)(nl - (buf + i));
        char *line = buf + i;
        i += len + 1;
        off += (long long)len + 1;
        if (skipping || len > MAX_LINE) {
            if (!skipping) skipped++;
            skipping = 0;
            continue;
        }
        json_t *j = json_loadb(line, len, JSON_REJECT_DUPLICATES, NULL);
        const char *type = json_string_value(json_object_get(j, "type"));
        json_t *data = json_object_get(j, "data"), *ts = json_object_get(j, "ts");
        int known = 0;
        for (size_t k = 0; type && k < sizeof worker_types / sizeof *worker_types; k++) known |= !strcmp(type, worker_types[k]);
        if (!json_is_object(j) || !known || (data && !json_is_object(data)) || (ts && !json_is_number(ts))) {
            skipped++;
            json_decref(j);
            continue;
        }
        if (!strcmp(type, "progress") || !strcmp(type, "metric")) {
            json_t *e = json_object_get(data, "epoch"), *es = json_object_get(data, "epochs");
            if (json_is_integer(e)) epoch = (int)json_integer_value(e);
            if (json_is_integer(es)) epochs = (int)json_integer_value(es);
            if (!strcmp(type, "progress")) {
                json_t *d = json_object_get(data, "steps_done"), *t = json_object_get(data, "steps");
                if (json_is_integer(d)) steps_done = (long)json_integer_value(d);
                if (json_is_integer(t)) steps = (long)json_integer_value(t);
            }
        }
        if (a && !strcmp(type, "started")) {
            const char *rd = json_string_value(json_object_get(data, "run_dir"));
            if (rd) snprintf(a->run_dir, sizeof a->run_dir, "%s", rd);
        }
        if (s->o.public_mode) studio_hide_paths(data, &s->o); /* a session reads no server path */
        size_t k = 0; /* the type as a static string: j is freed below */
        while (strcmp(type, worker_types[k])) k++;
        json_t *empty = json_object();
        datas[ne] = json_dumps(data ? data : empty, JSON_COMPACT | JSON_SORT_KEYS);
        json_decref(empty);
        ev[ne] = (st_event){.ts = ts ? json_number_value(ts) : studio_now(), .type = worker_types[k], .data = datas[ne]};
        json_decref(j);
        if (datas[ne]) ne++;
    }
    if (a) a->skipping = skipping;
    int advanced = (off != r.offset || ne) &&
                   !store_append(s->st, id, ev, ne, off, epoch, epochs, steps_done, steps, ne ? studio_now() : 0, skipped);
    for (int k = 0; k < ne; k++) free(datas[k]);
    free(buf);
    return advanced;
}

/* Everything left in events.jsonl. */
static void drain(super *s, const char *id, active *a) {
    for (int k = 0; k < 1000 && ingest(s, id, a); k++) {}
}

/* ---- artifacts ---- */

static int sha256_file(const char *path, char hex[65], long long *size) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK); /* a FIFO never blocks the supervisor */
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
        if (fd >= 0) close(fd);
        return -1;
    }
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    unsigned char buf[65536], md[32];
    unsigned int mdn = 0;
    ssize_t n;
    long long total = 0;
    EVP_DigestInit_ex(c, EVP_sha256(), NULL);
    while ((n = read(fd, buf, sizeof buf)) > 0) {
        EVP_DigestUpdate(c, buf, (size_t)n);
        total += n;
    }
    EVP_DigestFinal_ex(c, md, &mdn);
    EVP_MD_CTX_free(c);
    close(fd);
    if (n < 0) return -1;
    for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", md[i]);
    *size = total;
    return 0;
}

static const char *kind_of(const char *name) {
    const char *dot = strrchr(name, '.');
    if (!dot) return "file";
    if (!strcmp(dot, ".safetensors")) return "checkpoint";
    if (!strcmp(dot, ".csv")) return "table";
    if (!strcmp(dot, ".jsonl")) return "events";
    if (!strcmp(dot, ".json")) return "json";
    if (!strcmp(dot, ".log")) return "log";
    return "file";
}

static int add(super *s, const char *ws, const char *id, int *k, const char *rel, const char *name) {
    char path[8400];
    art_rec a = {0};
    run_path(s, ws, id, rel, path, sizeof path);
    if (sha256_file(path, a.sha256, &a.size)) return 0;
    snprintf(a.id, sizeof a.id, "a%d", ++*k);
    snprintf(a.name, sizeof a.name, "%s", name);
    snprintf(a.kind, sizeof a.kind, "%s", kind_of(name));
    snprintf(a.rel, sizeof a.rel, "%s", rel);
    return store_add_artifact(s->st, id, &a);
}

/* Registers the files of the run directory (which must lie inside the run's out/) and the log. */
static void register_artifacts(super *s, const char *ws, const char *id, const char *run_dir) {
    char base[4400], real[PATH_MAX], rel[4400];
    int k = 0;
    run_path(s, ws, id, "", base, sizeof base); /* ends with '/' */
    if (run_dir && run_dir[0]) {
        snprintf(rel, sizeof rel, "%s%s", run_dir[0] == '/' ? "" : base, run_dir);
        if (realpath(rel, real) && !strncmp(real, base, strlen(base)) && !strncmp(real + strlen(base), "out/", 4)) {
            const char *inner = real + strlen(base);
            DIR *d = opendir(real);
            struct dirent *e;
            char *names[64];
            int nn = 0;
            while (d && (e = readdir(d)) && nn < 64)
                if (e->d_name[0] != '.' && !strstr(e->d_name, ".tmp.") && strlen(e->d_name) < 128)
                    names[nn++] = strdup(e->d_name);
            if (d) closedir(d);
            for (int i = 0; i < nn; i++) /* a stable order: by name */
                for (int j = i + 1; j < nn; j++)
                    if (names[i] && names[j] && strcmp(names[i], names[j]) > 0) {
                        char *t = names[i];
                        names[i] = names[j], names[j] = t;
                    }
            for (int i = 0; i < nn; i++) {
                if (!names[i]) continue;
                snprintf(rel, sizeof rel, "%s/%s", inner, names[i]);
                add(s, ws, id, &k, rel, names[i]);
                free(names[i]);
            }
        }
    }
    add(s, ws, id, &k, "logs/worker.log", "worker.log");
}

/* ---- workers ---- */

/* The worker's result.json: outcome and error fields (empty when absent). */
typedef struct result {
    char outcome[32], code[32], msg[1024], field[32], run_dir[4096];
} result;

static void read_result(super *s, const char *ws, const char *id, result *res) {
    char dir[4400];
    memset(res, 0, sizeof *res);
    run_path(s, ws, id, "", dir, sizeof dir);
    json_t *j = studio_load_json(dir, "result.json", JSON_REJECT_DUPLICATES);
    json_t *e = json_object_get(j, "error");
    snprintf(res->outcome, sizeof res->outcome, "%s", json_string_value(json_object_get(j, "outcome")) ?: "");
    snprintf(res->code, sizeof res->code, "%s", json_string_value(json_object_get(e, "code")) ?: "");
    snprintf(res->msg, sizeof res->msg, "%s", json_string_value(json_object_get(e, "message")) ?: "");
    snprintf(res->field, sizeof res->field, "%s", json_string_value(json_object_get(e, "field")) ?: "");
    snprintf(res->run_dir, sizeof res->run_dir, "%s",
             json_string_value(json_object_get(json_object_get(j, "summary"), "run_dir")) ?: "");
    json_decref(j);
}

/* 0 done, 1 not a legal change (logged), -1 a database error (logged). */
static int set_status(super *s, const char *id, int to, const st_change *c) {
    run_rec r;
    int rc = store_transition(s->st, id, to, c, &r);
    if (rc == 1)
        log_line("run %s: %s -> %s refused (not a legal change)", id, store_status_name(r.status), store_status_name(to));
    else if (rc < 0)
        log_line("run %s: the store refused the change to %s", id, store_status_name(to));
    return rc;
}

/* The worker of a exited with wait status ws: ingest its last events, decide and record the
 * outcome, free the slot. A database error keeps the slot (reaped) for the next tick's try. */
static void finalise(super *s, active *a, int ws) {
    a->reaped = 1, a->ws = ws;
    drain(s, a->id, a);
    run_rec r;
    if (store_get(s->st, a->id, &r)) {
        log_line("run %s: its worker ended but the store cannot be read; trying again", a->id);
        return;
    }
    result res;
    read_result(s, a->space, a->id, &res);
    int code = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1, sig = WIFSIGNALED(ws) ? WTERMSIG(ws) : 0;
    if (a->walled && code > 128 && code < 128 + 65 && !res.outcome[0]) sig = code - 128, code = -1;
    char msg[1400];
    st_change c = {.exit_code = code >= 0 ? code : 128 + sig};
    int to;
    if (code == 0 && !strcmp(res.outcome, "completed")) {
        to = r.status == ST_CANCEL_REQUESTED ? ST_CANCELLED : ST_SUCCEEDED;
        c.reason_code = to == ST_SUCCEEDED ? "completed" : "user";
        c.reason = to == ST_SUCCEEDED ? "completed" : "cancelled, but the run had already completed";
    } else if (a->why == K_SHUTDOWN) {
        to = ST_INTERRUPTED, c.reason_code = "service_restart", c.reason = "the service stopped while the run was running";
    } else if (a->why == K_SESSION) {
        to = ST_INTERRUPTED, c.reason_code = "session_ended", c.reason = "the session ended; its worker was killed";
    } else if (a->why == K_QUOTA) {
        to = ST_FAILED, c.reason_code = "storage_quota", c.err_code = "storage_quota";
        c.reason = c.err_msg = "the session's files grew over its storage quota; its worker was killed";
    } else if (a->why == K_TIMEOUT) {
        to = ST_FAILED, c.reason_code = "timeout";
        snprintf(msg, sizeof msg, "the run exceeded the wall-time limit of %d s", s->o.max_runtime_s);
        c.reason = msg, c.err_code = "timeout", c.err_msg = msg;
    } else if (a->why == K_CANCEL && (a->killed || !res.outcome[0])) {
        to = ST_CANCELLED, c.reason_code = a->killed ? "killed_after_grace" : "user";
        c.reason = a->killed ? "the worker did not stop within the grace period and was killed with its process group"
                             : "cancelled before the worker had started training";
    } else if (code == 3 && !strcmp(res.outcome, "cancelled")) {
        if (r.status == ST_RUNNING) /* stopped by a signal from elsewhere: through cancel_requested */
            set_status(s, a->id, ST_CANCEL_REQUESTED, &(st_change){.exit_code = -1, .reason = "the worker was stopped by a signal"});
        to = ST_CANCELLED, c.reason_code = "user";
        c.reason = res.run_dir[0] ? "cancelled; the last checkpoint was kept"
                                  : "cancelled before the first epoch completed; nothing was written";
    } else if (code == 1 && res.outcome[0]) {
        to = ST_FAILED;
        c.reason_code = !strcmp(res.code, "oom") ? "oom" : !strcmp(res.outcome, "diverged") ? "diverged" : "worker_failed";
        c.reason = res.msg[0] ? res.msg : "the worker failed";
        c.err_code = res.code[0] ? res.code : "failed", c.err_msg = c.reason, c.err_field = res.field;
    } else if (sig == SIGSYS) { /* public mode's seccomp filter (sandbox.h) */
        to = ST_FAILED, c.reason_code = "sandbox_violation", c.err_code = "sandbox_violation";
        c.reason = c.err_msg = "the worker made a system call its sandbox forbids and was killed (signal 31, SIGSYS)";
    } else {
        to = ST_FAILED, c.reason_code = "worker_died", c.err_code = "worker_died";
        if (sig)
            snprintf(msg, sizeof msg, "the worker was killed by signal %d (%s) without reporting an outcome%s", sig,
                     strsignal(sig), sig == SIGKILL ? "; an out-of-memory kill ends this way" : "");
        else
            snprintf(msg, sizeof msg, "the worker exited with code %d without reporting an outcome (see worker.log)", code);
        c.reason = msg, c.err_msg = msg;
    }
    /* CANCEL and the artifacts before the status: a client that sees the run terminal sees its
     * files final */
    char cancel[4400];
    run_path(s, a->space, a->id, "CANCEL", cancel, sizeof cancel);
    unlink(cancel);
    register_artifacts(s, a->space, a->id, res.run_dir[0] ? res.run_dir : a->run_dir);
    if (set_status(s, a->id, to, &c) < 0 && ++a->tries < 600) return; /* a minute of tries, then give up */
    log_line("run %s: %s (%s)", a->id, store_status_name(to), c.reason_code);
    memset(a, 0, sizeof *a);
    s->queue_dirty = 1;
}

/* What the worker's process needs between fork (or clone) and execve. */
typedef struct child {
    const super *s;
    const char *dir, *ws;       /* the run directory, its workspace */
    char **argv, **env, *walls; /* walls: the SANDBOX_ENV entry of env, (nwalls) */
    size_t nwalls;
    int logfd, errfd; /* errfd: the pipe an exec failure's errno is written to */
    int walled;       /* in new namespaces (sandbox_clone) */
    pid_t parent;
    uid_t uid;
    gid_t gid;
} child;

/* The worker's process until execve: only async-signal-safe calls. Walled, it is PID 1 of its
 * namespaces: it puts the walls up, forks the worker and stays as its reaper (sandbox_reap). */
static int child_main(void *arg) {
    const child *c = arg;
    const super *s = c->s;
    setsid();
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    if (!c->walled && getppid() != c->parent) _exit(127); /* (a new PID namespace does not see its parent) */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGTERM, SIG_DFL), signal(SIGINT, SIG_DFL), signal(SIGPIPE, SIG_DFL);
    int nul = open("/dev/null", O_RDONLY), errfd = c->errfd;
    if (nul < 0 || dup2(nul, 0) < 0 || dup2(c->logfd, 1) < 0 || dup2(c->logfd, 2) < 0) goto fail;
    /* every other descriptor of the server goes, however high (its limit is raised for connections);
     * the error pipe as 3, closed by the worker's exec */
    if (dup2(errfd, 3) < 0 || fcntl(3, F_SETFD, FD_CLOEXEC)) goto fail;
    errfd = 3;
    if (syscall(SYS_close_range, 4U, ~0U, 0U))
        for (int fd = 4; fd < 65536; fd++) close(fd); /* a kernel without close_range */
    if (c->walled) { /* half-made walls are no walls: a failure fails the spawn */
        if (sandbox_walls(s->o.root, c->ws, c->dir, c->uid, c->gid, c->walls, c->nwalls)) goto fail;
        prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); /* the init's memory (a copy of the server's) is no one's to read */
        pid_t w = _Fork(); /* fork() is not async-signal-safe: a lock another server thread held stays held */
        if (w < 0) goto fail;
        if (w > 0) {
            close(errfd); /* the worker's copy tells the server whether its exec failed */
            sandbox_reap(w);
        }
        prctl(PR_SET_PDEATHSIG, SIGKILL);
    }
    if (s->o.public_mode && sandbox_drop_caps()) goto fail; /* the worker holds no capability, even as uid 0 */
    if (chdir(c->dir)) goto fail; /* after the walls: the writable run directory is the new mount */
    umask(077);
    struct rlimit core = {0, 0}, files = {256, 256};
    setrlimit(RLIMIT_CORE, &core);
    setrlimit(RLIMIT_NOFILE, &files);
    if (s->o.max_runtime_s > 0) { /* CPU seconds: a backstop behind the wall-time limit */
        rlim_t cpu = (rlim_t)s->o.max_runtime_s * 64 + 60;
        struct rlimit lim = {cpu, cpu};
        setrlimit(RLIMIT_CPU, &lim);
    }
    if (s->o.worker_mb > 0) {
        struct rlimit as = {(rlim_t)s->o.worker_mb << 20, (rlim_t)s->o.worker_mb << 20};
        setrlimit(RLIMIT_AS, &as);
    }
    if (s->o.worker_file_mb > 0) { /* a larger file: SIGXFSZ ends the worker */
        struct rlimit fs = {(rlim_t)s->o.worker_file_mb << 20, (rlim_t)s->o.worker_file_mb << 20};
        setrlimit(RLIMIT_FSIZE, &fs);
    }
    execve(s->o.worker_exe, c->argv, c->env);
fail:;
    int e = errno;
    ssize_t w = write(errfd, &e, sizeof e);
    (void)w;
    _exit(127);
}

/* Starts the worker of run r in slot a; 0 on success, else errno (and a is left unused). */
static int spawn(super *s, const run_rec *r, active *a) {
    const char *id = r->id;
    char dir[4400], log[4400];
    run_path(s, r->ws, id, "", dir, sizeof dir);
    run_path(s, r->ws, id, "logs/worker.log", log, sizeof log);
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC)) return errno;
    int logfd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (logfd < 0) {
        int e = errno;
        close(pfd[0]), close(pfd[1]);
        return e;
    }
    char *argv[] = {"dpd", "worker", "--run-dir", dir, NULL};
    /* public mode: an environment of its own, nothing of the server's (no settings, no secrets) */
    char home[4500], tmp[4500];
    snprintf(home, sizeof home, "HOME=%s", dir), snprintf(tmp, sizeof tmp, "TMPDIR=%s", dir);
    char walls[64] = ""; /* filled in by sandbox_clone or sandbox_walls */
    char *clean[] = {"PATH=/usr/local/bin:/usr/bin:/bin", home, tmp, "LC_ALL=C", walls, NULL};
    child c = {.s = s, .dir = dir, .ws = r->ws, .argv = argv, .env = s->o.public_mode ? clean : environ, .walls = walls,
               .nwalls = sizeof walls, .logfd = logfd, .errfd = pfd[1], .parent = getpid(), .uid = getuid(),
               .gid = getgid()};
    pid_t pid;
    if (s->o.public_mode) {
        pid = sandbox_clone(child_main, &c, &c.walled, walls, sizeof walls);
    } else if (!(pid = fork())) {
        child_main(&c);
    }
    int e = pid < 0 ? errno : 0;
    close(pfd[1]);
    close(logfd);
    if (pid > 0) {
        int ce = 0;
        ssize_t n;
        while ((n = read(pfd[0], &ce, sizeof ce)) < 0 && errno == EINTR) {}
        if (n == (ssize_t)sizeof ce) { /* the walls or the exec failed */
            waitpid(pid, NULL, 0);
            e = ce ? ce : ENOEXEC;
        }
    }
    close(pfd[0]);
    if (e) return e;
    memset(a, 0, sizeof *a);
    a->used = 1;
    snprintf(a->id, sizeof a->id, "%s", id);
    snprintf(a->space, sizeof a->space, "%s", r->ws);
    a->pid = pid;
    a->walled = c.walled;
    a->start_ticks = start_ticks(pid);
    a->t0 = studio_mono();
    return 0;
}

static int busy(const super *s) {
    int n = 0;
    for (int i = 0; i < MAX_SLOTS; i++) n += s->a[i].used;
    return n;
}

static void dispatch(super *s) {
    while (!s->stopping && busy(s) < s->o.slots) {
        run_rec r;
        if (store_oldest_queued(s->st, &r)) return;
        active *a = NULL;
        for (int i = 0; i < MAX_SLOTS && !a; i++)
            if (!s->a[i].used) a = &s->a[i];
        int e = spawn(s, &r, a);
        if (e) {
            char msg[600];
            snprintf(msg, sizeof msg, "the worker could not be started: %s: %s", s->o.worker_exe, strerror(e));
            log_line("run %s: %s", r.id, msg);
            if (set_status(s, r.id, ST_RUNNING, &(st_change){.exit_code = -1, .reason = "dispatched"}) ||
                set_status(s, r.id, ST_FAILED,
                           &(st_change){.exit_code = -1, .reason_code = "spawn_failed", .reason = msg,
                                        .err_code = "spawn_failed", .err_msg = msg}))
                return; /* the store failed: no more dispatch this tick */
            continue;
        }
        if (set_status(s, r.id, ST_RUNNING,
                       &(st_change){.exit_code = -1, .pid = a->pid, .pid_start = a->start_ticks, .reason = "dispatched"})) {
            kill(-a->pid, SIGKILL); /* not recorded as running: this worker must not run */
            waitpid(a->pid, NULL, 0);
            memset(a, 0, sizeof *a);
            return;
        }
        log_line("run %s: running (worker pid %d)", r.id, (int)a->pid);
        s->queue_dirty = 1;
    }
}

static void wait_reasons(super *s) {
    char ids[512][24], w[512][128];
    int n = store_ids(s->st, NULL, ST_QUEUED, ids, 512), all = store_count(s->st, NULL, ST_QUEUED), b = busy(s);
    for (int i = 0; i < n; i++) /* the first 512: later ones keep the position they were given */
        snprintf(w[i], sizeof w[i], "position %d of %d, %d of %d slot%s busy", i + 1, all, b, s->o.slots,
                 s->o.slots == 1 ? "" : "s");
    store_set_waits(s->st, n, (const char(*)[24])ids, (const char(*)[128])w); /* one transaction */
}

static void stop_group(active *a, int why, double grace) {
    if (!a->why) a->why = why;
    kill(-a->pid, SIGTERM);
    if (!a->kill_at) a->kill_at = studio_mono() + grace;
}

static void write_cancel(super *s, const char *ws, const char *id) {
    char path[4400];
    run_path(s, ws, id, "CANCEL", path, sizeof path);
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0) close(fd);
}

/* One pass over the active runs: events, deadlines, exits. */
static void watch(super *s) {
    double t = studio_mono();
    for (int i = 0; i < MAX_SLOTS; i++) {
        active *a = &s->a[i];
        if (!a->used) continue;
        if (a->reaped) {
            finalise(s, a, a->ws);
            continue;
        }
        ingest(s, a->id, a);
        int ws;
        pid_t p = waitpid(a->pid, &ws, WNOHANG);
        if (p == a->pid) {
            kill(-a->pid, SIGKILL); /* anything the worker left in its group */
            finalise(s, a, ws);
            continue;
        }
        if (s->o.max_runtime_s > 0 && !a->why && t - a->t0 > s->o.max_runtime_s) stop_group(a, K_TIMEOUT, s->o.grace_s);
        if (a->kill_at && !a->killed && t >= a->kill_at) {
            kill(-a->pid, SIGKILL);
            kill(a->pid, SIGKILL);
            a->killed = 1;
        }
    }
}

static void *loop(void *arg) {
    super *s = arg;
    int stop_sent = 0;
    pthread_mutex_lock(&s->mu);
    while (!s->stopping || busy(s)) {
        if (s->stopping && !stop_sent) { /* graceful stop: every worker is cancelled, then killed after the grace */
            for (int i = 0; i < MAX_SLOTS; i++)
                if (s->a[i].used) {
                    write_cancel(s, s->a[i].space, s->a[i].id);
                    stop_group(&s->a[i], K_SHUTDOWN, s->o.grace_s); /* a pending cancel or timeout keeps its reason */
                }
            stop_sent = 1;
        }
        watch(s);
        dispatch(s);
        if (s->queue_dirty) {
            s->queue_dirty = 0;
            wait_reasons(s);
        }
        if (s->tick) s->tick(s->tick_user);
        if (!s->woken) {
            studio_cond_wait_ms(&s->cv, &s->mu, TICK_MS);
        }
        s->woken = 0;
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* ---- recovery ---- */

/* Adds to *found each directory at or below abs (rel: its path from the run's directory; depth
 * levels more at most, links never followed) that holds a run's file (config.json, a checkpoint);
 * out receives the first one's rel. */
static void run_dirs_below(const char *abs, const char *rel, int depth, char *out, size_t n, int *found) {
    static const char *const marks[] = {"config.json", "last.safetensors", "best.safetensors"};
    struct stat sb;
    char p[4600];
    for (size_t k = 0; k < sizeof marks / sizeof *marks; k++) {
        snprintf(p, sizeof p, "%s/%s", abs, marks[k]);
        if (!lstat(p, &sb) && S_ISREG(sb.st_mode)) {
            if ((*found)++ == 0) snprintf(out, n, "%s", rel);
            return;
        }
    }
    DIR *d = depth > 0 ? opendir(abs) : NULL;
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.' || e->d_type != DT_DIR) continue;
        char a[4600], r[4600];
        snprintf(a, sizeof a, "%s/%s", abs, e->d_name);
        snprintf(r, sizeof r, "%s/%s", rel, e->d_name);
        run_dirs_below(a, r, depth - 1, out, n, found);
    }
    if (d) closedir(d);
}

/* The run directory of a run whose `started` event was read before a restart (its path then
 * known only to the supervisor that died): the one directory its worker made under out/ that
 * holds a run's files (the CLI's layout: out/DATASET/train_pa/NAME); "" when there is none, or
 * more than one. */
static void only_run_dir(super *s, const char *ws, const char *id, char *out, size_t n) {
    char base[4400];
    run_path(s, ws, id, "out", base, sizeof base);
    out[0] = 0;
    int found = 0;
    run_dirs_below(base, "out", 4, out, n, &found);
    if (found != 1) out[0] = 0;
}

static void recover(super *s) {
    char ids[4096][24];
    int n = 0;
    for (int st = ST_QUEUED; st <= ST_CANCEL_REQUESTED; st++) n += store_ids(s->st, NULL, st, ids + n, 4096 - n);
    for (int i = 0; i < n; i++) {
        run_rec r;
        if (store_get(s->st, ids[i], &r)) continue;
        active tmp = {0};
        drain(s, r.id, &tmp);
        const char *why = NOT_STARTED;
        if (r.status != ST_QUEUED) {
            why = "the service restarted and the worker was no longer running";
            if (r.pid > 0 && r.pid_start > 0 && start_ticks((pid_t)r.pid) == r.pid_start) {
                kill(-(pid_t)r.pid, SIGKILL);
                kill((pid_t)r.pid, SIGKILL);
                why = "the service restarted; the worker was still running and was killed";
            }
        }
        set_status(s, r.id, ST_INTERRUPTED, &(st_change){.exit_code = -1, .reason_code = "service_restart", .reason = why});
        if (r.status != ST_QUEUED) {
            result res;
            read_result(s, r.ws, r.id, &res);
            if (!res.run_dir[0] && !tmp.run_dir[0]) only_run_dir(s, r.ws, r.id, tmp.run_dir, sizeof tmp.run_dir);
            register_artifacts(s, r.ws, r.id, res.run_dir[0] ? res.run_dir : tmp.run_dir);
        }
        log_line("run %s: interrupted (%s)", r.id, why);
    }
}

/* ---- the interface ---- */

super *super_start(const studio_opts *o, store *st, char *err, size_t n) {
    super *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, n, "out of memory");
        return NULL;
    }
    s->o = *o;
    s->st = st;
    s->queue_dirty = 1;
    pthread_mutex_init(&s->mu, NULL);
    studio_cond_init(&s->cv);
    recover(s);
    if (pthread_create(&s->th, NULL, loop, s)) {
        snprintf(err, n, "cannot start the supervisor thread");
        free(s);
        return NULL;
    }
    return s;
}

void super_wake(super *s) {
    pthread_mutex_lock(&s->mu);
    s->woken = 1;
    s->queue_dirty = 1;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

void super_on_tick(super *s, void (*fn)(void *), void *user) {
    pthread_mutex_lock(&s->mu);
    s->tick = fn, s->tick_user = user;
    pthread_mutex_unlock(&s->mu);
}

int super_busy(super *s) {
    pthread_mutex_lock(&s->mu);
    int n = busy(s);
    pthread_mutex_unlock(&s->mu);
    return n;
}

int super_end_ws(super *s, const char *ws, int why) {
    char ids[512][24];
    int quota = why == SUPER_OVER_QUOTA;
    st_change c = {.exit_code = -1, .reason_code = quota ? "storage_quota" : "session_ended",
                   .reason = quota ? "the session's files are over its storage quota" : "the session ended before the run started"};
    pthread_mutex_lock(&s->mu);
    int n = store_ids(s->st, ws, ST_QUEUED, ids, 512), left = 0; /* its own queued runs only */
    for (int i = 0; i < n; i++) set_status(s, ids[i], ST_INTERRUPTED, &c); /* queued -> failed is not a change */
    for (int i = 0; i < MAX_SLOTS; i++) {
        active *a = &s->a[i];
        if (!a->used || strcmp(a->space, ws)) continue;
        left++;
        if (a->killed) continue;
        a->why = quota ? K_QUOTA : K_SESSION; /* over any other reason */
        kill(-a->pid, SIGKILL);
        kill(a->pid, SIGKILL);
        a->killed = 1;
    }
    s->queue_dirty = 1;
    s->woken = 1;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return left + (n == 512); /* a full page of queued runs: maybe more of its own */
}

int super_cancel(super *s, const char *id, run_rec *r) {
    pthread_mutex_lock(&s->mu);
    int rc = store_get(s->st, id, r);
    if (!rc && r->status == ST_QUEUED) {
        rc = store_transition(s->st, id, ST_CANCELLED,
                              &(st_change){.exit_code = -1, .reason_code = "user", .reason = "cancelled before it started"}, r);
        rc = rc < 0 ? -1 : 0;
        s->queue_dirty = 1;
    } else if (!rc && r->status == ST_RUNNING) {
        for (int i = 0; i < MAX_SLOTS; i++)
            if (s->a[i].used && !strcmp(s->a[i].id, id)) {
                write_cancel(s, r->ws, id);
                rc = store_transition(s->st, id, ST_CANCEL_REQUESTED,
                                      &(st_change){.exit_code = -1, .reason = "cancel requested"}, r);
                rc = rc < 0 ? -1 : 0;
                stop_group(&s->a[i], K_CANCEL, s->o.grace_s);
            }
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

void super_stop(super *s) {
    pthread_mutex_lock(&s->mu);
    s->stopping = 1;
    s->woken = 1;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->th, NULL); /* the loop ends when its last worker has ended */
    char ids[4096][24];
    int n = store_ids(s->st, NULL, ST_QUEUED, ids, 4096);
    for (int i = 0; i < n; i++)
        set_status(s, ids[i], ST_INTERRUPTED,
                   &(st_change){.exit_code = -1, .reason_code = "service_restart",
                                .reason = NOT_STARTED});
}

void super_free(super *s) {
    if (!s) return;
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}
