#!/usr/bin/env bash
# test_install.sh — `cmake --install` puts the command, the static and shared
# libraries, the headers and a relocatable pkg-config file under a prefix, and
# another program builds against them with pkg-config alone and runs.
# Usage: test_install.sh BUILD_DIR SOURCE_DIR [EXTRA_CFLAGS...]
set -euo pipefail
build="$1" src="$2"; shift 2
prefix=$(mktemp -d /tmp/pz-test-install-XXXXXX)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
fail=0
for f in bin/pipezip include/pipezip/pipezip.h include/pipezip/status.h include/pipezip/codec.h lib/libpipezip.a lib/libpipezip.so \
         lib/pkgconfig/pipezip.pc; do
  [ -e "$prefix/$f" ] || { echo "FAIL: $f not installed" >&2; fail=$((fail + 1)); }
done
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
cc "$@" "$src/examples/net_api.c" $(pkg-config --cflags --libs pipezip) -Wl,-rpath,"$prefix/lib" -o "$prefix/net_api"
out=$("$prefix/net_api")
grep -q "memorised 16 of 16 examples" <<<"$out" || { echo "FAIL: example output: $out" >&2; fail=$((fail + 1)); }
cc "$@" "$src/examples/codec_api.c" $(pkg-config --cflags --libs pipezip) -lm -Wl,-rpath,"$prefix/lib" -o "$prefix/codec_api"
out=$("$prefix/codec_api")
grep -q "damaged frames: rejected" <<<"$out" || { echo "FAIL: codec example output: $out" >&2; fail=$((fail + 1)); }
"$prefix/bin/pipezip" --version | grep -q "^pipezip " || { echo "FAIL: installed pipezip --version" >&2; fail=$((fail + 1)); }
echo "test_install.sh: $((10 - fail)) passed, $fail failed"
[ "$fail" -eq 0 ]
