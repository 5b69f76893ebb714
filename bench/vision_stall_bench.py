#!/usr/bin/python3
"""vision_stall_bench.py - the JPEG pipeline of vision_bench.py over HTTP
with storage stalls: how long does the training loop wait for data, with
ringfeed and with a DataLoader over Python's tarfile (issue 27's goal:
ringfeed's wait at most 1/5 of the DataLoader's)?

Data: vision_bench.py's WebDataset tars (real JPEGs, a .cls each), with
`ringfeed index` sidecars, served by nginx through rf-faultproxy (the
build's TCP fault proxy), which forwards nothing during the last --stall
seconds of every --period seconds, counted from its start (a fresh proxy
per run): the same stalls for both sides.

Both sides run the same per-sample work in --workers DataLoader workers (PIL
decode, to a 3xHxW uint8 tensor, per batch a stack) and the same training
loop: a step of S seconds per batch, S set so that the loop takes batches at
--load (default 0.5) of the slower side's capacity measured first without
stalls (with S = 0 both sides would be bound by their throughput and wait
all the time). The loop's wait is the time inside next(), from the
(workers + 1)-th batch on (the first ones carry the workers' start); each
side also runs once without stalls at the same step, and the difference is
the wait the stalls cost.

  ringfeed : RingfeedDataset([http URLs], transform=, batch_transform=)
             -> DataLoader(batch_size=None, num_workers=N); automatic depth
  baseline : tarfile streaming each shard's HTTP body (urllib), members
             grouped by key, shards split over the workers (webdataset's
             way) -> DataLoader(batch_size=B, num_workers=N, collate_fn=stack)

Usage: /usr/bin/python3 bench/vision_stall_bench.py [--samples 6000]
       [--workers 2] [--stall 0.5] [--period 3] [--load 0.5] [--cover 1s] [--json]
Needs nginx, and the build's libringfeed.so, ringfeed and rf-faultproxy
(build/, or RINGFEED_LIBRARY and RF_CLI with rf-faultproxy beside it).
"""

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request

import torch
import torch.utils.data

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "python"))

import vision_bench  # noqa: E402  (write_data, to_tensor, sample_ringfeed, stack)

# ----------------------------------------------------------- the servers
def start_nginx(root, run):
    """nginx over root on a free port of 127.0.0.1 (state under run)."""
    import socket

    for d in ("logs", "tmp"):
        os.makedirs(os.path.join(run, d), exist_ok=True)
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    user = "user root;" if os.getuid() == 0 else ""
    conf = os.path.join(run, "nginx.conf")
    with open(conf, "w") as f:
        f.write(f"""{user}
daemon off; worker_processes 1; pid {run}/nginx.pid; error_log {run}/logs/error.log warn;
events {{ worker_connections 1024; }}
http {{ default_type application/octet-stream; access_log off; sendfile on;
  client_body_temp_path {run}/tmp; proxy_temp_path {run}/tmp; fastcgi_temp_path {run}/tmp;
  uwsgi_temp_path {run}/tmp; scgi_temp_path {run}/tmp;
  keepalive_timeout 65s; keepalive_requests 100000;
  server {{ listen 127.0.0.1:{port}; root {root}; }} }}
""")
    p = subprocess.Popen(["nginx", "-p", run, "-c", conf, "-e", f"{run}/logs/error.log"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1).close()
        except urllib.error.HTTPError:
            return p, port  # 403/404 for the directory: it answers
        except OSError:
            time.sleep(0.1)
            continue
        return p, port
    p.kill()
    sys.exit(f"nginx did not answer (see {run}/logs/error.log)")


def start_proxy(proxy, port, stall, period):
    """rf-faultproxy in front of nginx; its stall schedule starts now."""
    cmd = [proxy, "--listen", "127.0.0.1:0", "--to", f"127.0.0.1:{port}", "--quiet",
           "--max-conns", "256"]
    if stall > 0:
        cmd += ["--stall", f"{int(stall * 1000)}ms/{int(period * 1000)}ms"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline().split()
    if len(line) != 2 or line[0] != "listening":
        p.kill()
        sys.exit(f"rf-faultproxy did not start: {line}")
    return p, f"http://{line[1]}"


# ------------------------------------------------------------------ the sides
class HttpTarSamples(torch.utils.data.IterableDataset):
    """The baseline: each shard's body streamed through tarfile, grouped by
    key, shards split over the DataLoader's workers."""

    def __init__(self, urls):
        super().__init__()
        self.urls = urls

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        mine = self.urls[info.id::info.num_workers] if info else self.urls
        for url in mine:
            with urllib.request.urlopen(url, timeout=60) as resp, \
                    tarfile.open(fileobj=resp, mode="r|") as t:
                key, fields = None, {}
                for m in t:
                    k, ext = m.name.rsplit(".", 1)
                    if k != key and fields:
                        yield vision_bench.to_tensor(fields["jpg"]), int(fields["cls"])
                        fields = {}
                    key = k
                    fields[ext] = t.extractfile(m).read()
                if fields:
                    yield vision_bench.to_tensor(fields["jpg"]), int(fields["cls"])


def run_side(side, urls, workers, batch, step_s, cover):
    """The loop: (samples, seconds, wait_s after the start, batches)."""
    if side == "ringfeed":
        from ringfeed.torch import RingfeedDataset

        ds = RingfeedDataset(urls, batch=batch, budget="256MiB", shuffle=False,
                             cover=cover or None,
                             transform=vision_bench.sample_ringfeed,
                             batch_transform=vision_bench.stack)
        dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=workers)
    else:
        ds = None
        dl = torch.utils.data.DataLoader(HttpTarSamples(urls), batch_size=batch,
                                         num_workers=workers, collate_fn=vision_bench.stack)
    n, k, wait, t_start = 0, 0, 0.0, None
    t0 = time.perf_counter()
    it = iter(dl)
    while True:
        t = time.perf_counter()
        try:
            imgs, cls = next(it)
        except StopIteration:
            break
        k += 1
        if k > workers:
            wait += time.perf_counter() - t
        elif k == workers:
            t_start = time.perf_counter()
        n += len(cls)
        if step_s:
            time.sleep(step_s)
    out = {"samples": n, "seconds": time.perf_counter() - t0, "wait_s": wait, "batches": k,
           "measured_s": time.perf_counter() - (t_start or t0)}
    if ds is not None:
        d = ds.diagnose()
        out["diagnose"] = d["verdict"]
    return out


def one(ctx, side, stall, step_s):
    """One side in a fresh process, through a fresh stall proxy (its
    schedule starts with the run)."""
    proxy, base = start_proxy(ctx["proxy"], ctx["port"], stall, ctx["period"])
    try:
        res = subprocess.run(
            [sys.executable, __file__, "--one", side, base, ",".join(ctx["tars"]),
             str(ctx["workers"]), str(ctx["batch"]), str(step_s), ctx["cover"]],
            capture_output=True, text=True)
        if res.returncode != 0:
            sys.exit(f"{side}: failed\n{res.stderr[-3000:]}")
        r = json.loads(res.stdout.strip().splitlines()[-1])
        r["wait_fraction"] = r["wait_s"] / r["measured_s"] if r["measured_s"] else 0
        return r
    finally:
        proxy.terminate()
        proxy.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=6000)
    ap.add_argument("--shards", type=int, default=16)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--stall", type=float, default=0.5)
    ap.add_argument("--period", type=float, default=3.0)
    ap.add_argument("--load", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--cover", default="", help="ringfeed's cover= (default: automatic)")
    ap.add_argument("--one", nargs=7, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        side, base, tars, workers, batch, step, cover = args.one
        urls = [f"{base}/{t}" for t in tars.split(",")]
        print(json.dumps(run_side(side, urls, int(workers), int(batch), float(step), cover)))
        return
    build = os.path.join(HERE, "..", "build")
    os.environ.setdefault("RINGFEED_LIBRARY", os.path.join(build, "libringfeed.so"))
    cli = os.environ.get("RF_CLI", os.path.join(build, "ringfeed"))
    out = {"samples": args.samples, "batch": args.batch, "workers": args.workers,
           "stall_s": args.stall, "period_s": args.period, "load": args.load,
           "cover": args.cover or "automatic"}
    with tempfile.TemporaryDirectory(prefix="vision-stall-") as d:
        data = os.path.join(d, "www")
        os.makedirs(data)
        out["bytes"] = vision_bench.write_data(data, args.samples, args.shards, args.seed)
        subprocess.run([cli, "index", "-q", data], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        nginx, port = start_nginx(data, os.path.join(d, "nginx"))
        ctx = {"proxy": os.path.join(os.path.dirname(cli), "rf-faultproxy"), "port": port,
               "period": args.period, "workers": args.workers, "batch": args.batch,
               "cover": args.cover,
               "tars": sorted(f for f in os.listdir(data) if f.endswith(".tar"))}
        try:
            cap = {}
            for side in ("ringfeed", "tarfile"):
                r = one(ctx, side, 0, 0)
                cap[side] = (r["samples"] - args.workers * args.batch) / r["measured_s"]
            out["capacity_samples_per_s"] = cap
            step = args.batch / (args.load * min(cap.values()))
            out["step_s"] = step
            runs = {}
            for side in ("ringfeed", "tarfile"):
                calm = one(ctx, side, 0, step)
                r = one(ctx, side, args.stall, step)
                r["stalls"] = int(r["seconds"] // args.period)
                r["calm_wait_s"] = calm["wait_s"]
                r["stall_wait_s"] = max(0.0, r["wait_s"] - calm["wait_s"])
                runs[side] = r
        finally:
            nginx.terminate()
            nginx.wait()
        out["runs"] = runs
        tw = runs["tarfile"]
        out["wait_ratio"] = runs["ringfeed"]["wait_s"] / tw["wait_s"] if tw["wait_s"] else None
        out["stall_wait_ratio"] = (runs["ringfeed"]["stall_wait_s"] / tw["stall_wait_s"]
                                   if tw["stall_wait_s"] else None)
    if args.json:
        print(json.dumps(out, indent=1))
        return
    print(f"{args.samples} JPEG samples ({out['bytes'] / 1e6:.1f} MB in {args.shards} tars) over "
          f"HTTP stalling {args.stall} s every {args.period} s, batch {args.batch}, "
          f"{args.workers} workers, ringfeed cover {out['cover']}")
    print(f"  capacity without stalls (after the start): ringfeed {cap['ringfeed']:.0f} samples/s, "
          f"DataLoader+tarfile {cap['tarfile']:.0f} samples/s; loop step {step * 1e3:.1f} ms "
          f"(load {args.load})")
    for side, r in runs.items():
        print(f"  {side:9s}: {r['samples']} samples in {r['seconds']:.1f} s (~{r['stalls']} "
              f"stalls); the loop waited {r['wait_s']:.3f} s, {100 * r['wait_fraction']:.1f}% "
              f"of {r['measured_s']:.1f} s ({r['calm_wait_s']:.3f} s without stalls, so "
              f"{r['stall_wait_s']:.3f} s for the stalls)"
              + (f"; diagnose: {r['diagnose']}" if "diagnose" in r else ""))
    for k, what in (("wait_ratio", "wait"), ("stall_wait_ratio", "wait for the stalls")):
        if out[k] is not None:
            print(f"  ringfeed's {what} / the DataLoader's: {out[k]:.3f} (goal <= 0.2)")


if __name__ == "__main__":
    main()
