# SPDX-License-Identifier: MIT
# lib.sh — what the shell tests share: a temp dir, counters, and
#   expect CODE PATTERN -- CMD...   (exit code CODE, output matching PATTERN)
# Source it with the tmp-dir name: . lib.sh NAME; end with `finish SCRIPT`.
pass=0
fail=0
tmp=$(mktemp -d "/tmp/pz-test-$1-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }

expect() {
  local code="$1" pattern="$2"; shift 3
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" -ne "$code" ]; then bad "'$*' exited $rc, expected $code: $out"; return; fi
  if ! grep -qE -- "$pattern" <<<"$out"; then bad "'$*' output lacks /$pattern/: $out"; return; fi
  ok
}

finish() {
  echo "$1: $pass passed, $fail failed"
  [ "$fail" -eq 0 ]
}
