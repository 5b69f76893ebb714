"""Token windows through the binding: Batch.tokens() is a [B, L + 1] view of
the token type (no copy), RingfeedDataset with seq_len yields one dense int64
tensor per batch, equal to nanoGPT's get_batch rows at the windows' offsets."""

import pathlib
import subprocess
import sys

import numpy as np
import pytest

import ringfeed

HERE = pathlib.Path(__file__).resolve().parent
WRITER = HERE.parent.parent / "tests" / "tokens" / "megatron_write.py"
L = 64


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    d = tmp_path_factory.mktemp("tokens")
    subprocess.run([sys.executable, str(WRITER), str(d / "ds"), "uint16", "3", "40", "900"],
                   check=True, capture_output=True)
    toks = np.fromfile(d / "ds.bin", dtype=np.uint16)
    return d / "ds.idx", toks


def test_batch_tokens_view(dataset):
    idx, toks = dataset
    n = (toks.size - 1) // L
    seen = 0
    with ringfeed.Loader(str(idx), seq_len=L, batch=16, shuffle=False) as ld:
        for b in ld:
            with b:
                t = b.tokens("uint16")
                assert t.shape == (b.records, L + 1) and t.dtype == np.uint16
                assert not t.flags.owndata  # a view of the batch
                for r in range(b.records):
                    i = seen + r
                    assert np.array_equal(t[r], toks[i * L : i * L + L + 1])
                seen += b.records
    assert seen == n


def test_widened_torch_tensor(dataset):
    torch = pytest.importorskip("torch")
    from ringfeed.torch import RingfeedDataset

    idx, toks = dataset
    wins = {}
    for i in range((toks.size - 1) // L):
        wins[toks[i * L : i * L + L + 1].astype(np.int64).tobytes()] = i
    ds = RingfeedDataset(str(idx), seq_len=L, token_out="int64", batch=8, seed=7)
    got = 0
    for x in ds:
        assert isinstance(x, torch.Tensor) and x.dtype == torch.int64
        assert x.shape[1] == L + 1
        for row in x.numpy():
            assert row.tobytes() in wins
        got += x.shape[0]
    assert got == len(wins)


def test_uint16_needs_widening_for_torch(dataset):
    pytest.importorskip("torch")
    from ringfeed.torch import RingfeedDataset

    idx, _ = dataset
    # the tokens are uint16 (named so, as for a nanoGPT file): torch has no uint16
    ds = RingfeedDataset(str(idx), seq_len=L, token_dtype="uint16", batch=8)
    with pytest.raises(TypeError, match="token_out='int64'"):
        next(iter(ds))
    ds.close()
