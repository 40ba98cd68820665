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
  packages+=(slurm-wlm munge python3-torch python3-torchvision python3-pil)
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
