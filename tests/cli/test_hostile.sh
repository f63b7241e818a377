#!/bin/bash
# SPDX-License-Identifier: MIT
# test_hostile.sh PIPEZIP HOSTILE_PEER — `pipezip serve` faces another
# party's machine: raw TCP garbage, legacy ZeroMQ framing, hand-built
# messages out of order, malformed, oversized or empty, a misconfigured
# client, a client that tries to choose where the server writes, clients
# that die or fall silent mid-step (after a real step changed the server's
# weights). The server logs each (one escaped line), drops that peer or
# session, rolls its stages back, and goes on: the honest client that comes
# last trains to exactly the numbers of the same run in one process.
. "$(dirname "$0")/lib.sh" hostile
pz="$1"
hp="$2"
export ASAN_OPTIONS="${ASAN_OPTIONS:-}"
port=$((20000 + RANDOM % 20000))
model=(--model lenet5 --cuts pool1 --fwd "topk:0.3" --bwd q8 --batch 64 --lr 0.05 --threads 1 --seed 4)
data=(--limit-train 256 --limit-test 128 --epochs 2 --progress none)
"$pz" train "${model[@]}" "${data[@]}" --out "$tmp/a" > "$tmp/a.log" 2>&1 && ok || bad "in-process run: $(tail -3 "$tmp/a.log")"

# wait for a state (a line in a log) while process $3 lives: never for a time
wait_for() { while ! grep -qs "$2" "$1"; do kill -0 "$3" 2>/dev/null || return 1; sleep 0.1; done; }

# a real client's settings check, recorded by a stand-in server
"$hp" record "$port" "$tmp/check.bin" > "$tmp/record.log" 2>&1 &
rec=$!
wait_for "$tmp/record.log" listening "$rec" || bad "recorder did not start"
"$pz" train "${model[@]}" "${data[@]}" --link zmq --connect "tcp://127.0.0.1:$port" --no-out > "$tmp/rec-client.log" 2>&1
wait "$rec" && [ -s "$tmp/check.bin" ] && ok || bad "recording the settings check: $(cat "$tmp/record.log")"

port=$((port + 1))
ep="tcp://127.0.0.1:$port"
checked=(empty-eval-checked error-text stop save-escape bad-meta bad-frame bad-labels step-then-die half-step)
"$pz" serve "${model[@]}" --bind "$ep" --timeout 5 --clients $(( ${#checked[@]} + 1 )) --checkpoint-dir "$tmp/srv" \
  > "$tmp/serve.log" 2>&1 &
srv=$!
wait_for "$tmp/serve.log" "on tcp" "$srv" || bad "server did not start: $(cat "$tmp/serve.log")"

alive() { kill -0 "$srv" 2>/dev/null && ok || bad "the server died after: $1 ($(tail -3 "$tmp/serve.log"))"; }
# bytes that are not ZeroMQ at all, and ZMTP 1.0 framing (an empty identity, a one-part message)
"$hp" raw 127.0.0.1 "$port" 0100050068656c6c; alive "legacy framing"
"$hp" random 127.0.0.1 "$port" 4096 1; alive "random bytes"
"$hp" random 127.0.0.1 "$port" 100000 2; alive "more random bytes"
"$hp" raw 127.0.0.1 "$port" ffffffffffffffffffffffffffffffff7f; alive "a ZMTP greeting of garbage"
# outside a session: ignored, logged
for s in one-part bad-tag no-hello bad-hello huge; do
  "$hp" zmq "$ep" "$s" > "$tmp/h-$s.log" 2>&1 || bad "scenario $s: $(cat "$tmp/h-$s.log")"
  alive "$s"
done
# in a session: the client is told why, its session ends
for s in empty-eval wrong-check garbage-in-session silent "${checked[@]}"; do
  "$hp" zmq "$ep" "$s" "$tmp/check.bin" > "$tmp/h-$s.log" 2>&1 && ok || bad "scenario $s: $(cat "$tmp/h-$s.log")"
  alive "$s"
done
grep -q "other settings" "$tmp/h-wrong-check.log" && grep -q "classes=" "$tmp/h-wrong-check.log" && ok \
  || bad "a misconfigured client is not told what differs: $(cat "$tmp/h-wrong-check.log")"

# the honest client, last: the server rolled back every session that failed
"$pz" train "${model[@]}" "${data[@]}" --link zmq --connect "$ep" --out "$tmp/b" > "$tmp/b.log" 2>&1 \
  && ok || bad "honest client: $(tail -3 "$tmp/b.log")"
wait "$srv" && ok || bad "server exit: $(tail -5 "$tmp/serve.log")"
python3 - "$tmp" <<'PY' && ok || bad "the honest client's run differs from the in-process one"
import json, sys
t = sys.argv[1]
a, b = ([json.loads(l) for l in open(f"{t}/{d}/epochs.jsonl")] for d in "ab")
assert len(a) == len(b) == 2
for x, y in zip(a, b):
    for k in ("train_loss", "test_accuracy", "test_accuracy_compressed", "fwd_bytes", "bwd_bytes"):
        assert x[k] == y[k], (x["epoch"], k, x[k], y[k])
PY
# what the server said: one line per peer, escaped, naming it
n=$(grep -c "ignored from now on" "$tmp/serve.log")
[ "$n" -ge 4 ] && ok || bad "expected the ignored peers logged, got $n lines: $(cat "$tmp/serve.log")"
[ "$(grep -c "session ended" "$tmp/serve.log")" -ge 3 ] && ok || bad "dropped sessions not logged: $(cat "$tmp/serve.log")"
grep -q "go back to" "$tmp/serve.log" && ok || bad "no rollback logged"
LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$tmp/serve.log" && bad "control characters in the server's log" || ok
grep -q "peer [0-9a-f-]* at " "$tmp/serve.log" && ok || bad "log lines do not name the peer: $(head -5 "$tmp/serve.log")"
# nothing a client sent chose where the server wrote
[ ! -e "$tmp/escaped" ] && [ -z "$(find "$tmp/srv" -mindepth 1 -maxdepth 1 ! -name 'epoch-*')" ] && ok \
  || bad "files outside the checkpoint directory: $(ls -R "$tmp" | head -20)"
finish test_hostile
