"""A loader closed by another thread while one iterates, and a loader used by a
forked child: the iterating thread gets LoaderClosed (never a batch of freed
memory, never a crash), the child gets ForkedChildError naming the parent's
process (never a hang). Each case runs in a child interpreter so that a crash
fails this test only, and a hang is cut by a timeout."""

import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

import ringfeed

HERE = pathlib.Path(__file__).resolve().parent


def run_py(code, timeout=120):
    env = dict(os.environ, PYTHONPATH=str(HERE.parent))
    try:
        res = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            capture_output=True, text=True, env=env, timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"no answer within {timeout} s (a hang)")
    assert res.returncode == 0, f"exit {res.returncode}\n{res.stdout}\n{res.stderr}"
    return res.stdout


CLOSE_WHILE_ITERATING = """
import random, sys, threading, time
import ringfeed

manifest, reps = MANIFEST, REPS
bad, closed_mid, batches = [], 0, 0
rng = random.Random(5)
for rep in range(reps):
    # drop_last: an epoch (3000 records) ends in 8, and a slow close lets it end
    loader = ringfeed.Loader(manifest, batch=16, epochs=0, seed=rep, threads=2, drop_last=1)
    result = {}

    def consume():
        n = 0
        try:
            for b in loader:
                # a whole batch: 16 records, each "NNNNNNNN:..." (freed memory is not)
                if b.records != 16:
                    bad.append(f"rep {rep}: records={b.records}")
                for r in b.records_bytes():
                    if len(r) < 9 or r[8:9] != b":" or not r[:8].isdigit():
                        bad.append(f"rep {rep}: record {r[:12]!r}")
                        break
                b.release()
                n += 1
            result["end"] = "stream ended"
        except ringfeed.LoaderClosed as e:
            result["end"] = e
        except BaseException as e:
            result["end"] = e
        result["n"] = n

    t = threading.Thread(target=consume)
    t.start()
    time.sleep(rng.choice((0, 0.0002, 0.001, 0.003)))
    loader.close()
    t.join(60)
    assert not t.is_alive(), f"rep {rep}: the iterating thread did not end"
    end = result["end"]
    assert isinstance(end, ringfeed.LoaderClosed), f"rep {rep}: {end!r}"
    assert isinstance(end, ValueError) and "closed" in str(end)
    closed_mid += 1
    batches += result["n"]
assert not bad, bad[:5]
print("ok", closed_mid, batches)
"""


def test_close_from_another_thread_while_iterating(dataset):
    code = CLOSE_WHILE_ITERATING.replace("MANIFEST", repr(dataset.manifest)).replace(
        "REPS", "150"
    )
    out = run_py(code)
    assert out.startswith("ok 150"), out


def test_next_after_close_is_loader_closed(dataset):
    L = ringfeed.Loader(dataset.manifest, batch=16)
    next(L).release()
    L.close()
    with pytest.raises(ringfeed.LoaderClosed, match="closed"):
        next(L)
    with pytest.raises(ValueError):  # as a closed file's read
        L.stats()


FORKED_CHILD = """
import os, sys, time
import ringfeed

loader = ringfeed.Loader(MANIFEST, batch=16, threads=1)
first = next(loader)
parent = os.getpid()
pid = os.fork()
if pid == 0:
    fails = []
    for name, call in (("next", lambda: next(loader)),
                       ("stats", loader.stats),
                       ("state_dict", loader.state_dict)):
        try:
            call()
            fails.append(f"{name}: no error")
        except ringfeed.ForkedChildError as e:
            if f"opened in process {parent}" not in str(e) or e.errno != 10:
                fails.append(f"{name}: {e}")
        except BaseException as e:
            fails.append(f"{name}: {e!r}")
    loader.close()  # the parent's engine is left alone
    print("child", fails, flush=True)
    os._exit(1 if fails else 0)
deadline = time.monotonic() + 60
while True:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
    if time.monotonic() > deadline:
        os.kill(pid, 9)
        raise SystemExit("the forked child hung")
    time.sleep(0.05)
assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
first.release()
second = next(loader)  # the parent's loader goes on
assert second.index == 1, second
second.release()
loader.close()
print("ok")
"""


def test_forked_child_gets_a_clear_error(dataset):
    out = run_py(FORKED_CHILD.replace("MANIFEST", repr(dataset.manifest)))
    assert out.strip().endswith("ok"), out
