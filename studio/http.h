/* http: the request boundary of the studio (http.c) and the routes behind it (api.c). http.c
 * owns the daemon, the checks every request passes (Host, authentication, CSRF, body size and
 * type), the one error shape and the headers of every response, and the event-stream plumbing;
 * api.c answers the routes of docs/studio.md with the store and the supervisor. */
#ifndef DPD_STUDIO_HTTP_H
#define DPD_STUDIO_HTTP_H

#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>

#include "job.h"
#include "public.h"
#include "studio.h"

typedef struct req {
    struct MHD_Connection *con;
    const char *method, *path;
    char *body;
    size_t len, cap, limit;
    int too_large;
    int refused;   /* a response has been queued */
    http *h;
    const char *ws; /* the requester's workspace (run_rec.ws): "" the local one, or sess.ws */
    pub_hold sess;  /* public mode: the session this request holds (released when it is done) */
    int retry_after; /* > 0: the answer says Retry-After (seconds) */
    int cors;        /* public mode: the request comes from the configured --origin */
    double t0;       /* when its headers came (studio_mono): the body's deadline counts from here */
    char ip[48];     /* public mode: the client IP key whose in-flight count it holds ("": none) */
    int counted;     /* public mode: it holds one of the server's in-flight requests */
    double cut_at;   /* public mode: > 0 while a deadline holds (its body by then, or a download's end), studio_mono() */
    int watched;     /* public mode: in the server's list of requests with deadlines */
    char allow[48];  /* a 405's Allow header: the path's methods (http_allow) */
} req;

/* What api.c sees of the server. */
struct http {
    studio_opts o;
    store *st;
    super *sv;
    pub *pub; /* public mode's sessions; NULL in local mode */
    struct MHD_Daemon *d;
    int port;
    int refuse_writes;
    double started;
    pthread_mutex_t mu; /* sessions, bootstrap, dataset creation and cache, stream list */
    /* datasets already loaded once, by directory and a stamp of its files (api.c) */
    struct {
        char dir[4400];
        unsigned long long stamp;
        job_data d;
    } cache[32];
    int cache_next;
};

enum MHD_Result http_json(req *r, unsigned status, json_t *body); /* steals body */
/* Adds method (GET: and HEAD) to r's Allow, once: for a 405 when r's method is not one of its path's. */
void http_allow(req *r, const char *method);

enum MHD_Result http_error(req *r, unsigned status, const char *code, const char *field, const char *hint,
                           const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* Adds the headers every response carries and queues it. */
enum MHD_Result http_queue(req *r, unsigned status, struct MHD_Response *resp);
/* Public mode: r's answer, just queued, is a download: once it has taken o.download_s seconds its
 * connection is cut (a slow reader holds its session, and with it the session's files, no longer). */
void http_download(req *r);
/* A server-sent event stream of run id from after `after`. */
enum MHD_Result http_stream(req *r, const char *id, long after);
const char *http_arg(req *r, const char *name);   /* a query argument, or NULL */
/* 1, with a 422 invalid_query queued in *rc naming it and what route ("GET /api/v1/runs") takes,
 * when one of r's query arguments is not one of query ("a, b": names in any case, as
 * libmicrohttpd finds them; "" for none): said, never ignored (a filter that is not one would
 * list everything); else 0. */
int http_query_refused(req *r, const char *query, const char *route, enum MHD_Result *rc);
/* r's body as a JSON object (guarded, duplicates refused), or NULL with a 422 invalid_json queued
 * in *rc. */
json_t *http_body_json(req *r, enum MHD_Result *rc);
const char *http_header(req *r, const char *name);
/* Whether the data root's file system has less than o.reserve_mb free (public mode: then no new
 * session or run is taken, 507 storage_busy). */
int http_disk_low(http *h);

/* api.c: answers an authenticated request (path split into seg[0..n)), through its one table of
 * routes, each with the modes that serve it. */
enum MHD_Result api_route(req *r, char **seg, int n);
/* 1 when s may name a dataset (of a --data directory, or an upload's): one path component of
 * letters, digits, '_', '-' and '.', not starting with '.', at most 64 bytes. */
int api_dataset_name(const char *s);
/* 1 when r's method and the path seg[0..n) (after /api/v1/) name a route public mode does not serve. */
int api_local_only(const req *r, char **seg, int n);
void api_routes_print(FILE *f); /* the table, a JSON object a line: method, path, modes */
/* Every route, the boundary's own (health, sign-in, public sessions) then api.c's: dpd serve --routes. */
void http_routes_print(FILE *f);
/* The run object of docs/studio.md; detail adds `available` (it reads the run's files). */
json_t *api_run_json(http *h, const run_rec *rec, int detail);

#endif
