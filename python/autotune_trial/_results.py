"""The result: written atomically to $AUTOTUNE_RESULT and printed; the
summary for a run by hand."""

import json
import os


def _write_atomically(path, text):
    """`text` into `path` so that no reader sees half of it: written beside,
    synced, then renamed over."""
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def write_result(result):
    """Writes `result` to $AUTOTUNE_RESULT (temp file + rename) and prints it
    as one JSON line."""
    text = json.dumps(result, sort_keys=True)
    path = os.environ.get("AUTOTUNE_RESULT")
    if path:
        _write_atomically(path, text + "\n")
    print(text, flush=True)


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
