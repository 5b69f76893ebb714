#!/usr/bin/env bash
# cli_dist.sh - ringfeed read under a world size: --stats gives every rank
# the same epoch_records / epoch_batches (known at open), the ranks' records
# together are the input minus the dropped tail, each once; --save-state of
# one rank resumed on another world delivers the rest; --skip-blocks leaves a
# damaged block out (reported on stderr: shard, block, records, position)
# and delivers every other record, without it the stream stops.
set -euo pipefail
CLI=${RF_CLI:?set RF_CLI to the ringfeed binary}
PY=/usr/bin/python3
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-dist-XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

$PY - "$T/in.txt" <<'PYEOF'
import random, sys
random.seed(5)
with open(sys.argv[1], "w") as f:
    for i in range(3001):   # uneven blocks: some records fill a block alone
        n = 9000 if i % 13 == 5 else i % 40
        f.write("r%d:%s\n" % (i, "".join(random.choices("abcdefgh", k=n))))
PYEOF
"$CLI" pack --from lines "$T/in.txt" -o "$T/ds" --block-size 8KiB --shard-size 64KiB >/dev/null
M=$T/ds/manifest.rfm

# equal counts on 5 ranks; union = input minus the 3001 % 5 = 1 dropped
for r in 0 1 2 3 4; do
	"$CLI" read --world 5 --rank $r --batch 32 --output lines --stats "$T/st$r.json" "$M" \
		>"$T/r$r.txt"
	[ "$(wc -l <"$T/r$r.txt")" -eq 600 ] || fail "rank $r: $(wc -l <"$T/r$r.txt") records"
	grep -q '"epoch_records":600,"epoch_batches":19,"epoch_records_dropped":1' "$T/st$r.json" \
		|| fail "rank $r stats: $(grep -o '"epoch_records[^,]*,[^,]*,[^,]*' "$T/st$r.json")"
done
cat "$T"/r?.txt | sort >"$T/all.txt"
[ "$(sort -u "$T/all.txt" | wc -l)" -eq 3000 ] || fail "ranks repeat or miss records"
sort "$T/in.txt" | comm -13 - "$T/all.txt" | grep -q . && fail "a rank delivered a foreign record"

# elastic: rank 0 of 5 saves after 7 batches; 2 ranks take the rest
"$CLI" read --world 5 --rank 0 --batch 32 --stop-after 7 --save-state "$T/state" "$M" >/dev/null
for r in 0 1; do
	"$CLI" read --world 2 --rank $r --batch 50 --resume "$T/state" --output lines "$M" \
		>"$T/e$r.txt"
done
[ "$(wc -l <"$T/e0.txt")" -eq "$(wc -l <"$T/e1.txt")" ] || fail "resumed ranks differ in count"
for r in 0 1 2 3 4; do head -n 224 "$T/r$r.txt"; done | cat - "$T/e0.txt" "$T/e1.txt" \
	| sort >"$T/elastic.txt"
[ "$(sort -u "$T/elastic.txt" | wc -l)" -eq "$(wc -l <"$T/elastic.txt")" ] \
	|| fail "elastic resume repeated a record"
[ "$(wc -l <"$T/elastic.txt")" -ge 2999 ] || fail "elastic resume lost records"

# skip policy: one damaged block
cp -r "$T/ds" "$T/bad"
$PY - "$T/bad/shard-000001.rfs" <<'PYEOF'
import sys
p = sys.argv[1]; b = bytearray(open(p, "rb").read())
b[100] ^= 0x55      # inside block 0's frame
open(p, "wb").write(bytes(b))
PYEOF
set +e
"$CLI" read --no-shuffle --batch 16 --output lines "$T/bad/manifest.rfm" >"$T/nos.txt" 2>"$T/nos.err"
rc=$?
"$CLI" read --no-shuffle --batch 16 --output lines --skip-blocks 1 --trace "$T/trace.jsonl" \
	"$T/bad/manifest.rfm" >"$T/skip.txt" 2>"$T/skip.err"
rc2=$?
set -e
[ "$rc" -eq 1 ] || fail "a damaged block without --skip-blocks: exit $rc"
[ "$rc2" -eq 0 ] || { cat "$T/skip.err" >&2; fail "--skip-blocks 1: exit $rc2"; }
grep -q "skipped shard 1 block 0 ([0-9]* records) at epoch 0 stream position [0-9]*:" \
	"$T/skip.err" || { cat "$T/skip.err" >&2; fail "the skip is not reported on stderr"; }
n=$(grep -o '(\([0-9]*\) records)' "$T/skip.err" | tr -dc 0-9)
tail -n 1 "$T/trace.jsonl" | grep -q '"blocks_skipped":1,"last_skip":{"shard":1,"block":0,' \
	|| fail "the trace does not report the skip: $(tail -n 1 "$T/trace.jsonl")"
[ "$(wc -l <"$T/skip.txt")" -eq $((3001 - n)) ] || fail "skip run delivered $(wc -l <"$T/skip.txt")"
comm -23 <(sort "$T/in.txt") <(sort "$T/skip.txt") | wc -l | grep -qx "$n" \
	|| fail "the skip run misses more than the damaged block"
