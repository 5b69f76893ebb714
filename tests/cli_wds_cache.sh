#!/usr/bin/env bash
# cli_wds_cache.sh - the index cache (engine/icache.c wired in the open
# phase): a .tar without an index file, read from a store the loader cannot
# write beside (nginx, an s3rver prefix listing), is scanned once and its
# layout kept in the cache, keyed by URL, size and version; the next open
# reads the entry instead of every header (open_fetched_bytes far below the
# shards' bytes, index_cache_hits counted) and gives the same samples. An
# object changed on the store (a new ETag) is scanned again; a damaged entry
# is a miss, never a wrong sample; index_cache=off writes nothing; a
# presigned URL (no sidecar can be asked for) is answered from the cache; no
# URL secret reaches the cache's files. Counts and digests only, never timing.
# The data cache is off here (--cache off): this is the index cache's test,
# and the data cache would answer the object rewritten under the same ETag
# from its old ranges (it trusts the version as the index cache does).
set -euo pipefail
src=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/tests/servers.inc.sh"
. "$src/tests/check.inc.sh"
rf_servers_or_start
cli=${RF_CLI:?RF_CLI must name the ringfeed binary}
PY=/usr/bin/python3

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-wds-cache.XXXXXX")
rf_at_exit "rm -rf '$tmp'"
tag=cli-wds-cache-$$
mkdir -p "$tmp/ds" "$tmp/ds2"
write_ds() { # DIR SEED
	$PY - "$1" "$2" <<'PYEOF'
import io, random, sys, tarfile
rng = random.Random(int(sys.argv[2]))
for s in range(3):
    with tarfile.open(f"{sys.argv[1]}/shard-{s:06d}.tar", "w", format=tarfile.GNU_FORMAT) as t:
        for i in range(50):
            for ext in ("jpg", "cls"):
                data = rng.randbytes(rng.randint(20000, 90000)) if ext == "jpg" else b"%d" % i
                ti = tarfile.TarInfo(f"{s:02d}/{i:06d}.{ext}"); ti.size = len(data)
                t.addfile(ti, io.BytesIO(data))
PYEOF
}
write_ds "$tmp/ds" 1
write_ds "$tmp/ds2" 2
total=$(cat "$tmp"/ds/shard-*.tar | wc -c)
want=$("$cli" read --digest --no-shuffle --index-cache off "$tmp/ds" | tail -n 1)
want2=$("$cli" read --digest --no-shuffle --index-cache off "$tmp/ds2" | tail -n 1)

mkdir -p "$RF_NGINX_ROOT/$tag"
rf_at_exit "rm -rf '$RF_NGINX_ROOT/$tag'"
cp "$tmp"/ds/shard-*.tar "$RF_NGINX_ROOT/$tag/"
urls=("$RF_NGINX_URL/$tag/shard-000000.tar" "$RF_NGINX_URL/$tag/shard-000001.tar"
	"$RF_NGINX_URL/$tag/shard-000002.tar")
cache=$tmp/cache
rd() { # STATS ARGS...: the --no-shuffle digest
	local st=$1
	shift
	"$cli" read --digest --no-shuffle --cache off --index-cache "$cache" --stats "$st" "$@" | tail -n 1
}
j() { rf_json "$1" "$2"; }

same "http, cold cache: the local samples" "$want" "$(rd "$tmp/a.json" "${urls[@]}")"
same "cold: 3 misses" 3 "$(j "$tmp/a.json" index_cache_misses)"
same "cold: 3 layouts stored" 3 "$(j "$tmp/a.json" index_cache_puts)"
same "cold: 3 entries in the cache" 3 "$(ls "$cache" | grep -c '\.idx$')"
cold=$(j "$tmp/a.json" open_fetched_bytes)
[ "$cold" -ge $((total / 2)) ] && ok "cold: the open scanned the shards ($cold of $total bytes)" ||
	bad "cold: the open read only $cold of $total bytes"

same "http, warm cache: the same samples" "$want" "$(rd "$tmp/b.json" "${urls[@]}")"
same "warm: 3 hits" 3 "$(j "$tmp/b.json" index_cache_hits)"
warm=$(j "$tmp/b.json" open_fetched_bytes)
[ "$warm" -lt $((total / 20)) ] && ok "warm: the open read $warm bytes, not the $total" ||
	bad "warm: the open read $warm of $total bytes"
same "warm, shuffled, the same as cold" \
	"$("$cli" read --digest --seed 4 --cache off --index-cache off "${urls[@]}" | tail -n 1)" \
	"$("$cli" read --digest --seed 4 --cache off --index-cache "$cache" "${urls[@]}" | tail -n 1)"

# the objects change on the store (new bytes, a new ETag): scanned again
cp "$tmp"/ds2/shard-*.tar "$RF_NGINX_ROOT/$tag/"
touch -d '+1 minute' "$RF_NGINX_ROOT/$tag"/shard-*.tar
same "changed objects: their new samples" "$want2" "$(rd "$tmp/c.json" "${urls[@]}")"
same "changed objects: no hit" 0 "$(j "$tmp/c.json" index_cache_hits)"

# damaged entries: misses, the samples unchanged
for f in "$cache"/*.idx; do
	printf 'X' | dd of="$f" bs=1 seek=$(($(stat -c %s "$f") - 3)) conv=notrunc 2>/dev/null
done
same "damaged entries: the samples" "$want2" "$(rd "$tmp/d.json" "${urls[@]}")"
same "damaged entries: no hit" 0 "$(j "$tmp/d.json" index_cache_hits)"
same "damaged entries: stored again" 3 "$(j "$tmp/d.json" index_cache_puts)"
same "after them: 3 hits" 3 "$(rd "$tmp/e.json" "${urls[@]}" >/dev/null; j "$tmp/e.json" index_cache_hits)"

# off: nothing written
"$cli" read --digest --cache off --index-cache off --stats "$tmp/f.json" "${urls[@]}" >/dev/null
same "off: no lookup" 0 "$(j "$tmp/f.json" index_cache_misses)"
same "off: the cache unchanged" 6 "$(ls "$cache" | grep -c '\.idx$')"

# an S3 prefix listing: the listing's ETag keys the entry before any read
s3=(--s3-endpoint "$RF_S3_ENDPOINT" --s3-access-key "$RF_S3_ACCESS_KEY"
	--s3-secret-key "$RF_S3_SECRET_KEY")
for f in "$tmp"/ds/shard-*.tar; do
	rf_s3_put "$f" "$tag/$(basename "$f")" || bad "upload $f"
done
same "s3 listing, cold" "$want" "$(rd "$tmp/g.json" "${s3[@]}" "s3://$RF_S3_BUCKET/$tag/")"
same "s3 listing, warm" "$want" "$(rd "$tmp/h.json" "${s3[@]}" "s3://$RF_S3_BUCKET/$tag/")"
same "s3 listing, warm: 3 hits" 3 "$(j "$tmp/h.json" index_cache_hits)"

# secrets never reach the cache: a URL with a password and a query
sec="${RF_NGINX_URL/http:\/\//http://user:pw-SECRET-1@}/$tag/shard-000000.tar?X-Amz-Signature=sig-SECRET-2"
"$cli" read --digest --cache off --index-cache "$tmp/sec" "$sec" >/dev/null 2>&1 || true
if grep -r -l -a -e SECRET "$tmp/sec" >/dev/null 2>&1 || ls "$tmp/sec" | grep -q SECRET; then
	bad "a secret reached the cache's files"
else
	ok "no secret in the cache ($(ls "$tmp/sec" 2>/dev/null | wc -l) entries)"
fi

# a presigned URL (a query): its PREFIX.idx cannot be asked for (the
# signature is the tar's), but the cache, keyed without the query, answers
# for it; another signature of the same object hits the same entry
cp "$tmp"/ds/shard-000000.tar "$RF_NGINX_ROOT/$tag/pre.tar"
pre="$RF_NGINX_URL/$tag/pre.tar"
one=$("$cli" read --digest --no-shuffle --index-cache off "$tmp/ds/shard-000000.tar" | tail -n 1)
same "presigned, cold: the samples" "$one" \
	"$(rd "$tmp/p1.json" "$pre?X-Amz-Expires=60&X-Amz-Signature=sig-SECRET-3")"
same "presigned, cold: stored" 1 "$(j "$tmp/p1.json" index_cache_puts)"
same "presigned, another signature: the samples" "$one" \
	"$(rd "$tmp/p2.json" "$pre?X-Amz-Expires=60&X-Amz-Signature=sig-SECRET-4")"
same "presigned, another signature: a hit" 1 "$(j "$tmp/p2.json" index_cache_hits)"
if grep -r -l -a -e SECRET "$cache" >/dev/null 2>&1; then
	bad "a presigned URL's signature reached the cache's files"
else
	ok "no signature in the cache"
fi

# an object rewritten in place on the store with its size and mtime put
# back: nginx's ETag (mtime and size) is the same, so is the key, and the
# entry's layout is stale. The read that meets it fails naming the cached
# index (there is no index file), drops the entry (index_cache_stale_drops),
# never delivers the old layout's samples; the next read scans it again.
$PY - "$tmp" <<'PYEOF'
import io, random, sys, tarfile
for seed in (1, 2):
    rng = random.Random(seed)
    with tarfile.open(f"{sys.argv[1]}/re{seed}.tar", "w", format=tarfile.GNU_FORMAT) as t:
        for i in range(60):
            for ext, n in (("jpg", 3000), ("cls", 4)):
                ti = tarfile.TarInfo(f"r{seed}/{(i * 7) % 60 if seed == 2 else i:06d}.{ext}")
                ti.size = n
                t.addfile(ti, io.BytesIO(rng.randbytes(n)))
PYEOF
want_re2=$("$cli" read --digest --no-shuffle --index-cache off "$tmp/re2.tar" | tail -n 1)
cp "$tmp/re1.tar" "$RF_NGINX_ROOT/$tag/re.tar"
touch -d '2020-01-01 00:00:00' "$RF_NGINX_ROOT/$tag/re.tar"
re="$RF_NGINX_URL/$tag/re.tar"
rd "$tmp/r1.json" "$re" >/dev/null
same "rewritten object, cold: stored" 1 "$(j "$tmp/r1.json" index_cache_puts)"
cat "$tmp/re2.tar" >"$RF_NGINX_ROOT/$tag/re.tar"
touch -d '2020-01-01 00:00:00' "$RF_NGINX_ROOT/$tag/re.tar"
set +e
"$cli" read --digest --no-shuffle --cache off --index-cache "$cache" --stats "$tmp/r2.json" "$re" \
	>"$tmp/r2.out" 2>"$tmp/r2.err"
rc=$?
set -e
[ "$rc" -ne 0 ] && ok "rewritten object under the same ETag: the stale layout is an error" ||
	bad "the stale cached layout was read: $(cat "$tmp/r2.out")"
grep -q "the cached index of this tar, from the index cache, is stale" "$tmp/r2.err" &&
	! grep -q "index file" "$tmp/r2.err" && ok "the error blames the cached index" ||
	bad "the error does not name the cached index: $(cat "$tmp/r2.err")"
same "rewritten object: the entry dropped" 1 "$(j "$tmp/r2.json" index_cache_stale_drops)"
same "rewritten object, next read: its new samples" "$want_re2" "$(rd "$tmp/r3.json" "$re")"
same "rewritten object, next read: scanned again" 1 "$(j "$tmp/r3.json" index_cache_puts)"

rf_checks_done cli_wds_cache
