#!/usr/bin/env bash
# cli_plan.sh - `ringfeed plan`: a hand-computed sizing, the host-memory
# warning, inputs read from a trace, and flag validation.
set -euo pipefail
CLI=${RF_CLI:?RF_CLI must name the ringfeed binary}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
json_check() {
	"$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' \
		"$1" "$2" || fail "$1: $2 does not hold: $(cat "$1")"
}
MiB=1048576
sizes=(--compressed-bytes 4MiB --decoded-bytes 16MiB --collated-bytes 8MiB)

# 1. By hand: r = 40/s, T = 0.5 s -> D = 20; F = ceil(40 x 0.1) = 4.
#    Per loader: fetch 4 x 4 MiB = 16 MiB, decoded 4 x 16 MiB = 64 MiB,
#    collated (20 + 1) x 8 MiB = 168 MiB: 248 MiB; 8 ranks: 1984 MiB.
"$CLI" plan --rate 40 --pause 0.5 "${sizes[@]}" --ranks 8 --host-memory 16GiB --json > "$tmp/a.json"
json_check "$tmp/a.json" 'd["depth_batches"] == 20 and d["in_flight_batches"] == 4 and d["coverage_s"] == 0.5'
json_check "$tmp/a.json" "d['stages']['fetch']['loader_bytes'] == 16*$MiB and d['stages']['decoded']['loader_bytes'] == 64*$MiB"
json_check "$tmp/a.json" "d['stages']['collated']['batches'] == 21 and d['stages']['collated']['host_bytes'] == 8*168*$MiB"
json_check "$tmp/a.json" "d['loader_bytes'] == 248*$MiB and d['host_bytes'] == 1984*$MiB and d['fits'] is True"
"$CLI" plan --rate 40 --pause 0.5 "${sizes[@]}" --ranks 8 --host-memory 16GiB > "$tmp/a.txt"
grep -q "depth D = ceil(r x T) = 20" "$tmp/a.txt" || fail "text: $(cat "$tmp/a.txt")"
grep -qE "^total +248.0 MiB +1.9 GiB" "$tmp/a.txt" || fail "text totals: $(cat "$tmp/a.txt")"
! grep -q warning "$tmp/a.txt" || fail "warned although it fits"

# r x T = 30 x 0.3 is 8.999... in binary; the depth is still 9, not 10.
"$CLI" plan --rate 30 --pause 0.3 "${sizes[@]}" --in-flight 2 --host-memory 1TiB --json > "$tmp/b.json"
json_check "$tmp/b.json" 'd["depth_batches"] == 9 and d["in_flight_batches"] == 2'

# 2. Over the host's memory: 1 GiB for 8 loaders is 128 MiB each; 88 MiB are
#    fixed (fetch, decoded, the consumer's batch), so 5 ready batches fit.
"$CLI" plan --rate 40 --pause 0.5 "${sizes[@]}" --ranks 8 --host-memory 1GiB --pinned \
	> "$tmp/c.txt" 2> "$tmp/c.err"
grep -q "warning: the host total 1.9 GiB exceeds the 1.0 GiB available; at most D = 5" "$tmp/c.txt" \
	|| fail "no warning: $(cat "$tmp/c.txt")"
grep -q "warning" "$tmp/c.err" || fail "no warning on stderr"
grep -q "collated (pinned)" "$tmp/c.txt" || fail "--pinned not shown"
"$CLI" plan --rate 40 --pause 0.5 "${sizes[@]}" --ranks 8 --host-memory 1GiB --pinned --json \
	> "$tmp/c.json" 2>/dev/null
json_check "$tmp/c.json" "d['fits'] is False and d['max_depth_batches'] == 5 and d['pinned_host_bytes'] == 8*168*$MiB"
# Without --host-memory the host's MemAvailable is used.
"$CLI" plan --rate 1 --pause 1 "${sizes[@]}" --json > "$tmp/m.json"
if grep -q MemAvailable /proc/meminfo; then
	json_check "$tmp/m.json" 'd["host_memory_source"] == "MemAvailable" and d["host_memory_bytes"] > 0'
fi

# 3. From a trace: the sim's producer stalls 10..15 s, the consumer runs at 4/s.
"$CLI" sim --lambda 5 --mu 4 --initial 6 --capacity 12 --stall 4:2 --stall 10:5 --step 0.1 \
	--until 20 --trace "$tmp/t.jsonl" > /dev/null
"$CLI" plan --from-trace "$tmp/t.jsonl" "${sizes[@]}" --host-memory 1TiB --json > "$tmp/t.json"
json_check "$tmp/t.json" 'd["rate_bps"] == 4 and abs(d["pause_s"] - 5) < 1e-9 and d["depth_batches"] == 20'
json_check "$tmp/t.json" 'd["from_trace"]["pause_kind"] == "producer pause" and d["from_trace"]["line_first"] == 102 and d["from_trace"]["line_last"] == 151'
"$CLI" plan --from-trace "$tmp/t.jsonl" --pause 1 "${sizes[@]}" --host-memory 1TiB --json > "$tmp/t2.json"
json_check "$tmp/t2.json" 'd["pause_s"] == 1 and d["depth_batches"] == 4'
sed '3s/"ready":[0-9.]*,//' "$tmp/t.jsonl" > "$tmp/bad.jsonl"
set +e
"$CLI" plan --from-trace "$tmp/bad.jsonl" "${sizes[@]}" > /dev/null 2> "$tmp/bad.err"
rc=$?
set -e
[ $rc = 1 ] || fail "bad trace exited $rc"
grep -q "bad.jsonl:3: missing key \"ready\"" "$tmp/bad.err" || fail "bad trace: $(cat "$tmp/bad.err")"

# 4. Bad flags exit 2 with a message.
bad() {
	local want=$1; shift
	set +e
	"$CLI" plan "$@" > "$tmp/out" 2> "$tmp/err"
	local rc=$?
	set -e
	[ $rc = 2 ] || fail "plan $* exited $rc, expected 2"
	grep -q -- "$want" "$tmp/err" || fail "plan $*: stderr lacks '$want': $(cat "$tmp/err")"
}
bad "--rate" --rate 0 --pause 1 "${sizes[@]}"
bad "--rate" --rate -3 --pause 1 "${sizes[@]}"
bad "--pause" --rate 3 --pause -1 "${sizes[@]}"
bad "--rate and --pause are required" --rate 3 "${sizes[@]}"
bad "--collated-bytes is required" --rate 3 --pause 1 --compressed-bytes 1MiB --decoded-bytes 1MiB
bad "--compressed-bytes" --rate 3 --pause 1 --compressed-bytes 12XB --decoded-bytes 1MiB --collated-bytes 1MiB
bad "--decoded-bytes" --rate 3 --pause 1 --compressed-bytes 1MiB --decoded-bytes 0 --collated-bytes 1MiB
bad "--ranks" --rate 3 --pause 1 "${sizes[@]}" --ranks 0
bad "--host-memory" --rate 3 --pause 1 "${sizes[@]}" --host-memory lots
bad "64 bits" --rate 1e9 --pause 1e6 "${sizes[@]}" --host-memory 1GiB
"$CLI" plan --help | grep -q -- "--from-trace" || fail "--help"
echo "cli_plan: ok"
