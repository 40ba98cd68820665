#!/usr/bin/env python3
"""Where a strategy's trials and answers go, from `autotune compare`'s trials.csv.

    bench/where_trials_go.py COMPARE_DIR [KNOB ...] [--by-trial]

Groups each run's measured configurations (the `config` column) and its final
answer (the last `answer`) by the values of the knobs named (default:
num_workers prefetch_factor) and prints, per strategy, the trials per run
spent in each group, the runs whose answer lies in it and the median true
fraction of the optimum of those answers. --by-trial adds, per trial index,
how many runs measured each value of the first knob there.
Standard library only.
"""
import collections
import csv
import statistics
import sys


def knobs_of(text):
    return dict(item.split("=", 1) for item in text.split())


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    if not args:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    folder, keys = args[0], args[1:] or ["num_workers", "prefetch_factor"]
    with open(f"{folder}/trials.csv", newline="") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
        columns = reader.fieldnames or []
    if "config" not in columns or "answer" not in columns:
        print(f"{folder}/trials.csv has no config column (written by an older autotune)", file=sys.stderr)
        return 2
    by_strategy = collections.defaultdict(lambda: collections.defaultdict(list))
    for r in rows:
        by_strategy[r["strategy"]][r["seed"]].append(r)
    for strategy, runs in by_strategy.items():
        spent = collections.Counter()
        answers = collections.defaultdict(list)
        per_trial = collections.defaultdict(collections.Counter)
        for trials in runs.values():
            for r in trials:
                if r["config"]:
                    group = tuple(knobs_of(r["config"]).get(k, "-") for k in keys)
                    spent[group] += 1
                    per_trial[int(r["trial"])][group[0]] += 1
            final = trials[-1]
            if final["answer"]:
                group = tuple(knobs_of(final["answer"]).get(k, "-") for k in keys)
                answers[group].append(float(final["fraction_of_optimum"]))
        n = len(runs)
        print(f"{strategy}: {n} runs; groups by {', '.join(keys)}")
        print(f"{'group':>24} {'trials/run':>10} {'answers':>8} {'answer fraction':>16}")
        for group in sorted(set(spent) | set(answers), key=lambda g: (-spent[g], g)):
            fr = answers.get(group, [])
            med = f"{statistics.median(fr):.4f}" if fr else "-"
            print(f"{'(' + ', '.join(group) + ')':>24} {spent[group] / n:>10.2f} {len(fr):>8} {med:>16}")
        if "--by-trial" in argv:
            print(f"per trial, runs by {keys[0]}:")
            for t in sorted(per_trial):
                print(f"  {t:>3}: " + ", ".join(f"{v}: {c}" for v, c in per_trial[t].most_common(5)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
