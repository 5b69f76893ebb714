#!/usr/bin/env bash
# cli_verify_jobs.sh - `ringfeed verify` checks several shards at once
# (--jobs or --verify-jobs, default: the CPUs, at least 8 for a remote dataset), each
# job with its own loop and connections, and still reports in shard order:
# over a dataset with damaged, truncated and missing shards, the text, -q
# and --json reports and the exit status of 8 jobs are byte for byte those
# of one job (the serial walk), with injected latency too (jobs finish out
# of order), and with --max-reports cutting a shard's problems. A run past
# 2 s says how far it got on stderr (not with -q).
set -euo pipefail
src=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
cli=${RF_CLI:?RF_CLI must name the ringfeed binary}
. "$src/tests/check.inc.sh"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-verify-jobs-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

head -c 600000 /dev/urandom >"$tmp/in.bin"
"$cli" pack -q --from fixed:100 "$tmp/in.bin" -o "$tmp/ds" --block-size 2KiB --shard-size 16KiB \
	>/dev/null
n=$(ls "$tmp/ds"/shard-*.rfs | wc -l)
[ "$n" -ge 20 ] || { bad "want at least 20 shards, got $n"; rf_checks_done cli_verify_jobs; }
flip() { # FILE OFFSET: one byte changed
	printf '\xa5' | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
flip "$tmp/ds/shard-000003.rfs" 100
flip "$tmp/ds/shard-000007.rfs" 50
flip "$tmp/ds/shard-000007.rfs" 5000
truncate -s -9 "$tmp/ds/shard-000011.rfs"
rm "$tmp/ds/shard-000017.rfs"

# run NAME ARGS...: verify ARGS, stdout in $tmp/NAME.out, exit status in $tmp/NAME.rc
run() {
	local name=$1 rc=0
	shift
	timeout 120 "$cli" verify "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" || rc=$?
	echo "$rc" >"$tmp/$name.rc"
}
# alike WHAT ARGS...: one job and eight give the same report and status
alike() {
	local what=$1
	shift
	run one --jobs 1 "$@"
	run eight --verify-jobs 8 "$@"
	if cmp -s "$tmp/one.out" "$tmp/eight.out" && cmp -s "$tmp/one.rc" "$tmp/eight.rc"; then
		ok "$what: 8 jobs report what 1 does (exit $(cat "$tmp/one.rc"))"
	else
		bad "$what: 8 jobs differ from 1: $(diff "$tmp/one.out" "$tmp/eight.out" | head -5)" \
			"exit $(cat "$tmp/one.rc") vs $(cat "$tmp/eight.rc")"
	fi
}

alike "text" "$tmp/ds/manifest.rfm"
same "the damaged, truncated and missing shards are named" 4 "$(grep -c '^DAMAGED ' "$tmp/one.out")"
same "the sound ones are ok" $((n - 4)) "$(grep -c '^ok ' "$tmp/one.out")"
same "exit 1 for damage" 1 "$(cat "$tmp/one.rc")"
# the report is in shard order: the ok/DAMAGED lines name the shards 0..n-1
order=$(grep -oE '^(ok|DAMAGED) .*shard-[0-9]+' "$tmp/eight.out" | grep -oE '[0-9]+$' | tr '\n' ' ')
same "8 jobs: verdicts in shard order" "$(seq -f '%06g' 0 $((n - 1)) | tr '\n' ' ')" "$order"
# each shard's problems stand right above its verdict
awk '/^  /{p=1; next} /^DAMAGED .*shard-000007/{print p} {p=0}' "$tmp/eight.out" >"$tmp/p7"
same "shard 7's problems are printed just before its verdict" 1 "$(cat "$tmp/p7")"
alike "-q" -q --inject latency=20ms "$tmp/ds/manifest.rfm"
# one job with 20 ms a read takes over 2 s (about 10 reads a shard): -q says
# nothing of its progress
if grep -q "ringfeed verify:" "$tmp/one.err"; then bad "-q printed progress: $(head -3 "$tmp/one.err")"; else ok "-q: no progress lines"; fi
alike "--json" --json "$tmp/ds/manifest.rfm"
alike "--max-reports 1" --max-reports 1 "$tmp/ds/manifest.rfm"
# injected latency: jobs finish out of order, the report does not
alike "latency" --inject latency=20ms "$tmp/ds/manifest.rfm"
# ... and without -q says how far it got on stderr, and that it is done
if grep -qE "^ringfeed verify: [0-9]+ of $n shards, [0-9]+ damaged, [0-9]+ s$" "$tmp/one.err" &&
	grep -qE "^ringfeed verify: $n of $n shards, 4 damaged, [0-9]+ s \(done\)$" "$tmp/one.err"; then
	ok "a run past 2 s shows its progress on stderr"
else
	bad "no progress lines on stderr: $(head -3 "$tmp/one.err")"
fi
alike "a sound dataset" "$tmp/ds/shard-0000{00..02}.rfs" "$tmp/ds/shard-0000{04..06}.rfs"
same "a sound dataset exits 0" 0 "$(cat "$tmp/eight.rc")"
for flag in --verify-jobs --jobs; do
	run bad $flag 65 "$tmp/ds/manifest.rfm"
	same "$flag 65 is refused (2)" 2 "$(cat "$tmp/bad.rc")"
	grep -q "verify_jobs" "$tmp/bad.err" || bad "the refusal names verify_jobs: $(cat "$tmp/bad.err")"
done

rf_checks_done cli_verify_jobs
