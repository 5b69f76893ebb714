"""The zero-copy contract of ringfeed.Batch (see its docstring)."""

import gc

import numpy as np
import pytest

import ringfeed


@pytest.fixture
def L(dataset):
    with ringfeed.Loader(dataset.manifest, batch=32, budget="16MiB", shuffle=False) as loader:
        yield loader


def test_arrays_view_the_batch_memory(L, dataset):
    b = next(L)
    p, o, n = b.payload, b.offsets, b.lengths
    assert p.__array_interface__["data"][0] == b._payload  # the engine's pointer itself
    assert o.__array_interface__["data"][0] == b._offsets
    assert not p.flags.owndata and not o.flags.owndata
    assert np.shares_memory(p, b.payload)  # each access is a new view of the same bytes
    assert o.dtype == np.int64 and len(o) == b.records + 1 and o[0] == 0
    assert o[-1] == len(p) == b.payload_bytes
    assert n.dtype == np.uint32 and np.array_equal(n, np.diff(o))
    assert b.records_bytes() == dataset.records[: b.records]
    with pytest.raises(ValueError):
        p[0] = 1  # read-only: the bytes belong to the engine


def test_release_then_access_raises(L):
    b = next(L)
    assert L.batches_out == 1
    b.release()
    assert b.released and L.batches_out == 0
    for attr in ("payload", "offsets", "lengths"):
        with pytest.raises(ringfeed.Error):
            getattr(b, attr)
    b.release()  # idempotent


def test_live_array_keeps_memory_until_freed(L, dataset):
    b = next(L)
    p, o = b.payload, b.offsets[:]
    first = dataset.records[: b.records]
    b.release()
    with pytest.raises(ringfeed.Error):
        b.payload
    assert L.batches_out == 1  # still held by p and o
    del b
    gc.collect()
    for _ in range(3):
        next(L).release()  # the engine keeps going meanwhile
    assert [p[o[i]:o[i + 1]].tobytes() for i in range(len(o) - 1)] == first
    del p
    assert L.batches_out == 1
    del o
    assert L.batches_out == 0


def test_next_does_not_release_and_gc_does(L):
    held = [next(L) for _ in range(4)]
    assert L.batches_out == 4
    assert all(not b.released for b in held)
    del held[1:]
    assert L.batches_out == 1
    with held[0]:
        pass
    assert L.batches_out == 0 and held[0].released


def test_close_with_batches_out(dataset):
    L = ringfeed.Loader(dataset.manifest, batch=32, shuffle=False)
    a, b = next(L), next(L)
    keep = b.payload
    expect = dataset.records[32][:5]
    L.close()
    assert a.released and b.released  # close ends access to every batch
    with pytest.raises(ringfeed.Error):
        a.payload
    assert keep[:5].tobytes() == expect  # the live array is still valid
    del keep, a, b
    with pytest.raises(ringfeed.LoaderClosed):  # as reading a closed file
        next(L)


def test_padded_rows(dataset):
    with ringfeed.Loader(dataset.manifest, batch=16, pad_to=64, truncate=True,
                         shuffle=False) as L:
        b = next(L)
        rows, lens = b.rows, b.lengths
        assert rows.shape == (16, 64) and b.row_bytes == 64
        for i in range(16):
            rec = dataset.records[i][:64]
            assert rows[i, : lens[i]].tobytes() == rec
            assert not rows[i, lens[i]:].any()


def test_release_from_another_thread(dataset):
    """Arrays dropped in a consumer thread return their batches while the
    main thread keeps taking new ones."""
    import queue
    import threading

    q, seen, errors = queue.Queue(maxsize=4), [], []

    def worker():
        while (item := q.get()) is not None:
            try:
                p, o = item
                seen.extend(p[o[i]:o[i + 1]].tobytes() for i in range(len(o) - 1))
                del item, p, o  # the last references: the batch goes back from this thread
            except Exception as e:  # reported by the main thread
                errors.append(e)

    t = threading.Thread(target=worker)
    t.start()
    with ringfeed.Loader(dataset.manifest, batch=16, budget="4MiB", shuffle=False) as L:
        try:
            for b in L:
                q.put((b.payload, b.offsets))
                b.release()
                del b
        finally:
            q.put(None)
            t.join()
        assert L.batches_out == 0
    assert seen == dataset.records and not errors
