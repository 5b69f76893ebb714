#!/usr/bin/env bash
# cli_trace.sh - `ringfeed bench --trace FILE` writes one JSON line per
# controller interval in the docs/trace.md format (every required key, the
# right types, t_s never decreasing, depth changes explained in `event`);
# `ringfeed report` and `ringfeed plan --from-trace` accept the real trace;
# the `trace` config key works through `read` too; a trace that cannot be
# opened fails rf_open with the path, and a write error (/dev/full) is
# reported (stats trace_error, stderr, exit status), not ignored.
set -euo pipefail
CLI=${RF_CLI:?set RF_CLI to the ringfeed binary}
PY=/usr/bin/python3
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-trace-XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

$PY - "$T/in.txt" <<'PYEOF'
import random, sys
random.seed(5)
with open(sys.argv[1], "w") as f:
    for i in range(4000):
        f.write("line %d %s\n" % (i, "x" * random.randint(0, 200)))
PYEOF
"$CLI" pack --from lines "$T/in.txt" -o "$T/ds" --block-size 8KiB --shard-size 64KiB >/dev/null
M="$T/ds/manifest.rfm"

# 1. a real trace from bench
"$CLI" bench --json --batch 10 --step-ms 1 --tune-interval 20ms --shuffle-window 1 \
	--trace "$T/t.jsonl" "$M" >"$T/b.json"
$PY - "$T/t.jsonl" "$T/b.json" <<'PYEOF'
import json, math, sys
lines = open(sys.argv[1]).read().split("\n")
assert lines[-1] == "", "the trace ends with a newline"
lines = lines[:-1]
b = json.load(open(sys.argv[2]))
assert len(lines) >= 5, len(lines)
assert b["loader"]["trace_lines"] >= 1 and b["loader"]["trace_error"] is None, b["loader"]
num = (int, float)
last_t, changes = -1, 0
for i, text in enumerate(lines, 1):
    x = json.loads(text)
    for k in ("t_s", "depth", "ready", "decoded", "in_flight", "budget_bytes", "wait_s"):
        assert isinstance(x[k], num) and math.isfinite(x[k]) and x[k] >= 0, (i, k, x[k])
    for k in ("r_bps", "c_bps", "coverage_s"):
        assert x[k] is None or (isinstance(x[k], num) and x[k] >= 0), (i, k, x[k])
    assert set(x["mem"]) == {"fetch", "decoded", "batch", "scratch", "metadata"}, x["mem"]
    assert all(isinstance(v, int) and v >= 0 for v in x["mem"].values())
    assert sum(x["mem"].values()) <= x["budget_bytes"]
    assert x["t_s"] >= last_t, (i, x["t_s"], last_t)
    last_t = x["t_s"]
    assert x["depth"] <= x["depth_max"], x
    if "event" in x:
        assert isinstance(x["event"], str) and x["event"].startswith("depth "), x["event"]
        changes += 1
assert changes >= 1, "the automatic depth grew at least once"
assert any(x is not None for x in (json.loads(t)["r_bps"] for t in lines))
PYEOF

# 2. report and plan --from-trace accept it
"$CLI" report "$T/t.jsonl" -o "$T/t.svg" >"$T/report.txt" || fail "report: $(cat "$T/report.txt")"
grep -q "wrote $T/t.svg" "$T/report.txt" || fail "report said: $(cat "$T/report.txt")"
grep -q "<svg" "$T/t.svg" || fail "no SVG"
"$CLI" plan --from-trace "$T/t.jsonl" --compressed-bytes 8KiB --decoded-bytes 8KiB \
	--collated-bytes 4KiB --json >"$T/plan.json" || fail "plan --from-trace: $(cat "$T/plan.json")"
$PY -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d, d' "$T/plan.json"

# 3. the config key through read
"$CLI" read --digest --trace "$T/r.jsonl" --tune-interval 10ms --batch 10 "$M" >/dev/null
[ -s "$T/r.jsonl" ] || fail "read --trace wrote nothing"
$PY -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' "$T/r.jsonl"

# 4. errors: cannot open; cannot write
set +e
"$CLI" bench --trace "$T/no/such/dir/t.jsonl" "$M" >/dev/null 2>"$T/err"; rc=$?
set -e
[ $rc != 0 ] || fail "an unopenable trace was accepted"
grep -q "trace $T/no/such/dir/t.jsonl: cannot open" "$T/err" || fail "$(cat "$T/err")"
if [ -c /dev/full ] && [ -w /dev/full ]; then # the device, not a file left in its place
	set +e
	"$CLI" bench --json --batch 10 --step-ms 1 --tune-interval 10ms --trace /dev/full "$M" \
		>"$T/full.json" 2>"$T/err"; rc=$?
	set -e
	[ $rc = 1 ] || fail "a failing trace write exited $rc"
	grep -q "trace /dev/full: write failed" "$T/err" || fail "$(cat "$T/err")"
	$PY -c 'import json,sys; d=json.load(open(sys.argv[1]))["loader"]; assert "write failed" in d["trace_error"], d["trace_error"]' "$T/full.json"
fi
echo "cli_trace: ok"
