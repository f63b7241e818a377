# SPDX-License-Identifier: MIT
"""DDP communication hooks: DistributedDataParallel's gradient buckets
through a pipezip codec (also as pipezip.torch.DDPCompression and
pipezip.torch.ddp_hook).

    import pipezip.torch as pzt
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    comp = pzt.DDPCompression("ef(q4)")          # any stateless or ef() spec, or lowrank:R
    ddp.register_comm_hook(comp, pzt.ddp_hook)
    ...
    comp.stats()                                   # what this rank sent: bytes, frames, bits per element
    torch.save({"model": ddp.module.state_dict(), "comm": comp.state_dict()}, "ck.pt")

Each rank encodes its bucket (the gradients DDP flattened into one
tensor) as a frame (lowrank: each gradient matrix of the bucket as a frame
of its own, as PowerSGD compresses them, and the vectors and matrices too
small to gain uncompressed), the ranks all-gather their frames (one message
a bucket: the frames' lengths, then their bytes; the lengths first) and
every rank decodes each one with the codec's stateless base and
averages them in rank order, so all ranks step with the same gradient. A
stateful sender (ef(...): error feedback; lowrank's warm start: PowerSGD's)
keeps its state per bucket, in state_dict(). With "none" the result is
uncompressed DDP's bit for bit (two ranks). DDP rebuilds its buckets after
the first step: a bucket of another size starts a fresh state.
"""
import numpy as np
import torch
import torch.distributed as dist

from . import Codec
from .distributed import _Side, _encode, _mismatch


class DDPCompression:
    """The state of pipezip's DDP communication hook: the spec, a sender codec
    per bucket, the decoder, and what this rank sent."""

    _STATE_VERSION = 1

    def __init__(self, spec="ef(q4)", process_group=None, seed=0):
        probe = Codec(spec, seed=seed)
        if probe.stateful and not (probe.spec.startswith("ef(") or probe.spec.startswith("lowrank")):
            raise ValueError(f"pipezip: a DDP hook's codec keeps receiver state ('{spec}'): ef21 and aqsgd need one receiver per "
                        "sender, which an all-gather of frames does not give; use a stateless spec, ef(...) or lowrank:R")
        self.spec, self.seed, self.process_group = spec, seed, process_group
        self.decoder = Codec(spec, seed=seed)  # a receiving end: decodes every rank's frames (it keeps nothing)
        # lowrank: a matrix per gradient (its rank), the rest uncompressed
        base = probe.base_spec() if callable(probe.base_spec) else probe.base_spec
        self.rank = int(base.split(":")[1].split(",")[0]) if base.startswith("lowrank") else 0
        self.plain = Codec("none")
        self.codecs = {}  # (bucket index, elements) -> the sender's Codec
        self.sent = _Side()
        self.tap = None  # tap(bucket_index, gradient, frame): what this rank encoded (a copy) and its frame, as bytes

    def sender(self, index, numel):
        key = (int(index), int(numel))
        if key not in self.codecs:
            for k in [k for k in self.codecs if k[0] == key[0]]:  # the bucket was rebuilt: its old state goes
                del self.codecs[k]
            self.codecs[key] = Codec(self.spec, seed=self.seed)
        return self.codecs[key]

    def stats(self):
        s = self.sent
        return {"spec": self.spec, "bytes": s.bytes, "frames": s.frames, "elements": s.elements, "fp32_bytes": 4 * s.elements,
                "bits_per_element": 8.0 * s.bytes / s.elements if s.elements else None,
                "ratio": 4.0 * s.elements / s.bytes if s.bytes else None}

    def state_dict(self):
        return {"version": self._STATE_VERSION, "spec": self.spec, "seed": self.seed,
                "codecs": {f"{i}:{n}": c.state() for (i, n), c in self.codecs.items()}, "sent": self.sent.as_dict()}

    def load_state_dict(self, state):
        if not isinstance(state, dict) or state.get("version") != self._STATE_VERSION:
            raise _mismatch("pipezip: this is not a DDPCompression.state_dict()")
        if state["spec"] != self.spec:
            raise _mismatch(f"pipezip: the saved DDP hook's codec is '{state['spec']}', this one's is '{self.spec}'")
        self.codecs = {}
        for key, blob in state["codecs"].items():
            i, n = (int(v) for v in key.split(":"))
            c = Codec(self.spec, seed=state.get("seed", self.seed))
            c.load_state(blob)
            self.codecs[(i, n)] = c
        self.sent = _Side.from_dict(state["sent"])


def _bucket_tensor(bucket):
    return bucket.buffer() if hasattr(bucket, "buffer") else bucket.get_tensor()


def _exchange(state, frame):
    """every rank's frame (this one's among them), in rank order"""
    group = state.process_group
    world = dist.get_world_size(group)
    mine = torch.from_numpy(np.ascontiguousarray(frame))
    lens = [torch.zeros(1, dtype=torch.int64) for _ in range(world)]
    dist.all_gather(lens, torch.tensor([mine.numel()], dtype=torch.int64), group=group)
    top = max(int(n) for n in lens)
    padded = torch.zeros(top, dtype=torch.uint8)
    padded[:mine.numel()] = mine
    got = [torch.empty(top, dtype=torch.uint8) for _ in range(world)]
    dist.all_gather(got, padded, group=group)
    return [g[:int(n)].numpy() for g, n in zip(got, lens)]


def _send(state, items):
    """items: (key, t, tx), t this rank's tensor: each through its sender tx;
    the frames travel as one message per rank (their lengths, then their
    bytes: one exchange a bucket, however many tensors it holds), and every
    rank's frames are decoded and averaged into each t in rank order"""
    frames = []
    for key, t, tx in items:
        flat = t.detach()
        frame = _encode(tx, flat.to(torch.float32) if flat.device.type != "cpu" else flat, None)
        if state.tap is not None:
            state.tap(key, flat.clone(), bytes(frame))
        state.sent.bytes += len(frame)
        state.sent.elements += flat.numel()
        state.sent.frames += 1
        frames.append(np.frombuffer(bytes(frame), dtype=np.uint8))
    head = np.array([len(f) for f in frames], dtype="<u8").view(np.uint8)
    acc = [np.zeros(t.numel(), dtype=np.float32) for _, t, _ in items]
    for blob in _exchange(state, np.concatenate([head] + frames)):
        lens = blob[:8 * len(items)].view("<u8")
        at = 8 * len(items)
        for i, (_, _, tx) in enumerate(items):
            rx = state.decoder if tx is not state.plain else state.plain
            acc[i] += rx.decode(blob[at:at + int(lens[i])]).reshape(-1)
            at += int(lens[i])
    world = np.float32(dist.get_world_size(state.process_group))
    for a, (_, t, _) in zip(acc, items):
        if a.size:
            a /= world
        t.copy_(torch.from_numpy(a).reshape(t.shape).to(t.dtype))


def ddp_hook(state, bucket):
    """DistributedDataParallel.register_comm_hook(state, ddp_hook) with a
    DDPCompression state: the bucket's gradient through state.spec, averaged
    over the ranks."""
    if state.rank:  # lowrank: each gradient matrix on its own (a view of the bucket), the rest uncompressed
        items = []
        for i, g in enumerate(bucket.gradients()):
            rows = g.shape[0] if g.dim() > 1 else 1
            cols = g.numel() // max(rows, 1)
            if g.dim() > 1 and state.rank * (rows + cols) < rows * cols:
                items.append(((bucket.index(), i), g.view(rows, cols), state.sender(bucket.index() * 4096 + i, g.numel())))
            else:
                items.append(((bucket.index(), i), g.view(-1), state.plain))
        _send(state, items)
    else:  # the whole bucket as one frame
        g = _bucket_tensor(bucket)
        _send(state, [(bucket.index(), g.view(-1), state.sender(bucket.index(), g.numel()))])
    fut = torch.futures.Future()
    fut.set_result(_bucket_tensor(bucket))
    return fut
