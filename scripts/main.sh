#!/usr/bin/env bash
# main.sh - installs dependencies, builds, and runs the main job on the
# built-in demo dataset. Extra arguments go to the job.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/deps.sh"
"$top/scripts/build.sh" "$top/build" >&2
demo=${XDG_CACHE_HOME:-$HOME/.cache}/ringfeed/demo-pack
"$top/build/ringfeed" pack --demo -o "$demo"
"$top/build/ringfeed" inspect "$demo"/shard-000000.rfs
"$top/build/ringfeed" verify "$demo"/*.rfs
