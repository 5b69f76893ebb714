#!/usr/bin/env bash
# cli_many_shards.sh - a manifest of 20,000 shards (two tiny files, listed
# 10,000 times each) reads to the right digest under `ulimit -n 256`: the file
# source keeps a bounded set of descriptors open (fetch/fdcache.c), opened as
# reads reach a shard, so the shard count is limited by metadata, not by the
# descriptor limit. Before, every shard kept its descriptor from open to
# close and the open failed with "Too many open files".
set -euo pipefail
CLI=${RF_CLI:?set RF_CLI to the ringfeed binary}
PY=/usr/bin/python3
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-many-XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

head -c 800 /dev/urandom >"$T/r.bin"
"$CLI" pack --from fixed:100 "$T/r.bin" -o "$T/ds" --block-size 100 --shard-size 1 >/dev/null
[ "$(grep -c rfs "$T/ds/manifest.rfm")" -ge 2 ] || fail "pack made one shard: $(cat "$T/ds/manifest.rfm")"
# the manifest of 20,000 entries and the digest `read --digest --shuffle 0`
# must print (FNV-1a 64 over each record's u32 LE length and bytes, in order)
want=$($PY - "$T/ds/manifest.rfm" "$T/r.bin" "$T/ds/m20000.rfm" <<'PYEOF'
import struct, sys
lines = open(sys.argv[1]).read().splitlines()[1:]
data = open(sys.argv[2], "rb").read()
recs, at = [], 0
for ln in lines:  # records are packed in order, 100 bytes each, across shards
    n = int(ln.split("\t")[2])
    recs.append([data[(at + i) * 100:(at + i + 1) * 100] for i in range(n)])
    at += n
h, count, total = 0xcbf29ce484222325, 0, 0
def fnv(h, b):
    for c in b:
        h = ((h ^ c) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h
with open(sys.argv[3], "w") as f:
    f.write("# ringfeed manifest v1\n")
    for i in range(20000):
        k = i % len(lines)
        f.write(lines[k] + "\n")
        for r in recs[k]:
            h = fnv(fnv(h, struct.pack("<I", len(r))), r)
            count += 1
            total += len(r)
print("records=%d bytes=%d digest=%016x" % (count, total, h))
PYEOF
)
set +e
got=$(ulimit -n 256 && "$CLI" read --digest --shuffle 0 --budget 256MiB "$T/ds/m20000.rfm" 2>"$T/err")
rc=$?
set -e
[ "$rc" = 0 ] || { cat "$T/err" >&2; fail "20,000 shards at ulimit -n 256: exit $rc"; }
[ "$got" = "$want" ] || fail "20,000 shards: read $got, want $want"

# shuffled, the same records and bytes (in another order)
set +e
got=$(ulimit -n 256 && "$CLI" read --digest --budget 256MiB "$T/ds/m20000.rfm" 2>"$T/err")
rc=$?
set -e
[ "$rc" = 0 ] || { cat "$T/err" >&2; fail "shuffled, at ulimit -n 256: exit $rc"; }
[ "${got% digest=*}" = "${want% digest=*}" ] || fail "shuffled: read $got, want ${want% digest=*}"
echo "ok: $got"
