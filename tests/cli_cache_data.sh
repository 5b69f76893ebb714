#!/usr/bin/env bash
# cli_cache_data.sh - the data cache (fetch/cache.h) over nginx, counted at
# the server (its access log): three runs of a dataset that fits fetch at
# most 1% of the first run's bytes in the second and third, with the same
# digest; nothing secret (the URL's query) reaches a cache file or name;
# every recorded range verifies; a byte flipped in a cached range is
# detected, refetched and counted, never delivered; an object changed on
# the store (new ETag) is never served from its old ranges (and the old
# files go); a loader killed with -9 while it writes leaves a cache the next
# run reads exactly; a read-only and a full cache directory (small tmpfs)
# leave the read intact with one stated reason; four loaders at once on one
# cache read exactly, leave it sound and fetch each range once (claims); a
# bound below the data keeps the cache within it across runs, evicting the
# least recently used dataset's versions; resume, ranks, a mixture and a
# skipped damaged block give the same batches with the cache off, cold and
# warm.
set -euo pipefail
src=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/tests/servers.inc.sh"
rf_servers_or_start
cli=${RF_CLI:?RF_CLI must name the ringfeed binary}
. "$src/tests/check.inc.sh"
py=/usr/bin/python3
chk="$py $src/tests/cache_data_check.py"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-cache-data.XXXXXX")
rf_at_exit "rm -rf '$tmp'"
tag=cli-cache-data-$$
"$cli" pack --demo -o "$tmp/ds" --demo-bytes 6MiB --demo-shards 4 >/dev/null
want=$("$cli" read --digest "$tmp/ds" | tail -n 1)
mkdir -p "$RF_NGINX_ROOT/$tag"
cp "$tmp"/ds/shard-*.rfs "$RF_NGINX_ROOT/$tag/"
rf_at_exit "rm -rf '$RF_NGINX_ROOT/$tag'"
log=$RF_SERVERS_DIR/logs/nginx-access.log
[ -f "$log" ] || log=$(ls "${RF_SERVERS_DIR:-/nonexistent}"/logs/nginx*access*.log 2>/dev/null | head -n 1)
[ -n "$log" ] && [ -f "$log" ] || { echo "SKIP: no nginx access log under RF_SERVERS_DIR"; exit 77; }
# body bytes nginx sent for this test's objects so far
served() { awk -v t="/$tag/" 'index($7, t) == 1 { s += $10 } END { print s + 0 }' "$log"; }
secret=TOPSECRETSIG$$
url="$RF_NGINX_URL/$tag/shard-{000000..000003}.rfs?X-Amz-Signature=$secret"
cache=$tmp/cache
run() { "$cli" read --digest --cache readwrite --cache-dir "$cache" "$@" "$url" | tail -n 1; }

# ---- three runs: the later ones come from the cache ------------------------
b0=$(served)
same "run 1 digest" "$want" "$(run --stats "$tmp/s1.json")"
b1=$(served)
same "run 2 digest" "$want" "$(run --stats "$tmp/s2.json")"
b2=$(served)
same "run 3 digest" "$want" "$(run --stats "$tmp/s3.json")"
b3=$(served)
e1=$((b1 - b0)) e2=$((b2 - b1)) e3=$((b3 - b2))
echo "store bytes per run: $e1 $e2 $e3"
[ "$e1" -ge 4000000 ] && ok "run 1 fetched the dataset ($e1 bytes)" || bad "run 1 fetched $e1 bytes"
[ $((e2 * 100)) -le "$e1" ] && ok "run 2 fetched <= 1% ($e2)" || bad "run 2 fetched $e2 of $e1"
[ $((e3 * 100)) -le "$e1" ] && ok "run 3 fetched <= 1% ($e3)" || bad "run 3 fetched $e3 of $e1"
hits=$(rf_json "$tmp/s3.json" data_cache_hit_bytes)
[ "$hits" -ge 4000000 ] && ok "run 3 served $hits bytes from the cache" || bad "run 3 hit bytes $hits"
same "no verify failures" 0 "$(rf_json "$tmp/s3.json" data_cache_verify_failures)"
same "cache on" "" "$(rf_json "$tmp/s3.json" data_cache_off)"

# ---- resume and ranks: the same batches with the cache off, cold and warm ---
for mode in off cold warm; do
	c=readwrite
	[ $mode = off ] && c=off
	[ $mode = cold ] && rm -rf "$tmp/cache-r"
	rr() { "$cli" read --digest --cache $c --cache-dir "$tmp/cache-r" --batch 64 "$@" "$url" | tail -n 1; }
	echo "$(rr --stop-after 5 --save-state "$tmp/st-$mode") $(rr --resume "$tmp/st-$mode")" \
		>"$tmp/resume-$mode"
	echo "$(rr --world 2 --rank 0) $(rr --world 2 --rank 1)" >"$tmp/ranks-$mode"
done
for mode in cold warm; do
	same "resume, cache $mode: the batches of cache=off" "$(cat "$tmp/resume-off")" "$(cat "$tmp/resume-$mode")"
	cmp -s "$tmp/st-off" "$tmp/st-$mode" && ok "resume, cache $mode: the same saved state" ||
		bad "resume, cache $mode: another saved state"
	same "ranks, cache $mode: the batches of cache=off" "$(cat "$tmp/ranks-off")" "$(cat "$tmp/ranks-$mode")"
done
grep -q "records=0 " "$tmp/ranks-off" && bad "a rank read nothing: $(cat "$tmp/ranks-off")" || true

# ---- mixtures: the same batches with the cache off, cold and warm -----------
# (two sources of this dataset's shards, 0.7 / 0.3: the small one repeats)
printf '# ringfeed mixture v1\n0.7\t%s\n0.3\t%s\n' "$RF_NGINX_URL/$tag/shard-{000000..000002}.rfs" \
	"$RF_NGINX_URL/$tag/shard-000003.rfs" >"$tmp/mix.txt"
for mode in off cold warm; do
	c=readwrite
	[ $mode = off ] && c=off
	[ $mode = cold ] && rm -rf "$tmp/cache-m"
	mr() { "$cli" read --digest --cache $c --cache-dir "$tmp/cache-m" --batch 64 --mixture "$tmp/mix.txt" "$@" | tail -n 1; }
	echo "$(mr --epochs 2) $(mr --stop-after 5 --save-state "$tmp/mst-$mode") $(mr --resume "$tmp/mst-$mode")" \
		"$(mr --world 2 --rank 1)" >"$tmp/mix-$mode"
done
for mode in cold warm; do
	same "mixture, cache $mode: the batches of cache=off" "$(cat "$tmp/mix-off")" "$(cat "$tmp/mix-$mode")"
done
grep -q "records=0 " "$tmp/mix-off" && bad "a mixture read nothing: $(cat "$tmp/mix-off")" || true

# ---- skips: a block damaged at rest is left out the same way, cache or not --
# (the cache records the damaged bytes as the store sent them; the loader's
# re-reads go to the store, get the same bytes and skip the block)
mkdir -p "$RF_NGINX_ROOT/$tag-bad"
rf_at_exit "rm -rf '$RF_NGINX_ROOT/$tag-bad'"
cp "$tmp"/ds/shard-*.rfs "$RF_NGINX_ROOT/$tag-bad/"
$py -c 'import sys; p=sys.argv[1]; b=bytearray(open(p,"rb").read()); b[100]^=0x55; open(p,"wb").write(bytes(b))' \
	"$RF_NGINX_ROOT/$tag-bad/shard-000001.rfs"
urlb="$RF_NGINX_URL/$tag-bad/shard-{000000..000003}.rfs"
rm -rf "$tmp/cache-k"
for mode in off cold warm; do
	c=readwrite
	[ $mode = off ] && c=off
	"$cli" read --digest --cache $c --cache-dir "$tmp/cache-k" --batch 64 --skip-blocks 1 \
		--stats "$tmp/k-$mode.json" "$urlb" 2>/dev/null | tail -n 1 >"$tmp/skip-$mode"
done
[ "$(rf_json "$tmp/k-off.json" blocks_skipped)" = 1 ] && ok "skips, cache off: one block left out" ||
	bad "skips, cache off: blocks_skipped $(rf_json "$tmp/k-off.json" blocks_skipped)"
for mode in cold warm; do
	same "skips, cache $mode: the batches of cache=off" "$(cat "$tmp/skip-off")" "$(cat "$tmp/skip-$mode")"
	same "skips, cache $mode: one block left out" 1 "$(rf_json "$tmp/k-$mode.json" blocks_skipped)"
done
[ "$(rf_json "$tmp/k-warm.json" data_cache_hit_bytes)" -gt 0 ] && ok "skips, cache warm: read from the cache" ||
	bad "skips, cache warm: nothing from the cache"

# ---- secrets and integrity ------------------------------------------------
if grep -rqa "$secret" "$cache" || $chk names "$cache" | grep -q "$secret"; then
	bad "the URL's query reached the cache"
else
	ok "no secret in any cache file or name"
fi
$chk verify "$cache" >"$tmp/v" && ok "verify: $(cat "$tmp/v")" || bad "verify: $(cat "$tmp/v")"

# ---- a flipped byte: detected, refetched, counted ---------------------------
$chk flip "$cache" >/dev/null
$chk verify "$cache" >/dev/null && bad "the flip was not seen by the checker" || ok "flip made"
"$cli" cache verify --cache-dir "$cache" >"$tmp/cv" && bad "ringfeed cache verify missed the flip" ||
	{ grep -q "bad=1" "$tmp/cv" && ok "ringfeed cache verify names the flip" || bad "cache verify: $(cat "$tmp/cv")"; }
b4=$(served)
same "digest with a flipped cached byte" "$want" "$(run --stats "$tmp/s4.json")"
same "the flip was counted" 1 "$(rf_json "$tmp/s4.json" data_cache_verify_failures)"
[ $(($(served) - b4)) -gt 0 ] && ok "the damaged range was refetched" || bad "nothing refetched"
$chk verify "$cache" >"$tmp/v" && ok "rewritten: $(cat "$tmp/v")" || bad "after refetch: $(cat "$tmp/v")"

# ---- an object changed on the store: never its old ranges -------------------
"$cli" pack --demo -o "$tmp/other" --demo-bytes 7MiB --demo-shards 4 >/dev/null
mkdir "$tmp/ds2"
cp "$tmp"/ds/shard-*.rfs "$tmp/ds2/"
cp "$tmp/other/shard-000001.rfs" "$tmp/ds2/shard-000001.rfs"
want2=$("$cli" read --digest "$tmp/ds2" | tail -n 1)
[ "$want2" != "$want" ] || bad "the changed dataset reads the same"
cp "$tmp/other/shard-000001.rfs" "$RF_NGINX_ROOT/$tag/shard-000001.rfs"
touch -d '+1 hour' "$RF_NGINX_ROOT/$tag/shard-000001.rfs" # a new mtime: a new ETag
same "digest after the object changed" "$want2" "$(run --stats "$tmp/s5.json")"
[ "$(rf_json "$tmp/s5.json" data_cache_removed_files)" -ge 1 ] &&
	ok "the old version's files went" || bad "old version kept: $(cat "$tmp/s5.json")"
same "digest of the changed dataset, cached" "$want2" "$(run)"

# ---- kill -9 while writing: the next run is exact, the cache verifies --------
rm -rf "$cache"
"$cli" read --digest --cache readwrite --cache-dir "$cache" --inject latency=30ms "$url" \
	>/dev/null 2>&1 &
pid=$!
sleep 0.4
kill -9 $pid 2>/dev/null || true
wait $pid 2>/dev/null || true
same "digest after a killed writer" "$want2" "$(run)"
"$cli" cache verify --cache-dir "$cache" >"$tmp/cv" && ok "ringfeed cache verify after kill -9: $(tail -n 1 "$tmp/cv")" ||
	bad "ringfeed cache verify after kill -9: $(cat "$tmp/cv")"
$chk verify "$cache" >"$tmp/v" && ok "after kill -9: $(cat "$tmp/v")" || bad "after kill -9: $(cat "$tmp/v")"

# ---- a store that damages each answer once: the damage does not stay -------
# (bad_http's flip-once-versioned: the object has an ETag, so it is cached;
# the loader's re-read of a unit that failed its check goes to the store)
mkdir -p "$RF_BAD_ROOT/$tag"
rf_at_exit "rm -rf '$RF_BAD_ROOT/$tag'"
cp "$tmp"/ds2/shard-*.rfs "$RF_BAD_ROOT/$tag/"
urlf="$RF_BAD_URL/flip-once-versioned/$tag/shard-{000000..000003}.rfs"
rf() { "$cli" read --digest --cache readwrite --cache-dir "$tmp/cache-f" "$@" "$urlf" | tail -n 1; }
same "damaged once: digest" "$want2" "$(rf --stats "$tmp/f.json")"
n=$(rf_json "$tmp/f.json" data_cache_rereads)
[ "$n" -ge 1 ] && ok "damaged once: $n re-reads answered by the store" || bad "damaged once: rereads $n"
# every re-read the engine made went through the cache, and is in the final
# stats (they were published only at a block read's end: the last re-reads
# of a run were missing, 1-5 of 8 on a loaded machine)
same "damaged once: every engine re-read counted by the cache" "$(rf_json "$tmp/f.json" rereads)" "$n"
same "damaged once, then from the cache: digest" "$want2" "$(rf --stats "$tmp/f2.json")"
# The next run reads part from the cache: a range whose first (damaged)
# write was still queued when the re-read replaced it can be missing and is
# fetched once more (docs/design.md, "Data cache": a known gap). How much is
# missing depends on the writes' timing (half of it in one CI run), so it is
# shown, not judged; the run after that must read everything from the cache.
echo "damaged once, then: $(rf_json "$tmp/f2.json" data_cache_hit_bytes) bytes from the cache"
same "damaged once, the run after: digest" "$want2" "$(rf --stats "$tmp/f3.json")"
[ "$(rf_json "$tmp/f3.json" data_cache_hit_bytes)" -ge 4000000 ] && ok "damaged once: then all from the cache" ||
	bad "damaged once, the run after: hit bytes $(rf_json "$tmp/f3.json" data_cache_hit_bytes)"
"$cli" cache verify --cache-dir "$tmp/cache-f" >"$tmp/cv" && ok "damaged once: the cache verifies" ||
	bad "damaged once: $(tail -n 1 "$tmp/cv")"
$chk verify "$tmp/cache-f" >"$tmp/v" && ok "damaged once: $(cat "$tmp/v")" || bad "damaged once: $(cat "$tmp/v")"

# ---- four loaders at once on one cache: one fetch per range (claims) -------
rm -rf "$cache"
b5=$(served)
same "one loader, cold" "$want2" "$(run)"
one=$(($(served) - b5))
rm -rf "$cache"
b5=$(served)
for i in 1 2 3 4; do
	"$cli" read --digest --cache readwrite --cache-dir "$cache" --stats "$tmp/par$i.json" "$url" \
		2>&1 | tail -n 1 >"$tmp/par$i" &
done
wait
for i in 1 2 3 4; do same "loader $i of 4 at once" "$want2" "$(cat "$tmp/par$i")"; done
four=$(($(served) - b5))
waits=0
for i in 1 2 3 4; do waits=$((waits + $(rf_json "$tmp/par$i.json" data_cache_claim_served))); done
echo "four loaders at once fetched $four bytes (one loader: $one; reads that waited for a claim: $waits)"
# each range once per host: a read another loader's claim overlaps waits for
# it; only reads split differently around a claimed range fetch a part twice
[ "$four" -le $((one + one / 20)) ] && ok "four loaders fetched each range once ($four <= $one + 5%)" ||
	bad "four loaders fetched $four bytes, one loader $one"
$chk verify "$cache" >"$tmp/v" && ok "after 4 at once: $(cat "$tmp/v")" || bad "after 4 at once: $(cat "$tmp/v")"
b6=$(served)
same "a fifth loader after them" "$want2" "$(run)"
[ $(($(served) - b6)) -le $((e1 / 100)) ] && ok "the fifth fetched <= 1%" || bad "the fifth fetched $(($(served) - b6))"

# ---- ls, du, clear (only the cache's own files) -----------------------------
"$cli" cache ls --cache-dir "$cache" >"$tmp/ls"
same "ls: one line per object, and the total" 5 "$(wc -l <"$tmp/ls")"
grep -q "$secret" "$tmp/ls" && bad "ls shows the query" || ok "ls shows no query"
touch "$cache/not-the-caches"
"$cli" cache clear --cache-dir "$cache" >"$tmp/clear"
same "clear leaves only what is not the cache's" "not-the-caches" "$(ls -A "$cache")"
same "du after clear" 0 "$("$cli" cache du --cache-dir "$cache" | sed 's/.*ranges=\([0-9]*\).*/\1/')"

# ---- ringfeed cache warm: a later read fetches nothing ----------------------
rm -rf "$cache"
b7=$(served)
"$cli" cache warm --cache-dir "$cache" --json "$url" >"$tmp/warm.json" 2>"$tmp/warm.err"
same "warm: status" 0 "$(rf_json "$tmp/warm.json" status)"
wf=$(($(served) - b7))
[ "$(rf_json "$tmp/warm.json" store_bytes)" -eq "$wf" ] && ok "warm: store_bytes as the server counted ($wf)" ||
	bad "warm: store_bytes $(rf_json "$tmp/warm.json" store_bytes), the server sent $wf"
grep -q "records, .* MB from the store" "$tmp/warm.err" && ok "warm: progress on stderr" ||
	bad "warm: no progress: $(cat "$tmp/warm.err")"
grep -q "$secret" "$tmp/warm.json" "$tmp/warm.err" && bad "warm shows the query" || ok "warm shows no query"
b8=$(served)
same "a read after the warm" "$want2" "$(run)"
[ $(($(served) - b8)) -le $((wf / 100)) ] && ok "a read after the warm fetched <= 1%" ||
	bad "a read after the warm fetched $(($(served) - b8))"

# ---- the bound: least recently used versions go, the cache stays within it --
mkdir -p "$RF_NGINX_ROOT/$tag/b"
cp "$tmp"/other/shard-*.rfs "$RF_NGINX_ROOT/$tag/b/"
urlb="$RF_NGINX_URL/$tag/b/shard-{000000..000003}.rfs"
wantb=$("$cli" read --digest "$tmp/other" | tail -n 1)
cap=3000000 # dataset B is 5.7 MB read; A's 5 MB are on disk
for e in 1 2 3; do
	same "B under a 3 MB bound, run $e" "$wantb" "$("$cli" read --digest --cache readwrite \
		--cache-dir "$cache" --cache-bytes $cap --stats "$tmp/b$e.json" "$urlb" | tail -n 1)"
	du=$("$cli" cache du --cache-dir "$cache" | sed 's/.*disk_bytes=\([0-9]*\).*/\1/')
	[ "$du" -le $cap ] && ok "run $e: the cache within its bound ($du <= $cap)" ||
		bad "run $e: the cache takes $du bytes, bound $cap"
done
ev=$(rf_json "$tmp/b1.json" data_cache_evictions)
[ "$ev" -ge 1 ] && ok "A's versions (least recently used) evicted: $ev" || bad "no eviction: $ev"
left=$("$cli" cache ls --cache-dir "$cache" | grep -c "/$tag/shard-" || true)
[ "$left" -lt 4 ] && ok "$left of A's 4 objects left" || bad "A's 4 objects all left"
hb=$(rf_json "$tmp/b3.json" data_cache_hit_bytes)
[ "$hb" -ge 500000 ] && ok "run 3 of B read $hb bytes from the cache" || bad "run 3 of B: hit bytes $hb"
$chk verify "$cache" >"$tmp/v" && ok "after eviction: $(cat "$tmp/v")" || bad "after eviction: $(cat "$tmp/v")"

# ---- a read-only and a full cache directory ---------------------------------
for kind in ro full; do
	mnt=$tmp/mnt-$kind
	mkdir -p "$mnt"
	opts=size=1m
	[ $kind = ro ] && opts=ro,size=1m
	if ! mount -t tmpfs -o "$opts" tmpfs "$mnt" 2>/dev/null; then
		echo "skip $kind: cannot mount a tmpfs (needs root)"
		continue
	fi
	rf_at_exit "umount '$mnt' 2>/dev/null"
	chmod 700 "$mnt" 2>/dev/null || true
	got=$("$cli" read --digest --cache readwrite --cache-dir "$mnt/data" \
		--stats "$tmp/$kind.json" "$url" 2>"$tmp/$kind.err" | tail -n 1)
	same "$kind cache dir: digest" "$want2" "$got"
	n=$(grep -c "data cache" "$tmp/$kind.err" || true)
	same "$kind cache dir: one stated reason" 1 "$n"
	reason=$(rf_json "$tmp/$kind.json" data_cache_off)
	[ -n "$reason" ] && ok "$kind: stats say '$reason'" || bad "$kind: no reason in the stats"
	umount "$mnt" && ok "$kind: unmounted"
done

rf_checks_done cli_cache_data
