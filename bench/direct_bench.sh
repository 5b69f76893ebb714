#!/usr/bin/env bash
# direct_bench.sh - local reads past the page cache (issue 17, item 3), side
# by side in one run, medians of RF_BENCH_ROUNDS (default 3) rounds:
#   ringfeed bench --fetch-only --direct-io on   (O_DIRECT, READ_FIXED into
#                                                 registered buffers)
#   fio --ioengine=io_uring --direct=1           (same files, request size, depth)
#   ringfeed ... --direct-io on, plain reads     (O_DIRECT, IORING_OP_READ: the
#       registration refused by running without CAP_IPC_LOCK at an 8 MiB
#       RLIMIT_MEMLOCK; left out where setpriv/prlimit are missing)
#   ringfeed bench --fetch-only --direct-io off  (page cache, cold)
# and each one's CPU (user + sys of the process) per GB read. "Larger than
# the page cache available to it": every reader runs in a memory cgroup of
# RF_BENCH_CACHE_LIMIT (default 256MiB; v1 memory.limit_in_bytes or v2
# memory.max, where /sys/fs/cgroup lets us make one: root), which also holds
# its page cache, and caches are dropped before every run (echo 3 >
# /proc/sys/vm/drop_caches; root). Where neither is allowed the figures are
# warm-cache ones and the header says so. The dataset is the demo (830 MB)
# or DIR. fio reads whole requests only (a file's last partial request is
# left out), so the rates, not the byte counts, are compared.
# Usage: bench/direct_bench.sh [BUILD_DIR] [DIR] (env RF_BENCH_REQUEST: request
# size, default 1MiB; RF_BENCH_DEPTH: reads in flight, default 16)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
CLI=$build/ringfeed
PY=/usr/bin/python3
req=${RF_BENCH_REQUEST:-1MiB}
depth=${RF_BENCH_DEPTH:-16}
rounds=${RF_BENCH_ROUNDS:-3}
limit=${RF_BENCH_CACHE_LIMIT:-256MiB}
[ -x "$CLI" ] || { echo "build first: scripts/build.sh" >&2; exit 1; }
command -v fio >/dev/null || { echo "fio is not installed (apt-get install fio)" >&2; exit 1; }
dir=${2:-}
if [ -z "$dir" ]; then
	"$CLI" bench --json --batches 1 >/dev/null 2>&1 || true # creates the demo dataset once
	dir=${XDG_CACHE_HOME:-$HOME/.cache}/ringfeed/demo
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/rf-direct-bench-XXXXXX")
files=$(cd "$dir" && ls -- *.rfs | tr '\n' ':' | sed 's/:$//')
bytes=$(cd "$dir" && cat -- *.rfs | wc -c)
to_bytes() { $PY -c "
import re, sys
m = re.fullmatch(r'(\d+)(KiB|MiB|GiB)', sys.argv[1]); print(int(m.group(1)) << {'KiB': 10, 'MiB': 20, 'GiB': 30}[m.group(2)])" "$1"; }
fio_bs=$(to_bytes "$req")
limit_bytes=$(to_bytes "$limit")

# The memory cgroup every reader runs in (v1 or v2), or none.
cg=""
if [ -d /sys/fs/cgroup/memory ] && mkdir "/sys/fs/cgroup/memory/rf-direct-bench-$$" 2>/dev/null; then
	cg=/sys/fs/cgroup/memory/rf-direct-bench-$$
	echo "$limit_bytes" >"$cg/memory.limit_in_bytes" || { rmdir "$cg"; cg=""; }
elif [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw memory /sys/fs/cgroup/cgroup.controllers &&
	mkdir "/sys/fs/cgroup/rf-direct-bench-$$" 2>/dev/null; then
	cg=/sys/fs/cgroup/rf-direct-bench-$$
	echo "$limit_bytes" >"$cg/memory.max" || { rmdir "$cg"; cg=""; }
fi
# The words that run a command inside the cgroup (none without one).
LIM=()
[ -z "$cg" ] || LIM=(/bin/sh -c 'echo $$ >"$0" && exec "$@"' "$cg/cgroup.procs")
cleanup() {
	rm -rf "$work"
	[ -z "$cg" ] || rmdir "$cg" 2>/dev/null || true
}
trap cleanup EXIT
plain=""
if setpriv --bounding-set=-ipc_lock --inh-caps=-ipc_lock true 2>/dev/null && command -v prlimit >/dev/null; then
	plain="setpriv --bounding-set=-ipc_lock --inh-caps=-ipc_lock prlimit --memlock=8388608:8388608"
fi

drop() { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null; }
cold=yes
drop || cold="no (drop_caches not allowed)"
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
timed() { # OUT, then the command: its stdout to OUT, "user sys" to OUT.cpu
	local out=$1; shift
	/usr/bin/time -f "%U %S" -o "$out.cpu" "$@" >"$out"
}
cpu_per_gb() { awk -v b="$2" '{printf "%.3f", ($1 + $2) / (b / 1e9)}' "$1.cpu"; }
mbps() { $PY -c "import json,sys; print(json.load(open(sys.argv[1]))['mb_per_s'])" "$1"; }
rf_run() { # OUT, direct-io mode, then a wrapper (or nothing)
	local out=$1 mode=$2; shift 2
	drop || true
	timed "$out" "${LIM[@]}" "$@" "$CLI" bench --fetch-only --json --direct-io "$mode" \
		--request-size "$req" --connections "$depth" "$dir" 2>>"$work/notes"
}

where="none (not allowed here)"
[ -z "$cg" ] || where="$limit (page cache included) at $cg"
echo "dataset $dir: $bytes bytes; request $req, $depth in flight; caches dropped: $cold;" \
	"memory cgroup: $where"
for i in $(seq 1 "$rounds"); do
	rf_run "$work/on$i" on
	fixed=$($PY -c "import json,sys; print(json.load(open(sys.argv[1]))['fixed_reads'])" "$work/on$i")
	drop || true
	timed "$work/fio$i" "${LIM[@]}" fio --name=rd --directory="$dir" --filename="$files" --rw=read \
		--bs="$fio_bs" --iodepth="$depth" --direct=1 --ioengine=io_uring \
		--file_service_type=sequential --output-format=json
	pl=0
	if [ -n "$plain" ]; then
		# shellcheck disable=SC2086 # the wrapper's words
		rf_run "$work/plain$i" on $plain
		pl=$(mbps "$work/plain$i")
	fi
	rf_run "$work/off$i" off
	on=$(mbps "$work/on$i")
	off=$(mbps "$work/off$i")
	read -r fmb fbytes < <($PY -c "
import json, sys
j = json.load(open(sys.argv[1]))['jobs'][0]['read']
print(j['bw_bytes'] / 1e6, j['io_bytes'])" "$work/fio$i")
	printf "  round %d: ringfeed direct+fixed %.0f MB/s (%s CPU-s/GB, %s fixed reads), fio %.0f MB/s (%s CPU-s/GB)," \
		"$i" "$on" "$(cpu_per_gb "$work/on$i" "$bytes")" "$fixed" "$fmb" "$(cpu_per_gb "$work/fio$i" "$fbytes")"
	[ -z "$plain" ] || printf " ringfeed direct plain %.0f MB/s (%s CPU-s/GB)," "$pl" "$(cpu_per_gb "$work/plain$i" "$bytes")"
	printf " ringfeed page cache %.0f MB/s (%s CPU-s/GB); direct / fio %.3f\n" \
		"$off" "$(cpu_per_gb "$work/off$i" "$bytes")" "$($PY -c "print($on / $fmb)")"
	echo "$on $fmb $off $($PY -c "print($on / $fmb)") $pl" >>"$work/rows"
done
sort -u "$work/notes" | sed 's/^/  ringfeed: /'
printf "median: ringfeed direct+fixed %.0f MB/s, fio %.0f MB/s, ringfeed direct plain %.0f MB/s, ringfeed page cache (cold) %.0f MB/s; direct / fio %.3f (goal >= 0.9)\n" \
	"$(awk '{print $1}' "$work/rows" | median)" "$(awk '{print $2}' "$work/rows" | median)" \
	"$(awk '{print $5}' "$work/rows" | median)" \
	"$(awk '{print $3}' "$work/rows" | median)" "$(awk '{print $4}' "$work/rows" | median)"
