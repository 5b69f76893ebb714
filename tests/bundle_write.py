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
path changed, checksum right). Python 3 standard library only."""

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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("manifest")
    ap.add_argument("out")
    ap.add_argument("--file")
    ap.add_argument("--dir")
    ap.add_argument("--damage", choices=["crc", "count", "tail", "path"])
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
