/* test_store: the studio's job store (studio/store.c) — the transition table over all 49 pairs
 * on a real database, refusals that write nothing, a status change and its event in one
 * transaction, gap-free event numbers, idempotency keys, workspaces (a run, a key, a list and a
 * count are a workspace's own; deleting one leaves the others), the schema version check and the
 * migration of a schema 1 database. */
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "check.h"
#include "store.h"

/* The table of docs/studio.md, written out again by hand. */
static const int legal[ST_COUNT][ST_COUNT] = {
    /* to:        q  r  cr s  f  c  i */
    [ST_QUEUED] = {0, 1, 0, 0, 0, 1, 1},
    [ST_RUNNING] = {0, 0, 1, 1, 1, 0, 1},
    [ST_CANCEL_REQUESTED] = {0, 0, 0, 0, 1, 1, 1},
};

/* The shortest legal path from queued to s. */
static int walk(store *st, const char *id, int s) {
    static const int path[ST_COUNT][3] = {
        [ST_QUEUED] = {-1},
        [ST_RUNNING] = {ST_RUNNING, -1},
        [ST_CANCEL_REQUESTED] = {ST_RUNNING, ST_CANCEL_REQUESTED, -1},
        [ST_SUCCEEDED] = {ST_RUNNING, ST_SUCCEEDED, -1},
        [ST_FAILED] = {ST_RUNNING, ST_FAILED, -1},
        [ST_CANCELLED] = {ST_CANCELLED, -1},
        [ST_INTERRUPTED] = {ST_INTERRUPTED, -1},
    };
    for (int k = 0; k < 3 && path[s][k] >= 0; k++)
        if (store_transition(st, id, path[s][k], &(st_change){.exit_code = -1, .reason = "walk"}, NULL)) return -1;
    return 0;
}

static long count_events(const char *db, const char *id) {
    sqlite3 *h;
    sqlite3_stmt *q;
    long n = -1;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(h, "SELECT COUNT(*), MAX(seq), MIN(seq) FROM events WHERE run=?", -1, &q, NULL) == SQLITE_OK) {
        sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
        if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_int64(q, 0) == sqlite3_column_int64(q, 1) &&
            (sqlite3_column_int64(q, 0) == 0 || sqlite3_column_int64(q, 2) == 1))
            n = (long)sqlite3_column_int64(q, 0); /* gap-free 1..n, or -1 */
        sqlite3_finalize(q);
    }
    sqlite3_close(h);
    return n;
}

static int seen_status(void *user, long seq, double ts, const char *type, const char *data) {
    char *last = user;
    if (!strcmp(type, "status")) snprintf(last, 256, "%s", data);
    return 0;
}

static int count_one(void *user, const run_rec *r) {
    (*(int *)user)++;
    return 0;
}

static int art_one(void *user, const art_rec *a) {
    (*(int *)user)++;
    return 0;
}

/* Inserts run id of workspace ws with key idem (may be "") as store_insert does (0 on success). */
static int put(store *st, const char *id, const char *ws, const char *idem, run_rec *r, int *existed) {
    memset(r, 0, sizeof *r);
    snprintf(r->id, sizeof r->id, "%s", id);
    snprintf(r->verb, sizeof r->verb, "fake");
    snprintf(r->request, sizeof r->request, "{}");
    snprintf(r->ws, sizeof r->ws, "%s", ws);
    snprintf(r->idem, sizeof r->idem, "%s", idem);
    return store_insert(st, r, NULL, existed);
}

static const char QWS[] = "0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c";
typedef struct {
    store *st;
    int i, rc;
} racer;

static void *race(void *arg) { /* one submission of workspace QWS under a pending quota of 3 */
    racer *a = arg;
    run_rec r = {0};
    snprintf(r.id, sizeof r.id, "rq%02d", a->i);
    snprintf(r.verb, sizeof r.verb, "fake");
    snprintf(r.request, sizeof r.request, "{}");
    snprintf(r.ws, sizeof r.ws, "%s", QWS);
    int e = 0;
    a->rc = store_insert(a->st, &r, &(store_quota){.pending = 3}, &e);
    return NULL;
}

/* Quotas are counted in the transaction that inserts: of 8 submissions at once under a pending
 * quota of 3, exactly 3 are stored; a refusal writes nothing; a repeated key is never refused. */
static void quotas(store *st) {
    racer a[8];
    pthread_t th[8];
    for (int i = 0; i < 8; i++) {
        a[i] = (racer){st, i, -9};
        pthread_create(&th[i], NULL, race, &a[i]);
    }
    int stored = 0, refused = 0;
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        stored += a[i].rc == 0;
        refused += a[i].rc == STORE_PENDING_QUOTA;
    }
    CHECK(stored == 3 && refused == 5 && store_count(st, QWS, -1) == 3, "8 at once under a pending quota of 3: %d stored, %d refused, %d in the store",
          stored, refused, store_count(st, QWS, -1));
    run_rec r = {0};
    snprintf(r.id, sizeof r.id, "rq-key");
    snprintf(r.request, sizeof r.request, "{}");
    snprintf(r.ws, sizeof r.ws, "%s", QWS);
    snprintf(r.idem, sizeof r.idem, "qk");
    int e = 0;
    CHECK(store_insert(st, &r, &(store_quota){.pending = 3}, &e) == STORE_PENDING_QUOTA && store_count(st, QWS, -1) == 3,
          "a fourth pending run is refused and nothing is written");
    CHECK(store_insert(st, &r, &(store_quota){.pending = 4}, &e) == 0 && !e, "with room, it is stored");
    run_rec again = r;
    snprintf(again.id, sizeof again.id, "rq-key2");
    CHECK(store_insert(st, &again, &(store_quota){.pending = 1, .runs = 1}, &e) == 0 && e && !strcmp(again.id, "rq-key"),
          "its key again at both quotas: the same run (%s), not a refusal", again.id);
    snprintf(again.id, sizeof again.id, "rq-key2");
    snprintf(again.idem, sizeof again.idem, "qk2");
    CHECK(store_insert(st, &again, &(store_quota){.runs = 4}, &e) == STORE_RUN_QUOTA, "a fifth run under a run quota of 4");
    store_transition(st, "rq-key", ST_CANCELLED, &(st_change){.exit_code = -1}, NULL);
    int all = store_pending(st, NULL);
    snprintf(again.ws, sizeof again.ws, "0d0d");
    CHECK(all >= 3 && store_insert(st, &again, &(store_quota){.queue = all}, &e) == STORE_QUEUE_FULL,
          "another workspace's run with %d pending in all under a queue limit of as many", all);
    snprintf(again.ws, sizeof again.ws, "%s", QWS);
    CHECK(store_insert(st, &again, &(store_quota){.pending = 4, .runs = 5, .queue = all + 1}, &e) == 0 && !e,
          "a pending slot freed by a cancel, under a run quota of 5: stored");
}

/* Workspaces: a run is found in its own only; one key makes a run in each; lists and counts are
 * a workspace's own (NULL: all); deleting one removes its runs, events and artifacts only. */
static void workspaces(store *st) {
    run_rec r, got;
    int e = 0;
    static const char A[] = "0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a", B[] = "0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b";
    CHECK(!put(st, "rwsa1", A, "k", &r, &e) && !e && !strcmp(r.ws, A), "a run of A");
    CHECK(!put(st, "rwsb1", B, "k", &r, &e) && !e && !strcmp(r.id, "rwsb1"), "B's key k is not A's: a new run (%s)", r.id);
    CHECK(!put(st, "rwsa2", A, "k", &r, &e) && e && !strcmp(r.id, "rwsa1"), "A's key k again: A's run (%s)", r.id);
    CHECK(!put(st, "rwsl1", "", "k", &r, &e) && !e && !strcmp(r.id, "rwsl1"), "the local workspace's key k: a new run");
    CHECK(store_get_ws(st, A, "rwsa1", &got) == 0 && !strcmp(got.ws, A), "A's run in A");
    CHECK(store_get_ws(st, B, "rwsa1", &got) == 1, "A's run is not found in B");
    CHECK(store_get_ws(st, "", "rwsa1", &got) == 1 && store_get_ws(st, NULL, "rwsa1", &got) == 1,
          "A's run is not found in the local workspace");
    CHECK(store_get(st, "rwsa1", &got) == 0, "store_get finds any workspace's run");
    int n = 0;
    long total = -1;
    CHECK(!store_list(st, B, -1, 100, 0, count_one, &n, &total) && n == 1 && total == 1, "B lists its one run (%d, %ld)", n,
          total);
    n = 0;
    store_list(st, A, ST_QUEUED, 100, 0, count_one, &n, &total);
    CHECK(n == 1 && total == 1, "A lists its one queued run");
    CHECK(store_count(st, A, ST_QUEUED) == 1 && store_count(st, B, -1) == 1 && store_count(st, NULL, ST_QUEUED) >= 3 &&
              store_count(st, "", ST_QUEUED) == store_count(st, NULL, ST_QUEUED) - 2,
          "counts per workspace");
    st_event ev = {1.0, "progress", "{}"};
    art_rec art = {.id = "a1", .name = "x", .kind = "file", .rel = "x", .sha256 = "0", .size = 1};
    CHECK(!store_append(st, "rwsa1", &ev, 1, 0, -1, 0, 0, 0, 0, 0) && !store_add_artifact(st, "rwsa1", &art) &&
              !store_add_artifact(st, "rwsb1", &art),
          "events and artifacts of A and B");
    CHECK(!store_delete_ws(st, A), "delete A");
    int arts = 0;
    store_artifacts(st, "rwsa1", art_one, &arts);
    char last[256] = "";
    store_events(st, "rwsa1", 0, 1000, seen_status, last);
    CHECK(store_get(st, "rwsa1", &got) == 1 && store_count(st, A, -1) == 0 && !arts && !last[0],
          "A's run, events and artifacts are gone");
    arts = 0;
    store_artifacts(st, "rwsb1", art_one, &arts);
    CHECK(store_get_ws(st, B, "rwsb1", &got) == 0 && arts == 1 && store_get(st, "rwsl1", &got) == 0,
          "B's run and artifact and the local run are left");
    CHECK(!put(st, "rwsa3", A, "k", &r, &e) && !e && !strcmp(r.id, "rwsa3"), "A's key k is free again after the delete");
    CHECK(store_pending(st, B) == 1, "B has one pending run");
    store_transition(st, "rwsb1", ST_RUNNING, &(st_change){.exit_code = -1}, NULL);
    CHECK(store_pending(st, B) == 1, "running is pending too");
    store_transition(st, "rwsb1", ST_SUCCEEDED, &(st_change){.exit_code = 0}, NULL);
    CHECK(store_pending(st, B) == 0 && store_pending(st, A) == 1, "a finished run is not pending; A's new one is");
}

/* A schema 1 database (the runs table before workspaces: idem unique over all runs) opens as
 * schema 2 with its runs, events and artifacts, each run the local workspace's. */
static void migration(const char *dir) {
    char db[4200], err[1024];
    snprintf(db, sizeof db, "%s/v1.db", dir);
    sqlite3 *h;
    CHECK(sqlite3_open(db, &h) == SQLITE_OK &&
              sqlite3_exec(h,
                           "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
                           "INSERT INTO meta VALUES('schema_version','1');"
                           "CREATE TABLE runs(id TEXT PRIMARY KEY, n INTEGER NOT NULL, status INTEGER NOT NULL,"
                           " verb TEXT NOT NULL, dataset TEXT NOT NULL, request TEXT NOT NULL, idem TEXT UNIQUE, parent TEXT,"
                           " created REAL NOT NULL, started REAL, finished REAL, updated REAL NOT NULL, heartbeat REAL,"
                           " reason_code TEXT, reason TEXT, err_code TEXT, err_msg TEXT, err_field TEXT, wait_reason TEXT,"
                           " pid INTEGER, pid_start INTEGER, exit_code INTEGER, last_seq INTEGER NOT NULL DEFAULT 0,"
                           " offset INTEGER NOT NULL DEFAULT 0, epoch INTEGER NOT NULL DEFAULT 0, epochs INTEGER NOT NULL DEFAULT 0,"
                           " steps_done INTEGER NOT NULL DEFAULT 0, steps INTEGER NOT NULL DEFAULT 0, skipped INTEGER NOT NULL DEFAULT 0);"
                           "CREATE INDEX runs_status ON runs(status, n);"
                           "CREATE TABLE events(run TEXT NOT NULL, seq INTEGER NOT NULL, ts REAL NOT NULL,"
                           " type TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY(run, seq)) WITHOUT ROWID;"
                           "CREATE TABLE artifacts(run TEXT NOT NULL, id TEXT NOT NULL, name TEXT NOT NULL,"
                           " kind TEXT NOT NULL, rel TEXT NOT NULL, size INTEGER NOT NULL, sha256 TEXT NOT NULL, PRIMARY KEY(run, id));"
                           "INSERT INTO runs(id, n, status, verb, dataset, request, idem, created, updated, last_seq, epochs)"
                           " VALUES('rold', 1, 3, 'train-pa', 'synth', '{}', 'key-old', 10, 20, 2, 5);"
                           "INSERT INTO events VALUES('rold', 1, 10, 'status', '{}'), ('rold', 2, 20, 'status', '{}');"
                           "INSERT INTO artifacts VALUES('rold', 'a1', 'x', 'file', 'x', 1, '0');",
                           NULL, NULL, NULL) == SQLITE_OK,
          "a schema 1 database: %s", sqlite3_errmsg(h));
    sqlite3_close(h);
    store *st = store_open(db, err, sizeof err);
    CHECK(st != NULL, "schema 1 opens: %s", err);
    if (!st) return;
    run_rec r;
    int arts = 0, e = 0;
    store_artifacts(st, "rold", art_one, &arts);
    CHECK(store_get_ws(st, "", "rold", &r) == 0 && r.status == ST_SUCCEEDED && r.last_seq == 2 && r.epochs == 5 &&
              !strcmp(r.idem, "key-old") && count_events(db, "rold") == 2 && arts == 1,
          "the run, its events and artifact are there, in the local workspace");
    CHECK(!put(st, "rnew", "", "key-old", &r, &e) && e && !strcmp(r.id, "rold"), "its key still names it");
    CHECK(!put(st, "rnew2", "0c", "key-old", &r, &e) && !e, "the key is free in another workspace");
    store_close(st);
    CHECK(sqlite3_open(db, &h) == SQLITE_OK, "reopen");
    sqlite3_stmt *q;
    sqlite3_prepare_v2(h, "SELECT value FROM meta WHERE key='schema_version'", -1, &q, NULL);
    CHECK(sqlite3_step(q) == SQLITE_ROW && !strcmp((const char *)sqlite3_column_text(q, 0), "2"), "schema_version is 2");
    sqlite3_finalize(q);
    sqlite3_close(h);
}


/* store_utf8_fix: every byte outside a well-formed UTF-8 sequence becomes '?' (overlong forms,
 * surrogates and code points above U+10FFFF included), and jansson then takes the text. */
static void utf8(void) {
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"plain ascii", "plain ascii"},
        {"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80", "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"},
        {"G\xC0\xABx", "G??x"},         /* an overlong "+" */
        {"\xE0\x80\xAF", "???"},        /* an overlong "/" in three bytes */
        {"\xED\xA0\x80", "???"},        /* a UTF-16 surrogate */
        {"\xF4\x90\x80\x80", "????"},  /* above U+10FFFF */
        {"G\xF5\xBA\x8Ct", "G???t"},    /* no lead byte above F4 */
        {"\xC3", "?"},                    /* cut short */
        {"\xE2\x82", "??"},
        {"\xFF\xFE ok \x80", "?? ok ?"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char buf[64];
        snprintf(buf, sizeof buf, "%s", cases[i].in);
        store_utf8_fix(buf);
        json_t *j = json_string(buf);
        CHECK(!strcmp(buf, cases[i].out) && j, "utf8 case %zu: '%s' (jansson %s)", i, buf, j ? "takes it" : "refuses it");
        json_decref(j);
    }
}

int main(void) {
    utf8();
    char db[4200], err[1024];
    snprintf(db, sizeof db, "%s/studio.db", check_tmpdir());
    store *st = store_open(db, err, sizeof err);
    CHECK(st != NULL, "open: %s", err);
    if (!st) return check_done("store");

    /* the table itself */
    for (int a = 0; a < ST_COUNT; a++)
        for (int b = 0; b < ST_COUNT; b++)
            CHECK(store_transition_ok(a, b) == legal[a][b], "%s -> %s", store_status_name(a), store_status_name(b));

    /* every pair on the database: a legal change writes the status and one event; an illegal
     * one is refused and writes nothing */
    int n = 0;
    for (int a = 0; a < ST_COUNT; a++)
        for (int b = 0; b < ST_COUNT; b++) {
            run_rec r = {0};
            snprintf(r.id, sizeof r.id, "r%04x", n++);
            snprintf(r.verb, sizeof r.verb, "fake");
            snprintf(r.dataset, sizeof r.dataset, "synth");
            snprintf(r.request, sizeof r.request, "{}");
            int existed = 1;
            CHECK(!store_insert(st, &r, NULL, &existed) && !existed && r.status == ST_QUEUED && r.last_seq == 1, "insert");
            CHECK(!walk(st, r.id, a), "walk to %s", store_status_name(a));
            run_rec before, after;
            store_get(st, r.id, &before);
            int rc = store_transition(st, r.id, b,
                                      &(st_change){.exit_code = -1, .reason_code = "x", .reason = "pair", .pid = 42}, &after);
            store_get(st, r.id, &after);
            if (legal[a][b]) {
                char last[256] = "";
                store_events(st, r.id, 0, 1000, seen_status, last);
                char want[256];
                snprintf(want, sizeof want, "{\"from\":\"%s\",\"to\":\"%s\",\"reason\":\"pair\"}", store_status_name(a),
                         store_status_name(b));
                CHECK(rc == 0 && after.status == b && after.last_seq == before.last_seq + 1 && !strcmp(last, want),
                      "%s -> %s: rc %d status %s seq %ld/%ld event %s", store_status_name(a), store_status_name(b), rc,
                      store_status_name(after.status), after.last_seq, before.last_seq, last);
                CHECK(!store_terminal(b) || after.finished > 0, "%s: terminal without finished_at", store_status_name(b));
                CHECK(b != ST_RUNNING || (after.started > 0 && after.pid == 42), "running without started_at or pid");
            } else {
                CHECK(rc == 1 && after.status == a && after.last_seq == before.last_seq && after.pid == before.pid &&
                          !strcmp(after.reason_code, before.reason_code),
                      "%s -> %s was not refused cleanly (rc %d)", store_status_name(a), store_status_name(b), rc);
            }
            CHECK(count_events(db, r.id) == after.last_seq, "%s: events not gap-free 1..%ld", r.id, after.last_seq);
        }

    /* a late success cannot overwrite cancelled */
    run_rec r = {0}, got;
    int existed;
    snprintf(r.id, sizeof r.id, "rlate");
    snprintf(r.verb, sizeof r.verb, "fake");
    snprintf(r.request, sizeof r.request, "{}");
    store_insert(st, &r, NULL, &existed);
    store_transition(st, r.id, ST_RUNNING, &(st_change){.exit_code = -1}, NULL);
    store_transition(st, r.id, ST_CANCEL_REQUESTED, &(st_change){.exit_code = -1}, NULL);
    store_transition(st, r.id, ST_CANCELLED, &(st_change){.exit_code = -1}, NULL);
    CHECK(store_transition(st, r.id, ST_SUCCEEDED, &(st_change){.exit_code = 0}, &got) == 1 && got.status == ST_CANCELLED,
          "a late succeeded overwrote cancelled");

    /* events: appended with the next seqs, progress in the same transaction */
    st_event ev[3] = {{1.0, "progress", "{\"epoch\":1}"}, {2.0, "metric", "{}"}, {3.0, "heartbeat", "{}"}};
    store_get(st, r.id, &got);
    long seq0 = got.last_seq;
    CHECK(!store_append(st, r.id, ev, 3, 1234, 1, 5, 7, 9, 99.0, 2), "append");
    store_get(st, r.id, &got);
    CHECK(got.last_seq == seq0 + 3 && got.offset == 1234 && got.epoch == 1 && got.epochs == 5 && got.steps_done == 7 &&
              got.steps == 9 && got.heartbeat == 99.0 && got.skipped == 2,
          "append: seq %ld offset %lld epoch %d", got.last_seq, got.offset, got.epoch);
    CHECK(count_events(db, r.id) == got.last_seq, "events after append not gap-free");

    /* idempotency: the second insert with the key returns the first run */
    run_rec a = {0}, b = {0};
    snprintf(a.id, sizeof a.id, "ridem1");
    snprintf(b.id, sizeof b.id, "ridem2");
    snprintf(a.idem, sizeof a.idem, "key-1");
    snprintf(b.idem, sizeof b.idem, "key-1");
    snprintf(a.request, sizeof a.request, "{}");
    snprintf(b.request, sizeof b.request, "{}");
    int e1 = 1, e2 = 0;
    CHECK(!store_insert(st, &a, NULL, &e1) && !e1, "first insert");
    CHECK(!store_insert(st, &b, NULL, &e2) && e2 && !strcmp(b.id, "ridem1"), "idempotent insert gave %s", b.id);
    CHECK(store_get(st, "ridem2", &got) == 1, "the repeated submission made a run");

    /* FIFO: the oldest queued first (r0000, whose queued -> queued was refused) */
    CHECK(!store_oldest_queued(st, &got) && !strcmp(got.id, "r0000"), "oldest queued: %s", got.id);
    workspaces(st);
    quotas(st);
    store_close(st);
    migration(check_tmpdir());

    /* a database of another schema version is refused, and left as it was */
    sqlite3 *h;
    sqlite3_open(db, &h);
    sqlite3_exec(h, "UPDATE meta SET value='99' WHERE key='schema_version'", NULL, NULL, NULL);
    sqlite3_close(h);
    st = store_open(db, err, sizeof err);
    CHECK(!st && strstr(err, "schema version 99") && strstr(err, "needs 2"), "schema 99 accepted: %s", err);
    store_close(st);
    sqlite3_open(db, &h);
    sqlite3_stmt *q;
    sqlite3_prepare_v2(h, "SELECT value FROM meta WHERE key='schema_version'", -1, &q, NULL);
    CHECK(sqlite3_step(q) == SQLITE_ROW && !strcmp((const char *)sqlite3_column_text(q, 0), "99"), "schema row changed");
    sqlite3_finalize(q);
    sqlite3_close(h);
    return check_done("store");
}
