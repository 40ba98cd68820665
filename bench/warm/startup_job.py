#!/usr/bin/env python3
"""A training job with a real start-up, for bench/warm_trials.sh: before its
first step it imports PyTorch, builds a model and loads its weights from
disk, and indexes a dataset of small files (listing, stat and a checksum of
each), as jobs do. --scale sizes the start-up (1.0: about 5-6 s on a 2-core
Xeon). Then one trial per autotune_trial.trials() step: a DataLoader over the
indexed files into the model, measured by the helper."""
import argparse
import hashlib
import os
import sys
import tempfile
import time

import autotune_trial

t0 = time.time()
a = argparse.ArgumentParser()
a.add_argument("--scale", type=float, default=1.0)
a.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "autotune-warm-bench-data"))
args = a.parse_args()

import torch  # noqa: E402
from torch.utils.data import DataLoader, Dataset  # noqa: E402

files = int(8000 * args.scale)
width = 1024
os.makedirs(args.data, exist_ok=True)
weights = os.path.join(args.data, f"model-{width}.pt")


def build_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(*[m for _ in range(int(24 * args.scale)) for m in (torch.nn.Linear(width, width),
                                                                                  torch.nn.ReLU())],
                               torch.nn.Linear(width, 10))


# The files and the weights are made once (the first run pays it, outside the
# figures: bench/warm_trials.sh runs the job by hand first).
if not os.path.exists(os.path.join(args.data, "done")):
    for i in range(files):
        with open(os.path.join(args.data, f"{i:06d}.bin"), "wb") as f:
            f.write(os.urandom(3 * 32 * 32))
    torch.save(build_model().state_dict(), weights)
    open(os.path.join(args.data, "done"), "w").close()

model = build_model()
model.load_state_dict(torch.load(weights))
index = []
for name in sorted(os.listdir(args.data)):
    if name.endswith(".bin"):
        path = os.path.join(args.data, name)
        with open(path, "rb") as f:
            index.append((path, os.stat(path).st_size, hashlib.sha256(f.read()).hexdigest()))
print(f"startup_job: start-up {time.time() - t0:.1f} s ({len(index)} files indexed)", file=sys.stderr, flush=True)


class Files(Dataset):
    def __len__(self):
        return len(index)

    def __getitem__(self, i):
        with open(index[i][0], "rb") as f:
            raw = torch.frombuffer(bytearray(f.read()), dtype=torch.uint8)
        x = raw.float().div_(255.0).reshape(3, 32, 32)
        x = torch.nn.functional.avg_pool2d(x.unsqueeze(0), 1).flatten()[:width]
        return torch.nn.functional.pad(x, (0, width - x.numel())), i % 10


opt = torch.optim.SGD(model.parameters(), lr=1e-3)
for p in autotune_trial.trials(batch_size=64, num_workers=0, prefetch_factor=2):
    kw = dict(batch_size=p.batch_size, num_workers=p.num_workers)
    if p.num_workers > 0:
        kw["prefetch_factor"] = p.prefetch_factor
    loader = DataLoader(Files(), shuffle=True, drop_last=True, **kw)
    with autotune_trial.Meter(p) as meter:
        for x, y in meter.batches(loader):
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
