#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A GPT trained as a pipeline of PyTorch processes, every boundary
compressed both ways with pipezip frames over torch.distributed (gloo).

    .venv/bin/python -m torch.distributed.run --nnodes 1 --master_addr 127.0.0.1 --nproc_per_node 4 -r 1 -t 1 \\
        examples/torch_pipeline_gpt.py --fwd q4:per=token --bwd q8 --steps 400

(the venv's Python, where pipezip is installed: the system's torchrun
cannot import it; docs/PYTHON.md)

One process per stage (pipezip.pipeline.Stage): gpt-tiny's architecture
(GPT-2: learned positions, pre-norm blocks with causal multi-head
attention and a tanh-GELU MLP, a final LayerNorm, a head tied to the token
table) cut into as many stages as processes, the blocks spread evenly (4
blocks on 4 stages: one each, as `pipezip train --cuts h.0,h.1,h.2`). The
first and last stages both hold the token table (input and head); their
gradients are summed over a two-rank group every step, as Megatron ties
embeddings. Text: the King James Bible from Debian's bible-kjv (extracted
once into DATA_DIR/kjv.txt, as `pipezip train --data kjv` does) or any
file (--data text:FILE); byte tokens, windows of --ctx bytes, the last
tenth held out. AdamW (decay on the dense matrices), cosine schedule with
warm-up, global gradient clipping over every stage.

The last stage prints progress and the end summary like `pipezip train`:
validation loss through the compressed boundaries (their base codecs) and
uncompressed, and the bytes per boundary and direction against float32.
--out DIR writes config.json, steps.jsonl, evals.jsonl, boundaries.jsonl,
summary.json.

--checkpoint-every N saves every stage's state (its part, AdamW, the
schedule, the Stage's codec states and byte counters, the batch sampler)
after every N steps, each rank to DIR/step-N/rank-R.pt, written whole
(a temporary file renamed). If a rank dies, the others stop with an error
naming the rank that stopped and the last checkpoint every rank saved;
--resume DIR continues from that one to exactly the uninterrupted run's
step losses, evaluations and byte counts.
--dump-first-step DIR writes each boundary's first frame each way and the
tensor it encodes (.npy), to check against the C engine
(`pipezip codec encode`).
"""
import argparse
import datetime
import json
import math
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F

import pipezip
from pipezip.pipeline import Stage, SCHEDULES
from pipezip.torch import PeerLost

KJV_COMMAND = ["/usr/bin/bible", "-l10000", "Gen1:1-Rev22:21"]


def args_of(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fwd", default="q4:per=token", help="activations' codec spec, or one per boundary, comma-free list with '/': q4/q8/q4")
    p.add_argument("--bwd", default="q8", help="gradients' codec spec (or one per boundary, '/'-separated)")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--d", type=int, default=128, help="width")
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--ctx", type=int, default=128, help="context (tokens)")
    p.add_argument("--data", default="kjv", help="kjv or text:FILE")
    p.add_argument("--data-dir", default="data", help="where kjv.txt is kept")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--micro-batches", type=int, default=4)
    p.add_argument("--schedule", choices=SCHEDULES, default="1f1b")
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--warmup", type=float, default=0.05, help="fraction of the steps")
    p.add_argument("--clip-norm", type=float, default=1.0)
    p.add_argument("--eval-every", type=int, default=100)
    p.add_argument("--eval-windows", type=int, default=256, help="held-out windows per evaluation during training")
    p.add_argument("--final-eval-windows", type=int, default=0, help="at the end (0: every held-out window)")
    p.add_argument("--link-bandwidth", help="emulate every link at this rate (200mbit, 1gbit)")
    p.add_argument("--link-latency", default="0", help="and this one-way latency (50ms)")
    p.add_argument("--link-model", default="duplex", choices=["duplex", "shared"],
                   help="duplex: each direction its own wire; shared: one inbound wire per stage, stop and wait (ProtocolNanoGPT's meter)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=1, help="torch threads per process")
    p.add_argument("--out", help="a run directory for the metrics")
    p.add_argument("--dump-first-step", help="a directory for the first step's frames and tensors")
    p.add_argument("--checkpoint-every", type=int, default=0, help="save every stage's state every N steps (0: never)")
    p.add_argument("--checkpoint-dir", help="where the checkpoints go (default: OUT/checkpoints)")
    p.add_argument("--resume", help="a checkpoint directory: go on from the last step every rank saved whole")
    p.add_argument("--timeout", type=float, default=300, help="seconds a collective waits for the other ranks")
    return p.parse_args(argv)


# ---- checkpoints ----------------------------------------------------------------
# What must match for a checkpoint to continue this run (the rest, such as
# --out or --eval-windows, may change).
SAME = ("fwd", "bwd", "layers", "d", "heads", "ctx", "data", "batch", "micro_batches", "schedule", "steps", "lr",
        "weight_decay", "warmup", "clip_norm", "seed", "eval_every")


def last_whole(d, stages):
    """the last step-N under d that every rank saved (None: none)"""
    best = None
    for name in os.listdir(d) if os.path.isdir(d) else ():
        m = re.fullmatch(r"step-(\d+)", name)
        if m and all(os.path.isfile(os.path.join(d, name, f"rank-{r}.pt")) for r in range(stages)):
            best = max(best or 0, int(m.group(1)))
    return best


def save(d, step, rank, state):
    os.makedirs(os.path.join(d, f"step-{step}"), exist_ok=True)
    path = os.path.join(d, f"step-{step}", f"rank-{rank}.pt")
    tmp = f"{path}.tmp"
    torch.save(state, tmp)
    os.replace(tmp, path)


def keep_until(path, step):
    """a JSONL metrics file cut back to the records of steps <= step"""
    if os.path.exists(path):
        rows = [l for l in open(path) if l.strip() and json.loads(l)["step"] <= step]
        with open(path, "w") as f:
            f.writelines(rows)


# ---- data ---------------------------------------------------------------------

def load_text(a):
    if a.data.startswith("text:"):
        path = a.data[5:]
    elif a.data == "kjv":
        path = os.path.join(a.data_dir, "kjv.txt")
        if not os.path.exists(path):
            if not os.path.exists(KJV_COMMAND[0]):
                sys.exit("torch_pipeline_gpt: the King James Bible needs Debian's bible-kjv and bible-kjv-text "
                         "(apt-get install bible-kjv bible-kjv-text), or give --data text:FILE")
            text = subprocess.run(KJV_COMMAND, check=True, capture_output=True).stdout
            os.makedirs(a.data_dir, exist_ok=True)
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "wb") as f:
                f.write(text)
            os.replace(tmp, path)
    else:
        sys.exit(f"torch_pipeline_gpt: unknown --data '{a.data}' (expected kjv or text:FILE)")
    try:
        with open(path, "rb") as f:
            raw = np.frombuffer(f.read(), dtype=np.uint8)
    except OSError as e:
        sys.exit(f"torch_pipeline_gpt: {e}")
    cut = len(raw) - len(raw) // 10

    def windows(b):  # windows of ctx tokens at stride ctx; targets shifted by one
        n = (len(b) - 1) // a.ctx
        if n < 1:
            sys.exit(f"torch_pipeline_gpt: {path} holds no window of {a.ctx} bytes in a split")
        x = torch.from_numpy(b[:n * a.ctx].astype(np.int64)).view(n, a.ctx)
        y = torch.from_numpy(b[1:n * a.ctx + 1].astype(np.int64)).view(n, a.ctx)
        return x, y
    return windows(raw[:cut]), windows(raw[cut:])


# ---- the model ------------------------------------------------------------------

class Block(torch.nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.fc, self.out = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)

    def forward(self, x):
        B, T, D = x.shape
        H = self.heads
        q, k, v = self.qkv(self.ln1(x)).split(D, dim=2)
        q, k, v = (t.view(B, T, H, D // H).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(D // H)
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        att = att.masked_fill(mask, float("-inf")).softmax(-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(B, T, D))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class Part(torch.nn.Module):
    """Stage r's part: the token and position tables on the first, its
    blocks, the final LayerNorm and the head on the last."""

    def __init__(self, a, blocks, first, last):
        super().__init__()
        self.first, self.last = first, last
        if first:
            self.wte, self.wpe = torch.nn.Embedding(256, a.d), torch.nn.Embedding(a.ctx, a.d)
        self.blocks = torch.nn.ModuleList(blocks)
        if last:
            self.ln_f = torch.nn.LayerNorm(a.d)
            self.head = torch.nn.Parameter(torch.empty(256, a.d))

    def forward(self, x):
        if self.first:
            x = self.wte(x) + self.wpe(torch.arange(x.shape[1], device=x.device))
        for b in self.blocks:
            x = b(x)
        if self.last:
            x = F.linear(self.ln_f(x), self.head)
        return x


def build(a, rank, stages):
    """every rank builds the whole model from the seed and keeps its part"""
    torch.manual_seed(a.seed)
    blocks = [Block(a.d, a.heads) for _ in range(a.layers)]
    wte, wpe = torch.nn.Embedding(256, a.d), torch.nn.Embedding(a.ctx, a.d)
    for m in [wte, wpe] + blocks:  # GPT-2's initialisation
        for name, p in m.named_parameters():
            if p.dim() == 2:
                std = 0.02 / math.sqrt(2 * a.layers) if name.endswith(("proj.weight", "out.weight")) else 0.02
                torch.nn.init.normal_(p, 0.0, std)
            elif name.endswith("bias"):
                torch.nn.init.zeros_(p)
    per = [a.layers // stages + (1 if r < a.layers % stages else 0) for r in range(stages)]
    lo = sum(per[:rank])
    part = Part(a, blocks[lo:lo + per[rank]], rank == 0, rank == stages - 1)
    if part.first:
        part.wte.load_state_dict(wte.state_dict())
        part.wpe.load_state_dict(wpe.state_dict())
    if part.last:
        with torch.no_grad():
            part.head.copy_(wte.weight)  # tied: the same values, gradients summed every step
    return part, per


def loss_fn(logits, y):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


def main():
    a = args_of()
    if a.batch % a.micro_batches:
        sys.exit(f"torch_pipeline_gpt: --batch {a.batch} does not split into {a.micro_batches} micro-batches")
    for flag, w in (("--eval-windows", a.eval_windows), ("--final-eval-windows", a.final_eval_windows)):
        if w and w < a.micro_batches:
            sys.exit(f"torch_pipeline_gpt: {flag} {w} is fewer windows than the {a.micro_batches} micro-batches an evaluation "
                     f"batch splits into: give at least {a.micro_batches} (or 0: every held-out window)")
    torch.set_num_threads(a.threads)
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=a.timeout))
    rank, S = dist.get_rank(), dist.get_world_size()
    ckpt = a.checkpoint_dir or (os.path.join(a.out, "checkpoints") if a.out else None)
    if a.checkpoint_every and not ckpt:
        sys.exit("torch_pipeline_gpt: --checkpoint-every needs --checkpoint-dir or --out")
    if a.layers < S:
        sys.exit(f"torch_pipeline_gpt: {a.layers} blocks cannot fill {S} stages")
    (xtr, ytr), (xva, yva) = load_text(a)
    part, per = build(a, rank, S)
    fwd = a.fwd.split("/") if "/" in a.fwd else a.fwd
    bwd = a.bwd.split("/") if "/" in a.bwd else a.bwd
    dump = a.dump_first_step
    if dump:
        os.makedirs(dump, exist_ok=True)

    def tap(kind, boundary, m, tensor, frame):
        if dump and stage.steps == 0 and m == 0 and kind in ("fwd", "bwd"):
            x = tensor.detach().to(torch.float32).contiguous().numpy()
            np.save(os.path.join(dump, f"b{boundary}_{kind}.npy"), x)
            with open(os.path.join(dump, f"b{boundary}_{kind}.pzf"), "wb") as f:
                f.write(frame.tobytes())
    stage = Stage(part, fwd=fwd, bwd=bwd, micro_batches=a.micro_batches, schedule=a.schedule, tap=tap, max_samples=len(xtr),
                  link_bandwidth=a.link_bandwidth, link_latency=a.link_latency, link_model=a.link_model)
    tie = dist.new_group([0, S - 1]) if S > 1 else None
    tied = (part.wte.weight if part.first else part.head) if S > 1 and (part.first or part.last) else None
    dense = {n: p.dim() == 2 and "wte" not in n and "wpe" not in n and n != "head" for n, p in part.named_parameters()}
    decay = [p for n, p in part.named_parameters() if dense[n]]
    rest = [p for n, p in part.named_parameters() if not dense[n]]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.weight_decay}, {"params": rest, "weight_decay": 0.0}],
                            lr=a.lr)
    warm = max(1, int(a.warmup * a.steps))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: (s + 1) / warm if s < warm else 0.5 * (1 + math.cos(math.pi * (s - warm) / max(1, a.steps - warm))))
    if S == 1:  # one stage: the head is the token table itself
        part.head = part.wte.weight
    rng = np.random.default_rng(a.seed)  # the same batches on every rank
    start, loss = 0, None
    if a.resume:
        found = [last_whole(a.resume, S) if rank == 0 else None]
        dist.broadcast_object_list(found, src=0)  # every rank goes on from the same step
        if found[0] is None:
            sys.exit(f"torch_pipeline_gpt: rank {rank}: no checkpoint in {a.resume} that all {S} ranks saved whole")
        st = torch.load(os.path.join(a.resume, f"step-{found[0]}", f"rank-{rank}.pt"))
        differ = [k for k in SAME if st["args"].get(k) != getattr(a, k)]
        if st["stages"] != S or differ:
            what = ", ".join(f"--{k.replace('_', '-')} {st['args'][k]}" for k in differ) or f"{st['stages']} stages"
            sys.exit(f"torch_pipeline_gpt: rank {rank}: {a.resume}/step-{found[0]} was saved by another run ({what})")
        part.load_state_dict(st["part"])
        opt.load_state_dict(st["opt"])
        sched.load_state_dict(st["sched"])
        stage.load_state_dict(st["stage"])
        rng.bit_generator.state = st["rng"]
        start, loss = st["step"], st["loss"]
        if rank == S - 1:
            print(f"resumed from {a.resume}/step-{start}", flush=True)
    out = a.out if rank == S - 1 else None
    if out:
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "config.json"), "w") as f:
            json.dump(dict(vars(a), stages=S, blocks_per_stage=per, model=f"gpt:layers={a.layers},d={a.d},heads={a.heads},ctx={a.ctx}"), f, indent=1)
        for name in ("steps.jsonl", "evals.jsonl"):  # a resumed run keeps what came before its checkpoint
            keep_until(os.path.join(out, name), start) if start else open(os.path.join(out, name), "w").close()
        evals = open(os.path.join(out, "evals.jsonl"), "a")
        steplog = open(os.path.join(out, "steps.jsonl"), "a")
    kill = os.environ.get("PZ_TEST_KILL_RANK_AT")  # tests: "R:K" SIGKILLs rank R right after step K (a state, not a time)
    kill = tuple(map(int, kill.split(":"))) if kill else None

    def evaluate(windows, plain):
        # batches of --batch, the last one shorter (a whole number of
        # micro-batches): the mean over every window evaluated
        n = min(windows, len(xva)) if windows else len(xva)
        n -= n % a.micro_batches
        tot = 0.0
        for i in range(0, n, a.batch):
            b = min(a.batch, n - i)
            r = stage.evaluate(inputs=xva[i:i + b] if stage.first else None,
                               targets=yva[i:i + b] if stage.last else None, loss_fn=loss_fn, plain=plain)
            tot += r * b if stage.last else 0.0
        return tot / n

    # torchrun ends every rank when one fails (SIGTERM): a rank finishes the
    # step it is in (and its checkpoint), or meets the lost peer, then says
    # where it stopped; the handler only asks
    stop = {"asked": False}
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.update(asked=True))
    t0 = time.time()
    try:
        v, vp, rows, loss = train(a, stage, part, opt, sched, rng, xtr, ytr, evaluate, tied, tie, S, start, loss,
                                  out and (evals, steplog), ckpt, rank, kill, t0, stop)
    except (PeerLost, RuntimeError, Stopped) as e:
        if isinstance(e, PeerLost):
            why = f"rank {e.peer} stopped while this rank {e.what} it"
        elif isinstance(e, Stopped):
            why = "stopped by SIGTERM (torchrun stops every rank once one has failed: its report names that one)"
        elif re.search(r"Connection (closed|reset)|Broken pipe|Timed out", str(e)):  # gloo, in a collective
            why = f"another rank stopped during a collective ({str(e).splitlines()[0]})"
        else:
            raise
        whole = last_whole(ckpt, S) if ckpt else None
        sys.exit(f"torch_pipeline_gpt: rank {rank}: step {stage.steps + 1}: {why}; "
                 + (f"the last checkpoint every rank saved whole is {ckpt}/step-{whole} (go on with --resume {ckpt})"
                    if whole else "no checkpoint was saved whole (--checkpoint-every N keeps one)"))
    if stage.last:
        finish(a, stage, rows, v, vp, loss, S, t0, out, out and evals)
    dist.destroy_process_group()


class Stopped(Exception):
    """SIGTERM asked this rank to stop; it did at a step's end"""


def train(a, stage, part, opt, sched, rng, xtr, ytr, evaluate, tied, tie, S, start, loss, logs, ckpt, rank, kill, t0, stop):
    """steps start+1 .. a.steps; returns the last evaluation (compressed,
    plain) and every boundary's traffic"""
    v = vp = None
    for step in range(start + 1, a.steps + 1):
        idx = torch.from_numpy(rng.integers(0, len(xtr), a.batch))
        opt.zero_grad(set_to_none=False)
        loss = stage.train_step(inputs=xtr[idx] if stage.first else None, targets=ytr[idx] if stage.last else None,
                                loss_fn=loss_fn, ids=idx)  # the windows' ids: aqsgd keeps its state per sample
        if tied is not None:
            dist.all_reduce(tied.grad, group=tie)
        if a.clip_norm > 0:  # the global norm over every stage (the tied table counted once)
            sq = sum(float((p.grad ** 2).sum()) for n, p in part.named_parameters() if not (S > 1 and n == "head"))
            t = torch.tensor([sq], dtype=torch.float64)
            dist.all_reduce(t)
            norm = math.sqrt(float(t))
            if norm > a.clip_norm:
                for p in part.parameters():
                    p.grad.mul_(a.clip_norm / (norm + 1e-6))
        opt.step()
        sched.step()
        if logs:
            logs[1].write(json.dumps({"step": step, "train_loss": loss}) + "\n")
            logs[1].flush()
        if step % a.eval_every == 0 or step == a.steps:
            last = step == a.steps
            v = evaluate(a.final_eval_windows if last else a.eval_windows, False)
            vp = evaluate(a.final_eval_windows if last else a.eval_windows, True) if last else None
            if stage.last:
                rec = {"step": step, "train_loss": loss, "val_loss": v, "seconds": round(time.time() - t0, 2)}
                if vp is not None:
                    rec["val_loss_plain"] = vp
                print(f"step {step}/{a.steps}  train loss {loss:.4f}  val loss {v:.4f} (compressed)"
                      + (f", {vp:.4f} (plain)" if vp is not None else "") + f"  {time.time() - t0:.0f}s", flush=True)
                if logs:
                    logs[0].write(json.dumps(rec) + "\n")
                    logs[0].flush()
        if a.checkpoint_every and step % a.checkpoint_every == 0 and step < a.steps:
            save(ckpt, step, rank, {"step": step, "loss": loss, "stages": S, "args": {k: getattr(a, k) for k in SAME},
                                    "part": part.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict(),
                                    "stage": stage.state_dict(), "rng": rng.bit_generator.state})
        if kill == (rank, step):
            os.kill(os.getpid(), signal.SIGKILL)
        if stop["asked"]:
            raise Stopped()
    return v, vp, stage.boundary_stats(), loss


def finish(a, stage, rows, v, vp, loss, S, t0, out, evals):
    """the last stage's summary: printed, and into --out"""
    fb = sum(r["fwd_bytes"] for r in rows)
    bb = sum(r["bwd_bytes"] for r in rows)
    f32 = sum(r["fwd_fp32_bytes"] + r["bwd_fp32_bytes"] for r in rows)
    print(f"finished: gpt:layers={a.layers},d={a.d},heads={a.heads},ctx={a.ctx} in {S} stages ({a.schedule}, "
          f"{a.micro_batches} micro-batches), {a.steps} steps in {time.time() - t0:.0f}s")
    print(f"validation loss {v:.4f} through the compressed boundaries, {vp:.4f} uncompressed")
    if stage.links_emulated:
        print(f"links emulated at {a.link_bandwidth or 'unlimited'}, {a.link_latency} latency, {a.link_model}: "
              f"the last stage waited {stage.waited():.1f}s for frames on the wire")
    if rows:
        print(f"{fb / 1e6:.2f} MB forward + {bb / 1e6:.2f} MB backward, {f32 / max(1, fb + bb):.2f}x less than fp32")
        print(f"  {'boundary':>8}  {'fwd codec':<20} {'bytes':>10} {'ratio':>7}  {'bwd codec':<20} {'bytes':>10} {'ratio':>7}")
        for r in rows:
            print(f"  {r['boundary']:>8}  {r['fwd']:<20} {r['fwd_bytes'] / 1e6:>8.2f}MB {r['fwd_ratio']:>6.2f}x  "
                  f"{r['bwd']:<20} {r['bwd_bytes'] / 1e6:>8.2f}MB {r['bwd_ratio']:>6.2f}x")
    if out:
        evals.close()
        with open(os.path.join(out, "boundaries.jsonl"), "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
        with open(os.path.join(out, "summary.json"), "w") as f:
            json.dump({"waited_seconds": stage.waited(), "val_loss": v, "val_loss_plain": vp, "train_loss": loss, "steps": a.steps,
                       "stages": S, "fwd_bytes": fb, "bwd_bytes": bb, "fp32_bytes": f32,
                       "ratio": f32 / (fb + bb) if fb + bb else None, "seconds": time.time() - t0,
                       "library": pipezip.library_version()}, f, indent=1)


if __name__ == "__main__":
    main()
