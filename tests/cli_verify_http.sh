#!/usr/bin/env bash
# cli_verify_http.sh - `ringfeed verify` takes every name `read` takes, remote
# ones included, and reads them through the library's sources: healthy
# http(s):// shards are ok (a brace range, the CA file), a damaged one served
# by nginx is DAMAGED naming its block, an s3:// prefix is listed and
# verified, and a missing object is named.
set -euo pipefail
src=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/tests/servers.inc.sh"
rf_servers_or_start
cli=${RF_CLI:?RF_CLI must name the ringfeed binary}

. "$src/tests/check.inc.sh"
# check DESCRIPTION WANT_RC PATTERN... -- ARGS...: verify ARGS exits WANT_RC and
# its output holds every PATTERN
check() {
	local what=$1 want=$2 rc=0
	shift 2
	local pats=()
	while [ "$1" != -- ]; do pats+=("$1"); shift; done
	shift
	timeout 60 "$cli" verify "$@" >"$tmp/out" 2>&1 || rc=$?
	[ "$rc" = "$want" ] || { bad "$what: exit $rc, want $want: $(tail -5 "$tmp/out")"; return; }
	local p
	for p in "${pats[@]}"; do
		grep -q -- "$p" "$tmp/out" || { bad "$what: output lacks '$p': $(tail -5 "$tmp/out")"; return; }
	done
	ok "$what"
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-verify-http.XXXXXX")
rf_at_exit "rm -rf '$tmp'"
tag=cli-verify-http-$$
"$cli" pack --demo -o "$tmp/ds" --demo-bytes 3MiB --demo-shards 3 >/dev/null
n=$(cd "$tmp/ds" && ls shard-*.rfs | wc -l)
last=$(printf '%06d' $((n - 1)))
brace="shard-{000000..$last}.rfs"

mkdir -p "$RF_NGINX_ROOT/$tag"
cp "$tmp"/ds/shard-*.rfs "$RF_NGINX_ROOT/$tag/"
rf_at_exit "rm -rf '$RF_NGINX_ROOT/$tag'"
check "http shard ok" 0 "ok $RF_NGINX_URL/$tag/shard-000000.rfs" "verify: 1 shards, 0 damaged" \
	-- "$RF_NGINX_URL/$tag/shard-000000.rfs"
check "http brace range ok" 0 "verify: $n shards, 0 damaged" -- "$RF_NGINX_URL/$tag/$brace"
check "https with the CA file ok" 0 "verify: 1 shards, 0 damaged" \
	-- --ca-file "$RF_CA_FILE" "$RF_NGINX_TLS_URL/$tag/shard-000000.rfs"

# one block damaged on the server: named, DAMAGED, exit 1
off=$("$cli" inspect --json "$tmp/ds/shard-000001.rfs" | /usr/bin/python3 -c \
	'import json,sys; j=json.load(sys.stdin); print(j["compressed_bytes"] // 2)')
cp "$tmp/ds/shard-000001.rfs" "$RF_NGINX_ROOT/$tag/bad.rfs"
printf '\x5a\x5a\x5a\x5a' | dd of="$RF_NGINX_ROOT/$tag/bad.rfs" bs=1 seek="$off" conv=notrunc status=none
check "damaged http shard named" 1 "bad.rfs: block [0-9]* at byte" "DAMAGED $RF_NGINX_URL/$tag/bad.rfs" \
	-- "$RF_NGINX_URL/$tag/bad.rfs"
check "missing http object named" 1 "missing.rfs" "DAMAGED $RF_NGINX_URL/$tag/missing.rfs" \
	-- "$RF_NGINX_URL/$tag/missing.rfs"

# s3: a prefix is listed, every key verified
s3=(--s3-endpoint "$RF_S3_ENDPOINT" --s3-access-key "$RF_S3_ACCESS_KEY"
	--s3-secret-key "$RF_S3_SECRET_KEY")
for f in "$tmp"/ds/shard-*.rfs; do
	rf_s3_put "$f" "$tag/$(basename "$f")" || bad "upload $f"
done
check "s3 prefix verified" 0 "verify: $n shards, 0 damaged" -- "${s3[@]}" "s3://$RF_S3_BUCKET/$tag/"

rf_checks_done cli_verify_http
