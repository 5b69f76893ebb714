#!/usr/bin/python3
"""vision_bench.py - a JPEG pipeline through DataLoader workers: ringfeed
against a DataLoader over Python's tarfile, the same worker count, in one run.

Data: --samples small real JPEGs (made with PIL: 96x72 gradients with noise,
quality 85) and a .cls each, in WebDataset tar shards. Both sides do the same
work per sample in the DataLoader's workers: PIL decode, RGB, to a 3xHxW
uint8 tensor; per batch of --batch, a stack of the images and a tensor of
the labels. Unshuffled.

  ringfeed : RingfeedDataset(dir, transform=..., batch_transform=...) ->
             DataLoader(batch_size=None, num_workers=N): each worker runs
             its own engine as a virtual rank, reading its slice
  baseline : IterableDataset (tarfile over each shard, members grouped by
             key as webdataset's group_by_keys does, shards split over the
             workers) -> DataLoader(batch_size=BATCH, num_workers=N,
             collate_fn=the same stack)

Each measurement runs in a fresh process (samples/s over a full pass: the
DataLoader's start to its last batch); sides alternate; medians of --repeats.

Usage: /usr/bin/python3 bench/vision_bench.py [--samples 2000] [--workers 1,2]
       [--repeats 3] [--json]
"""

import argparse
import io
import json
import os
import random
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

import torch
import torch.utils.data

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))


def write_data(d, samples, shards, seed):
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(seed)
    per = -(-samples // shards)
    total = 0
    for s in range(shards):
        with tarfile.open(os.path.join(d, f"shard-{s:04d}.tar"), "w") as t:
            for i in range(s * per, min(samples, (s + 1) * per)):
                x = np.linspace(0, 255, 96, dtype=np.float32)
                img = np.stack([np.add.outer(np.linspace(0, 80, 72), x * (c + 1) / 3)
                                for c in range(3)], axis=-1)
                img = np.clip(img + rng.normal(0, 12, img.shape), 0, 255).astype(np.uint8)
                buf = io.BytesIO()
                Image.fromarray(img, "RGB").save(buf, "JPEG", quality=85)
                for ext, data in (("jpg", buf.getvalue()), ("cls", b"%d" % (i % 10))):
                    m = tarfile.TarInfo(f"{i:08d}.{ext}")
                    m.size = len(data)
                    t.addfile(m, io.BytesIO(data))
                    total += len(data)
    return total


def to_tensor(jpg_bytes):
    import numpy as np
    from PIL import Image

    img = Image.open(io.BytesIO(jpg_bytes)).convert("RGB")
    return torch.from_numpy(np.asarray(img).copy()).permute(2, 0, 1)


def sample_ringfeed(s):
    return to_tensor(s["jpg"]), int(s["cls"])


def stack(samples):
    imgs, cls = zip(*samples)
    return torch.stack(imgs), torch.tensor(cls)


class TarSamples(torch.utils.data.IterableDataset):
    """The baseline: tarfile over each shard, grouped by key, shards split
    over the DataLoader's workers (as webdataset's split_by_worker)."""

    def __init__(self, shards):
        super().__init__()
        self.shards = shards

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        mine = self.shards[info.id::info.num_workers] if info else self.shards
        for path in mine:
            with tarfile.open(path, "r|") as t:
                key, fields = None, {}
                for m in t:
                    k, ext = m.name.rsplit(".", 1)
                    if k != key and fields:
                        yield to_tensor(fields["jpg"]), int(fields["cls"])
                        fields = {}
                    key = k
                    fields[ext] = t.extractfile(m).read()
                if fields:
                    yield to_tensor(fields["jpg"]), int(fields["cls"])


def run_side(side, d, workers, batch):
    t0 = time.perf_counter()
    if side == "ringfeed":
        from ringfeed.torch import RingfeedDataset

        ds = RingfeedDataset(d, batch=batch, budget="256MiB", shuffle=False,
                             transform=sample_ringfeed, batch_transform=stack)
        dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=workers)
    else:
        shards = sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".tar"))
        dl = torch.utils.data.DataLoader(TarSamples(shards), batch_size=batch,
                                         num_workers=workers, collate_fn=stack)
    n = 0
    for imgs, cls in dl:
        assert imgs.dtype == torch.uint8 and imgs.shape[1] == 3
        n += len(cls)
    return n, time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--one", nargs=3, metavar=("SIDE", "DIR", "WORKERS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        n, s = run_side(args.one[0], args.one[1], int(args.one[2]), args.batch)
        print(json.dumps({"samples": n, "seconds": s}))
        return
    out = {"samples": args.samples, "batch": args.batch, "repeats": args.repeats, "runs": {}}
    with tempfile.TemporaryDirectory(prefix="vision-bench-") as d:
        out["bytes"] = write_data(d, args.samples, args.shards, args.seed)
        for w in [int(x) for x in args.workers.split(",")]:
            rates = {"ringfeed": [], "tarfile": []}
            for _ in range(args.repeats):
                for side in ("ringfeed", "tarfile"):
                    res = subprocess.run(
                        [sys.executable, __file__, "--batch", str(args.batch), "--one", side, d,
                         str(w)], capture_output=True, text=True, check=True)
                    r = json.loads(res.stdout.strip().splitlines()[-1])
                    if r["samples"] != args.samples:
                        sys.exit(f"{side}: {r['samples']} samples of {args.samples}")
                    rates[side].append(r["samples"] / r["seconds"])
            med = {k: statistics.median(v) for k, v in rates.items()}
            out["runs"][w] = {"samples_per_s": med, "all": rates,
                              "ratio": med["ringfeed"] / med["tarfile"]}
    if args.json:
        print(json.dumps(out, indent=1))
        return
    print(f"{args.samples} JPEG samples ({out['bytes'] / 1e6:.1f} MB in {args.shards} tars), "
          f"batch {args.batch}, PIL decode + to-tensor per sample, medians of {args.repeats}")
    for w, r in out["runs"].items():
        m = r["samples_per_s"]
        print(f"  workers={w}: ringfeed {m['ringfeed']:8.0f} samples/s   "
              f"DataLoader+tarfile {m['tarfile']:8.0f} samples/s   ({r['ratio']:.2f}x)")


if __name__ == "__main__":
    main()
