#!/usr/bin/env bash
# What a session with a GPU runs for the cuda harness (see README.md here).
# Build here first (bench/gpu/pack.sh), then on the device, with carry=["carry"]:
#   bench/gpu/run.sh all             # ~5 min (H100), one call: check arch test gemm busy tune compare summary
#   bench/gpu/run.sh check           # seconds: the carried binaries start; GPU, driver, cores
#   bench/gpu/run.sh arch            # seconds: the card's compute capability against the module's kernels
#   bench/gpu/run.sh test            # ~1 min: every CudaDevice test, none may skip
#   bench/gpu/run.sh gemm            # ~1 min: harness GEMM TFLOP/s per precision vs the card's peak (PyTorch, datasheet)
#   bench/gpu/run.sh busy            # ~1.5 min: gpu_busy against nsys (when present) and nvidia-smi's utilisation
#   bench/gpu/run.sh tune            # ~2.5 min: bo, 30 trials, PyTorch's defaults as baseline -> tuned_gpu.yaml
#   bench/gpu/run.sh compare         # ~1 min: tuned and PyTorch's defaults re-measured, 3 trials each
#   bench/gpu/run.sh sweep A|B       # ~7.5 min each: the 192-configuration space for replay (fp32+tf32 | fp16+bf16)
#   bench/gpu/run.sh summary         # seconds: summary.md from whatever the phases above left
# Several phases may be named in one call: run.sh check arch test gemm.
# Results go to $OUT (the device tool's folder that comes back), else bench/gpu/out.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-bench/gpu/out}"
CARRY="${CARRY:-carry}"
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/$CARRY/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# cuBLAS and cudart come from the device's CUDA 13, wherever it keeps them.
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda-13*/lib64; do
  [ -d "$d" ] && LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d"
done
export PATH="$PATH:/usr/local/cuda/bin"
AUTOTUNE="$PWD/$CARRY/bin/autotune"
TESTS="$PWD/$CARRY/bin/test_workloads"
MODULE="$PWD/$CARRY/lib/libautotune_cuda.so"
VALUES_PROBE='{"batch_size": 64, "num_workers": 1, "prefetch_factor": 2, "pin_memory": true, "precision": "bf16", "grad_accum": 1}'

phase_check() {
  {
    cat "$CARRY/BUILD.txt"
    nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version,clocks.max.sm --format=csv
    echo "cores: $(nproc)"
    (. /etc/os-release && echo "os: $PRETTY_NAME")
    echo "glibc: $(ldd --version | head -1)"
  } | tee "$OUT/gpu.txt"
  if ldd "$AUTOTUNE" "$TESTS" "$MODULE" | grep 'not found'; then
    echo "run.sh: libraries missing on this machine (above)" >&2
    exit 1
  fi
  "$AUTOTUNE" --version
  "$AUTOTUNE" validate --config bench/gpu/space_tune.yaml
  # One real cuda trial: the module loads (from $CARRY/lib) and measures.
  "$AUTOTUNE" trial --config "$CARRY/probe.yaml" --values "$VALUES_PROBE" | tee "$OUT/probe_trial.json"
  if ! grep -q '"status":"ok"' "$OUT/probe_trial.json"; then
    echo "run.sh: the probe trial did not measure (above); \`run.sh arch\` says whether the module has code for this card" >&2
    exit 1
  fi
}

# The card at hand against what the module carries: SASS for its compute
# capability (or one it runs), else PTX the driver compiles, else the trial's
# "no code ... for <card>" error (which the probe trial then shows).
phase_arch() {
  local cc
  cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')
  {
    echo "card: $(nvidia-smi --query-gpu=name,compute_cap --format=csv,noheader | head -1)"
    grep -E '^architectures' "$CARRY/BUILD.txt" || true
    if command -v cuobjdump >/dev/null; then
      cuobjdump --list-elf "$MODULE"
      cuobjdump --list-ptx "$MODULE"
      if cuobjdump --list-elf "$MODULE" | grep -q "\.sm_${cc}\.cubin"; then
        echo "verdict: SASS for sm_${cc} in the module"
      elif cuobjdump --list-ptx "$MODULE" | grep -q '\.ptx'; then
        echo "verdict: no SASS for sm_${cc}; the driver JIT-compiles the module's PTX (first trial slower), or a binary-compatible SASS of the same major runs"
      else
        echo "verdict: nothing for sm_${cc}: expect every trial to be an error naming the card"
      fi
    else
      echo "no cuobjdump on this machine: the probe trial below is the check"
    fi
    "$AUTOTUNE" trial --config "$CARRY/probe.yaml" --values "$VALUES_PROBE" | tail -1
  } 2>&1 | tee "$OUT/arch.txt"
}

# The cuda suites that run from carried binaries. Left out: CudaModule.* (they
# start the build tree's own autotune, whose path is baked in at build time;
# CI runs them), CudaWorkload.WithoutADeviceIsAnErrorNotACrash (skips where
# a device is present, by design) and CudaArch.TheBuiltModuleHoldsEveryListed
# Architecture (the build machine's cuobjdump; the arch phase checks the
# carried module with the device's own).
phase_test() {
  "$TESTS" --gtest_filter='Cuda*:GpuMlp*:TrainState*-CudaModule.*:CudaWorkload.WithoutADeviceIsAnErrorNotACrash:CudaArch.TheBuiltModuleHoldsEveryListedArchitecture' \
    2>&1 | tee "$OUT/test_cuda.txt" | tail -30
  if grep -q 'SKIPPED \]' "$OUT/test_cuda.txt"; then
    echo "run.sh: a CudaDevice test skipped on a machine with a GPU" >&2
    exit 1
  fi
  grep -q 'FAILED' "$OUT/test_cuda.txt" && { echo "run.sh: cuda tests failed" >&2; exit 1; }
  return 0
}

phase_gemm() {
  "$TESTS" --gtest_also_run_disabled_tests --gtest_filter='CudaDevice.DISABLED_GemmTflopsPerPrecision' |
    tee "$OUT/gemm_probe.txt"
  grep -E '^(precision|fp32|fp32_pedantic|tf32|fp16|bf16),' "$OUT/gemm_probe.txt" > "$OUT/gemm_tflops.csv"
  # The card's peak as PyTorch's cuBLAS reaches it: square 8192 GEMMs, the same
  # FP32 accumulation, no pipeline around them. fp32 is PyTorch's default
  # (allow_tf32 False), what the harness's `fp32` now matches.
  python3 - "$OUT/gemm_peak_torch.csv" <<'PY' || echo "no PyTorch peak (python3 or torch missing)"
import sys, torch
n, reps = 8192, 20
rows = ["precision,n,tflops"]
for name, dt, tf32 in [("fp32", torch.float32, False), ("tf32", torch.float32, True),
                       ("fp16", torch.float16, False), ("bf16", torch.bfloat16, False)]:
    torch.backends.cuda.matmul.allow_tf32 = tf32
    a = torch.randn(n, n, device="cuda", dtype=dt)
    b = torch.randn(n, n, device="cuda", dtype=dt)
    for _ in range(3):
        a @ b
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(reps):
        a @ b
    e.record()
    torch.cuda.synchronize()
    rows.append(f"{name},{n},{2 * n**3 * reps / (s.elapsed_time(e) / 1e3) / 1e12:.1f}")
open(sys.argv[1], "w").write("\n".join(rows) + "\n")
print("\n".join(rows))
PY
}

# gpu_busy against measures that do not come from the harness: nvidia-smi's
# utilization.gpu (the share of each sample period with a kernel running),
# sampled every 100 ms during the trial, and, when nsys is installed, the union
# of the kernels' intervals in its trace. Three configurations: launch-bound
# (tiny model: the old event bracket read ~1 there), compute-bound, loader-bound.
phase_busy() {
  local nsys=""
  command -v nsys >/dev/null && nsys=$(command -v nsys)
  echo "name,start,end" > "$OUT/busy_runs.csv"
  while IFS='|' read -r name workload values; do
    # --values picks the configuration; the space only has to hold it.
    printf 'workload: %s\nspace: {batch_size: [32, 512], num_workers: [0, 4, 14], prefetch_factor: [2], pin_memory: [false, true], precision: [fp32, bf16], grad_accum: [1]}\n' \
      "$workload" > "$OUT/busy_$name.yaml"
    nvidia-smi --query-gpu=timestamp,utilization.gpu --format=csv,noheader,nounits -lms 100 > "$OUT/busy_${name}_smi.csv" &
    local smi=$!
    local start end
    start=$(date +%s.%N)
    if [ -n "$nsys" ]; then
      "$nsys" profile --trace=cuda --sample=none --cpuctxsw=none --force-overwrite=true -o "$OUT/busy_$name" \
        "$AUTOTUNE" trial --config "$OUT/busy_$name.yaml" --values "$values" > "$OUT/busy_$name.log" 2>&1 || true
      "$nsys" stats --report cuda_gpu_trace --format csv --force-export=true -o "$OUT/busy_$name" \
        "$OUT/busy_$name.nsys-rep" > /dev/null 2>&1 || echo "nsys stats failed for $name"
      rm -f "$OUT/busy_$name.nsys-rep" "$OUT/busy_$name.sqlite"
    else
      "$AUTOTUNE" trial --config "$OUT/busy_$name.yaml" --values "$values" > "$OUT/busy_$name.log" 2>&1 || true
    fi
    end=$(date +%s.%N)
    kill "$smi" 2>/dev/null || true
    wait "$smi" 2>/dev/null || true
    echo "$values" > "$OUT/busy_$name.values.json"
    echo "$name,$start,$end" >> "$OUT/busy_runs.csv"
  done <<'CONFIGS'
launch_bound|{kind: cuda, width: 256, depth: 1, input_dim: 256, classes: 10, sample_bytes: 256, preprocess_passes: 1, warmup_seconds: 2, max_seconds: 10}|{"batch_size": 32, "num_workers": 4, "prefetch_factor": 2, "pin_memory": true, "precision": "fp32", "grad_accum": 1}
compute_bound|{kind: cuda, warmup_seconds: 2, max_seconds: 10}|{"batch_size": 512, "num_workers": 14, "prefetch_factor": 2, "pin_memory": true, "precision": "fp32", "grad_accum": 1}
loader_bound|{kind: cuda, warmup_seconds: 2, max_seconds: 10}|{"batch_size": 512, "num_workers": 0, "prefetch_factor": 2, "pin_memory": false, "precision": "bf16", "grad_accum": 1}
CONFIGS
  python3 bench/gpu/busy.py "$OUT" | tee "$OUT/busy.md"
}

phase_sweep() {
  local part="${1:?sweep A (fp32, tf32) or B (fp16, bf16)}"
  "$AUTOTUNE" sweep --config "bench/gpu/space_sweep_$part.yaml" --out "$OUT/sweep_$part.csv"
  wc -l "$OUT/sweep_$part.csv"
}

phase_tune() {
  (cd "$OUT" && "$AUTOTUNE" --config "$OLDPWD/bench/gpu/space_tune.yaml")
  cat "$OUT/tuned_gpu.yaml"
}

# The tuned configuration and PyTorch's DataLoader defaults (batch 32, no
# workers, no pinning, fp32), each re-measured in 3 fresh trials on this card:
# the speedup a user would see, apart from the noise of the tuning run itself.
phase_compare() {
  [ -f "$OUT/tuned_gpu.yaml" ] || phase_tune
  python3 bench/gpu/summary.py --best-values "$OUT" > "$OUT/tuned_values.json"
  local defaults='{"batch_size": 32, "num_workers": 0, "prefetch_factor": 2, "pin_memory": false, "precision": "fp32", "grad_accum": 1}'
  : > "$OUT/compare.jsonl"
  for i in 1 2 3; do
    for which in defaults tuned; do
      local values="$defaults"
      [ "$which" = tuned ] && values=$(cat "$OUT/tuned_values.json")
      "$AUTOTUNE" trial --config bench/gpu/space_tune.yaml --values "$values" | tail -1 |
        python3 -c "import json,sys; o=json.load(sys.stdin); o['which']='$which'; print(json.dumps(o))" >> "$OUT/compare.jsonl"
    done
  done
  tail -6 "$OUT/compare.jsonl"
}

phase_summary() {
  python3 bench/gpu/summary.py "$OUT"
}

phase_all() {
  phase_check
  phase_arch
  phase_test
  phase_gemm
  phase_busy
  phase_tune
  phase_compare
  phase_summary
}

[ $# -gt 0 ] || { sed -n 2,16p "$0"; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    all | check | arch | test | gemm | busy | tune | compare | summary) "phase_$1"; shift ;;
    sweep) phase_sweep "${2:-}"; shift 2 ;;
    *) sed -n 2,16p "$0"; exit 2 ;;
  esac
done
