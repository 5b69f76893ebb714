#!/usr/bin/env bash
# mix_bench.sh - issue 25's rate goal: a 2-source mixture of the same bytes
# against the one dataset, side by side in one run. The demo dataset (8
# shards) is read whole as one dataset, then as a mixture of its first 4 and
# last 4 shards weighted by their record counts (so the mixture epoch is the
# same records). Each is read REPEATS times alternately (read --digest, one
# epoch); reported: medians of wall seconds and of CPU seconds (user + sys,
# noisy machines: CPU-seconds are the figure), and their ratios.
# Usage: bench/mix_bench.sh [BYTES (default 384MiB)] [REPEATS (default 3)]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
cli=${RF_CLI:-$src/build/ringfeed}
bytes=${1:-384MiB}
reps=${2:-3}
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-mixbench.XXXXXX")
trap 'rm -rf "$T"' EXIT
echo "mix_bench: packing the demo ($bytes, 8 shards)" >&2
"$cli" pack --demo -o "$T/d" --demo-bytes "$bytes" --demo-shards 8 >/dev/null
mkdir -p "$T/s1" "$T/s2"
{ echo '# ringfeed manifest v1'; sed -n '2,5p' "$T/d/manifest.rfm" | sed "s|^|$T/d/|"; } >"$T/s1/m.rfm"
{ echo '# ringfeed manifest v1'; sed -n '6,9p' "$T/d/manifest.rfm" | sed "s|^|$T/d/|"; } >"$T/s2/m.rfm"
n1=$(awk -F'\t' 'NR > 1 { s += $3 } END { print s }' "$T/s1/m.rfm")
n2=$(awk -F'\t' 'NR > 1 { s += $3 } END { print s }' "$T/s2/m.rfm")
printf '# ringfeed mixture v1\n%s\t%s\n%s\t%s\n' "$n1" "$T/s1/m.rfm" "$n2" "$T/s2/m.rfm" >"$T/mix.txt"
run() { # LABEL ARGS...: one read; prints "wall cpu"
	local label=$1
	shift
	/usr/bin/time -f '%e %U %S' -o "$T/time" "$cli" read --digest "$@" >"$T/out.$label" 2>/dev/null
	awk '{ printf "%s %.3f\n", $1, $2 + $3 }' "$T/time"
}
: >"$T/one"
: >"$T/mix"
for r in $(seq 1 "$reps"); do
	echo "mix_bench: repeat $r/$reps" >&2
	run one "$T/d/manifest.rfm" >>"$T/one"
	run mix --mixture "$T/mix.txt" >>"$T/mix"
done
recs1=$(grep -o 'records=[0-9]*' "$T/out.one")
recs2=$(grep -o 'records=[0-9]*' "$T/out.mix")
med() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
w1=$(cut -d' ' -f1 "$T/one" | med)
c1=$(cut -d' ' -f2 "$T/one" | med)
w2=$(cut -d' ' -f1 "$T/mix" | med)
c2=$(cut -d' ' -f2 "$T/mix" | med)
echo "one dataset: $recs1, wall ${w1}s, cpu ${c1}s (medians of $reps)"
echo "mixture:     $recs2, wall ${w2}s, cpu ${c2}s"
awk -v w1="$w1" -v w2="$w2" -v c1="$c1" -v c2="$c2" 'BEGIN {
	printf "mixture rate vs one dataset: %.2fx by wall, %.2fx by cpu-seconds\n", w1 / w2, c1 / c2 }'
