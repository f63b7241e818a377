#!/bin/bash
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
# a language model's sweep reports validation loss and bits per byte
lm = all(r["final_test_bits_per_byte"] != "" for r in rows)
if lm:
    for r in rows:
        assert 0 < float(r["final_test_loss"]) < 10 and 0 < float(r["final_test_bits_per_byte_compressed"]) < 16, r["id"]
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
            float(c.split(" ")[0])
t = table("**All runs**")
assert len(t) - 2 == npoints
for b in t[2:]:
    float(b[2]); float(b[3])
svgs = glob.glob(f"{out}/plots/*.svg")
assert len(svgs) == 4, svgs
for s in svgs:
    root = ET.parse(s).getroot()
    assert root.tag.endswith("svg") and len(list(root.iter("{http://www.w3.org/2000/svg}circle"))) > 0, s
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
expect 2 "--variant .huge. is not one of: quick.full.paper" -- "$pz" sweep "$configs/a2_topk.ini" --variant huge --out "$tmp/bad6"
expect 1 "not a sweep directory" -- "$pz" report "$tmp/nothing"
# pipezip report on a published sweep (results.csv, its config, no runs) destroys nothing:
# results.csv and every plot stay byte for byte, report.md is drawn again from the table
for pub in "$configs/../docs/results"/*/; do
  n=$(basename "$pub")
  cp -r "$pub" "$tmp/pub-$n"
  "$pz" report "$tmp/pub-$n" > "$tmp/pub-$n.log" 2>&1 || { bad "report on published $n: $(tail -2 "$tmp/pub-$n.log")"; continue; }
  cmp -s "$pub/results.csv" "$tmp/pub-$n/results.csv" && ok || bad "report rewrote $n/results.csv"
  for p in "$pub"/plots/*; do cmp -s "$p" "$tmp/pub-$n/plots/$(basename "$p")" || bad "report changed $n/plots/$(basename "$p")"; done
  [ -s "$tmp/pub-$n/report.md" ] && ok || bad "no report for $n"
done
# configs as people write them: inline comments end a line
printf '[sweep]   # the sweep\nname = commented   # its name\nrows = fwd    # the tables\ncols = bwd ; columns\n[base]\nmodel = mlp  # small\ndata = synthetic\nepochs = 1\nlimit-train = 64\nlimit-test = 32\nstages = 2\n[grid]\nfwd = none | q8   # two\nbwd = none | q8\n' > "$tmp/comments.ini"
"$pz" sweep "$tmp/comments.ini" --out "$tmp/comments" > "$tmp/comments.log" 2>&1 && ok || bad "a config with inline comments: $(tail -3 "$tmp/comments.log")"
grep -q "^# commented (" "$tmp/comments/report.md" && grep -q 'rows: `fwd`, columns: `bwd`' "$tmp/comments/report.md" && ok || bad "inline comments leaked into the report: $(head -20 "$tmp/comments/report.md")"
finish test_sweep
