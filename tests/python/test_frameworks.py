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
import sys
import tempfile
import textwrap
import unittest

HELPER_DIR = os.environ.get("AUTOTUNE_PYTHON_DIR",
                            os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
sys.path.insert(0, HELPER_DIR)
import autotune_trial  # noqa: E402 (the reader of tuned.yaml's best, standard library only)

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


# Exports: tuned.yaml's exports, written by the binary for a tune, fed to
# the real classes. The tunes are of a job that measures nothing (a shell
# line whose throughput doubles for each knob at its target value, so that
# the grid's answer is the target): quick, and the answer is known.
def tune_answer(folder, space, target, baseline):
    """Tunes `space` (its lines) in `folder` towards `target` from
    `baseline` (the first `initial`); returns tuned.yaml's path."""
    tests = " ".join(f'[ "$AUTOTUNE_{k.upper()}" = "{str(v).lower()}" ] && t=$((t * 2));' for k, v in target.items())
    with open(os.path.join(folder, "job.sh"), "w") as f:
        f.write(f"t=100; {tests} echo \"{{\\\"throughput\\\": $t}}\"\n")
    initial = ", ".join(f"{k}: {str(v).lower()}" for k, v in baseline.items())
    with open(os.path.join(folder, "space.yaml"), "w") as f:
        f.write("workload: {kind: command, command: 'sh job.sh', timeout: 30s}\n"
                "space:\n" + textwrap.indent(textwrap.dedent(space).strip(), "  ") + "\n"
                f"search: {{strategy: grid, budget: 100, initial: [{{{initial}}}]}}\n")
    e = {k: v for k, v in os.environ.items() if not k.startswith("AUTOTUNE_")}
    p = subprocess.run([os.environ["AUTOTUNE_BINARY"], "--config", "space.yaml"], cwd=folder, env=e,
                       capture_output=True, text=True, timeout=240)
    if p.returncode != 0:
        raise AssertionError(p.stdout + p.stderr)
    return os.path.join(folder, "tuned.yaml")


# Each answer tuned, and what its exports must hold; a knob with one value
# is declared, so exported, and costs no trial. A: bf16 from fp32, every
# other knob declared. B: 0 workers from 1 (no prefetch_factor; the
# Trainer's at 0 workers is a note) at the baseline's precision (no
# precision keys). C: workers without a prefetch_factor knob.
ANSWERS = {
    "A": ("""
        batch_size: [16]
        grad_accum: [2]
        num_workers: [1]
        prefetch_factor: [4]
        pin_memory: [true]
        precision: [fp32, bf16]
    """, dict(batch_size=16, grad_accum=2, num_workers=1, prefetch_factor=4, pin_memory=True, precision="bf16"),
        dict(batch_size=16, grad_accum=2, num_workers=1, prefetch_factor=4, pin_memory=True, precision="fp32")),
    "B": ("""
        batch_size: [16]
        grad_accum: [2]
        num_workers: [0, 1]
        pin_memory: [false]
        precision: [fp32]
    """, dict(batch_size=16, grad_accum=2, num_workers=0, pin_memory=False, precision="fp32"),
        dict(batch_size=16, grad_accum=2, num_workers=1, pin_memory=False, precision="fp32")),
    "C": ("""
        batch_size: [16]
        num_workers: [0, 2]
    """, dict(batch_size=16, num_workers=2), dict(batch_size=16, num_workers=0)),
}

# Run in the venv with every tuned.yaml given: builds each export's class
# and checks it against the answer (`best`) and against what a trial of the
# helper built for that configuration (autotune_trial's loader_arguments,
# training_arguments with HFCallback's fix, lightning_arguments). Prints a
# line per check; fails with an AssertionError naming the file.
CHECK = r"""
import os, sys, tempfile, warnings
import yaml, torch
import transformers, lightning
from torch.utils.data import DataLoader, Dataset
import autotune_trial
from autotune_trial._hf import _prefetch_that_works
warnings.simplefilter("ignore")

class Samples(Dataset):
    def __len__(self):
        return 64
    def __getitem__(self, i):
        return {"x": torch.zeros(4), "labels": i % 2}

class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(4, 2)
    def forward(self, x, labels=None):
        return {"loss": self.net(x).sum()}

def loader_settings(loader):
    return {k: getattr(loader, k) for k in ("num_workers", "prefetch_factor", "pin_memory", "persistent_workers")}

def check(path):
    y = yaml.safe_load(open(path))
    best, ex = y["best"], y["exports"]
    notes = ex.get("notes") or []
    precision_moved = best.get("precision", y["baseline"]["config"].get("precision")) != \
        y["baseline"]["config"].get("precision")
    where = f"{path}: best {best}, exports {ex}"

    # PyTorch: DataLoader(**torch_dataloader) and the loop's torch_loop.
    loader = DataLoader(Samples(), **ex["torch_dataloader"])
    trial = DataLoader(Samples(), **autotune_trial.loader_arguments(best))
    assert loader.batch_size == best["batch_size"] == trial.batch_size, where
    assert loader_settings(loader) == loader_settings(trial), (loader_settings(loader), loader_settings(trial), where)
    assert loader.num_workers == best.get("num_workers", 0), where
    if "pin_memory" in best:
        assert loader.pin_memory == best["pin_memory"], where
    if best.get("num_workers", 0) > 0:
        assert loader.prefetch_factor == best.get("prefetch_factor", 2), where
    assert not loader.persistent_workers, where
    loop = ex["torch_loop"]
    assert loop.get("optimizer_step_every") == best.get("grad_accum"), where
    if precision_moved:
        dtype = loop["autocast_dtype"]
        with torch.autocast("cpu", dtype=getattr(torch, dtype) if dtype else torch.bfloat16, enabled=dtype is not None):
            out = torch.nn.Linear(4, 2)(torch.zeros(1, 4)).dtype
        assert out == {"bf16": torch.bfloat16, "fp32": torch.float32}[best["precision"]], (out, where)
        assert loop["allow_tf32"] == (best["precision"] == "tf32"), where
    else:
        assert "autocast_dtype" not in loop and "allow_tf32" not in loop, where
    print(path, "torch ok")

    # Hugging Face: TrainingArguments(**hf_training_arguments), its Trainer's loader.
    out_dir = tempfile.mkdtemp()
    args = transformers.TrainingArguments(output_dir=out_dir, report_to=[], **ex["hf_training_arguments"])
    fix = "args.dataloader_prefetch_factor = 2"
    if best.get("num_workers", 1) == 0 and torch.__version__ < "2":
        # What the note is for: the Trainer's DataLoader refuses its None here.
        try:
            transformers.Trainer(model=Model(), args=args, train_dataset=Samples()).get_train_dataloader()
            raise AssertionError("no need for the note? " + where)
        except ValueError as e:
            assert "prefetch_factor" in str(e), (e, where)
        assert any(fix in n for n in notes), where
        args.dataloader_prefetch_factor = 2
    hf = transformers.Trainer(model=Model(), args=args, train_dataset=Samples())
    hf_loader = hf.get_train_dataloader()
    trial_args = transformers.TrainingArguments(output_dir=out_dir, report_to=[],
                                                **autotune_trial.training_arguments(best))
    _prefetch_that_works(trial_args)  # as HFCallback does in every trial
    trial_loader = transformers.Trainer(model=Model(), args=trial_args, train_dataset=Samples()).get_train_dataloader()
    assert args.per_device_train_batch_size == best["batch_size"] == hf_loader.batch_sampler.batch_size, where
    assert args.gradient_accumulation_steps == best.get("grad_accum", 1), where
    assert hf.accelerator.gradient_accumulation_steps == best.get("grad_accum", 1), where
    assert loader_settings(hf_loader) == loader_settings(trial_loader), (loader_settings(hf_loader), where)
    assert hf_loader.num_workers == best.get("num_workers", 0), where
    if "pin_memory" in best:
        assert hf_loader.pin_memory == best["pin_memory"], where
    if best.get("num_workers", 0) > 0:
        assert hf_loader.prefetch_factor == best.get("prefetch_factor", 2), where
    if precision_moved:
        for k in ("bf16", "fp16", "tf32"):
            assert getattr(args, k) == getattr(trial_args, k), (k, where)
        assert hf.accelerator.mixed_precision == {"bf16": "bf16", "fp32": "no"}[best["precision"]], where
    else:
        assert not {"bf16", "fp16", "tf32"} & set(ex["hf_training_arguments"]), where
    print(path, "transformers ok")

    # Lightning: Trainer(**lightning_trainer).
    quiet = dict(accelerator="cpu", devices=1, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                 enable_model_summary=False)
    trainer = lightning.Trainer(**quiet, **ex["lightning_trainer"])
    trial_trainer = lightning.Trainer(**quiet, **autotune_trial.lightning_arguments(best))
    assert trainer.accumulate_grad_batches == best.get("grad_accum", 1) == trial_trainer.accumulate_grad_batches, where
    if precision_moved:
        assert trainer.precision == trial_trainer.precision == \
            {"bf16": "bf16-mixed", "fp32": "32-true"}[best["precision"]], (trainer.precision, where)
    else:
        assert "precision" not in ex["lightning_trainer"], where
    print(path, "lightning ok")

    # DeepSpeed's own config check, where it is installed.
    try:
        import deepspeed
    except ImportError:
        print(path, "deepspeed not installed")
        return
    from deepspeed.runtime.config import DeepSpeedConfig
    c = DeepSpeedConfig(dict(ex["deepspeed"]))
    assert c.train_micro_batch_size_per_gpu == best["batch_size"], where
    assert c.gradient_accumulation_steps == best.get("grad_accum", 1), where
    if precision_moved:
        assert c.bfloat16_enabled == (best["precision"] == "bf16") and not c.fp16_enabled, where
    print(path, "deepspeed ok")

for path in sys.argv[1:]:
    check(path)
"""


HF_RANKS_JOB = """
    import json, os
    import torch, transformers
    from torch.utils.data import Dataset
    import autotune_trial

    SEQ = 32

    class Samples(Dataset):
        def __len__(self):
            return 1_000_000
        def __getitem__(self, i):
            g = torch.Generator().manual_seed(i)
            return {"input_ids": torch.randint(2, 512, (SEQ,), generator=g),
                    "attention_mask": torch.ones(SEQ, dtype=torch.long), "labels": i % 2}

    config = transformers.BertConfig(vocab_size=512, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                     intermediate_size=64, max_position_embeddings=SEQ, num_labels=2)
    model = transformers.BertForSequenceClassification(config)
    for p in autotune_trial.trials(batch_size=16, num_workers=0, max_steps=10_000):
        with open("ran.txt", "a") as f:
            f.write(json.dumps({"trial": int(os.environ["AUTOTUNE_TRIAL"]), "rank": int(os.environ["RANK"]),
                                "pid": os.getpid(), "batch_size": p.batch_size,
                                "num_workers": p.num_workers}) + "\\n")
        args = transformers.TrainingArguments(output_dir="out", max_steps=p.max_steps, report_to=[],
                                              save_strategy="no", disable_tqdm=True, logging_strategy="no",
                                              use_cpu=True, ddp_backend="gloo",
                                              **autotune_trial.training_arguments(p))
        transformers.Trainer(model=model, args=args, train_dataset=Samples(),
                             callbacks=[autotune_trial.HFCallback(p, RULE)]).train()
""".replace("RULE", RULE)


class HuggingFaceRanks(unittest.TestCase):
    @require_frameworks
    def test_warm_trials_of_a_trainer_under_torchrun_at_two_ranks(self):
        # A Trainer in each of 2 gloo ranks under torchrun, warm: every rank
        # runs each trial's knobs in one launch, and start-up is paid once.
        import socket
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        command = (f"{PYTHON} -m torch.distributed.run --nnodes 1 --nproc_per_node 2 --master_addr 127.0.0.1 "
                   f"--master_port {port} --redirects 9:0 --tee 9:0 job.py")
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "job.py"), "w") as f:
                f.write(textwrap.dedent(HF_RANKS_JOB))
            with open(os.path.join(d, "space.yaml"), "w") as f:
                f.write(f"workload: {{kind: command, command: '{command}', timeout: 120s, warm: true}}\n"
                        "space:\n  batch_size: [8, 16]\n  num_workers: [0, 1]\n"
                        "search: {strategy: grid, remeasure: 0, explain: false, race: false, busy: ignore}\n")
            e = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("AUTOTUNE_")}
            p = subprocess.run([os.environ["AUTOTUNE_BINARY"], "--config", "space.yaml"], cwd=d, env=e,
                               capture_output=True, text=True, timeout=300)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            with open(os.path.join(d, "tuned.journal.jsonl")) as f:
                finished = [t for t in map(json.loads, f) if t.get("type") == "finish" and not t.get("control")]
            self.assertEqual(len(finished), 4, finished)
            self.assertEqual({t["status"] for t in finished}, {"ok"}, [t.get("reason") for t in finished])
            with open(os.path.join(d, "ran.txt")) as f:
                ran = [json.loads(line) for line in f]
            self.assertEqual(len({r["pid"] for r in ran}), 2, "one launch: the same two processes throughout")
            for t in finished:
                rows = [r for r in ran if r["trial"] == t["trial"]]
                self.assertEqual(sorted(r["rank"] for r in rows), [0, 1], t["trial"])
                for r in rows:
                    self.assertEqual((r["batch_size"], r["num_workers"]),
                                     (t["config"]["batch_size"], t["config"]["num_workers"]), r)
                self.assertEqual(t["metrics"]["world_size"], 2, t["metrics"])
            first = finished[0]["metrics"]["startup_seconds"]
            for t in finished[1:]:
                self.assertLess(t["metrics"]["startup_seconds"], first / 2, (first, t["metrics"]))


ACCELERATE_JOB = """
    import json, os
    import torch
    from accelerate import Accelerator
    import autotune_trial

    acc = Accelerator(cpu=True)
    with open("launches.txt", "a") as f:
        f.write(json.dumps({"rank": acc.process_index, "pid": os.getpid(), "type": str(acc.distributed_type)}) + "\\n")
    model = torch.nn.Linear(32, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    model, opt = acc.prepare(model, opt)
    data = torch.utils.data.TensorDataset(torch.randn(1 << 16, 32))
    for p in autotune_trial.trials(batch_size=8, num_workers=0):
        with open("ran.txt", "a") as f:
            f.write(json.dumps({"trial": int(os.environ["AUTOTUNE_TRIAL"]), "rank": acc.process_index,
                                "pid": os.getpid(), "batch_size": p.batch_size,
                                "num_workers": p.num_workers}) + "\\n")
        loader = acc.prepare(torch.utils.data.DataLoader(data, **autotune_trial.loader_arguments(p)))
        with autotune_trial.Meter(p, warmup_s=0.1, window_s=0.05, max_s=0.8) as m:
            for (x,) in m.batches(loader):
                loss = model(x).sum()
                opt.zero_grad()
                acc.backward(loss)
                opt.step()
"""


class Accelerate(unittest.TestCase):
    @require_frameworks
    def test_warm_trials_under_accelerate_launch_run_every_rank_with_the_same_knobs(self):
        # `accelerate launch` of 2 CPU processes (gloo: MULTI_CPU), warm:
        # each trial's knobs in every rank, one launch for all trials.
        # Debian 12's torch 1.13 on Python 3.11 cannot read the launcher's
        # default redirects (docs/guide.md): PET_REDIRECTS and --tee name no
        # local rank.
        import socket
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        command = (f"{PYTHON} -m accelerate.commands.launch --multi_gpu --num_processes 2 --num_machines 1 "
                   f"--mixed_precision no --dynamo_backend no --tee 9:0 --main_process_port {port} job.py")
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "job.py"), "w") as f:
                f.write(textwrap.dedent(ACCELERATE_JOB))
            with open(os.path.join(d, "space.yaml"), "w") as f:
                f.write(f"workload: {{kind: command, command: '{command}', timeout: 90s, warm: true, "
                        "env: {PET_REDIRECTS: '9:0'}}\n"
                        "space:\n  batch_size: [8, 16]\n  num_workers: [0, 1]\n"
                        "search: {strategy: grid, remeasure: 0, explain: false, race: false, busy: ignore}\n")
            e = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("AUTOTUNE_")}
            p = subprocess.run([os.environ["AUTOTUNE_BINARY"], "--config", "space.yaml"], cwd=d, env=e,
                               capture_output=True, text=True, timeout=300)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            with open(os.path.join(d, "tuned.journal.jsonl")) as f:
                finished = [t for t in map(json.loads, f) if t.get("type") == "finish"]
            self.assertGreaterEqual(len(finished), 4, finished)
            self.assertEqual({t["status"] for t in finished}, {"ok"}, [t.get("reason") for t in finished])
            with open(os.path.join(d, "launches.txt")) as f:
                launches = [json.loads(line) for line in f]
            self.assertEqual(sorted(r["rank"] for r in launches), [0, 1], "one launch of each rank")
            self.assertEqual({r["type"] for r in launches}, {"DistributedType.MULTI_CPU"})
            with open(os.path.join(d, "ran.txt")) as f:
                ran = [json.loads(line) for line in f]
            for t in finished:
                rows = [r for r in ran if r["trial"] == t["trial"]]
                self.assertEqual(sorted(r["rank"] for r in rows), [0, 1], t["trial"])
                for r in rows:
                    self.assertEqual((r["batch_size"], r["num_workers"]),
                                     (t["config"]["batch_size"], t["config"]["num_workers"]), r)
                self.assertEqual(t["metrics"]["world_size"], 2, t["metrics"])
            first, later = finished[0]["metrics"], [t["metrics"] for t in finished[1:]]
            for m in later:
                self.assertLess(m["startup_seconds"], first["startup_seconds"] / 2, (first, m))


class Exports(unittest.TestCase):
    def tune_and_check(self, names):
        """Tunes each answer of ANSWERS in `names` and runs CHECK over their
        tuned.yaml files in the venv; returns CHECK's output."""
        with tempfile.TemporaryDirectory() as d:
            paths = []
            for name in names:
                space, target, baseline = ANSWERS[name]
                folder = os.path.join(d, name)
                os.makedirs(folder)
                paths.append(tune_answer(folder, space, target, baseline))
                with open(paths[-1]) as f:
                    best = autotune_trial.read_best(f.read())
                self.assertEqual(best, target, f"{name}: the grid's answer is the target")
            with open(os.path.join(d, "check.py"), "w") as f:
                f.write(CHECK)
            env = {k: v for k, v in os.environ.items() if not k.startswith("AUTOTUNE_")}
            env["PYTHONPATH"] = HELPER_DIR
            p = subprocess.run([PYTHON, os.path.join(d, "check.py"), *paths], env=env, capture_output=True,
                               text=True, timeout=300)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr[-5000:])
            for path in paths:
                for framework in ("torch", "transformers", "lightning"):
                    self.assertIn(f"{path} {framework} ok", p.stdout)
            return p.stdout

    @require_frameworks
    def test_each_export_builds_its_class_with_the_measured_configuration(self):
        self.tune_and_check(["A", "B", "C"])

    @require_frameworks
    def test_the_deepspeed_export_passes_deepspeeds_config_check(self):
        if subprocess.run([PYTHON, "-c", "import deepspeed"], capture_output=True).returncode != 0:
            self.skipTest("deepspeed is not installed in the framework venv")
        self.assertIn("deepspeed ok", self.tune_and_check(["A", "B"]))

if __name__ == "__main__":
    unittest.main()
