"""Mixtures from Python (issue 25): Loader(sources=[(dataset, weight), ...])
reads the stream `ringfeed read --mixture` reads, whatever the spelling of
the weights (float, int, str) and of a dataset (a directory or its list of
shards); mixture= reads a mixture file; urls, sources= and mixture= are
exclusive; weights the engine would not take exactly are refused naming the
source; RingfeedDataset(sources=...) pickles for spawned workers, has its
len(), and resumes exactly with DataLoader workers."""

import collections
import pathlib
import pickle
import subprocess

import pytest
import torch.utils.data

import ringfeed
from ringfeed import _state
from ringfeed.torch import RingfeedDataset


@pytest.fixture(scope="module")
def mix(cli, tmp_path_factory):
    """Two line datasets, a (40 records) and b (500), and a mixture file."""
    root = tmp_path_factory.mktemp("mix")
    for name, n, block, shard in (("a", 40, "64", "128"), ("b", 500, "1KiB", "2KiB")):
        txt = root / f"{name}.txt"
        txt.write_text("".join(f"{name}{i:04d}\n" for i in range(n)))
        subprocess.run([cli, "pack", "--from", "lines", str(txt), "-o", str(root / name),
                        "--block-size", block, "--shard-size", shard],
                       check=True, capture_output=True)
    (root / "mix.txt").write_text("# ringfeed mixture v1\n0.3\ta\n0.7\tb/manifest.rfm\n")
    return root


def records(**kw):
    with ringfeed.Loader(batch=16, seed=5, **kw) as loader:
        return [r.decode() for r in loader.records()]


def test_sources_read_the_cli_mixture_stream(cli, mix):
    want = subprocess.run([cli, "read", "--mixture", str(mix / "mix.txt"), "--batch", "16",
                           "--seed", "5", "--output", "lines"],
                          check=True, capture_output=True, text=True).stdout.split("\n")[:-1]
    assert len(want) == 715  # 500 / 0.7: the largest-weight source read once
    a, b = str(mix / "a"), str(mix / "b" / "manifest.rfm")
    assert records(sources=[(a, 0.3), (b, 0.7)]) == want
    assert records(sources=[(a, "0.3"), (pathlib.Path(b), 7 / 10)]) == want
    assert records(sources=[(a, 3), (b, 7)]) == want  # relative weights
    shards = sorted(str(p) for p in (mix / "a").glob("*.rfs"))
    assert len(shards) > 1
    assert records(sources=[(shards, 0.3), (b, 0.7)]) == want  # a source as a URL list
    assert records(mixture=str(mix / "mix.txt")) == want
    assert records(mixture=mix / "mix.txt") == want  # PathLike
    other = records(sources=[(a, 0.5), (b, 0.5)])
    assert sum(r[0] == "a" for r in other) == 500 and other != want


@pytest.mark.parametrize("kw,error,words", [
    ({"urls": "x", "sources": [("x", 1)]}, ValueError, "not urls and sources="),
    ({"sources": [("x", 1)], "mixture": "m.txt"}, ValueError, "not sources= and mixture="),
    ({}, ValueError, "no data given"),
    ({"sources": []}, ValueError, "sources= is empty"),
    ({"sources": "data/a"}, TypeError, "list of (dataset, weight) pairs"),
    ({"sources": [("a", 0.5, 1)]}, TypeError, "sources[0]: expected a (dataset, weight)"),
    ({"sources": [([], 1)]}, ValueError, "sources[0]: its dataset is an empty list"),
    ({"sources": [("a", 1), ("b", 0.1234567)]}, ringfeed.ConfigError,
     "sources[1]'s weight 0.1234567: more than 6 decimal places"),
    ({"sources": [("a", 0.1 + 0.2)]}, ringfeed.ConfigError, "more than 6 decimal places"),
    ({"sources": [("a", -1)]}, ringfeed.ConfigError, "a weight is 0 or more"),
    ({"sources": [("a", float("inf"))]}, ringfeed.ConfigError, "not a finite number"),
    ({"sources": [("a", True)]}, TypeError, "not a bool"),
    ({"sources": [("a", b"1")]}, TypeError, "not a bytes"),
])
def test_bad_sources_are_refused_clearly(kw, error, words):
    with pytest.raises(error) as e:
        ringfeed.Loader(**kw)
    assert words in str(e.value)


def test_engine_errors_name_the_source(mix):
    with pytest.raises(ringfeed.ConfigError) as e:  # the engine's own check
        ringfeed.Loader(sources=[(str(mix / "a"), 1), (str(mix / "b"), "1e-3")])
    assert "sources[1]" in str(e.value) and "1e-3" in str(e.value)
    with pytest.raises(ringfeed.Error) as e:
        ringfeed.Loader(sources=[(str(mix / "a"), 1), (str(mix / "nope"), 1)])
    assert str(mix / "nope") in str(e.value)
    with pytest.raises(ringfeed.Error) as e:
        ringfeed.Loader(mixture=str(mix / "none.txt"))
    assert "none.txt" in str(e.value)


def ids(item):
    p, o = item["payload"], item["offsets"].tolist()
    return [bytes(p[o[i]:o[i + 1]].numpy()).decode() for i in range(len(o) - 1)]


@pytest.mark.parametrize("workers", [0, 2])
def test_dataset_sources_workers_resume(mix, workers):
    src = [(str(mix / "a"), 0.3), (str(mix / "b"), "0.7")]
    ds = RingfeedDataset(sources=src, batch=10, seed=3)
    copy = pickle.loads(pickle.dumps(ds))  # as a spawned worker gets it
    assert copy.sources == ds.sources and copy.urls is None
    dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=workers)
    assert len(dl) == (72 if workers == 0 else 2 * 36)
    full = [r for item in dl for r in ids(item)]
    assert len(full) == (715 if workers == 0 else 714)  # 2 virtual ranks: the tail of 1
    ds = RingfeedDataset(sources=src, batch=10, seed=3)
    dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=workers)
    got = []
    for k, item in enumerate(dl):
        got += ids(item)
        if k == 6:
            break
    state = ds.state_dict()
    ds = RingfeedDataset(sources=src, batch=10, seed=3)
    ds.load_state_dict(state)
    rest = [r for item in torch.utils.data.DataLoader(ds, batch_size=None,
                                                       num_workers=workers) for r in ids(item)]
    assert got + rest == full
    # elastic: the other number of workers gives each remaining record once
    ds = RingfeedDataset(sources=src, batch=10, seed=3)
    ds.load_state_dict(state)
    other = [r for item in torch.utils.data.DataLoader(ds, batch_size=None,
                                                        num_workers=2 - workers) for r in ids(item)]
    left = collections.Counter(full) - collections.Counter(got)
    assert not collections.Counter(other) - left and sum(left.values()) - len(other) <= 2
    ds.close()


def test_mixture_state_round_trip(mix):
    """The binding's state codec (DataLoader workers) keeps a mixture's part."""
    with ringfeed.Loader(sources=[(str(mix / "a"), 1), (str(mix / "b"), 2)], batch=8) as ld:
        next(ld)
        raw = ld.state_dict()["state"]
    st = _state.State.decode(raw)
    assert st.flags & _state.FLAG_MIX and len(st.mix) == 16 + 24 * 2
    assert st.encode() == raw
    seq = _state.of_sequence(st, 0, [(8, 100)]).encode()
    with ringfeed.Loader(sources=[(str(mix / "a"), 1), (str(mix / "b"), 2)], batch=8,
                         resume=seq) as ld:
        assert sum(b.records for b in ld) == 100  # the engine takes it: the segment's records
    with pytest.raises(ringfeed.Error, match="mixture source 2 is another dataset"):
        ringfeed.Loader(sources=[(str(mix / "a"), 1), (str(mix / "a"), 2)], resume=seq)


def test_dataset_mixture_file(mix):
    ds = RingfeedDataset(mixture=str(mix / "mix.txt"), batch=16, seed=5)
    got = [r for item in torch.utils.data.DataLoader(ds, batch_size=None) for r in ids(item)]
    assert got == records(mixture=str(mix / "mix.txt"))
    ds.close()


@pytest.mark.parametrize("workers", [0, 2])
def test_dataset_new_weights_at_resume(mix, workers):
    """0.3/0.7 stops after 7 batches; the dataset resumes with 0.8/0.2:
    nothing delivered comes again inside its pass (b, 500 records, is read
    less than once in these two epochs), every prefix from the resume holds
    0.8 within 1 (one stream: workers=0), the epoch keeps its 715 samples,
    and the next epoch (a fresh iteration) goes on with the changed stream;
    with workers, the records are the workers=0 ones less at most the tail."""
    old = [(str(mix / "a"), 0.3), (str(mix / "b"), 0.7)]
    new = [(str(mix / "a"), 0.8), (str(mix / "b"), 0.2)]
    ds = RingfeedDataset(sources=old, batch=10, seed=3)
    got = []
    for k, item in enumerate(torch.utils.data.DataLoader(ds, batch_size=None)):
        got += ids(item)
        if k == 6:
            break
    state = ds.state_dict()
    ds.close()
    streams = {}
    for w in sorted({0, workers}):
        ds = RingfeedDataset(sources=new, batch=10, seed=3)
        ds.load_state_dict(state)
        dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=w)
        rest = [r for item in dl for r in ids(item)]
        ds.set_epoch(1)
        nxt = [r for item in dl for r in ids(item)]
        streams[w] = (rest, nxt)
        ds.close()
    rest, nxt = streams[0]
    assert len(got) + len(rest) == 715, (len(got), len(rest))
    ca = 0
    for n, r in enumerate(rest, 1):
        ca += r[0] == "a"
        assert abs(ca - 0.8 * n) <= 1, (n, ca)
    b = [r for r in got + rest + nxt if r[0] == "b"]
    assert len(b) == len(set(b)) and len(b) < 500, (len(b), len(set(b)))
    assert len(nxt) == 715
    rest_w, nxt_w = streams[workers]
    for mine, want in ((rest_w, rest), (nxt_w, nxt)):
        extra = collections.Counter(mine) - collections.Counter(want)
        assert not extra and len(want) - len(mine) <= 1, (len(mine), len(want), extra)
