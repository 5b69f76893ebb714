#!/usr/bin/env bash
# cli_fuzz.sh - the short fuzz run of the test command: builds the libFuzzer
# targets (fuzz/fuzz_*.c) with clang, ASan and UBSan in their own build
# folder (kept between runs, so only changed files rebuild), replays every
# past crash in fuzz/regressions/NAME/, then fuzzes each target for a
# bounded time from its seed corpus fuzz/corpus/NAME/. Any crash, leak,
# sanitizer report, timeout or memory blow-up fails the test and leaves the
# input under the build folder's artifacts/. Skipped (exit 77) only when clang
# is absent; scripts/deps.sh --test installs it. The longer run: docs/fuzzing.md.
#   RF_FUZZ_SECONDS   per-target fuzzing time (default 5; the suite runs it in both builds)
#   RF_FUZZ_BUILD_DIR the build folder (default SOURCE/build-fuzz)
set -euo pipefail
src=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
seconds=${RF_FUZZ_SECONDS:-5}
dir=${RF_FUZZ_BUILD_DIR:-$src/build-fuzz}

clang=$(command -v clang || command -v clang-14 || true)
if [ -z "$clang" ]; then
	echo "cli_fuzz: SKIPPED: clang is not installed (scripts/deps.sh --test installs clang and libclang-rt-14-dev)"
	exit 77
fi

mkdir -p "$dir"
exec 9>"$dir/.lock"
flock -w 600 9 || { echo "FAIL cli_fuzz: $dir is locked by another run" >&2; exit 1; }

# Configure once; later runs rebuild only what changed.
if [ ! -f "$dir/CMakeCache.txt" ] || ! grep -q "^RF_FUZZ:BOOL=ON" "$dir/CMakeCache.txt"; then
	# RF_WERROR=OFF: the gcc builds are the warnings gate; a clang-only
	# warning must not hide what the fuzzers find.
	cmake -S "$src" -B "$dir" -DCMAKE_C_COMPILER="$clang" -DRF_FUZZ=ON -DRF_TESTS=OFF \
		-DRF_WERROR=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$dir/configure.log" 2>&1 ||
		{ cat "$dir/configure.log" >&2; echo "FAIL cli_fuzz: configure" >&2; exit 1; }
else
	# Regenerate (cheap, keeps the cache): a new fuzz/fuzz_*.c is a new target.
	cmake -S "$src" -B "$dir" >"$dir/configure.log" 2>&1 ||
		{ cat "$dir/configure.log" >&2; echo "FAIL cli_fuzz: configure" >&2; exit 1; }
fi
targets=()
for c in "$src"/fuzz/fuzz_*.c; do
	t=$(basename "$c" .c)
	targets+=("$t")
done
cmake --build "$dir" -j2 --target "${targets[@]}" >"$dir/build.log" 2>&1 ||
	{ tail -40 "$dir/build.log" >&2; echo "FAIL cli_fuzz: build (see $dir/build.log)" >&2; exit 1; }

# A small quarantine keeps each fuzzer's memory low on a shared machine.
export ASAN_OPTIONS=detect_leaks=1:quarantine_size_mb=32:malloc_context_size=20
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
work=$(mktemp -d "${TMPDIR:-/tmp}/rf-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$dir/artifacts"
fails=0
flags=(-rss_limit_mb=1024 -timeout=5 -print_final_stats=1)
printf '%-14s %6s %6s %12s %10s\n' target seeds regr execs execs/s
for t in "${targets[@]}"; do
	name=${t#fuzz_}
	seeds=$src/fuzz/corpus/$name
	regr=$src/fuzz/regressions/$name
	[ -d "$seeds" ] || { echo "FAIL $t: no seed corpus $seeds" >&2; fails=$((fails + 1)); continue; }
	nregr=0
	if [ -d "$regr" ] && [ -n "$(ls -A "$regr")" ]; then
		nregr=$(ls -A "$regr" | wc -l)
		if ! "$dir/$t" "${flags[@]}" "$regr"/* >"$work/$name.replay" 2>&1; then
			tail -30 "$work/$name.replay" >&2
			echo "FAIL $t: a past crash in $regr crashes again" >&2
			fails=$((fails + 1))
			continue
		fi
	fi
	mkdir -p "$work/$name"
	if ! "$dir/$t" "${flags[@]}" -max_total_time="$seconds" \
		-artifact_prefix="$dir/artifacts/$name-" "$work/$name" "$seeds" >"$work/$name.log" 2>&1; then
		tail -40 "$work/$name.log" >&2
		echo "FAIL $t: crash; input kept in $dir/artifacts/ (reproduce: $dir/$t FILE;" \
			"add it to fuzz/regressions/$name/ with the fix and a unit test)" >&2
		fails=$((fails + 1))
		continue
	fi
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$name.log")
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/$name.log")
	printf '%-14s %6s %6s %12s %10s\n' "$t" "$(ls -A "$seeds" | wc -l)" "$nregr" "$execs" "$rate"
	if [ -z "$execs" ] || [ "$execs" -lt 1 ]; then
		echo "FAIL $t: ran no inputs" >&2
		fails=$((fails + 1))
	fi
done
[ "$fails" -eq 0 ] || { echo "cli_fuzz: $fails target(s) failed" >&2; exit 1; }
echo "cli_fuzz: ${#targets[@]} targets, ${seconds}s each, no crash"
