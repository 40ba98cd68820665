#!/usr/bin/env bash
# Does the printed speedup interval cover the truth? A simulated job whose
# true throughput is known (a function of its knobs), measured with 5%
# log-normal noise and a drift step: from trial 8 on every measurement is
# 0.7x (another job took part of the machine). Each seed tunes it with
# `random` and the default side-by-side re-measurement; the true ratio of
# the answer to the baseline is compared with the printed 90% interval.
#   bench/speedup_interval.sh [SEEDS]    (default 100; AUTOTUNE=path: another binary)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${AUTOTUNE:-build/autotune}")
seeds=${1:-100}
work=$(mktemp -d /tmp/autotune_interval.XXXXXX)
trap 'rm -rf "$work"' EXIT
cat >"$work/job.py" <<'PY'
import json, math, os, random
b, w = int(os.environ["AUTOTUNE_BATCH_SIZE"]), int(os.environ["AUTOTUNE_NUM_WORKERS"])
trial, seed = int(os.environ["AUTOTUNE_TRIAL"]), int(os.environ["BENCH_SEED"])
true = 1000.0 * b / (b + 16) * (1 + 0.6 * w) / (1 + 0.08 * w * w)
drift = 0.7 if trial >= 8 else 1.0
noise = math.exp(random.Random(seed * 100003 + trial).gauss(0, 0.05))
print(json.dumps({"throughput": true * drift * noise}))
PY
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; $(date -u +%Y-%m-%dT%H:%MZ)"
echo "autotune $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo '+changes'); $seeds seeds"
covered=0 total=0 kept=0 widths=""
for ((s = 1; s <= seeds; s++)); do
  d="$work/$s"
  mkdir -p "$d"
  cat >"$d/space.yaml" <<YAML
workload: {kind: command, command: "python3 $work/job.py", env: {BENCH_SEED: "$s"}, timeout: 30s}
space:
  batch_size: {values: [8, 16, 32, 64]}
  num_workers: {values: [0, 1, 2, 3]}
search: {strategy: random, budget: 6, seed: $s, explain: false, busy: ignore, initial: [{batch_size: 8, num_workers: 0}]}
output: {tuned: $d/tuned.yaml}
YAML
  out=$("$bin" "$d/space.yaml" 2>&1 || true)
  line=$(grep -o '[0-9.]*x the baseline ([0-9.]*-[0-9.]*x at 90%, [0-9]* pairs)\|was not shown to be faster.*' <<<"$out" | head -1)
  [ -n "$line" ] || continue
  read -r verdict <<<"$(python3 - "$d/tuned.yaml" "$out" <<'PY'
import re, sys
out = sys.argv[2]
m = re.search(r"([0-9.]+)-([0-9.]+)x at 90%", out)
kept = "not shown to be faster" in out
# the configuration measured against the baseline: the summary's best, or the one it gave way to
cfg = re.search(r"answer \(batch_size=(\d+) num_workers=(\d+)\)", out) if kept else re.search(r"best:\s+batch_size=(\d+) num_workers=(\d+)", out)
b, w = int(cfg.group(1)), int(cfg.group(2))
f = lambda b, w: 1000.0 * b / (b + 16) * (1 + 0.6 * w) / (1 + 0.08 * w * w)
truth = f(b, w) / f(8, 0)
lo, hi = float(m.group(1)), float(m.group(2))
print(int(lo <= truth <= hi), int(kept), f"{truth:.3f}", lo, hi)
PY
)"
  set -- $verdict
  total=$((total + 1)); covered=$((covered + $1)); kept=$((kept + $2))
  printf 'seed %3d  truth %s  interval %s-%s  %s\n' "$s" "$3" "$4" "$5" "$([ "$1" = 1 ] && echo covered || echo MISSED)"
done
echo "covered: $covered of $total intervals ($kept answers not shown faster, the baseline kept)"
