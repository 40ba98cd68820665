"""The trial's knobs as each framework's keywords: TrainingArguments, a
Lightning Trainer, a DataLoader; and the knobs the process itself applies
(threads)."""

import inspect
import os
import sys

from ._precision import _precision, _set_matmul_tf32, _tf32_gpu
from ._torch_env import _torch


def _loader_prefetch_default():
    """torch's DataLoader's own prefetch_factor default where it is a number:
    2 before torch 2.0, which takes only a number there; None since."""
    torch = _torch()
    try:
        default = inspect.signature(torch.utils.data.DataLoader.__init__).parameters["prefetch_factor"].default
    except Exception:
        return None
    return default if isinstance(default, int) else None


def _accepted(kw, cls, what):
    """`kw` less the keywords `cls` does not take (an older or newer release), said once on standard error."""
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return kw
    if any(q.kind is inspect.Parameter.VAR_KEYWORD for q in params.values()):
        return kw
    left = sorted(k for k in kw if k not in params)
    if left:
        print(f"autotune_trial: this {what} takes no {', '.join(left)}: left out", file=sys.stderr, flush=True)
    return {k: v for k, v in kw.items() if k in params}


# loader_arguments' keywords under TrainingArguments' names.
_HF_LOADER_KEYS = {"batch_size": "per_device_train_batch_size", "num_workers": "dataloader_num_workers",
                   "pin_memory": "dataloader_pin_memory", "prefetch_factor": "dataloader_prefetch_factor"}


def training_arguments(p):
    """Keywords for Hugging Face ``TrainingArguments`` from the trial's knobs
    in `p` (only those present)::

        args = transformers.TrainingArguments(output_dir="out", max_steps=10_000,
                                              **autotune_trial.training_arguments(p))

    batch_size -> per_device_train_batch_size, grad_accum ->
    gradient_accumulation_steps, num_workers -> dataloader_num_workers,
    pin_memory -> dataloader_pin_memory, prefetch_factor ->
    dataloader_prefetch_factor (only with num_workers > 0; there, without
    the knob, torch's own default where torch before 2.0 needs it written).
    precision: fp16 -> fp16=True, bf16 -> bf16=True, and tf32=True for tf32
    where the GPU computes in TF32 (compute capability 8.0 or newer); every
    other case passes tf32=False (so a warm process does not keep an earlier
    trial's TF32), fp16=False and bf16=False. On a CPU, or an older GPU,
    tf32 is not a precision: the trial runs fp32, and HFCallback reports it
    as an ``error`` (the precision asked is not the one that ran), as it
    does any other difference; transformers itself refuses fp16 on a CPU.

    transformers 4.36-4.38 over torch before 2.0 (Debian 12's 1.13): the
    Trainer passes prefetch_factor=None to the DataLoader, which such a torch
    refuses at 0 workers, and TrainingArguments refuses any other value
    there. HFCallback, given in ``Trainer(callbacks=[...])``, writes torch's
    own default (2) into that Trainer's arguments as it is made; by hand:
    ``args.dataloader_prefetch_factor = 2`` after TrainingArguments(...).
    Keywords the installed TrainingArguments does not take are left out (and
    said so); the precision check then reports what ran.
    """
    p = p or {}
    kw = {_HF_LOADER_KEYS[k]: v for k, v in loader_arguments(p).items()}
    if kw.get("dataloader_num_workers", 0) > 0 and "dataloader_prefetch_factor" not in kw:
        prefetch = _loader_prefetch_default()
        if prefetch is not None:
            kw["dataloader_prefetch_factor"] = prefetch
    if "grad_accum" in p:
        kw["gradient_accumulation_steps"] = int(p["grad_accum"])
    precision = _precision(p)
    if precision is not None:
        tf32 = precision == "tf32" and _tf32_gpu()
        kw.update(fp16=precision == "fp16", bf16=precision == "bf16", tf32=tf32)
        _set_matmul_tf32(tf32)  # whatever the installed TrainingArguments does with tf32=False
    try:
        import transformers
    except ImportError:
        return kw
    return _accepted(kw, transformers.TrainingArguments, "transformers' TrainingArguments")


def _lightning_major():
    for name in ("lightning", "pytorch_lightning"):
        mod = sys.modules.get(name)
        if mod is not None:
            try:
                return int(str(mod.__version__).split(".")[0])
            except (AttributeError, ValueError):
                pass
    return 2


def lightning_arguments(p):
    """Keywords for a Lightning ``Trainer`` from the trial's knobs in `p`
    (only those present)::

        trainer = lightning.Trainer(max_steps=10_000, callbacks=[autotune_trial.LightningCallback(p)],
                                    **autotune_trial.lightning_arguments(p))

    grad_accum -> accumulate_grad_batches; precision: fp32 and tf32 ->
    "32-true", fp16 -> "16-mixed", bf16 -> "bf16-mixed" (32, 16, "bf16"
    before Lightning 2.0). Lightning has no TF32 switch: for tf32 this sets
    torch.set_float32_matmul_precision("high") (TF32 matmuls) where the GPU
    computes in TF32, and "highest" for every other precision (so a warm
    process does not keep an earlier trial's TF32). On a CPU, tf32 runs fp32
    and Lightning turns 16-mixed into bf16-mixed (with a warning):
    LightningCallback reports either as an ``error``, the precision asked
    not being the one that ran.
    """
    p = p or {}
    kw = {}
    if "grad_accum" in p:
        kw["accumulate_grad_batches"] = int(p["grad_accum"])
    precision = _precision(p)
    if precision is not None:
        if _lightning_major() >= 2:
            names = {"fp32": "32-true", "tf32": "32-true", "fp16": "16-mixed", "bf16": "bf16-mixed"}
        else:
            names = {"fp32": 32, "tf32": 32, "fp16": 16, "bf16": "bf16"}
        kw["precision"] = names[precision]
        _set_matmul_tf32(precision == "tf32" and _tf32_gpu())
    return kw


def loader_arguments(p):
    """Keywords for a PyTorch ``DataLoader`` from the trial's knobs in `p`
    (only those present): batch_size, num_workers, pin_memory, and
    prefetch_factor only with num_workers > 0 (torch refuses it at 0)::

        loader = DataLoader(dataset, shuffle=True, **autotune_trial.loader_arguments(p))
    """
    p = p or {}
    kw = {}
    if "batch_size" in p:
        kw["batch_size"] = int(p["batch_size"])
    if "num_workers" in p:
        kw["num_workers"] = int(p["num_workers"])
        if kw["num_workers"] > 0 and "prefetch_factor" in p:
            kw["prefetch_factor"] = int(p["prefetch_factor"])
    if "pin_memory" in p:
        kw["pin_memory"] = bool(p["pin_memory"])
    return kw


def _apply_threads(p):
    """The trial's ``threads`` (intra-op threads of this rank), where ``p``
    has one: torch.set_num_threads where the script has imported torch (a
    warm worker's pool was sized by its first trial's OMP_NUM_THREADS), and
    OMP_NUM_THREADS for the processes it starts."""
    n = p.get("threads")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        return
    os.environ["OMP_NUM_THREADS"] = str(n)
    torch = _torch()
    if torch is not None and torch.get_num_threads() != n:
        torch.set_num_threads(n)
