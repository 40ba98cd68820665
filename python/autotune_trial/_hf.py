"""HFCallback: the meter in a Hugging Face Trainer (made only where
transformers imports)."""

import os
import sys
import time

from ._callbacks import _SHORT_TRAINING, _first_step_precision_failed, _start_callback
from ._knobs import _loader_prefetch_default
from ._precision import _PrecisionProbe


def _prefetch_that_works(args):
    """transformers 4.36-4.38 pass dataloader_prefetch_factor to every
    DataLoader, None by default; torch before 2.0 takes only a number there
    (and at 0 workers only its default, 2): that default, in these arguments."""
    default = _loader_prefetch_default()
    if default is not None and getattr(args, "dataloader_prefetch_factor", 0) is None:
        try:
            args.dataloader_prefetch_factor = default
        except Exception:  # frozen arguments: the DataLoader will say
            pass


def _release_model(model):
    """Under warm trials, gives back a model built once and reused as a fresh
    process would see it: without the autocast that accelerate wrapped its
    forward in for a mixed-precision trial (the next trial's fp32 would run
    in it) and without accelerate's mark that it was prepared (the next
    Trainer's accelerator would leave it as it is, without its autocast)."""
    if model is None or not os.environ.get("AUTOTUNE_WARM_DIR"):
        return
    state = vars(model)
    state.pop("_is_accelerate_prepared", None)
    if "_original_forward" not in state:
        return
    try:
        from accelerate.utils import extract_model_from_parallel
        extract_model_from_parallel(model, keep_fp32_wrapper=False)
    except Exception as e:  # the next trial's precision check will say what ran
        print(f"autotune_trial: could not undo accelerate's autocast wrapper: {e}", file=sys.stderr)


def _make_hf_callback():
    from transformers import TrainerCallback  # only where transformers imports

    class HFCallback(TrainerCallback):
        """Measures a Hugging Face Trainer run and stops it when complete.

            trainer = Trainer(..., callbacks=[autotune_trial.HFCallback(p)])
            trainer.train()     # stops itself; the result is written at the end

        A step is one optimizer step of per_device_train_batch_size *
        gradient_accumulation_steps samples; data wait is the time from one
        step's end to the next step's start (the Trainer fetches in between).
        With gradient accumulation, Trainers before transformers 4.40 fetch
        the later micro-batches inside the step, so their wait counts as
        compute there; throughput is right either way.

        Logging, evaluation and checkpoints are paused across (from the
        step's end when the Trainer's flags ask for them, or found by their
        events: on_log, on_evaluate, on_save, on_prediction_step), so they
        count neither as data wait nor in a timed window. With a precision
        knob, the precision the first step ran in (autocast's dtype, else the
        weights') must be the one asked, or the trial is an ``error`` saying
        which ran. A training that ends before the measurement is complete
        is an ``error`` naming the steps it had and needs. On torch before
        2.0 it gives the Trainer's arguments a prefetch_factor the DataLoader
        takes (see training_arguments).
        """

        def __init__(self, p=None, **rule):
            _start_callback(self, p, rule)
            self._step_end = None   # perf_counter() at the last step's end
            self._aside_end = None  # perf_counter() at the last log, evaluation or save event

        def on_init_end(self, args, state, control, **kwargs):
            _prefetch_that_works(args)

        def on_train_begin(self, args, state, control, model=None, **kwargs):
            _prefetch_that_works(args)
            if self._asked is not None:
                self._probe = _PrecisionProbe(model)
            self.meter.start()

        def on_step_begin(self, args, state, control, **kwargs):
            if self.meter.paused:
                self.meter.resume(at=self._aside_end)  # from there to here: fetching the batch
            self.meter.batch_ready(inline=self.meter.loads_inline)

        def on_step_end(self, args, state, control, **kwargs):
            if _first_step_precision_failed(self, args) or self.meter.step_done(
                    args.per_device_train_batch_size * args.gradient_accumulation_steps):
                control.should_training_stop = True
                return control
            self._step_end = time.perf_counter()
            self._pause_if_asked(control)
            return control

        def on_epoch_end(self, args, state, control, **kwargs):
            self._pause_if_asked(control)

        def _pause_if_asked(self, control):
            # DefaultFlowCallback, always first, has set the flags: what comes
            # before the next batch is logging, evaluation or a checkpoint.
            if any(getattr(control, f, False) for f in ("should_log", "should_evaluate", "should_save")):
                self.meter.pause()

        def _aside(self, *args, **kwargs):
            if not self.meter.paused:
                self.meter.pause(at=self._step_end)
            self._aside_end = time.perf_counter()

        on_log = on_evaluate = on_save = on_predict = on_prediction_step = _aside

        def on_train_end(self, args, state, control, model=None, **kwargs):
            if self._probe is not None:
                self._probe.remove()
            _release_model(model)
            if not self._reported:
                self._reported = True
                self.meter._end_early("the training ended", _SHORT_TRAINING.replace(
                    "{what}", "TrainingArguments; num_train_epochs over a short dataset ends it too"))
                self.meter.report()

    HFCallback.__qualname__ = "HFCallback"
    HFCallback.__module__ = __package__  # pickled by name (ddp_spawn): found through __getattr__
    return HFCallback
