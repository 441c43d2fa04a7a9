#!/usr/bin/python3
"""PyTorch reference for kernels_bench (thread budget: torch.set_num_threads(t),
OMP_NUM_THREADS=t and OPENBLAS_NUM_THREADS=t, like ours: OpenBLAS with t threads): same models, batch sizes, optimizer and
timing method (warm-up bounded by steps and seconds, median of timed blocks).

  mlp : nn.Linear(784,100) -> ReLU -> nn.Linear(100,10), summed cross entropy,
        batch 100, Adam lr 0.01
  lstm: nn.LSTM(28,128) over the 28 image rows, last output -> nn.Linear(128,10),
        mean cross entropy, batch 128, Adam lr 0.001

Prints "RESULT model=<m> threads=<t> steps_per_s=<median>" (parsed by
kernels_bench) and a JSON line.  Prints "SKIP ..." and exits 77 without torch.
"""
import argparse
import json
import os
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=["mlp", "lstm"], required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--blocks", type=int, default=7)
    ap.add_argument("--block_s", type=float, default=0.3)
    ap.add_argument("--warmup_steps", type=int, default=50)
    ap.add_argument("--warmup_s", type=float, default=1.0)
    ap.add_argument("--blas_threads", type=int, default=0,
                    help="OpenBLAS threads (Debian torch calls the system BLAS, whose pool "
                         "torch.set_num_threads does not limit); default = --threads")
    a = ap.parse_args()
    # Must be set before torch (and with it libopenblas) is loaded.
    os.environ["OPENBLAS_NUM_THREADS"] = str(a.blas_threads or a.threads)
    os.environ["OMP_NUM_THREADS"] = str(a.threads)
    try:
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
    except Exception as e:  # noqa: BLE001
        print(f"SKIP torch not importable by {sys.executable}: {e}")
        sys.exit(77)

    torch.set_num_threads(a.threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    torch.manual_seed(1)
    pool = 8
    if a.model == "mlp":
        batch = 100
        model = nn.Sequential(nn.Linear(784, 100), nn.ReLU(), nn.Linear(100, 10))
        xs = [torch.rand(batch, 784) for _ in range(pool)]
        reduction, lr = "sum", 0.01

        def fwd(x):
            return model(x)
    else:
        batch = 128
        lstm = nn.LSTM(28, 128, batch_first=True)
        head = nn.Linear(128, 10)
        model = nn.ModuleList([lstm, head])
        xs = [torch.rand(batch, 28, 28) for _ in range(pool)]
        reduction, lr = "mean", 0.001

        def fwd(x):
            out, _ = lstm(x)
            return head(out[:, -1, :])
    ys = [torch.randint(0, 10, (batch,)) for _ in range(pool)]
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    nparams = sum(p.numel() for p in model.parameters())
    step = [0]

    def train_step():
        k = step[0] % pool
        step[0] += 1
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(fwd(xs[k]), ys[k], reduction=reduction)
        loss.backward()
        opt.step()

    t0 = time.perf_counter()
    w = 0
    while True:
        train_step()
        w += 1
        if w >= a.warmup_steps or time.perf_counter() - t0 >= a.warmup_s:
            break
    per = (time.perf_counter() - t0) / w
    spb = max(1, int(a.block_s / per))
    rates, crates = [], []
    for _ in range(a.blocks):
        s, c = time.perf_counter(), time.process_time()
        for _ in range(spb):
            train_step()
        rates.append(spb / (time.perf_counter() - s))
        crates.append(spb / (time.process_time() - c))
    rates.sort()
    crates.sort()
    n = len(rates)
    med = rates[n // 2] if n % 2 else 0.5 * (rates[n // 2 - 1] + rates[n // 2])
    cmed = crates[n // 2] if n % 2 else 0.5 * (crates[n // 2 - 1] + crates[n // 2])
    print(f"RESULT model={a.model} threads={a.threads} steps_per_s={med:.3f} cpu_steps_per_s={cmed:.3f}")
    print(json.dumps({"impl": "torch", "torch": torch.__version__, "model": a.model,
                      "threads": a.threads, "blas_threads": a.blas_threads or a.threads, "batch": batch, "nparams": nparams,
                      "steps_per_s": round(med, 2), "cpu_steps_per_s": round(cmed, 2), "min": round(rates[0], 2),
                      "max": round(rates[-1], 2), "steps_per_block": spb, "warmup_steps": w}))


if __name__ == "__main__":
    main()
