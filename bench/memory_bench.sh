#!/usr/bin/env bash
# memory_bench.sh - memory truth on the demo dataset: for budgets of 64 MiB,
# 256 MiB and 1 GiB, `ringfeed bench` (automatic depth aiming at 6 s of cover
# for a consumer taking 3 ms per batch, so the ready queue fills what the
# budget allows) reports side by side, from one process each, medians of 3
# runs:
#   peak total   the budget's peak (all categories together, batches held by
#                the consumer included), as the loader accounts it
#   RSS growth   peak RSS of the process during open + read (VmHWM, reset
#                just before rf_open) minus its RSS just before rf_open
#   growth/peak  must be within 0.90 .. 1.10
#   peak RSS - budget   must stay below the stated fixed overhead:
#                RSS before rf_open (the process itself) + 16 MiB (threads'
#                stacks, io_uring rings, malloc arenas, decoder contexts)
# Usage: bench/memory_bench.sh [BUILD_DIR]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
CLI=$build/ringfeed
PY=/usr/bin/python3
[ -x "$CLI" ] || { echo "build first: scripts/build.sh" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/rf-memory-bench-XXXXXX")
trap 'rm -rf "$work"' EXIT
"$CLI" bench --json --batches 1 >/dev/null 2>&1 || true   # creates the demo dataset once
args=(--shuffle-window 1 --step-ms 3 --cover 6 --tune-interval 100ms --batches 3000)
echo "demo dataset, ${args[*]} (record windows of 1, so that ready batches rather than a shuffle window fill the budget)"
printf "%-7s %11s %11s %11s %11s %8s %11s %9s %6s\n" budget "peak total" "RSS before" "peak RSS" \
	"RSS growth" growth/ "RSS-budget" overhead ok
printf "%-7s %11s %11s %11s %11s %8s %11s %9s %6s\n" "" "(MiB)" "(MiB)" "(MiB)" "(MiB)" "peak" \
	"(MiB)" "(MiB)" ""
status=0
for b in 64MiB 256MiB 1GiB; do
	for i in 1 2 3; do
		"$CLI" bench --json "${args[@]}" --budget "$b" >"$work/$b-$i.json" 2>/dev/null
	done
	$PY - "$b" "$work/$b-1.json" "$work/$b-2.json" "$work/$b-3.json" <<'PYEOF' || status=1
import json, statistics, sys
M = 1048576
runs = [json.load(open(p)) for p in sys.argv[2:]]
ratio = [d["rss_growth_bytes"] / d["mem_peak_total_bytes"] for d in runs]
d = sorted(runs, key=lambda d: d["rss_growth_bytes"] / d["mem_peak_total_bytes"])[1]  # median run
over = d["rss_peak_bytes"] - d["budget_bytes"]
allowed = d["rss_before_open_bytes"] + 16 * M
ok = 0.9 <= statistics.median(ratio) <= 1.1 and all(
    r["rss_peak_bytes"] - r["budget_bytes"] <= r["rss_before_open_bytes"] + 16 * M for r in runs)
print("%-7s %11.1f %11.1f %11.1f %11.1f %8.3f %11.1f %9.1f %6s" % (
    sys.argv[1], d["mem_peak_total_bytes"] / M, d["rss_before_open_bytes"] / M,
    d["rss_peak_bytes"] / M, d["rss_growth_bytes"] / M, statistics.median(ratio), over / M,
    allowed / M, "yes" if ok else "NO"))
print("        (growth/peak of the 3 runs: %s; peak depth %s, the budget allowing %s)" % (
    ", ".join("%.3f" % r for r in ratio),
    ", ".join("%d" % r["depth_peak_batches"] for r in runs),
    ", ".join("%d" % r["depth_max_batches"] for r in runs)))
sys.exit(0 if ok else 1)
PYEOF
done
exit $status
