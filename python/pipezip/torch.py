# SPDX-License-Identifier: MIT
"""pipezip on PyTorch: a compressed autograd boundary, frames over
torch.distributed, and a pipeline of stages (pipezip.pipeline.Stage, also
here as Stage).

    import pipezip.torch as pzt
    b = pzt.Boundary(fwd="q4", bwd="q8")
    y = head(b(body(x)))            # the cut between body and head
    b.stats()                       # bytes each way, bits per element, steps

A Boundary crosses the activation through the forward codec and its
gradient back through the backward codec, each as a real pipezip frame
(encoded, counted, decoded). In training mode with gradients enabled it
runs the codecs as given (an ef/ef21/aqsgd codec moves its state); under
model.eval() or torch.no_grad() it runs their stateless base codec, leaves
the state alone and counts the frames apart (stats()["eval_*"]), as
`pipezip train` evaluates. Its codec state is in state_dict() (so
torch.save / torch.load resume with the frames an uninterrupted run
sends), and it deepcopies and pickles.

send()/recv() carry a tensor as a pipezip frame between two processes of
any torch.distributed process group (gloo; MPI where torch has it; NCCL
with the frame on the GPU), each end keeping its own codec.

compress(x, fwd, bwd) is a Boundary without a module (stateless codecs
only: a stateful codec's state belongs to one boundary).

Tensors may live on any device: they are staged through host memory
(pinned for CUDA) and come back on their device, at the cost of a copy
each way (docs/PYTHON.md).
"""
import os
import sys
import zlib

import numpy as np
import torch

from . import Codec
from .distributed import (Link, PeerLost, Wire, _Counter, _Side, _count, _decode_like, _encode, _mismatch, isend, recv, recv_frame,
                          send)
from .pipeline import Stage
from .ddp import DDPCompression, ddp_hook

__all__ = ["Boundary", "compress", "send", "isend", "recv", "recv_frame", "Link", "Wire", "PeerLost", "Stage", "DDPCompression", "ddp_hook"]


def _through(link, t, ids, counter, side, measure, tap=None):
    """t through link = (sender, receiver) Codecs; counted on counter.<side>"""
    tx, rx = link
    frame = _encode(tx, t, ids)
    if tap is not None:
        tap(side, bytes(frame))
    y = _decode_like(rx, frame, t.shape, t)
    _count(counter, side, t, y, len(frame), measure)
    return y


class _Compress(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, fwd, bwd, ids, counter, measure, tap):
        ctx.bwd, ctx.ids, ctx.counter, ctx.measure, ctx.tap = bwd, ids, counter, measure, tap
        return _through(fwd, x, ids, counter, "fwd", measure, tap)

    @staticmethod
    def backward(ctx, g):
        dx = _through(ctx.bwd, g.contiguous(), ctx.ids, ctx.counter, "bwd", ctx.measure, ctx.tap)
        return dx, None, None, None, None, None, None


class _Reuse(torch.autograd.Function):
    """the recomputation under activation checkpointing: the frame the first
    pass decoded, and the gradient back through the backward codec once"""

    @staticmethod
    def forward(ctx, x, held, bwd, ids, counter, measure, tap):
        ctx.bwd, ctx.ids, ctx.counter, ctx.measure, ctx.tap = bwd, ids, counter, measure, tap
        return held.clone()

    @staticmethod
    def backward(ctx, g):
        dx = _through(ctx.bwd, g.contiguous(), ctx.ids, ctx.counter, "bwd", ctx.measure, ctx.tap)
        return dx, None, None, None, None, None, None


_CHECKPOINT_FILE = os.path.join("torch", "utils", "checkpoint.py")
# where torch.utils.checkpoint recomputes a forward: the reentrant form in its
# Function's backward, the other in the saved tensors' unpack hook (torch 1.13;
# unpack_hook / recompute_fn in torch 2)
_RECOMPUTE = {"backward", "unpack", "unpack_hook", "recompute_fn"}


def _checkpoint_phase():
    """None outside torch.utils.checkpoint, "first" in its forward, "recompute"
    in its recomputation of that forward"""
    f, inside = sys._getframe(2), False
    while f is not None:
        c = f.f_code
        if c.co_filename.endswith(_CHECKPOINT_FILE):
            if c.co_name in _RECOMPUTE:
                return "recompute"
            inside = True
        f = f.f_back
    return "first" if inside else None


def _key(x, ids):
    """what identifies a checkpointed forward's input: its shape, dtype and bytes (CRC-32), and the ids"""
    a = x.detach()
    if a.device.type != "cpu":
        a = a.cpu()
    crc = zlib.crc32(a.contiguous().reshape(-1).view(torch.uint8).numpy())
    idk = None if ids is None else zlib.crc32(np.ascontiguousarray(ids.cpu().numpy() if torch.is_tensor(ids) else np.asarray(ids)))
    return tuple(x.shape), str(x.dtype), crc, idk


_shared = {}


def _codec(spec):
    """a stateless spec's shared (sender, receiver): one Codec for both"""
    c = _shared.get(spec)
    if c is None:
        c = Codec(spec)
        if c.stateful:
            raise ValueError(f"pipezip: '{spec}' keeps state; use a Boundary (one per cut) for it")
        _shared[spec] = c
    return c, c


def compress(x, fwd="q4", bwd="q8", ids=None):
    """x through the forward codec, its gradient through the backward codec
    (stateless specs). fwd="none", bwd="none" is an exact identity."""
    return _Compress.apply(x, _codec(fwd), _codec(bwd), ids, None, False, None)


class Boundary(torch.nn.Module):
    """A cut: forward() sends its input through `fwd` and the gradient back
    through `bwd`. Each Boundary owns its codecs (sender and receiver state
    of ef/ef21/aqsgd live here: for aqsgd pass the batch's sample ids) and
    counts what crossed: stats() gives bytes, bits per element and frames
    each way (training) and for evaluation, and the relative error when
    measure_error=True (a pass over each tensor; off by default).

    In eval mode or without gradients the forward runs the base codec
    (ef(topk:0.1) -> topk:0.1) and touches no state. state_dict() holds
    the four codecs' state and the counters. tap(side, frame), when given,
    sees every frame ("fwd", "bwd" or "eval") as bytes (a pickled
    Boundary leaves its tap behind)."""

    _STATE_VERSION = 1

    def __init__(self, fwd="q4", bwd="q8", measure_error=False, seed=None, max_samples=None, tap=None):
        super().__init__()
        self.fwd_spec, self.bwd_spec = fwd, bwd
        # each direction's two ends: separate objects, so a stateful codec's
        # sender and receiver state stay apart as across a real link
        self._fwd = (Codec(fwd, seed=seed, max_samples=max_samples), Codec(fwd, seed=seed, max_samples=max_samples))
        self._bwd = (Codec(bwd, seed=seed, max_samples=max_samples), Codec(bwd, seed=seed, max_samples=max_samples))
        # evaluation's codec: the forward codec's stateless base, as a value (pz_codec_create_base)
        self._eval = (self._fwd[0].base(seed=seed), self._fwd[0].base(seed=seed))
        self.measure_error = measure_error
        self.tap = tap
        self.counter = _Counter()
        self._held = {}  # activation checkpointing: the first pass's decoded output until its recomputation

    def forward(self, x, ids=None):
        if isinstance(x, torch.fx.Proxy):  # torch.fx: a leaf, called as itself in the traced graph
            args = (x,) if ids is None else (x, ids)
            return x.tracer.create_proxy("call_module", x.tracer.path_of_module(self), args, {})
        if torch.jit.is_tracing():
            raise RuntimeError(
                "pipezip.torch.Boundary cannot be traced by torch.jit.trace: its codecs run in C outside TorchScript's "
                "graph, which would record one batch's decoded tensor as a constant. Trace the modules on either side "
                "of it and keep the Boundary between them in Python, or use torch.fx.symbolic_trace (the Boundary is "
                "a leaf there)")
        if not self.training:
            return _through(self._eval, x, None, self.counter, "eval", self.measure_error, self.tap)
        phase = _checkpoint_phase()
        if phase is not None:
            return self._checkpointed(x, ids, phase)
        if not torch.is_grad_enabled():
            return _through(self._eval, x, None, self.counter, "eval", self.measure_error, self.tap)
        if not x.requires_grad:  # training traffic, but nothing to send back
            return _through(self._fwd, x, ids, self.counter, "fwd", self.measure_error, self.tap)
        return _Compress.apply(x, self._fwd, self._bwd, ids, self.counter, self.measure_error, self.tap)

    def _checkpointed(self, x, ids, phase):
        """Under torch.utils.checkpoint (either form): the first pass sends the
        step's training frame (the state moves once) and keeps what it decoded;
        the recomputation returns that, and the gradient goes back once"""
        key = _key(x, ids)
        pending = self.__dict__.setdefault("_held", {})  # (a Boundary pickled before it had one)
        if phase == "recompute":
            held = pending.pop(key, None)
            if held is None:
                raise RuntimeError(
                    "pipezip.torch.Boundary: activation checkpointing recomputed this boundary with an input that differs "
                    "from its first forward's (layers before it that are not deterministic, or preserve_rng_state=False with "
                    "dropout), so the frame it sent does not belong to it: make the recomputation deterministic, or put the "
                    "Boundary outside the checkpointed function")
            return _Reuse.apply(x, held, self._bwd, ids, self.counter, self.measure_error, self.tap)
        if torch.is_grad_enabled() and x.requires_grad:  # use_reentrant=False: this pass's graph gets the backward
            y = _Compress.apply(x, self._fwd, self._bwd, ids, self.counter, self.measure_error, self.tap)
        else:  # the reentrant form's first pass runs without gradients: still the step's training frame
            y = _through(self._fwd, x, ids, self.counter, "fwd", self.measure_error, self.tap)
        if len(pending) >= 64:
            raise RuntimeError(
                "pipezip.torch.Boundary: 64 checkpointed forwards are waiting for their recomputation (a backward never "
                "ran?): call backward on each checkpointed forward's loss, or run the Boundary outside the checkpoint")
        pending[key] = y.detach()
        return y

    def __prepare_scriptable__(self):  # torch.jit.script calls this first
        raise RuntimeError(
            "pipezip.torch.Boundary cannot be compiled by torch.jit.script: its codecs run in C and keep state "
            "TorchScript cannot hold. Script the modules on either side of it and keep the Boundary between them in "
            "Python, or use torch.fx.symbolic_trace (the Boundary is a leaf there)")

    def __getstate__(self):  # pickle: the tap is a hook of this process, not state
        d = super().__getstate__() if hasattr(super(), "__getstate__") else self.__dict__
        d = dict(d)
        d["tap"] = None
        d["_held"] = {}
        return d

    # the codecs' state travels with the module's parameters
    def get_extra_state(self):
        return {"version": self._STATE_VERSION, "fwd": self.fwd_spec, "bwd": self.bwd_spec,
                "codecs": [c.state() for c in self._fwd + self._bwd + self._eval],
                "counters": {s: getattr(self.counter, s).as_dict() for s in _Counter.SIDES}}

    def set_extra_state(self, state):
        if not isinstance(state, dict) or state.get("version") != self._STATE_VERSION:
            raise _mismatch("pipezip: this Boundary state is not one Boundary.state_dict() wrote (version "
                            f"{state.get('version') if isinstance(state, dict) else type(state).__name__})")
        for side, mine in (("fwd", self.fwd_spec), ("bwd", self.bwd_spec)):
            if state[side] != mine:
                raise _mismatch(f"pipezip: the saved Boundary's {side} codec is '{state[side]}', this one's is '{mine}'")
        for c, blob in zip(self._fwd + self._bwd + self._eval, state["codecs"]):
            c.load_state(blob)
        for s in _Counter.SIDES:
            setattr(self.counter, s, _Side.from_dict(state["counters"][s]))

    def stats(self):
        out = {"fwd": self.fwd_spec, "bwd": self.bwd_spec, "eval": self._eval[0].spec}
        for side in _Counter.SIDES:
            c = getattr(self.counter, side)
            out[side + "_bytes"] = c.bytes
            out[side + "_elements"] = c.elements
            out[side + "_frames"] = c.frames
            out[side + "_bits_per_element"] = 8.0 * c.bytes / c.elements if c.elements else None
            out[side + "_fp32_bytes"] = 4 * c.elements
            out[side + "_rel_error"] = (c.sq_err / c.sq_norm) ** 0.5 if self.measure_error and c.sq_norm else None
        return out

    def reset_stats(self):
        self.counter.reset()

    def extra_repr(self):
        return f"fwd={self.fwd_spec!r}, bwd={self.bwd_spec!r}"

