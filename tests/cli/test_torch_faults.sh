#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_torch_faults.sh — examples/torch_pipeline_gpt.py under torchrun, 4
# processes, checkpointing every 2 steps, with one rank SIGKILLed right
# after a step (PZ_TEST_KILL_RANK_AT=R:K: a state, not a time) at 20 kill
# points drawn from a seed this prints. Each time: torchrun ends (no
# process hangs), every survivor's error names the rank that stopped and a
# checkpoint every rank saved whole, every saved file loads, and --resume
# from the last whole checkpoint reaches exactly the uninterrupted run's
# step losses, evaluations and byte counts. A kill before every rank saved
# a checkpoint: the survivors say none was saved, and --resume refuses.
# Usage: test_torch_faults.sh SOURCE_DIR [SEED] [POINTS]
set -euo pipefail
src="$1"
seed="${2:-$(( $(date +%s) % 100000 ))}" points="${3:-20}"
if ! /usr/bin/python3 -c 'import torch.distributed as d; assert d.is_gloo_available()' 2>/dev/null; then
  echo "test_torch_faults.sh: no torch with gloo; skipped" >&2
  exit 77
fi
tmp=$(mktemp -d /tmp/pz-test-tf-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
echo "test_torch_faults.sh: seed $seed (again: test_torch_faults.sh SOURCE_DIR $seed $points)"
/usr/bin/python3 - "$tmp/text.txt" <<'PY'
import random, sys
random.seed(7)
w = "and the of unto he said LORD God Israel shall them his in that for be is thou with".split()
open(sys.argv[1], "w").write(" ".join(random.choice(w) + random.choice(["", "", ",", ".\n"]) for _ in range(30000)))
PY
port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
run() { # run NAME ARGS...: torchrun's status
  /usr/bin/python3 -m torch.distributed.run --nnodes 1 --nproc_per_node 4 --master_addr 127.0.0.1 --master_port "$port" \
    -r 2 -t 2 --monitor_interval 1 --log_dir "$tmp/logs_$1" "$src/examples/torch_pipeline_gpt.py" --layers 4 --d 32 --heads 2 --ctx 32 \
    --batch 8 --micro-batches 2 --steps 8 --eval-every 3 --eval-windows 16 --final-eval-windows 32 \
    --data "text:$tmp/text.txt" --fwd "ef(q4)" --bwd "aqsgd(q8)" --checkpoint-every 2 --timeout 120 "${@:2}" > "$tmp/$1.log" 2>&1
}
fail=0
bad() { echo "FAIL: $*" >&2; fail=$((fail + 1)); }
run whole --out "$tmp/whole" || { bad "the uninterrupted run: $(tail -20 "$tmp/whole.log")"; exit 1; }
# the same records, seconds aside
same() {
  /usr/bin/python3 - "$tmp/whole" "$1" <<'PY'
import json, sys
a, b = sys.argv[1:]
def rows(d, f):
    return [{k: v for k, v in json.loads(l).items() if k not in ("seconds", "waited_seconds")} for l in open(f"{d}/{f}")]
for f in ("steps.jsonl", "evals.jsonl", "boundaries.jsonl"):
    if rows(a, f) != rows(b, f):
        sys.exit(f"{f} differs:\n{open(f'{a}/{f}').read()}\n{open(f'{b}/{f}').read()}")
sa, sb = (json.load(open(f"{d}/summary.json")) for d in (a, b))
for k in ("val_loss", "val_loss_plain", "train_loss", "fwd_bytes", "bwd_bytes", "fp32_bytes"):
    if sa[k] != sb[k]:
        sys.exit(f"summary {k}: {sa[k]} against {sb[k]}")
PY
}
/usr/bin/python3 -c 'import json; assert len(open("'"$tmp"'/whole/steps.jsonl").readlines()) == 8' || bad "8 step records"
# the kill points: (rank, step), steps 1-8 (after step 8: during the final byte count)
mapfile -t kills < <(/usr/bin/python3 -c "
import random
r = random.Random($seed)
pts = [(0, 1), (3, 8)] + [(r.randrange(4), r.randrange(1, 9)) for _ in range($points - 2)]
print('\n'.join(f'{a}:{b}' for a, b in pts[:$points]))")
i=0
for k in "${kills[@]}"; do
  i=$((i + 1)); d="$tmp/k$i"
  if PZ_TEST_KILL_RANK_AT="$k" run "k$i" --out "$d"; then bad "kill $k: torchrun reported success"; continue; fi
  grep -q "Signal 9 (SIGKILL)" "$tmp/k$i.log" || bad "kill $k: torchrun does not name the killed rank"
  # each survivor's own stderr (torchrun keeps one per rank: the console interleaves them)
  msgs=""
  for r in 0 1 2 3; do
    [ "$r" = "${k%:*}" ] && continue
    m=$(grep -h "^torch_pipeline_gpt: rank $r:" "$tmp/logs_k$i"/*/attempt_0/"$r"/stderr.log 2>/dev/null || true)
    [ -n "$m" ] || bad "kill $k: rank $r did not say why it stopped: $(tail -5 "$tmp/logs_k$i"/*/attempt_0/"$r"/stderr.log 2>/dev/null)"
    msgs+="$m"$'\n'
  done
  # a survivor names the rank it lost, or says torchrun stopped it (torchrun's report names the killed rank)
  grep . <<<"$msgs" | grep -qv "stopped while this rank\|another rank stopped\|stopped by SIGTERM" && bad "kill $k: a survivor's error names no cause: $msgs"
  grep -q "rank *: ${k%:*} (local_rank: ${k%:*})" "$tmp/k$i.log" || bad "kill $k: torchrun's report does not name rank ${k%:*}"
  # every saved file loads, each checkpoint a survivor names is whole; no whole one at all (the kill came before
  # every rank saved one): each survivor says so, and --resume refuses
  whole=$(/usr/bin/python3 - "$d/checkpoints" <<PY || echo bad
import glob, os, re, sys, torch
d = sys.argv[1]
for f in glob.glob(f"{d}/step-*/rank-*.pt"):
    torch.load(f)
for n in set(re.findall(r"saved whole is (\S+)", """$msgs""")):
    assert all(os.path.isfile(f"{n}/rank-{r}.pt") for r in range(4)), n + " is not whole"
steps = [int(s[5:]) for s in os.listdir(d) if s.startswith("step-") and all(os.path.isfile(f"{d}/{s}/rank-{r}.pt") for r in range(4))] if os.path.isdir(d) else []
print(max(steps) if steps else "none")
PY
)
  [ "$whole" = bad ] && { bad "kill $k: checkpoints: $msgs"; continue; }
  if [ "$whole" = none ]; then
    [ "$(grep -c "no checkpoint was saved whole" <<<"$msgs")" -eq 3 ] || bad "kill $k: no whole checkpoint, yet: $msgs"
    run "r$i" --out "$d" --resume "$d/checkpoints" && bad "kill $k: --resume without a checkpoint went on"
    grep -q "no checkpoint in .* that all 4 ranks saved whole" "$tmp/r$i.log" || bad "kill $k: the refusal: $(tail -5 "$tmp/r$i.log")"
    continue
  fi
  [ "${k#*:}" -ge 2 ] || bad "kill $k: a whole checkpoint (step $whole) before step 2"
  if run "r$i" --out "$d" --resume "$d/checkpoints"; then
    same "$d" || bad "kill $k: the resumed run differs from the uninterrupted one"
  else
    bad "kill $k: --resume: $(tail -20 "$tmp/r$i.log")"
  fi
done
echo "test_torch_faults.sh: ${#kills[@]} kill points (seed $seed), $fail failed"
[ "$fail" -eq 0 ]
