#!/usr/bin/env bash
# Issue 12's comparison: bo, anneal and random against Optuna's TPE
# (multivariate) and GPSampler on the failure-heavy landscapes of
# bench/failure_landscapes.hpp, 40 seeds, budgets 15 and 30, and the table
# in bench/results/failure_peers.md (and bo where trials report their busy
# share, which Optuna cannot read). Needs build/bench/bench_failure_efficiency
# and a venv with Optuna (for the benchmark only; the product does not use it):
#   /usr/bin/python3 -m venv --system-site-packages build/venv   # Debian's torch and numpy
#   build/venv/bin/pip install "optuna==4.6.*" "scipy==1.11.4"  # scipy to match Debian's numpy 1.24
# Usage: bench/failure_peers.sh [SEEDS]
# Optuna's runs are slow (GPSampler: about half an hour on 2 cores) and do
# not change with our code: an existing optuna_*.csv in the results folder is
# kept; delete it to run that sampler again.
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-40}
out=bench/results/failure_peers
mkdir -p "$out"
tables=$(mktemp -d)
trap 'rm -rf "$tables"' EXIT
build/bench/bench_failure_efficiency --export "$tables"
build/bench/bench_failure_efficiency --seeds "$seeds" --budgets 15,30 --strategies bo,anneal,random \
  --runs "$out/ours.csv" | tee "$out/ours.txt"
# bo where the trials report their busy share (the harness and autotune_trial
# do; Optuna cannot read it): a row of its own.
build/bench/bench_failure_efficiency --seeds "$seeds" --budgets 15,30 --strategies bo --busy \
  --runs "$out/ours_busy.csv" > /dev/null
for s in tpe gp; do
  [ -s "$out/optuna_$s.csv" ] && continue
  build/venv/bin/python bench/optuna_peers.py "$tables" --sampler "$s" --seeds "$seeds" --header \
    > "$out/optuna_$s.csv" 2>/dev/null
done
{
  echo "# Failure-heavy landscapes: ours against Optuna"
  echo
  echo "$(date -u +%Y-%m-%dT%H:%M:%SZ), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores;"
  echo "Optuna $(build/venv/bin/python -c 'import optuna; print(optuna.__version__)' 2>/dev/null), $seeds seeds per landscape and tool."
  echo "Command: bench/failure_peers.sh $seeds"
  echo
  echo "Fraction of the exhaustive optimum reached by the configuration each recommends (true,"
  echo "noise-free throughput); failed trials per trial, and after the first third of the"
  echo "budget (the initial design). Our strategies get vram_bytes/ram_bytes from each trial"
  echo "but not the limits; Optuna gets each failure as a constraint violation."
  echo
  python3 bench/summarize_failure.py "$out/ours.csv" "$out/optuna_tpe.csv" "$out/optuna_gp.csv"
  echo
  echo "bo with busy shares (ours_busy.csv):"
  echo
  python3 bench/summarize_failure.py "$out/ours_busy.csv"
  echo
  grep "configurations fail" "$out/ours.txt" | sed 's/^/    /'
} > bench/results/failure_peers.md
cat bench/results/failure_peers.md
