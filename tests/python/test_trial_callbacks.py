"""The framework callbacks (HFCallback, LightningCallback) on stand-in
framework modules: they drive the Meter and stop the trainer."""
import sys
import time
import types
import unittest

from trial_common import autotune_trial, restore_modules


class Callbacks(unittest.TestCase):
    def setUp(self):
        self.saved = {k: sys.modules.get(k) for k in ("transformers", "lightning", "lightning.pytorch",
                                                      "pytorch_lightning")}

    def tearDown(self):
        restore_modules(self.saved)
        for name in ("HFCallback", "LightningCallback"):
            autotune_trial.__dict__.pop(name, None)

    def test_missing_framework_is_an_import_error(self):
        sys.modules["transformers"] = None  # import fails
        with self.assertRaises(ImportError):
            autotune_trial.HFCallback

    def test_hf_callback_drives_the_meter_and_stops_the_trainer(self):
        fake = types.ModuleType("transformers")
        fake.TrainerCallback = type("TrainerCallback", (), {})
        sys.modules["transformers"] = fake
        cb = autotune_trial.HFCallback(warmup_s=0.05, max_s=1.0)
        args = types.SimpleNamespace(per_device_train_batch_size=8, gradient_accumulation_steps=2)
        control = types.SimpleNamespace(should_training_stop=False)
        cb.on_train_begin(args, None, control)
        steps = 0
        while not control.should_training_stop and steps < 100000:  # the Trainer's loop
            time.sleep(0.001)  # fetching
            cb.on_step_begin(args, None, control)
            time.sleep(0.001)  # forward, backward, step
            cb.on_step_end(args, None, control)
            steps += 1
        self.assertTrue(control.should_training_stop)
        cb.on_train_end(args, None, control)
        r = cb.meter.result
        # 16 samples per ~2 ms step, half of it waiting.
        self.assertGreater(r["throughput"], 16 / 0.004)
        self.assertGreater(r["data_wait_fraction"], 0.25)
        self.assertLess(r["data_wait_fraction"], 0.75)

    def test_lightning_callback_drives_the_meter_and_stops_the_trainer(self):
        fake = types.ModuleType("lightning.pytorch")
        fake.Callback = type("Callback", (), {})
        sys.modules["lightning"] = types.ModuleType("lightning")
        sys.modules["lightning.pytorch"] = fake
        sys.modules["lightning"].pytorch = fake
        cb = autotune_trial.LightningCallback(warmup_s=0.05, max_s=1.0)
        trainer = types.SimpleNamespace(should_stop=False)
        cb.on_train_start(trainer, None)
        i = 0
        while not trainer.should_stop and i < 100000:
            batch = ([0] * 4, [1] * 4)
            cb.on_train_batch_start(trainer, None, batch, i)
            time.sleep(0.001)
            cb.on_train_batch_end(trainer, None, None, batch, i)
            i += 1
        cb.on_train_end(trainer, None)
        self.assertTrue(trainer.should_stop)
        self.assertGreater(cb.meter.result["throughput"], 4 / 0.003)

    def fake_hf(self):
        fake = types.ModuleType("transformers")
        fake.TrainerCallback = type("TrainerCallback", (), {})
        sys.modules["transformers"] = fake

    def test_hf_evaluation_logging_and_saving_are_paused_across(self):
        # The Trainer's flags ask for an evaluation after every 4th step; its
        # on_evaluate comes once it is over (60 ms). Counted, it would be most
        # of the data wait; paused, the wait is the 1 ms fetch's share.
        self.fake_hf()
        cb = autotune_trial.HFCallback(warmup_s=0.05, max_s=1.0)
        args = types.SimpleNamespace(per_device_train_batch_size=4, gradient_accumulation_steps=1)
        control = types.SimpleNamespace(should_training_stop=False, should_evaluate=False, should_log=False,
                                        should_save=False)
        cb.on_train_begin(args, None, control)
        steps = 0
        while not control.should_training_stop and steps < 100000:
            time.sleep(0.001)  # fetching
            cb.on_step_begin(args, None, control)
            time.sleep(0.004)
            steps += 1
            control.should_evaluate = steps % 4 == 0  # DefaultFlowCallback, first, sets it
            cb.on_step_end(args, None, control)
            if control.should_evaluate and not control.should_training_stop:
                for _ in range(3):
                    time.sleep(0.02)
                    cb.on_prediction_step(args, None, control)
                cb.on_evaluate(args, None, control, metrics={})
        cb.on_train_end(args, None, control)
        r = cb.meter.result
        self.assertEqual(r.get("status", "ok"), "ok", r)
        self.assertLess(r["data_wait_fraction"], 0.5, r)
        self.assertGreater(r["paused_seconds"], 0.5, r)

    def test_hf_a_training_that_ends_first_is_an_error(self):
        self.fake_hf()
        cb = autotune_trial.HFCallback(warmup_s=0.05)
        args = types.SimpleNamespace(per_device_train_batch_size=4, gradient_accumulation_steps=1)
        control = types.SimpleNamespace(should_training_stop=False)
        cb.on_train_begin(args, None, control)
        for _ in range(5):  # max_steps=5
            cb.on_step_begin(args, None, control)
            time.sleep(0.002)
            cb.on_step_end(args, None, control)
        cb.on_train_end(args, None, control)
        r = cb.meter.result
        self.assertEqual(r["status"], "error")
        self.assertIn("the training ended after 5 steps, before the measurement was complete", r["reason"])
        self.assertIn("raise max_steps to", r["reason"])

    def test_lightning_callback_subclasses_the_callback_of_the_package_the_script_imported(self):
        def package(name):
            mod = types.ModuleType(name)
            mod.Callback = type("Callback", (), {"__module__": name})
            return mod
        for k in ("lightning", "lightning.pytorch", "pytorch_lightning"):
            self.saved.setdefault(k, sys.modules.get(k))
            sys.modules.pop(k, None)
        pl = sys.modules["pytorch_lightning"] = package("pytorch_lightning")
        self.assertEqual(autotune_trial.LightningCallback.__mro__[1:], (pl.Callback, object),
                         "only pytorch_lightning imported: its Callback alone")
        lp = sys.modules["lightning.pytorch"] = package("lightning.pytorch")
        sys.modules["lightning"] = types.ModuleType("lightning")
        sys.modules["lightning"].pytorch = lp
        both = autotune_trial.LightningCallback
        self.assertTrue(issubclass(both, lp.Callback) and issubclass(both, pl.Callback), "both: either Trainer")
        del sys.modules["pytorch_lightning"]
        self.assertEqual(autotune_trial.LightningCallback.__mro__[1:], (lp.Callback, object))


if __name__ == "__main__":
    unittest.main()
