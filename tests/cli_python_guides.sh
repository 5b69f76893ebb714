#!/usr/bin/env bash
# cli_python_guides.sh - every ```python block of docs/python-guides.md runs,
# in order, each as its own /usr/bin/python3 script in one scratch folder
# (later blocks read what earlier ones wrote), against this build's library
# with PYTHONPATH=python, as the guide says. Skips in the sanitizer build,
# as cli_python does (ASan cannot run inside an unsanitized interpreter).
set -euo pipefail
src=${RF_SOURCE_DIR:?RF_SOURCE_DIR not set}
build=${RF_BUILD_DIR:?RF_BUILD_DIR not set}
py=/usr/bin/python3
if grep -q '^RF_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
	echo "cli_python_guides: skipped in the sanitizer build ($build)"
	exit 77
fi
"$py" -c 'import numpy, torch' 2>/dev/null ||
	{ echo "cli_python_guides: $py lacks numpy/torch (scripts/deps.sh --test)" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-guides-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
n=$("$py" - "$src/docs/python-guides.md" "$tmp" <<'PYEOF'
import re, sys
text, out = open(sys.argv[1]).read(), sys.argv[2]
blocks = re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)
for i, b in enumerate(blocks):
    open(f"{out}/block-{i + 1}.py", "w").write(b)
print(len(blocks))
PYEOF
)
[ "$n" -ge 4 ] || { echo "cli_python_guides: only $n python blocks" >&2; exit 1; }
export RINGFEED_LIBRARY=$build/libringfeed.so PYTHONPATH=$src/python GLOO_SOCKET_IFNAME=lo
cd "$tmp"
for i in $(seq 1 "$n"); do
	if ! timeout 300 "$py" "block-$i.py" >"out-$i" 2>&1; then
		echo "cli_python_guides: block $i failed:" >&2
		tail -20 "out-$i" >&2
		exit 1
	fi
done
echo "cli_python_guides: ok ($n blocks)"
