#!/usr/bin/python3
"""stress_check.py - the record accounting of tests/cli_stress.sh.

The stress dataset's records carry their own number ("%08d:" then filler), so
a run's `ringfeed read --output raw` stream (u32 LE length, then the bytes)
says exactly which records arrived, how often, and in what order.

  gen OUT N SEED BIG_AT BIG_BYTES
      writes N numbered lines (record BIG_AT, if >= 0, gets BIG_BYTES of
      incompressible filler, hex, so it is a block of its own)
  count RUN.raw REF.raw N
      prints "expected=N delivered=D duplicated=X skipped=S order=same|differs
      digest=HEX" (the run's own `--digest` line, which may follow its records)
  prefix RUN.raw REF.raw
      prints the number of records delivered when they are exactly the first
      records of the reference stream, else "differs"
  flip SHARD_FILE BLOCK
      flips one byte in the middle of that block's frame (a corrupt block on disk)
  blockpos MANIFEST SHARD_FILE BLOCK REF.raw
      prints the first position in the reference stream of a record that
      lives in that block (from the shard's index and the manifest's record
      counts)
"""
import os
import random
import struct
import sys

def split(path):
    """The records of a raw stream, and the `--digest` line after them (or "")."""
    data = open(path, "rb").read()
    at, out = 0, []
    while at < len(data):
        if data.startswith(b"records=", at) and data.endswith(b"\n"):
            (n,) = struct.unpack_from("<I", data, at)  # "reco" = 1.8e9: no record
            if at + 4 + n > len(data):
                return out, data[at:].decode().strip()
        if at + 4 > len(data):
            raise SystemExit("%s: truncated length at byte %d" % (path, at))
        (n,) = struct.unpack_from("<I", data, at)
        if at + 4 + n > len(data):
            raise SystemExit("%s: truncated record at byte %d" % (path, at))
        out.append(data[at + 4 : at + 4 + n])
        at += 4 + n
    return out, ""


def records(path):
    return split(path)[0]


def number(rec):
    if len(rec) < 9 or rec[8:9] != b":":
        raise SystemExit("record without a number: %r" % rec[:20])
    return int(rec[:8])


def cmd_gen(out, n, seed, big_at, big_bytes):
    rnd = random.Random(int(seed))
    with open(out, "w") as f:
        for i in range(int(n)):
            if i == int(big_at):
                fill = os.urandom(int(big_bytes) // 2).hex()
            else:
                fill = "".join(rnd.choices("abcdefgh", k=rnd.randint(0, 100)))
            f.write("%08d:%s\n" % (i, fill))


def cmd_count(run, ref, n):
    (got, line), want = split(run), records(ref)
    n = int(n)
    seen = set()
    dup = 0
    for r in got:
        k = number(r)
        if k in seen:
            dup += 1
        seen.add(k)
    skipped = sum(1 for k in range(n) if k not in seen)
    order = "same" if got == want else "differs"
    print(
        "expected=%d delivered=%d duplicated=%d skipped=%d order=%s %s"
        % (n, len(got), dup, skipped, order, line.split(" ")[-1] if line else "digest=none")
    )


def cmd_prefix(run, ref):
    got, want = records(run), records(ref)
    print(len(got) if got == want[: len(got)] else "differs")


def shard_blocks(path):
    data = open(path, "rb").read()
    foot = data[-40:]
    index_offset, index_bytes = struct.unpack_from("<QQ", foot, 16)
    ix = data[index_offset : index_offset + index_bytes]
    (blocks,) = struct.unpack_from("<I", ix, 0)
    (meta,) = struct.unpack_from("<I", ix, 24)
    out = []
    for b in range(blocks):
        _, _, _, recs, first = struct.unpack_from("<QIIII", ix, 28 + meta + 24 * b)
        out.append((first, recs))
    return out


def cmd_flip(shard_file, block):
    """Damages one byte in the middle of a block's frame, on disk."""
    data = bytearray(open(shard_file, "rb").read())
    foot = data[-40:]
    index_offset, _ = struct.unpack_from("<QQ", foot, 16)
    ix = data[index_offset:]
    (meta,) = struct.unpack_from("<I", ix, 24)
    off, comp = struct.unpack_from("<QI", ix, 28 + meta + 24 * int(block))
    data[off + comp // 2] ^= 0x5A
    open(shard_file, "wb").write(bytes(data))


def cmd_blockpos(manifest, shard_file, block, ref):
    base = 0
    name = os.path.basename(shard_file)
    for line in open(manifest).read().splitlines()[1:]:
        url, _, recs = line.split("\t")
        if os.path.basename(url) == name:
            break
        base += int(recs)
    else:
        raise SystemExit("%s not in %s" % (name, manifest))
    first, recs = shard_blocks(shard_file)[int(block)]
    ids = set(range(base + first, base + first + recs))
    for pos, r in enumerate(records(ref)):
        if number(r) in ids:
            print(pos)
            return
    raise SystemExit("no record of the block in the reference stream")


if __name__ == "__main__":
    cmds = {"gen": cmd_gen, "flip": cmd_flip, "count": cmd_count, "prefix": cmd_prefix, "blockpos": cmd_blockpos}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        raise SystemExit(__doc__)
    cmds[sys.argv[1]](*sys.argv[2:])
