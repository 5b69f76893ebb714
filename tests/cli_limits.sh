#!/usr/bin/env bash
# cli_limits.sh - ringfeed read at the engine's bounds, with default
# settings: a shuffle window of more blocks than the event loop has op slots
# (records as large as a block) reads to the end, the same records in the
# same order at every depth; open-phase memory (index buffers, parsed
# indexes, plans) is reserved from --budget before it is allocated, so a
# manifest listing one 40,000-block shard 64 times, and a footer declaring a
# 384 MiB index, fail early with the bytes needed, peak RSS within the budget
# plus the stated fixed overhead (docs/design.md: the RSS before rf_open +
# 16 MiB; here the peak of a small read with a 4 MiB budget stands for the
# RSS before rf_open); a shuffle window of more units than the unit ring's
# 8192 slots (or two such windows a batch straddles) reads to the end, the
# same records, each once. RSS is not checked in a sanitizer build (shadow
# memory and ASan's quarantine of freed blocks are not ours).
set -euo pipefail
CLI=${RF_CLI:?set RF_CLI to the ringfeed binary}
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-limits-XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_rc() {
	local want=$1; shift
	set +e; "$@" >"$T/out" 2>"$T/err"; local rc=$?; set -e
	[ "$rc" = "$want" ] || { cat "$T/out" "$T/err" >&2; fail "'$*' exited $rc, want $want"; }
}

# 1. 4500 records of 2000 bytes in 1 KiB blocks: one record per block, so
#    the default window (4096 records) needs 4096 reads at once, more than the
#    loop's 4096 slots less its timers. It failed at stream position 2752.
head -c 9000000 /dev/urandom >"$T/img.bin"
"$CLI" pack --from fixed:2000 "$T/img.bin" -o "$T/wide" --block-size 1KiB >/dev/null
expect_rc 0 "$CLI" read --digest "$T/wide"
grep -q '^records=4500 bytes=9000000 ' "$T/out" || fail "wide window: $(cat "$T/out")"
ref=$(cat "$T/out")
expect_rc 0 "$CLI" read --digest --depth 1 --threads 1 "$T/wide"
[ "$(cat "$T/out")" = "$ref" ] || fail "wide window: depth 1 read $(cat "$T/out"), not $ref"

# Runs a command; prints its peak RSS in KiB (the child's ru_maxrss).
peak_kib() {
	/usr/bin/python3 - "$T/out" "$T/err" "$@" <<'PYEOF'
import os, subprocess, sys
out, err, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
p = subprocess.Popen(cmd, stdout=open(out, "w"), stderr=open(err, "w"))
_, status, ru = os.wait4(p.pid, 0)
print(ru.ru_maxrss, os.waitstatus_to_exitcode(status))
PYEOF
}
sanitized=0
grep -q '^RF_SANITIZE:BOOL=ON' "${RF_BUILD_DIR:-/nonexistent}/CMakeCache.txt" 2>/dev/null && sanitized=1
budget_kib=65536
read -r base_kib rc < <(peak_kib "$CLI" read --digest --budget 4MiB --threads 1 --shuffle-window 16 "$T/wide")
[ "$rc" = 0 ] || { cat "$T/err" >&2; fail "baseline read exited $rc"; }
limit_kib=$((budget_kib + base_kib + 16384))
check_open_fails() { # name, then the command; must fail naming the budget, RSS bounded
	local name=$1; shift
	read -r kib rc < <(peak_kib "$@")
	echo "$name: peak RSS $kib KiB (limit $limit_kib KiB = budget + $base_kib + 16384)"
	[ "$rc" = 1 ] || { cat "$T/out" "$T/err" >&2; fail "$name: exited $rc, want 1"; }
	grep -q 'budget 64.0 MiB is too small for ' "$T/err" || { cat "$T/err" >&2; fail "$name: message"; }
	[ "$sanitized" = 1 ] || [ "$kib" -le "$limit_kib" ] || fail "$name: peak RSS $kib KiB over $limit_kib KiB"
}

# 2. one shard of 40,000 one-record blocks (1 MB index), listed 64 times: the
#    indexes alone need 82 MB. Before, 64 index buffers, 64 parsed indexes and
#    two plans of 2.6M units were allocated before the budget check (peak RSS
#    ~270 MB at --budget 64MiB).
head -c 40000 /dev/urandom >"$T/tiny.bin"
"$CLI" pack --from fixed:1 "$T/tiny.bin" -o "$T/many" --block-size 1 >/dev/null
line=$(tail -n 1 "$T/many/manifest.rfm")
{ echo '# ringfeed manifest v1'; for _ in $(seq 64); do echo "$line"; done; } >"$T/many/m64.rfm"
check_open_fails "64 listings" "$CLI" read --digest --budget 64MiB "$T/many/m64.rfm"
grep -q "shard .*shard-000000.rfs needs [0-9]* bytes at open for a read of 960028 bytes" "$T/err" ||
	{ cat "$T/err" >&2; fail "64 listings: the message names neither shard nor bytes"; }
# the same shard listed 8 times fits: the budget did not get smaller for it
expect_rc 0 "$CLI" read --digest --budget 64MiB "$T/many/manifest.rfm"

# 3. a footer declaring a 384 MiB index (a sparse file of that size): before,
#    the index buffer was allocated and read (~395 MiB) before anything checked
#    the budget.
/usr/bin/python3 - "$T/huge.rfs" <<'PYEOF'
import struct, sys
def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF
index_bytes = 384 << 20
f = b"RFSHARD1" + struct.pack("<IIQQI", 1, 0, 0, index_bytes, 0)
f += struct.pack("<I", crc32c(f))
with open(sys.argv[1], "wb") as out:
    out.truncate(index_bytes)
    out.seek(index_bytes)
    out.write(f)
PYEOF
check_open_fails "384 MiB index" "$CLI" read --digest --budget 64MiB "$T/huge.rfs"
grep -q "shard .*huge.rfs needs [0-9]* bytes at open for a read of 402653184 bytes" "$T/err" ||
	{ cat "$T/err" >&2; fail "384 MiB index: the message names neither shard nor bytes"; }

# 4. 10,000 one-record blocks: a window that a batch of 64 straddles (5000,
#    6000) makes the collator wait for two windows at once, 10,000+ units,
#    and a window over the whole epoch (20000) is 10,000 units: more than the
#    unit ring's 8192 slots. The scheduler stopped at the ring's end while
#    the collator waited for the window's last units: the read hung (timeout
#    only guards against that hang). The same records come out, each once.
head -c 1000000 /dev/urandom >"$T/w10k.bin"
"$CLI" pack --from fixed:100 "$T/w10k.bin" -o "$T/w10k" --block-size 64 >/dev/null
records_of() { # raw read output -> its records, sorted, as hex lines
	/usr/bin/python3 -c '
import struct, sys
d = open(sys.argv[1], "rb").read(); i = 0; out = []
while i < len(d):
    n = struct.unpack_from("<I", d, i)[0]; out.append(d[i + 4:i + 4 + n].hex()); i += 4 + n
print("\n".join(sorted(out)))' "$1"
}
expect_rc 0 timeout 120 "$CLI" read --output raw --shuffle 0 "$T/w10k"
records_of "$T/out" >"$T/w10k.want"
[ "$(wc -l <"$T/w10k.want")" = 10000 ] || fail "10k blocks: $(wc -l <"$T/w10k.want") records unshuffled"
for w in 5000 6000 20000; do
	expect_rc 0 timeout 120 "$CLI" read --output raw --shuffle-window "$w" "$T/w10k"
	records_of "$T/out" | cmp -s - "$T/w10k.want" || fail "10k blocks, window $w: other records"
done
expect_rc 0 timeout 120 "$CLI" read --digest --shuffle-window 5000 "$T/w10k"
ref=$(cat "$T/out")
expect_rc 0 timeout 120 "$CLI" read --digest --shuffle-window 5000 --threads 1 --depth 1 "$T/w10k"
[ "$(cat "$T/out")" = "$ref" ] || fail "10k blocks: threads 1 read $(cat "$T/out"), not $ref"
: >"$T/w10k.ranks"
for r in 0 1; do
	expect_rc 0 timeout 120 "$CLI" read --output raw --shuffle-window 5000 --world 2 --rank "$r" \
		"$T/w10k"
	cat "$T/out" >>"$T/w10k.ranks"
done
records_of "$T/w10k.ranks" | cmp -s - "$T/w10k.want" || fail "10k blocks, world 2: other records"

# 6. a tar without an index, at a budget below its header scan's read: the
#    refusal says what the open reads (the shard itself: a header scan), not
#    "its 4194304-byte index" (it has none).
/usr/bin/python3 - "$T/tars" <<'PYEOF'
import io, os, sys, tarfile
os.makedirs(sys.argv[1])
with tarfile.open(f"{sys.argv[1]}/s.tar", "w") as t:
    for i in range(20):
        d = os.urandom(300000); ti = tarfile.TarInfo("%06d.bin" % i); ti.size = len(d)
        t.addfile(ti, io.BytesIO(d))
PYEOF
rc=0
"$CLI" read --digest --index-cache off --budget 1MiB "$T/tars" >"$T/out" 2>"$T/err" || rc=$?
[ "$rc" = 1 ] || fail "tar at 1 MiB: exited $rc, want 1"
grep -q "of the shard itself (its footer and index, or a tar's header scan)" "$T/err" &&
	! grep -q "byte index" "$T/err" || { cat "$T/err" >&2; fail "tar at 1 MiB: the message"; }

echo "cli_limits: ok"
