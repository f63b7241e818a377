# SPDX-License-Identifier: MIT
"""pipezip on PyTorch's autograd: a compressed boundary between two parts of
a model. The activation crosses through the forward codec and its gradient
back through the backward codec, each as a real pipezip frame (encoded,
counted, decoded), so a model trains with what a pipeline or split-learning
boundary would carry.

    import pipezip.torch as pzt
    b = pzt.Boundary(fwd="q4", bwd="q8")
    y = head(b(body(x)))            # the cut between body and head
    b.stats()                       # bytes each way, bits per element, steps

compress(x, fwd, bwd) is the same without a module (stateless codecs only:
a stateful codec's state belongs to one boundary, so give it a Boundary).
"""
import torch

from . import Codec

__all__ = ["Boundary", "compress"]


class _Side:
    """What crossed a boundary one way."""

    def __init__(self):
        self.bytes = self.elements = self.frames = 0
        self.sq_err = self.sq_norm = 0.0


class _Counter:
    def __init__(self):
        self.reset()

    def reset(self):
        self.fwd, self.bwd = _Side(), _Side()


def _through(link, t, ids, counter, side, measure):
    """t through link = (sender, receiver) Codecs; counted on counter.<side>"""
    if t.dtype not in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
        raise TypeError(f"pipezip: the boundary carries floating tensors, got {t.dtype}")
    x = t.detach()
    shape, dtype = x.shape, x.dtype
    flat = x.reshape(x.shape[0], -1) if x.dim() > 4 else x
    tx, rx = link
    x_hat, n = tx.roundtrip(flat, ids=ids, receiver=rx)
    y = torch.from_numpy(x_hat).reshape(shape)
    if dtype != torch.float32:
        y = y.to(dtype)
    if counter is not None:
        c = getattr(counter, side)
        c.bytes += n
        c.elements += x.numel()
        c.frames += 1
        if measure:
            xf = x.to(torch.float32)
            c.sq_err += float(((y.to(torch.float32) - xf) ** 2).sum())
            c.sq_norm += float((xf ** 2).sum())
    return y


class _Compress(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, fwd, bwd, ids, counter, measure):
        ctx.bwd, ctx.ids, ctx.counter, ctx.measure = bwd, ids, counter, measure
        return _through(fwd, x, ids, counter, "fwd", measure)

    @staticmethod
    def backward(ctx, g):
        return _through(ctx.bwd, g.contiguous(), ctx.ids, ctx.counter, "bwd", ctx.measure), None, None, None, None, None


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
    return _Compress.apply(x, _codec(fwd), _codec(bwd), ids, None, False)


class Boundary(torch.nn.Module):
    """A cut: forward() sends its input through `fwd` and the gradient back
    through `bwd`. Each Boundary owns its codecs (sender and receiver state
    of ef/ef21/aqsgd live here: for aqsgd pass the batch's sample ids) and
    counts what crossed: stats() gives bytes, bits per element and frames
    each way, and the relative error when measure_error=True (a pass over
    each tensor; off by default)."""

    def __init__(self, fwd="q4", bwd="q8", measure_error=False, seed=None):
        super().__init__()
        self.fwd_spec, self.bwd_spec = fwd, bwd
        # each direction's two ends: separate objects, so a stateful codec's
        # sender and receiver state stay apart as across a real link
        self._fwd = (Codec(fwd, seed=seed), Codec(fwd, seed=seed))
        self._bwd = (Codec(bwd, seed=seed), Codec(bwd, seed=seed))
        self.measure_error = measure_error
        self.counter = _Counter()

    def forward(self, x, ids=None):
        if not torch.is_grad_enabled() or not x.requires_grad:
            return _through(self._fwd, x, ids, self.counter, "fwd", self.measure_error)
        return _Compress.apply(x, self._fwd, self._bwd, ids, self.counter, self.measure_error)

    def stats(self):
        out = {"fwd": self.fwd_spec, "bwd": self.bwd_spec}
        for side in ("fwd", "bwd"):
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
