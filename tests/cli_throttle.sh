#!/usr/bin/env bash
# cli_throttle.sh - throttling is ridden out, within a bound that is named.
# bad_http answers 503 (and, for another shard, 429), without Retry-After,
# for the first 3 seconds of a shard's requests, then correctly: a read with
# the default settings must give the local digest (the old policy, 5 retries
# of at most 50 ms * 2^n, gave up after about 1.5 s). A permanent 503 must
# fail, with --throttle-wait 2s, naming the backoff spent and the budget; and
# another error (a reset) still stops after `retries`. The default budget
# (20 s of backoff) is checked by the unit test of the policy
# (test_http_parse): a run of it here would take 20 s.
# Uses the servers named by the environment; alone, starts a private bad_http.
set -euo pipefail
src=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/tests/servers.inc.sh"
cli=${RF_CLI:?RF_CLI must name the ringfeed binary}
guard_s=60 # a hang guard far above the seconds expected; timing decides nothing else

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-throttle.XXXXXX")
rf_at_exit "rm -rf '$tmp'"
if [ -z "${RF_BAD_URL:-}" ] && [ "${RF_REQUIRE_SERVERS:-0}" != 1 ]; then
	mkdir -p "$tmp/bad"
	/usr/bin/python3 "$src/tests/servers/bad_http.py" --root "$tmp/bad" --port 0 \
		--port-file "$tmp/bad.port" >"$tmp/bad.log" 2>&1 &
	bad_pid=$!
	rf_at_exit "kill $bad_pid 2>/dev/null; wait $bad_pid 2>/dev/null"
	for _ in $(seq 100); do [ -s "$tmp/bad.port" ] && break; sleep 0.1; done
	[ -s "$tmp/bad.port" ] || { cat "$tmp/bad.log" >&2; echo "FAIL: bad_http did not start" >&2; exit 1; }
	RF_BAD_URL=http://127.0.0.1:$(cat "$tmp/bad.port")
	RF_BAD_ROOT=$tmp/bad
fi
rf_need_env RF_BAD_URL RF_BAD_ROOT

. "$src/tests/check.inc.sh"

tag=cli-throttle-$$
"$cli" pack --demo -o "$tmp/ds" --demo-bytes 64KiB --demo-shards 1 >/dev/null
mkdir -p "$RF_BAD_ROOT/$tag"
rf_at_exit "rm -rf '$RF_BAD_ROOT/$tag'"
cp "$tmp/ds/shard-000000.rfs" "$RF_BAD_ROOT/$tag/"
want=$("$cli" read --digest "$tmp/ds" | tail -n 1)
shard=$tag/shard-000000.rfs

for code in 503 429; do
	rc=0
	got=$(timeout $guard_s "$cli" read --digest "$RF_BAD_URL/$code-for-3/$shard" \
		2>"$tmp/err" | tail -n 1) || rc=$?
	[ $rc -eq 0 ] && [ "$got" = "$want" ] &&
		ok "3 s of $code (no Retry-After) ridden out with the defaults: same digest" ||
		bad "3 s of $code: rc $rc, '$got' (want '$want'): $(tail -n 2 "$tmp/err")"
done

rc=0
timeout $guard_s "$cli" read --digest --throttle-wait 2s "$RF_BAD_URL/503-always/$shard" \
	>/dev/null 2>"$tmp/err" || rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] && ok "permanent 503 fails (rc $rc)" ||
	bad "permanent 503: rc $rc"
grep -q "HTTP 503" "$tmp/err" && grep -q "still throttled after 2.0 s of backoff" "$tmp/err" &&
	grep -q "throttle_wait 2.0 s" "$tmp/err" && grep -q "503-always/$shard" "$tmp/err" &&
	ok "permanent 503: the error names the URL, the status and the backoff spent" ||
	bad "permanent 503 message: $(tail -n 2 "$tmp/err")"

rc=0
timeout $guard_s "$cli" read --digest --retries 2 "$RF_BAD_URL/reset-always/$shard" \
	>/dev/null 2>"$tmp/err" || rc=$?
[ $rc -ne 0 ] && grep -q "retries exhausted" "$tmp/err" && grep -q "3 attempts" "$tmp/err" &&
	ok "resets still stop after --retries (3 attempts)" ||
	bad "resets: rc $rc: $(tail -n 2 "$tmp/err")"

rf_checks_done
