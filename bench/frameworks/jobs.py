"""Two small training jobs as users write them, for bench/frameworks/speedup.sh:
a Hugging Face Trainer (`hf`) and a Lightning Trainer (`lightning`), each a
tiny BERT-style classifier built from a config, on text read with a storage
latency (BENCH_IO_MS per sample, default 8: a network file system or an
object store) and tokenised in the loader, so the loader's workers matter.

    python3 jobs.py hf                      # under autotune: trials() + HFCallback
    python3 jobs.py lightning --independent '{"batch_size": 32, "num_workers": 2}' --steps 60
        # an independent timing: N optimizer steps after 10 of warm-up, timed
        # by this script alone (no autotune_trial measurement), samples/s printed
"""
import argparse
import json
import os
import random
import sys
import time

import torch
from torch.utils.data import Dataset

SEQ = 64
VOCAB = 4096
WORDS = [f"W{i}.x" for i in range(3000)]
IO_S = float(os.environ.get("BENCH_IO_MS", "8")) / 1000
# The measurement's stop: autotune_trial's default (+-3% at 90%) unless
# BENCH_TARGET_CI90 says otherwise (0: the earlier stop on the spread).
RULE = {"target_ci90": float(os.environ["BENCH_TARGET_CI90"])} if os.environ.get("BENCH_TARGET_CI90") else {}


class Texts(Dataset):
    def __len__(self):
        return 1_000_000

    def __getitem__(self, i):
        time.sleep(IO_S)  # the read
        rnd = random.Random(i)
        words = ["".join(c for c in rnd.choice(WORDS).lower() if c.isalnum()) for _ in range(SEQ * 3)]
        ids = [sum(map(ord, w)) * 2654435761 % (VOCAB - 2) + 2 for w in words][: SEQ - 1]
        return {"input_ids": torch.tensor([1] + ids), "attention_mask": torch.ones(SEQ, dtype=torch.long),
                "labels": i % 2}


def bert():
    import transformers
    config = transformers.BertConfig(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=256, max_position_embeddings=SEQ + 2, num_labels=2)
    return transformers.BertForSequenceClassification(config)


class StepClock:
    """Independent timing: wall time of `steps` optimizer steps after `warmup`."""

    def __init__(self, warmup, steps):
        self.warmup, self.steps, self.n, self.t0, self.rate = warmup, steps, 0, None, None

    def step(self, samples):
        self.n += 1
        if self.n == self.warmup:
            self.t0 = time.perf_counter()
        elif self.n == self.warmup + self.steps:
            self.rate = self.steps * samples / (time.perf_counter() - self.t0)
            return True
        return False


def run_hf(p, clock=None):
    import transformers
    import autotune_trial
    args = transformers.TrainingArguments(output_dir="/tmp/autotune-bench-hf", max_steps=100_000, report_to=[],
                                          save_strategy="no", logging_strategy="no", disable_tqdm=True,
                                          **autotune_trial.training_arguments(p))
    callbacks = [autotune_trial.HFCallback(p, **RULE)]
    if clock:
        # As HFCallback does for transformers before 4.39 over torch < 2.0:
        # their 0-worker DataLoader needs the prefetch_factor torch takes.
        if p.num_workers == 0 and int(torch.__version__.split(".")[0]) < 2:
            args.dataloader_prefetch_factor = 2

        class Clock(transformers.TrainerCallback):
            def on_step_end(self, a, state, control, **kw):
                if clock.step(a.per_device_train_batch_size * a.gradient_accumulation_steps):
                    control.should_training_stop = True
        callbacks = [Clock()]
    transformers.Trainer(model=bert(), args=args, train_dataset=Texts(), callbacks=callbacks).train()


def run_lightning(p, clock=None):
    import lightning
    from torch.utils.data import DataLoader
    import autotune_trial

    class Module(lightning.LightningModule):
        def __init__(self):
            super().__init__()
            self.model = bert()

        # Debian 12's torch 1.13 under Python 3.11 cannot import
        # torch.distributed._shard, which Lightning before torch 2.1 imports
        # here; one process needs none of it.
        def _register_sharded_tensor_state_dict_hooks_if_available(self):
            pass

        def training_step(self, batch, i):
            return self.model(**batch).loss

        def configure_optimizers(self):
            return torch.optim.AdamW(self.parameters(), lr=1e-4)

    callbacks = [autotune_trial.LightningCallback(p, **RULE)]
    if clock:
        class Clock(lightning.Callback):
            def on_train_batch_end(self, trainer, module, outputs, batch, i):
                if clock.step(len(batch["labels"])):
                    trainer.should_stop = True
        callbacks = [Clock()]
    loader = DataLoader(Texts(), **autotune_trial.loader_arguments(p))
    trainer = lightning.Trainer(max_steps=100_000, callbacks=callbacks, logger=False, enable_checkpointing=False,
                                enable_progress_bar=False, enable_model_summary=False,
                                **autotune_trial.lightning_arguments(p))
    trainer.fit(Module(), loader)


def main():
    a = argparse.ArgumentParser()
    a.add_argument("framework", choices=["hf", "lightning"])
    a.add_argument("--independent", help="the knobs as JSON: time this configuration without autotune_trial's Meter")
    a.add_argument("--steps", type=int, default=60)
    args = a.parse_args()
    run = run_hf if args.framework == "hf" else run_lightning
    torch.set_num_threads(1)
    if args.independent:
        import autotune_trial
        p = autotune_trial.Params(json.loads(args.independent))
        clock = StepClock(10, args.steps)
        run(p, clock)
        print(json.dumps({"samples_per_s": clock.rate}))
        return 0
    import autotune_trial
    for p in autotune_trial.trials(batch_size=8, num_workers=0):
        run(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
