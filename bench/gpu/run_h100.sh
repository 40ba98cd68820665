#!/usr/bin/env bash
# What a session with a GPU runs for the cuda harness (see README.md here).
# Build here first (bench/gpu/pack.sh), then on the device, with carry=["carry"]:
#   bench/gpu/run_h100.sh check          # seconds: the carried binaries start; GPU, driver, cores
#   bench/gpu/run_h100.sh test           # ~1 min: every CudaDevice test, none may skip
#   bench/gpu/run_h100.sh gemm           # ~1 min: harness GEMM TFLOP/s per precision vs the card's peak (PyTorch)
#   bench/gpu/run_h100.sh sweep A        # ~5 min: fp32 and tf32, 80 configurations -> sweep_A.csv
#   bench/gpu/run_h100.sh sweep B        # ~5 min: fp16 and bf16, 80 configurations -> sweep_B.csv
#   bench/gpu/run_h100.sh tune           # ~2 min: bo, 30 trials -> tuned_h100.yaml
#   bench/gpu/run_h100.sh summary        # seconds: h100_sweep.csv (replay table); tuned vs defaults vs rule of thumb
# Several phases may be named in one call: run_h100.sh check test gemm.
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
AUTOTUNE="$PWD/$CARRY/bin/autotune"
TESTS="$PWD/$CARRY/bin/test_workloads"

phase_check() {
  {
    cat "$CARRY/BUILD.txt"
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
    echo "cores: $(nproc)"
    (. /etc/os-release && echo "os: $PRETTY_NAME")
    echo "glibc: $(ldd --version | head -1)"
  } | tee "$OUT/gpu.txt"
  if ldd "$AUTOTUNE" "$TESTS" "$CARRY/lib/libautotune_cuda.so" | grep 'not found'; then
    echo "run_h100.sh: libraries missing on this machine (above)" >&2
    exit 1
  fi
  "$AUTOTUNE" --version
  "$AUTOTUNE" validate --config bench/gpu/space_sweep_A.yaml
  # One real cuda trial: the module loads (from $CARRY/lib) and measures.
  "$AUTOTUNE" trial --config "$CARRY/probe.yaml" \
    --values '{"batch_size": 64, "num_workers": 1, "prefetch_factor": 2, "pin_memory": true, "precision": "bf16", "grad_accum": 1}' |
    tee "$OUT/probe_trial.json"
}

phase_test() {
  "$TESTS" --gtest_filter='Cuda*' 2>&1 | tee "$OUT/test_cuda.txt" | tail -25
  if grep -q 'SKIPPED' "$OUT/test_cuda.txt"; then
    echo "run_h100.sh: a CudaDevice test skipped on a machine with a GPU" >&2
    exit 1
  fi
}

phase_gemm() {
  "$TESTS" --gtest_also_run_disabled_tests --gtest_filter='CudaDevice.DISABLED_GemmTflopsPerPrecision' |
    tee "$OUT/gemm_probe.txt"
  grep -E '^(precision|fp32|tf32|fp16|bf16),' "$OUT/gemm_probe.txt" > "$OUT/gemm_tflops.csv"
  # The card's peak as PyTorch's cuBLAS reaches it: square 8192 GEMMs, the same
  # FP32 accumulation, no pipeline around them.
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

phase_sweep() {
  local part="${1:?sweep A (fp32, tf32) or B (fp16, bf16)}"
  "$AUTOTUNE" sweep --config "bench/gpu/space_sweep_$part.yaml" --out "$OUT/sweep_$part.csv"
  wc -l "$OUT/sweep_$part.csv"
}

phase_tune() {
  (cd "$OUT" && "$AUTOTUNE" --config "$OLDPWD/bench/gpu/space_tune.yaml")
  cat "$OUT/tuned_h100.yaml"
}

phase_summary() {
  python3 bench/gpu/summary.py "$OUT"
}

[ $# -gt 0 ] || { sed -n 2,12p "$0"; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    check | test | gemm | tune | summary) "phase_$1"; shift ;;
    sweep) phase_sweep "${2:-}"; shift 2 ;;
    *) sed -n 2,12p "$0"; exit 2 ;;
  esac
done
