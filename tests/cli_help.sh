#!/usr/bin/env bash
# cli_help.sh - the command line's help and rough edges: `ringfeed help CMD`
# is CMD's own help, `ringfeed version` names the command's and the library's
# versions, `read --help` lists each flag once and never an empty default, the
# S3 flags name the environment variables they fall back to, and a size out
# of range is reported in sizes, not raw bytes.
set -euo pipefail
CLI=${RF_CLI:?set RF_CLI to the ringfeed binary}
fail() { echo "FAIL: $*" >&2; exit 1; }

for cmd in pack inspect verify index read bench sim plan report; do
	a=$("$CLI" help "$cmd") || fail "ringfeed help $cmd failed"
	b=$("$CLI" "$cmd" --help) || fail "ringfeed $cmd --help failed"
	[ "$a" = "$b" ] || fail "ringfeed help $cmd is not ringfeed $cmd --help"
	grep -q "usage: ringfeed $cmd" <<<"$a" || fail "ringfeed help $cmd: no usage line: $(head -2 <<<"$a")"
done
"$CLI" help >/dev/null || fail "ringfeed help"
"$CLI" help nosuch >/dev/null 2>&1 && fail "ringfeed help nosuch accepted"

v=$("$CLI" version) || fail "ringfeed version failed"
grep -Eq '^ringfeed [0-9]+\.[0-9]+\.[0-9]+ \(libringfeed [0-9]+\.[0-9]+\.[0-9]+\)$' <<<"$v" ||
	fail "ringfeed version: $v"
[ "$("$CLI" --version)" = "$v" ] || fail "--version differs from version"
"$CLI" help | grep -q "version" || fail "top-level help does not list version"

h=$("$CLI" read --help)
dups=$(grep -oE '^  --[a-z0-9-]+' <<<"$h" | sort | uniq -d)
[ -z "$dups" ] || fail "read --help lists flags twice: $dups"
grep -q '(default: )' <<<"$h" && fail "read --help prints an empty default: $(grep '(default: )' <<<"$h")"
for f in endpoint:AWS_ENDPOINT_URL region:AWS_REGION access-key:AWS_ACCESS_KEY_ID \
	secret-key:AWS_SECRET_ACCESS_KEY session-token:AWS_SESSION_TOKEN; do
	grep -E "^  --s3-${f%%:*} " <<<"$h" | grep -q "\\\$${f#*:}" ||
		fail "--s3-${f%%:*} does not name \$${f#*:}: $(grep -E "^  --s3-${f%%:*} " <<<"$h")"
done

err=$("$CLI" read --budget 100KiB /nonexistent.rfs 2>&1) && fail "--budget 100KiB accepted"
grep -q "1.0 MiB" <<<"$err" || fail "--budget range not in sizes: $err"
grep -q "1048576" <<<"$err" && fail "--budget range in raw bytes: $err"
err=$("$CLI" bench --tune-interval 1ms /nonexistent.rfs 2>&1) && fail "--tune-interval 1ms accepted"
grep -q "0.01 s" <<<"$err" || fail "--tune-interval range not in seconds: $err"
echo "cli_help: ok"
