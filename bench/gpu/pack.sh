#!/usr/bin/env bash
# Builds here, for the GPU machine, what bench/gpu/run.sh runs there.
#
# The GPU machine has the CUDA 13 toolkit (cuBLAS, cudart), CMake and PyTorch
# but none of our Debian libraries and no package registry, so we build on a
# Debian 12 machine (same x86-64) with the default architecture list (sm_75 to
# sm_90 and PTX, cmake/CudaArchitectures.cmake: the module users get, so that
# `run.sh arch` checks it on whatever card is at hand) and carry:
#   carry/bin/  autotune and test_workloads (Release, stripped)
#   carry/lib/  libautotune_cuda.so, the cuda workload's module (autotune
#               finds it in ../lib; test_workloads, which links it, through
#               LD_LIBRARY_PATH), and every shared library these load that is
#               neither glibc's nor CUDA's (yaml-cpp, fmt, muParser, NLopt,
#               libcsv, libgomp)
# CUDA's own libraries are not carried (cuBLAS is 600 MB; the device tool
# carries 64 MiB at most): the device's CUDA 13 provides them. glibc is not
# carried either; the binaries need GLIBC_2.34 and GLIBCXX_3.4.30 at most
# (checked below), which Ubuntu 22.04 and later and Debian 12 have.
#
# Then, with the device tool: run(command="bench/gpu/run.sh check arch",
# carry=["carry"]) first, to see that the binaries start there.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD="${BUILD:-build-gpu}"
CARRY="${CARRY:-carry}"

scripts/deps.sh
mkdir -p "$BUILD"
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DAUTOTUNE_BUILD_BENCH=OFF > "$BUILD/autotune_configure.log"
cmake --build "$BUILD" -j "$(nproc)" --target autotune test_workloads
MODULE="$BUILD/libautotune_cuda.so"
if ! [ -f "$MODULE" ] || ! ldd "$MODULE" | grep -q libcublas; then
  echo "pack.sh: the CUDA toolkit was not found, so the cuda workload was not built" >&2
  exit 1
fi

rm -rf "$CARRY"
mkdir -p "$CARRY/bin" "$CARRY/lib"
for exe in "$BUILD/autotune" "$BUILD/tests/test_workloads"; do
  strip -o "$CARRY/bin/$(basename "$exe")" "$exe"
done
strip -o "$CARRY/lib/libautotune_cuda.so" "$MODULE"
# The autotune_trial helper, where the carried autotune finds it (../python).
mkdir -p "$CARRY/python"
mkdir -p "$CARRY/python/autotune_trial"
cp python/autotune_trial/*.py "$CARRY/python/autotune_trial/"

# What the loader resolves, minus glibc's and CUDA's own libraries.
skip='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libgcc_s|libstdc\+\+|libcuda|libcudart|libcublas|libcublasLt|libautotune_cuda)\.so'
for exe in "$CARRY"/bin/* "$CARRY/lib/libautotune_cuda.so"; do
  ldd "$exe" | awk '/=> \//{print $1" "$3}'
done | sort -u | while read -r name path; do
  if ! [[ "$name" =~ $skip ]]; then cp -L "$path" "$CARRY/lib/$name"; fi
done

# The newest symbol versions anything carried needs from the device's own
# glibc and libstdc++; keep them at or under what the run script checks.
need_glibc=$(objdump -T "$CARRY"/bin/* "$CARRY"/lib/* | grep -oE 'GLIBC_2\.[0-9]+' | sort -Vu | tail -1)
need_cxx=$(objdump -T "$CARRY"/bin/* "$CARRY"/lib/* | grep -oE 'GLIBCXX_3\.4\.[0-9]+' | sort -Vu | tail -1)
{
  echo "built $(date -u +%FT%TZ) on $(. /etc/os-release && echo "$PRETTY_NAME"), commit $(git rev-parse --short HEAD)"
  echo "cuda $(nvcc --version | grep -oE 'release [0-9.]+')"
  echo "architectures: $(grep -oE 'cuda module architectures .*' "$BUILD/autotune_configure.log" | cut -d' ' -f4-)"
  echo "needs $need_glibc, $need_cxx, and from CUDA: $(ldd "$CARRY/lib/libautotune_cuda.so" | grep -oE 'lib(cudart|cublas|cublasLt)\.so\.[0-9]+' | sort -u | tr '\n' ' ')"
} > "$CARRY/BUILD.txt"
cat "$CARRY/BUILD.txt"
du -sh "$CARRY"
total=$(du -sb "$CARRY" | cut -f1)
if [ "$total" -gt $((60 * 1024 * 1024)) ]; then
  echo "pack.sh: $CARRY is $total bytes, over the device tool's 64 MiB" >&2
  exit 1
fi
# The binaries start here with only the carried libraries beside the system's.
LD_LIBRARY_PATH="$PWD/$CARRY/lib" "$CARRY/bin/autotune" --version
# and the carried autotune loads the carried module (no GPU here: its no-device error).
printf 'workload: {kind: cuda}\nspace: {batch_size: [64], num_workers: [1], prefetch_factor: [2], pin_memory: [true], precision: [bf16], grad_accum: [1]}\n' > "$CARRY/probe.yaml"
LD_LIBRARY_PATH="$PWD/$CARRY/lib" "$CARRY/bin/autotune" trial --config "$CARRY/probe.yaml" \
  --values '{"batch_size": 64, "num_workers": 1, "prefetch_factor": 2, "pin_memory": true, "precision": "bf16", "grad_accum": 1}' |
  tee "$CARRY/probe.txt"
if grep -q 'could not be loaded' "$CARRY/probe.txt"; then
  echo "pack.sh: the carried autotune does not find the carried module" >&2
  exit 1
fi
