#!/usr/bin/env bash
# cli_parquet_http.sh - a Parquet dataset (the reference writers' files,
# tests/parquet_gen.mjs) read over the network gives what it gives from local
# files: the same shuffled digest (rows, keys, fields, bytes) from nginx
# (ranged reads: the file's tail, the footer, dictionaries at open, one range
# per row group) and from s3rver (keys by brace range, and a prefix listing
# taking *.parquet), with all columns and with a column subset (units with
# gaps between them), the same --output tar stream, and the same token
# windows (--seq-len over the list<int32> column li of arrow-rs's files:
# the open's reads of each row group's token chunk, units over row groups).
set -euo pipefail
src=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
NPM=$src/.cache/npm/node_modules
if [ ! -d "$NPM/parquet-wasm" ] || [ ! -d "$NPM/@duckdb/node-api" ]; then
	echo "SKIP: the reference writers are not installed (scripts/deps.sh --test)"
	exit 77
fi
. "$src/tests/servers.inc.sh"
rf_servers_or_start
cli=${RF_CLI:?RF_CLI must name the ringfeed binary}

. "$src/tests/check.inc.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-parquet-http.XXXXXX")
rf_at_exit "rm -rf '$tmp'"
tag=cli-parquet-http-$$
mkdir -p "$tmp/gen" "$tmp/out" "$tmp/ds"
cp "$src/tests/parquet_gen.mjs" "$tmp/gen/"
ln -s "$NPM" "$tmp/gen/node_modules"
node "$tmp/gen/parquet_gen.mjs" "$tmp/out" >/dev/null
i=0
for f in "$tmp"/out/*.parquet; do
	cp "$f" "$tmp/ds/part-$(printf %06d $i).parquet"
	i=$((i + 1))
done
last=$(printf %06d $((i - 1)))
brace="part-{000000..$last}.parquet"
read_digest() { "$cli" read --digest --seed 5 --batch 64 "$@" | tail -n 1; }
want=$(read_digest "$tmp/ds")
case $want in records=6*digest=*) ok "local digest: $want" ;; *) bad "local read: '$want'" ;; esac
want_cols=$(read_digest --columns id,text "$tmp/ds")
tok=(--seq-len 16 --columns li)
tok_brace="part-{000000..000005}.parquet" # arrow-rs's 6 files (each 9000 tokens in li: 562 windows)
want_tok=$(read_digest "${tok[@]}" "$tmp"/ds/part-00000[0-5].parquet)
case $want_tok in records=3372\ *digest=*) ok "local token windows: $want_tok" ;;
*) bad "local token windows: '$want_tok'" ;; esac
"$cli" read --no-shuffle --output tar "$tmp/ds" | md5sum >"$tmp/local.tar.md5"

mkdir -p "$RF_NGINX_ROOT/$tag"
cp "$tmp"/ds/*.parquet "$RF_NGINX_ROOT/$tag/"
rf_at_exit "rm -rf '$RF_NGINX_ROOT/$tag'"
same "http digest" "$want" "$(read_digest --connections 4 "$RF_NGINX_URL/$tag/$brace")"
same "http digest, columns id,text" "$want_cols" \
	"$(read_digest --columns id,text "$RF_NGINX_URL/$tag/$brace")"
same "http digest, token windows" "$want_tok" \
	"$(read_digest "${tok[@]}" "$RF_NGINX_URL/$tag/$tok_brace")"
same "http --output tar" "$(cat "$tmp/local.tar.md5")" \
	"$("$cli" read --no-shuffle --output tar "$RF_NGINX_URL/$tag/$brace" | md5sum)"

s3=(--s3-endpoint "$RF_S3_ENDPOINT" --s3-access-key "$RF_S3_ACCESS_KEY"
	--s3-secret-key "$RF_S3_SECRET_KEY")
for f in "$tmp"/ds/*.parquet; do
	rf_s3_put "$f" "$tag/$(basename "$f")" || bad "upload $f"
done
same "s3 digest" "$want" "$(read_digest "${s3[@]}" "s3://$RF_S3_BUCKET/$tag/$brace")"
same "s3 prefix digest (the listing takes .parquet)" "$want" \
	"$(read_digest "${s3[@]}" "s3://$RF_S3_BUCKET/$tag/")"
same "s3 digest, columns id,text" "$want_cols" \
	"$(read_digest --columns id,text "${s3[@]}" "s3://$RF_S3_BUCKET/$tag/")"

same "s3 digest, token windows" "$want_tok" \
	"$(read_digest "${tok[@]}" "${s3[@]}" "s3://$RF_S3_BUCKET/$tag/$tok_brace")"

rf_checks_done
