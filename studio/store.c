/* store: SQLite job store (store.h). */
#include "store.h"

#include <jansson.h>

#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const names[ST_COUNT] = {"queued",    "running", "cancel_requested", "succeeded",
                                            "failed",    "cancelled", "interrupted"};

const char *store_status_name(int s) { return s >= 0 && s < ST_COUNT ? names[s] : "?"; }

int store_status_parse(const char *name) {
    for (int i = 0; name && i < ST_COUNT; i++)
        if (!strcmp(name, names[i])) return i;
    return -1;
}

int store_terminal(int s) { return s == ST_SUCCEEDED || s == ST_FAILED || s == ST_CANCELLED || s == ST_INTERRUPTED; }

int store_transition_ok(int from, int to) {
    switch (from) {
    case ST_QUEUED: return to == ST_RUNNING || to == ST_CANCELLED || to == ST_INTERRUPTED;
    case ST_RUNNING: return to == ST_SUCCEEDED || to == ST_FAILED || to == ST_CANCEL_REQUESTED || to == ST_INTERRUPTED;
    case ST_CANCEL_REQUESTED: return to == ST_CANCELLED || to == ST_FAILED || to == ST_INTERRUPTED;
    default: return 0;
    }
}

struct store {
    sqlite3 *db;
    pthread_mutex_t mu;
    unsigned long gen[4096]; /* events stored so far by hash of the run id (atomic): readers of a
                              * run's events wait for its count to change (runs sharing a
                              * bucket only wake each other) */
};

static unsigned long *gen_of(store *s, const char *run) {
    unsigned h = 2166136261u; /* FNV-1a */
    for (const char *p = run; *p; p++) h = (h ^ (unsigned char)*p) * 16777619u;
    return &s->gen[h % 4096];
}

/* Schema 2: runs belong to a workspace (ws: '' the local one, or a public session's), and an
 * idempotency key is unique within its workspace. */
#define RUNS_TABLE(name)                                                                                         \
    "CREATE TABLE IF NOT EXISTS " name "(id TEXT PRIMARY KEY, n INTEGER NOT NULL, status INTEGER NOT NULL,"      \
    " verb TEXT NOT NULL, dataset TEXT NOT NULL, request TEXT NOT NULL, idem TEXT, parent TEXT,"                 \
    " created REAL NOT NULL, started REAL, finished REAL, updated REAL NOT NULL, heartbeat REAL,"                 \
    " reason_code TEXT, reason TEXT, err_code TEXT, err_msg TEXT, err_field TEXT, wait_reason TEXT,"             \
    " pid INTEGER, pid_start INTEGER, exit_code INTEGER, last_seq INTEGER NOT NULL DEFAULT 0,"                   \
    " offset INTEGER NOT NULL DEFAULT 0, epoch INTEGER NOT NULL DEFAULT 0, epochs INTEGER NOT NULL DEFAULT 0,"   \
    " steps_done INTEGER NOT NULL DEFAULT 0, steps INTEGER NOT NULL DEFAULT 0, skipped INTEGER NOT NULL DEFAULT 0," \
    " ws TEXT NOT NULL DEFAULT '', UNIQUE(ws, idem));"
static const char *const SCHEMA =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);" RUNS_TABLE("runs")
    "CREATE INDEX IF NOT EXISTS runs_status ON runs(status, n);"
    "CREATE INDEX IF NOT EXISTS runs_ws ON runs(ws, n);"
    "CREATE TABLE IF NOT EXISTS events(run TEXT NOT NULL, seq INTEGER NOT NULL, ts REAL NOT NULL,"
    " type TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY(run, seq)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS artifacts(run TEXT NOT NULL, id TEXT NOT NULL, name TEXT NOT NULL,"
    " kind TEXT NOT NULL, rel TEXT NOT NULL, size INTEGER NOT NULL, sha256 TEXT NOT NULL, PRIMARY KEY(run, id));";

/* Schema 1 to 2: the runs table again with ws (every run the local workspace's) and the key
 * unique per workspace; the rest is unchanged. Inside store_open's transaction. */
static const char *const MIGRATE_1 =
    RUNS_TABLE("runs_v2")
    "INSERT INTO runs_v2(id, n, status, verb, dataset, request, idem, parent, created, started, finished, updated,"
    " heartbeat, reason_code, reason, err_code, err_msg, err_field, wait_reason, pid, pid_start, exit_code, last_seq,"
    " offset, epoch, epochs, steps_done, steps, skipped) SELECT id, n, status, verb, dataset, request, idem, parent,"
    " created, started, finished, updated, heartbeat, reason_code, reason, err_code, err_msg, err_field, wait_reason,"
    " pid, pid_start, exit_code, last_seq, offset, epoch, epochs, steps_done, steps, skipped FROM runs;"
    "DROP TABLE runs;"
    "ALTER TABLE runs_v2 RENAME TO runs;"
    "UPDATE meta SET value='2' WHERE key='schema_version';";

store *store_open(const char *path, char *err, size_t n) {
    store *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, n, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&s->mu, NULL);
    char *msg = NULL;
    if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, NULL) !=
        SQLITE_OK) {
        snprintf(err, n, "%s: %s", path, s->db ? sqlite3_errmsg(s->db) : "cannot open");
        goto fail;
    }
    sqlite3_busy_timeout(s->db, 30000);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, "PRAGMA journal_mode=WAL", -1, &st, NULL) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW || strcmp((const char *)sqlite3_column_text(st, 0), "wal")) {
        snprintf(err, n, "%s: cannot use WAL mode: %s", path, sqlite3_errmsg(s->db));
        sqlite3_finalize(st);
        goto fail;
    }
    sqlite3_finalize(st);
    if (sqlite3_exec(s->db, "PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;", NULL, NULL, &msg) != SQLITE_OK ||
        sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, &msg) != SQLITE_OK) {
        snprintf(err, n, "%s: %s", path, msg ? msg : sqlite3_errmsg(s->db));
        goto fail;
    }
    /* A database of schema 1 is migrated; one of another version is refused before anything is
     * written. */
    int version = -1;
    if (sqlite3_prepare_v2(s->db, "SELECT value FROM meta WHERE key='schema_version'", -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW) version = atoi((const char *)sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
        if (version == 1 && sqlite3_exec(s->db, MIGRATE_1, NULL, NULL, &msg) != SQLITE_OK) {
            snprintf(err, n, "%s: cannot migrate schema 1 to %d: %s", path, STORE_SCHEMA, msg ? msg : sqlite3_errmsg(s->db));
            sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
            goto fail;
        }
        if (version == 1) version = STORE_SCHEMA;
        if (version != STORE_SCHEMA) {
            snprintf(err, n, "%s: schema version %d, this dpd needs %d (use another --root, or the dpd that made it)",
                     path, version, STORE_SCHEMA);
            sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
            goto fail;
        }
    } else {
        sqlite3_finalize(st);
    }
    char ins[128];
    snprintf(ins, sizeof ins, "INSERT OR IGNORE INTO meta VALUES('schema_version','%d');", STORE_SCHEMA);
    if (sqlite3_exec(s->db, SCHEMA, NULL, NULL, &msg) != SQLITE_OK ||
        sqlite3_exec(s->db, ins, NULL, NULL, &msg) != SQLITE_OK ||
        sqlite3_exec(s->db, "COMMIT", NULL, NULL, &msg) != SQLITE_OK) {
        snprintf(err, n, "%s: %s", path, msg ? msg : sqlite3_errmsg(s->db));
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        goto fail;
    }
    return s;
fail:
    sqlite3_free(msg);
    store_close(s);
    return NULL;
}

void store_close(store *s) {
    if (!s) return;
    sqlite3_close(s->db);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* ---- helpers ---- */

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void store_utf8_fix(char *s) {
    unsigned char *p = (unsigned char *)s;
    while (*p) {
        /* the length of a sequence led by p[0], and the range of its second byte (RFC 3629:
         * no overlong forms, no surrogates, nothing above U+10FFFF) */
        unsigned c = p[0], lo = 0x80, hi = 0xBF;
        int len = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
        int ok = len > 0 && (len == 1 || (p[1] >= lo && p[1] <= hi));
        for (int k = 2; ok && k < len; k++) ok = (p[k] & 0xC0) == 0x80;
        if (!ok) {
            *p++ = '?';
            continue;
        }
        p += len;
    }
}
static sqlite3_stmt *prep(store *s, const char *sql) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "dpd studio: store: %s: %s\n", sqlite3_errmsg(s->db), sql);
        return NULL;
    }
    return st;
}

static void text(sqlite3_stmt *st, int i, const char *v) {
    if (v && v[0]) sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
    else sqlite3_bind_null(st, i);
}

static void text_nn(sqlite3_stmt *st, int i, const char *v) { sqlite3_bind_text(st, i, v ? v : "", -1, SQLITE_TRANSIENT); }

/* Column i as text into out (n bytes), cut at a character boundary and valid UTF-8: the API
 * hands it to jansson, which refuses anything else. */
static void col(sqlite3_stmt *st, int i, char *out, size_t n) {
    const unsigned char *v = sqlite3_column_text(st, i);
    snprintf(out, n, "%s", v ? (const char *)v : "");
    size_t len = strlen(out);
    if (v && len == n - 1 && strlen((const char *)v) > len) { /* cut: drop a partial last character */
        while (len > 0 && ((unsigned char)out[len - 1] & 0xC0) == 0x80) len--;
        if (len > 0 && (unsigned char)out[len - 1] >= 0xC0) len--;
        out[len] = 0;
    }
    store_utf8_fix(out);
}

#define RUN_COLS                                                                                     \
    "id, status, verb, dataset, request, idem, parent, created, started, finished, updated, heartbeat," \
    " reason_code, reason, err_code, err_msg, err_field, pid, pid_start, exit_code, last_seq, offset,"  \
    " epoch, epochs, steps_done, steps, skipped, wait_reason, ws"

static void row(sqlite3_stmt *st, run_rec *r) {
    memset(r, 0, sizeof *r);
    col(st, 0, r->id, sizeof r->id);
    r->status = sqlite3_column_int(st, 1);
    col(st, 2, r->verb, sizeof r->verb);
    col(st, 3, r->dataset, sizeof r->dataset);
    col(st, 4, r->request, sizeof r->request);
    col(st, 5, r->idem, sizeof r->idem);
    col(st, 6, r->parent, sizeof r->parent);
    r->created = sqlite3_column_double(st, 7);
    r->started = sqlite3_column_double(st, 8);
    r->finished = sqlite3_column_double(st, 9);
    r->updated = sqlite3_column_double(st, 10);
    r->heartbeat = sqlite3_column_double(st, 11);
    col(st, 12, r->reason_code, sizeof r->reason_code);
    col(st, 13, r->reason, sizeof r->reason);
    col(st, 14, r->err_code, sizeof r->err_code);
    col(st, 15, r->err_msg, sizeof r->err_msg);
    col(st, 16, r->err_field, sizeof r->err_field);
    r->pid = (long)sqlite3_column_int64(st, 17);
    r->pid_start = sqlite3_column_int64(st, 18);
    r->exit_code = sqlite3_column_type(st, 19) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 19);
    r->last_seq = (long)sqlite3_column_int64(st, 20);
    r->offset = sqlite3_column_int64(st, 21);
    r->epoch = sqlite3_column_int(st, 22);
    r->epochs = sqlite3_column_int(st, 23);
    r->steps_done = (long)sqlite3_column_int64(st, 24);
    r->steps = (long)sqlite3_column_int64(st, 25);
    r->skipped = (long)sqlite3_column_int64(st, 26);
    col(st, 27, r->wait_reason, sizeof r->wait_reason);
    col(st, 28, r->ws, sizeof r->ws);
}

/* The run whose column col_name is v (and, ws not NULL, of workspace ws) into r: 0 found, 1 not,
 * -1 error. */
static int get_locked(store *s, const char *col_name, const char *v, const char *ws, run_rec *r) {
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT " RUN_COLS " FROM runs WHERE %s=?%s", col_name, ws ? " AND ws=?" : "");
    sqlite3_stmt *st = prep(s, sql);
    if (!st) return -1;
    text(st, 1, v);
    if (ws) text_nn(st, 2, ws);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) row(st, r);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? 1 : -1;
}

static int exec(store *s, const char *sql) { return sqlite3_exec(s->db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1; }

/* Inserts one event with seq = last_seq + 1 and bumps last_seq (inside a transaction). */
static int event_locked(store *s, const char *id, double ts, const char *type, const char *data) {
    sqlite3_stmt *st = prep(s, "UPDATE runs SET last_seq = last_seq + 1 WHERE id=? RETURNING last_seq");
    if (!st) return -1;
    text(st, 1, id);
    long long seq = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    if (seq < 0 || !(st = prep(s, "INSERT INTO events VALUES(?,?,?,?,?)"))) return -1;
    text(st, 1, id);
    sqlite3_bind_int64(st, 2, seq);
    sqlite3_bind_double(st, 3, ts);
    text(st, 4, type);
    sqlite3_bind_text(st, 5, data, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    __atomic_add_fetch(gen_of(s, id), 1, __ATOMIC_RELEASE); /* before the commit: a reader may wake early, never late */
    return rc == SQLITE_DONE ? 0 : -1;
}

unsigned long store_gen(store *s, const char *run) { return __atomic_load_n(gen_of(s, run), __ATOMIC_ACQUIRE); }

static int status_event(store *s, const char *id, int from, int to, const char *reason, double t) {
    char why[1024];
    snprintf(why, sizeof why, "%s", reason ? reason : "");
    store_utf8_fix(why);
    json_t *o = json_pack("{s:s?, s:s, s:s?}", "from", from < 0 ? NULL : names[from], "to", names[to], "reason",
                          why[0] ? why : NULL);
    char *data = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    int rc = data ? event_locked(s, id, t, "status", data) : -1;
    free(data);
    return rc;
}

/* ---- runs ---- */

/* Workspace ws's runs (NULL: every workspace's; pending: queued, running or being cancelled),
 * counted in one reading; s->mu held. */
static int count_ws(store *s, const char *ws, int pending) {
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM runs WHERE %s%s", ws ? "ws=?" : "1",
             pending ? " AND status IN (0, 1, 2)" : "");
    sqlite3_stmt *st = prep(s, sql);
    int n = 0;
    if (st) {
        if (ws) text_nn(st, 1, ws);
        if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
    }
    return n;
}

int store_insert(store *s, run_rec *r, const store_quota *q, int *existed) {
    *existed = 0;
    pthread_mutex_lock(&s->mu);
    int rc = -1;
    if (exec(s, "BEGIN IMMEDIATE")) goto out;
    if (r->idem[0]) {
        run_rec old;
        int g = get_locked(s, "idem", r->idem, r->ws, &old);
        if (g == 0) {
            *r = old;
            *existed = 1;
            rc = exec(s, "COMMIT");
            goto out;
        }
        if (g < 0) goto rollback;
    }
    if (q && q->runs && count_ws(s, r->ws, 0) >= q->runs) { /* counted and inserted in one transaction */
        rc = STORE_RUN_QUOTA;
        goto rollback;
    }
    if (q && q->pending && count_ws(s, r->ws, 1) >= q->pending) {
        rc = STORE_PENDING_QUOTA;
        goto rollback;
    }
    if (q && q->queue && count_ws(s, NULL, 1) >= q->queue) {
        rc = STORE_QUEUE_FULL;
        goto rollback;
    }
    sqlite3_stmt *st = prep(s, "INSERT INTO runs(id, n, status, verb, dataset, request, idem, parent, created, updated, ws)"
                               " VALUES(?, (SELECT IFNULL(MAX(n), 0) + 1 FROM runs), 0, ?, ?, ?, ?, ?, ?, ?, ?)");
    if (!st) goto rollback;
    r->created = now();
    text_nn(st, 1, r->id);
    text_nn(st, 2, r->verb);
    text_nn(st, 3, r->dataset);
    sqlite3_bind_text(st, 4, r->request, -1, SQLITE_TRANSIENT);
    text(st, 5, r->idem);
    text(st, 6, r->parent);
    sqlite3_bind_double(st, 7, r->created);
    sqlite3_bind_double(st, 8, r->created);
    text_nn(st, 9, r->ws);
    int ok = sqlite3_step(st) == SQLITE_DONE;
    sqlite3_finalize(st);
    if (!ok || status_event(s, r->id, -1, ST_QUEUED, "submitted", r->created) ||
        get_locked(s, "id", r->id, NULL, r) || exec(s, "COMMIT"))
        goto rollback;
    rc = 0;
    goto out;
rollback:
    exec(s, "ROLLBACK");
out:
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int store_get(store *s, const char *id, run_rec *r) {
    pthread_mutex_lock(&s->mu);
    int rc = get_locked(s, "id", id, NULL, r);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int store_get_ws(store *s, const char *ws, const char *id, run_rec *r) {
    pthread_mutex_lock(&s->mu);
    int rc = get_locked(s, "id", id, ws ? ws : "", r);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int store_get_idem(store *s, const char *ws, const char *idem, run_rec *r) {
    pthread_mutex_lock(&s->mu);
    int rc = get_locked(s, "idem", idem, ws ? ws : "", r);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* " WHERE ..." for a status (< 0: any) and a workspace (NULL: any), and binds them from k. */
static const char *filter(int status, const char *ws) {
    return status < 0 ? ws ? " WHERE ws=?" : "" : ws ? " WHERE status=? AND ws=?" : " WHERE status=?";
}
static int bind_filter(sqlite3_stmt *st, int k, int status, const char *ws) {
    if (status >= 0) sqlite3_bind_int(st, k++, status);
    if (ws) text_nn(st, k++, ws);
    return k;
}

int store_list(store *s, const char *ws, int status, int limit, int offset, int (*fn)(void *, const run_rec *),
               void *user, long *total) {
    pthread_mutex_lock(&s->mu);
    int rc = -1;
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM runs%s", filter(status, ws));
    sqlite3_stmt *st = prep(s, sql);
    if (!st) goto out;
    bind_filter(st, 1, status, ws);
    *total = sqlite3_step(st) == SQLITE_ROW ? (long)sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    snprintf(sql, sizeof sql, "SELECT " RUN_COLS " FROM runs%s ORDER BY n DESC LIMIT ? OFFSET ?", filter(status, ws));
    if (!(st = prep(s, sql))) goto out;
    int k = bind_filter(st, 1, status, ws);
    sqlite3_bind_int(st, k++, limit);
    sqlite3_bind_int(st, k, offset);
    static __thread run_rec r;
    while (sqlite3_step(st) == SQLITE_ROW) {
        row(st, &r);
        if (fn(user, &r)) break;
    }
    sqlite3_finalize(st);
    rc = 0;
out:
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int store_count(store *s, const char *ws, int status) {
    pthread_mutex_lock(&s->mu);
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM runs%s", filter(status, ws));
    sqlite3_stmt *st = prep(s, sql);
    int n = 0;
    if (st) {
        bind_filter(st, 1, status, ws);
        if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&s->mu);
    return n;
}

int store_pending(store *s, const char *ws) {
    pthread_mutex_lock(&s->mu);
    int n = count_ws(s, ws, 1);
    pthread_mutex_unlock(&s->mu);
    return n;
}

int store_delete_ws(store *s, const char *ws) {
    pthread_mutex_lock(&s->mu);
    int rc = -1;
    if (exec(s, "BEGIN IMMEDIATE")) goto out;
    static const char *const one[] = {"DELETE FROM events WHERE run IN (SELECT id FROM runs WHERE ws=?)",
                                      "DELETE FROM artifacts WHERE run IN (SELECT id FROM runs WHERE ws=?)",
                                      "DELETE FROM runs WHERE ws=?"};
    static const char *const all[] = {"DELETE FROM events WHERE run IN (SELECT id FROM runs WHERE ws<>'')",
                                      "DELETE FROM artifacts WHERE run IN (SELECT id FROM runs WHERE ws<>'')",
                                      "DELETE FROM runs WHERE ws<>''"};
    for (int i = 0; i < 3; i++) {
        sqlite3_stmt *st = prep(s, ws ? one[i] : all[i]);
        if (!st) goto rollback;
        if (ws) text_nn(st, 1, ws);
        int ok = sqlite3_step(st) == SQLITE_DONE;
        sqlite3_finalize(st);
        if (!ok) goto rollback;
    }
    rc = exec(s, "COMMIT");
    if (!rc) goto out;
rollback:
    exec(s, "ROLLBACK");
out:
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int store_ids(store *s, const char *ws, int status, char (*ids)[24], int max) {
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st = prep(s, ws ? "SELECT id FROM runs WHERE status=? AND ws=? ORDER BY n" : "SELECT id FROM runs WHERE status=? ORDER BY n");
    int n = 0;
    if (st) {
        sqlite3_bind_int(st, 1, status);
        if (ws) text_nn(st, 2, ws);
        while (n < max && sqlite3_step(st) == SQLITE_ROW) col(st, 0, ids[n++], 24);
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&s->mu);
    return n;
}

int store_oldest_queued(store *s, run_rec *r) {
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st = prep(s, "SELECT " RUN_COLS " FROM runs WHERE status=0 ORDER BY n LIMIT 1");
    int rc = -1;
    if (st) {
        int x = sqlite3_step(st);
        if (x == SQLITE_ROW) row(st, r);
        rc = x == SQLITE_ROW ? 0 : x == SQLITE_DONE ? 1 : -1;
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int store_transition(store *s, const char *id, int to, const st_change *c, run_rec *r) {
    pthread_mutex_lock(&s->mu);
    int rc = -1;
    if (exec(s, "BEGIN IMMEDIATE")) goto out;
    run_rec cur;
    if (get_locked(s, "id", id, NULL, &cur)) goto rollback;
    if (!store_transition_ok(cur.status, to)) {
        exec(s, "ROLLBACK");
        if (r) *r = cur;
        rc = 1;
        goto out;
    }
    double t = now();
    sqlite3_stmt *st = prep(
        s, "UPDATE runs SET status=?, updated=?,"
           " started=CASE WHEN ?=1 THEN ? ELSE started END,"
           " finished=CASE WHEN ? THEN ? ELSE finished END,"
           " reason_code=IFNULL(?, reason_code), reason=IFNULL(?, reason),"
           " err_code=IFNULL(?, err_code), err_msg=IFNULL(?, err_msg), err_field=IFNULL(?, err_field),"
           " pid=CASE WHEN ? THEN ? ELSE pid END, pid_start=CASE WHEN ? THEN ? ELSE pid_start END,"
           " exit_code=CASE WHEN ? >= 0 THEN ? ELSE exit_code END, wait_reason=NULL WHERE id=?");
    if (!st) goto rollback;
    int term = store_terminal(to);
    sqlite3_bind_int(st, 1, to);
    sqlite3_bind_double(st, 2, t);
    sqlite3_bind_int(st, 3, to == ST_RUNNING);
    sqlite3_bind_double(st, 4, t);
    sqlite3_bind_int(st, 5, term);
    sqlite3_bind_double(st, 6, t);
    text(st, 7, c ? c->reason_code : NULL);
    text(st, 8, c ? c->reason : NULL);
    text(st, 9, c ? c->err_code : NULL);
    text(st, 10, c ? c->err_msg : NULL);
    text(st, 11, c ? c->err_field : NULL);
    sqlite3_bind_int(st, 12, c && c->pid);
    sqlite3_bind_int64(st, 13, c ? c->pid : 0);
    sqlite3_bind_int(st, 14, c && c->pid);
    sqlite3_bind_int64(st, 15, c ? c->pid_start : 0);
    sqlite3_bind_int(st, 16, c ? c->exit_code : -1);
    sqlite3_bind_int(st, 17, c ? c->exit_code : -1);
    text(st, 18, id);
    int ok = sqlite3_step(st) == SQLITE_DONE;
    sqlite3_finalize(st);
    if (!ok || status_event(s, id, cur.status, to, c ? c->reason : NULL, t)) goto rollback;
    if (r && get_locked(s, "id", id, NULL, r)) goto rollback;
    if (exec(s, "COMMIT")) goto rollback;
    rc = 0;
    goto out;
rollback:
    exec(s, "ROLLBACK");
out:
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int store_set_waits(store *s, int n, const char (*ids)[24], const char (*reasons)[128]) {
    pthread_mutex_lock(&s->mu);
    int rc = -1;
    sqlite3_stmt *st = NULL;
    if (exec(s, "BEGIN IMMEDIATE")) goto out;
    st = prep(s, "UPDATE runs SET wait_reason=? WHERE id=? AND status=0");
    for (int i = 0; st && i < n; i++) {
        sqlite3_reset(st);
        text(st, 1, reasons[i]);
        text(st, 2, ids[i]);
        if (sqlite3_step(st) != SQLITE_DONE) goto out;
    }
    rc = st ? exec(s, "COMMIT") : -1;
out:
    sqlite3_finalize(st);
    if (rc) exec(s, "ROLLBACK");
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* ---- events ---- */

int store_append(store *s, const char *id, const st_event *ev, int n, long long offset, int epoch, int epochs,
                 long steps_done, long steps, double heartbeat, long skipped) {
    pthread_mutex_lock(&s->mu);
    int rc = -1;
    if (exec(s, "BEGIN IMMEDIATE")) goto out;
    for (int i = 0; i < n; i++)
        if (event_locked(s, id, ev[i].ts, ev[i].type, ev[i].data)) goto rollback;
    sqlite3_stmt *st = prep(s, "UPDATE runs SET offset=?, heartbeat=CASE WHEN ? > 0 THEN ? ELSE heartbeat END,"
                               " epoch=CASE WHEN ? >= 0 THEN ? ELSE epoch END, epochs=CASE WHEN ? >= 0 THEN ? ELSE epochs END,"
                               " steps_done=CASE WHEN ? >= 0 THEN ? ELSE steps_done END,"
                               " steps=CASE WHEN ? >= 0 THEN ? ELSE steps END, skipped=skipped+?, updated=? WHERE id=?");
    if (!st) goto rollback;
    sqlite3_bind_int64(st, 1, offset);
    sqlite3_bind_double(st, 2, heartbeat);
    sqlite3_bind_double(st, 3, heartbeat);
    sqlite3_bind_int(st, 4, epoch);
    sqlite3_bind_int(st, 5, epoch);
    sqlite3_bind_int(st, 6, epochs);
    sqlite3_bind_int(st, 7, epochs);
    sqlite3_bind_int64(st, 8, steps_done);
    sqlite3_bind_int64(st, 9, steps_done);
    sqlite3_bind_int64(st, 10, steps);
    sqlite3_bind_int64(st, 11, steps);
    sqlite3_bind_int64(st, 12, skipped);
    sqlite3_bind_double(st, 13, now());
    text(st, 14, id);
    int ok = sqlite3_step(st) == SQLITE_DONE;
    sqlite3_finalize(st);
    if (!ok || exec(s, "COMMIT")) goto rollback;
    rc = 0;
    goto out;
rollback:
    exec(s, "ROLLBACK");
out:
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int store_events(store *s, const char *id, long after, int limit,
                 int (*fn)(void *, long, double, const char *, const char *), void *user) {
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st = prep(s, "SELECT seq, ts, type, data FROM events WHERE run=? AND seq>? ORDER BY seq LIMIT ?");
    int rc = -1;
    if (st) {
        text(st, 1, id);
        sqlite3_bind_int64(st, 2, after);
        sqlite3_bind_int(st, 3, limit);
        while (sqlite3_step(st) == SQLITE_ROW)
            if (fn(user, (long)sqlite3_column_int64(st, 0), sqlite3_column_double(st, 1),
                   (const char *)sqlite3_column_text(st, 2), (const char *)sqlite3_column_text(st, 3)))
                break;
        sqlite3_finalize(st);
        rc = 0;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* ---- artifacts ---- */

int store_add_artifact(store *s, const char *run, const art_rec *a) {
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st = prep(s, "INSERT OR REPLACE INTO artifacts VALUES(?,?,?,?,?,?,?)");
    int rc = -1;
    if (st) {
        text(st, 1, run);
        text(st, 2, a->id);
        text(st, 3, a->name);
        text(st, 4, a->kind);
        text(st, 5, a->rel);
        sqlite3_bind_int64(st, 6, a->size);
        text(st, 7, a->sha256);
        rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

static void art_row(sqlite3_stmt *st, art_rec *a) {
    memset(a, 0, sizeof *a);
    col(st, 0, a->id, sizeof a->id);
    col(st, 1, a->name, sizeof a->name);
    col(st, 2, a->kind, sizeof a->kind);
    col(st, 3, a->rel, sizeof a->rel);
    a->size = sqlite3_column_int64(st, 4);
    col(st, 5, a->sha256, sizeof a->sha256);
}

int store_artifacts(store *s, const char *run, int (*fn)(void *, const art_rec *), void *user) {
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st = prep(s, "SELECT id, name, kind, rel, size, sha256 FROM artifacts WHERE run=? ORDER BY CAST(substr(id, 2) AS INTEGER)");
    int rc = -1;
    if (st) {
        text(st, 1, run);
        art_rec a;
        while (sqlite3_step(st) == SQLITE_ROW) {
            art_row(st, &a);
            if (fn(user, &a)) break;
        }
        sqlite3_finalize(st);
        rc = 0;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int store_artifact(store *s, const char *run, const char *aid, art_rec *a) {
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st = prep(s, "SELECT id, name, kind, rel, size, sha256 FROM artifacts WHERE run=? AND id=?");
    int rc = -1;
    if (st) {
        text(st, 1, run);
        text(st, 2, aid);
        int x = sqlite3_step(st);
        if (x == SQLITE_ROW) art_row(st, a);
        rc = x == SQLITE_ROW ? 0 : x == SQLITE_DONE ? 1 : -1;
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}
