#!/bin/bash
# SPDX-License-Identifier: MIT
# test_resume.sh PIPEZIP — checkpoints: a pipeline run (error feedback, so
# codec state matters) killed with SIGKILL after its second epoch and then
# resumed ends with exactly the numbers of a run never stopped; the same
# for a one-stage run; --resume with other settings is refused.
. "$(dirname "$0")/lib.sh" resume
pz="$1"

check() { # NAME ARGS...
  local name="$1"; shift
  "$pz" train "$@" --out "$tmp/$name-a" > "$tmp/$name-a.log" 2>&1 || { bad "$name: straight run failed: $(tail -3 "$tmp/$name-a.log")"; return; }
  # killed (SIGKILL, as a crash) at the first step of epoch 3, after epoch 2's checkpoint: a state, not a race
  PZ_TEST_KILL_AT_EPOCH=3 "$pz" train "$@" --out "$tmp/$name-b" > "$tmp/$name-b.log" 2>&1
  local rc=$?
  [ "$rc" -eq 137 ] || { bad "$name: the run was not killed at epoch 3 (exit $rc)"; return; }
  grep -qs '"epoch": 2' "$tmp/$name-b/checkpoint/latest.json" || { bad "$name: no checkpoint after epoch 2"; return; }
  # the record is JSON, read back by a JSON parser: reformatted (indented,
  # keys sorted) it resumes the same
  python3 -c 'import json, sys; p = sys.argv[1]; d = json.load(open(p)); json.dump(d, open(p, "w"), indent=2, sort_keys=True)' \
    "$tmp/$name-b/checkpoint/latest.json"
  "$pz" train "$@" --resume "$tmp/$name-b" > "$tmp/$name-r.log" 2>&1 || { bad "$name: resume failed: $(tail -3 "$tmp/$name-r.log")"; return; }
  python3 - "$tmp/$name-a" "$tmp/$name-b" <<'PY' && ok || bad "$name: resumed run differs"
import json, sys
a, b = ([json.loads(l) for l in open(d + "/epochs.jsonl")] for d in sys.argv[1:])
assert [x["epoch"] for x in b] == [1, 2, 3, 4], [x["epoch"] for x in b]
for x, y in zip(a, b):
    for k in ("train_loss", "test_loss", "test_accuracy", "fwd_bytes", "bwd_bytes"):
        assert x.get(k) == y.get(k), (x["epoch"], k, x.get(k), y.get(k))
sa, sb = (json.load(open(d + "/summary.json")) for d in sys.argv[1:])
assert sa["final_test_accuracy"] == sb["final_test_accuracy"] and sb["resumed_from"] == 2
PY
}
common=(--limit-train 512 --limit-test 200 --epochs 4 --batch 64 --progress none --threads 1 --model lenet5 --lr 0.02)
check pipe "${common[@]}" --stages 3 --fwd "ef(q4)" --bwd "ef21(q8)"
# lowrank's warm start is the sender's state: a resumed run starts each boundary's power iteration from the saved factors
check lowrank "${common[@]}" --stages 3 --fwd "lowrank:3,values=fp16+zstd" --bwd "ef(lowrank:2)"
check single "${common[@]}" --limit-train 4096
# the codec lists are compared as what they mean: a run started with ef(q4) resumes as ef(q4:asym,nearest,per=tensor),per=boundary
# and ends with the uninterrupted run's numbers; per=sample is another run and is refused, naming fwd
PZ_TEST_KILL_AT_EPOCH=3 "$pz" train "${common[@]}" --stages 3 --fwd "ef(q4)" --bwd "ef21(q8)" --out "$tmp/spell" > "$tmp/spell.log" 2>&1
expect 2 "other settings \(fwd: ef\(q4:asym,nearest,per=tensor\),per=boundary -> ef\(q4:asym,nearest,per=sample\)" -- \
  "$pz" train "${common[@]}" --stages 3 --fwd "ef(q4:per=sample)" --bwd "ef21(q8)" --resume "$tmp/spell"
if "$pz" train "${common[@]}" --stages 3 --fwd "ef(q4:asym,nearest,per=tensor),per=boundary" --bwd "ef21(q8:per=tensor)" \
     --resume "$tmp/spell" > "$tmp/spell-r.log" 2>&1 &&
   python3 -c 'import json, sys; a, b = ([json.loads(l)["test_loss"] for l in open(d + "/epochs.jsonl")] for d in sys.argv[1:]); sys.exit(a != b)' \
     "$tmp/pipe-a" "$tmp/spell"; then ok; else bad "a run resumed with another spelling of its codecs differs: $(tail -2 "$tmp/spell-r.log")"; fi
# a language model with BPE tokens: the resumed run reads the tokenizer its
# directory keeps (the same text, the same losses)
python3 - "$tmp/text.txt" <<'PY'
import random, sys
random.seed(3)
w = "and the of unto he said LORD God Israel shall them his in that for be is thou with".split()
open(sys.argv[1], "w").write(" ".join(random.choice(w) + random.choice(["", "", ",", ".\n"]) for _ in range(40000)))
PY
check bpe --model gpt-tiny --data "text:$tmp/text.txt" --tokenizer bpe:320 --optimizer adamw --lr 1e-3 --epochs 4 \
  --limit-train 48 --limit-test 8 --batch 8 --progress none --threads 1
# learned boundary projections (--project): each stage's anchors and
# orthonormal matrices are in its checkpoint, so a resumed run is the same
check project --model gpt:layers=4,d=32,heads=2,ctx=16 --data "text:$tmp/text.txt" --subspace 32 --project 8 --cuts h.0,h.2 \
  --fwd q8 --bwd q8 --optimizer adamw --lr 1e-3 --epochs 4 --limit-train 48 --limit-test 8 --batch 8 --progress none --threads 1
# a GPT over a pipeline, in steps: SIGTERM (as a scheduler sends) at step 14,
# mid-epoch and with an evaluation due, finishes the step, checkpoints it and
# exits 130; resumed, it ends with exactly the uninterrupted run's step losses,
# evaluations and byte counts. A crash (SIGKILL at step 13) with
# --checkpoint-every 5 resumes from step 10 the same. Both schedules.
gpt=(--model gpt:layers=4,d=32,heads=2,ctx=16 --data "text:$tmp/text.txt" --steps 30 --batch 8 --micro-batches 3 --stages 4
     --fwd "ef(q4:per=token)" --bwd q8 --eval-every 7 --log-every 1 --limit-train 400 --limit-test 16 --progress none --threads 1)
same_run() { # NAME DIR_A DIR_B
  python3 - "$2" "$3" <<'PY' && ok || bad "$1: the resumed run differs"
import json, sys
def rows(d, f): return [json.loads(l) for l in open(d + "/" + f)]
a, b = sys.argv[1:]
sa, sb = rows(a, "steps.jsonl"), rows(b, "steps.jsonl")
assert [x["step"] for x in sb] == list(range(1, 31)), [x["step"] for x in sb]
assert [x["loss"] for x in sa] == [x["loss"] for x in sb], "step losses"
ea, eb = rows(a, "evals.jsonl"), rows(b, "evals.jsonl")
assert [(x["step"], x["test_loss"], x["test_loss_compressed"], x["fwd_bytes"], x["bwd_bytes"]) for x in ea] == \
       [(x["step"], x["test_loss"], x["test_loss_compressed"], x["fwd_bytes"], x["bwd_bytes"]) for x in eb], "evaluations"
pa, pb = rows(a, "epochs.jsonl"), rows(b, "epochs.jsonl")
for k in ("train_loss", "test_loss", "fwd_bytes", "bwd_bytes", "fp32_bytes"):
    assert [x[k] for x in pa] == [x[k] for x in pb], k
ba, bb = rows(a, "boundaries.jsonl"), rows(b, "boundaries.jsonl")
assert [(x["fwd_bytes"], x["bwd_bytes"], x["fwd_elements"]) for x in ba] == [(x["fwd_bytes"], x["bwd_bytes"], x["fwd_elements"]) for x in bb]
s = json.load(open(b + "/summary.json"))
assert s["status"] == "finished" and s["steps"] == 30, s
PY
}
for sched in gpipe 1f1b; do
  "$pz" train "${gpt[@]}" --pipe-schedule $sched --out "$tmp/gpt-$sched-a" > "$tmp/gpt-a.log" 2>&1 || bad "gpt $sched: straight run failed: $(tail -3 "$tmp/gpt-a.log")"
  PZ_TEST_SIGNAL_AT_STEP=14 "$pz" train "${gpt[@]}" --pipe-schedule $sched --out "$tmp/gpt-$sched-b" > "$tmp/gpt-b.log" 2>&1
  rc=$?
  [ "$rc" -eq 130 ] && grep -q "stopped after step 14" "$tmp/gpt-b.log" && grep -qs '"global_step": 14' "$tmp/gpt-$sched-b/checkpoint/latest.json" \
    && ok || bad "gpt $sched: SIGTERM at step 14 did not checkpoint it (exit $rc): $(tail -2 "$tmp/gpt-b.log")"
  grep -qs '"status": "stopped"' "$tmp/gpt-$sched-b/summary.json" && ok || bad "gpt $sched: a stopped run's summary does not say so"
  "$pz" train "${gpt[@]}" --pipe-schedule $sched --resume "$tmp/gpt-$sched-b" > "$tmp/gpt-r.log" 2>&1 || bad "gpt $sched: resume failed: $(tail -3 "$tmp/gpt-r.log")"
  same_run "gpt $sched SIGTERM" "$tmp/gpt-$sched-a" "$tmp/gpt-$sched-b"
done
# the asynchronous schedule (untied: a tie across stages is not versioned
# yet): micro-batches in flight between steps; SIGTERM at step 14 with an
# evaluation due drains, checkpoints (both versions of the weights) and
# resumes to the same step losses, evaluations and bytes
agpt=("${gpt[@]/gpt:layers=4,d=32,heads=2,ctx=16/gpt:layers=4,d=32,heads=2,ctx=16,untied=1}" --pipe-schedule async)
"$pz" train "${agpt[@]}" --out "$tmp/gpt-async-a" > "$tmp/gpt-a.log" 2>&1 || bad "gpt async: straight run failed: $(tail -3 "$tmp/gpt-a.log")"
PZ_TEST_SIGNAL_AT_STEP=14 "$pz" train "${agpt[@]}" --out "$tmp/gpt-async-b" > "$tmp/gpt-b.log" 2>&1
rc=$?
[ "$rc" -eq 130 ] && grep -qs '"global_step": 14' "$tmp/gpt-async-b/checkpoint/latest.json" && ok || bad "gpt async: SIGTERM at step 14 did not checkpoint it (exit $rc): $(tail -2 "$tmp/gpt-b.log")"
"$pz" train "${agpt[@]}" --resume "$tmp/gpt-async-b" > "$tmp/gpt-r.log" 2>&1 || bad "gpt async: resume failed: $(tail -3 "$tmp/gpt-r.log")"
same_run "gpt async SIGTERM" "$tmp/gpt-async-a" "$tmp/gpt-async-b"
# ... and under a budget (its rounds drain first): the same
bgpt=(); skip=0
for a in "${agpt[@]}"; do
  if [ "$skip" = 1 ]; then skip=0; continue; fi
  case "$a" in --fwd|--bwd) skip=1; continue ;; esac
  bgpt+=("$a")
done
bgpt+=(--budget 6x --budget-every 4)
"$pz" train "${bgpt[@]}" --out "$tmp/gpt-asb-a" > "$tmp/gpt-a.log" 2>&1 || bad "gpt async budget: straight run failed: $(tail -3 "$tmp/gpt-a.log")"
PZ_TEST_SIGNAL_AT_STEP=14 "$pz" train "${bgpt[@]}" --out "$tmp/gpt-asb-b" > "$tmp/gpt-b.log" 2>&1
"$pz" train "${bgpt[@]}" --resume "$tmp/gpt-asb-b" > "$tmp/gpt-r.log" 2>&1 || bad "gpt async budget: resume failed: $(tail -3 "$tmp/gpt-r.log")"
same_run "gpt async budget SIGTERM" "$tmp/gpt-asb-a" "$tmp/gpt-asb-b"
python3 - "$tmp/gpt-asb-a/budget.jsonl" "$tmp/gpt-asb-b/budget.jsonl" <<'PY' && ok || bad "gpt async budget: the resumed run chose other rungs"
import json, sys
pick = lambda f: [(r["step"], r["boundary"], r["direction"], r["rung"], r["bytes"]) for r in map(json.loads, open(f))]
a, b = pick(sys.argv[1]), pick(sys.argv[2])
assert a and {x[0] for x in a} == {1, 4, 8, 12, 16, 20, 24, 28}, sorted({x[0] for x in a})
assert sorted(set(a)) == sorted(set(b)), (a[:4], b[:4])
PY
# --micro-batches auto: the count chosen after step 1 is in the checkpoint;
# SIGTERM at step 14, resumed, goes on in that count to the same numbers
# (untied: a tied table's gradient per micro-batch would make 1 the best count; here 8 is, and the pipeline is re-planned)
auto=(--model gpt:layers=4,d=32,heads=2,ctx=16,untied=1 --data "text:$tmp/text.txt" --steps 30 --batch 8 --micro-batches auto
      --stages 4 --fwd q4:per=token --bwd q8 --eval-every 5 --limit-test 16 --link-bandwidth 2mbit --link-latency 1ms
      --link-model shared --compute-rate 1gflops --pipe-schedule 1f1b --progress none --log-every 1)
"$pz" train "${auto[@]}" --out "$tmp/auto-a" > "$tmp/auto-a.log" 2>&1 || bad "auto: the uninterrupted run failed: $(tail -3 "$tmp/auto-a.log")"
grep -q "micro-batches auto: 8 " "$tmp/auto-a.log" && ok || bad "auto: not 8 micro-batches: $(head -5 "$tmp/auto-a.log")"
PZ_TEST_SIGNAL_AT_STEP=14 "$pz" train "${auto[@]}" --out "$tmp/auto-b" > "$tmp/auto-b.log" 2>&1
grep -qs '"micro_batches": [0-9]' "$tmp/auto-b/checkpoint/latest.json" && ok || bad "auto: the checkpoint does not record the count"
"$pz" train "${auto[@]}" --resume "$tmp/auto-b" > "$tmp/auto-r.log" 2>&1 || bad "auto: resume failed: $(tail -3 "$tmp/auto-r.log")"
grep -q "micro-batches auto: " "$tmp/auto-r.log" && bad "auto: the resumed run chose again" || ok
same_run "micro-batches auto SIGTERM" "$tmp/auto-a" "$tmp/auto-b"
# a budget's choices are the senders' codecs: SIGTERM at step 14 (after the
# choice of step 12, before step 16's), resumed, makes the same choices and
# ends with the same losses and bytes; budget.jsonl keeps exactly the
# uninterrupted run's records (the rungs mix: 10x needs 2- to 5-bit codes)
bud=(--model gpt:layers=4,d=32,heads=2,ctx=16 --data "text:$tmp/text.txt" --steps 30 --batch 8 --micro-batches 3 --stages 4
     --budget 10x --budget-every 4 --eval-every 7 --log-every 1 --limit-train 400 --limit-test 16 --progress none --threads 1)
"$pz" train "${bud[@]}" --out "$tmp/bud-a" > "$tmp/bud-a.log" 2>&1 || bad "budget: straight run failed: $(tail -3 "$tmp/bud-a.log")"
PZ_TEST_SIGNAL_AT_STEP=14 "$pz" train "${bud[@]}" --out "$tmp/bud-b" > "$tmp/bud-b.log" 2>&1
[ $? -eq 130 ] && ok || bad "budget: SIGTERM at step 14 did not stop the run: $(tail -2 "$tmp/bud-b.log")"
"$pz" train "${bud[@]}" --resume "$tmp/bud-b" > "$tmp/bud-r.log" 2>&1 || bad "budget: resume failed: $(tail -3 "$tmp/bud-r.log")"
same_run "budget SIGTERM" "$tmp/bud-a" "$tmp/bud-b"
python3 - "$tmp/bud-a" "$tmp/bud-b" <<'PY' && ok || bad "budget: the resumed run chose otherwise"
import json, sys
a, b = ([json.loads(l) for l in open(d + "/budget.jsonl")] for d in sys.argv[1:])
assert a == b, "budget.jsonl differs"
assert [x["step"] for x in a[::6]] == [1, 4, 8, 12, 16, 20, 24, 28], [x["step"] for x in a[::6]]
assert len({x["codec"] for x in a}) >= 3 and all(x["met"] == 1 for x in a), {x["codec"] for x in a}
# the boundary records name the codec each sender used at the epoch's end: the last choice
last = {(x["boundary"], x["direction"]): x["codec"] for x in a}
for d in sys.argv[1:]:
    for x in (json.loads(l) for l in open(d + "/boundaries.jsonl")):
        assert (x["fwd"], x["bwd"]) == (last[(x["boundary"], "fwd")], last[(x["boundary"], "bwd")]), (d, x["boundary"], x["fwd"], x["bwd"])
PY
PZ_TEST_KILL_AT_STEP=13 "$pz" train "${gpt[@]}" --checkpoint-every 5 --out "$tmp/gpt-k" > "$tmp/gpt-k.log" 2>&1
rc=$?
[ "$rc" -eq 137 ] && grep -qs '"global_step": 10' "$tmp/gpt-k/checkpoint/latest.json" && [ ! -d "$tmp/gpt-k/checkpoint/step-5" ] \
  && ok || bad "--checkpoint-every 5 killed at step 13: no checkpoint of step 10 alone (exit $rc)"
"$pz" train "${gpt[@]}" --checkpoint-every 5 --resume "$tmp/gpt-k" > "$tmp/gpt-kr.log" 2>&1 || bad "resume after a crash failed: $(tail -3 "$tmp/gpt-kr.log")"
same_run "gpt crash" "$tmp/gpt-gpipe-a" "$tmp/gpt-k"
expect 2 "all 30 steps are already done" -- "$pz" train "${gpt[@]}" --resume "$tmp/gpt-k"
expect 2 "other settings \(steps: 30 -> 40\)" -- "$pz" train "${gpt[@]/30/40}" --resume "$tmp/gpt-gpipe-b"
expect 2 "--steps 30 and --epochs 2 both bound the run" -- "$pz" train "${gpt[@]}" --epochs 2
expect 2 "other settings \(lr: 0.02 -> 0.05\)" -- "$pz" train "${common[@]}" --limit-train 4096 --lr 0.05 --resume "$tmp/single-b"
# every setting that moves the trajectory is compared, and the one that differs named
expect 2 "flip: \(unset\) -> 0" -- "$pz" train "${common[@]}" --limit-train 4096 --no-flip --resume "$tmp/single-b"
expect 2 "crop_pad: \(unset\) -> 2" -- "$pz" train "${common[@]}" --limit-train 4096 --crop-pad 2 --resume "$tmp/single-b"
expect 2 "shard: \(unset\) -> 1/2" -- "$pz" train "${common[@]}" --limit-train 4096 --shard 1/2 --resume "$tmp/single-b"
expect 2 "already done" -- "$pz" train "${common[@]}" --limit-train 4096 --resume "$tmp/single-b"
# a run killed between its last checkpoint and its summary: --resume finishes it;
# a damaged checkpoint is refused, naming the file
cp "$tmp/pipe-b/summary.json" "$tmp/pipe-summary.json"
rm "$tmp/pipe-b/summary.json"
ck="$tmp/pipe-b/checkpoint/epoch-4/stage-1.bin"
cp "$ck" "$tmp/stage-1.bin.good"
python3 - "$ck" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read()); b[len(b) // 2] ^= 0x10; open(sys.argv[1], "wb").write(b)
PY
expect 1 "stage-1.bin' is damaged" -- "$pz" train "${common[@]}" --stages 3 --fwd "ef(q4)" --bwd "ef21(q8)" --resume "$tmp/pipe-b"
[ ! -e "$tmp/pipe-b/summary.json" ] && ok || bad "a damaged checkpoint wrote a summary"
cp "$tmp/stage-1.bin.good" "$ck"
"$pz" train "${common[@]}" --stages 3 --fwd "ef(q4)" --bwd "ef21(q8)" --resume "$tmp/pipe-b" > "$tmp/finish.log" 2>&1 \
  && ok || bad "finishing a run whose epochs were all done: $(tail -3 "$tmp/finish.log")"
python3 - "$tmp/pipe-summary.json" "$tmp/pipe-b/summary.json" <<'PY' && ok || bad "the finished summary differs"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert b["status"] == "finished" and b["epochs"] == 4
for k in ("final_test_accuracy", "final_test_accuracy_compressed", "final_train_loss", "fwd_bytes", "bwd_bytes", "best_test_accuracy"):
    assert a[k] == b[k], (k, a[k], b[k])
PY
expect 1 "no checkpoint" -- "$pz" train "${common[@]}" --resume "$tmp/nothing"
# a record edited by hand (its step moved on) no longer matches its checkpoint: refused, named
cp -r "$tmp/pipe-b" "$tmp/edited"
python3 -c 'import json, sys; p = sys.argv[1]; d = json.load(open(p)); d["global_step"] += 5; json.dump(d, open(p, "w"))' \
  "$tmp/edited/checkpoint/latest.json"
expect 1 "latest.json' was modified after it was written .*no longer match checkpoint/epoch-4" -- \
  "$pz" train "${common[@]}" --stages 3 --fwd "ef(q4)" --bwd "ef21(q8)" --resume "$tmp/edited"
python3 -c 'import json, sys; p = sys.argv[1]; d = json.load(open(p)); d["global_step"] -= 5; del d["check"]; json.dump(d, open(p, "w"))' \
  "$tmp/edited/checkpoint/latest.json"
expect 1 "latest.json' has no checksum" -- "$pz" train "${common[@]}" --stages 3 --fwd "ef(q4)" --bwd "ef21(q8)" --resume "$tmp/edited"
# a damaged record is named, not misread
mkdir -p "$tmp/badrec/checkpoint"
printf '{"epoch": "two", "global_step": 3}\n' > "$tmp/badrec/checkpoint/latest.json"
expect 1 "latest.json' is not a pipezip checkpoint record \(no number 'epoch'\)" -- "$pz" train "${common[@]}" --resume "$tmp/badrec"
printf 'epoch 2\n' > "$tmp/badrec/checkpoint/latest.json"
expect 1 "latest.json' is not a pipezip checkpoint record \(not a JSON object\)" -- "$pz" train "${common[@]}" --resume "$tmp/badrec"
finish test_resume
