#!/usr/bin/env bash
# How long reading a spec takes as its `values:` list grows: a spec with one
# parameter of N integer values and one of N names is generated and
# `autotune validate` timed on each (best of REPEATS). Reading should grow
# linearly with N (a million values in seconds, not minutes).
#   bench/spec_reading.sh [N] [REPEATS]    (defaults 1000000 3; AUTOTUNE=path: another binary)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${AUTOTUNE:-build/autotune}")
n=${1:-1000000}
repeats=${2:-3}
work=$(mktemp -d /tmp/autotune_spec_reading.XXXXXX)
trap 'rm -rf "$work"' EXIT
python3 - "$n" "$work" <<'PY'
import sys
n, work = int(sys.argv[1]), sys.argv[2]
head = "workload: {kind: synthetic}\nspace:\n  batch_size: [16, 32]\n"
with open(f"{work}/integers.yaml", "w") as f:
    f.write(head + "  v: {values: [" + ", ".join(str(i) for i in range(n)) + "]}\n")
with open(f"{work}/names.yaml", "w") as f:
    f.write(head + "  v: {values: [" + ", ".join(f"v{i}" for i in range(n)) + "]}\n")
PY
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg); $(date -u +%Y-%m-%dT%H:%MZ)"
echo "$bin (checkout $(git rev-parse --short HEAD)$(git diff --quiet || echo '+changes')); $n values, best of $repeats"
for kind in integers names; do
  best=
  for ((r = 1; r <= repeats; r++)); do
    start=$(date +%s.%N)
    "$bin" validate "$work/$kind.yaml" >/dev/null
    s=$(echo "$(date +%s.%N) - $start" | bc)
    if [ -z "$best" ] || [ "$(echo "$s < $best" | bc)" = 1 ]; then best=$s; fi
  done
  printf '%-8s %8d values  validate %.2f s\n' "$kind" "$n" "$best"
done
