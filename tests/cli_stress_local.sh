#!/usr/bin/env bash
# cli_stress_local.sh - the stress suite on local shards through the in-engine
# fault injector (see tests/stress.inc.sh for what is checked).
set -euo pipefail
src=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/tests/stress.inc.sh"

# ---- local: the in-engine injector -------------------------------------------
tl() { # NAME ARGS... : transient on the local manifest (8 retries: a read
	#     failing 9 times running at these rates is a 1e-7 event, not a test)
	local n=$1
	shift
	transient "$n" --retries 8 "$@" "$M"
}
tl "local latency 2ms" --inject seed=1,latency=2ms
tl "local jitter 1ms+-1ms" --inject seed=2,latency=1ms,jitter=1ms
tl "local stalls 50ms/60ms" --inject seed=3,latency=20ms,stall=50ms/60ms
tl "local errors 10%" --inject seed=4,error=0.1
tl "local resets 10%" --inject seed=5,reset=0.1
tl "local short reads 10%" --inject seed=6,short=0.1
tl "local corruption 10%" --inject seed=7,corrupt=0.1
tl "local all combined" \
	--inject seed=8,latency=1ms,jitter=1ms,stall=20ms/100ms,error=0.04,reset=0.04,short=0.04,corrupt=0.04
tl "local all, one block per read" --request-size 4KiB \
	--inject seed=9,latency=1ms,jitter=1ms,error=0.05,reset=0.05,short=0.05,corrupt=0.05
RINGFEED_INJECT=seed=10,error=0.1,corrupt=0.1 tl "local via RINGFEED_INJECT"
# the injector's counters prove faults were injected (bench reports rereads)
rereads=$("$CLI" bench --json "${common[@]}" --retries 10 --inject seed=7,corrupt=0.3 "$M" |
	"$PY" -c 'import json,sys; d=json.load(sys.stdin); print(d["loader"]["rereads"])')
[ "$rereads" -gt 0 ] && ok "corruption: $rereads checksum re-reads counted in the stats" ||
	bad "corruption: no re-reads counted ($rereads)"
rc=0
"$CLI" read --inject seed=1,corrupt=2 "$M" >/dev/null 2>"$T/err" || rc=$?
[ $rc != 0 ] && grep -q corrupt "$T/err" && ok "bad --inject spec refused: $(cat "$T/err")" ||
	bad "bad --inject spec: exit $rc: $(cat "$T/err")"

# ---- local permanent: a corrupt block on disk ----------------------------------
cp -r "$T/ds" "$T/bad"
"$PY" "$CHECK" flip "$T/bad/$BAD_SHARD" 2
permanent "local corrupt block on disk" "$T/bad" "$BAD_SHARD" "block 2" "zstd decode failed" \
	"the same bytes on re-read" -- "$T/bad/manifest.rfm"
permanent "local corrupt block, retries 0" "$T/bad" "$BAD_SHARD" "block 2" -- \
	--retries 0 "$T/bad/manifest.rfm"

stress_report cli_stress_local
