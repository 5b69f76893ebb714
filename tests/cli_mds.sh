#!/usr/bin/env bash
# cli_mds.sh - a MosaicML MDS dataset written byte for byte as MDSWriter
# writes it (streaming/base/format/mds/writer.py: columns sorted, config JSON
# with sort_keys, absolute u32 offsets, index.json version 2), one shard
# uncompressed and one zstd-compressed (compression "zstd", zip_data), with
# columns str, bytes, int, float32 and ndarray:uint8: every column of every
# sample reads back equal to what was written, through `read --output tar`
# (the directory and its index.json both name the dataset) and through the
# Python binding (numeric columns as numpy arrays); the same shuffled order
# for any threads; hostile index.json and shards get clear errors.
set -euo pipefail
CLI=${RF_CLI:?set RF_CLI to the ringfeed binary}
BUILD=${RF_BUILD_DIR:?}
SRC=${RF_SOURCE_DIR:?}
PY=/usr/bin/python3
command -v zstd >/dev/null || { echo "SKIP: the zstd tool is not installed"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-mds-XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir -p "$T/mds"
"$PY" - "$T/mds" <<'PYEOF'
import json, os, random, subprocess, sys
import numpy as np
out = sys.argv[1]
columns = {"name": "str", "img": "bytes", "cls": "int", "score": "float32", "pix": "ndarray:uint8"}
names = sorted(columns)
encs = [columns[n] for n in names]
sizes = [{"int": 8, "float32": 4}.get(e) for e in encs]
rng = random.Random(5)

def encode(enc, v):
    if enc == "str": return v.encode("utf-8")
    if enc == "bytes": return v
    if enc == "int": return np.int64(v).tobytes()
    if enc == "float32": return np.float32(v).tobytes()
    if enc == "ndarray:uint8":  # dtype static, shape dynamic: [ndim<<2 | shape dtype][shape][values]
        shape = np.array(v.shape, np.int64)
        sd, si = ("uint8", 0) if shape.max() < 256 else ("uint16", 1)
        return bytes([(len(v.shape) << 2) | si]) + shape.astype(sd).tobytes() + v.tobytes()

def config(compression):
    return {"version": 2, "format": "mds", "compression": compression, "hashes": [],
            "size_limit": 1 << 26, "column_names": names, "column_encodings": encs,
            "column_sizes": sizes}

samples, shards = [], []
for s, compression in enumerate([None, "zstd"]):
    data = []
    for i in range(150):
        v = {"name": f"sample {s}/{i} \u00e9", "img": rng.randbytes(rng.randint(0, 20000)),
             "cls": rng.randint(-2**40, 2**40), "score": rng.random(),
             "pix": np.frombuffer(rng.randbytes(rng.randint(1, 4) * 300), np.uint8).reshape(-1, 300 if i % 2 else 3)}
        samples.append((s, i, v))
        head = [len(encode(e, v[n])) for n, e, z in zip(names, encs, sizes) if z is None]
        data.append(np.array(head, np.uint32).tobytes() + b"".join(encode(e, v[n]) for n, e in zip(names, encs)))
    cfg = json.dumps(config(compression), sort_keys=True).encode("utf-8")
    n = np.uint32(len(data))
    offs = np.array([0] + list(map(len, data))).cumsum().astype(np.uint32)
    offs += len(n.tobytes()) + len(offs.tobytes()) + len(cfg)
    raw = n.tobytes() + offs.tobytes() + cfg + b"".join(data)
    raw_name = f"shard.{s:05}.mds"
    info = {"samples": len(data), "raw_data": {"basename": raw_name, "bytes": len(raw), "hashes": {}}, "zip_data": None}
    open(f"{out}/{raw_name}", "wb").write(raw)
    if compression:
        subprocess.run(["zstd", "-q", "-3", "--rm", f"{out}/{raw_name}", "-o", f"{out}/{raw_name}.zstd"], check=True)
        info["zip_data"] = {"basename": raw_name + ".zstd", "bytes": os.path.getsize(f"{out}/{raw_name}.zstd"), "hashes": {}}
    info.update(config(compression))
    shards.append(info)
json.dump({"version": 2, "shards": shards}, open(f"{out}/index.json", "w"), sort_keys=True)
import pickle
pickle.dump(samples, open(f"{out}/../expect.pkl", "wb"))
PYEOF
ls "$T/mds" | grep -qx shard.00001.mds.zstd || fail "the zstd shard was not written"

check_tar() {
	"$PY" - "$1" "$T/expect.pkl" <<'PYEOF'
import pickle, struct, sys, tarfile
import numpy as np
want = pickle.load(open(sys.argv[2], "rb"))
got = {}
with tarfile.open(sys.argv[1]) as t:
    for m in t:
        key, _, field = m.name.rpartition(".")
        got.setdefault(key, {})[field] = t.extractfile(m).read()
assert len(got) == len(want) == 300, len(got)
for s, i, v in want:
    g = got[f"shard.{s:05}/{i:08d}"]
    assert g["name"].decode("utf-8") == v["name"]
    assert g["img"] == v["img"]
    assert struct.unpack("<q", g["cls"])[0] == v["cls"]
    assert struct.unpack("<f", g["score"])[0] == np.float32(v["score"])
    p = g["pix"]; ndim, sd = p[0] >> 2, p[0] & 3
    shape = np.frombuffer(p[1 : 1 + ndim * (1 << sd)], ["<u1", "<u2", "<u4", "<u8"][sd])
    arr = np.frombuffer(p[1 + ndim * (1 << sd):], np.uint8).reshape(shape)
    assert (arr == v["pix"]).all() and arr.shape == v["pix"].shape
PYEOF
}
"$CLI" read --no-shuffle --output tar "$T/mds" >"$T/out.tar"
check_tar "$T/out.tar" || fail "the MDS dataset (directory) read back differs"
"$CLI" read --output tar --seed 9 "$T/mds/index.json" >"$T/shuf.tar"
check_tar "$T/shuf.tar" || fail "the MDS dataset (index.json, shuffled) read back differs"
echo "ok: every column of 300 samples (uncompressed and zstd shards) equals what MDSWriter's layout holds"

base=$("$CLI" read --digest --seed 2 --batch 7 "$T/mds" | tail -1)
for v in "--threads 1 --depth 1" "--threads 3 --depth 5"; do
	# shellcheck disable=SC2086
	[ "$("$CLI" read --digest --seed 2 --batch 7 $v "$T/mds" | tail -1)" = "$base" ] ||
		fail "MDS shuffled digest differs with $v"
done
echo "ok: one shuffled order for any threads and depth"

if grep -q '^RF_SANITIZE:BOOL=ON' "$BUILD/CMakeCache.txt" 2>/dev/null; then
	# ASan cannot run inside an unsanitized Python (cli_python.sh says the same);
	# the plain build runs this part
	echo "note: the Python binding's part is left to the plain build (sanitizer build)"
else
RINGFEED_LIBRARY="$BUILD/libringfeed.so" PYTHONPATH="$SRC/python" "$PY" - "$T/mds" "$T/expect.pkl" <<'PYEOF' ||
import pickle, sys
import numpy as np
import ringfeed
want = pickle.load(open(sys.argv[2], "rb"))
i = 0
with ringfeed.Loader(sys.argv[1], batch=32, shuffle=False, budget="64MiB") as L:
    for b in L:
        cls = b["cls"].array("<i8")               # a numeric column: one numpy array
        score = b["score"].array("<f4")
        try:
            b["name"].array("<i8")
            raise AssertionError("a str column passed as int64")
        except ValueError:
            pass
        assert len(cls) == b.records and b["cls"].present.all()
        for k in range(b.records):
            assert cls[k] == want[i + k][2]["cls"] and score[k] == np.float32(want[i + k][2]["score"])
        i += b.records
        b.release()
assert i == 300
PYEOF
	fail "the Python binding's numeric MDS columns differ"
echo "ok: numeric MDS columns as numpy arrays through the binding"
fi

# hostile: a basename that is a path, an unknown encoding, offsets that lie
cp -r "$T/mds" "$T/bad1"
"$PY" -c 'import json,sys; p=sys.argv[1]; o=json.load(open(p)); o["shards"][0]["raw_data"]["basename"]="../x.mds"; json.dump(o,open(p,"w"))' "$T/bad1/index.json"
if "$CLI" read --digest "$T/bad1" >/dev/null 2>"$T/err"; then fail "a path as basename was read"; fi
grep -q "index.json: shard 0" "$T/err" && grep -q "one name" "$T/err" || { cat "$T/err"; fail "basename error unclear"; }
cp -r "$T/mds" "$T/bad2"
"$PY" - "$T/bad2/shard.00000.mds" <<'PYEOF'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
struct.pack_into("<I", b, 4 + 4 * 10, 7)   # sample 9 ends at byte 7: before it starts
open(sys.argv[1], "wb").write(b)
PYEOF
if "$CLI" read --digest "$T/bad2" >/dev/null 2>"$T/err"; then fail "lying offsets were read"; fi
grep -q "shard.00000.mds" "$T/err" && grep -q "offset table at byte" "$T/err" || { cat "$T/err"; fail "offset error unclear"; }
echo "ok: hostile index.json and offsets named"

# a 60 MiB index.json whose ignored key holds 20 M empty objects: read in
# bounded memory at --budget 64MiB (jansson built every value: 4.8 GB), and
# the same records as the plain index; values nested past 32 are refused,
# naming the file and the bound
mkdir -p "$T/big"
cp "$T/mds"/shard.* "$T/big/"
"$PY" - "$T/mds/index.json" "$T/big/index.json" <<'PYEOF'
import json, sys
o = json.load(open(sys.argv[1]))
with open(sys.argv[2], "w") as f:
    f.write('{"junk": [')
    chunk = "{}," * (1 << 20)
    for _ in range(20):
        f.write(chunk)
    f.write('{}], ' + json.dumps(o)[1:])
PYEOF
[ "$(stat -c %s "$T/big/index.json")" -gt $((60 << 20)) ] || fail "the big index is not 60 MiB"
"$CLI" read --no-shuffle --digest "$T/mds" >"$T/small.digest"
/usr/bin/time -v "$CLI" read --no-shuffle --digest --budget 64MiB "$T/big" >"$T/big.digest" 2>"$T/time" ||
	{ cat "$T/time"; fail "the big index.json was not read"; }
cmp -s "$T/small.digest" "$T/big.digest" || fail "the big index.json read other records"
rss_kb=$(awk -F: '/Maximum resident set size/ {print $2 + 0}' "$T/time")
# a sanitizer build's shadow memory and quarantine take more; the bound
# still tells kilobytes per value (GBs) from a window
limit_mib=40
grep -q '^RF_SANITIZE:BOOL=ON' "$BUILD/CMakeCache.txt" 2>/dev/null && limit_mib=256
[ -n "$rss_kb" ] && [ "$rss_kb" -lt $((limit_mib << 10)) ] ||
	fail "reading a 60 MiB index.json took ${rss_kb} KiB (more than $limit_mib MiB) at --budget 64MiB"
"$PY" - "$T/mds/index.json" "$T/big/index.json" <<'PYEOF'
import json, sys
o = json.load(open(sys.argv[1]))
open(sys.argv[2], "w").write('{"junk": ' + "[" * 33 + "]" * 33 + ", " + json.dumps(o)[1:])
PYEOF
if "$CLI" read --digest "$T/big" >/dev/null 2>"$T/err"; then fail "an index nested 33 deep was read"; fi
grep -q "$T/big/index.json: at byte 41: values nest more than 32 deep" "$T/err" ||
	{ cat "$T/err"; fail "the nesting bound's error is unclear"; }
echo "ok: a 60 MiB index.json read in ${rss_kb} KiB at --budget 64MiB; nesting bounded"

# verify: the sound dataset is sound; a sample whose column size runs past it
# is named (a check only a full decode makes)
"$CLI" verify "$T/mds" >"$T/verify.out" 2>&1 || { cat "$T/verify.out"; fail "verify of the MDS dataset failed"; }
grep -q "verify: 2 shards, 0 damaged" "$T/verify.out" || { cat "$T/verify.out"; fail "verify summary"; }
cp -r "$T/mds" "$T/bad3"
"$PY" - "$T/bad3/shard.00000.mds" <<'PYEOF'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
first = struct.unpack_from("<I", b, 4 + 4 * 5)[0]   # sample 5's first byte: its img size
struct.pack_into("<I", b, first, 1 << 30)
open(sys.argv[1], "wb").write(b)
PYEOF
if "$CLI" verify "$T/bad3" >"$T/verify.out" 2>&1; then fail "verify passed a lying column size"; fi
grep -q "DAMAGED $T/bad3/shard.00000.mds" "$T/verify.out" && grep -q "column 'img'" "$T/verify.out" ||
	{ cat "$T/verify.out"; fail "verify of a lying column size unclear"; }
echo "ok: verify checks MDS offsets and column sizes"
