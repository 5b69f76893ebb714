#!/usr/bin/env bash
# pack_bench.sh [INPUT_MiB] - `ringfeed pack` throughput (MB/s of input) next
# to `zstd -3` on the same input in the same run, median of 3 each, plus the
# compressed size of both. Input: the demo generator's token-like records,
# written out as fixed 4 KiB records (so pack and zstd see the same bytes).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
CLI=${RF_CLI:-$top/build/ringfeed}
MIB=${1:-256}
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-pack-bench-XXXXXX")
trap 'rm -rf "$T"' EXIT
command -v zstd >/dev/null || { echo "pack_bench: needs the zstd command" >&2; exit 2; }

# Input: concatenated demo payloads (token-like u16 data), MIB MiB.
"$CLI" pack --demo -o "$T/demo" --demo-bytes "${MIB}MiB" --demo-shards 4 >/dev/null
/usr/bin/python3 - "$T/demo" "$T/input.bin" <<'PY'
import ctypes, sys, glob, struct
# decode the demo shards with the zstd CLI-free path: use libzstd through ctypes
z = ctypes.CDLL("libzstd.so.1")
z.ZSTD_decompress.restype = ctypes.c_size_t
z.ZSTD_decompress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t]
out = open(sys.argv[2], "wb")
for path in sorted(glob.glob(sys.argv[1] + "/*.rfs")):
    b = open(path, "rb").read()
    io, ib = struct.unpack("<QQ", b[-24:-8])
    nb = struct.unpack("<I", b[io:io + 4])[0]
    meta = struct.unpack("<I", b[io + 24:io + 28])[0]
    for i in range(nb):
        off, comp, dec, rec, first = struct.unpack("<QIIII", b[io + 28 + meta + 24 * i:][:24])
        dst = ctypes.create_string_buffer(dec)
        n = z.ZSTD_decompress(dst, dec, b[off:off + comp], comp)
        assert n == dec
        end = struct.unpack("<I", dst.raw[dec - 8:dec - 4])[0]  # last record's end
        out.write(dst.raw[:end])
PY
in_bytes=$(stat -c %s "$T/input.bin")
cat "$T/input.bin" > /dev/null   # warm the page cache for both tools

median() { sort -g | sed -n 2p; }
now() { date +%s.%N; }
calc() { awk "BEGIN { printf \"%.${1}f\", $2 }"; }
pack_t=(); z1_t=(); z2_t=()
for i in 1 2 3; do   # interleaved, so drift in machine load hits all three alike
	rm -rf "$T/out"
	t0=$(now); "$CLI" pack --from fixed:4KiB "$T/input.bin" --allow-short -o "$T/out" >/dev/null; t1=$(now)
	pack_t+=("$(calc 6 "$t1 - $t0")")
	t0=$(now); zstd -3 -q -f -T1 "$T/input.bin" -o "$T/input.zst"; t1=$(now)
	z1_t+=("$(calc 6 "$t1 - $t0")")
	t0=$(now); zstd -3 -q -f -T2 "$T/input.bin" -o "$T/input2.zst"; t1=$(now)
	z2_t+=("$(calc 6 "$t1 - $t0")")
done
pt=$(printf '%s\n' "${pack_t[@]}" | median)
z1=$(printf '%s\n' "${z1_t[@]}" | median)
z2=$(printf '%s\n' "${z2_t[@]}" | median)
pack_bytes=$(cat "$T"/out/*.rfs | wc -c)
z1_bytes=$(stat -c %s "$T/input.zst")
z2_bytes=$(stat -c %s "$T/input2.zst")
row() { printf '%-30s %9s %14s %7s\n' "$1" "$(calc 1 "$in_bytes / 1000000 / $2")" "$3" \
	"$(calc 3 "$in_bytes / $3")"; }
echo "input: $in_bytes bytes of token-like records (fixed 4 KiB), $(nproc) cores, median of 3"
printf '%-30s %9s %14s %7s\n' tool "MB/s(in)" "output bytes" ratio
row "ringfeed pack --level 3" "$pt" "$pack_bytes"
row "zstd -3 -T1" "$z1" "$z1_bytes"
row "zstd -3 -T2" "$z2" "$z2_bytes"
echo "pack vs zstd -3 -T1: throughput $(calc 2 "$z1 / $pt")x, size $(calc 4 "$pack_bytes / $z1_bytes")x"
