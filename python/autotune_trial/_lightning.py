"""LightningCallback: the meter in a Lightning Trainer (made only where
lightning or pytorch_lightning imports)."""

import importlib
import sys

from ._callbacks import _SHORT_TRAINING, _first_step_precision_failed, _start_callback
from ._precision import _PrecisionProbe, _fp32_ran, _precision_differs
from ._torch_env import _samples_in


# What a Lightning Trainer reports running (trainer.precision), as the knob's names.
_LIGHTNING_RAN = {
    "32-true": "fp32", "32": "fp32", "16-mixed": "fp16", "16": "fp16", "16-true": "fp16",
    "bf16-mixed": "bf16", "bf16": "bf16", "bf16-true": "bf16", "64-true": "fp64", "64": "fp64",
}


def _lightning_packages():
    """lightning.pytorch and/or pytorch_lightning: those the script has
    imported, else those that import. Their Callback classes are distinct,
    and each Trainer takes only its own package's."""
    imported = [n for n in ("lightning", "pytorch_lightning") if n in sys.modules]
    out = []
    for name in imported or ("lightning", "pytorch_lightning"):
        try:
            out.append(importlib.import_module("lightning.pytorch" if name == "lightning" else name))
        except ImportError:
            if imported:
                raise
    if not out:
        raise ImportError("autotune_trial.LightningCallback needs lightning or pytorch_lightning")
    return out


def _lightning_ran(trainer, pl_module):
    value = str(getattr(trainer, "precision", "32-true"))
    ran = _LIGHTNING_RAN.get(value, value)
    device = getattr(getattr(pl_module, "device", None), "type", "cpu")
    if ran == "fp32":
        ran = _fp32_ran(device)
    return ran, f"Lightning's Trainer runs precision={value!r} on {device}"


def _make_lightning_class(bases):
    class LightningCallback(*bases):
        """Measures a Lightning Trainer's fit and stops it when complete.

            trainer = Trainer(..., callbacks=[autotune_trial.LightningCallback(p)])

        Its base is the Callback of the package the script imported
        (lightning or pytorch_lightning; both where both are). Validation is
        paused across (on_validation_start to on_validation_end), and so are
        the Trainer's checkpoint saves and its loggers' writes (their methods
        are wrapped on this Trainer's objects for the fit): neither data wait
        nor in a timed window. With a precision knob, trainer.precision at
        the start of the fit and the first step's autocast must be the
        precision asked, or the trial is an ``error`` saying which ran (on a
        CPU, Lightning turns 16-mixed into bf16-mixed). A fit that ends
        before the measurement is complete is an ``error`` naming the steps
        it had and needs (optimizer steps, as max_steps counts them).
        """

        def __init__(self, p=None, **rule):
            _start_callback(self, p, rule)
            self._per_step = 1
            self._wrapped = []

        def on_train_start(self, trainer, pl_module):
            self._per_step = int(getattr(trainer, "accumulate_grad_batches", 1) or 1)
            if self._asked is not None:
                reason = _precision_differs(self._asked, *_lightning_ran(trainer, pl_module))
                if reason:
                    self.meter.fail(reason)
                    trainer.should_stop = True
                    return
                self._probe = _PrecisionProbe(pl_module)
            self._pause_around(trainer, "save_checkpoint")
            for logger in getattr(trainer, "loggers", None) or []:
                self._pause_around(logger, "log_metrics")
                self._pause_around(logger, "save")
            self.meter.start()

        def _pause_around(self, obj, name):
            method = getattr(obj, name, None)
            if method is None:
                return
            meter = self.meter

            def paused(*args, **kwargs):
                was = meter.paused
                meter.pause()
                try:
                    return method(*args, **kwargs)
                finally:
                    if not was:
                        meter.resume()
            try:
                setattr(obj, name, paused)
            except Exception:  # a slotted or frozen object: counted as the loop's own time
                return
            self._wrapped.append((obj, name, paused))

        def _unwrap(self):
            for obj, name, paused in self._wrapped:
                if vars(obj).get(name) is paused:
                    delattr(obj, name)
            self._wrapped = []
            if self._probe is not None:
                self._probe.remove()

        def on_validation_start(self, trainer, pl_module):
            self.meter.pause()

        def on_validation_end(self, trainer, pl_module):
            self.meter.resume()

        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx, *args):
            self.meter.batch_ready(inline=self.meter.loads_inline)

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, *args):
            if _first_step_precision_failed(self) or self.meter.step_done(
                    _samples_in(batch, self.meter.batch_size)):
                trainer.should_stop = True

        def on_train_end(self, trainer, pl_module):
            self._unwrap()
            if not self._reported:
                self._reported = True
                self.meter._end_early("the training ended", _SHORT_TRAINING.replace(
                    "{what}", "the Trainer's; max_epochs and limit_train_batches end it too"),
                    per_step=self._per_step)
                self.meter.report()

        def on_exception(self, trainer, pl_module, exception):
            self._unwrap()

        def teardown(self, trainer, pl_module, stage):
            self._unwrap()

    LightningCallback.__qualname__ = "LightningCallback"
    LightningCallback.__module__ = __package__  # pickled by name (ddp_spawn): found through __getattr__
    return LightningCallback


_lightning_classes = {}


def _make_lightning_callback():
    bases = tuple(m.Callback for m in _lightning_packages())
    if bases not in _lightning_classes:
        _lightning_classes[bases] = _make_lightning_class(bases)
    return _lightning_classes[bases]
