#!/usr/bin/env bash
# test.sh - installs dependencies, builds ringfeed twice (plain, and with
# AddressSanitizer + UndefinedBehaviorSanitizer), starts the test servers
# (scripts/servers.sh: nginx, s3rver, SigV4 verifier, misbehaving HTTP) and
# runs every test in both builds against them; then the reading tests
# (ctest label io) once more in the plain build under rf-seccomp-wrap, with
# io_uring blocked as a default container's seccomp profile blocks it, so
# they run on the epoll backend and must give the same digests (~2 min); and last the
# threaded tests (ctest label tsan) in a ThreadSanitizer build (RF_TSAN=ON, clang; ~5 min
# with its build). Before the tests, the
# library's objects are compiled once more with clang and -Wthread-safety -Werror (RF_TSA=ON:
# the lock's rules of base/tsa.h; no tests, no link; ~1 min), and the library and tools
# in a Release build (-O3 warns where -O2 does not; ~2 min). The servers stop on exit,
# whatever happens; under this script a server test whose variables are
# missing fails instead of skipping (RF_REQUIRE_SERVERS=1).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/deps.sh" --test
"$top/scripts/build.sh" "$top/build"
"$top/scripts/build.sh" "$top/build-asan" -DRF_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
echo "== thread-safety analysis (clang -Wthread-safety -Werror, library objects only)"
cmake -S "$top" -B "$top/build-tsa" -DCMAKE_C_COMPILER=clang -DRF_TSA=ON -DRF_TESTS=OFF \
    -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$top/build-tsa" -j"$(nproc)" --target rf_base rf_shards rf_fetch rf_engine \
    rf_fetch_ship rf_engine_ship
echo "== release build (-O3 -DNDEBUG, -Werror: what a user's cmake -DCMAKE_BUILD_TYPE=Release"
echo "   compiles, whose optimiser warns where the others do not; no tests)"
cmake -S "$top" -B "$top/build-release" -DCMAKE_BUILD_TYPE=Release -DRF_TESTS=OFF >/dev/null
cmake --build "$top/build-release" -j"$(nproc)"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:halt_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
servers=$(mktemp -d "${TMPDIR:-/tmp}/rf-servers.XXXXXX")
trap '"$top/scripts/servers.sh" stop "$servers"; rm -rf "$servers"' EXIT
trap 'exit 130' INT TERM # so the EXIT trap runs on Ctrl-C / kill too
"$top/scripts/servers.sh" start "$servers"
# shellcheck source=/dev/null
. "$servers/env"
export RF_REQUIRE_SERVERS=1
status=0
echo "== tests (plain build)"
(cd "$top/build" && ctest --output-on-failure -j2) || status=1
echo "== tests (ASan + UBSan build)"
(cd "$top/build-asan" && ctest --output-on-failure -j2) || status=1
echo "== reading tests with io_uring blocked (plain build, epoll backend)"
(cd "$top/build" && ./rf-seccomp-wrap ctest --output-on-failure -j2 -L io) || status=1
echo "== threaded tests (ctest label tsan) in a ThreadSanitizer build (clang)"
cmake -S "$top" -B "$top/build-tsan" -DCMAKE_C_COMPILER=clang -DRF_TSAN=ON -DRF_PYTHON=OFF \
    -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$top/build-tsan" -j"$(nproc)" >/dev/null
# Reports go to files, so one in a process whose exit status or stderr a test
# does not look at (a child, a server-side helper) still fails the run.
tsan_logs=$(mktemp -d "${TMPDIR:-/tmp}/rf-tsan.XXXXXX")
(cd "$top/build-tsan" &&
    TSAN_OPTIONS="suppressions=$top/tests/tsan.supp halt_on_error=1 second_deadlock_stack=1 log_path=$tsan_logs/report" \
        ctest --output-on-failure -j2 -L tsan) || status=1
if compgen -G "$tsan_logs/report*" >/dev/null; then
	echo "ThreadSanitizer reports:"
	cat "$tsan_logs"/report*
	status=1
fi
rm -rf "$tsan_logs"
exit $status
