#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_torch_pipeline.sh — examples/torch_pipeline_gpt.py under torchrun, 4
# processes, a small GPT: its first step's frames, each boundary and
# direction, are byte for byte what the C engine (`pipezip codec encode`)
# makes of the same tensors; it trains (the validation loss falls below a
# uniform guess's), reports bytes that add up, and runs GPipe with
# stateful codecs too. No timing: each run is waited for.
# Usage: test_torch_pipeline.sh PIPEZIP SOURCE_DIR
set -euo pipefail
pz="$1" src="$2"
if ! /usr/bin/python3 -c 'import torch.distributed as d; assert d.is_gloo_available()' 2>/dev/null; then
  echo "test_torch_pipeline.sh: no torch with gloo; skipped" >&2
  exit 77
fi
tmp=$(mktemp -d /tmp/pz-test-tp-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
# a corpus of its own (a doc as data made the loss bar move with every edit of the doc)
/usr/bin/python3 - "$tmp/text.txt" <<'PY'
import random, sys
random.seed(7)
w = "and the of unto he said LORD God Israel shall them his in that for be is thou with".split()
open(sys.argv[1], "w").write(" ".join(random.choice(w) + random.choice(["", "", ",", ".\n"]) for _ in range(30000)))
PY
port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# (torchrun 1.13 on Python 3.11 needs nonzero -r/-t: its "0" parses to nothing)
run() {
  local out="$1"; shift
  /usr/bin/python3 -m torch.distributed.run --nnodes 1 --nproc_per_node 4 --master_addr 127.0.0.1 --master_port "$port" \
    -r 1 -t 1 --log_dir "$tmp/logs_$(basename "$out")" \
    "$src/examples/torch_pipeline_gpt.py" --layers 4 --d 32 --heads 2 --ctx 32 --batch 8 --micro-batches 2 \
    --steps 8 --eval-every 4 --eval-windows 16 --final-eval-windows 32 --data "text:$tmp/text.txt" --out "$out" "$@" \
    >"$out.log" 2>&1 || { echo "FAIL: torchrun $*:" >&2; tail -40 "$out.log" >&2; return 1; }
}
if run "$tmp/a" --fwd q4:per=token --bwd q8 --dump-first-step "$tmp/dump"; then
  for b in 1 2 3; do
    for side in fwd bwd; do
      spec=q8; [ $side = fwd ] && spec=q4:per=token
      "$pz" codec encode --codec "$spec" "$tmp/dump/b${b}_$side.npy" "$tmp/c.pzf" >/dev/null
      cmp -s "$tmp/c.pzf" "$tmp/dump/b${b}_$side.pzf" ||
        { echo "FAIL: boundary $b $side: the pipeline's frame differs from pipezip codec encode's" >&2; fail=$((fail + 1)); }
    done
  done
  /usr/bin/python3 - "$tmp/a" <<'PY' || fail=$((fail + 1))
import json, math, sys
d = sys.argv[1]
s = json.load(open(d + "/summary.json"))
rows = [json.loads(l) for l in open(d + "/boundaries.jsonl")]
evals = [json.loads(l) for l in open(d + "/evals.jsonl")]
ok = True
def check(c, what):
    global ok
    if not c:
        print("FAIL:", what, file=sys.stderr)
        ok = False
check(len(rows) == 3 and [r["boundary"] for r in rows] == [1, 2, 3], "three boundaries")
check(s["fwd_bytes"] == sum(r["fwd_bytes"] for r in rows) and s["bwd_bytes"] == sum(r["bwd_bytes"] for r in rows), "bytes add up")
# 8 steps x 2 micro-batches each way, 4 x 32 x 32 activations per micro-batch
check(all(r["fwd_frames"] == 16 and r["bwd_frames"] == 16 and r["fwd_elements"] == 16 * 4 * 32 * 32 for r in rows), "frames per boundary")
# q4 per token of 32 features: 16 bytes of codes and an 8-byte scale pair a token
check(all(5.0 < r["fwd_ratio"] < 5.34 and 3.9 < r["bwd_ratio"] < 4.01 for r in rows), "q4 per token and q8 ratios: " + str(rows))
check(len(evals) == 2 and math.isfinite(s["val_loss"]) and s["val_loss"] < math.log(256) - 0.5, "trains: " + str(s))
check(abs(s["val_loss"] - s["val_loss_plain"]) < 0.1, "compressed and plain evaluation agree roughly")
sys.exit(0 if ok else 1)
PY
else
  fail=$((fail + 1))
fi
# evaluations of fewer windows than a batch (6 < 8) are the mean over those
# windows, not 0 (the last batch is a shorter one)
if run "$tmp/b" --fwd "ef(topk:0.3)" --bwd "ef21(q8)" --schedule gpipe --eval-windows 6 --final-eval-windows 6; then
  grep -q "ef(topk:0.3)" "$tmp/b/boundaries.jsonl" || { echo "FAIL: gpipe run's boundaries" >&2; fail=$((fail + 1)); }
  /usr/bin/python3 -c 'import json, math, sys; e = [json.loads(l) for l in open(sys.argv[1])]
sys.exit(not (len(e) == 2 and all(math.log(256) - 3 < x["val_loss"] < math.log(256) + 1 for x in e)))' "$tmp/b/evals.jsonl" ||
    { echo "FAIL: 6-window evaluations: $(cat "$tmp/b/evals.jsonl")" >&2; fail=$((fail + 1)); }
else
  fail=$((fail + 1))
fi
# the DDP example: 2 ranks, pipezip's hook (q8: about 4x less than fp32) and torch's PowerSGD, each trains and reports
for hook in "pipezip:q8" "powersgd:2"; do
  if /usr/bin/python3 -m torch.distributed.run --nnodes 1 --nproc_per_node 2 --master_addr 127.0.0.1 --master_port "$port" -r 1 -t 1 \
       --log_dir "$tmp/logs_ddp_${hook%%:*}" "$src/examples/torch_ddp_gpt.py" --hook "$hook" --layers 2 --d 32 --heads 2 --ctx 32 \
       --steps 12 --eval-windows 32 --data "text:$tmp/text.txt" --out "$tmp/ddp.jsonl" > "$tmp/ddp.log" 2>&1; then
    :
  else
    echo "FAIL: torch_ddp_gpt.py --hook $hook:" >&2; tail -20 "$tmp/ddp.log" >&2; fail=$((fail + 1))
  fi
done
/usr/bin/python3 - "$tmp/ddp.jsonl" <<'PY' || fail=$((fail + 1))
import json, math, sys
rows = {r["hook"]: r for r in map(json.loads, open(sys.argv[1]))}
ok = set(rows) == {"pipezip:q8", "powersgd:2"} and 3.8 < rows["pipezip:q8"]["ratio"] < 4.0 and rows["powersgd:2"]["ratio"] > 1.5
ok = ok and all(math.isfinite(r["val_loss"]) and r["val_loss"] < math.log(256) for r in rows.values())
print("" if ok else "FAIL: the DDP example's records: " + str(rows), file=sys.stderr)
sys.exit(0 if ok else 1)
PY
# fewer windows than micro-batches: refused before any process group, naming the flag
msg=$(/usr/bin/python3 "$src/examples/torch_pipeline_gpt.py" --micro-batches 2 --eval-windows 1 2>&1) && fail=$((fail + 1))
grep -q -- "--eval-windows 1 is fewer windows than the 2 micro-batches" <<<"$msg" ||
  { echo "FAIL: --eval-windows 1: $msg" >&2; fail=$((fail + 1)); }
echo "test_torch_pipeline.sh: $((13 - fail)) passed, $fail failed"
[ "$fail" -eq 0 ]
