#!/usr/bin/env bash
# cli_report_loader.sh - `ringfeed report` of a loader trace is as readable
# as the sim report: producer pauses (the loader's pause_s, or c = 0) are
# shaded across the panels and counted in the header; the rate axis is scaled
# to the consumer's r (a far faster producer is clipped and its peak named)
# and intervals without a c are bridged and counted; memory is drawn in the
# unit of what was held (a budget far above it is named in the legend, not
# drawn as a 0.004 GiB sliver); a one-interval trace says so and draws its
# points. Checked on hand-written traces (exact), then on a real loader trace
# rendered to PNG with rsvg-convert when it is installed.
set -euo pipefail
CLI=${RF_CLI:?RF_CLI must name the ringfeed binary}
PY=/usr/bin/python3
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-report-loader-XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
has() { grep -qF -- "$2" "$1" || fail "$1 lacks '$2'"; }
hasnt() { ! grep -qF -- "$2" "$1" || fail "$1 has '$2'"; }

# 16 intervals of 0.2 s: r 800, c 60000 (null while held back in 6 of
# them), one 0.5 s storage pause ending at t = 2.0, 4 MiB held of a 1 GiB budget.
$PY - "$T/loader.jsonl" <<'PYEOF'
import json, sys
with open(sys.argv[1], "w") as f:
    for i in range(1, 17):
        t = round(0.2 * i, 4)
        held_back = i % 3 == 0
        f.write(json.dumps({"t_s": t, "depth": 10 * i, "ready": 8 * i, "decoded": 40,
            "in_flight": 2, "mem": {"fetch": 1 << 20, "decoded": 1 << 20, "batch": 1 << 20,
            "scratch": 524288, "metadata": 524288}, "budget_bytes": 1 << 30,
            "r_bps": 800.0, "c_bps": None if held_back else 60000.0, "wait_s": 0.01 if i == 10 else 0,
            "coverage_s": 0.5, "pause_s": 0.5 if i == 10 else 0.001}) + "\n")
PYEOF
"$CLI" report "$T/loader.jsonl" -o "$T/loader.svg" >/dev/null
has "$T/loader.svg" "1 producer pause (shaded, longest 0.50 s)"
n=$(grep -c 'fill="#E45756" fill-opacity="0.18"' "$T/loader.svg")
[ "$n" = 5 ] || fail "the pause is shaded in $n panels, not 5"
has "$T/loader.svg" "clipped: up to 60000"
has "$T/loader.svg" "none in 5 of 16 (held back)"
# the rate axis ends at 3 r = 2400 (ticks of 500: 2500), not at 60000
$PY - "$T/loader.svg" <<'PYEOF' || fail "rate axis not scaled to r"
import re, sys
svg = open(sys.argv[1]).read()
i = svg.index("Consumer rate r and producer rate c")
j = svg.index("Coverage: inventory / r")
ticks = [float(v) for v in re.findall(r'text-anchor="end"[^>]*>([\d.]+)</text>', svg[i:j])]
assert ticks and max(ticks) <= 3000, ticks
PYEOF
has "$T/loader.svg" "Memory by category, stacked, vs budget (MiB)"
has "$T/loader.svg" "peak memory 4.0 MiB of the 1.0 GiB budget"
has "$T/loader.svg" "budget 1.0 GiB"
hasnt "$T/loader.svg" "GiB)</text>"
hasnt "$T/loader.svg" "Only one interval"

# one interval: a note, and points where lines would draw nothing
head -1 "$T/loader.jsonl" >"$T/one.jsonl"
"$CLI" report "$T/one.jsonl" -o "$T/one.svg" >/dev/null
has "$T/one.svg" "Only one interval in this trace"
d=$(grep -c 'width="6.0" height="6.0"' "$T/one.svg")
[ "$d" -ge 8 ] || fail "one-interval report draws $d points"

# a sim trace: its stall (c = 0) is shaded too
"$CLI" sim --lambda 5 --mu 4 --initial 6 --capacity 12 --stall 4:2 --step 0.1 --until 10 \
	--trace "$T/sim.jsonl" >/dev/null
"$CLI" report "$T/sim.jsonl" -o "$T/sim.svg" >/dev/null
has "$T/sim.svg" "1 producer pause (shaded, longest 2.00 s)"

# a real loader trace with injected stalls, drawn and rendered
seq 1 60000 | sed 's/^/record-/' >"$T/in.txt"
"$CLI" pack -q --from lines "$T/in.txt" -o "$T/ds" --block-size 8KiB --shard-size 64KiB >/dev/null
"$CLI" bench -q --step-ms 1 --batch 16 --batches 2500 --inject stall=400ms/1200ms \
	--tune-interval 100ms --trace "$T/real.jsonl" "$T/ds" >/dev/null
"$CLI" report "$T/real.jsonl" -o "$T/real.svg" >/dev/null
grep -Eq '[0-9]+ producer pauses? \(shaded' "$T/real.svg" || fail "the injected stalls are not marked"
if ! command -v rsvg-convert >/dev/null; then
	# A check not run is a skip (CTest's 77), never a pass.
	echo "cli_report_loader: SKIP: the render check needs rsvg-convert (librsvg2-bin);" \
		"the other checks passed"
	exit 77
fi
rsvg-convert "$T/real.svg" -o "$T/real.png" || fail "rsvg-convert cannot render the report"
[ -s "$T/real.png" ] || fail "empty PNG"
echo "cli_report_loader: ok"
