#!/usr/bin/env bash
# Installs the Debian 12 packages autotune builds with, when any is missing.
# Idempotent and quick when everything is there. Needs root (or sudo).
#   deps.sh          what building and running autotune needs
#   deps.sh --test   also what the test suites use (a throwaway Slurm cluster)
set -euo pipefail
packages=(
  build-essential cmake pkg-config git python3
  libeigen3-dev libnlopt-cxx-dev libnlopt-dev libyaml-cpp-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev libfmt-dev
  libmuparser-dev libcsv-dev gnuplot-nox
)
if [ "${1:-}" = "--test" ]; then
  # python3-venv: scripts/framework_venv.sh makes the framework tests' venv over python3-torch.
  packages+=(slurm-wlm munge python3-torch python3-torchvision python3-pil chromium python3-venv)
fi

# With the CUDA toolkit but without cuobjdump (an nvcc-only install), the test
# that lists the architectures in the built cuda module skips; pip's
# nvidia-cuda-cuobjdump brings the tool alone (tests/CMakeLists.txt looks
# there). Best effort: without it the test skips, nothing fails.
cuobjdump_for_tests() {
  command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || return 0
  command -v cuobjdump >/dev/null || [ -x /usr/local/cuda/bin/cuobjdump ] && return 0
  command -v python3 >/dev/null || return 0
  python3 -c "import sysconfig, os, sys; p = sysconfig.get_paths()['purelib']; sys.exit(0 if os.path.exists(p + '/nvidia/cu13/bin/cuobjdump') else 1)" && return 0
  echo "autotune: installing cuobjdump (pip: nvidia-cuda-cuobjdump) for the cuda architecture test" >&2
  python3 -m pip install --quiet --disable-pip-version-check 'nvidia-cuda-cuobjdump>=13,<14' >/dev/null 2>&1 ||
    echo "autotune: could not install cuobjdump; the cuda architecture test will skip" >&2
}
if [ "${1:-}" = "--test" ]; then
  cuobjdump_for_tests
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "autotune: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
