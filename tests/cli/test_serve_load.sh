#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_serve_load.sh PIPEZIP [OUT_CSV] — load on a split-learning server:
# 16 clients take turns of 5 steps for 2,000 steps in all (125 each, an mlp
# on synthetic data), while a 17th client is SIGKILLed in the middle of its
# turn (PZ_TEST_KILL_AT_STEP=3: a state) and replaced, 20 times: one killed
# about every 85 steps. The server drops each dead session (its --timeout),
# rolls it back and goes on; every live client trains all its steps; the
# server ends when all 36 have finished or dropped out. Its resident memory
# is sampled each time a session ends (the curve goes to OUT_CSV and a
# summary is printed) and must stay flat: the largest sample of the last
# half within 10% (and 4 MB) of the largest of the first quarter.
# Every wait is for a state (a line in a log, a process's end).
. "$(dirname "$0")/lib.sh" serve_load
pz="$1"
csv="${2:-$tmp/rss.csv}"
port=$((20000 + RANDOM % 20000))
ep="tcp://127.0.0.1:$port"
common=(--model mlp --cuts relu1 --data synthetic --batch 32 --fwd q8 --bwd q8 --lr 0.05 --threads 1 --seed 3)
clients=(--limit-train 10240 --limit-test 64 --steps 125 --log-every 1 --turn 5 --progress none --link zmq --connect "$ep" --timeout 120)
victims=20
# freed memory is reused at once under ASan (its quarantine would grow the RSS by design)
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=1"
"$pz" serve "${common[@]}" --bind "$ep" --clients $((16 + victims)) --wait-for 16 --timeout 5 --checkpoint-dir "$tmp/srv" \
  > "$tmp/serve.log" 2>&1 &
srv=$!
while ! grep -qs "on tcp" "$tmp/serve.log"; do kill -0 "$srv" 2>/dev/null || { bad "the server did not start: $(cat "$tmp/serve.log")"; finish test_serve_load; exit 1; }; sleep 0.1; done
pids=()
for k in $(seq 1 16); do
  "$pz" train "${common[@]}" "${clients[@]}" --shard "$k/16" --out "$tmp/c$k" > "$tmp/c$k.log" 2>&1 &
  pids+=($!)
done
victim() { (PZ_TEST_KILL_AT_STEP=3 "$pz" train "${common[@]}" "${clients[@]}" --shard "1/16" --no-out > "$tmp/v$1.log" 2>&1 &) }
started=1
victim 1
echo "sessions_ended,dropped,rss_kb" > "$csv"
seen=-1
while kill -0 "$srv" 2>/dev/null; do
  ended=$(grep -c "ended its\|session [0-9]* failed" "$tmp/serve.log" || true)
  dropped=$(grep -c "dropped out" "$tmp/serve.log" || true)
  if [ "$ended" != "$seen" ]; then
    rss=$(awk '/^VmRSS/ {print $2}' "/proc/$srv/status" 2>/dev/null || true)
    [ -n "$rss" ] && echo "$ended,$dropped,$rss" >> "$csv"
    seen=$ended
  fi
  # the last victim is gone: the next joins the queue
  if [ "$dropped" -ge "$started" ] && [ "$started" -lt "$victims" ]; then started=$((started + 1)); victim "$started"; fi
  sleep 0.1
done
wait "$srv" && ok || bad "server exit: $(tail -5 "$tmp/serve.log")"
for k in $(seq 1 16); do
  wait "${pids[$((k - 1))]}" && ok || bad "client $k: $(tail -3 "$tmp/c$k.log")"
done
wait
python3 - "$tmp" "$csv" "$victims" <<'PY' && ok || bad "the load's records"
import csv, json, sys
t, path, victims = sys.argv[1], sys.argv[2], int(sys.argv[3])
steps = 0
for k in range(1, 17):
    rows = [json.loads(l) for l in open(f"{t}/c{k}/steps.jsonl")]
    s = json.load(open(f"{t}/c{k}/summary.json"))
    assert s["status"] == "finished" and s["steps"] == 125 and [r["step"] for r in rows] == list(range(1, 126)), (k, len(rows))
    assert all(r["loss"] == r["loss"] for r in rows) and s["fwd_bytes"] > 0, k
    steps += len(rows)
log = open(f"{t}/serve.log").read()
fin, drop = log.count(" finished ("), log.count(" dropped out (")
assert (fin, drop) == (16, victims), f"{fin} clients finished, {drop} dropped out"
rss = [(int(r["sessions_ended"]), int(r["rss_kb"])) for r in csv.DictReader(open(path))]
n = len(rss)
assert n >= 100, f"{n} samples"
q1, half = max(v for _, v in rss[: n // 4]), max(v for _, v in rss[n // 2:])
pts = [rss[int(i * (n - 1) / 8)] for i in range(9)]
print(f"serve under load: {steps} client steps, {fin} clients finished, {drop} killed and dropped, {n} RSS samples; "
      "RSS (MB) by sessions ended: " + ", ".join(f"{s}: {v / 1024:.1f}" for s, v in pts))
print(f"largest RSS: first quarter {q1 / 1024:.1f} MB, last half {half / 1024:.1f} MB")
assert half <= q1 * 1.10 + 4096, "the server's memory grows"
PY
finish test_serve_load
