"""Warm trials under a launcher: a job started as N ranks (torchrun,
accelerate launch, torch.multiprocessing.spawn, a shell line) loops over
trials() in every rank, and each trial's hand-off reaches them all.

The design: rank 0 alone talks to autotune (the worker's `entered`,
`ready-<trial>`, `next.json` and `stop`, subprocess.hpp), and the ranks meet
at every hand-off through files in the worker's folder. Each rank writes
`rank-<n>-<rank>` when it reaches hand-off n (its release of the trial done);
rank 0, once every rank has, does its part with autotune and writes
`go-<n>.json`, which every other rank reads, never consumes. So every rank
runs every trial, with the same knobs, and none starts before all have
finished the last one (their loader workers gone), which is what autotune's
`ready` then says of the whole job.

Files rather than a broadcast over torch.distributed, because a file works
where a collective does not: before init_process_group (torchrun's ranks can
enter trials() first) and without torch; with no collective timeout to
outlast between trials (autotune may wait a minute for a quiet machine
before the next one, and NCCL's blocking wait would spin a GPU meanwhile);
with no device to choose for the message. A rank that dies is seen by its
launcher, which ends the job (torchrun, mp.spawn: the others are stopped),
so autotune sees the trial fail and starts the next one afresh; where no
launcher does that, the trial's timeout does.

A rank knows its place as _ranks.identity() says. One node: the ranks
share the worker's folder.
"""

import json
import os
import sys
import time

from ._ranks import identity


_POLL_S = 0.005
_SAY_WAITING_AFTER_S = 30.0  # rank 0 says which ranks it still waits for


class Handoff:
    """The ranks' meeting points in the warm folder `warm_dir`, one per
    hand-off (the start-up's, then one after each trial)."""

    def __init__(self, warm_dir):
        self.dir = warm_dir
        self.count = 0  # hand-offs so far: the same on every rank, which all run the same loop

    def exchange(self, rank0_part):
        """This rank has reached the next hand-off. Rank 0 waits for every
        rank, then runs ``rank0_part()`` (autotune's side of the hand-off)
        and passes what it returns, a JSON value, to every rank. Returns that
        value, or None where the worker is told to stop (or is orphaned)
        before it comes."""
        rank, ranks = identity()  # known by now on a rank that began alone: init_process_group in the loop
        n = self.count
        self.count += 1
        if ranks == 1:  # alone: nobody to meet
            return rank0_part()
        _publish(self._path(f"rank-{n}-{rank}"), str(os.getpid()))
        go = self._path(f"go-{n}.json")
        if rank == 0:
            if not self._all_arrived(n, ranks):
                return None
            self._forget(n - 1)  # every rank has read the last hand-off's message
            message = rank0_part()
            _publish(go, json.dumps({"message": message}))
            return message
        while True:
            if os.path.exists(go):
                with open(go) as f:
                    return json.load(f)["message"]
            if self._stopping():
                return None
            time.sleep(_POLL_S)

    def _all_arrived(self, n, ranks):
        """Waits until every rank has reached hand-off `n`; False when told to stop first."""
        said = False
        started = time.monotonic()
        while True:
            missing = [k for k in range(ranks) if not os.path.exists(self._path(f"rank-{n}-{k}"))]
            if not missing:
                return True
            if self._stopping():
                return False
            if not said and time.monotonic() - started > _SAY_WAITING_AFTER_S:
                said = True
                print(f"autotune_trial: rank 0 waits for rank(s) {', '.join(map(str, missing))} to finish the trial "
                      f"(every rank must loop over autotune_trial.trials())", file=sys.stderr, flush=True)
            time.sleep(_POLL_S)

    def _forget(self, n):
        """Hand-off `n`'s files, once every rank is past it."""
        if n < 0:
            return
        prefix = f"rank-{n}-"
        try:
            names = os.listdir(self.dir)
        except OSError:
            return
        for name in names:
            if name.startswith(prefix) or name == f"go-{n}.json":
                try:
                    os.unlink(self._path(name))
                except OSError:
                    pass

    def _stopping(self):
        return os.path.exists(self._path("stop")) or os.getppid() == 1

    def _path(self, name):
        return os.path.join(self.dir, name)


def _publish(path, text):
    """`text` into `path` whole for the other ranks (a rename; no sync: they
    read it on this machine, and nothing of it outlives the worker)."""
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)
