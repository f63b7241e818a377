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
import numpy as np
import torch
import torch.distributed as dist

from . import Codec, Error, empty, _as_f32

__all__ = ["Boundary", "compress", "send", "isend", "recv", "recv_frame", "Link", "Stage"]


class _Side:
    """What crossed a boundary one way."""

    def __init__(self):
        self.bytes = self.elements = self.frames = 0
        self.sq_err = self.sq_norm = 0.0

    def as_dict(self):
        return dict(self.__dict__)

    @classmethod
    def from_dict(cls, d):
        s = cls()
        s.__dict__.update(d)
        return s


class _Counter:
    SIDES = ("fwd", "bwd", "eval")

    def __init__(self):
        self.reset()

    def reset(self):
        self.fwd, self.bwd, self.eval = _Side(), _Side(), _Side()


def _encode(tx, t, ids):
    """t (any device, any float dtype) as tx's frame (a uint8 array)"""
    if t.dtype not in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
        raise TypeError(f"pipezip: a boundary carries floating tensors, got {t.dtype}")
    x = t.detach()
    if x.dim() > 4:
        x = x.reshape(x.shape[0], -1)
    a = _as_f32(x)
    buf = empty(tx.max_frame_bytes(a.shape), np.uint8)
    n = tx.encode_into(a, buf, ids=ids)
    return buf[:n]


def _to_like(host, like):
    """a float32 host tensor on like's device (non-blocking from pinned memory) and in its dtype"""
    if like.device.type != "cpu":
        host = host.to(like.device, non_blocking=host.is_pinned())
    return host if like.dtype == torch.float32 else host.to(like.dtype)


def _decode_like(rx, frame, shape, like):
    """frame decoded by rx into a tensor of `shape` on like's device and dtype"""
    host = torch.empty(int(np.prod(shape, dtype=np.int64)), dtype=torch.float32, pin_memory=like.device.type == "cuda")
    rx.decode(frame, out=host)
    return _to_like(host.reshape(shape), like)


def _count(counter, side, t, y, n, measure):
    if counter is None:
        return
    c = getattr(counter, side)
    c.bytes += n
    c.elements += t.numel()
    c.frames += 1
    if measure:
        xf = t.detach().to(torch.float32)
        c.sq_err += float(((y.to(torch.float32) - xf) ** 2).sum())
        c.sq_norm += float((xf ** 2).sum())


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


def _mismatch(msg):
    e = Error.__new__(Error)
    Exception.__init__(e, msg)
    e.status, e.frame_error = "PZ_ERR_ARG", None
    return e


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
        base = self._fwd[0].base_spec
        self._eval = (Codec(base, seed=seed), Codec(base, seed=seed))
        self.measure_error = measure_error
        self.tap = tap
        self.counter = _Counter()

    def forward(self, x, ids=None):
        if not self.training or not torch.is_grad_enabled():
            return _through(self._eval, x, None, self.counter, "eval", self.measure_error, self.tap)
        if not x.requires_grad:  # training traffic, but nothing to send back
            return _through(self._fwd, x, ids, self.counter, "fwd", self.measure_error, self.tap)
        return _Compress.apply(x, self._fwd, self._bwd, ids, self.counter, self.measure_error, self.tap)

    def __getstate__(self):  # pickle: the tap is a hook of this process, not state
        d = super().__getstate__() if hasattr(super(), "__getstate__") else self.__dict__
        d = dict(d)
        d["tap"] = None
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


# ---- frames over torch.distributed --------------------------------------

def _wire(group):
    """the device a process group's tensors must be on (NCCL: the GPU)"""
    if dist.get_backend(group) == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


class _Sent:
    """An isend in flight: wait() before its codec's next frame is needed
    elsewhere; it keeps the frame's buffers alive until then. .frame is
    the frame (a uint8 array), .bytes its length."""

    def __init__(self, works, keep, frame):
        self._works, self._keep, self.frame, self.bytes = works, keep, frame, len(frame)

    def wait(self):
        for w in self._works:
            w.wait()
        self._works, self._keep = [], None
        return self.bytes

    def is_completed(self):
        return all(w.is_completed() for w in self._works)


class Link:
    """An emulated link one way, by one of pipezip's two wire models
    (model="duplex" or "shared", as pipezip train --link-model).
    duplex: frames leave the sender one after another at `bandwidth` bits
    per second and arrive `latency` seconds later; the sender stamps each
    frame's arrival time (depart(nbytes)), the receiver waits until then
    (arrive(t, nbytes)). shared (ProtocolNanoGPT's meter): the sender stamps
    the time it sent; the receiver bills its one inbound wire (`wire`, a
    Wire shared by the links it receives on), held for each message's
    transmission and latency in the order it takes them: a message arrives
    at max(the wire's last arrival, sent) + bits / bandwidth + latency.
    Both ends must share a clock (one machine, or synchronised clocks).
    bandwidth: bits/s or a string "200mbit", "1gbit", "10kbit"; latency:
    seconds or "50ms", "2s"."""

    MODELS = ("duplex", "shared")

    def __init__(self, bandwidth=None, latency=0.0, clock=None, sleep=None, model="duplex", wire=None):
        import time
        if model not in Link.MODELS:
            raise ValueError(f"pipezip: link model '{model}' (expected duplex or shared)")
        self.bandwidth = _rate(bandwidth) if bandwidth is not None else None
        self.latency = _seconds(latency)
        self.clock, self.sleep = clock or time.time, sleep or time.sleep
        self.model = model
        self.wire = wire if wire is not None else Wire()
        self.free = 0.0  # duplex: when the sender's end is free for the next frame
        self.waited = 0.0

    def _busy(self, nbytes):
        return 8.0 * nbytes / self.bandwidth if self.bandwidth else 0.0

    def depart(self, nbytes):
        """duplex: the arrival time of a frame of nbytes sent now; shared: now"""
        now = self.clock()
        if self.model == "shared":
            return now
        start = max(now, self.free)
        self.free = start + self._busy(nbytes)
        return self.free + self.latency

    def arrive(self, at, nbytes=0):
        """wait until the frame stamped `at` (depart's) arrives"""
        if self.model == "shared":
            at = self.wire.take(at, self._busy(nbytes) + self.latency)
        now = self.clock()
        if at > now:
            self.sleep(at - now)
            self.waited += at - now
        return at


class Wire:
    """A receiver's one inbound wire (the shared model): the last arrival on it."""

    def __init__(self):
        self.last = 0.0

    def take(self, sent, hold):
        """a message sent at `sent` holding the wire `hold` seconds: its arrival"""
        self.last = max(self.last, sent) + hold
        return self.last


_UNITS = {"bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9}


def _rate(v):
    import re
    m = re.fullmatch(r"\s*([0-9.]+(?:e[+-]?[0-9]+)?)\s*(bit|kbit|mbit|gbit)?\s*", str(v).lower())
    try:
        r = float(m.group(1)) * _UNITS[m.group(2) or "bit"] if m else None
    except ValueError:
        r = None
    if r is None or not r > 0:
        raise ValueError(f"pipezip: link bandwidth '{v}': expected a positive rate in bits per second such as 200mbit, "
                         "1gbit or 1e8")
    return r


def _seconds(v):
    if isinstance(v, (int, float)):
        s = float(v)
    else:
        t = str(v).strip().lower()
        try:
            s = float(t[:-2]) / 1e3 if t.endswith("ms") else float(t[:-1]) if t.endswith("s") else float(t)
        except ValueError:
            raise ValueError(f"pipezip: link latency '{v}': expected seconds such as 50ms or 0.05") from None
    if not s >= 0:
        raise ValueError(f"pipezip: link latency {v} must not be negative")
    return s


def _frame_message(codec, tensor, ids, group, link):
    frame = _encode(codec, tensor, ids)
    dev = _wire(group)
    at = max(link.depart(len(frame)), 1e-9) if link is not None else 0.0
    # the header: the frame's length and its arrival time on an emulated link (ns; 0: none)
    head = torch.tensor([len(frame), int(at * 1e9)], dtype=torch.int64, device=dev)
    body = torch.from_numpy(frame)
    if dev.type != "cpu":
        body = body.to(dev)
    return head, body, frame


def isend(tensor, dst, codec, group=None, ids=None, tag=0, link=None):
    """Send tensor to rank dst as codec's frame without waiting: two
    messages (a header of two int64: the frame's length and, over an
    emulated Link, its arrival time; then its bytes). Returns a handle
    whose wait() returns the frame's length."""
    head, body, frame = _frame_message(codec, tensor, ids, group, link)
    works = [dist.isend(head, dst, group=group, tag=tag), dist.isend(body, dst, group=group, tag=tag)]
    return _Sent(works, (head, body), frame)


def send(tensor, dst, codec, group=None, ids=None, tag=0, link=None):
    """Send tensor to rank dst as codec's frame (blocking); returns its length."""
    return isend(tensor, dst, codec, group=group, ids=ids, tag=tag, link=link).wait()


_FRAME_MAX = 1 << 34


def recv_frame(src, group=None, tag=0, link=None):
    """The next frame from rank src, as bytes (undecoded); over an emulated
    Link, not before its arrival time."""
    dev = _wire(group)
    head = torch.empty(2, dtype=torch.int64, device=dev)
    dist.recv(head, src, group=group, tag=tag)
    n, at = int(head[0]), int(head[1])
    if not 64 <= n <= _FRAME_MAX:
        raise _mismatch(f"pipezip: rank {src} announced a frame of {n} bytes; not a pipezip frame message")
    body = torch.empty(n, dtype=torch.uint8, device=dev)
    dist.recv(body, src, group=group, tag=tag)
    if link is not None and at:
        link.arrive(at / 1e9, n)
    return body.cpu().numpy().tobytes()


def recv(src, codec, group=None, tag=0, like=None, out=None, link=None):
    """Receive a frame from rank src and decode it with codec (this end's
    receiver: a frame of another spec raises pipezip.Error naming both).
    Returns a float32 tensor of the frame's shape (on like's device and in
    its dtype when like is given; into out when given), and the frame's
    length: (tensor, nbytes)."""
    frame = recv_frame(src, group=group, tag=tag, link=link)
    if out is not None:
        codec.decode(frame, out=out)
        return out, len(frame)
    y = torch.from_numpy(codec.decode(frame))
    return (y if like is None else _to_like(y, like)), len(frame)


def __getattr__(name):  # pipezip.torch.Stage is pipezip.pipeline.Stage (imported on use: it imports this)
    if name == "Stage":
        from .pipeline import Stage
        return Stage
    raise AttributeError(f"module 'pipezip.torch' has no attribute '{name}'")
