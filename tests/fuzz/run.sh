#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run.sh — build a fuzz target with clang's libFuzzer (+ASan+UBSan) and run
# it for SECONDS on a copy of its seed corpus. Targets: decode (the frame
# decoder), roundtrip (encode then decode, with properties), checkpoint
# (checkpoint files and state blobs). An input that fails is left in
# WORKDIR (crash-*): copy it into tests/fuzz/corpus/TARGET/ once fixed, and
# the ordinary build's replay test keeps it fixed.
# Usage: tests/fuzz/run.sh [SECONDS] [WORKDIR] [TARGET]
set -euo pipefail
secs=${1:-30}
src=$(cd "$(dirname "$0")/../.." && pwd)
work=${2:-$(mktemp -d /tmp/pz-fuzz-XXXXXX)}
target=${3:-decode}
case "$target" in decode|roundtrip|checkpoint) ;; *) echo "run.sh: unknown target '$target' (decode, roundtrip, checkpoint)" >&2; exit 2 ;; esac
work="$work/$target"
rm -rf "$work/corpus" "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*
mkdir -p "$work/corpus"
cp "$src"/tests/fuzz/corpus/"$target"/* "$work/corpus/"
CC=${CC_FUZZ:-clang}
flags=(-O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -I"$src/src" -I"$src/include")
objs=()
compile() { # file extra-flags...
  local f=$1; shift
  local o="$work/$(basename "$f" .c).o"
  "$CC" "${flags[@]}" "$@" -c "$f" -o "$o"
  objs+=("$o")
}
extra=()
[ "$target" = checkpoint ] && extra=("$src/src/pipe/checkpoint.c" "$src/src/nn/optim.c")
for f in "$src"/src/base/base.c "$src"/src/base/names.c "$src"/src/kernels/codec_dispatch.c "$src"/src/codec/*.c "${extra[@]}"; do compile "$f"; done
compile "$src/src/kernels/codec_kernels_scalar.c" -fno-vectorize -ffp-contract=off
compile "$src/src/kernels/codec_kernels_avx2.c" -ffp-contract=off -mavx2 -mfma -mf16c -msse4.2
compile "$src/src/kernels/codec_kernels_avx512.c" -ffp-contract=off -mavx512f -mavx512bw -mavx512vl -mavx2 -mfma -mf16c -msse4.2
compile "$src/tests/fuzz/fuzz_$target.c"
"$CC" "${flags[@]}" "${objs[@]}" -lzstd -lz -lm -o "$work/fuzz_$target"
echo "fuzzing $target for ${secs}s (corpus $work/corpus)"
"$work/fuzz_$target" -artifact_prefix="$work/" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 "$work/corpus" 2>&1 | \
  grep -E "^#[0-9]+ +DONE|stat::number_of_executed_units|ERROR|SUMMARY|Done" || true
# libFuzzer writes crash-*, leak-*, timeout-* or oom-* files when it finds a bug
found=$(find "$work" -maxdepth 1 \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | head -3)
if [ -n "$found" ]; then
  echo "fuzz_$target found a failing input: $found" >&2
  exit 1
fi
echo "fuzz_$target: no failure"
