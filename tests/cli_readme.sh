#!/usr/bin/env bash
# cli_readme.sh - the README's shell and Python examples, typed in order on a
# fresh clone, work. Every ```sh block of README.md runs, in order, in one bash
# session (set -e: each command must succeed), and every ```python block runs
# at its place in that order as one /usr/bin/python3 script with
# PYTHONPATH=python (as the README says to run from a checkout); both inside a
# copy of the tracked
# files whose build/ is this build (so `export PATH="$PWD/build:$PATH"` and
# `cmake --install build` work as written). A block preceded by
#   <!-- readme-test: setup REASON -->   (it installs packages or builds: this
#                                          build stands in for it), or
#   <!-- readme-test: skip REASON -->    (it needs a server or the 1 GiB demo)
# does not run; the test names each one with its reason. `ringfeed` must come
# from the examples' own PATH line, not from the environment.
set -euo pipefail
SRC=$(cd "${RF_SOURCE_DIR:?}" && pwd)
BUILD=$(cd "${RF_BUILD_DIR:?}" && pwd)
PY=/usr/bin/python3
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-readme-XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir -p "$T/clone"
(cd "$SRC" && git ls-files -z | xargs -0 tar cf - 2>/dev/null) | tar xf - -C "$T/clone" ||
	fail "cannot copy the tracked files"
ln -s "$BUILD" "$T/clone/build"

# A sanitizer build's library cannot load into /usr/bin/python3 (the ASan
# runtime would have to be preloaded, as cli_python says): there the Python
# blocks are named as not run, and the plain build's run is the one that
# runs them (and requires at least 3).
sanitized=0
grep -q '^RF_SANITIZE:BOOL=ON' "$BUILD/CMakeCache.txt" 2>/dev/null && sanitized=1
$PY - "$SRC/README.md" "$T/script.sh" "$T/skipped.txt" "$sanitized" <<'PYEOF'
import re, shlex, sys
readme, script, skipped, sanitized = sys.argv[1:]
lines = open(readme).read().split("\n")
out = ["set -euo pipefail", "cd \"$RF_CLONE\""]
skips, blocks, pyblocks, marker = [], 0, 0, None
i = 0
while i < len(lines):
    line = lines[i]
    m = re.match(r"\s*<!--\s*readme-test:\s*(setup|skip)\s+(.*?)\s*-->\s*$", line)
    if m:
        marker = (m.group(1), m.group(2))
    elif re.match(r"^```(sh|bash|shell)\s*$", line):
        body = []
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        blocks += 1
        cmds = [l for l in body if l.strip() and not l.lstrip().startswith("#")]
        if marker:
            skips.append("%s (%s): %s" % (marker[0], marker[1], " | ".join(c.strip() for c in cmds)))
        else:
            cmd = []
            for l in body:  # logical commands: continuation lines joined
                cmd.append(l)
                if l.rstrip().endswith("\\"):
                    continue
                text = " ".join(c.rstrip("\\ ").strip() for c in cmd).split("  #")[0].strip()
                if text and not text.startswith("#"):
                    out.append("echo %s >&2" % shlex.quote("+ " + text))
                out.extend(cmd)
                cmd = []
        marker = None
    elif re.match(r"^```python\s*$", line):
        body = []
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        blocks += 1
        pyblocks += 1
        if not marker and sanitized == "1":
            marker = ("skip", "a sanitizer build: ASan cannot run inside /usr/bin/python3; "
                      "the plain build runs it")
        if marker:
            skips.append("%s (%s): python block %d" % (marker[0], marker[1], pyblocks))
        else:
            out.append("echo %s >&2" % shlex.quote("+ python block %d" % pyblocks))
            out.append("PYTHONPATH=python /usr/bin/python3 - <<'RF_README_PY'")
            out.extend(body)
            out.append("RF_README_PY")
        marker = None
    elif line.strip():
        marker = None if not line.lstrip().startswith("<!--") else marker
    i += 1
if blocks == 0:
    sys.exit("no ```sh blocks in README.md")
open(script, "w").write("\n".join(out) + "\n")
open(skipped, "w").write("\n".join(skips) + ("\n" if skips else ""))
PYEOF
while IFS= read -r s; do echo "cli_readme: not run: $s"; done <"$T/skipped.txt"
# ringfeed must not be on PATH already: the README's own line puts it there
path=$(tr ':' '\n' <<<"$PATH" | grep -v -x -e "$BUILD" -e "$(dirname "${RF_CLI:-/nonexistent}")" | paste -sd:)
if ! (cd "$T/clone" && env -u RF_CLI PATH="$path" RF_CLONE="$T/clone" HOME="$T/home" \
	XDG_CACHE_HOME="$T/cache" bash "$T/script.sh" >"$T/out" 2>"$T/err"); then
	echo "--- last commands:" >&2; grep '^+ ' "$T/err" | tail -3 >&2
	fail "a README example failed: $(grep -v '^+ ' "$T/err" | tail -5)"
fi
n=$(grep -c '^+ ' "$T/err")
[ "$n" -ge 20 ] || fail "only $n README commands ran"
py=$(grep -c '^+ python block' "$T/err" || true)
[ "$sanitized" = 1 ] || [ "$py" -ge 3 ] || fail "only $py README Python blocks ran"
grep -q 'records=200000 ' "$T/out" || fail "read --digest of the README's dataset: $(head -5 "$T/out")"
echo "cli_readme: ok ($n commands run, $py of them Python blocks)"
