#!/usr/bin/env bash
# The tuner's own time per trial, end to end: the same cheap command job
# (a shell script that answers at once, with an out-of-memory wall) tuned for
# N trials by `bo` and by `random`; bo's cost per trial is the difference of
# the two runs' wall times over N, and at trial k the gap between the
# journal's start records over the last 10 trials, bo minus random. Runs REPEATS times,
# alternating which goes first, and prints the medians.
#   bench/tuner_overhead.sh [TRIALS] [REPEATS]    (defaults 100 3; AUTOTUNE=path: another binary)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${AUTOTUNE:-build/autotune}")
trials=${1:-100}
repeats=${2:-3}
work=$(mktemp -d /tmp/autotune_overhead.XXXXXX)
trap 'rm -rf "$work"' EXIT
cat >"$work/job.sh" <<'SH'
#!/bin/sh
b=$AUTOTUNE_BATCH_SIZE w=$AUTOTUNE_NUM_WORKERS f=$AUTOTUNE_PREFETCH_FACTOR a=$AUTOTUNE_GRAD_ACCUM
if [ $((b * a)) -gt 1024 ]; then echo '{"status": "oom"}'; exit 0; fi
echo "{\"throughput\": $(( b * 100 / (b + 64) * (w + 2) * 10 / (w * w / 4 + 10) + f + a )), \"data_wait_fraction\": 0.$(( 90 - w * 8 ))}"
SH
chmod +x "$work/job.sh"
spec() {
  cat >"$work/$1.yaml" <<YAML
workload: {kind: command, command: "$work/job.sh", timeout: 30s}
space:
  batch_size: {values: [16, 32, 64, 128, 256, 512]}
  num_workers: {range: [0, 8]}
  prefetch_factor: {values: [1, 2, 4]}
  pin_memory: {values: [false, true]}
  precision: {values: [fp32, bf16]}
  grad_accum: {values: [1, 2, 4]}
search: {strategy: $1, budget: $trials, seed: 1}
YAML
}
spec bo
spec random
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; $(date -u +%Y-%m-%dT%H:%MZ)"
echo "autotune $(git rev-parse --short HEAD)$(git diff --quiet || echo '+changes'); $trials trials, $repeats repeats"
for ((r = 1; r <= repeats; r++)); do
  order="bo random"
  [ $((r % 2)) -eq 0 ] && order="random bo"
  for s in $order; do
    mkdir -p "$work/$s-$r"
    t0=$EPOCHREALTIME
    (cd "$work/$s-$r" && "$bin" "$work/$s.yaml" --quiet >/dev/null 2>&1) || true
    python3 -c "print($EPOCHREALTIME - $t0)" >"$work/$s-$r/wall"
  done
done
python3 - "$work" "$trials" "$repeats" <<'PY'
import json, os, statistics, sys
work, n, repeats = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def starts(d):
    with open(os.path.join(d, "tuned.journal.jsonl")) as f:
        return [json.loads(l)["time"] for l in f if '"start"' in l]
per, at_end, ok = [], [], True
for r in range(1, repeats + 1):
    walls = {s: float(open(os.path.join(work, f"{s}-{r}", "wall")).read()) for s in ("bo", "random")}
    per.append((walls["bo"] - walls["random"]) / n * 1000)
    sb, sr = starts(os.path.join(work, f"bo-{r}")), starts(os.path.join(work, f"random-{r}"))
    k = min(len(sb), len(sr)) - 1
    at_end.append(((sb[k] - sb[k - 10]) - (sr[k] - sr[k - 10])) / 10 * 1000)
    print(f"run {r}: bo {walls['bo']:.2f} s, random {walls['random']:.2f} s for {n} trials; bo's own {per[-1]:.1f} ms/trial, "
          f"{at_end[-1]:.1f} ms over trials {k - 8}-{k + 1}")
print(f"bo's own time per trial (median of {repeats}): {statistics.median(per):.1f} ms mean over {n} trials, "
      f"{statistics.median(at_end):.1f} ms over the last 10")
PY
