#!/usr/bin/env bash
# main.sh - installs dependencies, builds, and runs the main job on the
# built-in demo dataset (about 1 GiB decoded, 64 shards, created once under
# ${XDG_CACHE_HOME:-~/.cache}/ringfeed/demo): what ringfeed is for, in well
# under a minute once the dataset exists.
#
#   ./scripts/main.sh          the story: a consumer at a training step's pace
#                              (2 ms of work per batch), storage that stalls
#                              0.5 s every 2 s (the fault injector), a 256 MiB
#                              budget. The report shows the depth the controller
#                              chose to cover the stalls inside the budget, the
#                              consumer's wait with that depth and with a fixed
#                              depth of 2 side by side, peak memory against the
#                              budget, and the diagnosis in plain words.
#   ./scripts/main.sh --raw    raw throughput instead: `ringfeed bench` with a
#                              consumer that costs nothing, no faults (its
#                              diagnosis then names the producer's bottleneck).
#
# Further arguments go to `ringfeed bench` and override the story's settings
# (e.g. --step-ms 5, --budget 64MiB, --inject stall=1s/3s, --json, --trace t.jsonl).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/deps.sh"
"$top/scripts/build.sh" "$top/build" >&2
if [ "${1:-}" = "--raw" ]; then
	shift
	exec "$top/build/ringfeed" bench "$@"
fi
exec "$top/build/ringfeed" bench --step-ms 2 --inject stall=500ms/2s --budget 256MiB \
	--batches 2500 --compare-depth 2 "$@"
