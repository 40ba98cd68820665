#!/usr/bin/env bash
# The README's first command: installs what is missing, builds, and runs the
# main job on the embedded default (cuda when a GPU is present, else the cpu
# workload). Arguments go to autotune (e.g. --config configs/synthetic.yaml).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh
exec ./build/autotune "$@"
