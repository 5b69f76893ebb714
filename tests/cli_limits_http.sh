#!/usr/bin/env bash
# cli_limits_http.sh - open-phase memory over HTTP: two shards on nginx whose
# footers declare a 384 MiB index (sparse files) fail `ringfeed read
# --budget 64MiB` before any index buffer exists, naming the shard and the
# bytes, with peak RSS within the budget plus the stated fixed overhead
# (docs/design.md: the RSS before rf_open + 16 MiB; the peak of a small HTTP
# read with an 8 MiB budget stands for the RSS before rf_open). Before, each
# URL cost ~395 MiB (the index was fetched into a buffer of that size, then
# re-read after its CRC failed). RSS is not checked in a sanitizer build.
set -euo pipefail
src=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/tests/servers.inc.sh"
rf_servers_or_start
rf_need_env RF_NGINX_URL RF_NGINX_ROOT
CLI=${RF_CLI:?RF_CLI must name the ringfeed binary}
fail() { echo "FAIL: $*" >&2; exit 1; }

T=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-limits-http.XXXXXX")
rf_at_exit "rm -rf '$T'"
tag=cli-limits-http-$$
mkdir -p "$RF_NGINX_ROOT/$tag"
rf_at_exit "rm -rf '$RF_NGINX_ROOT/$tag'"

# Runs a command; prints its peak RSS in KiB (the child's ru_maxrss) and rc.
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

"$CLI" pack --demo -o "$T/ds" --demo-bytes 2MiB --demo-shards 1 >/dev/null
cp "$T"/ds/shard-*.rfs "$RF_NGINX_ROOT/$tag/small.rfs"
read -r base_kib rc < <(peak_kib "$CLI" read --digest --budget 8MiB --threads 1 \
	"$RF_NGINX_URL/$tag/small.rfs")
[ "$rc" = 0 ] || { cat "$T/err" >&2; fail "baseline read exited $rc"; }
limit_kib=$((65536 + base_kib + 16384))

for n in a b; do
	/usr/bin/python3 - "$RF_NGINX_ROOT/$tag/huge-$n.rfs" <<'PYEOF'
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
done
read -r kib rc < <(peak_kib "$CLI" read --digest --budget 64MiB \
	"$RF_NGINX_URL/$tag/huge-a.rfs" "$RF_NGINX_URL/$tag/huge-b.rfs")
echo "peak RSS $kib KiB (limit $limit_kib KiB = budget + $base_kib + 16384)"
[ "$rc" = 1 ] || { cat "$T/out" "$T/err" >&2; fail "exited $rc, want 1"; }
grep -q "budget 64.0 MiB is too small for the shard indexes: shard .*/huge-[ab].rfs needs [0-9]* bytes at open for a read of 402653184 bytes of the shard itself" "$T/err" ||
	{ cat "$T/err" >&2; fail "the message names neither the budget, the shard nor the bytes"; }
[ "$sanitized" = 1 ] || [ "$kib" -le "$limit_kib" ] || fail "peak RSS $kib KiB over $limit_kib KiB"
echo "cli_limits_http: ok"
