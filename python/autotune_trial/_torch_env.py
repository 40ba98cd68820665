"""PyTorch as the script has it: never imported here (sys.modules), CUDA
only where in use, the DataLoader's private state read best effort."""

import sys


def _torch():
    return sys.modules.get("torch")


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
