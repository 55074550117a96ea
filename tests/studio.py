#!/usr/bin/env python3
"""Black-box tests of `dpd serve` (docs/studio.md), acceptance tests A3-A4, B5-B15 and C16-C19
of the studio reference (A1/A2 are C unit tests of the store).

Usage: python3 tests/studio.py [path/to/dpd] [TEST_NAME...]
Starts the real server on 127.0.0.1:<free port> with a temporary root for each test, drives it
with http.client and prints "PASS name" / "FAIL name: why" / "SKIP name: reason" per test, then
"RESULT studio <passed> <failed> <skipped>". Exit status 1 when a test failed.
Python 3.11 standard library only. STUDIO_QUICK=1 (the sanitized passes of .ci/run) skips the
slow tests: three background ones (sse_keepalive ~18 s, heartbeat_events ~13 s, heartbeat_stale
~62 s: real time, the contract has no test clock), which otherwise run in threads beside the
others (the suite takes ~65 s), and two that train for real, ~65 s each under ThreadSanitizer
(cli_resumes_cancelled_run, other_verbs); the plain pass runs them.
Marked REAL: the tests that train for real (a few seconds each).
"""
import copy
import ctypes
import glob
import hashlib
import http.client
import json
import os
import platform
import random
import re
import shlex
import shutil
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from datetime import datetime

DPD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/dpd")
ONLY = set(sys.argv[2:])
QUICK = os.environ.get("STUDIO_QUICK") == "1"

TERMINAL = {"succeeded", "failed", "cancelled", "interrupted"}
ALLOWED = {  # docs/studio.md "States"
    "queued": {"running", "cancelled", "interrupted"},
    "running": {"succeeded", "failed", "cancel_requested", "interrupted"},
    "cancel_requested": {"cancelled", "failed", "interrupted"},
}
SEC_HEADERS = [("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff"),
               ("Referrer-Policy", "no-referrer"), ("X-Frame-Options", "DENY")]
ERROR_CODE = re.compile(r"^[a-z][a-z0-9_]*$")


class Fail(Exception):
    pass


class Skip(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg() if callable(msg) else msg)


# Every response is audited for the security headers and (for errors) the error body shape;
# violations are reported by two closing pseudo-tests.
_audit_lock = threading.Lock()
header_violations = {}
shape_violations = {}


def audit(status, headers, body, where, stream=False):
    miss = []
    for name, want in SEC_HEADERS:
        v = headers.get(name)
        if v is None or want.lower() not in v.lower():
            miss.append(f"{name}={v!r}")
    with _audit_lock:
        if miss:
            header_violations.setdefault(f"{status} {where}", ", ".join(miss))
    if status >= 400 and not stream and not where.startswith("HEAD "):  # a HEAD's answer has no body, by HTTP
        why = None
        try:
            j = json.loads(body)
            e = j.get("error") if isinstance(j, dict) else None
            if not isinstance(e, dict):
                why = "no error object"
            elif not isinstance(e.get("code"), str) or not ERROR_CODE.match(e["code"]):
                why = f"code {e.get('code')!r}"
            elif not isinstance(e.get("message"), str) or not e["message"]:
                why = "no message"
            elif "field" not in e or "hint" not in e:
                why = f"keys {sorted(e)} (want code, message, field, hint)"
        except Exception:
            why = f"body is not JSON: {body[:80]!r}"
        if why:
            with _audit_lock:
                shape_violations.setdefault(f"{status} {where}", why)


class Resp:
    def __init__(self, status, headers, body, elapsed):
        self.status, self.headers, self.body, self.elapsed = status, headers, body, elapsed
        try:
            self.json = json.loads(body) if body else None
        except Exception:
            self.json = None

    def err(self, key="code"):
        j = self.json
        if isinstance(j, dict) and isinstance(j.get("error"), dict):
            return j["error"].get(key)
        return None

    def __repr__(self):
        return f"HTTP {self.status} {self.body[:400]!r}"


def expect_error(r, status, code=None, field=None, what=""):
    check(r.status == status, f"{what}: got {r!r}, want {status}{' ' + code if code else ''}")
    if code is not None:
        check(r.err() == code, f"{what}: error code {r.err()!r}, want {code!r} ({r!r})")
    if field is not None:
        f = r.err("field")
        check(isinstance(f, str) and (f == field or f.endswith("." + field) or f.endswith("/" + field)),
              f"{what}: error field {f!r}, want {field!r} ({r!r})")


def fake(epochs=3, epoch_ms=200, **kw):
    d = {"epochs": epochs, "epoch_ms": epoch_ms}
    d.update(kw)
    return d


def parse_ts(ts):
    """An event or run timestamp as Unix seconds: a number, or an ISO-8601 string."""
    if isinstance(ts, (int, float)):
        return float(ts)
    if isinstance(ts, str):
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    raise Fail(f"timestamp {ts!r} is neither a number nor ISO-8601")


# ---------------------------------------------------------------------------- processes

def proc_stat(pid):
    """(state, pgrp, starttime) of a process, or None when it does not exist."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
    except OSError:
        return None
    rest = s[s.rindex(")") + 2:].split()
    return rest[0], int(rest[2]), int(rest[19])  # fields 3, 5 and 22


def alive(pid, start=None):
    """The process exists (a zombie counts: nobody reaped it) and, when start is given, is the same one."""
    st = proc_stat(pid)
    return st is not None and (start is None or st[2] == start)


def running(pid, start=None):
    """The process exists, is not a zombie and, when start is given, is the same one."""
    st = proc_stat(pid)
    return st is not None and st[0] != "Z" and (start is None or st[2] == start)


def group_members(pgid):
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            st = proc_stat(int(d))
            if st and st[1] == pgid and not (st[0] == "Z" and int(d) != pgid):
                out.append(int(d))
    return out


def worker_procs(root):
    """Live processes whose argv is `... worker ...` with an argument under root."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if b"worker" in argv and any(a.startswith(root.encode()) for a in argv):
            st = proc_stat(int(d))
            if st and st[0] != "Z":
                out.append(int(d))
    return out


def wait_for(pred, timeout, what, interval=0.02):
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            raise Fail(f"timed out after {timeout} s waiting for {what() if callable(what) else what}")
        time.sleep(interval)


# ---------------------------------------------------------------------------- context and server

LIVE = set()  # contexts not yet cleaned up (for an interrupted run)
LIVE_LOCK = threading.Lock()


class Ctx:
    """One test's temporary directory, environment and servers; cleanup() undoes everything."""

    def __init__(self, name):
        with LIVE_LOCK:
            LIVE.add(self)
        self.name = name
        self.tmp = os.path.realpath(tempfile.mkdtemp(prefix=f"dpd-studio-{name}-"))
        self.env = dict(os.environ)
        for k, sub in (("XDG_CONFIG_HOME", "xdg-config"), ("XDG_DATA_HOME", "xdg-data")):
            os.makedirs(self.path(sub))
            self.env[k] = self.path(sub)
        self.servers = []
        self.nserv = 0
        self.note = None
        self.softs = []

    def soft(self, cond, msg):
        """A check that fails the test only at its end, so the checks after it still run."""
        if not cond:
            self.softs.append(msg() if callable(msg) else msg)

    def path(self, *p):
        return os.path.join(self.tmp, *p)

    def server(self, **kw):
        s = Server(self, **kw)
        s.start()
        return s

    def logs(self, n=12):
        out = []
        for s in self.servers:
            try:
                with open(s.log_path, errors="replace") as f:
                    lines = f.read().splitlines()
                out += [f"[server {s.n} {s.root}] {l}" for l in lines[-n:]]
            except OSError:
                pass
        # and the runs' own logs (a worker that died says why there, not in the server's log)
        roots = sorted({s.root for s in self.servers})
        for log in sorted(l for r in roots for l in glob.glob(os.path.join(r, "**", "logs", "worker.log"), recursive=True)):
            try:
                with open(log, errors="replace") as f:
                    lines = f.read().splitlines()
                out += [f"[{os.path.relpath(log, self.tmp)}] {l}" for l in lines[-n:]]
            except OSError:
                pass
        return out

    def cleanup(self):
        with LIVE_LOCK:
            if self not in LIVE:
                return
            LIVE.discard(self)
        for s in self.servers:
            try:
                s.stop(timeout=12)
            except Exception:
                pass
        # workers a killed server left behind (a test's own doing): by pid, only ours
        for _ in range(3):
            pids = worker_procs(self.tmp)
            if not pids:
                break
            for p in pids:
                try:
                    os.kill(p, signal.SIGCONT)
                    os.kill(p, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.1)
        shutil.rmtree(self.tmp, ignore_errors=True)


_as_ok = None


def as_limit_ok():
    """Whether this dpd runs under public mode's default worker address space (4 GiB): a sanitizer
    build, which reserves terabytes of shadow memory, does not; its public servers then run with
    --worker-memory 0."""
    global _as_ok
    if _as_ok is None:
        p = subprocess.run(["sh", "-c", 'ulimit -v 4194304 && exec "$0" version', DPD], capture_output=True)
        _as_ok = p.returncode == 0
    return _as_ok


class Server:
    def __init__(self, ctx, root=None, args=(), test_workers=True, grace=2):
        ctx.nserv += 1
        self.ctx, self.n = ctx, ctx.nserv
        self.root = root or ctx.path("root")
        self.args, self.test_workers, self.grace = list(args), test_workers, grace
        if "--public" in self.args and "--worker-memory" not in self.args and not as_limit_ok():
            self.args += ["--worker-memory", "0"]
        # behind the proxy of --client-ip-header every request carries it (one without is refused)
        self.base_headers = {}
        if "--client-ip-header" in self.args:
            self.base_headers[self.args[self.args.index("--client-ip-header") + 1]] = "192.0.2.10"
        self.proc = None
        self.lines = []
        self.cv = threading.Condition()
        self.eof = False
        self.port = None
        self.token = None
        self.log_path = ctx.path(f"server{self.n}.log")

    def cmd(self):
        c = [DPD, "serve", "--root", self.root, "--listen", "127.0.0.1:0", "--grace", str(self.grace)]
        if self.test_workers:
            c.append("--test-workers")
        return c + self.args

    def start(self, expect_listen=True, timeout=15):
        self.errf = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.cmd(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=self.errf, env=self.ctx.env, start_new_session=True)
        self.ctx.servers.append(self)
        threading.Thread(target=self._reader, daemon=True).start()
        if not expect_listen:
            return
        line = self.wait_line(r"dpd studio: listening on (http://\S+)", timeout)
        m = re.match(r"http://(127\.0\.0\.1|\[::1\]|localhost):(\d+)", line.group(1))
        check(m, f"listening line {line.group(0)!r} is not http://127.0.0.1:PORT")
        self.port = int(m.group(2))
        check(self.port > 0, "port 0 in the listening line")
        if "--public" in self.args:  # no API token: the helpers act as a first session
            self.token = self.new_session()
            return
        with open(os.path.join(self.root, "api-token")) as f:
            self.token = f.read().strip()
        check(self.token, "ROOT/api-token is empty")

    def new_session(self):  # public mode: a session's token
        r = self.post("/api/v1/web/sessions", {}, auth=False)
        check(r.status == 201 and isinstance(r.json, dict), f"POST /api/v1/web/sessions: {r!r}")
        return r.json["access_token"]

    def as_session(self, token):  # the same server, with another session's token
        other = copy.copy(self)
        other.token = token
        return other

    def _reader(self):
        for raw in self.proc.stdout:
            line = raw.decode(errors="replace").rstrip("\n")
            self.errf.write(b"[stdout] " + raw)
            self.errf.flush()
            with self.cv:
                self.lines.append(line)
                self.cv.notify_all()
        with self.cv:
            self.eof = True
            self.cv.notify_all()

    def wait_line(self, pattern, timeout):
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self.cv:
            while True:
                for l in self.lines:
                    m = rx.search(l)
                    if m:
                        return m
                left = deadline - time.monotonic()
                if self.eof or left <= 0:
                    rc = self.proc.poll()
                    raise Fail(f"server printed no line matching {pattern!r} "
                               f"({'exited ' + str(rc) if self.eof else 'timeout'}); stdout: {self.lines[-5:]}; "
                               f"log: {self.log_tail()}")
                self.cv.wait(min(left, 0.2))

    def output(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def log_tail(self, n=6):
        return " | ".join(self.output().splitlines()[-n:])

    def wait_exit(self, timeout):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, sig=signal.SIGTERM, timeout=12):
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            try:
                os.kill(self.proc.pid, sig)
            except OSError:
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        try:
            self.proc.stdout.close()
        except Exception:
            pass
        return self.proc.returncode

    def kill9(self):
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)
        return self.proc.returncode

    # ---- HTTP
    def req(self, method, path, body=None, raw=None, headers=None, auth=True, timeout=15,
            content_type="application/json"):
        h = dict(self.base_headers)
        if auth:
            h["Authorization"] = "Bearer " + self.token
        data = None
        if body is not None:
            data = json.dumps(body).encode()
        elif raw is not None:
            data = raw if isinstance(raw, bytes) else raw.encode()
        if data is not None and content_type:
            h["Content-Type"] = content_type
        for k, v in (headers or {}).items():
            if v is None:
                h.pop(k, None)
            else:
                h[k] = v
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        t0 = time.monotonic()
        try:
            conn.request(method, path, body=data, headers=h)
            r = conn.getresponse()
            b = r.read()
        finally:
            conn.close()
        resp = Resp(r.status, r.msg, b, time.monotonic() - t0)
        audit(r.status, r.msg, b, f"{method} {path.split('?')[0]}")
        return resp

    def get(self, path, **kw):
        return self.req("GET", path, **kw)

    def post(self, path, body=None, **kw):
        return self.req("POST", path, body=body, **kw)

    def submit(self, verb="fake", dataset="synth", options=None, key=None, expect=201):
        body = {"verb": verb, "dataset": dataset, "options": options if options is not None else fake()}
        if key is not None:
            body["idempotency_key"] = key
        r = self.post("/api/v1/runs", body)
        check(r.status == expect, f"submit {json.dumps(body)}: {r!r} (want {expect})")
        check(isinstance(r.json, dict) and isinstance(r.json.get("id"), str), f"submit: no run object: {r!r}")
        return r.json

    def polled(self, path):
        """GET for a poll: a public session polling fast meets its request rate, and waits as a
        client would (Retry-After), up to five times."""
        r = self.get(path)
        for _ in range(5):
            if r.status != 429 or not isinstance(r.json, dict) or r.json["error"]["code"] != "rate_limited":
                break
            time.sleep(int(r.headers.get("Retry-After", "1")))
            r = self.get(path)
        return r

    def run(self, rid):
        r = self.polled(f"/api/v1/runs/{rid}")
        check(r.status == 200, f"GET run {rid}: {r!r}")
        return r.json

    def cancel(self, rid):
        r = self.post(f"/api/v1/runs/{rid}/cancel")
        check(r.status == 200, f"cancel {rid}: {r!r}")
        return r.json

    def wait_status(self, rid, statuses, timeout, interval=0.03):
        if isinstance(statuses, str):
            statuses = {statuses}
        last = [None]

        def pred():
            last[0] = self.run(rid)
            return last[0] if last[0]["status"] in statuses else None
        return wait_for(pred, timeout, lambda: f"run {rid} in {sorted(statuses)}; last: {last[0]}", interval)

    def wait_running_pid(self, rid, timeout=10):
        """Waits until the run is running with a pid; returns (run, pid, start time)."""
        run = wait_for(lambda: (lambda r: r if r["status"] != "queued" and r.get("pid") else
                                (r if r["status"] in TERMINAL else None))(self.run(rid)),
                       timeout, f"run {rid} to start with a pid")
        check(run["status"] == "running" and run.get("pid"), f"run {rid} did not run: {run}")
        pid = run["pid"]
        st = proc_stat(pid)
        check(st is not None, f"worker pid {pid} of run {rid} does not exist while running")
        return run, pid, st[2]

    def events(self, rid, after=0, limit=None):
        q = f"?after={after}" + (f"&limit={limit}" if limit is not None else "")
        r = self.polled(f"/api/v1/runs/{rid}/events{q}")
        check(r.status == 200, f"events {rid}{q}: {r!r}")
        return r.json

    def all_events(self, rid):
        out, after = [], 0
        while True:
            j = self.events(rid, after, 5000)
            out += j["events"]
            if len(j["events"]) < 5000:
                return out
            after = j["events"][-1]["seq"]

    def wait_event(self, rid, typ, timeout, count=1):
        return wait_for(lambda: [e for e in self.all_events(rid) if e["type"] == typ][count - 1:] or None,
                        timeout, f"{count} {typ} event(s) of run {rid}", 0.05)

    def run_dir(self, rid):
        return os.path.join(self.root, "runs", rid)


def check_events_shape(evs):
    for e in evs:
        check(isinstance(e, dict) and isinstance(e.get("seq"), int) and isinstance(e.get("type"), str)
              and "ts" in e and isinstance(e.get("data"), dict), f"malformed event {e}")


def check_run_consistency(run, evs):
    """Store invariants seen from outside: seq 1..n = last_seq, a status chain of legal
    transitions from queued ending at the run's status, and the record rules."""
    check_events_shape(evs)
    seqs = [e["seq"] for e in evs]
    check(seqs == list(range(1, len(seqs) + 1)), f"run {run['id']}: event seqs are not 1..n: {seqs[:50]}")
    check(run["last_seq"] == len(seqs), f"run {run['id']}: last_seq {run['last_seq']} but {len(seqs)} events")
    check(evs and evs[0]["type"] == "status" and evs[0]["data"].get("to") == "queued",
          f"run {run['id']}: first event is not status to queued: {evs[:1]}")
    check(evs[0]["data"].get("from") in (None, ""), f"run {run['id']}: first status from {evs[0]['data']}")
    prev = None
    for e in evs:
        if e["type"] != "status":
            continue
        d = e["data"]
        if prev is not None:
            check(d.get("from") == prev, f"run {run['id']}: status event {e} does not follow {prev}")
            check(d.get("to") in ALLOWED.get(prev, ()), f"run {run['id']}: illegal transition {prev} -> {d.get('to')}")
        prev = d.get("to")
    check(prev == run["status"], f"run {run['id']}: last status event says {prev}, the run says {run['status']}")
    st = run["status"]
    if st in TERMINAL:
        check(run.get("finished_at") and run.get("reason_code"), f"terminal run without finished_at/reason_code: {run}")
        check(not run.get("heartbeat_stale"), f"terminal run with heartbeat_stale: {run}")
    if st == "succeeded":
        check(run["reason_code"] == "completed", f"succeeded with reason_code {run['reason_code']}")
    if st == "queued":
        check(run.get("pid") is None and run.get("started_at") is None, f"queued run with a worker: {run}")
    if st == "interrupted":
        check(run.get("reason"), f"interrupted run without reason: {run}")
    if st in ("running", "cancel_requested"):
        check(run.get("started_at"), f"{st} run without started_at: {run}")


def read_jsonl(path):
    out = []
    with open(path, "rb") as f:
        for line in f.read().split(b"\n"):
            if line.strip():
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    return out


def check_file_matches_api(srv, rid, evs):
    """The non-status events of the API are exactly events.jsonl's lines, in order (no loss, no duplicate)."""
    path = os.path.join(srv.run_dir(rid), "events.jsonl")
    f = [(e.get("type"), e.get("data")) for e in (read_jsonl(path) if os.path.exists(path) else [])
         if e.get("type") != "status"]
    a = [(e["type"], e["data"]) for e in evs if e["type"] != "status"]
    check(f == a, lambda: f"run {rid}: events.jsonl has {len(f)} non-status events, the API {len(a)}; "
          f"first difference at {next((i for i, (x, y) in enumerate(zip(f, a)) if x != y), min(len(f), len(a)))}")


# ---------------------------------------------------------------------------- SSE client

class SSE:
    def __init__(self, srv, rid, last_event_id=None, after=None, timeout=20):
        self.conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=timeout)
        h = {**srv.base_headers, "Authorization": "Bearer " + srv.token, "Accept": "text/event-stream"}
        if last_event_id is not None:
            h["Last-Event-ID"] = str(last_event_id)
        path = f"/api/v1/runs/{rid}/events/stream" + (f"?after={after}" if after is not None else "")
        self.conn.request("GET", path, headers=h)
        self.resp = self.conn.getresponse()
        self.status = self.resp.status
        body = b"" if self.status == 200 else self.resp.read()
        audit(self.status, self.resp.msg, body, "GET /api/v1/runs/ID/events/stream", stream=self.status == 200)
        if self.status != 200:
            self.close()
            raise Fail(f"SSE {path}: HTTP {self.status} {body[:300]!r}")
        ct = self.resp.getheader("Content-Type", "")
        check(ct.startswith("text/event-stream"), f"SSE Content-Type {ct!r}")

    def frame(self):
        """The next frame: {'id','event','data'} (data parsed), {'comment': text}, or None at EOF."""
        fields = {}
        while True:
            line = self.resp.readline()
            if not line:
                check(not fields, f"SSE stream ended inside a frame: {fields}")
                return None
            check(line.endswith(b"\n"), f"SSE line without newline: {line!r}")
            line = line.rstrip(b"\r\n").decode()
            if line == "":
                if fields:
                    break
                continue
            if line.startswith(":"):
                if not fields:
                    return {"comment": line[1:].strip()}
                continue
            k, _, v = line.partition(":")
            v = v[1:] if v.startswith(" ") else v
            check(k in ("id", "event", "data", "retry"), f"SSE unknown field line {line!r}")
            check(k not in fields or k == "data", f"SSE field {k} twice in a frame")
            fields[k] = fields[k] + "\n" + v if k in fields else v
        check("event" in fields and "data" in fields, f"SSE frame without event/data: {fields}")
        try:
            fields["data"] = json.loads(fields["data"])
        except ValueError:
            raise Fail(f"SSE data is not JSON: {fields['data'][:200]!r}")
        if fields["event"] != "end":
            check("id" in fields and fields["id"].isdigit(), f"SSE event frame without a numeric id: {fields}")
            d = fields["data"]
            check(isinstance(d, dict) and d.get("seq") == int(fields["id"]) and d.get("type") == fields["event"],
                  f"SSE frame id/event disagree with its data: {fields}")
        return fields

    def read_to_end(self, limit_s=30):
        """Event frames up to `end`, the end frame; checks that the connection closes after it."""
        frames, deadline = [], time.monotonic() + limit_s
        while True:
            check(time.monotonic() < deadline, "SSE: no end frame in time")
            f = self.frame()
            check(f is not None, f"SSE closed without an end frame after {len(frames)} frames")
            if "comment" in f:
                continue
            if f["event"] == "end":
                rest = self.resp.readline()
                while rest in (b"\n", b"\r\n"):
                    rest = self.resp.readline()
                check(rest == b"", f"SSE: data after the end frame: {rest[:100]!r}")
                return frames, f
            frames.append(f)

    def close(self):
        try:
            self.conn.sock and self.conn.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.conn.close()


# ---------------------------------------------------------------------------- tests

TESTS = []


def test(background=False, slow=False):
    def deco(fn):
        TESTS.append((fn.__name__[2:], fn, background, slow))
        return fn
    return deco


@test()
def t_serve_help(ctx):
    r = subprocess.run([DPD, "serve", "--help"], capture_output=True, timeout=10, env=ctx.env)
    check(r.returncode == 0 and b"usage" in r.stdout, f"dpd serve --help: exit {r.returncode}, stdout {r.stdout[:200]!r}")
    for opt in (b"--root", b"--listen", b"--slots", b"--data", b"--grace", b"--max-runtime", b"--worker-memory",
                b"--test-workers"):
        check(opt in r.stdout, f"dpd serve --help does not list {opt.decode()}")
    r = subprocess.run([DPD, "serve", "--listen", "0.0.0.0:0", "--root", ctx.path("r")], capture_output=True,
                       timeout=10, env=ctx.env)
    check(r.returncode != 0, "dpd serve --listen 0.0.0.0:0 (not loopback) started")


# ---- access

@test()
def t_startup_files(ctx):
    s = ctx.server()
    out = "\n".join(s.lines)
    s.wait_line(r"sign in \(once, within 10 minutes\): http://127\.0\.0\.1:\d+/api/v1/session/bootstrap\?token=\S+", 5)
    s.wait_line(r"API token for scripts: " + re.escape(os.path.join(s.root, "api-token")), 5)
    check(stat.S_IMODE(os.stat(s.root).st_mode) == 0o700, f"root mode {oct(os.stat(s.root).st_mode)}, want 0700")
    m = stat.S_IMODE(os.stat(os.path.join(s.root, "api-token")).st_mode)
    check(m == 0o600, f"api-token mode {oct(m)}, want 0600")
    check(re.fullmatch(r"[A-Za-z0-9_-]{43}=?", s.token), f"api-token is not 32 bytes of base64url: {len(s.token)} chars")
    for f in (".dpd-studio", ".lock", "studio.db"):
        check(os.path.exists(os.path.join(s.root, f)), f"ROOT/{f} missing")
    check(s.token not in out, "the API token is printed on stdout")
    r = s.get("/healthz", auth=False)
    check(r.status == 200 and r.json.get("ok") is True and isinstance(r.json.get("version"), str), f"/healthz: {r!r}")
    # the token survives a restart
    tok = s.token
    check(s.stop() == 0, "SIGTERM: exit status not 0")
    s2 = ctx.server(root=s.root)
    check(s2.token == tok, "api-token changed on restart")
    check(s2.get("/api/v1/runs").status == 200, "the same token is refused after a restart")


@test()
def t_unauthorized(ctx):
    s = ctx.server()
    for path in ("/api/v1/runs", "/api/v1/system/status", "/api/v1/datasets", "/api/v1/runs/rnosuch",
                 "/api/v1/nosuch", "/api/v1/session"):
        expect_error(s.get(path, auth=False), 401, "unauthorized", what=f"GET {path} without a token")
    expect_error(s.post("/api/v1/runs", {"verb": "fake", "dataset": "synth", "options": fake()}, auth=False),
                 401, "unauthorized", what="POST /runs without a token")
    bad = s.token[:-1] + ("A" if s.token[-1] != "A" else "B")
    expect_error(s.get("/api/v1/runs", auth=False, headers={"Authorization": "Bearer " + bad}), 401, "unauthorized",
                 what="a token that differs in its last character")
    expect_error(s.get("/api/v1/runs", auth=False, headers={"Authorization": "Basic " + s.token}), 401,
                 "unauthorized", what="the token as Basic")
    expect_error(s.get("/api/v1/runs?access_token=" + s.token, auth=False), 401, "unauthorized",
                 what="the token in the query string")
    check(s.get("/healthz", auth=False).status == 200, "/healthz needs authentication")
    check(s.get("/api/v1/runs").status == 200, "the bearer token is refused")
    for a in ("bearer " + s.token, "BEARER  " + s.token):  # the scheme in any case, then 1*SP (RFC 9110, 6750)
        check(s.get("/api/v1/runs", auth=False, headers={"Authorization": a}).status == 200, f"{a[:9]!r}...: refused")
    # the 401 says which: no header, another scheme, or a token that is not this server's
    for h, want in (({}, "no Authorization header"), ({"Authorization": "Basic " + s.token}, "of the Bearer scheme"),
                    ({"Authorization": "Bearer " + bad}, "the bearer token is not this server's API token"),
                    ({"Authorization": "Bearer"}, "the bearer token is missing"), ({"Authorization": "Bearer   "}, "the bearer token is missing")):
        r = s.get("/api/v1/runs", auth=False, headers=h)
        check(r.status == 401 and want in r.err("message"), f"401 for {list(h)}: {r!r}")


@test()
def t_host_not_allowed(ctx):
    s = ctx.server()
    p = s.port
    for host in ("evil.example", f"evil.example:{p}", f"127.0.0.1.evil.example:{p}", f"localhost.evil:{p}",
                 f"attacker.localhost.example:{p}"):
        expect_error(s.get("/api/v1/runs", headers={"Host": host}), 403, "host_not_allowed", what=f"Host {host}")
        expect_error(s.post("/api/v1/runs", {"verb": "fake", "dataset": "synth", "options": fake()},
                            headers={"Host": host}), 403, "host_not_allowed", what=f"POST with Host {host}")
    expect_error(s.get("/healthz", auth=False, headers={"Host": "evil.example"}), 403, "host_not_allowed",
                 what="/healthz with Host evil.example")
    for host in (f"127.0.0.1:{p}", "127.0.0.1", f"localhost:{p}", "localhost", f"[::1]:{p}", "[::1]"):
        r = s.get("/api/v1/system/status", headers={"Host": host})
        check(r.status == 200, f"Host {host} refused: {r!r}")
    s.submit(options=fake(1, 0))
    r = s.get("/api/v1/runs")
    check(r.json["total"] == 1, f"a POST with a foreign Host created a run: total {r.json['total']}")


@test()
def t_local_origin(ctx):  # local mode: a page of another site may not call the API, even with a valid credential
    s = ctx.server()
    p = s.port
    body = {"verb": "fake", "dataset": "synth", "options": fake(1, 0)}
    for origin in ("http://evil.example", f"http://evil.example:{p}", "null", f"https://127.0.0.1:{p}",
                   f"http://127.0.0.1:{p + 1}", f"http://localhost:{p}", f"http://127.0.0.1:{p}/"):
        expect_error(s.post("/api/v1/runs", body, headers={"Origin": origin}), 403, "origin_not_allowed",
                     what=f"POST with Origin {origin}")
        expect_error(s.get("/api/v1/runs", headers={"Origin": origin}), 403, "origin_not_allowed",
                     what=f"GET with Origin {origin}")
    expect_error(s.post("/api/v1/runs", body, headers={"Sec-Fetch-Site": "cross-site"}), 403, "origin_not_allowed",
                 what="POST marked Sec-Fetch-Site: cross-site")
    check(s.get("/api/v1/runs").json["total"] == 0, "a refused POST created a run")
    # the studio's own pages: Origin as the Host header names the server, any loopback name
    for host in (f"127.0.0.1:{p}", f"localhost:{p}", f"LOCALHOST:{p}"):
        r = s.get("/api/v1/system/status", headers={"Host": host, "Origin": "http://" + host.lower(),
                                                     "Sec-Fetch-Site": "same-origin"})
        check(r.status == 200, f"Origin http://{host.lower()} with Host {host} refused: {r!r}")
    r = s.post("/api/v1/runs", body, headers={"Origin": f"http://127.0.0.1:{p}"})
    check(r.status == 201, f"POST with the server's own Origin: {r!r}")
    r = s.get("/", auth=False, headers={"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"})
    check(r.status == 200, f"a link to the UI from another site is not served: {r!r}")


def _cookie(resp):
    for c in resp.headers.get_all("Set-Cookie") or []:
        parts = [p.strip() for p in c.split(";")]
        name, _, val = parts[0].partition("=")
        if name == "dpd_session":
            return val, {p.split("=")[0].lower(): (p.split("=", 1)[1] if "=" in p else True) for p in parts[1:]}
    return None, None


@test()
def t_bootstrap_cookie(ctx):
    s = ctx.server()
    url = s.wait_line(r"sign in .*?(http://\S+/api/v1/session/bootstrap\?token=\S+)", 5).group(1)
    path = url[url.index("/api/"):]
    r = s.get(path, auth=False)
    check(r.status == 303, f"bootstrap URL: {r!r}, want 303")
    loc = r.headers.get("Location", "")
    check(loc == "/" or re.fullmatch(r"http://[^/]+/", loc), f"bootstrap Location {loc!r}, want /")
    val, attrs = _cookie(r)
    check(val, f"bootstrap: no dpd_session cookie: {r.headers.get_all('Set-Cookie')}")
    check(attrs.get("httponly") is True, f"cookie not HttpOnly: {attrs}")
    check(str(attrs.get("samesite", "")).lower() == "strict", f"cookie not SameSite=Strict: {attrs}")
    check(attrs.get("path") == "/", f"cookie Path {attrs.get('path')!r}, want /")
    # one time only
    r2 = s.get(path, auth=False)
    check(400 <= r2.status < 500 and not _cookie(r2)[0], f"the bootstrap token worked twice: {r2!r}")
    r2 = s.post("/api/v1/session/bootstrap", {"token": path.split("token=", 1)[1]}, auth=False)
    check(400 <= r2.status < 500 and not _cookie(r2)[0], f"the used bootstrap token worked by POST: {r2!r}")
    ck = {"Cookie": "dpd_session=" + val}
    r = s.get("/api/v1/session", auth=False, headers=ck)
    check(r.status == 200 and isinstance(r.json.get("csrf"), str) and r.json["csrf"], f"GET /session: {r!r}")
    csrf = r.json["csrf"]
    check(s.get("/api/v1/runs", auth=False, headers=ck).status == 200, "GET /runs with the cookie refused")
    body = {"verb": "fake", "dataset": "synth", "options": fake(1, 0)}
    expect_error(s.post("/api/v1/runs", body, auth=False, headers=ck), 403, "csrf_required", what="POST without X-CSRF-Token")
    expect_error(s.post("/api/v1/runs", body, auth=False, headers=dict(ck, **{"X-CSRF-Token": csrf + "x"})), 403,
                 "csrf_required", what="POST with a wrong X-CSRF-Token")
    r = s.post("/api/v1/runs", body, auth=False, headers=dict(ck, **{"X-CSRF-Token": csrf}))
    check(r.status == 201, f"POST with cookie and X-CSRF-Token: {r!r}")
    rid = r.json["id"]
    expect_error(s.post(f"/api/v1/runs/{rid}/cancel", auth=False, headers=ck), 403, "csrf_required",
                 what="cancel without X-CSRF-Token")
    check(s.get("/api/v1/runs").json["total"] == 1, "a refused POST created a run")
    expect_error(s.get("/api/v1/runs", auth=False, headers={"Cookie": "dpd_session=" + val[:-2] + "zz"}), 401,
                 "unauthorized", what="a forged session cookie")


@test()
def t_bootstrap_post(ctx):
    s = ctx.server()
    url = s.wait_line(r"sign in .*?(http://\S+/api/v1/session/bootstrap\?token=\S+)", 5).group(1)
    tok = url.split("token=", 1)[1]
    r = s.post("/api/v1/session/bootstrap", {"token": tok + "x"}, auth=False)
    check(400 <= r.status < 500 and not _cookie(r)[0], f"a wrong bootstrap token was accepted: {r!r}")
    r = s.post("/api/v1/session/bootstrap", {"token": tok}, auth=False)
    check(r.status == 200, f"POST bootstrap: {r!r}")
    val, attrs = _cookie(r)
    check(val and attrs.get("httponly") is True and str(attrs.get("samesite", "")).lower() == "strict",
          f"POST bootstrap cookie: {r.headers.get_all('Set-Cookie')}")
    csrf = r.json.get("csrf") if r.json else None
    check(isinstance(csrf, str) and csrf, f"POST bootstrap gave no csrf: {r!r}")
    ck = {"Cookie": "dpd_session=" + val, "X-CSRF-Token": csrf}
    r = s.post("/api/v1/runs", {"verb": "fake", "dataset": "synth", "options": fake(1, 0)}, auth=False, headers=ck)
    check(r.status == 201, f"POST /runs with the POST-bootstrap session: {r!r}")
    r = s.post("/api/v1/session/bootstrap", {"token": tok}, auth=False)
    check(400 <= r.status < 500 and not _cookie(r)[0], f"the bootstrap token worked twice: {r!r}")


@test()
def t_bootstrap_api_token(ctx):  # a browser signed in again with ROOT/api-token, by POST only; one session at a time
    s = ctx.server()
    url = s.wait_line(r"sign in .*?(http://\S+/api/v1/session/bootstrap\?token=\S+)", 5).group(1)
    r = s.get("/api/v1/session/bootstrap?token=" + s.token, auth=False)
    check(r.status == 401 and not _cookie(r)[0], f"the API token in a sign-in URL (GET) was accepted: {r!r}")
    r1 = s.post("/api/v1/session/bootstrap", {"token": s.token}, auth=False)
    check(r1.status == 200 and _cookie(r1)[0] and r1.json and r1.json.get("csrf"), f"POST bootstrap with the API token: {r1!r}")
    first = {"Cookie": "dpd_session=" + (_cookie(r1)[0] or "")}
    check(s.get("/api/v1/runs", auth=False, headers=first).status == 200, "the API token's browser session refused")
    r2 = s.post("/api/v1/session/bootstrap", {"token": s.token}, auth=False)
    check(r2.status == 200 and _cookie(r2)[0], f"the API token did not sign in a second time: {r2!r}")
    second = {"Cookie": "dpd_session=" + (_cookie(r2)[0] or "")}
    r = s.get("/api/v1/runs", auth=False, headers=first)
    expect_error(r, 401, "unauthorized", what="the replaced session's cookie")
    check("the session cookie is not this server's" in (r.err("message") or ""), f"a replaced cookie's 401 message: {r!r}")
    check(s.get("/api/v1/runs", auth=False, headers=second).status == 200, "the newer browser session refused")
    r = s.req("HEAD", url[url.index("/api/"):], auth=False)  # a link previewer's HEAD: 405, and the link not spent
    check(r.status == 405 and r.headers.get("Allow") == "GET, POST" and not _cookie(r)[0], f"HEAD of the sign-in link: {r!r}")
    r = s.get(url[url.index("/api/"):], auth=False)  # the API token's sign-ins did not use up the one-time link
    check(r.status == 303 and _cookie(r)[0], f"the sign-in link after the API token's sign-ins: {r!r}")
    third = {"Cookie": "dpd_session=" + (_cookie(r)[0] or "")}
    expect_error(s.get("/api/v1/runs", auth=False, headers=dict(third, Authorization="Bearer wrong")), 401, "unauthorized",
                 what="a wrong bearer token beside a valid cookie")
    csrf = s.get("/api/v1/session", auth=False, headers=third).json["csrf"]
    body = {"verb": "fake", "dataset": "synth", "options": fake(1, 0)}
    r = s.post("/api/v1/runs", body, auth=False, headers=dict(third, **{"X-CSRF-Token": csrf + "x"}))
    expect_error(r, 403, "csrf_required", what="a wrong X-CSRF-Token")
    check(r.err("message") == "the X-CSRF-Token header is not this session's", f"a wrong X-CSRF-Token's message: {r!r}")
    r = s.post("/api/v1/runs", body, auth=False, headers=third)
    check(r.err("message") == "a write with the session cookie needs the X-CSRF-Token header", f"no X-CSRF-Token: {r!r}")
    expect_error(s.post("/api/v1/session/bootstrap", {"token": s.token + "x"}, auth=False), 401, "unauthorized",
                 field="token", what="a wrong token by POST")
    # a body or a query the sign-in does not take: told as the API tells it (422), not as a wrong token (401)
    for raw, code, field in (("{", "invalid_json", None), ("[]", "invalid_json", None),
                             ('{"token": 5}', "invalid_request", "token"), ("{}", "invalid_request", "token"),
                             ('{"token": "x", "remember": true}', "invalid_request", "remember")):
        expect_error(s.post("/api/v1/session/bootstrap", raw=raw, content_type="application/json", auth=False), 422, code,
                     field=field, what=f"POST bootstrap {raw}")
    expect_error(s.get("/api/v1/session/bootstrap?token=x&next=/", auth=False), 422, "invalid_query", field="next",
                 what="a sign-in link with another argument")
    expect_error(s.get("/healthz?verbose=1", auth=False), 422, "invalid_query", field="verbose", what="/healthz?verbose=1")


@test()
def t_security_headers(ctx):
    s = ctx.server()
    rid = s.submit(options=fake(1, 0))["id"]
    resps = [s.get("/healthz", auth=False), s.get("/api/v1/runs"), s.get("/api/v1/runs", auth=False),
             s.get("/api/v1/runs", headers={"Host": "evil.example"}), s.get("/api/v1/runs/rnosuch"),
             s.post("/api/v1/runs", {"verb": "fake", "dataset": "nosuch", "options": {}}),
             s.post("/api/v1/runs", raw="{", content_type="application/json"), s.get(f"/api/v1/runs/{rid}"),
             s.get("/nosuch", auth=False), s.get("/api/v1/nosuch")]
    for r in resps:
        for name, want in SEC_HEADERS:
            v = r.headers.get(name)
            check(v is not None and want.lower() in v.lower(), f"{r.status} response: {name}: {v!r}, want {want}")
        if r.status >= 400:
            check(r.err() and r.err("message") is not None, f"error body shape: {r!r}")
    r = s.get("/api/v1/runs")
    check(r.headers.get("Content-Type", "").startswith("application/json"), f"JSON Content-Type: {r.headers.get('Content-Type')}")
    check(r.headers.get("Access-Control-Allow-Origin") is None, "Access-Control-Allow-Origin is set")


@test()
def t_body_limits(ctx):
    s = ctx.server()
    big = json.dumps({"verb": "fake", "dataset": "synth", "options": fake(1, 0), "pad": "x" * 65536}).encode()
    check(len(big) > 65536, "body too small")
    expect_error(s.post("/api/v1/runs", raw=big), 413, "payload_too_large", what="a 64 KiB+ submit")
    expect_error(s.post("/api/v1/runs", raw="verb=fake", content_type="application/x-www-form-urlencoded"), 415,
                 "json_required", what="a form-encoded POST")
    expect_error(s.post("/api/v1/runs", raw="hello", content_type="text/plain"), 415, "json_required",
                 what="a text/plain POST")
    expect_error(s.post("/api/v1/runs", raw='{"verb": "fake",'), 422, "invalid_json", what="truncated JSON")
    expect_error(s.post("/api/v1/runs", raw=b'{"verb": "\xff\xfe"}'), 422, what="invalid UTF-8")
    r = s.post("/api/v1/runs", raw='{"verb": "fake", "dataset": "a\\u0000b"}')
    expect_error(r, 422, "invalid_json", what="an escaped NUL in a string")
    check("\\u0000 (NUL) in a string is not allowed" in (r.err("message") or "") and "ALLOW" not in (r.err("message") or ""),
          f"an escaped NUL's message names the parser's flag: {r!r}")
    r = s.post("/api/v1/runs", {"dataset": "synth"})
    expect_error(r, 422, "invalid_config", field="verb", what="no verb")
    check((r.err("message") or "").startswith("verb: required, as a string: train-pa, train-dpd or fit-ls"), f"no verb: {r!r}")
    deep = '{"verb": "fake", "dataset": "synth", "options": {"x": ' + "[" * 40 + "]" * 40 + "}}"
    expect_error(s.post("/api/v1/runs", raw=deep), 422, what="JSON 40 levels deep")
    at = lambda d: '{"verb": "fake", "dataset": "synth", "options": {"x": ' + "[" * d + "]" * d + "}}"  # depth d + 2
    r = s.post("/api/v1/runs", raw=at(14))
    check(r.status == 422 and r.json["error"]["code"] == "invalid_config", f"16 levels reach validation: {r!r}")
    r = s.post("/api/v1/runs", raw=at(15))
    check(r.status == 422 and r.json["error"]["code"] == "invalid_json" and "before parsing" in r.json["error"]["message"],
          f"17 levels are refused before parsing: {r!r}")
    r = s.post("/api/v1/runs", raw='{"verb": "fake", "n": ' + "9" * 60000 + "}")
    check(r.status == 422 and "longer than 64" in r.json["error"]["message"], f"a 60 000-digit number: {r!r}")
    r = s.post("/api/v1/runs", raw=b'{"verb": "fake", "dataset": "syn\x00th"}')
    check(r.status == 422 and "NUL byte at offset 32" in r.json["error"]["message"], f"a NUL byte in the body: {r!r}")
    very = "[" * 100000 + "]" * 100000
    expect_error(s.post("/api/v1/runs", raw=very), 413, what="100 000-deep JSON over 64 KiB")
    expect_error(s.post("/api/v1/runs", raw="[" * 30000 + "]" * 30000), 422, what="30 000-deep JSON")
    expect_error(s.post("/api/v1/runs", raw='{"verb": "fake", "dataset": "synth", "options": {"epochs": 1' + "0" * 5000 + "}}"),
                 422, what="a 5000-digit number")
    check(s.get("/healthz", auth=False).status == 200, "server unresponsive after hostile bodies")
    check(s.get("/api/v1/runs").json["total"] == 0, "a refused body created a run")


def raw_http(srv, head, body=b"", timeout=10):  # one request as raw bytes; the status code of the answer
    with socket.create_connection(("127.0.0.1", srv.port), timeout=timeout) as c:
        c.sendall(head.encode() + body)
        c.shutdown(socket.SHUT_WR)
        data = b""
        while True:
            b = c.recv(65536)
            if not b:
                break
            data += b
    m = re.match(rb"HTTP/1\.[01] (\d{3})", data)
    return (int(m.group(1)) if m else None), data


@test()
def t_duplicate_headers(ctx):  # a header the server reads once, given twice: 400 ambiguous_headers, in both modes
    for args in ([], ["--public"]):
        s = ctx.server(root=ctx.path("dup-" + ("public" if args else "local")), args=args)
        base = [f"Host: 127.0.0.1:{s.port}", f"Authorization: Bearer {s.token}"]
        def get(headers):
            return raw_http(s, "GET /api/v1/runs HTTP/1.1\r\n" + "".join(h + "\r\n" for h in headers) + "Connection: close\r\n\r\n")
        check(get(base)[0] == 200, f"{args}: each header once")
        for extra in (base[:1], base[1:], ["Origin: http://127.0.0.1"] * 2, ["Content-Type: application/json"] * 2):
            st, data = get(base + extra)
            check(st == 400 and b"ambiguous_headers" in data, f"{args}: {extra[0].split(':')[0]} twice: {st} {data[:200]!r}")
        body = b'{"verb": "fake"}'
        head = ("POST /api/v1/runs HTTP/1.1\r\n" + "".join(h + "\r\n" for h in base) + "Content-Type: application/json\r\n"
                + f"Content-Length: {len(body)}\r\n" * 2 + "Connection: close\r\n\r\n")
        st, data = raw_http(s, head, body)
        check(st == 400, f"{args}: Content-Length twice: {st} {data[:200]!r}")  # MHD's own 400, or ours
        check(s.get("/healthz", auth=False).status == 200, "healthz after")


@test()
def t_uri_limits(ctx):  # path over 512 bytes, more than 32 query arguments: 414; a name over 64 or a value over 1024: 422
    s = ctx.server()
    check(s.get("/api/v1/runs?limit=5").status == 200, "an ordinary query")
    expect_error(s.get("/api/v1/runs/" + "r" * 520), 414, "uri_too_long", what="a 533-byte path")
    expect_error(s.get("/api/v1/runs?" + "&".join(f"a{i}=1" for i in range(33))), 414, "uri_too_long", what="33 arguments")
    expect_error(s.get("/api/v1/runs?" + "n" * 65 + "=1"), 422, "invalid_query", what="a 65-byte name")
    expect_error(s.get("/api/v1/runs?limit=" + "1" * 1025), 422, "invalid_query", what="a 1025-byte value")
    check(s.get("/api/v1/runs?limit=" + "0" * 1020 + "5").status == 200, "a 1021-byte value")
    many = "&".join(f"a{i}=" + "x" * 1000 for i in range(5))
    expect_error(s.get("/api/v1/runs?" + many), 414, "uri_too_long", what="5 values of 1000 bytes (over 4096 in all)")
    check(s.get("/healthz", auth=False).status == 200, "healthz after")



@test()
def t_uri_hidden(ctx):  # what decoding hides (%00, %2F in the path), an argument given twice, a number with a sign
    s = ctx.server()
    rid = s.submit(options=fake(1, 0))["id"]
    s.wait_status(rid, TERMINAL, 10)
    check(s.get(f"/api/v1/runs/{rid}").status == 200, "the run")
    for path in (f"/api/v1/runs/{rid}%00junk", f"/api/v1/runs%2f{rid}", f"/api/v1/runs%2F{rid}",
                 f"/api/v1/runs/{rid}/events?after=0%00x", f"/api/v1/runs/{rid}%00"):
        expect_error(s.get(path), 400, "invalid_uri", what=path)
    r = s.get("/api/v1/runs?status=a%2Fb")  # read as the text "a/b": no such status, not a hidden byte
    check(r.status == 422 and r.err("field") == "status", f"an encoded '/' in a query value is text: {r!r}")
    expect_error(s.get(f"/api/v1/runs/{rid}/events?after=0&after=5"), 400, "ambiguous_query", "after", what="after twice")
    expect_error(s.get("/api/v1/runs?limit=5&offset=0&limit=50"), 400, "ambiguous_query", "limit", what="limit twice")
    for v in ("+1", "%201", "1%20", "0x1", "1e0", "", "-"):
        expect_error(s.get(f"/api/v1/runs/{rid}/events?after={v}"), 422, "invalid_query", what=f"after={v!r}")
    check(s.get(f"/api/v1/runs/{rid}/events?after=1").status == 200, "after=1")
    for h in ("+1", "0x1", "1 2"):
        expect_error(s.get(f"/api/v1/runs/{rid}/events/stream", headers={"Last-Event-ID": h}), 422, "invalid_query",
                     what=f"Last-Event-ID: {h}")
    raw = "status=" + "%41" * 1000 + "&x=" + "%41" * 500  # 4 510 bytes as sent, 1 509 decoded
    expect_error(s.get("/api/v1/runs?" + raw), 414, "uri_too_long", what="a query over 4096 bytes as sent")
    # a file of the run directory is read as a regular file only, never through a link put in its place
    secret = ctx.path("secret.json")
    with open(secret, "w") as f:
        json.dump({"summary": {"secret": "not yours"}, "outcome": "completed"}, f)
    result = os.path.join(s.run_dir(rid), "result.json")
    check(s.get(f"/api/v1/runs/{rid}/results").status == 200, "the results before")
    os.replace(result, result + ".orig")
    os.symlink(secret, result)
    r = s.get(f"/api/v1/runs/{rid}/results")
    check(r.status == 404 and b"not yours" not in r.body, f"results through a link: {r!r}")
    os.replace(result + ".orig", result)
    plots = os.path.join(s.run_dir(rid), "out", "fake", "plots")
    check(s.get(f"/api/v1/runs/{rid}/plots").status == 200, "the plot data before")
    other = ctx.path("other-plots")
    os.makedirs(other)
    with open(os.path.join(other, "plots.json"), "w") as f:
        json.dump({"secret": "not yours"}, f)
    shutil.rmtree(plots)
    os.symlink(other, plots)  # a link on the way (the directory), not the file itself
    r = s.get(f"/api/v1/runs/{rid}/plots")
    check(r.status == 404 and b"not yours" not in r.body, f"plot data through a linked directory: {r!r}")


# ---- submit validation

@test()
def t_submit_validation(ctx):
    s = ctx.server()
    R = "/api/v1/runs"

    def sub(verb="train-pa", dataset="synth", **opts):
        return s.post(R, {"verb": verb, "dataset": dataset, "options": opts})
    expect_error(sub(nosuch=1), 422, "invalid_config", "nosuch", "unknown option")
    expect_error(sub(hidden=0), 422, "invalid_config", "hidden", "hidden 0")
    expect_error(sub(hidden=100000), 422, "invalid_config", "hidden", "hidden 100000")
    expect_error(sub(lr="nan"), 422, "invalid_config", "lr", "lr \"nan\"")
    expect_error(sub(lr="inf"), 422, "invalid_config", "lr", "lr \"inf\"")
    expect_error(sub(hidden="abc"), 422, "invalid_config", "hidden", "hidden \"abc\"")
    expect_error(sub(model="gru", thx=0.1), 422, "invalid_config", "thx", "a delta threshold on gru (ignored, so refused)")
    expect_error(sub(model="gru", K=3), 422, "invalid_config", "K", "a nonlinearity order on gru (ignored, so refused)")
    expect_error(sub(model="lstm", units=2), 422, "invalid_config", "units", "DVR units on lstm (ignored, so refused)")
    expect_error(sub(verb="fit-ls", kind="mp", M=1), 422, "invalid_config", "M", "envelope lags and leads on an MP fit")
    r = sub(verb="fit-ls", kind="mp", K=0)
    expect_error(r, 422, "invalid_config", "K", "fit-ls K 0")
    check(r.json["error"]["message"].startswith("K: "), f"the message names the key too: {r!r}")
    for opt, val, start in (("K", 100000, "K: "), ("model", "transformer", "model: "), ("hidden", None, "hidden: must be a number or a string"),
                            ("json", True, "json: is decided by the studio"), ("no_plots", True, "no_plots: is decided by the studio")):
        r = sub(**{opt: val}) if opt != "K" else sub(verb="fit-ls", kind="mp", K=val)
        expect_error(r, 422, "invalid_config", opt, f"{opt} {val!r}")
        check(r.json["error"]["message"].startswith(start), f"{opt} {val!r}: the message begins {start!r}: {r!r}")
    expect_error(sub(verb="fit-ls", kind="mp", iterations=2), 422, "invalid_config", "iterations", "fit-ls target pa iterations")
    expect_error(sub(legacy_evm="false"), 422, "invalid_config", "legacy_evm", "legacy_evm 'false'")
    expect_error(sub(frame=10 ** 6), 422, "invalid_config", "frame", "a frame longer than the train split")
    expect_error(sub(provider="/bin/sh"), 422, "invalid_config", "provider", "provider /bin/sh")
    expect_error(sub(provider="nosuchpack"), 422, "invalid_config", "provider", "a provider with no pack installed")
    expect_error(sub(hidden=True), 422, "invalid_config", "hidden", "hidden true (not 1)")
    expect_error(sub(lr=False), 422, "invalid_config", "lr", "lr false")
    for opt, val in (("lr", 0.01), ("epochs", 3), ("hidden", 64), ("seed", 1)):
        expect_error(sub(verb="fit-ls", kind="mp", **{opt: val}), 422, "invalid_config", opt, f"fit-ls {opt} (a training option)")
    expect_error(sub(legacy_evm=True, evm_fs=1e9), 422, "invalid_config", "legacy_evm", "legacy_evm with evm_fs")
    expect_error(s.post(R, raw='{"verb": "train-pa", "dataset": "synth", "options": {"lr": 1e999}}'), 422,
                 what="lr 1e999")
    expect_error(s.post(R, raw='{"verb": "train-pa", "dataset": "synth", "options": {"lr": NaN}}'), 422,
                 what="lr NaN (not JSON)")
    for opt, val in (("out", "/tmp/x"), ("data", "/tmp"), ("resume", "/tmp/x"), ("json", True), ("no_plots", True)):
        expect_error(sub(**{opt: val}), 422, field=opt, what=f"option {opt}")
    for opt, near in (("--epochs", "epochs"), ("hiden", "hidden"), ("no-doctor", "no_doctor")):  # the option meant, named
        r = s.post(R, {"verb": "train-pa", "dataset": "synth", "options": {opt: 2}})
        check(r.status == 422 and r.err("field") == opt and f"did you mean '{near}'" in r.err("message"), f"option {opt}: {r!r}")
    expect_error(sub(dataset="nosuch"), 422, field="dataset", what="unknown dataset")
    expect_error(sub(dataset="../../etc"), 422, field="dataset", what="dataset ../../etc")
    expect_error(sub(dataset="upload:nosuch"), 422, field="dataset", what="unknown upload")
    expect_error(sub(verb="rm -rf"), 422, field="verb", what="unknown verb")
    expect_error(s.post(R, {"dataset": "synth", "options": {}}), 422, field="verb", what="no verb")
    expect_error(s.post(R, {"verb": "train-pa", "dataset": "synth", "options": [1]}), 422, what="options not an object")
    expect_error(s.post(R, [1, 2]), 422, what="a JSON array body")
    expect_error(sub(verb="train-dpd", pa="rnosuch"), 422, field="pa", what="train-dpd with an unknown pa run")
    expect_error(sub(verb="fake", epochs=0), 422, field="epochs", what="fake epochs 0")
    expect_error(sub(verb="fake", epochs=1001), 422, field="epochs", what="fake epochs 1001")
    expect_error(sub(verb="fake", epoch_ms=600001), 422, field="epoch_ms", what="fake epoch_ms 600001")
    expect_error(sub(verb="fake", nosuch=1), 422, field="nosuch", what="fake unknown option")
    for key in ("", "k" * 257, "a\x01b"):
        r = s.post(R, {"verb": "fake", "dataset": "synth", "options": fake(1, 0), "idempotency_key": key})
        expect_error(r, 422, field="idempotency_key", what=f"idempotency_key of {len(key)} chars {key[:3]!r}")
    check(s.get(R).json["total"] == 0, "a refused submit created a run")
    # accepted: values as strings, threads, a 256-character key
    r = sub(model="gru", hidden="4", epochs=1, preset="quick", threads=1)
    check(r.status == 201, f"hidden as a string and threads: {r!r}")
    check(r.json["status"] in ("queued", "running") and r.json["verb"] == "train-pa" and r.json["dataset"] == "synth",
          f"run object: {r.json}")
    for k in ("id", "options", "reason_code", "reason", "wait_reason", "error", "created_at", "started_at",
              "finished_at", "parent_id", "idempotency_key", "progress", "last_seq", "heartbeat_at",
              "heartbeat_stale", "exit_code", "pid"):
        check(k in r.json, f"run object lacks {k}: {sorted(r.json)}")
    r = s.post(R, {"verb": "fake", "dataset": "synth", "options": fake(1, 0), "idempotency_key": "k" * 256})
    check(r.status == 201, f"a 256-character idempotency_key: {r!r}")
    s.wait_status(r.json["id"], TERMINAL, 30)


@test()
def t_fake_needs_test_workers(ctx):
    s = ctx.server(test_workers=False)
    r = s.post("/api/v1/runs", {"verb": "fake", "dataset": "synth", "options": fake(1, 0)})
    expect_error(r, 422, field="verb", what="fake without --test-workers")
    check(s.get("/api/v1/runs").json["total"] == 0, "the refused fake run exists")


@test()
def t_not_found(ctx):
    s = ctx.server()
    for rid in ("rnosuch", "r6f2c01d9a4b3", "..", "%2e%2e", "..%2f..%2fapi-token", "a%00b", "x" * 300):
        for suffix in ("", "/events", "/artifacts", "/results", "/history", "/live"):
            r = s.get(f"/api/v1/runs/{rid}{suffix}")
            if rid == ".." and r.err() == "not_found":  # a server may resolve the dot segment first
                check(r.status == 404, f"GET run ..{suffix}: {r!r}")
                continue
            hidden = "%2f" in rid or "%00" in rid  # what decoding would hide: refused before any lookup
            expect_error(r, *((400, "invalid_uri") if hidden else (404, "run_not_found")), what=f"GET run {rid[:20]}{suffix}")
        want = (400, "invalid_uri") if "%2f" in rid or "%00" in rid else (404, "run_not_found")
        expect_error(s.post(f"/api/v1/runs/{rid}/cancel"), *want, what=f"cancel {rid[:20]}")
        expect_error(s.post(f"/api/v1/runs/{rid}/retry"), *want, what=f"retry {rid[:20]}")
    r = s.get("/api/v1/nosuch")
    check(r.status == 404, f"unknown route: {r!r}")


# ---- runs

@test()
def t_fake_run_lifecycle(ctx):  # B5
    s = ctx.server()
    sub = s.submit(options=fake(3, 300))
    rid = sub["id"]
    check(sub["status"] in ("queued", "running") and sub["verb"] == "fake" and sub["parent_id"] is None,
          f"submitted run: {sub}")
    check(re.fullmatch(r"[A-Za-z0-9_-]{1,64}", rid), f"run id {rid!r} is not a plain slug")
    run, pid, start = s.wait_running_pid(rid)
    check(run["started_at"] and run["pid"] == pid, f"running run: {run}")
    check(group_members(pid) and proc_stat(pid)[1] == pid, f"worker {pid} does not lead its own process group")
    check(os.getsid(pid) == pid, f"worker {pid} is not a session leader")
    final = s.wait_status(rid, TERMINAL, 20)
    check(final["status"] == "succeeded" and final["reason_code"] == "completed" and final["exit_code"] == 0,
          f"final run: {final}")
    check(final["error"] is None and final["wait_reason"] is None, f"succeeded run with error/wait_reason: {final}")
    check(final["progress"]["epoch"] == 3 and final["progress"]["epochs"] == 3, f"progress {final['progress']}")
    check(parse_ts(final["created_at"]) <= parse_ts(final["started_at"]) <= parse_ts(final["finished_at"]),
          f"timestamps out of order: {final}")
    evs = s.all_events(rid)
    check_run_consistency(final, evs)
    types = [e["type"] for e in evs]
    check(types[0] == "status" and types[-1] == "status", f"first/last event types {types[0]}, {types[-1]}")
    check([e["data"]["to"] for e in evs if e["type"] == "status"] == ["queued", "running", "succeeded"],
          f"status chain {[e['data'] for e in evs if e['type'] == 'status']}")
    check(types.count("progress") == 12 and types.count("metric") == 3,
          f"fake 3 epochs: {types.count('progress')} progress, {types.count('metric')} metric (want 12, 3)")
    for e in evs:
        if e["type"] == "progress":
            check({"epoch", "epochs"} <= set(e["data"]) and e["data"]["epochs"] == 3, f"progress data {e['data']}")
        if e["type"] == "metric":
            check({"epoch", "epochs", "val"} <= set(e["data"]), f"metric data {e['data']}")
    check([e["data"]["epoch"] for e in evs if e["type"] == "metric"] == [1, 2, 3], "metric epochs are not 1, 2, 3")
    if "ended" in types:
        check(types.index("ended") < len(types) - 1, "ended after the terminal status")
    ts = [parse_ts(e["ts"]) for e in evs]
    check(all(abs(t - time.time()) < 3600 for t in ts), f"event ts not wall clock: {ts[:3]}")
    d = s.run_dir(rid)
    for f in ("job.json", "events.jsonl", "logs/worker.log", "result.json", "out/fake/best.safetensors"):
        check(os.path.isfile(os.path.join(d, f)), f"ROOT/runs/{rid}/{f} missing")
    check(not os.path.exists(os.path.join(d, "CANCEL")), "CANCEL exists after a success")
    job = json.load(open(os.path.join(d, "job.json")))
    check(job.get("verb") == "fake", f"job.json verb: {job}")
    res = json.load(open(os.path.join(d, "result.json")))
    check(isinstance(res, dict) and res.get("outcome"), f"result.json has no outcome: {res}")
    m = stat.S_IMODE(os.stat(os.path.join(d, "events.jsonl")).st_mode)
    check(m & 0o077 == 0, f"events.jsonl mode {oct(m)}: the worker's umask is not 077")
    check_file_matches_api(s, rid, evs)
    wait_for(lambda: not alive(pid, start), 3, f"worker {pid} to be gone (reaped)")
    check(not group_members(pid), f"processes of the worker's group survive: {group_members(pid)}")
    r = s.get(f"/api/v1/runs/{rid}/results")
    check(r.status == 200 and r.json.get("outcome"), f"results of a succeeded fake run: {r!r}")
    st = s.get("/api/v1/system/status").json
    check(st.get("runs", {}).get("succeeded") == 1 and st.get("slots") == 1 and st.get("slots_busy") == 0,
          f"system/status: {st}")


@test()
def t_events_db_match(ctx):  # B5: the DB agrees with the API
    s = ctx.server()
    rid = s.submit(options=fake(2, 50))["id"]
    s.wait_status(rid, TERMINAL, 20)
    evs = s.all_events(rid)
    con = sqlite3.connect(f"file:{os.path.join(s.root, 'studio.db')}?mode=ro", uri=True, timeout=10)
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        for t in ("runs", "events", "meta"):
            check(t in tables, f"studio.db has no table {t}: {sorted(tables)}")
        mode = con.execute("PRAGMA journal_mode").fetchone()[0]
        check(mode.lower() == "wal", f"journal_mode {mode}, want wal")
        cols = [r[1] for r in con.execute("PRAGMA table_info(events)")]
        runc = next((c for c in ("run_id", "run", "runid") if c in cols), None)
        datac = next((c for c in ("data", "payload", "data_json") if c in cols), None)
        if not runc or "seq" not in cols or "type" not in cols:
            raise Skip(f"events columns {cols}: no run_id/seq/type to compare")
        rows = con.execute(f"SELECT seq, type{', ' + datac if datac else ''} FROM events WHERE {runc}=? ORDER BY seq",
                           (rid,)).fetchall()
    finally:
        con.close()
    check([(r[0], r[1]) for r in rows] == [(e["seq"], e["type"]) for e in evs],
          f"DB events {[(r[0], r[1]) for r in rows][:8]}... differ from the API's {[(e['seq'], e['type']) for e in evs][:8]}...")
    if datac:
        check([json.loads(r[2]) for r in rows] == [e["data"] for e in evs], "DB event data differ from the API's")


@test()
def t_idempotency(ctx):  # B6
    s = ctx.server()
    a = s.submit(options=fake(1, 0), key="key-1")
    r = s.post("/api/v1/runs", {"verb": "fake", "dataset": "synth", "options": fake(1, 0), "idempotency_key": "key-1"})
    check(r.status == 200 and r.json["id"] == a["id"], f"repeated key: {r!r}, want 200 with {a['id']}")
    check(r.json["idempotency_key"] == "key-1", f"idempotency_key not in the run: {r.json}")
    # the key reused for another request (other options or verb): refused, naming the key's run;
    # the same options in another order are the same request
    for other in ({"options": fake(2, 0)}, {"verb": "train-pa", "options": {"epochs": 1}}):
        body = {"verb": "fake", "dataset": "synth", "options": fake(1, 0), "idempotency_key": "key-1", **other}
        r = s.post("/api/v1/runs", body)
        expect_error(r, 422, code="idempotency_key_reused", field="idempotency_key", what=f"key-1 reused with {other}")
        check(a["id"] in r.json["error"]["message"], f"the conflict names the key's run: {r.json}")
    shuffled = dict(reversed(list(fake(1, 0).items())))
    r = s.post("/api/v1/runs", {"verb": "fake", "dataset": "synth", "options": shuffled, "idempotency_key": "key-1"})
    check(r.status == 200 and r.json["id"] == a["id"], f"repeated key, options in another order: {r!r}")
    b = s.submit(options=fake(1, 0), key="key-2")
    check(b["id"] != a["id"], "two keys, one run")
    c = s.submit(options=fake(1, 0))
    d = s.submit(options=fake(1, 0))
    check(c["id"] != d["id"], "two submits without a key gave one run")
    check(s.get("/api/v1/runs").json["total"] == 4, "run count after idempotent submits")
    for x in (a, b, c, d):
        s.wait_status(x["id"], TERMINAL, 20)
    r = s.post("/api/v1/runs", {"verb": "fake", "dataset": "synth", "options": fake(1, 0), "idempotency_key": "key-1"})
    check(r.status == 200 and r.json["id"] == a["id"] and r.json["status"] == "succeeded",
          f"repeated key after the run ended: {r!r}")


@test()
def t_retry(ctx):  # B6
    s = ctx.server()
    a = s.submit(options=fake(1, 50))
    a = s.wait_status(a["id"], TERMINAL, 20)
    r = s.post(f"/api/v1/runs/{a['id']}/retry")
    check(r.status == 201, f"retry of a terminal run: {r!r}")
    n = r.json
    check(n["id"] != a["id"] and n["parent_id"] == a["id"], f"retry run: {n}")
    check(n["verb"] == a["verb"] and n["dataset"] == a["dataset"] and n["options"] == a["options"],
          f"retry request differs: {n['verb']} {n['dataset']} {n['options']} vs {a['options']}")
    check(n["status"] in ("queued", "running"), f"retry status {n['status']}")
    s.wait_status(n["id"], "succeeded", 20)
    check(s.run(a["id"])["status"] == a["status"], "retry changed the parent")
    # a body that asks for something is refused, not ignored: {} is the one body they take
    expect_error(s.post(f"/api/v1/runs/{a['id']}/retry", {"options": {"epochs": 3}}), 422, "invalid_request",
                 field="options", what="retry with options")
    check(s.post(f"/api/v1/runs/{a['id']}/retry", {}).status == 201, "retry with {}")
    b = s.submit(options=fake(100, 100))
    s.wait_status(b["id"], "running", 10)
    s.wait_event(b["id"], "progress", 5)
    expect_error(s.post(f"/api/v1/runs/{b['id']}/retry"), 409, "run_not_finished", what="retry of a running run")
    c = s.submit(options=fake(1, 0))
    check(s.run(c["id"])["status"] == "queued", "second run not queued")
    expect_error(s.post(f"/api/v1/runs/{c['id']}/retry"), 409, "run_not_finished", what="retry of a queued run")
    expect_error(s.post(f"/api/v1/runs/{b['id']}/cancel", {"force": True}), 422, "invalid_request", field="force",
                 what="cancel with force")
    s.cancel(b["id"])
    check(s.cancel(b["id"])["status"] in ("cancel_requested", "cancelled"), "second cancel")
    if s.run(b["id"])["status"] == "cancel_requested":
        expect_error(s.post(f"/api/v1/runs/{b['id']}/retry"), 409, "run_not_finished",
                     what="retry of a cancel_requested run")
    s.wait_status(b["id"], "cancelled", 10)
    r = s.post(f"/api/v1/runs/{b['id']}/retry")
    check(r.status == 201 and r.json["parent_id"] == b["id"], f"retry of a cancelled run: {r!r}")
    s.cancel(r.json["id"])
    s.wait_status(r.json["id"], "cancelled", 10)
    e = s.submit(options=fake(2, 4000))  # cancelled within its first epoch: nothing written
    s.wait_event(e["id"], "progress", 10)
    s.cancel(e["id"])
    fe = s.wait_status(e["id"], "cancelled", 10)
    check(fe["reason"] == "cancelled before the first epoch completed; nothing was written",
          f"a run cancelled in its first epoch says nothing was kept: {fe['reason']!r}")
    d = s.submit(options=fake(100, 100))  # cancelled after an epoch's checkpoint: it is kept
    s.wait_event(d["id"], "checkpoint", 10)
    s.cancel(d["id"])
    fd = s.wait_status(d["id"], "cancelled", 10)
    check(fd["reason"] == "cancelled; the last checkpoint was kept", f"a run cancelled after an epoch: {fd['reason']!r}")


@test()
def t_one_slot_queue(ctx):  # B7
    s = ctx.server()
    a = s.submit(options=fake(100, 100))
    s.wait_status(a["id"], "running", 10)
    s.wait_event(a["id"], "progress", 5)
    t0 = time.monotonic()
    b = s.post("/api/v1/runs", {"verb": "fake", "dataset": "synth", "options": fake(1, 100)})
    check(b.status == 201 and b.elapsed < 1.0, f"submit during a run: {b!r} in {b.elapsed:.3f} s")
    b = b.json
    c = s.submit(options=fake(1, 100))
    check(b["status"] == "queued" and c["status"] == "queued", f"second/third run not queued: {b['status']}, {c['status']}")
    ctx.soft(isinstance(b["wait_reason"], str) and "position 1" in b["wait_reason"] and
             isinstance(c["wait_reason"], str) and "position 2" in c["wait_reason"],
             f"submit responses of queued runs: wait_reason {b['wait_reason']!r}, {c['wait_reason']!r} "
             "(want 'position 1 of 2…', 'position 2 of 2…')")
    wr = {}

    def positions():
        wr["b"], wr["c"] = s.run(b["id"])["wait_reason"] or "", s.run(c["id"])["wait_reason"] or ""
        return "position 1 of 2" in wr["b"] and "position 2 of 2" in wr["c"]
    wait_for(positions, 1.5, lambda: f"wait_reasons 'position 1 of 2', 'position 2 of 2' (GET); last {wr}")
    worst = 0.0
    while time.monotonic() - t0 < 1.5:
        r = s.get("/api/v1/runs")
        worst = max(worst, r.elapsed)
        check(r.status == 200, f"list: {r!r}")
        rb = s.get(f"/api/v1/runs/{b['id']}")
        worst = max(worst, rb.elapsed)
        check(rb.json["status"] == "queued" and rb.json["pid"] is None, f"second run left the queue: {rb.json}")
        time.sleep(0.05)
    check(worst < 1.0, f"list/get took {worst:.3f} s during a run")
    lst = s.get("/api/v1/runs").json
    check(lst["total"] == 3 and [x["id"] for x in lst["runs"]] == [c["id"], b["id"], a["id"]],
          f"list not newest first: {[x['id'] for x in lst['runs']]}")
    q = s.get("/api/v1/runs?status=queued").json
    check(q["total"] == 2 and {x["id"] for x in q["runs"]} == {b["id"], c["id"]}, f"status=queued filter: {q}")
    p = s.get("/api/v1/runs?limit=1&offset=1").json
    check(len(p["runs"]) == 1 and p["runs"][0]["id"] == b["id"] and p["total"] == 3, f"limit/offset: {p}")
    st = s.get("/api/v1/system/status").json
    check(st.get("slots") == 1 and st.get("slots_busy") == 1 and st.get("runs", {}).get("queued") == 2
          and st.get("runs", {}).get("running") == 1, f"system/status during the run: {st}")
    s.cancel(a["id"])
    a = s.wait_status(a["id"], TERMINAL, 10)
    b = s.wait_status(b["id"], TERMINAL, 15)
    c = s.wait_status(c["id"], TERMINAL, 15)
    check(b["status"] == "succeeded" and c["status"] == "succeeded", f"queued runs after the cancel: {b['status']}, {c['status']}")
    check(parse_ts(a["finished_at"]) <= parse_ts(b["started_at"]) + 0.001 and
          parse_ts(b["finished_at"]) <= parse_ts(c["started_at"]) + 0.001, "runs overlapped with one slot, or not FIFO")


@test()
def t_slots(ctx):
    s = ctx.server(args=["--slots", "2"])
    a, b, c = (s.submit(options=fake(100, 100)) for _ in range(3))
    s.wait_status(a["id"], "running", 10)
    s.wait_status(b["id"], "running", 10)
    s.wait_event(a["id"], "progress", 5)
    s.wait_event(b["id"], "progress", 5)
    check(s.run(c["id"])["status"] == "queued", "third run not queued with --slots 2")
    st = s.get("/api/v1/system/status").json
    check(st.get("slots") == 2 and st.get("slots_busy") == 2, f"system/status: {st}")
    for x in (c, a, b):
        s.cancel(x["id"])
    for x in (a, b, c):
        check(s.wait_status(x["id"], TERMINAL, 10)["status"] == "cancelled", "cancel with --slots 2")


@test()
def t_cancel_queued(ctx):  # B8
    s = ctx.server()
    a = s.submit(options=fake(100, 100))
    s.wait_status(a["id"], "running", 10)
    s.wait_event(a["id"], "progress", 5)
    b = s.submit(options=fake(1, 0))
    expect_error(s.post(f"/api/v1/runs/{b['id']}/cancel", raw="{"), 422, "invalid_json", what="cancel with a body that is not JSON")
    check(s.run(b["id"])["status"] == "queued", "a refused cancel cancelled")
    expect_error(s.post(f"/api/v1/runs/{b['id']}/retry", raw="[1]"), 422, "invalid_json", what="retry with a body that is not an object")
    r = s.post(f"/api/v1/runs/{b['id']}/cancel")
    check(r.status == 200 and r.elapsed < 1.0, f"cancel queued: {r!r} in {r.elapsed:.3f} s")
    check(r.json["status"] == "cancelled" and r.json["reason_code"] == "user" and r.json["finished_at"]
          and r.json["started_at"] is None and r.json["pid"] is None, f"cancelled queued run: {r.json}")
    check(s.cancel(b["id"])["status"] == "cancelled", "cancel of a cancelled run changed it")
    check_run_consistency(s.run(b["id"]), s.all_events(b["id"]))
    check(s.run(a["id"])["status"] == "running", "cancelling a queued run touched the running one")
    expect_error(s.get(f"/api/v1/runs/{b['id']}/results"), 404, "not_available", what="results of a never-started run")
    expect_error(s.get(f"/api/v1/runs/{b['id']}/history"), 404, "not_available", what="history of a never-started run")
    expect_error(s.get(f"/api/v1/runs/{b['id']}/live"), 404, "not_available", what="live of a never-started run")
    for sub in ("results", "history", "live", "plots"):  # not "yet": it never will be
        m = s.get(f"/api/v1/runs/{b['id']}/{sub}").json["error"]["message"]
        check("the run ended cancelled without it (it never started)" in m and "yet" not in m, f"{sub} of a never-started run: {m!r}")
    s.cancel(a["id"])
    s.wait_status(a["id"], TERMINAL, 10)
    time.sleep(0.3)
    check(s.run(b["id"])["status"] == "cancelled", "the cancelled queued run was started")


@test()
def t_cancel_running(ctx):  # B8
    s = ctx.server(grace=5)
    rid = s.submit(options=fake(20, 200))["id"]
    _, pid, start = s.wait_running_pid(rid)
    s.wait_event(rid, "metric", 10)
    r = s.post(f"/api/v1/runs/{rid}/cancel")
    check(r.status == 200 and r.elapsed < 1.0, f"cancel running: {r!r} in {r.elapsed:.3f} s")
    check(r.json["status"] == "cancel_requested", f"cancel of a running run answered status {r.json['status']}")
    t0 = time.monotonic()
    r2 = s.post(f"/api/v1/runs/{rid}/cancel")
    check(r2.status == 200 and r2.json["status"] in ("cancel_requested", "cancelled"), f"second cancel: {r2!r}")
    fin = s.wait_status(rid, TERMINAL, 8)
    dt = time.monotonic() - t0
    check(fin["status"] == "cancelled" and fin["reason_code"] == "user", f"cancelled run: {fin}")
    check(dt < 3, f"the worker took {dt:.1f} s to stop (chunks of ~0.25 s)")
    check(fin["exit_code"] == 3, f"cancelled worker exit_code {fin['exit_code']}, want 3")
    evs = s.all_events(rid)
    check_run_consistency(fin, evs)
    check([e["data"]["to"] for e in evs if e["type"] == "status"] ==
          ["queued", "running", "cancel_requested", "cancelled"], "status chain of a cancelled run")
    metrics = [e["data"]["epoch"] for e in evs if e["type"] == "metric"]
    check(metrics and max(metrics) < 20 and fin["progress"]["epoch"] < 20, f"cancelled run reached epoch {metrics[-1:]}")
    d = s.run_dir(rid)
    check(not os.path.exists(os.path.join(d, "CANCEL")), "CANCEL left after the cancel")
    check(os.path.isfile(os.path.join(d, "out/fake/best.safetensors")), "the partial output was not kept")
    wait_for(lambda: not alive(pid, start), 3, f"worker {pid} gone")
    check(s.cancel(rid)["status"] == "cancelled", "cancel of a terminal run changed it")
    check(s.run(rid)["last_seq"] == fin["last_seq"], "cancel of a terminal run added events")


def tgkill(pid, tid, sig):
    """A signal to one thread of a process (the kernel otherwise picks the thread)."""
    nr = {"x86_64": 234, "aarch64": 131}.get(platform.machine())
    if nr is None:
        raise Skip(f"tgkill's system call number on {platform.machine()} is not known to this test")
    libc = ctypes.CDLL(None, use_errno=True)
    check(libc.syscall(nr, pid, tid, sig) == 0, f"tgkill({pid}, {tid}, {sig}): errno {ctypes.get_errno()}")


@test()
def t_cancel_signal_on_thread(ctx):  # SIGTERM taken by another of the worker's threads: a clean stop all the same
    s = ctx.server(grace=5)
    rid = s.submit(options=fake(100, 200))["id"]
    _, pid, _ = s.wait_running_pid(rid)
    s.wait_event(rid, "metric", 10)  # its heartbeat thread runs by then

    def takers():  # the worker's other threads that do not block SIGTERM (a sanitizer's own threads do)
        out = []
        for t in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{t}/status") as f:
                    blk = re.search(r"^SigBlk:\s*([0-9a-f]+)", f.read(), re.M)
            except OSError:
                continue
            if int(t) != pid and blk and not int(blk.group(1), 16) & (1 << (signal.SIGTERM - 1)):
                out.append(int(t))
        return out
    tids = wait_for(takers, 5, f"a thread of worker {pid} besides its main one that takes SIGTERM")
    tgkill(pid, tids[0], signal.SIGTERM)
    fin = s.wait_status(rid, TERMINAL, 10)
    check(fin["status"] == "cancelled" and fin["exit_code"] == 3,
          f"a SIGTERM on thread {tids[0]} of worker {pid}: {fin['status']}/{fin['reason_code']} "
          f"(exit_code {fin['exit_code']}), want cancelled with exit code 3")
    check_run_consistency(fin, s.all_events(rid))


@test()
def t_cancel_at_start(ctx):  # B8 race: a cancel the moment the run is running, before the worker's first event
    s = ctx.server(grace=3)
    got = []
    for i in range(3):
        rid = s.submit(options=fake(100, 100))["id"]
        s.wait_status(rid, {"running"} | TERMINAL, 10, 0.005)
        s.cancel(rid)
        fin = s.wait_status(rid, TERMINAL, 3 + 5)
        got.append(f"{fin['status']}/{fin['reason_code']}")
        check(fin["status"] == "cancelled", f"cancel at start ended {fin['status']}/{fin['reason_code']} "
              f"(exit_code {fin['exit_code']}), want cancelled")
        check_run_consistency(fin, s.all_events(rid))
    ctx.note = ", ".join(got)


@test()
def t_cancel_grace_kill(ctx):  # B9
    s = ctx.server(grace=2)
    rid = s.submit(options=fake(100, 100, ignore_cancel=True))["id"]
    _, pid, start = s.wait_running_pid(rid)
    s.wait_event(rid, "progress", 5)
    t0 = time.monotonic()
    r = s.post(f"/api/v1/runs/{rid}/cancel")
    check(r.status == 200 and r.json["status"] == "cancel_requested" and r.elapsed < 1.0, f"cancel: {r!r}")
    time.sleep(0.8)
    check(s.run(rid)["status"] == "cancel_requested", "cancel_requested ended before the grace period")
    check(alive(pid, start), "the ignoring worker died before the grace period")
    fin = s.wait_status(rid, TERMINAL, 2 + 6)
    dt = time.monotonic() - t0
    check(fin["status"] == "cancelled" and fin["reason_code"] == "killed_after_grace",
          f"ignoring worker: {fin['status']}/{fin['reason_code']}, want cancelled/killed_after_grace")
    check(1.5 <= dt <= 2 + 4, f"killed {dt:.1f} s after the cancel, grace 2")
    wait_for(lambda: not group_members(pid), 2, lambda: f"process group {pid} to be empty: {group_members(pid)}")
    check(not alive(pid, start), f"worker {pid} not reaped")
    check(not os.path.exists(os.path.join(s.run_dir(rid), "CANCEL")), "CANCEL left")
    check_run_consistency(fin, s.all_events(rid))


@test()
def t_success_after_cancel(ctx):  # B12: a worker that finishes anyway after a cancel -> cancelled, files kept
    s = ctx.server(grace=10)
    rid = s.submit(options=fake(2, 800, ignore_cancel=True))["id"]
    s.wait_running_pid(rid)
    s.wait_event(rid, "metric", 5)
    r = s.cancel(rid)
    check(r["status"] == "cancel_requested", f"cancel: {r['status']}")
    fin = s.wait_status(rid, TERMINAL, 10)
    check(fin["status"] == "cancelled" and fin["reason_code"] == "user",
          f"success reported after cancel_requested: {fin['status']}/{fin['reason_code']}, want cancelled/user")
    check_run_consistency(fin, s.all_events(rid))
    names = [a["name"] for a in s.get(f"/api/v1/runs/{rid}/artifacts").json["artifacts"]]
    check("best.safetensors" in names, f"artifacts of the late success: {names}")
    time.sleep(0.3)
    check(s.run(rid)["status"] == "cancelled", "the cancelled run changed later")


@test()
def t_spawn_failed(ctx):  # B11: the worker executable is gone -> failed/spawn_failed once, slot released
    os.makedirs(ctx.path("bin"))
    exe = ctx.path("bin", "dpd")
    shutil.copy2(DPD, exe)
    s = Server(ctx)
    s.cmd = lambda: [exe, "serve", "--root", s.root, "--listen", "127.0.0.1:0", "--grace", "2", "--test-workers"]
    s.start()
    os.unlink(exe)
    a = s.submit(options=fake(1, 0))["id"]
    fa = s.wait_status(a, TERMINAL, 10)
    if fa["status"] == "succeeded":
        raise Skip("the server still starts workers after its executable was removed (cannot provoke spawn_failed)")
    check(fa["status"] == "failed" and fa["reason_code"] == "spawn_failed", f"missing worker executable: {fa}")
    check(fa["pid"] is None or not running(fa["pid"]), f"spawn_failed run with a live pid {fa['pid']}")
    check_run_consistency(fa, s.all_events(a))
    b = s.submit(options=fake(1, 0))["id"]
    fb = s.wait_status(b, TERMINAL, 10)
    check(fb["reason_code"] == "spawn_failed", f"second run: {fb['status']}/{fb['reason_code']} (the slot was not released?)")
    check(s.get("/api/v1/system/status").json.get("slots_busy") == 0, "slots_busy after spawn failures")


@test()
def t_worker_sigkill(ctx):  # B10
    s = ctx.server()
    rid = s.submit(options=fake(100, 100))["id"]
    _, pid, start = s.wait_running_pid(rid)
    s.wait_event(rid, "progress", 5)
    os.kill(pid, signal.SIGKILL)
    fin = s.wait_status(rid, TERMINAL, 5)
    check(fin["status"] == "failed" and fin["reason_code"] == "worker_died", f"SIGKILLed worker: {fin}")
    check_run_consistency(fin, s.all_events(rid))
    check(not alive(pid, start), "worker not reaped")
    b = s.submit(options=fake(1, 0))
    check(s.wait_status(b["id"], TERMINAL, 10)["status"] == "succeeded", "the slot was not released after worker_died")


@test()
def t_max_runtime(ctx):  # B10
    s = ctx.server(args=["--max-runtime", "1"])
    rid = s.submit(options=fake(100, 100))["id"]
    _, pid, start = s.wait_running_pid(rid)
    fin = s.wait_status(rid, TERMINAL, 1 + 2 + 6)
    check(fin["status"] == "failed" and fin["reason_code"] == "timeout", f"over --max-runtime 1: {fin}")
    d = parse_ts(fin["finished_at"]) - parse_ts(fin["started_at"])
    check(0.9 <= d <= 1 + 2 + 3, f"ran {d:.2f} s with --max-runtime 1 --grace 2")
    check_run_consistency(fin, s.all_events(rid))
    wait_for(lambda: not group_members(pid), 2, "the timed-out worker's group to be empty")
    b = s.submit(options=fake(1, 100))
    check(s.wait_status(b["id"], TERMINAL, 10)["status"] == "succeeded", "a short run under --max-runtime 1 failed")


@test()
def t_exit_code(ctx):  # B10
    s = ctx.server()
    rid = s.submit(options=fake(1, 10, exit_code=7))["id"]
    fin = s.wait_status(rid, TERMINAL, 10)
    check(fin["status"] == "failed" and fin["reason_code"] == "worker_died" and fin["exit_code"] == 7,
          f"fake exit_code 7: {fin['status']}/{fin['reason_code']} exit_code {fin['exit_code']}")
    check(not os.path.exists(os.path.join(s.run_dir(rid), "result.json")), "result.json written with exit_code")
    expect_error(s.get(f"/api/v1/runs/{rid}/results"), 404, "not_available", what="results without result.json")
    check_run_consistency(fin, s.all_events(rid))
    rid = s.submit(options=fake(1, 10, exit_code=3))["id"]
    fin = s.wait_status(rid, TERMINAL, 10)
    check(fin["status"] == "failed" and fin["reason_code"] == "worker_died",
          f"exit 3 without result.json: {fin['status']}/{fin['reason_code']}, want failed/worker_died")


@test()
def t_worker_memory_oom(ctx):  # B11
    # docs/studio.md: --worker-memory is 0 or at least 128 (below that the worker cannot load its
    # libraries), so 64 must be refused at start; the oom check uses 256 MiB against 1 GiB.
    s = Server(ctx, args=["--worker-memory", "64"])
    s.start(expect_listen=False)
    rc = s.wait_exit(10)
    check(rc is not None and rc != 0, f"dpd serve --worker-memory 64: exit {rc}, want a refusal")
    # a sanitizer build reserves terabytes of shadow memory: it cannot run under any RLIMIT_AS
    probe = subprocess.run(["sh", "-c", 'ulimit -v 262144 && exec "$0" version', DPD], capture_output=True)
    if probe.returncode != 0:
        raise Skip("this dpd cannot start under a 256 MiB address-space limit (a sanitizer build?): "
                   + probe.stderr.decode(errors="replace").strip()[:120])
    s = ctx.server(args=["--worker-memory", "256"])
    a = s.submit(options=fake(1, 10))
    fa = s.wait_status(a["id"], TERMINAL, 10)
    log = open(os.path.join(s.run_dir(a["id"]), "logs/worker.log"), errors="replace").read()[-300:]
    check(fa["status"] == "succeeded", f"a plain fake run under --worker-memory 256: {fa['status']}/{fa['reason_code']} "
          f"(worker.log: {log!r})")
    rid = s.submit(options=fake(1, 10, alloc_mb=1024))["id"]
    fin = s.wait_status(rid, TERMINAL, 15)
    log = open(os.path.join(s.run_dir(rid), "logs/worker.log"), errors="replace").read()[-300:]
    check(fin["status"] == "failed" and fin["reason_code"] == "oom",
          f"alloc_mb 1024 under --worker-memory 256: {fin['status']}/{fin['reason_code']} (worker.log: {log!r})")
    b = s.submit(options=fake(1, 0))
    check(s.wait_status(b["id"], TERMINAL, 10)["status"] == "succeeded", "the slot after an oom")


# ---- restart, shutdown, roots

@test()
def t_restart_recovery(ctx):  # B13
    s = ctx.server(args=["--slots", "2"])
    a = s.submit(options=fake(1000, 100, ignore_cancel=True))["id"]  # survives a SIGTERM parent-death signal
    b = s.submit(options=fake(1000, 100))["id"]
    c = s.submit(options=fake(1, 0))["id"]  # queued behind two
    _, pa, sa = s.wait_running_pid(a)
    _, pb, sb = s.wait_running_pid(b)
    s.wait_event(a, "progress", 5)
    s.wait_event(b, "progress", 5)
    check(s.run(c)["status"] == "queued", "third run not queued")
    s.kill9()
    # the parent-death signal ends the workers with the server (a worker that outlived it would
    # be killed by the next start, with its own reason)
    time.sleep(0.6)
    a_alive, b_alive = running(pa, sa), running(pb, sb)
    ctx.soft(not a_alive and not b_alive, f"workers still running 0.6 s after the server's SIGKILL "
             f"(ignoring: {a_alive}, plain: {b_alive}): no parent-death signal?")
    # dead workers stay zombies until init reaps them (~1.6 s on some VMs); a restart inside that
    # window sees pid and start time still there
    try:
        wait_for(lambda: not alive(pa, sa) and not alive(pb, sb), 5, "the dead workers to be reaped by init", 0.05)
    except Fail:
        pass
    s2 = ctx.server(root=s.root)
    runs = {x: s2.wait_status(x, TERMINAL, 10) for x in (a, b, c)}
    for x, run in runs.items():
        check(run["status"] == "interrupted" and run["reason_code"] == "service_restart",
              f"run {x} after the restart: {run['status']}/{run['reason_code']}")
        check(run["reason"], f"run {x}: no reason")
    reasons = {x: runs[x]["reason"] for x in runs}
    check(reasons[c] != reasons[b] and reasons[c] != reasons[a], f"queued and running runs share a reason: {reasons}")
    check("not started" in reasons[c], f"queued run's reason {reasons[c]!r}")
    if a_alive:
        check(reasons[a] != reasons[b] or b_alive, f"a live and a dead worker share a reason: {reasons}")
        check("killed" in reasons[a], f"the live worker's run reason {reasons[a]!r}")
    if not b_alive:
        check("no longer running" in reasons[b], f"dead worker's run reason {reasons[b]!r}")
    for pid, st in ((pa, sa), (pb, sb)):
        wait_for(lambda: not alive(pid, st) and not group_members(pid), 5, f"worker {pid} (group) to be dead after the restart")
    check(not worker_procs(s.root), f"workers alive after recovery: {worker_procs(s.root)}")
    for x, run in runs.items():
        evs = s2.all_events(x)
        check_run_consistency(run, evs)
        check_file_matches_api(s2, x, evs)
    # nothing resumes; the store still works
    time.sleep(0.3)
    check(all(s2.run(x)["status"] == "interrupted" for x in runs), "an interrupted run changed")
    n = s2.submit(options=fake(1, 0))
    check(s2.wait_status(n["id"], TERMINAL, 10)["status"] == "succeeded", "a run after recovery")
    r = s2.post(f"/api/v1/runs/{c}/retry")
    check(r.status == 201 and r.json["parent_id"] == c, f"retry of an interrupted run: {r!r}")


@test()
def t_restart_right_after_kill(ctx):  # B13: a worker dead (zombie, not yet reaped by init) is not "still running"
    s = ctx.server()
    rid = s.submit(options=fake(1000, 100))["id"]
    _, pid, start = s.wait_running_pid(rid)
    s.wait_event(rid, "checkpoint", 5)  # an epoch's checkpoint is on disk
    s.kill9()
    wait_for(lambda: not running(pid, start), 2, f"worker {pid} to die with the server (parent-death signal)", 0.01)
    st = proc_stat(pid)
    state = "gone" if st is None else st[0]
    s2 = ctx.server(root=s.root)
    run = s2.wait_status(rid, TERMINAL, 10)
    ctx.note = f"worker state at the restart: {state}; reason {run['reason']!r}"
    check(run["status"] == "interrupted" and run["reason_code"] == "service_restart", f"run: {run}")
    check("no longer running" in run["reason"],
          f"the worker was already dead ({state}) at the restart, but the reason is {run['reason']!r}")
    # its run directory (known before the crash from its `started` event) still gives its files
    ckpt = os.path.join(s.run_dir(rid), "out", "fake", "best.safetensors")
    names = [a["name"] for a in s2.get(f"/api/v1/runs/{rid}/artifacts").json["artifacts"]]
    check(os.path.exists(ckpt) and "best.safetensors" in names and "worker.log" in names,
          f"the interrupted run's artifacts: {names} (checkpoint on disk: {os.path.exists(ckpt)})")


@test()
def t_restart_kill_real_run(ctx):  # a real train-pa's files (out/DATASET/train_pa/NAME) are its artifacts after a SIGKILL restart
    s = ctx.server()
    rid = s.submit("train-pa", options={"model": "gru", "hidden": 4, "epochs": 300, "frame": 50})["id"]
    s.wait_event(rid, "checkpoint", 60)  # an epoch's checkpoints are on disk
    s.kill9()
    s2 = ctx.server(root=s.root)
    run = s2.wait_status(rid, TERMINAL, 20)
    check(run["status"] == "interrupted" and run["reason_code"] == "service_restart", f"run: {run}")
    names = [a["name"] for a in s2.get(f"/api/v1/runs/{rid}/artifacts").json["artifacts"]]
    check({"best.safetensors", "last.safetensors", "history.csv", "worker.log"} <= set(names),
          f"the interrupted real run's artifacts after the restart: {names}")


@test()
def t_crash_consistency(ctx):  # A3 from outside: SIGKILL the server at random moments of heavy ingest
    root = ctx.path("root")
    rnd = random.Random(7)
    ids = []
    for cycle in range(3):
        s = ctx.server(root=root, args=["--slots", "2"])
        for x in ids:
            run = s.wait_status(x, TERMINAL, 10)
            evs = s.all_events(x)
            check_run_consistency(run, evs)
            check_file_matches_api(s, x, evs)
        ids += [s.submit(options=fake(200, 10))["id"] for _ in range(3)]
        s.wait_status(ids[-3], "running", 10)
        time.sleep(rnd.uniform(0.2, 0.9))
        s.kill9()
    s = ctx.server(root=root)
    for x in ids:
        run = s.wait_status(x, TERMINAL, 10)
        check(run["status"] in ("interrupted", "succeeded"), f"run {x}: {run['status']}")
        evs = s.all_events(x)
        check_run_consistency(run, evs)
        check_file_matches_api(s, x, evs)
    check(not worker_procs(root), "workers left")


@test()
def t_graceful_shutdown(ctx):  # B14
    s = ctx.server(grace=2, args=["--slots", "2"])
    a = s.submit(options=fake(1000, 100))["id"]
    b = s.submit(options=fake(1000, 100, ignore_cancel=True))["id"]
    c = s.submit(options=fake(1, 0))["id"]
    _, pa, sa = s.wait_running_pid(a)
    _, pb, sb = s.wait_running_pid(b)
    seen, health = [], []
    stop = threading.Event()

    def spam():
        while not stop.is_set():
            try:
                r = s.post("/api/v1/runs", {"verb": "fake", "dataset": "synth", "options": fake(1, 0)}, timeout=3)
                seen.append((r.status, r.err()))
                hz = s.get("/healthz", timeout=3)  # after a refused submit: not healthy either
                health.append((r.status, hz.status, (hz.json or {}).get("error", {}).get("code")))
            except OSError:
                seen.append(("conn", None))
            time.sleep(0.02)
    th = threading.Thread(target=spam, daemon=True)
    t0 = time.monotonic()
    os.kill(s.proc.pid, signal.SIGTERM)
    th.start()
    rc = s.wait_exit(2 + 5)
    dt = time.monotonic() - t0
    stop.set()
    th.join(5)
    check(rc is not None, f"server still running {dt:.1f} s after SIGTERM (grace 2)")
    check(rc == 0, f"server exit status {rc} after SIGTERM")
    for pid, st in ((pa, sa), (pb, sb)):
        check(not alive(pid, st) and not group_members(pid), f"worker {pid} survived the shutdown")
    check(not worker_procs(s.root), "workers left after shutdown")
    after = [x for x in seen if x[0] != "conn"]
    bad = [x for x in after if x[0] not in (503, 201)]
    check(not bad, f"submits during shutdown answered {bad[:3]}")
    check(all(x[1] == "shutting_down" for x in after if x[0] == 503), f"503 without shutting_down: {after[:3]}")
    late = [x for x in health if x[0] == 503]
    check(all(x[1:] == (503, "shutting_down") for x in late), f"/healthz after a submit was refused for the shutdown: {late[:3]}")
    ctx.note = f"submits during shutdown: {sum(1 for x in after if x[0] == 503)} x 503, " \
               f"{sum(1 for x in after if x[0] == 201)} x 201, {sum(1 for x in seen if x[0] == 'conn')} refused"
    s2 = ctx.server(root=s.root)
    ra, rb, rc_ = s2.run(a), s2.run(b), s2.run(c)
    for run in (ra, rb):
        check(run["status"] in ("interrupted", "cancelled"), f"running run after shutdown: {run['status']}")
        if run["status"] == "interrupted":
            check(run["reason_code"] == "service_restart", f"reason_code {run['reason_code']}")
    check(rc_["status"] == "interrupted" and rc_["reason_code"] == "service_restart", f"queued run after shutdown: {rc_}")
    for run in (ra, rb, rc_):
        check_run_consistency(run, s2.all_events(run["id"]))
    new = [r for r in s2.get("/api/v1/runs?limit=500").json["runs"] if r["id"] not in (a, b, c)]
    check(all(r["status"] in TERMINAL for r in new), "a run accepted during shutdown is not terminal after it")


@test()
def t_second_server_refused(ctx):  # B15
    s = ctx.server()
    tok = s.token
    s2 = Server(ctx, root=s.root)
    s2.start(expect_listen=False)
    rc = s2.wait_exit(10)
    out = s2.output()
    check(rc is not None and rc != 0, f"second server on one root: exit {rc}")
    check(rc == 1, f"second server exit status {rc}, want 1")
    check("another dpd serve owns" in out, f"second server's message: {out[-300:]!r}")
    check(s.get("/healthz", auth=False).status == 200, "the first server is hurt")
    check(open(os.path.join(s.root, "api-token")).read().strip() == tok, "api-token changed")


def snapshot(d):
    out = {}
    for dp, dns, fns in os.walk(d):
        for n in dns + fns:
            p = os.path.join(dp, n)
            st = os.lstat(p)
            out[os.path.relpath(p, d)] = (stat.S_IMODE(st.st_mode), st.st_mtime_ns, st.st_size,
                                          open(p, "rb").read() if stat.S_ISREG(st.st_mode) else None)
    out["."] = (stat.S_IMODE(os.stat(d).st_mode), os.stat(d).st_mtime_ns)
    return out


@test()
def t_foreign_root_refused(ctx):  # B15
    d = ctx.path("home")
    os.makedirs(os.path.join(d, "sub"))
    with open(os.path.join(d, "notes.txt"), "w") as f:
        f.write("precious\n")
    with open(os.path.join(d, "sub", "x.csv"), "w") as f:
        f.write("I,Q\n1,2\n")
    os.chmod(d, 0o755)
    before = snapshot(d)
    s = Server(ctx, root=d)
    s.start(expect_listen=False)
    rc = s.wait_exit(10)
    check(rc is not None and rc != 0, f"server on a non-empty unmarked root: exit {rc}")
    check(snapshot(d) == before, "the unmarked root was modified")
    check(s.output().strip(), "refused without a message")
    # an empty existing directory is taken
    e = ctx.path("empty")
    os.makedirs(e)
    s = ctx.server(root=e)
    check(os.path.exists(os.path.join(e, ".dpd-studio")), "no marker in an empty root")
    s.stop()
    # a file as root
    f = ctx.path("afile")
    open(f, "w").write("x")
    s = Server(ctx, root=f)
    s.start(expect_listen=False)
    rc = s.wait_exit(10)
    check(rc is not None and rc != 0 and open(f).read() == "x", f"a regular file as root: exit {rc}")


@test()
def t_schema_version(ctx):  # A4
    s = ctx.server()
    root = s.root
    check(s.stop() == 0, "SIGTERM exit status")
    db = os.path.join(root, "studio.db")
    con = sqlite3.connect(db)
    try:
        cols = [r[1] for r in con.execute("PRAGMA table_info(meta)")]
        if "schema_version" in cols:
            con.execute("UPDATE meta SET schema_version = 987")
        elif "key" in cols and "value" in cols:
            n = con.execute("UPDATE meta SET value = '987' WHERE key LIKE '%version%'").rowcount
            if not n:
                raise Skip(f"meta has no version row: {con.execute('SELECT * FROM meta').fetchall()}")
        else:
            raise Skip(f"meta columns {cols}: cannot find the schema version")
        con.commit()
    finally:
        con.close()
    s2 = Server(ctx, root=root)
    s2.start(expect_listen=False)
    rc = s2.wait_exit(10)
    check(rc is not None and rc != 0, f"server on a database of schema 987: exit {rc}")
    check("987" in s2.output(), f"the message does not name version 987: {s2.output()[-300:]!r}")


@test()
def t_schema_migration(ctx):  # a root of the schema before workspaces (1) opens, and keeps its runs
    s = ctx.server()
    rid = s.submit(options=fake(1, 20), key="migrate-me")["id"]
    s.wait_status(rid, ("succeeded",), 30)
    events = s.get(f"/api/v1/runs/{rid}/events?after=0").json["events"]
    root = s.root
    check(s.stop() == 0, "SIGTERM exit status")
    con = sqlite3.connect(os.path.join(root, "studio.db"))
    try:  # the runs table as schema 1 had it: no ws, the key unique over every run
        cols = [r[1] for r in con.execute("PRAGMA table_info(runs)")]
        check("ws" in cols, f"schema 2 has runs.ws: {cols}")
        keep = ", ".join(c for c in cols if c != "ws")
        sql = con.execute("SELECT sql FROM sqlite_master WHERE name='runs'").fetchone()[0]
        v1 = sql.replace(", ws TEXT NOT NULL DEFAULT '', UNIQUE(ws, idem))", ")").replace("idem TEXT,", "idem TEXT UNIQUE,")
        check(v1 != sql and "ws" not in v1.replace("runs", ""), f"cannot write the schema 1 table from {sql!r}")
        con.executescript(f"ALTER TABLE runs RENAME TO runs2; {v1}; INSERT INTO runs SELECT {keep} FROM runs2;"
                          "DROP TABLE runs2; CREATE INDEX runs_status ON runs(status, n);"
                          "UPDATE meta SET value='1' WHERE key='schema_version';")
        con.commit()
    finally:
        con.close()
    s2 = Server(ctx, root=root)
    s2.start()
    run = s2.run(rid)
    check(run["status"] == "succeeded", f"the run after the migration: {run}")
    check(s2.get(f"/api/v1/runs/{rid}/events?after=0").json["events"] == events, "its events changed")
    again = s2.submit(options=fake(1, 20), key="migrate-me", expect=200)
    check(again["id"] == rid, f"its idempotency key names another run: {again['id']}")
    lst = s2.get("/api/v1/runs").json
    check([r["id"] for r in lst["runs"]] == [rid], f"runs after the migration: {lst}")
    con = sqlite3.connect(os.path.join(root, "studio.db"))
    try:
        v = con.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0]
        check(v == "2", f"schema_version after the migration: {v}")
    finally:
        con.close()


# ---- public mode (dpd serve --public): sessions, tokens, isolation

def public_server(ctx, *args):
    return ctx.server(args=["--public", *args])


@test()
def t_public_session_create(ctx):  # a session: a 43-character token, a lease, its own 0700 directory
    s = public_server(ctx)
    t0 = time.time()
    r = s.post("/api/v1/web/sessions", {}, auth=False)
    check(r.status == 201, f"create: {r!r}")
    tok = r.json["access_token"]
    check(re.fullmatch(r"[A-Za-z0-9_-]{43}", tok or ""), f"token {tok!r}")
    check(r.json["token_type"] == "Bearer" and r.json["mode"] == "public", f"answer {r.json}")
    exp = datetime.fromisoformat(r.json["expires_at"].replace("Z", "+00:00")).timestamp()
    check(abs(exp - (t0 + 86400)) < 10, f"expires_at {r.json['expires_at']}: not 24 h from now")
    check("Set-Cookie" not in r.headers, "a session sets no cookie")
    for body in ('{"a": 1}', "[]", "x"):
        b = s.post("/api/v1/web/sessions", raw=body, auth=False)
        check(b.status == 422, f"body {body!r}: {b!r}")
    check(s.post("/api/v1/web/sessions", auth=False).status == 201, "no body is {}")
    check(s.get("/api/v1/web/sessions", auth=False).status == 405, "GET of the collection")
    dirs = os.listdir(os.path.join(s.root, "sessions"))
    check(len(dirs) == 3 and all(re.fullmatch(r"[0-9a-f]{48}", d) for d in dirs), f"session directories {dirs}")
    for d in dirs:
        mode = os.stat(os.path.join(s.root, "sessions", d)).st_mode & 0o777
        check(mode == 0o700, f"sessions/{d}: mode {mode:o}")
    me = s.as_session(tok).get("/api/v1/web/session")
    check(me.status == 200 and me.json["expires_at"] == r.json["expires_at"], f"GET /web/session: {me!r}")


@test()
def t_public_token_auth(ctx):  # only the exact bearer token of an open session opens the API
    s = public_server(ctx)
    tok = s.token
    def status(headers, path="/api/v1/runs"):
        return s.get(path, auth=False, headers=headers).status
    check(status({"Authorization": "Bearer " + tok}) == 200, "the token")
    flipped = [tok[:i] + ("A" if tok[i] != "A" else "B") + tok[i + 1:] for i in (0, 21, 42)]
    check(status({"Authorization": "bearer " + tok}) == 200 and status({"Authorization": "Bearer  " + tok}) == 200,
          "the scheme in any case, then one or more spaces (RFC 9110, 6750)")
    bad = [{}, {"Authorization": "Bearer " + tok + "A"}, {"Authorization": "Bearer " + tok[:-1]},
           {"Authorization": "Basic " + tok},
           {"Authorization": "Bearer " + "x" * 120}, {"Cookie": "dpd_session=" + tok}]
    bad += [{"Authorization": "Bearer " + f} for f in flipped]
    for h in bad:
        r = s.get("/api/v1/runs", auth=False, headers=h)
        check(r.status == 401 and r.json["error"]["code"] == "unauthorized", f"{h}: {r!r}")
    check(status({}, f"/api/v1/runs?access_token={tok}") == 401, "a token in the query is not read")
    check(not os.path.exists(os.path.join(s.root, "api-token")), "public mode wrote ROOT/api-token")
    for path in ("/api/v1/session", "/api/v1/session/bootstrap?token=x", "/", "/index.html"):
        r = s.get(path, headers={"Authorization": "Bearer " + tok}, auth=False)
        check(r.status == 404 and "Set-Cookie" not in r.headers, f"{path} in public mode: {r!r}")
    big = {"name": "cap", "files": {"train_input.csv": "I,Q\n" + "0.1,0.2\n" * 20000}}  # over public mode's 64 KiB
    for r in (s.get("/api/v1/settings"), s.post("/api/v1/datasets", {}), s.post("/api/v1/datasets", big)):
        check(r.status == 403 and r.json["error"]["code"] == "feature_unavailable", f"a local-only route: {r!r}")
    r = s.post("/api/v1/runs", big)
    check(r.status == 413 and r.json["error"]["code"] == "payload_too_large", f"a body too large for a public route: {r!r}")
    names = [d["name"] for d in s.get("/api/v1/datasets").json["datasets"]]
    check(not any(n.startswith("upload:") for n in names), f"datasets in public mode: {names}")


@test()
def t_public_isolation(ctx):  # no request of one session reaches another's run: 404 as for no run at all
    s = public_server(ctx)
    a, b = s, s.as_session(s.new_session())
    rid = a.submit("train-pa", "synth", {"model": "gru", "hidden": 4, "preset": "quick", "epochs": 1}, key="shared-key")["id"]
    a.wait_status(rid, ("succeeded",), 90)
    arts = a.get(f"/api/v1/runs/{rid}/artifacts").json["artifacts"]
    check(arts, "the run has artifacts")
    aid = arts[0]["id"]
    body = a.get(f"/api/v1/runs/{rid}/artifacts/{aid}").body
    for sub in ("", "/events?after=0", "/events/stream", "/logs", "/live", "/plots", "/results", "/artifacts"):
        t = a.get(f"/api/v1/runs/{rid}{sub}").body.decode()
        check(s.root not in t and "/sessions/" not in t, f"A's own {sub or '/'} names a server path: {t[:300]}")
    res = a.get(f"/api/v1/runs/{rid}/results").json
    check(res["run_dir"].startswith("runs/") and res["config"]["data"] == "datasets/synth",
          f"a public run's paths read from its workspace: run_dir {res['run_dir']!r}, data {res['config']['data']!r}")
    subs = ["", "/events?after=0", "/history", "/live", "/logs", "/plots", "/results", "/artifacts", f"/artifacts/{aid}"]
    for sub in subs:
        mine, none = b.get(f"/api/v1/runs/{rid}{sub}"), b.get(f"/api/v1/runs/r000000000000{sub}")
        check(mine.status == 404 and mine.status == none.status and mine.json == none.json,
              f"B GET {sub or '/'} of A's run: {mine!r}; of no run: {none!r}")
    for sub in ("/cancel", "/retry"):
        mine = b.post(f"/api/v1/runs/{rid}{sub}", {})
        check(mine.status == 404 and mine.json["error"]["code"] == "run_not_found", f"B POST {sub}: {mine!r}")
    ev = b.get(f"/api/v1/runs/{rid}/events/stream", timeout=5)
    check(ev.status == 404, f"B's event stream of A's run: {ev!r}")
    lst = b.get("/api/v1/runs").json
    check(lst["runs"] == [] and lst["total"] == 0, f"B lists {lst}")
    st = b.get("/api/v1/system/status").json
    check(sum(st["runs"].values()) == 0, f"B's status counts A's runs: {st['runs']}")
    dpd_opts = {"pa": rid, "model": "gru", "hidden": 4, "preset": "quick", "epochs": 1}
    theirs = b.post("/api/v1/runs", {"verb": "train-dpd", "dataset": "synth", "options": dpd_opts})
    check(theirs.status == 422 and theirs.json["error"]["field"] == "pa", f"B's train-dpd on A's PA run: {theirs!r}")
    own = a.post("/api/v1/runs", {"verb": "train-dpd", "dataset": "synth", "options": dpd_opts})
    check(own.status == 201, f"A's train-dpd on its own PA run: {own!r}")
    a.post(f"/api/v1/runs/{own.json['id']}/cancel", {})
    mine = b.submit(options=fake(1, 20), key="shared-key")
    check(mine["id"] != rid, "A's idempotency key gave B A's run")
    again = a.post("/api/v1/runs", {"verb": "fake", "dataset": "synth", "options": fake(1, 20), "idempotency_key": "shared-key"})
    expect_error(again, 422, code="idempotency_key_reused", what="A's key with B's request")
    check(rid in again.json["error"]["message"], f"A's key names A's run: {again.json}")
    check(a.get(f"/api/v1/runs/{rid}/artifacts/{aid}").body == body, "A's artifact changed")
    check(a.run(rid)["status"] == "succeeded", "A's run changed")


@test()
def t_public_token_not_stored(ctx):  # the token is in no file, no log, no output; a restart ends every session
    s = public_server(ctx)
    rid = s.submit(options=fake(1, 20))["id"]
    s.wait_status(rid, ("succeeded",), 30)
    tok = s.token.encode()
    hits = []
    for dirpath, dirs, files in os.walk(s.root, followlinks=False):
        for f in files:
            p = os.path.join(dirpath, f)
            if os.path.islink(p) or not os.path.isfile(p):
                continue
            with open(p, "rb") as fh:
                if tok in fh.read():
                    hits.append(p)
    check(not hits, f"the token is written in {hits}")
    check(tok.decode() not in s.output(), "the token is in the server's output or log")
    root = s.root
    check(s.stop() == 0, "SIGTERM exit status")
    s2 = Server(ctx, root=root, args=["--public"])
    s2.start()
    old = s2.get("/api/v1/runs", auth=False, headers={"Authorization": "Bearer " + tok.decode()})
    check(old.status == 401, f"the old token after a restart: {old!r}")
    left = [d for d in os.listdir(os.path.join(root, "sessions"))]
    check(len(left) == 1, f"the old session's directory is left: {left}")  # the harness's new session only
    check(s2.get("/api/v1/runs").json["total"] == 0, "the old session's run is listed")


@test()
def t_public_flags(ctx):  # the flags and their bounds
    out = subprocess.run([DPD, "serve", "--help"], capture_output=True, text=True)
    for f in ("--public", "--session-lease", "--max-sessions", "--ip-sessions", "--ip-connections", "--max-connections"):
        check(f in out.stdout, f"serve --help lacks {f}")
    for bad in (["--public", "--session-lease", "0"], ["--public", "--max-sessions", "0"],
                ["--public", "--import", ctx.path("x")]):
        r = subprocess.run([DPD, "serve", "--root", ctx.path("flags"), *bad], capture_output=True, text=True, timeout=10)
        check(r.returncode == 2 and r.stderr, f"serve {bad}: exit {r.returncode}, {r.stderr!r}")
    for flag in ("--session-lease", "--max-pending", "--public-host", "--origin", "--client-ip-header"):  # public mode's alone
        val = {"--public-host": "x.example", "--origin": "https://x.example", "--client-ip-header": "X-Real-IP"}.get(flag, "5")
        r = subprocess.run([DPD, "serve", "--root", ctx.path("flags"), flag, val],
                           capture_output=True, text=True, timeout=10)
        check(r.returncode == 2 and f"{flag} is for public mode (--public)" in r.stderr, f"serve {flag} alone: {r.returncode} {r.stderr!r}")
    s = public_server(ctx, "--max-sessions", "2")  # the harness holds one
    check(s.post("/api/v1/web/sessions", {}, auth=False).status == 201, "the second session")
    full = s.post("/api/v1/web/sessions", {}, auth=False)
    check(full.status == 503 and full.json["error"]["code"] == "too_many_sessions", f"a third: {full!r}")
    # a run's wall time is bounded by default in public mode (3600 s); 0 lifts it, with a warning
    s.wait_line(r"a run may take at most 3600 s \(--max-runtime\)", 10)  # public mode's default
    if as_limit_ok():  # and its address space (a sanitizer build's servers run without: as_limit_ok)
        s.wait_line(r"a worker may map at most 4096 MiB \(--worker-memory\)", 10)
    else:
        ctx.note = "this dpd cannot run under 4 GiB of address space (a sanitizer build): the default is not shown"

    s.stop()
    s = public_server(ctx, "--max-runtime", "0", "--worker-memory", "0")
    check("warning: --max-runtime 0 with --public" in s.output() and not any("a run may take" in l for l in s.lines),
          f"--public --max-runtime 0: warned (stderr, in the log before stdout's one flush), no limit: {s.log_tail()}")
    check("warning: --worker-memory 0 with --public" in s.output() and not any("a worker may map" in l for l in s.lines),
          f"--public --worker-memory 0: warned, no limit: {s.log_tail()}")


def lease_end(sess):  # time.monotonic() at which the session's fixed lease ends, by the server's own clock
    j = sess.get("/api/v1/web/session").json
    iso = lambda t: datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp()
    return time.monotonic() + iso(j["expires_at"]) - iso(j["server_time"])


def session_dir(srv, rid):  # the session directory holding run rid, or None
    hits = [d for d in os.listdir(os.path.join(srv.root, "sessions"))
            if os.path.isdir(os.path.join(srv.root, "sessions", d, "runs", rid))]
    return os.path.join(srv.root, "sessions", hits[0]) if hits else None


def ws_rows(srv, ws):  # the store's runs of workspace ws
    con = sqlite3.connect(os.path.join(srv.root, "studio.db"))
    try:
        return con.execute("SELECT COUNT(*) FROM runs WHERE ws=?", (ws,)).fetchone()[0]
    finally:
        con.close()


def gone(pid):  # no such process (a zombie is not gone: the supervisor reaps its workers)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@test()
def t_public_lease_ends(ctx):  # a fixed lease: use does not extend it; at its end the workers die, the runs and files go
    s = public_server(ctx, "--session-lease", "4")
    a = s.as_session(s.new_session())
    exp, end = a.get("/api/v1/web/session").json["expires_at"], lease_end(a)
    rid = a.submit(options=fake(100, 200))["id"]
    run = a.wait_status(rid, ("running",), 10)
    pid, home = run["pid"], session_dir(a, rid)
    check(pid and home, f"a running worker {run} in a session directory {home}")
    while time.monotonic() < end - 0.8:
        r = a.get("/api/v1/web/session")
        check(r.status == 200 and r.json["expires_at"] == exp, f"within the lease: {r!r} (expires_at was {exp})")
        time.sleep(0.4)
    while time.monotonic() < end + 0.3:
        time.sleep(0.1)
    r = a.get(f"/api/v1/runs/{rid}")
    check(r.status == 401 and r.json["error"]["code"] == "session_expired", f"after the lease: {r!r}")
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and (os.path.exists(home) or not gone(pid)):
        time.sleep(0.1)
    check(gone(pid), f"the worker {pid} outlived its session")
    check(not os.path.exists(home), f"{home} is left")
    check(ws_rows(s, os.path.basename(home)) == 0, "the session's runs are left in the store")
    check(s.get("/healthz", auth=False).status == 200, "healthz")
    fresh = s.as_session(s.new_session())
    check(fresh.get("/api/v1/runs").status == 200, "a new session works")


@test()
def t_public_end_defers_for_download(ctx):  # a download in flight keeps its session's files until its last byte
    s = public_server(ctx, "--session-lease", "8")
    a = s.as_session(s.new_session())
    end = lease_end(a)
    rid = a.submit(options={"epochs": 1, "epoch_ms": 10, "artifact_mb": 64})["id"]
    a.wait_status(rid, ("succeeded",), 30)
    arts = {x["name"]: x for x in a.get(f"/api/v1/runs/{rid}/artifacts").json["artifacts"]}
    blob = arts.get("blob.bin")
    check(blob and blob["size"] == 64 << 20, f"the 64 MiB artifact: {sorted(arts)}")
    home = session_dir(a, rid)
    conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=30)
    conn.request("GET", f"/api/v1/runs/{rid}/artifacts/{blob['id']}", headers={"Authorization": "Bearer " + a.token})
    resp = conn.getresponse()
    check(resp.status == 200, f"download: {resp.status}")
    h = hashlib.sha256(resp.read(65536))
    check(time.monotonic() < end, "the run and the first bytes took the whole lease: lengthen it")
    while time.monotonic() < end + 2.5:  # past the lease and several sweeps
        time.sleep(0.2)
    check(a.get("/api/v1/runs").status == 401, "the session is over")
    check(os.path.isdir(home), "the session's directory went while its download was in flight")
    while True:
        b = resp.read(1 << 20)
        if not b:
            break
        h.update(b)
    conn.close()
    check(h.hexdigest() == blob["sha256"], "the download's bytes differ from the artifact's sha256")
    deadline = time.monotonic() + 4
    while time.monotonic() < deadline and os.path.exists(home):
        time.sleep(0.1)
    check(not os.path.exists(home), f"{home} is left after the download ended")


@test()
def t_public_download_cut(ctx):  # a download that takes longer than --download-timeout is cut; its session then goes
    s = public_server(ctx, "--session-lease", "6", "--download-timeout", "3")
    a = s.as_session(s.new_session())
    end = lease_end(a)
    rid = a.submit(options={"epochs": 1, "epoch_ms": 10, "artifact_mb": 64})["id"]
    a.wait_status(rid, ("succeeded",), 30)
    blob = {x["name"]: x for x in a.get(f"/api/v1/runs/{rid}/artifacts").json["artifacts"]}["blob.bin"]
    home = session_dir(a, rid)
    c = socket.create_connection(("127.0.0.1", s.port), timeout=10)
    c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    c.sendall((f"GET /api/v1/runs/{rid}/artifacts/{blob['id']} HTTP/1.1\r\nHost: 127.0.0.1:{s.port}\r\n"
               f"Authorization: Bearer {a.token}\r\n\r\n").encode())
    got, stop = [0], threading.Event()
    def slow():  # 4 KiB every 50 ms, 80 KiB/s: the 64 MiB would take 13 minutes
        while not stop.is_set():
            try:
                b = c.recv(4096)
            except OSError:
                return
            if not b:
                return
            got[0] += len(b)
            time.sleep(0.05)
    reader = threading.Thread(target=slow)
    t_dl = time.monotonic()
    reader.start()
    try:
        deadline = max(end, t_dl + 3) + 6  # the lease's end and the 3 s timeout, then sweeps (slow under sanitizers)
        while time.monotonic() < deadline and os.path.exists(home):
            time.sleep(0.1)
        gone = not os.path.exists(home)
    finally:
        stop.set()
        reader.join()
        c.close()
    check(gone and got[0] < 64 << 20, f"the ended session's files went once its slow download ({got[0]} bytes read) was cut")
    check(s.get("/healthz").status == 200, "the server is healthy")


@test()
def t_public_idle_lease(ctx):  # --idle-lease: only POST /web/activity renews it; reading does not
    s = public_server(ctx, "--idle-lease", "2")
    p, q = s.as_session(s.new_session()), s.as_session(s.new_session())
    first = q.get("/api/v1/web/session").json
    check(first["idle_expires_at"] and first["idle_expires_at"] < first["expires_at"], f"leases {first}")
    t0 = time.monotonic()
    codes, moved = [], False
    while time.monotonic() - t0 < 4:
        codes.append(p.get("/api/v1/runs").status)
        a = q.post("/api/v1/web/activity", {})
        check(a.status == 200, f"activity: {a!r}")
        moved |= a.json["idle_expires_at"] > first["idle_expires_at"]
        check(a.json["expires_at"] == first["expires_at"], "activity moved the fixed lease")
        time.sleep(0.5)
    check(codes[0] == 200 and codes[-1] == 401, f"the polled session's answers {codes}")
    check(moved and q.get("/api/v1/runs").status == 200, "the active session lost its lease")
    none = ctx.server(root=ctx.path("root-no-idle"), args=["--public"])
    check(none.get("/api/v1/web/session").json["idle_expires_at"] is None, "no --idle-lease: no inactivity lease")


@test()
def t_public_rate_limits(ctx):  # token buckets: new sessions per client address (IPv6 by /64), requests per session
    s = public_server(ctx, "--session-rate", "3", "--request-rate", "5", "--client-ip-header", "X-Test-Client-IP",
                      "--ip-inflight", "0")
    def create(ip):
        return s.post("/api/v1/web/sessions", {}, auth=False, headers={"X-Test-Client-IP": ip})
    for ip, other in (("203.0.113.7", "203.0.113.8"), ("2001:db8::1", "2001:db8:0:1::1")):
        codes = [create(ip).status for _ in range(3)]
        check(codes == [201] * 3, f"{ip}: the burst of 3: {codes}")
        r = create(ip if ":" not in ip else "2001:db8::2")  # the same /64
        check(r.status == 429 and r.json["error"]["code"] == "rate_limited" and int(r.headers["Retry-After"]) >= 1,
              f"{ip}: a fourth session: {r!r} {dict(r.headers)}")
        check(create(other).status == 201, f"{other}, another key, is served meanwhile")
    a = s.as_session(create("198.51.100.1").json["access_token"])
    results = []
    def hit():
        r = a.get("/api/v1/runs")
        results.append((r.status, r.headers.get("Retry-After")))
    t0 = time.monotonic()
    threads = [threading.Thread(target=hit) for _ in range(40)]  # at once: the bucket cannot refill meanwhile
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.monotonic() - t0
    ok = sum(1 for c, _ in results if c == 200)
    limited = [ra for c, ra in results if c == 429]
    check(10 <= ok <= 10 + 5 * took + 1, f"{ok} of 40 requests served in {took:.2f} s (a burst of 10, 5 a second)")
    check(limited and all(ra and int(ra) >= 1 for ra in limited), f"the rest get 429 with Retry-After: {results}")
    time.sleep(1.2)
    check(a.get("/api/v1/runs").status == 200, "the session is served again after a second")
    check(s.get("/api/v1/runs").status == 200, "another session is not limited by this one")


@test()
def t_public_ip_sessions(ctx):  # sessions open at once per client address; the proxy's header: its last address only
    s = public_server(ctx, "--ip-sessions", "2", "--session-rate", "0", "--client-ip-header", "X-Test-Client-IP")
    def create(ip):
        return s.post("/api/v1/web/sessions", {}, auth=False, headers={"X-Test-Client-IP": ip})
    first = create("203.0.113.9")
    check(first.status == 201 and create("203.0.113.9").status == 201, "two sessions of one address")
    for spelling in ("203.0.113.9", "::ffff:203.0.113.9", "198.51.100.1, 203.0.113.9", " 203.0.113.9 "):
        r = create(spelling)
        check(r.status == 429 and r.json["error"]["code"] == "session_quota", f"a third from {spelling!r}: {r!r}")
    check(create("203.0.113.9, 198.51.100.1").status == 201, "a list's last address is the client (the proxy adds it)")
    c = socket.create_connection(("127.0.0.1", s.port), timeout=10)  # a header twice: written by hand
    c.sendall((f"POST /api/v1/web/sessions HTTP/1.1\r\nHost: 127.0.0.1:{s.port}\r\nX-Test-Client-IP: 10.9.9.9\r\n"
               f"X-Test-Client-IP: 203.0.113.9\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").encode())
    two = c.recv(4096)
    c.close()
    check(two.startswith(b"HTTP/1.1 400") and b"ambiguous_headers" in two,
          f"the client-address header twice (a proxy that adds a line keeps the client's): {two[:120]!r}")
    for bad in ("not-an-address", "203.0.113.9 198.51.100.1", "203.0.113.999", "", None):
        r = create(bad)
        check(r.status == 403 and r.json["error"]["code"] == "bad_client_ip", f"X-Test-Client-IP: {bad!r}: {r!r}")
    ended = s.as_session(first.json["access_token"]).post("/api/v1/web/sessions/end", {})
    check(ended.status == 200, f"end one: {ended!r}")
    r = create("203.0.113.9")
    check(r.status == 201, f"an ended session no longer counts: {r!r}")


@test()
def t_public_ip_runs(ctx):  # runs submitted from one client address, over all its sessions: --ip-runs
    s = public_server(ctx, "--ip-runs", "3", "--session-pending", "100", "--client-ip-header", "X-Test-Client-IP")
    def session(ip):
        r = s.post("/api/v1/web/sessions", {}, auth=False, headers={"X-Test-Client-IP": ip})
        return s.as_session(r.json["access_token"])
    def submit(sess, ip, key=None):
        body = {"verb": "fake", "dataset": "synth", "options": fake(1, 10)}
        if key:
            body["idempotency_key"] = key
        return sess.post("/api/v1/runs", body, headers={"X-Test-Client-IP": ip})
    a1, a2, b = session("203.0.113.20"), session("203.0.113.20"), session("203.0.113.21")
    codes = [submit(a1, "203.0.113.20", key="k1").status, submit(a1, "203.0.113.20").status,
             submit(a1, "203.0.113.20", key="k1").status, submit(a2, "203.0.113.20").status]
    check(codes == [201, 201, 200, 201], f"three runs and a repeat (not counted) from one address: {codes}")
    r = submit(a2, "203.0.113.20")
    check(r.status == 429 and r.json["error"]["code"] == "ip_run_quota", f"a fourth run from the address: {r!r}")
    check(submit(a1, "203.0.113.20", key="k1").status == 200, "a repeat at the address's cap is answered, not refused")
    check(submit(b, "203.0.113.21").status == 201, "another address is not counted with it")


@test()
def t_public_queue_full(ctx):  # runs queued or running in all, every session's: --max-pending
    s = public_server(ctx, "--max-pending", "2")
    other = s.as_session(s.new_session())
    a = s.submit(options=fake(100, 200))["id"]
    s.wait_status(a, ("running",), 10)
    other.submit(options=fake(100, 200))
    third = s.as_session(s.new_session())
    r = third.post("/api/v1/runs", {"verb": "fake", "dataset": "synth", "options": fake(1, 10)})
    check(r.status == 429 and r.json["error"]["code"] == "queue_full" and int(r.headers.get("Retry-After", 0)) >= 1,
          f"a third pending run in all: {r!r}")
    s.post(f"/api/v1/runs/{a}/cancel", {})
    s.wait_status(a, ("cancelled",), 20)
    check(third.post("/api/v1/runs", {"verb": "fake", "dataset": "synth", "options": fake(1, 10)}).status == 201,
          "one ended: the next is taken")


def web_storage(sess):  # the session's storage as GET /api/v1/web/session tells it
    r = sess.get("/api/v1/web/session")
    check(r.status == 200 and isinstance(r.json.get("storage"), dict), f"GET /api/v1/web/session: {r!r}")
    return r.json["storage"]


@test()
def t_public_storage_quota(ctx):  # measured every 2 s, links not followed; over it: runs ended, 413 workspace_limit
    s = public_server(ctx, "--session-quota-mb", "4", "--worker-file-mb", "16")
    st = web_storage(s)
    check(st["quota_bytes"] == 4 << 20 and st["over_quota"] is False, f"a new session's storage: {st}")
    b = s.as_session(s.new_session())
    bdir = [os.path.join(s.root, "sessions", d) for d in os.listdir(os.path.join(s.root, "sessions"))]
    outside = ctx.path("outside.bin")
    with open(outside, "wb") as f:
        f.truncate(0)
        f.write(b"\1" * (8 << 20))
    for d in bdir:  # a link in every session's directory to 8 MiB outside it: not counted
        os.symlink(outside, os.path.join(d, "link.bin"))
    big = s.submit(options={"epochs": 100, "epoch_ms": 100, "fill_mb": 8})["id"]
    s.wait_status(big, ("running",), 10)
    queued = s.submit(options=fake(1, 10))["id"]
    body = json.dumps({"verb": "fake", "dataset": "synth", "options": fake(1, 10)}).encode()
    held = socket.create_connection(("127.0.0.1", s.port), timeout=10)  # a submission begun before the session is over
    held.sendall((f"POST /api/v1/runs HTTP/1.1\r\nHost: 127.0.0.1:{s.port}\r\nAuthorization: Bearer {s.token}\r\n"
                  f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body[:5])
    r = s.wait_status(big, ("failed",), 15)
    check(r["reason_code"] == "storage_quota" and r["error"]["code"] == "storage_quota", f"the run that filled it: {r}")
    q = s.wait_status(queued, ("interrupted",), 10)
    check(q["reason_code"] == "storage_quota", f"its queued run: {q}")
    held.sendall(body[5:])
    late = held.recv(65536)
    held.close()
    check(late.startswith(b"HTTP/1.1 413") and b"workspace_limit" in late,
          f"a submission begun before the session went over, finished after: {late[:160]!r}")
    st = web_storage(s)
    # over the quota: the filling run is ended at the first measurement past it, which may come
    # before its whole 8 MiB is written (a slow, sanitized worker)
    check(st["over_quota"] is True and st["used_bytes"] > st["quota_bytes"], f"the session over its quota: {st}")
    r = s.post("/api/v1/runs", {"verb": "fake", "dataset": "synth", "options": fake(1, 10)})
    check(r.status == 413 and r.json["error"]["code"] == "workspace_limit", f"a submission over the quota: {r!r}")
    check(s.get(f"/api/v1/runs/{big}").status == 200, "its runs can still be read")
    deadline = time.monotonic() + 10
    while web_storage(b)["used_bytes"] is None and time.monotonic() < deadline:
        time.sleep(0.1)
    st = web_storage(b)
    check(st["used_bytes"] is not None and st["used_bytes"] < 1 << 20 and st["over_quota"] is False,
          f"another session, with a link to 8 MiB outside it: {st}")
    check(b.post("/api/v1/runs", {"verb": "fake", "dataset": "synth", "options": fake(1, 10)}).status == 201,
          "another session is served")


@test()
def t_public_disk_reserve(ctx):  # no new session or run while the disk has less than --disk-reserve-mb free
    root = ctx.path("root-reserve")
    os.makedirs(root)
    v = os.statvfs(root)
    free_mb = v.f_bavail * v.f_frsize >> 20
    if free_mb < 2048:
        raise Skip(f"{free_mb} MiB free: too little to take 1 GiB away")
    s = ctx.server(root=root, args=["--public", "--disk-reserve-mb", str(free_mb - 512)])
    filler = ctx.path("filler")
    fd = os.open(filler, os.O_CREAT | os.O_WRONLY, 0o600)
    try:
        os.posix_fallocate(fd, 0, 1 << 30)  # the disk now has about 512 MiB less free than the reserve
        r = s.post("/api/v1/runs", {"verb": "fake", "dataset": "synth", "options": fake(1, 10)})
        check(r.status == 507 and r.json["error"]["code"] == "storage_busy", f"a submission: {r!r}")
        r = s.post("/api/v1/web/sessions", {}, auth=False)
        check(r.status == 507 and r.json["error"]["code"] == "storage_busy", f"a new session: {r!r}")
    finally:
        os.close(fd)
        os.unlink(filler)
    check(s.post("/api/v1/runs", {"verb": "fake", "dataset": "synth", "options": fake(1, 10)}).status == 201,
          "with the space back, a submission is taken")


@test()
def t_public_ip_connections(ctx):  # libmicrohttpd's limit of connections from one peer address
    s = public_server(ctx, "--ip-connections", "4")
    idle = [socket.create_connection(("127.0.0.1", s.port), timeout=5) for _ in range(5)]
    time.sleep(0.3)
    answers = []
    for c in idle:  # the daemon's threads take them in any order: whichever came fifth is closed
        try:
            c.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            answers.append(c.recv(100)[:12])
        except OSError:  # reset
            answers.append(b"")
    served = answers.count(b"HTTP/1.1 200")  # (the harness's own last connection may not be cleaned up yet: 3)
    check(3 <= served <= 4 and served + answers.count(b"") == 5, f"five connections from one address under 4: {answers}")
    for c in idle:
        c.close()
    # the daemon's threads see the closes when they next look: until then a new connection can
    # still be one too many (and the one after a success too), so each check below retries for 5 s
    served_again = False
    deadline = time.monotonic() + 5
    while not served_again and time.monotonic() < deadline:
        try:
            served_again = s.get("/healthz").status == 200
        except OSError:
            pass
        if not served_again:
            time.sleep(0.1)
    check(served_again, "served again once they are closed")
    # libmicrohttpd answers this one itself, before the server sees a request (docs/studio.md: its
    # own answers carry none of the server's headers), so it is read raw, not through the helpers
    head = b""
    deadline = time.monotonic() + 5
    while not head and time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", s.port), timeout=5) as c:
                c.sendall(f"GET /api/v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Long: {'x' * 40000}\r\n\r\n".encode())
                head = c.recv(64)
        except OSError:
            head = b""
        if not head:
            time.sleep(0.1)
    check(head.startswith((b"HTTP/1.1 431", b"HTTP/1.1 413")), f"40 KB of headers (over a connection's 32 KiB): {head!r}")


@test()
def t_public_inflight(ctx):  # a session's requests at once are bounded (an event stream is one); one submission at a time
    m = ctx.server(root=ctx.path("root-changes"), args=["--public", "--session-inflight", "0", "--request-rate", "0",
                                                        "--session-pending", "100"])
    # a submission whose body is still arriving holds the session's one change (admitted on its headers)
    body = json.dumps({"verb": "fake", "dataset": "synth", "options": fake(1, 10)}).encode()
    c = socket.create_connection(("127.0.0.1", m.port), timeout=10)
    c.sendall((f"POST /api/v1/runs HTTP/1.1\r\nHost: 127.0.0.1:{m.port}\r\nAuthorization: Bearer {m.token}\r\n"
               f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body[:10])
    time.sleep(0.3)
    for path in ("/api/v1/runs", "/api/v1/runs/", "/api//v1/runs", "/api/v1//runs//", "/api/v1/runs/%s/retry" % "r000000000000"):
        r = m.post(path, {"verb": "fake", "dataset": "synth", "options": fake(1, 10)})
        check(r.status == 429 and r.json["error"]["code"] == "change_in_progress" and r.headers.get("Retry-After") == "1",
              f"POST {path} while another submission is in progress: {r!r}")
    c.sendall(body[10:])
    head = c.recv(65536)
    c.close()
    check(head.startswith(b"HTTP/1.1 201"), f"the held submission: {head[:200]!r}")
    check(m.post("/api/v1/runs/", {"verb": "fake", "dataset": "synth", "options": fake(1, 10)}).status == 201,
          "after its answer, the next submission (by another spelling of the path) is taken")
    s = public_server(ctx, "--session-inflight", "2", "--request-rate", "0")
    rid = s.submit(options=fake(100, 200))["id"]
    s.wait_status(rid, ("running",), 10)
    streams = [SSE(s, rid), SSE(s, rid)]
    r = s.get("/api/v1/runs")
    check(r.status == 429 and r.json["error"]["code"] == "too_many_in_flight" and r.headers.get("Retry-After") == "1",
          f"a third request beside two streams: {r!r}")
    other = s.as_session(s.new_session())
    check(other.get("/api/v1/runs").status == 200, "another session is not bounded by this one")
    streams[0].close()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and s.get("/api/v1/runs").status == 429:
        time.sleep(0.1)
    check(s.get(f"/api/v1/runs/{rid}").status == 200, "a stream closed: a request is served again")
    streams[1].close()
    s.post(f"/api/v1/runs/{rid}/cancel", {})


@test()
def t_public_compute_limits(ctx):  # each bound at its limit passes, at limit + 1 is 422 compute_limit naming the field
    s = public_server(ctx, "--session-pending", "100", "--session-runs", "100")
    base = {"model": "gru", "hidden": 4, "preset": "quick", "epochs": 1}
    for key, limit in (("epochs", 300), ("batch", 256), ("frame", 400), ("hidden", 128), ("layers", 2), ("threads", 4),
                       ("seed", 4294967295)):
        over = s.post("/api/v1/runs", {"verb": "train-pa", "dataset": "synth", "options": {**base, key: limit + 1}})
        check(over.status == 422 and over.json["error"]["code"] == "compute_limit" and over.json["error"]["field"] == key,
              f"{key} = {limit + 1}: {over!r}")
        at = s.post("/api/v1/runs", {"verb": "train-pa", "dataset": "synth", "options": {**base, key: limit}})
        check(at.status == 201 or (at.status == 422 and at.json["error"]["code"] != "compute_limit"),
              f"{key} = {limit}: {at!r}")
        if at.status == 201:
            s.post(f"/api/v1/runs/{at.json['id']}/cancel", {})
    local = ctx.server(root=ctx.path("root-local"))
    r = local.post("/api/v1/runs", {"verb": "train-pa", "dataset": "synth", "options": {**base, "hidden": 129}})
    check(r.status == 201, f"the local studio has no such bound: {r!r}")
    local.post(f"/api/v1/runs/{r.json['id']}/cancel", {})


@test()
def t_public_run_quotas(ctx):  # runs a session may submit, and have queued or running at once: 429; a repeat is not refused
    s = public_server(ctx, "--session-runs", "3", "--session-pending", "2")
    a = s.submit(options=fake(100, 200), key="k1")["id"]
    s.submit(options=fake(100, 200))
    r = s.post("/api/v1/runs", {"verb": "fake", "dataset": "synth", "options": fake(1, 10)})
    check(r.status == 429 and r.json["error"]["code"] == "pending_quota", f"a third pending run: {r!r}")
    check(s.submit(options=fake(100, 200), key="k1", expect=200)["id"] == a, "the repeat of a submission is answered")
    s.post(f"/api/v1/runs/{a}/cancel", {})
    s.wait_status(a, TERMINAL, 20)
    s.submit(options=fake(1, 10))
    r = s.post("/api/v1/runs", {"verb": "fake", "dataset": "synth", "options": fake(1, 10)})
    check(r.status == 429 and r.json["error"]["code"] == "run_quota", f"a fourth run: {r!r}")
    other = s.as_session(s.new_session())
    check(other.post("/api/v1/runs", {"verb": "fake", "dataset": "synth", "options": fake(1, 10)}).status == 201,
          "another session has its own quota")


@test()
def t_public_origin(ctx):  # --origin: only that Origin (or none) is served; CORS for it alone; preflights
    good = "https://studio.example"
    s = public_server(ctx, "--origin", good)
    plain = s.get("/api/v1/runs")
    check(plain.status == 200 and "Access-Control-Allow-Origin" not in plain.headers and plain.headers.get("Vary") == "Origin",
          f"no Origin: {plain!r} {dict(plain.headers)}")
    mine = s.get("/api/v1/runs", headers={"Origin": good})
    check(mine.status == 200 and mine.headers.get("Access-Control-Allow-Origin") == good
          and "Retry-After" in mine.headers.get("Access-Control-Expose-Headers", ""), f"the origin: {dict(mine.headers)}")
    for bad in ("https://evil.example", "null", good + ".evil.example", "http://studio.example"):
        r = s.get("/api/v1/runs", headers={"Origin": bad})
        check(r.status == 403 and r.json["error"]["code"] == "origin_not_allowed", f"Origin {bad}: {r!r}")
    def pre(origin, method="POST", hdrs="authorization, content-type"):
        h = {"Access-Control-Request-Method": method, "Access-Control-Request-Headers": hdrs}
        if origin:
            h["Origin"] = origin
        return s.req("OPTIONS", "/api/v1/runs", headers=h, auth=False)
    ok = pre(good)
    check(ok.status == 204 and ok.body == b"" and ok.headers.get("Access-Control-Max-Age") == "600"
          and ok.headers.get("Access-Control-Allow-Origin") == good, f"an allowed preflight: {ok!r} {dict(ok.headers)}")
    for args in ((good, "POST", "x-forwarded-for"), (good, "DELETE", ""), ("https://evil.example",), (None,)):
        r = pre(*args)
        check(r.status == 403, f"preflight {args}: {r!r}")
    for r in (plain, mine, ok):
        check("Set-Cookie" not in r.headers and "Access-Control-Allow-Credentials" not in r.headers, f"{dict(r.headers)}")
    other = ctx.server(root=ctx.path("root-no-origin"), args=["--public"])
    r = other.get("/api/v1/runs", headers={"Origin": good})
    check(r.status == 403, f"no --origin: every Origin is refused: {r!r}")


@test()
def t_public_hosts(ctx):  # --public-host: the names a reverse proxy serves the API as, besides loopback
    s = public_server(ctx, "--public-host", "studio.example")
    for host, want in (("studio.example", 200), ("studio.example:443", 200), ("STUDIO.Example", 200),
                       ("evil.example", 403), ("studio.example.evil", 403), ("studio.example:", 403),
                       ("studio.example:44x", 403), (f"127.0.0.1:{s.port}", 200)):
        r = s.get("/api/v1/runs", headers={"Host": host})
        check(r.status == want, f"Host {host}: {r!r} (want {want})")


@test()
def t_route_table(ctx):  # every route is in one table with the modes that serve it; public mode refuses the local ones
    out = subprocess.run([DPD, "serve", "--routes"], capture_output=True, text=True, timeout=10)
    check(out.returncode == 0, f"serve --routes: {out.returncode} {out.stderr!r}")
    table = [json.loads(l) for l in out.stdout.splitlines()]
    check(len(table) >= 20 and all(set(t) == {"method", "path", "modes"} for t in table), f"the table: {table}")
    check(all(t["modes"] in ("local public", "local", "public", "public test") for t in table), "a route without a class")
    check(len({(t["method"], t["path"]) for t in table}) == len(table), "a route twice")
    pub, local = public_server(ctx), ctx.server(root=ctx.path("root-local"))
    rid = pub.submit(options=fake(1, 10))["id"]
    lrid = local.submit(options=fake(1, 10))["id"]
    pub.wait_status(rid, TERMINAL, 20), local.wait_status(lrid, TERMINAL, 20)
    table.sort(key=lambda t: t["path"].endswith("/sessions/end"))  # ending the session: last
    for t in table:
        for srv, run, mode in ((pub, rid, "public"), (local, lrid, "local")):
            path = t["path"].replace("{run}", run).replace("{artifact}", "a1")
            if path.endswith("/events/stream"):
                path += "?after=0"
            r = srv.req(t["method"], path, body={} if t["method"] == "POST" else None, timeout=20)
            err = r.json.get("error") if isinstance(r.json, dict) else None
            code = err.get("code") if isinstance(err, dict) else None
            if mode not in t["modes"].split():  # not served in this mode: refused as no route, or as a local feature
                check((r.status, code) in ((404, "not_found"), (403, "feature_unavailable")), f"{mode} {t['method']} {path}: {r!r}")
            else:
                check(code not in ("not_found", "feature_unavailable", "method_not_allowed", "run_not_found"),
                      f"{mode} {t['method']} {path}: {r!r}")
    for srv in (pub.as_session(pub.new_session()), local):  # (the walk ended pub's session)
        check(srv.get("/api/v1/nosuch").status == 404 and srv.post("/api/v1/system/status", {}).status == 405,
              "a path in no route is 404, a route in another method 405")
        r = srv.req("PUT", "/api/v1/runs")
        allow = (r.headers.get("Allow") or "").split(", ")
        check(r.status == 405 and {"GET", "HEAD", "POST"} <= set(allow), f"a 405 says the path's methods in Allow: {r.status} {allow}")
        r = srv.post("/api/v1/system/status", {})
        check(r.status == 405 and r.headers.get("Allow") == "GET, HEAD", f"405 Allow of a GET route: {r.headers.get('Allow')!r}")
        # a method the server serves nowhere: the same rules (404 for no route; the path's own methods, each once)
        r = srv.req("DELETE", "/api/v1/nosuch")
        check(r.status == 404, f"DELETE of a path in no route: {r!r}")
        r = srv.req("PUT", "/healthz")
        check(r.status == 405 and r.headers.get("Allow") == "GET, HEAD", f"PUT /healthz: {r.status} {r.headers.get('Allow')!r}")
        r = srv.req("PATCH", "/api/v1/system/status")
        check(r.status == 405 and r.headers.get("Allow") == "GET, HEAD", f"PATCH of a GET route: {r.status} {r.headers.get('Allow')!r}")


@test()
def t_public_body_deadline(ctx):  # a body that comes too slowly ends the connection; a prompt one is served
    s = public_server(ctx, "--body-timeout", "2")
    body = json.dumps({"verb": "fake", "dataset": "synth", "options": fake(1, 10)}).encode()
    head = (f"POST /api/v1/runs HTTP/1.1\r\nHost: 127.0.0.1:{s.port}\r\nAuthorization: Bearer {s.token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", s.port), timeout=10) as c:
        c.sendall(head + body[:10])
        time.sleep(2.5)
        try:
            c.sendall(body[10:20])
            time.sleep(0.5)
            c.sendall(body[20:])
            data = c.recv(65536)
        except OSError:
            data = b""
    check(not data.startswith(b"HTTP/1.1 201"), f"a body over 2.5 s was taken: {data[:120]!r}")
    check(s.get("/api/v1/runs").json["total"] == 0, "the slow body made a run")
    st, data = raw_http(s, head.decode(), body)
    check(st == 201, f"a prompt body: {st} {data[:200]!r}")
    # a body that never comes: the connection is closed at the deadline, not at the 30 s idle timeout
    with socket.create_connection(("127.0.0.1", s.port), timeout=10) as c:
        c.sendall(head)
        t0 = time.monotonic()
        try:
            data = c.recv(65536)
        except OSError:
            data = b""
        dt = time.monotonic() - t0
    check(data == b"" and dt < 3.5, f"a body that never came: {data[:120]!r} after {dt:.1f} s (deadline 2 s)")


@test()
def t_public_inflight_caps(ctx):  # requests in flight per client address (streams too) and in all (not streams): 429, 503
    s = public_server(ctx, "--max-inflight", "3", "--ip-inflight", "2", "--session-inflight", "0",
                      "--client-ip-header", "X-Test-Client-IP")
    rid = s.submit(options=fake(100, 200))["id"]
    s.wait_status(rid, ("running",), 10)
    def stream(ip):  # an open event stream from ip: a request in flight until closed
        c = socket.create_connection(("127.0.0.1", s.port), timeout=10)
        c.sendall((f"GET /api/v1/runs/{rid}/events/stream HTTP/1.1\r\nHost: 127.0.0.1:{s.port}\r\n"
                   f"Authorization: Bearer {s.token}\r\nX-Test-Client-IP: {ip}\r\n\r\n").encode())
        check(c.recv(12).startswith(b"HTTP/1.1 200"), f"a stream from {ip}")
        return c
    def get(ip):
        return s.get("/api/v1/runs", headers={"X-Test-Client-IP": ip})
    open_ = [stream("203.0.113.1"), stream("203.0.113.1")]
    r = get("203.0.113.1")
    check(r.status == 429 and r.json["error"]["code"] == "too_many_in_flight" and r.headers.get("Retry-After") == "1",
          f"a third request of one address: {r!r}")
    check(get("203.0.113.2").status == 200, "another address is served")
    def held(ip):  # a request whose body is still arriving: in flight from its headers on
        c = socket.create_connection(("127.0.0.1", s.port), timeout=10)
        c.sendall((f"POST /api/v1/web/activity HTTP/1.1\r\nHost: 127.0.0.1:{s.port}\r\nAuthorization: Bearer {s.token}\r\n"
                   f"X-Test-Client-IP: {ip}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{{").encode())
        return c
    open_ += [held("203.0.113.4"), held("203.0.113.5")]
    time.sleep(0.3)
    check(get("203.0.113.6").status == 200, "two held requests and two streams: a third request in all is served "
          "(streams are bounded apart, by --max-streams)")
    open_.append(held("203.0.113.6"))
    time.sleep(0.3)
    r = get("203.0.113.7")
    check(r.status == 503 and r.json["error"]["code"] == "server_busy" and r.headers.get("Retry-After") == "1",
          f"a fourth request in all: {r!r}")
    for c in open_:
        c.close()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and get("203.0.113.1").status != 200:
        time.sleep(0.1)
    check(get("203.0.113.1").status == 200, "served again once the streams are closed")
    s.post(f"/api/v1/runs/{rid}/cancel", {})


@test()
def t_public_worker_limits(ctx):  # a public worker: an environment of its own, and no file over --worker-file-mb
    os.environ["DPD_STUDIO_SECRET"] = "do-not-leak"
    try:
        s = public_server(ctx, "--worker-file-mb", "16")
    finally:
        del os.environ["DPD_STUDIO_SECRET"]
    rid = s.submit(options=fake(100, 200))["id"]
    pid = worker_of(s.wait_status(rid, ("running",), 10)["pid"])
    with open(f"/proc/{pid}/environ", "rb") as f:
        env = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if kv)
    check(set(env) == {b"PATH", b"HOME", b"TMPDIR", b"LC_ALL", b"DPD_SANDBOX"} and env[b"HOME"] == env[b"TMPDIR"],
          f"the worker's environment: {sorted(env)}")
    s.post(f"/api/v1/runs/{rid}/cancel", {})
    s.wait_status(rid, TERMINAL, 20)
    big = s.submit(options={"epochs": 1, "epoch_ms": 10, "artifact_mb": 32})["id"]
    fin = s.wait_status(big, TERMINAL, 30)
    check(fin["status"] == "failed" and "signal 25" in (fin["reason"] or ""), f"a 32 MiB file under a 16 MiB limit: {fin}")
    ok = s.submit(options={"epochs": 1, "epoch_ms": 10, "artifact_mb": 8})["id"]
    check(s.wait_status(ok, TERMINAL, 30)["status"] == "succeeded", "an 8 MiB file")


def worker_of(pid, timeout=10):  # the worker of a run's pid: in public mode its namespaces' init's one child
    path = f"/proc/{pid}/task/{pid}/children"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        kids = open(path).read().split() if os.path.exists(path) else []
        if kids:
            return int(kids[0])
        time.sleep(0.05)
    return pid  # no child: the worker itself (no namespaces)


def sandbox_event(srv, rid):  # the data of a run's `sandbox` event (what its worker's walls are), or None
    for e in srv.all_events(rid):
        if e["type"] == "sandbox":
            return e["data"]
    return None


@test()
def t_public_sandbox(ctx):  # namespaces and a seccomp filter around every public worker; each wall probed
    s = public_server(ctx)
    s.new_session()  # another session's directory, for the worker not to see
    rid = s.submit(options=fake(100, 200))["id"]
    init = s.wait_status(rid, ("running",), 10)["pid"]
    pid = worker_of(init)
    if pid != init:  # the namespaces' init holds nothing of the server's: its stdin, the log, nothing else
        held = {fd: os.readlink(f"/proc/{init}/fd/{fd}") for fd in os.listdir(f"/proc/{init}/fd")}
        check(sorted(held) == ["0", "1", "2"] and held["0"] == "/dev/null", f"the init's descriptors: {held}")
    deadline = time.monotonic() + 10
    while sandbox_event(s, rid) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    walls = sandbox_event(s, rid)
    check(walls and walls["seccomp"] == 2 and walls["no_new_privs"] == 1 and walls["capabilities"] == "0000000000000000",
          f"the run's sandbox event: {walls}")
    status = dict(l.split(":", 1) for l in open(f"/proc/{pid}/status").read().splitlines() if ":" in l)
    check(status["Seccomp"].strip() == "2" and status["NoNewPrivs"].strip() == "1" and
          int(status["CapEff"], 16) == int(status["CapPrm"], 16) == int(status["CapBnd"], 16) == 0,
          f"/proc/{pid}/status: Seccomp {status['Seccomp'].strip()}, NoNewPrivs {status['NoNewPrivs'].strip()}, "
          f"CapEff {status['CapEff'].strip()}, CapBnd {status['CapBnd'].strip()}")
    rdir = os.path.realpath(os.path.join(session_dir(s, rid), "runs", rid))
    fds = {fd: os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
    for fd, target in fds.items():  # stdin /dev/null; everything else its log or files of its own directory
        check(target == "/dev/null" if fd == "0" else target.startswith(rdir + "/"), f"the worker's descriptor {fd}: {target}")
    namespaced = walls["namespaces"] == ["user", "mount", "pid", "net", "ipc", "uts"]
    if namespaced:
        for ns in ("net", "mnt", "user", "ipc", "uts", "pid"):
            check(os.readlink(f"/proc/{pid}/ns/{ns}") != os.readlink(f"/proc/self/ns/{ns}"), f"the worker shares the {ns} namespace")
    else:
        check(walls["namespaces"] == [] and walls["refused"], f"namespaces neither applied nor refused: {walls}")
    s.post(f"/api/v1/runs/{rid}/cancel", {})
    s.wait_status(rid, TERMINAL, 20)
    for probe in ("socket", "exec", "fork"):  # each ends the worker; the server goes on
        fin = s.wait_status(s.submit(options={"epochs": 1, "epoch_ms": 10, "probe": probe})["id"], TERMINAL, 20)
        check(fin["status"] == "failed" and fin["reason_code"] == "sandbox_violation" and "SIGSYS" in fin["reason"],
              f"probe {probe}: {fin['status']}/{fin['reason_code']}: {fin['reason']}")
        check(s.get("/healthz").status == 200, f"the server after probe {probe}")
    wid = s.submit(options={"epochs": 1, "epoch_ms": 10, "probe": "write"})["id"]
    check(s.wait_status(wid, TERMINAL, 20)["status"] == "succeeded", "the write probe's run")
    tried = [e["data"]["result"] for e in s.all_events(wid) if e["type"] == "warning" and e["data"].get("probe") == "write"]
    check(len(tried) == 1 and len(tried[0]) == 6, f"the write probe's results: {tried}")
    leaked = [p for p in ("/tmp", "/dev/shm", s.root) for f in os.listdir(p) if f.startswith(("escape-", "dpd-escape-"))]
    if not namespaced:
        raise Skip(f"the kernel refused namespaces ({walls['refused']}): writing outside the run directory is not "
                   "walled off (seccomp, the environment and the descriptors were checked)")
    check(all(v != "ok" for v in tried[0].values()) and not leaked, f"writes outside the run directory: {tried[0]} {leaked}")
    check(all(v == "Read-only file system" for k, v in tried[0].items() if k.startswith(("..", "/tmp", "/dev/shm"))
              and "studio.db" not in k) and tried[0]["../../../../studio.db"] == "No such file or directory" and
          tried[0]["/dev/kmsg"] == "Permission denied", f"the mount view is read-only and has no devices: {tried[0]}")
    rid_ = s.submit(options={"epochs": 1, "epoch_ms": 10, "probe": "read"})["id"]
    check(s.wait_status(rid_, TERMINAL, 20)["status"] == "succeeded", "the read probe's run")
    saw = [e["data"]["result"] for e in s.all_events(rid_) if e["type"] == "warning" and e["data"].get("probe") == "read"]
    mine = os.path.basename(session_dir(s, rid_))
    check(len(os.listdir(os.path.join(s.root, "sessions"))) >= 2, "two sessions on the server")
    check(saw and saw[0]["sessions"] == [mine] and saw[0]["studio.db"] == "No such file or directory",
          f"the data root as the worker sees it (only its own session {mine}, no store): {saw}")
    pid_ = s.submit(options={"epochs": 1, "epoch_ms": 10, "probe": "proc"})["id"]
    check(s.wait_status(pid_, TERMINAL, 20)["status"] == "succeeded", "the proc probe's run")
    seen = [e["data"]["result"] for e in s.all_events(pid_) if e["type"] == "warning" and e["data"].get("probe") == "proc"]
    check(seen and set(seen[0]) == {"environ", "mem", "maps"} and all(v == "Permission denied" for v in seen[0].values()),
          f"its parent's /proc files (the server's, or its namespaces' init's: a copy of the server): {seen}")


@test()
def t_public_cleanup_failed(ctx):  # an ended session whose files cannot be removed: /healthz 503, no new session
    s = public_server(ctx)
    a = s.as_session(s.new_session())
    rid = a.submit(options=fake(1, 10))["id"]
    a.wait_status(rid, ("succeeded",), 20)
    home = session_dir(a, rid)
    pinned = os.path.join(home, "pinned")
    open(pinned, "w").close()
    if subprocess.run(["chattr", "+i", pinned], capture_output=True).returncode != 0:
        raise Skip("chattr +i is refused here (not root, or the file system has no immutable files)")
    try:
        check(a.post("/api/v1/web/sessions/end", {}).status == 200, "end the session")
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and s.get("/healthz", auth=False).status == 200:
            time.sleep(0.1)
        h = s.get("/healthz", auth=False)
        check(h.status == 503 and h.json["ok"] is False and h.json["error"]["code"] == "cleanup_failed" and
              h.json["sessions_not_removed"] == 1,
              f"/healthz with an undeletable session directory: {h!r}")
        r = s.post("/api/v1/web/sessions", {}, auth=False)
        check(r.status == 503 and r.json["error"]["code"] == "cleanup_failed", f"a new session meanwhile: {r!r}")
        check(s.get("/api/v1/runs").status == 200 and s.submit(options=fake(1, 10))["id"], "the other sessions work on")
    finally:
        subprocess.run(["chattr", "-i", pinned], capture_output=True)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and (os.path.exists(home) or s.get("/healthz", auth=False).status != 200):
        time.sleep(0.1)
    check(not os.path.exists(home) and s.get("/healthz", auth=False).status == 200, "removed at a later sweep: healthy again")
    check(s.post("/api/v1/web/sessions", {}, auth=False).status == 201, "new sessions are taken again")


@test()
def t_public_modes(ctx):  # the server's umask 077: its files 0600, its directories 0700; no core files from workers
    s = public_server(ctx)
    rid = s.submit(options=fake(100, 200))["id"]
    pid = worker_of(s.wait_status(rid, ("running",), 10)["pid"])
    umask = [l for l in open(f"/proc/{s.proc.pid}/status").read().splitlines() if l.startswith("Umask:")]
    check(umask and umask[0].split()[1] == "0077", f"the server's {umask}")
    core = [l for l in open(f"/proc/{pid}/limits").read().splitlines() if l.startswith("Max core file size")]
    check(core and core[0].split()[4:6] == ["0", "0"], f"the worker's {core}")
    s.post(f"/api/v1/runs/{rid}/cancel", {})
    s.wait_status(rid, TERMINAL, 20)
    loose = []
    for d, dirs, files in os.walk(s.root):
        for name in dirs + files:
            p = os.path.join(d, name)
            st = os.lstat(p)
            if not stat.S_ISLNK(st.st_mode) and st.st_mode & 0o077:
                loose.append(f"{os.path.relpath(p, s.root)} {oct(st.st_mode & 0o777)}")
    check(not loose, f"files or directories open to others: {loose[:8]}")


def advance(sess, seconds):  # the server's test clock (--test-workers): the sessions' time moves on
    r = sess.post("/api/v1/web/test/clock", {"advance_s": seconds})
    check(r.status == 200, f"advance the clock {seconds} s: {r!r}")
    return r.json


@test()
def t_public_clock_lease(ctx):  # the default 24 h lease, on the test clock: an hour of use moves nothing; then it ends
    s = public_server(ctx)
    a = s.as_session(s.new_session())
    rid = a.submit(options=fake(1, 10))["id"]
    a.wait_status(rid, ("succeeded",), 20)
    home = session_dir(a, rid)
    first = a.get("/api/v1/web/session").json
    for _ in range(6):  # an hour of use, in 10-minute steps
        advance(s, 600)
        check(a.get("/api/v1/runs").status == 200 and a.post("/api/v1/web/activity", {}).status == 200, "the session in use")
    now = a.get("/api/v1/web/session").json
    iso = lambda t: datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp()
    check(now["expires_at"] == first["expires_at"] and iso(now["server_time"]) - iso(first["server_time"]) >= 3600,
          f"an hour later: expires_at {first['expires_at']} -> {now['expires_at']}, server_time {now['server_time']}")
    advance(s, 23 * 3600)
    r = a.get("/api/v1/runs")
    check(r.status == 401 and r.json["error"]["code"] == "session_expired", f"past 24 h: {r!r}")
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and os.path.exists(home):
        time.sleep(0.1)
    check(not os.path.exists(home), "the next sweep removed its directory")
    check(s.post("/api/v1/web/test/clock", {"advance_s": -1}).status == 401, "the ended session cannot move the clock")
    b = s.as_session(s.new_session())
    r = b.post("/api/v1/web/test/clock", {"advance_s": -1})
    check(r.status == 422 and r.json["error"]["field"] == "advance_s", f"the clock does not go back: {r!r}")


@test()
def t_public_clock_idle(ctx):  # a 2 h inactivity lease: polling and a running job do not renew it; activity does
    s = public_server(ctx, "--idle-lease", "7200")
    busy, used = s.as_session(s.new_session()), s.as_session(s.new_session())
    rid = busy.submit(options=fake(100, 200))["id"]
    busy.wait_status(rid, ("running",), 10)
    for _ in range(7):  # 2 h 20 min in 20-minute steps: the poller polls, the other also says it is in use
        advance(s, 1200)
        used.post("/api/v1/web/activity", {})
        if busy.get(f"/api/v1/runs/{rid}").status != 200:
            break
    r = busy.get(f"/api/v1/runs/{rid}")
    check(r.status == 401 and r.json["error"]["code"] == "session_expired", f"polled for over 2 h without activity: {r!r}")
    check(used.get("/api/v1/runs").status == 200, "the session with activity every 20 minutes is open")
    def rows():
        con = sqlite3.connect(os.path.join(s.root, "studio.db"))
        try:
            return con.execute("SELECT COUNT(*) FROM runs WHERE id=?", (rid,)).fetchone()[0]
        finally:
            con.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and rows():
        time.sleep(0.1)
    run = rows()
    check(not run, f"the expired session's running job was stopped and its run removed: {run}")


@test()
def t_public_end_session(ctx):  # POST /web/sessions/end: the token stops working, the workers die, the files go
    s = public_server(ctx)
    a = s.as_session(s.new_session())
    rid = a.submit(options=fake(100, 200))["id"]
    pid = a.wait_status(rid, ("running",), 10)["pid"]
    home = session_dir(a, rid)
    r = a.post("/api/v1/web/sessions/end", {})
    check(r.status == 200 and r.json == {"ended": True}, f"end: {r!r}")
    r = a.get("/api/v1/runs")
    check(r.status == 401 and r.json["error"]["code"] == "session_expired", f"the ended session's token: {r!r}")
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and (os.path.exists(home) or not gone(pid)):
        time.sleep(0.1)
    check(gone(pid) and not os.path.exists(home), f"worker {pid} gone: {gone(pid)}; {home} left: {os.path.exists(home)}")
    check(s.get("/api/v1/runs").status == 200, "the other session is untouched")


# ---- events and SSE

@test()
def t_events_after(ctx):  # C16
    s = ctx.server()
    rid = s.submit(options=fake(3, 50))["id"]
    fin = s.wait_status(rid, TERMINAL, 20)
    n = fin["last_seq"]
    check(n >= 10, f"only {n} events")
    for k in sorted({0, 1, 2, n // 2, n - 1, n}):
        j = s.events(rid, k)
        check([e["seq"] for e in j["events"]] == list(range(k + 1, n + 1)), f"after={k}: seqs {[e['seq'] for e in j['events']]}")
        check(j["last_seq"] == n and j["terminal"] is True, f"after={k}: last_seq {j['last_seq']} terminal {j['terminal']}")
    j = s.events(rid, 1, 2)
    check([e["seq"] for e in j["events"]] == [2, 3], f"after=1&limit=2: {[e['seq'] for e in j['events']]}")
    j = s.get(f"/api/v1/runs/{rid}/events").json
    check([e["seq"] for e in j["events"]] == list(range(1, n + 1)), "no after: not from 1")
    expect_error(s.get(f"/api/v1/runs/{rid}/events?after={n + 1}"), 409, "cursor_out_of_range", what=f"after={n + 1}")
    expect_error(s.get(f"/api/v1/runs/{rid}/events?after=999999"), 409, "cursor_out_of_range", what="after=999999")
    r = s.get(f"/api/v1/runs/{rid}/events/stream?after=999999")
    expect_error(r, 409, "cursor_out_of_range", "after", what="stream after=999999")
    check(r.err("message").startswith("after: 999999 is past") and r.err("hint"), f"the stream's cursor named, with a hint: {r!r}")
    for bad in ("-1", "abc", "1e3"):
        r = s.get(f"/api/v1/runs/{rid}/events?after={bad}")
        check(r.status in (400, 422), f"after={bad}: {r!r}")
    r = s.get(f"/api/v1/runs/{rid}/events?limit=5001")
    check(r.status in (400, 422) or (r.status == 200 and len(r.json["events"]) <= 5000), f"limit=5001: {r!r}")
    b = s.submit(options=fake(100, 100))["id"]
    s.wait_status(b, "running", 10)
    s.wait_event(b, "progress", 5)
    j = s.events(b, 0)
    check(j["terminal"] is False, "terminal true for a running run")
    s.cancel(b)
    s.wait_status(b, TERMINAL, 10)


@test()
def t_sse(ctx):  # C17
    s = ctx.server()
    rid = s.submit(options=fake(6, 150))["id"]
    # live, disconnect after 3 frames, resume with Last-Event-ID
    st = SSE(s, rid)
    first = []
    while len(first) < 3:
        f = st.frame()
        check(f is not None, "SSE closed early")
        if "id" in f:
            first.append(f)
    st.close()
    k = int(first[-1]["id"])
    check([int(f["id"]) for f in first] == [1, 2, 3], f"first frames {[f['id'] for f in first]}")
    st = SSE(s, rid, last_event_id=k)
    rest, end = st.read_to_end(30)
    st.close()
    seqs = [int(f["id"]) for f in first + rest]
    check(seqs == list(range(1, len(seqs) + 1)), f"resumed stream has a gap or duplicate: {seqs}")
    run = s.run(rid)
    check(run["status"] == "succeeded", f"run {run['status']}")
    check(end["data"].get("status") == "succeeded" and end["data"].get("last_seq") == seqs[-1] == run["last_seq"],
          f"end frame {end['data']} vs last id {seqs[-1]}, last_seq {run['last_seq']}")
    last = (first + rest)[-1]
    check(last["event"] == "status" and last["data"]["data"]["to"] == "succeeded", f"frame before end: {last}")
    api = s.all_events(rid)
    check([f["data"] for f in first + rest] == api, "SSE event data differ from the events API")
    # a terminal run replays whole, and ?after= works like Last-Event-ID
    for kw in ({}, {"after": 5}, {"last_event_id": 5}, {"last_event_id": run["last_seq"]}):
        st = SSE(s, rid, **kw)
        fr, end = st.read_to_end(10)
        st.close()
        k = kw.get("after", kw.get("last_event_id", 0))
        check([int(f["id"]) for f in fr] == list(range(k + 1, run["last_seq"] + 1)), f"SSE {kw}: ids {[f['id'] for f in fr]}")
        check(end["data"]["last_seq"] == run["last_seq"], f"SSE {kw}: end {end['data']}")
    # unknown run, no token
    try:
        SSE(s, "rnosuch")
        raise Fail("SSE of an unknown run answered 200")
    except Fail as e:
        check("HTTP 404" in str(e), f"SSE of an unknown run: {e}")
    r = s.get(f"/api/v1/runs/{rid}/events/stream", auth=False)
    expect_error(r, 401, "unauthorized", what="SSE without a token")


@test(background=True, slow=True)
def t_sse_keepalive(ctx):  # C17, 15 s of silence
    s = ctx.server()
    rid = s.submit(options=fake(1, 0, silent_ms=20000))["id"]
    s.wait_status(rid, "running", 10)
    st = SSE(s, rid, timeout=25)
    t_last = time.monotonic()
    got = None
    while time.monotonic() - t_last < 18:
        f = st.frame()
        check(f is not None, "SSE closed during silence")
        if "comment" in f:
            got = f["comment"]
            break
        t_last = time.monotonic()
    st.close()
    dt = time.monotonic() - t_last
    check(got is not None and "keepalive" in got, f"no ': keepalive' within 18 s of silence")
    check(dt <= 16.5, f"keepalive after {dt:.1f} s of silence, want <= 16")
    s.cancel(rid)


@test()
def t_sse_slot_freed(ctx):  # C17: a client's disconnect frees its stream's slot within 1 s, even while it is silent
    def reopen(srv, rid, what):  # a stream is accepted again within 1 s of the last one's close
        t0 = time.monotonic()
        while True:
            try:
                st = SSE(srv, rid, timeout=5)
                break
            except Fail as e:
                check("HTTP 503" in str(e) or "HTTP 429" in str(e), f"{what}: {e}")
                check(time.monotonic() - t0 < 1.0, f"{what}: the closed stream's slot still taken after 1 s ({e})")
                time.sleep(0.05)
        return st
    s = ctx.server(args=["--max-streams", "1"])
    rid = s.submit(options=fake(1, 0, silent_ms=30000))["id"]
    s.wait_status(rid, "running", 10)
    st = SSE(s, rid)
    time.sleep(0.4)  # its events sent, the stream is parked: nothing more to say for 30 s
    try:
        SSE(s, rid, timeout=5)
        raise Fail("a second stream beside --max-streams 1 was accepted")
    except Fail as e:
        check("HTTP 503" in str(e) and "too_many_streams" in str(e), f"a second stream: {e}")
    for i in range(3):
        st.close()
        st = reopen(s, rid, f"local, close {i + 1}")
        time.sleep(0.4)
    # a client that closes only its sending end (FIN) ends its stream too (docs/studio.md)
    st.conn.sock.shutdown(socket.SHUT_WR)
    half = st
    st = reopen(s, rid, "local, after a half-close")
    half.close()
    st.close()
    s.cancel(rid)
    # many streams gone in one tick (more than one epoll_wait's 64): every slot is freed, the server answers
    m = ctx.server(root=ctx.path("root-many"), args=["--max-streams", "150"])
    rid = m.submit(options=fake(1, 0, silent_ms=30000))["id"]
    m.wait_status(rid, "running", 10)
    for rnd in range(2):
        many = [SSE(m, rid, timeout=5) for _ in range(150)]
        time.sleep(0.4)
        for st in many:
            st.close()
        t0 = time.monotonic()
        while m.get("/healthz").status != 200 or time.monotonic() - t0 < 0.3:
            check(time.monotonic() - t0 < 2.0, "150 closed streams: the server does not answer after 2 s")
            time.sleep(0.05)
    st = reopen(m, rid, "150 closed at once")
    st.close()
    m.cancel(rid)
    # public mode: a session's closed streams stop counting against its requests in flight
    p = ctx.server(root=ctx.path("root-public"), args=["--public", "--session-inflight", "2", "--request-rate", "0"])
    rid = p.submit(options=fake(1, 0, silent_ms=30000))["id"]
    p.wait_status(rid, "running", 10)
    streams = [SSE(p, rid), SSE(p, rid)]
    time.sleep(0.4)
    expect_error(p.get("/api/v1/runs"), 429, "too_many_in_flight", what="a request beside two parked streams")
    for st in streams:
        st.close()
    t0 = time.monotonic()
    while p.get("/api/v1/runs").status == 429:
        check(time.monotonic() - t0 < 1.0, "public: two closed streams still count as in flight after 1 s")
        time.sleep(0.05)
    check(p.post(f"/api/v1/runs/{rid}/cancel", {}).status in (200, 202), "public: the run cancelled after its streams closed")


@test(background=True, slow=True)
def t_heartbeat_stale(ctx):  # C18, 60 s real time (no test clock in the contract)
    s = ctx.server(grace=2)
    rid = s.submit(options=fake(1000, 200))["id"]
    _, pid, start = s.wait_running_pid(rid)
    s.wait_event(rid, "progress", 5)
    os.kill(pid, signal.SIGSTOP)
    t0 = time.monotonic()
    try:
        time.sleep(1)
        r = s.run(rid)
        check(r["heartbeat_stale"] is False and r["status"] == "running", f"stale at once: {r}")
        r = wait_for(lambda: (lambda x: x if x["heartbeat_stale"] else None)(s.run(rid)), 75,
                     "heartbeat_stale", 0.5)
        dt = time.monotonic() - t0
        check(r["status"] == "running", f"a stale run changed status: {r['status']}")
        check(50 <= dt <= 62 + 5, f"heartbeat_stale after {dt:.1f} s of a stopped worker, want ~60")
    finally:
        os.kill(pid, signal.SIGCONT)
    wait_for(lambda: s.run(rid)["heartbeat_stale"] is False, 10, "heartbeat_stale to clear after SIGCONT", 0.2)
    s.cancel(rid)
    check(s.wait_status(rid, TERMINAL, 10)["status"] == "cancelled", "cancel after SIGCONT")


@test()
def t_stale_after(ctx):  # --stale-after S: the same flag after S seconds of silence (the UI test's banner uses it)
    s = ctx.server(grace=2, args=["--stale-after", "3"])
    rid = s.submit(options=fake(1000, 200))["id"]
    _, pid, _ = s.wait_running_pid(rid)
    s.wait_event(rid, "progress", 5)
    os.kill(pid, signal.SIGSTOP)
    t0 = time.monotonic()
    try:
        r = wait_for(lambda: (lambda x: x if x["heartbeat_stale"] else None)(s.run(rid)), 15, "heartbeat_stale", 0.2)
        dt = time.monotonic() - t0
        # silence counts from the last heartbeat the server took in, which may be older than the
        # SIGSTOP on a slow (sanitized) worker: the flag must show 3 s after it, not before
        silent = time.time() - parse_ts(r["heartbeat_at"] or r["started_at"])
        check(r["status"] == "running" and 2.9 <= silent <= 7 and dt <= 6,
              f"heartbeat_stale {silent:.1f} s after the last heartbeat ({dt:.1f} s after SIGSTOP) under --stale-after 3")
    finally:
        os.kill(pid, signal.SIGCONT)
    wait_for(lambda: s.run(rid)["heartbeat_stale"] is False, 10, "heartbeat_stale to clear after SIGCONT", 0.2)
    s.cancel(rid)


@test()
def t_event_latency(ctx):  # C19
    s = ctx.server()
    rid = s.submit(options=fake(40, 50))["id"]
    conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=10)
    h = {"Authorization": "Bearer " + s.token}
    lat, after, terminal = [], 0, False
    deadline = time.monotonic() + 30
    while not terminal and time.monotonic() < deadline:
        conn.request("GET", f"/api/v1/runs/{rid}/events?after={after}&limit=5000", headers=h)
        r = conn.getresponse()
        j = json.loads(r.read())
        now = time.time()
        for e in j["events"]:
            if e["type"] not in ("status",):
                lat.append(now - parse_ts(e["ts"]))
            after = e["seq"]
        terminal = j["terminal"] and after == j["last_seq"]
        time.sleep(0.01)
    conn.close()
    check(terminal, "run did not finish in 30 s")
    check(len(lat) >= 200, f"only {len(lat)} worker events")
    lat.sort()
    p50, p95 = lat[len(lat) // 2], lat[int(len(lat) * 0.95)]
    ctx.note = f"ingest latency over {len(lat)} events: p50 {p50 * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, max {lat[-1] * 1000:.0f} ms"
    check(p95 < 1.0, f"event ingest p95 {p95:.3f} s >= 1 s")


# ---- artifacts

@test()
def t_artifacts(ctx):
    s = ctx.server()
    b = s.submit(options=fake(100, 100))["id"]
    s.wait_status(b, "running", 10)
    s.wait_event(b, "metric", 10)
    r = s.get(f"/api/v1/runs/{b}/artifacts")
    check(r.status == 200 and r.json["artifacts"] == [], f"artifacts while running: {r!r}")
    s.cancel(b)
    s.wait_status(b, TERMINAL, 10)
    rid = s.submit(options=fake(2, 50))["id"]
    s.wait_status(rid, "succeeded", 20)
    r = s.get(f"/api/v1/runs/{rid}/artifacts")
    check(r.status == 200 and isinstance(r.json.get("artifacts"), list), f"artifacts: {r!r}")
    arts = r.json["artifacts"]
    names = [a.get("name") for a in arts]
    check("best.safetensors" in names and "worker.log" in names, f"artifact names {names}")
    d = s.run_dir(rid)
    ids = set()
    for a in arts:
        check(isinstance(a.get("id"), str) and a["id"] and "/" not in a["id"] and isinstance(a.get("kind"), str)
              and isinstance(a.get("size"), int) and re.fullmatch(r"[0-9a-f]{64}", a.get("sha256", "")),
              f"artifact entry {a}")
        ids.add(a["id"])
        r = s.get(f"/api/v1/runs/{rid}/artifacts/{a['id']}")
        check(r.status == 200, f"download {a}: {r!r}")
        check(r.headers.get("Content-Type", "").startswith("application/octet-stream"),
              f"{a['name']}: Content-Type {r.headers.get('Content-Type')}")
        check("attachment" in (r.headers.get("Content-Disposition") or ""), f"{a['name']}: Content-Disposition "
              f"{r.headers.get('Content-Disposition')}")
        check(len(r.body) == a["size"] and hashlib.sha256(r.body).hexdigest() == a["sha256"],
              f"{a['name']}: {len(r.body)} bytes, sha256 mismatch with the listing")
        if a["name"] == "best.safetensors":
            check(r.body == open(os.path.join(d, "out/fake/best.safetensors"), "rb").read(), "best.safetensors bytes")
        if a["name"] == "worker.log":
            check(r.body == open(os.path.join(d, "logs/worker.log"), "rb").read(), "worker.log bytes")
    check(len(ids) == len(arts), "duplicate artifact ids")
    tok = s.token.encode()
    for bad in ("nosuch", "..", "%2e%2e", "..%2f..%2f..%2fapi-token", "%2e%2e%2f%2e%2e%2fapi-token",
                "../../../api-token", "..%5c..%5capi-token", "%2fetc%2fpasswd", "a%00b", "best.safetensors/..",
                "logs%2fworker.log", "x" * 300):
        r = s.get(f"/api/v1/runs/{rid}/artifacts/{bad}")
        check(r.status in (404, 400) and tok not in r.body, f"artifact id {bad!r}: {r!r}")
        hidden = "%2f" in bad or "%00" in bad  # an encoded '/' or NUL: 400 invalid_uri before any lookup
        check(r.status == (400 if hidden else 404) and (not hidden or r.err() == "invalid_uri"),
              f"artifact id {bad!r}: HTTP {r.status} {r.err()}, want {400 if hidden else 404}")
    # a cancelled run registers its files too
    r = s.get(f"/api/v1/runs/{b}/artifacts")
    check(r.status == 200 and "worker.log" in [a["name"] for a in r.json["artifacts"]], f"artifacts of a cancelled run: {r!r}")


# ---- datasets

def _synth(ctx, out):
    r = subprocess.run([DPD, "synth", "--out", out], capture_output=True, env=ctx.env, timeout=60)
    check(r.returncode == 0, f"dpd synth: {r.stderr[-300:]!r}")


@test()
def t_mat_walled(ctx):  # a MATLAB-layout dataset trained and fitted by a public session's walled workers: matio and LAPACKE load inside the walls
    src, data = ctx.path("matsrc"), ctx.path("matdata")
    r = subprocess.run([DPD, "synth", "--out", src, "--mat"], capture_output=True, env=ctx.env, timeout=60)
    check(r.returncode == 0, f"dpd synth --mat: {r.stderr[-300:]!r}")
    os.makedirs(os.path.join(data, "capM"))
    shutil.copy(os.path.join(src, "capture.mat"), os.path.join(data, "capM", "capture.mat"))
    with open(os.path.join(src, "spec.json")) as f:
        spec = json.load(f)
    spec.update({"dataset_format": "mat", "mat_filename": "capture.mat"})
    with open(os.path.join(data, "capM", "spec.json"), "w") as f:
        json.dump(spec, f)
    s = public_server(ctx, "--data", data)
    rid = s.submit("train-pa", "capM", {"model": "gru", "hidden": 4, "preset": "quick", "epochs": 1})["id"]
    fin = s.wait_status(rid, TERMINAL, 90)
    walls = sandbox_event(s, rid)
    check(fin["status"] == "succeeded" and walls and walls["seccomp"] == 2,
          lambda: f"a mat dataset in a walled worker (matio loaded after the seal): {fin}, walls {walls}; {ctx.logs()[-6:]}")
    rid = s.submit("fit-ls", "capM", {"kind": "mp", "K": 3, "Q": 4})["id"]  # LAPACKE and its BLAS, loaded inside the walls
    fin = s.wait_status(rid, TERMINAL, 90)
    walls = sandbox_event(s, rid)
    check(fin["status"] == "succeeded" and walls and walls["seccomp"] == 2,
          lambda: f"fit-ls in a walled worker (LAPACKE loaded after the seal): {fin}, walls {walls}; {ctx.logs()[-6:]}")


@test()
def t_data_dirs(ctx):  # --data: a name offered once (the first wins, as a submission resolves it); the surprises said at start
    d1, d2 = ctx.path("data1"), ctx.path("data2")
    _synth(ctx, os.path.join(d1, "capA"))
    for n in ("capA", "synth", "my cap"):
        shutil.copytree(os.path.join(d1, "capA"), os.path.join(d2, n))
    s = ctx.server(args=["--data", d1, "--data", d2, "--data", os.path.join(d1, "capA")])
    names = [(d["name"], d["kind"]) for d in s.get("/api/v1/datasets").json["datasets"]]
    check(names.count(("capA", "dir")) == 1 and names.count(("synth", "synth")) == 1 and ("synth", "dir") not in names,
          f"each name listed once, the one a submission gets: {names}")
    log = wait_for(lambda: (lambda t: t if "holds spec.json" in t else None)(open(s.log_path, errors="replace").read()), 5,
                   "the start's warnings", 0.05)
    for want in ("'capA' is hidden by the one in", "'synth' is hidden by the built-in synthetic dataset",
                 "'my cap' is not offered", "capA holds spec.json: it is a dataset"):
        check(want in log, f"--data warning {want!r} missing: {log[-1500:]}")


@test()
def t_threads_warning(ctx):  # more threads than processors: the run's warning, as the CLI's
    s = ctx.server()
    n = len(os.sched_getaffinity(0))
    rid = s.submit("train-pa", options={"model": "gru", "hidden": 4, "epochs": 1, "preset": "quick", "threads": n + 2})["id"]
    s.wait_status(rid, TERMINAL, 60)
    msgs = [e["data"].get("message", "") for e in s.all_events(rid) if e["type"] == "warning"]
    check(any(f"threads {n + 2} is more than the" in m for m in msgs), f"the warnings: {msgs}")


@test()
def t_diverged_result(ctx):  # a diverged real run: /results as `dpd train-pa --json` says it (run_dir null, epochs 0)
    s = ctx.server()
    rid = s.submit("train-pa", options={"model": "gru", "hidden": 4, "epochs": 2, "lr": 1e30, "preset": "quick"})["id"]
    fin = s.wait_status(rid, TERMINAL, 60)
    r = s.get(f"/api/v1/runs/{rid}/results").json
    check(fin["status"] == "failed" and r["outcome"] == "diverged" and "run_dir" in r and r["run_dir"] is None and
          r["epochs"] == 0 and r["error"]["code"] == "diverged" and r["error"]["field"] is None,
          f"a diverged run's result: {fin['status']} {r}")


@test()
def t_datasets(ctx):
    data = ctx.path("data")
    _synth(ctx, os.path.join(data, "mini"))
    os.makedirs(os.path.join(data, "silent"))
    for n in os.listdir(os.path.join(data, "mini")):
        text = open(os.path.join(data, "mini", n)).read()
        if n.endswith("_output.csv"):
            text = "I,Q\n" + "0,0\n" * (text.count("\n") - 1)
        open(os.path.join(data, "silent", n), "w").write(text)
    os.makedirs(os.path.join(data, "broken"))
    open(os.path.join(data, "broken", "spec.json"), "w").write("{ not json")
    s = ctx.server(args=["--data", data])
    r = s.get("/api/v1/datasets")
    check(r.status == 200, f"datasets: {r!r}")
    ds = {d["name"]: d for d in r.json["datasets"]}
    check(ds.get("synth", {}).get("kind") == "synth" and ds.get("mini", {}).get("kind") == "dir",
          f"datasets {r.json['datasets']}")
    spec = json.load(open(os.path.join(data, "mini", "spec.json")))
    check(all(ds["mini"].get(k) == spec[k] for k in ("input_signal_fs", "bw_main_ch", "n_sub_ch", "nperseg")),
          f"a dataset's band plan as its spec.json declares it: {ds['mini']}")
    run = s.submit("train-pa", "mini", {"model": "gru", "hidden": 4, "epochs": 1, "preset": "quick"})
    fin = s.wait_status(run["id"], TERMINAL, 60)
    check(fin["status"] == "succeeded", f"train-pa on a --data dataset: {fin}")
    pa_mini = run["id"]
    r = s.post("/api/v1/runs", {"verb": "train-dpd", "dataset": "silent", "options": {"pa": pa_mini, "hidden": 4, "no_doctor": True}})
    check(r.status == 422 and r.err("field") == "pa" and "another train split" in r.err("message"),
          f"train-dpd through a PA trained on other samples: refused at submit: {r!r}")
    r = s.post("/api/v1/runs", {"verb": "train-dpd", "dataset": "synth", "options": {"pa": pa_mini, "hidden": 4, "preset": "quick", "epochs": 1}})
    check(r.status == 201, f"train-dpd through a PA trained on the same samples under another name: taken: {r!r}")
    if r.status == 201:
        s.cancel(r.json["id"])
    expect_error(s.post("/api/v1/runs", {"verb": "train-pa", "dataset": "broken", "options": {"hidden": 4}}), 422,
                 field="dataset", what="a malformed dataset")
    # the dataset doctor's gate (docs/doctor.md): a silent output refuses train-pa; no_doctor overrides
    r = s.post("/api/v1/runs", {"verb": "train-pa", "dataset": "silent", "options": {"hidden": 4, "epochs": 1}})
    check(r.status == 422 and r.err("field") == "dataset" and "doctor refuses" in r.err("message") and
          "silent_signal" in r.err("message"), f"train-pa on a silent capture: refused by the doctor: {r!r}")
    expect_error(s.post("/api/v1/runs", {"verb": "train-pa", "dataset": "silent", "options": {"no_doctor": 1}}), 422,
                 "invalid_config", "no_doctor", what="no_doctor given a number")
    expect_error(s.post("/api/v1/runs", {"verb": "fit-ls", "dataset": "synth", "options": {"no_doctor": True}}), 422,
                 "invalid_config", "no_doctor", what="no_doctor for fit-ls, which the doctor does not gate")
    run = s.submit("train-pa", "silent", {"hidden": 4, "epochs": 1, "preset": "quick", "no_doctor": True})
    check(s.wait_status(run["id"], TERMINAL, 60)["status"] in ("succeeded", "failed", "diverged"),
          "train-pa with no_doctor on a silent capture: queued and run")
    # the doctor's warnings (docs/doctor.md) as the run's warning events: a spec.json that declares a
    # 100 MHz channel for the 200 MHz signal; none with no_doctor
    os.makedirs(os.path.join(data, "narrow"))
    for n in os.listdir(os.path.join(data, "mini")):
        text = open(os.path.join(data, "mini", n)).read()
        if n == "spec.json":
            spec = json.loads(text)
            spec["bw_main_ch"] = 100e6
            text = json.dumps(spec)
        open(os.path.join(data, "narrow", n), "w").write(text)
    doc = json.loads(subprocess.run([DPD, "doctor", os.path.join(data, "narrow"), "--json"], capture_output=True,
                                    text=True, env=ctx.env).stdout)
    want = sorted(f["code"] for f in doc["findings"] if f["severity"] == "warning" and f["code"] != "linear_gain_phase")
    check("bandwidth_metadata_mismatch" in want, f"the doctor's warnings on the narrow copy: {want}")
    for opts, expect in (({}, want), ({"no_doctor": True}, [])):
        run = s.submit("train-pa", "narrow", dict({"hidden": 4, "epochs": 1, "preset": "quick"}, **opts))
        fin = s.wait_status(run["id"], TERMINAL, 60)
        got = sorted(e["data"].get("code") for e in s.all_events(run["id"]) if e["type"] == "warning" and e["data"].get("code"))
        check(fin["status"] == "succeeded" and got == expect,
              f"train-pa {opts} on a dataset the doctor warns about: {fin['status']}, warning codes {got}, want {expect}")
    # upload
    src = os.path.join(data, "mini")
    files = {n: open(os.path.join(src, n)).read() for n in os.listdir(src) if n.endswith(".csv")}
    spec = json.load(open(os.path.join(src, "spec.json")))
    r = s.post("/api/v1/datasets", {"name": "cap1", "spec": spec, "files": files})
    check(r.status in (200, 201), f"upload: {r!r}")
    r = s.get("/api/v1/datasets")
    check(any(d["kind"] == "upload" and d["name"] in ("cap1", "upload:cap1") for d in r.json["datasets"]),
          f"uploaded dataset not listed: {r.json}")
    run = s.submit("fake", "upload:cap1", fake(1, 0))
    check(s.wait_status(run["id"], TERMINAL, 10)["status"] == "succeeded", "fake run on an upload")
    expect_error(s.post("/api/v1/datasets", {"name": "cap1", "spec": spec, "files": files}), 409, "dataset_exists",
                 what="upload of a taken name")
    bad = dict(files)
    bad["train_input.csv"] = "I,Q\n1,2\n3,x\n" + files["train_input.csv"].split("\n", 4)[-1]
    r = s.post("/api/v1/datasets", {"name": "cap2", "spec": spec, "files": bad})
    check(r.status == 422 and "train_input.csv" in json.dumps(r.json) and re.search(r"\b3\b", json.dumps(r.json)),
          f"upload with a bad line 3: {r!r}")
    short = dict(files)
    short["train_output.csv"] = "\n".join(files["train_output.csv"].split("\n")[:100]) + "\n"
    r = s.post("/api/v1/datasets", {"name": "cap2", "spec": spec, "files": short})
    check(r.status == 422 and r.err("field") == "files" and ".staging" not in json.dumps(r.json) and s.root not in json.dumps(r.json),
          f"upload with splits of different lengths: the upload named, not the server's staging path: {r!r}")
    r = s.post("/api/v1/datasets", {"name": "cap2", "spec": spec, "files": files, "owner": "me"})
    check(r.status == 422 and r.err("field") == "owner", f"upload with a field it does not have: {r!r}")
    partial = {k: v for k, v in files.items() if k not in ("val_output.csv", "test_output.csv")}
    r = s.post("/api/v1/datasets", {"name": "cap2", "spec": spec, "files": partial})
    check(r.status == 422 and r.err("field") == "files" and "val_output.csv, test_output.csv missing" in r.err("message"),
          f"upload without two split files: both named: {r!r}")
    swapped = {("../../x.csv" if k == "val_input.csv" else k): v for k, v in files.items()}
    r = s.post("/api/v1/datasets", {"name": "cap2", "spec": spec, "files": swapped})
    check(r.status == 422 and r.err("field") == "files" and "'../../x.csv' is not a dataset file" in (r.err("message") or ""),
          f"upload with a split file's name swapped for ../../x.csv: that name told, not only what is missing: {r!r}")
    tiny = {n: "I,Q\n0.1,0.2\n" for n in files}
    r = s.post("/api/v1/datasets", {"name": "cap2", "spec": spec, "files": tiny})
    check(r.status == 422 and "fewer than one segment" in r.json["error"]["message"], f"upload of one sample a split: {r!r}")
    r = s.post("/api/v1/datasets", {"name": "cap2", "spec": dict(spec, nperseg="many"), "files": files})
    check(r.status == 422 and r.err("field") == "spec", f"upload whose spec.json has nperseg 'many': field spec: {r!r}")
    check(not os.path.exists(os.path.join(s.root, "datasets", "uploads", "cap2")) and
          not os.path.exists(os.path.join(s.root, "datasets", "cap2")), "a refused upload was kept")
    check(os.path.isfile(os.path.join(s.root, "datasets", "uploads", "cap1", "spec.json")),
          "the upload is not in ROOT/datasets/uploads/cap1")
    for name in ("../x", "a/b", "", ".synth"):
        r = s.post("/api/v1/datasets", {"name": name, "spec": spec, "files": files})
        check(r.status in (409, 422), f"upload named {name!r}: {r!r}")


@test()
def t_logs(ctx):  # GET /runs/{id}/logs: worker.log by byte offset
    s = ctx.server()
    rid = s.submit(options=fake(3, 900))["id"]
    s.wait_event(rid, "metric", 10)
    r = s.get(f"/api/v1/runs/{rid}/logs")
    check(r.status == 200 and set(r.json) == {"lines", "next_offset", "eof", "size"}, f"logs: {r!r}")
    # the worker writes its line just after the epoch's events: wait for it
    j = wait_for(lambda: (lambda x: x if x["lines"] else None)(s.get(f"/api/v1/runs/{rid}/logs").json), 10,
                 "the first line of worker.log", 0.05)
    check(j["lines"][:1] == ["fake: epoch 1 of 3"] and "fake: done" not in j["lines"] and j["eof"] is False,
          f"logs of a running run: {j}")
    check(j["next_offset"] == len("".join(l + "\n" for l in j["lines"]).encode()), f"next_offset {j}")
    expect_error(s.get(f"/api/v1/runs/{rid}/logs?offset={j['size'] + 1}"), 409, "cursor_out_of_range", "offset")
    expect_error(s.get(f"/api/v1/runs/{rid}/logs?limit=0"), 422, "invalid_query", "limit", "logs limit=0")
    expect_error(s.get(f"/api/v1/runs/{rid}/logs?offset=-1"), 422, "invalid_query", "offset", "logs offset=-1")
    expect_error(s.get(f"/api/v1/runs/{rid}/events?limit=0"), 422, "invalid_query", "limit", "events limit=0")
    expect_error(s.get(f"/api/v1/runs/{rid}/events?after=-1"), 422, "invalid_query", "after", "events after=-1")
    expect_error(s.get("/api/v1/runs?offset=-1"), 422, "invalid_query", "offset", "runs offset=-1")
    expect_error(s.get("/api/v1/runs?limit=501"), 422, "invalid_query", "limit", "runs limit=501")
    expect_error(s.get("/api/v1/runs?dataset=synth&limit=1"), 422, "invalid_query", "dataset", "runs dataset= (no such filter)")
    expect_error(s.get(f"/api/v1/runs/{rid}/events?foo=1"), 422, "invalid_query", "foo", "events foo=1")
    expect_error(s.get("/api/v1/datasets?x"), 422, "invalid_query", "x", "datasets ?x")
    check(s.get("/api/v1/runs?LIMIT=1").status == 200, "a query argument's name in another case (libmicrohttpd finds it)")
    expect_error(s.get("/api/v1/runs?limit,%20offset=1"), 422, "invalid_query", what="a name that is two names")
    s.wait_status(rid, TERMINAL, 20)
    lines, off, pages = [], 0, 0
    while True:  # one line a page
        j = s.get(f"/api/v1/runs/{rid}/logs?offset={off}&limit=1").json
        lines += j["lines"]
        pages += 1
        check(len(j["lines"]) <= 1 and pages < 10, f"page {pages}: {j}")
        off = j["next_offset"]
        if j["eof"]:
            break
    check(lines == ["fake: epoch 1 of 3", "fake: epoch 2 of 3", "fake: epoch 3 of 3", "fake: done"],
          f"the whole log of an ended run: {lines}")
    log = os.path.join(s.run_dir(rid), "logs", "worker.log")
    check(off == os.path.getsize(log), f"next_offset {off} at eof, the log has {os.path.getsize(log)} bytes")
    with open(log, "ab") as f:  # bytes that are not UTF-8 come back as '?'
        f.write(b"\nbad \xff\xfe end\n")
    j = s.get(f"/api/v1/runs/{rid}/logs?offset={off + 1}").json
    check(j["lines"] == ["bad ?? end"] and j["eof"] is True, f"invalid UTF-8: {j}")
    size = os.path.getsize(log)
    with open(log, "ab") as f:  # a line longer than the 256 KiB window, then one more, the last without its newline
        f.write(b"A" * 600000 + b"\nB tail line\nC end")
    seen, off, pages = [], 0, 0
    while pages < 20:  # paged by next_offset: never stuck inside the long line, and eof at the end
        j = s.get(f"/api/v1/runs/{rid}/logs?offset={off}").json
        seen += j["lines"]
        pages += 1
        if j["eof"] or j["next_offset"] == off:
            break
        off = j["next_offset"]
    check(j["eof"] and "B tail line" in seen and seen[-1] == "C end", f"paging past a long line: {pages} pages, eof {j['eof']}, last {seen[-2:]}")
    j = s.get(f"/api/v1/runs/{rid}/logs?offset={os.path.getsize(log) - 2}").json  # inside the ended run's last line
    check(j["lines"] == [] and j["eof"] is True and j["next_offset"] == os.path.getsize(log), f"an offset inside the last line: {j}")
    j = s.get(f"/api/v1/runs/{rid}/logs?offset=3&limit=1").json  # inside the first line: from the next one
    check(j["lines"] == ["fake: epoch 2 of 3"] and j["next_offset"] == 2 * len("fake: epoch 1 of 3\n"),
          f"an offset inside a line: {j}")
    other = s.submit(options=fake(1, 0))["id"]  # a queued or fresh run: an empty log is no error
    j = s.get(f"/api/v1/runs/{other}/logs").json
    check(isinstance(j["lines"], list) and j["next_offset"] <= j["size"], f"logs of a new run: {j}")


@test()
def t_preview_counts(ctx):  # H42 in the worker: no extra pass per epoch, floor(steps / N) per batch
    s = ctx.server(args=("--slots", "2"))
    opts = {"model": "gru", "hidden": 4, "preset": "quick", "epochs": 2, "threads": 1}
    a = s.submit("train-pa", "synth", dict(opts, preview_every_batches=None))["id"]
    b = s.submit("train-pa", "synth", dict(opts, preview_every_batches=5))["id"]
    for bad in (0, 1000001, "5", 2.5, True):
        expect_error(s.post("/api/v1/runs", {"verb": "train-pa", "dataset": "synth",
                                            "options": dict(opts, preview_every_batches=bad)}),
                     422, "invalid_config", "preview_every_batches", f"preview_every_batches {bad!r}")
    expect_error(s.post("/api/v1/runs", {"verb": "train-pa", "dataset": "synth", "options": dict(opts, preview_every=5)}),
                 422, "invalid_config", "preview_every")
    expect_error(s.post("/api/v1/runs", {"verb": "fit-ls", "dataset": "synth", "options": {"preview_every_batches": 5}}),
                 422, "invalid_config", "preview_every_batches")
    fa, fb = s.wait_status(a, TERMINAL, 90, 0.1), s.wait_status(b, TERMINAL, 90, 0.1)
    check(fa["status"] == "succeeded" and fb["status"] == "succeeded", f"runs: {fa['status']}, {fb['status']}")
    steps = max(e["data"]["steps"] for e in s.all_events(b) if e["type"] == "progress")
    la, lb = s.get(f"/api/v1/runs/{a}/live").json, s.get(f"/api/v1/runs/{b}/live").json
    check(la["policy"] == {"mode": "epoch", "every_batches": None, "progress_seconds": 0.5, "max_preview_samples": 16384}
          and la["previews"] == 0, f"epoch mode: {la['policy']}, {la['previews']} previews")
    check(lb["policy"]["mode"] == "batch" and lb["policy"]["every_batches"] == 5 and lb["previews"] == 2 * steps // 5,
          f"batch mode: {lb['policy']}, {lb['previews']} previews for {2 * steps} steps")
    prev = [e["data"].get("preview_revision") for e in s.all_events(b) if e["type"] == "progress"]
    check(any(prev), "no progress event carries a preview_revision")
    ra, rb = s.get(f"/api/v1/runs/{a}/results").json, s.get(f"/api/v1/runs/{b}/results").json
    best = [open(os.path.join(r["run_dir"], "best.safetensors"), "rb").read() for r in (ra, rb)]
    check(best[0] == best[1], "best.safetensors differs with per-batch previews")


@test()
def t_live_probe(ctx):  # a batch probe's own loss and metrics in /live, beside the last epoch's; gone at the next epoch
    s = ctx.server()
    rid = s.submit(options=fake(epochs=2, epoch_ms=2400, preview_every_batches=2))["id"]
    seen, t_end = {}, time.time() + 30
    while time.time() < t_end and len(seen) < 3:
        r = s.get(f"/api/v1/runs/{rid}/live")
        j = r.json if r.status == 200 else {}
        if j.get("source") == "batch_probe" and j["step"] not in seen:
            seen[j["step"]] = j
        if s.get(f"/api/v1/runs/{rid}").json["status"] in TERMINAL:
            break
        time.sleep(0.05)
    check(seen, "no batch probe seen in /live")
    for step, j in seen.items():  # the fake probe of step k: NMSE -10 - k/4, loss 1/(k + 4)
        p = j.get("probe") or {}
        check(j["steps_done"] == (step - 1) % 4 + 1 and j["steps"] == 4, f"step {step}: steps_done {j['steps_done']}")
        check(abs(p.get("loss", 0) - 1 / (step + 4)) < 1e-9 and abs(p["val"]["NMSE"] - (-10 - step / 4)) < 1e-9
              and abs(p["val"]["ACLR_AVG"] - (-30 - step / 4)) < 1e-9, f"step {step}: probe {p}")
        m = j["metrics"]  # the last finished epoch's, not the probe's
        check(m is None or m["epoch"] == (step - 1) // 4, f"step {step}: metrics of epoch {m and m['epoch']}")
    check(s.wait_status(rid, TERMINAL, 30)["status"] == "succeeded", "the probed fake run")
    j = s.get(f"/api/v1/runs/{rid}/live").json
    check(j["source"] == "validation" and "probe" not in j and j["metrics"]["epoch"] == 2,
          f"after the last epoch: source {j['source']}, probe {j.get('probe')}")


# ---- real training

def _cli_train(ctx, data, out, extra=()):
    r = subprocess.run([DPD, "train-pa", "--data", data, "--model", "gru", "--hidden", "4", "--preset", "quick",
                        "--epochs", "2", "--out", out, "--json", *extra], capture_output=True, env=ctx.env, timeout=120)
    check(r.returncode == 0, f"CLI train-pa: exit {r.returncode}: {r.stderr[-300:]!r}")
    return json.loads(r.stdout.decode().strip().splitlines()[-1])


@test()
def t_import_cli_run(ctx):  # dpd serve --import: a completed CLI run becomes a studio run, once
    data = ctx.path("synth")
    _synth(ctx, data)
    cli = _cli_train(ctx, data, ctx.path("cli"), ("--no-plots",))
    rd = cli["run_dir"]
    s = Server(ctx, args=["--import", rd])
    s.start()
    line = s.wait_line(r"dpd studio: importing (\S+) as run (r[0-9a-f]+)", 5)
    rid = line.group(2)
    check(line.group(1) == os.path.realpath(rd), f"import line {line.group(0)!r}")
    fin = s.wait_status(rid, TERMINAL, 60, 0.1)
    check(fin["status"] == "succeeded" and fin["verb"] == "train-pa" and fin["dataset"] == "synth" and
          fin["progress"]["epoch"] == 2 and fin["progress"]["epochs"] == 2, f"imported run: {fin}")
    check(fin["options"] == {"imported_from": os.path.realpath(rd), "model": "gru", "hidden": 4},
          f"an imported run's request names its model, as a submitted one's does: {fin['options']}")
    evs = s.all_events(rid)
    check_run_consistency(fin, evs)
    metrics = [e["data"] for e in evs if e["type"] == "metric"]
    check([m["epoch"] for m in metrics] == [1, 2], f"imported metric events: {metrics}")
    hist = s.get(f"/api/v1/runs/{rid}/history").json
    k = hist["columns"].index("VAL_NMSE")
    check([round(r[k], 6) for r in hist["rows"]] == [round(m["val"]["NMSE"], 6) for m in metrics],
          f"history {hist} against the metric events")
    res = s.get(f"/api/v1/runs/{rid}/results").json
    check(res["outcome"] == "completed" and res["best_epoch"] == cli["best_epoch"] and
          abs(res["val"]["NMSE"] - cli["val"]["NMSE"]) < 1e-9 and res.get("imported_from") == os.path.realpath(rd),
          f"results {res} against the CLI's {cli}")
    # the capture's own figures (the CLI run's measured baseline) in the summary and the started event
    started = [e["data"] for e in evs if e["type"] == "started"]
    check(res.get("measured") == cli["measured"] and res.get("measured_val") == cli["measured_val"] and "no_dpd" not in res
          and started and started[0].get("measured", {}).get("test") == cli["measured"],
          f"the imported run's measured baseline {res.get('measured')}, started {started[:1]}, against the CLI's {cli['measured']}")
    pl = s.get(f"/api/v1/runs/{rid}/plots")  # --no-plots: drawn at the import
    check(pl.status == 200 and set(pl.json["plots"]) >= {"psd", "amam"}, f"plots of the import: {pl!r}"[:300])
    arts = {a["name"]: a for a in s.get(f"/api/v1/runs/{rid}/artifacts").json["artifacts"]}
    best = s.get(f"/api/v1/runs/{rid}/artifacts/{arts['best.safetensors']['id']}")
    check(best.body == open(os.path.join(rd, "best.safetensors"), "rb").read(), "imported best.safetensors differs")
    check("history.csv" in arts and os.path.isfile(os.path.join(res["run_dir"], "plots", "psd.png")),
          f"artifacts {sorted(arts)}, or no plots/psd.png in {res['run_dir']}")
    expect_error(s.post(f"/api/v1/runs/{rid}/retry"), 409, "not_retryable")
    check(os.listdir(rd) and not os.path.exists(os.path.join(rd, "plots")), "the CLI's run directory was changed")
    s.stop()
    s2 = Server(ctx, root=s.root, args=["--import", rd])  # again: the same run, found by its key
    s2.start()
    again = s2.wait_line(r"dpd studio: already imported (\S+) as run (r[0-9a-f]+)", 5)
    check(again.group(2) == rid, f"second import: {again.group(0)!r}, first {rid}")
    check(s2.get("/api/v1/runs").json["total"] == 1, "the second import made another run")
    s2.stop()
    # refused: a directory that is not a completed run, before anything starts
    bad = ctx.path("notarun")
    os.makedirs(bad)
    s3 = Server(ctx, root=ctx.path("root3"), args=["--import", bad])
    s3.start(expect_listen=False)
    check(s3.wait_exit(10) == 1 and "config.json" in s3.output(), f"import of a non-run: {s3.output()[-300:]!r}")
    odd = ctx.path("fifo-run")  # a run whose events.jsonl is a FIFO: refused at once, never read for ever
    shutil.copytree(rd, odd)
    os.remove(os.path.join(odd, "events.jsonl"))
    os.mkfifo(os.path.join(odd, "events.jsonl"))
    s7 = Server(ctx, root=ctx.path("root7"), args=["--import", odd])
    s7.start(expect_listen=False)
    check(s7.wait_exit(10) == 1 and "events.jsonl: is a FIFO (named pipe)" in s7.output(),
          f"import of a run whose events.jsonl is a FIFO: {s7.output()[-300:]!r}")
    # a start that cannot listen queues no import (the next start would find it "already imported",
    # and it never ran): the next start imports it
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    s5 = Server(ctx, root=ctx.path("root5"), args=["--import", rd, "--listen", f"127.0.0.1:{busy.getsockname()[1]}"])
    s5.start(expect_listen=False)
    check(s5.wait_exit(10) == 1 and "cannot listen" in s5.output() and "importing" not in s5.output(),
          f"an import with the port taken: {s5.output()[-300:]!r}")
    busy.close()
    s6 = Server(ctx, root=s5.root, args=["--import", rd])
    s6.start()
    line = s6.wait_line(r"dpd studio: importing (\S+) as run (r[0-9a-f]+)", 5)
    fin = s6.wait_status(line.group(2), TERMINAL, 60, 0.1)
    check(fin["status"] == "succeeded", f"the import after a start that could not listen: {fin}")
    s6.stop()
    os.remove(os.path.join(rd, "best.safetensors"))
    s4 = Server(ctx, root=ctx.path("root4"), args=["--import", rd])
    s4.start(expect_listen=False)
    check(s4.wait_exit(10) == 1 and "best.safetensors" in s4.output(), f"import without best.safetensors: {s4.output()[-300:]!r}")


@test()
def t_import_resumed_cli_run(ctx):  # an imported CLI run that was resumed: its second start says so
    data = ctx.path("synth")
    _synth(ctx, data)
    rd = _cli_train(ctx, data, ctx.path("cli"), ("--no-plots",))["run_dir"]
    r = subprocess.run([DPD, "train-pa", "--resume", rd, "--epochs", "3", "--no-plots"], capture_output=True, env=ctx.env,
                       timeout=120)
    check(r.returncode == 0, f"CLI resume: exit {r.returncode}: {r.stderr[-300:]!r}")
    s = Server(ctx, args=["--import", rd])
    s.start()
    rid = s.wait_line(r"dpd studio: importing (\S+) as run (r[0-9a-f]+)", 5).group(2)
    fin = s.wait_status(rid, TERMINAL, 60, 0.1)
    evs = s.all_events(rid)
    starts = [e["data"]["resumed"] for e in evs if e["type"] == "started"]
    check(fin["status"] == "succeeded" and starts == [False, True], f"imported starts' resumed: {starts} ({fin['status']})")
    check([e["data"]["epoch"] for e in evs if e["type"] == "metric"] == [1, 2, 3], "the metric events of both parts")
    s.stop()


@test()
def t_import_cli_dpd_fit(ctx):  # an imported DPD fit: its request says target dpd, its summary has both baselines
    data = ctx.path("synth")
    _synth(ctx, data)
    pa = _cli_train(ctx, data, ctx.path("cli"), ("--no-plots",))["run_dir"]
    r = subprocess.run([DPD, "fit-ls", "--data", data, "--kind", "gmp", "--target", "dpd", "--pa", pa, "--out", ctx.path("cli"),
                        "--no-plots", "--json"], capture_output=True, env=ctx.env, timeout=120)
    check(r.returncode == 0, f"CLI fit-ls --target dpd: exit {r.returncode}: {r.stderr[-300:]!r}")
    cli = json.loads(r.stdout.decode().strip().splitlines()[-1])
    s = Server(ctx, args=["--import", cli["run_dir"]])
    s.start()
    rid = s.wait_line(r"dpd studio: importing (\S+) as run (r[0-9a-f]+)", 5).group(2)
    fin = s.wait_status(rid, TERMINAL, 60, 0.1)
    res = s.get(f"/api/v1/runs/{rid}/results").json
    started = [e["data"] for e in s.all_events(rid) if e["type"] == "started"]
    check(fin["status"] == "succeeded" and fin["options"].get("target") == "dpd" and fin["options"].get("kind") == "gmp",
          f"the imported fit's request: {fin['options']} ({fin['status']})")
    check(all(res.get(k) == cli[k] for k in ("no_dpd", "no_dpd_val", "measured", "measured_val")) and started
          and started[0].get("no_dpd", {}).get("test") == cli["no_dpd"],
          f"the imported fit's baselines {[res.get(k) for k in ('no_dpd', 'measured')]}, against the CLI's")
    s.stop()


@test()
def t_real_train_pa_matches_cli(ctx):  # REAL end-to-end training (a few seconds)
    s = ctx.server()
    run = s.submit("train-pa", "synth", {"model": "gru", "hidden": 4, "preset": "quick", "epochs": 2})
    rid = run["id"]
    check(run["progress"]["epochs"] in (0, 2), f"progress of a queued run {run['progress']}")
    fin = s.wait_status(rid, TERMINAL, 90, 0.1)
    check(fin["status"] == "succeeded" and fin["exit_code"] == 0, f"real train-pa: {fin} "
          f"(worker.log: {open(os.path.join(s.run_dir(rid), 'logs/worker.log'), errors='replace').read()[-400:]!r})")
    evs = s.all_events(rid)
    check_run_consistency(fin, evs)
    types = [e["type"] for e in evs]
    for t in ("started", "metric", "checkpoint", "ended"):
        check(t in types, f"real run has no {t} event: {sorted(set(types))}")
    check([e["data"]["epoch"] for e in evs if e["type"] == "metric"] == [1, 2], "metric epochs of a 2-epoch run")
    end = [e["data"] for e in evs if e["type"] == "ended"]
    check(end and end[-1].get("message") == "completed", f"a completed run's ended event says so: {end}")
    want = {"started": {"run_id", "run_dir", "provider", "resumed"}, "checkpoint": {"epoch", "name"},
            "ended": {"outcome", "message"}, "metric": {"epoch", "epochs", "train_loss", "lr", "improved", "val", "test"},
            "progress": {"epoch", "epochs", "steps_done", "steps", "loss", "samples_per_s"}, "heartbeat": {"pid"},
            "status": {"from", "to", "reason"}}
    for e in evs:
        miss = want.get(e["type"], set()) - set(e["data"])
        ctx.soft(not miss, f"{e['type']} event without {sorted(miss)}: {json.dumps(e['data'])[:200]}")
    for e in evs:
        if e["type"] == "checkpoint":
            check(e["data"].get("name") in ("best.safetensors", "last.safetensors"), f"checkpoint {e['data']}")
        if e["type"] == "metric":
            check(set(e["data"].get("val", {})) >= {"NMSE", "EVM", "ACLR_L", "ACLR_R", "ACLR_AVG"}, f"metric val {e['data']}")
    check(types.index("started") < types.index("metric") < types.index("ended"), "started/metric/ended out of order")
    dur = parse_ts(fin["finished_at"]) - parse_ts(fin["started_at"])
    check(types.count("progress") <= 2 * (dur + 1) + 2 * 2, f"{types.count('progress')} progress events in {dur:.1f} s")
    res = s.get(f"/api/v1/runs/{rid}/results")
    check(res.status == 200 and res.json.get("outcome"), f"results: {res!r}")
    res = res.json
    # the final pictures, as dpd train-pa draws them (run-plots-v1, served by GET /plots)
    pl = s.get(f"/api/v1/runs/{rid}/plots")
    check(pl.status == 200 and pl.json.get("version") == "run-plots-v1" and pl.json.get("split") == "val"
          and set(pl.json["plots"]) >= {"psd", "amam", "ampm", "iq"}, f"plots: {pl!r}"[:300])
    check(s.get(f"/api/v1/runs/{rid}").json.get("available", {}).get("plots") is True, "available.plots is not true")
    check(os.path.isfile(os.path.join(res.get("run_dir") or "", "plots", "psd.png")), "no plots/psd.png in the run directory")
    pic = s.get(f"/api/v1/runs/{rid}/pictures/psd.png")  # the pictures themselves, as drawn
    check(pic.status == 200 and pic.headers.get("Content-Type") == "image/png" and pic.body[:8] == b"\x89PNG\r\n\x1a\n"
          and pic.body == open(os.path.join(res["run_dir"], "plots", "psd.png"), "rb").read(), f"pictures/psd.png: {pic!r}"[:300])
    for bad in ("psd.gif", "plots.json", "..%2Fconfig.json", "psd.svg", "PSD.png"):
        r = s.get(f"/api/v1/runs/{rid}/pictures/{bad}")
        check(r.status in (400, 404), f"pictures/{bad}: {r!r}"[:300])
    ctx.soft("run_dir" in res and "val" in res, f"/results: the summary's fields are not beside outcome "
             f"(keys {sorted(res)}); the summary is read from 'summary'")
    if "run_dir" not in res and isinstance(res.get("summary"), dict):
        res = dict(res["summary"], outcome=res["outcome"])
    job = json.load(open(os.path.join(s.run_dir(rid), "job.json")))
    data = job.get("dataset_dir") or res.get("config", {}).get("data") or os.path.join(s.root, "datasets", "synth")
    check(os.path.isfile(os.path.join(data, "spec.json")), f"synth dataset dir {data} has no spec.json")
    check(res.get("run_dir", "").startswith(os.path.join(s.run_dir(rid), "out")), f"results run_dir {res.get('run_dir')}")
    arts = {a["name"]: a for a in s.get(f"/api/v1/runs/{rid}/artifacts").json["artifacts"]}
    for n in ("best.safetensors", "last.safetensors", "history.csv", "best.csv", "config.json", "events.jsonl",
              "worker.log"):
        check(n in arts, f"artifact {n} missing: {sorted(arts)}")
    best = s.get(f"/api/v1/runs/{rid}/artifacts/{arts['best.safetensors']['id']}")
    check(best.status == 200, f"download best.safetensors: {best!r}")
    cli = _cli_train(ctx, data, ctx.path("cli-out"))
    cli_best = open(os.path.join(cli["run_dir"], "best.safetensors"), "rb").read()
    check(best.body == cli_best, f"studio best.safetensors ({len(best.body)} bytes) differs from the CLI's ({len(cli_best)})")
    for k in ("epochs", "best_epoch", "val", "test"):
        check(res.get(k) == cli.get(k), f"results {k}: studio {res.get(k)} vs CLI {cli.get(k)}")
    h = s.get(f"/api/v1/runs/{rid}/history")
    check(h.status == 200 and isinstance(h.json.get("columns"), list) and len(h.json.get("rows", [])) == 2,
          f"history: {h!r}")
    with open(os.path.join(cli["run_dir"], "history.csv")) as f:
        lines = f.read().strip().splitlines()
    cols = lines[0].split(",")
    check(h.json["columns"] == cols, f"history columns {h.json['columns']} vs {cols}")
    for row, line in zip(h.json["rows"], lines[1:]):
        for c, a, b in zip(cols, row, line.split(",")):
            if c.startswith("TIME"):
                continue
            try:
                same = float(a) == float(b)
            except (TypeError, ValueError):
                same = str(a) == b
            check(same, f"history {c}: {a!r} vs CLI {b!r}")
    lv = s.get(f"/api/v1/runs/{rid}/live")
    check(lv.status == 200, f"live: {lv!r}")
    lv = lv.json
    check(lv.get("source") == "validation" and lv.get("epoch") == 2 and lv.get("epochs") == 2
          and set(lv.get("plots", {})) >= {"psd", "amam", "ampm", "iq"} and "revision" in lv and "metrics" in lv,
          f"live snapshot keys {sorted(lv)}: {json.dumps(lv)[:300]}")

    def longest(x):
        if isinstance(x, list):
            return max([len(x)] + [longest(y) for y in x])
        if isinstance(x, dict):
            return max([0] + [longest(y) for y in x.values()])
        return 0
    check(longest(lv["plots"]) <= 4000, f"a live curve has {longest(lv['plots'])} points (> 4000)")


@test(slow=True)
def t_cli_resumes_cancelled_run(ctx):  # "dpd train-pa --resume continues a cancelled studio run" (REAL)
    s = ctx.server(grace=10)
    rid = s.submit("train-pa", "synth", {"model": "gru", "hidden": 8, "frame": 50, "stride": 1, "epochs": 40})["id"]
    s.wait_status(rid, "running", 30)
    s.wait_event(rid, "metric", 30)
    s.cancel(rid)
    fin = s.wait_status(rid, TERMINAL, 15)
    if fin["status"] == "succeeded":
        raise Skip("the run finished before the cancel took effect")
    check(fin["status"] == "cancelled" and fin["reason_code"] == "user" and fin["exit_code"] == 3, f"cancelled: {fin}")
    res = s.get(f"/api/v1/runs/{rid}/results")
    rd = res.json.get("run_dir") or (res.json.get("summary") or {}).get("run_dir") if res.status == 200 else None
    check(rd, f"results of a cancelled run: {res!r}")
    cmd = res.json.get("resume") or (res.json.get("summary") or {}).get("resume")
    base = os.path.basename(rd)
    check(cmd and shlex.split(cmd) == ["cp", "-r", rd, ".", "&&", "dpd", "train-pa", "--resume", base],
          f"the results' resume command copies the run directory out and resumes the copy: {cmd!r}")
    check(os.path.isfile(os.path.join(rd, "last.safetensors")), f"{rd}/last.safetensors missing")
    hist = s.get(f"/api/v1/runs/{rid}/history").json
    best = res.json.get("best_epoch")
    check(res.json.get("outcome") == "cancelled" and isinstance(best, int) and 1 <= best <= res.json.get("epochs", 0)
          and isinstance((res.json.get("val") or {}).get("NMSE"), float) and isinstance((res.json.get("test") or {}).get("NMSE"), float),
          f"a cancelled run's results give its best epoch so far with that epoch's val and test metrics: {res.json}")
    cols = hist.get("columns") or []
    row = next((r for r in hist.get("rows") or [] if cols and int(float(r[cols.index("EPOCH")])) == best), None)
    check(row is not None and abs(float(row[cols.index("VAL_NMSE")]) - res.json["val"]["NMSE"]) < 1e-6,
          f"the results' best epoch {best} is the history's row of that epoch: {row} against {res.json.get('val')}")
    here = ctx.path("resumed")
    os.makedirs(here)
    shutil.copytree(rd, os.path.join(here, base))
    r = subprocess.run([DPD, "train-pa", "--resume", base, "--json"], capture_output=True, env=ctx.env, timeout=120, cwd=here)
    check(r.returncode == 0, f"dpd train-pa --resume of the studio run's copy: exit {r.returncode}: {r.stderr[-300:]!r}")
    j = json.loads(r.stdout.decode().strip().splitlines()[-1])
    check(j.get("epochs") == 40, f"resumed run: epochs {j.get('epochs')}")

    def artifacts():
        return {a["name"]: a for a in s.get(f"/api/v1/runs/{rid}/artifacts").json["artifacts"]}
    arts = artifacts()  # the studio's run is as it ended: every file what its record says
    for a in arts.values():
        got = s.get(f"/api/v1/runs/{rid}/artifacts/{a['id']}")
        check(got.status == 200 and not a["changed"] and hashlib.sha256(got.body).hexdigest() == a["sha256"],
              f"{a['name']} after the copy's resume: {got.status}, changed {a['changed']}")
    # resumed in place all the same: its files no longer match their records, and are not served as them
    r = subprocess.run([DPD, "train-pa", "--resume", rd], capture_output=True, env=ctx.env, timeout=120)
    check(r.returncode == 0, f"dpd train-pa --resume in place: exit {r.returncode}: {r.stderr[-300:]!r}")
    arts = artifacts()
    last = arts["last.safetensors"]
    check(last["changed"] and arts["history.csv"]["changed"], f"a resume in place marks the rewritten files: {arts}")
    expect_error(s.get(f"/api/v1/runs/{rid}/artifacts/{last['id']}"), 409, "artifact_changed", what="a rewritten artifact")


@test(slow=True)
def t_other_verbs(ctx):  # REAL: train-dpd and fit-ls through the API, PA named by a studio run id
    s = ctx.server()
    pa = s.submit("train-pa", "synth", {"model": "gru", "hidden": 4, "preset": "quick", "epochs": 1})["id"]
    check(s.wait_status(pa, TERMINAL, 60, 0.1)["status"] == "succeeded", "train-pa for the PA")
    runs = {
        "train-dpd": s.submit("train-dpd", "synth", {"pa": pa, "model": "gru", "hidden": 4, "preset": "quick", "epochs": 1}),
        "fit-ls pa": s.submit("fit-ls", "synth", {"kind": "mp", "target": "pa"}),
        "fit-ls dpd": s.submit("fit-ls", "synth", {"kind": "gmp", "target": "dpd", "pa": pa}),
        "fit-ls gmp M1": s.submit("fit-ls", "synth", {"M": 1, "kind": "gmp"}),  # M before kind: kept
    }
    for name, r in runs.items():
        fin = s.wait_status(r["id"], TERMINAL, 90, 0.1)
        log = open(os.path.join(s.run_dir(r["id"]), "logs/worker.log"), errors="replace").read()[-300:]
        check(fin["status"] == "succeeded", f"{name}: {fin['status']}/{fin['reason_code']} {fin['error']} ({log!r})")
        lines = s.get(f"/api/v1/runs/{r['id']}/logs").json["lines"]
        ls = name.startswith("fit-ls")  # a fit is one solve: "fitting", and its one line "fit", not "epoch 1/1"
        check(lines and lines[0].startswith("fitting " if ls else "training ")
              and any(l.startswith("fit train_loss " if ls else "epoch 1/1 train_loss ") for l in lines)
              and lines[-1] == "completed" and (" lr " in "".join(lines)) == (name == "train-dpd"),
              f"{name}: the worker's log says what the CLI would (the run, each epoch, its end): {lines}")
        evs = s.all_events(r["id"])
        check_run_consistency(fin, evs)
        res = s.get(f"/api/v1/runs/{r['id']}/results")
        check(res.status == 200, f"{name} results: {res!r}")
        # one epoch: the live snapshot's plot data is the final pictures' (the best epoch's val
        # predictions); a DPD run's has PA(x) and the capture's y beside them, as its final pictures
        live, pl = s.get(f"/api/v1/runs/{r['id']}/live"), s.get(f"/api/v1/runs/{r['id']}/plots")
        want = {"target", "prediction", "no_dpd", "measured"} if "dpd" in name else {"target", "prediction"}
        lp = live.json.get("plots") if live.status == 200 else None
        check(live.status == 200 and pl.status == 200 and isinstance(lp, dict) and set(lp["psd"]["series"]) == want
              and lp == pl.json.get("plots"),
              f"{name}: the live plots have the series {sorted(want)} and equal the final pictures' "
              f"({live.status}, {pl.status}, {sorted(lp['psd']['series']) if isinstance(lp, dict) and 'psd' in lp else lp})")
        if name.startswith("fit-ls gmp"):
            cfg = res.json.get("config") or {}
            cross = cfg.get("cross", (cfg.get("model") or {}).get("cross"))
            check(cross == 1, f"{name}: the fit's M is the request's 1, whatever the keys' order: {cross} ({cfg})")
        if "dpd" in name:  # a DPD left worse than none says so, as the CLI does
            sm = res.json.get("summary") if isinstance(res.json.get("summary"), dict) else res.json
            a, b = sm["test"]["ACLR_AVG"], sm["no_dpd"]["ACLR_AVG"]
            check(isinstance(a, float) and isinstance(b, float), f"{name}: test and no_dpd ACLR_AVG {a}, {b}")
            worse = a > b
            said = [e for e in evs if e["type"] == "warning" and "worse than no DPD" in (e["data"].get("message") or "")]
            check(len(said) == int(worse), f"{name}: test ACLR_AVG {sm['test']['ACLR_AVG']} against no DPD's "
                  f"{sm['no_dpd']['ACLR_AVG']}, and {len(said)} 'worse than no DPD' warning events")
    c = s.submit(options=fake(100, 100))["id"]
    s.wait_event(c, "progress", 10)
    s.cancel(c)
    s.wait_status(c, TERMINAL, 10)
    for bad, what, why in ((c, "a cancelled fake run", "it is a fake run"), ("rnosuch", "an unknown run", "no run of this studio"),
                           ("../" + pa, "a path", "no run of this studio")):
        r = s.post("/api/v1/runs", {"verb": "train-dpd", "dataset": "synth", "options": {"pa": bad, "hidden": 4}})
        expect_error(r, 422, field="pa", what=f"train-dpd with pa = {what}")
        check(why in r.err("message"), f"train-dpd with pa = {what}: the message says why: {r!r}")
    expect_error(s.post("/api/v1/runs", {"verb": "train-dpd", "dataset": "synth", "options": {"hidden": 4}}), 422,
                 field="pa", what="train-dpd without pa")
    expect_error(s.post("/api/v1/runs", {"verb": "fit-ls", "dataset": "synth", "options": {"kind": "mp", "target": "dpd"}}),
                 422, field="pa", what="fit-ls target dpd without pa")
    expect_error(s.post("/api/v1/runs", {"verb": "fit-ls", "dataset": "synth", "options": {"kind": "nosuch"}}), 422,
                 field="kind", what="fit-ls kind nosuch")


@test()
def t_providers_restart(ctx):
    """Fallback case 2 with the real OpenCL provider: a pack activated under a running studio is
    reported by GET /providers (restart_needed, restart_why) and on the Status page."""
    lib = os.path.join(os.path.dirname(DPD), "opencl", "libdpd-opencl.so")
    if not os.path.exists(lib):
        raise Skip("the OpenCL provider is not built (no OpenCL headers or ICD loader)")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    r = subprocess.run(["scripts/pack.sh", "opencl", lib, ctx.path("dist")], capture_output=True, text=True, cwd=root,
                       env=ctx.env, timeout=60)
    check(r.returncode == 0, f"scripts/pack.sh opencl: {r.stderr[-300:]}")
    pk = r.stdout.strip()
    r = subprocess.run([DPD, "pack", "install", pk], capture_output=True, text=True, env=ctx.env, timeout=120)
    if r.returncode and "cannot activate on this machine" in r.stderr:
        raise Skip(f"no OpenCL device here: {r.stderr[-200:]}")
    check(r.returncode == 0, f"dpd pack install {pk}: {r.stderr[-300:]}")
    s = ctx.server()
    p = s.get("/api/v1/providers")
    names = [x["name"] for x in p.json["providers"]]
    check(p.status == 200 and "opencl" in names and p.json["restart_needed"] is False,
          f"GET /providers before: {p.status} {names} restart {p.json.get('restart_needed')}")
    # the same library as another version of the pack, installed and activated while the studio runs
    src = ctx.path("v2")
    os.makedirs(src)
    subprocess.run(["tar", "-xzf", pk, "-C", src], check=True)
    with open(os.path.join(src, "pack.json")) as f:
        meta = json.load(f)
    meta["pack_version"] = meta["pack_version"] + "-two"
    with open(os.path.join(src, "pack.json"), "w") as f:
        json.dump(meta, f)
    pk2 = ctx.path("opencl-two.tar.gz")
    subprocess.run(["tar", "-C", src, "-czf", pk2, "pack.json", "lib"], check=True)
    with open(pk2, "rb") as f, open(pk2 + ".sha256", "w") as g:
        g.write(hashlib.sha256(f.read()).hexdigest() + "\n")
    r = subprocess.run([DPD, "pack", "install", pk2], capture_output=True, text=True, env=ctx.env, timeout=120)
    check(r.returncode == 0, f"dpd pack install (second version): {r.stderr[-300:]}")
    p = s.get("/api/v1/providers")
    why = p.json.get("restart_why", "")
    check(p.json.get("restart_needed") is True and "the active opencl pack changed" in why and "-two" in why,
          f"GET /providers after: restart_needed {p.json.get('restart_needed')}, why {why!r}")


@test()
def t_routes_misc(ctx):
    s = ctx.server()
    st = s.get("/api/v1/system/status")
    check(st.status == 200 and {"version", "uptime_s", "slots", "slots_busy", "runs"} <= set(st.json), f"system/status: {st!r}")
    for path in ("/api/v1/providers", "/api/v1/settings", "/api/v1/datasets"):
        r = s.get(path)
        check(r.status == 200 and isinstance(r.json, (dict, list)), f"GET {path}: {r!r}")
    r = s.get("/api/v1/runs?limit=501")
    check(r.status in (400, 422) or (r.status == 200 and len(r.json["runs"]) <= 500), f"limit=501: {r!r}")
    for q in ("limit=-1", "offset=-1", "limit=abc", "status=nosuch"):
        r = s.get(f"/api/v1/runs?{q}")
        check(r.status in (400, 422) or (r.status == 200 and r.json["runs"] == []), f"GET /runs?{q}: {r!r}")
    for m, p in (("DELETE", "/api/v1/runs"), ("PUT", "/api/v1/runs")):
        r = s.req(m, p)
        check(r.status in (404, 405), f"{m} {p}: {r!r}")
    # the default root is $XDG_DATA_HOME/dpd/studio
    d = Server(ctx, root="unused")
    d.cmd = lambda: [DPD, "serve", "--listen", "127.0.0.1:0", "--test-workers"]
    d.root = os.path.join(ctx.env["XDG_DATA_HOME"], "dpd", "studio")
    d.start()
    check(os.path.exists(os.path.join(d.root, ".dpd-studio")), "no studio under $XDG_DATA_HOME/dpd/studio")
    check(d.get("/healthz", auth=False).status == 200, "default-root server")
    for bad in (["--slots", "0"], ["--slots", "65"], ["--grace", "-1"], ["--listen", "10.1.2.3:0"],
                ["--listen", "127.0.0.1:99999"], ["--nosuch"]):
        r = subprocess.run([DPD, "serve", "--root", ctx.path("bad"), "--listen", "127.0.0.1:0", *bad],
                           capture_output=True, timeout=10, env=ctx.env)
        check(r.returncode != 0, f"dpd serve {' '.join(bad)} started (exit {r.returncode})")


@test()
def t_event_tailer(ctx):  # partial lines wait, non-JSON and >64 KiB lines are skipped, seqs stay gapless
    s = ctx.server()
    rid = s.submit(options=fake(1, 100, silent_ms=2500))["id"]
    s.wait_status(rid, "running", 10)
    path = os.path.join(s.run_dir(rid), "events.jsonl")
    n0 = s.run(rid)["last_seq"]
    line = lambda msg: json.dumps({"ts": time.time(), "type": "warning", "data": {"message": msg}})
    with open(path, "ab") as f:
        f.write(b"this is not json\n")
        f.write(line("x" * 70000).encode() + b"\n")
        f.write(line("one").encode() + b"\n")
        f.write(b"[1, 2\n")
        part = line("two").encode()
        f.write(part[:20])
    time.sleep(0.8)
    evs = s.all_events(rid)
    warn = [e["data"].get("message") for e in evs if e["type"] == "warning"]
    check(warn == ["one"], f"after garbage, a 70 KB line, one good line and a partial one: warnings {[w[:10] for w in warn]}")
    with open(path, "ab") as f:
        f.write(part[20:] + b"\n")
    wait_for(lambda: [e["data"].get("message") for e in s.all_events(rid) if e["type"] == "warning"] == ["one", "two"], 2,
             "the completed partial line to be ingested once")
    fin = s.wait_status(rid, TERMINAL, 15)
    check(fin["status"] == "succeeded", f"run after injected lines: {fin['status']}/{fin['reason_code']}")
    evs = s.all_events(rid)
    check_run_consistency(fin, evs)
    check(n0 >= 2, "no status events before the injection")


@test(background=True, slow=True)
def t_heartbeat_events(ctx):  # heartbeat {pid} at least every 5 s while the worker lives
    s = ctx.server()
    rid = s.submit(options=fake(2, 6000))["id"]
    _, pid, _ = s.wait_running_pid(rid)
    time.sleep(3)
    hb0 = s.run(rid)["heartbeat_at"]
    fin = s.wait_status(rid, TERMINAL, 30, 0.2)
    check(fin["status"] == "succeeded", f"run {fin}")
    evs = s.all_events(rid)
    hbs = [e for e in evs if e["type"] == "heartbeat"]
    check(hbs and all(e["data"].get("pid") == pid for e in hbs), f"heartbeats {[e['data'] for e in hbs]} (pid {pid})")
    ts = [parse_ts(e["ts"]) for e in evs if e["type"] != "status"]
    gaps = [b - a for a, b in zip(ts, ts[1:])]
    check(max(gaps) <= 5.5, f"the worker was silent for {max(gaps):.1f} s (heartbeat every 5 s)")
    check(hb0 is not None, "heartbeat_at null 3 s into a run")
    check(fin["heartbeat_at"] is not None and parse_ts(fin["heartbeat_at"]) >= parse_ts(hb0), "heartbeat_at did not advance")


# ---------------------------------------------------------------------------- runner

def run_test(name, fn):
    ctx = Ctx(name)
    t0 = time.monotonic()
    try:
        fn(ctx)
        res = ("FAIL", "; ".join(ctx.softs)) if ctx.softs else ("PASS", None)
    except Skip as e:
        res = ("SKIP", str(e))
    except Fail as e:
        res = ("FAIL", str(e))
    except Exception as e:
        res = ("FAIL", f"{type(e).__name__}: {e} at {traceback.format_exc().strip().splitlines()[-3].strip()}")
    logs = ctx.logs() if res[0] == "FAIL" else []
    try:
        ctx.cleanup()
    except Exception as e:
        res = ("FAIL", f"cleanup: {e}")
    dt = time.monotonic() - t0
    lines = [f"{res[0]} {name}" + (f": {res[1]}" if res[1] else "") + f"  ({dt:.1f} s)"]
    if ctx.note:
        lines.append(f"  note {name}: {ctx.note}")
    lines += ["  | " + l for l in logs]
    return res[0], lines


def main():
    if not os.access(DPD, os.X_OK):
        print(f"FAIL studio: {DPD} is not an executable")
        print("RESULT studio 0 1 0")
        return 1
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    out_lock = threading.Lock()

    def report(status, lines):
        with out_lock:
            counts[status] += 1
            print("\n".join(lines), flush=True)
    selected = [(n, f, bg, slow) for n, f, bg, slow in TESTS if not ONLY or n in ONLY]
    t0 = time.monotonic()
    # the serve verb must exist before anything else makes sense
    st, lines = run_test("serve_help", t_serve_help)
    report(st, lines)
    if st == "FAIL":
        for n, *_ in selected:
            if n != "serve_help":
                report("SKIP", [f"SKIP {n}: dpd serve does not work"])
        print(f"RESULT studio {counts['PASS']} {counts['FAIL']} {counts['SKIP']}")
        return 1
    threads = []
    for n, f, bg, slow in selected:
        if n == "serve_help":
            continue
        if slow and QUICK:
            report("SKIP", [f"SKIP {n}: STUDIO_QUICK=1"])
        elif bg:
            th = threading.Thread(target=lambda n=n, f=f: report(*run_test(n, f)), daemon=True)
            th.start()
            threads.append(th)
    for n, f, bg, slow in selected:
        if not bg and not (slow and QUICK) and n != "serve_help":
            report(*run_test(n, f))
    for th in threads:
        th.join(120)
    if not ONLY:
        for name, viol in (("security_headers_everywhere", header_violations), ("error_shape_everywhere", shape_violations)):
            if viol:
                items = sorted(viol.items())
                report("FAIL", [f"FAIL {name}: {len(items)} kinds of response, e.g. " +
                                "; ".join(f"{k}: {v}" for k, v in items[:6])])
            else:
                report("PASS", [f"PASS {name}"])
    print(f"# {time.monotonic() - t0:.1f} s")
    print(f"RESULT studio {counts['PASS']} {counts['FAIL']} {counts['SKIP']}")
    return 1 if counts["FAIL"] else 0


def interrupted(sig, frame):
    raise KeyboardInterrupt(f"signal {sig}")


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, interrupted)
    try:
        rc = main()
    except KeyboardInterrupt:
        print("RESULT studio interrupted", flush=True)
        rc = 130
    finally:
        for c in list(LIVE):
            try:
                c.cleanup()
            except BaseException:
                pass
    sys.exit(rc)
