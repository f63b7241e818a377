#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The sweep behind docs/PYTHON.md's pipeline result: examples/torch_pipeline_gpt.py
# under torchrun, 4 stages (gpt-tiny, KJV), 1000 steps, seeds 1-3, compressed
# (q4:per=token / q8) and uncompressed (none / none); then results.csv.
# From the repository root, after a build: bash docs/results-torch/p1_pipeline_gpt/run.sh OUT_DIR [STEPS]
# (p2_pipeline_gpt_epoch: STEPS=1889, one epoch, --eval-every 500)
set -euo pipefail
out="${1:?usage: run.sh OUT_DIR [STEPS]}"
steps="${2:-1000}"
every=250; [ "$steps" -gt 1000 ] && every=500
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
mkdir -p "$out/runs"
for seed in 1 2 3; do
  for cfg in "q4:per=token q8" "none none"; do
    set -- $cfg
    id="seed${seed}_$(echo "$1" | tr ':=' '__')_$2"
    [ -f "$out/runs/$id/summary.json" ] && continue
    PYTHONPATH="$root/python" torchrun --standalone --nproc_per_node 4 -r 1 -t 1 \
      "$root/examples/torch_pipeline_gpt.py" --fwd "$1" --bwd "$2" --seed "$seed" --steps "$steps" --eval-every "$every" \
      --data-dir "$root/data" --out "$out/runs/$id" > "$out/$id.log" 2>&1
  done
done
/usr/bin/python3 - "$out" <<'PY'
import csv, json, os, sys
out = sys.argv[1]
rows = []
for id in sorted(os.listdir(os.path.join(out, "runs"))):
    d = os.path.join(out, "runs", id)
    c, s = json.load(open(os.path.join(d, "config.json"))), json.load(open(os.path.join(d, "summary.json")))
    rows.append({"id": id, "seed": c["seed"], "model": c["model"], "data": c["data"], "stages": c["stages"],
                 "schedule": c["schedule"], "micro_batches": c["micro_batches"], "batch": c["batch"], "steps": c["steps"],
                 "lr": c["lr"], "weight_decay": c["weight_decay"], "warmup": c["warmup"], "clip_norm": c["clip_norm"],
                 "fwd": c["fwd"], "bwd": c["bwd"], "threads": c["threads"],
                 "val_loss": round(s["val_loss"], 5), "val_loss_plain": round(s["val_loss_plain"], 5),
                 "train_loss": round(s["train_loss"], 5), "fwd_bytes": s["fwd_bytes"], "bwd_bytes": s["bwd_bytes"],
                 "fp32_bytes": s["fp32_bytes"], "ratio": round(s["ratio"], 4) if s["ratio"] else "",
                 "seconds": round(s["seconds"], 1)})
with open(os.path.join(out, "results.csv"), "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
print(open(os.path.join(out, "results.csv")).read())
PY
