#!/usr/bin/env bash
# token_refresh.sh - bearer tokens that expire every few seconds during a
# long read: no failed request, no pause in delivery (issue 29's goal).
#
# A consumer (the Python binding's Loader, endless epochs, --step-ms of work
# per batch so the read lasts and keeps fetching: the data cache is off and
# the budget small, so every epoch is fetched again) reads for --seconds
# against stand-ins that issue tokens living --lifetime seconds:
#   gcs:   tests/gcs_server.py (the service account's JWT verified, every
#          data request's token checked, 401 when missing or expired);
#   azure: Azurite with --oauth basic over HTTPS (it checks each token's
#          expiry) fed by tests/entra_server.py (workload identity).
# Reported per store: tokens fetched and data requests (the stand-ins'
# counts), 401s, the loader's failed requests (fetch_errors) and retries,
# and the gaps between delivered batches as the consumer saw them (the
# median against the longest, and the longest wait inside next()), with
# the loader's fetch latency p50 / max. A refresh that made requests wait
# would show as a longest gap and a fetch latency max far above the median.
# Not in ctest (a minute per store).
#
# usage: bench/token_refresh.sh [--seconds N] [--lifetime S] [--step-ms X]
#          [--stores gcs,azure] [BUILD_DIR]
# Defaults: 60 s, 3 s tokens, 25 ms per batch of 64 records (about 10 MB/s
# of a demo dataset of 8 MiB in 8 shards, read in 256 KiB requests).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
SECONDS_RUN=60 LIFETIME=3 STEP_MS=25 STORES=gcs,azure build=$top/build
while [ $# -gt 0 ]; do
	case $1 in
	--seconds) SECONDS_RUN=$2; shift 2 ;;
	--lifetime) LIFETIME=$2; shift 2 ;;
	--step-ms) STEP_MS=$2; shift 2 ;;
	--stores) STORES=$2; shift 2 ;;
	-h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
	-*) echo "token_refresh: unknown option $1" >&2; exit 2 ;;
	*) build=$1; shift ;;
	esac
done
cli=$build/ringfeed
py=/usr/bin/python3
[ -x "$cli" ] && [ -e "$build/libringfeed.so" ] || { echo "token_refresh: build first ($build)" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-token-refresh.XXXXXX")
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
free_port() { "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
num() { # FILE NAME: a number of a flat JSON object, 0 when absent
	local v
	v=$(grep -o "\"$2\": *[0-9]*" "$1" 2>/dev/null | grep -o '[0-9]*$')
	echo "${v:-0}"
}
export RINGFEED_LIBRARY=$build/libringfeed.so PYTHONPATH=$top/python PYTHONDONTWRITEBYTECODE=1
"$cli" pack --demo -o "$tmp/ds" --demo-bytes 8MiB --demo-shards 8 >/dev/null

# the consumer: one JSON line of figures
cat >"$tmp/consume.py" <<'EOF'
import json, statistics, sys, time
import ringfeed
url, seconds, step_s = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]) / 1e3
L = ringfeed.Loader(url, epochs=0, batch=64, seed=3, cache="off", budget="32MiB",
                    request_size="256KiB")
t0 = time.monotonic()
last, gaps, waits, records, worst_at = None, [], [], 0, 0.0
while time.monotonic() - t0 < seconds:
    before = time.monotonic()
    b = L.next()
    now = time.monotonic()
    if b is None:
        raise SystemExit("the endless read ended")
    waits.append(now - before)
    if last is not None:
        gaps.append(now - last)
        if gaps[-1] == max(gaps):
            worst_at = now - t0
    last = now
    records += b.records
    b.release()
    time.sleep(step_s)
st = L.stats()
L.close()
q = statistics.quantiles(gaps, n=100)
print(json.dumps({
    "seconds": round(time.monotonic() - t0, 1), "batches": len(waits), "records": records,
    "gap_median_ms": round(statistics.median(gaps) * 1e3, 1), "gap_p99_ms": round(q[98] * 1e3, 1),
    "gap_max_ms": round(max(gaps) * 1e3, 1), "gap_max_at_s": round(worst_at, 1),
    "wait_max_ms": round(max(waits[1:]) * 1e3, 1), "consumer_wait_s": round(st["consumer_wait_s"], 3),
    "fetch_errors": st["fetch_errors"], "fetch_retries": st["fetch_retries"],
    "fetch_latency_p50_ms": round(st["fetch_latency_p50_ms"], 1),
    "fetch_latency_p99_ms": round(st["fetch_latency_p99_ms"], 1),
    "fetch_latency_max_ms": round(st["fetch_latency_max_ms"], 1),
    "fetched_bytes": st["fetched_bytes"]}))
EOF

report() { # STORE TOKENS REQUESTS 401S FIGURES-JSON
	"$py" - "$@" <<'EOF'
import json, sys
store, tokens, requests, unauth, d = sys.argv[1], *map(int, sys.argv[2:5]), json.loads(sys.argv[5])
print(f"{store}: {d['seconds']} s, {d['batches']} batches, {d['fetched_bytes'] / 1e6:.0f} MB fetched; "
      f"tokens {tokens}, data requests {requests}, 401s {unauth}, failed requests "
      f"{d['fetch_errors']}, retries {d['fetch_retries']}; gap between batches median "
      f"{d['gap_median_ms']} ms, p99 {d['gap_p99_ms']} ms, max {d['gap_max_ms']} ms (at "
      f"{d['gap_max_at_s']} s); longest wait in next() {d['wait_max_ms']} ms, consumer "
      f"waited {d['consumer_wait_s']} s in all; fetch latency p50 {d['fetch_latency_p50_ms']} ms, "
      f"p99 {d['fetch_latency_p99_ms']} ms, max {d['fetch_latency_max_ms']} ms")
print(json.dumps(dict(store=store, tokens=tokens, requests=requests, unauthorized=unauth, **d)))
EOF
}

run_gcs() {
	local port email=bench@test.iam.gserviceaccount.com
	port=$(free_port)
	"$py" "$top/tests/gcs_keygen.py" $email "http://localhost:$port/token" "$tmp/sa.json" \
		"$tmp/sa.pub" "$tmp/wrong.json" "$tmp/wrong.pub" || { echo "gcs: no keys (python3-cryptography?)" >&2; return 1; }
	mkdir -p "$tmp/gcs/bkt/ds"
	cp "$tmp"/ds/*.rfs "$tmp/gcs/bkt/ds/"
	"$py" "$top/tests/gcs_server.py" --root "$tmp/gcs" --port "$port" --ports-file "$tmp/gcs.ports" \
		--stats-file "$tmp/gcs.stats" --sa-email $email --sa-pubkey "$tmp/sa.pub" \
		--expires "$LIFETIME" >"$tmp/gcs.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 1 100); do [ -s "$tmp/gcs.ports" ] && break; sleep 0.1; done
	local figures
	figures=$(STORAGE_EMULATOR_HOST=127.0.0.1:$port GOOGLE_APPLICATION_CREDENTIALS=$tmp/sa.json \
		CLOUDSDK_CONFIG=$tmp/none GCE_METADATA_HOST=127.0.0.1:1 \
		"$py" "$tmp/consume.py" gs://bkt/ds/ "$SECONDS_RUN" "$STEP_MS")
	report gcs "$(num "$tmp/gcs.stats" tokens)" "$(num "$tmp/gcs.stats" data)" \
		"$(num "$tmp/gcs.stats" unauthorized)" "$figures"
}

run_azure() {
	local azurite=$top/.cache/npm/node_modules/.bin/azurite-blob port sport
	[ -x "$azurite" ] || { echo "azure: Azurite is not installed (scripts/deps.sh --test)" >&2; return 1; }
	port=$(free_port)
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=localhost \
		-addext "subjectAltName=IP:127.0.0.1,DNS:localhost" -addext "basicConstraints=critical,CA:TRUE" \
		-keyout "$tmp/key.pem" -out "$tmp/cert.pem" >/dev/null 2>&1
	"$azurite" --blobHost 127.0.0.1 --blobPort "$port" --inMemoryPersistence --loose --oauth basic \
		--cert "$tmp/cert.pem" --key "$tmp/key.pem" --debug "$tmp/azurite.debug" --disableTelemetry \
		>"$tmp/azurite.log" 2>&1 &
	pids+=($!)
	local tenant=72f988bf-86f1-41af-91ab-2d7cd011db47 client=0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0
	printf 'fed-%s\n' "$RANDOM$RANDOM" >"$tmp/fed"
	"$py" "$top/tests/entra_server.py" --ports-file "$tmp/entra.ports" --stats-file "$tmp/entra.stats" \
		--tenant $tenant --client-id $client --federated-token-file "$tmp/fed" --expires "$LIFETIME" \
		>"$tmp/entra.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 1 300); do
		[ -s "$tmp/entra.ports" ] && curl -s -o /dev/null --cacert "$tmp/cert.pem" "https://127.0.0.1:$port/" && break
		sleep 0.1
	done
	read -r sport _ <"$tmp/entra.ports"
	local acct=devstoreaccount1 ep=https://127.0.0.1:$port/devstoreaccount1 args=() f
	# Azurite's well-known development key, for the upload only
	local key="Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
	for f in "$tmp"/ds/*.rfs; do args+=("ds/$(basename "$f")" "$f"); done
	SSL_CERT_FILE=$tmp/cert.pem "$py" "$top/tests/azure_put.py" "$ep" $acct "$key" data "${args[@]}"
	local figures requests unauth
	figures=$(AZURE_STORAGE_ACCOUNT=$acct AZURE_STORAGE_BLOB_ENDPOINT=$ep AWS_CA_BUNDLE=$tmp/cert.pem \
		AZURE_FEDERATED_TOKEN_FILE=$tmp/fed AZURE_CLIENT_ID=$client AZURE_TENANT_ID=$tenant \
		AZURE_AUTHORITY_HOST=http://localhost:$sport/ AZURE_POD_IDENTITY_AUTHORITY_HOST=http://127.0.0.1:1 \
		"$py" "$tmp/consume.py" az://data/ds/ "$SECONDS_RUN" "$STEP_MS")
	requests=$(grep 'RequestHeaders' "$tmp/azurite.debug" | grep -c '"authorization":"Bearer ey' || true)
	unauth=$(grep -c 'StatusCode=401' "$tmp/azurite.debug" || true)
	report azure "$(num "$tmp/entra.stats" tokens)" "$requests" "$unauth" "$figures"
}

echo "token_refresh: ${SECONDS_RUN} s per store, tokens of ${LIFETIME} s, ${STEP_MS} ms per batch"
for s in ${STORES//,/ }; do
	case $s in
	gcs) run_gcs ;;
	azure) run_azure ;;
	*) echo "token_refresh: unknown store $s" >&2; exit 2 ;;
	esac
done
