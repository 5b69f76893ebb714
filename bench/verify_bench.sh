#!/usr/bin/env bash
# verify_bench.sh [BUILD] [JOBS] [LATENCY] [ROUNDS] - `ringfeed verify` of
# the demo dataset (1 GiB, 64 shards) with one job and with JOBS jobs
# (default 8), side by side and interleaved (1, JOBS, 1, JOBS, ...) so the
# machine's drift hits both alike, under injected latency LATENCY a read
# (default 100ms: a remote store; 0: local files, CPU-bound). Prints the
# median wall seconds and CPU seconds of each over ROUNDS (default 3) and
# JOBS/1. Progress on stderr, the table on stdout.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
jobs=${2:-8}
lat=${3:-100ms}
rounds=${4:-3}
cli=$build/ringfeed
[ -x "$cli" ] || { echo "verify_bench: no $cli (build it first)" >&2; exit 1; }
demo=${RF_DEMO_DIR:-$HOME/.cache/ringfeed/demo}
[ -f "$demo/manifest.rfm" ] || "$cli" pack --demo -o "$demo" >&2
work=$(mktemp -d "${TMPDIR:-/tmp}/rf-verify-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
inject=()
[ "$lat" = 0 ] || inject=(--inject "latency=$lat")
for ((r = 1; r <= rounds; r++)); do
	for j in 1 "$jobs"; do
		echo "round $r/$rounds: $j job(s)" >&2
		TIMEFORMAT='%R %U %S'
		{ time "$cli" verify -q --verify-jobs "$j" "${inject[@]}" "$demo/manifest.rfm" \
			>"$work/$j-$r.out" 2>"$work/$j-$r.err"; } 2>"$work/$j-$r.t"
		tail -1 "$work/$j-$r.out" | grep -q "64 shards, 0 damaged" ||
			{ cat "$work/$j-$r.out" >&2; exit 1; }
	done
done
/usr/bin/python3 - "$work" "$rounds" "$jobs" "$lat" <<'PYEOF'
import statistics, sys
work, rounds, jobs, lat = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
def fig(j):
    wall, cpu = [], []
    for r in range(1, rounds + 1):
        e, u, s = map(float, open("%s/%s-%d.t" % (work, j, r)).read().split()[-3:])
        wall.append(e)
        cpu.append(u + s)
    return statistics.median(wall), statistics.median(cpu)
a, b = fig("1"), fig(jobs)
print("| verify, latency %s, median of %d | 1 job | %s jobs | %s/1 |" % (lat, rounds, jobs, jobs))
print("|---|---|---|---|")
print("| wall | %.2f s | %.2f s | %.3f |" % (a[0], b[0], b[0] / a[0]))
print("| CPU | %.2f s | %.2f s | %.3f |" % (a[1], b[1], b[1] / a[1] if a[1] else float("nan")))
PYEOF
