#!/usr/bin/env bash
# Makes the venv the helper's framework tests run in (build/fwvenv): the
# python3 with torch (Debian 12's python3-torch, torch 1.13) and, over it,
# transformers and Lightning pinned to releases that work with that torch,
# installed by pip with --no-deps (torch and the rest come from the system).
# Only the tests use them; autotune itself needs none. Idempotent: quick when
# the venv holds these pins.
#   framework_venv.sh [VENV]
# On failure it exits non-zero and leaves the reason in VENV.failed, which
# tests/python/test_frameworks.py reports: a skip, or a failure under CI=true.
set -uo pipefail
cd "$(dirname "$0")/.."
venv=${1:-build/fwvenv}
if [ -n "${AUTOTUNE_TEST_PYTHON:-}" ]; then
  python=$AUTOTUNE_TEST_PYTHON
elif [ -x /usr/bin/python3 ]; then
  python=/usr/bin/python3  # Debian's: where python3-torch lives (as tests/CMakeLists.txt)
else
  python=python3
fi
pins=(
  transformers==4.38.2 tokenizers==0.15.2 safetensors==0.4.2 huggingface_hub==0.20.3 accelerate==0.27.2
  lightning==2.2.5 pytorch_lightning==2.2.5 lightning_utilities==0.10.1 torchmetrics==1.3.2
  tqdm==4.66.2 filelock==3.13.1 packaging==23.2 regex==2023.12.25 fsspec==2024.2.0
)
stamp=$venv/autotune-pins.txt
if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "${pins[*]}" ]; then
  exit 0
fi
fail() {
  printf '%s\n' "$*" >"$venv.failed"
  echo "autotune: $*" >&2
  exit 1
}
mkdir -p "$(dirname "$venv")"
rm -rf "$venv" "$venv.failed"
"$python" -c "import torch" 2>/dev/null ||
  fail "$python has no torch (scripts/deps.sh --test installs python3-torch)"
"$python" -m venv --system-site-packages "$venv" >"$venv.log" 2>&1 ||
  fail "$python -m venv failed (Debian: apt-get install python3-venv): $(tail -n 2 "$venv.log" | tr '\n' ' ')"
echo "autotune: installing ${pins[*]} into $venv (pip --no-deps, over $python's torch)" >&2
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input --no-deps --only-binary=:all: \
  "${pins[@]}" >>"$venv.log" 2>&1 ||
  fail "pip install into $venv failed: $(tail -n 3 "$venv.log" | tr '\n' ' ')"
"$venv/bin/python" -c "import transformers, lightning, pytorch_lightning" >>"$venv.log" 2>&1 ||
  fail "the frameworks installed into $venv do not import: $(tail -n 3 "$venv.log" | tr '\n' ' ')"
printf '%s' "${pins[*]}" >"$stamp"
