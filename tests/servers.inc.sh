# servers.inc.sh - sourced by the tests/cli_*.sh scripts that talk to the test
# servers of scripts/servers.sh (nginx, s3rver, sigv4_server, bad_http).
#
#   rf_need_env VAR...   every VAR is set, or: under scripts/test.sh
#                        (RF_REQUIRE_SERVERS=1) the test FAILS; outside it
#                        the test is skipped (exit 77) with a clear message.
#   rf_servers_or_start  uses the servers named by the environment, or starts
#                        a private set (stopped when the script exits).
#   rf_at_exit CMD       runs CMD (eval'd) when the script exits; use it rather
#                        than `trap ... EXIT`, which would replace the others.
#   rf_s3_put FILE KEY   uploads FILE to the test bucket (s3rver) as KEY.
RF_SKIP=77
RF_EXIT_CMDS=()

rf_run_exit_cmds() {
	local i
	for ((i = ${#RF_EXIT_CMDS[@]} - 1; i >= 0; i--)); do
		eval "${RF_EXIT_CMDS[i]}" || true
	done
}

rf_at_exit() {
	RF_EXIT_CMDS+=("$1")
	trap rf_run_exit_cmds EXIT
	trap 'exit 130' INT TERM # the EXIT trap then runs (CTest kills on timeout)
}

rf_need_env() {
	local v missing=()
	for v in "$@"; do
		[ -n "${!v:-}" ] || missing+=("$v")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	if [ "${RF_REQUIRE_SERVERS:-0}" = 1 ]; then
		echo "FAIL: test servers required but ${missing[*]} not set (scripts/servers.sh env)" >&2
		exit 1
	fi
	echo "SKIP: ${missing[*]} not set; run under scripts/test.sh, or:" \
		"scripts/servers.sh start DIR && . DIR/env" >&2
	exit $RF_SKIP
}

rf_servers_or_start() {
	local top=${RF_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
	if [ -n "${RF_NGINX_URL:-}" ] || [ "${RF_REQUIRE_SERVERS:-0}" = 1 ]; then
		rf_need_env RF_NGINX_URL RF_NGINX_TLS_URL RF_CA_FILE RF_NGINX_ROOT RF_S3_ENDPOINT \
			RF_S3_BUCKET RF_SIGV4_URL RF_SIGV4_ROOT RF_SIGV4_SECRET RF_SIGV4_ACCESS \
			RF_BAD_URL RF_BAD_ROOT
		return 0
	fi
	if ! command -v nginx >/dev/null || [ ! -x "$top/.cache/npm/node_modules/.bin/s3rver" ]; then
		echo "SKIP: nginx or s3rver missing (scripts/deps.sh --test)" >&2
		exit $RF_SKIP
	fi
	RF_OWN_SERVERS=$(mktemp -d "${TMPDIR:-/tmp}/rf-servers.XXXXXX")
	rf_at_exit "'$top/scripts/servers.sh' stop '$RF_OWN_SERVERS'; rm -rf '$RF_OWN_SERVERS'"
	"$top/scripts/servers.sh" start "$RF_OWN_SERVERS"
	. "$RF_OWN_SERVERS/env"
}

rf_s3_put() { # FILE KEY
	curl -sf -o /dev/null --aws-sigv4 "aws:amz:us-east-1:s3" \
		-H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' \
		--user "$RF_S3_ACCESS_KEY:$RF_S3_SECRET_KEY" -T "$1" \
		"$RF_S3_ENDPOINT/$RF_S3_BUCKET/$2"
}
