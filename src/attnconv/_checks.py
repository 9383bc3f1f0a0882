"""Argument checks shared by the library: each failure names the argument and the rule."""

from __future__ import annotations

import math
from typing import Sequence


def int_at_least(name: str, value: object, minimum: int) -> int:
    """Return ``value`` if it is an ``int`` (not a ``bool``) and ``>= minimum``, else raise ``ValueError``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        rule = {0: "a non-negative integer", 1: "a positive integer"}.get(minimum, f"an integer of at least {minimum}")
        raise ValueError(f"{name} must be {rule}, got {value!r}")
    return value


def flag(name: str, value: object) -> bool:
    """Return ``value`` if it is a ``bool``, else raise ``TypeError`` (a string such as ``"no"`` would read as true)."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r}")
    return value


def positive_int(name: str, value: object) -> int:
    """Return ``value`` if it is an ``int`` greater than zero, else raise ``ValueError``."""
    return int_at_least(name, value, 1)


def int_tuple(name: str, value: int | Sequence[int], dims: int, minimum: int) -> tuple[int, ...]:
    """Expand an int or a length-``dims`` sequence to a tuple of ints, each ``>= minimum``."""
    if isinstance(value, int) and not isinstance(value, bool):
        values = (value,) * dims
    else:
        try:
            values = tuple(value)
        except TypeError:  # a float, None, ...: not a sequence
            values = ()
    if len(values) != dims or any(isinstance(v, bool) or not isinstance(v, int) for v in values):
        raise ValueError(f"{name} must be an int or a sequence of {dims} ints, got {value!r}")
    if any(v < minimum for v in values):
        raise ValueError(f"{name} must be >= {minimum} in every dimension, got {value!r}")
    return values


def available_device(name: str, device: object) -> "torch.device | None":
    """Return ``device`` as a ``torch.device`` (``None`` stays ``None``) if this machine has it, else raise
    ``ValueError``: a CUDA device needs CUDA, "cuda:i" needs at least i + 1 GPUs, and any other device ("mps",
    "xla", ...) must accept a tensor."""
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
    elif dev.type != "cpu":  # mps, xla, xpu, ...: usable only where this torch build and machine have a backend
        try:
            torch.empty(0, device=dev)
        except (RuntimeError, NotImplementedError, AssertionError) as err:
            raise ValueError(f"{name}={device!r} is not available on this machine (this torch build cannot place "
                             f"a tensor there): use 'cpu' or an available 'cuda' device") from err
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


def real_number(name: str, value: object) -> float:
    """Return ``value`` as a float if it is a finite real number (an int or a float, not a ``bool`` or a string).

    Raises ``TypeError`` for another type and ``ValueError`` for NaN or an infinity.
    """
    import numbers

    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number (int or float), got {type(value).__name__} {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return value


def probability(name: str, value: object) -> float:
    """Return ``value`` if it is a real number in [0, 1) (a dropout rate), else raise ``TypeError``/``ValueError``."""
    p = real_number(name, value)
    if not 0.0 <= p < 1.0:
        raise ValueError(f"{name} must be in [0, 1), got {value!r}")
    return p


def positive_real(name: str, value: object) -> float:
    """Return ``value`` if it is a finite real number > 0, else raise ``TypeError``/``ValueError``."""
    x = real_number(name, value)
    if not x > 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return x


class NonFiniteResultError(ValueError):
    """A finite input would give NaN or inf in the module's dtype (an overflow): the result is refused, not returned.

    Training loops stop on it as on a non-finite loss."""


def check_finite_result(name: str, out: "torch.Tensor", x: "torch.Tensor", what: str) -> None:
    """Raise :class:`NonFiniteResultError` if ``out`` holds NaN or inf while the input ``x`` (named ``name``) is
    finite: ``what`` overflowed the dtype. One reduction over ``out`` when it is finite."""
    import torch

    if out.numel() == 0 or bool(torch.isfinite(out).all()):
        return
    if bool(torch.isfinite(x).all()):
        scale = float(x.detach().abs().amax())
        raise NonFiniteResultError(
            f"{name} is finite (largest |{name}| = {scale:.3g}) but {what} overflow {x.dtype}: scale {name} down or "
            f"use a wider dtype")
