#!/usr/bin/env bash
# dist_bench.sh - the figures of the distributed partition (issue 11):
#   1. locality cost: bytes each rank reads in an epoch against its share of
#      the dataset (compressed bytes / world), for worlds 1..256 and shuffle
#      windows of 4096 and 65536 records (a rank reads its own records plus
#      the blocks of the two boundary windows it shares with its neighbours);
#   2. open + plan of a many-shard manifest with world 1024: the manifest
#      repeats one tiny shard N times (N below the open-files limit: every
#      shard keeps its source open for the loader's life).
# Usage: bench/dist_bench.sh [BUILD_DIR]   (env RF_BENCH_DIR: where data goes)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
CLI=$build/ringfeed
PY=/usr/bin/python3
[ -x "$CLI" ] || { echo "build first: scripts/build.sh" >&2; exit 1; }
work=$(mktemp -d "${RF_BENCH_DIR:-${TMPDIR:-/tmp}}/rf-dist-bench-XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"

$PY -c "
import random
random.seed(1)
with open('in.txt', 'w') as f:
    for i in range(400000):
        f.write('r%d:%s\n' % (i, ''.join(random.choices('abcdefghijklmnop', k=random.randint(20, 300)))))
"
"$CLI" pack --from lines in.txt -o ds --block-size 64KiB --shard-size 8MiB >/dev/null
total=$(stat -c %s ds/*.rfs | awk '{s += $1} END {print s}')
echo "1. bytes read per rank per epoch (dataset: 400000 records, $total compressed bytes)"
for win in 4096 65536; do
	for W in 1 4 16 64 256; do
		max=0 sum=0
		for ((r = 0; r < W; r++)); do
			"$CLI" read --world $W --rank $r --shuffle-window $win --batch 64 --threads 1 \
				--stats st.json ds/manifest.rfm >/dev/null
			b=$(grep -o '"fetched_bytes":[0-9]*' st.json | cut -d: -f2)
			sum=$((sum + b))
			[ "$b" -gt "$max" ] && max=$b
		done
		awk -v W=$W -v win=$win -v t=$total -v s=$sum -v m=$max 'BEGIN {
			sh = t / W
			printf "   window %6d world %4d: share %9d B, mean %9d B (%.2fx), max %9d B (%.2fx)\n",
			       win, W, sh, s / W, s / W / sh, m, m / sh }'
	done
done

echo "2. open + plan, world 1024, rank 5"
printf 'a\nb\nc\n' >tiny.txt
"$CLI" pack --from lines tiny.txt -o tiny >/dev/null
limit=$(ulimit -n)
for n in 1000 10000 $((limit - 1000)); do
	$PY -c "
import sys
line = open('tiny/manifest.rfm').read().splitlines()[1]
with open('tiny/m.rfm', 'w') as f:
    f.write('# ringfeed manifest v1\n' + (line + '\n') * $n)
"
	t0=$(date +%s.%N)
	"$CLI" read --world 1024 --rank 5 --budget 8GiB --stats st.json tiny/m.rfm >/dev/null
	t1=$(date +%s.%N)
	awk -v n=$n -v a=$t0 -v b=$t1 'BEGIN { printf "   %8d shards: %.2f s (%.0f us a shard)\n", n, b - a, (b - a) / n * 1e6 }'
done
