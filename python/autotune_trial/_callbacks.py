"""What the Hugging Face and Lightning callbacks share: the first step's
precision check, the advice for a training too short."""

from ._meter import Meter
from ._precision import _fp32_ran, _precision, _precision_differs


def _start_callback(callback, p, rule):
    """The state both callbacks begin with, which the first-step check reads."""
    callback.meter = Meter(p, **rule)
    callback._asked = _precision(p)
    callback._probe = None
    callback._checked = False
    callback._reported = False


def _hf_args_precision(args):
    """The precision a Trainer's arguments ask for (where no forward was seen)."""
    if getattr(args, "fp16", False):
        return "fp16"
    if getattr(args, "bf16", False):
        return "bf16"
    return _fp32_ran(getattr(getattr(args, "device", None), "type", "cpu"))


def _first_step_precision_failed(callback, hf_args=None):
    """A callback's check, once, of the precision its first step ran in
    (callback._probe) against the one asked (callback._asked); where the
    probe saw no forward, a Trainer's TrainingArguments (`hf_args`) say what
    ran, or, without them, the check waits. A difference fails the trial
    (callback.meter). Whether it did."""
    if callback._asked is None or callback._checked:
        return False
    probe = callback._probe
    ran, how = (probe.ran if probe is not None else None), "in the Trainer's first step"
    if ran is None:
        if hf_args is None:
            return False
        ran, how = _hf_args_precision(hf_args), "by the TrainingArguments"
    callback._checked = True
    if probe is not None:
        probe.remove()
    reason = _precision_differs(callback._asked, ran, how)
    if reason:
        callback.meter.fail(reason)
    return reason is not None


_SHORT_TRAINING = ("raise max_steps to {most} or more ({what}); the callback stops the training as soon as the "
                   "measurement is complete, so max_steps=10_000 costs nothing")
