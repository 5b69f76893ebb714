#!/usr/bin/env bash
# cli_read.sh - ringfeed read / bench end to end on packed shards:
# --no-shuffle --output lines equals the input; the digest is identical for
# every depth / thread count / budget; --stop-after + --save-state + --resume
# gives exactly the rest (raw output concatenates to the full run, across an
# epoch boundary); ranks partition the records; open errors are clear; a
# corrupt block stops the stream after the earlier batches, naming shard and
# block; bench --json carries the keys a program reads.
set -euo pipefail
CLI=${RF_CLI:?set RF_CLI to the ringfeed binary}
PY=/usr/bin/python3
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-read-XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_rc() {
	local want=$1; shift
	set +e; "$@" >"$T/out" 2>"$T/err"; local rc=$?; set -e
	[ "$rc" = "$want" ] || { cat "$T/out" "$T/err" >&2; fail "'$*' exited $rc, want $want"; }
}
expect_err() { grep -q -- "$1" "$T/err" || { cat "$T/err" >&2; fail "stderr lacks '$1'"; }; }

$PY - "$T/in.txt" <<'PYEOF'
import random, sys
random.seed(3)
abc = "abcdefghijklmnopqrstuvwxyz"
with open(sys.argv[1], "w") as f:
    for i in range(6000):
        f.write("r%d:%s\n" % (i, "".join(random.choices(abc, k=random.randint(0, 120)))))
PYEOF
"$CLI" pack --from lines "$T/in.txt" -o "$T/ds" --block-size 8KiB --shard-size 64KiB >/dev/null
M="$T/ds/manifest.rfm"

# 1. packed order, through a manifest, a directory and the shard files
expect_rc 0 "$CLI" read --no-shuffle --output lines "$M"
cmp -s "$T/out" "$T/in.txt" || fail "--no-shuffle --output lines differs from the input"
expect_rc 0 "$CLI" read --no-shuffle --output lines "$T/ds"
cmp -s "$T/out" "$T/in.txt" || fail "directory order differs from the input"
expect_rc 0 "$CLI" read --no-shuffle --output lines "$T"/ds/shard-*.rfs
cmp -s "$T/out" "$T/in.txt" || fail "shard list order differs from the input"

# 2. the digest does not depend on depth, threads or budget
ref=$("$CLI" read --digest --seed 5 --shuffle-window 300 --batch 10 "$M")
grep -q '^records=6000 bytes=' <<<"$ref" || fail "digest line: $ref"
for args in "--depth 1 --threads 1" "--depth 64 --threads 4" "--depth 3 --threads 2 --budget 4MiB"; do
	got=$("$CLI" read --digest --seed 5 --shuffle-window 300 --batch 10 $args "$M")
	[ "$got" = "$ref" ] || fail "digest with $args: $got, want $ref"
done
other=$("$CLI" read --digest --seed 6 --shuffle-window 300 --batch 10 "$M")
[ "$other" != "$ref" ] || fail "another seed gave the same order"

# 3. stop / save / resume across the epoch boundary: raw output concatenates
common=(--seed 2 --batch 64 --epochs 2 --output raw)
"$CLI" read "${common[@]}" "$M" >"$T/full.raw"
for k in 1 50 93 94 95 187; do
	"$CLI" read "${common[@]}" --stop-after $k --save-state "$T/st" "$M" >"$T/a.raw"
	"$CLI" read "${common[@]}" --resume "$T/st" "$M" >"$T/b.raw"
	cat "$T/a.raw" "$T/b.raw" | cmp -s - "$T/full.raw" || fail "resume after batch $k"
done
expect_rc 1 "$CLI" read --seed 3 --batch 64 --resume "$T/st" "$M"
expect_err "seed differs: saved 2, now 3"

# 4. ranks 0..2 together give every record once
for r in 0 1 2; do "$CLI" read --output lines --world 3 --rank $r "$M"; done | sort >"$T/ranks.txt"
sort "$T/in.txt" | cmp -s - "$T/ranks.txt" || fail "ranks do not partition the records"
# More ranks than blocks, several epochs: every rank takes the same number
# of records (10 = 4 x 2 + 2: the 2 left over are dropped, or with
# --pad-tail 1 filled with records from the epoch's start: 4 x 3), ranks
# without a block of their own read a neighbour's, and the stats say the
# counts at open.
seq 1 10 | sed 's/^/tiny-/' >"$T/tiny.txt"
"$CLI" pack --from lines "$T/tiny.txt" -o "$T/tiny" >/dev/null
for pad in 0 1; do
	for r in 0 1 2 3; do
		"$CLI" read --output lines --world 4 --rank $r --epochs 3 --batch 2 --pad-tail $pad \
			--stats "$T/tiny-$pad-$r.json" "$T/tiny/manifest.rfm" >"$T/tiny-$pad-$r.txt" \
			|| fail "rank $r of 4 over a one-block dataset, 3 epochs, pad $pad"
		n=$(wc -l <"$T/tiny-$pad-$r.txt")
		[ "$n" -eq $((3 * (2 + pad))) ] || fail "rank $r of 4 (pad $pad) gave $n records"
		grep -q "\"epoch_records\":$((2 + pad)),\"epoch_batches\":$(((3 + pad) / 2))," "$T/tiny-$pad-$r.json" \
			|| fail "rank $r stats lack its epoch counts: $(cat "$T/tiny-$pad-$r.json")"
	done
	cat "$T"/tiny-$pad-?.txt | sort | uniq -c | awk -v pad=$pad '
		{ n[$2] = $1; t += $1 }
		END { for (k in n) if ((pad == 0 && n[k] > 3) || (pad == 1 && n[k] < 3)) bad++;
		      exit !(bad == 0 && t == 24 + 12 * pad && (pad == 1 || length(n) >= 8)) }' \
		|| fail "ranks over a one-block dataset (pad $pad): a record repeated or missing"
done
grep -q '"epoch_records_dropped":2' "$T/tiny-0-0.json" || fail "dropped tail not counted"
grep -q '"epoch_records_padded":2' "$T/tiny-1-0.json" || fail "padded tail not counted"

# 5. open errors
expect_rc 1 "$CLI" read "$T/nope.rfs"; expect_err "nope.rfs"
expect_rc 1 "$CLI" read --rank 3 --world 3 "$M"; expect_err "rank 3"
expect_rc 1 "$CLI" read --budget 1MiB --batch 100000 "$M"; expect_err "needs at least"
expect_rc 2 "$CLI" read "$M" --depth 5000; expect_err "out of range"
expect_rc 2 "$CLI" read "$M" --bogus 1; expect_err "unknown option"
expect_rc 2 "$CLI" read; expect_err "no shards"

# padded rows: a record longer than --pad-to is an error unless --truncate
expect_rc 1 "$CLI" read --no-shuffle --pad-to 16 "$M"; expect_err "pad_to"
expect_rc 0 "$CLI" read --no-shuffle --pad-to 16 --truncate --digest "$M"
grep -q '^records=6000 ' "$T/out" || fail "padded + truncate: $(cat "$T/out")"
expect_rc 0 "$CLI" read --no-shuffle --pad-to 200 --output lines "$M"
cmp -s "$T/out" "$T/in.txt" || fail "padded rows (wide enough) differ from the input"
expect_rc 0 "$CLI" read --no-shuffle --batch-bytes 3000 --output lines "$M"
cmp -s "$T/out" "$T/in.txt" || fail "byte-limited batches differ from the input"

# 6. a corrupt block: earlier batches delivered, then an error naming it
cp -r "$T/ds" "$T/bad"
$PY - "$T/bad/shard-000001.rfs" <<'PYEOF'
import sys
p = sys.argv[1]; b = bytearray(open(p, "rb").read())
b[3 * 4096 + 100] ^= 0x55      # inside an early block's frame (blocks are ~4 KiB compressed)
open(p, "wb").write(bytes(b))
PYEOF
expect_rc 1 "$CLI" read --no-shuffle --batch 1 --output lines "$T/bad/manifest.rfm"
expect_err "shard-000001.rfs"
expect_err "block "
n=$(wc -l <"$T/out")
[ "$n" -gt 0 ] && [ "$n" -lt 6000 ] || fail "corrupt run delivered $n records"
head -n "$n" "$T/in.txt" | cmp -s - "$T/out" || fail "records before the corrupt block differ"

# 7. bench --json on given shards
"$CLI" bench --json --step-ms 0 "$M" >"$T/bench.json"
$PY - "$T/bench.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
for k in ("decoded_bytes_per_s", "records_per_s", "batches_per_s", "consumer_wait_fraction",
          "queue_empty_fraction", "queue_full_fraction", "depth_batches", "budget_bytes",
          "rss_peak_bytes"):
    assert k in d, k
assert d["records"] == 6000, d["records"]
assert 0 <= d["consumer_wait_fraction"] <= 1
assert d["rss_peak_bytes"] > 0
PYEOF
echo "cli_read: ok"
