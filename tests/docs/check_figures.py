#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_figures.py SVG|DIR... — the defects a reader meets in a published
figure, caught in the SVG that `pipezip report` writes: a data axis with
fewer than 3 labelled ticks (a whole-number epoch axis aside), an axis title
wider than its panel's cell (it runs into the next panel or off the page),
and a reference curve (the uncompressed run) squeezed into less than a
fifth of its panel's height (the few-percent differences the text compares
are invisible). Exits 1 naming each."""
import re
import sys
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"
ML, MR = 62, 16  # the writer's margins beside a panel (src/tool/svg.c)


def width(text, px=11.0):
    return len(text) * px * 0.58


def check(path):
    out = []
    root = ET.parse(path).getroot()
    W = float(root.get("width"))
    frames = [tuple(float(r.get(k)) for k in ("x", "y", "width", "height")) for r in root.iter(NS + "rect")
              if r.get("fill") == "none" and r.get("stroke") == "#333"]
    texts = [(t, "".join(t.itertext())) for t in root.iter(NS + "text")]
    for x, y, w, h in frames:
        xt = [s for t, s in texts if t.get("text-anchor") == "middle" and t.get("y") and abs(float(t.get("y")) - (y + h + 14)) < 0.5
              and x - 1 <= float(t.get("x")) <= x + w + 1]
        yt = [s for t, s in texts if t.get("text-anchor") == "end" and t.get("x") and abs(float(t.get("x")) - (x - 5)) < 0.5
              and y - 1 <= float(t.get("y")) - 4 <= y + h + 1]
        if len(xt) < 3 and not all(re.fullmatch(r"-?\d+", s) for s in xt):
            out.append(f"panel at ({x:g}, {y:g}): {len(xt)} x tick label(s) {xt}")
        if len(yt) < 3:
            out.append(f"panel at ({x:g}, {y:g}): {len(yt)} y tick label(s) {yt}")
        for t, s in texts:  # the x axis title's lines under this panel
            if t.get("y") and y + h + 20 < float(t.get("y")) <= y + h + 50 and t.get("text-anchor") == "middle" \
                    and abs(float(t.get("x")) - (x + w / 2)) < 1:
                half = width(s, float(t.get("font-size", 11))) / 2
                cx = float(t.get("x"))
                if cx - half < x - ML or cx + half > min(x + w + MR, W):
                    out.append(f"panel at ({x:g}, {y:g}): axis title '{s}' ({2 * half:.0f} px) is wider than its panel's cell")
        refs = [p for p in root.iter(NS + "polyline") if p.get("stroke") == "#a8a8a8"]
        for p in refs:
            pts = [tuple(map(float, q.split(","))) for q in p.get("points").split()]
            ys = [b for a, b in pts if x <= a <= x + w]
            if len(ys) >= 2 and y <= min(ys) and max(ys) <= y + h and (max(ys) - min(ys)) < 0.2 * h:
                out.append(f"panel at ({x:g}, {y:g}): the reference curve spans {max(ys) - min(ys):.0f} of {h:g} px "
                           f"(the axis range hides the differences to it)")
    return out


import glob
import os

paths = []
for a in sys.argv[1:]:  # a directory: every sweep's figures under it (docs/results)
    paths += sorted(glob.glob(os.path.join(a, "*", "plots", "*.svg"))) if os.path.isdir(a) else [a]
bad = 0
for path in paths:
    for d in check(path):
        print(f"check_figures: {path}: {d}")
        bad += 1
print(f"check_figures: {len(paths)} figures, {bad} defects")
sys.exit(1 if bad or not paths else 0)
