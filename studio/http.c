/* http: the daemon and the request boundary (http.h). Every request passes, in order: the Host
 * check, the route's authentication (API token or session cookie; CSRF on cookie writes), the
 * body's size and type; then api.c answers it. */
#include "guard.h"
#include "http.h"
#include "public.h"

#include "dpd/dpd.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#define BODY_LIMIT (64 * 1024)
#define UPLOAD_LIMIT (64 * 1024 * 1024)
#define BOOTSTRAP_S 600
#define KEEPALIVE_S 15

/* ---- tokens ---- */

typedef struct sess {
    unsigned char digest[32];
    char csrf[44];
} sess;

typedef struct boundary {
    unsigned char api[32];      /* SHA-256 of ROOT/api-token */
    unsigned char boot[32];     /* SHA-256 of the bootstrap token */
    char boot_text[44];
    int boot_used;              /* the bootstrap token is one-time: one browser session at most */
    sess s;
    int has_session;
} boundary;

typedef struct server {
    http h; /* first: api.c sees the http part */
    boundary b;
    struct sse **streams; /* suspended, waiting for the next tick (room for o.max_streams) */
    int nstreams;
    int watch;            /* epoll set of the parked streams' sockets: a client's end closed or reset */
    int active_streams;   /* open event streams (at most o.max_streams) */
    int inflight;                     /* public mode: requests being answered (atomic) */
    req **watched;                    /* public mode: requests with a deadline (room for o.max_connections) */
    int nwatched;
    int closing;
} server;

static server *srv_of(http *h) { return (server *)h; }

/* The routes the boundary answers itself (the table `own`, with their handlers, below); api.c's
 * table has the rest (dpd serve --routes prints both). A route serves the modes in `modes`
 * (R_TEST: only with --test-workers); `open` ones need no authentication (OPEN_ALL: no admission
 * at all, not even public mode's counting). */
enum { R_LOCAL = 1, R_PUBLIC = 2, R_TEST = 4 };
enum { AUTH, OPEN, OPEN_ALL };
struct own_route {
    const char *method, *path; /* GET serves HEAD too */
    int modes, open;
    enum MHD_Result (*fn)(server *, req *);
    const char *query; /* the query arguments it takes ("a, b"; NULL: none), another one is a 422 */
};
static const struct own_route *own_route(const server *s, req *r, int *other);

/* The API token of ROOT/api-token, made (0600) at the first start. */
static int api_token(server *s, char *err, size_t n) {
    char path[4200], tok[64] = {0};
    snprintf(path, sizeof path, "%s/api-token", s->h.o.root);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 && errno == ENOENT) {
        char tmp[4300];
        snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
        int w = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (w < 0 || token_new(tok, sizeof tok) || write(w, tok, strlen(tok)) != (ssize_t)strlen(tok) || fsync(w) ||
            close(w) || rename(tmp, path)) {
            snprintf(err, n, "%s: cannot write: %s", path, strerror(errno));
            unlink(tmp);
            return -1;
        }
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    }
    struct stat sb;
    ssize_t k = fd >= 0 ? read(fd, tok, sizeof tok - 1) : -1;
    if (fd < 0 || fstat(fd, &sb) || k < 32 || (sb.st_mode & 077)) {
        snprintf(err, n, "%s: %s", path, fd < 0 ? strerror(errno) : (sb.st_mode & 077) ? "readable by others (chmod 600 it)" : "too short");
        if (fd >= 0) close(fd);
        return -1;
    }
    close(fd);
    while (k > 0 && (tok[k - 1] == '\n' || tok[k - 1] == '\r')) k--;
    token_digest(tok, (size_t)k, s->b.api);
    return 0;
}

/* ---- responses ---- */

enum MHD_Result http_queue(req *r, unsigned status, struct MHD_Response *resp) {
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(resp, "X-Frame-Options", "DENY");
    if (!MHD_get_response_header(resp, "Content-Security-Policy")) /* the UI's pages set their own */
        MHD_add_response_header(resp, "Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'");
    if (srv_of(r->h)->h.pub) { /* public mode: answers differ by Origin; the configured one may read them */
        MHD_add_response_header(resp, "Vary", "Origin");
        if (r->cors) {
            MHD_add_response_header(resp, "Access-Control-Allow-Origin", r->h->o.origin);
            MHD_add_response_header(resp, "Access-Control-Expose-Headers", "Retry-After, Content-Disposition");
        }
    }
    if (r->retry_after > 0) {
        char v[16];
        snprintf(v, sizeof v, "%d", r->retry_after);
        MHD_add_response_header(resp, "Retry-After", v);
    }
    enum MHD_Result rc = MHD_queue_response(r->con, status, resp);
    MHD_destroy_response(resp);
    r->refused = 1;
    return rc;
}

/* What a public request holds (its session, its address's and the server's in-flight counts),
 * given back once: when a whole answer is queued (a client that sends its next request as soon as
 * it has read one is never counted twice), or in on_done for an answer that goes on (an event
 * stream, a download). */
static void settle(server *s, req *r) {
    pub_release(s->h.pub, &r->sess);
    r->sess.slot = -1, r->sess.mutating = 0;
    pub_ip_leave(s->h.pub, r->ip);
    r->ip[0] = 0;
    if (r->counted) __atomic_sub_fetch(&s->inflight, 1, __ATOMIC_ACQ_REL);
    r->counted = 0;
}

enum MHD_Result http_json(req *r, unsigned status, json_t *body) {
    if (body && r->h->o.public_mode) studio_hide_paths(body, &r->h->o); /* a session reads no server path */
    char *s = body ? json_dumps(body, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(body);
    if (!s) { /* a NULL body: a json_pack that failed (out of memory, or text that is not UTF-8) */
        fprintf(stderr, "dpd studio: %s %s: the answer could not be built\n", r->method, r->path);
        s = strdup("{\"error\":{\"code\":\"service_error\",\"message\":\"the answer could not be built\",\"field\":null,\"hint\":null}}");
        status = 500;
    }
    if (!s) return MHD_NO;
    struct MHD_Response *resp = MHD_create_response_from_buffer(strlen(s), s, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(s);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", "application/json");
    if (status == 405) MHD_add_response_header(resp, "Allow", r->allow); /* RFC 9110 */
    enum MHD_Result v = http_queue(r, status, resp);
    settle(srv_of(r->h), r); /* the whole answer is queued */
    return v;
}

enum MHD_Result http_error(req *r, unsigned status, const char *code, const char *field, const char *hint,
                           const char *fmt, ...) {
    char msg[1400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    store_utf8_fix(msg); /* file names and loader messages may hold any bytes; JSON text is UTF-8 */
    return http_json(r, status, json_pack("{s:{s:s, s:s, s:s?, s:s?}}", "error", "code", code, "message", msg, "field",
                                          field && field[0] ? field : NULL, "hint", hint));
}

const char *http_arg(req *r, const char *name) { return MHD_lookup_connection_value(r->con, MHD_GET_ARGUMENT_KIND, name); }
/* The first query argument of r that is not one of `query` (http_query_refused). */
typedef struct unknown_arg {
    const char *query;
    char *name;
    size_t n;
} unknown_arg;

static enum MHD_Result not_taken(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
    unknown_arg *u = cls;
    size_t n = strlen(key);
    int taken = 0;
    for (const char *p = u->query; *p && !taken; p += strcspn(p, ",") + (p[strcspn(p, ",")] ? 2 : 0))
        taken = n && strcspn(p, ",") == n && !strncasecmp(p, key, n);
    if (!taken && !u->name[0]) snprintf(u->name, u->n, "%s", key);
    return MHD_YES;
}

int http_query_refused(req *r, const char *query, const char *route, enum MHD_Result *rc) {
    char name[72] = "";
    unknown_arg u = {query, name, sizeof name};
    MHD_get_connection_values(r->con, MHD_GET_ARGUMENT_KIND, not_taken, &u);
    if (!name[0]) return 0;
    *rc = http_error(r, 422, "invalid_query", name, query[0] ? "see docs/studio.md for the route's arguments" : NULL,
                     "%s: not a query argument of %s (it takes %s)", name, route, query[0] ? query : "none");
    return 1;
}

json_t *http_body_json(req *r, enum MHD_Result *rc) {
    json_error_t e;
    char why[128];
    if (json_guard(r->body ? r->body : "", r->len, GUARD_DEPTH, GUARD_NUMBER, why, sizeof why)) {
        *rc = http_error(r, 422, "invalid_json", NULL, NULL, "the body is refused before parsing: %s", why);
        return NULL;
    }
    json_t *j = json_loadb(r->body ? r->body : "", r->len, JSON_REJECT_DUPLICATES, &e);
    if (!j) {
        /* jansson names its own flag for an escaped NUL in a string: said in the request's terms */
        const char *what = strstr(e.text, "JSON_ALLOW_NUL") ? "\\u0000 (NUL) in a string is not allowed" : e.text;
        *rc = http_error(r, 422, "invalid_json", NULL, NULL, "the body is not JSON: %s (line %d, column %d)", what, e.line,
                         e.column);
        return NULL;
    }
    if (!json_is_object(j)) {
        *rc = http_error(r, 422, "invalid_json", NULL, NULL, "the body must be a JSON object");
        json_decref(j);
        return NULL;
    }
    return j;
}

const char *http_header(req *r, const char *name) { return MHD_lookup_connection_value(r->con, MHD_HEADER_KIND, name); }

/* ---- the boundary ---- */

/* Host must name the loopback interface (DNS rebinding), or, in public mode, one of the names a
 * reverse proxy serves it as (--public-host: NAME or NAME:PORT, compared without case). */
static int public_host(const studio_opts *o, const char *host) {
    size_t n = host ? strcspn(host, ":") : 0;
    if (host && host[n] && (!host[n + 1] || strspn(host + n + 1, "0123456789") != strlen(host + n + 1))) return 0;
    for (int i = 0; host && i < o->npublic_hosts; i++)
        if (strlen(o->public_hosts[i]) == n && !strncasecmp(host, o->public_hosts[i], n)) return 1;
    return 0;
}

static int host_ok(const char *host, int port) {
    static const char *const names[] = {"127.0.0.1", "localhost", "[::1]"};
    if (!host) return 0;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        size_t l = strlen(names[i]);
        if (strncasecmp(host, names[i], l)) continue; /* host names are caseless */
        if (!host[l]) return 1;
        char *end;
        long p = host[l] == ':' ? strtol(host + l + 1, &end, 10) : -1;
        if (host[l] == ':' && !*end && p == port) return 1;
    }
    return 0;
}

/* Local mode: whether a request may come from the page that sent it. A browser names the page's
 * origin in Origin (every POST, and scripts' cross-origin reads): it must be this server as the Host
 * header names it (`null`, a file's or a sandbox's, is not). A request for the API that the browser
 * marks Sec-Fetch-Site: cross-site is refused too, with or without Origin; a link to a page of the
 * UI from elsewhere is a navigation, and is served. Scripts and curl send neither. */
static int same_origin(req *r) {
    const char *origin = http_header(r, "Origin"), *host = http_header(r, "Host"), *site = http_header(r, "Sec-Fetch-Site");
    if (origin && (strncmp(origin, "http://", 7) || !host || strcasecmp(origin + 7, host))) return 0;
    return !(site && !strcasecmp(site, "cross-site") && !strncmp(r->path, "/api/", 5));
}

/* The session of the request's dpd_session cookie, or NULL. */
static sess *cookie_session(server *s, req *r) {
    const char *c = MHD_lookup_connection_value(r->con, MHD_COOKIE_KIND, "dpd_session");
    if (!c) return NULL;
    unsigned char d[32];
    token_digest(c, strlen(c), d);
    return s->b.has_session && !CRYPTO_memcmp(d, s->b.s.digest, 32) ? &s->b.s : NULL;
}

/* The token of an Authorization header of the Bearer scheme (its name in any case, then one or
 * more spaces: RFC 9110), or NULL. */
static const char *bearer_of(const char *a) {
    if (!a || strncasecmp(a, "Bearer", 6) || a[6] != ' ') return NULL;
    for (a += 6; *a == ' ';) a++;
    return a;
}

/* Why r is not authenticated, for its 401: no Authorization, another scheme, or a token that is
 * not one (what: whose token it would be). */
static enum MHD_Result unauthorized(req *r, const char *what, const char *hint) {
    const char *a = http_header(r, "Authorization");
    if (!a && MHD_lookup_connection_value(r->con, MHD_COOKIE_KIND, "dpd_session")) /* a browser's, after a restart */
        return http_error(r, 401, "unauthorized", NULL, hint,
                          "authentication required: the session cookie is not this server's (a newer sign-in replaced "
                          "it, or the server restarted): sign in again");
    if (!a) return http_error(r, 401, "unauthorized", NULL, hint, "authentication required: no Authorization header");
    const char *t = bearer_of(a);
    if (!t && !strcasecmp(a, "Bearer")) return http_error(r, 401, "unauthorized", NULL, hint, "authentication required: the bearer token is missing");
    if (!t) return http_error(r, 401, "unauthorized", NULL, hint, "authentication required: Authorization must be of the Bearer scheme");
    if (!t[0]) return http_error(r, 401, "unauthorized", NULL, hint, "authentication required: the bearer token is missing");
    return http_error(r, 401, "unauthorized", NULL, hint, "the bearer token is not %s", what);
}

static int bearer_ok(server *s, req *r) {
    const char *t = bearer_of(http_header(r, "Authorization"));
    return t && token_is(s->b.api, t, strlen(t));
}

/* A new cookie session (the one there is: it replaces any before); 303 to / (GET) or 200 with the
 * CSRF token (POST). The sign-in link's one-time token, within BOOTSTRAP_S of the start; or, by POST
 * only (never in a URL, where a history or a log keeps it), the API token, at any time: whoever
 * can read ROOT/api-token may use the API already, and may sign a browser in again without a
 * restart, which would interrupt the running runs. */
static enum MHD_Result bootstrap(server *s, req *r) {
    const char *tok = NULL;
    json_t *j = NULL;
    if (!strcmp(r->method, "HEAD")) { /* a link previewer's: never spends the one-time token */
        snprintf(r->allow, sizeof r->allow, "GET, POST");
        return http_error(r, 405, "method_not_allowed", NULL, "open the sign-in link in the browser to sign in (GET)",
                          "HEAD is not served here: a sign-in link signs in whoever opens it");
    }
    if (!strcmp(r->method, "GET")) {
        tok = http_arg(r, "token");
    } else { /* {"token": "..."}: anything else is told, as a body the API refuses */
        enum MHD_Result rc;
        if (!(j = http_body_json(r, &rc))) return rc;
        const char *key;
        json_t *v;
        json_object_foreach(j, key, v) {
            if (strcmp(key, "token")) {
                char k[72];
                snprintf(k, sizeof k, "%s", key);
                json_decref(j);
                return http_error(r, 422, "invalid_request", k, NULL, "%s: not a field of POST %s (it takes token)", k, r->path);
            }
        }
        if (!(tok = json_string_value(json_object_get(j, "token")))) {
            json_decref(j);
            return http_error(r, 422, "invalid_request", "token", "send {\"token\": \"...\"}: the sign-in link's token or ROOT/api-token",
                              "token: required, as a string");
        }
    }
    int api = j && tok && token_is(s->b.api, tok, strlen(tok));
    pthread_mutex_lock(&s->h.mu);
    int boot = tok && !s->b.boot_used && studio_now() - s->h.started < BOOTSTRAP_S && token_is(s->b.boot, tok, strlen(tok));
    int ok = boot || api;
    char cookie[44] = "", csrf[44] = "";
    if (boot) s->b.boot_used = 1;
    if (ok) {
        if (token_new(cookie, sizeof cookie) || token_new(csrf, sizeof csrf)) ok = 0;
    }
    if (ok) {
        token_digest(cookie, strlen(cookie), s->b.s.digest);
        snprintf(s->b.s.csrf, sizeof s->b.s.csrf, "%s", csrf);
        s->b.has_session = 1;
    }
    pthread_mutex_unlock(&s->h.mu);
    json_decref(j);
    if (!ok)
        return http_error(r, 401, "unauthorized", "token",
                          "sign in with the token in ROOT/api-token (by POST, as the sign-in form sends it), or restart "
                          "dpd serve for a new sign-in link",
                          "the bootstrap token is wrong, expired or already used, and not the API token");
    char set[160];
    snprintf(set, sizeof set, "dpd_session=%s; HttpOnly; SameSite=Strict; Path=/", cookie);
    if (!strcmp(r->method, "GET")) {
        struct MHD_Response *resp = MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT);
        MHD_add_response_header(resp, "Location", "/");
        MHD_add_response_header(resp, "Set-Cookie", set);
        return http_queue(r, 303, resp);
    }
    char *body = NULL;
    json_t *o = json_pack("{s:s}", "csrf", csrf);
    body = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    struct MHD_Response *resp = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(resp, "Content-Type", "application/json");
    MHD_add_response_header(resp, "Set-Cookie", set);
    return http_queue(r, 200, resp);
}

static int split(char *path, char **seg, int max) {
    int n = 0;
    char *save;
    for (char *t = strtok_r(path, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
        if (n == max) return -1;
        seg[n++] = t;
    }
    return n;
}

/* The UI's static files: no data, so no authentication (the pages call the API with the session
 * cookie). Scripts only from this origin, no inline script or style. */
static const studio_asset *asset(const char *path) {
    if (!strcmp(path, "/")) path = "/index.html";
    for (const studio_asset *a = studio_assets; a->path; a++)
        if (!strcmp(a->path, path)) return a;
    return NULL;
}

static enum MHD_Result serve_asset(req *r, const studio_asset *a) {
    struct MHD_Response *resp = MHD_create_response_from_buffer(a->size, (void *)a->data, MHD_RESPMEM_PERSISTENT);
    if (!resp) return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", a->type);
    MHD_add_response_header(resp, "Content-Security-Policy",
                            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                            "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
                            "frame-ancestors 'none'");
    return http_queue(r, 200, resp);
}

/* A declared body over the request's limit: 413 before it is read. */
/* A body over r->limit: 413; or in public mode, on a route it does not serve (an upload), 403
 * feature_unavailable, not a size that a smaller body would pass. */
static enum MHD_Result refuse_large(req *r) {
    char path[1024], *seg[16];
    snprintf(path, sizeof path, "%s", r->path);
    int n = split(path, seg, 16);
    if (srv_of(r->h)->h.pub && n >= 2 && !strcmp(seg[0], "api") && !strcmp(seg[1], "v1") && api_local_only(r, seg + 2, n - 2))
        return http_error(r, 403, "feature_unavailable", NULL, NULL, "%s %s is not served in public mode", r->method, r->path);
    return http_error(r, 413, "payload_too_large", NULL, NULL, "the body is over %zu bytes", r->limit);
}

static enum MHD_Result length_ok(req *r) {
    const char *cl = http_header(r, "Content-Length");
    return cl && strtoull(cl, NULL, 10) > r->limit ? refuse_large(r) : MHD_YES;
}

/* The client's IP key: the address a reverse proxy put in --client-ip-header (trusted: the server
 * listens on loopback, where only the proxy reaches it; of a list, the last element, the one the
 * proxy itself added), or the TCP peer's; an IPv6 address by its /64 (its first four groups), so
 * one host's many addresses are one key. "" when there is none (the header is configured and
 * absent), or the header is not an address. */
static void client_key(server *s, req *r, char key[48]) {
    char ip[INET6_ADDRSTRLEN] = "";
    const char *h = s->h.o.client_ip_header[0] ? http_header(r, s->h.o.client_ip_header) : NULL;
    if (s->h.o.client_ip_header[0] && !h) {
        key[0] = 0; /* behind the proxy, every request carries the header: one without it did not come through it */
        return;
    }
    if (h) {
        const char *last = strrchr(h, ',');
        last = last ? last + 1 : h;
        last += strspn(last, " \t");
        size_t n = strcspn(last, " \t");
        if (n < sizeof ip && !last[n + strspn(last + n, " \t")]) memcpy(ip, last, n), ip[n] = 0;
    } else {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(r->con, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        const struct sockaddr *sa = ci ? ci->client_addr : NULL;
        if (sa && sa->sa_family == AF_INET) inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, ip, sizeof ip);
        if (sa && sa->sa_family == AF_INET6) inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, ip, sizeof ip);
    }
    struct in6_addr a6;
    struct in_addr a4;
    key[0] = 0;
    if (inet_pton(AF_INET, ip, &a4) == 1) {
        inet_ntop(AF_INET, &a4, key, 48); /* one spelling of each address */
    } else if (inet_pton(AF_INET6, ip, &a6) == 1) {
        if (IN6_IS_ADDR_V4MAPPED(&a6)) {
            inet_ntop(AF_INET, a6.s6_addr + 12, key, 48);
        } else {
            memset(a6.s6_addr + 8, 0, 8);
            inet_ntop(AF_INET6, &a6, key, 48);
        }
    }
}

/* 429 rate_limited, with Retry-After: the seconds wait asks for, rounded up. */
static enum MHD_Result too_many(req *r, double wait, const char *what) {
    r->retry_after = (int)wait + ((double)(int)wait < wait);
    if (r->retry_after < 1) r->retry_after = 1;
    return http_error(r, 429, "rate_limited", NULL, "wait as Retry-After says", "too many %s; try again in %d s", what,
                      r->retry_after);
}

/* A CORS preflight (OPTIONS) from the allowed origin (r->cors): for GET or POST, asking only for
 * the headers the API reads: 204 with what may be sent; anything else 403. */
static enum MHD_Result preflight(req *r) {
    const char *m = http_header(r, "Access-Control-Request-Method"), *hs = http_header(r, "Access-Control-Request-Headers");
    int ok = r->cors && m && (!strcmp(m, "GET") || !strcmp(m, "POST"));
    char list[256];
    snprintf(list, sizeof list, "%s", hs ? hs : "");
    char *save;
    for (char *t = strtok_r(list, ", ", &save); ok && t; t = strtok_r(NULL, ", ", &save))
        ok = !strcasecmp(t, "authorization") || !strcasecmp(t, "content-type") || !strcasecmp(t, "accept");
    if (!ok || (hs && strlen(hs) >= sizeof list))
        return http_error(r, 403, "preflight_refused", NULL, "GET or POST, with Authorization, Content-Type and Accept only",
                          "this cross-origin request is not allowed");
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(resp, "Access-Control-Allow-Methods", "GET, POST");
    MHD_add_response_header(resp, "Access-Control-Allow-Headers", "Authorization, Content-Type, Accept");
    MHD_add_response_header(resp, "Access-Control-Max-Age", "600");
    enum MHD_Result v = http_queue(r, 204, resp);
    settle(srv_of(r->h), r);
    return v;
}

/* Public mode's boundary, in order (docs/studio.md "Public mode"): the origin, the client's address,
 * the in-flight caps, the route's class, then authentication by `Authorization: Bearer TOKEN` of an
 * open session, nothing else (no cookie, no query argument, no API token), which sets r's
 * workspace; the session's rate and its one change at a time. */
static enum MHD_Result admit_public(server *s, req *r) {
    const char *origin = http_header(r, "Origin");
    if (origin && (!s->h.o.origin[0] || strcmp(origin, s->h.o.origin)))
        return http_error(r, 403, "origin_not_allowed", NULL, "pages of the configured origin (--origin) only",
                          "requests from this origin are not allowed");
    r->cors = origin != NULL; /* the configured origin: its answers say so */
    char ip[48];
    client_key(s, r, ip);
    if (!ip[0]) return http_error(r, 403, "bad_client_ip", NULL, NULL, "the client's address is not known");
    int max = s->h.o.max_inflight;
    if (__atomic_add_fetch(&s->inflight, 1, __ATOMIC_ACQ_REL) > max && max > 0) {
        __atomic_sub_fetch(&s->inflight, 1, __ATOMIC_ACQ_REL);
        r->retry_after = 1;
        return http_error(r, 503, "server_busy", NULL, "try again in a moment", "the server is answering %d requests, its most", max);
    }
    r->counted = 1;
    if (pub_ip_enter(s->h.pub, ip)) {
        r->retry_after = 1;
        return http_error(r, 429, "too_many_in_flight", NULL, "wait for an answer first",
                          "this address has %d requests in flight, the most it may", s->h.o.ip_inflight);
    }
    snprintf(r->ip, sizeof r->ip, "%s", ip); /* left by on_done */
    if (!strcmp(r->method, "OPTIONS")) return preflight(r);
    if (strncmp(r->path, "/api/", 5) || !strncmp(r->path, "/api/v1/session", 15))
        return http_error(r, 404, "not_found", NULL, NULL, "no such route (public mode serves the API with a session's token)");
    int other;
    const struct own_route *o = own_route(s, r, &other);
    if (o && o->open) { /* creating a session needs none; its rate is the client's */
        double w = other ? 0 : pub_admit_ip(s->h.pub, ip);
        return w > 0 ? too_many(r, w, "new sessions from this address") : MHD_YES;
    }
    const char *t = bearer_of(http_header(r, "Authorization"));
    size_t n = t ? strlen(t) : 0;
    int found = n == TOKEN_LEN ? pub_find(s->h.pub, t, n, &r->sess) : 1;
    if (found == 2)
        return http_error(r, 401, "session_expired", NULL, "create a new session: POST /api/v1/web/sessions",
                          "the session's lease is over");
    if (found == 3) {
        r->retry_after = 1;
        return http_error(r, 429, "too_many_in_flight", NULL, "wait for an answer (or close an event stream) first",
                          "the session has %d requests in flight, the most it may", s->h.o.session_inflight);
    }
    if (found)
        return unauthorized(r, "an open session's", "send Authorization: Bearer TOKEN, the access_token of POST /api/v1/web/sessions");
    r->ws = r->sess.ws;
    double w = pub_request(s->h.pub, &r->sess);
    if (w > 0) return too_many(r, w, "requests in this session");
    /* a submission or a retry: one at a time (cancel, activity and ending the session never wait) */
    char path[1024], *seg[8];
    snprintf(path, sizeof path, "%s", r->path);
    int k = split(path, seg, 8); /* as the routes see the path: empty segments dropped */
    int change = !strcmp(r->method, "POST") && k >= 3 && !strcmp(seg[0], "api") && !strcmp(seg[1], "v1") &&
                 !strcmp(seg[2], "runs") && (k == 3 || (k == 5 && !strcmp(seg[4], "retry")));
    if (change && pub_mutate(s->h.pub, &r->sess)) {
        r->retry_after = 1;
        return http_error(r, 429, "change_in_progress", NULL, "wait for the other submission's answer",
                          "another submission of this session is in progress");
    }
    return MHD_YES;
}

/* The headers a request must not carry twice: the server reads the first, a proxy or a cache
 * before it may have read another. */
static const char *const single[] = {"Host", "Origin", "Authorization", "Content-Length", "Content-Type", "Cookie",
                                     "X-CSRF-Token", "Transfer-Encoding"};
#define NSINGLE (sizeof single / sizeof *single)

/* How often each of single[] and the configured client-address header (the last count) is given. */
typedef struct headers_seen {
    const char *client_ip; /* --client-ip-header, or "" */
    int n[NSINGLE + 1];
} headers_seen;

static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
    headers_seen *h = cls;
    for (size_t i = 0; key && i < NSINGLE; i++) h->n[i] += !strcasecmp(key, single[i]);
    h->n[NSINGLE] += key && h->client_ip[0] && !strcasecmp(key, h->client_ip);
    return MHD_YES;
}

/* The URI's bounds: a path of at most MAX_PATH bytes; at most MAX_ARGS query arguments of at most
 * MAX_QUERY bytes in all, names of at most 64 bytes, values of at most 1024 (decoded). */
#define MAX_PATH 512
#define MAX_ARGS 32
#define MAX_QUERY 4096
typedef struct args_seen {
    int n;
    size_t total;
    int bad;   /* a name (1) or a value (2) over its bound */
    const char *names[MAX_ARGS];
    const char *twice; /* a name given more than once */
} args_seen;

static enum MHD_Result count_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
    args_seen *a = cls;
    size_t k = key ? strlen(key) : 0, v = value ? strlen(value) : 0;
    for (int i = 0; key && i < a->n && i < MAX_ARGS && !a->twice; i++)
        if (a->names[i] && !strcasecmp(a->names[i], key)) a->twice = key; /* libmicrohttpd looks names up caseless */
    if (a->n < MAX_ARGS) a->names[a->n] = key;
    a->n++, a->total += k + v;
    if (!a->bad && k > 64) a->bad = 1;
    if (!a->bad && v > 1024) a->bad = 2;
    return MHD_YES;
}

/* What the URI as sent says that libmicrohttpd's decoding hides: an encoded NUL anywhere (it
 * would cut an id or a number short) or an encoded '/' in the path (another spelling of a
 * path); a query over MAX_QUERY bytes as sent. Its answer is the request's first *con_cls: one
 * of these marks (nothing to free), or NULL. */
static char URI_HIDDEN_BYTE, URI_LONG_QUERY;

static void *raw_uri(void *cls, const char *uri, struct MHD_Connection *con) {
    (void)cls, (void)con;
    size_t path = strcspn(uri, "?");
    for (const char *p = strchr(uri, '%'); p; p = strchr(p + 1, '%'))
        if ((p[1] == '0' && p[2] == '0') || ((size_t)(p - uri) < path && p[1] == '2' && (p[2] == 'f' || p[2] == 'F')))
            return &URI_HIDDEN_BYTE;
    if (uri[path] && strlen(uri + path + 1) > MAX_QUERY) return &URI_LONG_QUERY;
    return NULL;
}

/* The checks of the first call (before any body is read): headers given once, the path and query
 * bounds, Host, authentication, CSRF, size. */
static enum MHD_Result admit(server *s, req *r, const void *mark) {
    if (strlen(r->path) > MAX_PATH) return http_error(r, 414, "uri_too_long", NULL, NULL, "the path is over %d bytes", MAX_PATH);
    if (mark == &URI_HIDDEN_BYTE)
        return http_error(r, 400, "invalid_uri", NULL, "send ids and paths as they are", "the URI encodes a NUL byte (%%00) or, in its path, a '/' (%%2F)");
    args_seen q = {0};
    MHD_get_connection_values(r->con, MHD_GET_ARGUMENT_KIND, count_arg, &q);
    if (q.n > MAX_ARGS || q.total > MAX_QUERY || mark == &URI_LONG_QUERY)
        return http_error(r, 414, "uri_too_long", NULL, NULL, "the query is over %d arguments or %d bytes", MAX_ARGS, MAX_QUERY);
    if (q.bad)
        return http_error(r, 422, "invalid_query", NULL, NULL, "a query argument's %s is over %d bytes", q.bad == 2 ? "value" : "name",
                          q.bad == 2 ? 1024 : 64);
    if (q.twice)
        return http_error(r, 400, "ambiguous_query", q.twice, "give each query argument once", "the query gives %s more than once", q.twice);
    headers_seen seen = {.client_ip = s->h.o.client_ip_header};
    MHD_get_connection_values(r->con, MHD_HEADER_KIND, count_header, &seen);
    for (size_t i = 0; i <= NSINGLE; i++) /* the client-address header too: a proxy that adds a line keeps the client's */
        if (seen.n[i] > 1)
            return http_error(r, 400, "ambiguous_headers", NULL, "send each of these headers once",
                              "the %s header is given %d times", i < NSINGLE ? single[i] : seen.client_ip, seen.n[i]);
    if (!host_ok(http_header(r, "Host"), s->h.port) && !(s->h.pub && public_host(&s->h.o, http_header(r, "Host"))))
        return http_error(r, 403, "host_not_allowed", NULL, "use http://127.0.0.1:PORT",
                          "the Host header must name the loopback interface");
    if (!s->h.pub && !same_origin(r))
        return http_error(r, 403, "origin_not_allowed", NULL, "use the studio's own pages, or a script without Origin",
                          "a request from another site's page (Origin or Sec-Fetch-Site) is not allowed");
    r->limit = !strcmp(r->method, "POST") && !strcmp(r->path, "/api/v1/datasets") ? UPLOAD_LIMIT : BODY_LIMIT;
    int other;
    const struct own_route *o = own_route(s, r, &other);
    if (o && o->open == OPEN_ALL) return MHD_YES;
    if (s->h.pub) {
        r->limit = BODY_LIMIT; /* no uploads in public mode */
        enum MHD_Result v = admit_public(s, r);
        return r->refused || v != MHD_YES ? v : length_ok(r);
    }
    if (o && o->open) return MHD_YES;
    if (strncmp(r->path, "/api/", 5) && (!strcmp(r->method, "GET") || !strcmp(r->method, "HEAD")))
        return MHD_YES; /* a page of the UI: answered on the next call, so the connection stays open */
    int bearer = bearer_ok(s, r);
    if (!bearer && http_header(r, "Authorization")) /* a token that is not the server's: refused, cookie or not */
        return unauthorized(r, "this server's API token (ROOT/api-token)", "send Authorization: Bearer $(cat ROOT/api-token)");
    if (!bearer) {
        pthread_mutex_lock(&s->h.mu);
        sess *x = cookie_session(s, r);
        char csrf[44] = "";
        if (x) snprintf(csrf, sizeof csrf, "%s", x->csrf);
        pthread_mutex_unlock(&s->h.mu);
        if (!x)
            return unauthorized(r, "this server's API token (ROOT/api-token)",
                                "send Authorization: Bearer $(cat ROOT/api-token), or sign in (the link dpd serve printed, or "
                                "the token in ROOT/api-token)");
        const char *given = http_header(r, "X-CSRF-Token");
        if (strcmp(r->method, "GET") && strcmp(r->method, "HEAD") &&
            (!given || strlen(given) != strlen(csrf) || CRYPTO_memcmp(given, csrf, strlen(csrf))))
            return http_error(r, 403, "csrf_required", NULL, "GET /api/v1/session gives the token for X-CSRF-Token",
                              given ? "the X-CSRF-Token header is not this session's"
                                    : "a write with the session cookie needs the X-CSRF-Token header");
    }
    return length_ok(r);
}

int http_disk_low(http *h) {
    struct statvfs v;
    return h->o.reserve_mb > 0 && !statvfs(h->o.root, &v) &&
           (unsigned long long)v.f_bavail * v.f_frsize < (unsigned long long)h->o.reserve_mb << 20;
}

/* A session's leases and storage as the web routes answer them: expires_at, idle_expires_at (null
 * without an inactivity lease), server_time, mode, storage {used_bytes (null: not measured yet),
 * quota_bytes (null: none), over_quota}. */
static json_t *leases(const server *s, const pub_hold *h) {
    char at[40], idle[40], now[40];
    studio_iso(h->expires, at, sizeof at), studio_iso(h->idle_expires, idle, sizeof idle);
    studio_iso(pub_now(s->h.pub), now, sizeof now);
    json_t *used = h->bytes >= 0 ? json_integer(h->bytes) : json_null(),
           *quota = s->h.o.quota_mb ? json_integer((json_int_t)s->h.o.quota_mb << 20) : json_null();
    return json_pack("{s:s, s:s?, s:s, s:s, s:{s:o, s:o, s:b}}", "expires_at", at, "idle_expires_at",
                     h->idle_expires > 0 ? idle : NULL, "server_time", now, "mode", "public", "storage", "used_bytes", used,
                     "quota_bytes", quota, "over_quota", h->over);
}

/* POST /api/v1/web/sessions (public mode): a new session, its token in the answer and nowhere
 * else. The body is empty or {}. */
static enum MHD_Result web_sessions(server *s, req *r) {
    char why[128];
    json_t *b = !r->len ? json_object()
                : json_guard(r->body, r->len, GUARD_DEPTH, GUARD_NUMBER, why, sizeof why)
                    ? NULL
                    : json_loadb(r->body, r->len, JSON_REJECT_DUPLICATES, NULL);
    int ok = json_is_object(b) && !json_object_size(b);
    json_decref(b);
    if (!ok) return http_error(r, 422, "invalid_request", NULL, "send {} or no body", "a session takes no options");
    char token[44], err[4600] = "";
    if (http_disk_low(&s->h))
        return http_error(r, 507, "storage_busy", NULL, "try again later", "the server's disk is nearly full");
    if (pub_stuck(s->h.pub))
        return http_error(r, 503, "cleanup_failed", NULL, "try again later",
                          "the server cannot remove an ended session's files; it takes no new session until it can");
    pub_hold h;
    int rc = pub_create(s->h.pub, r->ip, token, &h, err, sizeof err);
    if (rc == 2)
        return http_error(r, 429, "session_quota", NULL, "end one of them (POST /api/v1/web/sessions/end), or wait for its lease",
                          "this address has %d sessions open, the most it may", s->h.o.ip_sessions);
    if (rc == 1)
        return http_error(r, 503, "too_many_sessions", NULL, "try again later", "%d sessions are open, the most this server keeps",
                          s->h.o.max_sessions);
    if (rc) return http_error(r, 507, "storage_error", NULL, NULL, "%s", err);
    json_t *o = leases(s, &h);
    json_object_set_new(o, "access_token", json_string(token));
    json_object_set_new(o, "token_type", json_string("Bearer"));
    OPENSSL_cleanse(token, sizeof token);
    return http_json(r, 201, o);
}

/* The other /api/v1/web/ routes of a session (public mode). */
static enum MHD_Result web_session(server *s, req *r) { return http_json(r, 200, leases(s, &r->sess)); }

static enum MHD_Result web_activity(server *s, req *r) {
    pub_activity(s->h.pub, &r->sess); /* foreground use: the inactivity lease only */
    return http_json(r, 200, leases(s, &r->sess));
}

static enum MHD_Result web_end(server *s, req *r) {
    pub_end(s->h.pub, r->sess.slot);
    return http_json(r, 200, json_pack("{s:b}", "ended", 1));
}

/* Tests only (--test-workers): {"advance_s": S} moves the sessions' clock. */
static enum MHD_Result web_clock(server *s, req *r) {
    json_t *b = r->len ? json_loadb(r->body, r->len, JSON_REJECT_DUPLICATES, NULL) : NULL;
    json_t *v = json_object_get(b, "advance_s");
    double adv = json_is_number(v) ? json_number_value(v) : -1;
    json_decref(b);
    if (!(adv >= 0 && adv <= 1e8))
        return http_error(r, 422, "invalid_request", "advance_s", NULL, "POST {\"advance_s\": 0..1e8 seconds}");
    pub_advance(s->h.pub, adv);
    return http_json(r, 200, leases(s, &r->sess));
}

static enum MHD_Result healthz(server *s, req *r) {
    int down = __atomic_load_n(&s->h.refuse_writes, __ATOMIC_ACQUIRE); /* a load balancer stops sending work here */
    int stuck = down ? 0 : pub_stuck(s->h.pub);
    if (!down && !stuck) return http_json(r, 200, json_pack("{s:b, s:s}", "ok", 1, "version", DPD_VERSION));
    json_t *o = json_pack("{s:b, s:s, s:{s:s, s:s, s:n, s:n}}", "ok", 0, "version", DPD_VERSION, "error", "code",
                          down ? "shutting_down" : "cleanup_failed", "message",
                          down ? "the service is shutting down" : "an ended session's files cannot be removed", "field", "hint");
    if (o && stuck) json_object_set_new(o, "sessions_not_removed", json_integer(stuck));
    return http_json(r, 503, o);
}

/* GET /api/v1/session (local mode): how the browser is signed in, and its CSRF token. */
static enum MHD_Result session_get(server *s, req *r) {
    pthread_mutex_lock(&s->h.mu);
    sess *x = cookie_session(s, r);
    json_t *o = json_pack("{s:s?, s:s}", "csrf", x ? x->csrf : NULL, "auth", x ? "cookie" : "token");
    pthread_mutex_unlock(&s->h.mu);
    return http_json(r, 200, o);
}

/* The boundary's own routes (struct own_route, above). */
static const struct own_route own[] = {
    {"GET", "/healthz", R_LOCAL | R_PUBLIC, OPEN_ALL, healthz},
    {"GET", "/api/v1/session/bootstrap", R_LOCAL, OPEN, bootstrap, "token"},
    {"POST", "/api/v1/session/bootstrap", R_LOCAL, OPEN, bootstrap},
    {"GET", "/api/v1/session", R_LOCAL, AUTH, session_get},
    {"POST", "/api/v1/web/sessions", R_PUBLIC, OPEN, web_sessions},
    {"GET", "/api/v1/web/session", R_PUBLIC, AUTH, web_session},
    {"POST", "/api/v1/web/activity", R_PUBLIC, AUTH, web_activity},
    {"POST", "/api/v1/web/sessions/end", R_PUBLIC, AUTH, web_end},
    {"POST", "/api/v1/web/test/clock", R_PUBLIC | R_TEST, AUTH, web_clock},
};
#define NOWN (sizeof own / sizeof *own)

/* The boundary's route for r's path in this server's mode: the one of r's method, else any (*other
 * set: a 405, r->allow its methods); NULL when the path is none of them here. */
static const struct own_route *own_route(const server *s, req *r, int *other) {
    const struct own_route *any = NULL;
    int mode = s->h.pub ? R_PUBLIC : R_LOCAL, head = !strcmp(r->method, "HEAD");
    for (size_t i = 0; i < NOWN; i++) {
        const struct own_route *o = &own[i];
        if (strcmp(o->path, r->path) || !(o->modes & mode) || ((o->modes & R_TEST) && !s->h.o.test_workers)) continue;
        if (!strcmp(o->method, r->method) || (head && !strcmp(o->method, "GET"))) return *other = 0, o;
        http_allow(r, o->method);
        any = o;
    }
    *other = any != NULL;
    return any;
}

void http_routes_print(FILE *f) {
    for (size_t i = 0; i < NOWN; i++)
        fprintf(f, "{\"method\": \"%s\", \"path\": \"%s\", \"modes\": \"%s%s%s%s\"}\n", own[i].method, own[i].path,
                own[i].modes & R_LOCAL ? "local" : "", own[i].modes == (R_LOCAL | R_PUBLIC) ? " " : "",
                own[i].modes & R_PUBLIC ? "public" : "", own[i].modes & R_TEST ? " test" : "");
    api_routes_print(f);
}

void http_allow(req *r, const char *method) {
    size_t l = strlen(r->allow);
    if (strstr(r->allow, method)) return; /* GET, HEAD and POST: none holds another */
    snprintf(r->allow + l, sizeof r->allow - l, "%s%s%s", l ? ", " : "", method, strcmp(method, "GET") ? "" : ", HEAD");
}

static enum MHD_Result answer(server *s, req *r) {
    int other;
    const struct own_route *o = own_route(s, r, &other);
    if (!o && strncmp(r->path, "/api/", 5)) { /* a page of the UI (in any other method: 405) */
        const studio_asset *a = asset(r->path);
        if (!a) return http_error(r, 404, "not_found", NULL, NULL, "no such page");
        if (!strcmp(r->method, "GET") || !strcmp(r->method, "HEAD")) return serve_asset(r, a);
        http_allow(r, "GET");
        return http_error(r, 405, "method_not_allowed", NULL, NULL, "%s is not served here", r->method);
    }
    if (r->too_large) return refuse_large(r);
    if (!strcmp(r->method, "POST") && r->len) {
        const char *ct = http_header(r, "Content-Type");
        if (!ct || strncmp(ct, "application/json", 16) || (ct[16] && ct[16] != ';' && ct[16] != ' '))
            return http_error(r, 415, "json_required", NULL, NULL, "the body must be application/json");
    }
    if (o && other) return http_error(r, 405, "method_not_allowed", NULL, NULL, "%s is not served here", r->method);
    if (o) {
        char route[96];
        enum MHD_Result rc;
        snprintf(route, sizeof route, "%s %s", o->method, o->path);
        return http_query_refused(r, o->query ? o->query : "", route, &rc) ? rc : o->fn(s, r);
    }
    char path[1024], *seg[16];
    snprintf(path, sizeof path, "%s", r->path);
    int n = split(path, seg, 16);
    if (n < 2 || strcmp(seg[0], "api") || strcmp(seg[1], "v1"))
        return http_error(r, 404, "not_found", NULL, NULL, "no such route");
    enum MHD_Result v = api_route(r, seg + 2, n - 2);
    pub_mutated(s->h.pub, &r->sess); /* the submission is stored (or refused) and answered */
    return v;
}

/* Public mode: the request's socket is shut down at studio_mono() time `at` (0: no deadline) by
 * the supervisor's tick, whatever libmicrohttpd is waiting for (a body that does not come, a
 * download that does not end). */
static void set_deadline(server *s, req *r, double at) {
    pthread_mutex_lock(&s->h.mu);
    if (!r->watched && at > 0 && s->nwatched < s->h.o.max_connections) s->watched[s->nwatched++] = r, r->watched = 1;
    r->cut_at = at;
    pthread_mutex_unlock(&s->h.mu);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *con, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls) {
    server *s = cls;
    req *r = *con_cls;
    if (!r || r == (void *)&URI_HIDDEN_BYTE || r == (void *)&URI_LONG_QUERY) { /* the first call: raw_uri's mark */
        const void *mark = r;
        if (!(r = calloc(1, sizeof *r))) return MHD_NO;
        *con_cls = r;
        r->con = con, r->method = method, r->path = url, r->h = &s->h, r->ws = "", r->sess.slot = -1;
        r->t0 = studio_mono();
        enum MHD_Result v = admit(s, r, mark); /* a refusal queues its response now: then no body is read */
        if (v == MHD_YES && s->h.pub && (http_header(r, "Content-Length") || http_header(r, "Transfer-Encoding")))
            set_deadline(s, r, r->t0 + s->h.o.body_timeout_s); /* public mode: the body by then, or the connection is closed */
        return v;
    }
    if (!*upload_size && r->watched) set_deadline(s, r, 0); /* the body is whole (watched: this thread's own) */
    if (r->refused) { /* answered at the first call: the body is discarded */
        *upload_size = 0;
        return MHD_YES;
    }
    if (*upload_size) {
        if (r->len + *upload_size > r->limit) {
            r->too_large = 1;
        } else {
            if (r->len + *upload_size + 1 > r->cap) {
                size_t cap = (r->len + *upload_size + 1) * 2;
                if (cap > r->limit + 1) cap = r->limit + 1;
                char *b = realloc(r->body, cap);
                if (!b) return MHD_NO;
                r->body = b, r->cap = cap;
            }
            memcpy(r->body + r->len, upload, *upload_size);
            r->len += *upload_size;
            r->body[r->len] = 0;
        }
        *upload_size = 0;
        return MHD_YES;
    }
    return answer(s, r);
}

void http_download(req *r) {
    server *s = srv_of(r->h);
    if (s->h.pub) set_deadline(s, r, studio_mono() + s->h.o.download_s);
}

/* Shuts down the sockets of the requests past their deadlines (under h.mu); libmicrohttpd ends
 * them (on_done). */
static void cut_late(server *s) {
    double now = studio_mono();
    for (int i = 0; i < s->nwatched; i++) {
        req *r = s->watched[i];
        if (r->cut_at <= 0 || now < r->cut_at) continue;
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(r->con, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (ci) shutdown(ci->connect_fd, SHUT_RDWR);
        r->cut_at = 0; /* once */
    }
}

static void on_done(void *cls, struct MHD_Connection *con, void **con_cls, enum MHD_RequestTerminationCode toe) {
    req *r = *con_cls;
    server *s = cls;
    if (r == (void *)&URI_HIDDEN_BYTE || r == (void *)&URI_LONG_QUERY) r = *con_cls = NULL; /* never answered: nothing to free */
    if (r && r->watched) { /* the cutter forgets it before it is freed */
        pthread_mutex_lock(&s->h.mu);
        for (int i = 0; i < s->nwatched; i++)
            if (s->watched[i] == r) s->watched[i] = s->watched[--s->nwatched];
        pthread_mutex_unlock(&s->h.mu);
    }
    if (r) {
        settle(cls, r); /* after the answer's last byte: a download holds its session */
        free(r->body);
        free(r);
        *con_cls = NULL;
    }
}

/* ---- server-sent events ---- */

typedef struct sse {
    server *s;
    struct MHD_Connection *con;
    char id[24];
    long last;
    unsigned long gen; /* store_gen when its events were last read */
    double last_send;
    int fd;        /* its socket: a parked stream is watched for its client's going away */
    int ended, done, gone;
    char *pend;
    size_t plen, poff;
} sse;

static void sse_add(sse *x, const char *text) {
    size_t n = strlen(text);
    char *p = realloc(x->pend, x->plen + n + 1);
    if (!p) return;
    memcpy(p + x->plen, text, n + 1);
    x->pend = p, x->plen += n;
}

static int sse_event(void *user, long seq, double ts, const char *type, const char *data) {
    sse *x = user;
    char t[40], head[128];
    studio_iso(ts, t, sizeof t);
    json_t *d = json_loads(data, 0, NULL);
    if (d && x->s->h.o.public_mode) studio_hide_paths(d, &x->s->h.o); /* status events carry the worker's messages */
    json_t *o = json_pack("{s:I, s:s, s:s, s:o}", "seq", (json_int_t)seq, "ts", t, "type", type, "data", d ? d : json_object());
    char *text = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    if (!text) return 1; /* the next read tries again from x->last */
    snprintf(head, sizeof head, "id: %ld\nevent: %s\ndata: ", seq, type);
    sse_add(x, head);
    sse_add(x, text);
    sse_add(x, "\n\n");
    free(text);
    x->last = seq;
    return 0;
}

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max) {
    sse *x = cls;
    server *s = x->s;
    if (x->poff == x->plen) {
        free(x->pend);
        x->pend = NULL, x->plen = x->poff = 0;
        if (x->gone) return MHD_CONTENT_READER_END_WITH_ERROR; /* its client went away while it was parked */
        if (x->ended || s->closing) return MHD_CONTENT_READER_END_OF_STREAM;
        x->gen = store_gen(s->h.st, x->id);
        store_events(s->h.st, x->id, x->last, 100, sse_event, x);
        if (!x->plen) {
            run_rec r;
            if (store_get(s->h.st, x->id, &r)) return MHD_CONTENT_READER_END_OF_STREAM;
            if (store_terminal(r.status) && x->last >= r.last_seq) {
                json_t *o = json_pack("{s:s, s:I}", "status", store_status_name(r.status), "last_seq", (json_int_t)r.last_seq);
                char *text = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
                json_decref(o);
                if (!text) return MHD_CONTENT_READER_END_WITH_ERROR;
                sse_add(x, "event: end\ndata: ");
                sse_add(x, text);
                sse_add(x, "\n\n");
                free(text);
                x->ended = 1;
            } else if (studio_mono() - x->last_send >= KEEPALIVE_S) {
                sse_add(x, ": keepalive\n\n");
            }
        }
        if (!x->plen) { /* nothing to say: park the connection until the next tick */
            pthread_mutex_lock(&s->h.mu);
            if (!s->closing) { /* room: at most o.max_streams streams are open (http_stream) */
                s->streams[s->nstreams++] = x;
                /* libmicrohttpd does not watch a suspended connection's socket: without this a gone
                 * client's slot would stay taken until the next keep-alive failed to send. A client
                 * that half-closes (FIN) is taken as gone: EventSource readers never do. Bytes it
                 * sends raise nothing here and are left for libmicrohttpd. */
                struct epoll_event ev = {.events = EPOLLRDHUP, .data.ptr = x};
                if (x->fd >= 0) epoll_ctl(s->watch, EPOLL_CTL_ADD, x->fd, &ev);
                MHD_suspend_connection(x->con);
                pthread_mutex_unlock(&s->h.mu);
                return 0;
            }
            pthread_mutex_unlock(&s->h.mu);
            return MHD_CONTENT_READER_END_OF_STREAM;
        }
    }
    size_t n = x->plen - x->poff < max ? x->plen - x->poff : max;
    memcpy(buf, x->pend + x->poff, n);
    x->poff += n;
    x->last_send = studio_mono();
    return (ssize_t)n;
}

static void sse_free(void *cls) {
    sse *x = cls;
    server *s = x->s;
    pthread_mutex_lock(&s->h.mu);
    for (int i = 0; i < s->nstreams; i++)
        if (s->streams[i] == x) s->streams[i] = s->streams[--s->nstreams];
    s->active_streams--;
    pthread_mutex_unlock(&s->h.mu);
    free(x->pend);
    free(x);
}

/* Each tick (100 ms): the parked streams that may have something to say (an event of their run
 * was stored since they last looked, a keep-alive is due, or the server is closing) or whose
 * client went away (one epoll_wait for them all) go back to their threads; the others stay
 * parked, at no cost. */
static void resume_streams(void *user) {
    server *s = user;
    double now = studio_mono();
    pthread_mutex_lock(&s->h.mu);
    struct epoll_event ev[64];
    int got;
    do { /* each one reported leaves the set (its state stays ready): the loop ends */
        got = epoll_wait(s->watch, ev, 64, 0);
        for (int i = 0; i < got; i++) {
            sse *x = ev[i].data.ptr;
            x->gone = 1;
            epoll_ctl(s->watch, EPOLL_CTL_DEL, x->fd, NULL);
        }
    } while (got == 64);
    int kept = 0;
    for (int i = 0; i < s->nstreams; i++) {
        sse *x = s->streams[i];
        if (x->gone || x->gen != store_gen(s->h.st, x->id) || now - x->last_send >= KEEPALIVE_S || s->closing) {
            if (x->fd >= 0 && !x->gone) epoll_ctl(s->watch, EPOLL_CTL_DEL, x->fd, NULL);
            MHD_resume_connection(x->con);
        } else s->streams[kept++] = x;
    }
    s->nstreams = kept;
    cut_late(s);
    pthread_mutex_unlock(&s->h.mu);
}

enum MHD_Result http_stream(req *r, const char *id, long after) {
    server *s = srv_of(r->h);
    pthread_mutex_lock(&s->h.mu);
    int room = s->active_streams < s->h.o.max_streams;
    if (room) s->active_streams++;
    pthread_mutex_unlock(&s->h.mu);
    if (!room)
        return http_error(r, 503, "too_many_streams", NULL, "poll GET /api/v1/runs/{id}/events?after=N instead",
                          "%d event streams are open, the most this server keeps", s->h.o.max_streams);
    if (r->counted) { /* streams have their own bound: not the requests' in flight (--max-inflight) */
        __atomic_sub_fetch(&s->inflight, 1, __ATOMIC_ACQ_REL);
        r->counted = 0;
    }
    sse *x = calloc(1, sizeof *x);
    if (!x) {
        pthread_mutex_lock(&s->h.mu);
        s->active_streams--;
        pthread_mutex_unlock(&s->h.mu);
        return MHD_NO;
    }
    x->s = srv_of(r->h), x->con = r->con, x->last = after, x->last_send = studio_mono(), x->fd = -1;
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(r->con, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (ci) x->fd = ci->connect_fd;
    snprintf(x->id, sizeof x->id, "%s", id);
    struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, sse_read, x, sse_free);
    if (!resp) {
        sse_free(x);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", "text/event-stream");
    MHD_add_response_header(resp, "X-Accel-Buffering", "no");
    return http_queue(r, 200, resp);
}

/* ---- the daemon ---- */

#define CONNECTION_MEMORY (32 * 1024) /* libmicrohttpd's pool of one connection: its headers and URI */

static void server_free(server *s) {
    pub_close(s->h.pub);
    if (s->watch >= 0) close(s->watch);
    free(s->streams);
    free(s->watched);
    free(s);
}

http *http_start(const studio_opts *o, store *st, super *sv, char *err, size_t n) {
    server *s = calloc(1, sizeof *s);
    if (!s || !(s->streams = calloc((size_t)o->max_streams, sizeof *s->streams)) ||
        !(s->watched = calloc((size_t)o->max_connections, sizeof *s->watched))) {
        if (s) free(s->streams);
        free(s);
        return NULL;
    }
    if ((s->watch = epoll_create1(EPOLL_CLOEXEC)) < 0) {
        snprintf(err, n, "cannot make an epoll set for the event streams: %s", strerror(errno));
        server_free(s);
        return NULL;
    }
    s->h.o = *o, s->h.st = st, s->h.sv = sv, s->h.started = studio_now();
    pthread_mutex_init(&s->h.mu, NULL);
    pub_limits lim = {o->session_rate / 60.0, o->session_rate, o->request_rate, 2.0 * o->request_rate, o->session_inflight,
                      o->ip_inflight, o->ip_sessions, o->ip_runs, (long long)o->quota_mb << 20};
    if (o->public_mode && !(s->h.pub = pub_open(o->root, o->lease_s, o->idle_s, o->max_sessions, &lim, st, sv))) {
        snprintf(err, n, "no memory or thread for %d sessions", o->max_sessions);
        server_free(s);
        return NULL;
    }
    if (!o->public_mode && (api_token(s, err, n) || token_new(s->b.boot_text, sizeof s->b.boot_text))) {
        if (!err[0]) snprintf(err, n, "no random bytes for the bootstrap token");
        server_free(s);
        return NULL;
    }
    if (!o->public_mode) token_digest(s->b.boot_text, strlen(s->b.boot_text), s->b.boot);
    /* the socket first: the port is known before the daemon's threads read it (Host check) */
    struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)o->port)};
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)o->port)};
    int v6 = !strcmp(o->host, "::1"), one = 1;
    if (v6) a6.sin6_addr = in6addr_loopback;
    else a4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct sockaddr *sa = v6 ? (struct sockaddr *)&a6 : (struct sockaddr *)&a4;
    socklen_t len = v6 ? sizeof a6 : sizeof a4;
    int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) || bind(fd, sa, len) || listen(fd, 128) ||
        getsockname(fd, sa, &len)) {
        snprintf(err, n, "cannot listen on %s:%d: %s", o->host, o->port, strerror(errno));
        if (fd >= 0) close(fd);
        server_free(s);
        return NULL;
    }
    s->h.port = ntohs(v6 ? a6.sin6_port : a4.sin_port);
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | (v6 ? MHD_USE_IPv6 : 0);
    unsigned idle = o->public_mode ? 30 : 120; /* seconds a connection may send nothing (streams keep alive every 15) */
    /* connections at once, of one peer address (public mode; a proxy's are all one: 0 then), and
     * each connection's memory for its headers (larger ones get 431) */
    unsigned per_ip = o->public_mode ? (unsigned)o->ip_connections : 0;
    s->h.d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_NOTIFY_COMPLETED, on_done, s, MHD_OPTION_URI_LOG_CALLBACK, raw_uri, NULL,
                              MHD_OPTION_THREAD_POOL_SIZE, 4, MHD_OPTION_CONNECTION_LIMIT, (unsigned)o->max_connections,
                              MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
                              (size_t)CONNECTION_MEMORY, MHD_OPTION_CONNECTION_TIMEOUT, idle, MHD_OPTION_LISTEN_SOCKET, fd,
                              MHD_OPTION_END);
    if (!s->h.d) {
        snprintf(err, n, "cannot start the HTTP daemon on %s:%d", o->host, s->h.port);
        close(fd);
        server_free(s);
        return NULL;
    }
    super_on_tick(sv, resume_streams, s);
    return &s->h;
}

int http_port(const http *h) { return h->port; }
const char *http_bootstrap(const http *h) { return ((const server *)h)->b.boot_text; }
void http_refuse_writes(http *h) { __atomic_store_n(&h->refuse_writes, 1, __ATOMIC_RELEASE); }

void http_stop(http *h) {
    server *s = srv_of(h);
    pthread_mutex_lock(&h->mu);
    s->closing = 1;
    pthread_mutex_unlock(&h->mu);
    resume_streams(s); /* the streams end (closing) */
    MHD_stop_daemon(h->d);
    pthread_mutex_destroy(&h->mu);
    server_free(s);
}
