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
import numpy as np
import torch

from . import Codec

__all__ = ["Boundary", "compress"]


class _Counter:
    def __init__(self):
        self.reset()

    def reset(self):
        self.fwd_bytes = self.bwd_bytes = 0
        self.fwd_elements = self.bwd_elements = 0
        self.fwd_frames = self.bwd_frames = 0
        self.fwd_sq_err = self.fwd_sq_norm = self.bwd_sq_err = self.bwd_sq_norm = 0.0


def _through(codec, t, ids, counter, side, measure):
    if t.dtype not in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
        raise TypeError(f"pipezip: the boundary carries floating tensors, got {t.dtype}")
    x = t.detach()
    shape, dtype = x.shape, x.dtype
    flat = x.reshape(x.shape[0], -1) if x.dim() > 4 else x
    x_hat, n = codec.roundtrip(flat, ids=ids)
    y = torch.from_numpy(x_hat).reshape(shape)
    if dtype != torch.float32:
        y = y.to(dtype)
    if counter is not None:
        setattr(counter, side + "_bytes", getattr(counter, side + "_bytes") + n)
        setattr(counter, side + "_elements", getattr(counter, side + "_elements") + x.numel())
        setattr(counter, side + "_frames", getattr(counter, side + "_frames") + 1)
        if measure:
            xf = x.to(torch.float32)
            setattr(counter, side + "_sq_err",
                    getattr(counter, side + "_sq_err") + float(((y.to(torch.float32) - xf) ** 2).sum()))
            setattr(counter, side + "_sq_norm", getattr(counter, side + "_sq_norm") + float((xf ** 2).sum()))
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
    c = _shared.get(spec)
    if c is None:
        c = Codec(spec)
        if c.stateful:
            raise ValueError(f"pipezip: '{spec}' keeps state; use a Boundary (one per cut) for it")
        _shared[spec] = c
    return c


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
        self._fwd_tx, self._fwd_rx = Codec(fwd, seed=seed), None
        self._bwd_tx = Codec(bwd, seed=seed)
        self.measure_error = measure_error
        self.counter = _Counter()
        if self._fwd_tx.stateful or self._bwd_tx.stateful:
            # the two ends of a stateful codec are separate objects
            self._fwd = _Pair(self._fwd_tx, Codec(fwd, seed=seed))
            self._bwd = _Pair(self._bwd_tx, Codec(bwd, seed=seed))
        else:
            self._fwd, self._bwd = self._fwd_tx, self._bwd_tx

    def forward(self, x, ids=None):
        if not torch.is_grad_enabled() or not x.requires_grad:
            return _through(self._fwd, x, ids, self.counter, "fwd", self.measure_error)
        return _Compress.apply(x, self._fwd, self._bwd, ids, self.counter, self.measure_error)

    def stats(self):
        c = self.counter
        out = {"fwd": self.fwd_spec, "bwd": self.bwd_spec}
        for side in ("fwd", "bwd"):
            b, e = getattr(c, side + "_bytes"), getattr(c, side + "_elements")
            out[side + "_bytes"] = b
            out[side + "_elements"] = e
            out[side + "_frames"] = getattr(c, side + "_frames")
            out[side + "_bits_per_element"] = 8.0 * b / e if e else None
            out[side + "_fp32_bytes"] = 4 * e
            n = getattr(c, side + "_sq_norm")
            out[side + "_rel_error"] = (getattr(c, side + "_sq_err") / n) ** 0.5 if self.measure_error and n else None
        return out

    def reset_stats(self):
        self.counter.reset()

    def extra_repr(self):
        return f"fwd={self.fwd_spec!r}, bwd={self.bwd_spec!r}"


class _Pair:
    """A stateful codec's sender and receiver, encoding with one and
    decoding with the other (as the two ends of a link)."""

    def __init__(self, tx, rx):
        self.tx, self.rx = tx, rx

    def roundtrip(self, x, ids=None):
        buf = np.empty(self.tx.max_frame_bytes(np.shape(x)), dtype=np.uint8)
        n = self.tx.encode_into(x, buf, ids=ids)
        return self.rx.decode(buf[:n]), n
