#!/usr/bin/env bash
# direct_bench.sh - local reads past the page cache (issue 17, item 3), side
# by side in one run, medians of 3 rounds:
#   ringfeed bench --fetch-only --direct-io on   (O_DIRECT, io_uring)
#   fio --ioengine=io_uring --direct=1           (same files, request size, depth)
#   ringfeed bench --fetch-only --direct-io off  (page cache, caches dropped first)
# and each one's CPU (user + sys of the process) per GB read. The dataset is
# the demo (or DIR); "larger than the page cache" is made by dropping caches
# before every run (echo 3 > /proc/sys/vm/drop_caches; needs root; without
# it the buffered figure is a warm-cache one and says so). fio reads whole
# requests only (a file's last partial request is left out), so the rates,
# not the byte counts, are compared.
# Usage: bench/direct_bench.sh [BUILD_DIR] [DIR] (env RF_BENCH_REQUEST: request
# size, default 1MiB; RF_BENCH_DEPTH: reads in flight, default 16)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
CLI=$build/ringfeed
PY=/usr/bin/python3
req=${RF_BENCH_REQUEST:-1MiB}
depth=${RF_BENCH_DEPTH:-16}
[ -x "$CLI" ] || { echo "build first: scripts/build.sh" >&2; exit 1; }
command -v fio >/dev/null || { echo "fio is not installed (apt-get install fio)" >&2; exit 1; }
dir=${2:-}
if [ -z "$dir" ]; then
	"$CLI" bench --json --batches 1 >/dev/null 2>&1 || true # creates the demo dataset once
	dir=${XDG_CACHE_HOME:-$HOME/.cache}/ringfeed/demo
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/rf-direct-bench-XXXXXX")
trap 'rm -rf "$work"' EXIT
files=$(cd "$dir" && ls -- *.rfs | tr '\n' ':' | sed 's/:$//')
bytes=$(cd "$dir" && cat -- *.rfs | wc -c)
fio_bs=$($PY -c "
import re, sys
m = re.fullmatch(r'(\d+)(KiB|MiB)', sys.argv[1]); print(m.group(1) + {'KiB': 'k', 'MiB': 'm'}[m.group(2)])" "$req")
drop() { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null; }
cold=yes
drop || cold="no (drop_caches not allowed: warm page cache)"
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
timed() { # OUT, then the command: its stdout to OUT, "user sys" to OUT.cpu
	local out=$1; shift
	/usr/bin/time -f "%U %S" -o "$out.cpu" "$@" >"$out"
}
cpu_per_gb() { awk -v b="$2" '{printf "%.3f", ($1 + $2) / (b / 1e9)}' "$1.cpu"; }

echo "dataset $dir: $bytes bytes; request $req, $depth in flight; caches dropped: $cold"
for i in 1 2 3; do
	drop || true
	timed "$work/on$i" "$CLI" bench --fetch-only --json --direct-io on --request-size "$req" \
		--connections "$depth" "$dir" 2>>"$work/notes"
	drop || true
	timed "$work/fio$i" fio --name=rd --directory="$dir" --filename="$files" --rw=read \
		--bs="$fio_bs" --iodepth="$depth" --direct=1 --ioengine=io_uring \
		--file_service_type=sequential --output-format=json
	drop || true
	timed "$work/off$i" "$CLI" bench --fetch-only --json --direct-io off --request-size "$req" \
		--connections "$depth" "$dir" 2>>"$work/notes"
	on=$($PY -c "import json,sys; print(json.load(open(sys.argv[1]))['mb_per_s'])" "$work/on$i")
	off=$($PY -c "import json,sys; print(json.load(open(sys.argv[1]))['mb_per_s'])" "$work/off$i")
	read -r fmb fbytes < <($PY -c "
import json, sys
j = json.load(open(sys.argv[1]))['jobs'][0]['read']
print(j['bw_bytes'] / 1e6, j['io_bytes'])" "$work/fio$i")
	printf "  round %d: ringfeed direct %.0f MB/s (%s CPU-s/GB), fio %.0f MB/s (%s CPU-s/GB), ringfeed page cache %.0f MB/s (%s CPU-s/GB); direct / fio %.3f\n" \
		"$i" "$on" "$(cpu_per_gb "$work/on$i" "$bytes")" "$fmb" "$(cpu_per_gb "$work/fio$i" "$fbytes")" \
		"$off" "$(cpu_per_gb "$work/off$i" "$bytes")" "$($PY -c "print($on / $fmb)")"
	echo "$on $fmb $off $($PY -c "print($on / $fmb)")" >>"$work/rows"
done
sort -u "$work/notes" | sed 's/^/  ringfeed: /'
printf "median: ringfeed direct %.0f MB/s, fio %.0f MB/s, ringfeed page cache (cold) %.0f MB/s; direct / fio %.3f (goal >= 0.9)\n" \
	"$(awk '{print $1}' "$work/rows" | median)" "$(awk '{print $2}' "$work/rows" | median)" \
	"$(awk '{print $3}' "$work/rows" | median)" "$(awk '{print $4}' "$work/rows" | median)"
