"""Per-sample and per-batch work in RingfeedDataset (in the DataLoader's
workers when there are some): WebDataset decoders by field name (real JPEGs
made with PIL), transform= and batch_transform=, a transform that raises
names the sample (and crosses from a worker whole), on_error="skip" leaves it
out counted with every rank still yielding the same number of batches; the
engine's threads default to the CPUs over the host's local loaders; a
misspelt option suggests the nearest one."""

import io
import os
import tarfile
import time

import pytest
import torch
import torch.utils.data

import ringfeed
from ringfeed.torch import RingfeedDataset, SampleError

PIL = pytest.importorskip("PIL.Image")


@pytest.fixture(scope="module")
def jpegs(tmp_path_factory):
    """Two tar shards of 12 samples: a 16x12 JPEG of one colour, cls, json."""
    d = tmp_path_factory.mktemp("jpegs")
    samples = []
    for s in range(2):
        with tarfile.open(d / f"shard-{s}.tar", "w") as t:
            for i in range(12):
                key = f"{s}{i:04d}"
                buf = io.BytesIO()
                PIL.new("RGB", (16, 12), (i * 20, 255 - i * 20, s * 200)).save(buf, "JPEG")
                fields = {"jpg": buf.getvalue(), "cls": b"%d" % (i % 3),
                          "json": b'{"n": %d}' % i}
                for ext, data in fields.items():
                    ti = tarfile.TarInfo(f"{key}.{ext}")
                    ti.size = len(data)
                    t.addfile(ti, io.BytesIO(data))
                samples.append((key, i % 3))
    return str(d), samples


OPTS = dict(batch=4, budget="16MiB", shuffle=False, threads=1)


def to_pair(sample):
    return sample["jpg"], sample["cls"], sample["__key__"]


def stack(samples):
    imgs, cls, keys = zip(*samples)
    return torch.stack(imgs), torch.tensor(cls), list(keys)


@pytest.mark.parametrize("workers", [0, 2])
def test_decode_transform_batch_transform(jpegs, workers):
    d, samples = jpegs
    ds = RingfeedDataset(d, decode="torchrgb8", transform=to_pair, batch_transform=stack, **OPTS)
    dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=workers)
    keys, classes = [], []
    for imgs, cls, k in dl:
        assert imgs.shape == (len(k), 3, 12, 16) and imgs.dtype == torch.uint8
        keys.extend(k)
        classes.extend(cls.tolist())
    assert sorted(zip(keys, classes)) == sorted(samples)
    ds.close()


def test_decoders_by_field_name(jpegs):
    d, _ = jpegs
    ds = RingfeedDataset(d, decode="pil", **OPTS)
    batch = next(iter(ds))  # no batch_transform: the list of samples
    s = batch[1]
    assert s["__key__"] == "00001" and s["cls"] == 1 and s["json"] == {"n": 1}
    assert s["jpg"].size == (16, 12)
    rgb = ringfeed.torch.decode_sample({"x.png": _png(), "t.txt": b"hi"}, "rgb8")
    assert rgb["x.png"].shape == (2, 3, 3) and rgb["t.txt"] == "hi"
    ds.close()


def _png():
    buf = io.BytesIO()
    PIL.new("RGB", (3, 2)).save(buf, "PNG")
    return buf.getvalue()


def bad_on(key):
    def fn(sample):
        if sample["__key__"] == key:
            raise ValueError("cannot use this one")
        return sample["cls"]

    return fn


@pytest.mark.parametrize("workers", [0, 2])
def test_transform_raising_names_the_sample(jpegs, workers):
    d, _ = jpegs
    ds = RingfeedDataset(d, transform=bad_on("10005"), decode="pil", **OPTS)
    dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=workers)
    with pytest.raises(SampleError, match=r"sample '10005'.*cannot use this one"):
        for _ in dl:
            pass
    ds.close()


def test_sample_error_names_the_shard_and_position(jpegs):
    d, _ = jpegs
    ds = RingfeedDataset(os.path.join(d, "shard-1.tar"), transform=bad_on("10005"), **OPTS)
    with pytest.raises(SampleError, match=r"sample '10005' \(shard .*shard-1\.tar, record 1 "
                       r"of batch 1, position 5 of rank 0 of 1's epoch-0 stream\)"):
        list(torch.utils.data.DataLoader(ds, batch_size=None))
    ds.close()


@pytest.mark.parametrize("workers", [0, 2])
def test_sample_error_names_the_shard_of_a_directory(jpegs, workers):
    # a dataset of several shards: the batch says which one the sample came from
    d, _ = jpegs
    ds = RingfeedDataset(d, transform=bad_on("10005"), **OPTS)
    with pytest.raises(SampleError, match=r"sample '10005' \(shard [^,]*shard-1\.tar, record "):
        list(torch.utils.data.DataLoader(ds, batch_size=None, num_workers=workers))
    ds.close()


@pytest.mark.parametrize("workers", [0, 2])
def test_skip_policy_counts_and_keeps_ranks_equal(jpegs, workers):
    d, samples = jpegs
    counts, got, skipped = set(), [], 0
    for rank in range(2):
        ds = RingfeedDataset(d, rank=rank, world=2, transform=bad_on("10005"),
                             on_error="skip", **OPTS)
        dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=workers)
        batches = list(dl)
        assert len(batches) == len(dl)
        counts.add(len(batches))
        got.extend(c for b in batches for c in b)
        skipped += ds.samples_skipped
        ds.close()
    assert len(counts) == 1  # the skip did not make the ranks unequal
    assert skipped == 1 and len(got) == len(samples) - 1


def test_threads_default_shares_the_host(jpegs, monkeypatch):
    d, _ = jpegs
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    opts = dict(OPTS)
    del opts["threads"]
    ds = RingfeedDataset(d, **opts)
    next(iter(ds))
    cpus = len(os.sched_getaffinity(0))
    assert ds.stats()["threads"] == max(1, cpus // 2)
    ds.close()


def test_misspelt_options_suggest(jpegs):
    d, _ = jpegs
    with pytest.raises(ringfeed.ConfigError, match="did you mean 'torchrgb8'"):
        RingfeedDataset(d, decode="torchrbg8", **OPTS)
    with pytest.raises(ValueError, match=r"ringfeed.config_keys\(\).*did you mean .shuffle_window."):
        ringfeed.Loader(d, shufle_window=4)


def slow(sample):
    time.sleep(0.02)  # 20 ms a sample: 80 ms a batch of 4
    return sample["cls"]


def fast(sample):
    return sample["cls"]


@pytest.mark.parametrize("workers", [0, 2])
def test_diagnose_names_a_slow_transform(jpegs, workers):
    """Gross ratios only: 20 ms a sample and a loop that takes no time is the
    transform; a free transform and a loop that sleeps 50 ms a batch is the
    step. The verdict's word is asserted, never a time."""
    d, _ = jpegs
    verdicts = {}
    for fn, step_s in ((slow, 0.0), (fast, 0.05)):
        ds = RingfeedDataset(d, transform=fn, **OPTS)
        dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=workers)
        assert ds.diagnose()["verdict"] == "measuring"
        for _ in dl:
            time.sleep(step_s)
        diag = ds.diagnose()
        verdicts[fn.__name__] = diag["verdict"]
        assert diag["loop"]["batches"] == 6 and diag["producers"]["count"] == max(1, workers)
        ds.close()
    assert verdicts["slow"] == "transform", diag
    assert verdicts["fast"] == "step"
