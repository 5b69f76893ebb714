#!/usr/bin/python3
"""torch_bench.py - ringfeed's PyTorch dataset against a plain PyTorch
DataLoader reading WebDataset-style .tar.zst shards, side by side in one run.

Both sides read the same records (generated here, written once as .rfs
shards and once as .tar.zst shards of the same grouping) and deliver the same
ragged batches: a uint8 payload tensor and int64 offsets (records+1), BATCH
records per batch, unshuffled.

  ringfeed : RingfeedDataset -> DataLoader(batch_size=None, num_workers=0)
  baseline : IterableDataset (tarfile over a zstandard stream, shards split
             over workers) -> DataLoader(batch_size=BATCH, num_workers=2,
             prefetch_factor=2, collate_fn=ragged)

Each measurement runs in a fresh process (so ru_maxrss is that run's peak):
records/s over a full pass (open to last batch), and peak RSS = ru_maxrss of
the process + ru_maxrss of its children (the DataLoader's workers; the kernel
reports the largest child, so the baseline's figure is a lower bound of its
total), next to the peak of the process tree's summed RSS sampled every 20 ms
(which counts pages shared across fork once per process: an upper estimate). The runs alternate between the two sides; the report gives medians
of --repeats runs and the ratios.

Usage: /usr/bin/python3 bench/torch_bench.py [--records N] [--json] ...
Needs: python3-torch, python3-numpy, python3-zstandard (Debian), libringfeed.
"""

import argparse
import io
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))


def log(args, msg):
    if args.progress:
        print(f"torch_bench: {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- data
def gen_records(n, seed, min_bytes, max_bytes):
    """Records that compress about 2:1 (random words from a small vocabulary)."""
    rng = random.Random(seed)
    vocab = [bytes(rng.randrange(97, 123) for _ in range(rng.randrange(2, 9))) for _ in range(4096)]
    for i in range(n):
        size = rng.randrange(min_bytes, max_bytes + 1)
        parts, have = [b"%09d " % i], 10
        while have < size:
            w = vocab[rng.randrange(len(vocab))]
            parts.append(w)
            have += len(w)
        yield b"".join(parts)[:size] if size >= 10 else parts[0][:size]


def write_data(args, d):
    import ringfeed
    import zstandard

    per = -(-args.records // args.shards)
    recs = gen_records(args.records, args.seed, args.min_bytes, args.max_bytes)
    rfs, tars, raw = [], [], 0
    cctx = zstandard.ZstdCompressor(level=3)
    for s in range(args.shards):
        chunk = [next(recs) for _ in range(min(per, args.records - s * per))]
        raw += sum(map(len, chunk))
        path = os.path.join(d, f"shard-{s:06d}.rfs")
        rfs.append((path, ringfeed.write_shard(path, chunk, block_bytes=args.block_bytes, level=3)))
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tf:
            for j, rec in enumerate(chunk):
                info = tarfile.TarInfo(f"{s * per + j:09d}.bin")  # WebDataset key.ext
                info.size = len(rec)
                tf.addfile(info, io.BytesIO(rec))
        tpath = os.path.join(d, f"shard-{s:06d}.tar.zst")
        with open(tpath, "wb") as f:
            f.write(cctx.compress(buf.getvalue()))
        tars.append(tpath)
    ringfeed.write_manifest(os.path.join(d, "manifest.rfm"), rfs)
    sizes = {
        "raw_bytes": raw,
        "rfs_bytes": sum(s["file_bytes"] for _, s in rfs),
        "tar_zst_bytes": sum(os.path.getsize(t) for t in tars),
    }
    with open(os.path.join(d, "data.json"), "w") as f:
        json.dump({"records": args.records, **sizes}, f)
    return sizes


# ---------------------------------------------------------------- the two sides
def ragged(records):
    """collate_fn: a list of bytes -> (payload uint8, offsets int64)."""
    import torch

    lens = torch.tensor([0] + [len(r) for r in records], dtype=torch.int64)
    offsets = torch.cumsum(lens, 0)
    payload = torch.frombuffer(bytearray(b"".join(records)), dtype=torch.uint8)
    return {"payload": payload, "offsets": offsets}


def make_tar_dataset(paths):
    import torch.utils.data
    import zstandard

    class TarZstRecords(torch.utils.data.IterableDataset):
        """WebDataset-style: each worker streams its share of the shards."""

        def __iter__(self):
            info = torch.utils.data.get_worker_info()
            mine = paths[info.id :: info.num_workers] if info else paths
            for p in mine:
                with open(p, "rb") as f, zstandard.ZstdDecompressor().stream_reader(f) as z:
                    with tarfile.open(fileobj=z, mode="r|") as tf:
                        for m in tf:
                            yield tf.extractfile(m).read()

    return TarZstRecords()


def consume(dl, digest):
    """Counts records and bytes (and, if asked, hashes each record)."""
    records = nbytes = batches = 0
    hashes = []
    for item in dl:
        off = item["offsets"]
        n = len(off) - 1
        records += n
        nbytes += int(off[-1])
        batches += 1
        if digest:
            data, o = item["payload"].numpy().tobytes(), off.tolist()
            hashes.extend(hash(data[o[i] : o[i + 1]]) for i in range(n))
    return records, nbytes, batches, hashes


def _descendants(pid):
    out = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                out.extend(int(c) for c in f.read().split())
    except OSError:
        return out
    return out + [d for c in out for d in _descendants(c)]


def _rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class TreeRss:
    """Samples the summed RSS of this process and its descendants every 20 ms
    (pages shared after fork count once per process: an upper estimate)."""

    def __init__(self):
        import threading

        self.peak_kib, self.stop = 0, threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        me = os.getpid()
        while not self.stop.wait(0.02):
            total = sum(_rss_kib(p) for p in [me] + _descendants(me))
            self.peak_kib = max(self.peak_kib, total)

    def close(self):
        self.stop.set()
        self.thread.join()
        return self.peak_kib


def run_one(args):
    """One measurement in this (fresh) process; prints a JSON line."""
    import torch
    import torch.utils.data

    base_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    sampler = TreeRss()
    t0 = time.perf_counter()
    if args.run == "ringfeed":
        from ringfeed.torch import RingfeedDataset

        ds = RingfeedDataset(os.path.join(args.dir, "manifest.rfm"), batch=args.batch,
                             shuffle=False, threads=args.threads, budget=args.budget)
        dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=0)
    else:
        paths = sorted(os.path.join(args.dir, p) for p in os.listdir(args.dir)
                       if p.endswith(".tar.zst"))
        dl = torch.utils.data.DataLoader(make_tar_dataset(paths), batch_size=args.batch,
                                         num_workers=2, prefetch_factor=2, collate_fn=ragged)
    records, nbytes, batches, hashes = consume(dl, args.digest)
    elapsed = time.perf_counter() - t0
    del dl  # joins the workers, so RUSAGE_CHILDREN covers them
    tree_kib = sampler.close()
    self_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    child_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    out = {"side": args.run, "records": records, "bytes": nbytes, "batches": batches,
           "seconds": elapsed, "records_per_s": records / elapsed,
           "peak_rss_mib": (self_kib + child_kib) / 1024, "self_rss_mib": self_kib / 1024,
           "children_rss_mib": child_kib / 1024, "import_rss_mib": base_kib / 1024,
           "tree_rss_peak_mib": tree_kib / 1024}
    if args.digest:
        out["digest"] = hash(tuple(sorted(hashes)))
    print(json.dumps(out))


def spawn(args, side, digest=False):
    cmd = [sys.executable, os.path.abspath(__file__), "--run", side, "--dir", args.dir,
           "--batch", str(args.batch), "--threads", str(args.threads), "--budget", args.budget]
    if digest:
        cmd.append("--digest")
    env = dict(os.environ, PYTHONHASHSEED="0")
    res = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if res.returncode != 0:
        sys.exit(f"torch_bench: {side} run failed:\n{res.stderr}")
    return json.loads(res.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------- report
def summarize(runs, expect_records):
    out = {}
    for side in ("ringfeed", "torch"):
        rs = [r for r in runs if r["side"] == side]
        for r in rs:
            if r["records"] != expect_records:
                sys.exit(f"torch_bench: {side} delivered {r['records']} of {expect_records} records")
        out[side] = {
            "records_per_s": statistics.median(r["records_per_s"] for r in rs),
            "peak_rss_mib": statistics.median(r["peak_rss_mib"] for r in rs),
            "import_rss_mib": statistics.median(r["import_rss_mib"] for r in rs),
            "tree_rss_peak_mib": statistics.median(r["tree_rss_peak_mib"] for r in rs),
            "seconds": statistics.median(r["seconds"] for r in rs),
            "runs": rs,
        }
    out["speedup"] = out["ringfeed"]["records_per_s"] / out["torch"]["records_per_s"]
    out["rss_ratio"] = out["ringfeed"]["peak_rss_mib"] / out["torch"]["peak_rss_mib"]
    return out


def print_table(res, data, args):
    rf, tb = res["ringfeed"], res["torch"]
    print(f"dataset: {args.records} records, {data['raw_bytes'] / 2**20:.1f} MiB raw, "
          f"{args.shards} shards (.rfs {data['rfs_bytes'] / 2**20:.1f} MiB, "
          f".tar.zst {data['tar_zst_bytes'] / 2**20:.1f} MiB); batch {args.batch}; "
          f"median of {args.repeats}")
    print(f"{'':22}{'records/s':>12}{'peak RSS MiB':>14}{'after import':>14}"
          f"{'sampled sum':>13}")
    for name, r in (("ringfeed dataset", rf), ("DataLoader 2 workers", tb)):
        print(f"{name:22}{r['records_per_s']:>12,.0f}{r['peak_rss_mib']:>14.0f}"
              f"{r['import_rss_mib']:>14.0f}{r['tree_rss_peak_mib']:>13.0f}")
    print("peak RSS = ru_maxrss(self) + ru_maxrss(children: the largest worker); sampled sum ="
          " summed VmRSS of the process tree every 20 ms")
    print(f"ringfeed / DataLoader: {res['speedup']:.1f}x records/s, "
          f"{res['rss_ratio']:.2f}x peak RSS")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--min-bytes", type=int, default=64)
    ap.add_argument("--max-bytes", type=int, default=1024)
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--block-bytes", type=int, default=1 << 20)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2, help="ringfeed decode threads")
    ap.add_argument("--budget", default="256MiB", help="ringfeed byte budget")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dir", help="data folder (default: a temporary one)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--progress", action="store_true", default=sys.stderr.isatty())
    ap.add_argument("--run", choices=("ringfeed", "torch"), help=argparse.SUPPRESS)
    ap.add_argument("--digest", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.run:
        return run_one(args)
    with tempfile.TemporaryDirectory(prefix="torch_bench.") as tmp:
        if not args.dir:
            args.dir = tmp
        os.makedirs(args.dir, exist_ok=True)
        meta = os.path.join(args.dir, "data.json")
        if os.path.exists(meta) and json.load(open(meta))["records"] == args.records:
            data = json.load(open(meta))
        else:
            log(args, f"writing {args.records} records as .rfs and .tar.zst shards")
            data = write_data(args, args.dir)
        log(args, "checking both sides deliver the same records")
        a, b = spawn(args, "ringfeed", digest=True), spawn(args, "torch", digest=True)
        if (a["records"], a["bytes"], a["digest"]) != (b["records"], b["bytes"], b["digest"]):
            sys.exit("torch_bench: the two sides delivered different records")
        runs = []
        for i in range(args.repeats):
            for side in (("ringfeed", "torch") if i % 2 == 0 else ("torch", "ringfeed")):
                r = spawn(args, side)
                log(args, f"run {i + 1}/{args.repeats} {side}: {r['records_per_s']:,.0f} "
                          f"records/s, peak RSS {r['peak_rss_mib']:.0f} MiB")
                runs.append(r)
        res = summarize(runs, args.records)
        res["data"] = data
        res["config"] = {k: getattr(args, k) for k in ("records", "min_bytes", "max_bytes",
                         "shards", "block_bytes", "batch", "threads", "budget", "repeats")}
        if args.json:
            print(json.dumps(res, indent=1))
        else:
            print_table(res, data, args)


if __name__ == "__main__":
    main()
