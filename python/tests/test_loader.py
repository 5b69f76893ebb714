"""ringfeed.Loader: order, resume, ranks, errors, lifetimes."""

import ctypes.util
import errno
import gc
import os
import shutil
import subprocess
import sys

import pytest

import ringfeed
from conftest import collect, make_records, pack_lib, rss_bytes

BATCH = 64


def loader(ds, **kw):
    opts = dict(batch=BATCH, budget="16MiB", threads=2)
    opts.update(kw)
    return ringfeed.Loader(ds.manifest, **opts)


def test_unshuffled_order_is_the_packed_order(dataset):
    with loader(dataset, shuffle=False) as L:
        recs, sizes = collect(L)
    assert recs == dataset.records
    assert all(s == BATCH for s in sizes[:-1]) and 0 < sizes[-1] <= BATCH
    with ringfeed.Loader(dataset.shards(), batch=BATCH, shuffle=False) as L:  # a list of shards
        assert list(L.records()) == dataset.records


def test_next_with_a_timeout(dataset):
    """next(timeout_ms) gives batches, None only on a timeout (retried here, so
    timing never decides), and StopIteration at the end."""
    got = []
    with loader(dataset, shuffle=False) as L:
        while True:
            try:
                b = L.next(timeout_ms=50)
            except StopIteration:
                break
            if b is not None:
                got.extend(b.records_bytes())
                b.release()
        with pytest.raises(StopIteration):
            L.next(timeout_ms=50)
    assert got == dataset.records


def test_same_records_and_order_as_cli_read(dataset, cli, tmp_path):
    """Byte for byte what `ringfeed read --output raw` writes for the same
    options (each record as a u32 little-endian length and its bytes, in
    stream order)."""
    opts = dict(seed=5, shuffle=True, shuffle_window=256)
    cmd = [cli, "read", "--output", "raw", "--batch", str(BATCH), "--seed", "5",
           "--shuffle", "1", "--shuffle-window", "256", dataset.manifest]
    res = subprocess.run(cmd, capture_output=True)
    assert res.returncode == 0, res.stderr.decode()
    with loader(dataset, **opts) as L:
        recs, _ = collect(L)
    assert sorted(recs) == sorted(dataset.records)  # complete, each once
    assert recs != dataset.records  # really shuffled
    assert b"".join(len(r).to_bytes(4, "little") + r for r in recs) == res.stdout


def test_order_does_not_depend_on_threads_depth_or_budget(dataset):
    with loader(dataset, seed=9, threads=1, budget="4MiB") as a:
        ra, _ = collect(a)
    with loader(dataset, seed=9, threads=3, budget="64MiB") as b:
        rb, _ = collect(b)
    with loader(dataset, seed=10) as c:
        rc, _ = collect(c)
    assert ra == rb
    assert ra != rc and sorted(ra) == sorted(rc)


@pytest.mark.parametrize("epochs", [1, 2])
def test_resume_exact_at_several_points(dataset, epochs):
    kw = dict(seed=3, shuffle_window=128, epochs=epochs)
    with loader(dataset, **kw) as L:
        full = [b.records_bytes() for b in L]
    n = len(full)
    for k in sorted({0, 1, 7, n // 2, n - 1, n}):
        with loader(dataset, **kw) as L:
            for _ in range(k):
                next(L).release()
            sd = L.state_dict()
        assert sd["version"] == ringfeed.STATE_VERSION and isinstance(sd["state"], bytes)
        with loader(dataset, resume=sd, **kw) as R:
            rest = [b.records_bytes() for b in R]
        assert rest == full[k:], f"resume after {k} of {n} batches"


def test_load_state_dict_repositions_an_open_loader(dataset):
    with loader(dataset, seed=4) as L:
        first = [next(L).records_bytes() for _ in range(5)]
        sd = L.state_dict()
        after = [b.records_bytes() for b in L]
        L.load_state_dict(sd)
        again = [b.records_bytes() for b in L]
    assert again == after and len(first) == 5


def test_state_from_other_config_or_version_is_refused(dataset):
    with loader(dataset, seed=4) as L:
        next(L).release()
        sd = L.state_dict()
    with pytest.raises(ringfeed.Error):
        with loader(dataset, seed=5, resume=sd) as R:
            next(R)
    with pytest.raises(ValueError):
        loader(dataset, resume={"version": 99, "state": sd["state"]})
    for bad in (5, "abc", None, [1]):  # not bytes: refused by what it is
        with pytest.raises(ValueError) as e:
            loader(dataset, resume={"version": sd["version"], "state": bad})
        assert "'state' holds a" in str(e.value)


def test_two_ranks_disjoint_and_complete(dataset):
    got = []
    for rank in range(2):
        with loader(dataset, seed=8, rank=rank, world=2) as L:
            got.append(collect(L)[0])
    a, b = set(got[0]), set(got[1])
    assert len(a) == len(got[0]) and len(b) == len(got[1])
    assert not (a & b)
    assert a | b == set(dataset.records)
    assert got[0] and got[1]


def test_missing_shard_names_the_file(tmp_path):
    missing = tmp_path / "nope.rfs"
    with pytest.raises(ringfeed.Error) as e:
        with ringfeed.Loader(str(missing), batch=4) as L:
            next(L)
    assert "nope.rfs" in str(e.value) and e.value.code < 0


def test_corrupt_shard_names_the_shard(dataset, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(dataset.dir, bad)
    victim = sorted(bad.glob("*.rfs"))[1]
    data = bytearray(victim.read_bytes())
    for off in range(200, 400):  # inside the first blocks' zstd frames
        data[off] ^= 0x5A
    victim.write_bytes(bytes(data))
    with pytest.raises(ringfeed.Error) as e:
        with ringfeed.Loader(str(bad / os.path.basename(dataset.manifest)), batch=BATCH,
                             shuffle=False) as L:
            collect(L)
    assert victim.name in str(e.value)


def test_bad_option_is_an_error_with_the_engine_message(dataset):
    with pytest.raises(ringfeed.Error) as e:
        loader(dataset, no_such_option=1)
    assert "no_such_option" in str(e.value) and e.value.code == -errno.EINVAL
    with pytest.raises(ringfeed.Error) as e:
        loader(dataset, batch="lots")
    assert "batch" in str(e.value)


def test_stats_is_a_dict_of_the_engine_figures(dataset):
    with loader(dataset) as L:
        n = sum(len(b) for b in L)
        st = L.stats()
    assert isinstance(st, dict)
    assert st["records"] == n == len(dataset.records)


def test_written_shards_read_back(tmp_path):
    recs = make_records(500, seed=2)
    man = pack_lib(tmp_path, recs, shards=2, block_bytes=2048)
    with ringfeed.Loader(man, batch=7, shuffle=False) as L:
        assert list(L.records()) == recs


def _fds_threads():
    return len(os.listdir("/proc/self/fd")), len(os.listdir("/proc/self/task"))


def test_no_leak_over_many_loader_lifetimes(dataset):
    def cycle(i):
        L = loader(dataset, seed=i, budget="4MiB")
        for j, b in enumerate(L):
            b.payload.sum()
            if j == 5:
                break  # leave mid-stream too: close must reclaim read-ahead
        held = next(L)  # a batch still out at close
        L.close()
        del held

    for i in range(20):
        cycle(i)
    gc.collect()
    rss0, fds0, thr0 = rss_bytes(), *_fds_threads()
    for i in range(200):
        cycle(i)
    gc.collect()
    rss1, fds1, thr1 = rss_bytes(), *_fds_threads()
    assert (fds1, thr1) == (fds0, thr0)
    assert rss1 - rss0 < 6 << 20, f"RSS grew {(rss1 - rss0) >> 10} KiB over 200 loaders"


@pytest.mark.skipif(ctypes.util.find_library("ringfeed") is not None,
                    reason="a libringfeed is installed system-wide")
def test_library_not_found_lists_every_path(tmp_path):
    pkg = tmp_path / "ringfeed"
    shutil.copytree(os.path.dirname(ringfeed.__file__), pkg,
                    ignore=shutil.ignore_patterns("*.so*", "__pycache__"))
    code = "import ringfeed\ntry:\n ringfeed.library_path()\nexcept ringfeed.LibraryNotFound as e:\n print(e)\n"
    env = dict(os.environ, PYTHONPATH=str(tmp_path), LD_LIBRARY_PATH="")
    env.pop("RINGFEED_LIBRARY", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert str(pkg / "libringfeed.so") in out.stdout
    assert str(tmp_path / "build" / "libringfeed.so") in out.stdout
    assert "system" in out.stdout and "RINGFEED_LIBRARY" in out.stdout
    env["RINGFEED_LIBRARY"] = str(tmp_path / "elsewhere.so")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert "elsewhere.so" in out.stdout and "no such file" in out.stdout


def _library_path_in(pythonpath, env_lib=None):
    env = dict(os.environ, PYTHONPATH=str(pythonpath))
    env.pop("RINGFEED_LIBRARY", None)
    if env_lib:
        env["RINGFEED_LIBRARY"] = env_lib
    code = "import ringfeed; print(ringfeed.library_path())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_library_found_beside_the_package_first(tmp_path):
    pkg = tmp_path / "ringfeed"
    shutil.copytree(os.path.dirname(ringfeed.__file__), pkg,
                    ignore=shutil.ignore_patterns("*.so*", "__pycache__"))
    os.symlink(ringfeed.library_path(), pkg / "libringfeed.so")
    (tmp_path / "build").mkdir()
    os.symlink(ringfeed.library_path(), tmp_path / "build" / "libringfeed.so")
    assert _library_path_in(tmp_path) == str(pkg / "libringfeed.so")
    os.unlink(pkg / "libringfeed.so")  # next: the build tree above the package
    assert _library_path_in(tmp_path) == str(tmp_path / "build" / "libringfeed.so")
    assert _library_path_in(tmp_path, env_lib=ringfeed.library_path()) == ringfeed.library_path()


@pytest.mark.parametrize("kwargs", [
    {"budget": "1GiB\0x"},           # the engine saw "1GiB" and dropped the rest
    {"index_cache": "/tmp\0/x"},
    {"batch\0x": 4},                 # the engine saw the option "batch"
])
def test_a_nul_in_an_option_is_refused_not_cut(dataset, kwargs):
    with pytest.raises(ValueError) as e:
        loader(dataset, **kwargs)
    assert "embedded null character" in str(e.value)


def test_a_nul_in_a_url_or_weight_is_refused_not_cut(dataset):
    with pytest.raises(ValueError) as e:
        ringfeed.Loader(str(dataset.manifest) + "\0/elsewhere")
    assert "URL" in str(e.value) and "embedded null character" in str(e.value)
    with pytest.raises(ValueError) as e:
        ringfeed.Loader(sources=[(str(dataset.manifest), "0.5\x009")])
    assert "weight" in str(e.value) and "embedded null character" in str(e.value)


def test_a_nul_in_a_secret_is_refused_without_showing_it(dataset):
    with pytest.raises(ValueError) as e:
        loader(dataset, s3_secret_key="wJalrXUtnFEMI\0K7MDENG")
    assert "embedded null character" in str(e.value) and "wJalr" not in str(e.value)


def test_write_shard_refuses_a_nul_in_its_path(tmp_path):
    with pytest.raises(ValueError) as e:
        ringfeed.write_shard(str(tmp_path / "a.rfs") + "\0b", [b"x"])
    assert "embedded null character" in str(e.value)
    assert not (tmp_path / "a.rfs").exists()  # it wrote a.rfs before


def test_docs_options_table_is_config_keys():
    """docs/python.md's table of engine options says it is generated from
    config_keys(): it must list every option, in order, with its help."""
    doc = open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "python.md")).read()
    start = doc.index("| option | what (default) |")
    rows = [line for line in doc[start:].split("\n\n")[0].splitlines()[2:]]
    want = ["| `%s` | %s |" % (n, h.replace("|", "\\|")) for n, h in ringfeed.config_keys().items()]
    assert rows == want
