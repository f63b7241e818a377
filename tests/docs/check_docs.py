#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_docs.py ROOT — the front door holds: a README of at most 200 lines,
a license and a citation file, every relative link and image in the README
and in docs/ (the sweep reports included) pointing at a file that exists
and, for #anchors, at a heading of that file, and an SPDX identifier in
every source file. Exits 1 naming every defect."""
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
defects = []

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to -"""
    h = re.sub(r"[`*_]", "", heading.strip().lower())
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")


def anchors(path):
    out, fence = set(), False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            fence = not fence
        elif not fence and line.startswith("#"):
            base, n = slug(line.lstrip("#")), 0
            a = base
            while a in out:  # repeated headings get -1, -2, ...
                n += 1
                a = f"{base}-{n}"
            out.add(a)
    return out


def check_links(md):
    text, fence = [], False
    for line in open(md, encoding="utf-8"):
        if line.startswith("```"):
            fence = not fence
            continue
        if not fence:
            text.append(re.sub(r"`[^`]*`", "", line))
    for target in LINK.findall("".join(text)):
        if re.match(r"^[a-z]+:", target):
            continue  # http(s), mailto: not checked offline
        path, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(md), path)) if path else md
        rel = os.path.relpath(md, ROOT)
        if not os.path.exists(dest):
            defects.append(f"{rel}: link to {target}: {os.path.relpath(dest, ROOT)} does not exist")
        elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
            defects.append(f"{rel}: link to {target}: no heading '#{anchor}' in {os.path.relpath(dest, ROOT)}")


readme = os.path.join(ROOT, "README.md")
n = sum(1 for _ in open(readme, encoding="utf-8"))
if n > 200:
    defects.append(f"README.md has {n} lines (at most 200: the rest belongs in docs/)")
for f in ("LICENSE", "CITATION.cff"):
    if not os.path.isfile(os.path.join(ROOT, f)):
        defects.append(f"{f} is missing")
cff = open(os.path.join(ROOT, "CITATION.cff"), encoding="utf-8").read() if os.path.isfile(os.path.join(ROOT, "CITATION.cff")) else ""
for key in ("cff-version:", "title:", "authors:", "license:", "version:"):
    if cff and key not in cff:
        defects.append(f"CITATION.cff has no '{key}'")

pages = [readme]
for d, _, files in os.walk(os.path.join(ROOT, "docs")):
    pages += [os.path.join(d, f) for f in files if f.endswith(".md")]
for md in sorted(pages):
    check_links(md)

SOURCE = re.compile(r"\.(c|h|py|sh|cu|cmake)$|^(CMakeLists\.txt|Makefile)$")
for top in ("src", "include", "tests", "python", "scripts", "bench", "examples", "cmake", ".ci"):
    for d, dirs, files in os.walk(os.path.join(ROOT, top)):
        dirs[:] = [x for x in dirs if x not in ("golden", "corpus", "__pycache__")]
        for f in files:
            p = os.path.join(d, f)
            if SOURCE.search(f) or top == ".ci":
                head = open(p, encoding="utf-8", errors="replace").read(400)
                if "SPDX-License-Identifier:" not in head:
                    defects.append(f"{os.path.relpath(p, ROOT)}: no SPDX-License-Identifier line at its top")

for d in defects:
    print("check_docs:", d)
print(f"check_docs: {len(pages)} pages, {len(defects)} defects")
sys.exit(1 if defects else 0)
