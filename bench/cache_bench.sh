#!/usr/bin/env bash
# cache_bench.sh [BUILD_DIR] - reading from a warm data cache against reading
# the same bytes as local shards, side by side in one run, medians of
# REPEATS (default 3), interleaved:
#   local  `ringfeed read` of the local files (page cache warm)
#   warm   the same objects from nginx after `ringfeed cache warm` (every
#          range a hit; the cache's files in the page cache too)
#   store  the same objects from nginx with --cache off
# Goal: warm / local >= 0.9. Also the CPU (user + sys) per GB of each, and
# what the warm reads still fetched from the store (their opens' HEADs are
# not ranges: 0 bytes expected). Env: DEMO_BYTES (default 256MiB),
# DEMO_SHARDS (16), REPEATS (3). Starts its own servers unless
# RF_NGINX_URL/RF_NGINX_ROOT are set. One line per figure, JSON last.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
cli=$build/ringfeed
[ -x "$cli" ] || { echo "cache_bench: build ringfeed first ($cli)" >&2; exit 1; }
DEMO_BYTES=${DEMO_BYTES:-256MiB} DEMO_SHARDS=${DEMO_SHARDS:-16} REPEATS=${REPEATS:-3}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-cache-bench.XXXXXX")
cleanup() {
	[ -n "${own:-}" ] && "$top/scripts/servers.sh" stop "$own" >/dev/null 2>&1 || true
	[ -n "${RF_NGINX_ROOT:-}" ] && rm -rf "$RF_NGINX_ROOT/cbench-$$"
	rm -rf "$tmp" ${own:+"$own"}
}
trap cleanup EXIT
if [ -z "${RF_NGINX_URL:-}" ] || [ -z "${RF_NGINX_ROOT:-}" ]; then
	own=$(mktemp -d "${TMPDIR:-/tmp}/rf-cache-bench-servers.XXXXXX")
	"$top/scripts/servers.sh" start "$own" 2>/dev/null
	. "$own/env"
fi

"$cli" pack --demo -o "$tmp/ds" --demo-bytes "$DEMO_BYTES" --demo-shards "$DEMO_SHARDS" >/dev/null
mkdir -p "$RF_NGINX_ROOT/cbench-$$"
cp "$tmp"/ds/shard-*.rfs "$RF_NGINX_ROOT/cbench-$$/"
n=$(ls "$tmp"/ds/shard-*.rfs | wc -l)
last=$(printf '%06d' $((n - 1)))
local_urls="$tmp/ds/shard-{000000..$last}.rfs"
http_urls="$RF_NGINX_URL/cbench-$$/shard-{000000..$last}.rfs"
bytes=$(cat "$tmp"/ds/shard-*.rfs | wc -c)
cache=$tmp/cache
"$cli" cache warm --cache-dir "$cache" "$http_urls" >/dev/null 2>&1
cat "$tmp"/ds/shard-*.rfs "$cache"/*/*.dat >/dev/null # page cache warm for both sides

now() { date +%s.%N; }
secs() {
	local t0 t1
	t0=$(now)
	"$@" >/dev/null
	t1=$(now)
	echo "$t1 - $t0" | bc -l | xargs printf '%.4f\n'
}
cpu() { # user + sys seconds of one run
	/usr/bin/time -f '%U %S' -o "$tmp/t" "$@" >/dev/null
	awk '{printf "%.4f\n", $1 + $2}' "$tmp/t"
}
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

la=() wa=() sa=() lc=() wc=()
for ((r = 0; r < REPEATS; r++)); do
	la+=("$(secs "$cli" read "$local_urls")")
	wa+=("$(secs "$cli" read --cache readwrite --cache-dir "$cache" "$http_urls")")
	sa+=("$(secs "$cli" read --cache off "$http_urls")")
	lc+=("$(cpu "$cli" read "$local_urls")")
	wc+=("$(cpu "$cli" read --cache readwrite --cache-dir "$cache" "$http_urls")")
done
"$cli" read --cache readwrite --cache-dir "$cache" --stats "$tmp/s.json" "$http_urls" >/dev/null
store=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["data_cache_store_bytes"])' "$tmp/s.json")
L=$(median "${la[@]}") W=$(median "${wa[@]}") S=$(median "${sa[@]}")
LC=$(median "${lc[@]}") WC=$(median "${wc[@]}")
gb=$(echo "$bytes / 1000000000" | bc -l)
mbs() { echo "$bytes / $1 / 1000000" | bc -l | xargs printf '%.0f'; }
per_gb() { echo "$1 / $gb" | bc -l | xargs printf '%.3f'; }
ratio=$(echo "$L / $W" | bc -l | xargs printf '%.3f')
echo "local:      $(mbs "$L") MB/s ($(per_gb "$LC") CPU-s/GB)"
echo "warm cache: $(mbs "$W") MB/s ($(per_gb "$WC") CPU-s/GB), $store bytes from the store"
echo "store:      $(mbs "$S") MB/s (--cache off)"
echo "warm / local: $ratio (goal >= 0.9)"
printf '{"bytes":%s,"local_s":%s,"warm_s":%s,"store_s":%s,"ratio_warm":%s,"warm_store_bytes":%s,"local_cpu_s":%s,"warm_cpu_s":%s}\n' \
	"$bytes" "$L" "$W" "$S" "$ratio" "$store" "$LC" "$WC"
