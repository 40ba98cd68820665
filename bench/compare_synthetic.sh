#!/usr/bin/env bash
# Sample efficiency of every strategy on the four synthetic profiles over the
# full six-knob space of configs/synthetic.yaml: `autotune compare` with 20
# seeds and a budget of 60, reported at 15 / 30 / 60 trials.
#   bench/compare_synthetic.sh [OUT_DIR] [REPEATS]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/results/compare_synthetic}
repeats=${2:-20}
mkdir -p "$out"
{
  echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
  echo "autotune $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(date -u +%Y-%m-%dT%H:%MZ)"
  echo
  for profile in balanced loader_bound compute_bound memory_tight; do
    sed "s/profile: balanced/profile: $profile/" configs/synthetic.yaml > "$out/$profile.yaml"
    echo "## $profile"
    echo
    build/autotune compare --config "$out/$profile.yaml" --strategies bo,anneal,random,heuristic \
      --repeats "$repeats" --budget 60 --budgets 15,30,60 --out "$out/$profile" 2>/dev/null
    echo
  done
} | tee "$out/summary.md"
