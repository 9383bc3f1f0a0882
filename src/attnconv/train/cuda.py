"""The few things that only happen on a CUDA device, each in one named function so that a test can reach it with
a mock where no GPU is present.

- :func:`gpu_name`: the device a run is on, for proposals and records (``None`` without CUDA);
- :func:`enable_fast_kernels`: TF32 matrix products and cuDNN's autotuner, on CUDA only;
- :func:`synchronize`: wait for queued kernels before reading a clock (a no-op elsewhere);
- :func:`peak_memory_gib`: the most memory the run held on the device (``None`` elsewhere).
"""

from __future__ import annotations

import torch

__all__ = ["enable_fast_kernels", "gpu_name", "peak_memory_gib", "synchronize"]


def gpu_name() -> str | None:
    """The first CUDA device's name (``"NVIDIA H200"``), or ``None`` when CUDA is not available."""
    if not torch.cuda.is_available():
        return None
    return torch.cuda.get_device_name(0)


def enable_fast_kernels(device: torch.device) -> bool:
    """On CUDA: allow TF32 in float32 matrix products and convolutions, and let cuDNN pick its fastest kernels.

    TF32 keeps float32's range with a 10-bit mantissa: the book's bf16 runs are unaffected, float32 runs become
    slightly less exact (recorded in the provenance as the device). Returns whether anything was changed.

    Raises:
        TypeError: ``device`` is not a ``torch.device``.
    """
    if not isinstance(device, torch.device):
        raise TypeError(f"device must be a torch.device, got {type(device).__name__}")
    if device.type != "cuda":
        return False
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cudnn.benchmark = True
    return True


def synchronize(device: torch.device) -> None:
    """Wait until ``device`` has finished its queued work (CUDA runs asynchronously); nothing elsewhere."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def peak_memory_gib(device: torch.device) -> float | None:
    """The peak memory allocated on a CUDA ``device`` since the process started, in GiB; ``None`` elsewhere."""
    if device.type != "cuda":
        return None
    return torch.cuda.max_memory_allocated(device) / 2**30
