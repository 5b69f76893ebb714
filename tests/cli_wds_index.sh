#!/usr/bin/env bash
# cli_wds_index.sh - WebDataset index files (DALI wds2idx v1.2, PREFIX.idx
# beside PREFIX.tar): `ringfeed index` writes them, a small reimplementation
# of DALI's wds2idx writes them too, and with either the open reads the index
# instead of the tar's headers: the same digest as without one, locally,
# over nginx and over s3rver (a brace range and a prefix listing, which must
# take the .idx as the tar's index, not as a Megatron dataset), while the
# open fetches far fewer bytes than the shards (stats: open_fetched_bytes, a
# count). `index --check` names a stale index; a read through a stale index
# fails instead of giving wrong samples; a remote dataset (nginx, an S3
# prefix) is indexed into -o DIR with the local index's bytes, and needs it.
# Several jobs (--jobs) report what one does, in order.
set -euo pipefail
src=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/tests/servers.inc.sh"
rf_servers_or_start
cli=${RF_CLI:?RF_CLI must name the ringfeed binary}
PY=/usr/bin/python3

. "$src/tests/check.inc.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-wds-index.XXXXXX")
rf_at_exit "rm -rf '$tmp'"
tag=cli-wds-index-$$
mkdir -p "$tmp/ds"
# metadata members, a directory, GNU and PAX long names, a missing field, an
# uppercase extension, an empty member
"$PY" - "$tmp/ds" <<'PYEOF'
import io, random, sys, tarfile
rng = random.Random(13)
def add(t, name, data):
    ti = tarfile.TarInfo(name); ti.size = len(data); ti.mtime = 0
    t.addfile(ti, io.BytesIO(data))
for s, fmt in enumerate([tarfile.PAX_FORMAT, tarfile.GNU_FORMAT, tarfile.USTAR_FORMAT]):
    with tarfile.open(f"{sys.argv[1]}/shard-{s:06d}.tar", "w", format=fmt) as t:
        add(t, "__meta__", b"shard metadata")
        d = tarfile.TarInfo("train"); d.type = tarfile.DIRTYPE; t.addfile(d)
        for i in range(50):
            key = f"train/{s:02d}{i:05d}"
            if i == 4 and fmt != tarfile.USTAR_FORMAT:
                key = "train/" + "long" * 40 + f"{s}{i}"
            fields = {"jpg": rng.randbytes(rng.randint(20000, 120000)),
                      "cls": b"%d" % (i % 10), "json": b'{"i": %d}' % i}
            if i % 7 == 3:
                del fields["cls"]
            if i == 9:
                fields["json"] = b""
            for ext, data in fields.items():
                add(t, f"{key}.{'JPG' if ext == 'jpg' and i == 8 else ext}", data)
PYEOF
shard_bytes=$(cat "$tmp"/ds/*.tar | wc -c)

# DALI's tools/wds2idx.py, its tarfile path, reimplemented: regular members
# only, offset = the archive's position after the header (the data), grouped
# by DALI's split_name, dot-files skipped, `v1.2 N` then one line per sample
# of `ext offset size name` groups.
dali_wds2idx() {
	"$PY" - "$1" "$2" <<'PYEOF'
import sys, tarfile
def split_name(p):
    dot = p.find(".", p.rfind("/") + 1)
    return p[:dot], p[dot + 1:]
agg, last = [], None
with tarfile.open(sys.argv[1]) as a:
    for m in iter(a):
        if m.type != tarfile.REGTYPE:
            continue
        offset = a.fileobj.tell()
        assert offset == m.offset_data, (m.name, offset, m.offset_data)
        base, ext = split_name(m.name)
        if not base or base.endswith("/"):
            continue
        if last != base:
            agg.append([(ext, offset, m.size, m.name)])
            last = base
        else:
            agg[-1].append((ext, offset, m.size, m.name))
with open(sys.argv[2], "w") as f:
    f.write(f"v1.2 {len(agg)}\n")
    for b in agg:
        f.write(" ".join(" ".join(map(str, c)) for c in b))
        f.write("\n")
PYEOF
}

# DIGEST and the open's fetched bytes of a read with ARGS
read_run() { # STATS-FILE ARGS...
	local st=$1
	shift
	"$cli" read --digest --seed 5 --batch 8 --stats "$st" "$@" | tail -n 1
}
open_bytes() { "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["open_fetched_bytes"])' "$1"; }

want=$(read_run "$tmp/st0" "$tmp/ds")
case $want in records=150*digest=*) ok "local digest without an index: $want" ;; *) bad "local read: '$want'" ;; esac
scan_bytes=$(open_bytes "$tmp/st0")
[ "$scan_bytes" -ge $((shard_bytes / 2)) ] && ok "the header scan reads the shards ($scan_bytes of $shard_bytes bytes)" ||
	bad "the scan read only $scan_bytes of $shard_bytes bytes"

# ---------------------------------------------------------- ringfeed index
cp -r "$tmp/ds" "$tmp/rf"
"$cli" index "$tmp/rf" >"$tmp/index.out" 2>"$tmp/index.err" || bad "ringfeed index failed: $(cat "$tmp/index.err")"
[ "$(ls "$tmp"/rf/*.idx | wc -l)" = 3 ] && ok "ringfeed index wrote 3 .idx files" || bad "index files: $(ls "$tmp/rf")"
grep -q "writing" "$tmp/index.err" || bad "no progress on stderr"
head -n 1 "$tmp/rf/shard-000000.idx" | grep -Eq '^v1\.2 50$' || bad "not a v1.2 index: $(head -c 80 "$tmp/rf/shard-000000.idx")"
ls "$tmp"/rf/*.tmp.* >/dev/null 2>&1 && bad "a temporary file was left"
same "digest with ringfeed's index (local)" "$want" "$(read_run "$tmp/st1" "$tmp/rf")"
idx_bytes=$(open_bytes "$tmp/st1")
[ "$idx_bytes" -lt $((shard_bytes / 20)) ] && ok "with an index the open reads $idx_bytes bytes (shards: $shard_bytes)" ||
	bad "with an index the open read $idx_bytes bytes of $shard_bytes"
same "one shard named with its index" "$("$cli" read --digest --no-shuffle "$tmp/ds/shard-000001.tar" | tail -n 1)" \
	"$("$cli" read --digest --no-shuffle "$tmp/rf/shard-000001.tar" | tail -n 1)"
"$cli" index --check "$tmp/rf" >"$tmp/check.out" 2>/dev/null && ok "index --check: sound" || bad "index --check: $(cat "$tmp/check.out")"
"$cli" inspect "$tmp/rf/shard-000000.tar" | grep -q "index file .*shard-000000.idx used" || bad "inspect does not show the index used"
"$cli" inspect "$tmp/ds/shard-000000.tar" | grep -q "headers scanned" || bad "inspect does not show the headers scanned"
"$cli" verify "$tmp/rf" >/dev/null || bad "verify of the indexed dataset"
mkdir -p "$tmp/out"
"$cli" index -o "$tmp/out" --json "$tmp/ds" >"$tmp/o.json" 2>/dev/null || bad "index -o"
"$PY" - "$tmp/o.json" <<'PYEOF' || bad "index --json"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["shards"] == 3 and d["written"] == 3 and d["failed"] == 0, d
assert all(r["status"] == "wrote" and r["index"].endswith(".idx") for r in d["results"]), d
PYEOF
cmp -s "$tmp/out/shard-000002.idx" "$tmp/rf/shard-000002.idx" || bad "-o DIR wrote another index"
[ -e "$tmp/ds/shard-000000.idx" ] && bad "-o DIR wrote beside the tar"

# ------------------------------------------------- DALI's wds2idx, its format
cp -r "$tmp/ds" "$tmp/dali"
for f in "$tmp"/dali/*.tar; do dali_wds2idx "$f" "${f%.tar}.idx"; done
grep -q "__meta__ " "$tmp/dali/shard-000000.idx" || bad "the DALI reimplementation lists no metadata member"
same "digest with DALI's index (local)" "$want" "$(read_run "$tmp/st2" "$tmp/dali")"
[ "$(open_bytes "$tmp/st2")" -lt $((shard_bytes / 20)) ] || bad "DALI's index: the open read $(open_bytes "$tmp/st2") bytes"
"$cli" index --check "$tmp/dali" >/dev/null 2>&1 && ok "index --check accepts DALI's index" || bad "index --check refused DALI's index"

# ------------------------------------------------------------- stale index
cp -r "$tmp/rf" "$tmp/stale"
"$PY" - "$tmp/stale/shard-000001.tar" <<'PYEOF'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w", format=tarfile.PAX_FORMAT) as t:
    for i in range(50):
        for ext in ("jpg", "cls"):
            data = b"x" * (3000 + i)
            ti = tarfile.TarInfo(f"other/{i:05d}.{ext}"); ti.size = len(data)
            t.addfile(ti, io.BytesIO(data))
PYEOF
if "$cli" index --check "$tmp/stale" >"$tmp/stale.out" 2>/dev/null; then
	bad "index --check passed a stale index"
else
	grep -q "STALE .*shard-000001.tar" "$tmp/stale.out" && ok "index --check names the stale index" ||
		bad "index --check output: $(cat "$tmp/stale.out")"
	grep -q "^ok .*shard-000000.tar" "$tmp/stale.out" || bad "index --check: the sound ones not ok"
fi
if "$cli" read --digest --no-shuffle "$tmp/stale/shard-000001.tar" >/dev/null 2>"$tmp/stale.err"; then
	bad "a read through a stale index succeeded"
else
	grep -q "shard-000001.idx\|stale" "$tmp/stale.err" && ok "a read through a stale index fails: $(tail -n 1 "$tmp/stale.err" | cut -c1-160)" ||
		bad "stale read error: $(cat "$tmp/stale.err")"
fi
# a member renamed in place (same offsets, checksum made good): only decode's
# walk of the headers can see it; verify and read must
"$PY" - "$tmp/stale/shard-000002.tar" <<'PYEOF'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
at = b.index(b"train/0200011.cls\0")
b[at + 16] = ord("z")
h = b[at:at + 512]
h[148:156] = b" " * 8
b[at + 148:at + 156] = b"%06o\0 " % sum(h)
open(p, "wb").write(bytes(b))
PYEOF
if "$cli" verify "$tmp/stale/shard-000002.tar" >"$tmp/verify.out" 2>&1; then
	bad "verify passed a tar whose index is stale"
else
	grep -q "unit .*train/0200011.clz.*stale" "$tmp/verify.out" && ok "verify checks the index against its tar" ||
		bad "verify output: $(cat "$tmp/verify.out")"
fi
if "$cli" read --digest --no-shuffle "$tmp/stale/shard-000002.tar" >/dev/null 2>"$tmp/stale2.err"; then
	bad "a read through an index that lies about a member succeeded"
else
	grep -q "unit .*stale" "$tmp/stale2.err" && ok "decode catches the renamed member" || bad "read error: $(cat "$tmp/stale2.err")"
fi
"$cli" index --check "$tmp/stale" >"$tmp/stale2.out" 2>/dev/null || true
grep -q "STALE .*shard-000002" "$tmp/stale2.out" || bad "index --check misses the renamed member"
rm "$tmp/stale/shard-000001.idx"
"$cli" index --check "$tmp/stale" >"$tmp/miss.out" 2>/dev/null && bad "index --check passed a missing index"
grep -q "MISSING .*shard-000001" "$tmp/miss.out" || bad "index --check does not name the missing index: $(cat "$tmp/miss.out")"
# several jobs (--jobs) report what one does, in the dataset's order: a stale
# index, a missing one and sound ones (--check, text and --json)
for form in "" --json; do
	"$cli" index --check --jobs 1 $form "$tmp/stale" "$tmp/ds" >"$tmp/jobs1.out" 2>/dev/null || true
	"$cli" index --check --jobs 8 $form "$tmp/stale" "$tmp/ds" >"$tmp/jobs8.out" 2>/dev/null || true
	cmp -s "$tmp/jobs1.out" "$tmp/jobs8.out" && grep -q "MISSING" "$tmp/jobs8.out" &&
		ok "index --check${form:+ $form}: 8 jobs report what 1 does" ||
		bad "index --jobs 8${form:+ $form} differs: $(diff "$tmp/jobs1.out" "$tmp/jobs8.out" | head -5)"
done
"$cli" index --jobs 0 "$tmp/ds" >/dev/null 2>"$tmp/jobs0.err" && bad "index --jobs 0 accepted"
grep -q "jobs needs 1..64" "$tmp/jobs0.err" || bad "--jobs 0: $(cat "$tmp/jobs0.err")"
# -o DIR with two tars of one basename: the second is refused, never written
# over the first's index
mkdir -p "$tmp/twin/a" "$tmp/twin/b" "$tmp/twin/o"
cp "$tmp/ds/shard-000000.tar" "$tmp/twin/a/x.tar"
cp "$tmp/ds/shard-000001.tar" "$tmp/twin/b/x.tar"
if "$cli" index -o "$tmp/twin/o" "$tmp/twin/a/x.tar" "$tmp/twin/b/x.tar" >"$tmp/twin.out" 2>/dev/null; then
	bad "index -o: two tars of one name both written"
else
	grep -q "FAILED $tmp/twin/b/x.tar" "$tmp/twin.out" && grep -q "same name" "$tmp/twin.out" &&
		ok "index -o: the second tar of one name refused" || bad "twins: $(cat "$tmp/twin.out")"
fi
mkdir -p "$tmp/twin/ref"
"$cli" index -o "$tmp/twin/ref" "$tmp/twin/a/x.tar" >/dev/null 2>&1 || bad "index of a/x.tar alone"
cmp -s "$tmp/twin/o/x.idx" "$tmp/twin/ref/x.idx" && ok "index -o: the first tar's index kept" ||
	bad "index -o: the first tar's index was written over"
if "$cli" index "$RF_NGINX_URL/x/shard-000000.tar" >"$tmp/remote.out" 2>&1; then
	bad "ringfeed index of a remote dataset without -o succeeded"
else
	grep -q "remote dataset.*-o DIR" "$tmp/remote.out" && ok "a remote dataset needs -o DIR" ||
		bad "remote: $(cat "$tmp/remote.out")"
fi

# ------------------------------------------------------------------ nginx
brace="shard-{000000..000002}.tar"
mkdir -p "$RF_NGINX_ROOT/$tag/idx" "$RF_NGINX_ROOT/$tag/none"
rf_at_exit "rm -rf '$RF_NGINX_ROOT/$tag'"
cp "$tmp"/rf/* "$RF_NGINX_ROOT/$tag/idx/"
cp "$tmp"/ds/*.tar "$RF_NGINX_ROOT/$tag/none/"
same "http digest with the index" "$want" "$(read_run "$tmp/st3" "$RF_NGINX_URL/$tag/idx/$brace")"
[ "$(open_bytes "$tmp/st3")" -lt $((shard_bytes / 20)) ] && ok "http: the open read $(open_bytes "$tmp/st3") bytes" ||
	bad "http: the open read $(open_bytes "$tmp/st3") bytes of $shard_bytes"
same "http digest without an index (404)" "$want" "$(read_run "$tmp/st4" "$RF_NGINX_URL/$tag/none/$brace")"
[ "$(open_bytes "$tmp/st4")" -ge $((shard_bytes / 2)) ] || bad "http without an index: the open read $(open_bytes "$tmp/st4")"
# a remote dataset indexed into -o DIR (its headers scanned over HTTP, a
# presigned URL's query left out of the file's name): the local index's bytes
mkdir -p "$tmp/rix" "$RF_NGINX_ROOT/$tag/up"
"$cli" index -o "$tmp/rix" "$RF_NGINX_URL/$tag/none/shard-{000000..000001}.tar" \
	"$RF_NGINX_URL/$tag/none/shard-000002.tar?X-Amz-Signature=SECRET" >"$tmp/rix.out" 2>&1 ||
	bad "index of a remote dataset: $(cat "$tmp/rix.out")"
for s in 0 1 2; do
	cmp -s "$tmp/rix/shard-00000$s.idx" "$tmp/rf/shard-00000$s.idx" ||
		bad "remote index of shard $s differs from the local one"
done
grep -q SECRET "$tmp/rix.out" && bad "a URL's signature reached index's output"
same "remote index: 3 written" 3 "$(ls "$tmp"/rix/*.idx | wc -l)"
cp "$tmp"/ds/*.tar "$tmp"/rix/*.idx "$RF_NGINX_ROOT/$tag/up/" # uploaded beside the tars
same "http digest with the uploaded index" "$want" "$(read_run "$tmp/st4u" "$RF_NGINX_URL/$tag/up/$brace")"
[ "$(open_bytes "$tmp/st4u")" -lt $((shard_bytes / 20)) ] && ok "uploaded index: the open read $(open_bytes "$tmp/st4u") bytes" ||
	bad "uploaded index: the open read $(open_bytes "$tmp/st4u") bytes of $shard_bytes"

# ------------------------------------------------------------------ s3rver
s3=(--s3-endpoint "$RF_S3_ENDPOINT" --s3-access-key "$RF_S3_ACCESS_KEY"
	--s3-secret-key "$RF_S3_SECRET_KEY")
put() { # FILE KEY
	curl -sf -o /dev/null --aws-sigv4 "aws:amz:us-east-1:s3" \
		-H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' \
		--user "$RF_S3_ACCESS_KEY:$RF_S3_SECRET_KEY" -T "$1" \
		"$RF_S3_ENDPOINT/$RF_S3_BUCKET/$2" || bad "upload $1"
}
for f in "$tmp"/dali/*; do put "$f" "$tag/idx/$(basename "$f")"; done
for f in "$tmp"/ds/*.tar; do put "$f" "$tag/none/$(basename "$f")"; done
same "s3 digest with DALI's index" "$want" "$(read_run "$tmp/st5" "${s3[@]}" "s3://$RF_S3_BUCKET/$tag/idx/$brace")"
[ "$(open_bytes "$tmp/st5")" -lt $((shard_bytes / 20)) ] && ok "s3: the open read $(open_bytes "$tmp/st5") bytes" ||
	bad "s3: the open read $(open_bytes "$tmp/st5") bytes of $shard_bytes"
same "s3 prefix listing: .idx beside .tar is its index" "$want" \
	"$(read_run "$tmp/st6" "${s3[@]}" "s3://$RF_S3_BUCKET/$tag/idx/")"
same "s3 digest without an index" "$want" "$(read_run "$tmp/st7" "${s3[@]}" "s3://$RF_S3_BUCKET/$tag/none/$brace")"
mkdir -p "$tmp/six"
"$cli" index --json -o "$tmp/six" "${s3[@]}" "s3://$RF_S3_BUCKET/$tag/none/" >"$tmp/six.json" 2>/dev/null ||
	bad "index of an S3 prefix: $(cat "$tmp/six.json")"
same "index of an S3 prefix: 3 written" 3 "$(rf_json "$tmp/six.json" written)"
for s in 0 1 2; do
	cmp -s "$tmp/six/shard-00000$s.idx" "$tmp/rf/shard-00000$s.idx" ||
		bad "S3 index of shard $s differs from the local one"
done

# S3 answers 403 for a missing key to a caller without s3:ListBucket: the
# index is absent then, not an error (a private SigV4 verifier answers so)
mkdir -p "$tmp/v403/wds/d"
cp "$tmp"/ds/*.tar "$tmp/v403/wds/d/"
python3 "$src/tests/servers/sigv4_server.py" --root "$tmp/v403" --port 0 --missing-403 \
	--port-file "$tmp/v403.port" --access-key RFIDXACCESS --secret-key rf-idx-secret/0123 \
	>"$tmp/v403.log" 2>&1 &
echo $! >"$tmp/v403.pid"
rf_at_exit "kill $(cat "$tmp/v403.pid") 2>/dev/null || true"
for _ in $(seq 100); do
	[ -s "$tmp/v403.port" ] && break
	sleep 0.1
done
v403=(--s3-endpoint "http://127.0.0.1:$(cat "$tmp/v403.port")" --s3-access-key RFIDXACCESS
	--s3-secret-key rf-idx-secret/0123 --s3-region us-east-1)
same "s3 digest when a missing index is 403" "$want" \
	"$(read_run "$tmp/st8" "${v403[@]}" "s3://wds/d/$brace")"

rf_checks_done cli_wds_index
