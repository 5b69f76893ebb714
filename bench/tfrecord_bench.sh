#!/usr/bin/env bash
# tfrecord_bench.sh - TFRecord of JPEG-like tf.train.Examples against the
# same records packed as .rfs (`ringfeed pack --from files`, zstd level 1:
# the image bytes do not compress, so its blocks are stored, not squeezed),
# read by `ringfeed bench` (consumer doing no work), side by side, medians
# of 3. Goal: TFRecord records/s >= 0.9 x the .rfs's.
# Usage: bench/tfrecord_bench.sh [BUILD_DIR] [RECORDS] [IMAGE_BYTES]
#   (env RF_BENCH_DIR: where the data goes; default a temp dir)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
records=${2:-2000}
image=${3:-100000}
CLI=$build/ringfeed
PY=/usr/bin/python3
[ -x "$CLI" ] || { echo "build first: scripts/build.sh" >&2; exit 1; }
work=$(mktemp -d "${RF_BENCH_DIR:-${TMPDIR:-/tmp}}/rf-tfr-bench-XXXXXX")
trap 'rm -rf "$work"' EXIT
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
field() { $PY -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"; }

shards=8
$PY "$top/tests/tfrecord_write.py" "$work/tfr" --shards $shards --records $((records / shards)) \
	--image-bytes "$image" --seed 1 --dump-records "$work/recs"
"$CLI" pack --from files "$work/recs" -o "$work/rfs" --level 1 \
	--shard-size $(((records / shards) * image)) >/dev/null
rm -rf "$work/recs"
echo "data: $(du -sh "$work/tfr" | cut -f1) TFRecord in $shards files," \
	"$(du -sh "$work/rfs" | cut -f1) .rfs; $records Examples of ~$image image bytes"
cat "$work"/tfr/* "$work"/rfs/* >/dev/null # both in the page cache
printf "  %-4s %10s %10s %9s %9s %11s %11s %8s %8s\n" run "tfr rec/s" "rfs rec/s" \
	"tfr MB/s" "rfs MB/s" "tfr CPU/GB" "rfs CPU/GB" "tfr open" "rfs open"
for i in 1 2 3; do
	"$CLI" bench --json "$work/tfr" >"$work/t$i.json"
	"$CLI" bench --json "$work/rfs" >"$work/r$i.json"
	printf "  %-4s %10.0f %10.0f %9.0f %9.0f %10.2fs %10.2fs %7.2fs %7.2fs\n" $i \
		"$(field "$work/t$i.json" records_per_s)" "$(field "$work/r$i.json" records_per_s)" \
		"$($PY -c "print($(field "$work/t$i.json" decoded_bytes_per_s)/1e6)")" \
		"$($PY -c "print($(field "$work/r$i.json" decoded_bytes_per_s)/1e6)")" \
		"$(field "$work/t$i.json" cpu_s_per_decoded_gb)" "$(field "$work/r$i.json" cpu_s_per_decoded_gb)" \
		"$(field "$work/t$i.json" open_s)" "$(field "$work/r$i.json" open_s)"
done
t=$(for i in 1 2 3; do field "$work/t$i.json" records_per_s; done | median)
r=$(for i in 1 2 3; do field "$work/r$i.json" records_per_s; done | median)
printf "median records/s: TFRecord %.0f, .rfs %.0f, ratio %.3f (goal >= 0.9)\n" "$t" "$r" \
	"$($PY -c "print($t / $r)")"
tc=$(for i in 1 2 3; do field "$work/t$i.json" cpu_s_per_decoded_gb; done | median)
rc=$(for i in 1 2 3; do field "$work/r$i.json" cpu_s_per_decoded_gb; done | median)
printf "median CPU-s per decoded GB: TFRecord %.2f, .rfs %.2f (the open's walk included)\n" "$tc" "$rc"
