"""autotune_trial with the real frameworks: a transformers Trainer with
HFCallback and Lightning Trainers (``import lightning`` and ``import
pytorch_lightning``) with LightningCallback, tuned through the autotune
binary, warm and cold.

The frameworks live in a venv over the system's torch (build/fwvenv, made by
scripts/framework_venv.sh, which scripts/test.sh runs: Debian 12's torch 1.13
with transformers 4.38.2 and Lightning 2.2.5); autotune itself needs none of
them. Without that venv these tests skip, saying why; under CI=true they
fail. The test runner is the system python; the trials run the venv's.

The models are tiny (BERT of width 32 and one layer, an MLP) so that a
trial's measurement, with a shortened rule, takes about a second on a
2-core VM; the assertions are on outcomes, reasons and paused time, with
margins far wider than the machine's noise (an evaluation that counted as
data wait would make it most of the time, not under half).
"""
import json
import os
import subprocess
import tempfile
import textwrap
import unittest

VENV = os.environ.get("AUTOTUNE_FRAMEWORK_VENV",
                      os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "fwvenv"))
PYTHON = os.path.join(VENV, "bin", "python")

# A quick rule: the same stages as the default, shorter (the tests check
# outcomes, not figures).
RULE = "warmup_s=0.5, warmup_floor_s=0.3, window_s=0.2, max_s=4"


def require_frameworks(test):
    def wrapped(self):
        if not os.environ.get("AUTOTUNE_BINARY"):
            self.skipTest("AUTOTUNE_BINARY not set (ctest sets it)")
        if not os.path.exists(os.path.join(VENV, "autotune-pins.txt")):
            why = f"no framework venv at {VENV}: scripts/framework_venv.sh makes it (scripts/test.sh runs it)"
            if os.path.exists(VENV + ".failed"):
                with open(VENV + ".failed") as f:
                    why = f"scripts/framework_venv.sh failed: {f.read().strip()}"
            if os.environ.get("CI") == "true":
                self.fail(f"CI=true: {why}")
            self.skipTest(why)
        return test(self)
    wrapped.__name__ = test.__name__
    return wrapped


def tune(folder, job, space, warm, env=None, timeout=240):
    """Writes job.py and space.yaml into `folder`, runs autotune there with a
    `command` workload running job.py in the venv's python; returns the
    process and the finished trials by their config (as sorted tuples)."""
    with open(os.path.join(folder, "job.py"), "w") as f:
        f.write(textwrap.dedent(job))
    env_yaml = ", env: {" + ", ".join(f'{k}: "{v}"' for k, v in (env or {}).items()) + "}" if env else ""
    with open(os.path.join(folder, "space.yaml"), "w") as f:
        f.write(f"workload: {{kind: command, command: '{PYTHON} job.py', timeout: 90s, "
                f"warm: {'true' if warm else 'false'}{env_yaml}}}\n"
                "space:\n" + textwrap.indent(textwrap.dedent(space).strip(), "  ") + "\nsearch: {strategy: grid}\n")
    e = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("AUTOTUNE_")}
    p = subprocess.run([os.environ["AUTOTUNE_BINARY"], "--config", "space.yaml"], cwd=folder, env=e,
                       capture_output=True, text=True, timeout=timeout)
    finished = {}
    path = os.path.join(folder, "tuned.journal.jsonl")
    if os.path.exists(path):
        with open(path) as f:
            for t in map(json.loads, f):
                if t.get("type") == "finish" and not t.get("control"):
                    finished[tuple(sorted(t["config"].items()))] = t
    return p, finished


# Both jobs' data: n samples made by the job's sample(i, generator), each
# after delay_s of "storage" (the evaluation sets are slow on purpose).
DATASET = """class Samples(Dataset):
        def __init__(self, n, delay_s=0.0):
            self.n, self.delay_s = n, delay_s
        def __len__(self):
            return self.n
        def __getitem__(self, i):
            if self.delay_s:
                time.sleep(self.delay_s)
            return sample(i, torch.Generator().manual_seed(i))
"""


def trial(finished, **config):
    key = tuple(sorted((k, v) for k, v in config.items()))
    for k, t in finished.items():
        if set(key) <= set(k):
            return t
    raise AssertionError(f"no trial {config} in {sorted(finished)}")


def pids(folder):
    with open(os.path.join(folder, "pids.txt")) as f:
        return [line.split() for line in f]


HF_JOB = """
    import os, time
    import torch, transformers
    from torch.utils.data import Dataset
    import autotune_trial

    SEQ = 32

    DATASET
    def sample(i, g):
        return {"input_ids": torch.randint(2, 512, (SEQ,), generator=g),
                "attention_mask": torch.ones(SEQ, dtype=torch.long), "labels": i % 2}

    config = transformers.BertConfig(vocab_size=512, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                     intermediate_size=64, max_position_embeddings=SEQ, num_labels=2)
    model = transformers.BertForSequenceClassification(config)
    evaluate_every = int(os.environ.get("JOB_EVALUATE_EVERY", "0"))
    for p in autotune_trial.trials(batch_size=16, num_workers=0, max_steps=10_000):
        with open("pids.txt", "a") as f:
            f.write(f"{os.environ.get('AUTOTUNE_TRIAL')} {os.getpid()}\\n")
        extra = dict(logging_strategy="no")
        if evaluate_every:
            # Evaluation (1 ms a sample: 0.13 s a time, several steps' worth) and logging every few steps.
            names = transformers.TrainingArguments.__dataclass_fields__
            extra = {"eval_strategy" if "eval_strategy" in names else "evaluation_strategy": "steps",
                     "eval_steps": evaluate_every, "per_device_eval_batch_size": 64,
                     "logging_strategy": "steps", "logging_steps": 2}
        args = transformers.TrainingArguments(output_dir="out", max_steps=p.max_steps, report_to=[],
                                              save_strategy="no", disable_tqdm=True, **extra,
                                              **autotune_trial.training_arguments(p))
        trainer = transformers.Trainer(model=model, args=args, train_dataset=Samples(1_000_000),
                                       eval_dataset=Samples(128, 0.001) if evaluate_every else None,
                                       callbacks=[autotune_trial.HFCallback(p, RULE)])
        trainer.train()
""".replace("RULE", RULE).replace("DATASET", DATASET)


class HuggingFace(unittest.TestCase):
    @require_frameworks
    def test_warm_trials_of_a_trainer_run_the_precision_asked_or_fail_saying_which_ran(self):
        # The 0-worker baseline (transformers 4.38 over torch 1.13 fails at 0
        # workers unless the helper fixes prefetch_factor) and one worker, in
        # fp32 and bf16 (CPU autocast), one process for the trials that
        # succeed. On a CPU fp16 is refused by transformers itself and tf32
        # runs fp32: both `error`, the first in transformers' words, the second
        # in the helper's. bf16 comes last, so that fp32 at one worker runs in
        # the process that ran bf16 (whose TrainingArguments had set
        # ACCELERATE_MIXED_PRECISION=bf16 in the environment).
        with tempfile.TemporaryDirectory() as d:
            p, finished = tune(d, HF_JOB, """
                num_workers: [0, 1]
                precision: [fp32, fp16, tf32, bf16]
            """, warm=True)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertEqual(len(finished), 8, finished)
            for workers in (0, 1):
                for precision in ("fp32", "bf16"):
                    t = trial(finished, num_workers=workers, precision=precision)
                    self.assertEqual(t["status"], "ok", t)
                    self.assertGreater(t["throughput"], 0)
                    self.assertIn("data_wait_fraction", t["metrics"])
                    m = t["metrics"]
                    # Stopped on its precision (+-3% at 90%), raced below the bar, or at the cap.
                    if m.get("stopped_on_precision"):
                        self.assertLessEqual(m["throughput_ci90"], 0.03, m)
                    elif not m.get("raced"):
                        self.assertEqual(m.get("stopped_by_cap"), 1, m)
                    if workers == 0:  # the Trainer's loader makes each batch in the step: no backlog to outlast
                        # (on a busy machine the three inline steps it needs may take the whole warm-up time)
                        self.assertTrue(m["warmup_drained"] == 1 or m["warmup_steps"] <= 3, m)
                fp16 = trial(finished, num_workers=workers, precision="fp16")
                self.assertEqual(fp16["status"], "error", fp16)
                self.assertIn("FP16", fp16["reason"])
                tf32 = trial(finished, num_workers=workers, precision="tf32")
                self.assertEqual(tf32["status"], "error", tf32)
                self.assertIn("precision tf32 was asked, but fp32 ran", tf32["reason"])
            rows = pids(d)
            self.assertLess(len({pid for _, pid in rows}), len(rows), "warm: a process served several trials")

    @require_frameworks
    def test_cold_trials_evaluating_and_logging_every_few_steps_count_neither_as_data_wait(self):
        with tempfile.TemporaryDirectory() as d:
            p, finished = tune(d, HF_JOB, "num_workers: [0, 1]", warm=False, env={"JOB_EVALUATE_EVERY": 4})
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertEqual(len(finished), 2, finished)
            for t in finished.values():
                self.assertEqual(t["status"], "ok", t)
                m = t["metrics"]
                self.assertGreater(m["paused_seconds"], 0.5, m)
                # Counted, each 0.13 s evaluation would be most of a 4-step stretch (0.7 of it).
                self.assertLess(m["data_wait_fraction"], 0.5, m)
            self.assertEqual(len({pid for _, pid in pids(d)}), 2, "cold: a process a trial")

    @require_frameworks
    def test_a_training_shorter_than_the_measurement_is_an_error_for_every_configuration(self):
        with tempfile.TemporaryDirectory() as d:
            p, finished = tune(d, HF_JOB, "num_workers: [0, 1]\nmax_steps: [20]", warm=True)
            self.assertIn("no configuration ran successfully", p.stdout + p.stderr)
            self.assertEqual(len(finished), 2, finished)
            for t in finished.values():
                self.assertEqual(t["status"], "error", t)
                self.assertIn("the training ended after 20 steps, before the measurement was complete",
                              t["reason"])
                self.assertIn("raise max_steps to", t["reason"])
                self.assertGreater(t["metrics"]["steps_needed"], 20, t)


LIGHTNING_JOB = """
    import json, os, sys, time
    import torch
    if os.environ.get("JOB_PACKAGE") == "pytorch_lightning":
        import pytorch_lightning as L
        from pytorch_lightning.callbacks import ModelCheckpoint
    else:
        import lightning as L
        from lightning.pytorch.callbacks import ModelCheckpoint
    from torch.utils.data import DataLoader, Dataset
    import autotune_trial

    DATASET
    def sample(i, g):
        return torch.randn(128, generator=g), i % 4

    class Model(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Sequential(torch.nn.Linear(128, 512), torch.nn.ReLU(), torch.nn.Linear(512, 4))

        # Debian 12's torch 1.13 under Python 3.11 cannot import
        # torch.distributed._shard (a dataclass with a mutable default), which
        # Lightning before torch 2.1 imports here; one process needs none of it.
        def _register_sharded_tensor_state_dict_hooks_if_available(self):
            pass

        def training_step(self, batch, i):
            x, y = batch
            return torch.nn.functional.cross_entropy(self.net(x), y)

        def validation_step(self, batch, i):
            x, y = batch
            return torch.nn.functional.cross_entropy(self.net(x), y)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.01)

    for p in autotune_trial.trials(batch_size=32, num_workers=0, max_steps=10_000):
        with open("pids.txt", "a") as f:
            f.write(f"{os.environ.get('AUTOTUNE_TRIAL')} {os.getpid()}\\n")
        # Validation every 20 batches (2 ms a sample: 0.13 s a time, dozens of
        # steps' worth) and a checkpoint every 10 steps.
        trainer = L.Trainer(max_steps=p.max_steps, val_check_interval=20, limit_val_batches=2, num_sanity_val_steps=0,
                            callbacks=[autotune_trial.LightningCallback(p, RULE),
                                       ModelCheckpoint(dirpath="checkpoints", every_n_train_steps=10)],
                            logger=False, enable_progress_bar=False, enable_model_summary=False,
                            **autotune_trial.lightning_arguments(p))
        trainer.fit(Model(), DataLoader(Samples(1_000_000), shuffle=True, **autotune_trial.loader_arguments(p)),
                    DataLoader(Samples(64, 0.002), batch_size=32))
        with open("imported.txt", "a") as f:
            f.write(json.dumps({k: k in sys.modules for k in ("lightning", "pytorch_lightning")}) + "\\n")
""".replace("RULE", RULE).replace("DATASET", DATASET)


class Lightning(unittest.TestCase):
    @require_frameworks
    def test_warm_trials_of_a_lightning_trainer_and_fp16_on_a_cpu_is_an_error_naming_what_ran(self):
        # On a CPU Lightning turns 16-mixed into bf16-mixed with a warning:
        # measured, that would be bf16's figure under fp16's name.
        with tempfile.TemporaryDirectory() as d:
            p, finished = tune(d, LIGHTNING_JOB, """
                precision: [fp32, bf16, fp16]
                grad_accum: [1, 2]
            """, warm=True)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertEqual(len(finished), 6, finished)
            for accum in (1, 2):
                for precision in ("fp32", "bf16"):
                    t = trial(finished, precision=precision, grad_accum=accum)
                    self.assertEqual(t["status"], "ok", t)
                    m = t["metrics"]
                    self.assertGreater(m["paused_seconds"], 0.1, m)
                    self.assertLess(m["data_wait_fraction"], 0.5, m)
                fp16 = trial(finished, precision="fp16", grad_accum=accum)
                self.assertEqual(fp16["status"], "error", fp16)
                self.assertIn("precision fp16 was asked, but bf16 ran (Lightning's Trainer runs "
                              "precision='bf16-mixed' on cpu)", fp16["reason"])
            rows = pids(d)
            self.assertLess(len({pid for _, pid in rows}), len(rows), "warm: a process served several trials")
            with open(os.path.join(d, "imported.txt")) as f:
                self.assertEqual({line.strip() for line in f}, {'{"lightning": true, "pytorch_lightning": false}'})

    @require_frameworks
    def test_cold_trials_of_a_pytorch_lightning_script_and_a_short_fit_is_an_error(self):
        # The callback's base is pytorch_lightning's Callback (the one that
        # Trainer takes), and the helper imports no `lightning` of its own.
        with tempfile.TemporaryDirectory() as d:
            p, finished = tune(d, LIGHTNING_JOB, """
                num_workers: [0, 1]
                max_steps: [10, 10000]
            """, warm=False, env={"JOB_PACKAGE": "pytorch_lightning"})
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertEqual(len(finished), 4, finished)
            for workers in (0, 1):
                t = trial(finished, num_workers=workers, max_steps=10000)
                self.assertEqual(t["status"], "ok", t)
                if workers == 0:
                    self.assertEqual(t["metrics"]["warmup_drained"], 1, t["metrics"])
                short = trial(finished, num_workers=workers, max_steps=10)
                self.assertEqual(short["status"], "error", short)
                self.assertIn("the training ended after 10 steps, before the measurement was complete",
                              short["reason"])
            with open(os.path.join(d, "imported.txt")) as f:
                self.assertEqual({line.strip() for line in f}, {'{"lightning": false, "pytorch_lightning": true}'})


if __name__ == "__main__":
    unittest.main()
