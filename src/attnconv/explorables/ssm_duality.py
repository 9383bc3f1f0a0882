"""Chapter 08's explorable, ``ch08-ssm``: a decay slider for a scalar state-space model seen three ways.

The reader moves the decay a of h_t = a h_{t-1} + b x_t, y_t = c h_t. The page computes the kernel c a^k b, the
1-semiseparable mask a^{t-s} (t ≥ s) and the masked attention (c b) a^{t-s} side by side, and the output on one
signal three ways: by the recurrence, by the causal convolution with the kernel, and by the masked attention.

``compute(inputs)`` in the page:

- inputs: ``a`` the decay, from -1 to 1; ``b``, ``c`` finite numbers; ``x`` ``(T,)`` the signal, 1 ≤ T ≤ 512.
- outputs: ``kernel`` ``(T,)``; ``mask`` and ``attention`` ``(T, T)``; ``recurrence``, ``convolution`` and
  ``masked`` ``(T,)``.

Odd input (a decay outside [-1, 1], a coefficient or a signal value that is not finite, an empty or too long
signal) is refused with a message (a ``RangeError``). The typed decay refuses a value outside [-1, 1] (or empty, or
not a number) with a message next to it, and the page computes nothing, its numbers reading "not computed", until
the field or the slider gives a decay it can take.

:func:`reference` computes the same outputs with :mod:`attnconv.ssm`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ..ssm import causal_conv, scalar_ssm, semiseparable_mask, ssm_kernel
from . import Explorable

__all__ = ["reference", "ssm_explorable"]


def _signal(length: int) -> list[float]:
    """A fixed test signal: a pulse, then a step, then a short oscillation."""
    t = np.arange(length)
    x = np.where(t == 1, 1.0, 0.0) + np.where((t >= 6) & (t < 11), 0.5, 0.0) - 0.6 * np.sin(t * 1.3) * (t >= 12)
    return [round(float(v), 4) for v in x]


def ssm_explorable(a: float = 0.8, b: float = 1.0, c: float = 0.5, length: int = 16) -> Explorable:
    """The explorable of chapter 08 (see the module docstring), starting at the decay ``a``."""
    for name, value in (("a", a), ("b", b), ("c", c)):
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not np.isfinite(value):
            raise ValueError(f"{name} must be a finite number, got {value!r}")
    if not -1 <= a <= 1:
        raise ValueError(f"a must be from -1 to 1, got {a!r}")
    if not isinstance(length, int) or not 2 <= length <= 32:
        raise ValueError(f"length must be an int from 2 to 32, got {length!r}")
    return Explorable("ch08-ssm", "explore_ssm.js", {"a": float(a), "b": float(b), "c": float(c),
                                                     "x": _signal(length)},
                      "Move the decay: one model, three faces", "kernel, mask and attention computed in this page")


def reference(inputs: dict[str, Any]) -> dict[str, Any]:
    """The outputs of the page's ``compute`` for the same ``inputs``, with :mod:`attnconv.ssm` in float64."""
    a, b, c = float(inputs["a"]), float(inputs["b"]), float(inputs["c"])
    x = torch.tensor(inputs["x"], dtype=torch.float64)
    n = x.numel()
    kernel = ssm_kernel(a, b, c, n)
    mask = semiseparable_mask(a, n)
    return {"kernel": kernel.numpy(), "mask": mask.numpy(), "attention": (c * b * mask).numpy(),
            "recurrence": scalar_ssm(x, a, b, c).numpy(), "convolution": causal_conv(x, kernel).numpy(),
            "masked": (c * b * mask @ x).numpy()}
