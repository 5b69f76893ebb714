#!/usr/bin/env bash
# cli_report.sh - `ringfeed report`: a well-formed SVG with every panel from
# the shipped sample trace and from a fresh sim trace; long traces are
# bucketed; malformed lines are errors that name the line.
set -euo pipefail
CLI=${RF_CLI:?RF_CLI must name the ringfeed binary}
SRC=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

well_formed() {
	if command -v xmllint > /dev/null; then
		xmllint --noout "$1" || fail "$1 is not well-formed XML"
	fi
	"$PY" -c 'import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); sys.exit(0 if r.tag.endswith("svg") else 1)' "$1" \
		|| fail "$1 is not an SVG document"
}
has() { grep -qF -- "$2" "$1" || fail "$1 lacks '$2'"; }

# 1. The shipped sample (written by `ringfeed sim --trace`).
"$CLI" report "$SRC/tests/data/sim-trace.jsonl" -o "$tmp/sample.svg" > "$tmp/out.txt"
grep -q "wrote $tmp/sample.svg (201 intervals, 20 s)" "$tmp/out.txt" || fail "$(cat "$tmp/out.txt")"
well_formed "$tmp/sample.svg"
for title in "Ready queue and depth (batches)" "Memory by category, stacked, vs budget (MiB)" \
	"Consumer waiting (% of each interval; 3.5 s in total)" \
	"Consumer rate r and producer rate c (batches/s)" "Coverage: inventory / r (s)" \
	"time (s)" "Events" "t = 11.5 s: inventory empty at 11.5 s" ">budget<" ">ready<"; do
	has "$tmp/sample.svg" "$title"
done

# 2. A fresh trace, long enough to be bucketed, drawn with --json.
"$CLI" sim --lambda 3 --mu 4 --initial 10 --stall 2:1 --step 0.001 --until 15 \
	--trace "$tmp/long.jsonl" > /dev/null
"$CLI" report "$tmp/long.jsonl" -o "$tmp/long.svg" --json > "$tmp/long.json"
"$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["lines"] == 15001 and d["t_last_s"] == 15, d' \
	"$tmp/long.json" || fail "report --json: $(cat "$tmp/long.json")"
well_formed "$tmp/long.svg"
has "$tmp/long.svg" "15001 lines drawn as 1400 points"
[ "$(stat -c %s "$tmp/long.svg")" -lt 2000000 ] || fail "bucketed SVG is too large"

# 3. Event text is escaped; null rates are gaps, not errors.
cat > "$tmp/esc.jsonl" <<'JSONL'
{"t_s":0,"depth":2,"ready":0,"decoded":0,"in_flight":2,"mem":{"fetch":10,"decoded":0,"batch":0,"scratch":5,"metadata":1},"budget_bytes":100,"r_bps":null,"c_bps":null,"wait_s":0,"coverage_s":null,"event":"open <a&b> \"q\""}
{"t_s":1,"depth":4,"ready":1,"decoded":1,"in_flight":2,"mem":{"fetch":10,"decoded":20,"batch":30,"scratch":5,"metadata":1},"budget_bytes":100,"r_bps":2,"c_bps":3,"wait_s":0.5,"coverage_s":2,"event":"depth 2 -> 4"}
JSONL
"$CLI" report "$tmp/esc.jsonl" -o "$tmp/esc.svg" > /dev/null
well_formed "$tmp/esc.svg"
has "$tmp/esc.svg" "open &lt;a&amp;b&gt; &quot;q&quot;"
has "$tmp/esc.svg" "Memory by category, stacked, vs budget (bytes)"

# Extreme but valid values (one instant, huge magnitudes) stay bounded and finite.
X='"decoded":0,"in_flight":0,"mem":{"fetch":1e308,"decoded":1e308,"batch":0,"scratch":0,"metadata":0},"budget_bytes":1e308,"r_bps":1e300,"c_bps":0,"wait_s":1e300,"coverage_s":1e-300'
echo "{\"t_s\":1e300,\"depth\":1e300,\"ready\":5,$X}" > "$tmp/ext.jsonl"
timeout 20 "$CLI" report "$tmp/ext.jsonl" -o "$tmp/ext.svg" > /dev/null || fail "extreme values"
well_formed "$tmp/ext.svg"
! grep -qiE '[0-9],-?(nan|inf)|-?(nan|inf),[-0-9]|="-?(nan|inf)"' "$tmp/ext.svg" \
	|| fail "non-finite coordinates in the SVG"

# 4. Malformed traces: exit 1, the message names the line, no SVG is left.
head -n 6 "$SRC/tests/data/sim-trace.jsonl" > "$tmp/good6"
bad() { # NAME WANT: $tmp/NAME.jsonl must fail with WANT in the message
	set +e
	"$CLI" report "$tmp/$1.jsonl" -o "$tmp/$1.svg" > /dev/null 2> "$tmp/$1.err"
	local rc=$?
	set -e
	[ $rc = 1 ] || fail "$1: exited $rc, expected 1"
	grep -qF -- "$2" "$tmp/$1.err" || fail "$1: stderr lacks '$2': $(cat "$tmp/$1.err")"
	[ ! -e "$tmp/$1.svg" ] || fail "$1: an SVG was written"
}
{ cat "$tmp/good6"; echo '{"t_s":0.6,"depth":12,'; } > "$tmp/trunc.jsonl"
bad trunc "trunc.jsonl:7: bad JSON"
sed '3s/"ready":[0-9.]*,//' "$tmp/good6" > "$tmp/nokey.jsonl"
bad nokey 'nokey.jsonl:3: missing key "ready"'
sed '2s/"depth":12/"depth":"12"/' "$tmp/good6" > "$tmp/type.jsonl"
bad type 'type.jsonl:2: "depth" is not a number'
sed '4s/"wait_s":0/"wait_s":-1/' "$tmp/good6" > "$tmp/neg.jsonl"
bad neg 'neg.jsonl:4: "wait_s" is -1'
sed '5s/"t_s":0.4/"t_s":0.1/' "$tmp/good6" > "$tmp/back.jsonl"
bad back 'back.jsonl:5: t_s 0.1 goes back in time'
{ head -n 2 "$tmp/good6"; echo; tail -n 2 "$tmp/good6"; } > "$tmp/blank.jsonl"
bad blank "blank.jsonl:3: empty line"
{ head -n 1 "$tmp/good6"; echo '[1,2]'; } > "$tmp/array.jsonl"
bad array "array.jsonl:2: not a JSON object"
sed '1s/"batch":[0-9]*/"batch":null/' "$tmp/good6" > "$tmp/mem.jsonl"
bad mem 'mem.jsonl:1: "mem"."batch"'
sed '1s/"r_bps":4,/"r_bps":4,"r_bps":5,/' "$tmp/good6" > "$tmp/dup.jsonl"
bad dup "dup.jsonl:1: bad JSON"
: > "$tmp/empty.jsonl"
bad empty "the trace has no lines"
"$PY" -c 'print("{\"t_s\":" + " " * 70000 + "0}")' > "$tmp/long1.jsonl"
bad long1 "long1.jsonl:1: line longer than 65536 bytes"
set +e
"$CLI" report "$tmp/none.jsonl" -o "$tmp/x.svg" 2> "$tmp/none.err"
rc=$?
"$CLI" report "$tmp/good6" > /dev/null 2>&1
rc2=$?
set -e
[ $rc = 1 ] && grep -q "none.jsonl: No such file" "$tmp/none.err" || fail "missing trace: $rc"
[ $rc2 = 2 ] || fail "report without -o exited $rc2"
"$CLI" report --help | grep -q "TRACE -o FILE.svg" || fail "--help"
echo "cli_report: ok"
