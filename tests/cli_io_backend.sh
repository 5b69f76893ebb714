#!/usr/bin/env bash
# cli_io_backend.sh - the two loop backends, end to end, with io_uring
# blocked exactly as a default container blocks it (rf-seccomp-wrap: the
# three io_uring syscalls fail with EPERM): read, bench, fetch-only, verify,
# index and inspect give io_uring's digests and verdicts under the wrapper;
# auto says the fallback once per process (the line counted) and the stats
# name the backend; --io-backend io_uring under the wrapper fails saying how
# to allow it; verify calls that a setup error (exit 3), never DAMAGED;
# --io-backend epoll and $RINGFEED_IO_BACKEND pick epoll where io_uring
# works; the Python binding's io_backend keyword and the wrapper alike.
set -euo pipefail
CLI=${RF_CLI:?set RF_CLI to the ringfeed binary}
build=${RF_BUILD_DIR:?RF_BUILD_DIR not set}
WRAP=$build/rf-seccomp-wrap
PY=/usr/bin/python3
[ -x "$WRAP" ] || { echo "FAIL: $WRAP missing" >&2; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-iob-XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_rc() {
	local want=$1; shift
	set +e; "$@" >"$T/out" 2>"$T/err"; local rc=$?; set -e
	[ "$rc" = "$want" ] || { cat "$T/out" "$T/err" >&2; fail "'$*' exited $rc, want $want"; }
}
expect_err() { grep -q -- "$1" "$T/err" || { cat "$T/err" >&2; fail "stderr lacks '$1'"; }; }
fallback_lines() { grep -c 'ringfeed: io_uring is blocked here (io_uring_setup: Operation not permitted)' "$T/err" || true; }

# The unwrapped run must be io_uring, or this test proves nothing: where
# io_uring is blocked already (inside a container) it is skipped, not passed.
"$PY" - "$T/in.txt" <<'PYEOF'
import random, sys
random.seed(7)
with open(sys.argv[1], "w") as f:
    for i in range(5000):
        f.write("r%d:%s\n" % (i, "".join(random.choices("abcdefgh", k=random.randint(0, 200)))))
PYEOF
"$CLI" pack --from lines "$T/in.txt" -o "$T/ds" --block-size 8KiB --shard-size 64KiB >/dev/null
M="$T/ds/manifest.rfm"
expect_rc 0 "$CLI" bench --json --no-shuffle "$M"
if ! grep -q '"io_backend":"io_uring"' "$T/out"; then
	echo "cli_io_backend: io_uring is not available here ($(grep -o 'io_uring is blocked[^)]*)' "$T/err" || echo unknown)): skipped"
	exit 77
fi
[ "$(fallback_lines)" = 0 ] || fail "io_uring run said the fallback"

# 1. the wrapper blocks io_uring as a container does: a command under it falls back
expect_rc 125 "$WRAP"
expect_rc 0 "$WRAP" "$CLI" bench --json --no-shuffle "$M"
grep -q '"io_backend":"epoll","io_read_threads":4' "$T/out" || fail "bench under the wrapper: $(cat "$T/out")"
[ "$(fallback_lines)" = 1 ] || { cat "$T/err" >&2; fail "the fallback was not said exactly once"; }
expect_err "kernel.io_uring_disabled; using epoll + 4 read threads"

# 2. read: the same digests (shuffled, ranks, resume) under the wrapper; one line each
common=(--seed 4 --shuffle-window 200 --batch 16)
for args in "" "--rank 1 --world 3" "--threads 1 --depth 2" "--io-threads 1"; do
	want=$("$CLI" read --digest "${common[@]}" $args "$M")
	expect_rc 0 "$WRAP" "$CLI" read --digest "${common[@]}" $args "$M"
	[ "$(cat "$T/out")" = "$want" ] || fail "read $args under the wrapper: $(cat "$T/out"), want $want"
	[ "$(fallback_lines)" = 1 ] || fail "read $args: fallback lines $(fallback_lines)"
	got=$("$CLI" read --digest --io-backend epoll "${common[@]}" $args "$M" 2>"$T/err")
	[ "$got" = "$want" ] || fail "read --io-backend epoll $args: $got, want $want"
	[ "$(fallback_lines)" = 0 ] || fail "an asked-for epoll said the fallback"
done
"$CLI" read "${common[@]}" --epochs 2 --output raw "$M" >"$T/full.raw"
"$WRAP" "$CLI" read "${common[@]}" --epochs 2 --output raw --stop-after 300 --save-state "$T/st" "$M" >"$T/a.raw" 2>/dev/null
"$CLI" read "${common[@]}" --epochs 2 --output raw --resume "$T/st" "$M" >"$T/b.raw"
cat "$T/a.raw" "$T/b.raw" | cmp -s - "$T/full.raw" || fail "a resume across backends differs"
RINGFEED_IO_BACKEND=epoll "$CLI" read --digest "${common[@]}" --stats "$T/stats.json" "$M" >"$T/out" 2>"$T/err"
grep -q '"io_backend":"epoll","io_read_threads":4,"io_backend_fallback":null' "$T/stats.json" ||
	fail "stats under RINGFEED_IO_BACKEND=epoll: $(grep -o '"io_backend[^,]*,[^,]*,[^,]*' "$T/stats.json")"
"$WRAP" "$CLI" read --digest "${common[@]}" --stats "$T/stats.json" "$M" >"$T/out" 2>"$T/err"
grep -q '"io_backend":"epoll","io_read_threads":4,"io_backend_fallback":"io_uring_setup: Operation not permitted"' "$T/stats.json" ||
	fail "stats under the wrapper: $(grep -o '"io_backend[^,]*,[^,]*,[^,]*' "$T/stats.json")"
"$CLI" read --digest "${common[@]}" --stats "$T/stats.json" "$M" >"$T/out"
grep -q '"io_backend":"io_uring","io_read_threads":0,"io_backend_fallback":null' "$T/stats.json" ||
	fail "stats on io_uring: $(grep -o '"io_backend[^,]*,[^,]*,[^,]*' "$T/stats.json")"

# 3. io_uring asked for and refused: an error that says how to allow it
expect_rc 1 "$WRAP" "$CLI" read --digest --io-backend io_uring "$M"
expect_err "io_backend io_uring: io_uring_setup: Operation not permitted"
expect_err "security-opt seccomp=PROFILE"
expect_err "securityContext.seccompProfile"
expect_err "sysctl kernel.io_uring_disabled=0"
expect_err "or use io_backend auto"
[ "$(fallback_lines)" = 0 ] || fail "an explicit io_uring fell back"
expect_rc 1 env RINGFEED_IO_BACKEND=io_uring "$WRAP" "$CLI" read --digest "$M"
expect_err "io_backend io_uring: io_uring_setup"
expect_rc 0 env RINGFEED_IO_BACKEND=io_uring "$WRAP" "$CLI" read --digest --io-backend epoll "$M"
expect_rc 1 env RINGFEED_IO_BACKEND=uring "$CLI" read --digest "$M"
expect_err "RINGFEED_IO_BACKEND: 'uring' is not auto, io_uring or epoll"
expect_rc 2 "$CLI" read --digest --io-backend uring "$M"
expect_err "option io_backend: 'uring' is not auto, io_uring or epoll"

# 4. verify: sound shards are ok under the wrapper; a loop that cannot start
# is a setup error (exit 3, NOT VERIFIED), never DAMAGED
expect_rc 0 "$WRAP" "$CLI" verify "$M"
grep -q "^verify: [1-9][0-9]* shards, 0 damaged$" "$T/out" || fail "verify: $(cat "$T/out")"
[ "$(fallback_lines)" = 1 ] || fail "verify: fallback lines $(fallback_lines)"
expect_rc 3 "$WRAP" "$CLI" verify --io-backend io_uring "$M"
grep -q "^  setup error (not damage): io_backend io_uring: io_uring_setup: Operation not permitted" "$T/out" || fail "verify setup error: $(cat "$T/out")"
grep -q "^NOT VERIFIED .*shard-000000.rfs$" "$T/out" || fail "verify: no NOT VERIFIED line"
! grep -q DAMAGED "$T/out" || fail "verify called a sound shard DAMAGED: $(cat "$T/out")"
grep -q "0 shards, 0 damaged, [1-9][0-9]* not verified (a setup error here, not damage)" "$T/out" || fail "verify summary: $(cat "$T/out")"
expect_rc 3 "$WRAP" "$CLI" verify --json --io-backend io_uring "$M"
"$PY" - "$T/out" <<'PYEOF' || fail "verify --json under a setup error"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["shards"] == 0 and d["damaged"] == 0 and d["not_verified"] >= 1, d
assert all(r["ok"] is None for r in d["results"]), d
PYEOF
cp "$T/ds/shard-000001.rfs" "$T/bad.rfs"
printf 'XXXX' | dd of="$T/bad.rfs" bs=1 seek=100 conv=notrunc 2>/dev/null
expect_rc 1 "$WRAP" "$CLI" verify "$T/bad.rfs"
grep -q "^DAMAGED " "$T/out" || fail "real damage under the wrapper: $(cat "$T/out")"

# 5. fetch-only, inspect and index under the wrapper
expect_rc 0 "$WRAP" "$CLI" bench --fetch-only --json "$M"
grep -q '"io_backend":"epoll","io_read_threads":4}' "$T/out" || fail "fetch-only: $(cat "$T/out")"
want=$("$CLI" bench --fetch-only --json "$M" | grep -o '"bytes":[0-9]*')
grep -q "$want" "$T/out" || fail "fetch-only under the wrapper read other bytes"
expect_rc 0 "$CLI" inspect "$T/ds/shard-000000.rfs"
cp "$T/out" "$T/inspect.want"
expect_rc 0 "$WRAP" "$CLI" inspect "$T/ds/shard-000000.rfs"
cmp -s "$T/out" "$T/inspect.want" || fail "inspect differs under the wrapper"
"$PY" - "$T/in.txt" "$T/w.tar" <<'PYEOF'
import io, sys, tarfile
with tarfile.open(sys.argv[2], "w", format=tarfile.USTAR_FORMAT) as t:
    for i, line in enumerate(open(sys.argv[1], "rb").read().splitlines()[:300]):
        ti = tarfile.TarInfo("s%05d.txt" % i); ti.size = len(line)
        t.addfile(ti, io.BytesIO(line))
PYEOF
mkdir -p "$T/idx1" "$T/idx2"
expect_rc 0 "$CLI" index -o "$T/idx1" "$T/w.tar"
expect_rc 0 "$WRAP" "$CLI" index -o "$T/idx2" "$T/w.tar"
cmp -s "$T/idx1/w.idx" "$T/idx2/w.idx" || fail "index under the wrapper differs"
want=$("$CLI" read --digest --seed 1 "$T/w.tar")
got=$("$WRAP" "$CLI" read --digest --seed 1 "$T/w.tar" 2>/dev/null)
[ "$got" = "$want" ] || fail "tar read under the wrapper: $got, want $want"

# 6. Python: the io_backend keyword, and the binding under the wrapper
if grep -q '^RF_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
	echo "cli_io_backend: the Python part runs in the plain build (ASan inside Python)"
	exit 0
fi
cat >"$T/py.py" <<'PYEOF'
import hashlib, os, sys
sys.path.insert(0, os.path.join(os.environ["RF_SOURCE_DIR"], "python"))
import ringfeed
kw = {"io_backend": sys.argv[2]} if sys.argv[2] != "-" else {}
h = hashlib.sha256()
with ringfeed.Loader(sys.argv[1], batch=32, seed=3, **kw) as L:
    for b in L:
        for r in b.records_bytes():
            h.update(len(r).to_bytes(4, "little") + r)
        b.release()
print(h.hexdigest())
PYEOF
export RINGFEED_LIBRARY=$build/libringfeed.so RF_SOURCE_DIR=${RF_SOURCE_DIR:?}
want=$("$PY" "$T/py.py" "$M" -)
got=$("$PY" "$T/py.py" "$M" epoll)
[ "$got" = "$want" ] || fail "Python io_backend=epoll: $got, want $want"
got=$("$WRAP" "$PY" "$T/py.py" "$M" - 2>"$T/err")
[ "$got" = "$want" ] || fail "Python under the wrapper: $got, want $want"
[ "$(fallback_lines)" = 1 ] || fail "Python: fallback lines $(fallback_lines)"
set +e; "$WRAP" "$PY" "$T/py.py" "$M" io_uring >/dev/null 2>"$T/err"; rc=$?; set -e
[ "$rc" != 0 ] || fail "Python io_backend=io_uring under the wrapper succeeded"
expect_err "io_uring_setup: Operation not permitted"
echo "cli_io_backend: ok"
