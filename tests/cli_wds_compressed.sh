#!/usr/bin/env bash
# cli_wds_compressed.sh - compressed WebDataset tars (.tar.gz, .tgz,
# .tar.zst) read as one unit each, the whole object decoded: the same
# samples, keys, fields and bytes as the plain .tar (--no-shuffle digest and
# --output tar), from gzip (tarfile's w:gz, and two gzip members one after
# the other), from zstd with and without the decoded size in its frame
# (`zstd file` vs a pipe), locally, over nginx and over s3rver; a shuffled
# order independent of threads, depth and budget; resume after every batch
# exact; ranks equal and disjoint; hostile streams (truncated, a damaged
# byte, a sample past the unit limit, a window larger than the decoder
# takes) fail naming the shard (a .tar.zst past 32 MiB decoded reads:
# cli_wds_zstd_stream.sh); a .tar.gz past 32 MiB decoded reads as units
# from its access points (locally and over nginx, ranged). Counts and
# digests only, never timing.
set -euo pipefail
src=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/tests/servers.inc.sh"
. "$src/tests/check.inc.sh"
cli=${RF_CLI:?RF_CLI must name the ringfeed binary}
PY=/usr/bin/python3

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-wds-z.XXXXXX")
rf_at_exit "rm -rf '$tmp'"
mkdir -p "$tmp/tar" "$tmp/gz" "$tmp/zst" "$tmp/mixed"
$PY - "$tmp" <<'PYEOF'
import gzip, io, random, sys, tarfile
rng = random.Random(13)
d = sys.argv[1]
for s in range(3):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for i in range(50):
            key = f"{s:02d}/{i:06d}" if i != 7 else f"{s:02d}/" + "long" * 30 + f"{i}"
            for ext in ("jpg", "cls", "json"):
                if ext == "cls" and i % 9 == 4:
                    continue
                data = rng.randbytes(rng.randint(2000, 60000)) if ext == "jpg" else b"%d" % i
                ti = tarfile.TarInfo(f"{key}.{ext}"); ti.size = len(data)
                t.addfile(ti, io.BytesIO(data))
    raw = buf.getvalue()
    open(f"{d}/tar/shard-{s:06d}.tar", "wb").write(raw)
    if s == 1:  # two gzip members, split at a 512-byte boundary (cat a.gz b.gz)
        cut = (len(raw) // 2) // 512 * 512
        open(f"{d}/gz/shard-{s:06d}.tar.gz", "wb").write(
            gzip.compress(raw[:cut], 6) + gzip.compress(raw[cut:], 1))
    else:
        open(f"{d}/gz/shard-{s:06d}.tar.gz", "wb").write(gzip.compress(raw, 6))
PYEOF
for s in 0 1 2; do
	f=$tmp/tar/shard-00000$s.tar
	if [ $s = 1 ]; then
		zstd -q -c <"$f" >"$tmp/zst/shard-00000$s.tar.zst" # a pipe: no decoded size
	else
		zstd -q -3 -c "$f" >"$tmp/zst/shard-00000$s.tar.zst"
	fi
done
cp "$tmp/tar/shard-000000.tar" "$tmp/mixed/"
cp "$tmp/gz/shard-000001.tar.gz" "$tmp/mixed/shard-000001.tgz"
cp "$tmp/zst/shard-000002.tar.zst" "$tmp/mixed/"

ns() { "$cli" read --digest --no-shuffle --batch 8 "$@" | tail -n 1; }
want=$(ns "$tmp/tar")
case $want in records=150*digest=*) ok "plain tar digest: $want" ;; *) bad "plain read: '$want'" ;; esac
same "gzip, --no-shuffle: the plain tar's samples" "$want" "$(ns "$tmp/gz")"
same "zstd, --no-shuffle: the plain tar's samples" "$want" "$(ns "$tmp/zst")"
same "mixed .tar / .tgz / .tar.zst" "$want" "$(ns "$tmp/mixed")"
"$cli" read --no-shuffle --output tar "$tmp/tar" | md5sum >"$tmp/plain.md5"
same "gzip --output tar" "$(cat "$tmp/plain.md5")" \
	"$("$cli" read --no-shuffle --output tar "$tmp/gz" | md5sum)"

sh() { "$cli" read --digest --seed 5 --batch 8 "$@" | tail -n 1; }
base=$(sh "$tmp/zst")
for v in "--threads 1 --depth 1" "--threads 3 --depth 6" "--budget 40MiB"; do
	same "zstd shuffled, $v" "$base" "$(sh $v "$tmp/zst")"
done

"$cli" read --seed 5 --batch 9 --output tar "$tmp/gz" | tar tf - >"$tmp/full.names"
for k in 1 5 9 16; do
	"$cli" read --seed 5 --batch 9 --output tar --stop-after "$k" --save-state "$tmp/st" \
		"$tmp/gz" | tar tf - >"$tmp/head.names"
	"$cli" read --seed 5 --batch 9 --output tar --resume "$tmp/st" "$tmp/gz" |
		tar tf - >"$tmp/tail.names"
	if cat "$tmp/head.names" "$tmp/tail.names" | cmp -s - "$tmp/full.names"; then
		ok "gzip: resume after batch $k exact"
	else
		bad "gzip: resume after batch $k differs"
	fi
done
: >"$tmp/ranks"
for r in 0 1; do
	"$cli" read --seed 5 --batch 5 --world 2 --rank $r --output tar "$tmp/zst" | tar tf - |
		sed 's/\.[^.]*$//' | uniq >"$tmp/rank$r"
	same "zstd rank $r: 75 samples" 75 "$(wc -l <"$tmp/rank$r")"
	cat "$tmp/rank$r" >>"$tmp/ranks"
done
same "zstd ranks disjoint, none lost" 150 "$(sort -u "$tmp/ranks" | wc -l)"

# a .tar.gz past 32 MiB decoded: units from its access points, read in ranges
mkdir -p "$tmp/big" "$tmp/bigz"
$PY - "$tmp/big" <<'PYEOF'
import io, os, sys, tarfile
with tarfile.open(f"{sys.argv[1]}/big.tar", "w", format=tarfile.GNU_FORMAT) as t:
    for i in range(48):
        for ext, data in (("bin", os.urandom(900000 + 1000 * i)), ("cls", b"%d" % i)):
            ti = tarfile.TarInfo(f"{i:05d}.{ext}"); ti.size = len(data)
            t.addfile(ti, io.BytesIO(data))
PYEOF
gzip -1 -c "$tmp/big/big.tar" >"$tmp/bigz/big.tar.gz"
bigwant=$(ns "$tmp/big")
same "a 43 MB .tar.gz in units from its access points: the plain tar's samples" "$bigwant" \
	"$(ns --stats "$tmp/big.json" "$tmp/bigz")"
units=$(rf_json "$tmp/big.json" blocks_decoded)
[ "$units" -ge 2 ] && ok "the large .tar.gz read as $units units" || bad "large .tar.gz: $units units"
same "large .tar.gz shuffled, 1 thread vs 3" "$(sh --threads 1 "$tmp/bigz")" "$(sh --threads 3 "$tmp/bigz")"

# hostile streams
mkdir -p "$tmp/bad"
f=$tmp/gz/shard-000000.tar.gz
head -c $(($(stat -c %s "$f") / 2)) "$f" >"$tmp/bad/cut.tar.gz"
cp "$f" "$tmp/bad/flip.tar.gz" # a damaged byte mid-stream: whichever check sees it
printf '\xff\xff\xff\xff' | dd of="$tmp/bad/flip.tar.gz" bs=1 seek=20000 conv=notrunc 2>/dev/null
cp "$f" "$tmp/bad/crc.tar.gz" # the gzip trailer's CRC-32 damaged
printf '\x55' | dd of="$tmp/bad/crc.tar.gz" bs=1 seek=$(($(stat -c %s "$f") - 6)) conv=notrunc 2>/dev/null
head -c 300000000 /dev/zero >"$tmp/zeros.bin"
(cd "$tmp" && tar cf - zeros.bin) | zstd -q -1 -c >"$tmp/bad/big.tar.zst"
(cd "$tmp" && tar cf - zeros.bin) | gzip -1 -c >"$tmp/bad/huge-sample.tar.gz"
rm -f "$tmp/zeros.bin"
zstd -q --long=25 -c <"$tmp/tar/shard-000000.tar" >"$tmp/bad/long.tar.zst" # a pipe: the window stays 32 MiB
printf 'not gzip at all' >"$tmp/bad/junk.tgz"
expect_fail() { # NAME WORDS...
	local f=$tmp/bad/$1 w
	shift
	if "$cli" read --digest "$f" >/dev/null 2>"$tmp/err"; then
		bad "$f was read"
		return
	fi
	for w in "$@"; do
		grep -q -- "$w" "$tmp/err" || {
			bad "$f: error lacks '$w': $(cat "$tmp/err")"
			return
		}
	done
	ok "refused $(basename "$f"): $(head -c 160 "$tmp/err")"
}
expect_fail cut.tar.gz "cut.tar.gz" "gzip stream ends early"
expect_fail flip.tar.gz "shard $tmp/bad/flip.tar.gz: "
expect_fail crc.tar.gz "crc.tar.gz" "gzip stream near compressed byte" "incorrect data check"
expect_fail big.tar.zst "big.tar.zst" "sample 'zeros' spans 300000768 bytes" "more than a read unit holds"
expect_fail huge-sample.tar.gz "huge-sample.tar.gz" "sample 'zeros' spans 300000768 bytes" "more than a read unit holds"
expect_fail long.tar.zst "long.tar.zst" "window is larger than 8 MiB"
expect_fail junk.tgz "junk.tgz" "gzip stream"

"$cli" inspect "$tmp/zst/shard-000001.tar.zst" >"$tmp/inspect.out" 2>&1 ||
	bad "inspect of a .tar.zst: $(cat "$tmp/inspect.out")"
grep -q "^samples           50$" "$tmp/inspect.out" && ok "inspect counts a .tar.zst's samples" ||
	bad "inspect of a .tar.zst: $(cat "$tmp/inspect.out")"
if "$cli" verify "$tmp/gz" >"$tmp/verify.out" 2>&1 && grep -q "verify: 3 shards, 0 damaged" "$tmp/verify.out"; then
	ok "verify decodes .tar.gz shards"
else
	bad "verify of .tar.gz: $(cat "$tmp/verify.out")"
fi

# over the network: the same samples from nginx and s3rver
rf_servers_or_start
tag=cli-wds-z-$$
mkdir -p "$RF_NGINX_ROOT/$tag"
cp "$tmp"/mixed/* "$tmp/bigz/big.tar.gz" "$RF_NGINX_ROOT/$tag/"
rf_at_exit "rm -rf '$RF_NGINX_ROOT/$tag'"
same "http: .tar, .tgz, .tar.zst" "$want" \
	"$(ns "$RF_NGINX_URL/$tag/shard-000000.tar" "$RF_NGINX_URL/$tag/shard-000001.tgz" \
		"$RF_NGINX_URL/$tag/shard-000002.tar.zst")"
same "http: the large .tar.gz in ranged units" "$bigwant" "$(ns "$RF_NGINX_URL/$tag/big.tar.gz")"
s3=(--s3-endpoint "$RF_S3_ENDPOINT" --s3-access-key "$RF_S3_ACCESS_KEY"
	--s3-secret-key "$RF_S3_SECRET_KEY")
for f in "$tmp"/zst/*; do
	rf_s3_put "$f" "$tag/$(basename "$f")" || bad "upload $f"
done
same "s3 prefix of .tar.zst (the listing takes them)" "$want" \
	"$(ns "${s3[@]}" "s3://$RF_S3_BUCKET/$tag/")"

rf_checks_done cli_wds_compressed
