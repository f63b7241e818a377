#!/usr/bin/env bash
# run.sh — build the frame-decoder fuzz target with clang's libFuzzer
# (+ASan+UBSan) and run it for SECONDS on a copy of the seed corpus.
# Usage: tests/fuzz/run.sh [SECONDS] [WORKDIR]
set -euo pipefail
secs=${1:-30}
src=$(cd "$(dirname "$0")/../.." && pwd)
work=${2:-$(mktemp -d /tmp/pz-fuzz-XXXXXX)}
mkdir -p "$work/corpus"
cp "$src"/tests/fuzz/corpus/* "$work/corpus/"
CC=${CC_FUZZ:-clang}
flags=(-O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -I"$src/src" -I"$src/include")
objs=()
compile() { # file extra-flags...
  local f=$1; shift
  local o="$work/$(basename "$f" .c).o"
  "$CC" "${flags[@]}" "$@" -c "$f" -o "$o"
  objs+=("$o")
}
for f in "$src"/src/base/base.c "$src"/src/kernels/codec_dispatch.c "$src"/src/codec/*.c; do compile "$f"; done
compile "$src/src/kernels/codec_kernels_scalar.c" -fno-vectorize -ffp-contract=off
compile "$src/src/kernels/codec_kernels_avx2.c" -ffp-contract=off -mavx2 -mfma -mf16c -msse4.2
compile "$src/src/kernels/codec_kernels_avx512.c" -ffp-contract=off -mavx512f -mavx512bw -mavx512vl -mavx2 -mfma -mf16c -msse4.2
compile "$src/tests/fuzz/fuzz_decode.c"
"$CC" "${flags[@]}" "${objs[@]}" -lz -lm -o "$work/fuzz_decode"
echo "fuzzing the frame decoder for ${secs}s (corpus $work/corpus)"
"$work/fuzz_decode" -artifact_prefix="$work/" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 "$work/corpus" 2>&1 | \
  grep -E "^#[0-9]+ +DONE|stat::number_of_executed_units|ERROR|SUMMARY|Done" || true
# libFuzzer exits non-zero and writes crash-* files when it finds a bug
if ls "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-* >/dev/null 2>&1; then
  echo "fuzz_decode found a failing input" >&2
  exit 1
fi
echo "fuzz_decode: no failure"
