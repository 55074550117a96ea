/* public: the anonymous sessions of `dpd serve --public` (docs/studio.md "Public mode") and the
 * tokens every part of the boundary uses. A session is a workspace (its runs, ROOT/sessions/WS/)
 * reached with a bearer token: 32 bytes from getrandom(), base64url. The server keeps only the
 * token's SHA-256 and compares digests in constant time; the token itself is handed out once and
 * never written anywhere. Sessions live in memory: a restart ends them all. */
#ifndef DPD_STUDIO_PUBLIC_H
#define DPD_STUDIO_PUBLIC_H

#include <stddef.h>

#include "studio.h"

#define TOKEN_LEN 43 /* base64url of 32 bytes, unpadded */

/* A fresh token (TOKEN_LEN characters and a NUL) into out[n >= 44]. 0, or -1 (no random bytes). */
int token_new(char *out, size_t n);
void token_digest(const void *p, size_t n, unsigned char out[32]); /* SHA-256 */
/* Whether the SHA-256 of given[0, n) is want, compared in constant time. */
int token_is(const unsigned char want[32], const char *given, size_t n);

typedef struct pub pub;

/* The limits of a public server: rates (token buckets: a burst of `burst`, refilled at `rate` a
 * second; 0 rate: no limit), counts, and each session's storage. */
typedef struct pub_limits {
    double create_rate, create_burst;   /* new sessions per client IP key */
    double request_rate, request_burst; /* requests per session */
    int inflight;                       /* requests of one session at once (an event stream is one) */
    int ip_inflight;                    /* requests of one client IP key at once */
    int ip_sessions;                    /* sessions open at once created from one client IP key; 0: no limit */
    int ip_runs;                        /* runs submitted from one client IP key (while it is tracked); 0: no limit */
    long long quota;                    /* bytes a session's directory may take (0: no limit): the janitor
                                         * measures each at most every PUB_SCAN_S seconds; one over it has
                                         * its runs ended (SUPER_OVER_QUOTA) and takes no more */
} pub_limits;

#define PUB_SCAN_S 2.0 /* a session's storage is measured again after this many seconds */
#define PUB_SCAN_ENTRIES 100000 /* a session's directory holding more entries is over its quota */

/* The session table of a public server on root: lease_s, each session's fixed lifetime (use does
 * not extend it); idle_s, its inactivity lease (0: none), renewed only by pub_activity; at most
 * max sessions at once. Its janitor thread ends each session whose lease
 * is over (or that was ended): its runs are stopped through sv (queued ones interrupted, workers
 * killed), and once none will change and no request holds the session (a download keeps it until
 * its last byte), its runs leave st, its directory is removed and its slot is free. NULL when
 * there is no memory or no thread. pub_close stops the janitor (what it has not ended is ended by
 * the next start: sessions live in memory). */
pub *pub_open(const char *root, int lease_s, int idle_s, int max, const pub_limits *lim, store *st, super *sv);
void pub_close(pub *p);

/* What a request knows of its session. */
typedef struct pub_hold {
    char ws[49];         /* its workspace: 48 hex digits */
    double expires;      /* the fixed lease's end, Unix seconds */
    double idle_expires; /* the inactivity lease's end; 0: none */
    int slot;            /* the reference pub_find took, for pub_release; -1: none */
    int mutating;        /* this request holds the session's change lock (pub_mutate) */
    long long bytes;     /* its storage as last measured (-1: not yet) */
    int over;            /* it is over its storage quota: it takes no more runs */
} pub_hold;

/* A new session for the client IP key ip: its token into token[44], its workspace, leases and no
 * slot into h, and its directories ROOT/sessions/WS/runs/ made (0700). 0; 1 when max sessions are
 * open; 2 when ip has its most sessions open (lim.ip_sessions); -1 on an error (why in err). */
int pub_create(pub *p, const char *ip, char token[44], pub_hold *h, char *err, size_t n);
/* The session of token given[0, n): 0 found (h filled, and a reference taken: pub_release(p, h)
 * when the request is done), 1 no such session (or not a token), 2 it is over (a lease,
 * or ended), 3 it has its most requests in flight already (no reference taken). */
int pub_find(pub *p, const char *given, size_t n, pub_hold *h);
/* One request of the session h holds: 0 within its rate, or the seconds to wait (> 0). */
double pub_request(pub *p, const pub_hold *h);
/* One new session asked for from the client IP key ip ("203.0.113.9", or an IPv6 /64's first four
 * groups): 0 within the rate, or the seconds to wait. */
double pub_admit_ip(pub *p, const char *ip);
/* A request of the client IP key ip begins: 0, or -1 when the key has its most in flight (or the
 * table is full of keys in use). pub_ip_leave when it is done. */
int pub_ip_enter(pub *p, const char *ip);
void pub_ip_leave(pub *p, const char *ip);
/* A run submitted from the client IP key ip (delta 1; 0, or 1 when the key has submitted
 * lim.ip_runs already), or one given back (delta -1: it was not stored). The count lives with
 * the key: in memory, among the most recently seen keys. */
int pub_ip_run(pub *p, const char *ip, int delta);
void pub_release(pub *p, const pub_hold *h);
/* A change (a submission, a retry) of the session h holds begins: 0, or 1 when one is already in
 * progress. pub_mutated ends it once its answer is queued (a client that sends the next one after
 * reading the answer is never refused); pub_release too, if it was not. */
int pub_mutate(pub *p, pub_hold *h);
void pub_mutated(pub *p, pub_hold *h);
void pub_end(pub *p, int slot); /* ends the session now (POST /api/v1/web/sessions/end) */
/* The sessions' clock: Unix seconds, wall clock, plus what pub_advance added (p NULL: the wall
 * clock). Leases, rates and the answers' server_time read it. */
double pub_now(pub *p);
/* Moves the sessions' clock s seconds ahead (tests: POST /api/v1/web/test/clock with
 * --test-workers), and sweeps at once. */
void pub_advance(pub *p, double s);
/* Whether the session h holds is over its storage quota now (pub_hold.over is as it was when the
 * request came). */
int pub_over(pub *p, const pub_hold *h);
/* How many ended sessions' directories could not be removed (the janitor tries again at each
 * sweep): while any, the server is unhealthy and takes no new session. */
int pub_stuck(pub *p);
/* Renews the session's inactivity lease (POST /api/v1/web/activity); its new end into h. */
void pub_activity(pub *p, pub_hold *h);

#endif
