#!/usr/bin/env python3
"""One script that trains and is tuned (README "Adopting the answer"), tuned
by configs/command_adopt.yaml:

    build/autotune configs/command_adopt.yaml      # writes tuned_command_adopt.yaml here
    PYTHONPATH="$(build/autotune --python-path)" python3 configs/train_adopt.py --steps 200

Run by hand it trains an MLP on synthetic samples for --steps optimizer
steps, with the answer in --tuned (tuned_command_adopt.yaml in the current
folder, where the run above writes it), or with BASELINE before any tuning.
Under autotune each trial measures the same loop instead (autotune_trial's
Meter), and under `warm: true` one process serves trial after trial.
BASELINE is also the config's `initial:`, so the speedup autotune reports
is over what this script ran before tuning.

Needs PyTorch (Debian: python3-torch).
"""
import argparse
import itertools
import os
import sys

import autotune_trial

# The configuration the script ran before tuning: the defaults of tuned(),
# and configs/command_adopt.yaml's `initial:`.
BASELINE = dict(batch_size=32, grad_accum=4, num_workers=0, prefetch_factor=2, pin_memory=False)


def parse_args():
    a = argparse.ArgumentParser()
    a.add_argument("--steps", type=int, default=100, help="optimizer steps to train for, by hand")
    a.add_argument("--tuned", default="tuned_command_adopt.yaml", help="the answer to train with, when it exists")
    a.add_argument("--max-s", type=float, default=10.0, help="the longest a trial measures, in seconds")
    return a.parse_args()


def train(torch, model, opt, batches, grad_accum, steps=None):
    """One optimizer step every grad_accum micro-batches, so that a step
    learns from batch_size x grad_accum samples (the effective batch).
    Returns (optimizer steps, micro-batches, first loss, last loss)."""
    done, micro, first, loss = 0, 0, None, None
    for micro, (x, y) in enumerate(batches, 1):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        (loss / grad_accum).backward()
        first = loss.item() if first is None else first
        if micro % grad_accum == 0:
            opt.step()
            opt.zero_grad(set_to_none=True)
            done += 1
            if done == steps:
                break
    return done, micro, first, loss.item() if loss is not None else None


def main():
    a = parse_args()
    import torch
    from torch.utils.data import DataLoader, Dataset

    class Synthetic(Dataset):
        """Samples made on the CPU as a loader would: crop and normalise."""

        def __len__(self):
            return 1 << 16

        def __getitem__(self, i):
            g = torch.Generator().manual_seed(i)
            raw = torch.randint(0, 256, (3, 36, 36), dtype=torch.uint8, generator=g)
            x = raw[:, 2:34, 2:34].float().div_(255.0)
            return x.reshape(-1), i % 10

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3 * 32 * 32, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    dataset = Synthetic()

    # By hand: once, with the answer (or the baseline). Under autotune: one
    # pass per trial, with the trial's values.
    for p in autotune_trial.trials(**autotune_trial.tuned(a.tuned, **BASELINE)):
        loader = DataLoader(dataset, shuffle=True, drop_last=True, **autotune_trial.loader_arguments(p))
        if p.tuning:
            with autotune_trial.Meter(p, max_s=a.max_s) as meter:
                train(torch, model, opt, meter.batches(loader), p.grad_accum)
            continue
        source = f"the answer in {a.tuned}" if os.path.exists(a.tuned) else f"the baseline (no {a.tuned} yet)"
        print(f"train_adopt: training with {source}: "
              + " ".join(f"{k}={v}" for k, v in sorted(p.items())), flush=True)
        epochs = (batch for _ in itertools.count() for batch in loader)
        steps, micro, first, last = train(torch, model, opt, epochs, p.grad_accum, a.steps)
        print(f"train_adopt: {steps} optimizer steps of {micro // max(steps, 1)} x {loader.batch_size} samples "
              f"from DataLoader(batch_size={loader.batch_size}, num_workers={loader.num_workers}, "
              f"prefetch_factor={loader.prefetch_factor}, pin_memory={loader.pin_memory}); "
              f"loss {first:.3f} -> {last:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
