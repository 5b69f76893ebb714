"""_writer.py - writes .rfs shards and manifests through the library's shard
writer (rf_writer_*), for tests, benchmarks and small conversions."""

import ctypes
import os

from . import _lib

MANIFEST_MAGIC = "# ringfeed manifest v1"


def write_shard(path, records, block_bytes=0, level=0, metadata=None, threads=0):
    """Writes the iterable of bytes-like `records` to the shard `path`.
    block_bytes / level 0 keep the library's defaults; threads > 0 compresses
    blocks in that many threads (the same bytes either way). Returns a dict of the
    summary (file_bytes, records, blocks, decoded_bytes, payload_bytes).
    On an error the partial file is removed and ringfeed.Error raised."""
    _lib.no_nul("write_shard: path", os.fsdecode(os.fspath(path)))
    if metadata is not None:
        _lib.no_nul("write_shard: metadata", metadata)
    lib = _lib.lib()
    opt = _lib.rf_writer_options(int(block_bytes), int(level),
                                 metadata.encode() if metadata is not None else None,
                                 int(threads))
    err = _lib.rf_error()
    w = lib.rf_writer_open(os.fsencode(path), ctypes.byref(opt), err)
    if not w:
        raise _lib.Error(err.code or -5, err.text() or f"{path}: rf_writer_open failed")
    try:
        for rec in records:
            data = bytes(rec)
            _lib.check(lib.rf_writer_add(w, data, len(data), err), err)
    except BaseException:
        lib.rf_writer_abort(w)
        raise
    summary = _lib.rf_shard_summary()
    _lib.check(lib.rf_writer_close(w, ctypes.byref(summary), err), err)
    return {name: int(getattr(summary, name)) for name, _ in summary._fields_}


def write_manifest(path, shards):
    """Writes a manifest listing `shards`: (shard_path, summary_dict) pairs,
    with paths written relative to the manifest's folder when below it."""
    base = os.path.dirname(os.path.abspath(path))
    lines = [MANIFEST_MAGIC]
    for shard, summary in shards:
        p = os.path.abspath(shard)
        rel = os.path.relpath(p, base)
        name = rel if not rel.startswith("..") else p
        lines.append(f"{name}\t{summary['file_bytes']}\t{summary['records']}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
