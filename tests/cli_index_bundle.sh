#!/usr/bin/env bash
# cli_index_bundle.sh - the index bundle (docs/format.md): pack writes
# manifest.rfx beside manifest.rfm (which is as before); a loader opens every
# shard from it with no read of the shard (local: open_reads 0; over HTTP
# from a private bad_http that holds every request 200 ms: the open asks
# the store nothing, shards the first batch does not reach get no request
# at all, where without the bundle each was asked once). The bundle is an
# aid, never the authority: a damaged one (checksum, an entry more than the
# manifest lists, a path not the manifest's), a tail the format refuses, or
# a sound index that disagrees with the manifest (a bundle older than its
# shards) gives the same records and digest, with the reason on stderr (never a
# secret of the manifest's URL) or index_bundle_drops counted; none there is
# the common case and says nothing. The same over S3 (the test servers'
# s3rver), as a packed dataset uploaded whole is read. `index --bundle`
# writes pack's bytes for a manifest made another way. `pack --clean`
# removes it with the rest. Timing decides nothing.
set -euo pipefail
src=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/tests/servers.inc.sh"
. "$src/tests/check.inc.sh"
rf_need_env RF_S3_ENDPOINT RF_S3_BUCKET RF_S3_ACCESS_KEY RF_S3_SECRET_KEY RF_S3_REGION
cli=${RF_CLI:?RF_CLI must name the ringfeed binary}
PY=/usr/bin/python3
guard_s=120

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-index-bundle.XXXXXX")
rf_at_exit "rm -rf '$tmp'"
mkdir -p "$tmp/root"
$PY -c "import sys; sys.stdout.write(''.join('rec-%07d-%s\n' % (i, 'z' * 30) for i in range(60000)))" >"$tmp/lines.txt"
"$cli" pack --from lines "$tmp/lines.txt" -o "$tmp/root/ds" --block-size 1KiB --shard-size 16KiB >/dev/null
ds=$tmp/root/ds
n=$(grep -vc '^#' "$ds/manifest.rfm")
[ "$n" -ge 8 ] && ok "pack: $n shards" || bad "pack: $n shards (want 8 or more)"
[ -s "$ds/manifest.rfx" ] && ok "pack wrote manifest.rfx" || bad "no manifest.rfx in $(ls "$ds")"
same "the manifest is as before: its magic line, then a line a shard" "1 $n" \
	"$(grep -c '^#' "$ds/manifest.rfm") $(grep -c "$(printf '^shard-[0-9]*\\.rfs\t[0-9]*\t[0-9]*$')" "$ds/manifest.rfm")"
$PY "$src/tests/bundle_write.py" "$ds/manifest.rfm" "$tmp/py.rfx" --dir "$ds"
cmp -s "$tmp/py.rfx" "$ds/manifest.rfx" && ok "tests/bundle_write.py writes the same bytes" ||
	bad "tests/bundle_write.py and pack differ"
# the same manifest under another name has no bundle beside it (plain.rfx):
# its shards open one read each
cp "$ds/manifest.rfm" "$ds/plain.rfm"

# local
"$cli" read --digest --stats "$tmp/l0.json" "$ds/plain.rfm" >"$tmp/l0.out"
"$cli" read --digest --stats "$tmp/l1.json" "$ds" >"$tmp/l1.out"
same "local: the same records and digest" "$(cat "$tmp/l0.out")" "$(cat "$tmp/l1.out")"
same "local: every open served by the bundle" "$n" "$(rf_json "$tmp/l1.json" index_bundle_opens)"
same "local: no read of a shard to open it" 0 "$(rf_json "$tmp/l1.json" open_reads)"
n0=$(rf_json "$tmp/l0.json" open_reads)
[ "$n0" -ge "$n" ] && ok "local without the bundle: $n0 open reads" || bad "without the bundle: $n0 open reads"

# over HTTP, every request held 200 ms
$PY "$src/tests/servers/bad_http.py" --root "$tmp/root" --port 0 --port-file "$tmp/bad.port" \
	>"$tmp/bad.log" 2>&1 &
bad_pid=$!
rf_at_exit "kill $bad_pid 2>/dev/null; wait $bad_pid 2>/dev/null"
for _ in $(seq 100); do [ -s "$tmp/bad.port" ] && break; sleep 0.1; done
[ -s "$tmp/bad.port" ] || { cat "$tmp/bad.log" >&2; echo "FAIL: bad_http did not start" >&2; exit 1; }
url=http://127.0.0.1:$(cat "$tmp/bad.port")/slow-every-1-200/ds
reset() { $PY -c 'import sys,urllib.request; urllib.request.urlopen(sys.argv[1] + "/_reset").read()' "${url%%/slow*}"; }
asked() { # shards the server was asked for, and how many requests in all
	$PY -c 'import json,sys,urllib.request
st = json.load(urllib.request.urlopen(sys.argv[1] + "/_stats"))
k = [v["requests"] for p, v in st.items() if p.endswith(".rfs")]
print(len(k), sum(k))' "${url%%/slow*}"
}
one() { # NAME MANIFEST_URL [read options]: one batch of one record
	local name=$1 m=$2
	shift 2
	reset
	timeout $guard_s "$cli" read --digest --batch 1 --stop-after 1 --stats "$tmp/$name.json" \
		--open-progress 0 "$@" "$m" >"$tmp/$name.out" 2>"$tmp/$name.err"
	read -r touched requests < <(asked)
}
one h0 "$url/plain.rfm"
same "remote without the bundle: every shard asked for" "$n" "$touched"
one h1 "$url/manifest.rfm"
same "remote: the same first record" "$(cat "$tmp/h0.out")" "$(cat "$tmp/h1.out")"
same "remote: every open served by the bundle" "$n" "$(rf_json "$tmp/h1.json" index_bundle_opens)"
same "remote: no request to open a shard" 0 "$(rf_json "$tmp/h1.json" open_reads)"
[ "$touched" -lt "$n" ] && ok "remote: $touched of $n shards asked for (only the first batch's)" ||
	bad "remote: $touched of $n shards asked for (want fewer: the opens asked nothing)"
timeout $guard_s "$cli" read --digest -q "${url%%/slow*}/ok/ds/manifest.rfm" >"$tmp/h2.out"
same "remote, whole (no delay): the local digest" "$(cat "$tmp/l0.out")" "$(cat "$tmp/h2.out")"

# a bundle that cannot be used is none: same digest, the reason on stderr
cp "$ds/manifest.rfx" "$tmp/good.rfx"
for damage in crc count path tail records; do
	$PY "$src/tests/bundle_write.py" "$ds/plain.rfm" "$ds/manifest.rfx" --dir "$ds" --damage $damage
	rc=0
	"$cli" read --digest --stats "$tmp/d-$damage.json" "$ds" >"$tmp/d-$damage.out" 2>"$tmp/d-$damage.err" || rc=$?
	same "damaged ($damage): exit 0" 0 "$rc"
	same "damaged ($damage): the same digest" "$(cat "$tmp/l0.out")" "$(cat "$tmp/d-$damage.out")"
done
for damage in crc count path; do
	same "damaged ($damage): no open from it" 0 "$(rf_json "$tmp/d-$damage.json" index_bundle_opens)"
done
grep -q "^ringfeed: index bundle $ds/manifest.rfx: checksum .* (its shards open one request each)$" "$tmp/d-crc.err" &&
	ok "checksum: said, naming the bundle" || bad "checksum: stderr: $(cat "$tmp/d-crc.err")"
grep -q "index bundle .*: $((n + 1)) entries, the manifest lists $n shards" "$tmp/d-count.err" &&
	ok "an entry too many: said" || bad "count: stderr: $(cat "$tmp/d-count.err")"
grep -q "entry 0 (.* bytes) is not the manifest's line 2" "$tmp/d-path.err" &&
	ok "a path not the manifest's: said, naming the entry and the line" || bad "path: stderr: $(cat "$tmp/d-path.err")"
same "a tail the format refuses: dropped, read from the shard" 1 "$(rf_json "$tmp/d-tail.json" index_bundle_drops)"
same "a tail the format refuses: the others served" $((n - 1)) "$(rf_json "$tmp/d-tail.json" index_bundle_opens)"
same "an older bundle's sound index (a record less than the manifest): dropped" 1 \
	"$(rf_json "$tmp/d-records.json" index_bundle_drops)"
same "an older bundle's sound index: the others served" $((n - 1)) \
	"$(rf_json "$tmp/d-records.json" index_bundle_opens)"
rm "$ds/manifest.rfx"
rc=0
"$cli" read --digest --stats "$tmp/m.json" "$ds" >"$tmp/m.out" 2>"$tmp/m.err" || rc=$?
same "none: exit 0, the same digest" "0 $(cat "$tmp/l0.out")" "$rc $(cat "$tmp/m.out")"
same "none: nothing said (the common case)" "" "$(grep 'index bundle' "$tmp/m.err" || true)"
same "none: no open from it" 0 "$(rf_json "$tmp/m.json" index_bundle_opens)"
cp "$tmp/good.rfx" "$ds/manifest.rfx"

# S3 (s3rver), as a packed dataset uploaded whole is read: the bundle beside
# the manifest serves every open; a manifest without one reads as before
for f in $(ls "$ds"); do rf_s3_put "$ds/$f" "ibundle/$f"; done
s3=(--s3-endpoint "$RF_S3_ENDPOINT" --s3-access-key "$RF_S3_ACCESS_KEY"
	--s3-secret-key "$RF_S3_SECRET_KEY" --s3-region "$RF_S3_REGION")
"$cli" read --digest "${s3[@]}" --stats "$tmp/s1.json" "s3://$RF_S3_BUCKET/ibundle/manifest.rfm" \
	>"$tmp/s1.out" 2>"$tmp/s1.err"
same "S3: the local digest" "$(cat "$tmp/l0.out")" "$(cat "$tmp/s1.out")"
same "S3: every open served by the bundle" "$n" "$(rf_json "$tmp/s1.json" index_bundle_opens)"
same "S3: no request to open a shard" 0 "$(rf_json "$tmp/s1.json" open_reads)"
"$cli" read --digest "${s3[@]}" --stats "$tmp/s0.json" "s3://$RF_S3_BUCKET/ibundle/plain.rfm" \
	>"$tmp/s0.out" 2>"$tmp/s0.err"
same "S3 without a bundle: the local digest, nothing said" "$(cat "$tmp/l0.out")" \
	"$(cat "$tmp/s0.out")$(grep 'index bundle' "$tmp/s0.err" || true)"
same "S3 without a bundle: no open from one" 0 "$(rf_json "$tmp/s0.json" index_bundle_opens)"

# a remote manifest's bundle is asked for with its URL's query (a presigned
# manifest's signature): a damaged one is said without it
$PY "$src/tests/bundle_write.py" "$ds/plain.rfm" "$ds/manifest.rfx" --dir "$ds" --damage crc
one r1 "$url/manifest.rfm?X-Amz-Signature=SECRETSIG"
same "a damaged remote bundle: the same first record" "$(cat "$tmp/h0.out")" "$(cat "$tmp/r1.out")"
same "a damaged remote bundle: no open from it" 0 "$(rf_json "$tmp/r1.json" index_bundle_opens)"
grep -q "^ringfeed: index bundle http://127\.0\.0\.1:[0-9]*/slow-every-1-200/ds/manifest\.rfx?\.\.\.: checksum" "$tmp/r1.err" &&
	ok "a damaged remote bundle: said, its URL redacted" || bad "remote damaged: stderr: $(cat "$tmp/r1.err")"
grep -q SECRETSIG "$tmp/r1.err" "$tmp/r1.json" && bad "a signature was shown: $(cat "$tmp/r1.err")" ||
	ok "no signature in its message or the stats"
cp "$tmp/good.rfx" "$ds/manifest.rfx"

# `index --bundle` writes it for a manifest made another way: the same bytes
# as pack's for the same shards; a shard of another size is an error naming it
cp "$ds/manifest.rfm" "$ds/other.rfm"
(cd "$tmp/root" && "$cli" index --bundle ds/other.rfm) >"$tmp/ib.out" # a relative name
cmp -s "$ds/other.rfx" "$tmp/good.rfx" && ok "index --bundle: pack's bytes" || bad "index --bundle: differs from pack's"
grep -q "^index: ds/other.rfm: $n shards, bundle ds/other.rfx$" "$tmp/ib.out" && ok "index --bundle: said" ||
	bad "index --bundle: stdout: $(cat "$tmp/ib.out")"
"$cli" read --digest --stats "$tmp/ib.json" "$ds/other.rfm" >/dev/null
same "index --bundle: its bundle serves" "$n" "$(rf_json "$tmp/ib.json" index_bundle_opens)"
awk -F'\t' -v OFS='\t' 'NR == 2 { $2 = $2 + 1 } { print }' "$ds/manifest.rfm" >"$ds/wrong.rfm"
rc=0
"$cli" index --bundle "$ds/wrong.rfm" >/dev/null 2>"$tmp/ib.err" || rc=$?
same "index --bundle, a size the manifest does not say: exit 1" 1 "$rc"
grep -q "shard-000000.rfs: file is [0-9]* bytes, the manifest says" "$tmp/ib.err" && ok "... naming the shard" ||
	bad "index --bundle wrong size: stderr: $(cat "$tmp/ib.err")"
[ ! -e "$ds/wrong.rfx" ] && ok "... and writing nothing" || bad "index --bundle wrote wrong.rfx"
rc=0
"$cli" index --bundle --json "$ds" >/dev/null 2>&1 || rc=$?
same "index --bundle --json: bad usage" 2 "$rc"

# pack --clean takes it away with the rest; a pack over it is refused
"$cli" pack --from lines "$tmp/lines.txt" -o "$tmp/root/ds" --clean --block-size 4KiB >/dev/null
same "pack --clean: one shard" 1 "$(grep -vc '^#' "$ds/manifest.rfm")"
"$cli" read --digest --stats "$tmp/c.json" "$ds" >/dev/null
same "pack --clean: its bundle serves" 1 "$(rf_json "$tmp/c.json" index_bundle_opens)"
# pack --demo writes one too
"$cli" pack --demo -o "$tmp/demo" --demo-bytes 4MiB --demo-shards 3 >/dev/null
"$cli" read --digest --stats "$tmp/demo.json" "$tmp/demo" >/dev/null
same "pack --demo: its bundle serves every open" 3 "$(rf_json "$tmp/demo.json" index_bundle_opens)"
rf_checks_done cli_index_bundle
