#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# compare_torch_codecs.sh — pipezip's encoders beside the same operations in
# PyTorch (bench/torch_codecs.py), same size, distribution and thread count,
# measured in one run; prints the ratio of times (above 1: pipezip faster).
# Usage: bench/compare_torch_codecs.sh [PATH/TO/pipezip] [ELEMENTS] [THREADS]
set -euo pipefail
PZ=${1:-./build/pipezip}
N=${2:-10000000}
T=${3:-1}
here=$(cd "$(dirname "$0")" && pwd)
pz=$("$PZ" bench codecs --format json --sizes "$N" --threads "$T" --data gradient \
      --codecs "topk:0.01;topk:0.1;topk:0.3;q8;q4;fp16;bf16")
th=$(/usr/bin/python3 "$here/torch_codecs.py" --elements "$N" --threads "$T" --data gradient)
/usr/bin/python3 - "$pz" "$th" <<'PY'
import json, sys
pz = [json.loads(l) for l in sys.argv[1].splitlines()]
th = {j["op"].split(" ")[0]: j for j in map(json.loads, sys.argv[2].splitlines())}
bw = next(j for j in pz if j["bench"] == "memory_read")
print(f"{pz[1]['elements']} elements, {bw['threads']} thread(s), memory read {bw['gb_per_s']} GB/s, pipezip kernels {bw['kernels']}")
print(f"{'codec':<12} {'pipezip ms':>11} {'torch ms':>10} {'torch/pipezip':>14}   torch op")
full = {j["op"].split(" ")[0]: j["op"] for j in map(json.loads, sys.argv[2].splitlines())}
for j in pz[1:]:
    name = j["codec"]
    if name in th:
        t = th[name]
        print(f"{name:<12} {j['encode_ms']:>11.2f} {t['ms']:>10.2f} {t['ms'] / j['encode_ms']:>13.1f}x   {full[name]}")
PY
