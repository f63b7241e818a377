#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_cli.sh — the `pipezip` command as a user meets it: help for every
# command and flag, errors that name the problem (with exit code 2 for usage,
# 1 for failures), `models`, `bench train`, and a short training run whose
# run directory is checked. Usage: test_cli.sh PATH/TO/pipezip
set -u
PZ=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
. "$(dirname "$0")/lib.sh" cli

expect 0 "Commands:" -- "$PZ" --help
expect 0 "^pipezip [0-9]+\.[0-9]+\.[0-9]+" -- "$PZ" --version
expect 2 "unknown command 'trian'" -- "$PZ" trian
expect 2 "Usage: pipezip" -- "$PZ"

# every train flag is documented
help=$("$PZ" train --help)
for flag in model data data-dir limit-train limit-test epochs batch optimizer lr momentum nesterov weight-decay \
            schedule warmup crop-pad flip seed threads stages cuts fwd bwd eval-compress out no-out metrics log-every progress; do
  if grep -qE -- "--(\[no-\])?$flag\b" <<<"$help"; then ok; else bad "train --help does not document --$flag"; fi
done

expect 2 "did you mean '--epochs'" -- "$PZ" train --epoch 3
expect 2 "--epochs expects an integer, got 'ten'" -- "$PZ" train --epochs ten
expect 2 "--epochs must be in 1..100000, got 0" -- "$PZ" train --epochs 0
expect 2 "--lr expects a number, got 'fast'" -- "$PZ" train --lr fast
expect 2 "--model 'resnet9' is not one of: mlp\|lenet5\|resnet8\|resnet20" -- "$PZ" train --model resnet9
expect 2 "--batch needs a value" -- "$PZ" train --batch
expect 2 "unknown schedule 'triangle' \(expected constant, cosine, linear, step:EPOCHS,GAMMA or onecycle" -- "$PZ" train --schedule triangle --no-out --data synthetic
expect 2 "--flip expects on or off" -- "$PZ" train --flip=maybe
expect 2 "unexpected argument 'resnet8'" -- "$PZ" train resnet8
# the CLI teaches: --help lists every enumerated option's values, other
# trainers' spellings work, suggestions are of the same kind as the value,
# errors name the flag as typed, contradictory flags are refused
for cmd in train sweep serve "bench train" "bench codecs" sample; do
  h=$("$PZ" $cmd --help 2>&1)
  if /usr/bin/env python3 - "$cmd" <<<"$h" <<'PY'
import re, sys
lines = [l for l in sys.stdin.read().splitlines() if re.match(r"\s+--", l)]
for l in lines:  # an option whose values are a fixed set names them all
    m = re.search(r"one of (\S+)", l)
    if m: assert "|" in m.group(1), l
PY
  then ok; else bad "$cmd --help: values of enumerated options"; fi
done
for opt in model optimizer eval-compress link metrics progress grad-mask; do
  if grep -E -- "--$opt " <<<"$help" | grep -qE "one of [a-z0-9:-]+\|"; then ok; else bad "train --help: --$opt lists no values"; fi
done
expect 0 "batch 64, sgd lr 0.05" -- "$PZ" train --batch-size 64 --learning-rate 0.05 --wd 0.001 --num-epochs 1 --data synthetic \
  --limit-train 64 --limit-test 32 --no-out --progress none --model mlp
expect 0 "batch 32," -- "$PZ" train --batch_size 32 --weight_decay 0.001 --epochs 1 --data synthetic --limit-train 64 --limit-test 32 \
  --no-out --progress none --model mlp
# --quiet: nothing on stderr, the summary on stdout; it and a --progress that shows something disagree
err=$("$PZ" train --quiet --epochs 1 --data synthetic --limit-train 64 --limit-test 32 --no-out --model mlp 2>&1 >"$tmp/quiet.out")
if [ -z "$err" ] && grep -q "^test accuracy" "$tmp/quiet.out"; then ok; else bad "--quiet: stderr '$err', stdout $(cat "$tmp/quiet.out")"; fi
expect 2 "--quiet and --progress bar disagree" -- "$PZ" train --quiet --progress bar --no-out --model mlp
# a boundary flag on a run without boundaries is an error naming it, not silently unused
expect 2 "--fwd q2 acts on the boundaries between stages, and this mlp run has one stage \(MLPs are not cut by default\)" -- \
  "$PZ" train --model mlp --fwd q2 --no-out
expect 2 "--link-latency 5ms acts on the boundaries.*lenet5 run has one stage \(--stages 1\)" -- \
  "$PZ" train --model lenet5 --stages 1 --link-latency 5ms --no-out
expect 2 "--bwd q4 acts on the boundaries" -- "$PZ" train --model gpt-tiny --bwd q4 --no-out
expect 2 "--pipe-schedule acts on the boundaries" -- "$PZ" train --model gpt-tiny --pipe-schedule 1f1b --no-out
expect 2 "--compute-rate 100tflops acts on the boundaries" -- "$PZ" train --model gpt-tiny --compute-rate 100tflops --no-out
# the asynchronous schedule: what it cannot run with yet is refused by name
expect 2 "--pipe-delay 0 is the asynchronous schedule's \(--pipe-schedule async\); 1f1b flushes" -- "$PZ" train --model gpt-tiny --stages 2 --pipe-schedule 1f1b --pipe-delay 0 --no-out
expect 2 "ties its head to its token table across stages 0 and 1.*untied=1" -- "$PZ" train --model gpt-tiny --stages 2 --pipe-schedule async --steps 1 --no-out
expect 2 "--pipe-delay must be in \[0, 1\]|--pipe-delay.*0.*1" -- "$PZ" train --model gpt-tiny --stages 2 --pipe-schedule async --pipe-delay 2 --no-out
expect 0 "micro-batch of 32 samples \(4096 tokens\), async; duplex links" -- "$PZ" time --model gpt:layers=4,d=128,heads=4,ctx=128,untied=1 --stages 4 --pipe-schedule async --fwd q8 --compute-rate 1tflops
expect 2 "--compute-rate: '5xflops' is not a compute rate" -- "$PZ" train --model gpt-tiny --stages 2 --compute-rate 5xflops --no-out
expect 2 "--model: model 'gpt:layers=4,d=30,heads=4': width d=30 does not split into 4 heads" -- "$PZ" train --model gpt:layers=4,d=30,heads=4 --no-out
expect 2 "unknown key 'width'" -- "$PZ" models gpt:width=4
expect 0 "h.1 +group +128x16 .* 64 B +unproject\+attn\+mlp\+project" -- "$PZ" models gpt-tiny --subspace 128 --project 16 --cuts h.0,h.1,h.2
expect 2 "--project 16 needs --cuts naming blocks with another after them" -- "$PZ" models gpt-tiny --subspace 128 --project 16 --cuts h.3
# bench codecs --kernels: one set, or a table per set this CPU runs (scalar always); a set it cannot name is refused
expect 0 "1 thread, scalar kernels" -- "$PZ" bench codecs --kernels scalar --codecs q4 --sizes 1e4 --repeat 1 --data gradient
out=$("$PZ" bench codecs --kernels all --codecs q4 --sizes 1e4 --repeat 1 --data gradient 2>&1)
if grep -q "scalar kernels" <<<"$out" && [ "$(grep -c "^q4 " <<<"$out")" -eq "$(grep -c "kernels, memory read" <<<"$out")" ]; then ok
else bad "bench codecs --kernels all: $out"; fi
expect 2 "--kernels 'sse' is not one of: best\|scalar\|avx2\|avx512\|all" -- "$PZ" bench codecs --kernels sse
# --dump-boundaries N:DIR: step N's tensors as they go into each codec, as .npy (the run's numbers unchanged);
# bench codecs --data FILE times the codecs on one, and codec encode takes it
dm=(--model mlp --cuts relu1 --data synthetic --limit-train 96 --limit-test 32 --batch 32 --micro-batches 2 --steps 3 --log-every 1 --progress none)
"$PZ" train "${dm[@]}" --out "$tmp/dump_a" --dump-boundaries "2:$tmp/dump" > /dev/null 2>&1 && ok || bad "--dump-boundaries run"
"$PZ" train "${dm[@]}" --out "$tmp/dump_b" > /dev/null 2>&1 && ok || bad "the run without it"
/usr/bin/python3 - "$tmp" <<'PY' && ok || bad "--dump-boundaries: the files or the numbers"
import json, os, sys
import numpy as np
t = sys.argv[1]
assert sorted(os.listdir(f"{t}/dump")) == [f"b1_{d}_m{m}.npy" for d in ("bwd", "fwd") for m in (0, 1)], os.listdir(f"{t}/dump")
for m in (0, 1):
    a, g = np.load(f"{t}/dump/b1_fwd_m{m}.npy"), np.load(f"{t}/dump/b1_bwd_m{m}.npy")
    assert a.shape == g.shape == (16, 256, 1, 1) and a.dtype == np.float32, (a.shape, g.shape)
    assert (a >= 0).all() and (a > 0).any() and np.isfinite(g).all() and (g != 0).any()  # after a ReLU; its gradient
rows = [[json.loads(l)["loss"] for l in open(f"{t}/dump_{k}/steps.jsonl")] for k in "ab"]
assert rows[0] == rows[1] and len(rows[0]) == 3, rows
PY
expect 0 "^q8 +4096 b1_fwd_m0.npy" -- "$PZ" bench codecs --data "$tmp/dump/b1_fwd_m0.npy" --codecs q8 --repeat 1
expect 0 "4096 elements" -- "$PZ" codec encode --codec q8 "$tmp/dump/b1_bwd_m1.npy" "$tmp/dump.pzf"
expect 2 "--dump-boundaries expects N:DIR" -- "$PZ" train --model mlp --dump-boundaries 0:x --no-out
expect 2 "not activation, gradient, both or a tensor file" -- "$PZ" bench codecs --data "$tmp/none.npy"
# --subspace: a GPT's, at most its width, not with --grad-mask fwd; models lists the lifts
expect 2 "--subspace 8 confines a GPT's residual stream: it needs --model gpt-tiny" -- "$PZ" train --model resnet8 --subspace 8 --no-out
expect 2 "--subspace 200 is wider than gpt-tiny's residual stream \(128\): give 1 to 128" -- "$PZ" train --model gpt-tiny --subspace 200 --no-out
expect 2 "--grad-mask fwd and --subspace 8" -- "$PZ" train --model gpt-tiny --subspace 8 --cuts h.1 --grad-mask fwd --no-out
expect 0 "lift_f +subspace_lift +128x128" -- "$PZ" models gpt-tiny --subspace 16
# --project: a subspace model's, no wider than it, at named cuts between blocks; models shows the pairs
expect 2 "--project 8 projects a subspace model's coefficients at its cuts: give --subspace too \(--subspace 128 is the full-width one\)" -- \
  "$PZ" train --model gpt-tiny --project 8 --cuts h.0 --no-out
expect 2 "--project 64 is wider than the stream it projects \(--subspace 32\): give 1 to 32" -- \
  "$PZ" train --model gpt-tiny --subspace 32 --project 64 --cuts h.0 --no-out
expect 2 "--project 8 puts a learned projection at each cut, and needs every cut named between two blocks \(--cuts h.0,h.1,...; got h.0,h.3\)" -- \
  "$PZ" train --model gpt-tiny --subspace 128 --project 8 --cuts h.0,h.3 --no-out
expect 2 "needs every cut named between two blocks \(--cuts h.0,h.1,...; got none\)" -- \
  "$PZ" train --model gpt-tiny --subspace 128 --project 8 --stages 2 --no-out
# --budget: its grammar, stateless rungs only, not with --fwd/--bwd, its settings only with it, a pipeline's
expect 2 "--budget 40x chooses every boundary's codecs from --budget-ladder: drop --fwd q2" -- "$PZ" train --budget 40x --fwd q2 --no-out
expect 2 "--budget '40y' is not a budget: give a traffic reduction \(40x\)" -- "$PZ" train --budget 40y --no-out
expect 2 "--budget '200mbit@0': RATE@TIME needs" -- "$PZ" train --budget 200mbit@0 --no-out
expect 2 "--budget-ladder: rung 'ef\(q4\)' keeps state from frame to frame" -- "$PZ" train --budget 2MB --budget-ladder "q8/ef(q4)" --no-out
expect 2 "--budget-ladder: rung 'q8' is there twice" -- "$PZ" train --budget 2MB --budget-ladder "q8/q4/q8" --no-out
expect 2 "--budget-ladder is a setting of --budget, which is not given" -- "$PZ" train --budget-ladder q8/q4 --no-out
expect 2 "--budget-fwd-weight is a setting of --budget" -- "$PZ" train --budget-fwd-weight 4 --no-out
expect 2 "--budget-rule 'maxx' is not one of: sum|max" -- "$PZ" train --budget 2MB --budget-rule maxx --no-out
expect 2 "--budget 40x acts on the boundaries between stages" -- "$PZ" train --model lenet5 --budget 40x --no-out
expect 0 "--budget BUDGET" -- "$PZ" train --help
expect 0 "h.0 +group +128x16 .* 64 B" -- "$PZ" models gpt-tiny --subspace 16
# --stages 1 with --cuts is a contradiction, and the error says so (not that --fwd has no boundary)
expect 2 "--stages 1 and --cuts fc1 \(2 stages\) disagree" -- "$PZ" train --model mlp --stages 1 --cuts fc1 --fwd q2 \
  --data synthetic --epochs 1 --limit-train 64 --limit-test 32 --no-out --progress none
expect 0 "^pipeline: 2 stages balanced by compute, activations q2, gradients q8" -- "$PZ" train --model mlp --stages 2 --fwd q2 \
  --data synthetic --epochs 1 --limit-train 64 --limit-test 32 --no-out --progress none
expect 0 "^pipeline: one stage \(no boundary, nothing compressed\)" -- "$PZ" train --model mlp --micro-batches 2 \
  --data synthetic --epochs 1 --limit-train 64 --limit-test 32 --no-out --progress none
expect 2 "--learning-rate expects a number, got 'fast'" -- "$PZ" train --learning-rate fast
expect 2 "--batch_size must be in 1..65536, got 0" -- "$PZ" train --batch_size 0
expect 2 "unknown option '--lrate'; did you mean '--lr'" -- "$PZ" train --lrate 0.1
out=$("$PZ" train --wdd 0.1 2>&1)
if grep -q "unknown option '--wdd'" <<<"$out" && ! grep -q "fwd" <<<"$out"; then ok; else bad "--wdd 0.1 suggests a word option: $out"; fi
expect 2 "unknown option '--wdd'; did you mean '--weight-decay'" -- "$PZ" train --wdd 0.1
expect 2 "unknown option '--batchsize'; did you mean '--batch'" -- "$PZ" train --batchsize 64
expect 2 "unknown option '--xyz' \(see" -- "$PZ" train --xyz 1
expect 2 "unknown option '--ephocs'; did you mean '--epochs'" -- "$PZ" train --ephocs 2
expect 2 "unknown option '--modle'; did you mean '--model'" -- "$PZ" train --modle lenet5
expect 2 "--stages 3 and --cuts fc1 \(2 stages\) disagree" -- "$PZ" train --model mlp --stages 3 --cuts fc1 --data synthetic --no-out
# a run refused before it starts leaves no run directory behind, neither the
# default runs/DATE-... one nor a new --out; an --out that existed stays
mkdir -p "$tmp/husk" "$tmp/kept"
(cd "$tmp/husk" && "$PZ" train --model mlp --stages 3 --cuts fc1 --data synthetic >/dev/null 2>&1
 "$PZ" train --model mlp --data-dir /nonexistent --progress none >/dev/null 2>&1
 "$PZ" train --model mlp --fwd bogus --data synthetic --out new >/dev/null 2>&1
 "$PZ" train --model mlp --fwd bogus --data synthetic --out ../kept >/dev/null 2>&1)
if [ -z "$(ls -A "$tmp/husk")" ] && [ -d "$tmp/kept" ]; then ok; else bad "a refused run left: $(ls -R "$tmp/husk")"; fi
expect 2 "boundary 0 does not exist \(boundaries are numbered from 1" -- "$PZ" train --model mlp --stages 2 --fwd 0=q4 --data synthetic --no-out
expect 2 "boundary 3 does not exist \(this pipeline has one boundary, 1\)" -- \
  "$PZ" train --model mlp --stages 2 --fwd q4,3=q2 --data synthetic --no-out --epochs 1 --limit-train 64 --progress none
expect 1 "dataset file '/nonexistent/train-images-idx3-ubyte\[.gz\]' not found" -- \
  "$PZ" train --data fashion-mnist --data-dir /nonexistent --no-out --progress none

# a corrupt dataset file is named
mkdir -p "$tmp/broken"
printf 'not an idx file' > "$tmp/broken/train-images-idx3-ubyte"
printf 'x' > "$tmp/broken/train-labels-idx1-ubyte"
expect 1 "broken/train-images-idx3-ubyte' is not an idx file" -- \
  "$PZ" train --data mnist --data-dir "$tmp/broken" --no-out --progress none

expect 0 "resnet8 \(input 1x28x28" -- "$PZ" models
expect 0 "layer3.0 +basic_block +64x7x7" -- "$PZ" models resnet8
expect 0 "total: 272474 parameters" -- "$PZ" models resnet20 --input 3x32x32
# resnet56 (6n+2, n = 9): 432 + 32 (stem) + 9 x 4672 + 14528 + 8 x 18560 + 57728 + 8 x 73984 + 650 (fc), counted by hand
expect 0 "total: 855770 parameters" -- "$PZ" models resnet56 --input 3x32x32
expect 0 "h.3 +group +128x128" -- "$PZ" models gpt-tiny
expect 0 "total: 842496 parameters" -- "$PZ" models gpt-tiny
expect 0 "FLOPs forward per token" -- "$PZ" models gpt-small --vocab 512
expect 2 "unknown model 'vgg'" -- "$PZ" models vgg
expect 0 "median [0-9.]+ ms/step" -- "$PZ" bench train --model lenet5 --batch 16 --threads 1 --warmup-steps 1 --repeat 3
expect 2 "unknown option .--warmup-epochs." -- "$PZ" bench train --model mlp --warmup-epochs 1 --repeat 1
expect 0 '"median_ms": [0-9.]+' -- "$PZ" bench train --model mlp --batch 8 --warmup-steps 0 --repeat 2 --format json
expect 2 "unknown benchmark 'nosuch' \(expected train or codecs\)" -- "$PZ" bench nosuch

# a short run: progress lines, final summary, run directory with csv metrics
expect 0 "test accuracy [0-9.]+%" -- "$PZ" train --data synthetic --model mlp --epochs 2 --limit-train 600 \
  --limit-test 200 --batch 32 --out "$tmp/run" --metrics csv --progress lines --threads 2
# the summary's two throughputs say what they measure, and are summary.json's
python3 - "$tmp/run" "$("$PZ" train --data synthetic --model mlp --epochs 1 --limit-train 300 --limit-test 100 --batch 32 \
  --out "$tmp/rate" --progress none --threads 1 2>/dev/null | head -1)" <<'PY' && ok || bad "throughput line"
import json, re, sys
line = sys.argv[2]
m = re.search(r"; (\d+) samples/s while training, (\d+)/s over the whole run \(evaluation and checkpoints included\)$", line)
assert m, line
s = json.load(open(sys.argv[1].replace("/run", "/rate") + "/summary.json"))
train, whole = int(m.group(1)), int(m.group(2))
assert abs(train - s["train_samples_per_second"]) <= 1 and abs(whole - s["samples_per_second"]) <= 1, (line, s)
assert s["train_samples_per_second"] > s["samples_per_second"], s
PY
for f in config.json summary.json steps.csv epochs.csv; do
  if [ -s "$tmp/run/$f" ]; then ok; else bad "run directory lacks $f"; fi
done
if [ "$(wc -l < "$tmp/run/epochs.csv")" -eq 3 ] && head -1 "$tmp/run/epochs.csv" | grep -q '^epoch,train_loss,train_accuracy,test_loss,test_accuracy'; then
  ok; else bad "epochs.csv: $(cat "$tmp/run/epochs.csv")"; fi
if grep -q '"status": "finished"' "$tmp/run/summary.json"; then ok; else bad "summary.json: $(cat "$tmp/run/summary.json")"; fi
if /usr/bin/env python3 -c 'import json,sys; json.load(open(sys.argv[1])); json.load(open(sys.argv[2]))' \
     "$tmp/run/config.json" "$tmp/run/summary.json" 2>/dev/null; then ok; else bad "config.json/summary.json are not valid JSON"; fi

# a pipeline: 3 stages balanced by compute, compressed both ways
expect 0 "3 stages, fwd q8, bwd q8: [0-9.]+ MB forward \+ [0-9.]+ MB backward on the links, 3\.[0-9]+x less than fp32" -- \
  "$PZ" train --data synthetic --model lenet5 --epochs 1 --limit-train 512 --limit-test 128 --batch 64 --stages 3 \
  --fwd q8 --bwd q8 --out "$tmp/pipe" --metrics csv --progress none --threads 1
if head -1 "$tmp/pipe/epochs.csv" | grep -q "test_accuracy_compressed" && grep -q '"stages": 3' "$tmp/pipe/summary.json"; then ok
else bad "pipeline run directory: $(head -1 "$tmp/pipe/epochs.csv"); $(cat "$tmp/pipe/summary.json")"; fi
# a value that does not exist is null, not -1 or 0: a single stage has no
# compressed evaluation or link clock, an image model no tokens; a pipeline
# has both; floats in their shortest exact form
if /usr/bin/env python3 - "$tmp/run/summary.json" "$tmp/pipe/summary.json" "$tmp/run/config.json" <<'PY'
import json, sys
one, pipe, cfg = (json.load(open(p)) for p in sys.argv[1:4])
for k in ("final_test_accuracy_compressed", "final_test_loss_compressed", "emulated_seconds", "tokens_per_sample",
          "final_test_bits_per_byte", "final_test_bits_per_byte_compressed"):
    assert k in one and one[k] is None, (k, one.get(k))
assert 0 <= pipe["final_test_accuracy_compressed"] <= 1 and pipe["emulated_seconds"] > 0, pipe
assert pipe["tokens_per_sample"] is None and one["resumed_from"] == 0, pipe
assert "0.100000001" not in open(sys.argv[3]).read() and cfg["lr"] == 0.1, cfg["lr"]
# throughput says what it measures: training steps alone, or the whole run
for d in (one, pipe):
    assert d["train_samples_per_second"] >= d["samples_per_second"] > 0, d
PY
then ok; else bad "summary.json nulls: $(cat "$tmp/run/summary.json")"; fi
# config.json says how the run was made: the command line (shell-quoted: it
# splits back into the same words), the commit, the host, the environment
# that chooses kernels
odd="$tmp/run 'odd' dir"
PZ_CONV_KERNELS=avx2 "$PZ" train --data synthetic --model mlp --epochs 1 --limit-train 64 --limit-test 32 --out "$odd" \
  --progress none --threads 1 >/dev/null 2>&1
if /usr/bin/env python3 - "$odd" "$PZ" <<'PY'
import json, os, shlex, sys
cfg = json.load(open(os.path.join(sys.argv[1], "config.json")))
words = shlex.split(cfg["command_line"])
assert words[0] == sys.argv[2] and words[1] == "train" and words[words.index("--out") + 1] == sys.argv[1], words
assert cfg["git_commit"] and cfg["host"] and cfg["version"], cfg
assert "PZ_CONV_KERNELS=avx2" in cfg["environment"] and cfg["conv_kernels_chosen_by"] in ("user", "pipezip"), cfg
PY
then ok; else bad "config.json's command line: $(cat "$odd/config.json" 2>/dev/null)"; fi
expect 2 "--fwd: codec spec 'q9'" -- "$PZ" train --data synthetic --stages 2 --fwd q9 --no-out
expect 2 "--cuts: 'layer9' is not a layer of resnet8" -- "$PZ" train --data synthetic --cuts layer9 --no-out --progress none
# a bad cut or per-boundary list is refused before the run's header (nothing has started)
out=$("$PZ" train --data synthetic --cuts layer1,layer1 --no-out --progress none 2>&1)
[ $? -eq 2 ] && grep -q "must come after the previous cut" <<<"$out" && ! grep -q "^pipezip train: resnet8 on\|^pipeline:" <<<"$out" \
  && ok || bad "a bad cut's error comes first, alone: $out"
expect 2 "--eval-compress 'maybe' is not one of: on\|off\|both" -- "$PZ" train --eval-compress maybe

# a language model: gpt-tiny on a text file in 2 stages, then text from its run
for _ in $(seq 40); do printf 'In the beginning God created the heaven and the earth. And the earth was without form, and void. '; done > "$tmp/verse.txt"
expect 0 "bits per byte" -- "$PZ" train --model gpt-tiny --data "text:$tmp/verse.txt" --epochs 1 --limit-train 4 --limit-test 2 \
  --batch 2 --stages 2 --fwd q8 --bwd q8 --optimizer adamw --lr 1e-3 --clip-norm 1 --out "$tmp/lm" --progress none --threads 2
if grep -q '"test_bits_per_byte": [0-9.]' "$tmp/lm/epochs.jsonl"; then ok; else bad "lm epochs.jsonl: $(cat "$tmp/lm/epochs.jsonl")"; fi
# progress counts a --steps run's steps, not its epoch's (it said step 10/1162 for --steps 6 of a long text)
for _ in $(seq 20); do cat "$tmp/verse.txt"; done > "$tmp/verses20.txt"
expect 0 "epoch 1/1 step 4/6  validation loss" -- "$PZ" train --model gpt:layers=2,d=32,heads=2,ctx=16 --data "text:$tmp/verses20.txt" \
  --steps 6 --batch 2 --limit-test 2 --eval-every 4 --progress lines --no-out --threads 1
"$PZ" sample --run "$tmp/lm" --prompt "And God" --tokens 24 --seed 5 --threads 2 > "$tmp/s1" 2>&1; rc1=$?
"$PZ" sample --run "$tmp/lm" --prompt "And God" --tokens 24 --seed 5 --threads 1 --epoch 1 > "$tmp/s2" 2>&1; rc2=$?
if [ "$rc1" -eq 0 ] && [ "$rc2" -eq 0 ] && [ "$(head -c 7 "$tmp/s1")" = "And God" ] && [ "$(wc -c < "$tmp/s1")" -eq 32 ] && \
   cmp -s "$tmp/s1" "$tmp/s2"; then ok; else bad "sample: exit $rc1/$rc2, $(od -c "$tmp/s1" | head -5) vs $(od -c "$tmp/s2" | head -5)"; fi
expect 0 "^Usage: pipezip sample --run DIR" -- "$PZ" sample --help
expect 2 "--run DIR is required" -- "$PZ" sample --prompt x
expect 1 "is not a pipezip run directory" -- "$PZ" sample --run "$tmp/nonexistent"
expect 1 "trained mlp on synthetic, not a language model" -- "$PZ" sample --run "$tmp/run"
expect 1 "has no checkpoint of epoch 9" -- "$PZ" sample --run "$tmp/lm" --epoch 9
rm "$tmp/lm/checkpoint/epoch-1/stage-1.bin"
expect 1 "holds the parameters of stages 0-0 only" -- "$PZ" sample --run "$tmp/lm"

# --eval-every: validation every N steps into evals.jsonl; the training's
# numbers are those of a run without it (error feedback: codec state matters)
for e in 0 4; do
  "$PZ" train --model gpt-tiny --data "text:$tmp/verse.txt" --epochs 2 --limit-train 12 --limit-test 2 --batch 2 --stages 2 \
    --fwd "ef(topk:0.2)" --bwd q8 --optimizer adamw --lr 1e-3 --eval-every $e --out "$tmp/ev$e" --progress none --threads 2 \
    > "$tmp/ev$e.log" 2>&1 || bad "eval-every $e: $(tail -3 "$tmp/ev$e.log")"
done
python3 - "$tmp/ev0" "$tmp/ev4" <<'PY' && ok || bad "--eval-every"
import json, os, sys
a, b = ([json.loads(l) for l in open(d + "/epochs.jsonl")] for d in sys.argv[1:])
for x, y in zip(a, b):
    for k in ("train_loss", "test_loss", "test_loss_compressed", "fwd_bytes", "bwd_bytes"):
        assert x[k] == y[k], (k, x[k], y[k])
assert not os.path.exists(sys.argv[1] + "/evals.jsonl")
ev = [json.loads(l) for l in open(sys.argv[2] + "/evals.jsonl")]
assert [e["step"] for e in ev] == [4, 6, 8, 12], [e["step"] for e in ev]
assert [e["epoch"] for e in ev] == [1, 1, 2, 2]
assert ev[1]["test_loss"] == b[0]["test_loss"] and ev[3]["test_bits_per_byte_compressed"] == b[1]["test_bits_per_byte_compressed"]
assert all(e["test_bits_per_byte"] > 0 for e in ev)
PY
expect 2 "--eval-every" -- "$PZ" train --eval-every -1 --no-out
expect 0 "epoch 1/2 step 4/6  validation loss [0-9.]+ \([0-9.]+ bits per byte\), compressed [0-9.]+" -- "$PZ" train \
  --model gpt-tiny --data "text:$tmp/verse.txt" --epochs 2 --limit-train 12 --limit-test 2 --batch 2 --stages 2 \
  --optimizer adamw --eval-every 4 --no-out --progress lines --threads 1

# --grad-mask fwd: the boundary gradient keeps only the forward TopK's
# positions, so a backward TopK of the same fraction keeps all of it (error 0)
for gm in none fwd; do
  "$PZ" train --model gpt-tiny --data "text:$tmp/verse.txt" --epochs 1 --limit-train 8 --limit-test 2 --batch 2 --stages 2 \
    --fwd topk:0.1 --bwd topk:0.1 --grad-mask $gm --optimizer adamw --out "$tmp/gm-$gm" --progress none --threads 1 \
    > "$tmp/gm-$gm.log" 2>&1 || bad "grad-mask $gm: $(tail -3 "$tmp/gm-$gm.log")"
done
python3 - "$tmp/gm-none" "$tmp/gm-fwd" <<'PY' && ok || bad "--grad-mask fwd: $(cat "$tmp/gm-fwd/boundaries.jsonl")"
import json, sys
a, b = (json.loads(open(d + "/boundaries.jsonl").readline()) for d in sys.argv[1:])
assert a["bwd_error"] > 0.3 and b["bwd_error"] == 0, (a["bwd_error"], b["bwd_error"])
assert json.load(open(sys.argv[2] + "/config.json"))["grad_mask"] == "fwd"
PY
expect 2 "--grad-mask 'both' is not one of: none\|fwd" -- "$PZ" train --grad-mask both --no-out

# BPE tokens: learned from the training split, kept in the run directory,
# what sample encodes the prompt with and decodes its tokens by
for _ in $(seq 10); do cat "$tmp/verse.txt"; done > "$tmp/verses.txt"
expect 0 "bits per byte" -- "$PZ" train --model gpt-tiny --data "text:$tmp/verses.txt" --tokenizer bpe:300 --epochs 1 \
  --limit-train 4 --limit-test 2 --batch 2 --stages 2 --optimizer adamw --lr 1e-3 --out "$tmp/bpe" --progress none --threads 2
if head -3 "$tmp/bpe/tokenizer.txt" | grep -q '^vocab 300$' && grep -q '"tokenizer": "bpe:300"' "$tmp/bpe/config.json" && \
   grep -q '"n_params": 848128' "$tmp/bpe/config.json"; then ok; else bad "bpe run: $(head -3 "$tmp/bpe/tokenizer.txt"; cat "$tmp/bpe/config.json")"; fi
"$PZ" sample --run "$tmp/bpe" --prompt "And God" --tokens 10 --seed 5 --threads 2 > "$tmp/b1" 2>&1; rc1=$?
"$PZ" sample --run "$tmp/bpe" --prompt "And God" --tokens 10 --seed 5 --threads 1 > "$tmp/b2" 2>&1; rc2=$?
# 10 tokens: at least 10 bytes after the prompt
if [ "$rc1" -eq 0 ] && [ "$rc2" -eq 0 ] && [ "$(head -c 7 "$tmp/b1")" = "And God" ] && [ "$(wc -c < "$tmp/b1")" -ge 18 ] && \
   cmp -s "$tmp/b1" "$tmp/b2"; then ok; else bad "bpe sample: exit $rc1/$rc2, $(cat "$tmp/b1") vs $(cat "$tmp/b2")"; fi
sed -i 's/^vocab 300$/vocab 301/' "$tmp/bpe/tokenizer.txt"
expect 1 "has 301 tokens where the run's --tokenizer bpe:300 says 300" -- "$PZ" sample --run "$tmp/bpe"
rm "$tmp/bpe/tokenizer.txt"
expect 1 "tokenizer.txt" -- "$PZ" sample --run "$tmp/bpe"
expect 2 "--tokenizer 'bpe:100' \(expected bytes or bpe:N" -- "$PZ" train --model gpt-tiny --data "text:$tmp/verses.txt" --tokenizer bpe:100 --no-out
expect 2 "--tokenizer bpe:512 is for text" -- "$PZ" train --data synthetic --tokenizer bpe:512 --no-out

# Ctrl-C: the run stops after the current step, checkpoints it, writes its summary, exits 130
"$PZ" train --data synthetic --model lenet5 --epochs 1000 --out "$tmp/int" --progress none --threads 1 \
  > "$tmp/int.log" 2>&1 &
pid=$!
# wait for the state (the first epoch recorded), however long a loaded machine takes
while [ ! -s "$tmp/int/epochs.jsonl" ] && kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
kill -INT "$pid"
wait "$pid"; rc=$?
if [ "$rc" -eq 130 ] && grep -q '"status": "stopped"' "$tmp/int/summary.json" 2>/dev/null && \
   grep -q "stopped after step [1-9][0-9]* ([1-9][0-9]* finished epochs*); checkpoint and metrics in .*--resume" "$tmp/int.log" && \
   python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); s = json.load(open(sys.argv[2])); assert d["global_step"] == s["steps"] > 0' \
     "$tmp/int/checkpoint/latest.json" "$tmp/int/summary.json"; then ok
else bad "SIGINT: exit $rc, log: $(cat "$tmp/int.log"), summary: $(cat "$tmp/int/summary.json" 2>&1)"; fi

# an existing run is never mixed or overwritten: refused, continued with --resume, or replaced with --overwrite
"$PZ" train --data synthetic --model mlp --epochs 1 --limit-train 256 --limit-test 64 --out "$tmp/once" --progress none > /dev/null 2>&1 \
  && ok || bad "a small run"
cp "$tmp/once/epochs.jsonl" "$tmp/once-epochs"
expect 2 "holds a run.*--resume.*--overwrite" -- "$PZ" train --data synthetic --model mlp --epochs 1 --limit-train 256 --out "$tmp/once"
cmp -s "$tmp/once/epochs.jsonl" "$tmp/once-epochs" && ok || bad "a refused run touched the old one"
"$PZ" train --data synthetic --model mlp --epochs 1 --limit-train 128 --limit-test 64 --out "$tmp/once" --overwrite --progress none > /dev/null 2>&1 \
  && [ "$(wc -l < "$tmp/once/epochs.jsonl")" -eq 1 ] && ok || bad "--overwrite"
expect 2 "give one of them" -- "$PZ" train --data synthetic --model mlp --resume "$tmp/once" --overwrite
# two runs started in the same second get their own default directories
mkdir -p "$tmp/cwd" && (cd "$tmp/cwd" && for i in 1 2 3; do "$PZ" train --data synthetic --model mlp --epochs 1 --limit-train 64 --limit-test 32 --progress none > /dev/null 2>&1 & done; wait)
[ "$(ls "$tmp/cwd/runs" | wc -l)" -eq 3 ] && ok || bad "default run directories shared: $(ls "$tmp/cwd/runs")"
# a small gzip dataset that expands far past what its header says is refused after the header's bytes, not decompressed whole
mkdir -p "$tmp/bomb"
python3 - "$tmp/bomb" <<'PY'
import gzip, struct, sys
d = sys.argv[1]
with gzip.open(f"{d}/train-images-idx3-ubyte.gz", "wb", compresslevel=9) as f:
    f.write(struct.pack(">IIII", 0x803, 10, 28, 28))
    block = bytes(1 << 20)
    for _ in range(512):  # 512 MB of zeros where the header promises 7,840 bytes
        f.write(block)
with gzip.open(f"{d}/train-labels-idx1-ubyte.gz", "wb") as f:
    f.write(struct.pack(">II", 0x801, 10) + bytes(10))
PY
[ "$(stat -c %s "$tmp/bomb/train-images-idx3-ubyte.gz")" -lt 2000000 ] && ok || bad "the test's gzip bomb is not small"
expect 1 "train-images-idx3-ubyte.gz' holds more than 7856 bytes" -- "$PZ" train --data fashion-mnist --data-dir "$tmp/bomb" --no-out --epochs 1
# CSV metrics stay CSV with a codec spec holding commas
"$PZ" train --data synthetic --model lenet5 --epochs 1 --limit-train 128 --limit-test 64 --cuts pool1 --fwd "ms:0.1,bits=2" \
  --metrics csv --out "$tmp/csv" --progress none > /dev/null 2>&1 && ok || bad "a csv run"
python3 - "$tmp/csv" <<'PY' && ok || bad "csv metrics do not parse"
import csv, sys
for name in ("boundaries", "epochs", "steps"):
    rows = list(csv.reader(open(f"{sys.argv[1]}/{name}.csv")))
    assert len(rows) >= 2 and all(len(r) == len(rows[0]) for r in rows), (name, rows[:3])
b = list(csv.DictReader(open(f"{sys.argv[1]}/boundaries.csv")))
assert b[0]["fwd"] == "ms:0.1,bits=2", b[0]
PY
finish test_cli.sh
