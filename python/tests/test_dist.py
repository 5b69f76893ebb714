"""RingfeedDataset under distributed training: len() equals the batches a
rank yields and is the same on every rank (any tail policy, drop_last), a
DataLoader that would re-batch our batches is refused, elastic resume on
another number of ranks, and a real torch.distributed (gloo) job of 2 and 3
processes runs two epochs to the end with an all_reduce per step."""

import os
import pathlib
import subprocess
import sys

import pytest
import torch
import torch.utils.data

import ringfeed
from ringfeed.torch import RingfeedDataset

from conftest import make_records, pack

HERE = pathlib.Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def uneven(cli, tmp_path_factory):
    """Records of very different sizes: blocks of one record and of dozens."""
    recs = [b"%06d:" % i + (b"x" * (5000 if i % 11 == 3 else i % 7)) for i in range(1001)]
    return pack(cli, tmp_path_factory.mktemp("uneven"), recs, block_bytes="4KiB")


def ids(item):
    payload, offsets = item["payload"], item["offsets"].tolist()
    return [bytes(payload[offsets[i]:offsets[i] + 6].numpy()) for i in range(len(offsets) - 1)]


@pytest.mark.parametrize("extra", [{}, {"tail": "pad"}, {"drop_last": True}])
def test_len_equal_on_every_rank(uneven, extra):
    lens, seen = [], []
    for rank in range(4):
        ds = RingfeedDataset(uneven, rank=rank, world=4, batch=16, seed=2, epochs=2, **extra)
        n = len(ds)
        got = list(torch.utils.data.DataLoader(ds, batch_size=None))
        assert len(got) == n
        lens.append(n)
        for item in got:
            seen.extend(ids(item))
        ds.close()
    assert len(set(lens)) == 1
    # two epochs of 1001 records over 4 ranks: 250 each (tail of 1 dropped),
    # 251 each (3 padded), or 240 each (drop_last: 15 batches of 16)
    per = {"pad": 251}.get(extra.get("tail"), 240 if extra.get("drop_last") else 250)
    assert len(seen) == 2 * 4 * per
    counts = {}
    for r in seen:
        counts[r] = counts.get(r, 0) + 1
    assert max(counts.values()) <= (4 if extra.get("tail") == "pad" else 2)
    if extra.get("tail") == "pad":
        assert len(counts) == 1001


def test_default_batch_size_is_refused(uneven):
    ds = RingfeedDataset(uneven, batch=16)
    with pytest.raises(TypeError, match="batch_size=None"):
        next(iter(torch.utils.data.DataLoader(ds)))  # batch_size=1 by default
    ds.close()


def test_elastic_resume_on_fewer_ranks(uneven):
    before = []
    state = None
    for rank in range(3):
        ds = RingfeedDataset(uneven, rank=rank, world=3, batch=10, seed=4)
        it = iter(torch.utils.data.DataLoader(ds, batch_size=None))
        for _ in range(5):
            before.extend(ids(next(it)))
        sd = ds.state_dict()
        assert state is None or sd == state  # any rank's state is the job's
        state = sd
        ds.close()
    after, lens = [], []
    for rank in range(2):
        ds = RingfeedDataset(uneven, rank=rank, world=2, batch=10, seed=4)
        ds.load_state_dict(state)
        got = list(torch.utils.data.DataLoader(ds, batch_size=None))
        lens.append(len(got))
        for item in got:
            after.extend(ids(item))
        ds.close()
    assert lens[0] == lens[1]
    allrecs = before + after
    assert len(allrecs) == len(set(allrecs))
    assert len(allrecs) >= 1001 - 2 - 1  # only the two tails (< world each) are left out


@pytest.mark.parametrize("world,workers", [(2, 0), (3, 0), (2, 2)])
def test_torch_distributed_two_epochs(uneven, tmp_path, world, workers):
    """Also: the datasets are built before init_process_group, so each
    rank must learn its rank when iteration starts (disjoint, equal
    slices, not the whole dataset on every rank)."""
    if not torch.distributed.is_available() or not torch.distributed.is_gloo_available():
        pytest.skip("torch.distributed with gloo is not available")
    env = dict(os.environ, GLOO_SOCKET_IFNAME="lo", PYTHONPATH=str(HERE.parent))
    init = tmp_path / "init"
    procs = [
        subprocess.Popen(
            [sys.executable, str(HERE / "dist_worker.py"), uneven, str(init), str(r), str(world),
             str(workers)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )
        for r in range(world)
    ]
    outs = []
    for p in procs:
        try:
            out, err = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            pytest.fail("a rank did not finish two epochs within 120 s (hang)")
        assert p.returncode == 0, err
        outs.append(out.split())
    slices = [set(o[o.index("ids") + 1:o.index("steps")]) for o in outs]
    assert len({len(x) for x in slices}) == 1  # equal slices
    assert len(set().union(*slices)) == sum(len(x) for x in slices)  # disjoint
    assert sum(len(x) for x in slices) > 1001 - world * max(workers, 1)
    steps = {tuple(o[-3:]) for o in outs}
    assert len(steps) == 1, outs  # every rank the same steps per epoch
    e0, e1, n = map(int, steps.pop())
    assert e0 == e1 == n > 0
