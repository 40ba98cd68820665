#!/usr/bin/env bash
# Quality against the minutes spent (issue 15): for the embedded cpu default
# (its exhaustive sweep replayed, each recorded level measured again by the
# harness's rule on a virtual clock) and the four synthetic profiles
# (simulated_time: the same rule on the model), `autotune compare` with the
# rule before issue 15 (fixed warm-up, a 2% stop, no racing, the whole budget)
# and with each of its levers (racing, the drained warm-up, the 5% stop, the
# stop at 3 steady windows, the stop on scatter without a trend, the converged stop), SEEDS
# seeds, budget 30. Also the cuda workload's sweep on an H100 (bench/gpu,
# configs/replay_h100.yaml) where it is in bench/results; LANDSCAPES="a b"
# picks landscapes by name, VARIANTS="before all" variants (before is
# always run: the ratios are against it). Reports per landscape the median fraction of the optimum
# at the end, the median seconds until the recommendation reaches 98% of it,
# and the median seconds a run takes, each variant beside the one before.
#   bench/time_to_quality.sh [SWEEP_CSV] [SUMMARY_MD] [SEEDS] [STRATEGY]
# The compare folders (CSV, plots) go to a scratch folder it names.
# SWEEP_CSV: `autotune sweep --config configs/default_cpu.yaml --out X.csv`
# (bench/results/cpu_default_sweep.csv is one; measuring it takes ~8 minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
sweep=${1:-bench/results/cpu_default_sweep.csv}
summary=${2:-bench/results/time_to_quality.md}
seeds=${3:-20}
strategy=${4:-bo}
bin=${AUTOTUNE:-build/autotune}
out=$(mktemp -d /tmp/autotune_time_to_quality.XXXXXX)

# The landscapes: name and spec.
specs=()
if [ -f "$sweep" ]; then
  # The embedded default's space and initial configuration, its workload replayed.
  sed -e "s|^workload:.*|workload: {kind: replay, file: $(realpath "$sweep"), simulated_time: true}|" \
      configs/default_cpu.yaml > "$out/cpu_default.yaml"
  specs+=(cpu_default)
fi
# The cuda workload's exhaustive sweep on an H100 (bench/gpu), replayed the same way.
h100=bench/results/gpu-h100-sxm/gpu_sweep.csv
if [ -f "$h100" ]; then
  sed -e "s|file: ../bench/results/gpu-h100-sxm/gpu_sweep.csv|file: $(realpath "$h100")|" configs/replay_h100.yaml > "$out/h100_cuda.yaml"
  specs+=(h100_cuda)
fi
for profile in balanced loader_bound compute_bound memory_tight; do
  sed -e "s/profile: balanced/profile: $profile/" -e "s/seed: 3}/seed: 3, simulated_time: true}/" \
      configs/synthetic.yaml > "$out/$profile.yaml"
  specs+=("$profile")
done

row() {  # landscape variant warm-up stop-spread fewest-windows scatter-stop flags -> one Markdown row from compare's summary.csv
  local name=$1 variant=$2 drained=$3 spread=$4 fewest=$5 scatter=$6; shift 6
  [ -z "${VARIANTS:-}" ] || [ "$variant" = before ] || [[ " $VARIANTS " == *" $variant "* ]] || return 0
  # The warm-up and stopping rules are the workload's options: the spec with them set.
  sed -e "s/^\(workload: {.*\)}/\1, warmup_until_drained: $drained, target_rsd: $spread, fewest_windows: $fewest, stop_on_scatter: $scatter}/" "$out/$name.yaml" \
    > "$out/$name-$variant.yaml"
  "$bin" compare --config "$out/$name-$variant.yaml" --strategies "$strategy" --repeats "$seeds" --budget 30 \
    --budgets 30 "$@" --out "$out/$name-$variant" >/dev/null 2>&1
  python3 - "$out/$name-$variant/summary.csv" "$name" "$variant" "$out/$name-before/summary.csv" <<'PY'
import csv, sys
r = next(csv.DictReader(open(sys.argv[1])))
b = next(csv.DictReader(open(sys.argv[4])))
t, tb = r["seconds_to_98"], b["seconds_to_98"]
ratio = f"{float(t) / float(tb):.2f}x" if t and tb else "-"
confirmed = r.get("median_fraction_confirmed") or ""
confirmed = f"{float(confirmed):.3f}" if confirmed else "-"
print(f"| {sys.argv[2]} | {sys.argv[3]} | {float(r['median_fraction_at_30']):.3f} | {float(r['p10_fraction_at_30']):.3f} | "
      f"{confirmed} | {t or 'never'} | {ratio} | {float(r['seconds_per_run']):.0f} | {float(r['raced_per_run']):.1f} |")
PY
}

{
  echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
  echo "autotune $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(date -u +%Y-%m-%dT%H:%MZ); $strategy, $seeds seeds, budget 30"
  echo
  echo "| landscape | variant | @30 median | @30 p10 | confirmed median | seconds to 98% (median) | vs before | seconds per run (median) | raced per run |"
  echo "|---|---|---|---|---|---|---|---|---|"
  for name in "${specs[@]}"; do
    # LANDSCAPES="h100_cuda cpu_default" runs only those.
    [ -z "${LANDSCAPES:-}" ] || [[ " $LANDSCAPES " == *" $name "* ]] || continue
    row "$name" before false 0.02 5 false
    row "$name" race false 0.02 5 false --race 0.10
    row "$name" drained true 0.02 5 false
    row "$name" stop5 false 0.05 5 false
    row "$name" settle3 false 0.02 3 false
    row "$name" scatter false 0.02 5 true
    row "$name" drained+race+stop5 true 0.05 5 false --race 0.10
    row "$name" drained+race+stop5+settle3 true 0.05 3 false --race 0.10
    row "$name" drained+race+stop5+settle3+scatter true 0.05 3 true --race 0.10
    row "$name" all true 0.05 3 true --race 0.10 --until-converged
  done
  echo
  echo "before: the fixed 1.5 s warm-up, windows until the last 5 agree within 2%, every trial measured in full, the whole"
  echo "budget (the rule before issue 15)."
  echo "race: racing inside a trial (margin 0.10, the default); drained: the warm-up ends 0.5 s in once the queue is seen"
  echo "drained, or full three steps running (warmup_until_drained; a replayed configuration's queue is full as its"
  echo "recorded warmup_ahead says, a synthetic one's wherever its loader never waits); stop5: windows until 5 agree"
  echo "within 5% (target_rsd 0.05, the default now); settle3: a steady measurement may stop after 3 or 4 windows"
  echo "(fewest_windows 3, the default now: when the 90% bound on their spread gives the precision of 5 windows at"
  echo "target_rsd; the other variants keep 5); scatter: a measurement whose last 5 windows spread more than"
  echo "target_rsd without a trend (no significant slope) stops there (stop_on_scatter, the default now; the other"
  echo "variants run on to the cap); converged: budget until_converged; all: every lever."
  echo "seconds: the trials' own (simulated) seconds, summed: start-up, warm-up, timed windows."
  echo "confirmed median: the answer after the spec's search.confirm re-measurements (the cpu default's 2), as tuning"
  echo "writes it; '-' where the spec confirms nothing."
  echo "cpu_default's steps scatter so that its windows spread as much as the sweep recorded."
  echo "compare folders: $out"
} | tee "$summary"
