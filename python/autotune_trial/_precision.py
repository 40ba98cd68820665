"""The precision knob, and the precision that ran (autocast, the weights,
TF32)."""

import warnings

from ._torch_env import _torch


# The precision knob's values, and what frameworks call the same modes.
_PRECISIONS = {
    "fp32": "fp32", "32": "fp32", "32-true": "fp32", "float32": "fp32",
    "tf32": "tf32",
    "fp16": "fp16", "16": "fp16", "16-mixed": "fp16", "float16": "fp16",
    "bf16": "bf16", "bf16-mixed": "bf16", "bfloat16": "bf16",
}


def _precision(p):
    """The trial's precision knob as fp32, tf32, fp16 or bf16; None where it has none."""
    if not p or "precision" not in p:
        return None
    name = _PRECISIONS.get(str(p["precision"]).strip().lower())
    if name is None:
        raise ValueError(f"autotune_trial: precision {p['precision']!r} is not one of fp32, tf32, fp16, bf16")
    return name


def _tf32_gpu():
    """Whether this process's CUDA device computes in TF32 (compute capability 8.0 or newer)."""
    torch = _torch()
    try:
        return bool(torch is not None and torch.version.cuda and torch.cuda.is_available()
                    and torch.cuda.get_device_capability()[0] >= 8)
    except Exception:  # a broken driver: no TF32
        return False


def _matmul_tf32():
    """Whether CUDA float32 matmuls may run in TF32. torch 2.9 and later say it
    in fp32_precision ("none" defers to torch.backends'), and raise on the
    legacy allow_tf32 flag once the new setting was used (transformers 5
    uses it), so the new one is read first."""
    torch = _torch()
    try:
        new = getattr(torch.backends.cuda.matmul, "fp32_precision", None)
        if new == "none":
            new = getattr(torch.backends, "fp32_precision", None)
        if new in ("tf32", "ieee"):
            return new == "tf32"
        with warnings.catch_warnings():  # torch 2.9 deprecates the flag in favour of fp32_precision
            warnings.simplefilter("ignore")
            return bool(torch.backends.cuda.matmul.allow_tf32)
    except Exception:
        return False


def _set_matmul_tf32(on):
    """TF32 matmuls on or off for this trial ("high" or "highest" float32
    matmul precision), so that a warm process does not keep an earlier
    trial's."""
    torch = _torch()
    if torch is not None and hasattr(torch, "set_float32_matmul_precision"):
        torch.set_float32_matmul_precision("high" if on else "highest")


def _autocast_dtype(torch, device_type):
    """The dtype autocast computes in on `device_type`, or None where it is off."""
    try:
        if hasattr(torch, "get_autocast_dtype"):  # torch 2.4 and later
            return torch.get_autocast_dtype(device_type) if torch.is_autocast_enabled(device_type) else None
        if device_type == "cuda":
            return torch.get_autocast_gpu_dtype() if torch.is_autocast_enabled() else None
        if device_type == "cpu":
            return torch.get_autocast_cpu_dtype() if torch.is_autocast_cpu_enabled() else None
    except Exception:  # another device type, another torch
        pass
    return None


def _fp32_ran(device_type):
    """What float32 runs as on `device_type`: tf32 on a GPU that computes in
    TF32 with TF32 matmuls allowed, else fp32."""
    return "tf32" if device_type == "cuda" and _matmul_tf32() and _tf32_gpu() else "fp32"


def _dtype_precision(torch, dtype, device_type):
    name = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32", torch.float64: "fp64"}.get(
        dtype, str(dtype))
    return _fp32_ran(device_type) if name == "fp32" else name


class _PrecisionProbe:
    """The precision the model's first forward ran in: autocast's dtype where
    autocast is on for the weights' device, else the weights' dtype (tf32 for
    fp32 on a GPU that has TF32 with TF32 matmuls allowed). It hooks the leaf
    modules that hold weights: a hook on the model itself runs outside the
    autocast that accelerate wraps the model's forward in."""

    def __init__(self, model):
        self.ran = None
        self._handles = []
        if _torch() is None or not hasattr(model, "modules"):
            return
        for m in model.modules():
            if next(m.children(), None) is None and any(w.is_floating_point() for w in m.parameters(recurse=False)):
                self._handles.append(m.register_forward_pre_hook(self._hook))

    def _hook(self, module, inputs):
        if self.ran is None:
            torch = _torch()
            w = next(w for w in module.parameters(recurse=False) if w.is_floating_point())
            self.ran = _dtype_precision(torch, _autocast_dtype(torch, w.device.type) or w.dtype, w.device.type)

    def remove(self):
        for h in self._handles:
            h.remove()
        self._handles = []


def _precision_differs(asked, ran, how):
    """The reason a trial fails when the precision that ran (`how`: where that
    was seen) is not the one asked; None when they agree or one is unknown."""
    if asked is None or ran is None or asked == ran:
        return None
    why = f"precision {asked} was asked, but {ran} ran ({how})"
    if asked == "tf32":
        why += ": TF32 needs an NVIDIA GPU of compute capability 8.0 or newer"
    return why + "; the measurement would be another precision's"
