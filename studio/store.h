/* store: the studio's job store — runs, their events and artifacts in one SQLite database (WAL),
 * and the one table of legal status changes. Every function takes the store's lock, so the HTTP
 * threads and the supervisor share one handle. A status change and its `status` event, and a
 * batch of events and the run's progress, are each one transaction. */
#ifndef DPD_STUDIO_STORE_H
#define DPD_STUDIO_STORE_H

#include <stddef.h>

enum {
    ST_QUEUED,
    ST_RUNNING,
    ST_CANCEL_REQUESTED,
    ST_SUCCEEDED,
    ST_FAILED,
    ST_CANCELLED,
    ST_INTERRUPTED,
    ST_COUNT
};

#define STORE_SCHEMA 2

const char *store_status_name(int s); /* "queued", ... ; "?" outside the range */
int store_status_parse(const char *name); /* -1 when unknown */
int store_terminal(int s);
/* 1 when a run may go from `from` to `to` (docs/studio.md "States"); the only such table. */
int store_transition_ok(int from, int to);
/* Replaces each byte of s that is not part of a valid UTF-8 sequence with '?'. */
void store_utf8_fix(char *s);

typedef struct run_rec {
    char id[24];
    int status;
    char verb[16];
    char dataset[256];
    char request[8192];  /* the submitted options as JSON text */
    char idem[260];      /* idempotency key, "" for none */
    char parent[24];
    double created, started, finished, updated, heartbeat; /* Unix seconds, 0 = not yet */
    char reason_code[32], reason[256];
    char err_code[32], err_msg[1024], err_field[32];
    long pid;            /* the worker's, 0 when none */
    long long pid_start; /* its start time, clock ticks since boot (/proc/PID/stat field 22) */
    int exit_code;       /* -1 while none */
    long last_seq;
    long long offset;    /* bytes of events.jsonl ingested */
    int epoch, epochs;
    long steps_done, steps;
    long skipped;        /* events.jsonl lines refused (too long, not JSON) */
    char wait_reason[128]; /* queued runs: why they wait */
    char ws[49];         /* the workspace: "" the local one, or a public session's (hex) */
} run_rec;

/* What a status change also writes (NULL fields and zero pid: unchanged). */
typedef struct st_change {
    const char *reason_code, *reason;
    const char *err_code, *err_msg, *err_field;
    long pid;
    long long pid_start;
    int exit_code; /* -1: unchanged */
} st_change;

typedef struct st_event {
    double ts;
    const char *type;
    const char *data; /* JSON text */
} st_event;

typedef struct store store;

/* Opens (creating when absent) the database at path. A database of another schema version, or
 * one that cannot be put in WAL mode, is refused with a message in err. NULL on failure. */
store *store_open(const char *path, char *err, size_t n);
void store_close(store *s);

/* A workspace's limits, checked by store_insert in the transaction that inserts (0: no limit). */
typedef struct {
    int runs;    /* runs it has ever had */
    int pending; /* runs queued, running or being cancelled */
    int queue;   /* runs queued, running or being cancelled, every workspace's */
} store_quota;
enum { STORE_RUN_QUOTA = 1, STORE_PENDING_QUOTA, STORE_QUEUE_FULL }; /* store_insert's refusals */

/* Inserts r (status queued, its first `status` event) into workspace r->ws. With an idempotency
 * key a run of that workspace already has, fills r with that run instead and sets *existed (never
 * refused). 0 on success; a STORE_ refusal above when q (NULL: none) refuses it,
 * nothing written; -1 on a database error. */
int store_insert(store *s, run_rec *r, const store_quota *q, int *existed);
int store_get(store *s, const char *id, run_rec *r); /* 0 found, 1 not found, -1 error */
/* store_get of a run of workspace ws (NULL: ""): another workspace's run is not found. */
int store_get_ws(store *s, const char *ws, const char *id, run_rec *r);
/* The run of workspace ws (NULL: "") with idempotency key idem: 0 found, 1 not, -1 error. */
int store_get_idem(store *s, const char *ws, const char *idem, run_rec *r);
/* Calls fn for the runs of workspace ws (NULL: every workspace) in a status (< 0: all), newest
 * first; *total = their count. */
int store_list(store *s, const char *ws, int status, int limit, int offset, int (*fn)(void *, const run_rec *),
               void *user, long *total);
int store_oldest_queued(store *s, run_rec *r); /* 0 found, 1 none, -1 error */
int store_count(store *s, const char *ws, int status); /* ws NULL: every workspace; status < 0: any */
/* Workspace ws's runs (NULL: every workspace's) queued, running or being cancelled, counted in one
 * reading (a run moving from queued to running is counted once). */
int store_pending(store *s, const char *ws);
/* Removes workspace ws's runs (NULL: every workspace's but the local one) with their events and
 * artifacts, in one transaction. 0, or -1. */
int store_delete_ws(store *s, const char *ws);
/* The runs in a status, in submission order: ids into ids[max][24]; returns how many. */
int store_ids(store *s, const char *ws, int status, char (*ids)[24], int max); /* ws NULL: every workspace */

/* Changes r's status to `to` with its `status` event {from, to, reason}, or refuses an illegal
 * change (returns 1, nothing written). 0 on success (r re-read), -1 on a database error. */
int store_transition(store *s, const char *id, int to, const st_change *c, run_rec *r);
/* Sets the wait reasons of n queued runs in one transaction (a run no longer queued is left). */
int store_set_waits(store *s, int n, const char (*ids)[24], const char (*reasons)[128]);

/* Appends n events with the next seqs, and sets the run's offset, progress and heartbeat, in one
 * transaction. progress (epoch < 0: unchanged). */
int store_append(store *s, const char *id, const st_event *ev, int n, long long offset, int epoch, int epochs,
                 long steps_done, long steps, double heartbeat, long skipped);
/* A number that changes whenever an event of run is stored (read it before reading the events:
 * a later change means there may be more; it may also change for another run). */
unsigned long store_gen(store *s, const char *run);
/* Calls fn(user, seq, ts, type, data) for the events with seq > after, at most limit. */
int store_events(store *s, const char *id, long after, int limit,
                 int (*fn)(void *, long, double, const char *, const char *), void *user);

typedef struct art_rec {
    char id[16], name[128], kind[32], rel[512], sha256[65];
    long long size;
} art_rec;
int store_add_artifact(store *s, const char *run, const art_rec *a);
int store_artifacts(store *s, const char *run, int (*fn)(void *, const art_rec *), void *user);
int store_artifact(store *s, const char *run, const char *aid, art_rec *a); /* 0 found, 1 not */

#endif
