/* test_store: the studio's job store (studio/store.c) — the transition table over all 49 pairs
 * on a real database, refusals that write nothing, a status change and its event in one
 * transaction, gap-free event numbers, idempotency keys, the schema version check. */
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
            CHECK(!store_insert(st, &r, &existed) && !existed && r.status == ST_QUEUED && r.last_seq == 1, "insert");
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
    store_insert(st, &r, &existed);
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
    CHECK(!store_insert(st, &a, &e1) && !e1, "first insert");
    CHECK(!store_insert(st, &b, &e2) && e2 && !strcmp(b.id, "ridem1"), "idempotent insert gave %s", b.id);
    CHECK(store_get(st, "ridem2", &got) == 1, "the repeated submission made a run");

    /* FIFO: the oldest queued first (r0000, whose queued -> queued was refused) */
    CHECK(!store_oldest_queued(st, &got) && !strcmp(got.id, "r0000"), "oldest queued: %s", got.id);
    store_close(st);

    /* a database of another schema version is refused, and left as it was */
    sqlite3 *h;
    sqlite3_open(db, &h);
    sqlite3_exec(h, "UPDATE meta SET value='99' WHERE key='schema_version'", NULL, NULL, NULL);
    sqlite3_close(h);
    st = store_open(db, err, sizeof err);
    CHECK(!st && strstr(err, "schema version 99") && strstr(err, "needs 1"), "schema 99 accepted: %s", err);
    store_close(st);
    sqlite3_open(db, &h);
    sqlite3_stmt *q;
    sqlite3_prepare_v2(h, "SELECT value FROM meta WHERE key='schema_version'", -1, &q, NULL);
    CHECK(sqlite3_step(q) == SQLITE_ROW && !strcmp((const char *)sqlite3_column_text(q, 0), "99"), "schema row changed");
    sqlite3_finalize(q);
    sqlite3_close(h);
    return check_done("store");
}
