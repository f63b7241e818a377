#!/bin/bash
# SPDX-License-Identifier: MIT
# pipeline_overhead.sh PIPEZIP [ROUNDS] [EXAMPLES] — the cost of the pipeline
# itself: one epoch of resnet8 on EXAMPLES Fashion-MNIST images as one stage
# and as Paper A's 4 stages with codec none (threads over in-process links),
# alternated ROUNDS times; prints each round's training seconds (evaluation
# excluded) and the medians' ratio. Same seed, so the same work.
set -euo pipefail
pz="${1:?usage: pipeline_overhead.sh PIPEZIP [ROUNDS] [EXAMPLES]}"; rounds="${2:-3}"; n="${3:-20000}"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for r in $(seq "$rounds"); do
  for kind in one four; do
    if [ "$kind" = one ]; then extra=(--stages 1); else extra=(--cuts layer1,layer2,layer3 --fwd none --bwd none --eval-compress off); fi
    "$pz" train --model resnet8 --epochs 1 --limit-train "$n" --limit-test 100 --progress none --out "$tmp/$kind-$r" "${extra[@]}" > /dev/null
  done
done
python3 - "$tmp" "$rounds" <<'PY'
import json, statistics, sys
t, rounds = sys.argv[1], int(sys.argv[2])
get = lambda d: json.loads(open(f"{t}/{d}/epochs.jsonl").readline())["train_time"]
one = [get(f"one-{r}") for r in range(1, rounds + 1)]
four = [get(f"four-{r}") for r in range(1, rounds + 1)]
print("1 stage,  s/epoch:", " ".join(f"{x:.2f}" for x in one), " median %.2f" % statistics.median(one))
print("4 stages, s/epoch:", " ".join(f"{x:.2f}" for x in four), " median %.2f" % statistics.median(four))
print("4 stages / 1 stage: %.3f" % (statistics.median(four) / statistics.median(one)))
PY
