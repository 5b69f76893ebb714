#!/usr/bin/env bash
# cli_wds_http.sh - a WebDataset tar dataset read over the network gives
# what it gives from local files: the same shuffled digest (samples, keys,
# fields and bytes) from nginx (HTTP range reads: the open's header scan in
# sequential ranges, units of whole samples) and from s3rver (S3 keys by
# brace range, and a prefix listing), and the same --output tar stream.
set -euo pipefail
src=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/tests/servers.inc.sh"
rf_servers_or_start
cli=${RF_CLI:?RF_CLI must name the ringfeed binary}

. "$src/tests/check.inc.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-wds-http.XXXXXX")
rf_at_exit "rm -rf '$tmp'"
tag=cli-wds-http-$$
mkdir -p "$tmp/ds"
/usr/bin/python3 - "$tmp/ds" <<'PYEOF'
import io, random, sys, tarfile
rng = random.Random(11)
for s in range(3):
    with tarfile.open(f"{sys.argv[1]}/shard-{s:06d}.tar", "w", format=tarfile.PAX_FORMAT) as t:
        for i in range(60):
            for ext in ("jpg", "cls", "json"):
                if ext == "cls" and i % 9 == 4:
                    continue
                data = rng.randbytes(rng.randint(20000, 120000)) if ext == "jpg" else b"%d" % i
                ti = tarfile.TarInfo(f"{s:02d}/{i:06d}.{ext}"); ti.size = len(data)
                t.addfile(ti, io.BytesIO(data))
PYEOF
brace="shard-{000000..000002}.tar"
read_digest() { "$cli" read --digest --seed 5 --batch 8 "$@" | tail -n 1; }
want=$(read_digest "$tmp/ds")
case $want in records=180*digest=*) ok "local digest: $want" ;; *) bad "local read: '$want'" ;; esac
"$cli" read --no-shuffle --output tar "$tmp/ds" | md5sum >"$tmp/local.tar.md5"

mkdir -p "$RF_NGINX_ROOT/$tag"
cp "$tmp"/ds/shard-*.tar "$RF_NGINX_ROOT/$tag/"
rf_at_exit "rm -rf '$RF_NGINX_ROOT/$tag'"
same "http digest" "$want" "$(read_digest --connections 4 "$RF_NGINX_URL/$tag/$brace")"
same "http --output tar" "$(cat "$tmp/local.tar.md5")" \
	"$("$cli" read --no-shuffle --output tar "$RF_NGINX_URL/$tag/$brace" | md5sum)"

s3=(--s3-endpoint "$RF_S3_ENDPOINT" --s3-access-key "$RF_S3_ACCESS_KEY"
	--s3-secret-key "$RF_S3_SECRET_KEY")
for f in "$tmp"/ds/shard-*.tar; do
	rf_s3_put "$f" "$tag/$(basename "$f")" || bad "upload $f"
done
same "s3 digest" "$want" "$(read_digest "${s3[@]}" "s3://$RF_S3_BUCKET/$tag/$brace")"
same "s3 prefix digest (the listing takes .tar)" "$want" \
	"$(read_digest "${s3[@]}" "s3://$RF_S3_BUCKET/$tag/")"

rf_checks_done
