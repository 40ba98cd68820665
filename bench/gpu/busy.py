#!/usr/bin/env python3
"""gpu_busy against measures from outside the harness (bench/gpu/run.sh busy).

For each run in DIR/busy_runs.csv (name, host start and end time; the spec
and values in DIR/busy_NAME.yaml and .values.json): the harness's gpu_busy and
step_device_seconds (its JSON outcome, the last line of DIR/busy_NAME.log);
nvidia-smi's utilization.gpu (DIR/busy_NAME_smi.csv, sampled every 100 ms)
averaged over the trial's middle, past the warm-up; and, when nsys ran, the
union of the kernels' intervals over the same part of its trace
(DIR/busy_NAME*cuda_gpu_trace*.csv) divided by its length. Prints a Markdown
table. Standard library only: the GPU machine has no registry.

What to expect: nsys and the harness within ~0.1 of each other; nvidia-smi
reads high (a sample period with any kernel running counts whole), so it is an
upper bound; the launch_bound row well under 1 in all three.
"""
import csv
import datetime
import glob
import json
import os
import sys

WARMUP_S = 2.0  # the busy specs' warmup_seconds


def outcome(out, name):
    try:
        lines = [l for l in open(os.path.join(out, f"busy_{name}.log")) if l.strip().startswith("{")]
        return json.loads(lines[-1]) if lines else {}
    except (OSError, ValueError):
        return {}


def metric(o, key):
    v = o.get(key, o.get("metrics", {}).get(key))
    return float(v) if isinstance(v, (int, float)) else None


def smi_busy(out, name, start, end, o=None):
    """Mean utilization.gpu (0..1) over the timed windows (host clock): from the
    trial's start-up and warm-up (its own metrics; WARMUP_S + 1 s when it has none)
    to 0.3 s before the process ended. The warm-up can end at 0.5 s, so a fixed
    offset left a short run (3.8 s on an H100) with no samples."""
    vals = []
    lead = WARMUP_S + 1
    if o:
        seconds, measure, warm = metric(o, "seconds"), metric(o, "measure_seconds"), metric(o, "warmup_seconds")
        if seconds is not None and measure is not None and warm is not None:
            lead = max(0.0, seconds - measure) + warm + 0.2
    tail = 0.3 if o else 1.0
    try:
        for row in csv.reader(open(os.path.join(out, f"busy_{name}_smi.csv"))):
            if len(row) < 2:
                continue
            try:
                t = datetime.datetime.strptime(row[0].strip(), "%Y/%m/%d %H:%M:%S.%f").timestamp()
                u = float(row[1])
            except ValueError:
                continue
            if start + lead <= t <= end - tail:
                vals.append(u / 100.0)
    except OSError:
        return None
    return sum(vals) / len(vals) if vals else None


def nsys_busy(out, name):
    """Union of kernel intervals / span, over the trace's kernels after the first 40% of their span
    (past the warm-up and the GEMM probe) up to the last 5% (the gated probe at the end)."""
    paths = glob.glob(os.path.join(out, f"busy_{name}*cuda_gpu_trace*.csv"))
    if not paths:
        return None
    rows = list(csv.DictReader(open(paths[0])))
    if not rows:
        return None
    def col(*names):
        for n in names:
            for k in rows[0]:
                if k and k.strip().lower().startswith(n):
                    return k
        return None
    c_start, c_dur, c_name = col("start"), col("duration"), col("name")
    if not (c_start and c_dur):
        return None
    spans = []
    for r in rows:
        name_ = (r.get(c_name) or "") if c_name else ""
        if name_.startswith("[CUDA mem"):  # copies and memsets are not compute
            continue
        try:
            s = float(r[c_start])
            spans.append((s, s + float(r[c_dur])))
        except (TypeError, ValueError):
            continue
    if not spans:
        return None
    spans.sort()
    t0, t1 = spans[0][0], max(e for _, e in spans)
    lo, hi = t0 + 0.4 * (t1 - t0), t1 - 0.05 * (t1 - t0)
    busy, cur_s, cur_e = 0.0, None, None
    for s, e in spans:
        s, e = max(s, lo), min(e, hi)
        if e <= s:
            continue
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                busy += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        busy += cur_e - cur_s
    return busy / (hi - lo) if hi > lo else None


def fmt(v, digits=3):
    return "" if v is None else f"{v:.{digits}f}"


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "bench/gpu/out"
    runs = list(csv.DictReader(open(os.path.join(out, "busy_runs.csv"))))
    lines = ["| run | status | samples/s | gpu_busy (harness) | step device s | nsys kernels | nvidia-smi util |",
             "|---|---|---|---|---|---|---|"]
    for r in runs:
        o = outcome(out, r["name"])
        lines.append(f"| {r['name']} | {o.get('status', '?')} | {fmt(metric(o, 'throughput'), 0)} | "
                     f"{fmt(metric(o, 'gpu_busy'))} | {fmt(metric(o, 'step_device_seconds'), 6)} | "
                     f"{fmt(nsys_busy(out, r['name']))} | "
                     f"{fmt(smi_busy(out, r['name'], float(r['start']), float(r['end']), o))} |")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
