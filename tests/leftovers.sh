#!/usr/bin/env bash
# leftovers.sh before|after - the ctest fixture that finds processes a test
# started and left running (a test stops what it starts, on failure too).
# CTest runs `before` ahead of every test and `after` once all have ended
# (FIXTURES_SETUP / FIXTURES_CLEANUP rf_leftovers, CMakeLists.txt), also
# under `ctest -R NAME`.
#
# A test's process is one whose program is in this build tree (ringfeed,
# rf-faultproxy, a test binary) or whose arguments name this tree's test
# servers (tests/servers/*.py) or its s3rver (.cache/npm): paths of this
# tree only, so another checkout's processes are never looked at. `before`
# records those already running (the servers of scripts/servers.sh, say);
# `after` waits a bounded time (about 10 s) for the others to exit, then
# names each one still alive (pid, command, working directory), ends it
# (TERM, then KILL) and fails.
set -euo pipefail
mode=${1:?usage: leftovers.sh before|after}
src=${RF_SOURCE_DIR:?RF_SOURCE_DIR must name the source tree}
build=${RF_BUILD_DIR:?RF_BUILD_DIR must name the build tree}
state=$build/leftovers.before
WAIT_TRIES=20 # x 0.25 s, plus a scan of /proc each (about 10 s in all)

# ours: the pids of this tree's test processes (not this script: its
# program is bash; ctest's is not in the build tree either)
ours() {
	local d pid a0 st
	for d in /proc/[0-9]*; do
		pid=${d#/proc/}
		[ "$pid" = $$ ] && continue
		IFS= read -r -d "" a0 2>/dev/null <"$d/cmdline" || continue
		case "$a0" in
		"$build"/*) ;;
		*) continue ;;
		esac
		read -r _ _ st _ 2>/dev/null <"$d/stat" || continue
		[ "$st" = Z ] || echo "$pid"
	done
	# the servers: one grep over every command line (arguments are NUL-separated)
	grep -lsaF -e "$src/tests/servers/" -e "$src/.cache/npm/" /proc/[0-9]*/cmdline 2>/dev/null |
		while IFS=/ read -r _ _ pid _; do
			[ "$pid" = $$ ] && continue
			read -r _ _ st _ 2>/dev/null <"/proc/$pid/stat" || continue
			[ "$st" = Z ] || echo "$pid"
		done || true # grep: no match
}

case "$mode" in
before)
	ours >"$state.tmp"
	mv "$state.tmp" "$state"
	echo "leftovers: $(wc -l <"$state") process(es) of this tree running before the tests"
	;;
after)
	known=$(cat "$state" 2>/dev/null || true)
	left=()
	for ((i = 0; i < WAIT_TRIES; i++)); do
		left=()
		for pid in $(ours); do
			grep -qx "$pid" <<<"$known" || left+=("$pid")
		done
		[ ${#left[@]} -eq 0 ] && break
		sleep 0.25
	done
	if [ ${#left[@]} -eq 0 ]; then
		echo "leftovers: no test left a process running"
		exit 0
	fi
	for pid in "${left[@]}"; do
		echo "FAIL: a test left pid $pid running: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null |
			cut -c1-300) (cwd $(readlink "/proc/$pid/cwd" 2>/dev/null || echo '?'))" >&2
	done
	kill -TERM "${left[@]}" 2>/dev/null || true
	sleep 1
	kill -KILL "${left[@]}" 2>/dev/null || true
	echo "leftovers: ${#left[@]} process(es) left running by the tests (ended now)" >&2
	exit 1
	;;
*)
	echo "usage: leftovers.sh before|after" >&2
	exit 2
	;;
esac
