#!/usr/bin/env bash
# cli_azure.sh - the Azure Blob store (fetch/azure*.c) against Azurite,
# Microsoft's emulator, which verifies Shared Key and SAS signatures: a
# dataset uploaded under a prefix with a space, '+', '%' and a non-ASCII
# letter reads with the local digest through the account key, the connection
# string and a SAS; a listing of more than one page (RF_AZ_MAXRESULTS=2);
# a wrong key is refused with a message that names the status and holds no
# secret; `verify` passes; `ringfeed index -o DIR` of a tar dataset on az://
# writes the local index's bytes, and with the index uploaded beside the
# tars the open reads it (the local digest); the Python RingfeedDataset gives
# the local read's records; a body cut mid-range is resumed with the rest's
# range signed. Skips (77) when Azurite is not installed
# (scripts/deps.sh --test).
set -u
cli=${RF_CLI:?RF_CLI must name the ringfeed binary}
src=${RF_SOURCE_DIR:?}
build=${RF_BUILD_DIR:-$(dirname "$cli")}
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
# a WebDataset tar dataset (3 shards of 40 samples, two fields each), and
# its local index (ringfeed index beside the tars)
mkdir -p "$tmp/tars" "$tmp/tars_idx" "$tmp/az_idx"
/usr/bin/python3 "$src/tests/wds_tars.py" "$tmp/tars"
cp "$tmp"/tars/*.tar "$tmp/tars_idx/"
"$cli" index "$tmp/tars_idx" >/dev/null 2>&1 || bad "ringfeed index of the local tars failed"
want_tars=$("$cli" read --digest --no-shuffle "$tmp/tars" | tail -n 1)
tar_bytes=$(cat "$tmp"/tars/*.tar | wc -c)
args=()
for f in "$tmp"/ds/*.rfs; do args+=("$prefix/$(basename "$f")" "$f"); done
for f in "$tmp"/tars/*.tar; do args+=("wds ü+%/$(basename "$f")" "$f"); done
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

export AZURE_STORAGE_ACCOUNT=$acct AZURE_STORAGE_KEY=$key AZURE_STORAGE_BLOB_ENDPOINT=$ep
vok=$("$cli" verify --cache off "$url" 2>"$tmp/err" | grep -c "^ok az://data/$prefix/shard-")
[ "$vok" = 3 ] && ok "verify: the 3 shards ok" || bad "verify: $vok ok: $(tail -n 2 "$tmp/err")"

# ringfeed index over az:// (into -o DIR): the local index's bytes;
# uploaded beside the tars, the open reads it instead of the tars' headers
"$cli" index --json -o "$tmp/az_idx" "az://data/wds ü+%/" >"$tmp/index.json" 2>"$tmp/err"
same_idx=0
for s in 0 1 2; do cmp -s "$tmp/az_idx/shard-00000$s.idx" "$tmp/tars_idx/shard-00000$s.idx" && same_idx=$((same_idx + 1)); done
grep -q '"written": *3' "$tmp/index.json" && [ $same_idx = 3 ] &&
	ok "ringfeed index -o DIR of an az:// tar dataset: 3 written, the local index's bytes" ||
	bad "index over az://: $same_idx of 3 equal the local index: $(head -c 300 "$tmp/index.json") $(tail -n 2 "$tmp/err")"
got=$(read_az --cache off "az://data/wds ü+%/")
[ "$got" = "$want_tars" ] && ok "the tar dataset without an index: the local digest" ||
	bad "tars without an index: '$got' vs '$want_tars': $(tail -n 2 "$tmp/err")"
args=()
for f in "$tmp"/az_idx/*.idx; do args+=("wds ü+%/$(basename "$f")" "$f"); done
python3 "$src/tests/azure_put.py" "$ep" "$acct" "$key" data "${args[@]}" || bad "upload of the index failed"
got=$(read_az --cache off --stats "$tmp/idx.json" "az://data/wds ü+%/")
open_bytes=$(grep -o '"open_fetched_bytes": *[0-9]*' "$tmp/idx.json" | grep -o '[0-9]*$')
[ "$got" = "$want_tars" ] && [ "${open_bytes:-0}" -gt 0 ] && [ "$open_bytes" -lt $((tar_bytes / 20)) ] &&
	ok "... with the index beside the tars: the local digest, the open read $open_bytes of $tar_bytes bytes" ||
	bad "tars with the index: '$got', the open read ${open_bytes:-?} of $tar_bytes bytes: $(tail -n 2 "$tmp/err")"

# the Python RingfeedDataset (torch) through the account key: the records of
# a cut body resumed: every connection through rf-faultproxy is reset at
# 128 KiB of Azurite's answers, so each shard's block range is cut; the
# retry asks for the rest, signed (Shared Key covers x-ms-range) for the rest
# it asks: Azurite verifies that signature and the read ends with the digest
# (no attempt brings a whole block: without resuming it fails at any
# --retries; those given are generous, as an attempt that meets a connection
# far into its 128 KiB keeps little and uses one)
if [ -x "$build/rf-faultproxy" ]; then
	"$build/rf-faultproxy" --listen 127.0.0.1:0 --to "127.0.0.1:$port" --reset 1 --unit 256KiB \
		>"$tmp/proxy.out" 2>"$tmp/proxy.err" &
	ppid_=$!
	for _ in $(seq 1 200); do
		grep -q '^listening ' "$tmp/proxy.out" && break
		sleep 0.05
	done
	pport=$(sed -n 's/^listening 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$tmp/proxy.out")
	got=$(AZURE_STORAGE_ACCOUNT=$acct AZURE_STORAGE_KEY=$key \
		AZURE_STORAGE_BLOB_ENDPOINT=http://127.0.0.1:$pport/$acct \
		read_az --cache off --retries 10 --stats "$tmp/cut.json" "$url")
	kill "$ppid_" 2>/dev/null
	wait "$ppid_" 2>/dev/null
	n=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["fetch_resumes"])' "$tmp/cut.json" 2>/dev/null)
	[ "$got" = "$want" ] && [ "${n:-0}" -ge 1 ] && ok "cut bodies resumed, signed for the rest: the local digest ($n resumes)" ||
		bad "cut bodies: '$got', ${n:-no} resumes: $(tail -n 2 "$tmp/err")"
else
	bad "no $build/rf-faultproxy"
fi

# the same dataset read locally (one interpreter reads both)
if /usr/bin/python3 -c 'import numpy, torch' 2>/dev/null && [ -e "$build/libringfeed.so" ] &&
	! grep -q '^RF_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
	RINGFEED_LIBRARY=$build/libringfeed.so PYTHONPATH=$src/python PYTHONDONTWRITEBYTECODE=1 \
		/usr/bin/python3 "$src/tests/store_records.py" "$tmp/ds" "$url" >"$tmp/py.out" 2>"$tmp/err"
	local_py=$(sed -n 's/^dataset //;1p' "$tmp/py.out") az_py=$(sed -n 's/^dataset //;2p' "$tmp/py.out")
	[ -n "$local_py" ] && [ "$az_py" = "$local_py" ] && [ "${local_py%% *}" = "${want%% *}" ] &&
		ok "Python RingfeedDataset over az:// (account key): the local records (${local_py%% *})" ||
		bad "Python: '$az_py' vs '$local_py' (want ${want%% *}): $(tail -n 3 "$tmp/err")"
	grep -q -F -e "$key" "$tmp/py.out" "$tmp/err" && bad "the key appears in Python's output"
else
	echo "(the Python check is left out: no numpy or torch, no shared library, or a sanitizer build)"
fi

[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
