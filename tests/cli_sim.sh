#!/usr/bin/env bash
# cli_sim.sh - `ringfeed sim`: the fluid model's exact empty times (steps,
# stalls, capacity), its JSON and trace, the seeded discrete-event trials,
# and flag validation (exit 2 with a message).
set -euo pipefail
CLI=${RF_CLI:?RF_CLI must name the ringfeed binary}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# json_check FILE PYTHON-EXPRESSION (d = the parsed object)
json_check() {
	"$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' \
		"$1" "$2" || fail "$1: $2 does not hold: $(cat "$1")"
}

# 1. The issue's case: 4 batches at 4/s with no producer empty at 1.0 s, after two steps.
"$CLI" sim --lambda 0 --mu 4 --initial 4 --step 0.5 > "$tmp/req.txt"
grep -q "first empty at 1 s" "$tmp/req.txt" || fail "text output: $(cat "$tmp/req.txt")"
[ "$(grep -cE '^ +[0-9.]+ +[0-9.]+ ' "$tmp/req.txt")" = 3 ] || fail "expected 3 rows (t = 0, 0.5, 1)"
"$CLI" sim --lambda 0 --mu 4 --initial 4 --step 0.5 --json > "$tmp/req.json"
json_check "$tmp/req.json" 'd["empty_at_s"] == 1.0'
json_check "$tmp/req.json" '[p["t"] for p in d["series"]] == [0, 0.5, 1.0]'
json_check "$tmp/req.json" '[p["inventory"] for p in d["series"]] == [4, 2, 0]'

# 2. Empty inside a step is solved exactly: 1 batch at 3/s empties at 1/3 s.
"$CLI" sim --mu 3 --initial 1 --step 0.5 --json > "$tmp/third.json"
json_check "$tmp/third.json" 'abs(d["empty_at_s"] - 1/3) < 1e-12 and len(d["series"]) == 2'

# 3. A stall, by hand: lambda 2, mu 4, 4 ready, producer stalled 0.25..1.25 s.
#    0..0.25: -2/s -> 3.5; 0.25..1.0: -4/s -> 0.5; then 0.5 / 4 = 0.125 s -> empty at 1.125 s.
#    Waiting: 1.125..1.25 all of it (0.125 s), 1.25..3 half of it (0.875 s): 1.0 s in all.
"$CLI" sim --lambda 2 --mu 4 --initial 4 --stall 0.25:1 --step 0.5 --until 3 --json \
	--trace "$tmp/stall.trace" > "$tmp/stall.json"
json_check "$tmp/stall.json" 'd["empty_at_s"] == 1.125'
json_check "$tmp/stall.json" '[p["inventory"] for p in d["series"]][:4] == [4, 2.5, 0.5, 0]'
json_check "$tmp/stall.json" 'd["series"][-1]["t"] == 3 and d["stalls"] == [{"start_s": 0.25, "duration_s": 1}]'
"$PY" - "$tmp/stall.trace" <<'PYEOF' || fail "stall trace"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert len(lines) == 7, len(lines)
assert abs(sum(l["wait_s"] for l in lines) - 1.0) < 1e-12, [l["wait_s"] for l in lines]
events = " ".join(l.get("event", "") for l in lines)
assert "inventory empty at 1.125 s" in events and "producer stall begins at 0.25 s" in events, events
assert lines[1]["c_bps"] == 1.0, lines[1]  # producer active half of 0..0.5
PYEOF

# 4. Capacity clips: +4/s from 2 with room for 5 reaches 5 and stays there.
"$CLI" sim --lambda 6 --mu 2 --initial 2 --capacity 5 --step 0.5 --until 2 --json > "$tmp/cap.json"
json_check "$tmp/cap.json" '[p["inventory"] for p in d["series"]] == [2, 4, 5, 5, 5]'
json_check "$tmp/cap.json" 'd["empty_at_s"] is None and d["capacity"] == 5'

# 5. Discrete trials: with constant costs the time to empty is exactly D/r;
#    with variable costs D/r is only the centre of a spread (some trials run
#    dry earlier); the same seed gives the same answer.
"$CLI" sim --mu 4 --initial 4 --discrete --cost-cv 0 --trials 50 --json > "$tmp/d0.json"
json_check "$tmp/d0.json" 'all(d["empty_at_s"][k] == 1.0 for k in ("min","median","max")) and d["before_predicted"] == 0'
"$CLI" sim --mu 4 --initial 4 --discrete --cost-cv 0.5 --trials 2000 --seed 7 --json > "$tmp/d1.json"
"$CLI" sim --mu 4 --initial 4 --discrete --cost-cv 0.5 --trials 2000 --seed 7 --json > "$tmp/d2.json"
cmp -s "$tmp/d1.json" "$tmp/d2.json" || fail "same seed, different results"
json_check "$tmp/d1.json" 'd["predicted_s"] == 1.0 and d["empty_at_s"]["min"] < d["empty_at_s"]["p10"] < 1.0 < d["empty_at_s"]["p90"] < d["empty_at_s"]["max"]'
json_check "$tmp/d1.json" '0 < d["before_predicted"] < 2000 and d["never"] == 0'
# A producer faster than the consumer behind a bounded queue never runs dry.
"$CLI" sim --lambda 8 --mu 4 --initial 2 --capacity 4 --discrete --cost-cv 0 --until 5 --trials 10 --json > "$tmp/d3.json"
json_check "$tmp/d3.json" 'd["never"] == 10 and d["empty_at_s"]["median"] is None'
"$CLI" sim --mu 4 --initial 4 --discrete --trials 100 | grep -q "ran dry before D / r" || fail "discrete text"

# 6. Bad flags: exit 2 and a message that names the problem.
bad() {
	local want=$1; shift
	set +e
	"$CLI" sim "$@" > "$tmp/out" 2> "$tmp/err"
	local rc=$?
	set -e
	[ $rc = 2 ] || fail "sim $* exited $rc, expected 2"
	grep -q -- "$want" "$tmp/err" || fail "sim $*: stderr lacks '$want': $(cat "$tmp/err")"
	[ ! -s "$tmp/out" ] || fail "sim $* printed results"
}
bad "--mu is required" --lambda 1
bad "--mu" --mu -1
bad "--mu" --mu 0
bad "--lambda" --mu 1 --lambda -2
bad "--lambda" --mu 1 --lambda nan
bad "--lambda" --mu 1 --lambda 3x
bad "START:DURATION" --mu 1 --stall 3
bad "START:DURATION" --mu 1 --stall 1:-2
bad "START:DURATION" --mu 1 --stall -1:2
bad "START:DURATION" --mu 1 --stall a:b
bad "START:DURATION" --mu 1 --stall 1:2:3
bad "--step" --mu 1 --step 0
bad "--step" --mu 1 --step -0.5
bad "--until must be at least one --step" --mu 1 --step 1 --until 0.5
bad "more than the 100000 allowed" --mu 1 --step 0.001 --until 1000
bad "larger than --capacity" --mu 1 --initial 5 --capacity 2
bad "whole numbers" --mu 1 --initial 2.5 --discrete
bad "--trials" --mu 1 --discrete --trials 0
bad "--cost-cv" --mu 1 --discrete --cost-cv -1
bad "unexpected argument" --mu 1 extra
bad "bad option" --mu 1 --no-such-flag
bad "--batch-bytes" --mu 1 --batch-bytes 1.5XB
"$CLI" sim --help | grep -q -- "--stall START:DUR" || fail "--help"
echo "cli_sim: ok"
