"""ringfeed.torch.RingfeedDataset under torch.utils.data.DataLoader."""

import gc
import io
import itertools

import pytest
import torch
import torch.utils.data

import ringfeed
from ringfeed.torch import RingfeedDataset

OPTS = dict(batch=32, budget="16MiB", seed=6, shuffle_window=64)


def records_of(item):
    payload, offsets = item["payload"], item["offsets"].tolist()
    return [payload[offsets[i]:offsets[i + 1]].numpy().tobytes() for i in range(len(offsets) - 1)]


def run(dl, limit=None):
    """Records per batch; takes exactly `limit` batches when given."""
    return [records_of(item) for item in itertools.islice(dl, limit)]


def test_dataloader_matches_loader(dataset):
    with ringfeed.Loader(dataset.manifest, **OPTS) as L:
        expect = [b.records_bytes() for b in L]
    ds = RingfeedDataset(dataset.manifest, **OPTS)
    dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=0)
    got = run(dl)
    assert got == expect
    item = next(iter(dl))
    assert item["payload"].dtype == torch.uint8 and item["offsets"].dtype == torch.int64
    ds.close()


def test_tensor_keeps_batch_alive_zero_copy(dataset):
    ds = RingfeedDataset(dataset.manifest, as_tuple=True, **OPTS)
    it = iter(ds)
    payload, offsets = next(it)
    loader = ds._loader
    assert loader.batches_out == 1  # only the tensors hold it
    view = payload[: int(offsets[1])]
    first = view.numpy().tobytes()
    del payload, offsets
    gc.collect()
    assert loader.batches_out == 1  # a view of the tensor still holds the batch
    for _ in range(3):
        next(it)
    gc.collect()
    assert view.numpy().tobytes() == first
    del view
    gc.collect()
    assert loader.batches_out == 0
    ds.close()


def test_checkpoint_resumes_exactly(dataset):
    full = run(torch.utils.data.DataLoader(RingfeedDataset(dataset.manifest, **OPTS),
                                           batch_size=None))
    for k in (1, 5, len(full) - 1):
        ds = RingfeedDataset(dataset.manifest, **OPTS)
        dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=0)
        head = run(dl, limit=k)
        buf = io.BytesIO()
        torch.save({"data": ds.state_dict()}, buf)
        ds.close()
        buf.seek(0)
        ds2 = RingfeedDataset(dataset.manifest, **OPTS)
        ds2.load_state_dict(torch.load(buf)["data"])
        tail = run(torch.utils.data.DataLoader(ds2, batch_size=None, num_workers=0))
        assert head + tail == full, f"resume after {k}"
        ds2.close()


def test_padded_tensors(dataset):
    ds = RingfeedDataset(dataset.manifest, batch=8, pad_to=48, truncate=True, shuffle=False)
    item = next(iter(ds))
    rows, lengths = item["rows"], item["lengths"]
    assert rows.shape == (8, 48) and rows.dtype == torch.uint8 and lengths.dtype == torch.int64
    for i in range(8):
        assert rows[i, : lengths[i]].numpy().tobytes() == dataset.records[i][:48]
    ds.close()


def test_rank_world_from_torch_distributed(dataset, monkeypatch):
    dist = torch.distributed
    monkeypatch.setattr(dist, "is_available", lambda: True)
    monkeypatch.setattr(dist, "is_initialized", lambda: True)
    got = []
    for rank in (0, 1):
        monkeypatch.setattr(dist, "get_rank", lambda r=rank: r)
        monkeypatch.setattr(dist, "get_world_size", lambda: 2)
        ds = RingfeedDataset(dataset.manifest, **OPTS)
        assert (ds.rank, ds.world) == (rank, 2)
        got.append({r for batch in run(ds) for r in batch})
        ds.close()
    assert not (got[0] & got[1]) and got[0] | got[1] == set(dataset.records)
    ds = RingfeedDataset(dataset.manifest, rank=0, world=1, **OPTS)  # explicit wins
    assert (ds.rank, ds.world) == (0, 1)
    assert {r for batch in run(ds) for r in batch} == set(dataset.records)
    ds.close()
