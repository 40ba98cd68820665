#!/usr/bin/env python3
"""The autotune_trial helper's warm-up on real PyTorch DataLoaders: seconds
spent and the figure read, for this checkout's helper, the helper of an older
revision (--baseline; default 4bad263, before the rules for idle workers and
inline loaders), and a long reference
measurement (4 s warm-up, 12 s cap, a 1% stop) that no warm-up backlog can
reach. Each loader shape is measured `--runs` times per rule, interleaved.

The dataset sleeps per sample (loading that does not compete for the cores),
the step sleeps for its compute: what differs between the rules is only when
the warm-up ends and when the windows stop.

    /usr/bin/python3 bench/trial_warmup.py [--runs 3] [--baseline REV]

Prints one Markdown table: per shape, the median warm-up seconds and
measurement seconds of each rule, how each warm-up ended, and each rule's
median figure over the reference's.
"""
import argparse
import importlib.util
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

try:
    import torch
    from torch.utils.data import DataLoader, Dataset
except ImportError:
    sys.exit("trial_warmup.py: needs PyTorch (Debian: python3-torch; run with /usr/bin/python3)")


class Sleepy(Dataset):
    def __init__(self, sample_s):
        self.sample_s = sample_s

    def __len__(self):
        return 1_000_000

    def __getitem__(self, i):
        time.sleep(self.sample_s)
        return torch.zeros(16)


# name, seconds of loading per sample, seconds of compute per step, workers, prefetch_factor
SHAPES = [
    ("inline, compute-bound", 0.0001, 0.060, 0, 2),
    ("inline, loader-bound", 0.003, 0.020, 0, 2),
    ("2 workers x2, compute-bound", 0.0001, 0.030, 2, 2),
    ("2 workers x16, slow steps", 0.0001, 0.050, 2, 16),
    ("2 workers x8, slow loader", 0.003, 0.008, 2, 8),
    ("4 workers x4, loader just behind", 0.0018, 0.006, 4, 4),
    ("4 workers x8, 200 ms steps (a GPU job)", 0.001, 0.200, 4, 8),
]
BATCH = 16


def load(path, name):
    """The helper at `path` as module `name`: the package folder
    python/autotune_trial, or the single file of revisions before it."""
    if os.path.isdir(path):
        spec = importlib.util.spec_from_file_location(name, os.path.join(path, "__init__.py"),
                                                      submodule_search_locations=[path])
    else:
        spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # the package's relative imports find it there
    spec.loader.exec_module(mod)
    return mod


def checkout_helper(rev, tmp):
    """The helper of revision `rev` written under `tmp` (the package, or the
    single file of revisions before it): its path."""
    def git(*args):
        return subprocess.run(["git", "-C", ROOT, *args], check=True, capture_output=True, text=True).stdout
    files = git("ls-tree", "--name-only", rev, "python/autotune_trial/").split()
    if not files:
        path = os.path.join(tmp, "autotune_trial_old.py")
        with open(path, "w") as f:
            f.write(git("show", f"{rev}:python/autotune_trial.py"))
        return path
    path = os.path.join(tmp, "autotune_trial_old")
    os.makedirs(path)
    for name in files:
        with open(os.path.join(path, os.path.basename(name)), "w") as f:
            f.write(git("show", f"{rev}:{name}"))
    return path


def measure(helper, shape, **rule):
    _, sample_s, step_s, workers, prefetch = shape
    kw = dict(num_workers=workers, prefetch_factor=prefetch) if workers else {}
    loader = DataLoader(Sleepy(sample_s), batch_size=BATCH, **kw)
    meter = helper.Meter(batch_size=BATCH, num_workers=workers, prefetch_factor=prefetch, **rule)
    for _ in meter.batches(loader):
        time.sleep(step_s)
    return meter.result


def ended_by(r):
    if r.get("warmup_drained"):
        return "drained"
    if r.get("warmup_ahead"):
        return "ahead"
    return "full" if r.get("warmup_complete") else "cut"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--baseline", default="4bad263", help="git revision whose helper to compare with (default: before the idle-workers and inline rules)")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="trial_warmup.")
    old_path = checkout_helper(a.baseline, tmp)
    rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    base = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", a.baseline], capture_output=True, text=True).stdout.strip()
    new = load(os.path.join(ROOT, "python", "autotune_trial"), "autotune_trial_new")
    old = load(old_path, "autotune_trial_old")
    rules = [("new", new, {}), ("baseline", old, {}),
             ("reference", new, dict(warmup_s=4.0, warmup_until_drained=False, max_s=12.0, target_rsd=0.01))]
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.machine())
    print(f"machine: {cpu}, {os.cpu_count()} cores; torch {torch.__version__}")
    print(f"helper: this checkout ({rev}{', with changes' if subprocess.run(['git', '-C', ROOT, 'diff', '--quiet', 'HEAD', '--', 'python/autotune_trial']).returncode else ''})"
          f" against {a.baseline} ({base}); {a.runs} runs per rule, interleaved; {time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}")
    print()
    print("| loader | warm-up s new / baseline | measured s new / baseline / reference | new ended by | "
          "figure / reference: new | baseline |")
    print("|---|---|---|---|---|---|")
    totals = {"new": 0.0, "baseline": 0.0}
    for shape in SHAPES:
        res = {name: [] for name, _, _ in rules}
        for _ in range(a.runs):
            for name, helper, rule in rules:
                res[name].append(measure(helper, shape, **rule))
        med = lambda name, key: statistics.median(r[key] for r in res[name])
        ref = med("reference", "throughput")
        for name in totals:
            totals[name] += sum(r["measure_seconds"] for r in res[name])
        ends = ", ".join(sorted({ended_by(r) for r in res["new"]}))
        print(f"| {shape[0]} | {med('new', 'warmup_seconds'):.2f} / {med('baseline', 'warmup_seconds'):.2f} | "
              f"{med('new', 'measure_seconds'):.2f} / {med('baseline', 'measure_seconds'):.2f} / "
              f"{med('reference', 'measure_seconds'):.2f} | {ends} | "
              f"{med('new', 'throughput') / ref:.3f} | {med('baseline', 'throughput') / ref:.3f} |", flush=True)
    print()
    print(f"measurement seconds, all runs: new {totals['new']:.1f}, baseline {totals['baseline']:.1f} "
          f"({totals['new'] / totals['baseline']:.2f}x)")


if __name__ == "__main__":
    main()
