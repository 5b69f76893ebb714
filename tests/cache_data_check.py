#!/usr/bin/python3
"""cache_data_check.py - reads a data cache directory (fetch/cache.h) as an
outsider would: every record's header and entries, and every recorded
range's bytes against its CRC-32C.

  cache_data_check.py verify DIR     prints "ranges=N bad=M"; exit 1 when M > 0
  cache_data_check.py flip DIR       flips one byte inside the largest
                                     recorded range; prints its record
  cache_data_check.py names DIR      prints every path under DIR
"""
import os, struct, sys

POLY = 0x82F63B78
TABLE = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ POLY if c & 1 else c >> 1
    TABLE.append(c)


def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    t = TABLE
    for b in data:
        crc = t[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def entries(rec_path):
    with open(rec_path, "rb") as f:
        p = f.read()
    if len(p) < 32 or p[:8] != b"RFDCACHE":
        raise SystemExit("%s: bad header" % rec_path)
    ul, vl = struct.unpack_from("<II", p, 12)
    (size,) = struct.unpack_from("<Q", p, 20)
    at, out = 32 + ul + vl, {}
    while len(p) - at >= 32:
        magic, ln, off, crc = struct.unpack_from("<IIQI", p, at)
        (ecrc,) = struct.unpack_from("<I", p, at + 28)
        if magic == 0x45444652 and ecrc == crc32c(p[at:at + 28]) and 0 < ln and off + ln <= size:
            if off not in out or not out[off][0] < ln:  # a finer earlier one stays
                out[off] = (ln, crc)
            at += 32
        else:
            at += 1
    return out


def records(top):
    for d in sorted(os.listdir(top)):
        for n in sorted(os.listdir(os.path.join(top, d))):
            if n.endswith(".rec"):
                yield os.path.join(top, d, n)


def main():
    cmd, top = sys.argv[1], sys.argv[2]
    if cmd == "names":
        for root, dirs, files in os.walk(top):
            for n in dirs + files:
                print(os.path.join(root, n))
        return 0
    if cmd == "verify":
        n = bad = 0
        for rec in records(top):
            with open(rec[:-4] + ".dat", "rb") as f:
                for off, (ln, crc) in entries(rec).items():
                    f.seek(off)
                    n += 1
                    if crc32c(f.read(ln)) != crc:
                        bad += 1
        print("ranges=%d bad=%d" % (n, bad))
        return 1 if bad else 0
    if cmd == "flip":
        best = None
        for rec in records(top):
            for off, (ln, crc) in entries(rec).items():
                if best is None or ln > best[2]:
                    best = (rec, off, ln)
        rec, off, ln = best
        with open(rec[:-4] + ".dat", "r+b") as f:
            f.seek(off + ln // 2)
            b = f.read(1)
            f.seek(off + ln // 2)
            f.write(bytes([b[0] ^ 0x5A]))
        print(rec, off, ln)
        return 0
    raise SystemExit("unknown command " + cmd)


if __name__ == "__main__":  # tests/bundle_write.py imports crc32c
    sys.exit(main())
