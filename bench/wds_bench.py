#!/usr/bin/python3
"""wds_bench.py - ringfeed reading WebDataset .tar shards against a PyTorch
DataLoader reading the same shards the way webdataset does, side by side in
one run, from local files and over HTTP.

The shards hold samples of a ~100 KB .jpg (random bytes), a .cls and a
.json. Both sides deliver batches of BATCH samples, unshuffled, each sample
with its three fields:

  ringfeed : RingfeedDataset -> DataLoader(batch_size=None, num_workers=0);
             a batch is {"__key__", "jpg", "cls", "json"}, each field a
             (payload, offsets, present) triple of tensors over engine memory
  baseline : IterableDataset (Python tarfile over the shard stream, members
             grouped into samples by key as webdataset's group_by_keys does,
             shards split over workers) -> DataLoader(batch_size=BATCH,
             num_workers=2, prefetch_factor=2, collate_fn=a list of dicts);
             over HTTP the stream is urllib's response (webdataset's gopen
             pipes curl: the same bytes, one GET per shard)

Each measurement runs in a fresh process: samples/s over a full pass (open to
last batch) and peak RSS measured as torch_bench.py measures it
(ru_maxrss(self) + ru_maxrss(children), and the sampled sum of the process
tree). Runs alternate between the sides; medians of --repeats.

HTTP: --nginx-root DIR --nginx-url URL (default $RF_NGINX_ROOT, $RF_NGINX_URL
from scripts/servers.sh); without them only local runs.

Usage: /usr/bin/python3 bench/wds_bench.py [--samples N] [--json] ...
"""

import argparse
import io
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, HERE)


def log(args, msg):
    if args.progress:
        print(f"wds_bench: {msg}", file=sys.stderr, flush=True)


def write_data(args, d):
    rng = random.Random(args.seed)
    per = (args.samples + args.shards - 1) // args.shards
    n, total = 0, 0
    for s in range(args.shards):
        with tarfile.open(os.path.join(d, f"shard-{s:06d}.tar"), "w") as t:
            for _ in range(per):
                if n == args.samples:
                    break
                key = f"{n:09d}"
                jpg = rng.randbytes(rng.randint(80_000, 120_000))
                fields = {"jpg": jpg, "cls": b"%d" % rng.randrange(1000),
                          "json": json.dumps({"id": n, "w": 224, "h": 224}).encode()}
                for ext, data in fields.items():
                    ti = tarfile.TarInfo(f"{key}.{ext}")
                    ti.size = len(data)
                    t.addfile(ti, io.BytesIO(data))
                    total += len(data)
                n += 1
    return {"samples": n, "field_bytes": total,
            "tar_bytes": sum(os.path.getsize(os.path.join(d, p)) for p in os.listdir(d)
                             if p.endswith(".tar"))}


def shard_names(args):
    return [f"shard-{s:06d}.tar" for s in range(args.shards)]


# ---------------------------------------------------------------- baseline
def make_wds_dataset(urls):
    import torch.utils.data

    def base_plus_ext(name):  # webdataset's rule: key = up to the first '.' of the last part
        slash = name.rfind("/")
        dot = name.find(".", slash + 1)
        return (None, None) if dot < 0 else (name[:dot], name[dot + 1:].lower())

    def open_stream(u):
        if u.startswith("http"):
            import urllib.request

            return urllib.request.urlopen(u)
        return open(u, "rb")

    class WdsSamples(torch.utils.data.IterableDataset):
        def __iter__(self):
            info = torch.utils.data.get_worker_info()
            mine = urls[info.id :: info.num_workers] if info else urls
            for u in mine:
                with open_stream(u) as f, tarfile.open(fileobj=f, mode="r|") as tf:
                    cur = None
                    for m in tf:
                        if not m.isreg():
                            continue
                        key, ext = base_plus_ext(m.name)
                        if key is None:
                            continue
                        data = tf.extractfile(m).read()
                        if cur is None or cur["__key__"] != key:
                            if cur:
                                yield cur
                            cur = {"__key__": key}
                        cur[ext] = data
                    if cur:
                        yield cur

    return WdsSamples()


def as_list(samples):
    return samples


def consume(dl, side, digest):
    samples = nbytes = batches = 0
    hashes = []
    for item in dl:
        if side == "ringfeed":
            keys = item["__key__"]
            payload, offsets, _ = item["jpg"]
            n = len(keys)
            nbytes += int(offsets[-1]) + int(item["cls"][1][-1]) + int(item["json"][1][-1])
            if digest:
                data, o = payload.numpy().tobytes(), offsets.tolist()
                hashes.extend(hash((keys[i], data[o[i] : o[i + 1]])) for i in range(n))
        else:
            n = len(item)
            nbytes += sum(len(s["jpg"]) + len(s["cls"]) + len(s["json"]) for s in item)
            if digest:
                hashes.extend(hash((s["__key__"], s["jpg"])) for s in item)
        samples += n
        batches += 1
    return samples, nbytes, batches, hashes


def run_one(args):
    import torch
    import torch.utils.data
    from torch_bench import TreeRss

    base_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    sampler = TreeRss()
    t0 = time.perf_counter()
    where = args.where.rstrip("/")
    if args.run == "ringfeed":
        from ringfeed.torch import RingfeedDataset

        src = where if not where.startswith("http") else \
            f"{where}/shard-{{000000..{args.shards - 1:06d}}}.tar"
        ds = RingfeedDataset(src, batch=args.batch, shuffle=False, threads=args.threads,
                             budget=args.budget)
        # the batch as the dataset gives it, as the other side's collate_fn
        # does (batch_size=None would otherwise walk every dict: default_convert)
        dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=0, collate_fn=as_list)
    else:
        urls = [f"{where}/{n}" for n in shard_names(args)]
        dl = torch.utils.data.DataLoader(make_wds_dataset(urls), batch_size=args.batch,
                                         num_workers=2, prefetch_factor=2, collate_fn=as_list)
    samples, nbytes, batches, hashes = consume(dl, args.run, args.digest)
    elapsed = time.perf_counter() - t0
    del dl
    tree_kib = sampler.close()
    self_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    child_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    out = {"side": args.run, "samples": samples, "bytes": nbytes, "batches": batches,
           "seconds": elapsed, "samples_per_s": samples / elapsed,
           "peak_rss_mib": (self_kib + child_kib) / 1024, "import_rss_mib": base_kib / 1024,
           "tree_rss_peak_mib": tree_kib / 1024}
    if args.digest:
        out["digest"] = hash(tuple(sorted(hashes)))
    print(json.dumps(out))


def spawn(args, side, where, digest=False):
    cmd = [sys.executable, os.path.abspath(__file__), "--run", side, "--where", where,
           "--shards", str(args.shards), "--batch", str(args.batch), "--threads",
           str(args.threads), "--budget", args.budget]
    if digest:
        cmd.append("--digest")
    res = subprocess.run(cmd, capture_output=True, text=True,
                         env=dict(os.environ, PYTHONHASHSEED="0"))
    if res.returncode != 0:
        sys.exit(f"wds_bench: {side} run failed:\n{res.stderr}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def measure(args, where, expect):
    a, b = spawn(args, "ringfeed", where, True), spawn(args, "torch", where, True)
    if (a["samples"], a["bytes"], a["digest"]) != (b["samples"], b["bytes"], b["digest"]):
        sys.exit(f"wds_bench: the two sides delivered different samples from {where}")
    runs = []
    for i in range(args.repeats):
        for side in (("ringfeed", "torch") if i % 2 == 0 else ("torch", "ringfeed")):
            r = spawn(args, side, where)
            if r["samples"] != expect:
                sys.exit(f"wds_bench: {side} delivered {r['samples']} of {expect} samples")
            log(args, f"{where}: run {i + 1}/{args.repeats} {side}: {r['samples_per_s']:,.0f} "
                      f"samples/s, peak RSS {r['peak_rss_mib']:.0f} MiB")
            runs.append(r)
    out = {}
    for side in ("ringfeed", "torch"):
        rs = [r for r in runs if r["side"] == side]
        out[side] = {k: statistics.median(r[k] for r in rs)
                     for k in ("samples_per_s", "peak_rss_mib", "import_rss_mib",
                               "tree_rss_peak_mib", "seconds")}
        out[side]["runs"] = rs
    out["speedup"] = out["ringfeed"]["samples_per_s"] / out["torch"]["samples_per_s"]
    out["rss_ratio"] = out["ringfeed"]["peak_rss_mib"] / out["torch"]["peak_rss_mib"]
    return out


def print_table(name, res):
    print(f"{name}:")
    print(f"  {'':22}{'samples/s':>12}{'peak RSS MiB':>14}{'after import':>14}{'sampled sum':>13}")
    for label, r in (("ringfeed dataset", res["ringfeed"]), ("DataLoader 2 workers", res["torch"])):
        print(f"  {label:22}{r['samples_per_s']:>12,.0f}{r['peak_rss_mib']:>14.0f}"
              f"{r['import_rss_mib']:>14.0f}{r['tree_rss_peak_mib']:>13.0f}")
    print(f"  ringfeed / DataLoader: {res['speedup']:.1f}x samples/s, "
          f"{res['rss_ratio']:.2f}x peak RSS")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2, help="ringfeed decode threads")
    ap.add_argument("--budget", default="256MiB", help="ringfeed byte budget")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--nginx-root", default=os.environ.get("RF_NGINX_ROOT"))
    ap.add_argument("--nginx-url", default=os.environ.get("RF_NGINX_URL"))
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--progress", action="store_true", default=sys.stderr.isatty())
    ap.add_argument("--run", choices=("ringfeed", "torch"), help=argparse.SUPPRESS)
    ap.add_argument("--where", help=argparse.SUPPRESS)
    ap.add_argument("--digest", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.run:
        return run_one(args)
    with tempfile.TemporaryDirectory(prefix="wds_bench.") as tmp:
        log(args, f"writing {args.samples} samples in {args.shards} .tar shards")
        data = write_data(args, tmp)
        res = {"data": data, "config": {k: getattr(args, k) for k in
                                        ("samples", "shards", "batch", "threads", "budget",
                                         "repeats")}}
        res["local"] = measure(args, tmp, data["samples"])
        if args.nginx_root and args.nginx_url:
            sub = f"wds-bench-{os.getpid()}"
            os.makedirs(os.path.join(args.nginx_root, sub))
            try:
                for n in shard_names(args):
                    shutil.copy(os.path.join(tmp, n), os.path.join(args.nginx_root, sub, n))
                res["http"] = measure(args, f"{args.nginx_url.rstrip('/')}/{sub}",
                                      data["samples"])
            finally:
                shutil.rmtree(os.path.join(args.nginx_root, sub), ignore_errors=True)
        if args.json:
            print(json.dumps(res, indent=1))
            return
        print(f"dataset: {data['samples']} samples (.jpg ~100 KB + .cls + .json), "
              f"{data['tar_bytes'] / 2**20:.1f} MiB of .tar in {args.shards} shards; "
              f"batch {args.batch}; median of {args.repeats}")
        print_table("local files", res["local"])
        if "http" in res:
            print_table("HTTP (nginx)", res["http"])
        print("peak RSS = ru_maxrss(self) + ru_maxrss(children: the largest worker); sampled "
              "sum = summed VmRSS of the process tree every 20 ms")


if __name__ == "__main__":
    main()
