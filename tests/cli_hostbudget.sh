#!/usr/bin/env bash
# cli_hostbudget.sh - several `ringfeed read` processes on one host budget:
#  - ranks 0..2 of one job at once, each with a 16 MiB budget, sharing a
#    10 MiB host budget (< 3 x 16 MiB), with and without --host-loaders 3:
#    each delivers exactly what it delivers alone without a host budget
#    (digest), and the host's peak usage as each one reports it never
#    exceeds the host total; the shared object is removed at the end;
#  - one loader whose consumer is slow and whose read-ahead wants more than
#    the host total is held back by it (refusals), never above it;
#  - a loader killed with SIGKILL while attached: a loader asking for another
#    total meanwhile is refused naming both totals; the next loader reclaims
#    the dead one's bytes on open;
#  - bench takes the flags and reports the host figures (text and --json);
#  - a host budget below one loader's minimum, and a bad name, are refused;
#  - the object truncated (or truncated and grown back, zeroed) under a
#    running loader ends its stream with an error naming the object, even
#    though nothing waits on the host total (it used to carry on, unbounded).
set -euo pipefail
CLI=${RF_CLI:?set RF_CLI to the ringfeed binary}
PY=/usr/bin/python3
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-hostbudget-XXXXXX")
name=clihb-$$
killpid=""
pids=() # run_three's ranks: a failed check exits while others still run
cleanup() {
	[ -z "$killpid" ] || kill -9 "$killpid" 2>/dev/null || true
	[ ${#pids[@]} -eq 0 ] || kill -9 "${pids[@]}" 2>/dev/null || true
	rm -rf "$T"
	rm -f "/dev/shm/ringfeed-hb-$name" "/dev/shm/ringfeed-hb-$name-kill" \
		"/dev/shm/ringfeed-hb-$name-trunc" "/dev/shm/ringfeed-hb-$name-regrow"
}
trap cleanup EXIT
trap 'exit 130' INT TERM # the EXIT trap then runs (CTest kills on timeout)
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok   $*"; }

# 240000 records of 100 bytes, ~9 shards of 16 KiB blocks: about 8 MB per rank.
$PY - "$T/lines.txt" <<'PYEOF'
import random, sys
random.seed(11)
abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
with open(sys.argv[1], "w") as f:
    for i in range(240000):
        f.write("".join(random.choices(abc, k=100)) + "\n")
PYEOF
"$CLI" pack --from lines "$T/lines.txt" -o "$T/ds" --block-size 16KiB --shard-size 2MiB >/dev/null
# Deep read-ahead, so that each loader alone wants more than the host total.
O=(--budget 16MiB --threads 1 --shuffle-window 32 --world 3 --depth 4096 --batch 512
	--request-size 4096)

for r in 0 1 2; do
	"$CLI" read --digest "$T/ds" "${O[@]}" --rank $r >"$T/want.$r"
done

# run_three TAG FLAGS...: ranks 0..2 at once on a 10 MiB host budget (each
# with a 16 MiB budget); checks their records and their reported figures.
run_three() {
	local tag=$1
	shift
	local r
	pids=()
	for r in 0 1 2; do
		"$CLI" read --digest "$T/ds" "${O[@]}" --rank $r --host-budget 10MiB \
			--host-budget-name "$name" --inject latency=1ms --stats "$T/stats.$r" "$@" \
			>"$T/got.$r" 2>"$T/err.$r" &
		pids+=($!)
	done
	for r in 0 1 2; do
		wait "${pids[$r]}" || fail "$tag: rank $r exited $?: $(cat "$T/err.$r")"
		cmp -s "$T/want.$r" "$T/got.$r" ||
			fail "$tag: rank $r delivered $(cat "$T/got.$r"), alone: $(cat "$T/want.$r")"
	done
	pids=()
	ok "$tag: 3 ranks on one host budget deliver what each delivers alone"
	$PY - "$T" $((10 << 20)) $((16 << 20)) <<'PYEOF'
import json, sys
d, host, own = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
records = refusals = 0
for r in range(3):
    s = json.load(open(f"{d}/stats.{r}"))
    h = s["host_budget"]
    records += s["records"]
    assert h["total_bytes"] == host, h
    assert 0 < h["peak_used_bytes"] <= host, f"rank {r}: host peak {h['peak_used_bytes']} > {host}"
    assert h["floor_bytes"] <= h["peak_held_bytes"] <= host, h
    refusals += h["refusals"]
    assert s["mem_peak_total_bytes"] <= own, s["mem_peak_total_bytes"]
    print(f"  rank {r}: host peak {h['peak_used_bytes']} of {host}, own peak held "
          f"{h['peak_held_bytes']}, floor {h['floor_bytes']}, refusals {h['refusals']}, "
          f"loaders at its end {h['loaders']}")
assert records == 240000, records
# Whether these ranks meet the host total depends on how their runs overlap
# (a fast consumer keeps each one's read-ahead small); the slow-consumer case
# below shows that the total binds.
print(f"  refusals over the 3 ranks: {refusals}")
PYEOF
	ok "$tag: host peak never above the 10 MiB host total"
	[ ! -e "/dev/shm/ringfeed-hb-$name" ] || fail "$tag: the host budget object was left behind"
}
# Announced: room for each rank's minimum is kept until all three are in.
run_three "announced" --host-loaders 3
# Not announced: a late rank waits for the others to drain to get its minimum.
run_three "unannounced"
ok "the last loader removed the shared object"

# A slow consumer with deep read-ahead: alone it would fill its own 16 MiB
# budget, so the 10 MiB host total must refuse it, and it must still deliver
# every record.
"$CLI" bench --json "$T/ds" --budget 16MiB --threads 1 --depth 4096 --batch 512 --step-ms 2 \
	--host-budget 10MiB --host-budget-name "$name-slow" >"$T/slow.json" 2>"$T/slow.err" ||
	fail "slow consumer on a host budget: $(cat "$T/slow.err")"
$PY - "$T/slow.json" <<'PYEOF' || fail "slow consumer on a host budget: $(cat "$T/slow.json")"
import json, sys
d = json.load(open(sys.argv[1]))["loader"]
h = d["host_budget"]
assert d["records"] == 240000, d["records"]
assert h["refusals"] > 0, f"the host total never held the loader back: {h}"
assert h["floor_bytes"] < h["peak_used_bytes"] <= h["total_bytes"] == 10 << 20, h
print(f"  slow consumer: host peak {h['peak_used_bytes']} of {h['total_bytes']}, refusals {h['refusals']}")
PYEOF
ok "a loader whose read-ahead wants more than the host total is held back by it"

# A loader killed while attached; its reservation is reclaimed by the next one.
kname=$name-kill
"$CLI" read "$T/ds" "${O[@]}" --rank 0 --host-budget 10MiB --host-budget-name "$kname" \
	--inject latency=500ms >/dev/null 2>&1 &
killpid=$!
for _ in $(seq 1 300); do # bounded: 30 s
	[ -e "/dev/shm/ringfeed-hb-$kname" ] && break
	sleep 0.1
done
[ -e "/dev/shm/ringfeed-hb-$kname" ] || fail "the first loader never created the host budget"
# Creation and joining are serialised, so from here on it is attached.
set +e
"$CLI" read "$T/ds" "${O[@]}" --rank 1 --host-budget 12MiB --host-budget-name "$kname" \
	>"$T/out" 2>&1
rc=$?
set -e
[ $rc = 1 ] || fail "a different total: exit $rc, want 1: $(cat "$T/out")"
grep -q "10485760 bytes" "$T/out" && grep -q "12582912 bytes" "$T/out" ||
	fail "the refusal names both totals: $(cat "$T/out")"
ok "another total is refused while a loader is attached: $(cat "$T/out")"
kill -9 "$killpid"
wait "$killpid" 2>/dev/null || true
killpid=""
"$CLI" read --digest "$T/ds" "${O[@]}" --rank 0 --host-budget 10MiB \
	--host-budget-name "$kname" --stats "$T/stats.k" >"$T/got.k"
cmp -s "$T/want.0" "$T/got.k" || fail "after the reclaim: $(cat "$T/got.k")"
$PY - "$T/stats.k" <<'PYEOF'
import json, sys
h = json.load(open(sys.argv[1]))["host_budget"]
assert h["reclaims"] == 1 and h["reclaimed_bytes"] >= h["floor_bytes"] > 0, h
print(f"  reclaimed {h['reclaimed_bytes']} bytes of a killed loader")
PYEOF
ok "a loader killed with SIGKILL: its bytes reclaimed by the next loader"
[ ! -e "/dev/shm/ringfeed-hb-$kname" ] || fail "the host budget object was left behind"

# bench takes the same flags and reports the host figures.
"$CLI" bench "$T/ds" "${O[@]}" --host-budget 10MiB --host-budget-name "$name" >"$T/out" 2>&1 ||
	fail "bench: $(cat "$T/out")"
grep -q "host budget '$name': peak .* of 10.0 MiB on the host" "$T/out" ||
	fail "bench report lacks the host line: $(cat "$T/out")"
"$CLI" bench --json "$T/ds" "${O[@]}" --host-budget 10MiB --host-budget-name "$name" |
	$PY -c "
import json, sys
h = json.load(sys.stdin)['loader']['host_budget']
assert h['total_bytes'] == 10 << 20 and 0 < h['peak_used_bytes'] <= h['total_bytes'], h
" || fail "bench --json host figures"
"$CLI" bench "$T/ds" "${O[@]}" >"$T/out" 2>&1 || fail "bench: $(cat "$T/out")"
! grep -q "host budget" "$T/out" || fail "bench without a host budget reports one"
ok "bench: host figures in the report and in --json"

# Refusals at open.
set +e
"$CLI" read "$T/ds" "${O[@]}" --host-budget 1MiB --host-budget-name "$name" >"$T/out" 2>&1
rc=$?
set -e
[ $rc = 1 ] && grep -q "host budget '$name' of 1048576 bytes is smaller than this loader's minimum" "$T/out" ||
	fail "a host budget below one loader's minimum: exit $rc: $(cat "$T/out")"
ok "too small for one loader: $(cat "$T/out")"
set +e
"$CLI" read "$T/ds" --host-budget 10MiB --host-budget-name "../x" >"$T/out" 2>&1
rc=$?
set -e
[ $rc = 2 ] && grep -q "host budget name" "$T/out" || fail "bad name: exit $rc: $(cat "$T/out")"
ok "bad name refused: $(cat "$T/out")"
[ ! -e "/dev/shm/ringfeed-hb-$name" ] || fail "a refused loader left the object behind"
# The object truncated mid-run. The consumer's 20 ms per batch makes the run
# last well over 9 s (469 batches), so the truncate lands while it streams;
# what is checked is the exit status and the message, not when it came.
# truncated TAG REGROW: REGROW=1 grows it back to its size (zeroed).
truncated() {
	local tag=$1 regrow=$2 obj="/dev/shm/ringfeed-hb-$name-$1" size
	"$CLI" bench "$T/ds" --budget 16MiB --threads 1 --depth 8 --batch 512 --step-ms 20 \
		--host-budget 10MiB --host-budget-name "$name-$tag" >"$T/out.$tag" 2>&1 &
	killpid=$!
	for _ in $(seq 1 300); do # bounded: 30 s
		[ -s "$obj" ] && break
		sleep 0.1
	done
	[ -s "$obj" ] || fail "$tag: the loader never created the host budget"
	sleep 0.5 # creation and joining are serialised: attached, and streaming
	size=$(stat -c %s "$obj")
	truncate -s 0 "$obj"
	[ "$regrow" = 0 ] || truncate -s "$size" "$obj"
	set +e
	wait "$killpid"
	rc=$?
	set -e
	killpid=""
	[ $rc = 1 ] || fail "$tag: bench exited $rc, want 1: $(cat "$T/out.$tag")"
	grep -q "host budget '$name-$tag': /dev/shm/ringfeed-hb-$name-$tag" "$T/out.$tag" ||
		fail "$tag: the error does not name the object: $(cat "$T/out.$tag")"
	if [ "$regrow" = 0 ]; then
		grep -q "shrank to 0 bytes under this loader (expected $size)" "$T/out.$tag" ||
			fail "$tag: $(cat "$T/out.$tag")"
	else # it may have been seen short or already grown back
		grep -Eq "shrank to 0 bytes|re-initialised under this loader \(magic now 00000000" \
			"$T/out.$tag" || fail "$tag: $(cat "$T/out.$tag")"
	fi
	! grep -q "peak 0.0 MiB of 0.0 MiB" "$T/out.$tag" ||
		fail "$tag: a zeroed host budget was reported as in use: $(cat "$T/out.$tag")"
	rm -f "$obj"
	ok "$tag: $(grep "host budget '$name-$tag'" "$T/out.$tag" | head -1)"
}
truncated trunc 0
truncated regrow 1
echo "all ok"
