#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The codec operations written the way a PyTorch user would, timed on the
same inputs pipezip's `bench codecs` uses (same distribution and size), single
thread by default. Prints one JSON object per operation. Debian's
/usr/bin/python3 with python3-torch."""
import argparse
import json
import statistics
import time

import torch

ap = argparse.ArgumentParser()
ap.add_argument("--elements", type=int, default=10_000_000)
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--repeat", type=int, default=5)
ap.add_argument("--data", default="gradient", choices=["gradient", "activation"])
a = ap.parse_args()
torch.set_num_threads(a.threads)
torch.manual_seed(0)
n = a.elements // 16 * 16
z = torch.randn(16, n // 16)
if a.data == "activation":
    x = torch.where(z > 0, z * z, torch.zeros_like(z))
else:
    x = 0.01 * z


def timeit(fn):
    fn()
    ts = []
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def topk(frac):
    k = int(frac * x.shape[1])

    def f():
        # per-sample TopK by magnitude, as Paper A's code does
        _, idx = torch.topk(x.abs(), k, dim=1, sorted=False)
        return idx, torch.gather(x, 1, idx)
    return f


def quant_minmax(bits):
    levels = 2 ** bits - 1

    def f():
        lo, hi = x.min(), x.max()
        scale = (hi - lo) / levels
        return torch.round((x - lo) / scale).to(torch.uint8), lo, scale
    return f


def quant_per_tensor(bits):
    def f():
        lo, hi = x.min(), x.max()
        scale = float((hi - lo) / 255)
        return torch.quantize_per_tensor(x, scale, int(-lo / scale), torch.quint8)
    return f


ops = {
    "topk:0.01": topk(0.01), "topk:0.1": topk(0.1), "topk:0.3": topk(0.3),
    "q8 (min-max, torch ops)": quant_minmax(8), "q4 (min-max, torch ops, codes unpacked)": quant_minmax(4),
    "q8 (quantize_per_tensor)": quant_per_tensor(8),
    "fp16 (.half())": lambda: x.half(), "bf16 (.bfloat16())": lambda: x.bfloat16(),
}
for name, fn in ops.items():
    t = timeit(fn)
    print(json.dumps({"bench": "torch_codec", "op": name, "torch": torch.__version__, "elements": n,
                      "threads": torch.get_num_threads(), "data": a.data, "ms": round(1e3 * t, 3),
                      "gb_per_s": round(4 * n / t / 1e9, 3)}))
