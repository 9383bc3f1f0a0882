"""Argument checks shared by the library: each failure names the argument and the rule."""

from __future__ import annotations

import math
import sys
from typing import Iterable, Sequence


def values_readable(*tensors: object) -> bool:
    """Whether a check may read the values of ``tensors`` (the arguments that are not tensors are ignored) on the
    host now, with ``.item()``, ``bool(...)`` or ``int(...)``.

    Not when they have no values, or when reading one would stop the transform that is running:

    - a tensor on the ``meta`` device (shapes only; also every tensor of a model built under
      ``with torch.device("meta")``), or a fake tensor;
    - ``torch.func.vmap`` (a batched tensor: "data-dependent control flow") and the other ``torch.func``
      transforms (their wrapped tensors);
    - ``torch.jit.trace`` (a value read is baked into the graph as a constant, and a size is a tensor there),
      ``torch.jit.script``;
    - ``torch.compile`` and ``torch.export`` (each read would end the compiled graph).

    Every data-dependent check of the library's layers (finite inputs, parameters and results, masks that keep a
    key, ids in range) asks this one question first and is skipped when the answer is no: the computation itself
    is unchanged, and a NaN it makes stays in the result.
    """
    torch = sys.modules.get("torch")
    if torch is None:  # no tensor exists yet
        return True
    if torch.jit.is_tracing() or torch.jit.is_scripting() or torch.compiler.is_compiling():
        return False
    functorch = getattr(torch._C, "_functorch", None)
    fake = getattr(getattr(getattr(torch, "_subclasses", None), "fake_tensor", None), "FakeTensor", ())
    for t in tensors:
        if not isinstance(t, torch.Tensor):
            continue
        if t.is_meta or isinstance(t, fake):
            return False
        if functorch is not None and (functorch.is_functorch_wrapped_tensor(t) or functorch.is_batchedtensor(t)):
            return False
    return True


def symbolic_size(value: object) -> bool:
    """``True`` for a size read from a tensor's shape while ``torch.jit.trace`` runs: an integer 0-d tensor that
    stands for the size (it is recorded, not read), which a size check accepts unread."""
    torch = sys.modules.get("torch")
    return (torch is not None and isinstance(value, torch.Tensor) and value.dim() == 0
            and not value.is_floating_point() and value.dtype != torch.bool and not values_readable(value))


def int_at_least(name: str, value: object, minimum: int) -> int:
    """Return ``value`` if it is an ``int`` (not a ``bool``) and ``>= minimum``, else raise ``ValueError``.

    A size that ``torch.jit.trace`` records (a 0-d integer tensor, see :func:`values_readable`) is returned
    unread, so that the traced graph keeps it a variable."""
    if symbolic_size(value):
        return value
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


class InputDtypeError(TypeError, ValueError):
    """An input tensor of the wrong dtype: a ``TypeError`` (the library's rule) and a ``ValueError`` (as a bad value
    of an argument), so that either ``except`` catches it. Its message names the dtype the module expects."""


def floating_input(name: str, x: object, dtype: "torch.dtype") -> None:
    """Raise :class:`InputDtypeError` (a ``TypeError``) unless ``x`` is a floating-point tensor of the module's
    ``dtype``.

    Under autocast the module's parameters and its input may differ by design, so only the floating-point rule
    is checked there.
    """
    import torch

    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise InputDtypeError(f"{name} must be a floating-point tensor of the module's dtype {dtype}, got {x.dtype}"
                              f": convert it, e.g. {name}.to({dtype})")
    if x.dtype != dtype and not torch.is_autocast_enabled(x.device.type):
        raise InputDtypeError(f"{name} has dtype {x.dtype} but the module's parameters are {dtype}: convert one of "
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


def finite_checks_apply(*tensors: object) -> bool:
    """Whether a layer checks its result for overflow now: the checks are not deferred to the caller
    (:func:`attnconv.finite.deferred_finite_checks`) and the values can be read (:func:`values_readable`)."""
    from .finite import finite_checks_on

    return finite_checks_on() and values_readable(*tensors)


def all_finite(t: "torch.Tensor") -> bool:
    """``True`` if ``t`` holds no NaN or inf (or its values cannot be read now, :func:`values_readable`)."""
    import torch

    return not values_readable(t) or t.numel() == 0 or bool(torch.isfinite(t).all())


def finite_tensor(name: str, t: object) -> None:
    """Raise ``ValueError`` naming ``name`` if the tensor ``t`` holds NaN or inf (unless its values cannot be read,
    :func:`values_readable`)."""
    import torch

    if isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex()) and not all_finite(t.detach()):
        bad = "NaN" if bool(torch.isnan(t).any()) else "inf"
        raise ValueError(f"{name} must be finite, but it holds {bad} (at {int((~torch.isfinite(t)).sum())} of its "
                         f"{t.numel()} entries)")


def finite_parameters(name: str, module: object) -> None:
    """Raise ``ValueError`` naming ``name.parameter`` (e.g. ``conv.weight``) if a parameter or buffer of the
    ``torch.nn.Module`` ``module`` holds NaN or inf: a converter copies weights, and a NaN copied into an attention
    layer would surface only as NaN outputs later."""
    for pname, t in list(module.named_parameters()) + list(module.named_buffers()):
        finite_tensor(f"{name}.{pname}", t)


def nonfinite_parameter(parameters: "Iterable[tuple[str, torch.Tensor]]") -> str:
    """Name the first of ``parameters`` (``(name, tensor)`` pairs, as ``module.named_parameters()`` gives them) that
    holds NaN or inf, as "the parameter NAME holds NaN (at k of its n entries)"; ``""`` if none does (or their values
    cannot be read, :func:`values_readable`). A module that finds a NaN result says this before it blames an
    overflow."""
    import torch

    for pname, p in parameters:
        if p.is_floating_point() and values_readable(p) and not bool(torch.isfinite(p).all()):
            bad = "NaN" if bool(torch.isnan(p).any()) else "inf"
            return (f"the parameter {pname} holds {bad} (at {int((~torch.isfinite(p)).sum())} of its {p.numel()} "
                    f"entries)")
    return ""


def check_finite_result(name: str, out: "torch.Tensor", x: "torch.Tensor", what: str,
                        parameters: "Iterable[tuple[str, torch.Tensor]] | None" = None) -> None:
    """Raise :class:`NonFiniteResultError` if ``out`` holds NaN or inf while the input ``x`` (named ``name``) is
    finite: ``what`` overflowed the dtype, or one of the module's ``parameters`` (``(name, tensor)`` pairs, as
    ``module.named_parameters()`` gives them) holds NaN or inf, and the error names it. One reduction over
    ``out`` when it is finite.

    Skipped inside :func:`attnconv.finite.deferred_finite_checks` and where the values cannot be read
    (:func:`values_readable`: the meta device, ``vmap``, ``jit.trace``, ``torch.compile``); the NaN or inf then
    stays in ``out``."""
    import torch

    if not finite_checks_apply(out, x) or out.numel() == 0 or bool(torch.isfinite(out).all()):
        return
    if bool(torch.isfinite(x).all()):
        bad = nonfinite_parameter(parameters or ())
        if bad:
            raise NonFiniteResultError(f"{name} is finite but the result is not: {bad}, which reaches every output it "
                                       f"feeds. Restore it from a checkpoint, or lower the learning rate that made it")
        scale = float(x.detach().abs().amax())
        raise NonFiniteResultError(
            f"{name} is finite (largest |{name}| = {scale:.3g}) but {what} overflow {x.dtype}: scale {name} down or "
            f"use a wider dtype")
