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
# CDN never sees the token (nor any Authorization header, over every
# request of the test); `verify` passes at a commit; `ringfeed index -o DIR`
# of a tar dataset repository under a branch writes the local index's bytes,
# and once the index files are committed beside the tars (a new commit the
# branch moves to) the open pins that commit and reads the index, not the
# headers (the local digest); the Python binding (ringfeed.Loader) and
# RingfeedDataset (torch) give the local read's records.
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
trap '[ -n "$spid" ] && { kill $spid 2>/dev/null; wait $spid 2>/dev/null; }; [ -n "${RF_KEEP:-}" ] || rm -rf "$tmp"' EXIT

# two versions of one dataset: v1 (tag), then main
"$cli" pack --demo -o "$tmp/ds1" --demo-bytes 256KiB --demo-shards 2 >/dev/null
# main: 3 shards of several 16 KiB blocks each (so a read of 16 KiB requests
# asks each file more than twice)
"$py" -c "import hashlib,sys; sys.stdout.write(''.join('main-%06d %s\\n' % (i, hashlib.sha256(b'%d' % i).hexdigest() * 3) for i in range(3000)))" >"$tmp/main.txt"
"$cli" pack --from lines "$tmp/main.txt" -o "$tmp/ds2" --block-size 16KiB --shard-size 48KiB >/dev/null
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
# a WebDataset tar dataset (3 shards of 40 samples, two fields each) and its
# local index, in a dataset repository of its own whose branch "dev" is a
# commit of the tars alone (its "main" would be moved by --move-main-to)
mkdir -p "$tmp/tars" "$tmp/tars_idx" "$tmp/hf_idx"
"$py" "$src/tests/wds_tars.py" "$tmp/tars"
cp "$tmp"/tars/*.tar "$tmp/tars_idx/"
"$cli" index "$tmp/tars_idx" >/dev/null 2>&1 || bad "ringfeed index of the local tars failed"
want_tars=$("$cli" read --digest --no-shuffle "$tmp/tars" | tail -n 1)
tar_bytes=$(cat "$tmp"/tars/*.tar | wc -c)
sha5=5555555555555555555555555555555555555555
sha6=6666666666666666666666666666666666666666
wds="wds ü+%"
wrepo=$tmp/hub/datasets/org/wds
mkdir -p "$wrepo/$sha5/$wds"
cp "$tmp"/tars/*.tar "$wrepo/$sha5/$wds/"
echo "# tars" >"$wrepo/$sha5/README.md"
echo "{\"dev\": \"$sha5\"}" >"$wrepo/refs.json"
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
got=$(HF_TOKEN=$token read_hf --cache off --request-size 16KiB "hf://datasets/org/set@$sha2/$folder/")
[ "$got" = "$want2" ] && ok "a pinned commit: its version's digest" ||
	bad "commit: '$got': $(tail -n 2 "$tmp/err")"
# a file's reads go to its CDN location once the Hub named it; a grant the
# CDN refuses (after 2 uses here) sends the read back to the Hub (the data
# cache off: every block is a request, not only the open's one per file)
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

# verify at a commit: every shard of the folder (the odd file name too)
cdn0=$(grep -c "^GET /blobs/datasets/$sha2/" "$tmp/hub/cdn.log")
vok=$(HF_TOKEN=$token "$cli" verify --cache off "hf://datasets/org/set@$sha2/$folder/" 2>"$tmp/err" |
	grep -c "^ok hf://datasets/org/set@$sha2/$folder/shard-")
cdnn=$(($(grep -c "^GET /blobs/datasets/$sha2/" "$tmp/hub/cdn.log") - cdn0))
[ "$vok" = 3 ] && [ "$cdnn" -ge 3 ] && ok "verify: the 3 shards ok ($cdnn CDN requests)" ||
	bad "verify: $vok ok, $cdnn CDN requests: $(tail -n 2 "$tmp/err")"

# ringfeed index over hf:// under a branch (into -o DIR: the Hub is not
# written to): the local index's bytes, read at the branch's commit
wurl="hf://datasets/org/wds@dev/$wds/"
HF_TOKEN=$token "$cli" index --json -o "$tmp/hf_idx" "$wurl" >"$tmp/index.json" 2>"$tmp/err"
same_idx=0
for s in 0 1 2; do cmp -s "$tmp/hf_idx/shard-00000$s.idx" "$tmp/tars_idx/shard-00000$s.idx" && same_idx=$((same_idx + 1)); done
tars5=$(grep -c "^GET /datasets/org/wds/resolve/$sha5/wds%20%C3%BC%2B%25/shard-00000[0-2].tar " "$tmp/hub/hub.log")
grep -q '"written": *3' "$tmp/index.json" && [ $same_idx = 3 ] && [ "$tars5" -ge 3 ] &&
	ok "ringfeed index -o DIR of a Hub tar dataset (@dev): 3 written, the local index's bytes" ||
	bad "index over hf://: $same_idx of 3 equal the local index, $tars5 resolves at dev's commit: $(head -c 300 "$tmp/index.json") $(tail -n 2 "$tmp/err")"
got=$(HF_TOKEN=$token read_hf --cache off "$wurl")
[ "$got" = "$want_tars" ] && ok "the tar dataset without an index: the local digest" ||
	bad "tars without an index: '$got' vs '$want_tars': $(tail -n 2 "$tmp/err")"
# the upload: a new commit holding the tars and their index files; dev moves
# to it (the Hub's commits never change: the old one still has no index)
cp -R "$wrepo/$sha5" "$wrepo/$sha6"
cp "$tmp"/hf_idx/*.idx "$wrepo/$sha6/$wds/"
echo "{\"dev\": \"$sha6\", \"tars-only\": \"$sha5\"}" >"$wrepo/refs.json"
got=$(HF_TOKEN=$token read_hf --cache off --stats "$tmp/idx.json" "$wurl")
open_bytes=$(grep -o '"open_fetched_bytes": *[0-9]*' "$tmp/idx.json" | grep -o '[0-9]*$')
idx6=$(grep -c "^GET /blobs/datasets/$sha6/org/wds/wds%20%C3%BC%2B%25/shard-00000[0-2].idx?" "$tmp/hub/cdn.log")
[ "$got" = "$want_tars" ] && [ "$idx6" -ge 3 ] && [ "${open_bytes:-0}" -gt 0 ] &&
	[ "$open_bytes" -lt $((tar_bytes / 20)) ] &&
	ok "... with the index committed beside the tars: dev pinned to the new commit, the local digest, the open read $open_bytes of $tar_bytes bytes" ||
	bad "tars with the index: '$got', $idx6 index reads at the new commit, the open read ${open_bytes:-?} of $tar_bytes bytes: $(tail -n 2 "$tmp/err")"
# the pinned old commit still reads the headers (no index there)
got=$(HF_TOKEN=$token read_hf --cache off --stats "$tmp/idx5.json" "hf://datasets/org/wds@tars-only/$wds/")
open5=$(grep -o '"open_fetched_bytes": *[0-9]*' "$tmp/idx5.json" | grep -o '[0-9]*$')
[ "$got" = "$want_tars" ] && [ "${open5:-0}" -gt "${open_bytes:-0}" ] &&
	ok "... the commit before it (a tag): the local digest from the headers (the open read $open5 bytes)" ||
	bad "the old commit: '$got', the open read ${open5:-?} bytes: $(tail -n 2 "$tmp/err")"

# the Python binding (ringfeed.Loader; numpy) and RingfeedDataset (torch):
# the records of the local read, one interpreter for all of them
if [ -e "$build/libringfeed.so" ] &&
	! grep -q '^RF_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
	cdn0=$(grep -c "^GET /blobs/" "$tmp/hub/cdn.log")
	RINGFEED_LIBRARY=$build/libringfeed.so PYTHONPATH=$src/python PYTHONDONTWRITEBYTECODE=1 \
		HF_TOKEN=$token "$py" "$src/tests/store_records.py" --loader "$tmp/ds2" \
		"hf://datasets/org/set@$sha2/$folder/" >"$tmp/py.out" 2>"$tmp/err"
	cdnn=$(($(grep -c "^GET /blobs/" "$tmp/hub/cdn.log") - cdn0))
	lines=$(wc -l <"$tmp/py.out")
	local_l=$(sed -n 1p "$tmp/py.out") hf_l=$(sed -n 2p "$tmp/py.out")
	local_d=$(sed -n 3p "$tmp/py.out") hf_d=$(sed -n 4p "$tmp/py.out")
	if [ "$lines" = 0 ] && grep -q "^left out: " "$tmp/err"; then
		echo "(the Python check is left out: $(sed -n 's/^left out: //p' "$tmp/err" | head -n 1))"
	else
		[ -n "$local_l" ] && [ "$hf_l" = "$local_l" ] && [ "$cdnn" -gt 0 ] &&
			ok "the Python binding (Loader): the same records (${local_l#loader }, $cdnn CDN requests)" ||
			bad "Python Loader: '$hf_l' vs '$local_l': $(tail -n 3 "$tmp/err")"
	fi
	if [ "$lines" = 4 ]; then
		[ "${local_d#dataset }" = "${local_l#loader }" ] && [ "$hf_d" = "$local_d" ] &&
			ok "Python RingfeedDataset over hf:// (HF_TOKEN): the local records" ||
			bad "Python RingfeedDataset: '$hf_d' vs '$local_d' (Loader: '$local_l'): $(tail -n 3 "$tmp/err")"
	elif [ "$lines" = 2 ] && grep -q "^left out: " "$tmp/err"; then
		echo "(the RingfeedDataset check is left out: $(sed -n 's/^left out: //p' "$tmp/err" | head -n 1))"
	elif [ "$lines" != 0 ]; then
		bad "Python RingfeedDataset: $lines lines: $(tail -n 3 "$tmp/err")"
	fi
	grep -q -F "$token" "$tmp/py.out" "$tmp/err" && bad "the token appears in Python's output"
else
	echo "(the Python check is left out: no shared library, or a sanitizer build)"
fi

# last: every request of the test, index, verify and Python's included
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

[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
