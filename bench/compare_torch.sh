#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# compare_torch.sh — pipezip's training step beside PyTorch's on the same
# model, batch and thread count, measured in the same run, alternating the
# two ROUNDS times and reporting medians (the machine is shared and noisy).
# Usage: bench/compare_torch.sh [PATH/TO/pipezip] [MODEL] [BATCH] [THREADS] [INPUT] [ROUNDS]
# MODEL resnet8|resnet20 (INPUT 1x28x28|3x32x32) or gpt-tiny|gpt-small (a full
# context of tokens per sample; INPUT is ignored): e.g.
#   bench/compare_torch.sh ./build/pipezip gpt-tiny 16 2
set -euo pipefail
PZ=${1:-./build/pipezip}
MODEL=${2:-resnet8}
BATCH=${3:-128}
THREADS=${4:-2}
INPUT=${5:-1x28x28}
ROUNDS=${6:-5}
here=$(cd "$(dirname "$0")" && pwd)
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  echo "compare_torch.sh: needs Debian's python3-torch (apt-get install python3-torch)" >&2
  exit 1
fi
pz=() th=() pzmin=() thmin=()
for r in $(seq "$ROUNDS"); do
  j=$("$PZ" bench train --model "$MODEL" --batch "$BATCH" --threads "$THREADS" --input "$INPUT" --repeat 20 --format json)
  pz+=("$(sed -E 's/.*"median_ms": ([0-9.]+).*/\1/' <<< "$j")") pzmin+=("$(sed -E 's/.*"min_ms": ([0-9.]+).*/\1/' <<< "$j")")
  j=$(/usr/bin/python3 "$here/torch_train_step.py" --model "$MODEL" --batch "$BATCH" --threads "$THREADS" --input "$INPUT" \
        --repeat 20)
  th+=("$(sed -E 's/.*"median_ms": ([0-9.]+).*/\1/' <<< "$j")") thmin+=("$(sed -E 's/.*"min_ms": ([0-9.]+).*/\1/' <<< "$j")")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
mp=$(median "${pz[@]}")
case $MODEL in gpt-*) T=$("$PZ" models "$MODEL" | sed -nE 's/.*context ([0-9]+) tokens.*/\1/p'); LABEL="$T tokens" ;; esac
mt=$(median "${th[@]}")
echo "model $MODEL, input ${LABEL:-$INPUT}, batch $BATCH, $THREADS threads, $ROUNDS rounds of 20 steps"
echo "  CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //') (family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' '), model $(grep -m1 '^model\s*:' /proc/cpuinfo | cut -d: -f2 | tr -d ' '))"
"$PZ" bench train --model "$MODEL" --batch 2 --threads 1 --input "$INPUT" --repeat 1 --warmup-steps 0 --format json 2>/dev/null |
  sed -E 's/.*"blas_core": "([^"]*)", "blas_core_chosen_by": "([^"]*)".*/  pipezip BLAS kernels: \1 (chosen by \2)/'
env | grep -q '^OPENBLAS_' && echo "  note: OPENBLAS_* is set in this environment: $(env | grep '^OPENBLAS_' | tr '\n' ' ')"
echo "  pipezip: ${pz[*]} ms/step -> median $mp"
echo "  pytorch: ${th[*]} ms/step -> median $mt ($(/usr/bin/python3 -c 'import torch; print(torch.__version__)'))"
awk -v a="$mp" -v b="$mt" 'BEGIN { printf "  pytorch / pipezip = %.2fx (above 1: pipezip is faster)\n", b / a }'
# each round's pair was measured minutes apart at most: their ratios cancel
# the machine's drift between rounds, which the medians above do not
ratios=()
for r in $(seq 0 $((ROUNDS - 1))); do ratios+=("$(awk -v a="${pz[$r]}" -v b="${th[$r]}" 'BEGIN { printf "%.2f", b / a }')"); done
echo "  round by round: ${ratios[*]} -> median $(median "${ratios[@]}")x"
# the fastest single step of all rounds: what each does when nothing else
# (page faults, the machine's neighbours) gets in its way
bp=$(printf '%s\n' "${pzmin[@]}" | sort -g | head -1) bt=$(printf '%s\n' "${thmin[@]}" | sort -g | head -1)
awk -v a="$bp" -v b="$bt" 'BEGIN { printf "  fastest steps: pipezip %s ms, pytorch %s ms -> %.2fx\n", a, b, b / a }'
if [ -n "${T:-}" ]; then
  awk -v a="$mp" -v b="$mt" -v n="$((BATCH * T))" 'BEGIN { printf "  tokens/s: pipezip %.0f, pytorch %.0f\n", n * 1e3 / a, n * 1e3 / b }'
fi
