#!/usr/bin/env python3
"""An image-classification job whose input pipeline is the bottleneck: the
case autotune exists for. Tuned by configs/command_images.yaml, measured with
the autotune_trial helper.

    build/autotune configs/command_images.yaml
    PYTHONPATH="$(build/autotune --python-path)" python3 configs/train_images.py --batch-size 64 --num-workers 2   # by hand

Each sample is a real JPEG file decoded with PIL, then augmented the way
vision jobs do (random resized crop, horizontal flip, colour jitter), turned
into a tensor and normalised, in the DataLoader's workers; the model is a
small convolutional network. The JPEG files (--images of them, 160x160, with
random shapes on noise) are generated at the first run into --data (default:
a folder in the system's temporary directory) and reused after that.

Needs PyTorch and Pillow (Debian: python3-torch python3-pil); torchvision is
used for the augmentations when it imports, else the same steps in PIL.
"""
import argparse
import os
import random
import sys
import tempfile

import autotune_trial


def parse_args():
    p = autotune_trial.params(batch_size=64, num_workers=0, prefetch_factor=2, pin_memory=False, precision="fp32",
                              grad_accum=1)
    a = argparse.ArgumentParser()
    a.add_argument("--batch-size", type=int, default=p.batch_size)
    a.add_argument("--num-workers", type=int, default=p.num_workers)
    a.add_argument("--prefetch-factor", type=int, default=p.prefetch_factor)
    a.add_argument("--pin-memory", default=str(p.pin_memory))
    a.add_argument("--precision", default=p.precision, choices=["fp32", "tf32", "fp16", "bf16"])
    a.add_argument("--grad-accum", type=int, default=p.grad_accum, help="micro-batches per optimizer step")
    a.add_argument("--images", type=int, default=2000)
    a.add_argument("--size", type=int, default=96, help="side of the crop the model sees")
    a.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "autotune-example-jpegs"))
    args = a.parse_args()
    args.pin_memory = args.pin_memory.lower() in ("1", "true", "yes")
    return args


def make_images(folder, count):
    """JPEG files with a few random shapes on noise; written once, atomically
    (a folder renamed into place), so parallel trials never read half a set."""
    from PIL import Image, ImageDraw

    done = os.path.join(folder, f"{count}.ok")
    if os.path.exists(done):
        return sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".jpg"))[:count]
    os.makedirs(os.path.dirname(folder) or ".", exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".jpegs-", dir=os.path.dirname(folder) or ".")
    rng = random.Random(0)
    for i in range(count):
        img = Image.effect_noise((160, 160), 40).convert("RGB")
        d = ImageDraw.Draw(img)
        for _ in range(4):
            x0, y0 = rng.randrange(0, 120), rng.randrange(0, 120)
            box = [x0, y0, x0 + rng.randrange(10, 40), y0 + rng.randrange(10, 40)]
            colour = tuple(rng.randrange(256) for _ in range(3))
            (d.ellipse if rng.random() < 0.5 else d.rectangle)(box, fill=colour)
        img.save(os.path.join(tmp, f"{i:06d}.jpg"), quality=90)
    open(os.path.join(tmp, f"{count}.ok"), "w").close()
    try:
        os.rename(tmp, folder)  # atomic; fails if another trial got there first
    except OSError:
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)
        if not os.path.exists(done):  # an older, smaller set: make ours beside it
            return make_images(folder + f"-{count}", count)
    return sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".jpg"))[:count]


def build_transform(size):
    try:
        from torchvision import transforms as T
        return T.Compose([T.RandomResizedCrop(size, scale=(0.5, 1.0)), T.RandomHorizontalFlip(),
                          T.ColorJitter(0.3, 0.3, 0.3), T.ToTensor(),
                          T.Normalize([0.5, 0.5, 0.5], [0.25, 0.25, 0.25])])
    except ImportError:  # the same steps with PIL and torch alone
        import torch
        from PIL import ImageEnhance, ImageOps

        def transform(img):
            w, h = img.size
            s = int(min(w, h) * random.uniform(0.7, 1.0))
            x, y = random.randrange(0, w - s + 1), random.randrange(0, h - s + 1)
            img = img.crop((x, y, x + s, y + s)).resize((size, size))
            if random.random() < 0.5:
                img = ImageOps.mirror(img)
            img = ImageEnhance.Brightness(img).enhance(random.uniform(0.7, 1.3))
            t = torch.frombuffer(bytearray(img.tobytes()), dtype=torch.uint8).view(size, size, 3)
            return (t.permute(2, 0, 1).float() / 255.0 - 0.5) / 0.25
        return transform


def train(torch, DataLoader, Jpegs, dev, a):
    """One trial: a loader and a model for the knobs in `a`, measured."""
    if dev.type == "cpu" and a.precision == "fp16":
        autotune_trial.write_result({"status": "error", "reason": "fp16 needs a GPU (CPU autocast is bfloat16 only)"})
        return
    kw = dict(batch_size=a.batch_size, num_workers=a.num_workers, pin_memory=a.pin_memory and dev.type == "cuda")
    if a.num_workers > 0:
        kw.update(prefetch_factor=a.prefetch_factor, persistent_workers=True)
    loader = DataLoader(Jpegs(), shuffle=True, drop_last=True, **kw)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, stride=2, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(16, 32, 3, stride=2, padding=1), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(4), torch.nn.Flatten(), torch.nn.Linear(32 * 16, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    if dev.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = a.precision == "tf32"
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(a.precision)
    scaler = torch.cuda.amp.GradScaler(enabled=a.precision == "fp16" and dev.type == "cuda")

    with autotune_trial.Meter(batch_size=a.batch_size, num_workers=a.num_workers,
                              prefetch_factor=a.prefetch_factor) as meter:
        for step, (x, y) in enumerate(meter.batches(loader), 1):
            x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
            with torch.autocast(dev.type, dtype=dtype, enabled=dtype is not None):
                loss = torch.nn.functional.cross_entropy(model(x), y) / a.grad_accum
            scaler.scale(loss).backward()
            if step % a.grad_accum == 0:  # one optimizer step per grad_accum micro-batches
                scaler.step(opt)
                scaler.update()
                opt.zero_grad(set_to_none=True)


def main():
    a = parse_args()
    import torch
    from PIL import Image
    from torch.utils.data import DataLoader, Dataset

    files = make_images(a.data, a.images)
    transform = build_transform(a.size)

    class Jpegs(Dataset):
        def __len__(self):
            return len(files)

        def __getitem__(self, i):
            with Image.open(files[i]) as img:
                x = transform(img.convert("RGB"))
            return x, i % 10

    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    # One trial by hand or cold; under `warm: true` one per trial autotune
    # sends, in this process: the imports, the image files and CUDA's start
    # are paid once. The knobs come from `p` (the command line gives the
    # defaults); the loader and the model are built per trial.
    for p in autotune_trial.trials(batch_size=a.batch_size, num_workers=a.num_workers,
                                   prefetch_factor=a.prefetch_factor, pin_memory=a.pin_memory,
                                   precision=a.precision, grad_accum=a.grad_accum):
        train(torch, DataLoader, Jpegs, dev, p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
