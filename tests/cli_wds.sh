#!/usr/bin/env bash
# cli_wds.sh - `ringfeed read --output tar`: the delivered records as a
# WebDataset tar stream that Python's tarfile reads back. An .rfs record
# becomes POSITION.bin (or POSITION.FIELD with --tar-field), in delivery
# order, with its bytes; long names get PAX headers.
set -euo pipefail
CLI=${RF_CLI:?set RF_CLI to the ringfeed binary}
PY=/usr/bin/python3
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-wds-XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# .rfs records as POSITION.bin members, in delivery order, bytes intact
seq 1 500 | awk '{ s = "r" $1 "-"; for (i = 0; i < $1 % 37; i++) s = s "x"; print s }' >"$T/in.txt"
"$CLI" pack --from lines "$T/in.txt" -o "$T/rfs" --block-size 4KiB >/dev/null
"$CLI" read --no-shuffle --output tar "$T/rfs" >"$T/rfs.tar"
"$PY" - "$T/rfs.tar" "$T/in.txt" <<'PYEOF' || fail "--output tar of .rfs records"
import sys, tarfile
want = open(sys.argv[2], "rb").read().split(b"\n")[:-1]
with tarfile.open(sys.argv[1]) as t:
    got = [(m.name, t.extractfile(m).read()) for m in t]
assert [n for n, _ in got] == ["%09d.bin" % i for i in range(len(want))], got[:3]
assert [b for _, b in got] == want
PYEOF
"$CLI" read --no-shuffle --output tar --tar-field txt "$T/rfs" >"$T/txt.tar"
[ "$(tar tf "$T/txt.tar" | sed -n 1p)" = 000000000.txt ] || fail "--tar-field txt"
# the shuffled stream gives the same members, in another order
"$CLI" read --output tar "$T/rfs" | tar tf - | sort >"$T/shuf.names"
tar tf "$T/rfs.tar" | sort | cmp -s - "$T/shuf.names" || fail "shuffled --output tar lost members"
if "$CLI" read --output tar --tar-field a.b "$T/rfs" >/dev/null 2>"$T/err"; then
	fail "--tar-field a.b accepted"
fi
grep -q -- "--tar-field" "$T/err" || fail "--tar-field error unclear"
echo "ok: --output tar of .rfs records (POSITION.bin, --tar-field)"

# ---------------------------------------------------------------- WebDataset
# A dataset written with Python's tarfile as webdataset users write one:
# several fields per sample, a sample missing a field, names needing GNU and
# PAX long-name headers, __meta__ members, an empty member, an uppercase
# extension (fields are lowercased), directories and dot-files (skipped).
mkdir -p "$T/wds"
"$PY" - "$T/wds" <<'PYEOF'
import io, json, os, random, sys, tarfile
rng = random.Random(7)
out = sys.argv[1]
expect = []
def add(t, name, data):
    ti = tarfile.TarInfo(name); ti.size = len(data); ti.mtime = 0
    t.addfile(ti, io.BytesIO(data))
for s, fmt in enumerate([tarfile.GNU_FORMAT, tarfile.PAX_FORMAT, tarfile.USTAR_FORMAT]):
    with tarfile.open(f"{out}/shard-{s:03d}.tar", "w", format=fmt) as t:
        add(t, "__meta__", b"shard metadata")
        d = tarfile.TarInfo("train"); d.type = tarfile.DIRTYPE; t.addfile(d)
        for i in range(40):
            key = f"train/{s:03d}{i:05d}"
            if i == 3 and fmt != tarfile.USTAR_FORMAT:
                key = "train/" + "long" * 40 + f"{s}{i}"  # > 100 bytes: L or PAX
            fields = {"jpg": rng.randbytes(rng.randint(1000, 90000)),
                      "cls": str(i % 10).encode(),
                      "json": json.dumps({"i": i, "s": s}).encode()}
            if i % 7 == 5:
                del fields["cls"]          # a sample missing a field
            if i == 11:
                fields["json"] = b""       # one empty member, present
            for ext, data in fields.items():
                add(t, f"{key}.{'JPG' if ext == 'jpg' and i == 9 else ext}", data)
            if i == 20:
                add(t, "train/.DS_Store", b"x")
            expect.append((key, fields))
json.dump([[k, {e: v.hex() for e, v in f.items()}] for k, f in expect], open(f"{out}/../expect.json", "w"))
PYEOF
# the samples back, one by one, in shard order: keys, fields, bytes; absent
# cls stays absent; --output tar round-trips names and bytes
"$CLI" read --no-shuffle --output tar --batch 7 "$T/wds" >"$T/wds-out.tar"
"$PY" - "$T/wds-out.tar" "$T/expect.json" <<'PYEOF' || fail "--no-shuffle --output tar of the WebDataset"
import json, sys, tarfile
want = json.load(open(sys.argv[2]))
got = []
with tarfile.open(sys.argv[1]) as t:
    for m in t:
        key, _, ext = m.name.rpartition(".")
        data = t.extractfile(m).read()
        if got and got[-1][0] == key:
            assert ext not in got[-1][1], m.name
            got[-1][1][ext] = data.hex()
        else:
            got.append([key, {ext: data.hex()}])
assert len(got) == len(want) == 120, (len(got), len(want))
for (gk, gf), (wk, wf) in zip(got, want):
    assert gk == wk, (gk, wk)
    assert gf == wf, (gk, sorted(gf), sorted(wf))
PYEOF
echo "ok: a tarfile-written WebDataset reads back sample by sample (GNU/PAX/ustar, absent and empty fields)"

digest() { "$CLI" read --digest "$@" | tail -1; }
base=$(digest --seed 3 --batch 5 "$T/wds")
for v in "--threads 1 --depth 1" "--threads 3 --depth 6" "--budget 24MiB --threads 2" "--request-size 64KiB"; do
	# shellcheck disable=SC2086
	[ "$(digest --seed 3 --batch 5 $v "$T/wds")" = "$base" ] || fail "shuffled digest differs with $v"
done
[ "$(digest --seed 4 --batch 5 "$T/wds")" != "$base" ] || fail "another seed gives the same order"
echo "ok: shuffled samples in one order for any threads, depth, budget, request size"

# resume after every batch: the rest equals the uninterrupted run
"$CLI" read --seed 3 --batch 9 --output tar "$T/wds" | tar tf - >"$T/full.names"
batches=$(( (120 + 8) / 9 ))
for k in $(seq 1 $((batches - 1))); do
	"$CLI" read --seed 3 --batch 9 --output tar --stop-after "$k" --save-state "$T/st" "$T/wds" |
		tar tf - >"$T/head.names"
	"$CLI" read --seed 3 --batch 9 --output tar --resume "$T/st" "$T/wds" | tar tf - >"$T/tail.names"
	cat "$T/head.names" "$T/tail.names" | cmp -s - "$T/full.names" || fail "resume after batch $k differs"
done
echo "ok: resume after each of $((batches - 1)) batches continues exactly"

# ranks: equal counts, disjoint, together the whole (minus the tail drop)
: >"$T/ranks.names"
for r in 0 1 2; do
	"$CLI" read --seed 3 --batch 4 --world 3 --rank "$r" --output tar "$T/wds" | tar tf - |
		sed 's/\.[^.]*$//' | uniq >"$T/rank$r.keys"
	[ "$(wc -l <"$T/rank$r.keys")" = 40 ] || fail "rank $r got $(wc -l <"$T/rank$r.keys") samples, not 40"
	cat "$T/rank$r.keys" >>"$T/ranks.names"
done
[ "$(sort "$T/ranks.names" | uniq | wc -l)" = 120 ] || fail "ranks overlap or lose samples"
echo "ok: 3 ranks take 40 samples each, disjoint"

# hostile tars: clear errors naming the shard, member and byte
mkdir -p "$T/bad"
"$PY" - "$T/bad" <<'PYEOF'
import io, sys, tarfile
d = sys.argv[1]
def tar(name, members):
    with tarfile.open(f"{d}/{name}", "w", format=tarfile.GNU_FORMAT) as t:
        for n, b in members:
            ti = tarfile.TarInfo(n); ti.size = len(b); t.addfile(ti, io.BytesIO(b))
tar("dup.tar", [("a.jpg", b"1"), ("a.JPG", b"2")])
tar("sum.tar", [("a.jpg", b"1"), ("b.jpg", b"2")])
b = bytearray(open(f"{d}/sum.tar", "rb").read()); b[1024 + 5] ^= 1
open(f"{d}/sum.tar", "wb").write(b)
tar("cut.tar", [("a.jpg", b"x" * 5000)])
b = open(f"{d}/cut.tar", "rb").read()[:2048]
open(f"{d}/cut.tar", "wb").write(b)
PYEOF
expect_fail() {
	if "$CLI" read --digest "$1" >/dev/null 2>"$T/err"; then fail "$1 was read"; fi
	for w in "${@:2}"; do grep -q -- "$w" "$T/err" || { cat "$T/err" >&2; fail "$1: error lacks '$w'"; }; done
}
expect_fail "$T/bad/dup.tar" "dup.tar" "member 'a.JPG' at byte 1024 repeats field 'jpg' of sample 'a'"
expect_fail "$T/bad/sum.tar" "sum.tar" "header at byte 1024" "checksum"
expect_fail "$T/bad/cut.tar" "cut.tar" "member at byte 0" "runs past the end"
echo "ok: hostile tars: repeated field, checksum, size past the end"

# verify: a sound WebDataset is sound; a damaged tar is named with its problem
"$CLI" verify "$T/wds" >"$T/verify.out" 2>&1 || { cat "$T/verify.out"; fail "verify of the WebDataset failed"; }
grep -q "verify: 3 shards, 0 damaged" "$T/verify.out" || { cat "$T/verify.out"; fail "verify summary"; }
if "$CLI" verify "$T/bad/sum.tar" >"$T/verify.out" 2>&1; then fail "verify passed a damaged tar"; fi
grep -q "DAMAGED $T/bad/sum.tar" "$T/verify.out" && grep -q "header at byte 1024" "$T/verify.out" ||
	{ cat "$T/verify.out"; fail "verify of a damaged tar unclear"; }
echo "ok: verify checks tar shards (header checksums, sizes) through the format"

# inspect: samples, and per field the samples that have it
"$CLI" inspect "$T/wds/shard-000.tar" >"$T/inspect.out" || fail "inspect of a tar shard failed"
grep -q "^samples           40$" "$T/inspect.out" && grep -q "^field cls         35 present (5 absent)" "$T/inspect.out" ||
	{ cat "$T/inspect.out"; fail "inspect of a tar shard: counts"; }
"$CLI" inspect --json "$T/wds/shard-001.tar" | "$PY" -c '
import json, sys
o = json.load(sys.stdin)
f = {x["name"]: x for x in o["fields"]}
assert o["samples"] == 40 and f["jpg"]["present"] == 40 and f["json"]["present"] == 40, o
assert f["cls"]["present"] == 35 and f["cls"]["largest_bytes"] == 1, o' || fail "inspect --json of a tar shard"
echo "ok: inspect counts samples and fields of a tar shard"

# elastic resume: 2 ranks take 3 batches each, the state resumes 3 ranks;
# together every sample exactly once
: >"$T/elastic.keys"
for r in 0 1; do
	"$CLI" read --seed 3 --batch 4 --world 2 --rank $r --stop-after 3 --save-state "$T/el$r" \
		--output tar "$T/wds" | tar tf - | sed 's/\.[^.]*$//' | uniq >>"$T/elastic.keys"
done
for r in 0 1 2; do
	"$CLI" read --seed 3 --batch 4 --world 3 --rank $r --resume "$T/el0" --output tar "$T/wds" |
		tar tf - | sed 's/\.[^.]*$//' | uniq >>"$T/elastic.keys"
done
[ "$(wc -l <"$T/elastic.keys")" = 120 ] && [ "$(sort -u "$T/elastic.keys" | wc -l)" = 120 ] ||
	fail "elastic resume 2 -> 3 ranks: $(wc -l <"$T/elastic.keys") samples, $(sort -u "$T/elastic.keys" | wc -l) distinct"
echo "ok: elastic resume from 2 to 3 ranks: every sample once"
