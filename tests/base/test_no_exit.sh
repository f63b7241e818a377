#!/bin/bash
# SPDX-License-Identifier: MIT
# test_no_exit.sh OBJECT... — the library never ends the process: no object
# of it outside src/cli/ (the command decides to exit) calls exit, _exit,
# abort or assert's __assert_fail. Errors return a pz_status instead.
set -u
bad=0 checked=0
IFS=';' read -ra objs <<< "$*" # CMake passes the list joined by ;
for o in "${objs[@]}"; do
  case "$o" in */src/cli/*) continue ;; esac
  [ -f "$o" ] || { echo "FAIL: no object file $o"; exit 1; }
  checked=$((checked + 1))
  calls=$(nm -u "$o" | awk '{print $NF}' | grep -xE 'exit|_exit|_Exit|abort|__assert_fail|quick_exit' || true)
  if [ -n "$calls" ]; then echo "FAIL: ${o##*/src/} calls $(echo $calls)"; bad=1; fi
done
[ "$checked" -gt 20 ] || { echo "FAIL: only $checked library objects given"; exit 1; }
[ $bad = 0 ] && echo "test_no_exit: $checked library objects, none exits or aborts"
exit $bad
