"""ringfeed.Loader at the budget's bound: a consumer that keeps every batch."""

import errno
import re

import pytest

import ringfeed
from conftest import pack


def test_keeping_every_batch_raises_instead_of_hanging(cli, tmp_path):
    """Once the batches kept fill the budget, the next() that cannot be
    served raises ringfeed.Error naming the budget, the batches held and
    their bytes, within the engine's bounded wait (the 30 s timeout only
    turns a regression, a hang, into a failure); releasing them lets the
    stream go on to the end."""
    recs = [b"%06d:" % i + bytes([65 + i % 26]) * 4000 for i in range(1500)]
    man = pack(cli, tmp_path, recs, shard_bytes="1MiB", block_bytes="16KiB")
    kept = []
    with ringfeed.Loader(man, batch=8, budget="4MiB", threads=2, depth=4,
                         shuffle_window=8) as L:
        with pytest.raises(ringfeed.Error) as exc:
            while True:
                b = L.next(timeout_ms=30000)
                assert b is not None, f"no batch and no error within 30 s ({len(kept)} kept)"
                kept.append(b)
        e = exc.value
        assert e.code == -errno.ENOBUFS
        assert "budget 4.0 MiB is held by the consumer" in e.message, e.message
        assert "Batch.release()" in e.message and "rf_release" not in e.message  # Python's name
        m = re.search(r": (\d+) batch\(es\) of (\d+) bytes", e.message)
        assert m, e.message
        assert int(m.group(1)) == len(kept) > 4
        assert len(kept) * 8 * 4000 <= int(m.group(2)) <= 4 << 20
        got = []
        for b in kept:
            got.extend(b.records_bytes())
            b.release()
        for b in L:
            got.extend(b.records_bytes())
            b.release()
    assert sorted(got) == sorted(recs)
