#!/usr/bin/env bash
# cli_address_space.sh - under an address-space limit (RLIMIT_AS, prlimit
# --as) ringfeed stays within what docs/design.md states: its budget, plus
# 64 MiB of glibc malloc arena and 2 MiB of stack per thread, plus the
# libraries (stated: 96 MiB). At that bound a read of 4 x its budget gives
# the whole digest, 3 runs of 3; far below it, a read either completes or
# fails naming RLIMIT_AS and what to do, never a short read with exit 0;
# with MALLOC_ARENA_MAX=2 (the remedy the message gives) the tight limit
# reads whole. A sanitizer build maps terabytes of shadow: skipped there.
set -euo pipefail
src=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/tests/check.inc.sh"
cli=${RF_CLI:?RF_CLI must name the ringfeed binary}
if grep -q '^RF_SANITIZE:BOOL=ON' "${RF_BUILD_DIR:-/nonexistent}/CMakeCache.txt" 2>/dev/null; then
	echo "skip: a sanitizer build reserves terabytes of shadow memory (RLIMIT_AS cannot apply)"
	exit 77
fi
command -v prlimit >/dev/null || { echo "skip: no prlimit (util-linux)"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-as.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"$cli" pack --demo -o "$tmp/ds" --demo-bytes 64MiB --demo-shards 4 >/dev/null
budget_mib=48
threads=2
want=$("$cli" read --digest --budget ${budget_mib}MiB --threads $threads "$tmp/ds" | tail -n 1)
bound_mib=$((budget_mib + (threads + 1) * (64 + 2) + 96))
for run in 1 2 3; do
	got=$(prlimit --as=$((bound_mib << 20)) "$cli" read --digest --budget ${budget_mib}MiB \
		--threads $threads "$tmp/ds" 2>"$tmp/err" | tail -n 1) || true
	same "RLIMIT_AS at the stated bound ($bound_mib MiB), run $run" "$want" "$got"
done
named=0
for tight_mib in $((budget_mib + 112)) $((budget_mib + 122)) $((budget_mib + 132)); do
	rc=0
	prlimit --as=$((tight_mib << 20)) "$cli" read --digest --budget ${budget_mib}MiB \
		--threads $threads "$tmp/ds" >"$tmp/out" 2>"$tmp/err" || rc=$?
	if [ $rc -eq 0 ]; then
		same "tight RLIMIT_AS ($tight_mib MiB), whole or nothing" "$want" "$(tail -n 1 "$tmp/out")"
	elif grep -q "RLIMIT_AS" "$tmp/err"; then
		ok "tight RLIMIT_AS ($tight_mib MiB): fails naming it: $(head -c 160 "$tmp/err")"
		named=$((named + 1))
	else
		bad "tight RLIMIT_AS ($tight_mib MiB): rc $rc without naming RLIMIT_AS: $(cat "$tmp/err")"
	fi
done
echo "tight limits that failed naming RLIMIT_AS: $named of 3 (the others read whole)"
got=$(MALLOC_ARENA_MAX=2 prlimit --as=$((tight_mib << 20)) "$cli" read --digest \
	--budget ${budget_mib}MiB --threads $threads "$tmp/ds" 2>"$tmp/err" | tail -n 1) || true
same "tight RLIMIT_AS with MALLOC_ARENA_MAX=2" "$want" "$got"
rf_checks_done
