#!/usr/bin/env bash
# cli_format.sh - every C source and header follows the committed .clang-format
# (the build's warnings are errors; so is formatting drift).
set -euo pipefail
SRC=${RF_SOURCE_DIR:?}
cd "$SRC"
if ! command -v clang-format >/dev/null; then
	echo "clang-format not installed (scripts/deps.sh --test installs it)" >&2
	exit 1
fi
bad=0
files=$(git ls-files '*.c' '*.h' 2>/dev/null || find engine fetch shards tools tests fuzz examples include -name '*.[ch]')
for f in $files; do
	if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then
		echo "not formatted: $f (run: clang-format -i $f)" >&2
		bad=1
	fi
done
[ $bad = 0 ] || exit 1
echo "cli_format: $(echo "$files" | wc -w) files follow .clang-format"
