#!/usr/bin/env bash
# cli_open_scale.sh - the cost of opening many shards, seen before it is
# paid: a manifest of 1,000,000 entries at a 64 MiB budget is refused from a
# count of its lines, naming the entries and the bytes the shard list would
# take, with a peak RSS under 48 MiB (the list built first peaked at 274 MB
# before the same refusal); a long open (320 shards, 1 s of injected latency
# per read, 64 at a time: 5 s at least) says how far it got on stderr
# ("opening shards: N/320, ..." with the bytes read, the slowest open in
# flight and the time left) and when it is done; local files stay at 64
# opens at once (tests/cli_open_remote.sh: remote shards).
set -euo pipefail
src=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/tests/check.inc.sh"
cli=${RF_CLI:?RF_CLI must name the ringfeed binary}
PY=/usr/bin/python3

T=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-open-scale.XXXXXX")
trap 'rm -rf "$T"' EXIT
$PY - "$T/big.rfm" <<'PYEOF'
import sys
with open(sys.argv[1], "w") as f:
    f.write("# ringfeed manifest v1\n")
    f.writelines("shard-%07d.rfs\t16231\t5000\n" % i for i in range(1000000))
PYEOF
# exit status, peak RSS (KiB) and output of a command, in this order
$PY - "$T/res" "$cli" read --budget 64MiB "$T/big.rfm" <<'PYEOF'
import resource, subprocess, sys
p = subprocess.run(sys.argv[2:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
open(sys.argv[1], "w").write("%d\n%d\n%s" % (p.returncode, rss, p.stdout.decode(errors="replace")))
PYEOF
rc=$(sed -n 1p "$T/res")
rss=$(sed -n 2p "$T/res")
msg=$(tail -n +3 "$T/res")
same "1M-entry manifest at 64 MiB: exit 1" 1 "$rc"
if grep -q "manifest .*big.rfm lists 1000000 shards: .* needs at least [0-9]* bytes .* before any shard is opened" <<<"$msg"; then
	ok "1M-entry manifest: refused naming the entries and the bytes"
else
	bad "1M-entry manifest: '$msg'"
fi
if [ "$rss" -lt $((48 << 10)) ]; then
	ok "1M-entry manifest: peak RSS $rss KiB (under 48 MiB)"
else
	bad "1M-entry manifest: peak RSS $rss KiB (48 MiB at most)"
fi

# a slow open says how far it got
mkdir "$T/few" "$T/slow"
$PY -c "import sys; sys.stdout.write(''.join('rec-%06d\n' % i for i in range(2000)))" >"$T/few.txt"
"$cli" pack --from lines "$T/few.txt" -o "$T/few" --block-size 1KiB --shard-size 2KiB >/dev/null
for i in $(seq -w 0 319); do cp "$T/few/shard-000000.rfs" "$T/slow/s-$i.rfs"; done
out=$("$cli" read --digest --batch 1 --stop-after 1 --inject latency=1s "$T/slow" 2>&1) || true
line='^ringfeed: opening shards: [0-9]+/320, [0-9.]+ [KMG]?i?B of indexes read, [0-9.]+ s \(64 at a time\); '
line+='slowest in flight [0-9.]+ s: .*/s-[0-9]{3}\.rfs \((opening|reading)\); (about [0-9]+ s left|none done yet)$'
if grep -qE "$line" <<<"$out"; then
	ok "a 5 s open: progress on stderr ($(grep -c 'opening shards' <<<"$out") lines)"
else
	bad "a 5 s open: no progress line in: $out"
fi
grep -qE "^ringfeed: opening shards: 320/320 done, [0-9.]+ [KMG]?i?B of indexes read, [0-9.]+ s \(64 at a time\)$" <<<"$out" && ok "a 5 s open: its end said" ||
	bad "a 5 s open: no end line in: $out"
grep -q "^records=1 " <<<"$out" && ok "a 5 s open: then the first batch" ||
	bad "a 5 s open: no batch: $out"
rf_checks_done cli_open_scale
