"""RingfeedDataset under DataLoader(num_workers=N): each worker an engine of
its own as virtual rank rank*N + worker of world*N; len() exact, epochs
disjoint and complete, one order per (world, N), two epochs without a hang
(persistent workers and set_epoch too); a state_dict() taken in the main
process after k received batches resumes exactly on the same (world, N) and
delivers each remaining record once on another; len() after a resume counts
what is left. Small datasets: worker processes are slow to start."""

import itertools
import os

import pytest
import torch
import torch.utils.data

from ringfeed.torch import RingfeedDataset

from conftest import pack

OPTS = dict(batch=8, budget="8MiB", seed=5, shuffle_window=16, threads=1)


@pytest.fixture(scope="module")
def small(cli, tmp_path_factory):
    recs = [b"%06d:" % i + b"r" * (i % 23) for i in range(301)]
    man = pack(cli, tmp_path_factory.mktemp("small"), recs, shard_bytes="4KiB",
               block_bytes="512")
    return man, recs


def ids(item):
    payload, offsets = item["payload"], item["offsets"].tolist()
    return [bytes(payload[offsets[i]:offsets[i] + 6].numpy()) for i in range(len(offsets) - 1)]


def loader(ds, n, **kw):
    return torch.utils.data.DataLoader(ds, batch_size=None, num_workers=n, **kw)


def epoch_of(man, n, rank, world, **opts):
    ds = RingfeedDataset(man, rank=rank, world=world, **dict(OPTS, **opts))
    dl = loader(ds, n)
    length = len(dl)
    got = [ids(item) for item in dl]
    ds.close()
    return length, got


@pytest.mark.parametrize("n", [0, 1, 2, 3])
@pytest.mark.parametrize("world", [1, 2])
def test_equal_disjoint_complete(small, n, world):
    man, recs = small
    seen, lens = [], set()
    for rank in range(world):
        length, got = epoch_of(man, n, rank, world)
        assert length == len(got)  # len() is what the loop gets
        lens.add(length)
        seen.extend(r for batch in got for r in batch)
    assert len(lens) == 1  # every rank the same number of batches
    assert len(seen) == len(set(seen))  # disjoint
    virtual = world * max(n, 1)
    assert len(seen) == len(recs) - len(recs) % virtual  # complete but the tail


def test_one_order_per_world_and_workers(small):
    man, _ = small
    a = epoch_of(man, 2, 1, 2)[1]
    assert a == epoch_of(man, 2, 1, 2)[1]
    assert a != epoch_of(man, 3, 1, 2)[1]  # another N: another (still fixed) order


@pytest.mark.parametrize("persistent", [False, True])
def test_two_epochs_set_epoch(small, persistent):
    man, recs = small
    ds = RingfeedDataset(man, **OPTS)
    dl = loader(ds, 2, persistent_workers=persistent)
    epochs = []
    for e in range(2):
        ds.set_epoch(e)
        got = [r for item in dl for r in ids(item)]
        assert len(got) == len(recs) - 1 and len(set(got)) == len(got)
        epochs.append(got)
    assert epochs[0] != epochs[1]  # the workers saw set_epoch (persistent ones too)
    fresh = RingfeedDataset(man, epoch=1, **OPTS)
    assert [r for item in loader(fresh, 2) for r in ids(item)] == epochs[1]
    ds.close()


def test_resume_after_every_batch(small):
    man, _ = small
    opts = dict(OPTS, batch=40)
    ds = RingfeedDataset(man, **opts)
    full = [ids(item) for item in loader(ds, 2)]
    for k in range(len(full) + 1):
        ds = RingfeedDataset(man, **opts)
        it = iter(loader(ds, 2, prefetch_factor=4))
        head = [ids(next(it)) for _ in range(k)]  # the workers ran further ahead
        sd = ds.state_dict()
        del it
        again = RingfeedDataset(man, **opts)
        again.load_state_dict(sd)
        dl = loader(again, 2)
        assert len(dl) == len(full) - k
        tail = [ids(item) for item in dl]
        assert head + tail == full, k


@pytest.mark.parametrize("n2,world2,batch2", [(3, 2, 8), (0, 1, 5), (1, 3, 8)])
def test_resume_elsewhere_each_record_once(small, n2, world2, batch2):
    man, recs = small
    ds = RingfeedDataset(man, **OPTS)
    it = iter(loader(ds, 2))
    head = [r for item in itertools.islice(it, 7) for r in ids(item)]
    sd = ds.state_dict()
    del it
    rest, lens = [], set()
    for rank in range(world2):
        again = RingfeedDataset(man, rank=rank, world=world2, **dict(OPTS, batch=batch2))
        again.load_state_dict(sd)
        dl = loader(again, n2)
        got = [ids(item) for item in dl]
        assert len(dl) == len(got)
        lens.add(len(got))
        rest.extend(r for batch in got for r in batch)
    assert len(lens) == 1
    allrecs = head + rest
    assert len(allrecs) == len(set(allrecs))  # no record twice
    virtual = world2 * max(n2, 1)
    assert len(allrecs) > len(recs) - 1 - virtual  # only tails (< virtual ranks) left out


@pytest.mark.parametrize("world2", [2, 3])
def test_len_after_resume_main_process(small, world2):
    """len() after a resume is the batches yielded: the same world (it once
    counted the batches already taken) and another."""
    man, _ = small
    ds = RingfeedDataset(man, rank=0, world=2, **OPTS)
    it = iter(loader(ds, 0))
    for _ in range(4):
        next(it)
    sd = ds.state_dict()
    del it
    again = RingfeedDataset(man, rank=1, world=world2, **OPTS)
    again.load_state_dict(sd)
    n = len(again)
    assert n == len(list(loader(again, 0)))
    if world2 == 2:
        assert n == len(RingfeedDataset(man, rank=1, world=2, **OPTS)) - 4


def test_without_the_wrappers_state_refuses(small, monkeypatch):
    """Where ringfeed cannot wrap torch's DataLoader (simulated: the
    wrappers taken off, HOOKS_MISSING set), workers still read a first
    iteration right, and what would be silently wrong raises instead:
    state_dict(), a resume in the workers, a persistent worker's next
    iteration."""
    import ringfeed.torch as rt

    dl_class = torch.utils.data.DataLoader
    assert rt.HOOKS_MISSING is None  # installed on this torch
    monkeypatch.setattr(dl_class, "__init__", dl_class.__init__.__wrapped__)
    monkeypatch.setattr(dl_class, "__iter__", dl_class.__iter__.__wrapped__)
    monkeypatch.setattr(rt, "HOOKS_MISSING", "simulated layout")
    man, recs = small
    ds = RingfeedDataset(man, **OPTS)
    got = [r for item in loader(ds, 2) for r in ids(item)]
    assert len(got) == len(set(got)) == len(recs) - 1
    with pytest.raises(RuntimeError, match="could not wrap .*simulated layout"):
        ds.state_dict()
    dl = loader(RingfeedDataset(man, **OPTS), 2, persistent_workers=True)
    assert len(list(dl)) == len(got) // OPTS["batch"] + 1
    with pytest.raises(RuntimeError, match="another iteration of persistent workers"):
        list(dl)
    main = RingfeedDataset(man, **OPTS)
    it = iter(loader(main, 0))
    next(it)
    again = RingfeedDataset(man, **OPTS)
    again.load_state_dict(main.state_dict())
    with pytest.raises(RuntimeError, match=r"a resume \(load_state_dict\)"):
        list(loader(again, 2))
    main.close()


def test_unknown_layouts_are_named():
    import ringfeed.torch as rt

    class Bare:
        pass

    class Odd:
        def __init__(self, data):
            pass

        def __iter__(self, extra):
            pass

    assert "defines no __init__ / __iter__" in rt._install_hooks(Bare)
    assert "not (self, dataset, ...) / (self)" in rt._install_hooks(Odd)
    assert not hasattr(Odd, "_ringfeed_hooked")


RSS_OVERHEAD_PER_PROCESS = 10 << 20  # the stated fixed overhead (docs/python.md)


def _reset_peak(_=None):
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # VmHWM := VmRSS (Linux >= 4.0)


def test_peak_rss_of_all_workers_within_the_host_budget(tmp_path):
    """96 MiB of records (they compress to almost nothing) through 2 workers
    sharing a 16 MiB host budget: the growth of every process's peak RSS
    over the iteration (workers' from diagnose()'s memory figures, the main
    process's from /proc) sums to at most the host budget plus the stated
    overhead per process, which a loader holding the data would exceed."""
    try:
        _reset_peak()
    except OSError as e:
        pytest.skip(f"/proc/self/clear_refs not writable ({e}): peak RSS cannot be reset")
    from conftest import pack_lib
    from ringfeed.torch import _memory

    recs = [(b"%08d" % i) * 8192 for i in range(1536)]  # 64 KiB each
    man = pack_lib(tmp_path, recs, 4, block_bytes=256 << 10)
    del recs
    host = 16 << 20
    ds = RingfeedDataset(man, batch=16, budget=host, host_budget=host, threads=1,
                         host_budget_name=f"pytest-rss-{os.getpid()}", shuffle_window=32)
    dl = loader(ds, 2, worker_init_fn=_reset_peak)
    _reset_peak()
    start = _memory()["rss_bytes"]
    seen = sum(item["payload"].numel() for item in dl)
    main = _memory()["rss_peak_bytes"] - start
    assert seen >= 1535 * (64 << 10)
    mem = ds.diagnose()["memory"]
    assert len(mem) == 2
    workers = [m["rss_peak_bytes"] - m["rss_start_bytes"] for m in mem]
    total = main + sum(workers)
    bound = host + 3 * RSS_OVERHEAD_PER_PROCESS
    print(f"peak RSS growth: main {main / 2**20:.1f} MiB, workers "
          f"{', '.join(f'{w / 2**20:.1f}' for w in workers)} MiB; total "
          f"{total / 2**20:.1f} MiB <= {bound / 2**20:.0f} MiB (host budget 16 MiB)")
    assert 0 < total <= bound, (main, workers, bound)
    assert bound < seen / 2  # holding the data would not fit
    ds.close()
