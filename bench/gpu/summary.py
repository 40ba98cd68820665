#!/usr/bin/env python3
"""Summarises the GPU session's results (bench/gpu/run.sh summary).

Reads whatever the phases left in DIR: gpu.txt and arch.txt, gemm_*.csv
(the harness's GEMMs against PyTorch's and the datasheet's peak), busy.md,
tuned_gpu.yaml, compare.jsonl (tuned vs PyTorch's defaults, re-measured), and
sweep_*.csv (autotune sweep tables, optional); writes DIR/gpu_sweep.csv (the
union of the sweeps: a replay table) when there are sweeps, and DIR/summary.md,
and prints the summary.

    summary.py DIR                 the summary
    summary.py --best-values DIR   tuned_gpu.yaml's best as `autotune trial --values` JSON

Standard library only: the GPU machine has no registry.
"""
import csv
import glob
import json
import os
import re
import statistics
import sys

# Dense datasheet peaks, TFLOP/s (no sparsity), for the cards users have; the
# card's name from nvidia-smi is matched by substring. fp32 is the CUDA cores'
# FMA rate (what CUBLAS_COMPUTE_32F reaches), the rest the tensor cores'.
DATASHEET = {
    "H100 80GB HBM3": {"fp32": 67, "tf32": 495, "fp16": 989, "bf16": 989},  # SXM5
    "H100 PCIe": {"fp32": 51, "tf32": 378, "fp16": 756, "bf16": 756},
    "H100 NVL": {"fp32": 60, "tf32": 418, "fp16": 835, "bf16": 835},
    "H200": {"fp32": 67, "tf32": 495, "fp16": 989, "bf16": 989},
    "A100": {"fp32": 19.5, "tf32": 156, "fp16": 312, "bf16": 312},
    "L4": {"fp32": 30.3, "tf32": 60, "fp16": 121, "bf16": 121},
    "T4": {"fp32": 8.1, "fp16": 65},
}

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
    """best: and metrics.throughput from tuned_gpu.yaml, read without a YAML library."""
    path = os.path.join(out, "tuned_gpu.yaml")
    if not os.path.exists(path):
        return None, None
    text = open(path).read()
    throughput = flow_map(text, "metrics").get("throughput")
    return flow_map(text, "best"), float(throughput) if throughput else None


def scalar(text):
    if text in ("true", "false"):
        return text == "true"
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


def best_values(out):
    best, _ = tuned_best(out)
    if not best:
        sys.exit(f"no best: in {os.path.join(out, 'tuned_gpu.yaml')}")
    values = {k: scalar(v) for k, v in best.items()}
    values.setdefault("prefetch_factor", 2)
    values.setdefault("grad_accum", 1)
    print(json.dumps(values))


def card_name(out):
    try:
        lines = open(os.path.join(out, "gpu.txt")).read().splitlines()
    except OSError:
        return ""
    for i, line in enumerate(lines):
        if line.startswith("name,") and i + 1 < len(lines):
            return lines[i + 1].split(",")[0].strip()
    return ""


def read_csv(path):
    try:
        return list(csv.DictReader(open(path)))
    except OSError:
        return []


def gemm_section(out):
    harness = read_csv(os.path.join(out, "gemm_tflops.csv"))
    torch_rows = {r["precision"]: r["tflops"] for r in read_csv(os.path.join(out, "gemm_peak_torch.csv"))}
    if not harness and not torch_rows:
        return []
    name = card_name(out)
    sheet = next((v for k, v in DATASHEET.items() if k in name), {})
    lines = ["", f"## GEMM TFLOP/s on {name or 'this card'}", "",
             "| precision | harness (largest layer, batch 4096) | PyTorch 8192^3 | datasheet (dense) | harness / datasheet |",
             "|---|---|---|---|---|"]
    for r in harness:
        p = r["precision"]
        base = p.replace("_pedantic", "")
        peak = sheet.get(base)
        h = float(r["gemm_tflops"])
        lines.append(f"| {p} | {h:.1f} | {torch_rows.get(base, '') if p == base else ''} | {peak or ''} | "
                     f"{f'{h / peak:.0%}' if peak else ''} |")
    return lines


def compare_section(out):
    path = os.path.join(out, "compare.jsonl")
    if not os.path.exists(path):
        return []
    runs = {"defaults": [], "tuned": []}
    for line in open(path):
        try:
            o = json.loads(line)
        except ValueError:
            continue
        if o.get("status") == "ok" and o.get("which") in runs:
            runs[o["which"]].append(float(o["throughput"]))
    lines = ["", "## Tuned against PyTorch's defaults, re-measured (3 fresh trials each)", ""]
    if not runs["defaults"] or not runs["tuned"]:
        return lines + [f"incomplete: {', '.join(f'{k} {len(v)} ok' for k, v in runs.items())}"]
    d, t = statistics.median(runs["defaults"]), statistics.median(runs["tuned"])
    tuned_values = open(os.path.join(out, "tuned_values.json")).read().strip() if os.path.exists(
        os.path.join(out, "tuned_values.json")) else "?"
    return lines + [f"PyTorch defaults (batch 32, 0 workers, pageable, fp32): median {d:.0f} samples/s "
                    f"({', '.join(f'{x:.0f}' for x in runs['defaults'])})",
                    f"tuned {tuned_values}: median {t:.0f} samples/s ({', '.join(f'{x:.0f}' for x in runs['tuned'])})",
                    f"speedup: {t / d:.2f}x"]


def text_section(out, name, title):
    path = os.path.join(out, name)
    if not os.path.exists(path):
        return []
    return ["", f"## {title}", "", "```" if name.endswith(".txt") else "", open(path).read().rstrip(),
            "```" if name.endswith(".txt") else ""]


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--best-values":
        return best_values(sys.argv[2])
    out = sys.argv[1] if len(sys.argv) > 1 else "bench/gpu/out"
    lines = [f"# The cuda harness on {card_name(out) or 'a GPU'}"]
    lines += text_section(out, "arch.txt", "Architectures: the card against the module")
    lines += gemm_section(out)
    lines += text_section(out, "busy.md", "gpu_busy against nsys and nvidia-smi")
    best_cfg, tuned_t = tuned_best(out)
    if best_cfg:
        lines += ["", f"## Tuning (bo, 30 trials)", "",
                  f"found {', '.join(f'{k} {v}' for k, v in best_cfg.items())}: {tuned_t or 0:.0f} samples/s when tuned."]
    lines += compare_section(out)
    if glob.glob(os.path.join(out, "sweep_*.csv")):
        lines += ["", "## Sweep", ""] + sweep_lines(out)
    text = "\n".join(lines) + "\n"
    open(os.path.join(out, "summary.md"), "w").write(text)
    print(text, end="")


def sweep_lines(out):
    header, rows = read_sweeps(out)
    with open(os.path.join(out, "gpu_sweep.csv"), "w", newline="") as fh:
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

    lines = [f"{len(rows)} configurations ({', '.join(f'{n} {s}' for s, n in sorted(statuses.items()))})", ""]
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
    return lines


if __name__ == "__main__":
    main()
