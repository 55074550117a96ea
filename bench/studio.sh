#!/bin/sh
# Responsiveness and footprint of `dpd serve` (docs/studio.md) while a training run is active:
# p50/p95 of submit, list and get over ~100 requests each, the event ingest latency (the
# worker's event ts -> visible in GET /events), and the server's RSS and thread count idle,
# busy and with 200 idle keep-alive clients connected; then the training speed of one quick run
# through the studio against the same run from the CLI. Prints a table. Never asserts.
# Usage: bench/studio.sh [path/to/dpd]   WORKLOAD=fake uses a fake run instead of train-pa.
set -eu
DPD=${1:-build/dpd}
command -v python3 >/dev/null 2>&1 || { echo "bench/studio.sh: python3 not found"; exit 0; }
PYTHONDONTWRITEBYTECODE=1 exec python3 - "$DPD" "${WORKLOAD:-train}" <<'EOF'
import http.client, json, os, re, shutil, signal, socket, subprocess, sys, tempfile, threading, time
from datetime import datetime

DPD, WORKLOAD = os.path.abspath(sys.argv[1]), sys.argv[2]
tmp = os.path.realpath(tempfile.mkdtemp(prefix="dpd-studio-bench-"))
env = dict(os.environ, XDG_CONFIG_HOME=os.path.join(tmp, "cfg"), XDG_DATA_HOME=os.path.join(tmp, "data"))
root = os.path.join(tmp, "root")
proc = subprocess.Popen([DPD, "serve", "--root", root, "--listen", "127.0.0.1:0", "--test-workers", "--slots", "2",
                         "--grace", "2"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                        stderr=open(os.path.join(tmp, "server.log"), "wb"), env=env, start_new_session=True)
socks = []


def finish(code):
    for s in socks:
        try:
            s.close()
        except OSError:
            pass
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(code)


port = None
deadline = time.monotonic() + 20
for raw in proc.stdout:
    m = re.search(rb"listening on http://[^:]+:(\d+)", raw)
    if m:
        port = int(m.group(1))
        break
    if time.monotonic() > deadline:
        break
if not port:
    print("bench/studio.sh: the server did not start:", open(os.path.join(tmp, "server.log")).read()[-500:])
    finish(1)
threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()
token = open(os.path.join(root, "api-token")).read().strip()
H = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}


def call(method, path, body=None, conn=None):
    c = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    t0 = time.perf_counter()
    c.request(method, path, body=json.dumps(body) if body is not None else None, headers=H)
    r = c.getresponse()
    data = r.read()
    dt = time.perf_counter() - t0
    if conn is None:
        c.close()
    return r.status, (json.loads(data) if data else None), dt


def status_of(rid):
    return call("GET", f"/api/v1/runs/{rid}")[1]["status"]


def wait(pred, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return False


def proc_status():
    d = {}
    for line in open(f"/proc/{proc.pid}/status"):
        k, _, v = line.partition(":")
        d[k] = v.strip()
    return int(d["VmRSS"].split()[0]) / 1024, int(d["Threads"])


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * q))]


def ts(x):
    return float(x) if isinstance(x, (int, float)) else datetime.fromisoformat(x.replace("Z", "+00:00")).timestamp()


rows, foot = [], []
foot.append(("server idle",) + proc_status())
if WORKLOAD == "fake":
    busy = {"verb": "fake", "dataset": "synth", "options": {"epochs": 1000, "epoch_ms": 200}}
else:
    busy = {"verb": "train-pa", "dataset": "synth",
            "options": {"model": "gru", "hidden": 16, "frame": 50, "stride": 1, "epochs": 1000}}
st, run, _ = call("POST", "/api/v1/runs", busy)
if st != 201:
    print("bench/studio.sh: submit failed:", st, run)
    finish(1)
busy_id = run["id"]
if not wait(lambda: status_of(busy_id) == "running", 60):
    print("bench/studio.sh: the training run did not start")
    finish(1)
time.sleep(1)

# event ingest latency: a fake run in the second slot, polled every 10 ms
st, run, _ = call("POST", "/api/v1/runs", {"verb": "fake", "dataset": "synth", "options": {"epochs": 50, "epoch_ms": 50}})
fid, after, lat, done = run["id"], 0, [], False
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
end = time.monotonic() + 60
while not done and time.monotonic() < end:
    _, j, _ = call("GET", f"/api/v1/runs/{fid}/events?after={after}&limit=5000", conn=conn)
    now = time.time()
    for e in j["events"]:
        if e["type"] != "status":
            lat.append(now - ts(e["ts"]))
        after = e["seq"]
    done = j["terminal"] and after == j["last_seq"]
    time.sleep(0.01)
if lat:
    rows.append((f"event ingest latency ({len(lat)} events), ms", f"{pct(lat, .5) * 1e3:.1f}", f"{pct(lat, .95) * 1e3:.1f}",
                 f"{max(lat) * 1e3:.1f}"))

# submit, list and get while the training run is active (fresh connection each, like a script)
sub, lst, get = [], [], []
ids = []
for i in range(100):
    st, r, dt = call("POST", "/api/v1/runs", {"verb": "fake", "dataset": "synth", "options": {"epochs": 1, "epoch_ms": 0}})
    sub.append(dt)
    ids.append(r["id"])
for i in range(100):
    lst.append(call("GET", "/api/v1/runs")[2])
for i in range(100):
    get.append(call("GET", f"/api/v1/runs/{busy_id}")[2])
for name, xs in (("submit", sub), ("list (100 runs)", lst), ("get run", get)):
    rows.append((f"{name} during training, ms", f"{pct(xs, .5) * 1e3:.2f}", f"{pct(xs, .95) * 1e3:.2f}", f"{max(xs) * 1e3:.2f}"))
foot.append(("server busy (100 finished runs)",) + proc_status())

# 200 idle keep-alive clients, each after one request
for i in range(200):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: keep-alive\r\n\r\n".encode())
    socks.append(s)
ok = 0
for s in socks:
    try:
        if s.recv(4096).startswith(b"HTTP/1.1 200"):
            ok += 1
    except OSError:
        pass
time.sleep(0.5)
fp = proc_status()
alive = 0
for s in socks:
    s.setblocking(False)
    try:
        alive += s.recv(1) != b""  # b"" = closed by the server
    except BlockingIOError:
        alive += 1
    except OSError:
        pass
    s.setblocking(True)
lst2 = [call("GET", "/api/v1/runs")[2] for _ in range(50)]
foot.append((f"200 idle keep-alive clients ({ok} answered, {alive} kept open)",) + fp)
rows.append(("list with 200 idle clients, ms", f"{pct(lst2, .5) * 1e3:.2f}", f"{pct(lst2, .95) * 1e3:.2f}", f"{max(lst2) * 1e3:.2f}"))

for rid in ids + [busy_id]:
    call("POST", f"/api/v1/runs/{rid}/cancel")


# Training speed: the same GRU-23 run (3 epochs of the full preset) through the studio and from the CLI, alternately;
# each timed by its own run directory's events.jsonl (first to last event: no process start-up).
def span(run_dir):
    t = [json.loads(l)["ts"] for l in open(os.path.join(run_dir, "events.jsonl")) if l.strip()]
    return t[-1] - t[0]


wait(lambda: all(status_of(r) in ("succeeded", "failed", "cancelled", "interrupted") for r in ids + [busy_id]), 60)
opts = {"model": "gru", "hidden": 23, "preset": "full", "epochs": 3, "threads": 1}
studio_s, cli_s = [], []
for rep in range(3):
    st, run, _ = call("POST", "/api/v1/runs", {"verb": "train-pa", "dataset": "synth", "options": opts})
    wait(lambda: status_of(run["id"]) == "succeeded", 600)
    studio_s.append(span(call("GET", f"/api/v1/runs/{run['id']}/results")[1]["run_dir"]))
    out = os.path.join(tmp, f"cli{rep}")
    r = subprocess.run([DPD, "train-pa", "--data", os.path.join(root, "datasets", "synth"), "--model", "gru", "--hidden", "23",
                        "--preset", "full", "--epochs", "3", "--threads", "1", "--out", out, "--json"],
                       capture_output=True, env=env)
    cli_s.append(span(json.loads(r.stdout.decode().strip().splitlines()[-1])["run_dir"]))
studio_s.sort(), cli_s.sort()
train_row = (f"GRU-23, frame 200 stride 1, 3 epochs, 1 thread: studio {studio_s[1]:.3f} s, CLI {cli_s[1]:.3f} s (median of 3), "
             f"studio/CLI = {studio_s[1] / cli_s[1]:.3f}")
cpu = os.cpu_count()
print(f"# dpd serve, {WORKLOAD} run active, {cpu} CPUs, --slots 2")
w = max(len(r[0]) for r in rows)
print(f"{'measure':<{w}}  {'p50':>9}  {'p95':>9}  {'max':>9}")
for r in rows:
    print(f"{r[0]:<{w}}  {r[1]:>9}  {r[2]:>9}  {r[3]:>9}")
print()
w = max(len(r[0]) for r in foot)
print(f"{'server footprint':<{w}}  {'RSS MiB':>9}  {'threads':>9}")
for r in foot:
    print(f"{r[0]:<{w}}  {r[1]:>9.1f}  {r[2]:>9}")
print()
print("training speed:", train_row)
finish(0)
EOF
