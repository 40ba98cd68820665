#!/usr/bin/env bash
# How long reading a long journal takes: a real run's journal (synthetic
# workload, random strategy) grown to N finished trials, then timed through
# `report --text`, `report` (the HTML page) and `--resume` (which replays
# every trial before it runs one more). Prints the machine and each figure.
#   bench/journal_scale.sh [TRIALS]    (default 100000; AUTOTUNE=path: another binary)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${AUTOTUNE:-build/autotune}")
trials=${1:-100000}
work=$(mktemp -d /tmp/autotune_journal_scale.XXXXXX)
trap 'rm -rf "$work"' EXIT
cat >"$work/space.yaml" <<YAML
workload: {kind: synthetic, profile: balanced, noise: 0.02}
space:
  batch_size: {values: [16, 32, 64, 128, 256]}
  num_workers: {range: [0, 8]}
  prefetch_factor: {values: [1, 2, 4]}
search: {strategy: random, budget: 3, seed: 1}
output: {tuned: $work/tuned.yaml}
YAML
"$bin" "$work/space.yaml" --quiet
python3 - "$work/tuned.journal.jsonl" "$trials" <<'PY'
import json, random, sys
path, n = sys.argv[1], int(sys.argv[2])
lines = [json.loads(l) for l in open(path)]
header = [l for l in lines if l["type"] == "header"]
finish = [l for l in lines if l["type"] == "finish"][0]
rng = random.Random(1)
with open(path, "w") as out:
    out.write(json.dumps(header[0]) + "\n")
    for t in range(1, n + 1):
        config = {"batch_size": rng.choice([16, 32, 64, 128, 256]), "num_workers": rng.randrange(9),
                  "prefetch_factor": rng.choice([1, 2, 4])}
        out.write(json.dumps({"type": "start", "trial": t, "config": config, "time": t * 0.01}) + "\n")
        rec = dict(finish, trial=t, config=config, time=t * 0.01 + 0.005, throughput=1000.0 + rng.random() * 100)
        out.write(json.dumps(rec) + "\n")
PY
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; $(date -u +%Y-%m-%dT%H:%MZ)"
echo "autotune $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo '+changes'); a journal of $trials trials, $(du -h "$work/tuned.journal.jsonl" | cut -f1)"
timed() {  # label, command...: prints the wall seconds
  local t0 t1
  t0=$(date +%s.%N)
  "${@:2}" >/dev/null 2>"$work/err" || { echo "$1: failed"; cat "$work/err"; exit 1; }
  t1=$(date +%s.%N)
  printf '%-34s %8.2f s\n' "$1" "$(echo "$t1 - $t0" | bc)"
}
timed "report --text" "$bin" report --text "$work/tuned.journal.jsonl"
timed "report (HTML)" "$bin" report "$work/tuned.journal.jsonl" --out "$work/report.html"
timed "--resume, one more trial" "$bin" "$work/space.yaml" --quiet --resume --budget $((trials + 1))
