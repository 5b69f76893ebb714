#!/usr/bin/env bash
# cli_wds.sh - `ringfeed read --output tar`: the delivered records as a
# WebDataset tar stream that Python's tarfile reads back. An .rfs record
# becomes POSITION.bin (or POSITION.FIELD with --tar-field), in delivery
# order, with its bytes; long names get PAX headers.
set -euo pipefail
CLI=${RF_CLI:?set RF_CLI to the ringfeed binary}
PY=/usr/bin/python3
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-wds-XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# .rfs records as POSITION.bin members, in delivery order, bytes intact
seq 1 500 | awk '{ s = "r" $1 "-"; for (i = 0; i < $1 % 37; i++) s = s "x"; print s }' >"$T/in.txt"
"$CLI" pack --from lines "$T/in.txt" -o "$T/rfs" --block-size 4KiB >/dev/null
"$CLI" read --no-shuffle --output tar "$T/rfs" >"$T/rfs.tar"
"$PY" - "$T/rfs.tar" "$T/in.txt" <<'PYEOF' || fail "--output tar of .rfs records"
import sys, tarfile
want = open(sys.argv[2], "rb").read().split(b"\n")[:-1]
with tarfile.open(sys.argv[1]) as t:
    got = [(m.name, t.extractfile(m).read()) for m in t]
assert [n for n, _ in got] == ["%09d.bin" % i for i in range(len(want))], got[:3]
assert [b for _, b in got] == want
PYEOF
"$CLI" read --no-shuffle --output tar --tar-field txt "$T/rfs" >"$T/txt.tar"
[ "$(tar tf "$T/txt.tar" | sed -n 1p)" = 000000000.txt ] || fail "--tar-field txt"
# the shuffled stream gives the same members, in another order
"$CLI" read --output tar "$T/rfs" | tar tf - | sort >"$T/shuf.names"
tar tf "$T/rfs.tar" | sort | cmp -s - "$T/shuf.names" || fail "shuffled --output tar lost members"
if "$CLI" read --output tar --tar-field a.b "$T/rfs" >/dev/null 2>"$T/err"; then
	fail "--tar-field a.b accepted"
fi
grep -q -- "--tar-field" "$T/err" || fail "--tar-field error unclear"
echo "ok: --output tar of .rfs records (POSITION.bin, --tar-field)"
