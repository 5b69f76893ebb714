#!/usr/bin/env bash
# stores_bench.sh [BUILD_DIR] - the emulated stores against nginx serving the
# same files: `ringfeed bench --fetch-only` (every byte of every shard, no
# decode; fetch-only's own clock) from
#   (a) nginx (scripts/servers.sh's, HTTP on loopback),
#   (b) the GCS stand-in, tests/gcs_server.py (gs://, OAuth bearer tokens
#       from a service account key; python3's ThreadingHTTPServer),
#   (c) Azurite (az://, Shared Key over HTTP; Node, in memory),
# interleaved, medians of REPEATS; beside each, `curl --parallel
# --parallel-max CONNECTIONS` downloading the same objects from the same
# server (whole objects, a bearer token from the stand-in's refresh-token
# grant, an account SAS for Azurite): where curl is no faster than the
# loader, the server is the bound, not the loader. The figures are the
# emulators' speed, not the clouds'.
# Env: DEMO_BYTES (default 256MiB), DEMO_SHARDS (16), CONNECTIONS (16),
# REPEATS (3), STORES (nginx,gcs,azure). Prints one line per store and a
# JSON summary last.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
cli=$build/ringfeed
py=/usr/bin/python3
[ -x "$cli" ] || { echo "stores_bench: build ringfeed first ($cli)" >&2; exit 1; }
DEMO_BYTES=${DEMO_BYTES:-256MiB} DEMO_SHARDS=${DEMO_SHARDS:-16}
CONNECTIONS=${CONNECTIONS:-16} REPEATS=${REPEATS:-3} STORES=${STORES:-nginx,gcs,azure}
azurite=$top/.cache/npm/node_modules/.bin/azurite-blob

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-stores-bench.XXXXXX")
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	[ -n "${own:-}" ] && "$top/scripts/servers.sh" stop "$own" >/dev/null 2>&1 || true
	[ -n "${RF_NGINX_ROOT:-}" ] && rm -rf "$RF_NGINX_ROOT/stores-bench-$$"
	rm -rf "$tmp" ${own:+"$own"}
}
trap cleanup EXIT
free_port() { "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now() { date +%s.%N; }
# mbps CMD...: MB/s of one run of CMD fetching $bytes (a failure stops the bench)
mbps() {
	local t0 t1
	t0=$(now)
	"$@" >/dev/null
	t1=$(now)
	echo "$bytes / ($t1 - $t0) / 1000000" | bc -l | xargs printf '%.1f\n'
}
curl_all() { # STORE: every object of the dataset, CONNECTIONS at a time
	local args=() i
	for ((i = 0; i < n; i++)); do
		args+=(-o /dev/null "$(printf "${curl_url[$1]}" "$(printf '%06d' $i)")")
	done
	curl -sf --parallel --parallel-max "$CONNECTIONS" -H "${curl_hdr[$1]}" "${args[@]}" 2>/dev/null
}
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

"$cli" pack --demo -o "$tmp/ds" --demo-bytes "$DEMO_BYTES" --demo-shards "$DEMO_SHARDS" >/dev/null
n=$(ls "$tmp"/ds/shard-*.rfs | wc -l)
last=$(printf '%06d' $((n - 1)))
bytes=$(cat "$tmp"/ds/shard-*.rfs | wc -c)
declare -A url curl_url curl_hdr
stores=()
for s in ${STORES//,/ }; do
	case $s in
	nginx)
		if [ -z "${RF_NGINX_URL:-}" ] || [ -z "${RF_NGINX_ROOT:-}" ]; then
			own=$(mktemp -d "${TMPDIR:-/tmp}/rf-stores-bench-servers.XXXXXX")
			"$top/scripts/servers.sh" start "$own" 2>/dev/null
			. "$own/env"
		fi
		mkdir -p "$RF_NGINX_ROOT/stores-bench-$$"
		cp "$tmp"/ds/shard-*.rfs "$RF_NGINX_ROOT/stores-bench-$$/"
		url[nginx]="$RF_NGINX_URL/stores-bench-$$/shard-{000000..$last}.rfs"
		curl_url[nginx]="$RF_NGINX_URL/stores-bench-$$/shard-%s.rfs"
		curl_hdr[nginx]="X-Bench: 1"
		;;
	gcs)
		port=$(free_port) email=bench@test.iam.gserviceaccount.com
		"$py" "$top/tests/gcs_keygen.py" $email "http://localhost:$port/token" "$tmp/sa.json" \
			"$tmp/sa.pub" "$tmp/wrong.json" "$tmp/wrong.pub"
		mkdir -p "$tmp/gcs/bkt/ds"
		cp "$tmp"/ds/shard-*.rfs "$tmp/gcs/bkt/ds/"
		"$py" "$top/tests/gcs_server.py" --root "$tmp/gcs" --port "$port" --ports-file "$tmp/gcs.ports" \
			--sa-email $email --sa-pubkey "$tmp/sa.pub" --client-id bench --client-secret bench-secret \
			--refresh-token bench-refresh >"$tmp/gcs.log" 2>&1 &
		pids+=($!)
		for _ in $(seq 1 100); do [ -s "$tmp/gcs.ports" ] && break; sleep 0.1; done
		token=$(curl -sf -d grant_type=refresh_token -d client_id=bench -d client_secret=bench-secret \
			-d refresh_token=bench-refresh "http://127.0.0.1:$port/token" |
			"$py" -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')
		curl_url[gcs]="http://127.0.0.1:$port/storage/v1/b/bkt/o/ds%%2Fshard-%s.rfs?alt=media"
		curl_hdr[gcs]="Authorization: Bearer $token"
		export STORAGE_EMULATOR_HOST=127.0.0.1:$port GOOGLE_APPLICATION_CREDENTIALS=$tmp/sa.json \
			CLOUDSDK_CONFIG=$tmp/none GCE_METADATA_HOST=127.0.0.1:1
		url[gcs]="gs://bkt/ds/shard-{000000..$last}.rfs"
		;;
	azure)
		[ -x "$azurite" ] || { echo "stores_bench: Azurite is not installed ($azurite)" >&2; exit 1; }
		port=$(free_port)
		"$azurite" --blobHost 127.0.0.1 --blobPort "$port" --inMemoryPersistence --loose \
			--skipApiVersionCheck --silent --disableTelemetry >"$tmp/azurite.log" 2>&1 &
		pids+=($!)
		for _ in $(seq 1 200); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
		# Azurite's well-known development account (public, not a secret)
		acct=devstoreaccount1
		key="Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
		args=()
		for f in "$tmp"/ds/shard-*.rfs; do args+=("ds/$(basename "$f")" "$f"); done
		"$py" "$top/tests/azure_put.py" "http://127.0.0.1:$port/$acct" $acct "$key" data "${args[@]}"
		export AZURE_STORAGE_ACCOUNT=$acct AZURE_STORAGE_KEY=$key \
			AZURE_STORAGE_BLOB_ENDPOINT=http://127.0.0.1:$port/$acct
		url[azure]="az://data/ds/shard-{000000..$last}.rfs"
		sas=$("$py" "$top/tests/azure_put.py" --sas $acct "$key")
		curl_url[azure]="http://127.0.0.1:$port/$acct/data/ds/shard-%s.rfs?${sas//%/%%}"
		curl_hdr[azure]="x-ms-version: 2021-08-06"
		;;
	*) echo "stores_bench: unknown store $s" >&2; exit 2 ;;
	esac
	stores+=("$s")
done

declare -A mbs cmbs
for ((r = 0; r < REPEATS; r++)); do # interleaved, so drift hits every store alike
	for s in "${stores[@]}"; do
		"$cli" bench --fetch-only --json --cache off --connections "$CONNECTIONS" "${url[$s]}" >"$tmp/out.json"
		read -r m got < <("$py" -c 'import json,sys; d=json.load(open(sys.argv[1]))
print("%.1f %d" % (d["mb_per_s"], d["bytes"]))' "$tmp/out.json")
		[ "$got" = "$bytes" ] || { echo "stores_bench: $s fetched $got of $bytes bytes" >&2; exit 1; }
		mbs[$s]+="$m "
		cmbs[$s]+="$(mbps curl_all "$s") "
	done
done

echo "fetch-only, $n shards, $bytes bytes, --connections $CONNECTIONS, medians of $REPEATS (MB/s):"
base=
json="{\"bytes\":$bytes,\"shards\":$n,\"connections\":$CONNECTIONS,\"repeats\":$REPEATS"
for s in "${stores[@]}"; do
	# shellcheck disable=SC2086
	med=$(median ${mbs[$s]}) cmed=$(median ${cmbs[$s]})
	[ "$s" = nginx ] && base=$med
	ratio=
	[ -n "$base" ] && [ "$s" != nginx ] && ratio=$(echo "$med / $base" | bc -l | xargs printf ' (%.2f of nginx)')
	printf '  %-6s loader %7s MB/s%s, curl %7s MB/s; loader/curl %s (runs: loader %s; curl %s)\n' "$s" "$med" \
		"$ratio" "$cmed" "$(echo "$med / $cmed" | bc -l | xargs printf '%.2f')" "${mbs[$s]% }" "${cmbs[$s]% }"
	json+=",\"${s}_mb_per_s\":$med,\"${s}_curl_mb_per_s\":$cmed"
done
echo "$json}"
