#!/bin/bash
# SPDX-License-Identifier: MIT
# test_sweep.sh PIPEZIP CONFIG_DIR — the quick variant of every committed
# experiment configuration runs, and its report is checked: the tables have
# the rows and columns the configuration names, the numbers parse, the
# plots are valid SVG; results.csv has one finished row per point. Also:
# an interrupted sweep resumes and skips finished points; config errors
# name the file and line.
. "$(dirname "$0")/lib.sh" sweep
pz="$1"; configs="$2"
for cfg in "$configs"/*.ini; do
  name=$(basename "$cfg" .ini)
  out="$tmp/$name"
  if ! "$pz" sweep "$cfg" --variant quick --out "$out" --jobs 2 --threads 1 --quiet > "$tmp/$name.log" 2>&1; then
    bad "$name: sweep failed: $(tail -3 "$tmp/$name.log"; tail -3 "$out"/runs/*.log 2>/dev/null)"; continue
  fi
  python3 - "$cfg" "$out" <<'PY' && ok || bad "$name: report check failed"
import configparser, csv, re, sys, glob, xml.etree.ElementTree as ET
cfg, out = sys.argv[1], sys.argv[2]
ini = configparser.ConfigParser(interpolation=None, delimiters=("=",), comment_prefixes=("#", ";"))
ini.optionxform = str
ini.read(cfg)
grid = dict(ini["grid"]); grid.update(ini["quick.grid"] if ini.has_section("quick.grid") else {})
npoints = 1
for v in grid.values(): npoints *= len(v.split("|"))
rows = list(csv.DictReader(open(f"{out}/results.csv")))
assert len(rows) == npoints, (len(rows), npoints)
for r in rows:
    assert r["status"] == "finished", r["id"]
    for k in ("final_test_accuracy", "final_test_accuracy_compressed", "fwd_bytes", "bwd_bytes", "wall_seconds", "emulated_seconds"):
        float(r[k])
    assert 0 <= float(r["final_test_accuracy"]) <= 1
    # bits per element and ratios from the runs' exact byte and element
    # counts (not rebuilt from rounded bits per element)
    import json
    recs = [json.loads(l) for l in open(f"{out}/runs/{r['id']}/boundaries.jsonl")]
    for d in ("fwd", "bwd"):
        nb, ne = sum(x[d + "_bytes"] for x in recs), sum(x[d + "_elements"] for x in recs)
        assert float(r[d + "_bits_per_element"]) == float("%g" % (8 * nb / ne)), (r["id"], d, r[d + "_bits_per_element"], 8 * nb / ne)
        assert float(r[d + "_ratio"]) == float("%g" % (4 * ne / nb)), (r["id"], d, r[d + "_ratio"], 4 * ne / nb)
# a language model's sweep reports validation loss and bits per byte
lm = all(r["final_test_bits_per_byte"] != "" for r in rows)
if lm:
    for r in rows:
        assert 0 < float(r["final_test_loss"]) < 10 and 0 < float(r["final_test_bits_per_byte_compressed"]) < 16, r["id"]
        # the WAN score's T: the steady step (the median emulated time per step of the last three
        # windows between evaluations) x the steps to target
        import os
        src = f"{out}/runs/{r['id']}/evals.jsonl"
        src = src if os.path.exists(src) else f"{out}/runs/{r['id']}/epochs.jsonl"
        recs = [json.loads(l) for l in open(src)]
        ev = {int(x["step"]): float(x["emulated_time"]) for x in recs if "step" in x and x.get("emulated_time") is not None}
        st = sorted(ev)
        if len(st) < 2 or len(recs) < 2:
            assert r["steady_step_seconds"] == "" or len(recs) > 1, (r["id"], r["steady_step_seconds"])
        else:
            w = sorted((ev[b] - ev[a]) / (b - a) for a, b in list(zip(st, st[1:]))[-3:])
            want = w[len(w) // 2] if len(w) != 2 else (w[0] + w[1]) / 2
            assert abs(float(r["steady_step_seconds"]) / want - 1) < 1e-5, (r["id"], r["steady_step_seconds"], want)
            if r["steps_to_target"]:
                assert abs(float(r["score_seconds"]) / (float(r["steps_to_target"]) * want) - 1) < 1e-5, r["id"]
report = open(f"{out}/report.md").read()
def table(title):
    m = re.search(re.escape(title) + r".*?\n\n(\|.*?)\n\n", report + "\n\n", re.S)
    assert m, title
    return [[c.strip() for c in line.strip("|").split("|")] for line in m.group(1).splitlines()]
sw = ini["sweep"]
def value(r, key):  # "fwd+bwd": the two columns joined
    return " + ".join(r[k] for k in key.split("+")) if key not in r else r[key]
vals = lambda key: list(dict.fromkeys(value(r, key) for r in rows))
if "rows" in sw:
    t = table("Final validation loss, nats per token, plain inference" if lm else "Final test accuracy, %, plain inference")
    head, body = t[0], t[2:]
    assert [b[0] for b in body] == vals(sw["rows"]), ([b[0] for b in body], vals(sw["rows"]))
    if "cols" in sw: assert head[1:] == vals(sw["cols"]), (head, vals(sw["cols"]))
    for b in body:
        for c in b[1:]:
            c == "—" or float(c.split(" ")[0])  # —: no run in that cell
t = table("**All runs**")
assert len(t) - 2 == npoints
for b in t[2:]:
    float(b[2]); float(b[3])
# CSV as Python reads it: every row as many fields as the header (specs
# with commas are quoted), every point once
for r in rows: assert None not in r and None not in r.values(), r
epochs = list(csv.DictReader(open(f"{out}/epochs.csv")))
assert epochs and all(None not in e and None not in e.values() for e in epochs)
assert {e["id"] for e in epochs} == {r["id"] for r in rows}, "epochs.csv lacks runs"
for r in rows:
    mine = [e for e in epochs if e["id"] == r["id"]]
    assert [int(e["epoch"]) for e in mine] == list(range(1, int(r["epochs_done"]) + 1)), r["id"]
    key = "test_loss" if lm else "test_accuracy"
    assert abs(float(mine[-1][key]) - float(r["final_" + key])) <= 1e-5 * abs(float(r["final_" + key])), r["id"]
# the figures: each listed in the report exists and parses, none is left out
svg = "{http://www.w3.org/2000/svg}"
listed = re.findall(r"!\[[^]]*\]\(plots/([a-z_]+\.svg)\)", report)
assert sorted(listed) == sorted(p.split("/")[-1] for p in glob.glob(f"{out}/plots/*.svg")), listed
for name in ["accuracy_per_epoch.svg", "accuracy_vs_time.svg"] + (["heatmap.svg"] if "rows" in sw else []):
    assert name in listed, name
for name in listed:
    root = ET.parse(f"{out}/plots/{name}").getroot()
    assert root.tag.endswith("svg"), name
# every run drawn: a plain and a compressed curve each
lines = [l for l in ET.parse(f"{out}/plots/accuracy_per_epoch.svg").getroot().iter(svg + "polyline")]
assert len(lines) == 2 * npoints, (len(lines), npoints)
if "rows" in sw:
    cells = [t for t in ET.parse(f"{out}/plots/heatmap.svg").getroot().iter(svg + "text")]
    assert any(re.fullmatch(r"[0-9.]+", t.text or "") for t in cells), "no values in the heatmap's cells"
PY
done
# resuming: a finished sweep skips everything; a missing run is redone
first=$(ls "$tmp/a2_topk/runs" | grep -v log | head -1)
rm -rf "$tmp/a2_topk/runs/$first"
"$pz" sweep "$configs/a2_topk.ini" --variant quick --out "$tmp/a2_topk" --jobs 1 --threads 1 > "$tmp/again.log" 2>&1 \
  && grep -q "1 run, 1 already done" "$tmp/again.log" && ok || bad "resume: $(cat "$tmp/again.log")"
# configuration errors name the file and line
printf '[sweep]\nname = x\n[base]\nepoch = 3\n' > "$tmp/bad.ini"
expect 2 "bad.ini:4: 'epoch' is not a pipezip train option" -- "$pz" sweep "$tmp/bad.ini" --out "$tmp/bad"
printf '[sweep]\ncolour = red\n' > "$tmp/bad2.ini"
expect 2 "bad2.ini:2: unknown key 'colour'" -- "$pz" sweep "$tmp/bad2.ini" --out "$tmp/bad2"
printf '[sweeps]\nname = x\n' > "$tmp/bad3.ini"
expect 2 "unknown section \[sweeps\]" -- "$pz" sweep "$tmp/bad3.ini" --out "$tmp/bad3"
printf '[grid]\nfwd+bwd = q4 + q8 | q2\n' > "$tmp/bad4.ini"
expect 2 "as many values" -- "$pz" sweep "$tmp/bad4.ini" --out "$tmp/bad4"
printf '[sweep]\ntarget-inference = sideways\n' > "$tmp/bad5.ini"
expect 2 "bad5.ini:2: target-inference = sideways \(expected plain or compressed\)" -- "$pz" sweep "$tmp/bad5.ini" --out "$tmp/bad5"
# rows and cols must name the grid's keys (the report lays its tables out by them)
printf '[sweep]\nname = x\nrows = fwdd  # a typo\n[grid]\nfwd+bwd = q4 + q8 | q2 + q8\nseed = 1 | 2\n' > "$tmp/bad7.ini"
expect 2 "bad7.ini:3: rows = fwdd names no key of \[grid\] \(fwd\+bwd, seed\)" -- "$pz" sweep "$tmp/bad7.ini" --out "$tmp/bad7"
printf '[sweep]\nname = x\nrows = bwd\ncols = seed+fwd\n[base]\nmodel = mlp\n[grid]\nfwd+bwd = q4 + q8 | q2 + q8\nseed = 1 | 2\n' > "$tmp/good7.ini"
expect 0 "p004" -- "$pz" sweep "$tmp/good7.ini" --out "$tmp/good7" --dry-run
# --dry-run prints commands a shell runs as printed: ef21(q2) quoted, every argument whole
line=$("$pz" sweep "$configs/a3_error_feedback.ini" --variant quick --dry-run --out "$tmp/dq" | grep -m1 'ef21')
words=$(bash -c "set -- ${line#*: }; printf '%s\n' \"\$@\"" 2>&1)
if grep -qx -- '--fwd=ef21(q2)' <<<"$words" && grep -qx -- '--bwd=ef21(q4)' <<<"$words" && [ "$(head -2 <<<"$words" | tr '\n' ' ')" = "pipezip train " ]
then ok; else bad "the dry run's command does not parse as its arguments: $line -> $words"; fi
expect 2 "--variant .huge. is not one of: quick.full.paper" -- "$pz" sweep "$configs/a2_topk.ini" --variant huge --out "$tmp/bad6"
expect 1 "not a sweep directory" -- "$pz" report "$tmp/nothing"
# pipezip report on a published sweep (results.csv, its config, no runs) destroys nothing:
# results.csv and epochs.csv stay byte for byte, so do the per-epoch plots
# of a sweep published without epochs.csv; report.md and the plots drawn
# from the table are drawn again
for pub in "$configs/../docs/results"/*/; do
  n=$(basename "$pub")
  cp -r "$pub" "$tmp/pub-$n"
  "$pz" report "$tmp/pub-$n" > "$tmp/pub-$n.log" 2>&1 || { bad "report on published $n: $(tail -2 "$tmp/pub-$n.log")"; continue; }
  cmp -s "$pub/results.csv" "$tmp/pub-$n/results.csv" && ok || bad "report rewrote $n/results.csv"
  if [ -f "$pub/epochs.csv" ]; then cmp -s "$pub/epochs.csv" "$tmp/pub-$n/epochs.csv" && ok || bad "report rewrote $n/epochs.csv"
  else for p in accuracy_per_epoch accuracy_vs_time; do
    [ ! -f "$pub/plots/$p.svg" ] || cmp -s "$pub/plots/$p.svg" "$tmp/pub-$n/plots/$p.svg" || bad "report changed $n/plots/$p.svg"; done
  fi
  for p in "$tmp/pub-$n"/plots/*.svg; do python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' "$p" || bad "$n: $p is not valid SVG"; done
  [ -s "$tmp/pub-$n/report.md" ] && ok || bad "no report for $n"
done
# the baseline rule (issue 52): each row against its seed's better uncompressed model, the ordinary GPT or
# the lifted model at full width (K = 128 in f15: 1.514 / 1.523 / 1.535), traffic against the ordinary model's bytes
grep -qF "| 16 + q8+zstd + q8+zstd | K = 128 at full width | +5.6% (+4.4% to +6.8%, n=3) | 38.4x |" "$tmp/pub-f15_frontier_gpt_tiny/report.md" && ok \
  || bad "f15's report does not hold K = 16 q8+zstd against the full-width model"
grep -qF "| 0 + none + none | K = 128 at full width | +7.6% (+7.1% to +8.4%, n=3) | 1.0x |" "$tmp/pub-f15_frontier_gpt_tiny/report.md" && ok \
  || bad "f15's report does not measure the ordinary GPT against the full-width model"
# gpt-small at 150 steps: the full-width control (K = 256) is the strongest in one seed of three, the ordinary GPT in two
grep -qF "| 48 + q8+zstd + q8+zstd | K = 256 at full width (1), ordinary (2) | +0.6% (+0.2% to +1.1%, n=3) | 25.7x |" \
  "$tmp/pub-f16_frontier_gpt_small/report.md" && ok || bad "f16 is not measured against each seed's strongest model"
! grep -q "Against the strongest" "$tmp/pub-f18_budget_gpt_tiny/report.md" && ok || bad "f18 has no uncompressed run to compare with"
# a language model's losses per epoch (experiment 8): the diverged EF run (up
# to 11 nats) does not flatten the other curves (the axis stops above the
# rest, its points drawn on the edge with their values), and each panel of
# one curve shows the uncompressed run too; accuracies are never clipped
a8="$tmp/pub-a8_gpt/plots/accuracy_per_epoch.svg"
grep -q "the axis stops at [0-9.]*: a triangle on its top edge is a point above it (up to 10.96)" "$a8" && ok || bad "a8's per-epoch loss axis is not clipped"
[ "$(grep -o '<polyline fill="none" stroke="#a8a8a8"' "$a8" | wc -l)" -eq 20 ] && ok || bad "a8's 20 panels do not each show the uncompressed run"
for n in a1_quantization s7_seed_spread; do
  ! grep -q "the axis stops at" "$tmp/pub-$n/plots/accuracy_per_epoch.svg" && ! grep -q '#a8a8a8' "$tmp/pub-$n/plots/accuracy_per_epoch.svg" && ok \
    || bad "$n's accuracy figure clipped or given a reference curve"
done
# a large grid: no run dropped from any figure, every series its own style
printf '[sweep]\nname = large\nrows = fwd\ncols = bwd\ntarget = uncompressed-0.005\n[base]\nmodel = mlp\ndata = synthetic\nepochs = 2\nlimit-train = 64\nlimit-test = 32\nstages = 2\n[grid]\nfwd = none | q8 | q6 | q4 | q2 | q3 | q5\nbwd = none | q8 | q6\nseed = 1 | 2 | 3\n' > "$tmp/large.ini"
if "$pz" sweep "$tmp/large.ini" --out "$tmp/large" --jobs 2 --threads 1 --quiet > "$tmp/large.log" 2>&1; then
  python3 - "$tmp/large" <<'PY' && ok || bad "large sweep's figures"
import re, sys, xml.etree.ElementTree as ET
out, svg = sys.argv[1], "{http://www.w3.org/2000/svg}"
root = ET.parse(f"{out}/plots/accuracy_per_epoch.svg").getroot()
lines = list(root.iter(svg + "polyline"))
assert len(lines) == 2 * 63, len(lines)                 # 63 runs, two curves each
texts = [t.text for t in root.iter(svg + "text")]
for b in ("none", "q8", "q6"): assert f"bwd = {b}" in texts, b   # a panel per column
styles = {}
for l in lines:
    if "stroke-dasharray" not in l.attrib: styles.setdefault(l.attrib["stroke"], 0)
assert len(styles) == 7, styles                          # 7 rows: 7 colours, seeds share theirs
legend = [t for t in texts if t and t.startswith("fwd = ")]
assert sorted(legend) == sorted(f"fwd = {v}" for v in "none q8 q6 q4 q2 q3 q5".split()), legend
heat = [t.text for t in ET.parse(f"{out}/plots/heatmap.svg").getroot().iter(svg + "text")]
assert sum(1 for t in heat if t and t.endswith("(n=3)")) == 2 * 21, heat   # 21 cells a panel, 3 seeds each
bits = ET.parse(f"{out}/plots/accuracy_vs_bits.svg").getroot()
titles = [t.text for t in bits.iter(svg + "text")]
assert any(t and t.startswith("activations (forward)") for t in titles) and any(t and t.startswith("gradients (backward)") for t in titles)
# the target: the uncompressed run of the same seed, minus half a point
import csv
rows = list(csv.DictReader(open(f"{out}/results.csv")))
base = {r["seed"]: float(r["final_test_accuracy"]) for r in rows if r["fwd"] == "none" and r["bwd"] == "none"}
assert len(base) == 3, base
for r in rows:
    assert abs(float(r["target_accuracy"]) - (base[r["seed"]] - 0.005)) < 1e-6, (r["id"], r["target_accuracy"], base)
PY
else bad "large sweep: $(tail -3 "$tmp/large.log")"; fi
# a sweep records the kernels its first run used and gives later runs the
# same (a sweep resumed on another machine does not mix kernels)
printf '[sweep]\nname = k\n[base]\nmodel = mlp\ndata = synthetic\nepochs = 1\nlimit-train = 64\nlimit-test = 32\nstages = 2\n[grid]\nseed = 1 | 2\n' > "$tmp/k.ini"
"$pz" sweep "$tmp/k.ini" --out "$tmp/k" --jobs 1 --threads 1 --quiet > "$tmp/k.log" 2>&1 || bad "kernels sweep: $(tail -3 "$tmp/k.log")"
# one epoch: every point of a per-epoch curve has the same x, and the axis
# still gets a width (no NaN coordinates)
for p in "$tmp/k"/plots/*.svg; do ! grep -qi "nan" "$p" && ok || bad "$p has NaN coordinates"; done
python3 - "$tmp/k" <<'PY' && ok || bad "kernels.json does not match the first run"
import json, sys
d = sys.argv[1]
k, c = json.load(open(f"{d}/kernels.json")), json.load(open(f"{d}/runs/p001_seed-1/config.json"))
for key in ("blas_core", "conv_kernels", "cpu", "blas", "git_commit", "version"): assert k[key] == c[key], key
k.update(blas_core="Prescott", conv_kernels="im2col")   # as if recorded on another machine
json.dump(k, open(f"{d}/kernels.json", "w"))
PY
rm -rf "$tmp/k/runs/p002_seed-2"
expect 0 "PZ_CONV_KERNELS=im2col \(from .*kernels.json" -- env -u PZ_CONV_KERNELS -u OPENBLAS_CORETYPE "$pz" sweep "$tmp/k.ini" --out "$tmp/k" --jobs 1 --threads 1
python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); assert (c["blas_core"], c["blas_core_chosen_by"], c["conv_kernels"]) == ("Prescott", "user", "im2col"), c' \
  "$tmp/k/runs/p002_seed-2/config.json" && ok || bad "the recorded kernels were not applied: $(grep -o '"blas_core[^,]*\|"conv_kernels[^,]*' "$tmp/k/runs/p002_seed-2/config.json")"
grep -q "1 of the 2 runs here used other kernels" "$tmp/k/report.md" && ok || bad "the report does not say the runs mixed kernels"
rm -rf "$tmp/k/runs/p002_seed-2"
expect 0 "PZ_CONV_KERNELS=avx2 is set, so the runs use it" -- env PZ_CONV_KERNELS=avx2 "$pz" sweep "$tmp/k.ini" --out "$tmp/k" --jobs 1 --threads 1
printf '[sweep]\nconv-kernels = fast\n' > "$tmp/bad8.ini"
expect 2 "bad8.ini:2: conv-kernels = fast \(expected im2col, avx2 or avx512\)" -- "$pz" sweep "$tmp/bad8.ini" --out "$tmp/bad8"
# configs as people write them: inline comments end a line
printf '[sweep]   # the sweep\nname = commented   # its name\nrows = fwd    # the tables\ncols = bwd ; columns\n[base]\nmodel = mlp  # small\ndata = synthetic\nepochs = 1\nlimit-train = 64\nlimit-test = 32\nstages = 2\n[grid]\nfwd = none | q8   # two\nbwd = none | q8\n' > "$tmp/comments.ini"
"$pz" sweep "$tmp/comments.ini" --out "$tmp/comments" > "$tmp/comments.log" 2>&1 && ok || bad "a config with inline comments: $(tail -3 "$tmp/comments.log")"
grep -q "^# commented (" "$tmp/comments/report.md" && grep -q 'rows: `fwd`, columns: `bwd`' "$tmp/comments/report.md" && ok || bad "inline comments leaked into the report: $(head -20 "$tmp/comments/report.md")"
finish test_sweep
