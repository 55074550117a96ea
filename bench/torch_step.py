#!/usr/bin/env python3
"""Times one PyTorch CPU training step (forward, MSE, backward, clip, AdamW) for the same
shapes as `dpd bench train`, so both can be compared in one run (bench/compare.sh).
The modules are written here from the equations in ../shared/reference/opendpd.md §3 (no
OpenDPD code), using PyTorch's fastest building blocks (nn.GRU/nn.LSTM, batched convolutions,
input projections hoisted out of the step loops of the custom cells), with the parameter shapes
and state-dict names of dpd's checkpoints (tres_gru's nn.GRU says weight_ih_l0/weight_hh_l0 where
dpd says x2h/h2h), so the parameter counts are equal.
Usage: torch_step.py model=gru hidden=23 [threads=1 steps=10 batch=64 frame=200 thx=0 thh=0 units=3]
Prints one JSON object per line. Exits 0 with a SKIP line when torch is not installed."""
import json
import sys
import time

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    print("SKIP bench/torch_step.py: python3-torch is not installed (apt-get install python3-torch)")
    sys.exit(0)


def amp(x):
    return torch.sqrt(x[..., 0] * x[..., 0] + x[..., 1] * x[..., 1])


def ratio(v, a):
    """v / a, 0 where a = 0 (dpd's rule for the phase features, reference §13)."""
    pos = a > 0
    return torch.where(pos, v / torch.where(pos, a, torch.ones_like(a)), torch.zeros_like(a))


def feats_dgru(x):
    """(I, Q, A, A^3, Q/A, I/A): DGRU, DeltaGRU and TCN features (reference §2)."""
    i, q = x[..., 0], x[..., 1]
    a = amp(x)
    return torch.stack([i, q, a, a ** 3, ratio(q, a), ratio(i, a)], -1)


def feats_tres(x):
    """(I, Q, A, A^3, I[t+1], Q[t+1]), the next sample taken circularly (reference §3.8)."""
    a = amp(x)
    nxt = torch.roll(x, -1, dims=1)
    return torch.stack([x[..., 0], x[..., 1], a, a ** 3, nxt[..., 0], nxt[..., 1]], -1)


def windows(x, w=4):
    """(B, T, 2) -> (B, T, 2, w): the last w samples, oldest first; before the start of the
    sequence the rows wrap to its end (RVTDCNN, VDLSTM)."""
    return torch.cat([x[:, -(w - 1):], x], 1).unfold(1, w, 1)


class Rnn(nn.Module):
    """GRU / LSTM on raw I/Q with a linear head (§3.1, §3.3); DGRU (§3.2)."""

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


class DeltaGruCell(nn.Module):
    """DeltaGRU layer (§3.7) over a whole sequence, from zero state. Thresholds thx, thh as in
    training (0 = every delta is committed, which equals a GRU, but the delta mechanism still runs).
    Per step: dx = x - x_p and dh = h - h_p, zeroed where |d| < th; x_p, h_p committed where
    |d| >= th; accumulators M += W d; r = sig(M_r), z = sig(M_z), n = tanh(M_xn + r M_hn),
    h = (1 - z) n + z h. The input side does not depend on h: its accumulator telescopes to
    b_ih + W_ih x_p(t), which runs as one batched product after a loop that commits x_p. The
    hidden side accumulates M_h += W_hh dh step by step, starting from b_hh (0 without biases)."""

    def __init__(self, inp, h, bias, thx=0.0, thh=0.0):
        super().__init__()
        self.h, self.thx, self.thh = h, thx, thh
        if bias:  # DeltaGRU: nn.GRU's parameter names (rnn.weight_ih_l0, ...), as dpd's checkpoints
            k = h ** -0.5
            self.weight_ih_l0 = nn.Parameter(torch.empty(3 * h, inp).uniform_(-k, k))
            self.weight_hh_l0 = nn.Parameter(torch.empty(3 * h, h).uniform_(-k, k))
            self.bias_ih_l0 = nn.Parameter(torch.empty(3 * h).uniform_(-k, k))
            self.bias_hh_l0 = nn.Parameter(torch.empty(3 * h).uniform_(-k, k))
        else:  # TRes-DeltaGRU: bias-free rnn.x2h, rnn.h2h
            self.x2h = nn.Linear(inp, 3 * h, bias=False)
            self.h2h = nn.Linear(h, 3 * h, bias=False)

    def forward(self, f):
        b, t, _ = f.shape
        H = self.h
        if hasattr(self, "x2h"):
            wih, whh, bih, bhh = self.x2h.weight, self.h2h.weight, None, None
        else:
            wih, whh, bih, bhh = self.weight_ih_l0, self.weight_hh_l0, self.bias_ih_l0, self.bias_hh_l0
        xp, xps = torch.zeros_like(f[:, 0]), []
        for xs in f.unbind(1):
            xp = torch.where((xs - xp).abs() >= self.thx, xs, xp)
            xps.append(xp)
        mx = F.linear(torch.stack(xps, 1), wih, bih)  # (B, T, 3H): b_ih + W_ih x_p(t)
        wt = whh.t()
        mh = bhh.expand(b, 3 * H) if bhh is not None else f.new_zeros(b, 3 * H)
        h = hp = f.new_zeros(b, H)
        hs, mxs = [], mx.unbind(1)  # one backward node for all steps (a slice per step costs O(T) each)
        for s in range(t):
            d = h - hp
            m = d.abs() >= self.thh
            hp = torch.where(m, h, hp)
            mh = torch.addmm(mh, torch.where(m, d, torch.zeros_like(d)), wt)
            g = mxs[s]
            rz = torch.sigmoid(g[:, :2 * H] + mh[:, :2 * H])
            r, z = rz[:, :H], rz[:, H:]
            n = torch.tanh(g[:, 2 * H:] + r * mh[:, 2 * H:])
            h = n + z * (h - n)
            hs.append(h)
        return torch.stack(hs, 1)


class DeltaGru(nn.Module):
    """DeltaGRU (§3.7): 6 DGRU features, DeltaGRU with biases, linear head H -> 2."""

    def __init__(self, h, thx, thh):
        super().__init__()
        self.rnn = DeltaGruCell(6, h, True, thx, thh)
        self.fc_out = nn.Linear(h, 2)

    def forward(self, x):
        return self.fc_out(self.rnn(feats_dgru(x)))


class Tres(nn.Module):
    """TRes-GRU / TRes-DeltaGRU (§3.8): bias-free (Delta)GRU on the TRes features, bias-free head,
    plus a TCN residual on raw I/Q: Hardswish(conv1x1(Hardswish(conv k3 d16 p16)))."""

    def __init__(self, h, delta=False, thx=0.0, thh=0.0):
        super().__init__()
        self.rnn = DeltaGruCell(6, h, False, thx, thh) if delta else nn.GRU(6, h, batch_first=True, bias=False)
        self.fc_out = nn.Linear(h, 2, bias=False)
        self.tcn = nn.Sequential(nn.Conv1d(2, 3, 3, dilation=16, padding=16, bias=False), nn.Hardswish(),
                                 nn.Conv1d(3, 2, 1, bias=False), nn.Hardswish())

    def forward(self, x):
        h = self.rnn(feats_tres(x))
        if isinstance(h, tuple):
            h = h[0]
        return self.fc_out(h) + self.tcn(x.transpose(1, 2)).transpose(1, 2)


class Rvtdcnn(nn.Module):
    """RVTDCNN (§3.4): 4 x 5 feature image (I, Q, A, A^2, A^3), conv 3x3 1 -> 3, tanh MLP."""

    def __init__(self, h):
        super().__init__()
        self.Conv2d = nn.Conv2d(1, 3, 3, padding=(1, 0))
        self.fc_hid = nn.Linear(36, h)
        self.fc_out = nn.Linear(h, 2)

    def forward(self, x):
        b, t, _ = x.shape
        i, q = x[..., 0], x[..., 1]
        a = amp(x)
        f = torch.stack([i, q, a, a * a, a ** 3], -1)
        w = windows(f).permute(0, 1, 3, 2)  # (b, t, 4, 5)
        y = torch.tanh(self.Conv2d(w.reshape(b * t, 1, 4, 5))).reshape(b, t, 36)
        return self.fc_out(torch.tanh(self.fc_hid(y)))


class Vdlstm(nn.Module):
    """VDLSTM (§3.5): LSTM on the amplitude windows A_w (4), lambda1, lambda2 = linear(h) (H -> 4),
    y = W_out [lambda1 I_w/A_w ; lambda2 Q_w/A_w] + b (8 -> 2)."""

    def __init__(self, h):
        super().__init__()
        self.rnn = nn.LSTM(4, h, batch_first=True)
        self.fc_lambda_1 = nn.Linear(h, 4)
        self.fc_lambda_2 = nn.Linear(h, 4)
        self.fc_out = nn.Linear(8, 2)

    def forward(self, x):
        w = windows(x)
        iw, qw = w[:, :, 0], w[:, :, 1]
        aw = torch.sqrt(iw * iw + qw * qw)
        h, _ = self.rnn(aw)
        return self.fc_out(torch.cat([self.fc_lambda_1(h) * ratio(iw, aw), self.fc_lambda_2(h) * ratio(qw, aw)], -1))


class PgJanet(nn.Module):
    """PG-JANET (§3.10): a = tanh(W_a [h; A] + b), p1 = tanh(W_p1 [h; cos] + b),
    p2 = tanh(W_p2 [h; sin] + b), u = a p1 p2 (1 - a)(1 - p1)(1 - p2), f = sig(W_f [h; u] + b),
    g = tanh(W_g [h; u] + b), h = f h + (1 - f) g, y = W_o h + b. The input columns of W_a, W_p1,
    W_p2 run batched before the step loop; the h products of the five gates run as one matrix."""

    def __init__(self, h):
        super().__init__()
        self.h = h
        self.W_a, self.W_p1, self.W_p2 = nn.Linear(h + 1, h), nn.Linear(h + 1, h), nn.Linear(h + 1, h)
        self.W_f, self.W_g = nn.Linear(2 * h, h), nn.Linear(2 * h, h)
        self.W_o = nn.Linear(h, 2)

    def forward(self, x):
        b, t, _ = x.shape
        H = self.h
        a = amp(x)
        ins = (a, ratio(x[..., 0], a), ratio(x[..., 1], a))
        gates = (self.W_a, self.W_p1, self.W_p2)
        ein = torch.cat([e[..., None] * g.weight[:, H] + g.bias for e, g in zip(ins, gates)], -1)  # (B, T, 3H)
        wh = torch.cat([g.weight[:, :H] for g in gates + (self.W_f, self.W_g)], 0).t()  # (H, 5H)
        wu = torch.cat([self.W_f.weight[:, H:], self.W_g.weight[:, H:]], 0).t()  # (H, 2H)
        bfg = torch.cat([self.W_f.bias, self.W_g.bias])
        h = x.new_zeros(b, H)
        hs, eins = [], ein.unbind(1)  # one backward node for all steps (a slice per step costs O(T) each)
        for s in range(t):
            gh = h @ wh
            ap = torch.tanh(gh[:, :3 * H] + eins[s])
            v = ap * (1 - ap)
            u = v[:, :H] * v[:, H:2 * H] * v[:, 2 * H:]
            fg = torch.addmm(gh[:, 3 * H:] + bfg, u, wu)
            f, g = torch.sigmoid(fg[:, :H]), torch.tanh(fg[:, H:])
            h = g + f * (h - g)
            hs.append(h)
        return self.W_o(torch.stack(hs, 1))


class DvrJanet(nn.Module):
    """DVR-JANET (§3.10), K units: with s = h_I + h_Q: th = W_pth theta + W_ph s,
    v = W_ax A + W_ah s, at = sum_k c_k |v - k/K|, f = sig(W_f s + b),
    g_c = tanh(W_ccos [h_I; at cos th] + b), g_s = tanh(W_csin [h_Q; at sin th] + b),
    h_I = f h_I + (1 - f) g_c (likewise h_Q), y = (W_o1 h_I + b, W_o2 h_Q + b). The input terms
    run batched before the step loop; the three products of s run as one matrix."""

    def __init__(self, h, k=3):
        super().__init__()
        self.h, self.k = h, k
        self.cs = nn.Parameter(torch.randn(k))
        self.W_ph, self.W_ah = nn.Linear(h, h, bias=False), nn.Linear(h, h, bias=False)
        self.W_pθ, self.W_ax = nn.Linear(1, h, bias=False), nn.Linear(1, h, bias=False)
        self.W_f = nn.Linear(h, h)
        self.W_ccos, self.W_csin = nn.Linear(2 * h, h), nn.Linear(2 * h, h)
        self.W_o1, self.W_o2 = nn.Linear(h, 1), nn.Linear(h, 1)

    def forward(self, x):
        b, t, _ = x.shape
        H = self.h
        a = amp(x)
        theta = torch.where(a > 0, torch.atan2(x[..., 1], x[..., 0]), torch.zeros_like(a))
        ein = torch.cat([theta[..., None] * self.W_pθ.weight[:, 0], a[..., None] * self.W_ax.weight[:, 0],
                         self.W_f.bias.expand(b, t, H)], -1)  # (B, T, 3H)
        ws = torch.cat([self.W_ph.weight, self.W_ah.weight, self.W_f.weight], 0).t()  # (H, 3H)
        kk = torch.arange(1, self.k + 1, dtype=x.dtype) / self.k
        hi = hq = x.new_zeros(b, H)
        his, hqs, eins = [], [], ein.unbind(1)  # one backward node for all steps
        for s in range(t):
            pre = torch.addmm(eins[s], hi + hq, ws)
            th, v, f = pre[:, :H], pre[:, H:2 * H], torch.sigmoid(pre[:, 2 * H:])
            at = (v[..., None] - kk).abs() @ self.cs
            gc = torch.tanh(self.W_ccos(torch.cat([hi, at * torch.cos(th)], 1)))
            gs = torch.tanh(self.W_csin(torch.cat([hq, at * torch.sin(th)], 1)))
            hi, hq = gc + f * (hi - gc), gs + f * (hq - gs)
            his.append(hi)
            hqs.append(hq)
        return torch.cat([self.W_o1(torch.stack(his, 1)), self.W_o2(torch.stack(hqs, 1))], -1)


class Tcn(nn.Module):
    """TCN (§3.9): 6 DGRU features as channels -> conv1x1 6 -> H (bias) -> Hardswish ->
    4 x [depthwise conv k5, dilation 1, 2, 4, 8, padding 2d, no bias -> Hardswish] ->
    conv1x1 H -> 2 (no bias) -> + (I, Q)."""

    def __init__(self, h):
        super().__init__()
        layers = [nn.Conv1d(6, h, 1), nn.Hardswish()]
        for d in (1, 2, 4, 8):
            layers += [nn.Conv1d(h, h, 5, dilation=d, padding=2 * d, groups=h, bias=False), nn.Hardswish()]
        layers.append(nn.Conv1d(h, 2, 1, bias=False))
        self.network = nn.Sequential(*layers)

    def forward(self, x):
        return self.network(feats_dgru(x).transpose(1, 2)).transpose(1, 2) + x


class Gmp(nn.Module):
    """OpenDPD's GMP (§3.6), M = 11, k = 1..4, 495 real weights: y[n] = sum_m x[n-10+m]
    (w_lin[m] + sum_{k,l} w[k,l,m] |x[n-20+m+l]|^k), zero before the start of the sequence.
    Vectorised over time (OpenDPD's own module loops over time in Python)."""

    M, K = 11, 4

    def __init__(self):
        super().__init__()
        self.Weight = nn.Parameter(torch.empty(1, self.M + self.K * self.M * self.M))
        nn.init.xavier_uniform_(self.Weight)
        m = torch.arange(self.M)
        self.register_buffer("idx", (m[:, None] + m[None, :]).reshape(-1), persistent=False)  # [l, m] -> l + m

    def forward(self, x):
        b, t, _ = x.shape
        M = self.M
        xw = F.pad(x, (0, 0, M - 1, 0)).unfold(1, M, 1)  # (B, T, 2, M): x[n - 10 + m]
        aw = F.pad(amp(x), (2 * (M - 1), 0)).unfold(1, 2 * M - 1, 1)  # (B, T, 21): |x[n - 20 + j]|
        env = aw[..., self.idx].reshape(b, t, M, M)  # [l, m] -> |x[n - 20 + l + m]|
        w = self.Weight[0]
        wc = w[M:].reshape(self.K, M, M)  # (k, l, m)
        p = torch.stack([env, env * env, env * env * env, env * env * env * env], 2)  # (B, T, K, l, m)
        c = w[:M] + torch.einsum("btklm,klm->btm", p, wc)
        return (xw * c[:, :, None, :]).sum(-1)


def make(model, h, a):
    thx, thh = float(a.get("thx", 0)), float(a.get("thh", 0))
    if model in ("gru", "lstm"):
        return Rnn(model, h)
    if model == "dgru":
        return Rnn("gru", h, dgru=True)
    if model == "tres_gru":
        return Tres(h)
    if model == "tres_deltagru":
        return Tres(h, delta=True, thx=thx, thh=thh)
    if model == "deltagru":
        return DeltaGru(h, thx, thh)
    if model == "rvtdcnn":
        return Rvtdcnn(h)
    if model == "vdlstm":
        return Vdlstm(h)
    if model == "pgjanet":
        return PgJanet(h)
    if model == "dvrjanet":
        return DvrJanet(h, int(a.get("units", 3)))
    if model == "tcn":
        return Tcn(h)
    if model == "gmp":
        return Gmp()
    raise SystemExit(f"unknown model {model}")


def main():
    args = dict(a.split("=", 1) for a in sys.argv[1:])
    model, h = args.get("model", "gru"), int(args.get("hidden", 23))
    b, t, steps = int(args.get("batch", 64)), int(args.get("frame", 200)), int(args.get("steps", 10))
    threads = int(args.get("threads", 1))
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    m = make(model, h, args)
    opt = torch.optim.AdamW(m.parameters(), lr=5e-3, weight_decay=0.01)
    x, y = torch.randn(b, t, 2) * 0.3, torch.randn(b, t, 2) * 0.3
    loss_fn = nn.MSELoss()

    def step():
        opt.zero_grad()
        loss = loss_fn(m(x), y)
        loss.backward()
        nn.utils.clip_grad_norm_(m.parameters(), 200)
        opt.step()
        return loss

    for _ in range(2):
        step()
    t0 = time.perf_counter()
    for _ in range(steps):
        loss = step()
    ms = (time.perf_counter() - t0) / steps * 1e3
    n = sum(p.numel() for p in m.parameters())
    print(json.dumps({"framework": "torch " + torch.__version__, "model": model, "hidden": h, "params": n,
                      "batch": b, "frame": t, "threads": threads, "steps": steps, "ms_per_step": round(ms, 4),
                      "loss": round(loss.item(), 6)}))


if __name__ == "__main__":
    main()
