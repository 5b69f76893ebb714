#!/usr/bin/env bash
# open_remote_bench.sh OLD_BUILD NEW_BUILD [SHARDS] [DELAY_MS] [ROUNDS] - the
# open of a remote manifest against a store that answers every request after
# DELAY_MS (tests/servers/bad_http.py /slow-every-1-MS/): SHARDS (default
# 2000) .rfs shards shaped like pack's default (about 256 blocks, an index of
# about 6 KiB: more than 4 KiB), listed in a manifest. Two builds side by
# side, interleaved (old, new, old, new, ...) so the machine's drift hits
# both alike; medians over ROUNDS (default 3) of:
#   first batch  wall seconds of `ringfeed read --batch 1 --stop-after 1`
#                (the open, then the first block's read);
#   open         the stats' open_s;
#   shards asked for, requests   what the server was asked (its /_stats).
# Printed as old, new and new/old, and a third run of NEW on a manifest
# with an index bundle beside it (tests/bundle_write.py: every shard's
# footer and index in one object, so the open asks the store nothing more).
# Every run reads its manifest from the store. Progress on
# stderr, the table on stdout.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
old=${1:?usage: open_remote_bench.sh OLD_BUILD NEW_BUILD [SHARDS] [DELAY_MS] [ROUNDS]}
new=${2:?usage: open_remote_bench.sh OLD_BUILD NEW_BUILD [SHARDS] [DELAY_MS] [ROUNDS]}
shards=${3:-2000}
delay=${4:-1000}
rounds=${5:-3}
PY=/usr/bin/python3
for b in "$old" "$new"; do
	[ -x "$b/ringfeed" ] || { echo "open_remote_bench: no $b/ringfeed (build it first)" >&2; exit 1; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/rf-open-remote-bench.XXXXXX")
srv=
cleanup() {
	[ -n "$srv" ] && kill "$srv" 2>/dev/null && wait "$srv" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

# one shard of ~256 blocks (1 KiB blocks of 256 KiB), linked SHARDS times
$PY -c "import sys; sys.stdout.write(''.join('record-%08d-%s\n' % (i, 'x' * 40) for i in range(5000)))" \
	>"$work/lines.txt"
"$new/ringfeed" pack --from lines "$work/lines.txt" -o "$work/one" --block-size 1KiB \
	--shard-size 256KiB >/dev/null
one=$work/one/shard-000000.rfs
bytes=$(stat -c %s "$one")
records=$(awk -F'\t' '$1 == "shard-000000.rfs" {print $3}' "$work/one/manifest.rfm")
blocks=$("$new/ringfeed" inspect --json "$one" | $PY -c 'import json,sys; print(json.load(sys.stdin)["blocks"])')
mkdir -p "$work/root/ds"
for ((i = 0; i < shards; i++)); do ln "$one" "$work/root/ds/s-$i.rfs"; done

$PY "$top/tests/servers/bad_http.py" --root "$work/root" --port 0 --port-file "$work/port" \
	>"$work/server.log" 2>&1 &
srv=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
[ -s "$work/port" ] || { cat "$work/server.log" >&2; exit 1; }
url=http://127.0.0.1:$(cat "$work/port")
{
	echo "# ringfeed manifest v1"
	for ((i = 0; i < shards; i++)); do printf '%s/slow-every-1-%s/ds/s-%d.rfs\t%s\t%s\n' \
		"$url" "$delay" "$i" "$bytes" "$records"; done
} >"$work/m.rfm"
# the same manifest with an index bundle of the shards' tails beside it
# (mb.rfx for mb.rfm): one request instead of one a shard
cp "$work/m.rfm" "$work/mb.rfm"
$PY "$top/tests/bundle_write.py" "$work/mb.rfm" "$work/mb.rfx" --file "$one"
# every run reads its manifest from the store too, as a dataset packed and
# uploaded whole is read (the bundle: one more request, the manifest's)
cp "$work/m.rfm" "$work/mb.rfm" "$work/mb.rfx" "$work/root/ds/"
# the shards the server was asked for, and its requests in all (every
# shard opened: one each, plus the first batch's block reads; with the
# bundle, only the shards the first batch reads)
requests() { $PY -c 'import json,sys,urllib.request
st = json.load(urllib.request.urlopen(sys.argv[1] + "/_stats"))
v = [v["requests"] for k, v in st.items() if k.endswith(".rfs")]
print(len(v), sum(v))' "$url"; }
reset() { $PY -c 'import sys,urllib.request; urllib.request.urlopen(sys.argv[1] + "/_reset").read()' "$url"; }

echo "open_remote_bench: $shards shards of $bytes bytes ($blocks blocks), every request after $delay ms, $rounds rounds" >&2
for ((r = 1; r <= rounds; r++)); do
	for side in old new bundle; do
		b=$old m=$url/slow-every-1-$delay/ds/m.rfm
		[ $side = old ] || b=$new
		[ $side = bundle ] && m=$url/slow-every-1-$delay/ds/mb.rfm
		echo "round $r/$rounds: $side" >&2
		reset
		t0=$(date +%s.%N)
		"$b/ringfeed" read --digest --batch 1 --stop-after 1 --open-progress 0 \
			--stats "$work/$side-$r.json" "$m" >/dev/null 2>"$work/$side-$r.err" ||
			{ cat "$work/$side-$r.err" >&2; exit 1; }
		t1=$(date +%s.%N)
		echo "$t0 $t1 $(requests)" >"$work/$side-$r.t"
	done
done

$PY - "$work" "$rounds" "$shards" <<'PYEOF'
import json, statistics, sys
work, rounds, shards = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def fig(side):
    first, opened, asked, req = [], [], [], []
    for r in range(1, rounds + 1):
        t0, t1, a, n = open("%s/%s-%d.t" % (work, side, r)).read().split()
        first.append(float(t1) - float(t0))
        opened.append(json.load(open("%s/%s-%d.json" % (work, side, r)))["open_s"])
        asked.append(float(a))
        req.append(float(n))
    return [statistics.median(x) for x in (first, opened, asked, req)]
o, n, x = fig("old"), fig("new"), fig("bundle")
ratio = lambda a, b: "%.2f" % (b / a) if a else "-"
print("| figure (median of %d) | old | new | new, index bundle | new/old | bundle/old |" % rounds)
print("|---|---|---|---|---|---|")
for name, a, b, c, unit in zip(["first batch", "open", "shards asked for", "requests"], o, n, x,
                               ["s", "s", "", ""]):
    print("| %s | %.2f%s | %.2f%s | %.2f%s | %s | %s |" % (name, a, unit, b, unit, c, unit, ratio(a, b), ratio(a, c)))
PYEOF
