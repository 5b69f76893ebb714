#!/usr/bin/env bash
# cli_outputs.sh - a requested output that could not be written is an error:
# --trace (mid-run and the last line written at close, also for a bench run
# shorter than one interval, whose JSON then names it), --stats, --save-state
# and the standard output itself, each pointed at /dev/full, fail the command
# with a message naming the file; the same outputs to a real file succeed.
set -euo pipefail
CLI=${RF_CLI:?set RF_CLI to the ringfeed binary}
[ -c /dev/full ] || { echo "SKIP: no /dev/full"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-outputs-XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_rc() {
	local want=$1; shift
	set +e; timeout 60 "$@" >"$T/out" 2>"$T/err"; local rc=$?; set -e
	[ "$rc" = "$want" ] || { cat "$T/out" "$T/err" >&2; fail "'$*' exited $rc, want $want"; }
}
expect_err() { grep -q -- "$1" "$T/err" || { cat "$T/err" >&2; fail "stderr lacks '$1'"; }; }

head -c 200000 /dev/urandom > "$T/in.bin"
expect_rc 0 "$CLI" pack --from fixed:100 "$T/in.bin" -o "$T/ds" --block-size 8KiB

expect_rc 0 "$CLI" read --digest --trace "$T/trace.jsonl" "$T/ds"
[ -s "$T/trace.jsonl" ] || fail "no trace written"
expect_rc 1 "$CLI" read --digest --trace /dev/full "$T/ds"
expect_err "trace /dev/full: write failed: No space left on device"
# a long interval: the only line is the one written at close
expect_rc 1 "$CLI" read --digest --tune-interval 10s --trace /dev/full "$T/ds"
expect_err "trace /dev/full: write failed"
expect_rc 1 "$CLI" bench --json --tune-interval 10s --trace /dev/full "$T/ds"
expect_err "trace /dev/full: write failed"
/usr/bin/python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["trace_error"]; assert e and "/dev/full" in e, e' "$T/out" ||
	fail "bench --json lacks the trace error"
expect_rc 1 "$CLI" bench --tune-interval 10s --trace /dev/full "$T/ds"
echo "ok: --trace /dev/full fails read and bench, also when only the last line is written"

expect_rc 0 "$CLI" read --stats "$T/stats.json" "$T/ds"
expect_rc 1 "$CLI" read --stats /dev/full "$T/ds"
expect_err "/dev/full"
expect_rc 0 "$CLI" read --stop-after 1 --save-state "$T/state" "$T/ds"
expect_rc 1 "$CLI" read --stop-after 1 --save-state /dev/full "$T/ds"
expect_err "/dev/full"
echo "ok: --stats and --save-state to /dev/full fail"

for cmd in "read --digest" "verify" "bench" "inspect"; do
	target=$T/ds
	[ "$cmd" = inspect ] && target=$T/ds/shard-000000.rfs
	set +e
	# shellcheck disable=SC2086
	timeout 60 "$CLI" $cmd "$target" >/dev/full 2>"$T/err"
	rc=$?
	set -e
	[ "$rc" = 1 ] || fail "'$cmd' to a full stdout exited $rc, want 1"
	expect_err "writing the standard output failed"
done
echo "ok: a standard output that cannot be written fails the command"
echo "cli_outputs: all checks passed"
