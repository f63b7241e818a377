#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_install.sh — `cmake --install` puts the command, the static and shared
# libraries, the headers (the generated version.h too), a relocatable
# pkg-config file, a CMake package config and the Python package under a
# prefix; the shared library exports pz_ symbols only (the public API); the
# examples build as their comments say with pkg-config, and with
# find_package against both libraries, and run; Debian's python3 imports the
# installed package and round-trips a frame.
# Usage: test_install.sh BUILD_DIR SOURCE_DIR [EXTRA_CFLAGS...]
set -euo pipefail
build="$1" src="$2"; shift 2
prefix=$(mktemp -d /tmp/pz-test-install-XXXXXX)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
fail=0
for f in bin/pipezip include/pipezip/pipezip.h include/pipezip/status.h include/pipezip/codec.h include/pipezip/version.h \
         lib/libpipezip.a lib/libpipezip.so lib/pkgconfig/pipezip.pc lib/cmake/pipezip/pipezipConfig.cmake \
         lib/cmake/pipezip/pipezipConfigVersion.cmake lib/python3/dist-packages/pipezip/__init__.py; do
  [ -e "$prefix/$f" ] || { echo "FAIL: $f not installed" >&2; fail=$((fail + 1)); }
done
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
cc "$@" "$src/examples/net_api.c" $(pkg-config --cflags --libs pipezip) -Wl,-rpath,"$prefix/lib" -o "$prefix/net_api"
out=$("$prefix/net_api")
grep -q "memorised 16 of 16 examples" <<<"$out" || { echo "FAIL: example output: $out" >&2; fail=$((fail + 1)); }
cc "$@" "$src/examples/codec_api.c" $(pkg-config --cflags --libs pipezip) -lm -Wl,-rpath,"$prefix/lib" -o "$prefix/codec_api"
out=$("$prefix/codec_api")
grep -q "damaged frames: rejected" <<<"$out" || { echo "FAIL: codec example output: $out" >&2; fail=$((fail + 1)); }
cc "$@" "$src/examples/run_api.c" $(pkg-config --cflags --libs pipezip) -Wl,-rpath,"$prefix/lib" -o "$prefix/run_api"
out=$("$prefix/run_api" 2>&1)
{ grep -q "refused: --fwd: codec spec 'q9'" <<<"$out" && grep -q "3 stages: .*x less traffic than fp32" <<<"$out"; } ||
  { echo "FAIL: run example output: $out" >&2; fail=$((fail + 1)); }
# statically, through pkg-config --static: the run API pulls in every transport (MPI, ZeroMQ), whose libraries Libs.private names
if cc "$@" "$src/examples/run_api.c" "$prefix/lib/libpipezip.a" $(pkg-config --static --cflags --libs pipezip | sed 's/-lpipezip//') \
     -o "$prefix/run_api_static" 2>"$prefix/static.log"; then
  syms=$(nm "$prefix/run_api_static")
  { grep -q "MPI_Init_thread" <<<"$syms" && grep -q "zmq_socket" <<<"$syms"; } ||
    { echo "FAIL: the static run_api lacks the MPI or the ZeroMQ transport" >&2; fail=$((fail + 1)); }
  out=$("$prefix/run_api_static" 2>&1)
  grep -q "3 stages: .*x less traffic than fp32" <<<"$out" || { echo "FAIL: static run example output: $out" >&2; fail=$((fail + 1)); }
else
  echo "FAIL: pkg-config --static does not link the static library:" >&2; head -20 "$prefix/static.log" >&2; fail=$((fail + 1))
fi
# the README's C example compiles as shown, and a mistyped codec in it stops before training, naming the flag
{ printf '#include <pipezip/pipezip.h>\n#include <stdio.h>\nint main(void) {\n'
  awk '/^From C,/ {on = 1} on && /^```c/ {code = 1; next} code && /^```/ {exit} code {print}' "$src/README.md" | sed 's/"q4"/"q9"/'
  printf 'return 0;\n}\n'; } > "$prefix/readme_c.c"
if cc "$@" "$prefix/readme_c.c" $(pkg-config --cflags --libs pipezip) -Wl,-rpath,"$prefix/lib" -o "$prefix/readme_c" 2>"$prefix/readme_c.log"; then
  out=$("$prefix/readme_c" 2>&1)
  grep -q "^--fwd: codec spec 'q9': unknown codec name" <<<"$out" || { echo "FAIL: the README's C example with q9 printed: $out" >&2; fail=$((fail + 1)); }
else
  echo "FAIL: the README's C example does not compile:" >&2; cat "$prefix/readme_c.log" >&2; fail=$((fail + 1))
fi
"$prefix/bin/pipezip" --version | grep -q "^pipezip " || { echo "FAIL: installed pipezip --version" >&2; fail=$((fail + 1)); }
# only the public API leaves the shared library: every exported function is
# pz_-prefixed and declared PZ_API in the installed headers
exported=$(nm -D --defined-only "$prefix/lib/libpipezip.so" | awk '$2 ~ /^[TWDBRV]$/ {print $3}' | sort)
outside=$(grep -v '^pz_' <<<"$exported" || true)
[ -z "$outside" ] || { echo "FAIL: exported outside pz_: $(tr '\n' ' ' <<<"$outside")" >&2; fail=$((fail + 1)); }
public=$(grep -ho 'PZ_API [^(]*\bpz_[a-z0-9_]*(' "$prefix"/include/pipezip/*.h | grep -o 'pz_[a-z0-9_]*($' | tr -d '(' | sort -u)
extra=$(comm -23 <(sed '/^$/d' <<<"$exported") <(sed '/^$/d' <<<"$public"))
missing=$(comm -13 <(sed '/^$/d' <<<"$exported") <(sed '/^$/d' <<<"$public"))
[ -z "$extra" ] && [ -z "$missing" ] || { echo "FAIL: exports differ from the headers' PZ_API (extra: $extra; missing: $missing)" >&2; fail=$((fail + 1)); }
[ "$(wc -l <<<"$public")" -gt 30 ] || { echo "FAIL: only $(wc -l <<<"$public") public functions found" >&2; fail=$((fail + 1)); }
# the version macros come from the build
ver=$("$prefix/bin/pipezip" --version | awk '{print $2}')
grep -q "#define PZ_VERSION_STRING \"$ver\"" "$prefix/include/pipezip/version.h" || { echo "FAIL: version.h is not $ver" >&2; fail=$((fail + 1)); }
# find_package, shared and static (examples/CMakeLists.txt)
if cmake -S "$src/examples" -B "$prefix/ex" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_FLAGS="$*" \
     -DCMAKE_EXE_LINKER_FLAGS="$* -Wl,-rpath,$prefix/lib" >"$prefix/ex.log" 2>&1 && cmake --build "$prefix/ex" >>"$prefix/ex.log" 2>&1; then
  "$prefix/ex/net_api" | grep -q "memorised 16 of 16 examples" || { echo "FAIL: find_package net_api" >&2; fail=$((fail + 1)); }
  "$prefix/ex/codec_api" | grep -q "damaged frames: rejected" || { echo "FAIL: find_package codec_api" >&2; fail=$((fail + 1)); }
  "$prefix/ex/codec_api_static" | grep -q "damaged frames: rejected" || { echo "FAIL: find_package codec_api_static" >&2; fail=$((fail + 1)); }
  "$prefix/ex/run_api_static" 2>&1 | grep -q "3 stages: .*x less traffic than fp32" || { echo "FAIL: find_package run_api_static" >&2; fail=$((fail + 1)); }
else
  echo "FAIL: the examples do not build with find_package:" >&2; cat "$prefix/ex.log" >&2; fail=$((fail + 1))
fi
# Python: the installed package finds the installed library
pyenv=()
if [ -n "${PZ_TEST_PRELOAD:-}" ]; then pyenv=(env "LD_PRELOAD=$PZ_TEST_PRELOAD" ASAN_OPTIONS=detect_leaks=0); fi
out=$(cd / && "${pyenv[@]}" env -u PIPEZIP_LIBRARY PYTHONPATH="$prefix/lib/python3/dist-packages" /usr/bin/python3 -c '
import numpy as np, pipezip
c = pipezip.Codec("q4")
x = np.linspace(-1, 1, 1000, dtype=np.float32)
y = c.decode(c.encode(x))
print(pipezip.library_path, float(abs(y - x).max()) < 0.07)' 2>&1) || true
grep -q "^$prefix/lib/libpipezip.so.0 True" <<<"$out" || { echo "FAIL: installed python package: $out" >&2; fail=$((fail + 1)); }
echo "test_install.sh: $((17 - fail)) passed, $fail failed"
[ "$fail" -eq 0 ]
