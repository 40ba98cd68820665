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
3. Stop when the last 5 windows' throughputs have a relative standard
   deviation at or under ``target_rsd`` (0.05), or sooner, after 3 or 4
   windows (``fewest_windows``: 3), when even the 90% upper bound on their
   spread gives their mean the precision 5 windows at ``target_rsd`` give (a
   steady job: 3 windows within 1.26%, 4 within 1.97%), or when ``max_s``
   seconds (10, warm-up included) have passed; a window the cap cuts short
   is dropped. Windows that spread more than that with no trend among them
   (``stop_on_scatter``: the last 5 show no significant least-squares slope
   over their index, two-sided 95%, after a complete warm-up) stop after 5
   (``stopped_on_scatter: 1``): running on to the cap would report the same
   last 5 windows. The result is the last 5 windows' samples over their
   seconds (all of them when fewer).

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

Callbacks built on the same meter, defined only where their package imports:
``autotune_trial.HFCallback`` (Hugging Face ``Trainer``) and
``autotune_trial.LightningCallback`` (Lightning ``Trainer``).
"""

import atexit
import collections
import gc
import json
import math
import os
import sys
import time

__all__ = ["params", "Params", "trials", "Meter", "RULE", "write_result", "HFCallback", "LightningCallback"]

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
    while True:
        kept = set(_descendants(os.getpid()))  # children from before the trial (not its loader's)
        yield params(**defaults)
        trial = os.environ.get("AUTOTUNE_TRIAL", "")
        _release_trial(kept)
        _write_atomically(os.path.join(warm_dir, "ready-" + trial), "")
        message = _next_trial(warm_dir)
        if message is None:
            return
        for key in [k for k in os.environ if k.startswith("AUTOTUNE_") and k != "AUTOTUNE_WARM_DIR"]:
            del os.environ[key]
        os.environ.update({k: str(v) for k, v in message["env"].items()})
        _reset_peaks()  # the first trial keeps the start-up's peak: it paid it, as a cold trial does


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

    # -- marks

    def start(self):
        """Starts the clock (the first mark does it if you do not)."""
        if self._start is None:
            self._start = self._last_end = time.perf_counter()
            self._wall_start = time.time()

    def batch_ready(self, workers_idle=None, inline=False):
        """The next batch is in hand: the time since the last step ended was data wait.

        ``workers_idle``: whether the loader's workers had every other batch
        in flight prepared (None: unknown), for the warm-up's rule.
        ``inline``: the loader made this batch in this process (a DataLoader
        with num_workers=0): nothing was prepared ahead, there is no backlog."""
        self.start()
        self._ready = time.perf_counter()
        self._full = workers_idle
        self._inline = self._inline or inline

    def step_done(self, samples=None):
        """One step (micro-batch) of `samples` samples is done. Returns `done`."""
        if self.done:
            return True
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
        now = time.perf_counter()
        self.start()
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
                now = time.perf_counter()
                self._warmup_end = now
                self._cpu0 = os.times()
                self._win = [now, 0, 0.0, 0]
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
            now = time.perf_counter()
            if full:
                self._windows.append((w[0], now, w[1], w[2]))
            k = r["rsd_windows"]
            all_rates = [s / (t1 - t0) for t0, t1, s, _ in self._windows]
            if full and spread_settled(all_rates, r["target_rsd"], k, r["fewest_windows"]):
                self._stopped_by_rsd = True
                self._finish(now)
            elif full and self.stop_below and surely_below(all_rates, self.stop_below / self._ranks_summed()):
                self._raced = True
                self._finish(now)
            elif (full and r["stop_on_scatter"] and self._warmup_complete and k >= 3 and len(all_rates) >= k
                  and not drifting(all_rates[-k:])):
                self._stopped_on_scatter = True
                self._finish(now)
            elif now - self._start >= r["max_s"]:
                self._finish(now)
            else:
                self._win = [now, 0, 0.0, 0]
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
                    self._finish(time.perf_counter(), exhausted=True)
                break

    # -- the result

    def _finish(self, now, exhausted=False):
        """The rule's end. Under torch.distributed every rank must leave the
        loop at the same step (a rank gone mid-step leaves the others blocked
        in the gradients' all-reduce): the end waits for _agree()."""
        if self.done:
            return
        if self._local_end is None and self._distributed() is not None and not exhausted:
            self._local_end = now
            self._local_times = os.times()
            return
        self._conclude(now, exhausted)

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
            self._conclude(time.perf_counter())

    def _conclude(self, now, exhausted=False):
        """The result, as of `now`; where the rule had ended on this rank first
        (_local_end), as of that end, whatever came after it."""
        if self.done:
            return
        if self._local_end is not None:
            now, exhausted = self._local_end, False
        self.done = True
        r = self.rule
        k = r["rsd_windows"]
        last = self._windows[-k:]
        res = {}
        if last:
            secs = sum(t1 - t0 for t0, t1, _, _ in last)
            res["throughput"] = sum(s for _, _, s, _ in last) / secs
            res["throughput_rsd"] = _rsd([s / (t1 - t0) for t0, t1, s, _ in last])
            res["mean_windows"] = len(last)
            wait = sum(w for _, _, _, w in last)
            res["data_wait_fraction"] = min(1.0, max(0.0, wait / secs))
            res["compute_busy"] = 1.0 - res["data_wait_fraction"]
            self.timed_span = (last[0][0], last[-1][1])  # perf_counter times of the windows counted
        else:
            res["status"] = "error"
            res["reason"] = ("the loader ran out before the first timed window: make it longer than the warm-up "
                             f"({self._warmup_steps} steps)" if exhausted else "no timed window completed")
        res["windows"] = len(self._windows)
        res["stopped_by_rsd"] = 1 if self._stopped_by_rsd else 0
        if self._stopped_by_rsd and len(self._windows) < r["rsd_windows"]:
            res["settled_early"] = 1
        if self._stopped_on_scatter:
            res["stopped_on_scatter"] = 1
        if self._raced:
            res["raced"] = 1
        res["warmup_complete"] = 1 if self._warmup_complete and self._warm else 0
        res["warmup_steps"] = self._warmup_steps
        res["warmup_drained"] = 1 if self._drained and self._warm else 0
        res["warmup_ahead"] = 1 if self._ahead and self._warm else 0
        if self._warmup_end is not None:
            res["warmup_seconds"] = self._warmup_end - self._start
        res["timed_steps"] = self._timed_steps
        res["measure_seconds"] = now - self._start if self._start is not None else 0.0
        startup = _trial_startup(self._wall_start)
        if startup is not None:
            res["startup_seconds"] = startup
        if exhausted:
            res["loader_exhausted"] = 1
        if self._cpu0 is not None and self._warmup_end is not None and now > self._warmup_end:
            t = self._local_times if self._local_times is not None else os.times()
            cpu = (t.user + t.system) - (self._cpu0.user + self._cpu0.system)
            res["cpu_cores"] = cpu / (now - self._warmup_end)
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
        """Ends the measurement now (if the loop ended first) and returns the result."""
        if not self.done:
            self._conclude(time.perf_counter())
        return self.result

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


# Under torch.distributed, the ranks agree on the end every this many steps:
# one tiny all-reduce (a device sync with NCCL) per 4 steps.
_AGREE_EVERY = 4

# One-sided 95% Student t quantiles for 1..10 degrees of freedom.
_T95 = (6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812)


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
    t = _T95[n - 2] if n - 1 <= 10 else 1.75
    return mean + t * sd / math.sqrt(n) < bar


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


def _stopped_by(res):
    if res.get("stopped_by_rsd"):
        return "stopped on the spread"
    if res.get("stopped_on_scatter"):
        return "stopped after 5 windows that scatter without a trend"
    if res.get("raced"):
        return "raced: below the tuner's bar"
    return "stopped by the time cap"


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
    text = (f"autotune_trial: {res['throughput']:.1f} samples/s (spread {100 * res['throughput_rsd']:.1f}% over "
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


# ----------------------------------------------------------------- framework callbacks

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
        """

        def __init__(self, p=None, **rule):
            self.meter = Meter(p, **rule)
            self._reported = False

        def on_train_begin(self, args, state, control, **kwargs):
            self.meter.start()

        def on_step_begin(self, args, state, control, **kwargs):
            self.meter.batch_ready()

        def on_step_end(self, args, state, control, **kwargs):
            n = args.per_device_train_batch_size * args.gradient_accumulation_steps
            if self.meter.step_done(n):
                control.should_training_stop = True
            return control

        def on_train_end(self, args, state, control, **kwargs):
            if not self._reported:
                self._reported = True
                self.meter.report()

    return HFCallback


def _make_lightning_callback():
    try:
        import lightning.pytorch as pl  # Lightning 2.x
    except ImportError:
        import pytorch_lightning as pl  # the older package name

    class LightningCallback(pl.Callback):
        """Measures a Lightning Trainer's fit and stops it when complete.

            trainer = Trainer(..., callbacks=[autotune_trial.LightningCallback(p)])
        """

        def __init__(self, p=None, **rule):
            self.meter = Meter(p, **rule)
            self._reported = False

        def on_train_start(self, trainer, pl_module):
            self.meter.start()

        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
            self.meter.batch_ready()

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            if self.meter.step_done(_samples_in(batch, self.meter.batch_size)):
                trainer.should_stop = True

        def on_train_end(self, trainer, pl_module):
            if not self._reported:
                self._reported = True
                self.meter.report()

    return LightningCallback


_LAZY = {"HFCallback": _make_hf_callback, "LightningCallback": _make_lightning_callback}


def __getattr__(name):  # PEP 562: the callbacks exist only where their framework imports
    if name in _LAZY:
        cls = _LAZY[name]()
        globals()[name] = cls
        return cls
    raise AttributeError(f"module 'autotune_trial' has no attribute {name!r}")
