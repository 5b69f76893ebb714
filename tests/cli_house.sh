#!/usr/bin/env bash
# cli_house.sh - the engine's house rules, checked on the source text (no
# build needed, a second or less):
#   - a stage's state (its struct, pointed to by rf_engine as e->NAME and
#     wired once in rf_engine_new) is written only by its owner's .c file;
#     every other file calls the owner's small named functions (rf_coll_kick,
#     rf_ready_push, ...) and passes the pointer to no other function;
#   - a named machine's state field is written only inside its mover (one
#     function in one file): the engine's open phase, shard opens, units and
#     their sub-states, and the fetch layer's HTTP transfers.
# The stages and machines are the two tables below: the only place that
# says who owns what. A write is an assignment (=, op=), ++/--, a copy
# into the field (memcpy, snprintf, ...), or taking its address (the
# address could be written through). Comments are ignored. Fails naming the
# file, line and rule; prints the counts either way.
#   RF_HOUSE_REPORT=1 also lists the writes from outside each owner (figures).
set -euo pipefail
SRC=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
command -v python3 >/dev/null || { echo "SKIP: python3 not found"; exit 77; }
[ -d "$SRC/engine" ] || { echo "SKIP: no engine/ under $SRC"; exit 77; }

exec python3 - "$SRC" <<'PYEOF'
import os, re, sys

src = sys.argv[1]

# ---- the table of stages: (stage, rf_engine member, owner file, its header).
# The owner's header may hold the stage's small inline movers (rf_coll_kick:
# units.c and sched.c call them, and a call into collator.c from there would
# close a circle between the files); they take the stage struct, as in
# rf_coll_kick(e->coll), which is no write by the caller.
STAGES = [
    ("scheduler",   "sched", "engine/sched.c",    "engine/scheduler.h"),
    ("unit ring",   "ring",  "engine/units.c",    "engine/ring.h"),
    ("decode",      "seqs",  "engine/decode.c",   "engine/decode.h"),
    ("collator",    "coll",  "engine/collator.c", "engine/collator.h"),
    ("fill queue",  "fill",  "engine/collator.c", "engine/collator.h"),
    ("ready queue", "ready", "engine/ready.c",    "engine/ready.h"),
    ("open phase",  "open",  "engine/open.c",     "engine/open.h"),
    ("recycling",   "recycle", "engine/recycle.c", "engine/recycle.h"),
    ("consumer",    "cons",  "engine/api.c",      "engine/consumer.h"),
    ("memory-wait", "memwait", "engine/units.c",  "engine/memwait.h"),
]
# rf_engine_house_wire (engine.h; rf_engine_new calls it once) points
# rf_engine at each stage's state.
WIRING = ("engine/engine.h", "rf_engine_house_wire")

# ---- the table of named machines: (machine, regex of a write of its state
# field, mover file, mover function)
MACHINES = [
    # (a unit's state is a number: "->state = NULL" is a sequential decoder's
    # state pointer, decode.c)
    ("unit", r"(?:->|\.)state\s*(?:[-+*/|&^]|<<|>>)?=(?!=)(?!\s*NULL\b)",
     "engine/units.c", "rf_unit_set"),
    ("unit sub-state", r"->(?:sub|more|again|seq_wait)\s*(?:[-+*/|&^]|<<|>>)?=(?!=)",
     "engine/units.c", "rf_unit_sub_set"),
    ("open phase", r"->open(?:\.|->)(?:phase|stage|go)\s*(?:[-+*/|&^]|<<|>>)?=(?!=)",
     "engine/open.c", "rf_open_phase_set"),
    ("shard open", r"\b\w+->stage\s*(?:[-+*/|&^]|<<|>>)?=(?!=)",
     "engine/open.c", "rf_open_stage_set"),
    # an HTTP transfer (fetch/http_int.h: rf_http_xfer.state), in the files
    # that see transfers: the client, its signers and the remote kind (the
    # fault injector's reads have a machine of their own, inject.c)
    ("HTTP transfer", r"(?:->|\.)state\s*(?:[-+*/|&^]|<<|>>)?=(?!=)",
     "fetch/http_xfer.c", "rf_xfer_move", r"^fetch/(?:http|s3|azure|remote|creds|stores|source)"),
]

COPIERS = r"(?:memset|memcpy|memmove|strcpy|strncpy|snprintf|vsnprintf|rf_strlcpy|rf_msg_copy)"
PATH = r"(?:(?:\.|->)\w+(?:\[[^\]]*\])*)*"


def stage_write_res(member):
    lhs = r"\b\w+\)?->" + member + r"\b" + PATH
    bare = r"\b\w+\)?->" + member + r"\s*"
    return [
        re.compile(lhs + r"\s*(?:[-+*/%|&^]|<<|>>)?=(?!=)"),     # assignment
        re.compile(r"(?:\+\+|--)\s*" + lhs),                     # ++x
        re.compile(lhs + r"\s*(?:\+\+|--)"),                     # x++
        re.compile(r"(?:^|[(,=!?:;{]|\breturn)\s*&\s*\(?\s*\w+\)?->" + member + r"\b"),  # &e->x
        re.compile(COPIERS + r"\s*\(\s*" + lhs + r"\s*,"),     # copy into it
        re.compile(r"[(,]\s*" + bare + r"[,)]"),   # the stage's pointer handed to a function
        re.compile(r"^(?!\s*const\b).*=\s*" + bare + r";"),  # ... or kept in a non-const alias
    ]


def join_continuations(lines):
    """A member access broken over lines (e->ring / ->rereads_head--) is
    checked as one line; the line count stays."""
    out = list(lines)
    for i in range(len(out) - 1):
        if re.match(r"\s*(?:->|\.)\w", out[i + 1]) and not out[i].rstrip().endswith(";"):
            out[i] = out[i].rstrip() + out[i + 1].strip()
            out[i + 1] = ""
    return out


def strip_comments(text):
    """Blanks comments and string literals, keeping line breaks."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif c == '"' or c == "'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(lines):
    """(name, first, last) of each function defined at the top level."""
    out, name, first, depth = [], None, 0, 0
    for i, line in enumerate(lines):
        if depth == 0:
            m = re.match(r"^[A-Za-z_].*?\b(\w+)\s*\(", line)
            if m and not line.rstrip().endswith(";"):
                name, first = m.group(1), i
        depth += line.count("{") - line.count("}")
        if depth == 0 and name and "}" in line:
            out.append((name, first, i))
            name = None
    return out


files = []
for top in ("engine", "base", "shards", "fetch", "tools", "python", "include"):
    d = os.path.join(src, top)
    for root, _, names in os.walk(d):
        for f in sorted(names):
            if f.endswith((".c", ".h")):
                files.append(os.path.relpath(os.path.join(root, f), src))
files.sort()
text = {}
for f in files:
    with open(os.path.join(src, f), encoding="utf-8", errors="replace") as fh:
        text[f] = join_continuations(strip_comments(fh.read()).split("\n"))

for stage, member, owner, header in STAGES:
    for f in (owner, header):
        if not os.path.isfile(os.path.join(src, f)):
            print("FAIL: the table names %s as the %s's owner: no such file" % (f, stage))
            sys.exit(1)

bad = []
report = os.environ.get("RF_HOUSE_REPORT") == "1"
total_out = 0
# The files that see rf_engine: engine/ files that include engine.h (the
# others' ->ring or ->ready are other structs).
engine_files = [f for f in files if f.startswith("engine/") and
                any(re.match(r'\s*#\s*include\s+"engine\.h"', l)
                    for l in open(os.path.join(src, f), encoding="utf-8", errors="replace"))]
for stage, member, owner, header in STAGES:
    res = stage_write_res(member)
    mover_arg = re.compile(r"\brf_" + member + r"\w*_\w+\(\s*\w+->" + member + r"\s*[,)]")
    wiring = re.compile(r"^\s*\w+->" + member + r"\s*=\s*&\s*\w+->" + member + r"\s*;")
    wire_spans = [(a, b) for name, a, b in functions(text[WIRING[0]]) if name == WIRING[1]]
    n_owner = n_out = touched = 0
    for f in sorted(set(engine_files + [header])):
        if f not in (owner, header):
            touched += sum(len(re.findall(r"->" + member + r"->", l)) for l in text[f])
        for ln, line in enumerate(text[f], 1):
            line = mover_arg.sub("rf_mover(", line)
            if (f == WIRING[0] and wiring.search(line)
                    and any(a < ln <= b + 1 for a, b in wire_spans)):
                continue
            if any(r.search(line) for r in res):
                if f in (owner, header):
                    n_owner += 1
                    continue
                n_out += 1
                if report:
                    print("  %s:%d: %s" % (f, ln, line.strip()))
                bad.append("%s:%d: writes the %s's state (e->%s), which only %s may write: "
                           "call a function of %s\n    %s"
                           % (f, ln, stage, member, owner, owner, line.strip()))
    total_out += n_out
    print("stage %-12s e->%-6s owner %-20s writes: %3d by the owner, %3d outside"
          " (touched %d times outside)" % (stage, member, owner, n_owner, n_out, touched))


for machine, rx, mfile, mover, *scope in MACHINES:
    r = re.compile(rx)
    in_scope = re.compile(scope[0] if scope else r"^engine/")
    if not os.path.isfile(os.path.join(src, mfile)):
        print("FAIL: the table names %s as the %s machine's file: no such file" % (mfile, machine))
        sys.exit(1)
    spans = [(a, b) for name, a, b in functions(text[mfile]) if name == mover]
    if not spans:
        print("FAIL: %s defines no %s (the %s machine's mover)" % (mfile, mover, machine))
        sys.exit(1)
    n_in = n_out = 0
    for f in files:
        if not in_scope.search(f):
            continue
        for ln, line in enumerate(text[f], 1):
            if not r.search(line):
                continue
            if f == mfile and any(a < ln <= b + 1 for a, b in spans):
                n_in += 1
                continue
            n_out += 1
            bad.append("%s:%d: writes the %s machine's state outside its mover %s (%s)\n    %s"
                       % (f, ln, machine, mover, mfile, line.strip()))
    print("machine %-15s mover %s (%s): %d writes inside, %d outside"
          % (machine, mover, mfile, n_in, n_out))

if bad:
    print("FAIL: %d writes break the house rules:" % len(bad))
    for b in bad:
        print("  " + b)
    sys.exit(1)
print("OK: every stage's state is written only by its owner; every machine moves only "
      "through its mover")
PYEOF
