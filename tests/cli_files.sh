#!/usr/bin/env bash
# cli_files.sh - what a local name can be, and what a manifest says of its
# shards: a FIFO never hangs a command (each is run under `timeout`; a hang
# is a test failure), a manifest's FILE_BYTES and RECORDS are checked by read
# and verify alike naming the line (2^64-1 is no "unknown size"), an empty
# manifest verifies nothing (an error), a file that is no shard says so
# without re-reads, and verify takes every name read takes (directories,
# brace ranges), reading a directory's manifest.rfm when it has one.
set -euo pipefail
CLI=${RF_CLI:?set RF_CLI to the ringfeed binary}
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-files-XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# expect_rc RC CMD...: runs CMD under a 20 s timeout, keeps stdout+stderr in $T/out
expect_rc() {
	local want=$1; shift
	set +e; timeout 20 "$@" >"$T/out" 2>&1 </dev/null; local rc=$?; set -e
	[ "$rc" != 124 ] || fail "'$*' hung (killed after 20 s)"
	[ "$rc" = "$want" ] || { cat "$T/out" >&2; fail "'$*' exited $rc, want $want"; }
}
expect_out() { grep -q -- "$1" "$T/out" || { cat "$T/out" >&2; fail "output lacks '$1'"; }; }
lacks_out() { ! grep -q -- "$1" "$T/out" || { cat "$T/out" >&2; fail "output has '$1'"; }; }

head -c 300000 /dev/urandom > "$T/in.bin"
expect_rc 0 "$CLI" pack --from fixed:100 "$T/in.bin" -o "$T/ds" --block-size 4KiB --shard-size 64KiB
n=$(ls "$T/ds"/shard-*.rfs | wc -l)
[ "$n" -ge 2 ] || fail "want several shards, got $n"

# --- a FIFO: refused promptly, named, by every command (never opened blocking)
mkdir "$T/f"
mkfifo "$T/f/p.rfs"
printf '# ringfeed manifest v1\np.rfs\t1000\t10\n' > "$T/f/m.rfm"
for cmd in "read --digest $T/f/m.rfm" "read $T/f/p.rfs" "read $T/f" \
	"verify $T/f/m.rfm" "verify $T/f/p.rfs" "verify $T/f" "inspect $T/f/p.rfs" \
	"bench $T/f/m.rfm"; do
	# shellcheck disable=SC2086
	expect_rc 1 "$CLI" $cmd
	expect_out "p.rfs"
	expect_out "FIFO\|not a regular file"
done
mkfifo "$T/f/fifo.rfm"
expect_rc 1 "$CLI" read "$T/f/fifo.rfm"
expect_out "fifo.rfm"
echo "ok: a FIFO is refused by read, verify, inspect and bench, named"

# --- the manifest's RECORDS and FILE_BYTES are checked by read (and verify), naming the line
s0=$(basename "$(ls "$T/ds"/shard-*.rfs | head -1)")
awk -F'\t' -v OFS='\t' 'NR == 3 { $3 = $3 + 1 } { print }' "$T/ds/manifest.rfm" > "$T/ds/records.rfm"
line2=$(sed -n 3p "$T/ds/manifest.rfm" | cut -f1)
expect_rc 1 "$CLI" read --digest "$T/ds/records.rfm"
expect_out "$line2: holds [0-9]* records, the manifest says"
expect_out "records.rfm line 3"
expect_rc 1 "$CLI" verify "$T/ds/records.rfm"
expect_out "records.rfm line 3"
expect_out "DAMAGED $T/ds/$line2"
awk -F'\t' -v OFS='\t' 'NR == 2 { $2 = "18446744073709551615" } NR <= 2 { print }' "$T/ds/manifest.rfm" > "$T/ds/bytes.rfm"
expect_rc 1 "$CLI" read --digest "$T/ds/bytes.rfm"
expect_out "$s0: file is [0-9]* bytes, the manifest says 18446744073709551615"
expect_out "bytes.rfm line 2"
expect_rc 1 "$CLI" verify "$T/ds/bytes.rfm"
expect_out "the manifest says 18446744073709551615"
awk -F'\t' -v OFS='\t' 'NR == 2 { $2 = $2 + 1 } { print }' "$T/ds/manifest.rfm" > "$T/ds/size.rfm"
expect_rc 1 "$CLI" read --digest "$T/ds/size.rfm"
expect_out "size.rfm line 2"
expect_rc 0 "$CLI" read --digest "$T/ds/manifest.rfm"
echo "ok: a manifest that disagrees with its shard is an error naming the line"

# --- a manifest listing no shards: nothing verified is no success
printf '# ringfeed manifest v1\n# nothing here\n' > "$T/empty.rfm"
expect_rc 1 "$CLI" verify "$T/empty.rfm"
expect_out "lists no shards"
expect_rc 1 "$CLI" read "$T/empty.rfm"
echo "ok: verify of an empty manifest fails"

# --- a file that is not a shard: said so, and no re-reads of a local file
head -c 5000 /dev/urandom > "$T/junk.rfs"
expect_rc 1 "$CLI" read "$T/junk.rfs"
expect_out "junk.rfs: footer at byte 4960: bad magic: not an .rfs shard"
lacks_out "re-reads"
expect_rc 1 "$CLI" verify "$T/junk.rfs"
expect_out "not an .rfs shard"
echo "ok: a file that is no shard is named as such, without re-reads"

# --- verify takes what read takes: a directory (its manifest), brace ranges
cp "$T/ds/$s0" "$T/ds/zz-stale.rfs" # not in the manifest: neither read nor verified
expect_rc 0 "$CLI" verify "$T/ds/"
expect_out "verify: $n shards, 0 damaged"
lacks_out "zz-stale"
last=$(printf '%06d' $((n - 1)))
expect_rc 0 "$CLI" verify "$T/ds/shard-{000000..$last}.rfs"
expect_out "verify: $n shards, 0 damaged"
expect_rc 0 "$CLI" read --digest "$T/ds"
expect_out "records=3000 "
mkdir "$T/plain"
cp "$T/ds/$s0" "$T/plain/"
expect_rc 0 "$CLI" verify "$T/plain"
expect_out "ok $T/plain/$s0"
echo "ok: verify takes directories and brace ranges; a directory's manifest decides"
echo "cli_files: all checks passed"
