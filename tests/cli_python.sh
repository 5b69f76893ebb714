#!/usr/bin/env bash
# cli_python.sh - runs the Python binding's tests (python/tests, pytest) with
# Debian's /usr/bin/python3 against this build's libringfeed.so and ringfeed.
# In a sanitizer build it skips: the ASan runtime would have to be preloaded
# into the Python interpreter, which tests the interpreter more than us; the C
# API the binding calls is covered by the C tests under ASan.
set -euo pipefail
src=${RF_SOURCE_DIR:?RF_SOURCE_DIR not set}
build=${RF_BUILD_DIR:?RF_BUILD_DIR not set}
py=/usr/bin/python3
if grep -q '^RF_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
	echo "cli_python: skipped in the sanitizer build ($build): ASan cannot run inside an" \
	     "unsanitized Python without LD_PRELOAD; the plain build runs these tests"
	exit 77 # CTest's SKIP_RETURN_CODE: reported as skipped, never as passed
fi
lib=$build/libringfeed.so
[ -e "$lib" ] || { echo "cli_python: $lib missing" >&2; exit 1; }
if ! "$py" -c 'import numpy, pytest, torch' 2>/dev/null; then
	echo "cli_python: $py lacks numpy/pytest/torch (scripts/deps.sh --test installs" \
	     "python3-numpy python3-pytest python3-torch)" >&2
	exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export RINGFEED_LIBRARY=$lib RF_CLI=${RF_CLI:-$build/ringfeed} PYTHONDONTWRITEBYTECODE=1
"$py" -m pytest -q -p no:cacheprovider --basetemp="$tmp/pytest" "$src/python/tests"
