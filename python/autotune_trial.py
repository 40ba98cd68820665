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
blocked in the gradients' all-reduce by one that stopped a step earlier. Only
rank 0 writes the result; its ``throughput`` is the job's, rank 0's pace
times the data-parallel ranks (``world_size``, or ``Meter(...,
data_parallel_size=N)`` where tensor- or pipeline-parallel ranks share their
samples), with ``throughput_per_rank`` and ``world_size`` beside it (a
rank's out-of-memory is still written as ``oom``, and its exception goes on
so that the launcher stops the other ranks); its
``ram_bytes`` counts the ranks on its node (``LOCAL_WORLD_SIZE``, which
torchrun sets, or Open MPI's ``OMPI_COMM_WORLD_LOCAL_SIZE``) as rank 0's
process tree each. Every rank must run the meter and mark the same steps: a
meter on rank 0 alone would wait at its first agreement for the others.

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
"""

import atexit
import collections
import gc
import importlib
import inspect
import json
import math
import os
import sys
import time
import warnings

__all__ = ["params", "Params", "trials", "Meter", "RULE", "write_result", "training_arguments", "lightning_arguments",
           "loader_arguments", "HFCallback", "LightningCallback"]

# The built-in harness's defaults (workloads/pipeline_knobs.cpp,
# workloads/cuda_workload_info.cpp): one rule, documented once.
RULE = {
    "warmup_s": 1.5,
    "warmup_until_drained": True,
    "warmup_floor_s": 0.5,
    "drained_wait_share": 0.1,
    "window_s": 0.3,
    "window_min_steps": 2,
    "rsd_windows": 5,
    "target_rsd": 0.05,
    "fewest_windows": 3,
    "stop_on_scatter": True,
    "target_ci90": 0.03,
    "max_s": 10.0,
}

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


# ----------------------------------------------------------------- parameters

class Params(dict):
    """The trial's parameters: ``p.batch_size`` or ``p["batch_size"]``.

    ``tuning`` is true when autotune runs the script (AUTOTUNE_TRIAL is set).
    """

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(
                f"autotune_trial: no parameter {name!r} (give it a default: params({name}=...), "
                f"or declare it in the space)") from None

    @property
    def tuning(self):
        return "AUTOTUNE_TRIAL" in os.environ


def _env_name(name):
    return "AUTOTUNE_" + "".join(c.upper() if c.isalnum() else "_" for c in name)


def _parse_like(text, default, name):
    """`text` from the environment, typed like `default` (or guessed)."""
    kind = type(default) if default is not None else None
    low = text.strip().lower()
    if kind is bool or (kind is None and low in _TRUE + _FALSE):
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise ValueError(f"autotune_trial: {_env_name(name)}={text!r} is not a boolean")
    if kind is int or (kind is None and _is_int(text)):
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"autotune_trial: {_env_name(name)}={text!r} is not an integer") from None
    if kind is float:
        return float(text)
    return text


def _is_int(text):
    try:
        int(text)
        return True
    except ValueError:
        return False


def params(**defaults):
    """The trial's parameters, typed, from the AUTOTUNE_* environment.

    Every keyword is a parameter with its default for a run by hand; its type
    (int, bool, float, str) types the environment's text. Parameters autotune
    sets that have no default here are included too, typed by their look.
    """
    out = Params()
    for name, default in defaults.items():
        text = os.environ.get(_env_name(name))
        out[name] = default if text is None else _parse_like(text, default, name)
    skip = {"AUTOTUNE_TRIAL", "AUTOTUNE_RESULT", "AUTOTUNE_STOP_BELOW", "AUTOTUNE_CUDA_MODULE"}  # the tool's own
    known = {_env_name(n) for n in defaults}
    for key, text in os.environ.items():
        if key.startswith("AUTOTUNE_") and key not in skip and key not in known:
            name = key[len("AUTOTUNE_"):].lower()
            if name and name not in out:
                out[name] = _parse_like(text, None, name)
    return out


# ----------------------------------------------------------------- memory

# ----------------------------------------------------------------- warm trials

_WARM_READY_WAIT_S = 5.0  # at most this long for the last trial's processes to exit (under exit_grace)
_entered_trials = False


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
    """
    global _entered_trials
    _entered_trials = True
    warm_dir = os.environ.get("AUTOTUNE_WARM_DIR")
    if not warm_dir:
        yield params(**defaults)
        return
    # The environment each trial starts from: the process's, less the first
    # trial's own variables. What a trial's body writes there (transformers
    # sets ACCELERATE_MIXED_PRECISION from TrainingArguments, and accelerate
    # reads it back when the next trial's arguments ask for fp32) goes with it.
    started_with = {k: v for k, v in os.environ.items() if not _trial_variable(k)}
    while True:
        kept = set(_descendants(os.getpid()))  # children from before the trial (not its loader's)
        yield params(**defaults)
        trial = os.environ.get("AUTOTUNE_TRIAL", "")
        _release_trial(kept)
        _write_atomically(os.path.join(warm_dir, "ready-" + trial), "")
        message = _next_trial(warm_dir)
        if message is None:
            return
        _restore_environment(started_with)
        os.environ.update({k: str(v) for k, v in message["env"].items()})
        _reset_peaks()  # the first trial keeps the start-up's peak: it paid it, as a cold trial does


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


def _write_atomically(path, text):
    """`text` into `path` so that no reader sees half of it: written beside,
    synced, then renamed over."""
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


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
    if os.environ.get("AUTOTUNE_WARM_DIR") and not _entered_trials:
        print("autotune_trial: warm: true, but this script never entered autotune_trial.trials(): "
              "each trial starts it anew (cold)", file=sys.stderr, flush=True)


atexit.register(_warn_if_cold_under_warm)


def _status_bytes(pid, key):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _descendants(root):
    """Live descendants of `root` (DataLoader workers, launcher children)."""
    children = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(name))
    out, todo = [], [root]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def host_bytes():
    """Peak resident memory of this process plus its live descendants (the
    runner's measure: the sum of each one's VmHWM)."""
    me = os.getpid()
    return sum(max(_status_bytes(p, "VmHWM"), _status_bytes(p, "VmRSS")) for p in [me] + _descendants(me))


def _torch():
    return sys.modules.get("torch")


def _trial_startup(first_mark):
    """Seconds from the trial's start (AUTOTUNE_TRIAL_START, Unix seconds, set by
    the tuner as it launches the command) to `first_mark` (time.time() at the
    meter's first mark): the shell, a launcher, imports, CUDA's start, building
    the model and the loader. None outside a tuner or before any mark."""
    raw = os.environ.get("AUTOTUNE_TRIAL_START")
    if first_mark is None or not raw:
        return None
    try:
        return max(0.0, first_mark - float(raw))
    except ValueError:
        return None


def _int_env(name):
    try:
        return int(os.environ.get(name, "0") or 0)
    except ValueError:
        return 0


def _cuda_in_use():
    torch = _torch()
    try:
        return torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized()
    except Exception:  # a broken driver must not break the measurement
        return False


def _sync():
    if _cuda_in_use():
        _torch().cuda.synchronize()


def _samples_in(batch, default):
    """Samples in a batch: the leading dimension of its first tensor-like part."""
    item = batch
    for _ in range(4):
        if isinstance(item, dict) and item:
            item = next(iter(item.values()))
        elif isinstance(item, (list, tuple)) and item and not isinstance(item[0], (int, float)):
            item = item[0]
        else:
            break
    shape = getattr(item, "shape", None)
    if shape is not None and len(shape) > 0:
        return int(shape[0])
    if isinstance(item, (list, tuple)):
        return len(item)
    if default:
        return int(default)
    raise ValueError("autotune_trial: cannot tell how many samples a batch holds; pass samples= to batches()")


# ----------------------------------------------------------------- results

def write_result(result):
    """Writes `result` to $AUTOTUNE_RESULT (temp file + rename) and prints it
    as one JSON line."""
    text = json.dumps(result, sort_keys=True)
    path = os.environ.get("AUTOTUNE_RESULT")
    if path:
        _write_atomically(path, text + "\n")
    print(text, flush=True)


def _workers_idle(it):
    """Whether a PyTorch multi-worker DataLoader iterator, just after handing
    out a batch, holds every other batch in flight already prepared: its
    workers wait for work (the built-in harness's "queue found full").
    None where it cannot tell (no workers, another loader, another PyTorch)."""
    try:
        outstanding = it._tasks_outstanding
        workers = it._num_workers
        if not workers or outstanding is None:
            return None
        ready = it._data_queue.qsize()  # results not yet taken (NotImplementedError on macOS)
        ready += sum(1 for v in it._task_info.values() if len(v) == 2)  # arrived out of order
    except Exception:  # private attributes: best effort only
        return None
    # The batch just handed out was replaced by a new task that no worker can
    # have finished yet: all the others ready is as full as it gets.
    return outstanding > 1 and ready >= outstanding - 1


def _inline_loader(it):
    """Whether `it` is a PyTorch DataLoader iterator that loads each batch in
    the calling process (num_workers=0): nothing is ever prepared ahead, so
    there is no backlog for the warm-up to outlast. False where it cannot tell."""
    try:
        return it._num_workers == 0 and hasattr(it, "_dataset_fetcher")
    except Exception:  # private attributes: best effort only
        return False


def _is_cuda_oom(exc):
    torch = _torch()
    oom_type = getattr(getattr(torch, "cuda", None), "OutOfMemoryError", None) if torch else None
    if oom_type is not None and isinstance(exc, oom_type):
        return True
    return isinstance(exc, RuntimeError) and "CUDA out of memory" in str(exc)


# ----------------------------------------------------------------- the meter

class Meter:
    """Warm-up, timed windows and the stopping rule around a training loop.

    Use ``batches(loader)`` for a loop you write, or the two marks
    ``batch_ready()`` (the batch is in hand: waiting ends) and
    ``step_done(samples)`` (the step's work is done) from a framework's hooks.
    ``done`` turns true when the measurement is complete.

    ``p``: the trial's Params (reads batch_size, num_workers, prefetch_factor
    for the warm-up); keywords override RULE's values.

    ``pause()`` and ``resume()`` bracket work that is not training (an
    evaluation, a checkpoint, a log write): the time between them is neither
    data wait nor inside a timed window, and counts toward neither the
    warm-up nor ``max_s`` (the result's ``paused_seconds`` says how much
    there was). ``fail(reason)`` ends the measurement as a failed trial.
    A loop that ends before the rule has (``finish()`` or the end of the
    ``with`` block first, a one-shot loader run out) is an ``error`` whose
    reason names the steps it had and the steps the measurement needs: a
    partial measurement would favour the configurations whose steps are slow
    enough to finish it.
    """

    def __init__(self, p=None, *, batch_size=None, num_workers=None, prefetch_factor=None, stop_below=None,
                 data_parallel_size=None, **rule):
        p = p or {}
        unknown = set(rule) - set(RULE)
        if unknown:
            raise TypeError(f"autotune_trial.Meter: unknown option(s) {sorted(unknown)}; known: {sorted(RULE)}")
        self.rule = dict(RULE, **rule)
        if int(self.rule["fewest_windows"]) < 3:
            raise ValueError("autotune_trial.Meter: fewest_windows must be at least 3")
        self.batch_size = batch_size if batch_size is not None else p.get("batch_size")
        workers = num_workers if num_workers is not None else p.get("num_workers", 0)
        prefetch = prefetch_factor if prefetch_factor is not None else p.get("prefetch_factor", 2)
        # Batches prepared before the first step: the queues plus one in each worker's hands.
        self.warmup_min_steps = max(1, int(workers or 0) * (int(prefetch or 2) + 1))
        # The trial's own num_workers knob at 0: its DataLoader makes each
        # batch in the step, with no backlog to outlast (the callbacks, which
        # cannot see into a Trainer's loader, pass it to batch_ready).
        self.loads_inline = (num_workers is not None or "num_workers" in p) and int(workers or 0) == 0
        self.done = False
        self.result = None
        self.timed_span = None
        self._start = None
        self._wall_start = None   # time.time() at the first mark, for startup_seconds
        self._warm = False
        self._warmup_complete = True
        self._warmup_steps = 0
        self._warmup_end = None
        self._drained = False      # steps after the backlog's waited for their batches
        # Whether each of the last steps waited, over the span among which
        # three waits show a drained queue: workers that run in step hand over
        # their batches together, so after the backlog a wait comes once every
        # `workers` steps, never three in a row.
        self._recent_waits = collections.deque(maxlen=max(3, 2 * int(workers or 0) + 1))
        self._ahead = False        # steps after the backlog's found the workers idle, batches ready
        self._full_in_a_row = 0
        self._full = None          # what batch_ready() was told of the step's loader
        self._inline = False       # the loader prepares nothing ahead (batch_ready(inline=True))
        self._cpu0 = None
        self._last_end = None      # when the previous step's work ended
        self._ready = None         # when this step's batch arrived
        self._win = None           # the open window: [t0, samples, wait, steps]
        self._windows = []         # closed: (t0, t1, samples, wait)
        self._timed_steps = 0
        self._stopped_by_rsd = False
        self._stopped_on_scatter = False
        self._stopped_on_precision = False
        # Racing: the tuner's bar (samples/s) in AUTOTUNE_STOP_BELOW; a trial
        # surely below it stops early and reports raced (the harness's rule).
        if stop_below is None:
            try:
                stop_below = float(os.environ.get("AUTOTUNE_STOP_BELOW", "0") or 0)
            except ValueError:
                stop_below = 0.0
        self.stop_below = stop_below if stop_below and stop_below > 0 else 0.0
        self._raced = False
        # Under torch.distributed (see _finish): the ranks' samples summed,
        # where the rule ended on this rank, and steps counted for _agree().
        self.data_parallel_size = data_parallel_size
        self._dist = None
        self._local_end = None
        self._local_times = None   # os.times() at _local_end
        self._steps = 0
        self._capped = False       # ended by max_s
        # Pauses (pause()/resume()): every rule reads _clock(), perf_counter()
        # less the paused seconds; the windows keep their perf_counter spans too.
        self._paused_total = 0.0
        self._paused_at = None     # perf_counter() where the open pause began
        self._cpu_at_pause = None  # os.times() at a pause after the warm-up
        self._paused_cpu = 0.0     # CPU seconds spent in pauses after the warm-up
        self._spans = []           # each closed window's (perf_counter start, end)

    # -- marks

    def start(self):
        """Starts the clock (the first mark does it if you do not)."""
        if self._start is None:
            self._start = self._last_end = self._clock()
            self._wall_start = time.time()

    @property
    def paused(self):
        return self._paused_at is not None

    def pause(self, at=None):
        """From now (or from `at`, an earlier time.perf_counter() reading, no
        earlier than the last mark) the time is not counted: neither data wait
        nor a window's, neither warm-up nor ``max_s``. Pausing now first waits
        for queued CUDA work, which belongs to the steps before. Idempotent;
        nothing before the first mark or after the end."""
        if self.done or self._start is None or self._paused_at is not None:
            return
        if at is None:
            _sync()
        now = time.perf_counter()
        last_mark = max(self._last_end, self._ready if self._ready is not None else self._last_end)
        at = now if at is None else min(max(at, last_mark + self._paused_total), now)
        self._paused_at = at
        if self._cpu0 is not None:
            self._cpu_at_pause = os.times()

    def resume(self, at=None):
        """Counting again from now, or from `at` (a time.perf_counter()
        reading, not before the pause began), for a framework that only says
        where the paused work ended once the next step begins. The next mark
        resumes a pause left open."""
        if self._paused_at is None:
            return
        now = time.perf_counter()
        at = now if at is None else min(max(at, self._paused_at), now)
        self._paused_total += at - self._paused_at
        self._paused_at = None
        if self._cpu_at_pause is not None:
            t, c = os.times(), self._cpu_at_pause
            self._paused_cpu += (t.user + t.system) - (c.user + c.system)
            self._cpu_at_pause = None

    def _clock(self):
        """time.perf_counter() less the paused seconds (frozen while paused)."""
        if self._paused_at is not None:
            return self._paused_at - self._paused_total
        return time.perf_counter() - self._paused_total

    def batch_ready(self, workers_idle=None, inline=False):
        """The next batch is in hand: the time since the last step ended was data wait.

        ``workers_idle``: whether the loader's workers had every other batch
        in flight prepared (None: unknown), for the warm-up's rule.
        ``inline``: the loader made this batch in this process (a DataLoader
        with num_workers=0): nothing was prepared ahead, there is no backlog."""
        self.resume()
        self.start()
        self._ready = self._clock()
        self._full = workers_idle
        self._inline = self._inline or inline

    def step_done(self, samples=None):
        """One step (micro-batch) of `samples` samples is done. Returns `done`."""
        if self.done:
            return True
        self.resume()
        if self._local_end is None:
            self._step(samples)
        self._steps += 1
        self._agree()
        return self.done

    def _step(self, samples):
        if samples is None:
            samples = self.batch_size
            if not samples:
                raise ValueError("autotune_trial: step_done() needs samples= (no batch_size known)")
        self.start()
        now = self._clock()
        ready = self._ready if self._ready is not None else self._last_end
        wait = max(0.0, ready - self._last_end)
        self._ready = None
        self._full, full_mark = None, self._full
        r = self.rule
        if not self._warm:
            self._warmup_steps += 1
            elapsed = now - self._start
            # An inline loader holds no backlog: every step is its own loading,
            # as the built-in harness counts num_workers=0 (drained from the start).
            min_steps = 1 if self._inline else self.warmup_min_steps
            # Three waits among the last 2 x workers + 1 steps (three in a row
            # inline): one long wait can be this process descheduled.
            # Only after the steps the backlog holds: before, a wait is the workers starting.
            waited = self._inline or (self._warmup_steps > min_steps
                                      and wait > r["drained_wait_share"] * (now - self._last_end))
            self._recent_waits.append(waited)
            if r["warmup_until_drained"] and sum(self._recent_waits) >= 3:
                self._drained = True
            # Workers idle with every other batch ready, from the second step on:
            # the batch requested after the previous step is then already made,
            # so the workers keep the trainer's pace by themselves, whatever
            # backlog is left (which then cannot inflate the figure). Evidence
            # from this step, not from the backlog: no need to outlast it.
            full = self._warmup_steps >= 2 and full_mark is True
            self._full_in_a_row = self._full_in_a_row + 1 if full else 0
            if r["warmup_until_drained"] and self._full_in_a_row >= 3:
                self._ahead = True
            settled = self._drained or self._ahead
            long_enough = elapsed >= r["warmup_s"] or (settled and elapsed >= r["warmup_floor_s"])
            enough = self._warmup_steps >= (1 if self._ahead else min_steps) and long_enough
            cut = elapsed >= 0.5 * r["max_s"]
            if enough or cut:
                self._warmup_complete = enough
                self._drained = self._drained and enough and elapsed < r["warmup_s"]
                self._ahead = self._ahead and not self._drained and enough and elapsed < r["warmup_s"]
                self._warm = True
                _sync()
                now = self._clock()
                self._warmup_end = now
                self._cpu0 = os.times()
                self._win = [now, 0, 0.0, 0, now + self._paused_total]
            self._last_end = now
            return False
        w = self._win
        w[1] += samples
        w[2] += wait
        w[3] += 1
        self._timed_steps += 1
        full = w[3] >= r["window_min_steps"] and now - w[0] >= r["window_s"]
        # The cap ends a window early only once one window is complete; that
        # short window is dropped (it would only add noise).
        capped = now - self._start >= r["max_s"] and self._windows
        if full or capped:
            _sync()
            now = self._clock()
            if full:
                self._windows.append((w[0], now, w[1], w[2]))
                self._spans.append((w[4], now + self._paused_total))
            k = r["rsd_windows"]
            all_rates = [s / (t1 - t0) for t0, t1, s, _ in self._windows]
            if full and r["target_ci90"] and precise_enough(all_rates, r["target_ci90"], k, r["fewest_windows"]):
                self._stopped_on_precision = True
                self._finish(now)
            elif full and not r["target_ci90"] and spread_settled(all_rates, r["target_rsd"], k, r["fewest_windows"]):
                self._stopped_by_rsd = True
                self._finish(now)
            elif full and self.stop_below and surely_below(all_rates, self.stop_below / self._ranks_summed()):
                self._raced = True
                self._finish(now)
            elif (full and not r["target_ci90"] and r["stop_on_scatter"] and self._warmup_complete and k >= 3
                  and len(all_rates) >= k and not drifting(all_rates[-k:])):
                self._stopped_on_scatter = True
                self._finish(now)
            elif now - self._start >= r["max_s"]:
                self._capped = True
                self._finish(now)
            else:
                self._win = [now, 0, 0.0, 0, now + self._paused_total]
        self._last_end = now
        return self.done

    def batches(self, loader, samples=None):
        """Yields batches from `loader` until the measurement is complete,
        starting the loader again (a new epoch) if it runs out first.

        `samples`: samples per batch, a number or a function of the batch
        (default: the leading dimension of the batch's first tensor)."""
        self.start()
        while not self.done:
            it = iter(loader)
            got = False
            while not self.done:
                try:
                    batch = next(it)
                except StopIteration:
                    break
                if self._warm:
                    self.batch_ready()
                else:
                    # An iterator's first batch finds the tasks it issued at its
                    # start, made before it: a stock, not the workers' pace.
                    self.batch_ready(_workers_idle(it) if got else None, inline=_inline_loader(it))
                got = True
                yield batch
                n = samples(batch) if callable(samples) else samples
                self.step_done(n if n is not None else _samples_in(batch, self.batch_size))
            if not got or it is loader:  # empty, or a one-shot iterator: it cannot start again
                if not self.done:
                    self._end_early("the loader ran out", "give it more batches (a loader that can start "
                                    "again is started again: a new epoch)", exhausted=True)
                break

    # -- the result

    def _finish(self, now):
        """The rule's end. Under torch.distributed every rank must leave the
        loop at the same step (a rank gone mid-step leaves the others blocked
        in the gradients' all-reduce): the end waits for _agree()."""
        if self.done:
            return
        if self._local_end is None and self._distributed() is not None:
            self._local_end = now
            self._local_times = os.times()
            return
        self._conclude(now)

    def _distributed(self):
        """(torch.distributed, rank, world size) once a process group of more
        than one rank is up (never imports torch); None otherwise."""
        if self._dist is None:
            torch = _torch()
            try:
                d = torch.distributed if torch is not None else None
                if d is not None and d.is_available() and d.is_initialized() and d.get_world_size() > 1:
                    self._dist = (d, d.get_rank(), d.get_world_size())
            except Exception:  # a half-made process group: measure this rank alone
                return None
        return self._dist

    def _ranks_summed(self):
        """The ranks whose samples add up to the job's: data_parallel_size, else the world size."""
        d = self._distributed()
        if d is None:
            return 1
        return self.data_parallel_size or d[2]

    def _agree(self):
        """Every _AGREE_EVERY steps, at the same step on every rank: rank 0's
        rule ending ends the measurement on all of them."""
        d = self._distributed()
        if d is None or self.done or self._steps % _AGREE_EVERY:
            return
        dist, rank, _ = d
        torch = _torch()
        device = "cpu"
        if dist.get_backend() == "nccl":
            # This rank's GPU: LOCAL_RANK where it names a visible device (many
            # scripts never call set_device, so current_device() would be 0 on
            # every rank, which NCCL refuses), else the current device.
            local = _int_env("LOCAL_RANK")
            device = torch.device("cuda", local if local < torch.cuda.device_count() else torch.cuda.current_device())
        flag = torch.tensor([1.0 if rank == 0 and self._local_end is not None else 0.0], device=device)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        if flag.item() > 0:
            self._conclude(self._clock())

    def _conclude(self, now):
        """The result, as of `now`; where the rule had ended on this rank first
        (_local_end), as of that end, whatever came after it."""
        if self.done:
            return
        if self._local_end is not None:
            now = self._local_end
        self.done = True
        r = self.rule
        k = r["rsd_windows"]
        rates = [s / (t1 - t0) for t0, t1, s, _ in self._windows]
        first = counted_from(rates, k) if r["target_ci90"] else max(0, len(rates) - k)
        last, last_rates = self._windows[first:], rates[first:]
        res = {}
        if last:
            secs = sum(t1 - t0 for t0, t1, _, _ in last)
            res["throughput"] = sum(s for _, _, s, _ in last) / secs
            res["throughput_rsd"] = _rsd(last_rates)
            res["mean_windows"] = len(last)
            if len(last) >= 2:  # +-this share of the mean at 90% confidence
                res["throughput_ci90"] = ci90(last_rates)
            wait = sum(w for _, _, _, w in last)
            res["data_wait_fraction"] = min(1.0, max(0.0, wait / secs))
            res["compute_busy"] = 1.0 - res["data_wait_fraction"]
            self.timed_span = (self._spans[-len(last)][0], self._spans[-1][1])  # perf_counter times counted
        else:
            res["status"] = "error"
            res["reason"] = "no timed window completed"
        res["windows"] = len(self._windows)
        res["stopped_by_rsd"] = 1 if self._stopped_by_rsd else 0
        if self._stopped_by_rsd and len(self._windows) < r["rsd_windows"]:
            res["settled_early"] = 1
        if r["target_ci90"]:
            res["target_ci90"] = r["target_ci90"]
        if self._stopped_on_precision:
            res["stopped_on_precision"] = 1
            if len(last) <= 10:  # chosen for its low spread: the tuner reads the spread as a bound
                res["settled_early"] = 1
        if self._stopped_on_scatter:
            res["stopped_on_scatter"] = 1
        if self._capped:
            res["stopped_by_cap"] = 1
        if self._raced:
            res["raced"] = 1
        res["warmup_complete"] = 1 if self._warmup_complete and self._warm else 0
        res["warmup_steps"] = self._warmup_steps
        res["warmup_drained"] = 1 if self._drained and self._warm else 0
        res["warmup_ahead"] = 1 if self._ahead and self._warm else 0
        if self._warmup_end is not None:
            res["warmup_seconds"] = self._warmup_end - self._start
        res["timed_steps"] = self._timed_steps
        # Wall seconds from the first mark, pauses included (paused_seconds).
        res["measure_seconds"] = now - self._start + self._paused_total if self._start is not None else 0.0
        if self._paused_total > 0:
            res["paused_seconds"] = self._paused_total
        startup = _trial_startup(self._wall_start)
        if startup is not None:
            res["startup_seconds"] = startup
        if self._cpu0 is not None and self._warmup_end is not None and now > self._warmup_end:
            t = self._local_times if self._local_times is not None else os.times()
            cpu = (t.user + t.system) - (self._cpu0.user + self._cpu0.system) - self._paused_cpu
            res["cpu_cores"] = max(0.0, cpu) / (now - self._warmup_end)
        ram = host_bytes()
        if ram:
            res["ram_bytes"] = ram
        if _cuda_in_use():
            torch = _torch()
            res["vram_bytes"] = torch.cuda.max_memory_reserved()
        d = self._distributed()
        if d is not None:
            res["world_size"] = d[2]
            if "throughput" in res:  # this rank's pace; the job moves the data-parallel ranks' sum
                res["throughput_per_rank"] = res["throughput"]
                res["throughput"] *= self._ranks_summed()
            # The ranks on this node share its memory (torchrun says how many).
            local = _int_env("LOCAL_WORLD_SIZE") or _int_env("OMPI_COMM_WORLD_LOCAL_SIZE")
            if ram and local > 1:
                res["ram_bytes_per_rank"] = ram
                res["ram_bytes"] = ram * local
        self.result = res

    def finish(self):
        """Ends the measurement now and returns the result: where the loop
        ended before the rule did, an ``error`` naming the steps it had and
        needed (see the class)."""
        if not self.done:
            self._end_early("the loop ended", "let the meter end it (meter.done, or batches(), which starts the "
                            "loader again)")
        return self.result

    def fail(self, reason, status="error"):
        """Ends the measurement as a failed trial: ``report()`` writes
        ``{"status": status, "reason": reason}`` (a failure found after the
        rule ended still fails the trial)."""
        self.resume()
        self.done = True
        self.result = {"status": status, "reason": reason, "steps": self._steps, "windows": len(self._windows)}

    def _steps_needed(self, now, steps):
        """(least, most, seconds a step, warm-up steps, window steps): the
        steps the rule needs at the pace so far: the warm-up, then
        fewest_windows windows at the least, the time cap at the most. None
        before the first step."""
        if steps <= 0 or self._start is None or now <= self._start:
            return None
        pace = (now - self._start) / steps
        r = self.rule
        if self._warm:
            warm = self._warmup_steps
        else:
            settled = r["warmup_until_drained"] and (self._drained or self._ahead or self._inline)
            warm_s = r["warmup_floor_s"] if settled else r["warmup_s"]
            warm = max(1 if self._inline else self.warmup_min_steps, 3 if self._inline else 1, _steps_in(warm_s, pace))
            warm = min(warm, max(1, _steps_in(0.5 * r["max_s"], pace)))  # the warm-up's cut
        window = max(int(r["window_min_steps"]), _steps_in(r["window_s"], pace))
        least = warm + int(r["fewest_windows"]) * window
        most = max(least, _steps_in(r["max_s"], pace) + window)
        return least, most, pace, warm, window

    def _end_early(self, what, advice, exhausted=False, per_step=1):
        """The loop (`what`: "the training ended") stopped before the rule did:
        an error whose reason names the steps it had and needs, and `advice`
        (formatted with {least} and {most}). `per_step`: micro-batches per step
        of the framework (Lightning's accumulate_grad_batches), so that the
        counts read as its max_steps does."""
        if self.done:
            return
        if self._local_end is not None:  # this rank's rule had ended: complete
            self._conclude(self._clock())
            return
        now = self._clock()
        batches = self._warmup_steps + self._timed_steps
        per_step = max(1, int(per_step or 1))

        def steps(n, up=False):
            n = -(-n // per_step) if up else n // per_step
            return f"{n} step{'' if n == 1 else 's'}"

        need = self._steps_needed(now, batches)
        if need is None:
            reason = f"{what} before its first step: nothing was measured"
            least = most = None
        else:
            least, most, pace, warm, window = need
            reason = (f"{what} after {steps(batches)}, before the measurement was complete: it needs at least "
                      f"{steps(least, True)} at this pace ({1000 * pace * per_step:.0f} ms a step; a warm-up of "
                      f"{steps(warm, True)}, then {int(self.rule['fewest_windows'])} timed windows of "
                      f"{steps(window, True)}) and at most {steps(most, True)} (its {self.rule['max_s']:g} s cap)")
            least, most = -(-least // per_step), -(-most // per_step)
        if advice and least is not None:
            reason += ": " + advice.format(least=least, most=most)
        self.done = True
        res = {"status": "error", "reason": reason, "steps": batches // per_step, "warmup_steps": self._warmup_steps,
               "windows": len(self._windows)}
        if least is not None:
            res["steps_needed"] = least
            res["steps_needed_at_most"] = most
        if exhausted:
            res["loader_exhausted"] = 1
        if self._paused_total > 0:
            res["paused_seconds"] = self._paused_total
        self.result = res

    def report(self):
        """Writes the result (see write_result); run by hand, also a summary.
        Under torch.distributed only rank 0 writes: it speaks for the job."""
        res = self.finish()
        d = self._dist
        rank = d[1] if d is not None else _int_env("RANK")
        if rank != 0:
            return res
        write_result(res)
        if "AUTOTUNE_TRIAL" not in os.environ:
            print(summary(res), file=sys.stderr, flush=True)
        return res

    # -- as a context manager: the result on exit, failures as statuses

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc is None:
            self.report()
            return False
        # A memory failure is written as its status. Alone, the script then
        # ends cleanly; under torch.distributed the exception goes on, so the
        # rank exits non-zero and the launcher (torchrun) stops the other ranks,
        # which would otherwise wait in their next collective until a timeout.
        alone = self._distributed() is None
        if _is_cuda_oom(exc):
            write_result({"status": "oom", "reason": str(exc).splitlines()[0] if str(exc) else "CUDA out of memory"})
            return alone
        if isinstance(exc, MemoryError):
            write_result({"status": "host_oom", "reason": f"MemoryError: {exc}"})
            return alone
        return False  # any other exception: the traceback, and an `error` trial


def _steps_in(seconds, pace):
    """Steps of `pace` seconds that fill `seconds` (a rounding error short of a whole one is one)."""
    return math.ceil(seconds / pace - 1e-9)


# Under torch.distributed, the ranks agree on the end every this many steps:
# one tiny all-reduce (a device sync with NCCL) per 4 steps.
_AGREE_EVERY = 4

# One-sided 95% Student t quantiles for 1..20 degrees of freedom, as the
# harness's (workloads/measure.cpp student_t95).
_T95 = (6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812,
        1.796, 1.782, 1.771, 1.761, 1.753, 1.746, 1.740, 1.734, 1.729, 1.725)


def _t95(dof):
    """The one-sided 95% quantile for `dof` degrees of freedom; past 20, each
    span's largest, so never below the true one."""
    dof = max(1, dof)
    if dof <= 20:
        return _T95[dof - 1]
    return 1.721 if dof <= 30 else 1.697 if dof <= 60 else 1.671 if dof <= 120 else 1.658


def surely_below(rates, bar, floor_rsd=0.02):
    """Whether windows with these rates are below `bar` with 95% confidence
    (the harness's racing rule, workloads/measure.hpp): the one-sided t upper
    bound of their mean, the spread taken as at least floor_rsd of the mean,
    is under the bar. Needs two windows or more."""
    n = len(rates)
    if n < 2 or bar <= 0:
        return False
    mean = sum(rates) / n
    sd = max(_rsd(rates), floor_rsd) * mean
    return mean + _t95(n - 1) * sd / math.sqrt(n) < bar


# Two-sided 95% Student t quantiles for 1..10 degrees of freedom.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228)


def drifting(rates):
    """Whether the windows' rates trend (the harness's rule,
    workloads/measure.hpp): the least-squares slope over their index differs
    from 0 at 95% (two-sided t, n - 2 degrees of freedom). Needs 3 or more."""
    n = len(rates)
    if n < 3:
        return False
    xm = (n - 1) / 2
    ym = sum(rates) / n
    sxx = sum((i - xm) ** 2 for i in range(n))
    slope = sum((i - xm) * (y - ym) for i, y in enumerate(rates)) / sxx
    sse = sum((y - ym - slope * (i - xm)) ** 2 for i, y in enumerate(rates))
    dof = n - 2
    t = _T975[dof - 1] if dof <= 10 else _T975[-1]
    return abs(slope) > t * math.sqrt(sse / dof / sxx)


# Lower 10% quantiles of chi-squared with 2..9 degrees of freedom.
_CHI2_LOW10 = (0.2107, 0.5844, 1.0636, 1.6103, 2.2041, 2.8331, 3.4895, 4.1682)


def spread_settled(rates, target_rsd, rsd_windows=5, fewest_windows=3):
    """The stop on the spread (the harness's rule, workloads/measure.hpp):
    with `rsd_windows` windows or more, the last ones spread by at most
    `target_rsd`; with m of them, fewest_windows <= m < rsd_windows (m >= 3,
    m <= 10), the 90% upper bound on their true spread, rsd * sqrt((m-1) /
    chi2_0.10(m-1)), over sqrt(m), is at most target_rsd / sqrt(rsd_windows)."""
    n, k = len(rates), max(2, rsd_windows)
    if n >= k:
        return _rsd(rates[-k:]) <= target_rsd
    if n < max(3, fewest_windows) or n > 10:
        return False
    bound = _rsd(rates) * math.sqrt((n - 1) / _CHI2_LOW10[n - 3])
    return bound / math.sqrt(n) <= target_rsd / math.sqrt(k)


def counted_from(rates, rsd_windows=5):
    """Where the windows a result counts begin (the harness's rule,
    workloads/measure.hpp): all of them, unless 5 or more trend (drifting),
    then from the first start whose windows to the end do not, keeping at
    least `rsd_windows` (a warm-up effect still fading is left behind; a
    trend to the end keeps the last `rsd_windows`)."""
    n, k = len(rates), max(3, rsd_windows)
    if n < k:
        return 0
    for start in range(n - k + 1):
        if not drifting(rates[start:]):
            return start
    return n - k


def ci90(rates):
    """The 90% confidence half-width of the windows' mean rate, relative to
    it (one-sided 95% t, n - 1 degrees of freedom); None under 2 windows."""
    n = len(rates)
    return _t95(n - 1) * _rsd(rates) / math.sqrt(n) if n >= 2 else None


def precise_enough(rates, target_ci90, rsd_windows=5, fewest_windows=3):
    """The stop on precision (the harness's rule, workloads/measure.hpp): the
    windows the result counts (counted_from), at least `fewest_windows` of
    them, give its mean rate +-target_ci90 or better at 90%."""
    counted = rates[counted_from(rates, rsd_windows):]
    return len(counted) >= max(3, fewest_windows) and ci90(counted) <= target_ci90


def _stopped_by(res):
    if res.get("stopped_on_precision"):
        return f"stopped at +-{100 * res['target_ci90']:.3g}% (90% confidence)"
    if res.get("stopped_by_rsd"):
        return "stopped on the spread"
    if res.get("stopped_on_scatter"):
        return "stopped after 5 windows that scatter without a trend"
    if res.get("raced"):
        return "raced: below the tuner's bar"
    if res.get("stopped_by_cap"):
        return "stopped by the time cap"
    return "stopped with rank 0's measurement"


def _rsd(values):
    n = len(values)
    if n < 2:
        return 0.0
    mean = sum(values) / n
    if mean == 0:
        return 0.0
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) / abs(mean)


def summary(res):
    """A readable line or two for a run by hand."""
    if "throughput" not in res:
        return f"autotune_trial: {res.get('status', 'error')}: {res.get('reason', '')}"
    wait = res["data_wait_fraction"]
    bound = "loader-bound: more workers, prefetch or pinned memory may help" if wait > 0.2 else \
        "compute-bound: the loader keeps up"
    ci = res.get("throughput_ci90")
    text = (f"autotune_trial: {res['throughput']:.1f} samples/s "
            f"({f'+-{100 * ci:.1f}% at 90%, ' if ci is not None else ''}spread {100 * res['throughput_rsd']:.1f}% over "
            f"{res['mean_windows']} windows, after {res['warmup_steps']} warm-up steps"
            f"{' (the queue ran dry)' if res.get('warmup_drained') else ''}"
            f"{' (the workers kept ahead)' if res.get('warmup_ahead') else ''}; "
            f"{_stopped_by(res)})\n"
            f"autotune_trial: waiting for data {100 * wait:.0f}% of the time ({bound})")
    if "vram_bytes" in res:
        text += f"; device memory {res['vram_bytes'] / 2**20:.0f} MiB"
    if "ram_bytes" in res:
        text += f"; host memory {res['ram_bytes'] / 2**20:.0f} MiB"
    return text


# ----------------------------------------------------------------- the knobs, for the frameworks

# The precision knob's values, and what frameworks call the same modes.
_PRECISIONS = {
    "fp32": "fp32", "32": "fp32", "32-true": "fp32", "float32": "fp32",
    "tf32": "tf32",
    "fp16": "fp16", "16": "fp16", "16-mixed": "fp16", "float16": "fp16",
    "bf16": "bf16", "bf16-mixed": "bf16", "bfloat16": "bf16",
}
# What a Lightning Trainer reports running (trainer.precision), as the knob's names.
_LIGHTNING_RAN = {
    "32-true": "fp32", "32": "fp32", "16-mixed": "fp16", "16": "fp16", "16-true": "fp16",
    "bf16-mixed": "bf16", "bf16": "bf16", "bf16-true": "bf16", "64-true": "fp64", "64": "fp64",
}


def _precision(p):
    """The trial's precision knob as fp32, tf32, fp16 or bf16; None where it has none."""
    if not p or "precision" not in p:
        return None
    name = _PRECISIONS.get(str(p["precision"]).strip().lower())
    if name is None:
        raise ValueError(f"autotune_trial: precision {p['precision']!r} is not one of fp32, tf32, fp16, bf16")
    return name


def _tf32_gpu():
    """Whether this process's CUDA device computes in TF32 (compute capability 8.0 or newer)."""
    torch = _torch()
    try:
        return bool(torch is not None and torch.version.cuda and torch.cuda.is_available()
                    and torch.cuda.get_device_capability()[0] >= 8)
    except Exception:  # a broken driver: no TF32
        return False


def _matmul_tf32():
    """Whether CUDA float32 matmuls may run in TF32. torch 2.9 and later say it
    in fp32_precision ("none" defers to torch.backends'), and raise on the
    legacy allow_tf32 flag once the new setting was used (transformers 5
    uses it), so the new one is read first."""
    torch = _torch()
    try:
        new = getattr(torch.backends.cuda.matmul, "fp32_precision", None)
        if new == "none":
            new = getattr(torch.backends, "fp32_precision", None)
        if new in ("tf32", "ieee"):
            return new == "tf32"
        with warnings.catch_warnings():  # torch 2.9 deprecates the flag in favour of fp32_precision
            warnings.simplefilter("ignore")
            return bool(torch.backends.cuda.matmul.allow_tf32)
    except Exception:
        return False


def _set_matmul_tf32(on):
    """TF32 matmuls on or off for this trial ("high" or "highest" float32
    matmul precision), so that a warm process does not keep an earlier
    trial's."""
    torch = _torch()
    if torch is not None and hasattr(torch, "set_float32_matmul_precision"):
        torch.set_float32_matmul_precision("high" if on else "highest")


def _loader_prefetch_default():
    """torch's DataLoader's own prefetch_factor default where it is a number:
    2 before torch 2.0, which takes only a number there; None since."""
    torch = _torch()
    try:
        default = inspect.signature(torch.utils.data.DataLoader.__init__).parameters["prefetch_factor"].default
    except Exception:
        return None
    return default if isinstance(default, int) else None


def _accepted(kw, cls, what):
    """`kw` less the keywords `cls` does not take (an older or newer release), said once on standard error."""
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return kw
    if any(q.kind is inspect.Parameter.VAR_KEYWORD for q in params.values()):
        return kw
    left = sorted(k for k in kw if k not in params)
    if left:
        print(f"autotune_trial: this {what} takes no {', '.join(left)}: left out", file=sys.stderr, flush=True)
    return {k: v for k, v in kw.items() if k in params}


# loader_arguments' keywords under TrainingArguments' names.
_HF_LOADER_KEYS = {"batch_size": "per_device_train_batch_size", "num_workers": "dataloader_num_workers",
                   "pin_memory": "dataloader_pin_memory", "prefetch_factor": "dataloader_prefetch_factor"}


def training_arguments(p):
    """Keywords for Hugging Face ``TrainingArguments`` from the trial's knobs
    in `p` (only those present)::

        args = transformers.TrainingArguments(output_dir="out", max_steps=10_000,
                                              **autotune_trial.training_arguments(p))

    batch_size -> per_device_train_batch_size, grad_accum ->
    gradient_accumulation_steps, num_workers -> dataloader_num_workers,
    pin_memory -> dataloader_pin_memory, prefetch_factor ->
    dataloader_prefetch_factor (only with num_workers > 0; there, without
    the knob, torch's own default where torch before 2.0 needs it written).
    precision: fp16 -> fp16=True, bf16 -> bf16=True, and tf32=True for tf32
    where the GPU computes in TF32 (compute capability 8.0 or newer); every
    other case passes tf32=False (so a warm process does not keep an earlier
    trial's TF32), fp16=False and bf16=False. On a CPU, or an older GPU,
    tf32 is not a precision: the trial runs fp32, and HFCallback reports it
    as an ``error`` (the precision asked is not the one that ran), as it
    does any other difference; transformers itself refuses fp16 on a CPU.

    transformers 4.36-4.38 over torch before 2.0 (Debian 12's 1.13): the
    Trainer passes prefetch_factor=None to the DataLoader, which such a torch
    refuses at 0 workers, and TrainingArguments refuses any other value
    there. HFCallback, given in ``Trainer(callbacks=[...])``, writes torch's
    own default (2) into that Trainer's arguments as it is made; by hand:
    ``args.dataloader_prefetch_factor = 2`` after TrainingArguments(...).
    Keywords the installed TrainingArguments does not take are left out (and
    said so); the precision check then reports what ran.
    """
    p = p or {}
    kw = {_HF_LOADER_KEYS[k]: v for k, v in loader_arguments(p).items()}
    if kw.get("dataloader_num_workers", 0) > 0 and "dataloader_prefetch_factor" not in kw:
        prefetch = _loader_prefetch_default()
        if prefetch is not None:
            kw["dataloader_prefetch_factor"] = prefetch
    if "grad_accum" in p:
        kw["gradient_accumulation_steps"] = int(p["grad_accum"])
    precision = _precision(p)
    if precision is not None:
        tf32 = precision == "tf32" and _tf32_gpu()
        kw.update(fp16=precision == "fp16", bf16=precision == "bf16", tf32=tf32)
        _set_matmul_tf32(tf32)  # whatever the installed TrainingArguments does with tf32=False
    try:
        import transformers
    except ImportError:
        return kw
    return _accepted(kw, transformers.TrainingArguments, "transformers' TrainingArguments")


def _lightning_major():
    for name in ("lightning", "pytorch_lightning"):
        mod = sys.modules.get(name)
        if mod is not None:
            try:
                return int(str(mod.__version__).split(".")[0])
            except (AttributeError, ValueError):
                pass
    return 2


def lightning_arguments(p):
    """Keywords for a Lightning ``Trainer`` from the trial's knobs in `p`
    (only those present)::

        trainer = lightning.Trainer(max_steps=10_000, callbacks=[autotune_trial.LightningCallback(p)],
                                    **autotune_trial.lightning_arguments(p))

    grad_accum -> accumulate_grad_batches; precision: fp32 and tf32 ->
    "32-true", fp16 -> "16-mixed", bf16 -> "bf16-mixed" (32, 16, "bf16"
    before Lightning 2.0). Lightning has no TF32 switch: for tf32 this sets
    torch.set_float32_matmul_precision("high") (TF32 matmuls) where the GPU
    computes in TF32, and "highest" for every other precision (so a warm
    process does not keep an earlier trial's TF32). On a CPU, tf32 runs fp32
    and Lightning turns 16-mixed into bf16-mixed (with a warning):
    LightningCallback reports either as an ``error``, the precision asked
    not being the one that ran.
    """
    p = p or {}
    kw = {}
    if "grad_accum" in p:
        kw["accumulate_grad_batches"] = int(p["grad_accum"])
    precision = _precision(p)
    if precision is not None:
        if _lightning_major() >= 2:
            names = {"fp32": "32-true", "tf32": "32-true", "fp16": "16-mixed", "bf16": "bf16-mixed"}
        else:
            names = {"fp32": 32, "tf32": 32, "fp16": 16, "bf16": "bf16"}
        kw["precision"] = names[precision]
        _set_matmul_tf32(precision == "tf32" and _tf32_gpu())
    return kw


def loader_arguments(p):
    """Keywords for a PyTorch ``DataLoader`` from the trial's knobs in `p`
    (only those present): batch_size, num_workers, pin_memory, and
    prefetch_factor only with num_workers > 0 (torch refuses it at 0)::

        loader = DataLoader(dataset, shuffle=True, **autotune_trial.loader_arguments(p))
    """
    p = p or {}
    kw = {}
    if "batch_size" in p:
        kw["batch_size"] = int(p["batch_size"])
    if "num_workers" in p:
        kw["num_workers"] = int(p["num_workers"])
        if kw["num_workers"] > 0 and "prefetch_factor" in p:
            kw["prefetch_factor"] = int(p["prefetch_factor"])
    if "pin_memory" in p:
        kw["pin_memory"] = bool(p["pin_memory"])
    return kw


# ----------------------------------------------------------------- the precision that ran

def _autocast_dtype(torch, device_type):
    """The dtype autocast computes in on `device_type`, or None where it is off."""
    try:
        if hasattr(torch, "get_autocast_dtype"):  # torch 2.4 and later
            return torch.get_autocast_dtype(device_type) if torch.is_autocast_enabled(device_type) else None
        if device_type == "cuda":
            return torch.get_autocast_gpu_dtype() if torch.is_autocast_enabled() else None
        if device_type == "cpu":
            return torch.get_autocast_cpu_dtype() if torch.is_autocast_cpu_enabled() else None
    except Exception:  # another device type, another torch
        pass
    return None


def _fp32_ran(device_type):
    """What float32 runs as on `device_type`: tf32 on a GPU that computes in
    TF32 with TF32 matmuls allowed, else fp32."""
    return "tf32" if device_type == "cuda" and _matmul_tf32() and _tf32_gpu() else "fp32"


def _dtype_precision(torch, dtype, device_type):
    name = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32", torch.float64: "fp64"}.get(
        dtype, str(dtype))
    return _fp32_ran(device_type) if name == "fp32" else name


class _PrecisionProbe:
    """The precision the model's first forward ran in: autocast's dtype where
    autocast is on for the weights' device, else the weights' dtype (tf32 for
    fp32 on a GPU that has TF32 with TF32 matmuls allowed). It hooks the leaf
    modules that hold weights: a hook on the model itself runs outside the
    autocast that accelerate wraps the model's forward in."""

    def __init__(self, model):
        self.ran = None
        self._handles = []
        if _torch() is None or not hasattr(model, "modules"):
            return
        for m in model.modules():
            if next(m.children(), None) is None and any(w.is_floating_point() for w in m.parameters(recurse=False)):
                self._handles.append(m.register_forward_pre_hook(self._hook))

    def _hook(self, module, inputs):
        if self.ran is None:
            torch = _torch()
            w = next(w for w in module.parameters(recurse=False) if w.is_floating_point())
            self.ran = _dtype_precision(torch, _autocast_dtype(torch, w.device.type) or w.dtype, w.device.type)

    def remove(self):
        for h in self._handles:
            h.remove()
        self._handles = []


def _precision_differs(asked, ran, how):
    """The reason a trial fails when the precision that ran (`how`: where that
    was seen) is not the one asked; None when they agree or one is unknown."""
    if asked is None or ran is None or asked == ran:
        return None
    why = f"precision {asked} was asked, but {ran} ran ({how})"
    if asked == "tf32":
        why += ": TF32 needs an NVIDIA GPU of compute capability 8.0 or newer"
    return why + "; the measurement would be another precision's"


# ----------------------------------------------------------------- framework callbacks

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


def _hf_args_precision(args):
    """The precision a Trainer's arguments ask for (where no forward was seen)."""
    if getattr(args, "fp16", False):
        return "fp16"
    if getattr(args, "bf16", False):
        return "bf16"
    return _fp32_ran(getattr(getattr(args, "device", None), "type", "cpu"))


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
            self.meter = Meter(p, **rule)
            self._asked = _precision(p)
            self._probe = None
            self._checked = False
            self._reported = False
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
    return HFCallback


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
            self.meter = Meter(p, **rule)
            self._asked = _precision(p)
            self._probe = None
            self._checked = False
            self._reported = False
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
    return LightningCallback


_lightning_classes = {}


def _make_lightning_callback():
    bases = tuple(m.Callback for m in _lightning_packages())
    if bases not in _lightning_classes:
        _lightning_classes[bases] = _make_lightning_class(bases)
    return _lightning_classes[bases]


def __getattr__(name):  # PEP 562: the callbacks exist only where their framework imports
    if name == "HFCallback":
        cls = globals()[name] = _make_hf_callback()
        return cls
    if name == "LightningCallback":  # not kept: its base follows what the script has imported
        return _make_lightning_callback()
    raise AttributeError(f"module 'autotune_trial' has no attribute {name!r}")
