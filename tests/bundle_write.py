#!/usr/bin/env python3
"""bundle_write.py MANIFEST OUT (--file SHARD | --dir DIR) [--damage MODE]

Writes the index bundle (docs/format.md "Index bundle") of a manifest whose
shards are local .rfs files: every entry's tail taken from SHARD (a manifest
of copies of one shard) or from DIR/basename(PATH). The paths are the
manifest lines' own, so a manifest of URLs gets a bundle too (what pack
cannot write: it reads its shards where it wrote them). The tests and
bench/open_remote_bench.sh use it; --damage writes what a loader must not
trust: crc (one tail byte changed, the checksum left), count (one entry
more than the manifest lists, checksum right), tail (one entry's tail from
the wrong offset, checksum right: the format refuses it), path (entry 0's
path changed, checksum right), records (entry 0's index sound but one
record short of the manifest: a bundle older than its shard). Python 3
standard library only."""

import argparse
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cache_data_check import crc32c  # noqa: E402  (the suite's CRC-32C)

MAGIC = b"RFINDEX1"
TAIL_MIN = 8192


def tail_of(path):
    with open(path, "rb") as f:
        data = f.read()
    index_offset = struct.unpack_from("<Q", data, len(data) - 40 + 16)[0]
    start = min(len(data) - min(len(data), TAIL_MIN), index_offset)
    return len(data), data[start:]


def one_record_less(tail):
    """The tail with its index saying one record less in its first block
    (the later blocks' first_record and the total follow), its CRCs made
    right: a sound index, as a bundle older than its shard holds."""
    t = bytearray(tail)
    foot = len(t) - 40
    index_bytes = struct.unpack_from("<Q", t, foot + 24)[0]
    ix = len(t) - 40 - index_bytes  # the index ends where the footer starts
    blocks, total = struct.unpack_from("<IQ", t, ix)
    meta = struct.unpack_from("<I", t, ix + 24)[0]
    first = ix + 28 + meta
    recs = struct.unpack_from("<I", t, first + 16)[0]
    if recs < 2:
        sys.exit("bundle_write: --damage records needs a first block of 2 records or more")
    struct.pack_into("<I", t, first + 16, recs - 1)
    for b in range(1, blocks):
        at = first + 24 * b + 20
        struct.pack_into("<I", t, at, struct.unpack_from("<I", t, at)[0] - 1)
    struct.pack_into("<Q", t, ix + 4, total - 1)
    struct.pack_into("<I", t, foot + 32, crc32c(bytes(t[ix:ix + index_bytes])))
    struct.pack_into("<I", t, foot + 36, crc32c(bytes(t[foot:foot + 36])))
    return bytes(t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("manifest")
    ap.add_argument("out")
    ap.add_argument("--file")
    ap.add_argument("--dir")
    ap.add_argument("--damage", choices=["crc", "count", "tail", "path", "records"])
    a = ap.parse_args()
    entries = []
    with open(a.manifest) as f:
        for line in f:
            line = line.rstrip("\r\n")
            if not line or line.startswith("#"):
                continue
            path, size, _ = line.split("\t")
            local = a.file or os.path.join(a.dir, os.path.basename(path.split("?")[0]))
            n, tail = tail_of(local)
            if n != int(size):
                sys.exit("bundle_write: %s is %d bytes, the manifest says %s" % (local, n, size))
            entries.append([path.encode(), n, tail])
    if a.damage == "count":
        entries.append(list(entries[-1]))
    if a.damage == "tail":  # the tail one byte early: no footer at its end
        p, n, t = entries[0]
        entries[0] = [p, n, b"\0" + t[:-1]]
    if a.damage == "records":  # a sound index of one record less: an older bundle
        p, n, t = entries[0]
        entries[0] = [p, n, one_record_less(t)]
    if a.damage == "path":
        entries[0][0] = entries[0][0] + b".moved"
    body = MAGIC + struct.pack("<II", 1, len(entries))
    for p, n, t in entries:
        body += struct.pack("<IIQ", len(p), len(t), n) + p + t
    crc = crc32c(body)
    if a.damage == "crc":
        body = body[:-1] + bytes([body[-1] ^ 1])
    with open(a.out, "wb") as f:
        f.write(body + struct.pack("<I", crc))


if __name__ == "__main__":
    main()
