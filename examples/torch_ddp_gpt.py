#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A GPT trained data-parallel with torch's DistributedDataParallel, its
gradient buckets compressed by pipezip's DDP communication hook (or by
torch's own PowerSGD hook, or not at all), over gloo.

    .venv/bin/python -m torch.distributed.run --nnodes 1 --master_addr 127.0.0.1 --nproc_per_node 2 -r 1 -t 1 \\
        examples/torch_ddp_gpt.py --hook "pipezip:ef(q4)" --steps 300

(the venv's Python, where pipezip is installed; docs/PYTHON.md)

--hook none (plain DDP), pipezip:SPEC (pipezip.torch.ddp_hook with
DDPCompression(SPEC): any stateless spec, ef(...) or lowrank:R), or
powersgd:R (torch.distributed.algorithms.ddp_comm_hooks.powerSGD_hook, rank
R, error feedback and warm start on, compressing from step 2). The model is
examples/torch_pipeline_gpt.py's GPT-2 in one piece on every rank (its
--layers, --d, --heads, --ctx), the text the King James Bible or any file;
each rank draws its own batches. Rank 0 prints the validation loss (the
held-out tenth) and what one rank sent per step: its frames (pipezip), its
P and Q factors and the uncompressed vectors (PowerSGD), or every gradient
in fp32 (none), against fp32. --out FILE appends a JSON line.
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_pipeline_gpt as gpt  # noqa: E402 (the model and the text)


def args_of(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hook", default="pipezip:ef(q4)", help="none, pipezip:SPEC or powersgd:R")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--d", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--ctx", type=int, default=128)
    p.add_argument("--data", default="kjv", help="kjv or text:FILE")
    p.add_argument("--data-dir", default="data", help="where kjv.txt is kept")
    p.add_argument("--batch", type=int, default=8, help="windows per rank per step")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--eval-windows", type=int, default=512, help="held-out windows at the end (0: all)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", help="append the result as a JSON line")
    a = p.parse_args(argv)
    kind, _, arg = a.hook.partition(":")
    if kind not in ("none", "pipezip", "powersgd") or (kind != "none" and not arg):
        sys.exit(f"torch_ddp_gpt: --hook '{a.hook}' is not none, pipezip:SPEC or powersgd:R")
    if kind == "powersgd" and not arg.isdigit():
        sys.exit(f"torch_ddp_gpt: --hook powersgd:R takes a whole rank, not '{arg}'")
    return a


def powersgd_bytes(model, rank):
    """what one PowerSGD step sends per rank: P (m x R) and Q (n x R) for each
    matrix whose factors are smaller than it, the rest uncompressed (fp32)"""
    total = 0
    for p in model.parameters():
        if p.dim() > 1:
            m, n = p.shape[0], p.numel() // p.shape[0]
            r = min(rank, m, n)
            total += 4 * (r * (m + n) if r * (m + n) < m * n else m * n)
        else:
            total += 4 * p.numel()
    return total


def main():
    a = args_of()
    torch.set_num_threads(a.threads)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    ga = argparse.Namespace(data=a.data, data_dir=a.data_dir, ctx=a.ctx, d=a.d, layers=a.layers, heads=a.heads, seed=a.seed)
    (xtr, ytr), (xva, yva) = gpt.load_text(ga)
    model, _ = gpt.build(ga, 0, 1)  # the whole GPT on every rank
    ddp = DDP(model)
    kind, _, arg = a.hook.partition(":")
    comp = None
    if kind == "pipezip":
        import pipezip.torch as pzt
        comp = pzt.DDPCompression(arg, seed=a.seed)
        ddp.register_comm_hook(comp, pzt.ddp_hook)
    elif kind == "powersgd":
        from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as psgd
        state = psgd.PowerSGDState(process_group=None, matrix_approximation_rank=int(arg), start_powerSGD_iter=2,
                                   use_error_feedback=True, warm_start=True, random_seed=a.seed)
        ddp.register_comm_hook(state, psgd.powerSGD_hook)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=0.1)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 30) * 0.5 * (1 + math.cos(math.pi * s / a.steps)))
    rng = np.random.default_rng(a.seed * 1000 + rank)
    t0 = time.time()
    for step in range(1, a.steps + 1):
        idx = torch.from_numpy(rng.integers(0, len(xtr), a.batch))
        opt.zero_grad()
        loss = gpt.loss_fn(ddp(xtr[idx]), ytr[idx])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if rank == 0 and (step % 50 == 0 or step == a.steps):
            print(f"step {step}/{a.steps}  train loss {float(loss):.4f}  {time.time() - t0:.0f}s", flush=True)
    seconds = time.time() - t0
    model.eval()
    n = min(a.eval_windows, len(xva)) if a.eval_windows else len(xva)
    tot = 0.0
    with torch.no_grad():
        for i in range(0, n, 64):
            j = min(i + 64, n)
            tot += float(F.cross_entropy(model(xva[i:j]).reshape(-1, 256), yva[i:j].reshape(-1), reduction="sum"))
    val = tot / (n * a.ctx)
    fp32 = 4 * sum(p.numel() for p in model.parameters())
    if kind == "pipezip":
        sent = comp.stats()["bytes"] / a.steps
    elif kind == "powersgd":
        sent = (2 * fp32 + (a.steps - 2) * powersgd_bytes(model, int(arg))) / a.steps
    else:
        sent = fp32
    if rank == 0:
        rec = {"hook": a.hook, "seed": a.seed, "steps": a.steps, "ranks": world, "val_loss": val, "bytes_per_step": sent,
               "fp32_bytes_per_step": fp32, "ratio": fp32 / sent, "seconds_per_step": seconds / a.steps}
        print(f"{a.hook}: validation loss {val:.4f}; {sent / 1e6:.3f} MB sent per rank per step, {fp32 / sent:.1f}x less than fp32; "
              f"{seconds / a.steps:.3f} s a step", flush=True)
        if a.out:
            with open(a.out, "a") as f:
                f.write(json.dumps(rec) + "\n")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
