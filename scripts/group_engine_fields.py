#!/usr/bin/env python3
"""owners-rename.py [REPO] - groups rf_engine's mutex-guarded fields into
sub-structures by owner (issue 12, item 4), and rewrites every access.

  e->sched_seq    -> e->sched.seq       (the scheduler, loop thread)
  e->coll_pos     -> e->coll.pos        (the collator)
  e->fillq_head   -> e->fill.q_head     (the fillers)
  e->ready_head   -> e->ready.head      (the ready queue and held batches)
  e->ring         -> e->ring.slots      (the unit ring and its queues)
  e->st_batches   -> e->st.batches      (counters and measurements)
  e->open_done    -> e->open.done       (the open phase)

What it does, from the table FIELDS below (old field -> group.new name):
  1. engine/engine.h: inside `typedef struct rf_engine { ... } rf_engine;`
     each listed field's declaration (type, array size, trailing comment)
     moves into `struct rf_engine_<group> { ... } <group>;`, placed where the
     group's first field was; declarations that list several fields are
     split as needed; a section comment left with nothing under it goes.
  2. every C file under engine/ and tests/ (and bench/, fuzz/, tools/) that
     names rf_engine: `e->old` becomes `e->group.new` (only through a
     variable called `e`, which is how every engine file and test names its
     engine; anything else named `e` with such a field fails the build,
     which is the check).

Re-runnable: a field already moved (no longer declared at the top level of
rf_engine) is not moved again, and an access already of the form
`e->group.new` is left alone; a field in the table that does not exist any
more is reported and skipped. So after merging branches that add or rename
fields, run it again: new accesses to old names are rewritten, new fields
not in the table stay where they are (add them to the table to move them).
Prints what it changed; exits 1 if a listed group would get no field.
Run clang-format on the changed files afterwards (it does not format).
"""
import os
import re
import sys

# old field -> (group, new name). Order within a group is the order of the
# fields in the struct (the group keeps the struct's order).
GROUPS = {
    "open": "the open phase: the loop thread reads every shard's footer and index; rf_open waits (mu)",
    "sched": "the scheduler's cursor (loop thread; published under mu)",
    "ring": "the unit ring and its queues (mu; slots by state, see units.c)",
    "coll": "the collator (one worker at a time; mu) and the stream's end",
    "fill": "batches planned by the collator, waiting for a worker to fill them (mu)",
    "ready": "the ready queue and the batches the consumer holds (mu)",
    "st": "counters and measurements for the stats and the controller (mu)",
}
FIELDS = {
    # open phase
    "open_stage": ("open", "stage"),
    "go": ("open", "go"),
    "open_code": ("open", "code"),
    "open_msg": ("open", "msg"),
    "open_next": ("open", "next"),
    "open_inflight": ("open", "inflight"),
    "open_done": ("open", "done"),
    "open_slots": ("open", "slots"),
    "open_slots_n": ("open", "slots_n"),
    "open_free": ("open", "free"),
    "open_waiting": ("open", "waiting"),
    "open_wait": ("open", "wait"),
    "open_failed": ("open", "failed"),
    "open_failed_idx": ("open", "failed_idx"),
    "open_transient_bytes": ("open", "transient_bytes"),
    "open_meta_bytes": ("open", "meta_bytes"),
    # scheduler
    "p_sched": ("sched", "plan"),
    "sched_epoch": ("sched", "epoch"),
    "sched_unit": ("sched", "unit"),
    "sched_seq": ("sched", "seq"),
    "sched_next_first": ("sched", "next_first"),
    "sched_done": ("sched", "done"),
    "reads_inflight": ("sched", "reads_inflight"),
    "parked": ("sched", "parked"),
    "need_global": ("sched", "need_global"),
    "sched_wait_budget": ("sched", "wait_budget"),
    # unit ring
    "ring": ("ring", "slots"),
    "ring_units": ("ring", "units"),
    "tail_seq": ("ring", "tail_seq"),
    "frontier_seq": ("ring", "frontier_seq"),
    "jobs": ("ring", "jobs"),
    "jobs_head": ("ring", "jobs_head"),
    "jobs_tail": ("ring", "jobs_tail"),
    "rereads": ("ring", "rereads"),
    "rereads_head": ("ring", "rereads_head"),
    "rereads_tail": ("ring", "rereads_tail"),
    "decoding": ("ring", "decoding"),
    # collator
    "p_coll": ("coll", "plan"),
    "collating": ("coll", "running"),
    "coll_kick": ("coll", "kick"),
    "coll_wait_budget": ("coll", "wait_budget"),
    "coll_epoch": ("coll", "epoch"),
    "coll_pos": ("coll", "pos"),
    "coll_batch": ("coll", "batch"),
    "coll_global": ("coll", "global"),
    "coll_base_seq": ("coll", "base_seq"),
    "coll_records": ("coll", "records"),
    "coll_global_start": ("coll", "global_start"),
    "coll_first_unit": ("coll", "first_unit"),
    "coll_hint_unit": ("coll", "hint_unit"),
    "coll_total_records": ("coll", "total_records"),
    "coll_batches": ("coll", "batches"),
    "coll_final": ("coll", "final"),
    "final_code": ("coll", "final_code"),
    "final_msg": ("coll", "final_msg"),
    "coll_skip_blocks": ("coll", "skip_blocks"),
    "coll_skip_records": ("coll", "skip_records"),
    "skip_log": ("coll", "skip_log"),
    "skips": ("coll", "skips"),
    # fillers
    "fillq": ("fill", "q"),
    "fillq_head": ("fill", "q_head"),
    "fillq_tail": ("fill", "q_tail"),
    "fill_scan": ("fill", "scan"),
    "fill_epoch": ("fill", "epoch"),
    "fill_pos": ("fill", "pos"),
    # ready queue
    "ready": ("ready", "q"),
    "ready_head": ("ready", "head"),
    "ready_tail": ("ready", "tail"),
    "held": ("ready", "held"),
    "held_list": ("ready", "held_list"),
    # stats and measurements
    "st_skipped_records": ("st", "skipped_records"),
    "ep_first": ("st", "ep_first"),
    "ep_next": ("st", "ep_next"),
    "t_open_ns": ("st", "t_open_ns"),
    "st_batches": ("st", "batches"),
    "st_records": ("st", "records"),
    "st_payload": ("st", "payload"),
    "st_decoded_bytes": ("st", "decoded_bytes"),
    "st_fetched_bytes": ("st", "fetched_bytes"),
    "st_blocks": ("st", "blocks"),
    "st_wait_ns": ("st", "wait_ns"),
    "st_produced": ("st", "produced"),
    "st_fetch_errors": ("st", "fetch_errors"),
    "st_fetch_retries": ("st", "fetch_retries"),
    "st_fetch_hedges": ("st", "fetch_hedges"),
    "st_fetch_hedges_won": ("st", "fetch_hedges_won"),
    "st_rereads": ("st", "rereads"),
    "q_samples": ("st", "q_samples"),
    "q_empty": ("st", "q_empty"),
    "q_full": ("st", "q_full"),
    "q_swings": ("st", "q_swings"),
    "q_last_extreme": ("st", "q_last_extreme"),
    "lat_ms": ("st", "lat_ms"),
    "lat_count": ("st", "lat_count"),
    "last_return_ns": ("st", "last_return_ns"),
    "waiting_since_ns": ("st", "waiting_since_ns"),
    "st_busy_ns": ("st", "busy_ns"),
    "st_decode_ns": ("st", "decode_ns"),
    "st_reads": ("st", "reads"),
    "st_read_records": ("st", "read_records"),
    "st_batch_reserved": ("st", "batch_reserved"),
    "q_held_back": ("st", "q_held_back"),
    "iv_pause_ns": ("st", "iv_pause_ns"),
    "pauses": ("st", "pauses"),
    "pause_longest_ns": ("st", "pause_longest_ns"),
    "pause_longest_shard": ("st", "pause_longest_shard"),
}

# Section comments of rf_engine that the grouping makes wrong: new text, or
# None to drop (the group's own comment says it).
SECTIONS = {
    "/* plans */": None,
    "/* scheduler cursor (loop thread; published under mu) */": None,
    "/* unit ring */": None,
    "/* ready queue */": None,
    "/* collation (one worker at a time) */": "/* waits for memory (mu) */",
    "/* skip policy (collator; mu): bounds, this epoch's counts, the log */":
        "/* skip policy bounds (set at open; this epoch's counts and the log: coll) */",
    "/* measurements for the controller (control.c); mu */": "/* the controller (control.c); mu */",
}

STRUCT_OPEN = "typedef struct rf_engine {"
STRUCT_CLOSE = "} rf_engine;"


def strip_comments(s):
    return re.sub(r"/\*.*?\*/", " ", s, flags=re.S)


def statements(body):
    """Splits a struct body into items: ('text', lines) for comment/blank
    lines and ('decl', code, lines) for one declaration with its comments
    (leading comment lines stay 'text'; a trailing comment that starts on
    the declaration's last line, and its continuation lines, go with it)."""
    lines = body.split("\n")
    items, i = [], 0
    while i < len(lines):
        line = lines[i]
        code = strip_comments(line).strip()
        if not code:
            # a comment (maybe multi-line) or a blank line
            if "/*" in line and "*/" not in line:
                j = i
                while "*/" not in lines[j]:
                    j += 1
                items.append(("text", lines[i:j + 1]))
                i = j + 1
            else:
                items.append(("text", [line]))
                i += 1
            continue
        # a declaration: up to the line with its ';' at brace depth 0
        j, depth, buf = i, 0, []
        while True:
            c = strip_comments(lines[j])
            buf.append(lines[j])
            depth += c.count("{") - c.count("}")
            if depth == 0 and ";" in c:
                break
            j += 1
        # a trailing comment left open on the last line continues below
        last = lines[j]
        if last.count("/*") > last.count("*/"):
            k = j + 1
            while "*/" not in lines[k]:
                k += 1
            buf.extend(lines[j + 1:k + 1])
            j = k
        items.append(("decl", strip_comments("\n".join(buf)).strip(), buf))
        i = j + 1
    return items


DECL_RE = re.compile(r"^(\**)\s*(\w+)\s*((?:\[[^\]]*\])*)\s*$")


def split_decl(code):
    """'uint64_t a, *b[4]' -> ('uint64_t', [('', 'a', ''), ('*', 'b', '[4]')]);
    None for what it does not understand (nested structs, function pointers)."""
    code = code.rstrip(";").strip()
    if "{" in code or "(" in code:
        m = re.match(r"^(struct\s+\w+\s*\{.*\})\s*(.*)$", code, re.S)
        if not m:
            return None
        typ, rest = m.group(1), m.group(2)
        parts = [p.strip() for p in rest.split(",")]
    else:
        parts = [p.strip() for p in code.split(",")]
        m = re.match(r"^(.*?)((?:\*\s*)*\w+\s*(?:\[[^\]]*\])*)$", parts[0], re.S)
        if not m:
            return None
        typ, parts[0] = m.group(1).strip(), m.group(2).strip()
    decls = []
    for p in parts:
        m = DECL_RE.match(p.replace(" ", "") if p.startswith("*") else p)
        if not m:
            return None
        decls.append((m.group(1), m.group(2), m.group(3)))
    return typ, decls


def trailing_comment(lines):
    """The comment after a declaration's ';' (and its continuation)."""
    text = "\n".join(lines)
    blanked = re.sub(r"/\*.*?\*/", lambda m: " " * len(m.group(0)), text, flags=re.S)
    idx = blanked.rfind(";")
    rest = text[idx + 1:]
    m = re.search(r"/\*.*?\*/", rest, re.S)
    return m.group(0) if m else ""


def rewrite_struct(h):
    a = h.index(STRUCT_OPEN) + len(STRUCT_OPEN)
    b = h.index(STRUCT_CLOSE, a)
    body = h[a:b]
    items = statements(body)
    def is_group(code):
        return re.match(r"^struct\s+rf_engine_\w+\s*\{", code) is not None

    present = set()
    for it in items:
        if it[0] == "decl" and not is_group(it[1]):
            sd = split_decl(it[1])
            if sd:
                present.update(n for _, n, _ in sd[1])
    moving = {f: g for f, g in FIELDS.items() if f in present}
    missing = [f for f in FIELDS if f not in present]
    groups = {}  # group -> list of member lines
    first_at = {}  # group -> index in out where it goes
    out = []
    for it in items:
        if it[0] == "text":
            key = "\n".join(l.strip() for l in it[1])
            if moving and key in SECTIONS:
                if SECTIONS[key] is None:
                    continue
                it = ("text", ["\t" + SECTIONS[key]])
            out.append(("text", it[1]))
            continue
        code, lines = it[1], it[2]
        if is_group(code):  # a group from an earlier run: new members join it
            g = re.match(r"^struct\s+rf_engine_(\w+)", code).group(1)
            first_at.setdefault(g, len(out))
            out.append(("existing", (g, lines)))
            continue
        sd = split_decl(code)
        if not sd or not any(n in moving for _, n, _ in sd[1]):
            out.append(("text", lines))
            continue
        typ, decls = sd
        comment = trailing_comment(lines)
        stay = [d for d in decls if d[1] not in moving]
        moved = {}
        for d in decls:
            if d[1] in moving:
                g, new = moving[d[1]]
                moved.setdefault(g, []).append((d[0], new, d[2]))
        for g, ds in moved.items():
            member = "%s %s;" % (typ, ", ".join(s + n + arr for s, n, arr in ds))
            if comment and not stay and len(moved) == 1:
                member += " " + comment
            groups.setdefault(g, []).append(member)
            if g not in first_at:
                first_at[g] = len(out)
                out.append(("group", g))
        if stay:
            line = "\t%s %s;" % (typ, ", ".join(s + n + arr for s, n, arr in stay))
            if comment:
                line += " " + comment
            out.append(("text", line.split("\n")))
    # render
    rendered = []
    def members(g):
        mem = []
        for m in groups.get(g, []):
            if "{" in m:  # a nested struct: clang-format indents it
                mem.extend("\t\t" + l.strip() for l in m.split("\n"))
            else:  # one line; clang-format reflows a long comment
                mem.append("\t\t" + " ".join(l.strip() for l in m.split("\n")))
        return mem

    for kind, v in out:
        if kind == "text":
            rendered.append(("text", v))
        elif kind == "existing":
            g, lines = v
            rendered.append(("group", lines[:-1] + members(g) + lines[-1:]))
        else:
            g = v
            mem = []
            for m in groups[g]:
                if "{" in m:  # a nested struct: clang-format indents it
                    mem.extend("\t\t" + l.strip() for l in m.split("\n"))
                else:  # one line; clang-format reflows a long comment
                    mem.append("\t\t" + " ".join(l.strip() for l in m.split("\n")))
            block = ["\t/* %s */" % GROUPS[g], "\tstruct rf_engine_%s {" % g] + mem + ["\t} %s;" % g]
            rendered.append(("group", block))
    # drop comment-only blocks left with nothing under them (the next
    # non-blank item is another comment, or the end)
    final = []
    for i, (kind, v) in enumerate(rendered):
        if kind == "text" and all(l.strip().startswith(("/*", "*")) or not l.strip() for l in v) \
                and any(l.strip() for l in v):
            j = i + 1
            while j < len(rendered) and rendered[j][0] == "text" and \
                    all(not l.strip() for l in rendered[j][1]):
                j += 1
            nxt = rendered[j] if j < len(rendered) else None
            orphan = nxt is None or (nxt[0] == "text" and all(
                l.strip().startswith(("/*", "*")) or not l.strip() for l in nxt[1]))
            if orphan:
                continue
        final.extend(v)
    # collapse runs of blank lines
    text, prev_blank = [], False
    for l in final:
        blank = not l.strip()
        if blank and prev_blank:
            continue
        text.append(l)
        prev_blank = blank
    return h[:a] + "\n".join(text) + h[b:], moving, missing


def access_pattern(old, group, new):
    members = [n for f, (g, n) in FIELDS.items() if g == old] if old in GROUPS else []
    guard = ""
    if members:  # `e->ring.slots` is already new: not the old field `ring`
        guard = r"(?!\s*\.\s*(?:%s)\b)" % "|".join(map(re.escape, members))
    return re.compile(r"\be->\s*%s\b%s" % (re.escape(old), guard))


def rewrite_accesses(text, fields):
    n = 0
    for old, (g, new) in fields.items():
        pat = access_pattern(old, g, new)
        text, k = pat.subn("e->%s.%s" % (g, new), text)
        n += k
    return text, n


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.getcwd()
    hpath = os.path.join(root, "engine", "engine.h")
    h = open(hpath).read()
    h2, moving, missing = rewrite_struct(h)
    for f in missing:
        print("note: %s is not a top-level field of rf_engine (moved already, or gone)" % f)
    # accesses: every field of the table (moved now or before)
    a = h2.index(STRUCT_OPEN)
    b = h2.index(STRUCT_CLOSE, a)
    head, rest = rewrite_accesses(h2[:a], FIELDS)[0], rewrite_accesses(h2[b:], FIELDS)
    h2 = head + h2[a:b] + rest[0]
    changed = []
    if h2 != h:
        open(hpath, "w").write(h2)
        changed.append("engine/engine.h")
    for d in ("engine", "tests", "bench", "fuzz", "tools"):
        top = os.path.join(root, d)
        if not os.path.isdir(top):
            continue
        for dirpath, _, files in os.walk(top):
            for fn in sorted(files):
                if not fn.endswith((".c", ".h")) or (d == "engine" and fn == "engine.h"):
                    continue
                p = os.path.join(dirpath, fn)
                t = open(p, errors="surrogateescape").read()
                if "rf_engine" not in t:
                    continue
                t2, n = rewrite_accesses(t, FIELDS)
                if t2 != t:
                    open(p, "w", errors="surrogateescape").write(t2)
                    changed.append("%s (%d)" % (os.path.relpath(p, root), n))
    print("moved %d field(s) into groups; changed: %s" % (len(moving), ", ".join(changed) or "nothing"))
    used = {g for g, _ in FIELDS.values()}
    empty = [g for g in GROUPS if g not in used]
    if empty:
        print("error: groups with no field: %s" % ", ".join(empty))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
