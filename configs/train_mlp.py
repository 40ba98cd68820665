#!/usr/bin/env python3
"""A small training job tuned through autotune's command workload.

    python3 train_mlp.py --batch-size 64 --num-workers 4 --pin-memory true --precision bf16

Prints one JSON line: {"throughput": samples/s, "vram_bytes": ..., ...}, or
writes it to $AUTOTUNE_RESULT when set (the command contract). A CUDA
out-of-memory is reported as {"status": "oom"}.

With PyTorch: an MLP trained on synthetic samples through a real DataLoader
(batch_size, num_workers, pin_memory) with autocast for fp16/bf16 (tf32 sets
the matmul precision), on the GPU when there is one, else on the CPU.

Without PyTorch (this script never installs anything): a pure-Python stand-in
that is still measured for real - `num_workers` processes preprocess samples
(byte expansion, normalisation) while the main process runs a tiny MLP step
in plain Python. pin_memory and precision have no effect there and the result
says so ("backend": "python", "ignored": [...]). Set AUTOTUNE_REQUIRE_TORCH=1
to make a missing PyTorch an error instead.
"""
import argparse
import json
import os
import random
import sys
import time


def emit(result):
    path = os.environ.get("AUTOTUNE_RESULT")
    text = json.dumps(result)
    if path:
        with open(path, "w") as f:
            f.write(text)
    print(text, flush=True)


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--num-workers", type=int, default=0)
    p.add_argument("--pin-memory", default="false")
    p.add_argument("--precision", default="fp32", choices=["fp32", "tf32", "fp16", "bf16"])
    p.add_argument("--seconds", type=float, default=3.0, help="timed window after warm-up")
    p.add_argument("--warmup", type=float, default=1.5, help="must outlast the prefetched backlog")
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--depth", type=int, default=4)
    a = p.parse_args()
    a.pin_memory = a.pin_memory.lower() in ("1", "true", "yes")
    return a


def timed_loop(step, warmup_s, seconds):
    """Runs step() until warmup_s + seconds; returns (samples, seconds) of the timed part."""
    start = time.perf_counter()
    while time.perf_counter() - start < warmup_s:
        step()
    t0 = time.perf_counter()
    samples = 0
    while time.perf_counter() - t0 < seconds:
        samples += step()
    return samples, time.perf_counter() - t0


def run_torch(torch, a):
    from torch.utils.data import DataLoader, Dataset

    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
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
        kw.update(prefetch_factor=2, persistent_workers=True)
    loader = DataLoader(Synthetic(), shuffle=True, drop_last=True, **kw)
    layers, d = [], in_dim
    for _ in range(a.depth):
        layers += [torch.nn.Linear(d, a.width), torch.nn.ReLU()]
        d = a.width
    model = torch.nn.Sequential(*layers, torch.nn.Linear(d, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    if dev.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = a.precision == "tf32"
        torch.cuda.reset_peak_memory_stats()
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(a.precision)
    scaler = torch.cuda.amp.GradScaler(enabled=a.precision == "fp16" and dev.type == "cuda")
    it = iter(loader)

    def step():
        nonlocal it
        try:
            x, y = next(it)
        except StopIteration:
            it = iter(loader)
            x, y = next(it)
        x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
        with torch.autocast(dev.type, dtype=dtype, enabled=dtype is not None):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        if dev.type == "cuda":
            torch.cuda.synchronize()
        return x.shape[0]

    samples, secs = timed_loop(step, a.warmup, a.seconds)
    result = {"throughput": samples / secs, "timed_s": secs}
    if dev.type == "cuda":
        result["vram_bytes"] = torch.cuda.max_memory_allocated()
    return result


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
        return len(batch)

    counter = [0]
    if a.num_workers > 0:
        pool = mp.Pool(a.num_workers)
        jobs = pool.imap(make_batch, ((i, a.batch_size) for i in range(10 ** 9)), chunksize=1)

        def step():
            return train_step(next(jobs))
    else:
        pool = None

        def step():
            counter[0] += 1
            return train_step(make_batch((counter[0], a.batch_size)))

    try:
        samples, secs = timed_loop(step, a.warmup, a.seconds)
    finally:
        if pool:
            pool.terminate()
    return {"throughput": samples / secs, "timed_s": secs, "backend": "python",
            "ignored": ["pin_memory", "precision"]}


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
        emit(run_python(a))
        return 0
    try:
        emit(run_torch(torch, a))
    except torch.cuda.OutOfMemoryError as e:  # also classified from stderr, but say it plainly
        emit({"status": "oom", "reason": str(e).splitlines()[0]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
