#!/usr/bin/env bash
# cli_json.sh - every command a program might drive speaks JSON: pack, verify
# and read take --json (one object on stdout, agreeing with the text output);
# -q silences progress; progress on a terminal shows the percent done and the
# time left when the total is known (pack of a file, bench --batches N).
# Terminals come from script(1); pass/fail never rests on speed (bench's
# progress line is due after 0.5 s and its consumer sleeps longer than that).
set -euo pipefail
CLI=${RF_CLI:?set RF_CLI to the ringfeed binary}
PY=/usr/bin/python3
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-json-XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
jget() { $PY -c 'import json,sys; d=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."): d=d[int(k)] if k.isdigit() else d[k]
print(json.dumps(d) if isinstance(d,(dict,list,bool)) or d is None else d)' "$@"; }

seq 1 50000 | sed 's/^/record-/' >"$T/in.txt"
# pack --json
"$CLI" pack --json --from lines "$T/in.txt" -o "$T/ds" --block-size 8KiB --shard-size 64KiB \
	>"$T/pack.json" 2>"$T/pack.err" || fail "pack --json: $(cat "$T/pack.err")"
[ "$(jget "$T/pack.json" records)" = 50000 ] || fail "pack --json records: $(cat "$T/pack.json")"
shards=$(jget "$T/pack.json" shards)
[ "$shards" = "$(ls "$T"/ds/shard-*.rfs | wc -l)" ] || fail "pack --json shards $shards"
[ -f "$(jget "$T/pack.json" manifest)" ] || fail "pack --json manifest path"
$PY -c 'import json,sys; d=json.load(open(sys.argv[1])); r=d["payload_bytes"]/d["file_bytes"]
assert abs(d["ratio"]-r) < 1e-3, d' "$T/pack.json" || fail "pack --json ratio is not payload/file bytes"

# read --json: the same records, bytes and digest as --digest
want=$("$CLI" read --digest "$T/ds/manifest.rfm")
"$CLI" read --json --digest "$T/ds/manifest.rfm" >"$T/read.json" || fail "read --json"
got="records=$(jget "$T/read.json" records) bytes=$(jget "$T/read.json" bytes) digest=$(jget "$T/read.json" digest)"
[ "$got" = "$want" ] || fail "read --json says $got, --digest $want"
[ "$(jget "$T/read.json" loader.records)" = 50000 ] || fail "read --json loader stats"
[ "$(jget "$T/read.json" status)" = 0 ] && [ "$(jget "$T/read.json" error)" = null ] ||
	fail "read --json status: $(cat "$T/read.json")"
"$CLI" read --json --stop-after 3 "$T/ds/manifest.rfm" >"$T/stop.json"
[ "$(jget "$T/stop.json" batches)" = 3 ] && [ "$(jget "$T/stop.json" stopped_after)" = true ] ||
	fail "read --json --stop-after: $(cat "$T/stop.json")"
"$CLI" read --json --output lines "$T/ds/manifest.rfm" >/dev/null 2>&1 && fail "--json with --output lines"

# verify --json: a sound manifest, then a damaged shard beside a sound one
"$CLI" verify --json "$T/ds/manifest.rfm" >"$T/v.json" || fail "verify --json of a sound pack"
[ "$(jget "$T/v.json" shards)" = "$shards" ] && [ "$(jget "$T/v.json" damaged)" = 0 ] ||
	fail "verify --json: $(cat "$T/v.json")"
[ "$(jget "$T/v.json" results.0.ok)" = true ] || fail "verify --json result 0"
cp "$T/ds/shard-000000.rfs" "$T/bad.rfs"
printf 'XXXXXXXX' | dd of="$T/bad.rfs" bs=1 seek=64 conv=notrunc 2>/dev/null
rc=0; "$CLI" verify --json "$T/bad.rfs" "$T/ds/shard-000001.rfs" >"$T/v2.json" || rc=$?
[ "$rc" = 1 ] || fail "verify --json of a damaged shard: exit $rc"
[ "$(jget "$T/v2.json" damaged)" = 1 ] || fail "verify --json damaged: $(cat "$T/v2.json")"
[ "$(jget "$T/v2.json" results.0.ok)" = false ] && [ "$(jget "$T/v2.json" results.1.ok)" = true ] ||
	fail "verify --json results: $(cat "$T/v2.json")"
$PY -c 'import json,sys; d=json.load(open(sys.argv[1])); p=d["results"][0]["problems"]
assert p and "bad.rfs" in p[0] and "block" in p[0], p' "$T/v2.json" || fail "verify --json problems"
text=$("$CLI" verify "$T/bad.rfs" "$T/ds/shard-000001.rfs" || true)
n=$(grep -c '^  ' <<<"$text")
[ "$n" = "$($PY -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["results"][0]["problems"]))' "$T/v2.json")" ] ||
	fail "verify --json lists other problems than the text"

q=$("$CLI" verify -q "$T/bad.rfs" "$T/ds/shard-000001.rfs" || true)
grep -q "^DAMAGED .*bad.rfs" <<<"$q" && ! grep -q "^ok " <<<"$q" || fail "verify -q: $q"

# progress on a terminal: percent and time left; -q: none
if command -v script >/dev/null; then
	script -qec "$CLI pack --from lines $T/in.txt -o $T/ds2 --block-size 8KiB" /dev/null >"$T/tty" 2>&1 ||
		fail "pack on a terminal: $(cat "$T/tty")"
	grep -q 'packing: .*100%, 0 s left' "$T/tty" || fail "pack progress lacks percent/time left: $(tr '\r' '\n' <"$T/tty")"
	script -qec "$CLI pack -q --from lines $T/in.txt -o $T/ds3 --block-size 8KiB" /dev/null >"$T/tty" 2>&1
	grep -q 'packing:' "$T/tty" && fail "pack -q still shows progress"
	script -qec "$CLI bench --step-ms 3 --batches 300 --batch 16 $T/ds/manifest.rfm" /dev/null >"$T/tty" 2>&1 ||
		fail "bench on a terminal: $(cat "$T/tty")"
	grep -Eq '[0-9]+ batches, [0-9.]+ MB/s, [0-9]+%, [0-9]+ s left' "$T/tty" ||
		fail "bench progress lacks percent/time left: $(tr '\r' '\n' <"$T/tty" | head -5)"
	script -qec "$CLI bench -q --step-ms 3 --batches 300 --batch 16 $T/ds/manifest.rfm" /dev/null >"$T/tty" 2>&1
	grep -Eq '[0-9]+ batches, [0-9.]+ MB/s' "$T/tty" && fail "bench -q still shows progress"
else
	echo "cli_json: skipped the terminal progress checks: script(1) (bsdutils) missing" >&2
	exit 77
fi
echo "cli_json: ok"
