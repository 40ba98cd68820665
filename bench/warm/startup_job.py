#!/usr/bin/env python3
"""A training job with a real start-up, for bench/warm_trials.sh: before its
first step it imports PyTorch, builds a text model and loads its weights
from disk (a 100M-parameter embedding table), and indexes a dataset of small
files (reads each, a checksum, a vocabulary count in Python), as jobs do.
--scale sizes the index (1.0: about 5-6 s of start-up in all on a 2-core
Xeon). Then one trial per autotune_trial.trials() step: a DataLoader over the
indexed files into the model, measured by the helper."""
import argparse
import collections
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

VOCAB, DIM, TOKENS = 200_000, 512, 512
files = int(5000 * args.scale)
os.makedirs(args.data, exist_ok=True)
weights = os.path.join(args.data, "model.pt")


def build_model():
    torch.manual_seed(0)
    return torch.nn.ModuleDict({"embed": torch.nn.EmbeddingBag(VOCAB, DIM, mode="mean"),
                                "head": torch.nn.Linear(DIM, 10)})


# The files and the weights are made once (bench/warm_trials.sh runs the job
# by hand first, outside the figures).
if not os.path.exists(os.path.join(args.data, f"done-{files}")):
    for i in range(files):
        with open(os.path.join(args.data, f"{i:06d}.bin"), "wb") as f:
            f.write(os.urandom(2 * TOKENS * 8))
    torch.save(build_model().state_dict(), weights)
    open(os.path.join(args.data, f"done-{files}"), "w").close()

model = build_model()
model.load_state_dict(torch.load(weights))
index, vocab = [], collections.Counter()
for name in sorted(os.listdir(args.data))[:files]:
    path = os.path.join(args.data, name)
    with open(path, "rb") as f:
        data = f.read()
    tokens = [int.from_bytes(data[j:j + 2], "little") % VOCAB for j in range(0, len(data), 2)]
    vocab.update(tokens)
    index.append((path, hashlib.sha256(data).hexdigest()))
print(f"startup_job: start-up {time.time() - t0:.1f} s ({len(index)} files, {len(vocab)} distinct tokens)",
      file=sys.stderr, flush=True)


class Files(Dataset):
    def __len__(self):
        return len(index)

    def __getitem__(self, i):
        with open(index[i][0], "rb") as f:
            raw = torch.frombuffer(bytearray(f.read()), dtype=torch.int16).to(torch.int64)
        return raw[:TOKENS].remainder(VOCAB), i % 10


opt = torch.optim.SGD(model["head"].parameters(), lr=1e-3)
for p in autotune_trial.trials(batch_size=64, num_workers=0, prefetch_factor=2):
    kw = dict(batch_size=p.batch_size, num_workers=p.num_workers)
    if p.num_workers > 0:
        kw["prefetch_factor"] = p.prefetch_factor
    loader = DataLoader(Files(), shuffle=True, drop_last=True, **kw)
    with autotune_trial.Meter(p) as meter:
        for x, y in meter.batches(loader):
            loss = torch.nn.functional.cross_entropy(model["head"](model["embed"](x)), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
