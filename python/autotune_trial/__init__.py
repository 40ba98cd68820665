"""autotune_trial: measure your own training loop the way autotune does.

autotune puts this module on every command trial's PYTHONPATH, so a script it
tunes can simply ``import autotune_trial``. Standard library only; PyTorch is
used when the script has imported it (CUDA synchronisation, device memory,
CUDA out-of-memory as a status).

    import autotune_trial

    p = autotune_trial.params(batch_size=64, num_workers=0, pin_memory=False, precision="fp32")
    loader = DataLoader(dataset, batch_size=p.batch_size, num_workers=p.num_workers, pin_memory=p.pin_memory)
    with autotune_trial.Meter(p) as meter:
        for x, y in meter.batches(loader):      # ends when the measurement is complete
            train_step(x, y)

The measurement (the same rule and defaults as autotune's built-in cpu and
cuda harness, README "How a trial is measured"):

1. Warm-up: until at least ``warmup_s`` seconds (1.5) AND as many steps as the
   loader had prefetched before the first one, ``num_workers * (prefetch_factor
   + 1)``, have passed. Timing the first steps measures that backlog, not the
   pipeline (3-5x too fast on a real job). If the warm-up would take more than
   half of ``max_s`` it ends there (``warmup_complete: 0``). Once three of
   the last ``2 * num_workers + 1`` steps after those have waited for their
   batches (each wait over ``drained_wait_share``, 0.1, of its step; workers
   in step hand over their batches together, so a drained queue makes one
   step in ``num_workers`` wait, not every one), the loader's queue ran empty:
   the backlog is gone, and the warm-up ends after ``warmup_floor_s`` (0.5)
   instead (``warmup_drained: 1``; ``warmup_until_drained=False`` keeps the
   full ``warmup_s``). Through ``batches(loader)`` with a PyTorch DataLoader
   whose workers it can see into, three steps in a row from the second on
   that found every other batch in flight already prepared (the workers
   idle, waiting for work) end it there too (``warmup_ahead: 1``): the batch
   asked for after the previous step was already made, so the workers keep
   ahead by their own pace, and whatever stock is left cannot inflate the
   figure; this needs no outlasting of the backlog, which on a job of slow
   steps and deep queues would take half of ``max_s``. A DataLoader with
   ``num_workers=0`` loads each batch in the step itself: it has no backlog,
   and the warm-up ends at the floor after three steps (``warmup_drained:
   1``), as the built-in harness treats inline loading (a dataset that
   prefetches on threads of its own behind such a DataLoader is not seen:
   give it ``warmup_until_drained=False``).
2. Timed windows of at least ``window_s`` seconds (0.3) and 2 steps each.
3. The timed span grows until the result is precise: stop once the windows
   it counts give their mean rate +-``target_ci90`` (0.03) or better at 90%
   confidence (Student t over the windows' rates; at least ``fewest_windows``,
   3, of them: a steady job stops after 3 windows, one whose windows scatter
   by 5% after about 10, by 10% after about 30), or when ``max_s`` seconds
   (10, warm-up included) have passed; a window the cap cuts short is
   dropped. The result counts every window since the warm-up unless 5 or more
   trend (a least-squares slope over their index, two-sided 95%): then from
   the first window on which they no longer do (``counted_from``). It is
   their samples over their seconds; ``throughput_ci90`` is its precision,
   ``stopped_on_precision: 1`` says the target was met, and a result stopped
   by the cap says how precise it got. ``target_ci90=0`` gives the earlier
   rule, the built-in harness's default: stop when the last 5 windows spread
   by at most ``target_rsd`` (0.05), sooner when 3 or 4 already bound their
   mean as well at 90%, or after 5 windows that scatter without a trend
   (``stop_on_scatter``); the last 5 are averaged.

Each step's time is split into waiting for the next batch (inside the
loader's ``next``) and the rest (computing): ``data_wait_fraction`` is the
waiting share of the timed windows, and DESIGN's utilisation U = T_compute /
(T_compute + T_wait) is ``1 - data_wait_fraction``. With CUDA in use the
device is synchronised at each window's edges, so queued GPU work is counted
in the window it belongs to.

The result goes to ``$AUTOTUNE_RESULT`` (written atomically) and is printed
as one JSON line; run by hand (no autotune around it) a readable summary goes
to standard error as well. A CUDA out-of-memory inside ``with Meter(...)`` is
reported as ``{"status": "oom", ...}`` and a ``MemoryError`` as ``host_oom``,
instead of a traceback.

Under ``torch.distributed`` (torchrun, ``accelerate launch``, DeepSpeed: a
process group of more than one rank is up by the first step), every rank
measures, but the ranks leave the loop together: every 4 steps they agree
(one tiny all-reduce) whether rank 0's rule has ended, so no rank is left
blocked in the gradients' all-reduce by one that stopped a step earlier. As
they leave, the ranks pool their figures (one more all-reduce), and only
rank 0 writes the result; its ``throughput`` is the job's, the slowest
rank's pace times the data-parallel ranks (``world_size``, or ``Meter(...,
data_parallel_size=N)`` where tensor- or pipeline-parallel ranks share their
samples), with ``throughput_per_rank``, ``world_size`` and each rank's pace
and data wait (``rank<k>_pace``, ``rank<k>_data_wait``, ``rank_slowest``,
...) beside it (a rank's out-of-memory is still written as ``oom``, and its
exception goes on so that the launcher stops the other ranks); its
``ram_bytes`` sums the process trees of the ranks on its node. Every rank
must run the meter and mark the same steps: a meter on rank 0 alone would
wait at its first agreement for the others.

A loop that ends before the rule has (a one-shot loader run out, a
Trainer's max_steps reached) is an ``error`` whose reason names the steps it
had and the steps the measurement needs at its pace: a partial measurement
would favour the configurations whose steps are slow enough to complete it.
``Meter.pause()`` and ``resume()`` leave out work that is not training (an
evaluation, a checkpoint): neither data wait nor in a timed window.

Callbacks built on the same meter, defined only where their package imports:
``autotune_trial.HFCallback`` (Hugging Face ``Trainer``) and
``autotune_trial.LightningCallback`` (Lightning ``Trainer``, from
``lightning`` or ``pytorch_lightning``, whichever the script imported). They
pause the meter across evaluation, logging and checkpoints, and with a
precision knob they check that the precision which ran is the one asked (an
``error`` saying which ran if not: Lightning on a CPU turns 16-mixed into
bf16-mixed). With the trial's ``num_workers`` at 0 they take the Trainer's
loader as making each batch in the step (no backlog: the warm-up ends at
its floor). The knobs as each framework's keywords, only those in ``p``::

    transformers.TrainingArguments(output_dir="out", max_steps=10_000, **autotune_trial.training_arguments(p))
    lightning.Trainer(max_steps=10_000, callbacks=[autotune_trial.LightningCallback(p)],
                      **autotune_trial.lightning_arguments(p))
    DataLoader(dataset, **autotune_trial.loader_arguments(p))

After tuning, the same script trains with the answer: ``tuned("tuned.yaml",
**defaults)`` gives tuned.yaml's ``best:`` over the defaults (the baseline),
the defaults where there is no file yet, and a trial's own values inside a
trial, so one line serves the training run and the tuning::

    for p in autotune_trial.trials(**autotune_trial.tuned("tuned.yaml", batch_size=64, grad_accum=4)):
        ...   # by hand: once, with the answer; under autotune: the trials

In a trial, a knob autotune sets that no ``params()``, ``trials()`` or
``tuned()`` of the script gave a default (a misspelt name in the space) is
said once on standard error.
"""

# One module per reason to change; the names scripts and tests use, here.
from ._hf import _make_hf_callback
from ._knobs import lightning_arguments, loader_arguments, training_arguments  # noqa: F401
from ._lightning import _make_lightning_callback
from ._meter import Meter  # noqa: F401
from ._params import Params, params  # noqa: F401
from ._process import host_bytes  # noqa: F401
from ._results import summary, write_result  # noqa: F401
from ._stop_rule import RULE, ci90, counted_from, drifting, precise_enough, spread_settled, surely_below  # noqa: F401
from ._tuned import read_best, tuned  # noqa: F401
from ._warm import trials  # noqa: F401
# Internals the tests call (to patch one, patch the module that looks it up).
from ._knobs import _loader_prefetch_default  # noqa: F401
from ._precision import _matmul_tf32, _tf32_gpu  # noqa: F401
from ._stop_rule import _t95  # noqa: F401
from ._torch_env import _inline_loader, _workers_idle  # noqa: F401

__all__ = ["params", "Params", "trials", "tuned", "Meter", "RULE", "write_result", "training_arguments",
           "lightning_arguments", "loader_arguments", "HFCallback", "LightningCallback"]


def __getattr__(name):  # PEP 562: the callbacks exist only where their framework imports
    if name == "HFCallback":
        cls = globals()[name] = _make_hf_callback()
        return cls
    if name == "LightningCallback":  # not kept: its base follows what the script has imported
        return _make_lightning_callback()
    raise AttributeError(f"module 'autotune_trial' has no attribute {name!r}")
