#!/usr/bin/env bash
# The speedup autotune prints, on a quiet machine and on one that gets busy
# mid-session, against a long independent timing of the same configurations.
# For each job (configs/command_images.yaml, and the same job with 5 s of
# start-up before its first trial):
#   1. tuned on a quiet machine;
#   2. tuned again (same seed) while a busy loop takes one core from a third
#      of the quiet run's time on; the loop is started and ended by its pid;
#   3. timed independently on the quiet machine: the baseline, the quiet
#      answer and the loaded answer, each the script run by hand in a fresh
#      process and timed for 30 s (TRUTH=trial: by `autotune trial`), interleaved,
#      ROUNDS times each; the medians' ratios are the truth the printed
#      speedups are held against;
#   4. timed again with the busy loop running: the baseline and the loaded
#      answer, interleaved, ROUNDS times each: what a user whose machine
#      stays that busy sees.
#   bench/shared_machine.sh [ROUNDS]    (default 4; AUTOTUNE=path: another binary; JOBS="images startup";
#                                        TRUTH=long (default: configs/train_images.py run by hand, in a
#                                        fresh process, SECONDS_TIMED=30 s timed) or trial (`autotune
#                                        trial`: a cold start and the helper's own rule, about 10 s))
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
bin=$(realpath "${AUTOTUNE:-build/autotune}")
rounds=${1:-4}
truth=${TRUTH:-long}     # long: the script by hand, $seconds s timed; trial: `autotune trial` (cold, the helper's rule)
seconds=${SECONDS_TIMED:-30}
work=$(mktemp -d /tmp/autotune_shared.XXXXXX)
loop_pid=
trap '[ -n "$loop_pid" ] && kill "$loop_pid" 2>/dev/null; rm -rf "$work"' EXIT
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; $(date -u +%Y-%m-%dT%H:%MZ)"
echo "autotune $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo '+changes'); $rounds independent rounds ($truth$([ "$truth" = long ] && echo ", ${seconds}s timed"))"

spec_for() {  # job -> spec path
  local job=$1
  sed -e "s|cwd: \.|cwd: $root/configs|" -e '/^output:/d' configs/command_images.yaml >"$work/$job.yaml"
  if [ "$job" = startup ]; then
    sed -i 's|    python3 train_images.py|    sleep 5 \&\& python3 train_images.py|' "$work/$job.yaml"
  fi
  echo "$work/$job.yaml"
}
speedup_of() { grep -o '[0-9.]*x the baseline ([0-9.]*-[0-9.]*x at 90%, [0-9]* pairs)' "$1" | head -1; }
best_json() {  # tuned.yaml -> the answer as a JSON object
  python3 -c 'import json,sys,yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))["best"]))' "$1"
}
trial_tp() {  # spec values -> throughput of one independent measurement
  if [ "$truth" = long ]; then
    # The script run by hand in a fresh process, SECONDS of timed windows.
    env $(python3 -c 'import json,sys; print(" ".join(f"AUTOTUNE_{k.upper()}={str(v).lower() if isinstance(v, bool) else v}" for k, v in json.loads(sys.argv[1]).items()))' "$2") \
      PYTHONPATH="$root/python" python3 "$root/bench/long_timing.py" "$seconds" "$root/configs/train_images.py" 2>/dev/null
  else
    "$bin" trial "$1" --values "$2" 2>/dev/null
  fi | python3 -c 'import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1]).get("throughput", 0))'
}

for job in ${JOBS:-images startup}; do
  spec=$(spec_for "$job")
  echo
  echo "== $job"
  t0=$(date +%s)
  "$bin" "$spec" --out "$work/$job-quiet.yaml" >"$work/$job-quiet.out" 2>&1 || true
  quiet_s=$(( $(date +%s) - t0 ))
  ( "$bin" "$spec" --out "$work/$job-load.yaml" >"$work/$job-load.out" 2>&1 || true ) &
  tuner=$!
  sleep $(( quiet_s / 3 ))
  sh -c 'while :; do :; done' &
  loop_pid=$!
  echo "load: a busy loop (pid $loop_pid) from ${quiet_s}/3 s on"
  wait "$tuner"
  kill "$loop_pid"; wait "$loop_pid" 2>/dev/null || true; loop_pid=
  base=$(python3 -c 'import json,sys,yaml; s=yaml.safe_load(open(sys.argv[1])); print(json.dumps(s["search"]["initial"][0]))' "$spec")
  aq=$(best_json "$work/$job-quiet.yaml"); al=$(best_json "$work/$job-load.yaml")
  b=() q=() l=()
  for ((r = 1; r <= rounds; r++)); do
    b+=("$(trial_tp "$spec" "$base")"); q+=("$(trial_tp "$spec" "$aq")"); l+=("$(trial_tp "$spec" "$al")")
  done
  sh -c 'while :; do :; done' &
  loop_pid=$!
  bl=() ll=()
  for ((r = 1; r <= rounds; r++)); do
    bl+=("$(trial_tp "$spec" "$base")"); ll+=("$(trial_tp "$spec" "$al")")
  done
  kill "$loop_pid"; wait "$loop_pid" 2>/dev/null || true; loop_pid=
  python3 - "$work/$job-quiet.out" "$work/$job-load.out" "${b[*]}" "${q[*]}" "${l[*]}" "$aq" "$al" "$quiet_s" \
    "${bl[*]}" "${ll[*]}" <<'PY'
import re, statistics as st, sys
qo, lo = open(sys.argv[1]).read(), open(sys.argv[2]).read()
b, q, l = ([float(x) for x in a.split()] for a in sys.argv[3:6])
bl, ll = ([float(x) for x in a.split()] for a in sys.argv[9:11])
under_load = st.median(ll) / st.median(bl)
mb, mq, ml = st.median(b), st.median(q), st.median(l)
import math
T95 = (6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812)
def interval(num, den):
    """The ratio's 90% interval over the rounds, each round's two runs taken one after the other."""
    logs = [math.log(x / y) for x, y in zip(num, den) if x > 0 and y > 0]
    if len(logs) < 2:
        return None
    m = sum(logs) / len(logs)
    sd = (sum((v - m) ** 2 for v in logs) / (len(logs) - 1)) ** 0.5
    h = T95[min(len(logs) - 1, len(T95)) - 1] * sd / len(logs) ** 0.5
    return math.exp(m - h), math.exp(m + h)
for name, num in (("quiet answer", q), ("load answer", l)):
    iv = interval(num, b)
    if iv:
        print(f"independent {name} against the baseline, round by round: {iv[0]:.2f}-{iv[1]:.2f}x at 90% "
              f"(the timing's own uncertainty; {len(b)} rounds)")
print(f"quiet run: {sys.argv[8]} s; answer {sys.argv[6]}")
print(f"load run:  answer {sys.argv[7]}")
print(f"independent medians (samples/s): baseline {mb:.1f}, quiet answer {mq:.1f}, load answer {ml:.1f}")
for name, out, truth in (("quiet", qo, mq / mb), ("load", lo, ml / mb)):
    m = re.search(r"([0-9.]+)x the baseline \(([0-9.]+)-([0-9.]+)x at 90%, (\d+) pairs\)", out)
    kept = "not shown to be faster" in out
    if m:
        x, a, z = float(m.group(1)), float(m.group(2)), float(m.group(3))
        print(f"{name:5}: printed {x:.2f}x ({a:.2f}-{z:.2f}), independent {truth:.2f}x: off by {100 * (x / truth - 1):+.1f}%, "
              f"{'inside' if a <= truth <= z else 'OUTSIDE'} the interval")
        if name == "load":
            print(f"       under the same busy loop, independent {under_load:.2f}x: off by "
                  f"{100 * (x / under_load - 1):+.1f}%, {'inside' if a <= under_load <= z else 'OUTSIDE'} the interval")
    else:
        print(f"{name:5}: no interval printed{' (baseline kept)' if kept else ''}; independent {truth:.2f}x")
    for line in out.splitlines():
        if line.startswith(("machine:", "cores:")) or "the machine is" in line or "the pairs ran while" in line:
            print(f"       {line}")
print(f"load answer against quiet answer, timed quietly: {ml / mq:.3f}")
PY
done
