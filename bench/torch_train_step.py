#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Median time of a PyTorch CPU training step on the same model pipezip's
`bench train` times (forward, cross-entropy, backward, then SGD momentum 0.9,
weight decay 5e-4 for the image models, AdamW betas (0.9, 0.95) weight decay
0.1 on the dense matrices for gpt-*), random inputs (token ids over a vocabulary of 256 and the
preset's full context for gpt-*). Run with Debian's /usr/bin/python3."""
import argparse
import json
import statistics
import sys
import time

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import torch_models  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--model", default="resnet8", choices=["resnet8", "resnet20", "gpt-tiny", "gpt-small"])
ap.add_argument("--input", default="1x28x28", choices=["1x28x28", "3x32x32"])
ap.add_argument("--batch", type=int, default=128)
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--warmup", type=int, default=3)
ap.add_argument("--repeat", type=int, default=20)
a = ap.parse_args()

torch.set_num_threads(a.threads)
torch.manual_seed(0)
lm = a.model.startswith("gpt")
if lm:
    model = torch_models.gpt(a.model, 256)
    T = torch_models.GPT_PRESETS[a.model][3]
    a.input = str(T)
    # decay on the dense matrices only, as pipezip (not embeddings, norms, biases)
    dense = [p for n, p in model.named_parameters() if p.dim() == 2 and not n.startswith(("wte", "wpe"))]
    other = [p for n, p in model.named_parameters() if not (p.dim() == 2 and not n.startswith(("wte", "wpe")))]
    opt = torch.optim.AdamW([{"params": dense, "weight_decay": 0.1}, {"params": other, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.95))
    x = torch.randint(0, 256, (a.batch, T))
    y = torch.randint(0, 256, (a.batch, T))
else:
    c, h, w = (int(v) for v in a.input.split("x"))
    model = getattr(torch_models, a.model)(c, 10)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    x = torch.randn(a.batch, c, h, w)
    y = torch.randint(0, 10, (a.batch,))
model.train()
times = []
for i in range(a.warmup + a.repeat):
    t0 = time.perf_counter()
    opt.zero_grad(set_to_none=False)
    out = model(x)
    loss = torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
    loss.backward()
    opt.step()
    dt = time.perf_counter() - t0
    if i >= a.warmup:
        times.append(dt)
med = statistics.median(times)
print(json.dumps({"bench": "torch_train", "torch": torch.__version__, "model": a.model, "input": a.input,
                  "batch": a.batch, "threads": torch.get_num_threads(), "repeat": a.repeat,
                  "median_ms": round(1e3 * med, 3), "min_ms": round(1e3 * min(times), 3),
                  "max_ms": round(1e3 * max(times), 3), "samples_per_s": round(a.batch / med, 1),
                  "tokens_per_s": round(a.batch * int(a.input) / med, 1) if lm else 0}))
