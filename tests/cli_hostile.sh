#!/usr/bin/env bash
# cli_hostile.sh - hostile dataset names and manifests reach the user of
# `ringfeed read` as one clear error, at once and without allocating for what
# they claim: a manifest naming ten million shards (generated here, 110 MB),
# a brace range of 10^7 names, a product of ranges past 10^6, and a manifest
# whose byte total overflows 2^64. The shard-level cases (bombs, overflowing
# counts, offsets outside the file) are in tests/test_hostile.c.
set -euo pipefail
cli=${RF_CLI:?RF_CLI must name the ringfeed binary}
guard_s=60 # a hang guard; timing decides nothing else

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-hostile.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
. "$(dirname "$0")/check.inc.sh"

# expect_fail NAME WORDS ARGS...: `ringfeed read ARGS` fails, saying WORDS.
expect_fail() {
	local name=$1 words=$2 rc=0
	shift 2
	timeout "$guard_s" "$cli" read --digest "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
	if [ $rc -eq 124 ]; then
		bad "$name: no answer within $guard_s s"
	elif [ $rc -eq 0 ]; then
		bad "$name: the read succeeded"
	elif ! grep -q -- "$words" "$tmp/err"; then
		bad "$name: message lacks '$words': $(cat "$tmp/err")"
	else
		ok "$name: $(head -c 200 "$tmp/err")"
	fi
}

{
	echo '# ringfeed manifest v1'
	{ yes $'shard.rfs\t4096\t1' || true; } | head -n 10000000 # yes ends by SIGPIPE
} >"$tmp/ten-million.rfm"
expect_fail "a manifest of 10^7 shards" "line 1000002: more than 1000000 shards" \
	"$tmp/ten-million.rfm"
rm -f "$tmp/ten-million.rfm"
expect_fail "a brace range of 10^7 names" "expands to more than 1000000 names" \
	"$tmp/shard-{0000000..9999999}.rfs"
expect_fail "a product of ranges past 10^6" "expands to more than 1000000 names" \
	"$tmp/{000..999}/shard-{0000..9999}.rfs"
printf '# ringfeed manifest v1\na.rfs\t18446744073709551615\t1\nb.rfs\t40\t1\n' >"$tmp/sum.rfm"
expect_fail "a manifest whose byte total overflows" "makes the total exceed 2^64-1 bytes" \
	"$tmp/sum.rfm"

rf_checks_done
