"""ringfeed.torch - a PyTorch IterableDataset over the ringfeed engine.

    from ringfeed.torch import RingfeedDataset
    ds = RingfeedDataset("data/manifest.rfm", batch=256, budget="1GiB", seed=7)
    dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2)  # or 0
    for step, b in enumerate(dl):
        payload, offsets = b["payload"], b["offsets"]   # uint8 [bytes], int64 [n+1]
        ...
        if step % 1000 == 0:
            torch.save({"data": ds.state_dict(), ...}, "ckpt.pt")
    # later: ds.load_state_dict(ckpt["data"]) before iterating resumes exactly.

Use batch_size=None (batches come collated: the default batch_size=1 would
add a dimension and fail on ragged batches, so it is refused with a
TypeError). num_workers=0 runs one engine in the main process (it reads and
decodes in its own threads). num_workers=N runs one engine in each worker
process, as virtual rank rank*N + worker of world*N: workers read disjoint,
equal slices, and the DataLoader's round-robin over them gives one
deterministic order for a given (world, N). Each worker opens its engine
after the fork, in its own process (a loader never crosses a fork).

Under torch.distributed every rank yields the same number of batches per
epoch (len(ds), known before the first batch), so collective steps never
wait at an epoch's end; tail="drop" (default) leaves out the records that do
not divide evenly among the ranks, tail="pad" repeats records from the
epoch's start instead, drop_last=True drops each rank's last partial batch.
Rank and world are resolved when iteration starts (and by len()):
explicit arguments, else torch.distributed's when it is initialised, else
torchrun's RANK / WORLD_SIZE, else 0 of 1; a dataset built before
init_process_group reads its rank's slice. A state_dict() saved by any rank
resumes the whole job, on the same or another number of ranks (and batch
size, and number of DataLoader workers). skip_blocks=N (skip_records=M)
leaves out up to N undeliverable blocks an epoch instead of stopping (each
skip in stats()["skips"]); batches keep their positions, so ranks keep equal
counts.

Zero copy: the tensors view the engine's batch memory (torch.from_numpy).
Each tensor holds a reference that keeps its batch alive; the batch's bytes go
back to the loader's budget when the last tensor (and any view of it) is
freed. You never need to copy for safety, but while you keep tensors from a
batch its bytes stay out of the budget: keep a few, not thousands (the engine
waits for memory otherwise). Copy (`t.clone()`, `.to(device)`) what you want
to keep longer. Tensors are writable: the engine does not read a batch after
delivering it.
"""

from __future__ import annotations

import os
import pickle
import sys
import tempfile
import time
import weakref
from typing import Any, Callable, Sequence

import torch
import torch.utils.data

from . import _lib, _state
from ._lib import Error
from ._loader import Loader, Source, _data_args

IMAGE_EXTS = ("jpg", "jpeg", "png", "webp", "ppm", "bmp", "gif", "tif", "tiff")
DECODERS = (None, "pil", "rgb8", "rgb", "torchrgb8", "torchrgb", "l8", "torchl8")


class SampleError(Error, ValueError):
    """A sample's decode or transform raised: the message names the sample
    (its key; its shard, redacted; its record in the
    batch, the batch, and its position in the rank's epoch stream). Built
    from one message so that it crosses from a DataLoader worker whole."""

    def __init__(self, message, code=-22):  # -EINVAL
        super().__init__(code, message)


def _decode_image(data, mode):
    from PIL import Image  # python3-pil, imported only when asked for
    import io

    import numpy as np

    img = Image.open(io.BytesIO(data))
    img.load()
    if mode == "pil":
        return img
    gray = mode in ("l8", "torchl8")
    arr = np.asarray(img.convert("L" if gray else "RGB"))
    if not mode.startswith("torch"):
        return arr if mode != "rgb" else arr.astype("float32") / 255.0
    t = torch.from_numpy(arr.copy())
    t = t.unsqueeze(0) if gray else t.permute(2, 0, 1)
    return t.float().div_(255.0) if mode == "torchrgb" else t


def decode_sample(sample: dict, mode: str) -> dict:
    """WebDataset's decoders by field name (the part after the last dot):
    images (jpg, jpeg, png, webp, ...) by `mode` ("pil": a PIL image;
    "rgb8": HxWx3 uint8 array; "rgb": HxWx3 float32 in [0, 1]; "torchrgb8":
    3xHxW uint8 tensor; "torchrgb": 3xHxW float tensor; "l8" / "torchl8":
    grayscale), cls / cls2 / index an int, txt / text a str, json the
    object, npy the array; other fields stay bytes."""
    out = {}
    for name, v in sample.items():
        ext = name.rsplit(".", 1)[-1].lower()
        if name.startswith("__") or not isinstance(v, (bytes, bytearray)):
            out[name] = v
        elif ext in IMAGE_EXTS:
            out[name] = _decode_image(v, mode)
        elif ext in ("cls", "cls2", "index"):
            out[name] = int(v.decode().strip())
        elif ext in ("txt", "text"):
            out[name] = v.decode("utf-8")
        elif ext == "json":
            import json

            out[name] = json.loads(v)
        elif ext == "npy":
            import io

            import numpy as np

            out[name] = np.load(io.BytesIO(v), allow_pickle=False)
        else:
            out[name] = v
    return out

AUTO_BATCH_MESSAGE = (
    "RingfeedDataset yields collated batches: build the DataLoader with "
    "batch_size=None (batch_size=1, the default, would add a dimension "
    "to every tensor and fail on ragged batches); the batch size is the "
    "dataset's batch= option")

# -- where the time goes (diagnose()) -------------------------------------
# A producer (the main process with num_workers=0, else each worker) spends
# its time waiting for the engine's next batch, in per-sample work (decode=,
# transform=, batch_transform=), in the rest of making the item, and idle
# (suspended at yield: the loop's step, or the DataLoader's hand-off).
STAGE_KEYS = ("engine_wait_s", "item_s", "decode_s", "transform_s", "batch_transform_s",
              "idle_s")
PUBLISH_S = 0.25  # a worker writes its figures for the main process this often
STEP_WAIT_FRACTION = 0.25  # the loop waited less than this share: its step is the limit
VERDICTS = ("measuring", "step", "transform", "storage", "handoff")


def _figures_new():
    fig = dict.fromkeys(STAGE_KEYS, 0.0)
    fig.update(batches=0, first=None, t_yield=time.perf_counter(), t_published=0.0,
               rss_start_bytes=_memory()["rss_bytes"])
    return fig


def _memory():
    """This process's resident set now and its peak (VmRSS, VmHWM), bytes;
    zeros where /proc says nothing."""
    out = {"rss_bytes": 0, "rss_peak_bytes": 0}
    try:
        with open("/proc/self/status") as f:
            for line in f:
                key = {"VmRSS:": "rss_bytes", "VmHWM:": "rss_peak_bytes"}.get(line[:6])
                if key:
                    out[key] = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return out


def _loop_new(workers):
    # the first batch of each worker carries its start: not a rate
    return {"wait_s": 0.0, "step_s": 0.0, "batches": 0, "first": None, "t_last": None,
            "skip": max(1, workers)}


def _steady(fig, keys):
    """The figures less those of the first batches (they carry the engine's
    open, or the workers' start): the steady state, once there are more."""
    first = fig.get("first") if fig["batches"] > fig.get("skip", 1) else None
    out = {k: fig[k] - (first[k] if first else 0.0) for k in keys}
    out["measured"] = fig["batches"] - (fig.get("skip", 1) if first else 0)
    return out


def _pct(part, whole):
    return 100.0 * part / whole if whole > 0 else 0.0


def _verdict(loop, producers, workers):
    """Which stage is slow, from the loop's wait and step and the producers'
    stages (steady state, summed over producers). The loop waiting less than
    STEP_WAIT_FRACTION of its time: its own step is the limit; else the
    producers' largest share: per-sample work ("transform"), the engine
    ("storage": reading or decoding), or handing batches over ("handoff")."""
    wait, step = loop["wait_s"], loop["step_s"]
    st = {k: sum(p["stages"][k] for p in producers) for k in STAGE_KEYS}
    work = st["decode_s"] + st["transform_s"] + st["batch_transform_s"]
    engine, rest, idle = st["engine_wait_s"], max(0.0, st["item_s"] - work), st["idle_s"]
    wall = work + engine + rest + idle
    out = {"loop": {"batches": loop["batches"], "wait_s": wait, "step_s": step,
                    "wait_fraction": wait / (wait + step) if wait + step > 0 else 0.0},
           "producers": dict(st, count=len(producers), workers=workers),
           "engine": [p.get("engine", {}) for p in producers],
           "memory": [p.get("memory", {}) for p in producers]}
    who = f"{workers} workers" if workers else "the main process"
    shares = (f"{who} spent {_pct(work, wall):.0f}% of {'their' if workers else 'its'} time in per-sample work "
              f"(decode {st['decode_s']:.3f} s, transform {st['transform_s']:.3f} s, "
              f"batch_transform {st['batch_transform_s']:.3f} s), {_pct(engine, wall):.0f}% "
              f"waiting for the engine, {_pct(rest, wall):.0f}% making items and "
              f"{_pct(idle, wall):.0f}% idle")
    loop_words = (f"the loop waited for data {_pct(wait, wait + step):.0f}% of its time "
                  f"({wait:.3f} s; its step {step:.3f} s) over {loop['batches']} batches")
    if loop["measured"] < 2 or wait + step <= 0 or not producers:
        verdict = "measuring"
        text = ("measuring: too few batches to judge (the first of each producer is its "
                "start, not a rate)"
                if producers else "measuring: no producer's figures yet")
    elif wait < STEP_WAIT_FRACTION * (wait + step):
        verdict = "step"
        text = (f"the training step is the bottleneck: {loop_words}; the input keeps up "
                f"({shares})")
    elif workers and idle > work + engine + rest:
        verdict = "handoff"
        text = (f"the hand-off between the workers and the loop is the bottleneck: "
                f"{loop_words}, while {shares} (batches pickled to the main process: "
                f"fewer, larger tensors per item, or pin_memory=False, cost less)")
    elif work >= engine and work >= rest:
        verdict = "transform"
        text = (f"the transform is the bottleneck: {loop_words}; {shares}; more "
                f"workers (num_workers) or cheaper per-sample work would help")
    elif engine >= rest:
        verdict = "storage"
        said = next((e.get("diagnosis_text") for e in out["engine"]
                     if e.get("diagnosis_text")), "")
        text = (f"the engine (storage or decode) is the bottleneck: {loop_words}; {shares}"
                + (f"; the engine says: {said}" if said else ""))
    else:
        verdict = "handoff"
        text = (f"handing batches to the loop is the bottleneck: {loop_words}; {shares} "
                "(larger batches amortise the per-batch cost)")
    out.update(verdict=verdict, text=text)
    return out


ENGINE_FIGURES = ("diagnosis", "diagnosis_text", "consumer_wait_s", "consumer_rate_bps",
                  "producer_rate_bps", "decode_busy_fraction")


def _engine_figures(loader):
    try:
        st = loader.stats()
    except Error:
        return {}
    return {k: st.get(k) for k in ENGINE_FIGURES}


RAGGED_KEYS = ("payload", "offsets")
PADDED_KEYS = ("rows", "lengths")


def _dist_rank_world():
    """torch.distributed's rank and world when initialised, else torchrun's
    RANK / WORLD_SIZE environment, else (None, None)."""
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    env = os.environ
    if env.get("RANK", "").isdigit() and env.get("WORLD_SIZE", "").isdigit():
        return int(env["RANK"]), int(env["WORLD_SIZE"])
    return None, None


def _host_defaults(opts, workers):
    """The engines of one host share it: threads defaults to the CPUs this
    process may use divided by the host's local loaders (LOCAL_WORLD_SIZE
    ranks x DataLoader workers), and a host_budget counts that many loaders.
    Explicit options win."""
    local = os.environ.get("LOCAL_WORLD_SIZE", "")
    loaders = (int(local) if local.isdigit() and int(local) > 0 else 1) * max(1, workers)
    if opts.get("threads") is None:
        try:
            cpus = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            cpus = os.cpu_count() or 1
        opts["threads"] = max(1, cpus // loaders)
    if opts.get("host_budget") not in (None, 0, "0") and opts.get("host_loaders") is None:
        opts["host_loaders"] = loaders
    return opts


def _batches(records, batch, drop_last):
    return records // batch if drop_last else -(-records // batch)


def _round_robin(counts, k):
    """How many of the first k items came from each worker, when the
    DataLoader takes one from each worker in turn, skipping a worker once
    it has none left."""
    got = [0] * len(counts)
    while k > 0 and any(g < c for g, c in zip(got, counts)):
        for i, c in enumerate(counts):
            if k == 0:
                break
            if got[i] < c:
                got[i] += 1
                k -= 1
    return got


class RingfeedDataset(torch.utils.data.IterableDataset):
    """Yields one collated batch per item.

    Ragged (default): {"payload": uint8 tensor, "offsets": int64 tensor of
    records+1 entries}; record i is payload[offsets[i]:offsets[i+1]].
    Padded (pad_to=N): {"rows": uint8 tensor [records, N], "lengths": int64
    tensor [records]}. With as_tuple=True, the same two tensors as a tuple.
    Token windows (seq_len=L, token_out="int64"): one [B, L + 1] tensor
    (inputs x = t[:, :-1], targets y = t[:, 1:]).

    The data: urls (as ringfeed.Loader's), or a mixture, sources=[(dataset,
    weight), ...] or the mixture="mix.txt" option (see ringfeed.Loader).

    rank / world are resolved when iteration starts: explicit arguments,
    else torch.distributed's when it is initialised, else torchrun's
    RANK / WORLD_SIZE. Other keywords are engine options (see
    ringfeed.Loader); transform=, batch_transform= (or collate_fn=), decode=
    and on_error= are per-sample work, done in the DataLoader's workers (see
    docs/python.md). Each iteration opens a loader for `epoch` (set_epoch()
    changes it); with epochs=N one iteration spans N epochs.

    With DataLoader(num_workers=N), each worker opens its own engine as
    virtual rank rank*N + worker of world*N.

    state_dict() is the position after the last batch the training loop
    received (with num_workers=0 and pin_memory=False, the last one this
    dataset yielded; with workers, counted in the main process, whatever the
    workers prefetched); load_state_dict() makes the next iteration resume
    exactly there (on the same world and workers; each remaining record
    once on others). diagnose() says which stage holds the training loop
    back: its step, the per-sample work, the engine, or the hand-off."""

    def __init__(
        self,
        urls: str | os.PathLike | Sequence[str | os.PathLike] | None = None,
        rank: int | None = None,
        world: int | None = None,
        as_tuple: bool = False,
        tail: str | None = None,
        *,
        sources: Sequence[Source] | None = None,
        transform: Callable[[dict], Any] | None = None,
        batch_transform: Callable[[list], Any] | None = None,
        collate_fn: Callable[[list], Any] | None = None,
        decode: str | None = None,
        on_error: str = "raise",
        **options: int | float | str | bool | os.PathLike | None,
    ) -> None:
        super().__init__()
        if decode not in DECODERS:
            raise _lib.config_error_of(
                f"decode={decode!r}: one of {', '.join(repr(d) for d in DECODERS)}",
                str(decode), [str(d) for d in DECODERS if d])
        if on_error not in ("raise", "skip"):
            raise _lib.config_error_of(f"on_error={on_error!r}: 'raise' or 'skip'",
                                       str(on_error), ["raise", "skip"])
        for name, fn in (("transform", transform), ("batch_transform", batch_transform),
                         ("collate_fn", collate_fn)):
            if fn is not None and not callable(fn):
                raise TypeError(f"{name}= must be callable, not {type(fn).__name__}")
        if batch_transform is not None and collate_fn is not None:
            raise TypeError("give batch_transform= or collate_fn=, not both (the same hook)")
        self.transform = transform
        self.batch_transform = batch_transform or collate_fn
        self.decode = decode
        self.on_error = on_error
        self._skipped = 0
        self._rank_arg = rank
        self._world_arg = world
        _data_args(urls, sources, options)  # checked now, not at the first iteration
        self.urls = urls
        # a mixture's sources as the engine takes them: (URL list, weight text)
        self.sources = (None if sources is None else
                        [(u, w) for w, u in _data_args(None, sources, {})[1]])
        self.options = dict(options)
        if tail is not None:
            if tail not in ("drop", "pad"):
                raise ValueError(f"tail={tail!r}: 'drop' or 'pad'")
            self.options["pad_tail"] = tail == "pad"
        self.as_tuple = as_tuple
        self._loader = None
        self._resume = None
        self._len = None
        self._bound = None  # the DataLoader built over this dataset (weak; main process)
        self._iter = None  # main process: the DataLoader iteration with workers under way
        self._spec_path = None  # what each worker iteration runs (written by the main process)
        self._identity = None  # (options key, engine state of rank 0 of 1): the dataset's
        self._opened = None  # (epoch, resume) of the main process's last open
        # a mixture whose weights changed at a resume: the changed stream's
        # identity (an engine state), read through by every later epoch
        self._lineage = None
        self._serial = 0  # main process: DataLoader iterations with workers begun
        self._serial_seen = None  # a worker: the serial of the plan it runs
        self._worker_iters = 0  # a worker: iterations of this copy without a plan
        self._fig = _figures_new()  # this process's producer figures (diagnose())

    # -- rank, world, workers --------------------------------------------
    @property
    def rank(self):
        """This process's rank: the explicit one, else torch.distributed's,
        else torchrun's RANK, else None (0). Resolved when asked."""
        return self._rank_arg if self._rank_arg is not None else _dist_rank_world()[0]

    @property
    def world(self):
        return self._world_arg if self._world_arg is not None else _dist_rank_world()[1]

    def _rank_world(self):
        r, w = self.rank, self.world
        return (r or 0), (w or 1)

    def _options_now(self):
        opts = dict(self.options)
        rank, world = self.rank, self.world
        if rank is not None:
            opts["rank"] = rank
        if world is not None:
            opts["world"] = world
        return opts

    def _workers(self):
        """The number of DataLoader workers reading this dataset: inside a
        worker, its DataLoader's; in the main process, that of the last
        DataLoader built over it (0: none, or num_workers=0)."""
        info = torch.utils.data.get_worker_info()
        if info is not None:
            return info.num_workers
        dl = self._bound() if self._bound is not None else None
        return int(getattr(dl, "num_workers", 0) or 0)

    def __getstate__(self):  # spawned workers: no engine, no weak reference
        d = dict(self.__dict__)
        d["_loader"] = d["_bound"] = d["_iter"] = None
        return d

    # -- length ------------------------------------------------------------
    def _probe_count(self, resume, **over):
        """Batches an engine opened with these options yields in one
        iteration (from the shard indexes; nothing is read): the first
        epoch's count less the batches a same-world resume already took,
        plus the later epochs'."""
        opts = self._options_now()
        opts.update(over)
        first = int(opts.get("epoch", 0))
        epochs = int(opts.get("epochs", 1))
        with self._loader_of(resume, opts) as probe:
            st = probe.stats()
            done = _state.State.decode(probe._save()).batch
        left_epochs = first + epochs - st["epoch"]
        if left_epochs <= 0:
            return 0
        n = max(0, st["epoch_batches"] - done)
        return n + (left_epochs - 1) * st["epoch_batches_later"]

    def __len__(self) -> int:
        """Batches this rank yields in one iteration (every rank the same):
        the engine's count, known at open from the shard indexes, after a
        resume the batches left. With epochs=N, all N epochs; endless
        (epochs=0) has no length. With DataLoader workers, all workers'
        batches (the DataLoader built over the dataset says how many)."""
        opts = self._options_now()
        if int(opts.get("epochs", 1)) == 0:
            raise TypeError("RingfeedDataset with epochs=0 is endless: it has no len()")
        n_workers = self._workers()
        # While an iteration of this epoch is under way (or just ended), its
        # length: the resume it started from, not the epoch's start.
        epoch = int(self.options.get("epoch", 0))
        resume, it = self._resume, self._iter
        if resume is None and self._opened is not None and self._opened[0] == epoch:
            resume = self._opened[1]
        if n_workers and resume is None and it is not None and it["spec"]["epoch"] == epoch \
                and it["spec"]["workers"] == n_workers:
            spec = it["spec"]
        else:
            spec = None
        key = (repr(sorted(opts.items())), repr(resume), n_workers, repr(spec))
        if self._len is None or self._len[0] != key:
            if n_workers == 0:
                resume, over = self._main_resume(resume)
                n = 0 if resume is False else self._probe_count(resume, **over)
            else:
                if spec is None:
                    saved, self._resume = self._resume, resume
                    try:
                        spec = self._plan(n_workers)
                    finally:
                        self._resume = saved
                n = self._workers_len(spec)
            self._len = (key, n)
        return self._len[1]

    def _workers_len(self, spec):
        n, big = spec["workers"], spec["world"] * spec["workers"]
        if spec["slot_states"] is not None:
            batch = int(self.options.get("batch", 0) or 0)
            drop = bool(self.options.get("drop_last"))
            return sum(
                _batches(_state.seq_length(seg), batch, drop) for seg in spec["slot_segs"]
            )
        return n * self._probe_count(
            spec["common"], rank=spec["rank"] * n, world=big, epoch=spec["epoch"]
        )

    @staticmethod
    def _check_not_auto_batched():
        """A DataLoader with batch_size=N (default 1) would stack N of our
        already-collated batches: refuse, saying what to write."""
        try:
            from torch.utils.data._utils.fetch import _IterableDatasetFetcher
        except ImportError:  # another torch layout: nothing to check against
            return
        f = sys._getframe(2)
        for _ in range(4):
            if f is None:
                break
            fetcher = f.f_locals.get("self")
            if isinstance(fetcher, _IterableDatasetFetcher) and fetcher.auto_collation:
                raise TypeError(AUTO_BATCH_MESSAGE)
            f = f.f_back

    def set_epoch(self, epoch: int) -> None:
        """The epoch of the next iteration (workers too, persistent ones
        included: they read it when the iteration starts). A pending resume
        of an earlier epoch is dropped."""
        self.options["epoch"] = int(epoch)
        if self._resume is not None and self._resume_epoch(self._resume) < int(epoch):
            self._resume = None

    @staticmethod
    def _resume_epoch(sd):
        if "workers" in sd:
            return int(sd["workers"]["epoch"])
        return _state.State.decode(Loader._decode_state(sd)).epoch

    # -- the plan of one iteration -----------------------------------------
    def _identity_state(self):
        """The engine state of rank 0 of 1 at the epoch's start: the dataset's
        identity (hash, records, seed, shuffle, pad) for the states this
        binding writes; after a mixture's weights changed at a resume, the
        changed stream's. Opens the shard indexes once per option set."""
        if self._lineage is not None:
            return _state.State.decode(self._lineage)
        return self._probe_identity()

    def _probe_identity(self):
        opts = {k: v for k, v in self.options.items() if k not in ("epoch", "epochs")}
        key = repr(sorted(opts.items()))
        if self._identity is None or self._identity[0] != key:
            with self._loader_of(None, dict(opts, rank=0, world=1)) as probe:
                self._identity = (key, probe._save())
        return _state.State.decode(self._identity[1])

    def _plan(self, n):
        """What the n workers of this rank run in the next iteration: each
        DataLoader worker i plays slot (i + rotate) % n, virtual rank
        rank * n + slot of world * n. From a fresh epoch or an engine state
        (`common`, for every virtual rank, the engine re-splits it), or from a
        workers state: on the same world and workers, each slot its own
        remaining records (`slot_states`, world-1 states), else all of them
        re-split (`common`)."""
        rank, world = self._rank_world()
        spec = {"rank": rank, "world": world, "workers": n,
                "epoch": int(self.options.get("epoch", 0)),
                "epochs": int(self.options.get("epochs", 1)), "rotate": 0, "kind": "fresh",
                "common": None, "slot_states": None, "slot_segs": None, "all_segs": None,
                "stream_epoch": int(self.options.get("epoch", 0))}
        sd = self._resume
        if sd is None and self._lineage is not None:  # the changed stream goes on
            sd = {"version": 1, "state": _state.epoch_start(self._identity_state(),
                                                            spec["epoch"]).encode()}
        if sd is None:
            return spec
        if "workers" not in sd:
            spec.update(kind="native", common=dict(sd),
                        stream_epoch=self._resume_epoch(sd))
            return spec
        w = sd["workers"]
        ident = _state.State.decode(w["identity"])
        spec["stream_epoch"] = int(w["epoch"])
        if w["world"] == world and w["workers"] == n:
            segs = [list(map(tuple, w["remaining"][rank * n + s])) for s in range(n)]
            spec.update(
                kind="slots", rotate=int(w["rotate"]), slot_segs=segs,
                all_segs=[list(map(tuple, x)) for x in w["remaining"]],
                slot_states=[_state.of_sequence(ident, int(w["epoch"]), x).encode()
                             if x else None for x in segs])
        else:
            union = _state.seq_range([tuple(x) for v in w["remaining"] for x in v], 0,
                                     sum(c for v in w["remaining"] for _, c in v))
            spec.update(kind="union", all_segs=[union], common={
                "version": 1,
                "state": _state.of_sequence(ident, int(w["epoch"]), union).encode()})
        return spec

    def _read_spec(self, n):
        """Inside a worker: the plan the main process wrote when this
        iteration started (a persistent worker's copy of the dataset is
        older), else one made here."""
        path = self._spec_path
        if path and os.path.exists(path):
            with open(path, "rb") as f:
                spec = pickle.load(f)
            if spec["workers"] == n:
                self._serial_seen = spec.get("serial")
                return spec
        # No plan: the main process did not see this iteration start (torch's
        # DataLoader could not be wrapped, or its __iter__ was bypassed). A
        # first iteration from the epoch's start is still right; a resume or
        # a persistent worker's next iteration would repeat data: refused.
        why = HOOKS_MISSING or "the DataLoader's __iter__ did not run ringfeed's wrapper"
        self._worker_iters += 1
        if self._resume is not None or self._worker_iters > 1:
            what = ("a resume (load_state_dict)" if self._resume is not None
                    else "another iteration of persistent workers")
            raise RuntimeError(
                f"RingfeedDataset in a DataLoader worker: {what} needs the main process's "
                f"plan, and there is none ({why}); use num_workers=0, or "
                "persistent_workers=False without load_state_dict()")
        return self._plan(n)

    def _on_iter_start(self, loader):
        """Main process, a DataLoader iteration with workers begins (before
        any worker starts on it): writes its plan for the workers, and starts
        counting the batches the loop receives. The pending resume is used
        up (as with num_workers=0). Returns the iteration's serial number."""
        n = int(loader.num_workers or 0)
        spec = self._plan(n)
        self._serial += 1
        spec["serial"] = self._serial
        if self._spec_path is None:
            where = "/dev/shm" if os.path.isdir("/dev/shm") else None
            fd, self._spec_path = tempfile.mkstemp(prefix="ringfeed-plan-", dir=where)
            os.close(fd)
            weakref.finalize(self, _unlink, self._spec_path, os.getpid())
        tmp = self._spec_path + ".tmp"
        with open(tmp, "wb") as f:
            pickle.dump(spec, f)
        os.replace(tmp, self._spec_path)
        self._iter = {"spec": spec, "k": 0, "serial": self._serial, "loop": _loop_new(n)}
        self._resume = None
        self._opened = None
        self._bound = weakref.ref(loader)
        return self._serial

    def _on_received(self, serial, t_asked, t_got):
        """The loop received a batch of iteration `serial`, having asked for
        it at t_asked (the time before is the loop's own: its step)."""
        it = self._iter
        if it is None or it["serial"] != serial:
            return
        it["k"] += 1
        lp = it["loop"]
        lp["wait_s"] += t_got - t_asked
        if lp["t_last"] is not None:
            lp["step_s"] += t_asked - lp["t_last"]
        lp["t_last"] = t_got
        lp["batches"] += 1
        if lp["batches"] == lp["skip"]:
            lp["first"] = {"wait_s": lp["wait_s"], "step_s": lp["step_s"]}

    def _workers_state(self):
        """The state after the batches the loop received in this iteration
        (not what the workers produced): the round-robin says which worker
        each came from, so each virtual rank's remaining records are known,
        for every rank alike (ranks receive the same count)."""
        it = self._iter
        spec, k = it["spec"], it["k"]
        n, world = spec["workers"], spec["world"]
        big, rot = n * world, spec["rotate"]
        if spec["epochs"] != 1:
            raise ValueError(
                "RingfeedDataset.state_dict() with DataLoader workers needs epochs=1 "
                "(one epoch per iteration; set_epoch() between them)")
        ident = self._identity_state()
        if spec["kind"] == "slots":
            seqs = spec["all_segs"]
        elif spec["kind"] == "union":
            seqs = _state.split(spec["all_segs"][0], big, ident.pad)
        elif spec["kind"] == "native":
            r = _state.State.decode(Loader._decode_state(spec["common"]))
            if r.world == big and r.pad == ident.pad:
                seqs = [_state.seq_range(x, r.record, _state.seq_length(x) - r.record)
                        for x in _state.split(r.sequence(), big, ident.pad)]
            else:
                seqs = _state.split(_state.remaining(r), big, ident.pad)
        else:
            seqs = _state.split([(0, ident.dataset_records)], big, ident.pad)
        batch = int(self.options.get("batch", 0) or 0)
        if batch <= 0:
            raise ValueError("RingfeedDataset with workers: set batch= (records per batch)")
        drop = bool(self.options.get("drop_last"))
        mine = spec["rank"] * n
        counts = [_batches(_state.seq_length(seqs[mine + (i + rot) % n]), batch, drop)
                  for i in range(n)]
        if k > sum(counts):
            raise RuntimeError(
                f"RingfeedDataset.state_dict(): the loop received {k} batches of an "
                f"iteration of {sum(counts)}: ringfeed missed the start of an iteration "
                "(a DataLoader whose __iter__ bypasses torch's?); state unknown")
        got = _round_robin(counts, k)
        rem = []
        for v in range(big):
            length = _state.seq_length(seqs[v])
            took = min(got[(v % n - rot) % n] * batch, length)
            rem.append(_state.seq_range(seqs[v], took, length - took))
        return {"version": 1, "workers": {
            "epoch": spec["stream_epoch"], "world": world, "workers": n,
            "rotate": (rot + k) % n, "batch": batch, "identity": ident.encode(),
            "remaining": rem}}

    def _loader_of(self, resume, opts):
        """A Loader of this dataset (its urls, sources or mixture file)."""
        return Loader(self.urls, resume=resume, sources=self.sources, **opts)

    def _open(self):
        if self._loader is not None:
            self._loader.close()
        self._iter = None
        opts = self._options_now()
        resume, self._resume = self._resume, None
        self._opened = (int(self.options.get("epoch", 0)), resume)
        resume, over = self._main_resume(resume)
        if resume is False:
            return None
        opts.update(over)
        self._loader = self._loader_of(resume, _host_defaults(opts, 0))
        return self._loader

    def _reweigh(self, sd):
        """A mixture state saved with other weights than this dataset's: the
        change is made once, here, by an engine of world 1 that resumes it
        (mix_rebase.h), and its state taken instead, so every engine this
        dataset opens (ranks, workers, later epochs) reads the one changed
        stream. A state that carries a change keeps it for later epochs."""
        if "workers" in sd:
            w = sd["workers"]
            ident, st = _state.State.decode(w["identity"]), None
        else:
            st = ident = _state.State.decode(Loader._decode_state(sd))
        if not ident.flags & _state.FLAG_MIX:
            self._lineage = None
            return sd
        if not _state.same_shares(ident.mix_weights(), self._probe_identity().mix_weights()):
            if st is None:  # what no virtual rank took, as one sequence
                rem = [tuple(x) for v in w["remaining"] for x in v]
                st = _state.of_sequence(ident, int(w["epoch"]),
                                        _state.seq_range(rem, 0, _state.seq_length(rem)))
                sd = {"version": 1, "state": st.encode()}
            opts = {k: v for k, v in self.options.items() if k not in ("epoch", "epochs")}
            with self._loader_of(sd, dict(opts, rank=0, world=1, epoch=st.epoch,
                                          epochs=0)) as probe:
                raw = probe._save()
            sd = {"version": 1, "state": raw}
            ident = _state.State.decode(raw)
        self._lineage = ident.encode() if ident.rebase() is not None else None
        return sd

    def _main_resume(self, resume):
        """(engine resume, option overrides) for the main process's engine:
        a workers state is read as by one worker (slot 0 of 1); False when
        nothing of it is left for this rank."""
        if resume is None and self._lineage is not None:  # the changed stream goes on
            epoch = int(self.options.get("epoch", 0))
            resume = {"version": 1, "state": _state.epoch_start(self._identity_state(),
                                                                epoch).encode()}
        if resume is None or "workers" not in resume:
            return resume, {}
        saved, self._resume = self._resume, resume
        try:
            spec = self._plan(1)
        finally:
            self._resume = saved
        if spec["slot_states"] is None:
            return spec["common"], {}
        if spec["slot_states"][0] is None:
            return False, {}
        return {"version": 1, "state": spec["slot_states"][0]}, {"rank": 0, "world": 1}

    def _open_worker(self, info):
        n = info.num_workers
        spec = self._read_spec(n)
        slot = (info.id + spec["rotate"]) % n
        opts = dict(self.options)
        opts["epoch"] = spec["epoch"]
        if spec["slot_states"] is not None:
            if spec["slot_states"][slot] is None:
                return None
            opts.update(rank=0, world=1)
            resume = {"version": 1, "state": spec["slot_states"][slot]}
        else:
            opts.update(rank=spec["rank"] * n + slot, world=spec["world"] * n)
            resume = spec["common"]
        self._loader = self._loader_of(resume, _host_defaults(opts, n))
        return self._loader

    def _fields_item(self, batch):
        """Multi-field samples: {"__key__": [str], FIELD: (payload, offsets,
        present) tensors} per field of the dataset."""
        out = {"__key__": batch.keys}
        for name in batch.field_names:
            f = batch.field(name, writable=True)
            out[name] = (
                torch.from_numpy(f.payload),
                torch.from_numpy(f.offsets),
                torch.from_numpy(f.present.astype("bool")),
            )
        batch.release()
        return out

    def _samples_item(self, batch):
        """Per-sample work (decode=, transform=, then batch_transform= on
        the list): each sample is a dict of its fields' bytes ("__key__" its
        key; a single-field record is {"data": bytes}). A sample whose decode
        or transform raises stops the stream with SampleError naming it, or
        with on_error="skip" is left out and counted (its batch is one
        sample shorter: every rank still yields the same number of
        batches)."""
        names = batch.field_names
        keys = batch.keys if names else None
        fields = [batch[n] for n in names]
        if not names:
            payload, offsets = batch.payload, batch.offsets
        out = []
        for i in range(batch.records):
            if names:
                sample = {"__key__": keys[i]}
                for name, f in zip(names, fields):
                    v = f.view(i)
                    if v is not None:
                        sample[name] = bytes(v)
            else:
                sample = {"data": payload[offsets[i]:offsets[i + 1]].tobytes()}
            fig = self._fig
            try:
                if self.decode:
                    t = time.perf_counter()
                    try:
                        sample = decode_sample(sample, self.decode)
                    finally:
                        fig["decode_s"] += time.perf_counter() - t
                if self.transform is not None:
                    t = time.perf_counter()
                    try:
                        sample = self.transform(sample)
                    finally:
                        fig["transform_s"] += time.perf_counter() - t
            except Exception as e:
                where = self._where(batch, i, keys[i] if names else None)
                if self.on_error == "skip":
                    self._skipped += 1
                    self._note_skip()
                    continue
                raise SampleError(f"{where}: {type(e).__name__}: {e}") from e
            out.append(sample)  # bytes copied out: the batch can go back below
        batch.release()
        if self.batch_transform is None:
            return out
        t = time.perf_counter()
        try:
            return self.batch_transform(out)
        finally:
            self._fig["batch_transform_s"] += time.perf_counter() - t

    def _where(self, batch, i, key):
        """A failing sample named for SampleError: its key, its shard (the
        batch says it for multi-field samples; else known here only for a
        dataset of one local file), and its position:
        record i of the batch, and of this (virtual) rank's epoch stream
        (what `ringfeed read --rank R --world W` reads in the same order)."""
        rank, world = self._rank_world()
        if self._loader is not None:
            try:
                st = self._loader.stats()
                rank, world = st.get("rank", rank), st.get("world", world)
            except Error:
                pass
        shard = ""
        try:
            name = batch.shard_of(i)
        except (Error, IndexError, AttributeError):
            name = None
        if name:
            shard = f"shard {name}, "
        elif self.urls is not None:
            urls = self.urls
            if isinstance(urls, (list, tuple)) and len(urls) == 1:
                urls = urls[0]
            if isinstance(urls, (str, os.PathLike)) and os.path.isfile(urls) and \
                    not os.fspath(urls).endswith((".rfm", ".json")):
                shard = f"shard {os.fspath(urls)}, "
        return (f"sample {key!r} ({shard}record {i} of batch {batch.index}, position "
                f"{batch.first_record + i} of rank {rank} of {world}'s epoch-{batch.epoch} "
                "stream)")

    def _publish(self, info, loader, fig):
        """A worker's figures, where the main process's diagnose() reads them."""
        fig["t_published"] = time.perf_counter()
        if not self._spec_path:
            return
        data = {"serial": self._serial_seen, "batches": fig["batches"], "worker": info.id,
                "pid": os.getpid(), "stages": _steady(fig, STAGE_KEYS),
                "engine": _engine_figures(loader),
                "memory": dict(_memory(), rss_start_bytes=fig["rss_start_bytes"])}
        path = f"{self._spec_path}.fig{info.id}"
        try:
            with open(path + ".tmp", "wb") as f:
                pickle.dump(data, f)
            os.replace(path + ".tmp", path)
        except OSError:
            pass  # figures only: the stream goes on

    def _worker_figures(self):
        """The figures the workers of the current iteration published."""
        out = []
        it = self._iter
        for i in range(it["spec"]["workers"]):
            try:
                with open(f"{self._spec_path}.fig{i}", "rb") as f:
                    data = pickle.load(f)
            except (OSError, EOFError, pickle.UnpicklingError):
                continue
            if data.get("serial") == it["serial"]:
                out.append(data)
        return out

    def diagnose(self) -> dict:
        """Which stage holds the training loop back, in plain words: the
        training step ("step": the loop waited for data less than a quarter
        of its time), the per-sample work ("transform": decode=, transform=,
        batch_transform=), the engine ("storage": reading or decoding, with
        the engine's own diagnosis), or handing batches over ("handoff"), or
        "measuring" before three batches. Over the current (or last)
        iteration, less its first batch (the start). Returns {"verdict",
        "text", "loop", "producers", "engine"}; with workers, from the
        figures they publish every 0.25 s and at their iteration's end."""
        if self._iter is not None:
            lp = self._iter["loop"]
            loop = dict(_steady(lp, ("wait_s", "step_s")), batches=lp["batches"])
            return _verdict(loop, self._worker_figures(), self._iter["spec"]["workers"])
        fig = self._fig
        st = _steady(fig, STAGE_KEYS)
        loop = {"batches": fig["batches"], "wait_s": st["engine_wait_s"] + st["item_s"],
                "step_s": st["idle_s"], "measured": st["measured"]}
        eng = _engine_figures(self._loader) if self._loader is not None else {}
        mem = dict(_memory(), rss_start_bytes=fig["rss_start_bytes"])
        prods = [{"stages": st, "engine": eng, "memory": mem}] if fig["batches"] else []
        return _verdict(loop, prods, 0)

    def _note_skip(self):
        """Skips counted where the main process can add them up (a worker's
        count lives in its own process)."""
        info = torch.utils.data.get_worker_info()
        if info is not None and self._spec_path:
            with open(f"{self._spec_path}.skips{info.id}", "w") as f:
                f.write(str(self._skipped))

    @property
    def samples_skipped(self):
        """Samples left out by on_error="skip" (this process's, plus the
        DataLoader workers' of the last worker iteration)."""
        n = self._skipped
        if self._spec_path and self._iter is not None:
            for i in range(self._iter["spec"]["workers"]):
                try:
                    with open(f"{self._spec_path}.skips{i}") as f:
                        n += int(f.read() or 0)
                except (OSError, ValueError):
                    pass
        return n

    def _item(self, batch):
        """The batch's tensors; releases the batch, so from here on only the
        tensors keep its memory out of the budget."""
        if self.decode or self.transform is not None or self.batch_transform is not None:
            return self._samples_item(batch)
        if batch.field_names:
            return self._fields_item(batch)
        if self.options.get("seq_len"):
            # windows: one dense [B, L + 1] tensor of the token type, no copy
            arr = batch.tokens(writable=True)
            if arr.dtype.kind == "u" and arr.dtype.itemsize > 1:
                raise TypeError(
                    f"torch has no {arr.dtype.name} tensors: open with token_out='int64' "
                    "(or 'int32'), which widens the tokens in the engine's decode copy"
                )
            out = torch.from_numpy(arr)
            batch.release()
            return out
        if batch.row_bytes:
            rows = torch.from_numpy(batch.payload_array(writable=True))
            rows = rows[: batch.records * batch.row_bytes].view(batch.records, batch.row_bytes)
            lengths = torch.from_numpy(batch.lengths_array().astype("int64"))
            out = (rows, lengths)
            keys = PADDED_KEYS
        else:
            payload = torch.from_numpy(batch.payload_array(writable=True))
            offsets = torch.from_numpy(batch.offsets_array(writable=True))
            out = (payload, offsets)
            keys = RAGGED_KEYS
        batch.release()
        return out if self.as_tuple else dict(zip(keys, out))

    def __iter__(self):
        self._check_not_auto_batched()
        info = torch.utils.data.get_worker_info()
        loader = self._open() if info is None else self._open_worker(info)
        if loader is None:  # nothing left of the resumed epoch for this slot
            return
        fig = self._fig = _figures_new()
        try:
            while True:
                t0 = time.perf_counter()
                try:
                    batch = next(loader)
                except StopIteration:
                    break
                fig["engine_wait_s"] += time.perf_counter() - t0
                # No local keeps the item: while suspended here, the generator
                # must not hold the consumer's previous batch.
                yield self._timed_item(batch, fig)
                fig["idle_s"] += time.perf_counter() - fig["t_yield"]
                if info is not None and fig["t_yield"] - fig["t_published"] >= PUBLISH_S:
                    self._publish(info, loader, fig)
        finally:
            if info is not None:
                self._publish(info, loader, fig)
                loader.close()

    def _timed_item(self, batch, fig):
        t = time.perf_counter()
        item = self._item(batch)
        fig["t_yield"] = now = time.perf_counter()
        fig["item_s"] += now - t
        fig["batches"] += 1
        if fig["batches"] == 1:  # the first batch carries the open: not a rate
            fig["first"] = {k: fig[k] for k in STAGE_KEYS}
        return item

    def state_dict(self) -> dict | None:
        """{"version", ...}: the position after the last batch the training
        loop received (or the pending resume point when nothing was iterated
        since). With num_workers=0 the engine's state ({"version", "state"}).
        With DataLoader workers, taken in the main process: a function of the
        batches the loop received from the DataLoader's iterator, not of what
        the workers produced or the DataLoader prefetched; it resumes
        exactly on the same world and number of workers (the same stream),
        and delivers each remaining record once on another world, batch
        size or number of workers. Needs epochs=1 with workers."""
        if self._resume is not None:
            return dict(self._resume)
        if self._iter is not None:
            return self._workers_state()
        if self._loader is None:
            if HOOKS_MISSING:
                raise RuntimeError(
                    "RingfeedDataset.state_dict(): ringfeed could not wrap torch "
                    f"{torch.__version__}'s DataLoader ({HOOKS_MISSING}), so with workers "
                    "the main process cannot know the batches the loop received; "
                    "use num_workers=0 for resumable runs")
            return None
        return self._loader.state_dict()

    def load_state_dict(self, sd: dict | None) -> None:
        """Resume there on the next iteration (None: start afresh)."""
        if sd is not None:
            if isinstance(sd, dict) and "workers" in sd:
                if sd.get("version") != 1:
                    raise ValueError(f"ringfeed state: version {sd.get('version')!r}, "
                                     "this binding reads 1")
                _state.State.decode(sd["workers"]["identity"])
            else:
                Loader._decode_state(sd)  # check the version now, not at iteration
            sd = self._reweigh(dict(sd))
        else:
            self._lineage = None
        self._resume = sd
        self._iter = None
        self._opened = None
        if self._loader is not None:
            self._loader.close()
            self._loader = None

    def stats(self) -> dict | None:
        """The engine's figures (this process's engine; None before one opened)."""
        return self._loader.stats() if self._loader is not None else None

    def close(self) -> None:
        """Closes this process's engine (iteration opens a new one)."""
        if self._loader is not None:
            self._loader.close()
            self._loader = None


class _Received:
    """The DataLoader's iterator as the training loop sees it (returned by
    DataLoader.__iter__ for a RingfeedDataset with workers): counts the
    batches the loop receives and times its waits; everything else is the
    DataLoader iterator's own."""

    def __init__(self, it, ds, serial):
        self._it, self._ds, self._serial = it, weakref.ref(ds), serial

    def __iter__(self):
        return self

    def __next__(self):
        t = time.perf_counter()
        item = next(self._it)
        ds = self._ds()
        if ds is not None:
            ds._on_received(self._serial, t, time.perf_counter())
        return item

    def __len__(self):
        return len(self._it)

    def __getattr__(self, name):
        if name.startswith("__") or name in ("_it", "_ds", "_serial"):
            raise AttributeError(name)  # never recurse (copies, pickling)
        return getattr(self._it, name)


def _unlink(path, owner):
    if os.getpid() != owner:  # a forked worker leaves the main process's file
        return
    import glob

    for p in [path] + glob.glob(glob.escape(path) + ".*"):
        try:
            os.unlink(p)
        except OSError:
            pass


def _install_hooks(cls):
    """The main process learns when a DataLoader iteration with workers
    starts (before its workers do) and counts the batches the loop receives,
    through two wrappers of public DataLoader methods, active only for a
    RingfeedDataset: __init__(self, dataset, ...) binds the dataset to its
    DataLoader (len() counts its workers; batch_size is checked), __iter__
    writes the iteration's plan and hands the loop a counting iterator.
    Returns None, or why they could not be installed on this layout (then
    state_dict() with workers raises, saying so)."""
    if getattr(cls, "_ringfeed_hooked", False):
        return None
    import inspect

    loader_init, loader_iter = cls.__dict__.get("__init__"), cls.__dict__.get("__iter__")
    if not inspect.isfunction(loader_init) or not inspect.isfunction(loader_iter):
        return f"{cls.__qualname__} defines no __init__ / __iter__ functions of its own"
    try:
        init_params = list(inspect.signature(loader_init).parameters)
        iter_params = list(inspect.signature(loader_iter).parameters)
    except (TypeError, ValueError) as e:
        return f"{cls.__qualname__}'s signatures cannot be read ({e})"
    if init_params[:2] != ["self", "dataset"] or iter_params != ["self"]:
        return (f"{cls.__qualname__}.__init__({', '.join(init_params)}) / "
                f"__iter__({', '.join(iter_params)}): not (self, dataset, ...) / (self)")

    def dataloader_init(self, dataset, *a, **k):
        loader_init(self, dataset, *a, **k)
        if isinstance(dataset, RingfeedDataset):
            if getattr(self, "batch_size", None) is not None:
                raise TypeError(AUTO_BATCH_MESSAGE)
            dataset._bound = weakref.ref(self)

    def dataloader_iter(self):
        ds = getattr(self, "dataset", None)
        if not isinstance(ds, RingfeedDataset) or not getattr(self, "num_workers", 0):
            return loader_iter(self)
        serial = ds._on_iter_start(self)
        return _Received(loader_iter(self), ds, serial)

    for new, old in ((dataloader_init, loader_init), (dataloader_iter, loader_iter)):
        new.__name__, new.__qualname__, new.__doc__ = old.__name__, old.__qualname__, old.__doc__
        new.__wrapped__ = old
    cls.__init__, cls.__iter__ = dataloader_init, dataloader_iter
    cls._ringfeed_hooked = True
    return None


HOOKS_MISSING = _install_hooks(torch.utils.data.DataLoader)
"""None, or why ringfeed could not wrap torch's DataLoader (see
_install_hooks): then state_dict() with workers raises, and a worker
refuses what it cannot do right without the main process's plan."""
