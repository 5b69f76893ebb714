#!/usr/bin/env bash
# cli_read_tar_names.sh - `ringfeed read --output tar` writes member names
# that are safe to extract: a WebDataset tar whose keys are
# "../../etc/passwd", "/etc/shadow", "a/./b", "dir/../up" and one with a
# control byte comes out with no leading '/', no "." or ".." component and no
# control byte, each changed key mapped to one name with a hash of the
# original (every field of a sample under the same key, no two keys alike),
# safe keys unchanged, and one stderr line saying so.
set -euo pipefail
src=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/tests/check.inc.sh"
cli=${RF_CLI:?RF_CLI must name the ringfeed binary}
PY=/usr/bin/python3
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-read-tar-names.XXXXXX")
trap 'rm -rf "$T"' EXIT

$PY - "$T/hostile.tar" <<'PYEOF'
import io, sys, tarfile
keys = ["../../etc/passwd", "/etc/shadow", "a/./b", "ok/1", "x\x01y", "dir/../up", "ok/2",
        "__/__/etc/passwd"]
with tarfile.open(sys.argv[1], "w", format=tarfile.PAX_FORMAT) as t:
    for key in keys:
        for ext in ("jpg", "cls"):
            d = (key + ext).encode()
            ti = tarfile.TarInfo(key + "." + ext)
            ti.size = len(d)
            t.addfile(ti, io.BytesIO(d))
PYEOF
"$cli" read --no-shuffle --output tar --index-cache off "$T/hostile.tar" >"$T/out.tar" 2>"$T/err" ||
	bad "the read failed: $(cat "$T/err")"
$PY - "$T/out.tar" <<'PYEOF' && ok "every member name is safe, unique per key, fields grouped" || bad "unsafe or lost names"
import sys, tarfile
names = [m.name for m in tarfile.open(sys.argv[1])]
assert len(names) == 16, names
for n in names:
    assert not n.startswith("/"), n
    parts = n.split("/")
    assert all(p not in ("", ".", "..") for p in parts), n
    assert all(ord(c) >= 0x20 and c != "\x7f" for c in n), n
keys = {}
for n in names:
    k, _, f = n.rpartition(".")
    keys.setdefault(k, set()).add(f)
assert len(keys) == 8 and all(v == {"jpg", "cls"} for v in keys.values()), keys
assert "ok/1" in keys and "ok/2" in keys and "__/__/etc/passwd" in keys, keys
changed = [k for k in keys if "~" in k]
assert len(changed) == 5, changed
assert any(k.startswith("__/__/etc/passwd~") for k in changed), changed
# each member's bytes are its original key's
t = tarfile.open(sys.argv[1])
for m in t:
    k = m.name.rpartition(".")[0]
    data = t.extractfile(m).read().decode()
    if "~" not in k:
        assert data.startswith(k), (m.name, data)
PYEOF
same "one stderr line about changed names" 1 "$(grep -c 'not safe to extract' "$T/err")"
grep -q "'../../etc/passwd.jpg' -> '__/__/etc/passwd~[0-9a-f]\{8\}.jpg'" "$T/err" &&
	ok "the stderr line shows the mapping" || bad "the stderr line: $(cat "$T/err")"
# extracting the output stays inside the folder
mkdir -p "$T/x/in"
(cd "$T/x/in" && tar -xf "$T/out.tar") || bad "tar -x of the output failed"
same "nothing extracted outside the folder" "in" "$(ls "$T/x")"
rf_checks_done cli_read_tar_names
