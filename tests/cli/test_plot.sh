#!/bin/bash
# SPDX-License-Identifier: MIT
# test_plot.sh PIPEZIP SOURCE_DIR — scripts/plot.py (matplotlib) draws every
# figure of a sweep, of a published sweep without its runs, and of one run,
# as PDF and PNG; and names bad input instead of drawing something wrong.
. "$(dirname "$0")/lib.sh" plot
pz="$1"; src="$2"; py=/usr/bin/python3; plot="$src/scripts/plot.py"
printf '[sweep]\nname = plotted\nrows = fwd\ncols = bwd\n[base]\nmodel = mlp\ndata = synthetic\nepochs = 2\nlimit-train = 64\nlimit-test = 32\nstages = 2\n[grid]\nfwd = none | q4 | topk:0.5,per=tensor\nbwd = none | q8\nseed = 1 | 2\n' > "$tmp/s.ini"
"$pz" sweep "$tmp/s.ini" --out "$tmp/s" --jobs 2 --threads 1 --quiet > "$tmp/s.log" 2>&1 || bad "sweep: $(tail -3 "$tmp/s.log")"
check() {  # DIR NAME...: each NAME.pdf and NAME.png is a real, non-trivial figure
  local d="$1"; shift
  "$py" - "$d" "$@" <<'PY' && ok || bad "figures in $1"
import struct, sys
d, names = sys.argv[1], sys.argv[2:]
for n in names:
    pdf = open(f"{d}/{n}.pdf", "rb").read()
    assert pdf.startswith(b"%PDF") and len(pdf) > 5000, n
    png = open(f"{d}/{n}.png", "rb").read()
    assert png[:8] == b"\x89PNG\r\n\x1a\n", n
    w, h = struct.unpack(">II", png[16:24])
    assert 500 < w < 6000 and 300 < h < 6000, (n, w, h)
PY
}
expect 0 "heatmap.pdf" -- "$py" "$plot" "$tmp/s" --out "$tmp/fig"
check "$tmp/fig" heatmap per_epoch vs_time vs_bits error
# a published sweep: results.csv and sweep.ini, no runs (no per-epoch data: said, not faked)
cp -r "$src/docs/results/a1_quantization" "$tmp/pub"
rm -f "$tmp/pub/epochs.csv"
expect 0 "no per-epoch records" -- "$py" "$plot" "$tmp/pub" --out "$tmp/pubfig"
check "$tmp/pubfig" heatmap vs_bits error
[ ! -e "$tmp/pubfig/per_epoch.pdf" ] && ok || bad "per-epoch figure drawn without per-epoch data"
# one run's records
run=$(ls -d "$tmp/s/runs"/p001*/ | head -1)
expect 0 "run.png" -- "$py" "$plot" "$run" --out "$tmp/runfig" --format png,pdf
check "$tmp/runfig" run
# the loss axis stops above a few far-off points (a diverged run), never
# for evenly spread ones; the reference run shares every setting but the codecs
"$py" - "$plot" <<'PY' && ok || bad "plot.py clip_level / reference_run"
import importlib.util, sys
spec = importlib.util.spec_from_file_location("plot", sys.argv[1]); plot = importlib.util.module_from_spec(spec); spec.loader.exec_module(plot)
cap = plot.clip_level([2.0 + 0.01 * i for i in range(100)] + [11.0])
assert cap is not None and 2.95 < cap < 3.2, cap
assert plot.clip_level([2.0 + 0.09 * i for i in range(101)]) is None
assert plot.clip_level([2.0, 11.0]) is None  # too few points to call any an outlier
# with a reference curve the axis stops above it by its own range: few-percent differences stay visible
cap = plot.clip_level([2.1, 2.2, 2.5, 3.1, 6.0], reference=[2.12, 2.43])
assert abs(cap - 2.74) < 1e-9, cap
assert plot.clip_level([2.1, 2.2], reference=[2.12, 2.43]) is None  # everything below the cap: not clipped
rows = [dict(id=i, status="finished", model="gpt-tiny", fwd=f, bwd=b, seed=s, epochs_done="4")
        for i, (f, b, s) in enumerate([("none", "none", "1"), ("none", "none", "2"), ("q4", "q8", "2"), ("q4", "none", "3")])]
class S: pass
sw = S(); sw.rows = rows
assert plot.reference_run(sw, rows[2])["id"] == 1 and plot.reference_run(sw, rows[3]) is None
PY
# bad input is named
expect 0 "frontier.png" -- "$py" "$plot" --frontier "$tmp/s" --out "$tmp/front" --format png
expect 2 "no such directory" -- "$py" "$plot" "$tmp/nothing"
expect 2 "neither a sweep directory" -- "$py" "$plot" "$tmp"
cp -r "$tmp/s" "$tmp/broken" && sed -i '2s/,finished,/,finished,extra,/' "$tmp/broken/results.csv"
expect 2 "more or fewer fields than the header" -- "$py" "$plot" "$tmp/broken"
expect 2 "--format tiff" -- "$py" "$plot" "$tmp/s" --format tiff
expect 2 "invalid choice" -- "$py" "$plot" "$tmp/s" --width poster
finish test_plot
