#!/usr/bin/env bash
# cli_faultproxy.sh - rf-faultproxy between curl and nginx: bytes identical
# under latency, jitter, stalls and a bandwidth cap (keep-alive kept); a
# reset makes curl fail with a reset, a cut with a short body; the same seed
# puts the same fault at the same byte; an unreachable upstream resets the
# client; bad flags are refused; SIGTERM stops it cleanly.
set -euo pipefail
src=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/tests/servers.inc.sh"
proxy=${RF_BUILD_DIR:-$src/build}/rf-faultproxy
[ -x "$proxy" ] || {
	echo "FAIL: $proxy not built" >&2
	exit 1
}
rf_servers_or_start

. "$src/tests/check.inc.sh"
check() { # DESCRIPTION EXPECTED ACTUAL
	if [ "$2" = "$3" ]; then ok "$1"; else bad "$1: expected '$2', got '$3'"; fi
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-faultproxy.XXXXXX")
rf_at_exit "rm -rf '$tmp'"
tag=cli-faultproxy-$$
mkdir -p "$RF_NGINX_ROOT/$tag"
rf_at_exit "rm -rf '$RF_NGINX_ROOT/$tag'"
head -c 2000000 /dev/urandom >"$RF_NGINX_ROOT/$tag/data.bin"
upstream=${RF_NGINX_URL#http://}
PPID_=""

start_proxy() { # ARGS... -> sets PORT and PPID_
	: >"$tmp/out"
	"$proxy" --listen 127.0.0.1:0 "$@" >"$tmp/out" 2>"$tmp/err" &
	PPID_=$!
	rf_at_exit "kill $PPID_ 2>/dev/null || true"
	local i
	for ((i = 0; i < 100; i++)); do
		grep -q '^listening ' "$tmp/out" && break
		kill -0 "$PPID_" 2>/dev/null || break
		sleep 0.05
	done
	PORT=$(sed -n 's/^listening 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$tmp/out")
	[ -n "$PORT" ] || {
		cat "$tmp/err" >&2
		bad "proxy did not report its port"
		exit 1
	}
}

stop_proxy() { # checks a clean exit on SIGTERM; the summary stays in $tmp/err
	local i rc=0
	kill -TERM "$PPID_"
	for ((i = 0; i < 100; i++)); do
		kill -0 "$PPID_" 2>/dev/null || break
		sleep 0.05
	done
	kill -0 "$PPID_" 2>/dev/null && bad "proxy still running 5 s after SIGTERM"
	wait "$PPID_" || rc=$?
	[ "$rc" = 0 ] || bad "proxy exited with $rc after SIGTERM"
}
summary() { cat "$tmp/err"; }

fetch() { # URL-PATH [CURL ARGS] -> "rc size"
	local rc=0 out
	out=$(curl -s -o "$tmp/got" -w '%{size_download}' "${@:2}" "http://127.0.0.1:$PORT/$tag/$1") || rc=$?
	echo "$rc $out"
}
same() { cmp -s "$tmp/got" "$RF_NGINX_ROOT/$tag/data.bin"; }

# Latency + jitter: same bytes, keep-alive still reuses the connection.
start_proxy --to "$upstream" --latency 20ms --jitter 10ms --seed 1
check "latency: download" "0 2000000" "$(fetch data.bin)"
same && ok "latency: bytes identical" || bad "latency: bytes differ"
conns=$(curl -s -o /dev/null -o /dev/null -w '%{num_connects} ' -r 0-99 \
	"http://127.0.0.1:$PORT/$tag/data.bin" "http://127.0.0.1:$PORT/$tag/data.bin")
check "latency: keep-alive through the proxy" "1 0 " "$conns"
stop_proxy
summary | grep -q "^rf-faultproxy: 2 connections" && ok "summary counts connections" || bad "summary: $(summary)"

# Stalls and a bandwidth cap: same bytes (several requests cross stall windows).
start_proxy --to "$upstream" --latency 2ms --stall 100ms/250ms --bandwidth 20MiB
for i in 1 2 3; do
	check "stall+bandwidth: download $i" "0 2000000" "$(fetch data.bin)"
	same && ok "stall+bandwidth: bytes identical ($i)" || bad "stall+bandwidth: bytes differ ($i)"
done
speed=$(curl -s -o /dev/null -w '%{speed_download}' "http://127.0.0.1:$PORT/$tag/data.bin")
echo "info: through --bandwidth 20MiB with stalls: $((${speed%.*} / 1048576)) MiB/s"
stop_proxy

# Reset: curl sees a reset (56); cut: a body shorter than declared (18).
start_proxy --to "$upstream" --reset 1
res=$(fetch data.bin)
check "reset: curl fails with a reset" 56 "${res%% *}"
stop_proxy
summary | grep -q "1 resets" && ok "reset: counted" || bad "reset: not counted"
start_proxy --to "$upstream" --cut 1
res=$(fetch data.bin)
check "cut: curl sees a short body" 18 "${res%% *}"
[ "${res#* }" -lt 2000000 ] && ok "cut: fewer bytes than declared" || bad "cut: got $res"
stop_proxy
summary | grep -q "1 cuts" && ok "cut: counted" || bad "cut: not counted"

# Same seed, same fault at the same byte; every fault at a unit's middle.
start_proxy --to "$upstream" --reset 0.2 --seed 5
r1=$(fetch data.bin)
stop_proxy
start_proxy --to "$upstream" --reset 0.2 --seed 5
r2=$(fetch data.bin)
stop_proxy
check "seeded reset: same outcome twice" "$r1" "$r2"
check "seeded reset: it is a reset" 56 "${r1%% *}"
hdr=$(curl -s -D - -o /dev/null "$RF_NGINX_URL/$tag/data.bin" | wc -c)
check "seeded reset: at the middle of a 16 KiB unit" 8192 "$(((${r1#* } + hdr) % 16384))"

# Upstream refuses: the client gets a reset (at connect or after), not a hang.
dead=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
start_proxy --to "127.0.0.1:$dead"
res=$(fetch data.bin --max-time 10)
case ${res%% *} in 7 | 52 | 56) ok "dead upstream: client reset ($res)" ;; *) bad "dead upstream: $res" ;; esac
stop_proxy
summary | grep -q "1 upstream failures" && ok "dead upstream: counted" || bad "dead upstream: not counted"

# Bad flags are refused with a message naming them.
rc=0
"$proxy" --listen 127.0.0.1:0 --to "$upstream" --latency 20x 2>"$tmp/err" >/dev/null || rc=$?
check "bad --latency refused" 2 "$rc"
grep -q -- "--latency" "$tmp/err" && ok "message names --latency" || bad "message: $(cat "$tmp/err")"
for args in "--listen 127.0.0.1:0" "--listen nowhere --to $upstream" "--listen 127.0.0.1:0 --to $upstream --stall 2s/1s" \
	"--listen 127.0.0.1:0 --to $upstream --reset 1.5" "--listen 127.0.0.1:0 --to $upstream --reset 0.6 --cut 0.6"; do
	rc=0
	# shellcheck disable=SC2086
	"$proxy" $args >/dev/null 2>&1 || rc=$?
	check "refused: $args" 2 "$rc"
done

rf_checks_done cli_faultproxy
