#!/usr/bin/env bash
# A data-parallel job tuned as it runs: configs/train_ranks.py, 2 gloo ranks
# on the CPU whose loaders do real CPU work, tuned by
# configs/command_ranks.yaml. Same seed and budget throughout:
#   1. tuned warm at 2 ranks (every rank loops over trials());
#   2. tuned cold at 2 ranks (a fresh launch per trial): the session's
#      time and answer against 1;
#   3. tuned warm at 1 rank (--ranks 1, constraints.ranks: 1);
#   4. timed at 2 ranks by `autotune trial` (a cold launch each), ROUNDS
#      times, interleaved: the baseline, the answer tuned at 1 rank and
#      applied to 2, and the answer tuned at 2 ranks.
#   bench/ranks.sh [ROUNDS] [BUDGET]    (defaults 4 and 8; AUTOTUNE=path: another binary;
#                                        RANKS=n: the ranks of 1, 2 and 4, default 2)
# Needs python3 with torch and numpy on PATH (Debian: python3-torch; PATH=/usr/bin:$PATH
# where another python3 comes first).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
bin=$(realpath "${AUTOTUNE:-build/autotune}")
rounds=${1:-4}
budget=${2:-8}
ranks=${RANKS:-2}
work=$(mktemp -d /tmp/autotune_ranks.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; $(date -u +%Y-%m-%dT%H:%MZ)"
echo "autotune $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo '+changes'); $ranks ranks, budget $budget, $rounds timing rounds"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

spec_for() {  # name ranks warm -> spec path
  sed -e "s|cwd: \.|cwd: $root/configs|" -e '/^output:/d' \
      -e "s|--ranks 2|--ranks $2|" -e "s|  ranks: 2 |  ranks: $2 |" -e "s|warm: true |warm: $3 |" \
      -e "s|  budget: {trials: 10, time: 15m}|  budget: {trials: $budget, time: 30m}\n  remeasure: 4\n  explain: false|" \
      configs/command_ranks.yaml >"$work/$1.yaml"
  echo "$work/$1.yaml"
}
best_json() {
  python3 -c 'import json,sys,yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))["best"]))' "$1"
}
trial_tp() {  # spec values -> throughput of one cold measurement
  "$bin" trial "$1" --values "$2" 2>/dev/null |
    python3 -c 'import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1]).get("throughput", 0))'
}
tune() {  # name spec -> seconds
  local t0
  t0=$(date +%s.%N)
  "$bin" "$2" --out "$work/$1.tuned.yaml" >"$work/$1.out" 2>&1 || true
  python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.0f}')" "$t0" "$(date +%s.%N)"
}

warm=$(spec_for warm "$ranks" true); cold=$(spec_for cold "$ranks" false); one=$(spec_for one 1 true)
s_warm=$(tune warm "$warm"); echo "warm at $ranks ranks: ${s_warm}s"
s_cold=$(tune cold "$cold"); echo "cold at $ranks ranks: ${s_cold}s"
s_one=$(tune one "$one"); echo "warm at 1 rank: ${s_one}s"
base=$(python3 -c 'import json,sys,yaml; s=yaml.safe_load(open(sys.argv[1])); print(json.dumps(s["search"]["initial"][0]))' "$warm")
a_warm=$(best_json "$work/warm.tuned.yaml"); a_cold=$(best_json "$work/cold.tuned.yaml"); a_one=$(best_json "$work/one.tuned.yaml")
b=() o=() w=()
for ((r = 1; r <= rounds; r++)); do
  b+=("$(trial_tp "$warm" "$base")"); o+=("$(trial_tp "$warm" "$a_one")"); w+=("$(trial_tp "$warm" "$a_warm")")
done
python3 - "$work" "$ranks" "$s_warm" "$s_cold" "$s_one" "$base" "$a_warm" "$a_cold" "$a_one" \
  "${b[*]}" "${o[*]}" "${w[*]}" <<'PY'
import re, statistics as st, sys
work, ranks, s_warm, s_cold, s_one, base, a_warm, a_cold, a_one = sys.argv[1:10]
b, o, w = ([float(x) for x in a.split()] for a in sys.argv[10:13])
def out(name):
    return open(f"{work}/{name}.out").read()
def line(text, start):
    return next((l for l in text.splitlines() if l.startswith(start)), "")
def printed(text):
    m = re.search(r"([0-9.]+)x the baseline( \([0-9.]+-[0-9.]+x at 90%, \d+ pairs\))?", text)
    return m.group(0) if m else ("baseline kept" if "not shown to be faster" in text else "none")
print()
print(f"| session ({ranks} ranks unless said) | seconds | answer | printed | trials |")
print("|---|---|---|---|---|")
for name, secs, ans, label in (("warm", s_warm, a_warm, "warm"), ("cold", s_cold, a_cold, "cold"),
                               ("one", s_one, a_one, "warm, tuned at 1 rank")):
    text = out(name)
    print(f"| {label} | {secs} | {ans} | {printed(text)} | {line(text, 'trials:')[8:].strip()} |")
for name in ("warm", "cold"):
    t = line(out(name), "time:")
    if t:
        print(f"{name} {t}")
print()
print(f"timed at {ranks} ranks, `autotune trial` (a cold launch each), {len(b)} rounds interleaved, medians:")
mb, mo, mw = st.median(b), st.median(o), st.median(w)
print(f"| configuration | samples/s (median) | all | against the baseline |")
print("|---|---|---|---|")
for label, cfg, xs, m in (("baseline", base, b, mb), ("tuned at 1 rank, applied", a_one, o, mo),
                          (f"tuned at {ranks} ranks", a_warm, w, mw)):
    print(f"| {label} {cfg} | {m:.1f} | {' '.join(f'{x:.0f}' for x in xs)} | {m / mb:.2f}x |")
print(f"tuned at {ranks} ranks against tuned at 1 rank, both at {ranks}: {mw / mo:.2f}x")
print(f"cold session / warm session: {float(s_cold) / float(s_warm):.2f}x the time")
for name in ("warm", "one"):
    for l in out(name).splitlines():
        if l.startswith(("cores:", "machine:")):
            print(f"{name}: {l}")
PY
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
