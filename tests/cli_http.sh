#!/usr/bin/env bash
# cli_http.sh - `ringfeed read` over the network gives exactly what it gives
# from local files: the same digest from nginx (HTTP, and HTTPS with the CA
# file), from s3rver (single keys by brace range, and a prefix listing with
# small pages), and from the SigV4 verifier (credentials from AWS_*); a wrong
# secret fails clearly (403 SignatureDoesNotMatch) and neither the secret nor
# the session token appears in any output, even with RF_HTTP_TRACE=1; a
# missing object fails at once naming it (one request); a body cut mid-range
# is resumed from the same object version (and read again whole when the
# version changed), and retries still bound a range cut every time.
set -euo pipefail
src=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/tests/servers.inc.sh"
rf_servers_or_start
cli=${RF_CLI:?RF_CLI must name the ringfeed binary}

. "$src/tests/check.inc.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-http.XXXXXX")
rf_at_exit "rm -rf '$tmp'"
tag=cli-http-$$
"$cli" pack --demo -o "$tmp/ds" --demo-bytes 6MiB --demo-shards 4 >/dev/null
shards=$(cd "$tmp/ds" && ls shard-*.rfs | wc -l)
[ "$shards" -ge 2 ] || bad "expected several shards, got $shards"
last=$(printf '%06d' $((shards - 1)))
brace="shard-{000000..$last}.rfs"
read_digest() { "$cli" read --digest "$@" | tail -n 1; }

want=$(read_digest "$tmp/ds")
case $want in records=*digest=*) ok "local digest: $want" ;; *) bad "local read: '$want'" ;; esac

# ---- nginx: HTTP, HTTPS + CA file -------------------------------------------
mkdir -p "$RF_NGINX_ROOT/$tag"
cp "$tmp"/ds/shard-*.rfs "$RF_NGINX_ROOT/$tag/"
rf_at_exit "rm -rf '$RF_NGINX_ROOT/$tag'"
same "http digest" "$want" "$(read_digest --connections 4 "$RF_NGINX_URL/$tag/$brace")"
same "https digest (CA file)" "$want" \
	"$(read_digest --ca-file "$RF_CA_FILE" "$RF_NGINX_TLS_URL/$tag/$brace")"
same "fetch-only bench reads every byte" \
	"$(cat "$tmp"/ds/shard-*.rfs | wc -c)" \
	"$("$cli" bench --fetch-only --json "$RF_NGINX_URL/$tag/$brace" |
		/usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["bytes"])')"

# ---- a missing object: clear error, one request -------------------------------
rc=0
"$cli" read --digest "$RF_BAD_URL/404/$tag/shard-000000.rfs" >/dev/null 2>"$tmp/err" || rc=$?
[ $rc -ne 0 ] && ok "404 fails" || bad "404 read succeeded"
grep -q "404/$tag/shard-000000.rfs" "$tmp/err" && grep -q "HTTP 404" "$tmp/err" &&
	ok "404 message names URL and status" || bad "404 message: $(cat "$tmp/err")"
n=$(curl -sf "$RF_BAD_URL/_stats" | /usr/bin/python3 -c "import json,sys; \
print(json.load(sys.stdin).get('/404/$tag/shard-000000.rfs', {}).get('requests', 0))")
same "404: the server saw one request" 1 "$n"

# ---- retries through the loader: a 500 then success; retries running out ----
mkdir -p "$RF_BAD_ROOT/$tag"
cp "$tmp"/ds/shard-*.rfs "$RF_BAD_ROOT/$tag/"
rf_at_exit "rm -rf '$RF_BAD_ROOT/$tag'"
same "500 once, then the same digest" "$want" \
	"$(read_digest "$RF_BAD_URL/500-once/$tag/$brace")"
# every range (footer, index, blocks) arrives damaged once, then sound: the
# loader reads the same bytes again (the footer alone is a remote shard's
# first read) and delivers the same records; the server counts the damage
flips=$(curl -sf "$RF_BAD_URL/_stats" | python3 -c "import json,sys; print(sum(v['faults'] for k,v in json.load(sys.stdin).items() if '/flip-once/' in k))")
same "a flipped byte once per range, then the same digest" "$want" \
	"$(read_digest "$RF_BAD_URL/flip-once/$tag/$brace")"
flips2=$(curl -sf "$RF_BAD_URL/_stats" | python3 -c "import json,sys; print(sum(v['faults'] for k,v in json.load(sys.stdin).items() if '/flip-once/' in k))")
[ "$flips2" -gt "$((flips + 2))" ] && ok "flip-once: $((flips2 - flips)) damaged answers were read again" ||
	bad "flip-once: the server damaged $((flips2 - flips)) answers (want footers, indexes and blocks)"
rc=0
"$cli" read --digest --retries 2 "$RF_BAD_URL/reset-always/$tag/shard-000000.rfs" \
	>/dev/null 2>"$tmp/err" || rc=$?
[ $rc -ne 0 ] && grep -q "reset-always/$tag/shard-000000.rfs" "$tmp/err" &&
	grep -q "bytes [0-9]*-[0-9]*" "$tmp/err" && grep -q "3 attempts" "$tmp/err" &&
	ok "retries exhausted: URL, range and attempts named" ||
	bad "retries exhausted: rc $rc, message: $(cat "$tmp/err")"

# ---- cut bodies resumed: the rest of a range, from the same version ----------
# every range of reset-once-versioned is cut at its half once (the answers
# carry an ETag); the loader keeps what came and asks for the rest only
faults() { # MODE -> the server's faults so far for that mode
	curl -sf "$RF_BAD_URL/_stats" | /usr/bin/python3 -c "import json,sys
print(sum(v['faults'] for k,v in json.load(sys.stdin).items() if '/$1/$tag/' in k))"
}
same "cut once per range, resumed: the same digest" "$want" \
	"$(read_digest --cache off --retries 1 --stats "$tmp/resume.json" "$RF_BAD_URL/reset-once-versioned/$tag/$brace")"
n=$(rf_json "$tmp/resume.json" fetch_resumes)
kept=$(rf_json "$tmp/resume.json" fetch_resumed_bytes)
cuts=$(faults reset-once-versioned)
# a small range's half can be lost with the connection's reset (nothing to
# keep: asked again whole); the 1 MiB blocks' halves are not
[ "$n" -ge "$shards" ] && [ "$n" -le "$cuts" ] && [ "$kept" -gt 0 ] &&
	ok "resumed: $n of $cuts cut ranges asked only for their rest, $kept bytes kept" ||
	bad "resumed: fetch_resumes $n, fetch_resumed_bytes $kept, the server cut $cuts ranges"
# the object changes between the cut and the rest: the rest is refused (its
# ETag is another) and the range is read again from its start
rc=0
RF_HTTP_TRACE=1 "$cli" read --digest --cache off --retries 2 --stats "$tmp/change.json" \
	"$RF_BAD_URL/version-change-once/$tag/$brace" >"$tmp/out" 2>"$tmp/err" || rc=$?
same "version changed mid-range: the same digest" "$want" "$(tail -n 1 "$tmp/out")"
grep -q "the object's version changed after [0-9]* bytes of the range had come: read again from its start" "$tmp/err" &&
	ok "version changed mid-range: said so, read again" ||
	bad "version changed mid-range: rc $rc, no such line: $(grep -v ' -> ' "$tmp/err" | head -c 600)"
# cut every time: each attempt keeps half of what is left, so the range never
# ends; attempts that keep less than 64 KiB use up the retries, and it fails
rc=0
"$cli" read --digest --cache off --retries 2 "$RF_BAD_URL/reset-always-versioned/$tag/shard-000000.rfs" \
	>/dev/null 2>"$tmp/err" || rc=$?
[ $rc -ne 0 ] && grep -q "reset-always-versioned/$tag/shard-000000.rfs" "$tmp/err" &&
	grep -q "retries exhausted" "$tmp/err" && grep -q "3 attempts" "$tmp/err" &&
	ok "cut every time, resumed: retries still run out: $(head -c 300 "$tmp/err")" ||
	bad "cut every time, resumed: rc $rc, message: $(cat "$tmp/err")"

# ---- s3rver: upload, single keys, prefix listing with pagination -------------
s3=(--s3-endpoint "$RF_S3_ENDPOINT" --s3-access-key "$RF_S3_ACCESS_KEY"
	--s3-secret-key "$RF_S3_SECRET_KEY")
for f in "$tmp"/ds/shard-*.rfs; do
	rf_s3_put "$f" "$tag/$(basename "$f")" || bad "upload $f"
done
same "s3 single keys digest" "$want" \
	"$(read_digest "${s3[@]}" "s3://$RF_S3_BUCKET/$tag/$brace")"
same "s3 prefix digest" "$want" "$(read_digest "${s3[@]}" "s3://$RF_S3_BUCKET/$tag/")"

# ---- SigV4 verifier: the environment's credentials; a wrong secret -----------
mkdir -p "$RF_SIGV4_ROOT/$RF_SIGV4_BUCKET/$tag"
cp "$tmp"/ds/shard-*.rfs "$RF_SIGV4_ROOT/$RF_SIGV4_BUCKET/$tag/"
rf_at_exit "rm -rf '$RF_SIGV4_ROOT/$RF_SIGV4_BUCKET/$tag'"
same "sigv4 prefix digest (AWS_* variables, pages of $RF_SIGV4_PAGE_KEYS)" "$want" \
	"$(AWS_ENDPOINT_URL=$RF_SIGV4_URL AWS_REGION=$RF_SIGV4_REGION \
		AWS_ACCESS_KEY_ID=$RF_SIGV4_ACCESS AWS_SECRET_ACCESS_KEY=$RF_SIGV4_SECRET \
		read_digest "s3://$RF_SIGV4_BUCKET/$tag/")"
secret=wrong-Secret-$$-zq token=Token-$$-xk
for url in "s3://$RF_SIGV4_BUCKET/$tag/" "s3://$RF_SIGV4_BUCKET/$tag/shard-000000.rfs"; do
	rc=0
	RF_HTTP_TRACE=1 AWS_ENDPOINT_URL=$RF_SIGV4_URL AWS_ACCESS_KEY_ID=$RF_SIGV4_ACCESS \
		AWS_SECRET_ACCESS_KEY=$secret AWS_SESSION_TOKEN=$token \
		"$cli" read --digest "$url" >"$tmp/out" 2>"$tmp/err" || rc=$?
	[ $rc -ne 0 ] && ok "wrong secret fails ($url)" || bad "wrong secret read succeeded ($url)"
	# a listing names S3's code; a HEAD (single key) has no body to carry one
	want_words=SignatureDoesNotMatch
	case $url in */) ;; *) want_words="wrong key or secret" ;; esac
	grep -q "HTTP 403" "$tmp/err" && grep -q "$want_words" "$tmp/err" &&
		ok "wrong secret: HTTP 403, '$want_words'" || bad "wrong secret message: $(cat "$tmp/err")"
	if grep -q -e "$secret" -e "$token" "$tmp/out" "$tmp/err"; then
		bad "a credential appears in the output"
	else
		ok "no credential in stdout, stderr or the trace"
	fi
done

rf_checks_done
