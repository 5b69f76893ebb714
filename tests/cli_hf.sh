#!/usr/bin/env bash
# cli_hf.sh - the Hugging Face Hub store (fetch/hf_store.c) against
# tests/hf_server.py, a stand-in for the Hub's API (revision, paged tree in
# reverse name order, resolve redirecting to a "CDN" on another port that
# logs every header it gets). A private repository with two commits under a
# folder whose name holds a space, '+', '%' and non-ASCII letters (and a file
# named with those and ".."): reads give the local digests through a paged
# listing put in key order; a branch is pinned to its commit once per open
# (the stand-in moves main as soon as it has said where main is); a tag, a
# commit and one named file read their own versions; the token comes from
# HF_TOKEN or $HF_HOME/token; a missing or wrong token is refused naming the
# repository, never the token; a model repository (hf://ORG/NAME/..., no
# prefix) and a space (hf://spaces/...) read with their local digests through
# their own API and resolve paths; a malformed name is told the forms; the
# CDN never sees the token; the Python binding reads the same records.
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
trap '[ -n "$spid" ] && { kill $spid 2>/dev/null; wait $spid 2>/dev/null; }; rm -rf "$tmp"' EXIT

# two versions of one dataset: v1 (tag), then main
"$cli" pack --demo -o "$tmp/ds1" --demo-bytes 256KiB --demo-shards 2 >/dev/null
"$cli" pack --demo -o "$tmp/ds2" --demo-bytes 768KiB --demo-shards 3 --block-size 16KiB >/dev/null
want1=$("$cli" read --digest --no-shuffle "$tmp/ds1" | tail -n 1)
want2=$("$cli" read --digest --no-shuffle "$tmp/ds2" | tail -n 1)
want_one=$("$cli" read --digest --no-shuffle "$tmp/ds2/shard-000001.rfs" | tail -n 1)
want1_0=$("$cli" read --digest --no-shuffle "$tmp/ds1/shard-000000.rfs" | tail -n 1)
sha1=1111111111111111111111111111111111111111
sha2=2222222222222222222222222222222222222222
folder="odd dir+a%b/ünï"
repo=$tmp/hub/datasets/org/set
for v in 1 2; do
	sha=sha$v
	mkdir -p "$repo/${!sha}/$folder" "$repo/${!sha}/other"
	cp "$tmp/ds$v"/*.rfs "$repo/${!sha}/$folder/"
	echo "# a dataset card, not a shard" >"$repo/${!sha}/README.md"
	echo "not a shard either" >"$repo/${!sha}/$folder/notes.txt"
done
# a file name of its own with a space, '+', a literal "%20", 'ü' and ".." (sorts first still)
mv "$repo/$sha2/$folder/shard-000000.rfs" "$repo/$sha2/$folder/shard-000000 a+b%20ü..c.rfs"
echo "{\"main\": \"$sha2\", \"v1\": \"$sha1\"}" >"$repo/refs.json"
# a model repository (v1's shards as its weights) and a space (one of main's)
sha3=3333333333333333333333333333333333333333
sha4=4444444444444444444444444444444444444444
mkdir -p "$tmp/hub/models/org/model/$sha3/weights" "$tmp/hub/spaces/org/app/$sha4/data"
cp "$tmp/ds1"/*.rfs "$tmp/hub/models/org/model/$sha3/weights/"
echo '{"model_type": "not a shard"}' >"$tmp/hub/models/org/model/$sha3/config.json"
echo "{\"main\": \"$sha3\"}" >"$tmp/hub/models/org/model/refs.json"
cp "$tmp/ds2/shard-000001.rfs" "$tmp/hub/spaces/org/app/$sha4/data/"
echo "{\"main\": \"$sha4\", \"v2\": \"$sha4\"}" >"$tmp/hub/spaces/org/app/refs.json"
token=hf_SecretTokenForTheStandIn_7d1e
"$py" "$src/tests/hf_server.py" "$tmp/hub" "$tmp/ports" --token "$token" --page 2 \
	--move-main-to "$sha1" --grant-uses 2 &
spid=$!
for _ in $(seq 1 100); do [ -s "$tmp/ports" ] && break; sleep 0.1; done
read -r hub cdn <"$tmp/ports" || { bad "the stand-in did not start"; exit 1; }
mkdir -p "$tmp/home" "$tmp/hfhome"
export HF_ENDPOINT=http://127.0.0.1:$hub HOME=$tmp/home HF_HOME=$tmp/hfhome
unset HF_TOKEN HF_TOKEN_PATH
read_hf() { "$cli" read --digest --no-shuffle "$@" 2>"$tmp/err" | tail -n 1; }

SECONDS=0
got=$(HF_TOKEN=$token read_hf "hf://datasets/org/set/$folder/")
echo "(read in ${SECONDS} s)"
[ "$got" = "$want2" ] && ok "main, a private repository, HF_TOKEN: the local digest" ||
	bad "main: '$got' vs '$want2': $(tail -n 2 "$tmp/err")"
pages=$(grep -c "^GET /api/datasets/org/set/tree/$sha2/.*cursor=" "$tmp/hub/hub.log")
[ "$pages" -ge 1 ] && ok "a listing of $((pages + 1)) pages (Link header), at the commit" ||
	bad "listing: $((pages + 1)) pages"
# main now points at v1: that read pinned main's commit before it moved
resolves=$(grep -c "^GET /datasets/org/set/resolve/$sha2/" "$tmp/hub/hub.log")
[ "$resolves" -ge 3 ] && ok "the reads resolved at main's commit ($resolves)" ||
	bad "reads at the commit: $resolves"
got=$(HF_TOKEN=$token read_hf "hf://datasets/org/set@main/$folder/")
[ "$got" = "$want1" ] && ok "the next open pins main again: its new commit (v1's digest)" ||
	bad "main moved: '$got' vs '$want1': $(tail -n 2 "$tmp/err")"

got=$(HF_TOKEN=$token read_hf "hf://datasets/org/set@v1/$folder/")
[ "$got" = "$want1" ] && ok "a tag: its version's digest" || bad "tag: '$got': $(tail -n 2 "$tmp/err")"
hub0=$(grep -c "^GET /datasets/org/set/resolve/" "$tmp/hub/hub.log")
cdn0=$(grep -c "^GET /blobs/" "$tmp/hub/cdn.log")
got=$(HF_TOKEN=$token read_hf --request-size 16KiB "hf://datasets/org/set@$sha2/$folder/")
[ "$got" = "$want2" ] && ok "a pinned commit: its version's digest" ||
	bad "commit: '$got': $(tail -n 2 "$tmp/err")"
# a file's reads go to its CDN location once the Hub named it; a grant the
# CDN refuses (after 2 uses here) sends the read back to the Hub
hubn=$(($(grep -c "^GET /datasets/org/set/resolve/" "$tmp/hub/hub.log") - hub0))
cdnn=$(($(grep -c "^GET /blobs/" "$tmp/hub/cdn.log") - cdn0))
[ "$hubn" -gt 3 ] && [ "$hubn" -lt "$cdnn" ] &&
	ok "3 files: $cdnn CDN requests for $hubn resolves (locations reused, refused grants renewed)" ||
	bad "3 files: $cdnn CDN requests, $hubn resolves"
got=$(HF_TOKEN=$token RF_HTTP_TRACE=1 read_hf "hf://datasets/org/set@$sha2/$folder/shard-000001.rfs")
grep -q "redirect to http://127.0.0.1:$cdn (another host: unsigned" "$tmp/err" &&
	! grep -q -F "$token" "$tmp/err" &&
	ok "the client followed the resolve to the CDN unsigned (trace; no token in it)" ||
	bad "no unsigned hop to the CDN in the trace, or the token in it"
[ "$got" = "$want_one" ] && ok "one named file (size by HEAD through the CDN): its digest" ||
	bad "one file: '$got' vs '$want_one': $(tail -n 2 "$tmp/err")"

# a file named under a branch: its commit asked once, every request sent there
got=$(HF_TOKEN=$token read_hf "hf://datasets/org/set/$folder/shard-000000.rfs")
[ "$got" = "$want1_0" ] && ok "one file named under main: its commit's digest" ||
	bad "one file at main: '$got' vs '$want1_0': $(tail -n 2 "$tmp/err")"
unpinned=$(grep -c "^[A-Z]* /datasets/org/set/resolve/main/" "$tmp/hub/hub.log")
[ "$unpinned" -eq 0 ] && ok "no request ever went to resolve/main/ (every one at a commit)" ||
	bad "$unpinned requests to resolve/main/"
rc=0
HF_TOKEN=$token "$cli" read --digest "hf://datasets/org/set@nosuch/$folder/shard-000000.rfs" \
	>"$tmp/out" 2>"$tmp/err" || rc=$?
[ $rc -ne 0 ] && grep -q "org/set@nosuch" "$tmp/err" && grep -q "HTTP 404" "$tmp/err" &&
	ok "a file under a branch that does not exist: refused naming it (HTTP 404)" ||
	bad "missing branch: rc $rc: $(tail -n 1 "$tmp/err")"

# a model repository: no prefix, /api/models/ and /ORG/NAME/resolve/
got=$(HF_TOKEN=$token read_hf "hf://org/model/weights/")
[ "$got" = "$want1" ] && grep -q "^GET /api/models/org/model/revision/main " "$tmp/hub/hub.log" &&
	grep -q "^GET /api/models/org/model/tree/$sha3/weights?" "$tmp/hub/hub.log" &&
	grep -q "^GET /org/model/resolve/$sha3/weights/shard-000000.rfs " "$tmp/hub/hub.log" &&
	ok "a model repository (hf://org/model/weights/): the local digest, at its commit" ||
	bad "model: '$got' vs '$want1': $(tail -n 2 "$tmp/err")"
# a space: one file named under a tag, pinned to its commit
got=$(HF_TOKEN=$token read_hf "hf://spaces/org/app@v2/data/shard-000001.rfs")
[ "$got" = "$want_one" ] && grep -q "^GET /api/spaces/org/app/revision/v2 " "$tmp/hub/hub.log" &&
	grep -q "^[A-Z]* /spaces/org/app/resolve/$sha4/data/shard-000001.rfs " "$tmp/hub/hub.log" &&
	! grep -q "^[A-Z]* /spaces/org/app/resolve/v2/" "$tmp/hub/hub.log" &&
	ok "a space (hf://spaces/org/app@v2/FILE): the local digest, at the tag's commit" ||
	bad "space: '$got' vs '$want_one': $(tail -n 2 "$tmp/err")"
rc=0
"$cli" read --digest "hf://models/org/model/weights/" >"$tmp/out" 2>"$tmp/err" || rc=$?
[ $rc -ne 0 ] && grep -q "a model repository has no prefix: hf://ORG/NAME\[@REVISION\]/PATH" "$tmp/err" &&
	ok "hf://models/...: refused, told a model has no prefix" || bad "hf://models: rc $rc: $(tail -n 1 "$tmp/err")"
rc=0
"$cli" read --digest "hf://spaces/org" >"$tmp/out" 2>"$tmp/err" || rc=$?
[ $rc -ne 0 ] && grep -q -F "hf://[datasets/|spaces/]ORG/NAME[@REVISION]/PATH (no prefix: a model)" "$tmp/err" &&
	ok "a malformed name: refused, naming the forms" || bad "malformed: rc $rc: $(tail -n 1 "$tmp/err")"
echo "  (the message: $(tail -n 1 "$tmp/err"))"

printf '%s\n' "$token" >"$tmp/hfhome/token"
got=$(read_hf "hf://datasets/org/set@v1/$folder/")
[ "$got" = "$want1" ] && ok "the token from \$HF_HOME/token" || bad "HF_HOME token: '$got': $(tail -n 2 "$tmp/err")"
rm "$tmp/hfhome/token"

rc=0
"$cli" read --digest "hf://datasets/org/set@v1/$folder/" >"$tmp/out" 2>"$tmp/err" || rc=$?
if [ $rc -ne 0 ] && grep -q "HTTP 401" "$tmp/err" && grep -q "org/set@v1/$folder" "$tmp/err" &&
	grep -q "no Hub token" "$tmp/err"; then
	ok "no token: refused (HTTP 401), naming the repository and revision"
else
	bad "no token: rc $rc: $(tail -n 1 "$tmp/err")"
fi
echo "  (the message: $(tail -n 1 "$tmp/err"))"
wrong=hf_NotTheRightTokenAtAll_0042
rc=0
HF_TOKEN=$wrong "$cli" read --digest "hf://datasets/org/set/$folder/" >"$tmp/out" 2>"$tmp/err" || rc=$?
if [ $rc -ne 0 ] && grep -q "HTTP 401" "$tmp/err" && grep -q "token from HF_TOKEN" "$tmp/err" &&
	! grep -q -F -e "$wrong" -e "$token" "$tmp/err" "$tmp/out"; then
	ok "a wrong token: refused (HTTP 401) naming its source, not the token"
else
	bad "wrong token: rc $rc: $(tail -n 1 "$tmp/err")"
fi
echo "  (the message: $(tail -n 1 "$tmp/err"))"

if [ -s "$tmp/hub/cdn.log" ] && grep -q "^GET /blobs/" "$tmp/hub/cdn.log" &&
	grep -q -F "Bearer $token" "$tmp/hub/hub.log"; then
	if grep -q -i -F -e "$token" -e "authorization" "$tmp/hub/cdn.log"; then
		bad "the token (or an Authorization header) reached the CDN"
	else
		ok "the Hub got the token, the CDN ($(grep -c '^GET\|^HEAD' "$tmp/hub/cdn.log") requests) never"
	fi
else
	bad "the logs do not show the token at the Hub and reads at the CDN"
fi

# the Python binding reads the same records through hf:// as from the files
if "$py" -c 'import numpy' 2>/dev/null && [ -e "$build/libringfeed.so" ] &&
	! grep -q '^RF_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
	pyread='import hashlib, sys, ringfeed
h = hashlib.sha256()
with ringfeed.Loader(sys.argv[1], batch=64, shuffle=False, budget="64MiB") as L:
    for b in L:
        h.update(b.payload_array().tobytes()); h.update(b.offsets_array().tobytes()); b.release()
print(h.hexdigest())'
	export RINGFEED_LIBRARY=$build/libringfeed.so PYTHONPATH=$src/python PYTHONDONTWRITEBYTECODE=1
	local_py=$("$py" -c "$pyread" "$tmp/ds2" 2>"$tmp/err")
	hf_py=$(HF_TOKEN=$token "$py" -c "$pyread" "hf://datasets/org/set@$sha2/$folder/" 2>>"$tmp/err")
	[ -n "$local_py" ] && [ "$hf_py" = "$local_py" ] && ok "the Python binding: the same records" ||
		bad "Python: '$hf_py' vs '$local_py': $(tail -n 2 "$tmp/err")"
else
	echo "(the Python check is left out: no numpy, no shared library, or a sanitizer build)"
fi

[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
