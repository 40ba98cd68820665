#!/usr/bin/env bash
# Tunes a "job" knob whose values are jobs that fail the way real ones do,
# through a compound `sh -c` command (the shell stays between), and prints
# how each trial was read. Run as root for the real OOM kill (a 300 MiB
# memory cgroup; without one the `hog` job simply runs).
#   bench/own_job_failures/run.sh [path/to/autotune]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
autotune=${1:-$here/../../build/autotune}
work=$(mktemp -d)
trap 'rm -rf "$work"; rmdir /sys/fs/cgroup/memory/autotune-heldout 2>/dev/null || true' EXIT
cg=true
if mkdir -p /sys/fs/cgroup/memory/autotune-heldout 2>/dev/null &&
   echo $((300 << 20)) > /sys/fs/cgroup/memory/autotune-heldout/memory.limit_in_bytes 2>/dev/null; then
  cg="echo \$\$ > /sys/fs/cgroup/memory/autotune-heldout/cgroup.procs"
fi
cp "$here/job.py" "$work/"
cat > "$work/space.yaml" <<YAML
workload:
  kind: command
  command: "cd . && $cg && /usr/bin/python3 job.py"
  timeout: 60s
space:
  job: {values: [ok, sh_sigkill, sh_segv, segv_in_worker, dl_sigkill, dl_shm, torchrun_rank9, cuda_oom, hog]}
search: {strategy: grid}
YAML
cd "$work"
echo "machine: $(nproc) cores, $(uname -r), $(/usr/bin/python3 -c 'import torch; print("torch", torch.__version__)')"
"$autotune" --config space.yaml
echo "left behind: $(pgrep -fc "$work/job.py" || true) processes"
