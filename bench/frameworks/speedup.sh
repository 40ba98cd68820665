#!/usr/bin/env bash
# The speedup autotune prints for a Hugging Face Trainer job and a Lightning
# Trainer job (bench/frameworks/jobs.py), against a long independent timing
# of the same baseline and answer: each run by itself for STEPS optimizer
# steps after 10 of warm-up, timed by the job alone (no autotune_trial
# measurement), ROUNDS times each, alternating; medians.
#   bench/frameworks/speedup.sh [BUDGET] [ROUNDS] [STEPS]     (defaults: 8 3 60)
# PY=... picks the Python with torch and the frameworks (default: the test
# suite's venv build/fwvenv/bin/python, made by scripts/framework_venv.sh).
# TARGET_CI90S="0.03 0" tunes each job under each stop of the measurement
# (autotune_trial's target_ci90; 0: the earlier stop on the spread), side by
# side in one run; default: autotune_trial's own.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
bin=$root/${AUTOTUNE:-build/autotune}
budget=${1:-8}
rounds=${2:-3}
steps=${3:-60}
py=${PY:-$root/build/fwvenv/bin/python}
work=$(mktemp -d /tmp/autotune_fw_bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
export PYTHONPATH="$("$bin" --python-path)"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; $(date -u +%Y-%m-%dT%H:%MZ)"
echo "autotune $(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet 2>/dev/null || echo '+changes'); budget $budget; independent: $rounds rounds of $steps steps"
"$py" -c 'import torch, transformers, lightning; print("torch", torch.__version__, "transformers", transformers.__version__, "lightning", lightning.__version__)'
echo
echo "| job | target_ci90 | baseline | answer | printed speedup | independent baseline / answer (samples/s) | independent speedup | printed / independent |"
echo "|---|---|---|---|---|---|---|---|"
for ci in ${TARGET_CI90S:-default}; do
if [ "$ci" = default ]; then unset BENCH_TARGET_CI90; else export BENCH_TARGET_CI90=$ci; fi
for fw in hf lightning; do
  dir=$work/$fw-$ci
  mkdir -p "$dir"
  cat >"$dir/space.yaml" <<YAML
workload: {kind: command, command: "$py $root/bench/frameworks/jobs.py $fw", warm: true, timeout: 300s}
space:
  batch_size: {values: [8, 16, 32]}
  num_workers: {values: [0, 1, 2, 4]}
search: {strategy: bo, budget: $budget, seed: 1, initial: [{batch_size: 8, num_workers: 0}]}
YAML
  (cd "$dir" && "$bin" space.yaml >out.txt 2>&1) || { tail -20 "$dir/out.txt"; exit 1; }
  read -r base best printed < <("$py" - "$dir/tuned.yaml" <<'PY'
import json, sys, yaml
t = yaml.safe_load(open(sys.argv[1]))
print(json.dumps(t["baseline"]["config"], separators=(",", ":")), json.dumps(t["best"], separators=(",", ":")),
      t["baseline"]["speedup"])
PY
)
  b=() a=()
  for ((r = 1; r <= rounds; r++)); do
    b+=("$("$py" bench/frameworks/jobs.py "$fw" --independent "$base" --steps "$steps" 2>/dev/null | tail -1)")
    a+=("$("$py" bench/frameworks/jobs.py "$fw" --independent "$best" --steps "$steps" 2>/dev/null | tail -1)")
  done
  "$py" - "$fw" "$ci" "$base" "$best" "$printed" "${b[@]}" -- "${a[@]}" <<'PY'
import json, statistics, sys
fw, ci, base, best, printed = sys.argv[1:6]
rest = sys.argv[6:]
cut = rest.index("--")
rate = lambda xs: [json.loads(x)["samples_per_s"] for x in xs]
b, a = rate(rest[:cut]), rate(rest[cut + 1:])
ib, ia = statistics.median(b), statistics.median(a)
print(f"| {fw} | {ci} | {base} | {best} | {float(printed):.2f}x | {ib:.1f} / {ia:.1f} | {ia / ib:.2f}x | {float(printed) / (ia / ib):.3f} |")
PY
  grep -E "^best:|x the baseline|^trials:|^time:" "$dir/out.txt" | sed "s/^/    $fw: /"
  # Each trial's precision (throughput_ci90) and timed span, trials measured in full.
  "$py" - "$dir/tuned.journal.jsonl" <<'PY' | sed "s/^/    $fw: /"
import json, statistics, sys
ci, secs = [], []
for line in open(sys.argv[1]):
    t = json.loads(line)
    if t.get("type") == "finish" and t.get("status") == "ok" and not t["metrics"].get("raced"):
        if "throughput_ci90" in t["metrics"]:
            ci.append(t["metrics"]["throughput_ci90"])
        secs.append(t["metrics"].get("measure_seconds", 0))
print(f"precision: median +-{100 * statistics.median(ci):.1f}%, worst +-{100 * max(ci):.1f}% at 90%; "
      f"{sum(c <= 0.03 for c in ci)} of {len(ci)} trials within +-3%; median measurement {statistics.median(secs):.2f} s")
PY
done
done
