#!/usr/bin/env bash
# cli_read_progress.sh - a long `ringfeed read` says how far it got on
# stderr (--progress SECONDS, default 10): records, batches, MB, MB/s and
# time, also while it waits for a batch (it wakes each second), and a
# "(done)" line at its end; stdout keeps only the results (the digest is
# the same with and without progress); -q and --progress 0 say nothing; a
# bad --progress is refused. The read is made to last over 2 s by injected
# latency (one connection, small requests), so no timing decides a check.
set -euo pipefail
src=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
cli=${RF_CLI:?RF_CLI must name the ringfeed binary}
. "$src/tests/check.inc.sh"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-read-progress-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

head -c 400000 /dev/urandom >"$tmp/in.bin"
"$cli" pack -q --from fixed:100 "$tmp/in.bin" -o "$tmp/ds" --block-size 4KiB --shard-size 64KiB \
	>/dev/null
# ~100 blocks read one at a time at 30 ms each: over 3 s
slow=(--inject latency=30ms --connections 1 --request-size 4KiB --batch 64 --shuffle 0)
"$cli" read --digest -q --batch 64 --shuffle 0 "$tmp/ds" >"$tmp/quick.out" 2>"$tmp/quick.err"
"$cli" read --digest --progress 1 "${slow[@]}" "$tmp/ds" >"$tmp/slow.out" 2>"$tmp/slow.err"
same "stdout is the digest alone, as without progress" "$(cat "$tmp/quick.out")" "$(cat "$tmp/slow.out")"
grep -qE '^ringfeed read: [0-9]+ records, [0-9]+ batches, [0-9.]+ MB, [0-9.]+ MB/s, [0-9]+ s' \
	"$tmp/slow.err" && ok "progress lines on stderr" || bad "no progress line: $(head -3 "$tmp/slow.err")"
grep -qE '^ringfeed read: 4000 records, 63 batches, 0.4 MB, [0-9.]+ MB/s, [0-9]+ s \(done\)$' \
	"$tmp/slow.err" && ok "a (done) line with the totals" || bad "no done line: $(tail -2 "$tmp/slow.err")"
for q in -q "--progress 0"; do
	# shellcheck disable=SC2086
	"$cli" read --digest $q "${slow[@]}" "$tmp/ds" >"$tmp/q.out" 2>"$tmp/q.err"
	if grep -q "ringfeed read:" "$tmp/q.err"; then bad "$q: progress printed"; else ok "$q: no progress"; fi
done
rc=0
"$cli" read --progress -1 "$tmp/ds" >/dev/null 2>"$tmp/bad.err" || rc=$?
same "--progress -1 is refused (2)" 2 "$rc"
grep -q -- "--progress" "$tmp/bad.err" || bad "the refusal names --progress: $(cat "$tmp/bad.err")"
rf_checks_done cli_read_progress
