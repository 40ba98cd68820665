#!/usr/bin/env python3
"""Whether a configuration's samples per CPU-second hold under load: the
script run by hand (bench/long_timing.py) for SECONDS, its process tree's CPU
use and the machine's sampled every 0.5 s; over the middle of the run
(8 s after the start to 1.5 s before the end) prints the throughput, the
tree's cores, the other processes' cores and throughput per core.

    python3 bench/cpu_efficiency.py SECONDS '{"batch_size": 64, ...}' LABEL

Run from configs/ (configs/train_images.py is the script). A quiet estimate
of a loaded run's speedup (loaded throughput x quiet cores / loaded cores)
holds only where throughput per core does: bench/results/shared_machine.md.
"""
import json, os, subprocess, sys, time
HZ = os.sysconf("SC_CLK_TCK")
def tree_cpu(root):
    kids = {}
    tot = 0.0
    for p in os.listdir("/proc"):
        if not p.isdigit(): continue
        try:
            s = open(f"/proc/{p}/stat").read()
        except OSError: continue
        r = s.rfind(")"); f = s[r+2:].split()
        kids.setdefault(int(f[1]), []).append((int(p), f))
    stack=[root]; seen=set()
    while stack:
        q=stack.pop()
        for pid,f in kids.get(q,[]):
            if pid in seen: continue
            seen.add(pid); stack.append(pid)
            tot += (int(f[11])+int(f[12])+int(f[13])+int(f[14]))/HZ
    try:
        s=open(f"/proc/{root}/stat").read(); r=s.rfind(")"); f=s[r+2:].split()
        tot += (int(f[11])+int(f[12])+int(f[13])+int(f[14]))/HZ
    except OSError: pass
    return tot
def busy():
    v=[int(x) for x in open("/proc/stat").readline().split()[1:]]
    return (v[0]+v[1]+v[2]+v[5]+v[6]+v[7])/HZ
vals=json.loads(sys.argv[2]); secs=sys.argv[1]
env=dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
for k,v in vals.items(): env["AUTOTUNE_"+k.upper()]=str(v).lower() if isinstance(v,bool) else str(v)
p=subprocess.Popen([sys.executable,os.path.join(os.path.dirname(os.path.abspath(__file__)), "long_timing.py"),secs,os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "configs", "train_images.py")],env=env,stdout=subprocess.PIPE,stderr=subprocess.DEVNULL,cwd=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "configs"))
samples=[]
while p.poll() is None:
    samples.append((time.monotonic(), tree_cpu(p.pid), busy())); time.sleep(0.5)
out=p.stdout.read().decode().strip().splitlines()[-1]
tp=json.loads(out)["throughput"]
# use samples from 8 s after start to 1.5 s before the end
t0=samples[0][0]; tend=samples[-1][0]
mid=[s for s in samples if s[0]-t0>8 and tend-s[0]>1.5]
a,b=mid[0],mid[-1]; dt=b[0]-a[0]
tc=(b[1]-a[1])/dt; mb=(b[2]-a[2])/dt
print(f"{sys.argv[3]} tp={tp:.1f} tree={tc:.2f} foreign={mb-tc:.2f} eff={tp/tc:.1f}", flush=True)
