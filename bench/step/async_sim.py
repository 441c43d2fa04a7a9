#!/usr/bin/env python3
"""What staleness alone does to async mnist_replica training (no rdmaps code).

A single-process simulation of TF async training with W equal-speed workers
that take turns: global step s is computed by worker s % W on the parameters it
pulled right after its own previous gradient was applied, so every gradient
after the first W is exactly W-1 updates stale.  W = 1 is plain sequential
training.  Model, data order, init, loss and TF1 Adam come from
bench/kernels/mlp_ref.py (the independent PyTorch reference of the MLP), so
the only difference between the rows is the staleness.

It answers: is issue 4's async target (validation cross entropy <= 1000 after
200 global steps, 2 workers) reachable by an implementation of TF's async
semantics, or does staleness 1 alone cost more than that?  See
docs/protocol.md Q5 for the measured answer and the rdmaps runs it is
compared with.

usage: async_sim.py DATA_DIR [--workers 1,2,3] [--seeds 31-46] [--steps 200]
                             [--lr 0.01] [--staleness_lr]
  --staleness_lr: divide the learning rate by (1 + staleness) (the
  "staleness-aware" variant), to see whether it helps at this scale.
Exit 2 on bad input."""
import argparse
import importlib.util
import os
import sys

import numpy as np
import torch


def fail(msg):
    print(f"async_sim: {msg}", file=sys.stderr)
    sys.exit(2)


def load_ref():
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "..", "kernels", "mlp_ref.py")
    spec = importlib.util.spec_from_file_location("mlp_ref", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def parse_list(s, what):
    out = []
    try:
        for part in s.split(","):
            if "-" in part:
                a, b = part.split("-")
                out.extend(range(int(a), int(b) + 1))
            else:
                out.append(int(part))
    except ValueError:
        fail(f"--{what} {s!r}: want comma-separated integers or ranges a-b")
    return out


def run(ref, seed, W, a, tr, va):
    np.random.seed(seed)
    gen = torch.Generator().manual_seed(seed)
    P = [ref.trunc_normal((784, 100), 1.0 / 28.0, gen), torch.zeros(100),
         ref.trunc_normal((100, 10), 0.1, gen), torch.zeros(10)]
    m = [torch.zeros_like(p) for p in P]
    v = [torch.zeros_like(p) for p in P]
    b1, b2, eps = 0.9, 0.999, 1e-8
    b1p, b2p = b1, b2
    data = [ref.DataSet(*tr) for _ in range(W)]
    held = [[p.clone() for p in P] for _ in range(W)]  # what each worker pulled
    for s in range(a.steps):
        k = s % W
        q = [t.clone().requires_grad_(True) for t in held[k]]
        xb, yb = data[k].next_batch(100)
        x = torch.from_numpy(xb)
        y = torch.from_numpy(yb.astype(np.int64))
        prob = torch.softmax(torch.relu(x @ q[0] + q[1]) @ q[2] + q[3], dim=1)
        onehot = torch.nn.functional.one_hot(y, 10).to(torch.float32)
        loss = -(onehot * torch.log(torch.clamp(prob, 1e-10, 1.0))).sum()
        loss.backward()
        stale = min(s, W - 1)
        lr = a.lr / (1 + stale) if a.staleness_lr else a.lr
        with torch.no_grad():
            lr_t = lr * np.sqrt(1 - b2p) / (1 - b1p)
            for p, mq, vq, t in zip(P, m, v, q):
                g = t.grad
                mq += (g - mq) * (1 - b1)
                vq += (g * g - vq) * (1 - b2)
                p -= mq * lr_t / (vq.sqrt() + eps)
            b1p *= b1
            b2p *= b2
        held[k] = [p.clone() for p in P]
    with torch.no_grad():
        pv = torch.softmax(torch.relu(torch.from_numpy(va[0]) @ P[0] + P[1]) @ P[2] + P[3], dim=1)
        yv = torch.from_numpy(va[1].astype(np.int64))
        return float(-torch.log(torch.clamp(pv.gather(1, yv[:, None]), 1e-10, 1.0)).sum())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data_dir")
    ap.add_argument("--workers", default="1,2,3")
    ap.add_argument("--seeds", default="31-46")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--staleness_lr", action="store_true")
    a = ap.parse_args()
    workers = parse_list(a.workers, "workers")
    seeds = parse_list(a.seeds, "seeds")
    if a.steps < 1 or not a.lr > 0 or not seeds or min(workers) < 1:
        fail("--steps and --workers must be >= 1, --lr > 0, at least one seed")
    ref = load_ref()
    torch.set_num_threads(1)
    d = a.data_dir
    xi = ref.read_idx(os.path.join(d, "train-images-idx3-ubyte"), 2051)
    yi = ref.read_idx(os.path.join(d, "train-labels-idx1-ubyte"), 2049)
    if xi.shape[0] != yi.shape[0] or xi.shape[0] <= 5000:
        fail("image/label counts do not match or fewer than 5001 training images")
    xi = xi.astype(np.float32) * np.float32(1.0 / 255.0)
    va, tr = (xi[:5000], yi[:5000]), (xi[5000:], yi[5000:])
    for W in workers:
        ces = [run(ref, s, W, a, tr, va) for s in seeds]
        print(f"workers {W} (staleness {W - 1}{', lr/(1+staleness)' if a.staleness_lr else ''}): "
              f"{a.steps} global steps, validation cross entropy over {len(seeds)} seeds: "
              f"mean {np.mean(ces):.0f} min {np.min(ces):.0f} max {np.max(ces):.0f}", flush=True)


if __name__ == "__main__":
    main()
