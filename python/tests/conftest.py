"""Shared fixtures: the library, the `ringfeed` CLI, and small datasets.

The library comes from $RINGFEED_LIBRARY or the package's own search (a
build/ folder above the package); the CLI from $RF_CLI, else beside the
library. Datasets are packed by `ringfeed pack` from records this file
generates (each record starts with its number, so order and membership can
be checked record by record)."""

import os
import pathlib
import random
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the package, from a source checkout

import ringfeed  # noqa: E402


def _cli():
    env = os.environ.get("RF_CLI")
    if env:
        return env
    lib = pathlib.Path(ringfeed.library_path())
    cand = lib.parent / "ringfeed"
    return str(cand)


@pytest.fixture(scope="session")
def cli():
    path = _cli()
    assert os.access(path, os.X_OK), f"ringfeed CLI not found at {path} (set RF_CLI)"
    return path


def make_records(count, seed, max_len=300):
    """count unique records of varied length (some empty-bodied, some long)."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        n = rng.choice((0, 1, 7, rng.randrange(max_len), rng.randrange(max_len * 4)))
        out.append(b"%08d:" % i + rng.randbytes(n))
    return out


def pack(cli, workdir, records, shard_bytes="160KiB", block_bytes="4KiB"):
    """Packs records with `ringfeed pack --from files` (one file per record,
    in sorted name order) into shards of about shard_bytes under workdir;
    returns the manifest path."""
    workdir = pathlib.Path(workdir)
    src = workdir / "records"
    src.mkdir(parents=True, exist_ok=True)
    for i, r in enumerate(records):
        (src / f"{i:08d}.rec").write_bytes(r)
    out = workdir / "pack"
    cmd = [cli, "pack", "--from", "files", str(src), "-o", str(out),
           "--block-size", block_bytes, "--shard-size", shard_bytes]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, f"{' '.join(cmd)}\n{res.stderr}"
    manifest = out / "manifest.rfm"
    assert manifest.exists(), res.stderr
    return str(manifest)


def pack_lib(workdir, records, shards, block_bytes=4096):
    """Same layout as pack(), written through ringfeed.write_shard (the
    library's rf_writer) instead of the CLI."""
    workdir = pathlib.Path(workdir) / "packlib"
    workdir.mkdir(parents=True, exist_ok=True)
    per = -(-len(records) // shards)
    written = []
    for s in range(shards):
        path = workdir / f"shard-{s:06d}.rfs"
        summary = ringfeed.write_shard(path, records[s * per : (s + 1) * per], block_bytes)
        written.append((str(path), summary))
    manifest = workdir / "manifest.rfm"
    ringfeed.write_manifest(manifest, written)
    return str(manifest)


class Dataset:
    def __init__(self, manifest, records):
        self.manifest = manifest
        self.records = records
        self.dir = pathlib.Path(manifest).parent

    def shards(self):
        return sorted(str(p) for p in self.dir.glob("*.rfs"))


@pytest.fixture(scope="session")
def dataset(cli, tmp_path_factory):
    """~3000 records in 3 shards of many small blocks."""
    recs = make_records(3000, seed=11)
    man = pack(cli, tmp_path_factory.mktemp("ds"), recs)
    return Dataset(man, recs)


def collect(loader):
    """All records of a loader as bytes, in order, plus batch sizes."""
    recs, sizes = [], []
    for b in loader:
        recs.extend(b.records_bytes())
        sizes.append(b.records)
        b.release()
    return recs, sizes


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
