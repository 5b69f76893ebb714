#!/usr/bin/env bash
# cli_node_cgroup.sh - a process in a real cgroup whose CPU quota is one CPU
# (v2 cpu.max "100000 100000", or v1 cpu.cfs_quota_us where the cpu
# controller is mounted as v1) gets one decode thread by default, however
# many cores the machine shows, and the stats say the quota was the reason.
# Needs root and a cgroup hierarchy it may make a child in: skipped (77)
# with the reason where it cannot.
set -euo pipefail
src=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/tests/check.inc.sh"
cli=${RF_CLI:?RF_CLI must name the ringfeed binary}
PY=/usr/bin/python3
skip() {
	echo "skip: $*"
	exit 77
}
[ "$(id -u)" = 0 ] || skip "not root: cannot make a cgroup"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-node-cg.XXXXXX")
cg=""
cleanup() {
	[ -n "$cg" ] && [ -d "$cg" ] && rmdir "$cg" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
# a cgroup v2 mount whose root offers the cpu controller, else a v1 cpu mount
v2=$(awk '$0 ~ / - cgroup2 / {print $5; exit}' /proc/self/mountinfo)
v1=$(awk '{for (i = 1; i <= NF; i++) if ($i == "-") break} $(i+1) == "cgroup" && $(i+3) ~ /(^|,)cpu(,|$)/ {print $5; exit}' /proc/self/mountinfo)
kind=""
if [ -n "$v2" ] && grep -qw cpu "$v2/cgroup.controllers" 2>/dev/null; then
	echo +cpu >"$v2/cgroup.subtree_control" 2>/dev/null || true
	cg=$v2/rf-test-$$
	if mkdir "$cg" 2>/dev/null && echo "100000 100000" >"$cg/cpu.max" 2>/dev/null; then
		kind="cgroup v2 cpu.max"
	else
		rmdir "$cg" 2>/dev/null || true
		cg=""
	fi
fi
if [ -z "$kind" ] && [ -n "$v1" ]; then
	cg=$v1/rf-test-$$
	if mkdir "$cg" 2>/dev/null && echo 100000 >"$cg/cpu.cfs_period_us" &&
		echo 100000 >"$cg/cpu.cfs_quota_us" 2>/dev/null; then
		kind="cgroup v1 cpu.cfs_quota_us"
	else
		rmdir "$cg" 2>/dev/null || true
		cg=""
	fi
fi
[ -n "$kind" ] || skip "no cgroup hierarchy with a cpu controller this test may make a child in"
"$cli" pack --demo -o "$tmp/ds" --demo-bytes 1MiB --demo-shards 1 >/dev/null
# the child joins the cgroup, then becomes ringfeed
env -u LOCAL_WORLD_SIZE sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$cg" \
	"$cli" bench --json "$tmp/ds" >"$tmp/out.json" 2>"$tmp/err" || bad "bench in the cgroup: $(cat "$tmp/err")"
threads=$($PY -c "import json,sys; print(json.load(open(sys.argv[1]))['loader']['threads'])" "$tmp/out.json")
source=$($PY -c "import json,sys; print(json.load(open(sys.argv[1]))['loader']['threads_source'])" "$tmp/out.json")
same "one CPU of quota ($kind) on $(nproc) cores: threads" 1 "$threads"
grep -q "$kind 1.00" <<<"$source" && ok "threads_source names the quota: $source" ||
	bad "threads_source: '$source'"
rf_checks_done
