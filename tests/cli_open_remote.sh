#!/usr/bin/env bash
# cli_open_remote.sh - remote shards open many at a time and a long open says
# how far it got (issue 22 item 12). A private bad_http answers the first
# request of each shard (its tail) under /slow-nth-1-MS/ after MS ms, and
# counts the most requests it held in such a wait at once (/_inflight).
# 300 .rfs shards listed in a manifest with presigned-looking URLs
# (?X-Amz-Signature=...), 2 s per tail: the open lasts 4 s at least (300
# waits, at most 256 connections at once), so it prints progress (past 2 s)
# and its end, naming the slowest open in flight redacted (never the
# signature). The opens overlap past the old bounds: 64 opens in flight and
# 16 connections per host, so the server saw at most 16 at once; now the
# stats say 512 opens allowed, more than 64 in flight, 256 connections per
# host, and the server sees more than 64 at once. Each open is one request
# (the object's last 8 KiB: footer and index; the engine asked remote
# objects for the footer's 40 bytes alone, then the index: two store
# latencies a shard). --open-connections bounds
# what the server sees (24 waits of 1 s, 8 at once: 3 s at least, long
# enough for a progress line that --open-progress 0 keeps silent); local
# files keep 64 opens at once. The first batch's reads keep the open's
# connections per host, then the reads go back to --connections (a private
# count per path of how many requests the server held at once); a
# --connections given without --open-connections bounds the first batch's
# reads too. Timing decides nothing.
set -euo pipefail
src=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/tests/servers.inc.sh"
. "$src/tests/check.inc.sh"
cli=${RF_CLI:?RF_CLI must name the ringfeed binary}
PY=/usr/bin/python3
guard_s=120 # a hang guard far above the seconds expected

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-open-remote.XXXXXX")
rf_at_exit "rm -rf '$tmp'"
mkdir -p "$tmp/root/ds" "$tmp/few"
# always a private server: its in-flight figure must be this test's alone
$PY "$src/tests/servers/bad_http.py" --root "$tmp/root" --port 0 \
	--port-file "$tmp/bad.port" >"$tmp/bad.log" 2>&1 &
bad_pid=$!
rf_at_exit "kill $bad_pid 2>/dev/null; wait $bad_pid 2>/dev/null"
for _ in $(seq 100); do [ -s "$tmp/bad.port" ] && break; sleep 0.1; done
[ -s "$tmp/bad.port" ] || { cat "$tmp/bad.log" >&2; echo "FAIL: bad_http did not start" >&2; exit 1; }
url=http://127.0.0.1:$(cat "$tmp/bad.port")
inflight() { $PY -c 'import json,sys,urllib.request; print(json.load(urllib.request.urlopen(sys.argv[1] + "/_inflight"))["inflight_max"])' "$url"; }
reset() { $PY -c 'import sys,urllib.request; urllib.request.urlopen(sys.argv[1] + "/_reset").read()' "$url"; }

$PY -c "import sys; sys.stdout.write(''.join('rec-%06d\n' % i for i in range(2000)))" >"$tmp/few.txt"
"$cli" pack --from lines "$tmp/few.txt" -o "$tmp/few" --block-size 1KiB --shard-size 2KiB >/dev/null
one=$tmp/few/shard-000000.rfs
bytes=$(stat -c %s "$one")
records=$(awk -F'\t' '$1 == "shard-000000.rfs" {print $3}' "$tmp/few/manifest.rfm")
# the shard served 300 times (links: one process, not 300), and a manifest
# of the first COUNT under /MODE/ for each MODE:COUNT, signed-looking
manifests() { # MODE:COUNT...
	$PY - "$one" "$tmp/root/ds" "$tmp" "$url" "$bytes" "$records" "$@" <<'PYEOF'
import os, sys
one, ds, tmp, url, size, recs = sys.argv[1:7]
for i in range(300):
    os.link(one, "%s/s-%03d.rfs" % (ds, i))
for spec in sys.argv[7:]:
    mode, n = spec.split(":")
    with open("%s/m-%s.rfm" % (tmp, mode), "w") as f:
        f.write("# ringfeed manifest v1\n")
        for i in range(int(n)):
            f.write("%s/%s/ds/s-%03d.rfs?X-Amz-Signature=SECRETSIG%03d\t%s\t%s\n"
                    % (url, mode, i, i, size, recs))
PYEOF
}
manifests slow-nth-1-2000:300 slow-nth-1-1000:24

# 300 shards, 2 s a tail
rc=0
timeout $guard_s "$cli" read --digest --batch 1 --stop-after 1 --stats "$tmp/a.json" \
	"$tmp/m-slow-nth-1-2000.rfm" >"$tmp/a.out" 2>"$tmp/a.err" || rc=$?
seen=$(inflight)
same "300 slow shards: exit 0" 0 "$rc"
grep -q "^records=1 " "$tmp/a.out" && ok "300 slow shards: the first batch" ||
	bad "300 slow shards: no batch: $(cat "$tmp/a.out" "$tmp/a.err")"
line='^ringfeed: opening shards: [0-9]+/300, [0-9.]+ [KMG]?i?B of indexes read, [0-9.]+ s \(512 at a time\); '
line+='slowest in flight [0-9.]+ s: http://127\.0\.0\.1:[0-9]+/slow-nth-1-2000/ds/s-[0-9]{3}\.rfs\?\.\.\. '
line+='\((opening|reading)\); (about [0-9]+ s left|none done yet)$'
if grep -qE "$line" "$tmp/a.err"; then
	ok "progress on stderr ($(grep -c 'opening shards' "$tmp/a.err") lines), the slowest shard named"
else
	bad "no progress line in: $(cat "$tmp/a.err")"
fi
grep -qE '^ringfeed: opening shards: 300/300 done, [0-9.]+ [KMG]?i?B of indexes read, [0-9.]+ s \(512 at a time\)$' \
	"$tmp/a.err" && ok "the open's end said" || bad "no end line in: $(cat "$tmp/a.err")"
if grep -q SECRETSIG "$tmp/a.err" "$tmp/a.out" "$tmp/a.json"; then
	bad "a signature was shown: $(grep -h SECRETSIG "$tmp/a.err" "$tmp/a.out" | head -n 2)"
else
	ok "no signature in the output or the stats"
fi
same "stats: open_shards" 300 "$(rf_json "$tmp/a.json" open_shards)"
same "stats: open_concurrency (remote)" 512 "$(rf_json "$tmp/a.json" open_concurrency)"
same "stats: open_connections (the default)" 256 "$(rf_json "$tmp/a.json" open_connections)"
same "stats: open_reads (one request a shard: footer and index in one range)" 300 \
	"$(rf_json "$tmp/a.json" open_reads)"
n=$(rf_json "$tmp/a.json" open_inflight_max)
[ "$n" -gt 64 ] && ok "stats: $n opens in flight at once (more than 64)" ||
	bad "stats: open_inflight_max $n (want more than 64)"
n=$(rf_json "$tmp/a.json" open_progress_lines)
[ "$n" -ge 2 ] && ok "stats: $n progress lines" || bad "stats: open_progress_lines $n"
[ "$seen" -gt 64 ] && [ "$seen" -le 256 ] &&
	ok "the server answered $seen requests at once (more than 64, at most 256 connections)" ||
	bad "the server answered at most $seen requests at once (want 65..256)"

# --open-connections bounds the requests at once; --open-progress 0 is silent
reset
rc=0
timeout $guard_s "$cli" read --digest --batch 1 --stop-after 1 --stats "$tmp/b.json" \
	--open-connections 8 --connections 4 --open-progress 0 "$tmp/m-slow-nth-1-1000.rfm" \
	>"$tmp/b.out" 2>"$tmp/b.err" || rc=$?
seen=$(inflight)
same "--open-connections 8: exit 0" 0 "$rc"
[ "$seen" -ge 1 ] && [ "$seen" -le 8 ] && ok "--open-connections 8: the server saw $seen at once" ||
	bad "--open-connections 8: the server saw $seen at once (1..8)"
same "stats: open_connections 8" 8 "$(rf_json "$tmp/b.json" open_connections)"
grep -q "opening shards" "$tmp/b.err" && bad "--open-progress 0 printed: $(cat "$tmp/b.err")" ||
	ok "--open-progress 0: no progress line (an open of $(rf_json "$tmp/b.json" open_s) s)"
same "stats: no progress lines" 0 "$(rf_json "$tmp/b.json" open_progress_lines)"

# The first batch's reads keep the open's connections per host: its window
# is read while the consumer waits, as the opens were. Two shards of ~118
# 1 KiB blocks, every request held 100 ms, --shuffle-window 1024: the first
# window (about 60 blocks) lies in the first shard of the plan, and the
# rest of the second shard is read after the first batch. With
# --connections 4 --open-connections 64, the server sees more than 4 of the
# first shard's requests at once (the old engine dropped to 4 at the open's
# end: at most 4), and at most 4 of the second's (back to 4 after the first
# batch). Which shard comes first is the plan's: one path each way. No
# hedging: a hedge's cancelled loser still waits out its delay at the
# server, which then holds one more than the client's connections (a slow
# sanitizer run hedged, and the server saw 5).
$PY -c "import sys; sys.stdout.write(''.join('line-%06d-%s\n' % (i, 'y' * 40) for i in range(4000)))" \
	>"$tmp/two.txt"
"$cli" pack --from lines "$tmp/two.txt" -o "$tmp/two" --block-size 1KiB --shard-size 20KiB >/dev/null
two=$(awk -F'\t' '!/^#/ {print $1}' "$tmp/two/manifest.rfm")
[ "$(echo "$two" | wc -l)" -eq 2 ] || { bad "pack made $(echo "$two" | wc -l) shards, want 2"; }
{
	echo "# ringfeed manifest v1"
	i=0
	for f in $two; do
		ln "$tmp/two/$f" "$tmp/root/ds/two-$i.rfs"
		printf '%s/slow-every-1-100/ds/two-%d.rfs\t%s\t%s\n' "$url" "$i" \
			"$(stat -c %s "$tmp/two/$f")" "$(awk -F'\t' -v f="$f" '$1 == f {print $3}' "$tmp/two/manifest.rfm")"
		i=$((i + 1))
	done
} >"$tmp/m-two.rfm"
reset
rc=0
timeout $guard_s "$cli" read --digest --batch 1 --shuffle-window 1024 --connections 4 \
	--open-connections 64 --hedge 0 --open-progress 0 --stats "$tmp/d.json" "$tmp/m-two.rfm" \
	>"$tmp/d.out" 2>"$tmp/d.err" || rc=$?
same "two slow shards: exit 0" 0 "$rc"
"$cli" read --digest --batch 1 --shuffle-window 1024 "$tmp/two/manifest.rfm" >"$tmp/d.local" 2>/dev/null
same "two slow shards: the digest of a local read" "$(cat "$tmp/d.local")" "$(cat "$tmp/d.out")"
read -r hi lo < <($PY -c 'import json,sys,urllib.request
st = json.load(urllib.request.urlopen(sys.argv[1] + "/_stats"))
v = sorted(st[k].get("inflight_max", 0) for k in st if "/ds/two-" in k)
print(v[-1], v[0])' "$url")
[ "$hi" -gt 4 ] && ok "the first window's reads: $hi of its shard's at once (more than --connections 4)" ||
	bad "the first window's reads: at most $hi of its shard's at once (want more than 4)"
[ "$lo" -ge 1 ] && [ "$lo" -le 4 ] && ok "after the first batch: $lo of the other shard's at once (at most 4)" ||
	bad "after the first batch: $lo of the other shard's at once (want 1..4)"
n=$(rf_json "$tmp/d.json" start_connections_s)
$PY -c 'import sys; sys.exit(0 if float(sys.argv[1]) > 0 else 1)' "$n" &&
	ok "stats: start_connections_s $n" || bad "stats: start_connections_s $n (want > 0)"
n=$(rf_json "$tmp/d.json" first_batch_s)
$PY -c 'import sys; o = float(sys.argv[2]); sys.exit(0 if float(sys.argv[1]) >= o > 0 else 1)' \
	"$n" "$(rf_json "$tmp/d.json" open_s)" && ok "stats: first_batch_s $n (after the open)" ||
	bad "stats: first_batch_s $n, open_s $(rf_json "$tmp/d.json" open_s)"
# --connections given alone is the reads' limit, the first batch's too
reset
timeout $guard_s "$cli" read --digest --batch 1 --shuffle-window 1024 --connections 4 \
	--hedge 0 --open-progress 0 --stats "$tmp/e.json" "$tmp/m-two.rfm" >"$tmp/e.out" 2>"$tmp/e.err"
same "--connections 4 alone: the same digest" "$(cat "$tmp/d.local")" "$(cat "$tmp/e.out")"
read -r hi lo < <($PY -c 'import json,sys,urllib.request
st = json.load(urllib.request.urlopen(sys.argv[1] + "/_stats"))
v = sorted(st[k].get("inflight_max", 0) for k in st if "/ds/two-" in k)
print(v[-1], v[0])' "$url")
[ "$hi" -ge 1 ] && [ "$hi" -le 4 ] && ok "--connections 4 alone: at most $hi of a shard's at once" ||
	bad "--connections 4 alone: $hi of a shard's at once (want 1..4: the limit asked for)"
same "--connections 4 alone: none kept for the first batch" 0.0 "$(rf_json "$tmp/e.json" start_connections_s)"

# local files keep their bound
"$cli" read --digest --batch 1 --stop-after 1 --stats "$tmp/c.json" "$tmp/few" >/dev/null 2>&1
same "local shards: 64 opens at once" 64 "$(rf_json "$tmp/c.json" open_concurrency)"
same "local shards: no connections raised" 0 "$(rf_json "$tmp/c.json" open_connections)"
same "local shards: none kept for the first batch" 0.0 "$(rf_json "$tmp/c.json" start_connections_s)"
rf_checks_done cli_open_remote
