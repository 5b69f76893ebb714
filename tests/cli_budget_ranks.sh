#!/usr/bin/env bash
# cli_budget_ranks.sh - the open-time budget minimum holds for every rank's
# slice: over a tar dataset whose shuffle window spans every block, a budget
# too small for one process is refused at open on every rank of world 4
# with the clear minimum ("needs at least ... shuffle window(s)"), never at
# the first batch ("needs block N of shard ..."), and each rank at the
# minimum it named reads its whole slice.
set -euo pipefail
src=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/tests/check.inc.sh"
cli=${RF_CLI:?RF_CLI must name the ringfeed binary}
PY=/usr/bin/python3

T=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-budget-ranks.XXXXXX")
trap 'rm -rf "$T"' EXIT
mkdir "$T/wds"
$PY - "$T/wds" <<'PYEOF'
import io, random, sys, tarfile
rng = random.Random(5)
for s in range(8):
    with tarfile.open(f"{sys.argv[1]}/shard-{s:04d}.tar", "w", format=tarfile.GNU_FORMAT) as t:
        for i in range(60):
            for ext, n in (("jpg", rng.randrange(50000, 200000)), ("cls", 3)):
                ti = tarfile.TarInfo(f"{s:02d}{i:05d}.{ext}"); ti.size = n
                t.addfile(ti, io.BytesIO(rng.randbytes(n)))
PYEOF

run() { # prints the exit status, then the output (stderr too)
	local rc=0 out
	out=$("$@" 2>&1) || rc=$?
	printf '%s\n%s\n' "$rc" "$out"
}
args=(read --digest --batch 8 --seed 1 "$T/wds")
res=$(run "$cli" "${args[@]}" --budget 48MiB)
if [ "$(head -n 1 <<<"$res")" = 1 ] && grep -q "needs at least .* shuffle window" <<<"$res"; then
	ok "one process: refused at open with the minimum"
else
	bad "one process at 48 MiB: $res"
fi
for r in 0 1 2 3; do
	res=$(run "$cli" "${args[@]}" --budget 48MiB --world 4 --rank "$r")
	if [ "$(head -n 1 <<<"$res")" = 1 ] && grep -q "needs at least .* shuffle window" <<<"$res" &&
		! grep -q "needs block" <<<"$res"; then
		ok "rank $r of 4: refused at open with the minimum"
	else
		bad "rank $r of 4 at 48 MiB: $res"
	fi
	need=$(sed -n 's/.*needs at least \([0-9]*\) bytes.*/\1/p' <<<"$res" | head -n 1)
	[ -n "$need" ] || continue
	got=$("$cli" "${args[@]}" --budget "$need" --world 4 --rank "$r" 2>&1 | tail -n 1)
	case $got in records=120\ *) ok "rank $r at its minimum ($need bytes): $got" ;;
	*) bad "rank $r at its minimum ($need bytes): $got" ;; esac
done
rf_checks_done cli_budget_ranks
