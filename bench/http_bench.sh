#!/usr/bin/env bash
# http_bench.sh [BUILD_DIR] - remote reads against local reads, side by side
# in one run, medians of REPEATS (default 3):
#   (a) `ringfeed read` of the demo dataset from nginx on loopback vs from the
#       local files (goal: ratio >= 0.9);
#   (b) `ringfeed bench --fetch-only` from nginx vs `curl --parallel
#       --parallel-max N` downloading the same objects (goal: ratio >= 0.8).
#       fetch-only's own clock (first open to last byte; its read buffers are
#       allocated and touched before) against curl's wall time;
#   and the CPU (user + sys) per GB of each reading process, side by side.
# Env: DEMO_BYTES (default 1GiB), DEMO_SHARDS (16), CONNECTIONS (8),
# REPEATS (3). Starts its own servers (scripts/servers.sh) unless
# RF_NGINX_URL/RF_NGINX_ROOT are set. Prints one line per figure and a JSON
# summary last.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
cli=$build/ringfeed
[ -x "$cli" ] || { echo "http_bench: build ringfeed first ($cli)" >&2; exit 1; }
DEMO_BYTES=${DEMO_BYTES:-1GiB} DEMO_SHARDS=${DEMO_SHARDS:-16}
CONNECTIONS=${CONNECTIONS:-8} REPEATS=${REPEATS:-3}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-http-bench.XXXXXX")
cleanup() {
	[ -n "${own:-}" ] && "$top/scripts/servers.sh" stop "$own" >/dev/null 2>&1 || true
	[ -n "${RF_NGINX_ROOT:-}" ] && rm -rf "$RF_NGINX_ROOT/bench-$$"
	rm -rf "$tmp" ${own:+"$own"}
}
trap cleanup EXIT
if [ -z "${RF_NGINX_URL:-}" ] || [ -z "${RF_NGINX_ROOT:-}" ]; then
	own=$(mktemp -d "${TMPDIR:-/tmp}/rf-http-bench-servers.XXXXXX")
	"$top/scripts/servers.sh" start "$own" 2>/dev/null
	. "$own/env"
fi

"$cli" pack --demo -o "$tmp/ds" --demo-bytes "$DEMO_BYTES" --demo-shards "$DEMO_SHARDS" >/dev/null
mkdir -p "$RF_NGINX_ROOT/bench-$$"
cp "$tmp"/ds/shard-*.rfs "$RF_NGINX_ROOT/bench-$$/"
n=$(ls "$tmp"/ds/shard-*.rfs | wc -l)
last=$(printf '%06d' $((n - 1)))
local_urls="$tmp/ds/shard-{000000..$last}.rfs"
http_urls="$RF_NGINX_URL/bench-$$/shard-{000000..$last}.rfs"
bytes=$(cat "$tmp"/ds/shard-*.rfs | wc -c)
cat "$tmp"/ds/shard-*.rfs >/dev/null # page cache warm for both sides

now() { date +%s.%N; }
# secs CMD...: wall seconds of one run (output discarded; a failure stops the bench)
secs() {
	local t0 t1
	t0=$(now)
	"$@" >/dev/null
	t1=$(now)
	echo "$t1 - $t0" | bc -l | xargs printf '%.4f\n'
}
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

curl_all() {
	local args=() i
	for ((i = 0; i < n; i++)); do
		args+=(-o /dev/null "$RF_NGINX_URL/bench-$$/shard-$(printf '%06d' $i).rfs")
	done
	curl -sf --parallel --parallel-max "$CONNECTIONS" "${args[@]}" 2>/dev/null
}

# cpu CMD...: user + sys CPU-seconds of one run (the process and its children)
cpu() {
	/usr/bin/time -f "%U %S" -o "$tmp/cpu" "$@" >/dev/null 2>&1
	awk '{printf "%.4f\n", $1 + $2}' "$tmp/cpu"
}
curl_args=()
for ((i = 0; i < n; i++)); do
	curl_args+=(-o /dev/null "$RF_NGINX_URL/bench-$$/shard-$(printf '%06d' $i).rfs")
done
la=() ha=() fb=() cb=() lc=() hc=() fc=() cc=()
for ((r = 0; r < REPEATS; r++)); do # interleaved, so drift hits both sides alike
	la+=("$(secs "$cli" read "$local_urls")")
	ha+=("$(secs "$cli" read --cache off --connections "$CONNECTIONS" "$http_urls")")
	fb+=("$("$cli" bench --fetch-only --json --cache off --connections "$CONNECTIONS" "$http_urls" |
		/usr/bin/python3 -c 'import json,sys; print("%.4f" % json.load(sys.stdin)["seconds"])')")
	cb+=("$(secs curl_all)")
	lc+=("$(cpu "$cli" read "$local_urls")")
	hc+=("$(cpu "$cli" read --cache off --connections "$CONNECTIONS" "$http_urls")")
	fc+=("$(cpu "$cli" bench --fetch-only --cache off --connections "$CONNECTIONS" "$http_urls")")
	cc+=("$(cpu curl -sf --parallel --parallel-max "$CONNECTIONS" "${curl_args[@]}")")
done
LC=$(median "${lc[@]}") HC=$(median "${hc[@]}") FC=$(median "${fc[@]}") CC=$(median "${cc[@]}")
gb=$(echo "$bytes / 1000000000" | bc -l)
per_gb() { echo "$1 / $gb" | bc -l | xargs printf '%.3f'; }
L=$(median "${la[@]}") H=$(median "${ha[@]}") F=$(median "${fb[@]}") C=$(median "${cb[@]}")
mbs() { echo "$bytes / $1 / 1000000" | bc -l | xargs printf '%.0f'; }
ra=$(echo "$L / $H" | bc -l | xargs printf '%.3f')
rb=$(echo "$C / $F" | bc -l | xargs printf '%.3f')
echo "dataset: $n shards, $bytes bytes; $CONNECTIONS connections; medians of $REPEATS"
echo "(a) read local  $(mbs "$L") MB/s   read nginx $(mbs "$H") MB/s   ratio $ra (goal >= 0.9)"
echo "(b) fetch-only  $(mbs "$F") MB/s   curl       $(mbs "$C") MB/s   ratio $rb (goal >= 0.8)"
echo "CPU (user + sys of the reading process alone; nginx not counted), CPU-s per GB of shard bytes:"
echo "    read local $(per_gb "$LC")   read nginx $(per_gb "$HC")   fetch-only $(per_gb "$FC")   curl $(per_gb "$CC")   fetch-only / curl $(echo "$FC / $CC" | bc -l | xargs printf '%.3f') (goal <= 1.1)"
printf '{"bytes":%s,"shards":%s,"connections":%s,"repeats":%s,"read_local_s":%s,"read_http_s":%s,"ratio_read":%s,"fetch_only_s":%s,"curl_s":%s,"ratio_fetch":%s}\n' \
	"$bytes" "$n" "$CONNECTIONS" "$REPEATS" "$L" "$H" "$ra" "$F" "$C" "$rb"
