"""Pick where the model runs: "auto" prefers CUDA, then Apple MPS, then the CPU."""

from __future__ import annotations

import torch

DEVICE_CHOICES = ("auto", "cpu", "cuda", "mps")


def mps_available() -> bool:
    backend = getattr(torch.backends, "mps", None)
    return bool(backend and backend.is_available())


def available_devices() -> list[str]:
    """Concrete devices present on this machine, fastest first."""
    found = []
    if torch.cuda.is_available():
        found.append("cuda")
    if mps_available():
        found.append("mps")
    return [*found, "cpu"]


def resolve_device(name: str = "auto") -> torch.device:
    """'auto' -> the best available device; an unavailable explicit choice is a clear error."""
    if name not in DEVICE_CHOICES:
        raise ValueError(f"device must be one of {DEVICE_CHOICES}, got {name!r}.")
    if name == "auto":
        return torch.device(available_devices()[0])
    if name not in available_devices():
        raise ValueError(f"{name.upper()} is not available on this machine; use 'auto' or 'cpu'.")
    return torch.device(name)


def describe(device: torch.device) -> str:
    if device.type == "cuda":
        return f"CUDA ({torch.cuda.get_device_name(device)})"
    if device.type == "mps":
        return "Apple GPU (MPS)"
    n = torch.get_num_threads()
    return f"CPU ({n} thread{'s' if n > 1 else ''}/request)"
