#!/usr/bin/env bash
# cli_install.sh - installs ringfeed into a temporary prefix, builds
# examples/consumer.c against it with pkg-config and with find_package(ringfeed) (the installed header and
# shared library only) and runs it on a small packed dataset; the record
# count and bytes must match what `ringfeed read --digest` reports.
set -euo pipefail
CLI=${RF_CLI:?set RF_CLI to the ringfeed binary}
SRC=${RF_SOURCE_DIR:?}
BUILD=${RF_BUILD_DIR:?}
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-install-XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$BUILD" --prefix "$T/prefix" >/dev/null
libdir=$(ls -d "$T"/prefix/lib*/pkgconfig | head -1)
libdir=${libdir%/pkgconfig}
[ -f "$T/prefix/include/ringfeed.h" ] || fail "header not installed"
export PKG_CONFIG_PATH="$libdir/pkgconfig"
# The .pc names the configured prefix; the test installs elsewhere.
flags=$(pkg-config --define-variable=prefix="$T/prefix" --cflags --libs ringfeed) \
	|| fail "pkg-config does not know ringfeed"
# A sanitizer build's library needs the sanitizer runtime in the program too.
san=""
grep -q '^RF_SANITIZE:BOOL=ON' "$BUILD/CMakeCache.txt" && san="-fsanitize=address,undefined"
# Only the installed include dir: the source tree must not leak in.
cc $san -std=c11 -Wall -Wextra -Werror "$SRC/examples/consumer.c" $flags -o "$T/consumer" \
	|| fail "examples/consumer.c does not build against the installed library"
deps=$(LD_LIBRARY_PATH="$libdir" ldd "$T/consumer")
grep -q "$libdir/libringfeed.so" <<<"$deps" || fail "consumer is not linked to the installed libringfeed.so"

seq 1 3000 | sed 's/^/record-/' >"$T/in.txt"
"$CLI" pack --from lines "$T/in.txt" -o "$T/ds" --block-size 4KiB >/dev/null
out=$(LD_LIBRARY_PATH="$libdir" "$T/consumer" --budget 16MiB --batch 32 "$T/ds/manifest.rfm")
grep -q "records=3000 " <<<"$out" || fail "consumer: $out"
want=$("$CLI" read --digest "$T/ds/manifest.rfm" | sed 's/.*bytes=\([0-9]*\).*/\1/')
grep -q "bytes=$want " <<<"$out" || fail "consumer bytes differ from read's $want: $out"
grep -q "state_bytes=96" <<<"$out" || fail "consumer did not save a state: $out"
LD_LIBRARY_PATH="$libdir" "$T/consumer" "$T/missing.rfs" 2>"$T/err" && fail "missing shard accepted"
grep -q "missing.rfs" "$T/err" || fail "missing shard error: $(cat "$T/err")"

# The CMake package: find_package(ringfeed) and its ringfeed::ringfeed and
# ringfeed::ringfeed_static targets, as another project would use them.
mkdir -p "$T/pkg"
printf '%s\n' 'cmake_minimum_required(VERSION 3.18)' 'project(uses_ringfeed C)' \
	'find_package(ringfeed 0.1 REQUIRED)' \
	"add_executable(consumer_shared \"$SRC/examples/consumer.c\")" \
	'target_link_libraries(consumer_shared PRIVATE ringfeed::ringfeed)' \
	"add_executable(consumer_static \"$SRC/examples/consumer.c\")" \
	'target_link_libraries(consumer_static PRIVATE ringfeed::ringfeed_static)' \
	>"$T/pkg/CMakeLists.txt"
cmake -S "$T/pkg" -B "$T/pkg/build" -DCMAKE_PREFIX_PATH="$T/prefix" \
	-DCMAKE_C_FLAGS="$san" -DCMAKE_EXE_LINKER_FLAGS="$san" >"$T/pkg.log" 2>&1 ||
	fail "find_package(ringfeed) failed: $(tail -20 "$T/pkg.log")"
cmake --build "$T/pkg/build" >>"$T/pkg.log" 2>&1 ||
	fail "build with find_package(ringfeed) failed: $(tail -20 "$T/pkg.log")"
for exe in consumer_shared consumer_static; do
	out=$(LD_LIBRARY_PATH="$libdir" "$T/pkg/build/$exe" --budget 16MiB --batch 32 "$T/ds/manifest.rfm")
	grep -q "bytes=$want " <<<"$out" || fail "$exe (find_package) bytes differ from read's $want: $out"
done
echo "cli_install: ok"
