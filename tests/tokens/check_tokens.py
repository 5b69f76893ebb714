#!/usr/bin/python3
"""check_tokens.py - reads token files independently of ringfeed (numpy, as
Megatron's indexed_dataset.py, llm.c and nanoGPT read them) and checks what
`ringfeed read --output raw` wrote (u32 little-endian length, then bytes).

  check_tokens.py docs FILE RAW [DTYPE [EOT]]  records == the documents
  check_tokens.py windows FILE L RAW [OUT [DTYPE]]  records == tokens[iL:iL+L+1]
  check_tokens.py same-multiset RAW RAW...      the same records, any order
  check_tokens.py disjoint-union ALL RAW...     the parts are disjoint, equal
                                                in count, their union ALL
  check_tokens.py disjoint-cover ALL N RAW...   disjoint, all but at most N
FILE is PREFIX.idx (Megatron), or a .bin (llm.c header, or headerless with
DTYPE). Prints one line; exits 1 when the check fails."""
import struct
import sys

import numpy as np

CODES = {1: "uint8", 2: "int8", 3: "int16", 4: "int32", 5: "int64", 6: "float64",
         7: "float32", 8: "uint16"}


def records(path):
    data = open(path, "rb").read()
    out, at = [], 0
    while at < len(data):
        (n,) = struct.unpack_from("<I", data, at)
        out.append(data[at + 4 : at + 4 + n])
        at += 4 + n
    return out


def megatron(prefix):
    with open(prefix + ".idx", "rb") as f:
        assert f.read(9) == b"MMIDIDX\x00\x00"
        (version,) = struct.unpack("<Q", f.read(8))
        (code,) = struct.unpack("<B", f.read(1))
        (S,) = struct.unpack("<Q", f.read(8))
        (D,) = struct.unpack("<Q", f.read(8))
        lengths = np.frombuffer(f.read(4 * S), dtype=np.int32)
        pointers = np.frombuffer(f.read(8 * S), dtype=np.int64)
    dtype = np.dtype(CODES[code])
    bin_ = np.memmap(prefix + ".bin", dtype=dtype, mode="r")
    docs = [bin_[p // dtype.itemsize : p // dtype.itemsize + n] for p, n in zip(pointers, lengths)]
    return bin_, docs


def tokens_of(path, dtype=None, eot=None):
    """(all tokens, documents)"""
    if path.endswith(".idx"):
        return megatron(path[:-4])
    head = np.fromfile(path, dtype=np.int32, count=256)
    if dtype is None and head.size == 256 and head[0] in (20240520, 20240801):
        dt = np.uint16 if head[0] == 20240520 else np.uint32
        toks = np.memmap(path, dtype=dt, mode="r", offset=1024, shape=(int(head[2]),))
        llmc = True
    else:
        toks = np.memmap(path, dtype=np.dtype(dtype or "uint16"), mode="r")
        llmc = False
    docs = []
    if eot is not None:
        cuts = np.flatnonzero(toks == eot)
        cuts = cuts if llmc else cuts + 1  # llm.c: EOT starts a doc; nanoGPT: ends one
        bounds = [0] + [int(c) for c in cuts] + [toks.size]
        docs = [toks[a:b] for a, b in zip(bounds, bounds[1:]) if b > a]
    else:
        docs = [toks[i : i + 1024] for i in range(0, toks.size, 1024)]
    return toks, docs


def fail(msg):
    print("FAIL", msg)
    sys.exit(1)


def main():
    cmd = sys.argv[1]
    if cmd == "docs":
        path, raw = sys.argv[2], sys.argv[3]
        dtype = sys.argv[4] if len(sys.argv) > 4 and sys.argv[4] != "-" else None
        eot = int(sys.argv[5]) if len(sys.argv) > 5 else None
        _, docs = tokens_of(path, dtype, eot)
        got = records(raw)
        if len(got) != len(docs):
            fail(f"{len(got)} records, {len(docs)} documents")
        for i, (g, d) in enumerate(zip(got, docs)):
            if g != d.tobytes():
                fail(f"record {i} ({len(g)} bytes) is not document {i} ({d.nbytes} bytes)")
        empty = sum(1 for d in docs if d.size == 0)
        print(f"ok {len(docs)} documents ({empty} empty)")
    elif cmd == "windows":
        path, L, raw = sys.argv[2], int(sys.argv[3]), sys.argv[4]
        out = sys.argv[5] if len(sys.argv) > 5 and sys.argv[5] != "-" else None
        dtype = sys.argv[6] if len(sys.argv) > 6 else None
        toks, _ = tokens_of(path, dtype)
        toks = np.asarray(toks)
        n = (toks.size - 1) // L if toks.size > L else 0
        got = records(raw)
        if len(got) != n:
            fail(f"{len(got)} windows, expected {n} of {toks.size} tokens")
        for i, g in enumerate(got):
            w = toks[i * L : i * L + L + 1]
            if out:
                w = w.astype(np.dtype(out).newbyteorder("<"))
            if g != w.tobytes():
                fail(f"window {i} differs from tokens[{i * L}:{i * L + L + 1}]")
        print(f"ok {n} windows of {L + 1} tokens")
    elif cmd == "same-multiset":
        ref = sorted(records(sys.argv[2]))
        for r in sys.argv[3:]:
            if sorted(records(r)) != ref:
                fail(f"{r}: not the same records as {sys.argv[2]}")
        print(f"ok {len(ref)} records, the same multiset")
    elif cmd == "disjoint-union":
        ref = sorted(records(sys.argv[2]))
        parts = [records(r) for r in sys.argv[3:]]
        if len({len(p) for p in parts}) != 1:
            fail(f"ranks got {[len(p) for p in parts]} records")
        union = sorted(sum(parts, []))
        if len(set(map(bytes, union))) != len(union):
            fail("a record appears twice")
        if not set(union) <= set(ref) or len(ref) - len(union) >= len(parts):
            fail(f"union of {len(union)} is not the {len(ref)} records less the tail")
        print(f"ok {len(parts)} ranks of {len(parts[0])} records, disjoint")
    elif cmd == "disjoint-cover":
        ref, most_lost = sorted(records(sys.argv[2])), int(sys.argv[3])
        union = sorted(sum((records(r) for r in sys.argv[4:]), []))
        if len(set(union)) != len(union):
            fail("a record appears twice")
        if not set(union) <= set(ref) or len(ref) - len(union) > most_lost:
            fail(f"the parts hold {len(union)} of the {len(ref)} records")
        print(f"ok {len(union)} of {len(ref)} records, each once")
    else:
        fail(f"unknown check {cmd}")


if __name__ == "__main__":
    main()
