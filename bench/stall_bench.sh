#!/usr/bin/env bash
# stall_bench.sh - does read-ahead hide storage stalls, and what does it cost?
#
# The source stalls for P seconds every T seconds (in-engine injector,
# stall=P/T); the consumer works at about half the producer's capacity
# (`ringfeed bench --step-ms` from a first, stall-free run that measures the
# capacity c). Three loaders, run side by side (interleaved, --repeats times,
# medians reported):
#   (a) fixed depth 2 batches (what a default PyTorch loader holds per worker)
#   (b) automatic depth, cover target 1.5 P, a budget with room for it
#   (c) automatic depth, same target, a budget that holds about P/2 of
#       consumption (sized from (b)'s measured bytes per batch and overhead,
#       then corrected once from what (c) reports)
# For each: the consumer's wait fraction (whole run, and from the first stall
# on: the warm-up is the same for every depth), peak RSS, peak budget use,
# depth, the diagnosis, and for the first stall: how long the ready batches
# served the consumer against the prediction D / r (D = the batches ready,
# plus decoded and not yet collated, when the stall began; r = the
# consumer's own rate). Expected: (b) waits < 1% inside its
# budget; (c)'s first stall comes at D / r within 20% and its diagnosis says
# the budget binds.
#
# usage: bench/stall_bench.sh [--stall P] [--period T] [--stalls N] [--repeats N]
#          [--batch N] [--threads N] [--window N] [--json] [SHARDS|DIR|MANIFEST]
# Defaults: P = 0.5 s, T = 3 s, 4 stalls per run, 3 repeats, batch 256,
# 2 decode threads, shuffle window 256 records (a window's decoded records
# are usable only once all of it is decoded; a window of many batches would
# hold decoded records out of reach during a stall and blur D), a 64 MiB demo
# dataset made in a temporary directory.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
CLI=${RF_CLI:-$top/build/ringfeed}
PY=/usr/bin/python3
P=0.5 T=3 STALLS=4 REPEATS=3 BATCH=256 THREADS=2 WINDOW=256 JSON=0 DATA=
while [ $# -gt 0 ]; do
	case $1 in
	--stall) P=$2; shift 2 ;;
	--period) T=$2; shift 2 ;;
	--stalls) STALLS=$2; shift 2 ;;
	--repeats) REPEATS=$2; shift 2 ;;
	--batch) BATCH=$2; shift 2 ;;
	--threads) THREADS=$2; shift 2 ;;
	--window) WINDOW=$2; shift 2 ;;
	--json) JSON=1; shift ;;
	-h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
	-*) echo "stall_bench: unknown option $1" >&2; exit 2 ;;
	*) DATA=$1; shift ;;
	esac
done
[ -x "$CLI" ] || { echo "stall_bench: $CLI not built (scripts/build.sh)" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-stall-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if [ -z "$DATA" ]; then
	"$CLI" pack --demo -o "$tmp/demo" --demo-bytes 64MiB --demo-shards 8 >/dev/null
	DATA=$tmp/demo/manifest.rfm
fi
common=(--json --epochs 0 --batch "$BATCH" --threads "$THREADS" --shuffle-window "$WINDOW")
jget() { "$PY" -c 'import json,sys
d=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."): d=d[k]
print(d)' "$@"; }

# 1. the producer's capacity c: no stalls, no consumer work, a fixed depth
"$CLI" bench "${common[@]}" --depth 16 --batches 800 "$DATA" >"$tmp/cal.json"
c=$(jget "$tmp/cal.json" batches_per_s)
step=$("$PY" -c "print(round(2000.0 / $c, 3))")
# a run long enough for STALLS stalls: (STALLS x T + T/2) s at about c/2
batches=$("$PY" -c "print(int(($STALLS * $T + $T / 2) * $c / 2))")
cover=$("$PY" -c "print($P * 1.5)")
stall="stall=$("$PY" -c "print(int($P * 1000))")ms/$("$PY" -c "print(int($T * 1000))")ms"
run() { # NAME ARGS...
	local name=$1
	shift
	"$CLI" bench "${common[@]}" --step-ms "$step" --batches "$batches" --inject "$stall" \
		--trace "$tmp/$name.trace" "$@" "$DATA" >"$tmp/$name.json"
}
echo "stall_bench: producer capacity c = $c batches/s of $BATCH records; consumer step $step ms" \
	"(r ~ c/2); stalls $stall; $batches batches per run; $REPEATS repeats" >&2

# 2. budgets: (b) generous; (c) non-batch overhead + P/2 of consumption, from a (b) run
run b0 --cover "$cover" --budget 1GiB
budget_c=$("$PY" - "$tmp/b0.json" "$P" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1])); P = float(sys.argv[2]); L = d["loader"]
per = L["batch_bytes_avg"]; r = L["consumer_rate_bps"]
other = d["mem_peak_total_bytes"] - d["mem_peak_bytes"]["batch"]
print(int(other + (r * P / 2 + 1) * per))
EOF
)
budget_b=$("$PY" -c "import json; d=json.load(open('$tmp/b0.json')); print(int(d['mem_peak_total_bytes'] * 1.5))")
run c0 --cover "$cover" --budget "$budget_c"
budget_c=$("$PY" - "$tmp/c0.json" "$P" "$budget_c" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1])); P = float(sys.argv[2]); B = int(sys.argv[3]); L = d["loader"]
want = L["consumer_rate_bps"] * P / 2
print(max(1 << 20, int(B + (want - d["depth_max_batches"]) * L["batch_bytes_avg"])))
EOF
)

# 3. side by side, REPEATS times
for ((i = 1; i <= REPEATS; i++)); do
	run "a$i" --depth 2
	run "b$i" --cover "$cover" --budget "$budget_b"
	run "c$i" --cover "$cover" --budget "$budget_c"
done

"$PY" - "$tmp" "$REPEATS" "$P" "$T" "$c" "$step" "$JSON" <<'EOF'
import json, statistics, sys
tmp, reps, P, T, c, step, as_json = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), \
    float(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6]), sys.argv[7] == "1"

def steady_wait(trace):
    """Wait fraction from the first stall's start on (trace lines: t_s, wait_s)."""
    t0 = T - P
    prev, wait, end = 0.0, 0.0, 0.0
    for line in open(trace):
        x = json.loads(line)
        if prev >= t0:
            wait += x["wait_s"]
        prev = end = x["t_s"]
    return wait / (end - t0) if end > t0 else float("nan")

def one(name):
    d = json.load(open("%s/%s.json" % (tmp, name)))
    L = d["loader"]
    r = L["consumer_rate_bps"]
    s = d["stall_cover"][0] if d["stall_cover"] else None
    # D: the batches the consumer can draw on when the stall begins, ready
    # plus decoded-not-collated (reads in flight are held by the stall)
    D = s["ready"] + s["decoded_batches"] if s else 0
    pred = D / r if s and r else float("nan")
    return {
        "wait": d["consumer_wait_fraction"],
        "wait_steady": steady_wait("%s/%s.trace" % (tmp, name)),
        "rss_mib": d["rss_peak_bytes"] / 2**20,
        "peak_mib": d["mem_peak_total_bytes"] / 2**20,
        "budget_mib": d["budget_bytes"] / 2**20,
        "depth": L["depth_batches"],
        "depth_max": d["depth_max_batches"],
        "r": r,
        "first_served_s": s["served_s"] if s else float("nan"),
        "first_depth": s["depth"] if s else 0,
        "first_D": D,
        "first_depth_over_r_s": s["depth"] / r if s and r else float("nan"),
        "first_predicted_s": pred,
        "first_ratio": (s["served_s"] / pred) if s and pred == pred and pred > 0 else float("nan"),
        "first_covered": bool(s and s["covered"]),
        "stalls_covered": sum(1 for x in d["stall_cover"] if x["covered"]),
        "stalls": len(d["stall_cover"]),
        "diagnosis": L["diagnosis"],
    }

rows = {}
for k in "abc":
    runs = [one("%s%d" % (k, i)) for i in range(1, reps + 1)]
    med = {}
    for f in runs[0]:
        v = [x[f] for x in runs]
        if isinstance(v[0], (int, float)) and not isinstance(v[0], bool):
            med[f] = statistics.median(v)
        else:
            med[f] = max(set(v), key=v.count)  # the most frequent
    med["runs"] = runs
    rows[k] = med
if as_json:
    print(json.dumps({"P_s": P, "T_s": T, "c_bps": c, "step_ms": step, "configs": rows}))
    sys.exit(0)
names = {"a": "(a) fixed depth 2", "b": "(b) auto, budget covers P", "c": "(c) auto, budget ~P/2"}
print("stall P = %.2f s every T = %.2f s; producer capacity c = %.0f batches/s; consumer step "
      "%.2f ms; medians of %d runs" % (P, T, c, step, reps))
print("%-27s %7s %7s %8s %8s %8s %6s %7s %10s %7s %8s %9s %6s %s" % (
    "config", "wait", "wait*", "RSS MiB", "peak", "budget", "depth", "r b/s",
    "1st served", "D", "D/r", "depth/r", "ratio", "diagnosis"))
for k in "abc":
    m = rows[k]
    print("%-27s %6.2f%% %6.2f%% %8.1f %8.1f %8.1f %6d %7.1f %9.3fs %7.1f %7.3fs %8.3fs %6.2f %s" % (
        names[k], 100 * m["wait"], 100 * m["wait_steady"], m["rss_mib"], m["peak_mib"],
        m["budget_mib"], m["depth"], m["r"], m["first_served_s"], m["first_D"],
        m["first_predicted_s"], m["first_depth_over_r_s"], m["first_ratio"], m["diagnosis"]))
print("wait* = from the first stall on; 1st served = how long the inventory fed the consumer in "
      "the first stall (= P when covered); D = ready + decoded batches when it began (reads in "
      "flight wait out the stall); ratio = served / (D/r); depth/r for reference")
b, cc = rows["b"], rows["c"]
print("(b) waits %.2f%% of wall time (%.2f%% from the first stall on), peak %.1f of %.1f MiB: %s" % (
    100 * b["wait"], 100 * b["wait_steady"], b["peak_mib"], b["budget_mib"],
    "under 1%" if b["wait_steady"] < 0.01 else "NOT under 1%"))
print("(c) first stall served %.3f s vs D/r = %.3f s (ratio %.2f: %s); diagnosis %s%s" % (
    cc["first_served_s"], cc["first_predicted_s"], cc["first_ratio"],
    "within 20%" if 0.8 <= cc["first_ratio"] <= 1.2 else "NOT within 20%", cc["diagnosis"],
    " (the budget binds)" if cc["diagnosis"] == "budget_binds" else ""))
EOF
