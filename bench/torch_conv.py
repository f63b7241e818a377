#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The convolution shapes bench_conv times (resnet8's and resnet20's), in
PyTorch: F.conv2d forward, then backward for the input (except a first
layer's) and weight gradients, no bias, median of repeated runs. PyTorch's
CPU convolutions run oneDNN (mkldnn), so this is the oneDNN side of
bench/compare_conv.sh. Run with Debian's /usr/bin/python3."""
import argparse
import json
import statistics
import time

import torch
import torch.nn.functional as F

ap = argparse.ArgumentParser()
ap.add_argument("--batch", type=int, default=128)
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--repeat", type=int, default=15)
a = ap.parse_args()
torch.set_num_threads(a.threads)
torch.manual_seed(1)
SHAPES = [(1, 28, 28, 16, 3, 1, 1), (16, 28, 28, 16, 3, 1, 1), (16, 28, 28, 32, 3, 2, 1), (16, 28, 28, 32, 1, 2, 0),
          (32, 14, 14, 32, 3, 1, 1), (32, 14, 14, 64, 3, 2, 1), (32, 14, 14, 64, 1, 2, 0), (64, 7, 7, 64, 3, 1, 1),
          (3, 32, 32, 16, 3, 1, 1), (16, 32, 32, 16, 3, 1, 1), (16, 32, 32, 32, 3, 2, 1), (32, 16, 16, 32, 3, 1, 1),
          (32, 16, 16, 64, 3, 2, 1), (64, 8, 8, 64, 3, 1, 1)]
for C, H, W, OC, K, s, p in SHAPES:
    x = torch.randn(a.batch, C, H, W, requires_grad=C > 3)
    w = (0.1 * torch.randn(OC, C, K, K)).requires_grad_()
    with torch.no_grad():
        dy = torch.randn_like(F.conv2d(x, w, None, s, p))
    tf, tb = [], []
    for i in range(a.repeat + 2):  # two warm-up runs
        t0 = time.perf_counter()
        y = F.conv2d(x, w, None, s, p)
        t1 = time.perf_counter()
        y.backward(dy)
        t2 = time.perf_counter()
        if i >= 2:
            tf.append(t1 - t0), tb.append(t2 - t1)
        w.grad = None
        x.grad = None
    print(json.dumps({"shape": f"{C}x{H}x{W}->{OC} k{K} s{s} p{p}", "batch": a.batch, "threads": a.threads,
                      "kernels": "pytorch " + torch.__version__ + " (mkldnn %s)" % torch.backends.mkldnn.is_available(),
                      "forward_ms": round(1e3 * statistics.median(tf), 3),
                      "backward_ms": round(1e3 * statistics.median(tb), 3)}))
