#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""plot.py — paper-quality figures (PDF and PNG) from pipezip's data files.

    python3 scripts/plot.py SWEEP_DIR [SWEEP_DIR ...]   # a sweep's results.csv, epochs.csv
    python3 scripts/plot.py RUN_DIR                      # one run's epochs/steps/boundaries.jsonl
    options: --out DIR (default: DIR/figures), --format pdf,png, --width column|page, --dpi N

For a sweep (a directory with results.csv and sweep.ini, as `pipezip sweep`
writes it; published ones under docs/results/ work the same):
  heatmap       final accuracy (or a language model's validation loss) over
                the config's rows x cols, plain and compressed inference side
                by side, the value (mean, range and count over seeds) in each cell
  per_epoch     test accuracy per epoch as small multiples: a panel per
                column value, a curve style per row value (seeds share theirs)
  vs_time       the same against training time (emulated link, virtual clock)
  vs_bits       final accuracy against each direction's bits per element, a
                panel per direction, a curve per codec of the other direction
  error         relative compression error against bits per element, per direction
For a run (a directory with epochs.jsonl): loss per logged step, accuracy per
epoch, bytes per boundary.

Every run in the data is drawn; nothing is dropped to make a legend fit.
Needs matplotlib (Debian: python3-matplotlib); uses only its Agg backend.
"""
import argparse
import configparser
import csv
import json
import math
import os
import re
import sys
from collections import OrderedDict


def fail(msg):
    print(f"plot.py: {msg}", file=sys.stderr)
    sys.exit(2)


try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import colors as mcolors
    from matplotlib import ticker
except ImportError:
    fail("needs matplotlib: apt-get install python3-matplotlib (scripts/setup.sh installs it)")

# A paper's column is about 3.4 in wide, a page 7 in; text at 8 pt.
WIDTHS = {"column": 3.4, "page": 7.0}
COLOURS = ["#4e79a7", "#e15759", "#59a14f", "#f28e2b", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#ff9da7", "#555555"]
MARKERS = ["o", "s", "^", "D"]


def style(i):
    """40 distinct (colour, marker) pairs, then dash patterns too"""
    return dict(color=COLOURS[i % 10], marker=MARKERS[(i // 10) % 4])


def num(s):
    try:
        v = float(s)
    except (TypeError, ValueError):
        return math.nan
    return v


def read_csv(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        if None in r or None in r.values():
            fail(f"{path}: a row with more or fewer fields than the header ({r.get('id', '?')})")
    return rows


def read_ini(path):
    ini = configparser.ConfigParser(interpolation=None, delimiters=("=",), comment_prefixes=("#", ";"),
                                    inline_comment_prefixes=("#", ";"), strict=False)
    ini.optionxform = str
    ini.read(path)
    return ini


def value(row, key):
    """a rows/cols key's value: a column, or two joined by + ("q4 + q8")"""
    if key in row:
        return row[key]
    if "+" in key:
        return " + ".join(row.get(k.strip(), "") for k in key.split("+"))
    return ""


def varying_keys(ini, variant):
    """the grid keys with more than one value, each half of a zipped pair"""
    keys = []
    sections = ["grid"] + ([f"{variant}.grid"] if ini.has_section(f"{variant}.grid") else [])
    grid = {}
    for s in sections:
        if ini.has_section(s):
            grid.update(ini[s])
    for k, v in grid.items():
        if "|" in v:
            for part in k.split("+"):
                if part.strip() not in keys:
                    keys.append(part.strip())
    return keys


def label(row, keys, skip=()):
    skipped = {p.strip() for s in skip if s for p in s.split("+")}
    return " ".join(f"{k}={row.get(k, '')}" for k in keys if k not in skipped)


DPI = [200]


def ticks_in_view(axis):
    lo, hi = sorted(axis.get_view_interval())
    eps = 1e-9 * abs(hi - lo)
    return [t for t in axis.get_majorticklocs() if lo - eps <= t <= hi + eps]


def readable_axis(axis):
    """at least 3 labelled ticks on a data axis: a log axis within about a
    decade (an octave for base 2) gets round, evenly spaced values; a wider
    one 1-2-5 steps; a linear one finer steps (the default locators label
    one or two points of a narrow range, or none)"""
    if len(ticks_in_view(axis)) >= 3:
        return
    lo, hi = sorted(axis.get_view_interval())
    if axis.get_scale() == "log":
        base = getattr(axis.get_transform(), "base", 10)
        if lo > 0 and hi / lo < (4 if base == 2 else 10):
            axis.set_major_locator(ticker.MaxNLocator(nbins=5, min_n_ticks=3))
        else:
            axis.set_major_locator(ticker.LogLocator(base=base, subs=((1.0, 2.0, 5.0) if hi / lo < 300 else (1.0, 3.0)) if base == 10 else (1.0, 1.5)))
        axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:.4g}"))
        axis.set_minor_locator(ticker.NullLocator())
    elif hi - lo >= 3 or any(t != int(t) for t in ticks_in_view(axis)):
        axis.set_major_locator(ticker.MaxNLocator(nbins=6, min_n_ticks=3))


def figure_defects(fig):
    """what makes a figure unreadable: a data axis with fewer than 3 ticks
    in view (unless it spans fewer than 3 whole epochs), an axis title or
    panel title running into another panel; [] when none"""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    out, axes = [], [a for a in fig.axes if a.axison]
    for a in axes:
        if a.images or not (a.lines or a.collections):
            continue  # heat maps: one tick per row or column is right
        for name, axis in (("x", a.xaxis), ("y", a.yaxis)):
            lo, hi = sorted(axis.get_view_interval())
            ticks = ticks_in_view(axis)
            whole = [t for t in ticks if t == int(t)]
            if len(ticks) < 3 and not (len(whole) == len(ticks) and hi - lo < 3.5):
                out.append(f"panel '{a.get_title()}': {len(ticks)} {name} tick(s) in view ({lo:.4g} to {hi:.4g})")
        for t in (a.title, a.xaxis.label, a.yaxis.label):
            if not t.get_text() or not t.get_visible():
                continue
            box = t.get_window_extent(r)
            for b in axes:
                if b is not a and box.overlaps(b.get_window_extent(r)):
                    out.append(f"'{t.get_text()}' of panel '{a.get_title()}' runs into panel '{b.get_title()}'")
    return out


def savefig(fig, out, name, formats):
    for a in fig.axes:
        if a.axison and not a.images and (a.lines or a.collections):
            readable_axis(a.xaxis), readable_axis(a.yaxis)
    defects = figure_defects(fig)
    if defects:
        fail(f"{name}: " + "; ".join(defects))
    paths = []
    for fmt in formats:
        p = os.path.join(out, f"{name}.{fmt}")
        fig.savefig(p, dpi=DPI[0], bbox_inches="tight")
        paths.append(p)
    plt.close(fig)
    return paths


def grid_shape(n):
    ncol = n if n <= 3 else 2 if n == 4 else 3 if n <= 9 else 4
    return ncol, (n + ncol - 1) // ncol


class Sweep:
    def __init__(self, d):
        self.dir = d
        res = os.path.join(d, "results.csv")
        if not os.path.exists(res):
            fail(f"{d} is not a sweep directory: it has no results.csv (run pipezip sweep first)")
        self.rows = read_csv(res)
        self.ini = read_ini(os.path.join(d, "sweep.ini"))
        variant = "full"
        if os.path.exists(os.path.join(d, "variant")):
            variant = open(os.path.join(d, "variant")).read().strip() or "full"
        sw = self.ini["sweep"] if self.ini.has_section("sweep") else {}
        self.name = sw.get("name", os.path.basename(os.path.normpath(d)))
        self.rk = sw.get("rows")
        self.ck = sw.get("cols")
        if self.rk and not any(value(r, self.rk) for r in self.rows):
            self.rk = None
        if self.ck and not any(value(r, self.ck) for r in self.rows):
            self.ck = None
        self.keys = varying_keys(self.ini, variant)
        self.lm = bool(self.rows) and all(r.get("final_test_bits_per_byte", "") != "" for r in self.rows)
        self.epochs = OrderedDict()
        ep = os.path.join(d, "epochs.csv")
        if os.path.exists(ep):
            for e in read_csv(ep):
                self.epochs.setdefault(e["id"], []).append(e)
        for r in self.rows:  # runs still here and not in epochs.csv (a sweep from before it)
            jl = os.path.join(d, "runs", r["id"], "epochs.jsonl")
            if r["id"] not in self.epochs and os.path.exists(jl):
                self.epochs[r["id"]] = [json.loads(line) for line in open(jl) if line.strip()]

    def metric(self, compressed):
        base = "final_test_loss" if self.lm else "final_test_accuracy"
        return base + ("_compressed" if compressed else "")

    @property
    def scale(self):
        return 1.0 if self.lm else 100.0

    @property
    def ylabel(self):
        return "validation loss (nats/token)" if self.lm else "test accuracy (%)"


def heatmap(sw, out, formats, width):
    rv = list(OrderedDict.fromkeys(value(r, sw.rk) for r in sw.rows))
    cv = list(OrderedDict.fromkeys(value(r, sw.ck) for r in sw.rows)) if sw.ck else [""]
    panels = [("plain inference", sw.metric(False))]
    if any(not math.isnan(num(r.get(sw.metric(True)))) for r in sw.rows):
        panels.append(("through the compressed boundaries", sw.metric(True)))
    cells = []
    for _, m in panels:
        grid = []
        for a in rv:
            line = []
            for b in cv:
                vals = [num(r[m]) * sw.scale for r in sw.rows if value(r, sw.rk) == a and (not sw.ck or value(r, sw.ck) == b)]
                vals = [v for v in vals if not math.isnan(v)]
                line.append(vals)
            grid.append(line)
        cells.append(grid)
    means = [v for g in cells for line in g for c in line if c for v in [sum(c) / len(c)]]
    if not means:
        return []
    best, worst = (min(means), max(means)) if sw.lm else (max(means), min(means))
    unit = 0.01 if sw.lm else 0.5  # the colour is log distance from the best, in these units

    def shade(v):
        span = math.log1p(abs(worst - best) / unit)
        return 1 - math.log1p(abs(v - best) / unit) / span if span > 0 else 1.0

    cmap = plt.get_cmap("viridis")
    multi = any(len(c) > 1 for g in cells for line in g for c in line)
    longest = max(len(s) for s in rv)
    cw = 0.62 if not multi else 0.78
    fig_w = min(max(width, 1.2 + 0.07 * longest + len(panels) * (len(cv) * cw + 0.3)), 2 * WIDTHS["page"])
    fig_h = 1.0 + 0.3 * len(rv) * (1.3 if multi else 1.0)
    fig, axes = plt.subplots(1, len(panels), figsize=(fig_w, fig_h), squeeze=False, sharey=True, layout="constrained")
    for k, (title, _) in enumerate(panels):
        ax = axes[0][k]
        img = [[shade(sum(c) / len(c)) if c else math.nan for c in line] for line in cells[k]]
        ax.imshow(img, cmap=cmap, vmin=0, vmax=1, aspect="auto")
        for i in range(len(rv)):
            for j in range(len(cv)):
                c = cells[k][i][j]
                if not c:
                    ax.text(j, i, "no run", ha="center", va="center", fontsize=6, color="#888")
                    continue
                m = sum(c) / len(c)
                rgb = mcolors.to_rgb(cmap(shade(m)))
                fg = "white" if 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2] < 0.55 else "black"
                d = 3 if sw.lm else 2
                txt = f"{m:.{d}f}"
                if len(c) > 1:
                    txt += f"\n{min(c):.{d - 1}f}–{max(c):.{d - 1}f} (n={len(c)})"
                ax.text(j, i, txt, ha="center", va="center", fontsize=7 if len(c) == 1 else 6, color=fg)
        ax.set_xticks(range(len(cv)))
        ax.set_xticklabels(cv, rotation=30 if max(len(s) for s in cv) > 7 else 0, ha="right" if max(len(s) for s in cv) > 7 else "center")
        ax.set_yticks(range(len(rv)))
        ax.set_yticklabels(rv)
        ax.set_title(title, fontsize=8)
        if sw.ck:
            ax.set_xlabel(sw.ck)
        if k == 0:
            ax.set_ylabel(sw.rk)
        ax.tick_params(length=0)
    fig.suptitle(("Final validation loss (nats/token)" if sw.lm else "Final test accuracy (%)") + " — " + sw.name, fontsize=8.5)
    return savefig(fig, out, "heatmap", formats)


def groups(sw):
    """(panel, series) names of each run, as `pipezip report` lays them out"""
    res = []
    n = len(sw.rows)
    for i, r in enumerate(sw.rows):
        if sw.ck:
            p = f"{sw.ck} = {value(r, sw.ck)}"
            s = f"{sw.rk} = {value(r, sw.rk)}" if sw.rk else label(r, sw.keys, (sw.ck,))
        elif sw.rk and n > 8:
            p, s = f"{sw.rk} = {value(r, sw.rk)}", label(r, sw.keys, (sw.rk,))
        elif sw.rk:
            p, s = "", label(r, sw.keys) or r["id"]
        else:
            p, s = f"runs {i // 8 * 8 + 1}-{min(i // 8 * 8 + 8, n)}", label(r, sw.keys) or r["id"]
        res.append((p, s))
    return res


def reference_run(sw, r):
    """the uncompressed run r is compared with: fwd and bwd both none, every
    other setting (results.csv's columns between status and epochs_done,
    the seed among them) the same; None when the sweep has none"""
    cols = list(r.keys())
    if "fwd" not in cols or "bwd" not in cols or "status" not in cols or "epochs_done" not in cols:
        return None
    settings = [c for c in cols[cols.index("status") + 1:cols.index("epochs_done")] if c not in ("fwd", "bwd")]
    for q in sw.rows:
        if q["fwd"] == "none" and q["bwd"] == "none" and all(q[c] == r[c] for c in settings):
            return q
    return None


def clip_level(values, reference=()):
    """where a loss axis stops (None: not clipped), as pipezip report draws
    it. With a reference curve (the uncompressed run): above its highest
    point by its own range (at least 5% of that point), so few-percent
    differences stay visible and runs far above go on the top edge. Without
    one, when a few points lie far above the rest (a diverged run): 15% of
    the 95th percentile's distance from the lowest value above that
    percentile, when the highest is more than twice that distance up."""
    v = sorted(x for x in values if not math.isnan(x))
    ref = [x for x in reference if not math.isnan(x)]
    if len(ref) >= 2 and v:
        cap = max(ref) + max(max(ref) - min(ref), 0.05 * abs(max(ref)))
        return cap if cap < max(v + ref) else None
    if len(v) < 20:
        return None
    p95 = v[math.ceil(0.95 * len(v)) - 1]
    if p95 > v[0] and v[-1] - v[0] > 2 * (p95 - v[0]):
        return p95 + 0.15 * (p95 - v[0])
    return None


def curves(sw, out, formats, width, vs_time):
    if not sw.epochs:
        return []
    g = groups(sw)
    panels = list(OrderedDict.fromkeys(p for p, _ in g))
    styles = list(OrderedDict.fromkeys(s for _, s in g))
    # a curve per panel: each panel shows the uncompressed run too, so a
    # panel is read against it rather than against the panel beside it
    with_ref = len(panels) > 1 and len(styles) == 1
    ncol, nrow = grid_shape(len(panels))
    w = width if ncol == 1 else max(width, WIDTHS["page"])
    fig, axes = plt.subplots(nrow, ncol, figsize=(w, 0.4 + 2.1 * nrow * (w / ncol) / 3.4), squeeze=False, sharex=True, sharey=True, layout="constrained")
    yk = "test_loss" if sw.lm else "test_accuracy"

    def x_of(e):
        if not vs_time:
            return num(e.get("epoch"))
        t = num(e.get("emulated_time"))
        return t if not math.isnan(t) else num(e.get("time"))

    cap = None
    if sw.lm:  # a diverged run's loss would flatten every other curve
        losses = [v for v in (num(e.get(k)) * sw.scale for r in sw.rows for e in sw.epochs.get(r["id"], []) for k in (yk, yk + "_compressed"))
                  if not math.isnan(v)]
        ref_ids = {q["id"] for q in (reference_run(sw, r) for r in sw.rows) if q is not None} if with_ref else set()
        ref_losses = [num(e.get(yk)) * sw.scale for i in ref_ids for e in sw.epochs.get(i, [])]
        cap = clip_level(losses, ref_losses)
    clipped = []
    xs_all = []
    for pi, pname in enumerate(panels):
        ax = axes[pi // ncol][pi % ncol]
        refs = []
        for (p, s), r in zip(g, sw.rows):
            q = reference_run(sw, r) if with_ref and p == pname else None
            if q is not None and q["id"] in sw.epochs and q["id"] not in refs:
                refs.append(q["id"])
                pts = [(x_of(e), num(e.get(yk)) * sw.scale) for e in sw.epochs[q["id"]]]
                pts = [(x, y) for x, y in pts if not math.isnan(x) and not math.isnan(y)]
                if pts:
                    ax.plot(*zip(*pts), color="#a8a8a8", marker="o", ms=2.2, lw=0.9, zorder=1)
        for (p, s), r in zip(g, sw.rows):
            if p != pname or r["id"] not in sw.epochs:
                continue
            st = style(styles.index(s))
            eps = sw.epochs[r["id"]]
            xs = [x_of(e) for e in eps]
            xs_all += [x for x in xs if x > 0]
            for k, ls, fill in ((yk, "-", st["color"]), (yk + "_compressed", "--", "white")):
                ys = [num(e.get(k)) * sw.scale for e in eps]
                pts = [(x, y) for x, y in zip(xs, ys) if not math.isnan(x) and not math.isnan(y)]
                if not pts:
                    continue
                inside = [(x, y) if cap is None or y <= cap else (x, math.nan) for x, y in pts]
                ax.plot(*zip(*[(x, min(y, cap) if cap is not None else y) for x, y in pts]), ls=ls, color=st["color"], lw=1.1, zorder=2)
                ax.plot(*zip(*inside), ls="none", color=st["color"], marker=st["marker"], ms=3, mfc=fill, zorder=3)
                for x, y in pts:
                    if cap is not None and y > cap:  # above the axis: a triangle on its edge, the value beside it
                        ax.plot([x], [cap], ls="none", marker="^", ms=4, color=st["color"], mfc=fill, clip_on=False, zorder=4)
                        ax.annotate(f"{y:.3g}", (x, cap), xytext=(4, -9 if fill != "white" else -17), textcoords="offset points", fontsize=5.5, color="#333")
                        clipped.append(y)
        # the panels' key goes in the title once: a panel shows its value
        ax.set_title(pname.split(" = ", 1)[-1], fontsize=7.5)
        ax.grid(alpha=0.3)
    if cap is not None:
        lo = min(losses)
        axes[0][0].set_ylim(lo - 0.06 * (cap - lo), cap)
    for k in range(len(panels), nrow * ncol):
        axes[k // ncol][k % ncol].axis("off")
        if k - ncol >= 0:  # the panel above an empty slot carries the x axis
            above = axes[(k - ncol) // ncol][k % ncol]
            above.xaxis.set_tick_params(labelbottom=True)
            above.set_xlabel("training time, s (virtual clock)" if vs_time else "epoch")
    if vs_time and xs_all and max(xs_all) > 20 * min(xs_all):
        axes[0][0].set_xscale("log")
    if nrow > 1:  # one label for the figure's rows, not one per row crowding the next
        fig.supylabel(sw.ylabel, fontsize=8)
    else:
        axes[0][0].set_ylabel(sw.ylabel)
    for j in range(ncol):
        axes[nrow - 1][j].set_xlabel("training time, s (virtual clock)" if vs_time else "epoch")
    if not vs_time:  # whole epochs
        last = max((num(e.get("epoch")) for eps in sw.epochs.values() for e in eps), default=1)
        axes[0][0].set_xlim(0.6, last + 0.4)
        axes[0][0].xaxis.set_major_locator(ticker.MaxNLocator(integer=True, min_n_ticks=1))
    handles = [plt.Line2D([], [], color=style(i)["color"], marker=style(i)["marker"], ms=3, lw=1.1, label=s) for i, s in enumerate(styles) if s]
    if with_ref:
        handles.append(plt.Line2D([], [], color="#a8a8a8", marker="o", ms=2.2, lw=0.9, label="uncompressed run (fwd = bwd = none), plain"))
    handles += [plt.Line2D([], [], color="#333", lw=1.1, label="plain inference"),
                plt.Line2D([], [], color="#333", ls="--", marker="o", mfc="white", ms=3, lw=1.1, label="compressed inference")]
    if clipped:
        handles.append(plt.Line2D([], [], color="#333", ls="none", marker="^", ms=4, label=f"above the axis (up to {max(clipped):.3g})"))
    fig.legend(handles=handles, loc="upper center", ncol=min(4, len(handles)), fontsize=6.5, frameon=False,
               bbox_to_anchor=(0.5, 0.0))
    what = ("Validation loss" if sw.lm else "Test accuracy") + (" against training time" if vs_time else " per epoch")
    key = panels[0].split(" = ", 1)[0] if panels and " = " in panels[0] else ""
    fig.suptitle(f"{what} — {sw.name}" + (f"\n(a panel per {key})" if key else ""), fontsize=8.5)
    return savefig(fig, out, "vs_time" if vs_time else "per_epoch", formats)


def vs_bits(sw, out, formats, width):
    panels = []
    notes = []
    for d, (bk, other, title) in enumerate((("fwd_bits_per_element", "bwd", "activations (forward)"),
                                            ("bwd_bits_per_element", "fwd", "gradients (backward)"))):
        xs = [num(r.get(bk)) for r in sw.rows if not math.isnan(num(r.get(bk)))]
        if not xs:
            continue
        if max(xs) <= min(xs) * 1.0001:
            notes.append(f"{title.split()[0]}: {min(xs):.2f} bits/element in every run")
            continue
        panels.append((bk, other, title))
    if not panels:
        return []
    fig, axes = plt.subplots(1, len(panels), figsize=(max(width, 3.4 * len(panels)), 2.6), squeeze=False, sharey=True, layout="constrained")
    for k, (bk, other, title) in enumerate(panels):
        ax = axes[0][k]
        series = OrderedDict()
        pairs = OrderedDict()
        for r in sw.rows:
            pairs.setdefault((r.get("fwd", ""), r.get("bwd", "")), []).append(r)
        for (fw, bw), rs in pairs.items():
            pts = [(num(r.get(bk)), num(r.get(sw.metric(True))) if not math.isnan(num(r.get(sw.metric(True)))) else num(r.get(sw.metric(False))))
                   for r in rs]
            pts = [(x, y) for x, y in pts if not math.isnan(x) and not math.isnan(y)]
            if pts:
                o = bw if other == "bwd" else fw
                series.setdefault(o or "(default)", []).append((sum(p[0] for p in pts) / len(pts), sw.scale * sum(p[1] for p in pts) / len(pts)))
        if len(series) > 1 and all(len(p) == 1 for p in series.values()):
            # the directions set together (fwd+bwd): one curve, each point named
            pts = sorted((p[0][0], p[0][1], o) for o, p in series.items())
            ax.plot([p[0] for p in pts], [p[1] for p in pts], color=COLOURS[0], marker="o", ms=3.5, lw=1.1)
            for x, y, o in pts:
                ax.annotate(o, (x, y), xytext=(4, -2), textcoords="offset points", fontsize=5.5, color="#333")
            title = title.split(",")[0] + ", each point its codecs"
            other = None
        for i, (o, pts) in enumerate(series.items() if other else []):
            pts.sort()
            st = style(i)
            ax.plot(*zip(*pts), color=st["color"], marker=st["marker"], ms=3.5, lw=1.1,
                    label=("gradients " if other == "bwd" else "activations ") + o)
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_xlabel(f"bits per element, {title.split()[0]}")
        ax.set_title(title + ("" if not other else ", by gradient codec" if other == "bwd" else ", by activation codec"), fontsize=8)
        ax.grid(alpha=0.3)
        if other:
            ax.legend(fontsize=6, frameon=False, loc="best")
    axes[0][0].set_ylabel(sw.ylabel + ", compressed inference")
    fig.suptitle(("Final validation loss" if sw.lm else "Final test accuracy") + " against bits per element — " + sw.name
                 + ("\n" + "; ".join(notes) if notes else ""), fontsize=8.5)
    return savefig(fig, out, "vs_bits", formats)


def family(spec):
    k = 0
    while k < len(spec) and spec[k] not in ":,(":
        k += 1
    f = spec[:k]
    if len(f) > 1 and f[0] == "q" and f[1].isdigit():
        return "q (quantization)"
    if k < len(spec) and spec[k] == "(":
        return f + "(...)"
    return f or "(default)"


def error(sw, out, formats, width):
    dirs = [(d, t) for d, t in (("fwd", "activations (forward)"), ("bwd", "gradients (backward)"))
            if any(num(r.get(f"{d}_error")) > 0 for r in sw.rows)]
    if not dirs:
        return []
    fams = list(OrderedDict.fromkeys(family(r.get(d, "")) for d, _ in dirs for r in sw.rows if num(r.get(f"{d}_error")) > 0))
    fig, axes = plt.subplots(1, len(dirs), figsize=(max(width, 3.4 * len(dirs)), 2.6), squeeze=False, sharey=True, layout="constrained")
    for k, (d, title) in enumerate(dirs):
        ax = axes[0][k]
        for i, fam in enumerate(fams):
            pts = [(num(r.get(f"{d}_bits_per_element")), num(r.get(f"{d}_error"))) for r in sw.rows
                   if family(r.get(d, "")) == fam and num(r.get(f"{d}_error")) > 0]
            if pts:
                st = style(i)
                ax.scatter(*zip(*pts), color=st["color"], marker=st["marker"], s=14, label=fam)
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_yscale("log")
        ax.set_xlabel("bits per element")
        ax.set_title(title, fontsize=8)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=6, frameon=False)
    axes[0][0].set_ylabel("relative error ||x̂ − x|| / ||x||")
    fig.suptitle("Compression error against bits per element — " + sw.name, fontsize=8.5)
    return savefig(fig, out, "error", formats)


def plot_sweep(d, out, formats, width):
    sw = Sweep(d)
    made = []
    if sw.rk:
        made += heatmap(sw, out, formats, width)
    made += curves(sw, out, formats, width, False)
    made += curves(sw, out, formats, width, True)
    made += vs_bits(sw, out, formats, width)
    made += error(sw, out, formats, width)
    if not sw.epochs:
        print(f"plot.py: {d} has no per-epoch records (epochs.csv or runs/): no per-epoch or time figures", file=sys.stderr)
    return made


def short_spec(spec):
    """a codec spec up to its first option (legends), keeping a rotation and the entropy stage:
    topk:0.04,per=tensor -> topk:0.04; q3:per=token,rot+zstd -> q3:per=token,rot+zstd"""
    depth, k = 0, 0
    for k, ch in enumerate(spec):
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            rest, short = spec[k:], spec[:k]
            if ",rot" in rest.split("+")[0]:
                short += ",rot"
            if "+zstd" in rest:
                short += "+" + rest.split("+", 1)[1]
            return short
    return spec


GPT_WIDTHS = {"gpt-tiny": 128, "gpt-small": 256}  # the presets' widths (pipezip models)


def model_width(model):
    """a GPT's width from its name as results.csv has it (gpt-tiny, gpt:...,d=D,...; a preset with d= changed); 0 otherwise"""
    name, _, keys = (model or "").partition(":")
    for kv in keys.split(","):
        if kv.startswith("d="):
            return int(kv[2:])
    return GPT_WIDTHS.get(name, 128 if name == "gpt" else 0)


def strongest(rows):
    """issue 52's baseline rule: per seed, the better (lower loss) of the ordinary model's uncompressed run
    (subspace 0) and the same lifted model's at full width (subspace K >= the width); {seed: (loss, K)}"""
    best = {}
    for r in rows:
        if r.get("status") != "finished" or r.get("fwd") != "none" or r.get("bwd") != "none":
            continue
        k = int(r.get("subspace") or 0)
        if (k and k < model_width(r.get("model"))) or num(r.get("project")) > 0:
            continue  # a narrower model, or one projected at its cuts, is not a baseline
        q, seed = num(r.get("final_test_loss")), r.get("seed", "1")
        if not math.isnan(q) and (seed not in best or q < best[seed][0]):
            best[seed] = (q, k)
    return best


def frontier(panels, out, formats, cut=None, select=None, columns=None):
    """traffic against quality over seeds: a panel per argument (sweep
    directories joined by +), a point per setting at the mean over its seeds
    with bars from the lowest to the highest seed, the uncompressed runs'
    range as a grey band; image classifiers by final test accuracy through
    the compressed boundaries, language models by validation loss. cut:
    one-cut runs at that cut only (split learning); select: a regular
    expression, the settings (legend labels) to draw; columns: panels a
    row (the rest wrap)"""
    cols = min(columns or len(panels), len(panels))
    rows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(3.4 * cols + 0.6, 4.6 * rows), squeeze=False, layout="constrained")
    for ax in axes.flat[len(panels):]:
        ax.set_axis_off()
    for ax, dirs in zip(axes.flat, panels):
        sws = [Sweep(d) for d in dirs.split("+")]
        lm = sws[0].lm
        groups = OrderedDict()
        # a language model with subspace runs: each point's loss gap to its seed's strongest uncompressed model
        best = strongest([r for sw in sws for r in sw.rows]) if lm and any(r.get("subspace", "0") not in ("", "0") for sw in sws for r in sw.rows) else {}
        # a subspace model's own fp32 is K numbers per token: its traffic is
        # read against the uncompressed (unconstrained) run of its seed, in
        # any of the joined sweeps
        base_bytes = {r.get("seed", "1"): num(r.get("fwd_bytes")) + num(r.get("bwd_bytes")) for sw in sws for r in sw.rows
                      if r.get("status") == "finished" and r.get("fwd") == "none" and r.get("bwd") == "none"
                      and r.get("subspace", "0") in ("", "0")}
        for sw in sws:
            for r in sw.rows:
                c = r.get("cuts", "")
                if r.get("status") != "finished" or (cut and c and "," not in c and c != cut):
                    continue
                q = num(r.get("final_test_loss_compressed" if lm else "final_test_accuracy_compressed"))
                if math.isnan(q):
                    q = num(r.get("final_test_loss" if lm else "final_test_accuracy"))
                k, pj = r.get("subspace", "0"), r.get("project", "0")
                bud = r.get("budget") or ""
                key = ("subspace %s, " % k if k not in ("", "0") else "") + ("learned projection to %s, " % pj if pj not in ("", "0") else "") \
                    + ("budget %s (codecs chosen as it trains)" % bud if bud not in ("", "off") else
                       short_spec(r.get("fwd") or "none") + " / " + short_spec(r.get("bwd") or "none"))
                if select and key != "none / none" and not re.search(select, key):
                    continue
                mine = num(r.get("fwd_bytes")) + num(r.get("bwd_bytes"))
                ratio = base_bytes[r.get("seed", "1")] / mine if "subspace" in r and r.get("seed", "1") in base_bytes and mine > 0 \
                    else num(r.get("compression_ratio"))
                if best:
                    if r.get("seed", "1") not in best:
                        continue
                    q = 100 * (q / best[r.get("seed", "1")][0] - 1) / (1 if lm else 100)
                g = groups.setdefault(key, ([], []))
                g[0].append(ratio)
                g[1].append(q * (1 if lm else 100))
        base = groups.pop("none / none", None)
        if best:  # the baseline is 0 by definition: name it, and the bars above it
            wide = sorted({k for _, k in best.values() if k})
            named = ("the same lifted model at full width (subspace %s)" % "/".join(map(str, wide)) if wide and all(k for _, k in best.values())
                     else "the ordinary model" if not wide else "per seed the better of the ordinary model and the full-width one")
            ax.axhline(0, color="#222222", lw=0.9, label="baseline: " + named)
            for pct, ls in ((1, "--"), (3, ":")):
                ax.axhline(pct, color="#555555", lw=0.8, ls=ls, label="baseline + %d%%" % pct)
            if base:
                groups["ordinary model, none / none"] = base
            base = None
        if base:
            ax.axhspan(min(base[1]), max(base[1]), color="#a8a8a8", alpha=0.35, lw=0, label="none / none: its seeds' range")
            mean = sum(base[1]) / len(base[1])
            if lm:  # the bars: 1% and 3% above the uncompressed mean
                for pct, ls in ((1, "--"), (3, ":")):
                    ax.axhline(mean * (1 + pct / 100), color="#555555", lw=0.8, ls=ls, label="uncompressed mean + %d%%" % pct)
            else:  # and half a point below it
                ax.axhline(mean - 0.5, color="#555555", lw=0.8, ls="--", label="uncompressed mean - 0.5 points")
        for i, (k, (xs, ys)) in enumerate(groups.items()):
            if len(ys) < 2:
                continue  # a single seed has no range: the figure is about seeds
            x, y = sum(xs) / len(xs), sum(ys) / len(ys)
            st = style(i)
            ax.errorbar([x], [y], yerr=[[y - min(ys)], [max(ys) - y]], color=st["color"], marker=st["marker"], ms=4, lw=1, capsize=2,
                        label=k)
        ax.set_xscale("log", base=2)
        lo, hi = ax.get_xlim()  # ticks at round ratios, labelled 8x, 32x (a narrow range gets finer ones)
        for cands in ((1, 2, 4, 8, 16, 32, 64, 128, 256), (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128),
                      (1, 2, 3, 4, 5, 6, 8, 10, 12, 14, 16, 20, 25, 30, 35, 40, 50, 60, 70, 80, 100)):
            ticks = [c for c in cands if lo <= c <= hi]
            if len(ticks) >= 3:
                break
        ax.set_xticks(ticks, ["%gx" % t for t in ticks])
        ax.set_xticks([], minor=True)
        ax.set_xlim(lo, hi)
        ax.set_xlabel("traffic less than the ordinary fp32" if best else "traffic less than fp32, both ways")
        ax.set_ylabel("loss above the baseline, %" if best else
                      "validation loss (nats/token)" if lm else "test accuracy % (compressed)")
        if best:  # the region the goals are about; a point far above it drawn on the top edge with its value
            top = 12.0
            ys = [y for xs_, ys_ in groups.values() for y in ys_]
            if ys and max(ys) > top:
                ax.set_ylim(-1.5, top)
                above = []  # (x, mean, colour), then one label per cluster of nearby x
                for i, (xs_, ys_) in enumerate(groups.values()):
                    y = sum(ys_) / len(ys_)
                    if y > top and len(ys_) >= 2:
                        x = sum(xs_) / len(xs_)
                        ax.plot([x], [top], marker="^", color=style(i)["color"], ms=4, clip_on=False)
                        above.append((x, y))
                above.sort()
                while above:
                    cl = [p for p in above if p[0] <= above[0][0] * 1.6]
                    above = above[len(cl):]
                    lo_, hi_ = min(p[1] for p in cl), max(p[1] for p in cl)
                    ax.annotate(("%+.0f%%" % lo_) if len(cl) == 1 else "%+.0f to %+.0f%%" % (lo_, hi_),
                                (sum(p[0] for p in cl) / len(cl), top), xytext=(0, -9), textcoords="offset points", fontsize=5, ha="center")
        r0 = sws[0].rows[0]
        n_st = int(num(r0.get("stages"))) if num(r0.get("stages")) > 0 else (len(r0["cuts"].split(",")) + 1 if r0.get("cuts") else 4)
        ax.set_title(r0.get("model", "").split(",heads")[0] + (", one cut at " + cut if cut and any("," not in r.get("cuts", ",") for r in sws[0].rows)
                                                                else ", %d stages" % n_st), fontsize=7.5)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=5.5, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=1)
    fig.suptitle("Traffic against quality: mean and range over seeds 1-3 (activations / gradients)", fontsize=8.5)
    return savefig(fig, out, "frontier", formats)


def jsonl(path):
    if not os.path.exists(path):
        return []
    out = []
    for n, line in enumerate(open(path), 1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as e:
                fail(f"{path}:{n}: not JSON ({e.msg})")
    return out


def plot_run(d, out, formats, width):
    cfg = json.load(open(os.path.join(d, "config.json"))) if os.path.exists(os.path.join(d, "config.json")) else {}
    steps, epochs, bounds = jsonl(os.path.join(d, "steps.jsonl")), jsonl(os.path.join(d, "epochs.jsonl")), jsonl(os.path.join(d, "boundaries.jsonl"))
    name = f"{cfg.get('model', '?')}, fwd {cfg.get('fwd', '?')}, bwd {cfg.get('bwd', '?')}, seed {cfg.get('seed', '?')}"
    lm = any("test_bits_per_byte" in e for e in epochs)
    fig, axes = plt.subplots(1, 3 if bounds else 2, figsize=(WIDTHS["page"], 2.3), squeeze=False, layout="constrained")
    ax = axes[0][0]
    # a run of --steps N, or of one epoch, is drawn against the step (an
    # epoch axis of 0.33/0.67/1.0 says nothing); longer ones against the epoch
    by_step = bool(steps) and all("step" in s for s in steps) and (num(cfg.get("steps")) > 0 or len(epochs) <= 1)
    ends = {}
    for s in steps:  # each epoch's last logged step: where its evaluation sits
        ends[s.get("epoch", 1)] = max(ends.get(s.get("epoch", 1), 0), s.get("step", 0))
    def ex(e):
        return e.get("step", ends.get(e["epoch"], math.nan)) if by_step else e["epoch"]
    xlabel = "step" if by_step else "epoch"
    if steps:
        if by_step:
            xs = [s["step"] for s in steps]
        else:
            # a logged step at its place within its epoch (steps count across epochs)
            count = {}
            for s in steps:
                count[s.get("epoch", 1)] = count.get(s.get("epoch", 1), 0) + 1
            seen, xs = {}, []
            for s in steps:
                e = s.get("epoch", 1)
                seen[e] = seen.get(e, 0) + 1
                xs.append(e - 1 + seen[e] / count[e])
        ax.plot(xs, [s.get("loss", math.nan) for s in steps], lw=0.9, color=COLOURS[0], label="training (logged steps)")
    if epochs:
        ax.plot([ex(e) for e in epochs], [e.get("test_loss", math.nan) for e in epochs], "o-", ms=3, color=COLOURS[1], label="test")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("loss (nats)")
    ax.legend(fontsize=6, frameon=False)
    ax.grid(alpha=0.3)
    ax = axes[0][1]
    if epochs and not lm:
        ax.plot([ex(e) for e in epochs], [100 * e.get("test_accuracy", math.nan) for e in epochs], "o-", ms=3, color=COLOURS[0], label="plain")
        cs = [(ex(e), 100 * e["test_accuracy_compressed"]) for e in epochs if isinstance(e.get("test_accuracy_compressed"), (int, float)) and e["test_accuracy_compressed"] >= 0]
        if cs:
            ax.plot(*zip(*cs), "o--", ms=3, mfc="white", color=COLOURS[1], label="compressed")
        ax.set_ylabel("test accuracy (%)")
        ax.legend(fontsize=6, frameon=False)
    elif epochs:
        ax.plot([ex(e) for e in epochs], [e.get("test_bits_per_byte", math.nan) for e in epochs], "o-", ms=3, color=COLOURS[0])
        ax.set_ylabel("validation bits per byte")
    ax.set_xlabel(xlabel)
    ax.grid(alpha=0.3)
    if bounds:
        ax = axes[0][2]
        last = max(b.get("epoch", 0) for b in bounds)
        bs = [b for b in bounds if b.get("epoch", 0) == last]
        xs = range(len(bs))
        ax.bar([x - 0.2 for x in xs], [b.get("fwd_bits_per_element", 0) for b in bs], 0.4, color=COLOURS[0], label="activations")
        ax.bar([x + 0.2 for x in xs], [b.get("bwd_bits_per_element", 0) for b in bs], 0.4, color=COLOURS[1], label="gradients")
        ax.set_xticks(list(xs))
        ax.set_xticklabels([str(b.get("after", b.get("boundary", ""))) for b in bs], fontsize=6)
        ax.set_ylabel("bits per element")
        ax.set_xlabel(f"boundary (after), epoch {last}")
        ax.set_ylim(0, 1.25 * max([b.get("fwd_bits_per_element", 0) for b in bs] + [b.get("bwd_bits_per_element", 0) for b in bs] + [1]))
        ax.legend(fontsize=6, frameon=False, ncol=2, loc="upper center")
    fig.suptitle(name, fontsize=8.5)
    return savefig(fig, out, "run", formats)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="plot.py", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("dirs", nargs="+", metavar="DIR", help="a sweep directory (results.csv) or a run directory (epochs.jsonl)")
    ap.add_argument("--out", help="where the figures go (default: DIR/figures)")
    ap.add_argument("--format", default="pdf,png", help="comma-separated: pdf, png, svg (default: pdf,png)")
    ap.add_argument("--width", default="column", choices=sorted(WIDTHS), help="a single panel's width: a paper's column (3.4 in) or page (7 in)")
    ap.add_argument("--dpi", type=int, default=200, help="PNG resolution (default 200)")
    ap.add_argument("--frontier", action="store_true",
                    help="one figure, a panel per DIR (DIR+DIR joins sweeps): traffic reduction against quality over seeds (frontier.*)")
    ap.add_argument("--cut", help="with --frontier: one-cut runs at this cut only")
    ap.add_argument("--columns", type=int, help="with --frontier: panels a row (default: all in one)")
    ap.add_argument("--select", help="with --frontier: only the settings whose label matches this regular expression "
                                     "(\"subspace 16, q8\\+zstd\"); the baselines are always drawn")
    a = ap.parse_args(argv)
    if not 50 <= a.dpi <= 1200:
        fail(f"--dpi {a.dpi}: expected 50 to 1200")
    DPI[0] = a.dpi
    formats = [f.strip() for f in a.format.split(",") if f.strip()]
    for f in formats:
        if f not in ("pdf", "png", "svg"):
            fail(f"--format {f}: expected pdf, png or svg")
    plt.rcParams.update({"font.size": 8, "axes.titlesize": 8, "axes.labelsize": 8, "xtick.labelsize": 7, "ytick.labelsize": 7,
                         "pdf.fonttype": 42, "svg.fonttype": "none"})
    if a.frontier:
        for d in (x for p in a.dirs for x in p.split("+")):
            if not os.path.exists(os.path.join(d, "results.csv")):
                fail(f"{d} is not a sweep directory (results.csv)")
        os.makedirs(a.out or ".", exist_ok=True)
        for p in frontier(a.dirs, a.out or ".", formats, a.cut, a.select, a.columns):
            print(p)
        return 0
    for d in a.dirs:
        if not os.path.isdir(d):
            fail(f"{d}: no such directory")
        out = a.out if a.out and len(a.dirs) == 1 else os.path.join(a.out, os.path.basename(os.path.normpath(d))) if a.out else os.path.join(d, "figures")
        os.makedirs(out, exist_ok=True)
        if os.path.exists(os.path.join(d, "results.csv")):
            made = plot_sweep(d, out, formats, WIDTHS[a.width])
        elif os.path.exists(os.path.join(d, "epochs.jsonl")):
            made = plot_run(d, out, formats, WIDTHS[a.width])
        else:
            fail(f"{d} is neither a sweep directory (results.csv) nor a run directory (epochs.jsonl)")
        for p in made:
            print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
