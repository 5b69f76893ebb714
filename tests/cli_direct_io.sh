#!/usr/bin/env bash
# cli_direct_io.sh - direct_io (auto|on|off): the loader and fetch-only read
# the same records with O_DIRECT as through the page cache (every block offset
# unaligned: read buffers agree with their offsets modulo 4096, the aligned
# interior lands in place, the edges through a bounce block), at several
# request sizes and budgets; a bad value is refused naming the option.
set -euo pipefail
CLI=${RF_CLI:?set RF_CLI to the ringfeed binary}
PY=/usr/bin/python3
T=$(mktemp -d "${RF_TEST_DIRECT_DIR:-/var/tmp}/rf-cli-direct-XXXXXX")
cg=""
trap 'rm -rf "$T"; [ -z "$cg" ] || rmdir "$cg" 2>/dev/null || true' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
$PY -c "
import os, sys
fd = os.open(sys.argv[1] + '/probe', os.O_CREAT | os.O_WRONLY | os.O_DIRECT)
os.close(fd)
" "$T" 2>/dev/null || { echo "skipped: $T refuses O_DIRECT"; exit 77; }

$PY -c "
import random, sys
random.seed(9)
with open(sys.argv[1], 'w') as f:
    for i in range(30000):
        f.write('r%d:%s\n' % (i, ''.join(random.choices('abcdefghij', k=random.randint(0, 300)))))
" "$T/in.txt"
"$CLI" pack --from lines "$T/in.txt" -o "$T/ds" --block-size 100KiB --shard-size 2MiB >/dev/null
ref=$("$CLI" read --digest --direct-io off "$T/ds")
for args in "--direct-io on" "--direct-io on --request-size 4KiB" "--direct-io on --budget 8MiB --threads 1" \
	"--direct-io auto" "--direct-io on --shuffle 0"; do
	got=$("$CLI" read --digest $args "$T/ds" 2>"$T/err") || { cat "$T/err" >&2; fail "$args: failed"; }
	want=$ref
	[ "$args" = "--direct-io on --shuffle 0" ] && want=$("$CLI" read --digest --shuffle 0 "$T/ds")
	[ "$got" = "$want" ] || fail "$args: $got, want $want"
done
# 1 MiB blocks (~400 KiB compressed: every read's aligned interior in place)
"$CLI" pack --from lines "$T/in.txt" -o "$T/big" --block-size 1MiB --shard-size 4MiB >/dev/null
refbig=$("$CLI" read --digest --direct-io off "$T/big")
out=$("$CLI" bench --fetch-only --direct-io on "$T/ds")
echo "$out" | grep -q "direct I/O: [1-9][0-9]* bytes read with O_DIRECT" || fail "fetch-only: $out"
echo "$out" | grep -q "direct I/O: [1-9][0-9]* reads ([0-9]* bytes) into [1-9][0-9]* bytes of registered buffers (READ_FIXED)" ||
	fail "fetch-only without READ_FIXED: $out"
# Registration refused (no CAP_IPC_LOCK, RLIMIT_MEMLOCK 8 MiB: the ring fits,
# 16 x 1 MiB of buffers do not): plain O_DIRECT reads, every byte, said once.
if setpriv --bounding-set=-ipc_lock --inh-caps=-ipc_lock true 2>/dev/null &&
	command -v prlimit >/dev/null; then
	j=$(setpriv --bounding-set=-ipc_lock --inh-caps=-ipc_lock prlimit --memlock=8388608:8388608 \
		"$CLI" bench --fetch-only --json --direct-io on --request-size 1MiB --connections 16 \
		"$T/ds" 2>"$T/err") || { cat "$T/err" >&2; fail "fetch-only without memlock failed"; }
	$PY -c "
import json, sys
j = json.loads(sys.argv[1])
assert j['register_error'] == -12 and j['fixed_reads'] == 0 and j['registered_bytes'] == 0, j
assert j['direct_bytes'] == j['bytes'] > 0, j
" "$j" || fail "memlock refusal: $j"
	[ "$(grep -c "io_uring refused to register the read buffers (Cannot allocate memory; RLIMIT_MEMLOCK" "$T/err")" = 1 ] ||
		{ cat "$T/err" >&2; fail "memlock refusal not said once"; }
	# the loader: the same records, the refusal said once, counted (512 KiB:
	# the ring's ~200 KiB fit, no read buffer of 1 MiB blocks does)
	got=$(setpriv --bounding-set=-ipc_lock --inh-caps=-ipc_lock prlimit --memlock=524288:524288 \
		"$CLI" read --digest --direct-io on --budget 64MiB "$T/big" 2>"$T/err") ||
		{ cat "$T/err" >&2; fail "the loader without memlock failed"; }
	[ "$got" = "$refbig" ] || fail "the loader without memlock: $got, want $refbig"
	[ "$(grep -c "io_uring refused to register a read buffer of [0-9]* bytes (Cannot allocate memory; RLIMIT_MEMLOCK" "$T/err")" = 1 ] ||
		{ cat "$T/err" >&2; fail "the loader's memlock refusal not said once"; }
	l=$(setpriv --bounding-set=-ipc_lock --inh-caps=-ipc_lock prlimit --memlock=524288:524288 \
		"$CLI" bench --json --batches 200 --direct-io on --budget 64MiB "$T/big" 2>/dev/null)
	$PY -c "
import json, sys
l = json.loads(sys.argv[1])['loader']
assert l['direct_register_refused'] >= 1 and l['direct_bytes'] > 0, l
" "$l" || fail "the loader's memlock refusal is not in the stats: $l"
else
	echo "cli_direct_io: setpriv/prlimit unavailable: the RLIMIT_MEMLOCK refusal is not checked"
fi
# auto decides on the memory the page cache could hold (--direct-io-memory
# makes it a known figure): a dataset larger than it is read with O_DIRECT
# (fetch-only and the loader), one smaller through the page cache.
dsbytes=$(cat "$T"/ds/*.rfs | wc -c)
for mem in 1MiB 1TiB; do
	j=$("$CLI" bench --fetch-only --json --direct-io auto --direct-io-memory $mem "$T/ds" 2>"$T/err") ||
		{ cat "$T/err" >&2; fail "auto, memory $mem: failed"; }
	l=$("$CLI" bench --json --batches 20 --direct-io auto --direct-io-memory $mem "$T/ds" 2>"$T/err") ||
		{ cat "$T/err" >&2; fail "auto, memory $mem: the loader failed"; }
	$PY -c "
import json, sys
f, l, mem, total = json.loads(sys.argv[1]), json.loads(sys.argv[2])['loader'], sys.argv[3], int(sys.argv[4])
assert f['bytes'] == total, f
if mem == '1MiB':  # the first shard alone outgrows 1 MiB
    assert f['direct_bytes'] == total and f['fixed_reads'] > 0, f
    assert l['direct_bytes'] > 0, l
else:
    assert f['direct_bytes'] == 0 and l['direct_bytes'] == 0, (f, l)
" "$j" "$l" "$mem" "$dsbytes" || fail "auto with memory $mem: $j"
done
# The loader's read buffers come from the pool: registered as reads get
# them (READ_FIXED), dropped before the pool unmaps them (the digests above
# ran through that, at 8 MiB of budget too).
for args in "" "--budget 8MiB --threads 1"; do
	got=$("$CLI" read --digest --direct-io on $args "$T/big" 2>"$T/err") || { cat "$T/err" >&2; fail "big $args: failed"; }
	[ "$got" = "$refbig" ] || fail "big, direct $args: $got, want $refbig"
done
l=$("$CLI" bench --json --batches 200 --direct-io on "$T/big" 2>/dev/null)
$PY -c "
import json, sys
l = json.loads(sys.argv[1])['loader']
assert l['fixed_reads'] > 0 and l['fixed_bytes'] > 0 and l['direct_register_refused'] == 0, l
" "$l" || fail "the loader made no READ_FIXED reads: $l"
# auto without the option: a memory cgroup smaller than the files (its page
# cache is charged to it) turns O_DIRECT on; outside it, physical memory
# (far larger) does not. Where no cgroup can be made (not root, no memory
# controller), not checked.
mkdir "$T/zeros"
for i in 0 1 2; do head -c $((16 << 20)) /dev/zero >"$T/zeros/s$i.rfs"; done
if [ -d /sys/fs/cgroup/memory ] && mkdir "/sys/fs/cgroup/memory/rf-cli-direct-$$" 2>/dev/null; then
	cg=/sys/fs/cgroup/memory/rf-cli-direct-$$
	echo $((32 << 20)) >"$cg/memory.limit_in_bytes"
elif [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw memory /sys/fs/cgroup/cgroup.controllers &&
	mkdir "/sys/fs/cgroup/rf-cli-direct-$$" 2>/dev/null; then
	cg=/sys/fs/cgroup/rf-cli-direct-$$
	echo $((32 << 20)) >"$cg/memory.max"
fi
if [ -n "$cg" ]; then
	fo="bench --fetch-only --json --direct-io auto --request-size 64KiB --connections 4 $T/zeros"
	# shellcheck disable=SC2086 # fo's words
	in=$(/bin/sh -c 'echo $$ >"$0" && exec "$@"' "$cg/cgroup.procs" "$CLI" $fo 2>"$T/err") ||
		{ cat "$T/err" >&2; fail "auto in a 32 MiB cgroup: failed"; }
	# shellcheck disable=SC2086
	out=$("$CLI" $fo 2>"$T/err") || { cat "$T/err" >&2; fail "auto outside the cgroup: failed"; }
	$PY -c "
import json, sys
i, o = json.loads(sys.argv[1]), json.loads(sys.argv[2])
assert i['bytes'] == 3 << 24 and i['direct_bytes'] == i['bytes'], i
assert o['direct_bytes'] == 0, o  # 48 MiB: below any memory this runs in
" "$in" "$out" || fail "auto and the cgroup's limit: in $in, out $out"
else
	echo "cli_direct_io: no memory cgroup could be made: auto's cgroup limit is not checked"
fi
set +e
"$CLI" read --digest --direct-io sometimes "$T/ds" >/dev/null 2>"$T/err"
rc=$?
set -e
[ "$rc" != 0 ] || fail "--direct-io sometimes was accepted"
grep -q "direct_io: 'sometimes' is not auto, on or off" "$T/err" || { cat "$T/err" >&2; fail "bad value message"; }
echo "cli_direct_io: ok"
