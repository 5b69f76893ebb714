#!/usr/bin/env bash
# test.sh - installs dependencies, builds ringfeed twice (plain, and with
# AddressSanitizer + UndefinedBehaviorSanitizer), and runs every test in both.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/deps.sh" --test
"$top/scripts/build.sh" "$top/build"
"$top/scripts/build.sh" "$top/build-asan" -DRF_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:halt_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
status=0
echo "== tests (plain build)"
(cd "$top/build" && ctest --output-on-failure -j2) || status=1
echo "== tests (ASan + UBSan build)"
(cd "$top/build-asan" && ctest --output-on-failure -j2) || status=1
exit $status
