#!/usr/bin/env bash
# cli_tokens_http.sh - a Megatron dataset and an llm.c file over nginx (HTTP)
# and s3rver (S3 single keys, and a prefix listing, which takes the .idx and
# not the .bin files) give the same digests as the local files: documents and
# shuffled windows; verify reads them there too.
set -euo pipefail
src=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/tests/servers.inc.sh"
py=/usr/bin/python3
$py -c 'import numpy' 2>/dev/null || {
	echo "SKIP: numpy missing for $py"
	exit $RF_SKIP
}
rf_servers_or_start
cli=${RF_CLI:?RF_CLI must name the ringfeed binary}

. "$src/tests/check.inc.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-tokens-http.XXXXXX")
rf_at_exit "rm -rf '$tmp'"
tag=cli-tokens-http-$$
$py "$src/tests/tokens/megatron_write.py" "$tmp/ds" uint16 7 80 4000 >/dev/null
$py "$src/tests/tokens/llmc_write.py" llmc16 "$tmp/fw.bin" 8 40 3000 >/dev/null
dg() { "$cli" read --digest "$@" | tail -n 1; }
modes=("--no-shuffle" "--seed 3 --seq-len 1024 --batch 8")
declare -A want
for m in "${modes[@]}"; do
	want["idx $m"]=$(dg $m "$tmp/ds.idx")
	want["fw $m"]=$(dg $m "$tmp/fw.bin")
	case ${want["idx $m"]} in records=*digest=*) ok "local ($m): ${want["idx $m"]}" ;;
	*) bad "local read ($m): ${want["idx $m"]}" ;; esac
done

mkdir -p "$RF_NGINX_ROOT/$tag"
cp "$tmp"/ds.bin "$tmp"/ds.idx "$tmp"/fw.bin "$RF_NGINX_ROOT/$tag/"
rf_at_exit "rm -rf '$RF_NGINX_ROOT/$tag'"
s3=(--s3-endpoint "$RF_S3_ENDPOINT" --s3-access-key "$RF_S3_ACCESS_KEY"
	--s3-secret-key "$RF_S3_SECRET_KEY")
for f in ds.bin ds.idx fw.bin; do
	rf_s3_put "$tmp/$f" "$tag/$f" || bad "upload $f"
done
for m in "${modes[@]}"; do
	same "http .idx ($m)" "${want["idx $m"]}" "$(dg $m "$RF_NGINX_URL/$tag/ds.idx")"
	same "http llm.c ($m)" "${want["fw $m"]}" "$(dg $m "$RF_NGINX_URL/$tag/fw.bin")"
	same "s3 .idx ($m)" "${want["idx $m"]}" "$(dg "${s3[@]}" $m "s3://$RF_S3_BUCKET/$tag/ds.idx")"
	same "s3 llm.c ($m)" "${want["fw $m"]}" "$(dg "${s3[@]}" $m "s3://$RF_S3_BUCKET/$tag/fw.bin")"
	same "s3 prefix listing takes the .idx only ($m)" "${want["idx $m"]}" \
		"$(dg "${s3[@]}" $m "s3://$RF_S3_BUCKET/$tag/")"
done

for m in "" "--seq-len 1024"; do
	"$cli" verify $m "$RF_NGINX_URL/$tag/ds.idx" >"$tmp/v" 2>&1 &&
		grep -q "1 shards, 0 damaged" "$tmp/v" && ok "verify over http ($m)" ||
		bad "verify over http ($m): $(cat "$tmp/v")"
	"$cli" verify "${s3[@]}" $m "s3://$RF_S3_BUCKET/$tag/ds.idx" >"$tmp/v" 2>&1 &&
		ok "verify over s3 ($m)" || bad "verify over s3 ($m): $(cat "$tmp/v")"
done

# a remote PREFIX.bin of a Megatron dataset: not llm.c (no magic), not .rfs,
# so the next format that may read the name, Megatron, reads its .idx beside
for m in "${modes[@]}"; do
	same "http .bin of a Megatron dataset ($m)" "${want["idx $m"]}" \
		"$(dg $m "$RF_NGINX_URL/$tag/ds.bin")"
done
"$cli" verify "$RF_NGINX_URL/$tag/ds.bin" >"$tmp/v" 2>&1 &&
	grep -q "1 shards, 0 damaged" "$tmp/v" && ok "verify of a remote Megatron .bin" ||
	bad "verify of a remote Megatron .bin: $(cat "$tmp/v")"
# a remote .bin that no format reads: the first format's words (the name chose it)
head -c 4096 /dev/urandom >"$RF_NGINX_ROOT/$tag/junk.bin"
rc=0
"$cli" read "$RF_NGINX_URL/$tag/junk.bin" >/dev/null 2>"$tmp/err" || rc=$?
[ $rc -ne 0 ] && grep -q "junk.bin: not an llm.c token file" "$tmp/err" &&
	grep -q "name its .idx" "$tmp/err" && ok "remote .bin no format reads: llm.c's words" ||
	bad "remote .bin no format reads: rc $rc, $(cat "$tmp/err")"

rf_checks_done
