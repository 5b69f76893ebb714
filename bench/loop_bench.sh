#!/usr/bin/env bash
# loop_bench.sh [BUILD_DIR] - the epoll backend against io_uring, same run,
# same data, interleaved (io_uring, epoll, io_uring, epoll...), medians of
# REPEATS (default 3), ratios epoll / io_uring:
#   (a) local decoded throughput, `ringfeed bench` (goal >= 0.9);
#   (b) CPU-seconds per decoded GB of that run (goal <= 1.15);
#   (c) decoded throughput over nginx on loopback (goal >= 0.95);
#   (d) `ringfeed bench --fetch-only` of the local files (goal >= 0.85).
# Env: DEMO_BYTES (default 512MiB), DEMO_SHARDS (16), REPEATS (3),
# IO_THREADS (epoll's read threads, default 4). Starts its own servers
# (scripts/servers.sh) unless RF_NGINX_URL/RF_NGINX_ROOT are set. Prints one
# line per figure and a JSON summary last. A shared, noisy machine moves the
# absolute figures; the ratios of interleaved runs are what to read.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
cli=$build/ringfeed
[ -x "$cli" ] || { echo "loop_bench: build ringfeed first ($cli)" >&2; exit 1; }
DEMO_BYTES=${DEMO_BYTES:-512MiB} DEMO_SHARDS=${DEMO_SHARDS:-16}
REPEATS=${REPEATS:-3} IO_THREADS=${IO_THREADS:-4}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-loop-bench.XXXXXX")
cleanup() {
	[ -n "${own:-}" ] && "$top/scripts/servers.sh" stop "$own" >/dev/null 2>&1 || true
	[ -n "${RF_NGINX_ROOT:-}" ] && rm -rf "$RF_NGINX_ROOT/loop-bench-$$"
	rm -rf "$tmp" ${own:+"$own"}
}
trap cleanup EXIT
if [ -z "${RF_NGINX_URL:-}" ] || [ -z "${RF_NGINX_ROOT:-}" ]; then
	own=$(mktemp -d "${TMPDIR:-/tmp}/rf-loop-bench-servers.XXXXXX")
	"$top/scripts/servers.sh" start "$own" 2>/dev/null
	. "$own/env"
fi

"$cli" pack --demo -o "$tmp/ds" --demo-bytes "$DEMO_BYTES" --demo-shards "$DEMO_SHARDS" >/dev/null
mkdir -p "$RF_NGINX_ROOT/loop-bench-$$"
cp "$tmp"/ds/shard-*.rfs "$RF_NGINX_ROOT/loop-bench-$$/"
n=$(ls "$tmp"/ds/shard-*.rfs | wc -l)
last=$(printf '%06d' $((n - 1)))
local_urls="$tmp/ds/shard-{000000..$last}.rfs"
http_urls="$RF_NGINX_URL/loop-bench-$$/shard-{000000..$last}.rfs"
cat "$tmp"/ds/shard-*.rfs >/dev/null # page cache warm for both sides

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# key FILE NAME: a number from a JSON object
key() { grep -o "\"$2\":[-0-9.e+]*" "$1" | head -1 | cut -d: -f2; }
run() { # run BACKEND OUT ARGS...: one bench, its JSON in OUT; the backend checked
	local b=$1 out=$2
	shift 2
	"$cli" bench --json --io-backend "$b" --io-threads "$IO_THREADS" "$@" >"$out" 2>"$out.err"
	grep -q "\"io_backend\":\"$b\"" "$out" || { cat "$out" "$out.err" >&2; exit 1; }
}

for b in io_uring epoll; do # warm-up, not counted: page cache, nginx, the CPU's clocks
	run $b "$tmp/w.json" "$local_urls"
done
declare -A dec cpu http fetch
for ((r = 0; r < REPEATS; r++)); do
	for b in io_uring epoll; do
		run $b "$tmp/l.json" "$local_urls"
		dec[$b]+=" $(key "$tmp/l.json" decoded_bytes_per_s)"
		cpu[$b]+=" $(key "$tmp/l.json" cpu_s_per_decoded_gb)"
		run $b "$tmp/h.json" "$http_urls"
		http[$b]+=" $(key "$tmp/h.json" decoded_bytes_per_s)"
		run $b "$tmp/f.json" --fetch-only "$local_urls"
		fetch[$b]+=" $(key "$tmp/f.json" mb_per_s)"
	done
done
m() { median ${1}; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", a / b}'; }
mb() { awk -v a="$1" 'BEGIN {printf "%.1f", a / 1e6}'; }
du=$(m "${dec[io_uring]}") de=$(m "${dec[epoll]}")
cu=$(m "${cpu[io_uring]}") ce=$(m "${cpu[epoll]}")
hu=$(m "${http[io_uring]}") he=$(m "${http[epoll]}")
fu=$(m "${fetch[io_uring]}") fe=$(m "${fetch[epoll]}")
printf 'local decoded MB/s:      io_uring %8s  epoll %8s  ratio %s (goal >= 0.9)\n' \
	"$(mb "$du")" "$(mb "$de")" "$(ratio "$de" "$du")"
printf 'CPU s per decoded GB:    io_uring %8.3f  epoll %8.3f  ratio %s (goal <= 1.15)\n' \
	"$cu" "$ce" "$(ratio "$ce" "$cu")"
printf 'nginx decoded MB/s:      io_uring %8s  epoll %8s  ratio %s (goal >= 0.95)\n' \
	"$(mb "$hu")" "$(mb "$he")" "$(ratio "$he" "$hu")"
printf 'fetch-only local MB/s:   io_uring %8.1f  epoll %8.1f  ratio %s (goal >= 0.85)\n' \
	"$fu" "$fe" "$(ratio "$fe" "$fu")"
printf '{"repeats":%d,"demo_bytes":"%s","io_threads":%d,"local_ratio":%s,"cpu_ratio":%s,"nginx_ratio":%s,"fetch_only_ratio":%s,"runs":{"decoded_bytes_per_s":{"io_uring":[%s],"epoll":[%s]},"cpu_s_per_decoded_gb":{"io_uring":[%s],"epoll":[%s]},"nginx_decoded_bytes_per_s":{"io_uring":[%s],"epoll":[%s]},"fetch_only_mb_per_s":{"io_uring":[%s],"epoll":[%s]}}}\n' \
	"$REPEATS" "$DEMO_BYTES" "$IO_THREADS" "$(ratio "$de" "$du")" "$(ratio "$ce" "$cu")" \
	"$(ratio "$he" "$hu")" "$(ratio "$fe" "$fu")" \
	"$(echo ${dec[io_uring]} | tr ' ' ,)" "$(echo ${dec[epoll]} | tr ' ' ,)" \
	"$(echo ${cpu[io_uring]} | tr ' ' ,)" "$(echo ${cpu[epoll]} | tr ' ' ,)" \
	"$(echo ${http[io_uring]} | tr ' ' ,)" "$(echo ${http[epoll]} | tr ' ' ,)" \
	"$(echo ${fetch[io_uring]} | tr ' ' ,)" "$(echo ${fetch[epoll]} | tr ' ' ,)"
