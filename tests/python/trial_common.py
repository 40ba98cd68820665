"""What the tests of the autotune_trial helper (test_trial_*.py) share: the
helper imported from the build tree (AUTOTUNE_PYTHON_DIR, which ctest sets) or
the source tree, torch where it imports, and the helpers that more than one
module uses. Run by ctest with Debian's python3 (python3-torch); the torch
tests skip without torch, except under CI=true where they fail.

Timing assertions hold on a loaded 2-core VM: the waits are sleeps (a loader
blocked on I/O), so the margins are several times the scheduling noise seen
here (a few tenths of a millisecond per step).
"""
import os
import subprocess
import sys
import tempfile
import textwrap
import time

HERE = os.path.dirname(os.path.abspath(__file__))
HELPER_DIR = os.environ.get("AUTOTUNE_PYTHON_DIR", os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, HELPER_DIR)

import autotune_trial  # noqa: E402, F401 (the test modules take it from here)

try:
    import torch
    from torch.utils.data import DataLoader, Dataset
except ImportError:
    torch = None
    DataLoader = Dataset = None


def require_torch(test):
    def wrapped(self):
        if torch is None:
            if os.environ.get("CI") == "true":
                self.fail("CI=true but torch does not import (scripts/deps.sh --test installs python3-torch)")
            self.skipTest("no torch (Debian: apt-get install python3-torch)")
        return test(self)
    wrapped.__name__ = test.__name__
    return wrapped


def run_script(body, env=None, timeout=120):
    """Runs `body` as a script with the helper importable; returns the process."""
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(textwrap.dedent(body))
        path = f.name
    e = {k: v for k, v in os.environ.items() if not k.startswith("AUTOTUNE_")}
    e["PYTHONPATH"] = HELPER_DIR
    e.update(env or {})
    try:
        return subprocess.run([sys.executable, path], env=e, capture_output=True, text=True, timeout=timeout)
    finally:
        os.unlink(path)


class SlowLoader(Dataset if torch else object):
    """Each sample costs `delay` seconds of (I/O-like) waiting."""

    def __init__(self, delay):
        self.delay = delay

    def __len__(self):
        return 100000

    def __getitem__(self, i):
        time.sleep(self.delay)
        return torch.zeros(16), i % 10


def restore_modules(saved):
    """sys.modules as `saved` had them: a module absent then is removed."""
    for k, v in saved.items():
        if v is None:
            sys.modules.pop(k, None)
        else:
            sys.modules[k] = v
