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
# a run of --steps N is drawn against the step, its evaluation at its last step
"$pz" train --model mlp --data synthetic --steps 6 --batch 16 --limit-train 512 --limit-test 32 --progress none --log-every 1 \
  --out "$tmp/steprun" > /dev/null 2>&1
"$py" - "$plot" "$tmp/steprun" "$tmp/stepfig" <<'PY' && ok || bad "a --steps run's figure is not drawn against the step"
import importlib.util, os, sys
spec = importlib.util.spec_from_file_location("plot", sys.argv[1]); plot = importlib.util.module_from_spec(spec); spec.loader.exec_module(plot)
figs = []
real = plot.savefig
plot.savefig = lambda fig, out, name, formats: (figs.append([(a.get_xlabel(), [list(l.get_xdata()) for l in a.lines]) for a in fig.axes]), real(fig, out, name, formats))[1]
os.makedirs(sys.argv[3], exist_ok=True)
plot.plot_run(sys.argv[2], sys.argv[3], ["png"], "column")
(l0, lines0), (l1, lines1) = figs[0][0], figs[0][1]
assert l0 == "step" and l1 == "step", (l0, l1)
assert lines0[0] == [1, 2, 3, 4, 5, 6], lines0  # every logged step at its number
assert lines0[1] == [6] and lines1[0] == [6], (lines0, lines1)  # the evaluation at the run's last step
PY
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
# a subspace sweep's frontier is the loss gap to each seed's strongest uncompressed model, named on the figure:
# in f15 the lifted model at full width (subspace 128); the ordinary GPT is a point 7.6% above it
"$py" "$plot" --frontier "$src/docs/results/f15_frontier_gpt_tiny" --out "$tmp/gap" --format svg > /dev/null 2>&1
grep -q "baseline: the same lifted model at full width (subspace 128)" "$tmp/gap/frontier.svg" && grep -q "loss above the baseline, %" "$tmp/gap/frontier.svg" \
  && grep -q "ordinary model, none / none" "$tmp/gap/frontier.svg" && ok || bad "f15's frontier does not name its baseline"
"$py" - "$src/scripts" "$src/docs/results/f15_frontier_gpt_tiny/results.csv" <<'PY' && ok || bad "plot.py's strongest baseline is not f15's K = 128 runs"
import csv, sys
sys.path.insert(0, sys.argv[1]); import plot
best = plot.strongest(list(csv.DictReader(open(sys.argv[2]))))
assert {s: (round(q, 3), k) for s, (q, k) in best.items()} == {"1": (1.514, 128), "2": (1.523, 128), "3": (1.535, 128)}, best
assert plot.model_width("gpt:layers=8,d=96,heads=4") == 96 and plot.model_width("gpt-small") == 256 and plot.model_width("resnet8") == 0
PY
expect 2 "no such directory" -- "$py" "$plot" "$tmp/nothing"
expect 2 "neither a sweep directory" -- "$py" "$plot" "$tmp"
cp -r "$tmp/s" "$tmp/broken" && sed -i '2s/,finished,/,finished,extra,/' "$tmp/broken/results.csv"
expect 2 "more or fewer fields than the header" -- "$py" "$plot" "$tmp/broken"
expect 2 "--format tiff" -- "$py" "$plot" "$tmp/s" --format tiff
expect 2 "invalid choice" -- "$py" "$plot" "$tmp/s" --width poster
finish test_plot
