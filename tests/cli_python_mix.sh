#!/usr/bin/env bash
# cli_python_mix.sh - RingfeedDataset(sources=...) (a 2-source mixture, issue
# 25) under a real torch.distributed job: 2 gloo ranks, two epochs with an
# all_reduce per step (a rank with fewer batches would leave the other
# waiting: a collective timeout fails it instead of a hang), every rank the
# same number of batches and len(ds); each rank's stream is what `ringfeed
# read --mixture ... --rank R --world 2` reads; then, in the same job, a
# state saved after 4 batches of epoch 1 and loaded into a new dataset gives
# the rest of each rank's epoch exactly.
set -euo pipefail
src=${RF_SOURCE_DIR:?RF_SOURCE_DIR not set}
build=${RF_BUILD_DIR:?RF_BUILD_DIR not set}
cli=${RF_CLI:-$build/ringfeed}
py=/usr/bin/python3
if grep -q '^RF_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
	echo "cli_python_mix: skipped in the sanitizer build (as cli_python: ASan cannot run" \
	     "inside an unsanitized Python); the plain build runs it"
	exit 77
fi
# (no separate import check: it would cost a third torch import; a rank
# without numpy / torch / gloo fails below with its ImportError)
. "$src/tests/check.inc.sh"
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-python-mix.XXXXXX")
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$T"
}
trap cleanup EXIT

seq 0 79 | awk '{ printf "a%03d\n", $1 }' >"$T/a.txt"
seq 0 699 | awk '{ printf "b%03d\n", $1 }' >"$T/b.txt"
"$cli" pack --from lines "$T/a.txt" -o "$T/a" --block-size 128 >/dev/null
"$cli" pack --from lines "$T/b.txt" -o "$T/b" --block-size 512 --shard-size 2KiB >/dev/null

cat >"$T/rank.py" <<'EOF'
import datetime, json, sys
import torch
import torch.distributed as dist
import torch.utils.data
from ringfeed.torch import RingfeedDataset

a, b, init, rank = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
SOURCES = [(a, 0.25), (b, "0.75")]

def dataset():
    return RingfeedDataset(sources=SOURCES, batch=8, seed=3)

def ids(item):
    p, o = item["payload"], item["offsets"].tolist()
    return [bytes(p[o[i]:o[i + 1]].numpy()).decode() for i in range(len(o) - 1)]

def run(ds, epoch, stop=None):
    """The epoch's records and steps, an all_reduce per step."""
    got, steps = [], 0
    ds.set_epoch(epoch)
    for item in torch.utils.data.DataLoader(ds, batch_size=None):
        t = torch.tensor([1], dtype=torch.int64)
        dist.all_reduce(t)  # the other rank is at the same step
        got += ids(item)
        steps += 1
        if steps == stop:
            break
    return got, steps

ds = dataset()  # before init_process_group: rank and world come at iteration
dist.init_process_group("gloo", init_method=f"file://{init}", rank=rank, world_size=2,
                        timeout=datetime.timedelta(seconds=30))
assert ds.rank == rank and ds.world == 2
out = {"len": len(ds)}
out["e0"], out["steps0"] = run(ds, 0)
out["e1"], out["steps1"] = run(ds, 1)
head, _ = run(ds, 1, stop=4)
state = ds.state_dict()
ds.close()
ds = dataset()
ds.load_state_dict(state)
ds.set_epoch(1)
out["len_resumed"] = len(ds)
rest, out["steps_resumed"] = run(ds, 1)
out["resumed"] = head + rest
dist.barrier()
ds.close()
dist.destroy_process_group()
print(json.dumps(out))
EOF

export RINGFEED_LIBRARY=$build/libringfeed.so PYTHONPATH=$src/python PYTHONDONTWRITEBYTECODE=1 \
	GLOO_SOCKET_IFNAME=lo
for r in 0 1; do
	timeout 120 "$py" "$T/rank.py" "$T/a" "$T/b" "$T/init" $r >"$T/out$r.json" 2>"$T/err$r" &
	pids+=($!)
done
for r in 0 1; do
	if wait "${pids[$r]}"; then ok "rank $r ran two epochs and a resume"; else
		bad "rank $r failed (exit $?; 124: a hang; needs numpy and torch with gloo):" \
			"$(tail -n 5 "$T/err$r")"
	fi
done
pids=()
printf '# ringfeed mixture v1\n0.25\t%s\n0.75\t%s\n' "$T/a" "$T/b" >"$T/mix.txt"
for r in 0 1; do
	for e in 0 1; do
		"$cli" read --mixture "$T/mix.txt" --batch 8 --seed 3 --epoch $e --world 2 --rank $r \
			--output lines >"$T/cli$r.e$e"
	done
done
"$py" - "$T" <<'EOF' && ok "equal batches and len() on both ranks; each rank's stream is the CLI's; the resume gives the rest" ||
import json, sys
t = sys.argv[1]
outs = [json.load(open(f"{t}/out{r}.json")) for r in (0, 1)]
keys = ("len", "steps0", "steps1", "len_resumed", "steps_resumed")
assert [[o[k] for k in keys] for o in outs][0] == [[o[k] for k in keys] for o in outs][1], \
    [[o[k] for k in keys] for o in outs]
o = outs[0]
# 700 / 0.75 = 934 samples an epoch (933.3 rounded up), 467 a rank: 59 batches of 8
assert o["len"] == o["steps0"] == o["steps1"] == 59, o
assert o["len_resumed"] == o["steps_resumed"] == 55, o
for r, o in enumerate(outs):
    for e in (0, 1):
        cli = open(f"{t}/cli{r}.e{e}").read().split("\n")[:-1]
        assert o[f"e{e}"] == cli, f"rank {r} epoch {e}: not the CLI's stream"
    assert o["resumed"] == o["e1"], f"rank {r}: 4 batches + the resume differ from epoch 1"
    assert o["e0"] != o["e1"]
a0 = [x for o in outs for x in o["e0"] if x[0] == "a"]
assert 233 <= len(a0) <= 234 and len(set(a0)) == 80, (len(a0), len(set(a0)))
EOF
	bad "the ranks' streams: see above"
rf_checks_done cli_python_mix
