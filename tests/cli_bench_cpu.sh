#!/usr/bin/env bash
# cli_bench_cpu.sh - `ringfeed bench` reports CPU per decoded GB (the whole
# process's user + sys over the run) and, with --decode-limit, the same for
# the in-memory decode and the ratio of the two: consistent figures in the
# JSON and lines in the report. No figure is judged by its size (a loaded
# machine moves them), only by being there and adding up.
set -euo pipefail
CLI=${RF_CLI:?set RF_CLI to the ringfeed binary}
PY=/usr/bin/python3
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-bench-cpu-XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

$PY -c "
import random, sys
random.seed(5)
with open(sys.argv[1], 'w') as f:
    for i in range(40000):
        f.write('r%d:%s\\n' % (i, ''.join(random.choices('abcdefgh', k=random.randint(0, 200)))))
" "$T/in.txt"
"$CLI" pack --from lines "$T/in.txt" -o "$T/ds" --block-size 64KiB --shard-size 1MiB >/dev/null
"$CLI" bench --json --decode-limit --step-ms 0 --threads 2 "$T/ds" >"$T/b.json" ||
	fail "bench --json --decode-limit failed"
$PY - "$T/b.json" <<'PYEOF' || fail "bench JSON: CPU figures"
import json, sys
d = json.load(open(sys.argv[1]))
gb = d["decoded_bytes"] / 1e9
assert d["decoded_bytes"] > 0, d
assert d["cpu_s"] > 0, d["cpu_s"]
assert abs(d["cpu_s_per_decoded_gb"] - d["cpu_s"] / gb) <= 1e-2 * d["cpu_s_per_decoded_gb"], d
assert d["decode_limit_cpu_s"] > 0, d
assert d["decode_limit_cpu_s_per_gb"] > 0, d
ratio = d["cpu_s_per_decoded_gb"] / d["decode_limit_cpu_s_per_gb"]
assert abs(d["cpu_ratio"] - ratio) <= 1e-2 * ratio, (d["cpu_ratio"], ratio)
PYEOF
"$CLI" bench --decode-limit --step-ms 0 --threads 2 "$T/ds" >"$T/b.txt" || fail "bench report failed"
grep -q "CPU-s per decoded GB" "$T/b.txt" || { cat "$T/b.txt" >&2; fail "report: no CPU per GB line"; }
grep -q "decode limit CPU .* CPU-s per decoded GB: the loader costs .* x it" "$T/b.txt" ||
	{ cat "$T/b.txt" >&2; fail "report: no decode-limit CPU line"; }
# without --decode-limit: the loader's figure, no ratio
"$CLI" bench --json --step-ms 0 "$T/ds" >"$T/c.json" || fail "bench --json failed"
$PY -c "
import json, sys
d = json.load(open(sys.argv[1]))
assert d['cpu_s'] > 0 and d['cpu_s_per_decoded_gb'] > 0 and d['cpu_ratio'] == 0, d
" "$T/c.json" || fail "bench JSON without the decode limit"
echo "cli_bench_cpu: ok"
