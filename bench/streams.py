#!/usr/bin/env python3
"""The studio's cost of idle event streams: a `dpd serve --test-workers --slots 1` with one fake run
training (an event every 0.25 s) and N clients (default 250) each holding the event stream of a
second, queued run open; prints the server's CPU time over 10 s. Never asserts.
Usage: bench/streams.py [DPD] [N]"""
import socket, subprocess, time, json, re, sys, shutil, os
import tempfile
DPD = sys.argv[1] if len(sys.argv) > 1 else "build/dpd"
N = int(sys.argv[2]) if len(sys.argv) > 2 else 250
tmp = tempfile.mkdtemp(prefix="dpd-streams-")
root = os.path.join(tmp, "root")
p=subprocess.Popen([DPD,"serve","--root",root,"--listen","127.0.0.1:0","--test-workers","--slots","1"],stdout=subprocess.PIPE,stderr=subprocess.DEVNULL)
for line in p.stdout:
    m=re.search(rb"listening on http://127.0.0.1:(\d+)",line)
    if m: port=int(m.group(1)); break
tok=open(root+"/api-token").read().strip().encode()
def req(raw):
    s=socket.create_connection(("127.0.0.1",port)); s.sendall(raw); s.settimeout(5); out=s.recv(65536); s.close(); return out
def post(body):
    b=json.dumps(body).encode()
    return req(b"POST /api/v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"%(tok,len(b))+b)
post({"verb":"fake","dataset":"synth","options":{"epochs":1000,"epoch_ms":1000}})
rid=re.search(rb'"id":"(r[0-9a-f]+)"',post({"verb":"fake","dataset":"synth","options":{"epochs":1}})).group(1)
socks=[]
for i in range(N):
    s=socket.create_connection(("127.0.0.1",port)); s.sendall(b"GET /api/v1/runs/%s/events/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n\r\n"%(rid,tok)); socks.append(s)
time.sleep(2)
def cpu():
    f=open("/proc/%d/stat"%p.pid).read().split(")")[1].split(); return (int(f[11])+int(f[12]))/os.sysconf("SC_CLK_TCK")
c0=cpu(); time.sleep(10); c1=cpu()
print("%s: %d idle streams beside a training run: server CPU %.2f s in 10 s" % (DPD, N, c1 - c0))
p.terminate(); p.wait()
shutil.rmtree(tmp, ignore_errors=True)
