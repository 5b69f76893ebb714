#!/usr/bin/env bash
# cli_node.sh - node-aware defaults and what is off, as a user sees them:
# threads default to the CPUs this process may use divided by
# LOCAL_WORLD_SIZE (4 local "ranks" on this machine run at most as many
# decode threads in all as it has CPUs), host_budget=auto takes its size
# from the node's memory and its loaders and name from torchrun's
# environment, each said in the stats; an index cache that cannot be used
# is said once on stderr and in the stats (it was silent). A CPU quota of a
# real cgroup is cli_node_cgroup.sh's.
set -euo pipefail
src=${RF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/tests/check.inc.sh"
cli=${RF_CLI:?RF_CLI must name the ringfeed binary}
PY=/usr/bin/python3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-node.XXXXXX")
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
"$cli" pack --demo -o "$tmp/ds" --demo-bytes 2MiB --demo-shards 2 >/dev/null
cpus=$(nproc)
field() { $PY -c "import json,sys; print(json.load(open(sys.argv[1]))['loader'][sys.argv[2]])" "$@"; }

env -u LOCAL_WORLD_SIZE "$cli" bench --json "$tmp/ds" >"$tmp/one.json" 2>/dev/null
same "one process: threads are the usable CPUs" "$cpus" "$(field "$tmp/one.json" threads)"
grep -q "LOCAL_WORLD_SIZE 1" <<<"$(field "$tmp/one.json" threads_source)" &&
	ok "threads_source: $(field "$tmp/one.json" threads_source)" ||
	bad "threads_source: $(field "$tmp/one.json" threads_source)"
LOCAL_WORLD_SIZE=4 "$cli" bench --json "$tmp/ds" >"$tmp/four.json" 2>/dev/null
want=$((cpus / 4 > 0 ? cpus / 4 : 1))
same "LOCAL_WORLD_SIZE=4 on $cpus CPUs" "$want" "$(field "$tmp/four.json" threads)"
same "a set threads is kept" 3 \
	"$(LOCAL_WORLD_SIZE=4 "$cli" bench --json --threads 3 "$tmp/ds" 2>/dev/null |
		$PY -c 'import json,sys; print(json.load(sys.stdin)["loader"]["threads"])')"
rc=0
LOCAL_WORLD_SIZE=x "$cli" read --digest "$tmp/ds" >/dev/null 2>"$tmp/err" || rc=$?
[ $rc -ne 0 ] && grep -q "LOCAL_WORLD_SIZE='x'" "$tmp/err" && ok "a bad LOCAL_WORLD_SIZE is named" ||
	bad "bad LOCAL_WORLD_SIZE: rc $rc, $(cat "$tmp/err")"

# 4 local ranks at once, as torchrun starts them, with an automatic host budget
for r in 0 1 2 3; do
	LOCAL_WORLD_SIZE=4 MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + $$ % 10000)) \
		"$cli" bench --json --host-budget auto --step-ms 5 "$tmp/ds" \
		>"$tmp/rank$r.json" 2>"$tmp/rank$r.err" &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || bad "a rank failed: $(cat "$tmp"/rank*.err)"; done
pids=()
total=0
for r in 0 1 2 3; do total=$((total + $(field "$tmp/rank$r.json" threads))); done
[ "$total" -le "$cpus" ] || [ "$total" -eq 4 ] && ok "4 ranks run $total decode threads on $cpus CPUs" ||
	bad "4 ranks run $total decode threads on $cpus CPUs"
hs=$(field "$tmp/rank0.json" host_budget_source)
case $hs in "auto: 25% of "*"; loaders 4 from LOCAL_WORLD_SIZE; name from the job")
	ok "host budget: $hs" ;;
*) bad "host budget source: '$hs'" ;;
esac
name=$($PY -c "import json,sys; print(json.load(open(sys.argv[1]))['loader']['host_budget']['name'])" "$tmp/rank0.json")
case $name in job-127.0.0.1-*) ok "host budget name from the job: $name" ;; *) bad "host budget name '$name'" ;; esac

# an index cache it cannot use: said once, and in the stats
$PY - "$tmp/tars" <<'PYEOF'
import io, os, sys, tarfile
os.makedirs(sys.argv[1])
for s in range(3):
    with tarfile.open(f"{sys.argv[1]}/shard-{s:06d}.tar", "w", format=tarfile.GNU_FORMAT) as t:
        for i in range(20):
            d = b"x" * (1000 + i); ti = tarfile.TarInfo(f"{s}/{i:06d}.bin"); ti.size = len(d)
            t.addfile(ti, io.BytesIO(d))
PYEOF
mkdir -p "$tmp/open-cache"
chmod 777 "$tmp/open-cache"
"$cli" bench --json --index-cache "$tmp/open-cache" "$tmp/tars" >"$tmp/ic.json" 2>"$tmp/ic.err"
same "the disabled cache is said once on stderr" 1 "$(grep -c 'index cache disabled' "$tmp/ic.err")"
grep -q "writable by others" <<<"$(field "$tmp/ic.json" index_cache_off)" &&
	ok "index_cache_off: $(field "$tmp/ic.json" index_cache_off)" ||
	bad "index_cache_off: '$(field "$tmp/ic.json" index_cache_off)'"
chmod 700 "$tmp/open-cache"
"$cli" bench --json --index-cache "$tmp/open-cache" "$tmp/tars" >"$tmp/ic2.json" 2>"$tmp/ic2.err"
same "a usable cache: nothing said" 0 "$(grep -c 'index cache' "$tmp/ic2.err" || true)"
same "a usable cache: index_cache_off empty" "" "$(field "$tmp/ic2.json" index_cache_off)"
rf_checks_done
