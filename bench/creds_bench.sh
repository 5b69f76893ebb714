#!/usr/bin/env bash
# creds_bench.sh - the figure for credential refresh: a read of about
# SECONDS (default 60) through S3 with temporary credentials that expire
# every TTL seconds (default 15), from web identity (STS
# AssumeRoleWithWebIdentity at tests/servers/creds_server.py), against
# the SigV4 verifier that answers ExpiredToken after expiry. Reports the
# elapsed time, STS calls, requests, ExpiredToken answers met, failed
# requests, and whether the digest equals the local read. The read is
# slowed by the fault injector (150 ms per read, one connection) and repeated
# for several epochs in one loader so that it outlives several credential
# lifetimes; nothing here decides on timing.
# Usage: bench/creds_bench.sh [BUILD_DIR] [SECONDS] [TTL]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
seconds=${2:-60}
ttl=${3:-15}
CLI=$build/ringfeed
PY=/usr/bin/python3
TS=$top/tests/servers
[ -x "$CLI" ] || { echo "build first: scripts/build.sh" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/rf-creds-bench-XXXXXX")
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT
start() { # NAME CMD...: port in $port
	local name=$1
	shift
	"$@" --port 0 --port-file "$work/$name.port" >"$work/$name.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 100); do [ -s "$work/$name.port" ] && break; sleep 0.1; done
	port=$(cat "$work/$name.port")
}
master=bench-master-$$
mkdir -p "$work/root/ringfeed/ds"
echo "bench-web-identity-token" >"$work/webtok"
start s3 $PY "$TS/sigv4_server.py" --root "$work/root" --issued-master "$master" --bucket ringfeed
S3=http://127.0.0.1:$port
start sts $PY "$TS/creds_server.py" --master "$master" --ttl "$ttl" \
	--web-identity-token bench-web-identity-token
STS=http://127.0.0.1:$port
$PY -c 'import base64, os, sys; sys.stdout.buffer.write(base64.b64encode(os.urandom(786432)))' \
	>"$work/recs"
"$CLI" pack --from fixed:1024 "$work/recs" -o "$work/ds" --block-size 8KiB \
	--shard-size 512KiB >/dev/null
cp "$work/ds"/*.rfs "$work/root/ringfeed/ds/"
# One epoch with 150 ms per read lasts about 7 s here (the read-ahead overlaps
# the latencies); the read is that many epochs in one loader.
epochs=$(((seconds + 6) / 7))
want=$("$CLI" read --digest --epochs "$epochs" "$work/ds" | tail -n 1)
stat() { curl -s "$1/_stats" | $PY -c 'import json,sys; print(json.load(sys.stdin).get(sys.argv[1],0))' "$2"; }
t0=$(date +%s.%N)
rc=0
env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN -u AWS_PROFILE \
	AWS_EC2_METADATA_DISABLED=true AWS_ROLE_ARN=arn:aws:iam::123456789012:role/rf-test-role \
	AWS_WEB_IDENTITY_TOKEN_FILE="$work/webtok" AWS_ENDPOINT_URL_STS="$STS" HOME="$work" \
	"$CLI" read --digest --cache off --s3-endpoint "$S3" --stats "$work/stats.json" \
	--inject latency=150ms --connections 1 --request-size 4KiB --batch 16 --epochs "$epochs" \
	s3://ringfeed/ds/ >"$work/out" 2>"$work/err" || rc=$?
t1=$(date +%s.%N)
got=$(tail -n 1 "$work/out" || true)
field() { $PY -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$work/stats.json" "$1"; }
printf 'credential refresh: TTL %s s, read %.1f s, %d epochs (rc %d)\n' "$ttl" \
	"$($PY -c "print($t1-$t0)")" "$epochs" "$rc"
printf '  STS AssumeRoleWithWebIdentity calls: %s (listing + loader, each refreshing)\n' \
	"$(stat "$STS" issued_AssumeRoleWithWebIdentity)"
printf '  S3 requests accepted: %s, ExpiredToken answers: %s\n' "$(stat "$S3" accepted)" \
	"$(stat "$S3" error_ExpiredToken)"
printf '  loader: fetch_errors %s, fetch_retries %s\n' "$(field fetch_errors)" "$(field fetch_retries)"
[ "$got" = "$want" ] && echo "  digest equals the local read" || echo "  DIGEST DIFFERS: $got vs $want"
grep -aqE "rfsec/|rftok|ASIARF|bench-web-identity-token" "$work/err" "$work/stats.json" &&
	echo "  A SECRET APPEARS IN THE OUTPUT" || echo "  no secret in stderr or stats"
