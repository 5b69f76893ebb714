#!/usr/bin/env bash
# cli_s3addr_manifest.sh - manifests stored next to the shards, and s3://
# names without a trailing slash. A manifest given as an http(s):// or s3://
# URL (named *.rfm, or for s3:// any object that starts with the manifest
# line) is fetched and parsed like a local one, its relative entries
# resolved against its URL ("/x" against its host or bucket); an s3:// name
# that is no object is listed as a prefix, as `aws s3 ls` does. Served by
# nginx, s3rver and the SigV4 verifier; each read's digest must equal the
# local read's, and no secret may appear in any output. (Before: the
# manifest was read as a shard, "bad magic", and s3://b/prefix was a 404.)
set -euo pipefail
src=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/tests/servers.inc.sh"
rf_servers_or_start
cli=${RF_CLI:?RF_CLI must name the ringfeed binary}

. "$src/tests/check.inc.sh"
has() { # DESCRIPTION FILE PATTERN
	if grep -qE -- "$3" "$2"; then ok "$1"; else bad "$1: '$3' not in: $(head -c 600 "$2")"; fi
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-s3addr-m.XXXXXX")
rf_at_exit "rm -rf '$tmp'"
tag=cli-s3addr-m-$$
head -c 300000 /dev/urandom >"$tmp/data.bin"
"$cli" pack --from fixed:1000 --block-size 32KiB --shard-size 100000 "$tmp/data.bin" \
	-o "$tmp/ds" >/dev/null
shards=("$tmp"/ds/shard-*.rfs)
[ ${#shards[@]} -ge 2 ] || bad "expected at least 2 shards, got ${#shards[@]}"
want=$("$cli" read --digest --no-shuffle "${shards[@]}" | tail -n 1)
export AWS_CONFIG_FILE=$tmp/no-such-config AWS_SHARED_CREDENTIALS_FILE=$tmp/no-such-credentials
run() { # NAME ARGS...: read; output in $tmp/NAME.out; prints the digest line
	local name=$1
	shift
	"$cli" read --digest --no-shuffle "$@" >"$tmp/$name.out" 2>&1 || true
	tail -n 1 "$tmp/$name.out"
}
# manifest DIR-PREFIX ABS-PREFIX: the first shard relative to a sub-directory,
# the second absolute on the host/bucket, the rest relative
manifest() {
	printf '# ringfeed manifest v1\n'
	local i=0 f
	for f in "${shards[@]}"; do
		local b size
		b=$(basename "$f")
		size=$(stat -c %s "$f")
		if [ $i -eq 1 ]; then
			printf '%s/sub/%s\t%s\t0\n' "$2" "$b" "$size"
		else
			printf 'sub/%s\t%s\t0\n' "$b" "$size"
		fi
		i=$((i + 1))
	done
}

# ---- nginx: https?://.../manifest.rfm ---------------------------------------
mkdir -p "$RF_NGINX_ROOT/$tag/sub"
rf_at_exit "rm -rf '$RF_NGINX_ROOT/$tag'"
cp "${shards[@]}" "$RF_NGINX_ROOT/$tag/sub/"
manifest sub "/$tag" >"$RF_NGINX_ROOT/$tag/manifest.rfm"
same "an http:// manifest with relative and /absolute entries" "$want" \
	"$(run nginx "$RF_NGINX_URL/$tag/manifest.rfm")"
same "an https:// manifest" "$want" \
	"$(run nginx_tls --ca-file "$RF_CA_FILE" "$RF_NGINX_TLS_URL/$tag/manifest.rfm")"
printf 'not a manifest\n' >"$RF_NGINX_ROOT/$tag/bad.rfm"
run badm "$RF_NGINX_URL/$tag/bad.rfm" >/dev/null
has "a .rfm URL that is no manifest is named" "$tmp/badm.out" \
	"manifest $RF_NGINX_URL/$tag/bad.rfm: line 1: expected"

# ---- SigV4 verifier: s3://.../manifest.rfm, a manifest without the suffix,
#      a prefix without its slash ---------------------------------------------
sv=$RF_SIGV4_ROOT/$RF_SIGV4_BUCKET/$tag
mkdir -p "$sv/sub"
rf_at_exit "rm -rf '$sv'"
cp "${shards[@]}" "$sv/sub/"
manifest sub "/$tag" >"$sv/manifest.rfm"
cp "$sv/manifest.rfm" "$sv/dataset-list"
export AWS_ENDPOINT_URL=$RF_SIGV4_URL AWS_REGION=$RF_SIGV4_REGION
export AWS_ACCESS_KEY_ID=$RF_SIGV4_ACCESS AWS_SECRET_ACCESS_KEY=$RF_SIGV4_SECRET
same "an s3:// manifest with relative and /absolute entries" "$want" \
	"$(run sv_m "s3://$RF_SIGV4_BUCKET/$tag/manifest.rfm")"
same "an s3:// object that starts with the manifest line is a manifest" "$want" \
	"$(run sv_list "s3://$RF_SIGV4_BUCKET/$tag/dataset-list")"
same "s3://bucket/prefix without a slash lists the prefix" "$want" \
	"$(run sv_prefix "s3://$RF_SIGV4_BUCKET/$tag/sub")"
run sv_none "s3://$RF_SIGV4_BUCKET/$tag/nothing-here" >/dev/null
has "no object and no prefix is named" "$tmp/sv_none.out" \
	"s3://$RF_SIGV4_BUCKET/$tag/nothing-here: no such object, and no .rfs objects under"
unset AWS_ENDPOINT_URL AWS_REGION AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY

# ---- s3rver ------------------------------------------------------------------
up() { # FILE KEY
	rf_s3_put "$1" "$2" || bad "upload $2"
}
for f in "${shards[@]}"; do up "$f" "$tag/sub/$(basename "$f")"; done
manifest sub "/$tag" >"$tmp/manifest.rfm"
up "$tmp/manifest.rfm" "$tag/manifest.rfm"
s3=(--s3-endpoint "$RF_S3_ENDPOINT" --s3-access-key "$RF_S3_ACCESS_KEY"
	--s3-secret-key "$RF_S3_SECRET_KEY" --s3-region us-east-1)
same "an s3:// manifest on s3rver" "$want" \
	"$(run s3rver "${s3[@]}" "s3://$RF_S3_BUCKET/$tag/manifest.rfm")"
same "a prefix without its slash on s3rver" "$want" \
	"$(run s3rver_prefix "${s3[@]}" "s3://$RF_S3_BUCKET/$tag/sub")"

if grep -lF -e "$RF_SIGV4_SECRET" "$tmp"/*.out >/dev/null 2>&1; then
	bad "the SigV4 secret appears in the output"
else
	ok "no secret in any output"
fi

rf_checks_done
