#!/usr/bin/env bash
# cli_pip.sh - the Python package as a user installs it, in fresh virtual
# environments (python3 -m venv --system-site-packages: numpy from Debian):
#   1. pip install --no-build-isolation ./python (offline): the build runs
#      CMake on the source tree (a fresh build folder of its own, only the
#      library: about 10 s on 2 cores) and bundles libringfeed.so inside the
#      package;
#   2. cmake --install --prefix VENV: the package in the venv's site folder
#      finds the installed library.
# Each then reads a dataset from another directory, with no PYTHONPATH and
# no RINGFEED_LIBRARY, and must find its own library (not the build tree's).
set -euo pipefail
CLI=${RF_CLI:?set RF_CLI to the ringfeed binary}
SRC=$(cd "${RF_SOURCE_DIR:?}" && pwd)
BUILD=${RF_BUILD_DIR:?}
py=/usr/bin/python3
if grep -q '^RF_SANITIZE:BOOL=ON' "$BUILD/CMakeCache.txt" 2>/dev/null; then
	echo "cli_pip: skipped in the sanitizer build: an ASan libringfeed cannot load into" \
	     "an unsanitized Python without LD_PRELOAD; the plain build runs this test"
	exit 77
fi
"$py" -c 'import setuptools, wheel, numpy, venv, pip' 2>/dev/null ||
	{ echo "cli_pip: $py lacks setuptools/wheel/numpy/venv/pip (scripts/deps.sh --test)" >&2; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-pip-XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
unset PYTHONPATH RINGFEED_LIBRARY
export PYTHONDONTWRITEBYTECODE=1 PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1

mkdir -p "$T/elsewhere"
seq 1 3000 | sed 's/^/record-/' >"$T/in.txt"
"$CLI" pack --from lines "$T/in.txt" -o "$T/ds" --block-size 4KiB >/dev/null
version=$("$CLI" version | sed 's/^ringfeed \([^ ]*\).*/\1/')

# read_from VENV WANT_LIB_PREFIX: reads the dataset from $T/elsewhere.
read_from() {
	(cd "$T/elsewhere" && "$1/bin/python" - "$T/ds/manifest.rfm" "$2" "$version") <<'PY'
import sys
import ringfeed
manifest, want_prefix, version = sys.argv[1:]
path = ringfeed.library_path()
assert path.startswith(want_prefix), f"loaded {path}, not under {want_prefix}"
assert ringfeed.library_version() == version, ringfeed.library_version()
n = 0
with ringfeed.Loader(manifest, batch=64, budget="16MiB", shuffle=False) as loader:
    for batch in loader:
        with batch:
            n += batch.records
assert n == 3000, n
print("ok", path)
PY
}

# 1. pip install ./python (a copy, so the checkout stays clean)
"$py" -m venv --system-site-packages --without-pip "$T/venv"
mkdir -p "$T/python"
cp -r "$SRC/python/pyproject.toml" "$SRC/python/setup.py" "$SRC/python/README.md" \
	"$SRC/python/ringfeed" "$T/python/"
rm -rf "$T/python/ringfeed/__pycache__" "$T/python/ringfeed/_install.py"
RINGFEED_SOURCE_DIR=$SRC RINGFEED_BUILD_JOBS=2 \
	"$T/venv/bin/python" -m pip install -q --no-build-isolation "$T/python" >"$T/pip.log" 2>&1 ||
	fail "pip install ./python: $(tail -30 "$T/pip.log")"
site=$("$T/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
[ -f "$site/ringfeed/libringfeed.so" ] || fail "pip did not put libringfeed.so in $site/ringfeed"
out=$(read_from "$T/venv" "$site/ringfeed/") || fail "pip-installed package: $out"
echo "pip: $out"

# 2. cmake --install into a second venv's prefix
"$py" -m venv --system-site-packages --without-pip "$T/venv2"
cmake --install "$BUILD" --prefix "$T/venv2" >/dev/null
site2=$("$T/venv2/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
[ -f "$site2/ringfeed/__init__.py" ] ||
	fail "cmake --install put no ringfeed package in the venv's $site2 ($(cd "$T/venv2" && find . -name __init__.py | head -3))"
out=$(read_from "$T/venv2" "$T/venv2/lib") || fail "cmake-installed package: $out"
echo "cmake --install: $out"
echo "cli_pip: ok"
