#!/usr/bin/env bash
# hedge_bench.sh - what hedged reads do to the tail. A private bad_http
# server (tests/servers/bad_http.py, /slow-every-K-MS/ mode) serves a
# demo dataset and holds every Kth request for MS ms (K=100, MS=500: 1% of
# requests 500 ms late, per request, not per read: the in-engine injector
# would delay the whole read, hedge included). The loader reads it with
# hedging on and off, interleaved, --repeats times; reported as medians:
# the engine's p99 read latency (fetch_latency_p99_ms), the consumer's
# total wait in rf_next (consumer_wait_s), wall time, and the requests the
# server saw (the extra ones are the hedges' cost), with on/off ratios.
#
# usage: bench/hedge_bench.sh [--every K] [--delay-ms MS] [--repeats N]
#          [--request-size SIZE] [--connections N] [--depth N]
# Defaults: K = 100, MS = 500, 5 repeats, 64KiB requests (one block each), 8 connections,
# depth 4 batches (a shallow read-ahead, so a late read reaches the consumer),
# 64 MiB of 4 KiB records in 8 shards of 64 KiB blocks, in a temporary directory.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
CLI=${RF_CLI:-$top/build/ringfeed}
PY=/usr/bin/python3
EVERY=100 DELAY=500 REPEATS=5 RSIZE=64KiB CONN=8 DEPTH=4
while [ $# -gt 0 ]; do
	case $1 in
	--every) EVERY=$2; shift 2 ;;
	--delay-ms) DELAY=$2; shift 2 ;;
	--repeats) REPEATS=$2; shift 2 ;;
	--request-size) RSIZE=$2; shift 2 ;;
	--connections) CONN=$2; shift 2 ;;
	--depth) DEPTH=$2; shift 2 ;;
	-h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
	*) echo "hedge_bench: unknown option $1" >&2; exit 2 ;;
	esac
done
[ -x "$CLI" ] || { echo "hedge_bench: $CLI not built (scripts/build.sh)" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-hedge-bench.XXXXXX")
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
head -c $((64 << 20)) /dev/urandom >"$tmp/data.bin" # incompressible: 64 KiB blocks stay 64 KiB
"$CLI" pack --from fixed:4096 --block-size 64KiB --shard-size 8MiB "$tmp/data.bin" \
	-o "$tmp/www" >/dev/null
rm -f "$tmp/data.bin"
"$PY" "$top/tests/servers/bad_http.py" --root "$tmp/www" --port 0 \
	--port-file "$tmp/port" >"$tmp/server.log" 2>&1 &
pid=$!
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
base=http://127.0.0.1:$(cat "$tmp/port")
last=$(($(ls "$tmp"/www/shard-*.rfs | wc -l) - 1))
url="$base/slow-every-$EVERY-$DELAY/shard-{000000..$(printf %06d $last)}.rfs"

run() { # HEDGE REPEAT: one read; a line "hedge p99_ms wait_s wall_s requests hedges won"
	curl -sf "$base/_reset" >/dev/null
	local t0 t1
	t0=$(date +%s.%N)
	"$CLI" read --digest --cache off --no-shuffle --request-size "$RSIZE" --connections "$CONN" \
		--depth "$DEPTH" --hedge "$1" --stats "$tmp/s.json" "$url" >"$tmp/out" 2>&1 ||
		{ echo "hedge_bench: read failed: $(tail -n 2 "$tmp/out")" >&2; exit 1; }
	t1=$(date +%s.%N)
	tail -n 1 "$tmp/out" >>"$tmp/digests"
	curl -sf "$base/_stats" >"$tmp/server.json"
	"$PY" - "$1" "$tmp/s.json" "$tmp/server.json" "$t0" "$t1" <<'EOF'
import json, sys
hedge, stats, server, t0, t1 = sys.argv[1:]
s = json.load(open(stats))
reqs = sum(v["requests"] for v in json.load(open(server)).values())
print(hedge, s["fetch_latency_p99_ms"], s["consumer_wait_s"], float(t1) - float(t0), reqs,
      s["fetch_hedges"], s["fetch_hedges_won"])
EOF
}
for i in $(seq "$REPEATS"); do
	run 1 "$i" >>"$tmp/runs"
	run 0 "$i" >>"$tmp/runs"
done
[ "$(sort -u "$tmp/digests" | wc -l)" = 1 ] ||
	{ echo "hedge_bench: the digests differ between runs" >&2; exit 1; }
"$PY" - "$tmp/runs" "$EVERY" "$DELAY" "$REPEATS" "$RSIZE" "$CONN" "$DEPTH" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
every, delay, repeats, rsize, conn, depth = sys.argv[2:]
def med(h, col):
    return statistics.median(float(r[col]) for r in rows if r[0] == h)
names = [("p99 read latency (ms)", 1), ("consumer wait (s)", 2), ("wall (s)", 3),
         ("requests", 4), ("hedges issued", 5), ("hedges won", 6)]
print("hedge_bench: 1 request in %s held %s ms; %s repeats (medians), request_size %s, "
      "%s connections, depth %s; digests identical" % (every, delay, repeats, rsize, conn, depth))
print("%-24s %12s %12s %10s" % ("", "hedge on", "hedge off", "on/off"))
for name, col in names:
    on, off = med("1", col), med("0", col)
    ratio = "%.2f" % (on / off) if off else "-"
    print("%-24s %12.3f %12.3f %10s" % (name, on, off, ratio))
EOF
