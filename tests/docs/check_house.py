#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_house.py ROOT — the house rules of docs/ARCHITECTURE.md that a
grep can keep (issue 51): each kind's knowledge stays in its own file and
row, and no function outside src/kernels runs over 100 lines.

  - codec families: only a family's own file and the registry name one
    (codec.c, spec.c, wrappers.c, object.h, the CLI and the public headers
    reach them through the descriptor);
  - model architectures: only src/nn names one (the run layer reads the
    architecture's row, pz_model_kind);
  - pipeline schedules: only schedule.c names one past the default;
  - Python: pipezip.pipeline and pipezip.distributed do not import
    pipezip.torch (no import circle).
Prints each breach and exits 1 if there is any."""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else "."
LIMIT = 100
bad = []


def src_files(sub, exts=(".c", ".h")):
    for d, _, files in os.walk(os.path.join(ROOT, sub)):
        for f in sorted(files):
            if f.endswith(exts):
                yield os.path.join(d, f)


def rel(p):
    return os.path.relpath(p, ROOT)


def code_only(text):
    """text without comments and string literals (kept line for line)"""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'"(\\.|[^"\\\n])*"', '""', text)


# 1. functions over LIMIT lines (a definition starts at column 0 and ends at the "}" in column 0)
for path in src_files("src"):
    if "/kernels/" in path:
        continue
    lines = open(path, encoding="utf-8").read().split("\n")
    start = name = None
    for i, line in enumerate(lines):
        if start is None and re.match(r"^[A-Za-z_].*\b([a-z_][a-z0-9_]*)\s*\([^;]*$", line) and not line.startswith(("typedef", "struct", "enum", "#")):
            m = re.search(r"\b([a-z_][a-z0-9_]*)\s*\(", line)
            j = i
            while j < len(lines) and not lines[j].rstrip().endswith(("{", ";")):
                j += 1
            if j < len(lines) and lines[j].rstrip().endswith("{") and "=" not in lines[i].split("(")[0]:
                start, name = i, m.group(1)
        elif start is not None and line.startswith("}"):
            n = i - start + 1
            if n > LIMIT:
                bad.append(f"{rel(path)}:{start + 1}: {name} is {n} lines (at most {LIMIT} outside src/kernels)")
            start = None

# 2. codec families named outside their files
families = ("codec_none", "codec_fp16", "codec_bf16", "codec_quant", "codec_topk", "codec_randk", "codec_randtopk",
            "codec_ms", "codec_lowrank")
family_fields = ("lr_iters", "lr_warm", "ms_sign", "MS_SIGN_", "lowrank_warm")
neutral = ["src/codec/codec.c", "src/codec/spec.c", "src/codec/wrappers.c", "src/codec/object.h", "src/codec/frame.c",
           "src/codec/entropy.c", "src/cli/cmd_codec.c", "src/cli/bench_codecs.c"] + \
          [rel(p) for p in src_files("include")] + [rel(p) for p in src_files("src/pipe")] + [rel(p) for p in src_files("src/run")]
for f in neutral:
    path = os.path.join(ROOT, f)
    if not os.path.exists(path):
        continue
    code = code_only(open(path, encoding="utf-8").read())
    for n, line in enumerate(code.split("\n"), 1):
        for w in families + family_fields:
            if re.search(r"\b" + w + r"\b" if not w.endswith("_") else r"\b" + w, line):
                bad.append(f"{f}:{n}: names codec family detail '{w}' (it belongs in the family's descriptor)")

# 3. architectures named outside src/nn
for sub in ("src/run", "src/pipe", "src/link", "src/codec", "src/cli"):
    for path in src_files(sub):
        code = code_only(open(path, encoding="utf-8").read())
        for n, line in enumerate(code.split("\n"), 1):
            m = re.search(r"\bPZ_ARCH_[A-Z0-9]+", line)
            if m:
                bad.append(f"{rel(path)}:{n}: names the architecture {m.group(0)} (read pz_model_kind_of's row)")

# 4. schedules past the default (pz_pipe_schedule_kind's first) named outside schedule.c
kinds = re.search(r"typedef enum \{([^}]*)\} pz_pipe_schedule_kind", open(os.path.join(ROOT, "src/pipe/pipe.h")).read())
later = [k.split("=")[0].strip() for k in kinds.group(1).split(",") if k.strip()][1:] if kinds else []
for path in list(src_files("src")):
    if path.endswith("src/pipe/schedule.c") or path.endswith("src/pipe/pipe.h"):
        continue
    code = code_only(open(path, encoding="utf-8").read())
    for n, line in enumerate(code.split("\n"), 1):
        for k in later:
            if re.search(r"\b" + k + r"\b", line):
                bad.append(f"{rel(path)}:{n}: names the schedule {k} (the schedules' table, schedule.c, holds them)")

# 5. the Python import circle
for mod in ("pipeline.py", "distributed.py", "__init__.py"):
    path = os.path.join(ROOT, "python/pipezip", mod)
    if os.path.exists(path) and re.search(r"^\s*(from \.torch import|import pipezip\.torch|from pipezip\.torch)", open(path).read(), re.M):
        bad.append(f"python/pipezip/{mod}: imports pipezip.torch (which imports it: a circle)")

for b in bad:
    print(b)
print(f"check_house: {len(bad)} breach{'es' if len(bad) != 1 else ''}")
sys.exit(1 if bad else 0)
