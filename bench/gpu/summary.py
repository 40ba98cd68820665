#!/usr/bin/env python3
"""Summarises the GPU session's results (bench/gpu/run_h100.sh summary).

Reads DIR/sweep_*.csv (autotune sweep tables), DIR/tuned_h100.yaml and
DIR/gemm_*.csv when present; writes DIR/h100_sweep.csv (the union of the
sweeps: a replay table) and DIR/summary.md, and prints the summary:
the sweep's optimum, PyTorch's DataLoader defaults and the tuning guides' rule
of thumb as fractions of it, and what 30 trials of bo found.
Standard library only: the GPU machine has no registry.
"""
import csv
import glob
import os
import re
import sys

KEYS = ("batch_size", "num_workers", "prefetch_factor", "pin_memory", "precision")
DEFAULTS = {"batch_size": "32", "num_workers": "0", "prefetch_factor": "2", "pin_memory": "false", "precision": "fp32"}
RULE_OF_THUMB = {"num_workers": "4", "prefetch_factor": "2", "pin_memory": "true", "precision": "bf16"}


def read_sweeps(out):
    header, rows = None, []
    for path in sorted(glob.glob(os.path.join(out, "sweep_*.csv"))):
        with open(path, newline="") as fh:
            table = list(csv.reader(fh))
        if not table:
            continue
        if header is None:
            header = table[0]
        elif table[0] != header:
            sys.exit(f"{path}: columns differ from the first sweep's")
        rows += table[1:]
    if header is None:
        sys.exit(f"no sweep_*.csv in {out}")
    return header, [dict(zip(header, r)) for r in rows]


def matches(row, want):
    return all(row.get(k) == v for k, v in want.items())


def describe(row):
    return ", ".join(f"{k} {row[k]}" for k in KEYS if k in row)


def flow_map(text, key):
    """The top-level `key: {a: 1, b: x}` line of autotune's YAML as a dict of strings."""
    m = re.search(rf"^{key}: \{{(.*)\}}\s*$", text, re.M)
    if not m:
        return {}
    pairs = (item.partition(":") for item in m.group(1).split(","))
    return {k.strip(): v.strip().strip("'\"") for k, _, v in pairs}


def tuned_best(out):
    """best: and metrics.throughput from tuned_h100.yaml, read without a YAML library."""
    path = os.path.join(out, "tuned_h100.yaml")
    if not os.path.exists(path):
        return None, None
    text = open(path).read()
    throughput = flow_map(text, "metrics").get("throughput")
    return flow_map(text, "best"), float(throughput) if throughput else None


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "bench/gpu/out"
    header, rows = read_sweeps(out)
    with open(os.path.join(out, "h100_sweep.csv"), "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=header)
        w.writeheader()
        w.writerows(rows)
    ok = [r for r in rows if r["status"] == "ok"]
    if not ok:
        sys.exit("no configuration measured ok")
    best = max(ok, key=lambda r: float(r["throughput"]))
    top = float(best["throughput"])
    statuses = {}
    for r in rows:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1

    lines = [f"# Sweep of {len(rows)} configurations ({', '.join(f'{n} {s}' for s, n in sorted(statuses.items()))})", ""]
    lines += ["| configuration | samples/s | of the optimum | gpu_busy |", "|---|---|---|---|"]

    def line(name, r):
        t = float(r["throughput"])
        lines.append(f"| {name}: {describe(r)} | {t:.0f} | {t / top:.1%} | {r.get('gpu_busy', '')} |")

    line("optimum", best)
    for r in ok:
        if matches(r, DEFAULTS):
            line("PyTorch defaults", r)
    thumbs = sorted((r for r in ok if matches(r, RULE_OF_THUMB)), key=lambda r: int(r["batch_size"]))
    for r in thumbs:
        line("rule of thumb", r)
    best_cfg, tuned_t = tuned_best(out)
    if best_cfg:
        same = [r for r in ok if matches(r, {k: v for k, v in best_cfg.items() if k in KEYS})]
        swept = f"{float(same[0]['throughput']) / top:.1%} of the optimum in the sweep" if same else "not in the sweep"
        lines += ["", f"bo, 30 trials, found {', '.join(f'{k} {v}' for k, v in best_cfg.items())}: "
                  f"{tuned_t:.0f} samples/s when tuned; {swept}."]
        baselines = (("PyTorch defaults", DEFAULTS), ("the rule of thumb at batch 32", {**RULE_OF_THUMB, "batch_size": "32"}))
        for name, want in baselines:
            base = [r for r in ok if matches(r, want)]
            if tuned_t and base:
                lines.append(f"Tuned vs {name} (same harness, sweep's measurement): "
                             f"{tuned_t / float(base[0]['throughput']):.2f}x.")
    for name in ("gemm_tflops.csv", "gemm_peak_torch.csv"):
        path = os.path.join(out, name)
        if os.path.exists(path):
            lines += ["", f"{name}:", "```", open(path).read().rstrip(), "```"]
    text = "\n".join(lines) + "\n"
    open(os.path.join(out, "summary.md"), "w").write(text)
    print(text, end="")


if __name__ == "__main__":
    main()
