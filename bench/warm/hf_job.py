"""A Hugging Face Trainer job for the warm-trials bench (bench/warm_trials.sh hf).

A small BERT classifier built from a config (no download), trained by a real
transformers.Trainer with autotune_trial.HFCallback, one new Trainer per
trial inside autotune_trial.trials(). Each sample is made from text in the
loader (split, normalised, hashed to ids, padded), a few hundred microseconds of Python
per sample, so the loader's workers matter. bf16 on a GPU that has it, else
fp32; the knobs are batch_size, num_workers and pin_memory (prefetch_factor 2
where there are workers).
"""
import os
import random
import tempfile

import torch
import transformers
from torch.utils.data import Dataset

import autotune_trial

SEQ = 128
VOCAB = 8192
WORDS = [f"W{i}.x" for i in range(5000)]
TINY = os.environ.get("HF_JOB_TINY") == "1"  # a model small enough for a CPU check of the script


class Texts(Dataset):
    def __len__(self):
        return 1_000_000

    def __getitem__(self, i):
        rnd = random.Random(i)
        text = " ".join(rnd.choice(WORDS) for _ in range(SEQ * 2))
        words = ["".join(c for c in w.lower() if c.isalnum()) for w in text.split()]
        ids = [sum(map(ord, w)) * 2654435761 % (VOCAB - 2) + 2 for w in words][: SEQ - 1]
        ids = [1] + ids + [0] * (SEQ - 1 - len(ids))
        return {"input_ids": torch.tensor(ids), "attention_mask": torch.ones(SEQ, dtype=torch.long),
                "labels": i % 2}


def main():
    width, depth = (32, 1) if TINY else (256, 4)
    config = transformers.BertConfig(vocab_size=VOCAB, hidden_size=width, num_hidden_layers=depth, num_attention_heads=4,
                                     intermediate_size=4 * width, max_position_embeddings=SEQ + 2, num_labels=2)
    model = transformers.BertForSequenceClassification(config)
    bf16 = torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    data = Texts()
    out = tempfile.mkdtemp(prefix="hf_job_")
    for p in autotune_trial.trials(batch_size=32, num_workers=0, pin_memory=False):
        kw = dict(output_dir=out, per_device_train_batch_size=p.batch_size, dataloader_num_workers=p.num_workers,
                  dataloader_pin_memory=p.pin_memory, max_steps=100_000, bf16=bf16, report_to=[],
                  save_strategy="no", logging_strategy="no", disable_tqdm=True)
        if p.num_workers > 0:
            kw["dataloader_prefetch_factor"] = 2
        args = transformers.TrainingArguments(**kw)
        transformers.Trainer(model=model, args=args, train_dataset=data,
                             callbacks=[autotune_trial.HFCallback(p)]).train()


if __name__ == "__main__":
    main()
