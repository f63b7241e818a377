#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""wan_score.py — the WAN score the way ProtocolNanoGPT keeps it, from
pipezip sweeps (configs/w2_wan_field*.ini): T = the steps to the target (a
run's first evaluation at or below its seed's uncompressed final loss + 1%)
x the steady step (the median step of the last three 10-step windows).

For the schedule and wire model a run trained with (1F1B, shared) the
steady step is the run's own emulated clock; for the others (GPipe, duplex)
and for --micro-batches auto it is `pipezip time`'s dry step with the bytes
per token the run carried in those windows (the dry mode equals a real
pipeline's clock for the same bytes: tests/pipe/test_timing.c; the column
dry_check is the dry step over the real one for the run's own setting). A
run of an asynchronous schedule (--pipe-schedule async, its numbers) is
timed as async and eager-async (the same numbers) on both wires; its
targets are the first sweep's (1F1B's), and a table compares its T with the
flushing schedules' of the same seed and setting.

The projection to ProtocolNanoGPT's scale: each setting's bytes per token
relative to bf16's here (per direction), times the dense record's 2048
B/token, timed by `pipezip time` at the record's shape (8 blocks of width
1024, 524,288 tokens in 64 micro-batches, 1F1B, shared wire at 200 Mbit/s
+ 50 ms, compute from its 0.539 s links-off step); T projected = (the
setting's steps to target / fp32's, same seed, here) x 2,925 x that step.
It assumes a setting keeps its compression ratio and its relative steps at
that scale: a projection, not a measurement.

Usage: python3 scripts/wan_score.py SWEEP [SWEEP...] --pipezip build/pipezip --out DIR
The first sweep holds the uncompressed runs that set each seed's target.
Writes DIR/score.csv (a row per run, schedule and wire model) and
DIR/score.md (the tables RESULTS.md quotes)."""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys

COMBOS = [("1f1b", "shared"), ("gpipe", "shared"), ("1f1b", "duplex"), ("gpipe", "duplex"), ("eager-1f1b", "shared"),
          ("eager-1f1b", "duplex")]
ASYNC = [(s, w) for s in ("async", "eager-async") for w in ("shared", "duplex")]  # the same numbers, other clocks
REF = ["--model", "gpt:layers=8,d=1024,heads=8,ctx=1024,untied=1", "--vocab", "50304", "--cuts", "h.0,h.1,h.2,h.3,h.4,h.5,h.6",
       "--tokens-per-step", "524288", "--pipe-schedule", "1f1b", "--link-model", "shared", "--link-bandwidth", "200mbit",
       "--link-latency", "50ms", "--links-off-step", "0.539", "--clip-norm", "0", "--micro-batches", "64"]
REF_STEPS = 2925  # the dense record's steps to 3.276


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def setting(r):
    """a run's setting, as the tables name it"""
    if r["budget"]:
        s = f"--budget {r['budget']}"
    elif r["fwd"] == r["bwd"]:
        s = r["fwd"]
    else:
        s = f"{r['fwd']} / {r['bwd']}"
    k = int(r.get("subspace") or 0)
    opt = f", --optimizer {r['optimizer']} --momentum {r.get('momentum') or '0.9'}" if r.get("optimizer") else ""
    return (f"--subspace {k}, " if k else "") + s + opt


def time_json(pz, args):
    out = subprocess.run([pz, "time", *args, "--format", "json"], capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"wan_score: pipezip time {' '.join(args)}: {out.stderr.strip()}")
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sweeps", nargs="+")
    ap.add_argument("--pipezip", default="build/pipezip")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    runs, evals = [], {}
    for d in a.sweeps:
        for r in rows(os.path.join(d, "results.csv")):
            if r["status"] != "finished":
                sys.exit(f"wan_score: {d}: {r['id']} is {r['status']}")
            r["sweep"] = os.path.basename(os.path.normpath(d))
            budget = (r.get("budget") or "").strip()
            r["budget"] = "" if budget == "off" else budget
            r.setdefault("fwd", "budget" if r["budget"] else "q4")  # a budget's runs name no codec: it chooses them
            r.setdefault("bwd", "budget" if r["budget"] else "q8")
            runs.append(r)
        for e in rows(os.path.join(d, "evals.csv")):
            evals.setdefault((os.path.basename(os.path.normpath(d)), e["id"]), []).append(e)
    plain = lambda r: int(r.get("subspace") or 0) == 0 and r["fwd"] == "none" and r["bwd"] == "none" and not r["budget"]
    first = os.path.basename(os.path.normpath(a.sweeps[0]))
    target = {r["seed"]: float(r["final_test_loss_compressed"]) * 1.01 for r in runs if r["sweep"] == first and plain(r)}
    # the strongest uncompressed model of each seed: the better of the ordinary
    # one and the subspace model at full width (K = the width, nothing compressed)
    width = lambda r: int(r["model"].split("d=")[1].split(",")[0])
    lifted = lambda r: int(r.get("subspace") or 0) == width(r) and r["fwd"] == "none" and r["bwd"] == "none"
    strong = {}
    for r in runs:
        if r["sweep"] == first and (plain(r) or lifted(r)):
            strong[r["seed"]] = min(strong.get(r["seed"], float("inf")), float(r["final_test_loss_compressed"]) * 1.01)
    out = []
    for r in runs:
        ev = list({int(e["step"]): e for e in evals[(r["sweep"], r["id"])]}.values())  # one per step
        ev.sort(key=lambda e: int(e["step"]))
        if len(ev) < 2:
            sys.exit(f"wan_score: {r['id']}: fewer than two evaluations to time a step by")
        k = min(3, len(ev) - 1)  # the windows: the last three (or as many as there are)
        tg = target[r["seed"]]
        hit = next((e for e in ev if float(e["test_loss_compressed"]) <= tg), None)
        steps = int(hit["step"]) if hit else None
        hit_s = next((e for e in ev if float(e["test_loss_compressed"]) <= strong[r["seed"]]), None)
        steps_s = int(hit_s["step"]) if hit_s else None
        # the steady step: the median of the last three windows' steps (the reference's rule)
        win = [(float(b["emulated_time"]) - float(p["emulated_time"])) / (int(b["step"]) - int(p["step"]))
               for p, b in zip(ev[-k - 1:-1], ev[-k:])]
        steady = statistics.median(win)
        # the same rule as pipezip sweep's steady_step_seconds (kept here at full precision; results.csv has 6 digits)
        if r.get("steady_step_seconds") and abs(steady / float(r["steady_step_seconds"]) - 1) > 1e-5:
            sys.exit(f"wan_score: {r['id']}: a steady step of {steady} s, results.csv says {r['steady_step_seconds']}")
        # the bytes per token those windows carried, each way, over the boundaries
        S = len(r["cuts"].split(",")) + 1
        ctx = int(r["model"].split("ctx=")[1].split(",")[0])
        toks = (int(ev[-1]["step"]) - int(ev[-k - 1]["step"])) * int(r["batch"]) * ctx * (S - 1)
        fb = (float(ev[-1]["fwd_bytes"]) - float(ev[-k - 1]["fwd_bytes"])) / toks
        bb = (float(ev[-1]["bwd_bytes"]) - float(ev[-k - 1]["bwd_bytes"])) / toks
        common = ["--model", r["model"], "--cuts", r["cuts"], "--batch", r["batch"], "--link-bandwidth", r["link-bandwidth"],
                  "--link-latency", r["link-latency"], "--compute-rate", r["compute-rate"], "--bytes-per-token", f"{fb!r}/{bb!r}",
                  "--subspace", r.get("subspace") or "0"]
        own = (r["pipe-schedule"], r["link-model"])
        combos = ASYNC if own in ASYNC else COMBOS + [("1f1b", "shared-auto")]
        base = dict(sweep=r["sweep"], id=r["id"], setting=setting(r), subspace=r.get("subspace") or "0", fwd=r["fwd"], bwd=r["bwd"],
                    budget=r.get("budget") or "", seed=r["seed"], target_loss=f"{tg:.6g}",
                    final_loss=r["final_test_loss_compressed"], steps_to_target=steps if steps else "",
                    strong_target_loss=f"{strong[r['seed']]:.6g}", steps_to_strong_target=steps_s if steps_s else "",
                    fwd_bytes_per_token=f"{fb:.4g}", bwd_bytes_per_token=f"{bb:.4g}")
        for sched, wire in combos:
            model = wire.replace("-auto", "")
            micro = "auto" if wire.endswith("auto") else r["micro-batches"]
            real = (sched, wire) == own
            delay = ["--pipe-delay", r.get("pipe-delay") or "1"] if (sched, wire) in ASYNC else []
            d = time_json(a.pipezip, common + ["--pipe-schedule", sched, "--link-model", model, "--micro-batches", micro] + delay)
            step = steady if real else d["step_s"]
            row = dict(base, pipe_schedule=sched, link_model=model, micro_batches=d["micro_batches"],
                       micro_batches_rule="auto" if micro == "auto" else "given",
                       step_source="run" if real else "dry", steady_step_s=f"{step:.6g}",
                       dry_check=f"{d['step_s'] / steady:.4f}" if real else "",
                       T_s=f"{steps * step:.6g}" if steps else "",
                       T_strong_s=f"{steps_s * step:.6g}" if steps_s else "",
                       emulated_time_to_target_s=f"{float(hit['emulated_time']):.6g}" if hit and real else "")
            out.append(row)
    # T against fp32's and bf16's of the same seed, schedule, wire and micro-batch rule
    for o in out:
        for name, fwd in (("T_vs_fp32", "none"), ("T_vs_bf16", "bf16")):
            ref = [float(p["T_s"]) for p in out if p["seed"] == o["seed"] and p["pipe_schedule"] == o["pipe_schedule"] and
                   p["link_model"] == o["link_model"] and p["micro_batches_rule"] == o["micro_batches_rule"] and
                   p["subspace"] == "0" and p["fwd"] == fwd and p["bwd"] == fwd and not p["budget"] and p["T_s"]]
            o[name] = f"{ref[0] / float(o['T_s']):.3f}" if ref and o["T_s"] else ""
        # against the strongest uncompressed model: the least T of the ordinary and the lifted model to the strongest target
        ref = [float(p["T_strong_s"]) for p in out if p["seed"] == o["seed"] and p["pipe_schedule"] == o["pipe_schedule"] and
               p["link_model"] == o["link_model"] and p["micro_batches_rule"] == o["micro_batches_rule"] and not p["budget"] and
               p["fwd"] == "none" and p["bwd"] == "none" and p["T_strong_s"]]
        o["T_vs_strongest"] = f"{min(ref) / float(o['T_strong_s']):.3f}" if ref and o["T_strong_s"] else ""
    # the projection: bytes per token relative to bf16's here, at the record's shape
    bf = {o["seed"]: (float(o["fwd_bytes_per_token"]), float(o["bwd_bytes_per_token"])) for o in out
          if o["subspace"] == "0" and o["fwd"] == "bf16" and o["bwd"] == "bf16"}
    fp_steps = {o["seed"]: o["steps_to_target"] for o in out if o["subspace"] == "0" and o["fwd"] == "none" and o["bwd"] == "none"}
    proj = {}
    for o in out:
        if o["micro_batches_rule"] != "given" or (o["pipe_schedule"], o["link_model"]) != ("1f1b", "shared") or o["seed"] not in bf:
            continue  # (the projection scales from a bf16 run of the same seed)
        b = bf[o["seed"]]
        f_ref, b_ref = 2048 * float(o["fwd_bytes_per_token"]) / b[0], 2048 * float(o["bwd_bytes_per_token"]) / b[1]
        d = time_json(a.pipezip, REF + ["--bytes-per-token", f"{f_ref!r}/{b_ref!r}"])
        o["ref_bytes_per_token"] = f"{f_ref:.4g}/{b_ref:.4g}"
        o["ref_step_s"] = f"{d['step_s']:.6g}"
        o["ref_T_s"] = f"{o['steps_to_target'] / fp_steps[o['seed']] * REF_STEPS * d['step_s']:.6g}" if o["steps_to_target"] and fp_steps.get(o["seed"]) else ""
        proj.setdefault(o["setting"], []).append(o)
    os.makedirs(a.out, exist_ok=True)
    cols = ["sweep", "id", "setting", "subspace", "fwd", "bwd", "budget", "seed", "pipe_schedule", "link_model", "micro_batches",
            "micro_batches_rule", "target_loss", "final_loss", "steps_to_target", "fwd_bytes_per_token", "bwd_bytes_per_token",
            "step_source", "steady_step_s", "dry_check", "T_s", "emulated_time_to_target_s", "T_vs_fp32", "T_vs_bf16",
            "strong_target_loss", "steps_to_strong_target", "T_strong_s", "T_vs_strongest",
            "ref_bytes_per_token", "ref_step_s", "ref_T_s"]
    with open(os.path.join(a.out, "score.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        for o in out:
            w.writerow({c: o.get(c, "") for c in cols})
    # the tables
    settings = list(dict.fromkeys(o["setting"] for o in out))
    seeds = sorted(set(o["seed"] for o in out))
    def cell(rule, sched, wire, s, field):
        v = [o[field] for o in out if o["setting"] == s and o["micro_batches_rule"] == rule and o["pipe_schedule"] == sched and
             o["link_model"] == wire]
        return " / ".join(str(x) if x != "" else "-" for x in v)
    lines = ["# The WAN score the field's way", "",
             f"Generated by `python3 scripts/wan_score.py {' '.join(a.sweeps)} --pipezip PIPEZIP --out {a.out}`; seeds "
             + ", ".join(seeds) + " in each cell. The target: each seed's uncompressed final validation loss + 1%; the "
             "strongest target: the better of the uncompressed model's and the subspace model's at full width (K = the width, "
             "nothing compressed) + 1%, and T against the less of those two models' T to it.", ""]
    tables = [("given", sch, w, f"{sch}, {'shared wire' if w == 'shared' else 'duplex links'}, 64 micro-batches: "
               + ("the runs' own clocks" if (sch, w) == ("async", "shared") else "dry, from the runs' bytes")) for sch, w in ASYNC]
    tables = [t for t in tables if any(o["pipe_schedule"] == t[1] and o["link_model"] == t[2] for o in out)]
    for rule, sched, wire, title in tables + [("given", "1f1b", "shared", "1F1B, shared wire (ProtocolNanoGPT's meter), 64 micro-batches: the runs' own clocks"),
                                     ("auto", "1f1b", "shared", "1F1B, shared wire, `--micro-batches auto` (dry, from the runs' bytes)"),
                                     ("given", "gpipe", "shared", "GPipe, shared wire, 64 micro-batches (dry)"),
                                     ("given", "1f1b", "duplex", "1F1B, duplex links, 64 micro-batches (dry)"),
                                     ("given", "gpipe", "duplex", "GPipe, duplex links, 64 micro-batches (dry)")]:
        lines += [f"## {title}", "", "| setting | final loss | steps to target | B/token fwd / bwd | micro-batches | steady step, s | T, s | "
                  "T lower than fp32 | than bf16 | steps to the strongest target | T lower than the strongest |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
        for s in settings:
            fwdb = cell(rule, sched, wire, s, "fwd_bytes_per_token").split(" / ")[0]
            bwdb = cell(rule, sched, wire, s, "bwd_bytes_per_token").split(" / ")[0]
            lines.append(f"| {s} | {cell(rule, sched, wire, s, 'final_loss')} | {cell(rule, sched, wire, s, 'steps_to_target')} | "
                         f"{fwdb} / {bwdb} | {cell(rule, sched, wire, s, 'micro_batches')} | {cell(rule, sched, wire, s, 'steady_step_s')} | "
                         f"{cell(rule, sched, wire, s, 'T_s')} | {cell(rule, sched, wire, s, 'T_vs_fp32')} | {cell(rule, sched, wire, s, 'T_vs_bf16')} | "
                         f"{cell(rule, sched, wire, s, 'steps_to_strong_target')} | {cell(rule, sched, wire, s, 'T_vs_strongest')} |")
        lines.append("")
    def runs_of(s, sch, wire):
        """a setting's rows under a schedule and wire; for a flushing schedule those of the setting an optimizer's
        asynchronous runs change (the flushing runs kept theirs)"""
        want = s if (sch, wire) in ASYNC else s.split(", --optimizer")[0]
        return [o for o in out if o["setting"] == want and o["pipe_schedule"] == sch and o["link_model"] == wire and
                o["micro_batches_rule"] == "given"]

    if tables:  # the asynchronous schedules against the flushing ones, same seed, setting and wire
        scheds = ["gpipe", "1f1b", "eager-1f1b", "async", "eager-async"]
        lines += ["## Every schedule, same seeds and settings: T, s (steps to target x steady step)", "",
                  "The flushing schedules (GPipe, 1F1B, eager 1F1B) train the same numbers (the first sweep's runs); the "
                  "asynchronous ones theirs (one step of delay). `-`: the target not reached in the run.", "",
                  "| setting | wire | final loss, flushing / async (seeds) | steps to target, flushing / async | "
                  + " | ".join(f"T {s}" for s in scheds) + " |", "|---|---|---|---|" + "---|" * len(scheds)]
        for wire in ("shared", "duplex"):
            for s in settings:
                row = lambda sch: runs_of(s, sch, wire)
                if not row("async") or not row("1f1b"):
                    continue
                pair = lambda k: " / ".join(f"{p[k] or '-'}, {q[k] or '-'}" for p, q in zip(row("1f1b"), row("async")))
                cells = [" / ".join(o["T_s"] or "-" for o in row(sch)) for sch in scheds]
                lines.append(f"| {s} | {wire} | {pair('final_loss')} | {pair('steps_to_target')} | " + " | ".join(cells) + " |")
        lines += ["", "Their steady steps, s (seeds; the async runs' own clock on the shared wire includes a drain before "
                  "each evaluation, the dry ones none):", "",
                  "| setting | wire | " + " | ".join(scheds) + " |", "|---|---|" + "---|" * len(scheds)]
        for wire in ("shared", "duplex"):
            for s in settings:
                row = lambda sch: runs_of(s, sch, wire)
                if not row("async") or not row("1f1b"):
                    continue
                lines.append(f"| {s} | {wire} | " + " | ".join(" / ".join(o["steady_step_s"] for o in row(sch)) for sch in scheds) + " |")
        lines.append("")
    lines += ["## Projected to ProtocolNanoGPT's scale (a projection, not a measurement)", "",
              "| setting | B/token at the record's shape fwd / bwd | step there, s | T projected, s (seeds) | against the records |",
              "|---|---|---|---|---|"]
    for s, os_ in proj.items():
        ts = [float(o["ref_T_s"]) for o in os_ if o["ref_T_s"]]
        mean = f"{statistics.mean(ts):,.0f}" if len(ts) == len(os_) else "-"
        vs = f"{293889.4 / statistics.mean(ts):.2f}x the dense record's, {181487.1 / statistics.mean(ts):.2f}x ReparamSSN's" if mean != "-" else "-"
        lines.append(f"| {s} | {os_[0]['ref_bytes_per_token'].replace('/', ' / ')} | {os_[0]['ref_step_s']} | "
                     f"{' / '.join(o['ref_T_s'] or '-' for o in os_)} (mean {mean}) | {vs} |")
    lines += ["", "The records: dense bf16 T = 293,889 s (100.475 s a step, 2,925 steps); ReparamSSN T = 181,487 s (19.889 s, 9,125 steps).", ""]
    with open(os.path.join(a.out, "score.md"), "w") as f:
        f.write("\n".join(lines))
    print(f"wan_score: {len(out)} rows in {a.out}/score.csv, tables in {a.out}/score.md")


if __name__ == "__main__":
    main()
