#!/usr/bin/env bash
# The README's second command: installs what is missing, builds, and runs the
# test suites with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh --test
scripts/build.sh
jobs=$(nproc 2>/dev/null || echo 2)
cd build
ctest --output-on-failure -j "$jobs" --timeout 300
