#!/usr/bin/env bash
# cli_install.sh - installs ringfeed into a temporary (non-default) prefix,
# whose pkg-config file must name that prefix, not the configured one; builds
# examples/consumer.c against it with pkg-config and with find_package(ringfeed) (the installed header and
# shared library only) and runs it on a small packed dataset; the record
# count and bytes must match what `ringfeed read --digest` reports. Nothing
# installed needs LD_LIBRARY_PATH: the consumer and the installed programs
# find the installed libringfeed.so through their RUNPATH.
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
cmp -s "$T/prefix/share/doc/ringfeed/LICENSE" "$SRC/LICENSE" || fail "LICENSE not installed"
export PKG_CONFIG_PATH="$libdir/pkgconfig"
# The install prefix is not the configured one: the .pc must follow it.
grep -q "^CMAKE_INSTALL_PREFIX:PATH=$T/prefix\$" "$BUILD/CMakeCache.txt" && fail "prefix not distinct"
flags=$(pkg-config --cflags --libs ringfeed) || fail "pkg-config does not know ringfeed"
inc=$(pkg-config --variable=includedir ringfeed)
[ -f "$inc/ringfeed.h" ] || fail "pkg-config includedir $inc has no ringfeed.h (flags: $flags)"
[ "$(cd "$inc" && pwd -P)" = "$(cd "$T/prefix/include" && pwd -P)" ] ||
	fail "pkg-config includedir $inc is not the install prefix's"
# A sanitizer build's library needs the sanitizer runtime in the program too.
san=""
grep -q '^RF_SANITIZE:BOOL=ON' "$BUILD/CMakeCache.txt" && san="-fsanitize=address,undefined"
# Only the installed include dir: the source tree must not leak in.
cc $san -std=c11 -Wall -Wextra -Werror "$SRC/examples/consumer.c" $flags -o "$T/consumer" \
	|| fail "examples/consumer.c does not build against the installed library"
unset LD_LIBRARY_PATH
deps=$(ldd "$T/consumer")
so=$(sed -n 's/.*libringfeed.so.0 => \([^ ]*\).*/\1/p' <<<"$deps")
[ -n "$so" ] && [ "$(readlink -f "$so")" = "$(readlink -f "$libdir/libringfeed.so.0")" ] ||
	fail "consumer does not load the installed $libdir/libringfeed.so.0 without LD_LIBRARY_PATH: $deps"
# Test infrastructure (tests/faultproxy, tests/servers) is not the product.
left=$(find "$T/prefix" \( -name 'rf-faultproxy*' -o -name '*_server.py' -o -name 'bad_http.py' \) -print)
[ -z "$left" ] || fail "test infrastructure installed: $left"
# The shipped libraries: the shared one exports exactly the RF_API functions
# (sanitizer runtime names, "_..." aside), and neither holds a test hook: those
# are compiled only under RF_TEST_HOOKS into ringfeed_test, which only tests link.
want=$(grep -hE '^RF_API ' "$SRC"/{base,engine,shards,fetch}/*.c | sed -E 's/\(.*//' |
	grep -oE 'rf_[a-z0-9_]+$' | sort -u)
got=$(nm -D --defined-only "$libdir/libringfeed.so.0" | awk '$3 !~ /^_/ {print $3}' | sort -u)
[ "$want" = "$got" ] || fail "libringfeed.so exports other than the RF_API functions:" \
	"$(diff <(echo "$want") <(echo "$got") | grep '^[<>]' | tr '\n' ' ')"
hooks=$(awk '/^#ifdef RF_TEST_HOOKS/ {h = 1; next} /^#endif/ {h = 0} h' \
	"$SRC"/{base,engine,shards,fetch}/*.h | grep -oE '\brf_[a-z0-9_]+\(' | tr -d '(' | sort -u)
for lib in "$libdir/libringfeed.so.0" "$libdir/libringfeed.a"; do
	syms=$(nm "$lib" 2>/dev/null | awk '{print $NF}' | sort -u)
	grep -q '^rf_open$' <<<"$syms" || fail "$lib: no symbol table to check"
	leak=$(grep -E '^rf_.*test' <<<"$syms" || true)
	for h in $hooks; do leak+=$(grep -x "$h" <<<"$syms" || true); done
	[ -z "$leak" ] || fail "$lib holds test hooks: $leak"
done
# The installed command runs from its prefix and reports its version.
"$T/prefix/bin/ringfeed" version | grep -q "libringfeed" || fail "installed ringfeed version"
readelf -d "$T/prefix/bin/ringfeed" | grep -q 'R.*PATH.*\$ORIGIN' ||
	fail "installed ringfeed has no \$ORIGIN RUNPATH: $(readelf -d "$T/prefix/bin/ringfeed" | grep -i path)"

seq 1 3000 | sed 's/^/record-/' >"$T/in.txt"
"$CLI" pack --from lines "$T/in.txt" -o "$T/ds" --block-size 4KiB >/dev/null
out=$("$T/consumer" --budget 16MiB --batch 32 "$T/ds/manifest.rfm")
grep -q "records=3000 " <<<"$out" || fail "consumer: $out"
want=$("$CLI" read --digest "$T/ds/manifest.rfm" | sed 's/.*bytes=\([0-9]*\).*/\1/')
grep -q "bytes=$want " <<<"$out" || fail "consumer bytes differ from read's $want: $out"
grep -q "state_bytes=112" <<<"$out" || fail "consumer did not save a state: $out"
"$T/consumer" "$T/missing.rfs" 2>"$T/err" && fail "missing shard accepted"
grep -q "missing.rfs" "$T/err" || fail "missing shard error: $(cat "$T/err")"

# The CMake package: find_package(ringfeed) and its ringfeed::ringfeed and
# ringfeed::ringfeed_static targets, as another project would use them.
mkdir -p "$T/pkg"
printf '%s\n' 'cmake_minimum_required(VERSION 3.18)' 'project(uses_ringfeed C)' \
	'find_package(ringfeed 0.1 REQUIRED)' \
	'if(NOT ringfeed_LICENSE STREQUAL "Apache-2.0")' \
	'  message(FATAL_ERROR "ringfeed_LICENSE is ${ringfeed_LICENSE}")' 'endif()' \
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
	out=$("$T/pkg/build/$exe" --budget 16MiB --batch 32 "$T/ds/manifest.rfm")
	grep -q "bytes=$want " <<<"$out" || fail "$exe (find_package) bytes differ from read's $want: $out"
done
echo "cli_install: ok"
