#!/usr/bin/env bash
# scale_bench.sh - what the loader costs as the work grows (issue 17, item 6),
# medians of 3, at the default descriptor limit (ulimit -n 1024):
#   1. manifests of 1,000 / 100,000 / 1,000,000 small local shards (two tiny
#      files listed over and over: the manifest allows it, and every listing is
#      its own shard to open, stat and read the index of): rf_open time and
#      CPU, metadata held after open (RF_MEM_METADATA) per shard, time to the
#      first batch, peak RSS;
#   2. metadata per block (index entry + two plans): one shard of 4,000 blocks
#      against one of 40,000;
#   3. one stats snapshot (rf_stats_json, what every controller interval and
#      trace line pays), at each shard count.
# Usage: bench/scale_bench.sh [BUILD_DIR] [SHARD_COUNTS...]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
shift || true
counts=${*:-1000 100000 1000000}
CLI=$build/ringfeed
PY=/usr/bin/python3
[ -x "$CLI" ] || { echo "build first: scripts/build.sh" >&2; exit 1; }
work=$(mktemp -d "${RF_BENCH_DIR:-${TMPDIR:-/tmp}}/rf-scale-bench-XXXXXX")
trap 'rm -rf "$work"' EXIT
cc -O2 -I"$top/include" "$top/bench/scale_probe.c" -L"$build" -lringfeed \
	-Wl,-rpath,"$build" -o "$work/probe"
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
field() { $PY -c "import json,sys; print(json.loads(open(sys.argv[1]).read())[sys.argv[2]])" "$1" "$2"; }

head -c 800 /dev/urandom >"$work/r.bin"
"$CLI" pack --from fixed:100 "$work/r.bin" -o "$work/ds" --block-size 100 --shard-size 1 >/dev/null
manifest() { # N: a manifest listing the packed shards N times in all
	$PY - "$work/ds/manifest.rfm" "$1" "$work/ds/m$1.rfm" <<'PYEOF'
import sys
lines = open(sys.argv[1]).read().splitlines()[1:]
n = int(sys.argv[2])
with open(sys.argv[3], "w") as f:
    f.write("# ringfeed manifest v1\n")
    for i in range(n):
        f.write(lines[i % len(lines)] + "\n")
PYEOF
}
probe() { # OUT, then the probe's arguments; 3 runs at ulimit -n 1024
	local out=$1; shift
	for i in 1 2 3; do (ulimit -n 1024 && "$work/probe" "$@") >"$out.$i"; done
}
med() { for i in 1 2 3; do field "$1.$i" "$2"; done | median; }

echo "== 1. open cost by shard count (ulimit -n 1024, budget 4GiB, medians of 3)"
printf "  %9s %8s %8s %10s %12s %9s %10s %9s\n" shards open_s cpu_s first_s metadata meta/shard rss_MiB stats_us
for n in $counts; do
	manifest "$n"
	probe "$work/p$n" --budget 4GiB --threads 2 "$work/ds/m$n.rfm"
	meta=$(med "$work/p$n" metadata_bytes)
	printf "  %9d %8.3f %8.3f %10.3f %12d %9.0f %10.0f %9.1f\n" "$n" "$(med "$work/p$n" open_s)" \
		"$(med "$work/p$n" open_cpu_s)" "$(med "$work/p$n" first_batch_s)" "$meta" \
		"$($PY -c "print($meta/$n)")" "$($PY -c "print($(med "$work/p$n" maxrss_kib)/1024)")" \
		"$(med "$work/p$n" stats_json_us)"
	rm -f "$work/ds/m$n.rfm"
done

echo "== 2. metadata per block (one shard of one-record blocks)"
for b in 4000 40000; do
	head -c "$b" /dev/urandom >"$work/b$b.bin"
	"$CLI" pack --from fixed:1 "$work/b$b.bin" -o "$work/b$b" --block-size 1 >/dev/null
	probe "$work/q$b" --budget 1GiB --threads 2 --shuffle_window 16 "$work/b$b"
done
m4=$(med "$work/q4000" metadata_bytes)
m40=$(med "$work/q40000" metadata_bytes)
echo "  4,000 blocks: $m4 bytes; 40,000 blocks: $m40 bytes;" \
	"per block: $($PY -c "print(round(($m40-$m4)/36000, 1))") bytes (index entry + two plans)"
