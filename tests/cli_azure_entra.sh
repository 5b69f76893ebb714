#!/usr/bin/env bash
# cli_azure_entra.sh - the Azure Blob store with Microsoft Entra ID bearer
# tokens (fetch/azure_entra.c, fetch/bearer.c) against Azurite run with
# `--oauth basic` over HTTPS (it checks each bearer token's audience, issuer,
# nbf and expiry; not its signature) and tests/entra_server.py, a stand-in for
# Entra's v2.0 token endpoint (it checks the client assertion against the
# federated token file, the client and tenant ids and the scope) and for the
# instance metadata token endpoint (it needs `Metadata: true`) and App
# Service's identity endpoint (it needs the X-IDENTITY-HEADER secret). A
# dataset under a prefix with a space, '+', '%' and a non-ASCII letter reads
# with the local digest through workload identity, App Service managed
# identity and managed identity; the
# requests carry `Authorization: Bearer` and x-ms-version (Azurite's request
# log); a read of about 4 s on tokens living 2 s has no failed request
# and several tokens; a wrong federated token and a wrong identity header are
# refused naming the source (never the secret),
# no credentials at all are refused naming the chain tried, a signed read
# redirected to another host is refused and that host never sees the token,
# and no token or assertion appears in any output. Skips (77) when Azurite
# is not installed.
set -u
cli=${RF_CLI:?RF_CLI must name the ringfeed binary}
src=${RF_SOURCE_DIR:?}
py=/usr/bin/python3
azurite=$src/.cache/npm/node_modules/.bin/azurite-blob
if [ ! -x "$azurite" ]; then
	echo "SKIP: Azurite is not installed ($azurite); run scripts/deps.sh --test"
	exit 77
fi
tmp=$(mktemp -d)
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
apid= spid=
trap '[ -n "$apid" ] && kill $apid 2>/dev/null; [ -n "$spid" ] && kill $spid 2>/dev/null; wait 2>/dev/null; [ -n "${RF_KEEP:-}" ] || rm -rf "$tmp"' EXIT
free_port() { "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port)
dead=$(free_port) # nothing listens there

# Azurite takes bearer tokens over HTTPS only: a self-signed certificate
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=localhost \
	-addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
	-addext "basicConstraints=critical,CA:TRUE" \
	-keyout "$tmp/key.pem" -out "$tmp/cert.pem" >"$tmp/openssl.log" 2>&1 ||
	{ bad "openssl could not make a certificate: $(tail -n 2 "$tmp/openssl.log")"; exit 1; }
"$azurite" --blobHost 127.0.0.1 --blobPort "$port" --inMemoryPersistence --loose \
	--oauth basic --cert "$tmp/cert.pem" --key "$tmp/key.pem" --debug "$tmp/azurite.debug" \
	--disableTelemetry \
	>"$tmp/azurite.log" 2>&1 &
apid=$!

tenant=72f988bf-86f1-41af-91ab-2d7cd011db47
client=0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0
fed=fed-$RANDOM$RANDOM-assertion # the federated (Kubernetes) token: a secret
printf '%s\n' "$fed" >"$tmp/fed"
printf 'wrong-%s-assertion\n' "$RANDOM$RANDOM" >"$tmp/wrongfed"
ih=ih-$RANDOM$RANDOM-app-service-secret # App Service's IDENTITY_HEADER: a secret
wrong_ih=ih-$RANDOM$RANDOM-not-the-secret
"$py" "$src/tests/entra_server.py" --ports-file "$tmp/ports" --stats-file "$tmp/stats" \
	--tenant $tenant --client-id $client --federated-token-file "$tmp/fed" --expires 2 \
	--identity-header "$ih" --log2 "$tmp/other.log" >"$tmp/server.log" 2>&1 &
spid=$!

prefix="odd dir+a%b/ünï"
"$cli" pack --demo -o "$tmp/ds" --demo-bytes 1MiB --demo-shards 3 >/dev/null
"$cli" pack --demo -o "$tmp/slow" --demo-bytes 1MiB --demo-shards 12 >/dev/null
want=$("$cli" read --digest --no-shuffle "$tmp/ds" | tail -n 1)
want_slow=$("$cli" read --digest --no-shuffle "$tmp/slow" | tail -n 1)

for _ in $(seq 1 300); do # until both answer
	[ -s "$tmp/ports" ] && curl -s -o /dev/null --cacert "$tmp/cert.pem" "https://127.0.0.1:$port/" && break
	sleep 0.1
done
echo "(Azurite and the stand-in up in ${SECONDS} s)"
[ -s "$tmp/ports" ] || { bad "the stand-in did not start: $(tail -n 3 "$tmp/server.log")"; exit 1; }
read -r sport oport <"$tmp/ports"
# Azurite's well-known development account (public, not a secret); the
# upload signs with its key, the reads below never see it
acct=devstoreaccount1
key="Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
ep=https://127.0.0.1:$port/$acct
args=()
for f in "$tmp"/ds/*.rfs; do args+=("$prefix/$(basename "$f")" "$f"); done
for f in "$tmp"/slow/*.rfs; do args+=("slow/$(basename "$f")" "$f"); done
SSL_CERT_FILE=$tmp/cert.pem "$py" "$src/tests/azure_put.py" "$ep" "$acct" "$key" data "${args[@]}" ||
	{ bad "upload to Azurite failed: $(tail -n 3 "$tmp/azurite.log")"; exit 1; }

num() { # FILE NAME: a number of a flat JSON object ("NAME": N), 0 when absent
	local v
	v=$(grep -o "\"$2\": *[0-9]*" "$1" 2>/dev/null | grep -o '[0-9]*$')
	echo "${v:-0}"
}
stat_of() { num "$tmp/stats" "$1"; }
accepted() { grep -c "Validation against token authentication successfully" "$tmp/azurite.debug"; }

# every read: the account and endpoint, no key, SAS or connection string,
# the test's CA first (AWS_CA_BUNDLE outranks the other CA variables), no
# data cache (each read reaches Azurite), the metadata endpoint dead
unset AZURE_STORAGE_CONNECTION_STRING AZURE_STORAGE_KEY AZURE_STORAGE_SAS_TOKEN \
	AZURE_FEDERATED_TOKEN_FILE AZURE_CLIENT_ID AZURE_TENANT_ID AZURE_AUTHORITY_HOST \
	IDENTITY_ENDPOINT IDENTITY_HEADER IDENTITY_SERVER_THUMBPRINT IMDS_ENDPOINT
export AZURE_STORAGE_ACCOUNT=$acct AZURE_STORAGE_BLOB_ENDPOINT=$ep AWS_CA_BUNDLE=$tmp/cert.pem
export AZURE_POD_IDENTITY_AUTHORITY_HOST=http://127.0.0.1:$dead
wi=(AZURE_FEDERATED_TOKEN_FILE="$tmp/fed" AZURE_CLIENT_ID=$client AZURE_TENANT_ID=$tenant
	AZURE_AUTHORITY_HOST="http://localhost:$sport/")
n=0
run() { # [VAR=VALUE...] -- ARGS...: a read; its output kept as $tmp/run$n.*; the digest in $got
	local envs=()
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	n=$((n + 1))
	env "${envs[@]}" "$cli" read --digest --no-shuffle --cache off "$@" >"$tmp/run$n.out" 2>"$tmp/run$n.err"
	echo "rc=$?" >>"$tmp/run$n.out"
	got=$(tail -n 2 "$tmp/run$n.out" | head -n 1)
}
url="az://data/$prefix/"

SECONDS=0
before="$(stat_of workload) $(accepted)"
run "${wi[@]}" -- "$url"
echo "(read in ${SECONDS} s)"
after="$(stat_of workload) $(accepted)"
[ "$got" = "$want" ] && [ "${after%% *}" -gt "${before%% *}" ] && [ "${after##* }" -gt "${before##* }" ] &&
	ok "workload identity: the local digest (tokens, requests Azurite accepted: $before -> $after)" ||
	bad "workload identity: '$got', $before -> $after: $(tail -n 2 "$tmp/run$n.err")"
# Azurite's request log: every request with a token carries the version
# bearer auth needs
total=$(grep 'RequestHeaders' "$tmp/azurite.debug" | grep -c '"authorization":"Bearer ey')
versioned=$(grep 'RequestHeaders' "$tmp/azurite.debug" | grep '"authorization":"Bearer ey' |
	grep -c '"x-ms-version":"2021-08-06"')
[ "$total" -gt 0 ] && [ "$total" = "$versioned" ] &&
	ok "... its $total bearer requests all carry x-ms-version 2021-08-06" ||
	bad "bearer requests: $total, with x-ms-version: $versioned"

before="$(stat_of imds) $(accepted)"
run AZURE_POD_IDENTITY_AUTHORITY_HOST="http://127.0.0.1:$sport" AZURE_CLIENT_ID=$client -- "$url"
after="$(stat_of imds) $(accepted)"
[ "$got" = "$want" ] && [ "${after%% *}" -gt "${before%% *}" ] && [ "${after##* }" -gt "${before##* }" ] &&
	ok "managed identity (user-assigned, AZURE_POD_IDENTITY_AUTHORITY_HOST): the local digest ($before -> $after)" ||
	bad "managed identity: '$got', $before -> $after: $(tail -n 2 "$tmp/run$n.err")"

# App Service (and Functions, Container Apps): its identity endpoint and
# secret header, tried before the metadata endpoint (left dead here)
app=(IDENTITY_ENDPOINT="http://127.0.0.1:$sport/msi/token" IDENTITY_HEADER="$ih")
before="$(stat_of app) $(accepted)"
run "${app[@]}" AZURE_CLIENT_ID=$client RF_HTTP_TRACE=1 -- "$url" # the trace too holds no secret
after="$(stat_of app) $(accepted)"
[ "$got" = "$want" ] && [ "${after%% *}" -gt "${before%% *}" ] && [ "${after##* }" -gt "${before##* }" ] &&
	grep -q "http: Azure token 1 set" "$tmp/run$n.err" &&
	ok "app service managed identity (user-assigned): the local digest ($before -> $after)" ||
	bad "app service managed identity: '$got', $before -> $after: $(tail -n 2 "$tmp/run$n.err")"

run "${app[@]}" IDENTITY_HEADER="$wrong_ih" -- "$url"
if ! grep -q "rc=0" "$tmp/run$n.out" &&
	grep -q "Azure credentials from app service managed identity (http://127.0.0.1:$sport/msi/token)" "$tmp/run$n.err" &&
	grep -q "HTTP 401" "$tmp/run$n.err" &&
	grep -q "app service managed identity (http://127.0.0.1:$sport/msi/token); not reached: managed identity" "$tmp/run$n.err"; then
	ok "a wrong identity header is refused (HTTP 401), naming app service managed identity, not the header"
else
	bad "wrong identity header: $(tail -n 2 "$tmp/run$n.err")"
fi
echo "  (the message: $(tail -n 1 "$tmp/run$n.err"))"

run IDENTITY_ENDPOINT="http://10.1.2.3:8081/msi/token" IDENTITY_HEADER="$ih" -- "$url"
! grep -q "rc=0" "$tmp/run$n.out" && grep -q "IDENTITY_ENDPOINT is not an https:// URL or an http:// one to a loopback or link-local address" "$tmp/run$n.err" &&
	ok "an identity endpoint in clear on another machine: refused before any request" ||
	bad "identity endpoint elsewhere: $(tail -n 2 "$tmp/run$n.err")"

# tokens of 2 s during a read of about 4 s (every read waits 250 ms
# first, one connection, the open's too): several tokens, no request failed
# or was refused
before="$(stat_of tokens) $(grep -c 'StatusCode=401' "$tmp/azurite.debug")"
run "${wi[@]}" -- --connections 1 --open-connections 1 --hedge 0 --inject latency=250ms --stats "$tmp/slow.json" az://data/slow/
after="$(stat_of tokens) $(grep -c 'StatusCode=401' "$tmp/azurite.debug")"
tokens=$((${after%% *} - ${before%% *}))
errors="$(num "$tmp/slow.json" fetch_errors) $(num "$tmp/slow.json" fetch_retries)"
[ "$got" = "$want_slow" ] && [ "$tokens" -ge 3 ] && [ "${errors%% *}" = 0 ] &&
	[ "${after##* }" = "${before##* }" ] &&
	ok "tokens expiring every 2 s: $tokens tokens, the local digest, no failed or refused request (errors retries: $errors)" ||
	bad "expiring tokens: '$got', $tokens tokens, errors retries: $errors, 401s $before -> $after: $(tail -n 2 "$tmp/run$n.err")"

run "${wi[@]}" AZURE_FEDERATED_TOKEN_FILE="$tmp/wrongfed" -- "$url"
if ! grep -q "rc=0" "$tmp/run$n.out" &&
	grep -q "Azure credentials from workload identity (http://localhost:$sport/$tenant/oauth2/v2.0/token" "$tmp/run$n.err" &&
	grep -q "HTTP 401 (the token endpoint: refused: invalid_client)" "$tmp/run$n.err"; then
	ok "a wrong federated token is refused (HTTP 401 invalid_client), naming workload identity"
else
	bad "wrong federated token: $(tail -n 2 "$tmp/run$n.err")"
fi

run "${wi[@]}" AZURE_FEDERATED_TOKEN_FILE="$tmp/missing" -- "$url"
! grep -q "rc=0" "$tmp/run$n.out" && grep -q "the federated token file $tmp/missing: No such file" "$tmp/run$n.err" &&
	ok "a missing federated token file: refused, naming it" ||
	bad "missing federated token file: $(tail -n 2 "$tmp/run$n.err")"

run -- "$url"
if ! grep -q "rc=0" "$tmp/run$n.out" && grep -q "HTTP 403" "$tmp/run$n.err" &&
	grep -q "tried connection string, account key, SAS (none set), workload identity (AZURE_FEDERATED_TOKEN_FILE not set), app service managed identity (IDENTITY_ENDPOINT not set), managed identity (http://127.0.0.1:$dead)" "$tmp/run$n.err"; then
	ok "no credentials: sent unsigned, refused (HTTP 403), naming the chain tried"
else
	bad "no credentials: $(tail -n 2 "$tmp/run$n.err")"
fi

# a blob endpoint (the stand-in, http to this machine: tokens go there) that
# redirects to another host: refused, and that host never saw the token
before=$(stat_of blob_bearer)
run "${wi[@]}" AZURE_STORAGE_BLOB_ENDPOINT="http://127.0.0.1:$sport/$acct" -- az://data/redir/shard-000000.rfs
if ! grep -q "rc=0" "$tmp/run$n.out" && grep -q "another host" "$tmp/run$n.err" &&
	[ "$(stat_of blob_bearer)" -gt "$before" ] && ! grep -q -e Bearer -e eyJ "$tmp/other.log" 2>/dev/null; then
	ok "a redirect to another host is refused; that host never saw the token ($(cat "$tmp/other.log" 2>/dev/null | wc -l) requests)"
else
	bad "redirect: $(tail -n 1 "$tmp/run$n.err"); other host: $(head -c 300 "$tmp/other.log" 2>/dev/null)"
fi

# no secret in any output: the assertions, the identity headers, any token
# (a JWT starts eyJ)
if ! cat "$tmp"/run*.out "$tmp"/run*.err "$tmp/server.log" |
	grep -q -F -e "$fed" -e "$(cat "$tmp/wrongfed")" -e "$ih" -e "$wrong_ih" -e eyJ; then
	ok "no token, federated token or identity header in any output"
else
	bad "a secret in the output"
fi
echo "(stand-in: $(cat "$tmp/stats"))"
[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
