#!/usr/bin/env bash
# cli_resume_identity.sh - a saved state names the dataset it was saved on:
# two datasets of the same shape (alpha-N and bravo-N lines, the same records
# per block per shard) refuse each other's state naming the contents that
# differ; the same layout under another shard name is refused naming the
# names; the same dataset copied elsewhere resumes. A state whose epoch is
# past the run's last (a later --epochs, or 2^64-1 with endless epochs) is
# an error, not an empty run that exits 0.
set -euo pipefail
src=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/tests/check.inc.sh"
cli=${RF_CLI:?RF_CLI must name the ringfeed binary}
PY=/usr/bin/python3

T=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-resume-id.XXXXXX")
trap 'rm -rf "$T"' EXIT
for n in alpha bravo; do
	$PY -c "import sys; sys.stdout.write(''.join('%s-%06d\n' % (sys.argv[1], i) for i in range(20000)))" \
		$n >"$T/$n.txt"
	"$cli" pack --from lines "$T/$n.txt" -o "$T/$n" --block-size 8KiB --shard-size 64KiB >/dev/null
done
same "the two datasets have the same shape" \
	"$("$cli" inspect --json "$T/alpha/shard-000000.rfs" | $PY -c 'import json,sys; d=json.load(sys.stdin); print(d["records"], d["blocks"])')" \
	"$("$cli" inspect --json "$T/bravo/shard-000000.rfs" | $PY -c 'import json,sys; d=json.load(sys.stdin); print(d["records"], d["blocks"])')"

# runs the command; prints its exit status then its output (stderr too)
run() {
	local rc=0 out
	out=$("$@" 2>&1) || rc=$?
	printf '%s\n%s\n' "$rc" "$out"
}
refused() { # DESC PATTERN CMD...
	local desc=$1 pat=$2 res
	shift 2
	res=$(run "$@")
	if [ "$(head -n 1 <<<"$res")" = 1 ] && grep -q -- "$pat" <<<"$res"; then
		ok "$desc"
	else
		bad "$desc: expected exit 1 and '$pat', got: $res"
	fi
}

common=(read --digest --seed 7 --batch 32)
"$cli" "${common[@]}" --stop-after 5 --save-state "$T/st" "$T/alpha" >/dev/null
refused "alpha's state on bravo: refused, the contents named" \
	"same shape (.* shards, 20000 records) and shard names but other contents" \
	"$cli" "${common[@]}" --resume "$T/st" "$T/bravo"
mkdir "$T/renamed"
for f in "$T"/alpha/*.rfs; do cp "$f" "$T/renamed/x-$(basename "$f")"; done
refused "alpha's shards renamed: refused, the names named" \
	"but other shard names" "$cli" "${common[@]}" --resume "$T/st" "$T/renamed"
mkdir "$T/copy"
cp "$T"/alpha/*.rfs "$T/copy/"
full=$("$cli" "${common[@]}" --resume "$T/st" "$T/alpha" | tail -n 1)
same "alpha copied elsewhere resumes as alpha" "$full" \
	"$("$cli" "${common[@]}" --resume "$T/st" "$T/copy" | tail -n 1)"
case $full in records=*) ok "alpha resumes: $full" ;; *) bad "alpha resume: '$full'" ;; esac

# epochs: a state of epoch 2 (of 3) resumed in a run of 2 epochs
"$cli" "${common[@]}" --epochs 3 --stop-after 1260 --save-state "$T/st3" "$T/alpha" >/dev/null
refused "epoch 2 with --epochs 2: past the run's last epoch" \
	"resume state is at epoch 2, past this run's last epoch 1 (epoch 0, epochs 2)" \
	"$cli" "${common[@]}" --epochs 2 --resume "$T/st3" "$T/alpha"
# epoch 2^64-1 (the checksum made right): no run reaches it
$PY - "$T/st" "$T/stmax" <<'PYEOF'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
b[56:64] = struct.pack("<Q", 2**64 - 1)
crc = 0xFFFFFFFF
for x in b[:-4]:
    crc ^= x
    for _ in range(8):
        crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
b[-4:] = struct.pack("<I", crc ^ 0xFFFFFFFF)
open(sys.argv[2], "wb").write(b)
PYEOF
refused "epoch 2^64-1, endless epochs: refused" \
	"resume state is at epoch 18446744073709551615, which no run reaches" \
	"$cli" "${common[@]}" --epochs 0 --resume "$T/stmax" "$T/alpha"
refused "epoch 2^64-1, one epoch: refused" \
	"past this run's last epoch 0" "$cli" "${common[@]}" --resume "$T/stmax" "$T/alpha"
rf_checks_done cli_resume_identity
