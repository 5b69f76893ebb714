#!/usr/bin/env bash
# cli_open_bomb.sh - compressed tars that decode to far more than they hold
# (tests/tar_bombs.py): 81 members of 200 MiB of zeros under the zstd CLI
# (0.5 MB for 16 GiB) and a crafted frame of RLE blocks (0.56 MB for 17 GiB)
# are refused by inspect, read and verify with the shard, the ratio and the
# limit named, early (the message says how far it decoded: under 80 MiB),
# never by a crash. A tar at about 1000:1, below the limit, whose open takes
# over a hundred steps from one read, opens on a 192 KiB stack (the open
# phase is iterative: it once recursed per step). No timing is asserted.
set -euo pipefail
src=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/tests/check.inc.sh"
cli=${RF_CLI:?RF_CLI must name the ringfeed binary}
PY=/usr/bin/python3
command -v zstd >/dev/null || { echo "SKIP: no zstd CLI"; exit 77; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-bomb.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
$PY "$src/tests/tar_bombs.py" zeros "$tmp/zeros.tar.zst"
$PY "$src/tests/tar_bombs.py" rle "$tmp/rle.tar.zst" 140000
$PY "$src/tests/tar_bombs.py" dense "$tmp/dense.tar.zst" 512

# runs the command; prints its exit status then its output (stderr too)
run() {
	local rc=0 out
	out=$("$@" 2>&1) || rc=$?
	printf '%s\n%s\n' "$rc" "$out"
}

for f in zeros rle; do
	shard=$tmp/$f.tar.zst
	for cmd in inspect "read --digest" verify; do
		res=$(run "$cli" $cmd "$shard")
		rc=$(head -n 1 <<<"$res")
		msg=$(tail -n +2 <<<"$res")
		if [ "$rc" -ne 1 ]; then
			bad "$f, $cmd: exit $rc (1 wanted; 128+ is a crash): $msg"
			continue
		fi
		if grep -q "shard $shard: the zstd stream decodes to .* a ratio of [0-9]*:1, past the 2048:1" \
			<<<"$msg"; then
			ok "$f, $cmd: refused, naming the shard, the ratio and the limit"
		else
			bad "$f, $cmd: message '$msg'"
		fi
		decoded=$(sed -n 's/.*decodes to \([0-9]*\) bytes.*/\1/p' <<<"$msg" | head -n 1)
		if [ -n "$decoded" ] && [ "$decoded" -lt $((80 << 20)) ]; then
			ok "$f, $cmd: refused after $decoded decoded bytes"
		else
			bad "$f, $cmd: refused after '$decoded' decoded bytes (80 MiB at most)"
		fi
	done
done

# below the limit: opens, and on a small stack gives the same records
want=$("$cli" read --digest --no-shuffle --batch 1 "$tmp/dense.tar.zst" | tail -n 1)
case $want in records=128\ *) ok "dense (below the limit): $want" ;; *) bad "dense: '$want'" ;; esac
res=$(ulimit -s 192 && run "$cli" read --digest --no-shuffle --batch 1 "$tmp/dense.tar.zst")
same "dense on a 192 KiB stack: exit 0" 0 "$(head -n 1 <<<"$res")"
same "dense on a 192 KiB stack: the same records" "$want" "$(tail -n 1 <<<"$res")"
rf_checks_done cli_open_bomb
