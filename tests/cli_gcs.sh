#!/usr/bin/env bash
# cli_gcs.sh - gs:// through Cloud Storage's JSON API with OAuth bearer
# tokens (fetch/gcs*.c, fetch/bearer.c) against tests/gcs_server.py, a
# stand-in that verifies the service account's RS256 JWT with its public key
# and issues tokens that live 2 s. A dataset under a prefix with a space,
# '+', '%' and a non-ASCII letter reads with the local digest through a
# service account key (GOOGLE_APPLICATION_CREDENTIALS), gcloud's ADC file
# (authorized_user) and the metadata server; the listing takes two pages;
# one object reads alone and `verify` passes; `ringfeed index -o DIR` of a
# tar dataset on gs:// writes the local index's bytes, and with the index
# uploaded beside the tars the open reads the index, not the headers (the
# local digest); the Python RingfeedDataset gives the local read's records
# through the service account key; a read of more than 2 s on
# tokens expiring every 2 s has no failed request; a token revoked early is
# replaced and the request sent again; a wrong key, a missing key file and
# no credentials at all are refused naming the source or the chain, and no
# secret; HMAC keys keep the XML API path; a read redirected to another host
# never carries the token there (its log is grepped). Skips (77) when
# python3-cryptography is missing.
set -u
cli=${RF_CLI:?RF_CLI must name the ringfeed binary}
src=${RF_SOURCE_DIR:?}
build=${RF_BUILD_DIR:-$(dirname "$cli")}
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
mkdir -p "$tmp/root/bkt/$prefix" "$tmp/root/bkt/slow" "$tmp/root/bkt/redir" "$tmp/root/bkt/revoke" \
	"$tmp/root/bkt/wds ü+%" "$tmp/tars" "$tmp/tars_idx" "$tmp/gs_idx"
"$cli" pack --demo -o "$tmp/ds" --demo-bytes 1MiB --demo-shards 3 >/dev/null
"$cli" pack --demo -o "$tmp/slow" --demo-bytes 1MiB --demo-shards 12 >/dev/null
cp "$tmp"/ds/*.rfs "$tmp/root/bkt/$prefix/"
cp "$tmp"/slow/*.rfs "$tmp/root/bkt/slow/"
cp "$tmp/ds/shard-000000.rfs" "$tmp/root/bkt/redir/"
cp "$tmp"/ds/*.rfs "$tmp/root/bkt/revoke/"
want=$("$cli" read --digest --no-shuffle "$tmp/ds" | tail -n 1)
want_one=$("$cli" read --digest --no-shuffle "$tmp/ds/shard-000000.rfs" | tail -n 1)
want_slow=$("$cli" read --digest --no-shuffle "$tmp/slow" | tail -n 1)
# a WebDataset tar dataset (3 shards of 40 samples, two fields each), and
# its local index (ringfeed index beside the tars)
"$py" "$src/tests/wds_tars.py" "$tmp/tars"
cp "$tmp"/tars/*.tar "$tmp/tars_idx/"
cp "$tmp"/tars/*.tar "$tmp/root/bkt/wds ü+%/"
"$cli" index "$tmp/tars_idx" >/dev/null 2>&1 || bad "ringfeed index of the local tars failed"
want_tars=$("$cli" read --digest --no-shuffle "$tmp/tars" | tail -n 1)
tar_bytes=$(cat "$tmp"/tars/*.tar | wc -c)

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

# ringfeed index over gs:// (into -o DIR: a remote dataset is not written
# to): the local index's bytes; uploaded beside the tars, the open reads it
# instead of the tars' headers and the read gives the local digest
GOOGLE_APPLICATION_CREDENTIALS=$tmp/sa.json "$cli" index --json -o "$tmp/gs_idx" "gs://bkt/wds ü+%/" \
	>"$tmp/run-index.out" 2>"$tmp/run-index.err"
same_idx=0
for s in 0 1 2; do cmp -s "$tmp/gs_idx/shard-00000$s.idx" "$tmp/tars_idx/shard-00000$s.idx" && same_idx=$((same_idx + 1)); done
[ "$(num "$tmp/run-index.out" written)" = 3 ] && [ $same_idx = 3 ] &&
	ok "ringfeed index -o DIR of a gs:// tar dataset: 3 written, the local index's bytes" ||
	bad "index over gs://: $same_idx of 3 equal the local index: $(head -c 300 "$tmp/run-index.out") $(tail -n 2 "$tmp/run-index.err")"
GOOGLE_APPLICATION_CREDENTIALS=$tmp/sa.json run "gs://bkt/wds ü+%/"
[ "$got" = "$want_tars" ] && ok "the tar dataset without an index: the local digest" ||
	bad "tars without an index: '$got' vs '$want_tars': $(tail -n 2 "$tmp/run$n.err")"
cp "$tmp"/gs_idx/*.idx "$tmp/root/bkt/wds ü+%/"
GOOGLE_APPLICATION_CREDENTIALS=$tmp/sa.json run --stats "$tmp/idx.json" "gs://bkt/wds ü+%/"
open_bytes=$(num "$tmp/idx.json" open_fetched_bytes)
[ "$got" = "$want_tars" ] && [ "$open_bytes" -gt 0 ] && [ "$open_bytes" -lt $((tar_bytes / 20)) ] &&
	ok "... with the index beside the tars: the local digest, the open read $open_bytes of $tar_bytes bytes" ||
	bad "tars with the index: '$got', the open read $open_bytes of $tar_bytes bytes: $(tail -n 2 "$tmp/run$n.err")"

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
# connection, the open's too: the server's delays make the read that long
# however fast the machine): at least two tokens in the loader, and no
# request failed
before=$(stat_of tokens)
GOOGLE_APPLICATION_CREDENTIALS=$tmp/sa.json run --connections 1 --open-connections 1 --hedge 0 \
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

# the Python RingfeedDataset (torch) through the service account key: the
# records of the same dataset read locally (one interpreter reads both)
if "$py" -c 'import numpy, torch' 2>/dev/null && [ -e "$build/libringfeed.so" ] &&
	! grep -q '^RF_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
	before=$(stat_of data)
	RINGFEED_LIBRARY=$build/libringfeed.so PYTHONPATH=$src/python PYTHONDONTWRITEBYTECODE=1 \
		GOOGLE_APPLICATION_CREDENTIALS=$tmp/sa.json "$py" "$src/tests/store_records.py" "$tmp/ds" "$url" >"$tmp/run-py.out" 2>"$tmp/run-py.err"
	local_py=$(sed -n 's/^dataset //;1p' "$tmp/run-py.out") gs_py=$(sed -n 's/^dataset //;2p' "$tmp/run-py.out")
	[ -n "$local_py" ] && [ "$gs_py" = "$local_py" ] && [ "${local_py%% *}" = "${want%% *}" ] &&
		[ "$(stat_of data)" -gt "$before" ] &&
		ok "Python RingfeedDataset over gs:// (OAuth): the local records (${local_py%% *}, $(($(stat_of data) - before)) data requests)" ||
		bad "Python: '$gs_py' vs '$local_py' (want ${want%% *}): $(tail -n 3 "$tmp/run-py.err")"
else
	echo "(the Python check is left out: no numpy or torch, no shared library, or a sanitizer build)"
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
