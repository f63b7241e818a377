#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A second decoder of pipezip frames, written from docs/FORMAT.md alone
(numpy, no pipezip code), and the check that it agrees with pipezip.

    python3 format_decoder.py GOLDEN_DIR

For every case of GOLDEN_DIR/MANIFEST (written by test_golden --write) it
decodes each committed frame NAME.S.pzf with a receiver of its own (the
wrappers' state included) and compares the floats bit for bit with NAME.S.out,
what pipezip's receiver produced. It also checks what the format promises
about the values themselves against the inputs NAME.S.in (TopK keeps the
largest magnitudes exactly, quantization is within half a step, ...).
Exit status 0 when everything agrees, 1 otherwise."""
import os
import math
import struct
import sys

import numpy as np

try:  # the entropy stage (FORMAT.md): any zstd decoder will do
    import zstandard
except ImportError:
    zstandard = None

F32 = np.float32

# ---- conventions -----------------------------------------------------------

def crc32c(data, crc=0):
    """CRC-32C (Castagnoli, reflected, init and xor-out 0xFFFFFFFF)."""
    table = crc32c.table
    crc ^= 0xFFFFFFFF
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _crc_table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


crc32c.table = _crc_table()


def bit_stream(buf, count, width):
    """count fields of `width` bits, LSB-first; returns (values, bytes used)."""
    nbytes = (count * width + 7) // 8
    if len(buf) < nbytes:
        raise ValueError("bit stream truncated")
    bits = np.unpackbits(np.frombuffer(bytes(buf[:nbytes]), dtype=np.uint8), bitorder="little")
    if count == 0:
        return np.zeros(0, dtype=np.int64), nbytes
    fields = bits[: count * width].reshape(count, width).astype(np.int64)
    values = fields @ (1 << np.arange(width, dtype=np.int64))
    if bits[count * width:].any():
        raise ValueError("unused high bits of a bit stream's last byte are not 0")
    return values, nbytes


def f32s(buf, count):
    return np.frombuffer(bytes(buf[: 4 * count]), dtype="<f4").astype(F32), 4 * count


def f16s(buf, count):
    return np.frombuffer(bytes(buf[: 2 * count]), dtype="<f2").astype(F32), 2 * count


def bf16s(buf, count):
    u = np.frombuffer(bytes(buf[: 2 * count]), dtype="<u2").astype(np.uint32) << 16
    return u.view(F32).copy(), 2 * count


# ---- the header -------------------------------------------------------------

class Header:
    pass


def parse(frame):
    if len(frame) < 64:
        raise ValueError("truncated")
    if frame[:4] != b"PZFR":
        raise ValueError("bad magic")
    if frame[4] != 1:
        raise ValueError("version")
    h = Header()
    h.codec, h.ndim, h.flags = frame[5], frame[6], frame[7]
    dims = struct.unpack_from("<4I", frame, 8)
    (h.bits, h.gran, h.options, h.value_type, h.index_coding, h.value_bits, h.wrapper, reserved0) = frame[24:32]
    h.k, reserved1, h.seed, h.payload_len, h.crc, reserved2 = struct.unpack_from("<IIQQII", frame, 32)
    if h.payload_len != len(frame) - 64:
        raise ValueError("length mismatch")
    if crc32c(frame[64:], crc32c(frame[:56])) != h.crc:
        raise ValueError("checksum mismatch")
    if not 1 <= h.ndim <= 4 or any(dims[h.ndim:]):
        raise ValueError("impossible shape")
    if reserved0 or reserved2 or h.flags & ~7 or h.options & ~127 or (reserved1 and not h.flags & 6):
        raise ValueError("reserved bits set")
    if h.flags & 6 == 6:
        raise ValueError("both entropy stages")
    h.dims = list(dims[: h.ndim])
    h.n = int(np.prod(h.dims, dtype=np.int64))
    payload = frame[64:]
    h.ids = None
    if h.flags & 1:
        h.ids = np.frombuffer(bytes(payload[: 4 * h.dims[0]]), dtype="<u4")
        payload = payload[4 * h.dims[0]:]
    if h.flags & 2:  # the entropy stage: the codec's sections as one zstd frame of `raw` bytes
        raw = reserved1
        if not 1 <= raw <= 16 * h.n + 64:
            raise ValueError("entropy stage length")
        if zstandard is None:
            raise ValueError("zstd frames need the zstandard module (Debian: python3-zstandard)")
        params = zstandard.get_frame_parameters(bytes(payload))
        if params.content_size != raw:
            raise ValueError("zstd frame size")
        payload = zstandard.ZstdDecompressor().decompress(bytes(payload), max_output_size=raw)
        if len(payload) != raw:
            raise ValueError("zstd length")
    if h.flags & 4:  # the entropy stage's Huffman form: `raw` bytes under one canonical code, in four streams
        raw = reserved1
        if not 1 <= raw <= 16 * h.n + 64:
            raise ValueError("entropy stage length")
        payload = huffman_decode(bytes(payload), raw)
    h.body = payload
    return h


def huffman_decode(p, raw):
    """FORMAT.md, Entropy stage, Huffman form: code lengths, three stream
    lengths, four streams of DEFLATE-packed canonical codes"""
    if len(p) < 140:
        raise ValueError("huf table")
    lens = [p[i // 2] >> (4 * (i % 2)) & 15 for i in range(256)]
    if max(lens) > 11 or not any(lens) or sum(2.0 ** -l for l in lens if l) > 1:
        raise ValueError("huf lengths")
    codes, code = {}, 0  # (length, code) -> symbol, codes assigned by length then symbol
    for length in range(1, 12):
        for sym in range(256):
            if lens[sym] == length:
                codes[(length, code)] = sym
                code += 1
        code <<= 1
    sizes = list(struct.unpack_from("<3I", p, 128))
    if 140 + sum(sizes) > len(p):
        raise ValueError("huf stream lengths")
    sizes.append(len(p) - 140 - sum(sizes))
    q = -(-raw // 4)
    out, at = bytearray(), 140
    for j in range(4):
        stream, at = p[at:at + sizes[j]], at + sizes[j]
        count = min((j + 1) * q, raw) - min(j * q, raw)
        pos = 0  # bit position in the stream
        for _ in range(count):
            code, length = 0, 0
            while (length, code) not in codes:
                if length == 11 or pos >= 8 * len(stream):
                    raise ValueError("huf code")
                code = code << 1 | stream[pos // 8] >> (pos % 8) & 1
                pos, length = pos + 1, length + 1
            out.append(codes[(length, code)])
        if -(-pos // 8) != len(stream) or (pos % 8 and stream[-1] >> (pos % 8)):
            raise ValueError("huf stream end")
    return bytes(out)


def units(h, gran):
    """unit index of every element (tensor order), and U"""
    n, d = h.n, h.dims
    if gran == 0:
        return np.zeros(n, dtype=np.int64), 1
    if gran == 1:
        m = n // d[0] if d[0] else 0
        return (np.arange(n) // max(m, 1)), d[0]
    if gran == 2:
        inner = int(np.prod(d[2:], dtype=np.int64)) if h.ndim > 2 else 1
        return (np.arange(n) // max(inner, 1)) % d[1], d[1]
    if gran == 3:
        last = d[h.ndim - 1]
        return (np.arange(n) // max(last, 1)), (n // last if last else 0)
    raise ValueError("granularity")


# ---- codecs -----------------------------------------------------------------

SYM, STOCH, SIGNED, UNBIASED, BYVALUE, ROT, BYTES = 1, 2, 4, 8, 16, 32, 64
ROT_SALT = 0x526F746174696F6E


def decode_quant(h):
    b = h.bits
    unit, U = units(h, h.gran)
    sym = bool(h.options & SYM)
    per = 1 if sym else 2
    scales, used = f32s(h.body, per * U)
    codes, cbytes = bit_stream(h.body[used:], h.n, 8 if h.options & BYTES else b)
    if used + cbytes != len(h.body):
        raise ValueError("quant payload length")
    if h.n and codes.max() > (1 << b) - (2 if sym and b > 1 else 1):
        raise ValueError("code out of range")
    if sym:
        step = scales[unit]
        if b == 1:
            return np.where(codes == 1, step, -step).astype(F32)
        M = (1 << (b - 1)) - 1
        lo = (F32(-M) * step).astype(F32)
    else:
        lo, step = scales[0::2][unit], scales[1::2][unit]
    x = (lo + (codes.astype(F32) * step).astype(F32)).astype(F32)
    return unrotate(h, x) if h.options & ROT else x


def rotation_signs(h):
    rng = Xoshiro(h.seed ^ ROT_SALT)
    return np.array([-1.0 if rng.next() >> 63 else 1.0 for _ in range(h.dims[-1])], dtype=F32)


def hadamard(h, x):
    """per row of the last dimension L, blocks of the largest power of two
    dividing L: Walsh-Hadamard butterflies (a + b, a - b; spans 1, 2, 4, ...),
    then times f32(1 / sqrt(block))"""
    L = h.dims[-1]
    blk = L & -L
    v = x.reshape(-1, L // blk, blk).copy()
    span = 1
    while span < blk:
        w = v.reshape(v.shape[0], v.shape[1], blk // (2 * span), 2, span)
        a, b = w[:, :, :, 0, :].copy(), w[:, :, :, 1, :].copy()
        w[:, :, :, 0, :] = (a + b).astype(F32)
        w[:, :, :, 1, :] = (a - b).astype(F32)
        span *= 2
    return (v.reshape(-1, L) * F32(1.0 / math.sqrt(blk))).astype(F32)


def unrotate(h, x):
    """the rotation's inverse: Hadamard, then the signs"""
    if h.n == 0 or h.dims[-1] == 0:
        return x
    return (hadamard(h, x) * rotation_signs(h)).astype(F32).reshape(-1)


def rotate(h, x):
    """the encoder's rotation: the signs, then Hadamard"""
    if h.n == 0 or h.dims[-1] == 0:
        return x
    return hadamard(h, (x.reshape(-1, h.dims[-1]) * rotation_signs(h)).astype(F32)).reshape(-1)


def read_values(h, buf, U, count_per_unit):
    """the values section: U*k values; returns (values, bytes used)"""
    cnt = U * count_per_unit
    if h.value_type == 0:
        return f32s(buf, cnt)
    if h.value_type == 1:
        return f16s(buf, cnt)
    if h.value_type == 2:
        return bf16s(buf, cnt)
    vb = h.value_bits
    steps, used = f32s(buf, U)
    codes, cbytes = bit_stream(buf[used:], cnt, vb)
    step = np.repeat(steps, count_per_unit)
    if vb == 1:
        vals = np.where(codes == 1, step, -step).astype(F32)
    else:
        M = (1 << (vb - 1)) - 1
        vals = ((F32(-M) * step).astype(F32) + (codes.astype(F32) * step).astype(F32)).astype(F32)
    return vals, used + cbytes


def value_bytes(h, U, kk):
    cnt = U * kk
    if h.value_type == 0:
        return 4 * cnt
    if h.value_type in (1, 2):
        return 2 * cnt
    return 4 * U + (cnt * h.value_bits + 7) // 8


def varints(buf):
    pos = 0
    while pos < len(buf):
        v, shift = 0, 0
        while True:
            byte = buf[pos]
            pos += 1
            v |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
            if shift >= 35:
                raise ValueError("varint longer than 5 bytes")
        yield v


def decode_topk(h):
    unit, U = units(h, h.gran)
    m, kk = h.n // U if U else 0, h.k
    vb = value_bytes(h, U, kk)
    idx_len = len(h.body) - vb
    vals, _ = read_values(h, h.body[idx_len:], U, kk)
    x = np.zeros(h.n, dtype=F32)
    if h.index_coding == 1:
        bits, _ = bit_stream(h.body[:idx_len], h.n, 1)
        pos = np.nonzero(bits)[0]
        if np.any(np.bincount(unit[pos], minlength=U) != kk):
            raise ValueError("a unit's bitmap does not hold k positions")
        x[pos] = vals
    elif h.index_coding == 2:
        it = varints(h.body[:idx_len])
        for u in range(U):
            prev = -1
            for j in range(kk):
                p = prev + 1 + next(it)
                if p >= m:
                    raise ValueError("position outside the unit")
                x[u * m + p] = vals[u * kk + j]
                prev = p
    else:
        raise ValueError("index coding")
    return x


MASK64 = (1 << 64) - 1


class Xoshiro:
    """xoshiro256**, its four words successive splitmix64 outputs from seed"""

    def __init__(self, seed):
        x = seed & MASK64
        self.s = []
        for _ in range(4):
            x = (x + 0x9E3779B97F4A7C15) & MASK64
            z = x
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
            self.s.append(z ^ (z >> 31))

    def next(self):
        s = self.s
        rotl = lambda v, r: ((v << r) | (v >> (64 - r))) & MASK64
        result = (rotl((s[1] * 5) & MASK64, 7) * 9) & MASK64
        t = (s[1] << 17) & MASK64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
        return result

    def below(self, bound):
        while True:
            p = (self.next() >> 32) * bound
            low = p & 0xFFFFFFFF
            if low < bound and low < ((1 << 32) - bound) % bound:
                continue
            return p >> 32


def decode_randk(h):
    unit, U = units(h, h.gran)
    m, kk = h.n // U if U else 0, h.k
    vals, used = read_values(h, h.body, U, kk)
    if used != len(h.body):
        raise ValueError("randk payload length")
    scale = F32(m / kk) if (h.options & UNBIASED) and kk else F32(1)
    x = np.zeros(h.n, dtype=F32)
    for u in range(U):
        rng = Xoshiro(h.seed ^ u)
        marked = set()
        for j in range(m - kk, m):
            t = rng.below(j + 1)
            marked.add(j if t in marked else t)
        for j, p in enumerate(sorted(marked)):
            x[u * m + p] = (vals[u * kk + j] * scale).astype(F32)
    return x


def decode_ms(h):
    unit, U = units(h, h.gran)
    m, kk, b = h.n // U if U else 0, h.k, h.bits
    L = (1 << b) - 1
    tmin, used = f32s(h.body, U)
    vals, vused = read_values(h, h.body[used:], U, kk)
    used += vused
    codes, cused = bit_stream(h.body[used:], h.n, b)
    used += cused
    neg = np.zeros(h.n, dtype=np.int64)
    if h.options & SIGNED:
        neg, sused = bit_stream(h.body[used:], h.n, 1)
        used += sused
    if used != len(h.body):
        raise ValueError("ms payload length")
    step = (tmin / F32(L)).astype(F32)[unit]
    v = (codes.astype(F32) * step).astype(F32)
    x = np.where(neg == 1, -v, v).astype(F32)
    kept = np.nonzero(codes == L)[0]
    if np.any(np.bincount(unit[kept], minlength=U) != kk):
        raise ValueError("a unit does not hold k codes L")
    x[kept] = vals
    return x


def decode_lowrank(h):
    """two values sections P (M x r) and Q (N x r); x = P Q^T summed in f32, t ascending"""
    if h.gran != 3 or h.bits or h.index_coding or h.options:
        raise ValueError("lowrank parameters")
    N = h.dims[-1]
    M = h.n // N if N else 0
    r = h.k
    if r > min(M, N) or (h.n and r < 1):
        raise ValueError("lowrank rank")
    if h.n == 0:
        return np.zeros(0, dtype=F32)
    P, pu = read_values(h, h.body, 1, M * r)
    Q, qu = read_values(h, h.body[pu:], 1, N * r)
    if pu + qu != len(h.body):
        raise ValueError("payload length")
    if not (np.isfinite(P).all() and np.isfinite(Q).all()):
        raise ValueError("non-finite factor")
    P, Q = P.reshape(M, r), Q.reshape(N, r)
    acc = np.zeros((M, N), dtype=F32)
    with np.errstate(over="ignore"):
        for t in range(r):
            acc = (acc + np.outer(P[:, t], Q[:, t]).astype(F32)).astype(F32)
    if not np.isfinite(acc).all():
        raise ValueError("product overflows")
    return acc.reshape(-1)


def fp8_value(code, e):
    """an OCP 8-bit float's value, from FORMAT.md's formula (NaN for the codes it refuses)"""
    m = 7 - e
    bias = (1 << (e - 1)) - 1
    E, M = (code & 0x7F) >> m, code & ((1 << m) - 1)
    if (e == 4 and code & 0x7F == 0x7F) or (e == 5 and E == 31):
        return float("nan")
    v = 2.0 ** (E - bias) * (1 + M / 2 ** m) if E else 2.0 ** (1 - bias) * M / 2 ** m
    return -v if code & 0x80 else v


def decode_fp8(h):
    """U f32 scales, then n codes; x = f32(value) * scale"""
    if h.bits not in (4, 5) or h.options or h.value_type or h.index_coding or h.value_bits or h.k:
        raise ValueError("fp8 parameters")
    unit, U = units(h, h.gran)
    scales, used = f32s(h.body, U)
    if used + h.n != len(h.body):
        raise ValueError("payload length")
    if not (np.isfinite(scales).all() and (scales >= 0).all()):
        raise ValueError("fp8 scale")
    table = np.array([fp8_value(c, h.bits) for c in range(256)], dtype=F32)
    codes = np.frombuffer(bytes(h.body[used:used + h.n]), dtype=np.uint8)
    vals = table[codes]
    if np.isnan(vals).any():
        raise ValueError("fp8 NaN or infinity code")
    with np.errstate(over="ignore"):
        x = (vals * scales[unit]).astype(F32)
    if not np.isfinite(x).all():
        raise ValueError("fp8 value overflows")
    return x


def decode_rvq(h):
    """U f32 scales, S codebooks of 2^b x G f16, S streams of nv b-bit codes;
    x = (sum over stages, in order, of the chosen entries) * scale"""
    b, G, S = h.bits, h.k & 0xFFFF, (h.k >> 16) & 0xFF
    if not 1 <= b <= 8 or not 1 <= G <= 256 or not 1 <= S <= 8 or h.k >> 24 or h.gran == 2:
        raise ValueError("rvq parameters")
    if h.options or h.value_type or h.index_coding or h.value_bits:
        raise ValueError("rvq parameters")
    unit, U = units(h, h.gran)
    m = h.n // U if U else 0
    if m % G:
        raise ValueError("rvq vector length")
    E, nv = 1 << b, h.n // G
    scales, pos = f32s(h.body, U)
    books, used = f16s(h.body[pos:], S * E * G)
    pos += used
    if not (np.isfinite(scales).all() and (scales >= 0).all()):
        raise ValueError("rvq scale")
    if not np.isfinite(books).all():
        raise ValueError("rvq codebook entry")
    books = books.reshape(S, E, G)
    acc = np.zeros((nv, G), dtype=F32)
    for s in range(S):
        codes, used = bit_stream(h.body[pos:], nv, b)
        pos += used
        acc = (acc + books[s][codes]).astype(F32)
    if pos != len(h.body):
        raise ValueError("payload length")
    with np.errstate(over="ignore"):
        x = (acc.reshape(-1) * scales[unit]).astype(F32)
    if not np.isfinite(x).all():
        raise ValueError("rvq value overflows")
    return x


def decode_base(h):
    if h.wrapper == 4 or h.codec == 0:
        x, used = f32s(h.body, h.n)
    elif h.codec == 1:
        x, used = f16s(h.body, h.n)
    elif h.codec == 2:
        x, used = bf16s(h.body, h.n)
    elif h.codec == 3:
        return decode_quant(h)
    elif h.codec in (4, 6):
        return decode_topk(h)
    elif h.codec == 5:
        return decode_randk(h)
    elif h.codec == 7:
        return decode_ms(h)
    elif h.codec == 8:
        return decode_lowrank(h)
    elif h.codec == 9:
        return decode_fp8(h)
    elif h.codec == 10:
        return decode_rvq(h)
    else:
        raise ValueError("unknown codec %d" % h.codec)
    if used != len(h.body):
        raise ValueError("payload length")
    return x


class Receiver:
    """the receiving end of one boundary: the wrappers' state"""

    def __init__(self, store_fp16):
        self.A = None  # ef21
        self.m = {}  # aqsgd rows by sample id
        self.store_fp16 = store_fp16

    def decode(self, frame):
        h = parse(frame)
        d = decode_base(h)
        if h.wrapper in (0, 1):  # none, ef: the payload is what the receiver uses
            return d
        if h.wrapper == 2:  # ef21: A += C(x - A)
            self.A = d.copy() if self.A is None else (self.A + d).astype(F32)
            return self.A.copy()
        rows = d.reshape(h.dims[0], -1)  # aqsgd
        out = np.empty_like(rows)
        for b, i in enumerate(h.ids):
            row = rows[b] if h.wrapper == 4 else (self.m.get(int(i), np.zeros_like(rows[b])) + rows[b]).astype(F32)
            if self.store_fp16:
                row = row.astype(np.float16).astype(F32)
            self.m[int(i)] = row
            out[b] = row
        return out.reshape(-1)


# ---- what the format promises about values, checked against the input -------

def check_promises(spec, frame, x, got):
    """returns a list of problems (empty when fine); stateless codecs only"""
    h = parse(frame)
    problems = []
    if h.wrapper:
        return problems
    if h.codec == 0 and not np.array_equal(got.view(np.uint32), x.view(np.uint32)):
        problems.append("none is not bit-exact")
    if h.codec == 3 and not (h.options & STOCH) and h.bits > 1:
        unit, U = units(h, h.gran)
        # a rotated frame's promise holds where it was quantized: rotated
        # (and rotating back and forth again moves values by rounding only)
        xr, gr = (rotate(h, x), rotate(h, got)) if h.options & ROT else (x, got)
        for u in range(U):
            xu, gu = xr[unit == u], gr[unit == u]
            span = (xu.max() - xu.min()) if not (h.options & SYM) else 2 * np.abs(xu).max()
            step = span / ((1 << h.bits) - (1 if not (h.options & SYM) else 2))
            slack = 1e-6 * (1 + np.abs(xu).max()) if h.options & ROT else 1e-7
            if np.abs(xu - gu).max() > 0.5 * step * (1 + 1e-5) + slack:
                problems.append("quantization error beyond half a step in unit %d" % u)
    if h.codec == 4 and h.value_type == 0:
        unit, U = units(h, h.gran)
        key = x if h.options & BYVALUE else np.abs(x)
        for u in range(U):
            idx = np.nonzero(unit == u)[0]
            # the k largest keys, ties to the lower index (a stable sort)
            order = idx[np.argsort(-key[idx], kind="stable")][: h.k]
            want = np.zeros(len(idx), dtype=F32)
            want[order - idx[0]] = x[order]
            if not np.array_equal(got[idx], want):
                problems.append("topk unit %d does not keep exactly the k largest" % u)
    return problems


def main(argv):
    directory = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__), "golden")
    failures = checked = 0
    with open(os.path.join(directory, "MANIFEST")) as f:
        lines = [l.rstrip("\n") for l in f if l.strip() and not l.startswith("#")]
    for line in lines:
        name, spec, shape, steps, warmup, ids = line.split("|")
        receiver = Receiver(store_fp16="store=fp16" in spec)
        for s in range(int(steps)):
            base = os.path.join(directory, "%s.%d" % (name, s))
            frame = open(base + ".pzf", "rb").read()
            want = np.fromfile(base + ".out", dtype="<f4")
            x = np.fromfile(base + ".in", dtype="<f4")
            try:
                got = receiver.decode(frame)
            except (ValueError, StopIteration, IndexError) as e:
                print("%s step %d (%s): decoder refused the frame: %s" % (name, s, spec, e))
                failures += 1
                continue
            checked += 1
            if got.shape != want.shape or not np.array_equal(got.view(np.uint32), want.view(np.uint32)):
                diff = np.nonzero(got.view(np.uint32) != want.view(np.uint32))[0] if got.shape == want.shape else []
                print("%s step %d (%s): decodes differently from pipezip at %d elements, first %s: %r vs %r"
                      % (name, s, spec, len(diff), diff[:5], got[diff[:5]] if len(diff) else got.shape,
                         want[diff[:5]] if len(diff) else want.shape))
                failures += 1
            for p in check_promises(spec, frame, x, got):
                print("%s step %d (%s): %s" % (name, s, spec, p))
                failures += 1
            # the frame must be refused when any payload byte changes (the checksum)
            bad = bytearray(frame)
            bad[-1] ^= 0x40
            try:
                parse(bytes(bad))
                print("%s: a corrupted frame was not refused" % name)
                failures += 1
            except ValueError:
                pass
    print("format_decoder: %d frames of %d cases decoded independently, %d problems" % (checked, len(lines), failures))
    return 1 if failures or not checked else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
