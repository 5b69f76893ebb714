#!/usr/bin/env bash
# cli_limits.sh - ringfeed read at the engine's bounds, with default
# settings: a shuffle window of more blocks than the event loop has op slots
# (records as large as a block) reads to the end, the same records in the
# same order at every depth.
set -euo pipefail
CLI=${RF_CLI:?set RF_CLI to the ringfeed binary}
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-limits-XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_rc() {
	local want=$1; shift
	set +e; "$@" >"$T/out" 2>"$T/err"; local rc=$?; set -e
	[ "$rc" = "$want" ] || { cat "$T/out" "$T/err" >&2; fail "'$*' exited $rc, want $want"; }
}

# 1. 4500 records of 2000 bytes in 1 KiB blocks: one record per block, so
#    the default window (4096 records) needs 4096 reads at once, more than the
#    loop's 4096 slots less its timers. It failed at stream position 2752.
head -c 9000000 /dev/urandom >"$T/img.bin"
"$CLI" pack --from fixed:2000 "$T/img.bin" -o "$T/wide" --block-size 1KiB >/dev/null
expect_rc 0 "$CLI" read --digest "$T/wide"
grep -q '^records=4500 bytes=9000000 ' "$T/out" || fail "wide window: $(cat "$T/out")"
ref=$(cat "$T/out")
expect_rc 0 "$CLI" read --digest --depth 1 --threads 1 "$T/wide"
[ "$(cat "$T/out")" = "$ref" ] || fail "wide window: depth 1 read $(cat "$T/out"), not $ref"

echo "cli_limits: ok"
