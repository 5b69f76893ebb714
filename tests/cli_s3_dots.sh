#!/usr/bin/env bash
# cli_s3_dots.sh - S3 keys are opaque: a key with "." or ".." segments reads
# its own object. Three objects of the same size and different bytes,
# TAG/dots/x/../y.rfs, TAG/dots/./y.rfs and TAG/dots/y.rfs, are uploaded to the
# SigV4 verifier (which checks every signature, so the path sent and the path
# signed must agree); each read alone gives the digest of its own local copy,
# and the prefix listing reads all three in key order. (curl removes dot
# segments unless told not to: all three used to read TAG/dots/y.rfs and exit
# 0.) s3rver cannot take part: it stores keys as file paths and collapses the
# dot segments itself.
set -euo pipefail
src=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/tests/servers.inc.sh"
rf_servers_or_start
cli=${RF_CLI:?RF_CLI must name the ringfeed binary}

. "$src/tests/check.inc.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-s3-dots.XXXXXX")
rf_at_exit "rm -rf '$tmp'"
tag=cli-s3-dots-$$
rf_at_exit "rm -rf '$RF_SIGV4_ROOT/$RF_SIGV4_BUCKET/$tag'"
keys=("$tag/dots/x/../y.rfs" "$tag/dots/./y.rfs" "$tag/dots/y.rfs")
for i in 0 1 2; do
	head -c 100000 /dev/urandom >"$tmp/$i.bin"
	"$cli" pack --from fixed:1000 "$tmp/$i.bin" -o "$tmp/ds$i" >/dev/null
	cp "$tmp/ds$i/shard-000000.rfs" "$tmp/$i.rfs"
	curl -sf -o /dev/null --path-as-is --aws-sigv4 "aws:amz:$RF_SIGV4_REGION:s3" \
		-H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' \
		--user "$RF_SIGV4_ACCESS:$RF_SIGV4_SECRET" -T "$tmp/$i.rfs" \
		"$RF_SIGV4_URL/$RF_SIGV4_BUCKET/${keys[i]}" || bad "upload ${keys[i]}"
done
sizes=$(stat -c %s "$tmp"/[012].rfs | sort -u | wc -l)
same "the three objects have the same size" 1 "$sizes"

export AWS_ENDPOINT_URL=$RF_SIGV4_URL AWS_REGION=$RF_SIGV4_REGION
export AWS_ACCESS_KEY_ID=$RF_SIGV4_ACCESS AWS_SECRET_ACCESS_KEY=$RF_SIGV4_SECRET
read_digest() { "$cli" read --digest --no-shuffle "$@" 2>"$tmp/err" | tail -n 1; }
for i in 0 1 2; do
	want=$(read_digest "$tmp/$i.rfs")
	same "s3://$RF_SIGV4_BUCKET/${keys[i]} reads its own object" "$want" \
		"$(read_digest "s3://$RF_SIGV4_BUCKET/${keys[i]}" || tail -n 1 "$tmp/err")"
done
# in a manifest, with sizes: no HEAD, range GETs only
printf '# ringfeed manifest v1\n' >"$tmp/m.rfm"
for i in 0 1 2; do
	printf 's3://%s/%s\t%s\t100\n' "$RF_SIGV4_BUCKET" "${keys[i]}" "$(stat -c %s "$tmp/$i.rfs")" >>"$tmp/m.rfm"
done
same "a manifest of the three reads each object" \
	"$(read_digest "$tmp/0.rfs" "$tmp/1.rfs" "$tmp/2.rfs")" "$(read_digest "$tmp/m.rfm" || tail -n 1 "$tmp/err")"
# the listing: key order is dots/./y.rfs, dots/x/../y.rfs, dots/y.rfs
same "the prefix listing reads each object once" \
	"$(read_digest "$tmp/1.rfs" "$tmp/0.rfs" "$tmp/2.rfs")" \
	"$(read_digest "s3://$RF_SIGV4_BUCKET/$tag/dots/" || tail -n 1 "$tmp/err")"

rf_checks_done
