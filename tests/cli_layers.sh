#!/usr/bin/env bash
# cli_layers.sh - the library's files reference each other along the layers
# and never in a circle. From the built object files of the CMake object
# libraries (rf_base, rf_shards, rf_fetch, rf_engine) it builds a file-level
# graph with nm (file A -> file B when A references a global symbol B
# defines) and fails, naming the files and symbols, when
#   - two or more library .c files reference each other in a cycle. A
#     reference to a data object counts like a call: a registry naming an
#     implementation's ops table depends on it, so the table sits in a file
#     above the implementations, and the helpers they call in a file below
#     (shards/registry.c over the formats over shards/format.c; fetch.c's
#     kinds over the kinds over fetch/source.c; base/loop_open.c over the
#     backends over base/loop.c);
#   - a base/ file references a symbol of shards/, fetch/ or engine/;
#   - a shards/ or fetch/ file references a symbol of engine/;
#   - an engine/ source names a format's option (read from the sources, not
#     the objects): a key a shards/ file reads through the config getter
#     (rf_fmt_cfg_num / rf_fmt_cfg_str) as RF_CFG_<key> or "<key>", a
#     format's options type (typedef ... rf_*_opts in a shards/ header), or
#     one of those types' specific fields (.seq_len, ->scan_only: a field
#     named as a key or with an underscore). Formats parse their own options;
#     the engine's option table (engine/config.h's X(...) rows) is exempt by
#     construction: it names keys bare, in no quotes.
# Objects of sources that no longer exist (stale in the build tree) are
# ignored. Skips (77) when nm, python3 or the objects are missing.
set -euo pipefail
BUILD=${RF_BUILD_DIR:-}
SRC=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
command -v nm >/dev/null || { echo "SKIP: nm not found"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 not found"; exit 77; }
[ -n "$BUILD" ] && [ -d "$BUILD/CMakeFiles" ] || { echo "SKIP: RF_BUILD_DIR has no CMakeFiles"; exit 77; }

exec python3 - "$BUILD" "$SRC" <<'PYEOF'
import os, subprocess, sys

build, src = sys.argv[1], sys.argv[2]
layers = ("base", "shards", "fetch", "engine")
# What each layer may reference besides itself.
allowed = {"base": set(), "shards": {"base"}, "fetch": {"base"},
           "engine": {"base", "shards", "fetch"}}

objs = {}  # source path relative to src -> object file
# A layer's sources that carry test hooks are compiled into rf_LAYER_ship
# (the shipped objects) instead of rf_LAYER: both are the layer.
tops = [(layer, os.path.join(build, "CMakeFiles", "rf_%s%s.dir" % (layer, v)))
        for layer in layers for v in ("", "_ship")]
for layer, top in tops:
    for root, _, files in os.walk(top):
        for f in files:
            if not f.endswith(".c.o"):
                continue
            obj = os.path.join(root, f)
            rel = os.path.relpath(obj, top)[: -len(".o")]
            # CMake mirrors the source path under the target's dir.
            for cand in (rel, os.path.join(layer, os.path.basename(rel))):
                if cand.split(os.sep)[0] in layers and os.path.isfile(os.path.join(src, cand)):
                    objs[cand] = obj
                    break
if not objs or not any(p.startswith("engine/") for p in objs):
    print("SKIP: no object files of the rf_* object libraries under", build)
    sys.exit(77)

defs, uses, data = {}, {}, set()
for path, obj in sorted(objs.items()):
    out = subprocess.run(["nm", "-P", obj], capture_output=True, text=True)
    if out.returncode != 0:
        print("SKIP: nm failed on", obj, out.stderr.strip())
        sys.exit(77)
    uses[path] = set()
    for line in out.stdout.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            uses[path].add(name)
        elif kind.isupper() and kind not in "UVW":  # global, defined here
            defs.setdefault(name, path)
            if kind != "T":
                data.add(name)

edges = {p: {} for p in objs}  # a -> {b: [symbols]}, every reference (data too)
for a, names in uses.items():
    for n in sorted(names):
        b = defs.get(n)
        if b and b != a:
            edges[a].setdefault(b, []).append(n)
calls = edges  # the cycle check follows every reference, data included

def layer_of(p):
    return p.split("/")[0]

problems = []
for a in sorted(edges):
    for b, names in sorted(edges[a].items()):
        la, lb = layer_of(a), layer_of(b)
        if lb != la and lb not in allowed[la]:
            problems.append("layering: %s (%s/) references %s (%s/): %s"
                            % (a, la, b, lb, ", ".join(names[:4])))

# Strongly connected components (Tarjan, iterative enough for ~100 files).
index, low, onstack, stack, sccs = {}, {}, set(), [], []
counter = [0]
def strong(v):
    index[v] = low[v] = counter[0]; counter[0] += 1
    stack.append(v); onstack.add(v)
    for w in sorted(calls[v]):
        if w not in index:
            strong(w); low[v] = min(low[v], low[w])
        elif w in onstack:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop(); onstack.discard(w); comp.append(w)
            if w == v:
                break
        if len(comp) > 1:
            sccs.append(sorted(comp))
sys.setrecursionlimit(10000)
for v in sorted(calls):
    if v not in index:
        strong(v)

def cycle_in(comp):
    """One concrete cycle through comp's first file, by breadth-first search."""
    inside, start = set(comp), comp[0]
    prev, frontier = {start: None}, [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(calls[v]):
                if w == start:
                    path = [v]
                    while prev[path[-1]] is not None:
                        path.append(prev[path[-1]])
                    return list(reversed(path)) + [start]
                if w in inside and w not in prev:
                    prev[w] = v; nxt.append(w)
        frontier = nxt
    return comp + [comp[0]]

for comp in sccs:
    cyc = cycle_in(comp)
    # a data object's name is marked "[data]": the reference a registry makes
    hops = ["%s -> %s (%s)" % (cyc[i], cyc[i + 1],
                               ", ".join(n + (" [data]" if n in data else "")
                                         for n in calls[cyc[i]][cyc[i + 1]][:3]))
            for i in range(len(cyc) - 1)]
    problems.append("cycle among %s:\n    %s" % (", ".join(comp), "\n    ".join(hops)))

# --- format options stay in shards/: the engine names none of them
import re
def c_code(path):
    """The file's text without comments (strings kept)."""
    text = open(path, encoding="utf-8", errors="replace").read()
    return re.sub(r"/\*.*?\*/|//[^\n]*", lambda m: "\n" * m.group(0).count("\n"), text,
                  flags=re.S)
def sources(folder, exts):
    top = os.path.join(src, folder)
    return sorted(os.path.join(folder, f) for f in os.listdir(top) if f.endswith(exts))
fmt_keys, opt_types, opt_fields = set(), set(), set()
for rel in sources("shards", (".c", ".h")):
    code = c_code(os.path.join(src, rel))
    fmt_keys.update(re.findall(r'rf_fmt_cfg_(?:num|str)\(\s*\w+\s*,\s*"(\w+)"', code))
    for body, name in re.findall(r"typedef struct \w*\s*\{([^{}]*)\}\s*(rf_\w+_opts)\s*;", code):
        opt_types.add(name)
        opt_fields.update(re.findall(r"(\w+)\s*(?:\[[^\]]*\])?\s*;", body))
opt_fields = {f for f in opt_fields if f in fmt_keys or "_" in f}
if not fmt_keys or not opt_types:
    problems.append("format options: found no key read through rf_fmt_cfg_* or no rf_*_opts "
                    "type in shards/ (the check below would check nothing)")
words = [r"RF_CFG_%s\b" % k for k in sorted(fmt_keys)] + ['"%s"' % k for k in sorted(fmt_keys)]
words += [r"\b%s\b" % t for t in sorted(opt_types)]
words += [r"(?:\.|->)\s*%s\b" % f for f in sorted(opt_fields)]
pattern = re.compile("|".join(words))
for rel in sources("engine", (".c", ".h")):
    for n, line in enumerate(c_code(os.path.join(src, rel)).split("\n"), 1):
        found = [m.group(0) for m in pattern.finditer(line)]
        if found:
            problems.append("format option in the engine: %s:%d names %s (a format parses its "
                            "own options from the config getter: shards/format.h, "
                            "rf_fmt_config)" % (rel, n, ", ".join(found)))
print("format options: %d keys, %d types, %d fields kept out of engine/"
      % (len(fmt_keys), len(opt_types), len(opt_fields)))

print("files %d, references between files %d" % (len(edges), sum(len(v) for v in edges.values())))
if problems:
    for p in problems:
        print("FAIL:", p, file=sys.stderr)
    sys.exit(1)
print("ok: no cycle, every reference runs down the layers")
PYEOF
