#!/usr/bin/env bash
# cli_wds_stale.sh - a .tar rewritten in place with its size and mtime put
# back (cp -p, tar -x, rsync --inplace -t; here cat > and touch -r) is
# another version for the index cache (the local key holds the ctime): the
# next read scans it again and gives its new samples, never the old layout.
# A stale index file makes every block of its tar fail: --skip-blocks 100
# does not leave the whole shard out silently (exit 1 naming the shard), and
# the re-read of a local file's bytes says they were the same bytes instead
# of "still after 5 re-reads". Local files only; counts and digests.
set -euo pipefail
src=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/tests/check.inc.sh"
cli=${RF_CLI:?RF_CLI must name the ringfeed binary}
PY=/usr/bin/python3
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-wds-stale.XXXXXX")
trap 'rm -rf "$T"' EXIT

# two tars of one size: the same member sizes, other names and bytes
$PY - "$T" <<'PYEOF'
import io, random, sys, tarfile
for seed, prefix in ((1, "a"), (2, "b")):
    rng = random.Random(seed)
    with tarfile.open(f"{sys.argv[1]}/{prefix}.tar", "w", format=tarfile.GNU_FORMAT) as t:
        for i in range(100):
            for ext, n in (("jpg", 3000), ("cls", 4)):
                ti = tarfile.TarInfo(f"{prefix}/{(i * 7) % 100 if seed == 2 else i:06d}.{ext}")
                ti.size = n
                t.addfile(ti, io.BytesIO(rng.randbytes(n)))
PYEOF
[ "$(stat -c %s "$T/a.tar")" = "$(stat -c %s "$T/b.tar")" ] || bad "the two tars differ in size"
want_a=$("$cli" read --digest --no-shuffle --index-cache off "$T/a.tar" | tail -n 1)
want_b=$("$cli" read --digest --no-shuffle --index-cache off "$T/b.tar" | tail -n 1)
[ "$want_a" != "$want_b" ] || bad "the two tars read alike"

mkdir -p "$T/ds"
cp -p "$T/a.tar" "$T/ds/shard.tar"
touch -d '2020-01-01 00:00:00' "$T/ds/shard.tar"
rd() { # STATS: the shard through the cache, its digest
	"$cli" read --digest --no-shuffle --index-cache "$T/cache" --stats "$1" "$T/ds/shard.tar" |
		tail -n 1
}
same "cold cache: its samples" "$want_a" "$(rd "$T/s1.json")"
same "cold cache: one layout stored" 1 "$(rf_json "$T/s1.json" index_cache_puts)"
same "warm cache: its samples" "$want_a" "$(rd "$T/s2.json")"
same "warm cache: a hit" 1 "$(rf_json "$T/s2.json" index_cache_hits)"

# rewritten in place (the same inode), size and mtime put back
touch -r "$T/ds/shard.tar" "$T/ref"
cat "$T/b.tar" >"$T/ds/shard.tar"
touch -r "$T/ref" "$T/ds/shard.tar"
same "the rewrite kept size and mtime" "$(stat -c %s "$T/a.tar") $(stat -c %Y "$T/ref")" \
	"$(stat -c '%s %Y' "$T/ds/shard.tar")"
same "rewritten in place, size and mtime kept: its new samples" "$want_b" "$(rd "$T/s3.json")"
same "rewritten: no hit" 0 "$(rf_json "$T/s3.json" index_cache_hits)"
same "rewritten: scanned again and stored" 1 "$(rf_json "$T/s3.json" index_cache_puts)"
same "rewritten, warm again: its new samples" "$want_b" "$(rd "$T/s4.json")"

# a stale index file: every block of the tar contradicts it
mkdir -p "$T/ix"
cp "$T/a.tar" "$T/ix/shard.tar"
"$cli" index -q "$T/ix/shard.tar" || bad "ringfeed index failed"
cat "$T/b.tar" >"$T/ix/shard.tar"
set +e
"$cli" read --digest --no-shuffle --skip-blocks 100 --stats "$T/s5.json" "$T/ix/shard.tar" \
	>"$T/out" 2>"$T/err"
rc=$?
set -e
[ "$rc" -ne 0 ] && ok "a shard whose every block fails: exit $rc under --skip-blocks 100" ||
	bad "--skip-blocks 100 left the whole shard out and exited 0: $(cat "$T/err")"
grep -q "shard $T/ix/shard.tar: every one of its 1 block(s) failed" "$T/err" &&
	ok "the error names the shard" || bad "the error does not name the shard: $(cat "$T/err")"
grep -q "(the index file is stale or wrong" "$T/err" && ok "the error blames the index file" ||
	bad "the error does not say the index file is stale: $(cat "$T/err")"
# the tar's bytes are the same on re-read: not "still after 5 re-reads"
grep -q "the same bytes on re-read: not damage in transit" "$T/err" &&
	! grep -q "still after" "$T/err" && ok "the same bytes on re-read, said so" ||
	bad "the re-read message: $(cat "$T/err")"
rf_checks_done cli_wds_stale
