#!/usr/bin/env bash
# The framework helpers on a GPU (the device machine, with carry=["carry"] from
# bench/gpu/pack.sh; or a machine of your own with CARRY=a built tree):
#   bench/gpu/frameworks.sh test hf lightning pytorch_lightning    # ~5 min on an H100
# test: the CudaDevice suite (run.sh test). hf, lightning, pytorch_lightning:
# bench/gpu/frameworks_job.py tuned through autotune (command workload, warm,
# grid over precision, and num_workers for hf) with the installed framework:
# every precision must run as asked on the card (ran.jsonl), and tuned.yaml
# must come out. Results in $OUT as gpu.tgz, packed after each job; the table
# is /tmp/g/frameworks.md inside it.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-bench/gpu/out}"
CARRY="${CARRY:-carry}"
mkdir -p "$OUT" /tmp/g
REPO="$PWD"
export LD_LIBRARY_PATH="$(cd "$CARRY" && pwd)/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d"
done
AUTOTUNE="$(cd "$CARRY" && pwd)/bin/autotune"
export PYTHONUNBUFFERED=1
pack() { tar czf "$OUT/gpu.tgz" -C /tmp/g . ; }
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  echo "cores: $(nproc)"
  python3 - <<'PY'
import importlib, sys
import torch
print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)
for name in ("transformers", "accelerate", "lightning", "pytorch_lightning"):
    try:
        print(name, importlib.import_module(name).__version__)
    except Exception as e:
        print(name, "missing:", type(e).__name__, e)
PY
  "$AUTOTUNE" --version
} >/tmp/g/env.txt 2>&1
cat /tmp/g/env.txt
pack
for job in "$@"; do
  if [ "$job" = test ]; then
    OUT=/tmp/g CARRY="$CARRY" bench/gpu/run.sh test
    pack
    continue
  fi
  if ! python3 -c "import ${job/hf/transformers}" 2>/dev/null; then
    echo "frameworks.sh: ${job/hf/transformers} is not installed here; $job skipped" | tee -a /tmp/g/env.txt
    continue
  fi
  dir=/tmp/g/fw_$job
  rm -rf "$dir" && mkdir -p "$dir"
  workers="[4]"
  [ "$job" = hf ] && workers="[0, 4]"
  cat >"$dir/space.yaml" <<EOF
workload: {kind: command, command: 'python3 $REPO/bench/gpu/frameworks_job.py', timeout: 180s, warm: true, env: {JOB: $job}}
space:
  batch_size: [64]
  num_workers: $workers
  precision: ${PRECISIONS:-[fp32, tf32, fp16, bf16]}
search: {strategy: grid$( [ "$job" = hf ] || echo ", remeasure: 0")}
EOF
  (cd "$dir" && timeout 300 "$AUTOTUNE" --config space.yaml) 2>&1 | tee "$dir/autotune.txt" | tail -25
  pack
done
python3 - /tmp/g >/tmp/g/frameworks.md <<'PY'
import glob, json, os, sys
print("| job | trial | config | status | samples/s | precision ran (first step) | device | reason |")
print("|---|---|---|---|---|---|---|---|")
for d in sorted(glob.glob(os.path.join(sys.argv[1], "fw_*"))):
    job = d.split("fw_", 1)[1]
    ran = {}
    if os.path.exists(os.path.join(d, "ran.jsonl")):
        for line in open(os.path.join(d, "ran.jsonl")):
            r = json.loads(line)
            ran[str(r["trial"])] = r
    path = os.path.join(d, "tuned.journal.jsonl")
    for t in map(json.loads, open(path)) if os.path.exists(path) else []:
        if t.get("type") != "finish":
            continue
        r = ran.get(str(t.get("trial")), {})
        c = t["config"]
        print(f"| {job} | {t.get('trial')} | {c.get('precision')}, {c.get('num_workers')} workers | {t['status']} | "
              f"{t.get('throughput', 0):.0f} | {r.get('ran', '-')} | {r.get('device', '-')} | "
              f"{t.get('reason', '')[:120]} |")
PY
cat /tmp/g/frameworks.md
pack
