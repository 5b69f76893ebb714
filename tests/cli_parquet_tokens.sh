#!/usr/bin/env bash
# cli_parquet_tokens.sh - pre-tokenized Parquet read with --seq-len L (issue
# 28): a list<int32> column written by DuckDB (nulls, empty lists, 5 row
# groups, two read units), list<int64>, arrow-rs's data pages v2 with
# dictionaries and 700-row groups, and an optional INT32 column of one token
# a row (tests/parquet_tokens.mjs). With --no-shuffle, window i is tokens
# [i L, i L + L + 1) of DuckDB's lists concatenated in row order, for L from
# 33 to past the file's tokens, widened to int64 on request; shuffled windows
# do not depend on the threads; ranks are equal and disjoint; resume is
# exact; a file whose token column is not named, or is not one, is refused.
set -euo pipefail
CLI=${RF_CLI:?set RF_CLI to the ringfeed binary}
SRC=${RF_SOURCE_DIR:?}
PY=/usr/bin/python3
NPM=$SRC/.cache/npm/node_modules
if [ ! -d "$NPM/parquet-wasm" ] || [ ! -d "$NPM/@duckdb/node-api" ]; then
	echo "SKIP: the reference writers are not installed (scripts/deps.sh --test)"
	exit 77
fi
$PY -c 'import numpy' 2>/dev/null || {
	echo "SKIP: numpy missing for $PY (apt-get install python3-numpy)"
	exit 77
}
. "$SRC/tests/check.inc.sh"
C="$PY $SRC/tests/tokens/check_tokens.py"
check() { # DESCRIPTION CHECK-ARGS...
	local d=$1 out
	shift
	if out=$($C "$@"); then ok "$d: $out"; else bad "$d: $out"; fi
}
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-parquet-tokens-XXXXXX")
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/gen" "$T/d"
cp "$SRC/tests/parquet_tokens.mjs" "$T/gen/"
ln -s "$NPM" "$T/gen/node_modules"
node "$T/gen/parquet_tokens.mjs" "$T/d" >/dev/null
rd() { "$CLI" read --output raw "$@"; }
tok=$T/d/tok.parquet

# ---- windows equal DuckDB's lists concatenated in row order -------------------
for L in 33 100 1000000 3000000; do
	rd --no-shuffle --seq-len $L --columns input_ids "$tok" >"$T/w$L" || bad "read --seq-len $L"
	check "list<int32> L=$L" windows "$T/d/tok.tokens" $L "$T/w$L" - int32
done
rd --no-shuffle --seq-len 100 --columns input_ids --token-out int64 "$tok" >"$T/w100x"
check "list<int32> widened to int64" windows "$T/d/tok.tokens" 100 "$T/w100x" int64 int32
rd --no-shuffle --seq-len 64 "$T/d/tok64.parquet" >"$T/w64"
check "list<int64> (the only column)" windows "$T/d/tok64.tokens" 64 "$T/w64" - int64
rd --no-shuffle --seq-len 128 --columns input_ids "$T/d/tok_arrow.parquet" >"$T/wa"
check "arrow-rs v2 pages, dictionaries, gzip" windows "$T/d/tok_arrow.tokens" 128 "$T/wa" - int32
rd --no-shuffle --seq-len 10 --columns tok "$T/d/flat.parquet" >"$T/wf"
check "an optional INT32 column, one token a row" windows "$T/d/flat.tokens" 10 "$T/wf" - int32
out=$("$CLI" inspect --seq-len 64 "$T/d/tok64.parquet")
case "$out" in *"records           5730 windows of 65 tokens (int64)"*) ok "inspect: the windows" ;;
*) bad "inspect --seq-len: $out" ;; esac
out=$("$CLI" verify --seq-len 100 --columns input_ids "$tok" 2>&1) && ok "verify its windows" ||
	bad "verify --seq-len: $out"

# ---- a directory: each file windowed on its own --------------------------------
mkdir "$T/two" && cp "$tok" "$T/d/tok_arrow.parquet" "$T/two/"
got=$("$CLI" read --digest --seq-len 100 --columns input_ids "$T/two" | tail -n 1 | cut -d' ' -f1)
same "a directory of two files: their windows" "records=$((24416 + 7327))" "$got"

# ---- shuffled: the same windows in an order the threads do not change ----------
rd --seed 3 --seq-len 100 --columns input_ids --threads 1 "$tok" >"$T/s1"
rd --seed 3 --seq-len 100 --columns input_ids --threads 4 --depth 3 "$tok" >"$T/s4"
cmp -s "$T/s1" "$T/s4" && ok "threads do not change the shuffled order" ||
	bad "threads change the shuffled order"
check "shuffled: the same windows" same-multiset "$T/w100" "$T/s1"

# ---- ranks equal and disjoint; resume after each batch exact --------------------
for r in 0 1 2; do
	rd --seed 5 --seq-len 100 --columns input_ids --world 3 --rank $r "$tok" >"$T/r$r"
done
check "3 ranks" disjoint-union "$T/w100" "$T/r0" "$T/r1" "$T/r2"
full=$(rd --seed 1 --seq-len 1000 --columns input_ids --batch 500 "$tok" | sha256sum)
resumed=0
for k in 1 3; do
	rd --seed 1 --seq-len 1000 --columns input_ids --batch 500 --stop-after $k \
		--save-state "$T/st" "$tok" >"$T/a"
	rd --seed 1 --seq-len 1000 --columns input_ids --batch 500 --resume "$T/st" "$tok" >"$T/b"
	[ "$(cat "$T/a" "$T/b" | sha256sum)" = "$full" ] && resumed=$((resumed + 1))
done
same "resume after batches 1 and 3 is exact" 2 $resumed

# ---- refusals name the file and the column ----------------------------------------
out=$("$CLI" read --digest --seq-len 100 "$tok" 2>&1) && bad "two list columns accepted: $out" ||
	case "$out" in *"tok.parquet: seq_len needs the token column named"*) ok "two list columns: $out" ;;
	*) bad "two list columns: $out" ;; esac
out=$("$CLI" read --digest --seq-len 100 --columns text "$tok" 2>&1) && bad "a text column accepted" ||
	case "$out" in *'column "text" holds no tokens'*) ok "a text column refused" ;;
	*) bad "a text column: $out" ;; esac
out=$("$CLI" read --digest --seq-len 100 --columns input_ids --token-out int32 "$T/d/tok64.parquet" 2>&1) &&
	bad "int64 narrowed to int32" || ok "int64 tokens are not narrowed: $out"

# ---- Python: one [B, L + 1] array of windows a batch ------------------------------
build=${RF_BUILD_DIR:-}
if [ -n "$build" ] && [ -e "$build/libringfeed.so" ] &&
	! grep -q '^RF_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
	RINGFEED_LIBRARY=$build/libringfeed.so PYTHONPATH=$SRC/python $PY - "$tok" "$T/d/tok.tokens" \
		<<'PYEOF' && ok "Python: windows as [B, 101] int64 arrays" || bad "Python windows"
import sys
import numpy as np
import ringfeed
toks = np.fromfile(sys.argv[2], "<i4").astype(np.int64)
n = 0
with ringfeed.Loader(sys.argv[1], batch=64, budget="256MiB", shuffle=False, seq_len=100,
                     columns="input_ids", token_out="int64") as L:
    for b in L:
        w = b.tokens()
        assert w.dtype == np.int64 and w.shape[1] == 101, (w.dtype, w.shape)
        for j in range(w.shape[0]):
            assert (w[j] == toks[(n + j) * 100:(n + j) * 100 + 101]).all(), n + j
        n += w.shape[0]
assert n == (toks.size - 1) // 100, n
PYEOF
else
	echo "skip Python windows (no plain build's libringfeed.so)"
fi
rf_checks_done cli_parquet_tokens
