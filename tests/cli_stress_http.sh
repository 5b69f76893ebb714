#!/usr/bin/env bash
# cli_stress_http.sh - the stress suite over HTTP: rf-faultproxy between the
# loader and nginx (see tests/stress.inc.sh for what is checked).
set -euo pipefail
src=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/tests/servers.inc.sh"
rf_servers_or_start
. "$src/tests/stress.inc.sh"
cp -r "$T/ds" "$T/bad"
"$PY" "$CHECK" flip "$T/bad/$BAD_SHARD" 2

# ---- HTTP through rf-faultproxy to nginx ---------------------------------------
[ -x "$proxy" ] || {
	echo "FAIL: $proxy not built" >&2
	exit 1
}
tag=cli-stress-$$
mkdir -p "$RF_NGINX_ROOT/$tag/ok" "$RF_NGINX_ROOT/$tag/bad"
rf_at_exit "rm -rf '$RF_NGINX_ROOT/$tag'"
cp "$T"/ds/shard-*.rfs "$RF_NGINX_ROOT/$tag/ok/"
cp "$T"/bad/shard-*.rfs "$RF_NGINX_ROOT/$tag/bad/"
upstream=${RF_NGINX_URL#http://}
PPID_=
PORT=
start_proxy() { # ARGS... -> PORT, PPID_
	: >"$T/proxy.out" # before the child starts: never read the last proxy's port
	"$proxy" --listen 127.0.0.1:0 --to "$upstream" "$@" >"$T/proxy.out" 2>"$T/proxy.err" &
	PPID_=$!
	rf_at_exit "kill $PPID_ 2>/dev/null || true"
	local i
	for ((i = 0; i < 200; i++)); do
		grep -q '^listening ' "$T/proxy.out" && break
		kill -0 "$PPID_" 2>/dev/null || break
		sleep 0.05
	done
	PORT=$(sed -n 's/^listening 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$T/proxy.out")
	[ -n "$PORT" ] || {
		bad "proxy $*: no port: $(cat "$T/proxy.err")"
		exit 1
	}
}
stop_proxy() {
	kill -TERM "$PPID_" 2>/dev/null || true
	wait "$PPID_" 2>/dev/null || true
}
via_proxy() { # NAME PROXY-ARGS -- READ-ARGS
	local name=$1 pargs=()
	shift
	while [ "$1" != -- ]; do
		pargs+=("$1")
		shift
	done
	shift
	start_proxy "${pargs[@]}"
	transient "$name" --connections 4 --retries 10 "$@" "http://127.0.0.1:$PORT/$tag/ok/shard-{000000..$last}.rfs"
	stop_proxy
	local sum kind
	sum=$(grep '^rf-faultproxy:' "$T/proxy.err" || true)
	echo "info $name: $sum"
	local faults
	faults=$(sed -n 's/.* \([0-9]*\) resets, \([0-9]*\) cuts.*/\1 + \2/p' <<<"$sum")
	if [[ " ${pargs[*]} " == *" --reset "* || " ${pargs[*]} " == *" --cut "* ]] &&
		[ "$((${faults:-0}))" -eq 0 ]; then # the faults asked for did happen
		bad "$name: the proxy injected no resets or cuts: $sum"
	fi
}
via_proxy "http clean" --
via_proxy "http latency 2ms" --latency 2ms --
via_proxy "http jitter 2ms+-2ms" --latency 2ms --jitter 2ms --seed 1 --
via_proxy "http stalls 100ms/150ms" --stall 100ms/150ms --
via_proxy "http bandwidth 4MiB/s" --bandwidth 4MiB --
via_proxy "http resets 10%/2KiB" --reset 0.1 --unit 2KiB --seed 2 --
via_proxy "http cut bodies 10%/2KiB" --cut 0.1 --unit 2KiB --seed 3 --
via_proxy "http all + injector" --latency 1ms --jitter 1ms --stall 20ms/100ms --bandwidth 8MiB \
	--reset 0.05 --cut 0.05 --unit 2KiB --seed 4 -- --inject seed=11,short=0.05,corrupt=0.05

# permanent over HTTP: the corrupt block, a 404, retries exhausted
start_proxy
permanent "http corrupt block on disk" "$T/bad" "http://127.0.0.1:$PORT/$tag/bad/$BAD_SHARD" \
	"block 2" "the same bytes on re-read" -- --connections 4 "http://127.0.0.1:$PORT/$tag/bad/shard-{000000..$last}.rfs"
rc=0
"$CLI" read --output raw "${common[@]}" "http://127.0.0.1:$PORT/$tag/ok/shard-{000000..$nshards}.rfs" \
	>"$T/run.raw" 2>"$T/err" || rc=$?
res=$("$PY" "$CHECK" count "$T/run.raw" "$T/ref.raw" $N)
row "http 404 (one shard missing)" "${res% order=*} stops at open"
missing="$tag/ok/shard-$(printf '%06d' "$nshards").rfs"
[ $rc = 1 ] && grep -q "$missing" "$T/err" && grep -q 404 "$T/err" && [ ! -s "$T/run.raw" ] &&
	ok "http 404: nothing delivered, message names the URL: $(cat "$T/err")" ||
	bad "http 404: exit $rc, $(stat -c %s "$T/run.raw") bytes out: $(cat "$T/err")"
stop_proxy

# a block longer than what a connection carries: one record of ~800 KB
# compressed; the proxy resets every connection at 128 KiB of its
# server->client stream, so no attempt brings that block's range whole. The
# answers carry nginx's ETag, so each attempt keeps what came and the next
# asks for the rest: the read ends with every record (before the HTTP client
# resumed cut ranges it failed with its retries exhausted, whatever their
# number: no attempt could bring the whole range). An attempt that meets a
# connection already far into its 128 KiB keeps little and uses a retry,
# so the retries are generous (test_http_servers counts them exactly).
"$PY" "$CHECK" gen "$T/big.txt" 3000 2 1700 1600000
"$CLI" pack --from lines "$T/big.txt" -o "$T/bigds" --block-size 8KiB --shard-size 48KiB >/dev/null
mkdir -p "$RF_NGINX_ROOT/$tag/big"
cp "$T"/bigds/shard-*.rfs "$RF_NGINX_ROOT/$tag/big/"
blast=$(printf '%06d' $(($(ls "$T"/bigds/shard-*.rfs | wc -l) - 1)))
ref_big=$("$CLI" read --digest "${common[@]}" "$T/bigds/manifest.rfm")
start_proxy --reset 1 --unit 256KiB
rc=0
got_big=$("$CLI" read --digest "${common[@]}" --retries 10 --request-size 4KiB --connections 2 \
	--cache off --stats "$T/big.json" "http://127.0.0.1:$PORT/$tag/big/shard-{000000..$blast}.rfs" \
	2>"$T/err") || rc=$?
stop_proxy
resumes=$(rf_json "$T/big.json" fetch_resumes 2>/dev/null || echo 0)
row "http block > a connection (resumed)" "${got_big%% bytes=*}, $resumes ranges resumed"
[ $rc = 0 ] && [ "$got_big" = "$ref_big" ] && [ "$resumes" -ge 1 ] &&
	ok "http block longer than a connection carries: $got_big, $resumes ranges resumed" ||
	bad "http block longer than a connection carries: exit $rc, '$got_big' (want '$ref_big'), $resumes resumed: $(head -c 600 "$T/err")"

stress_report cli_stress_http
