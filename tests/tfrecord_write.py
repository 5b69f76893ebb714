#!/usr/bin/python3
"""tfrecord_write.py - the tests' reference TFRecord writer: tf.train.Example
messages built with the protobuf classes protoc compiles from
tests/proto/example.proto and feature.proto (TensorFlow's), framed as
TensorFlow's record_writer.cc does (u64 length, masked CRC-32C of it, data,
masked CRC-32C of the data), optionally GZIP / ZLIB compressed as
TFRecordOptions(compression_type=...) writes them.

  tfrecord_write.py DIR --shards K --records N [--seed S] [--image-bytes B]
                    [--codec none|gzip|zlib] [--raw] [--expect FILE]
                    [--index] [--name train] [--dump-records DIR]

writes DIR/NAME-0000I.tfrecord[.gz|.zlib] and, with --expect, a JSON list
of every record in file order: {"key": STEM/NNNNNNNN, "fields": {name: hex}}
with each field in ringfeed's documented encoding (docs/format.md), so a
test compares what ringfeed delivers field for field. --index writes DALI
tfrecord2idx files (PREFIX.idx) as DALI's tools/tfrecord2idx does.
"""
import argparse
import gzip
import json
import os
import random
import struct
import subprocess
import sys
import tempfile
import zlib

import crcmod.predefined

_crc32c = crcmod.predefined.mkCrcFun("crc-32c")


def masked_crc(data):
    c = _crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def frame(data):
    n = struct.pack("<Q", len(data))
    return n + struct.pack("<I", masked_crc(n)) + data + struct.pack("<I", masked_crc(data))


def compile_protos():
    """example_pb2 from tests/proto, compiled with protoc into a temp dir."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "proto")
    out = tempfile.mkdtemp(prefix="rf-proto-")
    subprocess.run(["protoc", "-I", here, "--python_out", out,
                    os.path.join(here, "example.proto"), os.path.join(here, "feature.proto")],
                   check=True)
    sys.path.insert(0, out)
    import example_pb2  # noqa: E402
    return example_pb2


def encoding(kind, values):
    """A feature's bytes as ringfeed delivers them (docs/format.md)."""
    if kind == "bytes":
        if len(values) == 1:
            return values[0]
        return (struct.pack("<I", len(values)) + b"".join(struct.pack("<I", len(v)) for v in values)
                + b"".join(values))
    if kind == "float":
        return b"".join(struct.pack("<f", v) for v in values)
    return b"".join(struct.pack("<q", v) for v in values)


def make_example(pb, rng, i, image_bytes):
    """Record i: a JPEG-like image, its label, a bbox, a caption list, an id."""
    img = bytes([0xFF, 0xD8]) + rng.randbytes(max(image_bytes - 2, 0))
    feats = {
        "image/encoded": ("bytes", [img]),
        "image/class/label": ("int64", [rng.randrange(1000)]),
        "image/object/bbox": ("float", [rng.random() for _ in range(rng.randrange(0, 5))]),
        "image/text": ("bytes", [b"t%d" % j for j in range(rng.randrange(0, 3))]),
        "image/id": ("int64", [i, -i, 2**40 + i]),
    }
    ex = pb.Example()
    for name, (kind, vals) in feats.items():
        f = ex.features.feature[name]
        if kind == "bytes":
            f.bytes_list.value.extend(vals)
        elif kind == "float":
            f.float_list.value.extend(vals)
            vals[:] = list(f.float_list.value)  # float32 as stored
        else:
            f.int64_list.value.extend(vals)
    return ex.SerializeToString(), {k: encoding(kind, v).hex() for k, (kind, v) in feats.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--records", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--image-bytes", type=int, default=2000)
    ap.add_argument("--codec", default="none", choices=["none", "gzip", "zlib"])
    ap.add_argument("--raw", action="store_true", help="records are plain bytes, not Examples")
    ap.add_argument("--expect")
    ap.add_argument("--index", action="store_true")
    ap.add_argument("--name", default="train")
    ap.add_argument("--dump-records", help="also write each record's data to DIR/NNNNNNNN")
    a = ap.parse_args()
    pb = None if a.raw else compile_protos()
    rng = random.Random(a.seed)
    os.makedirs(a.dir, exist_ok=True)
    expect = []
    n = 0
    for s in range(a.shards):
        stem = "%s-%05d" % (a.name, s)
        body = bytearray()
        idx = []
        for r in range(a.records):
            if pb is None:
                data = rng.randbytes(rng.randrange(1, a.image_bytes + 2))
                fields = {"record": data.hex()}
            else:
                data, fields = make_example(pb, rng, n, a.image_bytes)
            if a.dump_records:
                os.makedirs(a.dump_records, exist_ok=True)
                with open(os.path.join(a.dump_records, "%08d" % n), "wb") as f:
                    f.write(data)
            idx.append("%d %d\n" % (len(body), len(data) + 16))
            body += frame(data)
            expect.append({"key": "%s/%08d" % (stem, r), "fields": fields})
            n += 1
        ext = {"none": "", "gzip": ".gz", "zlib": ".zlib"}[a.codec]
        path = os.path.join(a.dir, stem + ".tfrecord" + ext)
        if a.codec == "gzip":
            out = gzip.compress(bytes(body), mtime=0)
        elif a.codec == "zlib":
            out = zlib.compress(bytes(body))
        else:
            out = bytes(body)
        with open(path, "wb") as f:
            f.write(out)
        if a.index:
            with open(os.path.join(a.dir, stem + ".idx"), "w") as f:
                f.write("".join(idx))
    if a.expect:
        with open(a.expect, "w") as f:
            json.dump(expect, f)


if __name__ == "__main__":
    main()
