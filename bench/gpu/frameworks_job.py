"""A framework's Trainer on the card, tuned by bench/gpu/frameworks.sh:
JOB=hf (a transformers Trainer with training_arguments and HFCallback),
JOB=lightning or JOB=pytorch_lightning (a Lightning Trainer with
lightning_arguments, loader_arguments and LightningCallback).

After each trial it appends to ran.jsonl the precision asked, the one the
callback saw run in the first step, and the device, so that the bench can
show that every `ok` trial ran what it was asked on the GPU (the tests
check the CPU side: fp16 and tf32 refused there).
"""
import json
import os

import torch
from torch.utils.data import DataLoader, Dataset

import autotune_trial

JOB = os.environ.get("JOB", "hf")
RULE = dict(warmup_s=1.0, warmup_floor_s=0.5, window_s=0.3, max_s=6)
SEQ, DIM = 128, 1024


class Samples(Dataset):
    """Made per sample on the CPU (a few small ops), so workers matter."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        if JOB == "hf":
            return {"input_ids": torch.randint(2, 8192, (SEQ,), generator=g),
                    "attention_mask": torch.ones(SEQ, dtype=torch.long), "labels": i % 2}
        x = torch.randn(DIM, generator=g)
        for _ in range(4):
            x = torch.tanh(x * 1.01)
        return x, i % 10


def log_ran(p, callback, device, **seen):
    probe = getattr(callback, "_probe", None)
    with open("ran.jsonl", "a") as f:
        f.write(json.dumps({"trial": os.environ.get("AUTOTUNE_TRIAL"), "asked": p.get("precision"),
                            "num_workers": p.get("num_workers"), "ran": getattr(probe, "ran", None),
                            "device": device, **seen}, default=str) + "\n")


MODELS = {}


def hf(p):
    import transformers
    # Built once and kept across warm trials, as a model loaded from disk
    # would be: a trial's mixed precision must not stay wrapped around it.
    if "bert" not in MODELS:
        config = transformers.BertConfig(vocab_size=8192, hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
                                         intermediate_size=1024, max_position_embeddings=SEQ, num_labels=2)
        MODELS["bert"] = transformers.BertForSequenceClassification(config)
    model = MODELS["bert"]
    callback = autotune_trial.HFCallback(p, **RULE)
    args = transformers.TrainingArguments(output_dir="out", max_steps=p.max_steps, report_to=[], save_strategy="no",
                                          logging_strategy="no", disable_tqdm=True,
                                          **autotune_trial.training_arguments(p))
    trainer = transformers.Trainer(model=model, args=args, train_dataset=Samples(10_000_000), callbacks=[callback])
    trainer.train()
    accelerator = getattr(trainer, "accelerator", None)
    log_ran(p, callback, str(args.device), mixed_precision=getattr(accelerator, "mixed_precision", None),
            native_amp=getattr(accelerator, "native_amp", None),
            matmul=getattr(torch.backends.cuda.matmul, "fp32_precision", None),
            model_marks=sorted(k for k in vars(model) if k.startswith("_is_") or k == "_original_forward"))


def lightning(p):
    if JOB == "pytorch_lightning":
        import pytorch_lightning as L
    else:
        import lightning as L

    class Model(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Sequential(torch.nn.Linear(DIM, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 4096),
                                           torch.nn.ReLU(), torch.nn.Linear(4096, 10))

        def training_step(self, batch, i):
            x, y = batch
            return torch.nn.functional.cross_entropy(self.net(x), y)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.01)

    callback = autotune_trial.LightningCallback(p, **RULE)
    trainer = L.Trainer(max_steps=p.max_steps, callbacks=[callback], logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False,
                        **autotune_trial.lightning_arguments(p))
    model = Model()
    trainer.fit(model, DataLoader(Samples(10_000_000), shuffle=True, **autotune_trial.loader_arguments(p)))
    log_ran(p, callback, str(trainer.strategy.root_device))


for p in autotune_trial.trials(batch_size=64, num_workers=0, max_steps=100_000):
    (hf if JOB == "hf" else lightning)(p)
