/* public: anonymous sessions and tokens (public.h). */
#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "public.h"
#include "studio.h"

/* ---- tokens ---- */

void token_digest(const void *p, size_t n, unsigned char out[32]) {
    unsigned int k = 32;
    EVP_Digest(p, n, out, &k, EVP_sha256(), NULL);
}

int token_new(char *out, size_t n) {
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    unsigned char raw[33] = {0};
    if (n < TOKEN_LEN + 1 || getrandom(raw, 32, 0) != 32) return -1;
    size_t j = 0;
    for (int i = 0; i < 33; i += 3) {
        unsigned v = (unsigned)raw[i] << 16 | (unsigned)raw[i + 1] << 8 | raw[i + 2];
        for (int k = 0; k < 4 && j < TOKEN_LEN; k++) out[j++] = b64[(v >> (18 - 6 * k)) & 63];
    }
    out[j] = 0;
    OPENSSL_cleanse(raw, sizeof raw);
    return 0;
}

int token_is(const unsigned char want[32], const char *given, size_t n) {
    unsigned char d[32];
    token_digest(given, n, d);
    return CRYPTO_memcmp(d, want, 32) == 0;
}

/* ---- sessions ---- */

/* A token bucket: tokens at time t. */
typedef struct bucket {
    double tokens, t;
} bucket;

/* Takes one token from b (a burst of `burst`, `rate` a second; fresh: full) at now: 0, or the
 * seconds until one is there. */
static double take(bucket *b, double rate, double burst, double now) {
    if (rate <= 0) return 0;
    b->tokens = b->t > 0 ? b->tokens + (now - b->t) * rate : burst;
    if (b->tokens > burst) b->tokens = burst;
    b->t = now;
    if (b->tokens >= 1) {
        b->tokens -= 1;
        return 0;
    }
    return (1 - b->tokens) / rate;
}

#define IP_KEYS 1024 /* the client IP keys tracked at once: the least recently seen is forgotten */

typedef struct ip_key {
    char ip[48];
    double seen;  /* when a request of it last came (the least recent idle key is forgotten first) */
    bucket b;     /* its new sessions */
    int inflight; /* its requests being answered (a key in use is never forgotten) */
    int runs;     /* runs submitted from it */
} ip_key;

typedef struct session {
    unsigned char digest[32];
    char ws[49];
    double expires, idle_expires; /* idle_expires 0: no inactivity lease */
    int used;
    int closing; /* its lease is over (or it was ended): requests get 401, the janitor ends it */
    int refs;    /* requests in flight (a download holds one until its last byte) */
    bucket rate; /* its requests */
    int mutating; /* a change of it is in progress */
    char ip[48];  /* the client IP key that created it (memory only) */
    long long bytes; /* its directory's size as last measured (-1: not yet) */
    double scanned;  /* then (monotonic seconds) */
    int over;        /* over its storage quota: its runs were ended, it takes no more */
    int stuck;       /* ended, but its directory could not be removed (tried at every sweep) */
} session;

struct pub {
    char root[4096];
    int lease_s, idle_s, max;
    pub_limits lim;
    ip_key ips[IP_KEYS];
    store *st;
    super *sv;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t janitor;
    int stopping, started;
    int next_scan; /* the slot the next storage scan starts at (a rotation) */
    int stuck;     /* sessions whose directory could not be removed */
    long long offset_ms; /* the test clock's advance (pub_advance; atomic) */
    session *s;    /* (max) */
};

#define JANITOR_MS 500

double pub_now(pub *p) {
    return studio_now() + (p ? (double)__atomic_load_n(&p->offset_ms, __ATOMIC_ACQUIRE) / 1000 : 0);
}

void pub_advance(pub *p, double s) {
    pthread_mutex_lock(&p->mu);
    __atomic_add_fetch(&p->offset_ms, (long long)(s * 1000), __ATOMIC_ACQ_REL);
    pthread_cond_signal(&p->cv); /* a sweep at the new time, now */
    pthread_mutex_unlock(&p->mu);
}

static int over(const session *x, double now) { return now >= x->expires || (x->idle_expires > 0 && now >= x->idle_expires); }

/* Ends session k (closing, under p->mu): its runs stopped, then, once none will change and no
 * request holds it, its runs gone from the store, its directory removed and its slot freed. The
 * work outside the lock: the lock is taken again to free the slot. */
static void end_one(pub *p, int k) {
    char ws[49], dir[4200];
    snprintf(ws, sizeof ws, "%s", p->s[k].ws);
    pthread_mutex_unlock(&p->mu);
    int busy = super_end_ws(p->sv, ws, SUPER_SESSION_ENDED);
    pthread_mutex_lock(&p->mu);
    if (busy || p->s[k].refs) return; /* the next sweep */
    pthread_mutex_unlock(&p->mu);
    int bad = store_delete_ws(p->st, ws);
    snprintf(dir, sizeof dir, "%s/sessions/%s", p->root, ws);
    struct stat st;
    if (!bad) studio_rmtree(dir);
    int left = !bad && !lstat(dir, &st); /* something in it could not be removed */
    if (left && !p->s[k].stuck) fprintf(stderr, "dpd studio: an ended session's directory cannot be removed: %s\n", dir);
    pthread_mutex_lock(&p->mu);
    if (p->s[k].stuck != left) p->stuck += left ? 1 : -1;
    p->s[k].stuck = left;
    if (bad || left) return; /* tried again at the next sweep */
    OPENSSL_cleanse(&p->s[k], sizeof p->s[k]);
    memset(&p->s[k], 0, sizeof p->s[k]);
}

#define SCAN_BATCH 16 /* sessions measured in one sweep, at most */

/* Measures the storage of the sessions not measured for PUB_SCAN_S (SCAN_BATCH at most, in
 * rotation), under p->mu, the measuring outside it; one over the quota has its runs ended. */
static void scan(pub *p) {
    if (!p->lim.quota) return;
    int k[SCAN_BATCH], n = 0;
    char ws[SCAN_BATCH][49];
    double t = studio_mono();
    for (int i = 0, start = p->next_scan; i < p->max && n < SCAN_BATCH; i++) {
        int j = (start + i) % p->max;
        session *x = &p->s[j];
        if (!x->used || x->closing || (x->bytes >= 0 && t - x->scanned < PUB_SCAN_S)) continue;
        k[n] = j, snprintf(ws[n++], sizeof ws[0], "%s", x->ws);
        p->next_scan = (j + 1) % p->max;
    }
    for (int i = 0; i < n; i++) {
        char dir[4200];
        long long bytes = 0;
        snprintf(dir, sizeof dir, "%s/sessions/%s", p->root, ws[i]);
        pthread_mutex_unlock(&p->mu);
        int rc = studio_du(dir, PUB_SCAN_ENTRIES, &bytes);
        pthread_mutex_lock(&p->mu);
        session *x = &p->s[k[i]];
        if (rc < 0 || !x->used || strcmp(x->ws, ws[i])) continue; /* ended meanwhile */
        x->bytes = bytes, x->scanned = studio_mono();
        if (rc == 0 && bytes <= p->lim.quota) continue;
        int first = !x->over;
        x->over = 1;
        pthread_mutex_unlock(&p->mu);
        if (first)
            fprintf(stderr, "dpd studio: a session is over its storage quota (%lld bytes%s): its runs are ended\n", bytes,
                    rc ? ", or too many files" : "");
        super_end_ws(p->sv, ws[i], SUPER_OVER_QUOTA); /* at every measurement: a run that slipped in is ended too */
        pthread_mutex_lock(&p->mu);
    }
}

static void *janitor(void *arg) {
    pub *p = arg;
    pthread_mutex_lock(&p->mu);
    while (!p->stopping) {
        double now = pub_now(p);
        for (int k = 0; k < p->max && !p->stopping; k++) {
            if (!p->s[k].used) continue;
            if (over(&p->s[k], now)) p->s[k].closing = 1;
            if (p->s[k].closing) end_one(p, k);
        }
        if (!p->stopping) scan(p);
        if (!p->stopping) studio_cond_wait_ms(&p->cv, &p->mu, JANITOR_MS);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

pub *pub_open(const char *root, int lease_s, int idle_s, int max, const pub_limits *lim, store *st, super *sv) {
    pub *p = calloc(1, sizeof *p);
    if (!p || !(p->s = calloc((size_t)max, sizeof *p->s))) {
        free(p);
        return NULL;
    }
    snprintf(p->root, sizeof p->root, "%s", root);
    p->lease_s = lease_s, p->idle_s = idle_s, p->max = max, p->lim = *lim, p->st = st, p->sv = sv;
    pthread_mutex_init(&p->mu, NULL);
    studio_cond_init(&p->cv);
    p->started = !pthread_create(&p->janitor, NULL, janitor, p);
    if (!p->started) {
        pub_close(p);
        return NULL;
    }
    return p;
}

void pub_close(pub *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stopping = 1;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    if (p->started) pthread_join(p->janitor, NULL);
    OPENSSL_cleanse(p->s, (size_t)p->max * sizeof *p->s);
    free(p->s);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

int pub_create(pub *p, const char *ip, char token[44], pub_hold *h, char *err, size_t n) {
    unsigned char raw[24];
    char *ws = h->ws;
    h->slot = -1;
    pthread_mutex_lock(&p->mu); /* the address's sessions are counted again as one is taken */
    int mine = 0;
    for (int i = 0; i < p->max; i++) mine += p->s[i].used && !p->s[i].closing && !strcmp(p->s[i].ip, ip);
    pthread_mutex_unlock(&p->mu);
    if (p->lim.ip_sessions > 0 && mine >= p->lim.ip_sessions) return 2;
    if (token_new(token, 44) || getrandom(raw, sizeof raw, 0) != sizeof raw) return snprintf(err, n, "no random bytes"), -1;
    for (int i = 0; i < 24; i++) snprintf(ws + 2 * i, 3, "%02x", raw[i]); /* not derived from the token */
    char dir[4400];
    snprintf(dir, sizeof dir, "%s/sessions/%s", p->root, ws);
    if (mkdir(dir, 0700) || (snprintf(dir, sizeof dir, "%s/sessions/%s/runs", p->root, ws), mkdir(dir, 0700))) {
        snprintf(err, n, "cannot create the session's directory: %s", strerror(errno));
        fprintf(stderr, "dpd studio: cannot create %s: %s\n", dir, strerror(errno)); /* the path for the operator only */
        return -1;
    }
    pthread_mutex_lock(&p->mu);
    session *free_slot = NULL;
    mine = 0;
    for (int i = 0; i < p->max; i++) {
        mine += p->s[i].used && !p->s[i].closing && !strcmp(p->s[i].ip, ip);
        if (!p->s[i].used && !free_slot) free_slot = &p->s[i];
    }
    int full = p->lim.ip_sessions > 0 && mine >= p->lim.ip_sessions;
    if (free_slot && !full) {
        token_digest(token, TOKEN_LEN, free_slot->digest);
        snprintf(free_slot->ws, sizeof free_slot->ws, "%s", ws);
        snprintf(free_slot->ip, sizeof free_slot->ip, "%s", ip);
        double now = pub_now(p);
        free_slot->expires = h->expires = now + p->lease_s;
        free_slot->idle_expires = h->idle_expires = p->idle_s ? now + p->idle_s : 0;
        free_slot->bytes = h->bytes = -1;
        h->over = 0;
        free_slot->used = 1;
    }
    pthread_mutex_unlock(&p->mu);
    if (free_slot && !full) return 0;
    snprintf(dir, sizeof dir, "%s/sessions/%s", p->root, ws);
    studio_rmtree(dir);
    OPENSSL_cleanse(token, 44);
    return full ? 2 : 1;
}

int pub_find(pub *p, const char *given, size_t n, pub_hold *h) {
    if (n != TOKEN_LEN) return 1;
    unsigned char d[32];
    token_digest(given, n, d);
    int rc = 1;
    pthread_mutex_lock(&p->mu);
    double now = pub_now(p);
    for (int i = 0; i < p->max; i++) { /* every slot, each compared in constant time */
        int hit = p->s[i].used & (CRYPTO_memcmp(d, p->s[i].digest, 32) == 0);
        if (hit && rc == 1) {
            if (over(&p->s[i], now)) p->s[i].closing = 1;
            rc = p->s[i].closing ? 2 : p->lim.inflight > 0 && p->s[i].refs >= p->lim.inflight ? 3 : 0;
            if (!rc) {
                snprintf(h->ws, sizeof h->ws, "%s", p->s[i].ws);
                h->expires = p->s[i].expires, h->idle_expires = p->s[i].idle_expires, h->slot = i, h->mutating = 0;
                h->bytes = p->s[i].bytes, h->over = p->s[i].over;
                p->s[i].refs++;
            }
        }
    }
    pthread_mutex_unlock(&p->mu);
    return rc;
}

void pub_release(pub *p, const pub_hold *h) {
    if (!p || h->slot < 0 || h->slot >= p->max) return;
    pthread_mutex_lock(&p->mu);
    if (p->s[h->slot].refs > 0) p->s[h->slot].refs--;
    if (h->mutating) p->s[h->slot].mutating = 0;
    pthread_mutex_unlock(&p->mu);
}

void pub_mutated(pub *p, pub_hold *h) {
    if (!p || !h->mutating || h->slot < 0 || h->slot >= p->max) return;
    pthread_mutex_lock(&p->mu);
    p->s[h->slot].mutating = h->mutating = 0;
    pthread_mutex_unlock(&p->mu);
}

int pub_mutate(pub *p, pub_hold *h) {
    if (!p || h->slot < 0 || h->slot >= p->max) return 0;
    pthread_mutex_lock(&p->mu);
    int busy = p->s[h->slot].mutating;
    if (!busy) p->s[h->slot].mutating = h->mutating = 1;
    pthread_mutex_unlock(&p->mu);
    return busy;
}

double pub_request(pub *p, const pub_hold *h) {
    if (!p || h->slot < 0 || h->slot >= p->max) return 0;
    pthread_mutex_lock(&p->mu);
    double w = take(&p->s[h->slot].rate, p->lim.request_rate, p->lim.request_burst, pub_now(p));
    pthread_mutex_unlock(&p->mu);
    return w;
}

/* The entry of ip (under p->mu), seen now: found, or the least recently seen idle one's place
 * taken, with a full bucket; NULL when every entry has requests in flight. */
static ip_key *key_of(pub *p, const char *ip) {
    ip_key *k = NULL, *oldest = NULL;
    for (int i = 0; i < IP_KEYS && !k; i++) {
        ip_key *e = &p->ips[i];
        if (e->ip[0] && !strcmp(e->ip, ip)) k = e;
        else if (!e->inflight && (!oldest || e->seen < oldest->seen)) oldest = e;
    }
    if (!k && oldest) {
        k = oldest;
        memset(k, 0, sizeof *k);
        snprintf(k->ip, sizeof k->ip, "%s", ip);
    }
    if (k) k->seen = studio_mono();
    return k;
}

double pub_admit_ip(pub *p, const char *ip) {
    pthread_mutex_lock(&p->mu);
    ip_key *k = key_of(p, ip);
    double w = k ? take(&k->b, p->lim.create_rate, p->lim.create_burst, pub_now(p)) : 1;
    pthread_mutex_unlock(&p->mu);
    return w;
}

int pub_ip_enter(pub *p, const char *ip) {
    pthread_mutex_lock(&p->mu);
    ip_key *k = key_of(p, ip);
    int ok = k && (p->lim.ip_inflight <= 0 || k->inflight < p->lim.ip_inflight);
    if (ok) k->inflight++;
    pthread_mutex_unlock(&p->mu);
    return ok ? 0 : -1;
}

void pub_ip_leave(pub *p, const char *ip) {
    if (!p || !ip[0]) return;
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < IP_KEYS; i++)
        if (p->ips[i].ip[0] && !strcmp(p->ips[i].ip, ip) && p->ips[i].inflight > 0) {
            p->ips[i].inflight--;
            break;
        }
    pthread_mutex_unlock(&p->mu);
}

int pub_ip_run(pub *p, const char *ip, int delta) {
    if (!p) return 0;
    pthread_mutex_lock(&p->mu);
    ip_key *k = key_of(p, ip);
    int full = !k || (delta > 0 && p->lim.ip_runs > 0 && k->runs >= p->lim.ip_runs);
    if (!full && (delta > 0 || k->runs > 0)) k->runs += delta;
    pthread_mutex_unlock(&p->mu);
    return full;
}

void pub_activity(pub *p, pub_hold *h) {
    if (!p || h->slot < 0 || h->slot >= p->max) return;
    pthread_mutex_lock(&p->mu);
    session *x = &p->s[h->slot];
    if (p->idle_s && !x->closing) x->idle_expires = pub_now(p) + p->idle_s;
    h->idle_expires = x->idle_expires;
    pthread_mutex_unlock(&p->mu);
}

int pub_over(pub *p, const pub_hold *h) {
    if (!p || h->slot < 0 || h->slot >= p->max) return 0;
    pthread_mutex_lock(&p->mu);
    int over = p->s[h->slot].over;
    pthread_mutex_unlock(&p->mu);
    return over;
}

int pub_stuck(pub *p) {
    if (!p) return 0;
    pthread_mutex_lock(&p->mu);
    int n = p->stuck;
    pthread_mutex_unlock(&p->mu);
    return n;
}

void pub_end(pub *p, int slot) {
    if (!p || slot < 0 || slot >= p->max) return;
    pthread_mutex_lock(&p->mu);
    p->s[slot].closing = 1;
    pthread_cond_signal(&p->cv); /* the janitor's next sweep, now */
    pthread_mutex_unlock(&p->mu);
}
