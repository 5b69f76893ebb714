#!/usr/bin/python3
"""tokens_bench.py - packed token windows for GPT training: ringfeed against
what a nanoGPT user writes, side by side in one run.

  baseline : np.memmap of the headerless uint16 train.bin and nanoGPT's
             get_batch: B random offsets, torch.from_numpy(x[i:i+L+1].astype(np.int64)),
             torch.stack -> one [B, L+1] int64 tensor (x = t[:, :-1], y = t[:, 1:])
  ringfeed : RingfeedDataset(seq_len=L, token_dtype="uint16", token_out="int64",
             batch=B, shuffle on) -> the same [B, L+1] int64 tensor, zero-copy;
             locally, and over HTTP (nginx) when a URL is given

Each measurement runs in a fresh process, so ru_maxrss is that run's peak RSS;
tokens/s counts the B (L+1) tokens of each batch over BATCHES batches after 5
warm-up batches. The file is read once before (page cache warm for both).
The runs alternate; the report gives medians of --repeats runs.

Usage: /usr/bin/python3 bench/tokens_bench.py --build BUILD [--tokens N] [--http-url URL --http-root DIR]
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
B, L = 32, 1024


def run_baseline(path, batches):
    import numpy as np
    import torch

    data = np.memmap(path, dtype=np.uint16, mode="r")

    def get_batch():  # nanoGPT train.py, CPU
        ix = torch.randint(len(data) - L, (B,))
        x = torch.stack([torch.from_numpy((data[i : i + L + 1]).astype(np.int64)) for i in ix])
        return x

    for _ in range(5):
        get_batch()
    t = time.perf_counter()
    s = 0
    for _ in range(batches):
        s += int(get_batch()[0, 0])
    return time.perf_counter() - t


def run_ringfeed(url, batches, build):
    sys.path.insert(0, os.path.join(HERE, "..", "python"))
    os.environ.setdefault("RINGFEED_LIBRARY", os.path.join(build, "libringfeed.so"))
    from ringfeed.torch import RingfeedDataset

    ds = RingfeedDataset(url, seq_len=L, token_dtype="uint16", token_out="int64", batch=B,
                         seed=1, budget="512MiB", epochs=0)
    it = iter(ds)
    for _ in range(5):
        next(it)
    t = time.perf_counter()
    s = 0
    for _ in range(batches):
        x = next(it)
        assert x.shape == (B, L + 1) and x.dtype.is_floating_point is False
        s += int(x[0, 0])
    dt = time.perf_counter() - t
    ds.close()
    return dt


def child(args):
    if args.child == "baseline":
        dt = run_baseline(args.path, args.batches)
    else:
        dt = run_ringfeed(args.path, args.batches, args.build)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": dt, "tokens_per_s": args.batches * B * (L + 1) / dt,
                      "peak_rss_mib": rss}))


def measure(kind, path, args):
    cmd = [sys.executable, __file__, "--child", kind, "--path", path, "--batches",
           str(args.batches), "--build", args.build]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--tokens", type=int, default=100_000_000)
    ap.add_argument("--batches", type=int, default=400)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--http-url", help="base URL whose files are --http-root")
    ap.add_argument("--http-root")
    ap.add_argument("--child")
    ap.add_argument("--path")
    args = ap.parse_args()
    args.build = os.path.abspath(args.build)
    if args.child:
        return child(args)
    import numpy as np

    tmp = tempfile.mkdtemp(prefix="rf-tokens-bench.")
    name = f"train-{os.getpid()}.bin"
    path = os.path.join(args.http_root or tmp, name)
    rng = np.random.default_rng(0)
    rng.integers(0, 50257, size=args.tokens, dtype=np.uint16).tofile(path)
    open(path, "rb").read()  # warm the page cache for both sides
    sides = [("baseline", path), ("ringfeed", path)]
    if args.http_url:
        sides.append(("ringfeed", f"{args.http_url}/{name}"))
    res = {i: [] for i in range(len(sides))}
    try:
        for _ in range(args.repeats):
            for i, (kind, p) in enumerate(sides):
                res[i].append(measure(kind, p, args))
    finally:
        os.unlink(path)
        os.rmdir(tmp)
    names = ["baseline np.memmap + get_batch (local)", "ringfeed (local)", "ringfeed (HTTP, nginx)"]
    summary = {}
    print(f"{args.tokens} uint16 tokens, batch {B} x L {L} (+1), {args.batches} batches, "
          f"median of {args.repeats}")
    for i in res:
        tps = statistics.median(r["tokens_per_s"] for r in res[i])
        rss = statistics.median(r["peak_rss_mib"] for r in res[i])
        summary[names[i]] = {"tokens_per_s": tps, "peak_rss_mib": rss}
        print(f"  {names[i]:42s} {tps / 1e6:9.1f} M tokens/s   peak RSS {rss:7.1f} MiB")
    base = summary[names[0]]["tokens_per_s"]
    local = summary[names[1]]["tokens_per_s"]
    print(f"  ringfeed local / baseline: {local / base:.2f}x")
    if args.http_url:
        print(f"  ringfeed HTTP / ringfeed local: {summary[names[2]]['tokens_per_s'] / local:.2f}")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
