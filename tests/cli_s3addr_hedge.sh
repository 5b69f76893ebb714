#!/usr/bin/env bash
# cli_s3addr_hedge.sh - hedged reads: a range read that stays in curl longer
# than its store's recent p95 (at least hedge_floor) gets one duplicate
# request; the first complete answer wins. bad_http's /slow-nth-N-MS/ mode
# holds exactly one request of a shard for 3 s: with hedging on, a duplicate
# of that range is answered at once and wins (counted in the stats), and the
# bytes are the local read's (digest); with --hedge 0 there is no duplicate.
# Timing is never asserted: only counts and digests.
set -euo pipefail
src=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/tests/servers.inc.sh"
rf_servers_or_start
cli=${RF_CLI:?RF_CLI must name the ringfeed binary}

. "$src/tests/check.inc.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-hedge.XXXXXX")
rf_at_exit "rm -rf '$tmp'"
tag=cli-hedge-$$
mkdir -p "$RF_BAD_ROOT/$tag"
rf_at_exit "rm -rf '$RF_BAD_ROOT/$tag'"
head -c 4000000 /dev/urandom >"$tmp/data.bin"
"$cli" pack --from fixed:4000 --block-size 64KiB "$tmp/data.bin" -o "$tmp/ds" >/dev/null
cp "$tmp/ds/shard-000000.rfs" "$RF_BAD_ROOT/$tag/h.rfs"
cp "$tmp/ds/shard-000000.rfs" "$RF_BAD_ROOT/$tag/n.rfs"
want=$("$cli" read --digest --no-shuffle "$tmp/ds/shard-000000.rfs" | tail -n 1)
blocks=$(("$(stat -c %s "$tmp/ds/shard-000000.rfs")" / 65536))
[ "$blocks" -ge 50 ] || bad "expected at least 50 blocks, got $blocks"
common=(--digest --no-shuffle --request-size 4KiB --connections 4)

# the 45th request of the shard (HEAD and index reads included) waits 3 s
same "hedging on: the digest is the local read's" "$want" \
	"$("$cli" read "${common[@]}" --stats "$tmp/on.json" \
		"$RF_BAD_URL/slow-nth-45-3000/$tag/h.rfs" 2>"$tmp/on.err" | tail -n 1)"
hedges=$(rf_json "$tmp/on.json" fetch_hedges)
won=$(rf_json "$tmp/on.json" fetch_hedges_won)
[ "$hedges" -ge 1 ] && ok "a hedge was issued ($hedges)" || bad "no hedge issued (stats: $hedges)"
[ "$won" -ge 1 ] && ok "the hedge won ($won)" || bad "no hedge won ($won of $hedges)"
[ "$hedges" -le 5 ] && ok "hedges stay bounded ($hedges <= 5 for ~$blocks reads)" ||
	bad "too many hedges: $hedges"
same "hedging off: the digest is the local read's" "$want" \
	"$("$cli" read "${common[@]}" --hedge 0 --stats "$tmp/off.json" \
		"$RF_BAD_URL/slow-nth-45-3000/$tag/n.rfs" 2>"$tmp/off.err" | tail -n 1)"
same "hedging off: no hedge" 0 "$(rf_json "$tmp/off.json" fetch_hedges)"

rf_checks_done
