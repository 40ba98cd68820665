#!/usr/bin/env python3
"""A data-parallel job of its own ranks on the CPU: the script starts
--ranks processes (torch.multiprocessing.spawn, gloo), each with its own
DataLoader whose samples take real CPU work to make, and trains a small
network with DistributedDataParallel. Tuned by configs/command_ranks.yaml,
warm: every rank loops over autotune_trial.trials() and runs each trial's
knobs together.

    build/autotune --config configs/command_ranks.yaml
    PYTHONPATH="$(build/autotune --python-path)" python3 configs/train_ranks.py --ranks 2   # by hand

Each rank's loader workers and intra-op threads compete for the node's
cores with the other ranks': per-rank knobs found at one rank can be slower
at two. Needs PyTorch and NumPy (Debian: python3-torch).
"""
import argparse
import os
import socket

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.utils.data import DataLoader, Dataset

import autotune_trial

BASELINE = dict(batch_size=32, num_workers=2, prefetch_factor=2, threads=2)  # batch_size: not tuned here


class Augmented(Dataset):
    """A 3x48x48 image per index, made and smoothed on the CPU (about a millisecond)."""

    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        img = rng.random((3, 48, 48), dtype=np.float32)
        for _ in range(12):
            img = (img + np.roll(img, 1, axis=1) + np.roll(img, 1, axis=2) + np.flip(img, axis=2)) / 4
        return torch.from_numpy(np.ascontiguousarray(img)), i % 10


def run_rank(rank, ranks, port):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=ranks)
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(
        torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(4),
        torch.nn.Flatten(), torch.nn.Linear(512, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for p in autotune_trial.trials(**BASELINE):
        loader = DataLoader(Augmented(), **autotune_trial.loader_arguments(p), shuffle=False)
        with autotune_trial.Meter(p) as m:
            for x, y in m.batches(loader):
                loss = torch.nn.functional.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
    dist.destroy_process_group()


def main():
    a = argparse.ArgumentParser()
    a.add_argument("--ranks", type=int, default=2)
    args = a.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(run_rank, args=(args.ranks, port), nprocs=args.ranks)


if __name__ == "__main__":
    main()
