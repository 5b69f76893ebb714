#!/usr/bin/env bash
# cli_pack.sh - ringfeed pack / inspect / verify end to end: the three input
# kinds, inspect --json figures against the input, byte-identical repacks,
# verify on sound and damaged shards (naming the block), bad flags (exit 2).
set -euo pipefail
CLI=${RF_CLI:?set RF_CLI to the ringfeed binary}
PY=/usr/bin/python3
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-pack-XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# expect_rc RC CMD...: runs CMD, keeps stdout+stderr in $T/out, checks the status
expect_rc() {
	local want=$1; shift
	set +e; "$@" >"$T/out" 2>&1; local rc=$?; set -e
	[ "$rc" = "$want" ] || { cat "$T/out" >&2; fail "'$*' exited $rc, want $want"; }
}
expect_out() { grep -q -- "$1" "$T/out" || { cat "$T/out" >&2; fail "output lacks '$1'"; }; }
json() { "$CLI" inspect --json "$1" | $PY -c "import json,sys; print(json.load(sys.stdin)['$2'])"; }

# --- lines: empty lines kept, last line without a newline kept
$PY - "$T/lines.txt" <<'PYEOF'
import random, sys
random.seed(7)
abc = "abcdefghijklmnopqrstuvwxyz0123456789 "
lines = ["".join(random.choices(abc, k=random.randint(0, 300))) if i % 17 else ""
         for i in range(20000)]
open(sys.argv[1], "w").write("\n".join(lines))   # no trailing newline
PYEOF
expect_rc 0 "$CLI" pack --from lines "$T/lines.txt" -o "$T/l" --block-size 16KiB --shard-size 128KiB
expect_out "packed 20000 records"
n=$(grep -c . <(tail -n +2 "$T/l/manifest.rfm"))
[ "$n" -gt 1 ] || fail "expected several shards, got $n"
sum=$(tail -n +2 "$T/l/manifest.rfm" | awk -F'\t' '{s+=$3} END {print s}')
[ "$sum" = 20000 ] || fail "manifest counts $sum records, want 20000"
head -1 "$T/l/manifest.rfm" | grep -qx '# ringfeed manifest v1' || fail "manifest magic"

# inspect --json against the input and the file
s0="$T/l/shard-000000.rfs"
rec=$(json "$s0" records); blocks=$(json "$s0" blocks)
comp=$(json "$s0" compressed_bytes); dec=$(json "$s0" decoded_bytes)
lbd=$(json "$s0" largest_block_decoded_bytes); lr=$(json "$s0" largest_record_bytes)
man=$(sed -n 2p "$T/l/manifest.rfm")
[ "$rec" = "$(cut -f3 <<<"$man")" ] || fail "inspect records $rec != manifest"
[ "$(stat -c %s "$s0")" = "$(cut -f2 <<<"$man")" ] || fail "manifest size"
payload=$($PY -c "import sys; ls=open('$T/lines.txt').read().split('\n')[:$rec]; print(sum(map(len,ls)), max(map(len,ls)))")
[ "$dec" = $(( ${payload% *} + 4 * rec + 4 * blocks )) ] || fail "decoded_bytes $dec vs payload $payload"
[ "$lr" = "${payload#* }" ] || fail "largest_record_bytes $lr, want ${payload#* }"
[ "$lbd" -le 16384 ] || fail "largest block $lbd exceeds the 16KiB target"
[ "$comp" -lt "$(stat -c %s "$s0")" ] || fail "compressed_bytes $comp"
"$CLI" inspect "$s0" | grep -q "^records  *$rec$" || fail "inspect text"

# same input => byte-identical shards
expect_rc 0 "$CLI" pack --from lines "$T/lines.txt" -o "$T/l2" --block-size 16KiB --shard-size 128KiB
for f in "$T"/l/*; do cmp "$f" "$T/l2/$(basename "$f")" || fail "repack differs: $f"; done

# verify: sound shards, a manifest in place of the list
expect_rc 0 "$CLI" verify "$T"/l/*.rfs
expect_out "verify: $n shards, 0 damaged"
expect_rc 0 "$CLI" verify "$T/l/manifest.rfm"
expect_out "ok $T/l/shard-000000.rfs"

# --- damage: a byte in the middle of blocks 1 and 2 of a copy; verify names both
cp "$s0" "$T/bad.rfs"
read -r o1 c1 o2 c2 < <($PY - "$T/bad.rfs" <<'PYEOF'
import struct, sys
b = open(sys.argv[1], "rb").read()
io, ib = struct.unpack("<QQ", b[-24:-8])
meta = struct.unpack("<I", b[io + 24:io + 28])[0]
e = [struct.unpack("<QI", b[io + 28 + meta + 24 * i:io + 28 + meta + 24 * i + 12]) for i in (1, 2)]
print(e[0][0], e[0][1], e[1][0], e[1][1])
PYEOF
)
for at in $((o1 + c1 / 2)) $((o2 + c2 / 2)); do
	printf '\x5a' | dd of="$T/bad.rfs" bs=1 seek="$at" conv=notrunc status=none
done
expect_rc 1 "$CLI" verify "$s0" "$T/bad.rfs"
expect_out "block 1 at byte $o1"
expect_out "block 2 at byte $o2"
expect_out "DAMAGED $T/bad.rfs"
expect_out "ok $s0"
expect_out "verify: 2 shards, 1 damaged"
# truncated: the footer check names the offset
head -c 1000 "$s0" > "$T/trunc.rfs"
expect_rc 1 "$CLI" verify "$T/trunc.rfs"
expect_out "trunc.rfs: footer at byte 960"
expect_rc 1 "$CLI" inspect "$T/trunc.rfs"
expect_out "bad magic"
# a manifest whose record count disagrees with the shard
sed '2s/\t[0-9]*$/\t1/' "$T/l/manifest.rfm" > "$T/l/wrong.rfm"
expect_rc 1 "$CLI" verify "$T/l/wrong.rfm"
expect_out "the manifest says 1"

# --- fixed:N: a short tail is an error unless --allow-short
head -c 10007 /dev/urandom > "$T/fixed.bin"
expect_rc 1 "$CLI" pack --from fixed:100 "$T/fixed.bin" -o "$T/f"
expect_out "short tail of 7 bytes at byte 10000"
[ ! -e "$T/f/shard-000000.rfs" ] || fail "a failed pack left a shard behind"
expect_rc 0 "$CLI" pack --from fixed:100 "$T/fixed.bin" -o "$T/f" --allow-short --level 1
expect_out "packed 101 records, 10007 bytes"
[ "$(json "$T/f/shard-000000.rfs" largest_record_bytes)" = 100 ] || fail "fixed largest record"
expect_rc 0 "$CLI" pack --from fixed:1KiB "$T/fixed.bin" -o "$T/f2" --allow-short
expect_out "packed 10 records"

# --- files: nested, sorted, empty files kept, non-regular entries named
mkdir -p "$T/files/b/c" "$T/files/a"
printf 'one' > "$T/files/a/1"; : > "$T/files/b/empty"; printf 'deep' > "$T/files/b/c/x"
head -c 300000 /dev/urandom > "$T/files/big"   # larger than the block: its own block
ln -s a/1 "$T/files/link"
expect_rc 0 "$CLI" pack --from files "$T/files" -o "$T/fd" --block-size 64KiB
expect_out "packed 4 records, 300007 bytes"
expect_out "skipped 1 entries"
[ "$(json "$T/fd/shard-000000.rfs" largest_block_decoded_bytes)" = $((300000 + 8)) ] \
	|| fail "a record larger than the block target should sit alone in its block"
expect_rc 0 "$CLI" verify "$T/fd/manifest.rfm"

# --- an empty input is a valid, empty dataset
: > "$T/empty.txt"
expect_rc 0 "$CLI" pack --from lines "$T/empty.txt" -o "$T/e"
[ "$(wc -l < "$T/e/manifest.rfm")" = 1 ] || fail "empty input should list no shards"

# --- demo: deterministic, cached behind its marker
expect_rc 0 "$CLI" pack --demo -o "$T/demo" --demo-bytes 3MiB --demo-shards 3
expect_out "demo dataset ready"
[ "$(grep -c rfs "$T/demo/manifest.rfm")" = 3 ] || fail "demo shards"
expect_rc 0 "$CLI" pack --demo -o "$T/demo" --demo-bytes 3MiB --demo-shards 3
expect_out "(cached)"
expect_rc 0 "$CLI" verify --quiet "$T/demo/manifest.rfm"
expect_rc 0 "$CLI" pack --demo -o "$T/demo2" --demo-bytes 3MiB --demo-shards 3
for f in "$T"/demo/*.rfs; do cmp "$f" "$T/demo2/$(basename "$f")" || fail "demo differs: $f"; done
tot=$(for f in "$T"/demo/*.rfs; do json "$f" payload_bytes; done | awk '{s+=$1} END {print s}')
[ "$tot" = $((3 * 1024 * 1024)) ] || fail "demo payload $tot, want 3MiB"

# a repack into the same directory is refused (two packs never mix; the
# earlier note "are left from an earlier pack" is now a refusal naming it)
expect_rc 1 "$CLI" pack --from lines "$T/lines.txt" -o "$T/l2" --block-size 16KiB
expect_out "earlier pack"
expect_rc 2 "$CLI" inspect "$T/l/manifest.rfm"
expect_out "is a manifest"

# --- bad flags: clear message, exit 2
expect_rc 2 "$CLI" pack --from lines "$T/lines.txt" -o "$T/x" --block-size 12XB
expect_out "--block-size: bad size unit in '12XB'"
expect_rc 2 "$CLI" pack --from lines "$T/lines.txt" -o "$T/x" --level abc
expect_out "--level 'abc'"
expect_rc 2 "$CLI" pack --from lines "$T/lines.txt" -o "$T/x" --block-size 1GiB
expect_out "block-size must be"
expect_rc 2 "$CLI" pack --from bogus "$T/lines.txt" -o "$T/x"
expect_out "expected lines, files or fixed:N"
expect_rc 2 "$CLI" pack --from fixed:0 "$T/lines.txt" -o "$T/x"
expect_rc 2 "$CLI" pack --from lines "$T/lines.txt"
expect_out "-o DIR is required"
expect_rc 2 "$CLI" pack --from lines -o "$T/x"
expect_out "exactly one input"
expect_rc 2 "$CLI" pack --bogus
expect_out "unknown option '--bogus'"
expect_rc 2 "$CLI" pack --demo -o "$T/x" --demo-shards 0
# an option of the other mode is refused, not ignored (--demo --block-size
# 16KiB made the demo's 1 MiB blocks)
expect_rc 2 "$CLI" pack --demo -o "$T/x" --demo-bytes 64KiB --block-size 16KiB
expect_out "--block-size does not apply to --demo"
expect_rc 2 "$CLI" pack --demo -o "$T/x" --clean
expect_out "--clean does not apply to --demo"
expect_rc 2 "$CLI" pack --from lines "$T/lines.txt" -o "$T/x" --demo-shards 3
expect_out "--demo-shards applies only to --demo"
[ ! -e "$T/x" ] || fail "a refused pack wrote $T/x"
expect_rc 2 "$CLI" inspect
expect_rc 2 "$CLI" inspect --bogus "$s0"
expect_rc 2 "$CLI" verify
expect_rc 2 "$CLI" verify --max-reports x "$s0"
expect_rc 1 "$CLI" verify "$T/nonexistent.rfs"
expect_out "nonexistent.rfs: cannot open"
expect_rc 1 "$CLI" pack --from lines "$T/nonexistent.txt" -o "$T/x"
expect_out "nonexistent.txt: cannot open"
expect_rc 0 "$CLI" pack --help
expect_out "usage: ringfeed pack"
echo "cli_pack: all checks passed"
