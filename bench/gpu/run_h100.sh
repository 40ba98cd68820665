#!/usr/bin/env bash
# What a session with a GPU runs for the cuda harness (see README.md here).
# Each phase stays under 10 minutes on one H100 with 16 cores; run them in order:
#   bench/gpu/run_h100.sh build          # ~3 min: Release build with CUDA (sm_90)
#   bench/gpu/run_h100.sh test           # ~1 min: the cuda tests (skipped without a device)
#   bench/gpu/run_h100.sh gemm           # ~1 min: GEMM TFLOP/s per precision -> gemm_tflops.csv
#   bench/gpu/run_h100.sh sweep fp32     # ~5 min each: 80 configurations -> sweep_fp32.csv
#   bench/gpu/run_h100.sh sweep tf32|fp16|bf16
#   bench/gpu/run_h100.sh tune           # ~3 min: bo, 30 trials -> tuned_h100.yaml
#   bench/gpu/run_h100.sh summary        # h100_sweep.csv (replay table) + tuned vs defaults vs rule of thumb
# Results go to $OUT (the device tool's folder that comes back), else bench/gpu/out.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-bench/gpu/out}"
BUILD="${BUILD:-build-gpu}"
mkdir -p "$OUT"
phase="${1:-}"

case "$phase" in
  build)
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/gpu.txt"
    nproc | tee -a "$OUT/gpu.txt"
    cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DAUTOTUNE_BUILD_BENCH=OFF \
      -DCMAKE_CUDA_ARCHITECTURES=90 2>&1 | tail -5
    make -C "$BUILD" -j"$(nproc)" test_workloads 2>&1 | tail -3
    # The CLI needs the spec loader; build it when it links.
    make -C "$BUILD" -j"$(nproc)" autotune 2>&1 | tail -3 || echo "autotune CLI does not build yet: sweep/tune phases need it"
    ;;
  test)
    "$BUILD/tests/test_workloads" --gtest_filter='Cuda*:CpuWorkload.*' 2>&1 | tee "$OUT/test_cuda.txt" | tail -30
    ;;
  gemm)
    "$BUILD/tests/test_workloads" --gtest_also_run_disabled_tests \
      --gtest_filter='CudaDevice.DISABLED_GemmTflopsPerPrecision' | tee "$OUT/gemm_probe.txt"
    grep -E '^(precision|fp32|tf32|fp16|bf16),' "$OUT/gemm_probe.txt" > "$OUT/gemm_tflops.csv"
    cat "$OUT/gemm_tflops.csv"
    ;;
  sweep)
    p="${2:?precision: fp32, tf32, fp16 or bf16}"
    sed "s/PRECISION/$p/" bench/gpu/space_sweep.yaml > "$OUT/space_sweep_$p.yaml"
    ./"$BUILD"/autotune sweep --config "$OUT/space_sweep_$p.yaml" --out "$OUT/sweep_$p.csv"
    wc -l "$OUT/sweep_$p.csv"
    ;;
  tune)
    ./"$BUILD"/autotune tune --config bench/gpu/space_tune.yaml --out "$OUT/tuned_h100.yaml"
    cat "$OUT/tuned_h100.yaml"
    ;;
  summary)
    python3 - "$OUT" <<'PY'
import csv, glob, os, sys
out = sys.argv[1]
rows, header = [], None
for f in sorted(glob.glob(os.path.join(out, "sweep_*.csv"))):
    with open(f) as fh:
        r = list(csv.reader(fh))
    if not r:
        continue
    header = header or r[0]
    rows += r[1:]
if not header:
    sys.exit("no sweep_*.csv in " + out)
with open(os.path.join(out, "h100_sweep.csv"), "w", newline="") as fh:
    w = csv.writer(fh)
    w.writerow(header)
    w.writerows(rows)
ix = {k: i for i, k in enumerate(header)}
def key(r): return tuple(r[ix[k]] for k in ("batch_size", "num_workers", "prefetch_factor", "pin_memory", "precision"))
ok = [r for r in rows if r[ix["status"]] == "ok"]
best = max(ok, key=lambda r: float(r[ix["throughput"]]))
named = {
    "pytorch defaults (bs256, w0, pin off, fp32)": ("256", "0", "2", "false", "fp32"),
    "rule of thumb (bs256, w14, pin on, bf16)": ("256", "14", "2", "true", "bf16"),
}
print(f"{len(rows)} rows, {len(ok)} ok -> {out}/h100_sweep.csv (replay table)")
print(f"optimum: {dict(zip(header, best))}")
for name, k in named.items():
    m = [r for r in ok if key(r) == k]
    if m:
        t = float(m[0][ix["throughput"]])
        print(f"{name}: {t:.0f} samples/s = {t / float(best[ix['throughput']]):.1%} of the optimum")
    else:
        print(f"{name}: not measured ok")
PY
    [ -f "$OUT/tuned_h100.yaml" ] && grep -A3 -E '^(best|metrics|baseline):' "$OUT/tuned_h100.yaml" || true
    ;;
  *)
    sed -n 2,12p "$0"
    exit 2
    ;;
esac
