#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_pip.sh — `pip install ./python` as docs/PYTHON.md says (a venv with
# Debian's packages, offline: --no-build-isolation --no-index): the wheel
# bundles the library it was built against, its version is the library's,
# and the README's Python example runs from outside the tree with nothing
# set; against an installed library (cmake --install, no build in the
# tree) the package finds that one.
# Usage: test_pip.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build="$1" src="$2"
tmp=$(mktemp -d /tmp/pz-test-pip-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
pyenv=()
if [ -n "${PZ_TEST_PRELOAD:-}" ]; then pyenv=(env "LD_PRELOAD=$PZ_TEST_PRELOAD" ASAN_OPTIONS=detect_leaks=0); fi
# a copy of the tree's package (the build writes python/build/ and *.egg-info)
mkdir -p "$tmp/src"
cp -r "$src/python" "$src/CMakeLists.txt" "$tmp/src/"
rm -rf "$tmp/src/python/build" "$tmp/src/python/"*.egg-info
/usr/bin/python3 -m venv --system-site-packages "$tmp/venv"
if ! env -u PYTHONPATH PIPEZIP_LIBRARY="$build/libpipezip.so.0" "$tmp/venv/bin/pip" install -q \
     --no-build-isolation --no-index "$tmp/src/python" >"$tmp/pip.log" 2>&1; then
  echo "FAIL: pip install:" >&2; cat "$tmp/pip.log" >&2; exit 1
fi
# the README's Python example, as a newcomer copies it
awk '/^## From Python/ {on = 1} on && /^```python/ {code = 1; next} code && /^```/ {exit} code {print}' "$src/README.md" >"$tmp/readme.py"
[ -s "$tmp/readme.py" ] || { echo "FAIL: no Python example in README.md" >&2; fail=$((fail + 1)); }
out=$(cd / && "${pyenv[@]}" env -u PYTHONPATH -u PIPEZIP_LIBRARY "$tmp/venv/bin/python" "$tmp/readme.py" 2>&1) ||
  { echo "FAIL: the README's example: $out" >&2; fail=$((fail + 1)); }
grep -q "fwd_bytes" <<<"$out" || { echo "FAIL: the README's example printed: $out" >&2; fail=$((fail + 1)); }
# the README's torchrun line, as written after its own install (the venv's Python launching the ranks),
# shortened by flags appended to it (a small GPT, a generated text, 2 steps)
line=$(awk '/^A 4-stage GPT pipeline/ {on = 1} on && /^```sh/ {code = 1; next} code && /^```/ {exit} code {print}' "$src/README.md")
if [[ "$line" == .venv/bin/python\ -m\ torch.distributed.run* ]]; then
  /usr/bin/python3 -c 'import random, sys; random.seed(7); w = "and the of unto he said LORD God".split(); open(sys.argv[1], "w").write(" ".join(random.choice(w) for _ in range(20000)))' "$tmp/text.txt"
  mkdir -p "$tmp/tree" && cp -r "$src/examples" "$tmp/tree/" && ln -s "$tmp/venv" "$tmp/tree/.venv"
  out=$(cd "$tmp/tree" && "${pyenv[@]}" env -u PYTHONPATH -u PIPEZIP_LIBRARY bash -c "$line --layers 4 --d 32 --heads 2 --ctx 32 --batch 8 \
        --steps 2 --eval-every 2 --eval-windows 4 --final-eval-windows 4 --data text:$tmp/text.txt --out $tmp/tp" 2>&1) ||
    { echo "FAIL: the README's torchrun line: $(tail -20 <<<"$out")" >&2; fail=$((fail + 1)); }
  grep -q "less than fp32" <<<"$out" || { echo "FAIL: the README's torchrun line printed: $(tail -20 <<<"$out")" >&2; fail=$((fail + 1)); }
else
  echo "FAIL: README.md's pipeline command is not the venv's torch.distributed.run: $line" >&2; fail=$((fail + 1))
fi
out=$(cd / && "${pyenv[@]}" env -u PYTHONPATH -u PIPEZIP_LIBRARY "$tmp/venv/bin/python" -c '
import importlib.metadata as md, pipezip, pipezip.torch, pipezip.pipeline
print(pipezip.library_path)
print(pipezip.__version__, md.version("pipezip"), pipezip.library_version())' 2>&1) || true
grep -q "^$tmp/venv/lib/python3[0-9.]*/site-packages/pipezip/libpipezip.so.0$" <<<"$out" ||
  { echo "FAIL: the venv's package does not load its bundled library: $out" >&2; fail=$((fail + 1)); }
ver=$(sed -n 's/^project(pipezip VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
grep -q "^$ver $ver $ver$" <<<"$out" || { echo "FAIL: versions (package, metadata, library) are not $ver: $out" >&2; fail=$((fail + 1)); }
# against an installed library: no build in the tree, the prefix named
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
/usr/bin/python3 -m venv --system-site-packages "$tmp/venv2"
if env -u PYTHONPATH -u PIPEZIP_LIBRARY PIPEZIP_PREFIX="$tmp/prefix" "$tmp/venv2/bin/pip" install -q \
     --no-build-isolation --no-index "$tmp/src/python" >"$tmp/pip2.log" 2>&1; then
  out=$(cd / && "${pyenv[@]}" env -u PYTHONPATH -u PIPEZIP_LIBRARY "$tmp/venv2/bin/python" -c '
import numpy as np, pipezip
print(pipezip.library_path, len(pipezip.Codec("q8").encode(np.ones(100, np.float32))))' 2>&1) || true
  grep -q "^$tmp/prefix/lib/libpipezip.so.0 172$" <<<"$out" ||
    { echo "FAIL: the package over an installed library: $out" >&2; fail=$((fail + 1)); }
else
  echo "FAIL: pip install against the prefix:" >&2; cat "$tmp/pip2.log" >&2; fail=$((fail + 1))
fi
# no library anywhere: the install fails and says what to do (a package that cannot import is not installed)
if ! ls /usr/local/lib/libpipezip.so.0 /usr/lib/libpipezip.so.0 /usr/lib/x86_64-linux-gnu/libpipezip.so.0 >/dev/null 2>&1; then
  /usr/bin/python3 -m venv --system-site-packages "$tmp/venv3"
  if env -u PYTHONPATH -u PIPEZIP_LIBRARY -u PIPEZIP_PREFIX "$tmp/venv3/bin/pip" install \
       --no-build-isolation --no-index "$tmp/src/python" >"$tmp/pip3.log" 2>&1; then
    echo "FAIL: pip install without a library succeeded" >&2; fail=$((fail + 1))
  elif ! grep -q "no libpipezip.so.0 to bundle or use: build it first" "$tmp/pip3.log"; then
    echo "FAIL: pip install without a library does not say why: $(tail -5 "$tmp/pip3.log")" >&2; fail=$((fail + 1))
  fi
fi
echo "test_pip.sh: $((7 - fail)) passed, $fail failed"
[ "$fail" -eq 0 ]
