#!/usr/bin/env bash
# cli_pack_dir.sh - one pack per directory, and one ratio: pack refuses a
# directory holding an earlier pack (or .rfs files it did not write) unless
# --clean, which removes the earlier pack first, so `read DIR` never mixes
# two packs; `read DIR` reads DIR/manifest.rfm when there is one (an extra
# shard copied in is not read); pack's ratio and inspect's are one figure
# (payload bytes / file bytes).
set -euo pipefail
CLI=${RF_CLI:?set RF_CLI to the ringfeed binary}
PY=/usr/bin/python3
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-pack-dir-XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_rc() {
	local want=$1; shift
	set +e; timeout 60 "$@" >"$T/out" 2>&1; local rc=$?; set -e
	[ "$rc" = "$want" ] || { cat "$T/out" >&2; fail "'$*' exited $rc, want $want"; }
}
expect_out() { grep -q -- "$1" "$T/out" || { cat "$T/out" >&2; fail "output lacks '$1'"; }; }
records() { "$CLI" read --digest "$1" | sed -n 's/^records=\([0-9]*\) .*/\1/p'; }

head -c 600000 /dev/urandom > "$T/big.bin"
head -c 200000 /dev/urandom > "$T/small.bin"
PK=(pack --from fixed:100 --block-size 8KiB --shard-size 64KiB -o "$T/ds")
expect_rc 0 "$CLI" "${PK[@]}" "$T/big.bin"
big=$(ls "$T/ds"/*.rfs | wc -l)
[ "$(records "$T/ds")" = 6000 ] || fail "first pack: records"

# a smaller pack into the same directory: refused, the earlier pack untouched
expect_rc 1 "$CLI" "${PK[@]}" "$T/small.bin"
expect_out "already holds an earlier pack"
expect_out "\-\-clean"
[ "$(ls "$T/ds"/*.rfs | wc -l)" = "$big" ] || fail "a refused pack changed the directory"
[ "$(records "$T/ds/")" = 6000 ] || fail "a refused pack changed what read DIR reads"
# --clean: the earlier pack is gone as a whole, read DIR reads the new one only
expect_rc 0 "$CLI" "${PK[@]}" "$T/small.bin" --clean
small=$(ls "$T/ds"/*.rfs | wc -l)
[ "$small" -lt "$big" ] || fail "want fewer shards ($small vs $big)"
[ "$small" = "$(grep -c '\.rfs' "$T/ds/manifest.rfm")" ] || fail "stale shards left behind"
[ "$(records "$T/ds/")" = 2000 ] || fail "read DIR after --clean: $(records "$T/ds/")"
echo "ok: pack refuses an earlier pack's directory; --clean replaces it whole"

# .rfs files pack did not write are never removed, even with --clean
cp "$T/ds/shard-000000.rfs" "$T/ds/mine.rfs"
expect_rc 1 "$CLI" "${PK[@]}" "$T/small.bin" --clean
expect_out "mine.rfs"
[ -e "$T/ds/manifest.rfm" ] && [ -e "$T/ds/mine.rfs" ] || fail "--clean removed files on a refusal"
# read DIR reads the manifest: the extra shard is not read
[ "$(records "$T/ds")" = 2000 ] || fail "read DIR read a shard its manifest does not list"
rm "$T/ds/manifest.rfm"
[ "$(records "$T/ds")" -gt 2000 ] || fail "without a manifest, read DIR reads every .rfs"
echo "ok: foreign shards refused; read DIR reads DIR/manifest.rfm when there is one"

# one ratio: pack's summary and inspect's (text and JSON) for one shard
expect_rc 0 "$CLI" pack --from fixed:100 "$T/small.bin" -o "$T/one" --block-size 8KiB
pr=$(sed -n 's/.*(ratio \([0-9.]*\)).*/\1/p' "$T/out")
ir=$("$CLI" inspect "$T/one/shard-000000.rfs" | sed -n 's/^ratio *\([0-9.]*\).*/\1/p')
jr=$("$CLI" inspect --json "$T/one/shard-000000.rfs" | $PY -c \
	'import json,sys; j=json.load(sys.stdin); print("%.3f" % j["ratio"], "%.3f" % (j["payload_bytes"] / j["file_bytes"]))')
[ -n "$pr" ] && [ "$pr" = "$ir" ] || fail "pack says ratio '$pr', inspect '$ir'"
[ "$jr" = "$pr $pr" ] || fail "inspect --json ratio/definition '$jr', pack '$pr'"
echo "ok: pack and inspect print one ratio ($pr = payload / file bytes)"
echo "cli_pack_dir: all checks passed"
