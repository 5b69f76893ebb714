#!/usr/bin/env bash
# cli_parquet.sh - Parquet files written by the two reference writers
# (DuckDB and arrow-rs through parquet-wasm: every codec, PLAIN,
# dictionaries, DELTA_*, BYTE_STREAM_SPLIT, data pages v1 and v2, nulls,
# empty strings, empty lists, one row, no rows; tests/parquet_gen.mjs) read
# through `ringfeed read --output tar`: every field of every row equals
# DuckDB's own read of the file (tests/parquet_check.py), with all columns
# and with column subsets (units with gaps between them); the shuffled order
# does not depend on the threads; resume after a batch is exact; hostile
# files get clear errors naming the file.
set -euo pipefail
CLI=${RF_CLI:?set RF_CLI to the ringfeed binary}
SRC=${RF_SOURCE_DIR:?}
PY=/usr/bin/python3
NPM=$SRC/.cache/npm/node_modules
if [ ! -d "$NPM/parquet-wasm" ] || [ ! -d "$NPM/@duckdb/node-api" ]; then
	echo "SKIP: the reference writers are not installed (scripts/deps.sh --test)"
	exit 77
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-parquet-XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir -p "$T/gen" "$T/d"
cp "$SRC/tests/parquet_gen.mjs" "$T/gen/"
ln -s "$NPM" "$T/gen/node_modules"
node "$T/gen/parquet_gen.mjs" "$T/d" >/dev/null

n=0
for f in "$T"/d/*.parquet; do
	"$PY" "$SRC/tests/parquet_check.py" "$CLI" "$f" || fail "$(basename "$f") differs from DuckDB"
	n=$((n + 1))
done
[ "$n" -ge 14 ] || fail "only $n files written"
for cols in text,li s,li id,s big bl,b,ll; do
	"$PY" "$SRC/tests/parquet_check.py" "$CLI" "$T/d/duck_zstd.parquet" --columns "$cols" ||
		fail "columns $cols"
done
"$PY" "$SRC/tests/parquet_check.py" "$CLI" "$T/d/arrow_lz4_small_pages.parquet" --columns s,f ||
	fail "columns s,f of arrow-rs's many row groups"

# verify decodes every row group and checks the records against the layout
out=$("$CLI" verify "$T"/d/*.parquet 2>&1) || fail "verify: $out"
echo "$out" | grep -q "verify: $n shards, 0 damaged" || fail "verify: $out"

# the shuffled order does not depend on the threads
d1=$("$CLI" read --digest --threads 1 "$T"/d/duck_*.parquet | tail -1)
d4=$("$CLI" read --digest --threads 4 --depth 3 "$T"/d/duck_*.parquet | tail -1)
[ "$d1" = "$d4" ] || fail "threads change the order: $d1 / $d4"
# a directory of .parquet files is a dataset
dd=$("$CLI" read --digest --threads 2 "$T/d" | tail -1)
case "$dd" in records=*) ;; *) fail "directory: $dd" ;; esac

# resume after every batch gives the rest exactly
full=$("$CLI" read --output raw --batch 1000 "$T/d/duck_snappy.parquet" | sha256sum)
for k in 1 2 3 4; do
	"$CLI" read --output raw --batch 1000 --stop-after $k --save-state "$T/st" \
		"$T/d/duck_snappy.parquet" >"$T/a"
	"$CLI" read --output raw --batch 1000 --resume "$T/st" "$T/d/duck_snappy.parquet" >"$T/b"
	[ "$(cat "$T/a" "$T/b" | sha256sum)" = "$full" ] || fail "resume after batch $k"
done

# hostile files: clear errors naming the file, never a crash
cp "$T/d/duck_zstd.parquet" "$T/bad.parquet"
printf 'PAR0' | dd of="$T/bad.parquet" bs=1 seek=$(($(stat -c %s "$T/bad.parquet") - 4)) conv=notrunc 2>/dev/null
out=$("$CLI" read "$T/bad.parquet" 2>&1) && fail "bad magic accepted"
echo "$out" | grep -q "bad.parquet.*not a Parquet file" || fail "bad magic: $out"
head -c 2000 "$T/d/duck_zstd.parquet" >"$T/cut.parquet"
out=$("$CLI" read "$T/cut.parquet" 2>&1) && fail "a cut file accepted"
echo "$out" | grep -q "cut.parquet" || fail "cut file: $out"
"$PY" - "$T/d/duck_gzip.parquet" "$T/flip.parquet" <<'PYEOF'
import sys
d = bytearray(open(sys.argv[1], "rb").read())
d[200] ^= 0x55  # inside the first column chunk's compressed bytes
open(sys.argv[2], "wb").write(d)
PYEOF
out=$("$CLI" read --digest "$T/flip.parquet" 2>&1) && fail "a damaged page accepted: $out"
echo "$out" | grep -q "flip.parquet: row group 0, column id, at byte" || fail "damaged page: $out"
out=$("$CLI" verify "$T/flip.parquet" 2>&1) && fail "verify passed a damaged page: $out"
echo "$out" | grep -q "DAMAGED $T/flip.parquet" || fail "verify of a damaged page: $out"
# a row past the 4 MiB row bound: refused, named
cp "$T/d/big_row.pq" "$T/big_row.parquet"
out=$("$CLI" read --digest "$T/big_row.parquet" 2>&1) && fail "a 5 MB row accepted: $out"
echo "$out" | grep -q "big_row.parquet: row group 0, row 1: 5000008 bytes, more than a row may hold" ||
	fail "a 5 MB row: $out"
# the batch is sized from that bound: batches of 64 rows of a 9 MB row group
# fit a 512 MiB budget
cp "$T/d/wide.pq" "$T/wide.parquet"
"$CLI" read --budget 512MiB --digest "$T/wide.parquet" | grep -q "records=3000 " ||
	fail "wide.parquet in a 512 MiB budget"
out=$("$CLI" read --columns nope "$T/d/duck_zstd.parquet" 2>&1) && fail "an unknown column accepted"
echo "$out" | grep -q 'no column "nope"' || fail "unknown column: $out"

# ranks: equal slices of the shuffled epoch, disjoint, their union the file
# less fewer rows than ranks (row keys from --output tar)
for r in 0 1 2; do
	"$CLI" read --output tar --seed 9 --world 3 --rank $r "$T/d/duck_snappy.parquet" >"$T/rank$r.tar" ||
		fail "rank $r"
done
"$PY" - "$T"/rank?.tar <<'PYEOF' || fail "ranks are not equal, disjoint slices of the rows"
import sys, tarfile
ranks = [{m.name.rsplit(".", 1)[0] for m in tarfile.open(p)} for p in sys.argv[1:]]
sizes = [len(r) for r in ranks]
union = set().union(*ranks)
assert len(set(sizes)) == 1, sizes
assert len(union) == sum(sizes), "a row in two ranks"
assert all(k.startswith("duck_snappy/") and int(k.split("/")[1]) < 5000 for k in union)
assert 5000 - len(union) < 3, len(union)
PYEOF

# Python: every field with its type, in file order, nulls absent (as DuckDB reads them)
build=${RF_BUILD_DIR:-}
if [ -n "$build" ] && [ -e "$build/libringfeed.so" ] &&
	! grep -q '^RF_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null &&
	$PY -c 'import numpy' 2>/dev/null; then
	RINGFEED_LIBRARY=$build/libringfeed.so PYTHONPATH=$SRC/python "$PY" - \
		"$T/d/duck_zstd.parquet" "$T/d/duck_zstd.json" <<'PYEOF' || fail "Python fields"
import json, sys
import numpy as np
import ringfeed
want = json.load(open(sys.argv[2]))
num = {"id": "<i4", "big": "<i8", "f": "<f4", "d": "<f8", "b": "u1"}
lists = {"li": "<i4", "ll": "<i8"}
i = 0
with ringfeed.Loader(sys.argv[1], batch=100, budget="256MiB", shuffle=False) as L:
    for b in L:
        ids = b["id"].array("int32")  # a required column: one int32 a row
        assert ids.dtype == np.int32 and list(ids) == list(range(i, i + len(ids)))
        for j in range(len(ids)):
            w = want[i]
            for col, dt in {**num, **lists}.items():
                v = b[col].view(j)
                if w[col] is None:
                    assert v is None, (i, col)
                    continue
                got = np.frombuffer(v, dt)
                assert got.tobytes() == bytes.fromhex(w[col]), (i, col)
            for col in ("s", "text", "bl"):
                v = b[col].view(j)
                assert (None if v is None else bytes(v).hex()) == w[col], (i, col)
            assert bytes(b["text"].view(j)).decode("utf-8") == bytes.fromhex(w["text"]).decode()
            i += 1
assert i == len(want) == 5000, i
PYEOF
else
	echo "skip Python fields (no plain build's libringfeed.so or numpy)"
fi
echo "cli_parquet: ok ($n files)"
