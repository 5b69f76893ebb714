#!/usr/bin/env bash
# cli_bench_report.sh - the bench report agrees with itself and with the
# stats JSON of the same run (--stats FILE): one value per figure. Checked
# on a run with a paced consumer, injected storage stalls and a second,
# fixed-depth run (--compare-depth): the consumer's r and the producer's c,
# the wait, the depth and what it covers (depth / r), the cover target, the
# pauses (one per stall, not one per stalled read), peak memory against the
# budget, and the diagnosis text (the same words and numbers as the JSON's,
# and never against the figures next to it: "never waits" beside a wait,
# "too short" beside a fixed depth that covered every stall with no wait).
# Pass/fail rests on figures the run reports, never on how fast it ran.
set -euo pipefail
CLI=${RF_CLI:?set RF_CLI to the ringfeed binary}
PY=/usr/bin/python3
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-bench-report-XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

$PY -c '
import sys
with open(sys.argv[1], "w") as f:
    for i in range(60000):
        f.write("record-%06d-%s\n" % (i, "x" * (i % 97)))
' "$T/in.txt"
# many small shards and blocks: a stall catches many reads at once
"$CLI" pack --from lines "$T/in.txt" -o "$T/ds" --block-size 16KiB --shard-size 256KiB >/dev/null
M="$T/ds/manifest.rfm"
"$CLI" bench --step-ms 1 --batch 32 --epochs 2 --inject stall=300ms/900ms --budget 32MiB \
	--tune-interval 50ms --compare-depth 2 --stats "$T/stats.json" -q "$M" >"$T/report.txt" \
	2>"$T/err" || fail "bench failed: $(cat "$T/err")"
cat "$T/report.txt"

$PY - "$T/report.txt" "$T/stats.json" <<'PYEOF'
import json, math, re, sys
text = open(sys.argv[1]).read()
s = json.load(open(sys.argv[2]))
def fail(msg):
    sys.exit("FAIL: " + msg + "\n--- report\n" + text)
def one(pattern, what):
    m = re.findall(pattern, text, re.M)
    if len(m) != 1:
        fail(f"{what}: {len(m)} matches of {pattern!r}")
    return m[0]
def same(shown, value, fmt, what):
    # The JSON rounds a rate to 3 decimals, the report to fewer: re-rounding
    # the JSON's 803.350 gives 803.4 where the report's 803.3496 gave 803.3.
    # So a shown figure agrees when it is the JSON's value to the report's
    # precision: within half its last digit plus the JSON's own rounding.
    if shown == fmt % value:
        return
    dec = len(shown.split(".")[1]) if "." in shown else 0
    if dec and abs(float(shown) - value) <= 0.5 * 10 ** -dec + 0.0005 + 1e-9:
        return
    fail(f"{what}: report {shown}, stats {fmt % value}")

r, busy, wait, pct = one(r"^  consumer: r ([\d.]+) batches/s over its own ([\d.]+) s .*"
                         r"waited ([\d.]+) s, ([\d.]+)% of the time$", "consumer line")
same(r, s["consumer_rate_bps"], "%.1f", "r")
same(busy, s["consumer_busy_s"], "%.3f", "consumer own time")
same(wait, s["consumer_wait_s"], "%.3f", "consumer wait")
same(pct, 100 * min(1, s["consumer_wait_s"] / s["elapsed_s"]), "%.1f", "wait %")
c = one(r"^  producer: c ([\d.]+) batches/s", "producer line")
same(c, s["producer_rate_bps"], "%.1f", "c")

pauses, longest = one(r"; (\d+) pauses \(overlapping slow reads count once\), the longest "
                      r"([\d.]+) s$", "pauses")
same(pauses, s["pauses"], "%d", "pauses")
same(longest, s["pause_longest_s"], "%.3f", "longest pause")
# stall windows that began while the loader ran: [k*0.9 - 0.3, k*0.9), k >= 1
windows = sum(1 for k in range(1, 1000) if k * 0.9 - 0.3 < s["elapsed_s"])
if not 1 <= int(pauses) <= windows + 1:
    fail(f"{pauses} pauses for {windows} injected stalls")

d, cov, peak, dmax = one(r"^  depth: automatic, (\d+) batches = ([\d.]+) s at r \(peak (\d+); "
                         r"the budget allows (\d+)\)", "depth line")
same(d, s["depth_batches"], "%d", "depth")
same(peak, s["depth_peak_batches"], "%d", "depth peak")
same(dmax, s["depth_max_batches"], "%d", "depth max")
same(cov, int(d) / s["consumer_rate_bps"], "%.2f", "depth / r")
tgt = one(r"cover target ([\d.]+) s;", "cover target")
same(tgt, s["cover_target_s"], "%.2f", "cover target")
if s["cover_target_s"] <= 0:
    fail("cover target 0 after controller intervals")

tot, bud = one(r"^  memory: peak total ([\d.]+) MiB of the ([\d.]+) MiB budget", "memory")
same(tot, s["mem_peak_total_bytes"] / 1048576, "%.1f", "peak total")
same(bud, s["budget_bytes"] / 1048576, "%.1f", "budget")
if s["mem_peak_total_bytes"] > s["budget_bytes"]:
    fail("peak total above the budget")

diag = one(r"^  diagnosis: (.*)$", "diagnosis")
if diag != s["diagnosis_text"]:
    fail(f"diagnosis differs from the stats JSON's: {diag!r} vs {s['diagnosis_text']!r}")
if s["diagnosis"] == "measuring":
    fail("diagnosis still measuring after the run")
# every rate in the words is r or c, every depth and cover is this run's
for who, val in re.findall(r"(consumer(?:'s)?|producer|sustains|takes) ([\d.]+) batches/s", diag):
    want = r if who in ("consumer", "consumer's", "takes") else c
    if val != want:
        fail(f"diagnosis says {who} {val} batches/s, the report {want}")
for dd, cc in re.findall(r"depth (\d+) covers ([\d.]+) s", diag):
    if dd != d or cc != cov:
        fail(f"diagnosis: depth {dd} covers {cc} s; the report: {d} = {cov} s")
m = re.search(r"waited ([\d.]+)% of the time", diag)
if m and m.group(1) != pct:
    fail(f"diagnosis: waited {m.group(1)}%, the report {pct}%")

# the side-by-side table: the automatic column is this run's figures
row = one(r"^    consumer waited\s+([\d.]+) s \(([\d.]+)%\)\s+([\d.]+) s \(([\d.]+)%\)$", "table")
if row[0] != wait or row[1] != pct:
    fail(f"table's automatic wait {row[0]} s ({row[1]}%) is not the run's {wait} s ({pct}%)")
fixed = one(r"^    depth, batches\s+(\d+) \(peak \d+\)\s+(\d+)$", "table depth")
if fixed[0] != d or fixed[1] != "2":
    fail(f"table depths {fixed}, want {d} and 2")
fd = one(r"^    diagnosis, fixed depth\s+(.*)$", "fixed diagnosis")
if not re.search(r"depth 2 covers", fd):
    fail(f"fixed-depth diagnosis does not state depth 2: {fd}")
print("figures agree: r", r, "c", c, "depth", d, "pauses", pauses, "for", windows, "stalls")
PYEOF

# check_words REPORT: the diagnoses never contradict the figures printed
# beside them (issue 16 item 5).
check_words() {
	$PY - "$1" <<'PYEOF'
import re, sys
text = open(sys.argv[1]).read()
def fail(msg):
    sys.exit("FAIL: " + msg + "\n--- report\n" + text)
m = re.search(r"^  consumer: .* waited ([\d.]+) s, ([\d.]+)% of the time$", text, re.M)
diag = re.search(r"^  diagnosis: (.*)$", text, re.M)
if not m or not diag:
    fail("no consumer line or diagnosis")
wait, pct, diag = float(m.group(1)), m.group(2), diag.group(1)
stall_waits = len(re.findall(r"^  stall \d+ .*then the consumer waited", text, re.M))
if (wait > 0 or stall_waits) and re.search(r"never wait", diag):
    fail(f"the consumer waited {wait} s ({stall_waits} stalls not covered), "
         f"the diagnosis says it never waits: {diag}")
if wait > 0 and "always full" in diag:
    fail(f"the consumer waited {wait} s, the diagnosis says the queue was always full: {diag}")
w = re.search(r"waited ([\d.]+)% of the time \(([\d.]+) s\)", diag)
if w and (w.group(1) != pct or float(w.group(2)) != wait):
    fail(f"diagnosis: waited {w.group(1)}% ({w.group(2)} s), the report {pct}% ({wait} s)")
fd = re.search(r"^    diagnosis, fixed depth\s+(.*)$", text, re.M)
row = re.search(r"^    consumer waited\s+[\d.]+ s \([\d.]+%\)\s+([\d.]+) s \(([\d.]+)%\)$",
                text, re.M)
if fd and row:
    fd, fwait = fd.group(1), float(row.group(1))
    cov = re.search(r"^    stalls covered\s+\d+ of \d+\s+(\d+) of (\d+)$", text, re.M)
    if cov and cov.group(1) == cov.group(2) and fwait == 0 and "too short" in fd:
        fail(f"fixed depth covered {cov.group(1)} of {cov.group(2)} stalls and waited "
             f"0 s, the diagnosis says it is too short: {fd}")
    if "too short" in fd:
        fw = re.search(r"waited ([\d.]+)% of the time \(([\d.]+) s\), ([\d.]+) s of it", fd)
        if not fw or float(fw.group(2)) != fwait or float(fw.group(3)) <= 0:
            fail(f"'too short' without the wait that shows it (fixed run waited {fwait} s): {fd}")
    if fwait > 0 and re.search(r"never wait", fd):
        fail(f"the fixed-depth run waited {fwait} s, its diagnosis says never: {fd}")
print("words agree with the figures:", diag[:60], "...")
PYEOF
}
check_words "$T/report.txt" || fail "the report contradicts itself"

# scripts/main.sh's story settings are accepted by bench and give the side by
# side table and a diagnosis (shortened here to a few hundred batches).
SRC=${RF_SOURCE_DIR:?}
story=$(sed -n '/exec "$top\/build\/ringfeed" bench --step-ms/,/"\$@"$/p' "$SRC/scripts/main.sh" |
	tr -d '\\\n' | sed 's/.*ringfeed" bench//; s/"\$@"//')
[ -n "$story" ] || fail "cannot find the story's bench flags in scripts/main.sh"
"$CLI" bench $story --batches 300 --budget 32MiB -q "$M" >"$T/story.txt" 2>"$T/err" ||
	fail "main.sh's flags ($story): $(cat "$T/err")"
grep -q "^    consumer waited " "$T/story.txt" || fail "story run has no side-by-side table: $(cat "$T/story.txt")"
grep -q "^  diagnosis: " "$T/story.txt" || fail "story run has no diagnosis"
cat "$T/story.txt"
check_words "$T/story.txt" || fail "the story's report contradicts itself"
# A fixed depth of 2 that covers 0.5 s stalls every 1.5 s (the consumer's
# 2 ms per batch): its column must not call it too short without a wait.
"$CLI" bench --step-ms 2 --inject stall=500ms/1500ms --batches 1200 --budget 32MiB \
	--compare-depth 2 -q "$M" >"$T/fixed.txt" 2>"$T/err" || fail "fixed-depth run: $(cat "$T/err")"
cat "$T/fixed.txt"
check_words "$T/fixed.txt" || fail "the fixed-depth report contradicts itself"
echo "cli_bench_report: ok"
