"""A fuzz of bad and edge inputs over every public module: the checks (the cases are in
:mod:`tests.fuzz_cases`).

Two lists of cases, each a call with one argument made bad or extreme:

- ``BAD``: wrong Python types, shapes, dtypes, ranges and non-finite values. Each must raise a ``ValueError`` or a
  ``TypeError`` whose message names the argument; any other exception (an ``IndexError`` from inside, say) is an
  obscure error, and a call that returns has accepted wrong input.
- ``EDGE``: legal but extreme inputs (huge or tiny magnitudes, float16, one token, an empty batch). Each must give
  a finite result, or a ``ValueError``/``TypeError`` that names the argument. NaN or inf out of a finite input is
  a silent failure.

Sizes are small, so no case can hang: every call is a few small tensor operations.
``python -m tests.test_fuzz`` prints the counts by outcome.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Callable

import pytest
import torch

from attnconv import bounds

from .fuzz_cases import BAD, EDGE, NAN
# ---------------------------------------------------------------- the checks

def _tensors(result: Any):
    if isinstance(result, torch.Tensor):
        yield result
    elif isinstance(result, float):
        yield torch.tensor(result, dtype=torch.float64)
    elif isinstance(result, (tuple, list)):
        for item in result:
            yield from _tensors(item)


def outcome(argument: str, call: Callable[[], Any]) -> str:
    """``"ok"`` (returned, finite), ``"nan"`` (returned NaN or inf), ``"clear"`` (a ValueError or TypeError naming
    ``argument``), ``"unnamed"`` (one that does not name it) or ``"obscure: <type>"``."""
    try:
        result = call()
    except (ValueError, TypeError) as err:
        return "clear" if re.search(rf"(?<!\w){re.escape(argument)}(?!\w)", str(err)) else f"unnamed: {err}"
    except Exception as err:  # noqa: BLE001 - any other exception is the finding
        return f"obscure: {type(err).__name__}: {err}"
    with torch.no_grad():
        finite = all(bool(torch.isfinite(t).all()) for t in _tensors(result) if t.is_floating_point())
    return "ok" if finite else "nan"


@pytest.mark.parametrize("case, argument, call", BAD, ids=[c for c, _, _ in BAD])
def test_bad_input_is_a_clear_error(case, argument, call):
    result = outcome(argument, call)
    assert result == "clear", f"{case}: wanted a ValueError/TypeError naming {argument!r}, got {result}"


@pytest.mark.parametrize("case, argument, call", EDGE, ids=[c for c, _, _ in EDGE])
def test_edge_input_is_finite_or_a_clear_error(case, argument, call):
    result = outcome(argument, call)
    assert result in ("ok", "clear"), f"{case}: wanted a finite result or an error naming {argument!r}, got {result}"


def test_the_fuzz_is_large_and_covers_every_kind_of_case():
    assert len(BAD) >= 150 and len(EDGE) >= 40
    assert len({case for case, _, _ in BAD + EDGE}) == len(BAD) + len(EDGE), "case ids must be unique"


def test_the_check_catches_what_it_is_meant_to():
    """Wrong variants: an IndexError, an unnamed error, a NaN and an accepted bad value are each told apart."""
    assert outcome("x", lambda: [][1]).startswith("obscure: IndexError")
    assert outcome("x", lambda: int("y")).startswith("unnamed")
    assert outcome("x", lambda: torch.tensor([1.0, NAN])) == "nan"
    assert outcome("x", lambda: torch.ones(2)) == "ok"
    assert outcome("alpha", lambda: bounds.theta(-1.0)) == "clear"
    assert outcome("max_offset", lambda: bounds.theta(-1.0)).startswith("unnamed")


if __name__ == "__main__":
    counts = Counter()
    for kind, cases in (("bad", BAD), ("edge", EDGE)):
        for case, argument, call in cases:
            result = outcome(argument, call)
            counts[(kind, result.split(":")[0])] += 1
            if (kind == "bad" and result != "clear") or (kind == "edge" and result not in ("ok", "clear")):
                print(f"{kind:4} {case}: {result[:200]}")
    print(f"{len(BAD) + len(EDGE)} cases: {len(BAD)} bad, {len(EDGE)} edge")
    for (kind, result), n in sorted(counts.items()):
        print(f"  {kind:4} {result:8} {n}")
