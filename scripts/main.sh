#!/usr/bin/env bash
# main.sh - installs dependencies, builds, and runs the main job: `ringfeed
# bench` on the built-in demo dataset (about 1 GiB decoded, 64 shards,
# created once under ${XDG_CACHE_HOME:-~/.cache}/ringfeed/demo), a simulated
# consumer taking batches as fast as it can. Extra arguments go to the job
# (e.g. --step-ms 5, --budget 256MiB, --depth 16, --decode-limit, --json).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/deps.sh"
"$top/scripts/build.sh" "$top/build" >&2
exec "$top/build/ringfeed" bench "$@"
