#!/usr/bin/env bash
# compare_builds.sh OLD_BUILD NEW_BUILD [ROUNDS] - two builds of ringfeed
# side by side in one run, interleaved (old, new, old, new, ...) so that the
# machine's drift hits both alike; medians over ROUNDS (default 3):
#   engine  `ringfeed bench --decode-limit --json` on the demo dataset:
#           decoded MB/s, the ratio to the in-memory decode limit measured
#           in the same process, and CPU-seconds per decoded GB (the figure
#           that holds still on a noisy machine);
#   http    bench/http_bench.sh (DEMO_BYTES, default 256MiB here; REPEATS=1
#           per round): read over nginx / read local, fetch-only / curl;
#   stall   bench/stall_bench.sh --repeats 1: the consumer's wait fraction
#           of the three loaders (fixed depth 2, auto, auto in a small budget).
# Each figure is printed as old, new and new/old. For refactors ("behaviour
# unchanged, not slower") and for changes that claim a speed-up.
# PARTS="engine" (any of engine, http, stall; default all three) runs only
# those, e.g. the local decode path alone.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
old=${1:?usage: compare_builds.sh OLD_BUILD NEW_BUILD [ROUNDS]}
new=${2:?usage: compare_builds.sh OLD_BUILD NEW_BUILD [ROUNDS]}
rounds=${3:-3}
PY=/usr/bin/python3
for b in "$old" "$new"; do
	[ -x "$b/ringfeed" ] || { echo "compare_builds: no $b/ringfeed (build it first)" >&2; exit 1; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/rf-compare-XXXXXX")
trap 'rm -rf "$work"' EXIT
export DEMO_BYTES=${DEMO_BYTES:-256MiB}
parts=" ${PARTS:-engine http stall} "

"$new/ringfeed" bench --json --batches 1 >/dev/null 2>&1 || true # the demo dataset, once
for ((r = 1; r <= rounds; r++)); do
	for side in old new; do
		b=$old
		[ $side = new ] && b=$new
		if [[ $parts == *" engine "* ]]; then
			echo "round $r/$rounds: $side engine" >&2
			"$b/ringfeed" bench --decode-limit --json >"$work/engine-$side-$r.json" 2>/dev/null
		fi
		if [[ $parts == *" http "* ]]; then
			echo "round $r/$rounds: $side http" >&2
			REPEATS=1 bash "$top/bench/http_bench.sh" "$b" 2>/dev/null | tail -n 1 >"$work/http-$side-$r.json"
		fi
		if [[ $parts == *" stall "* ]]; then
			echo "round $r/$rounds: $side stall" >&2
			RF_CLI=$b/ringfeed bash "$top/bench/stall_bench.sh" --repeats 1 --stalls 2 --json \
				2>/dev/null | tail -n 1 >"$work/stall-$side-$r.json"
		fi
	done
done

$PY - "$work" "$rounds" <<'PYEOF'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
def load(kind, side):
    out = []
    for r in range(1, rounds + 1):
        try:
            out.append(json.load(open("%s/%s-%s-%d.json" % (work, kind, side, r))))
        except (OSError, ValueError):
            pass
    return out
def med(rows, f):
    v = [f(x) for x in rows]
    v = [x for x in v if x == x]
    return statistics.median(v) if v else float("nan")
figs = [
    ("engine decoded MB/s", "engine", lambda d: d["decoded_bytes_per_s"] / 1e6),
    ("engine ratio to decode limit", "engine", lambda d: d["decode_ratio"]),
    ("engine CPU-s per decoded GB", "engine", lambda d: d["cpu_s_per_decoded_gb"]),
    ("engine CPU per GB / decode limit's", "engine", lambda d: d["cpu_ratio"]),
    ("http read nginx / local", "http", lambda d: d["ratio_read"]),
    ("http fetch-only / curl (speed)", "http", lambda d: d["ratio_fetch"]),
    ("stall (a) depth 2: wait fraction", "stall", lambda d: d["configs"]["a"]["wait"]),
    ("stall (b) auto: wait fraction", "stall", lambda d: d["configs"]["b"]["wait"]),
    ("stall (c) small budget: wait fraction", "stall", lambda d: d["configs"]["c"]["wait"]),
]
print("%-40s %10s %10s %8s" % ("figure (medians of %d rounds)" % rounds, "old", "new", "new/old"))
summary = {}
for name, kind, f in figs:
    try:
        o, n = med(load(kind, "old"), f), med(load(kind, "new"), f)
    except (KeyError, TypeError):
        o = n = float("nan")
    ratio = n / o if o and o == o and n == n else float("nan")
    print("%-40s %10.3f %10.3f %8.3f" % (name, o, n, ratio))
    summary[name] = {"old": o, "new": n}
print(json.dumps(summary))
PYEOF
