#!/usr/bin/env bash
# Warm trials against cold, side by side in one run: the same spec, seed and
# budget tuned with `warm: false` and `warm: true` (which goes first
# alternating by seed), on a job with a real start-up (bench/warm/startup_job.py:
# PyTorch imported, a model built and its weights loaded, a dataset of small
# files indexed) and on the two command examples in configs/. Prints, per
# job, the session's wall time cold and warm and their ratio, where the time
# went (the `time:` line), and each answer re-measured cold (3 runs, median)
# so the answers compare on one footing.
#   bench/warm_trials.sh [SEEDS] [BUDGET] [JOBS]     (defaults: 2 12 "startup torch images")
# JOBS may also name `hf`: a transformers Trainer with HFCallback
# (bench/warm/hf_job.py, bf16 on a GPU), and `cuda`: the built-in cuda
# default (warm: false is a fresh process per trial, as before). REMEASURE=N re-measures each answer
# N times (default 3); AUTOTUNE=path picks the binary (default build/autotune).
# Needs PyTorch (Debian's python3-torch under /usr/bin/python3 is used when
# the python3 on PATH has none), python3-pil for images, transformers for hf.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
bin=$root/${AUTOTUNE:-build/autotune}
seeds=${1:-2}
budget=${2:-12}
jobs=${3:-startup torch images}
# KEEP=dir keeps every run's output, journal and tuned.yaml there.
if [ -n "${KEEP:-}" ]; then
  work=$KEEP
  mkdir -p "$work"
else
  work=$(mktemp -d /tmp/autotune_warm_bench.XXXXXX)
  trap 'rm -rf "$work"' EXIT
fi
remeasure=${REMEASURE:-3}
# The trials' python3: the one on PATH if it has torch, else Debian's.
python3 -c 'import torch' 2>/dev/null || export PATH=/usr/bin:$PATH

# The start-up job's files and weights, made once, outside the figures.
[[ " $jobs " == *" startup "* ]] && PYTHONPATH=$("$bin" --python-path) python3 bench/warm/startup_job.py >/dev/null 2>&1 || true

spec() {  # job warm -> the spec's path
  local job=$1 warm=$2 out=$work/$1-$2.yaml
  case $job in
    startup)
      cat >"$out" <<YAML
workload: {kind: command, command: "python3 $root/bench/warm/startup_job.py", timeout: 300s, warm: $warm}
space:
  batch_size: {values: [32, 64, 128, 256]}
  num_workers: {values: [0, 1, 2]}
  prefetch_factor: {values: [2, 4]}
search: {strategy: bo, budget: $budget, initial: [{batch_size: 64, num_workers: 0, prefetch_factor: 2}]}
YAML
      ;;
    hf)
      cat >"$out" <<YAML
workload: {kind: command, command: "python3 $root/bench/warm/hf_job.py", timeout: 300s, warm: $warm}
space:
  batch_size: {values: [16, 32, 64, 128]}
  num_workers: {values: [0, 2, 4, 8]}
  pin_memory: {values: [false, true]}
search: {strategy: bo, budget: $budget, initial: [{batch_size: 32, num_workers: 0, pin_memory: false}]}
YAML
      ;;
    cuda)  # the built-in cuda default (configs/default_gpu.yaml); warm: false is how it ran before
      sed -e "s|^workload: .*|workload: {kind: cuda, timeout: 120s, warm: $warm}|" \
          -e "s|^  budget: .*|  budget: $budget|" -e '/^output:/d' "$root/configs/default_gpu.yaml" >"$out"
      ;;
    torch | images)
      local src=$root/configs/command_torch.yaml
      [ "$job" = images ] && src=$root/configs/command_images.yaml
      sed -e "s|^  cwd: .*|  cwd: $root/configs|" -e "s|^  warm: .*|  warm: $warm|" \
          -e "s|^  budget: .*|  budget: $budget|" -e '/^output:/d' "$src" >"$out"
      ;;
  esac
  echo "$out"
}

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; $(date -u +%Y-%m-%dT%H:%MZ)"
command -v nvidia-smi >/dev/null && echo "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__)' || true
echo "autotune $(git rev-parse --short HEAD 2>/dev/null || "$bin" --version)$(git diff --quiet 2>/dev/null || echo '+changes'); $seeds seeds, budget $budget"
for job in $jobs; do
  for ((s = 1; s <= seeds; s++)); do
    order="false true"
    [ $((s % 2)) -eq 0 ] && order="true false"
    for warm in $order; do
      dir=$work/$job-$warm-$s
      mkdir -p "$dir"
      t0=$EPOCHREALTIME
      (cd "$dir" && "$bin" "$(spec "$job" "$warm")" --seed "$s" --out "$dir/tuned.yaml" >"$dir/out.txt" 2>&1) || true
      python3 -c "print($EPOCHREALTIME - $t0)" >"$dir/wall"
    done
  done
done
# Each answer re-measured cold, REMEASURE times.
for dir in "$work"/*-*-*/; do
  dir=${dir%/}
  [ -f "$dir/tuned.yaml" ] || continue
  name=$(basename "$dir")
  job=${name%%-*}
  values=$(python3 -c "import json, yaml; print(json.dumps(yaml.safe_load(open('$dir/tuned.yaml'))['best']))")
  for ((r = 1; r <= remeasure; r++)); do
    (cd "$dir" && "$bin" trial "$(spec "$job" false)" --values "$values" 2>/dev/null | tail -1) >>"$dir/remeasured" || true
  done
done
python3 - "$work" <<'PY'
import glob, json, os, statistics, sys, yaml
work = sys.argv[1]
rows = {}
for d in sorted(glob.glob(os.path.join(work, "*-*-*"))):
    if not os.path.isdir(d):
        continue
    job, warm, seed = os.path.basename(d).split("-")
    wall = float(open(os.path.join(d, "wall")).read())
    t = yaml.safe_load(open(os.path.join(d, "tuned.yaml"))) if os.path.exists(os.path.join(d, "tuned.yaml")) else {}
    time = (t.get("search") or {}).get("time") or {}
    again = []
    if os.path.exists(os.path.join(d, "remeasured")):
        for line in open(os.path.join(d, "remeasured")):
            try:
                o = json.loads(line)
            except ValueError:
                continue
            if o.get("status") == "ok":
                again.append(o["throughput"])
    rows.setdefault(job, []).append((warm == "true", int(seed), wall, time, statistics.median(again) if again else None,
                                     (t.get("search") or {}).get("ok"), t.get("best")))
for job, rs in rows.items():
    print(f"\n## {job}")
    print("| seed | mode | wall s | start-up s | warm-up s | timed s | other s | workers | ok trials | answer re-measured (samples/s) | answer |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for warm, seed, wall, time, again, ok, best in sorted(rs, key=lambda r: (r[1], r[0])):
        print(f"| {seed} | {'warm' if warm else 'cold'} | {wall:.1f} | {time.get('startup_s', 0):.1f} | {time.get('warmup_s', 0):.1f} | "
              f"{time.get('timed_s', 0):.1f} | {time.get('other_s', 0):.1f} | {time.get('workers_started', '-')} | {ok} | "
              f"{again if again is None else f'{again:.1f}'} | {best} |")
    cold = [r for r in rs if not r[0]]
    warm = [r for r in rs if r[0]]
    ratio = statistics.median(w[2] / c[2] for w, c in zip(sorted(warm, key=lambda r: r[1]), sorted(cold, key=lambda r: r[1])))
    su_c = statistics.median(c[3].get("startup_s", 0) for c in cold)
    su_w = statistics.median(w[3].get("startup_s", 0) for w in warm)
    saved = statistics.median(c[2] - w[2] for w, c in zip(sorted(warm, key=lambda r: r[1]), sorted(cold, key=lambda r: r[1])))
    answers = [w[4] / c[4] for w, c in zip(sorted(warm, key=lambda r: r[1]), sorted(cold, key=lambda r: r[1])) if w[4] and c[4]]
    print(f"\nwall warm / cold (median of seeds): {ratio:.2f}; start-up in trials cold {su_c:.1f} s, warm {su_w:.1f} s; "
          f"session shorter by {saved:.1f} s ({saved / su_c * 100 if su_c else 0:.0f}% of cold's start-up)")
    if answers:
        print(f"answer re-measured, warm / cold (median of seeds): {statistics.median(answers):.3f}")
PY
