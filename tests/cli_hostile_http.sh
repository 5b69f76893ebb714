#!/usr/bin/env bash
# cli_hostile_http.sh - `ringfeed read` of a shard URL on a hostile server
# (bad_http of scripts/servers.sh) fails clearly and in bounded time, naming
# the URL, the byte range and the cause: a Content-Length of 10^15 (sized by
# the HEAD, and sized by a manifest), an endless redirect loop, a server that
# trickles one byte per second (with a 1000 B/s low-speed limit over 1 s and
# one retry: about 2 s; the defaults, 1 KiB/s over 30 s and 5 retries, bound
# it at about 3 minutes). A sound read of the same shard is the control.
# Uses the servers named by the environment; alone, starts a private bad_http.
set -euo pipefail
src=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/tests/servers.inc.sh"
cli=${RF_CLI:?RF_CLI must name the ringfeed binary}
guard_s=60 # a hang guard far above the seconds expected; timing decides nothing else

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-hostile-http.XXXXXX")
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

tag=cli-hostile-http-$$
"$cli" pack --demo -o "$tmp/ds" --demo-bytes 64KiB --demo-shards 1 >/dev/null
mkdir -p "$RF_BAD_ROOT/$tag"
cp "$tmp/ds/shard-000000.rfs" "$RF_BAD_ROOT/$tag/"
rf_at_exit "rm -rf '$RF_BAD_ROOT/$tag'"
size=$(stat -c %s "$tmp/ds/shard-000000.rfs")
records=$("$cli" inspect --json "$tmp/ds/shard-000000.rfs" |
	/usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["records"])')
want=$("$cli" read --digest "$tmp/ds" | tail -n 1)

got=$(timeout "$guard_s" "$cli" read --digest "$RF_BAD_URL/ok/$tag/shard-000000.rfs" | tail -n 1)
[ "$got" = "$want" ] && ok "control: the sound server gives the local digest" ||
	bad "control read: '$got', wanted '$want'"

# expect_fail NAME WORDS [ringfeed read args...]: fails (not by the guard),
# naming the URL's path and WORDS.
expect_fail() {
	local name=$1 words=$2 rc=0 t0 t1
	shift 2
	t0=$(date +%s.%N)
	timeout "$guard_s" "$cli" read --digest "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
	t1=$(date +%s.%N)
	local secs
	secs=$(/usr/bin/python3 -c "print('%.1f' % ($t1 - $t0))")
	if [ $rc -eq 124 ]; then
		bad "$name: no answer within $guard_s s (a hang)"
	elif [ $rc -eq 0 ]; then
		bad "$name: the read succeeded: $(tail -n 1 "$tmp/out")"
	elif ! grep -q "/$tag/shard-000000.rfs" "$tmp/err" || ! grep -q -- "$words" "$tmp/err"; then
		bad "$name: message lacks the URL or '$words': $(cat "$tmp/err")"
	else
		ok "$name: fails in ${secs} s: $(head -c 300 "$tmp/err")"
	fi
}

u=$RF_BAD_URL
# (a remote .rfs open asks for the object's last 8 KiB, or all of a smaller one)
expect_fail "huge Content-Length on the HEAD" "bytes 999999999991808-999999999999999" \
	--retries 1 "$u/huge-length/$tag/shard-000000.rfs"
printf '# ringfeed manifest v1\n%s\t%s\t%s\n' "$u/huge-length/$tag/shard-000000.rfs" \
	"$size" "$records" >"$tmp/huge.rfm"
expect_fail "huge Content-Length on a range (size from a manifest)" \
	"Content-Length 1000000000000000 for a range of $((size < 8192 ? size : 8192)) bytes" \
	--retries 1 "$tmp/huge.rfm"
expect_fail "endless redirects" "redirects followed" --retries 1 \
	"$u/redirect-loop/$tag/shard-000000.rfs"
expect_fail "one byte per second" "too slow" --retries 1 --low-speed-bytes-per-s 1000 \
	--low-speed-time-s 1 "$u/trickle/$tag/shard-000000.rfs"
grep -q "2 attempts" "$tmp/err" && ok "trickle: retried once, then failed" ||
	bad "trickle attempts: $(cat "$tmp/err")"

# A remote manifest names objects on a store, never local files: entries
# with file:// (any case) or another scheme are refused naming the manifest's
# line, and nothing local is read (a local shard would give the digest).
for entry in "file://$tmp/ds/shard-000000.rfs" "FILE://$tmp/ds/shard-000000.rfs" \
	"file:///etc/passwd" "ftp://127.0.0.1/x.rfs"; do
	printf '# ringfeed manifest v1\n%s\t%s\t%s\n' "$entry" "$size" "$records" \
		>"$RF_BAD_ROOT/$tag/local.rfm"
	rc=0
	timeout "$guard_s" "$cli" read --digest --retries 1 "$u/ok/$tag/local.rfm" \
		>"$tmp/out" 2>"$tmp/err" || rc=$?
	if [ $rc -eq 0 ]; then
		bad "remote manifest naming '$entry' was read: $(tail -n 1 "$tmp/out")"
	elif grep -q "local.rfm line 2: entry .* is not on a store" "$tmp/err"; then
		ok "remote manifest naming '${entry%%://*}://...' refused: $(head -c 200 "$tmp/err")"
	else
		bad "remote manifest naming '$entry': $(cat "$tmp/err")"
	fi
done

rf_checks_done
