# stress.inc.sh - sourced by tests/cli_stress_local.sh and cli_stress_http.sh:
# every record exactly once, in order, under faults; or the
# stream stops at the right place naming the cause.
#
# The dataset's records carry their own number, so each run's raw output
# (tests/stress_check.py) gives records expected / delivered / duplicated /
# skipped, and the order against the fault-free run; the run's own --digest
# must equal the fault-free digest.
#   transient, local (in-engine injector: --inject, and RINGFEED_INJECT):
#     latency, jitter, stalls, errors, resets, short reads, corruption, each
#     alone and all together -> N / N / 0 / 0, same order, same digest
#   transient, HTTP through rf-faultproxy to nginx: latency, jitter, stalls,
#     bandwidth cap, resets, cut bodies, alone and together (plus the
#     injector's corruption and short reads on the remote source)
#   HTTP, a block larger than what the proxy lets a connection carry: read
#     in parts (cut ranges resumed), every record
#   permanent: a corrupt block on disk (local and HTTP), a 404: exit 1, a
#     message naming shard/URL, block and cause; every record before the
#     reported stream position delivered (exactly the reference prefix),
#     and the failed block's first record at that position's batch.
# The ASan build runs a smaller dataset. Timing never decides pass/fail.
declare -F rf_at_exit >/dev/null || . "$src/tests/servers.inc.sh" # rf_at_exit
CLI=${RF_CLI:?set RF_CLI to the ringfeed binary}
build=${RF_BUILD_DIR:-$(dirname "$CLI")}
proxy=$build/rf-faultproxy
PY=/usr/bin/python3
CHECK="$src/tests/stress_check.py"

N=20000
case $build in *build-asan) N=6000 ;; esac
BATCH=32
common=(--seed 4 --batch $BATCH --shuffle-window 500 --depth 4 --threads 2)

. "$src/tests/check.inc.sh"
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-stress.XXXXXX")
rf_at_exit "rm -rf '$T'"

"$PY" "$CHECK" gen "$T/in.txt" $N 1 -1 0
"$CLI" pack --from lines "$T/in.txt" -o "$T/ds" --block-size 8KiB --shard-size 48KiB >/dev/null
M="$T/ds/manifest.rfm"
nshards=$(ls "$T"/ds/shard-*.rfs | wc -l)
last=$(printf '%06d' $((nshards - 1)))
"$CLI" read --output raw "${common[@]}" "$M" >"$T/ref.raw"
BAD_SHARD=shard-$(printf '%06d' $((nshards / 2))).rfs # its block 2 gets damaged
ref=$("$CLI" read --digest "${common[@]}" "$M")
ref_digest=${ref##* }
case $ref in "records=$N "*) ok "fault-free: $ref ($nshards shards)" ;; *) bad "fault-free run: $ref" ;; esac

TABLE=()
row() { TABLE+=("$(printf '%-34s %s' "$1" "$2")"); }

# transient NAME ARGS... : the run must deliver N / N / 0 / 0 in order, same digest.
transient() {
	local name=$1 rc=0
	shift
	"$CLI" read --output raw --digest "${common[@]}" "$@" >"$T/run.raw" 2>"$T/err" || rc=$?
	local res
	res=$("$PY" "$CHECK" count "$T/run.raw" "$T/ref.raw" $N)
	row "$name" "${res% order=*}"
	if [ $rc = 0 ] && [ "$res" = "expected=$N delivered=$N duplicated=0 skipped=0 order=same $ref_digest" ]; then
		ok "$name: $res"
	else
		bad "$name: exit $rc, $res (want digest $ref_digest); $(head -c 600 "$T/err")"
	fi
}

# permanent NAME LOCAL_SHARD_DIR PATTERN... -- ARGS... : exit 1, stderr has
# every PATTERN; delivered = reference prefix up to the reported position,
# where the named block's first record lies within the next batch.
permanent() {
	local name=$1 dir=$2 rc=0
	shift 2
	local pats=()
	while [ "$1" != -- ]; do
		pats+=("$1")
		shift
	done
	shift
	"$CLI" read --output raw "${common[@]}" "$@" >"$T/run.raw" 2>"$T/err" || rc=$?
	local msg p
	msg=$(cat "$T/err")
	[ $rc = 1 ] || bad "$name: exit $rc, want 1: $msg"
	for p in "${pats[@]}"; do
		grep -q -- "$p" "$T/err" || bad "$name: message lacks '$p': $msg"
	done
	local got pos shard block first res
	got=$("$PY" "$CHECK" prefix "$T/run.raw" "$T/ref.raw")
	res=$("$PY" "$CHECK" count "$T/run.raw" "$T/ref.raw" $N)
	pos=$(sed -n 's/.*stream position \([0-9]*\)).*/\1/p' "$T/err" | head -n 1)
	shard=$(grep -o 'shard-[0-9]*\.rfs' "$T/err" | head -n 1)
	block=$(sed -n 's/.*: block \([0-9]*\).*/\1/p' "$T/err" | head -n 1)
	if [ -z "$pos" ] || [ -z "$shard" ] || [ -z "$block" ]; then
		bad "$name: message lacks shard, block or stream position: $msg"
		return
	fi
	first=$("$PY" "$CHECK" blockpos "$dir/manifest.rfm" "$dir/$shard" "$block" "$T/ref.raw")
	row "$name" "${res% order=*} stops at $pos ($shard block $block)"
	if [ "$got" != "$pos" ]; then
		bad "$name: delivered '$got' records of the reference prefix, message says position $pos"
	elif [ "$first" -lt "$pos" ] || [ "$first" -ge $((pos + BATCH)) ]; then
		bad "$name: block $block of $shard starts at position $first, not in [$pos, $((pos + BATCH)))"
	else
		ok "$name: $got records delivered, stopped at $pos: $(head -c 300 "$T/err")"
	fi
}

stress_report() {
	echo
	echo "case                               records expected / delivered / duplicated / skipped"
	printf '%s\n' "${TABLE[@]}"
	rf_checks_done "$1"
}
