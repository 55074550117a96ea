/* Fuzzes the studio's request boundary and JSON bodies: a real `dpd serve` (store, supervisor,
 * libmicrohttpd daemon on 127.0.0.1, port chosen by the system) runs in this process with a
 * scratch root and a known API token; each input is sent as the raw bytes of one TCP connection
 * (then half-closed) and the answer read to the end. The server has no compute slot, so a
 * submission that passes every check stays queued (nothing is forked), and its `synth` dataset is
 * a small one made here (the server makes a full one only when it is missing). Oracle besides
 * the sanitizers: whatever comes back starts with an HTTP status line, and the server still
 * answers GET /healthz (checked after every 16th input).
 *
 * Built as tests/fuzz/public.c with FUZZ_PUBLIC 1, the server is `dpd serve --public` (rates and
 * in-flight caps lifted, 60 s leases) and the harness holds a session: `Bearer TOKEN` in an input
 * is replaced by the session's bearer token before it is sent, so the same corpus reaches the
 * authenticated routes; the session is made again whenever an input has ended it. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include "fuzz.h"
#include "studio.h"

#define TOKEN "fuzz-api-token-0123456789abcdefghijklmnopqrstuvw"

#ifndef FUZZ_PUBLIC
#define FUZZ_PUBLIC 0
#endif

static int port;
static char session[44]; /* public mode: the harness's session's token */

static int connect_server(void) {
    for (int tries = 0; tries < 100; tries++) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        struct linger abort_close = {1, 0}; /* close() resets: no TIME_WAIT piling up over millions of inputs */
        if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort_close, sizeof abort_close)) perror("socket"), abort();
        if (!connect(fd, (struct sockaddr *)&a, sizeof a)) return fd;
        int e = errno;
        close(fd);
        if (e != EINTR) errno = e, perror("connect"), abort(); /* EINTR: libFuzzer's timer; try again */
    }
    fprintf(stderr, "http fuzz: connect kept being interrupted\n");
    abort();
}

/* 1 when buf holds a whole response: headers and Content-Length bytes, or a chunked body's end. */
static int complete(const char *buf, size_t n) {
    const char *end = memmem(buf, n, "\r\n\r\n", 4);
    if (!end) return 0;
    size_t head = (size_t)(end - buf) + 4;
    const char *cl = memmem(buf, head, "Content-Length: ", 16);
    if (cl) return n >= head + strtoull(cl + 16, NULL, 10);
    return n >= head + 5 && !memcmp(buf + n - 5, "0\r\n\r\n", 5);
}

/* Sends data, half-closes, reads the answer; returns its first bytes in head. Reading ends at
 * the end of the first response, at end of file, or after a silence of first_ms before the
 * first byte (an incomplete request waits for the server's timeout) or idle_ms after it (an
 * event stream stays open). */
static size_t exchange(const void *data, size_t n, char *head, size_t nhead, int first_ms, int idle_ms) {
    int fd = connect_server();
    size_t off = 0;
    while (off < n) {
        ssize_t w = send(fd, (const char *)data + off, n - off, MSG_NOSIGNAL);
        if (w <= 0) break; /* the server may close early (a refusal): not a finding */
        off += (size_t)w;
    }
    shutdown(fd, SHUT_WR);
    static char buf[1 << 20];
    size_t got = 0;
    ssize_t r;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    while (got < sizeof buf && poll(&p, 1, got ? idle_ms : first_ms) > 0 && (r = recv(fd, buf + got, sizeof buf - got, 0)) > 0) {
        got += (size_t)r;
        if (complete(buf, got)) break;
    }
    memcpy(head, buf, got < nhead ? got : nhead);
    close(fd);
    return got;
}

/* 1 when data holds a whole request the server can answer: the end of the headers, and the
 * Content-Length bytes or a chunked body's last chunk after them. For anything else the server
 * waits for more (until its connection timeout), so there is nothing to wait for here. */
static int whole_request(const char *data, size_t n) {
    const char *end = memmem(data, n, "\r\n\r\n", 4);
    if (!end) return 0;
    size_t head = (size_t)(end - data) + 4;
    const char *cl = memmem(data, head, "Content-Length:", 15);
    if (cl) return n - head >= strtoull(cl + 15, NULL, 10);
    if (memmem(data, head, "chunked", 7)) return n >= head + 5 && !memcmp(data + n - 5, "0\r\n\r\n", 5);
    return 1;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    char path[4096], err[1024] = "";
    fz_xdg();
    studio_opts o;
    studio_defaults(&o);
    o.port = 0, o.slots = 0, o.grace_s = 1, o.test_workers = 1, o.ip_connections = 0;
    if (FUZZ_PUBLIC) { /* every input is one client: nothing but the boundary's own checks refuses it */
        o.public_mode = 1, o.lease_s = 60, o.session_rate = 0, o.request_rate = 0, o.session_inflight = 0;
        o.ip_inflight = 0, o.max_inflight = 0, o.ip_sessions = 0, o.reserve_mb = 0, o.session_runs = 1 << 30;
        o.session_pending = 1 << 30, o.worker_file_mb = 64;
    }
    snprintf(o.root, sizeof o.root, "%s", fz_path(path, "root"));
    snprintf(o.worker_exe, sizeof o.worker_exe, "%s", fz_path(path, "no-such-worker"));
    fz_mkdir(o.root);
    fz_mkdir(fz_path(path, "root/runs"));
    fz_mkdir(fz_path(path, "root/datasets"));
    fz_mkdir(fz_path(path, "root/datasets/uploads"));
    fz_mkdir(fz_path(path, "root/sessions"));
    dpd_synth_cfg sc;
    dpd_error e;
    dpd_synth_defaults(&sc);
    sc.carriers = 1, sc.carrier_bw = 20e6, sc.fs = 80e6, sc.nperseg = 64, sc.length = 640;
    if (dpd_synth_write(&sc, fz_path(path, "root/datasets/synth"), &e)) fprintf(stderr, "synth: %s\n", e.msg), abort();
    fz_write_str(fz_path(path, "root/api-token"), TOKEN);
    chmod(path, 0600);
    store *st = store_open(fz_path(path, "root/studio.db"), err, sizeof err);
    super *sv = st ? super_start(&o, st, err, sizeof err) : NULL;
    http *h = sv ? http_start(&o, st, sv, err, sizeof err) : NULL;
    if (!h) fprintf(stderr, "http fuzz: %s\n", err), abort();
    port = http_port(h);
    return 0; /* the server lives as long as the process */
}

/* Public mode: a session of the harness's own, made anew when the one it has is over. */
static void hold_session(void) {
    static char answer[1 << 12];
    char req[512];
    if (session[0]) {
        snprintf(req, sizeof req, "GET /api/v1/web/session HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
                 "Connection: close\r\n\r\n", session);
        memset(answer, 0, sizeof answer);
        exchange(req, strlen(req), answer, 12, 10000, 10000);
        if (!strncmp(answer, "HTTP/1.1 200", 12)) return;
    }
    static const char create[] = "POST /api/v1/web/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    memset(answer, 0, sizeof answer);
    exchange(create, sizeof create - 1, answer, sizeof answer - 1, 10000, 10000);
    const char *t = strstr(answer, "\"access_token\":\"");
    if (t && strlen(t + 16) > 43 && t[16 + 43] == '"') memcpy(session, t + 16, 43), session[43] = 0;
}

/* data with every "Bearer TOKEN" made the session's bearer token (public mode): into out; its size. */
static size_t with_session(const uint8_t *data, size_t size, uint8_t *out) {
    static const char from[] = "Bearer " TOKEN;
    size_t k = sizeof from - 1, n = 0;
    for (size_t i = 0; i < size;) {
        if (session[0] && size - i >= k && !memcmp(data + i, from, k)) {
            n += (size_t)sprintf((char *)out + n, "Bearer %s", session);
            i += k;
        } else {
            out[n++] = data[i++];
        }
    }
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char head[16] = {0};
    static uint8_t *sub;
    if (FUZZ_PUBLIC) { /* the token is shorter than TOKEN: the input cannot grow */
        if (!session[0]) hold_session();
        if (!(sub = realloc(sub, size + 1))) abort();
        size = with_session(data, size, sub);
        data = sub;
    }
    int whole = whole_request((const char *)data, size);
    size_t got = exchange(data, size, head, sizeof head - 1, whole ? 200 : 2, whole ? 30 : 2);
    if (got && strncmp(head, "HTTP/1.", 7)) {
        fprintf(stderr, "http fuzz: the answer does not start with a status line: %.15s\n", head);
        abort();
    }
    static unsigned long count;
    if (count++ % 16) return 0; /* the health check every 16th input (and the first) */
    static const char health[] = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    /* a server starved of CPU (the fuzzer at a low priority beside other work) can be slow to
     * answer: one that has not answered in 10 s is asked once more, for a minute, before it
     * counts as no longer answering */
    for (int wait_ms = 10000, k = 0; k < 2; k++, wait_ms = 60000) {
        memset(head, 0, sizeof head);
        got = exchange(health, sizeof health - 1, head, sizeof head - 1, wait_ms, wait_ms);
        if (got >= 12 && !strncmp(head, "HTTP/1.1 200", 12)) break;
        if (!k) fprintf(stderr, "http fuzz: /healthz did not answer in 10 s (%.15s); asking again\n", head);
    }
    if (got < 12 || strncmp(head, "HTTP/1.1 200", 12)) {
        fprintf(stderr, "http fuzz: the server no longer answers /healthz (%.15s)\n", head);
        abort();
    }
    if (FUZZ_PUBLIC) hold_session();
    return 0;
}
