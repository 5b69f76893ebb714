#!/usr/bin/python3
"""megatron_write.py - writes a Megatron-LM indexed dataset (PREFIX.bin +
PREFIX.idx) with numpy exactly as megatron/core/datasets/indexed_dataset.py
(_IndexWriter, IndexedDatasetBuilder) writes it: tokens as raw dtype bytes,
the index as header, int32 lengths, int64 pointers, int64 document indices.

usage: megatron_write.py PREFIX DTYPE SEED DOCS [MAXLEN]
  writes DOCS documents of 0..MAXLEN tokens (document 1 is always empty),
  one sequence per document, token values seeded; prints the token count."""
import struct
import sys

import numpy

CODES = {"uint8": 1, "int8": 2, "int16": 3, "int32": 4, "int64": 5,
         "float64": 6, "float32": 7, "uint16": 8}


def write(prefix, dtype, docs):
    dtype = numpy.dtype(dtype)
    lengths, indices = [], [0]
    with open(prefix + ".bin", "wb") as b:
        for doc in docs:
            arr = numpy.array(doc, dtype=dtype)
            b.write(arr.tobytes(order="C"))
            lengths.append(arr.size)
            indices.append(len(lengths))
    pointers, ptr = [], 0
    for n in lengths:
        pointers.append(ptr)
        ptr += n * dtype.itemsize
    with open(prefix + ".idx", "wb") as f:
        f.write(b"MMIDIDX\x00\x00")
        f.write(struct.pack("<Q", 1))
        f.write(struct.pack("<B", CODES[dtype.name]))
        f.write(struct.pack("<Q", len(lengths)))
        f.write(struct.pack("<Q", len(indices)))
        f.write(numpy.array(lengths, dtype=numpy.int32).tobytes(order="C"))
        f.write(numpy.array(pointers, dtype=numpy.int64).tobytes(order="C"))
        f.write(numpy.array(indices, dtype=numpy.int64).tobytes(order="C"))


def main():
    prefix, dtype, seed, ndocs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    maxlen = int(sys.argv[5]) if len(sys.argv) > 5 else 3000
    rng = numpy.random.default_rng(seed)
    top = min(numpy.iinfo(dtype).max, 50257) if numpy.dtype(dtype).kind in "iu" else 50257
    docs = []
    for d in range(ndocs):
        n = 0 if d == 1 else int(rng.integers(1, maxlen + 1))
        docs.append(rng.integers(0, top, size=n))
    write(prefix, dtype, docs)
    print(sum(len(d) for d in docs))


if __name__ == "__main__":
    main()
