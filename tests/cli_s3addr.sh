#!/usr/bin/env bash
# cli_s3addr.sh - S3 addressing as deployed: endpoint and region precedence,
# virtual-hosted-style requests (Host: BUCKET.localhost:PORT; curl resolves
# *.localhost to the loopback), path-style fallback for a dotted bucket, a
# wrong region followed once from the server's answer (and named when it
# cannot be), gs:// through the S3-interoperable API, and the CA-bundle
# variables. Private SigV4 verifiers (tests/servers/sigv4_server.py) play
# S3 in region eu-west-3 and GCS (region "auto"); nothing leaves the host.
# Every read is compared with the local read's digest; no secret may appear
# in any output.
set -euo pipefail
src=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/tests/servers.inc.sh"
cli=${RF_CLI:?RF_CLI must name the ringfeed binary}
command -v python3 >/dev/null || {
	echo "SKIP: python3 missing" >&2
	exit 77
}

. "$src/tests/check.inc.sh"
has() { # DESCRIPTION FILE PATTERN
	if grep -qE -- "$3" "$2"; then ok "$1"; else bad "$1: '$3' not in: $(head -c 600 "$2")"; fi
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-s3addr.XXXXXX")
rf_at_exit "rm -rf '$tmp'"
ACCESS=RFADDRACCESS
SECRET=rf-addr-secret/0123456789abcdef
BKT=rfaddr
DOTS=rf.dots.bucket

# start_verifier NAME REGION [ARGS...]: its port in $port. Called in this
# shell, never in $(...): a subshell's EXIT trap is not this script's (and
# bash execs a subshell's last command, so its trap never ran), which left
# every verifier running after the test.
start_verifier() {
	local name=$1 region=$2 pid
	shift 2
	mkdir -p "$tmp/$name/$BKT" "$tmp/$name/$DOTS"
	python3 "$src/tests/servers/sigv4_server.py" --root "$tmp/$name" --port 0 \
		--port-file "$tmp/$name.port" --access-key "$ACCESS" --secret-key "$SECRET" \
		--region "$region" "$@" >"$tmp/$name.log" 2>&1 &
	pid=$!
	rf_at_exit "kill $pid 2>/dev/null; wait $pid 2>/dev/null"
	for _ in $(seq 100); do
		[ -s "$tmp/$name.port" ] && break
		sleep 0.1
	done
	[ -s "$tmp/$name.port" ] || {
		cat "$tmp/$name.log" >&2
		echo "FAIL: verifier $name did not start" >&2
		exit 1
	}
	port=$(cat "$tmp/$name.port")
}
stat_of() { # PORT NAME: a counter of a verifier
	curl -sf "http://127.0.0.1:$1/_stats" | python3 -c "import json,sys; print(json.load(sys.stdin).get('$2', 0))"
}

start_verifier s3 eu-west-3
s3port=$port
start_verifier gs auto
gsport=$port
start_verifier redir eu-west-3 --redirect-unsigned
rport=$port

head -c 300000 /dev/urandom >"$tmp/data.bin"
"$cli" pack --from fixed:1000 --block-size 32KiB --shard-size 100000 "$tmp/data.bin" -o "$tmp/ds" >/dev/null
for n in s3 gs redir; do
	mkdir -p "$tmp/$n/$BKT/d" "$tmp/$n/$DOTS/d"
	cp "$tmp"/ds/*.rfs "$tmp/$n/$BKT/d/"
	cp "$tmp"/ds/*.rfs "$tmp/$n/$DOTS/d/"
done
shard=$(basename "$(ls "$tmp"/ds/*.rfs | head -n 1)")
want=$("$cli" read --digest --no-shuffle "$tmp/ds/$shard" | tail -n 1)
want_all=$("$cli" read --digest --no-shuffle "$tmp/ds" | tail -n 1)

env_clear() { unset AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 AWS_REGION AWS_DEFAULT_REGION AWS_PROFILE; }
export AWS_ACCESS_KEY_ID=$ACCESS AWS_SECRET_ACCESS_KEY=$SECRET
export AWS_CONFIG_FILE=$tmp/no-such-config AWS_SHARED_CREDENTIALS_FILE=$tmp/no-such-credentials
run() { # NAME ARGS...: read, stdout+stderr in $tmp/NAME.out; prints the digest line
	local name=$1
	shift
	"$cli" read --digest --no-shuffle "$@" >"$tmp/$name.out" 2>&1 || true
	tail -n 1 "$tmp/$name.out"
}

# 1. AWS_ENDPOINT_URL_S3 wins over AWS_ENDPOINT_URL (a dead port)
env_clear
export AWS_ENDPOINT_URL=http://127.0.0.1:9 AWS_ENDPOINT_URL_S3=http://127.0.0.1:$s3port
export AWS_REGION=eu-west-3
same "AWS_ENDPOINT_URL_S3 is used over AWS_ENDPOINT_URL" "$want" \
	"$(run prec "s3://$BKT/d/$shard")"

# 2. a wrong region is followed once, from x-amz-bucket-region, and learned for the bucket
env_clear
export AWS_ENDPOINT_URL=http://127.0.0.1:$s3port AWS_REGION=us-east-1
before=$(stat_of "$s3port" wrong_region)
same "a bucket in another region (eu-west-3) reads when us-east-1 is configured" "$want_all" \
	"$(run region "s3://$BKT/d/")"
after=$(stat_of "$s3port" wrong_region)
n=$((after - before))
nshards=$(ls "$tmp"/ds/*.rfs | wc -l)
# learned per client for the bucket: the listing's client once, the loader's
# at most once per read started before the first answer came back
if [ "$n" -ge 1 ] && [ "$n" -le $((1 + nshards)) ]; then
	ok "the region was learned for the bucket ($n wrong-region answers, $nshards shards)"
else
	bad "expected 1..$((1 + nshards)) wrong-region answers (learned once per bucket), got $n"
fi
export AWS_REGION=eu-west-3
before=$(stat_of "$s3port" wrong_region)
same "the right region from AWS_REGION reads" "$want" "$(run right "s3://$BKT/d/$shard")"
same "... with no wrong-region answer" "$before" "$(stat_of "$s3port" wrong_region)"
unset AWS_REGION
export AWS_DEFAULT_REGION=eu-west-3
before=$(stat_of "$s3port" wrong_region)
same "AWS_DEFAULT_REGION gives the region" "$want" "$(run defreg "s3://$BKT/d/$shard")"
same "... with no wrong-region answer" "$before" "$(stat_of "$s3port" wrong_region)"

# 3. an anonymous request to another region's endpoint (301 PermanentRedirect) cannot be
#    followed on a custom endpoint: the error names the region, never a bare status
env_clear
export AWS_ENDPOINT_URL=http://127.0.0.1:$rport AWS_REGION=us-east-1
(
	unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
	run redir "s3://$BKT/d/$shard" >/dev/null
)
has "a 301 PermanentRedirect names the bucket's region" "$tmp/redir.out" \
	"HTTP 301.*\(the bucket is in region eu-west-3"

# 4. virtual-hosted-style on request, path-style for a dotted bucket
env_clear
export AWS_ENDPOINT_URL=http://localhost:$s3port AWS_REGION=eu-west-3
before=$(stat_of "$s3port" virtual_hosted)
same "virtual-hosted-style (BUCKET.localhost) reads" "$want_all" \
	"$(run virt --s3-addressing virtual "s3://$BKT/d/")"
vh=$(($(stat_of "$s3port" virtual_hosted) - before))
[ "$vh" -gt 0 ] && ok "requests were virtual-hosted ($vh)" || bad "no virtual-hosted request seen"
before=$(stat_of "$s3port" virtual_hosted)
same "a dotted bucket falls back to path-style" "$want" \
	"$(run dots --s3-addressing virtual "s3://$DOTS/d/$shard")"
same "... no virtual-hosted request for it" "$before" "$(stat_of "$s3port" virtual_hosted)"
before=$(stat_of "$s3port" virtual_hosted)
same "a custom endpoint is path-style by default" "$want" "$(run auto "s3://$BKT/d/$shard")"
same "... no virtual-hosted request" "$before" "$(stat_of "$s3port" virtual_hosted)"
"$cli" read --digest --s3-addressing sideways "s3://$BKT/d/$shard" >"$tmp/badaddr.out" 2>&1 || true
has "a bad s3_addressing is named" "$tmp/badaddr.out" "s3_addressing 'sideways'"

# 4b. the same from an AWS profile: region, endpoint_url, s3 = addressing_style
env_clear
cat >"$tmp/config" <<EOF2
[default]
region = us-west-2
[profile addr]
region = eu-west-3
endpoint_url = http://localhost:$s3port
s3 =
  addressing_style = virtual
EOF2
vbefore=$(stat_of "$s3port" virtual_hosted)
wbefore=$(stat_of "$s3port" wrong_region)
same "a profile's region, endpoint_url and addressing_style" "$want" \
	"$(AWS_CONFIG_FILE=$tmp/config AWS_PROFILE=addr run prof "s3://$BKT/d/$shard")"
[ "$(stat_of "$s3port" virtual_hosted)" -gt "$vbefore" ] && ok "... virtual-hosted" ||
	bad "the profile's addressing_style was not used"
same "... in the profile's region" "$wbefore" "$(stat_of "$s3port" wrong_region)"

# 5. gs:// through the S3-interoperable XML API: SigV4 with region "auto"
env_clear
same "gs://bucket/key reads (SigV4, region auto)" "$want" \
	"$(run gs --gs-endpoint "http://127.0.0.1:$gsport" "gs://$BKT/d/$shard")"
same "gs://bucket/prefix/ lists and reads" "$want_all" \
	"$(run gslist --gs-endpoint "http://127.0.0.1:$gsport" "gs://$BKT/d/")"

# 6. the CA-bundle variables (the ca_file key stays first)
if [ -n "${RF_NGINX_TLS_URL:-}" ] && [ -n "${RF_CA_FILE:-}" ] && [ -n "${RF_NGINX_ROOT:-}" ]; then
	tag=cli-s3addr-$$
	mkdir -p "$RF_NGINX_ROOT/$tag"
	rf_at_exit "rm -rf '$RF_NGINX_ROOT/$tag'"
	cp "$tmp/ds/$shard" "$RF_NGINX_ROOT/$tag/"
	url=$RF_NGINX_TLS_URL/$tag/$shard
	(
		unset AWS_CA_BUNDLE CURL_CA_BUNDLE SSL_CERT_FILE
		run noca "$url" >/dev/null
	)
	has "without a CA bundle the test CA is refused" "$tmp/noca.out" "certificate|SSL|TLS"
	same "AWS_CA_BUNDLE comes before CURL_CA_BUNDLE" "$want" "$(env -u SSL_CERT_FILE \
		AWS_CA_BUNDLE="$RF_CA_FILE" CURL_CA_BUNDLE=/nonexistent "$cli" read --digest \
		--no-shuffle "$url" 2>&1 | tail -n 1)"
	for v in AWS_CA_BUNDLE CURL_CA_BUNDLE SSL_CERT_FILE; do
		same "$v names the CA bundle" "$want" "$(env -u AWS_CA_BUNDLE -u CURL_CA_BUNDLE \
			-u SSL_CERT_FILE "$v=$RF_CA_FILE" "$cli" read --digest \
			--no-shuffle "$url" 2>&1 | tail -n 1)"
	done
	same "ca_file comes before AWS_CA_BUNDLE" "$want" "$(AWS_CA_BUNDLE=/nonexistent "$cli" read \
		--digest --no-shuffle --ca-file "$RF_CA_FILE" "$url" 2>&1 | tail -n 1)"
else
	# A part not run is a skip (exit 77 below), never a pass.
	[ "${RF_REQUIRE_SERVERS:-0}" = 1 ] && bad "the CA-bundle checks need RF_NGINX_TLS_URL," \
		"RF_CA_FILE and RF_NGINX_ROOT (scripts/servers.sh env)"
	skipped="the CA-bundle checks: no TLS server in the environment (scripts/servers.sh)"
fi

# no secret in any output
if grep -lF -e "$SECRET" "$tmp"/*.out >/dev/null 2>&1; then
	bad "the secret appears in $(grep -lF -e "$SECRET" "$tmp"/*.out | tr '\n' ' ')"
else
	ok "no secret in any output"
fi

[ $fails -eq 0 ] || {
	echo "$fails check(s) failed" >&2
	exit 1
}
if [ -n "${skipped:-}" ]; then
	echo "SKIP: $skipped; the other checks passed"
	exit 77
fi
echo "all checks passed"
