#!/usr/bin/env bash
# cli_gcs.sh - gs:// through Cloud Storage's JSON API with OAuth bearer
# tokens (fetch/gcs*.c, fetch/bearer.c) against tests/gcs_server.py, a
# stand-in that verifies the service account's RS256 JWT with its public key
# and issues tokens that live 2 s. A dataset under a prefix with a space,
# '+', '%' and a non-ASCII letter reads with the local digest through a
# service account key (GOOGLE_APPLICATION_CREDENTIALS), gcloud's ADC file
# (authorized_user) and the metadata server; the listing takes two pages;
# one object reads alone and `verify` passes; a read of more than 2 s on
# tokens expiring every 2 s has no failed request; a token revoked early is
# replaced and the request sent again; a wrong key, a missing key file and
# no credentials at all are refused naming the source or the chain, and no
# secret; HMAC keys keep the XML API path; a read redirected to another host
# never carries the token there (its log is grepped). Skips (77) when
# python3-cryptography is missing.
set -u
cli=${RF_CLI:?RF_CLI must name the ringfeed binary}
src=${RF_SOURCE_DIR:?}
py=/usr/bin/python3
tmp=$(mktemp -d)
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
spid=
trap '[ -n "$spid" ] && kill $spid 2>/dev/null; wait 2>/dev/null; [ -n "${RF_KEEP:-}" ] || rm -rf "$tmp"' EXIT
free_port() { "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port)
dead=$(free_port) # nothing listens there
email=reader@test.iam.gserviceaccount.com
# the token endpoint is named "localhost", storage "127.0.0.1": two hosts for
# the client's connection limit, as oauth2.googleapis.com and storage are
"$py" "$src/tests/gcs_keygen.py" $email "http://localhost:$port/token" "$tmp/sa.json" \
	"$tmp/sa.pub" "$tmp/wrong.json" "$tmp/wrong.pub"
case $? in
0) ;;
77) echo "SKIP: python3-cryptography is not installed"; exit 77 ;;
*) bad "gcs_keygen.py failed"; exit 1 ;;
esac
client_secret=cs-$RANDOM$RANDOM-secret
refresh=rt-$RANDOM$RANDOM-refresh

prefix="odd dir+a%b/ünï"
mkdir -p "$tmp/root/bkt/$prefix" "$tmp/root/bkt/slow" "$tmp/root/bkt/redir" "$tmp/root/bkt/revoke"
"$cli" pack --demo -o "$tmp/ds" --demo-bytes 1MiB --demo-shards 3 >/dev/null
"$cli" pack --demo -o "$tmp/slow" --demo-bytes 1MiB --demo-shards 12 >/dev/null
cp "$tmp"/ds/*.rfs "$tmp/root/bkt/$prefix/"
cp "$tmp"/slow/*.rfs "$tmp/root/bkt/slow/"
cp "$tmp/ds/shard-000000.rfs" "$tmp/root/bkt/redir/"
cp "$tmp"/ds/*.rfs "$tmp/root/bkt/revoke/"
want=$("$cli" read --digest --no-shuffle "$tmp/ds" | tail -n 1)
want_one=$("$cli" read --digest --no-shuffle "$tmp/ds/shard-000000.rfs" | tail -n 1)
want_slow=$("$cli" read --digest --no-shuffle "$tmp/slow" | tail -n 1)

"$py" "$src/tests/gcs_server.py" --root "$tmp/root" --port "$port" --ports-file "$tmp/ports" \
	--stats-file "$tmp/stats" --log2 "$tmp/other.log" --sa-email $email --sa-pubkey "$tmp/sa.pub" \
	--client-id cid.apps.googleusercontent.com --client-secret "$client_secret" \
	--refresh-token "$refresh" --expires 2 --page-size 2 --delay-ms 60 --slow-prefix slow/ \
	--redirect-prefix redir/ --revoke-prefix revoke/ >"$tmp/server.log" 2>&1 &
spid=$!
for _ in $(seq 1 100); do [ -s "$tmp/ports" ] && break; sleep 0.1; done
[ -s "$tmp/ports" ] || { bad "the stand-in did not start: $(tail -n 3 "$tmp/server.log")"; exit 1; }
num() { # FILE NAME: a number of a flat JSON object ("NAME": N), 0 when absent
	local v
	v=$(grep -o "\"$2\": *[0-9]*" "$1" 2>/dev/null | grep -o '[0-9]*$')
	echo "${v:-0}"
}
stat_of() { num "$tmp/stats" "$1"; }

mkdir -p "$tmp/nogcloud" "$tmp/gcloud"
cat >"$tmp/gcloud/application_default_credentials.json" <<EOF
{"type": "authorized_user", "client_id": "cid.apps.googleusercontent.com",
 "client_secret": "$client_secret", "refresh_token": "$refresh",
 "token_uri": "http://localhost:$port/token"}
EOF
# every read: the stand-in as the emulator, no data cache (each read reaches
# the stand-in), no HMAC keys (they would pick the S3 store's XML API path)
export STORAGE_EMULATOR_HOST=127.0.0.1:$port CLOUDSDK_CONFIG=$tmp/nogcloud
export GCE_METADATA_HOST=127.0.0.1:$dead
unset GOOGLE_APPLICATION_CREDENTIALS AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY RF_GCS_AUTH
n=0
run() { # ARGS...: read; stdout+stderr kept as $tmp/run$n.*; the digest line in $got
	n=$((n + 1))
	"$cli" read --digest --no-shuffle --cache off "$@" >"$tmp/run$n.out" 2>"$tmp/run$n.err"
	echo "rc=$?" >>"$tmp/run$n.out"
	got=$(tail -n 2 "$tmp/run$n.out" | head -n 1)
}
url="gs://bkt/$prefix/"

SECONDS=0
GOOGLE_APPLICATION_CREDENTIALS=$tmp/sa.json RF_HTTP_TRACE=1 run "$url"
echo "(read in ${SECONDS} s)"
pages=$(grep -c "(listing): new -> queued" "$tmp/run$n.err")
[ "$got" = "$want" ] && ok "service account key: the local digest" ||
	bad "service account key: '$got': $(tail -n 2 "$tmp/run$n.err")"
[ "$pages" -ge 2 ] && ok "... its listing took $pages pages" || bad "listing: $pages page(s)"
grep -q "Authorization" "$tmp/run$n.err" && bad "the trace shows an Authorization header" ||
	ok "... no Authorization in the trace"

vok=$(GOOGLE_APPLICATION_CREDENTIALS=$tmp/sa.json "$cli" verify --cache off "$url" 2>"$tmp/verify.err" |
	grep -c "^ok gs://bkt/$prefix/shard-")
[ "$vok" = 3 ] && ok "verify: the 3 shards ok" || bad "verify: $vok ok: $(tail -n 2 "$tmp/verify.err")"

GOOGLE_APPLICATION_CREDENTIALS=$tmp/sa.json run "gs://bkt/$prefix/shard-000000.rfs"
[ "$got" = "$want_one" ] && ok "one object (size from a HEAD): the local digest" ||
	bad "one object: '$got': $(tail -n 2 "$tmp/run$n.err")"

CLOUDSDK_CONFIG=$tmp/gcloud run "$url"
[ "$got" = "$want" ] && ok "gcloud ADC file (authorized_user): the local digest" ||
	bad "ADC: '$got': $(tail -n 2 "$tmp/run$n.err")"

before=$(stat_of metadata)
GCE_METADATA_HOST=127.0.0.1:$port run "$url"
[ "$got" = "$want" ] && [ "$(stat_of metadata)" -gt "$before" ] &&
	ok "metadata server (GCE_METADATA_HOST): the local digest" ||
	bad "metadata server: '$got': $(tail -n 2 "$tmp/run$n.err")"

# tokens of 2 s during a read of more than 2 s (36 reads of 60 ms, one
# connection): at least two tokens in the loader, and no request failed
before=$(stat_of tokens)
GOOGLE_APPLICATION_CREDENTIALS=$tmp/sa.json run --connections 1 --hedge 0 \
	--stats "$tmp/slow.json" gs://bkt/slow/
tokens=$(($(stat_of tokens) - before))
errors="$(num "$tmp/slow.json" fetch_errors) $(num "$tmp/slow.json" fetch_retries)"
[ "$got" = "$want_slow" ] && [ "$tokens" -ge 3 ] && [ "${errors%% *}" = 0 ] &&
	ok "tokens expiring every 2 s: $tokens tokens, the local digest, no failed request (errors retries: $errors)" ||
	bad "expiring tokens: '$got', $tokens tokens, errors retries: $errors: $(tail -n 2 "$tmp/run$n.err")"

# a token revoked before its expiry: the 401 brings a fresh token at once,
# and the request is sent again (a retry, not a failure)
before="$(stat_of unauthorized) $(stat_of tokens)"
GOOGLE_APPLICATION_CREDENTIALS=$tmp/sa.json run --stats "$tmp/revoke.json" gs://bkt/revoke/
errors="$(num "$tmp/revoke.json" fetch_errors) $(num "$tmp/revoke.json" fetch_retries)"
after="$(stat_of unauthorized) $(stat_of tokens)"
[ "$got" = "$want" ] && [ "${after%% *}" -gt "${before%% *}" ] && [ "${after##* }" -gt "$((${before##* } + 1))" ] &&
	[ "${errors%% *}" = 0 ] && ok "a revoked token: 401, a fresh token, the request again; the local digest (errors retries: $errors)" ||
	bad "revoked token: '$got', 401s/tokens $before -> $after, errors retries: $errors: $(tail -n 2 "$tmp/run$n.err")"

GOOGLE_APPLICATION_CREDENTIALS=$tmp/wrong.json run "$url"
if grep -q "rc=0" "$tmp/run$n.out" || ! grep -q "GOOGLE_APPLICATION_CREDENTIALS" "$tmp/run$n.err" ||
	! grep -q "HTTP 400 (the token endpoint: refused: invalid_grant)" "$tmp/run$n.err"; then
	bad "wrong key: $(tail -n 2 "$tmp/run$n.err")"
else
	ok "a wrong key is refused (HTTP 400 invalid_grant at the token endpoint), named: $(grep -o 'GCS credentials from [^:]*' "$tmp/run$n.err" | head -n 1)"
fi

GOOGLE_APPLICATION_CREDENTIALS=$tmp/missing.json run "$url"
if ! grep -q "rc=0" "$tmp/run$n.out" && grep -q "GCS credentials: credentials file .*missing.json" "$tmp/run$n.err"; then
	ok "GOOGLE_APPLICATION_CREDENTIALS naming no file: refused, naming it"
else
	bad "missing key file: $(tail -n 2 "$tmp/run$n.err")"
fi

# HMAC keys given: gs:// stays on the S3 store's XML API (no token is asked
# for; the stand-in answers the XML API's URLs 404); RF_GCS_AUTH=oauth
# decides otherwise
before="$(stat_of tokens) $(stat_of lists)"
GOOGLE_APPLICATION_CREDENTIALS=$tmp/sa.json AWS_ACCESS_KEY_ID=AKIDEXAMPLE \
	AWS_SECRET_ACCESS_KEY=hmac-secret-example run --gs-endpoint "http://127.0.0.1:$port" "$url"
[ "$before" = "$(stat_of tokens) $(stat_of lists)" ] && grep -q "HTTP 404" "$tmp/run$n.err" &&
	ok "HMAC keys given: the XML API path, no token asked for" ||
	bad "HMAC keys given: tokens/lists $before -> $(stat_of tokens) $(stat_of lists)"
GOOGLE_APPLICATION_CREDENTIALS=$tmp/sa.json AWS_ACCESS_KEY_ID=AKIDEXAMPLE \
	AWS_SECRET_ACCESS_KEY=hmac-secret-example RF_GCS_AUTH=oauth run \
	--gs-endpoint "http://127.0.0.1:$port" "$url"
[ "$got" = "$want" ] && ok "... with RF_GCS_AUTH=oauth: OAuth (--gs-endpoint), the local digest" ||
	bad "RF_GCS_AUTH=oauth: '$got': $(tail -n 2 "$tmp/run$n.err")"

run "$url"
if ! grep -q "rc=0" "$tmp/run$n.out" && grep -q "HTTP 401" "$tmp/run$n.err" &&
	grep -q "tried GOOGLE_APPLICATION_CREDENTIALS (not set), gcloud ADC file (.*: none), metadata server" "$tmp/run$n.err"; then
	ok "no credentials: refused (HTTP 401), naming the chain tried"
else
	bad "no credentials: $(tail -n 2 "$tmp/run$n.err")"
fi

GOOGLE_APPLICATION_CREDENTIALS=$tmp/sa.json run gs://bkt/redir/shard-000000.rfs
if ! grep -q "rc=0" "$tmp/run$n.out" && grep -q "another host" "$tmp/run$n.err" &&
	! grep -q -e Bearer -e ya29 "$tmp/other.log" 2>/dev/null; then
	ok "a redirect to another host is refused; that host never saw the token ($(cat "$tmp/other.log" 2>/dev/null | wc -l) requests)"
else
	bad "redirect: $(tail -n 1 "$tmp/run$n.err"); other host: $(head -c 300 "$tmp/other.log" 2>/dev/null)"
fi

# no secret in any output: tokens, the private keys, the client secret, the refresh token
key_line=$(sed -n 's/.*PRIVATE KEY-----\\n\([^\\]*\)\\n.*/\1/p' "$tmp/sa.json" | cut -c1-40)
wrong_line=$(sed -n 's/.*PRIVATE KEY-----\\n\([^\\]*\)\\n.*/\1/p' "$tmp/wrong.json" | cut -c1-40)
if [ -n "$key_line" ] && [ -n "$wrong_line" ] && ! cat "$tmp"/run*.out "$tmp"/run*.err "$tmp/verify.err" |
	grep -q -F -e ya29 -e "$key_line" -e "$wrong_line" -e "$client_secret" -e "$refresh" -e hmac-secret-example; then
	ok "no token, private key, client secret or refresh token in any output"
else
	bad "a secret in the output (or the key could not be read: '$key_line')"
fi
echo "(stand-in: $(cat "$tmp/stats"))"
[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
