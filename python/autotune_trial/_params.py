"""The trial's parameters, typed, from the AUTOTUNE_* environment."""

import difflib
import os
import sys


_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


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


# The knobs this process gave a default for (params(), trials(), tuned()),
# and those it has been told about: one warning a knob.
_GIVEN = set()
_WARNED = set()
_BUILT_IN = ("batch_size", "num_workers", "prefetch_factor", "pin_memory", "precision", "grad_accum", "threads")
# Applied whether the script reads them or not (threads: OMP_NUM_THREADS as
# the job starts, torch.set_num_threads in trials()): never tuned for nothing.
_APPLIED = ("threads",)


def _given_defaults(defaults):
    _GIVEN.update(defaults)


def _warn_no_default(name, what):
    """Once a knob: `what` (autotune sets it, or tuned.yaml does) for a knob
    the script gave no default, which it may never read (a misspelt name)."""
    if _env_name(name) in {_env_name(g) for g in _GIVEN} or name in _WARNED:
        return
    _WARNED.add(name)
    near = difflib.get_close_matches(name, sorted((_GIVEN | set(_BUILT_IN)) - {name}), n=1, cutoff=0.75)
    hint = f"did you mean {near[0]}? " if near else ""
    print(f"autotune_trial: {what}, but this script gives {name} no default in params(), trials() or tuned(): "
          f"{hint}a knob the script never reads is tuned for nothing", file=sys.stderr, flush=True)


def params(**defaults):
    """The trial's parameters, typed, from the AUTOTUNE_* environment.

    Every keyword is a parameter with its default for a run by hand; its type
    (int, bool, float, str) types the environment's text. Parameters autotune
    sets that have no default here are included too, typed by their look; in a
    trial, each is said once on standard error unless an earlier params(),
    trials() or tuned() of this process gave it a default (a misspelt knob in
    the space is tuned, yet never read).
    """
    _given_defaults(defaults)
    out = Params()
    for name, default in defaults.items():
        text = os.environ.get(_env_name(name))
        out[name] = default if text is None else _parse_like(text, default, name)
    # the tool's own (core/knobs.cpp tool_env_names)
    skip = {"AUTOTUNE_TRIAL", "AUTOTUNE_TRIAL_START", "AUTOTUNE_RESULT", "AUTOTUNE_STOP_BELOW", "AUTOTUNE_WARM_DIR",
            "AUTOTUNE_WORKER_WORKLOAD", "AUTOTUNE_WORKER_VALUES", "AUTOTUNE_WORKER_CONTEXT", "AUTOTUNE_CUDA_MODULE"}
    known = {_env_name(n) for n in defaults}
    for key, text in os.environ.items():
        if key.startswith("AUTOTUNE_") and key not in skip and key not in known:
            name = key[len("AUTOTUNE_"):].lower()
            if name and name not in out:
                out[name] = _parse_like(text, None, name)
                if "AUTOTUNE_TRIAL" in os.environ and name not in _APPLIED:  # a trial: autotune set it
                    _warn_no_default(name, f"{key} is set (the knob {name})")
    return out
