#!/usr/bin/env python3
"""The capacity of `dpd serve --public` (docs/studio.md "Public mode"; docs/performance.md): all on
127.0.0.1, every loop bounded in count and time; prints a table and never asserts.

  1. 256 idle sessions: the server's RSS, threads and CPU over 5 s of idleness (goals: RSS < 64 MiB,
     CPU < 1 %); the sessions' creation times (p50/p95; goal p95 < 10 ms)
  2. GET /api/v1/runs/ID at concurrency 8, 200 requests each (p50/p95; goal p95 < 20 ms)
  3. N event-stream clients (default 1000) held for S seconds (default 60) while /healthz is asked
     every 0.5 s (max; goal < 100 ms)
  4. a flood of requests from one client address while another is served (its p95 and errors)

Usage: bench/studio_public.py [DPD] [STREAMS] [SECONDS]   (bench/studio_public.sh runs it)"""
import http.client, json, os, re, shutil, socket, statistics, subprocess, sys, tempfile, threading, time

DPD = sys.argv[1] if len(sys.argv) > 1 else "build/dpd"
NSTREAMS = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
HOLD = float(sys.argv[3]) if len(sys.argv) > 3 else 60.0
tmp = tempfile.mkdtemp(prefix="dpd-bench-public-")
root = os.path.join(tmp, "root")
args = [DPD, "serve", "--public", "--test-workers", "--root", root, "--listen", "127.0.0.1:0", "--session-rate", "0",
        "--ip-sessions", "0", "--request-rate", "0", "--session-inflight", "0", "--ip-inflight", "0", "--max-inflight", "0",
        "--max-streams", str(NSTREAMS + 16), "--max-connections", str(NSTREAMS + 64), "--ip-connections", "0",
        "--client-ip-header", "X-Bench-IP", "--max-sessions", "2048", "--disk-reserve-mb", "0"]


def start(argv):  # a server and its port
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    for line in p.stdout:
        m = re.search(rb"listening on http://127.0.0.1:(\d+)", line)
        if m:
            threading.Thread(target=lambda: [None for _ in p.stdout], daemon=True).start()
            return p, int(m.group(1))
    raise SystemExit("dpd serve did not start")


server, port = start(args)
rows = []


def req(method, path, token=None, body=None, ip="198.51.100.1"):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    h = {"X-Bench-IP": ip}
    if token:
        h["Authorization"] = "Bearer " + token
    data = json.dumps(body).encode() if body is not None else None
    if data:
        h["Content-Type"] = "application/json"
    t0 = time.perf_counter()
    c.request(method, path, body=data, headers=h)
    r = c.getresponse()
    b = r.read()
    dt = time.perf_counter() - t0
    c.close()
    return r.status, b, dt


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def proc():  # RSS (KiB), threads, CPU seconds of the server
    st = dict(l.split(":", 1) for l in open(f"/proc/{server.pid}/status").read().splitlines() if ":" in l)
    f = open(f"/proc/{server.pid}/stat").read().rsplit(")", 1)[1].split()
    return int(st["VmRSS"].split()[0]), int(st["Threads"]), (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


try:
    # 1. sessions
    create, tokens = [], []
    for i in range(256):
        s, b, dt = req("POST", "/api/v1/web/sessions", body={}, ip=f"203.0.113.{i % 200}")
        if s == 201:
            tokens.append(json.loads(b)["access_token"])
            create.append(dt * 1000)
    time.sleep(1)
    rss, threads, c0 = proc()
    time.sleep(5)
    c1 = proc()[2]
    rows.append(("256 idle sessions: server RSS", f"{rss / 1024:.1f} MiB", "< 64 MiB"))
    rows.append(("256 idle sessions: threads", str(threads), ""))
    rows.append(("idle CPU over 5 s", f"{(c1 - c0) / 5 * 100:.2f} %", "< 1 %"))
    rows.append((f"session creation ({len(create)} of 256 made), p50 / p95", f"{pct(create, 50):.2f} / {pct(create, 95):.2f} ms",
                 "p95 < 10 ms"))

    # 2. status at concurrency 8
    tok = tokens[0]
    s, b, _ = req("POST", "/api/v1/runs", tok, {"verb": "fake", "dataset": "synth", "options": {"epochs": 300, "epoch_ms": 1000}})
    if s != 201:
        raise SystemExit(f"submit: {s} {b[:300]!r}")
    rid = json.loads(b)["id"]
    lat, errors = [], [0]
    def status_client():
        for _ in range(200):
            s, _, dt = req("GET", f"/api/v1/runs/{rid}", tok)
            if s == 200:
                lat.append(dt * 1000)
            else:
                errors[0] += 1
    ths = [threading.Thread(target=status_client) for _ in range(8)]
    t0 = time.perf_counter()
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    took = time.perf_counter() - t0
    rows.append(("GET /runs/ID at concurrency 8 (1 600), p50 / p95", f"{pct(lat, 50):.2f} / {pct(lat, 95):.2f} ms "
                 f"({len(lat) / took:.0f}/s, {errors[0]} errors)", "p95 < 20 ms"))

    # 3. event streams held open
    socks, opened = [], 0
    for i in range(NSTREAMS):
        t = tokens[1 + i % (len(tokens) - 1)]
        try:
            c = socket.create_connection(("127.0.0.1", port), timeout=10)
            c.sendall((f"GET /api/v1/runs/{rid}/events/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Bench-IP: 192.0.2.{i % 250}\r\n"
                       f"Authorization: Bearer {tokens[0]}\r\n\r\n").encode())
            socks.append(c)
        except OSError:
            break
    time.sleep(1)
    for c in socks:
        try:
            c.settimeout(5)
            opened += c.recv(12).startswith(b"HTTP/1.1 200")
        except OSError:
            pass
    rss_streams, threads_streams, c0 = proc()
    health, t_end = [], time.monotonic() + HOLD
    while time.monotonic() < t_end:
        s, _, dt = req("GET", "/healthz")
        health.append(dt * 1000 if s == 200 else float("inf"))
        time.sleep(0.5)
    c1 = proc()[2]
    for c in socks:
        c.close()
    rows.append((f"{NSTREAMS} event streams asked, open and answered 200", str(opened), ""))
    rows.append((f"/healthz while they are held {HOLD:.0f} s ({len(health)} asks), p50 / max",
                 f"{pct(health, 50):.2f} / {max(health):.2f} ms", "< 100 ms"))
    rows.append(("server RSS and threads with the streams open", f"{rss_streams / 1024:.1f} MiB, {threads_streams}", ""))
    rows.append(("server CPU while holding them", f"{(c1 - c0) / HOLD * 100:.2f} %", ""))
    s, b, _ = req("POST", f"/api/v1/runs/{rid}/cancel", tok, {})

    # 4. a flood from one address while another is served (a second server with the default rates)
    server.terminate()
    server.wait(30)
    args2 = [DPD, "serve", "--public", "--test-workers", "--root", os.path.join(tmp, "root2"), "--listen", "127.0.0.1:0",
             "--client-ip-header", "X-Bench-IP", "--disk-reserve-mb", "0"]
    server, port = start(args2)
    flooder = json.loads(req("POST", "/api/v1/web/sessions", body={}, ip="198.51.100.66")[1])["access_token"]
    victim = json.loads(req("POST", "/api/v1/web/sessions", body={}, ip="198.51.100.77")[1])["access_token"]
    codes, stop = {}, threading.Event()
    def flood():
        while not stop.is_set():
            try:
                s, _, _ = req("GET", "/api/v1/runs", flooder, ip="198.51.100.66")
                s2, _, _ = req("POST", "/api/v1/web/sessions", body={}, ip="198.51.100.66")
            except OSError:
                s = s2 = -1
            codes[s] = codes.get(s, 0) + 1
            codes[("create", s2)] = codes.get(("create", s2), 0) + 1
    fl = [threading.Thread(target=flood) for _ in range(8)]
    for t in fl:
        t.start()
    vlat, verr = [], 0
    t_end = time.monotonic() + 10
    while time.monotonic() < t_end:
        s, _, dt = req("GET", "/api/v1/runs", victim, ip="198.51.100.77")
        if s == 200:
            vlat.append(dt * 1000)
        else:
            verr += 1
        time.sleep(0.1)  # 10 a second, within its rate
    stop.set()
    for t in fl:
        t.join()
    served = codes.get(200, 0)
    limited = codes.get(429, 0)
    made = codes.get(("create", 201), 0)
    rows.append(("a flood of 8 clients from one address, 10 s: its requests served / 429",
                 f"{served} / {limited} (sessions made: {made})", ""))
    rows.append(("another address meanwhile, 10 a second: p50 / p95, errors",
                 f"{pct(vlat, 50):.2f} / {pct(vlat, 95):.2f} ms, {verr}", "no errors"))
finally:
    server.terminate()
    try:
        server.wait(30)
    except subprocess.TimeoutExpired:
        server.kill()
    shutil.rmtree(tmp, ignore_errors=True)

w = max(len(r[0]) for r in rows)
print(f"{'measurement':<{w}}  {'value':<34}  goal")
for name, value, goal in rows:
    print(f"{name:<{w}}  {value:<34}  {goal}")
