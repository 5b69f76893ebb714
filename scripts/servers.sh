#!/usr/bin/env bash
# servers.sh start|stop DIR - the real servers the object-storage and fault
# tests run against, all on 127.0.0.1 at free ports, all state under DIR:
#   nginx (plain HTTP and HTTPS with a self-signed cert made here) over DIR/www
#   s3rver (npm, installed by scripts/deps.sh --test into .cache/npm), bucket ringfeed
#   tests/servers/sigv4_server.py: S3-like, checks every SigV4 signature
#   tests/servers/bad_http.py: misbehaves by path prefix (error tests)
# `start` waits (bounded) until each answers, then writes DIR/env (shell
# exports, see the end of this file; `. DIR/env` to use them). `stop` ends
# everything `start` started (pid files under DIR/run) and is idempotent.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
PY=/usr/bin/python3
WAIT_TRIES=150 # x 0.1 s: how long one server may take to answer
S3_ACCESS=S3RVER S3_SECRET=S3RVER S3_BUCKET=ringfeed
SIGV4_ACCESS=RFTESTACCESS SIGV4_SECRET=rf-test-secret/sigv4-0123456789 SIGV4_BUCKET=ringfeed
SIGV4_PAGE_KEYS=3 BAD_STALL_S=10

die() {
	echo "servers.sh: $*" >&2
	exit 1
}

free_port() {
	$PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

running() { # PID: alive and not a zombie (a child whose parent is gone may
	# linger as one until init reaps it)
	kill -0 "$1" 2>/dev/null && [ "$(ps -o stat= -p "$1" 2>/dev/null | cut -c1)" != Z ]
}

alive() { # pidfile
	[ -s "$1" ] && running "$(cat "$1")"
}

# wait_for NAME PIDFILE LOG CMD...: retries CMD until it succeeds (bounded).
wait_for() {
	local name=$1 pidfile=$2 log=$3 i
	shift 3
	for ((i = 0; i < WAIT_TRIES; i++)); do
		"$@" >/dev/null 2>&1 && return 0
		if ! alive "$pidfile"; then
			tail -n 20 "$log" >&2 || true
			die "$name exited during start-up (log: $log)"
		fi
		sleep 0.1
	done
	tail -n 20 "$log" >&2 || true
	die "$name did not answer within $((WAIT_TRIES / 10)) s (log: $log)"
}

wait_port_file() { # NAME PIDFILE LOG PORTFILE
	wait_for "$1" "$2" "$3" test -s "$4"
	cat "$4"
}

make_cert() {
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost \
		-addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
		-addext "basicConstraints=critical,CA:TRUE" \
		-keyout "$D/tls/key.pem" -out "$D/tls/cert.pem" >"$D/logs/openssl.log" 2>&1 ||
		{
			cat "$D/logs/openssl.log" >&2
			die "openssl could not make the test certificate"
		}
}

nginx_conf() { # PORT TLSPORT
	local user=""
	[ "$(id -u)" = 0 ] && user="user root;"
	cat <<EOF
$user
daemon off;
worker_processes 1;
pid $D/run/nginx.pid;
error_log $D/logs/nginx-error.log warn;
events { worker_connections 1024; }
http {
	default_type application/octet-stream;
	access_log $D/logs/nginx-access.log;
	client_body_temp_path $D/run/nginx-body;
	proxy_temp_path $D/run/nginx-proxy;
	fastcgi_temp_path $D/run/nginx-fastcgi;
	uwsgi_temp_path $D/run/nginx-uwsgi;
	scgi_temp_path $D/run/nginx-scgi;
	sendfile on;
	tcp_nopush on;
	keepalive_timeout 65s;
	keepalive_requests 100000;
	server {
		listen 127.0.0.1:$1;
		root $D/www;
	}
	server {
		listen 127.0.0.1:$2 ssl;
		ssl_certificate $D/tls/cert.pem;
		ssl_certificate_key $D/tls/key.pem;
		root $D/www;
	}
}
EOF
}

start_nginx() {
	local try port tport
	for try in 1 2 3; do # a picked port can be taken before nginx binds it
		port=$(free_port)
		tport=$(free_port)
		[ "$port" != "$tport" ] || continue
		nginx_conf "$port" "$tport" >"$D/nginx.conf"
		nginx -t -q -p "$D" -c "$D/nginx.conf" -e "$D/logs/nginx-error.log" ||
			die "nginx rejected $D/nginx.conf"
		nginx -p "$D" -c "$D/nginx.conf" -e "$D/logs/nginx-error.log" \
			>>"$D/logs/nginx.out" 2>&1 &
		echo $! >"$D/run/nginx.pid.start"
		local i
		for ((i = 0; i < WAIT_TRIES; i++)); do
			curl -s -o /dev/null "http://127.0.0.1:$port/" &&
				curl -s -o /dev/null --cacert "$D/tls/cert.pem" \
					"https://127.0.0.1:$tport/" && break
			alive "$D/run/nginx.pid.start" || break
			sleep 0.1
		done
		if alive "$D/run/nginx.pid.start" && ((i < WAIT_TRIES)); then
			NGINX_PORT=$port NGINX_TLS_PORT=$tport
			return 0
		fi
		kill "$(cat "$D/run/nginx.pid.start")" 2>/dev/null || true
		grep -q "Address already in use" "$D/logs/nginx-error.log" 2>/dev/null ||
			grep -q "Address already in use" "$D/logs/nginx.out" 2>/dev/null || break
	done
	tail -n 20 "$D/logs/nginx-error.log" "$D/logs/nginx.out" >&2 || true
	die "nginx did not start (logs under $D/logs)"
}

start_s3rver() {
	local bin=$top/.cache/npm/node_modules/.bin/s3rver
	[ -x "$bin" ] || die "s3rver is not installed ($bin); run scripts/deps.sh --test"
	# s3rver makes continuation tokens with DES, which OpenSSL 3 only has in its
	# legacy provider: without it every truncated listing is a 500.
	NODE_OPTIONS=--openssl-legacy-provider "$bin" -d "$D/s3" -a 127.0.0.1 -p 0 \
		--configure-bucket "$S3_BUCKET" \
		>"$D/logs/s3rver.log" 2>&1 &
	echo $! >"$D/run/s3rver.pid"
	wait_for s3rver "$D/run/s3rver.pid" "$D/logs/s3rver.log" \
		grep -q "S3rver listening on 127.0.0.1:" "$D/logs/s3rver.log"
	S3_PORT=$(sed -n 's/.*S3rver listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$D/logs/s3rver.log" | head -n1)
	[ -n "$S3_PORT" ] || die "could not read s3rver's port from $D/logs/s3rver.log"
	wait_for s3rver "$D/run/s3rver.pid" "$D/logs/s3rver.log" \
		curl -s -o /dev/null "http://127.0.0.1:$S3_PORT/"
}

start_sigv4() {
	$PY "$top/tests/servers/sigv4_server.py" --root "$D/sigv4" --port 0 \
		--port-file "$D/run/sigv4.port" --access-key "$SIGV4_ACCESS" \
		--secret-key "$SIGV4_SECRET" --bucket "$SIGV4_BUCKET" \
		--max-keys-cap "$SIGV4_PAGE_KEYS" --verbose >"$D/logs/sigv4.log" 2>&1 &
	echo $! >"$D/run/sigv4.pid"
	SIGV4_PORT=$(wait_port_file sigv4_server "$D/run/sigv4.pid" "$D/logs/sigv4.log" "$D/run/sigv4.port")
	wait_for sigv4_server "$D/run/sigv4.pid" "$D/logs/sigv4.log" \
		curl -sf -o /dev/null "http://127.0.0.1:$SIGV4_PORT/_stats"
}

start_bad() {
	$PY "$top/tests/servers/bad_http.py" --root "$D/bad" --port 0 \
		--port-file "$D/run/bad.port" --stall-s "$BAD_STALL_S" \
		>"$D/logs/bad_http.log" 2>&1 &
	echo $! >"$D/run/bad.pid"
	BAD_PORT=$(wait_port_file bad_http "$D/run/bad.pid" "$D/logs/bad_http.log" "$D/run/bad.port")
	wait_for bad_http "$D/run/bad.pid" "$D/logs/bad_http.log" \
		curl -sf -o /dev/null "http://127.0.0.1:$BAD_PORT/_stats"
}

write_env() {
	cat >"$D/env.tmp" <<EOF
# written by scripts/servers.sh start; stop with: scripts/servers.sh stop $D
export RF_SERVERS_DIR='$D'
export RF_NGINX_URL='http://127.0.0.1:$NGINX_PORT'
export RF_NGINX_TLS_URL='https://127.0.0.1:$NGINX_TLS_PORT'
export RF_NGINX_TLS_HOST_URL='https://localhost:$NGINX_TLS_PORT'
export RF_CA_FILE='$D/tls/cert.pem'
export RF_NGINX_ROOT='$D/www'
export RF_S3_ENDPOINT='http://127.0.0.1:$S3_PORT'
export RF_S3_BUCKET='$S3_BUCKET'
export RF_S3_DIR='$D/s3'
export RF_S3_ACCESS_KEY='$S3_ACCESS'
export RF_S3_SECRET_KEY='$S3_SECRET'
export RF_S3_REGION='us-east-1'
export RF_SIGV4_URL='http://127.0.0.1:$SIGV4_PORT'
export RF_SIGV4_ROOT='$D/sigv4'
export RF_SIGV4_BUCKET='$SIGV4_BUCKET'
export RF_SIGV4_ACCESS='$SIGV4_ACCESS'
export RF_SIGV4_SECRET='$SIGV4_SECRET'
export RF_SIGV4_REGION='us-east-1'
export RF_SIGV4_PAGE_KEYS='$SIGV4_PAGE_KEYS'
export RF_BAD_URL='http://127.0.0.1:$BAD_PORT'
export RF_BAD_ROOT='$D/bad'
export RF_BAD_STALL_S='$BAD_STALL_S'
EOF
	mv "$D/env.tmp" "$D/env"
}

start() {
	[ -e "$D/run/started" ] && die "servers already started in $D (stop them first)"
	mkdir -p "$D"/{www,s3,sigv4,bad,tls,logs,run}
	D=$(cd "$D" && pwd)
	touch "$D/run/started"
	trap 'rc=$?; [ $rc -eq 0 ] || { echo "servers.sh: start failed; stopping what started" >&2; stop; }' EXIT
	command -v nginx >/dev/null || die "nginx not found (scripts/deps.sh --test)"
	make_cert
	start_nginx
	start_s3rver
	start_sigv4
	start_bad
	write_env
	trap - EXIT
	echo "servers.sh: nginx :$NGINX_PORT (tls :$NGINX_TLS_PORT), s3rver :$S3_PORT," \
		"sigv4 :$SIGV4_PORT, bad_http :$BAD_PORT; env in $D/env" >&2
}

stop_one() { # PIDFILE
	local f=$1 pid i
	[ -s "$f" ] || return 0
	pid=$(cat "$f")
	if kill -TERM "$pid" 2>/dev/null; then
		for ((i = 0; i < 50; i++)); do
			running "$pid" || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$f"
}

stop() {
	[ -d "$D/run" ] || return 0
	local f
	for f in "$D"/run/nginx.pid.start "$D"/run/s3rver.pid "$D"/run/sigv4.pid "$D"/run/bad.pid; do
		stop_one "$f"
	done
	rm -f "$D/run/started" "$D/run/nginx.pid" "$D/run/"*.port "$D/env"
}

[ $# -eq 2 ] || die "usage: servers.sh start|stop DIR"
D=$2
case $1 in
start) start ;;
stop) stop ;;
*) die "usage: servers.sh start|stop DIR" ;;
esac
