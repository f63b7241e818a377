#!/usr/bin/env bash
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

finish test_codec_cli.sh
