#!/usr/bin/env python3
"""A long, independent timing of one configuration of a script that uses
autotune_trial: the script run by hand, as a user runs it after tuning, in a
fresh process, with the helper's measurement stretched to SECONDS of timed
windows (no stop on precision or spread; the usual warm-up first).

    python3 bench/long_timing.py SECONDS SCRIPT [ARGS...]

Prints the script's result line (JSON) last; `throughput` is the mean over
the whole timed span. The knobs come from the script's own arguments (or
AUTOTUNE_* variables, as params() reads them).
"""
import os
import runpy
import sys


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    seconds = float(sys.argv[1])
    script = sys.argv[2]
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "python"))
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    from autotune_trial import _stop_rule
    _stop_rule.RULE.update(max_s=seconds, target_ci90=0.0, target_rsd=0.0, stop_on_scatter=False, warmup_s=3.0)
    sys.argv = [script] + sys.argv[3:]
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
