#!/usr/bin/env bash
# cli_creds.sh - the AWS credential chain against stand-in servers, with
# credentials that expire within seconds while a read lasts longer.
#
# sigv4_server.py (--issued-master) checks every signature and accepts the
# temporary credentials that creds_server.py issues (STS AssumeRole and
# AssumeRoleWithWebIdentity, container credentials, IMDSv2) until they
# expire, then answers 400 ExpiredToken as S3 does. A read throttled by the
# fault injector (latency per read, one connection) outlives several
# credential lifetimes. Each source must give the local digest with zero
# failed requests, the refreshes must show in the issuer's counters, and no
# secret (issued keys, secrets, tokens; the web identity token; the
# container token; the source profile's secret) may appear in stderr, the
# stats JSON or the trace. Then: the profile's static keys and
# credential_process; a source that fails names itself, not its secret; the
# chain that finds nothing reads anonymously and its 403 says what was tried;
# --no-sign-request sends unsigned even with keys in the environment; an
# unreachable IMDS costs a bounded time. Nothing here contacts a real AWS or
# IMDS address (AWS_EC2_METADATA_DISABLED or a local stand-in, always).
#
# Starts its own servers (python3 only). Timing decides nothing.
set -euo pipefail
src=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/tests/servers.inc.sh"
cli=${RF_CLI:?RF_CLI must name the ringfeed binary}
PY=/usr/bin/python3
TS=$src/tests/servers
guard_s=90 # a hang guard far above the seconds expected

. "$src/tests/check.inc.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-creds.XXXXXX")
rf_at_exit "rm -rf '$tmp'"
mkdir -p "$tmp/root/ringfeed/ds" "$tmp/home"
MASTER=rf-master-$$-not-shown
WEBTOK=rf-web-identity-token-SECRET-$$
CTOK=rf-container-token-SECRET-$$
SRC_AK=AKIARFSOURCE$$
SRC_SK=rf-source-secret-SECRET-$$
ROLE=arn:aws:iam::123456789012:role/rf-test-role
printf '%s\n' "$WEBTOK" >"$tmp/webtok"
printf '%s\n' "$CTOK" >"$tmp/ctok"

# start NAME CMD...: a server writing its port to $tmp/NAME.port; port in $port
start() {
	local name=$1
	shift
	"$@" --port 0 --port-file "$tmp/$name.port" >"$tmp/$name.log" 2>&1 &
	rf_at_exit "kill $! 2>/dev/null; wait $! 2>/dev/null"
	for _ in $(seq 100); do
		[ -s "$tmp/$name.port" ] && break
		sleep 0.1
	done
	[ -s "$tmp/$name.port" ] || {
		cat "$tmp/$name.log" >&2
		echo "FAIL: $name did not start" >&2
		exit 1
	}
	port=$(cat "$tmp/$name.port")
}
start s3 $PY "$TS/sigv4_server.py" --root "$tmp/root" --issued-master "$MASTER" \
	--bucket ringfeed
S3=http://127.0.0.1:$port
start s3early $PY "$TS/sigv4_server.py" --root "$tmp/root" --issued-master "$MASTER" \
	--expire-early-s 2.5 --bucket ringfeed
S3EARLY=http://127.0.0.1:$port
creds_args=(--master "$MASTER" --role-arn "$ROLE" --web-identity-token "$WEBTOK"
	--source-access "$SRC_AK" --source-secret "$SRC_SK" --container-token "$CTOK")
start creds4 $PY "$TS/creds_server.py" --ttl 4 "${creds_args[@]}"
CR4=http://127.0.0.1:$port
start creds3 $PY "$TS/creds_server.py" --ttl 3 "${creds_args[@]}"
CR3=http://127.0.0.1:$port
start creds0 $PY "$TS/creds_server.py" --ttl 0 "${creds_args[@]}"
CR0=http://127.0.0.1:$port
# The redirect checks: "other" logs all it receives (and answers 404); the
# redirectors send every request there (307 and 302, any method).
start other $PY "$TS/redirect_server.py" --log "$tmp/other.requests"
OTHER=http://127.0.0.1:$port
start r307 $PY "$TS/redirect_server.py" --redirect-to "$OTHER" --status 307
R307=http://127.0.0.1:$port
start r302 $PY "$TS/redirect_server.py" --redirect-to "$OTHER" --status 302
R302=http://127.0.0.1:$port
# Verifiers of static keys, as a profile holds them (one also wants a token).
ST_AK=AKIARFSTATIC$$
ST_SK=rf-static-secret-SECRET-$$
ST_TOK=rf-static-session-SECRET-$$
start s3static $PY "$TS/sigv4_server.py" --root "$tmp/root" --access-key "$ST_AK" \
	--secret-key "$ST_SK" --bucket ringfeed
S3STATIC=http://127.0.0.1:$port
start s3tok $PY "$TS/sigv4_server.py" --root "$tmp/root" --access-key "$ST_AK" \
	--secret-key "$ST_SK" --session-token "$ST_TOK" --bucket ringfeed
S3TOK=http://127.0.0.1:$port

# Many small blocks, so the read is many range requests spread over time.
$PY -c 'import base64, os, sys; sys.stdout.buffer.write(base64.b64encode(os.urandom(786432)))' \
	>"$tmp/recs"
"$cli" pack --from fixed:1024 "$tmp/recs" -o "$tmp/ds" --block-size 8KiB \
	--shard-size 512KiB >/dev/null
cp "$tmp/ds"/*.rfs "$tmp/root/ringfeed/ds/"
want=$("$cli" read --digest "$tmp/ds" | tail -n 1)
URL=s3://ringfeed/ds/

stat_of() { # URL KEY: a counter of a server's /_stats (0 when absent)
	curl -s "$1/_stats" | $PY -c 'import json,sys; print(json.load(sys.stdin).get(sys.argv[1],0))' "$2"
}

# run NAME [VAR=VALUE...] -- [ringfeed read flags...]: a read with only the
# given environment (no ambient AWS_* variable), IMDS disabled unless given.
run() {
	local name=$1
	shift
	local envs=()
	while [ "$1" != -- ]; do
		envs+=("$1")
		shift
	done
	shift
	local keep=()
	for v in ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS; do
		[ -n "${!v:-}" ] && keep+=("$v=${!v}")
	done
	rc=0
	timeout $guard_s env -i PATH="$PATH" HOME="$tmp/home" AWS_EC2_METADATA_DISABLED=true \
		"${keep[@]}" "${envs[@]}" "$cli" read --digest --s3-endpoint "$S3" \
		--stats "$tmp/$name.stats" --trace "$tmp/$name.trace" "$@" \
		>"$tmp/$name.out" 2>"$tmp/$name.err" || rc=$?
}

no_secrets() { # NAME: nothing secret in what the run wrote
	local f hit=0
	for f in "$tmp/$1.out" "$tmp/$1.err" "$tmp/$1.stats" "$tmp/$1.trace"; do
		[ -f "$f" ] || continue
		if grep -aqE "rfsec/|rftok|ASIARF|$MASTER|$WEBTOK|$CTOK|$SRC_SK|$SRC_AK" "$f"; then
			bad "$1: a secret appears in $(basename "$f"): $(grep -aoE "rfsec/|rftok|ASIARF|SECRET|$SRC_AK" "$f" | sort -u | tr '\n' ' ')"
			hit=1
		fi
	done
	[ $hit = 0 ] && ok "$1: no key, secret or token in stderr, stats or trace"
}

read_ok() { # NAME: exit 0, the local digest, zero failed requests
	local got errors
	got=$(tail -n 1 "$tmp/$1.out" 2>/dev/null || true)
	if [ $rc != 0 ] || [ "$got" != "$want" ]; then
		bad "$1: rc=$rc digest '$got' (want '$want'): $(tail -n 3 "$tmp/$1.err")"
		return
	fi
	errors=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["fetch_errors"])' \
		"$tmp/$1.stats")
	if [ "$errors" != 0 ]; then
		bad "$1: $errors failed requests"
		return
	fi
	ok "$1: the local digest, zero failed requests"
}

slow=(--inject latency=150ms --connections 1 --request-size 4KiB --batch 16) # ~5-7 s here
slower=(--inject latency=400ms --connections 1 --request-size 4KiB --batch 16) # ~7+ s here

# 1. Web identity, 4 s credentials, a read of several lifetimes: refreshed ahead.
sts0=$(stat_of "$CR4" issued_AssumeRoleWithWebIdentity)
exp0=$(stat_of "$S3" error_ExpiredToken)
run webid AWS_ROLE_ARN=$ROLE AWS_WEB_IDENTITY_TOKEN_FILE="$tmp/webtok" \
	AWS_ROLE_SESSION_NAME=rf-test AWS_ENDPOINT_URL_STS="$CR4" -- "${slower[@]}" "$URL"
read_ok webid
no_secrets webid
n=$(($(stat_of "$CR4" issued_AssumeRoleWithWebIdentity) - sts0))
secs=$($PY -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["elapsed_s"]))' \
	"$tmp/webid.stats" 2>/dev/null || echo "?")
if [ "$n" -ge 3 ]; then
	ok "webid: $n AssumeRoleWithWebIdentity calls (listing, first, refreshes) in a ${secs} s read"
else
	bad "webid: only $n STS calls: no refresh before expiry"
fi
[ "$(stat_of "$S3" error_ExpiredToken)" = "$exp0" ] &&
	ok "webid: no request met ExpiredToken (refreshed ahead)" ||
	bad "webid: requests met ExpiredToken although refreshed ahead"

# 2. The store's clock runs 2.5 s ahead: requests meet ExpiredToken before the
#    refresh is due; each refreshes and retries once, and none fails.
exp0=$(stat_of "$S3EARLY" error_ExpiredToken)
run early AWS_ROLE_ARN=$ROLE AWS_WEB_IDENTITY_TOKEN_FILE="$tmp/webtok" \
	AWS_ENDPOINT_URL_STS="$CR4" -- "${slow[@]}" --s3-endpoint "$S3EARLY" "$URL"
read_ok early
no_secrets early
n=$(($(stat_of "$S3EARLY" error_ExpiredToken) - exp0))
[ "$n" -ge 1 ] && ok "early: $n ExpiredToken answers ridden out (refresh, retry once)" ||
	bad "early: no ExpiredToken met: the retry path went untested"

# 3. Container credentials (FULL_URI on loopback, token from a file), 3 s.
c0=$(stat_of "$CR3" issued_container)
run container AWS_CONTAINER_CREDENTIALS_FULL_URI="$CR3/container/v2/creds" \
	AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE="$tmp/ctok" -- "${slow[@]}" "$URL"
read_ok container
no_secrets container
n=$(($(stat_of "$CR3" issued_container) - c0))
[ "$n" -ge 3 ] && ok "container: $n credential fetches (refreshed)" ||
	bad "container: only $n fetches"
# the wrong token: the failure names the source, not the token
run container_bad AWS_CONTAINER_CREDENTIALS_FULL_URI="$CR3/container/v2/creds" \
	AWS_CONTAINER_AUTHORIZATION_TOKEN=wrong-SECRET-token -- "$URL"
if [ $rc != 0 ] && grep -q "container credentials at http://127.0.0.1" "$tmp/container_bad.err" &&
	! grep -q "wrong-SECRET-token" "$tmp/container_bad.err"; then
	ok "container_bad: fails naming the source, not the token"
else
	bad "container_bad: rc=$rc: $(tail -n 2 "$tmp/container_bad.err")"
fi

# credentials that arrive expired are refused (else the refresh would spin)
run container_expired AWS_CONTAINER_CREDENTIALS_FULL_URI="$CR0/container/v2/creds" \
	AWS_CONTAINER_AUTHORIZATION_TOKEN="$CTOK" -- "$URL"
n=$(stat_of "$CR0" issued_container)
[ $rc != 0 ] && grep -q "the credentials received expire within a second" \
	"$tmp/container_expired.err" && [ "$n" -le 2 ] &&
	ok "container_expired: expired credentials refused ($n fetches)" ||
	bad "container_expired: rc=$rc, $n fetches: $(tail -n 2 "$tmp/container_expired.err")"

# 4. IMDSv2 at a local stand-in: token PUT first, then role, then credentials.
i0=$(stat_of "$CR3" issued_imds)
run imds AWS_EC2_METADATA_DISABLED=false AWS_EC2_METADATA_SERVICE_ENDPOINT="$CR3/" -- \
	"${slow[@]}" "$URL"
read_ok imds
no_secrets imds
n=$(($(stat_of "$CR3" issued_imds) - i0))
[ "$n" -ge 3 ] && [ "$(stat_of "$CR3" rejected_imds_get)" = 0 ] &&
	ok "imds: $n credential fetches, each with an IMDSv2 token" ||
	bad "imds: $n fetches, $(stat_of "$CR3" rejected_imds_get) without a token"

# 5. Profiles: role_arn + source_profile (STS AssumeRole signed with the
#    source's keys), credential_process, static keys; AWS_PROFILE picks.
cat >"$tmp/home/credentials" <<EOF
[src]
aws_access_key_id = $SRC_AK
aws_secret_access_key = $SRC_SK
EOF
cat >"$tmp/home/config" <<EOF
[default]
region = us-east-1

[profile assume]
role_arn = $ROLE
source_profile = src
role_session_name = rf-profile

[profile process]
credential_process = $PY "$TS/issued_creds.py" process '$MASTER' 3 "$tmp/process.count"
EOF
files=(AWS_SHARED_CREDENTIALS_FILE="$tmp/home/credentials" AWS_CONFIG_FILE="$tmp/home/config")
a0=$(stat_of "$CR3" issued_AssumeRole)
run assume "${files[@]}" AWS_PROFILE=assume AWS_ENDPOINT_URL_STS="$CR3" -- "${slow[@]}" "$URL"
read_ok assume
no_secrets assume
n=$(($(stat_of "$CR3" issued_AssumeRole) - a0))
[ "$n" -ge 2 ] && [ "$(stat_of "$CR3" rejected_sts)" = 0 ] &&
	ok "assume: $n signed AssumeRole calls accepted" || bad "assume: $n AssumeRole calls"
run process "${files[@]}" AWS_PROFILE=process -- "${slow[@]}" "$URL"
read_ok process
no_secrets process
n=$(wc -l <"$tmp/process.count" 2>/dev/null || echo 0)
[ "$n" -ge 3 ] && ok "process: credential_process ran $n times (refreshed)" ||
	bad "process: credential_process ran $n times"
printf '[profile dead]\ncredential_process = /bin/sh -c "exit 3"\n' >>"$tmp/home/config"
run process_bad "${files[@]}" AWS_PROFILE=dead -- "$URL"
[ $rc != 0 ] && grep -q "credential_process /bin/sh exited with status 3" "$tmp/process_bad.err" &&
	ok "process_bad: a failing credential_process is named with its status" ||
	bad "process_bad: rc=$rc: $(tail -n 2 "$tmp/process_bad.err")"
# no shell: a ';' is an argument of echo, not a second command
printf '[profile inject]\ncredential_process = /bin/echo x; touch %s/pwned\n' "$tmp" \
	>>"$tmp/home/config"
run process_shell "${files[@]}" AWS_PROFILE=inject -- "$URL"
[ $rc != 0 ] && [ ! -e "$tmp/pwned" ] &&
	grep -q "credential_process output is not JSON" "$tmp/process_shell.err" &&
	ok "process_shell: the command runs without a shell (';' is not interpreted)" ||
	bad "process_shell: rc=$rc, pwned=$([ -e "$tmp/pwned" ] && echo yes || echo no):" \
		"$(tail -n 2 "$tmp/process_shell.err")"
run noprofile "${files[@]}" AWS_PROFILE=nosuch -- "$URL"
[ $rc != 0 ] && grep -q "AWS_PROFILE nosuch: no such profile in $tmp/home/credentials" \
	"$tmp/noprofile.err" && ok "noprofile: a missing AWS_PROFILE is an error naming the files" ||
	bad "noprofile: rc=$rc: $(tail -n 2 "$tmp/noprofile.err")"

# 5b. Static keys in the shared files, the everyday setup, each against a
#     verifier that checks the signature (and the session token): the
#     default profile, AWS_PROFILE, keys only in the config file, the files
#     elsewhere, a session token; a fake HOME each, and nothing else set.
keys() { # [PROFILE-HEADER]: a profile with the static keys
	printf '[%s]\naws_access_key_id = %s\naws_secret_access_key = %s\n' "$1" "$ST_AK" "$ST_SK"
}
wrong() { # PROFILE-HEADER: a profile with keys the verifiers refuse
	printf '[%s]\naws_access_key_id = AKIAWRONG\naws_secret_access_key = wrong\n' "$1"
}
static_ok() { # NAME: read_ok, and neither the static secret nor the token shown
	read_ok "$1"
	if grep -aqE "$ST_SK|$ST_TOK" "$tmp/$1.out" "$tmp/$1.err" "$tmp/$1.stats" \
		"$tmp/$1.trace" 2>/dev/null; then
		bad "$1: the profile's secret or token appears in the output"
	else
		ok "$1: the profile's secret and token appear nowhere"
	fi
}
for h in def named cfg cfgdef elsewhere tok; do mkdir -p "$tmp/h_$h/.aws"; done
keys default >"$tmp/h_def/.aws/credentials"
run static_default HOME="$tmp/h_def" -- --s3-endpoint "$S3STATIC" "$URL"
static_ok static_default
{ wrong default; keys work; } >"$tmp/h_named/.aws/credentials"
printf '[default]\nregion = us-east-1\n[profile work]\nregion = us-east-1\n' \
	>"$tmp/h_named/.aws/config"
run static_named HOME="$tmp/h_named" AWS_PROFILE=work -- --s3-endpoint "$S3STATIC" "$URL"
static_ok static_named
{ wrong default; keys "profile work"; } >"$tmp/h_cfg/.aws/config"
run static_config HOME="$tmp/h_cfg" AWS_PROFILE=work -- --s3-endpoint "$S3STATIC" "$URL"
static_ok static_config
keys default >"$tmp/h_cfgdef/.aws/config"
run static_config_default HOME="$tmp/h_cfgdef" -- --s3-endpoint "$S3STATIC" "$URL"
static_ok static_config_default
mkdir -p "$tmp/else"
keys team >"$tmp/else/creds.ini"
printf '[profile team]\nregion = us-east-1\n' >"$tmp/else/config.ini"
wrong default >"$tmp/h_elsewhere/.aws/credentials" # not read: the variables win
run static_elsewhere HOME="$tmp/h_elsewhere" AWS_SHARED_CREDENTIALS_FILE="$tmp/else/creds.ini" \
	AWS_CONFIG_FILE="$tmp/else/config.ini" AWS_PROFILE=team -- --s3-endpoint "$S3STATIC" "$URL"
static_ok static_elsewhere
{ keys default; printf 'aws_session_token = %s\n' "$ST_TOK"; } >"$tmp/h_tok/.aws/credentials"
run static_token HOME="$tmp/h_tok" -- --s3-endpoint "$S3TOK" "$URL"
static_ok static_token
# what an unused profile holds fails nothing: a 5000-byte line, a 1.5 MiB
# section, a line that is no setting (the used profile's keys still read)
mkdir -p "$tmp/h_big/.aws"
keys default >"$tmp/h_big/.aws/credentials"
$PY - "$tmp/h_big/.aws/config" <<'PYEOF'
import sys
with open(sys.argv[1], "w") as f:
    f.write("[profile other]\nnote = %s\nnot a setting\n" % ("x" * 5000))
    f.write("[profile huge]\n" + "".join("k%d = %s\n" % (i, "v" * 150) for i in range(10000)))
    f.write("[default]\nregion = us-east-1\n")
PYEOF
run static_big_config HOME="$tmp/h_big" -- --s3-endpoint "$S3STATIC" "$URL"
static_ok static_big_config
# the same long line in the profile used is an error naming file, line and profile
printf '[default]\nnote = %s\n' "$(head -c 17000 /dev/zero | tr '\0' x)" >"$tmp/h_big/.aws/config"
run static_long_used HOME="$tmp/h_big" -- --s3-endpoint "$S3STATIC" "$URL"
[ $rc != 0 ] && grep -q "AWS config file $tmp/h_big/.aws/config line 2 (profile default): a line longer than 16384 bytes" \
	"$tmp/static_long_used.err" && ok "static_long_used: the used profile's long line is named" ||
	bad "static_long_used: rc=$rc: $(tail -n 2 "$tmp/static_long_used.err")"
# the same profile without its token: the verifier that wants one refuses
keys default >"$tmp/h_tok/.aws/credentials"
run static_token_missing HOME="$tmp/h_tok" -- --s3-endpoint "$S3TOK" "$URL"
[ $rc != 0 ] && grep -q "HTTP 403" "$tmp/static_token_missing.err" &&
	ok "static_token_missing: without the profile's token the verifier refuses (it checks)" ||
	bad "static_token_missing: rc=$rc: $(tail -n 2 "$tmp/static_token_missing.err")"

# 6. A failing STS call names the source and the STS error, never the token.
printf 'not-the-token\n' >"$tmp/badtok"
run webid_bad AWS_ROLE_ARN=$ROLE AWS_WEB_IDENTITY_TOKEN_FILE="$tmp/badtok" \
	AWS_ENDPOINT_URL_STS="$CR4" -- "$URL"
[ $rc != 0 ] && grep -q "S3 credentials from web identity" "$tmp/webid_bad.err" &&
	grep -q "InvalidIdentityToken" "$tmp/webid_bad.err" &&
	! grep -q "not-the-token" "$tmp/webid_bad.err" &&
	ok "webid_bad: fails naming web identity and InvalidIdentityToken" ||
	bad "webid_bad: rc=$rc: $(tail -n 2 "$tmp/webid_bad.err")"

# 6b. No credential request follows a redirect to another origin: STS (web
#     identity: the token is in the POST body; AssumeRole: signed), the
#     container endpoint (with and without its token), IMDSv2, and a signed
#     S3 request. Each fails naming the redirect (without secrets), and the
#     other host receives nothing at all.
refused() { # NAME FROM-URL: failed, naming the refused redirect to $OTHER
	if [ $rc != 0 ] && grep -q "redirect from $2 to $OTHER/[^ ]* (another host) refused" \
		"$tmp/$1.err"; then
		ok "$1: the redirect to another origin is refused and named"
	else
		bad "$1: rc=$rc: $(tail -n 2 "$tmp/$1.err")"
	fi
	if [ -e "$tmp/other.requests" ]; then
		bad "$1: the other host received: $(head -c 300 "$tmp/other.requests" | tr '\n' ' ')"
		grep -qaE "$WEBTOK|$CTOK|$SRC_AK|$ST_AK|WebIdentityToken" "$tmp/other.requests" &&
			bad "$1: ... and a secret among it"
		rm -f "$tmp/other.requests"
	else
		ok "$1: the other host received nothing"
	fi
	no_secrets "$1"
}
run redir_webid AWS_ROLE_ARN=$ROLE AWS_WEB_IDENTITY_TOKEN_FILE="$tmp/webtok" \
	AWS_ENDPOINT_URL_STS="$R307" -- "$URL"
refused redir_webid "$R307"
run redir_assume "${files[@]}" AWS_PROFILE=assume AWS_ENDPOINT_URL_STS="$R307" -- "$URL"
refused redir_assume "$R307"
run redir_container AWS_CONTAINER_CREDENTIALS_FULL_URI="$R302/container/v2/creds" -- "$URL"
refused redir_container "$R302"
run redir_container_tok AWS_CONTAINER_CREDENTIALS_FULL_URI="$R302/container/v2/creds" \
	AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE="$tmp/ctok" -- "$URL"
refused redir_container_tok "$R302"
# IMDS is the last source: its failure is "nothing found", named in the 403
run redir_imds AWS_EC2_METADATA_DISABLED=false AWS_EC2_METADATA_SERVICE_ENDPOINT="$R307" -- "$URL"
refused redir_imds "$R307"
run redir_s3 AWS_ACCESS_KEY_ID="$ST_AK" AWS_SECRET_ACCESS_KEY="$ST_SK" \
	AWS_SESSION_TOKEN="$ST_TOK" -- --s3-endpoint "$R307" --retries 1 "$URL"
refused redir_s3 "$R307"

# 7. The chain finds nothing: anonymous, and the 403 says what was tried.
run nothing -- "$URL"
msg="no credentials found: tried env, web identity, profile default in $tmp/home/.aws/credentials"
[ $rc != 0 ] && grep -q "HTTP 403 AccessDenied (sent unsigned: $msg" "$tmp/nothing.err" &&
	grep -q "container, IMDS (AWS_EC2_METADATA_DISABLED))" "$tmp/nothing.err" &&
	ok "nothing: the 403 names every source tried" ||
	bad "nothing: rc=$rc: $(tail -n 2 "$tmp/nothing.err")"
# an IMDS that does not answer (a closed port) is tried, in bounded time
closed=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
t0=$(date +%s)
run noimds AWS_EC2_METADATA_DISABLED=false \
	AWS_EC2_METADATA_SERVICE_ENDPOINT="http://127.0.0.1:$closed" -- "$URL"
[ $rc != 0 ] && grep -q "IMDS (PUT http://127.0.0.1:$closed/latest/api/token" "$tmp/noimds.err" &&
	ok "noimds: an unreachable IMDS is named in the 403 ($(($(date +%s) - t0)) s)" ||
	bad "noimds: rc=$rc: $(tail -n 2 "$tmp/noimds.err")"
# --no-sign-request: unsigned although the environment has keys, no chain note
run nosign AWS_ACCESS_KEY_ID=AKIAENVKEY AWS_SECRET_ACCESS_KEY=env-SECRET-key -- \
	--no-sign-request "$URL"
[ $rc != 0 ] && grep -q "HTTP 403 AccessDenied" "$tmp/nosign.err" &&
	! grep -q "no credentials found" "$tmp/nosign.err" &&
	! grep -q "env-SECRET-key" "$tmp/nosign.err" &&
	ok "nosign: --no-sign-request sends unsigned" ||
	bad "nosign: rc=$rc: $(tail -n 2 "$tmp/nosign.err")"

rf_checks_done cli_creds
