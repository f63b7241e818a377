#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_codec_cli.sh — `pipezip codec` from outside: encode/decode/inspect on
# raw float32 and .npy files, the round trips it promises, and errors that
# name the problem. Usage: test_codec_cli.sh PATH/TO/pipezip
set -u
PZ="$1"
. "$(dirname "$0")/lib.sh" codec-cli

# inputs: 2x3x4x5 float32 as raw and as .npy (written by hand: no numpy needed)
python3 - "$tmp" <<'PY'
import math, struct, sys
d = sys.argv[1]
vals = [math.sin(0.7 * i) * (1.0 if i % 3 else -0.5) for i in range(120)]
raw = struct.pack("<120f", *vals)
open(f"{d}/x.f32", "wb").write(raw)
hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, 4, 5), }"
hdr += " " * ((64 - (10 + len(hdr) + 1) % 64) % 64) + "\n"
open(f"{d}/x.npy", "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode() + raw)
open(f"{d}/fortran.npy", "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.replace("False", "True ").encode() + raw)
PY

expect 0 "Codec specs:" -- "$PZ" codec --help
expect 0 "ms:F" -- "$PZ" codec --help
expect 0 "none: 120 elements -> 544 bytes \(36.2667 bits/element, 0.88x smaller than fp32\), relative error 0" -- \
  "$PZ" codec encode --codec none --shape 2x3x4x5 "$tmp/x.f32" "$tmp/none.pzf"
expect 0 "" -- "$PZ" codec decode "$tmp/none.pzf" "$tmp/none.f32"
if cmp -s "$tmp/x.f32" "$tmp/none.f32"; then ok; else bad "none: raw round trip is not bit-exact"; fi
expect 0 "q4:asym,nearest,per=tensor: 120 elements -> 132 bytes" -- "$PZ" codec encode --codec q4 "$tmp/x.npy" "$tmp/q4.pzf"
expect 0 "codec: +quant \(id 3\)" -- "$PZ" codec inspect "$tmp/q4.pzf"
expect 0 "shape: +2x3x4x5 \(120 elements\)" -- "$PZ" codec inspect "$tmp/q4.pzf"
expect 0 "quantization: 4 bits, asymmetric, nearest rounding, per tensor" -- "$PZ" codec inspect "$tmp/q4.pzf"
expect 0 "" -- "$PZ" codec decode "$tmp/q4.pzf" "$tmp/q4.npy"
python3 - "$tmp" <<'PY' && ok || bad "q4 .npy decode: wrong header or values"
import struct, sys
d = sys.argv[1]
b = open(f"{d}/q4.npy", "rb").read()
assert b[:8] == b"\x93NUMPY\x01\x00"
hl = struct.unpack("<H", b[8:10])[0]
h = b[10:10 + hl].decode()
assert "'shape': (2, 3, 4, 5)" in h and "'<f4'" in h and (10 + hl) % 64 == 0, h
y = struct.unpack("<120f", b[10 + hl:])
x = struct.unpack("<120f", open(f"{d}/x.f32", "rb").read())
step = (max(x) - min(x)) / 15
assert max(abs(a - c) for a, c in zip(x, y)) <= step / 2 * 1.0001
PY
expect 0 "kept: +k = 12 per sample" -- bash -c "'$PZ' codec encode --codec topk:0.2 '$tmp/x.npy' '$tmp/t.pzf' >/dev/null && '$PZ' codec inspect '$tmp/t.pzf'"
expect 0 "2-bit codes, signed" -- bash -c "'$PZ' codec encode --codec ms:0.1,bits=2 '$tmp/x.npy' '$tmp/m.pzf' >/dev/null && '$PZ' codec inspect '$tmp/m.pzf'"
expect 0 "wrapper ef21" -- bash -c "'$PZ' codec encode --codec 'ef21(q2)' '$tmp/x.npy' '$tmp/e.pzf' >/dev/null && '$PZ' codec inspect '$tmp/e.pzf'"
expect 0 "sample ids: +yes \(2\)" -- bash -c "'$PZ' codec encode --codec 'aqsgd(q2)' '$tmp/x.npy' '$tmp/a.pzf' >/dev/null && '$PZ' codec inspect '$tmp/a.pzf'"

# errors
expect 2 "codec spec 'q9': unknown codec name" -- "$PZ" codec encode --codec q9 "$tmp/x.npy" "$tmp/o"
expect 2 "needs --codec SPEC" -- "$PZ" codec encode "$tmp/x.npy" "$tmp/o"
expect 1 "cannot open '$tmp/missing.npy'" -- "$PZ" codec encode --codec q4 "$tmp/missing.npy" "$tmp/o"
expect 1 "holds 480 bytes of data, a float32 tensor of 121 elements needs 484" -- \
  "$PZ" codec encode --codec q4 --shape 11x11 "$tmp/x.f32" "$tmp/o"
expect 1 "Fortran order" -- "$PZ" codec encode --codec q4 "$tmp/fortran.npy" "$tmp/o"
head -c 100 "$tmp/q4.pzf" > "$tmp/short.pzf"
expect 1 "bad frame \(length mismatch\)" -- "$PZ" codec decode "$tmp/short.pzf" "$tmp/o"
head -c 30 "$tmp/q4.pzf" > "$tmp/tiny.pzf"
expect 1 "bad frame \(truncated\)" -- "$PZ" codec inspect "$tmp/tiny.pzf"
python3 -c "import sys; b=bytearray(open(sys.argv[1],'rb').read()); b[70]^=1; open(sys.argv[2],'wb').write(b)" "$tmp/q4.pzf" "$tmp/flip.pzf"
expect 1 "bad frame \(checksum mismatch\): CRC-32C is [0-9a-f]+, header says [0-9a-f]+" -- "$PZ" codec inspect "$tmp/flip.pzf"
expect 2 "unknown action 'compress'" -- "$PZ" codec compress
expect 0 "memory read bandwidth [0-9.]+ GB/s" -- "$PZ" bench codecs --sizes 1e4 --repeat 1 --codecs "q4;topk:0.1"
expect 0 '"bench": "codec", "codec": "ms:0.01,bits=2"' -- "$PZ" bench codecs --sizes 1e4 --repeat 1 --codecs "ms:0.01,bits=2" --format json
expect 2 "codec spec 'zip'" -- "$PZ" bench codecs --codecs zip

# the edges: NaN and infinities refused alike by every lossy encoder, carried by the float formats
python3 - "$tmp" <<'PY'
import struct, sys
open(f"{sys.argv[1]}/nan.f32", "wb").write(struct.pack("<8f", 1, 2, float("nan"), 4, 5, float("inf"), 7, 8))
PY
for c in q4 topk:0.5 "topk:0.5,values=q4" randtopk:0.5 randk:0.5 "ms:0.5,bits=2" "ef(topk:0.5)" "ef21(q4)"; do
  expect 1 "input is not finite \(2 of its 8 values" -- "$PZ" codec encode --codec "$c" --shape 2x4 "$tmp/nan.f32" "$tmp/nan.pzf"
done
expect 0 "relative error" -- "$PZ" codec encode --codec fp16 --shape 2x4 "$tmp/nan.f32" "$tmp/nan.pzf"
# frames crafted past what the encoder writes, CRC made right: inspect refuses what decode refuses
"$PZ" codec encode --codec q4 --shape 2x60 "$tmp/x.f32" "$tmp/q4.pzf" > /dev/null
"$PZ" codec encode --codec "topk:0.5,index=bitmap,per=sample" --shape 2x60 "$tmp/x.f32" "$tmp/tk.pzf" > /dev/null
python3 - "$tmp" <<'PY'
import struct, sys
d = sys.argv[1]
def crc32c(data):  # FORMAT.md: Castagnoli, reflected, init and xor-out 0xFFFFFFFF
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF
def seal(b):
    b = bytearray(b)
    struct.pack_into("<I", b, 56, crc32c(bytes(b[:56]) + bytes(b[64:])))
    return bytes(b)
q = bytearray(open(f"{d}/q4.pzf", "rb").read())
q[24] = 9  # 9-bit quantization
open(f"{d}/q9.pzf", "wb").write(seal(q))
big = bytearray(q[:64])  # 2^31 elements announced, a few bytes of payload
big[24] = 4
struct.pack_into("<4I", big, 8, 1 << 16, 1 << 15, 0, 0)
big[6] = 2
big += b"\0" * 480
struct.pack_into("<Q", big, 48, 480)
open(f"{d}/big.pzf", "wb").write(seal(big))
t = bytearray(open(f"{d}/tk.pzf", "rb").read())
# the bitmap (120 bits) starts the payload: move one position from sample 0 to sample 1, same total
bits = int.from_bytes(t[64:79], "little")
first = next(i for i in range(60) if bits >> i & 1)
free = next(i for i in range(60, 120) if not bits >> i & 1)
bits &= ~(1 << first); bits |= 1 << free
t[64:79] = bits.to_bytes(15, "little")
open(f"{d}/tkbad.pzf", "wb").write(seal(t))
PY
expect 1 "quantization width 9" -- "$PZ" codec decode "$tmp/q9.pzf" "$tmp/out.f32"
expect 1 "quantization width 9" -- "$PZ" codec inspect "$tmp/q9.pzf"
expect 1 "decoding limit" -- "$PZ" codec decode "$tmp/big.pzf" "$tmp/out.f32"
# an ef21 frame alone is a difference, not the tensor: refused, naming the wrapper and what decodes the stream
"$PZ" codec encode --codec "ef21(q4)" "$tmp/q4.npy" "$tmp/ef21.pzf" > /dev/null
expect 1 "an ef21 frame holds the compressed difference .* decode the stream with a receiving codec of its spec" -- \
  "$PZ" codec decode "$tmp/ef21.pzf" "$tmp/out.f32"
expect 1 "decoding limit" -- "$PZ" codec inspect "$tmp/big.pzf"
expect 1 "unit 0 has 29 positions in its bitmap, not 30" -- "$PZ" codec decode "$tmp/tkbad.pzf" "$tmp/out.f32"
expect 1 "unit 0 has 29 positions" -- "$PZ" codec inspect "$tmp/tkbad.pzf"
# files the user names are written through, not replaced: a FIFO, a symlink, - for stdin and stdout
"$PZ" codec decode "$tmp/q4.pzf" "$tmp/ref.f32" > /dev/null
mkfifo "$tmp/fifo"
cat "$tmp/fifo" > "$tmp/from-fifo" &
cat_pid=$!
"$PZ" codec decode "$tmp/q4.pzf" "$tmp/fifo" > /dev/null && wait "$cat_pid" && [ -p "$tmp/fifo" ] && cmp -s "$tmp/from-fifo" "$tmp/ref.f32" \
  && ok || bad "decoding into a FIFO"
ln -s "$tmp/target.f32" "$tmp/link.f32"
"$PZ" codec decode "$tmp/q4.pzf" "$tmp/link.f32" > /dev/null && [ -L "$tmp/link.f32" ] && cmp -s "$tmp/target.f32" "$tmp/ref.f32" \
  && ok || bad "decoding through a symlink"
"$PZ" codec encode --codec q4 --shape 2x60 - - < "$tmp/x.f32" 2>/dev/null | "$PZ" codec decode - - > "$tmp/piped.f32" && cmp -s "$tmp/piped.f32" "$tmp/ref.f32" \
  && ok || bad "stdin/stdout round trip"
# a .npy on standard input is known by its magic: its header is not read as floats
"$PZ" codec encode --codec none - "$tmp/npy-stdin.pzf" < "$tmp/x.npy" > /dev/null && "$PZ" codec inspect "$tmp/npy-stdin.pzf" | grep -Eq "shape: +2x3x4x5 \(120 elements\)" \
  && ok || bad "a .npy on standard input: its shape from its header"
expect 1 "--shape 4x30 does not match the shape in the .npy header" -- bash -c "'$PZ' codec encode --codec none --shape 4x30 - '$tmp/o.pzf' < '$tmp/x.npy'"
expect 1 "shape '4xq': expected sizes like" -- bash -c "'$PZ' codec encode --codec none --shape 4xq - '$tmp/o.pzf' < '$tmp/x.npy'"

finish test_codec_cli.sh
