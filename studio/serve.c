/* serve: `dpd serve` — prepares the studio root (marker, lock), opens the store, recovers, starts
 * the supervisor and the HTTP daemon, and stops them gracefully on SIGINT or SIGTERM. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "job.h"
#include "http.h"
#include "studio.h"

#define MARKER ".dpd-studio"
#define PUBLIC_MAX_RUNTIME_S 3600 /* --public's default wall-time limit of a run: one session's run never
                                   * holds a slot for the session's whole lease */
#define PUBLIC_WORKER_MB 4096     /* --public's default address space of a worker (the reference's 4 GiB): a
                                   * session's run cannot take the host's memory */

static int usage(FILE *f) {
    fprintf(f, "usage: dpd serve [--root DIR] [--listen 127.0.0.1:PORT] [--slots N] [--data DIR]... [--grace S]\n"
               "                 [--max-runtime S] [--worker-memory MB] [--worker-file-mb MB] [--import RUN_DIR]...\n"
               "                 [--stale-after S] [--test-workers] [--routes]\n"
               "                 [--public [--session-lease S] [--idle-lease S] [--max-sessions N] [--session-rate N]\n"
               "                  [--request-rate N] [--session-inflight N] [--session-runs N] [--session-pending N]\n"
               "                  [--body-timeout S] [--ip-inflight N] [--max-inflight N] [--ip-sessions N]\n"
               "                  [--max-pending N] [--ip-runs N] [--session-quota-mb MB] [--disk-reserve-mb MB]\n"
               "                  [--max-connections N] [--ip-connections N] [--max-streams N]\n"
               "                  [--download-timeout S]\n"
               "                  [--public-host NAME]... [--origin URL] [--client-ip-header NAME]]\n\n"
               "The studio service on the loopback interface (docs/studio.md): a job queue in SQLite, one worker\n"
               "process per run, an HTTP API with live event streams. SIGINT or SIGTERM stops it gracefully.\n\n"
               "  --root DIR          data root (default $XDG_DATA_HOME/dpd/studio)\n"
               "  --listen HOST:PORT  127.0.0.1, ::1 or localhost; port 0 picks a free one (127.0.0.1:8765)\n"
               "  --slots N           runs computing at once, 1..64 (1)\n"
               "  --data DIR          offer DIR's dataset subdirectories by name (repeatable)\n"
               "  --grace S           seconds a cancelled worker gets before it is killed, 1..3600 (10)\n"
               "  --max-runtime S     wall-time limit of a run in seconds, 0 = none (0; 3600 with --public)\n"
               "  --stale-after S     a running worker silent this long shows heartbeat_stale, 1..3600 (60)\n"
               "  --worker-memory MB  address-space limit of each worker: 0 = none, or 128 and more (0; 4096 with --public)\n"
               "  --worker-file-mb MB the largest file a worker may write, 0 = none (0; 64 with --public)\n"
               "  --worker PATH       the worker executable (default: this dpd)\n"
               "  --import RUN_DIR    show a completed CLI run (dpd train-pa/train-dpd/fit-ls) as a studio run:\n"
               "                      copied into the root once, with its events, metrics, plots and files\n"
               "                      (repeatable; importing the same directory again finds the first import)\n"
               "  --test-workers      accept the fake verb (tests and benchmarks)\n"
               "  --routes            print the API's routes, a JSON object a line, and exit\n"
               "  --public            public mode (docs/studio.md \"Public mode\"): anonymous sessions,\n"
               "                      each its own workspace, reached with a bearer token from\n"
               "                      POST /api/v1/web/sessions; no local sign-in, no API token, no uploads\n"
               "  --session-lease S   a public session's fixed lifetime in seconds, 1..2592000 (86400); then its\n"
               "                      workers are killed and its runs and directory removed\n"
               "  --idle-lease S      a public session also ends after S seconds without POST /api/v1/web/activity\n"
               "                      (reading and running jobs do not count), 0 = never, up to 2592000 (0)\n"
               "  --max-sessions N    public sessions open at once, 1..100000 (1024)\n"
               "  --session-rate N    new sessions a minute from one client address (IPv6: its /64), 0 = no limit (10)\n"
               "  --request-rate N    requests a second in one session, in bursts of up to 2N, 0 = no limit (20)\n"
               "  --session-inflight N  requests of one session at once (an event stream is one), 0 = no limit (16)\n"
               "  --session-runs N    runs one session may submit, 1..100000 (8)\n"
               "  --body-timeout S    seconds a request's body may take after its headers, 1..3600 (10)\n"
               "  --ip-inflight N     requests of one client address at once, 0 = no limit (32)\n"
               "  --max-inflight N    requests being answered at once, every client, 0 = no limit (256)\n"
               "  --ip-sessions N     sessions open at once created from one client address, 0 = no limit (64)\n"
               "  --session-pending N runs of one session queued or running at once, 1..100000 (2)\n"
               "  --max-pending N     runs queued or running at once, every session's, 0 = no limit (128)\n"
               "  --ip-runs N         runs submitted from one client address, 0 = no limit (96)\n"
               "  --session-quota-mb MB  the disk space a session's files may take, measured every 2 s; over it,\n"
               "                      its runs are ended and it takes no more, 0 = no limit (256)\n"
               "  --disk-reserve-mb MB   no new session or run while the root's disk has less free (256)\n"
               "  --max-connections N TCP connections open at once, 16..60000 (1000)\n"
               "  --max-streams N     event streams open at once, 1..60000 (1000)\n"
               "  --download-timeout S  seconds a download may take; then its connection is cut, 1..86400 (600)\n"
               "  --ip-connections N  connections of one peer address at once, 0 = no limit (64; 0 with\n"
               "                      --client-ip-header: behind a proxy every connection is the proxy's)\n"
               "  --public-host NAME  a Host name a reverse proxy serves this as, accepted besides the loopback\n"
               "                      names (repeatable, 8 at most)\n"
               "  --origin URL        the web origin (https://HOST[:PORT]) whose pages may call the API; requests\n"
               "                      with any other Origin are refused (default: none)\n"
               "  --client-ip-header NAME  the header a reverse proxy on this host puts the client's address in\n"
               "                      (default: the TCP peer's address)\n");
    return f == stdout ? 0 : 2;
}

static int int_opt(const char *name, const char *v, int lo, int hi, int *out) {
    char *end;
    errno = 0;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || !*v || *end || errno || x < lo || x > hi) {
        fprintf(stderr, "dpd: --%s must be an integer in %d..%d (got '%s')\n", name, lo, hi, v ? v : "");
        return -1;
    }
    *out = (int)x;
    return 0;
}

static int absolute(const char *in, char *out, size_t n) {
    if (in[0] == '/') {
        snprintf(out, n, "%s", in);
        return 0;
    }
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) return -1;
    snprintf(out, n, "%s/%s", cwd, in);
    return 0;
}

static int mkdirs(const char *path) {
    char p[4096];
    snprintf(p, sizeof p, "%s", path);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = 0;
            if (mkdir(p, 0700) && errno != EEXIST) return -1;
            *s = '/';
        }
    return mkdir(p, 0700) && errno != EEXIST ? -1 : 0;
}

/* The root: created, or a studio root (marker), or empty; anything else is refused untouched. */
static int prepare_root(const char *root) {
    struct stat sb;
    if (lstat(root, &sb)) {
        if (errno != ENOENT || mkdirs(root)) {
            fprintf(stderr, "dpd: --root %s: %s\n", root, strerror(errno));
            return -1;
        }
    } else if (!S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "dpd: --root %s: not a directory%s\n", root, S_ISLNK(sb.st_mode) ? " (a symbolic link)" : "");
        return -1;
    }
    char marker[4200];
    snprintf(marker, sizeof marker, "%s/" MARKER, root);
    if (access(marker, F_OK)) {
        DIR *d = opendir(root);
        struct dirent *e;
        int empty = d != NULL;
        while (d && (e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) empty = 0;
        if (d) closedir(d);
        if (!empty) {
            fprintf(stderr, "dpd: --root %s: not empty and not a dpd studio root (no %s); refusing to use it\n", root, MARKER);
            return -1;
        }
        FILE *f = fopen(marker, "w");
        if (!f || fprintf(f, "dpd studio root, schema %d\n", STORE_SCHEMA) < 0 || fclose(f)) {
            fprintf(stderr, "dpd: %s: %s\n", marker, strerror(errno));
            return -1;
        }
    }
    return 0;
}

/* What an imported run's request says of its model, as a submitted run's would (the pages label runs
 * by it): model and hidden, or a fit's kind (mp, gmp) and target (a DPD fit's "dpd": the pages draw
 * it as a DPD run), from its config.json. */
static void imported_model(json_t *opts, const char *dir, int ls) {
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/config.json", dir);
    dpd_error err = {0};
    json_t *c = cli_json_read(path, 0, &err), *m = json_object_get(c, "model");
    const char *fam = json_string_value(json_object_get(m, "family"));
    if (fam && ls) {
        json_object_set_new(opts, "kind", json_string(strcmp(fam, "gmp_ls") ? "mp" : "gmp"));
        json_object_set_new(opts, "target", json_string(!strcmp(json_string_value(json_object_get(c, "step")) ?: "", "train_dpd") ? "dpd" : "pa"));
    }
    else if (fam) {
        json_object_set_new(opts, "model", json_string(fam));
        if (json_is_integer(json_object_get(m, "hidden"))) json_object_set(opts, "hidden", json_object_get(m, "hidden"));
    }
    json_decref(c);
}

/* Queues the import of each completed CLI run directory (checked first); an import of the same
 * directory (by its real path) is found again through its idempotency key. */
static int imports(const studio_opts *o, store *st, char (*dirs)[PATH_MAX], int n) {
    for (int i = 0; i < n; i++) {
        run_rec r = {0};
        dpd_error err = {0};
        if (job_import_check(dirs[i], r.verb, r.dataset, &err)) {
            fprintf(stderr, "dpd: --import: %s\n", err.msg);
            return -1;
        }
        snprintf(r.idem, sizeof r.idem, "import:%.250s", dirs[i]);
        json_t *opts = json_pack("{s:s}", "imported_from", dirs[i]);
        imported_model(opts, dirs[i], !strcmp(r.verb, "fit-ls"));
        char *text = opts ? json_dumps(opts, JSON_COMPACT) : NULL;
        snprintf(r.request, sizeof r.request, "%s", text ? text : "{}");
        free(text);
        json_t *jobj = json_pack("{s:s, s:s, s:o, s:s}", "verb", r.verb, "dataset", r.dataset, "options", opts, "import",
                                 dirs[i]);
        char why[256];
        int existed = 0, q = job_enqueue(st, o->root, &r, jobj, NULL, &existed, why, sizeof why);
        json_decref(jobj);
        if (q) {
            fprintf(stderr, "dpd: --import %s: %s\n", dirs[i], why);
            return -1;
        }
        printf("dpd studio: %s %s as run %s\n", existed ? "already imported" : "importing", dirs[i], r.id);
    }
    return 0;
}

/* Half-made leftovers of a killed server: dataset staging directories. */
static void clean(const char *root) {
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/datasets", root);
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (!strncmp(e->d_name, ".staging-", 9)) studio_rmtree(path);
    }
    if (d) closedir(d);
}

/* Public sessions live in memory: the ones a previous server had are over. Their runs (recovery
 * has stopped their workers) and directories go. */
static void end_sessions(const studio_opts *o, store *st) {
    char path[4200];
    snprintf(path, sizeof path, "%s/sessions", o->root);
    DIR *d = opendir(path);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2]))) continue;
        char dir[4500];
        snprintf(dir, sizeof dir, "%s/%s", path, e->d_name);
        studio_rmtree(dir);
    }
    if (d) closedir(d);
    if (store_delete_ws(st, NULL)) fprintf(stderr, "dpd studio: the ended sessions' runs could not be removed from the store\n");
}

/* dpd serve's integer options with nothing else to check: flag, bounds, field. */
static const struct int_flag {
    const char *flag; /* "--slots" */
    int lo, hi;
    size_t off; /* in studio_opts */
} int_flags[] = {
    {"--session-lease", 1, 2592000, offsetof(studio_opts, lease_s)},
    {"--idle-lease", 0, 2592000, offsetof(studio_opts, idle_s)},
    {"--session-rate", 0, 1000000, offsetof(studio_opts, session_rate)},
    {"--ip-inflight", 0, 100000, offsetof(studio_opts, ip_inflight)},
    {"--max-connections", 16, 60000, offsetof(studio_opts, max_connections)},
    {"--download-timeout", 1, 86400, offsetof(studio_opts, download_s)},
    {"--max-streams", 1, 60000, offsetof(studio_opts, max_streams)},
    {"--ip-connections", 0, 60000, offsetof(studio_opts, ip_connections)},
    {"--session-quota-mb", 0, 1 << 24, offsetof(studio_opts, quota_mb)},
    {"--disk-reserve-mb", 0, 1 << 30, offsetof(studio_opts, reserve_mb)},
    {"--ip-runs", 0, 1000000, offsetof(studio_opts, ip_runs)},
    {"--max-pending", 0, 1000000, offsetof(studio_opts, max_pending)},
    {"--ip-sessions", 0, 100000, offsetof(studio_opts, ip_sessions)},
    {"--max-inflight", 0, 100000, offsetof(studio_opts, max_inflight)},
    {"--body-timeout", 1, 3600, offsetof(studio_opts, body_timeout_s)},
    {"--session-runs", 1, 100000, offsetof(studio_opts, session_runs)},
    {"--session-pending", 1, 100000, offsetof(studio_opts, session_pending)},
    {"--session-inflight", 0, 100000, offsetof(studio_opts, session_inflight)},
    {"--request-rate", 0, 1000000, offsetof(studio_opts, request_rate)},
    {"--max-sessions", 1, 100000, offsetof(studio_opts, max_sessions)},
    {"--slots", 1, 64, offsetof(studio_opts, slots)},
    {"--grace", 1, 3600, offsetof(studio_opts, grace_s)},
    {"--stale-after", 1, 3600, offsetof(studio_opts, stale_s)},
    {"--max-runtime", 0, 100000000, offsetof(studio_opts, max_runtime_s)},
};

/* Says on stderr what the --data directories offer that a user would not expect: a directory that
 * is a dataset itself (--data takes the directory that holds datasets), names that cannot be
 * offered, and names hidden by the built-in synth or by an earlier --data directory. */
static void data_notes(const studio_opts *o) {
    for (int i = 0; i < o->ndata; i++) {
        char p[4400];
        snprintf(p, sizeof p, "%s/spec.json", o->data[i]);
        if (!access(p, F_OK))
            fprintf(stderr, "dpd: warning: --data %s holds spec.json: it is a dataset, and --data takes the directory "
                            "that holds datasets (its parent, to offer it by its name)\n", o->data[i]);
        DIR *d = opendir(o->data[i]);
        for (struct dirent *e; d && (e = readdir(d));) {
            snprintf(p, sizeof p, "%s/%s/spec.json", o->data[i], e->d_name);
            if (e->d_name[0] == '.' || access(p, F_OK)) continue;
            if (!api_dataset_name(e->d_name)) {
                fprintf(stderr, "dpd: warning: --data %s: '%s' is not offered: a dataset's name is at most 64 letters, "
                                "digits, '_', '-' and '.' (rename its directory)\n", o->data[i], e->d_name);
                continue;
            }
            const char *by = !strcmp(e->d_name, "synth") ? "the built-in synthetic dataset" : NULL;
            for (int k = 0; k < i && !by; k++) {
                snprintf(p, sizeof p, "%s/%s/spec.json", o->data[k], e->d_name);
                if (!access(p, F_OK)) by = o->data[k];
            }
            if (by) fprintf(stderr, "dpd: warning: --data %s: '%s' is hidden by %s%s, which has its name\n", o->data[i],
                            e->d_name, by[0] == '/' ? "the one in " : "", by); /* the --data paths are real paths */
        }
        if (d) closedir(d);
    }
}

int cmd_serve(int argc, char **argv) {
    umask(077); /* everything the server writes is its own (files 0600, directories 0700) */
    studio_opts o;
    studio_defaults(&o);
    static char data[STUDIO_MAX_DATA][4096], imp[16][PATH_MAX];
    const char *root = NULL;
    int nimp = 0, file_set = 0, runtime_set = 0, memory_set = 0;
    const char *public_flag = NULL; /* the first option given that only public mode reads */
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (cli_is_help(a)) return usage(stdout);
        if (!strcmp(a, "--routes")) { /* the API's route table (docs/studio.md) */
            http_routes_print(stdout);
            return 0;
        }
        if (!strcmp(a, "--test-workers")) {
            o.test_workers = 1;
            continue;
        }
        if (!strcmp(a, "--public")) {
            o.public_mode = 1;
            continue;
        }
        if (!v) {
            fprintf(stderr, "dpd: %s: unknown option, or its value is missing\n", a);
            return usage(stderr);
        }
        i++;
        const struct int_flag *f = NULL;
        for (size_t k = 0; k < sizeof int_flags / sizeof *int_flags && !f; k++)
            if (!strcmp(a, int_flags[k].flag)) f = &int_flags[k];
        if (f || !strcmp(a, "--public-host") || !strcmp(a, "--origin") || !strcmp(a, "--client-ip-header")) {
            /* what only public mode reads: said, not ignored */
            static const char *const public_only[] = {"--session-lease", "--idle-lease",  "--max-sessions",    "--session-rate",
                                                      "--ip-sessions",   "--request-rate", "--session-inflight", "--ip-inflight",
                                                      "--max-inflight",  "--body-timeout", "--download-timeout", "--ip-connections",
                                                      "--session-runs",  "--session-pending", "--max-pending",   "--ip-runs",
                                                      "--session-quota-mb", "--public-host", "--origin", "--client-ip-header"};
            for (size_t k = 0; k < sizeof public_only / sizeof *public_only && !public_flag; k++)
                if (!strcmp(a, public_only[k])) public_flag = public_only[k];
        }
        if (f) {
            if (int_opt(f->flag + 2, v, f->lo, f->hi, (int *)((char *)&o + f->off))) return 2;
            runtime_set |= f->off == offsetof(studio_opts, max_runtime_s);
        } else if (!strcmp(a, "--root")) {
            root = v;
        } else if (!strcmp(a, "--public-host")) {
            size_t k = strlen(v), ok = o.npublic_hosts < 8 && k > 0 && k < sizeof o.public_hosts[0];
            for (size_t j = 0; ok && j < k; j++)
                ok = (v[j] >= 'A' && v[j] <= 'Z') || (v[j] >= 'a' && v[j] <= 'z') || (v[j] >= '0' && v[j] <= '9') || v[j] == '-' || v[j] == '.';
            if (!ok) {
                fprintf(stderr, "dpd: --public-host: a host name (letters, digits, '-', '.'), at most 8 of them (got '%s')\n", v);
                return 2;
            }
            snprintf(o.public_hosts[o.npublic_hosts++], sizeof o.public_hosts[0], "%s", v);
        } else if (!strcmp(a, "--origin")) {
            if (strncmp(v, "https://", 8) && strncmp(v, "http://", 7)) {
                fprintf(stderr, "dpd: --origin must be a web origin, https://HOST[:PORT] (got '%s')\n", v);
                return 2;
            }
            if (strlen(v) >= sizeof o.origin || strchr(v + 8, '/')) {
                fprintf(stderr, "dpd: --origin is a scheme, host and port only, without a path (got '%s')\n", v);
                return 2;
            }
            snprintf(o.origin, sizeof o.origin, "%s", v);
        } else if (!strcmp(a, "--client-ip-header")) {
            size_t k = strlen(v), ok = k > 0 && k < sizeof o.client_ip_header;
            for (size_t j = 0; ok && j < k; j++)
                ok = (v[j] >= 'A' && v[j] <= 'Z') || (v[j] >= 'a' && v[j] <= 'z') || (v[j] >= '0' && v[j] <= '9') || v[j] == '-';
            if (!ok) {
                fprintf(stderr, "dpd: --client-ip-header must be a header name (letters, digits, '-'; got '%s')\n", v);
                return 2;
            }
            snprintf(o.client_ip_header, sizeof o.client_ip_header, "%s", v);
        } else if (!strcmp(a, "--worker-memory")) {
            if (int_opt("worker-memory", v, 0, 1 << 24, &o.worker_mb)) return 2;
            memory_set = 1;
            if (o.worker_mb && o.worker_mb < 128) { /* below this the worker cannot even load its libraries */
                fprintf(stderr, "dpd: --worker-memory must be 0 (no limit) or at least 128 MiB (got %d)\n", o.worker_mb);
                return 2;
            }
        } else if (!strcmp(a, "--worker-file-mb")) {
            if (int_opt("worker-file-mb", v, 0, 1 << 24, &o.worker_file_mb)) return 2;
            file_set = 1;
        } else if (!strcmp(a, "--worker")) {
            snprintf(o.worker_exe, sizeof o.worker_exe, "%s", v);
        } else if (!strcmp(a, "--data")) {
            struct stat sb;
            if (o.ndata == STUDIO_MAX_DATA || stat(v, &sb) || !S_ISDIR(sb.st_mode) ||
                !realpath(v, data[o.ndata])) { /* the real path: the one dpd_train writes, and public mode hides */
                fprintf(stderr, "dpd: --data %s: %s\n", v, o.ndata == STUDIO_MAX_DATA ? "at most 16 --data directories" : "not a directory");
                return 2;
            }
            o.data[o.ndata] = data[o.ndata];
            o.ndata++;
        } else if (!strcmp(a, "--import")) {
            errno = 0;
            if (nimp == 16 || !realpath(v, imp[nimp]) || strlen(imp[nimp]) > 250) {
                fprintf(stderr, "dpd: --import %s: %s\n", v,
                        nimp == 16 ? "at most 16 --import directories" : errno ? strerror(errno) : "path too long");
                return 2;
            }
            nimp++;
        } else if (!strcmp(a, "--listen")) {
            const char *colon = strrchr(v, ':');
            char host[64];
            if (!colon || (size_t)(colon - v) >= sizeof host) {
                fprintf(stderr, "dpd: --listen must be HOST:PORT (got '%s')\n", v);
                return 2;
            }
            snprintf(host, sizeof host, "%.*s", (int)(colon - v), v);
            if (!strcmp(host, "[::1]")) snprintf(host, sizeof host, "::1");
            if (strcmp(host, "127.0.0.1") && strcmp(host, "localhost") && strcmp(host, "::1")) {
                fprintf(stderr, "dpd: --listen: local mode serves the loopback interface only (127.0.0.1, ::1 or localhost), not '%s'\n", host);
                return 2;
            }
            snprintf(o.host, sizeof o.host, "%s", strcmp(host, "localhost") ? host : "127.0.0.1");
            if (int_opt("listen port", colon + 1, 0, 65535, &o.port)) return 2;
        } else {
            fprintf(stderr, "dpd: %s: unknown option\n", a);
            return usage(stderr);
        }
    }
    if (!o.public_mode && public_flag) {
        fprintf(stderr, "dpd: %s is for public mode (--public): a local studio has no sessions, client rates or quotas\n",
                public_flag);
        return 2;
    }
    if (o.public_mode && !file_set) o.worker_file_mb = 64;
    if (o.public_mode && !runtime_set) o.max_runtime_s = PUBLIC_MAX_RUNTIME_S;
    if (o.public_mode && !memory_set) o.worker_mb = PUBLIC_WORKER_MB;
    if (o.ip_connections < 0) o.ip_connections = o.client_ip_header[0] ? 0 : 64;
    struct rlimit nf; /* a descriptor for each connection, and the server's own files */
    rlim_t want = (rlim_t)o.max_connections + 256;
    if (!getrlimit(RLIMIT_NOFILE, &nf) && nf.rlim_cur < want) {
        nf.rlim_cur = nf.rlim_max < want ? nf.rlim_max : want;
        setrlimit(RLIMIT_NOFILE, &nf);
    }
    if (o.public_mode && nimp) {
        fprintf(stderr, "dpd: --import is for the local studio, not --public (a public session cannot own a CLI run)\n");
        return 2;
    }
    /* public mode: no process of this user without privileges (a worker, were it not walled in)
     * reads this one's memory or environment through /proc */
    if (o.public_mode) prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    char def[4096];
    if (!root) {
        const char *x = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
        if (x && x[0] == '/') snprintf(def, sizeof def, "%s/dpd/studio", x);
        else snprintf(def, sizeof def, "%s/.local/share/dpd/studio", home ? home : ".");
        root = def;
    }
    if (absolute(root, o.root, sizeof o.root)) {
        fprintf(stderr, "dpd: --root %s: %s\n", root, strerror(errno));
        return 1;
    }
    if (!o.worker_exe[0]) {
        ssize_t n = readlink("/proc/self/exe", o.worker_exe, sizeof o.worker_exe - 1);
        if (n <= 0) {
            fprintf(stderr, "dpd: cannot find this program's path (/proc/self/exe): %s\n", strerror(errno));
            return 1;
        }
        o.worker_exe[n] = 0;
    }
    if (prepare_root(o.root)) return 1;
    char real[PATH_MAX]; /* the root as the kernel resolves it: paths are compared against it */
    if (!realpath(o.root, real)) {
        fprintf(stderr, "dpd: --root %s: %s\n", o.root, strerror(errno));
        return 1;
    }
    snprintf(o.root, sizeof o.root, "%s", real);
    char path[4200];
    snprintf(path, sizeof path, "%s/.lock", o.root);
    int lock = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lock < 0 || flock(lock, LOCK_EX | LOCK_NB)) {
        fprintf(stderr, "dpd: another dpd serve owns %s (%s)\n", o.root, lock < 0 ? strerror(errno) : "its lock is held");
        return 1;
    }
    snprintf(path, sizeof path, "%s/runs", o.root);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/datasets", o.root);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/datasets/uploads", o.root);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/sessions", o.root);
    mkdir(path, 0700);
    clean(o.root);
    /* SIGINT and SIGTERM are taken by sigwait below; every thread inherits the mask */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    char err[1400] = "";
    snprintf(path, sizeof path, "%s/studio.db", o.root);
    store *st = store_open(path, err, sizeof err);
    if (!st) {
        fprintf(stderr, "dpd: %s\n", err);
        return 1;
    }
    data_notes(&o);
    super *sv = super_start(&o, st, err, sizeof err); /* recovery first: then the imports are queued */
    if (sv) end_sessions(&o, st);
    /* the port before the imports: a start that cannot listen queues none (an import queued by a
     * service that then stops is found as imported by the next start, and never ran) */
    http *h = sv ? http_start(&o, st, sv, err, sizeof err) : NULL;
    int bad = h && imports(&o, st, imp, nimp);
    if (!h || bad) {
        if (!h) fprintf(stderr, "dpd: %s\n", err);
        if (sv) super_stop(sv); /* first: its tick looks at the server's streams */
        if (h) http_stop(h);
        super_free(sv);
        store_close(st);
        return 1;
    }
    super_wake(sv);
    const char *host = strcmp(o.host, "::1") ? o.host : "[::1]";
    printf("dpd studio: listening on http://%s:%d\n", host, http_port(h));
    if (o.public_mode) {
        printf("dpd studio: public mode: POST /api/v1/web/sessions gives a session's token (%d s lease, %d sessions at "
               "most)\n", o.lease_s, o.max_sessions);
        if (o.max_runtime_s) printf("dpd studio: a run may take at most %d s (--max-runtime)\n", o.max_runtime_s);
        else fprintf(stderr, "dpd studio: warning: --max-runtime 0 with --public: a run may hold its slot for its session's whole lease\n");
        if (o.worker_mb) printf("dpd studio: a worker may map at most %d MiB (--worker-memory)\n", o.worker_mb);
        else fprintf(stderr, "dpd studio: warning: --worker-memory 0 with --public: a session's run may take the host's memory\n");
        if (!geteuid())
            fprintf(stderr, "dpd studio: warning: public mode as root: a worker's sandbox keeps this user, so a worker made "
                            "to run an attacker's code could read root's files; run it as a user of its own "
                            "(docs/studio.md, the systemd unit)\n");
        if (o.test_workers)
            fprintf(stderr, "dpd studio: warning: --test-workers with --public: any session may run the fake verb and move "
                            "the sessions' clock; for tests only\n");
    } else {
        printf("dpd studio: sign in (once, within 10 minutes): http://%s:%d/api/v1/session/bootstrap?token=%s\n", host,
               http_port(h), http_bootstrap(h));
        printf("dpd studio: API token for scripts: %s/api-token\n", o.root);
    }
    fflush(stdout);
    int sig = 0;
    sigwait(&set, &sig);
    fprintf(stderr, "dpd studio: %s: stopping (runs get %d s to stop)\n", strsignal(sig), o.grace_s);
    http_refuse_writes(h);
    super_stop(sv);
    http_stop(h); /* requests in flight may still ask the supervisor: it is freed after */
    super_free(sv);
    store_close(st);
    close(lock);
    return 0;
}
