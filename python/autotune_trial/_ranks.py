"""A job's ranks (torch.distributed, or its launcher's environment): which
one this process is, where a collective's tensor goes, and the job's
figures pooled from every rank's."""

import os
import socket
import zlib

from ._process import _int_env
from ._torch_env import _torch


def identity():
    """(rank, ranks) of this process among the job's ranks on this node:
    LOCAL_RANK and LOCAL_WORLD_SIZE (torchrun, accelerate launch), else an
    initialized torch.distributed process group (mp.spawn), else RANK and
    WORLD_SIZE (a shell line); with none of them it is the only rank."""
    local, size = _env_int("LOCAL_RANK"), _env_int("LOCAL_WORLD_SIZE")
    if local is not None and size and 0 <= local < size:
        return local, size
    torch = _torch()
    try:
        d = torch.distributed if torch is not None else None
        if d is not None and d.is_available() and d.is_initialized():
            return d.get_rank(), d.get_world_size()
    except Exception:  # a half-made process group: the environment, else alone
        pass
    rank, size = _env_int("RANK"), _env_int("WORLD_SIZE")
    if rank is not None and size and 0 <= rank < size:
        return rank, size
    return 0, 1


def device(dist):
    """Where a collective's tensor goes: the CPU, or under NCCL this rank's
    GPU: LOCAL_RANK where it names a visible device (many scripts never call
    set_device, so current_device() would be 0 on every rank, which NCCL
    refuses), else the current device."""
    if dist.get_backend() != "nccl":
        return "cpu"
    torch = _torch()
    local = _int_env("LOCAL_RANK")
    return torch.device("cuda", local if local < torch.cuda.device_count() else torch.cuda.current_device())


def node_id():
    """This machine, as a number a float64 holds exactly (the ranks on rank 0's node share its memory)."""
    return float(zlib.crc32(socket.gethostname().encode()))


# Per-rank figures (rank<k>_pace, rank<k>_data_wait) for at most this many
# ranks: a result's metrics are bounded (workloads/external.cpp kMaxMetrics).
_RANKS_LISTED = 32


def add_rank_figures(res, rows, ranks_summed):
    """The job's figures from every rank's row (Meter._pool_ranks): the pace is
    the slowest rank's, since a data-parallel job moves at it (each step
    waits for every rank's gradients); the wait and memory of each rank."""
    paces = [(pace, k) for k, (pace, _, _, _) in enumerate(rows) if pace > 0]
    waits = [(wait, k) for k, (_, wait, _, _) in enumerate(rows) if wait >= 0]
    if paces and "throughput" in res:
        slowest, k_slow = min(paces)
        res["throughput_per_rank"] = slowest
        res["throughput"] = slowest * ranks_summed
        res["rank_pace_min"] = slowest
        res["rank_pace_max"] = max(paces)[0]
        res["rank_slowest"] = k_slow
    if waits:
        most, k_most = max(waits)
        res["rank_data_wait_max"] = most
        res["rank_waiting_most"] = k_most
    for k, (pace, wait, _, _) in enumerate(rows[:_RANKS_LISTED]):
        if pace > 0:
            res[f"rank{k}_pace"] = pace
        if wait >= 0:
            res[f"rank{k}_data_wait"] = wait
    # The ranks on rank 0's node share its memory: their trees' sum.
    node = rows[0][3]
    here = [ram for _, _, ram, n in rows if n == node and ram > 0]
    if rows[0][2] > 0 and here:
        res["ram_bytes_per_rank"] = rows[0][2]
        res["ram_bytes"] = sum(here)


def _env_int(name):
    try:
        return int(os.environ[name])
    except (KeyError, ValueError):
        return None
