"""What a trial reads: params() from the environment, and the framework
keywords (training_arguments, lightning_arguments, loader_arguments) built
from its knobs."""
import contextlib
import io
import os
import sys
import types
import unittest

from trial_common import DataLoader, SlowLoader, autotune_trial, require_torch, restore_modules, torch


class Params(unittest.TestCase):
    def test_typed_from_the_environment_with_defaults_by_hand(self):
        env = {"AUTOTUNE_BATCH_SIZE": "128", "AUTOTUNE_PIN_MEMORY": "true", "AUTOTUNE_PRECISION": "bf16",
               "AUTOTUNE_TRIAL": "3", "AUTOTUNE_IMAGE_SIZE": "224", "AUTOTUNE_RESULT": "/x"}
        saved = dict(os.environ)
        try:
            os.environ.update(env)
            p = autotune_trial.params(batch_size=64, pin_memory=False, precision="fp32", num_workers=0)
        finally:
            os.environ.clear()
            os.environ.update(saved)
        self.assertEqual(p.batch_size, 128)
        self.assertIs(p.pin_memory, True)
        self.assertEqual(p.precision, "bf16")
        self.assertEqual(p.num_workers, 0, "not set: the default")
        self.assertEqual(p.image_size, 224, "a declared knob without a default, typed by its look")
        self.assertNotIn("trial", p)
        self.assertNotIn("result", p)
        with self.assertRaises(AttributeError):
            p.missing

    def test_in_a_trial_a_knob_without_a_default_is_said_once_with_the_name_it_may_mean(self):
        # num_wokers (a typo in the space) is tuned, yet the script reads
        # num_workers: said once, whichever call gives no default for it.
        from autotune_trial import _params
        env = {"AUTOTUNE_TRIAL": "1", "AUTOTUNE_NUM_WOKERS": "4", "AUTOTUNE_BATCH_SIZE": "8",
               "AUTOTUNE_IMAGE_SIZE": "224", "AUTOTUNE_PRECISION": "bf16"}
        saved, given, warned = dict(os.environ), set(_params._GIVEN), set(_params._WARNED)
        _params._GIVEN.clear()
        _params._WARNED.clear()
        err = io.StringIO()
        try:
            for k in [k for k in os.environ if k.startswith("AUTOTUNE_")]:
                del os.environ[k]
            os.environ.update(env)
            with contextlib.redirect_stderr(err):
                first = autotune_trial.params(num_workers=0, batch_size=64, image_size=128)
                autotune_trial.params(num_workers=0)
                list(autotune_trial.trials(num_workers=0, precision="fp32"))
            del os.environ["AUTOTUNE_TRIAL"]
            with contextlib.redirect_stderr(io.StringIO()) as by_hand:
                _params._WARNED.clear()
                autotune_trial.params(batch_size=64)
        finally:
            os.environ.clear()
            os.environ.update(saved)
            _params._GIVEN.clear()
            _params._GIVEN.update(given)
            _params._WARNED.clear()
            _params._WARNED.update(warned)
        self.assertEqual(first.num_wokers, 4, "still given to the script")
        lines = err.getvalue().splitlines()
        self.assertEqual(len(lines), 2, lines)
        self.assertIn("AUTOTUNE_NUM_WOKERS is set (the knob num_wokers)", lines[0])
        self.assertIn("did you mean num_workers?", lines[0])
        self.assertIn("AUTOTUNE_PRECISION", lines[1], "its default came only later, from trials()")
        self.assertNotIn("did you mean", lines[1])
        self.assertNotIn("IMAGE_SIZE", err.getvalue(), "a default in an earlier call")
        self.assertEqual(by_hand.getvalue(), "", "run by hand, no trial: nothing to say")

    def test_a_bad_value_says_which_variable(self):
        os.environ["AUTOTUNE_BATCH_SIZE"] = "sixty"
        try:
            with self.assertRaisesRegex(ValueError, "AUTOTUNE_BATCH_SIZE"):
                autotune_trial.params(batch_size=64)
        finally:
            del os.environ["AUTOTUNE_BATCH_SIZE"]


class Arguments(unittest.TestCase):
    """training_arguments, lightning_arguments, loader_arguments: the knobs in
    p, and only those, as each framework's keywords."""

    def setUp(self):
        # Whatever is installed here, the mapping alone: no TrainingArguments
        # to check the keywords against, no Lightning version to read.
        self.saved = {k: sys.modules.get(k) for k in ("transformers", "lightning", "pytorch_lightning")}
        for k in self.saved:
            sys.modules[k] = None

    def tearDown(self):
        restore_modules(self.saved)

    def test_training_arguments(self):
        ta = autotune_trial.training_arguments
        p = {"batch_size": 32, "grad_accum": 2, "num_workers": 2, "prefetch_factor": 4, "pin_memory": True,
             "precision": "bf16", "image_size": 224}
        self.assertEqual(ta(p), {"per_device_train_batch_size": 32, "gradient_accumulation_steps": 2,
                                 "dataloader_num_workers": 2, "dataloader_prefetch_factor": 4,
                                 "dataloader_pin_memory": True, "fp16": False, "bf16": True, "tf32": False})
        self.assertEqual(ta({}), {}, "a space without knobs gives nothing")
        self.assertEqual(ta({"batch_size": 8}), {"per_device_train_batch_size": 8}, "no precision knob, no keys")
        zero = ta({"num_workers": 0, "prefetch_factor": 4})
        self.assertEqual(zero, {"dataloader_num_workers": 0}, "no prefetch_factor at 0 workers")
        self.assertEqual(ta({"precision": "fp16"}), {"fp16": True, "bf16": False, "tf32": False})
        self.assertEqual(ta({"precision": "fp32"}), {"fp16": False, "bf16": False, "tf32": False})
        with self.assertRaisesRegex(ValueError, "not one of fp32, tf32, fp16, bf16"):
            ta({"precision": "int8"})

    @require_torch
    def test_tf32_only_where_the_gpu_has_it_and_prefetch_where_torch_needs_it_written(self):
        ta = autotune_trial.training_arguments
        self.assertEqual(ta({"precision": "tf32"})["tf32"], autotune_trial._tf32_gpu())
        default = autotune_trial._loader_prefetch_default()
        self.assertEqual(default, 2 if torch.__version__ < "2" else None)
        one = ta({"num_workers": 1})
        self.assertEqual(one.get("dataloader_prefetch_factor"), default, "torch 1.x takes no None there")

    def test_tf32_is_read_from_the_new_setting_where_the_legacy_flag_raises(self):
        # torch 2.9 and later: after torch.backends.cuda.matmul.fp32_precision
        # is set (transformers 5 sets it from TrainingArguments(tf32=...)),
        # reading allow_tf32 raises "a mix of the legacy and new APIs". Seen on
        # an H100 with torch 2.11: every tf32 trial of a Trainer read as fp32.
        class Matmul:
            def __init__(self, new, legacy):
                self.fp32_precision, self._legacy = new, legacy

            @property
            def allow_tf32(self):
                if self._legacy is None:
                    raise RuntimeError("you have used a mix of the legacy and new APIs")
                return self._legacy

        def torch_with(new, legacy, parent=None):
            backends = types.SimpleNamespace(cuda=types.SimpleNamespace(matmul=Matmul(new, legacy)))
            if parent is not None:
                backends.fp32_precision = parent
            return types.SimpleNamespace(backends=backends)

        real = autotune_trial._precision._torch
        try:
            for torch_like, tf32 in ((torch_with("tf32", None), True), (torch_with("ieee", None), False),
                                     (torch_with("none", None, parent="tf32"), True),
                                     (torch_with(None, True), True), (torch_with(None, False), False),
                                     (torch_with(None, None), False)):
                autotune_trial._precision._torch = lambda: torch_like
                self.assertEqual(autotune_trial._matmul_tf32(), tf32, vars(torch_like.backends.cuda.matmul))
        finally:
            autotune_trial._precision._torch = real

    def test_lightning_arguments(self):
        la = autotune_trial.lightning_arguments
        self.assertEqual(la({"grad_accum": 4, "batch_size": 8, "num_workers": 2}), {"accumulate_grad_batches": 4})
        self.assertEqual(la({}), {})
        for asked, name in (("fp32", "32-true"), ("tf32", "32-true"), ("fp16", "16-mixed"), ("bf16", "bf16-mixed")):
            self.assertEqual(la({"precision": asked}), {"precision": name})

    @require_torch
    def test_lightning_arguments_set_the_matmul_precision_for_every_trial(self):
        before = torch.get_float32_matmul_precision()
        try:
            autotune_trial.lightning_arguments({"precision": "tf32"})
            self.assertEqual(torch.get_float32_matmul_precision(), "high" if autotune_trial._tf32_gpu() else "highest")
            torch.set_float32_matmul_precision("high")  # an earlier trial's, in a warm process
            autotune_trial.lightning_arguments({"precision": "bf16"})
            self.assertEqual(torch.get_float32_matmul_precision(), "highest")
        finally:
            torch.set_float32_matmul_precision(before)

    def test_loader_arguments(self):
        la = autotune_trial.loader_arguments
        self.assertEqual(la({"batch_size": 64, "num_workers": 4, "prefetch_factor": 3, "pin_memory": False,
                             "precision": "bf16"}),
                         {"batch_size": 64, "num_workers": 4, "prefetch_factor": 3, "pin_memory": False})
        self.assertEqual(la({"num_workers": 0, "prefetch_factor": 3}), {"num_workers": 0})
        self.assertEqual(la(autotune_trial.Params(batch_size=16)), {"batch_size": 16})

    @require_torch
    def test_they_build_a_dataloader_at_zero_workers_and_more(self):
        for workers in (0, 1):
            loader = DataLoader(SlowLoader(0), **autotune_trial.loader_arguments(
                {"batch_size": 4, "num_workers": workers, "prefetch_factor": 2, "pin_memory": False}))
            x, y = next(iter(loader))
            self.assertEqual(x.shape[0], 4)


if __name__ == "__main__":
    unittest.main()
