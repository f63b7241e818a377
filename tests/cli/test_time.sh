#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_time.sh — `pipezip time`, the dry timing mode, as a user meets it:
# ProtocolNanoGPT's two records from their published settings within 5% of
# their links-on steps, --micro-batches auto picking the least step of the
# counts it tries, the three sources of bytes, and errors that name the
# problem. Virtual clocks only. Usage: test_time.sh PATH/TO/pipezip
set -u
PZ=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
. "$(dirname "$0")/lib.sh" time

expect 0 "Usage: pipezip time" -- "$PZ" time --help
expect 0 "  time " -- "$PZ" --help
ref=(--model gpt:layers=8,d=1024,heads=8,ctx=1024,untied=1 --vocab 50304 --cuts h.0,h.1,h.2,h.3,h.4,h.5,h.6
     --tokens-per-step 524288 --pipe-schedule 1f1b --link-model shared --link-bandwidth 200mbit --link-latency 50ms --clip-norm 0)
field() { python3 -c "import json,sys; print(json.loads(sys.stdin.read())['$1'])"; }
within() { python3 -c "import sys; a, b, t = map(float, sys.argv[1:]); sys.exit(0 if abs(a / b - 1) <= t else 1)" "$@"; }
# the dense record: 64 micro-batches, bf16 (2048 B/token each way), 0.539 s a step with the links off, 100.475 s on
dense=$("$PZ" time "${ref[@]}" --micro-batches 64 --bytes-per-token 2048 --links-off-step 0.539 --format json | field step_s)
if within "$dense" 100.475 0.05; then ok; else bad "the dense record: $dense s a step, published 100.475 s"; fi
# ReparamSSN: 32 micro-batches, 322 B/token, 0.655 s off, 19.889 s on
ssn=$("$PZ" time "${ref[@]}" --micro-batches 32 --bytes-per-token 322 --links-off-step 0.655 --format json | field step_s)
if within "$ssn" 19.889 0.05; then ok; else bad "the ReparamSSN record: $ssn s a step, published 19.889 s"; fi
echo "records: dense $dense s (100.475), ReparamSSN $ssn s (19.889)"
expect 0 "its critical path: compute .* transmission .* latency" -- "$PZ" time "${ref[@]}" --micro-batches 64 \
  --bytes-per-token 2048 --links-off-step 0.539
# the duplex model is faster on the same bytes (its latency overlaps, each direction has its own wire)
duplex=$("$PZ" time "${ref[@]}" --link-model duplex --micro-batches 64 --bytes-per-token 2048 --links-off-step 0.539 --format json | field step_s)
if python3 -c "import sys; sys.exit(0 if float('$duplex') < float('$dense') else 1)"; then ok; else bad "duplex $duplex s >= shared $dense s"; fi

# auto: the least step of every count that splits the batch
tiny=(--model gpt:layers=4,d=64,heads=2,ctx=32,untied=1 --stages 4 --batch 24 --pipe-schedule 1f1b --link-model shared
      --link-bandwidth 20mbit --link-latency 20ms --compute-rate 1gflops --fwd q8 --bwd q8)
best=$("$PZ" time "${tiny[@]}" --micro-batches auto --format json)
bm=$(field micro_batches <<<"$best"); bs=$(field step_s <<<"$best")
least=$(for m in 1 2 3 4 6 8 12 24; do printf '%s %s\n' "$("$PZ" time "${tiny[@]}" --micro-batches $m --format json | field step_s)" $m; done | sort -g | head -1)
if [ "$(cut -d' ' -f2 <<<"$least")" = "$bm" ] && within "$bs" "$(cut -d' ' -f1 <<<"$least")" 1e-12; then ok
else bad "auto chose $bm ($bs s); the least of 1..24 is $least"; fi

# train --micro-batches auto picks, after step 1, the count whose dry step
# is least for the bytes step 1 carried: the same count and step as
# pipezip time over a one-step run's records (q8/q4 frames: the same bytes)
tr=(--model gpt:layers=4,d=32,heads=2,ctx=16,untied=1 --stages 4 --batch 24 --fwd q8 --bwd q4 --link-bandwidth 2mbit
    --link-latency 20ms --link-model shared --pipe-schedule 1f1b --compute-rate 1gflops --limit-test 8 --progress none)
"$PZ" train "${tr[@]}" --steps 1 --micro-batches 1 --out "$tmp/one" > /dev/null 2>&1 || bad "the one-step run failed"
"$PZ" train "${tr[@]}" --steps 3 --micro-batches auto --out "$tmp/auto" > "$tmp/auto.log" 2>&1 || bad "the auto run failed: $(tail -2 "$tmp/auto.log")"
want=$("$PZ" time --model gpt:layers=4,d=32,heads=2,ctx=16,untied=1 --stages 4 --batch 24 --from-run "$tmp/one" --micro-batches auto \
  --link-bandwidth 2mbit --link-latency 20ms --link-model shared --pipe-schedule 1f1b --compute-rate 1gflops --format json)
wm=$(field micro_batches <<<"$want"); ws=$(field step_s <<<"$want")
got=$(sed -n 's/^micro-batches auto: \([0-9]*\) (a step of \([0-9.e+-]*\) s.*/\1 \2/p' "$tmp/auto.log")
if [ "${got% *}" = "$wm" ] && within "${got#* }" "$ws" 1e-3; then ok; else bad "train auto chose '$got'; pipezip time: $wm ($ws s)"; fi
grep -qs "\"micro_batches\": $wm}" "$tmp/auto/summary.json" && ok || bad "the summary does not record the count chosen"
# --activation-memory bounds the choice by the memory the pipeline would hold: just below the
# unbounded choice's busiest stage, auto takes another count, whose stages then hold at most the bound
am=$(python3 -c "import json; print(max(int(x) for x in json.load(open('$tmp/auto/summary.json'))['activation_bytes'].split(',')))")
"$PZ" train "${tr[@]}" --steps 2 --micro-batches auto --activation-memory $((am - 1)) --out "$tmp/auto-mem" > "$tmp/auto-mem.log" 2>&1 \
  || bad "the bounded auto run failed: $(tail -2 "$tmp/auto-mem.log")"
python3 - "$tmp/auto-mem/summary.json" "$am" "$wm" <<'PY' && ok || bad "--activation-memory: $(grep auto: "$tmp/auto-mem.log")"
import json, sys
s = json.load(open(sys.argv[1])); bound = int(sys.argv[2]) - 1
assert s["micro_batches"] != int(sys.argv[3]), s["micro_batches"]
assert max(int(x) for x in s["activation_bytes"].split(",")) <= bound, (s["activation_bytes"], bound)
PY
expect 2 "--activation-memory 1kB: no micro-batch count fits it \(the least a stage holds is" -- "$PZ" train "${tr[@]}" --steps 2 \
  --micro-batches auto --activation-memory 1kB --no-out
expect 2 "--activation-memory bounds --micro-batches auto's choice" -- "$PZ" train "${tr[@]}" --micro-batches 2 --activation-memory 1GB --no-out
expect 2 "--micro-batches auto .* give --link-bandwidth" -- "$PZ" train --model gpt:layers=2,d=16,heads=2,ctx=16 --stages 2 \
  --micro-batches auto --no-out
expect 2 "--micro-batches expects an integer or auto, got 'lots'" -- "$PZ" train --micro-batches lots --no-out

# bytes from a finished run
"$PZ" train --model gpt:layers=2,d=16,heads=2,ctx=16 --stages 2 --steps 2 --batch 4 --fwd q8 --bwd q8 --limit-test 8 \
  --out "$tmp/run" --progress none >/dev/null 2>&1 || bad "the short run failed"
expect 0 "measured in .*run \([0-9.]+ / [0-9.]+ B per token" -- "$PZ" time --model gpt:layers=2,d=16,heads=2,ctx=16 --stages 2 \
  --batch 4 --from-run "$tmp/run" --compute-rate 1tflops --link-bandwidth 10mbit

# compute given as seconds a micro-batch: the dense record's 7.6 ms (0.539 s / 71 slots) gives its step too
ms=$("$PZ" time "${ref[@]}" --micro-batches 64 --bytes-per-token 2048 --micro-batch-seconds 0.0076 --format json | field step_s)
if within "$ms" 100.475 0.05; then ok; else bad "the dense record with 7.6 ms a micro-batch: $ms s"; fi
expect 2 "give the compute one way" -- "$PZ" time --bytes-per-token 4 --compute-rate 1tflops --micro-batch-seconds 1

# any number of stages: 64 of a 64-block GPT (node0 runs 32), the model's layers at most
expect 0 "in 64 stages, 64 micro-batches" -- "$PZ" time --model gpt:layers=64,d=1024,heads=8,ctx=1024,untied=1 --vocab 50304 \
  --stages 64 --tokens-per-step 524288 --micro-batches 64 --pipe-schedule 1f1b --link-model shared --link-bandwidth 200mbit \
  --link-latency 50ms --bytes-per-token 2048 --compute-rate 400tflops
expect 2 "68 stages of .*expected 1..67" -- "$PZ" time --model gpt:layers=64,d=64,heads=2,ctx=64 --stages 68 --bytes-per-token 2 \
  --compute-rate 1tflops

# errors name the problem
expect 2 "give the bytes each boundary carries one way" -- "$PZ" time --compute-rate 1tflops
expect 2 "give the bytes each boundary carries one way" -- "$PZ" time --compute-rate 1tflops --bytes-per-token 4 --fwd q8
expect 2 "give the compute one way" -- "$PZ" time --bytes-per-token 4
expect 2 "--link-model 'half' is not one of: duplex\|shared" -- "$PZ" time --bytes-per-token 4 --compute-rate 1tflops --link-model half
expect 2 "--pipe-schedule 'zigzag'" -- "$PZ" time --bytes-per-token 4 --compute-rate 1tflops --pipe-schedule zigzag
expect 2 "one stage has no boundary" -- "$PZ" time --bytes-per-token 4 --compute-rate 1tflops --stages 1
expect 2 "--links-off-step is the step of one micro-batch count" -- "$PZ" time --bytes-per-token 4 --links-off-step 1 --micro-batches auto
expect 2 "--micro-batches expects an integer or auto, got 'many'" -- "$PZ" time --bytes-per-token 4 --compute-rate 1tflops --micro-batches many
expect 2 "--bytes-per-token expects F or F/B" -- "$PZ" time --bytes-per-token 4/x --compute-rate 1tflops
expect 2 "not a finished pipeline run" -- "$PZ" time --from-run "$tmp/nothing" --compute-rate 1tflops
expect 2 "unknown model" -- "$PZ" time --model gpt-huge --bytes-per-token 4 --compute-rate 1tflops
expect 2 "tokens-per-step 1000 is not a whole number of 128-token" -- "$PZ" time --tokens-per-step 1000 --bytes-per-token 4 --compute-rate 1tflops
expect 2 "--compute-rate: 'fast' is not a compute rate" -- "$PZ" time --bytes-per-token 4 --compute-rate fast
expect 2 "--compute-rate .wall.: a FLOP rate" -- "$PZ" time --bytes-per-token 4 --compute-rate wall
expect 2 "--micro-batches must be in 1..256 or auto, got 300" -- "$PZ" time --bytes-per-token 4 --compute-rate 1tflops --micro-batches 300

finish test_time.sh
