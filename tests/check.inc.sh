# check.inc.sh - the checks of the tests/cli_*.sh scripts that count their
# failures instead of stopping at the first (sourced):
#
#   ok MSG               a check that held (stdout)
#   bad MSG              a check that failed (stderr); counted
#   same DESC WANT GOT   ok when GOT is WANT, else bad naming both
#   rf_json FILE KEY     the top-level KEY of the JSON object in FILE
#   rf_checks_done [WHO] exits 1 naming the count when a check failed, else
#                        says "[WHO: ]all checks passed"
fails=0
ok() { echo "ok   $*"; }
bad() {
	echo "FAIL $*" >&2
	fails=$((fails + 1))
}
same() { # DESCRIPTION EXPECTED ACTUAL
	if [ "$2" = "$3" ]; then ok "$1"; else bad "$1: expected '$2', got '$3'"; fi
}
rf_json() { # FILE KEY
	/usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"
}
rf_checks_done() {
	if [ "$fails" -ne 0 ]; then
		echo "$fails check(s) failed" >&2
		exit 1
	fi
	echo "${1:+$1: }all checks passed"
}
