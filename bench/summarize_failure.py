#!/usr/bin/env python3
"""Joins the per-run CSVs of bench_failure_efficiency --runs and
bench/optuna_peers.py into one table: per landscape, tool and budget the
median and 10th percentile of the fraction of the exhaustive optimum, failed
trials per trial, failed trials after the first third of the budget (the
initial design), and ms per proposal; then the same over all landscapes.
Plain Python (no numpy): quantiles interpolate between order statistics, as
bench/bench_util.hpp does.

Usage: python3 bench/summarize_failure.py RUNS.csv [RUNS.csv ...]
"""
import collections
import csv
import sys


def quantile(v, q):
    v = sorted(v)
    if not v:
        return 0.0
    pos = q * (len(v) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (pos - lo) * (v[hi] - v[lo])


def main():
    rows = []
    for path in sys.argv[1:]:
        with open(path) as f:
            rows += list(csv.DictReader(f))
    groups = collections.defaultdict(list)
    for r in rows:
        groups[(r["landscape"], r["tool"], int(r["budget"]))].append(r)
        groups[("ALL", r["tool"], int(r["budget"]))].append(r)
    order = ["bo", "anneal", "random", "optuna-tpe", "optuna-gp"]
    tools = sorted({k[1] for k in groups}, key=lambda t: (order.index(t) if t in order else 99, t))
    lands = sorted({k[0] for k in groups if k[0] != "ALL"}) + ["ALL"]
    budgets = sorted({k[2] for k in groups})
    print("| landscape | tool | " + " | ".join(f"@{b} median / p10" for b in budgets)
          + " | " + " | ".join(f"@{b} failed / after design" for b in budgets) + " | ms/ask | runs |")
    print("|---|---|" + "---|" * (2 * len(budgets) + 2))
    for land in lands:
        for tool in tools:
            cells, fails, ms, n = [], [], [], 0
            for b in budgets:
                g = groups.get((land, tool, b), [])
                if not g:
                    cells.append("")
                    fails.append("")
                    continue
                n = max(n, len(g))
                fr = [float(r["fraction"]) for r in g]
                cells.append(f"{quantile(fr, 0.5):.3f} / {quantile(fr, 0.1):.3f}")
                failed = sum(int(r["failed"]) for r in g) / (len(g) * b)
                late = sum(int(r["failed_after_design"]) for r in g) / (len(g) * (b - b // 3))
                fails.append(f"{failed:.2f} / {late:.2f}")
                ms += [float(r["ms_per_ask"]) for r in g]
            if n == 0:
                continue
            name = f"**{land}**" if land == "ALL" else land
            print(f"| {name} | {tool} | " + " | ".join(cells) + " | " + " | ".join(fails)
                  + f" | {sum(ms) / len(ms):.1f} | {n} |")


if __name__ == "__main__":
    main()
