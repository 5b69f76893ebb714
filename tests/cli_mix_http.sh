#!/usr/bin/env bash
# cli_mix_http.sh - a mixture whose sources live on different stores (issue
# 25): a local source, one on nginx (a manifest over HTTP) and one on s3rver
# (a prefix listing) give the digest of the same mixture read from local
# files, and the same --stop-after / --resume split; a mixture file on nginx
# whose relative sources join its URL prefix gives it too.
set -euo pipefail
src=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/tests/servers.inc.sh"
rf_servers_or_start
cli=${RF_CLI:?RF_CLI must name the ringfeed binary}

. "$src/tests/check.inc.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-mix-http.XXXXXX")
rf_at_exit "rm -rf '$tmp'"
tag=cli-mix-http-$$
# three datasets of distinct lines: a (30), b (400), c (900)
for d in a:30 b:400 c:900; do
	seq 1 "${d#*:}" | sed "s/^/${d%%:*}-/" >"$tmp/${d%%:*}.txt"
	"$cli" pack --from lines "$tmp/${d%%:*}.txt" -o "$tmp/local/${d%%:*}" --block-size 1KiB \
		--shard-size 2KiB >/dev/null
done
printf '# ringfeed mixture v1\n0.2\ta\n0.3\tb/manifest.rfm\n0.5\tc\n' >"$tmp/local/mix.txt"
rd() { "$cli" read --seed 4 --batch 16 --epochs 2 "$@"; }
want=$(rd --digest --mixture "$tmp/local/mix.txt" | tail -n 1)
case $want in records=3600\ *digest=*) ok "local mixture: $want" ;; *) bad "local mixture: '$want'" ;; esac

mkdir -p "$RF_NGINX_ROOT/$tag"
rf_at_exit "rm -rf '$RF_NGINX_ROOT/$tag'"
cp -r "$tmp/local/b" "$tmp/local/c" "$RF_NGINX_ROOT/$tag/"
for f in "$tmp"/local/c/shard-*.rfs; do
	rf_s3_put "$f" "$tag/c/$(basename "$f")" || bad "upload $f"
done
s3=(--s3-endpoint "$RF_S3_ENDPOINT" --s3-access-key "$RF_S3_ACCESS_KEY"
	--s3-secret-key "$RF_S3_SECRET_KEY")
printf '# ringfeed mixture v1\n0.2\t%s\n0.3\t%s\n0.5\t%s\n' "$tmp/local/a" \
	"$RF_NGINX_URL/$tag/b/manifest.rfm" "s3://$RF_S3_BUCKET/$tag/c/" >"$tmp/stores.txt"
same "local + HTTP + S3 sources: the local mixture's digest" "$want" \
	"$(rd --digest "${s3[@]}" --mixture "$tmp/stores.txt" | tail -n 1)"

# stop and resume across the stores: the two halves are the whole stream
rd --output lines --mixture "$tmp/local/mix.txt" >"$tmp/full"
rd --output lines "${s3[@]}" --mixture "$tmp/stores.txt" --stop-after 150 \
	--save-state "$tmp/st" >"$tmp/p1" || bad "stores: read 150 batches"
rd --output lines "${s3[@]}" --mixture "$tmp/stores.txt" --resume "$tmp/st" >"$tmp/p2" ||
	bad "stores: resume"
cat "$tmp/p1" "$tmp/p2" | cmp -s - "$tmp/full" &&
	ok "stores: --stop-after 150 + --resume = the local mixture's stream" ||
	bad "stores: stop + resume differs from the local stream"

# a mixture file on nginx: its relative sources join its URL prefix
printf '# ringfeed mixture v1\n0.3\tb/manifest.rfm\n0.5\tc/manifest.rfm\n' \
	>"$RF_NGINX_ROOT/$tag/mix.txt"
printf '# ringfeed mixture v1\n0.3\tb/manifest.rfm\n0.5\tc\n' >"$tmp/local/bc.txt"
same "a mixture file on HTTP, relative sources" \
	"$(rd --digest --mixture "$tmp/local/bc.txt" | tail -n 1)" \
	"$(rd --digest --mixture "$RF_NGINX_URL/$tag/mix.txt" | tail -n 1)"

rf_checks_done cli_mix_http
