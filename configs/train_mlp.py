#!/usr/bin/env python3
"""A small training job tuned through autotune's command workload, measured
with the autotune_trial helper (autotune puts it on PYTHONPATH).

    build/autotune configs/command_torch.yaml
    PYTHONPATH="$(build/autotune --python-path)" python3 configs/train_mlp.py --batch-size 64 --num-workers 2   # by hand

With PyTorch: an MLP trained on synthetic samples through a real DataLoader
(batch_size, num_workers, prefetch_factor, pin_memory), with autocast for
fp16/bf16 (tf32 sets the matmul precision), on the GPU when there is one,
else on the CPU. The helper does the timing (warm-up past the prefetched
backlog, timed windows, the spread rule), splits each step into data wait
and compute, reports device and host memory, turns a CUDA out-of-memory into
{"status": "oom"}, and writes the result where autotune reads it.

Without PyTorch (this script never installs anything): a pure-Python
stand-in, still measured for real by the same helper: `num_workers`
processes preprocess samples while the main process runs a tiny MLP step in
plain Python. pin_memory and precision have no effect there and the result
says so ("ignored"). Set AUTOTUNE_REQUIRE_TORCH=1 to make a missing PyTorch
an error instead.
"""
import argparse
import os
import random
import sys

import autotune_trial


def parse_args():
    # Defaults for a run by hand; under autotune the AUTOTUNE_* environment
    # (and the command line the config builds) give the trial's values.
    p = autotune_trial.params(batch_size=64, num_workers=0, prefetch_factor=2, pin_memory=False, precision="fp32",
                              grad_accum=1)
    a = argparse.ArgumentParser()
    a.add_argument("--batch-size", type=int, default=p.batch_size)
    a.add_argument("--num-workers", type=int, default=p.num_workers)
    a.add_argument("--prefetch-factor", type=int, default=p.prefetch_factor)
    a.add_argument("--pin-memory", default=str(p.pin_memory))
    a.add_argument("--precision", default=p.precision, choices=["fp32", "tf32", "fp16", "bf16"])
    a.add_argument("--grad-accum", type=int, default=p.grad_accum, help="micro-batches per optimizer step")
    a.add_argument("--width", type=int, default=256)
    a.add_argument("--depth", type=int, default=2)
    args = a.parse_args()
    args.pin_memory = args.pin_memory.lower() in ("1", "true", "yes")
    return args


def run_torch(torch, a):
    from torch.utils.data import DataLoader, Dataset

    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if dev.type == "cpu" and a.precision == "fp16":
        # torch's CPU autocast runs bfloat16 only: say so rather than fail in a traceback.
        autotune_trial.write_result({"status": "error", "reason": "fp16 needs a GPU (CPU autocast is bfloat16 only)"})
        return
    in_dim = 3 * 32 * 32

    class Synthetic(Dataset):
        def __len__(self):
            return 1 << 20

        def __getitem__(self, i):
            g = torch.Generator().manual_seed(i)
            raw = torch.randint(0, 256, (3, 36, 36), dtype=torch.uint8, generator=g)
            x = raw[:, 2:34, 2:34].float().div_(255.0)  # crop + normalise: real CPU work
            if i & 1:
                x = x.flip(-1)
            return x.reshape(-1), i % 10

    kw = dict(batch_size=a.batch_size, num_workers=a.num_workers, pin_memory=a.pin_memory and dev.type == "cuda")
    if a.num_workers > 0:
        kw.update(prefetch_factor=a.prefetch_factor, persistent_workers=True)
    loader = DataLoader(Synthetic(), shuffle=True, drop_last=True, **kw)
    layers, d = [], in_dim
    for _ in range(a.depth):
        layers += [torch.nn.Linear(d, a.width), torch.nn.ReLU()]
        d = a.width
    model = torch.nn.Sequential(*layers, torch.nn.Linear(d, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    if dev.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = a.precision == "tf32"
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(a.precision)
    scaler = torch.cuda.amp.GradScaler(enabled=a.precision == "fp16" and dev.type == "cuda")

    meter = autotune_trial.Meter(batch_size=a.batch_size, num_workers=a.num_workers,
                                 prefetch_factor=a.prefetch_factor)
    with meter:
        for step, (x, y) in enumerate(meter.batches(loader), 1):
            x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
            with torch.autocast(dev.type, dtype=dtype, enabled=dtype is not None):
                loss = torch.nn.functional.cross_entropy(model(x), y) / a.grad_accum
            scaler.scale(loss).backward()
            if step % a.grad_accum == 0:  # one optimizer step per grad_accum micro-batches
                scaler.step(opt)
                scaler.update()
                opt.zero_grad(set_to_none=True)


# --- the pure-Python stand-in ------------------------------------------------

IN_DIM, HIDDEN = 48, 32


def make_batch(args):
    """Worker side: decode-like expansion, crop, normalise; pure Python."""
    seed, batch = args
    rng = random.Random(seed)
    out = []
    for _ in range(batch):
        raw = bytes(rng.getrandbits(8) for _ in range(IN_DIM + 8))
        out.append([b / 255.0 - 0.5 for b in raw[4:4 + IN_DIM]])
    return out


def run_python(a):
    import multiprocessing as mp

    rng = random.Random(0)
    w1 = [[rng.uniform(-0.1, 0.1) for _ in range(IN_DIM)] for _ in range(HIDDEN)]
    w2 = [rng.uniform(-0.1, 0.1) for _ in range(HIDDEN)]

    def train_step(batch):
        for x in batch:
            h = [max(0.0, sum(wi * xi for wi, xi in zip(row, x))) for row in w1]
            y = sum(a_ * b_ for a_, b_ in zip(w2, h))
            g = 0.001 * (y - 1.0)
            for j in range(HIDDEN):
                w2[j] -= g * h[j]

    pool = mp.Pool(a.num_workers) if a.num_workers > 0 else None
    if pool:
        batches = pool.imap(make_batch, ((i, a.batch_size) for i in range(10 ** 9)), chunksize=1)
    else:
        batches = (make_batch((i, a.batch_size)) for i in range(10 ** 9))
    meter = autotune_trial.Meter(batch_size=a.batch_size, num_workers=a.num_workers, prefetch_factor=1)
    try:
        for batch in meter.batches(batches, samples=a.batch_size):
            train_step(batch)
        meter.finish()
    finally:
        if pool:
            pool.terminate()
    meter.result["ignored"] = "pin_memory, precision, grad_accum"
    meter.result["backend"] = "python"
    autotune_trial.write_result(meter.result)


def main():
    a = parse_args()
    try:
        import torch
    except ImportError:
        torch = None
    if torch is None:
        if os.environ.get("AUTOTUNE_REQUIRE_TORCH") == "1":
            print("train_mlp.py: PyTorch is not installed (import torch failed) and AUTOTUNE_REQUIRE_TORCH=1",
                  file=sys.stderr)
            return 2
        print("train_mlp.py: PyTorch not found; measuring the pure-Python stand-in", file=sys.stderr)
    # One trial by hand or cold; under `warm: true` one per trial autotune
    # sends, in this process (the imports above are paid once). The knobs
    # come from `p`: the command line gives the defaults.
    knobs = ("batch_size", "num_workers", "prefetch_factor", "pin_memory", "precision", "grad_accum")
    for p in autotune_trial.trials(**{k: getattr(a, k) for k in knobs}):
        t = argparse.Namespace(**{**vars(a), **{k: p[k] for k in knobs}})
        if torch is None:
            run_python(t)
        else:
            run_torch(torch, t)
    return 0


if __name__ == "__main__":
    sys.exit(main())
