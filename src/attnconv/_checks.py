"""Argument checks shared by the library: each failure names the argument and the rule."""

from __future__ import annotations

from typing import Sequence


def int_at_least(name: str, value: object, minimum: int) -> int:
    """Return ``value`` if it is an ``int`` (not a ``bool``) and ``>= minimum``, else raise ``ValueError``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        rule = {0: "a non-negative integer", 1: "a positive integer"}.get(minimum, f"an integer of at least {minimum}")
        raise ValueError(f"{name} must be {rule}, got {value!r}")
    return value


def positive_int(name: str, value: object) -> int:
    """Return ``value`` if it is an ``int`` greater than zero, else raise ``ValueError``."""
    return int_at_least(name, value, 1)


def int_tuple(name: str, value: int | Sequence[int], dims: int, minimum: int) -> tuple[int, ...]:
    """Expand an int or a length-``dims`` sequence to a tuple of ints, each ``>= minimum``."""
    values = (value,) * dims if isinstance(value, int) and not isinstance(value, bool) else tuple(value)
    if len(values) != dims or any(isinstance(v, bool) or not isinstance(v, int) for v in values):
        raise ValueError(f"{name} must be an int or a sequence of {dims} ints, got {value!r}")
    if any(v < minimum for v in values):
        raise ValueError(f"{name} must be >= {minimum} in every dimension, got {value!r}")
    return values


def available_device(name: str, device: object) -> "torch.device | None":
    """Return ``device`` as a ``torch.device`` (``None`` stays ``None``) if this machine has it, else raise
    ``ValueError``: a CUDA device needs CUDA, and "cuda:i" needs at least i + 1 GPUs."""
    import torch

    if device is None:
        return None
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as err:
        raise ValueError(f"{name} must be a torch device such as 'cpu', 'cuda' or 'cuda:0', got {device!r}") from err
    if dev.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise ValueError(f"{name}={device!r} needs CUDA, but this machine has no CUDA device")
        if dev.index is not None and dev.index >= count:
            raise ValueError(f"{name}={device!r} names GPU {dev.index}, but this machine has {count}")
    return dev


def floating_input(name: str, x: object, dtype: "torch.dtype") -> None:
    """Raise ``TypeError`` unless ``x`` is a floating-point tensor of the module's ``dtype``.

    Under autocast the module's parameters and its input may differ by design, so only the floating-point rule
    is checked there.
    """
    import torch

    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got {x.dtype}")
    if x.dtype != dtype and not torch.is_autocast_enabled(x.device.type):
        raise TypeError(f"{name} has dtype {x.dtype} but the module's parameters are {dtype}: convert one of "
                        f"them (module.to({x.dtype}) or x.to({dtype}))")
