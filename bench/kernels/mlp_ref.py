#!/usr/bin/env python3
"""Independent reference for the mnist_replica MLP's accuracy (not a speed test).

Re-implements mnist_replica.py's model and training in PyTorch + NumPy, detail
by detail (docs/kernels.md "MLP accuracy"), so that the accuracy distribution of
the spec'd configuration can be compared with rdmaps' C trainer:
  - data: IDX files, pixels * (1/255) in float32, validation = first 5000 of
    the 60k training images, train = the other 55000, test = t10k;
  - batches: TF DataSet.next_batch (numpy shuffle at the first call and at each
    epoch boundary; an epoch-crossing batch = old tail + new head);
  - init: truncated normal (redraw beyond 2 stddev), stddev 1/28 and
    1/sqrt(hidden), zero biases;
  - loss: -sum(y_ * log(clip(softmax(logits), 1e-10, 1))) over batch and classes
    (--loss logsoftmax: -sum(y_ * log_softmax(logits)), no clip, for comparison);
  - TF1 Adam (beta1 0.9, beta2 0.999, epsilon 1e-8 outside the sqrt, bias
    correction folded into lr_t, beta powers in float32, ApplyAdam's
    m += (g - m)(1 - beta1) form), all in float32.
usage: mlp_ref.py DATA_DIR [--seeds 1,2,3] [--epochs 5] [--lr 0.01]
                  [--batch 100] [--hidden 100] [--adam tf1|torch]
                  [--loss clipped|logsoftmax]
Prints one line per seed and a summary (mean/min/max).  Exit 2 on bad input."""
import argparse
import gzip
import os
import struct
import sys

import numpy as np
import torch


def fail(msg):
    print(f"mlp_ref: {msg}", file=sys.stderr)
    sys.exit(2)


def read_idx(path, want_magic):
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        path += ".gz"
    try:
        op = gzip.open if path.endswith(".gz") else open
        with op(path, "rb") as f:
            data = f.read()
    except OSError as e:
        fail(f"{path}: {e}")
    if len(data) < 8:
        fail(f"{path}: truncated header")
    magic, n = struct.unpack(">II", data[:8])
    if magic != want_magic:
        fail(f"{path}: magic {magic:#x}, want {want_magic:#x}")
    if want_magic == 2051:
        rows, cols = struct.unpack(">II", data[8:16])
        body = np.frombuffer(data, np.uint8, offset=16)
        if body.size != n * rows * cols:
            fail(f"{path}: {body.size} pixel bytes, header says {n}x{rows}x{cols}")
        return body.reshape(n, rows * cols)
    body = np.frombuffer(data, np.uint8, offset=8)
    if body.size != n:
        fail(f"{path}: {body.size} labels, header says {n}")
    return body


class DataSet:
    """tensorflow/contrib/learn/python/learn/datasets/mnist.py DataSet.next_batch."""

    def __init__(self, images, labels):
        self._images, self._labels = images, labels
        self._n = images.shape[0]
        self._epochs_completed = 0
        self._index_in_epoch = 0

    def next_batch(self, batch_size):
        start = self._index_in_epoch
        if self._epochs_completed == 0 and start == 0:
            perm0 = np.arange(self._n)
            np.random.shuffle(perm0)
            self._images, self._labels = self._images[perm0], self._labels[perm0]
        if start + batch_size > self._n:
            self._epochs_completed += 1
            rest = self._n - start
            ir, lr = self._images[start:self._n], self._labels[start:self._n]
            perm = np.arange(self._n)
            np.random.shuffle(perm)
            self._images, self._labels = self._images[perm], self._labels[perm]
            start = 0
            self._index_in_epoch = batch_size - rest
            end = self._index_in_epoch
            return (np.concatenate((ir, self._images[start:end]), axis=0),
                    np.concatenate((lr, self._labels[start:end]), axis=0))
        self._index_in_epoch += batch_size
        end = self._index_in_epoch
        return self._images[start:end], self._labels[start:end]


def trunc_normal(shape, std, gen):
    """TF truncated_normal: normal samples, redrawn while |z| > 2."""
    z = torch.randn(shape, generator=gen)
    while True:
        bad = z.abs() > 2.0
        k = int(bad.sum())
        if k == 0:
            return z * std
        z[bad] = torch.randn(k, generator=gen)


def run(seed, a, tr, va, te):
    np.random.seed(seed)
    gen = torch.Generator().manual_seed(seed)
    H = a.hidden
    params = [trunc_normal((784, H), 1.0 / 28.0, gen), torch.zeros(H),
              trunc_normal((H, 10), 1.0 / np.sqrt(H), gen), torch.zeros(10)]
    for p in params:
        p.requires_grad_(True)
    m = [torch.zeros_like(p) for p in params]
    v = [torch.zeros_like(p) for p in params]
    b1, b2, eps = np.float32(0.9), np.float32(0.999), np.float32(1e-8)
    b1p, b2p = np.float32(b1), np.float32(b2)
    topt = torch.optim.Adam(params, lr=a.lr, eps=1e-8) if a.adam == "torch" else None

    def logits(x):
        h = torch.relu(x @ params[0] + params[1])
        return h @ params[2] + params[3]

    def forward(x):
        return torch.softmax(logits(x), dim=1)

    ds = DataSet(*tr)
    steps = a.epochs * (tr[0].shape[0] // a.batch)
    for _ in range(steps):
        xb, yb = ds.next_batch(a.batch)
        x = torch.from_numpy(xb)
        y = torch.from_numpy(yb.astype(np.int64))
        onehot = torch.nn.functional.one_hot(y, 10).to(torch.float32)
        if a.loss == "logsoftmax":
            loss = -(onehot * torch.log_softmax(logits(x), dim=1)).sum()
        else:
            loss = -(onehot * torch.log(torch.clamp(forward(x), 1e-10, 1.0))).sum()
        for q in params:
            q.grad = None
        loss.backward()
        with torch.no_grad():
            if topt is not None:
                topt.step()
                continue
            lr_t = np.float32(a.lr) * np.sqrt(np.float32(1) - b2p) / (np.float32(1) - b1p)
            lr_t = float(np.float32(lr_t))
            for q, mq, vq in zip(params, m, v):
                g = q.grad
                mq += (g - mq) * float(np.float32(1) - b1)
                vq += (g * g - vq) * float(np.float32(1) - b2)
                q -= (mq * lr_t) / (vq.sqrt() + float(eps))
            b1p = np.float32(b1p * b1)
            b2p = np.float32(b2p * b2)
    with torch.no_grad():
        pv = forward(torch.from_numpy(va[0]))
        yv = torch.from_numpy(va[1].astype(np.int64))
        ce = float(-torch.log(torch.clamp(pv.gather(1, yv[:, None]), 1e-10, 1.0)).sum())
        pt = forward(torch.from_numpy(te[0]))
        acc = float((pt.argmax(1) == torch.from_numpy(te[1].astype(np.int64))).float().mean()) * 100
    return ce, acc


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data_dir")
    ap.add_argument("--seeds", default="1,2,3,4,5")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--hidden", type=int, default=100)
    ap.add_argument("--adam", choices=["tf1", "torch"], default="tf1")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--loss", choices=["clipped", "logsoftmax"], default="clipped")
    a = ap.parse_args()
    try:
        seeds = [int(s) for s in a.seeds.split(",")]
    except ValueError:
        fail(f"--seeds {a.seeds!r}: want comma-separated integers")
    if a.epochs < 1 or a.batch < 1 or a.hidden < 1 or not a.lr > 0 or a.threads < 1:
        fail("--epochs, --batch, --hidden, --threads must be >= 1 and --lr > 0")
    torch.set_num_threads(a.threads)
    d = a.data_dir
    xi = read_idx(os.path.join(d, "train-images-idx3-ubyte"), 2051)
    yi = read_idx(os.path.join(d, "train-labels-idx1-ubyte"), 2049)
    xt = read_idx(os.path.join(d, "t10k-images-idx3-ubyte"), 2051)
    yt = read_idx(os.path.join(d, "t10k-labels-idx1-ubyte"), 2049)
    if xi.shape[0] != yi.shape[0] or xt.shape[0] != yt.shape[0] or xi.shape[0] <= 5000:
        fail("image/label counts do not match or fewer than 5001 training images")
    scale = np.float32(1.0 / 255.0)
    xi = xi.astype(np.float32) * scale
    xt = xt.astype(np.float32) * scale
    va, tr, te = (xi[:5000], yi[:5000]), (xi[5000:], yi[5000:]), (xt, yt)
    accs = []
    for s in seeds:
        ce, acc = run(s, a, tr, va, te)
        accs.append(acc)
        print(f"seed {s}: validation cross entropy {ce:.1f}, test accuracy {acc:.2f}%", flush=True)
    print(f"summary: adam={a.adam} loss={a.loss} lr={a.lr} epochs={a.epochs} batch={a.batch} seeds={len(accs)} "
          f"test accuracy mean {np.mean(accs):.2f}% min {np.min(accs):.2f}% max {np.max(accs):.2f}%")


if __name__ == "__main__":
    main()
