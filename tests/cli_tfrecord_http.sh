#!/usr/bin/env bash
# cli_tfrecord_http.sh - TFRecord files read over the network give what
# they give from local files: the same shuffled digest (records, keys,
# fields and bytes) and --output tar stream from nginx (HTTP range reads:
# the open's frame walk in sequential ranges, a tfrecord2idx PREFIX.idx
# sidecar beside some, units of whole records), from s3rver (keys by brace
# range, and a prefix listing that takes each PREFIX.idx as its file's
# index, not as a shard), and a .tfrecord.gz over both (one past 32 MiB
# through its sequential units over nginx). The index cache
# keeps a walked file's layout, raw records or Examples (a warm open
# fetches 0 bytes); the open's walk fetches a file once.
set -euo pipefail
src=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/tests/servers.inc.sh"
PY=/usr/bin/python3
if ! command -v protoc >/dev/null || ! $PY -c "import google.protobuf, crcmod" 2>/dev/null; then
	echo "SKIP: protoc, python3-protobuf or python3-crcmod missing (scripts/deps.sh --test)" >&2
	exit $RF_SKIP
fi
rf_servers_or_start
cli=${RF_CLI:?RF_CLI must name the ringfeed binary}
. "$src/tests/check.inc.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-tfr-http.XXXXXX")
rf_at_exit "rm -rf '$tmp'"
tag=cli-tfr-http-$$
$PY "$src/tests/tfrecord_write.py" "$tmp/ds" --shards 3 --records 30 --seed 8 --image-bytes 90000 --index
rm "$tmp/ds/train-00001.idx" # one file without an index: walked
gzip -c "$tmp/ds/train-00002.tfrecord" >"$tmp/train-00002.tfrecord.gz"
brace="train-{00000..00002}.tfrecord"
read_digest() { "$cli" read --digest --seed 5 --batch 8 "$@" | tail -n 1; }
want=$(read_digest "$tmp/ds")
case $want in records=90*digest=*) ok "local digest: $want" ;; *) bad "local read: '$want'" ;; esac
"$cli" read --no-shuffle --output tar "$tmp/ds" | md5sum >"$tmp/local.tar.md5"
# a .tfrecord.gz is one unit (another shuffle of blocks): in order, the same
ns() { "$cli" read --digest --no-shuffle --batch 8 "$@" | tail -n 1; }
nswant=$(ns "$tmp/ds")
mkdir -p "$tmp/gz"
cp "$tmp/ds/train-00000.tfrecord" "$tmp/ds/train-00001.tfrecord" "$tmp/train-00002.tfrecord.gz" "$tmp/gz/"
same "local, one file gzip'd" "$nswant" "$(ns "$tmp/gz")"

mkdir -p "$RF_NGINX_ROOT/$tag"
cp "$tmp"/ds/* "$tmp/train-00002.tfrecord.gz" "$RF_NGINX_ROOT/$tag/"
rf_at_exit "rm -rf '$RF_NGINX_ROOT/$tag'"
same "http digest" "$want" "$(read_digest --connections 4 "$RF_NGINX_URL/$tag/$brace")"
same "http --output tar" "$(cat "$tmp/local.tar.md5")" \
	"$("$cli" read --no-shuffle --output tar "$RF_NGINX_URL/$tag/$brace" | md5sum)"
same "http, one file gzip'd" "$nswant" \
	"$(ns "$RF_NGINX_URL/$tag/train-00000.tfrecord" "$RF_NGINX_URL/$tag/train-00001.tfrecord" \
		"$RF_NGINX_URL/$tag/train-00002.tfrecord.gz")"

# a .tfrecord.gz decoding past 32 MiB (40 MB) reads over nginx through its
# sequential units as locally: the open fetches it once, the units once more
for i in 1 2 3 4 5; do cat "$tmp"/ds/*.tfrecord; done | gzip -1 >"$RF_NGINX_ROOT/$tag/big.tfrecord.gz"
bigwant=$(ns --index-cache off --cache off "$RF_NGINX_ROOT/$tag/big.tfrecord.gz")
case $bigwant in records=450*digest=*) ok "a 40 MB .tfrecord.gz locally: $bigwant" ;; *) bad "big gz: '$bigwant'" ;; esac
same "... over nginx" "$bigwant" \
	"$(ns --index-cache off --cache off --stats "$tmp/big.json" "$RF_NGINX_URL/$tag/big.tfrecord.gz")"
gzb=$(stat -c %s "$RF_NGINX_ROOT/$tag/big.tfrecord.gz")
same "... the open fetched it once" "$gzb" "$(rf_json "$tmp/big.json" open_fetched_bytes)"
same "... its units once more" "$gzb" "$(rf_json "$tmp/big.json" fetched_bytes)"

# the open walks a file without an index in ranges each starting where the
# last ended (a frame a range ends inside is kept, not read again): it
# fetches the file once (it fetched 4% more with these 90 KB records, 1.7
# times a file of 600 KB records, when each range began at the cut frame)
"$cli" read --digest --no-shuffle --index-cache off --cache off --stats "$tmp/walk.json" \
	"$RF_NGINX_URL/$tag/train-00001.tfrecord" >/dev/null
same "the open's walk fetched the file once" "$(stat -c %s "$tmp/ds/train-00001.tfrecord")" \
	"$(rf_json "$tmp/walk.json" open_fetched_bytes)"

# the index cache keeps a walked file's raw layout (a file without an
# index): the next open reads the entry, not the frames, and gives the same
# records
cache=$tmp/icache
raw_url=$RF_NGINX_URL/$tag/train-00001.tfrecord
rw() { # STATS ARGS...
	local st=$1
	shift
	"$cli" read --digest --no-shuffle --index-cache "$cache" --stats "$st" "$@" "$raw_url" |
		tail -n 1
}
rawwant=$("$cli" read --digest --no-shuffle --tfrecord-raw --index-cache off \
	"$tmp/ds/train-00001.tfrecord" | tail -n 1)
same "raw records, cold cache" "$rawwant" "$(rw "$tmp/c1.json" --tfrecord-raw)"
same "raw records, cold: 1 layout stored" 1 "$(rf_json "$tmp/c1.json" index_cache_puts)"
same "raw records, warm cache: the same records" "$rawwant" "$(rw "$tmp/c2.json" --tfrecord-raw)"
same "raw records, warm: 1 hit" 1 "$(rf_json "$tmp/c2.json" index_cache_hits)"
cold=$(rf_json "$tmp/c1.json" open_fetched_bytes)
warm=$(rf_json "$tmp/c2.json" open_fetched_bytes)
[ "$warm" -lt $((cold / 10)) ] && ok "warm open fetched $warm bytes, cold $cold" ||
	bad "warm open fetched $warm bytes, cold $cold"
# a damaged entry (a size's digit changed) is a miss: the frames walked again
$PY - "$cache"/*.idx <<'PYEOF'
import sys
d = bytearray(open(sys.argv[1], "rb").read())
d[-2] = ord("1") if d[-2] != ord("1") else ord("2")  # the last line's last digit
open(sys.argv[1], "wb").write(d)
PYEOF
same "raw records, a damaged entry: the same records" "$rawwant" "$(rw "$tmp/c5.json" --tfrecord-raw)"
same "raw records, a damaged entry: a miss" 1 "$(rf_json "$tmp/c5.json" index_cache_misses)"
exwant=$("$cli" read --digest --no-shuffle --index-cache off "$tmp/ds/train-00001.tfrecord" |
	tail -n 1)
same "Examples with the raw layout's entry: the Examples" "$exwant" "$(rw "$tmp/c3.json")"
# an Examples layout is kept too, with what the walk learned (the keys, each
# record's slab bytes): the next open reads the entry alone, 0 bytes of the
# file, and gives the same Examples; read raw, the same entry gives the
# raw records
rm -rf "$cache"
same "Examples, cold cache" "$exwant" "$(rw "$tmp/c4.json" --cache off)"
same "Examples, cold: 1 layout stored" 1 "$(rf_json "$tmp/c4.json" index_cache_puts)"
same "Examples, cold: the open walked the file once" \
	"$(stat -c %s "$tmp/ds/train-00001.tfrecord")" "$(rf_json "$tmp/c4.json" open_fetched_bytes)"
same "Examples, warm cache: the same Examples" "$exwant" "$(rw "$tmp/c6.json" --cache off)"
same "Examples, warm: 1 hit" 1 "$(rf_json "$tmp/c6.json" index_cache_hits)"
same "Examples, warm: the open fetched 0 bytes" 0 "$(rf_json "$tmp/c6.json" open_fetched_bytes)"
same "raw records from the Examples entry" "$rawwant" "$(rw "$tmp/c7.json" --tfrecord-raw)"
same "raw records from the Examples entry: a hit" 1 "$(rf_json "$tmp/c7.json" index_cache_hits)"
$PY - "$cache"/*.idx <<'PYEOF' # a key changed in the entry: its CRC fails, a miss
import sys
d = open(sys.argv[1], "rb").read()
i = d.index(b"# key ") + len(b"# key ")
d = d[:i] + (b"78" if d[i:i + 2] != b"78" else b"79") + d[i + 2:]
open(sys.argv[1], "wb").write(d)
PYEOF
same "Examples, a damaged entry: the same Examples" "$exwant" "$(rw "$tmp/c8.json" --cache off)"
same "Examples, a damaged entry: a miss" 1 "$(rf_json "$tmp/c8.json" index_cache_misses)"

s3=(--s3-endpoint "$RF_S3_ENDPOINT" --s3-access-key "$RF_S3_ACCESS_KEY"
	--s3-secret-key "$RF_S3_SECRET_KEY")
for f in "$tmp"/ds/*; do
	rf_s3_put "$f" "$tag/$(basename "$f")" || bad "upload $f"
done
same "s3 digest" "$want" "$(read_digest "${s3[@]}" "s3://$RF_S3_BUCKET/$tag/$brace")"
same "s3 prefix digest (the listing takes .tfrecord, not the .idx)" "$want" \
	"$(read_digest "${s3[@]}" "s3://$RF_S3_BUCKET/$tag/")"

rf_checks_done cli_tfrecord_http
