#!/usr/bin/env bash
# The README's second command: installs what is missing, builds, and runs the
# test suites with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh --test
scripts/build.sh
# transformers and Lightning for the helper's framework tests, in build/fwvenv.
# Without them those tests skip (under CI=true they fail, saying why).
scripts/framework_venv.sh || echo "autotune: no framework venv: the framework tests will say why" >&2
jobs=$(nproc 2>/dev/null || echo 2)
cd build
ctest --output-on-failure -j "$jobs" --timeout 300
