#!/usr/bin/env bash
# cli_tune.sh - the read-ahead controller end to end (ringfeed read / bench
# on packed shards). Pass/fail rests on counts and logic the loader reports,
# never on timing:
#   1. records and their order are the same with automatic depth (several
#      budgets, covers, intervals) as with a fixed depth (digest);
#   2. the depth never exceeds what the budget allows (every trace line), and
#      the budget's peak total never exceeds the budget;
#   3. a steady consumer: the depth grows, then settles (bounded number of
#      changes, at most 4 grow<->shrink reversals);
#   4. a stalled producer (fault injector, stall=S/P): the pauses are detected,
#      the automatic cover target grows to cover them, and the bench's
#      stall-cover figures are present and sane (served > 0, within a loose
#      factor of inventory / r);
#   5. --depth N still fixes the depth; bad cover / tune_interval values are
#      refused with a message.
set -euo pipefail
CLI=${RF_CLI:?set RF_CLI to the ringfeed binary}
PY=/usr/bin/python3
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-tune-XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

$PY - "$T/in.txt" <<'PYEOF'
import random, sys
random.seed(11)
abc = "abcdefghijklmnopqrstuvwxyz"
with open(sys.argv[1], "w") as f:
    for i in range(6000):
        f.write("r%d:%s\n" % (i, "".join(random.choices(abc, k=random.randint(0, 120)))))
PYEOF
"$CLI" pack --from lines "$T/in.txt" -o "$T/ds" --block-size 8KiB --shard-size 64KiB >/dev/null
M="$T/ds/manifest.rfm"

# 1. order: automatic depth == fixed depth
ref=$("$CLI" read --digest --seed 9 --shuffle-window 300 --batch 10 --depth 8 "$M")
for args in "" "--budget 3MiB" "--cover 0.05 --tune-interval 10ms" "--cover 2 --threads 1" \
	"--tune-interval 10ms --budget 4MiB --threads 3"; do
	got=$("$CLI" read --digest --seed 9 --shuffle-window 300 --batch 10 $args "$M")
	[ "$got" = "$ref" ] || fail "digest with auto depth $args: $got, want $ref"
done

# 2. the budget's depth limit holds on every interval
"$CLI" bench --json --budget 3MiB --batch 100 --epochs 50 --step-ms 0.2 --tune-interval 20ms \
	--trace "$T/budget.jsonl" "$M" >"$T/budget.json"
$PY - "$T/budget.json" "$T/budget.jsonl" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1])); L = d["loader"]
lines = [json.loads(x) for x in open(sys.argv[2])]
assert d["status"] == 0 and d["records"] == 300000, (d["status"], d["records"])
assert L["depth_auto"] is True
assert len(lines) >= 3, len(lines)
for x in lines:
    assert x["depth"] <= x["depth_max"], x
assert d["mem_peak_total_bytes"] <= d["budget_bytes"], d
assert L["depth_peak_batches"] > 4, L["depth_peak_batches"]   # it did grow
assert max(x["depth"] for x in lines) == L["depth_peak_batches"] or L["depth_peak_batches"] <= L["depth_max_batches"]
PYEOF

# 3. a steady consumer: grows, then settles
"$CLI" bench --json --batch 10 --epochs 2 --step-ms 1 --cover 0.1 --tune-interval 20ms \
	--trace "$T/steady.jsonl" "$M" >"$T/steady.json"
$PY - "$T/steady.json" "$T/steady.jsonl" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1])); L = d["loader"]
lines = [json.loads(x) for x in open(sys.argv[2])]
assert d["status"] == 0 and d["records"] == 12000
assert L["depth_peak_batches"] > 4, L          # grew from the initial 4
assert L["depth_changes"] <= 60, (L["depth_changes"], L["intervals"])
assert L["depth_direction_changes"] <= 4, L["depth_direction_changes"]
events = [x["event"] for x in lines if "event" in x]
assert len(events) == sum(1 for a, b in zip(lines, lines[1:]) if a["depth"] != b["depth"]) \
    + (lines[0]["depth"] != 4), (len(events), [x["depth"] for x in lines])
assert all(e.startswith("depth ") for e in events), events
PYEOF

# 4. a stalled producer: pauses seen, cover grows; stall-cover figures present
"$CLI" bench --json --batch 10 --step-ms 4 --batches 350 --tune-interval 50ms \
	--request-size 4KiB --threads 2 --shuffle-window 1 --inject stall=400ms/1s "$M" >"$T/stall.json"
$PY - "$T/stall.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1])); L = d["loader"]
assert d["status"] == 0 and d["batches"] == 350
assert L["pauses"] >= 1 and L["pause_longest_s"] >= 0.1, (L["pauses"], L["pause_longest_s"])
assert L["pause_longest_source"].endswith(".rfs"), L["pause_longest_source"]
ps = L["pauses_by_source"]
# one stall catches reads of several shards: one pause overall, one per shard
# caught. Every pause overall is a fresh pause of the source whose read began
# it, so the sources' counts sum to at least the overall count while the
# table (8 entries) has evicted none; the longest is one source's longest.
assert 1 <= len(ps) <= 8, ps
assert len(ps) == 8 or sum(p["pauses"] for p in ps) >= L["pauses"], (ps, L["pauses"])
assert all(p["source"].endswith(".rfs") and p["longest_s"] >= 0.1 for p in ps), ps
assert all(p["longest_s"] <= L["pause_longest_s"] + 1e-6 for p in ps), ps
assert len(ps) == 8 or max(p["longest_s"] for p in ps) >= L["pause_longest_s"] - 1e-6, ps
assert L["cover_target_s"] >= L["pause_longest_s"], (L["cover_target_s"], L["pause_longest_s"])
assert len(d["stall_cover"]) >= 1, d["stall_cover"]
for s in d["stall_cover"]:
    assert 0 < s["served_s"] <= 0.4 + 1e-6, s
    assert s["r_bps"] > 0 and s["inventory_batches"] >= 0, s
PYEOF
RINGFEED_INJECT=stall=400ms/1s "$CLI" bench --json --batch 10 --step-ms 4 --batches 300 \
	--depth 20 --request-size 4KiB --threads 2 --shuffle-window 1 "$M" >"$T/stall2.json"
$PY - "$T/stall2.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1])); L = d["loader"]
assert L["depth_auto"] is False and d["depth_batches"] == 20 and L["depth_changes"] == 0
assert len(d["stall_cover"]) >= 1 and L["pauses"] >= 1, (d["stall_cover"], L["pauses"])
s = d["stall_cover"][0]
assert s["depth"] == 20 and abs(s["predicted_s"] - 20 / s["r_bps"]) < 1e-3, s
# loose: the inventory served at least a third, at most three times, its inventory / r
if not s["covered"] and s["inventory_batches"] > 5:
    assert 1 / 3 <= s["served_over_inventory"] <= 3, s
PYEOF

# 5. fixed depth and bad values
"$CLI" bench --json --depth 7 --batch 10 "$M" >"$T/fixed.json"
$PY -c 'import json,sys; d=json.load(open(sys.argv[1])); L=d["loader"]; assert d["depth_batches"]==7 and L["depth_auto"] is False and L["depth_reason"]=="fixed", L' "$T/fixed.json"
for bad in "--cover -1" "--cover 2h" "--cover abc" "--tune-interval 1ms" "--depth 5000"; do
	set +e; "$CLI" read --digest $bad "$M" >/dev/null 2>"$T/err"; rc=$?; set -e
	[ $rc = 2 ] || fail "$bad: exit $rc"
	grep -q "option" "$T/err" || fail "$bad: $(cat "$T/err")"
done
echo "cli_tune: ok"
