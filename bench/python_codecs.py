#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""pipezip's codecs from Python beside the same codecs in C and beside
PyTorch, in one run: for each codec, encoding and decoding a 16 x 625,000
float32 tensor (10^7 elements, activation-like: post-ReLU squares) through
pipezip.Codec (encode_into a preallocated buffer: the no-copy path; and
encode(), which returns bytes), against `pipezip bench codecs` on the same
size, alternated ROUNDS times, medians, every timed run after a 256 MiB read that evicts the caches (as
the C bench's bandwidth probe does); then per-sample TopK 10% from Python
against torch.topk (+ gather) on the same tensor. Single thread.
Usage: PYTHONPATH=python /usr/bin/python3 bench/python_codecs.py [--pipezip build/pipezip] [--rounds 3]"""
import argparse
import json
import os
import statistics
import subprocess
import time

import numpy as np

import pipezip

ap = argparse.ArgumentParser()
ap.add_argument("--pipezip", default=os.path.join(os.path.dirname(__file__), "..", "build", "pipezip"))
ap.add_argument("--codecs", default="fp16;q4;q8;topk:0.1;ms:0.01,bits=2")
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--repeat", type=int, default=7)
a = ap.parse_args()
pipezip.set_threads(1)
rng = np.random.default_rng(0)
z = rng.standard_normal((16, 625_000), dtype=np.float32)
x = pipezip.empty(z.shape)
x[...] = np.where(z > 0, z * z, 0)
GB = x.nbytes / 1e9


_probe = np.ones(256 << 20 >> 3, dtype=np.uint64)


def med(fn):
    """median time of fn, each run after a 256 MiB read that evicts the
    caches, as `pipezip bench codecs` does between its timed runs (its
    bandwidth probe): both then read the tensor from memory"""
    fn()
    ts = []
    for _ in range(a.repeat):
        np.bitwise_xor.reduce(_probe)
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


specs = a.codecs.split(";")
py_enc, py_enc_bytes, py_dec, c_enc, c_dec = ({s: [] for s in specs} for _ in range(5))
for r in range(a.rounds):
    out = subprocess.run([a.pipezip, "bench", "codecs", "--codecs", a.codecs, "--sizes", "1e7", "--data", "activation",
                          "--threads", "1", "--repeat", str(a.repeat), "--format", "json"],
                         check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        j = json.loads(line)
        if j.get("bench") == "codec":
            c_enc[j["codec"]].append(j["encode_ms"] / 1e3)
            c_dec[j["codec"]].append(j["decode_ms"] / 1e3)
    for s in specs:
        c = pipezip.Codec(s)
        buf = pipezip.empty(c.max_frame_bytes(x.shape), np.uint8)  # 64-byte aligned, as the C bench's
        n = c.encode_into(x, buf)
        frame = buf[:n]
        y = pipezip.empty(x.shape)
        rx = pipezip.Codec(s)
        py_enc[s].append(med(lambda: c.encode_into(x, buf)))
        py_enc_bytes[s].append(med(lambda: c.encode(x)))
        py_dec[s].append(med(lambda: rx.decode(frame, out=y)))

print(f"10^7 float32 (16 x 625,000, activation-like), 1 thread, {a.rounds} alternated rounds x {a.repeat} runs, "
      "medians; ms (GB/s of float32)")
print(f"  {'codec':16} {'C encode':>15} {'Python encode_into':>19} {'ratio':>6} {'Python encode()':>16} "
      f"{'C decode':>15} {'Python decode':>15} {'ratio':>6}")
for s in specs:
    ce, pe, pb = statistics.median(c_enc[s]), statistics.median(py_enc[s]), statistics.median(py_enc_bytes[s])
    cd, pd = statistics.median(c_dec[s]), statistics.median(py_dec[s])
    cell = lambda t: f"{1e3 * t:6.2f} ({GB / t:5.2f})"
    print(f"  {s:16} {cell(ce):>15} {cell(pe):>19} {pe / ce:6.3f} {cell(pb):>16} {cell(cd):>15} {cell(pd):>15} "
          f"{pd / cd:6.3f}")

try:
    import torch
except ImportError:
    torch = None
if torch is not None:
    torch.set_num_threads(1)
    xt = torch.from_numpy(x)
    k = int(0.1 * xt.shape[1])

    def torch_topk():
        _, idx = torch.topk(xt.abs(), k, dim=1, sorted=False)
        return idx, torch.gather(xt, 1, idx)

    c = pipezip.Codec("topk:0.1")
    buf = np.empty(c.max_frame_bytes(x.shape), dtype=np.uint8)
    tt, tp = [], []
    for r in range(a.rounds):
        tt.append(med(torch_topk))
        tp.append(med(lambda: c.encode_into(xt, buf)))
    t, p = statistics.median(tt), statistics.median(tp)
    print(f"TopK 10% per sample on the same tensor: torch.topk + gather {1e3 * t:.1f} ms, "
          f"pipezip.Codec('topk:0.1') from a torch tensor {1e3 * p:.1f} ms (frame and checksum included): "
          f"{t / p:.1f}x  (torch {torch.__version__})")
