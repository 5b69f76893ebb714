#!/usr/bin/env bash
# cli_tokens.sh - token files read natively, end to end through the loader:
# Megatron datasets written with numpy exactly as indexed_dataset.py writes
# them (uint16 and int32, several documents, one empty), an llm.c file and a
# nanoGPT file. Records are the documents; windows with --no-shuffle are
# tokens[i L : i L + L + 1] for every i; shuffled windows are the same
# multiset for every seed, in an order that threads / depth / budget do not
# change, resumed exactly after every batch; ranks are equal and disjoint;
# a lying .idx is an error naming the file and the entry.
set -euo pipefail
src=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
cli=${RF_CLI:?RF_CLI must name the ringfeed binary}
py=/usr/bin/python3
$py -c 'import numpy' 2>/dev/null || {
	echo "SKIP: numpy missing for $py (apt-get install python3-numpy)"
	exit 77
}
W="$py $src/tests/tokens/megatron_write.py"
C="$py $src/tests/tokens/check_tokens.py"

. "$src/tests/check.inc.sh"
check() { # DESCRIPTION CHECK-ARGS...
	local d=$1 out
	shift
	if out=$($C "$@"); then ok "$d: $out"; else bad "$d: $out"; fi
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-tokens.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
$W "$tmp/u16" uint16 1 60 3000 >/dev/null
$W "$tmp/i32" int32 2 25 2000 >/dev/null
rd() { "$cli" read --output raw "$@"; }

# ---- records are the documents (sequences), both dtypes, every name --------
for p in u16 i32; do
	rd --no-shuffle "$tmp/$p.idx" >"$tmp/$p.docs" || bad "read $p.idx"
	check "$p: records = documents" docs "$tmp/$p.idx" "$tmp/$p.docs"
	rd --no-shuffle "$tmp/$p.bin" >"$tmp/$p.docs.bin" || bad "read $p.bin"
	cmp -s "$tmp/$p.docs" "$tmp/$p.docs.bin" && ok "$p: PREFIX.bin reads as PREFIX.idx" ||
		bad "$p: PREFIX.bin differs from PREFIX.idx"
done
mkdir "$tmp/dir" && cp "$tmp"/u16.* "$tmp/dir/"
rd --no-shuffle "$tmp/dir" >"$tmp/dir.docs" || bad "read a directory"
cmp -s "$tmp/u16.docs" "$tmp/dir.docs" && ok "a directory takes the .idx once" ||
	bad "a directory read differs"

# a unit of empty sequences only (a dataset of one empty document; 70000 empty
# then one of 3 tokens: more than a unit's 65536 records) is read, not failed
$py - "$src/tests/tokens" "$tmp" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
import megatron_write as m
m.write(sys.argv[2] + "/one", "uint16", [[]])
m.write(sys.argv[2] + "/empties", "uint16", [[]] * 70000 + [[1, 2, 3]])
EOF
same "one empty document" "records=1 bytes=0" \
	"$("$cli" read --digest "$tmp/one.idx" | tail -n 1 | cut -d' ' -f1-2)"
same "70000 empty documents and one" "records=70001 bytes=6" \
	"$("$cli" read --digest "$tmp/empties.idx" | tail -n 1 | cut -d' ' -f1-2)"

# ---- windows: --no-shuffle gives tokens[iL : iL+L+1] for every i -------------
for L in 1 100 1024 5000; do
	rd --no-shuffle --seq-len $L "$tmp/u16.idx" >"$tmp/w$L" || bad "read --seq-len $L"
	check "u16 windows L=$L" windows "$tmp/u16.idx" $L "$tmp/w$L"
done
rd --no-shuffle --seq-len 64 "$tmp/i32.idx" >"$tmp/wi32"
check "i32 windows L=64" windows "$tmp/i32.idx" 64 "$tmp/wi32"
rd --no-shuffle --seq-len 100 --token-out int64 "$tmp/u16.idx" >"$tmp/w100x"
check "u16 windows widened to int64" windows "$tmp/u16.idx" 100 "$tmp/w100x" int64

# ---- shuffled windows ---------------------------------------------------------
for seed in 1 2 3; do
	rd --seed $seed --seq-len 100 --batch 16 "$tmp/u16.idx" >"$tmp/s$seed"
done
check "shuffled windows: the same multiset for seeds 1 2 3" same-multiset \
	"$tmp/w100" "$tmp/s1" "$tmp/s2" "$tmp/s3"
cmp -s "$tmp/s1" "$tmp/s2" && bad "seeds 1 and 2 give the same order" || ok "seeds differ"
dg() { "$cli" read --digest --seed 1 --seq-len 100 --batch 16 "$@" "$tmp/u16.idx" | tail -n 1; }
want=$(dg)
same "order independent of threads 1 / depth 1" "$want" "$(dg --threads 1 --depth 1)"
same "order independent of threads 4 / depth 8" "$want" "$(dg --threads 4 --depth 8)"
same "order independent of a small budget" "$want" "$(dg --budget 8MiB --threads 2)"

# ---- resume after every batch ----------------------------------------------------
batches=$("$cli" read --json --seed 1 --seq-len 1024 --batch 8 "$tmp/u16.idx" |
	$py -c 'import json,sys; print(json.load(sys.stdin)["batches"])')
rd --seed 1 --seq-len 1024 --batch 8 "$tmp/u16.idx" >"$tmp/full"
resumed=0
for ((k = 1; k < batches; k++)); do
	rd --seed 1 --seq-len 1024 --batch 8 --stop-after $k --save-state "$tmp/st" \
		"$tmp/u16.idx" >"$tmp/part1"
	rd --seed 1 --seq-len 1024 --batch 8 --resume "$tmp/st" "$tmp/u16.idx" >"$tmp/part2"
	cat "$tmp/part1" "$tmp/part2" | cmp -s - "$tmp/full" && resumed=$((resumed + 1)) ||
		bad "resume after batch $k differs"
done
same "resume after each of $((batches - 1)) batches is exact" $((batches - 1)) $resumed

# ---- ranks: equal, disjoint, the epoch less the tail; elastic -----------------
for r in 0 1 2; do
	rd --seed 5 --seq-len 100 --world 3 --rank $r "$tmp/u16.idx" >"$tmp/r$r"
done
check "3 ranks" disjoint-union "$tmp/w100" "$tmp/r0" "$tmp/r1" "$tmp/r2"
# 3 ranks take 3 batches each and save (rank 0's state); 2 ranks take the
# rest (lost: the epoch's windows % 3, then what is left % 2: at most 3)
for r in 0 1 2; do
	rd --seed 5 --seq-len 100 --world 3 --rank $r --batch 10 --stop-after 3 \
		--save-state "$tmp/el$r" "$tmp/u16.idx" >"$tmp/el$r.first"
done
for r in 0 1; do
	rd --seed 5 --seq-len 100 --world 2 --rank $r --batch 10 --resume "$tmp/el0" \
		"$tmp/u16.idx" >"$tmp/el$r.rest"
done
check "elastic 3 -> 2: each window once, none lost but the tail" disjoint-cover \
	"$tmp/w100" 3 "$tmp"/el?.first "$tmp"/el?.rest

# ---- budget: an in-place unit's bytes are reserved once (the read's buffer),
# its slab is only the record table; windows decode by copy (a slab each)
$W "$tmp/big" uint16 9 2000 3000 >/dev/null # ~6 MB: several 1 MiB units
peaks() {
	"$cli" read --no-shuffle --json --depth 1 --threads 1 "$@" "$tmp/big.idx" |
		$py -c 'import json,sys; p=json.load(sys.stdin)["loader"]["mem_peak_bytes"]; print(p["fetch"], p["decoded"])'
}
read -r fetch dec <<<"$(peaks)"
[ "$fetch" -ge 1000000 ] && [ "$dec" -lt 100000 ] &&
	ok "in place: fetch peak $fetch, decoded peak $dec (tables only)" ||
	bad "in place: fetch peak $fetch, decoded peak $dec (expected tables only)"
read -r fetch dec <<<"$(peaks --seq-len 1024)"
[ "$dec" -ge 1000000 ] && ok "windows: decoded by copy (decoded peak $dec)" ||
	bad "windows: decoded peak $dec"

# ---- llm.c and nanoGPT files -------------------------------------------------------
L="$py $src/tests/tokens/llmc_write.py"
$L llmc16 "$tmp/fw16.bin" 3 30 2000 >/dev/null
$L llmc32 "$tmp/fw32.bin" 4 30 2000 >/dev/null
$L raw16 "$tmp/owt.bin" 5 30 2000 >/dev/null
for f in fw16 fw32; do
	rd --no-shuffle --seq-len 256 "$tmp/$f.bin" >"$tmp/$f.w"
	check "llm.c $f windows" windows "$tmp/$f.bin" 256 "$tmp/$f.w"
done
rd --no-shuffle --eot-token 50256 "$tmp/fw16.bin" >"$tmp/fw16.d"
check "llm.c documents (EOT starts each)" docs "$tmp/fw16.bin" "$tmp/fw16.d" - 50256
rd --no-shuffle --token-dtype uint16 --eot-token 50256 "$tmp/owt.bin" >"$tmp/owt.d"
check "nanoGPT documents (EOT ends each)" docs "$tmp/owt.bin" "$tmp/owt.d" uint16 50256
rd --no-shuffle --token-dtype uint16 --seq-len 1024 "$tmp/owt.bin" >"$tmp/owt.w"
check "nanoGPT windows" windows "$tmp/owt.bin" 1024 "$tmp/owt.w" - uint16
rc=0
"$cli" read "$tmp/owt.bin" >/dev/null 2>"$tmp/err" || rc=$?
[ $rc -ne 0 ] && grep -q "owt.bin: not an llm.c token file" "$tmp/err" &&
	grep -q "token dtype" "$tmp/err" && ok "a headerless file without a dtype: clear error" ||
	bad "headerless without dtype: rc $rc, $(cat "$tmp/err")"

# ---- verify reads them as the loader does (the .idx beside, the options) -------
"$cli" verify "$tmp/u16.idx" >"$tmp/v" 2>&1 && grep -q "1 shards, 0 damaged" "$tmp/v" &&
	ok "verify a Megatron dataset" || bad "verify: $(cat "$tmp/v")"
"$cli" verify --seq-len 100 --token-out int64 "$tmp/u16.idx" >"$tmp/v" 2>&1 &&
	ok "verify its windows" || bad "verify --seq-len: $(cat "$tmp/v")"
"$cli" verify "$tmp/empties.idx" >"$tmp/v" 2>&1 && ok "verify units of empty sequences" ||
	bad "verify empties: $(cat "$tmp/v")"
cp "$tmp/u16.idx" "$tmp/short.idx" && head -c -2 "$tmp/u16.bin" >"$tmp/short.bin"
rc=0
"$cli" verify "$tmp/short.idx" >"$tmp/v" 2>&1 || rc=$?
[ $rc -ne 0 ] && grep -q "short.idx: sequence 59 ends at byte" "$tmp/v" &&
	ok "verify a truncated .bin: named with the sequence" || bad "verify short: rc $rc $(cat "$tmp/v")"

# ---- inspect and bench take them --------------------------------------------------
tokens=$($W "$tmp/insp" uint16 1 60 3000)
out=$("$cli" inspect "$tmp/insp.idx")
grep -q "^format *megatron" <<<"$out" && grep -q "^dtype *uint16" <<<"$out" &&
	grep -q "^tokens *$tokens\$" <<<"$out" && grep -q "^documents *60\$" <<<"$out" &&
	grep -q "^file bytes *$((tokens * 2))\$" <<<"$out" &&
	ok "inspect: format, dtype, tokens, documents, size" || bad "inspect: $out"
out=$("$cli" inspect --seq-len 100 --token-out int64 "$tmp/insp.bin")
grep -q "^records *$(((tokens - 1) / 100)) windows of 101 tokens (int64)" <<<"$out" &&
	ok "inspect --seq-len: the windows" || bad "inspect --seq-len: $out"
out=$("$cli" inspect --json --token-dtype uint16 --eot-token 50256 "$tmp/owt.bin")
$py -c 'import json,sys; d=json.loads(sys.argv[1]); m=json.loads(d["metadata"]);
assert d["format"] == "llmc" and m["dtype"] == "uint16" and m["documents"] == 30, d' "$out" &&
	ok "inspect --json: a nanoGPT file's documents" || bad "inspect --json: $out"
"$cli" bench --seq-len 1024 --token-out int64 "$tmp/u16.idx" >"$tmp/bench" 2>&1 &&
	grep -q "records" "$tmp/bench" && ok "bench reads windows" || bad "bench: $(cat "$tmp/bench")"

# ---- hostile .idx: truncated, lying -------------------------------------------------
cp "$tmp/u16.bin" "$tmp/bad.bin"
head -c -8 "$tmp/u16.idx" >"$tmp/bad.idx"
rc=0
"$cli" read "$tmp/bad.idx" >/dev/null 2>"$tmp/err" || rc=$?
[ $rc -ne 0 ] && grep -q "bad.idx: is [0-9]* bytes; its header (60 sequences" "$tmp/err" &&
	ok "truncated .idx: named, with what its header makes" || bad "truncated: $(cat "$tmp/err")"
$py - "$tmp/u16.idx" "$tmp/bad.idx" <<'EOF'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
S = struct.unpack_from("<Q", b, 18)[0]
struct.pack_into("<q", b, 34 + 4 * S + 8 * 7, 12)  # pointers[7] lies
open(sys.argv[2], "wb").write(b)
EOF
rc=0
"$cli" read "$tmp/bad.idx" >/dev/null 2>"$tmp/err" || rc=$?
[ $rc -ne 0 ] && grep -q "bad.idx: pointers\[7\] is 12, expected" "$tmp/err" &&
	ok "lying pointer: named with its entry" || bad "lying pointer: $(cat "$tmp/err")"

rf_checks_done
