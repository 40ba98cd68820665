#!/usr/bin/env bash
# The README's first command: installs what is missing, builds what the main
# job needs (the tool, its Python helper, and the cuda module where a GPU is
# present), and runs the main job on the embedded default (cuda when a GPU is
# present, else the cpu workload), in the folder it was called from.
# Arguments go to autotune (e.g. configs/synthetic.yaml).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/deps.sh"
log="$root/build/build.log"
mkdir -p "$root/build"
if [ -x "$root/build/autotune" ]; then
  echo "autotune: building autotune (up to date in seconds)" >&2
else
  echo "autotune: building autotune (a few minutes the first time; the log is build/build.log)" >&2
fi
if ! "$root/scripts/build.sh" autotune_main >"$log" 2>&1; then
  tail -n 40 "$log" >&2
  echo "autotune: the build failed; the whole log is $log" >&2
  exit 1
fi
exec "$root/build/autotune" "$@"
