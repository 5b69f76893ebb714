#!/usr/bin/env bash
# cli_tfrecord.sh - TFRecord files through the format seam, written by the
# reference writer (tests/tfrecord_write.py: tf.train.Example from
# TensorFlow's protos compiled by protoc, TensorFlow's framing): every
# Example read back field for field (bytes_list, int64_list, float_list in
# the documented encodings), with and without a DALI tfrecord2idx index,
# from .tfrecord.gz and .tfrecord.zlib, raw records (--tfrecord-raw); a
# flipped byte named by record and CRC; a lying index caught naming the
# record and its offset; records that are not Examples refused naming the
# record; a shuffled order independent of threads, depth and budget; resume
# after every batch exact; ranks equal and disjoint; `ringfeed index`
# writing DALI's index byte for byte; inspect and verify. The same digests
# over nginx and s3rver: cli_tfrecord_http.sh. Counts and digests only.
set -euo pipefail
src=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/tests/servers.inc.sh"
. "$src/tests/check.inc.sh"
cli=${RF_CLI:?RF_CLI must name the ringfeed binary}
PY=/usr/bin/python3
if ! command -v protoc >/dev/null || ! $PY -c "import google.protobuf, crcmod" 2>/dev/null; then
	echo "SKIP: protoc, python3-protobuf or python3-crcmod missing (scripts/deps.sh --test)" >&2
	exit $RF_SKIP
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-tfr.XXXXXX")
rf_at_exit "rm -rf '$tmp'"
W() { $PY "$src/tests/tfrecord_write.py" "$@"; }
W "$tmp/idx" --shards 3 --records 40 --seed 3 --image-bytes 60000 --index --expect "$tmp/expect.json"
mkdir -p "$tmp/plain"
cp "$tmp"/idx/*.tfrecord "$tmp/plain/"
# the same files compressed (a writer's run orders each Example's map anew)
mkdir -p "$tmp/gz" "$tmp/zlib"
for f in "$tmp"/plain/*.tfrecord; do
	b=$(basename "$f")
	gzip -c "$f" >"$tmp/gz/$b.gz"
	$PY -c "import sys, zlib; sys.stdout.buffer.write(zlib.compress(open(sys.argv[1], 'rb').read()))" \
		"$f" >"$tmp/zlib/$b.zlib"
done
W "$tmp/raw" --shards 2 --records 50 --seed 4 --image-bytes 3000 --raw --expect "$tmp/raw.json"

# field for field, in file order: keys, every feature's bytes
check_fields() { # DIR EXPECT [FLAGS...]
	local d=$1 e=$2
	shift 2
	"$cli" read --no-shuffle --batch 7 "$@" --output tar "$d" >"$tmp/out.tar" || return 1
	$PY - "$tmp/out.tar" "$e" <<'PYEOF'
import json, sys, tarfile
want = json.load(open(sys.argv[2]))
got = {}
order = []
with tarfile.open(sys.argv[1]) as t:
    for m in t:
        key, field = m.name.split(".", 1)
        if key not in got:
            got[key] = {}
            order.append(key)
        got[key][field] = t.extractfile(m).read().hex()
assert order == [w["key"] for w in want], (order[:3], [w["key"] for w in want][:3])
for w in want:
    assert got[w["key"]] == w["fields"], (w["key"], sorted(got[w["key"]]), sorted(w["fields"]))
PYEOF
}
check_fields "$tmp/plain" "$tmp/expect.json" && ok "Examples read back field for field (frames walked)" ||
	bad "Examples field for field (no index)"
check_fields "$tmp/idx" "$tmp/expect.json" && ok "Examples field for field with tfrecord2idx indexes" ||
	bad "Examples field for field (index)"
check_fields "$tmp/gz" "$tmp/expect.json" && ok "Examples field for field from .tfrecord.gz" ||
	bad "Examples field for field (gzip)"
check_fields "$tmp/zlib" "$tmp/expect.json" && ok "Examples field for field from .tfrecord.zlib" ||
	bad "Examples field for field (zlib)"
check_fields "$tmp/raw" "$tmp/raw.json" --tfrecord-raw && ok "raw records (--tfrecord-raw) byte for byte" ||
	bad "raw records"

ns() { "$cli" read --digest --no-shuffle --batch 8 "$@" | tail -n 1; }
want=$(ns "$tmp/plain")
case $want in records=120*digest=*) ok "digest: $want" ;; *) bad "plain read: '$want'" ;; esac
same "with indexes: the same records" "$want" "$(ns "$tmp/idx")"
same "gzip: the same records" "$want" "$(ns "$tmp/gz")"
same "zlib: the same records" "$want" "$(ns "$tmp/zlib")"

# a .tfrecord.gz / .zlib decoding past 32 MiB (the three files' frames five
# times over: 36 MB, 600 records) reads through sequential units: the open
# inflates it once in bounded memory, units are compressed ranges between
# its checkpoints, decoded in order through one inflate state
mkdir -p "$tmp/big" "$tmp/biggz" "$tmp/bigz" "$tmp/bad"
for i in 1 2 3 4 5; do cat "$tmp"/plain/*.tfrecord; done >"$tmp/big/big.tfrecord"
gzip -1 -c "$tmp/big/big.tfrecord" >"$tmp/biggz/big.tfrecord.gz"
$PY -c "import sys, zlib; sys.stdout.buffer.write(zlib.compress(open(sys.argv[1], 'rb').read(), 1))" \
	"$tmp/big/big.tfrecord" >"$tmp/bigz/big.tfrecord.zlib"
bigns=$(ns "$tmp/big")
case $bigns in records=600*digest=*) ok "a 36 MB file: $bigns" ;; *) bad "big plain read: '$bigns'" ;; esac
same "a 36 MB .tfrecord.gz: the same records" "$bigns" \
	"$(ns --budget 32MiB --stats "$tmp/biggz.json" "$tmp/biggz")"
peak=$(rf_json "$tmp/biggz.json" mem_peak_total_bytes)
[ "$peak" -lt 33554432 ] && ok "  within a 32 MiB budget (peak $peak bytes)" || bad "big gzip peak $peak"
same "a 36 MB .tfrecord.zlib: the same records" "$bigns" "$(ns "$tmp/bigz")"
bsh() { "$cli" read --digest --seed 5 --batch 8 "$@" "$tmp/biggz" | tail -n 1; }
bbase=$(bsh --threads 1 --depth 1)
same "a 36 MB .tfrecord.gz shuffled: threads 3, depth 6" "$bbase" "$(bsh --threads 3 --depth 6)"
bo=(--no-shuffle --batch 8 --output tar)
"$cli" read "${bo[@]}" "$tmp/biggz" | tar tf - >"$tmp/bfull.names"
"$cli" read "${bo[@]}" --stop-after 40 --save-state "$tmp/bst" "$tmp/biggz" | tar tf - >"$tmp/bhead.names"
"$cli" read "${bo[@]}" --resume "$tmp/bst" --stats "$tmp/bres.json" "$tmp/biggz" |
	tar tf - >"$tmp/btail.names"
cat "$tmp/bhead.names" "$tmp/btail.names" | cmp -s - "$tmp/bfull.names" &&
	ok "  resume after batch 40 exact (re-decoded $(rf_json "$tmp/bres.json" stream_skipped_bytes) bytes)" ||
	bad "big gzip resume differs"
: >"$tmp/branks"
for r in 0 1; do
	"$cli" read --seed 5 --batch 8 --world 2 --rank $r --output tar "$tmp/biggz" | tar tf - |
		sed 's/\..*$//' | uniq >>"$tmp/branks"
done
same "  ranks 0 and 1: 600 records, none twice" "600 600" \
	"$(wc -l <"$tmp/branks") $(sort -u "$tmp/branks" | wc -l)"
"$cli" verify "$tmp/biggz" >"$tmp/bverify.out" 2>&1 && grep -q "0 damaged" "$tmp/bverify.out" &&
	ok "  verify decodes it" || bad "verify of the big gzip: $(cat "$tmp/bverify.out")"
cp "$tmp/biggz/big.tfrecord.gz" "$tmp/bad/flip.tfrecord.gz" # a byte mid-stream
gsz=$(stat -c %s "$tmp/bad/flip.tfrecord.gz")
printf '\x55' | dd of="$tmp/bad/flip.tfrecord.gz" bs=1 seek=$((gsz / 2)) conv=notrunc 2>/dev/null

sh() { "$cli" read --digest --seed 5 --batch 8 "$@" | tail -n 1; }
base=$(sh "$tmp/plain")
for v in "--threads 1 --depth 1" "--threads 3 --depth 6" "--budget 48MiB"; do
	same "shuffled, $v" "$base" "$(sh $v "$tmp/plain")"
done
same "shuffled, with indexes" "$base" "$(sh "$tmp/idx")"

"$cli" read --seed 5 --batch 9 --output tar "$tmp/idx" | tar tf - >"$tmp/full.names"
nb=$(( (120 + 8) / 9 ))
for ((k = 1; k < nb; k++)); do
	"$cli" read --seed 5 --batch 9 --output tar --stop-after "$k" --save-state "$tmp/st" \
		"$tmp/idx" | tar tf - >"$tmp/head.names"
	"$cli" read --seed 5 --batch 9 --output tar --resume "$tmp/st" "$tmp/idx" |
		tar tf - >"$tmp/tail.names"
	cat "$tmp/head.names" "$tmp/tail.names" | cmp -s - "$tmp/full.names" || bad "resume after batch $k differs"
done
ok "resume after each of $((nb - 1)) batches checked"
: >"$tmp/ranks"
for r in 0 1 2; do
	"$cli" read --seed 5 --batch 4 --world 3 --rank $r --output tar "$tmp/plain" | tar tf - |
		sed 's/\..*$//' | uniq >"$tmp/rank$r"
	same "rank $r: 40 records" 40 "$(wc -l <"$tmp/rank$r")"
	cat "$tmp/rank$r" >>"$tmp/ranks"
done
same "ranks disjoint, none lost" 120 "$(sort -u "$tmp/ranks" | wc -l)"

# ringfeed index writes DALI's tfrecord2idx files byte for byte
mkdir -p "$tmp/ix"
cp "$tmp"/plain/*.tfrecord "$tmp/ix/"
"$cli" index "$tmp/ix" >"$tmp/index.out" 2>&1 || bad "ringfeed index: $(cat "$tmp/index.out")"
for s in 0 1 2; do
	cmp -s "$tmp/ix/train-0000$s.idx" "$tmp/idx/train-0000$s.idx" ||
		bad "ringfeed index train-0000$s.idx differs from tfrecord2idx's"
done
ok "ringfeed index writes tfrecord2idx files"
"$cli" index --check "$tmp/ix" >/dev/null 2>&1 && ok "index --check passes fresh indexes" ||
	bad "index --check of fresh indexes"

"$cli" inspect "$tmp/plain/train-00000.tfrecord" >"$tmp/inspect.out" 2>&1 ||
	bad "inspect: $(cat "$tmp/inspect.out")"
grep -q "^samples  *40$" "$tmp/inspect.out" &&
	grep -q "^field image/class/label 40 present (0 absent), 320 bytes, largest 8$" "$tmp/inspect.out" &&
	ok "inspect a .tfrecord: its samples and fields" || bad "inspect: $(cat "$tmp/inspect.out")"
if "$cli" verify "$tmp/gz" >"$tmp/verify.out" 2>&1 && grep -q "0 damaged" "$tmp/verify.out"; then
	ok "verify decodes .tfrecord.gz"
else
	bad "verify of .tfrecord.gz: $(cat "$tmp/verify.out")"
fi

# Python's field views: image/encoded's bytes, the label as one int64 per
# sample (Field.array), bbox floats and the id triple, in file order
build=${RF_BUILD_DIR:-}
if [ -n "$build" ] && [ -e "$build/libringfeed.so" ] &&
	! grep -q '^RF_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null &&
	$PY -c 'import numpy' 2>/dev/null; then
	RINGFEED_LIBRARY=$build/libringfeed.so PYTHONPATH=$src/python $PY - "$tmp/plain" \
		"$tmp/expect.json" <<'PYEOF' && ok "Python field views of Examples" || bad "Python field views"
import json, struct, sys
import numpy as np
import ringfeed
want = json.load(open(sys.argv[2]))
i = 0
with ringfeed.Loader(sys.argv[1], batch=16, budget="64MiB", shuffle=False) as L:
    for b in L:
        labels = b["image/class/label"].array("int64")
        ids = b["image/id"]
        for j in range(len(labels)):
            w = want[i]["fields"]
            assert labels[j] == struct.unpack("<q", bytes.fromhex(w["image/class/label"]))[0]
            assert bytes(b["image/encoded"].view(j)) == bytes.fromhex(w["image/encoded"])
            assert bytes(b["image/object/bbox"].view(j)) == bytes.fromhex(w["image/object/bbox"])
            assert list(np.frombuffer(ids.view(j), "<i8")) == list(
                struct.unpack("<3q", bytes.fromhex(w["image/id"])))
            i += 1
assert i == len(want), i
PYEOF
else
	echo "skip Python field views (no plain build's libringfeed.so or numpy)"
fi

# hostile files: each error names the shard, the record and what was wrong
mkdir -p "$tmp/bad"
f=$tmp/plain/train-00001.tfrecord
expect_fail() { # FILE [--tfrecord-raw] WORDS...
	local f=$1 w raw=()
	shift
	[ "$1" = --tfrecord-raw ] && raw=(--tfrecord-raw) && shift
	if "$cli" read --digest "${raw[@]}" "$f" >/dev/null 2>"$tmp/err"; then
		bad "$f was read"
		return
	fi
	for w in "$@"; do
		grep -q -- "$w" "$tmp/err" || {
			bad "$f: error lacks '$w': $(cat "$tmp/err")"
			return
		}
	done
	ok "refused $(basename "$f"): $(head -c 200 "$tmp/err")"
}
off=$($PY -c "print(sum(int(l.split()[1]) for l in open('$tmp/idx/train-00001.idx').readlines()[:5]))")
cp "$f" "$tmp/bad/data.tfrecord" # a data byte of record 5
printf '\x55' | dd of="$tmp/bad/data.tfrecord" bs=1 seek=$((off + 400)) conv=notrunc 2>/dev/null
expect_fail "$tmp/bad/data.tfrecord" "data.tfrecord" "record 5 (frame at byte $off)" "data's CRC"
cp "$f" "$tmp/bad/len.tfrecord" # a length byte of record 5
printf '\x01' | dd of="$tmp/bad/len.tfrecord" bs=1 seek=$((off + 6)) conv=notrunc 2>/dev/null
expect_fail "$tmp/bad/len.tfrecord" "len.tfrecord" "record 5 (frame at byte $off)" "length's CRC"
mkdir -p "$tmp/lie"
cp "$f" "$tmp/lie/a.tfrecord"
cp "$f" "$tmp/lie/b.tfrecord"
cp "$f" "$tmp/lie/c.tfrecord"
$PY - "$tmp/idx/train-00001.idx" "$tmp/lie" <<'PYEOF'
import sys
L = [tuple(map(int, l.split())) for l in open(sys.argv[1])]
d = sys.argv[2]
# a: record 5's offset wrong; b: records 5 and 6 one entry (self-consistent);
# c: one record fewer than the file holds
a = list(L); a[5] = (a[5][0] + 8, a[5][1])
open(f"{d}/a.idx", "w").write("".join("%d %d\n" % e for e in a))
b = L[:5] + [(L[5][0], L[5][1] + L[6][1])] + L[7:]
open(f"{d}/b.idx", "w").write("".join("%d %d\n" % e for e in b))
open(f"{d}/c.idx", "w").write("".join("%d %d\n" % e for e in L[:-1]))
PYEOF
aoff=$(sed -n 6p "$tmp/lie/a.idx" | cut -d' ' -f1)
expect_fail "$tmp/lie/a.tfrecord" "index $tmp/lie/a.idx" "line 6: record 5 at offset $aoff" "stale or wrong"
expect_fail "$tmp/lie/b.tfrecord" "index $tmp/lie/b.idx: record 5 at offset $off" "stale or wrong"
expect_fail "$tmp/lie/b.tfrecord" --tfrecord-raw "record 5 (frame at byte $off)" "index file is stale or wrong"
expect_fail "$tmp/lie/c.tfrecord" "index $tmp/lie/c.idx" "stale"
cp "$tmp/raw/train-00000.tfrecord" "$tmp/bad/notex.tfrecord"
expect_fail "$tmp/bad/notex.tfrecord" "notex.tfrecord" "record 0" "not a tf.train.Example" "tfrecord_raw"
head -c $(($(stat -c %s "$f") - 100)) "$f" >"$tmp/bad/cut.tfrecord"
expect_fail "$tmp/bad/cut.tfrecord" "cut.tfrecord" "record 39" "the file ends at byte"
g=$tmp/gz/train-00000.tfrecord.gz
head -c $(($(stat -c %s "$g") / 2)) "$g" >"$tmp/bad/cut.tfrecord.gz"
expect_fail "$tmp/bad/cut.tfrecord.gz" "cut.tfrecord.gz" "stream ends early"
expect_fail "$tmp/bad/flip.tfrecord.gz" "flip.tfrecord.gz" "(decoded)"
head -c $((gsz / 2)) "$tmp/biggz/big.tfrecord.gz" >"$tmp/bad/bigcut.tfrecord.gz"
expect_fail "$tmp/bad/bigcut.tfrecord.gz" "bigcut.tfrecord.gz" "stream ends early"
printf 'not a tfrecord at all' >"$tmp/bad/junk.tfrecord"
expect_fail "$tmp/bad/junk.tfrecord" "junk.tfrecord" "record 0 (frame at byte 0)" "length's CRC"

rf_checks_done cli_tfrecord
