#!/usr/bin/env bash
# The README's first command: installs what is missing, builds, and runs the
# main job on the embedded default (cuda when a GPU is present, else the cpu
# workload), in the folder it was called from. Arguments go to autotune
# (e.g. --config configs/synthetic.yaml).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/deps.sh"
"$root/scripts/build.sh"
exec "$root/build/autotune" "$@"
