#!/usr/bin/env bash
# engine_bench.sh - the loader on local shards, measured side by side in one
# run (medians of 3):
#   1. decoded throughput of `ringfeed bench` (consumer doing no work) against
#      the decode limit: every block of the same shards decoded in memory with
#      the same thread count, right after, in the same process (goal >= 0.85);
#   2. 64-byte records delivered per second (goal >= 2 million/s);
#   3. peak RSS against the budget, 64 MiB .. 2 GiB (the fixed overhead is
#      peak RSS minus the budget's peak use).
# Usage: bench/engine_bench.sh [BUILD_DIR]   (env RF_BENCH_DIR: where data goes;
# default: the demo cache dir for the demo, a temp dir for the 64-byte set)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
CLI=$build/ringfeed
PY=/usr/bin/python3
[ -x "$CLI" ] || { echo "build first: scripts/build.sh" >&2; exit 1; }
work=$(mktemp -d "${RF_BENCH_DIR:-${TMPDIR:-/tmp}}/rf-engine-bench-XXXXXX")
trap 'rm -rf "$work"' EXIT
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
field() { $PY -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"; }

echo "== 1. loader vs in-memory decode limit (demo dataset, consumer step 0)"
"$CLI" bench --json --batches 1 >/dev/null 2>&1 || true   # creates the demo dataset once
for i in 1 2 3; do
	"$CLI" bench --decode-limit --json >"$work/d$i.json"
	printf "  run %d: loader %.0f MB/s, decode limit %.0f MB/s, ratio %.3f (threads %s)\n" "$i" \
		"$($PY -c "print($(field "$work/d$i.json" decoded_bytes_per_s)/1e6)")" \
		"$($PY -c "print($(field "$work/d$i.json" decode_limit_bytes_per_s)/1e6)")" \
		"$(field "$work/d$i.json" decode_ratio)" "$(field "$work/d$i.json" threads)"
done
ratio=$(for i in 1 2 3; do field "$work/d$i.json" decode_ratio; done | median)
echo "  median ratio: $ratio (goal >= 0.85)"

echo "== 2. 64-byte records per second"
head -c $((128 << 20)) /dev/urandom >"$work/r64.bin"
"$CLI" pack --from fixed:64 "$work/r64.bin" -o "$work/r64" --level 1 >/dev/null
rm -f "$work/r64.bin"
for batch in 64 1024; do
	for i in 1 2 3; do
		"$CLI" bench --json --batch $batch "$work/r64/manifest.rfm" >"$work/r$batch-$i.json"
	done
	rps=$(for i in 1 2 3; do field "$work/r$batch-$i.json" records_per_s; done | median)
	printf "  batch %4d: median %.2f million records/s (goal >= 2)\n" $batch \
		"$($PY -c "print($rps/1e6)")"
done

echo "== 3. peak RSS against the budget (demo dataset)"
printf "  %-8s %12s %14s %12s %16s\n" budget "peak used" "peak RSS" "RSS-budget" "RSS-peak used"
for b in 64MiB 256MiB 1GiB 2GiB; do
	"$CLI" bench --json --budget $b >"$work/m.json"
	$PY - "$work/m.json" "$b" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1])); M = 1048576
rss, used, budget = d["rss_peak_bytes"], d["mem_peak_total_bytes"], d["budget_bytes"]
print("  %-8s %9.1f MiB %11.1f MiB %9.1f MiB %13.1f MiB" %
      (sys.argv[2], used / M, rss / M, (rss - budget) / M, (rss - used) / M))
PYEOF
done
