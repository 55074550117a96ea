/* studio: `dpd serve` (docs/studio.md) — the pieces shared by its modules: the server's options,
 * the supervisor (super.c: queue, workers, events, recovery) and the HTTP front (http.c, api.c).
 * The studio is a front end: it uses the public API (include/dpd/dpd.h) and cli.h only. */
#ifndef DPD_STUDIO_H
#define DPD_STUDIO_H

#include <pthread.h>
#include <stddef.h>

#include "store.h"

#define STUDIO_MAX_DATA 16

typedef struct studio_opts {
    char root[4096];        /* absolute */
    char host[64];          /* 127.0.0.1, ::1 or localhost */
    int port;               /* 0: any free one */
    int slots;              /* runs computing at once */
    const char *data[STUDIO_MAX_DATA]; /* --data directories (absolute) */
    int ndata;
    int grace_s;            /* cancel -> SIGKILL of the group */
    int max_runtime_s;      /* 0: none */
    int stale_s;            /* a running run whose worker has been silent this long is heartbeat_stale */
    int worker_mb;          /* RLIMIT_AS of a worker, MiB; 0: none */
    int worker_file_mb;     /* RLIMIT_FSIZE of a worker, MiB (the largest file it may write); 0: none */
    int test_workers;       /* the fake verb is accepted */
    int public_mode;        /* --public: anonymous sessions with bearer tokens (public.h), no local sign-in */
    int lease_s;            /* a public session's lifetime */
    int idle_s;             /* its inactivity lease, renewed only by POST /api/v1/web/activity; 0: none */
    int max_sessions;       /* public sessions open at once */
    int session_rate;       /* new public sessions a minute per client IP key; 0: no limit */
    int request_rate;       /* requests a second per public session (bursts of twice that); 0: no limit */
    int session_inflight;   /* requests of one public session at once; 0: no limit */
    int ip_inflight;        /* requests of one client IP key at once; 0: no limit */
    int max_inflight;       /* public mode: requests being answered at once, every client; 0: no limit */
    int ip_sessions;        /* public sessions open at once created from one client IP key; 0: no limit */
    int ip_runs;            /* public mode: runs submitted from one client IP key; 0: no limit */
    int session_runs;       /* runs one public session may submit in its life */
    int body_timeout_s;     /* public mode: seconds from a request's headers to the end of its body */
    int session_pending;    /* runs of one public session queued or running at once */
    int max_pending;        /* public mode: runs queued or running at once, every session's; 0: no limit */
    int quota_mb;           /* public mode: a session's storage quota, MiB; 0: none */
    int max_connections;    /* TCP connections open at once */
    int max_streams;        /* event streams open at once */
    int download_s;         /* public mode: seconds a download may take before it is cut */
    int ip_connections;     /* public mode: connections of one peer address at once; 0: no limit */
    int reserve_mb;         /* public mode: free disk space below which no session or run is taken, MiB */
    char client_ip_header[64]; /* the header a reverse proxy puts the client's address in; "": the TCP peer */
    char origin[256];       /* public mode: the one web origin whose pages may call the API ("": none) */
    char public_hosts[8][128]; /* public mode: Host names served besides the loopback ones */
    int npublic_hosts;
    char worker_exe[4096];  /* the worker executable: this dpd */
} studio_opts;

/* dpd serve's defaults (its --help): loopback port 8765, one slot, public mode's limits;
 * ip_connections -1: decided by client_ip_header once the options are read. */
void studio_defaults(studio_opts *o);
double studio_now(void); /* Unix seconds, wall clock */
double studio_mono(void); /* seconds, monotonic */
/* A condition variable on the monotonic clock (wall-clock jumps do not stall its waits), and a wait
 * on it of at most ms milliseconds (mu held). */
void studio_cond_init(pthread_cond_t *cv);
void studio_cond_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu, int ms);
void studio_iso(double t, char *out, size_t n); /* "2026-11-30T13:00:00.123Z" */
void studio_rmtree(const char *dir); /* removes dir and everything below it, links not followed */
/* The disk space dir and everything below it take (st_blocks), links not followed, into *bytes: 0;
 * 1 when it holds more than max_entries entries or is nested deeper than 64 (*bytes so far); -1
 * when dir cannot be opened. */
int studio_du(const char *dir, long max_entries, long long *bytes);
/* The path of name in the directory of run id of workspace ws under root: root/runs/ID/NAME for
 * the local workspace (ws NULL or ""), root/sessions/WS/runs/ID/NAME for a public session's. name
 * "": the directory with a final '/'; NULL: without it. */
void studio_run_path(const char *root, const char *ws, const char *id, const char *name, char *out, size_t n);
struct json_t;
/* A file a worker wrote (it could have put links there): rel ("a/b.json") below the directory dir
 * (the server's, or one resolved and checked), opened following no symbolic link on the way; a
 * regular file only (a FIFO never blocks). A descriptor, or -1 when it is none of that. */
int studio_open_below(const char *dir, const char *rel);
/* The same file read as JSON (flags: jansson's); NULL when it cannot be opened so, or is no JSON. */
struct json_t *studio_load_json(const char *dir, const char *rel, size_t flags);
/* Writes path whole and atomically (a 0600 temporary file, fsync, rename); 0, or -1 with errno. */
int studio_write_file(const char *path, const void *p, size_t n);
/* Public mode: every string in j (objects and arrays, recursively) with the server's paths taken
 * out: ROOT/sessions/WS/ (a session's workspace) and ROOT/ become "", a --data directory DIR/
 * (the longest that matches) and the runtime packs' directory too (so a run directory reads
 * runs/ID/..., a dataset its name, a provider's pack its own name). j is changed in place;
 * a string that cannot be rebuilt (no memory) becomes "". */
void studio_hide_paths(struct json_t *j, const studio_opts *o);

/* ---- supervisor (super.c) ---- */

typedef struct super super;

/* Recovers what a previous server left (docs/studio.md "Shutdown and recovery"), then starts the
 * supervisor thread. NULL with a message on failure. */
super *super_start(const studio_opts *o, store *st, char *err, size_t n);
/* Wakes the supervisor now (a submission). */
void super_wake(super *s);
/* Cancels run id (docs/studio.md "Cancel"); r receives the run after it. 0 done (or nothing to
 * do for a terminal run), 1 no such run, -1 a store error. */
int super_cancel(super *s, const char *id, run_rec *r);
int super_busy(super *s); /* slots in use */
/* Why super_end_ws ends a workspace's runs. */
enum {
    SUPER_SESSION_ENDED, /* queued and running runs become interrupted (session_ended) */
    SUPER_OVER_QUOTA,    /* the workspace is over its storage quota: queued runs become interrupted and
                          * running ones failed (storage_quota) */
};
/* Ends workspace ws's runs for `why`: queued ones at once, running workers killed with their process
 * groups (recorded when reaped). Returns how many of its workers are still to be reaped: 0 when
 * none of its runs will change any more. */
int super_end_ws(super *s, const char *ws, int why);
/* Called by the supervisor thread after each tick (the HTTP side resumes its event streams). */
void super_on_tick(super *s, void (*fn)(void *), void *user);
/* Graceful stop: cancels every running worker, waits up to the grace period, kills the rest,
 * marks the unfinished runs interrupted, joins the thread. s stays valid (for requests still in
 * flight) until super_free. */
void super_stop(super *s);
void super_free(super *s);

/* ---- the browser UI: studio/web/ embedded by scripts/embed.sh ---- */

typedef struct studio_asset {
    const char *path;         /* "/index.html" */
    const char *type;         /* Content-Type */
    const unsigned char *data;
    unsigned long size;
} studio_asset;
extern const studio_asset studio_assets[]; /* ends with a NULL path */

/* ---- HTTP (http.c, api.c) ---- */

typedef struct http http;
http *http_start(const studio_opts *o, store *st, super *sv, char *err, size_t n);
int http_port(const http *h);
const char *http_bootstrap(const http *h); /* the one-time token */
void http_refuse_writes(http *h);          /* shutting down: submissions get 503 */
void http_stop(http *h);

#endif
