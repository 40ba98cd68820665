"""Warm trials: one process serves trial after trial (trials())."""

import atexit
import gc
import json
import os
import sys
import time

from ._params import params
from ._process import _descendants
from ._handoff import Handoff
from ._knobs import _apply_threads
from ._results import _write_atomically
from ._torch_env import _cuda_in_use, _torch


_WARM_READY_WAIT_S = 5.0  # at most this long for the last trial's processes to exit (under exit_grace)
_ENTERED_WAIT_S = 10.0  # at most this long for autotune to read the start-up's memory
_entered_trials = False
_LOOPING = "looping"  # in the warm folder: a process of the worker entered trials()


def trials(**defaults):
    """The trials this process runs, as Params (typed like ``defaults``).

    Run by hand, or by autotune on a cold trial, it yields once: the defaults
    or the trial's values. Under ``workload: {warm: true}`` the process is
    kept between trials: after each trial's body (its ``Meter`` has written
    the result) it releases what the trial held (garbage, CUDA's cached
    blocks and peak statistics, the loader's worker processes), tells autotune
    it is ready, and yields the next trial's parameters, until autotune says
    there are no more. The imports, the CUDA context, a model loaded from
    disk and a dataset stay, so start-up is paid once::

        for p in autotune_trial.trials(batch_size=64, num_workers=0):
            loader = DataLoader(ds, batch_size=p.batch_size, num_workers=p.num_workers)
            with autotune_trial.Meter(p) as meter:
                for x, y in meter.batches(loader):
                    step(x, y)

    Build what depends on the knobs (the DataLoader, a Trainer) inside the
    loop; the command line's ``{name}`` placeholders keep the first trial's
    values, so read the knobs from ``p``.

    A job started as N ranks (torchrun, ``torch.multiprocessing.spawn``)
    loops in every rank: each trial's knobs reach every rank, and no rank
    starts a trial before every rank has finished the last one (_handoff.py).
    Set up the process group before the loop (its start-up is paid once).

    A ``threads`` knob is applied before each trial's body:
    ``torch.set_num_threads`` in this process (autotune also sets
    OMP_NUM_THREADS for the job as it starts).
    """
    global _entered_trials
    _entered_trials = True
    warm_dir = os.environ.get("AUTOTUNE_WARM_DIR")
    if not warm_dir:
        yield _applied(params(**defaults))
        return
    # A process of the worker loops here: the launcher's own process (an
    # mp.spawn parent) that does not is not cold (_warn_if_cold_under_warm).
    _write_atomically(os.path.join(warm_dir, _LOOPING), "")
    # The environment each trial starts from: the process's, less the first
    # trial's own variables. What a trial's body writes there (transformers
    # sets ACCELERATE_MIXED_PRECISION from TrainingArguments, and accelerate
    # reads it back when the next trial's arguments ask for fp32) goes with it.
    started_with = {k: v for k, v in os.environ.items() if not _trial_variable(k)}
    # A trial that changes folder (os.chdir into its data) leaves the next
    # one where it started, as a cold trial would be.
    started_in = os.getcwd()
    # Every rank of a launched job loops here; rank 0 speaks for them all
    # (_handoff.py). The start-up is over once every rank has entered.
    handoff = Handoff(warm_dir)

    def started():
        _say_entered(warm_dir)
        return {}

    if handoff.exchange(started) is None:
        return
    while True:
        kept = set(_descendants(os.getpid()))  # children from before the trial (not its loader's)
        yield _applied(params(**defaults))
        trial = os.environ.get("AUTOTUNE_TRIAL", "")
        _release_trial(kept)

        def over_and_next():
            _write_atomically(os.path.join(warm_dir, "ready-" + trial), "")
            return _next_trial(warm_dir)

        message = handoff.exchange(over_and_next)
        if message is None:
            return
        _restore_environment(started_with)
        os.environ.update({k: str(v) for k, v in message["env"].items()})
        try:
            os.chdir(started_in)
        except OSError:  # the folder is gone: the trial says so itself
            pass
        _reset_peaks()  # the first trial keeps the start-up's peak: it paid it, as a cold trial does


def _applied(p):
    """`p`, with what the process applies itself done (threads)."""
    _apply_threads(p)
    return p


def _say_entered(warm_dir):
    """Tells autotune that the start-up is over (imports, a model): it reads
    the process group's memory now, as the base that every later trial of
    this worker is charged (the rest of what a trial adds is its own), and
    removes the file. Waits for that (autotune looks every few milliseconds;
    a long wait is a machine that starves it), and past the wait takes the
    file back, so that the reading is not taken in the middle of a trial."""
    path = os.path.join(warm_dir, "entered")
    _write_atomically(path, "")
    deadline = time.monotonic() + _ENTERED_WAIT_S
    while os.path.exists(path):
        if time.monotonic() > deadline:
            try:
                os.unlink(path)
            except OSError:
                pass
            return
        time.sleep(0.002)


def _trial_variable(name):
    """Whether autotune sets `name` for each trial (the warm folder stays)."""
    return name.startswith("AUTOTUNE_") and name != "AUTOTUNE_WARM_DIR"


def _restore_environment(started_with):
    """os.environ back to `started_with`: what a trial added goes, what it
    changed or removed comes back."""
    for key in [k for k in os.environ if k not in started_with]:
        del os.environ[key]
    for key, value in started_with.items():
        if os.environ.get(key) != value:
            os.environ[key] = value


def _reset_peaks():
    """Per-trial peaks: this process's VmHWM (Linux clear_refs) and CUDA's."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
    torch = _torch()
    if torch is not None and _cuda_in_use():
        torch.cuda.reset_peak_memory_stats()


def _release_trial(kept):
    """What one trial held goes before the next: its garbage (a DataLoader's
    iterator shuts its workers down when collected), CUDA's cached blocks, and
    the processes it started (waited for, so the next trial's memory and CPUs
    are its own); `kept`: the processes from before the trial."""
    gc.collect()
    _shut_down_loader_workers(kept)
    torch = _torch()
    if torch is not None and _cuda_in_use():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    deadline = time.monotonic() + _WARM_READY_WAIT_S
    while set(_descendants(os.getpid())) - kept and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.01)


def _shut_down_loader_workers(kept):
    """The worker processes of the DataLoaders the trial started, shut down
    the way PyTorch does it (the script's loop body may still hold its loader,
    and persistent_workers keeps them alive while it does). A loader that
    owned such an iterator makes a new one when next iterated. Loaders whose
    workers were up before the trial are left alone."""
    if _torch() is None:
        return
    iterators, loaders = [], []
    for obj in gc.get_objects():
        name = type(obj).__name__
        if name == "_MultiProcessingDataLoaderIter":
            pids = {getattr(w, "pid", None) for w in getattr(obj, "_workers", [])}
            if pids - kept - {None}:
                iterators.append(obj)
        elif name == "DataLoader":
            loaders.append(obj)
    for it in iterators:
        try:
            it._shutdown_workers()
        except Exception:  # already shut down, or a PyTorch without the method: the wait below decides
            pass
        for loader in loaders:
            if getattr(loader, "_iterator", None) is it:
                loader._iterator = None


def _next_trial(warm_dir):
    """The next trial's message ({"env": {...}}) from autotune, or None when it
    says stop (or is gone)."""
    path = os.path.join(warm_dir, "next.json")
    while True:
        if os.path.exists(path):
            with open(path) as f:
                message = json.load(f)
            os.unlink(path)
            return message
        if os.path.exists(os.path.join(warm_dir, "stop")) or os.getppid() == 1:
            return None
        time.sleep(0.005)


def _warn_if_cold_under_warm():
    warm_dir = os.environ.get("AUTOTUNE_WARM_DIR")
    # A launcher's own process (an mp.spawn parent) whose ranks looped is not cold.
    if not warm_dir or _entered_trials or os.path.exists(os.path.join(warm_dir, _LOOPING)):
        return
    print("autotune_trial: warm: true, but this script never entered autotune_trial.trials(): "
          "each trial starts it anew (cold)", file=sys.stderr, flush=True)


atexit.register(_warn_if_cold_under_warm)
