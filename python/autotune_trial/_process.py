"""This process and its children as Linux's /proc shows them, and the
environment autotune and the launchers set."""

import os


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
