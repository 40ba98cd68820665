#!/usr/bin/env bash
# Warm trials against cold on a GPU (the device machine, with carry=["carry"]
# from bench/gpu/pack.sh; or a machine of your own with CARRY=a built tree):
#   bench/gpu/warm.sh torch hf cuda     # ~7 min on an H100 (each job alone: ~3 min)
# torch: configs/command_torch.yaml; hf: a transformers Trainer in bf16
# (bench/warm/hf_job.py); cuda: the built-in cuda default. Each through
# bench/warm_trials.sh (one seed, cold and warm side by side, each answer
# re-measured once cold). Results in $OUT as gpu.tgz, packed after each job so
# that a call cut at its limit still brings back what it made.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-bench/gpu/out}"
CARRY="${CARRY:-carry}"
BUDGET="${BUDGET:-6}"
mkdir -p "$OUT" /tmp/g
export LD_LIBRARY_PATH="$PWD/$CARRY/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d"
done
export AUTOTUNE="$CARRY/bin/autotune" REMEASURE="${REMEASURE:-1}" PYTHONUNBUFFERED=1
pack() { tar czf "$OUT/gpu.tgz" -C /tmp/g . ; }
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  echo "cores: $(nproc)"
  python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__)'
  python3 -c 'import transformers; print("transformers", transformers.__version__)'
  "$AUTOTUNE" --version
} >/tmp/g/env.txt 2>&1
cat /tmp/g/env.txt
pack
for job in "$@"; do
  case $job in
    hf)  # one trial by hand first: a broken script fails here in seconds, not in every trial
      PYTHONPATH="$("$AUTOTUNE" --python-path)" timeout 120 python3 bench/warm/hf_job.py >/tmp/g/hf_by_hand.txt 2>&1
      tail -3 /tmp/g/hf_by_hand.txt
      grep -q 'samples/s' /tmp/g/hf_by_hand.txt || { echo "warm.sh: hf_job.py did not measure"; pack; continue; } ;;
  esac
  KEEP=/tmp/g/runs_$job bench/warm_trials.sh 1 "$BUDGET" "$job" 2>&1 | tee "/tmp/g/warm_$job.md"
  pack
done
