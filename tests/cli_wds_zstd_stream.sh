#!/usr/bin/env bash
# cli_wds_zstd_stream.sh - a .tar.zst past 32 MiB decoded is a sequential
# layout: a single zstd frame cannot be entered mid-way, so its units (runs
# of whole samples, about 1 MiB each) decode in order through one stream
# state, and the memory held is a few units, never the decoded shard. Checks:
# the plain tar's samples (--no-shuffle digest and --output tar) from one
# frame with and without the decoded size and from two frames one after the
# other; the decoded bytes held at once far below the shard's; one shuffled
# order for any threads, depth and budget; resume after several batches
# exact, what it cost said (stream_skipped_bytes); ranks equal and
# disjoint; the same samples over nginx and s3rver. Counts and digests
# only, never timing.
set -euo pipefail
src=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/tests/servers.inc.sh"
. "$src/tests/check.inc.sh"
cli=${RF_CLI:?RF_CLI must name the ringfeed binary}
PY=/usr/bin/python3

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-wds-zs.XXXXXX")
rf_at_exit "rm -rf '$tmp'"
mkdir -p "$tmp/tar" "$tmp/one" "$tmp/pipe" "$tmp/two"
$PY - "$tmp/tar/big.tar" <<'PYEOF'
import io, random, sys, tarfile
rng = random.Random(29)
with tarfile.open(sys.argv[1], "w", format=tarfile.GNU_FORMAT) as t:
    for i in range(48):
        for ext, data in (("jpg", rng.randbytes(900000 + 1000 * i)), ("cls", b"%d" % i),
                          ("json", b'{"i": %d}' % i)):
            ti = tarfile.TarInfo(f"{i:05d}.{ext}"); ti.size = len(data)
            t.addfile(ti, io.BytesIO(data))
PYEOF
f=$tmp/tar/big.tar
zstd -q -1 -c "$f" >"$tmp/one/big.tar.zst"          # the decoded size in the frame
zstd -q -1 -c <"$f" >"$tmp/pipe/big.tar.zst"        # a pipe: no decoded size
cut=$(($(stat -c %s "$f") / 2 / 512 * 512))         # two frames (cat a.zst b.zst)
{ head -c "$cut" "$f" | zstd -q -1 -c; tail -c +$((cut + 1)) "$f" | zstd -q -3 -c; } \
	>"$tmp/two/big.tar.zst"
decoded=$(stat -c %s "$f")

ns() { "$cli" read --digest --no-shuffle --batch 8 "$@" | tail -n 1; }
want=$(ns "$tmp/tar")
case $want in records=48*digest=*) ok "plain tar: $want" ;; *) bad "plain read: '$want'" ;; esac
for v in one pipe two; do
	same "zstd ($v), --no-shuffle: the plain tar's samples" "$want" \
		"$(ns --stats "$tmp/$v.json" "$tmp/$v")"
	units=$(rf_json "$tmp/$v.json" blocks_decoded)
	[ "$units" -ge 20 ] && ok "zstd ($v): read as $units units" || bad "zstd ($v): $units units"
	same "zstd ($v): in order, nothing decoded twice" 0 \
		"$(rf_json "$tmp/$v.json" stream_skipped_bytes)"
done
# a budget below the decoded shard: a few units held at once, never the shard
same "a 32 MiB budget reads it" "$want" "$(ns --budget 32MiB --stats "$tmp/small.json" "$tmp/one")"
peak=$($PY -c "import json,sys; print(json.load(open(sys.argv[1]))['mem_peak_bytes']['decoded'])" \
	"$tmp/small.json")
if [ "$peak" -lt $((decoded / 3)) ]; then
	ok "decoded bytes held at once: $peak of the shard's $decoded"
else
	bad "decoded bytes held at once: $peak, the shard decodes to $decoded"
fi
"$cli" read --no-shuffle --output tar "$tmp/tar" | md5sum >"$tmp/plain.md5"
same "zstd --output tar: the plain tar's members" "$(cat "$tmp/plain.md5")" \
	"$("$cli" read --no-shuffle --output tar "$tmp/one" | md5sum)"

sh() { "$cli" read --digest --seed 5 --batch 4 "$@" | tail -n 1; }
base=$(sh "$tmp/one")
for v in "--threads 1 --depth 1" "--threads 3 --depth 6" "--budget 96MiB"; do
	same "zstd shuffled, $v" "$base" "$(sh $v "$tmp/one")"
done
same "zstd shuffled, two frames" "$base" "$(sh "$tmp/two")"

# resume: shuffled (a window of 8 samples), and in order, where resuming
# inside the stream re-decodes it up to the position (stream_skipped_bytes)
for order in "--seed 5 --shuffle-window 8" "--no-shuffle"; do
	"$cli" read $order --batch 4 --output tar "$tmp/one" | tar tf - >"$tmp/full.names"
	for k in 1 4 9; do
		"$cli" read $order --batch 4 --output tar --stop-after "$k" --save-state "$tmp/st" \
			"$tmp/one" | tar tf - >"$tmp/head.names"
		"$cli" read $order --batch 4 --output tar --resume "$tmp/st" \
			--stats "$tmp/res.json" "$tmp/one" | tar tf - >"$tmp/tail.names"
		if cat "$tmp/head.names" "$tmp/tail.names" | cmp -s - "$tmp/full.names"; then
			ok "zstd $order: resume after batch $k exact (re-decoded $(rf_json \
				"$tmp/res.json" stream_skipped_bytes) bytes to reach it)"
		else
			bad "zstd $order: resume after batch $k differs"
		fi
	done
done
skipped=$(rf_json "$tmp/res.json" stream_skipped_bytes)
[ "$skipped" -gt $((decoded / 2)) ] && ok "the resume's cost is said: $skipped bytes" ||
	bad "a resume at 36 of 48 samples re-decoded $skipped bytes"
more=$(rf_json "$tmp/res.json" stream_more_reads)
[ "$more" -gt 0 ] && ok "the resume read the stream's start again: $more reads its decoder asked for" ||
	bad "a resume inside the stream asked for $more reads"

: >"$tmp/ranks"
for r in 0 1; do
	"$cli" read --seed 5 --batch 4 --world 2 --rank $r --output tar --stats "$tmp/r$r.json" \
		"$tmp/one" | tar tf - | sed 's/\.[^.]*$//' | uniq >"$tmp/rank$r"
	same "zstd rank $r: 24 samples" 24 "$(wc -l <"$tmp/rank$r")"
	cat "$tmp/rank$r" >>"$tmp/ranks"
done
same "zstd ranks disjoint, none lost" 48 "$(sort -u "$tmp/ranks" | wc -l)"
skipped=$(rf_json "$tmp/r1.json" stream_skipped_bytes)
[ "$skipped" -gt 0 ] && ok "rank 1 entered the stream inside it: $skipped bytes re-decoded" ||
	bad "rank 1 re-decoded $skipped bytes"

"$cli" verify "$tmp/one" "$tmp/two" >"$tmp/verify.out" 2>&1 &&
	grep -q "verify: 2 shards, 0 damaged" "$tmp/verify.out" &&
	ok "verify decodes sequential .tar.zst shards" ||
	bad "verify: $(cat "$tmp/verify.out")"

# over the network: the same samples from nginx and s3rver
rf_servers_or_start
tag=cli-wds-zs-$$
mkdir -p "$RF_NGINX_ROOT/$tag"
cp "$tmp/one/big.tar.zst" "$RF_NGINX_ROOT/$tag/"
rf_at_exit "rm -rf '$RF_NGINX_ROOT/$tag'"
same "http: the sequential .tar.zst" "$want" "$(ns "$RF_NGINX_URL/$tag/big.tar.zst")"
same "http: shuffled" "$base" "$(sh "$RF_NGINX_URL/$tag/big.tar.zst")"
s3=(--s3-endpoint "$RF_S3_ENDPOINT" --s3-access-key "$RF_S3_ACCESS_KEY"
	--s3-secret-key "$RF_S3_SECRET_KEY")
rf_s3_put "$tmp/two/big.tar.zst" "$tag/big.tar.zst" || bad "upload big.tar.zst"
same "s3: the two-frame .tar.zst" "$want" "$(ns "${s3[@]}" "s3://$RF_S3_BUCKET/$tag/")"

rf_checks_done cli_wds_zstd_stream
