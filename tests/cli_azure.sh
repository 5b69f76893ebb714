#!/usr/bin/env bash
# cli_azure.sh - the Azure Blob store (fetch/azure*.c) against Azurite,
# Microsoft's emulator, which verifies Shared Key and SAS signatures: a
# dataset uploaded under a prefix with a space, '+', '%' and a non-ASCII
# letter reads with the local digest through the account key, the connection
# string and a SAS; a listing of more than one page (RF_AZ_MAXRESULTS=2);
# a wrong key is refused with a message that names the status and holds no
# secret. Skips (77) when Azurite is not installed (scripts/deps.sh --test).
set -u
cli=${RF_CLI:?RF_CLI must name the ringfeed binary}
src=${RF_SOURCE_DIR:?}
azurite=$src/.cache/npm/node_modules/.bin/azurite-blob
if [ ! -x "$azurite" ]; then
	echo "SKIP: Azurite is not installed ($azurite); run scripts/deps.sh --test"
	exit 77
fi
tmp=$(mktemp -d)
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$azurite" --blobHost 127.0.0.1 --blobPort "$port" --inMemoryPersistence --loose \
	--skipApiVersionCheck --silent --disableTelemetry >"$tmp/azurite.log" 2>&1 &
apid=$!
trap 'kill $apid 2>/dev/null; wait $apid 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 1 200); do # until it answers HTTP
	curl -s -o /dev/null "http://127.0.0.1:$port/" && break
	sleep 0.1
done
# Azurite's well-known development account (public, not a secret)
acct=devstoreaccount1
key="Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
ep=http://127.0.0.1:$port/$acct
"$cli" pack --demo -o "$tmp/ds" --demo-bytes 1MiB --demo-shards 3 >/dev/null
want=$("$cli" read --digest --no-shuffle "$tmp/ds" | tail -n 1)
prefix="odd dir+a%b/ünï"
args=()
for f in "$tmp"/ds/*.rfs; do args+=("$prefix/$(basename "$f")" "$f"); done
python3 "$src/tests/azure_put.py" "$ep" "$acct" "$key" data "${args[@]}" ||
	{ bad "upload to Azurite failed"; exit 1; }
url="az://data/$prefix/"
read_az() { "$cli" read --digest --no-shuffle "$@" 2>"$tmp/err" | tail -n 1; }

SECONDS=0
got=$(AZURE_STORAGE_ACCOUNT=$acct AZURE_STORAGE_KEY=$key AZURE_STORAGE_BLOB_ENDPOINT=$ep read_az "$url")
echo "(read in ${SECONDS} s)"
[ "$got" = "$want" ] && ok "account key: the local digest" || bad "account key: '$got' vs '$want': $(tail -n 2 "$tmp/err")"

n=$(AZURE_STORAGE_ACCOUNT=$acct AZURE_STORAGE_KEY=$key AZURE_STORAGE_BLOB_ENDPOINT=$ep \
	RF_AZ_MAXRESULTS=2 RF_HTTP_TRACE=1 "$cli" read --digest --no-shuffle "$url" 2>&1 |
	tee "$tmp/paged" | grep -c "(listing): new -> queued")
got=$(tail -n 1 "$tmp/paged")
[ "$n" -ge 2 ] && [ "$got" = "$want" ] && ok "a listing of $n pages: the local digest" ||
	bad "paged listing: $n pages, '$got'"

cs="DefaultEndpointsProtocol=http;AccountName=$acct;AccountKey=$key;BlobEndpoint=$ep;"
got=$(AZURE_STORAGE_CONNECTION_STRING=$cs read_az "$url")
[ "$got" = "$want" ] && ok "connection string: the local digest" || bad "connection string: '$got': $(tail -n 2 "$tmp/err")"

sas=$(python3 "$src/tests/azure_put.py" --sas "$acct" "$key")
sig=$(printf '%s' "$sas" | sed 's/.*sig=//')
got=$(AZURE_STORAGE_ACCOUNT=$acct AZURE_STORAGE_SAS_TOKEN=$sas AZURE_STORAGE_BLOB_ENDPOINT=$ep \
	RF_HTTP_TRACE=1 read_az "$url")
[ "$got" = "$want" ] && ok "SAS: the local digest" || bad "SAS: '$got': $(tail -n 2 "$tmp/err")"
grep -q -F -e "$sig" "$tmp/err" && bad "the SAS signature appears in the trace" ||
	ok "the SAS never appears in the trace"

wrong=$(printf 'not the key of this account, but valid base64!!' | base64 -w0)
rc=0
AZURE_STORAGE_ACCOUNT=$acct AZURE_STORAGE_KEY=$wrong AZURE_STORAGE_BLOB_ENDPOINT=$ep \
	"$cli" read --digest "$url" >"$tmp/out" 2>"$tmp/err" || rc=$?
if [ $rc -ne 0 ] && grep -q "HTTP 403" "$tmp/err" && ! grep -q -F -e "$wrong" -e "$key" "$tmp/err" "$tmp/out"; then
	ok "a wrong key is refused (HTTP 403), no secret in the message"
else
	bad "wrong key: rc $rc: $(tail -n 1 "$tmp/err")"
fi

[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
