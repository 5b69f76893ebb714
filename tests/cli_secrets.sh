#!/usr/bin/env bash
# cli_secrets.sh - no credential leaves for another host, and none appears in
# what ringfeed writes.
#
# Redirects: an HTTPS "S3 endpoint" (bad_http on 127.0.0.1) answers every
# request with 307 to plain HTTP on another host (bad_http on 127.0.0.2, which
# logs every request it receives). A signed s3:// read with a session token
# must fail naming both hosts (also for another port of the same address),
# and the other host must never see the access
# key, the signature or the token. An unsigned http://user:PASSWORD@ read
# with a presigned-style query follows the redirect, and the other host must
# see neither the password nor the query.
#
# Messages and stats: reads of URLs carrying a password and a presigned-style
# query (X-Amz-Security-Token, X-Amz-Signature) from a server that fails, and
# from one that stalls (a pause), must not show the password, the token or
# the signature in stderr, the stats JSON (pause_longest_source,
# pauses_by_source) or the trace.
#
# Starts its own servers (python3 and openssl only).
set -euo pipefail
src=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/tests/servers.inc.sh"
cli=${RF_CLI:?RF_CLI must name the ringfeed binary}
PY=/usr/bin/python3
command -v openssl >/dev/null || {
	echo "SKIP: openssl missing (needed for the test certificate)" >&2
	exit $RF_SKIP
}

. "$src/tests/check.inc.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-secrets.XXXXXX")
rf_at_exit "rm -rf '$tmp'"
mkdir -p "$tmp/root"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost \
	-addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
	-addext "basicConstraints=critical,CA:TRUE" \
	-keyout "$tmp/key.pem" -out "$tmp/cert.pem" >"$tmp/openssl.log" 2>&1 ||
	{
		cat "$tmp/openssl.log" >&2
		exit 1
	}

# start_bad NAME BIND ARGS...: a bad_http on BIND; its port in $port
start_bad() {
	local name=$1 bind=$2
	shift 2
	$PY "$src/tests/servers/bad_http.py" --root "$tmp/root" --bind "$bind" --port 0 \
		--port-file "$tmp/$name.port" --stall-s 1 "$@" >"$tmp/$name.log" 2>&1 &
	rf_at_exit "kill $! 2>/dev/null; wait $! 2>/dev/null"
	for _ in $(seq 100); do
		[ -s "$tmp/$name.port" ] && break
		sleep 0.1
	done
	[ -s "$tmp/$name.port" ] || {
		cat "$tmp/$name.log" >&2
		echo "FAIL: bad_http $name did not start" >&2
		exit 1
	}
	port=$(cat "$tmp/$name.port")
}
start_bad other 127.0.0.2 --log-requests "$tmp/other.requests"
other=http://127.0.0.2:$port
start_bad tls 127.0.0.1 --redirect-to "$other" --tls-cert "$tmp/cert.pem" \
	--tls-key "$tmp/key.pem"
tls=https://127.0.0.1:$port
start_bad plain 127.0.0.1 --redirect-to "$other"
plain=http://127.0.0.1:$port
start_bad sameip 127.0.0.1 --log-requests "$tmp/sameip.requests"
start_bad portjump 127.0.0.1 --redirect-to "http://127.0.0.1:$port"
portjump=http://127.0.0.1:$port
touch "$tmp/other.requests" "$tmp/sameip.requests"

"$cli" pack --demo -o "$tmp/ds" --demo-bytes 256KiB --demo-shards 1 >/dev/null
cp "$tmp/ds/shard-000000.rfs" "$tmp/root/"
head -c 100000 /dev/zero >"$tmp/root/junk.rfs" # not a shard: the engine names it
want=$("$cli" read --digest "$tmp/ds" | tail -n 1)

access=AKIDSECRETS$$ secret=Secret-$$-qv token=SessionToken-$$-zx
password=PassWord$$ qtoken=QueryToken-$$-jk qsig=QuerySignature$$abc
# leaked FILE...: the secrets found in FILEs (none: empty)
leaked() {
	local s found=""
	for s in "$secret" "$token" "$password" "$qtoken" "$qsig"; do
		grep -q -F -- "$s" "$@" 2>/dev/null && found="$found $s"
	done
	echo "$found"
}

# ---- signed S3: a cross-host redirect is refused, the token stays home --------
rc=0
AWS_ENDPOINT_URL=$tls AWS_ACCESS_KEY_ID=$access AWS_SECRET_ACCESS_KEY=$secret \
	AWS_SESSION_TOKEN=$token RF_HTTP_TRACE=1 \
	"$cli" read --digest --retries 1 --ca-file "$tmp/cert.pem" \
	"s3://redirect-host/shard-000000.rfs" >"$tmp/out" 2>"$tmp/err" || rc=$?
[ $rc -ne 0 ] && ok "s3 read redirected to another host fails" || bad "s3 redirected read succeeded"
grep -q "127.0.0.1:" "$tmp/err" && grep -q "127.0.0.2:" "$tmp/err" &&
	grep -q -i "redirect" "$tmp/err" && ok "the error names both hosts" ||
	bad "redirect error does not name both hosts: $(tail -n 3 "$tmp/err")"
if grep -q -i -e "$token" -e "$access" -e "x-amz-security-token" -e "^authorization" \
	"$tmp/other.requests"; then
	bad "the other host received S3 credentials: $(grep -i -e amz -e auth "$tmp/other.requests" | head -n 3)"
else
	ok "the other host received no S3 credential ($(grep -c '^GET\|^HEAD' "$tmp/other.requests") requests)"
fi
l=$(leaked "$tmp/out" "$tmp/err")
[ -z "$l" ] && ok "no secret in the output of the refused read" || bad "secrets in the output:$l"

# another port of the same address is another host too
rc=0
AWS_ENDPOINT_URL=$portjump AWS_ACCESS_KEY_ID=$access AWS_SECRET_ACCESS_KEY=$secret \
	AWS_SESSION_TOKEN=$token "$cli" read --digest "s3://redirect-host/shard-000000.rfs" \
	>"$tmp/out" 2>"$tmp/err" || rc=$?
[ $rc -ne 0 ] && grep -q "(another host) refused" "$tmp/err" &&
	ok "a redirect to another port is refused" || bad "redirect to another port: rc $rc: $(tail -n 1 "$tmp/err")"
[ ! -s "$tmp/sameip.requests" ] && ok "the other port received nothing" ||
	bad "the other port received: $(head -n 3 "$tmp/sameip.requests")"

# ---- unsigned HTTP: the redirect is followed, without userinfo or query ------
: >"$tmp/other.requests"
url="http://u:$password@${plain#http://}/redirect-host/shard-000000.rfs"
url="$url?X-Amz-Security-Token=$qtoken&X-Amz-Signature=$qsig"
rc=0
"$cli" read --digest "$url" >"$tmp/out" 2>"$tmp/err" || rc=$?
got=$(tail -n 1 "$tmp/out")
[ $rc -eq 0 ] && [ "$got" = "$want" ] && ok "unsigned redirect followed: same digest" ||
	bad "unsigned redirect: rc $rc, '$got' (want '$want'): $(tail -n 2 "$tmp/err")"
grep -q "^GET" "$tmp/other.requests" && ok "the other host served the read" ||
	bad "the other host saw no GET"
l=$(leaked "$tmp/other.requests")
if [ -z "$l" ] && ! grep -q -i "^authorization" "$tmp/other.requests"; then
	ok "the other host received no userinfo, authorization or query secret"
else
	bad "the other host received secrets:$l $(grep -i '^authorization' "$tmp/other.requests" | head -n 1)"
fi

# ---- messages, stats and trace name sources redacted --------------------------
secret_url() { # MODE [FILE]: a URL with userinfo and a presigned-style query
	echo "http://u:$password@${plain#http://}/$1/${2:-shard-000000.rfs}?X-Amz-Security-Token=$qtoken&X-Amz-Signature=$qsig&X-Amz-Credential=AK"
}
rc=0
"$cli" read --digest "$(secret_url ok junk.rfs)" >"$tmp/out" 2>"$tmp/err" || rc=$?
[ $rc -ne 0 ] && grep -q "shard http://127.0.0.1:[0-9]*/ok/junk.rfs" "$tmp/err" &&
	ok "not a shard: the error names the shard, redacted" ||
	bad "not a shard: rc $rc: $(tail -n 2 "$tmp/err")"
l=$(leaked "$tmp/out" "$tmp/err")
[ -z "$l" ] && ok "not a shard: no secret in stderr" || bad "not a shard: secrets shown:$l"
rc=0
"$cli" read --digest --retries 1 --stats "$tmp/fail.json" --trace "$tmp/fail.trace" \
	"$(secret_url reset-always)" >"$tmp/out" 2>"$tmp/err" || rc=$?
[ $rc -ne 0 ] && ok "failing server: read fails" || bad "failing server: read succeeded"
grep -q "reset-always/shard-000000.rfs" "$tmp/err" && ok "failing server: the error names the shard" ||
	bad "failing server: the error does not name the shard: $(tail -n 2 "$tmp/err")"
l=$(leaked "$tmp/out" "$tmp/err" "$tmp/fail.json" "$tmp/fail.trace")
[ -z "$l" ] && ok "failing server: no secret in stderr, stats or trace" ||
	bad "failing server: secrets shown:$l ($(grep -h -F -- "$password" "$tmp/err" | head -n 1))"
# a body cut once and resumed from the rest: the trace's line about the
# kept bytes names the URL redacted, like the others
rc=0
RF_HTTP_TRACE=1 "$cli" read --digest --retries 2 --cache off --stats "$tmp/resume.json" \
	"$(secret_url reset-once-versioned)" >"$tmp/out" 2>"$tmp/err" || rc=$?
[ $rc = 0 ] && [ "$(tail -n 1 "$tmp/out")" = "$want" ] && grep -q "bytes of the range kept, the rest from byte" "$tmp/err" &&
	ok "cut body resumed: the same digest, the trace says so" ||
	bad "cut body resumed: rc $rc, $(tail -n 1 "$tmp/out"), $(grep -v ' -> ' "$tmp/err" | head -c 400)"
l=$(leaked "$tmp/out" "$tmp/err" "$tmp/resume.json")
[ -z "$l" ] && ok "cut body resumed: no secret in stderr (trace on) or stats" || bad "cut body resumed: secrets shown:$l"

rc=0
"$cli" read --digest --stats "$tmp/pause.json" --trace "$tmp/pause.trace" --tune-interval 50ms \
	"$(secret_url stall)" >"$tmp/out" 2>"$tmp/err" || rc=$?
[ $rc -eq 0 ] && [ "$(tail -n 1 "$tmp/out")" = "$want" ] && ok "stalling server: read succeeds" ||
	bad "stalling server: rc $rc: $(tail -n 2 "$tmp/err")"
src_json=$($PY -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s.get("pause_longest_source",""), json.dumps(s.get("pauses_by_source",[])))' "$tmp/pause.json")
case $src_json in
*stall/shard-000000.rfs*) ok "stats name the paused source: ${src_json:0:120}" ;;
*) bad "stats do not name the paused source: $src_json" ;;
esac
l=$(leaked "$tmp/out" "$tmp/err" "$tmp/pause.json" "$tmp/pause.trace")
[ -z "$l" ] && ok "stalling server: no secret in stderr, stats or trace" ||
	bad "stalling server: secrets shown:$l"

# verify names the URLs of a manifest it cannot read, redacted
printf '# ringfeed manifest v1\n%s\t100\t1\n' "$(secret_url ok)" >"$tmp/m.rfm"
"$cli" verify "$tmp/m.rfm" >"$tmp/out" 2>"$tmp/err" || true
l=$(leaked "$tmp/out" "$tmp/err")
grep -q "DAMAGED http://127.0.0.1:[0-9]*/ok/shard-000000.rfs" "$tmp/out" && [ -z "$l" ] &&
	ok "verify names a manifest's URL redacted" || bad "verify shows:$l $(head -n 2 "$tmp/out")"

# ---- flags are visible in /proc/PID/cmdline: --help says so ---------------------
for flag in --s3-secret-key --s3-session-token; do
	"$cli" read --help | grep -A 2 -e "$flag " | tr '\n' ' ' | grep -q "/proc/PID/cmdline.*AWS_\|AWS_.*/proc/PID/cmdline" &&
		ok "--help: $flag is visible in /proc/PID/cmdline, the variable is preferred" ||
		bad "--help does not warn about $flag: $("$cli" read --help | grep -e "$flag ")"
done

rf_checks_done
