# SPDX-License-Identifier: MIT
"""pipezip from Python: the codec library on numpy arrays and torch tensors.

    import numpy as np, pipezip
    c = pipezip.Codec("q4")
    frame = c.encode(np.random.randn(64, 128).astype(np.float32))
    x_hat = c.decode(frame)            # a new float32 array of the frame's shape
    pipezip.inspect(frame)             # {'codec': 'quant', 'shape': (64, 128), ...}

Frames are byte for byte what `pipezip codec encode` writes (docs/FORMAT.md)
and the C library's (include/pipezip/codec.h): this module calls
libpipezip.so through ctypes. It is found, in order, at $PIPEZIP_LIBRARY, where
`cmake --install` put it (an installed package knows), in this package's
directory, in the source tree's build/ (or build-asan/), or where the
dynamic loader finds libpipezip.so.0.

Errors raise pipezip.Error, whose message is the library's own. A Codec
decodes only frames its own spec writes (a frame of another codec raises
Error naming both); pipezip.decode() decodes any frame. Codecs pickle and
deepcopy with their state. Tensors on a GPU (or any device) are accepted:
they are staged through host memory (pinned for CUDA), and decode(out=...)
writes back to out's device.
`import pipezip.torch` (needs torch) adds an autograd boundary, frames over
torch.distributed and a pipeline of stages.
"""
import ctypes
import ctypes.util
import os

import numpy as np

__all__ = ["Codec", "Error", "decode", "empty", "inspect", "frame_vocabulary", "validate", "crc32c", "library_version", "codec_help", "Stats", "set_threads",
           "parse_bandwidth", "parse_duration", "schedules", "schedule_order", "link_arrival",
           "FRAME_ERRORS"]

_here = os.path.dirname(os.path.abspath(__file__))


def _candidates():
    env = os.environ.get("PIPEZIP_LIBRARY")
    if env:
        yield env
        return
    try:  # an installed copy knows where the library went (cmake --install)
        from . import _libpath
        yield os.path.normpath(os.path.join(_here, _libpath.LIBRARY))
    except ImportError:
        pass
    yield os.path.join(_here, "libpipezip.so.0")
    root = os.path.dirname(os.path.dirname(_here))
    for b in ("build", "build-asan"):
        yield os.path.join(root, b, "libpipezip.so.0")
    found = ctypes.util.find_library("pipezip")
    if found:
        yield found
    yield "libpipezip.so.0"


def _load():
    tried = []
    for path in _candidates():
        if os.path.sep in path and not os.path.exists(path):
            tried.append(path + " (no such file)")
            continue
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            tried.append(f"{path} ({e})")
    raise ImportError("pipezip: cannot load libpipezip.so: tried " + "; ".join(tried) +
                      ". Build it (cmake --build build) or set PIPEZIP_LIBRARY to its path.")


_lib, library_path = _load()
# free() as the process resolves it (the library's malloc: an interposed
# allocator such as ASan's included), for the blobs the library returns
_libc = ctypes.CDLL(None)

_u8p = ctypes.POINTER(ctypes.c_uint8)
_f32p = ctypes.POINTER(ctypes.c_float)
_i64p = ctypes.POINTER(ctypes.c_int64)
_u32p = ctypes.POINTER(ctypes.c_uint32)
_sz = ctypes.c_size_t


class _Stats(ctypes.Structure):
    _fields_ = [("elements", ctypes.c_uint64), ("bytes", ctypes.c_uint64),
                ("bits_per_element", ctypes.c_double), ("rel_error", ctypes.c_double)]


class _FrameInfo(ctypes.Structure):
    _fields_ = [("codec_id", ctypes.c_int), ("codec_name", ctypes.c_char_p), ("ndim", ctypes.c_int),
                ("shape", ctypes.c_int64 * 4), ("elements", ctypes.c_int64),
                ("bits", ctypes.c_int), ("granularity", ctypes.c_int), ("options", ctypes.c_int),
                ("value_type", ctypes.c_int), ("index_coding", ctypes.c_int), ("value_bits", ctypes.c_int),
                ("wrapper", ctypes.c_int), ("k", ctypes.c_uint32), ("seed", ctypes.c_uint64),
                ("payload_bytes", ctypes.c_uint64), ("frame_bytes", ctypes.c_uint64),
                ("checksum", ctypes.c_uint32), ("has_ids", ctypes.c_int),
                ("granularity_name", ctypes.c_char_p), ("value_type_name", ctypes.c_char_p),
                ("index_coding_name", ctypes.c_char_p), ("wrapper_name", ctypes.c_char_p),
                ("fields", ctypes.c_uint), ("option_mask", ctypes.c_int),
                ("entropy_name", ctypes.c_char_p), ("body_bytes", ctypes.c_uint64), ("stored_body_bytes", ctypes.c_uint64),
                ("detail_label", ctypes.c_char_p), ("detail", ctypes.c_char * 192)]


def _fn(name, res, *args):
    f = getattr(_lib, name)
    f.restype, f.argtypes = res, list(args)
    return f


_status_name = _fn("pz_status_name", ctypes.c_char_p, ctypes.c_int)
_last_error = _fn("pz_last_error", ctypes.c_char_p)
_frame_error_of = _fn("pz_frame_error_of", ctypes.c_int)
_frame_error_name = _fn("pz_frame_error_name", ctypes.c_char_p, ctypes.c_int)
_version = _fn("pz_version", ctypes.c_char_p)
_create = _fn("pz_codec_create", ctypes.c_int, ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p)
_free = _fn("pz_codec_free", None, ctypes.c_void_p)
_spec = _fn("pz_codec_spec", ctypes.c_char_p, ctypes.c_void_p)
_is_stateful = _fn("pz_codec_is_stateful", ctypes.c_int, ctypes.c_void_p)
_is_lossless = _fn("pz_codec_is_lossless", ctypes.c_int, ctypes.c_void_p)
_base_spec = _fn("pz_codec_base_spec", None, ctypes.c_void_p, ctypes.c_char_p, _sz)
_help = _fn("pz_codec_help", _sz, ctypes.c_char_p, _sz)
_set_seed = _fn("pz_codec_set_seed", None, ctypes.c_void_p, ctypes.c_uint64)
_set_max_samples = _fn("pz_codec_set_max_samples", None, ctypes.c_void_p, ctypes.c_uint32)
_set_warmup = _fn("pz_codec_set_warmup", None, ctypes.c_void_p, ctypes.c_int)
_set_strict = _fn("pz_codec_set_strict", None, ctypes.c_void_p, ctypes.c_int)
_frame_decode = _fn("pz_frame_decode", ctypes.c_int, ctypes.c_void_p, _sz, ctypes.c_void_p, _sz,
                    ctypes.POINTER(ctypes.c_int), _i64p)
_max_frame = _fn("pz_codec_max_frame_bytes", _sz, ctypes.c_void_p, ctypes.c_int, _i64p)
_encode = _fn("pz_codec_encode", ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, _i64p,
              ctypes.c_void_p, ctypes.c_void_p, _sz, ctypes.POINTER(_sz), ctypes.POINTER(_Stats))
_decode = _fn("pz_codec_decode", ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, _sz, ctypes.c_void_p, _sz,
              ctypes.POINTER(ctypes.c_int), _i64p)
_state_save = _fn("pz_codec_state_save", ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(_u8p), ctypes.POINTER(_sz))
_state_load = _fn("pz_codec_state_load", ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, _sz)
_inspect = _fn("pz_frame_inspect", ctypes.c_int, ctypes.c_void_p, _sz, ctypes.POINTER(_FrameInfo))
_validate = _fn("pz_frame_validate", ctypes.c_int, ctypes.c_void_p, _sz)
_decode_limit = _fn("pz_codec_decode_limit", ctypes.c_uint64)
_crc32c = _fn("pz_crc32c", ctypes.c_uint32, ctypes.c_void_p, _sz)
_field_name = _fn("pz_frame_field_name", ctypes.c_char_p, ctypes.c_int)
_value_name = _fn("pz_frame_value_name", ctypes.c_char_p, ctypes.c_int, ctypes.c_int)
_field_values = _fn("pz_frame_field_values", ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.c_int)
_FIELD_COUNT = 6  # PZ_FRAME_FIELD_COUNT
_FIELD_OPTION = 2  # PZ_FIELD_OPTION
_FIELD_WRAPPER = 5  # PZ_FIELD_WRAPPER
_set_threads = _fn("pz_set_threads", None, ctypes.c_int)
_create_base = _fn("pz_codec_create_base", ctypes.c_int, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p)
_parse_bandwidth = _fn("pz_parse_bandwidth", ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(ctypes.c_double))
_parse_duration = _fn("pz_parse_duration", ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(ctypes.c_double))
_schedule_name = _fn("pz_pipe_schedule_name", ctypes.c_char_p, ctypes.c_int)
_schedule_order = _fn("pz_pipe_schedule_order", ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                      ctypes.POINTER(ctypes.c_int), ctypes.c_int)
_link_arrival = _fn("pz_link_arrival", ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(ctypes.c_double), ctypes.c_double,
                    ctypes.c_uint64, ctypes.c_double, ctypes.c_double, ctypes.POINTER(ctypes.c_double))
_libc.free.argtypes, _libc.free.restype = [ctypes.c_void_p], None


# pz_frame_error (pipezip/codec.h), in order
FRAME_ERRORS = ("OK", "TRUNCATED", "MAGIC", "VERSION", "CHECKSUM", "LENGTH", "SHAPE", "PARAM", "PAYLOAD", "CAPACITY",
                "STATE", "CODEC")


class Error(Exception):
    """A pipezip library call failed. str(e) is the library's message;
    e.status is the status name ("PZ_ERR_FORMAT"), e.frame_error the frame
    check that failed ("CHECKSUM", "TRUNCATED", ...: FRAME_ERRORS) for a
    rejected frame, else None."""

    def __init__(self, status):
        self.status = _status_name(status).decode()
        msg = (_last_error() or b"").decode("utf-8", "replace")
        self.frame_error = None
        if self.status == "PZ_ERR_FORMAT":
            k = _frame_error_of()
            self.frame_error = FRAME_ERRORS[k] if 0 <= k < len(FRAME_ERRORS) else str(k)
        super().__init__(msg or self.status)


def _check(status):
    if status:
        raise Error(status)


def set_threads(n):
    """Threads for the library's kernels (OpenMP and BLAS); n <= 0: all cores."""
    _set_threads(int(n))


def library_version():
    """The version of the libpipezip.so that was loaded ("0.1.0")."""
    return _version().decode()


__version__ = library_version()  # the package is the library's version (pip's metadata says the same)


def codec_help():
    """Every codec and wrapper with its spec form, from the library's table."""
    n = _help(None, 0)
    buf = ctypes.create_string_buffer(n + 1)
    _help(buf, n + 1)
    return buf.value.decode()


class Stats:
    """What one encode produced: elements, bytes (the whole frame),
    bits_per_element, rel_error (||x_hat - x|| / ||x||)."""
    __slots__ = ("elements", "bytes", "bits_per_element", "rel_error")

    def __init__(self, s):
        self.elements, self.bytes = int(s.elements), int(s.bytes)
        self.bits_per_element, self.rel_error = float(s.bits_per_element), float(s.rel_error)

    def __repr__(self):
        return (f"Stats(elements={self.elements}, bytes={self.bytes}, "
                f"bits_per_element={self.bits_per_element:.4g}, rel_error={self.rel_error:.4g})")


def empty(shape, dtype=np.float32):
    """An uninitialised array aligned to 64 bytes (a cache line, an AVX-512
    vector): the library's kernels read and write such buffers fastest
    (decoding 10^7 floats into a 16-byte aligned array took 12% longer)."""
    dt = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64)) if np.ndim(shape) else int(shape)
    raw = np.empty(n * dt.itemsize + 64, dtype=np.uint8)
    off = -raw.ctypes.data % 64
    return raw[off:off + n * dt.itemsize].view(dt).reshape(shape)


def _host_f32(t):
    """A torch tensor as a contiguous float32 CPU tensor: itself when it is
    one, else a copy (a GPU tensor through pinned host memory, a blocking
    copy: its values are needed now)."""
    import torch
    t = t.detach()
    if t.device.type != "cpu":
        h = torch.empty(t.shape, dtype=torch.float32, pin_memory=t.device.type == "cuda")
        h.copy_(t)
        return h
    if t.dtype != torch.float32:
        t = t.to(torch.float32)
    return t.contiguous()


def _as_f32(x, what="x"):
    """x as a C-contiguous float32 numpy array: the same memory when it is
    one already (a numpy array or a CPU torch tensor), else a converted copy
    (float16/bfloat16/float64 inputs, non-contiguous views, tensors on
    another device)."""
    mod = type(x).__module__
    if mod.startswith("torch"):
        x = _host_f32(x).numpy()
    a = np.asarray(x)
    if a.dtype != np.float32:
        if a.dtype.kind not in "fiu":
            raise TypeError(f"pipezip: {what} has dtype {a.dtype}; floats expected")
        a = a.astype(np.float32)
    return np.ascontiguousarray(a)


def _frame_buffer(frame):
    """(pointer, length, keep-alive) of any bytes-like frame, without a copy."""
    if isinstance(frame, bytes):
        return ctypes.cast(ctypes.c_char_p(frame), ctypes.c_void_p), len(frame), frame
    a = np.frombuffer(frame, dtype=np.uint8) if not isinstance(frame, np.ndarray) else frame.reshape(-1).view(np.uint8)
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)
    return ctypes.c_void_p(a.ctypes.data), a.nbytes, a


def _header_shape(ptr, n):
    """The shape a frame's header declares (docs/FORMAT.md), or None when it
    does not look like a frame (the library then says why)."""
    if n < 64:
        return None
    h = (ctypes.c_uint8 * 64).from_address(ptr.value)
    if bytes(h[0:4]) != b"PZFR":
        return None
    nd = h[6]
    if not 1 <= nd <= 4:
        return None
    dims = np.frombuffer(bytes(h[8:24]), dtype="<u4")[:nd]
    if int(np.prod(dims, dtype=np.uint64)) > _decode_limit():
        return None
    return tuple(int(d) for d in dims)


class Codec:
    """A codec made from a spec string ("q4", "topk:0.1", "ef(topk:0.1)",
    "aqsgd(q4:sym)", ...; codec_help() lists them).

    A stateful codec (ef, ef21, aqsgd) keeps the sender's state in the
    object that encodes and the receiver's in the one that decodes: make one
    of each from the same spec and feed them the same frames in order.
    state() / load_state() save and restore it (checkpoints); pickle and
    copy.deepcopy carry it too.

    decode() takes only frames this spec writes (strict=True, the default):
    a frame of another codec raises Error (frame_error "CODEC") naming both.
    strict=False decodes any stateless frame, as pipezip.decode() does; a
    stateful receiver is strict whatever it is told."""

    def __init__(self, spec, seed=None, max_samples=None, strict=True, _handle=None):
        h = _handle
        if h is None:
            h = ctypes.c_void_p()
            _check(_create(ctypes.byref(h), spec.encode()))
        self._h = h
        self._max_samples, self._strict = max_samples, bool(strict)
        if seed is not None:
            _set_seed(h, int(seed))
        if max_samples is not None:
            _set_max_samples(h, int(max_samples))
        _set_strict(h, 1 if strict else 0)

    # pickle / copy.deepcopy: the spec, the settings and the state (its
    # random stream, seed and warm-up included)
    def __getstate__(self):
        return {"spec": self.spec, "max_samples": self._max_samples, "strict": self._strict, "state": self.state()}

    def __setstate__(self, d):
        self.__init__(d["spec"], max_samples=d["max_samples"], strict=d["strict"])
        self.load_state(d["state"])

    @property
    def strict(self):
        return self._strict

    def __del__(self):
        h = getattr(self, "_h", None)
        if h and _free is not None:  # (None late in interpreter shutdown)
            _free(h)
            self._h = None

    def __repr__(self):
        return f"pipezip.Codec({self.spec!r})"

    def base(self, seed=None, max_samples=None, strict=True):
        """A new codec: this one's stateless base (what evaluation runs:
        ef(topk:0.1) -> topk:0.1, entropy stage kept), from the value, not
        its spec's text; fresh state."""
        h = ctypes.c_void_p()
        _check(_create_base(ctypes.byref(h), self._h))
        return Codec(None, seed=seed, max_samples=max_samples, strict=strict, _handle=h)

    @property
    def spec(self):
        """The canonical spec, every option spelled out."""
        return _spec(self._h).decode()

    @property
    def stateful(self):
        return bool(_is_stateful(self._h))

    @property
    def lossless(self):
        return bool(_is_lossless(self._h))

    @property
    def base_spec(self):
        """The stateless codec under a wrapper (what evaluation uses)."""
        buf = ctypes.create_string_buffer(256)
        _base_spec(self._h, buf, 256)
        return buf.value.decode()

    def set_warmup(self, on):
        """aqsgd: warm-up sends x uncompressed and fills the buffers."""
        _set_warmup(self._h, 1 if on else 0)

    def max_frame_bytes(self, shape):
        """The largest frame a tensor of this shape can encode to."""
        shape = tuple(int(d) for d in shape)
        dims = (ctypes.c_int64 * 4)(*shape)
        return int(_max_frame(self._h, len(shape), dims))

    def encode_into(self, x, buf, ids=None, stats=False):
        """Encode x into buf (a writable bytes-like object, e.g. a bytearray
        or numpy uint8 array of at least max_frame_bytes(x.shape)); returns
        the frame's length, or (length, Stats) with stats=True. No copy of x
        is made when it is C-contiguous float32. Stats cost a decode of the
        frame and a pass over x for the error."""
        a = _as_f32(x)
        if not 1 <= a.ndim <= 4:
            raise ValueError(f"pipezip: a frame holds 1 to 4 dimensions, x has {a.ndim}")
        dims = (ctypes.c_int64 * 4)(*a.shape)
        out = np.frombuffer(buf, dtype=np.uint8) if not isinstance(buf, np.ndarray) else buf.reshape(-1).view(np.uint8)
        if out.flags.writeable is False:
            raise TypeError("pipezip: the output buffer is read-only")
        idp = None
        if ids is not None:
            ida = np.ascontiguousarray(np.asarray(ids, dtype=np.uint32))
            if ida.shape != (a.shape[0],):
                raise ValueError(f"pipezip: ids must hold one id per sample ({a.shape[0]}), got shape {ida.shape}")
            idp = ctypes.c_void_p(ida.ctypes.data)
        n = _sz()
        st = _Stats() if stats else None
        _check(_encode(self._h, ctypes.c_void_p(a.ctypes.data), a.ndim, dims, idp, ctypes.c_void_p(out.ctypes.data),
                       out.nbytes, ctypes.byref(n), ctypes.byref(st) if stats else None))
        return (int(n.value), Stats(st)) if stats else int(n.value)

    def encode(self, x, ids=None, stats=False):
        """The frame of x as bytes (or (bytes, Stats) with stats=True)."""
        a = _as_f32(x)
        buf = empty(self.max_frame_bytes(a.shape) if 1 <= a.ndim <= 4 else 64, np.uint8)
        r = self.encode_into(a, buf, ids=ids, stats=stats)
        n = r[0] if stats else r
        frame = buf[:n].tobytes()
        return (frame, r[1]) if stats else frame

    def decode(self, frame, out=None):
        """Decode a frame into out (a C-contiguous float32 numpy array or
        torch tensor, on any device, with the frame's number of elements,
        written in place and returned) or into a new float32 array of the
        frame's shape. A frame of another spec raises Error (strict)."""
        ptr, n, keep = _frame_buffer(frame)
        nd, shp = ctypes.c_int(), (ctypes.c_int64 * 4)()
        if out is None:
            shape = _header_shape(ptr, n)
            if shape is None:  # the library says what is wrong
                _check(_decode(self._h, ptr, n, None, 0, ctypes.byref(nd), shp))
                raise Error(1)
            dst = empty(shape)
            target = dst
        else:
            target, dst = _out_target(out)
        _check(_decode(self._h, ptr, n, ctypes.c_void_p(dst.ctypes.data), dst.size, ctypes.byref(nd), shp))
        del keep
        return _finish_decode(target, dst, nd, shp)

    def roundtrip(self, x, ids=None, receiver=None):
        """x through a real frame: encoded by this codec, decoded by receiver
        (another Codec of the same spec: a stateful link's other end) or by
        this one; (x_hat, frame length)."""
        a = _as_f32(x)
        buf = empty(self.max_frame_bytes(a.shape), np.uint8)
        n = self.encode_into(a, buf, ids=ids)
        return (receiver or self).decode(buf[:n]), n

    def state(self):
        """The codec's state (EF/EF21 buffers, AQ-SGD rows, its random
        stream) as bytes, for load_state() on a codec of the same spec."""
        p, n = _u8p(), _sz()
        _check(_state_save(self._h, ctypes.byref(p), ctypes.byref(n)))
        try:
            return ctypes.string_at(p, n.value) if n.value else b""
        finally:
            _libc.free(p)

    def load_state(self, blob):
        ptr, n, keep = _frame_buffer(blob)
        _check(_state_load(self._h, ptr, n))
        del keep


def _out_target(out):
    """(what decode returns, the float32 host array it writes) for out"""
    if type(out).__module__.startswith("torch"):
        import torch
        if out.dtype != torch.float32 or not out.is_contiguous():
            raise TypeError("pipezip: out must be a contiguous float32 tensor")
        if out.device.type != "cpu":  # decoded on the host, then copied over
            return out, torch.empty(out.shape, dtype=torch.float32, pin_memory=out.device.type == "cuda").numpy()
        return out, out.detach().numpy()
    if not isinstance(out, np.ndarray) or out.dtype != np.float32 or not out.flags.c_contiguous \
            or not out.flags.writeable:
        raise TypeError("pipezip: out must be a writable C-contiguous float32 array")
    return out, out


def _finish_decode(target, dst, nd, shp):
    got = int(np.prod(shp[:nd.value], dtype=np.int64))
    if got != dst.size:
        raise ValueError(f"pipezip: the frame holds {got} elements, out has {dst.size}")
    if target is not dst and type(target).__module__.startswith("torch") and target.device.type != "cpu":
        import torch
        target.copy_(torch.from_numpy(dst).reshape(target.shape))
    return target


def decode(frame, out=None):
    """Decode any stateless frame (whatever its codec) into out or a new
    float32 array of its shape; a stateful frame (ef21, aqsgd) needs its
    receiver, a Codec of its spec."""
    ptr, n, keep = _frame_buffer(frame)
    w = _value_name(_FIELD_WRAPPER, ctypes.c_uint8.from_address(ptr.value + 30).value) if n >= 64 else None
    w = w.decode() if w else None
    if w in ("ef21", "aqsgd"):  # (the header's wrapper byte, FORMAT.md; the decode checks the rest)
        raise ValueError(f"pipezip: a frame of wrapper {w} holds what its receiver's state adds to; "
                         "decode it with that receiver (a Codec of the sender's spec)")
    nd, shp = ctypes.c_int(), (ctypes.c_int64 * 4)()
    if out is None:
        shape = _header_shape(ptr, n)
        if shape is None:
            _check(_frame_decode(ptr, n, None, 0, ctypes.byref(nd), shp))
            raise Error(1)
        target = dst = empty(shape)
    else:
        target, dst = _out_target(out)
    _check(_frame_decode(ptr, n, ctypes.c_void_p(dst.ctypes.data), dst.size, ctypes.byref(nd), shp))
    del keep
    return _finish_decode(target, dst, nd, shp)


def parse_bandwidth(text):
    """A link rate as pipezip train reads it ("200mbit", "1gbit", "12.5MB/s",
    "0" for unlimited): bits per second. Raises ValueError naming the text."""
    v = ctypes.c_double()
    if _parse_bandwidth(str(text).encode(), ctypes.byref(v)):
        raise ValueError(f"pipezip: {_last_error().decode()}")
    return v.value


def parse_duration(text):
    """A time as pipezip train reads it ("50ms", "250us", "1s", "0"): seconds.
    Raises ValueError naming the text."""
    v = ctypes.c_double()
    if _parse_duration(str(text).encode(), ctypes.byref(v)):
        raise ValueError(f"pipezip: {_last_error().decode()}")
    return v.value


def schedules():
    """The pipeline schedules' names, as --pipe-schedule takes them."""
    names, i = [], 0
    while (n := _schedule_name(i)) is not None:
        names.append(n.decode())
        i += 1
    return tuple(names)


def schedule_order(schedule, stage, stages, micro_batches):
    """Stage `stage`'s order of work in a step under the schedule named, as
    pipezip's stages run it: [("F", m) | ("B", m), ...]."""
    buf = (ctypes.c_int * (2 * max(int(micro_batches), 1)))()
    n = _schedule_order(str(schedule).encode(), int(stages), int(stage), int(micro_batches), buf, len(buf))
    if n < 0:
        raise ValueError(f"pipezip: {_last_error().decode()}")
    return [("F", o) if o >= 0 else ("B", -1 - o) for o in buf[:n]]


def link_arrival(model, wire, sent, nbytes, bandwidth, latency):
    """The link emulator's arrival rule (--link-model duplex or shared): a
    message of nbytes sent at `sent` over a wire last free at `wire`;
    returns (arrival, the wire's new state)."""
    w, at = ctypes.c_double(wire), ctypes.c_double()
    if _link_arrival(str(model).encode(), ctypes.byref(w), float(sent), int(nbytes), float(bandwidth or 0.0), float(latency),
                     ctypes.byref(at)):
        raise ValueError(f"pipezip: {_last_error().decode()}")
    return at.value, w.value


def frame_vocabulary():
    """Every enumerated frame header field and the names of the wire values
    the format defines, from the library's tables (docs/FORMAT.md):
    {"codec": {0: "none", 3: "quant", ...}, "granularity": {...}, ...}.
    Options are bits: {1: "sym", 2: "stoch", ...}."""
    vocab = {}
    for f in range(_FIELD_COUNT):
        n = _field_values(f, None, 0)
        vals = (ctypes.c_int * max(n, 1))()
        _field_values(f, vals, n)
        vocab[_field_name(f).decode()] = {int(v): _value_name(f, v).decode() for v in vals[:n]}
    return vocab


def inspect(frame):
    """Validate a frame's header and checksum and describe it (a dict).
    Enumerated fields are named as the format's tables name them
    ("granularity": "token", "wrapper": "ef21", "options": ("sym",)); their
    wire values are under the same key with "_id" ("granularity_id": 3)."""
    ptr, n, keep = _frame_buffer(frame)
    info = _FrameInfo()
    _check(_inspect(ptr, n, ctypes.byref(info)))
    del keep
    nd = info.ndim
    options = tuple(_value_name(_FIELD_OPTION, 1 << b).decode() for b in range(8) if info.options & (1 << b))
    return {"codec": info.codec_name.decode(), "codec_id": info.codec_id, "shape": tuple(info.shape[:nd]),
            "elements": info.elements, "bits": info.bits,
            "granularity": info.granularity_name.decode(), "granularity_id": info.granularity,
            "options": options, "options_id": info.options,
            "value_type": info.value_type_name.decode(), "value_type_id": info.value_type,
            "index_coding": info.index_coding_name.decode(), "index_coding_id": info.index_coding,
            "value_bits": info.value_bits, "wrapper": info.wrapper_name.decode(), "wrapper_id": info.wrapper,
            "k": info.k, "seed": info.seed, "payload_bytes": info.payload_bytes,
            "frame_bytes": info.frame_bytes, "checksum": info.checksum, "has_ids": bool(info.has_ids),
            "entropy": info.entropy_name.decode() if info.entropy_name else None,
            "body_bytes": info.body_bytes, "stored_body_bytes": info.stored_body_bytes,
            "detail": (info.detail_label.decode(), info.detail.decode()) if info.detail_label else None}


def validate(frame):
    """Every check a decode makes, without decoding; raises Error if any fails."""
    ptr, n, keep = _frame_buffer(frame)
    _check(_validate(ptr, n))
    del keep


def crc32c(data):
    """CRC-32C (Castagnoli) of a bytes-like object, as frames use it."""
    ptr, n, keep = _frame_buffer(data)
    r = int(_crc32c(ptr, n))
    del keep
    return r
