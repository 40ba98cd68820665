"""The meter: warm-up, timed windows and the stop around a training loop."""

import collections
import math
import os
import sys
import time

from ._process import _int_env, _trial_startup, host_bytes
from ._ranks import add_rank_figures, device, node_id
from ._results import summary, write_result
from ._stop_rule import RULE, _rsd, ci90, counted_from, drifting, precise_enough, spread_settled, surely_below
from ._torch_env import _cuda_in_use, _inline_loader, _is_cuda_oom, _samples_in, _sync, _torch, _workers_idle


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
        flag = torch.tensor([1.0 if rank == 0 and self._local_end is not None else 0.0], device=device(dist))
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        if flag.item() > 0:
            self._conclude(self._clock(), together=True)

    def _conclude(self, now, together=False):
        """The result, as of `now`; where the rule had ended on this rank first
        (_local_end), as of that end, whatever came after it. `together`:
        every rank concludes at this step (_agree), so they can pool their
        figures (_pool_ranks)."""
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
            pooled = self._pool_ranks(res, ram) if together else None
            if pooled is not None:
                add_rank_figures(res, pooled, self._ranks_summed())
            else:  # this rank's alone: its pace, the node's memory as its times the ranks there
                if "throughput" in res:  # the job moves the data-parallel ranks' sum
                    res["throughput_per_rank"] = res["throughput"]
                    res["throughput"] *= self._ranks_summed()
                local = _int_env("LOCAL_WORLD_SIZE") or _int_env("OMPI_COMM_WORLD_LOCAL_SIZE")
                if ram and local > 1:
                    res["ram_bytes_per_rank"] = ram
                    res["ram_bytes"] = ram * local
        self.result = res

    def _pool_ranks(self, res, ram):
        """Every rank's (pace, data wait, host memory, node) as a list by
        rank, from one all-reduce (a rank fills its own row); None where the
        collective fails. Pace 0 and wait -1: the rank timed no window."""
        dist, rank, world = self._dist
        torch = _torch()
        try:
            rows = torch.zeros(world * 4, dtype=torch.float64, device=device(dist))
            mine = [res.get("throughput", 0.0), res.get("data_wait_fraction", -1.0), float(ram or 0), node_id()]
            rows[rank * 4:rank * 4 + 4] = torch.tensor(mine, dtype=torch.float64)
            dist.all_reduce(rows, op=dist.ReduceOp.SUM)
            flat = rows.cpu().tolist()
        except Exception:  # the figures are extra: this rank's own stand
            return None
        return [flat[k * 4:k * 4 + 4] for k in range(world)]

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
            # It ended before the rule did: it needs more than it had, whatever the pace says.
            least = max(least, batches + 1)
            most = max(most, least)
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
