#!/usr/bin/env bash
# Configures and builds into build/ (Release). CUDA is used when the toolkit
# is found.
#   build.sh                  everything: the tool, the cuda module, tests, benchmarks
#   build.sh TARGET...        only those targets (scripts/run.sh: autotune)
# AUTOTUNE_CMAKE_ARGS: extra arguments for cmake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
# shellcheck disable=SC2086
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release ${AUTOTUNE_CMAKE_ARGS:-} >/dev/null
if [ $# -eq 0 ]; then
  cmake --build build -j "$jobs"
else
  cmake --build build -j "$jobs" --target "$@"
fi
