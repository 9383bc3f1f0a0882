"""Where overflow is checked: in every layer as it runs (the default), or once per step by the caller.

A layer's check (:func:`attnconv._checks.check_finite_result`) reduces its output and reads the answer on the host.
That read costs little in eager mode, but under ``torch.compile`` every one of them ends the compiled graph
(a "graph break"), and on a GPU it waits for the device. A training loop already checks its loss once per step
before the update (:func:`attnconv.train.runs.check_finite_loss`), and an overflow in any layer makes that loss NaN
or infinite. Inside :func:`deferred_finite_checks` the layers leave the check to it::

    with deferred_finite_checks():
        loss = F.cross_entropy(model(x), y)
    check_finite_loss(float(loss), ...)

The switch is a plain module-level counter, read (and guarded on) by ``torch.compile`` like any global.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

__all__ = ["deferred_finite_checks", "finite_checks_on"]

_deferred = 0


def finite_checks_on() -> bool:
    """Whether layers check their own outputs (``False`` inside :func:`deferred_finite_checks`)."""
    return _deferred == 0


@contextmanager
def deferred_finite_checks() -> Iterator[None]:
    """Skip the layers' per-call overflow checks inside this block; the caller promises one check per step."""
    global _deferred
    _deferred += 1
    try:
        yield
    finally:
        _deferred -= 1
