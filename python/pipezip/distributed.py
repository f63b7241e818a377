# SPDX-License-Identifier: MIT
"""pipezip frames over torch.distributed: send()/recv() of a tensor as a
pipezip frame between two processes of any process group, the emulated
links (Link, Wire: pipezip's own arrival rule, pz_link_arrival), and what
a boundary counts. pipezip.torch and pipezip.pipeline both build on it;
it imports neither (they are re-exported from pipezip.torch)."""
import numpy as np
import torch
import torch.distributed as dist

from . import Error, empty, _as_f32, link_arrival, parse_bandwidth, parse_duration

__all__ = ["send", "isend", "recv", "recv_frame", "Link", "Wire", "PeerLost"]


class PeerLost(ConnectionError):
    """A peer stopped (its process died or closed its connection) while
    this process exchanged a frame with it. .peer is its rank (global, as
    torch.distributed's send and recv take it), .what the exchange. The transport's own error is the __cause__."""

    def __init__(self, peer, what, cause):
        self.peer, self.what = peer, what
        super().__init__(f"pipezip: rank {peer} stopped while this rank {what} it ({cause})")


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


def _mismatch(msg):
    e = Error.__new__(Error)
    Exception.__init__(e, msg)
    e.status, e.frame_error = "PZ_ERR_ARG", None
    return e


def _wire(group):
    """the device a process group's tensors must be on (NCCL: the GPU)"""
    if dist.get_backend(group) == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


class _Sent:
    """An isend in flight: wait() before its codec's next frame is needed
    elsewhere; it keeps the frame's buffers alive until then. .frame is
    the frame (a uint8 array), .bytes its length."""

    def __init__(self, works, keep, frame, peer=None):
        self._works, self._keep, self.frame, self.bytes, self._peer = works, keep, frame, len(frame), peer

    def wait(self):
        for w in self._works:
            try:
                w.wait()
            except RuntimeError as e:
                raise PeerLost(self._peer, "sent a frame to", e) from e
        self._works, self._keep = [], None
        return self.bytes

    def is_completed(self):
        return all(w.is_completed() for w in self._works)


class Link:
    """An emulated link one way, by one of pipezip's two wire models
    (model="duplex" or "shared", as pipezip train --link-model), through
    the library's own arrival rule (pz_link_arrival, as pipezip train).
    duplex: frames leave the sender one after another at `bandwidth` bits
    per second and arrive `latency` seconds later; the sender stamps each
    frame's arrival time (depart(nbytes)), the receiver waits until then
    (arrive(t, nbytes)). shared (ProtocolNanoGPT's meter): the sender stamps
    the time it sent; the receiver bills its one inbound wire (`wire`, a
    Wire shared by the links it receives on), held for each message's
    transmission and latency in the order it takes them: a message arrives
    at max(the wire's last arrival, sent) + bits / bandwidth + latency.
    Both ends must share a clock (one machine, or synchronised clocks).
    bandwidth: bits/s (0: unlimited) or text as pipezip train reads it
    ("200mbit", "1gbit", "12.5MB/s"); latency: seconds or text ("50ms",
    "250us")."""

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

    def depart(self, nbytes):
        """duplex: the arrival time of a frame of nbytes sent now; shared: now"""
        now = self.clock()
        if self.model == "shared":
            return now
        at, self.free = link_arrival("duplex", self.free, now, nbytes, self.bandwidth, self.latency)
        return at

    def arrive(self, at, nbytes=0):
        """wait until the frame stamped `at` (depart's) arrives"""
        if self.model == "shared":
            at, self.wire.last = link_arrival("shared", self.wire.last, at, nbytes, self.bandwidth, self.latency)
        now = self.clock()
        if at > now:
            self.sleep(at - now)
            self.waited += at - now
        return at


class Wire:
    """A receiver's one inbound wire (the shared model): the last arrival on it."""

    def __init__(self):
        self.last = 0.0


def _rate(v):
    """bits/s: a number as it is, text through pipezip's own grammar"""
    r = float(v) if isinstance(v, (int, float)) else parse_bandwidth(v)
    if not r >= 0:
        raise ValueError(f"pipezip: link bandwidth {v} must not be negative")
    return r


def _seconds(v):
    """seconds: a number as it is, text through pipezip's own grammar"""
    s = float(v) if isinstance(v, (int, float)) else parse_duration(v)
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
    try:
        works = [dist.isend(head, dst, group=group, tag=tag), dist.isend(body, dst, group=group, tag=tag)]
    except RuntimeError as e:
        raise PeerLost(dst, "sent a frame to", e) from e
    return _Sent(works, (head, body), frame, dst)


def send(tensor, dst, codec, group=None, ids=None, tag=0, link=None):
    """Send tensor to rank dst as codec's frame (blocking); returns its length."""
    return isend(tensor, dst, codec, group=group, ids=ids, tag=tag, link=link).wait()


_FRAME_MAX = 1 << 34


def recv_frame(src, group=None, tag=0, link=None):
    """The next frame from rank src, as bytes (undecoded); over an emulated
    Link, not before its arrival time."""
    dev = _wire(group)
    head = torch.empty(2, dtype=torch.int64, device=dev)
    try:
        dist.recv(head, src, group=group, tag=tag)
    except RuntimeError as e:
        raise PeerLost(src, "waited for a frame from", e) from e
    n, at = int(head[0]), int(head[1])
    if not 64 <= n <= _FRAME_MAX:
        raise _mismatch(f"pipezip: rank {src} announced a frame of {n} bytes; not a pipezip frame message")
    body = torch.empty(n, dtype=torch.uint8, device=dev)
    try:
        dist.recv(body, src, group=group, tag=tag)
    except RuntimeError as e:
        raise PeerLost(src, "waited for a frame from", e) from e
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
