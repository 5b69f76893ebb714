#!/usr/bin/env bash
# cli_qa.sh - the QA findings on the command line, each checked as found:
# - no password or presigned query of a URL-shaped name appears in what
#   inspect, verify (text and --json), read (--resume, --stats, --trace) and
#   pack --from lines print; inspect refuses a URL and points to verify;
# - a float flag refuses NaN and infinity (bench --step-ms and --inject's
#   durations, a SECONDS loader option) instead of hanging;
# - read --json prints one JSON object on stdout when the read cannot start;
# - verify: no NAME is usage (2), a NAME that expands to nothing is counted as
#   a failed name (not as a damaged shard); `--` ends the options of read,
#   verify, bench and inspect; a .rfm without the manifest line is called
#   not a manifest; sim prints rounding noise as 0; pack -o DIR/ joins paths
#   without a double slash.
# Local only (nothing listens on 127.0.0.1:1).
set -uo pipefail
CLI=${RF_CLI:?set RF_CLI to the ringfeed binary}
PY=/usr/bin/python3
fails=0
bad() {
	echo "FAIL $*" >&2
	fails=$((fails + 1))
}
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-qa.XXXXXX")
trap 'rm -rf "$T"' EXIT
SECRET=PASSWORDQA
SIG=SIGNATUREQA
U="http://u:$SECRET@127.0.0.1:1"
Q="?X-Amz-Signature=$SIG"

# run NAME RC ARGS...: runs the CLI (10 s at most), output in $T/NAME.out/.err
run() {
	local name=$1 want=$2
	shift 2
	local rc=0
	timeout 20 "$CLI" "$@" >"$T/$name.out" 2>"$T/$name.err" </dev/null || rc=$?
	[ "$rc" = "$want" ] || bad "$name: exit $rc, wanted $want: $(head -c 400 "$T/$name.err")"
}
# clean NAME: neither the password nor the signature in its output
clean() {
	if grep -q -e "$SECRET" -e "$SIG" "$T/$1.out" "$T/$1.err"; then
		bad "$1: a secret in the output: $(grep -h -e "$SECRET" -e "$SIG" "$T/$1.out" "$T/$1.err" | head -3)"
	fi
}
has() { grep -q -e "$2" "$T/$1.out" "$T/$1.err" || bad "$1: no '$2' in: $(cat "$T/$1.out" "$T/$1.err" | head -c 600)"; }

# 1. secrets
run inspect_url 2 inspect "$U/x.rfs$Q"
clean inspect_url
has inspect_url "use \`ringfeed verify\` for URLs"
run verify_url 1 verify --retries 0 "$U/manifest.rfm$Q"
clean verify_url
run verify_url_json 1 verify --json --retries 0 "$U/manifest.rfm$Q"
clean verify_url_json
"$PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["results"][0]["path"].startswith("http://127.0.0.1:1/"), j' \
	"$T/verify_url_json.out" || bad "verify --json path: $(cat "$T/verify_url_json.out")"
run read_resume 2 read --resume "$U/state$Q" "$T/none.rfs"
clean read_resume
printf 'a\nb\n' >"$T/in.txt"
mkdir -p "$T/ds"
"$CLI" pack --from lines -o "$T/ds" "$T/in.txt" >/dev/null 2>&1 || bad "pack of two lines"
run read_stats 1 read --stats "$U/stats$Q" "$T/ds"
clean read_stats
run read_trace 1 read --trace "$U/trace$Q" "$T/ds"
clean read_trace
run pack_lines 1 pack --from lines -o "$T/out" "$U/lines$Q"
clean pack_lines

# 2. NaN and infinity
for v in nan inf -nan infinity; do
	run "bench_step_$v" 2 bench --step-ms "$v" --batches 5 "$T/ds"
	has "bench_step_$v" "step-ms"
	run "read_cover_$v" 2 read --cover "$v" "$T/ds"
done
run bench_inject_inf 1 bench --inject "stall=inf/1" --batches 5 "$T/ds"
has bench_inject_inf "bad value 'inf/1'"

# 3. read --json when the read cannot start
run read_json_missing 1 read --json "$T/nonexist"
"$PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["status"]==1 and "nonexist" in j["error"], j' \
	"$T/read_json_missing.out" || bad "read --json of a missing name: '$(cat "$T/read_json_missing.out")'"
run read_json_usage 2 read --json --no-such-flag "$T/ds"
"$PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["status"]==2 and "no-such-flag" in j["error"], j' \
	"$T/read_json_usage.out" || bad "read --json of a bad flag: '$(cat "$T/read_json_usage.out")'"

# 4. minor
run verify_none 2 verify
grep -q "2 bad usage (no NAME given" <("$CLI" verify --help) || bad "verify --help: no NAME is usage"
printf '%s\n' '# ringfeed manifest v1' >"$T/empty.rfm"
run verify_empty 1 verify "$T/empty.rfm"
grep -q "1 damaged" "$T/verify_empty.out" && bad "verify of an empty manifest counts a damaged shard: $(cat "$T/verify_empty.out")"
has verify_empty "0 shards, 0 damaged, 1 name failed"
cp "$T/ds/shard-000000.rfs" "$T/-x.rfs"
(cd "$T" && timeout 20 "$CLI" read --digest -- -x.rfs >"$T/dd_read.out" 2>&1) || bad "read -- -x.rfs: $(cat "$T/dd_read.out")"
grep -q "records=2" "$T/dd_read.out" || bad "read -- -x.rfs: $(cat "$T/dd_read.out")"
(cd "$T" && timeout 20 "$CLI" verify -- -x.rfs >"$T/dd_verify.out" 2>&1) || bad "verify -- -x.rfs: $(cat "$T/dd_verify.out")"
(cd "$T" && timeout 20 "$CLI" inspect -- -x.rfs >"$T/dd_inspect.out" 2>&1) || bad "inspect -- -x.rfs: $(cat "$T/dd_inspect.out")"
(cd "$T" && timeout 20 "$CLI" bench --batches 2 -- -x.rfs >"$T/dd_bench.out" 2>&1) || bad "bench -- -x.rfs: $(cat "$T/dd_bench.out")"
printf '# r' >"$T/three.rfm"
run rfm_verify 1 verify "$T/three.rfm"
has rfm_verify "not a manifest (no '# ringfeed manifest v1' line)"
run rfm_inspect 1 inspect "$T/three.rfm"
has rfm_inspect "not a manifest (no '# ringfeed manifest v1' line)"
run sim_noise 0 sim --mu 10 --lambda 5 --initial 3
grep -Eq '[0-9]e-[0-9]' "$T/sim_noise.out" && bad "sim prints rounding noise: $(grep -E '[0-9]e-[0-9]' "$T/sim_noise.out" | head -2)"
run pack_slash 0 pack --from lines -o "$T/ds2/" "$T/in.txt"
grep -q '//' "$T/pack_slash.out" && bad "pack -o DIR/: $(cat "$T/pack_slash.out")"
has pack_slash "$T/ds2/manifest.rfm"
run pack_slash_json 0 pack --json --from lines -o "$T/ds3/" "$T/in.txt"
grep -q 'ds3//' "$T/pack_slash_json.out" && bad "pack --json -o DIR/: $(cat "$T/pack_slash_json.out")"

[ "$fails" = 0 ] || { echo "cli_qa: $fails check(s) failed" >&2; exit 1; }
echo "cli_qa: all checks passed"
