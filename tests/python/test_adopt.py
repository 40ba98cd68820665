"""The README's "Adopting the answer": configs/train_adopt.py, one script
that trains and is tuned, trains with the baseline before any tuning and
with the answer after a tune, read from the run's tuned.yaml by
autotune_trial.tuned(), the script unedited.

The tune is short (two configurations, a 2 s measurement each, warm, no
re-measurement or explanation): the assertions are on which configuration
the script trains with, not on figures. Needs torch (python3-torch), as
the example does; ctest runs it with Debian's python3.
"""
import filecmp
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

from trial_common import autotune_trial, require_torch

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIGS = os.path.normpath(os.path.join(HERE, "..", "..", "configs"))
TUNED = "tuned_command_adopt.yaml"  # the script's --tuned default, where command_adopt.yaml writes

# The example's script under a space whose every configuration differs from
# its BASELINE (batch_size 32, grad_accum 4, num_workers 0): the answer
# cannot be mistaken for the defaults.
SPACE = f"""workload:
  kind: command
  command: "{sys.executable} train_adopt.py --max-s 2"
  cwd: configs
  warm: true
  timeout: 60s
space:
  batch_size:      {{values: [64, 128]}}
  grad_accum:      {{values: [1, 2]}}
  num_workers:     {{values: [1]}}
  prefetch_factor: {{values: [4]}}
  pin_memory:      {{values: [false]}}
constraints: {{effective_batch: 128}}
search: {{strategy: grid, remeasure: 0, explain: false}}
output: {{tuned: {TUNED}}}
"""

LOADER = re.compile(r"(\d+) optimizer steps of (\d+) x (\d+) samples from DataLoader\(batch_size=(\d+), "
                    r"num_workers=(\d+), prefetch_factor=(\w+), pin_memory=(\w+)\)")


def environment():
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUTOTUNE_") and k != "PYTHONPATH"}
    env["PATH"] = os.path.dirname(sys.executable) + ":" + env.get("PATH", "")
    return env


class Adopt(unittest.TestCase):
    def setUp(self):
        if not os.environ.get("AUTOTUNE_BINARY"):
            self.skipTest("AUTOTUNE_BINARY not set (ctest sets it)")
        self.dir = tempfile.mkdtemp(prefix="autotune-adopt-")
        os.makedirs(os.path.join(self.dir, "configs"))
        shutil.copy(os.path.join(CONFIGS, "train_adopt.py"), os.path.join(self.dir, "configs"))

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def train_by_hand(self, steps):
        helper = subprocess.run([os.environ["AUTOTUNE_BINARY"], "--python-path"], capture_output=True, text=True,
                                check=True).stdout.strip()
        p = subprocess.run([sys.executable, "configs/train_adopt.py", "--steps", str(steps)], cwd=self.dir,
                           env=dict(environment(), PYTHONPATH=helper), capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        m = LOADER.search(p.stdout)
        self.assertIsNotNone(m, p.stdout)
        steps_done, accum, batch, loader_batch, workers, prefetch, pin = m.groups()
        self.assertEqual(int(steps_done), steps)
        self.assertEqual(batch, loader_batch)
        return p.stdout, {"batch_size": int(batch), "grad_accum": int(accum), "num_workers": int(workers),
                          "prefetch_factor": int(prefetch) if prefetch.isdigit() else None,
                          "pin_memory": pin == "True"}

    @require_torch
    def test_trains_with_the_baseline_then_with_the_answer_of_a_tune(self):
        out, ran = self.train_by_hand(3)
        self.assertIn("the baseline", out)
        self.assertEqual({k: ran[k] for k in ("batch_size", "grad_accum", "num_workers", "pin_memory")},
                         {"batch_size": 32, "grad_accum": 4, "num_workers": 0, "pin_memory": False})

        with open(os.path.join(self.dir, "space.yaml"), "w") as f:
            f.write(SPACE)
        p = subprocess.run([os.environ["AUTOTUNE_BINARY"], "space.yaml"], cwd=self.dir, env=environment(),
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        with open(os.path.join(self.dir, TUNED)) as f:
            best = autotune_trial.read_best(f.read())
        self.assertIn(best["batch_size"], (64, 128), best)

        out, ran = self.train_by_hand(4)
        self.assertIn(f"the answer in {TUNED}", out)
        self.assertEqual(ran, best, "the DataLoader and the optimizer steps of the answer")
        self.assertTrue(filecmp.cmp(os.path.join(self.dir, "configs", "train_adopt.py"),
                                    os.path.join(CONFIGS, "train_adopt.py"), shallow=False), "unedited")


if __name__ == "__main__":
    unittest.main()
