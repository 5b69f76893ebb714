"""Multi-field samples (WebDataset tar): batch["jpg"] as (payload, offsets)
views of engine memory, absent fields marked absent, batch.keys, and
RingfeedDataset yielding a dict of fields."""

import io
import random
import tarfile

import numpy as np
import pytest

import ringfeed


@pytest.fixture(scope="module")
def wds(tmp_path_factory):
    """Two tar shards of 30 samples: jpg, cls (absent in every 4th), json."""
    d = tmp_path_factory.mktemp("wds")
    rng = random.Random(3)
    samples = []
    for s in range(2):
        with tarfile.open(d / f"shard-{s}.tar", "w") as t:
            for i in range(30):
                key = f"{s}{i:04d}"
                fields = {"jpg": rng.randbytes(rng.randint(10, 3000)), "cls": b"%d" % (i % 5),
                          "json": b'{"i": %d}' % i}
                if i % 4 == 1:
                    del fields["cls"]
                for ext, data in fields.items():
                    ti = tarfile.TarInfo(f"{key}.{ext}")
                    ti.size = len(data)
                    t.addfile(ti, io.BytesIO(data))
                samples.append((key, fields))
    return d, samples


def test_fields_views_keys_and_absence(wds):
    d, samples = wds
    got = []
    with ringfeed.Loader(str(d), batch=8, budget="32MiB", shuffle=False) as L:
        for b in L:
            assert b.field_names == ["jpg", "cls", "json"]
            assert "jpg" in b and "png" not in b
            payload, offsets = b["jpg"]  # unpacks as (payload, offsets)
            assert payload.dtype == np.uint8 and offsets.dtype == np.int64
            assert not payload.flags.owndata  # a view of engine memory
            assert len(offsets) == b.records + 1 and offsets[0] == 0
            cls = b["cls"]
            for i, key in enumerate(b.keys):
                f = {}
                for name in b.field_names:
                    v = b[name].view(i)
                    if v is not None:
                        f[name] = bytes(v)
                    else:
                        assert b[name].present[i] == 0
                got.append((key, f))
            assert cls.present.dtype == np.uint8
            f = b["jpg"].file(0)  # a file over the view, for decoders
            first = bytes(b["jpg"].view(0))
            assert f.read(5) == first[:5] and f.seek(-3, 2) == len(first) - 3
            assert f.read() == first[-3:]
            b.release()
    assert got == samples


def test_dataset_yields_dict_of_fields(wds):
    torch = pytest.importorskip("torch")
    from ringfeed.torch import RingfeedDataset

    d, samples = wds
    ds = RingfeedDataset(str(d), batch=16, budget="32MiB", shuffle=False)
    item = next(iter(ds))
    assert item["__key__"] == [k for k, _ in samples[:16]]
    payload, offsets, present = item["cls"]
    assert isinstance(payload, torch.Tensor) and present.dtype == torch.bool
    assert present.tolist() == [("cls" in f) for _, f in samples[:16]]
    o = offsets.tolist()
    assert bytes(payload[o[0] : o[1]].numpy()) == samples[0][1]["cls"]
    ds.close()
