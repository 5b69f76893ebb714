#!/usr/bin/env bash
# cli_servers.sh - the test servers answer as the object-storage and fault
# tests expect (checked with curl): nginx ranges and keep-alive over HTTP and
# HTTPS with the CA file, s3rver PUT + ranged GET + listing, the SigV4
# verifier accepting good signatures and rejecting bad ones, and every
# bad_http mode.
set -euo pipefail
src=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/tests/servers.inc.sh"
rf_servers_or_start

. "$src/tests/check.inc.sh"
check() { # DESCRIPTION EXPECTED ACTUAL
	if [ "$2" = "$3" ]; then ok "$1"; else bad "$1: expected '$2', got '$3'"; fi
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-servers.XXXXXX")
rf_at_exit "rm -rf '$tmp'"
tag=cli-servers-$$
head -c 300000 /dev/urandom >"$tmp/data.bin"
dd if="$tmp/data.bin" of="$tmp/slice" bs=1 skip=1000 count=1000 status=none
size=300000

# ---- nginx -----------------------------------------------------------------
mkdir -p "$RF_NGINX_ROOT/$tag"
cp "$tmp/data.bin" "$RF_NGINX_ROOT/$tag/data.bin"
rf_at_exit "rm -rf '$RF_NGINX_ROOT/$tag'"
u=$RF_NGINX_URL/$tag/data.bin
code=$(curl -s -o "$tmp/got" -D "$tmp/hdr" -w '%{http_code}' -r 1000-1999 "$u")
check "nginx range status" 206 "$code"
check "nginx Content-Range" "bytes 1000-1999/$size" \
	"$(tr -d '\r' <"$tmp/hdr" | sed -n 's/^[Cc]ontent-[Rr]ange: //p')"
cmp -s "$tmp/got" "$tmp/slice" && ok "nginx range bytes" || bad "nginx range bytes differ"
conns=$(curl -s -o /dev/null -o /dev/null -w '%{num_connects} ' -r 0-9 "$u" "$u")
check "nginx keep-alive (connections opened per transfer)" "1 0 " "$conns"

code=$(curl -s -o "$tmp/got" -w '%{http_code}' --cacert "$RF_CA_FILE" -r 1000-1999 \
	"$RF_NGINX_TLS_URL/$tag/data.bin")
check "nginx https range status" 206 "$code"
cmp -s "$tmp/got" "$tmp/slice" && ok "nginx https bytes" || bad "nginx https bytes differ"
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$RF_CA_FILE" -r 0-0 \
	"${RF_NGINX_TLS_URL/127.0.0.1/localhost}/$tag/data.bin")
check "nginx https by name (DNS:localhost in the cert)" 206 "$code"
rc=0
curl -s -o /dev/null --capath /nonexistent --cacert /dev/null "$RF_NGINX_TLS_URL/$tag/data.bin" || rc=$?
check "nginx https without the CA file is refused (curl 60/77)" yes \
	"$([ "$rc" = 60 ] || [ "$rc" = 77 ] && echo yes || echo "no (rc $rc)")"

# ---- s3rver ----------------------------------------------------------------
sig=(--aws-sigv4 "aws:amz:us-east-1:s3" -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD')
s3=$RF_S3_ENDPOINT/$RF_S3_BUCKET
code=$(curl -s -o /dev/null -w '%{http_code}' "${sig[@]}" --user "${RF_S3_ACCESS_KEY:-S3RVER}:${RF_S3_SECRET_KEY:-S3RVER}" \
	-T "$tmp/data.bin" "$s3/$tag/data.bin")
check "s3rver PUT" 200 "$code"
code=$(curl -s -o "$tmp/got" -w '%{http_code}' "${sig[@]}" --user "${RF_S3_ACCESS_KEY:-S3RVER}:${RF_S3_SECRET_KEY:-S3RVER}" \
	-r 1000-1999 "$s3/$tag/data.bin")
check "s3rver ranged GET" 206 "$code"
cmp -s "$tmp/got" "$tmp/slice" && ok "s3rver bytes" || bad "s3rver bytes differ"
curl -s "${sig[@]}" --user "${RF_S3_ACCESS_KEY:-S3RVER}:${RF_S3_SECRET_KEY:-S3RVER}" \
	"$s3?list-type=2&prefix=$tag%2F" >"$tmp/list"
grep -q "<Key>$tag/data.bin</Key>" "$tmp/list" && ok "s3rver listing" || bad "s3rver listing: $(cat "$tmp/list")"
curl -s -o /dev/null "${sig[@]}" --user "${RF_S3_ACCESS_KEY:-S3RVER}:${RF_S3_SECRET_KEY:-S3RVER}" \
	-T "$tmp/slice" "$s3/$tag/slice.bin"
code=$(curl -s -o "$tmp/list" -w '%{http_code}' "${sig[@]}" --user "${RF_S3_ACCESS_KEY:-S3RVER}:${RF_S3_SECRET_KEY:-S3RVER}" \
	"$s3?list-type=2&max-keys=1&prefix=$tag%2F")
check "s3rver truncated listing (needs OpenSSL's legacy provider)" 200 "$code"
token=$(sed -n 's/.*<NextContinuationToken>\([^<]*\)<.*/\1/p' "$tmp/list")
enc=$(/usr/bin/python3 -c 'import sys,urllib.parse; print(urllib.parse.quote(sys.argv[1], safe="-_.~"))' "$token")
curl -s "${sig[@]}" --user "${RF_S3_ACCESS_KEY:-S3RVER}:${RF_S3_SECRET_KEY:-S3RVER}" \
	"$s3?continuation-token=$enc&list-type=2&max-keys=1&prefix=$tag%2F" >"$tmp/list2"
check "s3rver listing page 2" "<Key>$tag/slice.bin</Key>" "$(grep -o '<Key>[^<]*</Key>' "$tmp/list2")"

# ---- SigV4 verifier --------------------------------------------------------
v=$RF_SIGV4_URL/$RF_SIGV4_BUCKET
good=(--user "$RF_SIGV4_ACCESS:$RF_SIGV4_SECRET")
code=$(curl -s -o /dev/null -w '%{http_code}' "${sig[@]}" "${good[@]}" -T "$tmp/data.bin" "$v/$tag/data.bin")
check "sigv4 PUT (unsigned payload)" 200 "$code"
cmp -s "$tmp/data.bin" "$RF_SIGV4_ROOT/$RF_SIGV4_BUCKET/$tag/data.bin" && ok "sigv4 PUT stored the bytes" ||
	bad "sigv4 PUT stored other bytes"
code=$(curl -s -o "$tmp/got" -D "$tmp/hdr" -w '%{http_code}' "${sig[@]}" "${good[@]}" -r 1000-1999 "$v/$tag/data.bin")
check "sigv4 signed ranged GET" 206 "$code"
check "sigv4 Content-Range" "bytes 1000-1999/$size" \
	"$(tr -d '\r' <"$tmp/hdr" | sed -n 's/^[Cc]ontent-[Rr]ange: //p')"
cmp -s "$tmp/got" "$tmp/slice" && ok "sigv4 bytes" || bad "sigv4 bytes differ"
code=$(curl -s -o "$tmp/err" -w '%{http_code}' "${sig[@]}" --user "$RF_SIGV4_ACCESS:wrong-secret" \
	-r 0-9 "$v/$tag/data.bin")
check "sigv4 wrong secret" 403 "$code"
grep -q "<Code>SignatureDoesNotMatch</Code>" "$tmp/err" && ok "sigv4 error body names SignatureDoesNotMatch" ||
	bad "sigv4 error body: $(cat "$tmp/err")"
grep -q "$RF_SIGV4_SECRET" "$tmp/err" && bad "sigv4 error body leaks the secret" || ok "sigv4 error hides the secret"
code=$(curl -s -o /dev/null -w '%{http_code}' "$v/$tag/data.bin")
check "sigv4 unsigned request" 403 "$code"
code=$(curl -s -o /dev/null -w '%{http_code}' "${sig[@]}" --user "WRONGKEY:$RF_SIGV4_SECRET" "$v/$tag/data.bin")
check "sigv4 unknown access key" 403 "$code"
hash=$(sha256sum "$tmp/slice" | cut -d' ' -f1)
code=$(curl -s -o /dev/null -w '%{http_code}' --aws-sigv4 "aws:amz:us-east-1:s3" "${good[@]}" \
	-H "x-amz-content-sha256: $hash" -T "$tmp/slice" "$v/$tag/slice.bin")
check "sigv4 PUT with a signed payload hash" 200 "$code"
code=$(curl -s -o /dev/null -w '%{http_code}' --aws-sigv4 "aws:amz:us-east-1:s3" "${good[@]}" \
	-H "x-amz-content-sha256: $hash" -T "$tmp/data.bin" "$v/$tag/other.bin")
check "sigv4 PUT whose body does not match its hash" 400 "$code"
# Keys that need encoding: the client pre-encodes (curl 7.88 signs the path as sent).
code=$(curl -s -o /dev/null -w '%{http_code}' "${sig[@]}" "${good[@]}" -T "$tmp/slice" "$v/$tag/a%20b%2Bc.bin")
check "sigv4 PUT of an encoded key" 200 "$code"
[ -f "$RF_SIGV4_ROOT/$RF_SIGV4_BUCKET/$tag/a b+c.bin" ] && ok "sigv4 decoded the key" || bad "sigv4 key 'a b+c.bin' missing"
for i in 1 2 3 4; do
	curl -s -o /dev/null "${sig[@]}" "${good[@]}" -T "$tmp/slice" "$v/$tag/list/k$i"
done
# Pages are capped at RF_SIGV4_PAGE_KEYS (3): 4 keys take two pages. The query
# is pre-sorted and encoded as the AWS spec wants (curl 7.88 does neither).
curl -s "${sig[@]}" "${good[@]}" "$v?list-type=2&prefix=$tag%2Flist%2F" >"$tmp/p1"
check "sigv4 listing page 1 keys" 3 "$(grep -o '<Key>' "$tmp/p1" | wc -l)"
grep -q '<IsTruncated>true</IsTruncated>' "$tmp/p1" && ok "sigv4 listing page 1 truncated" || bad "page 1: $(cat "$tmp/p1")"
token=$(sed -n 's/.*<NextContinuationToken>\([^<]*\)<.*/\1/p' "$tmp/p1")
enc=$(/usr/bin/python3 -c 'import sys,urllib.parse; print(urllib.parse.quote(sys.argv[1], safe="-_.~"))' "$token")
curl -s "${sig[@]}" "${good[@]}" "$v?continuation-token=$enc&list-type=2&prefix=$tag%2Flist%2F" >"$tmp/p2"
check "sigv4 listing page 2" "<Key>$tag/list/k4</Key>" "$(grep -o '<Key>[^<]*</Key>' "$tmp/p2")"
grep -q '<IsTruncated>false</IsTruncated>' "$tmp/p2" && ok "sigv4 listing page 2 last" || bad "page 2: $(cat "$tmp/p2")"
code=$(curl -s -o /dev/null -w '%{http_code}' "${sig[@]}" "${good[@]}" "$v?prefix=$tag%2F&list-type=2")
check "sigv4 rejects a query signed unsorted (the spec sorts it)" 403 "$code"
code=$(curl -s -o /dev/null -w '%{http_code}' -X HEAD -I "${sig[@]}" "${good[@]}" "$v/$tag/data.bin")
check "sigv4 HEAD" 200 "$code"
code=$(curl -s -o /dev/null -w '%{http_code}' "${sig[@]}" "${good[@]}" "$v/$tag/missing.bin")
check "sigv4 missing key" 404 "$code"

# ---- bad_http ------------------------------------------------------------
mkdir -p "$RF_BAD_ROOT/$tag"
cp "$tmp/data.bin" "$RF_BAD_ROOT/$tag/data.bin"
rf_at_exit "rm -rf '$RF_BAD_ROOT/$tag'"
b() { echo "$RF_BAD_URL/$1/$tag/data.bin"; }
get() { # MODE [CURL ARGS...] -> "status rc size"
	local mode=$1 rc=0 out
	shift
	out=$(curl -s -o "$tmp/got" -w '%{http_code}' -r 1000-1999 "$@" "$(b "$mode")") || rc=$?
	echo "$out $rc $(stat -c %s "$tmp/got" 2>/dev/null || echo 0)"
}
stats() { # MODE -> "requests faults"
	curl -s "$RF_BAD_URL/_stats" | /usr/bin/python3 -c \
		'import json,sys; s=json.load(sys.stdin).get(sys.argv[1],{}); print(s.get("requests",0), s.get("faults",0))' \
		"/$1/$tag/data.bin"
}
check "bad /ok/" "206 0 1000" "$(get ok)"
cmp -s "$tmp/got" "$tmp/slice" && ok "bad /ok/ bytes" || bad "bad /ok/ bytes differ"
check "bad /404/" "404 0" "$(get 404 | cut -d' ' -f1-2)"
check "bad /403/" "403 0" "$(get 403 | cut -d' ' -f1-2)"
check "bad /500-once/ first" "500 0" "$(get 500-once | cut -d' ' -f1-2)"
check "bad /500-once/ then" "206 0 1000" "$(get 500-once)"
check "bad /500-once/ stats" "2 1" "$(stats 500-once)"
curl -s -o /dev/null -D "$tmp/hdr" -r 1000-1999 "$(b 503-retry-after)"
check "bad /503-retry-after/ Retry-After" "1" "$(tr -d '\r' <"$tmp/hdr" | sed -n 's/^Retry-After: //p')"
check "bad /503-retry-after/ then" "206 0 1000" "$(get 503-retry-after)"
check "bad /429-once/ first" "429 0" "$(get 429-once | cut -d' ' -f1-2)"
check "bad /reset-mid-body/ first (curl 56: reset)" "206 56" "$(get reset-mid-body | cut -d' ' -f1-2)"
check "bad /reset-mid-body/ then" "206 0 1000" "$(get reset-mid-body)"
check "bad /reset-always/" "206 56" "$(get reset-always | cut -d' ' -f1-2)"
check "bad /reset-always/ again" "206 56" "$(get reset-always | cut -d' ' -f1-2)"
check "bad /ignore-range/" "200 0 $size" "$(get ignore-range)"
curl -s -o /dev/null -D "$tmp/hdr" -r 1000-1999 "$(b wrong-range)"
check "bad /wrong-range/" "bytes 1001-2000/$size" "$(tr -d '\r' <"$tmp/hdr" | sed -n 's/^Content-Range: //p')"
check "bad /short/ (curl 18: partial)" "206 18 500" "$(get short)"
check "bad /short-once/ first" "206 18" "$(get short-once | cut -d' ' -f1-2)"
check "bad /short-once/ then" "206 0 1000" "$(get short-once)"
check "bad /stall/ first (curl 28: low-speed limit)" "206 28" \
	"$(get stall --speed-limit 100000 --speed-time 1 | cut -d' ' -f1-2)"
check "bad /stall/ then" "206 0 1000" "$(get stall --speed-limit 100000 --speed-time 1)"
res=$(get trickle --max-time 2)
check "bad /trickle/ (curl 28, a few bytes)" "206 28" "$(echo "$res" | cut -d' ' -f1-2)"
[ "$(echo "$res" | cut -d' ' -f3)" -le 4 ] && ok "bad /trickle/ sent at most a byte a second" || bad "trickle sent $res"
check "bad /redirect-loop/ (curl 47: too many redirects)" "302 47" \
	"$(get redirect-loop -L --max-redirs 5 | cut -d' ' -f1-2)"
check "bad /redirect-loop/ counts hops" "6 6" "$(stats redirect-loop)"
curl -s -I "$(b huge-length)" -o /dev/null -D "$tmp/hdr"
check "bad /huge-length/ HEAD" 1000000000000000 "$(tr -d '\r' <"$tmp/hdr" | sed -n 's/^Content-Length: //p')"
check "bad /huge-length/ GET (curl 18)" "206 18" "$(get huge-length | cut -d' ' -f1-2)"
check "bad unknown mode" 404 "$(get no-such-mode | cut -d' ' -f1)"

rf_checks_done cli_servers
