#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# compare_conv.sh — every convolution shape of resnet8 and resnet20, forward
# and backward of a batch: pipezip's kernels as chosen, pipezip's im2col +
# OpenBLAS path (PZ_CONV_KERNELS=im2col) and PyTorch's (oneDNN), alternated
# ROUNDS times; per shape the median over rounds of each one's median.
# Usage: bench/compare_conv.sh [BUILD_DIR] [BATCH] [THREADS] [ROUNDS]
set -euo pipefail
BUILD=${1:-./build}
BATCH=${2:-128}
THREADS=${3:-2}
ROUNDS=${4:-3}
here=$(cd "$(dirname "$0")" && pwd)
[ -x "$BUILD/bench_conv" ] || { echo "compare_conv.sh: no $BUILD/bench_conv (cmake --build $BUILD)" >&2; exit 1; }
/usr/bin/python3 -c 'import torch' 2>/dev/null || { echo "compare_conv.sh: needs Debian's python3-torch" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for r in $(seq "$ROUNDS"); do
  "$BUILD/bench_conv" "$BATCH" "$THREADS" >> "$tmp/direct"
  PZ_CONV_KERNELS=im2col "$BUILD/bench_conv" "$BATCH" "$THREADS" >> "$tmp/im2col"
  /usr/bin/python3 "$here/torch_conv.py" --batch "$BATCH" --threads "$THREADS" >> "$tmp/torch"
done
echo "convolutions, batch $BATCH, $THREADS threads, $ROUNDS alternated rounds; forward / backward ms (medians)"
echo "  CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //') (family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' '), model $(grep -m1 '^model\s*:' /proc/cpuinfo | cut -d: -f2 | tr -d ' '))"
/usr/bin/python3 - "$tmp" <<'PY'
import json, statistics, sys
d = sys.argv[1]
runs = {k: [json.loads(l) for l in open(f"{d}/{k}")] for k in ("direct", "im2col", "torch")}
shapes = list(dict.fromkeys(r["shape"] for r in runs["direct"]))
def med(k, s, f):
    return statistics.median(r[f] for r in runs[k] if r["shape"] == s)
print(f"  {'shape':26} {'pipezip (' + runs['direct'][0]['kernels'] + ')':>22} {'im2col + OpenBLAS':>20} {'PyTorch (oneDNN)':>20}  torch/pipezip")
tot = {k: 0.0 for k in runs}
for s in shapes:
    v = {k: (med(k, s, "forward_ms"), med(k, s, "backward_ms")) for k in runs}
    for k in runs: tot[k] += sum(v[k])
    cell = lambda k: f"{v[k][0]:7.2f} / {v[k][1]:7.2f}"
    print(f"  {s:26} {cell('direct'):>22} {cell('im2col'):>20} {cell('torch'):>20}  {sum(v['torch']) / sum(v['direct']):5.2f}x")
print(f"  {'all shapes, fwd + bwd':26} {tot['direct']:22.2f} {tot['im2col']:20.2f} {tot['torch']:20.2f}  {tot['torch'] / tot['direct']:5.2f}x")
PY
