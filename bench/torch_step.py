#!/usr/bin/env python3
"""Times one PyTorch CPU training step (forward, MSE, backward, clip, AdamW) for the same
shapes as `dpd bench train`, so both can be compared in one run (bench/compare.sh).
The modules are written here from the equations in ../shared/reference/opendpd.md §3 (no
OpenDPD code), using PyTorch's fastest building blocks (nn.GRU/nn.LSTM, batched convolutions).
Prints one JSON object per line. Exits 0 with a SKIP line when torch is not installed."""
import json
import sys
import time

try:
    import torch
    import torch.nn as nn
except ImportError:
    print("SKIP bench/torch_step.py: python3-torch is not installed (apt-get install python3-torch)")
    sys.exit(0)


def feats_dgru(x):
    i, q = x[..., 0], x[..., 1]
    a = torch.sqrt(i * i + q * q)
    safe = torch.where(a > 0, a, torch.ones_like(a))
    return torch.stack([i, q, a, a ** 3, torch.where(a > 0, q / safe, a), torch.where(a > 0, i / safe, a)], -1)


class Rnn(nn.Module):
    def __init__(self, cell, h, dgru=False):
        super().__init__()
        self.dgru = dgru
        inp = 6 if dgru else 2
        self.rnn = (nn.GRU if cell == "gru" else nn.LSTM)(inp, h, batch_first=True)
        if dgru:
            self.fc_hid = nn.Linear(h, h)
            self.fc_out = nn.Linear(h + 6, 2)
        else:
            self.fc_out = nn.Linear(h, 2)

    def forward(self, x):
        f = feats_dgru(x) if self.dgru else x
        h, _ = self.rnn(f)
        if self.dgru:
            return self.fc_out(torch.cat([torch.relu(self.fc_hid(h)), f], -1))
        return self.fc_out(h)


class TresGru(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.rnn = nn.GRU(6, h, batch_first=True, bias=False)
        self.fc_out = nn.Linear(h, 2, bias=False)
        self.tcn0 = nn.Conv1d(2, 3, 3, dilation=16, padding=16, bias=False)
        self.tcn2 = nn.Conv1d(3, 2, 1, bias=False)
        self.hs = nn.Hardswish()

    def forward(self, x):
        i, q = x[..., 0], x[..., 1]
        a = torch.sqrt(i * i + q * q)
        nxt = torch.roll(x, -1, dims=1)
        f = torch.stack([i, q, a, a ** 3, nxt[..., 0], nxt[..., 1]], -1)
        h, _ = self.rnn(f)
        s = self.hs(self.tcn2(self.hs(self.tcn0(x.transpose(1, 2))))).transpose(1, 2)
        return self.fc_out(h) + s


class Rvtdcnn(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.conv = nn.Conv2d(1, 3, 3, padding=(1, 0))
        self.fc_hid = nn.Linear(36, h)
        self.fc_out = nn.Linear(h, 2)

    def forward(self, x):
        b, t, _ = x.shape
        i, q = x[..., 0], x[..., 1]
        a = torch.sqrt(i * i + q * q)
        f = torch.stack([i, q, a, a * a, a ** 3], -1)
        f = torch.cat([f[:, -3:], f], 1)
        w = f.unfold(1, 4, 1).permute(0, 1, 3, 2)  # (b, t, 4, 5)
        y = torch.tanh(self.conv(w.reshape(b * t, 1, 4, 5))).reshape(b, t, 36)
        return self.fc_out(torch.tanh(self.fc_hid(y)))


def make(model, h):
    if model in ("gru", "lstm"):
        return Rnn(model, h)
    if model == "dgru":
        return Rnn("gru", h, dgru=True)
    if model == "tres_gru":
        return TresGru(h)
    if model == "rvtdcnn":
        return Rvtdcnn(h)
    raise SystemExit(f"unknown model {model}")


def main():
    args = dict(a.split("=", 1) for a in sys.argv[1:])
    model, h = args.get("model", "gru"), int(args.get("hidden", 23))
    b, t, steps = int(args.get("batch", 64)), int(args.get("frame", 200)), int(args.get("steps", 10))
    threads = int(args.get("threads", 1))
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    m = make(model, h)
    opt = torch.optim.AdamW(m.parameters(), lr=5e-3, weight_decay=0.01)
    x, y = torch.randn(b, t, 2) * 0.3, torch.randn(b, t, 2) * 0.3
    loss_fn = nn.MSELoss()

    def step():
        opt.zero_grad()
        loss = loss_fn(m(x), y)
        loss.backward()
        nn.utils.clip_grad_norm_(m.parameters(), 200)
        opt.step()

    for _ in range(2):
        step()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    ms = (time.perf_counter() - t0) / steps * 1e3
    n = sum(p.numel() for p in m.parameters())
    print(json.dumps({"framework": "torch " + torch.__version__, "model": model, "hidden": h, "params": n,
                      "batch": b, "frame": t, "threads": threads, "steps": steps, "ms_per_step": round(ms, 4)}))


main()
